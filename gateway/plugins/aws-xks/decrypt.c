/* Decrypt: POST <prefix>/kms/xks/v1/keys/{keyId}/decrypt (specs/aws-xks.md).
 * The ciphertextMetadata names the key version that encrypted (crypto.h), so ciphertexts made
 * before a rotation still decrypt; any wrong byte anywhere is InvalidCiphertextException. */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/internal.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* What the GCM open's CK_RV means to XKS: a failed tag check, and anything the module refuses
 * about the ciphertext's shape, is a bad ciphertext. */
static bool is_bad_ciphertext(CK_RV rv)
{
    return rv == CKR_ENCRYPTED_DATA_INVALID || rv == CKR_ENCRYPTED_DATA_LEN_RANGE ||
           rv == CKR_MECHANISM_PARAM_INVALID;
}

/* The version object that encrypted, after the checks ARCHITECTURE.md's states ask for. */
static enum hf_status version_find(const struct hf_xks_call *call, const struct hf_key_ref *key,
                                   struct hf_request *req, CK_OBJECT_HANDLE *object)
{
    const struct hf_xks_request *b = &call->body;
    CK_ULONG version = 0, state = 0;
    enum hf_status st;

    if ((st = hf_xks_key_gcm_check(call, key, req)) != HF_STATUS_OK) return st;
    /* The mask before the ciphertext is looked at; the state is the version's, known once the
     * ciphertext names it (ACTIVE here leaves it out). */
    if ((st = hf_key_may(key, HF_KEY_OP_DECRYPT, HF_STATE_ACTIVE)) != HF_STATUS_OK)
        return hf_request_fail(req, st, "key %s may not decrypt", call->key_id);
    /* Holdfast always returns a ciphertextMetadata; without one (or with one it did not
     * write) the GCM AAD cannot be the one the tag covers. */
    if (!b->cm.present)
        return hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                               "ciphertextMetadata is missing: this proxy's ciphertexts carry it");
    if (!hf_xks_cm_decode(b->cm.data, b->cm.len, &version))
        return hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                               "ciphertextMetadata is not one this proxy wrote");
    st = hf_keys_version(key, version, object, &state);
    if (st == HF_STATUS_KEY_NOT_FOUND)
        return hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                               "ciphertextMetadata names version %lu, which key %s does not have",
                               (unsigned long)version, call->key_id);
    if (st != HF_STATUS_OK)
        return hf_request_fail(req, st, "version %lu of key %s cannot be read",
                               (unsigned long)version, call->key_id);
    /* Deactivated and compromised keys still decrypt (old data stays readable). */
    if ((st = hf_key_may(key, HF_KEY_OP_DECRYPT, state)) != HF_STATUS_OK)
        return hf_request_fail(req, st, "version %lu of key %s is %s and may not decrypt",
                               (unsigned long)version, call->key_id,
                               state == HF_STATE_PRE_ACTIVE ? "pre-active" : "destroyed");
    return HF_STATUS_OK;
}

enum hf_status hf_xks_handle_decrypt(void *state, struct hf_request *req)
{
    struct hf_xks_call call;
    struct hf_key_ref key;
    struct json_object *reply = NULL, *plain;
    const struct hf_xks_request *b;
    CK_OBJECT_HANDLE object = CK_INVALID_HANDLE;
    CK_SESSION_HANDLE s;
    unsigned char *pt = NULL;
    enum hf_status st;
    CK_RV rv;

    if ((st = hf_xks_call_begin(state, req, HF_XKS_OP_DECRYPT, &call)) != HF_STATUS_OK) return st;
    b = &call.body;
    if ((st = hf_xks_key_find(&call, req, &key)) != HF_STATUS_OK ||
        (st = version_find(&call, &key, req, &object)) != HF_STATUS_OK)
        goto done;
    if ((pt = malloc(b->input.len + 1)) == NULL) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
        goto done;
    }
    if ((st = hf_xks_session_begin(&call, req, NULL, &s)) != HF_STATUS_OK) goto done;
    rv = hf_xks_gcm_open(hf_p11_functions(), s, object, b->iv, b->iv_len, b->aad.data, b->aad.len,
                         b->cm.data, b->cm.len, b->input.data, b->input.len, b->tag, pt);
    if (is_bad_ciphertext(rv)) {
        st = hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                             "the ciphertext, initializationVector, authenticationTag, "
                             "additionalAuthenticatedData or ciphertextMetadata is not the one "
                             "key %s encrypted",
                             call.key_id);
        goto done;
    }
    if (rv != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "decrypt", NULL);
        goto done;
    }
    if ((reply = json_object_new_object()) == NULL ||
        (plain = hf_json_base64(pt, b->input.len)) == NULL ||
        json_object_object_add(reply, "plaintext", plain) != 0) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
        goto done;
    }
    hf_reply_json(req, 200, reply);
    reply = NULL;
    st = HF_STATUS_OK;
done:
    json_object_put(reply);
    if (pt != NULL) OPENSSL_clear_free(pt, b->input.len + 1);
    hf_xks_call_end(&call);
    return st;
}
