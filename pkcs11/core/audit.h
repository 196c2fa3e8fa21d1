/* The audit log: one record per key operation, success or failure.
 *
 * File format: one JSON object per line, in one file that every process opening the key store
 * writes. An opened log writes one or more chains ("streams"): a stream's first record (op
 * "stream-open") names, in "prev", the hash of a record already in the file; every later record
 * chains to the stream's previous one through its "hash" member. Streams interleave in the file
 * without cross-process locking; `holdfast audit verify` (hf_audit_verify_keyed) replays every
 * stream and fails on any removed, altered or reordered record.
 *
 * Keyed chain (a log opened with an HSM): somebody who can write the file must not be able to
 * rewrite or forge it, so "hash" is a MAC under a key that exists only where the HSM lets it:
 *  - The master key (HF_AUDIT_MAC_LABEL, an HMAC-SHA-256 token key that signs and verifies only)
 *    never leaves the HSM. Each stream's first key is derived in the HSM:
 *    k0 = HMAC_HSM(master, "holdfast-audit-stream" || stream id || nonce), the 16-byte nonce
 *    written (hex) in the stream-open's "nonce" member. One HSM call per stream, none per record.
 *  - Record i: hash = HMAC-SHA-256(k_e, previous hash || the line's bytes up to the "hash"
 *    member), computed in-process, e = i / the stream-open's "ratchet_every" (32; 1 in logs
 *    written before it was recorded); after a key's last record k_{e+1} =
 *    SHA-256("holdfast-audit-ratchet" || k_e) and k_e is overwritten, so whoever reads the
 *    process's memory later can rewrite at most a stream's last 31 records (forward security).
 *    The key and its HMAC pad states live in hf_secmem memory (audit-key.h).
 *  - Checkpoints: a checkpoint thread appends, every checkpoint_interval_ms when something was
 *    written since and once more at close, a checkpoint record (in a stream of its own) whose
 *    "streams" member names every open stream's last seq and hash and whose "sig" is
 *    HMAC_HSM(HF_AUDIT_CHECKPOINT_LABEL, "holdfast-audit-checkpoint" || its stream id ||
 *    streams). Once a checkpoint is durable its hash is recorded in the store, under the
 *    writer's node (hf_audit_checkpoint_key): the nodes of a cluster share one store but each
 *    writes a log of its own, and one key for all would name another node's checkpoint. The
 *    verifier fails when a record a checkpoint names is missing, or when the file lacks the
 *    checkpoint the store names for its node (an emptied, shortened or replaced log); records
 *    no checkpoint covers are reported as unanchored.
 *  - Verification re-derives each k0 through the token: it needs the HSM, like writing does.
 * A log opened without an HSM writes the legacy unkeyed form: hash = SHA-256(prev || bytes), no
 * nonce. The verifier accepts unkeyed streams only before the file's first keyed stream (a log
 * written before the upgrade), counts them as legacy and unanchored, and fails an unkeyed stream
 * after it (a forgery: anybody can compute SHA-256).
 *
 * Durability: a record is stored in the file's page cache (through a shared mapping) before
 * hf_audit_append() returns, so a killed process loses nothing that returned; no system call is
 * made per record. One writer thread fdatasync()s at most every sync_interval_ms, and at once when
 * somebody waits (group commit). Callers that must not answer before the record is durable wait
 * (hf_audit_wait_durable) or ask to be called back (hf_audit_notify_durable).
 *
 * Failure: once a write or a sync fails, the log is "failed" and every later append returns
 * CKR_HF_AUDIT_FAILED, so key operations stop rather than run unrecorded. Space is claimed ahead
 * (posix_fallocate) in chunks: a full disk stops appends before it could lose one. A full disk is
 * not a failure: an append that needs space then gets CKR_HF_AUDIT_FAILED, and the claim is tried
 * again (at most every 100 ms) by later appends, so writing resumes by itself once space returns.
 * The file must not be truncated while a process has it open (rotate by renaming it).
 *
 * Free space: the log keeps reserve_bytes of its file system (statvfs) for authenticated key
 * operations. Under the reserve, a record not flagged authenticated is refused
 * (CKR_HF_AUDIT_FAILED), so that nothing an anonymous caller can cause (the gateway's summaries
 * of refused requests) takes the last space from key operations. Under alarm_bytes an alarm is
 * logged, once per crossing, and hf_audit_status says so. */
#ifndef HF_AUDIT_H
#define HF_AUDIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pkcs11/module/holdfast.h"

struct hf_audit;
struct hf_root;
struct hf_store;

/* The HSM keys of the keyed chain (hf_root_mac_key_ensure makes them), and the store's record of
 * the latest durable checkpoint: "<seq> <hash hex>". */
#define HF_AUDIT_MAC_LABEL "holdfast-audit-chain"
#define HF_AUDIT_CHECKPOINT_LABEL "holdfast-audit-checkpoint"
#define HF_META_AUDIT_CHECKPOINT "audit.checkpoint"
#define HF_AUDIT_CHECKPOINT_INTERVAL_MS 1000

/* The store key of node's latest checkpoint: HF_META_AUDIT_CHECKPOINT, then "." and node when
 * there is one (NULL or ""). false when it does not fit in out. */
bool hf_audit_checkpoint_key(const char *node, char *out, size_t len);

