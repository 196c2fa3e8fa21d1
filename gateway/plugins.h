/* A generation: one configuration with its plugins loaded, configured and started, and the
 * router over their routes. Built at start and on every SIGHUP (reload.c); reference-counted, so
 * requests in flight finish on the generation they started on. */
#ifndef HF_GATEWAY_PLUGINS_H
#define HF_GATEWAY_PLUGINS_H

#include "gateway/config.h"
#include "gateway/metrics.h"
#include "gateway/plugin.h"
#include "gateway/router.h"

#include <stdatomic.h>

struct hf_gw_plugin {
    char *name;
    char *path;
    void *dl;
    const struct hf_plugin *p;
    void *state;
    bool started;
    bool success_events;
};

#define HF_GW_ROUTE_OPERATIONS 8

/* What a route's router entry points to. */
struct hf_gw_route {
    struct hf_gw_plugin *plugin;
    const struct hf_route *route;
    struct hf_gw_series *series;
    /* The series of operations its handler named (hf_request_set_operation), found without the
     * metrics lock once seen: a slot's operation is published after its series. */
    struct {
        _Atomic(const char *) operation;
        _Atomic(struct hf_gw_series *) series;
    } ops[HF_GW_ROUTE_OPERATIONS];
};

struct hf_gw_generation {
    atomic_uint refs;
    struct hf_gw_config *config; /* owned */
    struct hf_gw_plugin *plugins;
    size_t nplugins;
    struct hf_gw_route *routes;
    size_t nroutes;
    /* One router per listener of config (same order), over the routes of the plugins that
     * listener serves: elsewhere a route is no route, the gateway's generic 404. */
    struct hf_router **routers;
    size_t nrouters;
};

/* Loads cfg's plugins, hands each its sections (configure) and, when start is true, starts
 * them (start may use the PKCS#11 connection, which must then be open). Takes cfg in every case.
 * A plugin's metrics series get its latency limit (struct hf_plugin.latency_limit_ms).
 * NULL with "file:line: why" (or "plugin NAME: why") in err. */
struct hf_gw_generation *hf_gw_generation_build(struct hf_gw_config *cfg, bool start, char *err,
                                                size_t errlen);
struct hf_gw_generation *hf_gw_generation_ref(struct hf_gw_generation *gen);
/* The router of listener number listener; NULL when there is no such listener. */
struct hf_router *hf_gw_generation_router(const struct hf_gw_generation *gen, size_t listener);
/* The metrics series of (route's plugin, operation), with the plugin's latency limit; NULL if
 * out of memory. Lock-free for the first HF_GW_ROUTE_OPERATIONS operations of a route. */
struct hf_gw_series *hf_gw_route_series(const struct hf_gw_route *route, const char *operation);
/* The last reference destroys the plugins' states and the routers. */
void hf_gw_generation_unref(struct hf_gw_generation *gen);

#endif /* HF_GATEWAY_PLUGINS_H */
