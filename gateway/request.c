/* The request object behind plugin.h's hf_request_* accessors and hf_request_fail (the replies
 * are reply.c's). Headers come from libmicrohttpd (case-insensitive lookup) when the request has
 * a connection, from the request's own list otherwise (unit tests). */
#include "hf-build.h"

#include "gateway/audit.h"
#include "gateway/plugins.h"
#include "gateway/request.h"
#include "gateway/tls.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <microhttpd.h>
#include <openssl/crypto.h>

/* A random (version 4) UUID: unique across gateway nodes without coordination. */
static void request_id_make(char out[37])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[16];
    size_t o = 0;

    if (!hf_random_public(b, sizeof(b))) {
        /* The DRBG failing is not a reason to refuse service: fall back to time and address. */
        uint64_t t = hf_now_us();
        uintptr_t a = (uintptr_t)out;
        memcpy(b, &t, 8);
        memcpy(b + 8, &a, sizeof(a) < 8 ? sizeof(a) : 8);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    for (size_t i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = '\0';
}

struct hf_request *hf_request_new(const char *method, const char *target)
{
    struct hf_request *req;
    char *q;

    if (!method || !target || target[0] != '/') return NULL;
    if (!(req = calloc(1, sizeof(*req)))) return NULL;
    pthread_mutex_init(&req->wait_lock, NULL);
    req->received_us = hf_now_us();
    req->content_length = UINT64_MAX;
    req->api = "gateway";
    req->operation = "route";
    request_id_make(req->id);
    if (!(req->method = strdup(method)) || !(req->target = strdup(target))) {
        hf_request_free(req);
        return NULL;
    }
    req->path = req->target;
    if ((q = strchr(req->target, '?'))) {
        *q = '\0';
        req->query = q + 1;
    } else {
        req->query = "";
    }
    return req;
}

static void str_clear_free(char *s)
{
    if (s) OPENSSL_clear_free(s, strlen(s));
}

void hf_request_free(struct hf_request *req)
{
    if (!req) return;
    for (size_t i = 0; i < req->nheaders; i++) {
        free(req->headers[i].name);
        free(req->headers[i].value);
    }
    free(req->headers);
    for (size_t i = 0; i < req->nextra_params; i++) {
        free((char *)req->extra_params[i].name);
        free(req->extra_params[i].value);
    }
    free(req->extra_params);
    hf_router_match_clear(&req->match);
    /* The body may hold a plaintext and the reply one too (decrypt): cleared, never left. */
    if (req->body) OPENSSL_clear_free(req->body, req->body_cap);
    if (req->reply) OPENSSL_clear_free(req->reply, req->reply_len);
    free(req->client_subject);
    free(req->client_sans);
    str_clear_free(req->caller);
    str_clear_free(req->cloud_request_id);
    free(req->key_ref);
    free(req->link_type);
    free(req->link_id);
    hf_gw_audit_fields_clear(req);
    hf_gw_reply_headers_clear(req);
    free(req->method);
    free(req->target);
    pthread_mutex_destroy(&req->wait_lock);
    free(req);
}

bool hf_request_header_add(struct hf_request *req, const char *name, const char *value)
{
    struct hf_gw_header *grown;

    if (!req || !name || !value || req->conn) return false;
    if (!(grown = realloc(req->headers, (req->nheaders + 1) * sizeof(*grown)))) return false;
    req->headers = grown;
    grown[req->nheaders].name = strdup(name);
    grown[req->nheaders].value = strdup(value);
    if (!grown[req->nheaders].name || !grown[req->nheaders].value) {
        free(grown[req->nheaders].name);
        free(grown[req->nheaders].value);
        return false;
    }
    req->nheaders++;
    return true;
}

bool hf_request_param_add(struct hf_request *req, const char *name, const char *value)
{
    struct hf_router_capture *grown;
    char *n, *v;

    if (!req || !name || !value) return false;
    if (!(grown = realloc(req->extra_params, (req->nextra_params + 1) * sizeof(*grown))))
        return false;
    req->extra_params = grown;
    n = strdup(name);
    v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return false;
    }
    grown[req->nextra_params++] = (struct hf_router_capture){n, v};
    return true;
}

