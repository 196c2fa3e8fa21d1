/* CKM_AES_CMAC, CKM_AES_CMAC_GENERAL and CKM_SHA*_HMAC: sign and verify through the core
 * (crypto-sym.h). op->tag_len is the MAC's length in bytes, op->asym_md HMAC's digest. A pool
 * key's CMAC is the member's CKM_AES_CMAC (hf_core_key_cmac): the general form is its first
 * tag_len bytes, as PKCS#11 defines it (SoftHSMv2 offers no CKM_AES_CMAC_GENERAL), and a
 * verification compares here, as for a local key. */
#include "hf-build.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "pkcs11/module/mech.h"

/* CK_MAC_GENERAL_PARAMS is a CK_ULONG: the MAC length in bytes. */
static CK_RV general_len(const CK_MECHANISM *mech, size_t full, size_t *len)
{
    const CK_ULONG *p = mech->pParameter;

    if (p == NULL || mech->ulParameterLen != sizeof(CK_ULONG)) return CKR_MECHANISM_PARAM_INVALID;
    /* SP 800-38B appendix A: MACs under 64 bits need limits on verification attempts that a
     * token cannot enforce for its callers; refused like GCM's short tags. */
    if (*p < 8 || *p > full) return CKR_MECHANISM_PARAM_INVALID;
    *len = *p;
    return CKR_OK;
}

CK_RV hf_mac_init(struct hf_op *op, const CK_MECHANISM *mech)
{
    switch (mech->mechanism) {
    case CKM_AES_CMAC_GENERAL:
        return general_len(mech, HF_AES_BLOCK, &op->tag_len);
    default:
        if (mech->pParameter != NULL || mech->ulParameterLen != 0)
            return CKR_MECHANISM_PARAM_INVALID;
        op->asym_md = hf_mech_hash_md(mech->mechanism, &op->tag_len);
        if (mech->mechanism == CKM_AES_CMAC) op->asym_md = NULL, op->tag_len = HF_AES_BLOCK;
        return CKR_OK;
    }
}

/* The full MAC of in into mac (EVP_MAX_MD_SIZE bytes). */
static CK_RV mac_compute(struct hf_op *op, const unsigned char *in, size_t inlen,
                         unsigned char *mac)
{
    size_t len = 0;

    if (inlen > HF_MAX_DATA_LEN) return CKR_DATA_LEN_RANGE;
    if (op->asym_md != NULL) return hf_hmac(op->material, op->asym_md, in, inlen, mac, &len);
    if (op->material == NULL) /* a pool key (hf_mech_op_prepare): the member does it */
        return hf_core_key_cmac(hf_mod.core, &op->obj->key, &op->obj->version, in, inlen, mac);
    return hf_aes_cmac(op->material, in, inlen, mac);
}

CK_RV hf_mac_sign(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                  size_t *outlen)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    CK_RV rv = hf_mech_out_check(out, outlen, op->tag_len);

    if (rv != CKR_OK || out == NULL) return rv;
    rv = mac_compute(op, in, inlen, mac);
    if (rv == CKR_OK) memcpy(out, mac, op->tag_len);
    OPENSSL_cleanse(mac, sizeof(mac));
    return rv;
}

CK_RV hf_mac_verify(struct hf_op *op, const unsigned char *in, size_t inlen,
                    const unsigned char *sig, size_t siglen)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    CK_RV rv;

    if (siglen != op->tag_len) return CKR_SIGNATURE_LEN_RANGE;
    rv = mac_compute(op, in, inlen, mac);
    if (rv == CKR_OK && CRYPTO_memcmp(mac, sig, siglen) != 0) rv = CKR_SIGNATURE_INVALID;
    OPENSSL_cleanse(mac, sizeof(mac));
    return rv;
}
