/* The library as a whole: the function lists, C_Initialize/C_Finalize (with the fork rules),
 * C_GetInfo, the interfaces of PKCS#11 3.0, the entry points we do not implement, and the audit
 * record every key operation ends in. */
#include "hf-build.h"

#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct hf_module hf_mod = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Set in a forked child whose parent had the module initialised: that state is a copy whose
 * threads do not exist here, to be dropped (never closed) by the child's C_Initialize. */
static bool parent_state_stale;
/* The parent's core after hf_core_abandon: leaked on purpose (its locks may be held by threads
 * that do not exist here), and kept reachable so leak checkers see it as retained, not lost. */
static struct hf_core *volatile parent_core; /* volatile: written, never read */

/* ---- checks and helpers ------------------------------------------------------------------ */

CK_RV hf_module_check(void)
{
    return atomic_load_explicit(&hf_mod.initialized, memory_order_acquire)
               ? CKR_OK
               : CKR_CRYPTOKI_NOT_INITIALIZED;
}

void hf_pad_copy(unsigned char *dst, size_t n, const char *src)
{
    size_t len = src ? strlen(src) : 0;

    memset(dst, ' ', n);
    memcpy(dst, src ? src : "", len < n ? len : n);
}

/* PACKAGE_VERSION is "major.minor.patch"; PKCS#11 has room for major.minor. */
static CK_VERSION library_version(void)
{
    unsigned major = 0, minor = 0;
    CK_VERSION v;

    if (sscanf(PACKAGE_VERSION, "%u.%u", &major, &minor) < 1) major = minor = 0;
    v.major = (CK_BYTE)major;
    v.minor = (CK_BYTE)minor;
    return v;
}

CK_VERSION hf_module_version(void)
{
    return library_version();
}

/* ---- the audit record of a key operation ------------------------------------------------- */

/* Who a record is for: ctx (may be NULL) is the gateway's request. A record is authenticated
 * (may use the audit log's free-space reserve) when the application is logged in and the record
 * is not a summary of requests its caller refused before authentication. */
static void audit_who(struct hf_audit_record *rec, const HF_REQUEST_CONTEXT *ctx, bool preauth)
{
    rec->authenticated = !preauth && atomic_load(&hf_mod.login) != HF_LOGIN_NONE;
    rec->api = ctx && ctx->api ? ctx->api : "pkcs11";
    rec->caller = ctx && ctx->caller ? ctx->caller : hf_mod.caller;
    rec->request_id = ctx ? ctx->request_id : NULL;
}

/* The one writer of module audit records of key operations. */
static CK_RV audit_write(const HF_REQUEST_CONTEXT *ctx, const char *fields, CK_FLAGS flags,
                         const char *operation, const struct hf_object *obj, const char *detail,
                         CK_RV result, uint64_t started_us, bool preauth, uint64_t *seq)
{
    struct hf_audit_record rec = {0};
    char detail_buf[512];

    if (hf_module_check() != CKR_OK || !hf_mod.core) return CKR_CRYPTOKI_NOT_INITIALIZED;
    audit_who(&rec, ctx, preauth);
    rec.operation = operation;
    rec.detail = detail;
    rec.fields = fields;
    rec.failures_only = (flags & HF_REQUEST_AUDIT_FAILURES_ONLY) != 0;
    if (ctx && (ctx->operation || ctx->detail)) {
        /* The record names the API's operation; the PKCS#11 one stays visible in the detail. */
        snprintf(detail_buf, sizeof(detail_buf), "%s%s%s%s%s", operation ? operation : "",
                 detail && operation ? " " : "", detail ? detail : "",
                 ctx->detail && (operation || detail) ? "; " : "", ctx->detail ? ctx->detail : "");
        rec.operation = ctx->operation ? ctx->operation : operation;
        rec.detail = detail_buf;
    }
    if (obj && obj->sobj) {
        /* No managed key: the record names the session object by handle and kind. */
        rec.key_uuid = obj->sobj->audit_key[0] ? obj->sobj->audit_key : "session";
        rec.key_name = obj->sobj->audit_key[0] ? obj->sobj->audit_name : "session";
    } else if (obj) {
        rec.key_uuid = obj->key.uuid;
        rec.key_name = obj->key.name;
        rec.version = obj->version.version;
    }
    if (ctx && ctx->received_us) started_us = ctx->received_us;
    rec.result = result;
    rec.latency_us = started_us ? hf_monotonic_us() - started_us : 0;
    return hf_audit_append(hf_core_audit(hf_mod.core), &rec, seq);
}

