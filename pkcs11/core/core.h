/* The core: one opened key store (config + metadata store + HSM + local key source + audit) and
 * the key-management operations both the PKCS#11 module and the `holdfast` CLI perform. Each
 * management operation checks the KMIP rules, changes the store in one transaction and writes
 * its audit record; it fails whole if the record cannot be written.
 *
 * Ownership: hf_core_open's result is the caller's (hf_core_close). Getters return borrowed
 * pointers that live as long as the core. */
#ifndef HF_CORE_H
#define HF_CORE_H

#include "audit.h"
#include "config.h"
#include "crypto-sym.h"
#include "crypto.h"
#include "key.h"
#include "pool.h"
#include "root.h"
#include "source-local.h"
#include "store.h"

struct hf_core;

/* Who asked, for the audit record of a management operation. */
struct hf_actor {
    const char *api;    /* "cli", "pkcs11" */
    const char *caller; /* e.g. "uid:1000" */
};

struct hf_key_spec {
    const char *name;
    enum hf_alg alg;
    unsigned bits;
    unsigned long usage; /* 0: hf_usage_default(alg) */
    unsigned long state; /* 0: HF_STATE_ACTIVE */
    const char *owner;   /* NULL: actor->caller */
    bool exportable;
    const struct hf_label *labels;
    size_t n_labels;
    /* NULL or "local": wrapped in the store (source-local.h); "pool:NAME": generated inside a
     * member of HSM pool NAME and never out of it (source-pool.h: AES, RSA, EC or Ed25519, as
     * hf_core_pool_alg_is_served says; never exportable, not imported). */
    const char *source;
};

/* Creates what the embedded default needs, idempotently: state_dir (0700), the SoftHSMv2
 * config and token (with random PINs written 0600 to the pin files unless they exist), the root
 * KEK, the store, and the Holdfast token's user and SO PINs (PBKDF2 hashes in the store; a PIN
 * already set is kept unless reset is true and a new one is given). */
CK_RV hf_core_init(struct hf_config *cfg, const char *so_pin, const char *user_pin, bool reset);
/* After hf_core_init: sets the gateway PIN unless one is set and reset is false (*changed says
 * whether it was set), with an audit record. */
CK_RV hf_core_init_gateway_pin(const struct hf_config *cfg, const char *pin, bool reset,
                               bool *changed);

/* Token metadata names in the store (hf_store_meta_get): the token serial (16 hex digits, made by
 * init) and the PIN records. */
#define HF_META_TOKEN_SERIAL "token.serial"
#define HF_META_PIN_SO "pin.so"
#define HF_META_PIN_USER "pin.user"
#define HF_META_PIN_GATEWAY "pin.gateway"
/* The root's reference key check values (root.h; core-root.c), written by `holdfast init`. */
#define HF_META_ROOT_REFERENCE "root.reference"

/* Opens an initialised key store. CKR_TOKEN_NOT_RECOGNIZED when init has not run. cfg is
 * borrowed: it must outlive the core (hf_core_config returns it). Installs the policy MAC checks
 * on the store (policy.h); the first open of a store whose token has no policy MAC key yet makes
 * it and migrates the store's rows (MACs, material rewrapped bound to its row). */
CK_RV hf_core_open(const struct hf_config *cfg, struct hf_core **out);
void hf_core_close(struct hf_core *core);
/* After fork(), in the child: drop the parent's state without touching its threads or locks
 * (nothing is freed, not even core; open a new one). */
void hf_core_abandon(struct hf_core *core);

/* Verifies the audit log at path (NULL: cfg's) with the token (the keyed chain's keys) and the
 * store (its latest checkpoint), writing no record (hf_audit_verify_keyed). The result of the
 * verification; an error opening the store or the token (result->reason empty) otherwise. */
CK_RV hf_core_audit_verify(const struct hf_config *cfg, const char *path, bool allow_torn_tail,
                           bool strict, struct hf_audit_verify_result *result);

