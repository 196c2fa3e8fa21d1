/* The blob and GCM AAD builders of blob.h: pure byte layout, no crypto. */
#include "hf-build.h"

#include "gateway/plugins/gcp-ekm/blob.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *put_be(unsigned char *p, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
    return p + bytes;
}

static bool version_fits(CK_ULONG version)
{
    return version != 0 && (uint64_t)version <= UINT32_MAX;
}

unsigned char *hf_ekm_aad_new(CK_ULONG version, const char *key_uuid, const unsigned char *aad,
                              size_t aad_len, size_t *out_len)
{
    static const char api[] = HF_EKM_API;
    const size_t api_len = sizeof(api) - 1;
    unsigned char *buf, *p;
    size_t len;

    if (out_len == NULL || !version_fits(version) || key_uuid == NULL ||
        strlen(key_uuid) != HF_EKM_UUID_LEN || (aad == NULL && aad_len != 0) ||
        (uint64_t)aad_len > UINT32_MAX)
        return NULL;
    len = 1 + 4 + 2 + api_len + 2 + HF_EKM_UUID_LEN + 4;
    if (aad_len > SIZE_MAX - len) return NULL;
    len += aad_len;
    if ((buf = malloc(len)) == NULL) return NULL;
    p = buf;
    *p++ = HF_EKM_BLOB_FORMAT;
    p = put_be(p, version, 4);
    p = put_be(p, api_len, 2);
    memcpy(p, api, api_len);
    p = put_be(p + api_len, HF_EKM_UUID_LEN, 2);
    memcpy(p, key_uuid, HF_EKM_UUID_LEN);
    p = put_be(p + HF_EKM_UUID_LEN, aad_len, 4);
    if (aad_len != 0) memcpy(p, aad, aad_len);
    *out_len = len;
    return buf;
}

bool hf_ekm_blob_header(CK_ULONG version, const unsigned char iv[HF_EKM_IV_LEN],
                        unsigned char out[HF_EKM_HEADER_LEN])
{
    if (!version_fits(version) || iv == NULL || out == NULL) return false;
    out[0] = HF_EKM_BLOB_FORMAT;
    put_be(out + 1, version, 4);
    memcpy(out + 5, iv, HF_EKM_IV_LEN);
    return true;
}

bool hf_ekm_blob_parse(const unsigned char *blob, size_t len, struct hf_ekm_blob *out)
{
    CK_ULONG version = 0;

    if (blob == NULL || out == NULL || len < HF_EKM_BLOB_OVERHEAD) return false;
    if (blob[0] != HF_EKM_BLOB_FORMAT) return false;
    for (int i = 1; i <= 4; i++)
        version = (version << 8) | blob[i];
    if (version == 0) return false;
    out->version = version;
    out->iv = blob + 5;
    out->sealed = blob + HF_EKM_HEADER_LEN;
    out->sealed_len = len - HF_EKM_HEADER_LEN;
    return true;
}
