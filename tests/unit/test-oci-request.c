/* OCI EKMS requests (gateway/plugins/oci-ekms/request.[ch]): the route table as path shapes
 * under a prefix, each operation's body (fields, base64, sizes, mode, pad, length), and the
 * token scope rule (oci_ekms, legacy per-operation scopes, the audience-prefixed form). */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/oci-ekms/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P "/api/v1/cckm/oci/ekm/v1"
#define V "f2898529-ad61-48f9-9cd8-25edb26d5fbf"
#define K "37eb3e12-effc-45b9-b7b0-fae02f2f7708"
#define KV "b1e6de4f-debc-478f-93cf-358d5d31d4f4"

static enum hf_oci_op path_op(const char *path)
{
    struct hf_oci_target t;

    CU_ASSERT_TRUE(hf_oci_path_parse(path, P, &t));
    return t.op;
}

static void test_every_route_parses(void)
{
    struct hf_oci_target t;

    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "/metadata"), HF_OCI_OP_VAULT_METADATA);
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "/generateRandomBytes"), HF_OCI_OP_VAULT_RANDOM);
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "/keys/" K "/metadata"), HF_OCI_OP_KEY_METADATA);
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "/keys/" K "/encrypt"), HF_OCI_OP_ENCRYPT);
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "/keys/" K "/decrypt"), HF_OCI_OP_DECRYPT);
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "/keys/" K "/generateRandomBytes"),
                    HF_OCI_OP_KEY_RANDOM);
    CU_ASSERT_TRUE(
        hf_oci_path_parse(P "/vaults/" V "/keys/" K "/keyVersions/" KV "/metadata", P, &t));
    CU_ASSERT_EQUAL(t.op, HF_OCI_OP_VERSION_METADATA);
    CU_ASSERT_STRING_EQUAL(t.vault_id, V);
    CU_ASSERT_STRING_EQUAL(t.key_id, K);
    CU_ASSERT_STRING_EQUAL(t.version_id, KV);
    CU_ASSERT_STRING_EQUAL(hf_oci_op_method(t.op), "GET");
    CU_ASSERT_STRING_EQUAL(hf_oci_op_method(HF_OCI_OP_ENCRYPT), "POST");
    CU_ASSERT_STRING_EQUAL(hf_oci_op_method(HF_OCI_OP_VAULT_RANDOM), "POST");
    CU_ASSERT_PTR_NULL(hf_oci_op_method(HF_OCI_OP_NONE));
    /* An empty prefix serves the routes at the root. */
    CU_ASSERT_TRUE(hf_oci_path_parse("/vaults/" V "/metadata", "", &t));
    CU_ASSERT_EQUAL(t.op, HF_OCI_OP_VAULT_METADATA);
}

static void test_other_paths_are_ours_or_not(void)
{
    struct hf_oci_target t;

    /* Under the prefix's /vaults/: this API's 404. */
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V), HF_OCI_OP_NONE);
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "/"), HF_OCI_OP_NONE);
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "/metadata/"), HF_OCI_OP_NONE);
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "//metadata"), HF_OCI_OP_NONE);
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "/keys/" K), HF_OCI_OP_NONE);
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "/keys/" K "/wrap"), HF_OCI_OP_NONE);
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "/keys/" K "/keyVersions/" KV), HF_OCI_OP_NONE);
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "/keys/" K "/keyVersions/" KV "/metadata/x"),
                    HF_OCI_OP_NONE);
    CU_ASSERT_EQUAL(path_op(P "/vaults/" V "/Metadata"), HF_OCI_OP_NONE);
    /* Not under it: the gateway's (another plugin's) path. */
    CU_ASSERT_FALSE(hf_oci_path_parse("/other/vaults/" V "/metadata", P, &t));
    CU_ASSERT_FALSE(hf_oci_path_parse(P "/vault/" V "/metadata", P, &t));
    CU_ASSERT_FALSE(hf_oci_path_parse(P "x/vaults/" V "/metadata", P, &t));
    CU_ASSERT_FALSE(hf_oci_path_parse(NULL, P, &t));
    /* An id longer than a UUID is kept as "": it names nothing. */
    CU_ASSERT_TRUE(hf_oci_path_parse(P "/vaults/" V "0/metadata", P, &t));
    CU_ASSERT_EQUAL(t.op, HF_OCI_OP_VAULT_METADATA);
    CU_ASSERT_STRING_EQUAL(t.vault_id, "");
    CU_ASSERT_TRUE(hf_oci_path_parse(P "/vaults/v/keys/k/encrypt", P, &t));
    CU_ASSERT_STRING_EQUAL(t.vault_id, "v");
    CU_ASSERT_STRING_EQUAL(t.key_id, "k");
}

