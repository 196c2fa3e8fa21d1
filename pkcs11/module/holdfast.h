/* Holdfast's public PKCS#11 contract: vendor attributes and the "Holdfast" vendor interface.
 *
 * This is the only Holdfast header the gateway, the provider and third-party programs include.
 * Everything here is reachable through standard PKCS#11 calls:
 *
 *  - Vendor attributes (read with C_GetAttributeValue, usable in C_FindObjectsInit templates):
 *      CKA_HF_KEY_UUID      UTF-8, 36 chars: the key's UUID (same for every version of a key)
 *      CKA_HF_VERSION_UUID  UTF-8, 36 chars: this version's UUID (OCI, SAP and DKE version ids)
 *      CKA_HF_VERSION       CK_ULONG: version number, 1 for the first, +1 per rotation
 *      CKA_HF_STATE         CK_ULONG: KMIP state (HF_STATE_* below)
 *      CKA_HF_USAGE         CK_ULONG: KMIP cryptographic usage mask (HF_USAGE_* below)
 *      CKA_HF_IS_CURRENT    CK_BBOOL: CK_TRUE on the version new encryptions use
 *      CKA_HF_LABELS        UTF-8: "k=v\nk=v" (sorted by key)
 *      CKA_HF_OWNER         UTF-8
 *      CKA_HF_SOURCE        UTF-8: "local" or an HSM pool name
 *      CKA_HF_CREATED       CK_ULONG: seconds since the epoch (version creation)
 *
 *  - Objects: one secret key (AES) or one private + one public key object (RSA, EC) per key
 *    version. CKA_LABEL is the key's name; CKA_ID is the 16 raw bytes of the version UUID.
 *    C_FindObjectsInit with only CKA_LABEL (plus class/type) returns the current version alone;
 *    add CKA_HF_VERSION or CKA_ID to reach older versions.
 *
 *  - The "Holdfast" interface (C_GetInterface((CK_UTF8CHAR_PTR)"Holdfast", NULL, &i, 0)):
 *    extras for programs that load the module by path. p11-kit 0.24's proxy does not pass it on.
 */
#ifndef HOLDFAST_H
#define HOLDFAST_H

#include "pkcs11-compat.h"

#define CKA_HF_BASE (CKA_VENDOR_DEFINED | 0x48460000UL) /* "HF" */
#define CKA_HF_KEY_UUID (CKA_HF_BASE + 1)
#define CKA_HF_VERSION_UUID (CKA_HF_BASE + 2)
#define CKA_HF_VERSION (CKA_HF_BASE + 3)
#define CKA_HF_STATE (CKA_HF_BASE + 4)
#define CKA_HF_USAGE (CKA_HF_BASE + 5)
#define CKA_HF_IS_CURRENT (CKA_HF_BASE + 6)
#define CKA_HF_LABELS (CKA_HF_BASE + 7)
#define CKA_HF_OWNER (CKA_HF_BASE + 8)
#define CKA_HF_SOURCE (CKA_HF_BASE + 9)
#define CKA_HF_CREATED (CKA_HF_BASE + 10)

/* KMIP 1.4 State enumeration (section 9.1.3.2.17). */
#define HF_STATE_PRE_ACTIVE 1UL
#define HF_STATE_ACTIVE 2UL
#define HF_STATE_DEACTIVATED 3UL
#define HF_STATE_COMPROMISED 4UL
#define HF_STATE_DESTROYED 5UL

/* KMIP 1.4 Cryptographic Usage Mask bits (section 9.1.3.3.1). */
#define HF_USAGE_SIGN 0x01UL
#define HF_USAGE_VERIFY 0x02UL
#define HF_USAGE_ENCRYPT 0x04UL
#define HF_USAGE_DECRYPT 0x08UL
#define HF_USAGE_WRAP 0x10UL
#define HF_USAGE_UNWRAP 0x20UL
#define HF_USAGE_DERIVE 0x200UL /* Derive Key: CKA_DERIVE (ECDH, HKDF) */

/* Vendor mechanism: CKM_ECDSA (the caller hashes) with the signature as X9.62 DER
 * (ECDSA-Sig-Value, a SEQUENCE of r and s), the form OpenSSL, TLS and X.509 use, instead of
 * r || s. Sign only. For callers that would turn r || s straight back into DER: Holdfast's
 * OpenSSL provider uses it when the module is Holdfast's. The length query gives the largest DER
 * signature of the curve; a signature is usually a byte or two shorter. */
