#include "hf-build.h"

#include "softhsm-backup.h"

#include <dirent.h>
#include <ini.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "file.h"
#include "log.h"

#define TOKEN_FILE "token.object"
#define BACKUP_SUFFIX ".holdfast-backup"
#define TOKEN_FILE_MAX (1024 * 1024)

/* softhsm2.conf is "key = value" lines without sections, which libinih reads as section "". */
static int tokendir_handler(void *arg, const char *section, const char *name, const char *value)
{
    char *dir = arg;

    if (section[0] == '\0' && strcmp(name, "directories.tokendir") == 0)
        snprintf(dir, PATH_MAX, "%s", value);
    return 1;
}

static CK_RV tokendir_of(const char *softhsm2_conf, char dir[PATH_MAX])
{
    dir[0] = '\0';
    if (softhsm2_conf == NULL) return CKR_ARGUMENTS_BAD;
    if (ini_parse(softhsm2_conf, tokendir_handler, dir) != 0 || dir[0] == '\0') {
        hf_log_error("%s: no directories.tokendir", softhsm2_conf);
        return CKR_DEVICE_ERROR;
    }
    return CKR_OK;
}

typedef CK_RV (*token_fn)(const char *token_file, const char *backup_file);

/* Calls fn for each token directory's token.object under the HSM lock held exclusively. */
static CK_RV tokens_each(const char *softhsm2_conf, const char *lock_path, token_fn fn)
{
    char dir[PATH_MAX], file[PATH_MAX], backup[PATH_MAX + 32];
    struct dirent *e;
    DIR *d = NULL;
    int lock = -1;
    CK_RV rv = tokendir_of(softhsm2_conf, dir);

    if (rv == CKR_OK) rv = hf_lockfile_take(lock_path, LOCK_EX, &lock);
    if (rv != CKR_OK) return rv;
    d = opendir(dir);
    while (d != NULL && (e = readdir(d)) != NULL && rv == CKR_OK) {
        if (e->d_name[0] == '.') continue;
        if (snprintf(file, sizeof(file), "%s/%s/" TOKEN_FILE, dir, e->d_name) >= (int)sizeof(file))
            continue;
        snprintf(backup, sizeof(backup), "%s" BACKUP_SUFFIX, file);
        rv = fn(file, backup);
    }
    if (d != NULL) closedir(d);
    hf_lockfile_drop(lock);
    return rv;
}

static CK_RV token_backup(const char *token_file, const char *backup_file)
{
    unsigned char *data = NULL;
    size_t len = 0;
    CK_RV rv = hf_file_read(token_file, TOKEN_FILE_MAX, &data, &len);

    if (rv == CKR_KEY_HANDLE_INVALID) return CKR_OK; /* not a token directory */
    if (rv == CKR_OK && len > 0) rv = hf_file_replace(backup_file, data, len);
    free(data);
    return rv;
}

static CK_RV token_repair(const char *token_file, const char *backup_file)
{
    unsigned char *data = NULL;
    size_t len = 0;
    struct stat st;
    CK_RV rv = hf_file_read(backup_file, TOKEN_FILE_MAX, &data, &len);

    if (rv == CKR_KEY_HANDLE_INVALID) return CKR_OK; /* a token Holdfast did not make */
    if (rv == CKR_OK && (stat(token_file, &st) != 0 || (size_t)st.st_size != len)) {
        hf_log_warn("softhsm: %s was cut short (a process was killed while logging in): "
                    "restoring it from %s",
                    token_file, backup_file);
        rv = hf_file_replace(token_file, data, len);
    }
    free(data);
    return rv;
}

CK_RV hf_softhsm_backup_tokens(const char *softhsm2_conf, const char *lock_path)
{
    return tokens_each(softhsm2_conf, lock_path, token_backup);
}

CK_RV hf_softhsm_repair_tokens(const char *softhsm2_conf, const char *lock_path)
{
    return tokens_each(softhsm2_conf, lock_path, token_repair);
}
