/* Clone and export pools in the core (issue 14; source-pool.h has the modes): which versions a
 * pool must hold comes from the store, so generating a version, establishing the replication key
 * and re-syncing a member are done here, over the executor and pool-clone.h's copies. */
#include "hf-build.h"

#include "core-internal.h"
#include "log.h"
#include "pool-clone.h"
#include "source-pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the pool's versions in the store ---- */

struct pool_version {
    char uuid[HF_UUID_LEN + 1];
    enum hf_pool_obj obj; /* the kind its members hold */
};

struct uuid_list {
    struct pool_version *v;
    size_t n, cap;
};

struct pool_versions {
    char kek_label[sizeof(HF_KEY_SOURCE_POOL_PREFIX) + HF_POOL_NAME_MAX];
    struct uuid_list live; /* to be on every member */
    struct uuid_list dead; /* destroyed: to be on none */
};

static CK_RV uuid_push(struct uuid_list *l, const char *uuid, enum hf_pool_obj obj)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        void *grown = realloc(l->v, cap * sizeof(*l->v));
        if (grown == NULL) return CKR_HOST_MEMORY;
        l->v = grown;
        l->cap = cap;
    }
    snprintf(l->v[l->n].uuid, sizeof(l->v[l->n].uuid), "%s", uuid);
    l->v[l->n++].obj = obj;
    return CKR_OK;
}

static CK_RV versions_fn(const struct hf_key *key, const struct hf_key_version *v, void *arg)
{
    struct pool_versions *pv = arg;

    /* Clone and export versions name the pool alone; a plain version's member is its only home. */
    if (v->kek_label == NULL || strcmp(v->kek_label, pv->kek_label) != 0) return CKR_OK;
    return uuid_push(v->state == HF_STATE_DESTROYED ? &pv->dead : &pv->live, v->uuid,
                     hf_pool_obj_of(key->alg));
}

static void versions_free(struct pool_versions *pv)
{
    free(pv->live.v);
    free(pv->dead.v);
    memset(pv, 0, sizeof(*pv));
}

static CK_RV versions_read(struct hf_core *core, const char *name, struct pool_versions *pv)
{
    CK_RV rv;

    memset(pv, 0, sizeof(*pv));
    snprintf(pv->kek_label, sizeof(pv->kek_label), "%s%s", HF_KEY_SOURCE_POOL_PREFIX, name);
    rv = hf_store_version_each(core->store, versions_fn, pv);
    if (rv != CKR_OK) versions_free(pv);
    return rv;
}

/* ---- the replication key ----
 *
 * Generated once per pool, by one process among all those on the store (every node of a
 * cluster): the generation is claimed in the store's meta, "pool.replication:NAME", whose value
 * is "claim CREATED TAG" while a process makes it and "made CREATED TAG" once it is published
 * (CREATED the pool row's, so a removed pool's value is never taken for its successor's; TAG 16
 * random hex digits). Every change is hf_store_meta_swap, one statement: of processes claiming
 * at once exactly one inserts the claim. The claimant makes the key under a pending label of its
 * own (hf_pool_repl_generate_claimed), swaps its claim to "made" and only then gives the key its
 * label; the others wait, copying the key once a member holds it. A claim unchanged for
 * hf_core_repl_takeover_ms (as each waiter sees it: no clocks compared between nodes) is taken
 * over by a swap from that very value, so a claimant that died blocks nobody for ever; one that
 * was only slow then fails its own swap to "made" and destroys its pending key, which nothing
 * could have used: two keys never carry the label. */

#define REPL_META_PREFIX "pool.replication:"
#define REPL_POLL_US 20000

unsigned hf_core_repl_takeover_ms = HF_CORE_REPL_TAKEOVER_MS;

