/* The claims of the tokens a KACLS issues itself (specs/gws-cse.md, "Tokens": delegated and
 * migration), built here, pure, so each rule is unit-tested alone; own.c signs them. */
#ifndef HF_CSE_MINTED_H
#define HF_CSE_MINTED_H

#include <stdint.h>

#include <json-c/json.h>

/* The Decisions' lifetimes: a delegated token 15 minutes, a migration token 5. */
#define HF_CSE_DELEGATED_TTL_S 900
#define HF_CSE_MIGRATION_TTL_S 300

/* The delegated token: iss = aud = kacls_url, the caller's original email (and google_email
 * when the authn token has one), delegated_to and resource_name from the authz token, iat now
 * and exp now + 15 min. authn: the verified authn token's claims. A new object, NULL when a
 * value is missing (email, delegated_to) or out of memory. */
struct json_object *hf_cse_delegated_claims(const char *kacls_url, const struct json_object *authn,
                                            const char *delegated_to, const char *resource_name,
                                            int64_t now);
/* The migration token for a rewrap from peer_url: iss our kacls_url, aud kacls-migration,
 * kacls_url the peer's (it checks it byte for byte: it gets its own URL as we were given it),
 * resource_name, iat now, exp now + 5 min. A new object, NULL out of memory. */
struct json_object *hf_cse_migration_claims(const char *kacls_url, const char *peer_url,
                                            const char *resource_name, int64_t now);

#endif /* HF_CSE_MINTED_H */
