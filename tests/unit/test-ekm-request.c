/* Cloud EKM request bodies and paths (gateway/plugins/gcp-ekm/request.[ch]): proto3 JSON field
 * matching (case, '_', the same field twice), unknown fields and nulls, both base64 alphabets,
 * the spec's sizes at and over each cap, RequestContext (reason by name or number, unknown as
 * absent, isKeyHealthCheck), and the path's verb and keyPath rules. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/gcp-ekm/kaj.h"
#include "gateway/plugins/gcp-ekm/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

static struct hf_ekm_request req;
static char why[256];

static enum hf_status parse(enum hf_ekm_op op, const char *body)
{
    hf_ekm_request_clear(&req);
    why[0] = '\0';
    return hf_ekm_request_parse(op, (const unsigned char *)body, strlen(body), &req, why,
                                sizeof(why));
}

/* A refusal is 400 and its reason starts with the field's path (the error body's detail). */
static void assert_refused(enum hf_ekm_op op, const char *body, const char *field)
{
    enum hf_status st = parse(op, body);

    CU_ASSERT_EQUAL(st, HF_STATUS_BAD_REQUEST);
    if (strncmp(why, field, strlen(field)) != 0) {
        fprintf(stderr, "\n  why '%s' does not start with '%s'\n", why, field);
        CU_FAIL("the reason does not name the field");
    }
}

/* {"<field>":"<base64 of n bytes of 'x'>"<tail>} */
static char *body_with(const char *field, size_t n, const char *tail)
{
    unsigned char *raw = malloc(n + 1);
    size_t b64len = (n + 2) / 3 * 4, len = strlen(field) + b64len + strlen(tail) + 16;
    char *b64 = malloc(b64len + 1), *body = malloc(len);

    CU_ASSERT_FATAL(raw != NULL && b64 != NULL && body != NULL);
    memset(raw, 'x', n);
    EVP_EncodeBlock((unsigned char *)b64, raw, (int)n);
    snprintf(body, len, "{\"%s\":\"%s\"%s}", field, b64, tail);
    free(raw);
    free(b64);
    return body;
}

static int suite_clean(void)
{
    hf_ekm_request_clear(&req);
    return 0;
}

static void test_wrap_takes_the_spec_fields(void)
{
    CU_ASSERT_EQUAL_FATAL(parse(HF_EKM_OP_WRAP,
                                "{\"keyPath\":\"v0/keys/k\",\"plaintext\":\"SGVsbG8gV29ybGQh\","
                                "\"additionalAuthenticatedData\":\"cHJvamVjdD1uaWxl\","
                                "\"keyUriPrefix\":\"https://ekm.example.com/\","
                                "\"additionalContext\":{\"fullResourceName\":\"//cloudkms/x\","
                                "\"relativeResourceName\":\"projects/p/cryptoKeyVersions/16\","
                                "\"accessReasonContext\":{\"reason\":\"CUSTOMER_INITIATED_"
                                "ACCESS\"},\"isKeyHealthCheck\":true}}"),
                          HF_STATUS_OK);
    CU_ASSERT_EQUAL(req.input.len, 12);
    CU_ASSERT(memcmp(req.input.data, "Hello World!", 12) == 0);
    CU_ASSERT_EQUAL(req.aad.len, 12);
    CU_ASSERT(memcmp(req.aad.data, "project=nile", 12) == 0);
    CU_ASSERT_STRING_EQUAL(req.key_path, "v0/keys/k");
    CU_ASSERT_STRING_EQUAL(req.key_uri_prefix, "https://ekm.example.com/");
    CU_ASSERT_STRING_EQUAL(req.full_resource_name, "//cloudkms/x");
    CU_ASSERT_STRING_EQUAL(req.relative_resource_name, "projects/p/cryptoKeyVersions/16");
    CU_ASSERT_EQUAL(req.reason, 5);
    CU_ASSERT_TRUE(req.health_check);
}

static void test_unwrap_takes_the_wrapped_blob(void)
{
    CU_ASSERT_EQUAL_FATAL(parse(HF_EKM_OP_UNWRAP, "{\"wrappedBlob\":\"AQID\"}"), HF_STATUS_OK);
    CU_ASSERT_EQUAL(req.input.len, 3);
    CU_ASSERT_FALSE(req.aad.present);
    CU_ASSERT_EQUAL(req.reason, HF_EKM_REASON_ABSENT);
    CU_ASSERT_FALSE(req.health_check);
}

