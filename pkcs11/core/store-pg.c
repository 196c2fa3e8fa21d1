#include "hf-build.h"

#include "pkcs11/core/store-internal.h"

#include "pkcs11/core/core.h"
#include "pkcs11/core/log.h"
#include "pkcs11/core/pq-api.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The PostgreSQL backend (clusters: every node on one database). Same tables, columns,
 * constraints and migration numbering as store-sqlite.c; the types are PostgreSQL's (BYTEA for
 * BLOB, BIGINT for SQLite's 64-bit INTEGER, identity columns for AUTOINCREMENT: a sequence never
 * hands an id out twice, also across rollbacks).
 *
 * Concurrency across nodes: writes run at READ COMMITTED, and every conditional write is one
 * UPDATE whose WHERE names what the writer read (current_version, the old MAC). PostgreSQL locks
 * the row and, when a concurrent writer changed it first, re-evaluates the WHERE on the newest
 * committed row (EvalPlanQual), so of two rotations from version N exactly one matches; every
 * write that spans rows (labels, versions) starts with that locking UPDATE of the key row. */

/* ---- schema ---- */

static const char *const migrations[] = {
    /* v1 */
    "CREATE TABLE keys ("
    "  uuid TEXT PRIMARY KEY NOT NULL,"
    "  name TEXT NOT NULL UNIQUE,"
    "  alg INTEGER NOT NULL,"
    "  bits INTEGER NOT NULL,"
    "  usage BIGINT NOT NULL,"
    "  state INTEGER NOT NULL CHECK (state BETWEEN 1 AND 5),"
    "  owner TEXT,"
    "  source TEXT,"
    "  exportable INTEGER NOT NULL,"
    "  created BIGINT NOT NULL,"
    "  updated BIGINT NOT NULL,"
    "  current_version BIGINT NOT NULL);"
    "CREATE TABLE key_labels ("
    "  key_uuid TEXT NOT NULL REFERENCES keys(uuid),"
    "  name TEXT NOT NULL,"
    "  value TEXT NOT NULL,"
    "  PRIMARY KEY (key_uuid, name));"
    "CREATE TABLE key_versions ("
    "  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    "  uuid TEXT NOT NULL UNIQUE,"
    "  key_uuid TEXT NOT NULL REFERENCES keys(uuid),"
    "  version BIGINT NOT NULL,"
    "  state INTEGER NOT NULL CHECK (state BETWEEN 1 AND 5),"
    "  created BIGINT NOT NULL,"
    "  kek_label TEXT,"
    "  wrapped BYTEA,"
    "  public_der BYTEA,"
    "  UNIQUE (key_uuid, version));"
    "CREATE TABLE links ("
    "  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    "  type TEXT NOT NULL,"
    "  ext_id TEXT NOT NULL,"
    "  key_uuid TEXT NOT NULL REFERENCES keys(uuid),"
    "  blocked INTEGER NOT NULL DEFAULT 0,"
    "  created BIGINT NOT NULL,"
    "  updated BIGINT NOT NULL,"
    "  UNIQUE (type, ext_id));"
    "CREATE INDEX links_by_key ON links (key_uuid);"
    "CREATE TABLE meta ("
    "  name TEXT PRIMARY KEY NOT NULL,"
    "  value TEXT NOT NULL);",
    /* v2: policy MACs (store-sqlite.c says why they start NULL). */
    "ALTER TABLE keys ADD COLUMN mac BYTEA;"
    "ALTER TABLE key_versions ADD COLUMN mac BYTEA;"
    "ALTER TABLE links ADD COLUMN mac BYTEA;",
    /* v3: the registry of link types. */
    "CREATE TABLE link_types ("
    "  name TEXT PRIMARY KEY NOT NULL,"
    "  created BIGINT NOT NULL);"
    "INSERT INTO link_types (name, created) VALUES ('aws-xks', 0), ('gcp-ekm', 0),"
    "  ('gws-cse', 0), ('oci', 0), ('sap', 0), ('dke', 0);",
    /* v4: certificate and data objects. */
    "CREATE TABLE objects ("
    "  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    "  class BIGINT NOT NULL,"
    "  private INTEGER NOT NULL,"
    "  label BYTEA,"
    "  ckaid BYTEA,"
    "  value BYTEA,"
    "  attrs BYTEA,"
    "  created BIGINT NOT NULL);",
    /* v5: HSM pools. */
    "CREATE TABLE IF NOT EXISTS pools ("
    "  name TEXT PRIMARY KEY NOT NULL,"
    "  mode TEXT NOT NULL CHECK (mode IN ('plain', 'clone', 'export')),"
    "  created BIGINT NOT NULL,"
    "  updated BIGINT NOT NULL,"
    "  mac BYTEA);"
    "CREATE TABLE IF NOT EXISTS pool_members ("
    "  pool TEXT NOT NULL REFERENCES pools(name) ON DELETE CASCADE,"
    "  position BIGINT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  module_path TEXT NOT NULL,"
    "  token_label TEXT,"
    "  token_serial TEXT,"
    "  pin_file TEXT,"
    "  pin_env TEXT,"
    "  concurrency BIGINT NOT NULL CHECK (concurrency BETWEEN 1 AND 1024),"
    "  CHECK (token_label IS NOT NULL OR token_serial IS NOT NULL),"
    "  CHECK ((pin_file IS NULL) != (pin_env IS NULL)),"
    "  PRIMARY KEY (pool, name),"
    "  UNIQUE (pool, position));"
    "CREATE INDEX IF NOT EXISTS keys_by_source ON keys (source);",
    /* v6: an export pool's backups. */
    "CREATE TABLE IF NOT EXISTS pool_backups ("
    "  pool TEXT NOT NULL REFERENCES pools(name) ON DELETE CASCADE,"
    "  what TEXT NOT NULL CHECK (what IN ('backup-kek', 'replication')),"
    "  blob BYTEA NOT NULL,"
    "  PRIMARY KEY (pool, what));",
};
_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == HF_STORE_SCHEMA_VERSION,
               "the PostgreSQL schema steps are numbered as SQLite's");

/* One lock id for schema migration and the policy migration, across nodes. */
#define MIGRATE_LOCK "7213901"

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
#define VERSION_NEEDS_MAC "NOT (state = 5 AND wrapped IS NULL)"
/* SQLite sorts TEXT by bytes; so must we, whatever the database's collation. */
#define BYTES " COLLATE \"C\""

_Static_assert(HF_STATE_DESTROYED == 5, "the SQL below spells destroyed as 5");

enum stmt_id {
    ST_NOTIFY,
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
    [ST_NOTIFY] = "SELECT pg_notify('" HF_STORE_PG_CHANNEL "', $1)",
    [ST_SCHEMA_VERSION] = "SELECT version FROM schema_version WHERE id = 1",
    [ST_KEY_INSERT] = "INSERT INTO keys (" KEY_COLS ") "
                      "VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,1,$12)",
    [ST_KEY_BY_UUID] = "SELECT " KEY_COLS " FROM keys WHERE uuid = $1",
    [ST_KEY_BY_NAME] = "SELECT " KEY_COLS " FROM keys WHERE name = $1",
    [ST_KEY_ALL] = "SELECT " KEY_COLS " FROM keys ORDER BY name" BYTES,
    [ST_KEY_UPDATE] = "UPDATE keys SET name = $1, state = $2, usage = $3, owner = $4, "
                      "exportable = $5, updated = $6, mac = $7 "
                      "WHERE uuid = $8 AND mac IS NOT DISTINCT FROM $9::bytea",
    [ST_KEY_DESTROY] = "UPDATE keys SET state = 5, updated = $1, mac = $2 "
                       "WHERE uuid = $3 AND mac IS NOT DISTINCT FROM $4::bytea",
    [ST_KEY_ROTATE] = "UPDATE keys SET current_version = $1::bigint, updated = $2, mac = $4 "
                      "WHERE uuid = $3 AND current_version = $1::bigint - 1 AND state != 5 "
                      "AND mac IS NOT DISTINCT FROM $5::bytea",
    [ST_LABELS_OF] = "SELECT name, value FROM key_labels WHERE key_uuid = $1 ORDER BY name" BYTES,
    [ST_LABELS_DELETE] = "DELETE FROM key_labels WHERE key_uuid = $1",
    [ST_LABEL_INSERT] = "INSERT INTO key_labels (key_uuid, name, value) VALUES ($1,$2,$3)",
    [ST_VERSION_INSERT] = "INSERT INTO key_versions (uuid, key_uuid, version, state, created, "
                          "kek_label, wrapped, public_der, mac) "
                          "VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9) RETURNING id",
    [ST_VERSION_BY_ID] = "SELECT " VERSION_COLS " FROM key_versions WHERE id = $1",
    [ST_VERSION_BY_NUMBER] =
        "SELECT " VERSION_COLS " FROM key_versions WHERE key_uuid = $1 AND version = $2",
    [ST_VERSION_CURRENT] = "SELECT " VERSION_COLS " FROM key_versions WHERE key_uuid = $1 AND "
                           "version = (SELECT current_version FROM keys WHERE uuid = $1)",
    [ST_VERSION_BY_UUID] = "SELECT " VERSION_COLS " FROM key_versions WHERE uuid = $1",
    [ST_VERSIONS_OF] =
        "SELECT " VERSION_COLS " FROM key_versions WHERE key_uuid = $1 ORDER BY version",
    [ST_VERSIONS_ALL] = "SELECT " VERSION_COLS " FROM key_versions ORDER BY id",
    [ST_VERSIONS_DESTROY] =
        "UPDATE key_versions SET state = 5, wrapped = NULL, mac = NULL WHERE key_uuid = $1",
    [ST_VERSION_SET_STATE] =
        "UPDATE key_versions SET state = $1::integer, mac = $2, wrapped = CASE WHEN "
        "$1::integer = 5 THEN NULL ELSE wrapped END "
        "WHERE id = $3 AND mac IS NOT DISTINCT FROM $4::bytea",
    [ST_LINK_INSERT] = "INSERT INTO links (type, ext_id, key_uuid, blocked, created, updated, "
                       "mac) VALUES ($1,$2,$3,$4,$5,$6,$7) RETURNING id",
    [ST_LINK_GET] = "SELECT " LINK_COLS " FROM links WHERE type = $1 AND ext_id = $2",
    [ST_LINK_BLOCK] = "UPDATE links SET blocked = $1, updated = $2, mac = $3 "
                      "WHERE type = $4 AND ext_id = $5 AND mac IS NOT DISTINCT FROM $6::bytea",
    [ST_LINK_DELETE] = "DELETE FROM links WHERE type = $1 AND ext_id = $2",
    [ST_LINKS_ALL] = "SELECT " LINK_COLS " FROM links ORDER BY type" BYTES ", ext_id" BYTES,
    [ST_LINKS_OF] = "SELECT " LINK_COLS " FROM links WHERE key_uuid = $1 "
                    "ORDER BY type" BYTES ", ext_id" BYTES,
    [ST_META_GET] = "SELECT value FROM meta WHERE name = $1",
    [ST_META_SET] = "INSERT INTO meta (name, value) VALUES ($1, $2) "
                    "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    /* One statement: the row lock of ON CONFLICT DO UPDATE serialises counters across nodes.
     * SQLite's CAST reads a value's leading integer, or 0: so does the substring. */
    [ST_META_COUNT] = "INSERT INTO meta (name, value) VALUES ($1, '1') "
                      "ON CONFLICT (name) DO UPDATE SET value = (COALESCE(substring(meta.value "
                      "FROM '^\\s*([-+]?[0-9]{1,18})')::bigint, 0) + 1)::text "
                      "RETURNING value::bigint",
    /* Each one statement: an UPDATE or DELETE locks the row and re-evaluates its WHERE on the
     * newest committed version, an INSERT ... DO NOTHING waits for a concurrent insert of the
     * name, so of processes swapping at once exactly one matches. */
    [ST_META_ADD] = "INSERT INTO meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
    [ST_META_SWAP] = "UPDATE meta SET value = $1 WHERE name = $2 AND value = $3",
    [ST_META_DROP] = "DELETE FROM meta WHERE name = $1 AND value = $2",
    [ST_OBJECT_INSERT] = "INSERT INTO objects (class, private, label, ckaid, value, attrs, "
                         "created) VALUES ($1,$2,$3,$4,$5,$6,$7) RETURNING id",
    [ST_OBJECT_GET] = "SELECT " OBJECT_COLS " FROM objects WHERE id = $1",
    [ST_OBJECT_UPDATE] = "UPDATE objects SET label = $1, ckaid = $2 WHERE id = $3",
    [ST_OBJECT_DELETE] = "DELETE FROM objects WHERE id = $1",
    [ST_OBJECTS_ALL] = "SELECT " OBJECT_COLS " FROM objects ORDER BY id",
    [ST_KEYS_UNMACED] = "SELECT " KEY_COLS " FROM keys WHERE mac IS NULL",
    [ST_KEY_SET_MAC] = "UPDATE keys SET mac = $1 WHERE uuid = $2 AND mac IS NULL",
    [ST_VERSIONS_UNMACED] =
        "SELECT " VERSION_COLS " FROM key_versions WHERE mac IS NULL AND " VERSION_NEEDS_MAC,
    [ST_VERSION_SET_MAC] =
        "UPDATE key_versions SET wrapped = $1, mac = $2 WHERE id = $3 AND mac IS NULL",
    [ST_LINKS_UNMACED] = "SELECT " LINK_COLS " FROM links WHERE mac IS NULL",
    [ST_LINK_SET_MAC] = "UPDATE links SET mac = $1 WHERE id = $2 AND mac IS NULL",
    [ST_LINK_TYPE_ADD] = "INSERT INTO link_types (name, created) VALUES ($1, $2) "
                         "ON CONFLICT (name) DO NOTHING RETURNING name",
    [ST_LINK_TYPE_GET] = "SELECT name FROM link_types WHERE name = $1",
    [ST_LINK_TYPES_ALL] = "SELECT name FROM link_types ORDER BY name" BYTES,
    [ST_POOL_INSERT] = "INSERT INTO pools (" POOL_COLS ") VALUES ($1,$2,$3,$4,$5)",
    [ST_POOL_MEMBER_INSERT] = "INSERT INTO pool_members (pool, position, " MEMBER_COLS
                              ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
    [ST_POOL_GET] = "SELECT " POOL_COLS " FROM pools WHERE name = $1",
    [ST_POOLS_ALL] = "SELECT " POOL_COLS " FROM pools ORDER BY name" BYTES,
    [ST_POOL_MEMBERS_OF] =
        "SELECT " MEMBER_COLS " FROM pool_members WHERE pool = $1 ORDER BY position",
    [ST_POOL_IN_USE] = "SELECT uuid FROM keys WHERE source = $1 AND state != 5 LIMIT 1",
    [ST_POOL_MEMBERS_DELETE] = "DELETE FROM pool_members WHERE pool = $1",
    [ST_POOL_DELETE] = "DELETE FROM pools WHERE name = $1",
    [ST_POOL_BACKUP_GET] = "SELECT blob FROM pool_backups WHERE pool = $1 AND what = $2",
    /* The first writer wins (the unique index makes a concurrent second one wait, then skip). */
    [ST_POOL_BACKUP_ADD] = "INSERT INTO pool_backups (pool, what, blob) "
                           "SELECT $1::text, $2::text, $3::bytea "
                           "WHERE EXISTS (SELECT 1 FROM pools WHERE name = $1::text) "
                           "ON CONFLICT (pool, what) DO NOTHING",
    [ST_POOL_BACKUPS_DELETE] = "DELETE FROM pool_backups WHERE pool = $1",
};

