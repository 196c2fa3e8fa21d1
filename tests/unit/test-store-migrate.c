#include "hf-build.h"

#include "harness.h"
#include "pkcs11/core/store-migrate.h"
#include "pkcs11/core/store.h"

#include <libpq-fe.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* hf_store_migrate from a SQLite file into PostgreSQL (HF_TEST_STORE_PG names the database:
 * tests/unit/store-migrate-pg.sh starts a server), each case into a schema of its own. The
 * stores carry no policy here (no HSM): rows are written without MAC and read unchecked, so the
 * MACs are forged into the source with sqlite3 to see them arrive. */

static const char *pg_base;
static char src_path[PATH_MAX];
static char dst[PATH_MAX + 256]; /* pg_base on this case's schema */
static char schema[64];
static struct hf_store *src;
static int counter;

static void pg_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static int pg_exec(const char *sql)
{
    PGconn *pg = PQconnectdb(pg_base);
    PGresult *res = NULL;
    int rc = -1;

    if (PQstatus(pg) == CONNECTION_OK) {
        PQsetNoticeProcessor(pg, pg_quiet, NULL);
        res = PQexec(pg, sql);
        rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -1;
    }
    if (rc != 0) fprintf(stderr, "pg_exec: %s", PQerrorMessage(pg));
    PQclear(res);
    PQfinish(pg);
    return rc;
}

static int sq_exec(const char *sql)
{
    sqlite3 *db = NULL;
    int rc =
        sqlite3_open(src_path, &db) == SQLITE_OK ? sqlite3_exec(db, sql, NULL, NULL, NULL) : -1;

    sqlite3_close(db);
    return rc;
}

static void setup(void)
{
    char sql[128];

    snprintf(src_path, sizeof(src_path), "%s/hf-migrate-%d-%d.db",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), ++counter);
    snprintf(schema, sizeof(schema), "hf_migrate_%d_%d", (int)getpid(), counter);
    snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", schema);
    if (pg_exec(sql) != 0) schema[0] = '\0';
    snprintf(dst, sizeof(dst), "%s%soptions=-csearch_path%%3D%s", pg_base,
             strchr(pg_base, '?') ? "&" : "?", schema);
    if (hf_store_open(src_path, &src) != CKR_OK) src = NULL;
}