#define CKM_HF_ECDSA_DER (CKM_VENDOR_DEFINED | 0x48460001UL)

/* Vendor return value: the link named in the request context is blocked (the HYOK kill switch). */
#define CKR_HF_LINK_BLOCKED (CKR_VENDOR_DEFINED | 0x48460001UL)
/* Vendor return value: the audit log cannot be written, so key operations are stopped. */
#define CKR_HF_AUDIT_FAILED (CKR_VENDOR_DEFINED | 0x48460002UL)
/* Vendor return value: a key's policy in the metadata store (exportable, usage, state, a link's
 * blocked flag, ...) fails its MAC: the store was edited outside Holdfast. The key (or link) is
 * refused until an operator restores it; the refusal is logged and audited ("policy.check"). */
#define CKR_HF_POLICY_INVALID (CKR_VENDOR_DEFINED | 0x48460003UL)

#define HF_INTERFACE_NAME "Holdfast"
#define HF_INTERFACE_VERSION_MAJOR 1
#define HF_INTERFACE_VERSION_MINOR 7

/* Audit sequence numbers are 64-bit; p11-kit 0.24's 2.40 header has no such CK_ type (a repeated
 * identical typedef is legal C11, should a newer header bring one). */
typedef unsigned long long CK_ULONG_LONG;

/* What a gateway knows about the request it is serving; copied into the audit record of the
 * next key operation on the session. Strings are NUL-terminated UTF-8 (NULL = not known) and are
 * copied: the caller keeps ownership. */
typedef struct HF_REQUEST_CONTEXT {
    const char *api;        /* "aws-xks", "gcp-ekm", ... */
    const char *operation;  /* the API's own operation name, e.g. "encrypt" */
    const char *caller;     /* authenticated identity, e.g. an AWS principal ARN */
    const char *request_id; /* the cloud's request id, e.g. kmsRequestId */
    const char *link_type; /* with link_id: the link the call came through, checked for "blocked" */
    const char *link_id;
    const char *detail; /* why a request was refused (the API's error name and message), or NULL */
    /* CLOCK_MONOTONIC time the request arrived, in microseconds (0: unknown), so the record's
     * latency is the request's, not just the key operation's. */
    CK_ULONG_LONG received_us;
} HF_REQUEST_CONTEXT;

typedef struct HF_LINK_INFO {
    char key_uuid[37];
    CK_BBOOL blocked;
} HF_LINK_INFO;

/* 1.2: the audit log's free space (HF_GetAuditStatus). */
#define HF_AUDIT_SPACE_OK 0UL      /* free space over the alarm threshold */
#define HF_AUDIT_SPACE_ALARM 1UL   /* under the alarm threshold, over the reserve */
#define HF_AUDIT_SPACE_RESERVE 2UL /* under the reserve: only authenticated records */
#define HF_AUDIT_SPACE_FULL 3UL    /* no space: key operations fail until space is freed */

typedef struct HF_AUDIT_STATUS {
    CK_ULONG space; /* HF_AUDIT_SPACE_* */
    CK_ULONG_LONG free_bytes;
    CK_ULONG_LONG reserve_bytes;
    CK_ULONG_LONG alarm_bytes;
    CK_ULONG_LONG refused; /* records refused for want of space */
    CK_BBOOL failed;       /* the log cannot be written at all (a write or sync failed) */
} HF_AUDIT_STATUS;

/* 1.3: a request's own audit fields (HF_SetRequestFields): a JSON object of at most
 * HF_REQUEST_FIELDS_MAX members, each name [a-z0-9_]{1,32} and each value a string, in at most
 * HF_REQUEST_FIELDS_MAX_LEN bytes of text (valid UTF-8). The record carries it as "fields". */
#define HF_REQUEST_FIELDS_MAX 8
#define HF_REQUEST_FIELDS_NAME_MAX 32
#define HF_REQUEST_FIELDS_MAX_LEN 4096

/* 1.3: a link type is [a-z0-9-]{1,32}; a link id HF_GetKeyLink returns is at most this long. */
#define HF_LINK_TYPE_MAX_LEN 32
#define HF_LINK_ID_MAX_LEN 1024

/* The one spelling rule of both names, here so that the module and its callers agree: 1 to max
 * bytes of a-z, 0-9 and punct ('-' for a link type, '_' for a request field's name). */
