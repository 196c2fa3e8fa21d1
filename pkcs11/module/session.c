/* Sessions: a fixed table of HF_MAX_SESSIONS slots, each pointing to a session struct that is
 * made on first use and kept (closed ones are reused) until C_Finalize, so a lookup needs no
 * shared lock: read the slot, lock the session, compare the handle.
 *
 * A handle is (reuse counter << 16) | (slot index + 1). The counter of a slot moves on every
 * open and survives C_Finalize, so a closed handle does not silently become valid again when
 * its slot is reused. */
#include "hf-build.h"

#include "internal.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#define HANDLE_INDEX_BITS 16
#define HANDLE_INDEX_MASK ((1UL << HANDLE_INDEX_BITS) - 1)
/* Room for the counter in a 32-bit CK_ULONG too. */
#define HANDLE_REUSE_MASK 0x7fffUL

_Static_assert(HF_MAX_SESSIONS < (1UL << HANDLE_INDEX_BITS), "session index must fit the handle");

static _Atomic(struct hf_session *) slots[HF_MAX_SESSIONS];
/* Guards opening (the choice of a free slot) and slot_reuse; never held with a session lock
 * being waited for. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long slot_reuse[HF_MAX_SESSIONS];
static size_t open_hint;

/* ---- operations ------------------------------------------------------------------------- */

void hf_op_reset(struct hf_op *op)
{
    if (!op) return;
    hf_object_unref(op->obj);
    hf_material_unref(op->material);
    free(op->iv);
    free(op->aad);
    /* The collected input is plaintext for encrypt, sign and digest. */
    if (op->buf) OPENSSL_clear_free(op->buf, op->buf_cap);
    memset(op, 0, sizeof(*op));
}

CK_RV hf_op_append(struct hf_op *op, const unsigned char *data, size_t len)
{
    unsigned char *grown;
    size_t cap;

    hf_return_val_if_fail(op && (data || len == 0), CKR_ARGUMENTS_BAD);
    if (len > HF_MAX_DATA_LEN || op->buf_len > HF_MAX_DATA_LEN - len) return CKR_DATA_LEN_RANGE;
    if (op->buf_len + len <= op->buf_cap) goto copy;
    cap = op->buf_cap ? op->buf_cap : 256;
    while (cap < op->buf_len + len)
        cap *= 2;
    if (cap > HF_MAX_DATA_LEN) cap = HF_MAX_DATA_LEN;
    /* Not realloc: it would leave a copy of the plaintext in freed memory. */
    grown = malloc(cap);
    if (!grown) return CKR_HOST_MEMORY;
    if (op->buf_len) memcpy(grown, op->buf, op->buf_len);
    if (op->buf) OPENSSL_clear_free(op->buf, op->buf_cap);
    op->buf = grown;
    op->buf_cap = cap;
copy:
    if (len) memcpy(op->buf + op->buf_len, data, len);
    op->buf_len += len;
    return CKR_OK;
}

/* ---- per-session state ------------------------------------------------------------------ */

void hf_session_clear_ctx(struct hf_session *s)
{
    if (!s) return;
    free((char *)s->ctx.api);
    free((char *)s->ctx.operation);
    free((char *)s->ctx.caller);
    free((char *)s->ctx.request_id);
    free((char *)s->ctx.link_type);
    free((char *)s->ctx.link_id);
    free((char *)s->ctx.detail);
    memset(&s->ctx, 0, sizeof(s->ctx));
    s->has_ctx = false;
    free(s->fields);
    s->fields = NULL;
    s->audit_flags = 0;
}

static void find_clear(struct hf_session *s)
{
    free(s->found);
    s->found = NULL;
    s->found_n = s->found_pos = 0;
    s->find_active = false;
}

/* Everything a session holds, with its lock held (or, abandoning, nobody else alive). */
static void session_clear(struct hf_session *s)
{
    for (int k = 0; k < HF_OP_KINDS; k++)
        hf_op_reset(&s->ops[k]);
    find_clear(s);
    hf_object_unref(s->last_obj);
    s->last_obj = NULL;
    hf_session_clear_ctx(s);
    s->last_audit_seq = 0;
}

/* With s->lock held. */
static void session_close_locked(struct hf_session *s)
{
    if (!s->open) return;
    hf_session_objects_close(s);
    session_clear(s);
    s->open = false;
    if (s->flags & CKF_RW_SESSION) atomic_fetch_sub(&hf_mod.rw_session_count, 1);
    /* PKCS#11 2.40 section 5.6: closing the application's last session logs it out. */
    if (atomic_fetch_sub(&hf_mod.session_count, 1) == 1) atomic_store(&hf_mod.login, HF_LOGIN_NONE);
}

CK_RV hf_session_get(CK_SESSION_HANDLE handle, struct hf_session **out)
{
    unsigned long index = (handle & HANDLE_INDEX_MASK);
    struct hf_session *s;

    if (hf_module_check() != CKR_OK) return CKR_CRYPTOKI_NOT_INITIALIZED;
    if (index == 0 || index > HF_MAX_SESSIONS) return CKR_SESSION_HANDLE_INVALID;
    s = atomic_load_explicit(&slots[index - 1], memory_order_acquire);
    if (!s) return CKR_SESSION_HANDLE_INVALID;
    pthread_mutex_lock(&s->lock);
    if (!s->open || s->handle != handle) {
        pthread_mutex_unlock(&s->lock);
        return CKR_SESSION_HANDLE_INVALID;
    }
    *out = s;
    return CKR_OK;
}

void hf_session_put(struct hf_session *s)
{
    if (s) pthread_mutex_unlock(&s->lock);
}

/* ---- the table -------------------------------------------------------------------------- */

