#include "hf-build.h"

#include <stdlib.h>
#include <string.h>

#include "pkcs11/core/store-migrate.h"
#include "pkcs11/tool/cli.h"

/* What `store check` found; the first few problems are printed as they are found. */
struct check_state {
    struct hf_core *core;
    uint64_t keys, versions, destroyed, problems;
    uint64_t rows; /* versions in the store, whichever key they name */
};

#define CHECK_PRINT_MAX 20

static void problem(struct check_state *st, const struct hf_key *key, unsigned version,
                    const char *what)
{
    if (++st->problems <= CHECK_PRINT_MAX)
        hf_cli_error("store check: key '%s' (%s) version %u: %s", key->name, key->uuid, version,
                     what);
}

/* A pool version's material is in its pool's HSMs, which a store check does not reach: the
 * store holds where it lives, which must be the key's own pool, and that pool's definition. */
static void check_pool_version(struct check_state *st, const struct hf_key *key,
                               const struct hf_key_version *v)
{
    const char *pool = hf_key_pool_name(key),
               *at = v->kek_label + strlen(HF_KEY_SOURCE_POOL_PREFIX);
    struct hf_store_pool p = {0};
    size_t n = pool ? strlen(pool) : 0;
    CK_RV rv;

    if (pool == NULL || strncmp(at, pool, n) != 0 || (at[n] != '\0' && at[n] != '/')) {
        problem(st, key, v->version, "kept in a pool that is not the key's source");
        return;
    }
    if ((rv = hf_store_pool_get(hf_core_store(st->core), pool, &p)) != CKR_OK)
        problem(st, key, v->version,
                rv == CKR_KEY_HANDLE_INVALID ? "its pool is not in the store"
                                             : hf_cli_strerror(rv));
    hf_store_pool_clear(&p);
}

/* The material unwraps, is what the key says, and matches the stored public part. */
static void check_material(struct check_state *st, const struct hf_key *key,
                           const struct hf_key_version *v)
{
    struct hf_material *m = NULL;
    unsigned char *der = NULL;
    size_t len = 0;
    CK_RV rv;

    if (hf_key_version_is_in_pool(v)) {
        check_pool_version(st, key, v);
        return;
    }
    if ((rv = hf_core_material_as(st->core, key->alg, v, &m)) != CKR_OK) {
        problem(st, key, v->version, hf_cli_strerror(rv));
        return;
    }
    if (hf_material_alg(m) != key->alg || hf_material_bits(m) != key->bits)
        problem(st, key, v->version, "material does not match the key's algorithm and size");
    else if (!hf_alg_is_secret(key->alg)) {
        rv = hf_material_public_der(m, &der, &len);
        if (rv != CKR_OK || !v->public_der || len != v->public_der_len ||
            memcmp(der, v->public_der, len) != 0)
            problem(st, key, v->version, "public key does not match the private material");
    }
    free(der);
    hf_material_unref(m);
}

/* A whole key has versions 1..current_version, each with usable material unless destroyed. */
static void check_key(struct check_state *st, const struct hf_key *key)
{
    struct hf_key_version *vs = NULL;
    size_t n = 0;

    st->keys++;
    if (hf_store_version_list(hf_core_store(st->core), key->uuid, &vs, &n) != CKR_OK) {
        problem(st, key, 0, "cannot list its versions");
        return;
    }
    if (n != key->current_version) problem(st, key, key->current_version, "versions missing");
    for (size_t i = 0; i < n; i++) {
        const struct hf_key_version *v = &vs[i];

        st->versions++;
        if (v->version != i + 1) problem(st, key, v->version, "version out of sequence");
        if (v->state == HF_STATE_DESTROYED || key->state == HF_STATE_DESTROYED) {
            st->destroyed++;
            if (v->wrapped) problem(st, key, v->version, "destroyed, yet its material is kept");
        } else {
            check_material(st, key, v);
        }
    }
    for (size_t i = 0; i < n; i++)
        hf_key_version_clear(&vs[i]);
    free(vs);
}

