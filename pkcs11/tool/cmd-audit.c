#include "hf-build.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "pkcs11/tool/cli.h"

static int verify_report(struct hf_cli *cli, const char *path, CK_RV rv,
                         const struct hf_audit_verify_result *r)
{
    json_object *o;

    if (cli->json) {
        if ((o = json_object_new_object())) {
            json_object_object_add(o, "path", json_object_new_string(path));
            json_object_object_add(o, "ok", json_object_new_boolean(rv == CKR_OK));
            json_object_object_add(o, "records", json_object_new_int64((int64_t)r->records));
            json_object_object_add(o, "streams", json_object_new_int64((int64_t)r->streams));
            json_object_object_add(o, "bad_line", json_object_new_int64((int64_t)r->bad_line));
            json_object_object_add(o, "checkpoints",
                                   json_object_new_int64((int64_t)r->checkpoints));
            json_object_object_add(o, "unanchored", json_object_new_int64((int64_t)r->unanchored));
            json_object_object_add(o, "legacy", json_object_new_int64((int64_t)r->legacy));
            json_object_object_add(o, "torn_line", json_object_new_int64((int64_t)r->torn_line));
            json_object_object_add(o, "reason",
                                   r->reason[0] ? json_object_new_string(r->reason) : NULL);
        }
        hf_cli_json_print(o);
    } else if (rv == CKR_OK) {
        printf("audit log %s: ok, %llu records in %llu streams, %llu checkpoints\n", path,
               (unsigned long long)r->records, (unsigned long long)r->streams,
               (unsigned long long)r->checkpoints);
        /* Allowed (--allow-torn-tail): what a killed writer leaves, worth saying. */
        if (r->reason[0]) printf("note: %s\n", r->reason);
        if (r->legacy)
            printf("warning: %llu legacy records (unkeyed SHA-256 chain, written before the keyed "
                   "chain): unanchored, anybody could have rewritten them\n",
                   (unsigned long long)r->legacy);
        if (r->unanchored)
            printf("warning: %llu records after the last checkpoint are unanchored: their removal "
                   "would not show\n",
                   (unsigned long long)r->unanchored);
    }
    if (rv == CKR_OK) return HF_EXIT_OK;
    if (r->bad_line)
        hf_cli_error("audit log %s: verification failed at line %llu: %s", path,
                     (unsigned long long)r->bad_line, r->reason[0] ? r->reason : "broken chain");
    else
        hf_cli_error("audit log %s: verification failed: %s", path,
                     r->reason[0] ? r->reason : hf_cli_strerror(rv));
    return HF_EXIT_AUDIT;
}

/* At most this many --file options in one run (a cluster's nodes). */
#define VERIFY_FILES_MAX 64

/* One log to verify: "[NODE=]PATH", NODE the writer's node name (default: the config's), whose
 * checkpoint in the shared store anchors the log. A path holding '=' is named with "./" or an
 * absolute path, whose part before '=' has a '/'. */
struct verify_file {
    const char *path;
    char node[128];
    bool has_node;
};

static bool verify_file_parse(const char *arg, struct verify_file *f)
{
    const char *eq = strchr(arg, '=');
    size_t n;

    memset(f, 0, sizeof(*f));
    if (!eq || memchr(arg, '/', (size_t)(eq - arg))) {
        f->path = arg;
        return *arg != '\0';
    }
    n = (size_t)(eq - arg);
    if (n == 0 || n >= sizeof(f->node) || eq[1] == '\0') return false;
    memcpy(f->node, arg, n);
    f->has_node = true;
    f->path = eq + 1;
    return true;
}

