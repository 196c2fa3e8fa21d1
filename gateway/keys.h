/* The key cache behind plugin.h's hf_keys_by_link and hf_keys_version: the object handles of a
 * key's versions, found once and revalidated when older than one second, so no request pays for a
 * C_FindObjects and a rotation shows within a second. A link's key and blocked flag are not kept
 * here: each call reads them from the module's link cache (HF_LINK_CACHE_MS), so the kill switch
 * and a moved link show within that.
 * Read-mostly: sharded reader-writer locks, never held across a PKCS#11 call. */
#ifndef HF_GATEWAY_KEYS_H
#define HF_GATEWAY_KEYS_H

#include <stdint.h>

#include "gateway/plugin.h"

#define HF_GW_KEYS_MAX_AGE_US 1000000u
#define HF_GW_KEYS_MAX_ENTRIES 65536u /* past this, lookups are answered but not cached */

/* hf_keys_decrypt_version's rule (key-check.c), pure for its unit test: what may open what
 * version `version` of key sealed, given what hf_keys_version_info found for that version
 * (found, and the version's state when found is HF_STATUS_OK). */
enum hf_status hf_gw_key_decrypt_judge(const struct hf_key_ref *key, CK_ULONG version,
                                       enum hf_status found, CK_ULONG state);

/* Forgets every entry (SIGHUP). */
void hf_gw_keys_flush(void);
/* Frees everything at exit. */
void hf_gw_keys_shutdown(void);

#endif /* HF_GATEWAY_KEYS_H */
