/* The core's pool status helpers (core-pool-status.c): the latency quantile `holdfast pool show`
 * prints, read off pool.h's log2 histogram as the bucket's upper edge. */
#include "hf-build.h"

#include "pkcs11/core/core.h"
#include "tests/unit/harness.h"

#include <string.h>

static void test_quantile_is_the_upper_edge_of_its_bucket(void)
{
    uint64_t h[HF_POOL_LATENCY_BUCKETS];

    memset(h, 0, sizeof(h));
    /* No call counted: no quantile. */
    CU_ASSERT_EQUAL(hf_core_pool_latency_quantile_us(h, 0.5), 0);
    h[0] = 1;  /* [0, 2) us */
    h[9] = 98; /* [512, 1024) us */
    h[12] = 1; /* [4096, 8192) us */
    CU_ASSERT_EQUAL(hf_core_pool_latency_quantile_us(h, 0), 2);
    CU_ASSERT_EQUAL(hf_core_pool_latency_quantile_us(h, 0.01), 2);
    CU_ASSERT_EQUAL(hf_core_pool_latency_quantile_us(h, 0.5), 1024);
    CU_ASSERT_EQUAL(hf_core_pool_latency_quantile_us(h, 0.99), 1024);
    CU_ASSERT_EQUAL(hf_core_pool_latency_quantile_us(h, 1), 8192);
    /* Out of range asks are clamped. */
    CU_ASSERT_EQUAL(hf_core_pool_latency_quantile_us(h, 7), 8192);
    CU_ASSERT_EQUAL(hf_core_pool_latency_quantile_us(h, -1), 2);
    /* The open-ended last bucket answers its lower edge's double. */
    memset(h, 0, sizeof(h));
    h[HF_POOL_LATENCY_BUCKETS - 1] = 3;
    CU_ASSERT_EQUAL(hf_core_pool_latency_quantile_us(h, 0.5),
                    (uint64_t)1 << HF_POOL_LATENCY_BUCKETS);
}

static void test_status_arguments(void)
{
    struct hf_core_pool_live *live = (void *)1;
    size_t n = 1;

    CU_ASSERT_EQUAL(hf_core_pool_status(NULL, "p1", &live, &n), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_core_pools_status(NULL, &live, &n), CKR_ARGUMENTS_BAD);
}

static CU_TestInfo status_tests[] = {
    {"a quantile is the upper edge of its bucket", test_quantile_is_the_upper_edge_of_its_bucket},
    {"bad arguments", test_status_arguments},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"core-pool-status", NULL, NULL, NULL, NULL, status_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
