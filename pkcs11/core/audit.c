/* The audit log (audit.h): hash-chained JSON lines in one file that every process writes.
 *
 * A record is one line whose members come in this fixed order:
 *   {"seq":N,"stream":"16 hex","time":"RFC 3339 UTC, microseconds","node":..,"pid":N,"api":..,
 *    "op":..,"key":..,"key_name":..,"version":N,"caller":..,"request_id":..,"detail":..,
 *    "fields":{"name":"value",..},"result":"0x%lx","ok":bool,"latency_us":N,"prev":"64 hex",
 *    "hash":"64 hex"}
 * Absent strings (and version 0) are omitted, and so is "prev" in every record but a stream's
 * first (op "stream-open"), where it names the hash of a record already in the file; in a later
 * record prev is implied: the hash of the stream's previous record. hash = HMAC-SHA-256(the
 * stream's current key, prev as 32 raw bytes || the line's bytes from '{' up to, not including,
 * ',"hash"'), so a verifier needs no canonical JSON form (audit.h: the keys, the HSM, the
 * ratchet). A keyed stream-open has "nonce" and "ratchet_every" after "prev"; a checkpoint has
 * "streams" and "sig".
 * Unkeyed streams (no HSM, or logs from before the keyed chain) have hash = SHA-256(prev ||
 * bytes). Logs written before prev became implied have it in every record; the verifier accepts
 * both.
 *
 * Streams and lanes. An opened log (struct hf_audit) writes through up to LANES lanes, each its
 * own stream with its own chunks of the file; a thread keeps to one lane, and a lane's lock is held
 * while one record of it is numbered, hashed and stored, so a stream's records reach the file
 * whole and in file order. Two threads share nothing per record but an atomic counter: seq, which
 * numbers the records of the opened log (so the seqs of one stream rise with gaps). Measured
 * before lanes, with one chain per process and one write() per record under O_APPEND: AES-GCM
 * through the module did 258k ops/s on one thread and 265k on two.
 *
 * Storage. A lane claims a chunk at the end of the file (under flock, with posix_fallocate, so a
 * full disk shows as a failed claim and never as a lost record) and maps it MAP_SHARED. Storing a
 * record is a memcpy into the mapping: the bytes are in the page cache at once, so a SIGKILL loses
 * nothing that returned, without a system call per record. The writer thread claims a lane's next
 * chunk while its current one is half used, and before each fdatasync (group commit) unmaps what
 * is stored. Space is zeros until used: a killed process leaves zeros after its last records (a
 * record it was storing leaves a torn prefix); a closing one cuts its unused space off where it
 * ends the file, else blanks it (spaces, then a '\n'), as a lane blanks the rest of a chunk it
 * leaves for the next. A file that is not regular (a FIFO to a collector) is written with one
 * write() per record under write_lock instead.
 *
 * Torn records. A torn prefix is followed by zeros, then by the next record of the file, glued to
 * it in one '\n'-terminated line. The verifier accepts such a prefix (the record it held was never
 * returned to anybody) but no later record of its stream, parses the record glued to it, and
 * skips zeros and blanks; any other line that is not a record fails verification. */
#include "hf-build.h"

#include "pkcs11/core/annotate.h"
#include "pkcs11/core/audit.h"
#include "pkcs11/core/audit-key.h"
#include "pkcs11/core/crypto.h"
#include "pkcs11/core/root.h"
#include "pkcs11/core/log.h"
#include "pkcs11/core/secmem.h"
#include "pkcs11/core/store.h"

#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#ifndef ANNOTATE_BENIGN_RACE_SIZED
#define ANNOTATE_BENIGN_RACE_SIZED(addr, size, what) ((void)(addr))
#endif

#define HASH_LEN 32
#define HEX_HASH_LEN (2 * HASH_LEN)
#define STREAM_ID_LEN 16
/* ',"hash":"' + 64 hex + '"}': every record line ends with exactly this (and a '\n'). */
#define HASH_TAIL_LEN (9 + HEX_HASH_LEN + 2)
#define SEQ_KEY "{\"seq\":"
#define STREAM_KEY "\"stream\":\""
/* Room in front of the body for '{"seq":' + 20 digits + ','. */
#define SEQ_ROOM 32
/* Everything in a line but the escaped strings: member names, numbers, time, prev, hash. */
#define LINE_FIXED 512
/* Most records fit: no malloc on the hot path. */
#define LINE_STACK 4096
/* The opener looks this far back for the last record before giving up on naming it. */
#define TAIL_SCAN_MAX (1u << 30)
/* Streams an opened log writes at most: threads appending at the same moment beyond this wait
 * for a lane. */
#define LANES 16
/* Lane LANES carries the checkpoints: written by the writer thread (and at close) only, it claims
 * its own chunks, since the writer cannot wait for itself. */
#define CKPT_LANE LANES
#define ALL_LANES (LANES + 1)
#define NONCE_LEN 16
/* A larger ratchet_every is refused: no writer of ours wrote it (forward security gone). */
#define RATCHET_EVERY_MAX 4096
#define STREAM_KDF_PREFIX "holdfast-audit-stream"
#define CKPT_PREFIX "holdfast-audit-checkpoint"
/* One stream in a checkpoint's "streams": 16 hex ':' seq ':' 64 hex ';' */
#define CKPT_ENTRY_MAX (STREAM_ID_LEN + 1 + 20 + 1 + HEX_HASH_LEN + 1)
#define CKPT_LIST_MAX (LANES * CKPT_ENTRY_MAX)
#define CKPT_KEY_MAX 320 /* HF_META_AUDIT_CHECKPOINT "." node */
/* Chunks double from the first (a CLI run writes a few records) up to the largest (~9000 records
 * of ~450 bytes: a claim every ~10 ms at 800k records/s). */
#define CHUNK_FIRST (32u << 10)
#define CHUNK_MAX (4u << 20)
/* A verifier racing live writers can read a record's space before the record is stored and the
 * stream's next record after: a failure it sees twice at the same place is real. */
#define VERIFY_ATTEMPTS 3
/* While the disk is full, a claim is tried again at most this often: often enough that writing
 * resumes within a blink of space returning, rarely enough that a flood of appends does not turn
 * into a flood of fallocate calls. The same bounds how often an append refused under the reserve
 * looks at the file system again. */
#define SPACE_RETRY_NS (100 * 1000000LL)
/* hf_audit_status looks again when its last look is older than this. */
#define SPACE_STALE_NS (1000 * 1000000LL)
/* chunk_claim's answer when only the reserve is left and the caller may not use it. */
#define ERESERVE (-1)

static const char hex_digits[] = "0123456789abcdef";
static const unsigned char zero_hash[HASH_LEN];

/* A durability callback waiting for the writer. */
struct notify {
    struct notify *next;
    uint64_t seq;
    HF_AUDIT_DURABLE_FN fn;
    void *arg;
};

/* Space claimed at the end of the file and mapped; stored into by one lane. */
struct chunk {
    struct chunk *next; /* in the retired list */
    char *map;          /* what is still mapped: from the page that holds start, or later */
    size_t map_len;     /* (the writer unmaps what is stored: written_take) */
    char *base;         /* where start is mapped */
    off_t start;
    size_t len;
    size_t used; /* (the lane's lock) */
};

/* One stream. Padded so that two lanes never share a cache line. */
struct lane {
    pthread_mutex_t lock; /* the stream: its chain, and where and in which order it stores */
    bool lock_ready;
    atomic_bool open; /* its stream-open is stored: set once, under lock */
    char stream[STREAM_ID_LEN + 1];
    unsigned char prev[HASH_LEN]; /* (lock) the hash of the stream's last record */
    uint64_t last_seq;            /* (lock) its seq */
    /* prev and last_seq as a seqlock: odd while they change, so the checkpoint writer reads them
     * without the lane's lock (whose holder may be waiting for the writer to claim a chunk). */
    _Atomic uint64_t snap_gen;
    EVP_MD_CTX *mdctx;        /* (lock) */
    struct hf_audit_key *key; /* (lock) the next record's key; NULL: unkeyed */
    bool self_claims;         /* never asks the writer for a chunk (the checkpoint lane) */
    bool asked_seen;          /* (lock) asked, as this lane last set it */
    /* (lock) to store into; (lock and chunks_lock) to change. */
    struct chunk *cur;
    /* (chunks_lock) */
    struct chunk *next;     /* claimed ahead by the writer */
    bool asked;             /* the writer is to claim next */
    size_t chunk_size;      /* of the next claim */
    size_t need_len;        /* a record that long waits for it */
    _Atomic(char *) stored; /* everything of cur below this is stored */
    _Atomic uint64_t busy;  /* the seq being numbered or stored, 0 if none (BUSY_NUMBERING) */
    bool may_reserve;       /* (lock) the record being stored may claim from the reserve */
    char pad[64];
};

/* A lane's busy while it takes its seq: the writer waits the few instructions until it is one. */
#define BUSY_NUMBERING UINT64_MAX

struct hf_audit {
    int fd;
    pid_t pid;
    size_t pagesize;
    bool mapped; /* a regular file: records are stored through chunks, else write() */
    bool success_events;
    unsigned sync_interval_ms;
    char *path; /* owned; for messages */
    char *node; /* owned; NULL: not written */
    EVP_MD *sha256;
    struct hf_root *root;   /* borrowed; NULL: unkeyed */
    struct hf_store *store; /* borrowed; NULL: checkpoints are not recorded */
    unsigned ckpt_interval_ms;
    atomic_bool ckpt_dirty; /* a record (not a checkpoint) stored since the last checkpoint */
    /* ckpt_lock protects the checkpoint thread's stop flag. */
    pthread_mutex_t ckpt_lock;
    pthread_cond_t ckpt_wake; /* CLOCK_MONOTONIC */
    bool ckpt_stopping, ckpt_running, ckpt_lock_ready, ckpt_wake_ready;
    pthread_t ckpt_thread;
    /* (the checkpoint lane's lock) the last checkpoint, to record in the store once durable */
    uint64_t ckpt_pending_seq;
    char ckpt_pending[HEX_HASH_LEN + 1];
    bool ckpt_closed;        /* (the checkpoint lane's lock) the closing checkpoint is written */
    atomic_bool failed;      /* a claim, write or sync failed: appends refuse */
    atomic_bool sync_failed; /* a sync failed: nothing becomes durable any more */
    atomic_bool abandoned;
    _Atomic uint64_t durable_seq;
    _Atomic uint64_t seq; /* the last seq handed out */
    atomic_bool dirty;    /* records stored since the writer took its last sync target */
    /* Free space ("free space" below): reserve and alarm are fixed at open. */
    uint64_t reserve, alarm;
    _Atomic uint64_t free_bytes;      /* at the last look */
    _Atomic int space;                /* HF_AUDIT_SPACE_* of the last look (never FULL) */
    atomic_bool full;                 /* a claim failed for want of space */
    _Atomic int64_t space_checked_ns; /* CLOCK_MONOTONIC of the last look */
    _Atomic int64_t claim_retry_ns;   /* while full: no claim before this */
    _Atomic uint64_t refused;         /* records refused for want of space */
    /* The hash of lane 0's stream-open: every other lane's stream-open names it. Set in open. */
    unsigned char anchor[HASH_LEN];

    /* Claims at the end of the file: flock orders processes (and separate opens), but not the
     * threads of one open, which share its lock. */
    pthread_mutex_t claim_lock;
    /* chunks_lock protects the lanes' next chunks and the retired list. */
    pthread_mutex_t chunks_lock;
    pthread_cond_t chunk_ready; /* lanes waiting for the writer's claim sleep here */
    struct chunk *retired;      /* left by their lanes: all stored, the writer unmaps them */
    /* write() mode: the order of writes to fd, so that a FIFO gets each stream's in order. */
    pthread_mutex_t write_lock;

