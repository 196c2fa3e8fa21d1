/* The request life cycle on libmicrohttpd (server.h).
 *
 * libmicrohttpd calls on_request several times per request: once with the headers (we route,
 * check the limits, and may refuse at once), then with each piece of body, then with none (we
 * run the handler), and again after a resume. The audit record must be durable before the
 * response leaves; rather than sit out the group commit, the handler's thread suspends the
 * connection and the audit writer's callback resumes it, so a worker thread never waits.
 *
 * libmicrohttpd 0.9.75 accepts a response only with the headers (the first call) or after the
 * whole body. A request refused from its headers while a body is still on the wire (a 413 from
 * Content-Length, a 404 with a body) must therefore be answered in that first call and closes the
 * connection, so the body is never parsed; the socket lingers after (linger.h), its bytes thrown
 * away, so that a client still uploading reads the answer instead of a reset. Such refusals come
 * before authentication: they have no record to wait for (preauth.h), so the worker never waits
 * there. Every other answer waits suspended.
 *
 * Connections (conn_* below): libmicrohttpd limits them per address and closes idle ones, but a
 * client that trickles a byte now and then is never idle. Every connection therefore has a
 * deadline for its request line and headers (from accept, or from its previous answer plus the
 * idle allowance), and an upload must keep up a minimum rate; a sweeper thread shuts down the
 * socket of any that falls behind, and libmicrohttpd closes it as a peer that went away.
 *
 * HSM pool keys (hsm_*): a listener thread multiplexes many connections, so it never waits on
 * an HSM. A handler that reaches for a pool key there is stopped at hf_p11_begin before any
 * module call (p11.h, HF_GW_CKR_DEFERRED); its pass is forgotten, the connection suspended, and
 * the handler runs again from the start on the pool's workers (hsm-workers.h), which settle the
 * outcome and its audit record there (the record of the key operation is read from the worker's
 * session) and resume the connection, directly or through the audit wait. Handlers are free of
 * side effects before their key operation (rate tokens are the request's: rate.c), so a plugin
 * needs no continuation. A full queue is answered at once by the handler run again on the
 * listener with hf_p11_begin answering CKR_FUNCTION_REJECTED for the pool key: the same
 * throttling error, with the same record, a busy pool gives. */
#include "hf-build.h"

#include "gateway/server.h"
#include "gateway/audit.h"
#include "gateway/hsm-workers.h"
#include "gateway/linger.h"
#include "gateway/log.h"
#include "gateway/metrics.h"
#include "gateway/p11.h"
#include "gateway/preauth.h"
#include "gateway/reload.h"
#include "gateway/request.h"
#include "gateway/tls.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <openssl/crypto.h>

static struct {
    struct MHD_Daemon *daemons[HF_GW_MAX_LISTENERS];
    /* on_request's closure: the listener's number in the config, the router it uses */
    size_t listener_of[HF_GW_MAX_LISTENERS];
    size_t n;
    atomic_int waiting;  /* requests registered for an audit callback that has not come */
    atomic_int hsm_jobs; /* requests handed to an HSM pool's workers, not back yet */
    struct hf_gw_series *healthz, *metrics, *route;
    size_t max_body;      /* for the gateway's own endpoints, which have no generation */
    uint64_t header_us;   /* header_timeout */
    uint64_t idle_us;     /* connection_timeout: between requests of a keep-alive connection */
    size_t body_min_rate; /* bytes per second; 0: no floor */
    pthread_t sweeper;
    bool sweeping;
    atomic_bool sweep_stop;
    atomic_bool draining; /* hf_gw_server_drain: /healthz says down, connections do not persist */
} srv;

/* An upload gets this long before its rate is judged: a client's first packet may wait for a
 * congestion window or a 100-continue. */
#define BODY_GRACE_US 1000000u
#define SWEEP_INTERVAL_NS (100 * 1000000L)

/* One per open connection, from libmicrohttpd's connection notifications. */
struct conn_track {
    struct conn_track *prev, *next;      /* conns_lock */
    MHD_socket fd;                       /* still open while the track is listed (closed after) */
    atomic_uint_fast64_t headers_due_us; /* request line and headers due; 0: none expected */
    atomic_uint_fast64_t body_since_us;  /* an upload started then; 0: none */
    atomic_uint_fast64_t body_bytes;
    bool cut;                     /* conns_lock: the sweeper shut it down */
    atomic_bool linger;           /* answered with its body unread: linger.h at the close */
    struct sockaddr_storage peer; /* for the refusal summary of a cut connection */
};

static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static void conn_linger(struct MHD_Connection *conn);
static struct conn_track *conns; /* conns_lock */

/* Answers to requests no plugin claims: one generic JSON shape. */
static const struct hf_error_map gateway_errors[HF_STATUS_COUNT] = {
    [HF_STATUS_OK] = {200, "OK"},
    [HF_STATUS_BAD_REQUEST] = {400, "BadRequest"},
    [HF_STATUS_UNAUTHENTICATED] = {401, "Unauthenticated"},
    [HF_STATUS_DENIED] = {403, "Forbidden"},
    [HF_STATUS_KEY_NOT_FOUND] = {404, "KeyNotFound"},
    [HF_STATUS_PATH_NOT_FOUND] = {404, "NotFound"},
    [HF_STATUS_METHOD_NOT_ALLOWED] = {405, "MethodNotAllowed"},
    [HF_STATUS_KEY_DISABLED] = {403, "KeyDisabled"},
    [HF_STATUS_KEY_USAGE] = {400, "KeyUsage"},
    [HF_STATUS_BAD_CIPHERTEXT] = {400, "BadCiphertext"},
    [HF_STATUS_TOO_LARGE] = {413, "PayloadTooLarge"},
    [HF_STATUS_UNSUPPORTED] = {400, "Unsupported"},
    [HF_STATUS_THROTTLED] = {429, "Throttled"},
    [HF_STATUS_TIMEOUT] = {504, "Timeout"},
    [HF_STATUS_UNAVAILABLE] = {503, "Unavailable"},
    [HF_STATUS_INTERNAL] = {500, "InternalError"},
    [HF_STATUS_BAD_GATEWAY] = {502, "BadGateway"},
};

static struct json_object *gateway_error_body(const char *name, const char *message, const char *id)
{
    struct json_object *o = json_object_new_object();

