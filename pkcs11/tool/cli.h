/* `holdfast`, the admin CLI: what the command files share. The CLI talks to the core directly
 * (tool -> core): it opens the key store named by the config file, runs one command and exits
 * with one of the documented codes below.
 *
 * Each command is a handler taking its own argv (argv[0] is the command's name) and returning
 * an exit code; errors go to stderr through hf_cli_error / hf_cli_fail, results to stdout as an
 * aligned table for people or one compact JSON line (--json) for scripts. */
#ifndef HF_CLI_H
#define HF_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <json-c/json.h>

#include "pkcs11/core/core.h"

/* Exit codes: a contract with scripts, documented in pkcs11/tool/README.md and `holdfast help`. */
enum hf_cli_exit {
    HF_EXIT_OK = 0,
    HF_EXIT_FAILED = 1,    /* the operation was refused or failed (a CKR from the core) */
    HF_EXIT_USAGE = 2,     /* bad command line */
    HF_EXIT_NOT_FOUND = 3, /* no such key, version, link or file */
    HF_EXIT_NOT_INIT = 4,  /* the key store is not initialised: run `holdfast init` */
    HF_EXIT_AUDIT = 5,     /* the audit log cannot be written, or `audit verify` failed */
};

/* A handler's return value meaning "keep going" (never an exit code). */
#define HF_CLI_CONTINUE (-1)

struct hf_cli;

struct hf_cli_command {
    const char *name;
    int (*run)(struct hf_cli *cli, int argc, char **argv);
    const char *args;    /* synopsis after the name, e.g. "NAME [--alg ALG]" */
    const char *help;    /* one line */
    const char *details; /* more lines for `--help` (options, examples), or NULL */
};

/* One invocation's state. The config and the core are loaded on first use. */
struct hf_cli {
    const char *config_path; /* --config, or hf_config_default_path() */
    bool config_given;       /* --config was on the command line: a missing file is an error */
    bool json;
    char command[64]; /* "key create": names the command in messages */
    const struct hf_cli_command *current;
    struct hf_config cfg;
    bool cfg_loaded;
    struct hf_core *core;
    char caller[32]; /* "uid:<uid>" */
    struct hf_actor who;
};

/* main.c */
/* Runs the entry of table named by argv[0] (with a usage error for an unknown one), after
 * appending its name to cli->command. `prefix --help` lists the table. */
int hf_cli_dispatch(struct hf_cli *cli, const struct hf_cli_command *table, size_t n, int argc,
                    char **argv);
/* Loads the config once (exit code on failure, HF_CLI_CONTINUE on success). */
int hf_cli_config(struct hf_cli *cli);
/* No store file yet: init has not run (a server store is never "missing" here). */
bool hf_cli_store_is_missing(const struct hf_config *cfg);
/* Opens the key store once; HF_EXIT_NOT_INIT with the "run holdfast init" message when needed. */
int hf_cli_core(struct hf_cli *cli);

/* Options every command accepts; put HF_CLI_COMMON_OPTIONS last but one in a getopt table. */
#define HF_CLI_OPT_HELP 0x1001
#define HF_CLI_OPT_JSON 0x1002
#define HF_CLI_COMMON_OPTIONS                                                                      \
    {"help", no_argument, NULL, HF_CLI_OPT_HELP},                                                  \
    {                                                                                              \
        "json", no_argument, NULL, HF_CLI_OPT_JSON                                                 \
    }
/* getopt_long over a command's argv, silently (errors are reported by hf_cli_opt_other). */
int hf_cli_getopt(int argc, char **argv, const struct option *opts);
/* The default branch of a command's option switch: --help (prints the command's usage, exit 0),
 * --json, and unknown options or missing values (usage error). HF_CLI_CONTINUE to go on. */
int hf_cli_opt_other(struct hf_cli *cli, int c, char **argv);
/* Checks the positional argument count after options; a usage error when outside [min, max]. */
int hf_cli_args(struct hf_cli *cli, int argc, char **argv, int min, int max);
/* The whole parse of a command whose one option is --yes (the confirmation an irreversible
 * command insists on): common options, *yes, then hf_cli_args. HF_CLI_CONTINUE to go on; the
 * refusal without --yes is the command's own, as only it can say what would be lost. */
