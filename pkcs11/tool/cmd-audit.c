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
            json_object_object_add(o, "reason",
                                   r->reason[0] ? json_object_new_string(r->reason) : NULL);
        }
        hf_cli_json_print(o);
    } else if (rv == CKR_OK) {
        printf("audit log %s: ok, %llu records in %llu streams\n", path,
               (unsigned long long)r->records, (unsigned long long)r->streams);
        /* A torn last line is what a killed writer leaves: worth saying, not a failure. */
        if (r->reason[0]) printf("note: %s\n", r->reason);
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

static int cmd_verify(struct hf_cli *cli, int argc, char **argv)
{
    static const struct option opts[] = {
        {"file", required_argument, NULL, 'f'},
        HF_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct hf_audit_verify_result result = {0};
    const char *path = NULL;
    struct stat st;
    int c, rc;

    while ((c = hf_cli_getopt(argc, argv, opts)) != -1) {
        if (c == 'f')
            path = optarg;
        else if ((rc = hf_cli_opt_other(cli, c, argv)) != HF_CLI_CONTINUE)
            return rc;
    }
    if ((rc = hf_cli_args(cli, argc, argv, 0, 0)) != HF_CLI_CONTINUE) return rc;
    /* Only the file is read: verifying must not open the store, which would append a stream. */
    if (!path) {
        if ((rc = hf_cli_config(cli)) != HF_CLI_CONTINUE) return rc;
        path = cli->cfg.audit_path;
    }
    if (stat(path, &st) != 0) {
        int err = errno;

        if (err == ENOENT)
            hf_cli_error("audit log '%s' not found", path);
        else
            hf_cli_error("audit log '%s': %s", path, strerror(err));
        return err == ENOENT ? HF_EXIT_NOT_FOUND : HF_EXIT_AUDIT;
    }
    return verify_report(cli, path, hf_audit_verify(path, &result), &result);
}

static const struct hf_cli_command audit_commands[] = {
    {"verify", cmd_verify, "[--file PATH]",
     "replay every stream's hash chain; print the counts, or the first bad line and why",
     "  --file PATH  the log to check (default: [audit] path of the config)\n"
     "Exit 0 when every chain holds, 5 when a record was removed, altered or reordered.\n"},
};

int hf_cmd_audit(struct hf_cli *cli, int argc, char **argv)
{
    return hf_cli_dispatch(cli, audit_commands, sizeof(audit_commands) / sizeof(audit_commands[0]),
                           argc - 1, argv + 1);
}
