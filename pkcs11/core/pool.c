#include "hf-build.h"

#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "secmem.h"

/* ---- which results move a call --------------------------------------------------------------
 * Device class: the member, not the request, is at fault, so the member goes out of service and
 * the call is retried on another. CKR_DEVICE_ERROR (what p11-kit-client answers once its server
 * is gone, and SoftHSMv2 for a token whose files it cannot read), CKR_DEVICE_REMOVED,
 * CKR_DEVICE_MEMORY (the HSM's memory, not ours: CKR_HOST_MEMORY stays the caller's),
 * CKR_TOKEN_NOT_PRESENT and CKR_TOKEN_NOT_RECOGNIZED (the slot lost its token),
 * CKR_SESSION_HANDLE_INVALID and CKR_SESSION_CLOSED (these reach the pool only after hf_hsm_run
 * has already tried a fresh session, so the member cannot keep one), and
 * CKR_CRYPTOKI_NOT_INITIALIZED (the module was finalised under us).
 *
 * Suspect class: CKR_GENERAL_ERROR and CKR_FUNCTION_FAILED say "something went wrong" without
 * saying whose fault it was. A broken member answers them (SoftHSMv2 reports a token whose
 * integrity check failed as CKR_GENERAL_ERROR), but so does a healthy member given bad input
 * (SoftHSMv2 reports a failed RFC 5649 integrity check, and some failed decryptions, as
 * CKR_GENERAL_ERROR: hsm.c). Taking members out on them would let anybody who can send a forged
 * ciphertext empty the pool. So a suspect result moves the call without taking the member out;
 * the member goes out only when the retry succeeds elsewhere (the input was fine, so the member
 * was not). When the retry fails too, the first result is the caller's answer and nobody is
 * blamed.
 *
 * Everything else (CKR_KEY_HANDLE_INVALID, CKR_ENCRYPTED_DATA_INVALID, CKR_PIN_*,
 * CKR_HOST_MEMORY, ...) says something about the request or about us, and is the caller's
 * answer at once. */

enum rv_class { RV_ANSWER, RV_DEVICE, RV_SUSPECT };

static enum rv_class rv_classify(CK_RV rv)
{
    switch (rv) {
    case CKR_DEVICE_ERROR:
    case CKR_DEVICE_REMOVED:
    case CKR_DEVICE_MEMORY:
    case CKR_TOKEN_NOT_PRESENT:
    case CKR_TOKEN_NOT_RECOGNIZED:
    case CKR_SESSION_HANDLE_INVALID:
    case CKR_SESSION_CLOSED:
    case CKR_CRYPTOKI_NOT_INITIALIZED:
        return RV_DEVICE;
    case CKR_GENERAL_ERROR:
    case CKR_FUNCTION_FAILED:
        return RV_SUSPECT;
    default:
        return RV_ANSWER;
    }
}

bool hf_pool_rv_is_failover(CK_RV rv)
{
    return rv_classify(rv) != RV_ANSWER;
}

/* A refused PIN is never retried by the probe: each retry counts towards the token's lockout. */
static bool rv_is_pin_refused(CK_RV rv)
{
    return rv == CKR_PIN_INCORRECT || rv == CKR_PIN_LOCKED || rv == CKR_PIN_EXPIRED ||
           rv == CKR_PIN_INVALID || rv == CKR_PIN_LEN_RANGE;
}

/* ---- the pool ------------------------------------------------------------------------------ */

struct member {
    /* Set at open, read-only after: owned by the pool. */
    char *name, *module_path, *token_label, *lock_path;
    char *pin; /* hf_secmem, pin_len + 1 bytes */
    size_t pin_len;
    unsigned concurrency;
    /* Guarded by the pool's lock. hsm is owned by the pool; NULL while out of service and not
     * open. Only the probe thread replaces it, and only while the member is out of service with
     * nothing in flight, so a caller that picked the member may use its copy of the pointer
     * without the lock until its call ends. */
    struct hf_hsm *hsm;
    bool healthy, disabled;
    bool stale; /* hf_pool_member_stale: on_member_back is due on the probe thread */
    unsigned in_flight;
    struct call_slot *slots; /* concurrency of them: the calls in flight */
    uint64_t calls, queued, failures, failovers, last_latency_us, latency_sum_us;
    uint64_t latency[HF_POOL_LATENCY_BUCKETS];
};

