/* Holdfast's wrapped blob for Cloud EKM (specs/google-ekm.md, "Crypto"); Google never parses it.
 *
 *   wrappedBlob = 0x01 || BE32(version) || IV(12) || C || T(16)
 *   GCM AAD     = 0x01 || BE32(version) || BE16(len api) || api || BE16(len name) || name
 *                 || BE32(len aad) || aad
 *
 * with api "google-ekm", name the Holdfast key's UUID (names change, UUIDs never) and aad the
 * request's additionalAuthenticatedData. The version sits in both, so a blob cannot be moved to
 * another version of the same key, nor to another key, nor to another API using the same key.
 *
 * The builders (blob.c) are pure; hf_ekm_gcm_seal/open (crypto.c) run CKM_AES_GCM on a session
 * and key object the caller chose, so unit tests drive them over the built module too. */
#ifndef HF_EKM_BLOB_H
#define HF_EKM_BLOB_H

#include <stdbool.h>
#include <stddef.h>

#include "pkcs11/module/holdfast.h"

#define HF_EKM_BLOB_FORMAT 0x01
#define HF_EKM_IV_LEN 12
#define HF_EKM_TAG_LEN 16
#define HF_EKM_HEADER_LEN (1 + 4 + HF_EKM_IV_LEN)
#define HF_EKM_BLOB_OVERHEAD (HF_EKM_HEADER_LEN + HF_EKM_TAG_LEN) /* 33 */
#define HF_EKM_API "google-ekm"
#define HF_EKM_UUID_LEN 36

/* A blob's parts, pointing into the blob. */
struct hf_ekm_blob {
    CK_ULONG version;
    const unsigned char *iv;     /* HF_EKM_IV_LEN bytes */
    const unsigned char *sealed; /* C || T: what CKM_AES_GCM decrypts */
    size_t sealed_len;           /* ct_len + HF_EKM_TAG_LEN */
};

/* The GCM AAD for (version, key_uuid, aad) in a new buffer (free()); NULL when version is 0 or
 * over 32 bits, key_uuid is not 36 characters, aad_len over 32 bits, or out of memory. */
unsigned char *hf_ekm_aad_new(CK_ULONG version, const char *key_uuid, const unsigned char *aad,
                              size_t aad_len, size_t *out_len);
/* The blob's header (format, version, iv) into out; false when version is 0 or over 32 bits. */
bool hf_ekm_blob_header(CK_ULONG version, const unsigned char iv[HF_EKM_IV_LEN],
                        unsigned char out[HF_EKM_HEADER_LEN]);
/* Splits a blob; false for an unknown format byte, a version 0 or a blob shorter than
 * HF_EKM_BLOB_OVERHEAD (the spec: fail closed). */
bool hf_ekm_blob_parse(const unsigned char *blob, size_t len, struct hf_ekm_blob *out);

/* Seals pt: out gets HF_EKM_HEADER_LEN + pt_len + HF_EKM_TAG_LEN bytes, the whole blob. One
 * C_EncryptInit + C_Encrypt on session s (the caller's key operation). */
CK_RV hf_ekm_gcm_seal(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                      CK_ULONG version, const char *key_uuid, const unsigned char iv[HF_EKM_IV_LEN],
                      const unsigned char *aad, size_t aad_len, const unsigned char *pt,
                      size_t pt_len, unsigned char *out);
/* Opens a parsed blob into pt (blob->sealed_len - HF_EKM_TAG_LEN bytes; cleansed on failure).
 * A failed tag is the module's CKR_ENCRYPTED_DATA_INVALID. */
CK_RV hf_ekm_gcm_open(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                      const char *key_uuid, const struct hf_ekm_blob *blob,
                      const unsigned char *aad, size_t aad_len, unsigned char *pt);

#endif /* HF_EKM_BLOB_H */
