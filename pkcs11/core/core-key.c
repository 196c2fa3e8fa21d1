/* The core's key management: each operation checks the KMIP rules, makes one store change and
 * writes one audit record, failures included. */
#include "hf-build.h"

#include "core-internal.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One management operation in progress: what its audit record will say. */
struct op {
    struct hf_core *core;
    const struct hf_actor *who;
    const char *name; /* audit operation */
    char key_uuid[HF_UUID_LEN + 1];
    char key_name[HF_NAME_MAX + 1];
    unsigned version;
    char detail[320];
    uint64_t t0;
};

/* ref (a key UUID or name, may be NULL) names the key until the key itself is known. Fails when
 * the audit log already has: a change that could not be recorded must not be made. */
static CK_RV op_begin(struct op *op, struct hf_core *core, const struct hf_actor *who,
                      const char *name, const char *ref)
{
    memset(op, 0, sizeof(*op));
    op->core = core;
    op->who = who;
    op->name = name;
    op->t0 = hf_monotonic_us();
    if (ref != NULL && hf_uuid_is_valid(ref))
        snprintf(op->key_uuid, sizeof(op->key_uuid), "%s", ref);
    else if (ref != NULL)
        snprintf(op->key_name, sizeof(op->key_name), "%s", ref);
    return hf_audit_is_failed(core->audit) ? CKR_HF_AUDIT_FAILED : CKR_OK;
}

static void op_key(struct op *op, const struct hf_key *key)
{
    snprintf(op->key_uuid, sizeof(op->key_uuid), "%s", key->uuid);
    snprintf(op->key_name, sizeof(op->key_name), "%s", key->name ? key->name : "");
}

/* Writes the record and returns the operation's result, or CKR_HF_AUDIT_FAILED when the record
 * could not be written. For a change that is already committed this means the change stands but
 * the caller hears of an error: acceptable, since the log is now failed and every later key
 * operation stops until an operator repairs it, and the alternative (recording before the
 * commit) would log changes that may never happen. */
static CK_RV op_end(struct op *op, CK_RV rv)
{
    struct hf_audit_record rec = {
        .api = op->who && op->who->api ? op->who->api : "core",
        .operation = op->name,
        .key_uuid = op->key_uuid[0] ? op->key_uuid : NULL,
        .key_name = op->key_name[0] ? op->key_name : NULL,
        .version = op->version,
        .caller = op->who ? op->who->caller : NULL,
        .detail = op->detail[0] ? op->detail : NULL,
        .result = rv,
        .latency_us = hf_monotonic_us() - op->t0,
        /* Key management: an administrator with the store's files, or a logged-in SO. */
        .authenticated = true,
    };

    if (hf_audit_append(op->core->audit, &rec, NULL) != CKR_OK) {
        hf_log_error("audit log failed: %s on '%s' (result 0x%lx) is not recorded", op->name,
                     op->key_name[0] ? op->key_name : op->key_uuid, (unsigned long)rv);
        return CKR_HF_AUDIT_FAILED;
    }
    return rv;
}

/* "AES-256", "RSA-3072", "EC-P384", "Ed25519". */
static void alg_format(enum hf_alg alg, unsigned bits, char *out, size_t outlen)
{
    if (alg == HF_ALG_ED25519) {
        snprintf(out, outlen, "%s", hf_alg_name(alg));
        return;
    }
    snprintf(out, outlen, "%s-%s%u", hf_alg_name(alg), alg == HF_ALG_EC ? "P" : "", bits);
}

#define USAGE_ALL                                                                                  \
    (HF_USAGE_SIGN | HF_USAGE_VERIFY | HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT | HF_USAGE_WRAP |       \
     HF_USAGE_UNWRAP | HF_USAGE_DERIVE)