CK_RV hf_module_audit(struct hf_session *s, const char *operation, const struct hf_object *obj,
                      const char *detail, CK_RV result, uint64_t started_us)
{
    uint64_t seq = 0;
    CK_RV rv = audit_write(s && s->has_ctx ? &s->ctx : NULL, s ? s->fields : NULL,
                           s && s->has_ctx ? s->audit_flags : 0, operation, obj, detail, result,
                           started_us, false, &seq);

    if (s) {
        if (rv == CKR_OK) {
            s->last_audit_seq = seq;
            s->last_audit_result = result;
        }
        hf_session_clear_ctx(s);
    }
    if (rv != CKR_OK) hf_log_error("audit: cannot record %s: 0x%lx", operation, (unsigned long)rv);
    return rv;
}

CK_RV hf_module_audit_object(const HF_REQUEST_CONTEXT *ctx, const char *operation,
                             const struct hf_object *obj, const char *detail, CK_RV result)
{
    /* Only who asked and for which request: the API's operation name and refusal detail are the
     * key operation's, and so are the request's fields. */
    HF_REQUEST_CONTEXT who = {0};
    uint64_t seq = 0;
    CK_RV rv;

    if (ctx) {
        who.api = ctx->api;
        who.caller = ctx->caller;
        who.request_id = ctx->request_id;
    }
    rv = audit_write(&who, NULL, 0, operation, obj, detail, result, 0, false, &seq);
    if (rv != CKR_OK) hf_log_error("audit: cannot record %s: 0x%lx", operation, (unsigned long)rv);
    return rv;
}

CK_RV hf_module_audit_item(const HF_REQUEST_CONTEXT *ctx, const char *operation, const char *item,
                           const char *item_name, const char *detail, CK_RV result)
{
    struct hf_audit_record rec = {0};
    CK_RV rv;

    if (hf_module_check() != CKR_OK || !hf_mod.core) return CKR_CRYPTOKI_NOT_INITIALIZED;
    audit_who(&rec, ctx, false);
    rec.operation = operation;
    rec.key_uuid = item;
    rec.key_name = item_name;
    rec.detail = detail;
    rec.result = result;
    rv = hf_audit_append(hf_core_audit(hf_mod.core), &rec, NULL);
    if (rv != CKR_OK) hf_log_error("audit: cannot record %s: 0x%lx", operation, (unsigned long)rv);
    return rv;
}

CK_RV hf_module_audit_request(const HF_REQUEST_CONTEXT *ctx, const char *fields, CK_RV result,
                              bool preauth, CK_ULONG_LONG *seq)
{
    uint64_t s = 0;
    CK_RV rv = audit_write(ctx, fields, 0, NULL, NULL, NULL, result, 0, preauth, &s);

    if (rv == CKR_OK) *seq = s;
    /* A summary refused under the reserve is the gateway's to keep and log, not an error here. */
    if (rv != CKR_OK && !preauth)
        hf_log_error("audit: cannot record a refused request: 0x%lx", (unsigned long)rv);
    return rv;
}

bool hf_module_is_gateway(void)
{
    return atomic_load(&hf_mod.login) == HF_LOGIN_USER && atomic_load(&hf_mod.login_gateway);
}

void hf_module_actor(const struct hf_session *s, struct hf_actor *who, char *buf, size_t buflen)
{
    const HF_REQUEST_CONTEXT *ctx = s && s->has_ctx ? &s->ctx : NULL;

    snprintf(buf, buflen, "%s", hf_mod.caller);
    who->api = ctx && ctx->api ? ctx->api : "pkcs11";
    who->caller = ctx && ctx->caller ? ctx->caller : buf;
}

/* ---- initialise, finalise, fork ---------------------------------------------------------- */

/* Runs in the child right after fork(): only the forking thread exists, so the parent's locks
 * may be held by threads that are gone. The module becomes uninitialised here (PKCS#11 2.40
 * section 6.7.7: a child must call C_Initialize), and nothing of the parent's is used again. */
static void atfork_child(void)
{
    pthread_mutex_init(&hf_mod.lock, NULL);
    if (atomic_load(&hf_mod.initialized) || hf_mod.core) parent_state_stale = true;
    atomic_store(&hf_mod.initialized, false);
    atomic_store(&hf_mod.login, HF_LOGIN_NONE);
    atomic_store(&hf_mod.session_count, 0);
    atomic_store(&hf_mod.rw_session_count, 0);
    hf_objects_atfork();
    hf_session_objects_atfork();
}

static void atfork_register(void)
{
    if (pthread_atfork(NULL, NULL, atfork_child) != 0)
        hf_log_warn("pthread_atfork failed: a forked child cannot re-initialise");
}