/* What a write NOTIFYs, so that listeners drop only what it touched (link changes reset the
 * link cache; everything moves the data version). */
#define WHAT_LINK "link"
#define WHAT_OTHER "data"

/* ---- the handle ---- */

/* Connections per handle: enough for a gateway's few concurrent cache misses and writes; a
 * caller beyond it waits for one to come back, so a burst never opens more. */
#define POOL_MAX 4
/* While the database is unreachable, calls answer CKR_DEVICE_ERROR at once; one caller tries a
 * reconnect after BACKOFF_MIN_MS, doubling to BACKOFF_MAX_MS while it keeps failing. The cap is
 * what a recovered server waits for its first success: a refused connect is cheap, a hung one
 * costs its one caller the connect timeout, so a second is no load and keeps recovery near it. */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 1000
/* The client-side bound on one statement (and on a wait for a pooled connection while none comes
 * back, conn_wait_locked): a server that accepted the connection and does not answer (stopped
 * processes, dropped packets, a lock) costs a caller this, then CKR_DEVICE_ERROR, where libpq
 * alone would wait for ever (tcp_user_timeout does not fire while the peer's kernel still
 * acknowledges). Far above any healthy statement (one-row reads and writes take milliseconds),
 * below the seconds a cloud waits for its proxy, so the gateway answers its unavailable error
 * before the cloud times out, and no longer than the gateway's drain (drain_ms, 2 s by
 * default), so a request in flight at SIGTERM is still answered. */
#define STATEMENT_MS 2000

struct pg_conn {
    PGconn *pg;
    bool prepared[N_STMTS]; /* PQprepare'd on this connection (names are per session) */
    bool used;              /* a statement succeeded since check-out: no blind retry */
    bool timed_out;         /* a statement passed STATEMENT_MS: mid-command, never reused */
    bool probe;             /* the one call trying the database while it is down */
};

struct pg_store {
    struct hf_store base;
    char *conninfo;              /* the locator as given (checked to carry no password) */
    char where[160];             /* host:port/dbname, for logs: never the locator itself */
    char token[HF_UUID_LEN + 1]; /* this handle's tag in its notifications */

    /* guards idle, n_idle, n_open, n_opening, down, probing, down_until_us, backoff_ms */
    pthread_mutex_t lock;
    pthread_cond_t returned; /* monotonic: a connection came back, or the store went down */
    struct pg_conn *idle[POOL_MAX];
    size_t n_idle, n_open;
    size_t n_opening;          /* of n_open: connects in progress */
    _Atomic uint64_t moved_us; /* the database last answered, a connection came back or a
                                * connect ended: the pool moves (conn_wait_locked) */
    bool down;                 /* the database failed and no call has reached it since */
    bool probing;              /* while down: a call is trying it; the others fail at once */
    uint64_t down_until_us;    /* while down: no try before this */
    unsigned backoff_ms;

    _Atomic uint64_t commits; /* this handle's own write commits */
    _Atomic uint64_t remote;  /* other handles' commits heard, plus listener reconnects */

    pthread_t listener;
    bool listener_running;
    PGconn *listen_pg; /* the listener thread's (owned by it once started) */
    int wake[2];       /* close: a byte on wake[1] stops the listener */
    _Atomic bool closing;
};

static const struct hf_store_ops pg_ops;

/* ---- connections ---- */

static const char *const conn_keys[] = {
    "connect_timeout",     "application_name", "keepalives_idle",
    "keepalives_interval", "keepalives_count", "tcp_user_timeout",
    "gssencmode",          "dbname",           NULL};

/* The server's notices ("relation already exists, skipping" of an idempotent migration) would
 * go to stderr, which is a PKCS#11 host's: to the debug log instead. */
static void notice_log(void *arg, const char *message)
{
    (void)arg;
    hf_log_debug("store: PostgreSQL says: %.*s", (int)strcspn(message, "\n"), message);
}

/* Defaults first, the locator last: libpq lets the later value win, so the locator's own
 * parameters override these. connect_timeout=2, libpq's least: the connect is the one wait not
 * under STATEMENT_MS, and the caller that tries a down store (conn_get) pays it, so it is kept
 * near that bound; libpq 15 counts it in whole seconds of time(), so a connect gets 1 to 2 s,
 * still far above a healthy one's few milliseconds (SCRAM included). Keepalives (an idle
 * connection) and tcp_user_timeout (a request sent and never acknowledged): a node cut off from the
 * server without a reset notices within ~10 s, rather than the kernel's minutes, and answers
 * CKR_DEVICE_ERROR from then on. gssencmode=disable: libpq's default "prefer" looks for Kerberos
 * credentials before every connect (krb5.conf and the credential cache read inside the host
 * process, strace shows); a locator that wants GSS encryption says so. */
static PGconn *pg_connect(const struct pg_store *s)
{
    const char *values[] = {"2", "holdfast", "5", "2", "2", "10000", "disable", s->conninfo, NULL};
    PGconn *pg = PQconnectdbParams(conn_keys, values, 1);

    if (pg) PQsetNoticeProcessor(pg, notice_log, NULL);
    return pg;
}

/* libpq's message for pg on one log line (it ends in a newline and may span several). */
static const char *pq_message(PGconn *pg, char *buf, size_t len)
{
    size_t n;

    snprintf(buf, len, "%s", pg ? PQerrorMessage(pg) : "out of memory");
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\t') *p = ' ';
    for (n = strlen(buf); n > 0 && buf[n - 1] == ' ';)
        buf[--n] = '\0';
    return buf;
}

static uint64_t now_us(void)
{
    return hf_monotonic_us();
}

static struct pg_conn *conn_open(struct pg_store *s)
{
    struct pg_conn *c = calloc(1, sizeof(*c));

    if (!c) return NULL;
    c->pg = pg_connect(s);
    if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
        char msg[512];
        /* libpq's message names the host and the reason (refused, auth failed), never the
         * password. */
        hf_log_error("store: cannot connect to PostgreSQL at %s: %s", s->where,
                     pq_message(c->pg, msg, sizeof(msg)));
        PQfinish(c->pg);
        free(c);
        return NULL;
    }
    return c;
}

static void conn_close(struct pg_conn *c)
{
    if (!c) return;
    PQfinish(c->pg);
    free(c);
}

static bool conn_is_broken(const struct pg_conn *c)
{
    return PQstatus(c->pg) == CONNECTION_BAD;
}

/* The database failed to answer: calls fail at once until the backoff has passed, and the ones
 * waiting for a connection stop waiting (lock held). */
static void store_down_locked(struct pg_store *s)
{
    s->down = true;
    s->down_until_us = now_us() + s->backoff_ms * 1000ULL;
    s->backoff_ms = s->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : s->backoff_ms * 2;
    pthread_cond_broadcast(&s->returned);
}

/* A time of hf_monotonic_us as a deadline on s->returned's clock (CLOCK_MONOTONIC). */
static struct timespec monotonic_ts(uint64_t us)
{
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000};

    return ts;
}

/* Waits (lock held) until this caller may take a connection: CKR_DEVICE_ERROR while the store is
 * down and its backoff runs or another call is trying it (one connect at a time to a server
 * that may hang each one for the connect timeout), or when for STATEMENT_MS no connection came
 * back (every one is stuck on a server that does not answer). A pool that moves is no hung
 * server: the bound counts from the last answer or return, and not while a connect is in
 * progress (each ends within its own timeout, a failed one marks the store down); a burst on 4
 * connections that waits its turn, or on a slow login (SCRAM under valgrind: seconds), must not
 * fail.
 * *probe: this call tries a down store. */
static CK_RV conn_wait_locked(struct pg_store *s, bool *probe)
{
    uint64_t since = now_us();

    for (;;) {
        uint64_t moved = atomic_load(&s->moved_us);
        uint64_t until = (moved > since ? moved : since) + STATEMENT_MS * 1000ULL;

        if (s->down && (s->probing || now_us() < s->down_until_us)) return CKR_DEVICE_ERROR;
        if (s->n_idle > 0 || s->n_open < POOL_MAX) break;
        if (s->n_opening > 0) {
            pthread_cond_wait(&s->returned, &s->lock);
        } else if (now_us() < until) {
            struct timespec ts = monotonic_ts(until);
            pthread_cond_timedwait(&s->returned, &s->lock, &ts);
        } else {
            hf_log_warn("store: no connection to PostgreSQL at %s came free within %d ms", s->where,
                        STATEMENT_MS);
            return CKR_DEVICE_ERROR;
        }
    }
    *probe = s->down;
    s->probing = s->down;
    return CKR_OK;
}

/* Checks a connection out: an idle one, a new one while fewer than POOL_MAX are open, else
 * waits for one to come back. CKR_DEVICE_ERROR at once while the database is down. */
static CK_RV conn_get(struct pg_store *s, struct pg_conn **out)
{
    struct pg_conn *c = NULL;
    bool probe = false;
    CK_RV rv;

    pthread_mutex_lock(&s->lock);
    if ((rv = conn_wait_locked(s, &probe)) == CKR_OK) {
        if (s->n_idle > 0) {
            c = s->idle[--s->n_idle];
        } else {
            s->n_open++;
            s->n_opening++;
        }
    }
    pthread_mutex_unlock(&s->lock);
    if (rv != CKR_OK) return rv;
    if (!c) {
        c = conn_open(s);
        pthread_mutex_lock(&s->lock);
        s->n_opening--;
        if (!c) {
            s->n_open--;
            s->probing = false;
            store_down_locked(s);
        }
        s->moved_us = now_us();
        pthread_cond_broadcast(&s->returned); /* waiters on a connect in progress: it ended */
        pthread_mutex_unlock(&s->lock);
        if (!c) return CKR_DEVICE_ERROR;
    }
    c->used = false;
    c->probe = probe;
    *out = c;
    return CKR_OK;
}

