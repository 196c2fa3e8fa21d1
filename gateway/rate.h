/* The token bucket behind plugin.h's hf_rate_*: the gateway's side of it, for tests that drive
 * the bucket with a clock of their own instead of sleeping. */
#ifndef HF_GATEWAY_RATE_H
#define HF_GATEWAY_RATE_H

#include "gateway/plugin.h"

/* hf_rate_allow at time now_us (hf_now_us's scale; a time before the last call adds nothing). */
bool hf_gw_rate_allow_at(struct hf_rate *rate, uint64_t now_us);

#endif /* HF_GATEWAY_RATE_H */
