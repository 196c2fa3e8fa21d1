/* hf-load's OCI, SAP and DKE builders: the requests carry what the specs ask (routes, fields,
 * the bearer token the gateway's own verifier accepts), each VU prepares its ciphertext once
 * (SAP AES from its symmetric-encrypt reply, SAP RSA and DKE with OpenSSL on the published public
 * key, which the test's private key then decrypts), and a reply counts only when it gives back
 * the VU's own plaintext. Keys and JWKS are made here. */
#include "hf-build.h"

#include "gateway/plugin.h"
#include "tests/load/load.h"
#include "tests/unit/harness.h"
#include "tests/unit/jwt-mint.h"

#include <json.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VAULT "0b6f9a3c-1d2e-4f50-8a7b-9c0d1e2f3a4b"
#define KEY "6f1c3b2a-0000-4000-8000-000000000001"
#define KEY_VERSION "7a2d4c6e-0000-4000-8000-000000000002"
#define TENANT "tenant-hf-load"
#define EMAIL "user@example.test"
/* The spec's OCI known answer (oci-ekms.md, "Crypto"). */
#define OCI_REPLY                                                                                  \
    "{\"ciphertext\":\"AQAAAAEAAQIDBAUGBwgJCgsmYLV/oIOlc+Qr/"                                      \
    "Ofchxcd8qT0QIUNKARBHYTnfg1l1BzX+4oDMsm4"                                                      \
    "bt0Li6VnNDI=\",\"iv\":\"AAECAwQFBgcICQoL\",\"tag\":\"HNf7igMyybhu3QuLpWc0Mg==\","             \
    "\"mode\":\"AES_GCM\",\"keyId\":\"" KEY "\",\"keyVersionId\":\"" KEY_VERSION "\"}"

static char dir[64], token_pem[128], cert_pem[128], jwks_path[128];
static EVP_PKEY *rsa3072, *rsa2048;
static struct hf_load_config cfg;
static char err[1024];

static bool pem_write(EVP_PKEY *key, const char *path)
{
    FILE *f = fopen(path, "w");
    bool ok = f && PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) == 1;

    if (f) ok = fclose(f) == 0 && ok;
    return ok;
}

static int suite_init(void)
{
    EVP_PKEY *token = hf_test_key_rsa(2048);
    char *jwk = NULL;
    int rc = -1;

    rsa3072 = hf_test_key_rsa(3072);
    rsa2048 = hf_test_key_rsa(2048);
    snprintf(dir, sizeof(dir), "/tmp/hf-load-hyok-XXXXXX");
    if (!mkdtemp(dir) || !token || !rsa3072 || !rsa2048) goto done;
    snprintf(token_pem, sizeof(token_pem), "%s/token.pem", dir);
    snprintf(cert_pem, sizeof(cert_pem), "%s/client.pem", dir);
    snprintf(jwks_path, sizeof(jwks_path), "%s/jwks.json", dir);
    jwk = hf_test_jwk(token, "tk");
    /* The builders only check --cert is given; the TLS client loads it (hf-load.sh). */
    if (pem_write(token, token_pem) && pem_write(token, cert_pem) && jwk &&
        hf_test_jwks_write(jwks_path, (const char *const *)&jwk, 1))
        rc = 0;
done:
    free(jwk);
    EVP_PKEY_free(token);
    return rc;
}

