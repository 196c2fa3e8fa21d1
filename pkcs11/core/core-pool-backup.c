/* Export pools in the core (issue 14; pool-backup.h): the pool's backup KEK kept in the store
 * wrapped under the root KEK, the replication key's and each version's blobs under it, and the
 * re-seeding of an empty member token from them (hf_core_pool_restore, core-pool.c). */
#include "hf-build.h"

#include "core-internal.h"
#include "log.h"
#include "pool-backup.h"
#include "pool-clone.h"
#include "secmem.h"
#include "source-pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Inside the root KEK's wrap, the key is followed by this and the pool's name: a blob moved to
 * another pool's row in the store does not unwrap as that pool's KEK (the wrap authenticates
 * the whole plaintext). */
#define KEK_CONTEXT "holdfast-pool-backup-kek:"

/* ---- the backup KEK ---- */

static CK_RV kek_seal(struct hf_core *core, const char *name, const unsigned char *key,
                      unsigned char **blob, size_t *len)
{
    size_t plain_len = HF_POOL_BACKUP_KEK_LEN + strlen(KEK_CONTEXT) + strlen(name);
    unsigned char *plain = hf_secmem_alloc(plain_len);
    CK_RV rv;

    if (plain == NULL) return CKR_HOST_MEMORY;
    memcpy(plain, key, HF_POOL_BACKUP_KEK_LEN);
    memcpy(plain + HF_POOL_BACKUP_KEK_LEN, KEK_CONTEXT, strlen(KEK_CONTEXT));
    memcpy(plain + HF_POOL_BACKUP_KEK_LEN + strlen(KEK_CONTEXT), name, strlen(name));
    rv = hf_root_wrap(core->root, core->cfg->kek_label, plain, plain_len, blob, len);
    hf_secmem_free(plain, plain_len);
    return rv;
}

/* The key out of its blob into kek (hf_secmem); the context must name this pool. hsm.h: the
 * plaintext may end in up to 7 zero bytes of SoftHSMv2's padding. */
static CK_RV kek_unseal(struct hf_core *core, const char *name, const unsigned char *blob,
                        size_t len, unsigned char *kek)
{
    size_t ctx_len = strlen(KEK_CONTEXT), name_len = strlen(name);
    size_t want = HF_POOL_BACKUP_KEK_LEN + ctx_len + name_len;
    unsigned char *plain = NULL;
    size_t plain_len = 0;
    bool ok;
    CK_RV rv;

    rv = hf_root_unwrap(core->root, core->cfg->kek_label, blob, len, &plain, &plain_len);
    if (rv != CKR_OK) return rv;
    ok = plain_len >= want && plain_len - want < 8 &&
         memcmp(plain + HF_POOL_BACKUP_KEK_LEN, KEK_CONTEXT, ctx_len) == 0 &&
         memcmp(plain + HF_POOL_BACKUP_KEK_LEN + ctx_len, name, name_len) == 0;
    for (size_t i = want; ok && i < plain_len; i++)
        ok = plain[i] == 0;
    if (ok) memcpy(kek, plain, HF_POOL_BACKUP_KEK_LEN);
    hf_secmem_free(plain, plain_len);
    if (!ok)
        hf_log_error("pool %s: its backup KEK in the store is another pool's or damaged", name);
    return ok ? CKR_OK : CKR_WRAPPED_KEY_INVALID;
}

/* A new backup KEK for the pool, unless another process stored one first. */
static CK_RV kek_create(struct hf_core *core, const char *name)
{
    unsigned char *key = hf_secmem_alloc(HF_POOL_BACKUP_KEK_LEN);
    unsigned char *blob = NULL;
    size_t len = 0;
    CK_RV rv;

    if (key == NULL) return CKR_HOST_MEMORY;
    rv = hf_random(key, HF_POOL_BACKUP_KEK_LEN);
    if (rv == CKR_OK) rv = kek_seal(core, name, key, &blob, &len);
    hf_secmem_free(key, HF_POOL_BACKUP_KEK_LEN);
    if (rv == CKR_OK)
        rv = hf_store_pool_backup_add(core->store, name, HF_POOL_BACKUP_KEK, blob, len);
    free(blob);
    if (rv == CKR_OK) hf_log_info("pool %s: backup KEK made", name);
    return rv;
}

CK_RV core_pool_backup_kek(struct hf_core *core, const char *name, bool create, unsigned char **kek)
{
    unsigned char *blob = NULL;
    size_t len = 0;
    CK_RV rv;

    *kek = NULL;
    rv = hf_store_pool_backup_get(core->store, name, HF_POOL_BACKUP_KEK, &blob, &len);
    if (rv == CKR_KEY_HANDLE_INVALID && create) {
        if ((rv = kek_create(core, name)) != CKR_OK) return rv;
        rv = hf_store_pool_backup_get(core->store, name, HF_POOL_BACKUP_KEK, &blob, &len);
    }
    if (rv != CKR_OK) return rv;
    if ((*kek = hf_secmem_alloc(HF_POOL_BACKUP_KEK_LEN)) == NULL) rv = CKR_HOST_MEMORY;
    if (rv == CKR_OK) rv = kek_unseal(core, name, blob, len, *kek);
    free(blob);
    if (rv != CKR_OK) {
        core_pool_backup_kek_free(*kek);
        *kek = NULL;
    }
    return rv;
}

