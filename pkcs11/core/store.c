#include "hf-build.h"

#include "pkcs11/core/store-internal.h"

#include "pkcs11/core/core.h"
#include "pkcs11/core/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define return_val_if_fail(cond, val)                                                              \
    do {                                                                                           \
        if (!(cond)) return (val);                                                                 \
    } while (0)

#define SQLITE_PREFIX "sqlite:"

/* ---- the link cache (hf_store_link_state) ---- */

/* One link's answer, as read at fetched_us. */
struct link_slot {
    char *type, *ext_id; /* owned; NULL: empty slot */
    char key_uuid[HF_UUID_LEN + 1];
    bool found, blocked;
    uint64_t fetched_us;
    uint64_t generation; /* the store's generation when it was asked for */
};

/* Direct-mapped by a hash of (type, ext_id). A gateway asks on every request (>10k/s) about the
 * few links its clouds use; a store query each time cost a serialised SQLite lookup. */
struct hf_link_cache {
    pthread_rwlock_t lock; /* guards changes and slots */
    uint64_t changes;      /* links changed through this handle: an answer read before is stale */
    struct link_slot slots[HF_LINK_CACHE_SLOTS];
};

/* FNV-1a over type, a 0 byte, ext_id. */
static struct link_slot *link_slot_of(struct hf_link_cache *c, const char *type, const char *ext_id)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    for (const char *p = type; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    h *= 0x100000001b3ULL;
    for (const char *p = ext_id; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    return &c->slots[h % HF_LINK_CACHE_SLOTS];
}

static bool link_slot_is(const struct link_slot *slot, const char *type, const char *ext_id)
{
    return slot->type && strcmp(slot->type, type) == 0 && strcmp(slot->ext_id, ext_id) == 0;
}

static void link_slot_clear(struct link_slot *slot)
{
    free(slot->type);
    free(slot->ext_id);
    memset(slot, 0, sizeof(*slot));
}

static struct hf_link_cache *link_cache_new(void)
{
    struct hf_link_cache *c = calloc(1, sizeof(*c));

    if (c && pthread_rwlock_init(&c->lock, NULL) != 0) {
        free(c);
        c = NULL;
    }
    return c;
}

static void link_cache_free(struct hf_link_cache *c)
{
    if (!c) return;
    for (size_t i = 0; i < HF_LINK_CACHE_SLOTS; i++)
        link_slot_clear(&c->slots[i]);
    pthread_rwlock_destroy(&c->lock);
    free(c);
}

/* A change made through this handle: its next answer comes from the store. */
static void link_cache_forget(struct hf_store *store, const char *type, const char *ext_id)
{
    struct hf_link_cache *c = store->links;

    if (!c) return;
    pthread_rwlock_wrlock(&c->lock);
    struct link_slot *slot = link_slot_of(c, type, ext_id);
    if (link_slot_is(slot, type, ext_id)) link_slot_clear(slot);
    c->changes++;
    pthread_rwlock_unlock(&c->lock);
}

/* ---- policy MACs (store.h): the hooks the core installs ---- */

void hf_store_policy_set(struct hf_store *store, const struct hf_store_policy *policy)
{
    if (store) store->policy = policy;
}

uint64_t hf_store_policy_refusals(struct hf_store *store)
{
    return store ? atomic_load(&store->refused) : 0;
}

static CK_RV counted(struct hf_store *store, CK_RV rv)
{
    if (rv == CKR_HF_POLICY_INVALID) atomic_fetch_add(&store->refused, 1);
    return rv;
}

static CK_RV key_checked(struct hf_store *store, CK_RV rv, struct hf_key *k)
{
    if (rv != CKR_OK || !store->policy) return rv;
    if ((rv = counted(store, store->policy->key_check(store->policy->ctx, k))) != CKR_OK)
        hf_key_clear(k);
    return rv;
}

static CK_RV version_checked(struct hf_store *store, CK_RV rv, struct hf_key_version *v)
{
    if (rv != CKR_OK || !store->policy) return rv;
    if ((rv = counted(store, store->policy->version_check(store->policy->ctx, v))) != CKR_OK)
        hf_key_version_clear(v);
    return rv;
}

static CK_RV link_checked(struct hf_store *store, CK_RV rv, struct hf_link *l)
{
    if (rv != CKR_OK || !store->policy) return rv;
    if ((rv = counted(store, store->policy->link_check(store->policy->ctx, l))) != CKR_OK)
        hf_link_clear(l);
    return rv;
}

/* The list calls keep the rows that pass, in order (the others are cleared, and were logged). */
static void keys_filter(struct hf_store *store, struct hf_key *k, size_t *n)
{
    size_t kept = 0;

    for (size_t i = 0; store->policy && i < *n; i++)
        if (key_checked(store, CKR_OK, &k[i]) == CKR_OK) k[kept++] = k[i];
    if (store->policy) *n = kept;
}

static void versions_filter(struct hf_store *store, struct hf_key_version *v, size_t *n)
{
    size_t kept = 0;

    for (size_t i = 0; store->policy && i < *n; i++)
        if (version_checked(store, CKR_OK, &v[i]) == CKR_OK) v[kept++] = v[i];
    if (store->policy) *n = kept;
}

static void links_filter(struct hf_store *store, struct hf_link *l, size_t *n)
{
    size_t kept = 0;

    for (size_t i = 0; store->policy && i < *n; i++)
        if (link_checked(store, CKR_OK, &l[i]) == CKR_OK) l[kept++] = l[i];
    if (store->policy) *n = kept;
}

/* Fills row->mac for the write about to happen; without a policy the row is written unMAC'd. */
static CK_RV key_seal(struct hf_store *store, struct hf_key *k)
{
    k->has_mac = false;
    return store->policy ? store->policy->key_seal(store->policy->ctx, k) : CKR_OK;
}

static CK_RV version_seal(struct hf_store *store, struct hf_key_version *v)
{
    v->has_mac = false;
    return store->policy ? store->policy->version_seal(store->policy->ctx, v) : CKR_OK;
}

static CK_RV link_seal(struct hf_store *store, struct hf_link *l)
{
    l->has_mac = false;
    return store->policy ? store->policy->link_seal(store->policy->ctx, l) : CKR_OK;
}

static const unsigned char *old_mac(const unsigned char *mac, bool has_mac)
{
    return has_mac ? mac : NULL;
}

/* The key row as the store has it now, checked: the base of a write that changes part of it. */
static CK_RV key_current(struct hf_store *store, const char *uuid, struct hf_key *k)
{
    return key_checked(store, store->ops->key_get(store, uuid, k), k);
}

CK_RV hf_store_policy_migrate(struct hf_store *store, const struct hf_store_migration *m, size_t *n)
{
    return_val_if_fail(store && m && m->key && m->version && m->link && n, CKR_ARGUMENTS_BAD);
    return store->ops->policy_migrate(store, m, n);
}

bool hf_store_locator_is_pg(const char *locator)
{
    return locator && (strncmp(locator, "postgresql://", 13) == 0 ||
                       strncmp(locator, "postgres://", 11) == 0);
}

const char *hf_store_locator_file(const char *locator)
{
    if (locator == NULL || strstr(locator, "://") != NULL) return NULL;
    if (strncmp(locator, SQLITE_PREFIX, strlen(SQLITE_PREFIX)) == 0)
        locator += strlen(SQLITE_PREFIX);
    return *locator ? locator : NULL;
}

CK_RV hf_store_open(const char *locator, struct hf_store **out)
{
    const char *file = hf_store_locator_file(locator);
    CK_RV rv;

    return_val_if_fail(locator && *locator, CKR_ARGUMENTS_BAD);
    return_val_if_fail(out, CKR_ARGUMENTS_BAD);

    if (hf_store_locator_is_pg(locator)) {
        rv = hf_store_pg_open(locator, out);
    } else if (file != NULL) {
        rv = hf_store_sqlite_open(file, out);
    } else {
        hf_log_error("store: '%.*s' names no store: a path, sqlite:PATH or postgresql://...",
                     (int)strcspn(locator, "@"), locator);
        return CKR_ARGUMENTS_BAD;
    }
    if (rv == CKR_OK && !((*out)->links = link_cache_new())) {
        hf_store_close(*out);
        *out = NULL;
        rv = CKR_HOST_MEMORY;
    }
    return rv;
}

void hf_store_close(struct hf_store *store)
{
    if (!store) return;
    link_cache_free(store->links);
    store->links = NULL;
    store->ops->close(store);
}

CK_RV hf_store_schema_version(struct hf_store *store, int *version)
{
    return_val_if_fail(store && version, CKR_ARGUMENTS_BAD);
    return store->ops->schema_version(store, version);
}

CK_RV hf_store_data_version(struct hf_store *store, uint64_t *version)
{
    return_val_if_fail(store && version, CKR_ARGUMENTS_BAD);
    return store->ops->data_version(store, version);
}

static bool state_is_valid(unsigned long state)
{
    return state >= HF_STATE_PRE_ACTIVE && state <= HF_STATE_DESTROYED;
}

/* Content checks shared by every backend, so none stores a row the key model calls invalid. */
static bool key_is_storable(const struct hf_key *key)
{
    return hf_uuid_is_valid(key->uuid) && hf_key_name_is_valid(key->name) &&
           hf_alg_bits_is_valid(key->alg, key->bits) && state_is_valid(key->state);
}

static bool labels_are_storable(const struct hf_key *key)
{
    if (key->n_labels && !key->labels) return false;
    for (size_t i = 0; i < key->n_labels; i++)
        if (!hf_label_name_is_valid(key->labels[i].name) || !key->labels[i].value) return false;
    return true;
}

CK_RV hf_store_key_insert(struct hf_store *store, const struct hf_key *key,
                          struct hf_key_version *v1)
{
    return_val_if_fail(store && key && v1 && key->name, CKR_ARGUMENTS_BAD);
    return_val_if_fail(key_is_storable(key) && labels_are_storable(key),
                       CKR_ATTRIBUTE_VALUE_INVALID);
    if (v1->state == 0) v1->state = HF_STATE_ACTIVE;
    return_val_if_fail(hf_uuid_is_valid(v1->uuid) && state_is_valid(v1->state),
                       CKR_ATTRIBUTE_VALUE_INVALID);
    return_val_if_fail(!v1->wrapped_len || v1->wrapped, CKR_ARGUMENTS_BAD);
    return_val_if_fail(!v1->public_der_len || v1->public_der, CKR_ARGUMENTS_BAD);
    struct hf_key k = *key; /* shallow: only its MAC is filled in */
    CK_RV rv = key_seal(store, &k);
    memcpy(v1->key_uuid, key->uuid, sizeof(v1->key_uuid));
    v1->version = 1;
    if (rv == CKR_OK) rv = version_seal(store, v1);
    return rv == CKR_OK ? store->ops->key_insert(store, &k, v1) : rv;
}

CK_RV hf_store_key_get(struct hf_store *store, const char *ref, struct hf_key *out)
{
    return_val_if_fail(store && ref && out, CKR_ARGUMENTS_BAD);
    return key_checked(store, store->ops->key_get(store, ref, out), out);
}

CK_RV hf_store_key_list(struct hf_store *store, struct hf_key **keys, size_t *n)
{
    return_val_if_fail(store && keys && n, CKR_ARGUMENTS_BAD);
    CK_RV rv = store->ops->key_list(store, keys, n);
    if (rv == CKR_OK) keys_filter(store, *keys, n);
    return rv;
}

CK_RV hf_store_key_update(struct hf_store *store, const struct hf_key *key)
{
    return_val_if_fail(store && key && key->name, CKR_ARGUMENTS_BAD);
    return_val_if_fail(hf_uuid_is_valid(key->uuid), CKR_KEY_HANDLE_INVALID);
    return_val_if_fail(hf_key_name_is_valid(key->name) && labels_are_storable(key),
                       CKR_ATTRIBUTE_VALUE_INVALID);
    return_val_if_fail(state_is_valid(key->state), CKR_ATTRIBUTE_VALUE_INVALID);
    struct hf_key k = *key; /* shallow: only its MAC is filled in */
    CK_RV rv = key_seal(store, &k);
    return rv == CKR_OK ? store->ops->key_update(store, &k, old_mac(key->mac, key->has_mac)) : rv;
}

CK_RV hf_store_key_destroy(struct hf_store *store, const char *uuid, int64_t when)
{
    return_val_if_fail(store && uuid, CKR_ARGUMENTS_BAD);
    return_val_if_fail(hf_uuid_is_valid(uuid), CKR_KEY_HANDLE_INVALID);
    struct hf_key k = {0};
    CK_RV rv = CKR_OK;
    if (store->policy && (rv = key_current(store, uuid, &k)) == CKR_OK) {
        unsigned char was[HF_POLICY_MAC_LEN];
        memcpy(was, k.mac, sizeof(was));
        k.state = HF_STATE_DESTROYED;
        if ((rv = key_seal(store, &k)) == CKR_OK)
            rv = store->ops->key_destroy(store, uuid, when, k.mac, was);
    } else if (rv == CKR_OK) {
        rv = store->ops->key_destroy(store, uuid, when, NULL, NULL);
    }
    hf_key_clear(&k);
    return rv;
}

CK_RV hf_store_version_insert(struct hf_store *store, struct hf_key_version *v, int64_t when)
{
    return_val_if_fail(store && v, CKR_ARGUMENTS_BAD);
    return_val_if_fail(hf_uuid_is_valid(v->key_uuid), CKR_KEY_HANDLE_INVALID);
    if (v->state == 0) v->state = HF_STATE_ACTIVE;
    return_val_if_fail(hf_uuid_is_valid(v->uuid) && v->version > 1 && state_is_valid(v->state),
                       CKR_ATTRIBUTE_VALUE_INVALID);
    return_val_if_fail(!v->wrapped_len || v->wrapped, CKR_ARGUMENTS_BAD);
    return_val_if_fail(!v->public_der_len || v->public_der, CKR_ARGUMENTS_BAD);
    struct hf_key k = {0};
    CK_RV rv = version_seal(store, v);
    if (rv == CKR_OK && store->policy && (rv = key_current(store, v->key_uuid, &k)) == CKR_OK) {
        unsigned char was[HF_POLICY_MAC_LEN];
        memcpy(was, k.mac, sizeof(was));
        k.current_version = v->version; /* as the rotation leaves the key row */
        if ((rv = key_seal(store, &k)) == CKR_OK)
            rv = store->ops->version_insert(store, v, when, k.mac, was);
    } else if (rv == CKR_OK) {
        rv = store->ops->version_insert(store, v, when, NULL, NULL);
    }
    hf_key_clear(&k);
    return rv;
}

CK_RV hf_store_version_set_state(struct hf_store *store, const struct hf_key_version *v)
{
    return_val_if_fail(store && v, CKR_ARGUMENTS_BAD);
    return_val_if_fail(state_is_valid(v->state), CKR_ATTRIBUTE_VALUE_INVALID);
    struct hf_key_version w = *v; /* shallow: only its MAC (and material) change */
    CK_RV rv = CKR_OK;
    if (v->state == HF_STATE_DESTROYED) {
        w.wrapped = NULL;
        w.wrapped_len = 0;
        w.has_mac = false;
    } else {
        rv = version_seal(store, &w);
    }
    if (rv != CKR_OK) return rv;
    return store->ops->version_set_state(store, &w, old_mac(v->mac, v->has_mac));
}

CK_RV hf_store_version_get(struct hf_store *store, int64_t id, struct hf_key_version *out)
{
    return_val_if_fail(store && out, CKR_ARGUMENTS_BAD);
    return version_checked(store, store->ops->version_get(store, id, out), out);
}

CK_RV hf_store_version_find(struct hf_store *store, const char *key_uuid, unsigned version,
                            struct hf_key_version *out)
{
    return_val_if_fail(store && key_uuid && out, CKR_ARGUMENTS_BAD);
    return version_checked(store, store->ops->version_find(store, key_uuid, version, out), out);
}

CK_RV hf_store_version_find_by_uuid(struct hf_store *store, const char *version_uuid,
                                    struct hf_key_version *out)
{
    return_val_if_fail(store && version_uuid && out, CKR_ARGUMENTS_BAD);
    return version_checked(store, store->ops->version_find_by_uuid(store, version_uuid, out), out);
}

CK_RV hf_store_version_list(struct hf_store *store, const char *key_uuid,
                            struct hf_key_version **versions, size_t *n)
{
    return_val_if_fail(store && key_uuid && versions && n, CKR_ARGUMENTS_BAD);
    CK_RV rv = store->ops->version_list(store, key_uuid, versions, n);
    if (rv == CKR_OK) versions_filter(store, *versions, n);
    return rv;
}

struct each_check {
    struct hf_store *store;
    hf_store_version_fn fn;
    void *arg;
};

/* Passes on the rows whose key and version both pass their check. */
static CK_RV each_checked(const struct hf_key *key, const struct hf_key_version *v, void *arg)
{
    const struct each_check *c = arg;
    const struct hf_store_policy *p = c->store->policy;

    if (counted(c->store, p->key_check(p->ctx, key)) != CKR_OK ||
        counted(c->store, p->version_check(p->ctx, v)) != CKR_OK)
        return CKR_OK;
    return c->fn(key, v, c->arg);
}

CK_RV hf_store_version_each(struct hf_store *store, hf_store_version_fn fn, void *arg)
{
    return_val_if_fail(store && fn, CKR_ARGUMENTS_BAD);
    struct each_check c = {store, fn, arg};
    if (store->policy) return store->ops->version_each(store, each_checked, &c);
    return store->ops->version_each(store, fn, arg);
}

CK_RV hf_store_link_insert(struct hf_store *store, struct hf_link *link)
{
    return_val_if_fail(store && link && link->type && link->ext_id, CKR_ARGUMENTS_BAD);
    return_val_if_fail(*link->type && *link->ext_id, CKR_ATTRIBUTE_VALUE_INVALID);
    return_val_if_fail(hf_uuid_is_valid(link->key_uuid), CKR_KEY_HANDLE_INVALID);
    CK_RV rv = link_seal(store, link);
    if (rv == CKR_OK) rv = store->ops->link_insert(store, link);
    link_cache_forget(store, link->type, link->ext_id);
    return rv;
}

CK_RV hf_store_link_get(struct hf_store *store, const char *type, const char *ext_id,
                        struct hf_link *out)
{
    return_val_if_fail(store && type && ext_id && out, CKR_ARGUMENTS_BAD);
    return link_checked(store, store->ops->link_get(store, type, ext_id, out), out);
}

/* The row as it will be after the block: the new MAC, with the one it had in *was. */
static CK_RV link_blocked_seal(struct hf_store *store, const char *type, const char *ext_id,
                               bool blocked, struct hf_link *l, unsigned char *was)
{
    CK_RV rv = store->ops->link_get(store, type, ext_id, l);

    if ((rv = link_checked(store, rv, l)) != CKR_OK) return rv;
    memcpy(was, l->mac, HF_POLICY_MAC_LEN);
    l->blocked = blocked;
    return link_seal(store, l);
}

CK_RV hf_store_link_set_blocked(struct hf_store *store, const char *type, const char *ext_id,
                                bool blocked, int64_t when)
{
    return_val_if_fail(store && type && ext_id, CKR_ARGUMENTS_BAD);
    unsigned char was[HF_POLICY_MAC_LEN];
    struct hf_link l = {0};
    CK_RV rv = CKR_OK;
    if (store->policy && (rv = link_blocked_seal(store, type, ext_id, blocked, &l, was)) == CKR_OK)
        rv = store->ops->link_set_blocked(store, type, ext_id, blocked, when, l.mac, was);
    else if (rv == CKR_OK)
        rv = store->ops->link_set_blocked(store, type, ext_id, blocked, when, NULL, NULL);
    hf_link_clear(&l);
    link_cache_forget(store, type, ext_id);
    return rv;
}

CK_RV hf_store_link_delete(struct hf_store *store, const char *type, const char *ext_id)
{
    return_val_if_fail(store && type && ext_id, CKR_ARGUMENTS_BAD);
    CK_RV rv = store->ops->link_delete(store, type, ext_id);
    link_cache_forget(store, type, ext_id);
    return rv;
}

bool hf_link_type_is_valid(const char *name)
{
    return hf_name_is_valid(name, HF_LINK_TYPE_MAX, '-');
}

CK_RV hf_store_link_type_add(struct hf_store *store, const char *name, int64_t when, bool *added)
{
    bool dummy;

    return_val_if_fail(store && name, CKR_ARGUMENTS_BAD);
    return_val_if_fail(hf_link_type_is_valid(name), CKR_ATTRIBUTE_VALUE_INVALID);
    return store->ops->link_type_add(store, name, when, added ? added : &dummy);
}

CK_RV hf_store_link_type_get(struct hf_store *store, const char *name)
{
    return_val_if_fail(store && name, CKR_ARGUMENTS_BAD);
    return_val_if_fail(hf_link_type_is_valid(name), CKR_ATTRIBUTE_VALUE_INVALID);
    return store->ops->link_type_get(store, name);
}

CK_RV hf_store_link_type_list(struct hf_store *store, char ***names, size_t *n)
{
    return_val_if_fail(store && names && n, CKR_ARGUMENTS_BAD);
    return store->ops->link_type_list(store, names, n);
}

CK_RV hf_store_link_list(struct hf_store *store, const char *key_uuid, struct hf_link **links,
                         size_t *n)
{
    return_val_if_fail(store && links && n, CKR_ARGUMENTS_BAD);
    CK_RV rv = store->ops->link_list(store, key_uuid, links, n);
    if (rv == CKR_OK) links_filter(store, *links, n);
    return rv;
}

CK_RV hf_store_link_state(struct hf_store *store, const char *type, const char *ext_id,
                          char key_uuid[HF_UUID_LEN + 1], bool *blocked)
{
    struct hf_link_cache *c;
    struct hf_link link = {0};
    struct link_slot *slot;
    uint64_t now = hf_monotonic_us(), changes = 0, generation;
    CK_RV rv = CKR_OK;

    return_val_if_fail(store && type && ext_id && key_uuid && blocked, CKR_ARGUMENTS_BAD);
    c = store->links;
    /* Read before the query too: a change heard while it runs leaves the answer stale. */
    generation = atomic_load(&store->generation);
    if (c) {
        pthread_rwlock_rdlock(&c->lock);
        slot = link_slot_of(c, type, ext_id);
        bool hit = link_slot_is(slot, type, ext_id) && slot->generation == generation &&
                   slot->fetched_us + HF_LINK_CACHE_MS * 1000ULL > now;
        if (hit) {
            memcpy(key_uuid, slot->key_uuid, HF_UUID_LEN + 1);
            *blocked = slot->blocked;
            rv = slot->found ? CKR_OK : CKR_KEY_HANDLE_INVALID;
        }
        changes = c->changes;
        pthread_rwlock_unlock(&c->lock);
        if (hit) return rv;
    }
    /* Taken before the query: an answer is never trusted past HF_LINK_CACHE_MS after it was
     * asked for. */
    now = hf_monotonic_us();
    /* Checked on each (re)load, every HF_LINK_CACHE_MS at most: an unblock made by editing the
     * store fails its MAC and the link stays unusable. */
    rv = link_checked(store, store->ops->link_get(store, type, ext_id, &link), &link);
    if (rv != CKR_OK && rv != CKR_KEY_HANDLE_INVALID) goto done; /* a failure is not an answer */
    memset(key_uuid, 0, HF_UUID_LEN + 1);
    *blocked = false;
    if (rv == CKR_OK) {
        memcpy(key_uuid, link.key_uuid, HF_UUID_LEN + 1);
        key_uuid[HF_UUID_LEN] = '\0';
        *blocked = link.blocked;
    }
    if (c) {
        char *t = strdup(type), *e = strdup(ext_id);
        pthread_rwlock_wrlock(&c->lock);
        slot = link_slot_of(c, type, ext_id);
        /* Not when a change through this handle may have come after the read, and not over a
         * newer answer another thread stored meanwhile. */
        if (t && e && c->changes == changes &&
            !(link_slot_is(slot, type, ext_id) && slot->fetched_us > now)) {
            link_slot_clear(slot);
            slot->type = t;
            slot->ext_id = e;
            t = e = NULL;
            memcpy(slot->key_uuid, key_uuid, HF_UUID_LEN + 1);
            slot->found = rv == CKR_OK;
            slot->blocked = *blocked;
            slot->fetched_us = now;
            slot->generation = generation;
        }
        pthread_rwlock_unlock(&c->lock);
        free(t);
        free(e);
    }
done:
    hf_link_clear(&link);
    return rv;
}

CK_RV hf_store_meta_get(struct hf_store *store, const char *name, char **value)
{
    return_val_if_fail(store && name && value, CKR_ARGUMENTS_BAD);
    return store->ops->meta_get(store, name, value);
}

CK_RV hf_store_meta_count_add(struct hf_store *store, const char *name, uint64_t *count)
{
    return_val_if_fail(store && name && *name && count, CKR_ARGUMENTS_BAD);
    return store->ops->meta_count_add(store, name, count);
}

CK_RV hf_store_meta_swap(struct hf_store *store, const char *name, const char *expect,
                         const char *value, bool *swapped)
{
    return_val_if_fail(store && name && swapped && (expect || value), CKR_ARGUMENTS_BAD);
    return_val_if_fail(*name, CKR_ATTRIBUTE_VALUE_INVALID);
    *swapped = false;
    return store->ops->meta_swap(store, name, expect, value, swapped);
}

CK_RV hf_store_meta_set(struct hf_store *store, const char *name, const char *value)
{
    return_val_if_fail(store && name && value, CKR_ARGUMENTS_BAD);
    return_val_if_fail(*name, CKR_ATTRIBUTE_VALUE_INVALID);
    return store->ops->meta_set(store, name, value);
}

void hf_store_object_clear(struct hf_store_object *obj)
{
    if (!obj) return;
    free(obj->label);
    free(obj->ckaid);
    free(obj->value);
    free(obj->attrs);
    memset(obj, 0, sizeof(*obj));
}

CK_RV hf_store_object_insert(struct hf_store *store, struct hf_store_object *obj)
{
    return_val_if_fail(store && obj, CKR_ARGUMENTS_BAD);
    return store->ops->object_insert(store, obj);
}

CK_RV hf_store_object_get(struct hf_store *store, int64_t id, struct hf_store_object *out)
{
    return_val_if_fail(store && out, CKR_ARGUMENTS_BAD);
    return_val_if_fail(id > 0, CKR_KEY_HANDLE_INVALID);
    return store->ops->object_get(store, id, out);
}

CK_RV hf_store_object_update(struct hf_store *store, const struct hf_store_object *obj)
{
    return_val_if_fail(store && obj, CKR_ARGUMENTS_BAD);
    return_val_if_fail(obj->id > 0, CKR_KEY_HANDLE_INVALID);
    return store->ops->object_update(store, obj);
}

CK_RV hf_store_object_delete(struct hf_store *store, int64_t id)
{
    return_val_if_fail(store, CKR_ARGUMENTS_BAD);
    return_val_if_fail(id > 0, CKR_KEY_HANDLE_INVALID);
    return store->ops->object_delete(store, id);
}

CK_RV hf_store_object_list(struct hf_store *store, struct hf_store_object **objs, size_t *n)
{
    return_val_if_fail(store && objs && n, CKR_ARGUMENTS_BAD);
    return store->ops->object_list(store, objs, n);
}

/* ---- HSM pools ---- */

static const char *const pool_modes[] = {
    [HF_POOL_MODE_PLAIN] = "plain",
    [HF_POOL_MODE_CLONE] = "clone",
    [HF_POOL_MODE_EXPORT] = "export",
};

const char *hf_pool_mode_name(enum hf_pool_mode mode)
{
    return mode >= HF_POOL_MODE_PLAIN && mode <= HF_POOL_MODE_EXPORT ? pool_modes[mode] : NULL;
}

bool hf_pool_mode_parse(const char *s, enum hf_pool_mode *mode)
{
    for (int m = HF_POOL_MODE_PLAIN; s && m <= HF_POOL_MODE_EXPORT; m++) {
        if (strcmp(s, pool_modes[m]) == 0) {
            *mode = (enum hf_pool_mode)m;
            return true;
        }
    }
    return false;
}

void hf_store_pool_member_clear(struct hf_store_pool_member *m)
{
    if (!m) return;
    free(m->name);
    free(m->module_path);
    free(m->token_label);
    free(m->token_serial);
    free(m->pin_file);
    free(m->pin_env);
    memset(m, 0, sizeof(*m));
}

void hf_store_pool_clear(struct hf_store_pool *pool)
{
    if (!pool) return;
    for (size_t i = 0; pool->members && i < pool->n_members; i++)
        hf_store_pool_member_clear(&pool->members[i]);
    free(pool->members);
    free(pool->name);
    memset(pool, 0, sizeof(*pool));
}

bool hf_pool_name_is_valid(const char *name)
{
    return hf_name_is_valid(name, HF_POOL_NAME_MAX, '-');
}

/* 1..max bytes, none a control character. */
static bool text_is_valid(const char *s, size_t max)
{
    size_t len = s ? strlen(s) : 0;

    if (len == 0 || len > max) return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return false;
    return true;
}

static bool path_is_valid(const char *s)
{
    return text_is_valid(s, HF_POOL_PATH_MAX) && s[0] == '/';
}

static bool serial_is_valid(const char *s)
{
    size_t len = s ? strlen(s) : 0;

    if (len == 0 || len > HF_POOL_TOKEN_SERIAL_MAX) return false;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= 'A' && s[i] <= 'Z')))
            return false;
    return true;
}