static int suite_clean(void)
{
    char cmd[128];

    EVP_PKEY_free(rsa3072);
    EVP_PKEY_free(rsa2048);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static enum hf_args_result parse(const char *first, ...)
{
    char *argv[64];
    int argc = 0;
    va_list ap;

    argv[argc++] = "hf-load";
    va_start(ap, first);
    for (const char *a = first; a && argc < 63; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    err[0] = '\0';
    return hf_load_args_parse(argc, argv, &cfg, err, sizeof(err));
}

/* A request's parts: method, target, the body as JSON (NULL when none). */
struct request {
    char method[8];
    char target[512];
    const char *body;
    struct json_object *json;
};

static bool header_is(const struct hf_buf *req, const char *name, const char *value)
{
    char line[8192];

    snprintf(line, sizeof(line), "\r\n%s: %s\r\n", name, value);
    return memmem(req->data, req->len, line, strlen(line)) != NULL;
}

static int request_read(struct hf_buf *req, struct request *r)
{
    const char *end;
    char len[32];

    if (hf_buf_append(req, "", 1) != 0) return -1; /* NUL-terminated for strstr */
    req->len--;
    end = strstr(req->data, "\r\n\r\n");
    if (!end || sscanf(req->data, "%7s %511s HTTP/1.1\r\n", r->method, r->target) != 2) return -1;
    r->body = end + 4;
    r->json = NULL;
    if (strcmp(r->method, "GET") == 0) return *r->body ? -1 : 0;
    snprintf(len, sizeof(len), "%zu", strlen(r->body));
    if (!header_is(req, "Content-Length", len) ||
        !header_is(req, "Content-Type", "application/json"))
        return -1;
    r->json = json_tokener_parse(r->body);
    return r->json ? 0 : -1;
}

static const char *member_of(struct json_object *o, const char *name)
{
    struct json_object *f;

    if (!o || !json_object_object_get_ex(o, name, &f) || !json_object_is_type(f, json_type_string))
        return NULL;
    return json_object_get_string(f);
}

#define member(r, name) member_of((r)->json, name)

static struct request build(void *state, void **vu, struct hf_buf *out, bool *setup)
{
    struct request r = {0};

    out->len = 0;
    CU_ASSERT_EQUAL_FATAL(cfg.api->build(state, vu, out, setup), 0);
    CU_ASSERT_EQUAL_FATAL(request_read(out, &r), 0);
    return r;
}

/* The bearer token of a request, verified as a plugin would for issuer and audience. */
static struct hf_jwt *token_verified(const struct hf_buf *req, const char *iss, const char *aud)
{
    struct hf_jwt_issuer issuer = {
        .issuer = iss, .jwks = jwks_path, .audiences = &aud, .naudiences = 1, .algs = HF_JWT_RS256};
    struct hf_jwt_verifier *v = hf_jwt_verifier_new();
    const char *auth = memmem(req->data, req->len, "\r\nAuthorization: Bearer ", 24);
    struct hf_jwt *t = NULL;
    char token[8192], why[256] = "";

    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_TRUE_FATAL(hf_jwt_verifier_add(v, &issuer, why, sizeof(why)));
    CU_ASSERT_PTR_NOT_NULL_FATAL(auth);
    CU_ASSERT_EQUAL_FATAL(sscanf(auth, "\r\nAuthorization: Bearer %8191s", token), 1);
    if (hf_jwt_verify(v, token, strlen(token), &t, why, sizeof(why)) != HF_STATUS_OK)
        fprintf(stderr, "\n    token refused: %s\n", why);
    hf_jwt_verifier_free(v);
    return t;
}

/* RSA-OAEP SHA-256 decryption with the test's private key of a base64 ciphertext: the bytes'
 * base64 (free()), or NULL. */
static char *oaep_open(EVP_PKEY *key, const char *ct64)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(key, NULL);
    unsigned char *ct = NULL, pt[512];
    size_t ctlen = 0, ptlen = sizeof(pt);
    char *out = NULL;

    if ((ct = hf_load_unb64(ct64, &ctlen)) && ctlen == (size_t)EVP_PKEY_get_size(key) && ctx &&
        EVP_PKEY_decrypt_init(ctx) == 1 &&
        EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) == 1 &&
        EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_sha256()) == 1 &&
        EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha256()) == 1 &&
        EVP_PKEY_decrypt(ctx, pt, &ptlen, ct, ctlen) == 1)
        out = hf_load_b64(pt, ptlen);
    free(ct);
    EVP_PKEY_CTX_free(ctx);
    return out;
}

static int check(void *state, void **vu, bool setup, const char *reply)
{
    return cfg.api->check(state, vu, setup, reply, strlen(reply));
}

/* {"<name>":"<value>"} */
static int check_one(void *state, void **vu, bool setup, const char *name, const char *value)
{
    char reply[8192];

    snprintf(reply, sizeof(reply), "{\"%s\":\"%s\"}", name, value);
    return check(state, vu, setup, reply);
}

/* ---- OCI ---------------------------------------------------------------------------------- */

