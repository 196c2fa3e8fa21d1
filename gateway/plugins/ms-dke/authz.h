/* Who a verified Entra ID token names and whether a key lets them decrypt (specs/ms-dke.md,
 * "Authorization"). Pure: it reads the token's claims, so unit tests drive it. */
#ifndef HF_DKE_AUTHZ_H
#define HF_DKE_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "gateway/plugins/ms-dke/config.h"

/* The caller's address: claim "email", else "upn", trimmed of blanks, into out. false when
 * neither is a non-empty string that fits. */
bool hf_dke_identity(const struct json_object *claims, char *out, size_t outlen);
/* Whether key's mode lets the token's caller in: email mode compares hf_dke_identity ignoring
 * case with the allowlist; group mode intersects the "groups" array (object ids, case
 * ignored) with it. No identity claim, or no match: false. */
bool hf_dke_key_allows(const struct hf_dke_key *key, const struct json_object *claims);
/* Whether the space-separated "scp" claim holds scope. */
bool hf_dke_scope_has(const struct json_object *claims, const char *scope);

#endif /* HF_DKE_AUTHZ_H */