/* POSIX's portable environment variable names: [A-Za-z_][A-Za-z0-9_]*. */
static bool env_name_is_valid(const char *s)
{
    size_t len = s ? strlen(s) : 0;

    if (len == 0 || len > 255 || (s[0] >= '0' && s[0] <= '9')) return false;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_'))
            return false;
    return true;
}

#define POOL_WHY(...)                                                                              \
    do {                                                                                           \
        if (why && whylen) snprintf(why, whylen, __VA_ARGS__);                                     \
        return false;                                                                              \
    } while (0)

static bool member_is_valid(const struct hf_store_pool_member *m, char *why, size_t whylen)
{
    const char *n = m->name;

    if (!hf_pool_name_is_valid(n))
        POOL_WHY("a member name is 1 to %d of a-z, 0-9 and '-'", HF_POOL_NAME_MAX);
    if (!path_is_valid(m->module_path))
        POOL_WHY("member %s: the module path must be absolute (it is loaded on every node)", n);
    if (!m->token_label && !m->token_serial)
        POOL_WHY("member %s: give the token's label or its serial", n);
    if (m->token_label && !text_is_valid(m->token_label, HF_POOL_TOKEN_LABEL_MAX))
        POOL_WHY("member %s: a token label is 1 to %d characters", n, HF_POOL_TOKEN_LABEL_MAX);
    if (m->token_serial && !serial_is_valid(m->token_serial))
        POOL_WHY("member %s: a token serial is 1 to %d of 0-9, a-z, A-Z", n,
                 HF_POOL_TOKEN_SERIAL_MAX);
    if (!m->pin_file == !m->pin_env)
        POOL_WHY("member %s: give exactly one PIN source, pin_file or pin_env", n);
    if (m->pin_file && !path_is_valid(m->pin_file))
        POOL_WHY("member %s: pin_file must be an absolute path", n);
    if (m->pin_env && !env_name_is_valid(m->pin_env))
        POOL_WHY("member %s: pin_env must be an environment variable's name", n);
    if (m->concurrency < 1 || m->concurrency > HF_POOL_CONCURRENCY_MAX)
        POOL_WHY("member %s: concurrency is 1 to %d", n, HF_POOL_CONCURRENCY_MAX);
    return true;
}

