/* hf-load's statistics: the histogram's percentiles on known samples, its error bound, merging,
 * and the phase accounting that decides which operations the table counts. */
#include "hf-build.h"

#include "tests/load/load.h"
#include "tests/unit/harness.h"

#include <stdlib.h>
#include <string.h>

static struct hf_hist *hist_new(void)
{
    struct hf_hist *h = calloc(1, sizeof(*h));
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    return h;
}

static void test_percentiles_exact_below_128us(void)
{
    struct hf_hist *h = hist_new();

    /* Shuffled insertion order must not matter. */
    for (uint64_t v = 100; v >= 1; v--)
        hf_hist_record(h, v);
    CU_ASSERT_EQUAL(h->count, 100);
    CU_ASSERT_EQUAL(h->min_us, 1);
    CU_ASSERT_EQUAL(h->max_us, 100);
    CU_ASSERT_EQUAL(hf_hist_percentile(h, 50), 50);
    CU_ASSERT_EQUAL(hf_hist_percentile(h, 90), 90);
    CU_ASSERT_EQUAL(hf_hist_percentile(h, 99), 99);
    CU_ASSERT_EQUAL(hf_hist_percentile(h, 100), 100);
    CU_ASSERT_EQUAL(hf_hist_percentile(h, 0.5), 1);
    CU_ASSERT_DOUBLE_EQUAL(hf_hist_mean_us(h), 50.5, 1e-9);
    free(h);
}

static void test_percentile_is_nearest_rank(void)
{
    struct hf_hist *h = hist_new();

    /* Ten samples: p90 is the 9th (nearest rank), not the 10th nor an interpolation. */
    for (uint64_t v = 1; v <= 10; v++)
        hf_hist_record(h, v * 10);
    CU_ASSERT_EQUAL(hf_hist_percentile(h, 90), 90);
    CU_ASSERT_EQUAL(hf_hist_percentile(h, 91), 100);
    CU_ASSERT_EQUAL(hf_hist_percentile(h, 10), 10);
    CU_ASSERT_EQUAL(hf_hist_percentile(h, 50), 50);
    free(h);
}

static void test_percentiles_of_milliseconds_within_one_percent(void)
{
    struct hf_hist *h = hist_new();
    const double ps[] = {50, 90, 99, 99.9};

    /* 1..10000 ms: the p-th percentile is p% of 10 s. */
    for (uint64_t ms = 1; ms <= 10000; ms++)
        hf_hist_record(h, ms * 1000);
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        double want = ps[i] / 100.0 * 10000.0 * 1000.0;
        double got = (double)hf_hist_percentile(h, ps[i]);
        CU_ASSERT(got >= want);        /* a bucket reports its highest value */
        CU_ASSERT(got <= want * 1.01); /* and is never more than 1/128 above */
    }
    CU_ASSERT_EQUAL(hf_hist_percentile(h, 100), 10000 * 1000);
    free(h);
}

static void test_buckets_bound_relative_error(void)
{
    size_t prev = 0;

    for (uint64_t v = 0; v < (1ull << 36); v = v < 1000 ? v + 1 : v + v / 97) {
        size_t i = hf_hist_index(v);
        uint64_t high = hf_hist_bucket_high(i);

        CU_ASSERT_FATAL(i < HF_HIST_BUCKETS);
        CU_ASSERT_FATAL(i >= prev); /* monotonic: order is kept */
        CU_ASSERT_FATAL(high >= v);
        CU_ASSERT_FATAL(high - v <= v / HF_HIST_SUB_COUNT);
        prev = i;
    }
    /* Below 256 us every value has its own bucket. */
    for (uint64_t v = 0; v < 256; v++)
        CU_ASSERT_EQUAL(hf_hist_bucket_high(hf_hist_index(v)), v);
}

static void test_huge_values_are_clamped_not_lost(void)
{
    struct hf_hist *h = hist_new();
    uint64_t huge = 1ull << 50;

    hf_hist_record(h, 5);
    hf_hist_record(h, huge);
    CU_ASSERT_EQUAL(hf_hist_index(huge), HF_HIST_BUCKETS - 1);
    CU_ASSERT_EQUAL(h->count, 2);
    CU_ASSERT_EQUAL(hf_hist_percentile(h, 100), huge);
    CU_ASSERT_EQUAL(hf_hist_percentile(h, 50), 5);
    free(h);
}

static void test_empty_histogram_reports_zero(void)
{
    struct hf_hist *h = hist_new();

    CU_ASSERT_EQUAL(hf_hist_percentile(h, 90), 0);
    CU_ASSERT_DOUBLE_EQUAL(hf_hist_mean_us(h), 0, 1e-12);
    free(h);
}

