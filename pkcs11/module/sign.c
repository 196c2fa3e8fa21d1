/* C_Sign* and C_Verify*: thin over entry.c, which owns the operation rules. */
#include "hf-build.h"

#include "pkcs11/module/mech.h"

HF_EXPORT CK_RV C_SignInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                           CK_OBJECT_HANDLE hKey)
{
    return hf_entry_init(hSession, HF_OP_SIGN, pMechanism, hKey);
}

HF_EXPORT CK_RV C_Sign(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen,
                       CK_BYTE_PTR pSignature, CK_ULONG_PTR pulSignatureLen)
{
    return hf_entry_oneshot(hSession, HF_OP_SIGN, pData, ulDataLen, pSignature, pulSignatureLen);
}

HF_EXPORT CK_RV C_SignUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen)
{
    return hf_entry_update(hSession, HF_OP_SIGN, pPart, ulPartLen, NULL, NULL);
}

HF_EXPORT CK_RV C_SignFinal(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSignature,
                            CK_ULONG_PTR pulSignatureLen)
{
    return hf_entry_final(hSession, HF_OP_SIGN, pSignature, pulSignatureLen);
}

HF_EXPORT CK_RV C_VerifyInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                             CK_OBJECT_HANDLE hKey)
{
    return hf_entry_init(hSession, HF_OP_VERIFY, pMechanism, hKey);
}

HF_EXPORT CK_RV C_Verify(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen,
                         CK_BYTE_PTR pSignature, CK_ULONG ulSignatureLen)
{
    return hf_entry_verify(hSession, pData, ulDataLen, pSignature, ulSignatureLen, false);
}

HF_EXPORT CK_RV C_VerifyUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen)
{
    return hf_entry_update(hSession, HF_OP_VERIFY, pPart, ulPartLen, NULL, NULL);
}

HF_EXPORT CK_RV C_VerifyFinal(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSignature,
                              CK_ULONG ulSignatureLen)
{
    return hf_entry_verify(hSession, NULL, 0, pSignature, ulSignatureLen, true);
}
