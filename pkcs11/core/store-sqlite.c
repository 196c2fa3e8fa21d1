#include "hf-build.h"

#include "pkcs11/core/store-internal.h"

#include "pkcs11/core/log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- schema ---- */

/* Each step moves the schema one version up and runs in its own transaction, so a process
 * killed during a migration leaves the previous version intact. Append, never edit: a database
 * at version N has run exactly the first N steps. */
static const char *const migrations[] = {
    /* v1 */
    "CREATE TABLE keys ("
    "  uuid TEXT PRIMARY KEY NOT NULL,"
    "  name TEXT NOT NULL UNIQUE,"
    "  alg INTEGER NOT NULL,"
    "  bits INTEGER NOT NULL,"
    "  usage INTEGER NOT NULL,"
    "  state INTEGER NOT NULL CHECK (state BETWEEN 1 AND 5),"
    "  owner TEXT,"
    "  source TEXT,"
    "  exportable INTEGER NOT NULL,"
    "  created INTEGER NOT NULL,"
    "  updated INTEGER NOT NULL,"
    "  current_version INTEGER NOT NULL);"
    "CREATE TABLE key_labels ("
    "  key_uuid TEXT NOT NULL REFERENCES keys(uuid),"
    "  name TEXT NOT NULL,"
    "  value TEXT NOT NULL,"
    "  PRIMARY KEY (key_uuid, name)) WITHOUT ROWID;"
    /* AUTOINCREMENT: module object handles derive from id, so an id must never come back. */
    "CREATE TABLE key_versions ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  uuid TEXT NOT NULL UNIQUE,"
    "  key_uuid TEXT NOT NULL REFERENCES keys(uuid),"
    "  version INTEGER NOT NULL,"
    "  state INTEGER NOT NULL CHECK (state BETWEEN 1 AND 5),"
    "  created INTEGER NOT NULL,"
    "  kek_label TEXT,"
    "  wrapped BLOB,"
    "  public_der BLOB,"
    "  UNIQUE (key_uuid, version));"
    "CREATE TABLE links ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  type TEXT NOT NULL,"
    "  ext_id TEXT NOT NULL,"
    "  key_uuid TEXT NOT NULL REFERENCES keys(uuid),"
    "  blocked INTEGER NOT NULL DEFAULT 0,"
    "  created INTEGER NOT NULL,"
    "  updated INTEGER NOT NULL,"
    "  UNIQUE (type, ext_id));"
    "CREATE INDEX links_by_key ON links (key_uuid);"
    "CREATE TABLE meta ("
    "  name TEXT PRIMARY KEY NOT NULL,"
    "  value TEXT NOT NULL) WITHOUT ROWID;",
    /* v2: each key, version and link row's policy MAC (policy.h). Existing rows keep NULL until
     * the core, holding the HSM, migrates them (hf_store_policy_migrate): until then they are
     * refused, never trusted. */
    "ALTER TABLE keys ADD COLUMN mac BLOB;"
    "ALTER TABLE key_versions ADD COLUMN mac BLOB;"
    "ALTER TABLE links ADD COLUMN mac BLOB;",
    /* v3: the registry of link types: a link is made only for a registered type (holdfastd
     * registers each plugin's); seeded with the APIs of specs/. No MAC: a forged row lets an
     * administrator make links of another name, never reach a key without a MAC'd link row. */
    "CREATE TABLE link_types ("
    "  name TEXT PRIMARY KEY NOT NULL,"
    "  created INTEGER NOT NULL) WITHOUT ROWID;"
    "INSERT INTO link_types (name, created) VALUES ('aws-xks', 0), ('gcp-ekm', 0),"
    "  ('gws-cse', 0), ('oci', 0), ('sap', 0), ('dke', 0);",
    /* v4: certificate and data objects (store.h). AUTOINCREMENT as for versions: handles. */
    "CREATE TABLE objects ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  class INTEGER NOT NULL,"
    "  private INTEGER NOT NULL,"
    "  label BLOB,"
    "  ckaid BLOB,"
    "  value BLOB,"
    "  attrs BLOB,"
    "  created INTEGER NOT NULL);",
    /* v5: HSM pools (store.h): a pool row and its members, MAC'd together (policy.h). A member
     * names its PIN's file or environment variable, never the PIN. IF NOT EXISTS, and the CHECKs
     * repeat the store's rules, so that no writer (a newer build, a hand) leaves a pool that
     * this build would misread. */
    "CREATE TABLE IF NOT EXISTS pools ("
    "  name TEXT PRIMARY KEY NOT NULL,"
    "  mode TEXT NOT NULL CHECK (mode IN ('plain', 'clone', 'export')),"
    "  created INTEGER NOT NULL,"
    "  updated INTEGER NOT NULL,"
    "  mac BLOB) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS pool_members ("
    "  pool TEXT NOT NULL REFERENCES pools(name) ON DELETE CASCADE,"
    "  position INTEGER NOT NULL,"
    "  name TEXT NOT NULL,"
    "  module_path TEXT NOT NULL,"
    "  token_label TEXT,"
    "  token_serial TEXT,"
    "  pin_file TEXT,"
    "  pin_env TEXT,"
    "  concurrency INTEGER NOT NULL CHECK (concurrency BETWEEN 1 AND 1024),"
    "  CHECK (token_label IS NOT NULL OR token_serial IS NOT NULL),"
    "  CHECK ((pin_file IS NULL) != (pin_env IS NULL)),"
    "  PRIMARY KEY (pool, name),"
    "  UNIQUE (pool, position)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS keys_by_source ON keys (source);",
    /* v6: an export pool's backups (store.h, hf_store_pool_backup_*): its backup KEK wrapped
     * under the root KEK, and its replication key wrapped under the backup KEK. Outside the
     * pool's policy MAC (each blob authenticates itself when unwrapped), so v5 rows keep theirs. */
    "CREATE TABLE IF NOT EXISTS pool_backups ("
    "  pool TEXT NOT NULL REFERENCES pools(name) ON DELETE CASCADE,"
    "  what TEXT NOT NULL CHECK (what IN ('backup-kek', 'replication')),"
    "  blob BLOB NOT NULL,"
    "  PRIMARY KEY (pool, what)) WITHOUT ROWID;",
};
#define N_MIGRATIONS ((int)(sizeof(migrations) / sizeof(migrations[0])))
_Static_assert(N_MIGRATIONS == HF_STORE_SCHEMA_VERSION, "store-pg.c numbers its steps alike");

int hf_store_schema_version_current(void)
{
    return N_MIGRATIONS;
}

/* ---- statements ---- */

#define KEY_COLS                                                                                   \
    "uuid, name, alg, bits, usage, state, owner, source, exportable, created, updated, "           \
    "current_version, mac"
#define VERSION_COLS                                                                               \
    "id, uuid, key_uuid, version, state, created, kek_label, wrapped, public_der, mac"
#define LINK_COLS "id, type, ext_id, key_uuid, blocked, created, updated, mac"
#define OBJECT_COLS "id, class, private, label, ckaid, value, attrs, created"
#define POOL_COLS "name, mode, created, updated, mac"
#define MEMBER_COLS "name, module_path, token_label, token_serial, pin_file, pin_env, concurrency"
/* A destroyed version without material needs no MAC (policy.h). */
#define VERSION_NEEDS_MAC "NOT (state = 5 AND wrapped IS NULL)"

_Static_assert(HF_STATE_DESTROYED == 5, "the SQL below spells destroyed as 5");

enum stmt_id {
    ST_BEGIN_WRITE,
    ST_BEGIN_READ,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_DATA_VERSION,
    ST_SCHEMA_VERSION,
    ST_KEY_INSERT,
    ST_KEY_BY_UUID,
    ST_KEY_BY_NAME,
    ST_KEY_ALL,
    ST_KEY_UPDATE,
    ST_KEY_DESTROY,
    ST_KEY_ROTATE,
    ST_LABELS_OF,
    ST_LABELS_DELETE,
    ST_LABEL_INSERT,
    ST_VERSION_INSERT,
    ST_VERSION_BY_ID,
    ST_VERSION_BY_NUMBER,
    ST_VERSION_CURRENT,
    ST_VERSION_BY_UUID,
    ST_VERSIONS_OF,
    ST_VERSIONS_ALL,
    ST_VERSIONS_DESTROY,
    ST_VERSION_SET_STATE,
    ST_LINK_INSERT,
    ST_LINK_GET,
    ST_LINK_BLOCK,
    ST_LINK_DELETE,
    ST_LINKS_ALL,
    ST_LINKS_OF,
    ST_META_GET,
    ST_META_SET,
    ST_META_COUNT,
    ST_META_ADD,
    ST_META_SWAP,
    ST_META_DROP,
    ST_OBJECT_INSERT,
    ST_OBJECT_GET,
    ST_OBJECT_UPDATE,
    ST_OBJECT_DELETE,
    ST_OBJECTS_ALL,
    ST_KEYS_UNMACED,
    ST_KEY_SET_MAC,
    ST_VERSIONS_UNMACED,
    ST_VERSION_SET_MAC,
    ST_LINKS_UNMACED,
    ST_LINK_SET_MAC,
    ST_LINK_TYPE_ADD,
    ST_LINK_TYPE_GET,
    ST_LINK_TYPES_ALL,
    ST_POOL_INSERT,
    ST_POOL_MEMBER_INSERT,
    ST_POOL_GET,
    ST_POOLS_ALL,
    ST_POOL_MEMBERS_OF,
    ST_POOL_IN_USE,
    ST_POOL_MEMBERS_DELETE,
    ST_POOL_DELETE,
    ST_POOL_BACKUP_GET,
    ST_POOL_BACKUP_ADD,
    ST_POOL_BACKUPS_DELETE,
    N_STMTS
};