static void test_merge_equals_one_histogram(void)
{
    struct hf_hist *a = hist_new(), *b = hist_new(), *all = hist_new(), *sum = hist_new();

    /* Two threads' halves, interleaved values. */
    for (uint64_t v = 1; v <= 20000; v++) {
        uint64_t us = v * 37 % 150001;
        hf_hist_record(v % 2 ? a : b, us);
        hf_hist_record(all, us);
    }
    hf_hist_merge(sum, a);
    hf_hist_merge(sum, b);
    CU_ASSERT_EQUAL(sum->count, all->count);
    CU_ASSERT_EQUAL(sum->sum_us, all->sum_us);
    CU_ASSERT_EQUAL(sum->min_us, all->min_us);
    CU_ASSERT_EQUAL(sum->max_us, all->max_us);
    CU_ASSERT_EQUAL(memcmp(sum->counts, all->counts, sizeof(all->counts)), 0);
    CU_ASSERT_EQUAL(hf_hist_percentile(sum, 90), hf_hist_percentile(all, 90));
    free(a);
    free(b);
    free(all);
    free(sum);
}

static const struct hf_phase_plan seeds_plan = {
    .ramp_up_us = 5000000, .steady_us = 30000000, .ramp_down_us = 5000000, .vus = 10};

static void test_phase_boundaries_are_half_open(void)
{
    const struct hf_phase_plan *p = &seeds_plan;

    CU_ASSERT_EQUAL(hf_phase_of(p, 0), HF_PHASE_RAMP_UP);
    CU_ASSERT_EQUAL(hf_phase_of(p, 4999999), HF_PHASE_RAMP_UP);
    CU_ASSERT_EQUAL(hf_phase_of(p, 5000000), HF_PHASE_STEADY);
    CU_ASSERT_EQUAL(hf_phase_of(p, 34999999), HF_PHASE_STEADY);
    CU_ASSERT_EQUAL(hf_phase_of(p, 35000000), HF_PHASE_RAMP_DOWN);
    CU_ASSERT_EQUAL(hf_phase_of(p, 39999999), HF_PHASE_RAMP_DOWN);
    CU_ASSERT_EQUAL(hf_phase_of(p, 40000000), HF_PHASE_TAIL);
    CU_ASSERT_EQUAL(hf_phase_end_us(p), 40000000);
}

static void test_phase_without_ramps_is_all_steady(void)
{
    const struct hf_phase_plan p = {.steady_us = 1000000, .vus = 3};

    CU_ASSERT_EQUAL(hf_phase_of(&p, 0), HF_PHASE_STEADY);
    CU_ASSERT_EQUAL(hf_phase_of(&p, 999999), HF_PHASE_STEADY);
    CU_ASSERT_EQUAL(hf_phase_of(&p, 1000000), HF_PHASE_TAIL);
    for (unsigned i = 0; i < p.vus; i++) {
        CU_ASSERT_EQUAL(hf_phase_vu_start_us(&p, i), 0);
        CU_ASSERT_EQUAL(hf_phase_vu_stop_us(&p, i), 1000000);
    }
}

/* The number of VUs running at t rises linearly over the ramp-up, holds, and falls. */
static unsigned running_at(const struct hf_phase_plan *p, uint64_t t)
{
    unsigned n = 0;

    for (unsigned i = 0; i < p->vus; i++)
        n += hf_phase_vu_start_us(p, i) <= t && t < hf_phase_vu_stop_us(p, i);
    return n;
}

static void test_vus_ramp_linearly(void)
{
    const struct hf_phase_plan *p = &seeds_plan;

    CU_ASSERT_EQUAL(running_at(p, 0), 1);
    CU_ASSERT_EQUAL(running_at(p, 2500000), 6); /* halfway up: VUs 0..5 */
    CU_ASSERT_EQUAL(running_at(p, 4999999), 10);
    CU_ASSERT_EQUAL(running_at(p, 5000000), 10);
    CU_ASSERT_EQUAL(running_at(p, 34999999), 10);
    CU_ASSERT_EQUAL(running_at(p, 37500000), 5); /* halfway down */
    CU_ASSERT_EQUAL(running_at(p, 39999999), 1);
    CU_ASSERT_EQUAL(running_at(p, 40000000), 0);
    for (unsigned i = 0; i < p->vus; i++) {
        CU_ASSERT(hf_phase_vu_start_us(p, i) < p->ramp_up_us);
        CU_ASSERT(hf_phase_vu_stop_us(p, i) > p->ramp_up_us + p->steady_us);
        CU_ASSERT(hf_phase_vu_stop_us(p, i) <= hf_phase_end_us(p));
    }
}

