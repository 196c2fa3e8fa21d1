/* The audit log (audit.h): append-only JSON lines, one hash chain per opening process.
 *
 * A record is one line whose members come in this fixed order:
 *   {"seq":N,"stream":"16 hex","time":"RFC 3339 UTC, microseconds","node":..,"pid":N,"api":..,
 *    "op":..,"key":..,"key_name":..,"version":N,"caller":..,"request_id":..,"detail":..,
 *    "result":"0x%lx","ok":bool,"latency_us":N,"prev":"64 hex","hash":"64 hex"}
 * Absent strings (and version 0) are omitted. hash = SHA-256(prev as 32 raw bytes || the line's
 * bytes from '{' up to, not including, ',"hash"'), so a verifier needs no canonical JSON form.
 *
 * Processes share the file without a lock at append time: each record is one write() of the
 * whole line to an O_APPEND descriptor, which local filesystems apply atomically. Only opening
 * takes flock(LOCK_EX), so the stream-open record names the record that really was last.
 *
 * Torn lines. A process killed inside write() can leave a prefix of its line without the '\n';
 * the next record written by anyone is then glued to that prefix. The verifier accepts such a
 * prefix (the record it held had not been returned to anybody), parses the record glued to it,
 * and tolerates a torn last line; any other line that is not a record fails verification. */
#include "hf-build.h"

#include "pkcs11/core/audit.h"
#include "pkcs11/core/crypto.h"
#include "pkcs11/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HASH_LEN 32
#define HEX_HASH_LEN (2 * HASH_LEN)
#define STREAM_ID_LEN 16
/* ',"hash":"' + 64 hex + '"}': every record line ends with exactly this. */
#define HASH_TAIL_LEN (9 + HEX_HASH_LEN + 2)
#define SEQ_KEY "{\"seq\":"
/* Room in front of the body for '{"seq":' + 20 digits + ','. */
#define SEQ_ROOM 32
/* Everything in a line but the escaped strings: member names, numbers, time, prev, hash. */
#define LINE_FIXED 512
/* Most records fit: no malloc on the hot path. */
#define LINE_STACK 4096
/* The opener looks this far back for the last record before giving up on naming it. */
#define TAIL_SCAN_MAX (16u << 20)
/* Write combining (line_write): how long an appender spins before it sleeps (~30 us), and how
 * many batches a writer takes for others once its own line is out. */
#define SPIN_LIMIT 20000
#define DRAIN_EXTRA_ROUNDS 2

static const char hex_digits[] = "0123456789abcdef";
static const unsigned char zero_hash[HASH_LEN];

/* A durability callback waiting for the writer. */
struct notify {
    struct notify *next;
    uint64_t seq;
    HF_AUDIT_DURABLE_FN fn;
    void *arg;
};

struct hf_audit {
    int fd;
    pid_t pid;
    bool success_events;
    unsigned sync_interval_ms;
    char *path; /* owned; for messages */
    char *node; /* owned; NULL: not written */
    char stream[STREAM_ID_LEN + 1];
    EVP_MD *sha256;
    atomic_bool failed;      /* a write or sync failed: appends refuse */
    atomic_bool sync_failed; /* a sync failed: nothing written becomes durable any more */
    atomic_bool abandoned;
    _Atomic uint64_t durable_seq;

    /* state_lock protects the chain (seq, prev, mdctx and the order of writes to fd, so the file
     * holds a stream's records in seq order) and the writer's state below it. */
    pthread_mutex_t state_lock;
    EVP_MD_CTX *mdctx;
    uint64_t seq; /* last seq chained (numbered and hashed) */
    unsigned char prev[HASH_LEN];
    /* Write combining: one thread at a time writes (`writing`); lines chained meanwhile wait in
     * `batch`, in seq order, and go out together in its next write(). Measured: with a lock held
     * across each thread's own write() two threads did 0.83x the AES-GCM rate of one. */
    atomic_bool writing;
    char *batch; /* chained lines not yet written */
    size_t batch_len, batch_cap;
    char *spare; /* the previous batch buffer, reused */
    size_t spare_cap;
    _Atomic uint64_t written_seq; /* last seq handed to the kernel */
    pthread_cond_t written;       /* appenders whose line is in a batch sleep here */
    bool written_ready;
    /* -- the writer's state -- */
    pthread_cond_t wake;            /* the writer sleeps here */
    pthread_cond_t durable;         /* hf_audit_wait_durable sleeps here */
    bool unsynced;                  /* records written since the writer took its last sync target */
    struct timespec unsynced_since; /* CLOCK_MONOTONIC: the oldest of them */
    bool sync_wanted;               /* someone waits: sync now, not at the interval */
    bool stopping;
    struct notify *notify_head, **notify_tail; /* in the order they were asked for */
    bool lock_ready, wake_ready, durable_ready;
    bool writer_running;
    pthread_t writer;
};

/* ---- formatting (the hot path) ---- */

/* JSON string escaping by hand: building a json-c object per record and serialising it was judged
 * too slow for a path every key operation takes; the format needs only these three rules. Bytes
 * >= 0x80 pass through unchanged (UTF-8 stays UTF-8). Writes at most 6 bytes per input byte. */
static char *put_escaped(char *p, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            *p++ = '\\';
            *p++ = (char)c;
        } else if (c < 0x20) {
            memcpy(p, "\\u00", 4);
            p[4] = hex_digits[c >> 4];
            p[5] = hex_digits[c & 15];
            p += 6;
        } else {
            *p++ = (char)c;
        }
    }
    return p;
}

