/* Cloud EKM request bodies and paths (specs/google-ekm.md, "Transport" and "Request rules").
 *
 * Bodies are proto3 JSON of google.cloud.ekms.v0: field names match case-insensitively with
 * '_' removed (keyPath, key_path, KEYPATH), a field given twice in any spelling is refused,
 * unknown fields are ignored, a JSON null is an absent field, bytes are standard or URL-safe
 * base64, padded or not (hf_base64_decode_any). Every refusal is HF_STATUS_BAD_REQUEST with a
 * reason that starts with the field's path ("plaintext: ..."), which the error body turns into
 * a google.rpc.BadRequest detail. Pure. */
#ifndef HF_EKM_REQUEST_H
#define HF_EKM_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "gateway/plugin.h"

/* Sizes (specs/google-ekm.md, "Sizes"): decoded bytes. */
#define HF_EKM_PLAINTEXT_MAX (64u * 1024u)
#define HF_EKM_AAD_MAX (64u * 1024u)
#define HF_EKM_BLOB_MAX (64u * 1024u + 33u)
#define HF_EKM_BODY_MAX (256u * 1024u)
/* Strings we keep (they reach the audit record); no resource name comes near it. */
#define HF_EKM_STRING_MAX 1024u
#define HF_EKM_KEY_PATH_MAX 512u

enum hf_ekm_op { HF_EKM_OP_WRAP, HF_EKM_OP_UNWRAP };

struct hf_ekm_bytes {
    unsigned char *data; /* malloc'd (one spare byte, so never NULL when present) */
    size_t len;
    bool present;
};

struct hf_ekm_request {
    enum hf_ekm_op op;
    struct json_object *root; /* strings below point into it */
    const char *key_path;     /* the body's keyPath: audited, never routed on; NULL if absent */
    const char *key_uri_prefix;
    struct hf_ekm_bytes input; /* plaintext (wrap) or wrappedBlob (unwrap): required */
    struct hf_ekm_bytes aad;   /* additionalAuthenticatedData */
    const char *full_resource_name;
    const char *relative_resource_name;
    int reason; /* 0..11, or HF_EKM_REASON_ABSENT (absent, or a value we do not know) */
    bool health_check;
};

/* Parses body[0..len) for op into out (cleared first; release with hf_ekm_request_clear, also
 * after a failure). HF_STATUS_OK, or HF_STATUS_BAD_REQUEST with a printable reason in why. */
enum hf_status hf_ekm_request_parse(enum hf_ekm_op op, const unsigned char *body, size_t len,
                                    struct hf_ekm_request *out, char *why, size_t whylen);
/* Frees and cleanses (the plaintext and its base64 in the JSON tree). NULL is fine. */
void hf_ekm_request_clear(struct hf_ekm_request *r);

/* The verb of a request path: what follows the last ':' of its last segment; base_len gets the
 * length of the path before that ':'. false when the last segment has no ':' or nothing after
 * it. */
bool hf_ekm_path_verb(const char *path, size_t *base_len, const char **verb);
/* keyPath as the spec decides: 1..512 characters of [A-Za-z0-9._~/-], no empty, "." or ".."
 * segment. */
bool hf_ekm_key_path_is_valid(const char *key_path, size_t len);

#endif /* HF_EKM_REQUEST_H */