struct repl_claim {
    struct hf_core *core;
    const char *name;
    struct hf_pool *pool;
    size_t member;
    char repl[HF_POOL_REPL_LABEL_MAX];
    char meta[sizeof(REPL_META_PREFIX) + HF_POOL_NAME_MAX];
    long long created;
    char tag[17];
    char mine[64]; /* "claim CREATED TAG" */
    char made[64]; /* "made CREATED TAG" */
};

/* The claim's value, parsed: word "claim" or "made", the pool's created time and the tag. */
static bool claim_parse(const char *v, char word[8], long long *created, char tag[17])
{
    char extra;

    return sscanf(v, "%7s %lld %16s %c", word, created, tag, &extra) == 3 &&
           (strcmp(word, "claim") == 0 || strcmp(word, "made") == 0);
}

/* hf_pool_repl_generate_claimed's publish: our claim becomes "made", if it still stands. */
static CK_RV claim_publish(void *arg)
{
    struct repl_claim *c = arg;
    bool swapped = false;
    CK_RV rv = hf_store_meta_swap(c->core->store, c->meta, c->mine, c->made, &swapped);

    return rv != CKR_OK ? rv : swapped ? CKR_OK : CKR_FUNCTION_REJECTED;
}

/* Our claim stands: the key, unless a member holds one already (made before claims were, or
 * the published key of a claimant whose claim was taken over after it published: none is). */
static CK_RV claim_make(struct repl_claim *c)
{
    bool swapped = false;
    CK_RV rv = hf_pool_repl_ensure(c->pool, c->repl, c->member, false);

    if (rv == CKR_KEY_HANDLE_INVALID)
        rv = hf_pool_repl_generate_claimed(c->pool, c->repl, c->member, c->tag, claim_publish, c);
    else if (rv == CKR_OK)
        rv = claim_publish(c);
    if (rv == CKR_OK) {
        hf_log_info("pool %s: replication key made", c->name);
        return CKR_OK;
    }
    /* Lost to a takeover: the key is the taker's. Otherwise let the others try at once. */
    if (rv != CKR_FUNCTION_REJECTED)
        hf_store_meta_swap(c->core->store, c->meta, c->mine, NULL, &swapped);
    return rv;
}

static CK_RV claim_init(struct repl_claim *c)
{
    struct hf_store_pool def = {0};
    unsigned char nonce[8];
    CK_RV rv = hf_store_pool_get(c->core->store, c->name, &def);

    if (rv != CKR_OK) return rv;
    c->created = (long long)def.created;
    hf_store_pool_clear(&def);
    if ((rv = hf_random(nonce, sizeof(nonce))) != CKR_OK) return rv;
    for (size_t i = 0; i < sizeof(nonce); i++)
        snprintf(c->tag + 2 * i, 3, "%02x", nonce[i]);
    hf_pool_repl_label(c->name, c->repl);
    snprintf(c->meta, sizeof(c->meta), "%s%s", REPL_META_PREFIX, c->name);
    snprintf(c->mine, sizeof(c->mine), "claim %lld %s", c->created, c->tag);
    snprintf(c->made, sizeof(c->made), "made %lld %s", c->created, c->tag);
    return CKR_OK;
}

/* The replication key on member when no member in service holds it and the store has no
 * version of the pool: made by the one process whose claim stands, copied by the others. Waits
 * at most three takeover times. */
