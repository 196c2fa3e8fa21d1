/* `holdfast pool add|list|show|probe|remove`: HSM pools (issue 14), kept in the key store so
 * that every node sees the same ones (store.h), managed through hf_core_pool_* (audited). A
 * member is given as one comma-separated word:
 *
 *     --member NAME,module=PATH,token=LABEL,pin_file=PATH[,concurrency=N]
 *     --member NAME,module=PATH,token=LABEL,pin_env=VAR[,concurrency=N]
 *
 * A PIN is never on the command line nor printed: a member names where each node reads it. */
#include "hf-build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pkcs11/tool/cli.h"
#include "pkcs11/tool/cmd-pool-restore.h"
#include "pkcs11/tool/cmd-pool-status.h"

#define CONCURRENCY_DEFAULT 4

static int pool_fail(struct hf_cli *cli, CK_RV rv, const char *name)
{
    char what[HF_POOL_NAME_MAX + 16];

    snprintf(what, sizeof(what), "pool '%s'", name);
    if (rv == CKR_HF_POLICY_INVALID) {
        hf_cli_error("%s: %s: its definition in the store fails its policy MAC: the store was "
                     "changed outside Holdfast (refused and audited)",
                     cli->command, what);
        return HF_EXIT_FAILED;
    }
    return hf_cli_fail(cli, rv, what);
}

/* ---- add ---- */

static int oom(void)
{
    hf_cli_error("out of memory");
    return HF_EXIT_FAILED;
}

static int member_parse(struct hf_cli *cli, const char *arg, struct hf_store_pool_member *m)
{
    char *copy = strdup(arg), *save = NULL, *word, *end;
    int rc = HF_CLI_CONTINUE;
    char **field;

    if (!copy) return oom();
    m->concurrency = CONCURRENCY_DEFAULT;
    word = strtok_r(copy, ",", &save);
    if (!word || strchr(word, '=') || !(m->name = strdup(word))) {
        rc = word && !strchr(word, '=') ? oom()
                                        : hf_cli_usage_error(cli, "--member starts with its name: "
                                                                  "NAME,module=PATH,token=LABEL,"
                                                                  "pin_file=PATH|pin_env=VAR");
        goto done;
    }
    while ((word = strtok_r(NULL, ",", &save)) != NULL) {
        char *eq = strchr(word, '=');
        field = NULL;
        if (!eq) {
            rc = hf_cli_usage_error(cli, "member %s: '%s' is not KEY=VALUE", m->name, word);
            goto done;
        }
        *eq++ = '\0';
        if (strcmp(word, "module") == 0)
            field = &m->module_path;
        else if (strcmp(word, "token") == 0)
            field = &m->token_label;
        else if (strcmp(word, "pin_file") == 0)
            field = &m->pin_file;
        else if (strcmp(word, "pin_env") == 0)
            field = &m->pin_env;
        else if (strcmp(word, "pin") == 0) {
            rc = hf_cli_usage_error(cli,
                                    "member %s: a PIN is never given on the command line "
                                    "(ps shows it): use pin_file=PATH or pin_env=VAR",
                                    m->name);
            goto done;
        } else if (strcmp(word, "concurrency") == 0) {
            unsigned long v;
            errno = 0;
            v = strtoul(eq, &end, 10);
            if (errno || *end || end == eq || eq[0] == '-' || v < 1 ||
                v > HF_POOL_CONCURRENCY_MAX) {
                rc = hf_cli_usage_error(cli, "member %s: concurrency is 1 to %d", m->name,
                                        HF_POOL_CONCURRENCY_MAX);
                goto done;
            }
            m->concurrency = (unsigned)v;
            continue;
        } else {
            rc = hf_cli_usage_error(cli,
                                    "member %s: unknown key '%s' (module, token, pin_file, "
                                    "pin_env, concurrency)",
                                    m->name, word);
            goto done;
        }
        if (*field) {
            rc = hf_cli_usage_error(cli, "member %s: %s given twice", m->name, word);
            goto done;
        }
        if (!(*field = strdup(eq))) {
            rc = oom();
            goto done;
        }
    }
done:
    free(copy);
    return rc;
}

