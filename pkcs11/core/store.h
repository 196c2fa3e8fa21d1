/* The metadata store: keys, versions with their wrapped material, labels, links and token
 * metadata, behind one interface with one schema. SQLite (store-sqlite.c) is the embedded
 * backend; PostgreSQL (store-pg.c, on libpq) is the cluster's: every node on one database, each
 * node's commits announced to the others (NOTIFY), both behind struct hf_store_ops
 * (store-internal.h) with the same tables and migration numbers.
 *
 * Every function that changes something is one transaction: it happens whole or not at all,
 * also when the process is killed half-way. Functions are safe to call from several threads
 * (the store serialises them, or gives each its own pooled connection); none is on the crypto
 * hot path, which works from caches. The conditional writes (a rotation from version N, a write
 * over the MAC the caller read) hold across processes and nodes.
 *
 * Results: CKR_OK; CKR_KEY_HANDLE_INVALID when the key, version or link does not exist;
 * CKR_ATTRIBUTE_VALUE_INVALID for a duplicate name or link, or a key or link row changed since
 * the caller read it; CKR_HF_POLICY_INVALID for a row that fails its policy MAC (see policy MACs
 * below); CKR_DEVICE_ERROR when the database fails or cannot be reached (the reason is logged;
 * while a PostgreSQL server is unreachable every call answers it at once, and the handle
 * reconnects by itself); CKR_HOST_MEMORY. Out-structs are filled only on CKR_OK and are owned by
 * the caller (hf_key_clear and friends). */
#ifndef HF_STORE_H
#define HF_STORE_H

#include <stdint.h>

#include "key.h"

struct hf_store;

/* Opens (creating if needed, mode 0600) and migrates to the current schema. Locator: a path,
 * "sqlite:PATH", or a libpq URI "postgresql://USER@HOST:PORT/DB?..." ("postgres://" too). A URI
 * that carries a password is refused (CKR_ARGUMENTS_BAD): libpq takes it from PGPASSWORD, the
 * passfile (PGPASSFILE, passfile=, ~/.pgpass). A server that cannot be reached is
 * CKR_DEVICE_ERROR. */
CK_RV hf_store_open(const char *locator, struct hf_store **out);
/* The locator grammar, for callers that must tell the kinds apart before opening: a PostgreSQL
 * server ("postgresql://..." or "postgres://..."), and the file an SQLite locator names (a path,
 * or "sqlite:PATH"; NULL for any "scheme://" locator or an empty path). */
bool hf_store_locator_is_pg(const char *locator);
const char *hf_store_locator_file(const char *locator);
void hf_store_close(struct hf_store *store);

/* The schema version this build writes, and the one the open database has. */
int hf_store_schema_version_current(void);
CK_RV hf_store_schema_version(struct hf_store *store, int *version);

/* A number that changes whenever any connection (this process or another) commits a change:
 * the module's caches revalidate when it moves. Cheap (no disk read on SQLite; no query on
 * PostgreSQL, where another node's commit moves it once its NOTIFY arrives, milliseconds). */
CK_RV hf_store_data_version(struct hf_store *store, uint64_t *version);

/* Keys. key->uuid and v1->uuid must be set; v1->id, v1->key_uuid and v1->version (1) are filled
 * in, and so is v1->state when 0 (active). */
CK_RV hf_store_key_insert(struct hf_store *store, const struct hf_key *key,
                          struct hf_key_version *v1);
/* ref: a UUID or a name. */
CK_RV hf_store_key_get(struct hf_store *store, const char *ref, struct hf_key *out);
/* All keys, sorted by name. *keys is an array of *n (free each with hf_key_clear, then free). */
CK_RV hf_store_key_list(struct hf_store *store, struct hf_key **keys, size_t *n);
/* Writes name, state, usage, owner, exportable, labels and updated of key->uuid. key must be a
 * row read from this store (then changed): its mac says which row it was (see policy MACs). */
CK_RV hf_store_key_update(struct hf_store *store, const struct hf_key *key);
/* Marks the key and all its versions destroyed and erases their wrapped material. */
CK_RV hf_store_key_destroy(struct hf_store *store, const char *uuid, int64_t when);

/* Versions. Rotation: inserts v (v->version must be current_version + 1, else
 * CKR_ATTRIBUTE_VALUE_INVALID: a concurrent rotation won; also when the key was destroyed
 * meanwhile) and bumps the key's current_version and updated, in one transaction. v->id is
 * filled in, and v->state when 0 (active). */
CK_RV hf_store_version_insert(struct hf_store *store, struct hf_key_version *v, int64_t when);
CK_RV hf_store_version_get(struct hf_store *store, int64_t id, struct hf_key_version *out);
/* version 0 means the key's current version. */
CK_RV hf_store_version_find(struct hf_store *store, const char *key_uuid, unsigned version,
                            struct hf_key_version *out);
