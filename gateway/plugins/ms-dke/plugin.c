/* The ms-dke plugin: Microsoft Purview Double Key Encryption's key service (specs/ms-dke.md).
 *
 * This file holds what the gateway sees: the routes (one catch-all per method under the
 * configured prefix, so the path's target, its 404 and its 405 are the plugin's own and
 * "decrypt" matches in any case), the error table and body, and the state's life. key.c serves
 * the public key, decrypt.c and auth.c the decrypt. */
#include "hf-build.h"

#include "gateway/plugins/ms-dke/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Status codes are the contract (spec, "Errors"): no client reads the body. */
static const struct hf_error_map dke_errors[HF_STATUS_COUNT] = {
    [HF_STATUS_OK] = {200, ""},
    [HF_STATUS_BAD_REQUEST] = {400, "BadRequest"},
    [HF_STATUS_UNAUTHENTICATED] = {401, "Unauthorized"},
    [HF_STATUS_DENIED] = {403, "Forbidden"},
    [HF_STATUS_KEY_NOT_FOUND] = {404, "KeyNotFound"},
    [HF_STATUS_PATH_NOT_FOUND] = {404, "NotFound"},
    [HF_STATUS_METHOD_NOT_ALLOWED] = {405, "MethodNotAllowed"},
    [HF_STATUS_KEY_DISABLED] = {403, "KeyDisabled"},
    [HF_STATUS_KEY_USAGE] = {403, "KeyDisabled"},
    /* OAEP failure is the spec's 400. */
    [HF_STATUS_BAD_CIPHERTEXT] = {400, "BadRequest"},
    [HF_STATUS_TOO_LARGE] = {413, "PayloadTooLarge"},
    /* Only the JSON reader's cap gives it, over the spec's own body limit. */
    [HF_STATUS_UNSUPPORTED] = {400, "BadRequest"},
    [HF_STATUS_THROTTLED] = {429, "TooManyRequests"},
    [HF_STATUS_TIMEOUT] = {503, "ServiceUnavailable"},
    [HF_STATUS_UNAVAILABLE] = {503, "ServiceUnavailable"},
    [HF_STATUS_INTERNAL] = {500, "InternalError"},
    [HF_STATUS_BAD_GATEWAY] = {500, "InternalError"}, /* DKE makes no outbound call */
};

/* {"error":"<short code>","message":"…"}; the gateway keeps message printable and short. */
static struct json_object *dke_error_body(const char *name, const char *message)
{
    struct json_object *o = json_object_new_object();

    if (o == NULL ||
        json_object_object_add(o, "error", json_object_new_string(name ? name : "")) != 0 ||
        json_object_object_add(o, "message", json_object_new_string(message ? message : "")) != 0) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* ---- routes ---------------------------------------------------------------------------------- */

/* Every method of every path under the prefix: unknown paths are 404 whatever the method,
 * before authentication; known ones answer 405 to another method. */
static enum hf_status dke_handle(void *state, struct hf_request *req)
{
    struct hf_dke_state *st = state;
    const char *method = hf_request_method(req);
    struct hf_dke_target t;

    if (st == NULL || !st->started)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "the ms-dke plugin is not started");
    hf_dke_path_parse(st->cfg.prefix, hf_request_path(req), &t);
    switch (t.kind) {
    case HF_DKE_T_KEY:
        hf_request_set_operation(req, "publickey");
        if (strcmp(method, "GET") == 0) return hf_dke_public_key(st, req, &t);
        break;
    case HF_DKE_T_DECRYPT:
        hf_request_set_operation(req, "decrypt");
        if (strcmp(method, "POST") == 0) return hf_dke_decrypt(st, req, &t);
        break;
    default:
        return hf_request_fail(req, HF_STATUS_PATH_NOT_FOUND,
                               "no such DKE path: GET [/<prefix>]/<keyName> or POST "
                               "[/<prefix>]/<keyName>/<keyId>/decrypt");
    }
    return hf_request_fail(req, HF_STATUS_METHOD_NOT_ALLOWED, "%s is not allowed here", method);
}

