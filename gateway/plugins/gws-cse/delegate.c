/* POST <prefix>/delegate (specs/gws-cse.md, "delegate"): after checks 1-8 (role reader or
 * writer, and an authz token naming delegated_to), a token of our own for the delegate, signed
 * RS256 by the prefix's signing key: iss = aud = KACLS_URL, the caller's email (and
 * google_email), delegated_to and resource_name, 15 minutes. The delegate presents it as its
 * authentication; check 7 then holds it to the authz token's delegated_to and resource_name.
 * checks.c has refused an authz token without delegated_to. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/minted.h"
#include "gateway/plugins/gws-cse/own.h"

#include <stdlib.h>

enum hf_status hf_cse_delegate(struct hf_cse_call *call, struct hf_request *req)
{
    struct json_object *claims = NULL, *reply = NULL;
    char *token = NULL;
    enum hf_status st;

    /* A delegate cannot pass on what it was lent: a chain would outlive the 15 minutes. */
    if (call->authn_kind == HF_CSE_AUTHN_DELEGATED)
        return hf_request_fail(req, HF_STATUS_DENIED, "a delegated token cannot delegate");
    claims = hf_cse_delegated_claims(call->px->kacls_url, hf_jwt_claims(call->authn),
                                     call->delegated_to, call->resource_name, hf_wall_s());
    if (!claims) return hf_request_fail(req, HF_STATUS_DENIED, "the authentication names no email");
    if ((st = hf_cse_own_mint(call, req, "delegate", claims, &token)) != HF_STATUS_OK) goto done;
    if (!(reply = json_object_new_object()) ||
        json_object_object_add(reply, "delegated_authentication", json_object_new_string(token)) !=
            0) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
        goto done;
    }
    hf_reply_json(req, 200, reply);
    reply = NULL;
done:
    json_object_put(reply);
    json_object_put(claims);
    free(token);
    return st;
}
