/* Key policy bound to the key (policy.h, source-local.h): edits made to the store behind
 * Holdfast's back (here with SQLite directly, as anyone who can write holdfast.db could) are
 * refused when the row is loaded, and audited; the edits Holdfast makes itself keep working; a
 * store made before policy MACs is migrated by the first core that opens it. */
#include "hf-build.h"

#include "harness.h"

#include <json-c/json.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pkcs11/core/core.h"
#include "pkcs11/core/hsm.h"
#include "pkcs11/core/secmem.h"
#include "pkcs11/core/store.h"

static const struct hf_actor cli = {"cli", "uid:4242"};

/* ---- helpers ---- */

/* Runs SQL on the store file as an outsider would (a connection of its own, no Holdfast). */
static void sql(const char *path, const char *fmt, ...)
{
    char text[2048];
    sqlite3 *db = NULL;
    char *err = NULL;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    if (sqlite3_exec(db, text, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "\n  sql: %s: %s\n", text, err ? err : "?");
        CU_FAIL("sql failed");
    }
    sqlite3_free(err);
    sqlite3_close(db);
}

/* The one integer the query answers (-1: none). */
static long long sql_int(const char *path, const char *query)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long long v = -1;

    CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
    if (sqlite3_prepare_v2(db, query, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* The last policy.check record names key_uuid and says result. */
static void audited(const char *audit_path, const char *key_uuid, CK_RV result)
{
    json_object *rec = hf_test_audit_find_last(audit_path, "policy.check");
    char want[32];

    snprintf(want, sizeof(want), "0x%lx", (unsigned long)result);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(rec, "key"), key_uuid);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(rec, "result"), want);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(rec, "ok"), "false");
    json_object_put(rec);
}

static struct hf_key_spec spec_of(const char *name, enum hf_alg alg, unsigned bits)
{
    struct hf_key_spec spec = {.name = name, .alg = alg, .bits = bits};
    return spec;
}

/* The raw bytes of a version's material through the core; CK_RV of the load. */
static CK_RV material_bytes(struct hf_core *core, const struct hf_key_version *v,
                            unsigned char out[32], size_t *len)
{
    struct hf_material *m = NULL;
    unsigned char *b = NULL;
    size_t n = 0;
    CK_RV rv = hf_core_material(core, v, &m);

    if (rv == CKR_OK) rv = hf_material_to_bytes(m, &b, &n);
    if (rv == CKR_OK && n <= 32) {
        memcpy(out, b, n);
        *len = n;
    }
    hf_secmem_free(b, n);
    hf_material_unref(m);
    return rv;
}

/* ---- one key store: edits behind Holdfast's back ---- */

static struct hf_test_env env;
static struct hf_core *core;
static const char *db_path, *audit_path;

static int store_init(void)
{
    if (hf_test_env_setup(&env, NULL) != 0) return -1;
    db_path = env.cfg.store_path;
    audit_path = env.cfg.audit_path;
    return hf_core_open(&env.cfg, &core) == CKR_OK ? 0 : -1;
}

static int store_cleanup(void)
{
    hf_core_close(core);
    hf_test_env_teardown(&env);
    return 0;
}

static void key_made(const char *name, bool exportable, unsigned long usage, struct hf_key *key,
                     struct hf_key_version *v)
{
    struct hf_key_spec spec = spec_of(name, HF_ALG_AES, 256);

    spec.exportable = exportable;
    spec.usage = usage;
    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &spec, &cli, key, v), CKR_OK);
}

static void test_exportable_flipped_in_the_store_is_refused_and_audited(void)
{
    struct hf_store *store = hf_core_store(core);
    struct hf_key key = {0}, got = {0};
    struct hf_key *all = NULL;
    size_t n = 0;

    key_made("not-for-export", false, 0, &key, NULL);
    sql(db_path, "UPDATE keys SET exportable = 1 WHERE uuid = '%s'", key.uuid);
    CU_ASSERT_EQUAL(hf_store_key_get(store, key.uuid, &got), CKR_HF_POLICY_INVALID);
    CU_ASSERT_EQUAL(hf_store_key_get(store, "not-for-export", &got), CKR_HF_POLICY_INVALID);
    CU_ASSERT_PTR_NULL(got.name); /* nothing of the refused row comes out */
    audited(audit_path, key.uuid, CKR_HF_POLICY_INVALID);
    /* Listings leave it out rather than fail whole. */
    CU_ASSERT_EQUAL(hf_store_key_list(store, &all, &n), CKR_OK);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_STRING_NOT_EQUAL(all[i].uuid, key.uuid);
        hf_key_clear(&all[i]);
    }
    free(all);
    /* Put back, it is the key again. */
    sql(db_path, "UPDATE keys SET exportable = 0 WHERE uuid = '%s'", key.uuid);
    CU_ASSERT_EQUAL(hf_store_key_get(store, key.uuid, &got), CKR_OK);
    CU_ASSERT_FALSE(got.exportable);
    hf_key_clear(&got);
    hf_key_clear(&key);
}

