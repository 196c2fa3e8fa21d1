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
 * handler failed with. A handler that fails after its key operation succeeded (a refusal only
 * the decrypted content could show) gets that failure record too, after the operation's. The
 * response leaves only once that record is durable, without holding a worker thread. A request that
 * fails before the handler calls hf_request_set_authenticated (and the gateway's own 404, 405 and
 * 413) is refused before authentication: it is counted, and one summary record per source address
 * and error per interval stands for all such requests (gateway/preauth.h), so an anonymous flood
 * can neither fill the audit log nor hold a thread; it is answered at once. `[audit]
 * success_events.<api> = no` drops the records of that API's successes, key operations' included
 * (the module's HF_SetRequestAudit, 1.4); failures are always recorded.
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
#include <openssl/types.h>

#include "pkcs11/module/holdfast.h"

#define HF_PLUGIN_ABI_VERSION 4

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
    HF_STATUS_BAD_GATEWAY,    /* a peer the API calls out to failed (CSE rewrap: 502) */
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
    /* NULL, or whether this route takes path at all (state: the plugin's current state). A
     * catch-all route ("/{path*}") answers only the paths under its plugin's configured prefixes,
     * so two such plugins (gcp-ekm under /ekm, gws-cse under /cse) share one listener: a route
     * that declines is skipped as if its pattern had not matched, for 404 and 405 alike. Called
     * at routing time, before the body is read; must be fast and must not fail the request. */
    bool (*accepts)(void *state, const char *path);
};

