/* The core's root (root.h): the [hsm] token alone, as before the root could be a pool, or [hsm]
 * and its [hsm.NAME] members as an HSM pool whose members must hold the same keys; what
 * `holdfast init` checks across the members before it makes a key; and the members' live status
 * (`holdfast root status`, and beside the HSM pools' in holdfastd's /metrics and health answers,
 * as the pool HF_CORE_ROOT_POOL). */
#include "hf-build.h"

#include "core-internal.h"
#include "log.h"
#include "softhsm-backup.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CK_RV core_policy_label(const struct hf_config *cfg, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s.policy-mac", cfg->kek_label);

    return n > 0 && (size_t)n < len ? CKR_OK : CKR_ARGUMENTS_BAD;
}

CK_RV core_root_lock_path(const struct hf_config *cfg, const char *member, char buf[PATH_MAX],
                          const char **path)
{
    int n;

    *path = NULL;
    if (cfg->state_dir == NULL) return CKR_OK;
    n = member ? snprintf(buf, PATH_MAX, "%s/hsm.%s.lock", cfg->state_dir, member)
               : snprintf(buf, PATH_MAX, "%s/hsm.lock", cfg->state_dir);
    if (n < 0 || n >= PATH_MAX) return CKR_ARGUMENTS_BAD;
    *path = buf;
    return CKR_OK;
}

CK_RV core_audit_keys_ensure(struct hf_root *root)
{
    CK_RV rv = hf_root_mac_key_ensure(root, HF_AUDIT_MAC_LABEL);

    if (rv == CKR_OK) rv = hf_root_mac_key_ensure(root, HF_AUDIT_CHECKPOINT_LABEL);
    if (rv != CKR_OK)
        hf_log_error("cannot make the audit chain's HSM keys: 0x%lx", (unsigned long)rv);
    return rv;
}

/* ---- the members ---- */

/* The keys every member must hold the same: the KEK, the policy MAC key, the audit chain's. */
struct root_labels {
    char policy[256];
    const char *macs[3];
    struct hf_root_keys keys;
};

static CK_RV root_labels_fill(const struct hf_config *cfg, struct root_labels *l)
{
    CK_RV rv = core_policy_label(cfg, l->policy, sizeof(l->policy));

    l->macs[0] = l->policy;
    l->macs[1] = HF_AUDIT_MAC_LABEL;
    l->macs[2] = HF_AUDIT_CHECKPOINT_LABEL;
    l->keys = (struct hf_root_keys){cfg->kek_label, l->macs, 3, NULL};
    return rv;
}

/* Every member as hf_pool_open takes it, [hsm] first (named "hsm"); a member without a PIN of its
 * own has pin ([hsm]'s: a clone keeps its PIN). locks: n of PATH_MAX each. */
static CK_RV root_specs(const struct hf_config *cfg, const char *pin,
                        struct hf_pool_member_spec *specs, char (*locks)[PATH_MAX], size_t *n)
{
    CK_RV rv = core_root_lock_path(cfg, NULL, locks[0], &specs[0].lock_path);

    specs[0].name = "hsm";
    specs[0].module_path = cfg->hsm_module;
    specs[0].token_label = cfg->hsm_token;
    specs[0].pin = pin;
    specs[0].concurrency = cfg->hsm_concurrency;
    for (size_t i = 0; rv == CKR_OK && i < cfg->n_root_members; i++) {
        const struct hf_config_root_member *m = &cfg->root_members[i];
        const char *lock = NULL;
        rv = core_root_lock_path(cfg, m->name, locks[i + 1], &lock);
        specs[i + 1] = (struct hf_pool_member_spec){
            m->name, m->module, m->token, m->pin ? m->pin : pin, lock, m->concurrency};
    }
    *n = cfg->n_root_members + 1;
    return rv;
}

/* ---- the reference (root.h): [hsm]'s key check values, kept in the store ----
 *
 * In the store, not in a node's state_dir: every node of a cluster on one PostgreSQL reads the
 * same reference, and it is read before any member is trusted (meta is read without the policy,
 * whose MAC key is one of the keys being checked). It needs no MAC of its own: each value is a
 * MAC of a fixed input under one of the root's keys, which only a token holding that key can
 * make, so an edited reference can keep every member out (the open fails, naming them) but can
 * let none in whose keys differ from the values written. */