static enum hf_status parse(enum hf_oci_op op, const char *body, struct hf_oci_request *r,
                            const char *want)
{
    char why[256] = "";
    enum hf_status st =
        hf_oci_request_parse(op, (const unsigned char *)body, strlen(body), r, why, sizeof(why));

    if (st != HF_STATUS_OK && want != NULL && strstr(why, want) == NULL) {
        fprintf(stderr, "\n  reason \"%s\" lacks \"%s\"\n", why, want);
        CU_FAIL("refused for another reason");
    }
    return st;
}

static enum hf_status verdict(enum hf_oci_op op, const char *body, const char *want)
{
    struct hf_oci_request r;
    enum hf_status st = parse(op, body, &r, want);

    hf_oci_request_clear(&r);
    return st;
}

static void test_encrypt_body(void)
{
    struct hf_oci_request r;

    CU_ASSERT_EQUAL_FATAL(parse(HF_OCI_OP_ENCRYPT,
                                "{\"plaintext\":\"YWJj\",\"aad\":\"eHk=\",\"mode\":\"AES_GCM\","
                                "\"keyVersionId\":\"" KV "\",\"iv\":\"AAECAwQFBgcICQoL\","
                                "\"unknown\":[1,{\"x\":null}]}",
                                &r, NULL),
                          HF_STATUS_OK);
    CU_ASSERT_TRUE(r.plaintext.present);
    CU_ASSERT_EQUAL(r.plaintext.len, 3);
    CU_ASSERT_EQUAL(memcmp(r.plaintext.data, "abc", 3), 0);
    CU_ASSERT_EQUAL(r.aad.len, 2);
    CU_ASSERT_TRUE(r.iv.present);
    CU_ASSERT_TRUE(r.mode_given);
    CU_ASSERT_STRING_EQUAL(r.key_version_id, KV);
    hf_oci_request_clear(&r);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, "{\"plaintext\":\"YWJj\",\"mode\":\"GCM\"}", NULL),
                    HF_STATUS_OK);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, "{}", "plaintext"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, "{\"plaintext\":\"\"}", "at least one byte"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, "{\"plaintext\":\"YWJj!\"}", "plaintext"),
                    HF_STATUS_BAD_REQUEST);
    /* Standard padded base64 only. */
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, "{\"plaintext\":\"YWI\"}", "plaintext"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, "{\"plaintext\":\"-_8=\"}", "plaintext"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, "{\"plaintext\":12}", "plaintext"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, "{\"plaintext\":\"YWJj\",\"mode\":\"CBC\"}", "mode"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, "{\"plaintext\":\"YWJj\",\"mode\":1}", "mode"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(
        verdict(HF_OCI_OP_ENCRYPT, "{\"plaintext\":\"YWJj\",\"keyVersionId\":7}", "keyVersionId"),
        HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, "{\"plaintext\":\"YWJj\",\"iv\":\"*\"}", "iv"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, "[\"plaintext\"]", "JSON object"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, "{\"plaintext\":\"YWJj\"", NULL),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(
        verdict(HF_OCI_OP_ENCRYPT, "{\"plaintext\":\"YWJj\",\"plaintext\":\"YWJj\"}", NULL),
        HF_STATUS_BAD_REQUEST);
}

/* {"NAME":"<base64 of n bytes>"} plus extra. */
static char *body_of(const char *name, size_t n, const char *extra)
{
    size_t b64 = 4 * ((n + 2) / 3);
    char *s = malloc(b64 + 256);
    size_t at;

    at = (size_t)sprintf(s, "{\"%s\":\"", name);
    for (size_t i = 0; i < n / 3; i++, at += 4)
        memcpy(s + at, "AAAA", 4);
    if (n % 3 == 1) memcpy(s + at, "AA==", 4), at += 4;
    if (n % 3 == 2) memcpy(s + at, "AAA=", 4), at += 4;
    sprintf(s + at, "\"%s}", extra);
    return s;
}

