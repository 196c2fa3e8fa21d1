#include "hf-build.h"

#include "pkcs11/core/store-migrate.h"

#include "pkcs11/core/key.h"
#include "pkcs11/core/log.h"
#include "pkcs11/core/pq-api.h"
#include "pkcs11/core/store-internal.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Why SQL on both sides rather than the hf_store interface: the interface hands out new ids
 * (AUTOINCREMENT, identity), seals rows through the policy hooks (a new MAC from the HSM, where
 * a verbatim copy keeps the one the row has), has no call that reads or writes every table (meta
 * by name only, versions only through rotation) and commits each call on its own. A move must
 * be every row as it is, ids included, all or nothing: so the rows are read through an SQLite
 * connection of our own inside one read transaction (one snapshot, however long the copy) and
 * written through libpq inside one PostgreSQL transaction, with the column lists of the current
 * schema. Both stores are opened with hf_store_open first, so each backend's own migrations
 * bring it to this build's schema: no second copy of the schema lives here, only its column
 * lists, which the static assert below ties to the schema version. */

struct table {
    const char *name;
    const char *cols;
    const char *types; /* per column: T text, I integer, B blob (bytea) */
    const char *order; /* the primary key: a stable reading order */
    bool has_id;       /* an AUTOINCREMENT (identity) id, copied as it is */
    bool replaced;     /* the destination may have rows (seeds, an init's): replaced, not refused */
};

_Static_assert(HF_STORE_SCHEMA_VERSION == 6,
               "a schema step adds its tables and columns to tables[] in store-migrate.c");

/* Parents before children (the foreign keys). */
static const struct table tables[] = {
    {"keys",
     "uuid, name, alg, bits, usage, state, owner, source, exportable, created, updated, "
     "current_version, mac",
     "TTIIIITTIIIIB", "uuid", false, false},
    {"key_labels", "key_uuid, name, value", "TTT", "key_uuid, name", false, false},
    {"key_versions",
     "id, uuid, key_uuid, version, state, created, kek_label, wrapped, public_der, mac",
     "ITTIIITBBB", "id", true, false},
    {"links", "id, type, ext_id, key_uuid, blocked, created, updated, mac", "ITTTIIIB", "id", true,
     false},
    {"link_types", "name, created", "TI", "name", false, true},
    {"meta", "name, value", "TT", "name", false, true},
    {"objects", "id, class, private, label, ckaid, value, attrs, created", "IIIBBBBI", "id", true,
     false},
    {"pools", "name, mode, created, updated, mac", "TTIIB", "name", false, false},
    {"pool_members",
     "pool, position, name, module_path, token_label, token_serial, pin_file, pin_env, "
     "concurrency",
     "TITTTTTTI", "pool, position", false, false},
    {"pool_backups", "pool, what, blob", "TTB", "pool, what", false, false},
};
#define N_TABLES (sizeof(tables) / sizeof(tables[0]))
#define MAX_COLS 13
_Static_assert(N_TABLES == HF_STORE_MIGRATE_TABLES, "store-migrate.h counts the tables");

struct migrate {
    sqlite3 *src;
    PGconn *dst;
    struct hf_store_migrate_result *res;
    uint64_t src_rows[N_TABLES]; /* count(*) in the source's snapshot */
};

