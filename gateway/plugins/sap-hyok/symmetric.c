/* symmetric-encrypt, symmetric-decrypt and generate-random-bytes (spec, "Crypto"): AES-256-GCM
 * (CKM_AES_GCM) with a 96-bit IV the server draws, a 128-bit tag, and the decoded aad as the
 * whole AAD (the spec's Decision: the caller keeps iv, tag and key_version_id itself). */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/internal.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* What an encryption hands back: ciphertext, iv, tag, aad (when given), key_version_id; and
 * the plaintext too for a data key (generate-random-bytes). */
static struct json_object *sealed_reply(const struct hf_sap_call *call, const unsigned char *iv,
                                        const unsigned char *ct, const unsigned char *tag,
                                        size_t len, const unsigned char *aad, size_t aad_len,
                                        const unsigned char *pt)
{
    struct json_object *o = json_object_new_object();

    if (o == NULL || (pt != NULL && !hf_sap_reply_add_b64(o, "plaintext", pt, len)) ||
        !hf_sap_reply_add_b64(o, "ciphertext", ct, len) ||
        !hf_sap_reply_add_b64(o, "iv", iv, HF_SAP_IV_LEN) ||
        !hf_sap_reply_add_b64(o, "tag", tag, HF_SAP_TAG_LEN) ||
        (aad != NULL && !hf_sap_reply_add_b64(o, "aad", aad, aad_len)) ||
        !hf_sap_reply_add_version(call, o)) {
        hf_json_put_wiped(o);
        return NULL;
    }
    return o;
}

/* Seals pt under call's version with a fresh IV and answers. */
static enum hf_status seal_reply(struct hf_sap_call *call, struct hf_request *req,
                                 CK_SESSION_HANDLE s, const unsigned char *pt, size_t len,
                                 const unsigned char *aad, size_t aad_len, bool with_plaintext)
{
    unsigned char iv[HF_SAP_IV_LEN], tag[HF_SAP_TAG_LEN], *ct = malloc(len ? len : 1);
    enum hf_status st;
    CK_RV rv;

    if (ct == NULL) return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    /* SP 800-38D 8.2.2: a random 96-bit IV per encryption. */
    if (!hf_random_public(iv, sizeof(iv))) {
        st = hf_request_fail(req, HF_STATUS_UNAVAILABLE, "no random bytes for the IV");
        goto done;
    }
    rv = hf_sap_gcm_seal(hf_p11_functions(), s, call->version.object, iv, aad, aad_len, pt, len, ct,
                         tag);
    if (rv != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "encrypt", &hf_sap_ckr);
        goto done;
    }
    st = hf_reply_json_or_fail(
        req, 200, sealed_reply(call, iv, ct, tag, len, aad, aad_len, with_plaintext ? pt : NULL));
done:
    free(ct);
    return st;
}

static enum hf_status sym_checks(const struct hf_sap_call *call, struct hf_request *req,
                                 enum hf_key_op op)
{
    enum hf_status st = hf_sap_key_is_aes(call, req);

    return st != HF_STATUS_OK ? st : hf_sap_key_may(call, req, op);
}

enum hf_status hf_sap_sym_encrypt(struct hf_sap_call *call, struct hf_request *req)
{
    unsigned char *pt = NULL, *aad = NULL;
    size_t pt_len = 0, aad_len = 0;
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    if (json_object_object_get_ex(call->body, "iv", NULL))
        return hf_request_fail(req, HF_STATUS_BAD_REQUEST, "iv: the server draws every IV");
    if ((st =
             hf_sap_member_b64(call, req, "plaintext", true, HF_SAP_PLAINTEXT_MAX, &pt, &pt_len)) ||
        (st = hf_sap_member_b64(call, req, "aad", false, HF_SAP_AAD_MAX, &aad, &aad_len)) ||
        (st = sym_checks(call, req, HF_KEY_OP_ENCRYPT)))
        goto done;
    if ((rv = hf_p11_begin(req, NULL, &s)) != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "opening a session", &hf_sap_ckr);
        goto done;
    }
    st = seal_reply(call, req, s, pt, pt_len, aad, aad_len, false);