/* Only paths under the prefix are ours, so another catch-all plugin may share the listener. */
static bool dke_accepts(void *state, const char *path)
{
    const struct hf_dke_state *st = state;

    return st != NULL && st->started && hf_dke_config_is_served(&st->cfg, path);
}

#define ROUTE(m)                                                                                   \
    {                                                                                              \
        m, "/{path*}", "dke", dke_handle, dke_accepts                                              \
    }
static const struct hf_route dke_routes[] = {
    ROUTE("GET"), ROUTE("POST"), ROUTE("PUT"), ROUTE("DELETE"), ROUTE("PATCH"),
};

/* ---- the state ------------------------------------------------------------------------------- */

static void *dke_create(void)
{
    struct hf_dke_state *st = calloc(1, sizeof(*st));

    if (st != NULL) st->cfg_ok = hf_dke_config_init(&st->cfg);
    return st;
}

static bool dke_configure(void *state, const char *instance, const char *name, const char *value,
                          char *err, size_t errlen)
{
    struct hf_dke_state *st = state;

    if (!st->cfg_ok || st->started) {
        snprintf(err, errlen, st->cfg_ok ? "internal: configure after start" : "out of memory");
        return false;
    }
    return hf_dke_config_set(&st->cfg, instance, name, value, err, errlen);
}

static void dke_destroy(void *state)
{
    struct hf_dke_state *st = state;

    if (st == NULL) return;
    hf_jwt_verifier_free(st->jwt);
    hf_rate_free(st->rate);
    hf_dke_config_free(&st->cfg);
    free(st);
}

/* One verifier issuer per configured iss, each with the one key set and the exact audience;
 * RS256 only (spec, "Authentication"). */
static bool verifier_start(struct hf_dke_state *st, char *err, size_t errlen)
{
    const struct hf_dke_config *c = &st->cfg;
    const char *const audiences[] = {c->audience};
    const struct hf_jwt_issuer each = {
        .audiences = audiences,
        .naudiences = 1,
        .algs = HF_JWT_RS256,
        .skew_s = c->skew_s,
    };
    char why[384];

    if ((st->jwt = hf_jwt_verifier_new()) == NULL) goto oom;
    if (!hf_jwt_trust_add(st->jwt, &c->trust, &each, why, sizeof(why))) {
        snprintf(err, errlen, "[ms-dke]: %s", why);
        return false;
    }
    if ((st->rate = hf_rate_new(c->rate_limit, 0)) == NULL) goto oom;
    return true;
oom:
    snprintf(err, errlen, "out of memory");
    return false;
}

static bool dke_start(void *state, char *err, size_t errlen)
{
    struct hf_dke_state *st = state;

    if (!st->cfg_ok) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    if (!hf_dke_config_check(&st->cfg, err, errlen) || !verifier_start(st, err, errlen))
        return false;
    st->started = true;
    return true;
}

/* ---- the entry point ------------------------------------------------------------------------- */

static const struct hf_plugin dke_plugin = {
    .abi_version = HF_PLUGIN_ABI_VERSION,
    .name = "ms-dke",
    .link_type = HF_DKE_LINK_TYPE,
    /* The spec's Decision: decrypt p99 within 100 ms. */
    .latency_limit_ms = 100,
    .max_body = HF_DKE_MAX_BODY,
    .routes = dke_routes,
    .nroutes = sizeof(dke_routes) / sizeof(dke_routes[0]),
    .errors = dke_errors,
    .error_body = dke_error_body,
    .create = dke_create,
    .configure = dke_configure,
    .start = dke_start,
    .destroy = dke_destroy,
};

HF_PLUGIN_EXPORT const struct hf_plugin *hf_plugin_entry(void)
{
    return &dke_plugin;
}
