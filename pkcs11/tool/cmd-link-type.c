/* `holdfast link types` and `holdfast link type add NAME`: the registry of link types (store.h)
 * that `holdfast link add` checks. holdfastd registers its plugins' types itself at start; an
 * operator registers one by hand for a link made before its plugin first ran. */
#include "hf-build.h"

#include <stdlib.h>

#include "pkcs11/tool/cli.h"

/* One name a line (as scripts want it), or a JSON array of names. */
static int types_print(struct hf_cli *cli, char **names, size_t n)
{
    json_object *arr;

    if (!cli->json) {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", names[i]);
        return HF_EXIT_OK;
    }
    if (!(arr = json_object_new_array())) return hf_cli_json_print(NULL);
    for (size_t i = 0; i < n; i++)
        json_object_array_add(arr, json_object_new_string(names[i]));
    return hf_cli_json_print(arr);
}

int hf_cmd_link_types(struct hf_cli *cli, int argc, char **argv)
{
    char **names = NULL;
    size_t n = 0;
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 0, 0)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_store_link_type_list(hf_core_store(cli->core), &names, &n);
    if (rv != CKR_OK) return hf_cli_fail(cli, rv, "listing link types");
    rc = types_print(cli, names, n);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

static int cmd_type_add(struct hf_cli *cli, int argc, char **argv)
{
    const char *name;
    bool added = false;
    char what[64];
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 1, 1)) != HF_CLI_CONTINUE) return rc;
    name = argv[optind];
    if (!hf_link_type_is_valid(name))
        return hf_cli_usage_error(cli, "a link type is 1 to %d of a-z, 0-9 and '-'",
                                  HF_LINK_TYPE_MAX);
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_core_link_type_add(cli->core, name, &cli->who, &added);
    snprintf(what, sizeof(what), "link type '%s'", name);
    if (rv != CKR_OK) return hf_cli_fail(cli, rv, what);
    if (cli->json) {
        json_object *o = json_object_new_object();
        if (o) {
            json_object_object_add(o, "type", json_object_new_string(name));
            json_object_object_add(o, "added", json_object_new_boolean(added));
        }
        return hf_cli_json_print(o);
    }
    printf("%s %s\n", what, added ? "registered" : "was already registered");
    return HF_EXIT_OK;
}

static const struct hf_cli_command type_commands[] = {
    {"add", cmd_type_add, "NAME", "register a link type (1 to 32 of a-z, 0-9, '-')", NULL},
};

int hf_cmd_link_type(struct hf_cli *cli, int argc, char **argv)
{
    return hf_cli_dispatch(cli, type_commands, sizeof(type_commands) / sizeof(type_commands[0]),
                           argc - 1, argv + 1);
}
