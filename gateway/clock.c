/* The one clock of the gateway and its plugins (plugin.h, "clock, deadline, rate limit"):
 * CLOCK_MONOTONIC, so a wall-clock step (NTP, an operator) neither stretches nor shortens a
 * deadline, a cache age or a rate; the wall clock only where a protocol names epoch seconds. */
#include "hf-build.h"

#include "gateway/plugin.h"

#include <time.h>

HF_PLUGIN_EXPORT uint64_t hf_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

HF_PLUGIN_EXPORT int64_t hf_wall_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

HF_PLUGIN_EXPORT bool hf_request_past_deadline(const struct hf_request *req, unsigned deadline_ms)
{
    uint64_t received, now;

    if (req == NULL || deadline_ms == 0) return false;
    received = hf_request_received_us(req);
    now = hf_now_us();
    /* 0: a request built without a server (plugin unit tests) has no arrival time. */
    if (received == 0 || now < received) return false;
    return now - received > (uint64_t)deadline_ms * 1000u;
}
