/* The gcp-ekm plugin: Google Cloud External Key Manager, EKM API v0 (specs/google-ekm.md).
 *
 * This file holds what the gateway sees: the routes (one catch-all per method, since the verb
 * sits after a ':' inside the last segment, which route patterns cannot express), the error
 * table and google.rpc.Status body, and the state's life. call.c has the steps every operation
 * shares; wrap.c and unwrap.c the operations. */
#include "hf-build.h"

#include "gateway/plugins/gcp-ekm/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the error table and body ---------------------------------------------------------------- */

/* 403 only for deliberate denials: Cloud EKM disables the key version on a 403 (spec,
 * "Authorization"), so every transient fault is 503 and a bad blob 400. */
static const struct hf_error_map ekm_errors[HF_STATUS_COUNT] = {
    [HF_STATUS_OK] = {200, ""},
    [HF_STATUS_BAD_REQUEST] = {400, "INVALID_ARGUMENT"},
    [HF_STATUS_UNAUTHENTICATED] = {401, "UNAUTHENTICATED"},
    [HF_STATUS_DENIED] = {403, "PERMISSION_DENIED"},
    [HF_STATUS_KEY_NOT_FOUND] = {404, "NOT_FOUND"},
    [HF_STATUS_PATH_NOT_FOUND] = {404, "NOT_FOUND"},
    [HF_STATUS_METHOD_NOT_ALLOWED] = {405, "UNIMPLEMENTED"},
    [HF_STATUS_KEY_DISABLED] = {403, "PERMISSION_DENIED"},
    [HF_STATUS_KEY_USAGE] = {403, "PERMISSION_DENIED"},
    [HF_STATUS_BAD_CIPHERTEXT] = {400, "INVALID_ARGUMENT"},
    /* The spec: a body over a cap is 400, refused from Content-Length before it is read. */
    [HF_STATUS_TOO_LARGE] = {400, "INVALID_ARGUMENT"},
    /* The partner verbs Holdfast does not serve yet. */
    [HF_STATUS_UNSUPPORTED] = {501, "UNIMPLEMENTED"},
    [HF_STATUS_THROTTLED] = {429, "RESOURCE_EXHAUSTED"},
    [HF_STATUS_TIMEOUT] = {503, "UNAVAILABLE"},
    [HF_STATUS_UNAVAILABLE] = {503, "UNAVAILABLE"},
    [HF_STATUS_INTERNAL] = {500, "INTERNAL"},
    [HF_STATUS_BAD_GATEWAY] = {500, "INTERNAL"}, /* EKM makes no outbound call */
};

/* A failed PKCS#11 call: deliberate refusals keep their status; a vanished handle, a failed
 * login, a dead HSM is nothing the customer decided (503). */
const struct hf_ckr_policy hf_ekm_ckr = {
    HF_STATUS_BIT(HF_STATUS_BAD_CIPHERTEXT) | HF_STATUS_BIT(HF_STATUS_KEY_DISABLED) |
        HF_STATUS_BIT(HF_STATUS_KEY_USAGE) | HF_STATUS_BIT(HF_STATUS_THROTTLED) |
        HF_STATUS_BIT(HF_STATUS_TIMEOUT),
    HF_STATUS_UNAVAILABLE};

/* google.rpc.Code numbers of the names above. */
static int grpc_code(const char *name)
{
    static const struct {
        const char *name;
        int code;
    } codes[] = {
        {"INVALID_ARGUMENT", 3},   {"NOT_FOUND", 5},        {"PERMISSION_DENIED", 7},
        {"RESOURCE_EXHAUSTED", 8}, {"UNIMPLEMENTED", 12},   {"INTERNAL", 13},
        {"UNAVAILABLE", 14},       {"UNAUTHENTICATED", 16},
    };

    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (name != NULL && strcmp(name, codes[i].name) == 0) return codes[i].code;
    return 2; /* UNKNOWN */
}

/* The request field a message names: request.c and call.c start a field's refusal with its
 * path and ": ". Only the request's own fields count, so no other message grows a detail. */
static size_t message_field(const char *msg)
{
    static const char *const roots[] = {"keyPath",           "plaintext",
                                        "wrappedBlob",       "additionalAuthenticatedData",
                                        "additionalContext", "keyUriPrefix"};
    size_t n = strspn(msg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz.");

    if (n == 0 || msg[n] != ':' || msg[n + 1] != ' ') return 0;
    for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
        size_t r = strlen(roots[i]);
        if (n >= r && strncmp(msg, roots[i], r) == 0 && (msg[r] == '.' || r == n)) return n;
    }
    return 0;
}

/* {"@type": BadRequest, "fieldViolations": [{field, description}]} for a message naming a field. */
static struct json_object *bad_request_detail(const char *msg, size_t field_len)
{
    struct json_object *d = json_object_new_object(), *vs = json_object_new_array(),
                       *v = json_object_new_object();