const struct hf_config *hf_core_config(struct hf_core *core);
struct hf_store *hf_core_store(struct hf_core *core);
struct hf_audit *hf_core_audit(struct hf_core *core);

/* Token PINs (PBKDF2-HMAC-SHA256 with a random salt, compared in constant time). PINs are 4..255
 * bytes: set answers CKR_PIN_LEN_RANGE outside that, check CKR_PIN_INCORRECT (C_Login has no
 * CKR_PIN_LEN_RANGE); check answers CKR_USER_PIN_NOT_INITIALIZED when no PIN is set. */
/* HF_USER_GATEWAY: a second CKU_USER identity, the gateway's. A login with its PIN may attach
 * request contexts and write request records (HF_SetRequestContext, HF_AuditRequest*): records in
 * another API's name. An ordinary PKCS#11 caller, logged in with the user PIN, may not. */
enum hf_user { HF_USER_SO = 0, HF_USER_NORMAL = 1, HF_USER_GATEWAY = 2 };
CK_RV hf_core_pin_check(struct hf_core *core, enum hf_user user, const char *pin, size_t len);
CK_RV hf_core_pin_set(struct hf_core *core, enum hf_user user, const char *pin, size_t len);
bool hf_core_pin_is_set(struct hf_core *core, enum hf_user user);

/* pin-attempts.c: hf_core_pin_check counted against [token] pin_attempts, for the SO and the
 * user (the gateway's PIN is a service's, in a file, not a person's guess: never counted).
 * Locked: CKR_PIN_LOCKED without looking at the PIN; a wrong PIN counts one, atomically across
 * processes; a right one clears the count. as_gateway (user only, may be NULL): the gateway's
 * PIN is accepted too, then *as_gateway is true; it is tried before a failure is counted, and
 * still works while the user's PIN is locked. */
CK_RV hf_core_pin_login(struct hf_core *core, enum hf_user user, const char *pin, size_t len,
                        bool *as_gateway);
/* The wrong PINs in a row so far (0 on a store error), and the limit. */
uint64_t hf_core_pin_failures(struct hf_core *core, enum hf_user user);
unsigned hf_core_pin_attempts(struct hf_core *core);
/* Clears the count: C_InitPIN by the SO for the user (who NULL: its caller records it), or
 * `holdfast token unlock` (who given: one "pin.unlock" audit record, failed or not). */
CK_RV hf_core_pin_unlock(struct hf_core *core, enum hf_user user, const struct hf_actor *who);
/* Removes a certificate or data object (store.h) by its row id, with one "object.destroy"
 * record: CKR_KEY_HANDLE_INVALID when there is none (core-object.c). */
CK_RV hf_core_object_delete(struct hf_core *core, int64_t id, const struct hf_actor *who);

/* Key management. out/vout may be NULL; who may be NULL (recorded as api "core"). Every call,
 * failed ones included, writes one audit record; a change is recorded after it is committed.
 * Results: CKR_KEY_HANDLE_INVALID (no such key or link), CKR_ATTRIBUTE_VALUE_INVALID (bad or
 * taken name, bad usage or label, a state move KMIP forbids, duplicate link),
 * CKR_KEY_SIZE_RANGE (alg/bits), CKR_KEY_FUNCTION_NOT_PERMITTED (rotating a compromised or
 * destroyed key), CKR_ARGUMENTS_BAD (NULL arguments, unknown link type), CKR_HF_AUDIT_FAILED (the
 * record could not be written: key operations stop; a committed change stands). set_state to
 * HF_STATE_DESTROYED destroys (as hf_core_key_destroy). */
CK_RV hf_core_key_create(struct hf_core *core, const struct hf_key_spec *spec,
                         const struct hf_actor *who, struct hf_key *out,
                         struct hf_key_version *vout);
/* Like create, with given material (raw AES bytes or PKCS#8 DER): C_UnwrapKey, C_CreateObject. */
CK_RV hf_core_key_import(struct hf_core *core, const struct hf_key_spec *spec,
                         const unsigned char *bytes, size_t len, const struct hf_actor *who,
                         struct hf_key *out, struct hf_key_version *vout);
