/* Files that hold secrets (a PIN, a credential, a private key, a config file holding one): who may
 * read and write them. One implementation for the core (holdfast.conf, pin_file) and the gateway
 * (holdfastd.conf, pin_file, TLS keys, aws-xks credential_file). Header-only and libc-only on
 * purpose: the gateway and its plugins may not include pkcs11/core/ and link no library of the
 * core's, and the core may not include the gateway's (README.md, "pkcs11/common/").
 *
 * The rule: refused when world-readable, group- or world-writable, or owned by an unprivileged
 * user other than the one the process runs as (whoever owns it can chmod it open); a
 * group-readable one passes with a warning, for Debian's ssl-cert group and secret mounts that
 * share a group on purpose. */
#ifndef HF_COMMON_SECRET_FILE_H
#define HF_COMMON_SECRET_FILE_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

enum hf_secret_file_verdict {
    HF_SECRET_FILE_OK = 0,
    HF_SECRET_FILE_WARN,   /* usable; msg says why it is not ideal */
    HF_SECRET_FILE_REFUSE, /* not to be used; msg says which file, which mode, and the fix */
};

/* The verdict on a file with st's owner and mode for a process running as euid. msg (may be
 * NULL) gets "WHAT PATH: mode 0644: world-readable; chmod 600" style text ("PATH: ..." when what
 * is "", for callers that name the setting themselves). */
static inline enum hf_secret_file_verdict hf_secret_file_judge(const struct stat *st, uid_t euid,
                                                               const char *what, const char *path,
                                                               char *msg, size_t msglen)
{
    unsigned mode = (unsigned)(st->st_mode & 07777);
    const char *why = NULL, *sep = what[0] ? " " : "";

    if (msg && msglen) msg[0] = '\0';
    if (st->st_mode & S_IROTH)
        why = "world-readable";
    else if (st->st_mode & S_IWOTH)
        why = "world-writable";
    else if (st->st_mode & S_IWGRP)
        why = "group-writable";
    if (why) {
        if (msg)
            snprintf(msg, msglen, "%s%s%s: mode %04o: %s; chmod 600", what, sep, path, mode, why);
        return HF_SECRET_FILE_REFUSE;
    }
    if (st->st_uid != 0 && st->st_uid != euid) {
        if (msg)
            snprintf(msg, msglen,
                     "%s%s%s: owned by uid %lu, neither root nor this process's uid %lu; chown it",
                     what, sep, path, (unsigned long)st->st_uid, (unsigned long)euid);
        return HF_SECRET_FILE_REFUSE;
    }
    if (st->st_mode & S_IRGRP) {
        if (msg)
            snprintf(msg, msglen,
                     "%s%s%s: mode %04o: group-readable (gid %lu); chmod 600 unless that group "
                     "(ssl-cert, a secret mount's) is meant to read it",
                     what, sep, path, mode, (unsigned long)st->st_gid);
        return HF_SECRET_FILE_WARN;
    }
    return HF_SECRET_FILE_OK;
}

/* The verdict on an open file (fstat: the file actually read, no race with a rename). */
static inline enum hf_secret_file_verdict
hf_secret_file_check_fd(int fd, const char *what, const char *path, char *msg, size_t msglen)
{
    struct stat st;

    if (fstat(fd, &st) != 0) {
        if (msg) snprintf(msg, msglen, "%s %s: %s", what, path, strerror(errno));
        return HF_SECRET_FILE_REFUSE;
    }
    return hf_secret_file_judge(&st, geteuid(), what, path, msg, msglen);
}

/* The same by path, for files another library opens (GnuTLS reads TLS keys by name). */
static inline enum hf_secret_file_verdict
hf_secret_file_check_path(const char *path, const char *what, char *msg, size_t msglen)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        if (msg) snprintf(msg, msglen, "%s %s: %s", what, path, strerror(errno));
        return HF_SECRET_FILE_REFUSE;
    }
    return hf_secret_file_judge(&st, geteuid(), what, path, msg, msglen);
}

/* How each program reports a warning (its own log). */
typedef void (*hf_secret_file_warn_fn)(const char *msg);

/* hf_secret_file_check_fd as the callers want it: false with the refusal in err, or true after a
 * warning went to warn. */
static inline bool hf_secret_file_is_usable(int fd, const char *what, const char *path,
                                            hf_secret_file_warn_fn warn, char *err, size_t errlen)
{
    char msg[512];

    switch (hf_secret_file_check_fd(fd, what, path, msg, sizeof(msg))) {
    case HF_SECRET_FILE_OK:
        return true;
    case HF_SECRET_FILE_WARN:
        if (warn) warn(msg);
        return true;
    default:
        if (err && errlen) snprintf(err, errlen, "%s", msg);
        return false;
    }
}

#endif /* HF_COMMON_SECRET_FILE_H */
