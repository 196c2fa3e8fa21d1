/* The gws-cse plugin: Google Workspace client-side encryption, a KACLS (specs/gws-cse.md).
 *
 * This file holds what the gateway sees: the routes (one catch-all per method that accepts
 * only paths under a configured prefix, so gcp-ekm and gws-cse share a listener), the dispatch
 * from <prefix>/<op> to the op's handler, the error table and body, and the state's life.
 * call.c, tokens.c and checks.c run the spec's checks; one file per operation after that. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the error table and body ---------------------------------------------------------------- */

/* The spec's "Errors". TIMEOUT is rewrap's peer timing out (504): a slow HSM is reported as
 * UNAVAILABLE by hf_cse_ckr. UNSUPPORTED is an op this prefix does not enable (501); the
 * plugin never passes it as a field's over-cap status. */
static const struct hf_error_map cse_errors[HF_STATUS_COUNT] = {
    [HF_STATUS_OK] = {200, ""},
    [HF_STATUS_BAD_REQUEST] = {400, "INVALID_ARGUMENT"},
    [HF_STATUS_UNAUTHENTICATED] = {401, "UNAUTHENTICATED"},
    [HF_STATUS_DENIED] = {403, "PERMISSION_DENIED"},
    [HF_STATUS_KEY_NOT_FOUND] = {404, "NOT_FOUND"},
    [HF_STATUS_PATH_NOT_FOUND] = {404, "NOT_FOUND"},
    [HF_STATUS_METHOD_NOT_ALLOWED] = {405, "METHOD_NOT_ALLOWED"},
    [HF_STATUS_KEY_DISABLED] = {403, "PERMISSION_DENIED"},
    [HF_STATUS_KEY_USAGE] = {403, "PERMISSION_DENIED"},
    [HF_STATUS_BAD_CIPHERTEXT] = {400, "INVALID_ARGUMENT"},
    [HF_STATUS_TOO_LARGE] = {413, "PAYLOAD_TOO_LARGE"},
    [HF_STATUS_UNSUPPORTED] = {501, "UNIMPLEMENTED"},
    [HF_STATUS_THROTTLED] = {429, "RESOURCE_EXHAUSTED"},
    [HF_STATUS_TIMEOUT] = {504, "DEADLINE_EXCEEDED"},
    [HF_STATUS_UNAVAILABLE] = {503, "UNAVAILABLE"},
    [HF_STATUS_INTERNAL] = {500, "INTERNAL"},
    [HF_STATUS_BAD_GATEWAY] = {502, "BAD_GATEWAY"},
};

/* A failed PKCS#11 call: deliberate refusals keep their status; a slow or dead HSM, a lost
 * session or login is the backend being unavailable (503), never the caller's fault. */
const struct hf_ckr_policy hf_cse_ckr = {
    HF_STATUS_BIT(HF_STATUS_BAD_CIPHERTEXT) | HF_STATUS_BIT(HF_STATUS_KEY_DISABLED) |
        HF_STATUS_BIT(HF_STATUS_KEY_USAGE) | HF_STATUS_BIT(HF_STATUS_THROTTLED),
    HF_STATUS_UNAVAILABLE};

/* error_body gets the name only: the names above are distinct per HTTP status, so the name
 * gives the body's code back. */
static unsigned http_status_of(const char *name)
{
    for (size_t i = 1; name != NULL && i < HF_STATUS_COUNT; i++)
        if (cse_errors[i].name != NULL && strcmp(cse_errors[i].name, name) == 0)
            return cse_errors[i].http_status;
    return 500;
}

/* {"code": HTTP status, "message": what went wrong, "details": the error's name}: details is
 * a string, never a trace (spec, "Errors"). The gateway hands over printable ASCII (plugin.h,
 * error_body), so a message that quotes input is safe as it is. */
static struct json_object *cse_error_body(const char *name, const char *message)
{
    struct json_object *o = json_object_new_object();

