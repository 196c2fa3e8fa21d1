/* The aws-xks plugin: AWS KMS External Key Store proxy API v1 (specs/aws-xks.md).
 *
 * This file holds what the gateway sees (routes, the error table, the error body, the state's
 * life) and the steps every route shares; each operation has its own file. */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/plugins/aws-xks/sigv4.h"

/* ---- the error table: every enum hf_status, in the spec's names ------------------------------ */

static const struct hf_error_map xks_errors[HF_STATUS_COUNT] = {
    [HF_STATUS_OK] = {200, ""},
    [HF_STATUS_BAD_REQUEST] = {400, "ValidationException"},
    [HF_STATUS_UNAUTHENTICATED] = {401, "AuthenticationFailedException"},
    [HF_STATUS_DENIED] = {403, "AccessDeniedException"},
    [HF_STATUS_KEY_NOT_FOUND] = {404, "KeyNotFoundException"},
    [HF_STATUS_PATH_NOT_FOUND] = {404, "InvalidUriPathException"},
    /* The spec asks for 405 on GET and names no error for it: a name KMS knows. */
    [HF_STATUS_METHOD_NOT_ALLOWED] = {405, "ValidationException"},
    [HF_STATUS_KEY_DISABLED] = {400, "InvalidStateException"},
    [HF_STATUS_KEY_USAGE] = {400, "InvalidKeyUsageException"},
    [HF_STATUS_BAD_CIPHERTEXT] = {400, "InvalidCiphertextException"},
    /* Over the gateway's body limit (refused from Content-Length): the request is invalid. */
    [HF_STATUS_TOO_LARGE] = {413, "ValidationException"},
    [HF_STATUS_UNSUPPORTED] = {501, "UnsupportedOperationException"},
    [HF_STATUS_THROTTLED] = {429, "ThrottlingException"},
    [HF_STATUS_TIMEOUT] = {503, "DependencyTimeoutException"},
    /* "failure of the backing key manager" is the spec's InternalException. */
    [HF_STATUS_UNAVAILABLE] = {500, "InternalException"},
    [HF_STATUS_INTERNAL] = {500, "InternalException"},
    [HF_STATUS_BAD_GATEWAY] = {500, "InternalException"}, /* XKS makes no outbound call */
};

/* The spec: errorMessage "MUST be less than 512 characters in length and only use printable
 * ASCII characters": the gateway hands over messages already so (plugin.h, error_body). */
static struct json_object *xks_error_body(const char *name, const char *message)
{
    struct json_object *o = json_object_new_object();

    if (o == NULL) return NULL;
    if (json_object_object_add(o, "errorName", json_object_new_string(name ? name : "")) != 0 ||
        json_object_object_add(o, "errorMessage", json_object_new_string(message ? message : "")) !=
            0) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* ---- routes that answer errors only ---------------------------------------------------------- */

/* Anything under an XKS base path that is no route: 404 before authentication (spec). */
static enum hf_status xks_handle_unknown(void *state, struct hf_request *req)
{
    (void)state;
    return hf_request_fail(req, HF_STATUS_PATH_NOT_FOUND,
                           "no such XKS path: the routes are POST <prefix>/kms/xks/v1/keys/"
                           "{keyId}/metadata|encrypt|decrypt and <prefix>/kms/xks/v1/health");
}

/* GET on a route: 405 (spec, "API operations"), but an unknown prefix is still 404. */
static enum hf_status xks_handle_get(void *state, struct hf_request *req)
{
    struct hf_xks_state *st = state;

