#include "hf-build.h"

#include "core-internal.h"
#include "file.h"
#include "hsm.h"
#include "pool-wrap.h"
#include "softhsm-backup.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t hf_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

uint64_t hf_monotonic_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

const struct hf_config *hf_core_config(struct hf_core *core)
{
    return core ? core->cfg : NULL;
}

struct hf_store *hf_core_store(struct hf_core *core)
{
    return core ? core->store : NULL;
}

struct hf_audit *hf_core_audit(struct hf_core *core)
{
    return core ? core->audit : NULL;
}

/* ---- files of the embedded default ---- */

static bool file_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static void hex_encode(const unsigned char *in, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * len] = '\0';
}

/* Writes a random PIN (hex of 16 random bytes) to path unless the file exists. */
static CK_RV pin_file_ensure(const char *path)
{
    unsigned char raw[16];
    char text[2 * sizeof(raw) + 2];
    CK_RV rv;

    if (path == NULL || file_exists(path)) return CKR_OK;
    rv = hf_random(raw, sizeof(raw));
    if (rv == CKR_OK) {
        hex_encode(raw, sizeof(raw), text);
        strcat(text, "\n");
        rv = hf_file_install(path, text, strlen(text));
    }
    OPENSSL_cleanse(raw, sizeof(raw));
    OPENSSL_cleanse(text, sizeof(text));
    return rv;
}

/* SoftHSMv2's config for the embedded token, unless one exists (then it is the admin's). */
static CK_RV softhsm2_conf_ensure(const struct hf_config *cfg)
{
    char tokens[PATH_MAX], text[PATH_MAX + 512];
    CK_RV rv;

    if (file_exists(cfg->softhsm2_conf)) return CKR_OK;
    if (snprintf(tokens, sizeof(tokens), "%s/tokens", cfg->state_dir) >= (int)sizeof(tokens))
        return CKR_ARGUMENTS_BAD;
    rv = hf_dir_make(tokens, 0700);
    if (rv != CKR_OK) return rv;
    /* reset_on_fork: a forked child (pkcs11-tool --test-fork, any pre-forking server) must get
     * a fresh SoftHSMv2 rather than the parent's sessions and locks. */
    snprintf(text, sizeof(text),
             "# Written by holdfast init: the SoftHSMv2 token holding Holdfast's root KEK.\n"
             "directories.tokendir = %s\n"
             "objectstore.backend = file\n"
             "log.level = ERROR\n"
             "slots.removable = false\n"
             "library.reset_on_fork = true\n",
             tokens);
    return hf_file_install(cfg->softhsm2_conf, text, strlen(text));
}

/* SoftHSMv2 reads SOFTHSM2_CONF when it loads; set it only when we manage SoftHSMv2's config,
 * and only when it changes (setenv races with other threads' getenv). */
static CK_RV softhsm2_env_set(const struct hf_config *cfg)
{
    const char *now = getenv("SOFTHSM2_CONF");

    if (cfg->softhsm2_conf == NULL) return CKR_OK;
    if (now != NULL && strcmp(now, cfg->softhsm2_conf) == 0) return CKR_OK;
    if (setenv("SOFTHSM2_CONF", cfg->softhsm2_conf, 1) != 0) return CKR_HOST_MEMORY;
    return CKR_OK;
}

/* The first line of path (a PIN file), through the config's own reader. *pin: caller's,
 * cleanse before free. */
static CK_RV pin_file_load(const char *path, char **pin)
{
    struct hf_config tmp = {.hsm_pin_file = (char *)path};
    char err[256];
    CK_RV rv = hf_config_resolve_pin(&tmp, err, sizeof(err));

    if (rv != CKR_OK) hf_log_error("%s", err);
    *pin = tmp.hsm_pin;
    return rv;
}

void core_secret_free(char *s)
{
    if (s != NULL) OPENSSL_clear_free(s, strlen(s));
}

/* The root KEK and the keyed audit chain's HSM keys (audit.h) on [hsm]'s token; with more root
 * members, none made that another member holds already (core-root.c). */
static CK_RV root_keys_ensure(const struct hf_config *cfg, struct hf_hsm *hsm)
{
    struct hf_root *root = NULL;
    CK_RV rv = CKR_OK;

    if (cfg->n_root_members > 0) rv = core_root_init_check(cfg, cfg->hsm_pin, hsm);
    if (rv == CKR_OK) rv = hf_hsm_kek_ensure(hsm, cfg->kek_label);
    if (rv == CKR_OK) rv = hf_root_of_hsm(hsm, &root);
    if (rv == CKR_OK) rv = core_audit_keys_ensure(root);
    hf_root_close(root);
    return rv;
}