/* Names match without case and '_', at every level. */
static void test_field_names_ignore_case_and_underscores(void)
{
    CU_ASSERT_EQUAL_FATAL(parse(HF_EKM_OP_WRAP,
                                "{\"KEY_PATH\":\"a\",\"Plain_Text\":\"AA==\",\"additional_"
                                "context\":{\"ACCESS_REASON_CONTEXT\":{\"Reason\":3},"
                                "\"is_key_health_check\":true,\"RelativeResourceName\":\"r\"}}"),
                          HF_STATUS_OK);
    CU_ASSERT_STRING_EQUAL(req.key_path, "a");
    CU_ASSERT_EQUAL(req.input.len, 1);
    CU_ASSERT_EQUAL(req.reason, 3);
    CU_ASSERT_TRUE(req.health_check);
    CU_ASSERT_STRING_EQUAL(req.relative_resource_name, "r");
}

/* One field in two spellings, at any level; the same spelling twice (the strict reader). */
static void test_a_field_given_twice_is_refused(void)
{
    assert_refused(HF_EKM_OP_WRAP, "{\"plaintext\":\"AA==\",\"PLAIN_TEXT\":\"AA==\"}", "plaintext");
    assert_refused(HF_EKM_OP_UNWRAP, "{\"wrappedBlob\":\"AA==\",\"wrapped_blob\":null}",
                   "wrappedBlob");
    assert_refused(HF_EKM_OP_WRAP,
                   "{\"plaintext\":\"AA==\",\"additionalContext\":{\"accessReasonContext\":"
                   "{\"reason\":1,\"REASON\":2}}}",
                   "additionalContext.accessReasonContext.reason");
    assert_refused(HF_EKM_OP_WRAP,
                   "{\"plaintext\":\"AA==\",\"additionalContext\":{\"isKeyHealthCheck\":true,"
                   "\"is_key_health_check\":false}}",
                   "additionalContext.isKeyHealthCheck");
    CU_ASSERT_EQUAL(parse(HF_EKM_OP_WRAP, "{\"plaintext\":\"AA==\",\"plaintext\":\"AA==\"}"),
                    HF_STATUS_BAD_REQUEST);
}

static void test_unknown_fields_and_nulls_are_ignored(void)
{
    CU_ASSERT_EQUAL(parse(HF_EKM_OP_WRAP, "{\"plaintext\":\"AA==\",\"futureField\":{\"x\":[1,2]},"
                                          "\"keyPath\":null,\"additionalContext\":{\"newThing\":1,"
                                          "\"accessReasonContext\":null}}"),
                    HF_STATUS_OK);
    CU_ASSERT_PTR_NULL(req.key_path);
    CU_ASSERT_EQUAL(req.reason, HF_EKM_REASON_ABSENT);
    /* A wrap's field in an unwrap is unknown there, so the blob is still missing. */
    assert_refused(HF_EKM_OP_UNWRAP, "{\"plaintext\":\"AA==\"}", "wrappedBlob");
}

static void test_the_input_is_required(void)
{
    assert_refused(HF_EKM_OP_WRAP, "{}", "plaintext");
    assert_refused(HF_EKM_OP_WRAP, "{\"plaintext\":null}", "plaintext");
    assert_refused(HF_EKM_OP_UNWRAP, "{\"keyPath\":\"a\"}", "wrappedBlob");
}

/* Standard or URL-safe, padded or not; never mixed, never with whitespace or junk. */
static void test_both_base64_alphabets_padded_or_not(void)
{
    static const unsigned char want[] = {0xfb, 0xff, 0xbf};

    CU_ASSERT_EQUAL_FATAL(parse(HF_EKM_OP_WRAP, "{\"plaintext\":\"-_-_\"}"), HF_STATUS_OK);
    CU_ASSERT(req.input.len == 3 && memcmp(req.input.data, want, 3) == 0);
    CU_ASSERT_EQUAL_FATAL(parse(HF_EKM_OP_WRAP, "{\"plaintext\":\"+/+/\"}"), HF_STATUS_OK);
    CU_ASSERT(req.input.len == 3 && memcmp(req.input.data, want, 3) == 0);
    CU_ASSERT_EQUAL_FATAL(parse(HF_EKM_OP_WRAP, "{\"plaintext\":\"SGk\"}"), HF_STATUS_OK);
    CU_ASSERT(req.input.len == 2 && memcmp(req.input.data, "Hi", 2) == 0);
    CU_ASSERT_EQUAL_FATAL(parse(HF_EKM_OP_WRAP, "{\"plaintext\":\"SGk=\"}"), HF_STATUS_OK);
    CU_ASSERT(req.input.len == 2);
    assert_refused(HF_EKM_OP_WRAP, "{\"plaintext\":\"+_+_\"}", "plaintext");
    assert_refused(HF_EKM_OP_WRAP, "{\"plaintext\":\"SG k=\"}", "plaintext");
    assert_refused(HF_EKM_OP_WRAP, "{\"plaintext\":\"S*k=\"}", "plaintext");
    assert_refused(HF_EKM_OP_WRAP, "{\"plaintext\":\"AA==\",\"additionalAuthenticatedData\":\"!\"}",
                   "additionalAuthenticatedData");
    assert_refused(HF_EKM_OP_UNWRAP, "{\"wrappedBlob\":\"A\"}", "wrappedBlob");
}