    /* state_lock protects the writer's state. Lock order: a lane's lock; then one of
     * claim_lock, chunks_lock and write_lock; then state_lock. */
    pthread_mutex_t state_lock;
    pthread_cond_t wake;            /* the writer sleeps here */
    pthread_cond_t durable;         /* hf_audit_wait_durable sleeps here */
    bool unsynced;                  /* records stored since the writer took its last sync target */
    struct timespec unsynced_since; /* CLOCK_MONOTONIC: the oldest of them */
    bool sync_wanted;               /* someone waits: sync now, not at the interval */
    bool chunk_wanted;              /* a lane asked for its next chunk */
    bool stopping;
    struct notify *notify_head, **notify_tail; /* in the order they were asked for */
    bool claim_ready, chunks_ready, chunk_ready_ready, write_ready, lock_ready, wake_ready;
    bool durable_ready;
    bool writer_running;
    pthread_t writer;

    struct lane lanes[ALL_LANES];
};

/* A thread's lane (the same index in every opened log), dealt round-robin at its first append. */
static _Thread_local unsigned lane_hint = LANES;
static atomic_uint lane_dealt;

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
    /* Copied, not escaped: hf_audit_fields_canon bounded it. */
    if (rec->fields) {
        size_t n = strlen(rec->fields) + sizeof(",\"fields\":");
        if (n > SIZE_MAX - need) return 0;
        need += n;
    }
    return need;
}