    if (!o) return NULL;
    json_object_object_add(o, "error", json_object_new_string(name));
    json_object_object_add(o, "message", json_object_new_string(message ? message : ""));
    json_object_object_add(o, "request_id", json_object_new_string(id));
    return o;
}

static const struct hf_plugin *request_plugin(const struct hf_request *req)
{
    return req->route ? req->route->plugin->p : NULL;
}

static void reply_drop(struct hf_request *req)
{
    if (req->reply) OPENSSL_clear_free(req->reply, req->reply_len);
    req->reply = NULL;
    req->reply_len = 0;
}

static bool reply_set(struct hf_request *req, const char *s, size_t len)
{
    reply_drop(req);
    if (!(req->reply = malloc(len + 1))) return false;
    memcpy(req->reply, s, len);
    req->reply[len] = '\0';
    req->reply_len = len;
    return true;
}

/* Turns the outcome into what goes on the wire: a failure becomes its API's status and error
 * body (the plugin's table), no reply becomes an internal error. */
static void outcome_settle(struct hf_request *req)
{
    const struct hf_plugin *p = request_plugin(req);
    const struct hf_error_map *map;
    struct json_object *body = NULL;
    const char *s;

    if (!req->failed && !req->replied)
        hf_request_fail(req, HF_STATUS_INTERNAL, "the handler gave no reply");
    if (!req->failed) return;
    map = p ? &p->errors[req->status] : &gateway_errors[req->status];
    req->http_status = map->http_status;
    req->error_name = map->name;
    if (p) body = p->error_body(map->name, req->message);
    if (!body) body = gateway_error_body(map->name, req->message, req->id);
    s = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN |
                                                        JSON_C_TO_STRING_NOSLASHESCAPE)
             : NULL;
    if (!s || !reply_set(req, s, strlen(s))) reply_drop(req);
    json_object_put(body);
}

/* The record could not be made durable: nothing may look like it succeeded. */
static void audit_failed(struct hf_request *req)
{
    hf_gw_metrics_audit_failure();
    if (req->failed) return;
    reply_drop(req);
    req->replied = false;
    hf_request_fail(req, HF_STATUS_UNAVAILABLE, "the audit record could not be written");
    outcome_settle(req);
}

struct body_owner {
    char *p;
    size_t len;
};

/* The response body may be a plaintext (a decrypt): cleared when libmicrohttpd is done. */
static void body_free(void *cls)
{
    struct body_owner *b = cls;

    OPENSSL_clear_free(b->p, b->len);
    free(b);
}

static void responded(struct hf_request *req)
{
    uint64_t latency = hf_now_us() - req->received_us;

    req->phase = HF_GW_PHASE_RESPONDED;
    hf_gw_metrics_observe(req->series, req->http_status, latency);
    hf_gw_log_request(req, req->http_status, req->failed ? req->error_name : NULL, latency);
}

static enum MHD_Result respond(struct hf_request *req)
{
    struct MHD_Response *resp = NULL;
    struct body_owner *owner = malloc(sizeof(*owner));
    enum MHD_Result rv;

    if (owner && req->reply) {
        *owner = (struct body_owner){req->reply, req->reply_len};
        resp = MHD_create_response_from_buffer_with_free_callback_cls(req->reply_len, req->reply,
                                                                      body_free, owner);
        if (resp) {
            req->reply = NULL; /* libmicrohttpd owns it now */
            req->reply_len = 0;
            owner = NULL;
        }
    } else {
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    free(owner);
    if (!resp) return MHD_NO;
    if (!req->reply_empty || req->failed)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                req->content_type ? req->content_type : "application/json");
    MHD_add_response_header(resp, "X-Request-Id", req->id);
    for (size_t i = 0; i < req->nreply_headers; i++)
        MHD_add_response_header(resp, req->reply_headers[i].name, req->reply_headers[i].value);
    if (req->allow && req->allow[0])
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, req->allow);
    /* While draining, a keep-alive connection would keep its client on this node (a TCP balancer
     * picks the node once per connection): closing it sends the next request through the
     * balancer again. */
    if (req->close_after || atomic_load(&srv.draining))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    rv = MHD_queue_response(req->conn, req->http_status, resp);
    MHD_destroy_response(resp);
    responded(req);
    return rv;
}

/* ---- waiting for the audit record --------------------------------------------------------- */

/* From the audit writer's thread (or at once, from ours, when the record already is durable). */
static void on_durable(void *arg)
{
    struct hf_request *req = arg;
    struct MHD_Connection *conn;
    bool resume, orphan;

    pthread_mutex_lock(&req->wait_lock);
    req->durable = true;
    orphan = req->orphaned;
    resume = req->suspended && !orphan;
    conn = req->conn;
    pthread_mutex_unlock(&req->wait_lock);
    atomic_fetch_sub(&srv.waiting, 1);
    hf_gw_metrics_audit_waiting_add(-1);
    if (orphan) {
        hf_request_free(req); /* the connection ended while we waited (shutdown) */
        return;
    }
    if (resume) MHD_resume_connection(conn);
}

static enum MHD_Result audit_resumed(struct hf_request *req)
{
    const HF_FUNCTION_LIST *v = hf_p11_vendor();
    bool durable;

    pthread_mutex_lock(&req->wait_lock);
    durable = req->durable;
    pthread_mutex_unlock(&req->wait_lock);
    if (!durable) return MHD_YES; /* called again before the resume: keep waiting */
    /* The writer also calls back when it gave up on a failed fdatasync: ask which it was (the
     * answer is immediate either way). */
    if (!v || v->HF_AuditWaitDurable(req->audit_seq) != CKR_OK) audit_failed(req);
    return respond(req);
}

static enum MHD_Result audit_wait(struct hf_request *req, CK_ULONG_LONG seq)
{
    const HF_FUNCTION_LIST *v = hf_p11_vendor();
    CK_RV rv;

