#include "hf-build.h"

#include "policy.h"

#include "crypto.h"
#include "log.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows that passed, remembered by SHA-256(MAC | encoding): direct-mapped, a newer row taking an
 * older one's slot. Sized for a store's worth of keys, versions and links (128 KB). */
#define VERIFIED_SLOTS 4096
#define DIGEST_LEN 32

struct hf_policy {
    struct hf_root *root; /* borrowed */
    char *label;
    struct hf_audit *audit; /* borrowed, may be NULL */
    struct hf_store_policy hooks;
    pthread_mutex_t lock; /* guards verified */
    unsigned char (*verified)[DIGEST_LEN];
};

/* ---- the canonical encoding ---- */

struct enc {
    unsigned char *p;
    size_t len, cap;
    bool failed; /* out of memory: the encoding is unusable */
};

static void enc_bytes(struct enc *e, const void *data, size_t n)
{
    if (e->failed) return;
    if (n > SIZE_MAX - e->len || e->len + n > e->cap) {
        size_t want = e->cap ? e->cap : 256;
        while (want < e->len + n && want < SIZE_MAX / 2)
            want *= 2;
        unsigned char *q = n > SIZE_MAX - e->len ? NULL : realloc(e->p, want);
        if (q == NULL) {
            e->failed = true;
            return;
        }
        e->p = q;
        e->cap = want;
    }
    if (n) memcpy(e->p + e->len, data, n);
    e->len += n;
}

/* Releases an encoding and hands rv back, so that a caller can end with
 * `return enc_done(&e, use(&e));` and no path forgets the buffer. */
static CK_RV enc_done(struct enc *e, CK_RV rv)
{
    free(e->p);
    e->p = NULL;
    return rv;
}

static void enc_u32(struct enc *e, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};

    enc_bytes(e, b, sizeof(b));
}

/* A field: its length, then its bytes. NULL is told from "" by a length no field can have. */
static void enc_field(struct enc *e, const void *data, size_t n)
{
    if (data == NULL) {
        enc_u32(e, UINT32_MAX);
        return;
    }
    if (n >= UINT32_MAX) {
        e->failed = true;
        return;
    }
    enc_u32(e, (uint32_t)n);
    enc_bytes(e, data, n);
}

static void enc_str(struct enc *e, const char *s)
{
    enc_field(e, s, s ? strlen(s) : 0);
}

static void enc_u64(struct enc *e, uint64_t v)
{
    unsigned char b[8];

    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (56 - 8 * i));
    enc_field(e, b, sizeof(b));
}

/* UUIDs as the store keeps them: lower case. */
static void enc_uuid(struct enc *e, const char *uuid)
{
    char low[HF_UUID_LEN + 1];
    size_t i;

    for (i = 0; i < HF_UUID_LEN && uuid[i]; i++)
        low[i] = (char)tolower((unsigned char)uuid[i]);
    low[i] = '\0';
    enc_str(e, low);
}

static void enc_key(struct enc *e, const struct hf_key *k)
{
    enc_str(e, "holdfast policy v1: key");
    enc_uuid(e, k->uuid);
    enc_str(e, k->name);
    enc_u64(e, (uint64_t)k->alg);
    enc_u64(e, k->bits);
    enc_u64(e, k->usage);
    enc_u64(e, k->state);
    enc_u64(e, k->exportable ? 1 : 0);
    enc_str(e, k->source);
    enc_str(e, k->owner);
    enc_u64(e, k->current_version);
    /* Labels too: the module derives CKA_LOCAL from one (hf.imported). Sorted by name, as both
     * hf_key_label_set and the store keep them. */
    enc_u64(e, k->n_labels);
    for (size_t i = 0; i < k->n_labels; i++) {
        enc_str(e, k->labels[i].name);
        enc_str(e, k->labels[i].value);
    }
}

static void enc_version(struct enc *e, const struct hf_key_version *v)
{
    enc_str(e, "holdfast policy v1: version");
    enc_uuid(e, v->uuid);
    enc_uuid(e, v->key_uuid);
    enc_u64(e, v->version);
    enc_u64(e, v->state);
    enc_str(e, v->kek_label);
    enc_field(e, v->public_der, v->public_der_len);
}

static void enc_link(struct enc *e, const struct hf_link *l)
{
    enc_str(e, "holdfast policy v1: link");
    enc_str(e, l->type);
    enc_str(e, l->ext_id);
    enc_uuid(e, l->key_uuid);
    enc_u64(e, l->blocked ? 1 : 0);
}

/* The pool and every member, in order: a member's module path decides what code every node
 * loads, its PIN source where the PIN comes from. */
