/* plugin.h's blob through PKCS#11: CKM_AES_GCM with blob.c's AAD. The module writes C || T and
 * reads the same back, which is exactly the blob after its header, so nothing is copied but
 * the header. */
#include "hf-build.h"

#include "gateway/blob.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

static void gcm_params(CK_GCM_PARAMS *params, const unsigned char *iv, unsigned char *aad,
                       size_t aad_len)
{
    memset(params, 0, sizeof(*params));
    params->pIv = (CK_BYTE_PTR)iv;
    params->ulIvLen = HF_BLOB_IV_LEN;
    params->ulIvBits = HF_BLOB_IV_LEN * 8;
    params->pAAD = aad;
    params->ulAADLen = aad_len;
    params->ulTagBits = HF_BLOB_TAG_LEN * 8;
}

HF_PLUGIN_EXPORT CK_RV hf_blob_seal(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s,
                                    CK_OBJECT_HANDLE key, CK_ULONG version, const char *api,
                                    const char *key_uuid, const unsigned char iv[HF_BLOB_IV_LEN],
                                    const unsigned char *aad, size_t aad_len,
                                    const unsigned char *pt, size_t pt_len, unsigned char *out)
{
    static const unsigned char empty[1];
    unsigned char *full_aad = NULL;
    size_t full_len = 0;
    CK_ULONG sealed_len = pt_len + HF_BLOB_TAG_LEN;
    CK_GCM_PARAMS params;
    CK_MECHANISM mech = {CKM_AES_GCM, &params, sizeof(params)};
    CK_RV rv = CKR_ARGUMENTS_BAD;

    if (p11 == NULL || out == NULL || (pt == NULL && pt_len != 0) ||
        pt_len > SIZE_MAX - HF_BLOB_OVERHEAD || !hf_blob_header(version, iv, out))
        goto done;
    rv = CKR_HOST_MEMORY;
    if ((full_aad = hf_blob_aad_new(version, api, key_uuid, aad, aad_len, &full_len)) == NULL)
        goto done;
    gcm_params(&params, iv, full_aad, full_len);
    if ((rv = p11->C_EncryptInit(s, &mech, key)) != CKR_OK) goto done;
    /* A NULL input would ask for the size and leave the operation open. */
    rv = p11->C_Encrypt(s, (CK_BYTE_PTR)(pt_len ? pt : empty), pt_len, out + HF_BLOB_HEADER_LEN,
                        &sealed_len);
    if (rv == CKR_OK && sealed_len != pt_len + HF_BLOB_TAG_LEN) rv = CKR_GENERAL_ERROR;
done:
    free(full_aad);
    return rv;
}

HF_PLUGIN_EXPORT CK_RV hf_blob_open(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s,
                                    CK_OBJECT_HANDLE key, const char *api, const char *key_uuid,
                                    const struct hf_blob *blob, const unsigned char *aad,
                                    size_t aad_len, unsigned char *pt)
{
    unsigned char *full_aad = NULL, scratch[1];
    size_t full_len = 0, pt_len;
    CK_ULONG got;
    CK_GCM_PARAMS params;
    CK_MECHANISM mech = {CKM_AES_GCM, &params, sizeof(params)};
    CK_RV rv = CKR_ARGUMENTS_BAD;

    if (p11 == NULL || blob == NULL || blob->sealed_len < HF_BLOB_TAG_LEN) goto done;
    pt_len = blob->sealed_len - HF_BLOB_TAG_LEN;
    if (pt == NULL && pt_len != 0) goto done;
    rv = CKR_HOST_MEMORY;
    full_aad = hf_blob_aad_new(blob->version, api, key_uuid, aad, aad_len, &full_len);
    if (full_aad == NULL) goto done;
    gcm_params(&params, blob->iv, full_aad, full_len);
    if ((rv = p11->C_DecryptInit(s, &mech, key)) != CKR_OK) goto done;
    got = pt_len;
    rv =
        p11->C_Decrypt(s, (CK_BYTE_PTR)blob->sealed, blob->sealed_len, pt_len ? pt : scratch, &got);
    if (rv == CKR_OK && got != pt_len) rv = CKR_GENERAL_ERROR;
    if (rv != CKR_OK && pt_len != 0) OPENSSL_cleanse(pt, pt_len);
done:
    free(full_aad);
    return rv;
}