/* The state a forked child inherited: forget it without using any of its locks or threads. */
static void parent_state_drop(void)
{
    hf_objects_atfork(); /* again, for a child the handler did not see (a raw clone) */
    hf_session_objects_atfork();
    hf_sessions_release(true);
    if (hf_mod.core) hf_core_abandon(hf_mod.core);
    parent_core = hf_mod.core;
    hf_mod.core = NULL;
    hf_config_free(&hf_mod.cfg);
    parent_state_stale = false;
}

/* CK_C_INITIALIZE_ARGS rules of PKCS#11 2.40 section 5.4: the four mutex callbacks come all or
 * none; callbacks without CKF_OS_LOCKING_OK oblige us to use them, which we cannot (our locks are
 * pthreads throughout, also inside OpenSSL and SQLite), hence CKR_CANT_LOCK. We ignore
 * CKF_LIBRARY_CANT_CREATE_OS_THREADS: the audit writer is a thread, and NSS and p11-kit pass the
 * flag to every module. */
static CK_RV init_args_check(const CK_C_INITIALIZE_ARGS *a)
{
    int n;

    if (!a) return CKR_OK;
    if (a->pReserved) return CKR_ARGUMENTS_BAD;
    n = !!a->CreateMutex + !!a->DestroyMutex + !!a->LockMutex + !!a->UnlockMutex;
    if (n != 0 && n != 4) return CKR_ARGUMENTS_BAD;
    if (n == 4 && !(a->flags & CKF_OS_LOCKING_OK)) return CKR_CANT_LOCK;
    return CKR_OK;
}

static CK_RV core_start(void)
{
    char err[256] = "";
    const char *path = hf_config_default_path();
    CK_RV rv;

    rv = hf_config_load_default(&hf_mod.cfg, err, sizeof(err));
    if (rv != CKR_OK) {
        hf_log_error("C_Initialize: cannot read %s: %s", path, err[0] ? err : "error");
        return rv == CKR_HOST_MEMORY ? rv : CKR_GENERAL_ERROR;
    }
    rv = hf_core_open(&hf_mod.cfg, &hf_mod.core);
    if (rv != CKR_OK) {
        hf_log_error("C_Initialize: cannot open the key store of %s (0x%lx)%s", path,
                     (unsigned long)rv,
                     rv == CKR_TOKEN_NOT_RECOGNIZED ? ": run `holdfast init` first" : "");
        hf_mod.core = NULL;
        hf_config_free(&hf_mod.cfg);
        return rv == CKR_HOST_MEMORY ? rv : CKR_GENERAL_ERROR;
    }
    return CKR_OK;
}

HF_EXPORT CK_RV C_Initialize(CK_VOID_PTR pInitArgs)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    CK_RV rv;

    rv = init_args_check(pInitArgs);
    if (rv != CKR_OK) return rv;
    pthread_once(&once, atfork_register);
    pthread_mutex_lock(&hf_mod.lock);
    if (atomic_load(&hf_mod.initialized) && hf_mod.pid == getpid()) {
        rv = CKR_CRYPTOKI_ALREADY_INITIALIZED;
        goto done;
    }
    /* A fork the handler did not see (a raw clone) is caught by the pid. */
    if (parent_state_stale || (hf_mod.core && hf_mod.pid != getpid())) parent_state_drop();
    rv = hf_sessions_init();
    if (rv != CKR_OK) goto done;
    snprintf(hf_mod.caller, sizeof(hf_mod.caller), "pkcs11:uid:%lu", (unsigned long)getuid());
    rv = core_start();
    if (rv != CKR_OK) {
        hf_sessions_release(false);
        goto done;
    }
    hf_objects_flush();
    hf_module_exit_arm();
    hf_mod.pid = getpid();
    atomic_store(&hf_mod.login, HF_LOGIN_NONE);
    atomic_store(&hf_mod.session_count, 0);
    atomic_store(&hf_mod.rw_session_count, 0);
    atomic_fetch_add(&hf_mod.generation, 1);
    atomic_store_explicit(&hf_mod.initialized, true, memory_order_release);
done:
    pthread_mutex_unlock(&hf_mod.lock);
    return rv;
}

