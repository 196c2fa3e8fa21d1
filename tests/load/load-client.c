/* hf-load's HTTP/1.1 client: closed-loop virtual users over non-blocking sockets and OpenSSL.
 *
 * Why not libcurl's multi interface: on this 2-core machine it drove nginx's static reply at
 * about half of wrk's rate, because its per-transfer bookkeeping costs more CPU than the server's
 * reply (tests/load/README.md has the measurement). This client does per request what wrk does:
 * one write, one read, a share of one epoll_wait. Sockets are registered once, edge-triggered for
 * both directions, so a request needs no epoll_ctl.
 *
 * A VU is a small state machine: wait for its start time, connect, TLS handshake, send, receive,
 * think, and again. Any event or timer just asks the VU to make what progress it can, so a
 * spurious wake-up is harmless. */
#include "hf-build.h"

#include "tests/load/load.h"
#include "gateway/plugin.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Replies of these APIs are a few hundred bytes: a small first buffer keeps 20,000 VUs in
 * 80 MiB; it doubles when a reply needs more. */
#define READ_FIRST_BUFFER 4096
#define READ_MIN_ROOM 1024
#define MAX_RESPONSE (4u << 20) /* bigger replies are a protocol error for these APIs */
#define MAX_HEADER (64u << 10)
#define RECONNECT_BACKOFF_US 100000 /* after a failed connect: do not spin on a dead server */
#define EVENTS_PER_WAIT 512

static atomic_bool interrupted;

void hf_run_interrupt(void)
{
    atomic_store(&interrupted, true);
}

bool hf_run_interrupted(void)
{
    return atomic_load(&interrupted);
}

/* ---- Target ---------------------------------------------------------------------------------- */

static int new_session_cb(SSL *ssl, SSL_SESSION *session);

/* Mutual TLS (SAP): every VU presents the one certificate, as SAP Data Custodian does. A key that
 * does not match the certificate fails here, not as a table of handshake errors. */
static int client_cert_load(SSL_CTX *ctx, const struct hf_load_config *cfg, char *err,
                            size_t errlen)
{
    const char *key = cfg->client_key ? cfg->client_key : cfg->client_cert;
    const char *unreadable = access(cfg->client_cert, R_OK) != 0 ? "cert"
                             : access(key, R_OK) != 0            ? "key"
                                                                 : NULL;

    if (unreadable) {
        snprintf(err, errlen, "--%s '%s': %s", unreadable,
                 *unreadable == 'c' ? cfg->client_cert : key, strerror(errno));
        return -1;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cfg->client_cert) != 1) {
        snprintf(err, errlen, "--cert '%s' holds no PEM certificate OpenSSL can read",
                 cfg->client_cert);
        ERR_clear_error();
        return -1;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "--key '%s' is not the private key (PEM) of --cert '%s'", key,
                 cfg->client_cert);
        ERR_clear_error();
        return -1;
    }
    return 0;
}