static void test_sizes(void)
{
    char *ok = body_of("plaintext", HF_OCI_PLAINTEXT_MAX, ""),
         *over = body_of("plaintext", HF_OCI_PLAINTEXT_MAX + 1, ""),
         *aad_ok = body_of("aad", HF_OCI_AAD_MAX, ",\"plaintext\":\"AA==\""),
         *aad_over = body_of("aad", HF_OCI_AAD_MAX + 1, ",\"plaintext\":\"AA==\""),
         *ct_ok = body_of("ciphertext", HF_OCI_CIPHERTEXT_MAX, ""),
         *ct_over = body_of("ciphertext", HF_OCI_CIPHERTEXT_MAX + 1, "");

    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, ok, NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, over, "plaintext"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, aad_ok, NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_ENCRYPT, aad_over, "aad"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_DECRYPT, ct_ok, NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_DECRYPT, ct_over, "ciphertext"), HF_STATUS_BAD_REQUEST);
    free(ok);
    free(over);
    free(aad_ok);
    free(aad_over);
    free(ct_ok);
    free(ct_over);
}

static void test_decrypt_body(void)
{
    struct hf_oci_request r;

    CU_ASSERT_EQUAL_FATAL(parse(HF_OCI_OP_DECRYPT,
                                "{\"ciphertext\":\"AQID\",\"aad\":\"eA==\",\"iv\":\"AAEC\","
                                "\"tag\":\"AAECAw==\",\"keyVersionId\":\"" KV "\",\"mode\":\"GCM\","
                                "\"pad\":\"none\",\"keyId\":\"" K "\"}",
                                &r, NULL),
                          HF_STATUS_OK);
    CU_ASSERT_EQUAL(r.ciphertext.len, 3);
    CU_ASSERT_EQUAL(r.iv.len, 3);
    CU_ASSERT_EQUAL(r.tag.len, 4);
    CU_ASSERT_EQUAL(r.aad.len, 1);
    CU_ASSERT_STRING_EQUAL(r.key_version_id, KV);
    hf_oci_request_clear(&r);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_DECRYPT, "{\"ciphertext\":\"AQID\",\"pad\":\"NONE\"}", NULL),
                    HF_STATUS_OK);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_DECRYPT, "{\"aad\":\"eA==\"}", "ciphertext"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(
        verdict(HF_OCI_OP_DECRYPT, "{\"ciphertext\":\"AQID\",\"pad\":\"pkcs7\"}", "pad"),
        HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_DECRYPT, "{\"ciphertext\":\"AQID\",\"tag\":\"%%\"}", "tag"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(
        verdict(HF_OCI_OP_DECRYPT, "{\"ciphertext\":\"AQID\",\"mode\":\"AES_CBC\"}", "mode"),
        HF_STATUS_BAD_REQUEST);
}

static void test_random_body(void)
{
    struct hf_oci_request r;

    CU_ASSERT_EQUAL_FATAL(parse(HF_OCI_OP_VAULT_RANDOM, "{\"length\":32}", &r, NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(r.length, 32);
    hf_oci_request_clear(&r);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_KEY_RANDOM, "{\"length\":1}", NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_KEY_RANDOM, "{\"length\":65535}", NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_KEY_RANDOM, "{\"length\":0}", "1..65535"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_KEY_RANDOM, "{\"length\":65536}", "1..65535"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_KEY_RANDOM, "{\"length\":-5}", NULL), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_KEY_RANDOM, "{\"length\":99999999999999999999999}", NULL),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_VAULT_RANDOM, "{\"length\":32.0}", "integer"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_VAULT_RANDOM, "{\"length\":\"32\"}", "integer"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_VAULT_RANDOM, "{}", "length"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_VAULT_RANDOM, "", NULL), HF_STATUS_BAD_REQUEST);
}

static void test_get_routes_read_no_body(void)
{
    struct hf_oci_request r;

    CU_ASSERT_EQUAL(parse(HF_OCI_OP_KEY_METADATA, "not json", &r, NULL), HF_STATUS_OK);
    CU_ASSERT_PTR_NULL(r.root);
    hf_oci_request_clear(&r);
    CU_ASSERT_EQUAL(verdict(HF_OCI_OP_VAULT_METADATA, "", NULL), HF_STATUS_OK);
}

static bool scope(const char *claims_json, enum hf_oci_op op)
{
    static const char *const auds[] = {"https://10.0.0.31/", "https://hf.test"};
    struct json_object *c = json_tokener_parse(claims_json);
    bool ok;

    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    ok = hf_oci_scope_allows(c, op, auds, 2);
    json_object_put(c);
    return ok;
}

