/* plugin.h's single key operations through PKCS#11 that several APIs share: AES-GCM with the
 * caller's AAD (the blob's and SAP's), RSA-OAEP (SAP, DKE) and an RSA object's public key. */
#include "hf-build.h"

#include "gateway/p11.h"

#include <stdint.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#define GCM_IV_LEN 12
#define GCM_TAG_LEN 16
#define RSA_MAX_BYTES 1024 /* 8192 bits */

static void gcm_params(CK_GCM_PARAMS *params, const unsigned char *iv, const unsigned char *aad,
                       size_t aad_len)
{
    memset(params, 0, sizeof(*params));
    params->pIv = (CK_BYTE_PTR)iv;
    params->ulIvLen = GCM_IV_LEN;
    params->ulIvBits = GCM_IV_LEN * 8;
    params->pAAD = aad_len ? (CK_BYTE_PTR)aad : NULL;
    params->ulAADLen = aad_len;
    params->ulTagBits = GCM_TAG_LEN * 8;
}

HF_PLUGIN_EXPORT CK_RV hf_gcm_seal(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s,
                                   CK_OBJECT_HANDLE key, const unsigned char iv[12],
                                   const unsigned char *aad, size_t aad_len,
                                   const unsigned char *pt, size_t pt_len, unsigned char *sealed)
{
    static const unsigned char empty[1];
    CK_ULONG sealed_len = pt_len + GCM_TAG_LEN;
    CK_GCM_PARAMS params;
    CK_MECHANISM mech = {CKM_AES_GCM, &params, sizeof(params)};
    CK_RV rv;

    if (p11 == NULL || iv == NULL || sealed == NULL || (pt == NULL && pt_len != 0) ||
        (aad == NULL && aad_len != 0) || pt_len > SIZE_MAX - GCM_TAG_LEN)
        return CKR_ARGUMENTS_BAD;
    gcm_params(&params, iv, aad, aad_len);
    if ((rv = p11->C_EncryptInit(s, &mech, key)) != CKR_OK) return rv;
    /* A NULL input would ask for the size and leave the operation open. */
    rv = p11->C_Encrypt(s, (CK_BYTE_PTR)(pt_len ? pt : empty), pt_len, sealed, &sealed_len);
    if (rv == CKR_OK && sealed_len != pt_len + GCM_TAG_LEN) rv = CKR_GENERAL_ERROR;
    return rv;
}

/* C_Decrypt into a buffer of the size the module asked for (*got), then the plaintext into pt. */
static CK_RV decrypt_roomy(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s,
                           const unsigned char *sealed, size_t sealed_len, unsigned char *pt,
                           CK_ULONG *got)
{
    CK_ULONG room = *got;
    unsigned char *tmp = room <= sealed_len ? OPENSSL_malloc(room) : NULL;
    CK_RV rv;

    if (tmp == NULL) return CKR_HOST_MEMORY;
    rv = p11->C_Decrypt(s, (CK_BYTE_PTR)sealed, sealed_len, tmp, got);
    if (rv == CKR_OK && *got <= sealed_len - GCM_TAG_LEN) memcpy(pt, tmp, *got);
    OPENSSL_clear_free(tmp, room);
    return rv;
}

HF_PLUGIN_EXPORT CK_RV hf_gcm_open(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s,
                                   CK_OBJECT_HANDLE key, const unsigned char iv[12],
                                   const unsigned char *aad, size_t aad_len,
                                   const unsigned char *sealed, size_t sealed_len,
                                   unsigned char *pt)
{
    unsigned char scratch[1];
    size_t pt_len;
    CK_ULONG got;
    CK_GCM_PARAMS params;
    CK_MECHANISM mech = {CKM_AES_GCM, &params, sizeof(params)};
    CK_RV rv;

    if (p11 == NULL || iv == NULL || sealed == NULL || sealed_len < GCM_TAG_LEN ||
        (aad == NULL && aad_len != 0))
        return CKR_ARGUMENTS_BAD;
    pt_len = sealed_len - GCM_TAG_LEN;
    if (pt == NULL && pt_len != 0) return CKR_ARGUMENTS_BAD;
    gcm_params(&params, iv, aad, aad_len);
    if ((rv = p11->C_DecryptInit(s, &mech, key)) != CKR_OK) return rv;
    got = pt_len;
    rv = p11->C_Decrypt(s, (CK_BYTE_PTR)sealed, sealed_len, pt_len ? pt : scratch, &got);
    /* Some modules (SoftHSMv2) want room for the tag too before they check it; the operation
     * stays active after CKR_BUFFER_TOO_SMALL (PKCS#11 5.2), so ask again with that room. */
    if (rv == CKR_BUFFER_TOO_SMALL && got > pt_len)
        rv = decrypt_roomy(p11, s, sealed, sealed_len, pt, &got);
    if (rv == CKR_OK && got != pt_len) rv = CKR_GENERAL_ERROR;
    if (rv != CKR_OK && pt_len != 0) OPENSSL_cleanse(pt, pt_len);
    return rv;
}

