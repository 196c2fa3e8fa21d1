/* hf_request_header_count and hf_request_header_repeated (gateway/request.c): what plugins use to
 * refuse a repeated Authorization, Host or date header, on requests built as a plugin's unit
 * test builds them (the connection path asks libmicrohttpd the same way; xks-conn.sh drives it). */
#include "hf-build.h"

#include "gateway/audit.h"
#include "gateway/request.h"
#include "tests/unit/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const once[] = {"Authorization", "X-Amz-Date", "Host"};

static void test_headers_are_counted_by_case_insensitive_name(void)
{
    struct hf_request *req = hf_request_new("POST", "/x");

    CU_ASSERT_FATAL(req != NULL);
    CU_ASSERT_TRUE(hf_request_header_add(req, "Host", "a:1"));
    CU_ASSERT_TRUE(hf_request_header_add(req, "X-Amz-Date", "20260101T000000Z"));
    CU_ASSERT_EQUAL(hf_request_header_count(req, "host"), 1);
    CU_ASSERT_EQUAL(hf_request_header_count(req, "HOST"), 1);
    CU_ASSERT_EQUAL(hf_request_header_count(req, "Authorization"), 0);
    CU_ASSERT_PTR_NULL(hf_request_header_repeated(req, once, 3));
    CU_ASSERT_TRUE(hf_request_header_add(req, "host", "a:1"));
    CU_ASSERT_EQUAL(hf_request_header_count(req, "Host"), 2);
    CU_ASSERT_STRING_EQUAL(hf_request_header_repeated(req, once, 3), "Host");
    CU_ASSERT_EQUAL(hf_request_header_count(NULL, "Host"), 0);
    CU_ASSERT_EQUAL(hf_request_header_count(req, NULL), 0);
    hf_request_free(req);
}

static void test_the_first_repeated_name_is_named(void)
{
    struct hf_request *req = hf_request_new("POST", "/x");

    CU_ASSERT_FATAL(req != NULL);
    CU_ASSERT_TRUE(hf_request_header_add(req, "Host", "a"));
    CU_ASSERT_TRUE(hf_request_header_add(req, "Host", "b"));
    CU_ASSERT_TRUE(hf_request_header_add(req, "Authorization", "x"));
    CU_ASSERT_TRUE(hf_request_header_add(req, "authorization", "y"));
    CU_ASSERT_STRING_EQUAL(hf_request_header_repeated(req, once, 3), "Authorization");
    CU_ASSERT_PTR_NULL(hf_request_header_repeated(req, once, 0));
    CU_ASSERT_PTR_NULL(hf_request_header_repeated(req, NULL, 3));
    hf_request_free(req);
}

/* hf_request_set_audit_field: names [a-z0-9_]{1,32}, a later value replaces, NULL removes, at
 * most HF_AUDIT_FIELDS_MAX (later names dropped), invalid UTF-8 dropped; the JSON handed to the
 * module is one compact object with every value escaped. */
static void test_audit_fields_are_bounded_and_serialised(void)
{
    struct hf_request *req = hf_request_new("GET", "/x");
    char name[8], *json;

    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_PTR_NULL(hf_gw_audit_fields_json(req));
    hf_request_set_audit_field(req, "Bad", "x");
    hf_request_set_audit_field(req, "", "x");
    hf_request_set_audit_field(req, "abcdefghijklmnopqrstuvwxyz0123456", "x");
    hf_request_set_audit_field(req, "bad_utf8", "\xc3");
    CU_ASSERT_PTR_NULL(hf_gw_audit_fields_json(req));
    hf_request_set_audit_field(req, "reason", "first");
    hf_request_set_audit_field(req, "reason", "a \"q\" \\ \xc3\xb6\n");
    hf_request_set_audit_field(req, "gone", "soon");
    hf_request_set_audit_field(req, "gone", NULL);
    json = hf_gw_audit_fields_json(req);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT_STRING_EQUAL(json, "{\"reason\":\"a \\\"q\\\" \\\\ \xc3\xb6\\n\"}");
    free(json);
    for (int i = 0; i < HF_AUDIT_FIELDS_MAX + 2; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        hf_request_set_audit_field(req, name, "v");
    }
    CU_ASSERT_EQUAL(req->naudit_fields, HF_AUDIT_FIELDS_MAX);
    json = hf_gw_audit_fields_json(req);
    CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"f6\":\"v\""));
    CU_ASSERT_PTR_NULL(strstr(json, "\"f7\""));
    free(json);
    /* A known name still takes a new value when full. */
    hf_request_set_audit_field(req, "reason", "later");
    json = hf_gw_audit_fields_json(req);
    CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"reason\":\"later\""));
    free(json);
    hf_request_free(req);
}

static CU_TestInfo request_tests[] = {
    {"headers are counted by case-insensitive name",
     test_headers_are_counted_by_case_insensitive_name},
    {"the first repeated name is named", test_the_first_repeated_name_is_named},
    {"audit fields are bounded, replaced, removed and serialised escaped",
     test_audit_fields_are_bounded_and_serialised},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-request", NULL, NULL, NULL, NULL, request_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
