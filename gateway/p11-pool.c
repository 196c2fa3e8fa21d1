/* plugin.h's hf_p11_pool_status: every HSM pool member's live status through the module's
 * HF_GetPoolStatus (vendor interface 1.6), for the health answers and /metrics. Never on a key
 * operation's path: the module reads every pool's state for it. */
#include "hf-build.h"

#include "gateway/p11.h"

#include <stdlib.h>

/* A pool added between the two calls of the convention asks for one more round; a store that
 * keeps changing under three rounds is not worth holding the scrape for. */
#define POOL_STATUS_TRIES 3

HF_PLUGIN_EXPORT bool hf_p11_pool_status(HF_POOL_MEMBER_STATUS **out, size_t *n)
{
    const HF_FUNCTION_LIST *v = hf_p11_vendor();

    if (out == NULL || n == NULL) return false;
    *out = NULL;
    *n = 0;
    if (v == NULL || v->version.minor < 6 || v->HF_GetPoolStatus == NULL) return false;
    for (int i = 0; i < POOL_STATUS_TRIES; i++) {
        CK_ULONG count = 0;
        HF_POOL_MEMBER_STATUS *m;
        CK_RV rv;

        if (v->HF_GetPoolStatus(NULL, &count) != CKR_OK) return false;
        if (count == 0) return true;
        if ((m = calloc(count, sizeof(*m))) == NULL) return false;
        rv = v->HF_GetPoolStatus(m, &count);
        if (rv == CKR_OK) {
            *out = m;
            *n = count;
            return true;
        }
        free(m);
        if (rv != CKR_BUFFER_TOO_SMALL) return false;
    }
    return false;
}
