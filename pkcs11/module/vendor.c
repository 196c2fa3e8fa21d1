/* The "Holdfast" vendor interface (holdfast.h): request context for audit records, audit
 * durability, link state and HSM pools' live status, for programs that load the module by path
 * (gateway, provider). */
#include "hf-build.h"

#include "internal.h"

#include "pkcs11/core/audit-fields.h"

#include <stdlib.h>
#include <string.h>

static bool str_copy(const char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return !src || *dst;
}

static CK_RV HF_SetRequestContext(CK_SESSION_HANDLE session, const HF_REQUEST_CONTEXT *ctx)
{
    struct hf_session *s;
    CK_RV rv = hf_session_get(session, &s);

    if (rv != CKR_OK) return rv;
    /* A context names another API and caller: only the gateway may claim one. Clearing is free. */
    if (ctx && !hf_module_is_gateway()) {
        rv = CKR_USER_NOT_LOGGED_IN;
        goto done;
    }
    hf_session_clear_ctx(s);
    if (ctx) {
        s->has_ctx = true;
        s->ctx.received_us = ctx->received_us;
        if (!str_copy(&s->ctx.api, ctx->api) || !str_copy(&s->ctx.operation, ctx->operation) ||
            !str_copy(&s->ctx.caller, ctx->caller) ||
            !str_copy(&s->ctx.request_id, ctx->request_id) ||
            !str_copy(&s->ctx.link_type, ctx->link_type) ||
            !str_copy(&s->ctx.link_id, ctx->link_id) || !str_copy(&s->ctx.detail, ctx->detail)) {
            hf_session_clear_ctx(s);
            rv = CKR_HOST_MEMORY;
        }
    }
done:
    hf_session_put(s);
    return rv;
}

static CK_RV HF_GetLastAuditSeq(CK_SESSION_HANDLE session, CK_ULONG_LONG *seq)
{
    struct hf_session *s;
    CK_RV rv = hf_session_get(session, &s);

    if (rv != CKR_OK) return rv;
    if (!seq)
        rv = CKR_ARGUMENTS_BAD;
    else
        *seq = s->last_audit_seq;
    hf_session_put(s);
    return rv;
}

static CK_RV HF_GetLastAuditResult(CK_SESSION_HANDLE session, CK_RV *result)
{
    struct hf_session *s;
    CK_RV rv = hf_session_get(session, &s);

    if (rv != CKR_OK) return rv;
    if (!result)
        rv = CKR_ARGUMENTS_BAD;
    else
        *result = s->last_audit_seq ? s->last_audit_result : CKR_OK;
    hf_session_put(s);
    return rv;
}

static CK_RV HF_AuditWaitDurable(CK_ULONG_LONG seq)
{
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    return hf_audit_wait_durable(hf_core_audit(hf_mod.core), seq);
}

static CK_RV HF_AuditNotifyDurable(CK_ULONG_LONG seq, HF_AUDIT_DURABLE_FN fn, void *arg)
{
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(fn, CKR_ARGUMENTS_BAD);
    return hf_audit_notify_durable(hf_core_audit(hf_mod.core), seq, fn, arg);
}

/* From the store's link cache, like the check every key operation makes (object.c), so that the
 * two never disagree for longer than HF_LINK_CACHE_MS. */
static CK_RV HF_GetLinkInfo(CK_SESSION_HANDLE session, const char *link_type, const char *link_id,
                            HF_LINK_INFO *info)
{
    char key_uuid[HF_UUID_LEN + 1];
    bool blocked = false;
    struct hf_session *s;
    CK_RV rv = hf_session_get(session, &s);

    if (rv != CKR_OK) return rv;
    if (!link_type || !link_id || !info) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    rv = hf_store_link_state(hf_core_store(hf_mod.core), link_type, link_id, key_uuid, &blocked);
    if (rv != CKR_OK) goto done;
    memset(info, 0, sizeof(*info));
    memcpy(info->key_uuid, key_uuid, sizeof(info->key_uuid));
    info->blocked = blocked ? CK_TRUE : CK_FALSE;
done:
    hf_session_put(s);
    return rv;
}

/* Login is per application (PKCS#11 2.40 section 5.6), so the role is the application's; the
 * session-less 1.1 call checks it just as the 1.2 one does. */
static CK_RV HF_AuditRequest(const HF_REQUEST_CONTEXT *ctx, CK_RV result, CK_ULONG_LONG *seq)
{
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(ctx && ctx->api && ctx->operation && seq, CKR_ARGUMENTS_BAD);
    if (!hf_module_is_gateway()) return CKR_USER_NOT_LOGGED_IN;
    return hf_module_audit_request(ctx, NULL, result, false, seq);
}

