/* hf_request_header_count and hf_request_header_repeated (gateway/request.c): what plugins use to
 * refuse a repeated Authorization, Host or date header, on requests built as a plugin's unit
 * test builds them (the connection path asks libmicrohttpd the same way; xks-conn.sh drives it). */
#include "hf-build.h"

#include "gateway/request.h"
#include "tests/unit/harness.h"

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

static CU_TestInfo request_tests[] = {
    {"headers are counted by case-insensitive name",
     test_headers_are_counted_by_case_insensitive_name},
    {"the first repeated name is named", test_the_first_repeated_name_is_named},
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
