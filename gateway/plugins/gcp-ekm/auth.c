/* The caller's Google-signed OIDC ID token (spec, "Authentication"): the gateway's verifier
 * checks the signature (RS256, kid in the endpoint's JWKS), iss, aud, exp, nbf, iat and that
 * email is present; this file adds email_verified and marks the request authenticated. */
#include "hf-build.h"

#include "gateway/plugins/gcp-ekm/internal.h"

#include <string.h>

/* email_verified must be the JSON boolean true: a Google ID token writes it so, and a string
 * "true" would be a token some other issuer shaped. */
static bool email_is_verified(const struct hf_jwt *t)
{
    struct json_object *v = NULL;

    if (!json_object_object_get_ex(hf_jwt_claims(t), "email_verified", &v)) return false;
    return json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

enum hf_status hf_ekm_authenticate(struct hf_ekm_call *call, struct hf_request *req)
{
    char why[320] = "";

    if (hf_request_bearer_verify(req, call->rt->jwt, &call->token, why, sizeof(why)) !=
        HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED, "%s", why);
    call->email = hf_jwt_claim(call->token, "email");
    if (call->email == NULL || *call->email == '\0')
        return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED, "the ID token has no email claim");
    if (!email_is_verified(call->token))
        return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED,
                               "the ID token's email_verified is not true");
    /* From here a failure is an authenticated caller's and gets its own durable record; before
     * it, the request was only counted (plugin.h, "Audit"). */
    hf_request_set_authenticated(req);
    hf_request_set_audit_field(req, "caller_email", call->email);
    return HF_STATUS_OK;
}
