/* hf_request_header_count and hf_request_header_repeated (gateway/request.c): what plugins use to
 * refuse a repeated Authorization, Host or date header, on requests built as a plugin's unit
 * test builds them (the connection path asks libmicrohttpd the same way; xks-conn.sh drives it).
 * hf_reply_header and hf_reply_empty (gateway/reply.c): headers kept, refused and bounded;
 * hf_request_set_unaudited: no record and no share of a pre-authentication summary (which,
 * without a module, goes to the gateway's log, read here); hf_request_set_operation: the
 * metrics series follows the operation (gateway.sh and ekm.sh show both on the wire). */
#include "hf-build.h"

#include "gateway/audit.h"
#include "gateway/metrics.h"
#include "gateway/plugins.h"
#include "gateway/preauth.h"
#include "gateway/request.h"
#include "tests/unit/gw-log.h"
#include "tests/unit/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many lines of the gateway's log (JSON: a quote is \") contain needle. */
static size_t log_lines_with(const char *needle)
{
    FILE *f = fopen(hf_test_gw_log_path(), "r");
    char line[4096];
    size_t n = 0;

    if (!f) return 0;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, needle)) n++;
    fclose(f);
    return n;
}

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

static const char *reply_header(const struct hf_request *req, const char *name)
{
    for (size_t i = 0; i < req->nreply_headers; i++)
        if (strcmp(req->reply_headers[i].name, name) == 0) return req->reply_headers[i].value;
    return NULL;
}

static void test_reply_headers_are_kept_refused_and_bounded(void)
{
    /* The gateway's own names, any case, what would split the response, and no name at all. */
    static const char *const refused[][2] = {
        {"content-type", "text/html"},
        {"Content-Length", "0"},
        {"CONNECTION", "keep-alive"},
        {"X-Request-Id", "forged"},
        {"Allow", "GET"},
        {"X-Split", "a\r\nSet-Cookie: evil=1"},
        {"X-Lf", "a\nb"},
        {"Bad Name", "x"},
        {"Bad:Name", "x"},
        {"", "x"},
        {NULL, "x"},
        {"X-Null", NULL},
    };
    struct hf_request *req = hf_request_new("OPTIONS", "/cse/wrap");
    char name[32];

    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    hf_reply_header(req, "Access-Control-Allow-Origin", "https://client.example");
    hf_reply_header(req, "Vary", "Origin");
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        hf_reply_header(req, refused[i][0], refused[i][1]);
    CU_ASSERT_EQUAL(req->nreply_headers, 2);
    CU_ASSERT_STRING_EQUAL(reply_header(req, "Access-Control-Allow-Origin"),
                           "https://client.example");
    CU_ASSERT_STRING_EQUAL(reply_header(req, "Vary"), "Origin");
    CU_ASSERT_TRUE(log_lines_with("response header \\\"content-type\\\" refused") == 1);
    CU_ASSERT_TRUE(log_lines_with("response header \\\"X-Split\\\" refused") == 1);
    /* The value an attacker may have chosen is not logged. */
    CU_ASSERT_TRUE(log_lines_with("evil=1") == 0);
    for (int i = 0; i < HF_REPLY_HEADERS_MAX + 2; i++) {
        snprintf(name, sizeof(name), "X-Extra-%d", i);
        hf_reply_header(req, name, "v");
    }
    CU_ASSERT_EQUAL(req->nreply_headers, HF_REPLY_HEADERS_MAX);
    CU_ASSERT_TRUE(log_lines_with("dropped: at most") >= 1);
    /* A failure keeps them (the server sends them with the error body). */
    hf_request_fail(req, HF_STATUS_DENIED, "no");
    CU_ASSERT_EQUAL(req->nreply_headers, HF_REPLY_HEADERS_MAX);
    hf_request_free(req);
}

