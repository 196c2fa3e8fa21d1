/* The spec's token checks 3-9 (specs/gws-cse.md, "Checks, in order") as pure functions over a
 * prefix's configuration and the verified tokens' claims, so each rule is unit-tested alone;
 * checks.c also runs them in order on a call (internal.h, hf_cse_checks_run). */
#ifndef HF_CSE_CHECKS_H
#define HF_CSE_CHECKS_H

#include <stdbool.h>

#include <json-c/json.h>

#include "gateway/plugins/gws-cse/config.h"
#include "gateway/plugins/gws-cse/request.h"

/* Check 3: role is one the op allows (an op without authz allows none and is never asked). */
bool hf_cse_role_is_allowed(const struct hf_cse_op_info *info, const char *role);
/* Check 4's authn side: google_email when the token has it (a non-empty string), else email;
 * NULL when neither. Borrowed from claims. */
const char *hf_cse_authn_identity(const struct json_object *claims);
/* Check 4: the two emails, ignoring case (ASCII: Google's addresses). false when either is
 * NULL or empty. */
bool hf_cse_same_user(const char *authz_email, const char *authn_identity);
/* Check 5: email_type absent or "google", unless guests are allowed. */
bool hf_cse_email_type_is_allowed(const char *email_type, bool guests);
/* Check 6: kacls_url byte for byte. */
bool hf_cse_kacls_url_matches(const char *claim, const char *kacls_url);
/* Check 6: kacls_owner_domain, when the token sets it and a domain is configured, equals it
 * (without case: a DNS name). Without owner_domain there is nothing to hold it to. */
bool hf_cse_owner_domain_is_allowed(const char *claim, const char *owner_domain);
/* Check 7: a delegated authn token's delegated_to and resource_name equal the authz token's. */
bool hf_cse_delegation_matches(const struct json_object *authz, const struct json_object *authn);
/* Check 8: perimeter_id "" (or NULL) passes; with no rules configured every id passes; else the
 * id's rule must exist and each claim=glob match a string claim of authn (fnmatch, no flags).
 * authn NULL (an op without authn) fails a listed id. */
bool hf_cse_perimeter_is_allowed(const struct hf_cse_prefix *px, const char *perimeter_id,
                                 const struct json_object *authn);
/* A string claim of claims, NULL when absent or not a string. */
const char *hf_cse_claim(const struct json_object *claims, const char *name);

#endif /* HF_CSE_CHECKS_H */