static void test_aes_blobs_swapped_between_keys_are_refused(void)
{
    struct hf_store *store = hf_core_store(core);
    struct hf_key a = {0}, b = {0};
    struct hf_key_version va = {0}, vb = {0};
    unsigned char bytes[32];
    size_t len = 0;

    key_made("swap-secret", false, 0, &a, NULL);
    key_made("swap-exportable", true, 0, &b, NULL);
    sql(db_path,
        "CREATE TEMP TABLE swap AS SELECT key_uuid, wrapped FROM key_versions "
        "WHERE key_uuid IN ('%s', '%s');"
        "UPDATE key_versions SET wrapped = (SELECT wrapped FROM swap "
        "WHERE swap.key_uuid != key_versions.key_uuid) WHERE key_uuid IN ('%s', '%s');",
        a.uuid, b.uuid, a.uuid, b.uuid);
    /* The rows themselves pass (the blob is not policy); the blob names another key. */
    CU_ASSERT_EQUAL_FATAL(hf_store_version_find(store, b.uuid, 0, &vb), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_store_version_find(store, a.uuid, 0, &va), CKR_OK);
    CU_ASSERT_EQUAL(material_bytes(core, &vb, bytes, &len), CKR_WRAPPED_KEY_INVALID);
    audited(audit_path, b.uuid, CKR_WRAPPED_KEY_INVALID);
    CU_ASSERT_EQUAL(material_bytes(core, &va, bytes, &len), CKR_WRAPPED_KEY_INVALID);
    hf_key_clear(&a);
    hf_key_clear(&b);
    hf_key_version_clear(&va);
    hf_key_version_clear(&vb);
}

static void test_versions_blobs_swapped_within_a_key_are_refused(void)
{
    struct hf_store *store = hf_core_store(core);
    struct hf_key key = {0};
    struct hf_key_version v1 = {0}, v2 = {0};
    unsigned char bytes[32];
    size_t len = 0;

    key_made("swap-versions", false, 0, &key, NULL);
    CU_ASSERT_EQUAL_FATAL(hf_core_key_rotate(core, key.uuid, &cli, NULL), CKR_OK);
    sql(db_path,
        "CREATE TEMP TABLE vswap AS SELECT version, wrapped FROM key_versions WHERE key_uuid = "
        "'%s';"
        "UPDATE key_versions SET wrapped = (SELECT wrapped FROM vswap "
        "WHERE vswap.version != key_versions.version) WHERE key_uuid = '%s';",
        key.uuid, key.uuid);
    CU_ASSERT_EQUAL_FATAL(hf_store_version_find(store, key.uuid, 1, &v1), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_store_version_find(store, key.uuid, 2, &v2), CKR_OK);
    CU_ASSERT_EQUAL(material_bytes(core, &v1, bytes, &len), CKR_WRAPPED_KEY_INVALID);
    CU_ASSERT_EQUAL(material_bytes(core, &v2, bytes, &len), CKR_WRAPPED_KEY_INVALID);
    hf_key_clear(&key);
    hf_key_version_clear(&v1);
    hf_key_version_clear(&v2);
}

static void test_usage_state_and_current_version_edits_are_refused(void)
{
    struct hf_store *store = hf_core_store(core);
    struct hf_key key = {0}, got = {0};

    key_made("decrypt-only", false, HF_USAGE_DECRYPT, &key, NULL);
    sql(db_path, "UPDATE keys SET usage = 63 WHERE uuid = '%s'", key.uuid);
    CU_ASSERT_EQUAL(hf_store_key_get(store, key.uuid, &got), CKR_HF_POLICY_INVALID);
    audited(audit_path, key.uuid, CKR_HF_POLICY_INVALID);
    sql(db_path, "UPDATE keys SET usage = %lu WHERE uuid = '%s'", HF_USAGE_DECRYPT, key.uuid);
    CU_ASSERT_EQUAL(hf_store_key_get(store, key.uuid, &got), CKR_OK);
    hf_key_clear(&got);

    CU_ASSERT_EQUAL(hf_core_key_set_state(core, key.uuid, HF_STATE_COMPROMISED, &cli), CKR_OK);
    sql(db_path, "UPDATE keys SET state = %lu WHERE uuid = '%s'", HF_STATE_ACTIVE, key.uuid);
    CU_ASSERT_EQUAL(hf_store_key_get(store, key.uuid, &got), CKR_HF_POLICY_INVALID);
    sql(db_path, "UPDATE keys SET state = %lu WHERE uuid = '%s'", HF_STATE_COMPROMISED, key.uuid);

    CU_ASSERT_EQUAL(hf_core_key_rotate(core, key.uuid, &cli, NULL), CKR_KEY_FUNCTION_NOT_PERMITTED);
    sql(db_path, "UPDATE keys SET current_version = 7 WHERE uuid = '%s'", key.uuid);
    CU_ASSERT_EQUAL(hf_store_key_get(store, key.uuid, &got), CKR_HF_POLICY_INVALID);
    sql(db_path, "UPDATE keys SET current_version = 1 WHERE uuid = '%s'", key.uuid);
    CU_ASSERT_EQUAL(hf_store_key_get(store, key.uuid, &got), CKR_OK);
    hf_key_clear(&got);

    /* Labels: an imported key passed off as made in the token (CKA_LOCAL) by deleting one. */
    CU_ASSERT_EQUAL(hf_core_key_label_set(core, key.uuid, "hf.imported", "1", &cli), CKR_OK);
    sql(db_path, "DELETE FROM key_labels WHERE key_uuid = '%s'", key.uuid);
    CU_ASSERT_EQUAL(hf_store_key_get(store, key.uuid, &got), CKR_HF_POLICY_INVALID);
    hf_key_clear(&key);
}