/* Returns a connection; a broken one (or one left mid-command by a deadline) is dropped, and its
 * slot freed for a new one. A probe that reached the database ends the outage. */
static void conn_put(struct pg_store *s, struct pg_conn *c)
{
    bool broken = c->timed_out || conn_is_broken(c) || PQtransactionStatus(c->pg) != PQTRANS_IDLE;

    pthread_mutex_lock(&s->lock);
    if (c->probe) {
        s->probing = false;
        s->down = s->down && broken;
    }
    s->moved_us = now_us();
    if (broken) {
        s->n_open--;
    } else {
        s->idle[s->n_idle++] = c;
        s->backoff_ms = BACKOFF_MIN_MS; /* it answered: the next outage starts afresh */
        c = NULL;
    }
    pthread_cond_signal(&s->returned);
    pthread_mutex_unlock(&s->lock);
    conn_close(c);
}

/* One connection was found dropped by the server: the idle ones date from before, so they most
 * likely were too (a restart). Closed now, so the retry and the next calls connect afresh rather
 * than each trip over one of them. */
static void idle_flush(struct pg_store *s)
{
    struct pg_conn *dropped[POOL_MAX];
    size_t n;

    pthread_mutex_lock(&s->lock);
    n = s->n_idle;
    memcpy(dropped, s->idle, n * sizeof(*dropped));
    s->n_open -= n;
    s->n_idle = 0;
    pthread_cond_broadcast(&s->returned);
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; i < n; i++)
        conn_close(dropped[i]);
}

/* ---- statements ---- */

#define MAX_PARAMS 12

struct params {
    int n;
    const char *v[MAX_PARAMS];
    int len[MAX_PARAMS];
    int fmt[MAX_PARAMS]; /* 1: binary (BYTEA), 0: text */
    char num[MAX_PARAMS][24];
};

static void p_text(struct params *p, const char *s)
{
    p->v[p->n] = s;
    p->len[p->n] = 0;
    p->fmt[p->n++] = 0;
}

static void p_int(struct params *p, int64_t x)
{
    snprintf(p->num[p->n], sizeof(p->num[p->n]), "%lld", (long long)x);
    p_text(p, p->num[p->n]);
}

/* NULL: SQL NULL; an empty non-NULL one is an empty BYTEA. */
static void p_blob(struct params *p, const unsigned char *b, size_t len)
{
    p->v[p->n] = (const char *)b;
    p->len[p->n] = (int)len;
    p->fmt[p->n++] = 1;
}

static void p_mac(struct params *p, const unsigned char *mac)
{
    p_blob(p, mac, mac ? HF_POLICY_MAC_LEN : 0);
}

static const unsigned char *mac_of(const unsigned char mac[HF_POLICY_MAC_LEN], bool has_mac)
{
    return has_mac ? mac : NULL;
}

/* ---- commands under a deadline ---- */

/* Waits until pg's pending result can be read without blocking (PQgetResult would otherwise wait
 * on the server for ever); false when deadline_us passed first. */
static bool pq_wait(PGconn *pg, uint64_t deadline_us)
{
    while (PQisBusy(pg) && PQstatus(pg) != CONNECTION_BAD) {
        struct pollfd fd = {.fd = PQsocket(pg), .events = POLLIN};
        uint64_t now = now_us();
        int n;

        if (now >= deadline_us) return false;
        n = poll(&fd, 1, (int)((deadline_us - now + 999) / 1000));
        if (n < 0 && errno != EINTR) return false;
        if (n > 0) PQconsumeInput(pg); /* a failure leaves the connection bad: the loop ends */
    }
    return true;
}

/* The result of the command sent on pg, gathered as PQexec does (the last one; a multi-statement
 * string stops at its first error). NULL with *timed_out when the server did not answer by
 * deadline_us: the connection is then mid-command, and only fit for PQfinish. */
static PGresult *pq_results(PGconn *pg, uint64_t deadline_us, bool *timed_out)
{
    PGresult *last = NULL, *res;

    *timed_out = false;
    for (;;) {
        if (!pq_wait(pg, deadline_us)) {
            PQclear(last);
            *timed_out = true;
            return NULL;
        }
        if (!(res = PQgetResult(pg))) return last;
        PQclear(last);
        last = res;
        if (PQstatus(pg) == CONNECTION_BAD) return last;
    }
}

/* The result of the command a PQsend* call (its answer: sent) just sent on c, within
 * STATEMENT_MS; NULL when it was not sent (PQerrorMessage says why) or timed out
 * (c->timed_out). The send itself stays blocking: a statement is far smaller than the socket's
 * buffer, so only the wait for the answer can hang. */
static PGresult *conn_result(struct pg_store *s, struct pg_conn *c, int sent, const char *what)
{
    PGresult *res;

    if (!sent) return NULL;
    res = pq_results(c->pg, now_us() + STATEMENT_MS * 1000ULL, &c->timed_out);
    if (!c->timed_out) atomic_store(&s->moved_us, now_us());
    if (c->timed_out)
        hf_log_error("store: %s: PostgreSQL at %s did not answer within %d ms", what, s->where,
                     STATEMENT_MS);
    return res;
}

static PGresult *conn_exec(struct pg_store *s, struct pg_conn *c, const char *sql, const char *what)
{
    return conn_result(s, c, PQsendQuery(c->pg, sql), what);
}

/* Maps a failed result to the store's codes (store.h). PostgreSQL's primary messages name
 * constraints and columns; the values are in DETAIL, which is never logged. */
static CK_RV result_fail(struct pg_store *s, struct pg_conn *c, PGresult *res, const char *what)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

    if (c->timed_out) return CKR_DEVICE_ERROR; /* logged by conn_result */
    if (state && strcmp(state, "23503") == 0) return CKR_KEY_HANDLE_INVALID; /* foreign key */
    if (state && strncmp(state, "23", 2) == 0) {
        hf_log_debug("store: %s: %s", what, msg ? msg : state);
        return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    if (conn_is_broken(c)) {
        hf_log_warn("store: %s: lost the connection to PostgreSQL at %s", what, s->where);
        return CKR_DEVICE_ERROR;
    }
    char buf[512];
    hf_log_error("store: %s failed: %s (%s)", what, msg ? msg : pq_message(c->pg, buf, sizeof(buf)),
                 state ? state : "no SQLSTATE");
    return CKR_DEVICE_ERROR;
}

/* Runs prepared statement id (preparing it on first use on this connection). CKR_OK with *out
 * the result (PQclear it), or the mapped failure. */
static CK_RV run(struct pg_store *s, struct pg_conn *c, enum stmt_id id, const struct params *p,
                 const char *what, PGresult **out)
{
    char name[16];
    PGresult *res;
    ExecStatusType st;

    *out = NULL;
    snprintf(name, sizeof(name), "hf%d", (int)id);
    if (!c->prepared[id]) {
        res = conn_result(s, c, PQsendPrepare(c->pg, name, stmt_sql[id], 0, NULL), what);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            CK_RV rv = result_fail(s, c, res, what);
            PQclear(res);
            return rv;
        }
        PQclear(res);
        c->prepared[id] = true;
    }
    res = conn_result(s, c,
                      PQsendQueryPrepared(c->pg, name, p ? p->n : 0, p ? p->v : NULL,
                                          p ? p->len : NULL, p ? p->fmt : NULL, 0),
                      what);
    st = PQresultStatus(res);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        CK_RV rv = result_fail(s, c, res, what);
        PQclear(res);
        return rv;
    }
    c->used = true;
    *out = res;
    return CKR_OK;
}

/* A statement whose result is only its row count (*changed may be NULL). */
static CK_RV run_count(struct pg_store *s, struct pg_conn *c, enum stmt_id id,
                       const struct params *p, const char *what, long *changed)
{
    PGresult *res;
    CK_RV rv = run(s, c, id, p, what, &res);

    if (rv == CKR_OK && changed) *changed = strtol(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return rv;
}

/* A lookup of one row: CKR_OK with *out holding it (row 0), CKR_KEY_HANDLE_INVALID for none. */
static CK_RV run_row(struct pg_store *s, struct pg_conn *c, enum stmt_id id, const struct params *p,
                     const char *what, PGresult **out)
{
    CK_RV rv = run(s, c, id, p, what, out);

    if (rv == CKR_OK && PQntuples(*out) == 0) {
        PQclear(*out);
        *out = NULL;
        rv = CKR_KEY_HANDLE_INVALID;
    }
    return rv;
}

static CK_RV exec_simple(struct pg_store *s, struct pg_conn *c, const char *sql, const char *what)
{
    PGresult *res = conn_exec(s, c, sql, what);
    ExecStatusType st = PQresultStatus(res);
    CK_RV rv = CKR_OK;

    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        rv = result_fail(s, c, res, what);
    else
        c->used = true;
    PQclear(res);
    return rv;
}

/* ---- transactions ---- */

/* A connection mid-command (a deadline) or gone takes its transaction with it when closed. */
static void rollback(struct pg_store *s, struct pg_conn *c)
{
    if (!c->timed_out && !conn_is_broken(c)) PQclear(conn_exec(s, c, "ROLLBACK", "rollback"));
}

enum tx_kind {
    TX_NONE,  /* one statement, autocommit */
    TX_READ,  /* several reads from one snapshot */
    TX_WRITE, /* a change: whole or not at all, announced to every node */
};

typedef CK_RV (*tx_fn)(struct pg_store *s, struct pg_conn *c, void *arg);

static CK_RV notify(struct pg_store *s, struct pg_conn *c, const char *what)
{
    char payload[HF_UUID_LEN + 16];
    struct params p = {0};

    snprintf(payload, sizeof(payload), "%s %s", s->token, what);
    p_text(&p, payload);
    return run_count(s, c, ST_NOTIFY, &p, "notify", NULL);
}

/* Runs fn on one connection inside the transaction kind asks for. A write NOTIFYs before its
 * COMMIT: PostgreSQL delivers the notification at commit, and never for a rollback. */
static CK_RV tx_run_on(struct pg_store *s, struct pg_conn *c, enum tx_kind kind, const char *what,
                       tx_fn fn, void *arg)
{
    static const char *const begin[] = {
        [TX_READ] = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        [TX_WRITE] = "BEGIN ISOLATION LEVEL READ COMMITTED",
    };
    CK_RV rv = CKR_OK;

    if (kind != TX_NONE) rv = exec_simple(s, c, begin[kind], "begin");
    if (rv != CKR_OK) return rv;
    rv = fn(s, c, arg);
    if (kind == TX_NONE) return rv;
    if (rv == CKR_OK && kind == TX_WRITE && what) rv = notify(s, c, what);
    if (rv == CKR_OK) {
        PGresult *res = conn_exec(s, c, "COMMIT", "commit");
        /* A COMMIT of a failed transaction answers ROLLBACK: that is no commit. */
        if (PQresultStatus(res) != PGRES_COMMAND_OK || strcmp(PQcmdStatus(res), "COMMIT") != 0)
            rv = result_fail(s, c, res, "commit");
        PQclear(res);
        if (rv == CKR_OK && kind == TX_WRITE) atomic_fetch_add(&s->commits, 1);
        return rv;
    }
    rollback(s, c);
    return rv;
}

/* One call of the store: a connection checked out, fn run in its transaction, the connection
 * put back. A pooled connection the server dropped (a restart, an idle timeout) fails on its
 * first statement: then, and only then (nothing reached the database), the call is run once
 * more on a fresh connection. notify_what: what a TX_WRITE announces (WHAT_LINK, WHAT_OTHER). */
static CK_RV tx_run(struct pg_store *s, enum tx_kind kind, const char *notify_what, tx_fn fn,
                    void *arg)
{
    struct pg_conn *c;
    CK_RV rv;

    for (int attempt = 0;; attempt++) {
        if ((rv = conn_get(s, &c)) != CKR_OK) return rv;
        rv = tx_run_on(s, c, kind, notify_what, fn, arg);
        bool lost = rv == CKR_DEVICE_ERROR && (c->timed_out || conn_is_broken(c));
        /* A server that does not answer would only cost the retry another deadline. */
        bool retry = lost && !c->timed_out && !c->used && attempt == 0;
        if (lost) idle_flush(s);
        if (lost && !retry) {
            pthread_mutex_lock(&s->lock);
            store_down_locked(s);
            pthread_mutex_unlock(&s->lock);
            hf_log_error("store: PostgreSQL at %s does not answer", s->where);
        }
        conn_put(s, c);
        if (!retry) return rv;
    }
}

/* ---- columns ---- */

static void uuid_lower(const char *in, char out[HF_UUID_LEN + 1])
{
    size_t i;

    for (i = 0; i < HF_UUID_LEN && in[i]; i++)
        out[i] = (char)tolower((unsigned char)in[i]);
    out[i] = '\0';
}

static int64_t col_int(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static bool col_dup(const PGresult *r, int row, int col, char **out)
{
    *out = PQgetisnull(r, row, col) ? NULL : strdup(PQgetvalue(r, row, col));
    return PQgetisnull(r, row, col) || *out;
}

/* BYTEA comes as text ("\x..." hex); the copy is malloc'd (callers free() it). */
static bool col_blob(const PGresult *r, int row, int col, unsigned char **out, size_t *len)
{
    unsigned char *raw;
    size_t n = 0;

    *out = NULL;
    *len = 0;
    if (PQgetisnull(r, row, col)) return true;
    if (!(raw = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, col), &n))) return false;
    /* malloc(0) may answer NULL: an empty value is kept as a 1-byte buffer of length 0. */
    if ((*out = malloc(n ? n : 1))) {
        memcpy(*out, raw, n);
        *len = n;
    }
    PQfreemem(raw);
    return *out != NULL;
}

