/* GetHealthStatus's ekmFleetDetails for the HSM pool members behind the module (issue 14): one
 * entry per member, its healthStatus from the pool's live status. Pure (json-c only), for the
 * health route and tests/unit/test-xks-fleet.c. */
#ifndef HF_XKS_HEALTH_FLEET_H
#define HF_XKS_HEALTH_FLEET_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "pkcs11/module/holdfast.h"

/* The spec allows one to ten entries in ekmFleetDetails. */
#define HF_XKS_FLEET_MAX 10

/* The spec's healthStatus of a member: UNAVAILABLE when out of service (or its pool cannot be
 * opened here), DEGRADED when in service but saturated (every slot in flight and callers
 * waiting in its pool's queue: it serves, but a burst is throttled), else ACTIVE. */
const char *hf_xks_fleet_status(const HF_POOL_MEMBER_STATUS *m);

/* Appends {"id":"POOL/MEMBER","model":…,"healthStatus":…} for members[0..n) to the array fleet
 * while it holds fewer than HF_XKS_FLEET_MAX entries; *dropped counts those left out. false
 * when out of memory. */
bool hf_xks_fleet_add_pools(struct json_object *fleet, const HF_POOL_MEMBER_STATUS *members,
                            size_t n, size_t *dropped);

#endif