static void enc_pool(struct enc *e, const struct hf_store_pool *p)
{
    enc_str(e, "holdfast policy v1: pool");
    enc_str(e, p->name);
    enc_u64(e, (uint64_t)p->mode);
    enc_u64(e, p->n_members);
    for (size_t i = 0; i < p->n_members; i++) {
        const struct hf_store_pool_member *m = &p->members[i];
        enc_str(e, m->name);
        enc_str(e, m->module_path);
        enc_str(e, m->token_label);
        enc_str(e, m->token_serial);
        enc_str(e, m->pin_file);
        enc_str(e, m->pin_env);
        enc_u64(e, m->concurrency);
    }
}

/* ---- MACs ---- */

static CK_RV enc_mac(struct hf_policy *p, const struct enc *e, unsigned char mac[HF_POLICY_MAC_LEN])
{
    if (e->failed) return CKR_HOST_MEMORY;
    return hf_root_hmac(p->root, p->label, e->p, e->len, mac);
}

CK_RV hf_policy_key_mac(struct hf_policy *policy, const struct hf_key *key,
                        unsigned char mac[HF_POLICY_MAC_LEN])
{
    struct enc e = {0};

    if (policy == NULL || key == NULL || mac == NULL) return CKR_ARGUMENTS_BAD;
    enc_key(&e, key);
    return enc_done(&e, enc_mac(policy, &e, mac));
}

CK_RV hf_policy_version_mac(struct hf_policy *policy, const struct hf_key_version *v,
                            unsigned char mac[HF_POLICY_MAC_LEN])
{
    struct enc e = {0};

    if (policy == NULL || v == NULL || mac == NULL) return CKR_ARGUMENTS_BAD;
    enc_version(&e, v);
    return enc_done(&e, enc_mac(policy, &e, mac));
}

CK_RV hf_policy_link_mac(struct hf_policy *policy, const struct hf_link *link,
                         unsigned char mac[HF_POLICY_MAC_LEN])
{
    struct enc e = {0};

    if (policy == NULL || link == NULL || mac == NULL) return CKR_ARGUMENTS_BAD;
    enc_link(&e, link);
    return enc_done(&e, enc_mac(policy, &e, mac));
}

CK_RV hf_policy_pool_mac(struct hf_policy *policy, const struct hf_store_pool *pool,
                         unsigned char mac[HF_POLICY_MAC_LEN])
{
    struct enc e = {0};

    if (policy == NULL || pool == NULL || mac == NULL) return CKR_ARGUMENTS_BAD;
    enc_pool(&e, pool);
    return enc_done(&e, enc_mac(policy, &e, mac));
}

/* ---- checks ---- */

static CK_RV row_digest(const struct enc *e, const unsigned char mac[HF_POLICY_MAC_LEN],
                        unsigned char d[DIGEST_LEN])
{
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t n = 0;
    struct enc both = {0};
    CK_RV rv;

    enc_bytes(&both, mac, HF_POLICY_MAC_LEN);
    enc_bytes(&both, e->p, e->len);
    rv = both.failed ? CKR_HOST_MEMORY : hf_digest("SHA256", both.p, both.len, out, &n);
    if (rv == CKR_OK && n != DIGEST_LEN) rv = CKR_GENERAL_ERROR;
    if (rv == CKR_OK) memcpy(d, out, DIGEST_LEN);
    return enc_done(&both, rv);
}

static unsigned char *verified_slot(struct hf_policy *p, const unsigned char d[DIGEST_LEN])
{
    size_t h;

    memcpy(&h, d, sizeof(h));
    return p->verified[h % VERIFIED_SLOTS];
}

static bool verified_has(struct hf_policy *p, const unsigned char d[DIGEST_LEN])
{
    bool hit;

    pthread_mutex_lock(&p->lock);
    hit = memcmp(verified_slot(p, d), d, DIGEST_LEN) == 0;
    pthread_mutex_unlock(&p->lock);
    return hit;
}

static void verified_add(struct hf_policy *p, const unsigned char d[DIGEST_LEN])
{
    pthread_mutex_lock(&p->lock);
    memcpy(verified_slot(p, d), d, DIGEST_LEN);
    pthread_mutex_unlock(&p->lock);
}

/* Which row failed, for the log and the audit record. */
struct row_id {
    const char *what; /* "key", "version", "link", "pool" */
    const char *key_uuid;
    const char *key_name;
    unsigned version;
    const char *link_type, *link_id;
};

/* A refused row's text is whatever was written into the store: it reaches the log line only with
 * control characters, quotes and backslashes replaced, so it cannot forge log lines. */
static void text_tame(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f || *s == '"' || *s == '\\') *s = '?';
}