    if (o == NULL ||
        json_object_object_add(o, "code", json_object_new_int((int)http_status_of(name))) ||
        json_object_object_add(o, "message", json_object_new_string(message ? message : "")) ||
        json_object_object_add(o, "details", json_object_new_string(name ? name : "INTERNAL"))) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* ---- dispatch -------------------------------------------------------------------------------- */

static const hf_cse_op_fn cse_handlers[HF_CSE_OP_COUNT] = {
    [HF_CSE_OP_WRAP] = hf_cse_wrap,
    [HF_CSE_OP_UNWRAP] = hf_cse_unwrap,
    [HF_CSE_OP_PRIVILEGEDWRAP] = hf_cse_privilegedwrap,
    [HF_CSE_OP_PRIVILEGEDUNWRAP] = hf_cse_privilegedunwrap,
    [HF_CSE_OP_DIGEST] = hf_cse_digest,
    [HF_CSE_OP_REWRAP] = hf_cse_rewrap,
    [HF_CSE_OP_DELEGATE] = hf_cse_delegate,
    [HF_CSE_OP_STATUS] = hf_cse_status,
    [HF_CSE_OP_CERTS] = hf_cse_certs,
    [HF_CSE_OP_PRIVATEKEYDECRYPT] = hf_cse_privatekeydecrypt,
    [HF_CSE_OP_PRIVILEGEDPRIVATEKEYDECRYPT] = hf_cse_privilegedprivatekeydecrypt,
    [HF_CSE_OP_PRIVATEKEYSIGN] = hf_cse_privatekeysign,
    [HF_CSE_OP_WRAPPRIVATEKEY] = hf_cse_wrapprivatekey,
};

bool hf_cse_op_is_enabled(const struct hf_cse_prefix *px, enum hf_cse_op op)
{
    const struct hf_cse_op_info *info = hf_cse_op_info(op);

    if (px == NULL || info == NULL) return false;
    if (info->stage2 && !px->gmail) return false;
    return !info->signing_key || px->signing_key != NULL;
}

/* status and certs: public reads without a body, token or audit record. */
static enum hf_status public_run(struct hf_cse_state *st, const struct hf_cse_prefix *px,
                                 enum hf_cse_op op, struct hf_request *req)
{
    struct hf_cse_call call;

    memset(&call, 0, sizeof(call));
    call.state = st;
    call.px = px;
    call.rt = &st->rt[px - st->cfg.prefixes];
    call.op = op;
    call.info = hf_cse_op_info(op);
    hf_request_set_unaudited(req);
    return cse_handlers[op](&call, req);
}

static enum hf_status call_run(struct hf_cse_state *st, const struct hf_cse_prefix *px,
                               enum hf_cse_op op, struct hf_request *req)
{
    struct hf_cse_call call;
    enum hf_status status = hf_cse_call_begin(st, px, op, req, &call);

    if (status == HF_STATUS_OK) status = cse_handlers[op](&call, req);
    hf_cse_call_end(&call);
    return status;
}

/* Every method of every path under a prefix comes here: an unknown op is 404 and another
 * method 405, both before authentication (spec, "Transport"). */
static enum hf_status cse_handle(void *state, struct hf_request *req)
{
    struct hf_cse_state *st = state;
    const char *method = hf_request_method(req), *rest = NULL;
    const struct hf_cse_prefix *px;
    const struct hf_cse_op_info *info;
    enum hf_cse_op op;

    if (st == NULL || !st->started)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "the gws-cse plugin is not started");
    if ((px = hf_cse_config_route(&st->cfg, hf_request_path(req), &rest)) == NULL)
        return hf_request_fail(req, HF_STATUS_PATH_NOT_FOUND, "no KACLS here");
    hf_cse_cors_headers(px, req);
    if (strcmp(method, "OPTIONS") == 0) return hf_cse_preflight(px, req);
    if (!hf_cse_op_find(rest, &op))
        return hf_request_fail(req, HF_STATUS_PATH_NOT_FOUND, "no such KACLS operation");
    info = hf_cse_op_info(op);
    hf_request_set_operation(req, info->name);
    if (strcmp(method, info->method) != 0)
        return hf_request_fail(req, HF_STATUS_METHOD_NOT_ALLOWED, "%s takes %s, not %s", info->name,
                               info->method, method);
    if (!hf_cse_op_is_enabled(px, op))
        return hf_request_fail(req, HF_STATUS_UNSUPPORTED, "%s is not enabled on this KACLS",
                               info->name);
    if (!info->authn && !info->authz) return public_run(st, px, op, req);
    return call_run(st, px, op, req);
}

