#include "hf-build.h"

#include <stdlib.h>
#include <string.h>

#include "pkcs11/tool/cli.h"

static int link_fail(struct hf_cli *cli, CK_RV rv, const char *type, const char *ext_id)
{
    char what[512];

    snprintf(what, sizeof(what), "link %s '%s'", type, ext_id);
    return hf_cli_fail(cli, rv, what);
}

/* The key's name for display ("-" when it cannot be read); NULL only when out of memory.
 * Caller frees. */
static char *key_name_of(struct hf_store *store, const char *uuid)
{
    struct hf_key key = {0};
    char *name;

    if (hf_store_key_get(store, uuid, &key) != CKR_OK) return strdup("-");
    name = key.name;
    key.name = NULL;
    hf_key_clear(&key);
    return name;
}

static int link_report(struct hf_cli *cli, const char *type, const char *ext_id, const char *done)
{
    struct hf_store *store = hf_core_store(cli->core);
    struct hf_link link = {0};
    char *name;
    int rc = HF_EXIT_OK;
    CK_RV rv;

    rv = hf_store_link_get(store, type, ext_id, &link);
    if (rv != CKR_OK) return link_fail(cli, rv, type, ext_id);
    name = key_name_of(store, link.key_uuid);
    if (cli->json)
        rc = hf_cli_json_print(hf_cli_link_json(&link, name));
    else
        printf("link %s '%s' -> key '%s' %s\n", link.type, link.ext_id, name ? name : "-", done);
    free(name);
    hf_link_clear(&link);
    return rc;
}

static int cmd_add(struct hf_cli *cli, int argc, char **argv)
{
    struct hf_key key = {0};
    struct hf_link existing = {0};
    const char *type, *ext_id, *ref;
    char what[HF_NAME_MAX + 16];
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 3, 3)) != HF_CLI_CONTINUE) return rc;
    type = argv[optind];
    ext_id = argv[optind + 1];
    ref = argv[optind + 2];
    if (!*type || !*ext_id) return hf_cli_usage_error(cli, "TYPE and EXT_ID must not be empty");
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    /* Looked up first so a missing key is reported as such, not as a missing link. */
    rv = hf_store_key_get(hf_core_store(cli->core), ref, &key);
    hf_key_clear(&key);
    if (rv != CKR_OK) {
        snprintf(what, sizeof(what), "key '%s'", ref);
        return hf_cli_fail(cli, rv, what);
    }
    rv = hf_core_link_add(cli->core, type, ext_id, ref, &cli->who);
    if (rv == CKR_ATTRIBUTE_VALUE_INVALID &&
        hf_store_link_get(hf_core_store(cli->core), type, ext_id, &existing) == CKR_OK) {
        hf_link_clear(&existing);
        hf_cli_error("link %s '%s' already exists", type, ext_id);
        return HF_EXIT_FAILED;
    }
    if (rv == CKR_ARGUMENTS_BAD)
        return hf_cli_usage_error(cli,
                                  "link type '%s' is not registered (see `holdfast link types`): "
                                  "holdfastd registers its plugins' types when it starts, or "
                                  "register it with `holdfast link type add %s`",
                                  type, type);
    if (rv != CKR_OK) return link_fail(cli, rv, type, ext_id);
    return link_report(cli, type, ext_id, "added");
}

static int set_blocked(struct hf_cli *cli, int argc, char **argv, bool blocked)
{
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 2, 2)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_core_link_set_blocked(cli->core, argv[optind], argv[optind + 1], blocked, &cli->who);
    if (rv != CKR_OK) return link_fail(cli, rv, argv[optind], argv[optind + 1]);
    return link_report(cli, argv[optind], argv[optind + 1],
                       blocked ? "blocked: every call through it now fails"
                               : "unblocked: calls through it work again");
}

static int cmd_block(struct hf_cli *cli, int argc, char **argv)
{
    return set_blocked(cli, argc, argv, true);
}