static CK_RV repl_claimed(struct hf_core *core, const char *name, struct hf_pool *pool,
                          size_t member)
{
    struct repl_claim c = {.core = core, .name = name, .pool = pool, .member = member};
    char seen[64] = "", word[8], tag[17];
    uint64_t t0 = hf_monotonic_us(), seen_at = t0, takeover_us;
    long long created;
    CK_RV rv = claim_init(&c);

    takeover_us = (uint64_t)hf_core_repl_takeover_ms * 1000u;
    while (rv == CKR_OK) {
        char *cur = NULL;
        bool swapped = false, ours = false;
        uint64_t now = hf_monotonic_us();

        if (now - t0 > 3 * takeover_us) {
            hf_log_warn("pool %s: no replication key after %u ms of waiting for its maker", name,
                        3 * hf_core_repl_takeover_ms);
            return CKR_KEY_HANDLE_INVALID;
        }
        rv = hf_store_meta_get(core->store, c.meta, &cur);
        if (rv == CKR_KEY_HANDLE_INVALID) {
            rv = hf_store_meta_swap(core->store, c.meta, NULL, c.mine, &ours);
        } else if (rv == CKR_OK &&
                   (!claim_parse(cur, word, &created, tag) || created != c.created)) {
            /* A removed pool's (or an unreadable) value: not this pool's claim. */
            rv = hf_store_meta_swap(core->store, c.meta, cur, c.mine, &ours);
        } else if (rv == CKR_OK && strcmp(word, "made") == 0) {
            free(cur);
            hf_pool_repl_adopt(pool, c.repl, tag);
            return hf_pool_repl_ensure(pool, c.repl, member, false);
        } else if (rv == CKR_OK) {
            /* Another's claim: its key, once published and labelled, is copied here. */
            rv = hf_pool_repl_ensure(pool, c.repl, member, false);
            if (rv == CKR_OK || rv == HF_POOL_RV_UNAVAILABLE) {
                free(cur);
                return rv;
            }
            /* Not there yet, or the token's trouble of the moment (SoftHSMv2 answered
             * CKR_GENERAL_ERROR to a search beside the claimant's generation): ask again. */
            rv = CKR_OK;
            if (strcmp(cur, seen) != 0) {
                snprintf(seen, sizeof(seen), "%s", cur);
                seen_at = now;
            } else if (now - seen_at >= takeover_us) {
                rv = hf_store_meta_swap(core->store, c.meta, cur, c.mine, &swapped);
                if ((ours = swapped))
                    hf_log_warn("pool %s: the replication key's claim '%s' stood %u ms unchanged: "
                                "taken over",
                                name, cur, hf_core_repl_takeover_ms);
            }
            if (rv == CKR_OK && !ours) usleep(REPL_POLL_US);
        }
        free(cur);
        if (rv == CKR_OK && ours) {
            rv = claim_make(&c);
            if (rv != CKR_FUNCTION_REJECTED) return rv;
            rv = CKR_OK; /* taken over meanwhile: read what the taker published */
        }
    }
    return rv;
}

/* member holds the pool's replication key, copied from a member that has it, or made by one
 * process (repl_claimed) when may_generate: the store has no version of the pool (once one was
 * copied, a member out of service may hold the only key, and a second one under its label
 * would make copies between them fail). */
static CK_RV repl_member_ensure(struct hf_core *core, const char *name, struct hf_pool *pool,
                                size_t member, bool may_generate)
{
    char repl[HF_POOL_REPL_LABEL_MAX];
    CK_RV rv;

    hf_pool_repl_label(name, repl);
    rv = hf_pool_repl_ensure(pool, repl, member, false);
    if (rv != CKR_KEY_HANDLE_INVALID || !may_generate) return rv;
    return repl_claimed(core, name, pool, member);
}

void core_pool_repl_establish(struct hf_core *core, const char *name, struct hf_pool *pool)
{
    struct pool_versions pv;
    size_t n = hf_pool_status(pool, NULL, 0);
    bool may_generate;

    if (versions_read(core, name, &pv) != CKR_OK) {
        hf_log_warn("pool %s: its versions could not be read: replication key left as it is", name);
        return;
    }
    may_generate = pv.live.n == 0 && pv.dead.n == 0;
    versions_free(&pv);
    /* The first member in service gets it (made, or copied from a holder); the others copy it.
     * Members out of service get it at their re-sync. */
    for (size_t i = 0; i < n; i++) {
        CK_RV rv = repl_member_ensure(core, name, pool, i, may_generate);
        if (rv == CKR_OK)
            may_generate = false;
        else if (rv != HF_POOL_RV_UNAVAILABLE)
            hf_log_warn("pool %s: member %zu has no replication key (0x%lx)", name, i,
                        (unsigned long)rv);
    }
}