    req->audit_seq = seq;
    req->phase = HF_GW_PHASE_AUDIT;
    pthread_mutex_lock(&req->wait_lock);
    req->waiting = true;
    pthread_mutex_unlock(&req->wait_lock);
    atomic_fetch_add(&srv.waiting, 1);
    hf_gw_metrics_audit_waiting_add(1);
    rv = v ? v->HF_AuditNotifyDurable(seq, on_durable, req) : CKR_GENERAL_ERROR;
    if (rv != CKR_OK) {
        /* Not registered: no callback will come. */
        pthread_mutex_lock(&req->wait_lock);
        req->waiting = false;
        pthread_mutex_unlock(&req->wait_lock);
        atomic_fetch_sub(&srv.waiting, 1);
        hf_gw_metrics_audit_waiting_add(-1);
        audit_failed(req);
        return respond(req);
    }
    pthread_mutex_lock(&req->wait_lock);
    if (req->durable) {
        pthread_mutex_unlock(&req->wait_lock);
        return audit_resumed(req);
    }
    MHD_suspend_connection(req->conn);
    req->suspended = true;
    pthread_mutex_unlock(&req->wait_lock);
    return MHD_YES;
}

/* The outcome settled and the audit record made sure of (req->audit_seq: 0 when there is none
 * to wait for), on the thread that ran the handler: the key operation's record is found on
 * that thread's session. */
static void request_settle(struct hf_request *req)
{
    CK_ULONG_LONG seq = 0;

    outcome_settle(req);
    if (!hf_gw_audit_record(req, hf_gw_request_success_events(req), &seq)) audit_failed(req);
    req->audit_seq = seq;
}

/* After the handler (or a refusal): settle the outcome, make sure of the audit record, and
 * answer once it is durable. */
static enum MHD_Result request_finish(struct hf_request *req)
{
    request_settle(req);
    if (req->audit_seq == 0) return respond(req);
    return audit_wait(req, req->audit_seq);
}

static bool body_is_pending(const struct hf_request *req, struct MHD_Connection *conn)
{
    return req->content_length != UINT64_MAX
               ? req->content_length > 0
               : MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                             MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
}

/* A refusal decided from the headers alone. Without a body it is answered on the last call
 * (the connection stays open); with one, now. */
static enum MHD_Result refuse_early(struct hf_request *req, struct MHD_Connection *conn)
{
    const HF_FUNCTION_LIST *v = hf_p11_vendor();
    CK_ULONG_LONG seq = 0;

    if (!body_is_pending(req, conn)) {
        req->phase = HF_GW_PHASE_DISCARD; /* nothing to read: the last call comes next */
        return MHD_YES;
    }
    /* See the top of the file: only this call may answer, so it waits here, and the connection
     * closes after the answer instead of reading the body. */
    req->close_after = true;
    conn_linger(conn);
    outcome_settle(req);
    if (!hf_gw_audit_record(req, hf_gw_request_success_events(req), &seq)) audit_failed(req);
    if (seq && v && v->HF_AuditWaitDurable(seq) != CKR_OK) audit_failed(req);
    req->audit_seq = seq;
    return respond(req);
}

/* Writes all of buf to the client, directly: the TLS session when there is one, else the
 * socket. Non-blocking sockets: a short answer into an idle send buffer takes one call, but a
 * full buffer is waited for, a bounded while. */
static void wire_write(struct MHD_Connection *conn, const char *buf, size_t len)
{
    const union MHD_ConnectionInfo *fdi =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *tls =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    struct pollfd pfd = {.events = POLLOUT};
    ssize_t n;

    if (!fdi) return;
    pfd.fd = fdi->connect_fd;
    for (int tries = 0; len > 0 && tries < 100; tries++) {
        if (tls && tls->tls_session)
            n = gnutls_record_send(tls->tls_session, buf, len);
        else
            n = send(pfd.fd, buf, len, MSG_NOSIGNAL);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (tls && tls->tls_session ? (n != GNUTLS_E_AGAIN && n != GNUTLS_E_INTERRUPTED)
                                    : (n == 0 || (errno != EAGAIN && errno != EINTR)))
            return;
        (void)poll(&pfd, 1, 10);
    }
}

/* The bytes the plugin's extra headers take on the wire ("name: value\r\n" each). */
static size_t extra_headers_len(const struct hf_request *req)
{
    size_t len = 0;

    for (size_t i = 0; i < req->nreply_headers; i++)
        len += strlen(req->reply_headers[i].name) + strlen(req->reply_headers[i].value) + 4;
    return len;
}

/* A chunked body over max_body, which may never end: libmicrohttpd 0.9.75 takes no response
 * while a body is still coming (top of the file), so the answer, once its record is durable,
 * is written to the connection here and the connection dropped, the rest of the body unread. */
static enum MHD_Result refuse_mid_body(struct hf_request *req, struct MHD_Connection *conn)
{
    const HF_FUNCTION_LIST *v = hf_p11_vendor();
    const char *reason;
    CK_ULONG_LONG seq = 0;
    char *wire = NULL;
    size_t cap;
    int n;

    req->close_after = true;
    conn_linger(conn);
    outcome_settle(req);
    if (!hf_gw_audit_record(req, hf_gw_request_success_events(req), &seq)) audit_failed(req);
    if (seq && v && v->HF_AuditWaitDurable(seq) != CKR_OK) audit_failed(req);
    req->audit_seq = seq;
    reason = MHD_get_reason_phrase_for(req->http_status);
    /* One buffer, so one write (one TLS record): the client reads it all before the close. */
    cap = 512 + req->reply_len + extra_headers_len(req);
    if ((wire = malloc(cap))) {
        n = snprintf(wire, cap,
                     "HTTP/1.1 %u %s\r\nConnection: close\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nX-Request-Id: %s\r\n",
                     req->http_status, reason && reason[0] ? reason : "Error", req->reply_len,
                     req->id);
        for (size_t i = 0; n > 0 && (size_t)n < cap && i < req->nreply_headers; i++)
            n += snprintf(wire + n, cap - (size_t)n, "%s: %s\r\n", req->reply_headers[i].name,
                          req->reply_headers[i].value);
        if (n > 0 && (size_t)n < cap)
            n += snprintf(wire + n, cap - (size_t)n, "\r\n%s", req->reply ? req->reply : "");
        if (n > 0 && (size_t)n < cap) wire_write(conn, wire, (size_t)n);
        free(wire); /* an error body: no secret in it */
    }
    responded(req);
    return MHD_NO; /* libmicrohttpd closes the connection */
}

/* Runs the route's handler on this thread, the request bound to it (keys.c names the source of
 * each key it resolves). */
