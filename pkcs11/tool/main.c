#include "hf-build.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "pkcs11/common/no-dump.h"
#include "pkcs11/tool/cli.h"

static int cmd_help(struct hf_cli *cli, int argc, char **argv);

static const struct hf_cli_command commands[] = {
    {"init", hf_cmd_init,
     "[--so-pin-file F] [--user-pin-file F] [--gateway-pin-file F] [--ask-pins] [--reset-pins]",
     "create the HSM token, root KEK, audit keys, key store and token PINs (safe to run twice)",
     "  --so-pin-file FILE       the token's SO PIN: the file's first line ($HOLDFAST_SO_PIN)\n"
     "  --user-pin-file FILE     the token's user PIN: the file's first line ($HOLDFAST_USER_PIN)\n"
     "  --gateway-pin-file FILE  the gateway's PIN ($HOLDFAST_GATEWAY_PIN): a user login with it\n"
     "                 may attach request contexts to audit records (holdfastd logs in with it)\n"
     "  --ask-pins    type the SO and user PINs on the terminal (echo off, twice)\n"
     "A PIN is never taken from the command line (ps and shell history show it).\n"
     "  --reset-pins  set every PIN anew, even if set: as given, or generated\n"
     "A PIN given nowhere is kept if set, else generated and written (0600) to\n"
     "STATE_DIR/token-so.pin, token-user.pin or token-gateway.pin. PINs are never printed.\n"},
    {"key", hf_cmd_key,
     "create|list|show|rotate|activate|deactivate|compromise|destroy|label|version ...",
     "manage keys, their versions, states and labels", NULL},
    {"link", hf_cmd_link, "add|block|unblock|list|types|type ...",
     "map cloud identities to keys; block a link to cut its access (the HYOK kill switch)", NULL},
    {"audit", hf_cmd_audit, "verify [--file PATH]", "check the audit log's hash chains", NULL},
    {"encrypt", hf_cmd_encrypt, "--key REF [--in FILE|-] [--out FILE|-]",
     "encrypt with an AES key's current version into a self-describing base64 envelope",
     "The envelope is base64 of: \"HF1\", the key UUID (16 bytes), the version (uint32 BE),\n"
     "a 12-byte IV, the AES-256-GCM ciphertext and its 16-byte tag; everything before the\n"
     "ciphertext is authenticated, so a blob cannot move to another key or version.\n"},
    {"decrypt", hf_cmd_decrypt, "[--in FILE|-] [--out FILE|-]",
     "decrypt an envelope with the key version it names",
     "Deactivated and compromised keys still decrypt; destroyed keys do not.\n"},
    {"store", hf_cmd_store, "check|adopt|migrate ...",
     "check the key store holds only whole keys; move an SQLite store to PostgreSQL", NULL},
    {"token", hf_cmd_token, "status|unlock [--so]",
     "the token's PIN attempt counters; unlock a PIN locked by wrong PINs", NULL},
    {"root", hf_cmd_root, "status",
     "the root KEK's members: [hsm] and its clones ([hsm.NAME]), their keys and health", NULL},
    {"pool", hf_cmd_pool, "add|list|show|probe|remove ...",
     "HSM pools: backend tokens (module, token, PIN source) kept in the key store", NULL},
    {"object", hf_cmd_object, "list|delete ...",
     "the certificate and data objects PKCS#11 software keeps on the token", NULL},
    {"uuid", hf_cmd_uuid, "",
     "print a fresh random UUID (an OCI vault's or a SAP keystore's id, for holdfastd.conf)", NULL},
    {"help", cmd_help, "[COMMAND...]", "show this help, or a command's", NULL},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char exit_codes_help[] =
    "Exit codes:\n"
    "  0  success\n"
    "  1  the operation was refused or failed (the reason is printed)\n"
    "  2  usage error\n"
    "  3  not found (key, version, link or file)\n"
    "  4  the key store is not initialised: run `holdfast init`\n"
    "  5  the audit log cannot be written, or `audit verify` found a broken chain\n";

static void global_usage(FILE *out)
{
    fprintf(out,
            "Usage: holdfast [--config FILE] [--json] COMMAND [ARGS]\n\n"
            "Options:\n"
            "  --config FILE  configuration file (default: %s; when it does not exist,\n"
            "                 built-in defaults under $HOLDFAST_STATE_DIR)\n"
            "  --json         one compact JSON line on stdout instead of tables\n"
            "  --help         this help\n\n"
            "Commands:\n",
            HF_SYSCONFDIR "/holdfast/holdfast.conf");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-8s  %s\n", commands[i].name, commands[i].help);
    fprintf(out, "\nRun 'holdfast COMMAND --help' for a command's options.\n\n%s", exit_codes_help);
}

static void table_usage(struct hf_cli *cli, const struct hf_cli_command *table, size_t n, FILE *out)
{
    fprintf(out, "Usage: holdfast %s SUBCOMMAND ...\n\nSubcommands:\n", cli->command);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "  %s%s%s\n      %s\n", table[i].name, table[i].args[0] ? " " : "",
                table[i].args, table[i].help);
}