/* A call in flight, for the probe thread's look at calls that run too long. */
struct call_slot {
    uint64_t started_us, due_us; /* due_us 0: the slot is free */
};

/* A caller in the queue: on its own stack, linked while it waits. Each has its own condition
 * so that a freed slot wakes the head of the queue alone: with one condition for all, every end
 * of call woke every waiter to find it was not first (64 callers on a limit of 2 spent more time
 * switching threads than in the HSM). */
struct waiter {
    struct waiter *next;
    pthread_cond_t cond;
};

struct hf_pool {
    struct hf_pool_options opts; /* copied at open, read-only after */
    size_t n;
    struct member *members; /* n of them: the array is fixed after open */

    pthread_mutex_t lock;      /* guards the members' state above and everything below */
    pthread_cond_t free_cond;  /* retries: a slot freed, a member's health changed, stopping */
    pthread_cond_t idle_cond;  /* callers fell to 0 while stopping */
    pthread_cond_t probe_cond; /* stopping: wakes the probe thread */
    size_t rr;                 /* where the next tie-break starts */
    struct waiter *queue_head, **queue_tail;
    size_t waiting;  /* in the queue */
    size_t retrying; /* retries waiting for a slot (not in the queue: already admitted once) */
    unsigned callers;
    bool stopping;
    uint64_t throttled, unavailable;

    pthread_t probe_thread; /* joined by hf_pool_close */
    bool probe_started;
};

#define NO_MEMBER ((size_t)-1)

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static struct timespec deadline_in_ms(unsigned ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

static size_t latency_bucket(uint64_t us)
{
    size_t b = us == 0 ? 0 : (size_t)(63 - __builtin_clzll(us));

    return b < HF_POOL_LATENCY_BUCKETS ? b : HF_POOL_LATENCY_BUCKETS - 1;
}

/* ---- picking a member (all under pool->lock) ------------------------------------------------ */

static bool member_is_usable(const struct member *m)
{
    return m->healthy && m->hsm != NULL;
}

/* Whether member i may take the call: not exclude, and only when only names a member. */
static bool member_is_candidate(size_t i, size_t exclude, size_t only)
{
    return i != exclude && (only == NO_MEMBER || i == only);
}

static bool has_healthy(const struct hf_pool *pool, size_t exclude, size_t only)
{
    for (size_t i = 0; i < pool->n; i++)
        if (member_is_candidate(i, exclude, only) && member_is_usable(&pool->members[i]))
            return true;
    return false;
}

/* The usable member with the fewest calls in flight and room for one more, the first from
 * pool->rr on a tie; NO_MEMBER when all are full. */
static size_t member_pick(struct hf_pool *pool, size_t exclude, size_t only)
{
    size_t best = NO_MEMBER;

    for (size_t k = 0; k < pool->n; k++) {
        size_t i = (pool->rr + k) % pool->n;
        const struct member *m = &pool->members[i];
        if (!member_is_candidate(i, exclude, only) || !member_is_usable(m) ||
            m->in_flight >= m->concurrency)
            continue;
        if (best == NO_MEMBER || m->in_flight < pool->members[best].in_flight) best = i;
    }
    if (best != NO_MEMBER) pool->rr = (best + 1) % pool->n;
    return best;
}

static void queue_remove(struct hf_pool *pool, struct waiter *w)
{
    struct waiter **link = &pool->queue_head;

    while (*link != w)
        link = &(*link)->next;
    *link = w->next;
    if (pool->queue_tail == &w->next) pool->queue_tail = link;
    pool->waiting--;
}

static void cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
}