static CK_RV HF_AuditSummary(const HF_REQUEST_CONTEXT *ctx, CK_RV result, CK_ULONG_LONG *seq)
{
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(ctx && ctx->api && ctx->operation && seq, CKR_ARGUMENTS_BAD);
    /* A summary is written in another API's name too: the gateway's login only. */
    if (!hf_module_is_gateway()) return CKR_USER_NOT_LOGGED_IN;
    return hf_module_audit_request(ctx, NULL, result, true, seq);
}

static CK_RV HF_GetAuditStatus(HF_AUDIT_STATUS *status)
{
    struct hf_audit_status st;
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(status, CKR_ARGUMENTS_BAD);
    hf_audit_status(hf_core_audit(hf_mod.core), &st);
    *status = (HF_AUDIT_STATUS){
        .space = (CK_ULONG)st.space,
        .free_bytes = st.free_bytes,
        .reserve_bytes = st.reserve_bytes,
        .alarm_bytes = st.alarm_bytes,
        .refused = st.refused,
        .failed = st.failed ? CK_TRUE : CK_FALSE,
    };
    return CKR_OK;
}

/* The session's audit fields (HF_SetRequestFields) go in this record and are spent with it. */
static CK_RV HF_AuditRequestSession(CK_SESSION_HANDLE session, const HF_REQUEST_CONTEXT *ctx,
                                    CK_RV result, CK_ULONG_LONG *seq)
{
    struct hf_session *s;
    CK_RV rv = hf_session_get(session, &s);

    if (rv != CKR_OK) return rv;
    if (!ctx || !ctx->api || !ctx->operation || !seq)
        rv = CKR_ARGUMENTS_BAD;
    else if (!hf_module_is_gateway())
        rv = CKR_USER_NOT_LOGGED_IN;
    else
        rv = hf_module_audit_request(ctx, s->fields, result, false, seq);
    free(s->fields);
    s->fields = NULL;
    hf_session_put(s);
    return rv;
}

/* A plugin's link type, registered by the gateway at start: a record in the core's name of a
 * change to the store, so the gateway login only. */
static CK_RV HF_RegisterLinkType(CK_SESSION_HANDLE session, const char *link_type)
{
    struct hf_actor who;
    char caller[64];
    struct hf_session *s;
    CK_RV rv = hf_session_get(session, &s);

    if (rv != CKR_OK) return rv;
    if (!link_type)
        rv = CKR_ARGUMENTS_BAD;
    else if (!hf_module_is_gateway())
        rv = CKR_USER_NOT_LOGGED_IN;
    if (rv == CKR_OK) {
        hf_module_actor(s, &who, caller, sizeof(caller));
        rv = hf_core_link_type_add(hf_mod.core, link_type, &who, NULL);
    }
    hf_session_put(s);
    return rv;
}

static CK_RV HF_SetRequestFields(CK_SESSION_HANDLE session, const char *fields)
{
    char *canon = NULL;
    struct hf_session *s;
    CK_RV rv = hf_session_get(session, &s);

    if (rv != CKR_OK) return rv;
    if (fields && !hf_module_is_gateway())
        rv = CKR_USER_NOT_LOGGED_IN;
    else if (fields)
        rv = hf_audit_fields_canon(fields, &canon);
    if (rv == CKR_OK) {
        free(s->fields);
        s->fields = canon;
    }
    hf_session_put(s);
    return rv;
}

/* Only the gateway sets a request context, so only it may say how that request is recorded. */
static CK_RV HF_SetRequestAudit(CK_SESSION_HANDLE session, CK_FLAGS flags)
{
    struct hf_session *s;
    CK_RV rv = hf_session_get(session, &s);

    if (rv != CKR_OK) return rv;
    if ((flags & ~HF_REQUEST_AUDIT_FAILURES_ONLY) != 0)
        rv = CKR_ARGUMENTS_BAD;
    else if (flags && !hf_module_is_gateway())
        rv = CKR_USER_NOT_LOGGED_IN;
    else
        s->audit_flags = flags;
    hf_session_put(s);
    return rv;
}

/* From the store, not a cache: a lookup by version UUID (OCI, SAP, DKE) that the gateway caches
 * for a second, while the link it finds is read through HF_GetLinkInfo on every call. */
