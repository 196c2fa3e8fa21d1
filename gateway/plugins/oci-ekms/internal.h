/* Shared by the oci-ekms plugin's files (not by tests): the state, one call's way through the
 * steps every operation shares, and the operations. */
#ifndef HF_OCI_INTERNAL_H
#define HF_OCI_INTERNAL_H

#include "gateway/plugin.h"
#include "gateway/plugins/oci-ekms/config.h"
#include "gateway/plugins/oci-ekms/request.h"

#define HF_OCI_LINK_TYPE "oci-ekms"
/* The ciphertext blob's API string (spec, "Crypto"): a blob of another API never opens here. */
#define HF_OCI_API "oci-ekms"
/* opc-request-id as OCI writes it is 32 to 98 printable characters; more is not OCI's. */
#define HF_OCI_REQUEST_ID_MAX 128u

/* What a vault needs at run time beyond its configuration. */
struct hf_oci_vault_rt {
    struct hf_jwt_verifier *jwt;
    struct hf_rate *rate;
};

/* One state per configuration generation (the gateway swaps states on SIGHUP). */
struct hf_oci_state {
    struct hf_oci_config cfg;
    struct hf_oci_vault_rt *rt; /* one per cfg.vaults[], same order */
    bool started;
};

/* One call on its way. */
struct hf_oci_call {
    struct hf_oci_state *st;
    struct hf_oci_target t;
    const struct hf_oci_vault *vault;
    struct hf_oci_vault_rt *rt;
    struct hf_jwt *token;
    const char *client; /* the token's client_id, else sub; valid while token is held */
    struct hf_oci_request body;
    struct hf_key_ref key; /* key-level routes, after hf_oci_call_begin */
    char link_id[2 * HF_OCI_UUID_LEN + 2];
    char request_id[HF_OCI_REQUEST_ID_MAX + 80]; /* the echoed opc-request-id */
};

/* First of all, whatever the route: opc-request-id echoed (and audited), or 400 for one no OCI
 * would send. call must be zeroed. */
enum hf_status hf_oci_request_id_set(struct hf_oci_call *call, struct hf_request *req);
/* The steps before the operation, in the spec's order (after hf_oci_request_id_set on the same
 * call): the vault (404, before authentication: its token settings are the vault's), the
 * bearer token (401), the audit fields, client pin and scope (403), vault disabled (403), rate
 * (429), the body (400), then for key-level routes the key linked in this vault (404, 503) and
 * AES-256 (403). HF_STATUS_OK, or the status the request was failed with. Release call with
 * hf_oci_call_end either way. */
enum hf_status hf_oci_call_begin(struct hf_oci_state *st, struct hf_request *req,
                                 const struct hf_oci_target *t, struct hf_oci_call *call);
void hf_oci_call_end(struct hf_oci_call *call);

/* The bearer token (auth.c): HF_STATUS_OK with call->token and call->client, the request
 * marked authenticated; otherwise the request is failed with 401. */
enum hf_status hf_oci_authenticate(struct hf_oci_call *call, struct hf_request *req);
/* The vault's client pin and the token's scope for this operation: otherwise 403. */
enum hf_status hf_oci_authorize(struct hf_oci_call *call, struct hf_request *req);

/* The key's may-it-do-op rule in this API's words: 403 "key disabled" for a blocked link, a
 * state or usage that forbids it (state: the version's, 0 for the current one's). */
enum hf_status hf_oci_key_may(struct hf_oci_call *call, struct hf_request *req, enum hf_key_op op,
                              CK_ULONG state);
/* A version named by UUID (path or body): 404 when it is not this key's or is destroyed. */
enum hf_status hf_oci_version_find(struct hf_oci_call *call, struct hf_request *req,
                                   const char *uuid, struct hf_key_version *out);
/* A key operation's CK_RV: deliberate refusals stay 403, a bad blob 400, faults 503. */
enum hf_status hf_oci_fail_ckr(struct hf_request *req, CK_RV rv, const char *what);

/* The operations, after hf_oci_call_begin. */
enum hf_status hf_oci_vault_metadata(struct hf_oci_call *call, struct hf_request *req);
enum hf_status hf_oci_key_metadata(struct hf_oci_call *call, struct hf_request *req);
enum hf_status hf_oci_version_metadata(struct hf_oci_call *call, struct hf_request *req);
enum hf_status hf_oci_encrypt(struct hf_oci_call *call, struct hf_request *req);
enum hf_status hf_oci_decrypt(struct hf_oci_call *call, struct hf_request *req);
enum hf_status hf_oci_random(struct hf_oci_call *call, struct hf_request *req);

#endif /* HF_OCI_INTERNAL_H */
