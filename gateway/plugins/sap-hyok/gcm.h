/* AES-256-GCM as SAP HYOK carries it (specs/sap-hyok.md, "Crypto"): ciphertext, iv and tag as
 * separate members, a 96-bit IV, a 128-bit tag, and the decoded aad as the whole AAD (the
 * spec's Decision: the caller keeps iv, tag and key_version_id itself, so nothing else is
 * bound). One key operation each, over plugin.h's hf_gcm_seal/open, on session s from
 * hf_p11_begin. */
#ifndef HF_SAP_GCM_H
#define HF_SAP_GCM_H

#include <stddef.h>

#include "gateway/plugin.h"

#define HF_SAP_IV_LEN 12u
#define HF_SAP_TAG_LEN 16u

/* ct gets len bytes, tag HF_SAP_TAG_LEN. aad may be NULL when aad_len is 0. */
CK_RV hf_sap_gcm_seal(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                      const unsigned char iv[HF_SAP_IV_LEN], const unsigned char *aad,
                      size_t aad_len, const unsigned char *pt, size_t len, unsigned char *ct,
                      unsigned char tag[HF_SAP_TAG_LEN]);
/* pt gets len bytes (cleansed on failure); a failed tag is CKR_ENCRYPTED_DATA_INVALID. */
CK_RV hf_sap_gcm_open(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                      const unsigned char iv[HF_SAP_IV_LEN], const unsigned char *aad,
                      size_t aad_len, const unsigned char *ct, size_t len,
                      const unsigned char tag[HF_SAP_TAG_LEN], unsigned char *pt);

#endif /* HF_SAP_GCM_H */
