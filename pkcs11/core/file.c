#include "hf-build.h"

#include "file.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

CK_RV hf_dir_make(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    struct stat st;

    if (path == NULL) return CKR_ARGUMENTS_BAD;
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) return CKR_ARGUMENTS_BAD;
    for (char *p = buf + 1; *p != '\0'; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) goto fail;
        *p = '/';
    }
    if (mkdir(buf, mode) != 0 && errno != EEXIST) goto fail;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) goto fail;
    return CKR_OK;
fail:
    hf_log_error("cannot create directory %s: %s", buf, strerror(errno));
    return CKR_DEVICE_ERROR;
}

void hf_dir_sync(const char *path)
{
    char dir[PATH_MAX];
    char *slash;
    int fd;

    snprintf(dir, sizeof(dir), "%s", path);
    slash = strrchr(dir, '/');
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    fsync(fd);
    close(fd);
}

/* Writes data to a fresh temporary file beside path (its name unique per process, so concurrent
 * writers never share one), synced. */
static CK_RV temp_write(const char *path, const void *data, size_t len, char tmp[PATH_MAX])
{
    int fd;
    bool ok;

    if (snprintf(tmp, PATH_MAX, "%s.tmp.%ld", path, (long)getpid()) >= PATH_MAX)
        return CKR_ARGUMENTS_BAD;
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return CKR_DEVICE_ERROR;
    ok = write(fd, data, len) == (ssize_t)len && fsync(fd) == 0;
    if (close(fd) != 0) ok = false;
    if (!ok) {
        unlink(tmp);
        return CKR_DEVICE_ERROR;
    }
    return CKR_OK;
}

CK_RV hf_file_install(const char *path, const void *data, size_t len)
{
    char tmp[PATH_MAX];
    CK_RV rv;

    if (path == NULL || (data == NULL && len > 0)) return CKR_ARGUMENTS_BAD;
    rv = temp_write(path, data, len, tmp);
    /* link() never replaces: a file another process installed first wins. */
    if (rv == CKR_OK && link(tmp, path) != 0 && errno != EEXIST) rv = CKR_DEVICE_ERROR;
    if (rv == CKR_OK)
        hf_dir_sync(path);
    else
        hf_log_error("cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
    return rv;
}

CK_RV hf_file_replace(const char *path, const void *data, size_t len)
{
    char tmp[PATH_MAX];
    CK_RV rv;

    if (path == NULL || (data == NULL && len > 0)) return CKR_ARGUMENTS_BAD;
    rv = temp_write(path, data, len, tmp);
    if (rv == CKR_OK && rename(tmp, path) != 0) rv = CKR_DEVICE_ERROR;
    if (rv == CKR_OK) {
        hf_dir_sync(path);
        return CKR_OK;
    }
    hf_log_error("cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
    return rv;
}

CK_RV hf_file_read(const char *path, size_t max, unsigned char **data, size_t *len)
{
    struct stat st;
    unsigned char *buf = NULL;
    ssize_t n;
    int fd;

    if (path == NULL || data == NULL || len == NULL) return CKR_ARGUMENTS_BAD;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? CKR_KEY_HANDLE_INVALID : CKR_DEVICE_ERROR;
    if (fstat(fd, &st) != 0 || st.st_size < 0 || (size_t)st.st_size > max) goto fail;
    buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL) goto fail;
    n = read(fd, buf, (size_t)st.st_size);
    if (n != st.st_size) goto fail;
    close(fd);
    *data = buf;
    *len = (size_t)n;
    return CKR_OK;
fail:
    free(buf);
    close(fd);
    return CKR_DEVICE_ERROR;
}

CK_RV hf_lockfile_open(const char *path, int *fd)
{
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    /* Another user's lock file, or a read-only state dir: flock needs no write access. */
    if (*fd < 0 && (errno == EACCES || errno == EROFS))
        *fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (*fd >= 0) return CKR_OK;
    hf_log_error("cannot open the lock file %s: %s", path, strerror(errno));
    return CKR_FUNCTION_FAILED;
}

CK_RV hf_lockfile_lock(int fd, int op)
{
    while (flock(fd, op) != 0) {
        if (errno != EINTR) {
            hf_log_error("cannot lock a lock file: %s", strerror(errno));
            return CKR_FUNCTION_FAILED;
        }
    }
    return CKR_OK;
}

CK_RV hf_lockfile_take(const char *path, int op, int *fd)
{
    *fd = -1;
    if (path == NULL) return CKR_OK;
    if (hf_lockfile_open(path, fd) != CKR_OK) return CKR_FUNCTION_FAILED;
    if (hf_lockfile_lock(*fd, op) == CKR_OK) return CKR_OK;
    close(*fd);
    *fd = -1;
    return CKR_FUNCTION_FAILED;
}

void hf_lockfile_drop(int fd)
{
    if (fd < 0) return;
    flock(fd, LOCK_UN); /* before close(): a forked child may share the description */
    close(fd);
}