static CK_RV hsm_ensure(struct hf_config *cfg)
{
    struct hf_hsm *hsm = NULL;
    char *so_pin = NULL;
    char err[256], lock_buf[PATH_MAX];
    const char *lock;
    CK_RV rv;

    rv = pin_file_ensure(cfg->hsm_so_pin_file);
    if (rv == CKR_OK) rv = pin_file_ensure(cfg->hsm_pin_file);
    if (rv != CKR_OK) goto done;
    rv = hf_config_resolve_pin(cfg, err, sizeof(err));
    if (rv != CKR_OK) {
        hf_log_error("%s", err);
        goto done;
    }
    rv = pin_file_load(cfg->hsm_so_pin_file, &so_pin);
    if (rv == CKR_OK) rv = core_root_lock_path(cfg, NULL, lock_buf, &lock);
    if (rv != CKR_OK) goto done;
    /* A token cut short by a killed login is repaired, never replaced by a new one. */
    if (cfg->softhsm2_conf) rv = hf_softhsm_repair_tokens(cfg->softhsm2_conf, lock);
    if (rv != CKR_OK) goto done;
    rv = hf_hsm_token_ensure(cfg->hsm_module, lock, cfg->hsm_token, so_pin, cfg->hsm_pin);
    if (rv != CKR_OK) goto done;
    rv = hf_hsm_open(cfg->hsm_module, lock, cfg->hsm_token, cfg->hsm_pin, &hsm);
    if (rv != CKR_OK) goto done;
    rv = root_keys_ensure(cfg, hsm);
    if (rv == CKR_OK && cfg->softhsm2_conf) rv = hf_softhsm_backup_tokens(cfg->softhsm2_conf, lock);
done:
    hf_hsm_close(hsm);
    core_secret_free(so_pin);
    return rv;
}

static bool pin_arg_is_valid(const char *pin)
{
    size_t len = pin ? strlen(pin) : 0;

    return pin == NULL || (len >= 4 && len <= 255);
}

/* Sets the token PIN unless it is set (or reset asks to and a PIN is given, so one PIN can be
 * reset alone). *changed tells the caller. */
static CK_RV token_pin_ensure(struct hf_core *core, enum hf_user user, const char *pin, bool reset,
                              bool *changed)
{
    *changed = false;
    if ((!reset || pin == NULL) && hf_core_pin_is_set(core, user)) return CKR_OK;
    if (pin == NULL) {
        hf_log_error("init: the token's %s PIN is not set and none was given",
                     user == HF_USER_SO ? "SO" : "user");
        return CKR_ARGUMENTS_BAD;
    }
    *changed = true;
    return hf_core_pin_set(core, user, pin, strlen(pin));
}

static CK_RV token_serial_ensure(struct hf_store *store)
{
    unsigned char raw[8];
    char hex[2 * sizeof(raw) + 1];
    char *serial = NULL;
    CK_RV rv = hf_store_meta_get(store, HF_META_TOKEN_SERIAL, &serial);

    free(serial);
    if (rv != CKR_KEY_HANDLE_INVALID) return rv;
    rv = hf_random(raw, sizeof(raw));
    if (rv != CKR_OK) return rv;
    hex_encode(raw, sizeof(raw), hex);
    return hf_store_meta_set(store, HF_META_TOKEN_SERIAL, hex);
}

/* A PIN change is security-relevant: it gets an audit record like a key operation, written by
 * an opened core, so that it is keyed and checkpointed like every other. With always, the core is
 * opened anyway (its first open makes the policy MAC key). */
static CK_RV init_audit(const struct hf_config *cfg, bool always, bool so_changed,
                        bool user_changed)
{
    struct hf_core *core = NULL;
    char caller[32], detail[64];
    struct hf_audit_record rec = {.api = "core",
                                  .operation = "token.init",
                                  .caller = caller,
                                  .detail = detail,
                                  .result = CKR_OK,
                                  .authenticated = true};
    CK_RV rv;

    if (!so_changed && !user_changed && !always) return CKR_OK;
    snprintf(caller, sizeof(caller), "uid:%ld", (long)getuid());
    snprintf(detail, sizeof(detail), "so_pin=%s user_pin=%s", so_changed ? "set" : "kept",
             user_changed ? "set" : "kept");
    if ((rv = hf_core_open(cfg, &core)) != CKR_OK) return rv;
    if (so_changed || user_changed) rv = hf_audit_append(core->audit, &rec, NULL);
    hf_core_close(core);
    return rv == CKR_OK ? CKR_OK : CKR_HF_AUDIT_FAILED;
}