int hf_cli_args_yes(struct hf_cli *cli, int argc, char **argv, int min, int max, bool *yes);
/* The whole parse of a command with no options but the common ones. */
int hf_cli_args_plain(struct hf_cli *cli, int argc, char **argv, int min, int max);

/* output.c */
void hf_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "holdfast: <command>: <message>" and "Try 'holdfast <command> --help'.": HF_EXIT_USAGE. */
int hf_cli_usage_error(struct hf_cli *cli, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void hf_cli_usage_print(struct hf_cli *cli, FILE *out);
/* The exit code for a CKR. */
int hf_cli_exit_code(CK_RV rv);
/* A human reason: p11-kit's message, or Holdfast's for its vendor codes. */
const char *hf_cli_strerror(CK_RV rv);
/* Reports a failed core call on what (e.g. "key 'x'") and returns its exit code. Not found,
 * not initialised and audit failures get their own wording. */
int hf_cli_fail(struct hf_cli *cli, CK_RV rv, const char *what);

/* An aligned text table. Cells are copied. */
struct hf_table;
struct hf_table *hf_table_new(size_t ncols, const char *const *headers);
/* Appends a row of ncols cells (NULL prints as "-"). false on allocation failure. */
bool hf_table_add(struct hf_table *t, const char *const *cells);
void hf_table_print(const struct hf_table *t, FILE *out, const char *indent);
void hf_table_free(struct hf_table *t);

/* Prints obj as one compact line on stdout and drops the reference. */
int hf_cli_json_print(json_object *obj);
/* "2024-05-01T12:00:00Z" (UTC). */
void hf_time_format(int64_t t, char *out, size_t outlen);
/* "AES-256", "RSA-3072", "EC-P256". */
void hf_alg_format(enum hf_alg alg, unsigned bits, char *out, size_t outlen);
/* JSON views of the model (new references; NULL on allocation failure). */
json_object *hf_cli_key_json(const struct hf_key *key);
json_object *hf_cli_version_json(const struct hf_key_version *v);
json_object *hf_cli_link_json(const struct hf_link *link, const char *key_name);

/* Command handlers. */
int hf_cmd_init(struct hf_cli *cli, int argc, char **argv);
int hf_cmd_key(struct hf_cli *cli, int argc, char **argv);
/* cmd-key-version.c: `key version deactivate|compromise|destroy` */
int hf_cmd_key_version(struct hf_cli *cli, int argc, char **argv);
int hf_cmd_link(struct hf_cli *cli, int argc, char **argv);
/* cmd-link-type.c: `link types`, `link type add` */
int hf_cmd_link_types(struct hf_cli *cli, int argc, char **argv);
int hf_cmd_link_type(struct hf_cli *cli, int argc, char **argv);
int hf_cmd_audit(struct hf_cli *cli, int argc, char **argv);
int hf_cmd_encrypt(struct hf_cli *cli, int argc, char **argv);
int hf_cmd_decrypt(struct hf_cli *cli, int argc, char **argv);
int hf_cmd_store(struct hf_cli *cli, int argc, char **argv);
int hf_cmd_uuid(struct hf_cli *cli, int argc, char **argv);
int hf_cmd_token(struct hf_cli *cli, int argc, char **argv);
int hf_cmd_object(struct hf_cli *cli, int argc, char **argv);
/* cmd-root.c: `root status`; the members' table (with the cloning advice, for init) and their
 * JSON array (a new reference) */
int hf_cmd_root(struct hf_cli *cli, int argc, char **argv);
void hf_cli_root_print(struct hf_cli *cli, const struct hf_core_root_member *m, size_t n);
json_object *hf_cli_root_json(const struct hf_core_root_member *m, size_t n);
/* cmd-pool.c: `pool add|list|show|probe|remove` */
int hf_cmd_pool(struct hf_cli *cli, int argc, char **argv);

#endif