static CK_RV spec_check(const struct hf_key_spec *spec, unsigned long *usage, unsigned long *state)
{
    if (!hf_key_name_is_valid(spec->name)) {
        /* Not echoed: it may hold anything, control characters included. */
        hf_log_info("key name refused: 1..255 of [A-Za-z0-9._:/@+-], not UUID-shaped");
        return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    if (!hf_alg_bits_is_valid(spec->alg, spec->bits)) return CKR_KEY_SIZE_RANGE;
    *usage = spec->usage ? spec->usage : hf_usage_default(spec->alg);
    if ((*usage & ~USAGE_ALL) != 0) return CKR_ATTRIBUTE_VALUE_INVALID;
    *state = spec->state ? spec->state : HF_STATE_ACTIVE;
    /* A key is born pre-active or active (KMIP: Create leaves it pre-active or activates it). */
    if (*state != HF_STATE_PRE_ACTIVE && *state != HF_STATE_ACTIVE)
        return CKR_ATTRIBUTE_VALUE_INVALID;
    if (spec->n_labels > 0 && spec->labels == NULL) return CKR_ARGUMENTS_BAD;
    return CKR_OK;
}

/* A taken name is refused before any key material is made (RSA-4096 takes seconds); the
 * store's unique index still decides a race. */
static CK_RV name_is_free(struct hf_core *core, const char *name)
{
    struct hf_key other = {0};
    CK_RV rv = hf_store_key_get(core->store, name, &other);

    hf_key_clear(&other);
    if (rv == CKR_KEY_HANDLE_INVALID) return CKR_OK;
    if (rv == CKR_OK) {
        hf_log_info("key name '%s' is taken", name);
        return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    return rv;
}

static CK_RV key_build(const struct hf_key_spec *spec, unsigned long usage, unsigned long state,
                       const struct hf_actor *who, int64_t now, struct hf_key *key)
{
    const char *owner = spec->owner ? spec->owner : (who && who->caller) ? who->caller : "";
    CK_RV rv = CKR_OK;

    hf_uuid_generate(key->uuid);
    key->name = strdup(spec->name);
    key->owner = strdup(owner);
    key->source = strdup(spec->source ? spec->source : HF_KEY_SOURCE_LOCAL);
    if (key->name == NULL || key->owner == NULL || key->source == NULL) return CKR_HOST_MEMORY;
    key->alg = spec->alg;
    key->bits = spec->bits;
    key->usage = usage;
    key->state = state;
    key->exportable = spec->exportable;
    key->created = key->updated = now;
    key->current_version = 1;
    for (size_t i = 0; i < spec->n_labels && rv == CKR_OK; i++)
        rv = hf_key_label_set(key, spec->labels[i].name, spec->labels[i].value);
    return rv;
}

static void version_init(const char *key_uuid, unsigned n, int64_t now, struct hf_key_version *v)
{
    hf_uuid_generate(v->uuid);
    snprintf(v->key_uuid, sizeof(v->key_uuid), "%s", key_uuid);
    v->version = n;
    v->state = HF_STATE_ACTIVE;
    v->created = now;
}

/* The new version numbered n of key_uuid, its material sealed under the root KEK. */
static CK_RV version_build(struct hf_core *core, const char *key_uuid, unsigned n,
                           const struct hf_material *m, int64_t now, struct hf_key_version *v)
{
    version_init(key_uuid, n, now, v);
    return hf_local_seal(core->local, m, v);
}

/* The new version numbered n of key (source "pool:NAME"), its key generated inside the pool
 * (on one member, or on all in clone and export mode: core_pool_key_generate) and labelled with
 * the version's UUID; the row records where it lives (key.h), and no material but an export
 * pool's backup blob.
 * *made: the object exists, for the caller to destroy if the row cannot be written. */
static CK_RV version_build_pool(struct hf_core *core, const struct hf_key *key, unsigned n,
                                int64_t now, struct hf_key_version *v, bool *made)
{
    const char *name = hf_key_pool_name(key);
    CK_RV rv;

    *made = false;
    version_init(key->uuid, n, now, v);
    if ((rv = core_pool_key_generate(core, name, key->alg, key->bits, v)) != CKR_OK) {
        hf_log_error("key '%s': pool %s could not generate version %u (0x%lx)", key->name, name, n,
                     (unsigned long)rv);
        return rv;
    }
    *made = true;
    return CKR_OK;
}

bool hf_core_pool_alg_is_served(enum hf_alg alg)
{
    return alg == HF_ALG_AES || alg == HF_ALG_RSA || alg == HF_ALG_EC || alg == HF_ALG_ED25519;
}

/* A pool key's rules: AES (GCM, ECB, CBC, CTR and CMAC), RSA (decrypt and sign), EC (ECDSA) or
 * Ed25519 (EdDSA), never
 * exportable (the object is not extractable), never imported (material that was once in clear is
 * no pool key's), and a pool that exists: CKR_KEY_HANDLE_INVALID when it does not. */
static CK_RV pool_spec_check(struct hf_core *core, const struct hf_key_spec *spec, bool import)
{
    const char *name = spec->source + strlen(HF_KEY_SOURCE_POOL_PREFIX);
    struct hf_store_pool pool = {0};
    CK_RV rv;

    if (import) {
        hf_log_info("key '%s': a pool key is generated in the pool, never imported", spec->name);
        return CKR_FUNCTION_NOT_SUPPORTED;
    }
    if (!hf_core_pool_alg_is_served(spec->alg)) {
        hf_log_info("key '%s': pool keys are AES, RSA, EC or Ed25519", spec->name);
        return CKR_KEY_SIZE_RANGE;
    }
    if (spec->exportable) {
        hf_log_info("key '%s': a pool key never leaves its HSMs, so it cannot be exportable",
                    spec->name);
        return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    if (!hf_pool_name_is_valid(name)) {
        hf_log_info("key '%s': '%s' is not a pool name", spec->name, name);
        return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    rv = hf_store_pool_get(core->store, name, &pool);
    if (rv == CKR_KEY_HANDLE_INVALID) hf_log_error("there is no pool named '%s'", name);
    hf_store_pool_clear(&pool);
    return rv;
}

static bool spec_is_pool(const struct hf_key_spec *spec)
{
    return spec->source != NULL && strcmp(spec->source, HF_KEY_SOURCE_LOCAL) != 0;
}

/* After a failure: the member object made for v goes again, best effort. */
static void pool_version_undo(struct hf_core *core, const char *key_name, struct hf_key_version *v)
{
    struct hf_pool *pool = NULL;
    size_t member = 0;
    CK_RV rv = core_pool_version(core, v, &pool, &member);

    if (rv == CKR_OK) rv = hf_pool_key_destroy(pool, member, v->uuid);
    if (rv != CKR_OK)
        hf_log_warn("key '%s': the object %s left in %s could not be removed (0x%lx)", key_name,
                    v->uuid, v->kek_label ? v->kek_label : "its pool", (unsigned long)rv);
}

/* Create (import false: fresh material) and import (the given bytes). */
static CK_RV key_add(struct hf_core *core, const struct hf_key_spec *spec, bool import,
                     const unsigned char *bytes, size_t len, const struct hf_actor *who,
                     struct hf_key *out, struct hf_key_version *vout)
{
    struct hf_key key = {0};
    struct hf_key_version v = {0};
    struct hf_material *m = NULL;
    unsigned long usage = 0, state = 0;
    bool made = false;
    char alg[32], usage_text[128] = "";
    int64_t now = hf_now();
    struct op op;
    CK_RV rv;

    if (core == NULL) return CKR_ARGUMENTS_BAD;
    rv = op_begin(&op, core, who, import ? "key.import" : "key.create", spec ? spec->name : NULL);
    if (rv != CKR_OK) goto done;
    if (spec == NULL || spec->name == NULL || (import && (bytes == NULL || len == 0))) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    rv = spec_check(spec, &usage, &state);
    alg_format(spec->alg, spec->bits, alg, sizeof(alg));
    hf_usage_format(usage, usage_text, sizeof(usage_text));
    /* The source only when it is not local: local keys' records read as they always have. */
    snprintf(op.detail, sizeof(op.detail), "%s usage=%s%s%.64s", alg, usage_text,
             spec_is_pool(spec) ? " source=" : "", spec_is_pool(spec) ? spec->source : "");
    if (rv == CKR_OK && spec_is_pool(spec)) {
        if (strncmp(spec->source, HF_KEY_SOURCE_POOL_PREFIX, strlen(HF_KEY_SOURCE_POOL_PREFIX)))
            rv = CKR_ATTRIBUTE_VALUE_INVALID; /* neither "local" nor "pool:NAME" */
        else
            rv = pool_spec_check(core, spec, import);
    }
    if (rv == CKR_OK) rv = name_is_free(core, spec->name);
    if (rv != CKR_OK) goto done;
    if (spec_is_pool(spec)) {
        rv = key_build(spec, usage, state, who, now, &key);
        if (rv == CKR_OK) rv = version_build_pool(core, &key, 1, now, &v, &made);
    } else {
        rv = import ? hf_material_from_bytes(spec->alg, spec->bits, bytes, len, &m)
                    : hf_material_generate(spec->alg, spec->bits, &m);
        if (rv == CKR_OK) rv = key_build(spec, usage, state, who, now, &key);
        if (rv == CKR_OK) rv = version_build(core, key.uuid, 1, m, now, &v);
    }
    if (rv == CKR_OK) rv = hf_store_key_insert(core->store, &key, &v);
    if (rv != CKR_OK && made) pool_version_undo(core, spec->name, &v);
    if (rv != CKR_OK) goto done;
    op_key(&op, &key);
    op.version = 1;
done:
    rv = op_end(&op, rv);
    if (rv == CKR_OK && out != NULL) {
        *out = key;
        memset(&key, 0, sizeof(key));
    }
    if (rv == CKR_OK && vout != NULL) {
        *vout = v;
        memset(&v, 0, sizeof(v));
    }
    hf_material_unref(m);
    hf_key_clear(&key);
    hf_key_version_clear(&v);
    return rv;
}

CK_RV hf_core_key_create(struct hf_core *core, const struct hf_key_spec *spec,
                         const struct hf_actor *who, struct hf_key *out,
                         struct hf_key_version *vout)
{
    return key_add(core, spec, false, NULL, 0, who, out, vout);
}

CK_RV hf_core_key_import(struct hf_core *core, const struct hf_key_spec *spec,
                         const unsigned char *bytes, size_t len, const struct hf_actor *who,
                         struct hf_key *out, struct hf_key_version *vout)
{
    return key_add(core, spec, true, bytes, len, who, out, vout);
}

/* Starts an operation on the key ref names, and fetches it into key. */
static CK_RV op_begin_key(struct op *op, struct hf_core *core, const struct hf_actor *who,
                          const char *name, const char *ref, struct hf_key *key)
{
    CK_RV rv = op_begin(op, core, who, name, ref);

    if (rv != CKR_OK) return rv;
    if (ref == NULL) return CKR_ARGUMENTS_BAD;
    rv = hf_store_key_get(core->store, ref, key);
    if (rv == CKR_OK) op_key(op, key);
    return rv;
}

CK_RV hf_core_key_rotate(struct hf_core *core, const char *ref, const struct hf_actor *who,
                         struct hf_key_version *vout)
{
    struct hf_key key = {0};
    struct hf_key_version v = {0};
    struct hf_material *m = NULL;
    int64_t now = hf_now();
    bool made = false;
    struct op op;
    CK_RV rv;

    if (core == NULL) return CKR_ARGUMENTS_BAD;
    rv = op_begin_key(&op, core, who, "key.rotate", ref, &key);
    if (rv != CKR_OK) goto done;
    /* Compromised material must not be replaced under the same key (its users must move to a
     * new key on purpose), and a destroyed key is gone: KMIP's Re-key refuses both. */
    if (key.state == HF_STATE_COMPROMISED || key.state == HF_STATE_DESTROYED) {
        hf_log_info("key '%s' is %s: rotation refused", key.name, hf_state_name(key.state));
        rv = CKR_KEY_FUNCTION_NOT_PERMITTED;
        goto done;
    }
    if (hf_key_pool_name(&key) != NULL) {
        rv = version_build_pool(core, &key, key.current_version + 1, now, &v, &made);
    } else {
        rv = hf_material_generate(key.alg, key.bits, &m);
        if (rv == CKR_OK) rv = version_build(core, key.uuid, key.current_version + 1, m, now, &v);
    }
    if (rv == CKR_OK) rv = hf_store_version_insert(core->store, &v, now);
    if (rv != CKR_OK && made) pool_version_undo(core, key.name, &v);
    if (rv != CKR_OK) goto done;
    op.version = v.version;
    snprintf(op.detail, sizeof(op.detail), "version=%u", v.version);
done:
    rv = op_end(&op, rv);
    if (rv == CKR_OK && vout != NULL) {
        *vout = v;
        memset(&v, 0, sizeof(v));
    }
    hf_material_unref(m);
    hf_key_clear(&key);
    hf_key_version_clear(&v);
    return rv;
}

/* Erases every version's material in the store, then from the cache. */
static CK_RV key_destroy(struct hf_core *core, const struct hf_key *key, struct op *op)
{
    struct hf_key_version *versions = NULL;
    size_t n = 0;
    CK_RV rv;

    snprintf(op->detail, sizeof(op->detail), "state=destroyed (was %s)", hf_state_name(key->state));
    if (!hf_key_state_can_move(key->state, HF_STATE_DESTROYED)) {
        hf_log_info("key '%s' is already destroyed", key->name);
        return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    rv = hf_store_version_list(core->store, key->uuid, &versions, &n);
    if (rv == CKR_OK) rv = hf_store_key_destroy(core->store, key->uuid, hf_now());
    /* After the commit: a thread that read a version just before may still cache it, but the
     * module checks the key's state (revalidated on every store change) before any use. */
    for (size_t i = 0; rv == CKR_OK && i < n; i++)
        hf_local_evict(core->local, versions[i].id);
    /* The members' objects go after the rows: a failure leaves an object nothing names (logged),
     * never a row whose material is gone while its state says otherwise. */
    if (rv == CKR_OK) core_pool_versions_destroy(core, versions, n);
    for (size_t i = 0; i < n; i++)
        hf_key_version_clear(&versions[i]);
    free(versions);
    return rv;
}

CK_RV hf_core_key_destroy(struct hf_core *core, const char *ref, const struct hf_actor *who)
{
    struct hf_key key = {0};
    struct op op;
    CK_RV rv;

    if (core == NULL) return CKR_ARGUMENTS_BAD;
    rv = op_begin_key(&op, core, who, "key.destroy", ref, &key);
    if (rv == CKR_OK) rv = key_destroy(core, &key, &op);
    rv = op_end(&op, rv);
    hf_key_clear(&key);
    return rv;
}

CK_RV hf_core_key_set_state(struct hf_core *core, const char *ref, unsigned long state,
                            const struct hf_actor *who)
{
    struct hf_key key = {0};
    unsigned long was;
    struct op op;
    CK_RV rv;

    if (core == NULL) return CKR_ARGUMENTS_BAD;
    rv = op_begin_key(&op, core, who, "key.set_state", ref, &key);
    if (rv != CKR_OK) goto done;
    if (state == HF_STATE_DESTROYED) {
        op.name = "key.destroy";
        rv = key_destroy(core, &key, &op);
        goto done;
    }
    was = key.state;
    snprintf(op.detail, sizeof(op.detail), "state=%s (was %s)", hf_state_name(state),
             hf_state_name(was));
    if (!hf_key_state_can_move(was, state)) {
        hf_log_info("key '%s': KMIP does not allow %s -> %s", key.name, hf_state_name(was),
                    hf_state_name(state));
        rv = CKR_ATTRIBUTE_VALUE_INVALID;
        goto done;
    }
    key.state = state;
    key.updated = hf_now();
    rv = hf_store_key_update(core->store, &key);
done:
    rv = op_end(&op, rv);
    hf_key_clear(&key);
    return rv;
}

/* The KMIP and current-version rules of hf_core_version_set_state, logged when they refuse. */
static CK_RV version_move_check(const struct hf_key *key, const struct hf_key_version *v,
                                unsigned long state)
{
    if (!hf_version_state_can_move(v->state, state)) {
        hf_log_info("key '%s' version %u: KMIP does not allow %s -> %s", key->name, v->version,
                    hf_state_name(v->state), hf_state_name(state));
        return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    if (v->version == key->current_version && key->state == HF_STATE_ACTIVE &&
        state != HF_STATE_COMPROMISED) {
        hf_log_info("key '%s' version %u is current: rotate the key first", key->name, v->version);
        return CKR_KEY_FUNCTION_NOT_PERMITTED;
    }
    return CKR_OK;
}

CK_RV hf_core_version_set_state(struct hf_core *core, const char *ref, unsigned version,
                                unsigned long state, const struct hf_actor *who)
{
    struct hf_key key = {0};
    struct hf_key_version v = {0};
    struct op op;
    CK_RV rv;

    if (core == NULL) return CKR_ARGUMENTS_BAD;
    rv = op_begin_key(&op, core, who, "key.version_state", ref, &key);
    if (rv != CKR_OK) goto done;
    op.version = version;
    snprintf(op.detail, sizeof(op.detail), "version=%u state=%s", version, hf_state_name(state));
    rv = version == 0 ? CKR_KEY_HANDLE_INVALID
                      : hf_store_version_find(core->store, key.uuid, version, &v);
    if (rv != CKR_OK) goto done;
    snprintf(op.detail, sizeof(op.detail), "version=%u state=%s (was %s)", version,
             hf_state_name(state), hf_state_name(v.state));
    if ((rv = version_move_check(&key, &v, state)) != CKR_OK) goto done;
    v.state = state;
    rv = hf_store_version_set_state(core->store, &v);
    /* After the commit, as for a key: the module checks the state before any use. */
    if (rv == CKR_OK && state == HF_STATE_DESTROYED) {
        hf_local_evict(core->local, v.id);
        core_pool_versions_destroy(core, &v, 1);
    }
done:
    rv = op_end(&op, rv);
    hf_key_clear(&key);
    hf_key_version_clear(&v);
    return rv;
}

CK_RV hf_core_key_label_set(struct hf_core *core, const char *ref, const char *name,
                            const char *value, const struct hf_actor *who)
{
    struct hf_key key = {0};
    struct op op;
    CK_RV rv;

    if (core == NULL) return CKR_ARGUMENTS_BAD;
    rv = op_begin_key(&op, core, who, "key.label_set", ref, &key);
    if (rv != CKR_OK) goto done;
    if (name == NULL) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    if (value != NULL)
        snprintf(op.detail, sizeof(op.detail), "label %.64s=%.200s", name, value);
    else
        snprintf(op.detail, sizeof(op.detail), "label %.64s removed", name);
    rv = hf_key_label_set(&key, name, value);
    if (rv != CKR_OK) goto done;
    key.updated = hf_now();
    rv = hf_store_key_update(core->store, &key);
done:
    rv = op_end(&op, rv);
    hf_key_clear(&key);
    return rv;
}

/* A link is made only for a registered type (store.h): CKR_ARGUMENTS_BAD for a name that is
 * not, the store's error when it cannot say. */
static CK_RV link_type_check(struct hf_core *core, const char *type)
{
    CK_RV rv;

    if (!hf_link_type_is_valid(type)) return CKR_ARGUMENTS_BAD;
    rv = hf_store_link_type_get(core->store, type);
    if (rv == CKR_KEY_HANDLE_INVALID) {
        hf_log_info("link type '%s' is not registered", type);
        return CKR_ARGUMENTS_BAD;
    }
    return rv;
}

static bool link_id_is_valid(const char *ext_id)
{
    size_t len = ext_id ? strlen(ext_id) : 0;

    if (len == 0 || len > 1024) return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)ext_id[i] < 0x20 || ext_id[i] == 0x7f) return false;
    return true;
}

CK_RV hf_core_link_add(struct hf_core *core, const char *type, const char *ext_id,
                       const char *key_ref, const struct hf_actor *who)
{
    struct hf_key key = {0};
    struct hf_link link = {0};
    struct op op;
    CK_RV rv;

    if (core == NULL) return CKR_ARGUMENTS_BAD;
    rv = op_begin(&op, core, who, "link.add", key_ref);
    if (rv != CKR_OK) goto done;
    snprintf(op.detail, sizeof(op.detail), "%.32s:%.256s", type ? type : "", ext_id ? ext_id : "");
    if (!link_id_is_valid(ext_id) || key_ref == NULL) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    if ((rv = link_type_check(core, type)) != CKR_OK) goto done;
    rv = hf_store_key_get(core->store, key_ref, &key);
    if (rv != CKR_OK) goto done;
    op_key(&op, &key);
    link.type = strdup(type);
    link.ext_id = strdup(ext_id);
    if (link.type == NULL || link.ext_id == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    snprintf(link.key_uuid, sizeof(link.key_uuid), "%s", key.uuid);
    link.created = link.updated = hf_now();
    rv = hf_store_link_insert(core->store, &link);
done:
    rv = op_end(&op, rv);
    hf_link_clear(&link);
    hf_key_clear(&key);
    return rv;
}

CK_RV hf_core_link_set_blocked(struct hf_core *core, const char *type, const char *ext_id,
                               bool blocked, const struct hf_actor *who)
{
    struct hf_link link = {0};
    struct hf_key key = {0};
    struct op op;
    CK_RV rv;

    if (core == NULL) return CKR_ARGUMENTS_BAD;
    rv = op_begin(&op, core, who, blocked ? "link.block" : "link.unblock", NULL);
    if (rv != CKR_OK) goto done;
    snprintf(op.detail, sizeof(op.detail), "%.32s:%.256s", type ? type : "", ext_id ? ext_id : "");
    if (!link_id_is_valid(ext_id)) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    if ((rv = link_type_check(core, type)) != CKR_OK) goto done;
    rv = hf_store_link_get(core->store, type, ext_id, &link);
    if (rv != CKR_OK) goto done;
    snprintf(op.key_uuid, sizeof(op.key_uuid), "%s", link.key_uuid);
    if (hf_store_key_get(core->store, link.key_uuid, &key) == CKR_OK) op_key(&op, &key);
    rv = hf_store_link_set_blocked(core->store, type, ext_id, blocked, hf_now());
done:
    rv = op_end(&op, rv);
    hf_link_clear(&link);
    hf_key_clear(&key);
    return rv;
}

CK_RV hf_core_link_type_add(struct hf_core *core, const char *name, const struct hf_actor *who,
                            bool *added)
{
    bool is_new = false;
    struct op op;
    CK_RV rv;

    if (added) *added = false;
    if (core == NULL) return CKR_ARGUMENTS_BAD;
    rv = op_begin(&op, core, who, "link.type_add", NULL);
    if (rv != CKR_OK) goto done;
    snprintf(op.detail, sizeof(op.detail), "type=%.32s", name ? name : "");
    if (!hf_link_type_is_valid(name)) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    rv = hf_store_link_type_add(core->store, name, hf_now(), &is_new);
    if (rv == CKR_OK && !is_new)
        snprintf(op.detail, sizeof(op.detail), "type=%s (already registered)", name);
done:
    rv = op_end(&op, rv);
    if (rv == CKR_OK && added) *added = is_new;
    return rv;
}

CK_RV hf_core_policy_adopt(struct hf_core *core, const struct hf_actor *who, size_t *n)
{
    size_t count = 0;
    struct op op;
    CK_RV rv;

    if (n) *n = 0;
    if (core == NULL) return CKR_ARGUMENTS_BAD;
    rv = op_begin(&op, core, who, "policy.adopt", NULL);
    if (rv == CKR_OK) rv = hf_policy_migrate(core->policy, core->store, core->local, &count);
    snprintf(op.detail, sizeof(op.detail), "rows=%zu", count);
    rv = op_end(&op, rv);
    if (rv == CKR_OK && n) *n = count;
    return rv;
}