static inline CK_BBOOL hf_name_is_valid(const char *name, unsigned long max, char punct)
{
    unsigned long len = 0;

    if (!name) return CK_FALSE;
    for (; name[len]; len++)
        if (len >= max || !((name[len] >= 'a' && name[len] <= 'z') ||
                            (name[len] >= '0' && name[len] <= '9') || name[len] == punct))
            return CK_FALSE;
    return len > 0 ? CK_TRUE : CK_FALSE;
}

/* 1.4: HF_SetRequestAudit flags. A request whose API records no successes ([audit]
 * success_events.<api> = no in holdfastd.conf): the next key operation's record is written only
 * if the operation fails. */
#define HF_REQUEST_AUDIT_FAILURES_ONLY 0x1UL

/* 1.6: one HSM pool member's live status on this node (HF_GetPoolStatus), as the core's pool
 * executor counts it since this process opened the pool. Names are [a-z0-9-]{1,32}; the root's
 * members, when the root KEK is in a pool, come last as the pool "(root)", which no HSM pool
 * can be named. */
#define HF_POOL_NAME_BUF 33
#define HF_POOL_MODEL_BUF 96
/* Latency buckets: bucket i counts calls that took [2^i, 2^(i+1)) microseconds (bucket 0 also
 * takes 0), the last one everything from 2^23 us (~8.4 s) up. */
#define HF_POOL_LATENCY_BUCKET_COUNT 24

typedef struct HF_POOL_MEMBER_STATUS {
    char pool[HF_POOL_NAME_BUF];
    char member[HF_POOL_NAME_BUF];
    char model[HF_POOL_MODEL_BUF]; /* from the pool's definition: "<module file> token <label>" */
    CK_RV open_result;   /* CKR_OK; else why this node cannot open the pool (figures are 0) */
    CK_BBOOL healthy;    /* in service: takes calls */
    CK_BBOOL disabled;   /* its PIN was refused: never probed again until a restart */
    CK_ULONG concurrency; /* the member's limit of calls in flight */
    CK_ULONG in_flight;
    CK_ULONG_LONG calls;     /* attempts run on it (a retried call counts on both members) */
    CK_ULONG_LONG queued;    /* of which started after waiting in the pool's queue */
    CK_ULONG_LONG failures;  /* attempts that took it out of service or were retried */
    CK_ULONG_LONG failovers; /* calls moved from it to another member */
    CK_ULONG_LONG last_latency_us;
    CK_ULONG_LONG latency[HF_POOL_LATENCY_BUCKET_COUNT];
    /* The pool's, repeated in each of its members. */
    CK_ULONG queue_waiting; /* callers waiting for a free member now */
    CK_ULONG queue_max;
    CK_ULONG_LONG throttled;   /* calls answered CKR_FUNCTION_REJECTED: every member busy, queue full */
    CK_ULONG_LONG unavailable; /* calls answered CKR_DEVICE_ERROR: no healthy member */
    /* 1.7: every call's time on the member added up, in microseconds (a histogram's _sum). The
     * struct grew by it, so a caller built for 1.6 must not call HF_GetPoolStatus of 1.7. */
    CK_ULONG_LONG latency_sum_us;
} HF_POOL_MEMBER_STATUS;

/* Called once the audit record numbered seq is durable (fdatasync'ed), from the audit writer's
 * thread: it must not block. */
typedef void (*HF_AUDIT_DURABLE_FN)(void *arg);

