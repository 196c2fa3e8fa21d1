/* The ABI between holdfastd and its API plugins (one shared object per cloud API).
 *
 * A plugin exports one symbol, hf_plugin_entry(), returning a static struct hf_plugin. holdfastd
 * (linked with -export-dynamic) provides every hf_* function declared here; a plugin calls nothing
 * else of the gateway and never includes pkcs11/core headers.
 *
 * Life of a request: accept -> route (this file's patterns) -> the route's handler (auth,
 * parse/validate, policy, PKCS#11 through hf_p11_begin, reply) -> audit -> response. The gateway
 * owns transport, limits, request ids, metrics, logs, audit and the PKCS#11 connection; the handler
 * owns its API's authentication, validation and the mapping onto PKCS#11.
 *
 * Audit: every authenticated request makes exactly one record. When the handler's key
 * operation ran on the session from hf_p11_begin, the core wrote it (with the request context
 * below); otherwise the gateway writes it (HF_AuditRequest) from the status and message the
 * handler failed with. The response leaves only once that record is durable, without holding a
 * worker thread. A request that fails before the handler calls hf_request_set_authenticated
 * (and the gateway's own 404, 405 and 413) is refused before authentication: it is counted, and
 * one summary record per source address and error per interval stands for all such requests
 * (gateway/preauth.h), so an anonymous flood can neither fill the audit log nor hold a thread;
 * it is answered at once.
 *
 * Config: sections named "<plugin name>" or "<plugin name>:<instance>" (e.g. "aws-xks:store1")
 * belong to the plugin. On start and on every SIGHUP the gateway builds a fresh state with
 * create/configure/start and swaps it in atomically; in-flight requests finish on the old state,
 * which is destroyed after them. */
#ifndef HF_GATEWAY_PLUGIN_H
#define HF_GATEWAY_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "pkcs11/module/holdfast.h"

#define HF_PLUGIN_ABI_VERSION 1

#if defined(__GNUC__)
#define HF_PLUGIN_EXPORT __attribute__((visibility("default")))
#define HF_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define HF_PLUGIN_EXPORT
#define HF_PRINTF(f, a)
#endif

/* What went wrong, in the gateway's words; each plugin maps every value to its API's HTTP status
 * and error name in one table (struct hf_plugin.errors). */
enum hf_status {
    HF_STATUS_OK = 0,
    HF_STATUS_BAD_REQUEST,        /* malformed JSON, bad base64, missing field, wrong enum */
    HF_STATUS_UNAUTHENTICATED,    /* signature, token or client certificate refused */
    HF_STATUS_DENIED,             /* authenticated but an authorization rule says no */
    HF_STATUS_KEY_NOT_FOUND,      /* no such key (or link) for this caller */
    HF_STATUS_PATH_NOT_FOUND,     /* no such route */
    HF_STATUS_METHOD_NOT_ALLOWED, /* route exists for another method */
    HF_STATUS_KEY_DISABLED,   /* the key's state forbids the operation, or its link is blocked */
    HF_STATUS_KEY_USAGE,      /* the key may not do this operation */
    HF_STATUS_BAD_CIPHERTEXT, /* decryption failed authentication */
    HF_STATUS_TOO_LARGE,      /* body over the gateway's limit (refused from Content-Length) */
    HF_STATUS_UNSUPPORTED,    /* valid, but over an implementation cap */
    HF_STATUS_THROTTLED,      /* over a rate limit, or the backend queue is full */
    HF_STATUS_TIMEOUT,        /* the HSM did not answer in time */
    HF_STATUS_UNAVAILABLE,    /* the backend failed */
    HF_STATUS_INTERNAL,       /* anything else */
    HF_STATUS_COUNT
};

/* One row of a plugin's error table, indexed by enum hf_status (HF_STATUS_OK's row is unused). */
struct hf_error_map {
    unsigned http_status;
    const char *name; /* the API's error name, e.g. "ValidationException" */
};

struct hf_request; /* one HTTP request; valid until the handler returns */

/* The handler of one route. state is the plugin's current state (see create). Returns
 * HF_STATUS_OK after hf_reply_json(), or the status of hf_request_fail(). */
typedef enum hf_status (*hf_handler_fn)(void *state, struct hf_request *req);

