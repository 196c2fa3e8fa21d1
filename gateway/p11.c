/* The PKCS#11 connection (p11.h) and plugin.h's hf_p11_* and hf_status_from_ckr.
 *
 * Sessions are per thread (a pthread key), so the request path takes no lock of ours: PKCS#11
 * sessions must not be used by two threads at once, and a libmicrohttpd worker serves one
 * request at a time. */
#include "hf-build.h"

#include "gateway/audit.h"
#include "gateway/config.h"
#include "gateway/p11.h"
#include "gateway/request.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

struct thread_sessions {
    CK_SESSION_HANDLE op, lookup;
    unsigned generation; /* p11.generation when opened: sessions of a closed module are stale */
};

static struct {
    void *dl;
    CK_FUNCTION_LIST_PTR fn;
    const HF_FUNCTION_LIST *vendor;
    bool has_audit_request; /* vendor interface 1.1 */
    bool has_audit_summary; /* 1.2: HF_AuditSummary and HF_GetAuditStatus */
    bool has_1_3;           /* HF_RegisterLinkType, HF_SetRequestFields, HF_GetKeyLink */
    bool has_1_4;           /* HF_SetRequestAudit */
    bool has_1_5;           /* HF_GetLastAuditResult */
    CK_SLOT_ID slot;
    CK_SESSION_HANDLE login_session;
    char *module;
    atomic_bool open;
    atomic_uint generation;
    pthread_key_t key;
    pthread_once_t key_once;
} p11 = {.key_once = PTHREAD_ONCE_INIT};

static void thread_sessions_free(void *arg)
{
    struct thread_sessions *ts = arg;

    /* A worker thread ends (the server stops): its sessions go with it, if the module they
     * belong to is still the one loaded. */
    if (ts && atomic_load(&p11.open) && ts->generation == atomic_load(&p11.generation)) {
        if (ts->op != CK_INVALID_HANDLE) p11.fn->C_CloseSession(ts->op);
        if (ts->lookup != CK_INVALID_HANDLE) p11.fn->C_CloseSession(ts->lookup);
    }
    free(ts);
}

static void key_make(void)
{
    pthread_key_create(&p11.key, thread_sessions_free);
}

static struct thread_sessions *thread_sessions(void)
{
    struct thread_sessions *ts;

    pthread_once(&p11.key_once, key_make);
    ts = pthread_getspecific(p11.key);
    if (!ts) {
        if (!(ts = calloc(1, sizeof(*ts)))) return NULL;
        if (pthread_setspecific(p11.key, ts) != 0) {
            free(ts);
            return NULL;
        }
    }
    if (ts->generation != atomic_load(&p11.generation)) {
        ts->op = ts->lookup = CK_INVALID_HANDLE;
        ts->generation = atomic_load(&p11.generation);
    }
    return ts;
}

static CK_RV session_get(CK_SESSION_HANDLE *which, CK_SESSION_HANDLE *out)
{
    CK_RV rv;

    if (*which == CK_INVALID_HANDLE) {
        rv = p11.fn->C_OpenSession(p11.slot, CKF_SERIAL_SESSION, NULL, NULL, which);
        if (rv != CKR_OK) {
            *which = CK_INVALID_HANDLE;
            return rv;
        }
    }
    *out = *which;
    return CKR_OK;
}

CK_RV hf_gw_p11_lookup_session(CK_SESSION_HANDLE *session)
{
    struct thread_sessions *ts;

    if (!atomic_load(&p11.open)) return CKR_CRYPTOKI_NOT_INITIALIZED;
    if (!(ts = thread_sessions())) return CKR_HOST_MEMORY;
    return session_get(&ts->lookup, session);
}

void hf_gw_p11_sessions_drop(void)
{
    struct thread_sessions *ts;

    if (!atomic_load(&p11.open) || !(ts = thread_sessions())) return;
    /* Closing may fail (the handle is already gone): nothing to do about it. */
    if (ts->op != CK_INVALID_HANDLE) p11.fn->C_CloseSession(ts->op);
    if (ts->lookup != CK_INVALID_HANDLE) p11.fn->C_CloseSession(ts->lookup);
    ts->op = ts->lookup = CK_INVALID_HANDLE;
}