int hf_target_open(const struct hf_load_config *cfg, struct hf_target *t, char *err, size_t errlen)
{
    struct addrinfo hints = {0}, *res = NULL;
    char ip[INET6_ADDRSTRLEN] = "?";
    struct in6_addr tmp6;
    struct in_addr tmp4;
    int rc;

    memset(t, 0, sizeof(*t));
    t->url = &cfg->target;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(cfg->target.host, cfg->target.port, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "cannot resolve '%s': %s", cfg->target.host,
                 rc ? gai_strerror(rc) : "no address");
        if (res) freeaddrinfo(res);
        return -1;
    }
    memcpy(&t->addr, res->ai_addr, res->ai_addrlen);
    t->addrlen = (unsigned)res->ai_addrlen;
    if (res->ai_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, ip, sizeof(ip));
    else if (res->ai_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)res->ai_addr)->sin6_addr, ip, sizeof(ip));
    freeaddrinfo(res);
    snprintf(t->addr_text, sizeof(t->addr_text), "%s:%s", cfg->target.host, cfg->target.port);
    if (strcmp(ip, cfg->target.host) != 0) {
        size_t n = strlen(t->addr_text);
        snprintf(t->addr_text + n, sizeof(t->addr_text) - n, " (%s)", ip);
    }
    t->host_is_ip = inet_pton(AF_INET, cfg->target.host, &tmp4) == 1 ||
                    inet_pton(AF_INET6, cfg->target.host, &tmp6) == 1;
    if (!cfg->target.tls) return 0;

    t->ssl_ctx = SSL_CTX_new(TLS_client_method());
    if (!t->ssl_ctx) goto ssl_fail;
    /* The XKS spec asks for TLS 1.2 or newer; so does every API hf-load tests. */
    if (!SSL_CTX_set_min_proto_version(t->ssl_ctx, TLS1_2_VERSION)) goto ssl_fail;
    static const unsigned char alpn[] = "\x08http/1.1";
    if (SSL_CTX_set_alpn_protos(t->ssl_ctx, alpn, sizeof(alpn) - 1) != 0) goto ssl_fail;
    if (cfg->insecure) {
        SSL_CTX_set_verify(t->ssl_ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(t->ssl_ctx, SSL_VERIFY_PEER, NULL);
        if (cfg->cacert) {
            if (access(cfg->cacert, R_OK) != 0) {
                snprintf(err, errlen, "--cacert '%s': %s", cfg->cacert, strerror(errno));
                goto fail;
            }
            if (SSL_CTX_load_verify_locations(t->ssl_ctx, cfg->cacert, NULL) != 1) {
                snprintf(err, errlen, "--cacert '%s' holds no PEM certificate OpenSSL can read",
                         cfg->cacert);
                ERR_clear_error();
                goto fail;
            }
        } else if (SSL_CTX_set_default_verify_paths(t->ssl_ctx) != 1) {
            goto ssl_fail;
        }
    }
    if (cfg->client_cert && client_cert_load(t->ssl_ctx, cfg, err, errlen) != 0) goto fail;
    /* A VU that reconnects resumes its session instead of a full handshake, as a browser or k6
     * would. */
    /* A server that closes without close_notify has still ended the reply (until-close bodies). */
    SSL_CTX_set_options(t->ssl_ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_session_cache_mode(t->ssl_ctx,
                                   SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(t->ssl_ctx, new_session_cb);
    return 0;

ssl_fail:
    snprintf(err, errlen, "TLS setup failed: %s",
             ERR_reason_error_string(ERR_peek_last_error())
                 ? ERR_reason_error_string(ERR_peek_last_error())
                 : "unknown error");
    ERR_clear_error();
fail:
    SSL_CTX_free(t->ssl_ctx);
    t->ssl_ctx = NULL;
    return -1;
}

void hf_target_close(struct hf_target *t)
{
    if (!t) return;
    SSL_CTX_free(t->ssl_ctx);
    t->ssl_ctx = NULL;
}

/* ---- VUs and workers ---------------------------------------------------------------------------
 */

enum vu_state {
    VU_WAIT, /* before its start, or backing off before a reconnect */
    VU_CONNECTING,
    VU_HANDSHAKE,
    VU_SENDING,
    VU_RECEIVING,
    VU_THINKING,
    VU_DONE,
};

struct worker;

struct vu {
    struct worker *w;
    unsigned index;
    enum vu_state state;
    int fd;
    SSL *ssl;
    SSL_SESSION *session;
    bool started;               /* has opened its first connection */
    bool conn_used;             /* the current connection has carried a request */
    uint64_t start_at, stop_at; /* absolute, from the plan */
    uint64_t deadline;          /* WAIT/THINKING: when to go on; in flight: the timeout */
    uint64_t sent_at;
    uint64_t requests; /* measured requests done */
    unsigned resends;  /* of the request in req (--retries) */
    bool resend;       /* req goes out again on the next connection */
    uint64_t rng;
    /* The request being sent. */
    struct hf_buf req;
    size_t req_off;
    bool setup;
    void *api_vu;
    /* The reply being read. */
    char *rbuf;
    size_t rlen, rcap;
    size_t hdr_len; /* 0 until the header block is complete */
    int status;
    long long content_length; /* -1: not given */
    bool chunked, close_after, until_close;
};

struct worker {
    pthread_t tid;
    const struct hf_run *run;
    uint64_t t0;       /* absolute start of the level */
    uint64_t hard_end; /* absolute: the plan's end plus one timeout of grace */
    int ep;
    struct vu *vus;
    size_t nvus, done_vus;
    uint64_t next_timer;
    struct hf_level_stats *stats;
    struct hf_buf body; /* a de-chunked body, for the API's check */
    char first_error[512];
    int rc;
    /* The progress line's view; this worker is the only writer. */
    _Atomic uint64_t live_ops, live_errors, live_latency_us;
    _Atomic unsigned live_active;
    atomic_bool finished;
};

static void live_add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static void set_deadline(struct vu *v, uint64_t at)
{
    v->deadline = at;
    if (at < v->w->next_timer) v->w->next_timer = at;
}

static void note_error(struct worker *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note_error(struct worker *w, const char *fmt, ...)
{
    va_list ap;

    if (w->first_error[0]) return;
    va_start(ap, fmt);
    vsnprintf(w->first_error, sizeof(w->first_error), fmt, ap);
    va_end(ap);
}

static void conn_close(struct vu *v)
{
    if (v->ssl) {
        SSL_free(v->ssl);
        v->ssl = NULL;
    }
    if (v->fd >= 0) {
        close(v->fd); /* also leaves the epoll set */
        v->fd = -1;
    }
    v->rlen = 0;
    v->hdr_len = 0;
    v->conn_used = false;
}

static void vu_finish(struct vu *v)
{
    if (v->state == VU_DONE) return;
    conn_close(v);
    if (v->started) atomic_fetch_sub_explicit(&v->w->live_active, 1, memory_order_relaxed);
    v->state = VU_DONE;
    v->w->done_vus++;
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void vu_connect(struct vu *v, uint64_t now);
static void vu_start_request(struct vu *v, uint64_t now);
static void vu_step(struct vu *v);

/* After an operation: stop, think, or go on. */
static void vu_next(struct vu *v, uint64_t now)
{
    const struct hf_load_config *cfg = v->w->run->cfg;

    if (now >= v->stop_at || hf_run_interrupted() ||
        (v->w->run->max_requests_per_vu && v->requests >= v->w->run->max_requests_per_vu)) {
        vu_finish(v);
        return;
    }
    if (cfg->think_max_us > 0) {
        uint64_t span = cfg->think_max_us - cfg->think_min_us;
        uint64_t think = cfg->think_min_us + (span ? xorshift(&v->rng) % (span + 1) : 0);
        v->state = VU_THINKING;
        set_deadline(v, now + think);
        return;
    }
    if (v->fd < 0)
        vu_connect(v, now);
    else
        vu_start_request(v, now);
}

/* --retries: a request whose connection failed or ended before any byte of its reply (a
 * balancer's node killed under it) may go again, as SDKs resend on a reset or a refused
 * connection. A timeout or a reply never does: the server may have acted on it. */
static bool vu_may_resend(const struct vu *v, enum hf_terr kind, uint64_t now)
{
    bool before_reply = (v->state == VU_SENDING || v->state == VU_RECEIVING) && v->rlen == 0;
    bool connecting = v->state == VU_CONNECTING || v->state == VU_HANDSHAKE;

    return (kind == HF_TERR_CLOSED || kind == HF_TERR_TLS || kind == HF_TERR_CONNECT) &&
           (before_reply || connecting) && v->resends < v->w->run->cfg->retries &&
           now < v->stop_at && !hf_run_interrupted();
}

/* A transport failure: count it, drop the connection, go on (or stop, in the preflight). */
static void vu_fail(struct vu *v, enum hf_terr kind, uint64_t now)
{
    struct worker *w = v->w;

    if (vu_may_resend(v, kind, now)) {
        bool connecting = v->state == VU_CONNECTING || v->state == VU_HANDSHAKE;
        w->stats->retries++;
        v->resends++;
        /* A connection that failed before carrying anything has no request to send again. */
        if (!connecting) v->resend = true;
        conn_close(v);
        v->state = VU_WAIT;
        set_deadline(v, now + (connecting ? RECONNECT_BACKOFF_US : 0));
        return;
    }
    v->resend = false;
    w->stats->terr[kind]++;
    hf_level_stats_add_error(w->stats, &w->run->plan, now - w->t0);
    live_add(&w->live_errors, 1);
    conn_close(v);
    if (w->run->stop_on_error || now >= v->stop_at || hf_run_interrupted()) {
        vu_finish(v);
        return;
    }
    v->state = VU_WAIT;
    set_deadline(v,
                 now + (kind == HF_TERR_CONNECT || kind == HF_TERR_TLS ? RECONNECT_BACKOFF_US : 0));
}

static const char *tls_reason(SSL *ssl)
{
    static _Thread_local char buf[256];
    unsigned long e = ERR_peek_last_error();
    long vr = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;

    if (vr == X509_V_ERR_HOSTNAME_MISMATCH || vr == X509_V_ERR_IP_ADDRESS_MISMATCH) {
        snprintf(buf, sizeof(buf),
                 "certificate verify failed: %s (the certificate does not "
                 "name the URL's host: use a name it was issued for, or "
                 "--insecure)",
                 X509_verify_cert_error_string(vr));
    } else if (vr != X509_V_OK) {
        snprintf(buf, sizeof(buf),
                 "certificate verify failed: %s (give its CA with --cacert "
                 "FILE, or use --insecure)",
                 X509_verify_cert_error_string(vr));
    } else if (e && ERR_GET_REASON(e) == SSL_R_WRONG_VERSION_NUMBER) {
        snprintf(buf, sizeof(buf), "wrong version number (is it plain HTTP? then use http://)");
    } else if (e) {
        snprintf(buf, sizeof(buf), "%s",
                 ERR_reason_error_string(e) ? ERR_reason_error_string(e) : "unknown error");
    } else {
        snprintf(buf, sizeof(buf), "the server closed the connection during the handshake");
    }
    return buf;
}

static void vu_connect(struct vu *v, uint64_t now)
{
    struct worker *w = v->w;
    const struct hf_target *t = w->run->target;
    struct epoll_event ev;
    int one = 1, fd;

    if (!v->started) {
        v->started = true;
        atomic_fetch_add_explicit(&w->live_active, 1, memory_order_relaxed);
    } else {
        w->stats->reconnects++;
    }
    fd = socket(t->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        note_error(w, "cannot open a socket: %s", strerror(errno));
        vu_fail(v, HF_TERR_CONNECT, now);
        return;
    }
    v->fd = fd;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = v;
    if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        note_error(w, "epoll_ctl: %s", strerror(errno));
        vu_fail(v, HF_TERR_CONNECT, now);
        return;
    }
    v->state = VU_CONNECTING;
    set_deadline(v, now + w->run->cfg->timeout_us);
    if (connect(fd, (const struct sockaddr *)&t->addr, t->addrlen) != 0 && errno != EINPROGRESS) {
        note_error(w, "cannot connect to %s: %s", t->addr_text, strerror(errno));
        vu_fail(v, HF_TERR_CONNECT, now);
    }
    /* Completion (or failure) arrives as EPOLLOUT / EPOLLERR. */
}

static int new_session_cb(SSL *ssl, SSL_SESSION *session)
{
    struct vu *v = SSL_get_app_data(ssl);

    if (!v) return 0;
    if (v->session) SSL_SESSION_free(v->session);
    v->session = session;
    return 1; /* we keep the reference */
}

static void vu_connected(struct vu *v, uint64_t now)
{
    struct worker *w = v->w;
    const struct hf_target *t = w->run->target;

    if (!t->ssl_ctx) {
        vu_start_request(v, now);
        return;
    }
    v->ssl = SSL_new(t->ssl_ctx);
    if (!v->ssl || SSL_set_fd(v->ssl, v->fd) != 1) goto fail;
    SSL_set_app_data(v->ssl, v);
    if (t->host_is_ip) {
        if (!w->run->cfg->insecure &&
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(v->ssl), t->url->host) != 1)
            goto fail;
    } else {
        if (SSL_set_tlsext_host_name(v->ssl, t->url->host) != 1) goto fail;
        if (!w->run->cfg->insecure && SSL_set1_host(v->ssl, t->url->host) != 1) goto fail;
    }
    if (v->session) SSL_set_session(v->ssl, v->session);
    SSL_set_connect_state(v->ssl);
    v->state = VU_HANDSHAKE;
    vu_step(v);
    return;
fail:
    note_error(w, "TLS setup for %s failed: %s", t->addr_text, tls_reason(NULL));
    ERR_clear_error();
    vu_fail(v, HF_TERR_TLS, now);
}

static void vu_start_request(struct vu *v, uint64_t now)
{
    struct worker *w = v->w;

    v->req_off = 0;
    if (v->resend) {
        v->resend = false; /* the same bytes, and the latency counted from the first send */
    } else {
        v->req.len = 0;
        v->resends = 0;
        if (w->run->api->build(w->run->api_state, &v->api_vu, &v->req, &v->setup) != 0) {
            note_error(w, "could not build a %s request (out of memory?)", w->run->api->name);
            w->rc = -1;
            vu_finish(v);
            return;
        }
        v->sent_at = now;
    }
    v->rlen = 0;
    v->hdr_len = 0;
    v->conn_used = true;
    v->state = VU_SENDING;
    set_deadline(v, now + w->run->cfg->timeout_us);
    vu_step(v);
}

/* ---- Reading a reply ------------------------------------------------------------------------- */

/* 1 complete (the body copied to w->body), 0 need more, -1 malformed. */
static int chunked_parse(struct worker *w, const char *p, size_t len)
{
    size_t off = 0;

    w->body.len = 0;
    for (;;) {
        const char *eol = memchr(p + off, '\n', len - off);
        unsigned long long size;
        char *end;

        if (!eol) return len - off > 1024 ? -1 : 0;
        size = strtoull(p + off, &end, 16);
        if (end == p + off) return -1;
        off = (size_t)(eol - p) + 1;
        if (size == 0) {
            /* Trailers, then an empty line. */
            for (;;) {
                eol = memchr(p + off, '\n', len - off);
                if (!eol) return 0;
                if (eol == p + off || (eol == p + off + 1 && p[off] == '\r')) return 1;
                off = (size_t)(eol - p) + 1;
            }
        }
        if (size > MAX_RESPONSE || len - off < size + 2) return size > MAX_RESPONSE ? -1 : 0;
        if (hf_buf_append(&w->body, p + off, (size_t)size) != 0) return -1;
        off += (size_t)size;
        if (p[off] == '\r') off++;
        if (off >= len) return 0;
        if (p[off] != '\n') return -1;
        off++;
    }
}

static bool header_is(const char *line, size_t len, const char *name, const char **value)
{
    size_t n = strlen(name);

    if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0) return false;
    *value = line + n + 1;
    while (*value < line + len && (**value == ' ' || **value == '\t'))
        (*value)++;
    return true;
}

/* 0 parsed (or need more: hdr_len stays 0), -1 not HTTP/1.x. */
static int parse_head(struct vu *v)
{
    const char *end, *line, *next, *value;
    bool http10;

    for (;;) {
        end = memmem(v->rbuf, v->rlen, "\r\n\r\n", 4);
        if (!end) return v->rlen > MAX_HEADER ? -1 : 0;
        if (v->rlen < 12 || memcmp(v->rbuf, "HTTP/1.", 7) != 0 || v->rbuf[8] != ' ') return -1;
        http10 = v->rbuf[7] == '0';
        v->status = atoi(v->rbuf + 9);
        if (v->status < 100 || v->status > 999) return -1;
        v->hdr_len = (size_t)(end - v->rbuf) + 4;
        if (v->status >= 200) break;
        /* 1xx: an interim reply; drop it and read on. */
        memmove(v->rbuf, v->rbuf + v->hdr_len, v->rlen - v->hdr_len);
        v->rlen -= v->hdr_len;
        v->hdr_len = 0;
    }
    v->content_length = -1;
    v->chunked = false;
    v->close_after = http10;
    line = memchr(v->rbuf, '\n', v->hdr_len) + 1;
    for (; line < end; line = next) {
        const char *eol = memchr(line, '\r', (size_t)(end + 2 - line));
        size_t len = (size_t)(eol - line);

        next = eol + 2;
        if (header_is(line, len, "content-length", &value)) {
            v->content_length = strtoll(value, NULL, 10);
            if (v->content_length < 0 || v->content_length > (long long)MAX_RESPONSE) return -1;
        } else if (header_is(line, len, "transfer-encoding", &value)) {
            v->chunked = memmem(value, (size_t)(eol - value), "chunked", 7) != NULL;
        } else if (header_is(line, len, "connection", &value)) {
            if (strncasecmp(value, "close", 5) == 0) v->close_after = true;
            if (strncasecmp(value, "keep-alive", 10) == 0) v->close_after = false;
        }
    }
    if (v->status == 204 || v->status == 304) v->content_length = 0;
    v->until_close = !v->chunked && v->content_length < 0;
    return 0;
}

/* A reply body fit for a one-line message: control characters and runs of space become one
 * space. */
static void excerpt_make(char *out, size_t len, const char *body, size_t body_len)
{
    size_t i, n = 0;
    bool space = true;

    for (i = 0; i < body_len && n + 1 < len; i++) {
        unsigned char c = (unsigned char)body[i];
        if (c < 0x20 || c == 0x7f || c == ' ') {
            if (!space) out[n++] = ' ';
            space = true;
        } else {
            out[n++] = (char)c;
            space = false;
        }
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

static void vu_reply_done(struct vu *v, const char *body, size_t body_len, uint64_t now)
{
    struct worker *w = v->w;
    const struct hf_run *run = w->run;
    uint64_t latency = now - v->sent_at;
    bool close_after = v->close_after || v->until_close;

    if (v->status >= 200 && v->status < 300) {
        if (run->api->check &&
            run->api->check(run->api_state, &v->api_vu, v->setup, body, body_len) != 0) {
            char excerpt[201];

            excerpt_make(excerpt, sizeof(excerpt), body, body_len);
            note_error(w, "HTTP %d from %s, but its body is not a valid %s reply: %s", v->status,
                       run->target->addr_text, run->api->name, excerpt);
            w->stats->terr[HF_TERR_BAD_BODY]++;
            hf_level_stats_add_error(w->stats, &run->plan, now - w->t0);
            live_add(&w->live_errors, 1);
            if (run->stop_on_error) goto stop;
        } else if (v->setup) {
            w->stats->setup_ops++;
        } else {
            hf_level_stats_add_op(w->stats, &run->plan, now - w->t0, latency);
            live_add(&w->live_ops, 1);
            live_add(&w->live_latency_us, latency);
        }
    } else {
        char excerpt[301];

        excerpt_make(excerpt, sizeof(excerpt), body, body_len);
        note_error(w, "HTTP %d from %s: %s", v->status, run->target->addr_text,
                   body_len ? excerpt : "(no body)");
        w->stats->status[v->status < HF_STATUS_SLOTS ? v->status : HF_STATUS_SLOTS - 1]++;
        hf_level_stats_add_error(w->stats, &run->plan, now - w->t0);
        live_add(&w->live_errors, 1);
        if (run->stop_on_error) goto stop;
    }
    if (!v->setup) v->requests++;
    v->rlen = 0;
    v->hdr_len = 0;
    if (close_after) conn_close(v); /* the server said so; the next request reconnects */
    vu_next(v, now);
    return;
stop:
    vu_finish(v);
}

/* Judges what has been read: 1 a whole reply was handled, 0 need more, -1 failed (handled). */
static int vu_parse(struct vu *v, bool eof, uint64_t now)
{
    struct worker *w = v->w;
    size_t have;

    if (v->hdr_len == 0) {
        if (parse_head(v) != 0) goto protocol;
        if (v->hdr_len == 0) {
            if (!eof) return 0;
            goto closed;
        }
    }
    have = v->rlen - v->hdr_len;
    if (v->chunked) {
        int rc = chunked_parse(w, v->rbuf + v->hdr_len, have);
        if (rc < 0) goto protocol;
        if (rc == 0) {
            if (eof) goto closed;
            return 0;
        }
        if (hf_buf_append(&w->body, "", 0) != 0) goto protocol;
        vu_reply_done(v, w->body.data, w->body.len, now);
        return 1;
    }
    if (v->until_close) {
        if (!eof) return 0;
    } else if (have < (size_t)v->content_length) {
        if (eof) goto closed;
        return 0;
    } else {
        have = (size_t)v->content_length;
    }
    /* NUL-terminate the body in place for the check (rcap keeps one spare byte). */
    v->rbuf[v->hdr_len + have] = '\0';
    vu_reply_done(v, v->rbuf + v->hdr_len, have, now);
    return 1;

protocol:
    note_error(w, "the reply from %s is not HTTP/1.x: '%.40s'", w->run->target->addr_text,
               v->rlen ? v->rbuf : "");
    vu_fail(v, HF_TERR_PROTOCOL, now);
    return -1;
closed:
    note_error(w, "%s closed the connection before a whole reply", w->run->target->addr_text);
    vu_fail(v, HF_TERR_CLOSED, now);
    return -1;
}

/* Reads until a reply is complete or the socket has no more. */
static void vu_receive(struct vu *v)
{
    struct worker *w = v->w;

    for (;;) {
        ssize_t n;
        bool eof = false;

        if (v->rcap - v->rlen < READ_MIN_ROOM + 1) {
            size_t cap = v->rcap ? v->rcap * 2 : READ_FIRST_BUFFER;
            char *p;

            if (cap > MAX_RESPONSE + MAX_HEADER) {
                note_error(w, "the reply from %s is larger than %u bytes",
                           w->run->target->addr_text, MAX_RESPONSE);
                vu_fail(v, HF_TERR_PROTOCOL, hf_now_us());
                return;
            }
            p = realloc(v->rbuf, cap);
            if (!p) {
                note_error(w, "out of memory");
                vu_fail(v, HF_TERR_PROTOCOL, hf_now_us());
                return;
            }
            v->rbuf = p;
            v->rcap = cap;
        }
        if (v->ssl) {
            int r = SSL_read(v->ssl, v->rbuf + v->rlen, (int)(v->rcap - v->rlen - 1));
            if (r > 0) {
                n = r;
            } else {
                int e = SSL_get_error(v->ssl, r);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
                if (e == SSL_ERROR_ZERO_RETURN ||
                    (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) {
                    n = 0;
                } else {
                    note_error(w, "TLS error from %s: %s", w->run->target->addr_text,
                               tls_reason(v->ssl));
                    ERR_clear_error();
                    vu_fail(v, HF_TERR_TLS, hf_now_us());
                    return;
                }
            }
        } else {
            n = recv(v->fd, v->rbuf + v->rlen, v->rcap - v->rlen - 1, 0);
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK) return;
                if (errno == EINTR) continue;
                n = 0; /* a reset reads as an early end */
            }
        }
        if (n == 0)
            eof = true;
        else
            v->rlen += (size_t)n;
        v->rbuf[v->rlen] = '\0'; /* messages may quote the reply as a string */
        if (vu_parse(v, eof, hf_now_us()) != 0 || eof) return;
    }
}

/* ---- The state machine ----------------------------------------------------------------------- */

static void vu_step(struct vu *v)
{
    struct worker *w = v->w;

    switch (v->state) {
    case VU_HANDSHAKE: {
        int r = SSL_do_handshake(v->ssl), e;

        if (r == 1) {
            vu_start_request(v, hf_now_us());
            return;
        }
        e = SSL_get_error(v->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
        note_error(w, "TLS handshake with %s failed: %s", w->run->target->addr_text,
                   tls_reason(v->ssl));
        ERR_clear_error();
        vu_fail(v, HF_TERR_TLS, hf_now_us());
        return;
    }
    case VU_SENDING:
        while (v->req_off < v->req.len) {
            size_t left = v->req.len - v->req_off;
            ssize_t n;

            if (v->ssl) {
                size_t done = 0;
                int r = SSL_write_ex(v->ssl, v->req.data + v->req_off, left, &done);
                if (r == 1) {
                    n = (ssize_t)done;
                } else {
                    int e = SSL_get_error(v->ssl, r);
                    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
                    note_error(w, "TLS error writing to %s: %s", w->run->target->addr_text,
                               tls_reason(v->ssl));
                    ERR_clear_error();
                    vu_fail(v, e == SSL_ERROR_SYSCALL ? HF_TERR_CLOSED : HF_TERR_TLS, hf_now_us());
                    return;
                }
            } else {
                n = send(v->fd, v->req.data + v->req_off, left, MSG_NOSIGNAL);
                if (n < 0) {
                    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
                    if (errno == EINTR) continue;
                    note_error(w, "%s closed the connection: %s", w->run->target->addr_text,
                               strerror(errno));
                    vu_fail(v, HF_TERR_CLOSED, hf_now_us());
                    return;
                }
            }
            v->req_off += (size_t)n;
        }
        v->state = VU_RECEIVING;
        /* For TLS, the reply may already sit in OpenSSL's buffer; for plain sockets the next
         * edge tells us. */
        if (v->ssl && SSL_has_pending(v->ssl)) vu_receive(v);
        return;
    case VU_RECEIVING:
        vu_receive(v);
        return;
    default:
        return;
    }
}

/* Between requests the server may close an idle keep-alive connection: notice it then, so the
 * next request goes out on a fresh one instead of failing. */
static void vu_idle_check(struct vu *v)
{
    char c;
    ssize_t n;

    if (v->fd < 0 || v->ssl) {
        if (v->ssl) {
            int r = SSL_peek(v->ssl, &c, 1);
            if (r > 0) return;
            int e = SSL_get_error(v->ssl, r);
            ERR_clear_error();
            if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
            conn_close(v);
        }
        return;
    }
    n = recv(v->fd, &c, 1, MSG_PEEK);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        conn_close(v);
}

static void vu_on_event(struct vu *v, uint32_t events)
{
    uint64_t now;

    switch (v->state) {
    case VU_CONNECTING: {
        int err = 0;
        socklen_t len = sizeof(err);

        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
        now = hf_now_us();
        if (getsockopt(v->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        if (err == 0 && (events & (EPOLLERR | EPOLLHUP))) err = ECONNRESET;
        if (err != 0) {
            note_error(v->w, "cannot connect to %s: %s", v->w->run->target->addr_text,
                       strerror(err));
            vu_fail(v, HF_TERR_CONNECT, now);
            return;
        }
        vu_connected(v, now);
        return;
    }
    case VU_RECEIVING:
        /* A plain socket has nothing to read without EPOLLIN; TLS may need a write to read. */
        if (!v->ssl && !(events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) return;
        vu_step(v);
        return;
    case VU_HANDSHAKE:
    case VU_SENDING:
        vu_step(v);
        return;
    case VU_THINKING:
    case VU_WAIT:
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) vu_idle_check(v);
        return;
    default:
        return;
    }
}

static void run_timers(struct worker *w, uint64_t now)
{
    uint64_t next = UINT64_MAX;
    size_t i;

    w->next_timer = UINT64_MAX;
    for (i = 0; i < w->nvus; i++) {
        struct vu *v = &w->vus[i];

        if (v->state == VU_DONE) continue;
        if (v->deadline <= now) {
            switch (v->state) {
            case VU_WAIT:
                if (now >= v->stop_at || hf_run_interrupted())
                    vu_finish(v);
                else
                    vu_connect(v, now);
                break;
            case VU_THINKING:
                if (now >= v->stop_at || hf_run_interrupted())
                    vu_finish(v);
                else if (v->fd < 0)
                    vu_connect(v, now);
                else
                    vu_start_request(v, now);
                break;
            default:
                note_error(w, "%s %s within %.1f s",
                           v->state == VU_CONNECTING  ? "could not connect to"
                           : v->state == VU_HANDSHAKE ? "no TLS handshake with"
                                                      : "no reply from",
                           w->run->target->addr_text, (double)w->run->cfg->timeout_us / 1e6);
                vu_fail(v, HF_TERR_TIMEOUT, now);
                break;
            }
        }
        if (v->state != VU_DONE && v->deadline < next) next = v->deadline;
    }
    if (next < w->next_timer) w->next_timer = next;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct epoll_event events[EVENTS_PER_WAIT];

    while (w->done_vus < w->nvus) {
        uint64_t now = hf_now_us(), wake;
        int n, i, timeout_ms;

        if (now >= w->hard_end || hf_run_interrupted()) break;
        if (now >= w->next_timer) {
            run_timers(w, now);
            if (w->done_vus == w->nvus) break;
        }
        wake = w->next_timer < w->hard_end ? w->next_timer : w->hard_end;
        timeout_ms = wake <= now ? 0 : (int)((wake - now + 999) / 1000);
        if (timeout_ms > 100) timeout_ms = 100; /* notice an interrupt soon */
        n = epoll_wait(w->ep, events, EVENTS_PER_WAIT, timeout_ms);
        if (n < 0) {
            if (errno == EINTR) continue;
            note_error(w, "epoll_wait: %s", strerror(errno));
            w->rc = -1;
            break;
        }
        for (i = 0; i < n; i++)
            vu_on_event(events[i].data.ptr, events[i].events);
    }
    /* Whatever is still in flight now is abandoned: the run is bounded. */
    for (size_t i = 0; i < w->nvus; i++) {
        struct vu *v = &w->vus[i];
        if (v->state == VU_DONE) continue;
        if (v->state == VU_CONNECTING || v->state == VU_HANDSHAKE || v->state == VU_SENDING ||
            v->state == VU_RECEIVING) {
            w->stats->terr[HF_TERR_ABANDONED]++;
            hf_level_stats_add_error(w->stats, &w->run->plan, w->hard_end - w->t0);
        }
        vu_finish(v);
    }
    atomic_store(&w->finished, true);
    return NULL;
}

/* ---- A level -----------------------------------------------------------------------------------
 */

static void progress_print(const struct hf_run *run, struct worker *ws, unsigned nw, uint64_t t0,
                           uint64_t *last_ops, uint64_t *last_lat, uint64_t *last_t, bool final)
{
    uint64_t ops = 0, errs = 0, lat = 0, now = hf_now_us(), t;
    unsigned active = 0, i;
    double dt, rate, mean;
    enum hf_phase phase;

    for (i = 0; i < nw; i++) {
        ops += atomic_load_explicit(&ws[i].live_ops, memory_order_relaxed);
        errs += atomic_load_explicit(&ws[i].live_errors, memory_order_relaxed);
        lat += atomic_load_explicit(&ws[i].live_latency_us, memory_order_relaxed);
        active += atomic_load_explicit(&ws[i].live_active, memory_order_relaxed);
    }
    t = now > t0 ? now - t0 : 0;
    dt = (double)(now - *last_t) / 1e6;
    rate = dt > 0 ? (double)(ops - *last_ops) / dt : 0;
    mean = ops > *last_ops ? (double)(lat - *last_lat) / (double)(ops - *last_ops) / 1e3 : 0;
    phase = hf_phase_of(&run->plan, t);
    fprintf(stderr,
            "\r%6u VUs  %-9s %6.1f/%.0fs  active %6u  ops %10llu  %9.1f ops/s  "
            "mean %8.2f ms  errors %llu  ",
            run->plan.vus, hf_phase_name(phase), (double)t / 1e6,
            (double)hf_phase_end_us(&run->plan) / 1e6, active, (unsigned long long)ops, rate, mean,
            (unsigned long long)errs);
    if (final) fputc('\n', stderr);
    fflush(stderr);
    *last_ops = ops;
    *last_lat = lat;
    *last_t = now;
}

int hf_run_level(const struct hf_run *run, struct hf_level_stats *stats, char *first_error,
                 size_t errlen)
{
    unsigned nw = run->threads ? run->threads : 1, i, started = 0;
    struct worker *ws = NULL;
    struct vu *vus = NULL;
    uint64_t t0, end, last_ops = 0, last_lat = 0, last_t, next_print = 0;
    int rc = -1;

    if (first_error && errlen) first_error[0] = '\0';
    hf_level_stats_reset(stats);
    if (nw > run->plan.vus) nw = run->plan.vus ? run->plan.vus : 1;
    ws = calloc(nw, sizeof(*ws));
    vus = calloc(run->plan.vus ? run->plan.vus : 1, sizeof(*vus));
    if (!ws || !vus) goto done;
    for (i = 0; i < run->plan.vus; i++)
        vus[i].fd = -1; /* so cleanup never closes fd 0 */
    for (i = 0; i < nw; i++)
        ws[i].ep = -1;
    /* Start a little ahead, so every thread is waiting when the level begins. */
    t0 = hf_now_us() + 20000;
    end = t0 + hf_phase_end_us(&run->plan);
    for (i = 0; i < nw; i++) {
        struct worker *w = &ws[i];
        w->run = run;
        w->t0 = t0;
        w->hard_end = end + run->cfg->timeout_us;
        w->next_timer = UINT64_MAX;
        w->stats = calloc(1, sizeof(*w->stats));
        if (!w->stats) goto done;
        w->ep = epoll_create1(EPOLL_CLOEXEC);
        if (w->ep < 0) goto done;
    }
    /* Each worker gets a contiguous run of its own VUs (VU j on worker j % nw), so its timer
     * scans stay in its own cache lines. */
    {
        size_t k = 0;

        for (i = 0; i < nw; i++) {
            struct worker *w = &ws[i];

            w->vus = &vus[k];
            for (unsigned j = i; j < run->plan.vus; j += nw, k++) {
                struct vu *v = &vus[k];

                v->w = w;
                v->index = j;
                v->fd = -1;
                v->state = VU_WAIT;
                v->start_at = t0 + hf_phase_vu_start_us(&run->plan, j);
                v->stop_at = t0 + hf_phase_vu_stop_us(&run->plan, j);
                v->rng = (0x9e3779b97f4a7c15ull * (j + 1)) ^ t0;
                set_deadline(v, v->start_at);
                w->nvus++;
            }
        }
    }
    for (i = 0; i < nw; i++) {
        if (pthread_create(&ws[i].tid, NULL, worker_main, &ws[i]) != 0) {
            if (first_error) snprintf(first_error, errlen, "cannot start a client thread");
            hf_run_interrupt(); /* the threads already started stop at once */
            break;
        }
        started++;
    }
    last_t = t0;
    while (started == nw) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        unsigned finished = 0;
        uint64_t now;

        nanosleep(&ts, NULL);
        for (i = 0; i < nw; i++)
            finished += atomic_load(&ws[i].finished);
        now = hf_now_us();
        if (run->progress && now >= next_print) {
            progress_print(run, ws, nw, t0, &last_ops, &last_lat, &last_t, false);
            next_print = now + 1000000;
        }
        if (finished == nw) break;
    }
    for (i = 0; i < started; i++)
        pthread_join(ws[i].tid, NULL);
    if (run->progress) progress_print(run, ws, nw, t0, &last_ops, &last_lat, &last_t, true);
    rc = started == nw ? 0 : -1;
    for (i = 0; i < nw; i++) {
        hf_level_stats_merge(stats, ws[i].stats);
        if (ws[i].rc != 0) rc = -1;
        if (first_error && !first_error[0] && ws[i].first_error[0])
            snprintf(first_error, errlen, "%s", ws[i].first_error);
    }
done:
    if (ws) {
        for (i = 0; i < nw; i++) {
            free(ws[i].stats);
            if (ws[i].ep >= 0) close(ws[i].ep);
            hf_buf_free(&ws[i].body);
        }
    }
    if (vus) {
        for (i = 0; i < run->plan.vus; i++) {
            conn_close(&vus[i]);
            if (vus[i].session) SSL_SESSION_free(vus[i].session);
            if (run->api->free_vu) run->api->free_vu(vus[i].api_vu);
            hf_buf_free(&vus[i].req);
            free(vus[i].rbuf);
        }
    }
    free(vus);
    free(ws);
    return rc;
}
