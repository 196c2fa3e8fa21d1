/* `holdfast pool restore POOL MEMBER` (cmd-pool-restore.h). */
#include "hf-build.h"

#include "pkcs11/tool/cmd-pool-restore.h"

#include <stdio.h>

int hf_cmd_pool_restore(struct hf_cli *cli, int argc, char **argv)
{
    const char *name, *member;
    char what[2 * HF_POOL_NAME_MAX + 32];
    size_t restored = 0;
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 2, 2)) != HF_CLI_CONTINUE) return rc;
    name = argv[optind];
    member = argv[optind + 1];
    if (!hf_pool_name_is_valid(name) || !hf_pool_name_is_valid(member))
        return hf_cli_usage_error(cli, "POOL and MEMBER are 1 to %d of a-z, 0-9 and '-'",
                                  HF_POOL_NAME_MAX);
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_core_pool_restore(cli->core, name, member, &cli->who, &restored);
    if (rv != CKR_OK) {
        snprintf(what, sizeof(what), "pool '%s' member '%s'", name, member);
        return hf_cli_fail(cli, rv, what);
    }
    if (cli->json) {
        json_object *o = json_object_new_object();
        if (o) {
            json_object_object_add(o, "pool", json_object_new_string(name));
            json_object_object_add(o, "member", json_object_new_string(member));
            json_object_object_add(o, "restored", json_object_new_int64((int64_t)restored));
        }
        return hf_cli_json_print(o);
    }
    printf("restored %zu object%s to member '%s' of pool '%s'\n", restored,
           restored == 1 ? "" : "s", member, name);
    return HF_EXIT_OK;
}