static void handler_run(struct hf_request *req)
{
    const struct hf_gw_route *route = req->route;
    enum hf_status status;

    hf_gw_request_bind(req);
    status = route->route->handle(route->plugin->state, req);
    hf_gw_request_bind(NULL);
    if (status != HF_STATUS_OK && !req->failed)
        hf_request_fail(req, status, "%s failed", route->route->operation);
    hf_gw_p11_request_end(req);
}

/* ---- HSM pool keys: the handler on a worker (top of the file) ---------------------------- */

/* The connection ended while the request was with a worker (shutdown): nobody answers it. */
static void hsm_orphan_free(struct hf_request *req)
{
    hf_gw_generation_unref(req->gen);
    req->gen = NULL;
    req->route = NULL;
    hf_request_free(req);
}

/* On the worker: the connection stays suspended until the record is durable (on_durable
 * resumes it), so the answer costs one suspension, not two. */
static void hsm_audit_wait(struct hf_request *req)
{
    const HF_FUNCTION_LIST *v = hf_p11_vendor();
    bool orphan;

    atomic_fetch_add(&srv.waiting, 1);
    hf_gw_metrics_audit_waiting_add(1);
    if (v && v->HF_AuditNotifyDurable(req->audit_seq, on_durable, req) == CKR_OK) return;
    /* Not registered: no callback will come. */
    audit_failed(req);
    pthread_mutex_lock(&req->wait_lock);
    req->waiting = false;
    req->phase = HF_GW_PHASE_RESPOND;
    orphan = req->orphaned;
    pthread_mutex_unlock(&req->wait_lock);
    atomic_fetch_sub(&srv.waiting, 1);
    hf_gw_metrics_audit_waiting_add(-1);
    if (orphan)
        hf_request_free(req); /* on_completed saw it waiting and let go of the rest */
    else
        MHD_resume_connection(req->conn);
}

/* The worker is done with req: on to the audit wait, or back to the listener to answer. */
static void hsm_done(struct hf_request *req)
{
    bool orphan, wait = req->audit_seq != 0;

    pthread_mutex_lock(&req->wait_lock);
    req->hsm_pending = false;
    orphan = req->orphaned;
    if (!orphan) {
        req->phase = wait ? HF_GW_PHASE_AUDIT : HF_GW_PHASE_RESPOND;
        req->waiting = wait;
    }
    pthread_mutex_unlock(&req->wait_lock);
    if (orphan)
        hsm_orphan_free(req);
    else if (wait)
        hsm_audit_wait(req);
    else
        MHD_resume_connection(req->conn);
    /* Last: hf_gw_server_stop waits for this before the daemons go. */
    atomic_fetch_sub(&srv.hsm_jobs, 1);
}

static void hsm_job(struct hf_gw_job *job, bool late)
{
    struct hf_request *req = (struct hf_request *)((char *)job - offsetof(struct hf_request, job));
    bool orphan;

    pthread_mutex_lock(&req->wait_lock);
    orphan = req->orphaned;
    pthread_mutex_unlock(&req->wait_lock);
    if (!orphan) {
        /* Waited past the limit: answered as the pool answers a caller its queue held as long. */
        if (late) req->hsm_refuse = CKR_FUNCTION_REJECTED;
        handler_run(req);
        request_settle(req);
    }
    hsm_done(req);
}

/* The first pass reached for a pool key: forget it, then hand the request to the pool's
 * workers, or, with no room there, answer the API's throttling error now. */
static enum MHD_Result hsm_defer(struct hf_request *req)
{
    struct hf_gw_workers *w = hf_gw_hsm_workers_of(req->hsm_pool);

    hf_gw_request_rerun_reset(req);
    if (!w || !hf_gw_workers_reserve(w)) {
        /* No set at all (more pools than sets): as before workers existed, on this thread. */
        if (w) req->hsm_refuse = CKR_FUNCTION_REJECTED;
        handler_run(req);
        return request_finish(req);
    }
    req->job.fn = hsm_job;
    atomic_fetch_add(&srv.hsm_jobs, 1);
    /* Suspended before the worker can see it, so its resume always finds it suspended. */
    pthread_mutex_lock(&req->wait_lock);
    req->hsm_pending = true;
    req->phase = HF_GW_PHASE_HSM;
    MHD_suspend_connection(req->conn);
    req->suspended = true;
    pthread_mutex_unlock(&req->wait_lock);
    hf_gw_workers_push(w, &req->job);
    return MHD_YES;
}

/* Resumed by a worker with no record to wait for: its writes are seen through wait_lock. */
static enum MHD_Result hsm_resumed(struct hf_request *req)
{
    pthread_mutex_lock(&req->wait_lock);
    pthread_mutex_unlock(&req->wait_lock);
    return respond(req);
}

static enum MHD_Result request_run(struct hf_request *req)
{
    req->may_defer = hf_gw_hsm_workers_are_on();
    handler_run(req);
    if (req->deferred) return hsm_defer(req);
    return request_finish(req);
}

/* ---- connection deadlines ---------------------------------------------------------------- */

static struct conn_track *conn_track_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;

    return ci ? ci->socket_context : NULL;
}

/* The headers are in: no header deadline until the next request; an upload starts its clock. */
static void conn_headers_in(struct MHD_Connection *conn, bool body_follows)
{
    struct conn_track *t = conn_track_of(conn);

    if (!t) return;
    atomic_store(&t->headers_due_us, 0);
    atomic_store(&t->body_bytes, 0);
    atomic_store(&t->body_since_us, body_follows ? hf_now_us() : 0);
}

static void conn_body_bytes(struct MHD_Connection *conn, size_t len)
{
    struct conn_track *t = conn_track_of(conn);

    if (t) atomic_fetch_add(&t->body_bytes, len);
}

static void conn_linger(struct MHD_Connection *conn)
{
    struct conn_track *t = conn_track_of(conn);

    if (t) atomic_store(&t->linger, true);
}

/* The handler and the audit wait that follow take what they take: not the client's doing. */
static void conn_body_done(struct MHD_Connection *conn)
{
    struct conn_track *t = conn_track_of(conn);

    if (t) atomic_store(&t->body_since_us, 0);
}

/* A keep-alive connection may idle for connection_timeout, then has header_timeout for the
 * next request: one bound on the whole wait, however the bytes trickle. */