CK_RV hf_core_init(struct hf_config *cfg, const char *so_pin, const char *user_pin, bool reset)
{
    struct hf_core tmp = {.cfg = cfg};
    /* Keys are made on [hsm] alone, to be cloned to the other members: its first open makes the
     * policy MAC key there, before any other member could be asked for it. */
    struct hf_config first;
    bool so_changed = false, user_changed = false;
    CK_RV rv;

    if (cfg == NULL || cfg->state_dir == NULL) return CKR_ARGUMENTS_BAD;
    if (!pin_arg_is_valid(so_pin) || !pin_arg_is_valid(user_pin)) return CKR_PIN_LEN_RANGE;
    rv = hf_dir_make(cfg->state_dir, 0700);
    if (rv == CKR_OK && cfg->softhsm2_conf != NULL) rv = softhsm2_conf_ensure(cfg);
    if (rv == CKR_OK) rv = softhsm2_env_set(cfg);
    if (rv == CKR_OK) rv = hsm_ensure(cfg);
    if (rv != CKR_OK) goto done;
    rv = hf_store_open(cfg->store_path, &tmp.store);
    if (rv != CKR_OK) goto done;
    rv = token_pin_ensure(&tmp, HF_USER_SO, so_pin, reset, &so_changed);
    if (rv == CKR_OK) rv = token_pin_ensure(&tmp, HF_USER_NORMAL, user_pin, reset, &user_changed);
    if (rv == CKR_OK) rv = token_serial_ensure(tmp.store);
    first = *cfg; /* after hsm_ensure, which resolves the PIN */
    first.n_root_members = 0;
    if (rv == CKR_OK) rv = init_audit(&first, cfg->n_root_members > 0, so_changed, user_changed);
    /* After init_audit, whose open made the policy MAC key: the reference covers every key. */
    if (rv == CKR_OK && cfg->n_root_members > 0) rv = core_root_reference_init(cfg, tmp.store);
done:
    hf_store_close(tmp.store);
    return rv;
}

CK_RV hf_core_init_gateway_pin(const struct hf_config *cfg, const char *pin, bool reset,
                               bool *changed)
{
    struct hf_core *core = NULL;
    char caller[32];
    struct hf_audit_record rec = {.api = "core",
                                  .operation = "pin.set",
                                  .caller = caller,
                                  .detail = "gateway",
                                  .result = CKR_OK,
                                  .authenticated = true};
    CK_RV rv;

    if (changed == NULL) return CKR_ARGUMENTS_BAD;
    *changed = false;
    if (!pin_arg_is_valid(pin)) return CKR_PIN_LEN_RANGE;
    if ((rv = hf_core_open(cfg, &core)) != CKR_OK) return rv;
    if (pin == NULL || (!reset && hf_core_pin_is_set(core, HF_USER_GATEWAY))) goto done;
    rv = hf_core_pin_set(core, HF_USER_GATEWAY, pin, strlen(pin));
    snprintf(caller, sizeof(caller), "uid:%ld", (long)getuid());
    rec.result = rv;
    if (hf_audit_append(core->audit, &rec, NULL) != CKR_OK && rv == CKR_OK)
        rv = CKR_HF_AUDIT_FAILED;
    *changed = rv == CKR_OK;
done:
    hf_core_close(core);
    return rv;
}

/* ---- open and close ---- */

/* init has run: the store file and the pin file exist. */
static bool core_is_initialised(const struct hf_config *cfg)
{
    const char *file = hf_store_locator_file(cfg->store_path);

    if (file != NULL && !file_exists(file)) return false;
    return cfg->hsm_pin != NULL || cfg->hsm_pin_file == NULL || file_exists(cfg->hsm_pin_file);
}

