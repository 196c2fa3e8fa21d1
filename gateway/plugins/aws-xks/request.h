/* XKS request bodies: JSON in, validated structs out (specs/aws-xks.md, "Common request rules",
 * "Operations", "Sizes").
 *
 * Pure functions over (body, len): no HTTP server types, so unit tests and the fuzzer drive them
 * directly. Unknown fields anywhere are ignored; a missing required field, a wrong type, a wrong
 * enum or bad base64 is HF_STATUS_BAD_REQUEST (ValidationException); a valid value over
 * Holdfast's caps is HF_STATUS_UNSUPPORTED (UnsupportedOperationException). */
#ifndef HF_XKS_REQUEST_H
#define HF_XKS_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "gateway/plugin.h"

/* The sizes the spec requires every proxy to accept; Holdfast's caps may only be larger. */
#define HF_XKS_MIN_PLAINTEXT 4300
#define HF_XKS_MIN_AAD 8192
#define HF_XKS_ARN_MAX 2048   /* ARNs (IAM's limit); other metadata strings share it */
#define HF_XKS_CM_SPEC_MAX 20 /* ciphertextMetadata: the spec's own limit */

enum hf_xks_op {
    HF_XKS_OP_METADATA,
    HF_XKS_OP_ENCRYPT,
    HF_XKS_OP_DECRYPT,
    HF_XKS_OP_HEALTH,
};

/* Holdfast's caps for one key store (at least the spec's minimums). */
struct hf_xks_caps {
    size_t max_plaintext; /* plaintext and ciphertext bytes */
    size_t max_aad;       /* additionalAuthenticatedData bytes */
};

/* requestMetadata; NULL when absent. The strings belong to the request's JSON tree. */
struct hf_xks_request_metadata {
    const char *aws_principal_arn;
    const char *kms_key_arn;
    const char *kms_operation;
    const char *kms_request_id;
    const char *kms_via_service;
    const char *aws_source_vpc;
    const char *aws_source_vpce;
};

/* A decoded base64 field (owned by the request). */
struct hf_xks_blob {
    unsigned char *data;
    size_t len;
    bool present;
};

struct hf_xks_request {
    enum hf_xks_op op;
    struct json_object *root; /* owns the metadata strings */
    struct hf_xks_request_metadata md;
    struct hf_xks_blob input; /* plaintext (encrypt) or ciphertext (decrypt); cleansed on clear */
    struct hf_xks_blob aad;   /* additionalAuthenticatedData */
    struct hf_xks_blob cm;    /* ciphertextMetadata (decrypt) */
    unsigned char iv[16];     /* decrypt: 12 or 16 bytes */
    size_t iv_len;
    unsigned char tag[16]; /* decrypt */
    bool want_cdiv;        /* encrypt: ciphertextDataIntegrityValueAlgorithm was SHA_256 */
};

/* Parses and validates the body of operation op. On success out owns what it holds (release it
 * with hf_xks_request_clear); on failure out is left clear and why gets a printable-ASCII reason
 * naming the field (never a value from the body). Returns HF_STATUS_OK, HF_STATUS_BAD_REQUEST,
 * HF_STATUS_UNSUPPORTED or HF_STATUS_INTERNAL (out of memory). */
enum hf_status hf_xks_request_parse(enum hf_xks_op op, const unsigned char *body, size_t len,
                                    const struct hf_xks_caps *caps, struct hf_xks_request *out,
                                    char *why, size_t whylen);

/* Frees what a parsed request holds, cleansing the plaintext. Tolerates a cleared request. */
void hf_xks_request_clear(struct hf_xks_request *r);

/* keyId of the URI: 1..128 characters of [A-Za-z0-9._-]. */
bool hf_xks_key_id_is_valid(const char *key_id);

#endif /* HF_XKS_REQUEST_H */
