/* The core's symmetric block modes and MACs beyond GCM and key wrap: AES-ECB/CBC/CBC-PAD/CTR
 * (NIST SP 800-38A), AES-CMAC (SP 800-38B, RFC 4493) and HMAC (RFC 2104), all through OpenSSL
 * EVP in the core's private library context (crypto.h). One-shot: the module collects a
 * multi-part operation's input and calls these once.
 *
 * Two-call convention as in crypto.h: out == NULL sets *outlen to the size needed (for CBC-PAD
 * decryption an upper bound, which PKCS#11 allows) and returns CKR_OK. */
#ifndef HF_CRYPTO_SYM_H
#define HF_CRYPTO_SYM_H

#include <stdbool.h>
#include <stddef.h>

#include "crypto.h"

#define HF_AES_BLOCK 16

enum hf_aes_mode { HF_AES_ECB = 1, HF_AES_CBC, HF_AES_CBC_PAD, HF_AES_CTR };

/* iv: HF_AES_BLOCK bytes for CBC (the IV) and CTR (the initial counter block), NULL for ECB.
 * ctr_bits (CTR only, 1..128): the low bits of the block that count; input that would carry
 * out of them is CKR_DATA_LEN_RANGE rather than a silent reuse of counter values. ECB and CBC
 * take whole blocks (CKR_DATA_LEN_RANGE / CKR_ENCRYPTED_DATA_LEN_RANGE otherwise); bad CBC-PAD
 * padding is CKR_ENCRYPTED_DATA_INVALID. */
CK_RV hf_aes_cipher(const struct hf_material *m, enum hf_aes_mode mode, bool enc,
                    const unsigned char *iv, unsigned ctr_bits, const unsigned char *in,
                    size_t inlen, unsigned char *out, size_t *outlen);

/* What hf_aes_cipher checks before any work (parameters, lengths, the counter's range), with the
 * same answers, and the size it needs in *need: for a key whose work runs elsewhere (a pool
 * member, source-pool.h), which must answer as a local key does. */
CK_RV hf_aes_cipher_size(enum hf_aes_mode mode, bool enc, const unsigned char *iv,
                         unsigned ctr_bits, size_t inlen, size_t *need);

/* AES-CMAC of in: HF_AES_BLOCK bytes into out. */
CK_RV hf_aes_cmac(const struct hf_material *m, const unsigned char *in, size_t inlen,
                  unsigned char out[HF_AES_BLOCK]);

/* HMAC with digest md (OpenSSL name, "SHA256") keyed by a generic secret (or AES) key; out must
 * hold EVP_MAX_MD_SIZE, *outlen gets the digest size. */
CK_RV hf_hmac(const struct hf_material *m, const char *md, const unsigned char *in, size_t inlen,
              unsigned char *out, size_t *outlen);

#endif
