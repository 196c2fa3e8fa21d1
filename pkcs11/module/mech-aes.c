/* CKM_AES_ECB, CKM_AES_CBC, CKM_AES_CBC_PAD and CKM_AES_CTR: parameter parsing and the one-shot
 * calls into the core (crypto-sym.h). Multi-part input is collected by entry.c and run here at
 * Final, as for the other mechanisms: the output of each Update is empty, which PKCS#11 allows,
 * and CBC-PAD never has to hold back a last block across calls. For a pool key that makes one
 * member call per operation (hf_core_key_aes), which a failover can repeat on another member;
 * the collected input is bounded by HF_MAX_DATA_LEN, as GCM's. */
#include "hf-build.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "pkcs11/module/mech.h"

static enum hf_aes_mode mode_of(CK_MECHANISM_TYPE type)
{
    switch (type) {
    case CKM_AES_ECB:
        return HF_AES_ECB;
    case CKM_AES_CBC:
        return HF_AES_CBC;
    case CKM_AES_CBC_PAD:
        return HF_AES_CBC_PAD;
    default:
        return HF_AES_CTR;
    }
}

CK_RV hf_aes_init(struct hf_op *op, const CK_MECHANISM *mech)
{
    const unsigned char *iv = NULL;

    switch (mech->mechanism) {
    case CKM_AES_ECB:
        /* ECB takes no parameter; one given is a caller's mistake, not something to ignore. */
        return mech->pParameter == NULL && mech->ulParameterLen == 0 ? CKR_OK
                                                                     : CKR_MECHANISM_PARAM_INVALID;
    case CKM_AES_CTR: {
        const CK_AES_CTR_PARAMS *p = mech->pParameter;
        if (p == NULL || mech->ulParameterLen != sizeof(*p)) return CKR_MECHANISM_PARAM_INVALID;
        if (p->ulCounterBits < 1 || p->ulCounterBits > 128) return CKR_MECHANISM_PARAM_INVALID;
        op->ctr_bits = (unsigned)p->ulCounterBits;
        iv = p->cb;
        break;
    }
    default: /* CBC, CBC_PAD: the parameter is the IV */
        if (mech->pParameter == NULL || mech->ulParameterLen != HF_AES_BLOCK)
            return CKR_MECHANISM_PARAM_INVALID;
        iv = mech->pParameter;
        break;
    }
    op->iv = malloc(HF_AES_BLOCK);
    if (op->iv == NULL) return CKR_HOST_MEMORY;
    memcpy(op->iv, iv, HF_AES_BLOCK);
    op->iv_len = HF_AES_BLOCK;
    return CKR_OK;
}

CK_RV hf_aes_encrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen)
{
    if (inlen > HF_MAX_DATA_LEN) return CKR_DATA_LEN_RANGE;
    if (op->material == NULL) /* a pool key (hf_mech_op_prepare): the member does it */
        return hf_core_key_aes(hf_mod.core, &op->obj->key, &op->obj->version, mode_of(op->mech),
                               true, op->iv, op->ctr_bits, in, inlen, out, outlen);
    return hf_aes_cipher(op->material, mode_of(op->mech), true, op->iv, op->ctr_bits, in, inlen,
                         out, outlen);
}

/* CBC-PAD: the plaintext's length is known only after the padding is checked, so a buffer
 * shorter than the ciphertext gets the exact answer from a decryption into scratch memory. */
static CK_RV cbc_pad_decrypt(struct hf_op *op, const unsigned char *in, size_t inlen,
                             unsigned char *out, size_t *outlen)
{
    unsigned char *tmp;
    size_t len = inlen;
    CK_RV rv;

    if (out == NULL || *outlen >= inlen)
        return hf_aes_cipher(op->material, HF_AES_CBC_PAD, false, op->iv, 0, in, inlen, out,
                             outlen);
    tmp = malloc(inlen != 0 ? inlen : 1);
    if (tmp == NULL) return CKR_HOST_MEMORY;
    rv = hf_aes_cipher(op->material, HF_AES_CBC_PAD, false, op->iv, 0, in, inlen, tmp, &len);
    if (rv == CKR_OK) {
        rv = *outlen < len ? CKR_BUFFER_TOO_SMALL : CKR_OK;
        if (rv == CKR_OK) memcpy(out, tmp, len);
        *outlen = len;
    }
    OPENSSL_clear_free(tmp, inlen);
    return rv;
}

CK_RV hf_aes_decrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen)
{
    if (inlen > HF_MAX_DATA_LEN) return CKR_ENCRYPTED_DATA_LEN_RANGE;
    /* A pool key: the member does it, and a short CBC-PAD buffer gets the exact size there. */
    if (op->material == NULL)
        return hf_core_key_aes(hf_mod.core, &op->obj->key, &op->obj->version, mode_of(op->mech),
                               false, op->iv, op->ctr_bits, in, inlen, out, outlen);
    if (op->mech == CKM_AES_CBC_PAD) return cbc_pad_decrypt(op, in, inlen, out, outlen);
    return hf_aes_cipher(op->material, mode_of(op->mech), false, op->iv, op->ctr_bits, in, inlen,
                         out, outlen);
}
