/* struct hf_request: one HTTP request from the first header to the last byte of the response.
 *
 * The server (server.c) makes one per request and frees it when libmicrohttpd says the request
 * is over; plugins see it only through plugin.h's accessors. The functions below also let a
 * plugin's unit test build a request without a server (hf_request_new & co.), run its handler
 * and read what it answered (hf_request_outcome). */
#ifndef HF_GATEWAY_REQUEST_H
#define HF_GATEWAY_REQUEST_H

#include "gateway/hsm-workers.h"
#include "gateway/plugin.h"
#include "gateway/router.h"

#include <pthread.h>
#include <stdatomic.h>

struct MHD_Connection;
struct hf_gw_generation;
struct hf_gw_route;
struct hf_gw_series;

struct hf_gw_header {
    char *name, *value;
};

/* Where a request is in its life (server.c). */
enum hf_gw_phase {
    HF_GW_PHASE_HEADERS,  /* created from the request line, nothing decided yet */
    HF_GW_PHASE_BODY,     /* routed, reading the body */
    HF_GW_PHASE_DISCARD,  /* answer known (e.g. 413 on a chunked body), body thrown away */
    HF_GW_PHASE_HSM,      /* suspended: its handler runs on an HSM pool's worker */
    HF_GW_PHASE_AUDIT,    /* handled; waiting for its audit record to be durable */
    HF_GW_PHASE_RESPOND,  /* ready to queue the response */
    HF_GW_PHASE_RESPONDED /* response queued */
};

struct hf_request {
    char id[37];  /* UUID text */
    char *target; /* the raw request target, split in place: path then query */
    const char *path;
    const char *query;
    char *method;
    uint64_t received_us;

    struct MHD_Connection *conn;  /* NULL for requests made with hf_request_new */
    struct hf_gw_header *headers; /* only without conn: with one, libmicrohttpd has them */
    size_t nheaders;
    struct hf_router_match match; /* route captures */
    struct hf_gw_series *series;
    struct hf_router_capture *extra_params; /* hf_request_param_add, for tests */
    size_t nextra_params;

    unsigned char *body;
    size_t body_len, body_cap;
    uint64_t content_length; /* UINT64_MAX: none given (chunked) */
    size_t discarded;        /* body bytes thrown away (server.c bounds them by max_body too) */
    bool stop_reading;       /* over max_body mid-body: answer now, read no more (server.c) */

    /* mTLS peer, filled on first use: the names and the hash apart */
    bool peer_names_read, peer_sha256_read;
    char *client_subject;
    char *client_sans; /* NUL-separated, ending with an empty string */
    bool has_cert_sha256;
    unsigned char cert_sha256[32]; /* the leaf's DER, hashed */

    /* routing: the configuration generation this request runs on holds the route alive */
    struct hf_gw_generation *gen;
    const struct hf_gw_route *route;
    const char *api;       /* plugin name, or "gateway" */
    const char *operation; /* route operation, or "healthz", "metrics", "route" */
    enum hf_gw_phase phase;

    /* audit context from the handler */
    char *caller, *cloud_request_id, *key_ref, *link_type, *link_id;
    bool authenticated; /* hf_request_set_authenticated: a failure from now on is audited alone */
    struct {
        char *name, *value;
    } audit_fields[HF_AUDIT_FIELDS_MAX]; /* hf_request_set_audit_field (audit-fields.c) */
    size_t naudit_fields;

    /* outcome */
    bool failed;
    enum hf_status status;
    char message[256];
    bool replied;
    unsigned http_status;
    const char *error_name; /* the API's name for status (its plugin's table), once settled */
    char *reply;            /* serialised body */
    size_t reply_len;
    const char *allow;        /* for a 405: the Allow header */
    const char *content_type; /* NULL: application/json */
    bool reply_empty;         /* hf_reply_empty: no body and no Content-Type, unless it fails */
    struct hf_gw_header reply_headers[HF_REPLY_HEADERS_MAX]; /* hf_reply_header (reply.c) */
    size_t nreply_headers;
    bool unaudited;   /* hf_request_set_unaudited: no record, no share of a summary */
    bool counted;     /* in the in-flight gauge */
    bool builtin;     /* /healthz or /metrics */
    bool close_after; /* answered before its body was read: the connection cannot be reused */

