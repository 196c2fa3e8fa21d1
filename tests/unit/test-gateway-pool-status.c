/* The HSM pools in the gateway (issue 14): a pool's refusals reach every API as its throttling
 * and unavailable errors (hf_status_from_ckr, and the CK_RV their audit records carry), and the
 * pool members' series on /metrics (gateway/metrics-pool.c): one HELP and TYPE per family, the
 * pool's own series once per pool, the latency histogram cumulative in seconds with its +Inf
 * equal to its count, labels that cannot break a line. */
#include "hf-build.h"

#include "gateway/metrics.h"
#include "gateway/p11.h"
#include "tests/unit/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_pool_refusals_map_to_throttled_and_unavailable(void)
{
    /* pool.h: HF_POOL_RV_THROTTLED and HF_POOL_RV_UNAVAILABLE. */
    CU_ASSERT_EQUAL(hf_status_from_ckr(CKR_FUNCTION_REJECTED), HF_STATUS_THROTTLED);
    CU_ASSERT_EQUAL(hf_status_from_ckr(CKR_DEVICE_ERROR), HF_STATUS_UNAVAILABLE);
    /* And back, for a record the gateway writes itself. */
    CU_ASSERT_EQUAL(hf_gw_ckr_from_status(HF_STATUS_THROTTLED), CKR_FUNCTION_REJECTED);
    CU_ASSERT_EQUAL(hf_gw_ckr_from_status(HF_STATUS_UNAVAILABLE), CKR_DEVICE_ERROR);
}

static void member_set(HF_POOL_MEMBER_STATUS *m, const char *pool, const char *member, bool healthy)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->pool, sizeof(m->pool), "%s", pool);
    snprintf(m->member, sizeof(m->member), "%s", member);
    snprintf(m->model, sizeof(m->model), "libsofthsm2.so token %s", member);
    m->healthy = healthy ? CK_TRUE : CK_FALSE;
    m->concurrency = 4;
    m->queue_max = 256;
}