/* A slot freed: the first in line may take it, and a retry (which goes before the queue). */
static void wake_next(struct hf_pool *pool)
{
    if (pool->queue_head != NULL) pthread_cond_signal(&pool->queue_head->cond);
    if (pool->retrying > 0) pthread_cond_broadcast(&pool->free_cond);
}

/* A member's health changed, or the pool stops: every waiter must look again (one may find
 * nobody healthy left and give up). */
static void wake_all(struct hf_pool *pool)
{
    for (struct waiter *w = pool->queue_head; w != NULL; w = w->next)
        pthread_cond_signal(&w->cond);
    pthread_cond_broadcast(&pool->free_cond);
}

/* A slot on a member other than exclude for one call: *idx and *hsm (the member's, usable
 * without the lock until member_release). With only set, on that member alone. A first attempt
 * (retry false) joins the back of the queue when it cannot start at once, and is refused when the
 * queue is full; a retry was admitted already, so it waits outside the queue and goes before it. */
static CK_RV member_acquire(struct hf_pool *pool, size_t exclude, size_t only, bool retry,
                            size_t *idx, struct hf_hsm **hsm)
{
    struct timespec deadline;
    struct waiter self = {.next = NULL};
    bool waited = false, timed_out = false;
    size_t i = NO_MEMBER;
    CK_RV rv = CKR_OK;

    if (pool->stopping || !has_healthy(pool, exclude, only)) goto unavailable;
    if (retry || pool->queue_head == NULL) i = member_pick(pool, exclude, only);
    if (i != NO_MEMBER) goto take;
    if (!retry && pool->waiting >= pool->opts.queue_max) {
        pool->throttled++;
        return HF_POOL_RV_THROTTLED;
    }
    deadline = deadline_in_ms(pool->opts.queue_wait_ms);
    if (retry) {
        pool->retrying++;
    } else {
        cond_init_monotonic(&self.cond);
        *pool->queue_tail = &self;
        pool->queue_tail = &self.next;
        pool->waiting++;
    }
    waited = true;
    for (;;) {
        if (timed_out) break;
        timed_out = pthread_cond_timedwait(retry ? &pool->free_cond : &self.cond, &pool->lock,
                                           &deadline) == ETIMEDOUT;
        if (pool->stopping || !has_healthy(pool, exclude, only)) break;
        if ((retry || pool->queue_head == &self) &&
            (i = member_pick(pool, exclude, only)) != NO_MEMBER)
            break;
    }
    if (retry) {
        pool->retrying--;
    } else {
        queue_remove(pool, &self);
        pthread_cond_destroy(&self.cond);
        /* The next in line may find room too, or must see it is now first. */
        if (pool->queue_head != NULL) pthread_cond_signal(&pool->queue_head->cond);
    }
    if (i != NO_MEMBER) goto take;
    if (pool->stopping || !has_healthy(pool, exclude, only)) goto unavailable;
    pool->throttled++;
    return HF_POOL_RV_THROTTLED;
take:
    pool->members[i].in_flight++;
    pool->members[i].calls++;
    if (waited) pool->members[i].queued++;
    *idx = i;
    *hsm = pool->members[i].hsm;
    return rv;
unavailable:
    pool->unavailable++;
    return HF_POOL_RV_UNAVAILABLE;
}

static void member_release(struct hf_pool *pool, size_t i, uint64_t latency_us)
{
    struct member *m = &pool->members[i];

    m->in_flight--;
    m->last_latency_us = latency_us;
    m->latency_sum_us += latency_us;
    m->latency[latency_bucket(latency_us)]++;
    wake_next(pool);
}

/* Takes member i out of service after a result blamed on it. */
static void member_fail(struct hf_pool *pool, size_t i, CK_RV rv)
{
    struct member *m = &pool->members[i];

    m->failures++;
    if (!m->healthy) return;
    m->healthy = false;
    hf_log_warn("pool: member %s out of service (0x%lx)", m->name, (unsigned long)rv);
    /* Queued callers must see whether anybody healthy is left. */
    wake_all(pool);
}