    /* PKCS#11: the session hf_p11_begin handed out and its audit sequence number before */
    bool p11_began;
    CK_SESSION_HANDLE p11_session;
    CK_ULONG_LONG seq_before;

    /* HSM pool keys (server.c, hsm-workers.h). A handler on a listener thread that reaches for
     * a pool key is cut short at hf_p11_begin and run again from the start on the pool's
     * workers; keys.c names the pool of every key the request resolves. */
    char hsm_pool[HF_POOL_NAME_BUF]; /* the first pool key's pool; "" for none */
    bool may_defer;    /* a listener thread with workers on: hf_p11_begin defers a pool key */
    bool deferred;     /* it did: nothing of this pass is answered or recorded */
    bool rerun;        /* the handler runs again (on a worker, or to be answered throttled) */
    CK_RV hsm_refuse;  /* CKR_OK, or what hf_p11_begin answers for a pool key (throttled) */
    struct hf_gw_job job;
    const struct hf_rate *rates_spent[4]; /* tokens taken in the first pass (rate.c) */
    size_t nrates_spent;

    /* waiting for the audit record (server.c): wait_lock orders the writer thread's callback
     * against the handler's suspend, and a worker's end against the connection's */
    pthread_mutex_t wait_lock;
    CK_ULONG_LONG audit_seq;
    bool waiting, suspended, durable, orphaned;
    bool hsm_pending; /* wait_lock: queued or running on a worker */
    uint64_t done_us;
};

/* ---- building requests (server.c, and plugin unit tests) ---------------------------------- */

/* A request for method and target ("/path?query"), received now, with a fresh id. NULL if out
 * of memory or target is not absolute. */
struct hf_request *hf_request_new(const char *method, const char *target);
void hf_request_free(struct hf_request *req);
/* Without a connection only: headers, captures and body the handler will see. */
bool hf_request_header_add(struct hf_request *req, const char *name, const char *value);
bool hf_request_param_add(struct hf_request *req, const char *name, const char *value);
bool hf_request_body_append(struct hf_request *req, const void *data, size_t len);
/* Sets the client certificate identity a test wants the handler to see (sans NUL-separated,
 * ending with an empty string, as hf_request_client_sans returns it). */
bool hf_request_peer_set(struct hf_request *req, const char *subject, const char *sans,
                         size_t sanslen);
/* And the leaf's SHA-256 hf_request_client_cert_sha256 gives (NULL: none presented). */
void hf_request_peer_sha256_set(struct hf_request *req, const unsigned char sha256[32]);
/* Whether the request's API records its successes ([audit] success_events, per API). */
bool hf_gw_request_success_events(const struct hf_request *req);

/* Binds req to this thread while its handler runs (NULL: unbinds), so that keys.c, which has
 * no request in hand, can tell it which key source a lookup found. */
void hf_gw_request_bind(struct hf_request *req);
/* keys.c: the request bound to this thread resolved a key of source ("local" or a pool). */
void hf_gw_request_key_source(const char *source);
/* Before the handler runs again from the start: everything a handler sets is forgotten (reply,
 * failure, audit context and fields, operation), except the rate tokens it took (rate.c). */
void hf_gw_request_rerun_reset(struct hf_request *req);
/* rate.c: whether this request took a token from rate in a pass before this one; and noting
 * that it takes one now. */
bool hf_gw_request_rate_is_spent(const struct hf_request *req, const struct hf_rate *rate);
void hf_gw_request_rate_spend(struct hf_request *req, const struct hf_rate *rate);

/* reply.c: frees the extra response headers (hf_request_free). */
void hf_gw_reply_headers_clear(struct hf_request *req);

/* What the handler answered: HF_STATUS_OK with the reply (http_status, body), or the failure
 * with its message. body and message stay owned by req. */
enum hf_status hf_request_outcome(const struct hf_request *req, unsigned *http_status,
                                  const char **body, const char **message);

#endif /* HF_GATEWAY_REQUEST_H */