/* A MAC of any other length is read as none: the check refuses it the same way. */
static void col_mac(const PGresult *r, int row, int col, unsigned char mac[HF_POLICY_MAC_LEN],
                    bool *has_mac)
{
    unsigned char *b = NULL;
    size_t n = 0;

    *has_mac = col_blob(r, row, col, &b, &n) && b && n == HF_POLICY_MAC_LEN;
    if (*has_mac) memcpy(mac, b, HF_POLICY_MAC_LEN);
    free(b);
}

static void col_uuid(const PGresult *r, int row, int col, char out[HF_UUID_LEN + 1])
{
    uuid_lower(PQgetisnull(r, row, col) ? "" : PQgetvalue(r, row, col), out);
}

/* Row i of a result into *elem (its type's struct, zeroed first; freed again on failure). */
typedef CK_RV (*row_fn)(const PGresult *r, int i, void *elem);

static CK_RV key_from_row(const PGresult *r, int i, void *elem)
{
    struct hf_key *k = elem;

    memset(k, 0, sizeof(*k));
    col_uuid(r, i, 0, k->uuid);
    k->alg = (enum hf_alg)col_int(r, i, 2);
    k->bits = (unsigned)col_int(r, i, 3);
    k->usage = (unsigned long)col_int(r, i, 4);
    k->state = (unsigned long)col_int(r, i, 5);
    k->exportable = col_int(r, i, 8) != 0;
    k->created = col_int(r, i, 9);
    k->updated = col_int(r, i, 10);
    k->current_version = (unsigned)col_int(r, i, 11);
    col_mac(r, i, 12, k->mac, &k->has_mac);
    if (col_dup(r, i, 1, &k->name) && col_dup(r, i, 6, &k->owner) && col_dup(r, i, 7, &k->source))
        return CKR_OK;
    hf_key_clear(k);
    return CKR_HOST_MEMORY;
}

static CK_RV version_from_row(const PGresult *r, int i, void *elem)
{
    struct hf_key_version *v = elem;

    memset(v, 0, sizeof(*v));
    v->id = col_int(r, i, 0);
    col_uuid(r, i, 1, v->uuid);
    col_uuid(r, i, 2, v->key_uuid);
    v->version = (unsigned)col_int(r, i, 3);
    v->state = (unsigned long)col_int(r, i, 4);
    v->created = col_int(r, i, 5);
    col_mac(r, i, 9, v->mac, &v->has_mac);
    if (col_dup(r, i, 6, &v->kek_label) && col_blob(r, i, 7, &v->wrapped, &v->wrapped_len) &&
        col_blob(r, i, 8, &v->public_der, &v->public_der_len))
        return CKR_OK;
    hf_key_version_clear(v);
    return CKR_HOST_MEMORY;
}

static CK_RV link_from_row(const PGresult *r, int i, void *elem)
{
    struct hf_link *l = elem;

    memset(l, 0, sizeof(*l));
    l->id = col_int(r, i, 0);
    col_uuid(r, i, 3, l->key_uuid);
    l->blocked = col_int(r, i, 4) != 0;
    l->created = col_int(r, i, 5);
    l->updated = col_int(r, i, 6);
    col_mac(r, i, 7, l->mac, &l->has_mac);
    if (col_dup(r, i, 1, &l->type) && col_dup(r, i, 2, &l->ext_id)) return CKR_OK;
    hf_link_clear(l);
    return CKR_HOST_MEMORY;
}

static CK_RV object_from_row(const PGresult *r, int i, void *elem)
{
    struct hf_store_object *o = elem;

    memset(o, 0, sizeof(*o));
    o->id = col_int(r, i, 0);
    o->cls = (unsigned long)col_int(r, i, 1);
    o->is_private = col_int(r, i, 2) != 0;
    o->created = col_int(r, i, 7);
    if (col_blob(r, i, 3, &o->label, &o->label_len) &&
        col_blob(r, i, 4, &o->ckaid, &o->ckaid_len) &&
        col_blob(r, i, 5, &o->value, &o->value_len) && col_blob(r, i, 6, &o->attrs, &o->attrs_len))
        return CKR_OK;
    hf_store_object_clear(o);
    return CKR_HOST_MEMORY;
}

static CK_RV pool_from_row(const PGresult *r, int i, void *elem)
{
    struct hf_store_pool *p = elem;

    memset(p, 0, sizeof(*p));
    /* An unknown word reads as mode 0: the MAC check (or hf_store_pool_is_valid) refuses it. */
    if (PQgetisnull(r, i, 1) || !hf_pool_mode_parse(PQgetvalue(r, i, 1), &p->mode)) p->mode = 0;
    p->created = col_int(r, i, 2);
    p->updated = col_int(r, i, 3);
    col_mac(r, i, 4, p->mac, &p->has_mac);
    return col_dup(r, i, 0, &p->name) && p->name ? CKR_OK : CKR_HOST_MEMORY;
}

static CK_RV member_from_row(const PGresult *r, int i, void *elem)
{
    struct hf_store_pool_member *m = elem;

    memset(m, 0, sizeof(*m));
    m->concurrency = (unsigned)col_int(r, i, 6);
    if (col_dup(r, i, 0, &m->name) && col_dup(r, i, 1, &m->module_path) &&
        col_dup(r, i, 2, &m->token_label) && col_dup(r, i, 3, &m->token_serial) &&
        col_dup(r, i, 4, &m->pin_file) && col_dup(r, i, 5, &m->pin_env))
        return CKR_OK;
    hf_store_pool_member_clear(m);
    return CKR_HOST_MEMORY;
}

static CK_RV name_from_row(const PGresult *r, int i, void *elem)
{
    char **out = elem;

    return col_dup(r, i, 0, out) && *out ? CKR_OK : CKR_HOST_MEMORY;
}

/* Every row of res (cleared) into a calloc'd array through fn (elem bytes each). On failure the
 * array holds the *n rows read, for the caller to free. */
static CK_RV rows_read(PGresult *res, row_fn fn, size_t elem, void **arr, size_t *n)
{
    size_t rows = (size_t)PQntuples(res);
    CK_RV rv = CKR_OK;

    *arr = NULL;
    *n = 0;
    if (rows && !(*arr = calloc(rows, elem))) rv = CKR_HOST_MEMORY;
    for (size_t i = 0; rv == CKR_OK && i < rows; i++) {
        if ((rv = fn(res, (int)i, (char *)*arr + i * elem)) == CKR_OK) (*n)++;
    }
    PQclear(res);
    return rv;
}

/* Runs statement id and reads all its rows. */
static CK_RV run_rows(struct pg_store *s, struct pg_conn *c, enum stmt_id id,
                      const struct params *p, const char *what, row_fn fn, size_t elem, void **arr,
                      size_t *n)
{
    PGresult *res;
    CK_RV rv = run(s, c, id, p, what, &res);

    *arr = NULL;
    *n = 0;
    return rv == CKR_OK ? rows_read(res, fn, elem, arr, n) : rv;
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

/* ---- keys ---- */

static CK_RV labels_load(struct pg_store *s, struct pg_conn *c, struct hf_key *k)
{
    struct params p = {0};
    PGresult *res;
    CK_RV rv;
    int rows;

    p_text(&p, k->uuid);
    if ((rv = run(s, c, ST_LABELS_OF, &p, "read labels", &res)) != CKR_OK) return rv;
    rows = PQntuples(res);
    if (rows > 0 && !(k->labels = calloc((size_t)rows, sizeof(*k->labels)))) rv = CKR_HOST_MEMORY;
    for (int i = 0; rv == CKR_OK && i < rows; i++) {
        /* Counted before the copies, so hf_key_clear frees a half-read label. */
        k->n_labels++;
        if (!col_dup(res, i, 0, &k->labels[i].name) || !col_dup(res, i, 1, &k->labels[i].value))
            rv = CKR_HOST_MEMORY;
    }
    PQclear(res);
    return rv;
}

static CK_RV labels_write(struct pg_store *s, struct pg_conn *c, const char *uuid,
                          const struct hf_key *k)
{
    CK_RV rv = CKR_OK;

    for (size_t i = 0; rv == CKR_OK && i < k->n_labels; i++) {
        struct params p = {0};
        p_text(&p, uuid);
        p_text(&p, k->labels[i].name);
        p_text(&p, k->labels[i].value);
        rv = run_count(s, c, ST_LABEL_INSERT, &p, "write label", NULL);
    }
    return rv;
}

static CK_RV key_read(struct pg_store *s, struct pg_conn *c, const char *ref, struct hf_key *out)
{
    char uuid[HF_UUID_LEN + 1];
    bool by_uuid = hf_uuid_is_valid(ref);
    struct params p = {0};
    PGresult *res;
    CK_RV rv;

    if (by_uuid) uuid_lower(ref, uuid);
    p_text(&p, by_uuid ? uuid : ref);
    rv = run_row(s, c, by_uuid ? ST_KEY_BY_UUID : ST_KEY_BY_NAME, &p, "read key", &res);
    if (rv != CKR_OK) return rv;
    rv = key_from_row(res, 0, out);
    PQclear(res);
    if (rv == CKR_OK) rv = labels_load(s, c, out);
    if (rv != CKR_OK) hf_key_clear(out);
    return rv;
}

static CK_RV keys_read(struct pg_store *s, struct pg_conn *c, struct hf_key **keys, size_t *n)
{
    CK_RV rv = run_rows(s, c, ST_KEY_ALL, NULL, "list keys", key_from_row, sizeof(**keys),
                        (void **)keys, n);

    for (size_t i = 0; rv == CKR_OK && i < *n; i++)
        rv = labels_load(s, c, &(*keys)[i]);
    return rv;
}

static CK_RV version_write(struct pg_store *s, struct pg_conn *c, const struct hf_key_version *v,
                           const char *key_uuid, unsigned version, int64_t *id)
{
    char uuid[HF_UUID_LEN + 1];
    struct params p = {0};
    PGresult *res;
    CK_RV rv;

    uuid_lower(v->uuid, uuid);
    p_text(&p, uuid);
    p_text(&p, key_uuid);
    p_int(&p, version);
    p_int(&p, (int64_t)v->state);
    p_int(&p, v->created);
    p_text(&p, v->kek_label);
    p_blob(&p, v->wrapped, v->wrapped_len);
    p_blob(&p, v->public_der, v->public_der_len);
    p_mac(&p, mac_of(v->mac, v->has_mac));
    if ((rv = run_row(s, c, ST_VERSION_INSERT, &p, "write version", &res)) != CKR_OK) return rv;
    *id = col_int(res, 0, 0);
    PQclear(res);
    return CKR_OK;
}

struct key_write {
    const struct hf_key *key;
    struct hf_key_version *v; /* key_insert: v1 */
    const char *uuid;
    const unsigned char *mac, *old_mac;
    int64_t when, id;
};

static CK_RV key_insert_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct key_write *w = arg;
    const struct hf_key *key = w->key;
    struct params p = {0};
    CK_RV rv;

    p_text(&p, w->uuid);
    p_text(&p, key->name);
    p_int(&p, key->alg);
    p_int(&p, key->bits);
    p_int(&p, (int64_t)key->usage);
    p_int(&p, (int64_t)key->state);
    p_text(&p, key->owner);
    p_text(&p, key->source);
    p_int(&p, key->exportable);
    p_int(&p, key->created);
    p_int(&p, key->updated);
    p_mac(&p, mac_of(key->mac, key->has_mac));
    if ((rv = run_count(s, c, ST_KEY_INSERT, &p, "write key", NULL)) != CKR_OK) return rv;
    if ((rv = labels_write(s, c, w->uuid, key)) != CKR_OK) return rv;
    return version_write(s, c, w->v, w->uuid, 1, &w->id);
}

