/* Objects: one face (secret, private or public key) of one key version, built from the store
 * and shared by reference count. A session keeps the last object it used; behind that sits a
 * table of loaded objects (read-mostly, behind an rwlock). An object carries the generation it
 * was loaded in: when the store changes (hf_objects_revalidate, or a change made here) the
 * generation moves and objects reload on their next use. */
#include "hf-build.h"

#include "internal.h"
#include "pkcs11/core/annotate.h"

#include <stdlib.h>
#include <string.h>

#define TABLE_BUCKETS 1024

struct entry {
    struct hf_object *obj;
    struct entry *next;
};

static struct {
    pthread_rwlock_t lock; /* guards buckets */
    struct entry *buckets[TABLE_BUCKETS];
} table = {.lock = PTHREAD_RWLOCK_INITIALIZER};

static struct {
    pthread_mutex_t lock; /* one thread asks the store; the others go on */
    _Atomic uint64_t checked_us;
    uint64_t data_version; /* (lock) */
    bool have_version;     /* (lock) */
} reval = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- lifetime --------------------------------------------------------------------------- */

struct hf_object *hf_object_ref(struct hf_object *obj)
{
    if (obj) atomic_fetch_add(&obj->refs, 1);
    return obj;
}

void hf_object_unref(struct hf_object *obj)
{
    if (!obj) return;
    /* As hf_material_unref: the last reference's free happens after every other holder's use. */
    ANNOTATE_HAPPENS_BEFORE(&obj->refs);
    if (atomic_fetch_sub(&obj->refs, 1) != 1) return;
    ANNOTATE_HAPPENS_AFTER(&obj->refs);
    hf_key_clear(&obj->key);
    hf_key_version_clear(&obj->version);
    EVP_PKEY_free(obj->pub);
    hf_material_unref(atomic_load(&obj->material));
    if (obj->sobj) {
        free(obj->sobj->label);
        free(obj->sobj->id);
        free(obj->sobj->api);
        free(obj->sobj->caller);
        free(obj->sobj);
    }
    free(obj);
}

static size_t bucket_of(CK_OBJECT_HANDLE handle)
{
    return (size_t)(HF_HANDLE_VERSION_ID(handle) % TABLE_BUCKETS);
}

void hf_objects_flush(void)
{
    pthread_rwlock_wrlock(&table.lock);
    for (size_t i = 0; i < TABLE_BUCKETS; i++) {
        struct entry *e = table.buckets[i];
        table.buckets[i] = NULL;
        while (e) {
            struct entry *next = e->next;
            hf_object_unref(e->obj);
            free(e);
            e = next;
        }
    }
    pthread_rwlock_unlock(&table.lock);
    pthread_mutex_lock(&reval.lock);
    reval.have_version = false;
    atomic_store(&reval.checked_us, 0);
    pthread_mutex_unlock(&reval.lock);
}

/* The parent's table in a forked child: dropping its objects could take locks (OpenSSL's, on
 * their keys) held by parent threads that are gone, so they are left alone, reachable here. */
static struct entry *volatile abandoned[TABLE_BUCKETS]; /* volatile: never read */

void hf_objects_atfork(void)
{
    pthread_rwlock_init(&table.lock, NULL);
    pthread_mutex_init(&reval.lock, NULL);
    for (size_t i = 0; i < TABLE_BUCKETS; i++) {
        if (!table.buckets[i]) continue;
        abandoned[i] = table.buckets[i];
        table.buckets[i] = NULL;
    }
}

void hf_objects_changed(void)
{
    atomic_fetch_add(&hf_mod.generation, 1);
}

void hf_objects_revalidate(void)
{
    uint64_t now = hf_monotonic_us(), version = 0;

    if (now - atomic_load_explicit(&reval.checked_us, memory_order_relaxed) <
        HF_REVALIDATE_MS * 1000ULL)
        return;
    if (pthread_mutex_trylock(&reval.lock) != 0) return;
    if (now - atomic_load(&reval.checked_us) >= HF_REVALIDATE_MS * 1000ULL &&
        hf_store_data_version(hf_core_store(hf_mod.core), &version) == CKR_OK) {
        if (reval.have_version && version != reval.data_version) hf_objects_changed();
        reval.data_version = version;
        reval.have_version = true;
        atomic_store(&reval.checked_us, now);
    }
    pthread_mutex_unlock(&reval.lock);
}

/* ---- faces ------------------------------------------------------------------------------ */