static void test_version_rows_moved_or_edited_are_refused(void)
{
    struct hf_store *store = hf_core_store(core);
    struct hf_key a = {0}, b = {0};
    struct hf_key_version v = {0}, other = {0};
    struct hf_key_spec ec = spec_of("ec-row", HF_ALG_EC, 256);

    key_made("row-owner", false, 0, &a, NULL);
    key_made("row-thief", true, 0, &b, NULL);
    /* a's version row (with its blob) moved under b, b's own taken away */
    sql(db_path,
        "UPDATE key_versions SET key_uuid = '%s', version = 9 WHERE key_uuid = '%s';"
        "UPDATE key_versions SET key_uuid = '%s' WHERE key_uuid = '%s' AND version = 1;"
        "UPDATE key_versions SET version = 1 WHERE key_uuid = '%s' AND version = 9;",
        b.uuid, a.uuid, a.uuid, b.uuid, b.uuid);
    CU_ASSERT_EQUAL(hf_store_version_find(store, b.uuid, 1, &v), CKR_HF_POLICY_INVALID);
    hf_key_version_clear(&v);

    /* An EC version's public key replaced: what the module would verify with. */
    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &ec, &cli, NULL, &v), CKR_OK);
    hf_key_version_clear(&v);
    ec.name = "ec-other";
    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &ec, &cli, NULL, &v), CKR_OK);
    sql(db_path,
        "UPDATE key_versions SET public_der = (SELECT v.public_der FROM key_versions v JOIN keys k "
        "ON k.uuid = v.key_uuid WHERE k.name = 'ec-row') WHERE uuid = '%s'",
        v.uuid);
    CU_ASSERT_EQUAL(hf_store_version_get(store, v.id, &other), CKR_HF_POLICY_INVALID);
    hf_key_version_clear(&v);
    hf_key_clear(&a);
    hf_key_clear(&b);
}

static void test_version_state_changes_are_ruled_audited_and_erase_on_destroy(void)
{
    struct hf_store *store = hf_core_store(core);
    struct hf_key key = {0};
    struct hf_key_version v = {0};
    struct hf_material *m = NULL;
    json_object *rec;
    char q[256];

    key_made("vstate-rules", false, 0, &key, NULL);
    /* The current version of an active key keeps serving new data: rotate first. */
    CU_ASSERT_EQUAL(hf_core_version_set_state(core, key.uuid, 1, HF_STATE_DEACTIVATED, &cli),
                    CKR_KEY_FUNCTION_NOT_PERMITTED);
    rec = hf_test_audit_find_last(audit_path, "key.version_state");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(rec, "ok"), "false");
    json_object_put(rec);
    CU_ASSERT_EQUAL_FATAL(hf_core_key_rotate(core, key.uuid, &cli, NULL), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_version_set_state(core, key.uuid, 3, HF_STATE_DEACTIVATED, &cli),
                    CKR_KEY_HANDLE_INVALID);
    /* An active version is revoked before it is destroyed. */
    CU_ASSERT_EQUAL(hf_core_version_set_state(core, key.uuid, 1, HF_STATE_DESTROYED, &cli),
                    CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(hf_core_version_set_state(core, key.uuid, 1, HF_STATE_DEACTIVATED, &cli),
                    CKR_OK);
    rec = hf_test_audit_find_last(audit_path, "key.version_state");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(rec, "ok"), "true");
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(rec, "key"), key.uuid);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(rec, "detail"),
                           "version=1 state=deactivated (was active)");
    json_object_put(rec);
    CU_ASSERT_EQUAL(hf_core_version_set_state(core, key.uuid, 1, HF_STATE_ACTIVE, &cli),
                    CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL_FATAL(hf_store_version_find(store, key.uuid, 1, &v), CKR_OK);
    CU_ASSERT_EQUAL(v.state, HF_STATE_DEACTIVATED);
    hf_key_version_clear(&v);
    /* The current version may be marked compromised at once (it stops new data). */
    CU_ASSERT_EQUAL(hf_core_version_set_state(core, key.uuid, 2, HF_STATE_COMPROMISED, &cli),
                    CKR_OK);
    /* Destroyed: the material is gone from the row, and from the core. */
    CU_ASSERT_EQUAL(hf_core_version_set_state(core, key.uuid, 1, HF_STATE_DESTROYED, &cli), CKR_OK);
    snprintf(q, sizeof(q),
             "SELECT COUNT(*) FROM key_versions WHERE key_uuid = '%s' AND version = 1 AND "
             "state = 5 AND wrapped IS NULL",
             key.uuid);
    CU_ASSERT_EQUAL(sql_int(db_path, q), 1);
    CU_ASSERT_EQUAL_FATAL(hf_store_version_find(store, key.uuid, 1, &v), CKR_OK);
    CU_ASSERT_EQUAL(v.state, HF_STATE_DESTROYED);
    CU_ASSERT_PTR_NULL(v.wrapped);
    CU_ASSERT_NOT_EQUAL(hf_core_material(core, &v, &m), CKR_OK);
    hf_material_unref(m);
    hf_key_version_clear(&v);
    hf_key_clear(&key);
}