static size_t count_of(const char *page, const char *needle)
{
    size_t n = 0;

    for (const char *p = page; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static bool has_line(const char *page, const char *line)
{
    const char *p = strstr(page, line);

    return p && (p == page || p[-1] == '\n');
}

static void test_pool_series(void)
{
    HF_POOL_MEMBER_STATUS m[3];
    size_t len = 0;
    char *page;

    member_set(&m[0], "p1", "a", true);
    member_set(&m[1], "p1", "b", false);
    member_set(&m[2], "p2", "c", true);
    m[0].in_flight = 3;
    m[0].calls = 7;
    m[0].failures = 1;
    m[1].failovers = 2;
    m[0].queue_waiting = m[1].queue_waiting = 5;
    m[0].throttled = m[1].throttled = 9;
    m[2].open_result = CKR_DEVICE_ERROR; /* could not be opened: down whatever else it says */
    m[0].latency[0] = 1;                 /* [1, 2) us */
    m[0].latency[9] = 4;                 /* [512, 1024) us */
    m[0].latency[23] = 2;                /* 8.4 s and up */
    m[0].latency_sum_us = 17000004101ULL; /* their sum, to the microsecond */
    page = hf_gw_metrics_pool_render(m, 3, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_EQUAL(len, strlen(page));
    /* One HELP and TYPE per family, whatever the number of pools. */
    CU_ASSERT_EQUAL(count_of(page, "# TYPE holdfast_pool_member_up gauge\n"), 1);
    CU_ASSERT_EQUAL(count_of(page, "# TYPE holdfast_pool_queue_depth gauge\n"), 1);
    CU_ASSERT_EQUAL(count_of(page, "# TYPE holdfast_pool_member_call_duration_seconds histogram\n"),
                    1);
    CU_ASSERT(has_line(page, "holdfast_pool_member_up{pool=\"p1\",member=\"a\"} 1\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_up{pool=\"p1\",member=\"b\"} 0\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_up{pool=\"p2\",member=\"c\"} 0\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_in_flight{pool=\"p1\",member=\"a\"} 3\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_calls_total{pool=\"p1\",member=\"a\"} 7\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_failures_total{pool=\"p1\",member=\"a\"} 1\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_failovers_total{pool=\"p1\",member=\"b\"} 2\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_concurrency_limit{pool=\"p2\",member=\"c\"} "
                             "4\n"));
    /* The pool's own series once per pool, from its first member. */
    CU_ASSERT_EQUAL(count_of(page, "holdfast_pool_queue_depth{pool=\"p1\"}"), 1);
    CU_ASSERT(has_line(page, "holdfast_pool_queue_depth{pool=\"p1\"} 5\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_queue_depth{pool=\"p2\"} 0\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_throttled_total{pool=\"p1\"} 9\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_open{pool=\"p1\"} 1\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_open{pool=\"p2\"} 0\n"));
    /* The histogram: cumulative, le the bucket's upper edge in seconds, +Inf == count. */
    CU_ASSERT(has_line(page, "holdfast_pool_member_call_duration_seconds_bucket{pool=\"p1\","
                             "member=\"a\",le=\"2e-06\"} 1\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_call_duration_seconds_bucket{pool=\"p1\","
                             "member=\"a\",le=\"0.000512\"} 1\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_call_duration_seconds_bucket{pool=\"p1\","
                             "member=\"a\",le=\"0.001024\"} 5\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_call_duration_seconds_bucket{pool=\"p1\","
                             "member=\"a\",le=\"8.38861\"} 5\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_call_duration_seconds_bucket{pool=\"p1\","
                             "member=\"a\",le=\"+Inf\"} 7\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_call_duration_seconds_count{pool=\"p1\","
                             "member=\"a\"} 7\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_call_duration_seconds_sum{pool=\"p1\","
                             "member=\"a\"} 17000.004101\n"));
    CU_ASSERT(has_line(page, "holdfast_pool_member_call_duration_seconds_sum{pool=\"p2\","
                             "member=\"c\"} 0.000000\n"));
    CU_ASSERT_EQUAL(count_of(page, "holdfast_pool_member_call_duration_seconds_bucket{pool=\"p2\","
                                   "member=\"c\""),
                    HF_POOL_LATENCY_BUCKET_COUNT);
    if (!has_line(page, "holdfast_pool_member_up{pool=\"p1\",member=\"a\"} 1\n"))
        fprintf(stderr, "%s", page);
    free(page);
}

static void test_labels_cannot_break_a_line(void)
{
    HF_POOL_MEMBER_STATUS m;
    size_t len = 0;
    char *page;

    member_set(&m, "p\"1\n", "a}b", true);
    /* A module that filled the whole buffer without its NUL. */
    memset(m.member, 'z', sizeof(m.member));
    page = hf_gw_metrics_pool_render(&m, 1, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT(has_line(page, "holdfast_pool_member_up{pool=\"p1\",member=\"zzzzzzzzzzzzzzzzzzzzzzz"
                             "zzzzzzzzz\"} 1\n"));
    free(page);
}

static void test_no_pool_no_series(void)
{
    size_t len = 1;
    char *page = hf_gw_metrics_pool_render(NULL, 0, &len);

    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_EQUAL(len, 0);
    CU_ASSERT_STRING_EQUAL(page, "");
    free(page);
}

static CU_TestInfo pool_tests[] = {
    {"a pool's refusals are THROTTLED and UNAVAILABLE",
     test_pool_refusals_map_to_throttled_and_unavailable},
    {"pool series: families once, pools once, cumulative histogram", test_pool_series},
    {"labels cannot break a line", test_labels_cannot_break_a_line},
    {"no pool, no series", test_no_pool_no_series},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-pool-status", NULL, NULL, NULL, NULL, pool_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