CK_RV hf_object_face_init(struct hf_object *obj, enum hf_object_kind kind)
{
    bool secret = hf_alg_is_secret(obj->key.alg);

    if (secret != (kind == HF_OBJ_SECRET)) return CKR_OBJECT_HANDLE_INVALID;
    if (kind == HF_OBJ_PUBLIC && hf_key_label_get(&obj->key, HF_P11_PUBLIC_GONE))
        return CKR_OBJECT_HANDLE_INVALID;
    obj->kind = kind;
    obj->handle = HF_HANDLE(obj->version.id, kind);
    obj->cls = kind == HF_OBJ_SECRET    ? CKO_SECRET_KEY
               : kind == HF_OBJ_PRIVATE ? CKO_PRIVATE_KEY
                                        : CKO_PUBLIC_KEY;
    switch (obj->key.alg) {
    case HF_ALG_AES:
        obj->key_type = CKK_AES;
        break;
    case HF_ALG_GENERIC:
        obj->key_type = CKK_GENERIC_SECRET;
        break;
    case HF_ALG_RSA:
        obj->key_type = CKK_RSA;
        break;
    case HF_ALG_EC:
        obj->key_type = CKK_EC;
        break;
    case HF_ALG_ED25519:
        obj->key_type = CKK_EC_EDWARDS;
        break;
    default:
        return CKR_OBJECT_HANDLE_INVALID;
    }
    obj->is_current = obj->version.version == obj->key.current_version;
    return CKR_OK;
}

bool hf_object_is_visible(const struct hf_object *obj)
{
    /* CKA_PRIVATE objects (section 4.4): the user must be logged in; the SO never sees them. */
    bool is_private = obj->sobj ? obj->sobj->is_private : obj->kind != HF_OBJ_PUBLIC;

    return !is_private || atomic_load(&hf_mod.login) == HF_LOGIN_USER;
}

static bool is_destroyed(const struct hf_object *obj)
{
    return obj->key.state == HF_STATE_DESTROYED || obj->version.state == HF_STATE_DESTROYED;
}

static CK_RV object_load(CK_OBJECT_HANDLE handle, uint64_t generation, struct hf_object **out)
{
    struct hf_store *store = hf_core_store(hf_mod.core);
    struct hf_object *obj = calloc(1, sizeof(*obj));
    CK_RV rv;

    if (!obj) return CKR_HOST_MEMORY;
    atomic_init(&obj->refs, 1);
    obj->generation = generation;
    rv = hf_store_version_get(store, HF_HANDLE_VERSION_ID(handle), &obj->version);
    if (rv == CKR_OK) rv = hf_store_key_get(store, obj->version.key_uuid, &obj->key);
    if (rv == CKR_KEY_HANDLE_INVALID) rv = CKR_OBJECT_HANDLE_INVALID;
    if (rv == CKR_OK) rv = hf_object_face_init(obj, HF_HANDLE_KIND(handle));
    if (rv == CKR_OK && is_destroyed(obj)) rv = CKR_OBJECT_HANDLE_INVALID;
    if (rv == CKR_OK && !hf_alg_is_secret(obj->key.alg)) {
        rv = hf_public_from_der(obj->version.public_der, obj->version.public_der_len, &obj->pub);
        if (rv != CKR_OK) hf_log_error("key %s: bad public key (0x%lx)", obj->key.uuid, rv);
    }
    if (rv != CKR_OK) {
        hf_object_unref(obj);
        return rv;
    }
    *out = obj;
    return CKR_OK;
}

/* The table's object for handle of this generation, as a new reference, or NULL. */
static struct hf_object *table_lookup(CK_OBJECT_HANDLE handle, uint64_t generation)
{
    struct hf_object *found = NULL;

    pthread_rwlock_rdlock(&table.lock);
    for (struct entry *e = table.buckets[bucket_of(handle)]; e; e = e->next) {
        if (e->obj->handle == handle && e->obj->generation == generation) {
            found = hf_object_ref(e->obj);
            break;
        }
    }
    pthread_rwlock_unlock(&table.lock);
    return found;
}

/* Puts obj in the table (replacing an older generation) and returns the table's object: obj,
 * or one another thread loaded first (then obj is dropped). Takes over obj's reference. */
static struct hf_object *table_insert(struct hf_object *obj)
{
    struct entry **slot, *e;
    struct hf_object *result = obj;

    pthread_rwlock_wrlock(&table.lock);
    slot = &table.buckets[bucket_of(obj->handle)];
    for (e = *slot; e && e->obj->handle != obj->handle; e = e->next) {
    }
    if (e && e->obj->generation >= obj->generation) {
        result = hf_object_ref(e->obj);
        hf_object_unref(obj);
    } else if (e) {
        hf_object_unref(e->obj);
        e->obj = hf_object_ref(obj);
    } else if ((e = malloc(sizeof(*e)))) {
        e->obj = hf_object_ref(obj);
        e->next = *slot;
        *slot = e;
    }
    pthread_rwlock_unlock(&table.lock);
    return result;
}