/* ---- generating a version ---- */

/* A key pair (RSA, EC, Ed25519): its private key on the member that made it (plain mode, repl
 * NULL) or on every member (clone and export), its public key in the row (public_der), as a local
 * version of the algorithm keeps it. */
static CK_RV pair_generate(struct hf_pool *pool, enum hf_alg alg, unsigned bits, const char *repl,
                           struct hf_key_version *v, size_t *member)
{
    unsigned char *der = NULL;
    size_t der_len = 0;
    CK_RV rv = hf_pool_key_generate_pair(pool, alg, bits, v->uuid, repl, member, &der, &der_len);

    if (rv != CKR_OK) return rv;
    free(v->public_der);
    v->public_der = der;
    v->public_der_len = der_len;
    return CKR_OK;
}

CK_RV core_pool_key_generate(struct hf_core *core, const char *name, enum hf_alg alg, unsigned bits,
                             struct hf_key_version *v)
{
    struct hf_pool_member_status st[HF_POOL_MEMBERS_MAX];
    struct hf_store_pool def = {0};
    char place[sizeof(HF_KEY_SOURCE_POOL_PREFIX) + 2 * HF_POOL_NAME_MAX + 1];
    char repl[HF_POOL_REPL_LABEL_MAX];
    struct hf_pool *pool = NULL;
    enum hf_pool_mode mode;
    size_t member = HF_POOL_KEY_ANY_MEMBER;
    CK_RV rv;

    if ((rv = hf_store_pool_get(core->store, name, &def)) != CKR_OK) return rv;
    mode = def.mode;
    hf_store_pool_clear(&def);
    if ((rv = core_pool_use(core, name, &pool)) != CKR_OK) return rv;
    hf_pool_repl_label(name, repl);
    if (alg != HF_ALG_AES)
        rv = pair_generate(pool, alg, bits, mode == HF_POOL_MODE_PLAIN ? NULL : repl, v, &member);
    else if (mode == HF_POOL_MODE_PLAIN)
        rv = hf_pool_key_generate(pool, bits, v->uuid, &member);
    else
        rv = hf_pool_key_generate_clone(pool, bits, v->uuid, repl);
    if (rv != CKR_OK) return rv;
    if (mode == HF_POOL_MODE_PLAIN) {
        if (member >= hf_pool_status(pool, st, HF_POOL_MEMBERS_MAX)) return CKR_GENERAL_ERROR;
        snprintf(place, sizeof(place), "%s%s/%s", HF_KEY_SOURCE_POOL_PREFIX, name, st[member].name);
    } else {
        snprintf(place, sizeof(place), "%s%s", HF_KEY_SOURCE_POOL_PREFIX, name);
    }
    /* An export version without its backup could not be restored: no version then. */
    if (mode == HF_POOL_MODE_EXPORT)
        rv = core_pool_backup_version(core, name, pool, v->uuid, hf_pool_obj_of(alg), &v->wrapped,
                                      &v->wrapped_len);
    if (rv == CKR_OK && (v->kek_label = strdup(place)) == NULL) rv = CKR_HOST_MEMORY;
    if (rv != CKR_OK) {
        hf_pool_key_destroy(pool, member, v->uuid);
        free(v->wrapped);
        v->wrapped = NULL;
        v->wrapped_len = 0;
    }
    return rv;
}

/* ---- re-sync ---- */

struct resync {
    size_t copied, failed, removed;
    CK_RV first_rv;
};

