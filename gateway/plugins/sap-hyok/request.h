/* SAP HYOK request bodies (specs/sap-hyok.md, "Request rules" and "Sizes"): pure parsing, so
 * unit tests and the fuzzer drive the plugin's own code.
 *
 * Every body is a JSON object (hf_json_parse: strict, no duplicate keys) with a
 * request_metadata object of strings, sap_tenant_id required; unknown members are ignored;
 * binary members are standard padded base64 (hf_json_member_base64, any = false). Every refusal
 * is HF_STATUS_BAD_REQUEST with a printable reason naming the field, never its value. */
#ifndef HF_SAP_REQUEST_H
#define HF_SAP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/plugin.h"

/* Sizes (spec, "Sizes"), in decoded bytes. */
#define HF_SAP_BODY_MAX (128u * 1024u)
#define HF_SAP_PLAINTEXT_MAX (64u * 1024u)
#define HF_SAP_AAD_MAX (8u * 1024u)
#define HF_SAP_MESSAGE_MAX 4096u
#define HF_SAP_RANDOM_MAX 4096u
/* RSA-4096's modulus: no asymmetric ciphertext or signature is longer. */
#define HF_SAP_RSA_MAX 512u
/* request_metadata strings and ids: they reach the audit record. */
#define HF_SAP_STRING_MAX 256u
/* get-versions-metadata paging (spec's table). */
#define HF_SAP_LIMIT_DEFAULT 10u
#define HF_SAP_LIMIT_MAX 100u

/* request_metadata: borrowed from the parsed body's tree; NULL when absent. */
struct hf_sap_metadata {
    const char *tenant; /* sap_tenant_id: never NULL after a successful parse */
    const char *group;  /* sap_group_id */
    const char *user_type;
    const char *request_id;
};

/* body[0..len) as a JSON object into *root (the caller's: hf_json_put_wiped) and its
 * request_metadata into *meta. On failure *root is NULL and why says what is wrong. */
enum hf_status hf_sap_body_parse(const unsigned char *body, size_t len, struct json_object **root,
                                 struct hf_sap_metadata *meta, char *why, size_t whylen);

/* An integer member (a JSON integer, no string or fraction) in [min, max]; absent: dflt when
 * not required. */
enum hf_status hf_sap_member_int(const struct json_object *obj, const char *name, bool required,
                                 int64_t min, int64_t max, int64_t dflt, int64_t *out, char *why,
                                 size_t whylen);

/* get-versions-metadata's paging members. */
struct hf_sap_paging {
    int64_t skip;
    int64_t limit;
    const char *key_version_id; /* borrowed; NULL: every version */
    bool has_created_after;
    int64_t created_after; /* seconds since the epoch: versions created strictly later */
};
enum hf_status hf_sap_paging_parse(const struct json_object *root, struct hf_sap_paging *out,
                                   char *why, size_t whylen);
/* The page of versions[0..n) (oldest first) paging selects: *total those passing the
 * filters (key_version_id, created_after), *first and *count the slice of the filtered list
 * after skip, at most limit. sel (n entries, the caller's) receives the filtered indexes. */
void hf_sap_paging_select(const struct hf_sap_paging *p, const struct hf_key_version *versions,
                          size_t n, size_t *sel, size_t *total, size_t *first, size_t *count);

/* RFC 3339 date-time ("2026-01-02T03:04:05Z", "...05.123+01:00") to seconds since the epoch
 * (the fraction dropped); false for anything else. */
bool hf_sap_rfc3339_parse(const char *s, int64_t *out);
/* Seconds since the epoch as "YYYY-MM-DDTHH:MM:SSZ" (out: at least 21 bytes). */
void hf_sap_rfc3339_format(int64_t t, char *out, size_t outlen);

/* The spec's enums. A hash's PKCS#11 mechanism (CKM_SHA_1, CKM_SHA256, ...) and its length. */
struct hf_sap_hash {
    CK_MECHANISM_TYPE mech;
    CK_MECHANISM_TYPE mgf; /* CKG_MGF1_SHA* on the same hash */
    size_t len;
    const char *name; /* "SHA256": an EVP_MD name */
};
/* RSAES_OAEP_SHA_1|256|384|512 */
bool hf_sap_oaep_alg_parse(const char *name, struct hf_sap_hash *out);
/* RSASSA_PSS_SHA_256|384|512 */
bool hf_sap_pss_alg_parse(const char *name, struct hf_sap_hash *out);
enum hf_sap_message_type { HF_SAP_MESSAGE_RAW, HF_SAP_MESSAGE_DIGEST };
/* RAW|DIGEST */
bool hf_sap_message_type_parse(const char *name, enum hf_sap_message_type *out);

#endif /* HF_SAP_REQUEST_H */
