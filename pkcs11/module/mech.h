/* Shared by the mechanism files (mech*.c) and the cryptographic entry points (crypt.c, sign.c,
 * digest.c, wrap.c, entry.c) only. internal.h holds the contract with the rest of the module;
 * this holds what the crypto half needs between its own files. */
#ifndef HF_MODULE_MECH_H
#define HF_MODULE_MECH_H

#include "internal.h"
#include "pkcs11/core/crypto-sym.h"

/* Largest RSA modulus we handle (RSA-4096), for stack buffers on the RSA paths. */
#define HF_RSA_MAX_BYTES 512

/* What a mechanism is for, beyond its CK_MECHANISM_INFO. */
enum hf_mech_family {
    HF_FAMILY_KEYGEN = 1,
    HF_FAMILY_AES_GCM,
    HF_FAMILY_AES_KW,
    HF_FAMILY_RSA,
    HF_FAMILY_ECDSA,
    HF_FAMILY_DIGEST,
    HF_FAMILY_AES,   /* ECB, CBC, CBC_PAD, CTR */
    HF_FAMILY_MAC,   /* CMAC */
    HF_FAMILY_HMAC,  /* HMAC on generic secrets */
    HF_FAMILY_EDDSA, /* Ed25519, single-part only */
    /* C_DeriveKey only (derive.c) */
    HF_FAMILY_DERIVE,
};

enum hf_mech_family hf_mech_family(CK_MECHANISM_TYPE type);
/* OpenSSL digest name ("SHA256") of a CKM_SHA* digest mechanism, a CKM_*_RSA_PKCS(_PSS) or
 * CKM_ECDSA_SHA* mechanism, or a CKG_MGF1_* constant (mgf != 0); NULL for none. *len (may be
 * NULL) gets the digest size. */
const char *hf_mech_hash_md(CK_MECHANISM_TYPE type, size_t *len);
const char *hf_mech_mgf1_md(CK_ULONG mgf);
/* Output size of one of the digest names above; 0 for NULL or an unknown name. */
size_t hf_mech_md_size(const char *md);

/* hf_mech_op_init with the capability flag (CKF_ENCRYPT, CKF_WRAP, ...) and the usage bit
 * (HF_USAGE_*) given rather than derived from kind: C_WrapKey runs an encrypt-kind op checked
 * for CKF_WRAP and HF_USAGE_WRAP. On failure op is left reset. */
CK_RV hf_mech_op_prepare(struct hf_op *op, enum hf_op_kind kind, CK_FLAGS flag, unsigned long usage,
                         const CK_MECHANISM *mech, struct hf_object *obj);

/* Two-call convention for a known output size: CKR_OK with *outlen = need when out is NULL
 * (the caller then returns at once), CKR_BUFFER_TOO_SMALL when *outlen < need. */
CK_RV hf_mech_out_check(const unsigned char *out, size_t *outlen, size_t need);

/* Per-family work, called through hf_mech_op_init / hf_mech_encrypt & co. (mech.c). The init
 * functions only parse parameters: mech.c has checked the key type and usage. */
CK_RV hf_gcm_init(struct hf_op *op, const CK_MECHANISM *mech);
CK_RV hf_gcm_encrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen);
CK_RV hf_gcm_decrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen);

CK_RV hf_kw_init(struct hf_op *op, const CK_MECHANISM *mech);
CK_RV hf_kw_encrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                    size_t *outlen);
CK_RV hf_kw_decrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                    size_t *outlen);

CK_RV hf_aes_init(struct hf_op *op, const CK_MECHANISM *mech);
CK_RV hf_aes_encrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen);
CK_RV hf_aes_decrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen);

CK_RV hf_mac_init(struct hf_op *op, const CK_MECHANISM *mech);
CK_RV hf_mac_sign(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                  size_t *outlen);
CK_RV hf_mac_verify(struct hf_op *op, const unsigned char *in, size_t inlen,
                    const unsigned char *sig, size_t siglen);

