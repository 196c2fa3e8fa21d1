/* The core's cryptography: OpenSSL in a private OSSL_LIB_CTX that holds only the default
 * provider, so a globally loaded Holdfast provider can never route this work back into the
 * module (SoftHSMv2 deadlocks exactly that way).
 *
 * A struct hf_material is one key version's usable material, immutable once made and shared by
 * reference count: an AES key in locked memory, or an RSA/EC private key as an EVP_PKEY of the
 * private library context. The last unref zeroes it.
 *
 * All functions follow the two-call convention where they write: out == NULL sets *outlen to the
 * size needed and returns CKR_OK; a short buffer returns CKR_BUFFER_TOO_SMALL with *outlen set. */
#ifndef HF_CRYPTO_H
#define HF_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <openssl/evp.h>

#include "key.h"

OSSL_LIB_CTX *hf_crypto_libctx(void); /* created once, lives as long as the process */

struct hf_material;

CK_RV hf_material_generate(enum hf_alg alg, unsigned bits, struct hf_material **out);
/* bytes: raw AES key, or PKCS#8 PrivateKeyInfo DER for RSA and EC. bits 0 takes the size the
 * bytes have; otherwise a different size is CKR_KEY_SIZE_RANGE. Undecodable bytes are
 * CKR_DATA_INVALID, a key of another algorithm CKR_KEY_TYPE_INCONSISTENT. */
CK_RV hf_material_from_bytes(enum hf_alg alg, unsigned bits, const unsigned char *bytes, size_t len,
                             struct hf_material **out);
/* An RSA or EC key pair from its components as OSSL_PARAMs (OSSL_PKEY_PARAM_*), checked for
 * consistency: a bad CRT value would make wrong signatures, not errors. Components that make no
 * consistent key pair are CKR_ATTRIBUTE_VALUE_INVALID. */
CK_RV hf_material_from_params(enum hf_alg alg, OSSL_PARAM *params, struct hf_material **out);
/* The inverse of from_bytes, into hf_secmem memory: release with hf_secmem_free(*bytes, *len). */
CK_RV hf_material_to_bytes(const struct hf_material *m, unsigned char **bytes, size_t *len);
/* SubjectPublicKeyInfo DER (RSA, EC); malloc'd. CKR_KEY_TYPE_INCONSISTENT for AES. */
CK_RV hf_material_public_der(const struct hf_material *m, unsigned char **der, size_t *len);
/* The SubjectPublicKeyInfo DER (malloc'd) of the RSA public key (n, e), big-endian bytes as
 * PKCS#11's CKA_MODULUS and CKA_PUBLIC_EXPONENT hold them: a key made in an HSM, which hands out
 * only its components. A modulus of other than bits is CKR_ATTRIBUTE_VALUE_INVALID. */
CK_RV hf_rsa_public_der(const unsigned char *n, size_t nlen, const unsigned char *e, size_t elen,
                        unsigned bits, unsigned char **der, size_t *len);
/* The SubjectPublicKeyInfo DER (malloc'd) of an EC (alg HF_ALG_EC, bits 256, 384, 521) or
 * Ed25519 public key made in an HSM, from its CKA_EC_POINT: the DER OCTET STRING PKCS#11 says, or
 * the bare point (told apart by length). A point that is no such key's is
 * CKR_ATTRIBUTE_VALUE_INVALID. */
CK_RV hf_ec_public_der(enum hf_alg alg, unsigned bits, const unsigned char *point, size_t len,
                       unsigned char **der, size_t *der_len);
struct hf_material *hf_material_ref(struct hf_material *m);
void hf_material_unref(struct hf_material *m);
enum hf_alg hf_material_alg(const struct hf_material *m);
unsigned hf_material_bits(const struct hf_material *m);
/* AES: the raw key (for the module's per-session cipher contexts). NULL for RSA/EC. */
const unsigned char *hf_material_secret(const struct hf_material *m, size_t *len);
/* RSA/EC: the private EVP_PKEY (owned by m). NULL for AES. */
EVP_PKEY *hf_material_pkey(const struct hf_material *m);

/* A public key from SubjectPublicKeyInfo DER (RSA, EC, Ed25519), in the private library context. */
CK_RV hf_public_from_der(const unsigned char *der, size_t len, EVP_PKEY **out);
/* The key model's algorithm (0 for none of ours) and size of an OpenSSL key. */
enum hf_alg hf_pkey_alg(EVP_PKEY *pkey);
unsigned hf_pkey_bits(EVP_PKEY *pkey);

/* Ed25519 (RFC 8032 "pure", no context): one shot, as OpenSSL has no multi-part EdDSA. Sign:
 * two-call convention, 64 bytes; a key of another algorithm is CKR_KEY_TYPE_INCONSISTENT.
 * Verify: CKR_SIGNATURE_LEN_RANGE unless 64 bytes, CKR_SIGNATURE_INVALID when it fails. */
