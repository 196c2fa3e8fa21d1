/* CKM_AES_KEY_WRAP (RFC 3394) and CKM_AES_KEY_WRAP_PAD / CKM_AES_KEY_WRAP_KWP (RFC 5649), for
 * C_Encrypt/C_Decrypt as well as C_WrapKey/C_UnwrapKey.
 *
 * Why _PAD means RFC 5649 here: PKCS#11 2.40 named RFC 5649 "CKM_AES_KEY_WRAP_PAD", and that is
 * what deployed code means by it (SoftHSMv2, OpenSSL's id-aes*-wrap-pad, most HSM vendors). 3.0
 * then added CKM_AES_KEY_WRAP_KWP for RFC 5649 and reworded _PAD as PKCS#7-padding-then-RFC 3394,
 * a scheme nobody we interoperate with emits. Serving RFC 5649 under both names keeps keys wrapped
 * by 2.40-era callers unwrappable.
 *
 * A pool key's wrap runs in its member (hf_core_key_kw), after the same length checks. */
#include "hf-build.h"

#include <string.h>

#include <openssl/crypto.h>

#include "pkcs11/core/secmem.h"
#include "pkcs11/module/mech.h"

static bool is_padded(const struct hf_op *op)
{
    return op->mech != CKM_AES_KEY_WRAP;
}

CK_RV hf_kw_init(struct hf_op *op, const CK_MECHANISM *mech)
{
    /* The optional parameter is an alternative initial value; the core uses the RFC defaults
     * only, and silently ignoring a caller's IV would produce blobs it cannot unwrap. */
    if (mech->pParameter != NULL || mech->ulParameterLen != 0) return CKR_MECHANISM_PARAM_INVALID;
    return CKR_OK;
}

CK_RV hf_kw_encrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                    size_t *outlen)
{
    size_t need;
    CK_RV rv;

    if (inlen > HF_MAX_DATA_LEN) return CKR_DATA_LEN_RANGE;
    if (is_padded(op)) {
        if (inlen == 0) return CKR_DATA_LEN_RANGE;
        need = (inlen + 7) / 8 * 8 + 8;
    } else {
        /* RFC 3394 2.2.1: n >= 2 64-bit blocks. */
        if (inlen < 16 || inlen % 8 != 0) return CKR_DATA_LEN_RANGE;
        need = inlen + 8;
    }
    rv = hf_mech_out_check(out, outlen, need);
    if (rv != CKR_OK || out == NULL) return rv;
    if (op->material == NULL) /* a pool key (hf_mech_op_prepare): its member wraps */
        return hf_core_key_kw(hf_mod.core, &op->obj->key, &op->obj->version, is_padded(op), true,
                              in, inlen, out, outlen);
    return hf_aes_kw_wrap(op->material, is_padded(op), in, inlen, out, outlen);
}

/* RFC 5649 output is up to 7 bytes shorter than its bound, known only after the integrity check:
 * a buffer between the two is served through locked scratch memory, so a caller that sized it
 * from the real key length is not refused. */
static CK_RV unwrap_via_scratch(struct hf_op *op, const unsigned char *in, size_t inlen,
                                unsigned char *out, size_t *outlen, size_t bound)
{
    unsigned char *tmp = hf_secmem_alloc(bound);
    size_t len = bound, cap = *outlen;
    CK_RV rv;

    if (tmp == NULL) return CKR_HOST_MEMORY;
    rv = hf_aes_kw_unwrap(op->material, true, in, inlen, tmp, &len);
    if (rv != CKR_OK) goto done;
    *outlen = len;
    if (cap < len) {
        rv = CKR_BUFFER_TOO_SMALL;
        goto done;
    }
    memcpy(out, tmp, len);
done:
    hf_secmem_free(tmp, bound);
    return rv;
}

CK_RV hf_kw_decrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                    size_t *outlen)
{
    size_t bound, cap = *outlen;
    CK_RV rv;

    if (inlen % 8 != 0 || inlen < (is_padded(op) ? 16u : 24u) || inlen > HF_MAX_DATA_LEN + 16)
        return CKR_ENCRYPTED_DATA_LEN_RANGE;
    bound = inlen - 8;
    if (out == NULL) {
        *outlen = bound;
        return CKR_OK;
    }
    /* A pool key: its member unwraps, and a short RFC 5649 buffer gets the exact size there. */
    if (op->material == NULL)
        rv = hf_core_key_kw(hf_mod.core, &op->obj->key, &op->obj->version, is_padded(op), false, in,
                            inlen, out, outlen);
    else if (is_padded(op) && cap < bound)
        rv = unwrap_via_scratch(op, in, inlen, out, outlen, bound);
    else if (cap < bound)
        rv = hf_mech_out_check(out, outlen, bound);
    else
        rv = hf_aes_kw_unwrap(op->material, is_padded(op), in, inlen, out, outlen);
    if (rv == CKR_WRAPPED_KEY_INVALID) /* the core speaks of keys; C_Decrypt of data */
        rv = CKR_ENCRYPTED_DATA_INVALID;
    if (rv != CKR_OK && rv != CKR_BUFFER_TOO_SMALL) OPENSSL_cleanse(out, cap);
    return rv;
}