static void test_sizes_at_and_over_each_cap(void)
{
    char *b;

    b = body_with("plaintext", HF_EKM_PLAINTEXT_MAX, "");
    CU_ASSERT_EQUAL(parse(HF_EKM_OP_WRAP, b), HF_STATUS_OK);
    free(b);
    b = body_with("plaintext", HF_EKM_PLAINTEXT_MAX + 1, "");
    assert_refused(HF_EKM_OP_WRAP, b, "plaintext");
    free(b);
    b = body_with("additionalAuthenticatedData", HF_EKM_AAD_MAX, ",\"plaintext\":\"AA==\"");
    CU_ASSERT_EQUAL(parse(HF_EKM_OP_WRAP, b), HF_STATUS_OK);
    free(b);
    b = body_with("additionalAuthenticatedData", HF_EKM_AAD_MAX + 1, ",\"plaintext\":\"AA==\"");
    assert_refused(HF_EKM_OP_WRAP, b, "additionalAuthenticatedData");
    free(b);
    b = body_with("wrappedBlob", HF_EKM_BLOB_MAX, "");
    CU_ASSERT_EQUAL(parse(HF_EKM_OP_UNWRAP, b), HF_STATUS_OK);
    free(b);
    b = body_with("wrappedBlob", HF_EKM_BLOB_MAX + 1, "");
    assert_refused(HF_EKM_OP_UNWRAP, b, "wrappedBlob");
    free(b);
}

/* The body cap holds even when the fields are small (whitespace, unknown fields). */
static void test_body_over_256k_is_refused(void)
{
    size_t n = HF_EKM_BODY_MAX + 1;
    char *b = malloc(n + 1);

    CU_ASSERT_FATAL(b != NULL);
    memset(b, ' ', n);
    memcpy(b, "{\"plaintext\":\"AA==\"}", 20);
    b[n] = '\0';
    CU_ASSERT_EQUAL(parse(HF_EKM_OP_WRAP, b), HF_STATUS_BAD_REQUEST);
    b[n - 1] = '\0';
    CU_ASSERT_EQUAL(parse(HF_EKM_OP_WRAP, b), HF_STATUS_OK);
    free(b);
}

static void test_reason_by_name_number_or_unknown(void)
{
    static const struct {
        const char *json;
        int want;
    } cases[] = {
        {"\"GOOGLE_INITIATED_REVIEW\"", 4},
        {"7", 7},
        {"\"11\"", 11},
        {"0", 0},
        {"99", HF_EKM_REASON_ABSENT},
        {"-1", HF_EKM_REASON_ABSENT},
        {"\"NEW_REASON\"", HF_EKM_REASON_ABSENT},
    };
    char body[256];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(body, sizeof(body),
                 "{\"plaintext\":\"AA==\",\"additionalContext\":{\"accessReasonContext\":"
                 "{\"reason\":%s}}}",
                 cases[i].json);
        CU_ASSERT_EQUAL(parse(HF_EKM_OP_WRAP, body), HF_STATUS_OK);
        CU_ASSERT_EQUAL(req.reason, cases[i].want);
    }
    assert_refused(HF_EKM_OP_WRAP,
                   "{\"plaintext\":\"AA==\",\"additionalContext\":{\"accessReasonContext\":"
                   "{\"reason\":[5]}}}",
                   "additionalContext.accessReasonContext.reason");
}

