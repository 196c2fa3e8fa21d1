/* Summaries of requests refused before authentication (preauth.h).
 *
 * The table is open addressing over (source, API, error name) under one lock: only refused
 * requests take it, for a few hundred nanoseconds, and the authenticated path never does. */
#include "hf-build.h"

#include "gateway/preauth.h"
#include "gateway/log.h"
#include "gateway/metrics.h"
#include "gateway/p11.h"

#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

struct entry {
    bool used;
    char source[64]; /* numeric: an IPv6 address with its scope fits */
    char api[48];
    char reason[64]; /* the API's error name */
    enum hf_status status;
    char sample[160]; /* "METHOD /path" of the first request, printable ASCII */
    unsigned long long count;
    struct timespec first, last; /* CLOCK_REALTIME */
};

static struct {
    pthread_mutex_t lock; /* the table: tab, n, overflow */
    struct entry *tab;    /* slots: a power of two, at least twice max_keys */
    size_t slots, max_keys, n;
    struct entry overflow; /* every key past max_keys */

    pthread_mutex_t flush_lock; /* one flush at a time: the thread's, or stop's */
    pthread_mutex_t wake_lock;  /* stopping, and the thread's sleep */
    pthread_cond_t wake;
    bool stopping, running;
    pthread_t thread;
    unsigned interval_ms;
    unsigned long last_space; /* HF_AUDIT_SPACE_* last seen by the thread */
} pa = {.lock = PTHREAD_MUTEX_INITIALIZER,
        .flush_lock = PTHREAD_MUTEX_INITIALIZER,
        .wake_lock = PTHREAD_MUTEX_INITIALIZER,
        .wake = PTHREAD_COND_INITIALIZER};

