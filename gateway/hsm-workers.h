/* Worker threads for requests on HSM pool keys (issue 14: a slow HSM never blocks gateway
 * threads).
 *
 * A libmicrohttpd listener thread multiplexes many connections, so a handler that waits on a
 * slow HSM stalls every connection of that thread, local-key requests of other APIs included.
 * A request whose key lives in a pool is therefore handed to its pool's workers (server.c):
 * threads that may block in the module, as many as the pool's members may have calls in flight
 * (their concurrency limits, pkcs11/core/pool.h), so the pool's own queue stays empty and the
 * waiting happens here, in a bounded queue whose overflow the API answers as throttling.
 *
 * One set per pool, made at start for the pools the module knows and on first use for a pool
 * added later. Jobs are intrusive (struct hf_gw_job lives in the request): queueing allocates
 * nothing, and a full queue is known before the caller suspends its connection (reserve, then
 * push). Locks protect the queue and the counters only; a job runs with no lock held. */
#ifndef HF_GATEWAY_HSM_WORKERS_H
#define HF_GATEWAY_HSM_WORKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hf_gw_job;
/* Runs on a worker thread. late: the job waited longer than the set's wait limit, so it is to
 * be answered throttled rather than sent to the HSM (pool.h's queue_wait_ms, here). */
typedef void (*hf_gw_job_fn)(struct hf_gw_job *job, bool late);

struct hf_gw_job {
    struct hf_gw_job *next; /* the set's queue */
    hf_gw_job_fn fn;
    uint64_t queued_us;
};

struct hf_gw_workers;

struct hf_gw_workers_stats {
    unsigned threads;
    unsigned busy;      /* running a job now */
    size_t queued;      /* waiting for a thread (reserved slots included) */
    size_t queue_max;   /* 0: no job waits; a job is taken only by an idle thread */
    uint64_t jobs;      /* run, late ones included */
    uint64_t throttled; /* refused at reserve (queue full) or run late */
};

/* A set of threads threads (1..256) with a queue of queue_max jobs, wait_ms the longest a job
 * may wait (0: no limit). NULL when a thread cannot be made. name is copied (logs, metrics). */
struct hf_gw_workers *hf_gw_workers_new(const char *name, unsigned threads, size_t queue_max,
                                        unsigned wait_ms);
/* Lets the queued jobs run (a late one as late), then joins the threads and frees the set. */
void hf_gw_workers_free(struct hf_gw_workers *w);
const char *hf_gw_workers_name(const struct hf_gw_workers *w);

/* A place for one job: true when a thread is idle or the queue has room, counted as queued
 * until hf_gw_workers_push or hf_gw_workers_unreserve; false (counted as throttled) when full. */
bool hf_gw_workers_reserve(struct hf_gw_workers *w);
void hf_gw_workers_unreserve(struct hf_gw_workers *w);
/* Queues job (its fn set by the caller) in the place reserved for it. job is the caller's
 * memory and must stay valid until fn has been called. */
void hf_gw_workers_push(struct hf_gw_workers *w, struct hf_gw_job *job);
/* A consistent snapshot of the set's figures. */
void hf_gw_workers_stats(struct hf_gw_workers *w, struct hf_gw_workers_stats *out);

/* ---- the sets of the HSM pools (server.c) --------------------------------------------------- */

/* Makes one set per pool the module reports (hf_p11_pool_status): threads the sum of its
 * members' concurrency limits, queue its queue_max. false with err when a thread cannot be made. */
bool hf_gw_hsm_workers_start(char *err, size_t errlen);
/* Frees every set (after the listeners stopped: their jobs are done or orphaned). */
void hf_gw_hsm_workers_stop(void);
/* Whether requests on pool keys are handed off (a set exists, or may be made). */
bool hf_gw_hsm_workers_are_on(void);
/* The set of pool name, made with default sizes for a pool the module did not report at start;
 * NULL when it cannot be made (the request then runs where it is, as before this existed). */
struct hf_gw_workers *hf_gw_hsm_workers_of(const char *pool);
/* Each set's figures, for /metrics and the pool status: calls fn for every set. */
void hf_gw_hsm_workers_each(void (*fn)(const char *pool, const struct hf_gw_workers_stats *st,
                                       void *arg),
                            void *arg);

/* Whether the calling thread is one of the sets' workers. */
bool hf_gw_hsm_thread_is_worker(void);

#endif /* HF_GATEWAY_HSM_WORKERS_H */