/* Everything after '{"seq":N,' up to and including "latency_us": known before the lock. */
static char *put_body(char *p, const struct hf_audit *a, const char *stream,
                      const struct hf_audit_record *rec)
{
    p = put_raw(p, STREAM_KEY);
    p = put_raw(p, stream);
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
    if (rec->fields) {
        p = put_raw(p, ",\"fields\":");
        p = put_raw(p, rec->fields);
    }
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

/* ---- failure ---- */

/* Under state_lock. The first failure is logged; every later append refuses. After a failed
 * claim or write the records already stored are still synced, since their callers were told
 * they were recorded. After a failed fdatasync nothing is synced again: the kernel may have
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

/* mark_failed for a caller without state_lock. */
static void audit_fail(struct hf_audit *a, const char *what, int err)
{
    pthread_mutex_lock(&a->state_lock);
    mark_failed(a, what, err, false);
    pthread_mutex_unlock(&a->state_lock);
}

/* ---- free space ---- */

static int64_t monotonic_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static unsigned long space_of(const struct hf_audit *a, uint64_t free)
{
    if (free < a->reserve) return HF_AUDIT_SPACE_RESERVE;
    if (free < a->alarm) return HF_AUDIT_SPACE_ALARM;
    return HF_AUDIT_SPACE_OK;
}

/* Records a look at the free space; each crossing of a threshold is logged once, by whoever
 * saw it first. */
static void space_note(struct hf_audit *a, uint64_t free)
{
    unsigned long now = space_of(a, free), was;

    atomic_store(&a->free_bytes, free);
    was = (unsigned long)atomic_exchange(&a->space, (int)now);
    if (was == now) return;
    if (now == HF_AUDIT_SPACE_RESERVE)
        hf_log_error("audit: %s: %llu bytes free, under the reserve of %llu: only authenticated "
                     "key operations are recorded",
                     a->path, (unsigned long long)free, (unsigned long long)a->reserve);
    else if (now == HF_AUDIT_SPACE_ALARM && was == HF_AUDIT_SPACE_OK)
        hf_log_warn("audit: %s: %llu bytes free, under the alarm threshold of %llu (reserve %llu)",
                    a->path, (unsigned long long)free, (unsigned long long)a->alarm,
                    (unsigned long long)a->reserve);
    else if (now == HF_AUDIT_SPACE_OK)
        hf_log_info("audit: %s: %llu bytes free again: alarm cleared", a->path,
                    (unsigned long long)free);
    else
        hf_log_info("audit: %s: %llu bytes free, over the reserve again: every record is written",
                    a->path, (unsigned long long)free);
}

static void space_full_set(struct hf_audit *a, bool full);

/* Looks at the file system (one fstatvfs). A full log whose file system has room for a chunk
 * over the reserve again is full no more (the next claim finds out): its status must heal
 * without traffic, since a balancer that reads it may send none. */
static void space_check(struct hf_audit *a)
{
    struct statvfs sv;
    uint64_t free;

    atomic_store(&a->space_checked_ns, monotonic_ns());
    if (!a->mapped || fstatvfs(a->fd, &sv) != 0) return;
    free = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
    space_note(a, free);
    if (atomic_load(&a->full) && free >= a->reserve + CHUNK_FIRST) space_full_set(a, false);
}

/* space_check, unless somebody looked less than age_ns ago. */
static void space_check_if_older(struct hf_audit *a, int64_t age_ns)
{
    int64_t now = monotonic_ns(), last = atomic_load(&a->space_checked_ns);

    if (now - last >= age_ns && atomic_compare_exchange_strong(&a->space_checked_ns, &last, now))
        space_check(a);
}

/* A claim failed for want of space (or succeeded after that): later appends try again, at most
 * every SPACE_RETRY_NS. */
static void space_full_set(struct hf_audit *a, bool full)
{
    if (full) {
        atomic_store(&a->claim_retry_ns, monotonic_ns() + SPACE_RETRY_NS);
        if (!atomic_exchange(&a->full, true))
            hf_log_error("audit: %s: no space left for records: key operations stop until "
                         "space is freed",
                         a->path);
    } else if (atomic_exchange(&a->full, false)) {
        atomic_store(&a->claim_retry_ns, 0);
        hf_log_info("audit: %s: space for records again", a->path);
    }
}

/* Whether a claim may be tried now: always, unless the last one failed for want of space less
 * than SPACE_RETRY_NS ago. */
static bool space_claim_is_due(struct hf_audit *a)
{
    return !atomic_load(&a->full) || monotonic_ns() >= atomic_load(&a->claim_retry_ns);
}

/* Whether a record that may not use the reserve may be written now. While not, the file system
 * is looked at again at most every SPACE_RETRY_NS, so that writing resumes by itself. */
static bool space_admits(struct hf_audit *a)
{
    if (!a->mapped) return true;
    if (atomic_load(&a->space) != HF_AUDIT_SPACE_RESERVE && !atomic_load(&a->full)) return true;
    space_check_if_older(a, SPACE_RETRY_NS);
    return atomic_load(&a->space) != HF_AUDIT_SPACE_RESERVE &&
           (!atomic_load(&a->full) || space_claim_is_due(a));
}

static bool err_is_space(int err)
{
    return err == ENOSPC || err == EDQUOT || err == ERESERVE;
}

/* ---- chunks ---- */

/* The right to claim at the end of the file: claim_lock, then flock (0, or flock's errno, and
 * claim_lock is held either way). */
static int claim_begin(struct hf_audit *a)
{
    int rc;

    pthread_mutex_lock(&a->claim_lock);
    while ((rc = flock(a->fd, LOCK_EX)) != 0 && errno == EINTR) {
    }
    return rc == 0 ? 0 : errno;
}

static void claim_end(struct hf_audit *a, int begin_err)
{
    if (begin_err == 0) flock(a->fd, LOCK_UN);
    pthread_mutex_unlock(&a->claim_lock);
}

/* Unused space a live writer gives up: spaces ending in '\n', so that it reads as one blank
 * line and the record after it starts a line of its own. */
static void blank(char *p, size_t n)
{
    if (n == 0) return;
    memset(p, ' ', n - 1);
    p[n - 1] = '\n';
}

static void chunk_free(struct chunk *c)
{
    if (!c) return;
    if (c->map && c->map_len) munmap(c->map, c->map_len);
    free(c);
}

static void chunks_free(struct chunk *list)
{
    while (list) {
        struct chunk *next = list->next;
        chunk_free(list);
        list = next;
    }
}

/* The length to claim, wanting len and needing at least min, with free bytes left: what is over
 * the reserve, if that is min or more; else into the reserve only for a caller that may
 * (ERESERVE for another), and then no more than a first chunk, so that the reserve goes in small
 * steps to the records that need it. */
static int claim_size(const struct hf_audit *a, uint64_t free, size_t min, bool may_reserve,
                      size_t *len)
{
    uint64_t over = free > a->reserve ? free - a->reserve : 0;

    if (over >= *len) return 0;
    over -= over % a->pagesize;
    if (over >= min && over >= CHUNK_FIRST) {
        *len = (size_t)over;
        return 0;
    }
    if (!may_reserve) return ERESERVE;
    if (*len > CHUNK_FIRST) *len = min > CHUNK_FIRST ? min : CHUNK_FIRST;
    return 0;
}

/* Blocks for [off, off + len): a full disk or a file size limit shows here, as an errno. When
 * the disk is too full for len, at least min is tried. */
static int claim_blocks(struct hf_audit *a, off_t off, size_t min, size_t *len)
{
    int err = posix_fallocate(a->fd, off, (off_t)*len);

    if ((err == ENOSPC || err == EDQUOT) && *len > min) {
        *len = min;
        err = posix_fallocate(a->fd, off, (off_t)*len);
    }
    if (err_is_space(err))
        space_full_set(a, true);
    else if (err == 0)
        space_full_set(a, false);
    return err;
}

/* Claims len bytes (min at least, when space is short) at the end of the file and maps them,
 * within claim_begin/claim_end unless the caller is (others claim at the end too). 0, or an
 * errno: ENOSPC or EDQUOT when the disk is full, ERESERVE when only the reserve is left and
 * may_reserve is false. */
static int chunk_claim(struct hf_audit *a, size_t len, size_t min, bool claiming, bool may_reserve,
                       struct chunk **out)
{
    struct chunk *c = NULL;
    struct stat st;
    struct statvfs sv;
    off_t map_off;
    void *map;
    int err, begin_err = claiming ? 0 : claim_begin(a);

    *out = NULL;
    if ((err = begin_err) != 0) goto done;
    if (!(c = calloc(1, sizeof(*c)))) {
        err = ENOMEM;
        goto done;
    }
    if (fstat(a->fd, &st) != 0) {
        err = errno;
        goto done;
    }
    if (len > (uint64_t)INT64_MAX - (uint64_t)st.st_size) {
        err = EFBIG;
        goto done;
    }
    /* Under flock, so that the look and the claim are one step for this host's writers. */
    atomic_store(&a->space_checked_ns, monotonic_ns());
    if (fstatvfs(a->fd, &sv) == 0) {
        uint64_t free = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
        space_note(a, free);
        if ((err = claim_size(a, free, min, may_reserve, &len)) != 0) goto done;
    }
    /* Blocks allocated now: a store into the mapping cannot then fail for want of space (which
     * would be a SIGBUS), and a full disk or a file size limit shows here, as a failed claim. */
    if ((err = claim_blocks(a, st.st_size, min, &len)) != 0) goto done;
    c->start = st.st_size;
    c->len = len;
    map_off = c->start - c->start % (off_t)a->pagesize;
    c->map_len = (size_t)(c->start - map_off) + len;
    map = mmap(NULL, c->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, map_off);
    if (map == MAP_FAILED) {
        err = errno;
        goto done;
    }
    c->map = map;
    /* A forked child must not even hold the parent's chunks (hf_audit_abandon). */
    madvise(c->map, c->map_len, MADV_DONTFORK);
    c->base = c->map + (c->start - map_off);
done:
    if (!claiming) claim_end(a, begin_err);
    if (err != 0)
        chunk_free(c);
    else
        *out = c;
    return err;
}

static size_t chunk_size_after(size_t size)
{
    return size < CHUNK_MAX / 2 ? 2 * size : CHUNK_MAX;
}

/* Under chunks_lock, with l's lock held: l leaves its current chunk, whose records are all
 * stored, for the writer to unmap. */
static void lane_retire(struct hf_audit *a, struct lane *l)
{
    struct chunk *c = l->cur;

    if (!c) return;
    blank(c->base + c->used, c->len - c->used);
    c->used = c->len;
    c->next = a->retired;
    a->retired = c;
    l->cur = NULL;
}

/* Under chunks_lock, with l's lock held: l moves on to c. */
static void lane_start_chunk(struct lane *l, struct chunk *c)
{
    l->cur = c;
    atomic_store_explicit(&l->stored, c->base, memory_order_release);
}

/* With l's lock held: the writer is to claim l's next chunk, of at least len bytes. */
static void lane_ask(struct hf_audit *a, struct lane *l, size_t len)
{
    pthread_mutex_lock(&a->chunks_lock);
    l->asked = true;
    if (len > l->need_len) l->need_len = len;
    pthread_mutex_unlock(&a->chunks_lock);
    l->asked_seen = true;
    pthread_mutex_lock(&a->state_lock);
    a->chunk_wanted = true;
    pthread_cond_signal(&a->wake);
    pthread_mutex_unlock(&a->state_lock);
}

/* With l's lock held and l's current chunk full: moves l on to its next chunk, waiting for the
 * writer's claim if it asked for one, or claiming one here if nobody did (a lane's first chunk,
 * or a record longer than half a chunk). NULL once the log has failed. */
static char *lane_space_slow(struct hf_audit *a, struct lane *l, size_t len)
{
    char *dst = NULL;

    pthread_mutex_lock(&a->chunks_lock);
    while (!atomic_load(&a->failed)) {
        struct chunk *c = l->cur;
        if (c && c->len - c->used >= len) {
            dst = c->base + c->used;
            c->used += len;
            break;
        }
        if (l->next) {
            lane_retire(a, l);
            lane_start_chunk(l, l->next);
            l->next = NULL;
            l->asked = l->asked_seen = false;
            continue;
        }
        if (l->asked) {
            if (l->need_len < len) l->need_len = len;
            pthread_cond_wait(&a->chunk_ready, &a->chunks_lock);
            continue;
        }
        size_t size = l->chunk_size > len ? l->chunk_size : len;
        /* The disk was full a moment ago: this record is refused, the claim is tried again by a
         * later one. */
        if (!space_claim_is_due(a)) break;
        pthread_mutex_unlock(&a->chunks_lock);
        int err = chunk_claim(a, size, len, false, l->may_reserve, &c);
        if (err != 0) {
            if (!err_is_space(err)) audit_fail(a, "claiming space", err);
            return NULL;
        }
        pthread_mutex_lock(&a->chunks_lock);
        l->chunk_size = chunk_size_after(c->len);
        lane_retire(a, l);
        lane_start_chunk(l, c);
        l->asked_seen = false; /* the writer may claim ahead of this one again */
    }
    pthread_mutex_unlock(&a->chunks_lock);
    return dst;
}

/* With l's lock held: len bytes of l's current chunk. */
static char *lane_space(struct hf_audit *a, struct lane *l, size_t len)
{
    struct chunk *c = l->cur;

    if (!c || c->len - c->used < len) return lane_space_slow(a, l, len);
    char *dst = c->base + c->used;
    c->used += len;
    /* Half used: the writer claims the next one before anybody has to wait for it. */
    if (!l->asked_seen && !l->self_claims && c->used > c->len / 2) lane_ask(a, l, 0);
    return dst;
}

/* The writer's side of lane_ask. */
static void writer_chunks(struct hf_audit *a)
{
    for (size_t i = 0; i < LANES && !atomic_load(&a->failed); i++) {
        struct lane *l = &a->lanes[i];
        struct chunk *c = NULL;
        size_t size;
        int err;

        pthread_mutex_lock(&a->chunks_lock);
        bool wanted = l->asked && !l->next;
        size = l->chunk_size > l->need_len ? l->chunk_size : l->need_len;
        size_t min = l->need_len > CHUNK_FIRST ? l->need_len : CHUNK_FIRST;
        pthread_mutex_unlock(&a->chunks_lock);
        if (!wanted) continue;
        if (min > size) min = size;
        /* Ahead of need, never from the reserve: what the writer claims, any record of the lane
         * may use. Short of space, the lane claims for itself when its chunk is full. */
        err = space_claim_is_due(a) ? chunk_claim(a, size, min, false, false, &c) : ENOSPC;
        if (err != 0 && !err_is_space(err)) audit_fail(a, "claiming space", err);
#ifdef MADV_POPULATE_READ
        /* The page cache pages, here rather than in a page fault per 4 KiB on the request
         * path. Mapped readable only: clean pages that a sync leaves alone; the lane's first
         * store to each still faults, for write access, but finds its page. */
        if (c) madvise(c->map, c->map_len, MADV_POPULATE_READ);
#endif
        pthread_mutex_lock(&a->chunks_lock);
        if (c) {
            /* Nothing but this thread fills next, and a lane claims for itself only when it
             * did not ask: asked still holds. */
            l->next = c;
            l->chunk_size = chunk_size_after(c->len);
            if (l->need_len <= c->len) l->need_len = 0;
        } else if (err_is_space(err)) {
            l->asked = false; /* a lane waiting for this claim claims itself, or refuses */
            l->need_len = 0;
        }
        pthread_cond_broadcast(&a->chunk_ready); /* with a chunk, or to let them see the failure */
        pthread_mutex_unlock(&a->chunks_lock);
    }
    if (atomic_load(&a->failed)) {
        pthread_mutex_lock(&a->chunks_lock);
        pthread_cond_broadcast(&a->chunk_ready);
        pthread_mutex_unlock(&a->chunks_lock);
    }
}

/* What the writer gives back before a sync: whole retired chunks, and the stored pages at the
 * front of each lane's current one. */
struct unmap {
    struct chunk *done;
    struct {
        char *addr;
        size_t len;
    } range[ALL_LANES];
    size_t n;
};

/* The last seq up to which every record is stored: the writer's sync target. Takes into *um
 * (if not NULL) what may be unmapped: pages nobody stores into any more.
 *
 * Why unmap before each sync: fdatasync write-protects every dirty page that is still mapped,
 * and each such page costs a TLB shootdown (an IPI to every CPU running this process, a VM exit
 * in a guest). Measured with audit appends alone: the writer spent ~30% of a CPU in those, and
 * two threads appended less than one. One munmap of the stored range is one shootdown. */
static uint64_t written_take(struct hf_audit *a, struct unmap *um)
{
    uint64_t w = atomic_load(&a->seq);

    for (size_t i = 0; i < ALL_LANES; i++) {
        struct lane *l = &a->lanes[i];
        uint64_t busy;
        /* A lane between taking its seq and saying which: a few instructions, unless it was
         * preempted right there. */
        for (int spins = 0; (busy = atomic_load(&l->busy)) == BUSY_NUMBERING; spins++)
            if (spins > 100) sched_yield();
        if (busy == 0)
            ANNOTATE_HAPPENS_AFTER(&l->busy);
        else if (busy - 1 < w)
            w = busy - 1;
    }
    if (!um) return w;
    pthread_mutex_lock(&a->chunks_lock);
    um->done = a->retired;
    a->retired = NULL;
    for (size_t i = 0; i < ALL_LANES; i++) {
        struct chunk *c = a->lanes[i].cur;
        char *stored = atomic_load_explicit(&a->lanes[i].stored, memory_order_acquire);
        if (!c || stored < c->map || stored > c->base + c->len) continue;
        char *end = c->map + (size_t)(stored - c->map) / a->pagesize * a->pagesize;
        if (end <= c->map) continue;
        um->range[um->n].addr = c->map;
        um->range[um->n].len = (size_t)(end - c->map);
        c->map_len -= um->range[um->n].len;
        c->map = end;
        um->n++;
    }
    pthread_mutex_unlock(&a->chunks_lock);
    return w;
}

static void unmap_run(struct unmap *um)
{
    for (size_t i = 0; i < um->n; i++)
        munmap(um->range[i].addr, um->range[i].len);
    chunks_free(um->done);
}

/* ---- records ---- */

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

/* The keyed chain's in-process half (audit.h), shared by the writer and the verifier. */
static bool chain_mac(EVP_MAC_CTX *mc, const unsigned char *key, const unsigned char *prev,
                      const char *line, size_t len, unsigned char *out)
{
    size_t outlen = 0;

    return EVP_MAC_init(mc, key, HASH_LEN, NULL) == 1 && EVP_MAC_update(mc, prev, HASH_LEN) == 1 &&
           EVP_MAC_update(mc, (const unsigned char *)line, len) == 1 &&
           EVP_MAC_final(mc, out, &outlen, HASH_LEN) == 1 && outlen == HASH_LEN;
}

/* k0 of a stream, computed in the HSM under the master key, which never leaves it. */
static CK_RV stream_key_derive(struct hf_root *root, const char *stream, const unsigned char *nonce,
                               unsigned char key[HASH_LEN])
{
    unsigned char in[sizeof(STREAM_KDF_PREFIX) - 1 + STREAM_ID_LEN + NONCE_LEN];
    const size_t n = sizeof(STREAM_KDF_PREFIX) - 1;

    memcpy(in, STREAM_KDF_PREFIX, n);
    memcpy(in + n, stream, STREAM_ID_LEN);
    memcpy(in + n + STREAM_ID_LEN, nonce, NONCE_LEN);
    return hf_root_hmac(root, HF_AUDIT_MAC_LABEL, in, sizeof(in), key);
}

/* A checkpoint's sig: binds the list to the stream that carries it. */
static CK_RV ckpt_sign(struct hf_root *root, const char *stream, const char *list, size_t len,
                       unsigned char sig[HASH_LEN])
{
    unsigned char in[sizeof(CKPT_PREFIX) - 1 + STREAM_ID_LEN + CKPT_LIST_MAX];
    const size_t n = sizeof(CKPT_PREFIX) - 1;

    if (len > CKPT_LIST_MAX) return CKR_ARGUMENTS_BAD;
    memcpy(in, CKPT_PREFIX, n);
    memcpy(in + n, stream, STREAM_ID_LEN);
    memcpy(in + n + STREAM_ID_LEN, list, len);
    return hf_root_hmac(root, HF_AUDIT_CHECKPOINT_LABEL, in, n + STREAM_ID_LEN + len, sig);
}

static EVP_MAC_CTX *hmac_ctx_new(EVP_MAC *hmac)
{
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    EVP_MAC_CTX *mc = EVP_MAC_CTX_new(hmac);

    if (mc && EVP_MAC_CTX_set_params(mc, params) != 1) {
        EVP_MAC_CTX_free(mc);
        mc = NULL;
    }
    return mc;
}

/* Hashes (keyed: MACs, then ratchets the key) line[0..hashed) chained to prev and appends
 * ',"hash":"<hex>"}' and '\n'. */
static CK_RV line_finish(struct hf_audit *a, struct lane *l, const unsigned char *prev, char *line,
                         size_t hashed, unsigned char *hash)
{
    unsigned int outlen = 0;
    char *p = line + hashed;

    if (l->key) {
        hf_audit_key_mac(l->key, prev, line, hashed, hash);
    } else if (EVP_DigestInit_ex2(l->mdctx, a->sha256, NULL) != 1 ||
               EVP_DigestUpdate(l->mdctx, prev, HASH_LEN) != 1 ||
               EVP_DigestUpdate(l->mdctx, line, hashed) != 1 ||
               EVP_DigestFinal_ex(l->mdctx, hash, &outlen) != 1 || outlen != HASH_LEN) {
        return CKR_GENERAL_ERROR;
    }
    p = put_raw(p, ",\"hash\":\"");
    p = put_hex(p, hash, HASH_LEN);
    put_raw(p, "\"}\n");
    return CKR_OK;
}

/* After a record is stored: the first since the writer took its last sync target wakes it. The
 * seq_cst store that cleared the lane's busy, before the load here, pairs with the writer
 * clearing dirty before it reads busy (writer_sync): either the writer counts this record
 * stored, or this sees dirty clear and wakes it. */
static void record_done(struct hf_audit *a)
{
    if (atomic_load(&a->dirty) || atomic_exchange(&a->dirty, true)) return;
    pthread_mutex_lock(&a->state_lock);
    if (!a->unsynced) {
        a->unsynced = true;
        clock_gettime(CLOCK_MONOTONIC, &a->unsynced_since);
    }
    pthread_cond_signal(&a->wake);
    pthread_mutex_unlock(&a->state_lock);
}

/* Numbers line and stores it through l's chunks. busy tells the writer which seq is not stored
 * yet: BUSY_NUMBERING from before the seq is taken until it is known, then the seq until the
 * copy is done; so a sync target never covers a record still being stored. */
static CK_RV line_store(struct hf_audit *a, struct lane *l, const unsigned char *prev, char *body,
                        char *end, unsigned char *hash, uint64_t *seq)
{
    atomic_store(&l->busy, BUSY_NUMBERING);
    uint64_t next = atomic_fetch_add(&a->seq, 1) + 1;
    atomic_store_explicit(&l->busy, next, memory_order_release);
    char *line = put_seq_before(body, next);
    size_t hashed = (size_t)(end - line), len = hashed + HASH_TAIL_LEN + 1;
    char *dst = lane_space(a, l, len);
    CK_RV rv = CKR_HF_AUDIT_FAILED; /* a seq with no record: nobody is told it */

    if (dst) {
        rv = line_finish(a, l, prev, line, hashed, hash);
        if (rv == CKR_OK) {
            memcpy(dst, line, len);
            atomic_store_explicit(&l->stored, dst + len, memory_order_release);
        } else {
            blank(dst, len);
            audit_fail(a, "hashing", EINVAL);
        }
    }
    ANNOTATE_HAPPENS_BEFORE(&l->busy);
    atomic_store(&l->busy, 0);
    *seq = next;
    return rv;
}

/* write() mode: one write per record, in seq order. */
static CK_RV line_write(struct hf_audit *a, struct lane *l, const unsigned char *prev, char *body,
                        char *end, unsigned char *hash, uint64_t *seq)
{
    CK_RV rv;
    int err;

    pthread_mutex_lock(&a->write_lock);
    uint64_t next = atomic_load(&a->seq) + 1;
    char *line = put_seq_before(body, next);
    size_t hashed = (size_t)(end - line);
    rv = line_finish(a, l, prev, line, hashed, hash);
    if (rv == CKR_OK && (err = write_all(a->fd, line, hashed + HASH_TAIL_LEN + 1)) != 0) {
        audit_fail(a, "write", err);
        rv = CKR_HF_AUDIT_FAILED;
    }
    if (rv == CKR_OK) atomic_store(&a->seq, next);
    pthread_mutex_unlock(&a->write_lock);
    *seq = next;
    return rv;
}

/* With l's lock held: one record of l's stream. open_prev is the stream-open's prev, NULL for
 * any other record; extra (may be NULL) is members to add, formatted: the stream-open's nonce, a
 * checkpoint's list and signature. */
static CK_RV record_store(struct hf_audit *a, struct lane *l, const struct hf_audit_record *rec,
                          const unsigned char *open_prev, const char *extra, uint64_t *seq)
{
    char stackbuf[LINE_STACK];
    char *buf = stackbuf;
    unsigned char hash[HASH_LEN];
    size_t need = line_bound(a, rec), extra_len = extra ? strlen(extra) : 0;
    uint64_t next = 0;
    CK_RV rv;

    if (need == 0 || extra_len > SIZE_MAX - need) return CKR_ARGUMENTS_BAD;
    need += extra_len;
    if (atomic_load(&a->failed)) return CKR_HF_AUDIT_FAILED;
    if (need > sizeof(stackbuf) && !(buf = malloc(need))) return CKR_HOST_MEMORY;
    /* Formatting (time, escaping) happens before the seq is taken, so "time" is when the
     * operation ended, and two threads' records may stand in seq order a few microseconds out of
     * time order. */
    char *body = buf + SEQ_ROOM;
    char *end = put_body(body, a, l->stream, rec);
    if (open_prev) {
        end = put_raw(end, ",\"prev\":\"");
        end = put_hex(end, open_prev, HASH_LEN);
        *end++ = '"';
    }
    if (extra_len) {
        memcpy(end, extra, extra_len);
        end += extra_len;
    }
    const unsigned char *prev = open_prev ? open_prev : l->prev;
    if (a->mapped)
        rv = line_store(a, l, prev, body, end, hash, &next);
    else
        rv = line_write(a, l, prev, body, end, hash, &next);
    if (rv == CKR_OK) {
        uint64_t gen = atomic_load_explicit(&l->snap_gen, memory_order_relaxed);
        atomic_store_explicit(&l->snap_gen, gen + 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        memcpy(l->prev, hash, HASH_LEN);
        l->last_seq = next;
        atomic_store_explicit(&l->snap_gen, gen + 2, memory_order_release);
        if (seq) *seq = next;
        record_done(a);
    }
    if (buf != stackbuf) free(buf);
    return rv;
}

static CK_RV stream_id_make(char *out)
{
    unsigned char id[STREAM_ID_LEN / 2];

    if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id)) return CKR_FUNCTION_FAILED;
    *put_hex(out, id, sizeof(id)) = '\0';
    return CKR_OK;
}