static void test_oci_encrypt_request(void)
{
    struct hf_buf out = {0};
    void *state = NULL, *vu = NULL;
    char first[64] = "", first_token[4096] = "";
    bool setup = true;
    struct hf_jwt *t;

    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://10.0.0.31:8443", "--api", "oci-encrypt", "--vus",
                                "1", "--vault-id", VAULT, "--key-id", KEY, "--token-key", token_pem,
                                "--token-kid", "tk", NULL),
                          HF_ARGS_OK);
    CU_ASSERT_EQUAL(cfg.limit_ms, 100);
    CU_ASSERT_EQUAL_FATAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    for (int round = 0; round < 2; round++) {
        struct request r = build(state, &vu, &out, &setup);
        const char *auth = strstr(out.data, "Bearer ");

        CU_ASSERT_FALSE(setup);
        CU_ASSERT_STRING_EQUAL(r.method, "POST");
        CU_ASSERT_STRING_EQUAL(r.target,
                               "/api/v1/cckm/oci/ekm/v1/vaults/" VAULT "/keys/" KEY "/encrypt");
        CU_ASSERT_TRUE(header_is(&out, "Host", "10.0.0.31:8443"));
        /* The k6 oci_hyok shape: a 32-byte plaintext, a new one each call, one token. */
        CU_ASSERT_EQUAL_FATAL(strlen(member(&r, "plaintext")), 44);
        CU_ASSERT_EQUAL(json_object_object_length(r.json), 1);
        if (round == 0) {
            snprintf(first, sizeof(first), "%s", member(&r, "plaintext"));
            snprintf(first_token, sizeof(first_token), "%.*s", (int)strcspn(auth, "\r"), auth);
        } else {
            CU_ASSERT_STRING_NOT_EQUAL(first, member(&r, "plaintext"));
            CU_ASSERT_EQUAL(strncmp(first_token, auth, strlen(first_token)), 0);
        }
        json_object_put(r.json);
    }
    /* IDCS's issuer, the primary audience Holdfast's URL, scope oci_ekms. */
    t = token_verified(&out, "https://identity.oraclecloud.com/", "https://10.0.0.31:8443/");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_STRING_EQUAL(hf_jwt_claim(t, "scope"), "oci_ekms");
    CU_ASSERT_STRING_EQUAL(hf_jwt_claim(t, "client_id"), "hf-load");
    hf_jwt_release(t);
    CU_ASSERT_EQUAL(check(state, &vu, false, OCI_REPLY), 0);
    CU_ASSERT_NOT_EQUAL(check_one(state, &vu, false, "ciphertext", "AAAA"), 0);
    {
        char reply[512];

        snprintf(reply, sizeof(reply), "%s", OCI_REPLY);
        memcpy(strstr(reply, "AES_GCM"), "AES_CBC", 7);
        CU_ASSERT_NOT_EQUAL(check(state, &vu, false, reply), 0);
    }
    cfg.api->free_state(state);
    hf_buf_free(&out);
}

static void test_oci_options_and_prefix(void)
{
    struct hf_buf out = {0};
    void *state = NULL, *vu = NULL;
    bool setup;
    struct request r;
    struct hf_jwt *t;

    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://h:1", "--api", "oci-encrypt", "--vus", "1",
                                "--key-id", KEY, "--token-key", token_pem, "--token-kid", "tk",
                                NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--vault-id"));
    CU_ASSERT_PTR_NULL(state);
    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://h:1/gw", "--api", "oci-encrypt", "--vus", "1",
                                "--prefix", "oci", "--vault-id", VAULT, "--key-id", KEY,
                                "--token-key", token_pem, "--token-kid", "tk", "--issuer",
                                "https://idcs.test/", "--audience", "https://hf.test/", NULL),
                          HF_ARGS_OK);
    CU_ASSERT_EQUAL_FATAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    r = build(state, &vu, &out, &setup);
    CU_ASSERT_STRING_EQUAL(r.target, "/gw/oci/vaults/" VAULT "/keys/" KEY "/encrypt");
    json_object_put(r.json);
    CU_ASSERT_PTR_NOT_NULL(t = token_verified(&out, "https://idcs.test/", "https://hf.test/"));
    hf_jwt_release(t);
    cfg.api->free_state(state);
    hf_buf_free(&out);
}

/* ---- SAP ---------------------------------------------------------------------------------- */

#define SAP_BASE "/api/v1/cckm/sap/hyok/v1/keystores/" VAULT "/keys/" KEY "/"

static void sap_parse(const char *api)
{
    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://127.0.0.1:9443", "--api", api, "--vus", "1",
                                "--keystore-id", VAULT, "--key-id", KEY, "--tenant", TENANT,
                                "--cert", cert_pem, NULL),
                          HF_ARGS_OK);
}

