/* plugin.h's blob through PKCS#11: CKM_AES_GCM (hf_gcm_seal, hf_gcm_open) with blob.c's AAD. The
 * module writes C || T and reads the same back, which is exactly the blob after its header, so
 * nothing is copied but the header. */
#include "hf-build.h"

#include "gateway/blob.h"

#include <stdint.h>
#include <stdlib.h>

HF_PLUGIN_EXPORT CK_RV hf_blob_seal(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s,
                                    CK_OBJECT_HANDLE key, CK_ULONG version, const char *api,
                                    const char *key_uuid, const unsigned char iv[HF_BLOB_IV_LEN],
                                    const unsigned char *aad, size_t aad_len,
                                    const unsigned char *pt, size_t pt_len, unsigned char *out)
{
    unsigned char *full_aad;
    size_t full_len = 0;
    CK_RV rv;

    if (p11 == NULL || out == NULL || (pt == NULL && pt_len != 0) ||
        pt_len > SIZE_MAX - HF_BLOB_OVERHEAD || !hf_blob_header(version, iv, out))
        return CKR_ARGUMENTS_BAD;
    if ((full_aad = hf_blob_aad_new(version, api, key_uuid, aad, aad_len, &full_len)) == NULL)
        return CKR_HOST_MEMORY;
    rv = hf_gcm_seal(p11, s, key, iv, full_aad, full_len, pt, pt_len, out + HF_BLOB_HEADER_LEN);
    free(full_aad);
    return rv;
}

HF_PLUGIN_EXPORT CK_RV hf_blob_open(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s,
                                    CK_OBJECT_HANDLE key, const char *api, const char *key_uuid,
                                    const struct hf_blob *blob, const unsigned char *aad,
                                    size_t aad_len, unsigned char *pt)
{
    unsigned char *full_aad;
    size_t full_len = 0;
    CK_RV rv;

    if (p11 == NULL || blob == NULL || blob->sealed_len < HF_BLOB_TAG_LEN) return CKR_ARGUMENTS_BAD;
    full_aad = hf_blob_aad_new(blob->version, api, key_uuid, aad, aad_len, &full_len);
    if (full_aad == NULL) return CKR_HOST_MEMORY;
    rv = hf_gcm_open(p11, s, key, blob->iv, full_aad, full_len, blob->sealed, blob->sealed_len, pt);
    free(full_aad);
    return rv;
}
