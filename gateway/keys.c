/* hf_keys_by_link, hf_keys_version(_info) and hf_keys_by_version_uuid over a cache of links and
 * key versions (keys.h).
 *
 * The link itself (key uuid, blocked) is read on every call through the module's link cache
 * (HF_GetLinkInfo); a key entry older than a second is revalidated cheaply: the cached current
 * object asked whether it still is current (C_GetAttributeValue); only a rotation (or a link
 * moved to another key) costs a new C_FindObjects. Lookups run on the
 * thread's lookup session, which never carries a request context. */
#include "hf-build.h"

#include "gateway/keys-internal.h"
#include "gateway/keys.h"
#include "gateway/p11.h"
#include "gateway/request.h"

#include <openssl/ec.h>
#include <openssl/objects.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SHARDS 64
#define BUCKETS_PER_SHARD 64

struct shard {
    pthread_rwlock_t lock; /* guards buckets and every entry in them */
    struct hf_gw_keys_entry *buckets[BUCKETS_PER_SHARD];
};

static struct shard shards[SHARDS];
static atomic_uint nentries;
static pthread_once_t shards_once = PTHREAD_ONCE_INIT;

static void shards_init(void)
{
    for (size_t i = 0; i < SHARDS; i++)
        pthread_rwlock_init(&shards[i].lock, NULL);
}

