/* OCI EKMS request paths, bodies and token scopes (specs/oci-ekms.md, "Transport", "Request
 * rules", "Authentication").
 *
 * Paths: "<prefix>/vaults/{vaultId}/..." as the spec's route table has them, matched here
 * rather than by route patterns, so every path under the prefix gets this API's 404 and 405.
 * Bodies: camelCase fields, standard padded base64, unknown fields ignored; a bad one is
 * HF_STATUS_BAD_REQUEST with a reason naming the field, never its value. Pure. */
#ifndef HF_OCI_REQUEST_H
#define HF_OCI_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "gateway/plugin.h"

/* Sizes (spec, "Sizes"): decoded bytes. */
#define HF_OCI_PLAINTEXT_MAX (64u * 1024u)
#define HF_OCI_AAD_MAX (8u * 1024u)
#define HF_OCI_CIPHERTEXT_MAX (64u * 1024u + 33u)
#define HF_OCI_RANDOM_MAX 65535u
#define HF_OCI_BODY_MAX (128u * 1024u)
/* An id segment longer than a UUID names nothing; kept this long for messages. */
#define HF_OCI_ID_MAX 36u

enum hf_oci_op {
    HF_OCI_OP_NONE,
    HF_OCI_OP_VAULT_METADATA,
    HF_OCI_OP_KEY_METADATA,
    HF_OCI_OP_VERSION_METADATA,
    HF_OCI_OP_ENCRYPT,
    HF_OCI_OP_DECRYPT,
    HF_OCI_OP_VAULT_RANDOM,
    HF_OCI_OP_KEY_RANDOM,
};

/* What a path names. An id over HF_OCI_ID_MAX bytes is kept as "" (it matches nothing). */
struct hf_oci_target {
    enum hf_oci_op op;
    char vault_id[HF_OCI_ID_MAX + 1];
    char key_id[HF_OCI_ID_MAX + 1];
    char version_id[HF_OCI_ID_MAX + 1];
};

/* path (raw, no query) under prefix ("" or "/a/b") into out: true when it lies under
 * "<prefix>/vaults/" (the paths this plugin answers); out->op is HF_OCI_OP_NONE when it names
 * no route (404). */
bool hf_oci_path_parse(const char *path, const char *prefix, struct hf_oci_target *out);
/* The method op is served on ("GET", "POST"), and its name for metrics, logs and audit. */
const char *hf_oci_op_method(enum hf_oci_op op);
const char *hf_oci_op_name(enum hf_oci_op op);

struct hf_oci_bytes {
    unsigned char *data; /* malloc'd; never NULL when present */
    size_t len;
    bool present;
};

struct hf_oci_request {
    enum hf_oci_op op;
    struct json_object *root;       /* strings below point into it */
    struct hf_oci_bytes plaintext;  /* encrypt: required, >= 1 byte */
    struct hf_oci_bytes ciphertext; /* decrypt: required */
    struct hf_oci_bytes aad;
    struct hf_oci_bytes iv;     /* encrypt: ignored (Holdfast draws it); decrypt: must match */
    struct hf_oci_bytes tag;    /* decrypt: must match */
    const char *key_version_id; /* NULL when absent */
    bool mode_given;            /* AES_GCM or GCM, checked */
    unsigned length;            /* GenerateRandomBytes: 1..65535 */
};

/* Parses body[0..len) for op into out (cleared first; release with hf_oci_request_clear, also
 * after a failure). Metadata routes take no body: whatever comes is not read. HF_STATUS_OK, or
 * HF_STATUS_BAD_REQUEST (HF_STATUS_INTERNAL out of memory) with a printable reason in why. */
enum hf_status hf_oci_request_parse(enum hf_oci_op op, const unsigned char *body, size_t len,
                                    struct hf_oci_request *out, char *why, size_t whylen);
/* Frees and cleanses (the plaintext and its base64 in the JSON tree). NULL is fine. */
void hf_oci_request_clear(struct hf_oci_request *r);

/* The token's scopes ("scope", space-separated, or "scp", a string or an array of strings)
 * admit op: "oci_ekms" admits every operation, a legacy per-operation scope
 * ("oci_hyok_encrypt", ...) only its own; either may carry one of audiences in front, as IDCS
 * writes scopes in requests ("https://10.0.0.31/oci_ekms"). */
bool hf_oci_scope_allows(const struct json_object *claims, enum hf_oci_op op,
                         const char *const *audiences, size_t naudiences);
/* The legacy scope of op ("oci_hyok_encrypt"), NULL for HF_OCI_OP_NONE. */
const char *hf_oci_op_legacy_scope(enum hf_oci_op op);

#endif /* HF_OCI_REQUEST_H */