CK_RV hf_core_key_rotate(struct hf_core *core, const char *ref, const struct hf_actor *who,
                         struct hf_key_version *vout);
CK_RV hf_core_key_set_state(struct hf_core *core, const char *ref, unsigned long state,
                            const struct hf_actor *who);
CK_RV hf_core_key_destroy(struct hf_core *core, const char *ref, const struct hf_actor *who);
/* One version's own state (hf_version_state_can_move), audited as "key.version_state" with
 * the old and new state; destroyed erases that version's material. The current version of an
 * active key stays usable for new data: deactivating or destroying it is
 * CKR_KEY_FUNCTION_NOT_PERMITTED (rotate first); marking it compromised is allowed (it stops new
 * encryptions at once). CKR_KEY_HANDLE_INVALID: no such key or version. */
CK_RV hf_core_version_set_state(struct hf_core *core, const char *ref, unsigned version,
                                unsigned long state, const struct hf_actor *who);
/* value NULL removes the label. */
CK_RV hf_core_key_label_set(struct hf_core *core, const char *ref, const char *name,
                            const char *value, const struct hf_actor *who);

/* type: a registered link type (hf_core_link_type_add; seeded with aws-xks, gcp-ekm, gws-cse,
 * oci, sap, dke): CKR_ARGUMENTS_BAD for another. */
CK_RV hf_core_link_add(struct hf_core *core, const char *type, const char *ext_id,
                       const char *key_ref, const struct hf_actor *who);
CK_RV hf_core_link_set_blocked(struct hf_core *core, const char *type, const char *ext_id,
                               bool blocked, const struct hf_actor *who);

/* Registers link type name ([a-z0-9-]{1,32}; CKR_ARGUMENTS_BAD otherwise), idempotently:
 * *added (may be NULL) says whether it is new. Audited as "link.type_add" either way, since
 * holdfastd registers its plugins' types at every start. */
CK_RV hf_core_link_type_add(struct hf_core *core, const char *name, const struct hf_actor *who,
                            bool *added);

/* Gives every store row that has no policy MAC one, as the first open of an older store does:
 * for a store restored from a backup made before policy MACs, or a first migration cut short
 * (every such row is refused until then). The rows are taken as they are, so whoever runs this
 * vouches for them; a row whose MAC is wrong stays refused. Audited as "policy.adopt" with the
 * count in *n (may be NULL). */
CK_RV hf_core_policy_adopt(struct hf_core *core, const struct hf_actor *who, size_t *n);

/* Whether keys of alg may be kept in an HSM pool (`key create --source hsm:POOL`): AES, RSA, EC
 * and Ed25519; generic secrets not (no member path for HMAC yet). */
bool hf_core_pool_alg_is_served(enum hf_alg alg);

/* HSM pools (core-pool.c; store.h has the model). Each call writes one audit record ("pool.add",
 * "pool.remove", "pool.get", "pool.list", "pool.open", "pool.probe"), failed ones included; who
 * may be NULL (api "core").
 * add: pool->name, mode and members as the caller gives them (borrowed); created, updated and
 * the MAC are filled in. CKR_ATTRIBUTE_VALUE_INVALID for content store.h's rules refuse (a
 * module path that is not absolute, no or two PIN sources, ...; the reason is logged) or a taken
 * name. remove: CKR_KEY_HANDLE_INVALID when there is no such pool, CKR_ATTRIBUTE_VALUE_INVALID
 * while a key that is not destroyed is kept in it (source "pool:NAME"). get and list:
 * CKR_HF_POLICY_INVALID for a pool whose row or members were edited outside Holdfast (list
 * leaves it out); out and *pools are the caller's (hf_store_pool_clear, hf_core_pools_free). */
CK_RV hf_core_pool_add(struct hf_core *core, struct hf_store_pool *pool,
                       const struct hf_actor *who);
