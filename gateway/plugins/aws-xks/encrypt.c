/* Encrypt: POST <prefix>/kms/xks/v1/keys/{keyId}/encrypt (specs/aws-xks.md).
 * The current key version encrypts under Holdfast's construction (crypto.h); with a
 * ciphertextDataIntegrityValueAlgorithm, the CDIV is computed first and the fresh output decrypted
 * once more, and only a successful round trip is answered (the spec's Appendix C order). */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/internal.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

struct sealed {
    unsigned char *ct;
    unsigned char iv[HF_XKS_IV_LEN];
    unsigned char tag[HF_XKS_TAG_LEN];
    unsigned char cm[HF_XKS_CM_LEN];
    unsigned char cdiv[HF_XKS_CDIV_LEN];
};

/* Why the key may not encrypt, or HF_STATUS_OK. */
static enum hf_status key_check(const struct hf_xks_call *call, const struct hf_key_ref *key,
                                struct hf_request *req)
{
    enum hf_status st = hf_xks_key_gcm_check(call, key, req);

    if (st != HF_STATUS_OK) return st;
    /* ARCHITECTURE.md, states: only an active key encrypts (the link was checked above). */
    st = hf_key_may(key, HF_KEY_OP_ENCRYPT, 0);
    if (st == HF_STATUS_KEY_DISABLED)
        return hf_request_fail(req, st, "key %s is not active, so it may not encrypt",
                               call->key_id);
    if (st != HF_STATUS_OK) return hf_request_fail(req, st, "key %s may not encrypt", call->key_id);
    if (call->body.want_cdiv && hf_key_may(key, HF_KEY_OP_DECRYPT, 0) == HF_STATUS_KEY_USAGE)
        return hf_request_fail(req, HF_STATUS_KEY_USAGE,
                               "key %s may not decrypt, so its ciphertext cannot be verified for "
                               "a ciphertextDataIntegrityValue",
                               call->key_id);
    return HF_STATUS_OK;
}

/* Appendix C, step 3: the output decrypts back to the plaintext. */
static enum hf_status verify_round_trip(struct hf_xks_call *call, const struct hf_key_ref *key,
                                        const struct sealed *out, struct hf_request *req)
{
    const struct hf_xks_request *b = &call->body;
    unsigned char *back = malloc(b->input.len + 1);
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    if (back == NULL) return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    if ((rv = hf_p11_begin(req, "encrypt.verify", &s)) != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "opening a session", NULL);
        goto done;
    }
    rv = hf_xks_gcm_open(hf_p11_functions(), s, key->current, out->iv, HF_XKS_IV_LEN, b->aad.data,
                         b->aad.len, out->cm, HF_XKS_CM_LEN, out->ct, b->input.len, out->tag, back);
    if (rv == CKR_KEY_FUNCTION_NOT_PERMITTED) {
        st = hf_request_fail(req, HF_STATUS_KEY_USAGE,
                             "key %s encrypted but may not decrypt, so the ciphertext cannot be "
                             "verified",
                             call->key_id);
    } else if (rv != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "decrypting the fresh ciphertext for its integrity check",
                                 NULL);
    } else if (CRYPTO_memcmp(back, b->input.data, b->input.len) != 0) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL,
                             "the fresh ciphertext decrypted to something else");
    } else {
        st = HF_STATUS_OK;
    }
done:
    OPENSSL_clear_free(back, b->input.len + 1);
    return st;
}

static struct json_object *reply_body(const struct hf_xks_call *call, const struct sealed *out)
{
    struct json_object *o = json_object_new_object();
    const size_t len = call->body.input.len;

    if (o == NULL || json_object_object_add(o, "ciphertext", hf_json_base64(out->ct, len)) != 0 ||
        json_object_object_add(o, "ciphertextMetadata", hf_json_base64(out->cm, HF_XKS_CM_LEN)) !=
            0 ||
        json_object_object_add(o, "initializationVector", hf_json_base64(out->iv, HF_XKS_IV_LEN)) !=
            0 ||
        json_object_object_add(o, "authenticationTag", hf_json_base64(out->tag, HF_XKS_TAG_LEN)) !=
            0 ||
        (call->body.want_cdiv &&
         json_object_object_add(o, "ciphertextDataIntegrityValue",
                                hf_json_base64(out->cdiv, HF_XKS_CDIV_LEN)) != 0)) {
        json_object_put(o);
        return NULL;
    }
    /* json-c adds a NULL value when hf_json_base64 ran out of memory: treat it as a failure. */
    json_object_object_foreach(o, k, v)
    {
        (void)k;
        if (v == NULL) {
            json_object_put(o);
            return NULL;
        }
    }
    return o;
}

enum hf_status hf_xks_handle_encrypt(void *state, struct hf_request *req)
{
    struct hf_xks_call call;
    struct hf_key_ref key;
    struct sealed out = {0};
    const struct hf_xks_request *b;
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    if ((st = hf_xks_call_begin(state, req, HF_XKS_OP_ENCRYPT, &call)) != HF_STATUS_OK) return st;
    b = &call.body;
    if ((st = hf_xks_key_find(&call, req, &key)) != HF_STATUS_OK ||
        (st = key_check(&call, &key, req)) != HF_STATUS_OK)
        goto done;
    if (!hf_xks_cm_encode(key.version, out.cm)) {
        st = hf_request_fail(req, HF_STATUS_UNSUPPORTED,
                             "key version %lu does not fit the ciphertextMetadata format",
                             (unsigned long)key.version);
        goto done;
    }
    if ((out.ct = malloc(b->input.len + 1)) == NULL) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
        goto done;
    }
    /* A fresh random 96-bit IV per encryption (SP 800-38D 8.2.2). */
    if (!hf_random_public(out.iv, sizeof(out.iv))) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "no random bytes for the IV");
        goto done;
    }
    if ((st = hf_xks_session_begin(&call, req, NULL, &s)) != HF_STATUS_OK) goto done;
    rv = hf_xks_gcm_seal(hf_p11_functions(), s, key.current, out.iv, b->aad.data, b->aad.len,
                         out.cm, HF_XKS_CM_LEN, b->input.data, b->input.len, out.ct, out.tag);
    if (rv != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "encrypt", NULL);
        goto done;
    }
    if (b->want_cdiv) {
        /* CDIV before the check decrypt, so a corruption after it cannot go unseen (App. C). */
        if (!hf_xks_cdiv(b->aad.data, b->aad.len, out.cm, HF_XKS_CM_LEN, out.iv, HF_XKS_IV_LEN,
                         out.ct, b->input.len, out.tag, HF_XKS_TAG_LEN, out.cdiv)) {
            st = hf_request_fail(req, HF_STATUS_INTERNAL, "cannot compute the CDIV");
            goto done;
        }
        if ((st = verify_round_trip(&call, &key, &out, req)) != HF_STATUS_OK) goto done;
    }
    st = hf_reply_json_or_fail(req, 200, reply_body(&call, &out));
done:
    free(out.ct);
    hf_xks_call_end(&call);
    return st;
}
