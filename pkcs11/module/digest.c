/* C_Digest*: CKM_SHA_1 .. CKM_SHA512. Not key operations, so no audit record. Multi-part input
 * is collected like the other operations' (pkcs11-tool --test requires every CKF_DIGEST
 * mechanism to be multi-part capable). */
#include "hf-build.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "pkcs11/module/mech.h"

CK_RV hf_mech_digest(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    size_t len = sizeof(md);
    CK_RV rv = hf_mech_out_check(out, outlen, hf_mech_md_size(op->asym_md));

    if (rv != CKR_OK || out == NULL) return rv;
    rv = hf_digest(op->asym_md, in, inlen, md, &len);
    if (rv == CKR_OK) {
        memcpy(out, md, len);
        *outlen = len;
    }
    OPENSSL_cleanse(md, sizeof(md));
    return rv;
}

HF_EXPORT CK_RV C_DigestInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism)
{
    return hf_entry_init(hSession, HF_OP_DIGEST, pMechanism, CK_INVALID_HANDLE);
}

HF_EXPORT CK_RV C_Digest(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen,
                         CK_BYTE_PTR pDigest, CK_ULONG_PTR pulDigestLen)
{
    return hf_entry_oneshot(hSession, HF_OP_DIGEST, pData, ulDataLen, pDigest, pulDigestLen);
}

HF_EXPORT CK_RV C_DigestUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen)
{
    return hf_entry_update(hSession, HF_OP_DIGEST, pPart, ulPartLen, NULL, NULL);
}

/* Digesting a key's value would let anyone holding a handle test guesses of an unexportable
 * key; nothing we serve needs it. */
HF_EXPORT CK_RV C_DigestKey(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hKey)
{
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    hf_session_put(s);
    return CKR_FUNCTION_NOT_SUPPORTED;
}

HF_EXPORT CK_RV C_DigestFinal(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pDigest,
                              CK_ULONG_PTR pulDigestLen)
{
    return hf_entry_final(hSession, HF_OP_DIGEST, pDigest, pulDigestLen);
}
