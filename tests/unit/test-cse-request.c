/* The gws-cse request bodies (gateway/plugins/gws-cse/request.[ch]): the op table, each op's
 * required fields, the spec's size caps at their edge, strict base64, unknown and other ops'
 * fields ignored, the opaque reason, and the body's own limits (not an object, duplicate keys,
 * over 64 KiB: 413). */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/gws-cse/request.h"

#include <stdlib.h>
#include <string.h>

static struct hf_cse_request req;
static char why[256];

static enum hf_status parse(enum hf_cse_op op, const char *body)
{
    hf_cse_request_clear(&req);
    why[0] = '\0';
    return hf_cse_request_parse(op, (const unsigned char *)body, strlen(body), &req, why,
                                sizeof(why));
}

/* A string of n copies of c, base64 of n zero bytes, ...: test bodies built in a buffer. */
static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);

    CU_ASSERT_FATAL(s != NULL);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* The base64 of n bytes (all 'A' characters decode to zero bytes), padded. */
static char *b64_of(size_t n)
{
    size_t chars = (n + 2) / 3 * 4;
    char *s = repeat('A', chars);

    if (n % 3 == 1) s[chars - 2] = s[chars - 1] = '=';
    if (n % 3 == 2) s[chars - 1] = '=';
    return s;
}

/* fmt with its one "%s" replaced by a. */
static char *body_with(const char *fmt, const char *a)
{
    const char *at = strstr(fmt, "%s");
    size_t head = (size_t)(at - fmt), len = strlen(fmt) + strlen(a) + 1;
    char *b = malloc(len);

    CU_ASSERT_FATAL(b != NULL && at != NULL);
    memcpy(b, fmt, head);
    strcpy(b + head, a);
    strcat(b, at + 2);
    return b;
}

static void test_the_op_table(void)
{
    enum hf_cse_op op;
    unsigned stage2 = 0;

    CU_ASSERT_TRUE(hf_cse_op_find("privilegedunwrap", &op));
    CU_ASSERT_EQUAL(op, HF_CSE_OP_PRIVILEGEDUNWRAP);
    CU_ASSERT_FALSE(hf_cse_op_find("Wrap", &op));
    CU_ASSERT_FALSE(hf_cse_op_find("", &op));
    CU_ASSERT_FALSE(hf_cse_op_find("wrap/", &op));
    CU_ASSERT_PTR_NULL(hf_cse_op_info(HF_CSE_OP_COUNT));
    for (unsigned i = 0; i < HF_CSE_OP_COUNT; i++) {
        const struct hf_cse_op_info *info = hf_cse_op_info(i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(info);
        CU_ASSERT_TRUE(hf_cse_op_find(info->name, &op) && op == i);
        /* An op with authz has roles, one without has none. */
        CU_ASSERT_EQUAL(info->authz, info->roles != NULL);
        /* Privileged ops are an admin's authn, without authz. */
        if (info->privileged) CU_ASSERT_TRUE(info->authn && !info->authz);
        stage2 += info->stage2;
    }
    CU_ASSERT_EQUAL(stage2, 4);
    CU_ASSERT_STRING_EQUAL(hf_cse_op_info(HF_CSE_OP_STATUS)->method, "GET");
    CU_ASSERT_STRING_EQUAL(hf_cse_op_info(HF_CSE_OP_DIGEST)->roles[0], "verifier");
    CU_ASSERT_TRUE(hf_cse_op_info(HF_CSE_OP_REWRAP)->signing_key);
    CU_ASSERT_TRUE(hf_cse_op_info(HF_CSE_OP_DELEGATE)->signing_key);
}

static void test_a_wrap_body(void)
{
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_WRAP, "{\"authentication\":\"a.b.c\",\"authorization\":"
                                          "\"d.e.f\",\"key\":\"8A0=\",\"reason\":\"r\"}"),
                    HF_STATUS_OK);
    CU_ASSERT_STRING_EQUAL(req.authentication.s, "a.b.c");
    CU_ASSERT_EQUAL(req.authorization.len, 5);
    CU_ASSERT_EQUAL_FATAL(req.key.len, 2);
    CU_ASSERT(req.key.data[0] == 0xf0 && req.key.data[1] == 0x0d);
    CU_ASSERT_STRING_EQUAL(req.reason.s, "r");
}

