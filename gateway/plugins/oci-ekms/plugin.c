/* The oci-ekms plugin: OCI External Key Management, the EKMS vendor API (specs/oci-ekms.md).
 *
 * This file holds what the gateway sees: the routes (one catch-all per method under the
 * prefix, so every path there gets this API's 404 and 405; request.c maps paths to
 * operations), the error table, the state's life. call.c has the steps every operation shares,
 * auth.c the token, metadata.c, crypt.c and random.c the operations. */
#include "hf-build.h"

#include "gateway/plugins/oci-ekms/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum hf_status dispatch(struct hf_oci_call *call, struct hf_request *req)
{
    switch (call->t.op) {
    case HF_OCI_OP_VAULT_METADATA:
        return hf_oci_vault_metadata(call, req);
    case HF_OCI_OP_KEY_METADATA:
        return hf_oci_key_metadata(call, req);
    case HF_OCI_OP_VERSION_METADATA:
        return hf_oci_version_metadata(call, req);
    case HF_OCI_OP_ENCRYPT:
        return hf_oci_encrypt(call, req);
    case HF_OCI_OP_DECRYPT:
        return hf_oci_decrypt(call, req);
    default:
        return hf_oci_random(call, req);
    }
}

/* Every method of every path under "<prefix>/vaults/" comes here: a path naming no route is
 * 404 whatever the method, another method on a route 405, both before authentication. */
static enum hf_status oci_handle(void *state, struct hf_request *req)
{
    struct hf_oci_state *st = state;
    const char *method = hf_request_method(req), *want;
    struct hf_oci_target t;
    struct hf_oci_call call;
    enum hf_status status;

    if (st == NULL || !st->started)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "the oci-ekms plugin is not started");
    memset(&call, 0, sizeof(call));
    if ((status = hf_oci_request_id_set(&call, req)) != HF_STATUS_OK) return status;
    hf_oci_path_parse(hf_request_path(req), hf_oci_config_prefix(&st->cfg), &t);
    if ((want = hf_oci_op_method(t.op)) == NULL)
        return hf_request_fail(req, HF_STATUS_PATH_NOT_FOUND,
                               "no such EKMS route under /vaults/{vaultId}");
    hf_request_set_operation(req, hf_oci_op_name(t.op));
    if (strcmp(method, want) != 0)
        return hf_request_fail(req, HF_STATUS_METHOD_NOT_ALLOWED, "%s only: %s is not allowed",
                               want, method);
    status = hf_oci_call_begin(st, req, &t, &call);
    if (status == HF_STATUS_OK) status = dispatch(&call, req);
    hf_oci_call_end(&call);
    return status;
}

/* Only "<prefix>/vaults/..." is ours, so another catch-all plugin can share the listener. */
static bool oci_accepts(void *state, const char *path)
{
    const struct hf_oci_state *st = state;
    struct hf_oci_target t;

    return st != NULL && st->started && hf_oci_path_parse(path, hf_oci_config_prefix(&st->cfg), &t);
}

#define ROUTE(m)                                                                                   \
    {                                                                                              \
        m, "/{path*}", "oci", oci_handle, oci_accepts                                              \
    }
static const struct hf_route oci_routes[] = {
    ROUTE("GET"), ROUTE("POST"), ROUTE("PUT"), ROUTE("DELETE"), ROUTE("PATCH"),
};

/* ---- the state ------------------------------------------------------------------------------- */

static void *oci_create(void)
{
    return calloc(1, sizeof(struct hf_oci_state));
}

static bool oci_configure(void *state, const char *instance, const char *name, const char *value,
                          char *err, size_t errlen)
{
    struct hf_oci_state *st = state;

    if (st->started) {
        snprintf(err, errlen, "internal: configure after start");
        return false;
    }
    return hf_oci_config_set(&st->cfg, instance, name, value, err, errlen);
}

static void oci_destroy(void *state)
{
    struct hf_oci_state *st = state;

    if (st == NULL) return;
    for (size_t i = 0; st->rt != NULL && i < st->cfg.nvaults; i++) {
        hf_jwt_verifier_free(st->rt[i].jwt);
        hf_rate_free(st->rt[i].rate);
    }
    free(st->rt);
    hf_oci_config_free(&st->cfg);
    free(st);
}

/* The vault's verifier: its IDCS domain as the one issuer, RS256 (spec, "Authentication"),
 * the verifier's 60 s skew on exp, nbf and iat. */
static bool vault_start(const struct hf_oci_vault *v, struct hf_oci_vault_rt *rt, char *err,
                        size_t errlen)
{
    struct hf_outbound_policy fetch = {
        .ca_file = v->jwks_ca,
        .allow_cidrs = (const char *const *)v->jwks_allow,
        .nallow_cidrs = v->njwks_allow,
    };
    struct hf_jwt_issuer iss = {
        .issuer = v->issuer,
        .jwks = v->jwks,
        .audiences = (const char *const *)v->audiences,
        .naudiences = v->naudiences,
        .algs = HF_JWT_RS256,
        .fetch = &fetch,
    };
    char why[256];

    if ((rt->jwt = hf_jwt_verifier_new()) == NULL ||
        (rt->rate = hf_rate_new(v->rate_limit, 0)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    if (!hf_jwt_verifier_add(rt->jwt, &iss, why, sizeof(why))) {
        snprintf(err, errlen, "[oci-ekms:%s]: jwks %s: %s", v->name, v->jwks, why);
        return false;
    }
    return true;
}

static bool oci_start(void *state, char *err, size_t errlen)
{
    struct hf_oci_state *st = state;

    if (!hf_oci_config_check(&st->cfg, err, errlen)) return false;
    if ((st->rt = calloc(st->cfg.nvaults, sizeof(*st->rt))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    for (size_t i = 0; i < st->cfg.nvaults; i++)
        if (!vault_start(&st->cfg.vaults[i], &st->rt[i], err, errlen)) return false;
    st->started = true;
    return true;
}

/* ---- the entry point ------------------------------------------------------------------------- */

static const struct hf_plugin oci_plugin = {
    .abi_version = HF_PLUGIN_ABI_VERSION,
    .name = "oci-ekms",
    .link_type = HF_OCI_LINK_TYPE,
    .latency_limit_ms = 100,
    .max_body = HF_OCI_BODY_MAX,
    .routes = oci_routes,
    .nroutes = sizeof(oci_routes) / sizeof(oci_routes[0]),
    .errors = hf_error_map_code_status,
    .error_body = hf_error_body_code_message,
    .create = oci_create,
    .configure = oci_configure,
    .start = oci_start,
    .destroy = oci_destroy,
};

HF_PLUGIN_EXPORT const struct hf_plugin *hf_plugin_entry(void)
{
    return &oci_plugin;
}