bool hf_request_body_append(struct hf_request *req, const void *data, size_t len)
{
    if (!req || (!data && len)) return false;
    if (len > SIZE_MAX - req->body_len - 1) return false;
    if (req->body_len + len + 1 > req->body_cap) {
        size_t cap = req->body_cap ? req->body_cap : 1024;
        unsigned char *grown;
        while (cap < req->body_len + len + 1)
            cap = cap > SIZE_MAX / 2 ? req->body_len + len + 1 : cap * 2;
        /* Not realloc: the old buffer may hold a secret and must be cleared. */
        if (!(grown = malloc(cap))) return false;
        if (req->body) {
            memcpy(grown, req->body, req->body_len);
            OPENSSL_clear_free(req->body, req->body_cap);
        }
        req->body = grown;
        req->body_cap = cap;
    }
    if (len) memcpy(req->body + req->body_len, data, len);
    req->body_len += len;
    req->body[req->body_len] = '\0'; /* handy for parsers that want a string; not counted */
    return true;
}

bool hf_request_peer_set(struct hf_request *req, const char *subject, const char *sans,
                         size_t sanslen)
{
    if (!req) return false;
    free(req->client_subject);
    free(req->client_sans);
    req->client_subject = subject ? strdup(subject) : NULL;
    req->client_sans = NULL;
    if (sans) {
        if (!(req->client_sans = malloc(sanslen + 2))) return false;
        memcpy(req->client_sans, sans, sanslen);
        req->client_sans[sanslen] = '\0';
        req->client_sans[sanslen + 1] = '\0';
    }
    req->peer_names_read = true;
    return true;
}

void hf_request_peer_sha256_set(struct hf_request *req, const unsigned char sha256[32])
{
    if (!req) return;
    req->has_cert_sha256 = sha256 != NULL;
    if (sha256) memcpy(req->cert_sha256, sha256, sizeof(req->cert_sha256));
    req->peer_sha256_read = true;
}

bool hf_gw_request_success_events(const struct hf_request *req)
{
    return req->route ? req->route->plugin->success_events
                      : hf_gw_config_success_events(req->gen ? req->gen->config : NULL, req->api);
}

enum hf_status hf_request_outcome(const struct hf_request *req, unsigned *http_status,
                                  const char **body, const char **message)
{
    if (http_status) *http_status = req->replied && !req->failed ? req->http_status : 0;
    if (body) *body = req->replied && !req->failed ? req->reply : NULL;
    if (message) *message = req->failed ? req->message : NULL;
    if (req->failed) return req->status;
    return req->replied ? HF_STATUS_OK : HF_STATUS_INTERNAL;
}

/* ---- running a handler again (server.c: HSM pool keys) ------------------------------------ */

static _Thread_local struct hf_request *bound;

void hf_gw_request_bind(struct hf_request *req)
{
    bound = req;
}

void hf_gw_request_key_source(const char *source)
{
    struct hf_request *req = bound;

    /* The first pool decides where the request runs: a request on keys of two pools (none of
     * the APIs makes one) waits on the first pool's workers, and the second pool still bounds
     * its own calls. */
    if (!req || req->hsm_pool[0] || !source || !source[0] || strcmp(source, "local") == 0) return;
    /* The module spells a pool key's source "pool:NAME" (holdfast.h says NAME); either reads. */
    if (strncmp(source, "pool:", 5) == 0) source += 5;
    snprintf(req->hsm_pool, sizeof(req->hsm_pool), "%s", source);
}

static void str_forget(char **field)
{
    str_clear_free(*field);
    *field = NULL;
}

void hf_gw_request_rerun_reset(struct hf_request *req)
{
    if (req->reply) OPENSSL_clear_free(req->reply, req->reply_len);
    req->reply = NULL;
    req->reply_len = 0;
    req->replied = req->failed = req->reply_empty = false;
    req->status = HF_STATUS_OK;
    req->message[0] = '\0';
    req->http_status = 0;
    req->error_name = NULL;
    req->content_type = NULL;
    hf_gw_reply_headers_clear(req);
    hf_gw_audit_fields_clear(req);
    str_forget(&req->caller);
    str_forget(&req->cloud_request_id);
    str_forget(&req->key_ref);
    str_forget(&req->link_type);
    str_forget(&req->link_id);
    req->authenticated = req->unaudited = false;
    if (req->route) {
        req->operation = req->route->route->operation;
        req->series = req->route->series;
    }
    req->p11_began = false;
    req->p11_session = CK_INVALID_HANDLE;
    req->seq_before = 0;
    req->hsm_pool[0] = '\0';
    req->may_defer = req->deferred = false;
    req->hsm_refuse = CKR_OK;
    req->rerun = true;
}

