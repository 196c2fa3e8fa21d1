#include "hf-build.h"

#include <stdio.h>

#include "pkcs11/core/key.h"
#include "pkcs11/tool/cli.h"

/* `holdfast uuid`: a fresh random UUID, for the ids a config names and Holdfast mints (an OCI
 * vault, a SAP keystore). Opens nothing: no store, no token. */
int hf_cmd_uuid(struct hf_cli *cli, int argc, char **argv)
{
    char uuid[HF_UUID_LEN + 1];
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 0, 0)) != HF_CLI_CONTINUE) return rc;
    hf_uuid_generate(uuid);
    if (cli->json) {
        struct json_object *o = json_object_new_object();
        if (!o || json_object_object_add(o, "uuid", json_object_new_string(uuid))) {
            json_object_put(o);
            return HF_EXIT_FAILED;
        }
        return hf_cli_json_print(o);
    }
    printf("%s\n", uuid);
    return HF_EXIT_OK;
}