/* The store's reference: *ref malloc'd, or NULL when the store has none (made before). */
static CK_RV ref_read(struct hf_store *store, char **ref)
{
    CK_RV rv;

    *ref = NULL;
    if (store == NULL) return CKR_OK;
    rv = hf_store_meta_get(store, HF_META_ROOT_REFERENCE, ref);
    if (rv == CKR_KEY_HANDLE_INVALID) rv = CKR_OK;
    if (rv != CKR_OK)
        hf_log_error("root: the store's reference could not be read (0x%lx)", (unsigned long)rv);
    return rv;
}

/* A store made before the reference: today's rule chose the first member to pass; when that
 * was [hsm] (member 0 passed: its values are the reference), they are the store's from now on.
 * Insert if absent: of nodes doing it at once, one writes (and logs). */
static void ref_adopt(struct hf_store *store, struct hf_root *root)
{
    struct hf_root_member_status st[HF_ROOT_MEMBERS_MAX];
    char *text = NULL;
    bool swapped = false;

    if (hf_root_status(root, st, HF_ROOT_MEMBERS_MAX) == 0 || st[0].check != HF_ROOT_CHECK_SAME)
        return;
    if (hf_root_reference(root, &text) != CKR_OK) return;
    if (hf_store_meta_swap(store, HF_META_ROOT_REFERENCE, NULL, text, &swapped) == CKR_OK &&
        swapped)
        hf_log_info("root: [hsm]'s key check values are the store's reference now (the store "
                    "predates it): members are checked against them from the next open on");
    free(text);
}

CK_RV core_root_reference_init(const struct hf_config *cfg, struct hf_store *store)
{
    struct root_labels labels;
    struct hf_hsm *hsm = NULL;
    char lock_buf[PATH_MAX];
    const char *lock;
    char *mine = NULL, *stored = NULL;
    bool swapped = false;
    CK_RV rv = root_labels_fill(cfg, &labels);

    if (rv == CKR_OK) rv = core_root_lock_path(cfg, NULL, lock_buf, &lock);
    if (rv == CKR_OK) rv = hf_hsm_open(cfg->hsm_module, lock, cfg->hsm_token, cfg->hsm_pin, &hsm);
    if (rv == CKR_OK) rv = hf_root_reference_of_hsm(hsm, &labels.keys, &mine);
    hf_hsm_close(hsm);
    if (rv == CKR_OK) rv = hf_store_meta_swap(store, HF_META_ROOT_REFERENCE, NULL, mine, &swapped);
    if (rv == CKR_OK && !swapped) rv = ref_read(store, &stored);
    if (rv == CKR_OK && !swapped && stored != NULL && strcmp(stored, mine) != 0) {
        hf_log_error("init: the store's root reference is not the key check values of [hsm] "
                     "(token '%s'): its keys are not the ones the store's keys were made under",
                     cfg->hsm_token);
        rv = CKR_KEY_CHANGED;
    }
    if (rv != CKR_OK && rv != CKR_KEY_CHANGED)
        hf_log_error("init: the root's reference could not be stored (0x%lx)", (unsigned long)rv);
    free(mine);
    free(stored);
    return rv;
}

CK_RV hf_core_root_reference_is_stored(struct hf_core *core, bool *stored)
{
    char *ref = NULL;
    CK_RV rv;

    if (core == NULL || stored == NULL) return CKR_ARGUMENTS_BAD;
    rv = ref_read(core->store, &ref);
    *stored = rv == CKR_OK && ref != NULL;
    free(ref);
    return rv;
}

static CK_RV root_pool_open(const struct hf_config *cfg, const char *pin, const char *reference,
                            struct hf_root **root)
{
    struct hf_pool_member_spec specs[HF_ROOT_MEMBERS_MAX];
    struct hf_pool_options opts = {.queue_max = cfg->pool_queue_max,
                                   .queue_wait_ms = cfg->pool_queue_wait_ms,
                                   .call_timeout_ms = cfg->pool_call_timeout_ms};
    struct root_labels labels;
    char(*locks)[PATH_MAX] = calloc(HF_ROOT_MEMBERS_MAX, PATH_MAX);
    size_t n = 0;
    CK_RV rv = locks ? root_labels_fill(cfg, &labels) : CKR_HOST_MEMORY;