    if (hf_xks_config_store(&st->cfg, hf_request_param(req, "prefix")) == NULL)
        return xks_handle_unknown(state, req);
    return hf_request_fail(req, HF_STATUS_METHOD_NOT_ALLOWED,
                           "XKS calls are POST; %s is not allowed", hf_request_method(req));
}

#define XKS_BASE "/{prefix*}/kms/xks/v1"

/* The catch-all rows keep every other path under the base path the spec's 404
 * InvalidUriPathException; with GET as well, so an unknown path is 404 (not 405) whatever the
 * method. */
static const struct hf_route xks_routes[] = {
    {"POST", XKS_BASE "/keys/{keyId}/metadata", "metadata", hf_xks_handle_metadata, NULL},
    {"POST", XKS_BASE "/keys/{keyId}/encrypt", "encrypt", hf_xks_handle_encrypt, NULL},
    {"POST", XKS_BASE "/keys/{keyId}/decrypt", "decrypt", hf_xks_handle_decrypt, NULL},
    {"POST", XKS_BASE "/health", "health", hf_xks_handle_health, NULL},
    {"GET", XKS_BASE "/keys/{keyId}/metadata", "metadata", xks_handle_get, NULL},
    {"GET", XKS_BASE "/keys/{keyId}/encrypt", "encrypt", xks_handle_get, NULL},
    {"GET", XKS_BASE "/keys/{keyId}/decrypt", "decrypt", xks_handle_get, NULL},
    {"GET", XKS_BASE "/health", "health", xks_handle_get, NULL},
    {"POST", XKS_BASE "/{rest*}", "unknown", xks_handle_unknown, NULL},
    {"GET", XKS_BASE "/{rest*}", "unknown", xks_handle_unknown, NULL},
};

/* ---- the state ------------------------------------------------------------------------------- */

static void *xks_create(void)
{
    struct hf_xks_state *st = calloc(1, sizeof(*st));

    if (st != NULL) hf_xks_config_init(&st->cfg);
    return st;
}

static bool xks_configure(void *state, const char *instance, const char *name, const char *value,
                          char *err, size_t errlen)
{
    struct hf_xks_state *st = state;

    if (st->started) {
        snprintf(err, errlen, "internal: configure after start");
        return false;
    }
    return hf_xks_config_set(&st->cfg, instance, name, value, err, errlen);
}

static void xks_destroy(void *state)
{
    struct hf_xks_state *st = state;

    if (st == NULL) return;
    if (st->rt != NULL) {
        for (size_t i = 0; i < st->cfg.nstores; i++) {
            struct hf_xks_store_rt *rt = &st->rt[i];
            hf_sigv4_cache_free(rt->sigv4);
            hf_xks_health_clear(rt);
            hf_rate_free(rt->rate);
            pthread_mutex_destroy(&rt->health_lock);
        }
        free(st->rt);
    }
    hf_xks_config_free(&st->cfg);
    free(st);
}

static bool xks_start(void *state, char *err, size_t errlen)
{
    struct hf_xks_state *st = state;

    if (!hf_xks_config_check(&st->cfg, err, errlen)) return false;
    if ((st->rt = calloc(st->cfg.nstores, sizeof(*st->rt))) == NULL) goto oom;
    for (size_t i = 0; i < st->cfg.nstores; i++) {
        struct hf_xks_store_rt *rt = &st->rt[i];

        /* The mutex first, so destroy can always tear down every entry. */
        pthread_mutex_init(&rt->health_lock, NULL);
    }
    /* The bucket holds one second of the store's rate (spec: a proxy MAY keep a quota per path
     * prefix and answer ThrottlingException over it); rate_limit 0 makes one that allows all. */
    for (size_t i = 0; i < st->cfg.nstores; i++)
        if ((st->rt[i].sigv4 = hf_sigv4_cache_new()) == NULL ||
            (st->rt[i].rate = hf_rate_new(st->cfg.stores[i].rate_limit, 0)) == NULL)
            goto oom;
    st->started = true;
    return true;
oom:
    snprintf(err, errlen, "out of memory");
    return false;
}

/* ---- steps every route shares ------------------------------------------------------------ */

static const char *op_name(enum hf_xks_op op)
{
    switch (op) {
    case HF_XKS_OP_METADATA:
        return "GetKeyMetadata";
    case HF_XKS_OP_ENCRYPT:
        return "Encrypt";
    case HF_XKS_OP_DECRYPT:
        return "Decrypt";
    default:
        return "GetHealthStatus";
    }
}

static enum hf_status authorize(const struct hf_xks_call *call, struct hf_request *req)
{
    const struct hf_xks_request_metadata *md = &call->body.md;
    const char *values[HF_XKS_FIELD_COUNT] = {
        [HF_XKS_FIELD_KEY_ID] = call->key_id,
        [HF_XKS_FIELD_PRINCIPAL] = md->aws_principal_arn,
        [HF_XKS_FIELD_KMS_KEY_ARN] = md->kms_key_arn,
        [HF_XKS_FIELD_OPERATION] = md->kms_operation,
        [HF_XKS_FIELD_VIA_SERVICE] = md->kms_via_service,
        [HF_XKS_FIELD_SOURCE_VPC] = md->aws_source_vpc,
        [HF_XKS_FIELD_SOURCE_VPCE] = md->aws_source_vpce,
    };
    const struct hf_xks_rule *rule;

    if (!call->store->authorization) return HF_STATUS_OK;
    rule = hf_xks_authz_match(call->store, values);
    /* The message reaches the audit record: it names the rule (spec: log the statement
     * responsible for a denial), never the request's values. */
    if (rule == NULL)
        return hf_request_fail(req, HF_STATUS_DENIED,
                               "%s on key %s: no authorization rule of key store %s allows it",
                               op_name(call->body.op), call->key_id, call->store->name);
    if (!rule->allow)
        return hf_request_fail(req, HF_STATUS_DENIED, "%s on key %s: denied by rule %s",
                               op_name(call->body.op), call->key_id, rule->name);
    return HF_STATUS_OK;
}

enum hf_status hf_xks_call_begin(struct hf_xks_state *state, struct hf_request *req,
                                 enum hf_xks_op op, struct hf_xks_call *call)
{
    const unsigned char *body;
    size_t body_len = 0;
    char why[256] = "", who[160];
    enum hf_status st;