/* With l's lock held, keyed: l's first key, derived in the HSM from a fresh nonce, and the
 * stream-open's nonce member into extra. */
static CK_RV lane_key_start(struct hf_audit *a, struct lane *l, char *extra)
{
    unsigned char nonce[NONCE_LEN], k0[HASH_LEN];
    CK_RV rv;

    if (getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce)) return CKR_FUNCTION_FAILED;
    if ((rv = stream_key_derive(a->root, l->stream, nonce, k0)) != CKR_OK) {
        hf_log_error("audit: cannot derive a stream key in the HSM: 0x%lx", (unsigned long)rv);
        return CKR_HF_AUDIT_FAILED;
    }
    hf_audit_key_free(l->key);
    l->key = hf_audit_key_new(k0, HF_AUDIT_RATCHET_EVERY);
    OPENSSL_cleanse(k0, sizeof(k0));
    if (!l->key) return CKR_HOST_MEMORY;
    char *p = put_raw(extra, ",\"nonce\":\"");
    p = put_hex(p, nonce, NONCE_LEN);
    p = put_raw(p, "\",\"ratchet_every\":");
    *put_u64(p, HF_AUDIT_RATCHET_EVERY) = '\0';
    return CKR_OK;
}

/* With l's lock held: starts l's stream, its stream-open naming prev. */
static CK_RV lane_open(struct hf_audit *a, struct lane *l, const unsigned char *prev)
{
    const struct hf_audit_record open_rec = {.operation = "stream-open", .result = CKR_OK};
    char extra[48 + 2 * NONCE_LEN] = "";
    CK_RV rv;

    if (!l->mdctx && !(l->mdctx = EVP_MD_CTX_new())) return CKR_HOST_MEMORY;
    if ((rv = stream_id_make(l->stream)) != CKR_OK) return rv;
    if (a->root && (rv = lane_key_start(a, l, extra)) != CKR_OK) return rv;
    rv = record_store(a, l, &open_rec, prev, extra, NULL);
    /* stream is read without the lock once open shows (ckpt_list). */
    ANNOTATE_HAPPENS_BEFORE(&l->open);
    if (rv == CKR_OK) atomic_store(&l->open, true);
    return rv;
}

/* The calling thread's lane, locked. A thread keeps its lane, so that two threads meet on one
 * only when more than LANES append at once. */
static struct lane *lane_take(struct hf_audit *a)
{
    if (lane_hint >= LANES) lane_hint = atomic_fetch_add(&lane_dealt, 1) % LANES;
    struct lane *l = &a->lanes[lane_hint];

    if (pthread_mutex_trylock(&l->lock) == 0) return l;
    /* Ours is taken: a free lane whose stream is open already, rather than a wait. */
    for (unsigned i = 1; i < LANES; i++) {
        struct lane *o = &a->lanes[(lane_hint + i) % LANES];
        if (atomic_load(&o->open) && pthread_mutex_trylock(&o->lock) == 0) return o;
    }
    pthread_mutex_lock(&l->lock);
    return l;
}

static CK_RV record_write(struct hf_audit *a, const struct hf_audit_record *rec, uint64_t *seq)
{
    struct lane *l = lane_take(a);
    CK_RV rv = CKR_OK;

    l->may_reserve = rec->authenticated; /* its stream-open too: it is written for this record */
    /* A lane's stream-open names lane 0's, which is in the file before anything of this log. */
    if (!atomic_load(&l->open)) rv = lane_open(a, l, a->anchor);
    if (rv == CKR_OK) rv = record_store(a, l, rec, NULL, NULL, seq);
    pthread_mutex_unlock(&l->lock);
    /* Relaxed load first: the flag's cache line is written once per checkpoint, not per record. */
    if (rv == CKR_OK && !atomic_load_explicit(&a->ckpt_dirty, memory_order_relaxed))
        atomic_store(&a->ckpt_dirty, true);
    return rv;
}

CK_RV hf_audit_append(struct hf_audit *audit, const struct hf_audit_record *rec, uint64_t *seq)
{
    if (!audit || !rec) return CKR_ARGUMENTS_BAD;
    if (atomic_load(&audit->abandoned) || atomic_load(&audit->failed)) return CKR_HF_AUDIT_FAILED;
    if ((!audit->success_events || rec->failures_only) && rec->result == CKR_OK) {
        if (seq) *seq = atomic_load(&audit->seq);
        return CKR_OK;
    }
    if (!rec->authenticated && !space_admits(audit)) {
        atomic_fetch_add(&audit->refused, 1);
        return CKR_HF_AUDIT_FAILED;
    }
    CK_RV rv = record_write(audit, rec, seq);
    if (rv == CKR_HF_AUDIT_FAILED && !atomic_load(&audit->failed))
        atomic_fetch_add(&audit->refused, 1); /* for want of space */
    return rv;
}

void hf_audit_status(struct hf_audit *audit, struct hf_audit_status *status)
{
    memset(status, 0, sizeof(*status));
    if (!audit) {
        status->failed = true;
        return;
    }
    space_check_if_older(audit, SPACE_STALE_NS);
    status->space =
        atomic_load(&audit->full) ? HF_AUDIT_SPACE_FULL : (unsigned long)atomic_load(&audit->space);
    status->free_bytes = atomic_load(&audit->free_bytes);
    status->reserve_bytes = audit->reserve;
    status->alarm_bytes = audit->alarm;
    status->refused = atomic_load(&audit->refused);
    status->failed = hf_audit_is_failed(audit);
}

bool hf_audit_is_failed(struct hf_audit *audit)
{
    return !audit || atomic_load(&audit->failed) || atomic_load(&audit->abandoned);
}

uint64_t hf_audit_durable_seq(struct hf_audit *audit)
{
    return audit ? atomic_load(&audit->durable_seq) : 0;
}

/* ---- checkpoints ---- */

/* l's last seq and hash, read without its lock (the seqlock in record_store). */
static void lane_snapshot(struct lane *l, uint64_t *seq, unsigned char *hash)
{
    for (;;) {
        uint64_t gen = atomic_load_explicit(&l->snap_gen, memory_order_acquire);
        if (gen & 1) {
            sched_yield();
            continue;
        }
        *seq = l->last_seq;
        memcpy(hash, l->prev, HASH_LEN);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&l->snap_gen, memory_order_relaxed) == gen) return;
    }
}

