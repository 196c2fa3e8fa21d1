/* The few PKCS#11 3.0 definitions Holdfast needs on top of p11-kit's 2.40 header.
 *
 * Debian 12 ships p11-kit 0.24, whose <p11-kit/pkcs11.h> stops at 2.40. The values below are
 * those of the OASIS PKCS#11 v3.0 standard (pkcs11t.h / pkcs11f.h), so a newer header that already
 * has them wins through the #ifndef guards. */
#ifndef HF_PKCS11_COMPAT_H
#define HF_PKCS11_COMPAT_H

#include <p11-kit/pkcs11.h>

#ifndef CKM_AES_KEY_WRAP_KWP
#define CKM_AES_KEY_WRAP_KWP (0x210bUL) /* RFC 5649 key wrap with padding */
#endif

/* HKDF (PKCS#11 3.0 section 2.43). */
#ifndef CKM_HKDF_DERIVE
#define CKM_HKDF_DERIVE (0x402aUL)
#define CKM_HKDF_DATA (0x402bUL)
#define CKM_HKDF_KEY_GEN (0x402cUL)
#endif
#ifndef CKK_HKDF
#define CKK_HKDF (0x42UL)
#endif
#ifndef CKF_HKDF_SALT_NULL
#define CKF_HKDF_SALT_NULL (0x00000001UL)
#define CKF_HKDF_SALT_DATA (0x00000002UL)
#define CKF_HKDF_SALT_KEY (0x00000004UL)

typedef struct CK_HKDF_PARAMS {
    CK_BBOOL bExtract;
    CK_BBOOL bExpand;
    CK_MECHANISM_TYPE prfHashMechanism;
    CK_ULONG ulSaltType;
    CK_BYTE_PTR pSalt;
    CK_ULONG ulSaltLen;
    CK_OBJECT_HANDLE hSaltKey;
    CK_BYTE_PTR pInfo;
    CK_ULONG ulInfoLen;
} CK_HKDF_PARAMS;
typedef CK_HKDF_PARAMS *CK_HKDF_PARAMS_PTR;
#endif

/* CKM_EDDSA's parameter (PKCS#11 3.0 section 2.3.14); p11-kit 0.24 has the mechanism, not this. */
#ifndef CKF_EDDSA_PARAMS_DEFINED
#define CKF_EDDSA_PARAMS_DEFINED
typedef struct CK_EDDSA_PARAMS {
    CK_BBOOL phFlag;
    CK_ULONG ulContextDataLen;
    CK_BYTE_PTR pContextData;
} CK_EDDSA_PARAMS;
typedef CK_EDDSA_PARAMS *CK_EDDSA_PARAMS_PTR;
#endif

#ifndef CKR_OPERATION_CANCEL_FAILED
#define CKR_OPERATION_CANCEL_FAILED (0x202UL)
#endif

#ifndef CKF_INTERFACE_FORK_SAFE
#define CKF_INTERFACE_FORK_SAFE (0x00000001UL)

typedef struct CK_INTERFACE {
    CK_CHAR *pInterfaceName;
    CK_VOID_PTR pFunctionList;
    CK_FLAGS flags;
} CK_INTERFACE;
typedef CK_INTERFACE *CK_INTERFACE_PTR;
typedef CK_INTERFACE_PTR *CK_INTERFACE_PTR_PTR;

typedef CK_RV (*CK_C_GetInterfaceList)(CK_INTERFACE_PTR pInterfacesList, CK_ULONG_PTR pulCount);
typedef CK_RV (*CK_C_GetInterface)(CK_UTF8CHAR_PTR pInterfaceName, CK_VERSION_PTR pVersion,
                                   CK_INTERFACE_PTR_PTR ppInterface, CK_FLAGS flags);
#endif

#endif /* HF_PKCS11_COMPAT_H */
