/* The pool key source (issue 14): key material generated inside a member of an HSM pool
 * (pool.h) that never leaves the HSMs in clear. Each version is one token object labelled with
 * the version's UUID (unique, and how any member finds it); the store keeps no material for it,
 * only where it lives (key.h: kek_label).
 *
 * - Plain mode: a key lives on the member that generated it (kek_label "pool:NAME/MEMBER"),
 *   sensitive and never extractable, so its work runs there alone (hf_pool_run_on): that member
 *   out of service is HF_POOL_RV_UNAVAILABLE for its keys, while creation goes to any healthy
 *   member (hf_pool_run, failover included).
 * - Clone mode: a key (an AES key, or an RSA, EC or Ed25519 pair's private key) is generated on
 *   one healthy member and copied to every other by wrap and unwrap under the pool's replication
 *   key (pool-clone.h), so it is on every member (kek_label "pool:NAME", no member) and its work
 *   runs on any healthy member, failover included. Its objects are sensitive but extractable
 *   (the copy is a C_WrapKey: gen_fn says why). A member that was out of service, or lacks a key
 *   when a request lands on it, is re-synced from the store's list of the pool's versions on the
 *   probe thread (core-pool.c), never on a request's; the request itself moves to a member that
 *   has the key.
 * - Export mode: clone mode, and each version is also kept in the store wrapped under the pool's
 *   backup KEK, so an empty token can be re-seeded (holdfast pool restore).
 *
 * AES keys (AES-GCM, -ECB, -CBC, -CBC-PAD, -CTR and -CMAC), RSA keys (decrypt and sign), EC
 * keys (ECDSA) and Ed25519 keys (EdDSA) in every mode, each operation one single-part call in a
 * member, so a failover may repeat it on another. Other mechanisms answer CKR_MECHANISM_INVALID
 * above. An Ed25519 key in a clone or export pool needs members that wrap such keys (SoftHSMv2
 * 2.6 does not: its creation answers CKR_KEY_NOT_WRAPPABLE). */
#ifndef HF_SOURCE_POOL_H
#define HF_SOURCE_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "crypto-sym.h"
#include "crypto.h"
#include "key.h"
#include "pool-clone.h"
#include "pool.h"

/* Generates an AES key of bits inside a healthy member: a token object, sensitive and never
 * extractable, labelled label (the version UUID). *member is the member it was made on. */
CK_RV hf_pool_key_generate(struct hf_pool *pool, unsigned bits, const char *label, size_t *member);

/* The largest RSA modulus a pool key has (RSA-4096), in bytes. */
#define HF_POOL_RSA_MAX_BYTES 512

/* The member argument for a clone-mode key, which is on every member. */
#define HF_POOL_KEY_ANY_MEMBER ((size_t)-1)

/* Generates a key pair of alg (RSA: bits 2048, 3072, 4096, public exponent 65537; EC: P-256,
 * P-384, P-521; Ed25519: 256) inside a healthy member: the private key a token object (class
 * CKO_PRIVATE_KEY, labelled label, sensitive, decrypt and sign only, or sign only for EC and
 * Ed25519); the public key not kept there, but handed out as SubjectPublicKeyInfo DER (*der
 * malloc'd) for the store. repl_label NULL: plain mode, the private key never extractable,
 * *member the member it was made on. Otherwise clone mode, as hf_pool_key_generate_clone:
 * extractable, copied under the replication key repl_label to every other member (those the copy
 * does not reach now marked stale), *member HF_POOL_KEY_ANY_MEMBER. */
CK_RV hf_pool_key_generate_pair(struct hf_pool *pool, enum hf_alg alg, unsigned bits,
                                const char *label, const char *repl_label, size_t *member,
                                unsigned char **der, size_t *der_len);

/* The kind of object a version of a key of alg is on a clone pool's members (AES, RSA, EC or
 * Ed25519). */
enum hf_pool_obj hf_pool_obj_of(enum hf_alg alg);