/* cfg->hsm_pin, or the PIN read now (*owned: to be freed) when load found no pin file yet. */
CK_RV core_hsm_pin(const struct hf_config *cfg, const char **pin, char **owned)
{
    struct hf_config tmp;
    char err[256];
    CK_RV rv;

    *owned = NULL;
    *pin = cfg->hsm_pin;
    if (*pin != NULL) return CKR_OK;
    tmp = *cfg;
    tmp.hsm_pin = NULL;
    rv = hf_config_resolve_pin(&tmp, err, sizeof(err));
    if (rv != CKR_OK) {
        hf_log_error("%s", err);
        return rv;
    }
    *pin = *owned = tmp.hsm_pin;
    return CKR_OK;
}

static CK_RV core_store_open(struct hf_core *core)
{
    char *v = NULL;
    CK_RV rv = hf_store_open(core->cfg->store_path, &core->store);

    if (rv != CKR_OK) return rv;
    rv = hf_store_meta_get(core->store, HF_META_PIN_SO, &v);
    free(v);
    if (rv == CKR_KEY_HANDLE_INVALID) {
        hf_log_error("%s has no token PINs: run `holdfast init`", core->cfg->store_path);
        return CKR_TOKEN_NOT_RECOGNIZED;
    }
    return rv;
}

static CK_RV core_hsm_open(struct hf_core *core, const char *pin)
{
    const struct hf_config *cfg = core->cfg;
    CK_RV rv = core_root_open(cfg, pin, core->store, &core->hsm, &core->root);

    if (rv != CKR_OK) return rv;
    return hf_local_open(core->root, cfg->kek_label, cfg->cache_max_keys, &core->local);
}

/* After the store, the HSM and the audit log are open: a store whose token has no policy MAC
 * key yet predates policy MACs (or is new), so its rows are MAC'd now, by this process that
 * holds the token, before any of them is read through the checks. From then on the key exists
 * and a row without MAC is refused. */
static CK_RV core_policy_open(struct hf_core *core)
{
    char label[256];
    bool created = false;
    CK_RV rv = core_policy_label(core->cfg, label, sizeof(label));

    if (rv == CKR_OK) rv = hf_policy_open(core->root, label, &core->policy, &created);
    if (rv == CKR_OK && created)
        rv = hf_policy_migrate(core->policy, core->store, core->local, NULL);
    if (rv != CKR_OK) return rv;
    hf_policy_audit_set(core->policy, core->audit);
    hf_store_policy_set(core->store, hf_policy_hooks(core->policy));
    return CKR_OK;
}

