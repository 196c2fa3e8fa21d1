#include "hf-build.h"

#include <stdlib.h>
#include <string.h>

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
};

int hf_cmd_store(struct hf_cli *cli, int argc, char **argv)
{
    return hf_cli_dispatch(cli, store_commands, sizeof(store_commands) / sizeof(store_commands[0]),
                           argc - 1, argv + 1);
}