static CK_RV pg_key_insert(struct hf_store *store, const struct hf_key *key,
                           struct hf_key_version *v1)
{
    struct pg_store *s = (struct pg_store *)store;
    char uuid[HF_UUID_LEN + 1];
    struct key_write w = {.key = key, .v = v1, .uuid = uuid};
    CK_RV rv;

    uuid_lower(key->uuid, uuid);
    rv = tx_run(s, TX_WRITE, WHAT_OTHER, key_insert_tx, &w);
    if (rv == CKR_OK) {
        v1->id = w.id;
        v1->version = 1;
        memcpy(v1->key_uuid, uuid, sizeof(uuid));
    }
    return rv;
}

struct key_get {
    const char *ref;
    struct hf_key k;
};

static CK_RV key_get_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct key_get *g = arg;

    hf_key_clear(&g->k); /* a retried call starts afresh */
    return key_read(s, c, g->ref, &g->k);
}

static CK_RV pg_key_get(struct hf_store *store, const char *ref, struct hf_key *out)
{
    struct key_get g = {.ref = ref};
    /* One snapshot: the key row and its labels. */
    CK_RV rv = tx_run((struct pg_store *)store, TX_READ, NULL, key_get_tx, &g);

    if (rv == CKR_OK) *out = g.k;
    return rv;
}

struct key_list {
    struct hf_key *keys;
    size_t n;
};

static CK_RV key_list_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct key_list *l = arg;

    keys_free(l->keys, l->n);
    l->keys = NULL;
    l->n = 0;
    return keys_read(s, c, &l->keys, &l->n);
}

static CK_RV pg_key_list(struct hf_store *store, struct hf_key **keys, size_t *n)
{
    struct key_list l = {0};
    CK_RV rv = tx_run((struct pg_store *)store, TX_READ, NULL, key_list_tx, &l);

    if (rv != CKR_OK) {
        keys_free(l.keys, l.n);
        return rv;
    }
    *keys = l.keys;
    *n = l.n;
    return CKR_OK;
}

/* A conditional write changed nothing: no such key, or its MAC moved on meanwhile. */
static CK_RV key_missed(struct pg_store *s, struct pg_conn *c, const char *uuid, const char *what)
{
    struct params p = {0};
    PGresult *res;
    CK_RV rv;

    p_text(&p, uuid);
    if ((rv = run_row(s, c, ST_KEY_BY_UUID, &p, what, &res)) != CKR_OK) return rv;
    PQclear(res);
    hf_log_info("store: %s: key %s changed meanwhile", what, uuid);
    return CKR_ATTRIBUTE_VALUE_INVALID;
}

static CK_RV key_update_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct key_write *w = arg;
    const struct hf_key *key = w->key;
    struct params p = {0};
    long changed = 0;
    CK_RV rv;

    p_text(&p, key->name);
    p_int(&p, (int64_t)key->state);
    p_int(&p, (int64_t)key->usage);
    p_text(&p, key->owner);
    p_int(&p, key->exportable);
    p_int(&p, key->updated);
    p_mac(&p, mac_of(key->mac, key->has_mac));
    p_text(&p, w->uuid);
    p_mac(&p, w->old_mac);
    if ((rv = run_count(s, c, ST_KEY_UPDATE, &p, "update key", &changed)) != CKR_OK) return rv;
    if (changed == 0) return key_missed(s, c, w->uuid, "update key");
    memset(&p, 0, sizeof(p));
    p_text(&p, w->uuid);
    if ((rv = run_count(s, c, ST_LABELS_DELETE, &p, "update labels", NULL)) != CKR_OK) return rv;
    return labels_write(s, c, w->uuid, key);
}

static CK_RV pg_key_update(struct hf_store *store, const struct hf_key *key,
                           const unsigned char *old_mac)
{
    char uuid[HF_UUID_LEN + 1];
    struct key_write w = {.key = key, .uuid = uuid, .old_mac = old_mac};

    uuid_lower(key->uuid, uuid);
    return tx_run((struct pg_store *)store, TX_WRITE, WHAT_OTHER, key_update_tx, &w);
}

static CK_RV key_destroy_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct key_write *w = arg;
    struct params p = {0};
    long changed = 0;
    CK_RV rv;

    p_int(&p, w->when);
    p_mac(&p, w->mac);
    p_text(&p, w->uuid);
    p_mac(&p, w->old_mac);
    if ((rv = run_count(s, c, ST_KEY_DESTROY, &p, "destroy key", &changed)) != CKR_OK) return rv;
    if (changed == 0) return key_missed(s, c, w->uuid, "destroy key");
    memset(&p, 0, sizeof(p));
    p_text(&p, w->uuid);
    return run_count(s, c, ST_VERSIONS_DESTROY, &p, "destroy versions", NULL);
}

/* Unlike SQLite's secure_delete, PostgreSQL keeps a destroyed version's old row (and its WAL)
 * until VACUUM and WAL recycling reuse the space: README says so. */
static CK_RV pg_key_destroy(struct hf_store *store, const char *ref, int64_t when,
                            const unsigned char *mac, const unsigned char *old_mac)
{
    char uuid[HF_UUID_LEN + 1];
    struct key_write w = {.uuid = uuid, .mac = mac, .old_mac = old_mac, .when = when};

    uuid_lower(ref, uuid);
    return tx_run((struct pg_store *)store, TX_WRITE, WHAT_OTHER, key_destroy_tx, &w);
}

/* ---- versions ---- */

static CK_RV version_insert_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct key_write *w = arg;
    struct params p = {0};
    long changed = 0;
    PGresult *res;
    CK_RV rv;

    /* The conditional update is the rotation lock (see the top of this file). */
    p_int(&p, w->v->version);
    p_int(&p, w->when);
    p_text(&p, w->uuid);
    p_mac(&p, w->mac);
    p_mac(&p, w->old_mac);
    if ((rv = run_count(s, c, ST_KEY_ROTATE, &p, "rotate key", &changed)) != CKR_OK) return rv;
    if (changed == 0) {
        memset(&p, 0, sizeof(p));
        p_text(&p, w->uuid);
        if ((rv = run_row(s, c, ST_KEY_BY_UUID, &p, "rotate key", &res)) != CKR_OK) return rv;
        PQclear(res);
        return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    return version_write(s, c, w->v, w->uuid, w->v->version, &w->id);
}

static CK_RV pg_version_insert(struct hf_store *store, struct hf_key_version *v, int64_t when,
                               const unsigned char *key_mac, const unsigned char *old_key_mac)
{
    char uuid[HF_UUID_LEN + 1];
    struct key_write w = {
        .v = v, .uuid = uuid, .mac = key_mac, .old_mac = old_key_mac, .when = when};
    CK_RV rv;

    uuid_lower(v->key_uuid, uuid);
    rv = tx_run((struct pg_store *)store, TX_WRITE, WHAT_OTHER, version_insert_tx, &w);
    if (rv == CKR_OK) v->id = w.id;
    return rv;
}

struct version_state {
    const struct hf_key_version *v;
    const unsigned char *old_mac;
};

static CK_RV version_state_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    const char *what = "set version state";
    struct version_state *w = arg;
    struct params p = {0};
    long changed = 0;
    PGresult *res;
    CK_RV rv;

    p_int(&p, (int64_t)w->v->state);
    p_mac(&p, mac_of(w->v->mac, w->v->has_mac));
    p_int(&p, w->v->id);
    p_mac(&p, w->old_mac);
    if ((rv = run_count(s, c, ST_VERSION_SET_STATE, &p, what, &changed)) != CKR_OK) return rv;
    if (changed > 0) return CKR_OK;
    memset(&p, 0, sizeof(p));
    p_int(&p, w->v->id);
    if ((rv = run_row(s, c, ST_VERSION_BY_ID, &p, what, &res)) != CKR_OK) return rv;
    PQclear(res);
    hf_log_info("store: %s: version %lld changed meanwhile", what, (long long)w->v->id);
    return CKR_ATTRIBUTE_VALUE_INVALID;
}

static CK_RV pg_version_set_state(struct hf_store *store, const struct hf_key_version *v,
                                  const unsigned char *old_mac)
{
    struct version_state w = {v, old_mac};

    return tx_run((struct pg_store *)store, TX_WRITE, WHAT_OTHER, version_state_tx, &w);
}

/* One version row by the statement id with params p. */
struct version_get {
    enum stmt_id id;
    struct params p;
    struct hf_key_version v;
};

static CK_RV version_get_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct version_get *g = arg;
    PGresult *res;
    CK_RV rv = run_row(s, c, g->id, &g->p, "read version", &res);

    if (rv != CKR_OK) return rv;
    rv = version_from_row(res, 0, &g->v);
    PQclear(res);
    return rv;
}

static CK_RV version_get(struct pg_store *s, struct version_get *g, struct hf_key_version *out)
{
    CK_RV rv = tx_run(s, TX_NONE, NULL, version_get_tx, g);

    if (rv == CKR_OK) *out = g->v;
    return rv;
}

static CK_RV pg_version_get(struct hf_store *store, int64_t id, struct hf_key_version *out)
{
    struct version_get g = {.id = ST_VERSION_BY_ID};

    p_int(&g.p, id);
    return version_get((struct pg_store *)store, &g, out);
}

static CK_RV pg_version_find(struct hf_store *store, const char *key_uuid, unsigned version,
                             struct hf_key_version *out)
{
    struct version_get g = {.id = version ? ST_VERSION_BY_NUMBER : ST_VERSION_CURRENT};
    char uuid[HF_UUID_LEN + 1];

    uuid_lower(key_uuid, uuid);
    p_text(&g.p, uuid);
    if (version) p_int(&g.p, version);
    return version_get((struct pg_store *)store, &g, out);
}

static CK_RV pg_version_find_by_uuid(struct hf_store *store, const char *version_uuid,
                                     struct hf_key_version *out)
{
    struct version_get g = {.id = ST_VERSION_BY_UUID};
    char uuid[HF_UUID_LEN + 1];

    uuid_lower(version_uuid, uuid);
    p_text(&g.p, uuid);
    return version_get((struct pg_store *)store, &g, out);
}

/* A list read: statement id with params p, rows through fn. */
struct list_read {
    enum stmt_id id;
    struct params p;
    const char *what;
    row_fn fn;
    size_t elem;
    void *arr;
    size_t n;
};

static CK_RV list_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct list_read *l = arg;

    return run_rows(s, c, l->id, &l->p, l->what, l->fn, l->elem, &l->arr, &l->n);
}

static CK_RV pg_version_list(struct hf_store *store, const char *key_uuid,
                             struct hf_key_version **versions, size_t *n)
{
    struct list_read l = {.id = ST_VERSIONS_OF,
                          .what = "list versions",
                          .fn = version_from_row,
                          .elem = sizeof(**versions)};
    char uuid[HF_UUID_LEN + 1];
    CK_RV rv;

    uuid_lower(key_uuid, uuid);
    p_text(&l.p, uuid);
    rv = tx_run((struct pg_store *)store, TX_NONE, NULL, list_tx, &l);
    if (rv != CKR_OK) {
        versions_free(l.arr, l.n);
        return rv;
    }
    *versions = l.arr;
    *n = l.n;
    return CKR_OK;
}

static int key_uuid_cmp(const void *a, const void *b)
{
    return strcmp(((const struct hf_key *)a)->uuid, ((const struct hf_key *)b)->uuid);
}

struct each_read {
    struct hf_key *keys;
    struct hf_key_version *versions;
    size_t nk, nv;
};

static CK_RV each_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct each_read *e = arg;
    CK_RV rv = keys_read(s, c, &e->keys, &e->nk);

    if (rv != CKR_OK) return rv;
    return run_rows(s, c, ST_VERSIONS_ALL, NULL, "list versions", version_from_row,
                    sizeof(*e->versions), (void **)&e->versions, &e->nv);
}