static const char *const stmt_sql[N_STMTS] = {
    [ST_BEGIN_WRITE] = "BEGIN IMMEDIATE",
    [ST_BEGIN_READ] = "BEGIN",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_DATA_VERSION] = "PRAGMA data_version",
    [ST_SCHEMA_VERSION] = "SELECT version FROM schema_version WHERE id = 1",
    [ST_KEY_INSERT] = "INSERT INTO keys (" KEY_COLS ") VALUES (?,?,?,?,?,?,?,?,?,?,?,1,?)",
    [ST_KEY_BY_UUID] = "SELECT " KEY_COLS " FROM keys WHERE uuid = ?",
    [ST_KEY_BY_NAME] = "SELECT " KEY_COLS " FROM keys WHERE name = ?",
    [ST_KEY_ALL] = "SELECT " KEY_COLS " FROM keys ORDER BY name",
    [ST_KEY_UPDATE] = "UPDATE keys SET name = ?, state = ?, usage = ?, owner = ?, exportable = ?, "
                      "updated = ?, mac = ? WHERE uuid = ? AND mac IS ?",
    [ST_KEY_DESTROY] =
        "UPDATE keys SET state = 5, updated = ?, mac = ? WHERE uuid = ? AND mac IS ?",
    [ST_KEY_ROTATE] = "UPDATE keys SET current_version = ?1, updated = ?2, mac = ?4 "
                      "WHERE uuid = ?3 AND current_version = ?1 - 1 AND state != 5 AND mac IS ?5",
    [ST_LABELS_OF] = "SELECT name, value FROM key_labels WHERE key_uuid = ? ORDER BY name",
    [ST_LABELS_DELETE] = "DELETE FROM key_labels WHERE key_uuid = ?",
    [ST_LABEL_INSERT] = "INSERT INTO key_labels (key_uuid, name, value) VALUES (?,?,?)",
    [ST_VERSION_INSERT] = "INSERT INTO key_versions (uuid, key_uuid, version, state, created, "
                          "kek_label, wrapped, public_der, mac) VALUES (?,?,?,?,?,?,?,?,?)",
    [ST_VERSION_BY_ID] = "SELECT " VERSION_COLS " FROM key_versions WHERE id = ?",
    [ST_VERSION_BY_NUMBER] =
        "SELECT " VERSION_COLS " FROM key_versions WHERE key_uuid = ? AND version = ?",
    [ST_VERSION_CURRENT] = "SELECT " VERSION_COLS " FROM key_versions WHERE key_uuid = ?1 AND "
                           "version = (SELECT current_version FROM keys WHERE uuid = ?1)",
    [ST_VERSION_BY_UUID] = "SELECT " VERSION_COLS " FROM key_versions WHERE uuid = ?",
    [ST_VERSIONS_OF] = "SELECT " VERSION_COLS " FROM key_versions WHERE key_uuid = ? "
                       "ORDER BY version",
    [ST_VERSIONS_ALL] = "SELECT " VERSION_COLS " FROM key_versions ORDER BY id",
    [ST_VERSIONS_DESTROY] =
        "UPDATE key_versions SET state = 5, wrapped = NULL, mac = NULL WHERE key_uuid = ?",
    [ST_VERSION_SET_STATE] =
        "UPDATE key_versions SET state = ?1, mac = ?2, "
        "wrapped = CASE WHEN ?1 = 5 THEN NULL ELSE wrapped END WHERE id = ?3 AND mac IS ?4",
    [ST_LINK_INSERT] = "INSERT INTO links (type, ext_id, key_uuid, blocked, created, updated, mac) "
                       "VALUES (?,?,?,?,?,?,?)",
    [ST_LINK_GET] = "SELECT " LINK_COLS " FROM links WHERE type = ? AND ext_id = ?",
    [ST_LINK_BLOCK] = "UPDATE links SET blocked = ?, updated = ?, mac = ? "
                      "WHERE type = ? AND ext_id = ? AND mac IS ?",
    [ST_LINK_DELETE] = "DELETE FROM links WHERE type = ? AND ext_id = ?",
    [ST_LINKS_ALL] = "SELECT " LINK_COLS " FROM links ORDER BY type, ext_id",
    [ST_LINKS_OF] = "SELECT " LINK_COLS " FROM links WHERE key_uuid = ? ORDER BY type, ext_id",
    [ST_META_GET] = "SELECT value FROM meta WHERE name = ?",
    [ST_META_SET] = "INSERT INTO meta (name, value) VALUES (?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    [ST_META_COUNT] = "INSERT INTO meta (name, value) VALUES (?, '1') "
                      "ON CONFLICT (name) DO UPDATE SET value = CAST(value AS INTEGER) + 1 "
                      "RETURNING CAST(value AS INTEGER)",
    [ST_META_ADD] = "INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
    [ST_META_SWAP] = "UPDATE meta SET value = ? WHERE name = ? AND value = ?",
    [ST_META_DROP] = "DELETE FROM meta WHERE name = ? AND value = ?",
    [ST_OBJECT_INSERT] =
        "INSERT INTO objects (class, private, label, ckaid, value, attrs, created) "
        "VALUES (?,?,?,?,?,?,?)",
    [ST_OBJECT_GET] = "SELECT " OBJECT_COLS " FROM objects WHERE id = ?",
    [ST_OBJECT_UPDATE] = "UPDATE objects SET label = ?, ckaid = ? WHERE id = ?",
    [ST_OBJECT_DELETE] = "DELETE FROM objects WHERE id = ?",
    [ST_OBJECTS_ALL] = "SELECT " OBJECT_COLS " FROM objects ORDER BY id",
    [ST_KEYS_UNMACED] = "SELECT " KEY_COLS " FROM keys WHERE mac IS NULL",
    [ST_KEY_SET_MAC] = "UPDATE keys SET mac = ? WHERE uuid = ? AND mac IS NULL",
    [ST_VERSIONS_UNMACED] =
        "SELECT " VERSION_COLS " FROM key_versions WHERE mac IS NULL AND " VERSION_NEEDS_MAC,
    [ST_VERSION_SET_MAC] =
        "UPDATE key_versions SET wrapped = ?, mac = ? WHERE id = ? AND mac IS NULL",
    [ST_LINKS_UNMACED] = "SELECT " LINK_COLS " FROM links WHERE mac IS NULL",
    [ST_LINK_SET_MAC] = "UPDATE links SET mac = ? WHERE id = ? AND mac IS NULL",
    [ST_LINK_TYPE_ADD] = "INSERT INTO link_types (name, created) VALUES (?, ?) "
                         "ON CONFLICT (name) DO NOTHING",
    [ST_LINK_TYPE_GET] = "SELECT name FROM link_types WHERE name = ?",
    [ST_LINK_TYPES_ALL] = "SELECT name FROM link_types ORDER BY name",
    [ST_POOL_INSERT] = "INSERT INTO pools (" POOL_COLS ") VALUES (?,?,?,?,?)",
    [ST_POOL_MEMBER_INSERT] =
        "INSERT INTO pool_members (pool, position, " MEMBER_COLS ") VALUES (?,?,?,?,?,?,?,?,?)",
    [ST_POOL_GET] = "SELECT " POOL_COLS " FROM pools WHERE name = ?",
    [ST_POOLS_ALL] = "SELECT " POOL_COLS " FROM pools ORDER BY name",
    [ST_POOL_MEMBERS_OF] =
        "SELECT " MEMBER_COLS " FROM pool_members WHERE pool = ? ORDER BY position",
    [ST_POOL_IN_USE] = "SELECT uuid FROM keys WHERE source = ? AND state != 5 LIMIT 1",
    [ST_POOL_MEMBERS_DELETE] = "DELETE FROM pool_members WHERE pool = ?",
    [ST_POOL_DELETE] = "DELETE FROM pools WHERE name = ?",
    [ST_POOL_BACKUP_GET] = "SELECT blob FROM pool_backups WHERE pool = ? AND what = ?",
    /* The first writer wins: two nodes establishing one pool's backup keep one. */
    [ST_POOL_BACKUP_ADD] = "INSERT INTO pool_backups (pool, what, blob) SELECT ?1, ?2, ?3 "
                           "WHERE EXISTS (SELECT 1 FROM pools WHERE name = ?1) "
                           "ON CONFLICT (pool, what) DO NOTHING",
    [ST_POOL_BACKUPS_DELETE] = "DELETE FROM pool_backups WHERE pool = ?",
};

struct sqlite_store {
    struct hf_store base;
    /* A SQLite connection carries one transaction at a time, and its error message, change
     * count and last rowid are per connection: two threads interleaving on it would commit each
     * other's half-done work or read each other's results. So every use of db, stmts and commits
     * happens under lock (and db is opened SQLITE_OPEN_NOMUTEX, this lock being the one). */
    pthread_mutex_t lock;
    sqlite3 *db;
    sqlite3_stmt *stmts[N_STMTS]; /* prepared on first use, kept for the connection's life */
    uint64_t commits;             /* this connection's own write commits */
};

static const struct hf_store_ops sqlite_ops;

/* ---- error mapping and statement helpers (all called with lock held) ---- */

static CK_RV db_fail(struct sqlite_store *s, int rc, const char *what)
{
    /* Extended codes are on. SQLite's messages name tables and columns, never bound values, so
     * no secret can reach the log through them. */
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) return CKR_KEY_HANDLE_INVALID;
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
        hf_log_debug("store: %s: %s", what, sqlite3_errmsg(s->db));
        return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    if ((rc & 0xff) == SQLITE_NOMEM) return CKR_HOST_MEMORY;
    hf_log_error("store: %s failed: %s (sqlite %d)", what, sqlite3_errmsg(s->db), rc);
    return CKR_DEVICE_ERROR;
}

static CK_RV stmt_get(struct sqlite_store *s, enum stmt_id id, sqlite3_stmt **out)
{
    sqlite3_stmt *st = s->stmts[id];
    int rc;

    if (st) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    } else {
        rc = sqlite3_prepare_v3(s->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
        if (rc != SQLITE_OK) return db_fail(s, rc, "prepare");
        s->stmts[id] = st;
    }
    *out = st;
    return CKR_OK;
}

/* Releases the read locks of statements left mid-result (an early return, a single-row fetch). */
static void stmts_reset(struct sqlite_store *s)
{
    for (int i = 0; i < N_STMTS; i++)
        if (s->stmts[i] && sqlite3_stmt_busy(s->stmts[i])) sqlite3_reset(s->stmts[i]);
}

static CK_RV step_done(struct sqlite_store *s, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    CK_RV rv = rc == SQLITE_DONE ? CKR_OK : db_fail(s, rc, what);

    sqlite3_reset(st);
    return rv;
}

/* Steps to the single row a lookup expects: CKR_OK with the row current, or
 * CKR_KEY_HANDLE_INVALID when there is none. */
static CK_RV step_row(struct sqlite_store *s, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);

    if (rc == SQLITE_ROW) return CKR_OK;
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? CKR_KEY_HANDLE_INVALID : db_fail(s, rc, what);
}

static CK_RV run(struct sqlite_store *s, enum stmt_id id, const char *what)
{
    sqlite3_stmt *st;
    CK_RV rv = stmt_get(s, id, &st);

    return rv == CKR_OK ? step_done(s, st, what) : rv;
}

static int bind_text(sqlite3_stmt *st, int i, const char *v)
{
    return sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
}