static int verify_one(struct hf_cli *cli, const struct verify_file *f, bool allow_torn,
                      bool strict)
{
    struct hf_audit_verify_result result = {0};
    struct hf_config cfg = cli->cfg; /* shallow: only node differs, and it is never freed */
    struct stat st;
    CK_RV rv;

    if (f->has_node) cfg.node = (char *)f->node;
    if (stat(f->path, &st) != 0) {
        int err = errno;

        if (err == ENOENT)
            hf_cli_error("audit log '%s' not found", f->path);
        else
            hf_cli_error("audit log '%s': %s", f->path, strerror(err));
        return err == ENOENT ? HF_EXIT_NOT_FOUND : HF_EXIT_AUDIT;
    }
    rv = hf_core_audit_verify(&cfg, f->path, allow_torn, strict, &result);
    /* The token or the store could not be opened: nothing was verified, say why as any command
     * does (not initialised: exit 4). */
    if (rv != CKR_OK && rv != CKR_FUNCTION_FAILED && !result.reason[0])
        return hf_cli_fail(cli, rv, "opening the token and the store");
    return verify_report(cli, f->path, rv, &result);
}

static int cmd_verify(struct hf_cli *cli, int argc, char **argv)
{
    static const struct option opts[] = {
        {"file", required_argument, NULL, 'f'},
        {"allow-torn-tail", no_argument, NULL, 'T'},
        {"strict", no_argument, NULL, 'S'},
        HF_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct verify_file files[VERIFY_FILES_MAX];
    size_t nfiles = 0;
    bool allow_torn = false, strict = false;
    int c, rc, worst = HF_EXIT_OK;

    while ((c = hf_cli_getopt(argc, argv, opts)) != -1) {
        if (c == 'f') {
            if (nfiles == VERIFY_FILES_MAX)
                return hf_cli_usage_error(cli, "at most %d --file options", VERIFY_FILES_MAX);
            if (!verify_file_parse(optarg, &files[nfiles++]))
                return hf_cli_usage_error(cli, "--file '%s': expected PATH or NODE=PATH", optarg);
        } else if (c == 'T') {
            allow_torn = true;
        } else if (c == 'S') {
            strict = true;
        } else if ((rc = hf_cli_opt_other(cli, c, argv)) != HF_CLI_CONTINUE) {
            return rc;
        }
    }
    if ((rc = hf_cli_args(cli, argc, argv, 0, 0)) != HF_CLI_CONTINUE) return rc;
    /* The token (the chain's keys) and the store (the latest checkpoint) are opened, but not the
     * core, whose audit log would append a stream to what is being verified. */
    if ((rc = hf_cli_config(cli)) != HF_CLI_CONTINUE) return rc;
    if (nfiles == 0) files[nfiles++] = (struct verify_file){.path = cli->cfg.audit_path};
    /* Every log is reported, a failing one does not hide the next; the exit is the first
     * failure's. */
    for (size_t i = 0; i < nfiles; i++) {
        rc = verify_one(cli, &files[i], allow_torn, strict);
        if (worst == HF_EXIT_OK) worst = rc;
    }
    return worst;
}

static const struct hf_cli_command audit_commands[] = {
    {"verify", cmd_verify, "[--file [NODE=]PATH]... [--allow-torn-tail] [--strict]",
     "replay every stream's keyed chain and the signed checkpoints, with the token; print the "
     "counts, or the first bad line and why",
     "  --file [NODE=]PATH a log to check (default: [audit] path of the config), written\n"
     "                     by cluster node NODE (default: [holdfast] node), whose checkpoint\n"
     "                     in the shared store anchors it; repeat it for each node's log:\n"
     "                     each is reported, the exit is the first failure's\n"
     "  --allow-torn-tail  accept a torn record (a writer killed mid-write) with a note\n"
     "  --strict           fail on records after the last checkpoint (unanchored)\n"
     "Exit 0 when every chain holds, 5 when a record was removed, altered, reordered or forged,\n"
     "a record a checkpoint names is missing, the log lacks the checkpoint the store records\n"
     "(emptied, shortened or replaced), or a record is torn. Legacy (unkeyed) records written\n"
     "before the keyed chain, and records after the last checkpoint, are warned about.\n"},
};

int hf_cmd_audit(struct hf_cli *cli, int argc, char **argv)
{
    return hf_cli_dispatch(cli, audit_commands, sizeof(audit_commands) / sizeof(audit_commands[0]),
                           argc - 1, argv + 1);
}
