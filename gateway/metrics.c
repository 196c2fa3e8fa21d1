/* Prometheus metrics (metrics.h). A series is a fixed block of atomic counters: one per HTTP
 * status (100-599) and one per latency bucket, so recording a request is a few relaxed atomic
 * adds and never a lock or an allocation. */
#include "hf-build.h"

#include "gateway/metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bucket edges as thousandths of the limit: a limit in ms times these is the edge in us. */
static const unsigned bucket_permille[HF_GW_METRICS_NBUCKETS] = {
    1, 2, 4, 10, 20, 40, 100, 250, 500, 800, 1000, 1500, 2000, 4000};
#define NBUCKETS HF_GW_METRICS_NBUCKETS
#define STATUS_MIN 100
#define STATUS_MAX 599

struct hf_gw_series {
    struct hf_gw_series *next;
    char *api, *operation;
    uint64_t bucket_us[NBUCKETS];
    uint64_t limit_us; /* 0: not an API (the gateway's own endpoints) */
    atomic_ullong by_status[STATUS_MAX - STATUS_MIN + 1];
    atomic_ullong buckets[NBUCKETS + 1]; /* the last is +Inf */
    atomic_ullong sum_us, count, within_limit;
};

static struct {
    pthread_mutex_t lock; /* guards the list (registration, rendering, shutdown) */
    struct hf_gw_series *head;
    atomic_ullong reload_ok, reload_failed, audit_failures;
    atomic_ullong preauth_refused, preauth_written, preauth_unwritten;
    atomic_llong inflight, audit_waiting;
} m = {.lock = PTHREAD_MUTEX_INITIALIZER};

void hf_gw_metrics_buckets(unsigned limit_ms, uint64_t out_us[HF_GW_METRICS_NBUCKETS])
{
    uint64_t limit = limit_ms == 0                           ? HF_GW_DEFAULT_LATENCY_LIMIT_MS
                     : limit_ms > HF_GW_MAX_LATENCY_LIMIT_MS ? HF_GW_MAX_LATENCY_LIMIT_MS
                                                             : limit_ms;

    for (size_t i = 0; i < NBUCKETS; i++)
        out_us[i] = limit * bucket_permille[i];
}

double hf_gw_metrics_ratio(unsigned long long within, unsigned long long total)
{
    if (total == 0) return 1.0;
    if (within > total) within = total; /* read apart from total: a racing call counted in one */
    return (double)within / (double)total;
}

struct hf_gw_series *hf_gw_metrics_series(const char *api, const char *operation, unsigned limit_ms)
{
    struct hf_gw_series *s, **tail;

    if (!api || !operation) return NULL;
    pthread_mutex_lock(&m.lock);
    for (tail = &m.head; (s = *tail); tail = &s->next)
        if (strcmp(s->api, api) == 0 && strcmp(s->operation, operation) == 0) goto done;
    if ((s = calloc(1, sizeof(*s)))) {
        s->api = strdup(api);
        s->operation = strdup(operation);
        hf_gw_metrics_buckets(limit_ms, s->bucket_us);
        s->limit_us = limit_ms ? s->bucket_us[10] : 0; /* the 1000 permille edge */
        if (!s->api || !s->operation) {
            free(s->api);
            free(s->operation);
            free(s);
            s = NULL;
        } else {
            *tail = s; /* appended: rendering keeps registration order */
        }
    }
done:
    pthread_mutex_unlock(&m.lock);
    return s;
}

void hf_gw_metrics_observe(struct hf_gw_series *s, unsigned http_status, uint64_t latency_us)
{
    size_t b = 0;

    if (!s) return;
    if (http_status < STATUS_MIN || http_status > STATUS_MAX) http_status = 500;
    atomic_fetch_add_explicit(&s->by_status[http_status - STATUS_MIN], 1, memory_order_relaxed);
    while (b < NBUCKETS && latency_us > s->bucket_us[b])
        b++;
    if (s->limit_us && latency_us <= s->limit_us)
        atomic_fetch_add_explicit(&s->within_limit, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->sum_us, latency_us, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
}

void hf_gw_metrics_reload_count(bool ok)
{
    atomic_fetch_add(ok ? &m.reload_ok : &m.reload_failed, 1);
}

void hf_gw_metrics_preauth_refused(void)
{
    atomic_fetch_add_explicit(&m.preauth_refused, 1, memory_order_relaxed);
}

void hf_gw_metrics_preauth_summary(bool written)
{
    atomic_fetch_add_explicit(written ? &m.preauth_written : &m.preauth_unwritten, 1,
                              memory_order_relaxed);
}

void hf_gw_metrics_audit_failure(void)
{
    atomic_fetch_add(&m.audit_failures, 1);
}

void hf_gw_metrics_inflight_add(int delta)
{
    atomic_fetch_add_explicit(&m.inflight, delta, memory_order_relaxed);
}

void hf_gw_metrics_audit_waiting_add(int delta)
{
    atomic_fetch_add_explicit(&m.audit_waiting, delta, memory_order_relaxed);
}

struct buf {
    char *p;
    size_t len, cap;
    bool oom;
};

static void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->oom) return;
    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if ((size_t)n < b->cap - b->len) break;
        {
            size_t cap = b->cap * 2 + (size_t)n;
            char *grown = realloc(b->p, cap);
            if (!grown) {
                b->oom = true;
                return;
            }
            b->p = grown;
            b->cap = cap;
        }
    }
    b->len += (size_t)n;
}