static CK_RV row_refuse(struct hf_policy *p, const struct row_id *id, const char *why)
{
    char uuid[HF_UUID_LEN + 1];
    char detail[320];
    struct hf_audit_record rec = {.api = "core",
                                  .operation = "policy.check",
                                  .key_uuid = id->key_uuid[0] ? id->key_uuid : NULL,
                                  .key_name = id->key_uuid[0] ? id->key_name : NULL,
                                  .version = id->version,
                                  .detail = detail,
                                  .result = CKR_HF_POLICY_INVALID,
                                  .authenticated = true};

    if (id->link_type)
        snprintf(detail, sizeof(detail), "%s row %.32s:%.200s %s", id->what, id->link_type,
                 id->link_id, why);
    else if (id->key_uuid[0] == '\0') /* a pool: no key */
        snprintf(detail, sizeof(detail), "%s row %.64s %s", id->what,
                 id->key_name ? id->key_name : "", why);
    else
        snprintf(detail, sizeof(detail), "%s row %s", id->what, why);
    if (p->audit && hf_audit_append(p->audit, &rec, NULL) != CKR_OK)
        hf_log_error("audit log failed: policy.check on a %s row is not recorded", id->what);
    snprintf(uuid, sizeof(uuid), "%s", id->key_uuid);
    text_tame(uuid);
    text_tame(detail);
    hf_log_error("policy: %s%s%s%s: refused (the store was changed outside Holdfast)",
                 uuid[0] ? "key " : "", uuid, uuid[0] ? ": " : "", detail);
    return CKR_HF_POLICY_INVALID;
}

/* CKR_OK when mac is the row's MAC; asks the HSM only for a row content not seen to pass. */
static CK_RV row_check(struct hf_policy *p, const struct enc *e, const unsigned char *mac,
                       bool has_mac, const struct row_id *id)
{
    unsigned char d[DIGEST_LEN], want[HF_POLICY_MAC_LEN];
    CK_RV rv;

    if (!has_mac) return row_refuse(p, id, "has no policy MAC");
    if (e->failed) return CKR_HOST_MEMORY;
    if ((rv = row_digest(e, mac, d)) != CKR_OK) return rv;
    if (verified_has(p, d)) return CKR_OK;
    if ((rv = enc_mac(p, e, want)) != CKR_OK) {
        hf_log_error("policy: key %s: cannot compute the %s row's MAC (0x%lx)", id->key_uuid,
                     id->what, (unsigned long)rv);
        return rv;
    }
    if (CRYPTO_memcmp(want, mac, HF_POLICY_MAC_LEN) != 0)
        return row_refuse(p, id, "fails its policy MAC");
    verified_add(p, d);
    return CKR_OK;
}

/* ---- the store hooks ---- */

static CK_RV hook_key_check(void *ctx, const struct hf_key *k)
{
    struct row_id id = {"key", k->uuid, k->name, 0, NULL, NULL};
    struct enc e = {0};

    enc_key(&e, k);
    return enc_done(&e, row_check(ctx, &e, k->mac, k->has_mac, &id));
}

static CK_RV hook_version_check(void *ctx, const struct hf_key_version *v)
{
    struct row_id id = {"version", v->key_uuid, NULL, v->version, NULL, NULL};
    struct enc e = {0};

    if (v->state == HF_STATE_DESTROYED && v->wrapped == NULL && !v->has_mac) return CKR_OK;
    enc_version(&e, v);
    return enc_done(&e, row_check(ctx, &e, v->mac, v->has_mac, &id));
}

static CK_RV hook_link_check(void *ctx, const struct hf_link *l)
{
    struct row_id id = {"link", l->key_uuid, NULL, 0, l->type ? l->type : "", l->ext_id};
    struct enc e = {0};

    enc_link(&e, l);
    return enc_done(&e, row_check(ctx, &e, l->mac, l->has_mac, &id));
}

static CK_RV hook_pool_check(void *ctx, const struct hf_store_pool *p)
{
    struct row_id id = {"pool", "", p->name, 0, NULL, NULL};
    struct enc e = {0};

    enc_pool(&e, p);
    return enc_done(&e, row_check(ctx, &e, p->mac, p->has_mac, &id));
}

static CK_RV hook_pool_seal(void *ctx, struct hf_store_pool *p)
{
    CK_RV rv = hf_policy_pool_mac(ctx, p, p->mac);

    p->has_mac = rv == CKR_OK;
    return rv;
}

static CK_RV hook_key_seal(void *ctx, struct hf_key *k)
{
    CK_RV rv = hf_policy_key_mac(ctx, k, k->mac);

    k->has_mac = rv == CKR_OK;
    return rv;
}

static CK_RV hook_version_seal(void *ctx, struct hf_key_version *v)
{
    CK_RV rv = hf_policy_version_mac(ctx, v, v->mac);

    v->has_mac = rv == CKR_OK;
    return rv;
}