CK_RV hf_rsa_init(struct hf_op *op, const CK_MECHANISM *mech);
CK_RV hf_rsa_encrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen);
CK_RV hf_rsa_decrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen);
CK_RV hf_rsa_sign(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                  size_t *outlen);
CK_RV hf_rsa_verify(struct hf_op *op, const unsigned char *in, size_t inlen,
                    const unsigned char *sig, size_t siglen);

CK_RV hf_ecdsa_init(struct hf_op *op, const CK_MECHANISM *mech);
CK_RV hf_ecdsa_sign(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                    size_t *outlen);
CK_RV hf_ecdsa_verify(struct hf_op *op, const unsigned char *in, size_t inlen,
                      const unsigned char *sig, size_t siglen);

CK_RV hf_eddsa_init(struct hf_op *op, const CK_MECHANISM *mech);
CK_RV hf_eddsa_sign(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                    size_t *outlen);
CK_RV hf_eddsa_verify(struct hf_op *op, const unsigned char *in, size_t inlen,
                      const unsigned char *sig, size_t siglen);
/* Whether type has no multi-part form (PKCS#11 3.0 lists CKM_EDDSA as single-part only). */
bool hf_mech_is_single_part(CK_MECHANISM_TYPE type);

/* Digests (digest.c): op->asym_md names the hash. Two-call convention. */
CK_RV hf_mech_digest(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen);

/* The shared bodies of the C_* entry points (entry.c). They find and lock the session, enforce
 * the operation state (CKR_OPERATION_ACTIVE / CKR_OPERATION_NOT_INITIALIZED), keep the two-call
 * convention (a size query or a short buffer leaves the operation active; any other result ends
 * it), write the audit record of a finished key operation and withhold its output when that
 * record cannot be written. */
CK_RV hf_entry_init(CK_SESSION_HANDLE hs, enum hf_op_kind kind, CK_MECHANISM_PTR mech,
                    CK_OBJECT_HANDLE key);
CK_RV hf_entry_oneshot(CK_SESSION_HANDLE hs, enum hf_op_kind kind, const unsigned char *in,
                       CK_ULONG inlen, unsigned char *out, CK_ULONG_PTR outlen);
/* outlen NULL for the updates that produce no output (sign, verify, digest). */
CK_RV hf_entry_update(CK_SESSION_HANDLE hs, enum hf_op_kind kind, const unsigned char *in,
                      CK_ULONG inlen, unsigned char *out, CK_ULONG_PTR outlen);
CK_RV hf_entry_final(CK_SESSION_HANDLE hs, enum hf_op_kind kind, unsigned char *out,
                     CK_ULONG_PTR outlen);
/* C_Verify (in != NULL or inlen == 0, final false) and C_VerifyFinal (final true). */
CK_RV hf_entry_verify(CK_SESSION_HANDLE hs, const unsigned char *in, CK_ULONG inlen,
                      const unsigned char *sig, CK_ULONG siglen, bool final);
/* rv, after recording it when a key operation failed to start on a key the caller could name
 * (obj != NULL), or on a blocked link; CKR_HF_AUDIT_FAILED when that record cannot be
 * written. */
CK_RV hf_entry_refusal(struct hf_session *s, const char *operation, const struct hf_object *obj,
                       CK_MECHANISM_TYPE mech, CK_RV rv);
/* The audit operation name of kind ("encrypt", ...). */
const char *hf_entry_op_name(enum hf_op_kind kind);

/* Key derivation (mech-ecdh.c, mech-hkdf.c), called by derive.c once the base key's type and its
 * derive usage are checked. want: the CKA_VALUE_LEN asked for, 0 for the mechanism's own length
 * (CKR_TEMPLATE_INCOMPLETE where it has none). *out: hf_secmem memory of *outlen bytes. */
CK_RV hf_ecdh_derive(struct hf_object *base, const CK_MECHANISM *mech, size_t want,
                     unsigned char **out, size_t *outlen);
CK_RV hf_hkdf_derive(struct hf_session *s, struct hf_object *base, const CK_MECHANISM *mech,
                     size_t want, unsigned char **out, size_t *outlen);

#endif