struct hf_audit_config {
    const char *path; /* created 0600 if missing; not a regular file (a FIFO): write() per record */
    const char *node; /* this process's node name */
    unsigned sync_interval_ms;
    bool success_events;    /* false: successful operations are not recorded */
    uint64_t reserve_bytes; /* free space kept for authenticated records; 0: none */
    uint64_t alarm_bytes;   /* free space under which the alarm is raised; 0: 2 x reserve */
    /* Borrowed, and must outlive the log. NULL: the legacy unkeyed chain, no checkpoints. */
    struct hf_root *root;
    struct hf_store *store;          /* borrowed; NULL: checkpoints are not recorded in a store */
    unsigned checkpoint_interval_ms; /* 0: HF_AUDIT_CHECKPOINT_INTERVAL_MS */
};

/* One record. Strings may be NULL (written as absent) and are escaped; none may hold a secret. */
struct hf_audit_record {
    const char *api;       /* "pkcs11", "cli", "aws-xks", ... */
    const char *operation; /* "encrypt", "key.create", ... */
    const char *key_uuid;
    const char *key_name;
    unsigned version;   /* 0: none */
    const char *caller; /* identity: PKCS#11 user, CLI uid, cloud principal */
    const char *request_id;
    const char *detail; /* e.g. the mechanism, "state=deactivated" */
    /* The request's own fields: a JSON object already in hf_audit_fields_canon's form
     * (audit-fields.h), written as it is after "detail"; NULL: none. */
    const char *fields;
    CK_RV result;
    uint64_t latency_us;
    /* An authenticated key operation (a logged-in PKCS#11 session, the CLI, a gateway request
     * that passed its API's authentication): may use the free-space reserve. */
    bool authenticated;
    /* Written only when result is not CKR_OK (a request of an API whose successes go
     * unrecorded, holdfast.h's HF_REQUEST_AUDIT_FAILURES_ONLY). */
    bool failures_only;
};

CK_RV hf_audit_open(const struct hf_audit_config *cfg, struct hf_audit **out);
/* Syncs what is written, writes a "stream-close" record, stops the writer. */
void hf_audit_close(struct hf_audit *audit);
/* After fork(): the writer thread does not exist in the child; free nothing that it owns and
 * touch no lock. The child opens a new stream. */
void hf_audit_abandon(struct hf_audit *audit);

/* Appends rec; *seq (may be NULL) gets its sequence number. A success record with
 * success_events off is skipped: CKR_OK and *seq = the last written seq. */
CK_RV hf_audit_append(struct hf_audit *audit, const struct hf_audit_record *rec, uint64_t *seq);
bool hf_audit_is_failed(struct hf_audit *audit);

struct hf_audit_status {
    unsigned long space; /* HF_AUDIT_SPACE_* (holdfast.h) */
    uint64_t free_bytes; /* at the last look, at most a second ago (0 for a FIFO) */
    uint64_t reserve_bytes, alarm_bytes;
    uint64_t refused; /* records refused for want of space since the log was opened */
    bool failed;      /* hf_audit_is_failed */
};
/* Looks at the file system again when the last look is over a second old. */
void hf_audit_status(struct hf_audit *audit, struct hf_audit_status *status);
uint64_t hf_audit_durable_seq(struct hf_audit *audit);
/* CKR_HF_AUDIT_FAILED if a sync failed first; CKR_ARGUMENTS_BAD for a seq not yet written. */
CK_RV hf_audit_wait_durable(struct hf_audit *audit, uint64_t seq);
/* fn(arg) runs on the writer thread once seq is durable, or at once on the calling thread.
 * If a sync fails first, fn runs anyway (nobody waits for ever); hf_audit_wait_durable(seq) then
 * says CKR_HF_AUDIT_FAILED. */
CK_RV hf_audit_notify_durable(struct hf_audit *audit, uint64_t seq, HF_AUDIT_DURABLE_FN fn,
                              void *arg);

struct hf_audit_verify_result {
    uint64_t records;
    uint64_t streams;
    uint64_t bad_line; /* 1-based line of the first failure, 0 if none */
    char reason[160];
    uint64_t checkpoints; /* verified checkpoint records */
    uint64_t unanchored;  /* keyed records that no checkpoint covers (their loss is undetectable) */
    uint64_t legacy;      /* records of unkeyed streams (written before the keyed chain) */
    uint64_t torn_line;   /* 1-based line of the first torn record, 0 if none */
};

struct hf_audit_verify_config {
    const char *path;
    struct hf_root *root;   /* borrowed; NULL: a keyed stream fails (it cannot be checked) */
    struct hf_store *store; /* borrowed; NULL: the store's checkpoint is not compared */
    const char *node;       /* the writers' node, whose checkpoint in the store is compared */
    bool allow_torn_tail;   /* false: a torn record (a writer killed mid-write) fails */
    bool strict;            /* unanchored records fail */
};

/* CKR_OK when every chain holds; CKR_FUNCTION_FAILED with result->bad_line and reason when not.
 * What a killed process leaves (a torn record with nothing of its stream after it, zeros where it
 * had claimed space) fails unless allow_torn_tail, and is then reported in reason. A failure is
 * looked at again (up to three reads in all) before it is reported, since a live writer may have
 * been storing just there. The store's checkpoint is read before the file, so a checkpoint a live
 * writer records meanwhile is in what is read. */
CK_RV hf_audit_verify_keyed(const struct hf_audit_verify_config *vc,
                            struct hf_audit_verify_result *result);
/* hf_audit_verify_keyed without HSM or store, torn tails allowed: for unkeyed logs (tests). */
CK_RV hf_audit_verify(const char *path, struct hf_audit_verify_result *result);

#endif
