/* plugin.h's hf_keys_version_by_uuid and hf_keys_versions: a key's versions as the APIs that
 * name them by UUID see them (OCI, SAP, DKE). Every face of a version (secret, or private and
 * public) carries the key's and the version's UUIDs, so one C_FindObjects finds them all. */
#include "hf-build.h"

#include "gateway/keys-internal.h"
#include "gateway/keys.h"
#include "gateway/p11.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIND_BATCH 64

/* What one object says of its version: number, state, created time, and which face it is. */
static bool object_read(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE o,
                        struct hf_key_version *v, CK_OBJECT_CLASS *cls)
{
    CK_ULONG created = 0;
    CK_ATTRIBUTE a[] = {
        {CKA_CLASS, cls, sizeof(*cls)},
        {CKA_HF_VERSION, &v->version, sizeof(v->version)},
        {CKA_HF_STATE, &v->state, sizeof(v->state)},
        {CKA_HF_CREATED, &created, sizeof(created)},
        {CKA_HF_VERSION_UUID, v->uuid, sizeof(v->uuid) - 1},
    };

    memset(v->uuid, 0, sizeof(v->uuid));
    if (f->C_GetAttributeValue(s, o, a, 5) != CKR_OK || a[4].ulValueLen != 36) return false;
    v->created = (int64_t)created;
    return true;
}

/* Folds object o (already read into seen) into v: the secret or private face is the object,
 * the public one pub. */
static void face_add(struct hf_key_version *v, const struct hf_key_version *seen,
                     CK_OBJECT_CLASS cls, CK_OBJECT_HANDLE o)
{
    CK_OBJECT_HANDLE object = v->object, pub = v->pub;

    if (v->version == 0 || cls != CKO_PUBLIC_KEY) {
        *v = *seen;
        v->object = object;
        v->pub = pub;
    }
    if (cls == CKO_PUBLIC_KEY)
        v->pub = o;
    else if (cls == CKO_SECRET_KEY || cls == CKO_PRIVATE_KEY)
        v->object = o;
}

static enum hf_status version_by_uuid_fetch(const struct hf_key_ref *key, const char *uuid,
                                            struct hf_gw_keys_entry *out)
{
    CK_FUNCTION_LIST_PTR f = hf_p11_functions();
    CK_ATTRIBUTE tmpl[] = {
        {CKA_HF_KEY_UUID, (void *)key->uuid, strlen(key->uuid)},
        {CKA_HF_VERSION_UUID, (void *)uuid, strlen(uuid)},
    };
    CK_OBJECT_HANDLE found[4];
    CK_SESSION_HANDLE s;
    CK_ULONG n = 0;
    CK_RV rv;

    memset(out, 0, sizeof(*out));
    out->found.object = out->found.pub = CK_INVALID_HANDLE;
    if (!f || hf_gw_p11_lookup_session(&s) != CKR_OK) return HF_STATUS_UNAVAILABLE;
    out->fetched_us = hf_now_us();
    rv = hf_gw_keys_find_all(f, s, tmpl, 2, found, 4, &n);
    if (rv != CKR_OK) {
        if (hf_gw_p11_rv_is_session_lost(rv)) hf_gw_p11_sessions_drop();
        return HF_STATUS_UNAVAILABLE;
    }
    for (CK_ULONG i = 0; i < n; i++) {
        struct hf_key_version seen;
        CK_OBJECT_CLASS cls;
        if (!object_read(f, s, found[i], &seen, &cls)) return HF_STATUS_UNAVAILABLE;
        face_add(&out->found, &seen, cls, found[i]);
    }
    /* No secret or private face: destroyed, or not this login's to see. */
    out->status = out->found.object != CK_INVALID_HANDLE && out->found.state != HF_STATE_DESTROYED
                      ? HF_STATUS_OK
                      : HF_STATUS_KEY_NOT_FOUND;
    return HF_STATUS_OK;
}

HF_PLUGIN_EXPORT enum hf_status hf_keys_version_by_uuid(const struct hf_key_ref *key,
                                                        const char *version_uuid,
                                                        struct hf_key_version *out)
{
    char ckey[80];
    struct hf_gw_keys_entry cached;
    enum hf_status st;

