/* The HSM pools' worker sets (gateway/hsm-workers.h): a job runs on a worker thread with no
 * lock held, the queue holds queue_max beyond the idle threads and refuses the next (counted as
 * throttled), a job that waited past the limit runs as late, and freeing a set runs what is
 * still queued. The /metrics series of the sets (gateway/metrics-hsm.c). */
#include "hf-build.h"

#include "gateway/hsm-workers.h"
#include "gateway/metrics.h"
#include "tests/unit/harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct test_job {
    struct hf_gw_job job; /* first: the job is the test_job */
    atomic_bool ran, late, on_worker;
    atomic_bool *gate; /* the job waits until it is true */
};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void job_fn(struct hf_gw_job *job, bool late)
{
    struct test_job *t = (struct test_job *)job;

    while (t->gate && !atomic_load(t->gate))
        sleep_ms(1);
    atomic_store(&t->on_worker, hf_gw_hsm_thread_is_worker());
    atomic_store(&t->late, late);
    atomic_store(&t->ran, true);
}

static bool wait_ran(struct test_job *t)
{
    for (int i = 0; i < 2000 && !atomic_load(&t->ran); i++)
        sleep_ms(1);
    return atomic_load(&t->ran);
}

static void test_job_runs_on_a_worker_thread(void)
{
    struct hf_gw_workers *w = hf_gw_workers_new("p", 2, 4, 0);
    struct test_job t = {.job.fn = job_fn};

    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_FALSE(hf_gw_hsm_thread_is_worker());
    CU_ASSERT_TRUE(hf_gw_workers_reserve(w));
    hf_gw_workers_push(w, &t.job);
    CU_ASSERT_TRUE(wait_ran(&t));
    CU_ASSERT_TRUE(atomic_load(&t.on_worker));
    CU_ASSERT_FALSE(atomic_load(&t.late));
    hf_gw_workers_free(w);
}

static void test_full_queue_refuses_and_counts(void)
{
    struct hf_gw_workers *w = hf_gw_workers_new("p", 1, 2, 0);
    atomic_bool gate = false;
    struct test_job t[3];
    struct hf_gw_workers_stats st;

    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    memset(t, 0, sizeof(t));
    /* One idle thread and two places: three jobs, the fourth refused. */
    for (int i = 0; i < 3; i++) {
        t[i].job.fn = job_fn;
        t[i].gate = &gate;
        CU_ASSERT_TRUE(hf_gw_workers_reserve(w));
        hf_gw_workers_push(w, &t[i].job);
    }
    CU_ASSERT_FALSE(hf_gw_workers_reserve(w));
    hf_gw_workers_stats(w, &st);
    CU_ASSERT_EQUAL(st.threads, 1);
    CU_ASSERT_EQUAL(st.queue_max, 2);
    CU_ASSERT_EQUAL(st.throttled, 1);
    for (int i = 0; i < 200 && st.busy != 1; i++) {
        sleep_ms(1);
        hf_gw_workers_stats(w, &st);
    }
    CU_ASSERT_EQUAL(st.busy, 1);
    CU_ASSERT_EQUAL(st.queued, 2);
    atomic_store(&gate, true);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_TRUE(wait_ran(&t[i]));
    hf_gw_workers_stats(w, &st);
    CU_ASSERT_EQUAL(st.jobs, 3);
    /* Room again once they ran; a reservation given back frees its place. */
    CU_ASSERT_TRUE(hf_gw_workers_reserve(w));
    hf_gw_workers_unreserve(w);
    hf_gw_workers_stats(w, &st);
    CU_ASSERT_EQUAL(st.queued, 0);
    hf_gw_workers_free(w);
}

static void test_no_queue_takes_only_idle_threads(void)
{
    struct hf_gw_workers *w = hf_gw_workers_new("p", 1, 0, 0);

    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_TRUE(hf_gw_workers_reserve(w));
    CU_ASSERT_FALSE(hf_gw_workers_reserve(w));
    hf_gw_workers_unreserve(w);
    hf_gw_workers_free(w);
}

