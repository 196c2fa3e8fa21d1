/* A pool's live status on this node (issue 14, visibility): each member of its definition in the
 * store beside the executor's figures (pool.h's hf_pool_status and hf_pool_queue_status), for
 * holdfastd's health answers and /metrics (through the module's HF_GetPoolStatus) and for
 * `holdfast pool show`.
 *
 * Nothing here is on a key operation's path: status is read when a health check or a scrape
 * asks. Once a pool is open this reads no backend (a snapshot under the pool's lock); a pool
 * this node has not used yet is opened as a key's first use would open it, and kept. */
#include "hf-build.h"

#include "core-internal.h"

#include <stdlib.h>
#include <string.h>

/* The definition says which module and token a member is; the token's own model would need a
 * backend call per member on every scrape, and a dead member could not answer it. */
static void member_model(const struct hf_store_pool_member *m, char *out, size_t outlen)
{
    const char *base = strrchr(m->module_path, '/');

    base = base ? base + 1 : m->module_path;
    if (m->token_label)
        snprintf(out, outlen, "%s token %s", base, m->token_label);
    else
        snprintf(out, outlen, "%s serial %s", base, m->token_serial ? m->token_serial : "?");
}

/* Member i of the definition matched by name in the executor's snapshot: the executor keeps
 * the definition's order, but the name is what ties the two. */
static const struct hf_pool_member_status *snapshot_find(const struct hf_pool_member_status *st,
                                                         size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (st[i].name && strcmp(st[i].name, name) == 0) return &st[i];
    return NULL;
}

/* Fills out[0..def->n_members) from def and, when open_rv is CKR_OK, pool's snapshot. */
static void live_fill(const struct hf_store_pool *def, struct hf_pool *pool, CK_RV open_rv,
                      struct hf_core_pool_live *out)
{
    struct hf_pool_member_status st[HF_POOL_MEMBERS_MAX];
    struct hf_pool_queue_status q = {0};
    size_t n = 0;

    if (open_rv == CKR_OK) {
        n = hf_pool_status(pool, st, HF_POOL_MEMBERS_MAX);
        if (n > HF_POOL_MEMBERS_MAX) n = HF_POOL_MEMBERS_MAX;
        hf_pool_queue_status(pool, &q);
    }
    for (size_t i = 0; i < def->n_members; i++) {
        const struct hf_store_pool_member *m = &def->members[i];
        const struct hf_pool_member_status *found = snapshot_find(st, n, m->name);
        struct hf_core_pool_live *l = &out[i];

        memset(l, 0, sizeof(*l));
        snprintf(l->pool, sizeof(l->pool), "%s", def->name);
        snprintf(l->member, sizeof(l->member), "%s", m->name);
        member_model(m, l->model, sizeof(l->model));
        l->open_rv = open_rv;
        l->status.concurrency = m->concurrency;
        if (found) l->status = *found;
        l->status.name = NULL; /* the pool's copy: the caller may outlive it */
        l->queue = q;
    }
}

/* Appends def's members to *out (capacity *cap, *n used). */
static CK_RV pool_append(struct hf_core *core, const struct hf_store_pool *def,
                         struct hf_core_pool_live **out, size_t *n, size_t *cap)
{
    struct hf_pool *pool = NULL;
    CK_RV open_rv;

    if (*n + def->n_members > *cap) {
        size_t want = *n + def->n_members + 8;
        struct hf_core_pool_live *grown = realloc(*out, want * sizeof(**out));
        if (grown == NULL) return CKR_HOST_MEMORY;
        *out = grown;
        *cap = want;
    }
    /* No lock of ours is held: core_pool_use opens outside its list lock. */
    open_rv = core_pool_use(core, def->name, &pool);
    live_fill(def, pool, open_rv, *out + *n);
    *n += def->n_members;
    return CKR_OK;
}

CK_RV hf_core_pool_status(struct hf_core *core, const char *name, struct hf_core_pool_live **out,
                          size_t *n)
{
    struct hf_store_pool def = {0};
    size_t cap = 0;
    CK_RV rv;

    if (core == NULL || name == NULL || out == NULL || n == NULL) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    *n = 0;
    if ((rv = hf_store_pool_get(core->store, name, &def)) != CKR_OK) return rv;
    rv = pool_append(core, &def, out, n, &cap);
    hf_store_pool_clear(&def);
    if (rv != CKR_OK) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rv;
}

CK_RV hf_core_pools_status(struct hf_core *core, struct hf_core_pool_live **out, size_t *n)
{
    struct hf_store_pool *defs = NULL;
    size_t ndefs = 0, cap = 0;
    CK_RV rv;

    if (core == NULL || out == NULL || n == NULL) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    *n = 0;
    if ((rv = hf_store_pool_list(core->store, &defs, &ndefs)) != CKR_OK) return rv;
    for (size_t i = 0; rv == CKR_OK && i < ndefs; i++)
        rv = pool_append(core, &defs[i], out, n, &cap);
    if (rv == CKR_OK) rv = core_root_pools_append(core, out, n);
    hf_core_pools_free(defs, ndefs);
    if (rv != CKR_OK) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rv;
}

uint64_t hf_core_pool_latency_quantile_us(const uint64_t latency[HF_POOL_LATENCY_BUCKETS], double q)
{
    uint64_t total = 0, seen = 0, rank;

    for (size_t i = 0; i < HF_POOL_LATENCY_BUCKETS; i++)
        total += latency[i];
    if (total == 0) return 0;
    if (q < 0) q = 0;
    if (q > 1) q = 1;
    /* The rank of the call at q, counted from 1 (nearest-rank), so q = 0.5 of 2 calls is the
     * first and q = 1 the last. */
    rank = (uint64_t)(q * (double)total + 0.999999);
    if (rank == 0) rank = 1;
    for (size_t i = 0; i < HF_POOL_LATENCY_BUCKETS; i++) {
        seen += latency[i];
        if (seen >= rank) return (uint64_t)1 << (i + 1);
    }
    return (uint64_t)1 << HF_POOL_LATENCY_BUCKETS;
}