void core_pool_backup_kek_free(unsigned char *kek)
{
    hf_secmem_free(kek, HF_POOL_BACKUP_KEK_LEN);
}

/* ---- blobs of the replication key and of versions ---- */

void core_pool_backup_establish(struct hf_core *core, const char *name, struct hf_pool *pool)
{
    char repl[HF_POOL_REPL_LABEL_MAX];
    unsigned char *kek = NULL, *blob = NULL;
    size_t len = 0;
    CK_RV rv;

    rv = hf_store_pool_backup_get(core->store, name, HF_POOL_BACKUP_REPLICATION, &blob, &len);
    if (rv == CKR_OK) {
        free(blob);
        /* Made by an earlier open; the KEK it needs must be there too. */
        return;
    }
    hf_pool_repl_label(name, repl);
    if (rv == CKR_KEY_HANDLE_INVALID) rv = core_pool_backup_kek(core, name, true, &kek);
    if (rv == CKR_OK)
        rv = hf_pool_backup_wrap(pool, kek, repl, HF_POOL_OBJ_REPLICATION, &blob, &len);
    if (rv == CKR_OK)
        rv = hf_store_pool_backup_add(core->store, name, HF_POOL_BACKUP_REPLICATION, blob, len);
    core_pool_backup_kek_free(kek);
    free(blob);
    if (rv != CKR_OK)
        hf_log_warn("pool %s: its replication key has no backup yet (0x%lx): keys made now could "
                    "not be restored to an empty member",
                    name, (unsigned long)rv);
}

CK_RV core_pool_backup_version(struct hf_core *core, const char *name, struct hf_pool *pool,
                               const char *uuid, enum hf_pool_obj obj, unsigned char **blob,
                               size_t *len)
{
    unsigned char *kek = NULL;
    CK_RV rv = core_pool_backup_kek(core, name, true, &kek);

    if (rv == CKR_OK) rv = hf_pool_backup_wrap(pool, kek, uuid, obj, blob, len);
    core_pool_backup_kek_free(kek);
    return rv;
}

/* ---- restoring a member ---- */

struct restore {
    struct hf_core *core;
    const char *kek_label; /* "pool:NAME": the pool's export versions */
    struct hf_hsm *hsm;
    const unsigned char *kek;
    size_t restored, present;
};

static CK_RV restore_version_fn(const struct hf_key *key, const struct hf_key_version *v, void *arg)
{
    struct restore *r = arg;
    bool made = false;
    CK_RV rv;

    if (v->kek_label == NULL || strcmp(v->kek_label, r->kek_label) != 0 ||
        v->state == HF_STATE_DESTROYED)
        return CKR_OK;
    if (v->wrapped == NULL) {
        hf_log_warn("key %s version %u has no backup: not restored", v->key_uuid, v->version);
        return CKR_OK;
    }
    rv = hf_hsm_backup_restore(r->hsm, r->kek, v->uuid, hf_pool_obj_of(key->alg), v->wrapped,
                               v->wrapped_len, &made);
    if (rv != CKR_OK) {
        hf_log_error("key %s version %u: its backup did not unwrap (0x%lx)", v->key_uuid,
                     v->version, (unsigned long)rv);
        return rv;
    }
    if (made)
        r->restored++;
    else
        r->present++;
    return CKR_OK;
}

CK_RV core_pool_backup_restore(struct hf_core *core, const char *name, struct hf_hsm *hsm,
                               size_t *restored, size_t *present)
{
    char repl[HF_POOL_REPL_LABEL_MAX];
    char kek_label[sizeof(HF_KEY_SOURCE_POOL_PREFIX) + HF_POOL_NAME_MAX];
    struct restore r = {.core = core, .hsm = hsm, .kek_label = kek_label};
    unsigned char *kek = NULL, *blob = NULL;
    size_t len = 0;
    bool made = false;
    CK_RV rv;

    *restored = *present = 0;
    snprintf(kek_label, sizeof(kek_label), "%s%s", HF_KEY_SOURCE_POOL_PREFIX, name);
    hf_pool_repl_label(name, repl);
    rv = hf_store_pool_backup_get(core->store, name, HF_POOL_BACKUP_REPLICATION, &blob, &len);
    if (rv == CKR_KEY_HANDLE_INVALID)
        hf_log_error("pool %s has no backup of its replication key yet: it was never opened with "
                     "a member in service",
                     name);
    if (rv == CKR_OK) rv = core_pool_backup_kek(core, name, false, &kek);
    if (rv == CKR_OK)
        rv = hf_hsm_backup_restore(hsm, kek, repl, HF_POOL_OBJ_REPLICATION, blob, len, &made);
    if (rv == CKR_OK) {
        r.kek = kek;
        r.restored = made;
        r.present = !made;
        rv = hf_store_version_each(core->store, restore_version_fn, &r);
    }
    core_pool_backup_kek_free(kek);
    free(blob);
    *restored = r.restored;
    *present = r.present;
    return rv;
}