/* ---- running a call ------------------------------------------------------------------------ */

struct call {
    hf_pool_fn fn;
    void *arg;
    size_t member;
};

static CK_RV call_trampoline(struct hf_hsm *hsm, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                             void *arg)
{
    struct call *c = arg;

    return c->fn(hsm, c->member, f, s, c->arg);
}

/* The call's start in a free slot of member i (one exists: in_flight is within concurrency),
 * for the probe thread's look at calls that run too long. */
static size_t start_note(struct member *m, uint64_t t0, unsigned timeout_ms)
{
    size_t j = 0;

    while (j + 1 < m->concurrency && m->slots[j].due_us != 0)
        j++;
    m->slots[j] = (struct call_slot){t0, t0 + (uint64_t)timeout_ms * 1000u + 1};
    return j;
}

/* One attempt on member i, whose slot the caller holds; called and returns with the lock
 * held, dropping it across the backend call. */
static CK_RV attempt_run(struct hf_pool *pool, size_t i, struct hf_hsm *hsm, hf_pool_fn fn,
                         void *arg, unsigned timeout_ms)
{
    struct call c = {fn, arg, i};
    uint64_t t0 = now_us();
    size_t slot = start_note(&pool->members[i], t0, timeout_ms);
    CK_RV rv;

    pthread_mutex_unlock(&pool->lock);
    rv = hf_hsm_run(hsm, call_trampoline, &c);
    t0 = now_us() - t0;
    pthread_mutex_lock(&pool->lock);
    pool->members[i].slots[slot].due_us = 0;
    member_release(pool, i, t0);
    return rv;
}

static CK_RV pool_run(struct hf_pool *pool, hf_pool_fn fn, void *arg, unsigned timeout_ms)
{
    struct hf_hsm *hsm = NULL;
    size_t a = NO_MEMBER, b = NO_MEMBER;
    enum rv_class first;
    CK_RV rv, retry_rv;

    if (pool == NULL || fn == NULL) return CKR_ARGUMENTS_BAD;
    pthread_mutex_lock(&pool->lock);
    pool->callers++;
    if ((rv = member_acquire(pool, NO_MEMBER, NO_MEMBER, false, &a, &hsm)) != CKR_OK) goto done;
    rv = attempt_run(pool, a, hsm, fn, arg, timeout_ms);
    if ((first = rv_classify(rv)) == RV_ANSWER) goto done;
    if (first == RV_DEVICE) member_fail(pool, a, rv);

    /* Once more, elsewhere. */
    if ((retry_rv = member_acquire(pool, a, NO_MEMBER, true, &b, &hsm)) != CKR_OK) {
        /* A suspect result with nobody to check it against stays the caller's answer. */
        if (first == RV_DEVICE) rv = retry_rv;
        goto done;
    }
    pool->members[a].failovers++;
    retry_rv = attempt_run(pool, b, hsm, fn, arg, timeout_ms);
    switch (rv_classify(retry_rv)) {
    case RV_DEVICE:
        member_fail(pool, b, retry_rv);
        rv = HF_POOL_RV_UNAVAILABLE;
        break;
    case RV_SUSPECT:
        /* Both members disliked it: the input's fault when the first did the same; after a
         * device failure, b's answer stands unchecked. */
        if (first == RV_DEVICE) rv = retry_rv;
        break;
    case RV_ANSWER:
        /* b served it, so a suspect answer from a was a's fault. Another answer than CKR_OK
         * (a key that b lacks) proves nothing about a. */
        if (first == RV_SUSPECT && retry_rv == CKR_OK) member_fail(pool, a, rv);
        rv = retry_rv;
        break;
    }
done:
    if (--pool->callers == 0 && pool->stopping) pthread_cond_broadcast(&pool->idle_cond);
    pthread_mutex_unlock(&pool->lock);
    return rv;
}