static int bind_blob(sqlite3_stmt *st, int i, const unsigned char *v, size_t len)
{
    return v ? sqlite3_bind_blob64(st, i, v, len, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

/* A policy MAC, or NULL for none. */
static int bind_mac(sqlite3_stmt *st, int i, const unsigned char *mac)
{
    return bind_blob(st, i, mac, HF_POLICY_MAC_LEN);
}

static const unsigned char *mac_of(const unsigned char mac[HF_POLICY_MAC_LEN], bool has_mac)
{
    return has_mac ? mac : NULL;
}

static CK_RV bind_fail(struct sqlite_store *s, const char *what)
{
    return db_fail(s, sqlite3_errcode(s->db), what);
}

/* ---- transactions ---- */

static CK_RV tx_begin(struct sqlite_store *s, bool write)
{
    return run(s, write ? ST_BEGIN_WRITE : ST_BEGIN_READ, "begin");
}

/* Commits when rv is CKR_OK, else (or when the commit fails) rolls back; returns the outcome. */
static CK_RV tx_end(struct sqlite_store *s, CK_RV rv, bool write)
{
    stmts_reset(s);
    if (rv == CKR_OK) {
        rv = run(s, ST_COMMIT, "commit");
        if (rv == CKR_OK && write) s->commits++;
    }
    if (rv != CKR_OK && !sqlite3_get_autocommit(s->db)) run(s, ST_ROLLBACK, "rollback");
    return rv;
}

static struct sqlite_store *store_lock(struct hf_store *store)
{
    struct sqlite_store *s = (struct sqlite_store *)store;

    pthread_mutex_lock(&s->lock);
    return s;
}

static void store_unlock(struct sqlite_store *s)
{
    pthread_mutex_unlock(&s->lock);
}

/* ---- rows ---- */

static void uuid_lower(const char *in, char out[HF_UUID_LEN + 1])
{
    size_t i;

    for (i = 0; i < HF_UUID_LEN && in[i]; i++)
        out[i] = (char)tolower((unsigned char)in[i]);
    out[i] = '\0';
}

static bool col_dup(sqlite3_stmt *st, int i, char **out)
{
    const unsigned char *t = sqlite3_column_text(st, i);

    *out = t ? strdup((const char *)t) : NULL;
    return !t || *out;
}

static bool col_blob(sqlite3_stmt *st, int i, unsigned char **out, size_t *len)
{
    const void *b = sqlite3_column_blob(st, i);
    size_t n = (size_t)sqlite3_column_bytes(st, i);

    *out = NULL;
    *len = 0;
    if (!b) return true;
    if (!(*out = malloc(n))) return false;
    memcpy(*out, b, n);
    *len = n;
    return true;
}

/* A MAC of any other length is read as none: the check refuses it the same way. */
static void col_mac(sqlite3_stmt *st, int i, unsigned char mac[HF_POLICY_MAC_LEN], bool *has_mac)
{
    const void *b = sqlite3_column_blob(st, i);

    *has_mac = b && sqlite3_column_bytes(st, i) == HF_POLICY_MAC_LEN;
    if (*has_mac) memcpy(mac, b, HF_POLICY_MAC_LEN);
}

static void col_uuid(sqlite3_stmt *st, int i, char out[HF_UUID_LEN + 1])
{
    const unsigned char *t = sqlite3_column_text(st, i);

    uuid_lower(t ? (const char *)t : "", out);
}

static CK_RV key_from_row(sqlite3_stmt *st, struct hf_key *k)
{
    memset(k, 0, sizeof(*k));
    col_uuid(st, 0, k->uuid);
    k->alg = (enum hf_alg)sqlite3_column_int(st, 2);
    k->bits = (unsigned)sqlite3_column_int(st, 3);
    k->usage = (unsigned long)sqlite3_column_int64(st, 4);
    k->state = (unsigned long)sqlite3_column_int64(st, 5);
    k->exportable = sqlite3_column_int(st, 8) != 0;
    k->created = sqlite3_column_int64(st, 9);
    k->updated = sqlite3_column_int64(st, 10);
    k->current_version = (unsigned)sqlite3_column_int64(st, 11);
    col_mac(st, 12, k->mac, &k->has_mac);
    if (col_dup(st, 1, &k->name) && col_dup(st, 6, &k->owner) && col_dup(st, 7, &k->source))
        return CKR_OK;
    hf_key_clear(k);
    return CKR_HOST_MEMORY;
}

static CK_RV version_from_row(sqlite3_stmt *st, struct hf_key_version *v)
{
    memset(v, 0, sizeof(*v));
    v->id = sqlite3_column_int64(st, 0);
    col_uuid(st, 1, v->uuid);
    col_uuid(st, 2, v->key_uuid);
    v->version = (unsigned)sqlite3_column_int64(st, 3);
    v->state = (unsigned long)sqlite3_column_int64(st, 4);
    v->created = sqlite3_column_int64(st, 5);
    col_mac(st, 9, v->mac, &v->has_mac);
    if (col_dup(st, 6, &v->kek_label) && col_blob(st, 7, &v->wrapped, &v->wrapped_len) &&
        col_blob(st, 8, &v->public_der, &v->public_der_len))
        return CKR_OK;
    hf_key_version_clear(v);
    return CKR_HOST_MEMORY;
}

static CK_RV link_from_row(sqlite3_stmt *st, struct hf_link *l)
{
    memset(l, 0, sizeof(*l));
    l->id = sqlite3_column_int64(st, 0);
    col_uuid(st, 3, l->key_uuid);
    l->blocked = sqlite3_column_int(st, 4) != 0;
    l->created = sqlite3_column_int64(st, 5);
    l->updated = sqlite3_column_int64(st, 6);
    col_mac(st, 7, l->mac, &l->has_mac);
    if (col_dup(st, 1, &l->type) && col_dup(st, 2, &l->ext_id)) return CKR_OK;
    hf_link_clear(l);
    return CKR_HOST_MEMORY;
}

/* Makes room for one more element of size elem in *arr (holding n, capacity *cap). */
static bool array_grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    void *p;
    size_t want;

    if (n < *cap) return true;
    want = *cap ? *cap * 2 : 8;
    if (want > SIZE_MAX / elem) return false;
    if (!(p = realloc(*arr, want * elem))) return false;
    *arr = p;
    *cap = want;
    return true;
}

/* Row readers for the list functions: one per element type. */
typedef CK_RV (*row_fn)(sqlite3_stmt *st, void *elem);

static CK_RV key_row(sqlite3_stmt *st, void *elem)
{
    return key_from_row(st, elem);
}

static CK_RV version_row(sqlite3_stmt *st, void *elem)
{
    return version_from_row(st, elem);
}

static CK_RV link_row(sqlite3_stmt *st, void *elem)
{
    return link_from_row(st, elem);
}

/* Reads every row of st into a malloc'd array. On failure the array holds the *n rows read so
 * far, for the caller to free. */
static CK_RV rows_read(struct sqlite_store *s, sqlite3_stmt *st, row_fn fn, size_t elem, void **arr,
                       size_t *n)
{
    size_t cap = 0;
    CK_RV rv = CKR_OK;
    int rc;

    *arr = NULL;
    *n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!array_grow(arr, &cap, *n, elem)) {
            rv = CKR_HOST_MEMORY;
            break;
        }
        if ((rv = fn(st, (char *)*arr + *n * elem)) != CKR_OK) break;
        (*n)++;
    }
    if (rv == CKR_OK && rc != SQLITE_DONE) rv = db_fail(s, rc, "read rows");
    sqlite3_reset(st);
    return rv;
}

static void keys_free(struct hf_key *keys, size_t n)
{
    for (size_t i = 0; keys && i < n; i++)
        hf_key_clear(&keys[i]);
    free(keys);
}

static void versions_free(struct hf_key_version *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        hf_key_version_clear(&v[i]);
    free(v);
}

static void links_free(struct hf_link *l, size_t n)
{
    for (size_t i = 0; l && i < n; i++)
        hf_link_clear(&l[i]);
    free(l);
}

/* ---- keys (lock held, inside a transaction) ---- */

static CK_RV labels_load(struct sqlite_store *s, struct hf_key *k)
{
    sqlite3_stmt *st;
    size_t cap = 0;
    CK_RV rv;
    int rc;

    if ((rv = stmt_get(s, ST_LABELS_OF, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, k->uuid)) return bind_fail(s, "read labels");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct hf_label *l;
        if (!array_grow((void **)&k->labels, &cap, k->n_labels, sizeof(*l))) {
            rv = CKR_HOST_MEMORY;
            break;
        }
        l = &k->labels[k->n_labels];
        l->value = NULL;
        /* Counted before the copies, so hf_key_clear frees a half-read label. */
        k->n_labels++;
        if (!col_dup(st, 0, &l->name) || !col_dup(st, 1, &l->value)) {
            rv = CKR_HOST_MEMORY;
            break;
        }
    }
    if (rv == CKR_OK && rc != SQLITE_DONE) rv = db_fail(s, rc, "read labels");
    sqlite3_reset(st);
    return rv;
}

static CK_RV labels_write(struct sqlite_store *s, const char *uuid, const struct hf_key *k)
{
    sqlite3_stmt *st;
    CK_RV rv = CKR_OK;

    for (size_t i = 0; rv == CKR_OK && i < k->n_labels; i++) {
        if ((rv = stmt_get(s, ST_LABEL_INSERT, &st)) != CKR_OK) break;
        if (bind_text(st, 1, uuid) || bind_text(st, 2, k->labels[i].name) ||
            bind_text(st, 3, k->labels[i].value))
            return bind_fail(s, "write label");
        rv = step_done(s, st, "write label");
    }
    return rv;
}

static CK_RV key_read(struct sqlite_store *s, const char *ref, struct hf_key *out)
{
    char uuid[HF_UUID_LEN + 1];
    bool by_uuid = hf_uuid_is_valid(ref);
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, by_uuid ? ST_KEY_BY_UUID : ST_KEY_BY_NAME, &st)) != CKR_OK) return rv;
    if (by_uuid) uuid_lower(ref, uuid);
    if (bind_text(st, 1, by_uuid ? uuid : ref)) return bind_fail(s, "read key");
    if ((rv = step_row(s, st, "read key")) != CKR_OK) return rv;
    rv = key_from_row(st, out);
    sqlite3_reset(st);
    if (rv == CKR_OK) rv = labels_load(s, out);
    if (rv != CKR_OK) hf_key_clear(out);
    return rv;
}

static CK_RV keys_read(struct sqlite_store *s, struct hf_key **keys, size_t *n)
{
    sqlite3_stmt *st;
    CK_RV rv;

    *keys = NULL;
    *n = 0;
    if ((rv = stmt_get(s, ST_KEY_ALL, &st)) != CKR_OK) return rv;
    rv = rows_read(s, st, key_row, sizeof(**keys), (void **)keys, n);
    for (size_t i = 0; rv == CKR_OK && i < *n; i++)
        rv = labels_load(s, &(*keys)[i]);
    return rv;
}

