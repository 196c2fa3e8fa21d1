/* /metrics for the HSM pools' worker sets (hsm-workers.h): per pool the gateway's threads for
 * its calls, how many are busy, the requests queued for them and the queue's bound, the jobs
 * run and the requests answered throttled there. Pure: text from the snapshots it is given. */
#include "hf-build.h"

#include "gateway/hsm-workers.h"
#include "gateway/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum figure { THREADS, BUSY, QUEUED, QUEUE_MAX, JOBS, THROTTLED, FIGURES };

static const struct {
    const char *name, *type, *help;
} families[FIGURES] = {
    [THREADS] = {"holdfast_hsm_workers", "gauge",
                 "Gateway threads that run requests on the pool's keys (its members' limits)."},
    [BUSY] = {"holdfast_hsm_workers_busy", "gauge", "Of those, running a request now."},
    [QUEUED] = {"holdfast_hsm_queue_depth", "gauge",
                "Requests on the pool's keys waiting for a worker thread."},
    [QUEUE_MAX] = {"holdfast_hsm_queue_max", "gauge", "The most requests that may wait."},
    [JOBS] = {"holdfast_hsm_jobs_total", "counter", "Requests run by the pool's worker threads."},
    [THROTTLED] = {"holdfast_hsm_throttled_total", "counter",
                   "Requests answered the API's throttling error: queue full or waited too long."},
};

static unsigned long long figure_of(const struct hf_gw_workers_stats *st, enum figure f)
{
    switch (f) {
    case THREADS:
        return st->threads;
    case BUSY:
        return st->busy;
    case QUEUED:
        return st->queued;
    case QUEUE_MAX:
        return st->queue_max;
    case JOBS:
        return st->jobs;
    default:
        return st->throttled;
    }
}

/* Pool names are [a-z0-9-] (store.h): anything else is dropped, so no label breaks a line. */
static void label_clean(const char *in, char out[64])
{
    size_t o = 0;

    for (size_t i = 0; in[i] && o + 1 < 64; i++)
        if ((in[i] >= 'a' && in[i] <= 'z') || (in[i] >= '0' && in[i] <= '9') || in[i] == '-')
            out[o++] = in[i];
    out[o] = '\0';
}

char *hf_gw_metrics_hsm_render(const char *const *pools, const struct hf_gw_workers_stats *st,
                               size_t n, size_t *len)
{
    char *page = NULL, label[64];
    size_t size = 0;
    FILE *f;

    *len = 0;
    if (!(f = open_memstream(&page, &size))) return NULL;
    for (int k = 0; n > 0 && k < FIGURES; k++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", families[k].name, families[k].help,
                families[k].name, families[k].type);
        for (size_t i = 0; i < n; i++) {
            label_clean(pools[i], label);
            fprintf(f, "%s{pool=\"%s\"} %llu\n", families[k].name, label,
                    figure_of(&st[i], (enum figure)k));
        }
    }
    if (fclose(f) != 0) {
        free(page);
        return NULL;
    }
    *len = size;
    return page;
}