static void test_an_empty_reply_has_no_body(void)
{
    struct hf_request *req = hf_request_new("OPTIONS", "/cse/wrap");
    unsigned http = 0;
    const char *body = "unset";

    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    hf_reply_json(req, 200, json_object_new_object());
    hf_reply_empty(req, 204);
    CU_ASSERT_EQUAL(hf_request_outcome(req, &http, &body, NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(http, 204);
    CU_ASSERT_PTR_NULL(body);
    CU_ASSERT_TRUE(req->reply_empty);
    /* A JSON reply after it has its body and Content-Type again. */
    hf_reply_json(req, 200, json_object_new_object());
    CU_ASSERT_FALSE(req->reply_empty);
    hf_request_free(req);
}

/* Every API's error body wants printable ASCII, and messages may quote input (a header, a key
 * id): the failure's message is made so once, for every plugin's body and the audit record. */
static void test_a_failure_message_is_printable_ascii(void)
{
    struct hf_request *req = hf_request_new("POST", "/x");
    const char *message = NULL;

    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    hf_request_fail(req, HF_STATUS_BAD_REQUEST, "key %s: bad", "a\x01\n\xc3\xa9\x7f\"z");
    CU_ASSERT_EQUAL(hf_request_outcome(req, NULL, NULL, &message), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_STRING_EQUAL(message, "key a?????\"z: bad");
    hf_request_free(req);
}

/* A request refused before authentication, as server.c settles one. */
static struct hf_request *refused(bool unaudited)
{
    struct hf_request *req = hf_request_new("OPTIONS", "/cse/wrap");

    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    req->api = "unaudited-test";
    if (unaudited) hf_request_set_unaudited(req);
    hf_request_fail(req, HF_STATUS_UNAUTHENTICATED, "no token");
    req->error_name = unaudited ? "QuietRefusal" : "LoudRefusal";
    return req;
}

static void test_unaudited_makes_no_record_nor_summary(void)
{
    CK_ULONG_LONG seq = 1;
    struct hf_request *req;

    CU_ASSERT_FATAL(hf_gw_preauth_start(3600000, 16));
    for (int i = 0; i < 3; i++) {
        req = refused(true);
        CU_ASSERT_TRUE(hf_gw_audit_record(req, true, &seq));
        CU_ASSERT_EQUAL(seq, 0);
        hf_request_free(req);
        req = refused(false);
        CU_ASSERT_TRUE(hf_gw_audit_record(req, true, &seq));
        hf_request_free(req);
    }
    hf_gw_preauth_stop();
    CU_ASSERT_EQUAL(log_lines_with("QuietRefusal"), 0);
    CU_ASSERT_EQUAL(log_lines_with("LoudRefusal: 3 requests"), 1);
    /* Once authenticated, a request is a caller's act: recorded whatever it asks. */
    req = hf_request_new("GET", "/cse/status");
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    hf_request_set_authenticated(req);
    hf_request_set_unaudited(req);
    CU_ASSERT_FALSE(req->unaudited);
    hf_request_free(req);
}

/* A route of a plugin "optest" whose handler names its operations. */
static enum hf_status no_handler(void *state, struct hf_request *req)
{
    return HF_STATUS_INTERNAL;
}

static void test_set_operation_moves_the_metrics_series(void)
{
    static const struct hf_plugin p = {.name = "optest", .latency_limit_ms = 40};
    static const struct hf_route route = {"POST", "/{path*}", "catchall", no_handler, NULL};
    struct hf_gw_plugin pl = {.name = "optest", .p = &p};
    struct hf_gw_route r = {.plugin = &pl, .route = &route};
    struct hf_request *req = hf_request_new("POST", "/x/wrap");
    struct hf_gw_series *wrap;
    char *page;
    size_t len = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    r.series = hf_gw_metrics_series("optest", "catchall", 40);
    req->route = &r;
    req->api = "optest";
    req->series = r.series;
    hf_request_set_operation(req, "wrap");
    CU_ASSERT_STRING_EQUAL(req->operation, "wrap");
    wrap = req->series;
    CU_ASSERT_PTR_NOT_NULL(wrap);
    CU_ASSERT_PTR_NOT_EQUAL(wrap, r.series);
    CU_ASSERT_PTR_EQUAL(wrap, hf_gw_metrics_series("optest", "wrap", 40));
    /* Seen once, it is the route's cached series (no metrics lock). */
    CU_ASSERT_PTR_EQUAL(hf_gw_route_series(&r, "wrap"), wrap);
    CU_ASSERT_STRING_EQUAL(r.ops[0].operation, "wrap");
    CU_ASSERT_PTR_EQUAL(hf_gw_route_series(&r, "catchall"), r.series);
    hf_gw_metrics_observe(req->series, 200, 1000);
    page = hf_gw_metrics_render(true, NULL, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_PTR_NOT_NULL(strstr(
        page, "holdfast_requests_total{api=\"optest\",operation=\"wrap\",status=\"200\"} 1"));
    CU_ASSERT_PTR_NULL(strstr(page, "operation=\"catchall\",status=\"200\"}"));
    free(page);
    /* Ignored: nothing, or an empty name. */
    hf_request_set_operation(req, "");
    hf_request_set_operation(req, NULL);
    CU_ASSERT_STRING_EQUAL(req->operation, "wrap");
    req->route = NULL;
    hf_request_free(req);
}

/* hf_request_client_cert_sha256: the pin of the presented leaf, or false when none was. */
static void test_the_client_certificate_pin(void)
{
    struct hf_request *req = hf_request_new("POST", "/sap");
    unsigned char pin[32], got[32];

    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_FALSE(hf_request_client_cert_sha256(req, got));
    for (size_t i = 0; i < sizeof(pin); i++)
        pin[i] = (unsigned char)(0xa0 + i);
    hf_request_peer_sha256_set(req, pin);
    memset(got, 0, sizeof(got));
    CU_ASSERT_TRUE(hf_request_client_cert_sha256(req, got));
    CU_ASSERT(memcmp(got, pin, sizeof(pin)) == 0);
    CU_ASSERT_FALSE(hf_request_client_cert_sha256(req, NULL));
    hf_request_peer_sha256_set(req, NULL);
    CU_ASSERT_FALSE(hf_request_client_cert_sha256(req, got));
    hf_request_free(req);
}

static CU_TestInfo request_tests[] = {
    {"headers are counted by case-insensitive name",
     test_headers_are_counted_by_case_insensitive_name},
    {"the first repeated name is named", test_the_first_repeated_name_is_named},
    {"audit fields are bounded, replaced, removed and serialised escaped",
     test_audit_fields_are_bounded_and_serialised},
    {"reply headers are kept, the gateway's own names and CR/LF values refused, at most 8",
     test_reply_headers_are_kept_refused_and_bounded},
    {"an empty reply has no body", test_an_empty_reply_has_no_body},
    {"a failure's message is printable ASCII", test_a_failure_message_is_printable_ascii},
    {"an unaudited request makes no record nor a share of a summary",
     test_unaudited_makes_no_record_nor_summary},
    {"hf_request_set_operation moves the metrics series",
     test_set_operation_moves_the_metrics_series},
    {"the client certificate's pin", test_the_client_certificate_pin},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-request", hf_test_gw_log_init, hf_test_gw_log_clean, NULL, NULL, request_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
