/* wrap and privilegedwrap (specs/gws-cse.md, "Operations", "Crypto"): the DEK sealed with the
 * resource_name and perimeter_id the call binds, the authorization token's for wrap, the
 * body's for privilegedwrap (hf_cse_checks_run chose them). */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

static enum hf_status wrap_reply(struct hf_cse_call *call, struct hf_request *req)
{
    const struct hf_cse_bytes *key = &call->body.key;
    struct json_object *wrapped = NULL, *o;
    enum hf_status st;

    st = hf_cse_key_seal(call, req, key->data, key->len, call->resource_name, call->perimeter_id,
                         &wrapped);
    if (st != HF_STATUS_OK) return st;
    if ((o = json_object_new_object()) == NULL ||
        json_object_object_add(o, "wrapped_key", wrapped) != 0) {
        json_object_put(wrapped);
        json_object_put(o);
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    }
    hf_reply_json(req, 200, o);
    return HF_STATUS_OK;
}

enum hf_status hf_cse_wrap(struct hf_cse_call *call, struct hf_request *req)
{
    return wrap_reply(call, req);
}

enum hf_status hf_cse_privilegedwrap(struct hf_cse_call *call, struct hf_request *req)
{
    return wrap_reply(call, req);
}