/* clang-format off */
typedef struct HF_FUNCTION_LIST {
    CK_VERSION version;
    /* Attach ctx to the session's next key operation (and its audit record). */
    CK_RV (*HF_SetRequestContext)(CK_SESSION_HANDLE session, const HF_REQUEST_CONTEXT *ctx);
    /* Sequence number of the audit record of the session's last operation. */
    CK_RV (*HF_GetLastAuditSeq)(CK_SESSION_HANDLE session, CK_ULONG_LONG *seq);
    /* Block until audit record seq is durable. */
    CK_RV (*HF_AuditWaitDurable)(CK_ULONG_LONG seq);
    /* Call fn(arg) once audit record seq is durable (at once, on this thread, if it already is). */
    CK_RV (*HF_AuditNotifyDurable)(CK_ULONG_LONG seq, HF_AUDIT_DURABLE_FN fn, void *arg);
    /* Look up a link (type as in HF_REQUEST_CONTEXT.link_type). CKR_KEY_HANDLE_INVALID if none. */
    CK_RV (*HF_GetLinkInfo)(CK_SESSION_HANDLE session, const char *link_type, const char *link_id,
                            HF_LINK_INFO *info);
    /* 1.1: the one record of a request that ended before any key operation (bad input, failed
     * authentication, denied, unknown key): result is the nearest CK_RV, ctx->detail says why.
     * *seq gets the record's sequence number, for HF_AuditNotifyDurable. */
    CK_RV (*HF_AuditRequest)(const HF_REQUEST_CONTEXT *ctx, CK_RV result, CK_ULONG_LONG *seq);
    /* 1.2: a summary of requests refused before authentication (ctx->caller the source address,
     * ctx->detail the count, times and a sample): as HF_AuditRequest, but the record may not use
     * the audit log's free-space reserve (CKR_HF_AUDIT_FAILED under it). */
    CK_RV (*HF_AuditSummary)(const HF_REQUEST_CONTEXT *ctx, CK_RV result, CK_ULONG_LONG *seq);
    /* 1.2: the audit log's free space and state, at most a second old. */
    CK_RV (*HF_GetAuditStatus)(HF_AUDIT_STATUS *status);
    /* 1.2: HF_AuditRequest through a session. HF_SetRequestContext (with a context),
     * HF_AuditRequest, HF_AuditSummary and HF_AuditRequestSession write records in another API's name, so they
     * answer CKR_USER_NOT_LOGGED_IN unless the application is logged in (CKU_USER) with the
     * gateway PIN (`holdfast init` makes it: token-gateway.pin), not the user PIN. */
    CK_RV (*HF_AuditRequestSession)(CK_SESSION_HANDLE session, const HF_REQUEST_CONTEXT *ctx,
                                    CK_RV result, CK_ULONG_LONG *seq);
    /* 1.3: registers a link type (a gateway plugin's), so links of it can be made; idempotent,
     * audited ("link.type_add"). The gateway login only, as HF_AuditRequestSession.
     * CKR_ARGUMENTS_BAD for a name that is not [a-z0-9-]{1,32}. */
    CK_RV (*HF_RegisterLinkType)(CK_SESSION_HANDLE session, const char *link_type);
    /* 1.3: the request's own audit fields (the JSON object described at HF_REQUEST_FIELDS_MAX;
     * checked and re-serialised compactly: CKR_ARGUMENTS_BAD otherwise), for the record of the
     * session's next key operation or of HF_AuditRequestSession on it, whichever comes first;
     * HF_SetRequestContext clears them. NULL clears them. The gateway login only. */
    CK_RV (*HF_SetRequestFields)(CK_SESSION_HANDLE session, const char *fields);
    /* 1.3: the id of a link of link_type that maps to key key_uuid (the first by id text, when
     * several do), two-call convention: link_id NULL asks for *len (the NUL included);
     * CKR_BUFFER_TOO_SMALL with *len set; CKR_KEY_HANDLE_INVALID when no such link. */
    CK_RV (*HF_GetKeyLink)(CK_SESSION_HANDLE session, const char *key_uuid, const char *link_type,
                           char *link_id, CK_ULONG *len);
    /* 1.4: how the session's next key operation is recorded (HF_REQUEST_AUDIT_* flags; 0: as
     * always), spent with the request context it follows (HF_SetRequestContext first: it clears
     * them). The gateway login only, as HF_SetRequestFields. */
    CK_RV (*HF_SetRequestAudit)(CK_SESSION_HANDLE session, CK_FLAGS flags);
    /* 1.5: the result recorded in the audit record of the session's last operation (the one
     * HF_GetLastAuditSeq numbers): a request whose key operation failed already has its failure
     * on record, one refused after a key operation that succeeded does not. */
    CK_RV (*HF_GetLastAuditResult)(CK_SESSION_HANDLE session, CK_RV *result);
    /* 1.6: every HSM pool member's live status, pool after pool, each pool in its member order
     * (a pool this process has not used yet is opened first, as a key's first use opens it).
     * Two-call convention: members NULL asks for *count; CKR_BUFFER_TOO_SMALL with *count set.
     * Reads no backend once the pools are open; meant for health checks and metrics, not for
     * every request. */
    CK_RV (*HF_GetPoolStatus)(HF_POOL_MEMBER_STATUS *members, CK_ULONG *count);
} HF_FUNCTION_LIST;
/* clang-format on */

#endif /* HOLDFAST_H */
