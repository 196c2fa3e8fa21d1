/* Shared by the aws-xks plugin's files (not by tests): the plugin state, the steps every route
 * shares, and the route handlers. */
#ifndef HF_XKS_INTERNAL_H
#define HF_XKS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gateway/plugin.h"
#include "gateway/plugins/aws-xks/config.h"
#include "gateway/plugins/aws-xks/crypto.h"
#include "gateway/plugins/aws-xks/request.h"

#define HF_XKS_LINK_TYPE "aws-xks"
#define HF_XKS_SERVICE "kms-xks-proxy"
#define HF_XKS_MAX_MEMBERS 10 /* ekmFleetDetails: 1..10 entries */

struct hf_sigv4_cache;

/* What a store needs at run time beyond its configuration. */
struct hf_xks_store_rt {
    struct hf_sigv4_cache *sigv4; /* signing keys of this store's credential set */

    struct hf_rate *rate; /* the store's rate_limit (plugin.h's token bucket) */

    pthread_mutex_t health_lock; /* guards the cached health answer below */
    uint64_t health_expires_us;  /* 0: nothing cached */
    struct json_object *health;  /* the last good answer */
};

/* One state per configuration generation (the gateway swaps states on SIGHUP). */
struct hf_xks_state {
    struct hf_xks_config cfg;
    struct hf_xks_store_rt *rt; /* one per cfg.stores[], same order */
    bool started;
};

/* One request on its way through the steps every route shares. */
struct hf_xks_call {
    struct hf_xks_state *state;
    const struct hf_xks_store *store;
    struct hf_xks_store_rt *rt;
    const char *key_id; /* the URI's keyId, validated; NULL on /health */
    struct hf_xks_request body;
};

/* Store lookup (404 InvalidUriPathException, before authentication), authentication, the rate
 * limit, keyId and body validation, the audit context, and for key operations the store's
 * allowlist and secondary authorization. HF_STATUS_OK, or the status hf_request_fail ended the
 * request with. call->body is cleared on failure; otherwise release it with hf_xks_call_end. */
enum hf_status hf_xks_call_begin(struct hf_xks_state *state, struct hf_request *req,
                                 enum hf_xks_op op, struct hf_xks_call *call);
void hf_xks_call_end(struct hf_xks_call *call);

/* The key behind the call's keyId (its aws-xks link); fails the request when there is none. */
enum hf_status hf_xks_key_find(struct hf_xks_call *call, struct hf_request *req,
                               struct hf_key_ref *key);
/* The session for the call's first key operation (hf_p11_begin; operation as there), unless the
 * request is older than the store's deadline_ms: then it fails with 503 rather than start a key
 * operation whose answer KMS no longer waits for. */
enum hf_status hf_xks_session_begin(const struct hf_xks_call *call, struct hf_request *req,
                                    const char *operation, CK_SESSION_HANDLE *session);
/* The key can do the XKS AES_GCM construction (AES-256) and its link is open; fails the request
 * when not. */
enum hf_status hf_xks_key_gcm_check(const struct hf_xks_call *call, const struct hf_key_ref *key,
                                    struct hf_request *req);

/* SigV4 (and the store's mTLS subject rule). HF_STATUS_OK or the request is failed with 401. */
enum hf_status hf_xks_authenticate(const struct hf_xks_store *store, struct hf_xks_store_rt *rt,
                                   struct hf_request *req);

/* Route handlers. */
enum hf_status hf_xks_handle_metadata(void *state, struct hf_request *req);
enum hf_status hf_xks_handle_encrypt(void *state, struct hf_request *req);
enum hf_status hf_xks_handle_decrypt(void *state, struct hf_request *req);
enum hf_status hf_xks_handle_health(void *state, struct hf_request *req);

/* The health check's answer for a store; cached (health.c). */
void hf_xks_health_clear(struct hf_xks_store_rt *rt);

#endif /* HF_XKS_INTERNAL_H */
