/* Check 2 (specs/gws-cse.md, "Tokens"): the authentication token from the prefix's authn.LABEL
 * issuers (pick by iss, then kid; RS256 or ES256), or one of our own delegated tokens, or for
 * privilegedunwrap a peer's migration token; the authorization token from Google's issuers
 * (RS256, aud cse-authorization, JWKS per issuer). All through plugin.h's hf_jwt_*: signature,
 * iss, aud, exp (required), nbf, iat within clock_skew. The delegated and migration verifiers
 * are cse-mint's (hf_cse_tokens_start_own); this file only tries them. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

#include <stdio.h>
#include <string.h>

/* What the checks after this one read: a missing one is a token that fails verification. */
static const char *const authn_required[] = {"email"};
static const char *const authz_required[] = {"email", "role", "resource_name", "kacls_url"};

static struct hf_outbound_policy jwks_fetch(const struct hf_cse_prefix *px)
{
    struct hf_outbound_policy fetch = {
        .ca_file = px->jwks_ca,
        .allow_cidrs = (const char *const *)px->jwks_allow,
        .nallow_cidrs = px->njwks_allow,
    };
    return fetch;
}

/* 0 would mean the verifier's default (60 s): a configured 0 is kept at one second. */
static unsigned skew_of(const struct hf_cse_prefix *px)
{
    return px->skew_s ? px->skew_s : 1;
}

static bool authn_start(const struct hf_cse_prefix *px, struct hf_cse_prefix_rt *rt, char *err,
                        size_t errlen)
{
    struct hf_outbound_policy fetch = jwks_fetch(px);

    for (size_t i = 0; i < px->nauthn; i++) {
        const struct hf_cse_authn *a = &px->authn[i];
        struct hf_jwt_issuer iss = {
            .issuer = a->issuer,
            .jwks = a->jwks,
            .audiences = (const char *const *)a->audiences,
            .naudiences = a->naudiences,
            .algs = a->algs,
            .skew_s = skew_of(px),
            .required = authn_required,
            .nrequired = sizeof(authn_required) / sizeof(authn_required[0]),
            .fetch = &fetch,
        };
        char why[256];

        if (!hf_jwt_verifier_add(rt->authn, &iss, why, sizeof(why))) {
            snprintf(err, errlen, "[gws-cse:%s]: authn.%s.jwks %s: %s", px->name, a->label, a->jwks,
                     why);
            return false;
        }
    }
    return true;
}

static bool authz_start(const struct hf_cse_prefix *px, struct hf_cse_prefix_rt *rt, char *err,
                        size_t errlen)
{
    static const char *const aud[] = {HF_CSE_AUTHZ_AUDIENCE};
    struct hf_outbound_policy fetch = jwks_fetch(px);

    for (size_t i = 0; i < px->nauthz_issuers; i++) {
        char jwks[2 * HF_CSE_VALUE_MAX], why[256];
        struct hf_jwt_issuer iss = {
            .issuer = px->authz_issuers[i],
            .jwks = jwks,
            .audiences = aud,
            .naudiences = 1,
            .algs = HF_JWT_RS256,
            .skew_s = skew_of(px),
            .required = authz_required,
            .nrequired = sizeof(authz_required) / sizeof(authz_required[0]),
            .fetch = &fetch,
        };

        if (!hf_cse_authz_jwks(px, px->authz_issuers[i], jwks, sizeof(jwks))) {
            snprintf(err, errlen, "[gws-cse:%s]: authz_jwks for %s is too long", px->name,
                     px->authz_issuers[i]);
            return false;
        }
        if (!hf_jwt_verifier_add(rt->authz, &iss, why, sizeof(why))) {
            snprintf(err, errlen, "[gws-cse:%s]: authz_jwks %s: %s", px->name, jwks, why);
            return false;
        }
    }
    return true;
}

bool hf_cse_tokens_start(const struct hf_cse_prefix *px, struct hf_cse_prefix_rt *rt, char *err,
                         size_t errlen)
{
    if ((rt->authn = hf_jwt_verifier_new()) == NULL ||
        (rt->authz = hf_jwt_verifier_new()) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    return authn_start(px, rt, err, errlen) && authz_start(px, rt, err, errlen);
}

void hf_cse_tokens_stop(struct hf_cse_prefix_rt *rt)
{
    hf_jwt_verifier_free(rt->authn);
    hf_jwt_verifier_free(rt->authz);
    rt->authn = rt->authz = NULL;
}

/* The authentication token: an IdP's, else ours (delegated), else for privilegedunwrap a
 * peer's (migration). The refusal names the IdP verifier's reason, the one a caller most
 * likely needs. */
static enum hf_status authn_verify(struct hf_cse_call *call, struct hf_request *req)
{
    const struct hf_cse_string *t = &call->body.authentication;
    char why[256] = "", other[256];

    if (hf_jwt_verify(call->rt->authn, t->s, t->len, &call->authn, why, sizeof(why)) ==
        HF_STATUS_OK) {
        call->authn_kind = HF_CSE_AUTHN_IDP;
        return HF_STATUS_OK;
    }
    if (call->rt->delegated != NULL &&
        hf_jwt_verify(call->rt->delegated, t->s, t->len, &call->authn, other, sizeof(other)) ==
            HF_STATUS_OK) {
        call->authn_kind = HF_CSE_AUTHN_DELEGATED;
        return HF_STATUS_OK;
    }
    if (call->op == HF_CSE_OP_PRIVILEGEDUNWRAP && call->rt->migration != NULL &&
        hf_jwt_verify(call->rt->migration, t->s, t->len, &call->authn, other, sizeof(other)) ==
            HF_STATUS_OK) {
        call->authn_kind = HF_CSE_AUTHN_MIGRATION;
        return HF_STATUS_OK;
    }
    call->authn = NULL;
    return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED,
                           "authentication: the token is refused: %s", why);
}

enum hf_status hf_cse_tokens_verify(struct hf_cse_call *call, struct hf_request *req)
{
    const struct hf_cse_string *t = &call->body.authorization;
    char why[256] = "";
    enum hf_status st;

    if (call->info->authn) {
        if ((st = authn_verify(call, req)) != HF_STATUS_OK) return st;
        /* From here a failure is a known caller's and gets its own durable record (plugin.h,
         * "Audit"); before it, the request was only counted. */
        hf_request_set_authenticated(req);
    }
    if (call->info->authz) {
        if (hf_jwt_verify(call->rt->authz, t->s, t->len, &call->authz, why, sizeof(why)) !=
            HF_STATUS_OK) {
            call->authz = NULL;
            return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED,
                                   "authorization: the token is refused: %s", why);
        }
        hf_request_set_authenticated(req);
    }
    return HF_STATUS_OK;
}
