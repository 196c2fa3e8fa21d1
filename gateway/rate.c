/* A token bucket (plugin.h): it starts full, refills per_second tokens a second up to burst, and
 * each allowed call takes one. One mutex per bucket: a bucket belongs to one limit (an XKS key
 * store, an EKM prefix), and the critical section is a few arithmetic operations. */
#include "hf-build.h"

#include "gateway/rate.h"
#include "gateway/request.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

struct hf_rate {
    double per_second; /* 0 with burst 0: no limit */
    double burst;
    pthread_mutex_t lock; /* guards tokens and refilled_us */
    double tokens;
    uint64_t refilled_us;
};

static double non_negative(double v)
{
    return isfinite(v) && v > 0 ? v : 0;
}

HF_PLUGIN_EXPORT struct hf_rate *hf_rate_new(double per_second, double burst)
{
    struct hf_rate *rate = calloc(1, sizeof(*rate));

    if (rate == NULL) return NULL;
    rate->per_second = non_negative(per_second);
    rate->burst = non_negative(burst);
    if (rate->burst == 0) rate->burst = rate->per_second;
    /* A bucket that cannot hold one token would refuse everything (0.5 a second, no burst). */
    if (rate->burst > 0 && rate->burst < 1) rate->burst = 1;
    rate->tokens = rate->burst;
    rate->refilled_us = hf_now_us();
    pthread_mutex_init(&rate->lock, NULL);
    return rate;
}

bool hf_gw_rate_allow_at(struct hf_rate *rate, uint64_t now_us)
{
    bool ok;

    /* NULL (a limit never made) and hf_rate_new(0, 0) limit nothing. */
    if (rate == NULL || rate->burst == 0) return true;
    pthread_mutex_lock(&rate->lock);
    if (now_us > rate->refilled_us) {
        rate->tokens += (double)(now_us - rate->refilled_us) * rate->per_second / 1e6;
        if (rate->tokens > rate->burst) rate->tokens = rate->burst;
        rate->refilled_us = now_us;
    }
    ok = rate->tokens >= 1.0;
    if (ok) rate->tokens -= 1.0;
    pthread_mutex_unlock(&rate->lock);
    return ok;
}

HF_PLUGIN_EXPORT bool hf_rate_allow(struct hf_rate *rate)
{
    return hf_gw_rate_allow_at(rate, hf_now_us());
}

HF_PLUGIN_EXPORT void hf_rate_free(struct hf_rate *rate)
{
    if (rate == NULL) return;
    pthread_mutex_destroy(&rate->lock);
    free(rate);
}

HF_PLUGIN_EXPORT enum hf_status hf_request_rate_check(struct hf_request *req, struct hf_rate *rate,
                                                      const char *who)
{
    /* A handler run again from the start (its key is an HSM pool's: server.c) took its token in
     * the first run: the same request is not charged twice. */
    if (req && hf_gw_request_rate_is_spent(req, rate)) return HF_STATUS_OK;
    if (hf_rate_allow(rate)) {
        if (req) hf_gw_request_rate_spend(req, rate);
        return HF_STATUS_OK;
    }
    return hf_request_fail(req, HF_STATUS_THROTTLED, "%s is over its rate limit of %g per second",
                           who, rate->per_second);
}
