/* Loading plugins and building a generation (plugins.h). A plugin is a shared object exporting
 * hf_plugin_entry(); it resolves the hf_* functions of plugin.h from holdfastd itself (linked
 * with -export-dynamic). dlopen of an already loaded object only counts a reference, so a
 * reload reuses the code and makes a fresh state. */
#include "hf-build.h"

#include "gateway/p11.h"
#include "gateway/plugins.h"
#include "gateway/conf-value.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef const struct hf_plugin *(*entry_fn)(void);

static void plugin_unload(struct hf_gw_plugin *pl)
{
    if (pl->state && pl->p && pl->p->destroy) pl->p->destroy(pl->state);
    pl->state = NULL;
    if (pl->dl) dlclose(pl->dl);
    pl->dl = NULL;
    free(pl->name);
    free(pl->path);
}

/* A plugin that would crash us later is refused now. */
static bool plugin_is_valid(const struct hf_plugin *p, const char *name, char *why, size_t len)
{
    if (p->abi_version != HF_PLUGIN_ABI_VERSION) {
        snprintf(why, len, "ABI version %u, holdfastd speaks %u", (unsigned)p->abi_version,
                 (unsigned)HF_PLUGIN_ABI_VERSION);
        return false;
    }
    if (!p->name || strcmp(p->name, name) != 0) {
        snprintf(why, len, "calls itself \"%s\"", p->name ? p->name : "(null)");
        return false;
    }
    if (!p->errors || !p->error_body || !p->create || !p->configure || !p->destroy ||
        (p->nroutes && !p->routes)) {
        snprintf(why, len, "incomplete struct hf_plugin");
        return false;
    }
    for (size_t i = 0; i < p->nroutes; i++)
        if (!p->routes[i].method || !p->routes[i].pattern || !p->routes[i].operation ||
            !p->routes[i].handle) {
            snprintf(why, len, "route %zu is incomplete", i);
            return false;
        }
    for (size_t i = 1; i < HF_STATUS_COUNT; i++)
        if (p->errors[i].http_status < 100 || p->errors[i].http_status > 599 ||
            !p->errors[i].name) {
            snprintf(why, len, "error table row %zu is incomplete", i);
            return false;
        }
    return true;
}

static bool plugin_load(const struct hf_gw_config *cfg, const struct hf_gw_plugin_conf *pc,
                        struct hf_gw_plugin *pl, char *err, size_t errlen)
{
    char why[256];
    entry_fn entry;
    size_t need;

    if (pc->path) {
        pl->path = strdup(pc->path);
    } else {
        need = strlen(cfg->plugin_dir) + strlen(pc->name) + 5;
        if ((pl->path = malloc(need)))
            snprintf(pl->path, need, "%s/%s.so", cfg->plugin_dir, pc->name);
    }
    if (!(pl->name = strdup(pc->name)) || !pl->path) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    /* RTLD_NODELETE: what a plugin caches in OpenSSL (fetched algorithms) must stay reachable
     * after a reload drops its last reference; replacing a plugin's file needs a restart. */
    if (!(pl->dl = dlopen(pl->path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE))) {
        snprintf(err, errlen, "%s:%u: plugin %s: %s", cfg->path, pc->line, pc->name, dlerror());
        return false;
    }
    *(void **)&entry = dlsym(pl->dl, "hf_plugin_entry");
    if (!entry || !(pl->p = entry())) {
        snprintf(err, errlen, "%s:%u: plugin %s: %s has no hf_plugin_entry", cfg->path, pc->line,
                 pc->name, pl->path);
        return false;
    }
    if (!plugin_is_valid(pl->p, pc->name, why, sizeof(why))) {
        snprintf(err, errlen, "%s:%u: plugin %s (%s): %s", cfg->path, pc->line, pc->name, pl->path,
                 why);
        pl->p = NULL; /* not ours to call destroy on */
        return false;
    }
    if (!(pl->state = pl->p->create())) {
        snprintf(err, errlen, "plugin %s: out of memory", pc->name);
        return false;
    }
    pl->success_events = hf_gw_config_success_events(cfg, pc->name);
    return true;
}