HF_EXPORT CK_RV C_Finalize(CK_VOID_PTR pReserved)
{
    CK_RV rv = CKR_OK;

    if (pReserved) return CKR_ARGUMENTS_BAD;
    pthread_mutex_lock(&hf_mod.lock);
    if (!atomic_load(&hf_mod.initialized)) {
        rv = hf_module_exit_finalized() ? CKR_OK : CKR_CRYPTOKI_NOT_INITIALIZED;
        goto done;
    }
    /* While records can still be written (the audit writer refuses once we are not
     * initialised); sessions closing below find nothing left to destroy. */
    hf_session_objects_flush("C_Finalize");
    atomic_store(&hf_mod.initialized, false);
    hf_sessions_close_all();
    hf_sessions_release(false);
    hf_session_objects_flush(NULL);
    hf_objects_flush();
    hf_core_close(hf_mod.core);
    hf_mod.core = NULL;
    hf_config_free(&hf_mod.cfg);
    atomic_store(&hf_mod.login, HF_LOGIN_NONE);
done:
    pthread_mutex_unlock(&hf_mod.lock);
    return rv;
}

HF_EXPORT CK_RV C_GetInfo(CK_INFO_PTR pInfo)
{
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(pInfo, CKR_ARGUMENTS_BAD);
    memset(pInfo, 0, sizeof(*pInfo));
    pInfo->cryptokiVersion.major = 2;
    pInfo->cryptokiVersion.minor = 40;
    hf_pad_copy(pInfo->manufacturerID, sizeof(pInfo->manufacturerID), "Holdfast");
    hf_pad_copy(pInfo->libraryDescription, sizeof(pInfo->libraryDescription), "Holdfast PKCS#11");
    pInfo->libraryVersion = library_version();
    return CKR_OK;
}

/* ---- what we do not implement ------------------------------------------------------------ */

HF_EXPORT CK_RV C_GetFunctionStatus(CK_SESSION_HANDLE hSession)
{
    CK_RV rv = hf_module_check();
    return rv != CKR_OK ? rv : CKR_FUNCTION_NOT_PARALLEL;
}

HF_EXPORT CK_RV C_CancelFunction(CK_SESSION_HANDLE hSession)
{
    CK_RV rv = hf_module_check();
    return rv != CKR_OK ? rv : CKR_FUNCTION_NOT_PARALLEL;
}

/* Entry points of the 2.40 list Holdfast does not offer: still "not initialised" first. */
static CK_RV unsupported(void)
{
    CK_RV rv = hf_module_check();
    return rv != CKR_OK ? rv : CKR_FUNCTION_NOT_SUPPORTED;
}

HF_EXPORT CK_RV C_WaitForSlotEvent(CK_FLAGS flags, CK_SLOT_ID_PTR pSlot, CK_VOID_PTR pReserved)
{
    return unsupported();
}

HF_EXPORT CK_RV C_GetOperationState(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pOperationState,
                                    CK_ULONG_PTR pulOperationStateLen)
{
    return unsupported();
}

HF_EXPORT CK_RV C_SetOperationState(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pOperationState,
                                    CK_ULONG ulOperationStateLen, CK_OBJECT_HANDLE hEncryptionKey,
                                    CK_OBJECT_HANDLE hAuthenticationKey)
{
    return unsupported();
}

HF_EXPORT CK_RV C_SignRecoverInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                                  CK_OBJECT_HANDLE hKey)
{
    return unsupported();
}

HF_EXPORT CK_RV C_SignRecover(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen,
                              CK_BYTE_PTR pSignature, CK_ULONG_PTR pulSignatureLen)
{
    return unsupported();
}

HF_EXPORT CK_RV C_VerifyRecoverInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                                    CK_OBJECT_HANDLE hKey)
{
    return unsupported();
}

HF_EXPORT CK_RV C_VerifyRecover(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSignature,
                                CK_ULONG ulSignatureLen, CK_BYTE_PTR pData, CK_ULONG_PTR pulDataLen)
{
    return unsupported();
}

HF_EXPORT CK_RV C_DigestEncryptUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart,
                                      CK_ULONG ulPartLen, CK_BYTE_PTR pEncryptedPart,
                                      CK_ULONG_PTR pulEncryptedPartLen)
{
    return unsupported();
}

HF_EXPORT CK_RV C_DecryptDigestUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pEncryptedPart,
                                      CK_ULONG ulEncryptedPartLen, CK_BYTE_PTR pPart,
                                      CK_ULONG_PTR pulPartLen)
{
    return unsupported();
}

HF_EXPORT CK_RV C_SignEncryptUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart,
                                    CK_ULONG ulPartLen, CK_BYTE_PTR pEncryptedPart,
                                    CK_ULONG_PTR pulEncryptedPartLen)
{
    return unsupported();
}

HF_EXPORT CK_RV C_DecryptVerifyUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pEncryptedPart,
                                      CK_ULONG ulEncryptedPartLen, CK_BYTE_PTR pPart,
                                      CK_ULONG_PTR pulPartLen)
{
    return unsupported();
}