static void check_metadata(const struct request *r)
{
    struct json_object *md;

    CU_ASSERT_FATAL(json_object_object_get_ex(r->json, "request_metadata", &md));
    CU_ASSERT_STRING_EQUAL(member_of(md, "sap_tenant_id"), TENANT);
}

static void test_sap_options(void)
{
    void *state = NULL;

    CU_ASSERT_EQUAL(parse("--url", "http://h:1", "--api", "sap-decrypt", "--vus", "1", "--cert",
                          cert_pem, NULL),
                    HF_ARGS_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "https://"));
    CU_ASSERT_EQUAL(parse("--url", "https://h:1", "--api", "sap-decrypt", "--vus", "1", "--key",
                          cert_pem, NULL),
                    HF_ARGS_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--key needs --cert"));
    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://h:1", "--api", "sap-rsa-decrypt", "--vus", "1",
                                "--keystore-id", VAULT, "--key-id", KEY, "--tenant", TENANT, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "mutual TLS"));
    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://h:1", "--api", "sap-decrypt", "--vus", "1",
                                "--keystore-id", VAULT, "--key-id", KEY, "--cert", cert_pem, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--tenant"));
    CU_ASSERT_PTR_NULL(state);
}

static void test_sap_aes_prepares_with_one_encrypt(void)
{
    struct hf_buf out = {0};
    void *state = NULL, *vu = NULL;
    char key[64], reply[512];
    bool setup = false;
    struct request r;

    sap_parse("sap-decrypt");
    CU_ASSERT_EQUAL_FATAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    r = build(state, &vu, &out, &setup);
    CU_ASSERT_TRUE(setup);
    CU_ASSERT_STRING_EQUAL(r.target, SAP_BASE "symmetric-encrypt");
    check_metadata(&r);
    CU_ASSERT_PTR_NULL(member(&r, "iv")); /* a caller's IV is a 400 */
    CU_ASSERT_EQUAL_FATAL(strlen(member(&r, "plaintext")), 44);
    snprintf(key, sizeof(key), "%s", member(&r, "plaintext"));
    json_object_put(r.json);
    /* A reply without a whole IV does not prepare the VU: it encrypts again. */
    snprintf(reply, sizeof(reply),
             "{\"ciphertext\":\"%s\",\"iv\":\"AAAA\",\"tag\":\"w3dJz9U5pTRn/T866ZyH0A==\","
             "\"key_version_id\":\"" KEY_VERSION "\"}",
             key);
    CU_ASSERT_NOT_EQUAL(check(state, &vu, true, reply), 0);
    r = build(state, &vu, &out, &setup);
    CU_ASSERT_TRUE(setup);
    snprintf(key, sizeof(key), "%s", member(&r, "plaintext"));
    json_object_put(r.json);
    snprintf(reply, sizeof(reply),
             "{\"ciphertext\":\"%.43sQ\",\"iv\":\"AAECAwQFBgcICQoL\",\"tag\":\"w3dJz9U5pTRn/"
             "T866ZyH0A==\",\"key_version_id\":\"" KEY_VERSION "\"}",
             "M2elb6yLpQM2elb6yLpQM2elb6yLpQM2elb6yLpQM2elb6yLpQ");
    CU_ASSERT_EQUAL_FATAL(check(state, &vu, true, reply), 0);
    for (int round = 0; round < 2; round++) {
        r = build(state, &vu, &out, &setup);
        CU_ASSERT_FALSE(setup);
        CU_ASSERT_STRING_EQUAL(r.target, SAP_BASE "symmetric-decrypt");
        check_metadata(&r);
        CU_ASSERT_STRING_EQUAL(member(&r, "iv"), "AAECAwQFBgcICQoL");
        CU_ASSERT_STRING_EQUAL(member(&r, "tag"), "w3dJz9U5pTRn/T866ZyH0A==");
        CU_ASSERT_STRING_EQUAL(member(&r, "key_version_id"), KEY_VERSION);
        CU_ASSERT_EQUAL(strlen(member(&r, "ciphertext")), 44);
        CU_ASSERT_PTR_NULL(member(&r, "plaintext"));
        json_object_put(r.json);
    }
    /* The decrypt must give back the VU's own key. */
    CU_ASSERT_EQUAL(check_one(state, &vu, false, "plaintext", key), 0);
    key[3] ^= 1;
    CU_ASSERT_NOT_EQUAL(check_one(state, &vu, false, "plaintext", key), 0);
    cfg.api->free_vu(vu);
    cfg.api->free_state(state);
    hf_buf_free(&out);
}