bool hf_gw_request_rate_is_spent(const struct hf_request *req, const struct hf_rate *rate)
{
    for (size_t i = 0; req->rerun && i < req->nrates_spent; i++)
        if (req->rates_spent[i] == rate) return true;
    return false;
}

void hf_gw_request_rate_spend(struct hf_request *req, const struct hf_rate *rate)
{
    /* Past four limits (no API checks more than one), a rerun takes its token again. */
    if (!req->rerun && req->nrates_spent < sizeof(req->rates_spent) / sizeof(req->rates_spent[0]))
        req->rates_spent[req->nrates_spent++] = rate;
}

/* ---- plugin.h accessors ------------------------------------------------------------------- */

HF_PLUGIN_EXPORT const char *hf_request_id(const struct hf_request *req)
{
    return req ? req->id : NULL;
}

HF_PLUGIN_EXPORT const char *hf_request_method(const struct hf_request *req)
{
    return req ? req->method : NULL;
}

HF_PLUGIN_EXPORT const char *hf_request_path(const struct hf_request *req)
{
    return req ? req->path : NULL;
}

HF_PLUGIN_EXPORT const char *hf_request_query(const struct hf_request *req)
{
    return req ? req->query : NULL;
}

HF_PLUGIN_EXPORT const char *hf_request_header(const struct hf_request *req, const char *name)
{
    if (!req || !name) return NULL;
    if (req->conn) return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
    for (size_t i = 0; i < req->nheaders; i++)
        if (strcasecmp(req->headers[i].name, name) == 0) return req->headers[i].value;
    return NULL;
}

struct header_count {
    const char *name;
    size_t n;
};

static enum MHD_Result header_count_one(void *cls, enum MHD_ValueKind kind, const char *key,
                                        const char *value)
{
    struct header_count *c = cls;

    (void)kind, (void)value;
    if (key && strcasecmp(key, c->name) == 0) c->n++;
    return MHD_YES;
}

/* libmicrohttpd keeps every copy of a repeated header, in order, but its lookup returns the
 * first only: counting needs the whole list. */
HF_PLUGIN_EXPORT size_t hf_request_header_count(const struct hf_request *req, const char *name)
{
    struct header_count c = {name, 0};

    if (!req || !name) return 0;
    if (req->conn) {
        MHD_get_connection_values(req->conn, MHD_HEADER_KIND, header_count_one, &c);
        return c.n;
    }
    for (size_t i = 0; i < req->nheaders; i++)
        if (strcasecmp(req->headers[i].name, name) == 0) c.n++;
    return c.n;
}

HF_PLUGIN_EXPORT const char *hf_request_header_repeated(const struct hf_request *req,
                                                        const char *const *names, size_t n)
{
    for (size_t i = 0; names && i < n; i++)
        if (hf_request_header_count(req, names[i]) > 1) return names[i];
    return NULL;
}

HF_PLUGIN_EXPORT const char *hf_request_param(const struct hf_request *req, const char *name)
{
    if (!req || !name) return NULL;
    for (size_t i = 0; i < req->match.ncaptures; i++)
        if (strcmp(req->match.captures[i].name, name) == 0) return req->match.captures[i].value;
    for (size_t i = 0; i < req->nextra_params; i++)
        if (strcmp(req->extra_params[i].name, name) == 0) return req->extra_params[i].value;
    return NULL;
}

HF_PLUGIN_EXPORT const unsigned char *hf_request_body(const struct hf_request *req, size_t *len)
{
    static const unsigned char empty[1] = {0};

    if (len) *len = req ? req->body_len : 0;
    if (!req) return NULL;
    return req->body ? req->body : empty;
}

HF_PLUGIN_EXPORT uint64_t hf_request_received_us(const struct hf_request *req)
{
    return req ? req->received_us : 0;
}

/* Caches filled on first use, each on its own: a pin needs no names, and names no hash. */
static void peer_names_read(const struct hf_request *req)
{
    struct hf_request *r = (struct hf_request *)req;

    if (r->peer_names_read) return;
    r->peer_names_read = true;
    if (r->conn) hf_gw_tls_peer_names(r->conn, &r->client_subject, &r->client_sans);
}

static void peer_sha256_read(const struct hf_request *req)
{
    struct hf_request *r = (struct hf_request *)req;

    if (r->peer_sha256_read) return;
    r->peer_sha256_read = true;
    if (r->conn) r->has_cert_sha256 = hf_gw_tls_peer_sha256(r->conn, r->cert_sha256);
}