/* ---- function lists and interfaces ------------------------------------------------------- */

static CK_FUNCTION_LIST function_list = {
    {2, 40},
    C_Initialize,
    C_Finalize,
    C_GetInfo,
    C_GetFunctionList,
    C_GetSlotList,
    C_GetSlotInfo,
    C_GetTokenInfo,
    C_GetMechanismList,
    C_GetMechanismInfo,
    C_InitToken,
    C_InitPIN,
    C_SetPIN,
    C_OpenSession,
    C_CloseSession,
    C_CloseAllSessions,
    C_GetSessionInfo,
    C_GetOperationState,
    C_SetOperationState,
    C_Login,
    C_Logout,
    C_CreateObject,
    C_CopyObject,
    C_DestroyObject,
    C_GetObjectSize,
    C_GetAttributeValue,
    C_SetAttributeValue,
    C_FindObjectsInit,
    C_FindObjects,
    C_FindObjectsFinal,
    C_EncryptInit,
    C_Encrypt,
    C_EncryptUpdate,
    C_EncryptFinal,
    C_DecryptInit,
    C_Decrypt,
    C_DecryptUpdate,
    C_DecryptFinal,
    C_DigestInit,
    C_Digest,
    C_DigestUpdate,
    C_DigestKey,
    C_DigestFinal,
    C_SignInit,
    C_Sign,
    C_SignUpdate,
    C_SignFinal,
    C_SignRecoverInit,
    C_SignRecover,
    C_VerifyInit,
    C_Verify,
    C_VerifyUpdate,
    C_VerifyFinal,
    C_VerifyRecoverInit,
    C_VerifyRecover,
    C_DigestEncryptUpdate,
    C_DecryptDigestUpdate,
    C_SignEncryptUpdate,
    C_DecryptVerifyUpdate,
    C_GenerateKey,
    C_GenerateKeyPair,
    C_WrapKey,
    C_UnwrapKey,
    C_DeriveKey,
    C_SeedRandom,
    C_GenerateRandom,
    C_GetFunctionStatus,
    C_CancelFunction,
    C_WaitForSlotEvent,
};

HF_EXPORT CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR ppFunctionList)
{
    hf_return_val_if_fail(ppFunctionList, CKR_ARGUMENTS_BAD);
    *ppFunctionList = &function_list;
    return CKR_OK;
}

/* Both interfaces are plain function tables: neither is CKF_INTERFACE_FORK_SAFE, because a
 * child must call C_Initialize again (NSS asks for a fork-safe one first, is refused, and asks
 * again with flags 0). */
static CK_INTERFACE interfaces[] = {
    {(CK_CHAR *)"PKCS 11", &function_list, 0},
    {(CK_CHAR *)HF_INTERFACE_NAME, (CK_VOID_PTR)&hf_vendor_functions, 0},
};
#define N_INTERFACES (sizeof(interfaces) / sizeof(interfaces[0]))

HF_EXPORT CK_RV C_GetInterfaceList(CK_INTERFACE_PTR pInterfacesList, CK_ULONG_PTR pulCount)
{
    CK_RV rv = CKR_OK;

    hf_return_val_if_fail(pulCount, CKR_ARGUMENTS_BAD);
    if (pInterfacesList && *pulCount < N_INTERFACES)
        rv = CKR_BUFFER_TOO_SMALL;
    else if (pInterfacesList)
        memcpy(pInterfacesList, interfaces, sizeof(interfaces));
    *pulCount = N_INTERFACES;
    return rv;
}

static bool interface_has_version(const CK_INTERFACE *i, const CK_VERSION *v)
{
    const CK_VERSION *have = i->pFunctionList; /* both tables start with their version */

    return !v || (v->major == have->major && v->minor == have->minor);
}

HF_EXPORT CK_RV C_GetInterface(CK_UTF8CHAR_PTR pInterfaceName, CK_VERSION_PTR pVersion,
                               CK_INTERFACE_PTR_PTR ppInterface, CK_FLAGS flags)
{
    const char *name = pInterfaceName ? (const char *)pInterfaceName : "PKCS 11";

    hf_return_val_if_fail(ppInterface, CKR_ARGUMENTS_BAD);
    for (size_t i = 0; i < N_INTERFACES; i++) {
        if (strcmp(name, (const char *)interfaces[i].pInterfaceName) != 0) continue;
        if (!interface_has_version(&interfaces[i], pVersion)) continue;
        if ((flags & ~interfaces[i].flags) != 0) continue;
        *ppInterface = &interfaces[i];
        return CKR_OK;
    }
    return CKR_ARGUMENTS_BAD;
}
