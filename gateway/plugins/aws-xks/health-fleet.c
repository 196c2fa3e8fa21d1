/* ekmFleetDetails entries for HSM pool members (health-fleet.h). */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/health-fleet.h"

#include <stdio.h>
#include <string.h>

const char *hf_xks_fleet_status(const HF_POOL_MEMBER_STATUS *m)
{
    if (m->open_result != CKR_OK || !m->healthy) return "UNAVAILABLE";
    /* "unhealthy but can still serve traffic" (spec, GetHealthStatus): a member at its limit
     * with callers queued is the one such state the pool can tell without history. */
    if (m->concurrency > 0 && m->in_flight >= m->concurrency && m->queue_waiting > 0)
        return "DEGRADED";
    return "ACTIVE";
}

static struct json_object *fleet_entry(const HF_POOL_MEMBER_STATUS *m)
{
    struct json_object *e = json_object_new_object();
    /* Names are [a-z0-9-] and NUL-terminated within their buffers (holdfast.h); the bounds keep
     * a module that forgot the NUL from being read past them. */
    int model_len = (int)strnlen(m->model, sizeof(m->model));
    char id[2 * HF_POOL_NAME_BUF + 1];

    if (e == NULL) return NULL;
    snprintf(id, sizeof(id), "%.*s/%.*s", (int)sizeof(m->pool) - 1, m->pool,
             (int)sizeof(m->member) - 1, m->member);
    if (json_object_object_add(e, "id", json_object_new_string(id)) != 0 ||
        json_object_object_add(e, "model", json_object_new_string_len(m->model, model_len)) != 0 ||
        json_object_object_add(e, "healthStatus", json_object_new_string(hf_xks_fleet_status(m))) !=
            0) {
        json_object_put(e);
        return NULL;
    }
    return e;
}

bool hf_xks_fleet_add_pools(struct json_object *fleet, const HF_POOL_MEMBER_STATUS *members,
                            size_t n, size_t *dropped)
{
    *dropped = 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *e;
        if (json_object_array_length(fleet) >= HF_XKS_FLEET_MAX) {
            *dropped = n - i;
            break;
        }
        if ((e = fleet_entry(&members[i])) == NULL) return false;
        if (json_object_array_add(fleet, e) != 0) {
            json_object_put(e);
            return false;
        }
    }
    return true;
}