static uint32_t hash_of(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* A copy of the entry for key, if cached. */
bool hf_gw_keys_cache_get(const char *key, struct hf_gw_keys_entry *out)
{
    uint32_t h = hash_of(key);
    struct shard *sh = &shards[h % SHARDS];
    bool found = false;

    pthread_once(&shards_once, shards_init);
    pthread_rwlock_rdlock(&sh->lock);
    for (struct hf_gw_keys_entry *e = sh->buckets[(h / SHARDS) % BUCKETS_PER_SHARD]; e; e = e->next)
        if (strcmp(e->key, key) == 0) {
            *out = *e;
            out->next = NULL;
            out->key = NULL;
            found = true;
            break;
        }
    pthread_rwlock_unlock(&sh->lock);
    return found;
}

void hf_gw_keys_cache_put(const char *key, const struct hf_gw_keys_entry *value)
{
    uint32_t h = hash_of(key);
    struct shard *sh = &shards[h % SHARDS];
    struct hf_gw_keys_entry **slot, *e;

    pthread_once(&shards_once, shards_init);
    pthread_rwlock_wrlock(&sh->lock);
    slot = &sh->buckets[(h / SHARDS) % BUCKETS_PER_SHARD];
    for (e = *slot; e; e = e->next)
        if (strcmp(e->key, key) == 0) break;
    if (e) {
        struct hf_gw_keys_entry *next = e->next;
        char *k = e->key;
        *e = *value;
        e->next = next;
        e->key = k;
    } else if (atomic_load(&nentries) < HF_GW_KEYS_MAX_ENTRIES && (e = malloc(sizeof(*e))) &&
               (*e = *value, e->key = strdup(key))) {
        e->next = *slot;
        *slot = e;
        atomic_fetch_add(&nentries, 1);
    } else {
        free(e);
    }
    pthread_rwlock_unlock(&sh->lock);
}

void hf_gw_keys_flush(void)
{
    pthread_once(&shards_once, shards_init);
    for (size_t i = 0; i < SHARDS; i++) {
        pthread_rwlock_wrlock(&shards[i].lock);
        for (size_t b = 0; b < BUCKETS_PER_SHARD; b++) {
            struct hf_gw_keys_entry *e = shards[i].buckets[b];
            while (e) {
                struct hf_gw_keys_entry *next = e->next;
                free(e->key);
                free(e);
                atomic_fetch_sub(&nentries, 1);
                e = next;
            }
            shards[i].buckets[b] = NULL;
        }
        pthread_rwlock_unlock(&shards[i].lock);
    }
}

void hf_gw_keys_shutdown(void)
{
    hf_gw_keys_flush();
}

/* ---- reading objects ---------------------------------------------------------------------- */

CK_RV hf_gw_keys_find_all(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, CK_ATTRIBUTE *tmpl,
                          CK_ULONG n, CK_OBJECT_HANDLE *found, CK_ULONG max, CK_ULONG *nfound)
{
    CK_RV rv = f->C_FindObjectsInit(s, tmpl, n);

    if (rv != CKR_OK) return rv;
    rv = f->C_FindObjects(s, found, max, nfound);
    f->C_FindObjectsFinal(s);
    return rv;
}

/* The bits of the named curve CKA_EC_PARAMS gives, by OpenSSL's own curve table (P-256, P-384,
 * P-521 and any other named curve a module may have); 0 for none. */
static CK_ULONG ec_bits(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE o)
{
    unsigned char params[64];
    const unsigned char *p = params;
    CK_ATTRIBUTE a = {CKA_EC_PARAMS, params, sizeof(params)};
    ASN1_OBJECT *oid;
    EC_GROUP *group = NULL;
    CK_ULONG bits = 0;

    if (f->C_GetAttributeValue(s, o, &a, 1) != CKR_OK) return 0;
    if ((oid = d2i_ASN1_OBJECT(NULL, &p, (long)a.ulValueLen)) != NULL &&
        p == params + a.ulValueLen && (group = EC_GROUP_new_by_curve_name(OBJ_obj2nid(oid))))
        bits = (CK_ULONG)EC_GROUP_get_degree(group);
    EC_GROUP_free(group);
    ASN1_OBJECT_free(oid);
    return bits;
}

/* The key's source ("local" or an HSM pool's name): asked on its own, since another vendor's
 * module refuses the attribute (CKR_ATTRIBUTE_TYPE_INVALID), which would fail the whole read;
 * its keys count as local. */
static void source_read(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE o,
                        char source[HF_POOL_NAME_BUF])
{
    CK_ATTRIBUTE a = {CKA_HF_SOURCE, source, HF_POOL_NAME_BUF - 1};

    if (f->C_GetAttributeValue(s, o, &a, 1) != CKR_OK || a.ulValueLen >= HF_POOL_NAME_BUF)
        a.ulValueLen = 0;
    source[a.ulValueLen] = '\0';
}

/* The current version of key uuid into ref (uuid, name, type, bits, state, usage, version,
 * handles) and its source. */
static enum hf_status current_find(CK_SESSION_HANDLE s, const char *uuid, struct hf_key_ref *ref,
                                   char source[HF_POOL_NAME_BUF])
{
    CK_FUNCTION_LIST_PTR f = hf_p11_functions();
    CK_BBOOL yes = CK_TRUE;
    CK_ATTRIBUTE tmpl[] = {
        {CKA_HF_KEY_UUID, (void *)uuid, strlen(uuid)},
        {CKA_HF_IS_CURRENT, &yes, sizeof(yes)},
    };
    CK_OBJECT_HANDLE found[4];
    CK_ULONG n = 0;
    CK_RV rv;

    if (!f) return HF_STATUS_UNAVAILABLE;
    rv = hf_gw_keys_find_all(f, s, tmpl, 2, found, 4, &n);
    if (rv != CKR_OK) {
        if (hf_gw_p11_rv_is_session_lost(rv)) hf_gw_p11_sessions_drop();
        return HF_STATUS_UNAVAILABLE;
    }
    ref->current = ref->current_pub = CK_INVALID_HANDLE;
    for (CK_ULONG i = 0; i < n; i++) {
        CK_OBJECT_CLASS cls;
        CK_ATTRIBUTE a = {CKA_CLASS, &cls, sizeof(cls)};
        /* An object gone since the search is no face of the key; any other failure (the
         * module reloads an object from its store, which may have stopped answering since the
         * search) must not read as a key without a secret face: that is "not found", which a
         * cloud acts on. */
        rv = f->C_GetAttributeValue(s, found[i], &a, 1);
        if (rv == CKR_OBJECT_HANDLE_INVALID) continue;
        if (rv != CKR_OK) {
            if (hf_gw_p11_rv_is_session_lost(rv)) hf_gw_p11_sessions_drop();
            return HF_STATUS_UNAVAILABLE;
        }
        if (cls == CKO_PUBLIC_KEY)
            ref->current_pub = found[i];
        else if (cls == CKO_SECRET_KEY || cls == CKO_PRIVATE_KEY)
            ref->current = found[i];
    }
    /* No secret or private face: a destroyed key, or one this login may not see. */
    if (ref->current == CK_INVALID_HANDLE) return HF_STATUS_KEY_NOT_FOUND;
    {
        CK_ULONG value_len = 0, modulus_bits = 0;
        char name[sizeof(ref->name)] = "";
        CK_ATTRIBUTE attrs[] = {
            {CKA_KEY_TYPE, &ref->key_type, sizeof(ref->key_type)},
            {CKA_HF_STATE, &ref->state, sizeof(ref->state)},
            {CKA_HF_USAGE, &ref->usage, sizeof(ref->usage)},
            {CKA_HF_VERSION, &ref->version, sizeof(ref->version)},
            {CKA_LABEL, name, sizeof(name) - 1},
            {CKA_HF_VERSION_UUID, ref->version_uuid, sizeof(ref->version_uuid) - 1},
        };
        rv = f->C_GetAttributeValue(s, ref->current, attrs, 6);
        if (rv != CKR_OK)
            return rv == CKR_OBJECT_HANDLE_INVALID ? HF_STATUS_KEY_NOT_FOUND
                                                   : HF_STATUS_UNAVAILABLE;
        name[attrs[4].ulValueLen < sizeof(name) ? attrs[4].ulValueLen : sizeof(name) - 1] = '\0';
        memcpy(ref->name, name, sizeof(ref->name));
        ref->version_uuid[sizeof(ref->version_uuid) - 1] = '\0';
        if (ref->key_type == CKK_AES) {
            CK_ATTRIBUTE a = {CKA_VALUE_LEN, &value_len, sizeof(value_len)};
            if (f->C_GetAttributeValue(s, ref->current, &a, 1) == CKR_OK) ref->bits = value_len * 8;
        } else if (ref->key_type == CKK_RSA) {
            CK_OBJECT_HANDLE o =
                ref->current_pub != CK_INVALID_HANDLE ? ref->current_pub : ref->current;
            CK_ATTRIBUTE a = {CKA_MODULUS_BITS, &modulus_bits, sizeof(modulus_bits)};
            if (f->C_GetAttributeValue(s, o, &a, 1) == CKR_OK) ref->bits = modulus_bits;
        } else if (ref->key_type == CKK_EC) {
            ref->bits = ec_bits(
                f, s, ref->current_pub != CK_INVALID_HANDLE ? ref->current_pub : ref->current);
        }
    }
    if (ref->state == HF_STATE_DESTROYED) return HF_STATUS_KEY_NOT_FOUND;
    source_read(f, s, ref->current, source);
    return HF_STATUS_OK;
}

/* Whether the cached current object still is current; refreshes its state and name. */
static bool current_is_still(CK_SESSION_HANDLE s, struct hf_key_ref *ref)
{
    CK_FUNCTION_LIST_PTR f = hf_p11_functions();
    CK_BBOOL current = CK_FALSE;
    char name[sizeof(ref->name)] = "";
    CK_ULONG state = 0, usage = 0;
    CK_ATTRIBUTE attrs[] = {
        {CKA_HF_IS_CURRENT, &current, sizeof(current)},
        {CKA_HF_STATE, &state, sizeof(state)},
        {CKA_HF_USAGE, &usage, sizeof(usage)},
        {CKA_LABEL, name, sizeof(name) - 1},
    };

    if (!f || f->C_GetAttributeValue(s, ref->current, attrs, 4) != CKR_OK || !current) return false;
    name[attrs[3].ulValueLen < sizeof(name) ? attrs[3].ulValueLen : sizeof(name) - 1] = '\0';
    memcpy(ref->name, name, sizeof(ref->name));
    ref->state = state;
    ref->usage = usage;
    return state != HF_STATE_DESTROYED;
}

/* What the link names now, from the module's link cache (HF_GetLinkInfo: a lock and a copy, no
 * store query within HF_LINK_CACHE_MS): *found false when there is no such link. */
static enum hf_status link_read(const char *type, const char *id, HF_LINK_INFO *info, bool *found)
{
    const HF_FUNCTION_LIST *v = hf_p11_vendor();
    CK_SESSION_HANDLE s;
    CK_RV rv;

    *found = false;
    if (!v) return HF_STATUS_UNAVAILABLE;
    for (int attempt = 0;; attempt++) {
        if ((rv = hf_gw_p11_lookup_session(&s)) != CKR_OK) return HF_STATUS_UNAVAILABLE;
        rv = v->HF_GetLinkInfo(s, type, id, info);
        if (!hf_gw_p11_rv_is_session_lost(rv) || attempt > 0) break;
        hf_gw_p11_sessions_drop();
    }
    if (rv == CKR_KEY_HANDLE_INVALID) return HF_STATUS_OK;
    if (rv != CKR_OK) return HF_STATUS_UNAVAILABLE;
    info->key_uuid[sizeof(info->key_uuid) - 1] = '\0';
    *found = true;
    return HF_STATUS_OK;
}

/* The key behind info into out: the old entry's objects when they still are the current version
 * of the same key, else found anew. */
static enum hf_status key_fetch(const HF_LINK_INFO *info, const struct hf_gw_keys_entry *old,
                                struct hf_gw_keys_entry *out)
{
    CK_SESSION_HANDLE s;

    memset(out, 0, sizeof(*out));
    if (hf_gw_p11_lookup_session(&s) != CKR_OK) return HF_STATUS_UNAVAILABLE;
    out->fetched_us = hf_now_us();
    if (old && old->status == HF_STATUS_OK && strcmp(old->ref.uuid, info->key_uuid) == 0) {
        out->ref = old->ref;
        memcpy(out->source, old->source, sizeof(out->source)); /* a key never moves */
        if (current_is_still(s, &out->ref)) {
            out->status = HF_STATUS_OK;
            return HF_STATUS_OK;
        }
    }
    memset(&out->ref, 0, sizeof(out->ref));
    memcpy(out->ref.uuid, info->key_uuid, sizeof(out->ref.uuid));
    out->status = current_find(s, info->key_uuid, &out->ref, out->source);
    if (out->status != HF_STATUS_OK && out->status != HF_STATUS_KEY_NOT_FOUND)
        return HF_STATUS_UNAVAILABLE;
    return HF_STATUS_OK;
}

/* The kill switch: the link (its key and blocked flag) is read on every call, from the module's
 * cache, so a block, an unblock or a link moved to another key shows here as soon as it shows to
 * the module's own check (HF_LINK_CACHE_MS), never a key snapshot's age later; only what is slow
 * to find (the key's objects, state and name) is kept for HF_GW_KEYS_MAX_AGE_US. */
HF_PLUGIN_EXPORT enum hf_status hf_keys_by_link(const char *link_type, const char *link_id,
                                                struct hf_key_ref *out)
{
    char key[600];
    struct hf_gw_keys_entry cached, fresh;
    HF_LINK_INFO info;
    bool have, found;
    enum hf_status st;

    if (!link_type || !link_id || !out) return HF_STATUS_INTERNAL;
    if ((size_t)snprintf(key, sizeof(key), "L\x1f%s\x1f%s", link_type, link_id) >= sizeof(key))
        return HF_STATUS_KEY_NOT_FOUND; /* no link id is that long */
    if ((st = link_read(link_type, link_id, &info, &found)) != HF_STATUS_OK) return st;
    if (!found) return HF_STATUS_KEY_NOT_FOUND;
    have = hf_gw_keys_cache_get(key, &cached);
    if (!have || strcmp(cached.ref.uuid, info.key_uuid) != 0 ||
        hf_now_us() - cached.fetched_us > HF_GW_KEYS_MAX_AGE_US) {
        if ((st = key_fetch(&info, have ? &cached : NULL, &fresh)) != HF_STATUS_OK) return st;
        hf_gw_keys_cache_put(key, &fresh);
        cached = fresh;
    }
    if (cached.status != HF_STATUS_OK) return cached.status;
    *out = cached.ref;
    out->blocked = info.blocked == CK_TRUE;
    /* Every way a plugin reaches a key passes here: the request learns where its key lives
     * (server.c hands pool keys to their workers). */
    hf_gw_request_key_source(cached.source);
    return HF_STATUS_OK;
}

static enum hf_status version_fetch(const struct hf_key_ref *key, CK_ULONG version,
                                    const struct hf_gw_keys_entry *old,
                                    struct hf_gw_keys_entry *out)
{
    CK_FUNCTION_LIST_PTR f = hf_p11_functions();
    CK_OBJECT_CLASS cls = key->key_type == CKK_AES ? CKO_SECRET_KEY : CKO_PRIVATE_KEY;
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_HF_KEY_UUID, (void *)key->uuid, strlen(key->uuid)},
        {CKA_HF_VERSION, &version, sizeof(version)},
    };
    CK_ATTRIBUTE state = {CKA_HF_STATE, &out->state, sizeof(out->state)};
    CK_OBJECT_HANDLE found[2];
    CK_SESSION_HANDLE s;
    CK_ULONG n = 0;
    CK_RV rv;

    memset(out, 0, sizeof(*out));
    if (!f) return HF_STATUS_UNAVAILABLE;
    if ((rv = hf_gw_p11_lookup_session(&s)) != CKR_OK) return HF_STATUS_UNAVAILABLE;
    out->fetched_us = hf_now_us();
    /* Revalidation: the handle is stable (holdfast.h), only the state moves. */
    if (old && old->status == HF_STATUS_OK &&
        f->C_GetAttributeValue(s, old->object, &state, 1) == CKR_OK) {
        out->object = old->object;
        memcpy(out->version_uuid, old->version_uuid, sizeof(out->version_uuid));
        out->status = out->state == HF_STATE_DESTROYED ? HF_STATUS_KEY_NOT_FOUND : HF_STATUS_OK;
        return HF_STATUS_OK;
    }
    rv = hf_gw_keys_find_all(f, s, tmpl, 3, found, 2, &n);
    if (rv != CKR_OK) {
        if (hf_gw_p11_rv_is_session_lost(rv)) hf_gw_p11_sessions_drop();
        return HF_STATUS_UNAVAILABLE;
    }
    if (n == 0) {
        out->status = HF_STATUS_KEY_NOT_FOUND;
        return HF_STATUS_OK;
    }
    out->object = found[0];
    {
        CK_ATTRIBUTE attrs[] = {state, {CKA_HF_VERSION_UUID, out->version_uuid, 36}};
        rv = f->C_GetAttributeValue(s, out->object, attrs, 2);
    }
    if (rv != CKR_OK) return HF_STATUS_UNAVAILABLE;
    out->status = out->state == HF_STATE_DESTROYED ? HF_STATUS_KEY_NOT_FOUND : HF_STATUS_OK;
    return HF_STATUS_OK;
}

