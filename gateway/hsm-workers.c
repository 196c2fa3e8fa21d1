/* Worker sets for requests on HSM pool keys (hsm-workers.h). */
#include "hf-build.h"

#include "gateway/hsm-workers.h"
#include "gateway/log.h"
#include "gateway/plugin.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS_MAX 256
#define SETS_MAX 64
/* pool.h's defaults, for a pool the module did not report at start (its figures unknown). */
#define LATE_POOL_THREADS 4
#define LATE_POOL_QUEUE 256
/* pool.h's HF_POOL_QUEUE_WAIT_MS: the longest a request waits for a free member. The wait now
 * happens here rather than in the module's queue, so the limit moves with it. */
#define QUEUE_WAIT_MS 2000

struct hf_gw_workers {
    char name[64];
    size_t queue_max;
    uint64_t wait_us;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t cond;  /* a job queued, or stop */
    struct hf_gw_job *head, *tail;
    size_t reserved; /* places promised and not yet pushed */
    size_t queued;   /* jobs in the list */
    unsigned idle, busy;
    uint64_t jobs, throttled;
    bool stop;
    unsigned nthreads;
    pthread_t *threads;
};

static _Thread_local bool this_is_worker;

bool hf_gw_hsm_thread_is_worker(void)
{
    return this_is_worker;
}

static struct hf_gw_job *job_take(struct hf_gw_workers *w)
{
    struct hf_gw_job *job = w->head;

    w->head = job->next;
    if (!w->head) w->tail = NULL;
    job->next = NULL;
    w->queued--;
    return job;
}