CK_RV hf_core_pool_remove(struct hf_core *core, const char *name, const struct hf_actor *who);
CK_RV hf_core_pool_get(struct hf_core *core, const char *name, const struct hf_actor *who,
                       struct hf_store_pool *out);
CK_RV hf_core_pool_list(struct hf_core *core, const struct hf_actor *who,
                        struct hf_store_pool **pools, size_t *n);
void hf_core_pools_free(struct hf_store_pool *pools, size_t n);

/* Opens the pool's executor (pool.h) on this node: each member's PIN read from its pin_file
 * (the secret-file rule of pkcs11/common/secret-file.h, group-readable refused too) or its
 * pin_env, a lock file STATE_DIR/pool.NAME.MEMBER.lock per member, then hf_pool_open (opts may
 * be NULL; as there); the PINs are wiped once it has its copies. A PIN source that fails is
 * CKR_PIN_INVALID, a member named by serial alone CKR_FUNCTION_NOT_SUPPORTED (hsm.c finds
 * tokens by label), the reason logged, never the PIN. *out is the caller's (hf_pool_close). */
CK_RV hf_core_pool_open(struct hf_core *core, const char *name, const struct hf_pool_options *opts,
                        struct hf_pool **out);

/* Opens each member on its own and probes it (hf_hsm_open, hf_hsm_probe), so that one member's
 * failure (a wrong PIN, which fails hf_pool_open whole) is told apart from the others': one
 * result per member, in order. CKR_OK when the pool could be read, whatever the members said. */
struct hf_core_pool_probe {
    char *member;     /* owned */
    CK_RV rv;         /* CKR_OK: the member answers */
    char reason[520]; /* a PIN source's problem in words, or "" (then rv says it) */
};
CK_RV hf_core_pool_probe(struct hf_core *core, const char *name, const struct hf_actor *who,
                         struct hf_core_pool_probe **results, size_t *n);
void hf_core_pool_probes_free(struct hf_core_pool_probe *results, size_t n);

/* Re-seeds member of export pool name (a freshly initialised token with the member's label and
 * PIN, opened alone: the other members may be down) from the store: the pool's replication key
 * and every live version, unwrapped inside the token from their blobs under the pool's backup KEK
 * (pool-backup.h); objects already there are left. *restored: objects made. Audited
 * ("pool.restore"). CKR_ATTRIBUTE_VALUE_INVALID for a pool not in export mode,
 * CKR_KEY_HANDLE_INVALID for no such pool or member or no backup yet, the token's errors. */
CK_RV hf_core_pool_restore(struct hf_core *core, const char *name, const char *member,
                           const struct hf_actor *who, size_t *restored);

/* One pool member's live status on this node (core-pool-status.c), for health answers, metrics
 * and `holdfast pool show`: its pool's definition beside the executor's figures. */
#define HF_CORE_POOL_MODEL_MAX 96
struct hf_core_pool_live {
    char pool[HF_POOL_NAME_MAX + 1];
    char member[HF_POOL_NAME_MAX + 1];
    char model[HF_CORE_POOL_MODEL_MAX]; /* from the definition: "<module file> token <label>" */
    CK_RV open_rv; /* CKR_OK, or why this node could not open the pool (figures then zero) */
    struct hf_pool_member_status status; /* status.name is NULL: member names it */
    struct hf_pool_queue_status queue;   /* the pool's, repeated in each of its members */
};
/* The members of pool name in its order; the pool is opened (and kept, as a key's first use
 * does) when this node has not yet; a pool that cannot open still lists its members, with
 * open_rv saying why. Reads no backend once the pool is open: hf_pool_status's snapshot.
 * Unaudited (a read of state, as frequent as metrics scrapes). *out malloc'd: free(). */
CK_RV hf_core_pool_status(struct hf_core *core, const char *name, struct hf_core_pool_live **out,
                          size_t *n);
