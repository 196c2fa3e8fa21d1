#include "hf-build.h"

#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pkcs11/core/hsm.h"
#include "pkcs11/core/pool.h"

/* The HSM pool's executor on two real SoftHSMv2 tokens. Faults come from the work itself: a
 * member told to fail answers the given CK_RV instead of calling its token, and a member told to
 * hold keeps its calls waiting until released, so each case controls exactly what each member
 * does. Everything else is a real C_GenerateRandom through hf_hsm_run. */
#define TOKEN_A "hf-pool-a"
#define TOKEN_B "hf-pool-b"
#define A 0
#define B 1

static struct hf_test_softhsm softhsm;

/* ---- faults ---------------------------------------------------------------------------------- */

struct faults {
    _Atomic unsigned long fail_rv[2]; /* CKR_OK: none; else every call on the member answers it */
    atomic_uint fail_permille[2];     /* random CKR_DEVICE_ERROR on the member */
    atomic_uint injected[2];          /* random failures handed out */
    atomic_uint ran[2];               /* calls that reached the member */
    atomic_uint back[2];              /* on_member_back calls */
    atomic_uint probed[2];            /* probe_check calls */
    pthread_mutex_t mu;               /* guards hold and held */
    pthread_cond_t cv;
    bool hold[2];     /* calls on the member wait while set */
    unsigned held[2]; /* calls waiting on hold now */
};

static struct faults faults;

static void faults_reset(void)
{
    for (int i = 0; i < 2; i++) {
        atomic_store(&faults.fail_rv[i], CKR_OK);
        atomic_store(&faults.fail_permille[i], 0);
        atomic_store(&faults.injected[i], 0);
        atomic_store(&faults.ran[i], 0);
        atomic_store(&faults.back[i], 0);
        atomic_store(&faults.probed[i], 0);
        faults.hold[i] = false;
        faults.held[i] = 0;
    }
}

static void hold_set(int member, bool on)
{
    pthread_mutex_lock(&faults.mu);
    faults.hold[member] = on;
    pthread_cond_broadcast(&faults.cv);
    pthread_mutex_unlock(&faults.mu);
}

/* Waits (up to 2 s) until n calls are held on member. */
static bool held_wait(int member, unsigned n)
{
    struct timespec ts;
    bool ok;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    pthread_mutex_lock(&faults.mu);
    while (faults.held[member] < n)
        if (pthread_cond_timedwait(&faults.cv, &faults.mu, &ts) != 0) break;
    ok = faults.held[member] >= n;
    pthread_mutex_unlock(&faults.mu);
    return ok;
}

static __thread unsigned seed;

static CK_RV work(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                  void *arg)
{
    struct faults *ft = arg;
    CK_BYTE buf[16];
    CK_RV rv;

    (void)hsm;
    atomic_fetch_add(&ft->ran[member], 1);
    pthread_mutex_lock(&ft->mu);
    if (ft->hold[member]) {
        ft->held[member]++;
        pthread_cond_broadcast(&ft->cv);
        while (ft->hold[member])
            pthread_cond_wait(&ft->cv, &ft->mu);
        ft->held[member]--;
    }
    pthread_mutex_unlock(&ft->mu);
    if ((rv = atomic_load(&ft->fail_rv[member])) != CKR_OK) return rv;
    unsigned permille = atomic_load(&ft->fail_permille[member]);
    if (permille > 0 && (unsigned)rand_r(&seed) % 1000 < permille) {
        atomic_fetch_add(&ft->injected[member], 1);
        return CKR_DEVICE_ERROR;
    }
    return f->C_GenerateRandom(s, buf, sizeof(buf));
}

/* The prober's own check: a member told to fail stays out. */
static CK_RV probe_check(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                         CK_SESSION_HANDLE s, void *arg)
{
    struct faults *ft = arg;
    CK_SESSION_INFO info;
    CK_RV rv = atomic_load(&ft->fail_rv[member]);

    (void)hsm;
    atomic_fetch_add(&ft->probed[member], 1);
    return rv != CKR_OK ? rv : f->C_GetSessionInfo(s, &info);
}

static void member_back(struct hf_pool *pool, size_t member, void *arg)
{
    struct faults *ft = arg;

    (void)pool;
    atomic_fetch_add(&ft->back[member], 1);
}

/* ---- a pool of the two tokens ---------------------------------------------------------------- */

