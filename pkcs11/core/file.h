/* Private files of a key store (PIN files, configs, token backups): written whole or not at all,
 * mode 0600, directories 0700. A crash at any point leaves the old file or the new one, never a
 * mix: the data goes to a temporary name in the same directory, is fsync'ed, then linked or
 * renamed into place and the directory is synced. */
#ifndef HF_FILE_H
#define HF_FILE_H

#include <stddef.h>
#include <sys/types.h>

#include "pkcs11/module/pkcs11-compat.h"

/* mkdir -p: parents as the umask allows, the last component with mode. */
CK_RV hf_dir_make(const char *path, mode_t mode);
/* Makes a rename or link of a file in path's directory durable. */
void hf_dir_sync(const char *path);
/* Creates path holding data unless it exists (then CKR_OK and the file is left alone: two
 * concurrent inits keep the first one's file). */
CK_RV hf_file_install(const char *path, const void *data, size_t len);
/* Creates or atomically replaces path with data. */
CK_RV hf_file_replace(const char *path, const void *data, size_t len);
/* Reads a whole (small) file into malloc'd memory; CKR_KEY_HANDLE_INVALID when it is absent. */
CK_RV hf_file_read(const char *path, size_t max, unsigned char **data, size_t *len);

/* An inter-process lock on a lock file (flock(2); hsm.c says why Holdfast needs one): takes op
 * (LOCK_SH or LOCK_EX) on path, creating it 0600; *fd is -1 when path is NULL (no locking asked).
 * Each hold opens its own descriptor; hf_lockfile_drop unlocks before closing. */
CK_RV hf_lockfile_take(const char *path, int op, int *fd);
/* The two halves of hf_lockfile_take, for a caller that keeps its descriptors between holds
 * (one per concurrent holder: flock belongs to the open file description). */
CK_RV hf_lockfile_open(const char *path, int *fd);
CK_RV hf_lockfile_lock(int fd, int op); /* op: LOCK_SH, LOCK_EX or LOCK_UN */
void hf_lockfile_drop(int fd);

#endif
