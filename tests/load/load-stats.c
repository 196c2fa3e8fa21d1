/* hf-load statistics: the log-linear latency histogram, the k6-style phase plan, and the
 * accounting of one VU level. Pure functions over plain structs, so the unit tests drive them
 * with known samples. */
#include "hf-build.h"

#include "tests/load/load.h"

#include <math.h>
#include <string.h>

void hf_hist_reset(struct hf_hist *h)
{
    if (!h) return;
    memset(h, 0, sizeof(*h));
}

size_t hf_hist_index(uint64_t v)
{
    unsigned k, shift;

    if (v < HF_HIST_SUB_COUNT) return (size_t)v;
    k = 63u - (unsigned)__builtin_clzll(v); /* floor(log2 v) >= HF_HIST_SUB_BITS */
    if (k >= HF_HIST_MAX_BITS) return HF_HIST_BUCKETS - 1;
    shift = k - HF_HIST_SUB_BITS;
    /* v >> shift lies in [SUB_COUNT, 2 * SUB_COUNT): the sub-bucket within this power of two. */
    return HF_HIST_SUB_COUNT + (size_t)shift * HF_HIST_SUB_COUNT +
           (size_t)((v >> shift) - HF_HIST_SUB_COUNT);
}

uint64_t hf_hist_bucket_high(size_t index)
{
    size_t g, s;

    if (index < HF_HIST_SUB_COUNT) return index;
    if (index >= HF_HIST_BUCKETS) index = HF_HIST_BUCKETS - 1;
    g = (index - HF_HIST_SUB_COUNT) / HF_HIST_SUB_COUNT; /* the shift of this power of two */
    s = (index - HF_HIST_SUB_COUNT) % HF_HIST_SUB_COUNT;
    return (((uint64_t)(HF_HIST_SUB_COUNT + s)) << g) + (((uint64_t)1 << g) - 1);
}

void hf_hist_record(struct hf_hist *h, uint64_t v)
{
    if (!h) return;
    if (h->count == 0 || v < h->min_us) h->min_us = v;
    if (v > h->max_us) h->max_us = v;
    h->count++;
    h->sum_us += v;
    h->counts[hf_hist_index(v)]++;
}

void hf_hist_merge(struct hf_hist *dst, const struct hf_hist *src)
{
    size_t i;

    if (!dst || !src || src->count == 0) return;
    if (dst->count == 0 || src->min_us < dst->min_us) dst->min_us = src->min_us;
    if (src->max_us > dst->max_us) dst->max_us = src->max_us;
    dst->count += src->count;
    dst->sum_us += src->sum_us;
    for (i = 0; i < HF_HIST_BUCKETS; i++)
        dst->counts[i] += src->counts[i];
}

uint64_t hf_hist_percentile(const struct hf_hist *h, double p)
{
    uint64_t rank, seen = 0, v;
    double r;
    size_t i;

    if (!h || h->count == 0 || !(p > 0.0)) return 0;
    if (p >= 100.0) return h->max_us;
    /* Nearest rank: ceil(p/100 * N); the small epsilon keeps 90% of 10 at rank 9 despite
     * binary floating point. */
    r = ceil(p / 100.0 * (double)h->count - 1e-9);
    rank = r < 1.0 ? 1 : (uint64_t)r;
    for (i = 0; i < HF_HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) break;
    }
    v = hf_hist_bucket_high(i);
    if (v > h->max_us) v = h->max_us;
    if (v < h->min_us) v = h->min_us;
    return v;
}

double hf_hist_mean_us(const struct hf_hist *h)
{
    if (!h || h->count == 0) return 0.0;
    return (double)h->sum_us / (double)h->count;
}

uint64_t hf_phase_end_us(const struct hf_phase_plan *plan)
{
    return plan->ramp_up_us + plan->steady_us + plan->ramp_down_us;
}

enum hf_phase hf_phase_of(const struct hf_phase_plan *plan, uint64_t t)
{
    if (t < plan->ramp_up_us) return HF_PHASE_RAMP_UP;
    t -= plan->ramp_up_us;
    if (t < plan->steady_us) return HF_PHASE_STEADY;
    t -= plan->steady_us;
    if (t < plan->ramp_down_us) return HF_PHASE_RAMP_DOWN;
    return HF_PHASE_TAIL;
}

uint64_t hf_phase_vu_start_us(const struct hf_phase_plan *plan, unsigned i)
{
    if (plan->vus == 0 || i >= plan->vus) return plan->ramp_up_us;
    /* VU i joins when the target count ramp_up-linearly reaches i: VU 0 at once, the last one
     * a step before the steady phase, so the steady phase runs all VUs. */
    return plan->ramp_up_us * i / plan->vus;
}

uint64_t hf_phase_vu_stop_us(const struct hf_phase_plan *plan, unsigned i)
{
    uint64_t steady_end = plan->ramp_up_us + plan->steady_us;

    if (plan->vus == 0 || i >= plan->vus) return steady_end;
    /* The last VU leaves first, a step into the ramp-down; VU 0 leaves at its end. */
    return steady_end + plan->ramp_down_us * (plan->vus - i) / plan->vus;
}

