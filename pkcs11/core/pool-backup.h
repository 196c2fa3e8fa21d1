/* An export pool's backup KEK at work inside a member (issue 14; source-pool.h has the modes).
 * The backup KEK is a per-pool AES-256 key that Holdfast keeps in the store wrapped under the
 * root KEK (core-pool-backup.c); its clear copy lives in hf_secmem memory only while it is used.
 * For each use it goes into the member as a session object (CKA_TOKEN false: gone with the
 * session at the latest, and destroyed at once after the call; CKA_EXTRACTABLE false, CKA_SENSITIVE
 * true: the token never gives it back), wraps or unwraps with CKM_AES_KEY_WRAP_PAD there, and is
 * destroyed. So the keys it protects never leave an HSM in clear: a version's key is wrapped under
 * it inside a member, and a blob unwrapped under it inside a member. What goes in is not the KEK
 * itself but a key derived from it for the blob's label (pool-backup.c), so a blob restores only
 * under the label it was made for. */
#ifndef HF_POOL_BACKUP_H
#define HF_POOL_BACKUP_H

#include <stdbool.h>
#include <stddef.h>

#include "pool-clone.h"
#include "pool.h"

#define HF_POOL_BACKUP_KEK_LEN 32

/* The key of kind obj labelled label wrapped under kek on the first healthy member that holds
 * it (tried in order): an AES key's value, or an RSA private key's PKCS#8 encoding. *blob
 * malloc'd (not secret: ciphertext). CKR_KEY_HANDLE_INVALID when none holds it. */
CK_RV hf_pool_backup_wrap(struct hf_pool *pool, const unsigned char kek[HF_POOL_BACKUP_KEK_LEN],
                          const char *label, enum hf_pool_obj obj, unsigned char **blob,
                          size_t *blob_len);

/* blob unwrapped under kek into hsm as the token key of kind obj labelled label
 * (hf_pool_key_template). *made false and CKR_OK when the token holds one already. A blob that
 * does not unwrap under kek is CKR_WRAPPED_KEY_INVALID. */
CK_RV hf_hsm_backup_restore(struct hf_hsm *hsm, const unsigned char kek[HF_POOL_BACKUP_KEK_LEN],
                            const char *label, enum hf_pool_obj obj, const unsigned char *blob,
                            size_t blob_len, bool *made);

#endif
