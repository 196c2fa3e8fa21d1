/* The token bucket (gateway/rate.c) and the clock and deadline it runs on (gateway/clock.c,
 * hf_request_past_deadline). The bucket is driven with a clock of the test's own
 * (hf_gw_rate_allow_at), so refill is asserted exactly, never by sleeping. */
#include "hf-build.h"

#include "gateway/plugin.h"
#include "gateway/rate.h"
#include "gateway/request.h"
#include "tests/unit/harness.h"

#include <pthread.h>
#include <time.h>

#define T0 1000000000u /* an instant after the bucket's creation on any machine's clock */

static unsigned allowed_at(struct hf_rate *rate, uint64_t now_us, unsigned tries)
{
    unsigned n = 0;

    for (unsigned i = 0; i < tries; i++)
        n += hf_gw_rate_allow_at(rate, now_us);
    return n;
}

static void test_a_full_burst_then_refusal(void)
{
    struct hf_rate *rate = hf_rate_new(10, 4);

    CU_ASSERT_FATAL(rate != NULL);
    CU_ASSERT_EQUAL(allowed_at(rate, hf_now_us() + T0, 10), 4);
    CU_ASSERT_FALSE(hf_gw_rate_allow_at(rate, hf_now_us() + T0));
    hf_rate_free(rate);
}

static void test_refill_follows_time_up_to_the_burst(void)
{
    struct hf_rate *rate = hf_rate_new(10, 4);
    uint64_t t = hf_now_us() + T0;

    CU_ASSERT_FATAL(rate != NULL);
    CU_ASSERT_EQUAL(allowed_at(rate, t, 10), 4);
    /* 10 a second: one token per 100 ms, none before (probes off the exact boundaries, where
     * the sum of fractions would be a rounding question). */
    CU_ASSERT_EQUAL(allowed_at(rate, t + 99000, 3), 0);
    CU_ASSERT_EQUAL(allowed_at(rate, t + 101000, 3), 1);
    CU_ASSERT_EQUAL(allowed_at(rate, t + 350000, 3), 2);
    /* An hour idle fills it to the burst, no more. */
    CU_ASSERT_EQUAL(allowed_at(rate, t + 3600000000u, 10), 4);
    /* A clock read before the last one (another thread's, late) adds nothing. */
    CU_ASSERT_EQUAL(allowed_at(rate, t, 3), 0);
    hf_rate_free(rate);
}

static void test_burst_defaults_to_one_second(void)
{
    struct hf_rate *rate = hf_rate_new(3, 0), *slow = hf_rate_new(0.5, 0);

    CU_ASSERT_FATAL(rate != NULL && slow != NULL);
    CU_ASSERT_EQUAL(allowed_at(rate, hf_now_us() + T0, 10), 3);
    /* Under one token a second still holds one, or it would refuse every call. */
    CU_ASSERT_EQUAL(allowed_at(slow, hf_now_us() + T0, 10), 1);
    hf_rate_free(rate);
    hf_rate_free(slow);
}

static void test_no_rate_allows_everything(void)
{
    struct hf_rate *rate = hf_rate_new(0, 0), *bad = hf_rate_new(-5, -1);

    CU_ASSERT_FATAL(rate != NULL && bad != NULL);
    CU_ASSERT_EQUAL(allowed_at(rate, hf_now_us(), 1000), 1000);
    CU_ASSERT_EQUAL(allowed_at(bad, hf_now_us(), 1000), 1000);
    CU_ASSERT_TRUE(hf_rate_allow(NULL));
    hf_rate_free(rate);
    hf_rate_free(bad);
    hf_rate_free(NULL);
}

/* The real clock: a bucket refilling once in 1000 s cannot refill during the test. */
static void test_the_real_clock_spends_the_burst(void)
{
    struct hf_rate *rate = hf_rate_new(0.001, 5);
    unsigned n = 0;

    CU_ASSERT_FATAL(rate != NULL);
    for (int i = 0; i < 20; i++)
        n += hf_rate_allow(rate);
    CU_ASSERT_EQUAL(n, 5);
    hf_rate_free(rate);
}

struct taker {
    struct hf_rate *rate;
    uint64_t now;
    unsigned got;
};

static void *take(void *arg)
{
    struct taker *t = arg;

    t->got = allowed_at(t->rate, t->now, 200000);
    return NULL;
}

/* Four threads at one instant share the burst: exactly its tokens go out, none twice (without
 * the lock, concurrent read-modify-writes of the count hand out more). */