    if (d == NULL || vs == NULL || v == NULL ||
        json_object_object_add(v, "field", json_object_new_string_len(msg, (int)field_len)) ||
        json_object_object_add(v, "description", json_object_new_string(msg + field_len + 2)) ||
        json_object_array_add(vs, v) != 0)
        goto fail;
    v = NULL;
    if (json_object_object_add(d, "@type",
                               json_object_new_string("type.googleapis.com/google.rpc.BadRequest")))
        goto fail;
    if (json_object_object_add(d, "fieldViolations", vs) == 0) return d;
fail:
    json_object_put(v);
    json_object_put(vs);
    json_object_put(d);
    return NULL;
}

/* google.rpc.Status: {"code", "message", "details"}; the message under 512 printable ASCII
 * characters (spec, "Errors"), as the gateway hands it over (plugin.h, error_body). */
static struct json_object *ekm_error_body(const char *name, const char *message)
{
    const char *msg = message ? message : "";
    size_t field_len;
    struct json_object *o = json_object_new_object(), *details = json_object_new_array(), *d;

    if (o == NULL || details == NULL) goto fail;
    if ((field_len = message_field(msg)) != 0 &&
        ((d = bad_request_detail(msg, field_len)) == NULL ||
         json_object_array_add(details, d) != 0))
        goto fail;
    if (json_object_object_add(o, "code", json_object_new_int(grpc_code(name))) != 0 ||
        json_object_object_add(o, "message", json_object_new_string(msg)) != 0)
        goto fail;
    if (json_object_object_add(o, "details", details) == 0) return o;
fail:
    json_object_put(details);
    json_object_put(o);
    return NULL;
}

/* ---- routes ---------------------------------------------------------------------------------- */

/* What a path asks for, before anything is read or authenticated. */
enum target_kind { T_NONE, T_WRAP, T_UNWRAP, T_PARTNER, T_INFO };

struct target {
    enum target_kind kind;
    const struct hf_ekm_endpoint *ep;
    const char *key_path;
    size_t key_path_len;
};

/* Verbs partners serve that Holdfast does not yet (spec, "Transport"): 501 until their spec is
 * in hand, rather than a 404 that says the endpoint is wrong. */
static bool verb_is_partner(const char *verb)
{
    static const char *const verbs[] = {"createKey", "destroyKey", "checkCryptoSpacePermissions",
                                        "getPublicKey", "asymmetricSign"};

    if (strncmp(verb, "confidential", 12) == 0 && verb[12] != '\0') return true;
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        if (strcmp(verb, verbs[i]) == 0) return true;
    return false;
}

/* Where under an endpoint a path without a verb goes: ".../info" or ".../session/...". */
static enum target_kind target_plain(const char *rest, size_t len)
{
    if (len >= 5 && strcmp(rest + len - 5, "/info") == 0) return T_INFO;
    if ((len >= 8 && strncmp(rest + len - 8, "/session", 8) == 0) || strstr(rest, "/session/"))
        return T_PARTNER;
    return T_NONE;
}

static void target_find(const struct hf_ekm_state *st, const char *path, struct target *t)
{
    size_t base_len;
    const char *verb = NULL;
    bool has_verb = hf_ekm_path_verb(path, &base_len, &verb);

    memset(t, 0, sizeof(*t));
    if (!has_verb) base_len = strlen(path);
    t->ep = hf_ekm_config_route(&st->cfg, path, base_len, &t->key_path, &t->key_path_len);
    if (t->ep == NULL) return;
    if (!has_verb) {
        t->kind = target_plain(t->key_path - 1, t->key_path_len + 1);
        return;
    }
    if (!hf_ekm_key_path_is_valid(t->key_path, t->key_path_len)) return;
    if (strcmp(verb, "wrap") == 0)
        t->kind = T_WRAP;
    else if (strcmp(verb, "unwrap") == 0)
        t->kind = T_UNWRAP;
    else if (verb_is_partner(verb))
        t->kind = T_PARTNER;
}

static enum hf_status call_run(struct hf_ekm_state *st, struct hf_request *req,
                               const struct target *t)
{
    enum hf_ekm_op op = t->kind == T_WRAP ? HF_EKM_OP_WRAP : HF_EKM_OP_UNWRAP;
    struct hf_ekm_call call;
    enum hf_status status;

    /* Metrics, log and audit by verb: one catch-all route serves both. */
    hf_request_set_operation(req, op == HF_EKM_OP_WRAP ? "wrap" : "unwrap");
    status = hf_ekm_call_begin(st, req, t->ep, t->key_path, t->key_path_len, op, &call);
    if (status == HF_STATUS_OK)
        status = op == HF_EKM_OP_WRAP ? hf_ekm_wrap(&call, req) : hf_ekm_unwrap(&call, req);
    hf_ekm_call_end(&call);
    return status;
}

/* Every method of every path comes here: unknown paths are 404 whatever the method, before
 * authentication; known ones answer 405 to another method. */
static enum hf_status ekm_handle(void *state, struct hf_request *req)
{
    struct hf_ekm_state *st = state;
    const char *method = hf_request_method(req);
    bool post = strcmp(method, "POST") == 0;
    struct target t;