CK_RV hf_store_version_find_by_uuid(struct hf_store *store, const char *version_uuid,
                                    struct hf_key_version *out);
/* Versions of one key, oldest first. */
CK_RV hf_store_version_list(struct hf_store *store, const char *key_uuid,
                            struct hf_key_version **versions, size_t *n);

/* Writes v->state of version v->id, re-MAC'd; v must be a row read from this store (its mac
 * says which row it was: a row changed meanwhile is CKR_ATTRIBUTE_VALUE_INVALID). Destroyed
 * erases the wrapped material, and the MAC with it (a version without material needs none). */
CK_RV hf_store_version_set_state(struct hf_store *store, const struct hf_key_version *v);

/* Calls fn for every version of every key (destroyed ones too), in id order, stopping early
 * when fn returns something other than CKR_OK (that value is returned). The structs are only
 * valid during the call. */
typedef CK_RV (*hf_store_version_fn)(const struct hf_key *key, const struct hf_key_version *v,
                                     void *arg);
CK_RV hf_store_version_each(struct hf_store *store, hf_store_version_fn fn, void *arg);

/* Links. link->id is filled in. */
CK_RV hf_store_link_insert(struct hf_store *store, struct hf_link *link);
CK_RV hf_store_link_get(struct hf_store *store, const char *type, const char *ext_id,
                        struct hf_link *out);
CK_RV hf_store_link_set_blocked(struct hf_store *store, const char *type, const char *ext_id,
                                bool blocked, int64_t when);
CK_RV hf_store_link_delete(struct hf_store *store, const char *type, const char *ext_id);
/* key_uuid NULL: all links. Sorted by type, then ext_id. */
CK_RV hf_store_link_list(struct hf_store *store, const char *key_uuid, struct hf_link **links,
                         size_t *n);

/* Link types: the names a link's type may have (a cloud API: "aws-xks", "gcp-ekm", ...),
 * seeded with the six APIs of specs/ and extended by holdfastd (each plugin's) and the CLI.
 * A name is [a-z0-9-]{1,HF_LINK_TYPE_MAX} (CKR_ATTRIBUTE_VALUE_INVALID otherwise). add is
 * idempotent: *added (may be NULL) says whether the name is new. get: CKR_OK when registered,
 * CKR_KEY_HANDLE_INVALID when not. list: sorted; free each, then the array. */
#define HF_LINK_TYPE_MAX HF_LINK_TYPE_MAX_LEN
bool hf_link_type_is_valid(const char *name);
CK_RV hf_store_link_type_add(struct hf_store *store, const char *name, int64_t when, bool *added);
CK_RV hf_store_link_type_get(struct hf_store *store, const char *name);
CK_RV hf_store_link_type_list(struct hf_store *store, char ***names, size_t *n);

/* The key a link maps to and its blocked flag, for the request path (every gateway request names
 * a link): answered from a cache of this handle's, each answer (also "no such link":
 * CKR_KEY_HANDLE_INVALID) trusted for at most HF_LINK_CACHE_MS. So a change made through another
 * handle or process (the CLI blocking a link) takes effect within that time; one made through this
 * handle, at once; on PostgreSQL, one made anywhere as soon as its NOTIFY arrives (a few ms: the
 * store's generation moves, and every answer cached before is stale), the age bound staying as
 * the fallback. Bounded: HF_LINK_CACHE_SLOTS links, a newer one taking an older one's slot. */
#define HF_LINK_CACHE_MS 500
#define HF_LINK_CACHE_SLOTS 1024
CK_RV hf_store_link_state(struct hf_store *store, const char *type, const char *ext_id,
                          char key_uuid[HF_UUID_LEN + 1], bool *blocked);

struct hf_store_pool;

/* ---- policy MACs ----
 * The store is a database layer and knows no HSM; the core installs a policy (policy.h) whose
 * hooks MAC every key, version and link row this handle writes and check every one it reads, so
 * no reader of the handle (the module, the CLI, the link cache) can skip the check. A read whose
 * row fails is CKR_HF_POLICY_INVALID (the hook has logged and audited it); list and each calls
 * leave such rows out, so one edited key does not take the others down. Writes of key and link
 * rows are conditional on the MAC the caller read: a row changed meanwhile is
 * CKR_ATTRIBUTE_VALUE_INVALID, never overwritten with a MAC over stale fields. Without a policy
 * rows are written without MAC and read unchecked (store tests, tools without an HSM). */