static int add_parse(struct hf_cli *cli, int argc, char **argv, struct hf_store_pool *p)
{
    enum { O_MODE = 1, O_MEMBER };
    static const struct option opts[] = {
        {"mode", required_argument, NULL, O_MODE},
        {"member", required_argument, NULL, O_MEMBER},
        HF_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    char why[160];
    int c, rc;

    p->mode = HF_POOL_MODE_PLAIN;
    /* At most one member per remaining word: sizes the array once. */
    if (!(p->members = calloc((size_t)argc, sizeof(*p->members)))) return oom();
    while ((c = hf_cli_getopt(argc, argv, opts)) != -1) {
        switch (c) {
        case O_MODE:
            if (!hf_pool_mode_parse(optarg, &p->mode))
                return hf_cli_usage_error(cli, "--mode is plain, clone or export, not '%s'",
                                          optarg);
            break;
        case O_MEMBER:
            if ((rc = member_parse(cli, optarg, &p->members[p->n_members++])) != HF_CLI_CONTINUE)
                return rc;
            break;
        default:
            if ((rc = hf_cli_opt_other(cli, c, argv)) != HF_CLI_CONTINUE) return rc;
        }
    }
    if ((rc = hf_cli_args(cli, argc, argv, 1, 1)) != HF_CLI_CONTINUE) return rc;
    if (!(p->name = strdup(argv[optind]))) return oom();
    if (p->n_members == 0) return hf_cli_usage_error(cli, "give at least one --member");
    /* The store's rules, checked here too so that a typo is a usage error with its reason. */
    if (!hf_store_pool_is_valid(p, why, sizeof(why))) return hf_cli_usage_error(cli, "%s", why);
    return HF_CLI_CONTINUE;
}

static int cmd_add(struct hf_cli *cli, int argc, char **argv)
{
    struct hf_store_pool p = {0}, taken = {0};
    CK_RV rv;
    int rc;

    if ((rc = add_parse(cli, argc, argv, &p)) != HF_CLI_CONTINUE) goto done;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) goto done;
    rv = hf_core_pool_add(cli->core, &p, &cli->who);
    if (rv == CKR_ATTRIBUTE_VALUE_INVALID &&
        hf_store_pool_get(hf_core_store(cli->core), p.name, &taken) == CKR_OK) {
        hf_cli_error("pool '%s' already exists", p.name);
        rc = HF_EXIT_FAILED;
        goto done;
    }
    if (rv != CKR_OK) {
        rc = pool_fail(cli, rv, p.name);
        goto done;
    }
    if (cli->json) {
        json_object *o = json_object_new_object();
        if (o) {
            json_object_object_add(o, "pool", json_object_new_string(p.name));
            json_object_object_add(o, "mode", json_object_new_string(hf_pool_mode_name(p.mode)));
            json_object_object_add(o, "members", json_object_new_int64((int64_t)p.n_members));
        }
        rc = hf_cli_json_print(o);
    } else {
        printf("added pool '%s' (%s, %zu member%s)\n", p.name, hf_pool_mode_name(p.mode),
               p.n_members, p.n_members == 1 ? "" : "s");
        rc = HF_EXIT_OK;
    }
done:
    hf_store_pool_clear(&taken);
    hf_store_pool_clear(&p);
    return rc;
}

/* ---- list, show ---- */

/* "file:/etc/holdfast/a.pin" or "env:VAR": where the PIN comes from, never the PIN. */
static void pin_source(const struct hf_store_pool_member *m, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s:%s", m->pin_file ? "file" : "env",
             m->pin_file ? m->pin_file : m->pin_env);
}

static json_object *member_json(const struct hf_store_pool_member *m,
                                const struct hf_pool_member_status *st)
{
    json_object *j = json_object_new_object();

    if (!j) return NULL;
    json_object_object_add(j, "name", json_object_new_string(m->name));
    json_object_object_add(j, "module", json_object_new_string(m->module_path));
    if (m->token_label) json_object_object_add(j, "token", json_object_new_string(m->token_label));
    if (m->token_serial)
        json_object_object_add(j, "serial", json_object_new_string(m->token_serial));
    if (m->pin_file) json_object_object_add(j, "pin_file", json_object_new_string(m->pin_file));
    if (m->pin_env) json_object_object_add(j, "pin_env", json_object_new_string(m->pin_env));
    json_object_object_add(j, "concurrency", json_object_new_int64(m->concurrency));
    if (st) {
        json_object_object_add(j, "healthy", json_object_new_boolean(st->healthy));
        json_object_object_add(j, "in_flight", json_object_new_int64(st->in_flight));
        json_object_object_add(j, "calls", json_object_new_int64((int64_t)st->calls));
        json_object_object_add(j, "failures", json_object_new_int64((int64_t)st->failures));
    }
    return j;
}

static json_object *pool_json(const struct hf_store_pool *p, const struct hf_pool_member_status *st)
{
    json_object *j = json_object_new_object(), *arr = json_object_new_array();
    char created[32];

    if (!j || !arr) {
        json_object_put(j);
        json_object_put(arr);
        return NULL;
    }
    hf_time_format(p->created, created, sizeof(created));
    json_object_object_add(j, "name", json_object_new_string(p->name));
    json_object_object_add(j, "mode", json_object_new_string(hf_pool_mode_name(p->mode)));
    json_object_object_add(j, "created", json_object_new_string(created));
    for (size_t i = 0; i < p->n_members; i++)
        json_object_array_add(arr, member_json(&p->members[i], st ? &st[i] : NULL));
    json_object_object_add(j, "members", arr);
    return j;
}