static bool is_help_word(const char *s)
{
    return strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0;
}

int hf_cli_dispatch(struct hf_cli *cli, const struct hf_cli_command *table, size_t n, int argc,
                    char **argv)
{
    size_t len = strlen(cli->command);

    if (argc < 1) {
        table_usage(cli, table, n, stderr);
        return HF_EXIT_USAGE;
    }
    if (is_help_word(argv[0])) {
        if (cli->command[0] == '\0')
            global_usage(stdout);
        else
            table_usage(cli, table, n, stdout);
        return HF_EXIT_OK;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(argv[0], table[i].name) != 0) continue;
        snprintf(cli->command + len, sizeof(cli->command) - len, "%s%s", len ? " " : "",
                 table[i].name);
        cli->current = &table[i];
        optind = 0; /* glibc: full getopt re-initialisation for the handler's own argv */
        return table[i].run(cli, argc, argv);
    }
    if (len == 0)
        hf_cli_error("unknown command '%s'; run 'holdfast help'", argv[0]);
    else
        hf_cli_error("%s: unknown subcommand '%s'; run 'holdfast %s --help'", cli->command, argv[0],
                     cli->command);
    return HF_EXIT_USAGE;
}

/* `holdfast help key create` is `holdfast key create --help`. */
static int cmd_help(struct hf_cli *cli, int argc, char **argv)
{
    char *sub[8];
    int n = argc - 1;

    if (n <= 0) {
        global_usage(stdout);
        return HF_EXIT_OK;
    }
    if (n > (int)(sizeof(sub) / sizeof(sub[0])) - 1)
        return hf_cli_usage_error(cli, "too many words");
    memcpy(sub, argv + 1, (size_t)n * sizeof(char *));
    sub[n] = "--help";
    cli->command[0] = '\0';
    return hf_cli_dispatch(cli, commands, N_COMMANDS, n + 1, sub);
}

int hf_cli_getopt(int argc, char **argv, const struct option *opts)
{
    opterr = 0;
    /* Leading ':' makes a missing value ':' rather than '?'; options may follow operands. */
    return getopt_long(argc, argv, ":", opts, NULL);
}

int hf_cli_opt_other(struct hf_cli *cli, int c, char **argv)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "?";

    switch (c) {
    case HF_CLI_OPT_HELP:
        hf_cli_usage_print(cli, stdout);
        return HF_EXIT_OK;
    case HF_CLI_OPT_JSON:
        cli->json = true;
        return HF_CLI_CONTINUE;
    case ':':
        return hf_cli_usage_error(cli, "option '%s' needs a value", arg);
    default:
        return hf_cli_usage_error(cli, "unknown option '%s'", arg);
    }
}

int hf_cli_args(struct hf_cli *cli, int argc, char **argv, int min, int max)
{
    int n = argc - optind;

    if (n < min) return hf_cli_usage_error(cli, "missing argument");
    if (n > max) return hf_cli_usage_error(cli, "unexpected argument '%s'", argv[optind + max]);
    return HF_CLI_CONTINUE;
}