static void test_a_version_state_edited_in_the_store_is_refused(void)
{
    struct hf_store *store = hf_core_store(core);
    struct hf_key key = {0};
    struct hf_key_version v = {0};

    key_made("vstate-edit", false, 0, &key, NULL);
    CU_ASSERT_EQUAL_FATAL(hf_core_key_rotate(core, key.uuid, &cli, NULL), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_core_version_set_state(core, key.uuid, 1, HF_STATE_DEACTIVATED, &cli),
                          CKR_OK);
    /* Revived behind the core's back: the row fails its MAC, audited. */
    sql(db_path, "UPDATE key_versions SET state = 2 WHERE key_uuid = '%s' AND version = 1",
        key.uuid);
    CU_ASSERT_EQUAL(hf_store_version_find(store, key.uuid, 1, &v), CKR_HF_POLICY_INVALID);
    audited(audit_path, key.uuid, CKR_HF_POLICY_INVALID);
    /* Put back, it passes again: the MAC covers the state the core wrote. */
    sql(db_path, "UPDATE key_versions SET state = 3 WHERE key_uuid = '%s' AND version = 1",
        key.uuid);
    CU_ASSERT_EQUAL(hf_store_version_find(store, key.uuid, 1, &v), CKR_OK);
    hf_key_version_clear(&v);
    /* Written as destroyed with its material and MAC still there: refused too. */
    sql(db_path, "UPDATE key_versions SET state = 5 WHERE key_uuid = '%s' AND version = 1",
        key.uuid);
    CU_ASSERT_EQUAL(hf_store_version_find(store, key.uuid, 1, &v), CKR_HF_POLICY_INVALID);
    hf_key_clear(&key);
}

static void test_a_link_unblocked_in_the_store_stays_unusable(void)
{
    struct hf_store *store = hf_core_store(core);
    struct hf_key key = {0};
    struct hf_link link = {0};
    char uuid[HF_UUID_LEN + 1];
    bool blocked = false;

    key_made("killed", false, 0, &key, NULL);
    CU_ASSERT_EQUAL(hf_core_link_add(core, "aws-xks", "kill-switch", key.uuid, &cli), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_link_set_blocked(core, "aws-xks", "kill-switch", true, &cli), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_link_state(store, "aws-xks", "kill-switch", uuid, &blocked), CKR_OK);
    CU_ASSERT_TRUE(blocked);
    sql(db_path, "UPDATE links SET blocked = 0 WHERE ext_id = 'kill-switch'");
    /* Once the cached answer has aged out, the reload fails its MAC: no answer, no use. */
    usleep((HF_LINK_CACHE_MS + 100) * 1000);
    CU_ASSERT_EQUAL(hf_store_link_state(store, "aws-xks", "kill-switch", uuid, &blocked),
                    CKR_HF_POLICY_INVALID);
    CU_ASSERT_EQUAL(hf_store_link_get(store, "aws-xks", "kill-switch", &link),
                    CKR_HF_POLICY_INVALID);
    audited(audit_path, key.uuid, CKR_HF_POLICY_INVALID);
    /* Nor can the edited row be blocked or unblocked over: its MAC is not trusted. */
    CU_ASSERT_EQUAL(hf_core_link_set_blocked(core, "aws-xks", "kill-switch", false, &cli),
                    CKR_HF_POLICY_INVALID);
    sql(db_path, "UPDATE links SET blocked = 1 WHERE ext_id = 'kill-switch'");
    CU_ASSERT_EQUAL(hf_core_link_set_blocked(core, "aws-xks", "kill-switch", false, &cli), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_link_state(store, "aws-xks", "kill-switch", uuid, &blocked), CKR_OK);
    CU_ASSERT_FALSE(blocked);
    hf_key_clear(&key);
}

static void test_a_cleared_mac_is_refused_not_remade(void)
{
    struct hf_store *store = hf_core_store(core);
    struct hf_key key = {0}, got = {0};

    key_made("mac-cleared", false, 0, &key, NULL);
    sql(db_path, "UPDATE keys SET mac = NULL WHERE uuid = '%s'", key.uuid);
    CU_ASSERT_EQUAL(hf_store_key_get(store, key.uuid, &got), CKR_HF_POLICY_INVALID);
    /* A new core on the same token does not take it for a store to migrate. */
    {
        struct hf_core *again = NULL;
        CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &again), CKR_OK);
        CU_ASSERT_EQUAL(hf_store_key_get(hf_core_store(again), key.uuid, &got),
                        CKR_HF_POLICY_INVALID);
        hf_core_close(again);
    }
    CU_ASSERT_EQUAL(sql_int(db_path, "SELECT COUNT(*) FROM keys WHERE mac IS NULL"), 1);
    sql(db_path, "DELETE FROM key_versions WHERE key_uuid = '%s'", key.uuid);
    sql(db_path, "DELETE FROM keys WHERE uuid = '%s'", key.uuid);
    hf_key_clear(&key);
}

static void test_adopt_gives_unmacd_rows_a_mac_but_not_edited_ones(void)
{
    struct hf_store *store = hf_core_store(core);
    struct hf_key cleared = {0}, edited = {0}, got = {0};
    json_object *rec;
    size_t n = 0;

    key_made("restored", false, 0, &cleared, NULL);
    key_made("edited", false, 0, &edited, NULL);
    sql(db_path, "UPDATE keys SET mac = NULL WHERE uuid = '%s'", cleared.uuid);
    sql(db_path, "UPDATE keys SET exportable = 1 WHERE uuid = '%s'", edited.uuid);
    CU_ASSERT_EQUAL(hf_core_policy_adopt(core, &cli, &n), CKR_OK);
    CU_ASSERT_EQUAL(n, 1);
    rec = hf_test_audit_find_last(audit_path, "policy.adopt");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(rec, "detail"), "rows=1");
    json_object_put(rec);
    CU_ASSERT_EQUAL(hf_store_key_get(store, cleared.uuid, &got), CKR_OK);
    hf_key_clear(&got);
    CU_ASSERT_EQUAL(hf_store_key_get(store, edited.uuid, &got), CKR_HF_POLICY_INVALID);
    sql(db_path, "UPDATE keys SET exportable = 0 WHERE uuid = '%s'", edited.uuid);
    hf_key_clear(&cleared);
    hf_key_clear(&edited);
}