/* The kill switch (ARCHITECTURE.md): a request context naming a blocked link stops every use of
 * a key through that session. The gateway names a link on every request, so the answer comes
 * from the store's link cache: a block made anywhere (the CLI, another node) takes effect within
 * HF_LINK_CACHE_MS, inside the one second the design promises. The link must also name the
 * object's key. */
static CK_RV link_check(const struct hf_session *s, const struct hf_object *obj)
{
    char key_uuid[HF_UUID_LEN + 1];
    bool blocked = false;
    CK_RV rv;

    if (!s || !s->has_ctx || !s->ctx.link_type || !s->ctx.link_id) return CKR_OK;
    rv = hf_store_link_state(hf_core_store(hf_mod.core), s->ctx.link_type, s->ctx.link_id, key_uuid,
                             &blocked);
    /* No such link: CKR_KEY_HANDLE_INVALID, as from HF_GetLinkInfo. */
    if (rv == CKR_OK && blocked) rv = CKR_HF_LINK_BLOCKED;
    /* A link moved to another key no longer opens the old one, whatever a caller's snapshot of
     * the link still says. A session object belongs to no link, but a request through a blocked
     * one stops at it too (the key it came from, unwrapped under the link's key, is the
     * request's). */
    if (rv == CKR_OK && !obj->sobj && strcmp(key_uuid, obj->key.uuid) != 0)
        rv = CKR_KEY_HANDLE_INVALID;
    return rv;
}

static CK_RV object_find(struct hf_session *s, CK_OBJECT_HANDLE handle, uint64_t generation,
                         struct hf_object **out)
{
    struct hf_object *obj = NULL;
    CK_RV rv;

    if (s && s->last_obj && s->last_obj->handle == handle &&
        s->last_obj->generation == generation) {
        *out = hf_object_ref(s->last_obj);
        return CKR_OK;
    }
    obj = table_lookup(handle, generation);
    if (!obj) {
        rv = object_load(handle, generation, &obj);
        if (rv != CKR_OK) return rv;
        obj = table_insert(obj);
    }
    if (s) {
        hf_object_unref(s->last_obj);
        s->last_obj = hf_object_ref(obj);
    }
    *out = obj;
    return CKR_OK;
}

CK_RV hf_object_get(struct hf_session *s, CK_OBJECT_HANDLE handle, struct hf_object **out)
{
    struct hf_object *obj = NULL;
    CK_RV rv;

    hf_return_val_if_fail(out, CKR_ARGUMENTS_BAD);
    if (hf_module_check() != CKR_OK) return CKR_CRYPTOKI_NOT_INITIALIZED;
    if (HF_HANDLE_KIND(handle) == 0) return CKR_OBJECT_HANDLE_INVALID;
    if (HF_HANDLE_IS_SESSION(handle)) {
        rv = hf_session_object_get(handle, &obj);
    } else {
        if (HF_HANDLE_VERSION_ID(handle) <= 0) return CKR_OBJECT_HANDLE_INVALID;
        hf_objects_revalidate();
        rv = object_find(s, handle, atomic_load(&hf_mod.generation), &obj);
    }
    if (rv != CKR_OK) return rv;
    if (!hf_object_is_visible(obj)) rv = CKR_OBJECT_HANDLE_INVALID;
    if (rv == CKR_OK) rv = link_check(s, obj);
    if (rv != CKR_OK) {
        hf_object_unref(obj);
        return rv;
    }
    *out = obj;
    return CKR_OK;
}

/* ---- use -------------------------------------------------------------------------------- */

CK_RV hf_object_material(struct hf_object *obj, struct hf_material **out)
{
    hf_return_val_if_fail(obj && out, CKR_ARGUMENTS_BAD);
    if (obj->kind == HF_OBJ_PUBLIC) return CKR_KEY_TYPE_INCONSISTENT;
    struct hf_material *m = atomic_load(&obj->material), *none = NULL;
    if (m == NULL) {
        CK_RV rv = hf_core_material_as(hf_mod.core, obj->key.alg, &obj->version, &m);
        if (rv != CKR_OK) return rv;
        /* Two threads may race here: one keeps its material, the other drops its own. */
        ANNOTATE_HAPPENS_BEFORE(&obj->material);
        if (!atomic_compare_exchange_strong(&obj->material, &none, m)) {
            hf_material_unref(m);
            m = none;
        }
    }
    ANNOTATE_HAPPENS_AFTER(&obj->material);
    *out = hf_material_ref(m);
    return CKR_OK;
}

