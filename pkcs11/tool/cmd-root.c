#include "hf-build.h"

#include <stdio.h>
#include <stdlib.h>

#include "pkcs11/tool/cli.h"

/* `holdfast root status`, and what `holdfast init` says of the root's members: with [hsm.NAME]
 * sections the root (KEK, policy and audit MAC keys) is a pool of [hsm] and those members, each
 * of which must hold the same keys, put there by cloning [hsm]'s token (core.h,
 * hf_core_root_status). */

static const char *check_word(enum hf_root_check c)
{
    switch (c) {
    case HF_ROOT_CHECK_SAME:
        return "same-keys";
    case HF_ROOT_CHECK_MISSING:
        return "lacks-keys";
    case HF_ROOT_CHECK_DIFFERS:
        return "other-keys";
    case HF_ROOT_CHECK_PENDING:
        break;
    }
    return "unchecked";
}

static json_object *member_json(const struct hf_core_root_member *m)
{
    json_object *o = json_object_new_object();

    if (o == NULL) return NULL;
    json_object_object_add(o, "name", json_object_new_string(m->name));
    json_object_object_add(o, "model", json_object_new_string(m->model));
    json_object_object_add(o, "healthy", json_object_new_boolean(m->status.healthy));
    json_object_object_add(o, "check", json_object_new_string(check_word(m->check)));
    json_object_object_add(o, "key", m->differs[0] ? json_object_new_string(m->differs) : NULL);
    json_object_object_add(o, "calls", json_object_new_int64((int64_t)m->status.calls));
    json_object_object_add(o, "failures", json_object_new_int64((int64_t)m->status.failures));
    json_object_object_add(o, "failovers", json_object_new_int64((int64_t)m->status.failovers));
    return o;
}

/* What an operator is to do about a member that is not in service. */
static const char *member_advice(const struct hf_core_root_member *m)
{
    switch (m->check) {
    case HF_ROOT_CHECK_MISSING:
        return "clone the token of [hsm] to it";
    case HF_ROOT_CHECK_DIFFERS:
        return "refused: not a clone of [hsm]'s token";
    case HF_ROOT_CHECK_PENDING:
        return "unreachable";
    case HF_ROOT_CHECK_SAME:
        break;
    }
    return m->status.healthy ? "in service" : "out of service (the probe retries it)";
}

static void members_print(const char *cfg_path, const struct hf_core_root_member *m, size_t n)
{
    static const char *const headers[] = {"MEMBER", "MODEL", "KEYS", "STATE", "CALLS", "FAILOVERS"};
    struct hf_table *t = hf_table_new(6, headers);
    char calls[24], failovers[24];

    printf("root: a pool of %zu members (%s)\n", n, cfg_path ? cfg_path : "defaults");
    for (size_t i = 0; t != NULL && i < n; i++) {
        snprintf(calls, sizeof(calls), "%llu", (unsigned long long)m[i].status.calls);
        snprintf(failovers, sizeof(failovers), "%llu", (unsigned long long)m[i].status.failovers);
        const char *row[] = {m[i].name, m[i].model, check_word(m[i].check), member_advice(&m[i]),
                             calls,     failovers};
        hf_table_add(t, row);
    }
    if (t != NULL) hf_table_print(t, stdout, "  ");
    hf_table_free(t);
}

json_object *hf_cli_root_json(const struct hf_core_root_member *m, size_t n)
{
    json_object *arr = json_object_new_array();

    for (size_t i = 0; arr != NULL && i < n; i++)
        json_object_array_add(arr, member_json(&m[i]));
    return arr;
}

static int members_json(const struct hf_core_root_member *m, size_t n, const char *token,
                        bool ref_stored)
{
    json_object *o = json_object_new_object();

    if (o == NULL) return HF_EXIT_FAILED;
    json_object_object_add(o, "token", json_object_new_string(token));
    if (n > 0) json_object_object_add(o, "reference_stored", json_object_new_boolean(ref_stored));
    json_object_object_add(o, "members", hf_cli_root_json(m, n));
    return hf_cli_json_print(o);
}

/* Members that lack the keys: how to clone, for SoftHSMv2 where Holdfast knows the directory. */
static void clone_advice(const struct hf_config *cfg, const struct hf_core_root_member *m, size_t n)
{
    bool missing = false;

    for (size_t i = 0; i < n; i++)
        missing = missing || m[i].check == HF_ROOT_CHECK_MISSING;
    if (!missing) return;
    printf("Clone the token of [hsm] (label '%s') to every member that lacks its keys, with the\n"
           "HSM vendor's tool (a Luna HA group, an nShield security world). Holdfast never\n"
           "extracts them and never makes a second, different root KEK.\n",
           cfg->hsm_token);
    if (cfg->softhsm2_conf)
        printf("SoftHSMv2: with no Holdfast process running, copy the directory under %s/tokens\n"
               "holding token '%s' (cp -a) into that member's SoftHSMv2 token directory.\n",
               cfg->state_dir, cfg->hsm_token);
}

void hf_cli_root_print(struct hf_cli *cli, const struct hf_core_root_member *m, size_t n)
{
    if (n == 0) {
        printf("root: token '%s' alone\n", cli->cfg.hsm_token);
        return;
    }
    members_print(cli->cfg.path, m, n);
    clone_advice(&cli->cfg, m, n);
}

static int cmd_status(struct hf_cli *cli, int argc, char **argv)
{
    struct hf_core_root_member *m = NULL;
    size_t n = 0;
    bool ref_stored = false;
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 0, 0)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    if ((rv = hf_core_root_status(cli->core, &m, &n)) != CKR_OK)
        return hf_cli_fail(cli, rv, "the root's status");
    if (n > 0 && (rv = hf_core_root_reference_is_stored(cli->core, &ref_stored)) != CKR_OK) {
        free(m);
        return hf_cli_fail(cli, rv, "the root's reference");
    }
    if (cli->json) {
        rc = members_json(m, n, cli->cfg.hsm_token, ref_stored);
    } else {
        hf_cli_root_print(cli, m, n);
        if (n > 0 && ref_stored)
            printf("reference: stored (members are checked against [hsm]'s key check values, "
                   "recorded by holdfast init)\n");
        else if (n > 0)
            printf("reference: not stored (a store made before it: the first member to pass at "
                   "open is the reference until an open where [hsm] passes stores [hsm]'s)\n");
    }
    free(m);
    return cli->json ? rc : HF_EXIT_OK;
}

int hf_cmd_root(struct hf_cli *cli, int argc, char **argv)
{
    static const struct hf_cli_command sub[] = {
        {"status", cmd_status, "",
         "the root's members ([hsm] and [hsm.NAME]): same keys or not, in service or not", NULL},
    };

    return hf_cli_dispatch(cli, sub, sizeof(sub) / sizeof(sub[0]), argc - 1, argv + 1);
}
