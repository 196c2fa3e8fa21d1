/* The policy MAC: each key, version and link row of the metadata store carries an HMAC-SHA-256,
 * computed in the HSM under a key that never leaves it, over the row's policy fields. Anyone who
 * can write the store but not use the HSM can then neither make a key exportable, widen its
 * usage, revive its state, point it at another version, nor unblock a link: the edited row fails
 * its MAC when it is loaded and is refused (CKR_HF_POLICY_INVALID, logged, audited as
 * "policy.check"). The material itself is bound to its row by the wrap (source-local.h).
 *
 * What each MAC covers (a canonical encoding: a domain tag, then every field length-prefixed):
 *   key:     uuid, name, alg, bits, usage, state, exportable, source, owner, current_version,
 *            labels (the module derives CKA_LOCAL from hf.imported)
 *   version: uuid, key uuid, version number, state, kek label, public key DER
 *   link:    type, ext_id, key uuid, blocked
 *   pool:    name, mode, and every member in order: name, module path, token label and serial,
 *            pin_file, pin_env, concurrency (store.h: a module path decides what code runs)
 * Not covered: created/updated times (descriptive), the row ids (the local cache checks what a
 * cached entry was loaded for), the wrapped blob (bound to its row by the wrap itself). A
 * destroyed version without material needs no MAC: there is nothing left in it to protect.
 *
 * Cost: the HSM is asked once per row content. A row that passed is remembered by a digest of
 * (encoding, MAC), so the module's cache reloads, the link cache's 500 ms refreshes and
 * C_FindObjects over unchanged rows make no HSM call; crypto operations never reach this file.
 *
 * Thread-safe. The root is borrowed and must outlive the policy. */
#ifndef HF_POLICY_H
#define HF_POLICY_H

#include <stdbool.h>

#include "audit.h"
#include "root.h"
#include "key.h"
#include "source-local.h"
#include "store.h"

struct hf_policy;

/* Opens the policy MAC key mac_label in root, creating it when the token has none: *created then
 * says the store's rows predate policy MACs and must be migrated (hf_policy_migrate) before the
 * policy is installed. An existing key means the store was migrated: a row without MAC is then
 * refused, so clearing a MAC in the store cannot get a row re-MAC'd. */
CK_RV hf_policy_open(struct hf_root *root, const char *mac_label, struct hf_policy **out,
                     bool *created);
void hf_policy_close(struct hf_policy *policy);
/* Where refusals are recorded (borrowed; NULL: logged only). */
void hf_policy_audit_set(struct hf_policy *policy, struct hf_audit *audit);

/* The store hooks (store.h) backed by this policy: live as long as it. */
const struct hf_store_policy *hf_policy_hooks(struct hf_policy *policy);

/* MACs every row of store that has none, rewrapping old material in the bound format; *n (may
 * be NULL) counts them. */
CK_RV hf_policy_migrate(struct hf_policy *policy, struct hf_store *store, struct hf_local *local,
                        size_t *n);

/* The MAC a row should carry. */
CK_RV hf_policy_key_mac(struct hf_policy *policy, const struct hf_key *key,
                        unsigned char mac[HF_POLICY_MAC_LEN]);
CK_RV hf_policy_version_mac(struct hf_policy *policy, const struct hf_key_version *v,
                            unsigned char mac[HF_POLICY_MAC_LEN]);
CK_RV hf_policy_link_mac(struct hf_policy *policy, const struct hf_link *link,
                         unsigned char mac[HF_POLICY_MAC_LEN]);
CK_RV hf_policy_pool_mac(struct hf_policy *policy, const struct hf_store_pool *pool,
                         unsigned char mac[HF_POLICY_MAC_LEN]);

#endif