static void test_scope_rule(void)
{
    for (int op = HF_OCI_OP_VAULT_METADATA; op <= HF_OCI_OP_KEY_RANDOM; op++) {
        CU_ASSERT_TRUE(scope("{\"scope\":\"oci_ekms\"}", op));
        CU_ASSERT_TRUE(scope("{\"scope\":\"openid  oci_ekms\"}", op));
        CU_ASSERT_TRUE(scope("{\"scope\":\"https://10.0.0.31/oci_ekms\"}", op));
        CU_ASSERT_TRUE(scope("{\"scope\":\"https://hf.test/oci_ekms\"}", op));
        CU_ASSERT_TRUE(scope("{\"scp\":\"oci_ekms\"}", op));
        CU_ASSERT_TRUE(scope("{\"scp\":[\"x\",\"oci_ekms\"]}", op));
        CU_ASSERT_FALSE(scope("{\"scope\":\"https://evil.test/oci_ekms\"}", op));
        CU_ASSERT_FALSE(scope("{\"scope\":\"oci_ekmsx\"}", op));
        CU_ASSERT_FALSE(scope("{\"scope\":\"OCI_EKMS\"}", op));
        CU_ASSERT_FALSE(scope("{\"scope\":\"https://hf.testoci_ekms\"}", op));
        CU_ASSERT_TRUE(scope("{\"scope\":[1,\"oci_ekms\"]}", op)); /* an array, as scp */
        CU_ASSERT_FALSE(scope("{\"scope\":7}", op));
        CU_ASSERT_FALSE(scope("{\"sub\":\"oci_ekms\"}", op));
        CU_ASSERT_FALSE(scope("{}", op));
        CU_ASSERT_FALSE(scope("{\"scope\":\"\"}", op));
    }
    /* A legacy scope admits its own operation only. */
    CU_ASSERT_TRUE(scope("{\"scope\":\"oci_hyok_encrypt\"}", HF_OCI_OP_ENCRYPT));
    CU_ASSERT_FALSE(scope("{\"scope\":\"oci_hyok_encrypt\"}", HF_OCI_OP_DECRYPT));
    CU_ASSERT_FALSE(scope("{\"scope\":\"oci_hyok_encrypt\"}", HF_OCI_OP_KEY_METADATA));
    CU_ASSERT_TRUE(scope("{\"scope\":\"https://10.0.0.31/oci_hyok_decrypt\"}", HF_OCI_OP_DECRYPT));
    CU_ASSERT_TRUE(scope("{\"scp\":[\"oci_hyok_getKeyMetadata\"]}", HF_OCI_OP_KEY_METADATA));
    CU_ASSERT_FALSE(scope("{\"scp\":[\"oci_hyok_getKeyMetadata\"]}", HF_OCI_OP_VERSION_METADATA));
    CU_ASSERT_TRUE(
        scope("{\"scope\":\"oci_hyok_getKeyVersionMetadata\"}", HF_OCI_OP_VERSION_METADATA));
    CU_ASSERT_TRUE(scope("{\"scope\":\"oci_hyok_getVaultMetadata\"}", HF_OCI_OP_VAULT_METADATA));
    CU_ASSERT_TRUE(scope("{\"scope\":\"oci_hyok_generateRandomBytes\"}", HF_OCI_OP_VAULT_RANDOM));
    CU_ASSERT_TRUE(scope("{\"scope\":\"oci_hyok_generateRandomBytes\"}", HF_OCI_OP_KEY_RANDOM));
    CU_ASSERT_FALSE(scope("{\"scope\":\"oci_hyok_generateRandomBytes\"}", HF_OCI_OP_ENCRYPT));
    CU_ASSERT_FALSE(scope("{\"scope\":\"oci_ekms\"}", HF_OCI_OP_NONE));
    CU_ASSERT_FALSE(hf_oci_scope_allows(NULL, HF_OCI_OP_ENCRYPT, NULL, 0));
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"every route of the spec's table parses, with its ids", test_every_route_parses},
        {"other paths under /vaults/ name no route; others are not ours",
         test_other_paths_are_ours_or_not},
        {"encrypt: plaintext required, base64 strict, mode, keyVersionId, iv", test_encrypt_body},
        {"the spec's sizes: plaintext, aad, ciphertext", test_sizes},
        {"decrypt: ciphertext required, optional fields, pad none only", test_decrypt_body},
        {"generateRandomBytes: length a JSON integer 1..65535", test_random_body},
        {"GET routes read no body", test_get_routes_read_no_body},
        {"scopes: oci_ekms, audience-prefixed, legacy scopes for their operation only",
         test_scope_rule},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"oci-request", NULL, NULL, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