struct hf_route {
    const char *method; /* "POST", "GET"; the same pattern with another method answers 405 */
    /* Literal segments, "{name}" (one non-empty segment) and "{name*}" (zero or more whole
     * segments, slashes included): one anywhere, and a second only as the last segment, where it
     * takes what follows the earliest match of the segments between the two. Routes are tried in
     * the plugin's order, plugins in config order; the first match wins. Examples:
     * "/{prefix*}/kms/xks/v1/keys/{keyId}/encrypt", "/{prefix*}/kms/xks/v1/{rest*}". */
    const char *pattern;
    const char *operation; /* for metrics, logs and audit: "encrypt", "health", ... */
    hf_handler_fn handle;
};

struct hf_plugin {
    uint32_t abi_version; /* HF_PLUGIN_ABI_VERSION */
    const char *name;     /* "aws-xks": its config section, its audit "api", its metrics label */
    const struct hf_route *routes;
    size_t nroutes;
    const struct hf_error_map *errors; /* HF_STATUS_COUNT rows */
    /* The error body in the API's shape, e.g. {"errorName":name,"errorMessage":message}.
     * Returns a new json object (the gateway serialises it compactly and frees it). */
    struct json_object *(*error_body)(const char *name, const char *message);
    /* A fresh, empty state; NULL if out of memory. */
    void *(*create)(void);
    /* One name = value of section "<name>" (instance "") or "<name>:<instance>". false with a
     * message in err (shown with the file and line) for an unknown name or a bad value. */
    bool (*configure)(void *state, const char *instance, const char *name, const char *value,
                      char *err, size_t errlen);
    /* Everything configured: check it as a whole (may use hf_p11_* and hf_keys_*). */
    bool (*start)(void *state, char *err, size_t errlen);
    void (*destroy)(void *state);
};

/* The one symbol a plugin exports. */
HF_PLUGIN_EXPORT const struct hf_plugin *hf_plugin_entry(void);

/* ---- the request (provided by holdfastd) ---------------------------------------------------- */

const char *hf_request_id(const struct hf_request *req); /* the gateway's id (logs, audit) */
const char *hf_request_method(const struct hf_request *req);
const char *hf_request_path(const struct hf_request *req);  /* raw, as received, no query */
const char *hf_request_query(const struct hf_request *req); /* after '?', "" if none */
/* A header by case-insensitive name (first occurrence), or NULL. */
const char *hf_request_header(const struct hf_request *req, const char *name);
/* A route capture ("keyId", "prefix"); "" for an empty {x*}, NULL if the route has no such name. */
const char *hf_request_param(const struct hf_request *req, const char *name);
const unsigned char *hf_request_body(const struct hf_request *req, size_t *len);
uint64_t hf_request_received_us(const struct hf_request *req); /* CLOCK_MONOTONIC */
/* The verified client certificate's subject DN and SANs (mTLS), or NULL when none was presented.
 * sans is a NUL-separated list ending with an empty string. */
const char *hf_request_client_subject(const struct hf_request *req);
const char *hf_request_client_sans(const struct hf_request *req);

/* Who and what this request is, for its audit record, metrics and log line. Strings are copied;
 * any may be NULL. Call it as soon as the values are known (a later call replaces them). */
void hf_request_set_audit(struct hf_request *req, const char *caller, const char *cloud_request_id,
                          const char *key_ref);
/* The link the call comes through: the core refuses key operations when it is blocked. */
void hf_request_set_link(struct hf_request *req, const char *link_type, const char *link_id);
/* The caller passed the API's authentication (a signature, a token, a client certificate the
 * plugin checked): from now on a failure gets its own durable audit record. Call it right after
 * the check succeeds, before anything else can fail. */
void hf_request_set_authenticated(struct hf_request *req);

/* Ends the request with status and a message for the API's error body and the audit record
 * (never a secret or a plaintext). Returns status, so: return hf_request_fail(req, ..., "...");
 * A second call keeps the first failure. */
enum hf_status hf_request_fail(struct hf_request *req, enum hf_status status, const char *fmt, ...)
    HF_PRINTF(3, 4);

/* The success reply: body is serialised compactly on one line (JSON_C_TO_STRING_PLAIN) and
 * freed; the gateway adds Content-Type: application/json. */
void hf_reply_json(struct hf_request *req, unsigned http_status, struct json_object *body);

/* ---- PKCS#11 (provided by holdfastd) -------------------------------------------------------- */

/* The module's function list and the Holdfast vendor interface (NULL over a module without it). */
CK_FUNCTION_LIST_PTR hf_p11_functions(void);
const HF_FUNCTION_LIST *hf_p11_vendor(void);
/* This thread's logged-in session, with the request's context attached to its next key operation
 * (so that operation's audit record is the request's). Call right before each key operation;
 * operation overrides the route's name when not NULL (e.g. "encrypt.verify"). */
