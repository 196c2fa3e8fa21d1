/* plugin.h's blob (specs/google-ekm.md, "Crypto"), its byte layout: the header, the parser and
 * the GCM AAD builder (blob.h), pure, no crypto. */
#include "hf-build.h"

#include "gateway/blob.h"

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

/* The API strings are the gateway's callers' literals ("google-ekm", "gws-cse"): 255 bytes is
 * far over any, and keeps the AAD's BE16 length honest. */
#define API_MAX 255

unsigned char *hf_blob_aad_new(CK_ULONG version, const char *api, const char *key_uuid,
                               const unsigned char *aad, size_t aad_len, size_t *out_len)
{
    unsigned char *buf, *p;
    size_t len, api_len = api ? strlen(api) : 0;

    if (out_len == NULL || !version_fits(version) || api_len == 0 || api_len > API_MAX ||
        key_uuid == NULL || strlen(key_uuid) != HF_BLOB_UUID_LEN || (aad == NULL && aad_len != 0) ||
        (uint64_t)aad_len > UINT32_MAX)
        return NULL;
    len = 1 + 4 + 2 + api_len + 2 + HF_BLOB_UUID_LEN + 4;
    if (aad_len > SIZE_MAX - len) return NULL;
    len += aad_len;
    if ((buf = malloc(len)) == NULL) return NULL;
    p = buf;
    *p++ = HF_BLOB_FORMAT;
    p = put_be(p, version, 4);
    p = put_be(p, api_len, 2);
    memcpy(p, api, api_len);
    p = put_be(p + api_len, HF_BLOB_UUID_LEN, 2);
    memcpy(p, key_uuid, HF_BLOB_UUID_LEN);
    p = put_be(p + HF_BLOB_UUID_LEN, aad_len, 4);
    if (aad_len != 0) memcpy(p, aad, aad_len);
    *out_len = len;
    return buf;
}

bool hf_blob_header(CK_ULONG version, const unsigned char iv[HF_BLOB_IV_LEN],
                    unsigned char out[HF_BLOB_HEADER_LEN])
{
    if (!version_fits(version) || iv == NULL || out == NULL) return false;
    out[0] = HF_BLOB_FORMAT;
    put_be(out + 1, version, 4);
    memcpy(out + 5, iv, HF_BLOB_IV_LEN);
    return true;
}

HF_PLUGIN_EXPORT bool hf_blob_parse(const unsigned char *blob, size_t len, struct hf_blob *out)
{
    CK_ULONG version = 0;

    if (blob == NULL || out == NULL || len < HF_BLOB_OVERHEAD) return false;
    if (blob[0] != HF_BLOB_FORMAT) return false;
    for (int i = 1; i <= 4; i++)
        version = (version << 8) | blob[i];
    if (version == 0) return false;
    out->version = version;
    out->iv = blob + 5;
    out->sealed = blob + HF_BLOB_HEADER_LEN;
    out->sealed_len = len - HF_BLOB_HEADER_LEN;
    return true;
}
