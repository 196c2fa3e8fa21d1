/* The prefix's own signing key at run time (own.c): the key set of its current and previous
 * versions (/certs, and the verifier of our delegated tokens), minting with its current
 * version, and the peers' migration-token verifier. internal.h's hf_cse_tokens_start_own and
 * _stop_own make and free it.
 *
 * Rotation without SIGHUP: every use reads the signing link through hf_keys_by_link (cached a
 * second by the gateway) and, when its current version is not the one the key set was built
 * for, builds a new set (outside any lock: it reads the module) and swaps it in; sets are
 * reference-counted, so a verify in flight keeps the old one. A token is always minted with
 * the version the link names now, and the set that verifies it holds that version and the one
 * before, so a token minted just before a rotation still verifies after it. */
#ifndef HF_CSE_OWN_H
#define HF_CSE_OWN_H

#include "gateway/plugins/gws-cse/internal.h"

/* At most this many rewraps of one prefix wait on a peer at once (each holds a worker thread
 * for up to the peer timeout); more answer 429. */
#define HF_CSE_REWRAP_CONCURRENCY 4u

/* claims signed RS256 by the signing key's current version (kid: that version's UUID), as
 * the request's key operation named operation, after the key's state and usage allow
 * signing. HF_STATUS_OK with *token (free()); otherwise the request is failed (501 when the
 * prefix has no signing key, 403 when the key may not sign, 503 when the store cannot say). */
enum hf_status hf_cse_own_mint(struct hf_cse_call *call, struct hf_request *req,
                               const char *operation, const struct json_object *claims,
                               char **token);
/* {"keys":[current, previous]} as a new object; {"keys":[]} without a signing key. NULL when
 * out of memory or the key set cannot be read (no set was ever built). */
struct json_object *hf_cse_own_jwks(struct hf_cse_prefix_rt *rt);
/* A rewrap slot (HF_CSE_REWRAP_CONCURRENCY per prefix): false when all are taken. */
bool hf_cse_own_rewrap_enter(struct hf_cse_prefix_rt *rt);
void hf_cse_own_rewrap_leave(struct hf_cse_prefix_rt *rt);

#endif /* HF_CSE_OWN_H */
