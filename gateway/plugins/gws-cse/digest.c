/* digest (specs/gws-cse.md, "Crypto"): the resource key hash of a wrapped key bound to the
 * authorization token's resource_name, over the blob's own resource_name and perimeter_id;
 * the DEK never leaves. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

enum hf_status hf_cse_digest(struct hf_cse_call *call, struct hf_request *req)
{
    const struct hf_cse_bytes *w = &call->body.wrapped_key;
    char rkh[HF_CSE_RKH_LEN];
    struct hf_cse_opened k;
    struct json_object *o;
    enum hf_status st = hf_cse_key_open(call, req, w->data, w->len, &k);

    if (st != HF_STATUS_OK) return st;
    if (!hf_cse_opened_is_for(&k, call->resource_name)) {
        st = hf_request_fail(req, HF_STATUS_DENIED,
                             "the wrapped key is bound to another resource_name");
    } else if (!hf_cse_resource_key_hash(k.dek, k.dek_len, k.resource_name, k.resource_name_len,
                                         k.perimeter_id, k.perimeter_id_len, rkh)) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "the resource key hash failed");
    } else if ((o = json_object_new_object()) == NULL ||
               json_object_object_add(o, "resource_key_hash", json_object_new_string(rkh)) != 0) {
        json_object_put(o);
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    } else {
        hf_reply_json(req, 200, o);
    }
    hf_cse_opened_clear(&k);
    return st;
}