/* Writes v as version number `version` of key_uuid; *id gets its row id. */
static CK_RV version_write(struct sqlite_store *s, const struct hf_key_version *v,
                           const char *key_uuid, unsigned version, int64_t *id)
{
    char uuid[HF_UUID_LEN + 1];
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_VERSION_INSERT, &st)) != CKR_OK) return rv;
    uuid_lower(v->uuid, uuid);
    if (bind_text(st, 1, uuid) || bind_text(st, 2, key_uuid) ||
        sqlite3_bind_int64(st, 3, version) || sqlite3_bind_int64(st, 4, (sqlite3_int64)v->state) ||
        sqlite3_bind_int64(st, 5, v->created) || bind_text(st, 6, v->kek_label) ||
        bind_blob(st, 7, v->wrapped, v->wrapped_len) ||
        bind_blob(st, 8, v->public_der, v->public_der_len) ||
        bind_mac(st, 9, mac_of(v->mac, v->has_mac)))
        return bind_fail(s, "write version");
    if ((rv = step_done(s, st, "write version")) == CKR_OK) *id = sqlite3_last_insert_rowid(s->db);
    return rv;
}

static CK_RV key_insert_tx(struct sqlite_store *s, const struct hf_key *key, const char *uuid,
                           const struct hf_key_version *v1, int64_t *v1_id)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_KEY_INSERT, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, uuid) || bind_text(st, 2, key->name) ||
        sqlite3_bind_int(st, 3, (int)key->alg) || sqlite3_bind_int(st, 4, (int)key->bits) ||
        sqlite3_bind_int64(st, 5, (sqlite3_int64)key->usage) ||
        sqlite3_bind_int64(st, 6, (sqlite3_int64)key->state) || bind_text(st, 7, key->owner) ||
        bind_text(st, 8, key->source) || sqlite3_bind_int(st, 9, key->exportable) ||
        sqlite3_bind_int64(st, 10, key->created) || sqlite3_bind_int64(st, 11, key->updated) ||
        bind_mac(st, 12, mac_of(key->mac, key->has_mac)))
        return bind_fail(s, "write key");
    if ((rv = step_done(s, st, "write key")) != CKR_OK) return rv;
    if ((rv = labels_write(s, uuid, key)) != CKR_OK) return rv;
    return version_write(s, v1, uuid, 1, v1_id);
}

static CK_RV sq_key_insert(struct hf_store *store, const struct hf_key *key,
                           struct hf_key_version *v1)
{
    struct sqlite_store *s = store_lock(store);
    char uuid[HF_UUID_LEN + 1];
    int64_t id = 0;
    CK_RV rv;

    uuid_lower(key->uuid, uuid);
    if ((rv = tx_begin(s, true)) == CKR_OK)
        rv = tx_end(s, key_insert_tx(s, key, uuid, v1, &id), true);
    store_unlock(s);
    if (rv == CKR_OK) {
        v1->id = id;
        v1->version = 1;
        memcpy(v1->key_uuid, uuid, sizeof(uuid));
    }
    return rv;
}

static CK_RV sq_key_get(struct hf_store *store, const char *ref, struct hf_key *out)
{
    struct sqlite_store *s = store_lock(store);
    struct hf_key k = {0};
    CK_RV rv;

    /* A read transaction, so the key row and its labels come from one snapshot. */
    if ((rv = tx_begin(s, false)) == CKR_OK) rv = tx_end(s, key_read(s, ref, &k), false);
    store_unlock(s);
    if (rv == CKR_OK)
        *out = k;
    else
        hf_key_clear(&k);
    return rv;
}

static CK_RV sq_key_list(struct hf_store *store, struct hf_key **keys, size_t *n)
{
    struct sqlite_store *s = store_lock(store);
    struct hf_key *k = NULL;
    size_t count = 0;
    CK_RV rv;

    if ((rv = tx_begin(s, false)) == CKR_OK) rv = tx_end(s, keys_read(s, &k, &count), false);
    store_unlock(s);
    if (rv != CKR_OK) {
        keys_free(k, count);
        return rv;
    }
    *keys = k;
    *n = count;
    return CKR_OK;
}

/* A conditional write of key uuid changed nothing: no such key, or its row no longer has the MAC
 * the writer read (another writer came first). */
static CK_RV key_missed(struct sqlite_store *s, const char *uuid, const char *what)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_KEY_BY_UUID, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, uuid)) return bind_fail(s, what);
    if ((rv = step_row(s, st, what)) != CKR_OK) return rv;
    sqlite3_reset(st);
    hf_log_info("store: %s: key %s changed meanwhile", what, uuid);
    return CKR_ATTRIBUTE_VALUE_INVALID;
}

static CK_RV key_update_tx(struct sqlite_store *s, const struct hf_key *key, const char *uuid,
                           const unsigned char *old_mac)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_KEY_UPDATE, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, key->name) || sqlite3_bind_int64(st, 2, (sqlite3_int64)key->state) ||
        sqlite3_bind_int64(st, 3, (sqlite3_int64)key->usage) || bind_text(st, 4, key->owner) ||
        sqlite3_bind_int(st, 5, key->exportable) || sqlite3_bind_int64(st, 6, key->updated) ||
        bind_mac(st, 7, mac_of(key->mac, key->has_mac)) || bind_text(st, 8, uuid) ||
        bind_mac(st, 9, old_mac))
        return bind_fail(s, "update key");
    if ((rv = step_done(s, st, "update key")) != CKR_OK) return rv;
    if (sqlite3_changes(s->db) == 0) return key_missed(s, uuid, "update key");
    if ((rv = stmt_get(s, ST_LABELS_DELETE, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, uuid)) return bind_fail(s, "update labels");
    if ((rv = step_done(s, st, "update labels")) != CKR_OK) return rv;
    return labels_write(s, uuid, key);
}

static CK_RV sq_key_update(struct hf_store *store, const struct hf_key *key,
                           const unsigned char *old_mac)
{
    struct sqlite_store *s = store_lock(store);
    char uuid[HF_UUID_LEN + 1];
    CK_RV rv;

    uuid_lower(key->uuid, uuid);
    if ((rv = tx_begin(s, true)) == CKR_OK)
        rv = tx_end(s, key_update_tx(s, key, uuid, old_mac), true);
    store_unlock(s);
    return rv;
}

static CK_RV key_destroy_tx(struct sqlite_store *s, const char *uuid, int64_t when,
                            const unsigned char *mac, const unsigned char *old_mac)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_KEY_DESTROY, &st)) != CKR_OK) return rv;
    if (sqlite3_bind_int64(st, 1, when) || bind_mac(st, 2, mac) || bind_text(st, 3, uuid) ||
        bind_mac(st, 4, old_mac))
        return bind_fail(s, "destroy key");
    if ((rv = step_done(s, st, "destroy key")) != CKR_OK) return rv;
    if (sqlite3_changes(s->db) == 0) return key_missed(s, uuid, "destroy key");
    if ((rv = stmt_get(s, ST_VERSIONS_DESTROY, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, uuid)) return bind_fail(s, "destroy versions");
    return step_done(s, st, "destroy versions");
}

static CK_RV sq_key_destroy(struct hf_store *store, const char *ref, int64_t when,
                            const unsigned char *mac, const unsigned char *old_mac)
{
    struct sqlite_store *s = store_lock(store);
    char uuid[HF_UUID_LEN + 1];
    CK_RV rv;
    int rc;

    uuid_lower(ref, uuid);
    if ((rv = tx_begin(s, true)) == CKR_OK)
        rv = tx_end(s, key_destroy_tx(s, uuid, when, mac, old_mac), true);
    if (rv == CKR_OK) {
        /* secure_delete zeroes the freed blob space in the new page images, but the old images
         * still sit in the WAL until it is reused. A TRUNCATE checkpoint copies the zeroed pages
         * into the database file and empties the WAL. Best effort: a long reader elsewhere can
         * hold it off, and the next checkpoint then does the same. */
        rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        if (rc != SQLITE_OK)
            hf_log_warn("store: checkpoint after destroy deferred: %s", sqlite3_errmsg(s->db));
    }
    store_unlock(s);
    return rv;
}

/* ---- versions ---- */

static CK_RV version_insert_tx(struct sqlite_store *s, const struct hf_key_version *v,
                               const char *key_uuid, int64_t when, const unsigned char *key_mac,
                               const unsigned char *old_key_mac, int64_t *id)
{
    sqlite3_stmt *st;
    CK_RV rv;

    /* The conditional update is the rotation lock: of two rotations from the same version, the
     * second finds current_version moved on and changes nothing. */
    if ((rv = stmt_get(s, ST_KEY_ROTATE, &st)) != CKR_OK) return rv;
    if (sqlite3_bind_int64(st, 1, v->version) || sqlite3_bind_int64(st, 2, when) ||
        bind_text(st, 3, key_uuid) || bind_mac(st, 4, key_mac) || bind_mac(st, 5, old_key_mac))
        return bind_fail(s, "rotate key");
    if ((rv = step_done(s, st, "rotate key")) != CKR_OK) return rv;
    if (sqlite3_changes(s->db) == 0) {
        if ((rv = stmt_get(s, ST_KEY_BY_UUID, &st)) != CKR_OK) return rv;
        if (bind_text(st, 1, key_uuid)) return bind_fail(s, "rotate key");
        rv = step_row(s, st, "rotate key");
        return rv == CKR_OK ? CKR_ATTRIBUTE_VALUE_INVALID : rv;
    }
    return version_write(s, v, key_uuid, v->version, id);
}

static CK_RV sq_version_insert(struct hf_store *store, struct hf_key_version *v, int64_t when,
                               const unsigned char *key_mac, const unsigned char *old_key_mac)
{
    struct sqlite_store *s = store_lock(store);
    char key_uuid[HF_UUID_LEN + 1];
    int64_t id = 0;
    CK_RV rv;

    uuid_lower(v->key_uuid, key_uuid);
    if ((rv = tx_begin(s, true)) == CKR_OK)
        rv = tx_end(s, version_insert_tx(s, v, key_uuid, when, key_mac, old_key_mac, &id), true);
    store_unlock(s);
    if (rv == CKR_OK) v->id = id;
    return rv;
}

