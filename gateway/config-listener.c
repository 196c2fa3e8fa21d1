/* [listener:NAME] sections (config.h): a listener with its own address, TLS policy and plugins,
 * so an mTLS API and a bearer-token API share one holdfastd on different ports. The [gateway]
 * listen lines stay as they were: a listener each, with [tls]'s policy, serving every plugin. */
#include "hf-build.h"

#include "gateway/config-internal.h"
#include "gateway/plugin.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static struct hf_gw_listen *listener_of(struct hf_gw_parse *ctx, const char *name)
{
    struct hf_gw_config *cfg = ctx->cfg;
    struct hf_gw_listen *l;

    for (size_t i = 0; i < cfg->nlistens; i++)
        if (cfg->listens[i].own_tls && strcmp(cfg->listens[i].name, name) == 0)
            return &cfg->listens[i];
    if (!hf_gw_cfg_name_is_valid(name, strlen(name))) {
        hf_gw_cfg_fail(ctx, "bad listener name \"%s\" (a-z, 0-9, '-', '_')", name);
        return NULL;
    }
    if (!(l = hf_gw_cfg_push(ctx, (void **)&cfg->listens, &cfg->nlistens, sizeof(*l)))) return NULL;
    l->own_tls = true;
    l->tls = true; /* plain HTTP only when asked for */
    l->line = ctx->line;
    if (!(l->name = strdup(name))) {
        ctx->oom = true;
        return NULL;
    }
    return l;
}

static bool client_cert_set(struct hf_gw_parse *ctx, struct hf_gw_tls_conf *t, const char *v)
{
    static const char *const modes[] = {"off", "optional", "required"};

    for (unsigned i = 0; i < 3; i++)
        if (strcmp(v, modes[i]) == 0) {
            t->client_cert = (enum hf_gw_client_cert)i;
            t->client_cert_line = ctx->line;
            return true;
        }
    hf_gw_cfg_fail(ctx, "client_certificate: required, optional or off, got \"%s\"", v);
    return false;
}