/* A label value as the text format wants it: backslash, quote and newline escaped. */
static const char *label_escape(const char *in, char *out, size_t size)
{
    size_t o = 0;

    for (; *in && o + 3 < size; in++) {
        if (*in == '\\' || *in == '"') {
            out[o++] = '\\';
            out[o++] = *in;
        } else if (*in == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *in;
        }
    }
    out[o] = '\0';
    return out;
}

static unsigned long long load(atomic_ullong *a)
{
    return atomic_load_explicit(a, memory_order_relaxed);
}

/* Whether s is the first series of its API in the list (the API's lines are written there). */
static bool series_is_first_of_api(const struct hf_gw_series *s)
{
    for (const struct hf_gw_series *t = m.head; t != s; t = t->next)
        if (t->limit_us && strcmp(t->api, s->api) == 0) return false;
    return true;
}

/* Per API: its limit, the calls answered within it, and their share since start. The share
 * is also computable as holdfast_requests_within_limit_total over sum by (api) of
 * holdfast_requests_total; the gauge spares an operator the query. m.lock held. */
static void within_limit_render(struct buf *b)
{
    static const char *const heads[3] = {
        "# HELP holdfast_request_latency_limit_seconds The cloud's latency limit for one call "
        "of the API.\n# TYPE holdfast_request_latency_limit_seconds gauge\n",
        "# HELP holdfast_requests_within_limit_total Requests answered within the API's latency "
        "limit (headers to response, audit record included).\n"
        "# TYPE holdfast_requests_within_limit_total counter\n",
        "# HELP holdfast_requests_within_limit_ratio Share of the API's requests answered "
        "within its latency limit since start.\n"
        "# TYPE holdfast_requests_within_limit_ratio gauge\n"};
    char api[160];

    for (int kind = 0; kind < 3; kind++) {
        buf_printf(b, "%s", heads[kind]);
        for (struct hf_gw_series *s = m.head; s; s = s->next) {
            unsigned long long within = 0, total = 0;
            if (!s->limit_us || !series_is_first_of_api(s)) continue;
            for (struct hf_gw_series *t = s; t; t = t->next)
                if (t->limit_us && strcmp(t->api, s->api) == 0) {
                    within += load(&t->within_limit);
                    total += load(&t->count);
                }
            label_escape(s->api, api, sizeof(api));
            if (kind == 0)
                buf_printf(b, "holdfast_request_latency_limit_seconds{api=\"%s\"} %g\n", api,
                           (double)s->limit_us / 1e6);
            else if (kind == 1)
                buf_printf(b, "holdfast_requests_within_limit_total{api=\"%s\"} %llu\n", api,
                           within);
            else
                buf_printf(b, "holdfast_requests_within_limit_ratio{api=\"%s\"} %.6g\n", api,
                           hf_gw_metrics_ratio(within, total));
        }
    }
}

