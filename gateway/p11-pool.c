/* plugin.h's hf_p11_pool_status: every HSM pool member's live status through the module's
 * HF_GetPoolStatus (vendor interface 1.7: its struct gained the latency sum there), for the health answers and /metrics. Never on a key
 * operation's path: the module reads every pool's state for it. */
#include "hf-build.h"

#include "gateway/hsm-workers.h"
#include "gateway/p11.h"

#include <stdlib.h>
#include <string.h>

/* One call usually does: room for this many members is asked for first, so a scrape reads the
 * pools once; a larger answer is asked for again at its size (and again should a pool be added
 * in between: three rounds at most, a store that keeps changing is not worth holding it for). */
#define POOL_STATUS_FIRST_GUESS 16
#define POOL_STATUS_TRIES 3

struct merge {
    HF_POOL_MEMBER_STATUS *m;
    size_t n;
};

/* A request on a pool key waits for a member in the gateway's worker queue now, not in the
 * module's (hsm-workers.h), and a full one is answered there: from outside (health answers,
 * /metrics) both are the pool's, so its queue and refusals include the gateway's. */
static void merge_one(const char *pool, const struct hf_gw_workers_stats *st, void *arg)
{
    struct merge *mg = arg;

    for (size_t i = 0; i < mg->n; i++) {
        if (strncmp(mg->m[i].pool, pool, sizeof(mg->m[i].pool)) != 0) continue;
        mg->m[i].queue_waiting += (CK_ULONG)st->queued;
        mg->m[i].throttled += st->throttled;
    }
}

HF_PLUGIN_EXPORT bool hf_p11_pool_status(HF_POOL_MEMBER_STATUS **out, size_t *n)
{
    const HF_FUNCTION_LIST *v = hf_p11_vendor();
    CK_ULONG count = POOL_STATUS_FIRST_GUESS;

    if (out == NULL || n == NULL) return false;
    *out = NULL;
    *n = 0;
    if (v == NULL || v->version.minor < 7 || v->HF_GetPoolStatus == NULL) return false;
    for (int i = 0; i < POOL_STATUS_TRIES; i++) {
        HF_POOL_MEMBER_STATUS *m = calloc(count ? count : 1, sizeof(*m));
        CK_RV rv;

        if (m == NULL) return false;
        rv = v->HF_GetPoolStatus(m, &count);
        if (rv == CKR_OK && count > 0) {
            struct merge mg = {m, count};
            hf_gw_hsm_workers_each(merge_one, &mg);
            *out = m;
            *n = count;
            return true;
        }
        free(m);
        if (rv == CKR_OK) return true; /* no pool */
        if (rv != CKR_BUFFER_TOO_SMALL) return false;
    }
    return false;
}