static CK_RV version_state_tx(struct sqlite_store *s, const struct hf_key_version *v,
                              const unsigned char *old_mac)
{
    const char *what = "set version state";
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_VERSION_SET_STATE, &st)) != CKR_OK) return rv;
    if (sqlite3_bind_int64(st, 1, (sqlite3_int64)v->state) ||
        bind_mac(st, 2, mac_of(v->mac, v->has_mac)) || sqlite3_bind_int64(st, 3, v->id) ||
        bind_mac(st, 4, old_mac))
        return bind_fail(s, what);
    if ((rv = step_done(s, st, what)) != CKR_OK) return rv;
    if (sqlite3_changes(s->db) > 0) return CKR_OK;
    if ((rv = stmt_get(s, ST_VERSION_BY_ID, &st)) != CKR_OK) return rv;
    if (sqlite3_bind_int64(st, 1, v->id)) return bind_fail(s, what);
    if ((rv = step_row(s, st, what)) != CKR_OK) return rv;
    sqlite3_reset(st);
    hf_log_info("store: %s: version %lld changed meanwhile", what, (long long)v->id);
    return CKR_ATTRIBUTE_VALUE_INVALID;
}

static CK_RV sq_version_set_state(struct hf_store *store, const struct hf_key_version *v,
                                  const unsigned char *old_mac)
{
    struct sqlite_store *s = store_lock(store);
    CK_RV rv = tx_begin(s, true);

    if (rv == CKR_OK) rv = tx_end(s, version_state_tx(s, v, old_mac), true);
    /* As after a key's destruction: the zeroed pages reach the file, the old ones leave the WAL. */
    if (rv == CKR_OK && v->state == HF_STATE_DESTROYED &&
        sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) != SQLITE_OK)
        hf_log_warn("store: checkpoint after destroy deferred: %s", sqlite3_errmsg(s->db));
    store_unlock(s);
    return rv;
}

/* Fetches the one version row the bound statement st selects. */
static CK_RV version_lookup(struct sqlite_store *s, sqlite3_stmt *st, struct hf_key_version *out)
{
    struct hf_key_version v;
    CK_RV rv;

    if ((rv = step_row(s, st, "read version")) != CKR_OK) return rv;
    rv = version_from_row(st, &v);
    sqlite3_reset(st);
    if (rv == CKR_OK) *out = v;
    return rv;
}

static CK_RV sq_version_get(struct hf_store *store, int64_t id, struct hf_key_version *out)
{
    struct sqlite_store *s = store_lock(store);
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_VERSION_BY_ID, &st)) == CKR_OK) {
        if (sqlite3_bind_int64(st, 1, id))
            rv = bind_fail(s, "read version");
        else
            rv = version_lookup(s, st, out);
    }
    store_unlock(s);
    return rv;
}

static CK_RV sq_version_find(struct hf_store *store, const char *key_uuid, unsigned version,
                             struct hf_key_version *out)
{
    struct sqlite_store *s = store_lock(store);
    char uuid[HF_UUID_LEN + 1];
    sqlite3_stmt *st;
    CK_RV rv;

    uuid_lower(key_uuid, uuid);
    if ((rv = stmt_get(s, version ? ST_VERSION_BY_NUMBER : ST_VERSION_CURRENT, &st)) == CKR_OK) {
        if (bind_text(st, 1, uuid) || (version && sqlite3_bind_int64(st, 2, version)))
            rv = bind_fail(s, "read version");
        else
            rv = version_lookup(s, st, out);
    }
    store_unlock(s);
    return rv;
}

static CK_RV sq_version_find_by_uuid(struct hf_store *store, const char *version_uuid,
                                     struct hf_key_version *out)
{
    struct sqlite_store *s = store_lock(store);
    char uuid[HF_UUID_LEN + 1];
    sqlite3_stmt *st;
    CK_RV rv;

    uuid_lower(version_uuid, uuid);
    if ((rv = stmt_get(s, ST_VERSION_BY_UUID, &st)) == CKR_OK) {
        if (bind_text(st, 1, uuid))
            rv = bind_fail(s, "read version");
        else
            rv = version_lookup(s, st, out);
    }
    store_unlock(s);
    return rv;
}

static CK_RV sq_version_list(struct hf_store *store, const char *key_uuid,
                             struct hf_key_version **versions, size_t *n)
{
    struct sqlite_store *s = store_lock(store);
    struct hf_key_version *v = NULL;
    char uuid[HF_UUID_LEN + 1];
    size_t count = 0;
    sqlite3_stmt *st;
    CK_RV rv;

    uuid_lower(key_uuid, uuid);
    if ((rv = stmt_get(s, ST_VERSIONS_OF, &st)) == CKR_OK) {
        if (bind_text(st, 1, uuid))
            rv = bind_fail(s, "list versions");
        else
            rv = rows_read(s, st, version_row, sizeof(*v), (void **)&v, &count);
    }
    store_unlock(s);
    if (rv != CKR_OK) {
        versions_free(v, count);
        return rv;
    }
    *versions = v;
    *n = count;
    return CKR_OK;
}

static int key_uuid_cmp(const void *a, const void *b)
{
    return strcmp(((const struct hf_key *)a)->uuid, ((const struct hf_key *)b)->uuid);
}

static CK_RV each_read(struct sqlite_store *s, struct hf_key **keys, size_t *nk,
                       struct hf_key_version **versions, size_t *nv)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = keys_read(s, keys, nk)) != CKR_OK) return rv;
    if ((rv = stmt_get(s, ST_VERSIONS_ALL, &st)) != CKR_OK) return rv;
    return rows_read(s, st, version_row, sizeof(**versions), (void **)versions, nv);
}

static CK_RV sq_version_each(struct hf_store *store, hf_store_version_fn fn, void *arg)
{
    struct sqlite_store *s = store_lock(store);
    struct hf_key *keys = NULL;
    struct hf_key_version *versions = NULL;
    size_t nk = 0, nv = 0;
    CK_RV rv;

    /* Read a snapshot, then call fn with the lock released: fn may well call the store. */
    if ((rv = tx_begin(s, false)) == CKR_OK)
        rv = tx_end(s, each_read(s, &keys, &nk, &versions, &nv), false);
    store_unlock(s);
    if (rv != CKR_OK) goto done;
    if (nk > 1) qsort(keys, nk, sizeof(*keys), key_uuid_cmp); /* qsort(NULL, 0) is UB */
    for (size_t i = 0; i < nv && rv == CKR_OK; i++) {
        struct hf_key probe;
        const struct hf_key *key;
        memcpy(probe.uuid, versions[i].key_uuid, sizeof(probe.uuid));
        key = bsearch(&probe, keys, nk, sizeof(*keys), key_uuid_cmp);
        if (key) rv = fn(key, &versions[i], arg); /* foreign keys make a miss impossible */
    }
done:
    keys_free(keys, nk);
    versions_free(versions, nv);
    return rv;
}

/* ---- links ---- */

static CK_RV link_insert_tx(struct sqlite_store *s, const struct hf_link *link, const char *uuid,
                            int64_t *id)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_LINK_INSERT, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, link->type) || bind_text(st, 2, link->ext_id) || bind_text(st, 3, uuid) ||
        sqlite3_bind_int(st, 4, link->blocked) || sqlite3_bind_int64(st, 5, link->created) ||
        sqlite3_bind_int64(st, 6, link->updated) ||
        bind_mac(st, 7, mac_of(link->mac, link->has_mac)))
        return bind_fail(s, "write link");
    if ((rv = step_done(s, st, "write link")) == CKR_OK) *id = sqlite3_last_insert_rowid(s->db);
    return rv;
}

static CK_RV sq_link_insert(struct hf_store *store, struct hf_link *link)
{
    struct sqlite_store *s = store_lock(store);
    char uuid[HF_UUID_LEN + 1];
    int64_t id = 0;
    CK_RV rv;

    uuid_lower(link->key_uuid, uuid);
    if ((rv = tx_begin(s, true)) == CKR_OK)
        rv = tx_end(s, link_insert_tx(s, link, uuid, &id), true);
    store_unlock(s);
    if (rv == CKR_OK) link->id = id;
    return rv;
}

static CK_RV sq_link_get(struct hf_store *store, const char *type, const char *ext_id,
                         struct hf_link *out)
{
    struct sqlite_store *s = store_lock(store);
    struct hf_link l;
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_LINK_GET, &st)) != CKR_OK) goto done;
    if (bind_text(st, 1, type) || bind_text(st, 2, ext_id)) {
        rv = bind_fail(s, "read link");
        goto done;
    }
    if ((rv = step_row(s, st, "read link")) != CKR_OK) goto done;
    rv = link_from_row(st, &l);
    sqlite3_reset(st);
    if (rv == CKR_OK) *out = l;
done:
    store_unlock(s);
    return rv;
}

/* Runs the prepared one-statement change st on a link inside its own write transaction;
 * CKR_KEY_HANDLE_INVALID when it matched no link. */
static CK_RV link_change(struct sqlite_store *s, sqlite3_stmt *st, const char *what)
{
    CK_RV rv = tx_begin(s, true);

    if (rv != CKR_OK) return rv;
    rv = step_done(s, st, what);
    if (rv == CKR_OK && sqlite3_changes(s->db) == 0) rv = CKR_KEY_HANDLE_INVALID;
    return tx_end(s, rv, true);
}

/* The conditional block changed nothing: no such link, or its MAC moved on meanwhile. */
static CK_RV link_missed(struct sqlite_store *s, const char *type, const char *ext_id)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_LINK_GET, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, type) || bind_text(st, 2, ext_id)) return bind_fail(s, "block link");
    if ((rv = step_row(s, st, "block link")) != CKR_OK) return rv;
    sqlite3_reset(st);
    hf_log_info("store: block link: link changed meanwhile");
    return CKR_ATTRIBUTE_VALUE_INVALID;
}

static CK_RV sq_link_set_blocked(struct hf_store *store, const char *type, const char *ext_id,
                                 bool blocked, int64_t when, const unsigned char *mac,
                                 const unsigned char *old_mac)
{
    struct sqlite_store *s = store_lock(store);
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_LINK_BLOCK, &st)) == CKR_OK) {
        if (sqlite3_bind_int(st, 1, blocked) || sqlite3_bind_int64(st, 2, when) ||
            bind_mac(st, 3, mac) || bind_text(st, 4, type) || bind_text(st, 5, ext_id) ||
            bind_mac(st, 6, old_mac))
            rv = bind_fail(s, "block link");
        else
            rv = link_change(s, st, "block link");
        if (rv == CKR_KEY_HANDLE_INVALID) rv = link_missed(s, type, ext_id);
    }
    store_unlock(s);
    return rv;
}

static CK_RV sq_link_delete(struct hf_store *store, const char *type, const char *ext_id)
{
    struct sqlite_store *s = store_lock(store);
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_LINK_DELETE, &st)) == CKR_OK) {
        if (bind_text(st, 1, type) || bind_text(st, 2, ext_id))
            rv = bind_fail(s, "delete link");
        else
            rv = link_change(s, st, "delete link");
    }
    store_unlock(s);
    return rv;
}