static CK_RV pg_version_each(struct hf_store *store, hf_store_version_fn fn, void *arg)
{
    struct each_read e = {0};
    /* A snapshot, read first; fn runs with no connection held: it may well call the store. */
    CK_RV rv = tx_run((struct pg_store *)store, TX_READ, NULL, each_tx, &e);

    if (rv == CKR_OK && e.nk > 1) qsort(e.keys, e.nk, sizeof(*e.keys), key_uuid_cmp);
    for (size_t i = 0; rv == CKR_OK && i < e.nv; i++) {
        struct hf_key probe;
        const struct hf_key *key;
        memcpy(probe.uuid, e.versions[i].key_uuid, sizeof(probe.uuid));
        key = e.nk ? bsearch(&probe, e.keys, e.nk, sizeof(*e.keys), key_uuid_cmp) : NULL;
        if (key) rv = fn(key, &e.versions[i], arg); /* foreign keys make a miss impossible */
    }
    keys_free(e.keys, e.nk);
    versions_free(e.versions, e.nv);
    return rv;
}

/* ---- links ---- */

struct link_write {
    struct hf_link *link;
    const char *uuid, *type, *ext_id;
    bool blocked;
    int64_t when, id;
    const unsigned char *mac, *old_mac;
    long changed;
};

static CK_RV link_insert_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct link_write *w = arg;
    const struct hf_link *link = w->link;
    struct params p = {0};
    PGresult *res;
    CK_RV rv;

    p_text(&p, link->type);
    p_text(&p, link->ext_id);
    p_text(&p, w->uuid);
    p_int(&p, link->blocked);
    p_int(&p, link->created);
    p_int(&p, link->updated);
    p_mac(&p, mac_of(link->mac, link->has_mac));
    if ((rv = run_row(s, c, ST_LINK_INSERT, &p, "write link", &res)) != CKR_OK) return rv;
    w->id = col_int(res, 0, 0);
    PQclear(res);
    return CKR_OK;
}

static CK_RV pg_link_insert(struct hf_store *store, struct hf_link *link)
{
    char uuid[HF_UUID_LEN + 1];
    struct link_write w = {.link = link, .uuid = uuid};
    CK_RV rv;

    uuid_lower(link->key_uuid, uuid);
    rv = tx_run((struct pg_store *)store, TX_WRITE, WHAT_LINK, link_insert_tx, &w);
    if (rv == CKR_OK) link->id = w.id;
    return rv;
}

struct link_get {
    const char *type, *ext_id;
    struct hf_link l;
};

static CK_RV link_get_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct link_get *g = arg;
    struct params p = {0};
    PGresult *res;
    CK_RV rv;

    p_text(&p, g->type);
    p_text(&p, g->ext_id);
    if ((rv = run_row(s, c, ST_LINK_GET, &p, "read link", &res)) != CKR_OK) return rv;
    rv = link_from_row(res, 0, &g->l);
    PQclear(res);
    return rv;
}

static CK_RV pg_link_get(struct hf_store *store, const char *type, const char *ext_id,
                         struct hf_link *out)
{
    struct link_get g = {.type = type, .ext_id = ext_id};
    CK_RV rv = tx_run((struct pg_store *)store, TX_NONE, NULL, link_get_tx, &g);

    if (rv == CKR_OK) *out = g.l;
    return rv;
}

/* The conditional block changed nothing: no such link, or its MAC moved on meanwhile. */
static CK_RV link_block_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct link_write *w = arg;
    struct params p = {0};
    PGresult *res;
    CK_RV rv;

    p_int(&p, w->blocked);
    p_int(&p, w->when);
    p_mac(&p, w->mac);
    p_text(&p, w->type);
    p_text(&p, w->ext_id);
    p_mac(&p, w->old_mac);
    if ((rv = run_count(s, c, ST_LINK_BLOCK, &p, "block link", &w->changed)) != CKR_OK) return rv;
    if (w->changed > 0) return CKR_OK;
    memset(&p, 0, sizeof(p));
    p_text(&p, w->type);
    p_text(&p, w->ext_id);
    if ((rv = run_row(s, c, ST_LINK_GET, &p, "block link", &res)) != CKR_OK) return rv;
    PQclear(res);
    hf_log_info("store: block link: link changed meanwhile");
    return CKR_ATTRIBUTE_VALUE_INVALID;
}

static CK_RV pg_link_set_blocked(struct hf_store *store, const char *type, const char *ext_id,
                                 bool blocked, int64_t when, const unsigned char *mac,
                                 const unsigned char *old_mac)
{
    struct link_write w = {.type = type,
                           .ext_id = ext_id,
                           .blocked = blocked,
                           .when = when,
                           .mac = mac,
                           .old_mac = old_mac};

    return tx_run((struct pg_store *)store, TX_WRITE, WHAT_LINK, link_block_tx, &w);
}

static CK_RV link_delete_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct link_write *w = arg;
    struct params p = {0};
    CK_RV rv;

    p_text(&p, w->type);
    p_text(&p, w->ext_id);
    rv = run_count(s, c, ST_LINK_DELETE, &p, "delete link", &w->changed);
    return rv == CKR_OK && w->changed == 0 ? CKR_KEY_HANDLE_INVALID : rv;
}

static CK_RV pg_link_delete(struct hf_store *store, const char *type, const char *ext_id)
{
    struct link_write w = {.type = type, .ext_id = ext_id};

    return tx_run((struct pg_store *)store, TX_WRITE, WHAT_LINK, link_delete_tx, &w);
}

static CK_RV pg_link_list(struct hf_store *store, const char *key_uuid, struct hf_link **links,
                          size_t *n)
{
    struct list_read l = {.id = key_uuid ? ST_LINKS_OF : ST_LINKS_ALL,
                          .what = "list links",
                          .fn = link_from_row,
                          .elem = sizeof(**links)};
    char uuid[HF_UUID_LEN + 1];
    CK_RV rv;

    if (key_uuid) {
        uuid_lower(key_uuid, uuid);
        p_text(&l.p, uuid);
    }
    rv = tx_run((struct pg_store *)store, TX_NONE, NULL, list_tx, &l);
    if (rv != CKR_OK) {
        links_free(l.arr, l.n);
        return rv;
    }
    *links = l.arr;
    *n = l.n;
    return CKR_OK;
}

/* ---- link types ---- */

struct simple_write {
    enum stmt_id id;
    struct params p;
    const char *what;
    long changed;
};

static CK_RV simple_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct simple_write *w = arg;

    return run_count(s, c, w->id, &w->p, w->what, &w->changed);
}

static CK_RV pg_link_type_add(struct hf_store *store, const char *name, int64_t when, bool *added)
{
    struct simple_write w = {.id = ST_LINK_TYPE_ADD, .what = "add link type"};
    CK_RV rv;

    p_text(&w.p, name);
    p_int(&w.p, when);
    rv = tx_run((struct pg_store *)store, TX_WRITE, WHAT_OTHER, simple_tx, &w);
    *added = rv == CKR_OK && w.changed > 0;
    return rv;
}

static CK_RV pg_link_type_get(struct hf_store *store, const char *name)
{
    struct list_read l = {.id = ST_LINK_TYPE_GET,
                          .what = "read link type",
                          .fn = name_from_row,
                          .elem = sizeof(char *)};
    CK_RV rv;

    p_text(&l.p, name);
    rv = tx_run((struct pg_store *)store, TX_NONE, NULL, list_tx, &l);
    if (rv == CKR_OK && l.n == 0) rv = CKR_KEY_HANDLE_INVALID;
    for (size_t i = 0; i < l.n; i++)
        free(((char **)l.arr)[i]);
    free(l.arr);
    return rv;
}

static CK_RV pg_link_type_list(struct hf_store *store, char ***names, size_t *n)
{
    struct list_read l = {.id = ST_LINK_TYPES_ALL,
                          .what = "list link types",
                          .fn = name_from_row,
                          .elem = sizeof(char *)};
    CK_RV rv = tx_run((struct pg_store *)store, TX_NONE, NULL, list_tx, &l);

    if (rv != CKR_OK) {
        for (size_t i = 0; i < l.n; i++)
            free(((char **)l.arr)[i]);
        free(l.arr);
        return rv;
    }
    *names = l.arr;
    *n = l.n;
    return CKR_OK;
}

/* ---- meta ---- */

static CK_RV pg_meta_get(struct hf_store *store, const char *name, char **value)
{
    struct list_read l = {
        .id = ST_META_GET, .what = "read meta", .fn = name_from_row, .elem = sizeof(char *)};
    CK_RV rv;

    p_text(&l.p, name);
    rv = tx_run((struct pg_store *)store, TX_NONE, NULL, list_tx, &l);
    if (rv == CKR_OK && l.n == 0) rv = CKR_KEY_HANDLE_INVALID;
    if (rv == CKR_OK)
        *value = ((char **)l.arr)[0];
    else if (l.n)
        free(((char **)l.arr)[0]);
    free(l.arr);
    return rv;
}

static CK_RV pg_meta_set(struct hf_store *store, const char *name, const char *value)
{
    struct simple_write w = {.id = ST_META_SET, .what = "write meta"};

    p_text(&w.p, name);
    p_text(&w.p, value);
    return tx_run((struct pg_store *)store, TX_WRITE, WHAT_OTHER, simple_tx, &w);
}

struct count_add {
    const char *name;
    uint64_t count;
};

static CK_RV count_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct count_add *a = arg;
    struct params p = {0};
    PGresult *res;
    CK_RV rv;

    p_text(&p, a->name);
    if ((rv = run_row(s, c, ST_META_COUNT, &p, "count meta", &res)) != CKR_OK) return rv;
    a->count = (uint64_t)col_int(res, 0, 0);
    PQclear(res);
    return CKR_OK;
}

static CK_RV pg_meta_count_add(struct hf_store *store, const char *name, uint64_t *count)
{
    struct count_add a = {.name = name};
    CK_RV rv = tx_run((struct pg_store *)store, TX_WRITE, WHAT_OTHER, count_tx, &a);

    if (rv == CKR_OK) *count = a.count;
    return rv;
}

static CK_RV pg_meta_swap(struct hf_store *store, const char *name, const char *expect,
                          const char *value, bool *swapped)
{
    struct simple_write w = {.what = "swap meta"};
    CK_RV rv;

    if (expect == NULL) {
        w.id = ST_META_ADD;
        p_text(&w.p, name);
        p_text(&w.p, value);
    } else if (value == NULL) {
        w.id = ST_META_DROP;
        p_text(&w.p, name);
        p_text(&w.p, expect);
    } else {
        w.id = ST_META_SWAP;
        p_text(&w.p, value);
        p_text(&w.p, name);
        p_text(&w.p, expect);
    }
    rv = tx_run((struct pg_store *)store, TX_WRITE, WHAT_OTHER, simple_tx, &w);
    *swapped = rv == CKR_OK && w.changed > 0;
    return rv;
}

/* ---- migration to policy MACs ---- */

struct migrate {
    const struct hf_store_migration *m;
    size_t n;
};

static CK_RV keys_mac(struct pg_store *s, struct pg_conn *c, struct migrate *mg)
{
    struct hf_key *keys = NULL;
    size_t count = 0;
    CK_RV rv = run_rows(s, c, ST_KEYS_UNMACED, NULL, "migrate keys", key_from_row, sizeof(*keys),
                        (void **)&keys, &count);

    for (size_t i = 0; rv == CKR_OK && i < count; i++) {
        struct params p = {0};
        if ((rv = labels_load(s, c, &keys[i])) != CKR_OK ||
            (rv = mg->m->key(mg->m->ctx, &keys[i])) != CKR_OK)
            break;
        p_mac(&p, mac_of(keys[i].mac, keys[i].has_mac));
        p_text(&p, keys[i].uuid);
        if ((rv = run_count(s, c, ST_KEY_SET_MAC, &p, "migrate key", NULL)) == CKR_OK) mg->n++;
    }
    keys_free(keys, count);
    return rv;
}

static CK_RV versions_mac(struct pg_store *s, struct pg_conn *c, struct migrate *mg)
{
    struct hf_key_version *v = NULL;
    size_t count = 0;
    CK_RV rv = run_rows(s, c, ST_VERSIONS_UNMACED, NULL, "migrate versions", version_from_row,
                        sizeof(*v), (void **)&v, &count);

    for (size_t i = 0; rv == CKR_OK && i < count; i++) {
        struct params p = {0};
        if ((rv = mg->m->version(mg->m->ctx, &v[i])) != CKR_OK) break;
        p_blob(&p, v[i].wrapped, v[i].wrapped_len);
        p_mac(&p, mac_of(v[i].mac, v[i].has_mac));
        p_int(&p, v[i].id);
        if ((rv = run_count(s, c, ST_VERSION_SET_MAC, &p, "migrate version", NULL)) == CKR_OK)
            mg->n++;
    }
    versions_free(v, count);
    return rv;
}