struct hf_plugin {
    uint32_t abi_version; /* HF_PLUGIN_ABI_VERSION */
    const char *name;     /* "aws-xks": its config section, its audit "api", its metrics label */
    /* The link type its keys are reached through ("aws-xks", "gcp-ekm"): holdfastd registers it
     * with the module at start, so `holdfast link create` accepts it. NULL: the plugin reaches
     * no key through a link. */
    const char *link_type;
    /* The cloud's latency limit for one call, in ms (XKS 250, EKM 150, CSE 200, OCI 100): the
     * metrics' latency buckets sit around it, and holdfast_requests_within_limit_ratio counts
     * the share of calls answered within it. 0: 250. */
    unsigned latency_limit_ms;
    /* The largest request body its spec allows, in bytes (OCI and SAP 128 KiB, DKE 16 KiB): a
     * Content-Length over it is answered 413 before the body is read, a chunked body at the byte
     * that passes it. 0: [gateway] max_body (default 64 KiB). */
    size_t max_body;
    const struct hf_route *routes;
    size_t nroutes;
    const struct hf_error_map *errors; /* HF_STATUS_COUNT rows */
    /* The error body in the API's shape, e.g. {"errorName":name,"errorMessage":message};
     * message is printable ASCII, under 256 bytes (hf_request_fail makes it so).
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

/* The error body {"code":name,"message":message} of the APIs whose "code" is the HTTP status as
 * a string (OCI EKMS, SAP HYOK): such a plugin names each row of its error table by its status
 * ("400") and points error_body here. */
struct json_object *hf_error_body_code_message(const char *name, const char *message);
/* Their one error table (errors = hf_error_map_code_status): each status's HTTP status, named
 * by itself; sizes over a spec's caps (HF_STATUS_UNSUPPORTED) are 400, timeouts 503, and
 * HF_STATUS_BAD_GATEWAY 500 (neither API makes an outbound call on a request). */
extern const struct hf_error_map hf_error_map_code_status[HF_STATUS_COUNT];

/* Whether s[0..len) is a UUID in its 8-4-4-4-12 hex form, either case: the ids SAP keystores,
 * OCI vaults and DKE key versions carry in paths. */
bool hf_uuid_text_is_valid(const char *s, size_t len);

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
/* SHA-256 of the verified client certificate (the leaf's DER), for pinning it (SAP HYOK pins one
 * or two per keystore): true with out filled, false when none was presented. */
bool hf_request_client_cert_sha256(const struct hf_request *req, unsigned char out[32]);

/* One of the API's own audit fields (access reason, resource name, caller email, ...): name is
 * [a-z0-9_]{1,32}, value any UTF-8 (copied, NULL removes it); at most HF_AUDIT_FIELDS_MAX per
 * request (later ones are dropped and logged). They go in the request's one record, success or
 * failure, as the member "fields" (a JSON object of strings; flags are "true"/"false"). */
#define HF_AUDIT_FIELDS_MAX 8
void hf_request_set_audit_field(struct hf_request *req, const char *name, const char *value);

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
/* A handler's last step: hf_reply_json(req, http_status, body) and HF_STATUS_OK; a NULL body
 * (building it ran out of memory) fails req with HF_STATUS_INTERNAL, "out of memory", and
 * returns that. So: return hf_reply_json_or_fail(req, 200, reply_new(...)); */
enum hf_status hf_reply_json_or_fail(struct hf_request *req, unsigned http_status,
                                     struct json_object *body);
/* A success reply without a body (a CORS preflight's 204). */
void hf_reply_empty(struct hf_request *req, unsigned http_status);
/* One more response header, sent with whatever the request is answered, an error body included
 * (CORS: Access-Control-Allow-Origin, Vary). name and value are copied; at most
 * HF_REPLY_HEADERS_MAX per request (later ones are dropped and logged); names the gateway sets
 * itself (Content-Type, Content-Length, Connection, X-Request-Id, Allow) and values with CR or
 * LF are refused and logged. */
#define HF_REPLY_HEADERS_MAX 8
void hf_reply_header(struct hf_request *req, const char *name, const char *value);
/* This request's answer holds nothing an auditor needs and it never authenticated (a CORS
 * preflight, a public key set, a status page): it makes no audit record, neither its own nor a
 * share of a pre-authentication summary, so such requests cannot fill the log; it is still
 * counted in the metrics and logged. Ignored after hf_request_set_authenticated. */
void hf_request_set_unaudited(struct hf_request *req);
/* The request's operation for metrics, logs and audit, when its route cannot tell (one
 * catch-all route serving several verbs): a string that outlives the request (a literal). */
void hf_request_set_operation(struct hf_request *req, const char *operation);

/* ---- PKCS#11 (provided by holdfastd) -------------------------------------------------------- */

/* The module's function list and the Holdfast vendor interface (NULL over a module without it). */
CK_FUNCTION_LIST_PTR hf_p11_functions(void);
const HF_FUNCTION_LIST *hf_p11_vendor(void);
/* This thread's logged-in session, with the request's context attached to its next key operation
 * (so that operation's audit record is the request's). Call right before each key operation;
 * operation overrides the route's name when not NULL (e.g. "encrypt.verify"). */
CK_RV hf_p11_begin(struct hf_request *req, const char *operation, CK_SESSION_HANDLE *session);
/* Whether hf_p11_begin cut this pass of the handler short: its key lives in an HSM pool, and the
 * handler runs again on the pool's workers. What the handler concluded from this pass (a health
 * result, anything it would cache) is not to be kept. */
bool hf_request_deferred(const struct hf_request *req);
/* The enum hf_status for a CK_RV from a key operation (CKR_HF_LINK_BLOCKED: KEY_DISABLED, ...;
 * an HSM pool's CKR_FUNCTION_REJECTED, every member busy and its queue full: THROTTLED; its
 * CKR_DEVICE_ERROR, no healthy member: UNAVAILABLE). */
enum hf_status hf_status_from_ckr(CK_RV rv);
/* How an API answers a failed PKCS#11 call (hf_request_fail_ckr): which of hf_status_from_ckr's
 * statuses it keeps (a mask of HF_STATUS_BIT), and what every other becomes. HF_STATUS_OK (a
 * CK_RV that is no failure) is never kept. */
#define HF_STATUS_BIT(s) (UINT32_C(1) << (s))
#define HF_STATUS_ALL (HF_STATUS_BIT(HF_STATUS_COUNT) - 1)
struct hf_ckr_policy {
    uint32_t kept;
    enum hf_status otherwise;
};
/* Fails req for rv, what (e.g. "encrypt", "opening a session") failing: hf_status_from_ckr(rv)
 * kept or replaced as policy says (NULL: every status kept, HF_STATUS_OK made
 * HF_STATUS_INTERNAL), with the message "<what> failed (PKCS#11 0x<rv>)". Returns that status,
 * so: return hf_request_fail_ckr(req, rv, "decrypt", &api_ckr_policy); */
enum hf_status hf_request_fail_ckr(struct hf_request *req, CK_RV rv, const char *what,
                                   const struct hf_ckr_policy *policy);
/* Every HSM pool member's live status on this node (holdfast.h's HF_POOL_MEMBER_STATUS, from the
 * module's HF_GetPoolStatus, 1.6), pool after pool: *out malloc'd (free()), *n entries (0: no
 * pool). false when the module cannot say (another vendor's, or older). For health answers and
 * status pages, never per key operation: it reads every pool's state. */
bool hf_p11_pool_status(HF_POOL_MEMBER_STATUS **out, size_t *n);

/* ---- keys, found by link and cached (provided by holdfastd) --------------------------------- */

/* A snapshot of a key reached through a link, revalidated at most one second old (and on
 * SIGHUP), so blocking, unblocking, rotation and state changes show within a second. */
struct hf_key_ref {
    char uuid[37];
    char name[129];
    char version_uuid[37];        /* the current version's UUID */
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

/* Version v of key by number: its object, state and UUID (version_uuid may be NULL). */
enum hf_status hf_keys_version_info(const struct hf_key_ref *key, CK_ULONG version,
                                    CK_OBJECT_HANDLE *object, CK_ULONG *state,
                                    char version_uuid[37]);
/* The key and version behind a version UUID, if the key is reachable through a link of
 * link_type (OCI, SAP and DKE name versions by UUID): out is the key as hf_keys_by_link gives
 * it (link_id receives the link's id, 256 bytes), *version the version's number.
 * HF_STATUS_KEY_NOT_FOUND when no such version, or no link of that type reaches its key. */
enum hf_status hf_keys_by_version_uuid(const char *link_type, const char *version_uuid,
                                       struct hf_key_ref *out, CK_ULONG *version,
                                       char link_id[256]);

/* The object of version `version` of key, for opening what that version sealed, after the
 * state rules (deactivated and compromised versions still decrypt): HF_STATUS_OK with *object;
 * HF_STATUS_BAD_CIPHERTEXT when the version is 0 or newer than the key's current one (never
 * this key's); HF_STATUS_KEY_NOT_FOUND when the version is destroyed or gone;
 * HF_STATUS_UNAVAILABLE when the store cannot say; hf_key_may's status when the key may not
 * decrypt. Never fails the request: the caller does, in its API's words. */
enum hf_status hf_keys_decrypt_version(const struct hf_key_ref *key, CK_ULONG version,
                                       CK_OBJECT_HANDLE *object);

/* One version of a key, as the APIs that name versions by UUID (OCI, SAP, DKE) see it. */
struct hf_key_version {
    CK_ULONG version;        /* its number: 1 for the first, +1 per rotation */
    char uuid[37];           /* CKA_HF_VERSION_UUID */
    CK_ULONG state;          /* HF_STATE_* (never HF_STATE_DESTROYED: those are not found) */
    int64_t created;         /* CKA_HF_CREATED: seconds since the epoch */
    CK_OBJECT_HANDLE object; /* the secret or private key object */
    CK_OBJECT_HANDLE pub;    /* the public key object (RSA, EC), else CK_INVALID_HANDLE */
};
/* The version of key whose UUID is version_uuid, cached like hf_keys_version (a request names
 * versions on the hot path: SAP decrypts, DKE decrypts). HF_STATUS_KEY_NOT_FOUND when no
 * version of this key has that UUID, or it is destroyed; HF_STATUS_UNAVAILABLE when the module
 * cannot be asked. The state rules are the caller's (hf_key_may with out->state). */
enum hf_status hf_keys_version_by_uuid(const struct hf_key_ref *key, const char *version_uuid,
                                       struct hf_key_version *out);
/* Every version of key that is not destroyed, oldest first, read from the module on each call
 * (a listing: SAP get-versions-metadata): *out malloc'd (free(); NULL when *n is 0).
 * HF_STATUS_UNAVAILABLE when the module cannot be asked, HF_STATUS_INTERNAL out of memory. */
enum hf_status hf_keys_versions(const struct hf_key_ref *key, struct hf_key_version **out,
                                size_t *n);

/* The operations a cloud call maps onto, for the one "may this key do it" rule. */
enum hf_key_op {
    HF_KEY_OP_ENCRYPT, /* also wrap: material enters the key */
    HF_KEY_OP_DECRYPT, /* also unwrap: material leaves it */
    HF_KEY_OP_SIGN,
    HF_KEY_OP_VERIFY,
    HF_KEY_OP_METADATA /* describe the key: refused only when the link is blocked */
};
/* HF_STATUS_OK when key may do op now: HF_STATUS_KEY_DISABLED when its link is blocked or its
 * current version's state forbids op (decrypt also runs on deactivated and compromised
 * versions: pass that version's state, from hf_keys_version_info, in state; 0: the current
 * version's; encrypt and sign need the current state and, when given, state to allow them);
 * HF_STATUS_KEY_USAGE when its usage mask lacks op. Never fails the request: the caller does, with
 * its own message. */
enum hf_status hf_key_may(const struct hf_key_ref *key, enum hf_key_op op, CK_ULONG state);

/* ---- clock, deadline, rate limit (provided by holdfastd) ------------------------------------ */

/* The one clock of the gateway and its plugins: CLOCK_MONOTONIC in microseconds. */
uint64_t hf_now_us(void);
/* Wall-clock time in seconds since the epoch (token exp/nbf/iat). */
int64_t hf_wall_s(void);
/* True when the request arrived more than deadline_ms ago (0: never): a key operation whose
 * answer the cloud no longer waits for is refused instead, with the status the API gives a late
 * backend (XKS: HF_STATUS_TIMEOUT, its 503 DependencyTimeoutException; EKM: 503 either way). */
bool hf_request_past_deadline(const struct hf_request *req, unsigned deadline_ms);
/* The same, failing req: HF_STATUS_OK when in time, else hf_request_fail(req, status, ...) with
 * a message saying how long it waited (status: the API's answer to a late backend). */
enum hf_status hf_request_deadline_check(struct hf_request *req, unsigned deadline_ms,
                                         enum hf_status status);

/* A token bucket: per_second tokens a second, holding at most burst (0: per_second; at least
 * 1), full when made. Thread-safe. hf_rate_new(0, 0), and a NULL rate, allow everything. NULL if
 * out of memory. */
struct hf_rate;
struct hf_rate *hf_rate_new(double per_second, double burst);
bool hf_rate_allow(struct hf_rate *rate); /* takes a token; false: answer HF_STATUS_THROTTLED */
/* hf_rate_allow, failing req with HF_STATUS_THROTTLED and a message naming who (e.g. "key
 * store prod") and its rate when there is no token. */
enum hf_status hf_request_rate_check(struct hf_request *req, struct hf_rate *rate, const char *who);
void hf_rate_free(struct hf_rate *rate);

/* ---- config values (provided by holdfastd) ---------------------------------------------------
 * Each parses one value of a plugin's section; false with a message in err naming what was
 * wanted (the gateway adds the file and line). */

bool hf_conf_bool(const char *value, bool *out, char *err,
                  size_t errlen); /* true/false/yes/no/on/off/1/0 */
bool hf_conf_uint(const char *value, uint64_t min, uint64_t max, uint64_t *out, char *err,
                  size_t errlen);
/* Bytes: a number with an optional k, M or G suffix (1024-based). */
bool hf_conf_size(const char *value, uint64_t min, uint64_t max, uint64_t *out, char *err,
                  size_t errlen);
/* Milliseconds: a number with ms, s, m or h (bare: ms). */
bool hf_conf_duration_ms(const char *value, uint64_t min, uint64_t max, uint64_t *out, char *err,
                         size_t errlen);
/* A comma- or space-separated list: each item trimmed, empty ones skipped. *items (free each,
 * then the array) gets *n of them, appended to what is there. */
bool hf_conf_list(const char *value, char ***items, size_t *n, char *err, size_t errlen);
/* Frees n items and the array (NULL is fine): what hf_conf_list filled. */
void hf_conf_list_free(char **items, size_t n);
/* A list option's new value: its items replace what *items held (an option given twice means
 * its last line); on failure *items is unchanged. */
bool hf_conf_list_set(const char *value, char ***items, size_t *n, char *err, size_t errlen);
/* A string option's new value, copied over *dst; "out of memory" in err on failure. */
bool hf_conf_string_set(char **dst, const char *value, char *err, size_t errlen);
/* A path as the config file means it: relative ones are relative to the file's directory.
 * A new string (free()), NULL if out of memory. */
char *hf_conf_path(const char *value);
/* The contents of a file holding a secret (a credential, a token signing key), refused when
 * world-readable, group- or world-writable or owned by another unprivileged user (the message
 * starts with the path and names its mode, "PATH: mode 0644: world-readable; chmod 600", so
 * the caller can put its setting's name in front); a group-readable one is logged as a warning.
 * Over max_len bytes (0: 64 KiB): refused. *data is NUL-terminated, in secure memory: release
 * with hf_secret_free(*data, *len). path is used as given (pass it through hf_conf_path). */
bool hf_conf_secret_file(const char *path, size_t max_len, char **data, size_t *len, char *err,
                         size_t errlen);
void hf_secret_free(char *data, size_t len);

/* ---- codecs (provided by holdfastd; OpenSSL underneath) ------------------------------------- */

/* Strict RFC 4648 section 4 base64 (padded, no whitespace): false for anything else. out gets
 * hf_base64_decoded_max(len) bytes at most; *outlen the decoded length. */
bool hf_base64_decode(const char *in, size_t len, unsigned char *out, size_t *outlen);
size_t hf_base64_decoded_max(size_t len);
/* Encodes into a new NUL-terminated string (free()), NULL if out of memory. */
char *hf_base64_encode(const unsigned char *in, size_t len);
/* Lenient base64 as proto3 JSON and JWTs write it: the standard or URL-safe alphabet (not
 * mixed), padded or not; no whitespace. out gets hf_base64_decoded_max(len) bytes at most. */
bool hf_base64_decode_any(const char *in, size_t len, unsigned char *out, size_t *outlen);
/* URL-safe, unpadded (JWT segments); a new string (free()), NULL if out of memory. */
char *hf_base64url_encode(const unsigned char *in, size_t len);
/* hf_base64_encode into a new json string; NULL if out of memory. */
struct json_object *hf_json_base64(const unsigned char *in, size_t len);

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
/* A request body's members, the rules every API's fields share. A string member of obj:
 * HF_STATUS_OK with *out (borrowed from obj's tree; NULL when absent and not required) and *len
 * (may be NULL). Otherwise why names the field as where then name (where: "" or a path such as
 * "requestMetadata."), never its value: HF_STATUS_BAD_REQUEST when required and absent, not a
 * string, or holding a NUL; over max_len bytes (0: no cap), over_cap (HF_STATUS_BAD_REQUEST for
 * the API's own limit, HF_STATUS_UNSUPPORTED for a valid value over an implementation cap). */
enum hf_status hf_json_member_string(const struct json_object *obj, const char *where,
                                     const char *name, bool required, size_t max_len,
                                     enum hf_status over_cap, const char **out, size_t *len,
                                     char *why, size_t whylen);
/* A base64 member decoded (any: hf_base64_decode_any's forms, else hf_base64_decode's), with the
 * same rules on presence, type and its decoded size. HF_STATUS_OK with *data (malloc'd; release
 * with OPENSSL_clear_free(*data, *len) when it may be a secret; NULL when absent and not
 * required; never NULL when present, even empty) and *len; HF_STATUS_BAD_REQUEST for bad base64,
 * HF_STATUS_INTERNAL out of memory. On failure *data is NULL and what was decoded is wiped. */
enum hf_status hf_json_member_base64(const struct json_object *obj, const char *name, bool required,
                                     bool any, size_t max_len, enum hf_status over_cap,
                                     unsigned char **data, size_t *len, char *why, size_t whylen);
/* A header's number of occurrences (case-insensitive name): plugins refuse a repeated
 * Authorization, Host or date header, whose meaning would depend on which copy a reader takes. */
size_t hf_request_header_count(const struct hf_request *req, const char *name);
/* The first of names[0..n) that appears more than once, or NULL. */
const char *hf_request_header_repeated(const struct hf_request *req, const char *const *names,
                                       size_t n);

/* ---- outbound HTTPS (provided by holdfastd; libcurl underneath, gateway/outbound.c) --------- */

/* What one outbound call may do. Certificate and host name verification are always on, there
 * are no redirects, and TLS is 1.2 or later. */
struct hf_outbound_policy {
    unsigned connect_timeout_ms; /* 0: 2000 */
    unsigned total_timeout_ms;   /* 0: 5000 */
    size_t max_response;         /* bytes of body; 0: 64 KiB */
    const char *ca_file;         /* trust anchors; NULL: the system's */
    /* The SSRF guard: every address the host resolves to is checked when the socket is opened
     * (so a DNS answer that changes between check and connect cannot slip past): loopback,
     * private (RFC 1918, fc00::/7), link-local (169.254/16 with the metadata address,
     * fe80::/10), CGNAT, multicast, unspecified and IPv4-mapped forms of those are refused
     * unless inside one of these CIDRs ("127.0.0.0/8", "::1/128"). */
    const char *const *allow_cidrs;
    size_t nallow_cidrs;
};

/* An HTTPS request (https:// only). On HF_STATUS_OK *http_status is the peer's status and
 * *body its body (malloc'd, NUL-terminated, *body_len bytes; free()). Otherwise why says what
 * went wrong: HF_STATUS_DENIED (not https, or an address the guard refuses),
 * HF_STATUS_TIMEOUT (connect or total timeout), HF_STATUS_TOO_LARGE (reply over
 * max_response), HF_STATUS_UNAVAILABLE (DNS, connect, TLS, certificate), HF_STATUS_INTERNAL.
 * headers: "Name: value" strings, n of them. Blocks: never call it on a request's path except
 * where the API makes the call itself (CSE rewrap). */
enum hf_status hf_https_request(const struct hf_outbound_policy *policy, const char *method,
                                const char *url, const char *const *headers, size_t nheaders,
                                const void *req_body, size_t req_len, long *http_status,
                                char **body, size_t *body_len, char *why, size_t whylen);

/* ---- bearer tokens: JWT verification (provided by holdfastd; gateway/jwt.c, gateway/jwks.c) --
 *
 * A verifier holds issuers, each with its key set (JWKS) and accepted audiences. Key sets are
 * loaded when the issuer is added (a file, or an https URL fetched through hf_https_request),
 * refreshed in the background (honouring Cache-Control max-age, at least every refresh_max_s),
 * and an unknown "kid" schedules one refetch (at most every 30 s) while that request fails:
 * nothing is fetched on a request's path. Verified tokens are cached, keyed by the token's
 * SHA-256, until their exp, in a bounded cache: a token seen again costs a hash and a lookup. */

#define HF_JWT_RS256 1u
#define HF_JWT_ES256 2u

struct hf_jwt_issuer {
    const char *issuer;           /* "iss" must equal it */
    const char *jwks;             /* a file path, or an https:// URL */
    const char *const *audiences; /* "aud" (a string or an array) must hold one of them */
    size_t naudiences;
    unsigned algs;               /* HF_JWT_RS256 | HF_JWT_ES256; 0: RS256 */
    unsigned skew_s;             /* exp, nbf, iat tolerance; 0: 60 */
    unsigned refresh_max_s;      /* 0: 3600 */
    const char *const *required; /* claims that must be present ("email", "exp" always) */
    size_t nrequired;
    const struct hf_outbound_policy *fetch; /* for an https JWKS; NULL: defaults */
    /* A key set given inline (JWKS JSON text, copied) instead of jwks: the keys a KACLS signs
     * its own delegated tokens with. NULL: jwks. */
    const char *jwks_json;
};

struct hf_jwt_verifier;
struct hf_jwt; /* a verified token: its claims */

/* NULL if out of memory. */
struct hf_jwt_verifier *hf_jwt_verifier_new(void);
/* Copies iss; loads its key set now. false with a message: a file that cannot be read or parsed
 * (a URL that cannot be fetched is logged and retried in the background: tokens fail until it
 * is). */
bool hf_jwt_verifier_add(struct hf_jwt_verifier *v, const struct hf_jwt_issuer *iss, char *err,
                         size_t errlen);
void hf_jwt_verifier_free(struct hf_jwt_verifier *v);

/* Whose tokens a plugin accepts, as each token-checking plugin configures it in its section:
 *   issuers = ISS[, ISS...]   "iss" values, one verifier issuer each
 *   jwks = PATH|https://URL   the key set that signs them
 *   jwks_ca = PATH            trust anchors for an https jwks (hf_conf_path; default: the system's)
 *   jwks_allow = CIDR[, ...]  what the SSRF guard lets the jwks fetch reach
 * Read and checked once here, so every API names and treats these four alike. */
struct hf_jwt_trust {
    char **issuers;
    size_t nissuers;
    char *jwks;
    char *jwks_ca;
    char **jwks_allow;
    size_t njwks_allow;
};
/* 1: name is one of the four and value is taken; 0: name is not one of them (the plugin's own
 * option, or unknown); -1: a bad value or out of memory, err says which. */
int hf_jwt_trust_set(struct hf_jwt_trust *t, const char *name, const char *value, char *err,
                     size_t errlen);
void hf_jwt_trust_free(struct hf_jwt_trust *t);
/* Adds one verifier issuer per configured issuer, each as tmpl says (audiences, algs, skew,
 * required claims) with issuer, jwks and the fetch policy from t. false with a message naming
 * the key set. */
bool hf_jwt_trust_add(struct hf_jwt_verifier *v, const struct hf_jwt_trust *t,
                      const struct hf_jwt_issuer *tmpl, char *err, size_t errlen);
/* Verifies a compact JWS: header alg in the issuer's algs and matching the key's kty (none,
 * HS*, and an RSA key used for ES256 or the reverse are refused), kid known, signature, iss,
 * aud, exp (required), nbf, iat (not in the future), required claims. HF_STATUS_OK with *out
 * (release it); else HF_STATUS_UNAUTHENTICATED with a printable reason (never the token). Over
 * 8 KiB: HF_STATUS_UNAUTHENTICATED. */
enum hf_status hf_jwt_verify(struct hf_jwt_verifier *v, const char *token, size_t len,
                             struct hf_jwt **out, char *why, size_t whylen);
/* A string claim, NULL when absent or not a string. */
const char *hf_jwt_claim(const struct hf_jwt *t, const char *name);
/* Every claim (read-only, valid while t is held). */
const struct json_object *hf_jwt_claims(const struct hf_jwt *t);
int64_t hf_jwt_exp(const struct hf_jwt *t);
void hf_jwt_release(struct hf_jwt *t);
/* "Bearer <token>" from the Authorization header: the token and its length, or NULL. */
const char *hf_request_bearer(const struct hf_request *req, size_t *len);

/* ---- minting tokens (provided by holdfastd; gateway/jwt-sign.c) ------------------------------
 * For the tokens a KACLS issues itself (CSE delegated and migration tokens): RS256 with an RSA
 * private key object of the module, so the signing key never leaves it. */

/* claims (serialised compactly) as a compact JWS with header {"alg":"RS256","typ":"JWT",
 * "kid":kid}, signed (CKM_SHA256_RSA_PKCS) with key on the session of hf_p11_begin(req,
 * operation), so the signature is the request's audited key operation. HF_STATUS_OK with
 * *token (malloc'd, NUL-terminated); otherwise hf_status_from_ckr's status and why. */
enum hf_status hf_jwt_sign_rs256(struct hf_request *req, const char *operation,
                                 CK_OBJECT_HANDLE key, const char *kid,
                                 const struct json_object *claims, char **token, char *why,
                                 size_t whylen);
/* The public JWK {"kty":"RSA","alg":"RS256","use":"sig","kid","n","e"} of an RSA key object
 * (private or public: its CKA_MODULUS and CKA_PUBLIC_EXPONENT), read on this thread's session.
 * A new object; NULL if it cannot be read. */
struct json_object *hf_jwk_rsa_public(CK_OBJECT_HANDLE key, const char *kid);

/* ---- Holdfast's AES-256-GCM blob (provided by holdfastd; gateway/blob.c) ---------------------
 * specs/google-ekm.md "Crypto", shared by every API that hands out an opaque wrapped blob
 * (gcp-ekm with api "google-ekm", gws-cse with "gws-cse" and "gws-cse-pk"):
 *
 *   blob = 0x01 || BE32(version) || IV(12) || C || T(16)
 *   AAD  = 0x01 || BE32(version) || BE16(len api) || api || BE16(len uuid) || uuid
 *          || BE32(len aad) || aad
 *
 * with uuid the key's UUID (names change, UUIDs never) and aad the caller's. The version sits
 * in both, so a blob moves neither to another version, nor another key, nor another API. */
#define HF_BLOB_FORMAT 0x01
#define HF_BLOB_IV_LEN 12
#define HF_BLOB_TAG_LEN 16
#define HF_BLOB_HEADER_LEN (1 + 4 + HF_BLOB_IV_LEN)
#define HF_BLOB_OVERHEAD (HF_BLOB_HEADER_LEN + HF_BLOB_TAG_LEN) /* 33 */

/* A blob's parts, pointing into the blob. */
struct hf_blob {
    CK_ULONG version;
    const unsigned char *iv;     /* HF_BLOB_IV_LEN bytes */
    const unsigned char *sealed; /* C || T: what CKM_AES_GCM decrypts */
    size_t sealed_len;           /* pt_len + HF_BLOB_TAG_LEN */
};
/* Splits a blob; false for an unknown format byte, a version 0 or a blob shorter than
 * HF_BLOB_OVERHEAD (fail closed). */
bool hf_blob_parse(const unsigned char *blob, size_t len, struct hf_blob *out);
/* Seals pt under key (version `version` of the key whose UUID is key_uuid) with iv: out gets
 * HF_BLOB_OVERHEAD + pt_len bytes, the whole blob. One C_EncryptInit + C_Encrypt on session s
 * (the caller's key operation, from hf_p11_begin). */
CK_RV hf_blob_seal(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                   CK_ULONG version, const char *api, const char *key_uuid,
                   const unsigned char iv[HF_BLOB_IV_LEN], const unsigned char *aad, size_t aad_len,
                   const unsigned char *pt, size_t pt_len, unsigned char *out);
/* Opens a parsed blob into pt (blob->sealed_len - HF_BLOB_TAG_LEN bytes; cleansed on failure).
 * A failed tag is the module's CKR_ENCRYPTED_DATA_INVALID. */
CK_RV hf_blob_open(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                   const char *api, const char *key_uuid, const struct hf_blob *blob,
                   const unsigned char *aad, size_t aad_len, unsigned char *pt);

/* ---- AES-GCM and RSA through PKCS#11 (provided by holdfastd; gateway/p11-crypt.c) ------------
 * One key operation each, on session s from hf_p11_begin (so it is the request's audited one). */

/* CKM_AES_GCM with a 96-bit IV, a 128-bit tag and aad as given (NULL when aad_len is 0): sealed
 * gets pt_len + HF_BLOB_TAG_LEN bytes, C || T. */
CK_RV hf_gcm_seal(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                  const unsigned char iv[12], const unsigned char *aad, size_t aad_len,
                  const unsigned char *pt, size_t pt_len, unsigned char *sealed);
/* Opens C || T (sealed_len >= HF_BLOB_TAG_LEN) into pt (sealed_len - HF_BLOB_TAG_LEN bytes;
 * cleansed on failure). A failed tag is CKR_ENCRYPTED_DATA_INVALID. */
CK_RV hf_gcm_open(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                  const unsigned char iv[12], const unsigned char *aad, size_t aad_len,
                  const unsigned char *sealed, size_t sealed_len, unsigned char *pt);
/* CKM_RSA_PKCS_OAEP with hash (CKM_SHA_1, CKM_SHA256, CKM_SHA384, CKM_SHA512), MGF1 on the same
 * hash and an empty label. *out_len: the room in out on entry (the modulus length is enough),
 * the length written on return. Decrypt takes the private key object; a padding failure is
 * CKR_ENCRYPTED_DATA_INVALID (out cleansed). Encrypt takes the public key object. */
CK_RV hf_rsa_oaep_decrypt(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                          CK_MECHANISM_TYPE hash, const unsigned char *in, size_t in_len,
                          unsigned char *out, size_t *out_len);
CK_RV hf_rsa_oaep_encrypt(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE pub,
                          CK_MECHANISM_TYPE hash, const unsigned char *in, size_t in_len,
                          unsigned char *out, size_t *out_len);
/* The public key of an RSA key object (private or public face: its CKA_MODULUS and
 * CKA_PUBLIC_EXPONENT) as an OpenSSL key (EVP_PKEY_free), read on this thread's session: SAP's
 * PEM, DKE's modulus. NULL if it cannot be read. */
EVP_PKEY *hf_rsa_public_pkey(CK_OBJECT_HANDLE key);

/* ---- randomness (provided by holdfastd; OpenSSL's DRBG underneath) -------------------------- */

/* len random bytes for values that go on the wire (IVs, nonces, ids): drawn from the DRBG in
 * batches, so they wait in memory before use. Never for keys or other secrets: RAND_priv_bytes.
 * False if the DRBG fails. */
bool hf_random_public(void *out, size_t len);

/* ---- hf_request_bearer_verify (gateway/jwt.c; gcp-ekm, oci-ekms, ms-dke) ---------------------
 * The request's "Authorization: Bearer <JWT>" verified by v (hf_request_bearer, then
 * hf_jwt_verify): HF_STATUS_OK with *out (release it). HF_STATUS_UNAUTHENTICATED with a printable
 * reason in why (never the token) when Authorization is repeated, absent, not one bearer token,
 * or the token is refused (the verifier's reason follows "the bearer token is refused: ");
 * HF_STATUS_INTERNAL for a NULL argument. The caller fails the request in its API's words. */
enum hf_status hf_request_bearer_verify(const struct hf_request *req, struct hf_jwt_verifier *v,
                                        struct hf_jwt **out, char *why, size_t whylen);

#endif /* HF_GATEWAY_PLUGIN_H */