static CK_RV sq_link_list(struct hf_store *store, const char *key_uuid, struct hf_link **links,
                          size_t *n)
{
    struct sqlite_store *s = store_lock(store);
    struct hf_link *l = NULL;
    char uuid[HF_UUID_LEN + 1];
    size_t count = 0;
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, key_uuid ? ST_LINKS_OF : ST_LINKS_ALL, &st)) == CKR_OK) {
        if (key_uuid) uuid_lower(key_uuid, uuid);
        if (key_uuid && bind_text(st, 1, uuid))
            rv = bind_fail(s, "list links");
        else
            rv = rows_read(s, st, link_row, sizeof(*l), (void **)&l, &count);
    }
    store_unlock(s);
    if (rv != CKR_OK) {
        links_free(l, count);
        return rv;
    }
    *links = l;
    *n = count;
    return CKR_OK;
}

/* ---- link types ---- */

static CK_RV sq_link_type_add(struct hf_store *store, const char *name, int64_t when, bool *added)
{
    struct sqlite_store *s = store_lock(store);
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_LINK_TYPE_ADD, &st)) == CKR_OK) {
        if (bind_text(st, 1, name) || sqlite3_bind_int64(st, 2, when))
            rv = bind_fail(s, "add link type");
        else if ((rv = tx_begin(s, true)) == CKR_OK) {
            rv = step_done(s, st, "add link type");
            /* Read before the commit: the change count is the connection's last statement's. */
            *added = rv == CKR_OK && sqlite3_changes(s->db) > 0;
            rv = tx_end(s, rv, true);
        }
    }
    store_unlock(s);
    return rv;
}

static CK_RV sq_link_type_get(struct hf_store *store, const char *name)
{
    struct sqlite_store *s = store_lock(store);
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_LINK_TYPE_GET, &st)) == CKR_OK) {
        if (bind_text(st, 1, name))
            rv = bind_fail(s, "read link type");
        else if ((rv = step_row(s, st, "read link type")) == CKR_OK)
            sqlite3_reset(st);
    }
    store_unlock(s);
    return rv;
}

static CK_RV name_row(sqlite3_stmt *st, void *elem)
{
    return col_dup(st, 0, elem) && *(char **)elem ? CKR_OK : CKR_HOST_MEMORY;
}

static CK_RV sq_link_type_list(struct hf_store *store, char ***names, size_t *n)
{
    struct sqlite_store *s = store_lock(store);
    char **l = NULL;
    size_t count = 0;
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_LINK_TYPES_ALL, &st)) == CKR_OK)
        rv = rows_read(s, st, name_row, sizeof(*l), (void **)&l, &count);
    store_unlock(s);
    if (rv != CKR_OK) {
        for (size_t i = 0; i < count; i++)
            free(l[i]);
        free(l);
        return rv;
    }
    *names = l;
    *n = count;
    return CKR_OK;
}

/* ---- meta ---- */

static CK_RV sq_meta_get(struct hf_store *store, const char *name, char **value)
{
    struct sqlite_store *s = store_lock(store);
    sqlite3_stmt *st;
    char *v = NULL;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_META_GET, &st)) != CKR_OK) goto done;
    if (bind_text(st, 1, name)) {
        rv = bind_fail(s, "read meta");
        goto done;
    }
    if ((rv = step_row(s, st, "read meta")) != CKR_OK) goto done;
    if (!col_dup(st, 0, &v) || !v) rv = CKR_HOST_MEMORY;
    sqlite3_reset(st);
done:
    store_unlock(s);
    if (rv == CKR_OK) *value = v;
    return rv;
}

static CK_RV sq_meta_set(struct hf_store *store, const char *name, const char *value)
{
    struct sqlite_store *s = store_lock(store);
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_META_SET, &st)) == CKR_OK) {
        if (bind_text(st, 1, name) || bind_text(st, 2, value))
            rv = bind_fail(s, "write meta");
        else if ((rv = tx_begin(s, true)) == CKR_OK)
            rv = tx_end(s, step_done(s, st, "write meta"), true);
    }
    store_unlock(s);
    return rv;
}

/* One statement, so that processes counting at once (PIN failures) never lose a count. */
static CK_RV sq_meta_count_add(struct hf_store *store, const char *name, uint64_t *count)
{
    struct sqlite_store *s = store_lock(store);
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_META_COUNT, &st)) != CKR_OK) goto done;
    if (bind_text(st, 1, name)) {
        rv = bind_fail(s, "count meta");
        goto done;
    }
    if ((rv = tx_begin(s, true)) != CKR_OK) goto done;
    rv = step_row(s, st, "count meta");
    if (rv == CKR_OK) *count = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    rv = tx_end(s, rv, true);
done:
    store_unlock(s);
    return rv;
}

/* One statement whatever the case, so that of processes swapping at once exactly one sees its
 * expected value (SQLite's write lock serialises them; the WHERE reads the committed row). */
static CK_RV sq_meta_swap(struct hf_store *store, const char *name, const char *expect,
                          const char *value, bool *swapped)
{
    struct sqlite_store *s = store_lock(store);
    enum stmt_id id = expect == NULL ? ST_META_ADD : value == NULL ? ST_META_DROP : ST_META_SWAP;
    sqlite3_stmt *st;
    bool bad;
    CK_RV rv;

    *swapped = false;
    if ((rv = stmt_get(s, id, &st)) != CKR_OK) goto done;
    if (id == ST_META_ADD)
        bad = bind_text(st, 1, name) || bind_text(st, 2, value);
    else if (id == ST_META_DROP)
        bad = bind_text(st, 1, name) || bind_text(st, 2, expect);
    else
        bad = bind_text(st, 1, value) || bind_text(st, 2, name) || bind_text(st, 3, expect);
    if (bad) {
        rv = bind_fail(s, "swap meta");
        goto done;
    }
    if ((rv = tx_begin(s, true)) != CKR_OK) goto done;
    rv = step_done(s, st, "swap meta");
    /* Read before the commit: the change count is the connection's last statement's. */
    *swapped = rv == CKR_OK && sqlite3_changes(s->db) > 0;
    rv = tx_end(s, rv, true);
    if (rv != CKR_OK) *swapped = false;
done:
    store_unlock(s);
    return rv;
}

/* ---- migration to policy MACs ---- */

static CK_RV keys_mac(struct sqlite_store *s, const struct hf_store_migration *m, size_t *n)
{
    struct hf_key *keys = NULL;
    size_t count = 0;
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_KEYS_UNMACED, &st)) == CKR_OK)
        rv = rows_read(s, st, key_row, sizeof(*keys), (void **)&keys, &count);
    for (size_t i = 0; rv == CKR_OK && i < count; i++) {
        if ((rv = labels_load(s, &keys[i])) != CKR_OK || (rv = m->key(m->ctx, &keys[i])) != CKR_OK)
            break;
        if ((rv = stmt_get(s, ST_KEY_SET_MAC, &st)) != CKR_OK) break;
        if (bind_mac(st, 1, mac_of(keys[i].mac, keys[i].has_mac)) || bind_text(st, 2, keys[i].uuid))
            rv = bind_fail(s, "migrate key");
        else if ((rv = step_done(s, st, "migrate key")) == CKR_OK)
            (*n)++;
    }
    keys_free(keys, count);
    return rv;
}

static CK_RV versions_mac(struct sqlite_store *s, const struct hf_store_migration *m, size_t *n)
{
    struct hf_key_version *v = NULL;
    size_t count = 0;
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_VERSIONS_UNMACED, &st)) == CKR_OK)
        rv = rows_read(s, st, version_row, sizeof(*v), (void **)&v, &count);
    for (size_t i = 0; rv == CKR_OK && i < count; i++) {
        if ((rv = m->version(m->ctx, &v[i])) != CKR_OK) break;
        if ((rv = stmt_get(s, ST_VERSION_SET_MAC, &st)) != CKR_OK) break;
        if (bind_blob(st, 1, v[i].wrapped, v[i].wrapped_len) ||
            bind_mac(st, 2, mac_of(v[i].mac, v[i].has_mac)) || sqlite3_bind_int64(st, 3, v[i].id))
            rv = bind_fail(s, "migrate version");
        else if ((rv = step_done(s, st, "migrate version")) == CKR_OK)
            (*n)++;
    }
    versions_free(v, count);
    return rv;
}

static CK_RV links_mac(struct sqlite_store *s, const struct hf_store_migration *m, size_t *n)
{
    struct hf_link *l = NULL;
    size_t count = 0;
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_LINKS_UNMACED, &st)) == CKR_OK)
        rv = rows_read(s, st, link_row, sizeof(*l), (void **)&l, &count);
    for (size_t i = 0; rv == CKR_OK && i < count; i++) {
        if ((rv = m->link(m->ctx, &l[i])) != CKR_OK) break;
        if ((rv = stmt_get(s, ST_LINK_SET_MAC, &st)) != CKR_OK) break;
        if (bind_mac(st, 1, mac_of(l[i].mac, l[i].has_mac)) || sqlite3_bind_int64(st, 2, l[i].id))
            rv = bind_fail(s, "migrate link");
        else if ((rv = step_done(s, st, "migrate link")) == CKR_OK)
            (*n)++;
    }
    links_free(l, count);
    return rv;
}

/* One write transaction (BEGIN IMMEDIATE): a second process migrating at once waits, then finds
 * nothing left to do. The hooks' HSM calls run under the lock: once per store, at first open. */
static CK_RV sq_policy_migrate(struct hf_store *store, const struct hf_store_migration *m,
                               size_t *n)
{
    struct sqlite_store *s = store_lock(store);
    CK_RV rv;

    *n = 0;
    if ((rv = tx_begin(s, true)) == CKR_OK) {
        rv = keys_mac(s, m, n);
        if (rv == CKR_OK) rv = versions_mac(s, m, n);
        if (rv == CKR_OK) rv = links_mac(s, m, n);
        rv = tx_end(s, rv, true);
    }
    store_unlock(s);
    return rv;
}

/* ---- certificate and data objects ---- */

static CK_RV object_row(sqlite3_stmt *st, void *elem)
{
    struct hf_store_object *o = elem;

    memset(o, 0, sizeof(*o));
    o->id = sqlite3_column_int64(st, 0);
    o->cls = (unsigned long)sqlite3_column_int64(st, 1);
    o->is_private = sqlite3_column_int(st, 2) != 0;
    o->created = sqlite3_column_int64(st, 7);
    if (!col_blob(st, 3, &o->label, &o->label_len) || !col_blob(st, 4, &o->ckaid, &o->ckaid_len) ||
        !col_blob(st, 5, &o->value, &o->value_len) || !col_blob(st, 6, &o->attrs, &o->attrs_len)) {
        hf_store_object_clear(o);
        return CKR_HOST_MEMORY;
    }
    return CKR_OK;
}

