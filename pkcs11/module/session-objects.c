/* Session objects (CKA_TOKEN = FALSE): keys that live in this process only, never in the store,
 * and end with the session that made them (PKCS#11 2.40 section 4.4). They are the
 * application's: every session sees them (private ones while the user is logged in), any session
 * may use, change or destroy them.
 *
 * One table, sorted by handle, behind a read-mostly rwlock: a lookup is a binary search under
 * the read lock; creation appends (handles only grow) and destruction removes under the write
 * lock. Objects are immutable once in the table and shared by reference, so an operation that
 * took one keeps it (and its material) usable after the object is destroyed. Records of
 * destruction are written after the lock is released. Lock order: a session's lock, then this
 * table's. */
#include "hf-build.h"

#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    pthread_rwlock_t lock;   /* guards objs, n, cap */
    struct hf_object **objs; /* owned references, sorted by handle */
    size_t n, cap;
} table = {.lock = PTHREAD_RWLOCK_INITIALIZER};

/* Never reset while the library is loaded: a destroyed object's handle is never valid again. */
static atomic_ulong serial;
/* How many objects the table holds, so that closing a session that made none (nearly every
 * close) takes no lock. */
static atomic_size_t population;

#define SERIAL_MAX (HF_SESSION_HANDLE_BIT >> 2)

/* ---- the table (with table.lock held) ----------------------------------------------------- */

/* The index of handle, or of where it would go. */
static size_t table_search(CK_OBJECT_HANDLE handle, bool *found)
{
    size_t lo = 0, hi = table.n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (table.objs[mid]->handle < handle)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < table.n && table.objs[lo]->handle == handle;
    return lo;
}

static void table_remove_at(size_t i)
{
    memmove(&table.objs[i], &table.objs[i + 1], (table.n - i - 1) * sizeof(table.objs[0]));
    table.n--;
    atomic_fetch_sub(&population, 1);
}

/* ---- records ------------------------------------------------------------------------------ */

static const char *face_name(const struct hf_object *obj)
{
    return obj->kind == HF_OBJ_SECRET    ? "secret"
           : obj->kind == HF_OBJ_PRIVATE ? "private"
                                         : "public";
}

/* The object's maker, as the context of the record of its end (it may end in another session, or
 * in none: logout, finalize). */
static CK_RV record_end(const struct hf_object *obj, const char *why)
{
    HF_REQUEST_CONTEXT maker = {.api = obj->sobj->api, .caller = obj->sobj->caller};

    return hf_module_audit_object(&maker, "object.destroy", obj, why, CKR_OK);
}

/* Removed objects, recorded and released once the table's lock is gone. */
static void ended_release(struct hf_object **ended, size_t n, const char *why)
{
    for (size_t i = 0; i < n; i++) {
        if (why) record_end(ended[i], why);
        hf_object_unref(ended[i]);
    }
    free(ended);
}

/* ---- entry points' helpers ---------------------------------------------------------------- */

CK_RV hf_session_object_get(CK_OBJECT_HANDLE handle, struct hf_object **out)
{
    struct hf_object *obj = NULL;
    bool found;
    size_t i;

    pthread_rwlock_rdlock(&table.lock);
    i = table_search(handle, &found);
    if (found) obj = hf_object_ref(table.objs[i]);
    pthread_rwlock_unlock(&table.lock);
    if (!obj) return CKR_OBJECT_HANDLE_INVALID;
    *out = obj;
    return CKR_OK;
}

static char *strdup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Who made obj: the session's request context (the gateway's caller), else the application. */
static CK_RV maker_set(struct hf_session *s, struct hf_object *obj)
{
    const HF_REQUEST_CONTEXT *ctx = s->has_ctx ? &s->ctx : NULL;

    obj->sobj->owner = s->handle;
    obj->sobj->api = strdup_or_null(ctx && ctx->api ? ctx->api : NULL);
    obj->sobj->caller = strdup_or_null(ctx && ctx->caller ? ctx->caller : NULL);
    if ((ctx && ctx->api && !obj->sobj->api) || (ctx && ctx->caller && !obj->sobj->caller))
        return CKR_HOST_MEMORY;
    return CKR_OK;
}