/* The first failure's reason is the one reported; rv is handed back. */
static CK_RV fail(struct migrate *m, CK_RV rv, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static CK_RV fail(struct migrate *m, CK_RV rv, const char *fmt, ...)
{
    va_list ap;

    if (m->res->reason[0] != '\0') return rv;
    va_start(ap, fmt);
    vsnprintf(m->res->reason, sizeof(m->res->reason), fmt, ap);
    va_end(ap);
    return rv;
}

static size_t cols_of(const struct table *t)
{
    return strlen(t->types);
}

/* ---- the source: one read transaction ---- */

static CK_RV src_fail(struct migrate *m, const char *what)
{
    const char *msg = sqlite3_errmsg(m->src);

    hf_log_error("store migrate: reading the source (%s): %s", what, msg);
    return fail(m, CKR_DEVICE_ERROR, "reading the source failed (%s): %s", what, msg);
}

/* The one integer sql answers (0 for no row or NULL); bind, if given, is its ?1. */
static CK_RV src_int(struct migrate *m, const char *sql, const char *bind, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(m->src, sql, -1, &st, NULL);
    CK_RV rv = CKR_OK;

    if (rc == SQLITE_OK && bind) rc = sqlite3_bind_text(st, 1, bind, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) rv = src_fail(m, sql);
    sqlite3_finalize(st);
    return rv;
}

/* Read only, and in a transaction whose first read fixes the snapshot every later read sees
 * (WAL: writers go on meanwhile, and what they commit is not copied). */
static CK_RV src_open(struct migrate *m, const char *path)
{
    int64_t version = 0;
    CK_RV rv;

    if (sqlite3_open_v2(path, &m->src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        return m->src ? src_fail(m, "open") : fail(m, CKR_HOST_MEMORY, "out of memory");
    sqlite3_busy_timeout(m->src, 5000);
    if (sqlite3_exec(m->src, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) return src_fail(m, "begin");
    rv = src_int(m, "SELECT version FROM schema_version WHERE id = 1", NULL, &version);
    if (rv == CKR_OK && version != hf_store_schema_version_current())
        rv = fail(m, CKR_FUNCTION_FAILED, "the source has schema v%lld, this build copies v%d",
                  (long long)version, hf_store_schema_version_current());
    return rv;
}

static const struct table *table_find(const char *name)
{
    for (size_t i = 0; i < N_TABLES; i++)
        if (strcmp(tables[i].name, name) == 0) return &tables[i];
    return NULL;
}

/* Every table of the source is one this build copies ("every row of every table"): a table a
 * newer build added would otherwise be left behind without a word. */
static CK_RV src_tables_known(struct migrate *m)
{
    sqlite3_stmt *st = NULL;
    CK_RV rv = CKR_OK;
    int rc = sqlite3_prepare_v2(m->src,
                                "SELECT name FROM sqlite_master WHERE type = 'table' AND name "
                                "NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name != 'schema_version'",
                                -1, &st, NULL);

    while (rc == SQLITE_OK && rv == CKR_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (!name || !table_find(name))
            rv = fail(m, CKR_FUNCTION_FAILED,
                      "the source has a table this build does not copy (%.64s): refused",
                      name ? name : "?");
        rc = SQLITE_OK;
    }
    if (rv == CKR_OK && rc != SQLITE_DONE) rv = src_fail(m, "list tables");
    sqlite3_finalize(st);
    return rv;
}

/* Each table has the columns copied, no more (a column added by hand would be lost), and its
 * row count in the snapshot, to compare with the destination's before COMMIT. */
static CK_RV src_check(struct migrate *m)
{
    char sql[128];
    int64_t n = 0;
    CK_RV rv = src_tables_known(m);

    for (size_t i = 0; rv == CKR_OK && i < N_TABLES; i++) {
        rv = src_int(m, "SELECT count(*) FROM pragma_table_info(?1)", tables[i].name, &n);
        if (rv == CKR_OK && (size_t)n != cols_of(&tables[i]))
            rv = fail(m, CKR_FUNCTION_FAILED,
                      "the source's %s has %lld columns, this build copies %zu: refused",
                      tables[i].name, (long long)n, cols_of(&tables[i]));
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", tables[i].name);
        if (rv == CKR_OK) rv = src_int(m, sql, NULL, &n);
        if (rv == CKR_OK) m->src_rows[i] = (uint64_t)n;
    }
    return rv;
}

/* ---- the destination: one transaction ---- */

static CK_RV dst_fail(struct migrate *m, const PGresult *res, const char *what)
{
    char msg[200];
    /* The primary message only: DETAIL may quote a row's values. */
    const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

    snprintf(msg, sizeof(msg), "%s", primary ? primary : PQerrorMessage(m->dst));
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\t') *p = ' ';
    hf_log_error("store migrate: %s at %s: %s", what, m->res->where, msg);
    return fail(m, CKR_DEVICE_ERROR, "%s at %s failed: %s", what, m->res->where, msg);
}

/* Runs sql with text parameters; *out (may be NULL) keeps the result on success. */
static CK_RV dst_run(struct migrate *m, const char *sql, int n, const char *const *values,
                     const char *what, PGresult **out)
{
    PGresult *res = PQexecParams(m->dst, sql, n, NULL, values, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(res);
    CK_RV rv = CKR_OK;

    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) rv = dst_fail(m, res, what);
    if (rv == CKR_OK && out) {
        *out = res;
        return CKR_OK;
    }
    PQclear(res);
    return rv;
}

static CK_RV dst_uint(struct migrate *m, const char *sql, const char *what, uint64_t *out)
{
    PGresult *res = NULL;
    CK_RV rv = dst_run(m, sql, 0, NULL, what, &res);

    if (rv == CKR_OK && (PQntuples(res) != 1 || PQgetisnull(res, 0, 0)))
        rv = dst_fail(m, res, what);
    if (rv == CKR_OK) *out = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return rv;
}

static CK_RV dst_count(struct migrate *m, const struct table *t, uint64_t *n)
{
    char sql[128];

    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", t->name);
    return dst_uint(m, sql, t->name, n);
}

/* Defaults first, the locator last (libpq lets the later value win). */
static CK_RV dst_open(struct migrate *m, const char *locator)
{
    static const char *const keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *values[] = {"5", "holdfast-migrate", locator, NULL};

    if (!(m->dst = PQconnectdbParams(keys, values, 1)))
        return fail(m, CKR_HOST_MEMORY, "out of memory");
    snprintf(m->res->where, sizeof(m->res->where), "%s:%s/%s",
             PQhost(m->dst) ? PQhost(m->dst) : "?", PQport(m->dst) ? PQport(m->dst) : "?",
             PQdb(m->dst) ? PQdb(m->dst) : "?");
    return PQstatus(m->dst) == CONNECTION_OK ? CKR_OK : dst_fail(m, NULL, "connecting");
}

/* EXCLUSIVE: readers go on, but no writer (a node already pointed at the server) can slip a row
 * in between the emptiness check and COMMIT. lock_timeout: a node's long transaction makes the
 * migration fail, not hang. */
static CK_RV dst_begin(struct migrate *m)
{
    char lock[512] = "LOCK TABLE ";
    size_t len = strlen(lock);
    uint64_t version = 0;
    CK_RV rv;

    for (size_t i = 0; i < N_TABLES; i++)
        len +=
            (size_t)snprintf(lock + len, sizeof(lock) - len, "%s%s", i ? ", " : "", tables[i].name);
    snprintf(lock + len, sizeof(lock) - len, " IN EXCLUSIVE MODE");
    rv = dst_run(m, "BEGIN ISOLATION LEVEL READ COMMITTED", 0, NULL, "begin", NULL);
    if (rv == CKR_OK) rv = dst_run(m, "SET LOCAL lock_timeout = '10s'", 0, NULL, "begin", NULL);
    if (rv == CKR_OK) rv = dst_run(m, lock, 0, NULL, "locking the tables", NULL);
    if (rv == CKR_OK)
        rv = dst_uint(m, "SELECT version FROM schema_version WHERE id = 1", "schema", &version);
    if (rv == CKR_OK && version != (uint64_t)hf_store_schema_version_current())
        rv = fail(m, CKR_FUNCTION_FAILED, "the destination has schema v%llu, this build copies v%d",
                  (unsigned long long)version, hf_store_schema_version_current());
    return rv;
}

/* Never a merge: a row of the destination's own beside the copied ones would be a key (or link,
 * or pool) the source's token never saw, or a clash of ids. Only what a fresh schema seeds (the
 * link types) and what `holdfast init` on the server writes (meta: PINs, serial, checkpoint) is
 * replaced: no key depends on it, and the keys copied belong to the source's token. */
static CK_RV dst_make_room(struct migrate *m)
{
    char held[200] = "", sql[64];
    size_t len = 0;
    uint64_t n = 0;
    PGresult *res = NULL;
    CK_RV rv = CKR_OK;

    for (size_t i = 0; rv == CKR_OK && i < N_TABLES; i++) {
        if (tables[i].replaced) continue;
        if ((rv = dst_count(m, &tables[i], &n)) == CKR_OK && n > 0 && len < sizeof(held))
            len += (size_t)snprintf(held + len, sizeof(held) - len, "%s%s %llu", len ? ", " : "",
                                    tables[i].name, (unsigned long long)n);
    }
    if (rv == CKR_OK && held[0])
        return fail(m, CKR_ACTION_PROHIBITED,
                    "the destination %s is not empty (rows: %s): a store moves into an empty "
                    "one only, never merged; nothing was written",
                    m->res->where, held);
    for (size_t i = 0; rv == CKR_OK && i < N_TABLES; i++) {
        if (!tables[i].replaced) continue;
        snprintf(sql, sizeof(sql), "DELETE FROM %s", tables[i].name);
        rv = dst_run(m, sql, 0, NULL, tables[i].name, &res);
        if (rv == CKR_OK && strcmp(tables[i].name, "meta") == 0)
            m->res->meta_replaced = strtoull(PQcmdTuples(res), NULL, 10);
        PQclear(res);
        res = NULL;
    }
    return rv;
}

/* One row, as the source has it: integers as text (PostgreSQL parses them into INTEGER or
 * BIGINT alike), text as text, blobs as binary bytea, NULL as NULL. */
static CK_RV row_copy(struct migrate *m, const struct table *t, sqlite3_stmt *st)
{
    const char *values[MAX_COLS];
    int lengths[MAX_COLS] = {0}, formats[MAX_COLS] = {0};
    char nums[MAX_COLS][24];
    int n = (int)cols_of(t);
    PGresult *res;
    CK_RV rv;

    for (int c = 0; c < n; c++) {
        values[c] = NULL;
        if (sqlite3_column_type(st, c) == SQLITE_NULL) continue;
        if (t->types[c] == 'I') {
            snprintf(nums[c], sizeof(nums[c]), "%lld", (long long)sqlite3_column_int64(st, c));
            values[c] = nums[c];
        } else if (t->types[c] == 'T') {
            values[c] = (const char *)sqlite3_column_text(st, c);
            /* A text parameter ends at its first NUL: refused rather than cut short. */
            if (values[c] && strlen(values[c]) != (size_t)sqlite3_column_bytes(st, c))
                return fail(m, CKR_FUNCTION_FAILED,
                            "a %s row holds a NUL byte in a text column, which PostgreSQL "
                            "cannot store: refused",
                            t->name);
        } else {
            values[c] = sqlite3_column_blob(st, c);
            lengths[c] = sqlite3_column_bytes(st, c);
            formats[c] = 1;
            if (!values[c] && lengths[c] == 0) values[c] = ""; /* empty, not NULL */
        }
        if (!values[c]) return fail(m, CKR_HOST_MEMORY, "out of memory");
    }
    res = PQexecPrepared(m->dst, "", n, values, lengths, formats, 0);
    rv = PQresultStatus(res) == PGRES_COMMAND_OK ? CKR_OK : dst_fail(m, res, t->name);
    PQclear(res);
    return rv;
}

/* "INSERT INTO t (cols) OVERRIDING SYSTEM VALUE VALUES ($1,...)": identity ids as they are. */
static CK_RV insert_prepare(struct migrate *m, const struct table *t)
{
    char sql[768];
    int len = snprintf(sql, sizeof(sql), "INSERT INTO %s (%s) %sVALUES (", t->name, t->cols,
                       t->has_id ? "OVERRIDING SYSTEM VALUE " : "");
    PGresult *res;
    CK_RV rv;

    for (size_t c = 0; c < cols_of(t); c++)
        len += snprintf(sql + len, sizeof(sql) - (size_t)len, "%s$%zu", c ? "," : "", c + 1);
    snprintf(sql + len, sizeof(sql) - (size_t)len, ")");
    res = PQprepare(m->dst, "", sql, (int)cols_of(t), NULL);
    rv = PQresultStatus(res) == PGRES_COMMAND_OK ? CKR_OK : dst_fail(m, res, t->name);
    PQclear(res);
    return rv;
}

static CK_RV table_copy(struct migrate *m, size_t i)
{
    const struct table *t = &tables[i];
    sqlite3_stmt *st = NULL;
    char sql[256];
    int rc = SQLITE_OK;
    CK_RV rv = insert_prepare(m, t);

    snprintf(sql, sizeof(sql), "SELECT %s FROM %s ORDER BY %s", t->cols, t->name, t->order);
    if (rv == CKR_OK && sqlite3_prepare_v2(m->src, sql, -1, &st, NULL) != SQLITE_OK)
        rv = src_fail(m, t->name);
    while (rv == CKR_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
        if ((rv = row_copy(m, t, st)) == CKR_OK) m->res->tables[i].rows++;
    if (rv == CKR_OK && rc != SQLITE_DONE) rv = src_fail(m, t->name);
    sqlite3_finalize(st);
    return rv;
}

/* The id sequence past every id the source ever handed out: its highest row, or higher when its
 * last rows were deleted (sqlite_sequence remembers), and never moved back. setval is not undone
 * by a ROLLBACK: a failed migration leaves the sequence ahead, which costs nothing. */
static CK_RV sequence_move(struct migrate *m, const struct table *t)
{
    char sql[128], next[24];
    int64_t top = 0, seq = 0;
    const char *values[2] = {t->name, next};
    CK_RV rv;

    snprintf(sql, sizeof(sql), "SELECT max(id) FROM %s", t->name);
    rv = src_int(m, sql, NULL, &top);
    if (rv == CKR_OK)
        rv = src_int(m, "SELECT seq FROM sqlite_sequence WHERE name = ?1", t->name, &seq);
    if (rv != CKR_OK || (top = top > seq ? top : seq) <= 0) return rv;
    snprintf(next, sizeof(next), "%lld", (long long)top);
    return dst_run(m,
                   "SELECT setval(q.s, GREATEST($2::bigint, COALESCE(pg_sequence_last_value(q.s), "
                   "0))) FROM (SELECT pg_get_serial_sequence($1, 'id')::regclass AS s) q",
                   2, values, "moving the id sequence", NULL);
}

static CK_RV counts_check(struct migrate *m)
{
    uint64_t n = 0;
    CK_RV rv = CKR_OK;

    for (size_t i = 0; rv == CKR_OK && i < N_TABLES; i++) {
        if ((rv = dst_count(m, &tables[i], &n)) != CKR_OK) break;
        if (n != m->src_rows[i] || m->res->tables[i].rows != m->src_rows[i])
            rv = fail(m, CKR_FUNCTION_FAILED,
                      "%s: %llu rows in the source, %llu copied, %llu in the destination: rolled "
                      "back",
                      tables[i].name, (unsigned long long)m->src_rows[i],
                      (unsigned long long)m->res->tables[i].rows, (unsigned long long)n);
    }
    return rv;
}

/* Announced as a link change from no handle of theirs: every listener drops its link answers
 * and moves its data version (store-pg.c, heard()). Delivered at COMMIT, never for a rollback. */
static CK_RV dst_commit(struct migrate *m)
{
    char payload[HF_UUID_LEN + 8];
    const char *values[1] = {payload};
    PGresult *res;
    CK_RV rv;

    hf_uuid_generate(payload);
    strcat(payload, " link");
    rv = dst_run(m, "SELECT pg_notify('" HF_STORE_PG_CHANNEL "', $1)", 1, values, "notify", NULL);
    if (rv != CKR_OK) return rv;
    res = PQexec(m->dst, "COMMIT");
    /* A COMMIT of a failed transaction answers ROLLBACK: that is no commit. */
    if (PQresultStatus(res) != PGRES_COMMAND_OK || strcmp(PQcmdStatus(res), "COMMIT") != 0)
        rv = dst_fail(m, res, "commit");
    PQclear(res);
    return rv;
}

static CK_RV copy_all(struct migrate *m)
{
    CK_RV rv = dst_begin(m);

    if (rv == CKR_OK) rv = dst_make_room(m);
    for (size_t i = 0; rv == CKR_OK && i < N_TABLES; i++)
        rv = table_copy(m, i);
    for (size_t i = 0; rv == CKR_OK && i < N_TABLES; i++)
        if (tables[i].has_id) rv = sequence_move(m, &tables[i]);
    if (rv == CKR_OK) rv = counts_check(m);
    if (rv == CKR_OK) rv = dst_commit(m);
    return rv;
}

/* Each store through its backend's own open, which migrates it to this build's schema (and
 * creates the destination's tables). */
static CK_RV schemas_ready(struct migrate *m, const char *from, const char *to)
{
    struct hf_store *s = NULL;
    CK_RV rv = hf_store_open(from, &s);

    hf_store_close(s);
    if (rv != CKR_OK) return fail(m, rv, "cannot open the source store (the log says why)");
    s = NULL;
    rv = hf_store_open(to, &s);
    hf_store_close(s);
    if (rv == CKR_ARGUMENTS_BAD)
        return fail(m, rv,
                    "the destination locator is refused (the log says why: a password in "
                    "it? libpq takes it from PGPASSFILE or PGPASSWORD)");
    if (rv != CKR_OK) return fail(m, rv, "cannot open the destination store (the log says why)");
    return CKR_OK;
}

static CK_RV locators_check(struct migrate *m, const char *from, const char *to)
{
    const char *path = hf_store_locator_file(from);

    if (!path)
        return fail(m, CKR_ARGUMENTS_BAD, "--from must name an SQLite store (PATH or sqlite:PATH)");
    if (!hf_store_locator_is_pg(to))
        return fail(m, CKR_ARGUMENTS_BAD,
                    "--to must name a PostgreSQL store (postgresql://USER@HOST:PORT/DB)");
    /* hf_store_open would create a missing file, and copy an empty store. */
    if (access(path, F_OK) != 0)
        return fail(m, errno == ENOENT ? CKR_KEY_HANDLE_INVALID : CKR_DEVICE_ERROR,
                    "no SQLite store at %.200s: %s", path, strerror(errno));
    return CKR_OK;
}

CK_RV hf_store_migrate(const char *from, const char *to, struct hf_store_migrate_result *result)
{
    struct migrate m = {.res = result};
    CK_RV rv;

    if (!result) return CKR_ARGUMENTS_BAD;
    memset(result, 0, sizeof(*result));
    for (size_t i = 0; i < N_TABLES; i++)
        result->tables[i].table = tables[i].name;
    result->n_tables = N_TABLES;
    if (!from || !to) return fail(&m, CKR_ARGUMENTS_BAD, "a source and a destination are needed");
    /* Before any PQ call, the cleanup's included: libpq is loaded, not linked (pq-api.h). */
    if ((rv = hf_pq_load()) != CKR_OK) return fail(&m, rv, "libpq could not be loaded");
    rv = locators_check(&m, from, to);
    if (rv == CKR_OK) rv = schemas_ready(&m, from, to);
    if (rv == CKR_OK) rv = src_open(&m, hf_store_locator_file(from));
    if (rv == CKR_OK) rv = src_check(&m);
    if (rv == CKR_OK) rv = dst_open(&m, to);
    if (rv == CKR_OK) rv = copy_all(&m);
    if (rv == CKR_OK) hf_log_info("store migrate: copied into %s", result->where);
    if (m.dst && PQstatus(m.dst) == CONNECTION_OK && PQtransactionStatus(m.dst) != PQTRANS_IDLE)
        PQclear(PQexec(m.dst, "ROLLBACK"));
    PQfinish(m.dst);
    if (m.src) sqlite3_exec(m.src, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(m.src);
    return rv;
}