/* An empty attribute is stored as an empty blob, never NULL: the column says "given, empty". */
static int bind_bytes(sqlite3_stmt *st, int i, const unsigned char *v, size_t len)
{
    return sqlite3_bind_blob64(st, i, v ? (const void *)v : "", len, SQLITE_STATIC);
}

static CK_RV sq_object_insert(struct hf_store *store, struct hf_store_object *obj)
{
    struct sqlite_store *s = store_lock(store);
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_OBJECT_INSERT, &st)) != CKR_OK) goto done;
    if (sqlite3_bind_int64(st, 1, (sqlite3_int64)obj->cls) ||
        sqlite3_bind_int(st, 2, obj->is_private) || bind_bytes(st, 3, obj->label, obj->label_len) ||
        bind_bytes(st, 4, obj->ckaid, obj->ckaid_len) ||
        bind_bytes(st, 5, obj->value, obj->value_len) ||
        bind_bytes(st, 6, obj->attrs, obj->attrs_len) || sqlite3_bind_int64(st, 7, obj->created)) {
        rv = bind_fail(s, "insert object");
        goto done;
    }
    if ((rv = tx_begin(s, true)) != CKR_OK) goto done;
    rv = step_done(s, st, "insert object");
    if (rv == CKR_OK) obj->id = sqlite3_last_insert_rowid(s->db);
    rv = tx_end(s, rv, true);
done:
    store_unlock(s);
    return rv;
}

static CK_RV sq_object_get(struct hf_store *store, int64_t id, struct hf_store_object *out)
{
    struct sqlite_store *s = store_lock(store);
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_OBJECT_GET, &st)) != CKR_OK) goto done;
    if (sqlite3_bind_int64(st, 1, id)) {
        rv = bind_fail(s, "read object");
        goto done;
    }
    if ((rv = step_row(s, st, "read object")) != CKR_OK) goto done;
    rv = object_row(st, out);
    sqlite3_reset(st);
done:
    store_unlock(s);
    return rv;
}

/* One statement whose change count says whether the row was there. */
static CK_RV object_change(struct sqlite_store *s, sqlite3_stmt *st, const char *what)
{
    CK_RV rv = tx_begin(s, true);

    if (rv != CKR_OK) return rv;
    rv = step_done(s, st, what);
    if (rv == CKR_OK && sqlite3_changes(s->db) == 0) rv = CKR_KEY_HANDLE_INVALID;
    return tx_end(s, rv, true);
}

static CK_RV sq_object_update(struct hf_store *store, const struct hf_store_object *obj)
{
    struct sqlite_store *s = store_lock(store);
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_OBJECT_UPDATE, &st)) == CKR_OK) {
        if (bind_bytes(st, 1, obj->label, obj->label_len) ||
            bind_bytes(st, 2, obj->ckaid, obj->ckaid_len) || sqlite3_bind_int64(st, 3, obj->id))
            rv = bind_fail(s, "update object");
        else
            rv = object_change(s, st, "update object");
    }
    store_unlock(s);
    return rv;
}

static CK_RV sq_object_delete(struct hf_store *store, int64_t id)
{
    struct sqlite_store *s = store_lock(store);
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_OBJECT_DELETE, &st)) == CKR_OK) {
        if (sqlite3_bind_int64(st, 1, id))
            rv = bind_fail(s, "delete object");
        else
            rv = object_change(s, st, "delete object");
    }
    store_unlock(s);
    return rv;
}

static CK_RV sq_object_list(struct hf_store *store, struct hf_store_object **objs, size_t *n)
{
    struct sqlite_store *s = store_lock(store);
    struct hf_store_object *list = NULL;
    size_t count = 0;
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_OBJECTS_ALL, &st)) == CKR_OK)
        rv = rows_read(s, st, object_row, sizeof(*list), (void **)&list, &count);
    store_unlock(s);
    if (rv != CKR_OK) {
        for (size_t i = 0; i < count; i++)
            hf_store_object_clear(&list[i]);
        free(list);
        return rv;
    }
    *objs = list;
    *n = count;
    return CKR_OK;
}

/* ---- HSM pools ---- */

static CK_RV pool_from_row(sqlite3_stmt *st, struct hf_store_pool *p)
{
    const unsigned char *mode = sqlite3_column_text(st, 1);

    memset(p, 0, sizeof(*p));
    /* An unknown word reads as mode 0: the MAC check (or hf_store_pool_is_valid) refuses it. */
    if (!mode || !hf_pool_mode_parse((const char *)mode, &p->mode)) p->mode = 0;
    p->created = sqlite3_column_int64(st, 2);
    p->updated = sqlite3_column_int64(st, 3);
    col_mac(st, 4, p->mac, &p->has_mac);
    return col_dup(st, 0, &p->name) && p->name ? CKR_OK : CKR_HOST_MEMORY;
}

static CK_RV member_row(sqlite3_stmt *st, void *elem)
{
    struct hf_store_pool_member *m = elem;

    memset(m, 0, sizeof(*m));
    m->concurrency = (unsigned)sqlite3_column_int64(st, 6);
    if (col_dup(st, 0, &m->name) && col_dup(st, 1, &m->module_path) &&
        col_dup(st, 2, &m->token_label) && col_dup(st, 3, &m->token_serial) &&
        col_dup(st, 4, &m->pin_file) && col_dup(st, 5, &m->pin_env))
        return CKR_OK;
    hf_store_pool_member_clear(m);
    return CKR_HOST_MEMORY;
}

static CK_RV pool_row(sqlite3_stmt *st, void *elem)
{
    return pool_from_row(st, elem);
}

/* Reads p->name's members into p, in order (lock held, inside a transaction). */
static CK_RV members_load(struct sqlite_store *s, struct hf_store_pool *p)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_POOL_MEMBERS_OF, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, p->name)) return bind_fail(s, "read pool members");
    return rows_read(s, st, member_row, sizeof(*p->members), (void **)&p->members, &p->n_members);
}

static CK_RV pool_insert_tx(struct sqlite_store *s, const struct hf_store_pool *p)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_POOL_INSERT, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, p->name) || bind_text(st, 2, hf_pool_mode_name(p->mode)) ||
        sqlite3_bind_int64(st, 3, p->created) || sqlite3_bind_int64(st, 4, p->updated) ||
        bind_mac(st, 5, mac_of(p->mac, p->has_mac)))
        return bind_fail(s, "write pool");
    if ((rv = step_done(s, st, "write pool")) != CKR_OK) return rv;
    for (size_t i = 0; i < p->n_members; i++) {
        const struct hf_store_pool_member *m = &p->members[i];
        if ((rv = stmt_get(s, ST_POOL_MEMBER_INSERT, &st)) != CKR_OK) return rv;
        if (bind_text(st, 1, p->name) || sqlite3_bind_int64(st, 2, (sqlite3_int64)i) ||
            bind_text(st, 3, m->name) || bind_text(st, 4, m->module_path) ||
            bind_text(st, 5, m->token_label) || bind_text(st, 6, m->token_serial) ||
            bind_text(st, 7, m->pin_file) || bind_text(st, 8, m->pin_env) ||
            sqlite3_bind_int64(st, 9, m->concurrency))
            return bind_fail(s, "write pool member");
        if ((rv = step_done(s, st, "write pool member")) != CKR_OK) return rv;
    }
    return CKR_OK;
}

static CK_RV sq_pool_insert(struct hf_store *store, const struct hf_store_pool *pool)
{
    struct sqlite_store *s = store_lock(store);
    CK_RV rv = tx_begin(s, true);

    if (rv == CKR_OK) rv = tx_end(s, pool_insert_tx(s, pool), true);
    store_unlock(s);
    return rv;
}

static CK_RV pool_read(struct sqlite_store *s, const char *name, struct hf_store_pool *out)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_POOL_GET, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, name)) return bind_fail(s, "read pool");
    if ((rv = step_row(s, st, "read pool")) != CKR_OK) return rv;
    rv = pool_from_row(st, out);
    sqlite3_reset(st);
    return rv == CKR_OK ? members_load(s, out) : rv;
}

static CK_RV sq_pool_get(struct hf_store *store, const char *name, struct hf_store_pool *out)
{
    struct sqlite_store *s = store_lock(store);
    struct hf_store_pool p = {0};
    CK_RV rv;

    /* One read transaction: the pool row and its members from one snapshot. */
    if ((rv = tx_begin(s, false)) == CKR_OK) rv = tx_end(s, pool_read(s, name, &p), false);
    store_unlock(s);
    if (rv == CKR_OK)
        *out = p;
    else
        hf_store_pool_clear(&p);
    return rv;
}

static CK_RV pools_read(struct sqlite_store *s, struct hf_store_pool **pools, size_t *n)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_POOLS_ALL, &st)) != CKR_OK) return rv;
    rv = rows_read(s, st, pool_row, sizeof(**pools), (void **)pools, n);
    for (size_t i = 0; rv == CKR_OK && i < *n; i++)
        rv = members_load(s, &(*pools)[i]);
    return rv;
}

static CK_RV sq_pool_list(struct hf_store *store, struct hf_store_pool **pools, size_t *n)
{
    struct sqlite_store *s = store_lock(store);
    struct hf_store_pool *p = NULL;
    size_t count = 0;
    CK_RV rv;

    if ((rv = tx_begin(s, false)) == CKR_OK) rv = tx_end(s, pools_read(s, &p, &count), false);
    store_unlock(s);
    if (rv != CKR_OK) {
        for (size_t i = 0; i < count; i++)
            hf_store_pool_clear(&p[i]);
        free(p);
        return rv;
    }
    *pools = p;
    *n = count;
    return CKR_OK;
}

