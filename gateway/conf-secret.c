/* plugin.h's hf_conf_secret_file: a secret file (a credential list, a token signing key) read
 * under the rule holdfastd applies to its own (pkcs11/common/secret-file.h, judged on the open
 * descriptor, so a rename between check and read changes nothing) into OpenSSL's secure heap,
 * which holdfastd makes at start (locked, not in core dumps; ordinary memory without it). */
#include "hf-build.h"

#include "gateway/log.h"
#include "gateway/plugin.h"

#include "pkcs11/common/secret-file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#define SECRET_FILE_DEFAULT_MAX (64 * 1024)

static void secret_file_warn(const char *msg)
{
    hf_gw_log_warn("secret file %s", msg);
}

/* Exactly want bytes of fd into buf; false on a short file or an error. */
static bool read_all(int fd, char *buf, size_t want)
{
    size_t got = 0;

    while (got < want) {
        ssize_t n = read(fd, buf + got, want - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        got += (size_t)n;
    }
    return true;
}

/* Whether fd is at its end: a file that grew since fstat is not the one judged. */
static bool at_end(int fd)
{
    char extra;
    ssize_t n;

    while ((n = read(fd, &extra, 1)) < 0 && errno == EINTR) {
    }
    OPENSSL_cleanse(&extra, sizeof(extra));
    return n == 0;
}

HF_PLUGIN_EXPORT bool hf_conf_secret_file(const char *path, size_t max_len, char **data,
                                          size_t *len, char *err, size_t errlen)
{
    struct stat st;
    char *buf = NULL;
    size_t size = 0;
    bool ok = false;
    int fd = -1;

    if (path == NULL || data == NULL || len == NULL || err == NULL || errlen == 0) return false;
    *data = NULL;
    *len = 0;
    if (max_len == 0) max_len = SECRET_FILE_DEFAULT_MAX;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        goto done;
    }
    if (!hf_secret_file_is_usable(fd, "", path, secret_file_warn, err, errlen)) goto done;
    if ((uint64_t)st.st_size > max_len) {
        snprintf(err, errlen, "%s: %llu bytes, over the %zu this setting takes", path,
                 (unsigned long long)st.st_size, max_len);
        goto done;
    }
    size = (size_t)st.st_size;
    if ((buf = OPENSSL_secure_zalloc(size + 1)) == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    if (!read_all(fd, buf, size) || !at_end(fd)) {
        snprintf(err, errlen, "%s: changed or failed while being read", path);
        goto done;
    }
    *data = buf;
    *len = size;
    buf = NULL;
    ok = true;
done:
    if (buf) OPENSSL_secure_clear_free(buf, size + 1);
    if (fd >= 0) close(fd);
    return ok;
}

HF_PLUGIN_EXPORT void hf_secret_free(char *data, size_t len)
{
    if (data) OPENSSL_secure_clear_free(data, len + 1);
}