    if (!key || !version_uuid || !out || key->uuid[0] == '\0') return HF_STATUS_INTERNAL;
    if (strlen(version_uuid) != 36) return HF_STATUS_KEY_NOT_FOUND;
    snprintf(ckey, sizeof(ckey), "W\x1f%.36s\x1f%.36s", key->uuid, version_uuid);
    if (!hf_gw_keys_cache_get(ckey, &cached) ||
        hf_now_us() - cached.fetched_us > HF_GW_KEYS_MAX_AGE_US) {
        if ((st = version_by_uuid_fetch(key, version_uuid, &cached)) != HF_STATUS_OK) return st;
        hf_gw_keys_cache_put(ckey, &cached);
    }
    if (cached.status != HF_STATUS_OK) return cached.status;
    *out = cached.found;
    return HF_STATUS_OK;
}

/* ---- the listing ------------------------------------------------------------------------- */

static struct hf_key_version *version_slot(struct hf_key_version **list, size_t *n, size_t *cap,
                                           CK_ULONG number)
{
    struct hf_key_version *grown;

    for (size_t i = 0; i < *n; i++)
        if ((*list)[i].version == number) return &(*list)[i];
    if (*n == *cap) {
        size_t want = *cap ? *cap * 2 : 8;
        if (!(grown = realloc(*list, want * sizeof(**list)))) return NULL;
        *list = grown;
        *cap = want;
    }
    memset(&(*list)[*n], 0, sizeof(**list));
    (*list)[*n].object = (*list)[*n].pub = CK_INVALID_HANDLE;
    return &(*list)[(*n)++];
}

static int by_number(const void *a, const void *b)
{
    CK_ULONG x = ((const struct hf_key_version *)a)->version;
    CK_ULONG y = ((const struct hf_key_version *)b)->version;

    return x < y ? -1 : x > y;
}

/* Drops the versions with no secret or private face, or destroyed. */
static size_t live_only(struct hf_key_version *list, size_t n)
{
    size_t kept = 0;

    for (size_t i = 0; i < n; i++)
        if (list[i].object != CK_INVALID_HANDLE && list[i].state != HF_STATE_DESTROYED)
            list[kept++] = list[i];
    return kept;
}

static enum hf_status versions_find(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                                    const struct hf_key_ref *key, struct hf_key_version **list,
                                    size_t *n, size_t *cap)
{
    CK_ATTRIBUTE tmpl[] = {{CKA_HF_KEY_UUID, (void *)key->uuid, strlen(key->uuid)}};
    CK_OBJECT_HANDLE found[FIND_BATCH];
    enum hf_status st = HF_STATUS_OK;
    CK_ULONG got = 0;
    CK_RV rv;

    if ((rv = f->C_FindObjectsInit(s, tmpl, 1)) != CKR_OK) return HF_STATUS_UNAVAILABLE;
    do {
        if ((rv = f->C_FindObjects(s, found, FIND_BATCH, &got)) != CKR_OK) {
            st = HF_STATUS_UNAVAILABLE;
            break;
        }
        for (CK_ULONG i = 0; i < got && st == HF_STATUS_OK; i++) {
            struct hf_key_version seen, *slot;
            CK_OBJECT_CLASS cls;
            if (!object_read(f, s, found[i], &seen, &cls))
                st = HF_STATUS_UNAVAILABLE;
            else if (!(slot = version_slot(list, n, cap, seen.version)))
                st = HF_STATUS_INTERNAL;
            else
                face_add(slot, &seen, cls, found[i]);
        }
    } while (st == HF_STATUS_OK && got == FIND_BATCH);
    f->C_FindObjectsFinal(s);
    if (rv != CKR_OK && hf_gw_p11_rv_is_session_lost(rv)) hf_gw_p11_sessions_drop();
    return st;
}

HF_PLUGIN_EXPORT enum hf_status hf_keys_versions(const struct hf_key_ref *key,
                                                 struct hf_key_version **out, size_t *n)
{
    CK_FUNCTION_LIST_PTR f = hf_p11_functions();
    struct hf_key_version *list = NULL;
    size_t count = 0, cap = 0;
    CK_SESSION_HANDLE s;
    enum hf_status st;

    if (!key || !out || !n || key->uuid[0] == '\0') return HF_STATUS_INTERNAL;
    *out = NULL;
    *n = 0;
    if (!f || hf_gw_p11_lookup_session(&s) != CKR_OK) return HF_STATUS_UNAVAILABLE;
    if ((st = versions_find(f, s, key, &list, &count, &cap)) != HF_STATUS_OK) {
        free(list);
        return st;
    }
    count = live_only(list, count);
    if (count == 0) {
        free(list);
        return HF_STATUS_OK;
    }
    qsort(list, count, sizeof(*list), by_number);
    *out = list;
    *n = count;
    return HF_STATUS_OK;
}