static void test_holdfast_writes_keep_working(void)
{
    struct hf_store *store = hf_core_store(core);
    struct hf_key key = {0}, got = {0}, stale = {0};
    struct hf_key_version v = {0};
    unsigned char b1[32], b2[32];
    size_t l1 = 0, l2 = 0;

    key_made("managed", false, 0, &key, &v);
    CU_ASSERT_EQUAL(material_bytes(core, &v, b1, &l1), CKR_OK);
    hf_key_version_clear(&v);
    /* A rename as the module makes it: through the store handle, read then write. */
    CU_ASSERT_EQUAL_FATAL(hf_store_key_get(store, key.uuid, &got), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_store_key_get(store, key.uuid, &stale), CKR_OK);
    free(got.name);
    got.name = strdup("managed-renamed");
    CU_ASSERT_EQUAL(hf_store_key_update(store, &got), CKR_OK);
    hf_key_clear(&got);
    /* A write based on a row read before that change is refused, never MAC'd over stale fields. */
    stale.exportable = true;
    CU_ASSERT_EQUAL(hf_store_key_update(store, &stale), CKR_ATTRIBUTE_VALUE_INVALID);
    hf_key_clear(&stale);
    CU_ASSERT_EQUAL_FATAL(hf_store_key_get(store, "managed-renamed", &got), CKR_OK);
    CU_ASSERT_FALSE(got.exportable);
    hf_key_clear(&got);
    CU_ASSERT_EQUAL(hf_core_key_label_set(core, key.uuid, "team", "blue", &cli), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_key_rotate(core, key.uuid, &cli, &v), CKR_OK);
    CU_ASSERT_EQUAL(material_bytes(core, &v, b2, &l2), CKR_OK);
    CU_ASSERT(l1 == l2 && memcmp(b1, b2, l1) != 0);
    hf_key_version_clear(&v);
    CU_ASSERT_EQUAL(hf_store_version_find(store, key.uuid, 1, &v), CKR_OK);
    CU_ASSERT_EQUAL(material_bytes(core, &v, b2, &l2), CKR_OK);
    CU_ASSERT(l1 == l2 && memcmp(b1, b2, l1) == 0);
    hf_key_version_clear(&v);
    CU_ASSERT_EQUAL(hf_core_key_set_state(core, key.uuid, HF_STATE_DEACTIVATED, &cli), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_key_destroy(core, key.uuid, &cli), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_store_key_get(store, key.uuid, &got), CKR_OK);
    CU_ASSERT_EQUAL(got.state, HF_STATE_DESTROYED);
    CU_ASSERT_EQUAL(got.current_version, 2);
    hf_key_clear(&got);
    CU_ASSERT_EQUAL(hf_store_version_find(store, key.uuid, 2, &v), CKR_OK);
    CU_ASSERT_EQUAL(v.state, HF_STATE_DESTROYED);
    hf_key_version_clear(&v);
    hf_key_clear(&key);
}

static void test_cached_material_follows_its_row(void)
{
    static const unsigned char ka[32] = {0xa1, 0xa2, 0xa3}, kb[32] = {0xb1, 0xb2, 0xb3};
    struct hf_key_spec spec = spec_of("cached-secret", HF_ALG_AES, 256);
    struct hf_store *store = hf_core_store(core);
    struct hf_key_version va = {0}, vb = {0}, v = {0};
    unsigned char bytes[32];
    size_t len = 0;

    CU_ASSERT_EQUAL_FATAL(hf_core_key_import(core, &spec, ka, 32, &cli, NULL, &va), CKR_OK);
    spec.name = "cached-exportable";
    spec.exportable = true;
    CU_ASSERT_EQUAL_FATAL(hf_core_key_import(core, &spec, kb, 32, &cli, NULL, &vb), CKR_OK);
    CU_ASSERT_EQUAL(material_bytes(core, &va, bytes, &len), CKR_OK); /* cached by row id */
    /* Row ids swapped: the exportable key's version now has the id whose material is cached. */
    sql(db_path,
        "UPDATE key_versions SET id = -1 WHERE id = %lld;"
        "UPDATE key_versions SET id = %lld WHERE id = %lld;"
        "UPDATE key_versions SET id = %lld WHERE id = -1;",
        (long long)va.id, (long long)va.id, (long long)vb.id, (long long)vb.id);
    CU_ASSERT_EQUAL_FATAL(hf_store_version_get(store, va.id, &v), CKR_OK);
    CU_ASSERT_STRING_EQUAL(v.key_uuid, vb.key_uuid);
    CU_ASSERT_EQUAL(material_bytes(core, &v, bytes, &len), CKR_OK);
    CU_ASSERT(len == 32 && memcmp(bytes, kb, 32) == 0); /* its own material, not the cached one */
    hf_key_version_clear(&v);
    hf_key_version_clear(&va);
    hf_key_version_clear(&vb);
}

/* ---- a store made before policy MACs ---- */

/* What an older Holdfast wrote: material wrapped bare under the root KEK, no MACs. */
static void legacy_key(struct hf_store *store, struct hf_hsm *hsm, const char *kek,
                       const char *name, enum hf_alg alg, unsigned bits, const unsigned char *aes,
                       struct hf_key *key)
{
    struct hf_key_version v = {0};
    struct hf_material *m = NULL;
    unsigned char *bytes = NULL;
    size_t len = 0;

