/* What a CSE blob seals (specs/gws-cse.md, "Crypto"): length-prefixed fields, BE16 len ||
 * bytes each (wrapped_key: key, resource_name, perimeter_id; wrapped_private_key: PKCS#8 DER,
 * perimeter_id), sealed with the gateway's hf_blob_seal under the prefix's KEK, and the
 * resource key hash. Pure but for the HMAC (OpenSSL). */
#ifndef HF_CSE_PAYLOAD_H
#define HF_CSE_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>

#define HF_CSE_API "gws-cse"
#define HF_CSE_API_PK "gws-cse-pk"
#define HF_CSE_FIELD_MAX 0xffffu
/* b64 of a SHA-256 HMAC: 44 characters and a NUL. */
#define HF_CSE_RKH_LEN 45

struct hf_cse_field {
    const unsigned char *p; /* NULL with len 0 is fine */
    size_t len;
};

/* The n fields as BE16 len || bytes into out. The two-call convention: out NULL asks for the
 * size (*outlen); a short out gets false with *outlen set; a field over HF_CSE_FIELD_MAX is
 * false with *outlen 0. */
bool hf_cse_fields_encode(const struct hf_cse_field *f, size_t n, unsigned char *out,
                          size_t *outlen);
/* Exactly n fields filling in[0..len) into f (pointing into in); false for anything else. */
bool hf_cse_fields_decode(const unsigned char *in, size_t len, struct hf_cse_field *f, size_t n);

/* b64(HMAC-SHA256(key = dek, "ResourceKeyDigest:" resource_name ":" perimeter_id)) into out.
 * false when OpenSSL fails. */
bool hf_cse_resource_key_hash(const unsigned char *dek, size_t dek_len, const char *resource_name,
                              size_t rn_len, const char *perimeter_id, size_t pid_len,
                              char out[HF_CSE_RKH_LEN]);

#endif /* HF_CSE_PAYLOAD_H */
