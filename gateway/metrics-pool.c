/* /metrics for the HSM pools (issue 14, visibility): each member's health, calls in flight,
 * calls, failures, failovers and latency histogram, each pool's queue depth and refusals,
 * labelled pool= and member=, from the module's HF_GetPoolStatus snapshot (hf_p11_pool_status).
 * Pure: the page is text made from the array it is given.
 *
 * The text format wants a metric family's samples together under one HELP and TYPE, so each
 * family is one pass over the members. */
#include "hf-build.h"

#include "gateway/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pool and member names are [a-z0-9-] (store.h), and the root's pool is "(root)" (holdfast.h);
 * anything else is dropped rather than escaped, so a label can never break a line however the
 * module filled it. */
static const char *label_clean(const char *in, size_t max, char *out)
{
    size_t o = 0;

    for (size_t i = 0; i < max && in[i] && o + 1 < HF_POOL_NAME_BUF; i++)
        if ((in[i] >= 'a' && in[i] <= 'z') || (in[i] >= '0' && in[i] <= '9') ||
            strchr("-()", in[i]) != NULL)
            out[o++] = in[i];
    out[o] = '\0';
    return out;
}

struct labels {
    char pool[HF_POOL_NAME_BUF], member[HF_POOL_NAME_BUF];
};

static void labels_of(const HF_POOL_MEMBER_STATUS *m, struct labels *l)
{
    label_clean(m->pool, sizeof(m->pool), l->pool);
    label_clean(m->member, sizeof(m->member), l->member);
}

/* The members arrive pool after pool: a pool's own series are written at its first member. */
static bool is_first_of_pool(const HF_POOL_MEMBER_STATUS *m, size_t i)
{
    return i == 0 || strncmp(m[i].pool, m[i - 1].pool, sizeof(m[i].pool)) != 0;
}

enum member_figure { UP, DISABLED, LIMIT, IN_FLIGHT, CALLS, QUEUED, FAILURES, FAILOVERS };

static const struct {
    const char *name, *type, *help;
} member_families[] = {
    [UP] = {"holdfast_pool_member_up", "gauge",
            "Whether the pool member is in service on this node (1) or out (0)."},
    [DISABLED] = {"holdfast_pool_member_disabled", "gauge",
                  "Whether the member's PIN was refused, so it is never probed back in (1)."},
    [LIMIT] = {"holdfast_pool_member_concurrency_limit", "gauge",
               "The member's limit of calls in flight."},
    [IN_FLIGHT] = {"holdfast_pool_member_in_flight", "gauge", "Calls running on the member now."},
    [CALLS] = {"holdfast_pool_member_calls_total", "counter",
               "Calls run on the member (a retried call counts on both members)."},
    [QUEUED] = {"holdfast_pool_member_queued_calls_total", "counter",
                "Calls run on the member after waiting in the pool's queue."},
    [FAILURES] = {"holdfast_pool_member_failures_total", "counter",
                  "Calls on the member that failed over or took it out of service."},
    [FAILOVERS] = {"holdfast_pool_member_failovers_total", "counter",
                   "Calls moved from the member to another one."},
};

static unsigned long long member_figure(const HF_POOL_MEMBER_STATUS *m, enum member_figure f)
{
    switch (f) {
    case UP:
        return m->open_result == CKR_OK && m->healthy;
    case DISABLED:
        return m->disabled != CK_FALSE;
    case LIMIT:
        return m->concurrency;
    case IN_FLIGHT:
        return m->in_flight;
    case CALLS:
        return m->calls;
    case QUEUED:
        return m->queued;
    case FAILURES:
        return m->failures;
    case FAILOVERS:
        return m->failovers;
    }
    return 0;
}

static void member_families_write(FILE *f, const HF_POOL_MEMBER_STATUS *m, size_t n)
{
    struct labels l;

    for (size_t k = 0; k < sizeof(member_families) / sizeof(member_families[0]); k++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", member_families[k].name, member_families[k].help,
                member_families[k].name, member_families[k].type);
        for (size_t i = 0; i < n; i++) {
            labels_of(&m[i], &l);
            fprintf(f, "%s{pool=\"%s\",member=\"%s\"} %llu\n", member_families[k].name, l.pool,
                    l.member, member_figure(&m[i], (enum member_figure)k));
        }
    }
}

