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