bool hf_store_pool_is_valid(const struct hf_store_pool *pool, char *why, size_t whylen)
{
    if (why && whylen) why[0] = '\0';
    if (!pool) POOL_WHY("no pool");
    if (!hf_pool_name_is_valid(pool->name))
        POOL_WHY("a pool name is 1 to %d of a-z, 0-9 and '-'", HF_POOL_NAME_MAX);
    if (!hf_pool_mode_name(pool->mode)) POOL_WHY("the mode is plain, clone or export");
    if (pool->n_members < 1 || pool->n_members > HF_POOL_MEMBERS_MAX || !pool->members)
        POOL_WHY("a pool has 1 to %d members", HF_POOL_MEMBERS_MAX);
    for (size_t i = 0; i < pool->n_members; i++) {
        if (!member_is_valid(&pool->members[i], why, whylen)) return false;
        for (size_t j = 0; j < i; j++)
            if (strcmp(pool->members[i].name, pool->members[j].name) == 0)
                POOL_WHY("member name %s is given twice", pool->members[i].name);
    }
    return true;
}

static CK_RV pool_checked(struct hf_store *store, CK_RV rv, struct hf_store_pool *p)
{
    if (rv != CKR_OK || !store->policy) return rv;
    if ((rv = counted(store, store->policy->pool_check(store->policy->ctx, p))) != CKR_OK)
        hf_store_pool_clear(p);
    return rv;
}