char *hf_gw_metrics_render(bool key_source_up, const HF_AUDIT_STATUS *audit, size_t *len)
{
    struct buf b = {malloc(8192), 0, 8192, false};
    struct hf_gw_series *s;
    char api[160], op[160];

    if (!b.p) return NULL;
    b.p[0] = '\0';
    buf_printf(&b, "# HELP holdfast_requests_total HTTP requests answered, by API, operation and "
                   "status.\n# TYPE holdfast_requests_total counter\n");
    pthread_mutex_lock(&m.lock);
    for (s = m.head; s; s = s->next) {
        label_escape(s->api, api, sizeof(api));
        label_escape(s->operation, op, sizeof(op));
        for (unsigned i = 0; i <= STATUS_MAX - STATUS_MIN; i++) {
            unsigned long long n = load(&s->by_status[i]);
            if (n)
                buf_printf(&b,
                           "holdfast_requests_total{api=\"%s\",operation=\"%s\",status=\"%u\"} "
                           "%llu\n",
                           api, op, i + STATUS_MIN, n);
        }
    }
    buf_printf(&b, "# HELP holdfast_request_duration_seconds Time from the request's headers to "
                   "its response, audit record included.\n"
                   "# TYPE holdfast_request_duration_seconds histogram\n");
    for (s = m.head; s; s = s->next) {
        unsigned long long cum = 0, count = load(&s->count);
        if (count == 0) continue;
        label_escape(s->api, api, sizeof(api));
        label_escape(s->operation, op, sizeof(op));
        for (size_t i = 0; i <= NBUCKETS; i++) {
            cum += load(&s->buckets[i]);
            if (i < NBUCKETS)
                buf_printf(&b,
                           "holdfast_request_duration_seconds_bucket{api=\"%s\",operation=\"%s\","
                           "le=\"%g\"} %llu\n",
                           api, op, (double)s->bucket_us[i] / 1e6, cum);
            else
                buf_printf(&b,
                           "holdfast_request_duration_seconds_bucket{api=\"%s\",operation=\"%s\","
                           "le=\"+Inf\"} %llu\n",
                           api, op, cum);
        }
        buf_printf(&b,
                   "holdfast_request_duration_seconds_sum{api=\"%s\",operation=\"%s\"} %.6f\n"
                   "holdfast_request_duration_seconds_count{api=\"%s\",operation=\"%s\"} %llu\n",
                   api, op, (double)load(&s->sum_us) / 1e6, api, op, count);
    }
    within_limit_render(&b);
    pthread_mutex_unlock(&m.lock);
    buf_printf(&b,
               "# HELP holdfast_key_source_up Whether the PKCS#11 module and its key store "
               "answer.\n# TYPE holdfast_key_source_up gauge\nholdfast_key_source_up %d\n",
               key_source_up ? 1 : 0);
    buf_printf(&b,
               "# HELP holdfast_inflight_requests Requests received and not yet answered.\n"
               "# TYPE holdfast_inflight_requests gauge\nholdfast_inflight_requests %lld\n",
               (long long)atomic_load(&m.inflight));
    buf_printf(&b,
               "# HELP holdfast_audit_waiting_requests Requests whose answer waits for its audit "
               "record to be durable.\n# TYPE holdfast_audit_waiting_requests gauge\n"
               "holdfast_audit_waiting_requests %lld\n",
               (long long)atomic_load(&m.audit_waiting));
    buf_printf(&b,
               "# HELP holdfast_audit_failures_total Requests answered with an error because "
               "their audit record could not be made durable.\n"
               "# TYPE holdfast_audit_failures_total counter\nholdfast_audit_failures_total "
               "%llu\n",
               load(&m.audit_failures));
    buf_printf(&b,
               "# HELP holdfast_preauth_refused_total Requests refused before authentication "
               "(counted into summary records, not recorded one by one).\n"
               "# TYPE holdfast_preauth_refused_total counter\n"
               "holdfast_preauth_refused_total %llu\n"
               "# HELP holdfast_preauth_summaries_total Summary records of refused requests, by "
               "whether the audit log took them (refused: under its reserve, kept for later).\n"
               "# TYPE holdfast_preauth_summaries_total counter\n"
               "holdfast_preauth_summaries_total{result=\"written\"} %llu\n"
               "holdfast_preauth_summaries_total{result=\"refused\"} %llu\n",
               load(&m.preauth_refused), load(&m.preauth_written), load(&m.preauth_unwritten));
    if (audit)
        buf_printf(&b,
                   "# HELP holdfast_audit_space_state The audit log's free space: 0 ok, 1 under "
                   "the alarm threshold, 2 under the reserve (only authenticated key operations "
                   "are recorded), 3 full (key operations fail until space is freed).\n"
                   "# TYPE holdfast_audit_space_state gauge\nholdfast_audit_space_state %lu\n"
                   "# HELP holdfast_audit_free_bytes Free space of the audit log's file system.\n"
                   "# TYPE holdfast_audit_free_bytes gauge\nholdfast_audit_free_bytes %llu\n"
                   "# HELP holdfast_audit_reserve_bytes Free space kept for authenticated key "
                   "operations.\n# TYPE holdfast_audit_reserve_bytes gauge\n"
                   "holdfast_audit_reserve_bytes %llu\n"
                   "# HELP holdfast_audit_alarm_bytes Free space under which the alarm is "
                   "raised.\n# TYPE holdfast_audit_alarm_bytes gauge\n"
                   "holdfast_audit_alarm_bytes %llu\n"
                   "# HELP holdfast_audit_refused_records_total Audit records refused for want of "
                   "space (the core's count).\n"
                   "# TYPE holdfast_audit_refused_records_total counter\n"
                   "holdfast_audit_refused_records_total %llu\n",
                   (unsigned long)audit->space, audit->free_bytes, audit->reserve_bytes,
                   audit->alarm_bytes, audit->refused);
    buf_printf(&b,
               "# HELP holdfast_config_reloads_total SIGHUP reloads, by result.\n"
               "# TYPE holdfast_config_reloads_total counter\n"
               "holdfast_config_reloads_total{result=\"ok\"} %llu\n"
               "holdfast_config_reloads_total{result=\"error\"} %llu\n",
               load(&m.reload_ok), load(&m.reload_failed));
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}

void hf_gw_metrics_shutdown(void)
{
    pthread_mutex_lock(&m.lock);
    while (m.head) {
        struct hf_gw_series *s = m.head;
        m.head = s->next;
        free(s->api);
        free(s->operation);
        free(s);
    }
    pthread_mutex_unlock(&m.lock);
}
