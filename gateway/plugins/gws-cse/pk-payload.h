/* The Gmail wrapped private key (specs/gws-cse.md "Stage 2", Decision): Google keeps it as an
 * opaque string and hands it back with each privatekeydecrypt or privatekeysign.
 *
 *   wrapped_private_key = hf_blob (api HF_CSE_API_PK "gws-cse-pk", empty caller aad) over
 *   payload             = BE16(len der) || der || BE16(len perimeter_id) || perimeter_id
 *
 * (payload.h's fields, as the wrapped_key's)
 *
 * with der the key's PKCS#8 PrivateKeyInfo. The spec caps wrapped_private_key at 8 KB, so the
 * payload is at most 8192 - HF_BLOB_OVERHEAD bytes and a BE16 length holds any PKCS#8 that can
 * fit, an RSA-4096 key with attributes up to 8 KB included (a bare one is about 2.4 KB); the
 * perimeter_id sits inside the seal, so a blob cannot be moved to another perimeter.
 *
 * Pure (no PKCS#11): the payload's layout, the PKCS#8 rules, the SPKI hash. */
#ifndef HF_CSE_PK_PAYLOAD_H
#define HF_CSE_PK_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/evp.h>

#include "gateway/plugin.h"

#define HF_CSE_PK_WRAPPED_MAX 8192 /* the spec's cap on wrapped_private_key, bytes */
#define HF_CSE_PK_PAYLOAD_MAX (HF_CSE_PK_WRAPPED_MAX - HF_BLOB_OVERHEAD)
#define HF_CSE_PK_PERIMETER_MAX 128 /* the spec's cap on perimeter_id */
/* SHA-256(SPKI DER), the spki_hash before its base64. */
#define HF_CSE_PK_SPKI_HASH_LEN 32

/* A payload's parts, pointing into it. */
struct hf_cse_pk_payload {
    const unsigned char *der; /* PKCS#8 PrivateKeyInfo */
    size_t der_len;
    const char *perimeter_id; /* not NUL-terminated */
    size_t perimeter_len;
};

/* The payload's length for these parts; 0 when it would be over HF_CSE_PK_PAYLOAD_MAX (its
 * wrapped form then over the spec's 8 KB) or perimeter_len over HF_CSE_PK_PERIMETER_MAX. */
size_t hf_cse_pk_payload_len(size_t der_len, size_t perimeter_len);
/* Writes the payload into out (hf_cse_pk_payload_len bytes); false when that is 0. */
bool hf_cse_pk_payload_write(const unsigned char *der, size_t der_len, const char *perimeter_id,
                             size_t perimeter_len, unsigned char *out);
/* Splits a payload; false unless both lengths are in bounds and use up exactly len bytes. */
bool hf_cse_pk_payload_parse(const unsigned char *pt, size_t len, struct hf_cse_pk_payload *out);

/* The private key in der, which must be one PKCS#8 PrivateKeyInfo (nothing after it) that the
 * gateway's module can hold as a session object: RSA of 2048 to 4096 bits with two primes (the
 * module's RSA sizes), or EC P-256 or P-384. HF_STATUS_OK with *out (the caller's,
 * EVP_PKEY_free) and *key_type (CKK_RSA, CKK_EC); otherwise HF_STATUS_BAD_REQUEST with why,
 * never a byte of the key. */
enum hf_status hf_cse_pk_key_parse(const unsigned char *der, size_t der_len, EVP_PKEY **out,
                                   CK_KEY_TYPE *key_type, char *why, size_t whylen);

/* Whether the key's parts agree (EVP_PKEY_check: RSA's primes, CRT values and pair, EC's point):
 * a wrong CRT value would sign wrongly and leak the factors. wrapprivatekey asks it once before
 * sealing; it costs tens of milliseconds for RSA (prime tests), so a key opened from its blob,
 * checked when it was wrapped and authenticated since, is not asked again. */
bool hf_cse_pk_key_is_consistent(EVP_PKEY *pkey);
/* SHA-256(DER SubjectPublicKeyInfo of pkey) into out: what spki_hash encodes. false if it
 * cannot be made. */
bool hf_cse_pk_spki_hash(const EVP_PKEY *pkey, unsigned char out[HF_CSE_PK_SPKI_HASH_LEN]);

#endif /* HF_CSE_PK_PAYLOAD_H */