static CK_RV links_mac(struct pg_store *s, struct pg_conn *c, struct migrate *mg)
{
    struct hf_link *l = NULL;
    size_t count = 0;
    CK_RV rv = run_rows(s, c, ST_LINKS_UNMACED, NULL, "migrate links", link_from_row, sizeof(*l),
                        (void **)&l, &count);

    for (size_t i = 0; rv == CKR_OK && i < count; i++) {
        struct params p = {0};
        if ((rv = mg->m->link(mg->m->ctx, &l[i])) != CKR_OK) break;
        p_mac(&p, mac_of(l[i].mac, l[i].has_mac));
        p_int(&p, l[i].id);
        if ((rv = run_count(s, c, ST_LINK_SET_MAC, &p, "migrate link", NULL)) == CKR_OK) mg->n++;
    }
    links_free(l, count);
    return rv;
}

static CK_RV policy_migrate_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct migrate *mg = arg;
    CK_RV rv;

    mg->n = 0;
    /* A second node migrating at once waits here, then finds nothing left to do (as SQLite's
     * BEGIN IMMEDIATE). */
    rv = exec_simple(s, c, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK ")", "migrate");
    if (rv == CKR_OK) rv = keys_mac(s, c, mg);
    if (rv == CKR_OK) rv = versions_mac(s, c, mg);
    if (rv == CKR_OK) rv = links_mac(s, c, mg);
    return rv;
}

static CK_RV pg_policy_migrate(struct hf_store *store, const struct hf_store_migration *m,
                               size_t *n)
{
    struct migrate mg = {.m = m};
    CK_RV rv = tx_run((struct pg_store *)store, TX_WRITE, WHAT_LINK, policy_migrate_tx, &mg);

    *n = rv == CKR_OK ? mg.n : 0;
    return rv;
}

/* ---- certificate and data objects ---- */

/* An empty attribute is stored as an empty value, never NULL: the column says "given, empty". */
static void p_bytes(struct params *p, const unsigned char *v, size_t len)
{
    p_blob(p, v ? v : (const unsigned char *)"", len);
}

struct object_write {
    const struct hf_store_object *obj;
    int64_t id;
    long changed;
};

static CK_RV object_insert_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct object_write *w = arg;
    const struct hf_store_object *o = w->obj;
    struct params p = {0};
    PGresult *res;
    CK_RV rv;

    p_int(&p, (int64_t)o->cls);
    p_int(&p, o->is_private);
    p_bytes(&p, o->label, o->label_len);
    p_bytes(&p, o->ckaid, o->ckaid_len);
    p_bytes(&p, o->value, o->value_len);
    p_bytes(&p, o->attrs, o->attrs_len);
    p_int(&p, o->created);
    if ((rv = run_row(s, c, ST_OBJECT_INSERT, &p, "insert object", &res)) != CKR_OK) return rv;
    w->id = col_int(res, 0, 0);
    PQclear(res);
    return CKR_OK;
}

static CK_RV pg_object_insert(struct hf_store *store, struct hf_store_object *obj)
{
    struct object_write w = {.obj = obj};
    CK_RV rv = tx_run((struct pg_store *)store, TX_WRITE, WHAT_OTHER, object_insert_tx, &w);

    if (rv == CKR_OK) obj->id = w.id;
    return rv;
}

static CK_RV pg_object_get(struct hf_store *store, int64_t id, struct hf_store_object *out)
{
    struct list_read l = {
        .id = ST_OBJECT_GET, .what = "read object", .fn = object_from_row, .elem = sizeof(*out)};
    CK_RV rv;

    p_int(&l.p, id);
    rv = tx_run((struct pg_store *)store, TX_NONE, NULL, list_tx, &l);
    if (rv == CKR_OK && l.n == 0) rv = CKR_KEY_HANDLE_INVALID;
    if (rv == CKR_OK)
        *out = *(struct hf_store_object *)l.arr;
    else if (l.n)
        hf_store_object_clear(l.arr);
    free(l.arr);
    return rv;
}

/* One statement whose change count says whether the row was there. */
static CK_RV object_change(struct pg_store *s, struct simple_write *w)
{
    CK_RV rv = tx_run(s, TX_WRITE, WHAT_OTHER, simple_tx, w);

    return rv == CKR_OK && w->changed == 0 ? CKR_KEY_HANDLE_INVALID : rv;
}

static CK_RV pg_object_update(struct hf_store *store, const struct hf_store_object *obj)
{
    struct simple_write w = {.id = ST_OBJECT_UPDATE, .what = "update object"};

    p_bytes(&w.p, obj->label, obj->label_len);
    p_bytes(&w.p, obj->ckaid, obj->ckaid_len);
    p_int(&w.p, obj->id);
    return object_change((struct pg_store *)store, &w);
}

static CK_RV pg_object_delete(struct hf_store *store, int64_t id)
{
    struct simple_write w = {.id = ST_OBJECT_DELETE, .what = "delete object"};

    p_int(&w.p, id);
    return object_change((struct pg_store *)store, &w);
}

static CK_RV pg_object_list(struct hf_store *store, struct hf_store_object **objs, size_t *n)
{
    struct list_read l = {.id = ST_OBJECTS_ALL,
                          .what = "list objects",
                          .fn = object_from_row,
                          .elem = sizeof(**objs)};
    CK_RV rv = tx_run((struct pg_store *)store, TX_NONE, NULL, list_tx, &l);

    if (rv != CKR_OK) {
        for (size_t i = 0; i < l.n; i++)
            hf_store_object_clear(&((struct hf_store_object *)l.arr)[i]);
        free(l.arr);
        return rv;
    }
    *objs = l.arr;
    *n = l.n;
    return CKR_OK;
}

/* ---- HSM pools ---- */

static CK_RV members_load(struct pg_store *s, struct pg_conn *c, struct hf_store_pool *pool)
{
    struct params p = {0};

    p_text(&p, pool->name);
    return run_rows(s, c, ST_POOL_MEMBERS_OF, &p, "read pool members", member_from_row,
                    sizeof(*pool->members), (void **)&pool->members, &pool->n_members);
}

static CK_RV pool_insert_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    const struct hf_store_pool *pool = arg;
    struct params p = {0};
    CK_RV rv;

    p_text(&p, pool->name);
    p_text(&p, hf_pool_mode_name(pool->mode));
    p_int(&p, pool->created);
    p_int(&p, pool->updated);
    p_mac(&p, mac_of(pool->mac, pool->has_mac));
    if ((rv = run_count(s, c, ST_POOL_INSERT, &p, "write pool", NULL)) != CKR_OK) return rv;
    for (size_t i = 0; i < pool->n_members; i++) {
        const struct hf_store_pool_member *m = &pool->members[i];
        memset(&p, 0, sizeof(p));
        p_text(&p, pool->name);
        p_int(&p, (int64_t)i);
        p_text(&p, m->name);
        p_text(&p, m->module_path);
        p_text(&p, m->token_label);
        p_text(&p, m->token_serial);
        p_text(&p, m->pin_file);
        p_text(&p, m->pin_env);
        p_int(&p, m->concurrency);
        rv = run_count(s, c, ST_POOL_MEMBER_INSERT, &p, "write pool member", NULL);
        if (rv != CKR_OK) return rv;
    }
    return CKR_OK;
}

static CK_RV pg_pool_insert(struct hf_store *store, const struct hf_store_pool *pool)
{
    return tx_run((struct pg_store *)store, TX_WRITE, WHAT_OTHER, pool_insert_tx, (void *)pool);
}

struct pool_read {
    const char *name;
    struct hf_store_pool *pools;
    size_t n;
};

static void pools_free(struct hf_store_pool *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++)
        hf_store_pool_clear(&p[i]);
    free(p);
}

/* name NULL: every pool. One snapshot for the pool rows and their members. */
static CK_RV pool_read_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct pool_read *r = arg;
    struct params p = {0};
    CK_RV rv;

    pools_free(r->pools, r->n);
    r->pools = NULL;
    r->n = 0;
    if (r->name) p_text(&p, r->name);
    rv = run_rows(s, c, r->name ? ST_POOL_GET : ST_POOLS_ALL, &p, "read pool", pool_from_row,
                  sizeof(*r->pools), (void **)&r->pools, &r->n);
    for (size_t i = 0; rv == CKR_OK && i < r->n; i++)
        rv = members_load(s, c, &r->pools[i]);
    return rv;
}

static CK_RV pg_pool_get(struct hf_store *store, const char *name, struct hf_store_pool *out)
{
    struct pool_read r = {.name = name};
    CK_RV rv = tx_run((struct pg_store *)store, TX_READ, NULL, pool_read_tx, &r);

    if (rv == CKR_OK && r.n == 0) rv = CKR_KEY_HANDLE_INVALID;
    if (rv == CKR_OK) {
        *out = r.pools[0];
        free(r.pools);
        return CKR_OK;
    }
    pools_free(r.pools, r.n);
    return rv;
}

static CK_RV pg_pool_list(struct hf_store *store, struct hf_store_pool **pools, size_t *n)
{
    struct pool_read r = {0};
    CK_RV rv = tx_run((struct pg_store *)store, TX_READ, NULL, pool_read_tx, &r);

    if (rv != CKR_OK) {
        pools_free(r.pools, r.n);
        return rv;
    }
    *pools = r.pools;
    *n = r.n;
    return CKR_OK;
}

struct pool_delete {
    const char *name, *source;
};

static CK_RV pool_delete_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    static const enum stmt_id steps[] = {ST_POOL_BACKUPS_DELETE, ST_POOL_MEMBERS_DELETE,
                                         ST_POOL_DELETE};
    struct pool_delete *d = arg;
    struct params p = {0};
    PGresult *res;
    long changed = 0;
    CK_RV rv;

    p_text(&p, d->source);
    rv = run_row(s, c, ST_POOL_IN_USE, &p, "delete pool", &res);
    if (rv == CKR_OK) {
        PQclear(res);
        hf_log_info("store: pool %s is the source of keys: not deleted", d->name);
        return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    if (rv != CKR_KEY_HANDLE_INVALID) return rv;
    memset(&p, 0, sizeof(p));
    p_text(&p, d->name);
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
        if ((rv = run_count(s, c, steps[i], &p, "delete pool", &changed)) != CKR_OK) return rv;
    return changed > 0 ? CKR_OK : CKR_KEY_HANDLE_INVALID;
}

static CK_RV pg_pool_delete(struct hf_store *store, const char *name, const char *source)
{
    struct pool_delete d = {name, source};

    return tx_run((struct pg_store *)store, TX_WRITE, WHAT_OTHER, pool_delete_tx, &d);
}

struct backup_io {
    struct params p;
    unsigned char *blob;
    size_t len;
};

static CK_RV backup_get_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    struct backup_io *b = arg;
    PGresult *res;
    CK_RV rv = run_row(s, c, ST_POOL_BACKUP_GET, &b->p, "read pool backup", &res);

    if (rv != CKR_OK) return rv;
    if (!col_blob(res, 0, 0, &b->blob, &b->len)) rv = CKR_HOST_MEMORY;
    PQclear(res);
    return rv;
}

static CK_RV pg_pool_backup_get(struct hf_store *store, const char *pool, const char *what,
                                unsigned char **blob, size_t *len)
{
    struct backup_io b = {0};
    CK_RV rv;

    p_text(&b.p, pool);
    p_text(&b.p, what);
    rv = tx_run((struct pg_store *)store, TX_NONE, NULL, backup_get_tx, &b);
    if (rv == CKR_OK) {
        *blob = b.blob;
        *len = b.len;
    }
    return rv;
}

static CK_RV pg_pool_backup_add(struct hf_store *store, const char *pool, const char *what,
                                const unsigned char *blob, size_t len)
{
    struct simple_write w = {.id = ST_POOL_BACKUP_ADD, .what = "write pool backup"};

    p_text(&w.p, pool);
    p_text(&w.p, what);
    p_blob(&w.p, blob, len);
    return tx_run((struct pg_store *)store, TX_WRITE, WHAT_OTHER, simple_tx, &w);
}

/* ---- versions of schema and data ---- */

static CK_RV schema_read(struct pg_store *s, struct pg_conn *c, int *version)
{
    PGresult *res;
    CK_RV rv = run_row(s, c, ST_SCHEMA_VERSION, NULL, "read schema version", &res);

    if (rv != CKR_OK) return rv;
    *version = (int)col_int(res, 0, 0);
    PQclear(res);
    return CKR_OK;
}

static CK_RV schema_tx(struct pg_store *s, struct pg_conn *c, void *arg)
{
    return schema_read(s, c, arg);
}