static void conn_answered(struct MHD_Connection *conn)
{
    struct conn_track *t = conn_track_of(conn);

    if (!t) return;
    atomic_store(&t->body_since_us, 0);
    atomic_store(&t->headers_due_us, hf_now_us() + srv.idle_us + srv.header_us);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct conn_track *t = *socket_context;
    const union MHD_ConnectionInfo *ci;
    bool linger;

    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        /* Untracked (out of memory): only libmicrohttpd's idle timeout applies to it. */
        if (!ci || !(t = calloc(1, sizeof(*t)))) return;
        t->fd = ci->connect_fd;
        ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (ci && ci->client_addr)
            memcpy(&t->peer, ci->client_addr,
                   ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                          : sizeof(struct sockaddr_in));
        atomic_init(&t->headers_due_us, hf_now_us() + srv.header_us);
        atomic_init(&t->body_since_us, 0);
        atomic_init(&t->body_bytes, 0);
        atomic_init(&t->linger, false);
        pthread_mutex_lock(&conns_lock);
        t->next = conns;
        if (conns) conns->prev = t;
        conns = t;
        pthread_mutex_unlock(&conns_lock);
        *socket_context = t;
        return;
    }
    if (!t) return;
    /* libmicrohttpd closes the socket after this returns: unlisted first, so the sweeper never
     * shuts down a descriptor that may already be another connection's. */
    pthread_mutex_lock(&conns_lock);
    if (t->prev)
        t->prev->next = t->next;
    else
        conns = t->next;
    if (t->next) t->next->prev = t->prev;
    /* A connection the sweeper cut is a client that fell behind: no more time for it. */
    linger = atomic_load(&t->linger) && !t->cut;
    pthread_mutex_unlock(&conns_lock);
    if (linger) hf_gw_linger_adopt(t->fd);
    free(t);
    *socket_context = NULL;
}

enum cut_reason { CUT_NONE, CUT_HEADERS, CUT_BODY };

static enum cut_reason conn_overdue(struct conn_track *t, uint64_t now)
{
    uint64_t due = atomic_load(&t->headers_due_us), since = atomic_load(&t->body_since_us);
    uint64_t want;

    if (due && now > due) return CUT_HEADERS;
    if (!since || !srv.body_min_rate || now < since + BODY_GRACE_US) return CUT_NONE;
    /* Milliseconds times bytes per second (at most 64m): no overflow for centuries. */
    want = (now - since) / 1000u * srv.body_min_rate / 1000u;
    return atomic_load(&t->body_bytes) < want ? CUT_BODY : CUT_NONE;
}

static void *sweeper_main(void *arg)
{
    struct timespec pause = {0, SWEEP_INTERVAL_NS};

    (void)arg;
    while (!atomic_load(&srv.sweep_stop)) {
        unsigned cut[3] = {0, 0, 0};
        uint64_t now;
        nanosleep(&pause, NULL);
        now = hf_now_us();
        pthread_mutex_lock(&conns_lock);
        for (struct conn_track *t = conns; t; t = t->next) {
            enum cut_reason r = t->cut ? CUT_NONE : conn_overdue(t, now);
            if (r == CUT_NONE) continue;
            /* Not close(): the descriptor stays libmicrohttpd's; it sees the end of the
             * stream and closes the connection itself. */
            shutdown(t->fd, SHUT_RDWR);
            t->cut = true;
            cut[r]++;
            /* Unauthenticated: counted with the early refusals, never a record each. */
            hf_gw_preauth_count_cut(t->peer.ss_family ? (const struct sockaddr *)&t->peer : NULL,
                                    r == CUT_HEADERS ? "HeaderTimeout" : "SlowBody");
        }
        pthread_mutex_unlock(&conns_lock);
        /* One line per sweep at most, however many connections an attack holds. */
        if (cut[CUT_HEADERS] || cut[CUT_BODY])
            hf_gw_log_event("warn",
                            "closed %u connections whose headers were not in within %llu s and "
                            "%u whose upload ran under %zu bytes/s",
                            cut[CUT_HEADERS], (unsigned long long)(srv.header_us / 1000000u),
                            cut[CUT_BODY], srv.body_min_rate);
    }
    return NULL;
}

static bool sweeper_start(const struct hf_gw_config *cfg, char *err, size_t errlen)
{
    srv.header_us = (uint64_t)cfg->header_timeout * 1000000u;
    srv.idle_us = (uint64_t)cfg->connection_timeout * 1000000u;
    srv.body_min_rate = cfg->body_min_rate;
    srv.max_body = cfg->max_body;
    atomic_store(&srv.sweep_stop, false);
    if (pthread_create(&srv.sweeper, NULL, sweeper_main, NULL) != 0) {
        snprintf(err, errlen, "cannot start the connection sweeper thread");
        return false;
    }
    srv.sweeping = true;
    return true;
}

static void sweeper_stop(void)
{
    if (!srv.sweeping) return;
    atomic_store(&srv.sweep_stop, true);
    pthread_join(srv.sweeper, NULL);
    srv.sweeping = false;
}

/* ---- the gateway's own endpoints ---------------------------------------------------------- */

static bool path_is_builtin(const char *path)
{
    return strcmp(path, "/healthz") == 0 || strcmp(path, "/metrics") == 0;
}

/* The /healthz body: 200 "ok"; 200 "degraded" while the audit log's free space is under its
 * alarm threshold or its reserve (key operations still work: a balancer keeps the node, an
 * operator is warned); 503 when the module does not answer, its key store does not ("store":
 * "unavailable"), or key operations cannot be recorded (a full disk, a failed log); 503
 * "draining" after SIGTERM, whatever the module says, so the balancer stops sending before the
 * node exits. A store that does not answer is down even though every node of a cluster shares
 * it: a node cut off from it alone must lose its traffic to the others, and when the store
 * itself is down no node could serve past the caches' bound anyway (gateway/README.md). */