static CK_RV HF_GetKeyLink(CK_SESSION_HANDLE session, const char *key_uuid, const char *link_type,
                           char *link_id, CK_ULONG *len)
{
    struct hf_link *links = NULL;
    const char *found = NULL;
    struct hf_session *s;
    size_t n = 0, need;
    CK_RV rv = hf_session_get(session, &s);

    if (rv != CKR_OK) return rv;
    if (!key_uuid || !link_type || !len || !hf_uuid_is_valid(key_uuid)) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    rv = hf_store_link_list(hf_core_store(hf_mod.core), key_uuid, &links, &n);
    for (size_t i = 0; rv == CKR_OK && !found && i < n; i++)
        if (strcmp(links[i].type, link_type) == 0) found = links[i].ext_id;
    if (rv != CKR_OK) goto done;
    if (!found) {
        rv = CKR_KEY_HANDLE_INVALID;
        goto done;
    }
    need = strlen(found) + 1;
    if (link_id && *len < need)
        rv = CKR_BUFFER_TOO_SMALL;
    else if (link_id)
        memcpy(link_id, found, need);
    *len = (CK_ULONG)need;
done:
    for (size_t i = 0; i < n; i++)
        hf_link_clear(&links[i]);
    free(links);
    hf_session_put(s);
    return rv;
}

_Static_assert(HF_POOL_LATENCY_BUCKET_COUNT == HF_POOL_LATENCY_BUCKETS,
               "holdfast.h's pool latency buckets are pool.h's");
_Static_assert(HF_POOL_NAME_BUF == HF_POOL_NAME_MAX + 1, "pool and member names fit");
_Static_assert(HF_POOL_MODEL_BUF == HF_CORE_POOL_MODEL_MAX, "models fit");

static void pool_member_export(const struct hf_core_pool_live *l, HF_POOL_MEMBER_STATUS *out)
{
    memset(out, 0, sizeof(*out));
    memcpy(out->pool, l->pool, sizeof(out->pool));
    memcpy(out->member, l->member, sizeof(out->member));
    memcpy(out->model, l->model, sizeof(out->model));
    out->open_result = l->open_rv;
    out->healthy = l->status.healthy ? CK_TRUE : CK_FALSE;
    out->disabled = l->status.disabled ? CK_TRUE : CK_FALSE;
    out->concurrency = l->status.concurrency;
    out->in_flight = l->status.in_flight;
    out->calls = l->status.calls;
    out->queued = l->status.queued;
    out->failures = l->status.failures;
    out->failovers = l->status.failovers;
    out->last_latency_us = l->status.last_latency_us;
    out->latency_sum_us = l->status.latency_sum_us;
    for (size_t i = 0; i < HF_POOL_LATENCY_BUCKET_COUNT; i++)
        out->latency[i] = l->status.latency[i];
    out->queue_waiting = (CK_ULONG)l->queue.waiting;
    out->queue_max = (CK_ULONG)l->queue.queue_max;
    out->throttled = l->queue.throttled;
    out->unavailable = l->queue.unavailable;
}

/* State, not secrets, and no record: a scrape every few seconds must not fill the audit log. The
 * snapshot is taken afresh each call, so the two calls of the convention may disagree when a
 * pool was added between them: the second then answers CKR_BUFFER_TOO_SMALL again. */
static CK_RV HF_GetPoolStatus(HF_POOL_MEMBER_STATUS *members, CK_ULONG *count)
{
    struct hf_core_pool_live *live = NULL;
    size_t n = 0;
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(count, CKR_ARGUMENTS_BAD);
    if ((rv = hf_core_pools_status(hf_mod.core, &live, &n)) != CKR_OK) return rv;
    if (members && *count < n) {
        rv = CKR_BUFFER_TOO_SMALL;
    } else if (members) {
        for (size_t i = 0; i < n; i++)
            pool_member_export(&live[i], &members[i]);
    }
    *count = (CK_ULONG)n;
    free(live);
    return rv;
}

const HF_FUNCTION_LIST hf_vendor_functions = {
    {HF_INTERFACE_VERSION_MAJOR, HF_INTERFACE_VERSION_MINOR},
    HF_SetRequestContext,
    HF_GetLastAuditSeq,
    HF_AuditWaitDurable,
    HF_AuditNotifyDurable,
    HF_GetLinkInfo,
    HF_AuditRequest,
    HF_AuditSummary,
    HF_GetAuditStatus,
    HF_AuditRequestSession,
    HF_RegisterLinkType,
    HF_SetRequestFields,
    HF_GetKeyLink,
    HF_SetRequestAudit,
    HF_GetLastAuditResult,
    HF_GetPoolStatus,
};