CK_RV hf_store_pool_insert(struct hf_store *store, struct hf_store_pool *pool)
{
    char why[160];

    return_val_if_fail(store && pool, CKR_ARGUMENTS_BAD);
    if (!hf_store_pool_is_valid(pool, why, sizeof(why))) {
        hf_log_info("store: pool refused: %s", why);
        return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    pool->has_mac = false;
    CK_RV rv = store->policy ? store->policy->pool_seal(store->policy->ctx, pool) : CKR_OK;
    return rv == CKR_OK ? store->ops->pool_insert(store, pool) : rv;
}

CK_RV hf_store_pool_get(struct hf_store *store, const char *name, struct hf_store_pool *out)
{
    return_val_if_fail(store && name && out, CKR_ARGUMENTS_BAD);
    return_val_if_fail(hf_pool_name_is_valid(name), CKR_KEY_HANDLE_INVALID);
    return pool_checked(store, store->ops->pool_get(store, name, out), out);
}

CK_RV hf_store_pool_list(struct hf_store *store, struct hf_store_pool **pools, size_t *n)
{
    return_val_if_fail(store && pools && n, CKR_ARGUMENTS_BAD);
    CK_RV rv = store->ops->pool_list(store, pools, n);
    size_t kept = 0;
    if (rv != CKR_OK || !store->policy) return rv;
    for (size_t i = 0; i < *n; i++)
        if (pool_checked(store, CKR_OK, &(*pools)[i]) == CKR_OK) (*pools)[kept++] = (*pools)[i];
    *n = kept;
    return CKR_OK;
}

CK_RV hf_store_pool_delete(struct hf_store *store, const char *name)
{
    char source[sizeof(HF_KEY_SOURCE_POOL_PREFIX) + HF_POOL_NAME_MAX];

    return_val_if_fail(store && name, CKR_ARGUMENTS_BAD);
    return_val_if_fail(hf_pool_name_is_valid(name), CKR_KEY_HANDLE_INVALID);
    snprintf(source, sizeof(source), "%s%s", HF_KEY_SOURCE_POOL_PREFIX, name);
    return store->ops->pool_delete(store, name, source);
}

static bool pool_backup_what_is_valid(const char *what)
{
    return strcmp(what, HF_POOL_BACKUP_KEK) == 0 || strcmp(what, HF_POOL_BACKUP_REPLICATION) == 0;
}

CK_RV hf_store_pool_backup_get(struct hf_store *store, const char *pool, const char *what,
                               unsigned char **blob, size_t *len)
{
    return_val_if_fail(store && pool && what && blob && len, CKR_ARGUMENTS_BAD);
    return_val_if_fail(hf_pool_name_is_valid(pool), CKR_KEY_HANDLE_INVALID);
    return_val_if_fail(pool_backup_what_is_valid(what), CKR_ARGUMENTS_BAD);
    *blob = NULL;
    *len = 0;
    return store->ops->pool_backup_get(store, pool, what, blob, len);
}

CK_RV hf_store_pool_backup_add(struct hf_store *store, const char *pool, const char *what,
                               const unsigned char *blob, size_t len)
{
    return_val_if_fail(store && pool && what && blob && len > 0, CKR_ARGUMENTS_BAD);
    return_val_if_fail(hf_pool_name_is_valid(pool), CKR_KEY_HANDLE_INVALID);
    return_val_if_fail(pool_backup_what_is_valid(what), CKR_ARGUMENTS_BAD);
    return store->ops->pool_backup_add(store, pool, what, blob, len);
}
