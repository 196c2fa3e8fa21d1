/* Shared by the sap-hyok plugin's files (not by tests): the state, one call's way through the
 * steps every route shares, and the operations.
 *
 * The contract for an operation file (asym.c's five are written against it):
 *   - plugin.c routes the request and hf_sap_call_begin runs the shared pipeline (keystore,
 *     pin, body, request_metadata, tenant, group, key, version; the audit fields); only when it
 *     succeeds is the route's function called, with every member of struct hf_sap_call filled.
 *     The function answers with hf_reply_json_or_fail / hf_reply_json (HF_STATUS_OK) or fails the
 *     request with hf_request_fail or hf_request_fail_ckr, and returns that status. plugin.c
 *     releases the call afterwards (hf_sap_call_end): an operation frees only what it
 *     allocated itself.
 *   - Reading the body: call->body is the parsed object (unknown members ignored). The
 *     hf_sap_member_b64 / _str / _integer helpers below fail the request with 400 themselves;
 *     request.h has the enum parsers (hf_sap_oaep_alg_parse, hf_sap_pss_alg_parse,
 *     hf_sap_message_type_parse) and the sizes (HF_SAP_MESSAGE_MAX, HF_SAP_RSA_MAX).
 *   - Before the key operation: hf_sap_key_is_rsa (an asymmetric route on an AES key: 403)
 *     and hf_sap_key_may(call, req, op) (blocked link, state, usage: 403).
 *   - The key operation: hf_p11_begin(req, NULL, &s) right before it, on call->version.object
 *     (private or secret) or call->version.pub (public, RSA); CK_RVs through
 * hf_request_fail_ckr(..., &hf_sap_ckr). That operation's audit record is the request's.
 *   - Audit fields: the pipeline sets six (keystore_id, sap_tenant_id, sap_group_id,
 *     sap_user_type, sap_request_id, cert_sha256) of plugin.h's HF_AUDIT_FIELDS_MAX (8).
 *   - Secrets (plaintexts) are freed with OPENSSL_clear_free, reply objects holding one with
 *     hf_json_put_wiped; the body tree is wiped by hf_sap_call_end. */
#ifndef HF_SAP_INTERNAL_H
#define HF_SAP_INTERNAL_H

#include "gateway/plugin.h"
#include "gateway/plugins/sap-hyok/config.h"
#include "gateway/plugins/sap-hyok/gcm.h"
#include "gateway/plugins/sap-hyok/request.h"

#define HF_SAP_LINK_TYPE "sap-hyok"

/* One state per configuration generation (the gateway swaps states on SIGHUP). */
struct hf_sap_state {
    struct hf_sap_config cfg;
    bool started;
};

/* What the route says about key_version_id. */
enum hf_sap_version_rule {
    HF_SAP_VERSION_NONE,     /* the route names no key (keystore get-metadata) */
    HF_SAP_VERSION_CURRENT,  /* the current version; a key_version_id member is ignored */
    HF_SAP_VERSION_OPTIONAL, /* absent: the current version */
    HF_SAP_VERSION_REQUIRED, /* absent: 400 */
};

/* One call on its way. Filled by hf_sap_call_begin; valid until hf_sap_call_end. */
struct hf_sap_call {
    const struct hf_sap_keystore *ks;
    struct json_object *body;    /* the parsed request body (owned; wiped and freed at the end) */
    struct hf_sap_metadata meta; /* borrowed from body */
    char cert_sha256[65];        /* the client certificate's fingerprint, lower-case hex */
    /* The rest only when the route names a key (rule != HF_SAP_VERSION_NONE). */
    char external_key_id[HF_SAP_UUID_LEN + 1]; /* as in the path, lower case */
    char link_id[HF_SAP_UUID_LEN * 2 + 2];     /* "<keystore_id>/<external_key_id>" */
    struct hf_key_ref key;
    /* The version named by key_version_id, or the current one when absent (optional rule):
     * its number, UUID, state and objects (object: secret or private key; pub: the RSA
     * public key object); created only when named (the key reference has no such time). */
    struct hf_key_version version;
    bool version_named; /* the body named it */
};

