/* The body of struct hf_core, shared by core.c (lifecycle: init, open, close) and core-key.c
 * (key management). Included by those two files only. */
#ifndef HF_CORE_INTERNAL_H
#define HF_CORE_INTERNAL_H

#include <pthread.h>

#include "core.h"
#include "policy.h"
#include "source-pool.h"

/* A pool this core has opened (core-pool.c), kept until hf_core_close. */
struct core_pool {
    char *name;
    struct hf_pool *pool;  /* NULL while opening is true, or after a failed open */
    bool opening;          /* one thread is opening it; others wait on pools_cond */
    CK_RV failed_rv;       /* pool NULL, not opening: the last open's failure, */
    uint64_t failed_at_us; /* answered again until CORE_POOL_REOPEN_US after it */
    struct core_pool *next;
};

struct hf_core {
    const struct hf_config *cfg; /* borrowed */
    struct hf_store *store;
    struct hf_hsm *hsm;
    struct hf_local *local; /* borrows hsm */
    struct hf_audit *audit;
    struct hf_policy *policy; /* borrows hsm; its hooks are installed in store */
    /* The pools opened on first use. pools_lock guards the list, held for a lookup or an
     * insert only, never across an open (hf_core_pool_open calls the members). */
    pthread_mutex_t pools_lock;
    pthread_cond_t pools_cond; /* an open finished */
    struct core_pool *pools;
};

/* core-pool.c: the pool named name, opened now unless it is already (borrowed: valid until
 * hf_core_close); core_pools_close closes them all. */
CK_RV core_pool_use(struct hf_core *core, const char *name, struct hf_pool **out);
void core_pools_close(struct hf_core *core);
/* The pool and member index a pool version lives on (its kek_label "pool:NAME/MEMBER"):
 * CKR_KEY_HANDLE_INVALID when the label names no member of the pool. */
CK_RV core_pool_version(struct hf_core *core, const struct hf_key_version *v, struct hf_pool **pool,
                        size_t *member);
/* core-pool-sync.c, clone and export pools (source-pool.h). core_pool_key_generate makes the key
 * of version v, labelled v->uuid, in pool name as the pool's mode says, and sets v->kek_label
 * ("pool:NAME/MEMBER" in plain mode, "pool:NAME" otherwise) and, in export mode, v->wrapped: the
 * key wrapped under the pool's backup KEK; for an RSA key (plain mode only,
 * CKR_TEMPLATE_INCONSISTENT otherwise) v->public_der too.
 * core_pool_repl_establish puts the replication key on every member in service (at open);
 * core_pool_resync copies to member every live version of the pool it lacks and removes the
 * destroyed ones it holds (the probe thread's on_member_back). */
CK_RV core_pool_key_generate(struct hf_core *core, const char *name, enum hf_alg alg, unsigned bits,
                             struct hf_key_version *v);
void core_pool_repl_establish(struct hf_core *core, const char *name, struct hf_pool *pool);
void core_pool_resync(struct hf_core *core, const char *name, struct hf_pool *pool, size_t member);
/* core-pool-backup.c, export pools (pool-backup.h). core_pool_backup_kek: the pool's backup KEK
 * in clear, made and stored first when create and the store has none (*kek: hf_secmem, free with
 * core_pool_backup_kek_free). core_pool_backup_establish stores the replication key's blob
 * unless the store has it (at open). core_pool_backup_version wraps the key labelled uuid (*blob
 * malloc'd). core_pool_backup_restore re-seeds hsm, a member's token opened alone: the
 * replication key and every live version of the pool from their blobs (objects there already
 * left as they are, counted in *present). */
CK_RV core_pool_backup_kek(struct hf_core *core, const char *name, bool create,
                           unsigned char **kek);
void core_pool_backup_kek_free(unsigned char *kek);
void core_pool_backup_establish(struct hf_core *core, const char *name, struct hf_pool *pool);
CK_RV core_pool_backup_version(struct hf_core *core, const char *name, struct hf_pool *pool,
                               const char *uuid, unsigned char **blob, size_t *len);
CK_RV core_pool_backup_restore(struct hf_core *core, const char *name, struct hf_hsm *hsm,
                               size_t *restored, size_t *present);
/* Destroys the member's object of each pool version in vs, best effort (failures logged). */
void core_pool_versions_destroy(struct hf_core *core, const struct hf_key_version *vs, size_t n);

#endif