static unsigned call_timeout_ms; /* for the next pool_open; 0: the default */

static struct hf_pool *pool_open(unsigned concurrency, size_t queue_max, unsigned probe_ms)
{
    struct hf_pool_member_spec specs[2] = {
        {"a", HF_SOFTHSM_MODULE, TOKEN_A, HF_TEST_USER_PIN, softhsm.lock_path, concurrency},
        {"b", HF_SOFTHSM_MODULE, TOKEN_B, HF_TEST_USER_PIN, softhsm.lock_path, concurrency},
    };
    struct hf_pool_options opts = {
        .queue_max = queue_max,
        .queue_wait_ms = 3000,
        .probe_interval_ms = probe_ms,
        .call_timeout_ms = call_timeout_ms,
        .probe_fn = probe_check,
        .probe_arg = &faults,
        .on_member_back = member_back,
        .on_member_back_arg = &faults,
    };
    struct hf_pool *pool = NULL;
    CK_RV rv;

    faults_reset();
    rv = hf_pool_open(specs, 2, &opts, &pool);
    if (rv != CKR_OK) fprintf(stderr, "hf_pool_open: 0x%lx\n", (unsigned long)rv);
    return pool;
}

static void status(struct hf_pool *pool, struct hf_pool_member_status st[2])
{
    memset(st, 0, 2 * sizeof(*st));
    CU_ASSERT_EQUAL(hf_pool_status(pool, st, 2), 2);
}

static uint64_t ms_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Waits (up to ms) until member's health is want; whether it came. */
static bool health_wait(struct hf_pool *pool, int member, bool want, unsigned ms)
{
    struct hf_pool_member_status st[2];
    uint64_t t0 = ms_now();

    do {
        sleep_ms(10);
        status(pool, st);
    } while (st[member].healthy != want && ms_now() - t0 < ms);
    return st[member].healthy == want;
}

/* A caller on its own thread. */
struct caller {
    pthread_t thread;
    struct hf_pool *pool;
    atomic_bool done;
    CK_RV rv;
};

static void *caller_main(void *arg)
{
    struct caller *c = arg;

    c->rv = hf_pool_run(c->pool, work, &faults);
    atomic_store(&c->done, true);
    return NULL;
}

static bool caller_start(struct caller *c, struct hf_pool *pool)
{
    c->pool = pool;
    c->rv = CKR_GENERAL_ERROR;
    atomic_store(&c->done, false);
    return pthread_create(&c->thread, NULL, caller_main, c) == 0;
}

/* ---- suite ----------------------------------------------------------------------------------- */

static int suite_init(void)
{
    CK_RV rv;

    pthread_mutex_init(&faults.mu, NULL);
    pthread_cond_init(&faults.cv, NULL);
    if (hf_test_softhsm_setup(&softhsm, "hf-test-pool") != 0) return -1;
    rv = hf_hsm_token_ensure(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN_A, HF_TEST_SO_PIN,
                             HF_TEST_USER_PIN);
    if (rv == CKR_OK)
        rv = hf_hsm_token_ensure(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN_B, HF_TEST_SO_PIN,
                                 HF_TEST_USER_PIN);
    if (rv != CKR_OK) fprintf(stderr, "suite setup failed: 0x%lx\n", (unsigned long)rv);
    return rv == CKR_OK ? 0 : -1;
}

static int suite_clean(void)
{
    hf_test_softhsm_teardown(&softhsm);
    pthread_cond_destroy(&faults.cv);
    pthread_mutex_destroy(&faults.mu);
    return 0;
}

/* ---- cases ----------------------------------------------------------------------------------- */

static void test_a_call_runs_on_one_member(void)
{
    struct hf_pool *pool = pool_open(2, 8, 0);
    struct hf_pool_member_status st[2];

    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), CKR_OK);
    status(pool, st);
    CU_ASSERT_STRING_EQUAL(st[A].name, "a");
    CU_ASSERT_TRUE(st[A].healthy && st[B].healthy);
    CU_ASSERT_EQUAL(st[A].calls + st[B].calls, 1);
    CU_ASSERT_EQUAL(atomic_load(&faults.ran[A]) + atomic_load(&faults.ran[B]), 1);
    CU_ASSERT_EQUAL(st[A].in_flight + st[B].in_flight, 0);
    CU_ASSERT_EQUAL(hf_pool_run(NULL, work, &faults), CKR_ARGUMENTS_BAD);
    hf_pool_close(pool);
}