    labels.keys.reference = reference;
    if (rv == CKR_OK) rv = root_specs(cfg, pin, specs, locks, &n);
    if (rv == CKR_OK) rv = hf_root_open_pool(specs, n, &opts, &labels.keys, root);
    if (rv != CKR_OK)
        hf_log_error("root: cannot open the pool of its %zu members (0x%lx)", n, (unsigned long)rv);
    free(locks);
    return rv;
}

/* The one token of a root without [hsm.NAME] sections, as it always was. */
static CK_RV root_token_open(const struct hf_config *cfg, const char *pin, struct hf_hsm **hsm,
                             struct hf_root **root)
{
    char lock_buf[PATH_MAX];
    const char *lock;
    CK_RV rv = core_root_lock_path(cfg, NULL, lock_buf, &lock);

    if (rv == CKR_OK) rv = hf_hsm_open(cfg->hsm_module, lock, cfg->hsm_token, pin, hsm);
    if (rv == CKR_OK) rv = hf_root_of_hsm(*hsm, root);
    return rv;
}

CK_RV core_root_open(const struct hf_config *cfg, const char *pin, struct hf_store *store,
                     struct hf_hsm **hsm, struct hf_root **root)
{
    char lock_buf[PATH_MAX];
    const char *lock;
    char *ref = NULL;
    CK_RV rv = core_root_lock_path(cfg, NULL, lock_buf, &lock);

    *hsm = NULL;
    *root = NULL;
    if (rv == CKR_OK && cfg->softhsm2_conf) rv = hf_softhsm_repair_tokens(cfg->softhsm2_conf, lock);
    if (rv != CKR_OK) return rv;
    if (cfg->n_root_members > 0) {
        if ((rv = ref_read(store, &ref)) == CKR_OK) rv = root_pool_open(cfg, pin, ref, root);
        if (rv == CKR_OK && ref == NULL && store != NULL) ref_adopt(store, *root);
        free(ref);
    } else {
        rv = root_token_open(cfg, pin, hsm, root);
    }
    if (rv != CKR_OK) return rv;
    if (!hf_root_has_kek(*root, cfg->kek_label)) {
        hf_log_error("backend token '%s' has no root KEK '%s': run `holdfast init`", cfg->hsm_token,
                     cfg->kek_label);
        return CKR_TOKEN_NOT_RECOGNIZED;
    }
    return core_audit_keys_ensure(*root);
}

/* ---- init ---- */

/* Whether member m (alone) holds a key [hsm]'s token lacks: one init must not make anew. */
static CK_RV init_member_check(const struct hf_config *cfg, const struct hf_pool_member_spec *m,
                               struct hf_hsm *first, const struct root_labels *labels)
{
    struct hf_hsm *h = NULL;
    CK_RV rv = hf_hsm_open(m->module_path, m->lock_path, m->token_label, m->pin, &h);

    if (rv != CKR_OK) {
        hf_log_warn("init: root member %s cannot be reached (0x%lx): not checked", m->name,
                    (unsigned long)rv);
        return CKR_OK;
    }
    for (size_t i = 0; i <= labels->keys.n_mac_labels && rv == CKR_OK; i++) {
        const char *label = i == 0 ? cfg->kek_label : labels->macs[i - 1];
        if (hf_hsm_has_kek(first, label) || !hf_hsm_has_kek(h, label)) continue;
        hf_log_error("init: root member %s holds a key '%s' that [hsm] (token '%s') lacks: clone "
                     "that member's token to [hsm]'s; init never makes a second, different key",
                     m->name, label, cfg->hsm_token);
        rv = CKR_KEY_CHANGED;
    }
    hf_hsm_close(h);
    return rv;
}

CK_RV core_root_init_check(const struct hf_config *cfg, const char *pin, struct hf_hsm *first)
{
    struct hf_pool_member_spec specs[HF_ROOT_MEMBERS_MAX];
    struct root_labels labels;
    char(*locks)[PATH_MAX] = calloc(HF_ROOT_MEMBERS_MAX, PATH_MAX);
    size_t n = 0;
    CK_RV rv = locks ? root_labels_fill(cfg, &labels) : CKR_HOST_MEMORY;

    if (rv == CKR_OK) rv = root_specs(cfg, pin, specs, locks, &n);
    for (size_t i = 1; rv == CKR_OK && i < n; i++)
        rv = init_member_check(cfg, &specs[i], first, &labels);
    free(locks);
    return rv;
}