CK_RV hf_p11_begin(struct hf_request *req, const char *operation, CK_SESSION_HANDLE *session);
/* The enum hf_status for a CK_RV from a key operation (CKR_HF_LINK_BLOCKED: KEY_DISABLED, ...). */
enum hf_status hf_status_from_ckr(CK_RV rv);

/* ---- keys, found by link and cached (provided by holdfastd) --------------------------------- */

/* A snapshot of a key reached through a link, revalidated at most one second old (and on
 * SIGHUP), so blocking, unblocking, rotation and state changes show within a second. */
struct hf_key_ref {
    char uuid[37];
    char name[129];
    CK_KEY_TYPE key_type;         /* CKK_AES, CKK_RSA, CKK_EC */
    CK_ULONG bits;                /* 256, 3072, ... */
    CK_ULONG state;               /* HF_STATE_* of the current version */
    CK_ULONG usage;               /* HF_USAGE_* mask */
    CK_ULONG version;             /* the current version's number */
    CK_OBJECT_HANDLE current;     /* secret or private key object of the current version */
    CK_OBJECT_HANDLE current_pub; /* public key object (RSA, EC), else CK_INVALID_HANDLE */
    bool blocked;                 /* the link is blocked */
};
/* HF_STATUS_KEY_NOT_FOUND when no such link (or its key is destroyed); HF_STATUS_UNAVAILABLE
 * when the module cannot be asked. */
enum hf_status hf_keys_by_link(const char *link_type, const char *link_id, struct hf_key_ref *out);
/* The private/secret object of version v of key (for decrypting old ciphertexts) and its state. */
enum hf_status hf_keys_version(const struct hf_key_ref *key, CK_ULONG version,
                               CK_OBJECT_HANDLE *object, CK_ULONG *state);

/* ---- codecs (provided by holdfastd; OpenSSL underneath) ------------------------------------- */

/* Strict RFC 4648 section 4 base64 (padded, no whitespace): false for anything else. out gets
 * hf_base64_decoded_max(len) bytes at most; *outlen the decoded length. */
bool hf_base64_decode(const char *in, size_t len, unsigned char *out, size_t *outlen);
size_t hf_base64_decoded_max(size_t len);
/* Encodes into a new NUL-terminated string (free()), NULL if out of memory. */
char *hf_base64_encode(const unsigned char *in, size_t len);

/* ---- strict JSON (provided by holdfastd; json-c underneath, gateway/json.c) ----------------- */

/* Nesting no API's body needs more of; bounds what a hostile body makes the parser build. */
#define HF_JSON_DEFAULT_DEPTH 16

/* Parses text[0..len) as one JSON value (RFC 8259, json-c's strict mode) followed by nothing but
 * whitespace. Refused with HF_STATUS_BAD_REQUEST and a printable reason in why (never a value
 * from the text): malformed or empty text, a duplicate key in any object, invalid UTF-8 (in the
 * text or made by a \u escape), nesting over max_depth (0: HF_JSON_DEFAULT_DEPTH). Over max_len
 * bytes (0: no limit but json-c's 2 GiB): HF_STATUS_UNSUPPORTED. Out of memory:
 * HF_STATUS_INTERNAL. On success *out is the caller's (json_object_put, or hf_json_put_wiped
 * when it holds a secret); on failure NULL. The tokener's buffer is cleared either way. */
enum hf_status hf_json_parse(const void *text, size_t len, size_t max_len, int max_depth,
                             struct json_object **out, char *why, size_t whylen);
/* Clears every string value in the tree (in place: the tree stays usable but its strings read
 * as zero bytes), for plaintexts and other secrets json-c would free uncleared. NULL is fine. */
void hf_json_wipe(struct json_object *root);
/* hf_json_wipe, then json_object_put. */
void hf_json_put_wiped(struct json_object *root);
/* A header's number of occurrences (case-insensitive name): plugins refuse a repeated
 * Authorization, Host or date header, whose meaning would depend on which copy a reader takes. */
size_t hf_request_header_count(const struct hf_request *req, const char *name);
/* The first of names[0..n) that appears more than once, or NULL. */
const char *hf_request_header_repeated(const struct hf_request *req, const char *const *names,
                                       size_t n);

/* ---- randomness (provided by holdfastd; OpenSSL's DRBG underneath) -------------------------- */

/* len random bytes for values that go on the wire (IVs, nonces, ids): drawn from the DRBG in
 * batches, so they wait in memory before use. Never for keys or other secrets: RAND_priv_bytes.
 * False if the DRBG fails. */
bool hf_random_public(void *out, size_t len);

#endif /* HF_GATEWAY_PLUGIN_H */
