/* What the Gmail operations (pk-decrypt.c, pk-sign.c, pk-wrap.c) share beyond the session
 * object: the algorithm a body names and the checks a wrapped private key must pass before it
 * is used (pk-check.c). Each fails the request itself and returns its status. */
#ifndef HF_CSE_PK_OPS_H
#define HF_CSE_PK_OPS_H

#include "gateway/plugins/gws-cse/pk-session.h"

/* The body's algorithm for use: unknown, or one of the other operation's, is 400. */
enum hf_status hf_cse_pk_alg_get(const struct hf_cse_call *call, struct hf_request *req,
                                 enum hf_cse_pk_use use, const struct hf_cse_pk_alg **alg);
/* The body's spki_hash_algorithm: the spec knows only "SHA-256" (400 otherwise). */
enum hf_status hf_cse_pk_spki_algorithm_check(const struct hf_cse_call *call,
                                              struct hf_request *req);
/* Before key is used for alg: an RSA key (every algorithm the spec names is RSA: 400 for an
 * EC key); with perimeter, its perimeter_id under the perimeter rules (check 8, 403); every
 * spki_hash that is set, the body's and the authorization token's, equal to
 * b64(SHA-256(SPKI)) of key (403: the key is not the one the caller or Google meant). */
enum hf_status hf_cse_pk_key_check(struct hf_cse_call *call, struct hf_request *req,
                                   const struct hf_cse_pk_key *key, const struct hf_cse_pk_alg *alg,
                                   bool perimeter);

#endif /* HF_CSE_PK_OPS_H */
