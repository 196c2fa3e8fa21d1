/* AWS Signature Version 4 verification for the XKS proxy API (specs/aws-xks.md, "Authentication").
 *
 * Pure functions over strings: no HTTP server types, so unit tests and the fuzzer drive them
 * directly. The signing key (the HMAC chain over "AWS4"+secret, date, region, service,
 * "aws4_request") is cached per (access key id, date, region) in a struct hf_sigv4_cache that
 * belongs to one credential set: a reload builds a new set and a new cache, so a changed secret is
 * never served from an old entry. */
#ifndef HF_SIGV4_H
#define HF_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define HF_SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define HF_SIGV4_MAX_SKEW_S 300

/* The parsed Authorization header. Field sizes are the largest the spec allows; longer is
 * malformed. */
struct hf_sigv4_auth {
    char akid[31]; /* 20..30 of [A-Z2-7] */
    char date[9];  /* yyyymmdd from the credential scope */
    char region[33];
    char service[33];
    char signed_headers[1024]; /* as listed: lowercase names joined by ';' */
    char signature[65];        /* 64 lowercase hex */
};

enum hf_sigv4_result {
    HF_SIGV4_OK = 0,
    HF_SIGV4_MALFORMED,   /* Authorization or X-Amz-Date missing or unparsable */
    HF_SIGV4_UNKNOWN_KEY, /* access key id not in this credential set */
    HF_SIGV4_BAD_SCOPE,   /* service, region, terminator, or date differs from X-Amz-Date */
    HF_SIGV4_SKEW,        /* |now - X-Amz-Date| over the limit */
    HF_SIGV4_MISMATCH,    /* the signature is wrong */
};

/* A header's value by lowercase name (first occurrence, raw as received), or NULL. */
typedef const char *(*hf_sigv4_header_fn)(void *ctx, const char *lowercase_name);
/* The secret of access key id akid in the credential set, or NULL if the set has no such id. */
typedef const char *(*hf_sigv4_secret_fn)(void *ctx, const char *akid);

struct hf_sigv4_request {
    const char *method;
    const char *path;  /* raw, as received */
    const char *query; /* raw, without '?'; "" if none */
    hf_sigv4_header_fn header;
    void *header_ctx;
    const unsigned char *body;
    size_t body_len;
    time_t now; /* the verifier's clock, passed in so tests can move it */
};

struct hf_sigv4_policy {
    const char *service;        /* "kms-xks-proxy" */
    const char *const *regions; /* allowed regions */
    size_t nregions;
    unsigned max_skew_s; /* HF_SIGV4_MAX_SKEW_S (0 means that default) */
    hf_sigv4_secret_fn secret;
    void *secret_ctx;
};

/* The shapes KMS allows (API XksProxyAuthenticationCredentialType): an access key id is 20..30 of
 * [A-Z2-7]; a secret is 43..64 of [A-Za-z0-9/+=]. For the configuration loader; verify refuses a
 * secret that fails this too. */
bool hf_sigv4_akid_is_valid(const char *akid);
bool hf_sigv4_secret_is_valid(const char *secret);

struct hf_sigv4_cache;
struct hf_sigv4_cache *hf_sigv4_cache_new(void);
void hf_sigv4_cache_free(struct hf_sigv4_cache *cache); /* cleanses every cached key */

/* Parses "AWS4-HMAC-SHA256 Credential=AKID/date/region/service/aws4_request,
 * SignedHeaders=a;b;c, Signature=hex" (components in any order, optional spaces after commas). */
bool hf_sigv4_parse_authorization(const char *header, struct hf_sigv4_auth *out);

/* The canonical request for auth->signed_headers, as a new NUL-terminated string (free()), or
 * NULL when a signed header is missing or out of memory. Header values are trimmed and inner runs
 * of spaces collapsed to one. */
char *hf_sigv4_canonical_request(const struct hf_sigv4_request *req,
                                 const struct hf_sigv4_auth *auth);

/* Verifies req against policy: parses Authorization and X-Amz-Date itself. On failure why gets a
 * short reason fit for an error message (no secret, no signature). akid_out (may be NULL, 31
 * bytes) gets the access key id once parsed, for the audit record. cache may be NULL. Signatures
 * are compared in constant time. */
enum hf_sigv4_result hf_sigv4_verify(const struct hf_sigv4_request *req,
                                     const struct hf_sigv4_policy *policy,
                                     struct hf_sigv4_cache *cache, char *akid_out, char *why,
                                     size_t whylen);

/* Signs like a client would (for tests and the load tester): fills the Authorization header value
 * (a new string, free()) for the given headers; x_amz_date is "yyyymmddThhmmssZ". Any credential
 * is accepted (AWS's test suite uses AKIDEXAMPLE); signed_headers may be in any order and case
 * (it is lowercased and sorted), and req->header must answer for each of them, "x-amz-date"
 * included. NULL on a bad argument, a missing header or out of memory. */
char *hf_sigv4_sign(const struct hf_sigv4_request *req, const char *akid, const char *secret,
                    const char *region, const char *service, const char *x_amz_date,
                    const char *signed_headers);

#endif /* HF_SIGV4_H */
