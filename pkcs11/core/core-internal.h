/* The body of struct hf_core, shared by core.c (lifecycle: init, open, close) and core-key.c
 * (key management). Included by those two files only. */
#ifndef HF_CORE_INTERNAL_H
#define HF_CORE_INTERNAL_H

#include <limits.h>
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
    struct hf_hsm *hsm;     /* a root of one token: that token; NULL for a pool */
    struct hf_root *root;   /* borrows hsm */
    struct hf_local *local; /* borrows root */
    struct hf_audit *audit;
    struct hf_policy *policy; /* borrows root; its hooks are installed in store */
    /* The pools opened on first use. pools_lock guards the list, held for a lookup or an
     * insert only, never across an open (hf_core_pool_open calls the members). */
    pthread_mutex_t pools_lock;
    pthread_cond_t pools_cond; /* an open finished */
    struct core_pool *pools;
};

/* core.c: cfg->hsm_pin, or the PIN read now (*owned: to be freed with core_secret_free) when
 * the config was loaded before init wrote the pin file. */
CK_RV core_hsm_pin(const struct hf_config *cfg, const char **pin, char **owned);
void core_secret_free(char *s);
/* core-root.c. core_root_open: the root of cfg, [hsm] alone (*hsm its token) or a pool with the
 * [hsm.NAME] members (*hsm NULL), holding its KEK and the audit chain's keys; on failure *hsm and
 * *root may be set, for the caller to close (root first). core_root_init_check: init refuses to
 * make on first ([hsm]'s token) a key another member already holds (a second, different one).
 * core_root_pools_append: the root's members appended to *out as the pool HF_CORE_ROOT_POOL
 * (hf_core_pools_status). core_root_lock_path: STATE_DIR/hsm.lock, or hsm.MEMBER.lock. */
CK_RV core_root_open(const struct hf_config *cfg, const char *pin, struct hf_store *store,
                     struct hf_hsm **hsm, struct hf_root **root);
/* init: [hsm]'s key check values (root.h) stored as the store's reference unless it has one;
 * CKR_KEY_CHANGED (logged) when it has another. core_root_open, for a pool: every member checked
 * against the store's reference (store may be NULL: none); a store without one gets [hsm]'s when
 * [hsm] passed (the first member to pass being the reference meanwhile, as before). */
CK_RV core_root_reference_init(const struct hf_config *cfg, struct hf_store *store);
CK_RV core_root_init_check(const struct hf_config *cfg, const char *pin, struct hf_hsm *first);
CK_RV core_root_pools_append(struct hf_core *core, struct hf_core_pool_live **out, size_t *n);
CK_RV core_root_lock_path(const struct hf_config *cfg, const char *member, char buf[PATH_MAX],
                          const char **path);
CK_RV core_audit_keys_ensure(struct hf_root *root);
/* The policy MAC key lives beside the root KEK it goes with, under a label of its own. */
CK_RV core_policy_label(const struct hf_config *cfg, char *buf, size_t len);

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
 * key wrapped under the pool's backup KEK; for an RSA key v->public_der too.
 * core_pool_repl_establish puts the replication key on every member in service (at open);
 * core_pool_resync copies to member every live version of the pool it lacks and removes the
 * destroyed ones it holds (the probe thread's on_member_back). */
CK_RV core_pool_key_generate(struct hf_core *core, const char *name, enum hf_alg alg, unsigned bits,
                             struct hf_key_version *v);
void core_pool_repl_establish(struct hf_core *core, const char *name, struct hf_pool *pool);
/* How long a claim on a pool's replication key may stand unchanged before a waiting process
 * takes it over (core-pool-sync.c): far above a live claimant's few HSM calls, so only a dead
 * one is taken over (a slow one loses nothing but its own key). Tests lower it. */
#define HF_CORE_REPL_TAKEOVER_MS 5000
extern unsigned hf_core_repl_takeover_ms;
void core_pool_resync(struct hf_core *core, const char *name, struct hf_pool *pool, size_t member);
/* core-pool-backup.c, export pools (pool-backup.h). core_pool_backup_kek: the pool's backup KEK
 * in clear, made and stored first when create and the store has none (*kek: hf_secmem, free with
 * core_pool_backup_kek_free). core_pool_backup_establish stores the replication key's blob
 * unless the store has it (at open). core_pool_backup_version wraps the key of kind obj labelled
 * uuid (*blob malloc'd). core_pool_backup_restore re-seeds hsm, a member's token opened alone: the
 * replication key and every live version of the pool from their blobs (objects there already
 * left as they are, counted in *present). */
CK_RV core_pool_backup_kek(struct hf_core *core, const char *name, bool create,
                           unsigned char **kek);
void core_pool_backup_kek_free(unsigned char *kek);
void core_pool_backup_establish(struct hf_core *core, const char *name, struct hf_pool *pool);
CK_RV core_pool_backup_version(struct hf_core *core, const char *name, struct hf_pool *pool,
                               const char *uuid, enum hf_pool_obj obj, unsigned char **blob,
                               size_t *len);
CK_RV core_pool_backup_restore(struct hf_core *core, const char *name, struct hf_hsm *hsm,
                               size_t *restored, size_t *present);
/* Destroys the member's object of each pool version in vs, best effort (failures logged). */
void core_pool_versions_destroy(struct hf_core *core, const struct hf_key_version *vs, size_t n);

#endif