static void test_device_error_on_a_moves_calls_to_b_and_takes_a_out(void)
{
    /* A long probe interval: A stays out while the case looks. */
    struct hf_pool *pool = pool_open(2, 8, 10000);
    struct hf_pool_member_status st[2];

    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    atomic_store(&faults.fail_rv[A], CKR_DEVICE_ERROR);
    for (int i = 0; i < 10; i++)
        CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), CKR_OK);
    status(pool, st);
    CU_ASSERT_FALSE(st[A].healthy);
    CU_ASSERT_TRUE(st[B].healthy);
    /* The first call went to A (round robin starts there), failed, and moved; later ones never
     * tried A. */
    CU_ASSERT_EQUAL(st[A].calls, 1);
    CU_ASSERT_EQUAL(st[A].failures, 1);
    CU_ASSERT_EQUAL(st[A].failovers, 1);
    CU_ASSERT_EQUAL(st[B].calls, 10);
    CU_ASSERT_EQUAL(st[B].failures, 0);
    CU_ASSERT_EQUAL(st[B].failovers, 0);
    hf_pool_close(pool); /* the probe thread, asleep for 10 s, stops at once */
}

static void test_key_handle_invalid_is_the_answer_and_fails_nobody_over(void)
{
    struct hf_pool *pool = pool_open(2, 8, 10000);
    struct hf_pool_member_status st[2];

    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    atomic_store(&faults.fail_rv[A], CKR_KEY_HANDLE_INVALID);
    atomic_store(&faults.fail_rv[B], CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), CKR_KEY_HANDLE_INVALID);
    atomic_store(&faults.fail_rv[A], CKR_ENCRYPTED_DATA_INVALID);
    atomic_store(&faults.fail_rv[B], CKR_ENCRYPTED_DATA_INVALID);
    CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), CKR_ENCRYPTED_DATA_INVALID);
    status(pool, st);
    CU_ASSERT_TRUE(st[A].healthy && st[B].healthy);
    CU_ASSERT_EQUAL(st[A].calls + st[B].calls, 2); /* no retry */
    CU_ASSERT_EQUAL(st[A].failovers + st[B].failovers, 0);
    CU_ASSERT_EQUAL(st[A].failures + st[B].failures, 0);
    hf_pool_close(pool);
}

static void test_general_error_takes_a_member_out_only_when_the_retry_succeeds(void)
{
    struct hf_pool *pool = pool_open(2, 8, 10000);
    struct hf_pool_member_status st[2];

    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    /* Both members refuse it: the input's fault (a forged blob); nobody goes out. */
    atomic_store(&faults.fail_rv[A], CKR_GENERAL_ERROR);
    atomic_store(&faults.fail_rv[B], CKR_GENERAL_ERROR);
    CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), CKR_GENERAL_ERROR);
    status(pool, st);
    CU_ASSERT_TRUE(st[A].healthy && st[B].healthy);
    CU_ASSERT_EQUAL(st[A].calls + st[B].calls, 2); /* moved once */
    CU_ASSERT_EQUAL(st[A].failures + st[B].failures, 0);

    /* Only A refuses it: B served it, so A was broken. The next call starts on A again (the
     * tie-break moved on to A after B served the last retry). */
    atomic_store(&faults.fail_rv[B], CKR_OK);
    CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), CKR_OK);
    status(pool, st);
    CU_ASSERT_FALSE(st[A].healthy);
    CU_ASSERT_TRUE(st[B].healthy);
    CU_ASSERT_EQUAL(st[A].failures, 1);
    CU_ASSERT_EQUAL(st[B].failures, 0);
    hf_pool_close(pool);
}

