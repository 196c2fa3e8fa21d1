/* The spec's "Checks, in order" 3-10 (1 is request.c's, 2 tokens.c's): pure rules over claims
 * (checks.h), then hf_cse_checks_run applying them to a call in the spec's order, each refusal
 * audited with the spec's status (403; the KEK's link missing 404, its store down 503). */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- the rules ------------------------------------------------------------------------------- */

const char *hf_cse_claim(const struct json_object *claims, const char *name)
{
    struct json_object *v = NULL;

    if (claims == NULL || name == NULL ||
        !json_object_object_get_ex((struct json_object *)claims, name, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

bool hf_cse_role_is_allowed(const struct hf_cse_op_info *info, const char *role)
{
    if (info == NULL || info->roles == NULL || role == NULL) return false;
    for (const char *const *r = info->roles; *r != NULL; r++)
        if (strcmp(*r, role) == 0) return true;
    return false;
}

const char *hf_cse_authn_identity(const struct json_object *claims)
{
    const char *google = hf_cse_claim(claims, "google_email");

    return google != NULL && *google != '\0' ? google : hf_cse_claim(claims, "email");
}

bool hf_cse_same_user(const char *authz_email, const char *authn_identity)
{
    return authz_email != NULL && authn_identity != NULL && *authz_email != '\0' &&
           strcasecmp(authz_email, authn_identity) == 0;
}

bool hf_cse_email_type_is_allowed(const char *email_type, bool guests)
{
    return guests || email_type == NULL || strcmp(email_type, "google") == 0;
}

bool hf_cse_kacls_url_matches(const char *claim, const char *kacls_url)
{
    return claim != NULL && kacls_url != NULL && strcmp(claim, kacls_url) == 0;
}

bool hf_cse_owner_domain_is_allowed(const char *claim, const char *owner_domain)
{
    return claim == NULL || owner_domain == NULL || strcasecmp(claim, owner_domain) == 0;
}

static bool same_string(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

bool hf_cse_delegation_matches(const struct json_object *authz, const struct json_object *authn)
{
    return same_string(hf_cse_claim(authz, "delegated_to"), hf_cse_claim(authn, "delegated_to")) &&
           same_string(hf_cse_claim(authz, "resource_name"), hf_cse_claim(authn, "resource_name"));
}

bool hf_cse_perimeter_is_allowed(const struct hf_cse_prefix *px, const char *perimeter_id,
                                 const struct json_object *authn)
{
    const struct hf_cse_perimeter *pm;

    if (perimeter_id == NULL || *perimeter_id == '\0' || px == NULL || px->nperimeters == 0)
        return true;
    if ((pm = hf_cse_prefix_perimeter(px, perimeter_id)) == NULL || authn == NULL) return false;
    for (size_t i = 0; i < pm->nrules; i++) {
        const char *v = hf_cse_claim(authn, pm->rules[i].claim);
        if (v == NULL || fnmatch(pm->rules[i].glob, v, 0) != 0) return false;
    }
    return true;
}

/* ---- on a call ------------------------------------------------------------------------------- */

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* The values the op binds and audits: privileged ops take them from the body, the others from
 * the authorization token. */
static void effective_set(struct hf_cse_call *call)
{
    const struct json_object *az = call->authz ? hf_jwt_claims(call->authz) : NULL;
    const struct json_object *an = call->authn ? hf_jwt_claims(call->authn) : NULL;
    const struct hf_cse_request *b = &call->body;

    call->user = az ? hf_cse_claim(az, "email") : hf_cse_authn_identity(an);
    if (call->info->privileged) {
        call->resource_name = or_empty(b->resource_name.s);
        call->perimeter_id = or_empty(b->perimeter_id.s);
    } else {
        call->resource_name = or_empty(hf_cse_claim(az, "resource_name"));
        call->perimeter_id = or_empty(hf_cse_claim(az, "perimeter_id"));
    }
    call->delegated_to = hf_cse_claim(az, "delegated_to");
}

/* Check 10's audit record says which link the call came through; the fields go into the
 * request's one record, success or failure. */
static void audit_set(const struct hf_cse_call *call, struct hf_request *req)
{
    const char *authn_user = call->authn ? hf_cse_authn_identity(hf_jwt_claims(call->authn)) : NULL;

    hf_request_set_audit(req, call->user, NULL, call->px->kek);
    hf_request_set_link(req, HF_CSE_LINK_TYPE, call->px->kek);
    hf_request_set_audit_field(req, "user", call->user);
    hf_request_set_audit_field(req, "op", call->info->name);
    hf_request_set_audit_field(req, "resource_name", call->resource_name);
    hf_request_set_audit_field(req, "perimeter_id", call->perimeter_id);
    /* Opaque (spec): stored as given; the record's JSON escapes it. */
    hf_request_set_audit_field(req, "reason", or_empty(call->body.reason.s));
    hf_request_set_audit_field(req, "delegated_to", call->delegated_to);
    /* Check 4 refuses a user mismatch: the record then names both identities. */
    if (authn_user != NULL && (call->user == NULL || strcasecmp(authn_user, call->user) != 0))
        hf_request_set_audit_field(req, "authn_user", authn_user);
    if (call->authn_kind == HF_CSE_AUTHN_DELEGATED || call->authn_kind == HF_CSE_AUTHN_MIGRATION)
        hf_request_set_audit_field(
            req, "authn", call->authn_kind == HF_CSE_AUTHN_DELEGATED ? "delegated" : "migration");
}

/* Checks 3-6: the authorization token's role, user, guest rule, URL and owner domain. */
static enum hf_status authz_checks(const struct hf_cse_call *call, struct hf_request *req)
{
    const struct json_object *az = hf_jwt_claims(call->authz);
    const struct json_object *an = call->authn ? hf_jwt_claims(call->authn) : NULL;
    const char *role = hf_cse_claim(az, "role");

    if (!hf_cse_role_is_allowed(call->info, role))
        return hf_request_fail(req, HF_STATUS_DENIED, "authorization: role %.32s may not %s",
                               or_empty(role), call->info->name);
    if (call->op == HF_CSE_OP_DELEGATE && (call->delegated_to == NULL || !*call->delegated_to))
        return hf_request_fail(req, HF_STATUS_DENIED, "authorization: delegate needs delegated_to");
    if (an != NULL && !hf_cse_same_user(hf_cse_claim(az, "email"), hf_cse_authn_identity(an)))
        return hf_request_fail(req, HF_STATUS_DENIED,
                               "the authorization's email is not the authentication's user");
    if (!hf_cse_email_type_is_allowed(hf_cse_claim(az, "email_type"), call->px->guests))
        return hf_request_fail(req, HF_STATUS_DENIED,
                               "authorization: email_type %.32s is not allowed here (guests)",
                               hf_cse_claim(az, "email_type"));
    if (!hf_cse_kacls_url_matches(hf_cse_claim(az, "kacls_url"), call->px->kacls_url))
        return hf_request_fail(req, HF_STATUS_DENIED,
                               "authorization: kacls_url is not this KACLS's");
    if (!hf_cse_owner_domain_is_allowed(hf_cse_claim(az, "kacls_owner_domain"),
                                        call->px->owner_domain))
        return hf_request_fail(req, HF_STATUS_DENIED,
                               "authorization: kacls_owner_domain is not this KACLS's");
    return HF_STATUS_OK;
}

/* Check 7: a delegated token serves the one resource and delegate it names; a migration token
 * (privilegedunwrap) was minted for this KACLS and this resource. */
static enum hf_status authn_binding_check(const struct hf_cse_call *call, struct hf_request *req)
{
    const struct json_object *an = hf_jwt_claims(call->authn);

    if (call->authn_kind == HF_CSE_AUTHN_DELEGATED) {
        if (call->authz == NULL)
            return hf_request_fail(req, HF_STATUS_DENIED, "a delegated token does not serve %s",
                                   call->info->name);
        if (!hf_cse_delegation_matches(hf_jwt_claims(call->authz), an))
            return hf_request_fail(req, HF_STATUS_DENIED,
                                   "the delegated token's delegated_to or resource_name is not "
                                   "the authorization's");
    }
    if (call->authn_kind == HF_CSE_AUTHN_MIGRATION &&
        (!hf_cse_kacls_url_matches(hf_cse_claim(an, "kacls_url"), call->px->kacls_url) ||
         !same_string(hf_cse_claim(an, "resource_name"), call->resource_name)))
        return hf_request_fail(req, HF_STATUS_DENIED,
                               "the migration token's kacls_url or resource_name is not this "
                               "request's");
    return HF_STATUS_OK;
}

enum hf_status hf_cse_perimeter_check(struct hf_cse_call *call, struct hf_request *req,
                                      const char *perimeter_id)
{
    /* Absent tokens skip their checks (spec): the rules are over authn claims. */
    if (call->authn == NULL ||
        hf_cse_perimeter_is_allowed(call->px, perimeter_id, hf_jwt_claims(call->authn)))
        return HF_STATUS_OK;
    return hf_request_fail(req, HF_STATUS_DENIED,
                           "perimeter %.128s: the authentication does not meet its rule",
                           perimeter_id);
}

/* Check 9: privileged ops are an admin's, by an IdP token (privilegedunwrap: or a peer's
 * migration token, checked at 7). */
static enum hf_status privilege_check(const struct hf_cse_call *call, struct hf_request *req)
{
    const char *email;

    if (call->authn_kind == HF_CSE_AUTHN_MIGRATION) return HF_STATUS_OK;
    email = hf_cse_claim(hf_jwt_claims(call->authn), "email");
    if (call->authn_kind == HF_CSE_AUTHN_IDP && hf_cse_prefix_is_admin(call->px, email))
        return HF_STATUS_OK;
    return hf_request_fail(req, HF_STATUS_DENIED, "%s is not an administrator of this KACLS",
                           or_empty(email));
}

/* Check 10: the KEK behind the link, and whether the op may use it now. The kill switch holds
 * for every op, delegate included; a blob's own version is judged when it is opened (kek.c). */
static enum hf_status kek_check(struct hf_cse_call *call, struct hf_request *req)
{
    const char *link = call->px->kek;
    enum hf_status st = hf_keys_by_link(HF_CSE_LINK_TYPE, link, &call->kek);

    if (st == HF_STATUS_KEY_NOT_FOUND)
        return hf_request_fail(req, st, "no key is linked at gws-cse link %s", link);
    if (st != HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE, "the KEK of %s cannot be read now",
                               link);
    if (call->kek.blocked)
        return hf_request_fail(req, HF_STATUS_KEY_DISABLED, "key disabled: link %s is blocked",
                               link);
    if (call->info->kek == HF_CSE_KEK_NONE) return HF_STATUS_OK;
    if (call->kek.key_type != CKK_AES || call->kek.bits != 256)
        return hf_request_fail(req, HF_STATUS_KEY_USAGE, "the KEK of %s is not AES-256", link);
    if (call->info->kek == HF_CSE_KEK_UNWRAP && !(call->kek.usage & HF_USAGE_DECRYPT))
        return hf_request_fail(req, HF_STATUS_KEY_USAGE,
                               "key disabled: the KEK of %s may not "
                               "decrypt",
                               link);
    if (call->info->kek == HF_CSE_KEK_WRAP &&
        (st = hf_key_may(&call->kek, HF_KEY_OP_ENCRYPT, 0)) != HF_STATUS_OK)
        return hf_request_fail(req, st, "key disabled: the KEK of %s may not encrypt (%s)", link,
                               st == HF_STATUS_KEY_USAGE ? "usage" : "state");
    return HF_STATUS_OK;
}

enum hf_status hf_cse_checks_run(struct hf_cse_call *call, struct hf_request *req)
{
    enum hf_status st;

    effective_set(call);
    audit_set(call, req);
    if (call->authz != NULL && (st = authz_checks(call, req)) != HF_STATUS_OK) return st;
    if (call->authn != NULL && (st = authn_binding_check(call, req)) != HF_STATUS_OK) return st;
    if ((st = hf_cse_perimeter_check(call, req, call->perimeter_id)) != HF_STATUS_OK) return st;
    if (call->info->privileged && (st = privilege_check(call, req)) != HF_STATUS_OK) return st;
    return kek_check(call, req);
}