    hf_uuid_generate(key->uuid);
    key->name = strdup(name);
    key->owner = strdup("legacy");
    key->source = strdup("local");
    key->alg = alg;
    key->bits = bits;
    key->usage = hf_usage_default(alg);
    key->state = HF_STATE_ACTIVE;
    key->created = key->updated = hf_now();
    key->current_version = 1;
    hf_uuid_generate(v.uuid);
    v.state = HF_STATE_ACTIVE;
    v.created = key->created;
    v.kek_label = strdup(kek);
    CU_ASSERT_EQUAL_FATAL(aes ? hf_material_from_bytes(alg, bits, aes, bits / 8, &m)
                              : hf_material_generate(alg, bits, &m),
                          CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_material_to_bytes(m, &bytes, &len), CKR_OK);
    if (alg != HF_ALG_AES)
        CU_ASSERT_EQUAL_FATAL(hf_material_public_der(m, &v.public_der, &v.public_der_len), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_hsm_wrap(hsm, kek, bytes, len, &v.wrapped, &v.wrapped_len), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_store_key_insert(store, key, &v), CKR_OK);
    hf_secmem_free(bytes, len);
    hf_material_unref(m);
    hf_key_version_clear(&v);
}

static void test_a_store_from_before_policy_macs_is_migrated_at_first_open(void)
{
    static const unsigned char aes[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    struct hf_test_env old;
    struct hf_config tmp;
    struct hf_store *store = NULL;
    struct hf_hsm *hsm = NULL;
    struct hf_core *c = NULL;
    struct hf_key a = {0}, e = {0}, got = {0};
    struct hf_key_version v = {0};
    struct hf_link link = {.type = "sap", .ext_id = "sap-old"};
    struct hf_material *m = NULL;
    char lock[PATH_MAX], err[256], uuid[HF_UUID_LEN + 1];
    unsigned char bytes[32];
    size_t len = 0;
    bool blocked = true;

    /* A state dir as a build before policy MACs left it: a KEK without its policy MAC key.
     * Today's init opens a core (its record is keyed), which makes that key for its KEK, so the
     * old store's KEK is given a label of its own. */
    CU_ASSERT_EQUAL_FATAL(hf_test_env_setup(&old, NULL), 0);
    free(old.cfg.kek_label);
    old.cfg.kek_label = strdup("kek-before-policy-macs");
    CU_ASSERT_PTR_NOT_NULL_FATAL(old.cfg.kek_label);
    tmp = old.cfg;
    tmp.hsm_pin = NULL;
    CU_ASSERT_EQUAL_FATAL(hf_config_resolve_pin(&tmp, err, sizeof(err)), CKR_OK);
    snprintf(lock, sizeof(lock), "%s/hsm.lock", old.cfg.state_dir);
    CU_ASSERT_EQUAL_FATAL(
        hf_hsm_open(old.cfg.hsm_module, lock, old.cfg.hsm_token, tmp.hsm_pin, &hsm), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_hsm_kek_ensure(hsm, old.cfg.kek_label), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_store_open(old.cfg.store_path, &store), CKR_OK);
    legacy_key(store, hsm, old.cfg.kek_label, "old-aes", HF_ALG_AES, 256, aes, &a);
    legacy_key(store, hsm, old.cfg.kek_label, "old-ec", HF_ALG_EC, 256, NULL, &e);
    memcpy(link.key_uuid, a.uuid, sizeof(link.key_uuid));
    link.created = link.updated = hf_now();
    CU_ASSERT_EQUAL(hf_store_link_insert(store, &link), CKR_OK);
    link.type = link.ext_id = NULL; /* not ours to free */
    hf_store_close(store);
    hf_hsm_close(hsm);
    CU_ASSERT_EQUAL(sql_int(old.cfg.store_path, "SELECT COUNT(*) FROM keys WHERE mac IS NULL"), 2);

    /* The first core migrates: MACs made, blobs rewrapped bound to their rows. */
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&old.cfg, &c), CKR_OK);
    CU_ASSERT_EQUAL(sql_int(old.cfg.store_path,
                            "SELECT (SELECT COUNT(*) FROM keys WHERE mac IS NULL) + "
                            "(SELECT COUNT(*) FROM key_versions WHERE mac IS NULL) + "
                            "(SELECT COUNT(*) FROM links WHERE mac IS NULL)"),
                    0);
    CU_ASSERT_EQUAL(hf_store_key_get(hf_core_store(c), "old-aes", &got), CKR_OK);
    hf_key_clear(&got);
    CU_ASSERT_EQUAL_FATAL(hf_store_version_find(hf_core_store(c), a.uuid, 0, &v), CKR_OK);
    CU_ASSERT_EQUAL(material_bytes(c, &v, bytes, &len), CKR_OK);
    CU_ASSERT(len == 32 && memcmp(bytes, aes, 32) == 0);
    hf_key_version_clear(&v);
    CU_ASSERT_EQUAL_FATAL(hf_store_version_find(hf_core_store(c), e.uuid, 0, &v), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_material(c, &v, &m), CKR_OK);
    hf_material_unref(m);
    hf_key_version_clear(&v);
    CU_ASSERT_EQUAL(hf_store_link_state(hf_core_store(c), "sap", "sap-old", uuid, &blocked),
                    CKR_OK);
    CU_ASSERT_FALSE(blocked);
    hf_core_close(c);
    c = NULL;

    /* Once migrated, a MAC cleared behind Holdfast's back is refused, at the next open too. */
    sql(old.cfg.store_path, "UPDATE keys SET mac = NULL WHERE uuid = '%s'", a.uuid);
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&old.cfg, &c), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_key_get(hf_core_store(c), a.uuid, &got), CKR_HF_POLICY_INVALID);
    CU_ASSERT_EQUAL(hf_store_key_get(hf_core_store(c), e.uuid, &got), CKR_OK);
    hf_key_clear(&got);
    hf_core_close(c);

    OPENSSL_clear_free(tmp.hsm_pin, tmp.hsm_pin ? strlen(tmp.hsm_pin) : 0);
    hf_key_clear(&a);
    hf_key_clear(&e);
    hf_test_env_teardown(&old);
}

