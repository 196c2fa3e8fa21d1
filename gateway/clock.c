/* The one clock of the gateway and its plugins (plugin.h, "clock, deadline, rate limit"):
 * CLOCK_MONOTONIC, so a wall-clock step (NTP, an operator) neither stretches nor shortens a
 * deadline, a cache age or a rate; the wall clock only where a protocol names epoch seconds.
 * Pure libc: hf-load (tests/load) links this file too. */
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