bool hf_gw_p11_rv_is_session_lost(CK_RV rv)
{
    return rv == CKR_SESSION_HANDLE_INVALID || rv == CKR_SESSION_CLOSED ||
           rv == CKR_USER_NOT_LOGGED_IN || rv == CKR_TOKEN_NOT_PRESENT || rv == CKR_DEVICE_REMOVED;
}

char *hf_gw_pin_read(const char *path, char *err, size_t errlen)
{
    char buf[512];
    FILE *fp = fopen(path, "r");
    size_t len;

    if (!fp) {
        snprintf(err, errlen, "pin_file %s: %s", path, strerror(errno));
        return NULL;
    }
    if (!hf_gw_secret_file_is_usable(fileno(fp), "pin_file", path, err, errlen)) {
        fclose(fp);
        return NULL;
    }
    if (!fgets(buf, sizeof(buf), fp)) buf[0] = '\0';
    fclose(fp);
    len = strcspn(buf, "\r\n");
    buf[len] = '\0';
    if (len == 0) {
        OPENSSL_cleanse(buf, sizeof(buf));
        snprintf(err, errlen, "pin_file %s: the first line is empty", path);
        return NULL;
    }
    char *pin = strdup(buf);
    OPENSSL_cleanse(buf, sizeof(buf));
    if (!pin) snprintf(err, errlen, "out of memory");
    return pin;
}

static bool slot_find(const char *label, char *err, size_t errlen)
{
    CK_SLOT_ID slots[64];
    CK_ULONG n = 64;
    CK_RV rv = p11.fn->C_GetSlotList(CK_TRUE, slots, &n);

    if (rv != CKR_OK) {
        snprintf(err, errlen, "C_GetSlotList: 0x%lx", (unsigned long)rv);
        return false;
    }
    for (CK_ULONG i = 0; i < n; i++) {
        CK_TOKEN_INFO ti;
        size_t len = sizeof(ti.label);

        if (p11.fn->C_GetTokenInfo(slots[i], &ti) != CKR_OK) continue;
        while (len > 0 && ti.label[len - 1] == ' ')
            len--;
        if (!label || (strlen(label) == len && memcmp(ti.label, label, len) == 0)) {
            p11.slot = slots[i];
            return true;
        }
    }
    snprintf(err, errlen, "no token%s%s%s in the module", label ? " labelled \"" : "",
             label ? label : "", label ? "\"" : "");
    return false;
}

/* The "Holdfast" vendor interface (holdfast.h), when the module has it. */
static void vendor_find(void)
{
    CK_C_GetInterface get_interface = (CK_C_GetInterface)dlsym(p11.dl, "C_GetInterface");
    CK_INTERFACE_PTR iface = NULL;
    const HF_FUNCTION_LIST *v;

    if (!get_interface ||
        get_interface((CK_UTF8CHAR_PTR)HF_INTERFACE_NAME, NULL, &iface, 0) != CKR_OK || !iface ||
        !iface->pFunctionList)
        return;
    v = iface->pFunctionList;
    if (v->version.major != HF_INTERFACE_VERSION_MAJOR) return;
    p11.vendor = v;
    p11.has_audit_request = v->version.minor >= 1 && v->HF_AuditRequest;
    p11.has_audit_summary = v->version.minor >= 2 && v->HF_AuditSummary && v->HF_GetAuditStatus;
    p11.has_1_3 = v->version.minor >= 3 && v->HF_RegisterLinkType && v->HF_SetRequestFields &&
                  v->HF_GetKeyLink;
    p11.has_1_4 = p11.has_1_3 && v->version.minor >= 4 && v->HF_SetRequestAudit;
    p11.has_1_5 = p11.has_1_4 && v->version.minor >= 5 && v->HF_GetLastAuditResult;
}

/* Holdfast's module lets only its gateway login attach request contexts; a gateway started with
 * the user PIN would answer every request with an internal error, so it says so at start. */
static bool gateway_role_is_granted(char *err, size_t errlen)
{
    const HF_REQUEST_CONTEXT probe = {.api = "holdfastd", .operation = "start"};
    CK_RV rv;

    if (!p11.vendor || !p11.vendor->HF_SetRequestContext) return true;
    rv = p11.vendor->HF_SetRequestContext(p11.login_session, &probe);
    p11.vendor->HF_SetRequestContext(p11.login_session, NULL);
    if (rv == CKR_OK) return true;
    snprintf(err, errlen,
             "the module refuses request contexts (0x%lx): pin_file must hold the gateway PIN "
             "(holdfast init writes token-gateway.pin), not the user PIN",
             (unsigned long)rv);
    return false;
}