static void teardown(void)
{
    char sql[128], side[PATH_MAX + 8];

    hf_store_close(src);
    src = NULL;
    unlink(src_path);
    snprintf(side, sizeof(side), "%s-wal", src_path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", src_path);
    unlink(side);
    snprintf(sql, sizeof(sql), "DROP SCHEMA %s CASCADE", schema);
    if (schema[0]) pg_exec(sql);
}

static const unsigned char material[] = "\x00\x9a WRAPPED \xff";

/* A local AES key named name, version 1 with material; uuid filled. */
static CK_RV key_add(const char *name, char uuid[HF_UUID_LEN + 1])
{
    struct hf_key k = {.alg = HF_ALG_AES, .bits = 256, .state = HF_STATE_ACTIVE};
    struct hf_key_version v = {.state = HF_STATE_ACTIVE, .created = 1700000000};
    CK_RV rv;

    hf_uuid_generate(k.uuid);
    hf_uuid_generate(v.uuid);
    k.name = strdup(name);
    k.usage = hf_usage_default(HF_ALG_AES);
    k.owner = strdup("alice");
    k.source = strdup("local");
    k.created = k.updated = 1700000000;
    hf_key_label_set(&k, "team", "finance");
    v.kek_label = strdup("root-kek");
    v.wrapped = malloc(sizeof(material));
    memcpy(v.wrapped, material, sizeof(material));
    v.wrapped_len = sizeof(material);
    rv = hf_store_key_insert(src, &k, &v);
    memcpy(uuid, k.uuid, sizeof(k.uuid));
    hf_key_clear(&k);
    hf_key_version_clear(&v);
    return rv;
}

static CK_RV rotate(const char *uuid, unsigned to)
{
    struct hf_key_version v = {.version = to, .state = HF_STATE_ACTIVE, .created = 1700000100};
    CK_RV rv;

    hf_uuid_generate(v.uuid);
    memcpy(v.key_uuid, uuid, sizeof(v.key_uuid));
    v.kek_label = strdup("root-kek");
    v.wrapped = malloc(sizeof(material));
    memcpy(v.wrapped, material, sizeof(material));
    v.wrapped_len = sizeof(material);
    rv = hf_store_version_insert(src, &v, 1700000100);
    hf_key_version_clear(&v);
    return rv;
}

static int64_t object_add(const char *label)
{
    struct hf_store_object o = {.cls = 1 /* CKO_CERTIFICATE */, .created = 1700000200};

    o.label = (unsigned char *)strdup(label);
    o.label_len = strlen(label);
    o.value = (unsigned char *)strdup("DER");
    o.value_len = 3;
    int64_t id = hf_store_object_insert(src, &o) == CKR_OK ? o.id : -1;

    hf_store_object_clear(&o);
    return id;
}

/* Two keys (one rotated, one destroyed), labels, links (one blocked), a link type, meta, an
 * object (and one deleted), a pool with two members and its backups, forged MACs. */
static void source_fill(char a[HF_UUID_LEN + 1], char b[HF_UUID_LEN + 1])
{
    struct hf_store_pool_member mem[2] = {
        {.name = "m1",
         .module_path = "/lib/m.so",
         .token_label = "t1",
         .pin_env = "P",
         .concurrency = 2},
        {.name = "m2",
         .module_path = "/lib/m.so",
         .token_serial = "42",
         .pin_file = "/p",
         .concurrency = 1},
    };
    struct hf_store_pool pool = {.name = "p1",
                                 .mode = HF_POOL_MODE_EXPORT,
                                 .members = mem,
                                 .n_members = 2,
                                 .created = 1,
                                 .updated = 2};
    struct hf_link l1 = {.type = "aws-xks", .ext_id = "x1", .created = 3, .updated = 3};
    struct hf_link l2 = {.type = "my-cloud", .ext_id = "x2", .created = 4, .updated = 4};

    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    CU_ASSERT_EQUAL_FATAL(key_add("payroll", a), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(rotate(a, 2), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(key_add("gone", b), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_store_key_destroy(src, b, 1700000300), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_link_type_add(src, "my-cloud", 5, NULL), CKR_OK);
    memcpy(l1.key_uuid, a, sizeof(l1.key_uuid));
    memcpy(l2.key_uuid, a, sizeof(l2.key_uuid));
    CU_ASSERT_EQUAL(hf_store_link_insert(src, &l1), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_link_insert(src, &l2), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_link_set_blocked(src, "my-cloud", "x2", true, 6), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_meta_set(src, "pin.so", "pbkdf2$source"), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_meta_set(src, "token.serial", "0011223344556677"), CKR_OK);
    CU_ASSERT_TRUE(object_add("kept") > 0);
    CU_ASSERT_EQUAL(hf_store_object_delete(src, object_add("deleted")), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_store_pool_insert(src, &pool), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_pool_backup_add(src, "p1", HF_POOL_BACKUP_KEK,
                                             (const unsigned char *)"\x00kek", 4),
                    CKR_OK);
    CU_ASSERT_EQUAL(sq_exec("UPDATE keys SET mac = zeroblob(31) || x'01';"
                            "UPDATE links SET mac = zeroblob(31) || x'02';"
                            "UPDATE key_versions SET mac = zeroblob(31) || x'03' "
                            "WHERE wrapped IS NOT NULL;"
                            "UPDATE pools SET mac = zeroblob(31) || x'04'"),
                    SQLITE_OK);
}

static uint64_t rows_of(const struct hf_store_migrate_result *r, const char *table)
{
    for (size_t i = 0; i < r->n_tables; i++)
        if (strcmp(r->tables[i].table, table) == 0) return r->tables[i].rows;
    return UINT64_MAX;
}

static void test_every_row_arrives_as_it_was(void)
{
    char a[HF_UUID_LEN + 1], b[HF_UUID_LEN + 1], *v = NULL;
    struct hf_store_migrate_result r;
    struct hf_store *d = NULL;
    struct hf_key k = {0};
    struct hf_key_version *vs = NULL, s1 = {0}, d1 = {0};
    struct hf_link l = {0};
    struct hf_store_pool p = {0};
    struct hf_store_object *objs = NULL;
    unsigned char *blob = NULL;
    size_t n = 0, len = 0;

    source_fill(a, b);
    CU_ASSERT_EQUAL(hf_store_version_find(src, a, 1, &s1), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_store_migrate(src_path, dst, &r), CKR_OK);
    CU_ASSERT_STRING_EQUAL(r.reason, "");
    CU_ASSERT_EQUAL(rows_of(&r, "keys"), 2);
    CU_ASSERT_EQUAL(rows_of(&r, "key_versions"), 3);
    CU_ASSERT_EQUAL(rows_of(&r, "links"), 2);
    CU_ASSERT_EQUAL(rows_of(&r, "link_types"), 7);
    CU_ASSERT_EQUAL(rows_of(&r, "objects"), 1);
    CU_ASSERT_EQUAL(rows_of(&r, "pool_members"), 2);
    CU_ASSERT_EQUAL(rows_of(&r, "pool_backups"), 1);
    CU_ASSERT_EQUAL_FATAL(hf_store_open(dst, &d), CKR_OK);

    CU_ASSERT_EQUAL(hf_store_key_get(d, "payroll", &k), CKR_OK);
    CU_ASSERT_STRING_EQUAL(k.uuid, a);
    CU_ASSERT_EQUAL(k.current_version, 2);
    CU_ASSERT_TRUE(k.has_mac && k.mac[31] == 1);
    CU_ASSERT_TRUE(k.n_labels == 1 && strcmp(k.labels[0].value, "finance") == 0);
    hf_key_clear(&k);
    CU_ASSERT_EQUAL(hf_store_key_get(d, b, &k), CKR_OK);
    CU_ASSERT_EQUAL(k.state, HF_STATE_DESTROYED);
    hf_key_clear(&k);
    CU_ASSERT_EQUAL(hf_store_version_find(d, a, 1, &d1), CKR_OK);
    CU_ASSERT_EQUAL(d1.id, s1.id);
    CU_ASSERT_STRING_EQUAL(d1.uuid, s1.uuid);
    CU_ASSERT_TRUE(d1.wrapped_len == sizeof(material) &&
                   memcmp(d1.wrapped, material, sizeof(material)) == 0);
    CU_ASSERT_TRUE(d1.has_mac && d1.mac[31] == 3);
    CU_ASSERT_EQUAL(hf_store_version_list(d, b, &vs, &n), CKR_OK);
    CU_ASSERT_TRUE(n == 1 && vs[0].wrapped == NULL && !vs[0].has_mac);
    for (size_t i = 0; i < n; i++)
        hf_key_version_clear(&vs[i]);
    free(vs);

    CU_ASSERT_EQUAL(hf_store_link_get(d, "my-cloud", "x2", &l), CKR_OK);
    CU_ASSERT_TRUE(l.blocked && l.has_mac && l.mac[31] == 2);
    hf_link_clear(&l);
    CU_ASSERT_EQUAL(hf_store_link_type_get(d, "my-cloud"), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_meta_get(d, "pin.so", &v), CKR_OK);
    CU_ASSERT_STRING_EQUAL(v ? v : "", "pbkdf2$source");
    free(v);
    CU_ASSERT_EQUAL(hf_store_object_list(d, &objs, &n), CKR_OK);
    CU_ASSERT_TRUE(n == 1 && objs[0].label_len == 4 && memcmp(objs[0].label, "kept", 4) == 0);
    for (size_t i = 0; i < n; i++)
        hf_store_object_clear(&objs[i]);
    free(objs);
    CU_ASSERT_EQUAL(hf_store_pool_get(d, "p1", &p), CKR_OK);
    CU_ASSERT_TRUE(p.n_members == 2 && p.members[1].token_serial &&
                   strcmp(p.members[1].token_serial, "42") == 0 && p.mac[31] == 4);
    hf_store_pool_clear(&p);
    CU_ASSERT_EQUAL(hf_store_pool_backup_get(d, "p1", HF_POOL_BACKUP_KEK, &blob, &len), CKR_OK);
    CU_ASSERT_TRUE(len == 4 && memcmp(blob, "\x00kek", 4) == 0);
    free(blob);
    hf_key_version_clear(&s1);
    hf_key_version_clear(&d1);
    hf_store_close(d);
}

/* Ids never come back: past the copied rows, and past the object deleted at the top. */
static void test_new_rows_take_ids_past_the_source(void)
{
    char a[HF_UUID_LEN + 1], b[HF_UUID_LEN + 1];
    struct hf_store_migrate_result r;
    struct hf_store_object o = {.cls = 0, .created = 1};
    struct hf_key_version v = {0};
    struct hf_store *d = NULL;

    source_fill(a, b);
    CU_ASSERT_EQUAL_FATAL(hf_store_migrate(src_path, dst, &r), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_store_open(dst, &d), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_object_insert(d, &o), CKR_OK);
    CU_ASSERT_EQUAL(o.id, 3); /* 1 kept, 2 deleted in the source */
    hf_store_close(src);
    src = d; /* key_add writes through src */
    CU_ASSERT_EQUAL(key_add("fresh", a), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_version_find(d, a, 1, &v), CKR_OK);
    CU_ASSERT_EQUAL(v.id, 4); /* 3 versions copied */
    hf_key_version_clear(&v);
}

static void test_a_filled_destination_is_refused_and_left_as_it_is(void)
{
    char a[HF_UUID_LEN + 1], b[HF_UUID_LEN + 1];
    struct hf_store_migrate_result r;
    struct hf_store *d = NULL;
    struct hf_key *keys = NULL;
    size_t n = 0;

    source_fill(a, b);
    CU_ASSERT_EQUAL_FATAL(hf_store_migrate(src_path, dst, &r), CKR_OK);
    CU_ASSERT_EQUAL(key_add("later", a), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_migrate(src_path, dst, &r), CKR_ACTION_PROHIBITED);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.reason, "not empty (rows: keys 2, key_labels 2"));
    CU_ASSERT_EQUAL_FATAL(hf_store_open(dst, &d), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_key_list(d, &keys, &n), CKR_OK);
    CU_ASSERT_EQUAL(n, 2);
    for (size_t i = 0; i < n; i++)
        hf_key_clear(&keys[i]);
    free(keys);
    hf_store_close(d);
}

/* What an init against the server wrote belongs to another token: the source's replaces it. */
static void test_the_destinations_own_meta_is_replaced(void)
{
    char a[HF_UUID_LEN + 1], b[HF_UUID_LEN + 1], *v = NULL;
    struct hf_store_migrate_result r;
    struct hf_store *d = NULL;

    source_fill(a, b);
    CU_ASSERT_EQUAL_FATAL(hf_store_open(dst, &d), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_meta_set(d, "pin.so", "pbkdf2$dest"), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_meta_set(d, "dest.only", "x"), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_store_migrate(src_path, dst, &r), CKR_OK);
    CU_ASSERT_EQUAL(r.meta_replaced, 2);
    CU_ASSERT_EQUAL(hf_store_meta_get(d, "pin.so", &v), CKR_OK);
    CU_ASSERT_STRING_EQUAL(v ? v : "", "pbkdf2$source");
    free(v);
    CU_ASSERT_EQUAL(hf_store_meta_get(d, "dest.only", &v), CKR_KEY_HANDLE_INVALID);
    hf_store_close(d);
}

/* "Every row of every table": a table this build does not know is not left behind silently. */
static void test_a_source_table_it_does_not_know_is_refused(void)
{
    struct hf_store_migrate_result r;

    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    CU_ASSERT_EQUAL(sq_exec("CREATE TABLE extra (x)"), SQLITE_OK);
    CU_ASSERT_EQUAL(hf_store_migrate(src_path, dst, &r), CKR_FUNCTION_FAILED);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.reason, "(extra)"));
    CU_ASSERT_EQUAL(sq_exec("DROP TABLE extra; ALTER TABLE meta ADD COLUMN extra"), SQLITE_OK);
    CU_ASSERT_EQUAL(hf_store_migrate(src_path, dst, &r), CKR_FUNCTION_FAILED);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.reason, "meta has 3 columns"));
}