static struct hf_gw_plugin *plugin_for_section(struct hf_gw_generation *gen, const char *section,
                                               const char **instance)
{
    size_t len = strcspn(section, ":");

    for (size_t i = 0; i < gen->nplugins; i++)
        if (strlen(gen->plugins[i].name) == len &&
            memcmp(gen->plugins[i].name, section, len) == 0) {
            *instance = section[len] == ':' ? section + len + 1 : "";
            return &gen->plugins[i];
        }
    return NULL;
}

static bool settings_hand_out(struct hf_gw_generation *gen, char *err, size_t errlen)
{
    const struct hf_gw_config *cfg = gen->config;

    for (size_t i = 0; i < cfg->nsettings; i++) {
        const struct hf_gw_setting *s = &cfg->settings[i];
        const char *instance = "";
        struct hf_gw_plugin *pl = plugin_for_section(gen, s->section, &instance);
        char why[256] = "";

        if (!pl) {
            snprintf(err, errlen, "%s:%u: unknown section [%s] (no plugin of that name)", cfg->path,
                     s->line, s->section);
            return false;
        }
        if (!pl->p->configure(pl->state, instance, s->name, s->value, why, sizeof(why))) {
            snprintf(err, errlen, "%s:%u: [%s] %s: %s", cfg->path, s->line, s->section, s->name,
                     why[0] ? why : "refused");
            return false;
        }
    }
    return true;
}

/* Each line to its plugin, with the file's directory as hf_conf_path's base meanwhile (at start
 * and on every SIGHUP alike: both come here). */
static bool settings_apply(struct hf_gw_generation *gen, char *err, size_t errlen)
{
    bool ok;

    hf_gw_conf_dir_set(gen->config->dir);
    ok = settings_hand_out(gen, err, errlen);
    hf_gw_conf_dir_set(NULL);
    return ok;
}

/* plugin.h's accepts asks the plugin's state of this generation; the router hands over the path
 * server.c gave it, which is NUL-terminated at pathlen (req->path). */
static bool route_accepts(void *data, const char *path, size_t pathlen)
{
    const struct hf_gw_route *r = data;

    (void)pathlen;
    return r->route->accepts(r->plugin->state, path);
}

static bool router_build(struct hf_gw_generation *gen, const struct hf_gw_listen *l,
                         struct hf_router **out, char *err, size_t errlen)
{
    if (!(*out = hf_router_new())) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    for (size_t k = 0; k < gen->nroutes; k++) {
        const struct hf_gw_route *r = &gen->routes[k];
        char why[160];

        if (!hf_gw_config_listen_serves(l, r->plugin->name)) continue;
        if (!hf_router_add_filtered(*out, r->route->method, r->route->pattern, (void *)r,
                                    r->route->accepts ? route_accepts : NULL, why, sizeof(why))) {
            snprintf(err, errlen, "plugin %s: route %s %s: %s", r->plugin->name, r->route->method,
                     r->route->pattern, why);
            return false;
        }
    }
    return true;
}

static unsigned plugin_limit_ms(const struct hf_gw_plugin *pl)
{
    return pl->p->latency_limit_ms ? pl->p->latency_limit_ms : HF_GW_DEFAULT_LATENCY_LIMIT_MS;
}

struct hf_gw_series *hf_gw_route_series(const struct hf_gw_route *route, const char *operation)
{
    struct hf_gw_route *r = (struct hf_gw_route *)route; /* the cache only */
    struct hf_gw_series *s;

    if (!r || !operation) return NULL;
    if (strcmp(operation, r->route->operation) == 0) return r->series;
    for (size_t i = 0; i < HF_GW_ROUTE_OPERATIONS; i++) {
        const char *op = atomic_load_explicit(&r->ops[i].operation, memory_order_acquire);
        if (!op) break;
        if (op == operation || strcmp(op, operation) == 0) {
            if ((s = atomic_load_explicit(&r->ops[i].series, memory_order_acquire))) return s;
            break;
        }
    }
    s = hf_gw_metrics_series(r->plugin->name, operation, plugin_limit_ms(r->plugin));
    for (size_t i = 0; s && i < HF_GW_ROUTE_OPERATIONS; i++) {
        const char *expected = NULL;
        /* operation outlives the request (plugin.h: a literal), and so the generation. */
        if (atomic_compare_exchange_strong(&r->ops[i].operation, &expected, operation)) {
            atomic_store_explicit(&r->ops[i].series, s, memory_order_release);
            break;
        }
        if (expected == operation || strcmp(expected, operation) == 0) break;
    }
    return s;
}