/* "id:seq:hash;" for every open data stream, into list (CKPT_LIST_MAX); returns its end. */
static char *ckpt_list(struct hf_audit *a, char *list)
{
    char *p = list;

    for (size_t i = 0; i < LANES; i++) {
        struct lane *l = &a->lanes[i];
        unsigned char hash[HASH_LEN];
        uint64_t seq;
        if (!atomic_load(&l->open)) continue;
        ANNOTATE_HAPPENS_AFTER(&l->open);
        lane_snapshot(l, &seq, hash);
        p = put_raw(p, l->stream);
        *p++ = ':';
        p = put_u64(p, seq);
        *p++ = ':';
        p = put_hex(p, hash, HASH_LEN);
        *p++ = ';';
    }
    return p;
}

bool hf_audit_checkpoint_key(const char *node, char *out, size_t len)
{
    int n = node && *node ? snprintf(out, len, "%s.%s", HF_META_AUDIT_CHECKPOINT, node)
                          : snprintf(out, len, "%s", HF_META_AUDIT_CHECKPOINT);

    return n >= 0 && (size_t)n < len;
}

/* Records the last durable checkpoint in the store (without it, a log emptied or replaced
 * whole could not be told from a fresh one). Under the checkpoint lane's lock. */
static void ckpt_publish(struct hf_audit *a)
{
    char value[24 + HEX_HASH_LEN], key[CKPT_KEY_MAX];
    CK_RV rv = CKR_FUNCTION_FAILED;

    if (!a->store || a->ckpt_pending_seq == 0 || atomic_load(&a->durable_seq) < a->ckpt_pending_seq)
        return;
    snprintf(value, sizeof(value), "%llu %s", (unsigned long long)a->ckpt_pending_seq,
             a->ckpt_pending);
    if (!hf_audit_checkpoint_key(a->node, key, sizeof(key)) ||
        (rv = hf_store_meta_set(a->store, key, value)) != CKR_OK)
        hf_log_warn("audit: cannot record checkpoint %s in the store: 0x%lx", value,
                    (unsigned long)rv);
    a->ckpt_pending_seq = 0;
}

/* One checkpoint record (op "checkpoint", or "stream-close" at close) in the checkpoint stream:
 * every open data stream's last seq and hash, signed in the HSM. Never waits for the writer:
 * the lanes are read through their seqlocks and the checkpoint lane claims its own space. */
static CK_RV ckpt_write(struct hf_audit *a, const char *op, uint64_t *seqp)
{
    struct lane *l = &a->lanes[CKPT_LANE];
    const struct hf_audit_record rec = {.operation = op, .result = CKR_OK};
    char extra[16 + CKPT_LIST_MAX + 16 + HEX_HASH_LEN];
    unsigned char sig[HASH_LEN];
    uint64_t seq = 0;
    CK_RV rv = CKR_OK;

    pthread_mutex_lock(&l->lock);
    /* A checkpoint anchors the authenticated records before it: worth its few bytes a second. */
    l->may_reserve = true;
    if (a->ckpt_closed) goto done; /* the stream is closed */
    if (!atomic_load(&l->open)) rv = lane_open(a, l, a->anchor);
    if (rv != CKR_OK) goto done;
    char *list = put_raw(extra, ",\"streams\":\"");
    char *p = ckpt_list(a, list);
    if ((rv = ckpt_sign(a->root, l->stream, list, (size_t)(p - list), sig)) != CKR_OK) {
        hf_log_error("audit: cannot sign a checkpoint in the HSM: 0x%lx", (unsigned long)rv);
        goto done;
    }
    p = put_raw(p, "\",\"sig\":\"");
    p = put_hex(p, sig, HASH_LEN);
    p = put_raw(p, "\"");
    *p = '\0';
    if ((rv = record_store(a, l, &rec, NULL, extra, &seq)) != CKR_OK) goto done;
    a->ckpt_pending_seq = seq;
    *put_hex(a->ckpt_pending, l->prev, HASH_LEN) = '\0';
    if (strcmp(op, "stream-close") == 0) a->ckpt_closed = true;
    if (seqp) *seqp = seq;
done:
    pthread_mutex_unlock(&l->lock);
    return rv;
}