/* A clone-mode key: generated (sensitive, extractable) on a healthy member, then copied under the
 * replication key repl_label to every other member; a member the copy does not reach now is
 * marked stale (hf_pool_member_stale) for its re-sync. CKR_OK once the key exists on one member;
 * CKR_KEY_NOT_WRAPPABLE (or CKR_KEY_UNEXTRACTABLE) when the member that made it will not wrap it,
 * so no other could ever hold it: nothing is kept then. */
CK_RV hf_pool_key_generate_clone(struct hf_pool *pool, unsigned bits, const char *label,
                                 const char *repl_label);

/* AES-GCM in member with the object labelled label: encrypt (out: ciphertext || tag,
 * inlen + taglen bytes) or decrypt (out: inlen - taglen bytes; a wrong tag is
 * CKR_ENCRYPTED_DATA_INVALID, as the local source answers). *outlen is out's capacity on entry
 * and must hold the whole result (the caller keeps the two-call convention). The object missing
 * from the member is CKR_KEY_HANDLE_INVALID. member HF_POOL_KEY_ANY_MEMBER: on any healthy member
 * that has the object (clone mode, above); CKR_KEY_HANDLE_INVALID only when none has it. */
CK_RV hf_pool_key_gcm(struct hf_pool *pool, size_t member, const char *label, bool encrypt,
                      const unsigned char *iv, size_t ivlen, const unsigned char *aad,
                      size_t aadlen, size_t taglen, const unsigned char *in, size_t inlen,
                      unsigned char *out, size_t *outlen);

/* AES-ECB, -CBC, -CBC-PAD or -CTR with the object labelled label in member (as
 * hf_pool_key_gcm): the member's CKM_AES_ECB, CKM_AES_CBC, CKM_AES_CBC_PAD or CKM_AES_CTR with the
 * same IV, or counter block and counter bits. Arguments and answers as hf_aes_cipher's
 * (crypto-sym.h), checked here before any call (hf_aes_cipher_size), so the member never sees
 * what a local key refuses: out NULL asks for the size (no call); a short buffer is
 * CKR_BUFFER_TOO_SMALL with the size set, for a CBC-PAD decryption the exact one (the member
 * decrypts to learn it); bad CBC-PAD padding is CKR_ENCRYPTED_DATA_INVALID. A member that does
 * not offer the mechanism answers CKR_MECHANISM_INVALID, passed on. */
CK_RV hf_pool_key_aes(struct hf_pool *pool, size_t member, const char *label, enum hf_aes_mode mode,
                      bool enc, const unsigned char *iv, unsigned ctr_bits, const unsigned char *in,
                      size_t inlen, unsigned char *out, size_t *outlen);

/* AES-CMAC of in (HF_AES_BLOCK bytes into out) with the object labelled label in member: the
 * member's CKM_AES_CMAC (C_Sign), so the object needs CKA_SIGN, which hf_pool_key_template gives
 * AES keys; one made before it did answers CKR_KEY_FUNCTION_NOT_PERMITTED. */
CK_RV hf_pool_key_cmac(struct hf_pool *pool, size_t member, const char *label,
                       const unsigned char *in, size_t inlen, unsigned char out[HF_AES_BLOCK]);

/* RSA with the private key labelled label in member: a decryption (sign false) or a signature
 * of in, with p's padding, hashes, salt and label as the local source takes them (crypto.h's
 * hf_asym_params: PKCS#1 v1.5, OAEP, PSS, raw; md NULL signs a digest or a DigestInfo as it is),
 * mapped onto the member's CKM_RSA_* mechanisms. k: the modulus's bytes. out NULL asks for the
 * size (k, an upper bound for a decryption); otherwise *outlen is out's capacity, and a short
 * buffer is CKR_BUFFER_TOO_SMALL with the size set. A ciphertext that does not decrypt is
 * CKR_ENCRYPTED_DATA_INVALID, as the local source answers, and never takes the member out. A
 * token that refuses OAEP with the hash asked for (SoftHSMv2 2.6 takes SHA-1 only) decrypts the
 * block raw and it is decoded here. */
