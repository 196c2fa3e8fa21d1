/* An HSM pool: N members, each one backend token (hsm.h) reached through its vendor's PKCS#11
 * module, and an executor that runs a caller's PKCS#11 work on one healthy member
 * (ARCHITECTURE.md, "Key sources"; issue 14). This is the HA layer only: which keys live where
 * (clone, export) is decided above it.
 *
 * - A call goes to the healthy member with the fewest calls in flight (ties: round robin), and a
 *   member never has more than its concurrency limit in flight (SoftHSMv2 slows down with more
 *   threads inside it). When every healthy member is full, the caller waits in a bounded queue
 *   (first come, first served); a full queue, or a wait longer than queue_wait_ms, answers
 *   HF_POOL_RV_THROTTLED at once.
 * - A result in the failover class (hf_pool_rv_is_failover, pool.c says why each is there) takes
 *   the member out and the call is retried once on another healthy member. Other results are
 *   the caller's answer and fail nobody over.
 * - No healthy member: HF_POOL_RV_UNAVAILABLE at once.
 * - A call still running after call_timeout_ms (an HSM that stopped answering, a network HSM
 *   whose server died mid-call) takes its member out of service too, so that nothing more is
 *   sent there; the probe leaves the member alone until that call returns. The call itself
 *   cannot be cut short: PKCS#11 has no cancel, and a caller freed early would have its buffers
 *   written by the call when it does return. Its caller waits for it.
 * - A probe thread tries each member out of service every probe_interval_ms (hf_hsm_probe,
 *   re-opening the member when that fails, then the caller's probe_fn) and puts it back when the
 *   probe passes, then calls on_member_back.
 *
 * Locks protect data: one mutex per pool guards the members' state and counters, held for a few
 * instructions around each pick and each end of call; none is held across a backend call. */
#ifndef HF_POOL_H
#define HF_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsm.h"
#include "pkcs11/module/pkcs11-compat.h"

struct hf_pool;

/* Every healthy member is busy and the queue is full (or the wait ran out): the gateway maps it
 * to the API's throttling error (XKS ThrottlingException, others 429). */
#define HF_POOL_RV_THROTTLED CKR_FUNCTION_REJECTED
/* No healthy member, or the retry found none: the gateway maps it to the API's unavailable
 * error (503 where the API has one; XKS has none for a failed HSM and answers its
 * InternalException, 500, as its spec says: gateway/p11.c). */
#define HF_POOL_RV_UNAVAILABLE CKR_DEVICE_ERROR

#define HF_POOL_PROBE_INTERVAL_MS 200
#define HF_POOL_QUEUE_MAX_DEFAULT 256
#define HF_POOL_QUEUE_WAIT_MS 2000
#define HF_POOL_CALL_TIMEOUT_MS 10000
/* hf_pool_run_slow's calls: an RSA-4096 pair takes seconds on a real HSM, and more than 10 s on
 * SoftHSMv2 under valgrind. */
#define HF_POOL_SLOW_CALL_TIMEOUT_MS 300000
/* Latency histogram: bucket i counts calls that took [2^i, 2^(i+1)) microseconds (bucket 0 also
 * takes 0 us), the last bucket everything from 2^(HF_POOL_LATENCY_BUCKETS-1) us (~8.4 s) up. */
#define HF_POOL_LATENCY_BUCKETS 24

/* One member as configured. Every pointer is borrowed for hf_pool_open only: the pool copies
 * what it keeps (the PIN into hf_secmem memory, since the probe may have to log in again; the
 * PIN is never logged). */
struct hf_pool_member_spec {
    const char *name;        /* for logs and status */
    const char *module_path; /* the backend's PKCS#11 module, loaded by path */
    const char *token_label;
    const char *pin;       /* the user PIN, as the caller read it from a file or the environment */
    const char *lock_path; /* as hf_hsm_open takes it; may be NULL */
    unsigned concurrency;  /* calls in flight at most; >= 1 */
};

/* The work to run: as hf_hsm_session_fn, plus the index of the member it runs on (the order of
 * the specs). It may run twice for one hf_pool_run (on two members, and hf_hsm_run may repeat
 * it on one member), so it must be safe to repeat. */
typedef CK_RV (*hf_pool_fn)(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                            CK_SESSION_HANDLE s, void *arg);
/* Called on the probe thread, with no pool lock held, after member went back into service, or
 * after hf_pool_member_stale marked it (the re-sync of a clone-mode member); the member
 * already takes calls. It may call
 * hf_pool_run and hf_pool_status, never hf_pool_close; while it runs, no other member is
 * probed. */
typedef void (*hf_pool_member_back_fn)(struct hf_pool *pool, size_t member, void *arg);

struct hf_pool_options {
    size_t queue_max;           /* callers that may wait for a free member; 0: none waits */
    unsigned queue_wait_ms;     /* longest wait in the queue; 0: HF_POOL_QUEUE_WAIT_MS */
    unsigned probe_interval_ms; /* 0: HF_POOL_PROBE_INTERVAL_MS */
    unsigned call_timeout_ms;   /* a call running longer takes its member out; 0: the default */
    /* Run on a member out of service after hf_hsm_probe passed; the member comes back only when
     * it returns CKR_OK too. Also at open: a member it refuses starts out of service. NULL:
     * hf_hsm_probe alone decides. */
    hf_pool_fn probe_fn;
    void *probe_arg;
    hf_pool_member_back_fn on_member_back; /* may be NULL */
    void *on_member_back_arg;
};