/* A closed loop with a fixed latency L: VU i completes operations at start_i + k*L and starts
 * none after its stop time. The steady phase must count exactly vus * steady / L of them. */
static void simulate(const struct hf_phase_plan *p, uint64_t latency, struct hf_level_stats *s)
{
    hf_level_stats_reset(s);
    for (unsigned i = 0; i < p->vus; i++) {
        uint64_t t = hf_phase_vu_start_us(p, i), stop = hf_phase_vu_stop_us(p, i);

        while (t < stop) {
            t += latency;
            hf_level_stats_add_op(s, p, t, latency);
        }
    }
}

static void test_closed_loop_counts_steady_only(void)
{
    const struct hf_phase_plan p = {
        .ramp_up_us = 1000000, .steady_us = 2000000, .ramp_down_us = 1000000, .vus = 10};
    struct hf_level_stats *s = calloc(1, sizeof(*s));
    struct hf_level_result r;

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    simulate(&p, 10000, s);
    CU_ASSERT_EQUAL(s->ops[HF_PHASE_STEADY], 10 * 200); /* 2 s / 10 ms per VU */
    CU_ASSERT_EQUAL(s->steady.count, s->ops[HF_PHASE_STEADY]);
    CU_ASSERT(s->ops[HF_PHASE_RAMP_UP] > 0);
    CU_ASSERT(s->ops[HF_PHASE_RAMP_DOWN] > 0);
    CU_ASSERT_EQUAL(s->all.count, hf_level_stats_total_ops(s));

    hf_level_result_compute(s, &p, 250, &r);
    CU_ASSERT_EQUAL(r.vus, 10);
    CU_ASSERT_EQUAL(r.steady_ops, 2000);
    CU_ASSERT_DOUBLE_EQUAL(r.ops_per_s, 1000.0, 1e-9); /* Little's law: vus / latency */
    CU_ASSERT_EQUAL(r.total_ops, hf_level_stats_total_ops(s));
    CU_ASSERT_DOUBLE_EQUAL(r.run_ops_per_s, (double)r.total_ops / 4.0, 1e-9);
    CU_ASSERT(r.run_ops_per_s < r.ops_per_s); /* the ramps run fewer VUs */
    CU_ASSERT_DOUBLE_EQUAL(r.p90_ms, 10.0, 0.1);
    CU_ASSERT_FALSE(r.over_limit);
    CU_ASSERT_EQUAL(r.errors, 0);

    hf_level_result_compute(s, &p, 5, &r);
    CU_ASSERT_TRUE(r.over_limit);
    free(s);
}

static void test_level_without_steady_ops_is_over_limit(void)
{
    const struct hf_phase_plan p = {.steady_us = 1000000, .vus = 1};
    struct hf_level_stats *s = calloc(1, sizeof(*s));
    struct hf_level_result r;

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    s->status[401] = 7;
    s->terr[HF_TERR_TIMEOUT] = 2;
    hf_level_result_compute(s, &p, 250, &r);
    CU_ASSERT_TRUE(r.over_limit); /* a dead server is not "within the limit" */
    CU_ASSERT_EQUAL(r.errors, 9);
    CU_ASSERT_EQUAL(r.total_ops, 0);
    free(s);
}

static void test_level_with_many_errors_is_over_limit(void)
{
    const struct hf_phase_plan p = {.steady_us = 1000000, .vus = 1};
    struct hf_level_stats *s = calloc(1, sizeof(*s));
    struct hf_level_result r;

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    for (int i = 0; i < 990; i++)
        hf_level_stats_add_op(s, &p, 500000, 1000);
    s->status[429] = 10; /* exactly 1% of 1000 requests: still within */
    hf_level_result_compute(s, &p, 250, &r);
    CU_ASSERT_FALSE(r.over_limit);
    s->status[429] = 11;
    hf_level_result_compute(s, &p, 250, &r);
    CU_ASSERT_TRUE(r.over_limit);
    free(s);
}