static void test_both_members_failing_is_device_error_at_once(void)
{
    struct hf_pool *pool = pool_open(2, 8, 10000);
    struct hf_pool_member_status st[2];
    struct hf_pool_queue_status q;
    uint64_t t0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    atomic_store(&faults.fail_rv[A], CKR_DEVICE_REMOVED);
    atomic_store(&faults.fail_rv[B], CKR_DEVICE_ERROR);
    CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), HF_POOL_RV_UNAVAILABLE);
    status(pool, st);
    CU_ASSERT_FALSE(st[A].healthy || st[B].healthy);
    /* With nobody healthy, no member is even tried, and nothing waits. */
    unsigned ran = atomic_load(&faults.ran[A]) + atomic_load(&faults.ran[B]);
    t0 = ms_now();
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), CKR_DEVICE_ERROR);
    CU_ASSERT_TRUE(ms_now() - t0 < 500);
    CU_ASSERT_EQUAL(atomic_load(&faults.ran[A]) + atomic_load(&faults.ran[B]), ran);
    hf_pool_queue_status(pool, &q);
    CU_ASSERT_EQUAL(q.unavailable, 5);
    CU_ASSERT_EQUAL(q.waiting, 0);
    hf_pool_close(pool);
}

static void test_a_member_comes_back_through_the_probe_once(void)
{
    struct hf_pool *pool = pool_open(2, 8, 50);
    struct hf_pool_member_status st[2];

    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    atomic_store(&faults.fail_rv[A], CKR_DEVICE_ERROR);
    CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), CKR_OK);
    status(pool, st);
    CU_ASSERT_FALSE(st[A].healthy);
    /* Probed about six times while still failing: stays out. */
    sleep_ms(300);
    status(pool, st);
    CU_ASSERT_FALSE(st[A].healthy);
    CU_ASSERT_EQUAL(atomic_load(&faults.back[A]), 0);

    atomic_store(&faults.fail_rv[A], CKR_OK);
    CU_ASSERT_TRUE(health_wait(pool, A, true, 2000));
    sleep_ms(200); /* more probe rounds: a member in service is not probed, nor called back */
    CU_ASSERT_EQUAL(atomic_load(&faults.back[A]), 1);
    CU_ASSERT_EQUAL(atomic_load(&faults.back[B]), 0);
    /* And it serves again. */
    unsigned ran = atomic_load(&faults.ran[A]);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), CKR_OK);
    CU_ASSERT_TRUE(atomic_load(&faults.ran[A]) > ran);
    hf_pool_close(pool);
}

/* A call that does not return (held on A) takes A out once it has run call_timeout_ms: the next
 * calls all go to B, the probe does not touch A while that call runs, and A comes back after it
 * returned. */
static void test_a_call_past_its_timeout_takes_its_member_out(void)
{
    struct hf_pool *pool;
    struct hf_pool_member_status st[2];
    struct caller slow;
    uint64_t t0;
    unsigned probed;

    call_timeout_ms = 300;
    pool = pool_open(2, 8, 20);
    call_timeout_ms = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    hold_set(A, true);
    CU_ASSERT_FATAL(caller_start(&slow, pool)); /* a fresh pool's first call goes to A */
    CU_ASSERT_FATAL(held_wait(A, 1));
    t0 = ms_now();
    CU_ASSERT_TRUE(health_wait(pool, A, false, 3000));
    CU_ASSERT(ms_now() - t0 >= 250); /* not before its timeout */
    status(pool, st);
    CU_ASSERT_EQUAL(st[A].in_flight, 1);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), CKR_OK);
    CU_ASSERT_EQUAL(atomic_load(&faults.ran[A]), 1);
    CU_ASSERT_EQUAL(atomic_load(&faults.ran[B]), 4);
    probed = atomic_load(&faults.probed[A]);
    sleep_ms(200); /* ten probe rounds */
    CU_ASSERT_EQUAL(atomic_load(&faults.probed[A]), probed);
    CU_ASSERT_FALSE(atomic_load(&slow.done));

    hold_set(A, false);
    pthread_join(slow.thread, NULL);
    CU_ASSERT_EQUAL(slow.rv, CKR_OK);
    CU_ASSERT_TRUE(health_wait(pool, A, true, 2000));
    hf_pool_close(pool);
}

static void test_next_call_goes_to_the_member_with_fewer_in_flight(void)
{
    struct hf_pool *pool = pool_open(4, 8, 10000);
    struct hf_pool_member_status st[2];
    struct caller slow;

    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    hold_set(A, true);
    /* A fresh pool's first call goes to A (the tie-break starts there), and hangs there. */
    CU_ASSERT_FATAL(caller_start(&slow, pool));
    CU_ASSERT_FATAL(held_wait(A, 1));
    /* Round robin alone would send the second to B and the third to A: least-in-flight sends
     * both to B. */
    CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), CKR_OK);
    CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), CKR_OK);
    CU_ASSERT_EQUAL(atomic_load(&faults.ran[A]), 1);
    CU_ASSERT_EQUAL(atomic_load(&faults.ran[B]), 2);
    status(pool, st);
    CU_ASSERT_EQUAL(st[A].in_flight, 1);
    CU_ASSERT_EQUAL(st[B].in_flight, 0);
    CU_ASSERT_FALSE(atomic_load(&slow.done));
    hold_set(A, false);
    pthread_join(slow.thread, NULL);
    CU_ASSERT_EQUAL(slow.rv, CKR_OK);
    hf_pool_close(pool);
}

