/* SAP HYOK's AES-GCM layout over plugin.h's C || T (gcm.h). */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/gcm.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

CK_RV hf_sap_gcm_seal(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                      const unsigned char iv[HF_SAP_IV_LEN], const unsigned char *aad,
                      size_t aad_len, const unsigned char *pt, size_t len, unsigned char *ct,
                      unsigned char tag[HF_SAP_TAG_LEN])
{
    unsigned char *sealed;
    CK_RV rv;

    if (len > SIZE_MAX - HF_SAP_TAG_LEN) return CKR_DATA_LEN_RANGE;
    if ((sealed = malloc(len + HF_SAP_TAG_LEN)) == NULL) return CKR_HOST_MEMORY;
    rv = hf_gcm_seal(p11, s, key, iv, aad_len ? aad : NULL, aad_len, pt, len, sealed);
    if (rv == CKR_OK) {
        memcpy(ct, sealed, len);
        memcpy(tag, sealed + len, HF_SAP_TAG_LEN);
    }
    free(sealed);
    return rv;
}

CK_RV hf_sap_gcm_open(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                      const unsigned char iv[HF_SAP_IV_LEN], const unsigned char *aad,
                      size_t aad_len, const unsigned char *ct, size_t len,
                      const unsigned char tag[HF_SAP_TAG_LEN], unsigned char *pt)
{
    unsigned char *sealed;
    CK_RV rv;

    if (len > SIZE_MAX - HF_SAP_TAG_LEN) return CKR_ENCRYPTED_DATA_LEN_RANGE;
    if ((sealed = malloc(len + HF_SAP_TAG_LEN)) == NULL) return CKR_HOST_MEMORY;
    memcpy(sealed, ct, len);
    memcpy(sealed + len, tag, HF_SAP_TAG_LEN);
    rv = hf_gcm_open(p11, s, key, iv, aad_len ? aad : NULL, aad_len, sealed, len + HF_SAP_TAG_LEN,
                     pt);
    free(sealed); /* ciphertext and tag: nothing secret */
    return rv;
}