HF_PLUGIN_EXPORT enum hf_status hf_keys_version_info(const struct hf_key_ref *key, CK_ULONG version,
                                                     CK_OBJECT_HANDLE *object, CK_ULONG *state,
                                                     char version_uuid[37])
{
    char ckey[80];
    struct hf_gw_keys_entry cached, fresh;
    bool have;
    enum hf_status st;

    if (!key || !object || key->uuid[0] == '\0') return HF_STATUS_INTERNAL;
    if (version == key->version && key->current != CK_INVALID_HANDLE) {
        *object = key->current;
        if (state) *state = key->state;
        if (version_uuid) memcpy(version_uuid, key->version_uuid, 37);
        return HF_STATUS_OK;
    }
    if (version == 0) return HF_STATUS_KEY_NOT_FOUND;
    snprintf(ckey, sizeof(ckey), "V\x1f%.36s\x1f%lu", key->uuid, (unsigned long)version);
    have = hf_gw_keys_cache_get(ckey, &cached);
    if (!have || hf_now_us() - cached.fetched_us > HF_GW_KEYS_MAX_AGE_US) {
        if ((st = version_fetch(key, version, have ? &cached : NULL, &fresh)) != HF_STATUS_OK)
            return st;
        hf_gw_keys_cache_put(ckey, &fresh);
        cached = fresh;
    }
    if (cached.status != HF_STATUS_OK) return cached.status;
    *object = cached.object;
    if (state) *state = cached.state;
    if (version_uuid) memcpy(version_uuid, cached.version_uuid, 37);
    return HF_STATUS_OK;
}

