/* The backend seam of the metadata store: each backend fills one struct hf_store_ops; store.c
 * checks arguments and dispatches. Included by store*.c only. */
#ifndef HF_STORE_INTERNAL_H
#define HF_STORE_INTERNAL_H

#include <stdatomic.h>

#include "store.h"

/* Migration steps of the schema: both backends number them alike (hf_store_schema_version). */
#define HF_STORE_SCHEMA_VERSION 6

/* The PostgreSQL channel every write NOTIFYs and every handle's listener LISTENs on (store-pg.c);
 * store-migrate.c's copy announces itself there too, so nodes already running drop their caches. */
#define HF_STORE_PG_CHANNEL "holdfast_changes"

/* clang-format 14 breaks "CK_RV (*name)(...)" members over two lines: hand-formatted. */
/* clang-format off */
struct hf_store_ops {
    const char *name;
    void (*close)(struct hf_store *store);
    CK_RV (*schema_version)(struct hf_store *store, int *version);
    CK_RV (*data_version)(struct hf_store *store, uint64_t *version);
    CK_RV (*key_insert)(struct hf_store *store, const struct hf_key *key,
                        struct hf_key_version *v1);
    CK_RV (*key_get)(struct hf_store *store, const char *ref, struct hf_key *out);
    CK_RV (*key_list)(struct hf_store *store, struct hf_key **keys, size_t *n);
    /* old_mac: the MAC the row must still have (NULL: none) for the write to happen. */
    CK_RV (*key_update)(struct hf_store *store, const struct hf_key *key,
                        const unsigned char *old_mac);
    /* mac: the destroyed key row's new MAC (NULL: none); versions lose theirs with their
     * material. */
    CK_RV (*key_destroy)(struct hf_store *store, const char *uuid, int64_t when,
                         const unsigned char *mac, const unsigned char *old_mac);
    /* key_mac: the key row's MAC once current_version is v->version. */
    CK_RV (*version_insert)(struct hf_store *store, struct hf_key_version *v, int64_t when,
                            const unsigned char *key_mac, const unsigned char *old_key_mac);
    /* v: id, state and the new MAC (has_mac false: none); old_mac as for key_update. */
    CK_RV (*version_set_state)(struct hf_store *store, const struct hf_key_version *v,
                               const unsigned char *old_mac);
    CK_RV (*version_get)(struct hf_store *store, int64_t id, struct hf_key_version *out);
    CK_RV (*version_find)(struct hf_store *store, const char *key_uuid, unsigned version,
                          struct hf_key_version *out);
    CK_RV (*version_find_by_uuid)(struct hf_store *store, const char *version_uuid,
                                  struct hf_key_version *out);
    CK_RV (*version_list)(struct hf_store *store, const char *key_uuid,
                          struct hf_key_version **versions, size_t *n);
    CK_RV (*version_each)(struct hf_store *store, hf_store_version_fn fn, void *arg);
    CK_RV (*link_insert)(struct hf_store *store, struct hf_link *link);
    CK_RV (*link_get)(struct hf_store *store, const char *type, const char *ext_id,
                      struct hf_link *out);
    CK_RV (*link_set_blocked)(struct hf_store *store, const char *type, const char *ext_id,
                              bool blocked, int64_t when, const unsigned char *mac,
                              const unsigned char *old_mac);
    CK_RV (*link_delete)(struct hf_store *store, const char *type, const char *ext_id);
    CK_RV (*link_list)(struct hf_store *store, const char *key_uuid, struct hf_link **links,
                       size_t *n);
    CK_RV (*link_type_add)(struct hf_store *store, const char *name, int64_t when,
                           bool *added);
    CK_RV (*link_type_get)(struct hf_store *store, const char *name);
    CK_RV (*link_type_list)(struct hf_store *store, char ***names, size_t *n);
    CK_RV (*meta_get)(struct hf_store *store, const char *name, char **value);
    CK_RV (*meta_set)(struct hf_store *store, const char *name, const char *value);
    CK_RV (*meta_count_add)(struct hf_store *store, const char *name, uint64_t *count);
    CK_RV (*meta_swap)(struct hf_store *store, const char *name, const char *expect,
                       const char *value, bool *swapped);
    CK_RV (*policy_migrate)(struct hf_store *store, const struct hf_store_migration *m,
                            size_t *n);
    CK_RV (*object_insert)(struct hf_store *store, struct hf_store_object *obj);
    CK_RV (*object_get)(struct hf_store *store, int64_t id, struct hf_store_object *out);
    CK_RV (*object_update)(struct hf_store *store, const struct hf_store_object *obj);
    CK_RV (*object_delete)(struct hf_store *store, int64_t id);
    CK_RV (*object_list)(struct hf_store *store, struct hf_store_object **objs, size_t *n);
    CK_RV (*pool_insert)(struct hf_store *store, const struct hf_store_pool *pool);
    CK_RV (*pool_get)(struct hf_store *store, const char *name, struct hf_store_pool *out);
    CK_RV (*pool_list)(struct hf_store *store, struct hf_store_pool **pools, size_t *n);
    /* source: the key source that names the pool (refused while a live key has it). */
    CK_RV (*pool_delete)(struct hf_store *store, const char *name, const char *source);
    CK_RV (*pool_backup_get)(struct hf_store *store, const char *pool, const char *what,
                             unsigned char **blob, size_t *len);
    CK_RV (*pool_backup_add)(struct hf_store *store, const char *pool, const char *what,
                             const unsigned char *blob, size_t len);
};
/* clang-format on */

struct hf_link_cache;

/* Every backend's struct starts with this. */
struct hf_store {
    const struct hf_store_ops *ops;
    struct hf_link_cache *links;          /* owned; made and freed by store.c, not by the backend */
    const struct hf_store_policy *policy; /* borrowed; NULL: rows unMAC'd and unchecked */
    _Atomic uint64_t refused;             /* rows the policy refused on this handle */
    /* Link changes made through other handles that this one has heard of (the PostgreSQL
     * listener bumps it on each, and on each reconnect); a link answer cached under an older
     * value is stale. SQLite hears nothing: 0 for ever, and its cache relies on its age bound. */
    _Atomic uint64_t generation;
};

CK_RV hf_store_sqlite_open(const char *path, struct hf_store **out);
/* locator: a libpq URI (postgresql:// or postgres://) without a password. */
CK_RV hf_store_pg_open(const char *locator, struct hf_store **out);

#endif