static CK_RV count_row(const struct hf_key *key, const struct hf_key_version *v, void *arg)
{
    ((struct check_state *)arg)->rows++;
    return CKR_OK;
}

/* Links are read (and so checked) too; every row the policy refused, here or above, was left out
 * of the lists: it is counted as a problem, and the log names each. */
static CK_RV check_links(struct check_state *st)
{
    struct hf_store *store = hf_core_store(st->core);
    struct hf_link *links = NULL;
    size_t n = 0;
    uint64_t refused;
    CK_RV rv = hf_store_link_list(store, NULL, &links, &n);

    for (size_t i = 0; i < n; i++)
        hf_link_clear(&links[i]);
    free(links);
    refused = hf_store_policy_refusals(store);
    if (rv == CKR_OK && refused > 0) {
        st->problems += refused;
        hf_cli_error("store check: %llu rows fail their policy MAC: the store was changed outside "
                     "Holdfast (see the log lines above)",
                     (unsigned long long)refused);
    }
    return rv;
}

static CK_RV check_all(struct check_state *st)
{
    struct hf_store *store = hf_core_store(st->core);
    struct hf_key *keys = NULL;
    size_t n = 0;
    CK_RV rv = hf_store_key_list(store, &keys, &n);

    if (rv != CKR_OK) return rv;
    for (size_t i = 0; i < n; i++) {
        check_key(st, &keys[i]);
        hf_key_clear(&keys[i]);
    }
    free(keys);
    /* A version row no listed key owns would be the remains of half a key. */
    rv = hf_store_version_each(store, count_row, st);
    if (rv == CKR_OK && st->rows != st->versions) {
        st->problems++;
        hf_cli_error("store check: %llu version rows, but the keys account for %llu",
                     (unsigned long long)st->rows, (unsigned long long)st->versions);
    }
    if (rv == CKR_OK) rv = check_links(st);
    return rv;
}

static int check_report(struct hf_cli *cli, const struct check_state *st, int schema)
{
    json_object *o;

    if (cli->json) {
        if ((o = json_object_new_object())) {
            json_object_object_add(o, "ok", json_object_new_boolean(st->problems == 0));
            json_object_object_add(o, "schema", json_object_new_int(schema));
            json_object_object_add(o, "keys", json_object_new_int64((int64_t)st->keys));
            json_object_object_add(o, "versions", json_object_new_int64((int64_t)st->versions));
            json_object_object_add(o, "destroyed", json_object_new_int64((int64_t)st->destroyed));
            json_object_object_add(o, "problems", json_object_new_int64((int64_t)st->problems));
        }
        hf_cli_json_print(o);
    } else if (st->problems == 0) {
        printf("store check: ok: schema %d, %llu keys, %llu versions (%llu destroyed); every "
               "live version unwraps and matches its public part\n",
               schema, (unsigned long long)st->keys, (unsigned long long)st->versions,
               (unsigned long long)st->destroyed);
    }
    if (st->problems == 0) return HF_EXIT_OK;
    hf_cli_error("store check failed: %llu problems", (unsigned long long)st->problems);
    return HF_EXIT_FAILED;
}

