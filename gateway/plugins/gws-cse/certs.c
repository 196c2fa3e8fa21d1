/* GET <prefix>/certs (specs/gws-cse.md, "certs"): the public keys of the prefix's signing key,
 * its current version and the one before, as a JWKS; no authentication and no audit record
 * (plugin.c marks it unaudited). Peers verify our migration tokens with it and fetch it again
 * for a kid they do not know, so a rotation shows at once; max-age bounds how long a cache
 * may keep a key set that no longer holds the current key. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/own.h"

enum hf_status hf_cse_certs(struct hf_cse_call *call, struct hf_request *req)
{
    struct json_object *jwks = hf_cse_own_jwks(call->rt);

    if (!jwks) return hf_request_fail(req, HF_STATUS_UNAVAILABLE, "the key set cannot be read");
    hf_reply_header(req, "Cache-Control", "max-age=300");
    hf_reply_json(req, 200, jwks);
    return HF_STATUS_OK;
}
