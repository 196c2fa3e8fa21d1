/* The caller's IAM identity domain (IDCS) client-credentials token (spec, "Authentication"):
 * the gateway verifies the signature (RS256, kid in the vault's JWKS), iss, aud, exp, nbf and
 * iat, and caches it until exp; this file adds the client pin and the scope rule. */
#include "hf-build.h"

#include "gateway/plugins/oci-ekms/internal.h"

/* IDCS names the confidential app in client_id; sub is the same app for client credentials. */
static const char *token_client(const struct hf_jwt *t)
{
    const char *c = hf_jwt_claim(t, "client_id");

    return c != NULL && *c != '\0' ? c : hf_jwt_claim(t, "sub");
}

enum hf_status hf_oci_authenticate(struct hf_oci_call *call, struct hf_request *req)
{
    char why[320] = "";

    if (hf_request_bearer_verify(req, call->rt->jwt, &call->token, why, sizeof(why)) !=
        HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED, "%s", why);
    /* From here a failure is an authenticated caller's and gets its own durable record. */
    hf_request_set_authenticated(req);
    call->client = token_client(call->token);
    return HF_STATUS_OK;
}

enum hf_status hf_oci_authorize(struct hf_oci_call *call, struct hf_request *req)
{
    enum hf_oci_op op = call->t.op;

    if (!hf_oci_vault_allows_client(call->vault, call->client))
        return hf_request_fail(req, HF_STATUS_DENIED, "this client may not use vault %s",
                               call->vault->id);
    if (!hf_oci_scope_allows(hf_jwt_claims(call->token), op,
                             (const char *const *)call->vault->audiences, call->vault->naudiences))
        return hf_request_fail(req, HF_STATUS_DENIED, "the token's scope admits no %s: want %s",
                               hf_oci_op_name(op), "oci_ekms");
    return HF_STATUS_OK;
}