struct hf_store_policy {
    void *ctx;
    /* Fill row->mac / has_mac for the row as it is about to be written. */
    CK_RV (*key_seal)(void *ctx, struct hf_key *key);
    CK_RV (*version_seal)(void *ctx, struct hf_key_version *v);
    CK_RV (*link_seal)(void *ctx, struct hf_link *link);
    /* CKR_OK when the row read carries its right MAC, else CKR_HF_POLICY_INVALID. */
    CK_RV (*key_check)(void *ctx, const struct hf_key *key);
    CK_RV (*version_check)(void *ctx, const struct hf_key_version *v);
    CK_RV (*link_check)(void *ctx, const struct hf_link *link);
    /* A pool row with its members, as one (hf_store_pool_*). */
    CK_RV (*pool_seal)(void *ctx, struct hf_store_pool *pool);
    CK_RV (*pool_check)(void *ctx, const struct hf_store_pool *pool);
};
/* policy is borrowed (NULL: none); set it once, before the handle is shared between threads. */
void hf_store_policy_set(struct hf_store *store, const struct hf_store_policy *policy);
/* How many rows the policy has refused on this handle so far (`holdfast store check` reports
 * them: the list calls leave them out). */
uint64_t hf_store_policy_refusals(struct hf_store *store);

/* The one-time migration of a store made before policy MACs: inside one write transaction, calls
 * the hook for every key, version and link row that has no MAC (a destroyed version without
 * material needs none) and writes back what it filled: the MAC, and for a version also its
 * rewrapped material. *n counts the rows changed. The hooks run with the store locked: they may
 * call the HSM but not the store. */
struct hf_store_migration {
    void *ctx;
    CK_RV (*key)(void *ctx, struct hf_key *key);
    CK_RV (*version)(void *ctx, struct hf_key_version *v);
    CK_RV (*link)(void *ctx, struct hf_link *link);
};
CK_RV hf_store_policy_migrate(struct hf_store *store, const struct hf_store_migration *m,
                              size_t *n);

/* Token metadata (PIN hashes, token serial, ...): small named text values. *value is malloc'd;
 * CKR_KEY_HANDLE_INVALID when absent. */
CK_RV hf_store_meta_get(struct hf_store *store, const char *name, char **value);
CK_RV hf_store_meta_set(struct hf_store *store, const char *name, const char *value);
/* Adds one to the counter name (0 when absent, or not a number), atomically across processes,
 * and gives the new count. hf_store_meta_set(name, "0") resets it. */
CK_RV hf_store_meta_count_add(struct hf_store *store, const char *name, uint64_t *count);
/* Compare-and-set in one statement, atomic across processes and nodes: expect NULL writes value
 * only when name is absent (insert if absent); value NULL deletes name only when it holds expect;
 * both set it to value only when it holds expect. *swapped says whether it happened (false, with
 * CKR_OK, when the row was not as expected: read it again). Claims and one-time values
 * (core-pool-sync.c's replication-key claim, core-root.c's root reference). */
CK_RV hf_store_meta_swap(struct hf_store *store, const char *name, const char *expect,
                         const char *value, bool *swapped);

/* ---- certificate and data objects ----
 * PKCS#11 CKO_CERTIFICATE and CKO_DATA token objects, kept beside the keys. They hold no key
 * material, so their rows carry no policy MAC: an edited row can change what a certificate
 * says, never what a key may do. cls is the CKO_ value; label and ckaid the caller's CKA_LABEL
 * and CKA_ID; value the CKA_VALUE; attrs the module's encoding of the object's other attributes
 * (opaque to the store). CKR_KEY_HANDLE_INVALID when the id has no row. */
struct hf_store_object {
    int64_t id; /* filled in by insert; never reused (the module's handles derive from it) */
    unsigned long cls;
    bool is_private;
    unsigned char *label, *ckaid, *value, *attrs; /* owned; NULL when empty */
    size_t label_len, ckaid_len, value_len, attrs_len;
    int64_t created;
};
void hf_store_object_clear(struct hf_store_object *obj);
CK_RV hf_store_object_insert(struct hf_store *store, struct hf_store_object *obj);
CK_RV hf_store_object_get(struct hf_store *store, int64_t id, struct hf_store_object *out);
/* Writes obj->id's label and ckaid (the only attributes PKCS#11 lets a caller change here). */
CK_RV hf_store_object_update(struct hf_store *store, const struct hf_store_object *obj);
CK_RV hf_store_object_delete(struct hf_store *store, int64_t id);
/* Every object, in id order: free each with hf_store_object_clear, then the array. */
CK_RV hf_store_object_list(struct hf_store *store, struct hf_store_object **objs, size_t *n);