static void healthz_answer(struct hf_request *req)
{
    static const char *const spaces[] = {"ok", "alarm", "reserve", "full"};
    static const char draining[] = "{\"status\":\"draining\"}";
    HF_AUDIT_STATUS st;
    enum hf_gw_p11_health health;
    bool audit_known, up, stopped;
    char body[160], audit[32] = "", store[32] = "";
    int n;

    if (atomic_load(&srv.draining)) {
        req->http_status = 503;
        if (!reply_set(req, draining, sizeof(draining) - 1)) req->http_status = 500;
        return;
    }
    audit_known = hf_gw_p11_audit_status(&st) && st.space <= HF_AUDIT_SPACE_FULL;
    health = hf_gw_p11_health();
    up = health == HF_GW_P11_UP;
    stopped = audit_known && (st.failed || st.space == HF_AUDIT_SPACE_FULL);
    req->http_status = up && !stopped ? 200 : 503;
    if (audit_known)
        snprintf(audit, sizeof(audit), ",\"audit\":\"%s\"",
                 st.failed ? "failed" : spaces[st.space]);
    /* A module that does not answer says nothing of its store. */
    if (health != HF_GW_P11_DOWN)
        snprintf(store, sizeof(store), ",\"store\":\"%s\"", up ? "ok" : "unavailable");
    n = snprintf(body, sizeof(body), "{\"status\":\"%s\"%s%s}",
                 !up || stopped                                 ? "unavailable"
                 : audit_known && st.space != HF_AUDIT_SPACE_OK ? "degraded"
                                                                : "ok",
                 audit, store);
    if (n < 0 || (size_t)n >= sizeof(body) || !reply_set(req, body, (size_t)n))
        req->http_status = 500;
}

/* page + more (freed) into page; on failure page stays as it was. */
static char *page_append(char *page, size_t *len, char *more, size_t more_len)
{
    char *joined = more ? realloc(page, *len + more_len + 1) : NULL;

    if (joined) {
        memcpy(joined + *len, more, more_len + 1);
        *len += more_len;
        page = joined;
    }
    free(more);
    return page;
}

struct hsm_sets {
    const char *names[64];
    char name_buf[64][64];
    struct hf_gw_workers_stats st[64];
    size_t n;
};

static void hsm_set_collect(const char *pool, const struct hf_gw_workers_stats *st, void *arg)
{
    struct hsm_sets *s = arg;

    if (s->n >= 64) return;
    snprintf(s->name_buf[s->n], sizeof(s->name_buf[s->n]), "%s", pool);
    s->names[s->n] = s->name_buf[s->n];
    s->st[s->n++] = *st;
}

/* The gateway's series, then the HSM pools' (read from the module here, on a scrape only) and
 * their worker sets'. */
static char *metrics_page(size_t *len)
{
    HF_AUDIT_STATUS st;
    bool audit_known = hf_gw_p11_audit_status(&st);
    HF_POOL_MEMBER_STATUS *members = NULL;
    size_t n = 0, more_len = 0;
    char *page = hf_gw_metrics_render(hf_gw_p11_is_healthy(), audit_known ? &st : NULL, len);
    struct hsm_sets *sets;

    if (page == NULL) return NULL;
    if (hf_p11_pool_status(&members, &n) && n > 0) {
        char *pools = hf_gw_metrics_pool_render(members, n, &more_len);
        page = page_append(page, len, pools, more_len);
    }
    free(members);
    if ((sets = calloc(1, sizeof(*sets))) != NULL) {
        hf_gw_hsm_workers_each(hsm_set_collect, sets);
        if (sets->n > 0) {
            char *more = hf_gw_metrics_hsm_render(sets->names, sets->st, sets->n, &more_len);
            page = page_append(page, len, more, more_len);
        }
        free(sets);
    }
    return page;
}

/* /healthz (for balancers) and /metrics. */
static enum MHD_Result builtin_answer(struct hf_request *req)
{
    bool healthz = strcmp(req->path, "/healthz") == 0;

    if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
        req->allow = "GET, HEAD";
        hf_request_fail(req, HF_STATUS_METHOD_NOT_ALLOWED, "only GET here");
        outcome_settle(req);
        return respond(req);
    }
    req->replied = true;
    if (healthz) {
        healthz_answer(req);
    } else {
        size_t len = 0;
        char *page = metrics_page(&len);
        req->content_type = "text/plain; version=0.0.4; charset=utf-8";
        reply_drop(req);
        req->reply = page;
        req->reply_len = len;
        req->http_status = page ? 200 : 500;
    }
    return respond(req);
}

/* ---- libmicrohttpd callbacks -------------------------------------------------------------- */

/* Called with the request line, before any header: the raw target (libmicrohttpd has not
 * percent-decoded it yet), which SigV4 and the router need as received. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    return hf_request_new("", uri && uri[0] == '/' ? uri : "/");
}

/* The API's own limit when its plugin declares one (plugin.h's max_body), else [gateway]
 * max_body; the gateway's endpoints and unrouted requests take the latter. */
static size_t body_limit(const struct hf_request *req)
{
    if (req->route && req->route->plugin->p->max_body) return req->route->plugin->p->max_body;
    return req->gen ? req->gen->config->max_body : srv.max_body;
}

static enum MHD_Result first_call(struct hf_request *req, struct MHD_Connection *conn,
                                  const char *method, size_t listener)
{
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    struct hf_router_match *m = &req->match;
    struct hf_gw_generation *gen;
    struct hf_router *router;
    enum hf_router_result found;
    char *mcopy = strdup(method);

    if (!mcopy) return MHD_NO;
    free(req->method);
    req->method = mcopy;
    req->conn = conn;
    req->counted = true;
    hf_gw_metrics_inflight_add(1);
    if (cl) {
        char *end;
        errno = 0;
        req->content_length = strtoull(cl, &end, 10);
        /* libmicrohttpd already refused a malformed one; this is belt and braces. */
        if (errno || *end || cl[0] == '-') req->content_length = UINT64_MAX - 1;
    }
    conn_headers_in(conn, body_is_pending(req, conn));
    /* Answers are given on the last call, not here: libmicrohttpd 0.9.75 closes a connection
     * whose response was queued with the headers, and balancers and scrapers keep theirs. */
    if (path_is_builtin(req->path)) {
        req->builtin = true;
        req->api = "gateway";
        req->operation = strcmp(req->path, "/healthz") == 0 ? "healthz" : "metrics";
        req->series = strcmp(req->path, "/healthz") == 0 ? srv.healthz : srv.metrics;
        req->phase = HF_GW_PHASE_DISCARD; /* a body, if any, is not ours to keep */
        return MHD_YES;
    }
    req->series = srv.route;
    if (!(gen = req->gen = hf_gw_current_acquire())) {
        hf_request_fail(req, HF_STATUS_UNAVAILABLE, "shutting down");
        req->close_after = true;
        outcome_settle(req);
        return respond(req);
    }
    /* The listener's router holds only the plugins it serves: another plugin's route is the
     * generic 404 here, refused before any of that plugin's code runs. */
    router = hf_gw_generation_router(gen, listener);
    found = router ? hf_router_match(router, req->method, req->path, strlen(req->path), m)
                   : HF_ROUTER_NOT_FOUND;
    if (found == HF_ROUTER_FOUND || found == HF_ROUTER_METHOD_NOT_ALLOWED) {
        req->route = m->data;
        req->api = req->route->plugin->name;
        req->operation = req->route->route->operation;
        req->series = req->route->series;
    }
    switch (found) {
    case HF_ROUTER_FOUND:
        break;
    case HF_ROUTER_METHOD_NOT_ALLOWED:
        req->allow = m->allow;
        hf_request_fail(req, HF_STATUS_METHOD_NOT_ALLOWED, "%s is not allowed on %s (allowed: %s)",
                        req->method, req->path, m->allow);
        return refuse_early(req, conn);
    case HF_ROUTER_NOT_FOUND:
        hf_request_fail(req, HF_STATUS_PATH_NOT_FOUND, "no route for %s %s", req->method,
                        req->path);
        return refuse_early(req, conn);
    default:
        hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
        return refuse_early(req, conn);
    }
    if (req->content_length != UINT64_MAX && req->content_length > body_limit(req)) {
        hf_request_fail(req, HF_STATUS_TOO_LARGE,
                        "a body of %llu bytes is over the limit of %zu bytes",
                        (unsigned long long)req->content_length, body_limit(req));
        return refuse_early(req, conn);
    }
    req->phase = HF_GW_PHASE_BODY;
    return MHD_YES;
}