static void resync_audit(struct hf_core *core, const char *name, const char *member,
                         const struct resync *r, uint64_t t0)
{
    char detail[160];
    struct hf_audit_record rec = {
        .api = "core",
        .operation = "pool.resync",
        .detail = detail,
        .result = r->failed ? r->first_rv : CKR_OK,
        .latency_us = hf_monotonic_us() - t0,
        .authenticated = true,
    };

    snprintf(detail, sizeof(detail), "pool=%s member=%s copied=%zu failed=%zu removed=%zu", name,
             member, r->copied, r->failed, r->removed);
    if (hf_audit_append(core->audit, &rec, NULL) != CKR_OK)
        hf_log_error("audit log failed: pool.resync (%s) is not recorded", detail);
}

static void resync_member(struct hf_pool *pool, const char *repl, const struct pool_versions *pv,
                          size_t member, char **labels, size_t n_labels, struct resync *r)
{
    for (size_t i = 0; i < pv->live.n; i++) {
        CK_RV rv;
        if (hf_pool_labels_has(labels, n_labels, pv->live.v[i].uuid)) continue;
        rv = hf_pool_clone_copy_any(pool, repl, pv->live.v[i].uuid, pv->live.v[i].obj, member);
        if (rv == CKR_OK) {
            r->copied++;
            continue;
        }
        if (r->failed++ == 0) r->first_rv = rv;
        hf_log_warn("pool: version %s not copied to member %zu (0x%lx)", pv->live.v[i].uuid, member,
                    (unsigned long)rv);
    }
    /* A member out of service when a version was destroyed still holds it: not for long. */
    for (size_t i = 0; i < pv->dead.n; i++) {
        if (!hf_pool_labels_has(labels, n_labels, pv->dead.v[i].uuid)) continue;
        if (hf_pool_key_destroy(pool, member, pv->dead.v[i].uuid) == CKR_OK) r->removed++;
    }
}

void core_pool_resync(struct hf_core *core, const char *name, struct hf_pool *pool, size_t member)
{
    struct hf_pool_member_status st[HF_POOL_MEMBERS_MAX];
    char repl[HF_POOL_REPL_LABEL_MAX];
    struct pool_versions pv;
    struct resync r = {0};
    char **labels = NULL;
    size_t n_labels = 0, n;
    uint64_t t0 = hf_monotonic_us();
    CK_RV rv;

    n = hf_pool_status(pool, st, HF_POOL_MEMBERS_MAX);
    if (member >= n || member >= HF_POOL_MEMBERS_MAX) return;
    if ((rv = versions_read(core, name, &pv)) != CKR_OK) {
        hf_log_warn("pool %s: member %s not re-synced: the store answered 0x%lx", name,
                    st[member].name, (unsigned long)rv);
        return;
    }
    hf_pool_repl_label(name, repl);
    rv = repl_member_ensure(core, name, pool, member, pv.live.n == 0 && pv.dead.n == 0);
    if (rv == CKR_OK) rv = hf_pool_labels(pool, member, &labels, &n_labels);
    if (rv != CKR_OK) {
        /* Out of service again, or no replication key anywhere in service: the next time it
         * comes back, or lacks a key under a request, tries again. */
        if (rv != HF_POOL_RV_UNAVAILABLE) {
            r.failed = pv.live.n;
            r.first_rv = rv;
            resync_audit(core, name, st[member].name, &r, t0);
        }
        hf_log_warn("pool %s: member %s not re-synced (0x%lx)", name, st[member].name,
                    (unsigned long)rv);
        versions_free(&pv);
        return;
    }
    resync_member(pool, repl, &pv, member, labels, n_labels, &r);
    /* Only a re-sync that changed or failed something is a record: one that found the member
     * whole happens at every open. */
    if (r.copied || r.failed || r.removed) {
        hf_log_info("pool %s: member %s re-synced: %zu copied, %zu failed, %zu removed", name,
                    st[member].name, r.copied, r.failed, r.removed);
        resync_audit(core, name, st[member].name, &r, t0);
    }
    hf_pool_labels_free(labels, n_labels);
    versions_free(&pv);
}