static char *put_raw(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

static char *put_u64(char *p, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

static char *put_hex(char *p, const unsigned char *bytes, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        *p++ = hex_digits[bytes[i] >> 4];
        *p++ = hex_digits[bytes[i] & 15];
    }
    return p;
}

/* ,"name":"escaped value", or nothing for NULL. */
static char *put_member(char *p, const char *name, const char *value)
{
    if (!value) return p;
    *p++ = ',';
    *p++ = '"';
    p = put_raw(p, name);
    memcpy(p, "\":\"", 3);
    p = put_escaped(p + 3, value);
    *p++ = '"';
    return p;
}

static char *put_digits(char *p, unsigned v, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return p + width;
}

/* RFC 3339 UTC with microseconds: 2024-05-01T12:34:56.123456Z (27 bytes). */
static char *put_time(char *p)
{
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    p = put_digits(p, (unsigned)tm.tm_year + 1900, 4);
    *p++ = '-';
    p = put_digits(p, (unsigned)tm.tm_mon + 1, 2);
    *p++ = '-';
    p = put_digits(p, (unsigned)tm.tm_mday, 2);
    *p++ = 'T';
    p = put_digits(p, (unsigned)tm.tm_hour, 2);
    *p++ = ':';
    p = put_digits(p, (unsigned)tm.tm_min, 2);
    *p++ = ':';
    p = put_digits(p, (unsigned)tm.tm_sec, 2);
    *p++ = '.';
    p = put_digits(p, (unsigned)(ts.tv_nsec / 1000), 6);
    *p++ = 'Z';
    return p;
}

/* Bytes needed for the whole line of rec, or 0 on overflow. */
static size_t line_bound(const struct hf_audit *a, const struct hf_audit_record *rec)
{
    const char *strs[] = {a->node,       rec->api,    rec->operation,  rec->key_uuid,
                          rec->key_name, rec->caller, rec->request_id, rec->detail};
    size_t need = SEQ_ROOM + LINE_FIXED;

    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        size_t n = strs[i] ? strlen(strs[i]) : 0;
        if (n > (SIZE_MAX - need) / 6) return 0;
        need += 6 * n;
    }
    return need;
}

/* Everything after '{"seq":N,' up to and including "latency_us": known before the lock. */
static char *put_body(char *p, const struct hf_audit *a, const struct hf_audit_record *rec)
{
    p = put_raw(p, "\"stream\":\"");
    p = put_raw(p, a->stream);
    p = put_raw(p, "\",\"time\":\"");
    p = put_time(p);
    *p++ = '"';
    p = put_member(p, "node", a->node);
    p = put_raw(p, ",\"pid\":");
    p = put_u64(p, (uint64_t)a->pid);
    p = put_member(p, "api", rec->api);
    p = put_member(p, "op", rec->operation);
    p = put_member(p, "key", rec->key_uuid);
    p = put_member(p, "key_name", rec->key_name);
    if (rec->version) {
        p = put_raw(p, ",\"version\":");
        p = put_u64(p, rec->version);
    }
    p = put_member(p, "caller", rec->caller);
    p = put_member(p, "request_id", rec->request_id);
    p = put_member(p, "detail", rec->detail);
    p = put_raw(p, ",\"result\":\"0x");
    if (rec->result == 0) {
        *p++ = '0';
    } else {
        int shift = (int)(sizeof(CK_RV) * 8) - 4;
        while (((rec->result >> shift) & 15) == 0)
            shift -= 4;
        for (; shift >= 0; shift -= 4)
            *p++ = hex_digits[(rec->result >> shift) & 15];
    }
    p = put_raw(p, rec->result == CKR_OK ? "\",\"ok\":true" : "\",\"ok\":false");
    p = put_raw(p, ",\"latency_us\":");
    return put_u64(p, rec->latency_us);
}

/* Writes '{"seq":N,' so that it ends at body; returns where the line starts. */
static char *put_seq_before(char *body, uint64_t seq)
{
    char *p = body;
    *--p = ',';
    do {
        *--p = (char)('0' + seq % 10);
        seq /= 10;
    } while (seq);
    p -= sizeof(SEQ_KEY) - 1;
    memcpy(p, SEQ_KEY, sizeof(SEQ_KEY) - 1);
    return p;
}

/* ---- writing ---- */

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        if (n == 0) return EIO;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Called with state_lock held. The first failure is logged; every later append refuses.
 * After a failed write the records already written are still synced, since their callers were
 * told they were recorded. After a failed fdatasync nothing is synced again: the kernel may have
 * dropped the dirty pages, and a later fdatasync that succeeds would prove nothing. */
static void mark_failed(struct hf_audit *a, const char *what, int err, bool sync)
{
    if (!atomic_exchange(&a->failed, true))
        hf_log_error("audit: %s of %s failed (%s): key operations stop", what, a->path,
                     strerror(err));
    if (sync) atomic_store(&a->sync_failed, true);
    a->sync_wanted = true;
    pthread_cond_broadcast(&a->durable);
    pthread_cond_signal(&a->wake);
}

static int chain_hash(struct hf_audit *a, const char *line, size_t len, unsigned char *out)
{
    unsigned int outlen = 0;

    if (EVP_DigestInit_ex2(a->mdctx, a->sha256, NULL) != 1 ||
        EVP_DigestUpdate(a->mdctx, a->prev, HASH_LEN) != 1 ||
        EVP_DigestUpdate(a->mdctx, line, len) != 1 ||
        EVP_DigestFinal_ex(a->mdctx, out, &outlen) != 1 || outlen != HASH_LEN)
        return -1;
    return 0;
}

/* Under state_lock: the sync writer learns that records up to last reached the kernel. */
static void written_advance(struct hf_audit *a, uint64_t last)
{
    atomic_store(&a->written_seq, last);
    if (!a->unsynced) {
        a->unsynced = true;
        clock_gettime(CLOCK_MONOTONIC, &a->unsynced_since);
        pthread_cond_signal(&a->wake);
    }
}