struct hf_pool_member_status {
    const char *name; /* the pool's copy: valid until hf_pool_close */
    bool healthy;
    bool disabled;        /* its PIN was refused: never probed again (retries lock tokens) */
    unsigned concurrency; /* the limit */
    unsigned in_flight;
    uint64_t calls;     /* attempts run here (a retried call counts on both members) */
    uint64_t queued;    /* of which started after waiting in the queue */
    uint64_t failures;  /* attempts here that ended in the failover class */
    uint64_t failovers; /* calls moved away from here to another member */
    uint64_t last_latency_us;
    uint64_t latency_sum_us; /* every call's time here, added up: a histogram's _sum */
    uint64_t latency[HF_POOL_LATENCY_BUCKETS];
};

struct hf_pool_queue_status {
    size_t waiting;       /* callers in the queue now */
    size_t queue_max;     /* as configured */
    uint64_t throttled;   /* calls answered HF_POOL_RV_THROTTLED */
    uint64_t unavailable; /* calls answered HF_POOL_RV_UNAVAILABLE for want of a healthy member */
};

/* Opens every member (hf_hsm_open). A member whose open fails in the failover class (its HSM
 * is down, its token not there yet) starts out of service and is left to the probe; any other
 * failure (a wrong PIN, bad arguments) fails the whole open, as does no member open at all
 * (HF_POOL_RV_UNAVAILABLE). opts may be NULL (queue_max HF_POOL_QUEUE_MAX_DEFAULT, the rest
 * defaults); it is copied. *out is the caller's, for hf_pool_close. */
CK_RV hf_pool_open(const struct hf_pool_member_spec *members, size_t n_members,
                   const struct hf_pool_options *opts, struct hf_pool **out);
/* Stops the probe thread (waiting for a probe under way), makes queued and new callers answer
 * HF_POOL_RV_UNAVAILABLE, waits for the calls in flight, then closes every member and frees the
 * pool. No call may start after hf_pool_close has returned. */
void hf_pool_close(struct hf_pool *pool);

/* Runs fn on one member as the file comment says: fn's result, HF_POOL_RV_THROTTLED or
 * HF_POOL_RV_UNAVAILABLE. arg is borrowed for the call. */
CK_RV hf_pool_run(struct hf_pool *pool, hf_pool_fn fn, void *arg);

/* hf_pool_run for work that is slow by nature (key generation): its calls have
 * HF_POOL_SLOW_CALL_TIMEOUT_MS (or call_timeout_ms, if longer) before they take their member out
 * of service. */
CK_RV hf_pool_run_slow(struct hf_pool *pool, hf_pool_fn fn, void *arg);

/* Runs fn on member (the order of the specs) alone, for work only that member can do (a key
 * that lives on it: a plain-mode pool's keys, store.h): queued and throttled as hf_pool_run, but
 * never moved elsewhere; a device-class result takes the member out and answers
 * HF_POOL_RV_UNAVAILABLE, as does the member being out of service. CKR_ARGUMENTS_BAD for a
 * member out of range. */
CK_RV hf_pool_run_on(struct hf_pool *pool, size_t member, hf_pool_fn fn, void *arg);
/* hf_pool_run_on with hf_pool_run_slow's time limit. */
CK_RV hf_pool_run_on_slow(struct hf_pool *pool, size_t member, hf_pool_fn fn, void *arg);

/* Marks member as lacking something the layer above keeps on every member (a clone-mode key,
 * source-pool.h): on its next round (probe_interval_ms at most), the probe thread calls
 * on_member_back for it as if it had come back, so the re-sync runs there and never on the
 * caller's thread; the member stays in service meanwhile. A member out of service gets it
 * anyway when it comes back. No-op for NULL or a member out of range. */
void hf_pool_member_stale(struct hf_pool *pool, size_t member);

/* True for results that move a call to another member: the device class (CKR_DEVICE_ERROR,
 * CKR_DEVICE_REMOVED, CKR_DEVICE_MEMORY, CKR_TOKEN_NOT_PRESENT, CKR_TOKEN_NOT_RECOGNIZED,
 * CKR_SESSION_HANDLE_INVALID, CKR_SESSION_CLOSED, CKR_CRYPTOKI_NOT_INITIALIZED) takes the member
 * out at once; the suspect class (CKR_GENERAL_ERROR, CKR_FUNCTION_FAILED) only when the retry
 * then succeeds elsewhere. pool.c says why. */
bool hf_pool_rv_is_failover(CK_RV rv);

/* The number of members; with out non-NULL, also a consistent snapshot of the first
 * min(n, members) of them. */
size_t hf_pool_status(struct hf_pool *pool, struct hf_pool_member_status *out, size_t n);
void hf_pool_queue_status(struct hf_pool *pool, struct hf_pool_queue_status *out);

#endif