static CK_RV table_add(struct hf_object *obj)
{
    unsigned long n = atomic_fetch_add(&serial, 1) + 1;
    CK_RV rv = CKR_OK;

    if (n >= SERIAL_MAX) return CKR_HOST_MEMORY; /* 2^60 objects made: never, in practice */
    obj->handle = HF_SESSION_HANDLE_BIT | ((CK_OBJECT_HANDLE)n << 2) | obj->kind;
    snprintf(obj->sobj->audit_key, sizeof(obj->sobj->audit_key), "session:0x%lx",
             (unsigned long)obj->handle);
    snprintf(obj->sobj->audit_name, sizeof(obj->sobj->audit_name), "session %s-%u %s",
             hf_alg_name(obj->key.alg), obj->key.bits, face_name(obj));
    pthread_rwlock_wrlock(&table.lock);
    if (obj->sobj->is_private && atomic_load(&hf_mod.login) != HF_LOGIN_USER) {
        rv = CKR_USER_NOT_LOGGED_IN;
        goto done;
    }
    if (table.n == table.cap) {
        size_t cap = table.cap ? table.cap * 2 : 64;
        struct hf_object **grown = realloc(table.objs, cap * sizeof(*grown));
        if (!grown) {
            rv = CKR_HOST_MEMORY;
            goto done;
        }
        table.objs = grown;
        table.cap = cap;
    }
    /* Serials are taken before the lock: a later one may get here first. */
    bool found;
    size_t i = table_search(obj->handle, &found);
    memmove(&table.objs[i + 1], &table.objs[i], (table.n - i) * sizeof(table.objs[0]));
    table.objs[i] = obj;
    table.n++;
    atomic_fetch_add(&population, 1);
done:
    pthread_rwlock_unlock(&table.lock);
    return rv;
}

CK_RV hf_session_object_add(struct hf_session *s, struct hf_object *obj, CK_OBJECT_HANDLE *out)
{
    return hf_session_object_add_why(s, obj, NULL, out);
}

CK_RV hf_session_object_add_why(struct hf_session *s, struct hf_object *obj, const char *why,
                                CK_OBJECT_HANDLE *out)
{
    char detail[96];
    CK_RV rv;

    if (!s || !obj || !obj->sobj || !out) {
        hf_object_unref(obj); /* taken over, whatever the answer */
        return CKR_ARGUMENTS_BAD;
    }
    obj->is_current = true;
    obj->key.state = HF_STATE_ACTIVE;
    rv = maker_set(s, obj);
    if (rv == CKR_OK) rv = table_add(obj);
    snprintf(detail, sizeof(detail), "%s-%u %s private=%s%s%s", hf_alg_name(obj->key.alg),
             obj->key.bits, face_name(obj), obj->sobj->is_private ? "true" : "false",
             why ? " " : "", why ? why : "");
    /* The record keeps the request context for the key operation that follows: a gateway request
     * that imports a key and uses it makes its one record with that use. */
    if (hf_module_audit_object(s->has_ctx ? &s->ctx : NULL, "object.create", obj, detail, rv) !=
            CKR_OK &&
        rv == CKR_OK) {
        hf_session_object_destroy(NULL, obj->handle);
        return CKR_HF_AUDIT_FAILED;
    }
    if (rv != CKR_OK) {
        hf_object_unref(obj);
        return rv;
    }
    *out = obj->handle;
    return CKR_OK;
}

CK_RV hf_session_object_destroy(struct hf_session *s, CK_OBJECT_HANDLE handle)
{
    struct hf_object *obj = NULL;
    bool found;
    size_t i;
    CK_RV rv;

    pthread_rwlock_wrlock(&table.lock);
    i = table_search(handle, &found);
    if (found) {
        obj = table.objs[i];
        table_remove_at(i);
    }
    pthread_rwlock_unlock(&table.lock);
    if (!obj) return CKR_OBJECT_HANDLE_INVALID;
    /* s NULL: an object whose creation record failed leaves unrecorded, as it came. Without a
     * request context the record is the maker's (a gateway cleans up after its request's
     * record, whose context that record used up). */
    if (s && s->has_ctx)
        rv = hf_module_audit_object(&s->ctx, "object.destroy", obj, "C_DestroyObject", CKR_OK);
    else
        rv = s ? record_end(obj, "C_DestroyObject") : CKR_OK;
    hf_object_unref(obj);
    return rv;
}

CK_RV hf_session_object_dup(const struct hf_object *obj, const CK_ATTRIBUTE *label,
                            const CK_ATTRIBUTE *id, struct hf_object **out)
{
    const struct hf_session_attrs *sa = obj->sobj;
    const void *lp = label ? label->pValue : sa->label, *ip = id ? id->pValue : sa->id;
    size_t ll = label ? label->ulValueLen : sa->label_len, il = id ? id->ulValueLen : sa->id_len;
    struct hf_object *c = calloc(1, sizeof(*c));
    CK_RV rv = CKR_HOST_MEMORY;

    if (!c || !(c->sobj = calloc(1, sizeof(*c->sobj)))) goto done;
    atomic_init(&c->refs, 1);
    c->handle = obj->handle;
    c->kind = obj->kind;
    c->cls = obj->cls;
    c->key_type = obj->key_type;
    c->is_current = true;
    *c->sobj = *sa;
    c->sobj->label = c->sobj->id = NULL;
    c->sobj->api = c->sobj->caller = NULL;
    if (hf_key_copy(&c->key, &obj->key) != CKR_OK) goto done;
    if (hf_key_version_copy(&c->version, &obj->version) != CKR_OK) goto done;
    if (obj->pub && EVP_PKEY_up_ref(obj->pub)) c->pub = obj->pub;
    if (obj->pub && !c->pub) goto done;
    atomic_init(&c->material, hf_material_ref(atomic_load(&obj->material)));
    c->sobj->label = malloc(ll ? ll : 1);
    c->sobj->id = malloc(il ? il : 1);
    c->sobj->api = strdup_or_null(sa->api);
    c->sobj->caller = strdup_or_null(sa->caller);
    if (!c->sobj->label || !c->sobj->id || (sa->api && !c->sobj->api) ||
        (sa->caller && !c->sobj->caller))
        goto done;
    if (ll) memcpy(c->sobj->label, lp, ll);
    if (il) memcpy(c->sobj->id, ip, il);
    c->sobj->label_len = ll;
    c->sobj->id_len = il;
    *out = c;
    c = NULL;
    rv = CKR_OK;
done:
    hf_object_unref(c);
    return rv;
}