static uint64_t key_hash(const char *source, const char *api, const char *reason)
{
    const char *parts[] = {source, api, reason};
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */

    for (size_t i = 0; i < 3; i++) {
        for (const char *p = parts[i]; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        h = (h ^ 0xff) * 1099511628211ULL;
    }
    return h;
}

static bool entry_is(const struct entry *e, const char *source, const char *api, const char *reason)
{
    return strcmp(e->source, source) == 0 && strcmp(e->api, api) == 0 &&
           strcmp(e->reason, reason) == 0;
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Under lock: adds what `from` counted to its key's entry (new, or the overflow). */
static void entry_merge(const struct entry *from)
{
    struct entry *e = NULL;

    if (pa.tab) {
        size_t i = (size_t)key_hash(from->source, from->api, from->reason) & (pa.slots - 1);
        while (pa.tab[i].used && !entry_is(&pa.tab[i], from->source, from->api, from->reason))
            i = (i + 1) & (pa.slots - 1);
        if (pa.tab[i].used || pa.n < pa.max_keys) e = &pa.tab[i];
    }
    if (!e) {
        e = &pa.overflow;
        if (!e->used) {
            *e = *from;
            snprintf(e->source, sizeof(e->source), "overflow");
            snprintf(e->reason, sizeof(e->reason), "various");
            return;
        }
    }
    if (!e->used) {
        *e = *from;
        pa.n++;
        return;
    }
    e->count += from->count;
    if (ts_before(&from->first, &e->first)) e->first = from->first;
    if (ts_before(&e->last, &from->last)) e->last = from->last;
}

static void address_format(const struct sockaddr *sa, char *out, size_t outlen)
{
    socklen_t len = !sa                         ? 0
                    : sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                : sizeof(struct sockaddr_in);

    if (!sa || getnameinfo(sa, len, out, outlen, NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(out, outlen, "unknown");
}

static void source_of(const struct hf_request *req, char *out, size_t outlen)
{
    const union MHD_ConnectionInfo *ci =
        req->conn ? MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;

    address_format(ci ? ci->client_addr : NULL, out, outlen);
}

/* What an auditor may read of a request nobody authenticated: printable ASCII, bounded. */
static void sample_of(const struct hf_request *req, char *out, size_t outlen)
{
    size_t n;

    snprintf(out, outlen, "%s %s", req->method && req->method[0] ? req->method : "?",
             req->path ? req->path : "");
    for (n = 0; out[n]; n++)
        if ((unsigned char)out[n] < 0x20 || (unsigned char)out[n] > 0x7e) out[n] = '?';
}

bool hf_gw_preauth_is_refusal(const struct hf_request *req)
{
    return req->failed && !req->authenticated && !req->builtin;
}

static void entry_count(struct entry *e)
{
    clock_gettime(CLOCK_REALTIME, &e->first);
    e->last = e->first;
    hf_gw_metrics_preauth_refused();
    pthread_mutex_lock(&pa.lock);
    entry_merge(e);
    pthread_mutex_unlock(&pa.lock);
}

void hf_gw_preauth_count(const struct hf_request *req)
{
    struct entry e = {.used = true, .count = 1, .status = req->status};

    source_of(req, e.source, sizeof(e.source));
    snprintf(e.api, sizeof(e.api), "%s", req->api ? req->api : "gateway");
    snprintf(e.reason, sizeof(e.reason), "%s", req->error_name ? req->error_name : "Error");
    sample_of(req, e.sample, sizeof(e.sample));
    entry_count(&e);
}

void hf_gw_preauth_count_cut(const struct sockaddr *peer, const char *reason)
{
    struct entry e = {.used = true, .count = 1, .status = HF_STATUS_BAD_REQUEST};

    address_format(peer, e.source, sizeof(e.source));
    snprintf(e.api, sizeof(e.api), "gateway");
    snprintf(e.reason, sizeof(e.reason), "%s", reason);
    snprintf(e.sample, sizeof(e.sample), "connection closed unanswered");
    entry_count(&e);
}

static void time_format(const struct timespec *ts, char *out, size_t outlen)
{
    struct tm tm;
    size_t n;

    gmtime_r(&ts->tv_sec, &tm);
    n = strftime(out, outlen, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, outlen - n, ".%03uZ", (unsigned)(ts->tv_nsec / 1000000) % 1000u);
}

/* One summary record; false when it could not be written (the caller keeps it counted). */
static bool summary_write(const struct entry *e)
{
    const HF_FUNCTION_LIST *v = hf_p11_vendor();
    char detail[512], first[40], last[40];
    CK_ULONG_LONG seq = 0;
    HF_REQUEST_CONTEXT ctx;

    time_format(&e->first, first, sizeof(first));
    time_format(&e->last, last, sizeof(last));
    snprintf(detail, sizeof(detail),
             "%s: %llu requests refused before authentication, first %s, last %s; sample: %s",
             e->reason, e->count, first, last, e->sample);
    if (!v || !hf_gw_p11_has_audit_summary()) {
        /* Another vendor's module, or an older Holdfast: the log is all there is. */
        hf_gw_log_warn("refused before authentication from %s (%s): %s", e->source, e->api, detail);
        return true;
    }
    ctx = (HF_REQUEST_CONTEXT){
        .api = e->api, .operation = "preauth.summary", .caller = e->source, .detail = detail};
    return v->HF_AuditSummary(&ctx, hf_gw_ckr_from_status(e->status), &seq) == CKR_OK;
}

void hf_gw_preauth_flush(void)
{
    struct entry *taken = NULL, over;
    size_t slots = 0, kept = 0;

    pthread_mutex_lock(&pa.flush_lock);
    pthread_mutex_lock(&pa.lock);
    if (pa.n > 0 || pa.overflow.used) {
        /* A fresh table for the counting to go on in while the records are written. */
        struct entry *fresh = calloc(pa.slots, sizeof(*fresh));
        if (fresh) {
            taken = pa.tab;
            slots = pa.slots;
            pa.tab = fresh;
            pa.n = 0;
        }
    }
    over = pa.overflow;
    if (taken) memset(&pa.overflow, 0, sizeof(pa.overflow));
    pthread_mutex_unlock(&pa.lock);
    if (!taken) goto done; /* nothing counted, or no memory: the next interval tries */
    for (size_t i = 0; i <= slots; i++) {
        struct entry *e = i < slots ? &taken[i] : &over;
        if (!e->used) continue;
        if (summary_write(e)) {
            hf_gw_metrics_preauth_summary(true);
            continue;
        }
        hf_gw_metrics_preauth_summary(false);
        kept++;
        pthread_mutex_lock(&pa.lock);
        entry_merge(e);
        pthread_mutex_unlock(&pa.lock);
    }
    if (kept)
        hf_gw_log_warn("audit: %zu summaries of refused requests not written (audit log under "
                       "its reserve?): kept for the next interval",
                       kept);
    free(taken);
done:
    pthread_mutex_unlock(&pa.flush_lock);
}

/* The alarm, as the gateway sees it: one log event per change of the audit log's space. */
static void space_watch(void)
{
    static const char *const names[] = {"ok", "alarm", "reserve", "full"};
    HF_AUDIT_STATUS st;

    if (!hf_gw_p11_audit_status(&st) || st.space > HF_AUDIT_SPACE_FULL) return;
    if (st.space == pa.last_space) return;
    if (st.space == HF_AUDIT_SPACE_OK)
        hf_gw_log_info("audit space ok again: %llu bytes free", st.free_bytes);
    else
        hf_gw_log_warn("audit space %s: %llu bytes free (alarm under %llu, reserve %llu)",
                       names[st.space], st.free_bytes, st.alarm_bytes, st.reserve_bytes);
    pa.last_space = st.space;
}

static void *preauth_main(void *arg)
{
    struct timespec next;
    uint64_t waited_ms = 0;

    (void)arg;
    pthread_mutex_lock(&pa.wake_lock);
    while (!pa.stopping) {
        /* A second at a time: the space watch's pace; the summaries every interval. */
        unsigned step = pa.interval_ms < 1000 ? pa.interval_ms : 1000;
        clock_gettime(CLOCK_REALTIME, &next);
        next.tv_sec += step / 1000;
        next.tv_nsec += (long)(step % 1000) * 1000000L;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&pa.wake, &pa.wake_lock, &next);
        if (pa.stopping) break;
        pthread_mutex_unlock(&pa.wake_lock);
        space_watch();
        waited_ms += step;
        if (waited_ms >= pa.interval_ms) {
            waited_ms = 0;
            hf_gw_preauth_flush();
        }
        pthread_mutex_lock(&pa.wake_lock);
    }
    pthread_mutex_unlock(&pa.wake_lock);
    return NULL;
}

bool hf_gw_preauth_start(unsigned interval_ms, size_t max_keys)
{
    sigset_t all, old;
    size_t slots = 16;
    int err;

    if (pa.running) return true;
    if (max_keys < 1) max_keys = 1;
    while (slots < 2 * max_keys && slots < ((size_t)1 << 30))
        slots *= 2;
    pthread_mutex_lock(&pa.lock);
    if (!pa.tab && !(pa.tab = calloc(slots, sizeof(*pa.tab)))) {
        pthread_mutex_unlock(&pa.lock);
        return false;
    }
    pa.slots = slots;
    pa.max_keys = max_keys;
    pthread_mutex_unlock(&pa.lock);
    pa.interval_ms = interval_ms ? interval_ms : HF_GW_PREAUTH_INTERVAL_MS;
    pa.stopping = false;
    pa.last_space = HF_AUDIT_SPACE_OK;
    /* Signals belong to the main thread (sigwaitinfo). */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    err = pthread_create(&pa.thread, NULL, preauth_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) return false;
    pa.running = true;
    return true;
}

void hf_gw_preauth_stop(void)
{
    if (pa.running) {
        pthread_mutex_lock(&pa.wake_lock);
        pa.stopping = true;
        pthread_cond_signal(&pa.wake);
        pthread_mutex_unlock(&pa.wake_lock);
        pthread_join(pa.thread, NULL);
        pa.running = false;
    }
    hf_gw_preauth_flush();
    pthread_mutex_lock(&pa.lock);
    free(pa.tab);
    pa.tab = NULL;
    pa.n = 0;
    pthread_mutex_unlock(&pa.lock);
}
