/* GenerateRandomBytes at vault and key level (spec, "Request rules"): exactly N bytes from the
 * HSM pool through C_GenerateRandom on the request's session, answered 201 as Thales documents
 * (random_status = 200 for Oracle's reading). */
#include "hf-build.h"

#include "gateway/plugins/oci-ekms/internal.h"

#include <stdlib.h>

#include <openssl/crypto.h>

static struct json_object *reply_new(const unsigned char *bytes, unsigned n)
{
    struct json_object *o = json_object_new_object(), *v = hf_json_base64(bytes, n);

    if (o != NULL && v != NULL && json_object_object_add(o, "randomBytes", v) == 0) {
        if (json_object_object_add(o, "length", json_object_new_int((int)n)) == 0) return o;
        v = NULL;
    }
    json_object_put(v);
    hf_json_put_wiped(o);
    return NULL;
}

enum hf_status hf_oci_random(struct hf_oci_call *call, struct hf_request *req)
{
    unsigned n = call->body.length;
    unsigned char *buf = NULL;
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    if (call->t.op == HF_OCI_OP_KEY_RANDOM &&
        (st = hf_oci_key_may(call, req, HF_KEY_OP_METADATA, 0)) != HF_STATUS_OK)
        return st;
    if ((buf = malloc(n)) == NULL) return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    if ((rv = hf_p11_begin(req, NULL, &s)) != CKR_OK) {
        st = hf_oci_fail_ckr(req, rv, "opening a session");
        goto done;
    }
    if ((rv = hf_p11_functions()->C_GenerateRandom(s, buf, n)) != CKR_OK) {
        st = hf_oci_fail_ckr(req, rv, "C_GenerateRandom");
        goto done;
    }
    st = hf_reply_json_or_fail(req, call->st->cfg.random_status, reply_new(buf, n));
done:
    /* The caller may use them as key material. */
    OPENSSL_clear_free(buf, n);
    return st;
}
