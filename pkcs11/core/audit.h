/* The audit log: one record per key operation, success or failure.
 *
 * File format: one JSON object per line, appended with O_APPEND by every process that opens the
 * key store. Each opening process writes its own chain ("stream"): the stream's first record
 * (op "stream-open") names the hash of the file's last record at that moment, and every record
 * carries "prev", the hash of the previous record of the same stream, and "hash" =
 * hex(SHA-256(prev_hash_bytes || the line's bytes up to the "hash" member)). Streams interleave in
 * one file without cross-process locking; `holdfast audit verify` (hf_audit_verify) replays every
 * stream and fails on any removed, altered or reordered record.
 *
 * Durability: hf_audit_append() write()s the record before it returns, so a killed process loses
 * nothing that returned. One writer thread fdatasync()s at most every sync_interval_ms, and at
 * once when somebody waits (group commit). Callers that must not answer before the record is
 * durable wait (hf_audit_wait_durable) or ask to be called back (hf_audit_notify_durable).
 *
 * Failure: once a write or sync fails, the log is "failed" and every later append returns
 * CKR_HF_AUDIT_FAILED, so key operations stop rather than run unrecorded. */
#ifndef HF_AUDIT_H
#define HF_AUDIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pkcs11/module/holdfast.h"

struct hf_audit;

struct hf_audit_config {
    const char *path; /* created 0600 if missing */
    const char *node; /* this process's node name */
    unsigned sync_interval_ms;
    bool success_events; /* false: successful operations are not recorded */
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
 * A torn last line (a process killed mid-write leaves at most that) is reported, not fatal. */
CK_RV hf_audit_verify(const char *path, struct hf_audit_verify_result *result);

#endif