/* {"public_key":"<PEM with \n>","key_version_id":KEY_VERSION} */
static char *public_key_reply(EVP_PKEY *key)
{
    BIO *bio = BIO_new(BIO_s_mem());
    struct json_object *o = json_object_new_object();
    char *pem = NULL, *out = NULL;
    long n;

    if (bio && o && PEM_write_bio_PUBKEY(bio, key) == 1 && (n = BIO_get_mem_data(bio, &pem)) > 0) {
        json_object_object_add(o, "public_key", json_object_new_string_len(pem, (int)n));
        json_object_object_add(o, "key_version_id", json_object_new_string(KEY_VERSION));
        out = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    }
    json_object_put(o);
    BIO_free(bio);
    return out;
}

static void test_sap_rsa_encrypts_on_the_public_key(void)
{
    struct hf_buf out = {0};
    void *state = NULL, *vu = NULL;
    char *reply2048 = public_key_reply(rsa2048), *reply3072 = public_key_reply(rsa3072);
    char *pt = NULL, ct[1024] = "";
    bool setup = false;
    struct request r;

    CU_ASSERT_PTR_NOT_NULL_FATAL(reply2048);
    CU_ASSERT_PTR_NOT_NULL_FATAL(reply3072);
    sap_parse("sap-rsa-decrypt");
    CU_ASSERT_EQUAL_FATAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    r = build(state, &vu, &out, &setup);
    CU_ASSERT_TRUE(setup);
    CU_ASSERT_STRING_EQUAL(r.target, SAP_BASE "get-public-key");
    check_metadata(&r);
    json_object_put(r.json);
    /* Not an RSA-3072 key: the run would not measure what it says. */
    CU_ASSERT_NOT_EQUAL(check(state, &vu, true, reply2048), 0);
    CU_ASSERT_NOT_EQUAL(check_one(state, &vu, true, "public_key", "-----BEGIN junk"), 0);
    r = build(state, &vu, &out, &setup);
    CU_ASSERT_TRUE(setup);
    json_object_put(r.json);
    CU_ASSERT_EQUAL_FATAL(check(state, &vu, true, reply3072), 0);
    for (int round = 0; round < 2; round++) {
        r = build(state, &vu, &out, &setup);
        CU_ASSERT_FALSE(setup);
        CU_ASSERT_STRING_EQUAL(r.target, SAP_BASE "asymmetric-decrypt");
        check_metadata(&r);
        CU_ASSERT_STRING_EQUAL(member(&r, "algorithm"), "RSAES_OAEP_SHA_256");
        CU_ASSERT_STRING_EQUAL(member(&r, "key_version_id"), KEY_VERSION);
        CU_ASSERT_EQUAL_FATAL(strlen(member(&r, "ciphertext")), 512); /* 384 bytes */
        if (round == 0) snprintf(ct, sizeof(ct), "%s", member(&r, "ciphertext"));
        CU_ASSERT_STRING_EQUAL(member(&r, "ciphertext"), ct); /* prepared once */
        json_object_put(r.json);
    }
    /* The test's private key opens it (OAEP SHA-256), and that key is what the check wants. */
    pt = oaep_open(rsa3072, ct);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pt);
    CU_ASSERT_EQUAL(strlen(pt), 44);
    CU_ASSERT_EQUAL(check_one(state, &vu, false, "plaintext", pt), 0);
    pt[0] = pt[0] == 'A' ? 'B' : 'A';
    CU_ASSERT_NOT_EQUAL(check_one(state, &vu, false, "plaintext", pt), 0);
    free(pt);
    free(reply2048);
    free(reply3072);
    cfg.api->free_vu(vu);
    cfg.api->free_state(state);
    hf_buf_free(&out);
}

/* ---- DKE ---------------------------------------------------------------------------------- */

#define DKE_ISS "https://sts.windows.net/00000000-0000-4000-8000-00000000d4e0/"