int hf_cli_args_yes(struct hf_cli *cli, int argc, char **argv, int min, int max, bool *yes)
{
    static const struct option opts[] = {
        {"yes", no_argument, NULL, 'y'},
        HF_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int c, rc;

    *yes = false;
    while ((c = hf_cli_getopt(argc, argv, opts)) != -1) {
        if (c == 'y')
            *yes = true;
        else if ((rc = hf_cli_opt_other(cli, c, argv)) != HF_CLI_CONTINUE)
            return rc;
    }
    return hf_cli_args(cli, argc, argv, min, max);
}

int hf_cli_args_plain(struct hf_cli *cli, int argc, char **argv, int min, int max)
{
    static const struct option opts[] = {HF_CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int c, rc;

    while ((c = hf_cli_getopt(argc, argv, opts)) != -1)
        if ((rc = hf_cli_opt_other(cli, c, argv)) != HF_CLI_CONTINUE) return rc;
    return hf_cli_args(cli, argc, argv, min, max);
}

int hf_cli_config(struct hf_cli *cli)
{
    char err[256] = "";
    CK_RV rv;

    if (cli->cfg_loaded) return HF_CLI_CONTINUE;
    if (!cli->config_given) {
        rv = hf_config_load_default(&cli->cfg, err, sizeof(err));
    } else if (access(cli->config_path, F_OK) != 0 && errno == ENOENT) {
        hf_cli_error("config file '%s' not found", cli->config_path);
        return HF_EXIT_NOT_FOUND;
    } else {
        rv = hf_config_load(cli->config_path, &cli->cfg, err, sizeof(err));
    }
    if (rv != CKR_OK) {
        hf_cli_error("config %s: %s", cli->config_path, err[0] ? err : hf_cli_strerror(rv));
        return rv == CKR_HOST_MEMORY ? HF_EXIT_FAILED : HF_EXIT_USAGE;
    }
    cli->cfg_loaded = true;
    return HF_CLI_CONTINUE;
}

bool hf_cli_store_is_missing(const struct hf_config *cfg)
{
    const char *file = hf_store_locator_file(cfg->store_path);

    if (!file) return false; /* a server: only opening tells */
    return access(file, F_OK) != 0 && errno == ENOENT;
}

int hf_cli_core(struct hf_cli *cli)
{
    int rc;
    CK_RV rv;

    if (cli->core) return HF_CLI_CONTINUE;
    if ((rc = hf_cli_config(cli)) != HF_CLI_CONTINUE) return rc;
    /* Checked here too so the common case gets one clear line, not also the core's log line. */
    rv = hf_cli_store_is_missing(&cli->cfg) ? CKR_TOKEN_NOT_RECOGNIZED
                                            : hf_core_open(&cli->cfg, &cli->core);
    if (rv == CKR_OK) return HF_CLI_CONTINUE;
    cli->core = NULL;
    if (rv == CKR_TOKEN_NOT_RECOGNIZED) {
        hf_cli_error("no key store in %s: run `holdfast init` first", cli->cfg.state_dir);
        return HF_EXIT_NOT_INIT;
    }
    return hf_cli_fail(cli, rv, "opening the key store");
}

enum { OPT_CONFIG = 0x2001, OPT_VERSION };

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, OPT_CONFIG},
        {"json", no_argument, NULL, HF_CLI_OPT_JSON},
        {"help", no_argument, NULL, HF_CLI_OPT_HELP},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    struct hf_cli cli = {0};
    char err[256];
    int c, rc = HF_EXIT_OK;

    /* Before anything secret is read (PINs, the config, unwrapped keys). */
    if (!hf_process_no_dump(err, sizeof(err))) {
        fprintf(stderr, "holdfast: %s\n", err);
        return HF_EXIT_FAILED;
    }
    /* OpenSSL's secure heap (locked, not dumped, cleansed on free) for the private parts of the
     * keys the CLI loads (BN_secure_new): a command touches a few keys (RSA-4096: 1792 bytes
     * each), and ordinary users may lock little (RLIMIT_MEMLOCK); unlocked it still serves. */
    if (hf_secure_heap_is_wanted() && CRYPTO_secure_malloc_init(1u << 20, 16) == 0) {
        fprintf(stderr, "holdfast: cannot make OpenSSL's secure heap\n");
        return HF_EXIT_FAILED;
    }
    /* A network HSM's client module (p11-kit-client.so) writes to its socket: once the server
     * is gone, SIGPIPE would kill `holdfast pool probe` instead of letting it report the member
     * failed (tests/shim/README.md). */
    signal(SIGPIPE, SIG_IGN);
    snprintf(cli.caller, sizeof(cli.caller), "uid:%lu", (unsigned long)getuid());
    cli.who.api = "cli";
    cli.who.caller = cli.caller;
    cli.config_path = hf_config_default_path();
    opterr = 0;
    /* '+': global options end at the command word; the command parses the rest. */
    while ((c = getopt_long(argc, argv, "+:", opts, NULL)) != -1) {
        switch (c) {
        case OPT_CONFIG:
            cli.config_path = optarg;
            cli.config_given = true;
            break;
        case HF_CLI_OPT_JSON:
            cli.json = true;
            break;
        case HF_CLI_OPT_HELP:
            global_usage(stdout);
            return HF_EXIT_OK;
        case OPT_VERSION:
            printf("holdfast %s\n", PACKAGE_VERSION);
            return HF_EXIT_OK;
        default:
            hf_cli_error("%s '%s'; run 'holdfast help'",
                         c == ':' ? "missing value for option" : "unknown option",
                         argv[optind - 1]);
            return HF_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        global_usage(stderr);
        return HF_EXIT_USAGE;
    }
    rc = hf_cli_dispatch(&cli, commands, N_COMMANDS, argc - optind, argv + optind);
    hf_core_close(cli.core);
    if (cli.cfg_loaded) hf_config_free(&cli.cfg);
    return rc;
}
