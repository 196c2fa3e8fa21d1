/* CKM_AES_GCM: parameter parsing and the one-shot calls into the core. This is the hot path of
 * the module (a gateway encrypts 32-byte data keys), so it copies the IV and AAD once at Init and
 * allocates nothing at C_Encrypt beyond what the core's cipher needs. */
#include "hf-build.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "pkcs11/module/mech.h"

/* PKCS#11 v2.40 as published lacked ulIvBits (the errata and v3.0 added it); callers built
 * against either header exist, so both layouts are accepted, told apart by ulParameterLen. */
struct gcm_params_v240 {
    CK_BYTE_PTR pIv;
    CK_ULONG ulIvLen;
    CK_BYTE_PTR pAAD;
    CK_ULONG ulAADLen;
    CK_ULONG ulTagBits;
};

#define GCM_IV_MAX 256 /* SP 800-38D allows more; no real caller needs it */

static unsigned char *dup_bytes(const unsigned char *p, size_t len)
{
    unsigned char *copy = malloc(len);

    if (copy != NULL) memcpy(copy, p, len);
    return copy;
}

CK_RV hf_gcm_init(struct hf_op *op, const CK_MECHANISM *mech)
{
    const unsigned char *iv, *aad;
    CK_ULONG iv_len, aad_len, tag_bits;

    if (mech->pParameter == NULL) return CKR_MECHANISM_PARAM_INVALID;
    if (mech->ulParameterLen == sizeof(CK_GCM_PARAMS)) {
        const CK_GCM_PARAMS *p = mech->pParameter;
        iv = p->pIv, iv_len = p->ulIvLen, aad = p->pAAD, aad_len = p->ulAADLen;
        tag_bits = p->ulTagBits;
    } else if (mech->ulParameterLen == sizeof(struct gcm_params_v240)) {
        const struct gcm_params_v240 *p = mech->pParameter;
        iv = p->pIv, iv_len = p->ulIvLen, aad = p->pAAD, aad_len = p->ulAADLen;
        tag_bits = p->ulTagBits;
    } else {
        return CKR_MECHANISM_PARAM_INVALID;
    }
    /* SP 800-38D 5.2.1.2: tags of 96..128 bits in whole bytes. Its 32- and 64-bit tags need
     * bounds on message length and invocations (appendix C) that a token cannot enforce for its
     * callers, and a forged short tag costs only 2^32 tries: refused. */
    if (iv == NULL || iv_len == 0 || iv_len > GCM_IV_MAX || tag_bits < 96 || tag_bits > 128 ||
        tag_bits % 8 != 0 || (aad == NULL && aad_len != 0) || aad_len > HF_MAX_DATA_LEN)
        return CKR_MECHANISM_PARAM_INVALID;

    op->iv = dup_bytes(iv, iv_len);
    op->aad = aad_len != 0 ? dup_bytes(aad, aad_len) : NULL;
    if (op->iv == NULL || (aad_len != 0 && op->aad == NULL)) return CKR_HOST_MEMORY;
    op->iv_len = iv_len;
    op->aad_len = aad_len;
    op->tag_len = tag_bits / 8;
    return CKR_OK;
}

CK_RV hf_gcm_encrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen)
{
    CK_RV rv;

    if (inlen > HF_MAX_DATA_LEN) return CKR_DATA_LEN_RANGE;
    rv = hf_mech_out_check(out, outlen, inlen + op->tag_len);
    if (rv != CKR_OK || out == NULL) return rv;
    if (op->material == NULL) /* a pool key (hf_mech_op_prepare): the member does it */
        return hf_core_key_gcm(hf_mod.core, &op->obj->key, &op->obj->version, true, op->iv,
                               op->iv_len, op->aad, op->aad_len, op->tag_len, in, inlen, out,
                               outlen);
    return hf_aes_gcm_encrypt(op->material, op->iv, op->iv_len, op->aad, op->aad_len, op->tag_len,
                              in, inlen, out, outlen);
}

CK_RV hf_gcm_decrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen)
{
    size_t cap = *outlen;
    CK_RV rv;

    if (inlen < op->tag_len) return CKR_ENCRYPTED_DATA_LEN_RANGE;
    rv = hf_mech_out_check(out, outlen, inlen - op->tag_len);
    if (rv != CKR_OK || out == NULL) return rv;
    if (op->material == NULL) /* a pool key (hf_mech_op_prepare): the member does it */
        rv = hf_core_key_gcm(hf_mod.core, &op->obj->key, &op->obj->version, false, op->iv,
                             op->iv_len, op->aad, op->aad_len, op->tag_len, in, inlen, out, outlen);
    else
        rv = hf_aes_gcm_decrypt(op->material, op->iv, op->iv_len, op->aad, op->aad_len, op->tag_len,
                                in, inlen, out, outlen);
    if (rv != CKR_OK) /* no unauthenticated plaintext may reach the caller */
        OPENSSL_cleanse(out, cap);
    return rv;
}
