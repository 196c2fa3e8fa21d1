/* Latency metrics per API (gateway/metrics.c): buckets placed around each API's own limit, and
 * the calls answered within it counted per API, as a counter and as the share since start. */
#include "hf-build.h"

#include "gateway/metrics.h"
#include "tests/unit/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_buckets_sit_around_the_limit(void)
{
    static const uint64_t want_xks[HF_GW_METRICS_NBUCKETS] = {
        250,   500,    1000,   2500,   5000,   10000,  25000,
        62500, 125000, 200000, 250000, 375000, 500000, 1000000};
    uint64_t b[HF_GW_METRICS_NBUCKETS];

    /* XKS, 250 ms: limit/10, /4, /2, 0.8x, 1x, 1.5x, 2x, 4x, finer steps under them. */
    hf_gw_metrics_buckets(250, b);
    CU_ASSERT_EQUAL(memcmp(b, want_xks, sizeof(b)), 0);
    /* No limit declared: XKS's. */
    hf_gw_metrics_buckets(0, b);
    CU_ASSERT_EQUAL(memcmp(b, want_xks, sizeof(b)), 0);
    /* EKM, 150 ms: the limit itself is an edge, and so are its fractions and multiples. */
    hf_gw_metrics_buckets(150, b);
    CU_ASSERT_EQUAL(b[6], 15000);
    CU_ASSERT_EQUAL(b[7], 37500);
    CU_ASSERT_EQUAL(b[8], 75000);
    CU_ASSERT_EQUAL(b[9], 120000);
    CU_ASSERT_EQUAL(b[10], 150000);
    CU_ASSERT_EQUAL(b[11], 225000);
    CU_ASSERT_EQUAL(b[12], 300000);
    CU_ASSERT_EQUAL(b[13], 600000);
    /* The smallest limit still gives strictly ascending edges; a huge one is capped. */
    hf_gw_metrics_buckets(1, b);
    for (size_t i = 1; i < HF_GW_METRICS_NBUCKETS; i++)
        CU_ASSERT(b[i] > b[i - 1]);
    CU_ASSERT_EQUAL(b[0], 1);
    CU_ASSERT_EQUAL(b[10], 1000);
    hf_gw_metrics_buckets(4000000000u, b);
    CU_ASSERT_EQUAL(b[10], (uint64_t)HF_GW_MAX_LATENCY_LIMIT_MS * 1000u);
}

static void test_ratio_arithmetic(void)
{
    CU_ASSERT_DOUBLE_EQUAL(hf_gw_metrics_ratio(0, 0), 1.0, 1e-12); /* no call missed the limit */
    CU_ASSERT_DOUBLE_EQUAL(hf_gw_metrics_ratio(3, 4), 0.75, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(hf_gw_metrics_ratio(0, 7), 0.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(hf_gw_metrics_ratio(999999, 1000000), 0.999999, 1e-12);
    /* Read apart, within may run ahead of total by a racing call: never over 1. */
    CU_ASSERT_DOUBLE_EQUAL(hf_gw_metrics_ratio(5, 4), 1.0, 1e-12);
}

static const char *line_of(const char *page, const char *prefix)
{
    const char *p = strstr(page, prefix);

    return p && (p == page || p[-1] == '\n') ? p : NULL;
}

/* Over a rendered page: each API's histogram edges follow its limit, and its calls within the
 * limit (inclusive) are summed over its operations; the gateway's own endpoints are no API. */
static void test_within_limit_is_counted_per_api(void)
{
    struct hf_gw_series *enc = hf_gw_metrics_series("ekm", "wrap", 150),
                        *dec = hf_gw_metrics_series("ekm", "unwrap", 150),
                        *xks = hf_gw_metrics_series("xks", "encrypt", 250),
                        *own = hf_gw_metrics_series("gateway", "healthz", 0);
    size_t len = 0;
    char *page;

    CU_ASSERT_FATAL(enc && dec && xks && own);
    hf_gw_metrics_observe(enc, 200, 1000);
    hf_gw_metrics_observe(enc, 200, 150000); /* exactly the limit: within */
    hf_gw_metrics_observe(dec, 503, 150001); /* a microsecond over, whatever the status */
    hf_gw_metrics_observe(dec, 200, 2000000);
    hf_gw_metrics_observe(xks, 200, 240000);
    hf_gw_metrics_observe(own, 200, 10);
    page = hf_gw_metrics_render(true, NULL, &len);
    CU_ASSERT_FATAL(page != NULL);
    CU_ASSERT_PTR_NOT_NULL(line_of(page, "holdfast_requests_within_limit_total{api=\"ekm\"} 2\n"));
    CU_ASSERT_PTR_NOT_NULL(
        line_of(page, "holdfast_requests_within_limit_ratio{api=\"ekm\"} 0.5\n"));
    CU_ASSERT_PTR_NOT_NULL(line_of(page, "holdfast_requests_within_limit_total{api=\"xks\"} 1\n"));
    CU_ASSERT_PTR_NOT_NULL(line_of(page, "holdfast_requests_within_limit_ratio{api=\"xks\"} 1\n"));
    CU_ASSERT_PTR_NOT_NULL(line_of(page, "holdfast_request_latency_limit_seconds{api=\"ekm\"} "
                                         "0.15\n"));
    CU_ASSERT_PTR_NULL(strstr(page, "within_limit_total{api=\"gateway\"}"));
    /* The histogram keeps its name, with the API's own edges: 0.15 and 0.12 for EKM, and
     * the 2 s call only in +Inf (4x is 0.6 s). */
    CU_ASSERT_PTR_NOT_NULL(line_of(page, "holdfast_request_duration_seconds_bucket{api=\"ekm\","
                                         "operation=\"wrap\",le=\"0.15\"} 2\n"));
    CU_ASSERT_PTR_NOT_NULL(line_of(page, "holdfast_request_duration_seconds_bucket{api=\"ekm\","
                                         "operation=\"unwrap\",le=\"0.6\"} 1\n"));
    CU_ASSERT_PTR_NOT_NULL(line_of(page, "holdfast_request_duration_seconds_bucket{api=\"ekm\","
                                         "operation=\"unwrap\",le=\"+Inf\"} 2\n"));
    CU_ASSERT_PTR_NOT_NULL(line_of(page, "holdfast_request_duration_seconds_bucket{api=\"xks\","
                                         "operation=\"encrypt\",le=\"0.25\"} 1\n"));
    /* The totals an operator divides by are still there. */
    CU_ASSERT_PTR_NOT_NULL(line_of(page, "holdfast_requests_total{api=\"ekm\",operation=\"unwrap\","
                                         "status=\"503\"} 1\n"));
    if (!line_of(page, "holdfast_requests_within_limit_ratio{api=\"ekm\"} 0.5\n"))
        fprintf(stderr, "%s", page);
    free(page);
    hf_gw_metrics_shutdown();
}

static CU_TestInfo metrics_tests[] = {
    {"buckets sit around the API's limit", test_buckets_sit_around_the_limit},
    {"the within-limit share's arithmetic", test_ratio_arithmetic},
    {"calls within the limit are counted per API", test_within_limit_is_counted_per_api},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-metrics", NULL, NULL, NULL, NULL, metrics_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
