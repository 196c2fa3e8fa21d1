/* Moving an embedded store (SQLite) into a cluster store (PostgreSQL): `holdfast store migrate`.
 *
 * Every row of every table is copied as it is: the same ids, UUIDs, wrapped material and policy
 * MACs. Nothing in a row binds it to its backend (policy.c MACs a row's fields and UUIDs, never
 * its id nor the database; a wrapped blob names its key and version UUIDs), so the copy verifies
 * under the same token and every key decrypts what it encrypted before. */
#ifndef HF_STORE_MIGRATE_H
#define HF_STORE_MIGRATE_H

#include <stddef.h>
#include <stdint.h>

#include "pkcs11/module/holdfast.h"

/* The tables of schema v6 (store-migrate.c lists them in dependency order). */
#define HF_STORE_MIGRATE_TABLES 10

struct hf_store_migrate_result {
    struct {
        const char *table; /* static */
        uint64_t rows;     /* rows copied (on success: also the source's and the destination's) */
    } tables[HF_STORE_MIGRATE_TABLES];
    size_t n_tables;
    uint64_t meta_replaced; /* the destination's own meta rows (an init's), replaced */
    char where[160];        /* the destination as host:port/db, for messages: never the locator */
    char reason[384];       /* why it failed, for people (never a secret); empty on success */
};

/* Copies the SQLite store at from (a path or "sqlite:PATH"; it must exist: it is not created)
 * into the PostgreSQL store at to (a libpq URI without password), in one destination
 * transaction read from one SQLite snapshot. Both are first opened with hf_store_open, which
 * brings them to this build's schema (the source may be migrated in place; nothing else is
 * written to it). The destination must hold no key, version, label, link, object, pool, member
 * or pool backup; its meta and link type rows (a fresh schema's seeded types, an init's PINs)
 * are replaced by the source's. Afterwards its id sequences stand past the source's (ids never
 * come back: the module's handles derive from them), and each table's row count is compared
 * with the source's before COMMIT.
 *
 * CKR_OK with result filled; CKR_ARGUMENTS_BAD for a locator of the wrong kind or one carrying a
 * password; CKR_KEY_HANDLE_INVALID when the source file does not exist; CKR_ACTION_PROHIBITED
 * when the destination is not empty (nothing written); CKR_FUNCTION_FAILED when a schema or a
 * row count does not match (rolled back); CKR_DEVICE_ERROR when either database fails (rolled
 * back; logged); CKR_HOST_MEMORY. result->reason says why on every failure. */
CK_RV hf_store_migrate(const char *from, const char *to, struct hf_store_migrate_result *result);

#endif
