/* Holdfast's one configuration file (INI, parsed with libinih).
 *
 *   [holdfast] state_dir, node            [token] label
 *   [store]    path                        [audit] path, sync_interval_ms, success_events,
 *                                                  checkpoint_interval_ms
 *   [hsm]      module, token, pin | pin_file | pin_env, so_pin_file, softhsm2_conf, root_kek_label,
 *              concurrency
 *   [hsm.NAME] module, token, pin | pin_file | pin_env, concurrency: more members of the root,
 *              then an HSM pool (root.h) whose first member is [hsm], named "hsm"
 *   [cache]    max_keys
 *
 * conf/holdfast.conf.sample documents every key. Relative paths are taken from state_dir. */
#ifndef HF_CONFIG_H
#define HF_CONFIG_H

/* [audit] reserve's default: a few minutes of key operations at full speed (~450-byte records). */
#define HF_CONFIG_AUDIT_RESERVE (64ull << 20)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkcs11/module/pkcs11-compat.h"

/* [hsm.NAME]: a member of the root beyond [hsm], a token holding clones of its keys (root.h). */
#define HF_CONFIG_ROOT_MEMBERS_MAX 7 /* beside [hsm]: root.h's HF_ROOT_MEMBERS_MAX in all */
#define HF_CONFIG_ROOT_NAME_MAX 32   /* [a-z0-9-], as pool members'; "hsm" is [hsm]'s */
struct hf_config_root_member {
    char *name;
    char *module;         /* required: the backend's PKCS#11 module */
    char *token;          /* default: [hsm] token (a clone keeps its label) */
    char *pin;            /* resolved from pin, pin_file or pin_env; secret, cleansed on free; NULL:
                           * none given, [hsm]'s PIN is used (a clone keeps its PIN) */
    char *pin_file;       /* taken from state_dir when relative; must exist at load */
    char *pin_env;        /* must be set at load */
    unsigned concurrency; /* calls in flight at most (4) */
    unsigned line;        /* of its section's first key, for messages */
};

struct hf_config {
    char *path;        /* the file it was read from, NULL for defaults only */
    char *state_dir;   /* [holdfast] state_dir */
    char *node;        /* [holdfast] node: names this process's audit records (default: hostname) */
    char *token_label; /* [token] label: the Holdfast PKCS#11 token's label (default "holdfast") */
    unsigned pin_attempts; /* [token] pin_attempts: wrong PINs in a row that lock one (10) */
    /* [token] pin_iterations: PBKDF2 rounds of a PIN record written from now on (100000); a record
     * keeps the count it was made with, so changing it needs no migration. */
    unsigned pin_iterations;
    char *store_path;      /* [store] path (default state_dir/holdfast.db) */
    char *hsm_module;      /* [hsm] module: backend PKCS#11 module path (default: SoftHSMv2) */
    char *hsm_token;       /* [hsm] token: label of the backend token holding the root KEK */
    char *hsm_pin;      /* resolved from [hsm] pin, pin_file or pin_env; secret, cleansed on free */
    char *hsm_pin_file; /* [hsm] pin_file (default state_dir/hsm.pin, written by init); NULL when
                         * pin or pin_env is the source */
    char *hsm_pin_env;  /* [hsm] pin_env: name of the environment variable holding the PIN */
    char *hsm_so_pin_file; /* [hsm] so_pin_file (default state_dir/hsm.so-pin, written by init) */
    char *
        softhsm2_conf; /* [hsm] softhsm2_conf: exported as SOFTHSM2_CONF before the backend loads */
    char *kek_label;   /* [hsm] root_kek_label (default "holdfast-root-kek") */
    char *audit_path;  /* [audit] path (default state_dir/audit.log) */
    unsigned
        audit_sync_interval_ms; /* [audit] sync_interval_ms: fdatasync at least this often (5) */
    bool audit_success_events;  /* [audit] success_events (true) */
    uint64_t audit_reserve;     /* [audit] reserve: free bytes kept for key operations (64m) */
    uint64_t audit_alarm;       /* [audit] alarm: free bytes under which to warn (0: 2 x reserve) */
    unsigned cache_max_keys;    /* [cache] max_keys: unwrapped key versions kept (4096) */
    /* [audit] checkpoint_interval_ms: a signed checkpoint at most this often (1000) */
    unsigned audit_checkpoint_interval_ms;
    /* [pools] queue_max and queue_wait_ms: this process's callers that may wait for a busy HSM
     * pool, and for how long, before the API's throttling answer (pool.h). Per node, not in the
     * store: they weigh this node's threads against its clients' timeouts. */
    unsigned pool_queue_max, pool_queue_wait_ms;
    /* [pools] call_timeout_ms: a member whose call runs longer goes out of service (pool.h) */
    unsigned pool_call_timeout_ms;
    /* [hsm] concurrency: the first member's limit when the root is a pool (4) */
    unsigned hsm_concurrency;
    /* [hsm.NAME] sections in file order; none: the root is [hsm]'s token alone. */
    struct hf_config_root_member root_members[HF_CONFIG_ROOT_MEMBERS_MAX];
    size_t n_root_members;
};

/* Path of the config file to use when none is given: $HOLDFAST_CONF, else
 * $sysconfdir/holdfast/holdfast.conf. Never NULL; static storage. */
const char *hf_config_default_path(void);

/* Fills cfg with defaults under state_dir (NULL: $HOLDFAST_STATE_DIR or /var/lib/holdfast).
 * cfg's previous contents are ignored (free a filled one first); the same holds for load. */
CK_RV hf_config_set_defaults(struct hf_config *cfg, const char *state_dir);

/* Reads path over the defaults (a relative state_dir is taken from the file's directory). A
 * missing pin file is not an error here (init creates it);
 * a syntax error, an unknown section or key, or a bad number is CKR_ARGUMENTS_BAD with a
 * human-readable reason ("holdfast.conf:12: unknown key 'foo' in [store]") in err. */
CK_RV hf_config_load(const char *path, struct hf_config *cfg, char *err, size_t errlen);

/* What a program uses when told no file: $HOLDFAST_CONF (which must exist), else the system
 * file if there is one, else the defaults under $HOLDFAST_STATE_DIR. The module and the CLI both
 * start here, so they always agree on which key store they open. */
CK_RV hf_config_load_default(struct hf_config *cfg, char *err, size_t errlen);

/* (Re)reads the HSM PIN from pin_file / pin_env into cfg->hsm_pin. */
CK_RV hf_config_resolve_pin(struct hf_config *cfg, char *err, size_t errlen);

void hf_config_free(struct hf_config *cfg);

#endif