/* Keeps a piece of the body, or throws it away (an answer already known). Either way the body
 * is bounded by max_body: over it, the request is answered at once (refuse_mid_body) and no
 * more is read, since a chunked body may not end. */
static void body_take(struct hf_request *req, struct MHD_Connection *conn, const char *data,
                      size_t len)
{
    size_t max = body_limit(req);
    size_t seen = req->body_len + req->discarded;

    conn_body_bytes(conn, len);
    if (len > max || seen > max - len) {
        hf_request_fail(req, HF_STATUS_TOO_LARGE, "the body is over the limit of %zu bytes", max);
        req->stop_reading = true;
        return;
    }
    if (req->phase == HF_GW_PHASE_DISCARD || !req->gen) {
        req->discarded += len;
        return;
    }
    if (!hf_request_body_append(req, data, len)) {
        hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory for the body");
        req->phase = HF_GW_PHASE_DISCARD;
        req->discarded += len;
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct hf_request *req = *con_cls;

    if (!req) {
        /* No request from on_uri (out of memory, or a target that is not a path). */
        if (!(req = hf_request_new(method, url && url[0] == '/' ? url : "/"))) return MHD_NO;
        *con_cls = req;
    }
    switch (req->phase) {
    case HF_GW_PHASE_HEADERS:
        return first_call(req, conn, method, *(const size_t *)cls);
    case HF_GW_PHASE_BODY:
    case HF_GW_PHASE_DISCARD:
        if (*upload_data_size) {
            body_take(req, conn, upload_data, *upload_data_size);
            *upload_data_size = 0;
            return req->stop_reading ? refuse_mid_body(req, conn) : MHD_YES;
        }
        conn_body_done(conn);
        if (req->builtin) return builtin_answer(req);
        if (req->failed) return request_finish(req); /* refused, or the body was over the limit */
        return request_run(req);
    case HF_GW_PHASE_AUDIT:
        *upload_data_size = 0;
        return audit_resumed(req);
    case HF_GW_PHASE_RESPOND:
        return hsm_resumed(req);
    case HF_GW_PHASE_HSM:
        *upload_data_size = 0;
        return MHD_YES; /* called before the worker's resume: keep waiting */
    case HF_GW_PHASE_RESPONDED:
    default:
        *upload_data_size = 0;
        return MHD_YES;
    }
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct hf_request *req = *con_cls;
    bool orphan = false, with_worker;

    conn_answered(conn);
    if (!req) return;
    *con_cls = NULL;
    if (req->counted) hf_gw_metrics_inflight_add(-1);
    pthread_mutex_lock(&req->wait_lock);
    if (req->waiting && !req->durable) orphan = req->orphaned = true;
    if ((with_worker = req->hsm_pending)) orphan = req->orphaned = true;
    pthread_mutex_unlock(&req->wait_lock);
    /* A worker may be running its handler, on the generation's route: it frees all (hsm_done). */
    if (with_worker) return;
    /* The route lives in the generation: nothing of it is touched after this. */
    hf_gw_generation_unref(req->gen);
    req->gen = NULL;
    req->route = NULL;
    if (!orphan) hf_request_free(req);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* libmicrohttpd logs every connection it refuses (over max_connections, or over the limit per
 * address): under an attack, a line per attempt. At most this many lines a second get through;
 * the others are counted, and the count goes out with the next line that does. */
#define MHD_LOG_PER_SECOND 10

static struct {
    pthread_mutex_t lock;
    uint64_t second;
    unsigned lines, dropped;
} mhd_log = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};

/* Whether a line may go out now; *dropped gets the lines held back before it. */
static bool mhd_log_admits(unsigned *dropped)
{
    uint64_t now = hf_now_us() / 1000000u;
    bool ok;

    pthread_mutex_lock(&mhd_log.lock);
    if (now != mhd_log.second) {
        mhd_log.second = now;
        mhd_log.lines = 0;
    }
    ok = mhd_log.lines < MHD_LOG_PER_SECOND;
    if (ok) {
        mhd_log.lines++;
        *dropped = mhd_log.dropped;
        mhd_log.dropped = 0;
    } else {
        mhd_log.dropped++;
    }
    pthread_mutex_unlock(&mhd_log.lock);
    return ok;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    unsigned dropped = 0;
    size_t len;

    if (!mhd_log_admits(&dropped)) return;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    len = strlen(msg);
    while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
        msg[--len] = '\0';
    if (dropped)
        hf_gw_log_event("warn", "http: %s (and %u earlier lines not logged)", msg, dropped);
    else
        hf_gw_log_event("warn", "http: %s", msg);
}

/* ---- start and stop ----------------------------------------------------------------------- */

/* threads = N as configured; by default one per core: a listener thread never waits on an
 * HSM (calls on pool keys run on the pools' workers, hsm-workers.h), so it needs no spares. */
static unsigned threads_of(const struct hf_gw_config *cfg)
{
    long n = cfg->threads ? (long)cfg->threads : sysconf(_SC_NPROCESSORS_ONLN);

    return n < 1 ? 1 : n > 256 ? 256 : (unsigned)n;
}

static bool listener_start(const struct hf_gw_config *cfg, size_t index, char *err, size_t errlen)
{
    const struct hf_gw_listen *l = &cfg->listens[index];
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    struct MHD_OptionItem opts[20];
    unsigned threads = threads_of(cfg), flags, n = 0;
    struct MHD_Daemon *d;
    int rc;

    if ((rc = getaddrinfo(l->host[0] ? l->host : NULL, l->port, &hints, &ai)) != 0) {
        snprintf(err, errlen, "%s:%u: listen %s:%s: %s", cfg->path, l->line, l->host, l->port,
                 gai_strerror(rc));
        return false;
    }
    /* TLS listeners poll rather than epoll: with libmicrohttpd 0.9.75 (Debian 12), epoll's edge
     * triggering loses TLS connections resumed after their audit wait under load (320 keep-alive
     * clients: ~130 replies never sent in a 12 s run; none with poll, which is level-triggered
     * and was no slower in the same runs). Plain listeners keep epoll. */
    flags = (l->tls ? MHD_USE_POLL_INTERNAL_THREAD : MHD_USE_EPOLL_INTERNAL_THREAD) |
            MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    if (l->tls) flags |= MHD_USE_TLS;
    /* The logger first: libmicrohttpd logs options it parses before it on its own. */
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, ai->ai_addr};
    if (threads > 1)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)threads, NULL};
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)cfg->max_connections, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
                                        (intptr_t)cfg->connection_timeout, NULL};
    if (cfg->max_per_address)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                            (intptr_t)cfg->max_per_address, NULL};
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, NULL};
    if (l->tls) {
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
                                            (void *)hf_gw_tls_priority(l->port)};
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0,
                                            (void *)hf_gw_tls_cert_retrieve};
        if (hf_gw_tls_client_ca_pem(l->port))
            opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0,
                                                (void *)hf_gw_tls_client_ca_pem(l->port)};
    }
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    srv.listener_of[srv.n] = index;
    d = MHD_start_daemon(flags, (uint16_t)atoi(l->port), NULL, NULL, on_request,
                         &srv.listener_of[srv.n], MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d) {
        snprintf(err, errlen, "%s:%u: cannot listen on %s:%s%s (in use, or no permission?)",
                 cfg->path, l->line, l->host[0] ? l->host : "*", l->port, l->tls ? " (tls)" : "");
        return false;
    }
    srv.daemons[srv.n++] = d;
    if (l->insecure)
        hf_gw_log_warn("listening on %s:%s over plain HTTP, marked \"insecure\": decrypt "
                       "answers carry plaintext keys to anyone on the path",
                       l->host[0] ? l->host : "*", l->port);
    hf_gw_log_info("listener %s on %s%s%s:%s%s%s with %u threads", l->name,
                   strchr(l->host, ':') ? "[" : "", l->host[0] ? l->host : "*",
                   strchr(l->host, ':') ? "]" : "", l->port, l->tls ? " (tls" : "",
                   !l->tls ? ""
                   : hf_gw_config_listen_tls(cfg, l)->client_cert == HF_GW_CLIENT_CERT_REQUIRED
                       ? ", client certificate required)"
                   : hf_gw_config_listen_tls(cfg, l)->client_cert == HF_GW_CLIENT_CERT_OPTIONAL
                       ? ", client certificate optional)"
                       : ")",
                   threads);
    return true;
}

