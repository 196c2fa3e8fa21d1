/* Holdfast's AES-GCM construction for XKS (specs/aws-xks.md, "The AES-GCM construction").
 *
 * Encrypt: a random 96-bit IV, a 128-bit tag, and the GCM AAD
 *     BE16(len(aad)) || aad || U8(len(cm)) || cm
 * where aad is the caller's additionalAuthenticatedData (empty if absent) and cm the
 * ciphertextMetadata Holdfast returns: a format byte and the key version, so rotation works and
 * the format can change later without breaking old ciphertexts.
 *
 * The builders (gcm.c) are pure; hf_xks_gcm_seal/open (crypto.c) run the GCM through PKCS#11
 * (CKM_AES_GCM) on a session and key object the caller chose, so unit tests can drive them over
 * the built module with a known key. */
#ifndef HF_XKS_CRYPTO_H
#define HF_XKS_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>

#include "pkcs11/module/holdfast.h"

#define HF_XKS_IV_LEN 12
#define HF_XKS_TAG_LEN 16
#define HF_XKS_CDIV_LEN 32 /* SHA-256 */
/* ciphertextMetadata format 1: 0x01 || BE32(key version). */
#define HF_XKS_CM_FORMAT_V1 0x01
#define HF_XKS_CM_LEN 5
/* The length fields of the GCM AAD: BE16 for the aad, U8 for the cm. */
#define HF_XKS_AAD_MAX 0xffffu
#define HF_XKS_CM_MAX 0xffu

/* The GCM AAD for (aad, cm) in a new buffer (free()); NULL when a length does not fit its field
 * or out of memory. *out_len gets its length. aad and cm may be NULL when their length is 0. */
unsigned char *hf_xks_gcm_aad_new(const unsigned char *aad, size_t aad_len, const unsigned char *cm,
                                  size_t cm_len, size_t *out_len);

/* ciphertextMetadata for key version (false when the version does not fit 32 bits or is 0). */
bool hf_xks_cm_encode(CK_ULONG version, unsigned char out[HF_XKS_CM_LEN]);
/* The key version a ciphertextMetadata names; false for anything Holdfast did not write. */
bool hf_xks_cm_decode(const unsigned char *cm, size_t cm_len, CK_ULONG *version);

/* ciphertextDataIntegrityValue: SHA-256(aad || cm || iv || ciphertext || tag) (the spec's
 * Appendix C; absent fields are empty). false only if OpenSSL fails. */
bool hf_xks_cdiv(const unsigned char *aad, size_t aad_len, const unsigned char *cm, size_t cm_len,
                 const unsigned char *iv, size_t iv_len, const unsigned char *ct, size_t ct_len,
                 const unsigned char *tag, size_t tag_len, unsigned char out[HF_XKS_CDIV_LEN]);

/* Encrypts pt under key with iv (HF_XKS_IV_LEN bytes) and the construction's AAD: ct gets pt_len
 * bytes, tag HF_XKS_TAG_LEN. One C_EncryptInit + C_Encrypt on session s (the caller's key
 * operation, with whatever request context it attached). */
CK_RV hf_xks_gcm_seal(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                      const unsigned char *iv, const unsigned char *aad, size_t aad_len,
                      const unsigned char *cm, size_t cm_len, const unsigned char *pt,
                      size_t pt_len, unsigned char *ct, unsigned char *tag);

/* Decrypts ct (ct_len bytes) with tag (HF_XKS_TAG_LEN) into pt (ct_len bytes). iv may be 12 or
 * 16 bytes (the spec allows both on decrypt). Failed authentication is the module's
 * CKR_ENCRYPTED_DATA_INVALID, and pt is then cleansed. */
CK_RV hf_xks_gcm_open(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                      const unsigned char *iv, size_t iv_len, const unsigned char *aad,
                      size_t aad_len, const unsigned char *cm, size_t cm_len,
                      const unsigned char *ct, size_t ct_len, const unsigned char *tag,
                      unsigned char *pt);

#endif /* HF_XKS_CRYPTO_H */
