/* The AES-256-GCM blob of plugin.h (hf_blob_*): what the gateway's own files and tests need
 * beyond plugin.h. blob.c is the byte layout (pure), blob-gcm.c the GCM through PKCS#11. */
#ifndef HF_GATEWAY_BLOB_H
#define HF_GATEWAY_BLOB_H

#include "gateway/plugin.h"

/* A key UUID's text: 8-4-4-4-12 hex digits. */
#define HF_BLOB_UUID_LEN 36

/* The GCM AAD for (version, api, key_uuid, aad) in a new buffer (free()); NULL when version is
 * 0 or over 32 bits, api is empty or over 255 bytes, key_uuid is not 36 characters, aad_len is
 * over 32 bits, or out of memory. */
unsigned char *hf_blob_aad_new(CK_ULONG version, const char *api, const char *key_uuid,
                               const unsigned char *aad, size_t aad_len, size_t *out_len);
/* The blob's header (format, version, iv) into out; false when version is 0 or over 32 bits. */
bool hf_blob_header(CK_ULONG version, const unsigned char iv[HF_BLOB_IV_LEN],
                    unsigned char out[HF_BLOB_HEADER_LEN]);

#endif /* HF_GATEWAY_BLOB_H */