static int cmd_unblock(struct hf_cli *cli, int argc, char **argv)
{
    return set_blocked(cli, argc, argv, false);
}

static int list_print(struct hf_cli *cli, const struct hf_link *links, size_t n)
{
    static const char *const headers[] = {"TYPE", "EXT_ID", "KEY", "BLOCKED", "UPDATED"};
    struct hf_store *store = hf_core_store(cli->core);
    json_object *arr = NULL;
    struct hf_table *t = NULL;

    if (cli->json)
        arr = json_object_new_array();
    else
        t = hf_table_new(5, headers);
    if (!arr && !t) return hf_cli_json_print(NULL);
    for (size_t i = 0; i < n; i++) {
        char *name = key_name_of(store, links[i].key_uuid);
        char updated[32];
        const char *row[5] = {links[i].type, links[i].ext_id, name, links[i].blocked ? "yes" : "no",
                              updated};

        hf_time_format(links[i].updated, updated, sizeof(updated));
        if (arr)
            json_object_array_add(arr, hf_cli_link_json(&links[i], name));
        else
            hf_table_add(t, row);
        free(name);
    }
    if (arr) return hf_cli_json_print(arr);
    hf_table_print(t, stdout, "");
    hf_table_free(t);
    return HF_EXIT_OK;
}

static int cmd_list(struct hf_cli *cli, int argc, char **argv)
{
    struct hf_store *store;
    struct hf_key key = {0};
    struct hf_link *links = NULL;
    size_t n = 0;
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 0, 1)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    store = hf_core_store(cli->core);
    if (optind < argc) {
        char what[HF_NAME_MAX + 16];

        if ((rv = hf_store_key_get(store, argv[optind], &key)) != CKR_OK) {
            snprintf(what, sizeof(what), "key '%s'", argv[optind]);
            return hf_cli_fail(cli, rv, what);
        }
    }
    rv = hf_store_link_list(store, optind < argc ? key.uuid : NULL, &links, &n);
    hf_key_clear(&key);
    if (rv != CKR_OK) return hf_cli_fail(cli, rv, "listing links");
    rc = list_print(cli, links, n);
    for (size_t i = 0; i < n; i++)
        hf_link_clear(&links[i]);
    free(links);
    return rc;
}

#define ADD_DETAILS                                                                                \
    "  TYPE    a registered link type (`holdfast link types`): aws-xks, gcp-ekm, ...\n"            \
    "  EXT_ID  the cloud's identifier for the key (an XKS key id, an EKM key path, ...)\n"         \
    "  KEY     the key's name or UUID\n"

/* TYPE names the cloud API ("aws-xks", "gcp-ekm", "oci", "sap", "gws-cse", or a plugin's own);
 * EXT_ID is that API's identifier for the key. */
static const struct hf_cli_command link_commands[] = {
    {"add", cmd_add, "TYPE EXT_ID KEY", "map a cloud identity to a key", ADD_DETAILS},
    {"create", cmd_add, "TYPE EXT_ID KEY", "the same as add", ADD_DETAILS},
    {"block", cmd_block, "TYPE EXT_ID", "block a link: every call through it fails (kill switch)",
     NULL},
    {"unblock", cmd_unblock, "TYPE EXT_ID", "unblock a link", NULL},
    {"list", cmd_list, "[KEY]", "list links (of one key): TYPE, EXT_ID, KEY, BLOCKED, UPDATED",
     NULL},
    {"types", hf_cmd_link_types, "", "list the registered link types", NULL},
    {"type", hf_cmd_link_type, "add NAME", "register a link type", NULL},
};

int hf_cmd_link(struct hf_cli *cli, int argc, char **argv)
{
    return hf_cli_dispatch(cli, link_commands, sizeof(link_commands) / sizeof(link_commands[0]),
                           argc - 1, argv + 1);
}