static int cmd_list(struct hf_cli *cli, int argc, char **argv)
{
    static const char *const headers[] = {"NAME", "MODE", "MEMBERS", "CREATED"};
    struct hf_store_pool *pools = NULL;
    struct hf_table *t = NULL;
    json_object *arr = NULL;
    size_t n = 0;
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 0, 0)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_core_pool_list(cli->core, &cli->who, &pools, &n);
    if (rv != CKR_OK) return hf_cli_fail(cli, rv, "listing pools");
    if (cli->json) {
        if ((arr = json_object_new_array()))
            for (size_t i = 0; i < n; i++)
                json_object_array_add(arr, pool_json(&pools[i], NULL));
        rc = hf_cli_json_print(arr);
    } else if (!(t = hf_table_new(4, headers))) {
        rc = oom();
    } else {
        for (size_t i = 0; i < n; i++) {
            char members[24], created[32];
            snprintf(members, sizeof(members), "%zu", pools[i].n_members);
            hf_time_format(pools[i].created, created, sizeof(created));
            const char *row[4] = {pools[i].name, hf_pool_mode_name(pools[i].mode), members,
                                  created};
            hf_table_add(t, row);
        }
        hf_table_print(t, stdout, "");
        hf_table_free(t);
        rc = HF_EXIT_OK;
    }
    hf_core_pools_free(pools, n);
    return rc;
}

static void show_print(const struct hf_store_pool *p, const struct hf_pool_member_status *st)
{
    static const char *const headers[] = {"MEMBER",  "MODULE",    "TOKEN", "PIN",     "CONCURRENCY",
                                          "HEALTHY", "IN FLIGHT", "CALLS", "FAILURES"};
    struct hf_table *t = hf_table_new(st ? 9 : 5, headers);
    char created[32];

    hf_time_format(p->created, created, sizeof(created));
    printf("pool:    %s\nmode:    %s\ncreated: %s\nmembers:\n", p->name, hf_pool_mode_name(p->mode),
           created);
    for (size_t i = 0; t && i < p->n_members; i++) {
        const struct hf_store_pool_member *m = &p->members[i];
        char pin[HF_POOL_PATH_MAX + 8], conc[16], token[64];
        char flight[16] = "", calls[24] = "", fails[24] = "";
        snprintf(token, sizeof(token), "%s%s", m->token_label ? "" : "serial:",
                 m->token_label ? m->token_label : m->token_serial);
        pin_source(m, pin, sizeof(pin));
        snprintf(conc, sizeof(conc), "%u", m->concurrency);
        if (st) {
            snprintf(flight, sizeof(flight), "%u", st[i].in_flight);
            snprintf(calls, sizeof(calls), "%llu", (unsigned long long)st[i].calls);
            snprintf(fails, sizeof(fails), "%llu", (unsigned long long)st[i].failures);
        }
        const char *row[9] = {m->name, m->module_path, token,
                              pin,     conc,           st ? (st[i].healthy ? "yes" : "no") : NULL,
                              flight,  calls,          fails};
        hf_table_add(t, row);
    }
    hf_table_print(t, stdout, "  ");
    hf_table_free(t);
}

static int cmd_show(struct hf_cli *cli, int argc, char **argv)
{
    struct hf_store_pool p = {0};
    struct hf_pool_member_status *st = NULL;
    struct hf_cli_pool_live live = {0};
    const char *name;
    CK_RV rv, open_rv;
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 1, 1)) != HF_CLI_CONTINUE) return rc;
    name = argv[optind];
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_core_pool_get(cli->core, name, &cli->who, &p);
    if (rv != CKR_OK) return pool_fail(cli, rv, name);
    /* Live status when this node can open the pool; the definition either way. */
    open_rv = hf_cli_pool_live_get(cli, &p, &live);
    st = live.st;
    if (cli->json) {
        json_object *o = pool_json(&p, st);
        hf_cli_pool_live_json(&live, o);
        if (o && !st)
            json_object_object_add(o, "live_status_error",
                                   json_object_new_string(hf_cli_strerror(open_rv)));
        rc = hf_cli_json_print(o);
    } else {
        show_print(&p, st);
        hf_cli_pool_live_print(&live);
        if (!st)
            printf("live status: unavailable on this node: %s (CKR 0x%lx)\n",
                   hf_cli_strerror(open_rv), open_rv);
        rc = HF_EXIT_OK;
    }
    hf_cli_pool_live_clear(&live);
    hf_store_pool_clear(&p);
    return rc;
}