/* What each face may do at all: a public key never decrypts, signs or unwraps. */
static unsigned long face_usage(enum hf_object_kind kind)
{
    switch (kind) {
    case HF_OBJ_PUBLIC:
        return HF_USAGE_ENCRYPT | HF_USAGE_VERIFY | HF_USAGE_WRAP;
    case HF_OBJ_PRIVATE:
        return HF_USAGE_DECRYPT | HF_USAGE_SIGN | HF_USAGE_UNWRAP | HF_USAGE_DERIVE;
    default:
        return HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT | HF_USAGE_WRAP | HF_USAGE_UNWRAP |
               HF_USAGE_SIGN | HF_USAGE_VERIFY | HF_USAGE_DERIVE;
    }
}

bool hf_object_is_usable_for(const struct hf_object *obj, unsigned long usage_bit)
{
    return (usage_bit & ~face_usage(obj->kind)) == 0 && !is_destroyed(obj) &&
           hf_key_version_is_usable_for(&obj->key, &obj->version, usage_bit);
}

CK_RV hf_object_check_usage(const struct hf_object *obj, unsigned long usage_bit)
{
    hf_return_val_if_fail(obj, CKR_ARGUMENTS_BAD);
    return hf_object_is_usable_for(obj, usage_bit) ? CKR_OK : CKR_KEY_FUNCTION_NOT_PERMITTED;
}

/* ---- entry points ----------------------------------------------------------------------- */

/* Shared by the entry points that change a key: R/W session, user logged in. */
CK_RV hf_session_check_write(const struct hf_session *s)
{
    if (!(s->flags & CKF_RW_SESSION)) return CKR_SESSION_READ_ONLY;
    if (atomic_load(&hf_mod.login) != HF_LOGIN_USER) return CKR_USER_NOT_LOGGED_IN;
    return CKR_OK;
}

/* A PKCS#11 object is one face of one version, but a user deleting it expects the key gone:
 * destroying any face destroys the whole key, all versions, through the core (which erases the
 * material and records it). A session object is only itself, and goes in any session. */
HF_EXPORT CK_RV C_DestroyObject(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject)
{
    struct hf_object *obj = NULL;
    struct hf_session *s;
    struct hf_actor who;
    char caller[48];
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (hf_dobj_is_handle(hObject)) {
        rv = hf_dobj_destroy(s, hObject);
        goto done;
    }
    if (HF_HANDLE_IS_SESSION(hObject)) {
        /* Visible to the caller first (a private one needs the login its use would), but no
         * link check: a request refused at a blocked link still cleans up after itself. */
        rv = hf_session_object_get(hObject, &obj);
        if (rv == CKR_OK && !hf_object_is_visible(obj)) rv = CKR_OBJECT_HANDLE_INVALID;
        if (rv == CKR_OK) rv = hf_session_object_destroy(s, hObject);
        goto done;
    }
    if ((rv = hf_session_check_write(s)) != CKR_OK) goto done;
    if ((rv = hf_object_get(s, hObject, &obj)) != CKR_OK) goto done;
    hf_module_actor(s, &who, caller, sizeof(caller));
    /* The public object of a pair goes alone, as PKCS#11 software expects (pkcs11-tool
     * --delete-object --type pubkey); the private or secret one takes the key, every version
     * and its material with it. */
    if (obj->kind == HF_OBJ_PUBLIC)
        rv = hf_core_key_label_set(hf_mod.core, obj->key.uuid, HF_P11_PUBLIC_GONE, "true", &who);
    else
        rv = hf_core_key_destroy(hf_mod.core, obj->key.uuid, &who);
    hf_objects_changed();
    hf_session_clear_ctx(s);
done:
    hf_object_unref(obj);
    hf_session_put(s);
    return rv;
}

HF_EXPORT CK_RV C_GetObjectSize(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject,
                                CK_ULONG_PTR pulSize)
{
    struct hf_object *obj = NULL;
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (!pulSize)
        rv = CKR_ARGUMENTS_BAD;
    else if (hf_dobj_is_handle(hObject))
        rv = hf_dobj_size(hObject, pulSize);
    else
        rv = hf_object_get(s, hObject, &obj);
    if (rv == CKR_OK && obj) *pulSize = CK_UNAVAILABLE_INFORMATION;
    hf_object_unref(obj);
    hf_session_put(s);
    return rv;
}