static bool routes_build(struct hf_gw_generation *gen, char *err, size_t errlen)
{
    const struct hf_gw_config *cfg = gen->config;
    size_t n = 0, k = 0;

    for (size_t i = 0; i < gen->nplugins; i++)
        n += gen->plugins[i].p->nroutes;
    if ((n && !(gen->routes = calloc(n, sizeof(*gen->routes)))) ||
        (cfg->nlistens && !(gen->routers = calloc(cfg->nlistens, sizeof(*gen->routers))))) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    for (size_t i = 0; i < gen->nplugins; i++) {
        struct hf_gw_plugin *pl = &gen->plugins[i];
        for (size_t r = 0; r < pl->p->nroutes; r++, k++) {
            gen->routes[k].plugin = pl;
            gen->routes[k].route = &pl->p->routes[r];
            gen->routes[k].series =
                hf_gw_metrics_series(pl->name, pl->p->routes[r].operation, plugin_limit_ms(pl));
        }
    }
    gen->nroutes = n;
    for (size_t i = 0; i < cfg->nlistens; i++) {
        gen->nrouters = i + 1; /* so a failure frees what was made */
        if (!router_build(gen, &cfg->listens[i], &gen->routers[i], err, errlen)) return false;
    }
    return true;
}

struct hf_gw_generation *hf_gw_generation_build(struct hf_gw_config *cfg, bool start, char *err,
                                                size_t errlen)
{
    struct hf_gw_generation *gen = calloc(1, sizeof(*gen));

    if (!gen) {
        hf_gw_config_free(cfg);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    atomic_init(&gen->refs, 1);
    gen->config = cfg;
    if (cfg->nplugins && !(gen->plugins = calloc(cfg->nplugins, sizeof(*gen->plugins)))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < cfg->nplugins; i++) {
        gen->nplugins = i + 1; /* so a failure unloads what was loaded */
        if (!plugin_load(cfg, &cfg->plugins[i], &gen->plugins[i], err, errlen)) goto fail;
    }
    if (!settings_apply(gen, err, errlen)) goto fail;
    for (size_t i = 0; start && i < gen->nplugins; i++) {
        struct hf_gw_plugin *pl = &gen->plugins[i];
        char why[256] = "";
        /* Before start, which may look its links up: `holdfast link add` then accepts them. */
        if (pl->p->link_type && !hf_gw_p11_link_type_register(pl->p->link_type, why, sizeof(why))) {
            snprintf(err, errlen, "plugin %s: %s", pl->name, why);
            goto fail;
        }
        if (pl->p->start && !pl->p->start(pl->state, why, sizeof(why))) {
            snprintf(err, errlen, "plugin %s: %s", pl->name, why[0] ? why : "start failed");
            goto fail;
        }
        pl->started = true;
    }
    if (!routes_build(gen, err, errlen)) goto fail;
    return gen;
fail:
    hf_gw_generation_unref(gen);
    return NULL;
}

struct hf_router *hf_gw_generation_router(const struct hf_gw_generation *gen, size_t listener)
{
    return gen && listener < gen->nrouters ? gen->routers[listener] : NULL;
}

struct hf_gw_generation *hf_gw_generation_ref(struct hf_gw_generation *gen)
{
    if (gen) atomic_fetch_add_explicit(&gen->refs, 1, memory_order_relaxed);
    return gen;
}

void hf_gw_generation_unref(struct hf_gw_generation *gen)
{
    if (!gen || atomic_fetch_sub_explicit(&gen->refs, 1, memory_order_acq_rel) != 1) return;
    for (size_t i = 0; i < gen->nrouters; i++)
        hf_router_free(gen->routers[i]);
    free(gen->routers);
    free(gen->routes);
    for (size_t i = 0; i < gen->nplugins; i++)
        plugin_unload(&gen->plugins[i]);
    free(gen->plugins);
    hf_gw_config_free(gen->config);
    free(gen);
}