static CK_RV hook_link_seal(void *ctx, struct hf_link *l)
{
    CK_RV rv = hf_policy_link_mac(ctx, l, l->mac);

    l->has_mac = rv == CKR_OK;
    return rv;
}

/* ---- lifecycle ---- */

/* Only a token that answers "no such key" gets one made (and its store migrated): an HSM error
 * must not pass for a store that was never migrated, or rows cleared of their MAC meanwhile would
 * be MAC'd as they are. */
static CK_RV mac_key_open(struct hf_root *root, const char *mac_label, bool *created)
{
    static const unsigned char probe[1] = {0};
    unsigned char mac[HF_HSM_MAC_LEN];
    CK_RV rv = hf_root_hmac(root, mac_label, probe, sizeof(probe), mac);

    *created = false;
    if (rv == CKR_OK) return CKR_OK;
    if (rv != CKR_KEY_HANDLE_INVALID) {
        hf_log_error("policy: cannot use the policy MAC key '%s' (0x%lx)", mac_label,
                     (unsigned long)rv);
        return rv;
    }
    if ((rv = hf_root_mac_key_ensure(root, mac_label)) != CKR_OK) {
        hf_log_error("policy: cannot create the policy MAC key '%s' (0x%lx)", mac_label,
                     (unsigned long)rv);
        return rv;
    }
    *created = true;
    return CKR_OK;
}

CK_RV hf_policy_open(struct hf_root *root, const char *mac_label, struct hf_policy **out,
                     bool *created)
{
    struct hf_policy *p = NULL;
    CK_RV rv;

    if (root == NULL || mac_label == NULL || out == NULL || created == NULL)
        return CKR_ARGUMENTS_BAD;
    *out = NULL;
    if ((rv = mac_key_open(root, mac_label, created)) != CKR_OK) return rv;
    if ((p = calloc(1, sizeof(*p))) == NULL) return CKR_HOST_MEMORY;
    p->label = strdup(mac_label);
    p->verified = calloc(VERIFIED_SLOTS, DIGEST_LEN);
    if (p->label == NULL || p->verified == NULL || pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p->label);
        free(p->verified);
        free(p);
        return CKR_HOST_MEMORY;
    }
    p->root = root;
    p->hooks = (struct hf_store_policy){.ctx = p,
                                        .key_seal = hook_key_seal,
                                        .version_seal = hook_version_seal,
                                        .link_seal = hook_link_seal,
                                        .key_check = hook_key_check,
                                        .version_check = hook_version_check,
                                        .link_check = hook_link_check,
                                        .pool_seal = hook_pool_seal,
                                        .pool_check = hook_pool_check};
    *out = p;
    return CKR_OK;
}

void hf_policy_close(struct hf_policy *policy)
{
    if (policy == NULL) return;
    pthread_mutex_destroy(&policy->lock);
    free(policy->verified);
    free(policy->label);
    free(policy);
}

void hf_policy_audit_set(struct hf_policy *policy, struct hf_audit *audit)
{
    if (policy) policy->audit = audit;
}

const struct hf_store_policy *hf_policy_hooks(struct hf_policy *policy)
{
    return policy ? &policy->hooks : NULL;
}

/* ---- migration ---- */

struct migration {
    struct hf_policy *policy;
    struct hf_local *local;
};

static CK_RV migrate_key(void *ctx, struct hf_key *k)
{
    return hook_key_seal(((struct migration *)ctx)->policy, k);
}

static CK_RV migrate_version(void *ctx, struct hf_key_version *v)
{
    struct migration *m = ctx;
    CK_RV rv = hf_local_rewrap(m->local, v);

    return rv == CKR_OK ? hook_version_seal(m->policy, v) : rv;
}

static CK_RV migrate_link(void *ctx, struct hf_link *l)
{
    return hook_link_seal(((struct migration *)ctx)->policy, l);
}

CK_RV hf_policy_migrate(struct hf_policy *policy, struct hf_store *store, struct hf_local *local,
                        size_t *n)
{
    struct migration m = {policy, local};
    struct hf_store_migration hooks = {&m, migrate_key, migrate_version, migrate_link};
    size_t count = 0;
    CK_RV rv;

    if (n) *n = 0;
    if (policy == NULL || store == NULL || local == NULL) return CKR_ARGUMENTS_BAD;
    rv = hf_store_policy_migrate(store, &hooks, &count);
    if (rv == CKR_OK && count > 0)
        hf_log_info("policy: %zu store rows without a policy MAC now carry one", count);
    if (rv != CKR_OK) hf_log_error("policy: migrating the store failed (0x%lx)", (unsigned long)rv);
    if (rv == CKR_OK && n) *n = count;
    return rv;
}