/* The GET's reply as the spec gives it: n in standard base64, e an integer, kid the key URL. */
static char *dke_reply(EVP_PKEY *key, const char *kid)
{
    BIGNUM *n = NULL;
    unsigned char bytes[512];
    char *n64 = NULL, *out = NULL;
    int len;

    if (EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_N, &n) == 1 &&
        (len = BN_bn2bin(n, bytes)) > 0 && (n64 = hf_load_b64(bytes, (size_t)len)) &&
        (out = malloc(strlen(n64) + 512)))
        sprintf(out,
                "{\"key\":{\"kty\":\"RSA\",\"n\":\"%s\",\"e\":65537,\"alg\":\"RS256\","
                "\"kid\":\"%s\"},\"cache\":{\"exp\":\"2099-01-31T12:00:00\"}}",
                n64, kid);
    BN_free(n);
    free(n64);
    return out;
}

static void test_dke_decrypt_request(void)
{
    struct hf_buf out = {0};
    void *state = NULL, *vu = NULL;
    char *good = dke_reply(rsa3072, "https://dke.test/dke/Label-1/" KEY_VERSION);
    char *bad_kid = dke_reply(rsa3072, "https://dke.test/dke/Label-1/");
    char *pt = NULL;
    bool setup = false;
    struct request r;
    struct hf_jwt *t;

    CU_ASSERT_PTR_NOT_NULL_FATAL(good);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bad_kid);
    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://127.0.0.1:7443", "--api", "dke-decrypt", "--vus",
                                "1", "--prefix", "/dke", "--key-id", "Label-1", "--token-key",
                                token_pem, "--token-kid", "tk", "--email", EMAIL, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_EQUAL_FATAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    r = build(state, &vu, &out, &setup);
    CU_ASSERT_TRUE(setup); /* the anonymous GET of the public key */
    CU_ASSERT_STRING_EQUAL(r.method, "GET");
    CU_ASSERT_STRING_EQUAL(r.target, "/dke/Label-1");
    CU_ASSERT_NOT_EQUAL(check(state, &vu, true, bad_kid), 0);
    CU_ASSERT_NOT_EQUAL(check(state, &vu, true, "{\"key\":{\"kty\":\"EC\"}}"), 0);
    CU_ASSERT_EQUAL_FATAL(check(state, &vu, true, good), 0);
    r = build(state, &vu, &out, &setup);
    CU_ASSERT_FALSE(setup);
    CU_ASSERT_STRING_EQUAL(r.method, "POST");
    CU_ASSERT_STRING_EQUAL(r.target, "/dke/Label-1/" KEY_VERSION "/decrypt");
    CU_ASSERT_STRING_EQUAL(member(&r, "alg"), "RSA-OAEP-256");
    CU_ASSERT_EQUAL_FATAL(strlen(member(&r, "value")), 512);
    pt = oaep_open(rsa3072, member(&r, "value"));
    json_object_put(r.json);
    /* Entra ID's v1 issuer, the service's URL as audience, the user's email. */
    t = token_verified(&out, DKE_ISS, "https://127.0.0.1:7443");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_STRING_EQUAL(hf_jwt_claim(t, "email"), EMAIL);
    CU_ASSERT_STRING_EQUAL(hf_jwt_claim(t, "scp"), "user_impersonation");
    hf_jwt_release(t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pt);
    CU_ASSERT_EQUAL(check_one(state, &vu, false, "value", pt), 0);
    pt[5] = pt[5] == 'A' ? 'B' : 'A';
    CU_ASSERT_NOT_EQUAL(check_one(state, &vu, false, "value", pt), 0);
    free(pt);
    free(good);
    free(bad_kid);
    cfg.api->free_vu(vu);
    cfg.api->free_state(state);
    hf_buf_free(&out);
}

static void test_dke_options(void)
{
    void *state = NULL;

    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://h:1", "--api", "dke-decrypt", "--vus", "1",
                                "--key-id", "bad/name", "--token-key", token_pem, "--token-kid",
                                "tk", "--email", EMAIL, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "[A-Za-z0-9._-]"));
    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://h:1", "--api", "dke-decrypt", "--vus", "1",
                                "--key-id", "k", "--token-key", token_pem, "--token-kid", "tk",
                                NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--email"));
    CU_ASSERT_PTR_NULL(state);
}

/* A self-signed certificate of key, as PEM at path. */
static bool cert_write(EVP_PKEY *key, const char *path)
{
    X509 *x = X509_new();
    FILE *f = NULL;
    bool ok = x && ASN1_INTEGER_set(X509_get_serialNumber(x), 1) &&
              X509_gmtime_adj(X509_getm_notBefore(x), 0) &&
              X509_gmtime_adj(X509_getm_notAfter(x), 3600) && X509_set_pubkey(x, key) &&
              X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                                         (const unsigned char *)"hf-load", -1, -1, 0) &&
              X509_set_issuer_name(x, X509_get_subject_name(x)) &&
              X509_sign(x, key, EVP_sha256()) > 0 && (f = fopen(path, "w")) &&
              PEM_write_X509(f, x) == 1;

    if (f) ok = fclose(f) == 0 && ok;
    X509_free(x);
    return ok;
}