/* The same for every pool in the store, pool after pool. */
CK_RV hf_core_pools_status(struct hf_core *core, struct hf_core_pool_live **out, size_t *n);
/* The upper bound in microseconds of the latency bucket where quantile q (0..1) of the calls
 * counted in latency[] falls (pool.h's buckets: [2^i, 2^(i+1)) us); 0 when nothing was counted. */
uint64_t hf_core_pool_latency_quantile_us(const uint64_t latency[HF_POOL_LATENCY_BUCKETS],
                                          double q);

/* The root's members on this node (core-root.c; root.h): with [hsm.NAME] sections the root is a
 * pool of [hsm] ("hsm") and those members, which must hold the same keys. hf_core_pools_status
 * lists them too, as the pool HF_CORE_ROOT_POOL (no store pool can have that name), so they
 * show in holdfastd's /metrics and health answers beside the HSM pools' members. */
#define HF_CORE_ROOT_POOL "(root)"
struct hf_core_root_member {
    char name[HF_CONFIG_ROOT_NAME_MAX + 1];
    char model[HF_CORE_POOL_MODEL_MAX];  /* from the config: "<module file> token <label>" */
    struct hf_pool_member_status status; /* status.name is NULL: name names it */
    enum hf_root_check check;
    char differs[256]; /* the key it lacks or holds otherwise (check MISSING, DIFFERS), or "" */
};
/* The open core's root members, in config order ([hsm] first); *n 0 (*out NULL) for a root of
 * one token. Reads no backend. *out malloc'd: free(). */
CK_RV hf_core_root_status(struct hf_core *core, struct hf_core_root_member **out, size_t *n);
/* The same from a root opened over cfg's members for the call, checked against the store's
 * reference when it has one (`holdfast init`'s report, after which members that lack the keys
 * are to be cloned from [hsm]). */
CK_RV hf_core_root_check(const struct hf_config *cfg, struct hf_core_root_member **out, size_t *n);
/* Whether the store holds the root's reference key check values, against which every member of a
 * root pool is checked at open (written by `holdfast init`; a store made before gets them at the
 * first open of a pool where [hsm] passes). */
CK_RV hf_core_root_reference_is_stored(struct hf_core *core, bool *stored);

/* The usable material of a version (local source: unwrapped once, then cached). New reference.
 * A pool version has none here: CKR_KEY_FUNCTION_NOT_PERMITTED (hf_core_key_gcm and
 * hf_core_key_rsa_* use it). */
CK_RV hf_core_material(struct hf_core *core, const struct hf_key_version *v,
                       struct hf_material **out);
/* The same naming the key's algorithm (hf_local_material_as): generic secrets need it. */
CK_RV hf_core_material_as(struct hf_core *core, enum hf_alg alg, const struct hf_key_version *v,
                          struct hf_material **out);

/* AES-GCM with version v of key, wherever its material is: in process for a local key, in the
 * member that holds it for a pool key (source-pool.h; its pool is opened on first use and kept
 * until hf_core_close). Arguments and results as hf_aes_gcm_encrypt/decrypt (*outlen: out's
 * capacity, which must hold the result), plus the pool's: HF_POOL_RV_THROTTLED,
 * HF_POOL_RV_UNAVAILABLE, and the pool's open error (CKR_KEY_HANDLE_INVALID: no such pool). */
CK_RV hf_core_key_gcm(struct hf_core *core, const struct hf_key *key,
                      const struct hf_key_version *v, bool encrypt, const unsigned char *iv,
                      size_t ivlen, const unsigned char *aad, size_t aadlen, size_t taglen,
                      const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen);

/* AES-ECB, -CBC, -CBC-PAD or -CTR (hf_aes_cipher's arguments and results, the two-call
 * convention included) and AES-CMAC (hf_aes_cmac's) with version v of key (an AES key), wherever
 * its material is, as hf_core_key_gcm: in process, or in the member that holds it with the same
 * mechanism (hf_pool_key_aes / hf_pool_key_cmac), plus the pool's results. A size query, or a
 * length the mode refuses, is answered without the pool. */