/* Every field an op requires, left out in turn: 400 naming it. */
static void test_required_fields(void)
{
    static const struct {
        enum hf_cse_op op;
        const char *body, *missing;
    } cases[] = {
        {HF_CSE_OP_WRAP, "{\"authorization\":\"x\",\"key\":\"AA==\"}", "authentication"},
        {HF_CSE_OP_WRAP, "{\"authentication\":\"x\",\"key\":\"AA==\"}", "authorization"},
        {HF_CSE_OP_WRAP, "{\"authentication\":\"x\",\"authorization\":\"x\"}", "key"},
        {HF_CSE_OP_UNWRAP, "{\"authentication\":\"x\",\"authorization\":\"x\"}", "wrapped_key"},
        {HF_CSE_OP_PRIVILEGEDWRAP, "{\"authentication\":\"x\",\"key\":\"AA==\"}", "resource_name"},
        {HF_CSE_OP_PRIVILEGEDUNWRAP, "{\"authentication\":\"x\",\"resource_name\":\"r\"}",
         "wrapped_key"},
        {HF_CSE_OP_DIGEST, "{\"wrapped_key\":\"AA==\"}", "authorization"},
        {HF_CSE_OP_REWRAP, "{\"authorization\":\"x\",\"wrapped_key\":\"AA==\"}",
         "original_kacls_url"},
        {HF_CSE_OP_DELEGATE, "{\"authentication\":\"x\"}", "authorization"},
        {HF_CSE_OP_PRIVATEKEYDECRYPT,
         "{\"authentication\":\"x\",\"authorization\":\"x\",\"algorithm\":\"a\","
         "\"wrapped_private_key\":\"AA==\"}",
         "encrypted_data_encryption_key"},
        {HF_CSE_OP_PRIVILEGEDPRIVATEKEYDECRYPT,
         "{\"authentication\":\"x\",\"algorithm\":\"a\",\"encrypted_data_encryption_key\":"
         "\"AA==\",\"wrapped_private_key\":\"AA==\",\"spki_hash\":\"h\"}",
         "spki_hash_algorithm"},
        {HF_CSE_OP_PRIVATEKEYSIGN,
         "{\"authentication\":\"x\",\"authorization\":\"x\",\"algorithm\":\"a\","
         "\"wrapped_private_key\":\"AA==\"}",
         "digest"},
        {HF_CSE_OP_WRAPPRIVATEKEY, "{\"authentication\":\"x\",\"private_key\":\"AA==\"}",
         "perimeter_id"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CU_ASSERT_EQUAL(parse(cases[i].op, cases[i].body), HF_STATUS_BAD_REQUEST);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, cases[i].missing));
    }
}

/* Members the op does not take are never read: neither refused nor kept. */
static void test_unknown_and_other_fields_are_ignored(void)
{
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_UNWRAP,
                          "{\"authentication\":\"x\",\"authorization\":\"x\",\"wrapped_key\":"
                          "\"AA==\",\"key\":5,\"future_field\":{\"a\":[1]},\"resource_name\":1}"),
                    HF_STATUS_OK);
    CU_ASSERT_FALSE(req.key.present);
    CU_ASSERT_PTR_NULL(req.resource_name.s);
    /* wrapprivatekey takes no reason. */
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_WRAPPRIVATEKEY, "{\"authentication\":\"x\",\"perimeter_id\":"
                                                    "\"\",\"private_key\":\"AA==\",\"reason\":7}"),
                    HF_STATUS_OK);
    CU_ASSERT_PTR_NULL(req.reason.s);
}

/* The cap itself passes, one more byte is 400 (sizes in decoded bytes for base64). */
static void cap_edge(enum hf_cse_op op, const char *fmt, bool base64, size_t cap)
{
    for (size_t n = cap; n <= cap + 1; n++) {
        char *v = base64 ? b64_of(n) : repeat('r', n), *b = body_with(fmt, v);
        CU_ASSERT_EQUAL(parse(op, b), n == cap ? HF_STATUS_OK : HF_STATUS_BAD_REQUEST);
        free(v);
        free(b);
    }
}

static void test_sizes(void)
{
    cap_edge(HF_CSE_OP_WRAP, "{\"authentication\":\"x\",\"authorization\":\"x\",\"key\":\"%s\"}",
             true, 128);
    cap_edge(HF_CSE_OP_UNWRAP,
             "{\"authentication\":\"x\",\"authorization\":\"x\",\"wrapped_key\":\"%s\"}", true,
             1024);
    cap_edge(HF_CSE_OP_UNWRAP,
             "{\"authentication\":\"x\",\"authorization\":\"x\",\"wrapped_key\":\"AA==\","
             "\"reason\":\"%s\"}",
             false, 1024);
    cap_edge(HF_CSE_OP_PRIVILEGEDWRAP,
             "{\"authentication\":\"x\",\"key\":\"AA==\",\"resource_name\":\"%s\"}", false, 128);
    cap_edge(HF_CSE_OP_PRIVILEGEDWRAP,
             "{\"authentication\":\"x\",\"key\":\"AA==\",\"resource_name\":\"r\","
             "\"perimeter_id\":\"%s\"}",
             false, 128);
    cap_edge(HF_CSE_OP_WRAP, "{\"authentication\":\"%s\",\"authorization\":\"x\",\"key\":\"AA==\"}",
             false, 8192);
    cap_edge(HF_CSE_OP_PRIVATEKEYSIGN,
             "{\"authentication\":\"x\",\"authorization\":\"x\",\"algorithm\":\"a\","
             "\"digest\":\"AA==\",\"wrapped_private_key\":\"%s\"}",
             true, 8192);
    cap_edge(HF_CSE_OP_PRIVATEKEYSIGN,
             "{\"authentication\":\"x\",\"authorization\":\"x\",\"algorithm\":\"a\","
             "\"digest\":\"%s\",\"wrapped_private_key\":\"AA==\"}",
             true, 128);
    cap_edge(HF_CSE_OP_PRIVATEKEYDECRYPT,
             "{\"authentication\":\"x\",\"authorization\":\"x\",\"algorithm\":\"a\","
             "\"encrypted_data_encryption_key\":\"%s\",\"wrapped_private_key\":\"AA==\"}",
             true, 1024);
}

