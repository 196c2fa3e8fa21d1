/* Shared by the gcp-ekm plugin's files (not by tests): the state, one call's way through the
 * steps every operation shares, and the operations. */
#ifndef HF_EKM_INTERNAL_H
#define HF_EKM_INTERNAL_H

#include "gateway/plugin.h"
#include "gateway/plugins/gcp-ekm/config.h"
#include "gateway/plugins/gcp-ekm/request.h"

#define HF_EKM_LINK_TYPE "gcp-ekm"
/* The blob's API string (specs/google-ekm.md, "Crypto"): a blob of another API never opens here. */
#define HF_EKM_API "google-ekm"

/* What an endpoint needs at run time beyond its configuration. */
struct hf_ekm_endpoint_rt {
    struct hf_jwt_verifier *jwt; /* the endpoint's issuers and key sets */
    struct hf_rate *rate;
};

/* One state per configuration generation (the gateway swaps states on SIGHUP). */
struct hf_ekm_state {
    struct hf_ekm_config cfg;
    struct hf_ekm_endpoint_rt *rt; /* one per cfg.endpoints[], same order */
    bool started;
};

/* One call on its way: where it goes, who makes it, what it asks. */
struct hf_ekm_call {
    const struct hf_ekm_endpoint *ep;
    struct hf_ekm_endpoint_rt *rt;
    const struct hf_ekm_key *policy; /* the key's entry under this endpoint */
    char key_path[HF_EKM_KEY_PATH_MAX + 1];
    struct hf_jwt *token;
    const char *email; /* the token's, valid while token is held */
    struct hf_ekm_request body;
    struct hf_key_ref key;
};

/* The steps before the key operation, in the spec's order: the caller's token (401),
 * the rate limit (429), the body (400), the audit fields, then authorization: the key under
 * this endpoint (404), the allowlist (403), the reason policy (403), the key and its link
 * (404, 503), blocked, state and usage (403). HF_STATUS_OK, or the status the request was
 * failed with. Release call with hf_ekm_call_end either way. */
enum hf_status hf_ekm_call_begin(struct hf_ekm_state *state, struct hf_request *req,
                                 const struct hf_ekm_endpoint *ep, const char *key_path,
                                 size_t key_path_len, enum hf_ekm_op op, struct hf_ekm_call *call);
void hf_ekm_call_end(struct hf_ekm_call *call);

/* The bearer token (auth.c): HF_STATUS_OK with call->token and call->email, the request marked
 * authenticated; otherwise the request is failed with 401. */
enum hf_status hf_ekm_authenticate(struct hf_ekm_call *call, struct hf_request *req);

/* A key operation's CK_RV as the spec's table wants it (hf_request_fail_ckr's policy): only
 * deliberate refusals (blocked link, state, usage) stay 403, a bad blob is 400, every other
 * fault is transient (503). */
extern const struct hf_ckr_policy hf_ekm_ckr;
/* The endpoint's deadline passed: 503 rather than a key operation nobody waits for. */
enum hf_status hf_ekm_deadline_check(const struct hf_ekm_call *call, struct hf_request *req);

/* The operations, after hf_ekm_call_begin. */
enum hf_status hf_ekm_wrap(struct hf_ekm_call *call, struct hf_request *req);
enum hf_status hf_ekm_unwrap(struct hf_ekm_call *call, struct hf_request *req);

#endif /* HF_EKM_INTERNAL_H */