static void test_a_caller_waits_while_every_member_is_at_its_limit(void)
{
    struct hf_pool *pool = pool_open(1, 4, 10000);
    struct hf_pool_member_status st[2];
    struct hf_pool_queue_status q = {0};
    struct caller c1, c2, c3;
    uint64_t t0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    hold_set(A, true);
    hold_set(B, true);
    CU_ASSERT_FATAL(caller_start(&c1, pool));
    CU_ASSERT_FATAL(held_wait(A, 1));
    CU_ASSERT_FATAL(caller_start(&c2, pool));
    CU_ASSERT_FATAL(held_wait(B, 1));
    CU_ASSERT_FATAL(caller_start(&c3, pool));
    t0 = ms_now();
    do {
        sleep_ms(5);
        hf_pool_queue_status(pool, &q);
    } while (q.waiting == 0 && ms_now() - t0 < 2000);
    CU_ASSERT_EQUAL(q.waiting, 1);
    sleep_ms(50);
    CU_ASSERT_FALSE(atomic_load(&c3.done)); /* a limit of 1: it did not join either call */
    CU_ASSERT_EQUAL(atomic_load(&faults.ran[A]) + atomic_load(&faults.ran[B]), 2);

    /* A's call ends: the waiting caller takes A's slot and finishes while B still holds. */
    hold_set(A, false);
    pthread_join(c1.thread, NULL);
    pthread_join(c3.thread, NULL);
    CU_ASSERT_EQUAL(c1.rv, CKR_OK);
    CU_ASSERT_EQUAL(c3.rv, CKR_OK);
    CU_ASSERT_FALSE(atomic_load(&c2.done));
    status(pool, st);
    CU_ASSERT_EQUAL(st[A].calls, 2);
    CU_ASSERT_EQUAL(st[A].queued, 1);
    CU_ASSERT_EQUAL(st[B].in_flight, 1);
    hf_pool_queue_status(pool, &q);
    CU_ASSERT_EQUAL(q.waiting, 0);
    CU_ASSERT_EQUAL(q.throttled, 0);
    hold_set(B, false);
    pthread_join(c2.thread, NULL);
    CU_ASSERT_EQUAL(c2.rv, CKR_OK);
    hf_pool_close(pool);
}

static void test_a_full_queue_is_throttled_at_once(void)
{
    struct hf_pool *pool = pool_open(1, 0, 10000);
    struct hf_pool_queue_status q;
    struct caller c1, c2;
    uint64_t t0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    hold_set(A, true);
    hold_set(B, true);
    CU_ASSERT_FATAL(caller_start(&c1, pool));
    CU_ASSERT_FATAL(held_wait(A, 1));
    CU_ASSERT_FATAL(caller_start(&c2, pool));
    CU_ASSERT_FATAL(held_wait(B, 1));
    t0 = ms_now();
    CU_ASSERT_EQUAL(hf_pool_run(pool, work, &faults), HF_POOL_RV_THROTTLED);
    CU_ASSERT_EQUAL(HF_POOL_RV_THROTTLED, CKR_FUNCTION_REJECTED);
    CU_ASSERT_TRUE(ms_now() - t0 < 100);
    hf_pool_queue_status(pool, &q);
    CU_ASSERT_EQUAL(q.throttled, 1);
    CU_ASSERT_EQUAL(q.queue_max, 0);
    hold_set(A, false);
    hold_set(B, false);
    pthread_join(c1.thread, NULL);
    pthread_join(c2.thread, NULL);
    CU_ASSERT_EQUAL(c1.rv, CKR_OK);
    CU_ASSERT_EQUAL(c2.rv, CKR_OK);
    hf_pool_close(pool);
}

enum { THREADS = 8, CALLS = 500 };

static atomic_uint stress_bad;