CK_RV hf_session_object_set(const struct hf_object *obj, const CK_ATTRIBUTE *label,
                            const CK_ATTRIBUTE *id)
{
    struct hf_object *copy = NULL, *old = NULL;
    bool found;
    size_t i;
    CK_RV rv;

    if ((label && label->ulValueLen > 255) || (id && id->ulValueLen > 255))
        return CKR_ATTRIBUTE_VALUE_INVALID;
    if (!label && !id) return CKR_OK;
    if ((rv = hf_session_object_dup(obj, label, id, &copy)) != CKR_OK) return rv;
    pthread_rwlock_wrlock(&table.lock);
    i = table_search(obj->handle, &found);
    if (found) {
        old = table.objs[i];
        table.objs[i] = copy;
        copy = NULL;
    }
    pthread_rwlock_unlock(&table.lock);
    hf_object_unref(old);
    hf_object_unref(copy);
    return found ? CKR_OK : CKR_OBJECT_HANDLE_INVALID;
}

CK_RV hf_session_objects_each(CK_RV (*visit)(const struct hf_object *obj, void *arg), void *arg)
{
    CK_RV rv = CKR_OK;

    if (atomic_load(&population) == 0) return CKR_OK;
    pthread_rwlock_rdlock(&table.lock);
    for (size_t i = 0; i < table.n && rv == CKR_OK; i++)
        rv = visit(table.objs[i], arg);
    pthread_rwlock_unlock(&table.lock);
    return rv;
}

/* ---- ends ----------------------------------------------------------------------------------- */

/* Takes every object that the predicate picks out of the table. */
static void table_take(bool (*pick)(const struct hf_object *obj, CK_SESSION_HANDLE owner),
                       CK_SESSION_HANDLE owner, const char *why)
{
    struct hf_object **ended = NULL;
    size_t n = 0;

    if (atomic_load(&population) == 0) return;
    pthread_rwlock_wrlock(&table.lock);
    for (size_t i = 0; i < table.n;) {
        if (!pick(table.objs[i], owner)) {
            i++;
            continue;
        }
        if (!ended && !(ended = malloc(table.n * sizeof(*ended)))) break;
        ended[n++] = table.objs[i];
        table_remove_at(i);
    }
    pthread_rwlock_unlock(&table.lock);
    ended_release(ended, n, why);
}

static bool is_owned_by(const struct hf_object *obj, CK_SESSION_HANDLE owner)
{
    return obj->sobj->owner == owner;
}

static bool is_private(const struct hf_object *obj, CK_SESSION_HANDLE owner)
{
    (void)owner;
    return obj->sobj->is_private;
}

static bool is_any(const struct hf_object *obj, CK_SESSION_HANDLE owner)
{
    (void)obj, (void)owner;
    return true;
}

void hf_session_objects_close(struct hf_session *s)
{
    hf_dobjs_close(s->handle);
    table_take(is_owned_by, s->handle, "session closed");
}

void hf_session_objects_logout(void)
{
    hf_dobjs_logout();
    table_take(is_private, 0, "logout");
}

void hf_session_objects_flush(const char *why)
{
    hf_dobjs_flush(why);
    table_take(is_any, 0, why);
    pthread_rwlock_wrlock(&table.lock);
    free(table.objs);
    table.objs = NULL;
    table.n = table.cap = 0;
    pthread_rwlock_unlock(&table.lock);
}

/* The parent's objects in a forked child: releasing them could take locks (OpenSSL's, on their
 * keys) held by parent threads that are gone; kept reachable here, never read. */
static struct hf_object **volatile abandoned;

void hf_session_objects_atfork(void)
{
    hf_dobjs_atfork();
    pthread_rwlock_init(&table.lock, NULL);
    if (table.objs) abandoned = table.objs;
    table.objs = NULL;
    table.n = table.cap = 0;
    atomic_store(&population, 0);
}