bool hf_gw_p11_open(const char *module, const char *token_label, const char *pin, char *err,
                    size_t errlen)
{
    CK_C_INITIALIZE_ARGS args = {.flags = CKF_OS_LOCKING_OK};
    CK_C_GetFunctionList get_list;
    CK_RV rv;

    if (atomic_load(&p11.open)) return true;
    if (!module) {
        snprintf(err, errlen, "no PKCS#11 module");
        return false;
    }
    /* RTLD_LOCAL: the module's symbols stay its own; RTLD_NOW: a broken module fails here;
     * RTLD_NODELETE: OpenSSL state the module keeps (its library context) stays reachable after
     * C_Finalize, rather than showing up as leaks once the code that points at it is unmapped. */
    if (!(p11.dl = dlopen(module, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE))) {
        snprintf(err, errlen, "cannot load %s: %s", module, dlerror());
        return false;
    }
    get_list = (CK_C_GetFunctionList)dlsym(p11.dl, "C_GetFunctionList");
    if (!get_list || get_list(&p11.fn) != CKR_OK || !p11.fn) {
        snprintf(err, errlen, "%s: no C_GetFunctionList", module);
        goto fail;
    }
    if ((rv = p11.fn->C_Initialize(&args)) != CKR_OK) {
        snprintf(err, errlen, "%s: C_Initialize: 0x%lx", module, (unsigned long)rv);
        goto fail;
    }
    if (!slot_find(token_label, err, errlen)) goto fail_finalize;
    vendor_find();
    /* One session kept for the process's life keeps the login (PKCS#11 logins are per
     * application and end with the last session). */
    rv = p11.fn->C_OpenSession(p11.slot, CKF_SERIAL_SESSION, NULL, NULL, &p11.login_session);
    if (rv != CKR_OK) {
        snprintf(err, errlen, "C_OpenSession: 0x%lx", (unsigned long)rv);
        goto fail_finalize;
    }
    if (pin) {
        rv = p11.fn->C_Login(p11.login_session, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin));
        if (rv != CKR_OK && rv != CKR_USER_ALREADY_LOGGED_IN) {
            snprintf(err, errlen, "C_Login: 0x%lx%s", (unsigned long)rv,
                     rv == CKR_PIN_INCORRECT ? " (wrong PIN)" : "");
            goto fail_finalize;
        }
    }
    if (!gateway_role_is_granted(err, errlen)) goto fail_finalize;
    if (!(p11.module = strdup(module))) {
        snprintf(err, errlen, "out of memory");
        goto fail_finalize;
    }
    atomic_fetch_add(&p11.generation, 1);
    atomic_store(&p11.open, true);
    return true;
fail_finalize:
    p11.fn->C_Finalize(NULL);
fail:
    dlclose(p11.dl);
    p11.dl = NULL;
    p11.fn = NULL;
    p11.vendor = NULL;
    return false;
}

void hf_gw_p11_close(void)
{
    if (!atomic_exchange(&p11.open, false)) return;
    /* C_Finalize closes every session, the threads' included. */
    p11.fn->C_Finalize(NULL);
    atomic_fetch_add(&p11.generation, 1);
    /* Worker threads free their session record as they end; the closing thread (holdfastd's
     * main, a test's) would otherwise carry its own to exit. */
    pthread_once(&p11.key_once, key_make);
    free(pthread_getspecific(p11.key));
    pthread_setspecific(p11.key, NULL);
    /* The module is never dlclose'd: a thread of its (the audit writer) could still be leaving,
     * and sanitizer reports are clearer with its symbols mapped. */
    p11.fn = NULL;
    p11.vendor = NULL;
    p11.has_audit_request = false;
    p11.has_audit_summary = false;
    p11.has_1_3 = false;
    p11.has_1_4 = false;
    p11.has_1_5 = false;
    free(p11.module);
    p11.module = NULL;
}

bool hf_gw_p11_is_open(void)
{
    return atomic_load(&p11.open);
}

const char *hf_gw_p11_module(void)
{
    return p11.module;
}

