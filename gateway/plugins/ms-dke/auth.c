/* The caller's Entra ID access token (spec, "Authentication"): the gateway's
 * hf_request_bearer_verify checks one Authorization header, its bearer token, the signature
 * (RS256, kid in the JWKS), iss, aud, exp and nbf; this file adds the optional scope and app
 * checks, the audit fields, and the 401 challenge. */
#include "hf-build.h"

#include "gateway/plugins/ms-dke/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gateway/plugins/ms-dke/authz.h"

/* Office learns where to get a token from this challenge; key_store_tester.ps1 requires all
 * three fields, resource starting https:// with the decrypt URL's host. */
static enum hf_status challenge_fail(const struct hf_dke_state *st, struct hf_request *req,
                                     const char *fmt, ...) HF_PRINTF(3, 4);
static enum hf_status challenge_fail(const struct hf_dke_state *st, struct hf_request *req,
                                     const char *fmt, ...)
{
    char value[1536], msg[384];
    va_list ap;

    snprintf(value, sizeof(value), "Bearer resource=\"%s\", authorization=\"%s\", realm=\"%s\"",
             st->cfg.audience, st->cfg.authority, st->cfg.audience);
    hf_reply_header(req, "WWW-Authenticate", value);
    hf_reply_header(req, "resource", st->cfg.audience);
    hf_reply_header(req, "authorization", st->cfg.authority);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED, "%s", msg);
}

static bool appid_is_allowed(const struct hf_dke_config *cfg, const char *appid)
{
    if (cfg->nappids == 0) return true;
    for (size_t i = 0; appid != NULL && i < cfg->nappids; i++)
        if (strcmp(cfg->appids[i], appid) == 0) return true;
    return false;
}

static void audit_set(struct hf_request *req, const struct hf_jwt *t,
                      const struct hf_dke_target *target)
{
    const char *oid = hf_jwt_claim(t, "oid");
    char who[320], ref[HF_DKE_NAME_MAX + HF_DKE_UUID_LEN + 2];
    bool named = hf_dke_identity(hf_jwt_claims(t), who, sizeof(who));

    hf_request_set_audit_field(req, "oid", oid);
    hf_request_set_audit_field(req, "identity", named ? who : NULL);
    hf_request_set_audit_field(req, "appid", hf_jwt_claim(t, "appid"));
    hf_request_set_audit_field(req, "key_name", target->name);
    hf_request_set_audit_field(req, "key_id", target->key_id);
    snprintf(ref, sizeof(ref), "%s/%s", target->name, target->key_id);
    hf_request_set_audit(req, named ? who : oid, NULL, ref);
    hf_request_set_link(req, HF_DKE_LINK_TYPE, target->name);
}

enum hf_status hf_dke_authenticate(struct hf_dke_state *st, struct hf_request *req,
                                   const struct hf_dke_target *t, struct hf_jwt **token)
{
    char why[320] = "";

    if (hf_request_bearer_verify(req, st->jwt, token, why, sizeof(why)) != HF_STATUS_OK)
        return challenge_fail(st, req, "%s", why);
    if (st->cfg.required_scope != NULL &&
        !hf_dke_scope_has(hf_jwt_claims(*token), st->cfg.required_scope))
        return challenge_fail(st, req, "the token's scp lacks %.64s", st->cfg.required_scope);
    if (!appid_is_allowed(&st->cfg, hf_jwt_claim(*token, "appid")))
        return challenge_fail(st, req, "the token's appid is not an allowed client");
    /* From here a refusal is an authenticated caller's and gets its own durable record
     * (plugin.h, "Audit"). */
    hf_request_set_authenticated(req);
    audit_set(req, *token, t);
    return HF_STATUS_OK;
}