CK_RV hf_sessions_init(void)
{
    pthread_mutex_lock(&open_lock);
    open_hint = 0;
    pthread_mutex_unlock(&open_lock);
    return CKR_OK;
}

void hf_sessions_close_all(void)
{
    for (size_t i = 0; i < HF_MAX_SESSIONS; i++) {
        struct hf_session *s = atomic_load(&slots[i]);
        if (!s) continue;
        pthread_mutex_lock(&s->lock);
        session_close_locked(s);
        pthread_mutex_unlock(&s->lock);
    }
}

/* A forked child's copy of the parent's sessions: not freed, since freeing what they hold
 * (objects, key material) takes locks a parent thread may have held at fork(); kept here so
 * the memory stays reachable rather than lost. */
static struct hf_session *volatile abandoned[HF_MAX_SESSIONS]; /* volatile: never read */

void hf_sessions_release(bool abandon)
{
    if (abandon) pthread_mutex_init(&open_lock, NULL);
    for (size_t i = 0; i < HF_MAX_SESSIONS; i++) {
        struct hf_session *s = atomic_exchange(&slots[i], NULL);
        if (!s) continue;
        if (abandon) {
            abandoned[i] = s;
            continue;
        }
        session_clear(s);
        pthread_mutex_destroy(&s->lock);
        free(s);
    }
}

/* Claims a closed session or makes a new one, returned locked. With open_lock held; trylock so
 * that a thread closing a session (session lock, then nothing else) never waits on us. */
static struct hf_session *slot_claim(size_t i)
{
    struct hf_session *s = atomic_load(&slots[i]);

    if (s) {
        if (pthread_mutex_trylock(&s->lock) != 0) return NULL;
        if (!s->open) return s;
        pthread_mutex_unlock(&s->lock);
        return NULL;
    }
    s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_lock(&s->lock);
    atomic_store_explicit(&slots[i], s, memory_order_release);
    return s;
}

static CK_RV session_open(CK_FLAGS flags, CK_SESSION_HANDLE *out)
{
    struct hf_session *s = NULL;
    size_t i = 0;

    pthread_mutex_lock(&open_lock);
    for (size_t n = 0; n < HF_MAX_SESSIONS && !s; n++) {
        i = (open_hint + n) % HF_MAX_SESSIONS;
        s = slot_claim(i);
    }
    if (s) {
        slot_reuse[i] = (slot_reuse[i] + 1) & HANDLE_REUSE_MASK;
        open_hint = (i + 1) % HF_MAX_SESSIONS;
    }
    pthread_mutex_unlock(&open_lock);
    if (!s) return CKR_SESSION_COUNT;
    session_clear(s);
    s->handle = (slot_reuse[i] << HANDLE_INDEX_BITS) | (i + 1);
    s->flags = flags;
    s->open = true;
    atomic_fetch_add(&hf_mod.session_count, 1);
    if (flags & CKF_RW_SESSION) atomic_fetch_add(&hf_mod.rw_session_count, 1);
    *out = s->handle;
    pthread_mutex_unlock(&s->lock);
    return CKR_OK;
}

/* ---- entry points ----------------------------------------------------------------------- */

HF_EXPORT CK_RV C_OpenSession(CK_SLOT_ID slotID, CK_FLAGS flags, CK_VOID_PTR pApplication,
                              CK_NOTIFY Notify, CK_SESSION_HANDLE_PTR phSession)
{
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(slotID == HF_SLOT_ID, CKR_SLOT_ID_INVALID);
    hf_return_val_if_fail(phSession, CKR_ARGUMENTS_BAD);
    /* Section 5.6: CKF_SERIAL_SESSION must always be set (for legacy reasons). */
    if (!(flags & CKF_SERIAL_SESSION)) return CKR_SESSION_PARALLEL_NOT_SUPPORTED;
    if (!(flags & CKF_RW_SESSION) && atomic_load(&hf_mod.login) == HF_LOGIN_SO)
        return CKR_SESSION_READ_WRITE_SO_EXISTS;
    /* pApplication and Notify are accepted and never called: we have no surrender callbacks. */
    return session_open(flags & (CKF_SERIAL_SESSION | CKF_RW_SESSION), phSession);
}

HF_EXPORT CK_RV C_CloseSession(CK_SESSION_HANDLE hSession)
{
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    session_close_locked(s);
    hf_session_put(s);
    return CKR_OK;
}

HF_EXPORT CK_RV C_CloseAllSessions(CK_SLOT_ID slotID)
{
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(slotID == HF_SLOT_ID, CKR_SLOT_ID_INVALID);
    hf_sessions_close_all();
    atomic_store(&hf_mod.login, HF_LOGIN_NONE);
    return CKR_OK;
}

static CK_STATE session_state(const struct hf_session *s)
{
    bool rw = s->flags & CKF_RW_SESSION;

    switch (atomic_load(&hf_mod.login)) {
    case HF_LOGIN_SO:
        return CKS_RW_SO_FUNCTIONS;
    case HF_LOGIN_USER:
        return rw ? CKS_RW_USER_FUNCTIONS : CKS_RO_USER_FUNCTIONS;
    default:
        return rw ? CKS_RW_PUBLIC_SESSION : CKS_RO_PUBLIC_SESSION;
    }
}

HF_EXPORT CK_RV C_GetSessionInfo(CK_SESSION_HANDLE hSession, CK_SESSION_INFO_PTR pInfo)
{
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (!pInfo) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    memset(pInfo, 0, sizeof(*pInfo));
    pInfo->slotID = HF_SLOT_ID;
    pInfo->state = session_state(s);
    pInfo->flags = s->flags;
    pInfo->ulDeviceError = 0;
done:
    hf_session_put(s);
    return rv;
}