static void test_job_past_the_wait_runs_late(void)
{
    struct hf_gw_workers *w = hf_gw_workers_new("p", 1, 4, 20);
    atomic_bool gate = false;
    struct test_job first = {.job.fn = job_fn, .gate = &gate}, second = {.job.fn = job_fn};
    struct hf_gw_workers_stats st;

    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_TRUE(hf_gw_workers_reserve(w));
    hf_gw_workers_push(w, &first.job);
    CU_ASSERT_TRUE(hf_gw_workers_reserve(w));
    hf_gw_workers_push(w, &second.job);
    sleep_ms(60); /* second waits behind first, past its 20 ms */
    atomic_store(&gate, true);
    CU_ASSERT_TRUE(wait_ran(&second));
    CU_ASSERT_FALSE(atomic_load(&first.late));
    CU_ASSERT_TRUE(atomic_load(&second.late));
    hf_gw_workers_stats(w, &st);
    CU_ASSERT_EQUAL(st.throttled, 1);
    hf_gw_workers_free(w);
}

static void test_free_runs_what_is_queued(void)
{
    struct hf_gw_workers *w = hf_gw_workers_new("p", 1, 8, 0);
    struct test_job t[5];

    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    memset(t, 0, sizeof(t));
    for (int i = 0; i < 5; i++) {
        t[i].job.fn = job_fn;
        CU_ASSERT_TRUE(hf_gw_workers_reserve(w));
        hf_gw_workers_push(w, &t[i].job);
    }
    hf_gw_workers_free(w);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_TRUE(atomic_load(&t[i].ran));
}

static void test_bad_sizes_are_refused(void)
{
    CU_ASSERT_PTR_NULL(hf_gw_workers_new("p", 0, 1, 0));
    CU_ASSERT_PTR_NULL(hf_gw_workers_new("p", 257, 1, 0));
    CU_ASSERT_PTR_NULL(hf_gw_workers_new(NULL, 1, 1, 0));
}

static void test_series_once_per_family_and_pool(void)
{
    const char *pools[] = {"p1", "p\n2"};
    struct hf_gw_workers_stats st[2] = {{.threads = 3, .busy = 2, .queued = 5, .queue_max = 9,
                                         .jobs = 11, .throttled = 4},
                                        {.threads = 1}};
    size_t len = 0;
    char *page = hf_gw_metrics_hsm_render(pools, st, 2, &len);

    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_EQUAL(len, strlen(page));
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "\nholdfast_hsm_workers{pool=\"p1\"} 3\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "\nholdfast_hsm_workers_busy{pool=\"p1\"} 2\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "\nholdfast_hsm_queue_depth{pool=\"p1\"} 5\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "\nholdfast_hsm_queue_max{pool=\"p1\"} 9\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "\nholdfast_hsm_jobs_total{pool=\"p1\"} 11\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "\nholdfast_hsm_throttled_total{pool=\"p1\"} 4\n"));
    /* A name that could break a line is cleaned. */
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "\nholdfast_hsm_workers{pool=\"p2\"} 1\n"));
    CU_ASSERT_PTR_NULL(strstr(page, "p\n2"));
    free(page);
}

static CU_TestInfo hsm_worker_tests[] = {
    {"a job runs on a worker thread", test_job_runs_on_a_worker_thread},
    {"a full queue refuses and counts it", test_full_queue_refuses_and_counts},
    {"queue_max 0 takes only idle threads", test_no_queue_takes_only_idle_threads},
    {"a job past the wait runs late", test_job_past_the_wait_runs_late},
    {"freeing a set runs what is queued", test_free_runs_what_is_queued},
    {"bad sizes are refused", test_bad_sizes_are_refused},
    {"metrics series once per family and pool", test_series_once_per_family_and_pool},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-hsm-workers", NULL, NULL, NULL, NULL, hsm_worker_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