    memset(call, 0, sizeof(*call));
    call->state = state;
    if (state == NULL || !state->started)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "the aws-xks plugin is not started");
    call->store = hf_xks_config_store(&state->cfg, hf_request_param(req, "prefix"));
    if (call->store == NULL)
        return hf_request_fail(req, HF_STATUS_PATH_NOT_FOUND,
                               "no XKS key store is served under this path prefix");
    call->rt = &state->rt[call->store - state->cfg.stores];
    if ((st = hf_xks_authenticate(call->store, call->rt, req)) != HF_STATUS_OK) return st;
    /* From here a failure is an authenticated caller's: it gets its own durable record. Before
     * (an unknown prefix, a bad signature) it is only counted (plugin.h, "Audit"). */
    hf_request_set_authenticated(req);
    snprintf(who, sizeof(who), "key store %s", call->store->name);
    if ((st = hf_request_rate_check(req, call->rt->rate, who)) != HF_STATUS_OK) return st;
    if (op != HF_XKS_OP_HEALTH) {
        call->key_id = hf_request_param(req, "keyId");
        if (!hf_xks_key_id_is_valid(call->key_id))
            return hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                                   "keyId must be 1..128 characters of A-Za-z0-9._-");
    }
    body = hf_request_body(req, &body_len);
    st =
        hf_xks_request_parse(op, body, body_len, &call->store->caps, &call->body, why, sizeof(why));
    if (st != HF_STATUS_OK) return hf_request_fail(req, st, "%s", why);
    hf_request_set_audit(req, call->body.md.aws_principal_arn, call->body.md.kms_request_id,
                         call->key_id);
    if (op == HF_XKS_OP_HEALTH) return HF_STATUS_OK;
    hf_request_set_link(req, HF_XKS_LINK_TYPE, call->key_id);
    /* The allowlist answers like an unknown key: a store does not reveal another's keys. */
    if (!hf_xks_store_has_key(call->store, call->key_id))
        st = hf_request_fail(req, HF_STATUS_KEY_NOT_FOUND, "no key with XKS key id %s",
                             call->key_id);
    else
        st = authorize(call, req);
    if (st != HF_STATUS_OK) hf_xks_request_clear(&call->body);
    return st;
}

void hf_xks_call_end(struct hf_xks_call *call)
{
    if (call != NULL) hf_xks_request_clear(&call->body);
}

enum hf_status hf_xks_key_find(struct hf_xks_call *call, struct hf_request *req,
                               struct hf_key_ref *key)
{
    enum hf_status st = hf_keys_by_link(HF_XKS_LINK_TYPE, call->key_id, key);

    if (st == HF_STATUS_KEY_NOT_FOUND)
        return hf_request_fail(req, st, "no key with XKS key id %s", call->key_id);
    if (st != HF_STATUS_OK)
        return hf_request_fail(req, st, "the key behind XKS key id %s cannot be read",
                               call->key_id);
    return HF_STATUS_OK;
}

/* KMS gives up on a late proxy: its 503 DependencyTimeoutException, not InternalException. */
static enum hf_status deadline_check(const struct hf_xks_call *call, struct hf_request *req)
{
    return hf_request_deadline_check(req, call->store->deadline_ms, HF_STATUS_TIMEOUT);
}

enum hf_status hf_xks_key_gcm_check(const struct hf_xks_call *call, const struct hf_key_ref *key,
                                    struct hf_request *req)
{
    if (key->key_type != CKK_AES || key->bits != 256)
        return hf_request_fail(req, HF_STATUS_KEY_USAGE,
                               "key %s is not AES-256 and cannot do AES_GCM", call->key_id);
    if (key->blocked)
        return hf_request_fail(req, HF_STATUS_KEY_DISABLED, "the XKS link of key %s is blocked",
                               call->key_id);
    return HF_STATUS_OK;
}

enum hf_status hf_xks_session_begin(const struct hf_xks_call *call, struct hf_request *req,
                                    const char *operation, CK_SESSION_HANDLE *session)
{
    enum hf_status st = deadline_check(call, req);
    CK_RV rv;

    if (st != HF_STATUS_OK) return st;
    if ((rv = hf_p11_begin(req, operation, session)) != CKR_OK)
        /* The health check's probe names itself (its audit operation is health.encrypt). */
        return hf_request_fail_ckr(req, rv,
                                   call->body.op == HF_XKS_OP_HEALTH
                                       ? "health check: opening a session"
                                       : "opening a session",
                                   NULL);
    return HF_STATUS_OK;
}

/* ---- the entry point ------------------------------------------------------------------------- */

static const struct hf_plugin xks_plugin = {
    .abi_version = HF_PLUGIN_ABI_VERSION,
    .name = "aws-xks",
    .link_type = HF_XKS_LINK_TYPE,
    /* KMS gives an XKS call 250 ms end to end (specs/aws-xks.md), then retries or fails it. */
    .latency_limit_ms = 250,
    .routes = xks_routes,
    .nroutes = sizeof(xks_routes) / sizeof(xks_routes[0]),
    .errors = xks_errors,
    .error_body = xks_error_body,
    .create = xks_create,
    .configure = xks_configure,
    .start = xks_start,
    .destroy = xks_destroy,
};

HF_PLUGIN_EXPORT const struct hf_plugin *hf_plugin_entry(void)
{
    return &xks_plugin;
}