/* ---- probe, remove ---- */

static int cmd_probe(struct hf_cli *cli, int argc, char **argv)
{
    struct hf_core_pool_probe *res = NULL;
    json_object *arr = NULL;
    size_t n = 0, failed = 0;
    const char *name;
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 1, 1)) != HF_CLI_CONTINUE) return rc;
    name = argv[optind];
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_core_pool_probe(cli->core, name, &cli->who, &res, &n);
    if (rv != CKR_OK) return pool_fail(cli, rv, name);
    if (cli->json) arr = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        const char *why = res[i].reason[0] ? res[i].reason : hf_cli_strerror(res[i].rv);
        failed += res[i].rv != CKR_OK;
        if (arr) {
            json_object *o = json_object_new_object();
            if (!o) continue;
            json_object_object_add(o, "member", json_object_new_string(res[i].member));
            json_object_object_add(o, "ok", json_object_new_boolean(res[i].rv == CKR_OK));
            if (res[i].rv != CKR_OK)
                json_object_object_add(o, "reason", json_object_new_string(why));
            json_object_array_add(arr, o);
        } else if (res[i].rv == CKR_OK) {
            printf("%s ok\n", res[i].member);
        } else {
            printf("%s failed: %s (CKR 0x%lx)\n", res[i].member, why, res[i].rv);
        }
    }
    rc = cli->json ? hf_cli_json_print(arr) : HF_EXIT_OK;
    hf_core_pool_probes_free(res, n);
    return rc == HF_EXIT_OK && failed ? HF_EXIT_FAILED : rc;
}

static int cmd_remove(struct hf_cli *cli, int argc, char **argv)
{
    const char *name;
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 1, 1)) != HF_CLI_CONTINUE) return rc;
    name = argv[optind];
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_core_pool_remove(cli->core, name, &cli->who);
    if (rv == CKR_ATTRIBUTE_VALUE_INVALID) {
        hf_cli_error("pool '%s' holds keys (source %s%s): destroy them first", name,
                     HF_KEY_SOURCE_POOL_PREFIX, name);
        return HF_EXIT_FAILED;
    }
    if (rv != CKR_OK) return pool_fail(cli, rv, name);
    if (cli->json) {
        json_object *o = json_object_new_object();
        if (o) json_object_object_add(o, "removed", json_object_new_string(name));
        return hf_cli_json_print(o);
    }
    printf("removed pool '%s'\n", name);
    return HF_EXIT_OK;
}

static const struct hf_cli_command pool_commands[] = {
    {"add", cmd_add,
     "NAME [--mode plain|clone|export] --member "
     "MEMBER,module=PATH,token=LABEL,pin_file=PATH|pin_env=VAR[,concurrency=N] ...",
     "define an HSM pool in the key store (every node sees it)",
     "  --mode MODE      plain (default), clone or export (ARCHITECTURE.md, \"Key sources\")\n"
     "  --member SPEC    one per member, in the order calls prefer them:\n"
     "      MEMBER          its name: 1 to 32 of a-z, 0-9, '-'\n"
     "      module=PATH     the backend's PKCS#11 module, an absolute path\n"
     "      token=LABEL     the token's label\n"
     "      pin_file=PATH   an absolute path of a file (mode 0600) whose first line is the PIN\n"
     "      pin_env=VAR     or an environment variable holding it, on each node\n"
     "      concurrency=N   calls in flight at most, 1 to 1024 (default 4)\n"
     "The PIN itself is never given here, stored or printed.\n"},
    {"list", cmd_list, "", "list the pools", NULL},
    {"show", cmd_show, "NAME",
     "a pool's members, and their live status when this node can open the pool", NULL},
    {"probe", cmd_probe, "NAME",
     "open and probe each member: 'MEMBER ok' or 'MEMBER failed: REASON' (exit 1 if any failed)",
     NULL},
    {"remove", cmd_remove, "NAME", "remove a pool that holds no live key", NULL},
    {"restore", hf_cmd_pool_restore, "NAME MEMBER",
     "re-seed an export pool's member, a freshly initialised token, from the store's backups",
     "The member's token (same label and PIN) gets the pool's replication key and every live\n"
     "key version, unwrapped inside it; objects already there are left. Only the store and this\n"
     "token are needed: the other members may be down.\n"},
};

int hf_cmd_pool(struct hf_cli *cli, int argc, char **argv)
{
    return hf_cli_dispatch(cli, pool_commands, sizeof(pool_commands) / sizeof(pool_commands[0]),
                           argc - 1, argv + 1);
}
