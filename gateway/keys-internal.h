/* What keys.c and keys-versions.c share: the cache's entry, its get and put, and one
 * C_FindObjects. Nothing else includes it. */
#ifndef HF_GATEWAY_KEYS_INTERNAL_H
#define HF_GATEWAY_KEYS_INTERNAL_H

#include "gateway/plugin.h"

struct hf_gw_keys_entry {
    struct hf_gw_keys_entry *next;
    /* "L\x1ftype\x1fid" (a link: ref), "V\x1fuuid\x1fversion" (a version: object, state,
     * version_uuid), "U\x1ftype\x1fversion uuid" (a version by UUID: ref.uuid, version,
     * link_id) or "W\x1fkey uuid\x1fversion uuid" (a version of a key by UUID: found) */
    char *key;
    uint64_t fetched_us;
    enum hf_status status; /* what the lookup answered: OK or KEY_NOT_FOUND */
    struct hf_key_ref ref;
    char source[HF_POOL_NAME_BUF]; /* a link's key: CKA_HF_SOURCE, "" when the module has none */
    CK_OBJECT_HANDLE object;
    CK_ULONG state, version;
    char version_uuid[37];
    char link_id[256];
    struct hf_key_version found;
};

/* A copy of the entry for key, if cached (next and key cleared). */
bool hf_gw_keys_cache_get(const char *key, struct hf_gw_keys_entry *out);
/* Stores a copy of value under key (past HF_GW_KEYS_MAX_ENTRIES: not stored). */
void hf_gw_keys_cache_put(const char *key, const struct hf_gw_keys_entry *value);
/* C_FindObjectsInit, one C_FindObjects of at most max, C_FindObjectsFinal. */
CK_RV hf_gw_keys_find_all(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, CK_ATTRIBUTE *tmpl,
                          CK_ULONG n, CK_OBJECT_HANDLE *found, CK_ULONG max, CK_ULONG *nfound);

#endif /* HF_GATEWAY_KEYS_INTERNAL_H */