static CK_RV pg_schema_version(struct hf_store *store, int *version)
{
    return tx_run((struct pg_store *)store, TX_NONE, NULL, schema_tx, version);
}

/* No query: the listener counts other handles' commits as they are announced, this handle
 * counts its own. A module polls this on every revalidation. */
static CK_RV pg_data_version(struct hf_store *store, uint64_t *version)
{
    struct pg_store *s = (struct pg_store *)store;

    *version = atomic_load(&s->commits) + atomic_load(&s->remote);
    return CKR_OK;
}

/* ---- the listener ---- */

/* A notification: "TOKEN WHAT". This handle's own commits are counted already. */
static void heard(struct pg_store *s, const char *payload)
{
    size_t tl = strlen(s->token);

    if (strncmp(payload, s->token, tl) == 0 && payload[tl] == ' ') return;
    atomic_fetch_add(&s->remote, 1);
    if (strcmp(payload + (strlen(payload) > tl ? tl + 1 : 0), WHAT_OTHER) != 0)
        atomic_fetch_add(&s->base.generation, 1);
}

/* Notifications sent while the listener was away are lost: every cached answer is stale. */
static void heard_everything(struct pg_store *s)
{
    atomic_fetch_add(&s->remote, 1);
    atomic_fetch_add(&s->base.generation, 1);
}

/* Bounded as a call's statements are: a server that hangs here must not keep the listener (and
 * the close that joins it) for ever. */
static PGconn *listen_connect(struct pg_store *s)
{
    PGconn *pg = pg_connect(s);
    PGresult *res = NULL;
    bool timed_out;

    if (pg && PQstatus(pg) == CONNECTION_OK && PQsendQuery(pg, "LISTEN " HF_STORE_PG_CHANNEL))
        res = pq_results(pg, now_us() + STATEMENT_MS * 1000ULL, &timed_out);
    if (res && PQresultStatus(res) == PGRES_COMMAND_OK) {
        PQclear(res);
        return pg;
    }
    PQclear(res);
    PQfinish(pg);
    return NULL;
}

/* Sleeps ms, or less when woken for close; true when closing. */
static bool listen_wait(struct pg_store *s, int fd, int ms)
{
    struct pollfd fds[2] = {{.fd = s->wake[0], .events = POLLIN}, {.fd = fd, .events = POLLIN}};

    poll(fds, fd >= 0 ? 2 : 1, ms);
    return atomic_load(&s->closing);
}

static void listen_drain(struct pg_store *s, PGconn *pg)
{
    PGnotify *n;

    while ((n = PQnotifies(pg))) {
        heard(s, n->extra ? n->extra : "");
        PQfreemem(n);
    }
}

static void *listen_main(void *arg)
{
    struct pg_store *s = arg;
    PGconn *pg = s->listen_pg;
    unsigned backoff = BACKOFF_MIN_MS;

    while (!atomic_load(&s->closing)) {
        if (!pg) {
            if (!(pg = listen_connect(s))) {
                if (listen_wait(s, -1, (int)backoff)) break;
                backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
                continue;
            }
            hf_log_info("store: listening to PostgreSQL at %s again", s->where);
            backoff = BACKOFF_MIN_MS;
            heard_everything(s);
        }
        if (listen_wait(s, PQsocket(pg), -1)) break;
        if (!PQconsumeInput(pg) || PQstatus(pg) == CONNECTION_BAD) {
            hf_log_warn("store: lost the notification connection to %s; reconnecting", s->where);
            PQfinish(pg);
            pg = NULL;
            heard_everything(s);
            continue;
        }
        listen_drain(s, pg);
    }
    PQfinish(pg);
    return NULL;
}

/* ---- open, migrate, close ---- */

/* Applies the next missing step, if any; *done when the schema is current. */
static CK_RV migrate_step(struct pg_store *s, struct pg_conn *c, bool *done)
{
    int version = 0;
    CK_RV rv;

    if ((rv = exec_simple(s, c, "BEGIN", "migrate")) != CKR_OK) return rv;
    /* Two nodes opening a fresh database at once must not both run step 1. */
    rv = exec_simple(s, c, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK ")", "migrate");
    if (rv == CKR_OK)
        rv = exec_simple(s, c,
                         "CREATE TABLE IF NOT EXISTS schema_version ("
                         "  id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);"
                         "INSERT INTO schema_version VALUES (1, 0) ON CONFLICT DO NOTHING",
                         "migrate");
    if (rv == CKR_OK) rv = schema_read(s, c, &version);
    if (rv == CKR_OK && version > HF_STORE_SCHEMA_VERSION) {
        hf_log_error("store: schema v%d is newer than this build's v%d; upgrade holdfast", version,
                     HF_STORE_SCHEMA_VERSION);
        rv = CKR_DEVICE_ERROR;
    }
    *done = rv == CKR_OK && version == HF_STORE_SCHEMA_VERSION;
    if (rv == CKR_OK && !*done) {
        rv = exec_simple(s, c, migrations[version], "migrate");
        if (rv == CKR_OK)
            rv = exec_simple(s, c, "UPDATE schema_version SET version = version + 1", "migrate");
        if (rv == CKR_OK) hf_log_info("store: schema migrated to v%d", version + 1);
    }
    if (rv == CKR_OK) return exec_simple(s, c, "COMMIT", "migrate");
    rollback(s, c);
    return rv;
}

/* The password never comes from the locator (it ends up in configs, logs, process lists):
 * libpq reads it from PGPASSWORD, PGPASSFILE or ~/.pgpass (or passfile=). Fills where. */
static CK_RV locator_check(const char *locator, char *where, size_t len)
{
    char *err = NULL;
    PQconninfoOption *opts = PQconninfoParse(locator, &err);
    const char *host = NULL, *port = NULL, *db = NULL;
    CK_RV rv = CKR_OK;

    if (!opts) {
        /* libpq's message quotes the part it could not parse, which may be a password. */
        hf_log_error("store: the PostgreSQL locator does not parse");
        PQfreemem(err);
        return CKR_ARGUMENTS_BAD;
    }
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val) continue;
        if (strcmp(o->keyword, "password") == 0)
            rv = CKR_ARGUMENTS_BAD;
        else if (strcmp(o->keyword, "host") == 0)
            host = o->val;
        else if (strcmp(o->keyword, "port") == 0)
            port = o->val;
        else if (strcmp(o->keyword, "dbname") == 0)
            db = o->val;
    }
    snprintf(where, len, "%s:%s/%s", host ? host : "(default host)", port ? port : "5432",
             db ? db : "(default db)");
    if (rv != CKR_OK)
        hf_log_error("store: the PostgreSQL locator for %s carries a password: refused; give it "
                     "in a passfile (PGPASSFILE, passfile=) or PGPASSWORD",
                     where);
    PQconninfoFree(opts);
    return rv;
}

static void pg_close(struct hf_store *store)
{
    struct pg_store *s = (struct pg_store *)store;

    if (s->listener_running) {
        atomic_store(&s->closing, true);
        if (write(s->wake[1], "x", 1) < 0) hf_log_warn("store: cannot wake the listener");
        pthread_join(s->listener, NULL);
    } else {
        PQfinish(s->listen_pg);
    }
    for (size_t i = 0; i < s->n_idle; i++)
        conn_close(s->idle[i]);
    if (s->wake[0] >= 0) close(s->wake[0]);
    if (s->wake[1] >= 0) close(s->wake[1]);
    pthread_cond_destroy(&s->returned);
    pthread_mutex_destroy(&s->lock);
    free(s->conninfo);
    free(s);
}

/* The first connection, the schema migrated on it, then the listener (LISTENing before open
 * returns: a commit made after open is never missed). */
/* A current schema needs no migration transaction: no lock, no DDL, so the nodes' database
 * user needs no CREATE privilege once an administrator's first open has migrated it. */
static CK_RV schema_is_current(struct pg_store *s, struct pg_conn *c, bool *current)
{
    PGresult *res = conn_exec(s, c, "SELECT to_regclass('schema_version') IS NOT NULL", "open");
    bool exists = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
                  strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    CK_RV rv = PQresultStatus(res) == PGRES_TUPLES_OK ? CKR_OK : result_fail(s, c, res, "open");
    int version = 0;

    PQclear(res);
    *current = false;
    if (rv == CKR_OK && exists && (rv = schema_read(s, c, &version)) == CKR_OK)
        *current = version == HF_STORE_SCHEMA_VERSION;
    return rv == CKR_KEY_HANDLE_INVALID ? CKR_OK : rv; /* no row yet: migrate */
}

static CK_RV pg_start(struct pg_store *s)
{
    struct pg_conn *c = NULL;
    bool done = false;
    CK_RV rv = conn_get(s, &c);

    if (rv == CKR_OK) rv = schema_is_current(s, c, &done);
    while (rv == CKR_OK && !done)
        rv = migrate_step(s, c, &done);
    if (c) conn_put(s, c);
    if (rv != CKR_OK) return rv;
    if (!(s->listen_pg = listen_connect(s))) {
        hf_log_error("store: cannot LISTEN on PostgreSQL at %s", s->where);
        return CKR_DEVICE_ERROR;
    }
    if (pthread_create(&s->listener, NULL, listen_main, s) != 0) return CKR_HOST_MEMORY;
    s->listener_running = true;
    return CKR_OK;
}

/* The pool's condition waits on the monotonic clock (conn_wait_locked): a wall clock stepped back
 * must not stretch a caller's bounded wait. */
static bool returned_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    bool ok;

    if (pthread_condattr_init(&attr) != 0) return false;
    ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
         pthread_cond_init(cond, &attr) == 0;
    pthread_condattr_destroy(&attr);
    return ok;
}

CK_RV hf_store_pg_open(const char *locator, struct hf_store **out)
{
    struct pg_store *s;
    char where[160];
    CK_RV rv;

    if ((rv = hf_pq_load()) != CKR_OK) return rv;
    if ((rv = locator_check(locator, where, sizeof(where))) != CKR_OK) return rv;
    if (!(s = calloc(1, sizeof(*s)))) return CKR_HOST_MEMORY;
    s->base.ops = &pg_ops;
    s->wake[0] = s->wake[1] = -1;
    s->backoff_ms = BACKOFF_MIN_MS;
    memcpy(s->where, where, sizeof(where));
    hf_uuid_generate(s->token);
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        return CKR_HOST_MEMORY;
    }
    if (!returned_init(&s->returned)) {
        pthread_mutex_destroy(&s->lock);
        free(s);
        return CKR_HOST_MEMORY;
    }
    if (!(s->conninfo = strdup(locator)) || pipe2(s->wake, O_CLOEXEC) != 0) rv = CKR_HOST_MEMORY;
    if (rv == CKR_OK) rv = pg_start(s);
    if (rv != CKR_OK) {
        hf_log_error("store: cannot open PostgreSQL at %s", s->where);
        pg_close(&s->base);
        return rv;
    }
    *out = &s->base;
    return CKR_OK;
}

static const struct hf_store_ops pg_ops = {
    .name = "postgresql",
    .close = pg_close,
    .schema_version = pg_schema_version,
    .data_version = pg_data_version,
    .key_insert = pg_key_insert,
    .key_get = pg_key_get,
    .key_list = pg_key_list,
    .key_update = pg_key_update,
    .key_destroy = pg_key_destroy,
    .version_insert = pg_version_insert,
    .version_set_state = pg_version_set_state,
    .version_get = pg_version_get,
    .version_find = pg_version_find,
    .version_find_by_uuid = pg_version_find_by_uuid,
    .version_list = pg_version_list,
    .version_each = pg_version_each,
    .link_insert = pg_link_insert,
    .link_get = pg_link_get,
    .link_set_blocked = pg_link_set_blocked,
    .link_delete = pg_link_delete,
    .link_list = pg_link_list,
    .link_type_add = pg_link_type_add,
    .link_type_get = pg_link_type_get,
    .link_type_list = pg_link_type_list,
    .meta_get = pg_meta_get,
    .meta_set = pg_meta_set,
    .meta_count_add = pg_meta_count_add,
    .meta_swap = pg_meta_swap,
    .policy_migrate = pg_policy_migrate,
    .object_insert = pg_object_insert,
    .object_get = pg_object_get,
    .object_update = pg_object_update,
    .object_delete = pg_object_delete,
    .object_list = pg_object_list,
    .pool_insert = pg_pool_insert,
    .pool_get = pg_pool_get,
    .pool_list = pg_pool_list,
    .pool_delete = pg_pool_delete,
    .pool_backup_get = pg_pool_backup_get,
    .pool_backup_add = pg_pool_backup_add,
};