/* --cert/--key as hf-load's TLS client loads them: each wrong file is named, with what is
 * wrong, before any connection. */
static void test_client_certificate_is_checked_at_start(void)
{
    char cert[160], other[160];
    struct hf_target t;

    snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    snprintf(other, sizeof(other), "%s/other.pem", dir);
    CU_ASSERT_TRUE_FATAL(cert_write(rsa2048, cert));
    CU_ASSERT_TRUE_FATAL(pem_write(rsa3072, other));
    {
        /* The key in a file of its own, then the same key with the certificate in one file. */
        char key[160], both[160], cmd[512];

        snprintf(key, sizeof(key), "%s/cert.key", dir);
        snprintf(both, sizeof(both), "%s/both.pem", dir);
        CU_ASSERT_TRUE_FATAL(pem_write(rsa2048, key));
        snprintf(cmd, sizeof(cmd), "cat '%s' '%s' >'%s'", cert, key, both);
        CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
        CU_ASSERT_EQUAL_FATAL(parse("--url", "https://127.0.0.1:1", "--api", "static", "--vus", "1",
                                    "--cert", cert, "--key", key, NULL),
                              HF_ARGS_OK);
        CU_ASSERT_EQUAL(hf_target_open(&cfg, &t, err, sizeof(err)), 0);
        hf_target_close(&t);
        CU_ASSERT_EQUAL_FATAL(parse("--url", "https://127.0.0.1:1", "--api", "static", "--vus", "1",
                                    "--cert", both, NULL),
                              HF_ARGS_OK);
        CU_ASSERT_EQUAL(hf_target_open(&cfg, &t, err, sizeof(err)), 0);
        hf_target_close(&t);
    }
    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://127.0.0.1:1", "--api", "static", "--vus", "1",
                                "--cert", cert, "--key", other, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(hf_target_open(&cfg, &t, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "is not the private key (PEM) of --cert"));
    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://127.0.0.1:1", "--api", "static", "--vus", "1",
                                "--cert", other, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(hf_target_open(&cfg, &t, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "holds no PEM certificate"));
    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://127.0.0.1:1", "--api", "static", "--vus", "1",
                                "--cert", "/nonexistent/c.pem", NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(hf_target_open(&cfg, &t, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--cert '/nonexistent/c.pem'"));
}

static void test_b64_round_trip(void)
{
    static const unsigned char data[] = "\x00\xff\x10 hf-load";
    size_t n;
    unsigned char *back;
    char *text;

    for (size_t len = 1; len <= sizeof(data) - 1; len++) {
        CU_ASSERT_PTR_NOT_NULL_FATAL(text = hf_load_b64(data, len));
        CU_ASSERT_EQUAL(strlen(text), (len + 2) / 3 * 4);
        CU_ASSERT_PTR_NOT_NULL_FATAL(back = hf_load_unb64(text, &n));
        CU_ASSERT_EQUAL(n, len);
        CU_ASSERT_EQUAL(memcmp(back, data, len), 0);
        free(back);
        free(text);
    }
    CU_ASSERT_PTR_NULL(hf_load_unb64("abc", &n));
    CU_ASSERT_PTR_NULL(hf_load_unb64("ab!d", &n));
}

static CU_TestInfo tests[] = {
    {"OCI encrypt: the k6 shape with a verifiable IDCS token", test_oci_encrypt_request},
    {"OCI options and prefix", test_oci_options_and_prefix},
    {"SAP options: mutual TLS, keystore, tenant", test_sap_options},
    {"SAP AES decrypt prepares with one symmetric-encrypt", test_sap_aes_prepares_with_one_encrypt},
    {"SAP RSA decrypt encrypts on the published RSA-3072 key",
     test_sap_rsa_encrypts_on_the_public_key},
    {"DKE decrypt: the published key, the kid's version, an Entra token", test_dke_decrypt_request},
    {"DKE options", test_dke_options},
    {"--cert and --key are checked at start", test_client_certificate_is_checked_at_start},
    {"base64 both ways", test_b64_round_trip},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"load-hyok", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