static void test_an_empty_key_is_refused(void)
{
    CU_ASSERT_EQUAL(
        parse(HF_CSE_OP_WRAP, "{\"authentication\":\"x\",\"authorization\":\"x\",\"key\":\"\"}"),
        HF_STATUS_BAD_REQUEST);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "key"));
}

static void test_base64_is_strict(void)
{
    static const char *const bad[] = {"8A0", "8A0==", "8A0=\\n", "8A-_", " 8A0="};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *b =
            body_with("{\"authentication\":\"x\",\"authorization\":\"x\",\"key\":\"%s\"}", bad[i]);
        CU_ASSERT_EQUAL(parse(HF_CSE_OP_WRAP, b), HF_STATUS_BAD_REQUEST);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, "key"));
        free(b);
    }
}

static void test_types(void)
{
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_WRAP, "{\"authentication\":null,\"authorization\":\"x\","
                                          "\"key\":\"AA==\"}"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_WRAP, "{\"authentication\":\"x\",\"authorization\":\"x\","
                                          "\"key\":\"AA==\",\"reason\":{\"a\":1}}"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_WRAP, "{\"authentication\":\"x\\u0000y\",\"authorization\":"
                                          "\"x\",\"key\":\"AA==\"}"),
                    HF_STATUS_BAD_REQUEST);
#define SIGN                                                                                       \
    "{\"authentication\":\"x\",\"authorization\":\"x\",\"algorithm\":\"a\",\"digest\":"            \
    "\"AA==\",\"wrapped_private_key\":\"AA==\",\"rsa_pss_salt_length\":"
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_PRIVATEKEYSIGN, SIGN "32}"), HF_STATUS_OK);
    CU_ASSERT_TRUE(req.rsa_pss_salt_length_present);
    CU_ASSERT_EQUAL(req.rsa_pss_salt_length, 32);
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_PRIVATEKEYSIGN, SIGN "\"32\"}"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_PRIVATEKEYSIGN, SIGN "-1}"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_PRIVATEKEYSIGN, SIGN "1.5}"), HF_STATUS_BAD_REQUEST);
#undef SIGN
}

/* Google's own example reason is not JSON; a JSON-looking one is not parsed either. */
static void test_reason_is_opaque(void)
{
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_UNWRAP,
                          "{\"authentication\":\"x\",\"authorization\":\"x\",\"wrapped_key\":"
                          "\"AA==\",\"reason\":\"{client:'drive' op:'read'} \\\"x\\\"\"}"),
                    HF_STATUS_OK);
    CU_ASSERT_STRING_EQUAL(req.reason.s, "{client:'drive' op:'read'} \"x\"");
}

static void test_the_body_itself(void)
{
    char *big;
    size_t n = HF_CSE_BODY_MAX + 1;

    CU_ASSERT_EQUAL(parse(HF_CSE_OP_WRAP, ""), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_WRAP, "[1]"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_WRAP, "\"wrap\""), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_WRAP, "{\"key\":\"AA==\",\"key\":\"AA==\"}"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_WRAP, "{\"authentication\":\"x\",\"authorization\":\"x\","
                                          "\"key\":\"AA==\"} x"),
                    HF_STATUS_BAD_REQUEST);
    big = repeat(' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    CU_ASSERT_EQUAL(parse(HF_CSE_OP_WRAP, big), HF_STATUS_TOO_LARGE);
    free(big);
    CU_ASSERT_EQUAL(hf_cse_request_parse(HF_CSE_OP_COUNT, (const unsigned char *)"{}", 2, &req, why,
                                         sizeof(why)),
                    HF_STATUS_INTERNAL);
}

static int suite_clean(void)
{
    hf_cse_request_clear(&req);
    return 0;
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"the op table", test_the_op_table},
        {"a wrap body", test_a_wrap_body},
        {"required fields", test_required_fields},
        {"unknown and other ops' fields are ignored", test_unknown_and_other_fields_are_ignored},
        {"sizes at their edge", test_sizes},
        {"base64 is strict", test_base64_is_strict},
        {"an empty key is refused", test_an_empty_key_is_refused},
        {"types", test_types},
        {"reason is opaque", test_reason_is_opaque},
        {"the body itself", test_the_body_itself},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"cse-request", NULL, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