CK_RV hf_pool_key_rsa(struct hf_pool *pool, size_t member, const char *label, bool sign,
                      const struct hf_asym_params *p, size_t k, const unsigned char *in,
                      size_t inlen, unsigned char *out, size_t *outlen);

/* The widest ECDSA coordinate of a pool key (P-521), in bytes, and an Ed25519 signature's size. */
#define HF_POOL_EC_MAX_HALF 66
#define HF_POOL_ED25519_SIG_LEN 64

/* An ECDSA signature of in with the private key labelled label in member, as the local source
 * makes it (crypto.h's hf_asym_sign): md NULL signs in as a hash (CKM_ECDSA), else its hash
 * (CKM_ECDSA_SHA*, or in a token that lacks that mechanism CKM_ECDSA of the hash made here);
 * r || s of half bytes each (the order's size), or X9.62 DER when p->ecdsa_der. out NULL asks
 * for the size (for DER an upper bound); a short buffer is CKR_BUFFER_TOO_SMALL with the size
 * set. */
CK_RV hf_pool_key_ecdsa(struct hf_pool *pool, size_t member, const char *label,
                        const struct hf_asym_params *p, size_t half, const unsigned char *in,
                        size_t inlen, unsigned char *out, size_t *outlen);

/* An Ed25519 signature (RFC 8032 pure, HF_POOL_ED25519_SIG_LEN bytes) of in with the private key
 * labelled label in member: the member's CKM_EDDSA. Two-call convention. */
CK_RV hf_pool_key_eddsa(struct hf_pool *pool, size_t member, const char *label,
                        const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen);

/* ECDH's Z (SEC 1 section 3.3.1: the shared point's x coordinate, zlen bytes, the field's size)
 * of the EC private key labelled label in member and the peer's uncompressed point (04 || x || y,
 * checked by the caller to be on the key's curve): the member's CKM_ECDH1_DERIVE with CKD_NULL
 * into a session object read out and destroyed at once. z: zlen bytes of the caller's (secret
 * memory). A key made before its template said CKA_DERIVE answers CKR_KEY_TYPE_INCONSISTENT or
 * CKR_KEY_FUNCTION_NOT_PERMITTED, as its token says. */
CK_RV hf_pool_key_ecdh(struct hf_pool *pool, size_t member, const char *label,
                       const unsigned char *point, size_t point_len, unsigned char *z, size_t zlen);

/* Destroys the object labelled label on member (HF_POOL_KEY_ANY_MEMBER: on every member it can
 * reach, the first failure answered); CKR_OK when there is none. */
CK_RV hf_pool_key_destroy(struct hf_pool *pool, size_t member, const char *label);

/* For mechanisms served in a file of their own (pool-wrap.c): fn (an hf_pool_fn) run on member,
 * or for HF_POOL_KEY_ANY_MEMBER on any healthy member that holds the key, as hf_pool_key_gcm
 * runs (a member that lacks it skipped and marked stale). *missing is the per-member array that
 * hf_pool_key_use fills, allocated and freed here: fn's argument keeps the pointer. */
CK_RV hf_pool_key_run(struct hf_pool *pool, size_t member, hf_pool_fn fn, void *arg,
                      bool **missing);

/* Inside such an fn: use(f, s, h, arg) on the key of class cls labelled label, h its handle
 * (cached; one the token no longer knows searched for once more, so use answers
 * CKR_KEY_HANDLE_INVALID or CKR_OBJECT_HANDLE_INVALID for it). The member lacking it:
 * CKR_KEY_HANDLE_INVALID, and missing[member] set when missing is not NULL. */
typedef CK_RV (*hf_pool_key_use_fn)(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h,
                                    void *arg);
CK_RV hf_pool_key_use(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                      CK_SESSION_HANDLE s, CK_OBJECT_CLASS cls, const char *label, bool *missing,
                      hf_pool_key_use_fn use, void *arg);

#endif