/* "a, b c": plugin names separated by commas or blanks. */
static bool plugins_set(struct hf_gw_parse *ctx, struct hf_gw_listen *l, const char *v)
{
    const char *p = v;
    char name[65];

    l->plugins_line = ctx->line;
    while (*p) {
        size_t n;
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        if ((n = strcspn(p, ", \t")) == 0) break;
        if (!hf_gw_cfg_name_is_valid(p, n)) {
            hf_gw_cfg_fail(ctx, "plugins: bad plugin name \"%.*s\"", (int)n, p);
            return false;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        if (!hf_gw_cfg_strings_push(ctx, &l->plugins, &l->nplugins, name)) return false;
        p += n;
    }
    if (l->nplugins == 0) {
        hf_gw_cfg_fail(ctx, "plugins: name at least one (leave the key out for every plugin)");
        return false;
    }
    return true;
}

bool hf_gw_cfg_listener_key(struct hf_gw_parse *ctx, const char *section, const char *name,
                            const char *v)
{
    struct hf_gw_listen *l = listener_of(ctx, section + 9); /* after "listener:" */
    bool known, ok;

    if (!l) return false;
    if (strcmp(name, "listen") == 0) {
        if (l->host) {
            hf_gw_cfg_fail(ctx, "listen given twice in [%s]", section);
            return false;
        }
        l->line = ctx->line;
        return hf_gw_cfg_address_parse(ctx, v, &l->host, &l->port);
    }
    if (strcmp(name, "tls") == 0 || strcmp(name, "insecure") == 0) {
        if (!hf_gw_cfg_bool(v, name[0] == 't' ? &l->tls : &l->insecure)) {
            hf_gw_cfg_fail(ctx, "%s: expected on or off, got \"%s\"", name, v);
            return false;
        }
        return true;
    }
    if (strcmp(name, "client_certificate") == 0) return client_cert_set(ctx, &l->tls_conf, v);
    if (strcmp(name, "plugins") == 0) {
        if (l->nplugins) {
            hf_gw_cfg_fail(ctx, "plugins given twice in [%s]", section);
            return false;
        }
        return plugins_set(ctx, l, v);
    }
    ok = hf_gw_cfg_tls_field(ctx, &l->tls_conf, name, v, &known);
    if (!known) hf_gw_cfg_fail(ctx, "unknown key \"%s\" in [%s]", name, section);
    return ok;
}

static bool tls_conf_is_empty(const struct hf_gw_tls_conf *t)
{
    return !t->cert && !t->key && !t->client_ca && !t->priority && !t->nsubjects && !t->nsans &&
           !t->client_cert_line;
}

/* A [listener:NAME]'s TLS settings, as a whole. */
static bool own_tls_check(struct hf_gw_parse *ctx, struct hf_gw_listen *l)
{
    struct hf_gw_tls_conf *t = &l->tls_conf;

    if (!l->tls) {
        if (!tls_conf_is_empty(t)) {
            hf_gw_cfg_fail(ctx, "[listener:%s] has TLS settings but tls = off", l->name);
            return false;
        }
        return hf_gw_cfg_plain_is_allowed(ctx, l->host, l->insecure);
    }
    if (l->insecure) {
        hf_gw_cfg_fail(ctx, "[listener:%s]: insecure is for plain HTTP, not with tls = on",
                       l->name);
        return false;
    }
    if (!t->cert || !t->key) {
        hf_gw_cfg_fail(ctx, "[listener:%s] has tls = on and needs cert and key", l->name);
        return false;
    }
    if (!t->client_cert_line)
        t->client_cert = t->client_ca ? HF_GW_CLIENT_CERT_REQUIRED : HF_GW_CLIENT_CERT_OFF;
    if (t->client_cert != HF_GW_CLIENT_CERT_OFF && !t->client_ca) {
        ctx->line = t->client_cert_line;
        hf_gw_cfg_fail(ctx, "[listener:%s] client_certificate = %s needs client_ca", l->name,
                       t->client_cert == HF_GW_CLIENT_CERT_REQUIRED ? "required" : "optional");
        return false;
    }
    if (t->client_cert == HF_GW_CLIENT_CERT_OFF && (t->client_ca || t->nsubjects || t->nsans)) {
        ctx->line = t->client_cert_line ? t->client_cert_line : l->line;
        hf_gw_cfg_fail(ctx,
                       "[listener:%s] client_ca, client_subject and client_san need "
                       "client_certificate = required or optional",
                       l->name);
        return false;
    }
    return true;
}

static bool plugins_are_loaded(struct hf_gw_parse *ctx, const struct hf_gw_listen *l)
{
    const struct hf_gw_config *cfg = ctx->cfg;

    for (size_t i = 0; i < l->nplugins; i++) {
        bool found = false;
        for (size_t j = 0; j < cfg->nplugins && !found; j++)
            found = strcmp(cfg->plugins[j].name, l->plugins[i]) == 0;
        if (!found) {
            ctx->line = l->plugins_line;
            hf_gw_cfg_fail(ctx,
                           "[listener:%s] plugins: \"%s\" is not loaded (not in [gateway] "
                           "plugins nor a [plugin:%s] section)",
                           l->name, l->plugins[i], l->plugins[i]);
            return false;
        }
    }
    return true;
}

bool hf_gw_cfg_listeners_check(struct hf_gw_parse *ctx)
{
    struct hf_gw_config *cfg = ctx->cfg;

    for (size_t i = 0; i < cfg->nlistens; i++) {
        struct hf_gw_listen *l = &cfg->listens[i];

        ctx->line = l->line;
        if (i == HF_GW_MAX_LISTENERS) {
            hf_gw_cfg_fail(ctx, "at most %d listeners", HF_GW_MAX_LISTENERS);
            return false;
        }
        if (!l->host) {
            hf_gw_cfg_fail(ctx, "[listener:%s] needs listen = host:port", l->name);
            return false;
        }
        /* One port, one listener: a TLS connection finds its listener's policy by the port
         * it came in on (tls.c). */
        for (size_t j = 0; j < i; j++)
            if (strcmp(cfg->listens[j].port, l->port) == 0) {
                hf_gw_cfg_fail(ctx, "listener %s: port %s is already listener %s's (line %u)",
                               l->name, l->port, cfg->listens[j].name, cfg->listens[j].line);
                return false;
            }
        if (l->own_tls && (!own_tls_check(ctx, l) || !plugins_are_loaded(ctx, l))) return false;
    }
    ctx->line = 0;
    return true;
}

const struct hf_gw_tls_conf *hf_gw_config_listen_tls(const struct hf_gw_config *cfg,
                                                     const struct hf_gw_listen *l)
{
    return l->own_tls ? &l->tls_conf : &cfg->tls;
}

bool hf_gw_config_listen_serves(const struct hf_gw_listen *l, const char *name)
{
    if (l->nplugins == 0) return true;
    for (size_t i = 0; i < l->nplugins; i++)
        if (strcmp(l->plugins[i], name) == 0) return true;
    return false;
}

static bool strs_differ(const char *a, const char *b)
{
    return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

static bool lists_differ(char *const *a, size_t na, char *const *b, size_t nb)
{
    if (na != nb) return true;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0) return true;
    return false;
}

bool hf_gw_config_listen_is_same(const struct hf_gw_config *ca, const struct hf_gw_listen *a,
                                 const struct hf_gw_config *cb, const struct hf_gw_listen *b)
{
    const struct hf_gw_tls_conf *ta = hf_gw_config_listen_tls(ca, a),
                                *tb = hf_gw_config_listen_tls(cb, b);

    if (strs_differ(a->name, b->name) || strs_differ(a->host, b->host) ||
        strs_differ(a->port, b->port) || a->tls != b->tls || a->insecure != b->insecure)
        return false;
    if (!a->tls) return true;
    return !strs_differ(ta->cert, tb->cert) && !strs_differ(ta->key, tb->key) &&
           !strs_differ(ta->client_ca, tb->client_ca) && !strs_differ(ta->priority, tb->priority) &&
           ta->client_cert == tb->client_cert &&
           !lists_differ(ta->subjects, ta->nsubjects, tb->subjects, tb->nsubjects) &&
           !lists_differ(ta->sans, ta->nsans, tb->sans, tb->nsans);
}

void hf_gw_cfg_tls_conf_free(struct hf_gw_tls_conf *t)
{
    hf_conf_list_free(t->subjects, t->nsubjects);
    hf_conf_list_free(t->sans, t->nsans);
    free(t->cert);
    free(t->key);
    free(t->client_ca);
    free(t->priority);
}

void hf_gw_cfg_listen_free(struct hf_gw_listen *l)
{
    free(l->name);
    free(l->host);
    free(l->port);
    hf_gw_cfg_tls_conf_free(&l->tls_conf);
    hf_conf_list_free(l->plugins, l->nplugins);
}
