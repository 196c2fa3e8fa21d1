/* `holdfast key version deactivate|compromise|destroy REF VERSION`: one version's own KMIP
 * state, so a single version can be retired or marked compromised while the key lives on. */
#include "hf-build.h"

#include <stdlib.h>
#include <string.h>

#include "pkcs11/tool/cli.h"

struct version_args {
    unsigned version;
    bool rotate;
    bool yes;
};

static int version_parse(struct hf_cli *cli, int argc, char **argv, struct version_args *a)
{
    static const struct option opts[] = {
        {"rotate", no_argument, NULL, 'r'},
        {"yes", no_argument, NULL, 'y'},
        HF_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    unsigned long n;
    char *end;
    int c, rc;

    while ((c = hf_cli_getopt(argc, argv, opts)) != -1) {
        if (c == 'r')
            a->rotate = true;
        else if (c == 'y')
            a->yes = true;
        else if ((rc = hf_cli_opt_other(cli, c, argv)) != HF_CLI_CONTINUE)
            return rc;
    }
    if ((rc = hf_cli_args(cli, argc, argv, 2, 2)) != HF_CLI_CONTINUE) return rc;
    n = strtoul(argv[optind + 1], &end, 10);
    if (*argv[optind + 1] == '\0' || *end != '\0' || n == 0 || n > 0xffffffffUL)
        return hf_cli_usage_error(cli, "VERSION must be a version number (1, 2, ...), not '%s'",
                                  argv[optind + 1]);
    a->version = (unsigned)n;
    return HF_CLI_CONTINUE;
}

/* Explains the refusals the core would give, before --rotate adds a version for nothing. */
static int version_precheck(struct hf_cli *cli, const struct hf_key *key,
                            const struct hf_key_version *v, unsigned long state, bool rotate)
{
    if (!hf_version_state_can_move(v->state, state)) {
        hf_cli_error("%s: version %u of key '%s' is %s and cannot become %s (KMIP: active -> "
                     "deactivated -> compromised -> destroyed, or active -> compromised; "
                     "never back)",
                     cli->command, v->version, key->name, hf_state_name(v->state),
                     hf_state_name(state));
        return HF_EXIT_FAILED;
    }
    if (v->version == key->current_version && key->state == HF_STATE_ACTIVE &&
        state != HF_STATE_COMPROMISED && !rotate) {
        hf_cli_error("%s: version %u is the current version of active key '%s': new "
                     "encryptions use it; run `holdfast key rotate %s` first (or pass --rotate)",
                     cli->command, v->version, key->name, key->name);
        return HF_EXIT_FAILED;
    }
    return HF_CLI_CONTINUE;
}

static int version_load(struct hf_cli *cli, const char *ref, unsigned version, struct hf_key *key,
                        struct hf_key_version *v)
{
    struct hf_store *store = hf_core_store(cli->core);
    char what[HF_NAME_MAX + 40];
    CK_RV rv = hf_store_key_get(store, ref, key);

    if (rv == CKR_OK) rv = hf_store_version_find(store, key->uuid, version, v);
    if (rv == CKR_OK) return HF_CLI_CONTINUE;
    snprintf(what, sizeof(what), "version %u of key '%s'", version, ref);
    return hf_cli_fail(cli, rv, what);
}

static int version_report(struct hf_cli *cli, const char *ref, unsigned version)
{
    struct hf_key key = {0};
    struct hf_key_version v = {0};
    int rc = version_load(cli, ref, version, &key, &v);

    if (rc == HF_CLI_CONTINUE && cli->json) {
        json_object *o = hf_cli_version_json(&v);
        if (o) json_object_object_add(o, "key", json_object_new_string(key.name));
        rc = hf_cli_json_print(o);
    } else if (rc == HF_CLI_CONTINUE) {
        printf("key '%s' version %u is now %s (current version %u)\n", key.name, v.version,
               hf_state_name(v.state), key.current_version);
        rc = HF_EXIT_OK;
    }
    hf_key_clear(&key);
    hf_key_version_clear(&v);
    return rc;
}

static int version_set_state(struct hf_cli *cli, int argc, char **argv, unsigned long state)
{
    struct version_args a = {0};
    struct hf_key key = {0};
    struct hf_key_version v = {0};
    const char *ref;
    CK_RV rv;
    int rc;

    if ((rc = version_parse(cli, argc, argv, &a)) != HF_CLI_CONTINUE) return rc;
    ref = argv[optind];
    if (state == HF_STATE_DESTROYED && !a.yes)
        return hf_cli_usage_error(cli,
                                  "refusing to destroy version %u of key '%s' without --yes: "
                                  "its material is erased for good and nothing it encrypted "
                                  "can be decrypted again",
                                  a.version, ref);
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    if ((rc = version_load(cli, ref, a.version, &key, &v)) != HF_CLI_CONTINUE) goto done;
    if ((rc = version_precheck(cli, &key, &v, state, a.rotate)) != HF_CLI_CONTINUE) goto done;
    rv = CKR_OK;
    if (a.rotate && v.version == key.current_version)
        rv = hf_core_key_rotate(cli->core, key.uuid, &cli->who, NULL);
    if (rv == CKR_OK)
        rv = hf_core_version_set_state(cli->core, key.uuid, a.version, state, &cli->who);
    if (rv != CKR_OK) {
        char what[HF_NAME_MAX + 40];
        snprintf(what, sizeof(what), "version %u of key '%s'", a.version, ref);
        rc = hf_cli_fail(cli, rv, what);
        goto done;
    }
    rc = version_report(cli, key.uuid, a.version);
done:
    hf_key_clear(&key);
    hf_key_version_clear(&v);
    return rc;
}

static int cmd_deactivate(struct hf_cli *cli, int argc, char **argv)
{
    return version_set_state(cli, argc, argv, HF_STATE_DEACTIVATED);
}

static int cmd_compromise(struct hf_cli *cli, int argc, char **argv)
{
    return version_set_state(cli, argc, argv, HF_STATE_COMPROMISED);
}

static int cmd_destroy(struct hf_cli *cli, int argc, char **argv)
{
    return version_set_state(cli, argc, argv, HF_STATE_DESTROYED);
}

#define ROTATE_HELP                                                                                \
    "  --rotate         when VERSION is the current version of an active key, rotate first\n"

static const struct hf_cli_command version_commands[] = {
    {"deactivate", cmd_deactivate, "REF VERSION [--rotate]",
     "stop new encryptions and signatures under one version (it still decrypts and verifies)",
     ROTATE_HELP},
    {"compromise", cmd_compromise, "REF VERSION",
     "mark one version compromised (it still decrypts and verifies; recorded so)", NULL},
    {"destroy", cmd_destroy, "REF VERSION --yes [--rotate]",
     "erase one deactivated or compromised version's material for good (needs --yes)", ROTATE_HELP},
};

int hf_cmd_key_version(struct hf_cli *cli, int argc, char **argv)
{
    return hf_cli_dispatch(cli, version_commands,
                           sizeof(version_commands) / sizeof(version_commands[0]), argc - 1,
                           argv + 1);
}