CK_RV hf_pool_run(struct hf_pool *pool, hf_pool_fn fn, void *arg)
{
    return pool ? pool_run(pool, fn, arg, pool->opts.call_timeout_ms) : CKR_ARGUMENTS_BAD;
}

static unsigned slow_timeout_ms(const struct hf_pool *pool)
{
    unsigned slow = HF_POOL_SLOW_CALL_TIMEOUT_MS;

    return pool->opts.call_timeout_ms > slow ? pool->opts.call_timeout_ms : slow;
}

CK_RV hf_pool_run_slow(struct hf_pool *pool, hf_pool_fn fn, void *arg)
{
    return pool ? pool_run(pool, fn, arg, slow_timeout_ms(pool)) : CKR_ARGUMENTS_BAD;
}

static CK_RV pool_run_on(struct hf_pool *pool, size_t member, hf_pool_fn fn, void *arg,
                         unsigned timeout_ms)
{
    struct hf_hsm *hsm = NULL;
    size_t a = NO_MEMBER;
    CK_RV rv;

    if (pool == NULL || fn == NULL || member >= pool->n) return CKR_ARGUMENTS_BAD;
    pthread_mutex_lock(&pool->lock);
    pool->callers++;
    if ((rv = member_acquire(pool, NO_MEMBER, member, false, &a, &hsm)) != CKR_OK) goto done;
    rv = attempt_run(pool, a, hsm, fn, arg, timeout_ms);
    /* Nowhere else to go: the member is taken out as hf_pool_run would, a suspect result is
     * the caller's answer (nobody can check it). */
    if (rv_classify(rv) == RV_DEVICE) {
        member_fail(pool, a, rv);
        rv = HF_POOL_RV_UNAVAILABLE;
    }
done:
    if (--pool->callers == 0 && pool->stopping) pthread_cond_broadcast(&pool->idle_cond);
    pthread_mutex_unlock(&pool->lock);
    return rv;
}

CK_RV hf_pool_run_on(struct hf_pool *pool, size_t member, hf_pool_fn fn, void *arg)
{
    return pool ? pool_run_on(pool, member, fn, arg, pool->opts.call_timeout_ms)
                : CKR_ARGUMENTS_BAD;
}

CK_RV hf_pool_run_on_slow(struct hf_pool *pool, size_t member, hf_pool_fn fn, void *arg)
{
    return pool ? pool_run_on(pool, member, fn, arg, slow_timeout_ms(pool)) : CKR_ARGUMENTS_BAD;
}

/* ---- the probe thread ------------------------------------------------------------------------ */

struct probe_call {
    struct hf_pool *pool;
    size_t member;
};

static CK_RV probe_trampoline(struct hf_hsm *hsm, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                              void *arg)
{
    struct probe_call *p = arg;

    return p->pool->opts.probe_fn(hsm, p->member, f, s, p->pool->opts.probe_arg);
}

/* Closes and opens member i again: its module's sessions (or the module itself, when we are its
 * only user) may be beyond repair. Called without the lock, while the member is out of service. */
static CK_RV member_reopen(struct hf_pool *pool, size_t i)
{
    struct member *m = &pool->members[i];
    struct hf_hsm *old = NULL, *fresh = NULL;
    CK_RV rv;

    pthread_mutex_lock(&pool->lock);
    if (m->in_flight > 0 || pool->stopping) {
        /* A call still holds the handle: try again next round. */
        pthread_mutex_unlock(&pool->lock);
        return CKR_DEVICE_ERROR;
    }
    old = m->hsm;
    m->hsm = NULL;
    pthread_mutex_unlock(&pool->lock);

    hf_hsm_close(old);
    rv = hf_hsm_open(m->module_path, m->lock_path, m->token_label, m->pin, &fresh);
    if (rv == CKR_OK) rv = hf_hsm_sessions_max_set(fresh, m->concurrency);
    if (rv == CKR_OK) rv = hf_hsm_probe(fresh);

    pthread_mutex_lock(&pool->lock);
    m->hsm = fresh;
    if (rv_is_pin_refused(rv)) {
        m->disabled = true;
        hf_log_error("pool: member %s refused its PIN (0x%lx): no longer probed", m->name,
                     (unsigned long)rv);
    }
    pthread_mutex_unlock(&pool->lock);
    return rv;
}