/* The shared pipeline, in the spec's order: keystore (404, before authentication), client
 * certificate pin (401), then authenticated: body and request_metadata (400), audit fields,
 * tenant and group (403), key linked in this keystore (404), key_version_id by rule
 * (400 absent when required, 404 unknown). HF_STATUS_OK, or the status the request was failed
 * with. Release with hf_sap_call_end either way. */
enum hf_status hf_sap_call_begin(struct hf_sap_state *st, struct hf_request *req,
                                 enum hf_sap_version_rule rule, struct hf_sap_call *call);
void hf_sap_call_end(struct hf_sap_call *call);

/* The key may do op now with the version in call (blocked link or state: 403, usage: 403),
 * else the request is failed. Decrypt and verify honour the named version's state (old data
 * stays readable on a deactivated version), the others the current version's. */
enum hf_status hf_sap_key_may(const struct hf_sap_call *call, struct hf_request *req,
                              enum hf_key_op op);
/* The key is RSA (asymmetric routes) or AES-256 (symmetric), else 403 (wrong usage). */
enum hf_status hf_sap_key_is_rsa(const struct hf_sap_call *call, struct hf_request *req);
enum hf_status hf_sap_key_is_aes(const struct hf_sap_call *call, struct hf_request *req);

/* A key operation's CK_RV in the spec's table (hf_request_fail_ckr's policy): a bad tag or
 * padding 400, blocked or state 403, queue full 429, pool down or late 503, else 500. */
extern const struct hf_ckr_policy hf_sap_ckr;

/* Body members of call->body, failing the request with 400 (or 500 out of memory) themselves.
 * A base64 member (standard, padded): *data malloc'd (OPENSSL_clear_free(*data, *len)), NULL
 * when absent and not required. max_len caps its decoded size (the spec's "oversized field"). */
enum hf_status hf_sap_member_b64(const struct hf_sap_call *call, struct hf_request *req,
                                 const char *name, bool required, size_t max_len,
                                 unsigned char **data, size_t *len);
/* A string member (borrowed from the body), NULL when absent and not required. */
enum hf_status hf_sap_member_str(const struct hf_sap_call *call, struct hf_request *req,
                                 const char *name, bool required, const char **out);
/* An integer member in [min, max], dflt when absent and not required. */
enum hf_status hf_sap_member_integer(const struct hf_sap_call *call, struct hf_request *req,
                                     const char *name, bool required, int64_t min, int64_t max,
                                     int64_t dflt, int64_t *out);

/* Adds key_version_id (call->version.uuid) to a reply object; false if out of memory. */
bool hf_sap_reply_add_version(const struct hf_sap_call *call, struct json_object *reply);
/* Adds a base64 member (hf_json_base64); false if out of memory. */
bool hf_sap_reply_add_b64(struct json_object *reply, const char *name, const unsigned char *data,
                          size_t len);

/* ---- the operations, after hf_sap_call_begin ---------------------------------------------- */

/* keystore.c, metadata.c, versions.c */
enum hf_status hf_sap_keystore_metadata(struct hf_sap_call *call, struct hf_request *req);
enum hf_status hf_sap_key_metadata(struct hf_sap_call *call, struct hf_request *req);
enum hf_status hf_sap_versions_metadata(struct hf_sap_call *call, struct hf_request *req);
/* symmetric.c */
enum hf_status hf_sap_sym_encrypt(struct hf_sap_call *call, struct hf_request *req);
enum hf_status hf_sap_sym_decrypt(struct hf_sap_call *call, struct hf_request *req);
enum hf_status hf_sap_random_bytes(struct hf_sap_call *call, struct hf_request *req);
/* asym.c (its own owner): RSA-OAEP, RSASSA-PSS and the public key. The version rule of each
 * route is plugin.c's table: encrypt, sign, get-public-key OPTIONAL; decrypt, verify REQUIRED. */
enum hf_status sap_asym_encrypt(struct hf_sap_call *call, struct hf_request *req);
enum hf_status sap_asym_decrypt(struct hf_sap_call *call, struct hf_request *req);
enum hf_status sap_asym_sign(struct hf_sap_call *call, struct hf_request *req);
enum hf_status sap_asym_verify(struct hf_sap_call *call, struct hf_request *req);
enum hf_status sap_public_key(struct hf_sap_call *call, struct hf_request *req);

#endif /* HF_SAP_INTERNAL_H */