/* Under state_lock, with a->writing set by the caller: writes what is batched, the lock
 * dropped around each write(). Stops once seq is written, so no thread writes for others for
 * ever; a waiter whose line is still batched then takes over. */
static void batch_drain(struct hf_audit *a, uint64_t seq)
{
    /* Past its own line the writer takes a few more batches, so appenders spinning on it return
     * without a sleep and a wake-up each; then it hands over. */
    for (int extra = 0; a->batch_len > 0 && !atomic_load(&a->failed) &&
                        (atomic_load(&a->written_seq) < seq || extra++ < DRAIN_EXTRA_ROUNDS);) {
        char *buf = a->batch;
        size_t len = a->batch_len, cap = a->batch_cap;
        uint64_t last = a->seq;
        int err;

        a->batch = a->spare;
        a->batch_cap = a->spare_cap;
        a->batch_len = 0;
        pthread_mutex_unlock(&a->state_lock);
        err = write_all(a->fd, buf, len);
        pthread_mutex_lock(&a->state_lock);
        a->spare = buf;
        a->spare_cap = cap;
        if (err != 0)
            mark_failed(a, "write", err, false);
        else
            written_advance(a, last);
    }
}

static CK_RV batch_append(struct hf_audit *a, const char *line, size_t len)
{
    if (a->batch_len + len > a->batch_cap) {
        size_t cap = a->batch_cap ? a->batch_cap : 8192;
        char *p;
        while (cap < a->batch_len + len)
            cap *= 2;
        if (!(p = realloc(a->batch, cap))) return CKR_HOST_MEMORY;
        a->batch = p;
        a->batch_cap = cap;
    }
    memcpy(a->batch + a->batch_len, line, len);
    a->batch_len += len;
    return CKR_OK;
}

/* A write() takes a few microseconds: waiting for one by spinning is cheaper than a sleep and a
 * wake-up, which cost more than the write itself. */