static void deadline_after(struct timespec *t, unsigned ms)
{
    clock_gettime(CLOCK_MONOTONIC, t);
    t->tv_sec += ms / 1000;
    t->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

/* The checkpoint thread: every ckpt_interval_ms, a checkpoint if something was written since,
 * recorded in the store once durable. A thread of its own, not the writer's: the HSM call (and
 * the store's commit) may wait behind another process's token login, and the group commit must
 * not wait with it. A checkpoint that cannot be written is retried at the next interval: the
 * records stay unanchored meanwhile, and verify says so. */
static void *ckpt_main(void *arg)
{
    struct hf_audit *a = arg;
    struct lane *cl = &a->lanes[CKPT_LANE];
    struct timespec due;

    pthread_mutex_lock(&a->ckpt_lock);
    while (!a->ckpt_stopping) {
        deadline_after(&due, a->ckpt_interval_ms);
        while (!a->ckpt_stopping &&
               pthread_cond_timedwait(&a->ckpt_wake, &a->ckpt_lock, &due) != ETIMEDOUT) {
        }
        if (a->ckpt_stopping) break;
        pthread_mutex_unlock(&a->ckpt_lock);
        if (atomic_exchange(&a->ckpt_dirty, false) && !atomic_load(&a->failed)) {
            uint64_t seq = 0;
            if (ckpt_write(a, "checkpoint", &seq) != CKR_OK)
                atomic_store(&a->ckpt_dirty, true);
            else if (hf_audit_wait_durable(a, seq) == CKR_OK) {
                pthread_mutex_lock(&cl->lock);
                ckpt_publish(a);
                pthread_mutex_unlock(&cl->lock);
            }
        }
        pthread_mutex_lock(&a->ckpt_lock);
    }
    pthread_mutex_unlock(&a->ckpt_lock);
    return NULL;
}

static CK_RV ckpt_start(struct hf_audit *a)
{
    sigset_t all, old;
    int err;

    if (!a->root) return CKR_OK;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    err = pthread_create(&a->ckpt_thread, NULL, ckpt_main, a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) return CKR_GENERAL_ERROR;
    pthread_setname_np(a->ckpt_thread, "hf-audit-ckpt");
    a->ckpt_running = true;
    return CKR_OK;
}

static void ckpt_stop(struct hf_audit *a)
{
    if (!a->ckpt_running) return;
    pthread_mutex_lock(&a->ckpt_lock);
    a->ckpt_stopping = true;
    pthread_cond_signal(&a->ckpt_wake);
    pthread_mutex_unlock(&a->ckpt_lock);
    pthread_join(a->ckpt_thread, NULL);
    a->ckpt_running = false;
}

/* ---- durability: the writer thread ---- */

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
        if (all || n->seq <= durable) {
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
 * stored before it started: that is the group commit. fdatasync writes back the pages dirtied
 * through the mappings as well (one page cache). */
static void writer_sync(struct hf_audit *a)
{
    struct unmap um = {0};
    struct notify *due;
    uint64_t target;
    int rc, err;

    a->unsynced = false;
    a->sync_wanted = false;
    pthread_mutex_unlock(&a->state_lock);
    atomic_store(&a->dirty, false); /* before reading the lanes: see record_done */
    target = written_take(a, &um);
    unmap_run(&um);
    do
        rc = fdatasync(a->fd);
    while (rc != 0 && errno == EINTR);
    err = errno;
    pthread_mutex_lock(&a->state_lock);
    if (rc != 0)
        mark_failed(a, "fdatasync", err, true);
    else if (target > atomic_load(&a->durable_seq))
        atomic_store(&a->durable_seq, target);
    pthread_cond_broadcast(&a->durable);
    due = notify_take_due(a);
    if (a->notify_head) a->sync_wanted = true; /* callbacks for records stored meanwhile */
    pthread_mutex_unlock(&a->state_lock);
    notify_run(due);
    pthread_mutex_lock(&a->state_lock);
}

/* The writer wakes for every group commit, a few times per request under load. As a normal
 * thread each wakeup preempted a thread at work on a request: 2.5 involuntary context switches
 * per request on each of holdfastd's two workers under SAP's RSA-3072 decrypts. SCHED_BATCH
 * takes only the wakeup preemption away: with a core idle the writer runs at once as before,
 * and with every core busy it waits at most for the running thread's time slice, while that
 * thread keeps its caches. Measured beside a normal writer in the same window: 1.03-1.06x the
 * decrypts per CPU second. A system that refuses the policy leaves the writer as it was. */
static void writer_sched_batch(void)
{
#ifdef SCHED_BATCH
    struct sched_param none = {.sched_priority = 0};

    (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &none);
#endif
}

static void *writer_main(void *arg)
{
    struct hf_audit *a = arg;
    struct timespec deadline;

    writer_sched_batch();
    pthread_mutex_lock(&a->state_lock);
    while (!a->stopping) {
        if (a->chunk_wanted) {
            a->chunk_wanted = false;
            pthread_mutex_unlock(&a->state_lock);
            writer_chunks(a);
            pthread_mutex_lock(&a->state_lock);
        } else if (atomic_load(&a->sync_failed) && a->notify_head) {
            struct notify *due = notify_take_due(a);
            pthread_mutex_unlock(&a->state_lock);
            notify_run(due);
            pthread_mutex_lock(&a->state_lock);
        } else if ((!a->unsynced && !a->sync_wanted) || atomic_load(&a->sync_failed)) {
            /* sync_wanted alone: a waiter's seq may belong to no record (a claim failed after it
             * was taken); a sync takes it into durable_seq, and the waiter learns of the
             * failure. */
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
    if (seq > atomic_load(&audit->seq)) return CKR_ARGUMENTS_BAD; /* nothing would wake us */
    pthread_mutex_lock(&audit->state_lock);
    while (atomic_load(&audit->durable_seq) < seq && !atomic_load(&audit->sync_failed)) {
        if (!audit->sync_wanted) {
            audit->sync_wanted = true;
            pthread_cond_signal(&audit->wake);
        }
        pthread_cond_wait(&audit->durable, &audit->state_lock);
    }
    if (atomic_load(&audit->durable_seq) < seq) rv = CKR_HF_AUDIT_FAILED;
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
    if (seq > atomic_load(&audit->seq)) return CKR_ARGUMENTS_BAD;
    if (!(n = calloc(1, sizeof(*n)))) return CKR_HOST_MEMORY;
    pthread_mutex_lock(&audit->state_lock);
    if (atomic_load(&audit->durable_seq) >= seq) {
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

static int pread_all(int fd, char *buf, size_t len, off_t off)
{
    while (len > 0) {
        ssize_t n = pread(fd, buf, len, off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        if (n == 0) return EIO;
        buf += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

/* The hash of the file's last complete record (the last line that ends like one), or zeros for
 * a file with none. Read backwards in blocks, looking only at the bytes before each '\n': the
 * file may end in many megabytes of zeros (space live processes have claimed, up to two chunks
 * per lane), and a torn last line is not complete. */
static CK_RV tail_hash(struct hf_audit *a, unsigned char *hash)
{
    enum { BLOCK = 1 << 20 };
    struct stat st;
    char *buf = NULL;
    uint64_t scanned = 0;
    CK_RV rv = CKR_OK;
    int err;

    memset(hash, 0, HASH_LEN);
    if (fstat(a->fd, &st) != 0) return CKR_HF_AUDIT_FAILED;
    if (!S_ISREG(st.st_mode) || st.st_size == 0) return CKR_OK;
    if (!(buf = malloc(HASH_TAIL_LEN + BLOCK))) return CKR_HOST_MEMORY;
    for (off_t off = st.st_size; off > 0; scanned += BLOCK) {
        /* The block [from, off), with the HASH_TAIL_LEN bytes before it in front. */
        size_t n = off > BLOCK ? BLOCK : (size_t)off;
        off_t from = off - (off_t)n;
        size_t pre = from > HASH_TAIL_LEN ? HASH_TAIL_LEN : (size_t)from, len = pre + n;
        if (scanned >= TAIL_SCAN_MAX) {
            /* The stream-open will name nothing and verify will say so; appending must go on. */
            hf_log_warn("audit: no record in the last %llu bytes of %s",
                        (unsigned long long)scanned, a->path);
            break;
        }
        if ((err = pread_all(a->fd, buf, len, from - (off_t)pre)) != 0) {
            hf_log_error("audit: cannot read the end of %s: %s", a->path, strerror(err));
            rv = CKR_HF_AUDIT_FAILED;
            goto done;
        }
        for (size_t end = len; end > pre;) {
            const char *nl = memrchr(buf + pre, '\n', end - pre);
            if (!nl) break;
            size_t at = (size_t)(nl - buf);
            if (at >= HASH_TAIL_LEN && !memchr(nl - HASH_TAIL_LEN, '\n', HASH_TAIL_LEN) &&
                line_tail_hash(nl - HASH_TAIL_LEN, HASH_TAIL_LEN, hash))
                goto done;
            end = at;
        }
        off = from;
    }
    memset(hash, 0, HASH_LEN);
done:
    free(buf);
    return rv;
}

/* Under flock, so that concurrent openers are ordered: read the last record's hash and claim the
 * first chunk after it. Lane 0's stream-open, stored there, names that record; it is stored after
 * the claim is given up, so that a lane's lock always comes before claim_lock. */
static CK_RV stream_start(struct hf_audit *a)
{
    const struct hf_audit_record open_rec = {.operation = "stream-open"};
    struct lane *l = &a->lanes[0];
    struct chunk *c = NULL;
    size_t first = line_bound(a, &open_rec); /* the stream-open must fit: no claim inside one */
    int lock_err = claim_begin(a), err;
    CK_RV rv;

    if (lock_err != 0)
        hf_log_warn("audit: flock(%s): %s; opening unordered", a->path, strerror(lock_err));
    if (first < CHUNK_FIRST) first = CHUNK_FIRST;
    rv = tail_hash(a, a->anchor);
    if (rv == CKR_OK && a->mapped && (err = chunk_claim(a, first, first, true, true, &c)) != 0) {
        hf_log_error("audit: cannot claim space in %s: %s", a->path, strerror(err));
        rv = CKR_HF_AUDIT_FAILED;
    }
    claim_end(a, lock_err);
    if (rv != CKR_OK) return rv;
    pthread_mutex_lock(&l->lock);
    l->may_reserve = true;
    if (c) {
        pthread_mutex_lock(&a->chunks_lock);
        lane_start_chunk(l, c);
        pthread_mutex_unlock(&a->chunks_lock);
        l->chunk_size = chunk_size_after(first);
    }
    rv = lane_open(a, l, a->anchor);
    memcpy(a->anchor, l->prev, HASH_LEN);
    pthread_mutex_unlock(&l->lock);
    return rv;
}

static void audit_free(struct hf_audit *a)
{
    if (!a) return;
    notify_run(a->notify_head);
    chunks_free(a->retired);
    for (size_t i = 0; i < ALL_LANES; i++) {
        struct lane *l = &a->lanes[i];
        chunk_free(l->cur);
        chunk_free(l->next);
        if (l->lock_ready) pthread_mutex_destroy(&l->lock);
        EVP_MD_CTX_free(l->mdctx);
        hf_audit_key_free(l->key);
    }
    if (a->fd >= 0) close(a->fd);
    if (a->durable_ready) pthread_cond_destroy(&a->durable);
    if (a->ckpt_wake_ready) pthread_cond_destroy(&a->ckpt_wake);
    if (a->ckpt_lock_ready) pthread_mutex_destroy(&a->ckpt_lock);
    if (a->wake_ready) pthread_cond_destroy(&a->wake);
    if (a->lock_ready) pthread_mutex_destroy(&a->state_lock);
    if (a->write_ready) pthread_mutex_destroy(&a->write_lock);
    if (a->chunk_ready_ready) pthread_cond_destroy(&a->chunk_ready);
    if (a->chunks_ready) pthread_mutex_destroy(&a->chunks_lock);
    if (a->claim_ready) pthread_mutex_destroy(&a->claim_lock);
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
    if (!(a->claim_ready = pthread_mutex_init(&a->claim_lock, NULL) == 0)) goto done;
    if (!(a->chunks_ready = pthread_mutex_init(&a->chunks_lock, NULL) == 0)) goto done;
    if (!(a->chunk_ready_ready = pthread_cond_init(&a->chunk_ready, NULL) == 0)) goto done;
    if (!(a->write_ready = pthread_mutex_init(&a->write_lock, NULL) == 0)) goto done;
    if (!(a->lock_ready = pthread_mutex_init(&a->state_lock, NULL) == 0)) goto done;
    if (!(a->wake_ready = pthread_cond_init(&a->wake, &attr) == 0)) goto done;
    if (!(a->durable_ready = pthread_cond_init(&a->durable, NULL) == 0)) goto done;
    if (!(a->ckpt_lock_ready = pthread_mutex_init(&a->ckpt_lock, NULL) == 0)) goto done;
    if (!(a->ckpt_wake_ready = pthread_cond_init(&a->ckpt_wake, &attr) == 0)) goto done;
    for (size_t i = 0; i < ALL_LANES; i++) {
        struct lane *l = &a->lanes[i];
        l->chunk_size = CHUNK_FIRST;
        l->self_claims = i == CKPT_LANE;
        if (!(l->lock_ready = pthread_mutex_init(&l->lock, NULL) == 0)) goto done;
        /* Read by the writer without the lane's lock, by design: the C11 orderings that make
         * that safe (line_store, written_take) are beyond helgrind, which sees races. */
        ANNOTATE_BENIGN_RACE_SIZED(&l->busy, sizeof(l->busy), "lane busy: seq_cst atomics");
        ANNOTATE_BENIGN_RACE_SIZED(&l->stored, sizeof(l->stored), "lane stored: release/acquire");
        ANNOTATE_BENIGN_RACE_SIZED(l->prev, sizeof(l->prev), "lane prev: seqlock snap_gen");
        ANNOTATE_BENIGN_RACE_SIZED(&l->last_seq, sizeof(l->last_seq), "lane seq: seqlock");
        ANNOTATE_BENIGN_RACE_SIZED(&l->snap_gen, sizeof(l->snap_gen), "seqlock generation: atomic");
    }
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

static void writer_stop(struct hf_audit *a);

CK_RV hf_audit_open(const struct hf_audit_config *cfg, struct hf_audit **out)
{
    struct hf_audit *a = NULL;
    struct stat st;
    long pagesize = sysconf(_SC_PAGESIZE);
    CK_RV rv;

    if (!out) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    if (!cfg || !cfg->path || !*cfg->path) return CKR_ARGUMENTS_BAD;
    if (!(a = calloc(1, sizeof(*a)))) return CKR_HOST_MEMORY;
    a->fd = -1;
    a->notify_tail = &a->notify_head;
    a->pid = getpid();
    a->pagesize = pagesize > 0 ? (size_t)pagesize : 4096;
    a->success_events = cfg->success_events;
    a->sync_interval_ms = cfg->sync_interval_ms;
    a->reserve = cfg->reserve_bytes;
    a->alarm = cfg->alarm_bytes ? cfg->alarm_bytes
                                : (a->reserve > UINT64_MAX / 2 ? UINT64_MAX : 2 * a->reserve);
    if (a->alarm < a->reserve) a->alarm = a->reserve;
    a->root = cfg->root;
    a->store = cfg->root ? cfg->store : NULL;
    a->ckpt_interval_ms =
        cfg->checkpoint_interval_ms ? cfg->checkpoint_interval_ms : HF_AUDIT_CHECKPOINT_INTERVAL_MS;
    if ((rv = audit_sync_init(a)) != CKR_OK) goto done;
    rv = CKR_HOST_MEMORY;
    if (!(a->path = strdup(cfg->path))) goto done;
    if (cfg->node && !(a->node = strdup(cfg->node))) goto done;
    rv = CKR_GENERAL_ERROR;
    /* Fetched once: an implicit fetch per digest costs a lookup on every record. */
    if (!(a->sha256 = EVP_MD_fetch(hf_crypto_libctx(), "SHA256", NULL))) goto done;
    /* O_RDWR: a shared mapping needs it, and the opener reads the file's last record. No
     * O_APPEND: records go where their chunk is, and glibc's posix_fallocate refuses it. */
    a->fd = open(cfg->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (a->fd < 0 || fstat(a->fd, &st) != 0) {
        hf_log_error("audit: cannot open %s: %s", cfg->path, strerror(errno));
        rv = CKR_HF_AUDIT_FAILED;
        goto done;
    }
    a->mapped = S_ISREG(st.st_mode);
    if ((rv = stream_start(a)) != CKR_OK) goto done;
    rv = writer_start(a);
    if (rv == CKR_OK && (rv = ckpt_start(a)) != CKR_OK) writer_stop(a);
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

static int chunk_by_start_desc(const void *x, const void *y)
{
    const struct chunk *a = *(struct chunk *const *)x, *b = *(struct chunk *const *)y;
    return a->start < b->start ? 1 : a->start > b->start ? -1 : 0;
}

/* After the last record: the claimed space nobody will use is cut off where it ends the file, or
 * else blanked. Under flock, so that nobody claims meanwhile. */
static void file_finish(struct hf_audit *a)
{
    struct chunk *left[2 * ALL_LANES];
    size_t n = 0;
    off_t end = -1, cut = -1;
    struct stat st;
    int begin_err;

    if (!a->mapped) return;
    for (size_t i = 0; i < ALL_LANES; i++) {
        if (a->lanes[i].cur) left[n++] = a->lanes[i].cur;
        if (a->lanes[i].next) left[n++] = a->lanes[i].next;
        a->lanes[i].cur = a->lanes[i].next = NULL;
    }
    qsort(left, n, sizeof(left[0]), chunk_by_start_desc);
    begin_err = claim_begin(a);
    if (begin_err == 0 && fstat(a->fd, &st) == 0) end = st.st_size;
    for (size_t i = 0; i < n; i++) {
        struct chunk *c = left[i];
        if (c->start + (off_t)c->len == end)
            end = cut = c->start + (off_t)c->used;
        else
            blank(c->base + c->used, c->len - c->used);
        chunk_free(c);
    }
    if (cut >= 0 && ftruncate(a->fd, cut) != 0)
        hf_log_warn("audit: cannot cut unused space off %s: %s", a->path, strerror(errno));
    claim_end(a, begin_err);
}

void hf_audit_close(struct hf_audit *audit)
{
    const struct hf_audit_record close_rec = {.operation = "stream-close", .result = CKR_OK};

    /* An abandoned log's writer and chunks are the parent's (hf_audit_abandon). */
    if (!audit || atomic_load(&audit->abandoned)) return;
    ckpt_stop(audit); /* the closing checkpoint is written here, after every stream-close */
    /* Records already returned are made durable even when the log has failed since, or the
     * close records cannot be written. */
    if (hf_audit_wait_durable(audit, atomic_load(&audit->seq)) == CKR_OK) {
        CK_RV rv = CKR_OK;
        for (size_t i = 0; i < LANES && rv == CKR_OK; i++) {
            struct lane *l = &audit->lanes[i];
            if (!atomic_load(&l->open)) continue;
            pthread_mutex_lock(&l->lock);
            l->may_reserve = true; /* the stream's end is worth its few bytes */
            rv = record_store(audit, l, &close_rec, NULL, NULL, NULL);
            pthread_mutex_unlock(&l->lock);
        }
        /* The last checkpoint names every stream-close, so a stream cut short after it shows. */
        if (rv == CKR_OK && audit->root) ckpt_write(audit, "stream-close", NULL);
        hf_audit_wait_durable(audit, atomic_load(&audit->seq));
    }
    writer_stop(audit);
    if (audit->root) ckpt_publish(audit); /* both threads have stopped: no lock needed */
    file_finish(audit);
    audit_free(audit); /* runs callbacks still queued: nobody else will */
}

void hf_audit_abandon(struct hf_audit *audit)
{
    if (!audit) return;
    /* In a fork child: the writer thread was not copied, the chunks were not mapped into this
     * process (MADV_DONTFORK), and the locks or malloc's arena may have been held by a parent
     * thread at the fork, so nothing here is freed or locked. The struct, its buffers and the
     * queued callbacks (which belong to the parent) leak on purpose, once per fork. Closing the
     * child's copy of the descriptor is safe and keeps this process out of the parent's
     * streams. */
    atomic_store(&audit->abandoned, true);
    if (audit->fd >= 0) close(audit->fd); /* fd keeps its value: the parent's threads read it */
}

/* ---- verification ---- */

struct stream_slot {
    uint64_t id;
    uint64_t seq;
    unsigned char last[HASH_LEN];
    unsigned char key[HASH_LEN]; /* keyed: the next record's key */
    unsigned ratchet_every;      /* keyed: records per key (audit-key.h) */
    unsigned under_key;          /* records MACed under key */
    uint64_t anchor;             /* the highest seq of it a checkpoint names */
    bool used;
    bool closed;
    bool torn; /* a torn record of it was seen: nothing of it may follow */
    bool keyed;
    bool anchored;    /* a checkpoint names it */
    bool checkpoints; /* it carries checkpoints (signed in the HSM: anchored by themselves) */
};

/* 16 bytes of a record hash: enough to tell 2^64 records apart, half the memory; with its
 * stream and seq, to count what no checkpoint covers. */
struct seen_slot {
    unsigned char h[16];
    uint64_t stream;
    uint64_t seq;
};

/* A record a checkpoint names: it must be in the file. */
struct claim {
    char stream_hex[STREAM_ID_LEN + 1];
    uint64_t stream;
    uint64_t seq;
    uint64_t line; /* the checkpoint's */
    unsigned char hash[HASH_LEN];
};

struct verify_state {
    const struct hf_audit_verify_config *vc;
    EVP_MD *sha256;
    EVP_MD_CTX *mdctx;
    EVP_MAC *hmac;
    EVP_MAC_CTX *macctx;
    json_tokener *tok;
    struct stream_slot *streams; /* open addressing, power-of-two size */
    size_t streams_cap, streams_n;
    struct seen_slot *seen; /* every record's hash, to check stream-open prevs */
    size_t seen_cap, seen_n;
    struct claim *claims;
    size_t claims_n, claims_cap;
    unsigned char (*ckpts)[HASH_LEN]; /* every verified checkpoint's own hash */
    size_t ckpts_n, ckpts_cap;
    bool keyed_seen; /* a keyed stream-open was seen: an unkeyed one after it is forged */
    bool store_has_ckpt;
    unsigned char store_ckpt[HASH_LEN]; /* the checkpoint the store names */
    uint64_t lineno;
    uint64_t records, nstreams, torn_line, legacy, checkpoints;
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
        if (vs->streams) OPENSSL_clear_free(vs->streams, vs->streams_cap * sizeof(*vs->streams));
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

static int seen_add(struct verify_state *vs, const unsigned char *h, uint64_t stream, uint64_t seq)
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
    struct seen_slot *slot = seen_find(vs->seen, vs->seen_cap, h);
    memcpy(slot->h, h, 16);
    slot->stream = stream;
    slot->seq = seq;
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

/* A torn piece of line lineno: every stream whose id it shows may have nothing after it. (Its
 * record was never returned, and the lane that stored it stores nothing more before that one is
 * whole: only a writer that died leaves a torn record.) */
static void torn_note(struct verify_state *vs, uint64_t lineno, const char *p, size_t n)
{
    const size_t klen = sizeof(STREAM_KEY) - 1;
    const char *end = p + n, *k;
    unsigned char id[8];

    if (!vs->torn_line) vs->torn_line = lineno;
    while ((k = memmem(p, (size_t)(end - p), STREAM_KEY, klen))) {
        p = k + klen;
        if ((size_t)(end - p) < STREAM_ID_LEN || hex_decode(p, STREAM_ID_LEN, id) != 0) continue;
        if (vs->streams_cap) {
            struct stream_slot *s = stream_find(vs->streams, vs->streams_cap, bytes_u64(id));
            if (s->used) s->torn = true;
        }
    }
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

/* The chain rules for one record whose own hash already checked out against prev. legacy: the
 * record names its prev itself (as every record did before prev became implied). */
static CK_RV verify_chain(struct verify_state *vs, struct stream_slot *s, uint64_t id,
                          const char *op, bool legacy, int64_t seq, const unsigned char *prev,
                          const unsigned char *hash, char *reason, size_t reason_len)
{
    if (strcmp(op, "stream-open") == 0) {
        if (s->used) FAIL("stream %016llx is opened twice", (unsigned long long)id);
        if (seq < 1) FAIL("stream-open with seq %lld", (long long)seq);
        bool first = vs->records == 0 && memcmp(prev, zero_hash, HASH_LEN) == 0;
        if (!first && !seen_has(vs, prev)) FAIL("stream-open names no earlier record");
        *s = (struct stream_slot){.id = id, .used = true};
        vs->streams_n++;
        vs->nstreams++;
    } else if (legacy) {
        /* Such a stream numbers its records 1, 2, 3, ... */
        if (seq != (int64_t)s->seq + 1)
            FAIL("seq %lld follows %llu: a record is missing or out of order", (long long)seq,
                 (unsigned long long)s->seq);
        if (memcmp(prev, s->last, HASH_LEN) != 0)
            FAIL("prev is not the hash of the stream's previous record");
    } else if (seq <= (int64_t)s->seq) {
        FAIL("seq %lld follows %llu: records out of order", (long long)seq,
             (unsigned long long)s->seq);
    }
    s->closed = strcmp(op, "stream-close") == 0;
    s->seq = (uint64_t)seq;
    memcpy(s->last, hash, HASH_LEN);
    if (seen_add(vs, hash, id, (uint64_t)seq) != 0) FAIL("out of memory");
    vs->records++;
    return CKR_OK;
}

static bool vs_grow(void **arr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap) return true;
    size_t ncap = *cap ? 2 * *cap : 16;
    void *p = realloc(*arr, ncap * size);
    if (!p) return false;
    *arr = p;
    *cap = ncap;
    return true;
}

/* A checkpoint's "streams": "id:seq:hash;" each, into vs->claims. */
static bool claims_parse(struct verify_state *vs, const char *list)
{
    const char *p = list;

    while (*p) {
        unsigned char id[8];
        struct claim c = {.line = vs->lineno};
        char *end;
        if (strlen(p) < STREAM_ID_LEN + 1 || hex_decode(p, STREAM_ID_LEN, id) != 0 ||
            p[STREAM_ID_LEN] != ':')
            return false;
        c.stream = bytes_u64(id);
        memcpy(c.stream_hex, p, STREAM_ID_LEN);
        p += STREAM_ID_LEN + 1;
        if (*p < '0' || *p > '9') return false;
        c.seq = strtoull(p, &end, 10);
        p = end;
        if (*p++ != ':' || strlen(p) < HEX_HASH_LEN + 1 ||
            hex_decode(p, HEX_HASH_LEN, c.hash) != 0 || p[HEX_HASH_LEN] != ';')
            return false;
        p += HEX_HASH_LEN + 1;
        if (!vs_grow((void **)&vs->claims, &vs->claims_cap, vs->claims_n, sizeof(c))) return false;
        vs->claims[vs->claims_n++] = c;
    }
    return true;
}

/* A record with "sig": its signature, made in the HSM, over the list of streams it names. */
static CK_RV verify_checkpoint(struct verify_state *vs, struct stream_slot *s, json_object *obj,
                               const char *stream, const unsigned char *hash, char *reason,
                               size_t reason_len)
{
    const char *list = member_string(obj, "streams", 0);
    const char *sighex = member_string(obj, "sig", HEX_HASH_LEN);
    unsigned char sig[HASH_LEN], want[HASH_LEN];

    if (!s->keyed) FAIL("checkpoint in an unkeyed stream (forged)");
    if (!list || !sighex || hex_decode(sighex, HEX_HASH_LEN, sig) != 0)
        FAIL("checkpoint lacks streams or sig");
    if (ckpt_sign(vs->vc->root, stream, list, strlen(list), want) != CKR_OK)
        FAIL("the HSM cannot check a checkpoint's signature (key %s missing?)",
             HF_AUDIT_CHECKPOINT_LABEL);
    if (CRYPTO_memcmp(sig, want, HASH_LEN) != 0)
        FAIL("checkpoint signature does not verify (forged)");
    if (!claims_parse(vs, list)) FAIL("checkpoint streams malformed");
    if (!vs_grow((void **)&vs->ckpts, &vs->ckpts_cap, vs->ckpts_n, HASH_LEN)) FAIL("out of memory");
    memcpy(vs->ckpts[vs->ckpts_n++], hash, HASH_LEN);
    s->checkpoints = true;
    vs->checkpoints++;
    return CKR_OK;
}

/* The stream-open's key, or none for an unkeyed (legacy) stream, which may only come before the
 * file's first keyed one. */
static CK_RV open_key(struct verify_state *vs, json_object *obj, const char *stream, bool *keyed,
                      unsigned char *key, unsigned *every, char *reason, size_t reason_len)
{
    const char *noncehex = member_string(obj, "nonce", 2 * NONCE_LEN);
    unsigned char nonce[NONCE_LEN];
    json_object *ev;

    *keyed = json_object_object_get_ex(obj, "nonce", NULL);
    if (!*keyed) {
        if (vs->keyed_seen)
            FAIL("an unkeyed stream after the keyed log began (forged: anybody can hash)");
        return CKR_OK;
    }
    if (!noncehex || hex_decode(noncehex, 2 * NONCE_LEN, nonce) != 0) FAIL("bad nonce");
    *every = 1; /* a log written before the stream-open said */
    if (json_object_object_get_ex(obj, "ratchet_every", &ev)) {
        int64_t n = json_object_get_int64(ev);
        if (!json_object_is_type(ev, json_type_int) || n < 1 || n > RATCHET_EVERY_MAX)
            FAIL("bad ratchet_every");
        *every = (unsigned)n;
    }
    if (!vs->vc->root) FAIL("keyed stream: verifying it needs the token");
    if (stream_key_derive(vs->vc->root, stream, nonce, key) != CKR_OK)
        FAIL("the HSM cannot derive a stream key (key %s missing?)", HF_AUDIT_MAC_LABEL);
    vs->keyed_seen = true;
    return CKR_OK;
}

static CK_RV verify_record(struct verify_state *vs, json_object *obj, const char *line, size_t len,
                           char *reason, size_t reason_len)
{
    unsigned char prev[HASH_LEN], hash[HASH_LEN], want[HASH_LEN], id[8], key[HASH_LEN];
    unsigned int outlen = 0;
    struct stream_slot *s;
    json_object *seqv;
    bool keyed = false, ok;
    unsigned every = 1, under_key = 0;
    CK_RV rv;

    if (!line_tail_hash(line, len, hash)) FAIL("record does not end with its hash");
    const char *stream = member_string(obj, "stream", STREAM_ID_LEN);
    const char *op = member_string(obj, "op", 0);
    const char *hashhex = member_string(obj, "hash", HEX_HASH_LEN);
    bool has_prev = json_object_object_get_ex(obj, "prev", NULL);
    const char *prevhex = member_string(obj, "prev", HEX_HASH_LEN);
    if (!stream || !op || !hashhex || hex_decode(stream, STREAM_ID_LEN, id) != 0 ||
        (has_prev && (!prevhex || hex_decode(prevhex, HEX_HASH_LEN, prev) != 0)) ||
        memcmp(hashhex, line + len - 2 - HEX_HASH_LEN, HEX_HASH_LEN) != 0 ||
        !json_object_object_get_ex(obj, "seq", &seqv) || !json_object_is_type(seqv, json_type_int))
        FAIL("record lacks seq, stream, op or hash");
    if (!(s = stream_slot_get(vs, bytes_u64(id)))) FAIL("out of memory");
    bool opening = strcmp(op, "stream-open") == 0;
    if (opening) {
        if (!has_prev) FAIL("stream-open without prev");
        rv = open_key(vs, obj, stream, &keyed, key, &every, reason, reason_len);
        if (rv != CKR_OK) return rv;
    } else {
        if (!s->used) FAIL("record of a stream that was never opened (stream-open missing)");
        if (s->closed) FAIL("record after its stream's stream-close");
        if (s->torn) FAIL("record after a torn record of its stream");
        if (!has_prev) memcpy(prev, s->last, HASH_LEN);
        keyed = s->keyed;
        memcpy(key, s->key, HASH_LEN);
        every = s->ratchet_every;
        under_key = s->under_key;
    }
    if (keyed) {
        ok = chain_mac(vs->macctx, key, prev, line, len - HASH_TAIL_LEN, want);
        if (++under_key == every) {
            hf_audit_key_ratchet(key);
            under_key = 0;
        }
    } else
        ok = EVP_DigestInit_ex2(vs->mdctx, vs->sha256, NULL) == 1 &&
             EVP_DigestUpdate(vs->mdctx, prev, HASH_LEN) == 1 &&
             EVP_DigestUpdate(vs->mdctx, line, len - HASH_TAIL_LEN) == 1 &&
             EVP_DigestFinal_ex(vs->mdctx, want, &outlen) == 1;
    if (!ok) {
        OPENSSL_cleanse(key, sizeof(key));
        FAIL("SHA-256 failed");
    }
    if (CRYPTO_memcmp(want, hash, HASH_LEN) != 0) {
        OPENSSL_cleanse(key, sizeof(key));
        if (keyed && opening) FAIL("stream-open MAC does not verify (forged, or another key)");
        if (has_prev) FAIL("hash does not match the record (altered)");
        /* The hash chains to the stream's previous record in the file: a record removed or moved
         * shows here as well as an altered one. */
        FAIL("hash does not match the record and its stream's previous one (altered, or a "
             "record of the stream removed or moved)");
    }
    rv = verify_chain(vs, s, bytes_u64(id), op, has_prev, json_object_get_int64(seqv), prev, hash,
                      reason, reason_len);
    if (rv == CKR_OK) {
        s->keyed = keyed;
        memcpy(s->key, key, HASH_LEN);
        s->ratchet_every = every;
        s->under_key = under_key;
        if (!keyed) vs->legacy++;
        if (json_object_object_get_ex(obj, "sig", NULL))
            rv = verify_checkpoint(vs, s, obj, stream, hash, reason, reason_len);
    }
    OPENSSL_cleanse(key, sizeof(key));
    return rv;
}

/* After the last line: every record a checkpoint names is there, the checkpoint the store names
 * is there, and what no checkpoint covers is counted. */
static CK_RV verify_finish(struct verify_state *vs, struct hf_audit_verify_result *result,
                           char *reason, size_t reason_len)
{
    for (size_t i = 0; i < vs->claims_n; i++) {
        const struct claim *c = &vs->claims[i];
        struct stream_slot *s =
            vs->streams_cap ? stream_find(vs->streams, vs->streams_cap, c->stream) : NULL;
        if (!seen_has(vs, c->hash) || !s || !s->used) {
            result->bad_line = c->line;
            FAIL(
                "the checkpoint names seq %llu of stream %s, which the log lacks (records removed)",
                (unsigned long long)c->seq, c->stream_hex);
        }
        if (!s->anchored || c->seq > s->anchor) s->anchor = c->seq;
        s->anchored = true;
    }
    if (vs->store_has_ckpt) {
        bool found = false;
        for (size_t i = 0; i < vs->ckpts_n && !found; i++)
            found = CRYPTO_memcmp(vs->ckpts[i], vs->store_ckpt, HASH_LEN) == 0;
        if (!found) {
            result->bad_line = vs->lineno + 1;
            FAIL("the store records a checkpoint the log lacks: the log was emptied, shortened or "
                 "replaced");
        }
    }
    for (size_t i = 0; i < vs->seen_cap; i++) {
        const struct seen_slot *e = &vs->seen[i];
        if (memcmp(e->h, zero_hash, 16) == 0) continue;
        struct stream_slot *s = stream_find(vs->streams, vs->streams_cap, e->stream);
        if (s->used && s->keyed && !s->checkpoints && (!s->anchored || e->seq > s->anchor))
            result->unanchored++;
    }
    return CKR_OK;
}
/* Bytes that fill space claimed and not used: zeros (a writer killed, or still writing) and
 * blanks (given up by a live writer). */
static bool is_filler(char c)
{
    return c == '\0' || c == ' ';
}

/* One line without its '\n' (has_nl false: the file's last bytes). */
static CK_RV verify_line(struct verify_state *vs, uint64_t lineno, const char *line, size_t len,
                         bool has_nl, char *reason, size_t reason_len)
{
    json_object *obj;
    size_t start = 0;
    CK_RV rv;

    while (len > 0 && is_filler(*line)) {
        line++;
        len--;
    }
    if (len == 0) return CKR_OK;
    obj = json_parse_whole(vs->tok, line, len);
    if (!obj && (start = glued_record_start(line, len)) > 0)
        obj = json_parse_whole(vs->tok, line + start, len - start);
    if (!obj) {
        if (has_nl) FAIL("not a JSON record");
        torn_note(vs, lineno, line, len);
        return CKR_OK;
    }
    if (start > 0) torn_note(vs, lineno, line, start);
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
    EVP_MAC_CTX_free(vs->macctx);
    EVP_MAC_free(vs->hmac);
    if (vs->streams) OPENSSL_clear_free(vs->streams, vs->streams_cap * sizeof(*vs->streams));
    free(vs->seen);
    free(vs->claims);
    free(vs->ckpts);
}

/* The checkpoint the store names ("<seq> <hash hex>"), read before the file: it was durable in
 * the file before it was recorded, so it is in whatever is read after. */
static CK_RV store_checkpoint_read(struct verify_state *vs, struct hf_audit_verify_result *result)
{
    char *v = NULL, key[CKPT_KEY_MAX];
    const char *sp;
    CK_RV rv;

    if (!vs->vc->store) return CKR_OK;
    if (!hf_audit_checkpoint_key(vs->vc->node, key, sizeof(key))) {
        snprintf(result->reason, sizeof(result->reason), "the node name is too long");
        return CKR_ARGUMENTS_BAD;
    }
    rv = hf_store_meta_get(vs->vc->store, key, &v);
    if (rv == CKR_KEY_HANDLE_INVALID) return CKR_OK; /* no keyed checkpoint was ever recorded */
    if (rv != CKR_OK) {
        snprintf(result->reason, sizeof(result->reason), "cannot read the store's checkpoint");
        return CKR_FUNCTION_FAILED;
    }
    sp = strchr(v, ' ');
    if (!sp || strlen(sp + 1) != HEX_HASH_LEN ||
        hex_decode(sp + 1, HEX_HASH_LEN, vs->store_ckpt) != 0) {
        snprintf(result->reason, sizeof(result->reason), "the store's %.100s is malformed", key);
        rv = CKR_FUNCTION_FAILED;
    } else {
        vs->store_has_ckpt = true;
    }
    free(v);
    return rv;
}

static CK_RV verify_state_init(struct verify_state *vs, const struct hf_audit_verify_config *vc)
{
    vs->vc = vc;
    vs->sha256 = EVP_MD_fetch(hf_crypto_libctx(), "SHA256", NULL);
    vs->mdctx = EVP_MD_CTX_new();
    vs->tok = json_tokener_new();
    vs->hmac = EVP_MAC_fetch(hf_crypto_libctx(), "HMAC", NULL);
    vs->macctx = vs->hmac ? hmac_ctx_new(vs->hmac) : NULL;
    return vs->sha256 && vs->mdctx && vs->tok && vs->macctx ? CKR_OK : CKR_HOST_MEMORY;
}

/* The torn record: fatal unless allowed (a crash test expects it), else a note. */
static CK_RV verify_torn(const struct verify_state *vs, struct hf_audit_verify_result *result)
{
    result->torn_line = vs->torn_line;
    if (!vs->torn_line) return CKR_OK;
    if (!vs->vc->allow_torn_tail) {
        result->bad_line = vs->torn_line;
        snprintf(result->reason, sizeof(result->reason),
                 "torn record (a writer killed mid-write, or the file cut): damage");
        return CKR_FUNCTION_FAILED;
    }
    snprintf(result->reason, sizeof(result->reason),
             "line %llu: torn record (a writer killed mid-write) ignored",
             (unsigned long long)vs->torn_line);
    return CKR_OK;
}

static CK_RV verify_file(const struct hf_audit_verify_config *vc,
                         struct hf_audit_verify_result *result)
{
    struct verify_state vs = {0};
    FILE *f = NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    CK_RV rv;

    memset(result, 0, sizeof(*result));
    if ((rv = verify_state_init(&vs, vc)) != CKR_OK) goto done;
    if ((rv = store_checkpoint_read(&vs, result)) != CKR_OK) goto done;
    if (!(f = fopen(vc->path, "re"))) {
        snprintf(result->reason, sizeof(result->reason), "cannot open: %s", strerror(errno));
        rv = CKR_FUNCTION_FAILED;
        goto done;
    }
    while ((n = getline(&line, &cap, f)) >= 0) {
        bool has_nl = n > 0 && line[n - 1] == '\n';
        vs.lineno++;
        rv = verify_line(&vs, vs.lineno, line, (size_t)n - has_nl, has_nl, result->reason,
                         sizeof(result->reason));
        if (rv != CKR_OK) {
            result->bad_line = vs.lineno;
            goto done;
        }
    }
    if (ferror(f)) {
        snprintf(result->reason, sizeof(result->reason), "read error: %s", strerror(errno));
        rv = CKR_FUNCTION_FAILED;
        goto done;
    }
    rv = verify_finish(&vs, result, result->reason, sizeof(result->reason));
    if (rv == CKR_OK && vc->strict && result->unanchored) {
        snprintf(result->reason, sizeof(result->reason),
                 "%llu records after the last checkpoint (unanchored)",
                 (unsigned long long)result->unanchored);
        result->bad_line = vs.lineno + 1;
        rv = CKR_FUNCTION_FAILED;
    }
    if (rv == CKR_OK) rv = verify_torn(&vs, result);
done:
    result->records = vs.records;
    result->streams = vs.nstreams;
    result->legacy = vs.legacy;
    result->checkpoints = vs.checkpoints;
    if (f) fclose(f);
    free(line);
    verify_state_free(&vs);
    return rv;
}

CK_RV hf_audit_verify_keyed(const struct hf_audit_verify_config *vc,
                            struct hf_audit_verify_result *result)
{
    struct hf_audit_verify_result last;
    const struct timespec pause = {0, 20 * 1000 * 1000};
    CK_RV rv;

    if (!vc || !vc->path || !result) return CKR_ARGUMENTS_BAD;
    for (int attempt = 1;; attempt++) {
        rv = verify_file(vc, result);
        /* A live writer may have been storing just where the chains broke: look again. */
        if (rv != CKR_FUNCTION_FAILED || result->bad_line == 0 || attempt == VERIFY_ATTEMPTS ||
            (attempt > 1 && last.bad_line == result->bad_line &&
             strcmp(last.reason, result->reason) == 0))
            break;
        last = *result;
        nanosleep(&pause, NULL);
    }
    return rv;
}

CK_RV hf_audit_verify(const char *path, struct hf_audit_verify_result *result)
{
    const struct hf_audit_verify_config vc = {.path = path, .allow_torn_tail = true};

    return hf_audit_verify_keyed(&vc, result);
}