enum hf_gw_p11_health hf_gw_p11_health(void)
{
    CK_TOKEN_INFO ti;
    CK_SESSION_HANDLE s;
    HF_LINK_INFO info;
    CK_RV rv;

    if (!atomic_load(&p11.open)) return HF_GW_P11_DOWN;
    if (p11.fn->C_GetTokenInfo(p11.slot, &ti) != CKR_OK) return HF_GW_P11_DOWN;
    if (!p11.vendor) return HF_GW_P11_UP;
    /* Token info is answered from memory; a link lookup reaches the key store, so it shows a
     * store that stopped answering. No such link is the healthy answer. */
    if ((rv = hf_gw_p11_lookup_session(&s)) != CKR_OK) return HF_GW_P11_DOWN;
    rv = p11.vendor->HF_GetLinkInfo(s, "holdfastd", "health-probe", &info);
    if (hf_gw_p11_rv_is_session_lost(rv)) hf_gw_p11_sessions_drop();
    return rv == CKR_OK || rv == CKR_KEY_HANDLE_INVALID ? HF_GW_P11_UP : HF_GW_P11_STORE_DOWN;
}

bool hf_gw_p11_is_healthy(void)
{
    return hf_gw_p11_health() == HF_GW_P11_UP;
}

/* With fields, through this thread's operation session: fields are set on a session and spent
 * by its next record, and the login session is every thread's. */
static CK_RV audit_request_with_fields(const HF_REQUEST_CONTEXT *ctx, const char *fields,
                                       CK_RV result, CK_ULONG_LONG *seq)
{
    const HF_FUNCTION_LIST *v = p11.vendor;
    struct thread_sessions *ts = thread_sessions();
    CK_SESSION_HANDLE s;
    CK_RV rv;

    if (!ts) return CKR_HOST_MEMORY;
    for (int attempt = 0;; attempt++) {
        if ((rv = session_get(&ts->op, &s)) != CKR_OK) return rv;
        rv = v->HF_SetRequestFields(s, fields);
        if (rv == CKR_OK) rv = v->HF_AuditRequestSession(s, ctx, result, seq);
        if (attempt > 0 || !hf_gw_p11_rv_is_session_lost(rv)) return rv;
        hf_gw_p11_sessions_drop();
    }
}

CK_RV hf_gw_p11_audit_request(const HF_REQUEST_CONTEXT *ctx, const char *fields, CK_RV result,
                              CK_ULONG_LONG *seq)
{
    const HF_FUNCTION_LIST *v = p11.vendor;

    if (!p11.has_audit_request) return CKR_FUNCTION_NOT_SUPPORTED;
    if (fields && p11.has_1_3) return audit_request_with_fields(ctx, fields, result, seq);
    /* 1.2 names the session: the module checks it belongs to the gateway's login. */
    if (v->version.minor >= 2 && v->HF_AuditRequestSession)
        return v->HF_AuditRequestSession(p11.login_session, ctx, result, seq);
    return v->HF_AuditRequest(ctx, result, seq);
}

bool hf_gw_p11_link_type_register(const char *link_type, char *err, size_t errlen)
{
    CK_RV rv;

    /* Another vendor's module (or an older Holdfast) has no registry: nothing to register. */
    if (!atomic_load(&p11.open) || !p11.has_1_3) return true;
    rv = p11.vendor->HF_RegisterLinkType(p11.login_session, link_type);
    if (rv == CKR_OK) return true;
    snprintf(err, errlen, "the module refuses to register link type \"%s\" (0x%lx)%s", link_type,
             (unsigned long)rv,
             rv == CKR_ARGUMENTS_BAD ? ": a link type is 1 to 32 of a-z, 0-9 and '-'" : "");
    return false;
}

bool hf_gw_p11_has_key_link(void)
{
    return p11.has_1_3;
}

/* Whether the session's last record holds a failure; false when the module cannot say (1.4 and
 * older), so the gateway then writes the request's own failure record, as before. */
bool hf_gw_p11_last_record_failed(CK_SESSION_HANDLE session)
{
    CK_RV result = CKR_OK;

    return p11.has_1_5 && p11.vendor->HF_GetLastAuditResult(session, &result) == CKR_OK &&
           result != CKR_OK;
}