static void test_a_missing_source_or_a_wrong_locator_creates_nothing(void)
{
    struct hf_store_migrate_result r;
    char missing[PATH_MAX + 16], sq[PATH_MAX + 32];

    snprintf(missing, sizeof(missing), "%s.missing", src_path);
    snprintf(sq, sizeof(sq), "sqlite:%s", missing);
    CU_ASSERT_EQUAL(hf_store_migrate(sq, dst, &r), CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.reason, "no SQLite store at"));
    CU_ASSERT_NOT_EQUAL(access(missing, F_OK), 0);
    CU_ASSERT_EQUAL(hf_store_migrate(src_path, missing, &r), CKR_ARGUMENTS_BAD);
    CU_ASSERT_NOT_EQUAL(access(missing, F_OK), 0);
    CU_ASSERT_EQUAL(hf_store_migrate(dst, dst, &r), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_store_migrate(src_path, dst, NULL), CKR_ARGUMENTS_BAD);
}

#define T(name, fn)                                                                                \
    {                                                                                              \
        name, fn                                                                                   \
    }
static CU_TestInfo tests[] = {
    T("every row arrives as it was", test_every_row_arrives_as_it_was),
    T("new rows take ids past the source's", test_new_rows_take_ids_past_the_source),
    T("a filled destination is refused and left as it is",
      test_a_filled_destination_is_refused_and_left_as_it_is),
    T("the destination's own meta is replaced", test_the_destinations_own_meta_is_replaced),
    T("a source table it does not know is refused",
      test_a_source_table_it_does_not_know_is_refused),
    T("a missing source or a wrong locator creates nothing",
      test_a_missing_source_or_a_wrong_locator_creates_nothing),
    CU_TEST_INFO_NULL,
};

static int suite_nop(void)
{
    return 0;
}

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"store migrate", suite_nop, suite_nop, setup, teardown, tests},
        CU_SUITE_INFO_NULL,
    };

    pg_base = getenv("HF_TEST_STORE_PG");
    if (!pg_base || !*pg_base) {
        printf("SKIP: HF_TEST_STORE_PG names no PostgreSQL database (store-migrate-pg.sh)\n");
        return 77;
    }
    return hf_test_run(suites);
}