static void line_spin(struct hf_audit *a, uint64_t seq)
{
    for (int i = 0; i < SPIN_LIMIT; i++) {
        if (atomic_load(&a->written_seq) >= seq || atomic_load(&a->failed) ||
            !atomic_load(&a->writing))
            return;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

/* Under state_lock: returns once line seq reached the kernel, written by this thread or by the
 * one writing when it was chained. */
static CK_RV line_write(struct hf_audit *a, const char *line, size_t len, uint64_t seq)
{
    int err;

    if (!a->writing && a->batch_len == 0) {
        /* Uncontended: write straight from the caller's buffer. */
        a->writing = true;
        pthread_mutex_unlock(&a->state_lock);
        err = write_all(a->fd, line, len);
        pthread_mutex_lock(&a->state_lock);
        if (err != 0)
            mark_failed(a, "write", err, false);
        else
            written_advance(a, seq);
    } else {
        if (batch_append(a, line, len) != CKR_OK) {
            mark_failed(a, "batching", ENOMEM, false);
            goto done;
        }
        pthread_mutex_unlock(&a->state_lock);
        line_spin(a, seq);
        pthread_mutex_lock(&a->state_lock);
        while (atomic_load(&a->written_seq) < seq && !atomic_load(&a->failed) && a->writing)
            pthread_cond_wait(&a->written, &a->state_lock);
        if (atomic_load(&a->written_seq) >= seq || atomic_load(&a->failed)) goto done;
        a->writing = true;
    }
    batch_drain(a, seq);
    a->writing = false;
    pthread_cond_broadcast(&a->written);
done:
    return atomic_load(&a->written_seq) >= seq ? CKR_OK : CKR_HF_AUDIT_FAILED;
}

/* Under state_lock: number the line, chain it and write it. body is preceded by SEQ_ROOM free
 * bytes and followed by room for prev and hash. The chain advances before the write, so the next
 * line can be chained while this one is being written. */
static CK_RV chain_write(struct hf_audit *a, char *body, char *end, uint64_t *seq)
{
    unsigned char hash[HASH_LEN];
    uint64_t next = a->seq + 1;
    char *line = put_seq_before(body, next);
    char *p = put_raw(end, ",\"prev\":\"");
    CK_RV rv;

    p = put_hex(p, a->prev, HASH_LEN);
    *p++ = '"';
    if (chain_hash(a, line, (size_t)(p - line), hash) != 0) return CKR_GENERAL_ERROR;
    p = put_raw(p, ",\"hash\":\"");
    p = put_hex(p, hash, HASH_LEN);
    p = put_raw(p, "\"}\n");
    a->seq = next;
    memcpy(a->prev, hash, HASH_LEN);
    rv = line_write(a, line, (size_t)(p - line), next);
    if (rv == CKR_OK && seq) *seq = next;
    return rv;
}

static CK_RV record_write(struct hf_audit *a, const struct hf_audit_record *rec, uint64_t *seq)
{
    char stackbuf[LINE_STACK];
    char *buf = stackbuf;
    size_t need = line_bound(a, rec);
    CK_RV rv;

    if (need == 0) return CKR_ARGUMENTS_BAD;
    if (need > sizeof(stackbuf) && !(buf = malloc(need))) return CKR_HOST_MEMORY;
    /* Formatting (time, escaping) happens before the lock; only numbering, hashing and the
     * write itself are serialised. So "time" is when the operation ended, and two threads'
     * records may stand in seq order a few microseconds out of time order. */
    char *body = buf + SEQ_ROOM;
    char *end = put_body(body, a, rec);

    pthread_mutex_lock(&a->state_lock);
    if (atomic_load(&a->failed))
        rv = CKR_HF_AUDIT_FAILED;
    else
        rv = chain_write(a, body, end, seq);
    pthread_mutex_unlock(&a->state_lock);
    if (buf != stackbuf) free(buf);
    return rv;
}

CK_RV hf_audit_append(struct hf_audit *audit, const struct hf_audit_record *rec, uint64_t *seq)
{
    if (!audit || !rec) return CKR_ARGUMENTS_BAD;
    if (atomic_load(&audit->abandoned) || atomic_load(&audit->failed)) return CKR_HF_AUDIT_FAILED;
    if (!audit->success_events && rec->result == CKR_OK) {
        if (seq) *seq = atomic_load(&audit->written_seq);
        return CKR_OK;
    }
    return record_write(audit, rec, seq);
}

bool hf_audit_is_failed(struct hf_audit *audit)
{
    return !audit || atomic_load(&audit->failed) || atomic_load(&audit->abandoned);
}

uint64_t hf_audit_durable_seq(struct hf_audit *audit)
{
    return audit ? atomic_load(&audit->durable_seq) : 0;
}

/* ---- durability: the writer thread ---- */

/* A line chained but never written, because a write failed first: it will never be durable. */
static bool line_is_lost(struct hf_audit *a, uint64_t seq)
{
    return atomic_load(&a->failed) && seq > atomic_load(&a->written_seq) && !a->writing;
}

static void notify_run(struct notify *list)
{
    while (list) {
        struct notify *next = list->next;
        list->fn(list->arg);
        free(list);
        list = next;
    }
}

/* Under state_lock: unlinks the callbacks that may run now (all of them once a sync failed, so
 * no caller waits for ever on a record that will never be durable). */
static struct notify *notify_take_due(struct hf_audit *a)
{
    uint64_t durable = atomic_load(&a->durable_seq);
    bool all = atomic_load(&a->sync_failed) || a->stopping;
    struct notify *due = NULL, **due_tail = &due, **pp = &a->notify_head;

    while (*pp) {
        struct notify *n = *pp;
        if (all || n->seq <= durable || line_is_lost(a, n->seq)) {
            *pp = n->next;
            n->next = NULL;
            *due_tail = n;
            due_tail = &n->next;
        } else {
            pp = &n->next;
        }
    }
    a->notify_tail = pp;
    return due;
}

static bool sync_is_due(struct hf_audit *a, struct timespec *deadline)
{
    struct timespec now;

    if (a->sync_wanted) return true;
    *deadline = a->unsynced_since;
    deadline->tv_sec += a->sync_interval_ms / 1000;
    deadline->tv_nsec += (long)(a->sync_interval_ms % 1000) * 1000000L;
    if (deadline->tv_nsec >= 1000000000L) {
        deadline->tv_sec++;
        deadline->tv_nsec -= 1000000000L;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > deadline->tv_sec ||
           (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

/* Under state_lock; drops it for the fdatasync and the callbacks. One sync covers every record
 * written before it started: that is the group commit. */
static void writer_sync(struct hf_audit *a)
{
    uint64_t target = atomic_load(&a->written_seq);
    struct notify *due;
    int rc;

    a->unsynced = false;
    a->sync_wanted = false;
    pthread_mutex_unlock(&a->state_lock);
    do
        rc = fdatasync(a->fd);
    while (rc != 0 && errno == EINTR);
    int err = errno;
    pthread_mutex_lock(&a->state_lock);
    if (rc != 0)
        mark_failed(a, "fdatasync", err, true);
    else
        atomic_store(&a->durable_seq, target);
    pthread_cond_broadcast(&a->durable);
    due = notify_take_due(a);
    if (a->notify_head) a->sync_wanted = true; /* callbacks for records written meanwhile */
    pthread_mutex_unlock(&a->state_lock);
    notify_run(due);
    pthread_mutex_lock(&a->state_lock);
}

static void *writer_main(void *arg)
{
    struct hf_audit *a = arg;
    struct timespec deadline;

    pthread_mutex_lock(&a->state_lock);
    while (!a->stopping) {
        if (atomic_load(&a->sync_failed) && a->notify_head) {
            struct notify *due = notify_take_due(a);
            pthread_mutex_unlock(&a->state_lock);
            notify_run(due);
            pthread_mutex_lock(&a->state_lock);
        } else if (!a->unsynced || atomic_load(&a->sync_failed)) {
            pthread_cond_wait(&a->wake, &a->state_lock);
        } else if (sync_is_due(a, &deadline)) {
            writer_sync(a);
        } else {
            pthread_cond_timedwait(&a->wake, &a->state_lock, &deadline);
        }
    }
    pthread_mutex_unlock(&a->state_lock);
    return NULL;
}

CK_RV hf_audit_wait_durable(struct hf_audit *audit, uint64_t seq)
{
    CK_RV rv = CKR_OK;

    if (!audit) return CKR_ARGUMENTS_BAD;
    if (atomic_load(&audit->durable_seq) >= seq) return CKR_OK;
    if (atomic_load(&audit->abandoned)) return CKR_HF_AUDIT_FAILED;
    pthread_mutex_lock(&audit->state_lock);
    if (seq > audit->seq) {
        rv = CKR_ARGUMENTS_BAD; /* never written: nothing would ever wake us */
        goto done;
    }
    while (atomic_load(&audit->durable_seq) < seq && !atomic_load(&audit->sync_failed) &&
           !line_is_lost(audit, seq)) {
        if (!audit->sync_wanted) {
            audit->sync_wanted = true;
            pthread_cond_signal(&audit->wake);
        }
        pthread_cond_wait(&audit->durable, &audit->state_lock);
    }
    if (atomic_load(&audit->durable_seq) < seq) rv = CKR_HF_AUDIT_FAILED;
done:
    pthread_mutex_unlock(&audit->state_lock);
    return rv;
}

CK_RV hf_audit_notify_durable(struct hf_audit *audit, uint64_t seq, HF_AUDIT_DURABLE_FN fn,
                              void *arg)
{
    struct notify *n = NULL;
    CK_RV rv = CKR_OK;
    bool call_now = false;

    if (!audit || !fn) return CKR_ARGUMENTS_BAD;
    if (atomic_load(&audit->durable_seq) >= seq) {
        fn(arg);
        return CKR_OK;
    }
    if (atomic_load(&audit->abandoned)) return CKR_HF_AUDIT_FAILED;
    if (!(n = calloc(1, sizeof(*n)))) return CKR_HOST_MEMORY;
    pthread_mutex_lock(&audit->state_lock);
    if (seq > audit->seq) {
        rv = CKR_ARGUMENTS_BAD;
    } else if (atomic_load(&audit->durable_seq) >= seq) {
        call_now = true; /* became durable since the check above */
    } else if (atomic_load(&audit->sync_failed)) {
        rv = CKR_HF_AUDIT_FAILED;
    } else {
        *n = (struct notify){.seq = seq, .fn = fn, .arg = arg};
        *audit->notify_tail = n;
        audit->notify_tail = &n->next;
        n = NULL;
        audit->sync_wanted = true;
        pthread_cond_signal(&audit->wake);
    }
    pthread_mutex_unlock(&audit->state_lock);
    free(n);
    if (call_now) fn(arg);
    return rv;
}

/* ---- opening and closing ---- */

static int hex_decode(const char *hex, size_t hexlen, unsigned char *out)
{
    for (size_t i = 0; i < hexlen; i += 2) {
        int v = 0;
        for (size_t j = i; j < i + 2; j++) {
            char c = hex[j];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0) return -1;
            v = v * 16 + d;
        }
        out[i / 2] = (unsigned char)v;
    }
    return 0;
}

/* If line[0..len) ends like a record, its hash; the JSON itself is the verifier's business. */
static bool line_tail_hash(const char *line, size_t len, unsigned char *hash)
{
    if (len < HASH_TAIL_LEN) return false;
    const char *tail = line + len - HASH_TAIL_LEN;
    return memcmp(tail, ",\"hash\":\"", 9) == 0 && memcmp(line + len - 2, "\"}", 2) == 0 &&
           hex_decode(tail + 9, HEX_HASH_LEN, hash) == 0;
}

/* Scans buf (the file's bytes from off to size) backwards for the last complete record line.
 * 1: found; 0: none in the file; -1: the window starts inside a line, read more. */
static int tail_scan(const char *buf, size_t len, off_t off, unsigned char *hash)
{
    size_t end = len;

    while (end > 0 && buf[end - 1] != '\n')
        end--; /* a torn last line is not complete */
    while (end > 0) {
        size_t start = end - 1; /* end - 1 is the line's '\n' */
        while (start > 0 && buf[start - 1] != '\n')
            start--;
        if (start == 0 && off > 0) return -1;
        if (line_tail_hash(buf + start, end - 1 - start, hash)) return 1;
        end = start;
    }
    return 0;
}

/* The hash of the file's last complete record, or zeros for an empty file. */
static CK_RV tail_hash(struct hf_audit *a, unsigned char *hash)
{
    struct stat st;
    size_t window = 4096;
    char *buf = NULL;
    CK_RV rv = CKR_OK;

    memset(hash, 0, HASH_LEN);
    if (fstat(a->fd, &st) != 0) return CKR_HF_AUDIT_FAILED;
    if (!S_ISREG(st.st_mode) || st.st_size == 0) return CKR_OK;
    for (;;) {
        off_t off = st.st_size > (off_t)window ? st.st_size - (off_t)window : 0;
        size_t len = (size_t)(st.st_size - off);
        char *nbuf = realloc(buf, len);
        if (!nbuf) {
            rv = CKR_HOST_MEMORY;
            goto done;
        }
        buf = nbuf;
        if (pread(a->fd, buf, len, off) != (ssize_t)len) {
            hf_log_error("audit: cannot read the end of %s: %s", a->path, strerror(errno));
            rv = CKR_HF_AUDIT_FAILED;
            goto done;
        }
        int found = tail_scan(buf, len, off, hash);
        if (found >= 0) break;
        if (window >= TAIL_SCAN_MAX) {
            /* The stream-open will name nothing and verify will say so; appending must go on. */
            hf_log_warn("audit: no record in the last %zu bytes of %s", window, a->path);
            memset(hash, 0, HASH_LEN);
            break;
        }
        window *= 2;
    }
done:
    free(buf);
    return rv;
}

/* Under flock, so that concurrent openers are ordered: read the last record's hash, make it
 * this stream's prev, and write the stream-open record. */
static CK_RV stream_start(struct hf_audit *a)
{
    const struct hf_audit_record open_rec = {.operation = "stream-open", .result = CKR_OK};
    bool locked = flock(a->fd, LOCK_EX) == 0;
    CK_RV rv;

    if (!locked) hf_log_warn("audit: flock(%s): %s; opening unordered", a->path, strerror(errno));
    rv = tail_hash(a, a->prev);
    if (rv == CKR_OK) rv = record_write(a, &open_rec, NULL);
    if (locked) flock(a->fd, LOCK_UN);
    return rv;
}

static CK_RV stream_id_make(char *out)
{
    unsigned char id[STREAM_ID_LEN / 2];

    if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id)) return CKR_FUNCTION_FAILED;
    *put_hex(out, id, sizeof(id)) = '\0';
    return CKR_OK;
}

static void audit_free(struct hf_audit *a)
{
    if (!a) return;
    notify_run(a->notify_head);
    if (a->fd >= 0) close(a->fd);
    if (a->durable_ready) pthread_cond_destroy(&a->durable);
    if (a->written_ready) pthread_cond_destroy(&a->written);
    free(a->batch);
    free(a->spare);
    if (a->wake_ready) pthread_cond_destroy(&a->wake);
    if (a->lock_ready) pthread_mutex_destroy(&a->state_lock);
    EVP_MD_CTX_free(a->mdctx);
    EVP_MD_free(a->sha256);
    free(a->node);
    free(a->path);
    free(a);
}

static CK_RV audit_sync_init(struct hf_audit *a)
{
    pthread_condattr_t attr;
    CK_RV rv = CKR_GENERAL_ERROR;

    if (pthread_condattr_init(&attr) != 0) return CKR_GENERAL_ERROR;
    /* The writer's deadline must not move with the wall clock. */
    if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0) goto done;
    /* Adaptive: the lock is held for a hash, never across a system call, so a short spin beats
     * a futex sleep when two threads meet (2 threads, AES-GCM: ~400k ops/s adaptive, 220-360k
     * with a plain mutex). */
    pthread_mutexattr_t mattr;
    pthread_mutexattr_init(&mattr);
    pthread_mutexattr_settype(&mattr, PTHREAD_MUTEX_ADAPTIVE_NP);
    a->lock_ready = pthread_mutex_init(&a->state_lock, &mattr) == 0;
    pthread_mutexattr_destroy(&mattr);
    if (!a->lock_ready) goto done;
    if (!(a->wake_ready = pthread_cond_init(&a->wake, &attr) == 0)) goto done;
    if (!(a->durable_ready = pthread_cond_init(&a->durable, NULL) == 0)) goto done;
    if (!(a->written_ready = pthread_cond_init(&a->written, NULL) == 0)) goto done;
    rv = CKR_OK;
done:
    pthread_condattr_destroy(&attr);
    return rv;
}

static CK_RV writer_start(struct hf_audit *a)
{
    sigset_t all, old;
    int err;

    /* The host's signals belong to its own threads, not to ours. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    err = pthread_create(&a->writer, NULL, writer_main, a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) return CKR_GENERAL_ERROR;
    pthread_setname_np(a->writer, "hf-audit");
    a->writer_running = true;
    return CKR_OK;
}

CK_RV hf_audit_open(const struct hf_audit_config *cfg, struct hf_audit **out)
{
    struct hf_audit *a = NULL;
    CK_RV rv;

    if (!out) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    if (!cfg || !cfg->path || !*cfg->path) return CKR_ARGUMENTS_BAD;
    if (!(a = calloc(1, sizeof(*a)))) return CKR_HOST_MEMORY;
    a->fd = -1;
    a->notify_tail = &a->notify_head;
    a->pid = getpid();
    a->success_events = cfg->success_events;
    a->sync_interval_ms = cfg->sync_interval_ms;
    if ((rv = audit_sync_init(a)) != CKR_OK) goto done;
    rv = CKR_HOST_MEMORY;
    if (!(a->path = strdup(cfg->path))) goto done;
    if (cfg->node && !(a->node = strdup(cfg->node))) goto done;
    if (!(a->mdctx = EVP_MD_CTX_new())) goto done;
    rv = CKR_GENERAL_ERROR;
    /* Fetched once: an implicit fetch per digest costs a lookup on every record. */
    if (!(a->sha256 = EVP_MD_fetch(hf_crypto_libctx(), "SHA256", NULL))) goto done;
    if ((rv = stream_id_make(a->stream)) != CKR_OK) goto done;
    /* O_RDWR, not O_WRONLY: the opener reads the file's last record. */
    a->fd = open(cfg->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (a->fd < 0) {
        hf_log_error("audit: cannot open %s: %s", cfg->path, strerror(errno));
        rv = CKR_HF_AUDIT_FAILED;
        goto done;
    }
    if ((rv = stream_start(a)) != CKR_OK) goto done;
    rv = writer_start(a);
done:
    if (rv != CKR_OK)
        audit_free(a);
    else
        *out = a;
    return rv;
}

static void writer_stop(struct hf_audit *a)
{
    if (!a->writer_running) return;
    pthread_mutex_lock(&a->state_lock);
    a->stopping = true;
    pthread_cond_signal(&a->wake);
    pthread_mutex_unlock(&a->state_lock);
    pthread_join(a->writer, NULL);
    a->writer_running = false;
}

void hf_audit_close(struct hf_audit *audit)
{
    const struct hf_audit_record close_rec = {.operation = "stream-close", .result = CKR_OK};
    uint64_t seq;

    if (!audit) return;
    seq = atomic_load(&audit->written_seq);
    /* Records already returned are made durable even when the log has failed since, or the
     * close record cannot be written. */
    if (hf_audit_wait_durable(audit, seq) == CKR_OK &&
        record_write(audit, &close_rec, &seq) == CKR_OK)
        hf_audit_wait_durable(audit, seq);
    writer_stop(audit);
    audit_free(audit); /* runs callbacks still queued: nobody else will */
}

void hf_audit_abandon(struct hf_audit *audit)
{
    if (!audit) return;
    /* In a fork child: the writer thread was not copied, and state_lock or malloc's arena may
     * have been held by a parent thread at the fork, so nothing here is freed or locked. The
     * struct, its buffers and the queued callbacks (which belong to the parent) leak on purpose,
     * once per fork. Closing the child's copy of the descriptor is safe and keeps this process
     * from writing into the parent's stream. */
    atomic_store(&audit->abandoned, true);
    if (audit->fd >= 0) close(audit->fd);
    audit->fd = -1;
}

/* ---- verification ---- */

struct stream_slot {
    uint64_t id;
    uint64_t seq;
    unsigned char last[HASH_LEN];
    bool used;
    bool closed;
};

/* 16 bytes of a record hash: enough to tell 2^64 records apart, half the memory. */
struct seen_slot {
    unsigned char h[16];
};

struct verify_state {
    EVP_MD *sha256;
    EVP_MD_CTX *mdctx;
    json_tokener *tok;
    struct stream_slot *streams; /* open addressing, power-of-two size */
    size_t streams_cap, streams_n;
    struct seen_slot *seen; /* every record's hash, to check stream-open prevs */
    size_t seen_cap, seen_n;
    uint64_t records, nstreams, torn_line;
};

static uint64_t bytes_u64(const unsigned char *b)
{
    uint64_t v;
    memcpy(&v, b, sizeof(v));
    return v;
}

static struct stream_slot *stream_find(struct stream_slot *tab, size_t cap, uint64_t id)
{
    size_t i = (size_t)(id * 0x9e3779b97f4a7c15ULL) & (cap - 1);
    while (tab[i].used && tab[i].id != id)
        i = (i + 1) & (cap - 1);
    return &tab[i];
}

/* The slot of stream id (used == false if new); NULL when out of memory. */
static struct stream_slot *stream_slot_get(struct verify_state *vs, uint64_t id)
{
    if (2 * (vs->streams_n + 1) > vs->streams_cap) {
        size_t cap = vs->streams_cap ? 2 * vs->streams_cap : 64;
        struct stream_slot *tab = calloc(cap, sizeof(*tab));
        if (!tab) return NULL;
        for (size_t i = 0; i < vs->streams_cap; i++)
            if (vs->streams[i].used) *stream_find(tab, cap, vs->streams[i].id) = vs->streams[i];
        free(vs->streams);
        vs->streams = tab;
        vs->streams_cap = cap;
    }
    return stream_find(vs->streams, vs->streams_cap, id);
}

static struct seen_slot *seen_find(struct seen_slot *tab, size_t cap, const unsigned char *h)
{
    static const struct seen_slot empty;
    size_t i = (size_t)bytes_u64(h) & (cap - 1);
    while (memcmp(&tab[i], &empty, sizeof(empty)) != 0 && memcmp(tab[i].h, h, 16) != 0)
        i = (i + 1) & (cap - 1);
    return &tab[i];
}

static bool seen_has(const struct verify_state *vs, const unsigned char *h)
{
    /* An all-zero key marks an empty slot, and no record hashes to zeros. */
    if (!vs->seen_cap || memcmp(h, zero_hash, 16) == 0) return false;
    return memcmp(seen_find(vs->seen, vs->seen_cap, h)->h, h, 16) == 0;
}

static int seen_add(struct verify_state *vs, const unsigned char *h)
{
    if (2 * (vs->seen_n + 1) > vs->seen_cap) {
        size_t cap = vs->seen_cap ? 2 * vs->seen_cap : 1024;
        struct seen_slot *tab = calloc(cap, sizeof(*tab));
        static const struct seen_slot empty;
        if (!tab) return -1;
        for (size_t i = 0; i < vs->seen_cap; i++)
            if (memcmp(&vs->seen[i], &empty, sizeof(empty)) != 0)
                *seen_find(tab, cap, vs->seen[i].h) = vs->seen[i];
        free(vs->seen);
        vs->seen = tab;
        vs->seen_cap = cap;
    }
    memcpy(seen_find(vs->seen, vs->seen_cap, h)->h, h, 16);
    vs->seen_n++;
    return 0;
}

/* The JSON object if line[0..len) is exactly one JSON object, else NULL. */
static json_object *json_parse_whole(json_tokener *tok, const char *line, size_t len)
{
    json_object *obj;

    if (len == 0 || len > INT32_MAX) return NULL;
    json_tokener_reset(tok);
    obj = json_tokener_parse_ex(tok, line, (int)len);
    if (obj &&
        (json_tokener_get_error(tok) != json_tokener_success ||
         json_tokener_get_parse_end(tok) != len || !json_object_is_type(obj, json_type_object))) {
        json_object_put(obj);
        obj = NULL;
    }
    return obj;
}

/* Where the last record glued to a torn prefix starts (0: none). '{"seq":' cannot occur inside
 * a record's strings, whose quotes are escaped. */
static size_t glued_record_start(const char *line, size_t len)
{
    const size_t klen = sizeof(SEQ_KEY) - 1;

    for (size_t i = len >= klen ? len - klen : 0; i > 0; i--)
        if (memcmp(line + i, SEQ_KEY, klen) == 0) return i;
    return 0;
}

static const char *member_string(json_object *obj, const char *name, size_t want_len)
{
    json_object *v;
    if (!json_object_object_get_ex(obj, name, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    if (want_len && (size_t)json_object_get_string_len(v) != want_len) return NULL;
    return json_object_get_string(v);
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(reason, reason_len, __VA_ARGS__);                                                 \
        return CKR_FUNCTION_FAILED;                                                                \
    } while (0)

/* The chain rules for one record whose own hash already checked out. */
static CK_RV verify_chain(struct verify_state *vs, uint64_t id, const char *op, int64_t seq,
                          const unsigned char *prev, const unsigned char *hash, char *reason,
                          size_t reason_len)
{
    struct stream_slot *s = stream_slot_get(vs, id);

    if (!s) FAIL("out of memory");
    if (strcmp(op, "stream-open") == 0) {
        if (s->used) FAIL("stream %016llx is opened twice", (unsigned long long)id);
        if (seq != 1) FAIL("stream-open with seq %lld, not 1", (long long)seq);
        bool first = vs->records == 0 && memcmp(prev, zero_hash, HASH_LEN) == 0;
        if (!first && !seen_has(vs, prev)) FAIL("stream-open names no earlier record");
        *s = (struct stream_slot){.id = id, .used = true};
        vs->streams_n++;
        vs->nstreams++;
    } else {
        if (!s->used) FAIL("record of a stream that was never opened (stream-open missing)");
        if (s->closed) FAIL("record after its stream's stream-close");
        if (seq != (int64_t)s->seq + 1)
            FAIL("seq %lld follows %llu: a record is missing or out of order", (long long)seq,
                 (unsigned long long)s->seq);
        if (memcmp(prev, s->last, HASH_LEN) != 0)
            FAIL("prev is not the hash of the stream's previous record");
        s->closed = strcmp(op, "stream-close") == 0;
    }
    s->seq = (uint64_t)seq;
    memcpy(s->last, hash, HASH_LEN);
    if (seen_add(vs, hash) != 0) FAIL("out of memory");
    vs->records++;
    return CKR_OK;
}

static CK_RV verify_record(struct verify_state *vs, json_object *obj, const char *line, size_t len,
                           char *reason, size_t reason_len)
{
    unsigned char prev[HASH_LEN], hash[HASH_LEN], want[HASH_LEN], id[8];
    unsigned int outlen = 0;
    json_object *seqv;

    if (!line_tail_hash(line, len, hash)) FAIL("record does not end with its hash");
    const char *stream = member_string(obj, "stream", STREAM_ID_LEN);
    const char *op = member_string(obj, "op", 0);
    const char *prevhex = member_string(obj, "prev", HEX_HASH_LEN);
    const char *hashhex = member_string(obj, "hash", HEX_HASH_LEN);
    if (!stream || !op || !prevhex || !hashhex || hex_decode(stream, STREAM_ID_LEN, id) != 0 ||
        hex_decode(prevhex, HEX_HASH_LEN, prev) != 0 ||
        memcmp(hashhex, line + len - 2 - HEX_HASH_LEN, HEX_HASH_LEN) != 0 ||
        !json_object_object_get_ex(obj, "seq", &seqv) || !json_object_is_type(seqv, json_type_int))
        FAIL("record lacks seq, stream, op, prev or hash");
    if (EVP_DigestInit_ex2(vs->mdctx, vs->sha256, NULL) != 1 ||
        EVP_DigestUpdate(vs->mdctx, prev, HASH_LEN) != 1 ||
        EVP_DigestUpdate(vs->mdctx, line, len - HASH_TAIL_LEN) != 1 ||
        EVP_DigestFinal_ex(vs->mdctx, want, &outlen) != 1)
        FAIL("SHA-256 failed");
    if (memcmp(want, hash, HASH_LEN) != 0) FAIL("hash does not match the record (altered)");
    return verify_chain(vs, bytes_u64(id), op, json_object_get_int64(seqv), prev, hash, reason,
                        reason_len);
}

/* One line without its '\n' (has_nl false: the file's last bytes). */
static CK_RV verify_line(struct verify_state *vs, uint64_t lineno, const char *line, size_t len,
                         bool has_nl, char *reason, size_t reason_len)
{
    json_object *obj = json_parse_whole(vs->tok, line, len);
    size_t start = 0;
    CK_RV rv;

    if (!obj && (start = glued_record_start(line, len)) > 0)
        obj = json_parse_whole(vs->tok, line + start, len - start);
    if (!obj) {
        if (has_nl) FAIL("not a JSON record");
        if (!vs->torn_line) vs->torn_line = lineno;
        return CKR_OK;
    }
    if (start > 0 && !vs->torn_line) vs->torn_line = lineno;
    rv = verify_record(vs, obj, line + start, len - start, reason, reason_len);
    json_object_put(obj);
    return rv;
}

#undef FAIL

static void verify_state_free(struct verify_state *vs)
{
    json_tokener_free(vs->tok);
    EVP_MD_CTX_free(vs->mdctx);
    EVP_MD_free(vs->sha256);
    free(vs->streams);
    free(vs->seen);
}

CK_RV hf_audit_verify(const char *path, struct hf_audit_verify_result *result)
{
    struct verify_state vs = {0};
    FILE *f = NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    uint64_t lineno = 0;
    CK_RV rv = CKR_OK;

    if (!path || !result) return CKR_ARGUMENTS_BAD;
    memset(result, 0, sizeof(*result));
    vs.sha256 = EVP_MD_fetch(hf_crypto_libctx(), "SHA256", NULL);
    vs.mdctx = EVP_MD_CTX_new();
    vs.tok = json_tokener_new();
    if (!vs.sha256 || !vs.mdctx || !vs.tok) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    if (!(f = fopen(path, "re"))) {
        snprintf(result->reason, sizeof(result->reason), "cannot open: %s", strerror(errno));
        rv = CKR_FUNCTION_FAILED;
        goto done;
    }
    while ((n = getline(&line, &cap, f)) >= 0) {
        bool has_nl = n > 0 && line[n - 1] == '\n';
        lineno++;
        rv = verify_line(&vs, lineno, line, (size_t)n - has_nl, has_nl, result->reason,
                         sizeof(result->reason));
        if (rv != CKR_OK) {
            result->bad_line = lineno;
            goto done;
        }
    }
    if (ferror(f)) {
        snprintf(result->reason, sizeof(result->reason), "read error: %s", strerror(errno));
        rv = CKR_FUNCTION_FAILED;
        goto done;
    }
    if (vs.torn_line)
        snprintf(result->reason, sizeof(result->reason),
                 "line %llu: torn record (a writer killed mid-write) ignored",
                 (unsigned long long)vs.torn_line);
done:
    result->records = vs.records;
    result->streams = vs.nstreams;
    if (f) fclose(f);
    free(line);
    verify_state_free(&vs);
    return rv;
}