static void *stress_main(void *arg)
{
    struct hf_pool *pool = arg;

    seed = (unsigned)(uintptr_t)&seed ^ (unsigned)ms_now();
    for (int i = 0; i < CALLS; i++) {
        CK_RV rv = hf_pool_run(pool, work, &faults);
        if (rv != CKR_OK) {
            if (atomic_fetch_add(&stress_bad, 1) < 5) fprintf(stderr, "stress: 0x%lx\n", rv);
        }
    }
    return NULL;
}

static void test_many_threads_with_random_failures_on_a_all_succeed(void)
{
    struct hf_pool *pool = pool_open(2, 64, 20);
    struct hf_pool_member_status st[2];
    pthread_t t[THREADS];
    uint64_t calls = 0, failovers = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    atomic_store(&stress_bad, 0);
    atomic_store(&faults.fail_permille[A], 30);
    for (int i = 0; i < THREADS; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, stress_main, pool), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CU_ASSERT_EQUAL(atomic_load(&stress_bad), 0);
    /* The run may end within the probe's first round (20 ms) after A's first failure: give the
     * probe up to 2 s (a loaded machine) to bring A back before asking whether it did. */
    for (uint64_t t0 = ms_now(); atomic_load(&faults.back[A]) == 0 && ms_now() - t0 < 2000;)
        usleep(5000);
    status(pool, st);
    for (int m = 0; m < 2; m++) {
        uint64_t hist = 0;
        for (int b = 0; b < HF_POOL_LATENCY_BUCKETS; b++)
            hist += st[m].latency[b];
        CU_ASSERT_EQUAL(hist, st[m].calls);
        CU_ASSERT_EQUAL(st[m].in_flight, 0);
        calls += st[m].calls;
        failovers += st[m].failovers;
    }
    /* Every call ran once, plus once more for each one moved. */
    CU_ASSERT_EQUAL(calls, (uint64_t)THREADS * CALLS + failovers);
    CU_ASSERT_TRUE(atomic_load(&faults.injected[A]) > 0);
    CU_ASSERT_EQUAL(st[A].failures, atomic_load(&faults.injected[A]));
    CU_ASSERT_EQUAL(st[A].failovers, atomic_load(&faults.injected[A]));
    CU_ASSERT_EQUAL(st[B].failures, 0);
    CU_ASSERT_EQUAL(st[B].failovers, 0);
    CU_ASSERT_TRUE(atomic_load(&faults.back[A]) > 0);
    printf("\n    stress: a %lu calls (%lu failed over, back %u times), b %lu calls ",
           (unsigned long)st[A].calls, (unsigned long)st[A].failovers, atomic_load(&faults.back[A]),
           (unsigned long)st[B].calls);
    hf_pool_close(pool);
}

/* hf_hsm_object_find through the pool: a secret key made on the member it ran on is found, and
 * found again from the cache after the token lost it, until forgotten. */
struct object_job {
    int step; /* 0: make and find; 1: destroy behind the cache, find; 2: forget, find */
    size_t member;
    CK_OBJECT_HANDLE found;
};

#define OBJ_LABEL "hf-pool-test-key"

static CK_RV object_work(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                         CK_SESSION_HANDLE s, void *arg)
{
    struct object_job *j = arg;
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_ULONG len = 16;
    CK_BBOOL yes = CK_TRUE;
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_VALUE_LEN, &len, sizeof(len)},
        {CKA_TOKEN, &yes, sizeof(yes)},
        {CKA_LABEL, OBJ_LABEL, strlen(OBJ_LABEL)},
    };
    CK_OBJECT_HANDLE h;
    CK_RV rv;

    if (j->step > 0 && member != j->member) return CKR_DEVICE_ERROR; /* stay on one member */
    j->member = member;
    if (j->step == 0 &&
        (rv = f->C_GenerateKey(s, &mech, tmpl, sizeof(tmpl) / sizeof(tmpl[0]), &h)) != CKR_OK)
        return rv;
    if (j->step == 1) {
        if ((rv = hf_hsm_object_find(hsm, s, CKO_SECRET_KEY, OBJ_LABEL, &h)) != CKR_OK) return rv;
        if ((rv = f->C_DestroyObject(s, h)) != CKR_OK) return rv;
    }
    if (j->step == 2) hf_hsm_object_forget(hsm, CKO_SECRET_KEY, OBJ_LABEL);
    return hf_hsm_object_find(hsm, s, CKO_SECRET_KEY, OBJ_LABEL, &j->found);
}

