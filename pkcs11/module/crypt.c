/* C_Encrypt* and C_Decrypt*: thin over entry.c, which owns the operation rules. */
#include "hf-build.h"

#include "pkcs11/module/mech.h"

HF_EXPORT CK_RV C_EncryptInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                              CK_OBJECT_HANDLE hKey)
{
    return hf_entry_init(hSession, HF_OP_ENCRYPT, pMechanism, hKey);
}

HF_EXPORT CK_RV C_Encrypt(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen,
                          CK_BYTE_PTR pEncryptedData, CK_ULONG_PTR pulEncryptedDataLen)
{
    return hf_entry_oneshot(hSession, HF_OP_ENCRYPT, pData, ulDataLen, pEncryptedData,
                            pulEncryptedDataLen);
}

HF_EXPORT CK_RV C_EncryptUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen,
                                CK_BYTE_PTR pEncryptedPart, CK_ULONG_PTR pulEncryptedPartLen)
{
    return hf_entry_update(hSession, HF_OP_ENCRYPT, pPart, ulPartLen, pEncryptedPart,
                           pulEncryptedPartLen);
}

HF_EXPORT CK_RV C_EncryptFinal(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pLastEncryptedPart,
                               CK_ULONG_PTR pulLastEncryptedPartLen)
{
    return hf_entry_final(hSession, HF_OP_ENCRYPT, pLastEncryptedPart, pulLastEncryptedPartLen);
}

HF_EXPORT CK_RV C_DecryptInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                              CK_OBJECT_HANDLE hKey)
{
    return hf_entry_init(hSession, HF_OP_DECRYPT, pMechanism, hKey);
}

HF_EXPORT CK_RV C_Decrypt(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pEncryptedData,
                          CK_ULONG ulEncryptedDataLen, CK_BYTE_PTR pData, CK_ULONG_PTR pulDataLen)
{
    return hf_entry_oneshot(hSession, HF_OP_DECRYPT, pEncryptedData, ulEncryptedDataLen, pData,
                            pulDataLen);
}

HF_EXPORT CK_RV C_DecryptUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pEncryptedPart,
                                CK_ULONG ulEncryptedPartLen, CK_BYTE_PTR pPart,
                                CK_ULONG_PTR pulPartLen)
{
    return hf_entry_update(hSession, HF_OP_DECRYPT, pEncryptedPart, ulEncryptedPartLen, pPart,
                           pulPartLen);
}

HF_EXPORT CK_RV C_DecryptFinal(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pLastPart,
                               CK_ULONG_PTR pulLastPartLen)
{
    return hf_entry_final(hSession, HF_OP_DECRYPT, pLastPart, pulLastPartLen);
}