bool hf_gw_server_start(const struct hf_gw_config *cfg, char *err, size_t errlen)
{
    if (cfg->nlistens > HF_GW_MAX_LISTENERS) {
        snprintf(err, errlen, "%s: at most %d listeners", cfg->path, HF_GW_MAX_LISTENERS);
        return false;
    }
    srv.healthz = hf_gw_metrics_series("gateway", "healthz", 0);
    srv.metrics = hf_gw_metrics_series("gateway", "metrics", 0);
    srv.route = hf_gw_metrics_series("gateway", "route", 0);
    if (!hf_gw_hsm_workers_start(err, errlen)) return false;
    if (!sweeper_start(cfg, err, errlen)) {
        hf_gw_hsm_workers_stop();
        return false;
    }
    if (!hf_gw_linger_start(err, errlen)) {
        sweeper_stop();
        hf_gw_hsm_workers_stop();
        return false;
    }
    for (size_t i = 0; i < cfg->nlistens; i++)
        if (!listener_start(cfg, i, err, errlen)) {
            hf_gw_server_stop(0);
            return false;
        }
    return true;
}

void hf_gw_server_drain(void)
{
    atomic_store(&srv.draining, true);
}

void hf_gw_server_stop(unsigned timeout_ms)
{
    uint64_t deadline = hf_now_us() + (uint64_t)timeout_ms * 1000u;

    for (size_t i = 0; i < srv.n; i++) {
        MHD_socket s = MHD_quiesce_daemon(srv.daemons[i]);
        if (s != MHD_INVALID_SOCKET) close(s);
    }
    /* Suspended connections end with the daemon: let their workers and audit callbacks come
     * first. */
    while ((atomic_load(&srv.waiting) > 0 || atomic_load(&srv.hsm_jobs) > 0) &&
           hf_now_us() < deadline) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&srv.waiting) > 0)
        hf_gw_log_warn("stopping with %d requests still waiting for their audit record",
                       atomic_load(&srv.waiting));
    if (atomic_load(&srv.hsm_jobs) > 0)
        hf_gw_log_warn("stopping with %d requests still with HSM workers",
                       atomic_load(&srv.hsm_jobs));
    sweeper_stop();
    for (size_t i = 0; i < srv.n; i++)
        MHD_stop_daemon(srv.daemons[i]);
    srv.n = 0;
    /* After the daemons: jobs still queued belong to closed connections and only free them. */
    hf_gw_hsm_workers_stop();
    hf_gw_linger_stop(); /* after the daemons: their last closes may still adopt */
}
