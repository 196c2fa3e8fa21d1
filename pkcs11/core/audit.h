/* The audit log: one record per key operation, success or failure.
 *
 * File format: one JSON object per line, in one file that every process opening the key store
 * writes. An opened log writes one or more chains ("streams"): a stream's first record (op
 * "stream-open") names, in "prev", the hash of a record already in the file; every later record
 * has "hash" = hex(SHA-256(hash of the stream's previous record || the line's bytes up to the
 * "hash" member)). Streams interleave in the file without cross-process locking;
 * `holdfast audit verify` (hf_audit_verify) replays every stream and fails on any removed,
 * altered or reordered record.
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

struct hf_audit_config {
    const char *path; /* created 0600 if missing; not a regular file (a FIFO): write() per record */
    const char *node; /* this process's node name */
    unsigned sync_interval_ms;
    bool success_events;    /* false: successful operations are not recorded */
    uint64_t reserve_bytes; /* free space kept for authenticated records; 0: none */
    uint64_t alarm_bytes;   /* free space under which the alarm is raised; 0: 2 x reserve */
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
    CK_RV result;
    uint64_t latency_us;
    /* An authenticated key operation (a logged-in PKCS#11 session, the CLI, a gateway request
     * that passed its API's authentication): may use the free-space reserve. */
    bool authenticated;
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
};
/* CKR_OK when every chain holds; CKR_FUNCTION_FAILED with result->bad_line and reason when not.
 * What a killed process leaves (a torn record with nothing of its stream after it, zeros where it
 * had claimed space) is reported in reason, not fatal. A failure is looked at again (up to three
 * reads in all) before it is reported, since a live writer may have been storing just there. */
CK_RV hf_audit_verify(const char *path, struct hf_audit_verify_result *result);

#endif
