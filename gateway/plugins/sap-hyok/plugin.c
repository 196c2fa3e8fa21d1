/* The sap-hyok plugin: SAP Data Custodian's customer-managed keystore, SAP HYOK
 * (specs/sap-hyok.md).
 *
 * This file holds what the gateway sees: the eleven routes, the error table (OCI's envelope,
 * {"code":"<status>","message":...}) and the state's life. call.c has the steps every route
 * shares; keystore.c, metadata.c, versions.c, symmetric.c and asym.c the operations. */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- routes ---------------------------------------------------------------------------------- */

typedef enum hf_status (*sap_op_fn)(struct hf_sap_call *call, struct hf_request *req);

static enum hf_status route_run(void *state, struct hf_request *req, enum hf_sap_version_rule rule,
                                sap_op_fn op)
{
    struct hf_sap_state *st = state;
    struct hf_sap_call call;
    enum hf_status status;

    if (st == NULL || !st->started)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "the sap-hyok plugin is not started");
    status = hf_sap_call_begin(st, req, rule, &call);
    if (status == HF_STATUS_OK) status = op(&call, req);
    hf_sap_call_end(&call);
    return status;
}

/* One handler per route: the route table fixes each one's version rule and operation. */
#define SAP_HANDLER(fn, rule, op)                                                                  \
    static enum hf_status fn(void *state, struct hf_request *req)                                  \
    {                                                                                              \
        return route_run(state, req, rule, op);                                                    \
    }
SAP_HANDLER(h_keystore_metadata, HF_SAP_VERSION_NONE, hf_sap_keystore_metadata)
SAP_HANDLER(h_key_metadata, HF_SAP_VERSION_CURRENT, hf_sap_key_metadata)
SAP_HANDLER(h_versions_metadata, HF_SAP_VERSION_OPTIONAL, hf_sap_versions_metadata)
/* New encryptions use the current version; the spec's request names none. */
SAP_HANDLER(h_sym_encrypt, HF_SAP_VERSION_CURRENT, hf_sap_sym_encrypt)
/* The spec's Decision: absent key_version_id tries the current version only. */
SAP_HANDLER(h_sym_decrypt, HF_SAP_VERSION_OPTIONAL, hf_sap_sym_decrypt)
SAP_HANDLER(h_asym_encrypt, HF_SAP_VERSION_OPTIONAL, sap_asym_encrypt)
SAP_HANDLER(h_asym_decrypt, HF_SAP_VERSION_REQUIRED, sap_asym_decrypt)
SAP_HANDLER(h_asym_sign, HF_SAP_VERSION_OPTIONAL, sap_asym_sign)
SAP_HANDLER(h_asym_verify, HF_SAP_VERSION_REQUIRED, sap_asym_verify)
SAP_HANDLER(h_public_key, HF_SAP_VERSION_OPTIONAL, sap_public_key)
SAP_HANDLER(h_random_bytes, HF_SAP_VERSION_CURRENT, hf_sap_random_bytes)

/* Only paths under "<prefix>/keystores/" are ours: the configured prefix, not whatever
 * {prefix*} caught (the gateway's generic 404 answers the rest, before authentication). */
static bool sap_accepts(void *state, const char *path)
{
    const struct hf_sap_state *st = state;

    return st != NULL && st->started && hf_sap_config_is_served(&st->cfg, path);
}

#define KS "/{prefix*}/keystores/{keystore_id}"
#define KEY KS "/keys/{external_key_id}"
#define ROUTE(path, op, fn)                                                                        \
    {                                                                                              \
        "POST", path, op, fn, sap_accepts                                                          \
    }
static const struct hf_route sap_routes[] = {
    ROUTE(KS "/get-metadata", "keystore.get-metadata", h_keystore_metadata),
    ROUTE(KEY "/get-metadata", "get-metadata", h_key_metadata),
    ROUTE(KEY "/get-versions-metadata", "get-versions-metadata", h_versions_metadata),
    ROUTE(KEY "/symmetric-encrypt", "symmetric-encrypt", h_sym_encrypt),
    ROUTE(KEY "/symmetric-decrypt", "symmetric-decrypt", h_sym_decrypt),
    ROUTE(KEY "/asymmetric-encrypt", "asymmetric-encrypt", h_asym_encrypt),
    ROUTE(KEY "/asymmetric-decrypt", "asymmetric-decrypt", h_asym_decrypt),
    ROUTE(KEY "/asymmetric-sign", "asymmetric-sign", h_asym_sign),
    ROUTE(KEY "/asymmetric-verify", "asymmetric-verify", h_asym_verify),
    ROUTE(KEY "/get-public-key", "get-public-key", h_public_key),
    ROUTE(KEY "/generate-random-bytes", "generate-random-bytes", h_random_bytes),
};

/* ---- the state ------------------------------------------------------------------------------- */

static void *sap_create(void)
{
    return calloc(1, sizeof(struct hf_sap_state));
}

static bool sap_configure(void *state, const char *instance, const char *name, const char *value,
                          char *err, size_t errlen)
{
    struct hf_sap_state *st = state;

    if (st->started) {
        snprintf(err, errlen, "internal: configure after start");
        return false;
    }
    return hf_sap_config_set(&st->cfg, instance, name, value, err, errlen);
}

static bool sap_start(void *state, char *err, size_t errlen)
{
    struct hf_sap_state *st = state;

    if (!hf_sap_config_check(&st->cfg, err, errlen)) return false;
    st->started = true;
    return true;
}

static void sap_destroy(void *state)
{
    struct hf_sap_state *st = state;

    if (st == NULL) return;
    hf_sap_config_free(&st->cfg);
    free(st);
}

/* ---- the entry point ------------------------------------------------------------------------- */

static const struct hf_plugin sap_plugin = {
    .abi_version = HF_PLUGIN_ABI_VERSION,
    .name = "sap-hyok",
    .link_type = HF_SAP_LINK_TYPE,
    /* SAP publishes no figure: Holdfast's own AES target (spec, "Limits"). */
    .latency_limit_ms = 100,
    .max_body = HF_SAP_BODY_MAX,
    .routes = sap_routes,
    .nroutes = sizeof(sap_routes) / sizeof(sap_routes[0]),
    .errors = hf_error_map_code_status,
    .error_body = hf_error_body_code_message,
    .create = sap_create,
    .configure = sap_configure,
    .start = sap_start,
    .destroy = sap_destroy,
};

HF_PLUGIN_EXPORT const struct hf_plugin *hf_plugin_entry(void)
{
    return &sap_plugin;
}