CK_RV hf_core_key_aes(struct hf_core *core, const struct hf_key *key,
                      const struct hf_key_version *v, enum hf_aes_mode mode, bool enc,
                      const unsigned char *iv, unsigned ctr_bits, const unsigned char *in,
                      size_t inlen, unsigned char *out, size_t *outlen);
CK_RV hf_core_key_cmac(struct hf_core *core, const struct hf_key *key,
                       const struct hf_key_version *v, const unsigned char *in, size_t inlen,
                       unsigned char out[HF_AES_BLOCK]);

/* AES key wrap (RFC 3394, or RFC 5649 when pad) of in (wrap true) or unwrap of the blob in, with
 * version v of key (an AES key) wherever it is, as hf_core_key_aes: in process (hf_aes_kw_wrap /
 * hf_aes_kw_unwrap, whose arguments and results these take) or in the member that holds it
 * (hf_pool_key_kw, pool-wrap.h), plus the pool's results. */
CK_RV hf_core_key_kw(struct hf_core *core, const struct hf_key *key, const struct hf_key_version *v,
                     bool pad, bool wrap, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen);

/* RSA decryption and signature with version v of key (an RSA key), wherever its private key
 * is, as hf_core_key_gcm: in process (hf_asym_decrypt / hf_asym_sign, whose arguments and
 * results these take) or in the member that holds it (hf_pool_key_rsa: the same paddings and
 * parameters, and the same CKR_ENCRYPTED_DATA_INVALID for a ciphertext that does not decrypt),
 * plus the pool's results. Public-key work needs neither: v->public_der has the key. */
CK_RV hf_core_key_rsa_decrypt(struct hf_core *core, const struct hf_key *key,
                              const struct hf_key_version *v, const struct hf_asym_params *p,
                              const unsigned char *in, size_t inlen, unsigned char *out,
                              size_t *outlen);
CK_RV hf_core_key_rsa_sign(struct hf_core *core, const struct hf_key *key,
                           const struct hf_key_version *v, const struct hf_asym_params *p,
                           const unsigned char *in, size_t inlen, unsigned char *out,
                           size_t *outlen);

/* ECDSA and Ed25519 signatures with version v of key (an EC, or an Ed25519, key), wherever its
 * private key is, as hf_core_key_rsa_sign: in process (hf_asym_sign / hf_ed25519_sign, whose
 * arguments and results these take) or in the member that holds it (hf_pool_key_ecdsa /
 * hf_pool_key_eddsa: the same signatures; a DER size query gets an upper bound), plus the
 * pool's results. */
CK_RV hf_core_key_ecdsa_sign(struct hf_core *core, const struct hf_key *key,
                             const struct hf_key_version *v, const struct hf_asym_params *p,
                             const unsigned char *in, size_t inlen, unsigned char *out,
                             size_t *outlen);
CK_RV hf_core_key_ed25519_sign(struct hf_core *core, const struct hf_key *key,
                               const struct hf_key_version *v, const unsigned char *in,
                               size_t inlen, unsigned char *out, size_t *outlen);

/* ECDH's Z (zlen bytes, the field's size, into z) of version v of key (an EC key) kept in a pool
 * and the peer's uncompressed point, checked by the caller to be on the key's curve: in the
 * member that holds it (hf_pool_key_ecdh), plus the pool's results. A local version's material
 * serves its caller (hf_core_material_as): CKR_KEY_FUNCTION_NOT_PERMITTED here, as
 * hf_core_material_as answers for a pool version. */
CK_RV hf_core_key_ecdh(struct hf_core *core, const struct hf_key *key,
                       const struct hf_key_version *v, const unsigned char *point, size_t point_len,
                       unsigned char *z, size_t zlen);

/* Current time in seconds, and a monotonic clock in microseconds (latency). */
int64_t hf_now(void);
uint64_t hf_monotonic_us(void);

#endif