/* One probe of member i, out of service; true when it went back. */
static bool member_probe(struct hf_pool *pool, size_t i)
{
    struct member *m = &pool->members[i];
    struct probe_call p = {pool, i};
    struct hf_hsm *hsm;
    bool back = false;
    CK_RV rv;

    pthread_mutex_lock(&pool->lock);
    hsm = m->hsm;
    pthread_mutex_unlock(&pool->lock);
    /* Only this thread replaces m->hsm, so hsm stays valid below. */
    rv = hsm != NULL ? hf_hsm_probe(hsm) : CKR_DEVICE_ERROR;
    if (rv != CKR_OK) {
        if ((rv = member_reopen(pool, i)) != CKR_OK) return false;
        pthread_mutex_lock(&pool->lock);
        hsm = m->hsm;
        pthread_mutex_unlock(&pool->lock);
    }
    if (pool->opts.probe_fn != NULL) rv = hf_hsm_run(hsm, probe_trampoline, &p);

    /* Back after an outage: its server may have restarted and numbered its objects anew. */
    if (rv == CKR_OK) hf_hsm_objects_forget_all(hsm);
    pthread_mutex_lock(&pool->lock);
    if (rv == CKR_OK && !pool->stopping && !m->healthy) {
        m->healthy = back = true;
        hf_log_info("pool: member %s back in service", m->name);
        wake_all(pool);
    }
    pthread_mutex_unlock(&pool->lock);
    return back;
}

/* Member i's call in flight that is past its time, if any: its slot. Under the lock. */
static const struct call_slot *stuck_call(const struct hf_pool *pool, size_t i, uint64_t now)
{
    const struct member *m = &pool->members[i];

    for (size_t j = 0; j < m->concurrency; j++)
        if (m->slots[j].due_us != 0 && now > m->slots[j].due_us) return &m->slots[j];
    return NULL;
}

/* Members in service with a call past its time go out. Under the lock. */
static void stuck_calls_check(struct hf_pool *pool)
{
    uint64_t now = now_us();

    for (size_t i = 0; i < pool->n; i++) {
        struct member *m = &pool->members[i];
        const struct call_slot *c = m->healthy ? stuck_call(pool, i, now) : NULL;
        if (c == NULL) continue;
        m->healthy = false;
        m->failures++;
        hf_log_warn("pool: member %s out of service: a call has run %llu ms, past its limit of "
                    "%llu ms; it stays out until that call returns",
                    m->name, (unsigned long long)((now - c->started_us) / 1000u),
                    (unsigned long long)((c->due_us - c->started_us) / 1000u));
        wake_all(pool);
    }
}