HF_PLUGIN_EXPORT const char *hf_request_client_subject(const struct hf_request *req)
{
    if (!req) return NULL;
    peer_names_read(req);
    return req->client_subject;
}

HF_PLUGIN_EXPORT const char *hf_request_client_sans(const struct hf_request *req)
{
    if (!req) return NULL;
    peer_names_read(req);
    return req->client_sans;
}

HF_PLUGIN_EXPORT bool hf_request_client_cert_sha256(const struct hf_request *req,
                                                    unsigned char out[32])
{
    if (!req || !out) return false;
    peer_sha256_read(req);
    if (req->has_cert_sha256) memcpy(out, req->cert_sha256, sizeof(req->cert_sha256));
    return req->has_cert_sha256;
}

static void str_replace(char **field, const char *value)
{
    char *copy = value ? strdup(value) : NULL;

    /* Out of memory leaves the field empty rather than stale: the record says less, not wrong. */
    if (*field) OPENSSL_clear_free(*field, strlen(*field));
    *field = copy;
}

HF_PLUGIN_EXPORT void hf_request_set_audit(struct hf_request *req, const char *caller,
                                           const char *cloud_request_id, const char *key_ref)
{
    if (!req) return;
    str_replace(&req->caller, caller);
    str_replace(&req->cloud_request_id, cloud_request_id);
    str_replace(&req->key_ref, key_ref);
}

HF_PLUGIN_EXPORT void hf_request_set_authenticated(struct hf_request *req)
{
    if (req) req->authenticated = true;
}

HF_PLUGIN_EXPORT void hf_request_set_unaudited(struct hf_request *req)
{
    /* Once authenticated, what follows is a caller's act and is recorded. */
    if (req && !req->authenticated) req->unaudited = true;
}

HF_PLUGIN_EXPORT void hf_request_set_operation(struct hf_request *req, const char *operation)
{
    struct hf_gw_series *series;

    if (!req || !operation || !operation[0] || req->builtin) return;
    req->operation = operation;
    /* The metrics series follows, so the counts show the verb, not the catch-all route. */
    if (req->route && (series = hf_gw_route_series(req->route, operation))) req->series = series;
}

HF_PLUGIN_EXPORT void hf_request_set_link(struct hf_request *req, const char *link_type,
                                          const char *link_id)
{
    if (!req) return;
    str_replace(&req->link_type, link_type);
    str_replace(&req->link_id, link_id);
}

HF_PLUGIN_EXPORT enum hf_status hf_request_fail(struct hf_request *req, enum hf_status status,
                                                const char *fmt, ...)
{
    va_list ap;

    if (!req) return status;
    if (status == HF_STATUS_OK || (unsigned)status >= HF_STATUS_COUNT) status = HF_STATUS_INTERNAL;
    if (req->failed) return status; /* the first failure is the one reported */
    req->failed = true;
    req->status = status;
    req->message[0] = '\0';
    if (fmt) {
        va_start(ap, fmt);
        vsnprintf(req->message, sizeof(req->message), fmt, ap);
        va_end(ap);
    }
    /* Every API wants printable ASCII in its error body (XKS says so outright), and some
     * messages quote input: kept so here, once, for every plugin's body and the audit record. */
    for (char *p = req->message; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) *p = '?';
    return status;
}

HF_PLUGIN_EXPORT bool hf_request_past_deadline(const struct hf_request *req, unsigned deadline_ms)
{
    uint64_t received, now;

    if (req == NULL || deadline_ms == 0) return false;
    received = hf_request_received_us(req);
    now = hf_now_us();
    /* 0: a request built without a server (plugin unit tests) has no arrival time. */
    if (received == 0 || now < received) return false;
    return now - received > (uint64_t)deadline_ms * 1000u;
}

HF_PLUGIN_EXPORT enum hf_status
hf_request_deadline_check(struct hf_request *req, unsigned deadline_ms, enum hf_status status)
{
    if (!hf_request_past_deadline(req, deadline_ms)) return HF_STATUS_OK;
    return hf_request_fail(
        req, status,
        "the request waited %llu ms, over the %u ms deadline, before its key "
        "operation could start",
        (unsigned long long)((hf_now_us() - hf_request_received_us(req)) / 1000u), deadline_ms);
}

HF_PLUGIN_EXPORT bool hf_request_deferred(const struct hf_request *req)
{
    return req != NULL && req->deferred;
}