static void test_object_handles_are_cached_per_member_until_forgotten(void)
{
    struct hf_pool *pool = pool_open(1, 8, 10000);
    struct object_job j = {0};
    CK_OBJECT_HANDLE first;

    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    CU_ASSERT_EQUAL_FATAL(hf_pool_run(pool, object_work, &j), CKR_OK);
    CU_ASSERT_NOT_EQUAL(j.found, CK_INVALID_HANDLE);
    first = j.found;
    /* Later steps must land on the same member: the other answers CKR_DEVICE_ERROR and is
     * taken out, so the retry comes back to it. */
    j.step = 1;
    CU_ASSERT_EQUAL(hf_pool_run(pool, object_work, &j), CKR_OK);
    CU_ASSERT_EQUAL(j.found, first); /* from the cache: the token no longer has it */
    j.step = 2;
    CU_ASSERT_EQUAL(hf_pool_run(pool, object_work, &j), CKR_OK);
    CU_ASSERT_EQUAL(j.found, CK_INVALID_HANDLE);
    hf_pool_close(pool);
}

static void *closer_main(void *arg)
{
    hf_pool_close(arg);
    return NULL;
}

static void test_close_waits_for_the_call_in_flight(void)
{
    struct hf_pool *pool = pool_open(2, 8, 50);
    struct caller c;
    pthread_t closer;
    uint64_t t0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    hold_set(A, true);
    CU_ASSERT_FATAL(caller_start(&c, pool));
    CU_ASSERT_FATAL(held_wait(A, 1));
    CU_ASSERT_EQUAL_FATAL(pthread_create(&closer, NULL, closer_main, pool), 0);
    sleep_ms(100);
    CU_ASSERT_FALSE(atomic_load(&c.done));
    t0 = ms_now();
    hold_set(A, false);
    pthread_join(c.thread, NULL);
    pthread_join(closer, NULL); /* returns once the call ended; the pool is gone */
    CU_ASSERT_EQUAL(c.rv, CKR_OK);
    CU_ASSERT_TRUE(ms_now() - t0 < 1000);
}

static void test_open_refuses_a_wrong_pin(void)
{
    struct hf_pool_member_spec specs[1] = {
        {"a", HF_SOFTHSM_MODULE, TOKEN_A, "not-the-pin", softhsm.lock_path, 1},
    };
    struct hf_pool *pool = NULL;

    CU_ASSERT_EQUAL(hf_pool_open(specs, 1, NULL, &pool), CKR_PIN_INCORRECT);
    CU_ASSERT_PTR_NULL(pool);
    specs[0].concurrency = 0;
    CU_ASSERT_EQUAL(hf_pool_open(specs, 1, NULL, &pool), CKR_ARGUMENTS_BAD);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"a call runs on one member", test_a_call_runs_on_one_member},
        {"device error on A moves calls to B and takes A out",
         test_device_error_on_a_moves_calls_to_b_and_takes_a_out},
        {"key handle invalid is the answer and fails nobody over",
         test_key_handle_invalid_is_the_answer_and_fails_nobody_over},
        {"general error takes a member out only when the retry succeeds",
         test_general_error_takes_a_member_out_only_when_the_retry_succeeds},
        {"both members failing is device error at once",
         test_both_members_failing_is_device_error_at_once},
        {"a member comes back through the probe, once",
         test_a_member_comes_back_through_the_probe_once},
        {"a call past its timeout takes its member out",
         test_a_call_past_its_timeout_takes_its_member_out},
        {"next call goes to the member with fewer in flight",
         test_next_call_goes_to_the_member_with_fewer_in_flight},
        {"a caller waits while every member is at its limit",
         test_a_caller_waits_while_every_member_is_at_its_limit},
        {"a full queue is throttled at once", test_a_full_queue_is_throttled_at_once},
        {"many threads with random failures on A all succeed",
         test_many_threads_with_random_failures_on_a_all_succeed},
        {"object handles are cached per member until forgotten",
         test_object_handles_are_cached_per_member_until_forgotten},
        {"close waits for the call in flight", test_close_waits_for_the_call_in_flight},
        {"open refuses a wrong PIN", test_open_refuses_a_wrong_pin},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"HSM pool executor", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