static void *probe_main(void *arg)
{
    struct hf_pool *pool = arg;

    pthread_mutex_lock(&pool->lock);
    while (!pool->stopping) {
        struct timespec deadline = deadline_in_ms(pool->opts.probe_interval_ms);
        while (!pool->stopping &&
               pthread_cond_timedwait(&pool->probe_cond, &pool->lock, &deadline) != ETIMEDOUT)
            ;
        stuck_calls_check(pool);
        for (size_t i = 0; i < pool->n && !pool->stopping; i++) {
            struct member *m = &pool->members[i];
            bool back;
            if (m->disabled || (m->healthy && !m->stale)) continue;
            /* Its module may hang the probe as it hangs that call. */
            if (!m->healthy && stuck_call(pool, i, now_us()) != NULL) continue;
            /* A healthy member marked stale gets on_member_back without a probe: it never left
             * service, it only lacks something (hf_pool_member_stale). */
            back = m->healthy;
            m->stale = false;
            pthread_mutex_unlock(&pool->lock);
            if ((back || member_probe(pool, i)) && pool->opts.on_member_back != NULL)
                pool->opts.on_member_back(pool, i, pool->opts.on_member_back_arg);
            pthread_mutex_lock(&pool->lock);
        }
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

void hf_pool_member_stale(struct hf_pool *pool, size_t member)
{
    if (pool == NULL || member >= pool->n) return;
    pthread_mutex_lock(&pool->lock);
    pool->members[member].stale = true;
    pthread_mutex_unlock(&pool->lock);
}

/* ---- open, close, status --------------------------------------------------------------------- */

static void member_free(struct member *m)
{
    hf_hsm_close(m->hsm);
    free(m->name);
    free(m->module_path);
    free(m->token_label);
    free(m->lock_path);
    hf_secmem_free(m->pin, m->pin_len + 1);
    free(m->slots);
}

static CK_RV member_init(struct member *m, const struct hf_pool_member_spec *spec)
{
    if (spec->name == NULL || spec->module_path == NULL || spec->token_label == NULL ||
        spec->pin == NULL || spec->concurrency == 0)
        return CKR_ARGUMENTS_BAD;
    m->concurrency = spec->concurrency;
    m->pin_len = strlen(spec->pin);
    m->name = strdup(spec->name);
    m->module_path = strdup(spec->module_path);
    m->token_label = strdup(spec->token_label);
    m->lock_path = spec->lock_path != NULL ? strdup(spec->lock_path) : NULL;
    m->pin = hf_secmem_alloc(m->pin_len + 1);
    m->slots = calloc(m->concurrency, sizeof(*m->slots));
    if (m->name == NULL || m->module_path == NULL || m->token_label == NULL || m->pin == NULL ||
        m->slots == NULL || (spec->lock_path != NULL && m->lock_path == NULL))
        return CKR_HOST_MEMORY;
    memcpy(m->pin, spec->pin, m->pin_len);
    return CKR_OK;
}

static void pool_free(struct hf_pool *pool)
{
    for (size_t i = 0; i < pool->n; i++)
        member_free(&pool->members[i]);
    free(pool->members);
    pthread_cond_destroy(&pool->probe_cond);
    pthread_cond_destroy(&pool->idle_cond);
    pthread_cond_destroy(&pool->free_cond);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

/* The caller's probe_fn on member i at open; a refusal leaves it to the probe. */
static bool member_is_admitted(struct hf_pool *pool, size_t i)
{
    struct probe_call p = {pool, i};
    CK_RV rv;

    if (pool->opts.probe_fn == NULL) return true;
    if ((rv = hf_hsm_run(pool->members[i].hsm, probe_trampoline, &p)) == CKR_OK) return true;
    hf_log_warn("pool: member %s not admitted at open (0x%lx): left to the probe",
                pool->members[i].name, (unsigned long)rv);
    return false;
}

/* Opens every member's token; see pool.h for which failures are fatal. */
static CK_RV members_open(struct hf_pool *pool)
{
    size_t open = 0;
    CK_RV rv;

    for (size_t i = 0; i < pool->n; i++) {
        struct member *m = &pool->members[i];
        rv = hf_hsm_open(m->module_path, m->lock_path, m->token_label, m->pin, &m->hsm);
        /* A session per call in flight: hsm.c's default would cap the member under its limit. */
        if (rv == CKR_OK) rv = hf_hsm_sessions_max_set(m->hsm, m->concurrency);
        if (rv == CKR_OK) rv = hf_hsm_probe(m->hsm);
        /* A member the probe would not take back must not start in service either. */
        if (rv == CKR_OK && !member_is_admitted(pool, i)) continue;
        if (rv == CKR_OK) {
            m->healthy = true;
            open++;
        } else if (hf_pool_rv_is_failover(rv)) {
            hf_log_warn("pool: member %s unavailable at open (0x%lx): left to the probe", m->name,
                        (unsigned long)rv);
        } else {
            hf_log_error("pool: member %s cannot open (0x%lx)", m->name, (unsigned long)rv);
            return rv;
        }
    }
    return open > 0 ? CKR_OK : HF_POOL_RV_UNAVAILABLE;
}

CK_RV hf_pool_open(const struct hf_pool_member_spec *members, size_t n_members,
                   const struct hf_pool_options *opts, struct hf_pool **out)
{
    struct hf_pool *pool = NULL;
    CK_RV rv;

    if (out != NULL) *out = NULL;
    if (members == NULL || n_members == 0 || out == NULL) return CKR_ARGUMENTS_BAD;
    if ((pool = calloc(1, sizeof(*pool))) == NULL) return CKR_HOST_MEMORY;
    if (opts != NULL)
        pool->opts = *opts;
    else
        pool->opts.queue_max = HF_POOL_QUEUE_MAX_DEFAULT;
    if (pool->opts.queue_wait_ms == 0) pool->opts.queue_wait_ms = HF_POOL_QUEUE_WAIT_MS;
    if (pool->opts.probe_interval_ms == 0) pool->opts.probe_interval_ms = HF_POOL_PROBE_INTERVAL_MS;
    if (pool->opts.call_timeout_ms == 0) pool->opts.call_timeout_ms = HF_POOL_CALL_TIMEOUT_MS;
    pthread_mutex_init(&pool->lock, NULL);
    cond_init_monotonic(&pool->free_cond);
    cond_init_monotonic(&pool->idle_cond);
    cond_init_monotonic(&pool->probe_cond);
    pool->queue_tail = &pool->queue_head;
    if ((pool->members = calloc(n_members, sizeof(*pool->members))) == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    pool->n = n_members;
    for (size_t i = 0; i < n_members; i++)
        if ((rv = member_init(&pool->members[i], &members[i])) != CKR_OK) goto done;
    if ((rv = members_open(pool)) != CKR_OK) goto done;
    if (pthread_create(&pool->probe_thread, NULL, probe_main, pool) != 0) {
        rv = CKR_GENERAL_ERROR;
        goto done;
    }
    pool->probe_started = true;
    *out = pool;
done:
    if (rv != CKR_OK) pool_free(pool);
    return rv;
}

void hf_pool_close(struct hf_pool *pool)
{
    if (pool == NULL) return;
    pthread_mutex_lock(&pool->lock);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->probe_cond);
    wake_all(pool);
    pthread_mutex_unlock(&pool->lock);
    if (pool->probe_started) pthread_join(pool->probe_thread, NULL);
    pthread_mutex_lock(&pool->lock);
    while (pool->callers > 0)
        pthread_cond_wait(&pool->idle_cond, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    pool_free(pool);
}

size_t hf_pool_status(struct hf_pool *pool, struct hf_pool_member_status *out, size_t n)
{
    if (pool == NULL) return 0;
    if (out == NULL) return pool->n;
    pthread_mutex_lock(&pool->lock);
    for (size_t i = 0; i < n && i < pool->n; i++) {
        const struct member *m = &pool->members[i];
        struct hf_pool_member_status *o = &out[i];
        o->name = m->name;
        o->healthy = m->healthy;
        o->disabled = m->disabled;
        o->concurrency = m->concurrency;
        o->in_flight = m->in_flight;
        o->calls = m->calls;
        o->queued = m->queued;
        o->failures = m->failures;
        o->failovers = m->failovers;
        o->last_latency_us = m->last_latency_us;
        o->latency_sum_us = m->latency_sum_us;
        memcpy(o->latency, m->latency, sizeof(o->latency));
    }
    pthread_mutex_unlock(&pool->lock);
    return pool->n;
}

void hf_pool_queue_status(struct hf_pool *pool, struct hf_pool_queue_status *out)
{
    if (pool == NULL || out == NULL) return;
    pthread_mutex_lock(&pool->lock);
    out->waiting = pool->waiting;
    out->queue_max = pool->opts.queue_max;
    out->throttled = pool->throttled;
    out->unavailable = pool->unavailable;
    pthread_mutex_unlock(&pool->lock);
}