static void test_threads_share_one_bucket(void)
{
    struct hf_rate *rate = hf_rate_new(1, 400000);
    struct taker t[4];
    pthread_t th[4];
    unsigned total = 0;

    CU_ASSERT_FATAL(rate != NULL);
    for (int i = 0; i < 4; i++) {
        t[i] = (struct taker){rate, hf_now_us() + T0, 0};
        CU_ASSERT_FATAL(pthread_create(&th[i], NULL, take, &t[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += t[i].got;
    }
    /* The instants differ by the threads' start times: under a millisecond of 1/s refill. */
    CU_ASSERT_EQUAL(total, 400000);
    hf_rate_free(rate);
}

static void test_the_clocks(void)
{
    uint64_t a = hf_now_us(), b = hf_now_us();
    struct timespec mono;
    int64_t wall = hf_wall_s();

    CU_ASSERT_TRUE(b >= a);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    CU_ASSERT_TRUE((uint64_t)mono.tv_sec * 1000000u >= a - 1000000u);
    CU_ASSERT_TRUE(wall >= (int64_t)time(NULL) - 1 && wall <= (int64_t)time(NULL) + 1);
    CU_ASSERT_TRUE(wall > 1700000000); /* seconds since the epoch, not since boot */
}

static void test_the_deadline_counts_from_arrival(void)
{
    struct hf_request *req = hf_request_new("POST", "/x");

    CU_ASSERT_FATAL(req != NULL);
    req->received_us = hf_now_us() - 300000; /* arrived 300 ms ago */
    CU_ASSERT_TRUE(hf_request_past_deadline(req, 250));
    CU_ASSERT_TRUE(hf_request_past_deadline(req, 299));
    CU_ASSERT_FALSE(hf_request_past_deadline(req, 1000));
    CU_ASSERT_FALSE(hf_request_past_deadline(req, 0)); /* 0: no deadline */
    req->received_us = 0;                              /* no arrival time known */
    CU_ASSERT_FALSE(hf_request_past_deadline(req, 1));
    req->received_us = hf_now_us() + 5000000; /* a clock read ahead: never past */
    CU_ASSERT_FALSE(hf_request_past_deadline(req, 1));
    CU_ASSERT_FALSE(hf_request_past_deadline(NULL, 1));
    hf_request_free(req);
}

/* The failing forms end the request with the caller's status and say why, or leave it alone. */
static void test_the_deadline_and_rate_checks_fail_the_request(void)
{
    struct hf_request *late = hf_request_new("POST", "/x"), *on_time = hf_request_new("POST", "/x");
    struct hf_request *throttled = hf_request_new("POST", "/x");
    struct hf_rate *rate = hf_rate_new(2, 2);

    CU_ASSERT_FATAL(late && on_time && throttled && rate);
    late->received_us = hf_now_us() - 300000;
    on_time->received_us = hf_now_us();
    CU_ASSERT_EQUAL(hf_request_deadline_check(late, 250, HF_STATUS_TIMEOUT), HF_STATUS_TIMEOUT);
    CU_ASSERT_EQUAL(late->status, HF_STATUS_TIMEOUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(late->message, "over the 250 ms deadline"));
    CU_ASSERT_EQUAL(hf_request_deadline_check(on_time, 250, HF_STATUS_TIMEOUT), HF_STATUS_OK);
    CU_ASSERT_EQUAL(on_time->status, HF_STATUS_OK);
    CU_ASSERT_EQUAL(hf_request_rate_check(throttled, rate, "endpoint e"), HF_STATUS_OK);
    CU_ASSERT_EQUAL(hf_request_rate_check(throttled, rate, "endpoint e"), HF_STATUS_OK);
    CU_ASSERT_EQUAL(throttled->status, HF_STATUS_OK);
    CU_ASSERT_EQUAL(hf_request_rate_check(throttled, rate, "endpoint e"), HF_STATUS_THROTTLED);
    CU_ASSERT_STRING_EQUAL(throttled->message, "endpoint e is over its rate limit of 2 per second");
    hf_rate_free(rate);
    hf_request_free(late);
    hf_request_free(on_time);
    hf_request_free(throttled);
}

/* A request on an HSM pool key runs its handler twice (server.c: once on the listener, cut short
 * at its key, then on the pool's worker): its second run takes no second token, while another
 * request still pays for its own. */
static void test_a_handler_run_again_is_not_charged_twice(void)
{
    struct hf_request *req = hf_request_new("POST", "/x"), *other = hf_request_new("POST", "/x");
    struct hf_rate *rate = hf_rate_new(0.001, 1);

    CU_ASSERT_FATAL(req && other && rate);
    CU_ASSERT_EQUAL(hf_request_rate_check(req, rate, "endpoint e"), HF_STATUS_OK);
    hf_gw_request_rerun_reset(req);
    CU_ASSERT_EQUAL(hf_request_rate_check(req, rate, "endpoint e"), HF_STATUS_OK);
    CU_ASSERT_EQUAL(req->status, HF_STATUS_OK);
    CU_ASSERT_EQUAL(hf_request_rate_check(other, rate, "endpoint e"), HF_STATUS_THROTTLED);
    /* The first run was refused: the second run is refused too, not let through on a token
     * it never had. */
    hf_gw_request_rerun_reset(other);
    CU_ASSERT_EQUAL(hf_request_rate_check(other, rate, "endpoint e"), HF_STATUS_THROTTLED);
    hf_rate_free(rate);
    hf_request_free(req);
    hf_request_free(other);
}

static CU_TestInfo rate_tests[] = {
    {"a handler run again is not charged twice", test_a_handler_run_again_is_not_charged_twice},
    {"the deadline and rate checks fail the request with its status",
     test_the_deadline_and_rate_checks_fail_the_request},
    {"a full burst goes out, then calls are refused", test_a_full_burst_then_refusal},
    {"tokens come back with time, up to the burst", test_refill_follows_time_up_to_the_burst},
    {"burst 0 holds one second of the rate, and at least one token",
     test_burst_defaults_to_one_second},
    {"no rate, a negative one and a NULL bucket limit nothing", test_no_rate_allows_everything},
    {"on the real clock the burst is spent and then refused", test_the_real_clock_spends_the_burst},
    {"threads at one instant share exactly the burst", test_threads_share_one_bucket},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo clock_tests[] = {
    {"the monotonic clock in microseconds, the wall clock in epoch seconds", test_the_clocks},
    {"a request is past its deadline only once it is older", test_the_deadline_counts_from_arrival},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-rate", NULL, NULL, NULL, NULL, rate_tests},
        {"gateway-clock", NULL, NULL, NULL, NULL, clock_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