static void *worker_main(void *arg)
{
    struct hf_gw_workers *w = arg;

    this_is_worker = true;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        struct hf_gw_job *job;
        bool late;
        while (!w->head && !w->stop)
            pthread_cond_wait(&w->cond, &w->lock);
        /* Jobs still queued at stop run anyway: each owns a request that must be freed. */
        if (!w->head) break;
        job = job_take(w);
        w->idle--;
        w->busy++;
        w->jobs++;
        late = w->wait_us && hf_now_us() - job->queued_us > w->wait_us;
        if (late) w->throttled++;
        pthread_mutex_unlock(&w->lock);
        job->fn(job, late); /* no lock held: it may wait on an HSM */
        pthread_mutex_lock(&w->lock);
        w->busy--;
        w->idle++;
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

struct hf_gw_workers *hf_gw_workers_new(const char *name, unsigned threads, size_t queue_max,
                                        unsigned wait_ms)
{
    struct hf_gw_workers *w = calloc(1, sizeof(*w));

    if (!w || !name || threads == 0 || threads > THREADS_MAX) goto fail;
    snprintf(w->name, sizeof(w->name), "%s", name);
    w->queue_max = queue_max;
    w->wait_us = (uint64_t)wait_ms * 1000u;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    if (!(w->threads = calloc(threads, sizeof(*w->threads)))) goto fail_sync;
    for (; w->nthreads < threads; w->nthreads++) {
        pthread_mutex_lock(&w->lock);
        w->idle++;
        pthread_mutex_unlock(&w->lock);
        if (pthread_create(&w->threads[w->nthreads], NULL, worker_main, w) != 0) {
            pthread_mutex_lock(&w->lock);
            w->idle--;
            pthread_mutex_unlock(&w->lock);
            hf_gw_workers_free(w);
            return NULL;
        }
    }
    return w;
fail_sync:
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
fail:
    free(w);
    return NULL;
}

void hf_gw_workers_free(struct hf_gw_workers *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    for (unsigned i = 0; i < w->nthreads; i++)
        pthread_join(w->threads[i], NULL);
    free(w->threads);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

const char *hf_gw_workers_name(const struct hf_gw_workers *w)
{
    return w->name;
}

bool hf_gw_workers_reserve(struct hf_gw_workers *w)
{
    bool ok;

    pthread_mutex_lock(&w->lock);
    /* An idle thread takes the job at once; beyond those, queue_max may wait. */
    ok = !w->stop && w->queued + w->reserved < (size_t)w->idle + w->queue_max;
    if (ok)
        w->reserved++;
    else
        w->throttled++;
    pthread_mutex_unlock(&w->lock);
    return ok;
}

void hf_gw_workers_unreserve(struct hf_gw_workers *w)
{
    pthread_mutex_lock(&w->lock);
    if (w->reserved) w->reserved--;
    pthread_mutex_unlock(&w->lock);
}

void hf_gw_workers_push(struct hf_gw_workers *w, struct hf_gw_job *job)
{
    job->next = NULL;
    job->queued_us = hf_now_us();
    pthread_mutex_lock(&w->lock);
    if (w->reserved) w->reserved--;
    if (w->tail)
        w->tail->next = job;
    else
        w->head = job;
    w->tail = job;
    w->queued++;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

void hf_gw_workers_stats(struct hf_gw_workers *w, struct hf_gw_workers_stats *out)
{
    pthread_mutex_lock(&w->lock);
    *out = (struct hf_gw_workers_stats){
        .threads = w->nthreads,
        .busy = w->busy,
        .queued = w->queued + w->reserved,
        .queue_max = w->queue_max,
        .jobs = w->jobs,
        .throttled = w->throttled,
    };
    pthread_mutex_unlock(&w->lock);
}

/* ---- one set per HSM pool ------------------------------------------------------------------ */

static struct {
    pthread_mutex_t lock; /* guards sets and n (a set itself has its own lock) */
    struct hf_gw_workers *sets[SETS_MAX];
    size_t n;
    atomic_bool on; /* read on every request: no lock */
} pools = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Threads and queue of each pool the module reports: its members' limits summed (every member,
 * healthy or not: one that comes back takes calls at once), its queue_max. Not more threads than
 * that: each one past the limits has to wait a second time at saturation, in the module's queue
 * for a slot, and bench-hsm gave 0.6x instead of 0.8x of its bound with no HSM latency, for no
 * gain at 0.2 or 1 ms per call (twice the limits plus one per core, 2026-12-07). */
static size_t pool_sizes(const HF_POOL_MEMBER_STATUS *m, size_t n, size_t i, unsigned *threads,
                         size_t *queue_max)
{
    unsigned long sum = 0;
    size_t j = i;

    for (; j < n && strcmp(m[j].pool, m[i].pool) == 0; j++)
        sum += m[j].concurrency;
    *threads = sum == 0 ? 1 : sum > THREADS_MAX ? THREADS_MAX : (unsigned)sum;
    *queue_max = m[i].queue_max;
    return j;
}

static bool set_add(const char *pool, unsigned threads, size_t queue_max)
{
    struct hf_gw_workers *w;

    if (pools.n >= SETS_MAX) return false;
    if (!(w = hf_gw_workers_new(pool, threads, queue_max, QUEUE_WAIT_MS))) return false;
    pools.sets[pools.n++] = w;
    hf_gw_log_info("HSM pool %s: %u worker threads for its calls, %zu requests may wait", pool,
                   threads, queue_max);
    return true;
}

bool hf_gw_hsm_workers_start(char *err, size_t errlen)
{
    HF_POOL_MEMBER_STATUS *m = NULL;
    size_t n = 0, i = 0, next;
    unsigned threads;
    size_t queue_max;
    bool ok = true;

    /* A module that cannot list its pools (another vendor's, an older Holdfast) gives no key a
     * pool source either: nothing to hand off. */
    if (!hf_p11_pool_status(&m, &n)) return true;
    pthread_mutex_lock(&pools.lock);
    atomic_store(&pools.on, true);
    for (; ok && i < n; i = next) {
        next = pool_sizes(m, n, i, &threads, &queue_max);
        /* The root's pool holds no key a request names (pkcs11/core/root.h). */
        if (strcmp(m[i].pool, "(root)") == 0 || m[i].open_result != CKR_OK) continue;
        if (!(ok = set_add(m[i].pool, threads, queue_max)))
            snprintf(err, errlen, "HSM pool %s: cannot start %u worker threads", m[i].pool,
                     threads);
    }
    pthread_mutex_unlock(&pools.lock);
    free(m);
    if (!ok) hf_gw_hsm_workers_stop();
    return ok;
}

void hf_gw_hsm_workers_stop(void)
{
    struct hf_gw_workers *sets[SETS_MAX];
    size_t n;

    pthread_mutex_lock(&pools.lock);
    n = pools.n;
    memcpy(sets, pools.sets, n * sizeof(sets[0]));
    pools.n = 0;
    atomic_store(&pools.on, false);
    pthread_mutex_unlock(&pools.lock);
    for (size_t i = 0; i < n; i++)
        hf_gw_workers_free(sets[i]); /* joins: never under pools.lock */
}

bool hf_gw_hsm_workers_are_on(void)
{
    return atomic_load_explicit(&pools.on, memory_order_relaxed);
}

struct hf_gw_workers *hf_gw_hsm_workers_of(const char *pool)
{
    struct hf_gw_workers *w = NULL;

    if (!pool || !pool[0]) return NULL;
    pthread_mutex_lock(&pools.lock);
    for (size_t i = 0; i < pools.n && !w; i++)
        if (strcmp(pools.sets[i]->name, pool) == 0) w = pools.sets[i];
    /* A pool added since the start (holdfast pool add): made now with pool.h's defaults, since
     * asking the module for its figures could open the pool, on a listener thread. */
    if (!w && atomic_load(&pools.on) && set_add(pool, LATE_POOL_THREADS, LATE_POOL_QUEUE))
        w = pools.sets[pools.n - 1];
    pthread_mutex_unlock(&pools.lock);
    return w;
}

void hf_gw_hsm_workers_each(void (*fn)(const char *pool, const struct hf_gw_workers_stats *st,
                                       void *arg),
                            void *arg)
{
    struct hf_gw_workers_stats st[SETS_MAX];
    char names[SETS_MAX][64];
    size_t n;

    /* Sets live until hf_gw_hsm_workers_stop, after the last scrape: read under the lock, then
     * called back without it. */
    pthread_mutex_lock(&pools.lock);
    n = pools.n;
    for (size_t i = 0; i < n; i++) {
        hf_gw_workers_stats(pools.sets[i], &st[i]);
        memcpy(names[i], pools.sets[i]->name, sizeof(names[i]));
    }
    pthread_mutex_unlock(&pools.lock);
    for (size_t i = 0; i < n; i++)
        fn(names[i], &st[i], arg);
}