/* Records of operation op in the audit log whose line holds every one of the strings given
 * (NULL-terminated): the file is in stream chunks, not in time order, so "the last" of an
 * operation is not what a test just wrote. */
static int audit_count(const char *op, ...)
{
    char line[8192], want[64];
    FILE *fp = fopen(audit_path, "r");
    int n = 0;

    if (fp == NULL) return -1;
    snprintf(want, sizeof(want), "\"op\":\"%s\"", op);
    while (fgets(line, sizeof(line), fp) != NULL) {
        va_list ap;
        const char *s;
        bool all = strstr(line, want) != NULL;
        va_start(ap, op);
        while (all && (s = va_arg(ap, const char *)) != NULL)
            all = strstr(line, s) != NULL;
        va_end(ap);
        n += all;
    }
    fclose(fp);
    return n;
}

/* A one-member pool on the env's own backend token, its PIN from the env's PIN file. */
static void pool_on_backend(struct hf_store_pool *p, const char *name)
{
    memset(p, 0, sizeof(*p));
    p->name = strdup(name);
    p->mode = HF_POOL_MODE_PLAIN;
    p->members = calloc(1, sizeof(*p->members));
    p->n_members = 1;
    p->members[0].name = strdup("m1");
    p->members[0].module_path = strdup(env.cfg.hsm_module);
    p->members[0].token_label = strdup(env.cfg.hsm_token);
    p->members[0].pin_file = strdup(env.cfg.hsm_pin_file);
    p->members[0].concurrency = 2;
}

static void test_a_pool_member_module_path_edited_in_the_store_is_refused(void)
{
    struct hf_store_pool p, got = {0}, *list = NULL;
    struct hf_pool_member_status st;
    struct hf_pool *pool = NULL;
    size_t n = 0;

    pool_on_backend(&p, "edited");
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_add(core, &p, &cli), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_get(core, "edited", &cli, &got), CKR_OK);
    CU_ASSERT_TRUE(got.has_mac);
    hf_store_pool_clear(&got);
    /* Opened as it was added: the member logs in with the PIN from its file. */
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_open(core, "edited", NULL, &pool), CKR_OK);
    CU_ASSERT_EQUAL(hf_pool_status(pool, &st, 1), 1);
    CU_ASSERT_TRUE(st.healthy);
    CU_ASSERT_STRING_EQUAL(st.name, "m1");
    hf_pool_close(pool);
    pool = NULL;

    /* Whoever can write the store points the member at a module of their own. */
    sql(db_path, "UPDATE pool_members SET module_path = '/tmp/evil.so' WHERE pool = 'edited'");
    CU_ASSERT_EQUAL(hf_core_pool_get(core, "edited", &cli, &got), CKR_HF_POLICY_INVALID);
    CU_ASSERT_EQUAL(audit_count("policy.check", "\"pool row edited fails its policy MAC\"",
                                "\"ok\":false", NULL),
                    1);
    CU_ASSERT_EQUAL(hf_core_pool_open(core, "edited", NULL, &pool), CKR_HF_POLICY_INVALID);
    CU_ASSERT_PTR_NULL(pool);
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_list(core, &cli, &list, &n), CKR_OK);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_STRING_NOT_EQUAL(list[i].name, "edited");
    hf_core_pools_free(list, n);
    /* So are a member's PIN source and the mode, and a member added by hand. */
    sql(db_path, "UPDATE pool_members SET module_path = '%s' WHERE pool = 'edited'",
        env.cfg.hsm_module);
    CU_ASSERT_EQUAL(hf_core_pool_get(core, "edited", &cli, &got), CKR_OK);
    hf_store_pool_clear(&got);
    sql(db_path, "UPDATE pool_members SET pin_file = '/tmp/pin' WHERE pool = 'edited'");
    CU_ASSERT_EQUAL(hf_core_pool_get(core, "edited", &cli, &got), CKR_HF_POLICY_INVALID);
    sql(db_path, "UPDATE pool_members SET pin_file = '%s' WHERE pool = 'edited'",
        env.cfg.hsm_pin_file);
    sql(db_path, "UPDATE pools SET mode = 'export' WHERE name = 'edited'");
    CU_ASSERT_EQUAL(hf_core_pool_get(core, "edited", &cli, &got), CKR_HF_POLICY_INVALID);
    sql(db_path, "UPDATE pools SET mode = 'plain' WHERE name = 'edited'");
    sql(db_path,
        "INSERT INTO pool_members (pool, position, name, module_path, token_label, pin_env, "
        "concurrency) VALUES ('edited', 1, 'm2', '/tmp/evil.so', 'x', 'PIN', 1)");
    CU_ASSERT_EQUAL(hf_core_pool_get(core, "edited", &cli, &got), CKR_HF_POLICY_INVALID);
    sql(db_path, "DELETE FROM pool_members WHERE pool = 'edited' AND name = 'm2'");
    CU_ASSERT_EQUAL(hf_core_pool_get(core, "edited", &cli, &got), CKR_OK);
    hf_store_pool_clear(&got);
    CU_ASSERT_EQUAL(hf_core_pool_remove(core, "edited", &cli), CKR_OK);
    hf_store_pool_clear(&p);
}