HF_PLUGIN_EXPORT enum hf_status hf_keys_version(const struct hf_key_ref *key, CK_ULONG version,
                                                CK_OBJECT_HANDLE *object, CK_ULONG *state)
{
    return hf_keys_version_info(key, version, object, state, NULL);
}

/* ---- versions by UUID ------------------------------------------------------------------- */

/* The key and number of the version uuid names (any face of it: all share CKA_HF_VERSION_UUID),
 * and the link of link_type that reaches that key (HF_GetKeyLink), into out. */
static enum hf_status version_uuid_fetch(const char *link_type, const char *uuid,
                                         struct hf_gw_keys_entry *out)
{
    CK_FUNCTION_LIST_PTR f = hf_p11_functions();
    const HF_FUNCTION_LIST *v = hf_p11_vendor();
    CK_ATTRIBUTE tmpl[] = {{CKA_HF_VERSION_UUID, (void *)uuid, strlen(uuid)}};
    CK_OBJECT_HANDLE found[1];
    CK_SESSION_HANDLE s;
    CK_ULONG n = 0, len = sizeof(out->link_id);
    CK_RV rv;

    memset(out, 0, sizeof(*out));
    if (!f || !v || !hf_gw_p11_has_key_link()) return HF_STATUS_UNAVAILABLE;
    if (hf_gw_p11_lookup_session(&s) != CKR_OK) return HF_STATUS_UNAVAILABLE;
    out->fetched_us = hf_now_us();
    out->status = HF_STATUS_KEY_NOT_FOUND;
    rv = hf_gw_keys_find_all(f, s, tmpl, 1, found, 1, &n);
    if (rv != CKR_OK) {
        if (hf_gw_p11_rv_is_session_lost(rv)) hf_gw_p11_sessions_drop();
        return HF_STATUS_UNAVAILABLE;
    }
    if (n == 0) return HF_STATUS_OK;
    {
        CK_ATTRIBUTE attrs[] = {
            {CKA_HF_KEY_UUID, out->ref.uuid, sizeof(out->ref.uuid) - 1},
            {CKA_HF_VERSION, &out->version, sizeof(out->version)},
        };
        if (f->C_GetAttributeValue(s, found[0], attrs, 2) != CKR_OK) return HF_STATUS_UNAVAILABLE;
    }
    /* A link id too long for plugin.h's buffer is no link a cloud of the type could name. */
    rv = v->HF_GetKeyLink(s, out->ref.uuid, link_type, out->link_id, &len);
    if (rv == CKR_KEY_HANDLE_INVALID || rv == CKR_BUFFER_TOO_SMALL) return HF_STATUS_OK;
    if (rv != CKR_OK) return HF_STATUS_UNAVAILABLE;
    out->status = HF_STATUS_OK;
    return HF_STATUS_OK;
}