bool hf_gw_p11_has_audit_request(void)
{
    return p11.has_audit_request;
}

bool hf_gw_p11_has_audit_summary(void)
{
    return p11.has_audit_summary;
}

bool hf_gw_p11_audit_status(HF_AUDIT_STATUS *status)
{
    return p11.has_audit_summary && atomic_load(&p11.open) &&
           p11.vendor->HF_GetAuditStatus(status) == CKR_OK;
}

/* ---- plugin.h ----------------------------------------------------------------------------- */

HF_PLUGIN_EXPORT CK_FUNCTION_LIST_PTR hf_p11_functions(void)
{
    return atomic_load(&p11.open) ? p11.fn : NULL;
}

HF_PLUGIN_EXPORT const HF_FUNCTION_LIST *hf_p11_vendor(void)
{
    return atomic_load(&p11.open) ? p11.vendor : NULL;
}

static CK_RV context_set(struct hf_request *req, const char *operation, CK_SESSION_HANDLE s)
{
    HF_REQUEST_CONTEXT ctx = {
        .api = req->api,
        .operation = operation ? operation : req->operation,
        .caller = req->caller,
        /* The cloud's id when the plugin knows one, so the record matches the cloud's logs;
         * else ours, so it matches X-Request-Id and our log line. */
        .request_id = req->cloud_request_id ? req->cloud_request_id : req->id,
        .link_type = req->link_type,
        .link_id = req->link_id,
        .received_us = req->received_us,
    };

    return p11.vendor->HF_SetRequestContext(s, &ctx);
}

static CK_RV fields_set(struct hf_request *req, CK_SESSION_HANDLE s)
{
    char *fields = hf_gw_audit_fields_json(req);
    CK_RV rv = fields ? p11.vendor->HF_SetRequestFields(s, fields) : CKR_OK;

    free(fields);
    return rv;
}

HF_PLUGIN_EXPORT CK_RV hf_p11_begin(struct hf_request *req, const char *operation,
                                    CK_SESSION_HANDLE *session)
{
    struct thread_sessions *ts;
    CK_SESSION_HANDLE s;
    CK_RV rv;

    if (!req || !session) return CKR_ARGUMENTS_BAD;
    /* A pool key (or any key after one) on a listener thread: no module call at all, so the
     * first pass leaves no record; the pool's workers run the handler again (server.c). */
    if (req->hsm_pool[0] && req->may_defer) {
        req->deferred = true;
        return HF_GW_CKR_DEFERRED;
    }
    if (req->hsm_pool[0] && req->hsm_refuse != CKR_OK) return req->hsm_refuse;
    if (!atomic_load(&p11.open)) return CKR_CRYPTOKI_NOT_INITIALIZED;
    if (!(ts = thread_sessions())) return CKR_HOST_MEMORY;
    for (int attempt = 0;; attempt++) {
        if ((rv = session_get(&ts->op, &s)) != CKR_OK) return rv;
        rv = p11.vendor ? context_set(req, operation, s) : CKR_OK;
        if (rv == CKR_OK && p11.has_1_3 && req->naudit_fields > 0) rv = fields_set(req, s);
        /* An API whose successes go unrecorded: its key operations' too, failures still are. */
        if (rv == CKR_OK && p11.has_1_4 && !hf_gw_request_success_events(req))
            rv = p11.vendor->HF_SetRequestAudit(s, HF_REQUEST_AUDIT_FAILURES_ONLY);
        if (rv == CKR_OK && p11.vendor && (!req->p11_began || req->p11_session != s))
            rv = p11.vendor->HF_GetLastAuditSeq(s, &req->seq_before);
        if (rv == CKR_OK) break;
        /* A session the module forgot (a restart of its state, a lost login): one new try. */
        if (attempt > 0 || !hf_gw_p11_rv_is_session_lost(rv)) return rv;
        hf_gw_p11_sessions_drop();
    }
    req->p11_began = true;
    req->p11_session = s;
    *session = s;
    return CKR_OK;
}

/* The context of a begin that no key operation consumed must not reach the next request's
 * operations on this thread. */
void hf_gw_p11_request_end(struct hf_request *req)
{
    if (req->p11_began && p11.vendor && atomic_load(&p11.open))
        p11.vendor->HF_SetRequestContext(req->p11_session, NULL);
}