static int cmd_check(struct hf_cli *cli, int argc, char **argv)
{
    static const struct option opts[] = {HF_CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    struct check_state st = {0};
    int c, rc, schema = 0;
    CK_RV rv;

    while ((c = hf_cli_getopt(argc, argv, opts)) != -1)
        if ((rc = hf_cli_opt_other(cli, c, argv)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_args(cli, argc, argv, 0, 0)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    st.core = cli->core;
    rv = hf_store_schema_version(hf_core_store(cli->core), &schema);
    if (rv == CKR_OK && schema != hf_store_schema_version_current()) {
        hf_cli_error("store check: schema version %d, this build writes %d", schema,
                     hf_store_schema_version_current());
        st.problems++;
    }
    if (rv == CKR_OK) rv = check_all(&st);
    if (rv != CKR_OK) return hf_cli_fail(cli, rv, "reading the store");
    return check_report(cli, &st, schema);
}

static int cmd_adopt(struct hf_cli *cli, int argc, char **argv)
{
    bool yes;
    size_t n = 0;
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_yes(cli, argc, argv, 0, 0, &yes)) != HF_CLI_CONTINUE) return rc;
    if (!yes)
        return hf_cli_usage_error(cli, "refusing to adopt rows without --yes: every row without "
                                       "a policy MAC is trusted as it is");
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_core_policy_adopt(cli->core, &cli->who, &n);
    if (rv != CKR_OK) return hf_cli_fail(cli, rv, "adopting rows");
    if (cli->json) {
        json_object *o = json_object_new_object();
        if (o) json_object_object_add(o, "adopted", json_object_new_int64((int64_t)n));
        hf_cli_json_print(o);
    } else {
        printf("store adopt: %zu rows without a policy MAC now carry one\n", n);
    }
    return HF_EXIT_OK;
}

/* ---- migrate ---- */

/* The move is recorded in the audit log of the config's token (the node's), like every admin
 * command, and durable before anything is printed. */
static CK_RV migrate_audit(struct hf_cli *cli, const char *from,
                           const struct hf_store_migrate_result *res, CK_RV result, uint64_t t0)
{
    struct hf_audit *audit = hf_core_audit(cli->core);
    char detail[320];
    uint64_t rows = 0, seq = 0;
    struct hf_audit_record rec = {
        .api = "cli",
        .operation = "store.migrate",
        .caller = cli->caller,
        .detail = detail,
        .result = result,
        .latency_us = hf_monotonic_us() - t0,
        .authenticated = true, /* the caller opened the store's files */
    };
    CK_RV rv;

    for (size_t i = 0; i < res->n_tables; i++)
        rows += res->tables[i].rows;
    snprintf(detail, sizeof(detail), "from=%.120s to=%.100s rows=%llu", from,
             res->where[0] ? res->where : "-", (unsigned long long)(result == CKR_OK ? rows : 0));
    rv = hf_audit_append(audit, &rec, &seq);
    if (rv == CKR_OK) rv = hf_audit_wait_durable(audit, seq);
    return rv;
}

static int migrate_report(struct hf_cli *cli, const struct hf_store_migrate_result *res)
{
    static const char *const headers[] = {"TABLE", "ROWS"};
    struct hf_table *t;
    json_object *o, *tables;
    char n[24];

    if (cli->json) {
        if ((o = json_object_new_object()) && (tables = json_object_new_object())) {
            for (size_t i = 0; i < res->n_tables; i++)
                json_object_object_add(tables, res->tables[i].table,
                                       json_object_new_int64((int64_t)res->tables[i].rows));
            json_object_object_add(o, "ok", json_object_new_boolean(1));
            json_object_object_add(o, "to", json_object_new_string(res->where));
            json_object_object_add(o, "tables", tables);
            json_object_object_add(o, "meta_replaced",
                                   json_object_new_int64((int64_t)res->meta_replaced));
        }
        hf_cli_json_print(o);
        return HF_EXIT_OK;
    }
    if (!(t = hf_table_new(2, headers))) return hf_cli_fail(cli, CKR_HOST_MEMORY, "the summary");
    for (size_t i = 0; i < res->n_tables; i++) {
        const char *cells[2] = {res->tables[i].table, n};
        snprintf(n, sizeof(n), "%llu", (unsigned long long)res->tables[i].rows);
        hf_table_add(t, cells);
    }
    printf("store migrate: copied into %s in one transaction, row counts checked:\n", res->where);
    hf_table_print(t, stdout, "  ");
    hf_table_free(t);
    if (res->meta_replaced)
        printf("the destination's own %llu meta rows (from an init there) were replaced\n",
               (unsigned long long)res->meta_replaced);
    printf("Point [store] path at the server now; the SQLite store is left as it was.\n");
    return HF_EXIT_OK;
}

static int cmd_migrate(struct hf_cli *cli, int argc, char **argv)
{
    static const struct option opts[] = {
        {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'},
        HF_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    const char *from = NULL, *to = NULL;
    struct hf_store_migrate_result res;
    uint64_t t0;
    CK_RV rv, arv;
    int c, rc;

    while ((c = hf_cli_getopt(argc, argv, opts)) != -1) {
        if (c == 'f')
            from = optarg;
        else if (c == 't')
            to = optarg;
        else if ((rc = hf_cli_opt_other(cli, c, argv)) != HF_CLI_CONTINUE)
            return rc;
    }
    if ((rc = hf_cli_args(cli, argc, argv, 0, 0)) != HF_CLI_CONTINUE) return rc;
    if (!from || !to) return hf_cli_usage_error(cli, "--from and --to are both needed");
    if ((rc = hf_cli_config(cli)) != HF_CLI_CONTINUE) return rc;
    if (cli->cfg.store_path && strcmp(cli->cfg.store_path, to) == 0)
        return hf_cli_usage_error(cli, "the config already names the destination: run the "
                                       "migration with the config that names the source (its "
                                       "token keeps the audit log), then point [store] path at "
                                       "the server");
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    if (hf_audit_is_failed(hf_core_audit(cli->core)))
        return hf_cli_fail(cli, CKR_HF_AUDIT_FAILED, "migrating the store");
    t0 = hf_monotonic_us();
    rv = hf_store_migrate(from, to, &res);
    if ((arv = migrate_audit(cli, from, &res, rv, t0)) != CKR_OK) {
        hf_cli_error("%s: the audit log cannot be written (%s)%s", cli->command,
                     hf_cli_strerror(arv),
                     rv == CKR_OK ? ": the store WAS copied, unrecorded" : "");
        return HF_EXIT_AUDIT;
    }
    if (rv == CKR_OK) return migrate_report(cli, &res);
    hf_cli_error("%s: %s (CKR 0x%lx)", cli->command, res.reason, rv);
    return rv == CKR_ARGUMENTS_BAD ? HF_EXIT_USAGE : hf_cli_exit_code(rv);
}

static const struct hf_cli_command store_commands[] = {
    {"check", cmd_check, "",
     "check that the store holds only whole keys: every live version unwraps under the root "
     "KEK and matches its public part",
     "Exit 0 when the store is whole, 1 with each problem printed otherwise.\n"},
    {"adopt", cmd_adopt, "--yes",
     "give every row without a policy MAC one (a store restored from a backup made before "
     "policy MACs, or a first migration cut short): the rows are trusted as they are",
     "Until then such rows are refused. Check what they say first (sqlite3, key show of a\n"
     "backup): an edit made to them is adopted too. Rows whose MAC is wrong stay refused.\n"},
    {"migrate", cmd_migrate, "--from sqlite:PATH --to postgresql://USER@HOST:PORT/DB",
     "move an embedded (SQLite) store into a cluster (PostgreSQL) store: every row, as it is",
     "Stop every writer of the source first (holdfastd, PKCS#11 programs): the copy reads one\n"
     "snapshot, and what is written after it is not copied. Every row of every table moves with\n"
     "its ids, wrapped material and policy MACs, in one transaction; the keys keep working\n"
     "under the same token (the config's, whose audit log records the move). The destination\n"
     "must hold no keys, links, objects or pools: it is never merged into (exit 1, nothing\n"
     "written). The password comes from PGPASSFILE or PGPASSWORD, never the URI. The SQLite\n"
     "file is left as it was (its schema brought to this build's). Then point [store] path at\n"
     "the server and run `holdfast store check`. Exit 3 when the source file does not exist.\n"},
};

int hf_cmd_store(struct hf_cli *cli, int argc, char **argv)
{
    return hf_cli_dispatch(cli, store_commands, sizeof(store_commands) / sizeof(store_commands[0]),
                           argc - 1, argv + 1);
}