CK_RV hf_core_open(const struct hf_config *cfg, struct hf_core **out)
{
    struct hf_core *core = NULL;
    struct hf_audit_config acfg;
    const char *pin = NULL;
    char *owned_pin = NULL;
    CK_RV rv;

    if (cfg == NULL || out == NULL || cfg->store_path == NULL) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    if (!core_is_initialised(cfg)) {
        hf_log_error("%s is not initialised: run `holdfast init`", cfg->state_dir);
        return CKR_TOKEN_NOT_RECOGNIZED;
    }
    rv = core_hsm_pin(cfg, &pin, &owned_pin);
    if (rv == CKR_OK) rv = softhsm2_env_set(cfg);
    if (rv != CKR_OK) goto done;
    if ((core = calloc(1, sizeof(*core))) == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    pthread_mutex_init(&core->pools_lock, NULL);
    pthread_cond_init(&core->pools_cond, NULL);
    core->cfg = cfg;
    rv = core_store_open(core);
    if (rv == CKR_OK) rv = core_hsm_open(core, pin);
    if (rv != CKR_OK) goto done;
    acfg = (struct hf_audit_config){.path = cfg->audit_path,
                                    .node = cfg->node,
                                    .sync_interval_ms = cfg->audit_sync_interval_ms,
                                    .success_events = cfg->audit_success_events,
                                    .root = core->root,
                                    .store = core->store,
                                    .reserve_bytes = cfg->audit_reserve,
                                    .alarm_bytes = cfg->audit_alarm,
                                    .checkpoint_interval_ms = cfg->audit_checkpoint_interval_ms};
    rv = hf_audit_open(&acfg, &core->audit);
    if (rv == CKR_OK) rv = core_policy_open(core);
done:
    core_secret_free(owned_pin);
    if (rv != CKR_OK) {
        hf_core_close(core);
        core = NULL;
    }
    *out = core;
    return rv;
}

CK_RV hf_core_audit_verify(const struct hf_config *cfg, const char *path, bool allow_torn_tail,
                           bool strict, struct hf_audit_verify_result *result)
{
    struct hf_core tmp = {.cfg = cfg};
    struct hf_audit_verify_config vc = {.path = path  ? path
                                                : cfg ? cfg->audit_path
                                                      : NULL,
                                        .node = cfg ? cfg->node : NULL,
                                        .allow_torn_tail = allow_torn_tail,
                                        .strict = strict};
    const char *pin = NULL;
    char *owned_pin = NULL;
    CK_RV rv;

    if (cfg == NULL || vc.path == NULL || result == NULL) return CKR_ARGUMENTS_BAD;
    memset(result, 0, sizeof(*result));
    if (!core_is_initialised(cfg)) {
        hf_log_error("%s is not initialised: run `holdfast init`", cfg->state_dir);
        return CKR_TOKEN_NOT_RECOGNIZED;
    }
    /* The store and the token, but no audit stream: verifying writes nothing. */
    rv = core_hsm_pin(cfg, &pin, &owned_pin);
    if (rv == CKR_OK) rv = softhsm2_env_set(cfg);
    if (rv == CKR_OK) rv = core_store_open(&tmp);
    if (rv == CKR_OK) rv = core_root_open(cfg, pin, tmp.store, &tmp.hsm, &tmp.root);
    if (rv != CKR_OK) goto done;
    vc.root = tmp.root;
    vc.store = tmp.store;
    rv = hf_audit_verify_keyed(&vc, result);
done:
    core_secret_free(owned_pin);
    hf_root_close(tmp.root);
    hf_hsm_close(tmp.hsm);
    hf_store_close(tmp.store);
    return rv;
}

void hf_core_close(struct hf_core *core)
{
    if (core == NULL) return;
    /* Before the core's own token: a member may be served by the same backend module. */
    core_pools_close(core);
    pthread_cond_destroy(&core->pools_cond);
    pthread_mutex_destroy(&core->pools_lock);
    hf_audit_close(core->audit);
    hf_local_close(core->local);
    hf_root_close(core->root);
    hf_hsm_close(core->hsm);
    hf_store_close(core->store);
    hf_policy_close(core->policy);
    free(core);
}

void hf_core_abandon(struct hf_core *core)
{
    if (core == NULL) return;
    hf_audit_abandon(core->audit);
    hf_root_abandon(core->root);
    hf_hsm_abandon(core->hsm);
    /* Opened pools too: their probe threads are gone in the child, their members' module state
     * is the parent's (pool.h has no abandon yet: a child using pool keys opens them afresh
     * through its new core). Everything else is leaked on purpose, core included: the local cache's
     * and the store's locks may be held by parent threads that do not exist in the child, so
     * closing them could deadlock, and a SQLite connection must not be used (even closed) across
     * fork(). The child opens a core of its own. */
}

/* A blob that does not open as this version's (moved from another row, or damaged): recorded
 * like a policy MAC failure, since it means the store was changed outside Holdfast. */
static void material_refused(struct hf_core *core, const struct hf_key_version *v)
{
    struct hf_audit_record rec = {.api = "core",
                                  .operation = "policy.check",
                                  .key_uuid = v->key_uuid,
                                  .version = v->version,
                                  .detail = "wrapped material does not belong to this version",
                                  .result = CKR_WRAPPED_KEY_INVALID,
                                  .authenticated = true};

    if (hf_audit_append(core->audit, &rec, NULL) != CKR_OK)
        hf_log_error("audit log failed: policy.check on %s is not recorded", v->key_uuid);
}

CK_RV hf_core_material(struct hf_core *core, const struct hf_key_version *v,
                       struct hf_material **out)
{
    return hf_core_material_as(core, HF_ALG_AES, v, out);
}

CK_RV hf_core_material_as(struct hf_core *core, enum hf_alg alg, const struct hf_key_version *v,
                          struct hf_material **out)
{
    if (core == NULL || v == NULL || out == NULL) return CKR_ARGUMENTS_BAD;
    /* A pool version's material never leaves its member: only hf_core_key_gcm, _aes, _cmac,
     * _kw and hf_core_key_rsa_* use it. */
    if (hf_key_version_is_in_pool(v)) return CKR_KEY_FUNCTION_NOT_PERMITTED;
    CK_RV rv = hf_local_material_as(core->local, alg, v, out);
    if (rv == CKR_WRAPPED_KEY_INVALID) material_refused(core, v);
    return rv;
}

/* The pool and member of a live pool version (the pool opened on first use). */
/* Where v's key is, for an operation that takes a key of alg: its unwrapped material (*m, the
 * caller's to unref) when it is local, else the pool and member that hold it (*m NULL). */
static CK_RV version_at(struct hf_core *core, const struct hf_key *key,
                        const struct hf_key_version *v, enum hf_alg alg, struct hf_material **m,
                        struct hf_pool **pool, size_t *member)
{
    *m = NULL;
    if (core == NULL || key == NULL || v == NULL) return CKR_ARGUMENTS_BAD;
    if (key->alg != alg) return CKR_KEY_TYPE_INCONSISTENT;
    if (!hf_key_version_is_in_pool(v)) return hf_core_material_as(core, key->alg, v, m);
    if (v->state == HF_STATE_DESTROYED) return CKR_KEY_HANDLE_INVALID;
    return core_pool_version(core, v, pool, member);
}

CK_RV hf_core_key_gcm(struct hf_core *core, const struct hf_key *key,
                      const struct hf_key_version *v, bool encrypt, const unsigned char *iv,
                      size_t ivlen, const unsigned char *aad, size_t aadlen, size_t taglen,
                      const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen)
{
    struct hf_material *m = NULL;
    struct hf_pool *pool = NULL;
    size_t member = 0;
    CK_RV rv;

    if ((rv = version_at(core, key, v, HF_ALG_AES, &m, &pool, &member)) != CKR_OK) return rv;
    if (m != NULL) {
        if (encrypt)
            rv = hf_aes_gcm_encrypt(m, iv, ivlen, aad, aadlen, taglen, in, inlen, out, outlen);
        else
            rv = hf_aes_gcm_decrypt(m, iv, ivlen, aad, aadlen, taglen, in, inlen, out, outlen);
        hf_material_unref(m);
        return rv;
    }
    return hf_pool_key_gcm(pool, member, v->uuid, encrypt, iv, ivlen, aad, aadlen, taglen, in,
                           inlen, out, outlen);
}

CK_RV hf_core_key_aes(struct hf_core *core, const struct hf_key *key,
                      const struct hf_key_version *v, enum hf_aes_mode mode, bool enc,
                      const unsigned char *iv, unsigned ctr_bits, const unsigned char *in,
                      size_t inlen, unsigned char *out, size_t *outlen)
{
    struct hf_material *m = NULL;
    struct hf_pool *pool = NULL;
    size_t member = 0, need = 0;
    CK_RV rv;

    if (outlen == NULL) return CKR_ARGUMENTS_BAD;
    if ((rv = version_at(core, key, v, HF_ALG_AES, &m, &pool, &member)) != CKR_OK) return rv;
    if (m != NULL) {
        rv = hf_aes_cipher(m, mode, enc, iv, ctr_bits, in, inlen, out, outlen);
        hf_material_unref(m);
        return rv;
    }
    /* The member is asked only for the work itself: lengths and sizes are answered here, as
     * hf_aes_cipher answers them for a local key. */
    if ((rv = hf_aes_cipher_size(mode, enc, iv, ctr_bits, inlen, &need)) != CKR_OK) return rv;
    if (out == NULL) {
        *outlen = need;
        return CKR_OK;
    }
    return hf_pool_key_aes(pool, member, v->uuid, mode, enc, iv, ctr_bits, in, inlen, out, outlen);
}

CK_RV hf_core_key_cmac(struct hf_core *core, const struct hf_key *key,
                       const struct hf_key_version *v, const unsigned char *in, size_t inlen,
                       unsigned char out[HF_AES_BLOCK])
{
    struct hf_material *m = NULL;
    struct hf_pool *pool = NULL;
    size_t member = 0;
    CK_RV rv;

    if ((rv = version_at(core, key, v, HF_ALG_AES, &m, &pool, &member)) != CKR_OK) return rv;
    if (m != NULL) {
        rv = hf_aes_cmac(m, in, inlen, out);
        hf_material_unref(m);
        return rv;
    }
    return hf_pool_key_cmac(pool, member, v->uuid, in, inlen, out);
}

CK_RV hf_core_key_kw(struct hf_core *core, const struct hf_key *key, const struct hf_key_version *v,
                     bool pad, bool wrap, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen)
{
    struct hf_material *m = NULL;
    struct hf_pool *pool = NULL;
    size_t member = 0;
    CK_RV rv;

    if ((rv = version_at(core, key, v, HF_ALG_AES, &m, &pool, &member)) != CKR_OK) return rv;
    if (m != NULL) {
        rv = wrap ? hf_aes_kw_wrap(m, pad, in, inlen, out, outlen)
                  : hf_aes_kw_unwrap(m, pad, in, inlen, out, outlen);
        hf_material_unref(m);
        return rv;
    }
    return hf_pool_key_kw(pool, member, v->uuid, pad, wrap, in, inlen, out, outlen);
}

/* RSA decrypt (sign false) or RSA or ECDSA sign (alg) with v's private key, wherever it is. */
static CK_RV key_asym(struct hf_core *core, const struct hf_key *key,
                      const struct hf_key_version *v, enum hf_alg alg, bool sign,
                      const struct hf_asym_params *p, const unsigned char *in, size_t inlen,
                      unsigned char *out, size_t *outlen)
{
    struct hf_material *m = NULL;
    struct hf_pool *pool = NULL;
    size_t member = 0, bytes = key != NULL ? (key->bits + 7) / 8 : 0;
    CK_RV rv;

    if (p == NULL) return CKR_ARGUMENTS_BAD;
    if ((rv = version_at(core, key, v, alg, &m, &pool, &member)) != CKR_OK) return rv;
    if (m != NULL) {
        rv = sign ? hf_asym_sign(m, p, in, inlen, out, outlen)
                  : hf_asym_decrypt(m, p, in, inlen, out, outlen);
        hf_material_unref(m);
        return rv;
    }
    if (alg == HF_ALG_EC)
        return hf_pool_key_ecdsa(pool, member, v->uuid, p, bytes, in, inlen, out, outlen);
    return hf_pool_key_rsa(pool, member, v->uuid, sign, p, bytes, in, inlen, out, outlen);
}

CK_RV hf_core_key_rsa_decrypt(struct hf_core *core, const struct hf_key *key,
                              const struct hf_key_version *v, const struct hf_asym_params *p,
                              const unsigned char *in, size_t inlen, unsigned char *out,
                              size_t *outlen)
{
    return key_asym(core, key, v, HF_ALG_RSA, false, p, in, inlen, out, outlen);
}

CK_RV hf_core_key_rsa_sign(struct hf_core *core, const struct hf_key *key,
                           const struct hf_key_version *v, const struct hf_asym_params *p,
                           const unsigned char *in, size_t inlen, unsigned char *out,
                           size_t *outlen)
{
    return key_asym(core, key, v, HF_ALG_RSA, true, p, in, inlen, out, outlen);
}

CK_RV hf_core_key_ecdsa_sign(struct hf_core *core, const struct hf_key *key,
                             const struct hf_key_version *v, const struct hf_asym_params *p,
                             const unsigned char *in, size_t inlen, unsigned char *out,
                             size_t *outlen)
{
    return key_asym(core, key, v, HF_ALG_EC, true, p, in, inlen, out, outlen);
}

CK_RV hf_core_key_ecdh(struct hf_core *core, const struct hf_key *key,
                       const struct hf_key_version *v, const unsigned char *point, size_t point_len,
                       unsigned char *z, size_t zlen)
{
    struct hf_material *m = NULL;
    struct hf_pool *pool = NULL;
    size_t member = 0;
    CK_RV rv;

    /* A local key's Z is made from its material by the caller, which holds it already. */
    if (v != NULL && !hf_key_version_is_in_pool(v)) return CKR_KEY_FUNCTION_NOT_PERMITTED;
    if ((rv = version_at(core, key, v, HF_ALG_EC, &m, &pool, &member)) != CKR_OK) return rv;
    return hf_pool_key_ecdh(pool, member, v->uuid, point, point_len, z, zlen);
}

CK_RV hf_core_key_ed25519_sign(struct hf_core *core, const struct hf_key *key,
                               const struct hf_key_version *v, const unsigned char *in,
                               size_t inlen, unsigned char *out, size_t *outlen)
{
    struct hf_material *m = NULL;
    struct hf_pool *pool = NULL;
    size_t member = 0;
    CK_RV rv;

    if ((rv = version_at(core, key, v, HF_ALG_ED25519, &m, &pool, &member)) != CKR_OK) return rv;
    if (m != NULL) {
        rv = hf_ed25519_sign(m, in, inlen, out, outlen);
        hf_material_unref(m);
        return rv;
    }
    return hf_pool_key_eddsa(pool, member, v->uuid, in, inlen, out, outlen);
}
