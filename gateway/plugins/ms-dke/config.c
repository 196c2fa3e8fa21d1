/* [ms-dke] into the key service's settings and its keys (config.h). */
#include "hf-build.h"

#include "gateway/plugins/ms-dke/config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/plugin.h"
#include "gateway/plugins/ms-dke/request.h"

static bool seconds_set(uint64_t *dst, const char *value, uint64_t max_s, char *err, size_t errlen)
{
    uint64_t ms;

    if (!hf_conf_duration_ms(value, 1000, max_s * 1000, &ms, err, errlen)) return false;
    *dst = ms / 1000;
    return true;
}

bool hf_dke_config_init(struct hf_dke_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->skew_s = 300;
    cfg->cache_exp_s = HF_DKE_DEFAULT_CACHE_EXP_S;
    cfg->prefix = strdup("");
    cfg->trust.jwks = strdup(HF_DKE_DEFAULT_JWKS);
    cfg->authority = strdup(HF_DKE_DEFAULT_AUTHORITY);
    return cfg->prefix != NULL && cfg->trust.jwks != NULL && cfg->authority != NULL;
}

static bool prefix_set(struct hf_dke_config *cfg, const char *value, char *err, size_t errlen)
{
    size_t len = strlen(value);
    char *p;

    while (len > 0 && value[len - 1] == '/')
        len--;
    for (size_t i = 0; i < len;) {
        size_t seg;

        if (value[i] != '/' || (seg = strcspn(value + i + 1, "/")) == 0 || i + 1 + seg > len ||
            !hf_dke_name_is_valid(value + i + 1, seg)) {
            snprintf(err, errlen, "prefix: \"\" or /segments of [A-Za-z0-9._-]");
            return false;
        }
        i += 1 + seg;
    }
    if ((p = strndup(value, len)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    free(cfg->prefix);
    cfg->prefix = p;
    return true;
}

static bool https_set(char **dst, const char *opt, const char *value, char *err, size_t errlen)
{
    char origin[512];

    if (!hf_dke_url_origin(value, origin, sizeof(origin))) {
        snprintf(err, errlen, "%s: an https:// URL", opt);
        return false;
    }
    return hf_conf_string_set(dst, value, err, errlen);
}

static struct hf_dke_key *key_get(struct hf_dke_config *cfg, const char *name, size_t len)
{
    struct hf_dke_key *grown, *k;

    for (size_t i = 0; i < cfg->nkeys; i++)
        if (strlen(cfg->keys[i].name) == len && strncmp(cfg->keys[i].name, name, len) == 0)
            return &cfg->keys[i];
    if ((grown = realloc(cfg->keys, (cfg->nkeys + 1) * sizeof(*grown))) == NULL) return NULL;
    cfg->keys = grown;
    k = &grown[cfg->nkeys];
    memset(k, 0, sizeof(*k));
    if ((k->name = strndup(name, len)) == NULL) return NULL;
    cfg->nkeys++;
    return k;
}

static bool allowed_set(struct hf_dke_key *k, enum hf_dke_authz mode, const char *value, char *err,
                        size_t errlen)
{
    if (k->mode != HF_DKE_AUTHZ_NONE && k->mode != mode) {
        snprintf(err, errlen, "key %s: allowed_emails or allowed_groups, not both", k->name);
        return false;
    }
    if (!hf_conf_list_set(value, &k->allowed, &k->nallowed, err, errlen)) return false;
    k->mode = mode;
    for (size_t i = 0; i < k->nallowed; i++) {
        if (mode == HF_DKE_AUTHZ_EMAIL && strchr(k->allowed[i], '@') == NULL) {
            snprintf(err, errlen, "key %s: allowed_emails: '%.64s' is not an email address",
                     k->name, k->allowed[i]);
            return false;
        }
        for (char *p = k->allowed[i]; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    return true;
}

/* "key.<NAME>.<option>": NAME may hold dots, the option never does. */
static bool key_option_set(struct hf_dke_config *cfg, const char *name, const char *value,
                           char *err, size_t errlen)
{
    const char *dot = strrchr(name, '.');
    size_t len = dot != NULL && dot > name + 4 ? (size_t)(dot - name) - 4 : 0;
    struct hf_dke_key *k;

    if (len == 0 || !hf_dke_name_is_valid(name + 4, len)) {
        snprintf(err, errlen,
                 "'%.80s': want key.<keyName>.<option>, keyName 1..128 of "
                 "[A-Za-z0-9._-]",
                 name);
        return false;
    }
    if ((k = key_get(cfg, name + 4, len)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    if (strcmp(dot + 1, "allowed_emails") == 0)
        return allowed_set(k, HF_DKE_AUTHZ_EMAIL, value, err, errlen);
    if (strcmp(dot + 1, "allowed_groups") == 0)
        return allowed_set(k, HF_DKE_AUTHZ_GROUP, value, err, errlen);
    if (strcmp(dot + 1, "cache_exp") == 0)
        return seconds_set(&k->cache_exp_s, value, HF_DKE_CACHE_EXP_MAX_S, err, errlen);
    snprintf(err, errlen, "unknown key option '%.32s' (allowed_emails, allowed_groups, cache_exp)",
             dot + 1);
    return false;
}

static bool uint_set(unsigned *dst, const char *value, uint64_t max, char *err, size_t errlen)
{
    uint64_t v;

    if (!hf_conf_uint(value, 0, max, &v, err, errlen)) return false;
    *dst = (unsigned)v;
    return true;
}

bool hf_dke_config_set(struct hf_dke_config *cfg, const char *instance, const char *name,
                       const char *value, char *err, size_t errlen)
{
    uint64_t s;
    int trust;

    if (instance != NULL && *instance != '\0') {
        snprintf(err, errlen, "one key service per holdfastd: [ms-dke], not [ms-dke:%.64s]",
                 instance);
        return false;
    }
    if ((trust = hf_jwt_trust_set(&cfg->trust, name, value, err, errlen)) != 0) return trust > 0;
    if (strncmp(name, "key.", 4) == 0) return key_option_set(cfg, name, value, err, errlen);
    if (strcmp(name, "prefix") == 0) return prefix_set(cfg, value, err, errlen);
    if (strcmp(name, "base_url") == 0) return https_set(&cfg->base_url, name, value, err, errlen);
    if (strcmp(name, "audience") == 0) return https_set(&cfg->audience, name, value, err, errlen);
    if (strcmp(name, "authority") == 0) return https_set(&cfg->authority, name, value, err, errlen);
    if (strcmp(name, "required_scope") == 0)
        return hf_conf_string_set(&cfg->required_scope, value, err, errlen);
    if (strcmp(name, "allowed_appids") == 0)
        return hf_conf_list_set(value, &cfg->appids, &cfg->nappids, err, errlen);
    if (strcmp(name, "rate_limit") == 0)
        return uint_set(&cfg->rate_limit, value, 1000000, err, errlen);
    if (strcmp(name, "cache_exp") == 0)
        return seconds_set(&cfg->cache_exp_s, value, HF_DKE_CACHE_EXP_MAX_S, err, errlen);
    if (strcmp(name, "clock_skew") == 0) {
        if (!seconds_set(&s, value, HF_DKE_SKEW_MAX_S, err, errlen)) return false;
        cfg->skew_s = (unsigned)s;
        return true;
    }
    snprintf(err, errlen, "unknown option '%.64s'", name);
    return false;
}

bool hf_dke_config_check(struct hf_dke_config *cfg, char *err, size_t errlen)
{
    char origin[512];

    if (cfg->base_url == NULL) {
        snprintf(err, errlen, "[ms-dke]: base_url is required (the key URL base of the labels)");
        return false;
    }
    if (cfg->trust.nissuers == 0) {
        snprintf(err, errlen, "[ms-dke]: issuers is required (https://sts.windows.net/<tenant>/)");
        return false;
    }
    if (cfg->audience == NULL && (!hf_dke_url_origin(cfg->base_url, origin, sizeof(origin)) ||
                                  !hf_conf_string_set(&cfg->audience, origin, err, errlen)))
        return false;
    for (size_t i = 0; i < cfg->nkeys; i++) {
        if (cfg->keys[i].mode == HF_DKE_AUTHZ_NONE || cfg->keys[i].nallowed == 0) {
            snprintf(err, errlen, "[ms-dke]: key %s has no allowed_emails nor allowed_groups",
                     cfg->keys[i].name);
            return false;
        }
    }
    return true;
}

void hf_dke_config_free(struct hf_dke_config *cfg)
{
    if (cfg == NULL) return;
    for (size_t i = 0; i < cfg->nkeys; i++) {
        free(cfg->keys[i].name);
        hf_conf_list_free(cfg->keys[i].allowed, cfg->keys[i].nallowed);
    }
    free(cfg->keys);
    hf_jwt_trust_free(&cfg->trust);
    hf_conf_list_free(cfg->appids, cfg->nappids);
    free(cfg->prefix);
    free(cfg->base_url);
    free(cfg->audience);
    free(cfg->authority);
    free(cfg->required_scope);
    memset(cfg, 0, sizeof(*cfg));
}

bool hf_dke_config_is_served(const struct hf_dke_config *cfg, const char *path)
{
    size_t n = strlen(cfg->prefix);

    return strncmp(path, cfg->prefix, n) == 0 && (path[n] == '/' || (n > 0 && path[n] == '\0'));
}

const struct hf_dke_key *hf_dke_config_key(const struct hf_dke_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->nkeys; i++)
        if (strcmp(cfg->keys[i].name, name) == 0) return &cfg->keys[i];
    return NULL;
}

uint64_t hf_dke_key_cache_exp_s(const struct hf_dke_config *cfg, const struct hf_dke_key *key)
{
    return key != NULL && key->cache_exp_s != 0 ? key->cache_exp_s : cfg->cache_exp_s;
}

bool hf_dke_url_origin(const char *url, char *out, size_t outlen)
{
    size_t host;

    if (url == NULL || strncasecmp(url, "https://", 8) != 0) return false;
    host = strcspn(url + 8, "/?#");
    /* No user info: an origin is scheme, host and port only. */
    if (host == 0 || memchr(url + 8, '@', host) != NULL || 8 + host >= outlen) return false;
    memcpy(out, url, 8 + host);
    out[8 + host] = '\0';
    return true;
}
