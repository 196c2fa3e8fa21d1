/* The key cache behind plugin.h's hf_keys_by_link and hf_keys_version: the object handles of a
 * key's versions, found once and revalidated when older than one second, so no request pays for a
 * C_FindObjects and a rotation shows within a second. A link's key and blocked flag are not kept
 * here: each call reads them from the module's link cache (HF_LINK_CACHE_MS), so the kill switch
 * and a moved link show within that.
 * Read-mostly: sharded reader-writer locks, never held across a PKCS#11 call. */
#ifndef HF_GATEWAY_KEYS_H
#define HF_GATEWAY_KEYS_H

#include <stdint.h>

#define HF_GW_KEYS_MAX_AGE_US 1000000u
#define HF_GW_KEYS_MAX_ENTRIES 65536u /* past this, lookups are answered but not cached */

/* Forgets every entry (SIGHUP). */
void hf_gw_keys_flush(void);
/* Frees everything at exit. */
void hf_gw_keys_shutdown(void);

#endif /* HF_GATEWAY_KEYS_H */