static CK_RV pool_delete_tx(struct sqlite_store *s, const char *name, const char *source)
{
    sqlite3_stmt *st;
    CK_RV rv;

    /* Inside the write transaction: a key made in the pool meanwhile is seen. */
    if ((rv = stmt_get(s, ST_POOL_IN_USE, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, source)) return bind_fail(s, "delete pool");
    rv = step_row(s, st, "delete pool");
    if (rv == CKR_OK) {
        sqlite3_reset(st);
        hf_log_info("store: pool %s is the source of keys: not deleted", name);
        return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    if (rv != CKR_KEY_HANDLE_INVALID) return rv;
    if ((rv = stmt_get(s, ST_POOL_BACKUPS_DELETE, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, name)) return bind_fail(s, "delete pool");
    if ((rv = step_done(s, st, "delete pool backups")) != CKR_OK) return rv;
    if ((rv = stmt_get(s, ST_POOL_MEMBERS_DELETE, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, name)) return bind_fail(s, "delete pool");
    if ((rv = step_done(s, st, "delete pool members")) != CKR_OK) return rv;
    if ((rv = stmt_get(s, ST_POOL_DELETE, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, name)) return bind_fail(s, "delete pool");
    if ((rv = step_done(s, st, "delete pool")) != CKR_OK) return rv;
    return sqlite3_changes(s->db) > 0 ? CKR_OK : CKR_KEY_HANDLE_INVALID;
}

static CK_RV sq_pool_delete(struct hf_store *store, const char *name, const char *source)
{
    struct sqlite_store *s = store_lock(store);
    CK_RV rv = tx_begin(s, true);

    if (rv == CKR_OK) rv = tx_end(s, pool_delete_tx(s, name, source), true);
    store_unlock(s);
    return rv;
}

static CK_RV pool_backup_get_tx(struct sqlite_store *s, const char *pool, const char *what,
                                unsigned char **blob, size_t *len)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_POOL_BACKUP_GET, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, pool) || bind_text(st, 2, what)) return bind_fail(s, "read pool backup");
    if ((rv = step_row(s, st, "read pool backup")) != CKR_OK) return rv;
    if (!col_blob(st, 0, blob, len)) rv = CKR_HOST_MEMORY;
    sqlite3_reset(st);
    return rv;
}

static CK_RV sq_pool_backup_get(struct hf_store *store, const char *pool, const char *what,
                                unsigned char **blob, size_t *len)
{
    struct sqlite_store *s = store_lock(store);
    CK_RV rv = tx_begin(s, false);

    if (rv == CKR_OK) rv = tx_end(s, pool_backup_get_tx(s, pool, what, blob, len), false);
    store_unlock(s);
    return rv;
}

static CK_RV pool_backup_add_tx(struct sqlite_store *s, const char *pool, const char *what,
                                const unsigned char *blob, size_t len)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_POOL_BACKUP_ADD, &st)) != CKR_OK) return rv;
    if (bind_text(st, 1, pool) || bind_text(st, 2, what) || bind_blob(st, 3, blob, len))
        return bind_fail(s, "write pool backup");
    return step_done(s, st, "write pool backup");
}

static CK_RV sq_pool_backup_add(struct hf_store *store, const char *pool, const char *what,
                                const unsigned char *blob, size_t len)
{
    struct sqlite_store *s = store_lock(store);
    CK_RV rv = tx_begin(s, true);

    if (rv == CKR_OK) rv = tx_end(s, pool_backup_add_tx(s, pool, what, blob, len), true);
    store_unlock(s);
    return rv;
}

/* ---- versions of schema and data ---- */

static CK_RV schema_read(struct sqlite_store *s, int *version)
{
    sqlite3_stmt *st;
    CK_RV rv;

    if ((rv = stmt_get(s, ST_SCHEMA_VERSION, &st)) != CKR_OK) return rv;
    if ((rv = step_row(s, st, "read schema version")) != CKR_OK) return rv;
    *version = sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    return CKR_OK;
}

static CK_RV sq_schema_version(struct hf_store *store, int *version)
{
    struct sqlite_store *s = store_lock(store);
    CK_RV rv = schema_read(s, version);

    store_unlock(s);
    return rv;
}

static CK_RV sq_data_version(struct hf_store *store, uint64_t *version)
{
    struct sqlite_store *s = store_lock(store);
    sqlite3_stmt *st;
    uint64_t dv;
    CK_RV rv;

    /* PRAGMA data_version moves only when another connection commits (it reads the WAL index in
     * shared memory, no disk I/O); our own commits are counted in s->commits. Packing both
     * (each below 2^32 in practice) gives a value that moves on any commit anywhere. */
    if ((rv = stmt_get(s, ST_DATA_VERSION, &st)) == CKR_OK &&
        (rv = step_row(s, st, "read data version")) == CKR_OK) {
        dv = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        *version = (dv << 32) ^ s->commits;
    }
    store_unlock(s);
    return rv;
}

/* ---- open, migrate, close ---- */

static CK_RV exec_sql(struct sqlite_store *s, const char *sql, const char *what)
{
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

    return rc == SQLITE_OK ? CKR_OK : db_fail(s, rc, what);
}

/* Applies the next missing step, if any; *done when the schema is current. */
static CK_RV migrate_step(struct sqlite_store *s, bool *done)
{
    int version = 0;
    CK_RV rv;

    /* IMMEDIATE: two processes opening a fresh store at once must not both run step 1. */
    if ((rv = exec_sql(s, "BEGIN IMMEDIATE", "migrate")) != CKR_OK) return rv;
    rv = exec_sql(s,
                  "CREATE TABLE IF NOT EXISTS schema_version ("
                  "  id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);"
                  "INSERT OR IGNORE INTO schema_version VALUES (1, 0);",
                  "migrate");
    if (rv == CKR_OK) rv = schema_read(s, &version);
    if (rv == CKR_OK && version > N_MIGRATIONS) {
        hf_log_error("store: schema v%d is newer than this build's v%d; upgrade holdfast", version,
                     N_MIGRATIONS);
        rv = CKR_DEVICE_ERROR;
    }
    *done = rv == CKR_OK && version == N_MIGRATIONS;
    if (rv == CKR_OK && !*done) {
        rv = exec_sql(s, migrations[version], "migrate");
        if (rv == CKR_OK)
            rv = exec_sql(s, "UPDATE schema_version SET version = version + 1", "migrate");
        if (rv == CKR_OK) hf_log_info("store: schema migrated to v%d", version + 1);
    }
    stmts_reset(s);
    if (rv == CKR_OK) return exec_sql(s, "COMMIT", "migrate");
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rv;
}

static CK_RV db_configure(struct sqlite_store *s)
{
    sqlite3_stmt *st = NULL;
    CK_RV rv;
    bool wal;

    sqlite3_extended_result_codes(s->db, 1);
    /* Several processes share the file (CLI, gateway, any PKCS#11 program): wait for a writer
     * rather than fail. */
    sqlite3_busy_timeout(s->db, 5000);
    /* secure_delete zeroes freed content: a destroyed key's wrapped material must not linger in
     * free pages of the file, where a copy of the file would still carry it. synchronous=FULL:
     * a created key's wrapped material exists nowhere else, so its commit must survive power
     * loss (in WAL mode NORMAL may lose the last transactions). */
    rv = exec_sql(s,
                  "PRAGMA secure_delete = ON; PRAGMA foreign_keys = ON;"
                  "PRAGMA synchronous = FULL;",
                  "configure");
    if (rv != CKR_OK) return rv;
    /* WAL: readers (every PKCS#11 process) never block the writer nor each other. */
    if (sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, sqlite3_errcode(s->db), "configure");
    wal = sqlite3_step(st) == SQLITE_ROW &&
          strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
    if (!wal) rv = db_fail(s, sqlite3_errcode(s->db), "switch to WAL");
    sqlite3_finalize(st);
    return rv;
}

/* Creates the file with mode 0600 so SQLite never creates it under the umask: wrapped key
 * material lives in it. SQLite gives the -wal and -shm files the database file's mode. */
static CK_RV file_create(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

    if (fd >= 0) return close(fd) == 0 ? CKR_OK : CKR_DEVICE_ERROR;
    if (errno == EEXIST) return CKR_OK;
    hf_log_error("store: cannot create %s: %s", path, strerror(errno));
    return CKR_DEVICE_ERROR;
}

static void sq_close(struct hf_store *store)
{
    struct sqlite_store *s = (struct sqlite_store *)store;

    for (int i = 0; i < N_STMTS; i++)
        sqlite3_finalize(s->stmts[i]);
    if (sqlite3_close(s->db) != SQLITE_OK)
        hf_log_error("store: close failed: %s", sqlite3_errmsg(s->db));
    pthread_mutex_destroy(&s->lock);
    free(s);
}

CK_RV hf_store_sqlite_open(const char *path, struct hf_store **out)
{
    struct sqlite_store *s = NULL;
    bool done = false;
    CK_RV rv;
    int rc;

    if ((rv = file_create(path)) != CKR_OK) return rv;
    if (!(s = calloc(1, sizeof(*s)))) return CKR_HOST_MEMORY;
    s->base.ops = &sqlite_ops;
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        return CKR_HOST_MEMORY;
    }
    rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        rv = s->db ? db_fail(s, rc, "open") : CKR_HOST_MEMORY;
        goto done;
    }
    if ((rv = db_configure(s)) != CKR_OK) goto done;
    while (rv == CKR_OK && !done)
        rv = migrate_step(s, &done);
done:
    if (rv != CKR_OK) {
        hf_log_error("store: cannot open %s", path);
        sq_close(&s->base);
        return rv;
    }
    *out = &s->base;
    return CKR_OK;
}

static const struct hf_store_ops sqlite_ops = {
    .name = "sqlite",
    .close = sq_close,
    .schema_version = sq_schema_version,
    .data_version = sq_data_version,
    .key_insert = sq_key_insert,
    .key_get = sq_key_get,
    .key_list = sq_key_list,
    .key_update = sq_key_update,
    .key_destroy = sq_key_destroy,
    .version_insert = sq_version_insert,
    .version_set_state = sq_version_set_state,
    .version_get = sq_version_get,
    .version_find = sq_version_find,
    .version_find_by_uuid = sq_version_find_by_uuid,
    .version_list = sq_version_list,
    .version_each = sq_version_each,
    .link_insert = sq_link_insert,
    .link_get = sq_link_get,
    .link_set_blocked = sq_link_set_blocked,
    .link_delete = sq_link_delete,
    .link_list = sq_link_list,
    .link_type_add = sq_link_type_add,
    .link_type_get = sq_link_type_get,
    .link_type_list = sq_link_type_list,
    .meta_get = sq_meta_get,
    .meta_set = sq_meta_set,
    .meta_count_add = sq_meta_count_add,
    .meta_swap = sq_meta_swap,
    .policy_migrate = sq_policy_migrate,
    .object_insert = sq_object_insert,
    .object_get = sq_object_get,
    .object_update = sq_object_update,
    .object_delete = sq_object_delete,
    .object_list = sq_object_list,
    .pool_insert = sq_pool_insert,
    .pool_get = sq_pool_get,
    .pool_list = sq_pool_list,
    .pool_delete = sq_pool_delete,
    .pool_backup_get = sq_pool_backup_get,
    .pool_backup_add = sq_pool_backup_add,
};
