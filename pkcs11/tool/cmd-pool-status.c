/* `holdfast pool show`'s live figures (issue 14, visibility): per member in service or not, calls
 * in flight against its limit, calls, queued calls, failures, failovers, the last call's time
 * and the p50/p99 of its latency histogram; per pool the queue's depth and its refusals. The
 * same figures as holdfastd's health answer and /metrics, but this process's: the CLI opens the
 * pool itself, so its counters start at zero and only health (which members open and answer)
 * says anything about the HSMs; holdfastd's /metrics has the gateway's own counts. */
#include "hf-build.h"

#include "pkcs11/tool/cmd-pool-status.h"

#include <stdlib.h>
#include <string.h>

void hf_cli_pool_live_clear(struct hf_cli_pool_live *live)
{
    free(live->members);
    free(live->st);
    memset(live, 0, sizeof(*live));
}

CK_RV hf_cli_pool_live_get(struct hf_cli *cli, const struct hf_store_pool *p,
                           struct hf_cli_pool_live *out)
{
    CK_RV rv;

    memset(out, 0, sizeof(*out));
    rv = hf_core_pool_status(cli->core, p->name, &out->members, &out->n);
    if (rv == CKR_OK && out->n > 0) rv = out->members[0].open_rv;
    if (rv != CKR_OK) return rv;
    if ((out->st = calloc(p->n_members, sizeof(*out->st))) == NULL) return CKR_HOST_MEMORY;
    /* Matched by name: the definition show prints was read before the status, and a pool
     * changed in between shows its new members' figures only where the names agree. */
    for (size_t i = 0; i < p->n_members; i++)
        for (size_t j = 0; j < out->n; j++)
            if (strcmp(out->members[j].member, p->members[i].name) == 0)
                out->st[i] = out->members[j].status;
    return CKR_OK;
}

static const char *member_state(const struct hf_pool_member_status *s)
{
    return s->disabled ? "disabled" : s->healthy ? "in" : "out";
}

/* A latency bucket's upper edge in words: "<=512us", "<=2.1ms", "<=8.4s"; "-" for no call. */
static void latency_text(uint64_t us, char *out, size_t outlen)
{
    if (us == 0)
        snprintf(out, outlen, "-");
    else if (us < 1000)
        snprintf(out, outlen, "<=%lluus", (unsigned long long)us);
    else if (us < 1000000)
        snprintf(out, outlen, "<=%.3gms", (double)us / 1e3);
    else
        snprintf(out, outlen, "<=%.3gs", (double)us / 1e6);
}

void hf_cli_pool_live_print(const struct hf_cli_pool_live *live)
{
    static const char *const headers[] = {"MEMBER",   "STATE",     "IN FLIGHT", "CALLS", "QUEUED",
                                          "FAILURES", "FAILOVERS", "LAST",      "P50",   "P99"};
    struct hf_table *t;

    if (live->st == NULL || live->n == 0) return;
    printf("queue:   %zu waiting (max %zu), %llu throttled, %llu unavailable\nlive:\n",
           live->members[0].queue.waiting, live->members[0].queue.queue_max,
           (unsigned long long)live->members[0].queue.throttled,
           (unsigned long long)live->members[0].queue.unavailable);
    if ((t = hf_table_new(10, headers)) == NULL) return;
    for (size_t i = 0; i < live->n; i++) {
        const struct hf_pool_member_status *s = &live->members[i].status;
        char flight[32], calls[24], queued[24], fails[24], fovers[24], last[24], p50[24], p99[24];
        snprintf(flight, sizeof(flight), "%u/%u", s->in_flight, s->concurrency);
        snprintf(calls, sizeof(calls), "%llu", (unsigned long long)s->calls);
        snprintf(queued, sizeof(queued), "%llu", (unsigned long long)s->queued);
        snprintf(fails, sizeof(fails), "%llu", (unsigned long long)s->failures);
        snprintf(fovers, sizeof(fovers), "%llu", (unsigned long long)s->failovers);
        if (s->calls == 0)
            snprintf(last, sizeof(last), "-");
        else
            snprintf(last, sizeof(last), "%lluus", (unsigned long long)s->last_latency_us);
        latency_text(hf_core_pool_latency_quantile_us(s->latency, 0.5), p50, sizeof(p50));
        latency_text(hf_core_pool_latency_quantile_us(s->latency, 0.99), p99, sizeof(p99));
        const char *row[10] = {live->members[i].member,
                               member_state(s),
                               flight,
                               calls,
                               queued,
                               fails,
                               fovers,
                               last,
                               p50,
                               p99};
        hf_table_add(t, row);
    }
    hf_table_print(t, stdout, "  ");
    hf_table_free(t);
}

static json_object *u64(uint64_t v)
{
    return json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

static void member_add(json_object *j, const struct hf_pool_member_status *s)
{
    json_object *hist = json_object_new_array();

    json_object_object_add(j, "disabled", json_object_new_boolean(s->disabled));
    json_object_object_add(j, "queued", u64(s->queued));
    json_object_object_add(j, "failovers", u64(s->failovers));
    json_object_object_add(j, "last_latency_us", u64(s->last_latency_us));
    json_object_object_add(j, "latency_sum_us", u64(s->latency_sum_us));
    json_object_object_add(j, "p50_us", u64(hf_core_pool_latency_quantile_us(s->latency, 0.5)));
    json_object_object_add(j, "p99_us", u64(hf_core_pool_latency_quantile_us(s->latency, 0.99)));
    /* Bucket i: calls that took [2^i, 2^(i+1)) us, the last one everything longer. */
    for (size_t b = 0; hist && b < HF_POOL_LATENCY_BUCKETS; b++)
        json_object_array_add(hist, u64(s->latency[b]));
    if (hist) json_object_object_add(j, "latency_log2_us", hist);
}

void hf_cli_pool_live_json(const struct hf_cli_pool_live *live, json_object *pool)
{
    json_object *members, *q;

    if (pool == NULL || live->st == NULL || live->n == 0) return;
    if ((q = json_object_new_object()) != NULL) {
        json_object_object_add(q, "waiting", u64(live->members[0].queue.waiting));
        json_object_object_add(q, "max", u64(live->members[0].queue.queue_max));
        json_object_object_add(q, "throttled", u64(live->members[0].queue.throttled));
        json_object_object_add(q, "unavailable", u64(live->members[0].queue.unavailable));
        json_object_object_add(pool, "queue", q);
    }
    if (!json_object_object_get_ex(pool, "members", &members)) return;
    for (size_t i = 0; i < json_object_array_length(members); i++) {
        json_object *m = json_object_array_get_idx(members, i), *name;
        if (!json_object_object_get_ex(m, "name", &name)) continue;
        for (size_t j = 0; j < live->n; j++)
            if (strcmp(live->members[j].member, json_object_get_string(name)) == 0)
                member_add(m, &live->members[j].status);
    }
}