static bool oaep_hash_is_known(CK_MECHANISM_TYPE hash, CK_RSA_PKCS_MGF_TYPE *mgf)
{
    switch (hash) {
    case CKM_SHA_1:
        *mgf = CKG_MGF1_SHA1;
        return true;
    case CKM_SHA256:
        *mgf = CKG_MGF1_SHA256;
        return true;
    case CKM_SHA384:
        *mgf = CKG_MGF1_SHA384;
        return true;
    case CKM_SHA512:
        *mgf = CKG_MGF1_SHA512;
        return true;
    default:
        return false;
    }
}

/* One C_EncryptInit/C_Encrypt or C_DecryptInit/C_Decrypt with OAEP on hash. */
static CK_RV oaep(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                  CK_MECHANISM_TYPE hash, bool decrypt, const unsigned char *in, size_t in_len,
                  unsigned char *out, size_t *out_len)
{
    CK_RSA_PKCS_OAEP_PARAMS params = {hash, 0, CKZ_DATA_SPECIFIED, NULL, 0};
    CK_MECHANISM mech = {CKM_RSA_PKCS_OAEP, &params, sizeof(params)};
    CK_ULONG got;
    CK_RV rv;

    if (p11 == NULL || in == NULL || out == NULL || out_len == NULL || *out_len == 0 ||
        !oaep_hash_is_known(hash, &params.mgf))
        return CKR_ARGUMENTS_BAD;
    got = *out_len;
    rv = decrypt ? p11->C_DecryptInit(s, &mech, key) : p11->C_EncryptInit(s, &mech, key);
    if (rv != CKR_OK) return rv;
    rv = decrypt ? p11->C_Decrypt(s, (CK_BYTE_PTR)in, in_len, out, &got)
                 : p11->C_Encrypt(s, (CK_BYTE_PTR)in, in_len, out, &got);
    if (rv == CKR_OK && got > *out_len) rv = CKR_GENERAL_ERROR;
    if (rv == CKR_OK)
        *out_len = got;
    else if (decrypt)
        OPENSSL_cleanse(out, *out_len);
    return rv;
}

HF_PLUGIN_EXPORT CK_RV hf_rsa_oaep_decrypt(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s,
                                           CK_OBJECT_HANDLE key, CK_MECHANISM_TYPE hash,
                                           const unsigned char *in, size_t in_len,
                                           unsigned char *out, size_t *out_len)
{
    return oaep(p11, s, key, hash, true, in, in_len, out, out_len);
}

HF_PLUGIN_EXPORT CK_RV hf_rsa_oaep_encrypt(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s,
                                           CK_OBJECT_HANDLE pub, CK_MECHANISM_TYPE hash,
                                           const unsigned char *in, size_t in_len,
                                           unsigned char *out, size_t *out_len)
{
    return oaep(p11, s, pub, hash, false, in, in_len, out, out_len);
}

/* CKA_MODULUS and CKA_PUBLIC_EXPONENT (the module gives both on private and public RSA
 * objects) on this thread's lookup session, so reading a public key never consumes, or is
 * refused by, a request's context. */
CK_RV hf_gw_rsa_public_read(CK_OBJECT_HANDLE key, unsigned char *n, CK_ULONG *nlen,
                            unsigned char *e, CK_ULONG *elen)
{
    CK_FUNCTION_LIST_PTR p11 = hf_p11_functions();
    CK_ATTRIBUTE a[] = {{CKA_MODULUS, n, *nlen}, {CKA_PUBLIC_EXPONENT, e, *elen}};
    CK_SESSION_HANDLE s;
    CK_RV rv = CKR_CRYPTOKI_NOT_INITIALIZED;

    for (int attempt = 0; p11; attempt++) {
        if ((rv = hf_gw_p11_lookup_session(&s)) != CKR_OK) return rv;
        rv = p11->C_GetAttributeValue(s, key, a, 2);
        if (attempt > 0 || !hf_gw_p11_rv_is_session_lost(rv)) break;
        hf_gw_p11_sessions_drop();
    }
    *nlen = a[0].ulValueLen;
    *elen = a[1].ulValueLen;
    return rv;
}

HF_PLUGIN_EXPORT EVP_PKEY *hf_rsa_public_pkey(CK_OBJECT_HANDLE key)
{
    unsigned char n[RSA_MAX_BYTES], e[16];
    CK_ULONG nlen = sizeof(n), elen = sizeof(e);
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    BIGNUM *bn_n = NULL, *bn_e = NULL;
    EVP_PKEY *pkey = NULL;

    if (hf_gw_rsa_public_read(key, n, &nlen, e, &elen) != CKR_OK || nlen == 0 || elen == 0)
        return NULL;
    if (!(bn_n = BN_bin2bn(n, (int)nlen, NULL)) || !(bn_e = BN_bin2bn(e, (int)elen, NULL)) ||
        !(bld = OSSL_PARAM_BLD_new()) ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) ||
        !(params = OSSL_PARAM_BLD_to_param(bld)) ||
        !(ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) ||
        EVP_PKEY_fromdata_init(ctx) <= 0 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0)
        pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn_n);
    BN_free(bn_e);
    return pkey;
}