    if (st == NULL || !st->started)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "the gcp-ekm plugin is not started");
    target_find(st, hf_request_path(req), &t);
    switch (t.kind) {
    case T_NONE:
        return hf_request_fail(req, HF_STATUS_PATH_NOT_FOUND,
                               "no such EKM path: POST [/<prefix>]/<keyPath>:wrap or :unwrap");
    case T_INFO:
        if (strcmp(method, "GET") != 0) break;
        return hf_request_fail(req, HF_STATUS_UNSUPPORTED, "GET .../info is not served yet");
    case T_PARTNER:
        if (!post && t.key_path[t.key_path_len] == ':') break;
        return hf_request_fail(req, HF_STATUS_UNSUPPORTED, "this EKM call is not served yet");
    case T_WRAP:
    case T_UNWRAP:
        if (post) return call_run(st, req, &t);
        break;
    }
    return hf_request_fail(req, HF_STATUS_METHOD_NOT_ALLOWED, "%s is not allowed here", method);
}

/* Only paths under an endpoint's prefix are ours, so a gws-cse (or any catch-all plugin) on the
 * same listener gets the rest. */
static bool ekm_accepts(void *state, const char *path)
{
    const struct hf_ekm_state *st = state;

    return st != NULL && st->started && hf_ekm_config_is_served(&st->cfg, path);
}

#define ROUTE(m)                                                                                   \
    {                                                                                              \
        m, "/{path*}", "ekm", ekm_handle, ekm_accepts                                              \
    }
static const struct hf_route ekm_routes[] = {
    ROUTE("POST"), ROUTE("GET"), ROUTE("PUT"), ROUTE("DELETE"), ROUTE("PATCH"),
};

/* ---- the state ------------------------------------------------------------------------------- */

static void *ekm_create(void)
{
    return calloc(1, sizeof(struct hf_ekm_state));
}

static bool ekm_configure(void *state, const char *instance, const char *name, const char *value,
                          char *err, size_t errlen)
{
    struct hf_ekm_state *st = state;

    if (st->started) {
        snprintf(err, errlen, "internal: configure after start");
        return false;
    }
    return hf_ekm_config_set(&st->cfg, instance, name, value, err, errlen);
}

static void ekm_destroy(void *state)
{
    struct hf_ekm_state *st = state;

    if (st == NULL) return;
    for (size_t i = 0; st->rt != NULL && i < st->cfg.nendpoints; i++) {
        hf_jwt_verifier_free(st->rt[i].jwt);
        hf_rate_free(st->rt[i].rate);
    }
    free(st->rt);
    hf_ekm_config_free(&st->cfg);
    free(st);
}

/* The endpoint's verifier: each issuer with the endpoint's key set and audiences, RS256 only
 * (spec, "Authentication"), email required (email_verified is checked in auth.c). */
static bool verifier_start(const struct hf_ekm_endpoint *ep, struct hf_ekm_endpoint_rt *rt,
                           char *err, size_t errlen)
{
    static const char *const required[] = {"email"};
    const struct hf_jwt_issuer each = {
        .audiences = (const char *const *)ep->audiences,
        .naudiences = ep->naudiences,
        .algs = HF_JWT_RS256,
        /* 0 means the verifier's default (60 s): a configured 0 is kept at one second. */
        .skew_s = ep->skew_s ? ep->skew_s : 1,
        .required = required,
        .nrequired = 1,
    };
    char why[384];

    if ((rt->jwt = hf_jwt_verifier_new()) == NULL) goto oom;
    if (!hf_jwt_trust_add(rt->jwt, &ep->trust, &each, why, sizeof(why))) {
        snprintf(err, errlen, "[gcp-ekm:%s]: %s", ep->name, why);
        return false;
    }
    if ((rt->rate = hf_rate_new(ep->rate_limit, 0)) == NULL) goto oom;
    return true;
oom:
    snprintf(err, errlen, "out of memory");
    return false;
}

static bool ekm_start(void *state, char *err, size_t errlen)
{
    struct hf_ekm_state *st = state;

    if (!hf_ekm_config_check(&st->cfg, err, errlen)) return false;
    if ((st->rt = calloc(st->cfg.nendpoints, sizeof(*st->rt))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    for (size_t i = 0; i < st->cfg.nendpoints; i++)
        if (!verifier_start(&st->cfg.endpoints[i], &st->rt[i], err, errlen)) return false;
    st->started = true;
    return true;
}

/* ---- the entry point ------------------------------------------------------------------------- */

static const struct hf_plugin ekm_plugin = {
    .abi_version = HF_PLUGIN_ABI_VERSION,
    .name = "gcp-ekm",
    .link_type = HF_EKM_LINK_TYPE,
    .latency_limit_ms = 150,
    .routes = ekm_routes,
    .nroutes = sizeof(ekm_routes) / sizeof(ekm_routes[0]),
    .errors = ekm_errors,
    .error_body = ekm_error_body,
    .create = ekm_create,
    .configure = ekm_configure,
    .start = ekm_start,
    .destroy = ekm_destroy,
};

HF_PLUGIN_EXPORT const struct hf_plugin *hf_plugin_entry(void)
{
    return &ekm_plugin;
}
