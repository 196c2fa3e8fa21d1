/* The steps every EKM operation shares, in the order of the spec's "Authorization" section
 * (internal.h, hf_ekm_call_begin). */
#include "hf-build.h"

#include "gateway/plugins/gcp-ekm/internal.h"

#include <stdio.h>
#include <string.h>

#include "gateway/plugins/gcp-ekm/kaj.h"

static const char *op_name(enum hf_ekm_op op)
{
    return op == HF_EKM_OP_WRAP ? "wrap" : "unwrap";
}

/* The API's own audit fields: what the call says about itself (spec, "Key Access
 * Justifications": reason, resource names, isKeyHealthCheck, caller email on each call). */
static void audit_fields_set(const struct hf_ekm_call *call, struct hf_request *req)
{
    const struct hf_ekm_request *b = &call->body;
    const char *reason = hf_ekm_reason_name(b->reason);

    hf_request_set_audit_field(req, "reason", reason ? reason : "absent");
    hf_request_set_audit_field(req, "resource_name", b->relative_resource_name);
    hf_request_set_audit_field(req, "full_resource_name", b->full_resource_name);
    hf_request_set_audit_field(req, "health_check", b->health_check ? "true" : "false");
    hf_request_set_audit_field(req, "body_key_path", b->key_path);
    hf_request_set_audit(req, call->email, NULL, call->key_path);
    hf_request_set_link(req, HF_EKM_LINK_TYPE, call->key_path);
}

/* Step 3: the key's reason policy. A health-check wrap moves no key material out, so it is
 * exempt (spec's Decision); an unwrap always obeys. */
static enum hf_status reason_check(const struct hf_ekm_call *call, struct hf_request *req,
                                   enum hf_ekm_op op)
{
    const struct hf_ekm_request *b = &call->body;
    const char *name = hf_ekm_reason_name(b->reason);

    if (op == HF_EKM_OP_WRAP && b->health_check) return HF_STATUS_OK;
    if (hf_ekm_kaj_allows(&call->policy->kaj, b->reason)) return HF_STATUS_OK;
    if (name == NULL)
        return hf_request_fail(req, HF_STATUS_DENIED,
                               "additionalContext.accessReasonContext.reason: key %s requires an "
                               "access reason",
                               call->key_path);
    return hf_request_fail(req, HF_STATUS_DENIED,
                           "additionalContext.accessReasonContext.reason: %s is not allowed for "
                           "key %s",
                           name, call->key_path);
}

/* Step 4: the key behind the link, and whether it may do op now. A destroyed key is 404
 * (spec's table); a store that cannot be read is 503, never 403. */
static enum hf_status key_check(struct hf_ekm_call *call, struct hf_request *req, enum hf_ekm_op op)
{
    enum hf_status st = hf_keys_by_link(HF_EKM_LINK_TYPE, call->key_path, &call->key);

    if (st == HF_STATUS_KEY_NOT_FOUND)
        return hf_request_fail(req, st, "no key is linked at %s", call->key_path);
    if (st != HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE, "the key at %s cannot be read now",
                               call->key_path);
    if (call->key.blocked)
        return hf_request_fail(req, HF_STATUS_KEY_DISABLED, "the EKM link of key %s is blocked",
                               call->key_path);
    if (call->key.key_type != CKK_AES || call->key.bits != 256)
        return hf_request_fail(req, HF_STATUS_KEY_USAGE, "key %s is not AES-256", call->key_path);
    /* Unwrap checks the blob's version state once the blob names it (unwrap.c). */
    if (op == HF_EKM_OP_UNWRAP && !(call->key.usage & HF_USAGE_DECRYPT))
        return hf_request_fail(req, HF_STATUS_KEY_USAGE, "key %s may not unwrap", call->key_path);
    if (op == HF_EKM_OP_WRAP && (st = hf_key_may(&call->key, HF_KEY_OP_ENCRYPT, 0)) != HF_STATUS_OK)
        return hf_request_fail(req, st, "key %s may not wrap: %s", call->key_path,
                               st == HF_STATUS_KEY_USAGE ? "its usage lacks encrypt"
                                                         : "its state forbids it");
    return HF_STATUS_OK;
}

enum hf_status hf_ekm_call_begin(struct hf_ekm_state *state, struct hf_request *req,
                                 const struct hf_ekm_endpoint *ep, const char *key_path,
                                 size_t key_path_len, enum hf_ekm_op op, struct hf_ekm_call *call)
{
    const unsigned char *body;
    size_t body_len = 0;
    char why[256] = "", who[160];
    enum hf_status st;

    memset(call, 0, sizeof(*call));
    call->ep = ep;
    call->rt = &state->rt[ep - state->cfg.endpoints];
    memcpy(call->key_path, key_path, key_path_len); /* validated: at most 512 */
    call->key_path[key_path_len] = '\0';
    if ((st = hf_ekm_authenticate(call, req)) != HF_STATUS_OK) return st;
    snprintf(who, sizeof(who), "endpoint %s", ep->name);
    if ((st = hf_request_rate_check(req, call->rt->rate, who)) != HF_STATUS_OK) return st;
    body = hf_request_body(req, &body_len);
    st = hf_ekm_request_parse(op, body, body_len, &call->body, why, sizeof(why));
    if (st != HF_STATUS_OK) return hf_request_fail(req, st, "%s", why);
    audit_fields_set(call, req);
    /* Step 1: a key this endpoint does not serve answers like one that does not exist. */
    if ((call->policy = hf_ekm_endpoint_key(ep, call->key_path)) == NULL)
        return hf_request_fail(req, HF_STATUS_KEY_NOT_FOUND, "no key %s under this EKM endpoint",
                               call->key_path);
    /* Step 2. */
    if (!hf_ekm_key_allows_email(call->policy, call->email))
        return hf_request_fail(req, HF_STATUS_DENIED, "%s may not %s with key %s", call->email,
                               op_name(op), call->key_path);
    if ((st = reason_check(call, req, op)) != HF_STATUS_OK) return st;
    return key_check(call, req, op);
}

void hf_ekm_call_end(struct hf_ekm_call *call)
{
    if (call == NULL) return;
    hf_ekm_request_clear(&call->body);
    if (call->token != NULL) hf_jwt_release(call->token);
    call->token = NULL;
    call->email = NULL;
}

enum hf_status hf_ekm_deadline_check(const struct hf_ekm_call *call, struct hf_request *req)
{
    return hf_request_deadline_check(req, call->ep->deadline_ms, HF_STATUS_UNAVAILABLE);
}