static void test_stats_merge_adds_everything(void)
{
    const struct hf_phase_plan p = {.ramp_up_us = 100, .steady_us = 100, .vus = 1};
    struct hf_level_stats *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));

    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    hf_level_stats_add_op(a, &p, 50, 7);  /* ramp-up */
    hf_level_stats_add_op(b, &p, 150, 9); /* steady */
    hf_level_stats_add_op(b, &p, 500, 9); /* tail */
    b->status[503] = 1;
    b->terr[HF_TERR_CLOSED] = 2;
    b->setup_ops = 3;
    hf_level_stats_merge(a, b);
    CU_ASSERT_EQUAL(a->ops[HF_PHASE_RAMP_UP], 1);
    CU_ASSERT_EQUAL(a->ops[HF_PHASE_STEADY], 1);
    CU_ASSERT_EQUAL(a->ops[HF_PHASE_TAIL], 1);
    CU_ASSERT_EQUAL(hf_level_stats_total_ops(a), 3);
    CU_ASSERT_EQUAL(hf_level_stats_errors(a), 3);
    CU_ASSERT_EQUAL(a->setup_ops, 3);
    CU_ASSERT_EQUAL(a->steady.count, 1);
    CU_ASSERT_EQUAL(a->all.count, 3);
    free(a);
    free(b);
}

/* A failover test reads each slice's errors and p99: an operation or a failure lands in the
 * slice its completion time falls in (half-open, the last slice open-ended), and merging keeps
 * the slices apart. */
static void test_intervals_split_by_completion_time(void)
{
    struct hf_phase_plan p = {.steady_us = 3000, .vus = 1,
                              .interval_ends_us = {1000, 2000}, .ninterval_ends = 2};
    struct hf_level_stats *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));

    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(hf_interval_of(&p, 0), 0);
    CU_ASSERT_EQUAL(hf_interval_of(&p, 999), 0);
    CU_ASSERT_EQUAL(hf_interval_of(&p, 1000), 1);
    CU_ASSERT_EQUAL(hf_interval_of(&p, 2000), 2);
    CU_ASSERT_EQUAL(hf_interval_of(&p, 9000), 2); /* the tail counts in the last slice */
    hf_level_stats_add_op(a, &p, 10, 100);
    hf_level_stats_add_op(b, &p, 1500, 7000);
    hf_level_stats_add_op(b, &p, 1600, 9000);
    hf_level_stats_add_error(b, &p, 1700);
    hf_level_stats_add_op(a, &p, 2500, 300);
    hf_level_stats_merge(a, b);
    CU_ASSERT_EQUAL(a->interval_ops[0], 1);
    CU_ASSERT_EQUAL(a->interval_ops[1], 2);
    CU_ASSERT_EQUAL(a->interval_ops[2], 1);
    CU_ASSERT_EQUAL(a->interval_errors[0], 0);
    CU_ASSERT_EQUAL(a->interval_errors[1], 1);
    CU_ASSERT_EQUAL(a->interval_errors[2], 0);
    CU_ASSERT_EQUAL(a->interval_hist[1].max_us, 9000);
    CU_ASSERT_EQUAL(a->interval_hist[0].max_us, 100);
    CU_ASSERT_EQUAL(hf_hist_percentile(&a->interval_hist[2], 99), 300);
    /* Without --intervals nothing is sliced. */
    p.ninterval_ends = 0;
    memset(a, 0, sizeof(*a));
    hf_level_stats_add_op(a, &p, 1500, 10);
    hf_level_stats_add_error(a, &p, 1500);
    CU_ASSERT_EQUAL(a->interval_ops[0] + a->interval_ops[1] + a->interval_errors[1], 0);
    free(a);
    free(b);
}

static CU_TestInfo hist_tests[] = {
    {"percentiles are exact below 128 us", test_percentiles_exact_below_128us},
    {"a percentile is the nearest rank", test_percentile_is_nearest_rank},
    {"percentiles of 1..10000 ms are within 1%",
     test_percentiles_of_milliseconds_within_one_percent},
    {"buckets bound the relative error by 1/128", test_buckets_bound_relative_error},
    {"huge values are clamped, not lost", test_huge_values_are_clamped_not_lost},
    {"an empty histogram reports 0", test_empty_histogram_reports_zero},
    {"merged histograms equal one histogram", test_merge_equals_one_histogram},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo phase_tests[] = {
    {"phase boundaries are half-open", test_phase_boundaries_are_half_open},
    {"no ramps: the whole run is steady", test_phase_without_ramps_is_all_steady},
    {"VUs ramp up and down linearly", test_vus_ramp_linearly},
    {"a closed loop counts steady operations only", test_closed_loop_counts_steady_only},
    {"a level without steady ops is over the limit", test_level_without_steady_ops_is_over_limit},
    {"over 1% errors is over the limit", test_level_with_many_errors_is_over_limit},
    {"merging level stats adds every count", test_stats_merge_adds_everything},
    {"intervals split by completion time", test_intervals_split_by_completion_time},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"load-histogram", NULL, NULL, NULL, NULL, hist_tests},
    {"load-phases", NULL, NULL, NULL, NULL, phase_tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return hf_test_run(suites);
}
