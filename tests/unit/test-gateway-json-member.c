/* plugin.h's hf_json_member_string and hf_json_member_base64 (gateway/json-member.c): presence,
 * type, NUL, size caps with the status the caller chose, both base64 forms, and messages that
 * name the field but never its value. */
#include "hf-build.h"

#include "gateway/plugin.h"
#include "tests/unit/harness.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

static char why[256];

static struct json_object *body(const char *text)
{
    struct json_object *o = NULL;

    CU_ASSERT_EQUAL_FATAL(hf_json_parse(text, strlen(text), 0, 0, &o, why, sizeof(why)),
                          HF_STATUS_OK);
    return o;
}

static enum hf_status string_of(struct json_object *o, const char *name, bool required, size_t cap,
                                enum hf_status over, const char **s, size_t *len)
{
    why[0] = '\0';
    return hf_json_member_string(o, "ctx.", name, required, cap, over, s, len, why, sizeof(why));
}

static void why_is(const char *want, const char *never)
{
    if (strstr(why, want) == NULL) fprintf(stderr, "\n  '%s' lacks '%s'\n", why, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, want));
    if (never) CU_ASSERT_PTR_NULL(strstr(why, never));
}

static void test_string_members(void)
{
    struct json_object *o =
        body("{\"a\":\"secret-value\",\"n\":5,\"z\":\"x\\u0000y\",\"e\":\"\",\"obj\":{}}");
    const char *s = "stale";
    size_t len = 99;

    CU_ASSERT_EQUAL(string_of(o, "a", true, 0, HF_STATUS_BAD_REQUEST, &s, &len), HF_STATUS_OK);
    CU_ASSERT_STRING_EQUAL(s, "secret-value");
    CU_ASSERT_EQUAL(len, 12);
    CU_ASSERT_EQUAL(string_of(o, "e", true, 0, HF_STATUS_BAD_REQUEST, &s, &len), HF_STATUS_OK);
    CU_ASSERT_STRING_EQUAL(s, "");
    /* Absent: fine unless required. */
    CU_ASSERT_EQUAL(string_of(o, "gone", false, 0, HF_STATUS_BAD_REQUEST, &s, &len), HF_STATUS_OK);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_EQUAL(string_of(o, "gone", true, 0, HF_STATUS_BAD_REQUEST, &s, NULL),
                    HF_STATUS_BAD_REQUEST);
    why_is("ctx.gone is required", NULL);
    CU_ASSERT_EQUAL(string_of(o, "n", false, 0, HF_STATUS_BAD_REQUEST, &s, NULL),
                    HF_STATUS_BAD_REQUEST);
    why_is("ctx.n must be a string", NULL);
    CU_ASSERT_EQUAL(string_of(o, "obj", false, 0, HF_STATUS_BAD_REQUEST, &s, NULL),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(string_of(o, "z", false, 0, HF_STATUS_BAD_REQUEST, &s, NULL),
                    HF_STATUS_BAD_REQUEST);
    why_is("ctx.z must not contain a NUL", NULL);
    /* The cap, with the status the caller asks for; the value is never quoted. */
    CU_ASSERT_EQUAL(string_of(o, "a", true, 12, HF_STATUS_BAD_REQUEST, &s, NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(string_of(o, "a", true, 11, HF_STATUS_BAD_REQUEST, &s, NULL),
                    HF_STATUS_BAD_REQUEST);
    why_is("ctx.a is 12 characters; at most 11 are allowed", "secret");
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_EQUAL(string_of(o, "a", true, 11, HF_STATUS_UNSUPPORTED, &s, NULL),
                    HF_STATUS_UNSUPPORTED);
    why_is("this proxy takes at most 11", "secret");
    json_object_put(o);
}

static enum hf_status b64_of(struct json_object *o, const char *name, bool any, size_t cap,
                             unsigned char **data, size_t *len)
{
    why[0] = '\0';
    return hf_json_member_base64(o, name, true, any, cap, HF_STATUS_BAD_REQUEST, data, len, why,
                                 sizeof(why));
}

static void test_base64_members(void)
{
    struct json_object *o =
        body("{\"std\":\"SGVsbG8=\",\"url\":\"-_8\",\"bad\":\"SGVs bG8=\",\"e\":\"\",\"n\":1}");
    unsigned char *data = NULL;
    size_t len = 0;

    CU_ASSERT_EQUAL(b64_of(o, "std", false, 5, &data, &len), HF_STATUS_OK);
    CU_ASSERT_EQUAL(len, 5);
    CU_ASSERT_EQUAL(memcmp(data, "Hello", 5), 0);
    OPENSSL_clear_free(data, len);
    /* The cap is on the decoded bytes. */
    CU_ASSERT_EQUAL(b64_of(o, "std", false, 4, &data, &len), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_PTR_NULL(data);
    why_is("std is 5 bytes; at most 4 are allowed", NULL);
    /* Strict takes the spec's padded standard form only; any takes URL-safe unpadded too. */
    CU_ASSERT_EQUAL(b64_of(o, "url", false, 0, &data, &len), HF_STATUS_BAD_REQUEST);
    why_is("url is not valid base64 (RFC 4648 section 4, padded)", NULL);
    CU_ASSERT_EQUAL(b64_of(o, "url", true, 0, &data, &len), HF_STATUS_OK);
    CU_ASSERT_EQUAL(len, 2);
    CU_ASSERT(data[0] == 0xfb && data[1] == 0xff);
    free(data);
    CU_ASSERT_EQUAL(b64_of(o, "bad", true, 0, &data, &len), HF_STATUS_BAD_REQUEST);
    why_is("bad is not valid base64 (standard or URL-safe", NULL);
    /* Present and empty is not absent. */
    CU_ASSERT_EQUAL(b64_of(o, "e", false, 0, &data, &len), HF_STATUS_OK);
    CU_ASSERT_PTR_NOT_NULL(data);
    CU_ASSERT_EQUAL(len, 0);
    free(data);
    CU_ASSERT_EQUAL(b64_of(o, "gone", false, 0, &data, &len), HF_STATUS_BAD_REQUEST);
    why_is("gone is required", NULL);
    CU_ASSERT_EQUAL(b64_of(o, "n", false, 0, &data, &len), HF_STATUS_BAD_REQUEST);
    why_is("n must be a string", NULL);
    CU_ASSERT_EQUAL(hf_json_member_base64(o, "gone", false, false, 0, HF_STATUS_BAD_REQUEST, &data,
                                          &len, why, sizeof(why)),
                    HF_STATUS_OK);
    CU_ASSERT_PTR_NULL(data);
    json_object_put(o);
}

static CU_TestInfo member_tests[] = {
    {"string members: presence, type, NUL and the cap, named", test_string_members},
    {"base64 members: strict or any, the decoded cap, empty is present", test_base64_members},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-json-member", NULL, NULL, NULL, NULL, member_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
