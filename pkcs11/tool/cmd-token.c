#include "hf-build.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "pkcs11/tool/cli.h"

/* `holdfast token status|unlock`: the PIN attempt counters ([token] pin_attempts). Unlocking
 * needs only what the CLI always needs, the store and the HSM token it opens: the SO's way back
 * in after a lockout (the user's PIN is also unlocked by the SO's C_InitPIN). */

static json_object *counter_json(struct hf_core *core, enum hf_user user)
{
    uint64_t failures = hf_core_pin_failures(core, user);
    json_object *o = json_object_new_object();

    if (o == NULL) return NULL;
    json_object_object_add(o, "failures", json_object_new_int64((int64_t)failures));
    json_object_object_add(o, "locked",
                           json_object_new_boolean(failures >= hf_core_pin_attempts(core)));
    return o;
}

static int cmd_status(struct hf_cli *cli, int argc, char **argv)
{
    struct hf_core *core;
    unsigned limit;
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 0, 0)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    core = cli->core;
    limit = hf_core_pin_attempts(core);
    if (cli->json) {
        json_object *o = json_object_new_object();
        if (o == NULL) return HF_EXIT_FAILED;
        json_object_object_add(o, "label", json_object_new_string(cli->cfg.token_label));
        json_object_object_add(o, "pin_attempts", json_object_new_int64(limit));
        json_object_object_add(o, "user_pin", counter_json(core, HF_USER_NORMAL));
        json_object_object_add(o, "so_pin", counter_json(core, HF_USER_SO));
        return hf_cli_json_print(o);
    }
    printf("token %s: %u wrong PINs in a row lock a PIN\n", cli->cfg.token_label, limit);
    for (int i = 0; i < 2; i++) {
        enum hf_user user = i == 0 ? HF_USER_NORMAL : HF_USER_SO;
        uint64_t failures = hf_core_pin_failures(core, user);
        printf("  %s PIN: %llu wrong in a row%s\n", i == 0 ? "user" : "SO",
               (unsigned long long)failures, failures >= limit ? ", LOCKED" : "");
    }
    return HF_EXIT_OK;
}

static int cmd_unlock(struct hf_cli *cli, int argc, char **argv)
{
    static const struct option opts[] = {
        {"so", no_argument, NULL, 's'}, HF_CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    enum hf_user user = HF_USER_NORMAL;
    CK_RV rv;
    int c, rc;

    while ((c = hf_cli_getopt(argc, argv, opts)) != -1) {
        if (c == 's')
            user = HF_USER_SO;
        else if ((rc = hf_cli_opt_other(cli, c, argv)) != HF_CLI_CONTINUE)
            return rc;
    }
    if ((rc = hf_cli_args(cli, argc, argv, 0, 0)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_core_pin_unlock(cli->core, user, &cli->who);
    if (rv != CKR_OK) return hf_cli_fail(cli, rv, "unlocking the PIN");
    if (!cli->json) printf("%s PIN unlocked\n", user == HF_USER_SO ? "SO" : "user");
    return HF_EXIT_OK;
}

int hf_cmd_token(struct hf_cli *cli, int argc, char **argv)
{
    static const struct hf_cli_command sub[] = {
        {"status", cmd_status, "", "the PIN attempt counters of the Holdfast token", NULL},
        {"unlock", cmd_unlock, "[--so]",
         "clear the user's (or with --so the SO's) wrong-PIN count, unlocking the PIN", NULL},
    };

    return hf_cli_dispatch(cli, sub, sizeof(sub) / sizeof(sub[0]), argc - 1, argv + 1);
}