/* The version UUID's key and link are cached (a version never moves to another key; a link may
 * appear or go, which shows within HF_GW_KEYS_MAX_AGE_US); the key itself comes from
 * hf_keys_by_link, so its blocked flag is read on every call as there. */
HF_PLUGIN_EXPORT enum hf_status hf_keys_by_version_uuid(const char *link_type,
                                                        const char *version_uuid,
                                                        struct hf_key_ref *out, CK_ULONG *version,
                                                        char link_id[256])
{
    char ckey[80];
    struct hf_gw_keys_entry cached;
    enum hf_status st;

    if (!link_type || !version_uuid || !out || !version || !link_id) return HF_STATUS_INTERNAL;
    if (strlen(version_uuid) != 36 || strlen(link_type) > HF_LINK_TYPE_MAX_LEN)
        return HF_STATUS_KEY_NOT_FOUND;
    snprintf(ckey, sizeof(ckey), "U\x1f%s\x1f%s", link_type, version_uuid);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt > 0 || !hf_gw_keys_cache_get(ckey, &cached) ||
            hf_now_us() - cached.fetched_us > HF_GW_KEYS_MAX_AGE_US) {
            if ((st = version_uuid_fetch(link_type, version_uuid, &cached)) != HF_STATUS_OK)
                return st;
            hf_gw_keys_cache_put(ckey, &cached);
        }
        if (cached.status != HF_STATUS_OK) return cached.status;
        st = hf_keys_by_link(link_type, cached.link_id, out);
        if (st != HF_STATUS_OK && st != HF_STATUS_KEY_NOT_FOUND) return st;
        /* The link went, or now names another key: look again, once, before saying so. */
        if (st == HF_STATUS_OK && strcmp(out->uuid, cached.ref.uuid) == 0) {
            *version = cached.version;
            memcpy(link_id, cached.link_id, sizeof(cached.link_id));
            return HF_STATUS_OK;
        }
    }
    return HF_STATUS_KEY_NOT_FOUND;
}