enum pool_figure { OPEN, DEPTH, QMAX, THROTTLED, UNAVAILABLE };

static const struct {
    const char *name, *type, *help;
} pool_families[] = {
    [OPEN] = {"holdfast_pool_open", "gauge",
              "Whether this node could open the pool (0: every member counts as down)."},
    [DEPTH] = {"holdfast_pool_queue_depth", "gauge",
               "Callers waiting in the pool's queue for a free member now."},
    [QMAX] = {"holdfast_pool_queue_max", "gauge", "The pool's queue limit."},
    [THROTTLED] = {"holdfast_pool_throttled_total", "counter",
                   "Calls refused because every healthy member was busy and the queue full (the "
                   "APIs' throttling errors)."},
    [UNAVAILABLE] = {"holdfast_pool_unavailable_total", "counter",
                     "Calls refused because no member was healthy (the APIs' unavailable "
                     "errors)."},
};

static unsigned long long pool_figure(const HF_POOL_MEMBER_STATUS *m, enum pool_figure f)
{
    switch (f) {
    case OPEN:
        return m->open_result == CKR_OK;
    case DEPTH:
        return m->queue_waiting;
    case QMAX:
        return m->queue_max;
    case THROTTLED:
        return m->throttled;
    case UNAVAILABLE:
        return m->unavailable;
    }
    return 0;
}

static void pool_families_write(FILE *f, const HF_POOL_MEMBER_STATUS *m, size_t n)
{
    struct labels l;

    for (size_t k = 0; k < sizeof(pool_families) / sizeof(pool_families[0]); k++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", pool_families[k].name, pool_families[k].help,
                pool_families[k].name, pool_families[k].type);
        for (size_t i = 0; i < n; i++) {
            if (!is_first_of_pool(m, i)) continue;
            labels_of(&m[i], &l);
            fprintf(f, "%s{pool=\"%s\"} %llu\n", pool_families[k].name, l.pool,
                    pool_figure(&m[i], (enum pool_figure)k));
        }
    }
}

/* pool.h's buckets as a Prometheus histogram: bucket i holds [2^i, 2^(i+1)) us, so its upper
 * edge 2^(i+1) us is the le of the running count; the last is open-ended (+Inf). _sum is in
 * seconds with microsecond digits, so a mean (rate of _sum over rate of _count) loses nothing. */
static void latency_write(FILE *f, const HF_POOL_MEMBER_STATUS *m, size_t n)
{
    const char *name = "holdfast_pool_member_call_duration_seconds";
    struct labels l;

    fprintf(f,
            "# HELP %s Time of a call on the member, queue wait excluded.\n# TYPE %s "
            "histogram\n",
            name, name);
    for (size_t i = 0; i < n; i++) {
        unsigned long long cum = 0;
        labels_of(&m[i], &l);
        for (size_t b = 0; b < HF_POOL_LATENCY_BUCKET_COUNT; b++) {
            cum += m[i].latency[b];
            if (b + 1 < HF_POOL_LATENCY_BUCKET_COUNT)
                fprintf(f, "%s_bucket{pool=\"%s\",member=\"%s\",le=\"%g\"} %llu\n", name, l.pool,
                        l.member, (double)(1ULL << (b + 1)) / 1e6, cum);
        }
        fprintf(f, "%s_bucket{pool=\"%s\",member=\"%s\",le=\"+Inf\"} %llu\n", name, l.pool,
                l.member, cum);
        fprintf(f, "%s_sum{pool=\"%s\",member=\"%s\"} %llu.%06llu\n", name, l.pool, l.member,
                (unsigned long long)(m[i].latency_sum_us / 1000000u),
                (unsigned long long)(m[i].latency_sum_us % 1000000u));
        fprintf(f, "%s_count{pool=\"%s\",member=\"%s\"} %llu\n", name, l.pool, l.member, cum);
    }
}

char *hf_gw_metrics_pool_render(const HF_POOL_MEMBER_STATUS *members, size_t n, size_t *len)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f;

    if (len == NULL) return NULL;
    *len = 0;
    if ((f = open_memstream(&text, &size)) == NULL) return NULL;
    if (n > 0 && members != NULL) {
        pool_families_write(f, members, n);
        member_families_write(f, members, n);
        latency_write(f, members, n);
    }
    if (ferror(f)) {
        fclose(f);
        free(text);
        return NULL;
    }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    *len = size;
    return text;
}
