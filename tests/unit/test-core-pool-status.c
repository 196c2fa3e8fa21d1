/* The core's pool status (core-pool-status.c) on real SoftHSMv2 tokens: each member of a pool's
 * definition beside its executor's figures, the pool opened on the first ask; a pool that cannot
 * open listed with the reason; every pool at once; and the latency quantile `holdfast pool show`
 * prints, read off pool.h's log2 histogram as the bucket's upper edge. */
#include "hf-build.h"

#include "pkcs11/core/core.h"
#include "tests/unit/harness.h"
#include "tests/unit/harness-pool.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOKEN_A "hf-st-a"
#define TOKEN_B "hf-st-b"
#define PIN_ENV "HF_TEST_POOL_PIN"

static struct hf_test_env env;
static struct hf_core *core;
static const struct hf_actor who = {"cli", "uid:test"};

static int suite_init(void)
{
    return hf_test_pool_suite_setup(&env, &core, &who, TOKEN_A, TOKEN_B, PIN_ENV, 3) == CKR_OK ? 0
                                                                                               : -1;
}

static int suite_clean(void)
{
    hf_core_close(core);
    hf_test_env_teardown(&env);
    return 0;
}

static void test_a_pool_is_opened_and_read(void)
{
    struct hf_key_spec spec = {.name = "ks", .alg = HF_ALG_AES, .bits = 256, .source = "pool:p1"};
    struct hf_core_pool_live *l = NULL;
    struct hf_key k;
    struct hf_key_version v;
    const char *base = strrchr(env.cfg.hsm_module, '/');
    char model[HF_CORE_POOL_MODEL_MAX];
    uint64_t calls = 0;
    size_t n = 0;

    /* Not used yet on this core: the ask opens it. */
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_status(core, "p1", &l, &n), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    snprintf(model, sizeof(model), "%s token %s", base ? base + 1 : env.cfg.hsm_module, TOKEN_A);
    CU_ASSERT_STRING_EQUAL(l[0].pool, "p1");
    CU_ASSERT_STRING_EQUAL(l[0].member, "a");
    CU_ASSERT_STRING_EQUAL(l[1].member, "b");
    CU_ASSERT_STRING_EQUAL(l[0].model, model);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(l[i].open_rv, CKR_OK);
        CU_ASSERT_TRUE(l[i].status.healthy);
        CU_ASSERT_EQUAL(l[i].status.concurrency, 3);
        CU_ASSERT_PTR_NULL(l[i].status.name);
        CU_ASSERT_EQUAL(l[i].queue.queue_max, HF_POOL_QUEUE_MAX_DEFAULT);
    }
    free(l);
    /* A key made in it is counted on the member that made it, by the same executor. */
    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &spec, &who, &k, &v), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_status(core, "p1", &l, &n), CKR_OK);
    for (size_t i = 0; i < n; i++)
        calls += l[i].status.calls;
    CU_ASSERT(calls >= 1);
    free(l);
    hf_key_version_clear(&v);
    hf_key_clear(&k);
}

static void test_a_pool_that_cannot_open_is_listed(void)
{
    struct hf_core_pool_live *l = NULL;
    size_t n = 9;

    CU_ASSERT_EQUAL_FATAL(hf_core_pool_status(core, "dead", &l, &n), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_STRING_EQUAL(l[0].member, "a");
    CU_ASSERT_NOT_EQUAL(l[0].open_rv, CKR_OK);
    CU_ASSERT_FALSE(l[0].status.healthy);
    CU_ASSERT_EQUAL(l[0].status.concurrency, 3); /* from the definition */
    free(l);
    CU_ASSERT_NOT_EQUAL(hf_core_pool_status(core, "nosuch", &l, &n), CKR_OK);
    CU_ASSERT_PTR_NULL(l);
    CU_ASSERT_EQUAL(n, 0);
}

static void test_every_pool(void)
{
    struct hf_core_pool_live *l = NULL;
    size_t n = 0, p1 = 0, dead = 0, changes = 0;

    CU_ASSERT_EQUAL_FATAL(hf_core_pools_status(core, &l, &n), CKR_OK);
    CU_ASSERT_EQUAL(n, 3);
    for (size_t i = 0; i < n; i++) {
        p1 += strcmp(l[i].pool, "p1") == 0;
        dead += strcmp(l[i].pool, "dead") == 0;
    }
    CU_ASSERT_EQUAL(p1, 2);
    CU_ASSERT_EQUAL(dead, 1);
    /* Pool after pool: two pools, one change of pool along the array. */
    for (size_t i = 1; i < n; i++)
        changes += strcmp(l[i - 1].pool, l[i].pool) != 0;
    CU_ASSERT_EQUAL(changes, 1);
    free(l);
}

static CK_RV dead_open_rv(void)
{
    struct hf_core_pool_live *l = NULL;
    size_t n = 0;
    CK_RV rv;

    if (hf_core_pool_status(core, "dead", &l, &n) != CKR_OK || n != 1) {
        free(l);
        return CKR_GENERAL_ERROR;
    }
    rv = l[0].open_rv;
    free(l);
    return rv;
}

/* A pool whose member could not open is tried again by itself, without a restart, but not at
 * every ask: for 5 s after a failure the failure is the answer (core_pool_use). Last in the
 * suite: its member's token then exists. */
static void test_a_failed_pool_is_retried_after_its_backoff_only(void)
{
    uint64_t t0, opened_at = 0;

    CU_ASSERT_NOT_EQUAL_FATAL(dead_open_rv(), CKR_OK);
    t0 = hf_monotonic_us();
    CU_ASSERT_EQUAL_FATAL(hf_hsm_token_ensure(env.cfg.hsm_module, NULL, "hf-no-such-token",
                                              HF_TEST_SO_PIN, HF_TEST_USER_PIN),
                          CKR_OK);
    /* The token is there now, but the last failure still answers. */
    CU_ASSERT_NOT_EQUAL(dead_open_rv(), CKR_OK);
    while (hf_monotonic_us() - t0 < 8 * 1000000u) {
        if (dead_open_rv() == CKR_OK) {
            opened_at = hf_monotonic_us();
            break;
        }
        usleep(100 * 1000);
    }
    CU_ASSERT_NOT_EQUAL(opened_at, 0); /* opened by itself, in at most 5 s and a retry */
}

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

static CU_TestInfo live_tests[] = {
    {"a pool is opened on the first ask and read", test_a_pool_is_opened_and_read},
    {"a pool that cannot open is listed with the reason", test_a_pool_that_cannot_open_is_listed},
    {"every pool, pool after pool", test_every_pool},
    {"a failed pool is retried after its backoff only",
     test_a_failed_pool_is_retried_after_its_backoff_only},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"core-pool-status", NULL, NULL, NULL, NULL, status_tests},
        {"core-pool-status-live", suite_init, suite_clean, NULL, NULL, live_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
