/* Google Workspace CSE operations and their request bodies (specs/gws-cse.md, "Operations" and
 * "Sizes").
 *
 * Bodies are JSON objects read by the gateway's strict reader: fields are strings, binary ones
 * padded standard base64 (hf_base64_decode), rsa_pss_salt_length an integer. One table
 * (request.c) says which fields each op requires and allows; a field the op does not take, and
 * any unknown member, is ignored (never read, never audited): Google adds members over time,
 * and what we do not read cannot change what we do. A field the op takes must be of its type
 * (a JSON null is not a string: 400). `reason` is
 * opaque: kept as given, audited escaped, never parsed. Every refusal is HF_STATUS_BAD_REQUEST
 * (the spec's 400) with a reason naming the field, never its value; a body over
 * HF_CSE_BODY_MAX is HF_STATUS_TOO_LARGE (413). Pure. */
#ifndef HF_CSE_REQUEST_H
#define HF_CSE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/plugin.h"

/* Sizes (spec, "Sizes"): decoded bytes for binary fields, bytes of UTF-8 for strings. */
#define HF_CSE_SMALL_MAX 128u   /* key, resource_name, perimeter_id, digest */
#define HF_CSE_MEDIUM_MAX 1024u /* wrapped_key, reason, encrypted_data_encryption_key */
#define HF_CSE_PK_MAX 8192u     /* wrapped_private_key, private_key */
#define HF_CSE_JWT_MAX 8192u    /* authentication, authorization (Decision) */
#define HF_CSE_BODY_MAX 65536u  /* Decision; the gateway's max_body refuses it first */

/* Every operation of the spec, both stages. */
enum hf_cse_op {
    HF_CSE_OP_WRAP,
    HF_CSE_OP_UNWRAP,
    HF_CSE_OP_PRIVILEGEDWRAP,
    HF_CSE_OP_PRIVILEGEDUNWRAP,
    HF_CSE_OP_DIGEST,
    HF_CSE_OP_REWRAP,
    HF_CSE_OP_DELEGATE,
    HF_CSE_OP_STATUS,
    HF_CSE_OP_CERTS,
    /* Stage 2 (Gmail) */
    HF_CSE_OP_PRIVATEKEYDECRYPT,
    HF_CSE_OP_PRIVILEGEDPRIVATEKEYDECRYPT,
    HF_CSE_OP_PRIVATEKEYSIGN,
    HF_CSE_OP_WRAPPRIVATEKEY,
    HF_CSE_OP_COUNT
};

/* What a call needs before its handler runs (the table is request.c's). */
enum hf_cse_kek_use { HF_CSE_KEK_NONE, HF_CSE_KEK_WRAP, HF_CSE_KEK_UNWRAP };

struct hf_cse_op_info {
    const char *name;   /* the path's last segment and the audit operation */
    const char *method; /* "POST" or "GET" */
    bool stage2;        /* Gmail: only with gmail = on */
    bool authn;         /* takes an authentication token */
    bool authz;         /* takes an authorization token */
    bool privileged;    /* check 9: an admin's authn (privilegedunwrap: or a migration token) */
    bool signing_key;   /* needs signing_key (delegate, rewrap): 501 without */
    const char *const *roles; /* check 3: authz roles allowed (NULL-terminated); NULL: none */
    enum hf_cse_kek_use kek;  /* check 10 and the key operation */
};

/* The op's row; NULL out of range. */
const struct hf_cse_op_info *hf_cse_op_info(enum hf_cse_op op);
/* The op named name (the path segment after the prefix); false if none. */
bool hf_cse_op_find(const char *name, enum hf_cse_op *op);

/* A binary field decoded (malloc'd; cleansed on clear). */
struct hf_cse_bytes {
    unsigned char *data;
    size_t len;
    bool present;
};

/* A string field, pointing into the body's tree. */
struct hf_cse_string {
    const char *s; /* NULL when absent */
    size_t len;
};

struct hf_cse_request {
    enum hf_cse_op op;
    struct json_object *root;
    struct hf_cse_string authentication;
    struct hf_cse_string authorization;
    struct hf_cse_string reason;
    struct hf_cse_string resource_name;
    struct hf_cse_string perimeter_id;
    struct hf_cse_string original_kacls_url;
    struct hf_cse_string algorithm;
    struct hf_cse_string spki_hash;
    struct hf_cse_string spki_hash_algorithm;
    struct hf_cse_bytes key; /* a DEK: secret */
    struct hf_cse_bytes wrapped_key;
    struct hf_cse_bytes encrypted_data_encryption_key;
    struct hf_cse_bytes rsa_oaep_label;
    struct hf_cse_bytes wrapped_private_key;
    struct hf_cse_bytes digest;
    struct hf_cse_bytes private_key; /* PKCS#8 DER: secret */
    int64_t rsa_pss_salt_length;
    bool rsa_pss_salt_length_present;
};

/* Parses body[0..len) for op into out (cleared first; release with hf_cse_request_clear, also
 * after a failure). HF_STATUS_OK; HF_STATUS_BAD_REQUEST with a printable reason in why;
 * HF_STATUS_TOO_LARGE over HF_CSE_BODY_MAX; HF_STATUS_INTERNAL out of memory. */
enum hf_status hf_cse_request_parse(enum hf_cse_op op, const unsigned char *body, size_t len,
                                    struct hf_cse_request *out, char *why, size_t whylen);
/* Frees and cleanses (keys, private keys and their base64 in the tree). NULL is fine. */
void hf_cse_request_clear(struct hf_cse_request *r);

#endif /* HF_CSE_REQUEST_H */
