/* What a DKE request asks, before anything is authenticated: the path's target and the decrypt
 * body (specs/ms-dke.md, "Transport", "Decrypt"). Pure, so unit tests and the fuzzer drive it. */
#ifndef HF_DKE_REQUEST_H
#define HF_DKE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/plugin.h"

#define HF_DKE_NAME_MAX 128
#define HF_DKE_UUID_LEN 36
/* RSA-4096: the largest modulus a DKE key may have; value is exactly the modulus. */
#define HF_DKE_VALUE_MAX 512
#define HF_DKE_MAX_BODY (16u * 1024u)
#define HF_DKE_ALG "RSA-OAEP-256"

enum hf_dke_target_kind {
    HF_DKE_T_NONE,   /* no route: 404 */
    HF_DKE_T_KEY,    /* [/<prefix>]/{keyName}: GET the public key */
    HF_DKE_T_DECRYPT /* [/<prefix>]/{keyName}/{keyId}/decrypt (any case): POST */
};

struct hf_dke_target {
    enum hf_dke_target_kind kind;
    char name[HF_DKE_NAME_MAX + 1];
    char key_id[HF_DKE_UUID_LEN + 1]; /* lower case; "" for HF_DKE_T_KEY */
};

/* The spec's Decision: 1..128 of [A-Za-z0-9._-], case-sensitive; "." and ".." are not names. */
bool hf_dke_name_is_valid(const char *name, size_t len);
/* The target of path (raw, as received) under prefix ("" or "/a/b"). */
void hf_dke_path_parse(const char *prefix, const char *path, struct hf_dke_target *out);

/* A decrypt body {"alg":"RSA-OAEP-256","value":"<base64>"}: value decoded (strict RFC 4648
 * base64, at most HF_DKE_VALUE_MAX bytes), released with hf_dke_decrypt_clear. */
struct hf_dke_decrypt {
    unsigned char *value;
    size_t len;
};
/* HF_STATUS_OK, or HF_STATUS_BAD_REQUEST (HF_STATUS_INTERNAL out of memory) with why naming
 * the field, never its value: malformed JSON, not an object, alg missing or not RSA-OAEP-256,
 * value missing, bad base64 or too long. Unknown members are ignored, as the reference's model
 * binder does. */
enum hf_status hf_dke_decrypt_parse(const void *body, size_t len, struct hf_dke_decrypt *out,
                                    char *why, size_t whylen);
void hf_dke_decrypt_clear(struct hf_dke_decrypt *d);

/* cache.exp: t (seconds since the epoch) as UTC "yyyy-MM-ddTHH:mm:ss", no zone suffix (spec,
 * "Public key"). false if t cannot be shown so. */
bool hf_dke_cache_exp_format(int64_t t, char out[20]);

#endif /* HF_DKE_REQUEST_H */