HF_PLUGIN_EXPORT enum hf_status hf_status_from_ckr(CK_RV rv)
{
    switch (rv) {
    case CKR_OK:
        return HF_STATUS_OK;
    case CKR_HF_LINK_BLOCKED:
        return HF_STATUS_KEY_DISABLED;
    case CKR_KEY_FUNCTION_NOT_PERMITTED:
    case CKR_KEY_TYPE_INCONSISTENT:
        /* Usage mask, face role or KMIP state: the module does not tell them apart; a state
         * that forbids the operation is the common case (a deactivated key asked to encrypt),
         * and the API's "disabled" error is what a cloud shows its user for it. */
        return HF_STATUS_KEY_DISABLED;
    case CKR_KEY_HANDLE_INVALID:
    case CKR_OBJECT_HANDLE_INVALID:
        return HF_STATUS_KEY_NOT_FOUND;
    case CKR_ENCRYPTED_DATA_INVALID:
    case CKR_ENCRYPTED_DATA_LEN_RANGE:
    case CKR_SIGNATURE_INVALID:
    case CKR_SIGNATURE_LEN_RANGE:
        return HF_STATUS_BAD_CIPHERTEXT;
    case CKR_ARGUMENTS_BAD:
    case CKR_DATA_INVALID:
    case CKR_DATA_LEN_RANGE:
    case CKR_MECHANISM_PARAM_INVALID:
        return HF_STATUS_BAD_REQUEST;
    case CKR_MECHANISM_INVALID:
    case CKR_FUNCTION_NOT_SUPPORTED:
        return HF_STATUS_UNSUPPORTED;
    case CKR_FUNCTION_CANCELED:
        return HF_STATUS_TIMEOUT;
    case CKR_FUNCTION_REJECTED:
        /* An HSM pool's answer when every healthy member is at its concurrency limit and the
         * queue is full (pkcs11/core/pool.h, HF_POOL_RV_THROTTLED): the API's throttling error,
         * so the cloud backs off instead of failing the call. */
        return HF_STATUS_THROTTLED;
    case CKR_DEVICE_ERROR:
        /* Also a pool with no healthy member (HF_POOL_RV_UNAVAILABLE). */
    case CKR_DEVICE_MEMORY:
    case CKR_DEVICE_REMOVED:
    case CKR_TOKEN_NOT_PRESENT:
    case CKR_SESSION_HANDLE_INVALID:
    case CKR_SESSION_CLOSED:
    case CKR_USER_NOT_LOGGED_IN:
    case CKR_CRYPTOKI_NOT_INITIALIZED:
    case CKR_HF_AUDIT_FAILED:
        return HF_STATUS_UNAVAILABLE;
    default:
        return HF_STATUS_INTERNAL;
    }
}

CK_RV hf_gw_ckr_from_status(enum hf_status status)
{
    switch (status) {
    case HF_STATUS_OK:
        return CKR_OK;
    case HF_STATUS_BAD_REQUEST:
        return CKR_ARGUMENTS_BAD;
    case HF_STATUS_UNAUTHENTICATED:
        return CKR_USER_NOT_LOGGED_IN;
    case HF_STATUS_DENIED:
    case HF_STATUS_KEY_USAGE:
    case HF_STATUS_KEY_DISABLED:
        return CKR_KEY_FUNCTION_NOT_PERMITTED;
    case HF_STATUS_KEY_NOT_FOUND:
        return CKR_KEY_HANDLE_INVALID;
    case HF_STATUS_PATH_NOT_FOUND:
    case HF_STATUS_METHOD_NOT_ALLOWED:
    case HF_STATUS_UNSUPPORTED:
        return CKR_FUNCTION_NOT_SUPPORTED;
    case HF_STATUS_BAD_CIPHERTEXT:
        return CKR_ENCRYPTED_DATA_INVALID;
    case HF_STATUS_TOO_LARGE:
        return CKR_DATA_LEN_RANGE;
    case HF_STATUS_THROTTLED:
        return CKR_FUNCTION_REJECTED;
    case HF_STATUS_TIMEOUT:
        return CKR_FUNCTION_CANCELED;
    case HF_STATUS_UNAVAILABLE:
        return CKR_DEVICE_ERROR;
    default:
        return CKR_GENERAL_ERROR;
    }
}
