/* unwrap and privilegedunwrap (specs/gws-cse.md, "Crypto"): the blob opens under the version
 * it names, then must have been bound to the resource the call is about (the authorization
 * token's; privilegedunwrap: the request's), else 403; unwrap also holds the blob's
 * perimeter_id to the perimeter rules (check 8). */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

#include <stdlib.h>

static enum hf_status key_reply(struct hf_request *req, const struct hf_cse_opened *k)
{
    struct json_object *o = json_object_new_object(), *v = hf_json_base64(k->dek, k->dek_len);

    if (o == NULL || v == NULL || json_object_object_add(o, "key", v) != 0) {
        hf_json_put_wiped(v);
        json_object_put(o);
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    }
    /* hf_reply_json cleanses its serialisation but frees the tree as json-c does, uncleared:
     * a reference of our own keeps the DEK's base64 alive to be wiped after it. */
    json_object_get(v);
    hf_reply_json(req, 200, o);
    hf_json_put_wiped(v);
    return HF_STATUS_OK;
}

/* The blob's perimeter under check 8, audited as the one the DEK was bound to. */
static enum hf_status blob_perimeter_check(struct hf_cse_call *call, struct hf_request *req,
                                           const struct hf_cse_opened *k)
{
    char *pid = hf_cse_opened_perimeter(k);
    enum hf_status st;

    if (pid == NULL) return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    hf_request_set_audit_field(req, "perimeter_id", pid);
    st = hf_cse_perimeter_check(call, req, pid);
    free(pid);
    return st;
}

static enum hf_status unwrap_run(struct hf_cse_call *call, struct hf_request *req, bool perimeter)
{
    const struct hf_cse_bytes *w = &call->body.wrapped_key;
    struct hf_cse_opened k;
    enum hf_status st = hf_cse_key_open(call, req, w->data, w->len, &k);

    if (st != HF_STATUS_OK) return st;
    if (!hf_cse_opened_is_for(&k, call->resource_name))
        st = hf_request_fail(req, HF_STATUS_DENIED,
                             "the wrapped key is bound to another resource_name");
    else if (perimeter)
        st = blob_perimeter_check(call, req, &k);
    if (st == HF_STATUS_OK) st = key_reply(req, &k);
    hf_cse_opened_clear(&k);
    return st;
}

enum hf_status hf_cse_unwrap(struct hf_cse_call *call, struct hf_request *req)
{
    return unwrap_run(call, req, true);
}

enum hf_status hf_cse_privilegedunwrap(struct hf_cse_call *call, struct hf_request *req)
{
    return unwrap_run(call, req, false);
}
