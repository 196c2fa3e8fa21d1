#include "hf-build.h"

#include <stdlib.h>
#include <string.h>

#include "pkcs11/tool/cli.h"

/* ---- shared ---- */

static int key_load(struct hf_cli *cli, const char *ref, struct hf_key *key)
{
    char what[HF_NAME_MAX + 16];
    CK_RV rv = hf_store_key_get(hf_core_store(cli->core), ref, key);

    if (rv == CKR_OK) return HF_CLI_CONTINUE;
    snprintf(what, sizeof(what), "key '%s'", ref);
    return hf_cli_fail(cli, rv, what);
}

static int key_fail(struct hf_cli *cli, CK_RV rv, const char *ref)
{
    char what[HF_NAME_MAX + 16];

    snprintf(what, sizeof(what), "key '%s'", ref);
    return hf_cli_fail(cli, rv, what);
}

/* The options-only parse most subcommands need: common options, then exactly n operands. */
static int parse_plain(struct hf_cli *cli, int argc, char **argv, int n)
{
    static const struct option opts[] = {HF_CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int c, rc;

    while ((c = hf_cli_getopt(argc, argv, opts)) != -1)
        if ((rc = hf_cli_opt_other(cli, c, argv)) != HF_CLI_CONTINUE) return rc;
    return hf_cli_args(cli, argc, argv, n, n);
}

/* After a change: the key as it now is (--json) or one line for people. */
static int key_report(struct hf_cli *cli, const char *ref, const char *done)
{
    struct hf_key key = {0};
    int rc = key_load(cli, ref, &key);

    if (rc != HF_CLI_CONTINUE) return rc;
    if (cli->json)
        rc = hf_cli_json_print(hf_cli_key_json(&key));
    else {
        printf("key '%s' %s (state %s, version %u)\n", key.name, done, hf_state_name(key.state),
               key.current_version);
        rc = HF_EXIT_OK;
    }
    hf_key_clear(&key);
    return rc;
}

/* ---- create ---- */

struct create_args {
    struct hf_key_spec spec;
    struct hf_label *labels;
    size_t n_labels;
};

static int label_parse(struct hf_cli *cli, const char *arg, struct hf_label *out)
{
    const char *eq = strchr(arg, '=');

    if (!eq || eq == arg) return hf_cli_usage_error(cli, "label '%s' is not NAME=VALUE", arg);
    out->name = strndup(arg, (size_t)(eq - arg));
    out->value = strdup(eq + 1);
    if (!out->name || !out->value) {
        hf_cli_error("out of memory");
        return HF_EXIT_FAILED;
    }
    if (!hf_label_name_is_valid(out->name))
        return hf_cli_usage_error(cli, "invalid label name '%s'", out->name);
    return HF_CLI_CONTINUE;
}

static int create_parse(struct hf_cli *cli, int argc, char **argv, struct create_args *a)
{
    enum { O_ALG = 1, O_USAGE, O_LABEL, O_OWNER, O_EXPORTABLE, O_STATE, O_SOURCE };
    static const struct option opts[] = {
        {"alg", required_argument, NULL, O_ALG},
        {"usage", required_argument, NULL, O_USAGE},
        {"label", required_argument, NULL, O_LABEL},
        {"owner", required_argument, NULL, O_OWNER},
        {"exportable", no_argument, NULL, O_EXPORTABLE},
        {"state", required_argument, NULL, O_STATE},
        {"source", required_argument, NULL, O_SOURCE},
        HF_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int c, rc;

    a->spec.alg = HF_ALG_AES;
    a->spec.bits = 256;
    /* At most one label per remaining word: sizes the array once. */
    a->labels = calloc((size_t)argc, sizeof(*a->labels));
    if (!a->labels) {
        hf_cli_error("out of memory");
        return HF_EXIT_FAILED;
    }
    while ((c = hf_cli_getopt(argc, argv, opts)) != -1) {
        switch (c) {
        case O_ALG:
            if (!hf_alg_spec_parse(optarg, &a->spec.alg, &a->spec.bits))
                return hf_cli_usage_error(cli,
                                          "unknown algorithm '%s' (AES-128|AES-192|AES-256, "
                                          "RSA-2048|RSA-3072|RSA-4096, EC-P256|EC-P384|EC-P521, "
                                          "Ed25519, HMAC-112..HMAC-4096)",
                                          optarg);
            break;
        case O_USAGE:
            if (!hf_usage_parse(optarg, &a->spec.usage) || a->spec.usage == 0)
                return hf_cli_usage_error(cli,
                                          "bad usage '%s' (comma-separated: encrypt, "
                                          "decrypt, wrap, unwrap, sign, verify)",
                                          optarg);
            break;
        case O_LABEL:
            if ((rc = label_parse(cli, optarg, &a->labels[a->n_labels++])) != HF_CLI_CONTINUE)
                return rc;
            break;
        case O_OWNER:
            a->spec.owner = optarg;
            break;
        case O_EXPORTABLE:
            a->spec.exportable = true;
            break;
        case O_STATE:
            if (!hf_state_parse(optarg, &a->spec.state) ||
                (a->spec.state != HF_STATE_PRE_ACTIVE && a->spec.state != HF_STATE_ACTIVE))
                return hf_cli_usage_error(cli, "a new key is pre-active or active, not '%s'",
                                          optarg);
            break;
        case O_SOURCE:
            if (strcmp(optarg, HF_KEY_SOURCE_LOCAL) != 0 &&
                (strncmp(optarg, HF_KEY_SOURCE_POOL_PREFIX, strlen(HF_KEY_SOURCE_POOL_PREFIX)) !=
                     0 ||
                 !hf_pool_name_is_valid(optarg + strlen(HF_KEY_SOURCE_POOL_PREFIX))))
                return hf_cli_usage_error(cli, "--source is local or pool:NAME, not '%s'", optarg);
            a->spec.source = optarg;
            break;
        default:
            if ((rc = hf_cli_opt_other(cli, c, argv)) != HF_CLI_CONTINUE) return rc;
        }
    }
    if ((rc = hf_cli_args(cli, argc, argv, 1, 1)) != HF_CLI_CONTINUE) return rc;
    a->spec.name = argv[optind];
    if (!hf_key_name_is_valid(a->spec.name))
        return hf_cli_usage_error(cli, "invalid key name '%s' (1-%d of A-Z a-z 0-9 . _ : / @ + -)",
                                  a->spec.name, HF_NAME_MAX);
    a->spec.labels = a->labels;
    a->spec.n_labels = a->n_labels;
    return HF_CLI_CONTINUE;
}

/* A pool source names a pool that exists, said in one line before anything is made. */
static int pool_source_check(struct hf_cli *cli, const struct hf_key_spec *spec)
{
    struct hf_store_pool pool = {0};
    const char *name;
    CK_RV rv;

    if (spec->source == NULL || strcmp(spec->source, HF_KEY_SOURCE_LOCAL) == 0)
        return HF_CLI_CONTINUE;
    name = spec->source + strlen(HF_KEY_SOURCE_POOL_PREFIX);
    rv = hf_store_pool_get(hf_core_store(cli->core), name, &pool);
    hf_store_pool_clear(&pool);
    if (rv == CKR_KEY_HANDLE_INVALID) {
        hf_cli_error("key '%s': there is no pool named '%s' (see `holdfast pool list`)", spec->name,
                     name);
        return HF_EXIT_NOT_FOUND;
    }
    if (rv != CKR_OK) {
        char what[64];
        snprintf(what, sizeof(what), "pool '%s'", name);
        return hf_cli_fail(cli, rv, what);
    }
    if (!hf_core_pool_alg_is_served(spec->alg)) {
        hf_cli_error("key '%s': pool keys are AES, RSA, EC or Ed25519", spec->name);
        return HF_EXIT_FAILED;
    }
    if (spec->exportable) {
        hf_cli_error("key '%s': a pool key never leaves its HSMs: --exportable is refused",
                     spec->name);
        return HF_EXIT_FAILED;
    }
    return HF_CLI_CONTINUE;
}

static int cmd_create(struct hf_cli *cli, int argc, char **argv)
{
    struct create_args a = {0};
    struct hf_key key = {0};
    struct hf_key_version v = {0};
    char alg[32];
    CK_RV rv;
    int rc;

    if ((rc = create_parse(cli, argc, argv, &a)) != HF_CLI_CONTINUE) goto done;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) goto done;
    if ((rc = pool_source_check(cli, &a.spec)) != HF_CLI_CONTINUE) goto done;
    rv = hf_core_key_create(cli->core, &a.spec, &cli->who, &key, &v);
    if (rv != CKR_OK && a.spec.source != NULL && strcmp(a.spec.source, HF_KEY_SOURCE_LOCAL) != 0 &&
        rv != CKR_ATTRIBUTE_VALUE_INVALID && rv != CKR_KEY_SIZE_RANGE) {
        /* The pool exists (checked above): it could not be opened or generate the key. */
        hf_cli_error("key '%s': pool '%s' could not make it (0x%lx%s); nothing was written",
                     a.spec.name, a.spec.source + strlen(HF_KEY_SOURCE_POOL_PREFIX),
                     (unsigned long)rv, rv == CKR_DEVICE_ERROR ? ": no member answers" : "");
        rc = HF_EXIT_FAILED;
        goto done;
    }
    if (rv == CKR_ATTRIBUTE_VALUE_INVALID &&
        hf_store_key_get(hf_core_store(cli->core), a.spec.name, &key) == CKR_OK) {
        hf_cli_error("key '%s' already exists", a.spec.name);
        rc = HF_EXIT_FAILED;
        goto done;
    }
    if (rv != CKR_OK) {
        rc = key_fail(cli, rv, a.spec.name);
        goto done;
    }
    if (cli->json) {
        json_object *o = hf_cli_key_json(&key);
        json_object *vs = json_object_new_array();

        if (o && vs) {
            json_object_array_add(vs, hf_cli_version_json(&v));
            json_object_object_add(o, "versions", vs);
            vs = NULL;
        }
        json_object_put(vs);
        rc = hf_cli_json_print(o);
    } else {
        hf_alg_format(key.alg, key.bits, alg, sizeof(alg));
        printf("created key '%s' (%s, %s, version 1, uuid %s)\n", key.name, alg,
               hf_state_name(key.state), key.uuid);
        rc = HF_EXIT_OK;
    }
done:
    for (size_t i = 0; a.labels && i < a.n_labels; i++) {
        free(a.labels[i].name);
        free(a.labels[i].value);
    }
    free(a.labels);
    hf_key_clear(&key);
    hf_key_version_clear(&v);
    return rc;
}

/* ---- list and show ---- */

static int list_print(struct hf_cli *cli, const struct hf_key *keys, size_t n)
{
    static const char *const headers[] = {"NAME", "ALG", "STATE", "VERSION", "USAGE", "UUID"};
    struct hf_table *t;
    json_object *arr;

    if (cli->json) {
        if (!(arr = json_object_new_array())) return hf_cli_json_print(NULL);
        for (size_t i = 0; i < n; i++)
            json_object_array_add(arr, hf_cli_key_json(&keys[i]));
        return hf_cli_json_print(arr);
    }
    if (!(t = hf_table_new(6, headers))) return hf_cli_json_print(NULL);
    for (size_t i = 0; i < n; i++) {
        char alg[32], version[16], usage[128];
        const char *row[6] = {keys[i].name, alg,   hf_state_name(keys[i].state),
                              version,      usage, keys[i].uuid};

        hf_alg_format(keys[i].alg, keys[i].bits, alg, sizeof(alg));
        snprintf(version, sizeof(version), "%u", keys[i].current_version);
        hf_usage_format(keys[i].usage, usage, sizeof(usage));
        hf_table_add(t, row);
    }
    hf_table_print(t, stdout, "");
    hf_table_free(t);
    return HF_EXIT_OK;
}

static int cmd_list(struct hf_cli *cli, int argc, char **argv)
{
    struct hf_key *keys = NULL;
    size_t n = 0;
    CK_RV rv;
    int rc;

    if ((rc = parse_plain(cli, argc, argv, 0)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_store_key_list(hf_core_store(cli->core), &keys, &n);
    if (rv != CKR_OK) return hf_cli_fail(cli, rv, "listing keys");
    rc = list_print(cli, keys, n);
    for (size_t i = 0; i < n; i++)
        hf_key_clear(&keys[i]);
    free(keys);
    return rc;
}

struct key_detail {
    struct hf_key key;
    struct hf_key_version *versions;
    size_t n_versions;
    struct hf_link *links;
    size_t n_links;
};

static void show_json(struct hf_cli *cli, const struct key_detail *d)
{
    json_object *o = hf_cli_key_json(&d->key);
    json_object *vs = json_object_new_array(), *ls = json_object_new_array();

    if (!o || !vs || !ls) {
        json_object_put(o);
        o = NULL;
    } else {
        for (size_t i = 0; i < d->n_versions; i++)
            json_object_array_add(vs, hf_cli_version_json(&d->versions[i]));
        for (size_t i = 0; i < d->n_links; i++)
            json_object_array_add(ls, hf_cli_link_json(&d->links[i], d->key.name));
        json_object_object_add(o, "versions", vs);
        json_object_object_add(o, "links", ls);
        vs = ls = NULL;
    }
    json_object_put(vs);
    json_object_put(ls);
    hf_cli_json_print(o);
}

static void show_versions(const struct key_detail *d)
{
    static const char *const headers[] = {"VERSION", "STATE", "CREATED", "UUID"};
    struct hf_table *t = hf_table_new(4, headers);

    for (size_t i = 0; t && i < d->n_versions; i++) {
        const struct hf_key_version *v = &d->versions[i];
        char num[16], created[32];
        const char *row[4] = {num, hf_state_name(v->state), created, v->uuid};

        snprintf(num, sizeof(num), "%u%s", v->version,
                 v->version == d->key.current_version ? " *" : "");
        hf_time_format(v->created, created, sizeof(created));
        hf_table_add(t, row);
    }
    printf("versions:     (* current)\n");
    hf_table_print(t, stdout, "  ");
    hf_table_free(t);
}

static void show_links(const struct key_detail *d)
{
    static const char *const headers[] = {"TYPE", "EXT_ID", "BLOCKED"};
    struct hf_table *t;

    if (d->n_links == 0) {
        printf("links:        none\n");
        return;
    }
    t = hf_table_new(3, headers);
    for (size_t i = 0; t && i < d->n_links; i++) {
        const char *row[3] = {d->links[i].type, d->links[i].ext_id,
                              d->links[i].blocked ? "yes" : "no"};
        hf_table_add(t, row);
    }
    printf("links:\n");
    hf_table_print(t, stdout, "  ");
    hf_table_free(t);
}

static void show_text(const struct key_detail *d)
{
    const struct hf_key *k = &d->key;
    char alg[32], usage[128], created[32], updated[32];

    hf_alg_format(k->alg, k->bits, alg, sizeof(alg));
    hf_usage_format(k->usage, usage, sizeof(usage));
    hf_time_format(k->created, created, sizeof(created));
    hf_time_format(k->updated, updated, sizeof(updated));
    printf("name:         %s\nuuid:         %s\nalgorithm:    %s\nstate:        %s\n"
           "usage:        %s\nversion:      %u\nowner:        %s\nsource:       %s\n"
           "exportable:   %s\ncreated:      %s\nupdated:      %s\n",
           k->name, k->uuid, alg, hf_state_name(k->state), usage, k->current_version,
           k->owner ? k->owner : "-", k->source ? k->source : "-", k->exportable ? "yes" : "no",
           created, updated);
    if (k->n_labels == 0) printf("labels:       none\n");
    for (size_t i = 0; i < k->n_labels; i++)
        printf("%-14s%s=%s\n", i == 0 ? "labels:" : "", k->labels[i].name, k->labels[i].value);
    show_versions(d);
    show_links(d);
}

static int cmd_show(struct hf_cli *cli, int argc, char **argv)
{
    struct key_detail d = {0};
    struct hf_store *store;
    CK_RV rv;
    int rc;

    if ((rc = parse_plain(cli, argc, argv, 1)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    store = hf_core_store(cli->core);
    if ((rc = key_load(cli, argv[optind], &d.key)) != HF_CLI_CONTINUE) goto done;
    rv = hf_store_version_list(store, d.key.uuid, &d.versions, &d.n_versions);
    if (rv == CKR_OK) rv = hf_store_link_list(store, d.key.uuid, &d.links, &d.n_links);
    if (rv != CKR_OK) {
        rc = key_fail(cli, rv, argv[optind]);
        goto done;
    }
    if (cli->json)
        show_json(cli, &d);
    else
        show_text(&d);
    rc = HF_EXIT_OK;
done:
    for (size_t i = 0; i < d.n_versions; i++)
        hf_key_version_clear(&d.versions[i]);
    free(d.versions);
    for (size_t i = 0; i < d.n_links; i++)
        hf_link_clear(&d.links[i]);
    free(d.links);
    hf_key_clear(&d.key);
    return rc;
}

/* ---- changes ---- */

static int cmd_rotate(struct hf_cli *cli, int argc, char **argv)
{
    struct hf_key_version v = {0};
    json_object *o;
    CK_RV rv;
    int rc;

    if ((rc = parse_plain(cli, argc, argv, 1)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_core_key_rotate(cli->core, argv[optind], &cli->who, &v);
    if (rv != CKR_OK) return key_fail(cli, rv, argv[optind]);
    if (cli->json) {
        if ((o = hf_cli_version_json(&v)))
            json_object_object_add(o, "key", json_object_new_string(argv[optind]));
        rc = hf_cli_json_print(o);
    } else {
        printf("key '%s' rotated: version %u (uuid %s) is now current\n", argv[optind], v.version,
               v.uuid);
        rc = HF_EXIT_OK;
    }
    hf_key_version_clear(&v);
    return rc;
}

static int set_state(struct hf_cli *cli, int argc, char **argv, unsigned long state)
{
    struct hf_key key = {0};
    char done[48];
    CK_RV rv;
    int rc;

    if ((rc = parse_plain(cli, argc, argv, 1)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    /* Checked here only to explain a refusal; the core decides, under its transaction. */
    if ((rc = key_load(cli, argv[optind], &key)) != HF_CLI_CONTINUE) return rc;
    if (key.state != state && !hf_key_state_can_move(key.state, state)) {
        hf_cli_error("%s: key '%s' is %s and cannot become %s (KMIP: pre-active -> active -> "
                     "deactivated -> compromised -> destroyed, never back)",
                     cli->command, key.name, hf_state_name(key.state), hf_state_name(state));
        hf_key_clear(&key);
        return HF_EXIT_FAILED;
    }
    hf_key_clear(&key);
    rv = hf_core_key_set_state(cli->core, argv[optind], state, &cli->who);
    if (rv != CKR_OK) return key_fail(cli, rv, argv[optind]);
    snprintf(done, sizeof(done), "moved to %s", hf_state_name(state));
    return key_report(cli, argv[optind], done);
}

static int cmd_activate(struct hf_cli *cli, int argc, char **argv)
{
    return set_state(cli, argc, argv, HF_STATE_ACTIVE);
}

static int cmd_deactivate(struct hf_cli *cli, int argc, char **argv)
{
    return set_state(cli, argc, argv, HF_STATE_DEACTIVATED);
}

static int cmd_compromise(struct hf_cli *cli, int argc, char **argv)
{
    return set_state(cli, argc, argv, HF_STATE_COMPROMISED);
}

static int cmd_destroy(struct hf_cli *cli, int argc, char **argv)
{
    bool yes;
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_yes(cli, argc, argv, 1, 1, &yes)) != HF_CLI_CONTINUE) return rc;
    if (!yes)
        return hf_cli_usage_error(cli,
                                  "refusing to destroy key '%s' without --yes: its material "
                                  "is erased for good and nothing it encrypted can be "
                                  "decrypted again",
                                  argv[optind]);
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_core_key_destroy(cli->core, argv[optind], &cli->who);
    if (rv != CKR_OK) return key_fail(cli, rv, argv[optind]);
    return key_report(cli, argv[optind], "destroyed: its material is erased");
}

/* ---- labels ---- */

static int label_change(struct hf_cli *cli, int argc, char **argv, bool set)
{
    struct hf_label l = {0};
    CK_RV rv;
    int rc;

    if ((rc = parse_plain(cli, argc, argv, 2)) != HF_CLI_CONTINUE) return rc;
    if (set)
        rc = label_parse(cli, argv[optind + 1], &l);
    else if (!(l.name = strdup(argv[optind + 1])))
        rc = HF_EXIT_FAILED;
    else if (!hf_label_name_is_valid(l.name))
        rc = hf_cli_usage_error(cli, "invalid label name '%s'", l.name);
    if (rc != HF_CLI_CONTINUE) goto done;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) goto done;
    rv = hf_core_key_label_set(cli->core, argv[optind], l.name, l.value, &cli->who);
    if (rv == CKR_ATTRIBUTE_VALUE_INVALID) {
        hf_cli_error("%s: label value refused (at most 1024 characters, no control characters)",
                     cli->command);
        rc = HF_EXIT_FAILED;
        goto done;
    }
    if (rv != CKR_OK) {
        rc = key_fail(cli, rv, argv[optind]);
        goto done;
    }
    rc = key_report(cli, argv[optind], set ? "labelled" : "unlabelled");
done:
    free(l.name);
    free(l.value);
    return rc;
}

static int cmd_label_set(struct hf_cli *cli, int argc, char **argv)
{
    return label_change(cli, argc, argv, true);
}

static int cmd_label_rm(struct hf_cli *cli, int argc, char **argv)
{
    return label_change(cli, argc, argv, false);
}

static const struct hf_cli_command label_commands[] = {
    {"set", cmd_label_set, "REF NAME=VALUE", "set a label (replacing its value)", NULL},
    {"rm", cmd_label_rm, "REF NAME", "remove a label", NULL},
};

static int cmd_label(struct hf_cli *cli, int argc, char **argv)
{
    return hf_cli_dispatch(cli, label_commands, sizeof(label_commands) / sizeof(label_commands[0]),
                           argc - 1, argv + 1);
}

/* REF is a key's name or UUID everywhere. */
static const struct hf_cli_command key_commands[] = {
    {"create", cmd_create,
     "NAME [--alg ALG] [--usage U,...] [--label K=V]... [--owner O] [--exportable] "
     "[--state pre-active] [--source local|pool:POOL]",
     "create a key (version 1)",
     "  --alg ALG        AES-128|AES-192|AES-256 (default), RSA-2048|RSA-3072|RSA-4096,\n"
     "                   EC-P256|EC-P384|EC-P521, Ed25519\n"
     "  --usage U,...    encrypt, decrypt, wrap, unwrap, sign, verify, derive (default: AES\n"
     "                   encrypt,decrypt,wrap,unwrap; RSA all but wrap; EC, Ed25519\n"
     "                   sign,verify)\n"
     "  --label K=V      a label; repeat for more\n"
     "  --owner O        owner (default: the caller, uid:<uid>)\n"
     "  --exportable     the material may be read through PKCS#11\n"
     "  --state S        pre-active (usable after `key activate`) or active (default)\n"
     "  --source S       local (default: wrapped in the store) or pool:POOL (generated\n"
     "                   inside a member of HSM pool POOL, never out of it: AES, RSA for\n"
     "                   decrypt and sign, EC or Ed25519 for sign)\n"},
    {"list", cmd_list, "", "list keys: NAME, ALG, STATE, VERSION, USAGE, UUID", NULL},
    {"show", cmd_show, "REF", "show a key with its versions, labels and links", NULL},
    {"rotate", cmd_rotate, "REF",
     "add a version; new encryptions use it, old ciphertexts still decrypt", NULL},
    {"activate", cmd_activate, "REF", "pre-active -> active", NULL},
    {"deactivate", cmd_deactivate, "REF",
     "stop new encryptions and signatures (decrypt, unwrap "
     "and verify still work)",
     NULL},
    {"compromise", cmd_compromise, "REF", "mark compromised (like deactivated, and recorded so)",
     NULL},
    {"destroy", cmd_destroy, "REF --yes", "erase the key's material for good (needs --yes)", NULL},
    {"label", cmd_label, "set REF K=V | rm REF K", "set or remove a label", NULL},
    {"version", hf_cmd_key_version, "deactivate|compromise|destroy REF VERSION",
     "change one version's state (see `key version --help`)", NULL},
};

int hf_cmd_key(struct hf_cli *cli, int argc, char **argv)
{
    return hf_cli_dispatch(cli, key_commands, sizeof(key_commands) / sizeof(key_commands[0]),
                           argc - 1, argv + 1);
}