static void test_pool_management_is_audited_and_pins_are_checked(void)
{
    struct hf_store_pool p;
    struct hf_core_pool_probe *res = NULL;
    struct hf_pool *pool = NULL;
    char pin_path[PATH_MAX + 64];
    size_t n = 0;
    FILE *fp;

    /* A relative module path is refused at add, and the refusal recorded. */
    pool_on_backend(&p, "audited");
    free(p.members[0].module_path);
    p.members[0].module_path = strdup("libsofthsm2.so");
    CU_ASSERT_EQUAL(hf_core_pool_add(core, &p, &cli), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(
        audit_count("pool.add", "pool=audited", "\"caller\":\"uid:4242\"", "\"ok\":false", NULL),
        1);
    hf_store_pool_clear(&p);

    /* A group-readable PIN file: open and probe refuse it, and say so. */
    pool_on_backend(&p, "audited");
    snprintf(pin_path, sizeof(pin_path), "%s/group.pin", env.dir);
    fp = fopen(pin_path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fprintf(fp, "%s\n", env.cfg.hsm_pin);
    fclose(fp);
    CU_ASSERT_EQUAL_FATAL(chmod(pin_path, 0640), 0);
    free(p.members[0].pin_file);
    p.members[0].pin_file = strdup(pin_path);
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_add(core, &p, &cli), CKR_OK);
    CU_ASSERT_EQUAL(
        audit_count("pool.add", "pool=audited mode=plain members=1", "\"ok\":true", NULL), 1);
    CU_ASSERT_EQUAL(hf_core_pool_open(core, "audited", NULL, &pool), CKR_PIN_INVALID);
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_probe(core, "audited", &cli, &res, &n), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(res[0].rv, CKR_PIN_INVALID);
    CU_ASSERT_PTR_NOT_NULL(strstr(res[0].reason, "group-readable"));
    /* No PIN in the reason. */
    CU_ASSERT_PTR_NULL(strstr(res[0].reason, env.cfg.hsm_pin));
    hf_core_pool_probes_free(res, n);
    CU_ASSERT_EQUAL_FATAL(chmod(pin_path, 0600), 0);
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_probe(core, "audited", &cli, &res, &n), CKR_OK);
    CU_ASSERT_EQUAL(res[0].rv, CKR_OK);
    hf_core_pools_free(NULL, 0);
    hf_core_pool_probes_free(res, n);
    CU_ASSERT_EQUAL(audit_count("pool.probe", "pool=audited m1=0x", "ok=0 failed=1", NULL), 1);
    CU_ASSERT_EQUAL(audit_count("pool.probe", "pool=audited ok=1 failed=0", NULL), 1);
    /* Lock files per member, beside the root token's. */
    CU_ASSERT_EQUAL(hf_core_pool_open(core, "audited", NULL, &pool), CKR_OK);
    hf_pool_close(pool);
    snprintf(pin_path, sizeof(pin_path), "%s/pool.audited.m1.lock", env.cfg.state_dir);
    CU_ASSERT_EQUAL(access(pin_path, F_OK), 0);

    CU_ASSERT_EQUAL(hf_core_pool_remove(core, "audited", &cli), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_pool_remove(core, "audited", &cli), CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_EQUAL(audit_count("pool.remove", "pool=audited", "\"ok\":false", NULL), 1);
    CU_ASSERT_EQUAL(audit_count("pool.remove", "pool=audited", "\"ok\":true", NULL), 1);
    hf_store_pool_clear(&p);
}

static CU_TestInfo edit_tests[] = {
    {"exportable flipped in the store is refused and audited",
     test_exportable_flipped_in_the_store_is_refused_and_audited},
    {"AES blobs swapped between keys are refused", test_aes_blobs_swapped_between_keys_are_refused},
    {"versions' blobs swapped within a key are refused",
     test_versions_blobs_swapped_within_a_key_are_refused},
    {"usage, state and current_version edits are refused",
     test_usage_state_and_current_version_edits_are_refused},
    {"version rows moved or edited are refused", test_version_rows_moved_or_edited_are_refused},
    {"version state changes are ruled, audited, and erase on destroy",
     test_version_state_changes_are_ruled_audited_and_erase_on_destroy},
    {"a version state edited in the store is refused",
     test_a_version_state_edited_in_the_store_is_refused},
    {"a link unblocked in the store stays unusable",
     test_a_link_unblocked_in_the_store_stays_unusable},
    {"a cleared MAC is refused, not remade", test_a_cleared_mac_is_refused_not_remade},
    {"adopt gives rows without MAC one, not edited ones",
     test_adopt_gives_unmacd_rows_a_mac_but_not_edited_ones},
    {"Holdfast's own writes keep working: rename, label, rotate, state, destroy",
     test_holdfast_writes_keep_working},
    {"cached material follows its row, not its row id", test_cached_material_follows_its_row},
    {"a pool member's module path edited in the store is refused",
     test_a_pool_member_module_path_edited_in_the_store_is_refused},
    {"pool management is audited; PIN files are checked",
     test_pool_management_is_audited_and_pins_are_checked},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo migration_tests[] = {
    {"a store from before policy MACs is migrated at first open",
     test_a_store_from_before_policy_macs_is_migrated_at_first_open},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        /* First: it needs a process whose SoftHSMv2 has not been set up for another store. */
        {"policy: migration", NULL, NULL, NULL, NULL, migration_tests},
        {"policy: edits behind Holdfast's back", store_init, store_cleanup, NULL, NULL, edit_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
