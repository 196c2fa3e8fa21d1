/* hf_random_public (gateway/random.c): the bytes a plugin puts on the wire as IVs and ids must
 * never repeat, whatever the draw size, across the pool's refills and across threads. */
#include "hf-build.h"

#include "gateway/plugin.h"
#include "tests/unit/harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define DRAWS 4000

static int cmp12(const void *a, const void *b)
{
    return memcmp(a, b, 12);
}

static int cmp16(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

static size_t repeats(unsigned char *draws, size_t n, size_t len,
                      int (*cmp)(const void *, const void *))
{
    size_t same = 0;

    qsort(draws, n, len, cmp);
    for (size_t i = 1; i < n; i++)
        same += memcmp(draws + (i - 1) * len, draws + i * len, len) == 0;
    return same;
}

/* 12 does not divide the pool: draws straddle every refill. */
static void test_iv_sized_draws_never_repeat(void)
{
    unsigned char *draws = calloc(DRAWS, 12);
    static const unsigned char zero[12];
    size_t zeros = 0;

    CU_ASSERT_FATAL(draws != NULL);
    for (size_t i = 0; i < DRAWS; i++) {
        CU_ASSERT_TRUE(hf_random_public(draws + i * 12, 12));
        zeros += memcmp(draws + i * 12, zero, 12) == 0;
    }
    CU_ASSERT_EQUAL(zeros, 0);
    CU_ASSERT_EQUAL(repeats(draws, DRAWS, 12, cmp12), 0);
    free(draws);
}

/* Past the pool's largest take the DRBG is asked directly; the bytes still differ. */
static void test_large_draws_differ(void)
{
    unsigned char a[200], b[200];

    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    CU_ASSERT_TRUE(hf_random_public(a, sizeof(a)));
    CU_ASSERT_TRUE(hf_random_public(b, sizeof(b)));
    CU_ASSERT_NOT_EQUAL(memcmp(a, b, sizeof(a)), 0);
    CU_ASSERT_TRUE(hf_random_public(a, 0));
}

static void *draw_ids(void *arg)
{
    unsigned char *out = arg;

    for (size_t i = 0; i < DRAWS / 2; i++)
        if (!hf_random_public(out + i * 16, 16)) return NULL;
    return out;
}

/* Each thread has its own pool: two threads drawing at once must not hand out the same bytes. */
static void test_threads_draw_different_bytes(void)
{
    unsigned char *draws = calloc(DRAWS, 16);
    pthread_t t1, t2;
    void *r1 = NULL, *r2 = NULL;

    CU_ASSERT_FATAL(draws != NULL);
    CU_ASSERT_FATAL(pthread_create(&t1, NULL, draw_ids, draws) == 0);
    CU_ASSERT_FATAL(pthread_create(&t2, NULL, draw_ids, draws + DRAWS / 2 * 16) == 0);
    pthread_join(t1, &r1);
    pthread_join(t2, &r2);
    CU_ASSERT_PTR_NOT_NULL(r1);
    CU_ASSERT_PTR_NOT_NULL(r2);
    CU_ASSERT_EQUAL(repeats(draws, DRAWS, 16, cmp16), 0);
    free(draws);
}

static CU_TestInfo random_tests[] = {
    {"IV-sized draws never repeat nor come back zero", test_iv_sized_draws_never_repeat},
    {"draws larger than the pool's take still differ", test_large_draws_differ},
    {"two threads never draw the same bytes", test_threads_draw_different_bytes},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-random", NULL, NULL, NULL, NULL, random_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
