/* Shared by the ms-dke plugin's files (not by tests): the state and the two operations. */
#ifndef HF_DKE_INTERNAL_H
#define HF_DKE_INTERNAL_H

#include "gateway/plugin.h"
#include "gateway/plugins/ms-dke/config.h"
#include "gateway/plugins/ms-dke/request.h"

#define HF_DKE_LINK_TYPE "ms-dke"

/* One state per configuration generation (the gateway swaps states on SIGHUP). */
struct hf_dke_state {
    struct hf_dke_config cfg;
    bool cfg_ok; /* hf_dke_config_init succeeded */
    struct hf_jwt_verifier *jwt;
    struct hf_rate *rate;
    bool started;
};

/* The Entra ID bearer token (auth.c): HF_STATUS_OK with *token (release it), the request marked
 * authenticated and its audit fields set; otherwise the request is failed with 401 and the
 * challenge headers Office reads to fetch a token. */
enum hf_status hf_dke_authenticate(struct hf_dke_state *st, struct hf_request *req,
                                   const struct hf_dke_target *t, struct hf_jwt **token);

/* GET [/<prefix>]/{keyName} (key.c). */
enum hf_status hf_dke_public_key(struct hf_dke_state *st, struct hf_request *req,
                                 const struct hf_dke_target *t);
/* POST [/<prefix>]/{keyName}/{keyId}/decrypt (decrypt.c). */
enum hf_status hf_dke_decrypt(struct hf_dke_state *st, struct hf_request *req,
                              const struct hf_dke_target *t);

/* The key behind the link keyName for op (key.c): 404 unknown or destroyed, 503 unreadable,
 * 403 blocked, not RSA, or its state forbids op (state: the version's, 0: the current one's). */
enum hf_status hf_dke_key_find(struct hf_request *req, const char *name, struct hf_key_ref *key);
enum hf_status hf_dke_key_may(struct hf_request *req, const struct hf_key_ref *key,
                              enum hf_key_op op, CK_ULONG state, const char *what);

#endif /* HF_DKE_INTERNAL_H */