const char *hf_phase_name(enum hf_phase phase)
{
    static const char *const names[HF_PHASE_COUNT] = {"ramp-up", "steady", "ramp-down", "tail"};
    return (unsigned)phase < HF_PHASE_COUNT ? names[phase] : "?";
}

size_t hf_interval_of(const struct hf_phase_plan *plan, uint64_t t_us)
{
    size_t i = 0;

    while (i < plan->ninterval_ends && t_us >= plan->interval_ends_us[i])
        i++;
    return i;
}

const char *hf_terr_name(enum hf_terr kind)
{
    static const char *const names[HF_TERR_COUNT] = {"connect",  "tls",      "timeout",  "closed",
                                                     "protocol", "bad-body", "abandoned"};
    return (unsigned)kind < HF_TERR_COUNT ? names[kind] : "?";
}

void hf_level_stats_reset(struct hf_level_stats *s)
{
    if (!s) return;
    memset(s, 0, sizeof(*s));
}

void hf_level_stats_merge(struct hf_level_stats *dst, const struct hf_level_stats *src)
{
    size_t i;

    for (i = 0; i < HF_PHASE_COUNT; i++)
        dst->ops[i] += src->ops[i];
    dst->setup_ops += src->setup_ops;
    dst->reconnects += src->reconnects;
    dst->retries += src->retries;
    for (i = 0; i < HF_STATUS_SLOTS; i++)
        dst->status[i] += src->status[i];
    for (i = 0; i < HF_TERR_COUNT; i++)
        dst->terr[i] += src->terr[i];
    hf_hist_merge(&dst->steady, &src->steady);
    hf_hist_merge(&dst->all, &src->all);
    for (i = 0; i < HF_INTERVALS_MAX; i++) {
        dst->interval_ops[i] += src->interval_ops[i];
        dst->interval_errors[i] += src->interval_errors[i];
        hf_hist_merge(&dst->interval_hist[i], &src->interval_hist[i]);
    }
}

void hf_level_stats_add_op(struct hf_level_stats *s, const struct hf_phase_plan *plan,
                           uint64_t t_us, uint64_t latency_us)
{
    enum hf_phase phase = hf_phase_of(plan, t_us);

    s->ops[phase]++;
    hf_hist_record(&s->all, latency_us);
    if (phase == HF_PHASE_STEADY) hf_hist_record(&s->steady, latency_us);
    if (plan->ninterval_ends) {
        size_t k = hf_interval_of(plan, t_us);

        s->interval_ops[k]++;
        hf_hist_record(&s->interval_hist[k], latency_us);
    }
}

void hf_level_stats_add_error(struct hf_level_stats *s, const struct hf_phase_plan *plan,
                              uint64_t t_us)
{
    if (plan->ninterval_ends) s->interval_errors[hf_interval_of(plan, t_us)]++;
}

uint64_t hf_level_stats_errors(const struct hf_level_stats *s)
{
    uint64_t n = 0;
    size_t i;

    for (i = 0; i < HF_STATUS_SLOTS; i++)
        n += s->status[i];
    for (i = 0; i < HF_TERR_COUNT; i++)
        n += s->terr[i];
    return n;
}

uint64_t hf_level_stats_total_ops(const struct hf_level_stats *s)
{
    uint64_t n = 0;
    size_t i;

    for (i = 0; i < HF_PHASE_COUNT; i++)
        n += s->ops[i];
    return n;
}

void hf_level_result_compute(const struct hf_level_stats *s, const struct hf_phase_plan *plan,
                             unsigned limit_ms, struct hf_level_result *out)
{
    double steady_s = (double)plan->steady_us / 1e6;
    double run_s = (double)hf_phase_end_us(plan) / 1e6;

    memset(out, 0, sizeof(*out));
    out->vus = plan->vus;
    out->total_ops = hf_level_stats_total_ops(s);
    out->steady_ops = s->ops[HF_PHASE_STEADY];
    out->ops_per_s = steady_s > 0 ? (double)out->steady_ops / steady_s : 0.0;
    out->run_ops_per_s = run_s > 0 ? (double)out->total_ops / run_s : 0.0;
    out->p50_ms = (double)hf_hist_percentile(&s->steady, 50) / 1e3;
    out->p90_ms = (double)hf_hist_percentile(&s->steady, 90) / 1e3;
    out->p99_ms = (double)hf_hist_percentile(&s->steady, 99) / 1e3;
    out->max_ms = (double)s->steady.max_us / 1e3;
    out->mean_ms = hf_hist_mean_us(&s->steady) / 1e3;
    out->errors = hf_level_stats_errors(s);
    /* A level that fails more than 1% of its requests is not "within the limit" however fast
     * the rest was: a throttling or overloaded server would look best otherwise. */
    out->over_limit = out->steady_ops == 0 || out->p90_ms > (double)limit_ms ||
                      out->errors * 100 > out->total_ops + out->errors;
}