done:
    OPENSSL_clear_free(pt, pt_len);
    free(aad);
    return st;
}

/* A decoded member of exactly want bytes, else 400. */
static enum hf_status fixed_b64(const struct hf_sap_call *call, struct hf_request *req,
                                const char *name, size_t want, unsigned char *out)
{
    unsigned char *data = NULL;
    size_t len = 0;
    enum hf_status st = hf_sap_member_b64(call, req, name, true, want, &data, &len);

    if (st == HF_STATUS_OK && len != want)
        st = hf_request_fail(req, HF_STATUS_BAD_REQUEST, "%s: want %zu bytes", name, want);
    if (st == HF_STATUS_OK) memcpy(out, data, want);
    free(data);
    return st;
}

enum hf_status hf_sap_sym_decrypt(struct hf_sap_call *call, struct hf_request *req)
{
    unsigned char *ct = NULL, *aad = NULL, *pt = NULL;
    unsigned char iv[HF_SAP_IV_LEN], tag[HF_SAP_TAG_LEN];
    size_t len = 0, aad_len = 0;
    struct json_object *o;
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    if ((st = hf_sap_member_b64(call, req, "ciphertext", true, HF_SAP_PLAINTEXT_MAX, &ct, &len)) ||
        (st = fixed_b64(call, req, "iv", HF_SAP_IV_LEN, iv)) ||
        (st = fixed_b64(call, req, "tag", HF_SAP_TAG_LEN, tag)) ||
        (st = hf_sap_member_b64(call, req, "aad", false, HF_SAP_AAD_MAX, &aad, &aad_len)) ||
        (st = sym_checks(call, req, HF_KEY_OP_DECRYPT)))
        goto done;
    if ((pt = malloc(len ? len : 1)) == NULL) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
        goto done;
    }
    if ((rv = hf_p11_begin(req, NULL, &s)) != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "opening a session", &hf_sap_ckr);
        goto done;
    }
    rv = hf_sap_gcm_open(hf_p11_functions(), s, call->version.object, iv, aad, aad_len, ct, len,
                         tag, pt);
    if (rv != CKR_OK) {
        st = hf_request_fail_ckr(
            req, rv,
            "decrypt (ciphertext, iv, tag, aad and key_version_id must be those "
            "of the encryption)",
            &hf_sap_ckr);
        goto done;
    }
    if ((o = json_object_new_object()) != NULL && !hf_sap_reply_add_b64(o, "plaintext", pt, len)) {
        hf_json_put_wiped(o);
        o = NULL;
    }
    st = hf_reply_json_or_fail(req, 200, o);
done:
    OPENSSL_clear_free(pt, len);
    free(ct);
    free(aad);
    return st;
}

/* A data key: N bytes from the pool RNG (C_GenerateRandom on the request's session), sealed
 * like a symmetric-encrypt without aad; both come back. */
enum hf_status hf_sap_random_bytes(struct hf_sap_call *call, struct hf_request *req)
{
    unsigned char *pt = NULL;
    int64_t n = 0;
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    if ((st = hf_sap_member_integer(call, req, "length", true, 1, HF_SAP_RANDOM_MAX, 0, &n)) ||
        (st = sym_checks(call, req, HF_KEY_OP_ENCRYPT)))
        return st;
    if ((pt = OPENSSL_malloc((size_t)n)) == NULL)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    if ((rv = hf_p11_begin(req, NULL, &s)) != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "opening a session", &hf_sap_ckr);
        goto done;
    }
    if ((rv = hf_p11_functions()->C_GenerateRandom(s, pt, (CK_ULONG)n)) != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "drawing random bytes", &hf_sap_ckr);
        goto done;
    }
    st = seal_reply(call, req, s, pt, (size_t)n, NULL, 0, true);
done:
    OPENSSL_clear_free(pt, (size_t)n);
    return st;
}