static bool cse_accepts(void *state, const char *path)
{
    const struct hf_cse_state *st = state;
    const char *rest;

    return st != NULL && hf_cse_config_route(&st->cfg, path, &rest) != NULL;
}

#define ROUTE(m)                                                                                   \
    {                                                                                              \
        m, "/{path*}", "cse", cse_handle, cse_accepts                                              \
    }
static const struct hf_route cse_routes[] = {
    ROUTE("POST"),   ROUTE("GET"),   ROUTE("OPTIONS"), ROUTE("PUT"),
    ROUTE("DELETE"), ROUTE("PATCH"), ROUTE("HEAD"),
};

/* ---- the state ------------------------------------------------------------------------------- */

static void *cse_create(void)
{
    return calloc(1, sizeof(struct hf_cse_state));
}

static bool cse_configure(void *state, const char *instance, const char *name, const char *value,
                          char *err, size_t errlen)
{
    struct hf_cse_state *st = state;

    if (st->started) {
        snprintf(err, errlen, "internal: configure after start");
        return false;
    }
    return hf_cse_config_set(&st->cfg, instance, name, value, err, errlen);
}

static void rt_free(struct hf_cse_prefix_rt *rt)
{
    hf_cse_tokens_stop_own(rt);
    hf_cse_tokens_stop(rt);
    hf_rate_free(rt->rate);
    pthread_mutex_destroy(&rt->health.lock);
}

static void cse_destroy(void *state)
{
    struct hf_cse_state *st = state;

    if (st == NULL) return;
    for (size_t i = 0; st->rt != NULL && i < st->cfg.nprefixes; i++)
        rt_free(&st->rt[i]);
    free(st->rt);
    hf_cse_config_free(&st->cfg);
    free(st);
}

static bool rt_start(const struct hf_cse_prefix *px, struct hf_cse_prefix_rt *rt, char *err,
                     size_t errlen)
{
    if ((rt->rate = hf_rate_new(px->rate_limit, 0)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    return hf_cse_tokens_start(px, rt, err, errlen) && hf_cse_tokens_start_own(px, rt, err, errlen);
}

static bool cse_start(void *state, char *err, size_t errlen)
{
    struct hf_cse_state *st = state;

    if (!hf_cse_config_check(&st->cfg, err, errlen)) return false;
    if ((st->rt = calloc(st->cfg.nprefixes, sizeof(*st->rt))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    /* Every lock first, so destroy may take down each rt whatever start reached. */
    for (size_t i = 0; i < st->cfg.nprefixes; i++)
        pthread_mutex_init(&st->rt[i].health.lock, NULL);
    for (size_t i = 0; i < st->cfg.nprefixes; i++)
        if (!rt_start(&st->cfg.prefixes[i], &st->rt[i], err, errlen)) return false;
    st->started = true;
    return true;
}

/* ---- the entry point ------------------------------------------------------------------------- */

static const struct hf_plugin cse_plugin = {
    .abi_version = HF_PLUGIN_ABI_VERSION,
    .name = "gws-cse",
    .link_type = HF_CSE_LINK_TYPE,
    .latency_limit_ms = 200,
    .routes = cse_routes,
    .nroutes = sizeof(cse_routes) / sizeof(cse_routes[0]),
    .errors = cse_errors,
    .error_body = cse_error_body,
    .create = cse_create,
    .configure = cse_configure,
    .start = cse_start,
    .destroy = cse_destroy,
};

HF_PLUGIN_EXPORT const struct hf_plugin *hf_plugin_entry(void)
{
    return &cse_plugin;
}