CK_RV hf_ed25519_sign(const struct hf_material *m, const unsigned char *in, size_t inlen,
                      unsigned char *out, size_t *outlen);
CK_RV hf_ed25519_verify(EVP_PKEY *pub, const unsigned char *in, size_t inlen,
                        const unsigned char *sig, size_t siglen);

/* AES-GCM (NIST SP 800-38D). tag is appended to the ciphertext (PKCS#11 convention):
 * *outlen = inlen + taglen. Decrypt checks the tag in constant time: CKR_ENCRYPTED_DATA_INVALID. */
CK_RV hf_aes_gcm_encrypt(const struct hf_material *m, const unsigned char *iv, size_t ivlen,
                         const unsigned char *aad, size_t aadlen, size_t taglen,
                         const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen);
CK_RV hf_aes_gcm_decrypt(const struct hf_material *m, const unsigned char *iv, size_t ivlen,
                         const unsigned char *aad, size_t aadlen, size_t taglen,
                         const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen);
/* AES key wrap: RFC 3394 (pad = false, input a multiple of 8 bytes, >= 16) or RFC 5649
 * (pad = true). Unwrap failures (integrity check) are CKR_WRAPPED_KEY_INVALID. */
CK_RV hf_aes_kw_wrap(const struct hf_material *m, bool pad, const unsigned char *in, size_t inlen,
                     unsigned char *out, size_t *outlen);
CK_RV hf_aes_kw_unwrap(const struct hf_material *m, bool pad, const unsigned char *in, size_t inlen,
                       unsigned char *out, size_t *outlen);

enum hf_rsa_padding { HF_RSA_PKCS1 = 1, HF_RSA_OAEP = 2, HF_RSA_PSS = 3, HF_RSA_RAW = 4 };

/* Parameters of an asymmetric operation. md NULL with a signature means the input is already a
 * digest (CKM_RSA_PKCS takes a DigestInfo or raw data, CKM_ECDSA a hash; for CKM_RSA_PKCS_PSS
 * the digest's hash is taken to be mgf1_md, and the input must be that hash's size). Digest
 * names are OpenSSL's ("SHA256"). */
struct hf_asym_params {
    enum hf_rsa_padding padding; /* RSA only */
    const char *md;              /* hash applied to the input (sign/verify), OAEP hash */
    const char *mgf1_md;         /* OAEP and PSS */
    long pss_saltlen;            /* PSS */
    const unsigned char *label;  /* OAEP label */
    size_t label_len;
    bool ecdsa_der; /* ECDSA sign: X9.62 DER out, not r || s */
};

/* Private-key operations on material (RSA decrypt; RSA and ECDSA sign; ECDSA signatures in the
 * PKCS#11 r||s form unless ecdsa_der asks for DER). */
CK_RV hf_asym_decrypt(const struct hf_material *m, const struct hf_asym_params *p,
                      const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen);
CK_RV hf_asym_sign(const struct hf_material *m, const struct hf_asym_params *p,
                   const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen);
/* An ECDSA signature in PKCS#11's r || s form (each half of rs_len) as X9.62 DER, into out of
 * capacity *outlen (CKR_BUFFER_TOO_SMALL with the size set when short): for a signature an HSM
 * made, which speaks r || s only. */
CK_RV hf_ecdsa_der_from_rs(const unsigned char *rs, size_t rs_len, unsigned char *out,
                           size_t *outlen);
/* Public-key operations: CKR_SIGNATURE_INVALID / CKR_SIGNATURE_LEN_RANGE on a bad signature. */
CK_RV hf_asym_encrypt(EVP_PKEY *pub, const struct hf_asym_params *p, const unsigned char *in,
                      size_t inlen, unsigned char *out, size_t *outlen);
CK_RV hf_asym_verify(EVP_PKEY *pub, const struct hf_asym_params *p, const unsigned char *in,
                     size_t inlen, const unsigned char *sig, size_t siglen);

/* The message in em, the k-byte block an RSA private key gave for an OAEP ciphertext, per p
 * (md, mgf1_md, label): CKR_ENCRYPTED_DATA_INVALID when it is no such block (crypto-oaep.c).
 * out holds *outlen bytes; at most k - 2 * hLen - 2 are written. */
CK_RV hf_rsa_oaep_decode(const struct hf_asym_params *p, const unsigned char *em, size_t k,
                         unsigned char *out, size_t *outlen);

/* Digests by OpenSSL name ("SHA256"); out must hold EVP_MAX_MD_SIZE. */
CK_RV hf_digest(const char *md, const unsigned char *in, size_t inlen, unsigned char *out,
                size_t *outlen);
CK_RV hf_random(unsigned char *out, size_t len);

#endif