/* ---- status ---- */

/* "<module file> token <label>", as core-pool-status.c models pool members. */
static void member_model(const struct hf_config *cfg, size_t i, char *out, size_t len)
{
    const char *module = i == 0 ? cfg->hsm_module : cfg->root_members[i - 1].module;
    const char *token = i == 0 ? cfg->hsm_token : cfg->root_members[i - 1].token;
    const char *base = strrchr(module, '/');

    snprintf(out, len, "%s token %s", base ? base + 1 : module, token);
}

/* root's members into *out (malloc'd), their names and models from cfg. */
static CK_RV root_members_get(const struct hf_config *cfg, struct hf_root *root,
                              struct hf_core_root_member **out, size_t *n)
{
    struct hf_root_member_status st[HF_ROOT_MEMBERS_MAX];
    size_t got = hf_root_status(root, st, HF_ROOT_MEMBERS_MAX);

    *out = NULL;
    *n = 0;
    if (got == 0) return CKR_OK;
    if (got > HF_ROOT_MEMBERS_MAX || got != cfg->n_root_members + 1) return CKR_GENERAL_ERROR;
    if ((*out = calloc(got, sizeof(**out))) == NULL) return CKR_HOST_MEMORY;
    for (size_t i = 0; i < got; i++) {
        struct hf_core_root_member *m = &(*out)[i];
        snprintf(m->name, sizeof(m->name), "%s", st[i].pool.name);
        snprintf(m->differs, sizeof(m->differs), "%s", st[i].differs ? st[i].differs : "");
        member_model(cfg, i, m->model, sizeof(m->model));
        m->status = st[i].pool;
        m->status.name = NULL;
        m->check = st[i].check;
    }
    *n = got;
    return CKR_OK;
}

CK_RV hf_core_root_status(struct hf_core *core, struct hf_core_root_member **out, size_t *n)
{
    if (core == NULL || out == NULL || n == NULL) return CKR_ARGUMENTS_BAD;
    return root_members_get(core->cfg, core->root, out, n);
}

CK_RV hf_core_root_check(const struct hf_config *cfg, struct hf_core_root_member **out, size_t *n)
{
    struct hf_root *root = NULL;
    struct hf_store *store = NULL;
    const char *pin = NULL;
    char *owned = NULL, *ref = NULL;
    CK_RV rv;

    if (cfg == NULL || out == NULL || n == NULL) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    *n = 0;
    if (cfg->n_root_members == 0) return CKR_OK;
    rv = core_hsm_pin(cfg, &pin, &owned);
    /* Checked as an open would check them: against the store's reference when it has one. */
    if (rv == CKR_OK && hf_store_open(cfg->store_path, &store) == CKR_OK)
        rv = ref_read(store, &ref);
    hf_store_close(store);
    if (rv == CKR_OK) rv = root_pool_open(cfg, pin, ref, &root);
    if (rv == CKR_OK) rv = root_members_get(cfg, root, out, n);
    hf_root_close(root);
    core_secret_free(owned);
    free(ref);
    return rv;
}

CK_RV core_root_pools_append(struct hf_core *core, struct hf_core_pool_live **out, size_t *n)
{
    struct hf_core_root_member *members = NULL;
    struct hf_core_pool_live *grown;
    size_t k = 0;
    CK_RV rv = hf_core_root_status(core, &members, &k);

    if (rv != CKR_OK || k == 0) return rv;
    if ((grown = realloc(*out, (*n + k) * sizeof(**out))) == NULL) {
        free(members);
        return CKR_HOST_MEMORY;
    }
    *out = grown;
    for (size_t i = 0; i < k; i++) {
        struct hf_core_pool_live *l = &grown[*n + i];
        memset(l, 0, sizeof(*l));
        snprintf(l->pool, sizeof(l->pool), "%s", HF_CORE_ROOT_POOL);
        snprintf(l->member, sizeof(l->member), "%s", members[i].name);
        snprintf(l->model, sizeof(l->model), "%s", members[i].model);
        l->status = members[i].status;
    }
    *n += k;
    free(members);
    return CKR_OK;
}