static void test_wrong_types_are_refused(void)
{
    assert_refused(HF_EKM_OP_WRAP, "{\"plaintext\":5}", "plaintext");
    assert_refused(HF_EKM_OP_WRAP, "{\"plaintext\":\"AA==\",\"keyPath\":1}", "keyPath");
    assert_refused(HF_EKM_OP_WRAP, "{\"plaintext\":\"AA==\",\"additionalContext\":[]}",
                   "additionalContext");
    assert_refused(HF_EKM_OP_WRAP,
                   "{\"plaintext\":\"AA==\",\"additionalContext\":{\"isKeyHealthCheck\":\"true\"}}",
                   "additionalContext.isKeyHealthCheck");
    assert_refused(HF_EKM_OP_WRAP,
                   "{\"plaintext\":\"AA==\",\"additionalContext\":{\"relativeResourceName\":"
                   "\"a\\u0000b\"}}",
                   "additionalContext.relativeResourceName");
    CU_ASSERT_EQUAL(parse(HF_EKM_OP_WRAP, "[]"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(HF_EKM_OP_WRAP, "{\"plaintext\":"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(HF_EKM_OP_WRAP, ""), HF_STATUS_BAD_REQUEST);
}

static void test_the_verb_follows_the_last_colon_of_the_last_segment(void)
{
    size_t base = 0;
    const char *verb = NULL;

    CU_ASSERT_TRUE_FATAL(hf_ekm_path_verb("/ekm/v0/keys/k:wrap", &base, &verb));
    CU_ASSERT_EQUAL(base, strlen("/ekm/v0/keys/k"));
    CU_ASSERT_STRING_EQUAL(verb, "wrap");
    CU_ASSERT_TRUE_FATAL(hf_ekm_path_verb("/a:b:unwrap", &base, &verb));
    CU_ASSERT_STRING_EQUAL(verb, "unwrap");
    CU_ASSERT_EQUAL(base, 4);
    CU_ASSERT_FALSE(hf_ekm_path_verb("/a:wrap/b", &base, &verb));
    CU_ASSERT_FALSE(hf_ekm_path_verb("/a/b:", &base, &verb));
    CU_ASSERT_FALSE(hf_ekm_path_verb("/a/b", &base, &verb));
}

static void test_key_paths_follow_the_spec(void)
{
    char longest[HF_EKM_KEY_PATH_MAX + 2];

    CU_ASSERT_TRUE(hf_ekm_key_path_is_valid("v0/keys/fin-1", 13));
    CU_ASSERT_TRUE(hf_ekm_key_path_is_valid("a.b_c~d-e", 9));
    CU_ASSERT_FALSE(hf_ekm_key_path_is_valid("", 0));
    CU_ASSERT_FALSE(hf_ekm_key_path_is_valid("a//b", 4));
    CU_ASSERT_FALSE(hf_ekm_key_path_is_valid("a/", 2));
    CU_ASSERT_FALSE(hf_ekm_key_path_is_valid("a/./b", 5));
    CU_ASSERT_FALSE(hf_ekm_key_path_is_valid("../b", 4));
    CU_ASSERT_FALSE(hf_ekm_key_path_is_valid("a%2Fb", 5));
    CU_ASSERT_FALSE(hf_ekm_key_path_is_valid("a:b", 3));
    memset(longest, 'k', sizeof(longest));
    CU_ASSERT_TRUE(hf_ekm_key_path_is_valid(longest, HF_EKM_KEY_PATH_MAX));
    CU_ASSERT_FALSE(hf_ekm_key_path_is_valid(longest, HF_EKM_KEY_PATH_MAX + 1));
}

int main(void)
{
    static CU_TestInfo body_tests[] = {
        {"wrap takes the spec fields", test_wrap_takes_the_spec_fields},
        {"unwrap takes the wrapped blob", test_unwrap_takes_the_wrapped_blob},
        {"field names ignore case and underscores", test_field_names_ignore_case_and_underscores},
        {"a field given twice is refused", test_a_field_given_twice_is_refused},
        {"unknown fields and nulls are ignored", test_unknown_fields_and_nulls_are_ignored},
        {"the input is required", test_the_input_is_required},
        {"both base64 alphabets, padded or not", test_both_base64_alphabets_padded_or_not},
        {"sizes at and over each cap", test_sizes_at_and_over_each_cap},
        {"body over 256k is refused", test_body_over_256k_is_refused},
        {"reason by name, number or unknown", test_reason_by_name_number_or_unknown},
        {"wrong types are refused", test_wrong_types_are_refused},
        CU_TEST_INFO_NULL,
    };
    static CU_TestInfo path_tests[] = {
        {"the verb follows the last colon of the last segment",
         test_the_verb_follows_the_last_colon_of_the_last_segment},
        {"key paths follow the spec", test_key_paths_follow_the_spec},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"ekm-request-body", NULL, suite_clean, NULL, NULL, body_tests},
        {"ekm-request-path", NULL, NULL, NULL, NULL, path_tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
