/* The XKS AES-GCM construction through PKCS#11: CKM_AES_GCM with the AAD of gcm.c. The module
 * returns ciphertext || tag and takes the same back, so this file only splits and joins. */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/crypto.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

CK_RV hf_xks_gcm_seal(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                      const unsigned char *iv, const unsigned char *aad, size_t aad_len,
                      const unsigned char *cm, size_t cm_len, const unsigned char *pt,
                      size_t pt_len, unsigned char *ct, unsigned char *tag)
{
    static const unsigned char empty[1];
    unsigned char *full_aad = NULL, *out = NULL;
    size_t full_len = 0;
    CK_ULONG out_len;
    CK_RV rv = CKR_ARGUMENTS_BAD;

    if (p11 == NULL || iv == NULL || tag == NULL || (pt == NULL && pt_len != 0) ||
        (ct == NULL && pt_len != 0) || pt_len > SIZE_MAX - HF_XKS_TAG_LEN)
        goto done;
    rv = CKR_HOST_MEMORY;
    if ((full_aad = hf_xks_gcm_aad_new(aad, aad_len, cm, cm_len, &full_len)) == NULL) goto done;
    if ((out = malloc(pt_len + HF_XKS_TAG_LEN)) == NULL) goto done;
    {
        CK_GCM_PARAMS params = {(CK_BYTE_PTR)iv, HF_XKS_IV_LEN, HF_XKS_IV_LEN * 8,
                                full_aad,        full_len,      HF_XKS_TAG_LEN * 8};
        CK_MECHANISM mech = {CKM_AES_GCM, &params, sizeof(params)};

        rv = p11->C_EncryptInit(s, &mech, key);
        if (rv != CKR_OK) goto done;
    }
    out_len = pt_len + HF_XKS_TAG_LEN;
    /* An empty plaintext still passes a non-NULL buffer: NULL would ask for a size and leave
     * the operation open. */
    rv = p11->C_Encrypt(s, (CK_BYTE_PTR)(pt_len ? pt : empty), pt_len, out, &out_len);
    if (rv != CKR_OK) goto done;
    if (out_len != pt_len + HF_XKS_TAG_LEN) {
        rv = CKR_GENERAL_ERROR;
        goto done;
    }
    if (pt_len != 0) memcpy(ct, out, pt_len);
    memcpy(tag, out + pt_len, HF_XKS_TAG_LEN);
done:
    free(full_aad);
    free(out);
    return rv;
}

CK_RV hf_xks_gcm_open(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                      const unsigned char *iv, size_t iv_len, const unsigned char *aad,
                      size_t aad_len, const unsigned char *cm, size_t cm_len,
                      const unsigned char *ct, size_t ct_len, const unsigned char *tag,
                      unsigned char *pt)
{
    unsigned char *full_aad = NULL, *in = NULL, scratch[1];
    size_t full_len = 0;
    CK_ULONG pt_len = ct_len;
    CK_RV rv = CKR_ARGUMENTS_BAD;

    if (p11 == NULL || iv == NULL || iv_len == 0 || tag == NULL || (ct == NULL && ct_len != 0) ||
        (pt == NULL && ct_len != 0) || ct_len > SIZE_MAX - HF_XKS_TAG_LEN)
        goto done;
    rv = CKR_HOST_MEMORY;
    if ((full_aad = hf_xks_gcm_aad_new(aad, aad_len, cm, cm_len, &full_len)) == NULL) goto done;
    if ((in = malloc(ct_len + HF_XKS_TAG_LEN)) == NULL) goto done;
    if (ct_len != 0) memcpy(in, ct, ct_len);
    memcpy(in + ct_len, tag, HF_XKS_TAG_LEN);
    {
        CK_GCM_PARAMS params = {(CK_BYTE_PTR)iv, iv_len,   iv_len * 8,
                                full_aad,        full_len, HF_XKS_TAG_LEN * 8};
        CK_MECHANISM mech = {CKM_AES_GCM, &params, sizeof(params)};

        rv = p11->C_DecryptInit(s, &mech, key);
        if (rv != CKR_OK) goto done;
    }
    rv = p11->C_Decrypt(s, in, ct_len + HF_XKS_TAG_LEN, ct_len ? pt : scratch, &pt_len);
    if (rv == CKR_OK && pt_len != ct_len) rv = CKR_GENERAL_ERROR;
    if (rv != CKR_OK && ct_len != 0) OPENSSL_cleanse(pt, ct_len);
done:
    free(full_aad);
    free(in);
    return rv;
}
