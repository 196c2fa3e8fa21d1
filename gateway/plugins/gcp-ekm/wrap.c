/* Wrap: POST [/<prefix>]/<keyPath>:wrap (spec, "Crypto"). The key's current version seals the
 * plaintext under a fresh random IV; the blob names that version, so blobs made before a
 * rotation still unwrap. A health-check wrap is audited under its own operation name, since it
 * is Cloud EKM probing the key, not data access. */
#include "hf-build.h"

#include "gateway/plugins/gcp-ekm/internal.h"

#include <stdlib.h>

/* {"wrappedBlob": base64}: the blob is no secret (only the key opens it). */
static struct json_object *reply_new(const unsigned char *blob, size_t len)
{
    struct json_object *o = json_object_new_object(), *v = hf_json_base64(blob, len);

    if (o != NULL && v != NULL && json_object_object_add(o, "wrappedBlob", v) == 0) return o;
    json_object_put(v);
    json_object_put(o);
    return NULL;
}

enum hf_status hf_ekm_wrap(struct hf_ekm_call *call, struct hf_request *req)
{
    const struct hf_ekm_request *b = &call->body;
    unsigned char iv[HF_BLOB_IV_LEN], *blob = NULL;
    const size_t blob_len = HF_BLOB_OVERHEAD + b->input.len;
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    if ((blob = malloc(blob_len)) == NULL) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
        goto done;
    }
    /* SP 800-38D 8.2.2: a random 96-bit IV per encryption. */
    if (!hf_random_public(iv, sizeof(iv))) {
        st = hf_request_fail(req, HF_STATUS_UNAVAILABLE, "no random bytes for the IV");
        goto done;
    }
    if ((st = hf_ekm_deadline_check(call, req)) != HF_STATUS_OK) goto done;
    if ((rv = hf_p11_begin(req, b->health_check ? "wrap.health_check" : "wrap", &s)) != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "opening a session", &hf_ekm_ckr);
        goto done;
    }
    rv = hf_blob_seal(hf_p11_functions(), s, call->key.current, call->key.version, HF_EKM_API,
                      call->key.uuid, iv, b->aad.data, b->aad.len, b->input.data, b->input.len,
                      blob);
    if (rv != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "wrap", &hf_ekm_ckr);
        goto done;
    }
    st = hf_reply_json_or_fail(req, 200, reply_new(blob, blob_len));
done:
    free(blob);
    return st;
}
