/* C_GenerateRandom and C_SeedRandom. The core's DRBG (OpenSSL's, seeded from the kernel) needs
 * no help from callers, and mixing in caller-chosen bytes is what PKCS#11 lets a token refuse. */
#include "hf-build.h"

#include "pkcs11/module/internal.h"

HF_EXPORT CK_RV C_SeedRandom(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSeed, CK_ULONG ulSeedLen)
{
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    hf_session_put(s);
    hf_return_val_if_fail(pSeed != NULL || ulSeedLen == 0, CKR_ARGUMENTS_BAD);
    return CKR_RANDOM_SEED_NOT_SUPPORTED;
}

HF_EXPORT CK_RV C_GenerateRandom(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pRandomData,
                                 CK_ULONG ulRandomLen)
{
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    /* The session lock is not needed for the DRBG: release it before the work. */
    hf_session_put(s);
    if (ulRandomLen == 0) /* pkcs11-tool --test asks for 0 bytes and expects CKR_OK */
        return CKR_OK;
    hf_return_val_if_fail(pRandomData != NULL, CKR_ARGUMENTS_BAD);
    return hf_random(pRandomData, ulRandomLen);
}
