/* plugin.h's clock. Stand-in until the seam branch's clock lands: on that merge, keep the
 * seam's file and drop this one (same two functions, same meaning). */
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
    return (int64_t)time(NULL);
}