/* ---- HSM pools ----
 * A pool (pool.h runs one) as every node of a cluster sees it: its members, each a backend
 * PKCS#11 module + token + PIN source + concurrency limit. The PIN itself is never stored: a
 * member names a file or an environment variable that holds it on each node. A member's module
 * path decides what code every node loads, so the pool row and all its members carry one policy
 * MAC (the pool_seal/pool_check hooks above): a pool whose row or any member was edited outside
 * Holdfast is CKR_HF_POLICY_INVALID, and left out of lists.
 *
 * Names (pool and member) are [a-z0-9-]{1,HF_POOL_NAME_MAX}. A key kept in a pool records its
 * source as HF_KEY_SOURCE_POOL_PREFIX + the pool name ("pool:NAME", key.h); "local" is never a
 * pool's, whatever its name. Results as above; insert answers CKR_ATTRIBUTE_VALUE_INVALID for a
 * taken pool name or content hf_store_pool_is_valid refuses, delete CKR_ATTRIBUTE_VALUE_INVALID
 * while a key that is not destroyed has the pool as its source. */
#define HF_POOL_NAME_MAX 32
#define HF_POOL_MEMBERS_MAX 64
#define HF_POOL_CONCURRENCY_MAX 1024
#define HF_POOL_TOKEN_LABEL_MAX 32  /* CK_TOKEN_INFO.label */
#define HF_POOL_TOKEN_SERIAL_MAX 16 /* CK_TOKEN_INFO.serialNumber */
#define HF_POOL_PATH_MAX 4096

enum hf_pool_mode {
    HF_POOL_MODE_PLAIN = 1,  /* each key lives on the member that made it */
    HF_POOL_MODE_CLONE = 2,  /* copied to every member under the pool's replication key */
    HF_POOL_MODE_EXPORT = 3, /* also kept wrapped under the pool's backup KEK in the store */
};
/* "plain", "clone", "export" (NULL for another value); parse answers false for another word. */
const char *hf_pool_mode_name(enum hf_pool_mode mode);
bool hf_pool_mode_parse(const char *s, enum hf_pool_mode *mode);

struct hf_store_pool_member {
    char *name;           /* unique within its pool */
    char *module_path;    /* absolute: loaded by path on every node */
    char *token_label;    /* 1..32 bytes; NULL when token_serial names the token */
    char *token_serial;   /* 1..16 of [0-9A-Za-z]; may be NULL */
    char *pin_file;       /* absolute path of the file holding the user PIN, or NULL */
    char *pin_env;        /* name of the environment variable holding it, or NULL: one of both */
    unsigned concurrency; /* 1..HF_POOL_CONCURRENCY_MAX calls in flight */
};

struct hf_store_pool {
    char *name;
    enum hf_pool_mode mode;
    int64_t created, updated;
    struct hf_store_pool_member *members; /* in the order given (the pool's member order) */
    size_t n_members;                     /* 1..HF_POOL_MEMBERS_MAX */
    unsigned char mac[HF_POLICY_MAC_LEN]; /* over the pool and its members; has_mac false: none */
    bool has_mac;
};

/* Frees the members (not the struct) and leaves it zeroed. NULL is fine. */
void hf_store_pool_clear(struct hf_store_pool *pool);
void hf_store_pool_member_clear(struct hf_store_pool_member *m);
bool hf_pool_name_is_valid(const char *name);
/* The content rules above, member names unique; a reason for people in why (may be NULL). */
bool hf_store_pool_is_valid(const struct hf_store_pool *pool, char *why, size_t whylen);
/* Inserts the pool and its members in one transaction; pool->mac is filled in. */
CK_RV hf_store_pool_insert(struct hf_store *store, struct hf_store_pool *pool);
CK_RV hf_store_pool_get(struct hf_store *store, const char *name, struct hf_store_pool *out);
/* Every pool with its members, sorted by name: free each with hf_store_pool_clear, then the
 * array. */
CK_RV hf_store_pool_list(struct hf_store *store, struct hf_store_pool **pools, size_t *n);
CK_RV hf_store_pool_delete(struct hf_store *store, const char *name);

/* An export pool's backups (schema v6), blobs that authenticate themselves when unwrapped, so
 * outside the pool's policy MAC: HF_POOL_BACKUP_KEK, its backup KEK wrapped under the root KEK
 * (core-pool-backup.c), and HF_POOL_BACKUP_REPLICATION, its replication key wrapped under the
 * backup KEK. get: *blob malloc'd; CKR_KEY_HANDLE_INVALID when there is none. add: the first
 * writer wins (CKR_OK and nothing written when the pool has that backup already: read it back);
 * nothing is written for a pool that does not exist. Deleting the pool deletes its backups. */
#define HF_POOL_BACKUP_KEK "backup-kek"
#define HF_POOL_BACKUP_REPLICATION "replication"
CK_RV hf_store_pool_backup_get(struct hf_store *store, const char *pool, const char *what,
                               unsigned char **blob, size_t *len);
CK_RV hf_store_pool_backup_add(struct hf_store *store, const char *pool, const char *what,
                               const unsigned char *blob, size_t len);

#endif
