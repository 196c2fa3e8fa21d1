/* [gcp-ekm:NAME] sections into EKM endpoints and their keys (config.h). */
#include "hf-build.h"

#include "gateway/plugins/gcp-ekm/config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/plugin.h"
#include "gateway/plugins/gcp-ekm/request.h"

static const char *const default_issuers[] = {"https://accounts.google.com", "accounts.google.com"};

static bool uint_set(unsigned *dst, const char *value, uint64_t max, char *err, size_t errlen)
{
    uint64_t v;

    if (!hf_conf_uint(value, 0, max, &v, err, errlen)) return false;
    *dst = (unsigned)v;
    return true;
}

static bool ms_set(unsigned *dst, const char *value, uint64_t min, uint64_t max, char *err,
                   size_t errlen)
{
    uint64_t v;

    if (!hf_conf_duration_ms(value, min, max, &v, err, errlen)) return false;
    *dst = (unsigned)v;
    return true;
}

static struct hf_ekm_endpoint *endpoint_get(struct hf_ekm_config *cfg, const char *name)
{
    struct hf_ekm_endpoint *grown, *ep;

    for (size_t i = 0; i < cfg->nendpoints; i++)
        if (strcmp(cfg->endpoints[i].name, name) == 0) return &cfg->endpoints[i];
    grown = realloc(cfg->endpoints, (cfg->nendpoints + 1) * sizeof(*grown));
    if (grown == NULL) return NULL;
    cfg->endpoints = grown;
    ep = &grown[cfg->nendpoints];
    memset(ep, 0, sizeof(*ep));
    ep->skew_s = 60;
    if ((ep->name = strdup(name)) == NULL) return NULL;
    cfg->nendpoints++;
    return ep;
}

struct hf_ekm_key *hf_ekm_endpoint_key_get(struct hf_ekm_endpoint *ep, const char *path, size_t len,
                                           enum hf_ekm_key_origin origin, char *err, size_t errlen)
{
    struct hf_ekm_key *grown, *k = NULL;

    for (size_t i = 0; i < ep->nkeys && k == NULL; i++)
        if (strlen(ep->keys[i].path) == len && strncmp(ep->keys[i].path, path, len) == 0)
            k = &ep->keys[i];
    if (k != NULL && k->origin != origin) {
        /* Two places for one key's policy: which would an auditor believe? */
        snprintf(err, errlen, "key %.*s is defined both in [gcp-ekm:%s] and in its policy_file",
                 (int)(len > 200 ? 200 : len), path, ep->name);
        return NULL;
    }
    if (k != NULL) return k;
    if ((grown = realloc(ep->keys, (ep->nkeys + 1) * sizeof(*grown))) == NULL) goto oom;
    ep->keys = grown;
    k = &grown[ep->nkeys];
    memset(k, 0, sizeof(*k));
    k->kaj = hf_ekm_kaj_default();
    k->origin = origin;
    if ((k->path = strndup(path, len)) == NULL) goto oom;
    ep->nkeys++;
    return k;
oom:
    snprintf(err, errlen, "out of memory");
    return NULL;
}

static bool emails_set(struct hf_ekm_key *k, const char *value, char *err, size_t errlen)
{
    if (!hf_conf_list_set(value, &k->emails, &k->nemails, err, errlen)) return false;
    for (size_t i = 0; i < k->nemails; i++) {
        if (strchr(k->emails[i], '@') == NULL) {
            snprintf(err, errlen, "allowed_emails: '%.64s' is not an email address", k->emails[i]);
            return false;
        }
        for (char *p = k->emails[i]; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    return true;
}

bool hf_ekm_key_attr_set(struct hf_ekm_key *k, const char *attr, const char *value, char *err,
                         size_t errlen)
{
    uint64_t ms;

    if (strcmp(attr, "allowed_emails") == 0) return emails_set(k, value, err, errlen);
    if (strcmp(attr, "reasons") == 0)
        return hf_ekm_kaj_reasons_parse(value, &k->kaj.allowed, err, errlen);
    if (strcmp(attr, "reason_absent") == 0) {
        if (strcmp(value, "allow") != 0 && strcmp(value, "deny") != 0) {
            snprintf(err, errlen, "reason_absent: allow or deny");
            return false;
        }
        k->kaj.absent_allowed = strcmp(value, "allow") == 0;
        return true;
    }
    if (strcmp(attr, "cache_duration") == 0) {
        if (!hf_conf_duration_ms(value, 0, UINT64_C(86400) * 1000, &ms, err, errlen)) return false;
        k->cache_duration_s = ms / 1000;
        return true;
    }
    snprintf(err, errlen,
             "unknown key option '%.32s' (allowed_emails, reasons, reason_absent, "
             "cache_duration)",
             attr);
    return false;
}

/* "key.<PATH>.<attribute>": PATH may hold dots, the attribute never does. */
static bool key_option_set(struct hf_ekm_endpoint *ep, const char *name, const char *value,
                           char *err, size_t errlen)
{
    const char *dot = strrchr(name, '.');
    size_t len = dot ? (size_t)(dot - name) - 4 : 0;
    struct hf_ekm_key *k;

    if (dot == NULL || dot < name + 4 || !hf_ekm_key_path_is_valid(name + 4, len)) {
        snprintf(err, errlen,
                 "'%.80s': want key.<keyPath>.<option>, keyPath 1..512 of "
                 "[A-Za-z0-9._~/-]",
                 name);
        return false;
    }
    if ((k = hf_ekm_endpoint_key_get(ep, name + 4, len, HF_EKM_KEY_FROM_SECTION, err, errlen)) ==
        NULL)
        return false;
    return hf_ekm_key_attr_set(k, dot + 1, value, err, errlen);
}

static bool prefix_set(struct hf_ekm_endpoint *ep, const char *value, char *err, size_t errlen)
{
    size_t len = strlen(value);

    while (len > 0 && value[len - 1] == '/')
        len--;
    if (*value == '/') {
        value++;
        len = len ? len - 1 : 0;
    }
    if (len != 0 && !hf_ekm_key_path_is_valid(value, len)) {
        snprintf(err, errlen, "prefix: \"\" or segments of [A-Za-z0-9._~-] joined by '/'");
        return false;
    }
    free(ep->prefix);
    if ((ep->prefix = malloc(len + 2)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    /* Kept as the path starts with it: "" or "/a/b". */
    ep->prefix[0] = '\0';
    if (len != 0) snprintf(ep->prefix, len + 2, "/%.*s", (int)len, value);
    ep->prefix_set = true;
    return true;
}

static bool endpoint_set(struct hf_ekm_endpoint *ep, const char *name, const char *value, char *err,
                         size_t errlen)
{
    bool ok = true;
    int trust = hf_jwt_trust_set(&ep->trust, name, value, err, errlen);

    if (trust != 0) return trust > 0;
    if (strncmp(name, "key.", 4) == 0) return key_option_set(ep, name, value, err, errlen);
    if (strcmp(name, "prefix") == 0) return prefix_set(ep, value, err, errlen);
    if (strcmp(name, "policy_file") == 0) return hf_ekm_policy_file_load(ep, value, err, errlen);
    if (strcmp(name, "audiences") == 0)
        return hf_conf_list_set(value, &ep->audiences, &ep->naudiences, err, errlen);
    if (strcmp(name, "clock_skew") == 0) {
        unsigned ms;
        if (!ms_set(&ms, value, 0, HF_EKM_SKEW_MAX_S * 1000u, err, errlen)) return false;
        ep->skew_s = ms / 1000;
        return true;
    }
    if (strcmp(name, "rate_limit") == 0)
        return uint_set(&ep->rate_limit, value, 1000000, err, errlen);
    if (strcmp(name, "deadline") == 0)
        return ms_set(&ep->deadline_ms, value, 0, 60000, err, errlen);
    if (strcmp(name, "key_uri") == 0) {
        char aud[256];
        if (!hf_ekm_uri_audience(value, aud, sizeof(aud))) {
            snprintf(err, errlen, "key_uri: want an absolute https:// URI");
            return false;
        }
        ok = hf_conf_string_set(&ep->key_uri, value, err, errlen);
    } else {
        snprintf(err, errlen, "unknown option '%.64s'", name);
        return false;
    }
    if (!ok) snprintf(err, errlen, "out of memory");
    return ok;
}

bool hf_ekm_config_set(struct hf_ekm_config *cfg, const char *instance, const char *name,
                       const char *value, char *err, size_t errlen)
{
    struct hf_ekm_endpoint *ep;

    if (cfg == NULL || name == NULL || value == NULL || err == NULL || errlen == 0) return false;
    err[0] = '\0';
    if (instance == NULL || *instance == '\0') {
        snprintf(err, errlen, "gcp-ekm options go in an endpoint's section [gcp-ekm:NAME]");
        return false;
    }
    if ((ep = endpoint_get(cfg, instance)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    return endpoint_set(ep, name, value, err, errlen);
}

static bool strings_copy(char ***dst, size_t *n, const char *const *src, size_t nsrc)
{
    if ((*dst = calloc(nsrc, sizeof(**dst))) == NULL) return false;
    for (*n = 0; *n < nsrc; (*n)++)
        if (((*dst)[*n] = strdup(src[*n])) == NULL) return false;
    return true;
}

static bool endpoint_defaults(struct hf_ekm_endpoint *ep)
{
    char aud[256], err[64];
    const char *one[1] = {aud};

    if (ep->trust.nissuers == 0 &&
        !strings_copy(&ep->trust.issuers, &ep->trust.nissuers, default_issuers, 2))
        return false;
    if (ep->trust.jwks == NULL &&
        !hf_conf_string_set(&ep->trust.jwks, HF_EKM_DEFAULT_JWKS, err, sizeof(err)))
        return false;
    if (ep->naudiences == 0 && ep->key_uri != NULL &&
        hf_ekm_uri_audience(ep->key_uri, aud, sizeof(aud)) &&
        !strings_copy(&ep->audiences, &ep->naudiences, one, 1))
        return false;
    return true;
}

static bool endpoint_check(struct hf_ekm_endpoint *ep, char *err, size_t errlen)
{
    if (!ep->prefix_set) {
        snprintf(err, errlen, "[gcp-ekm:%s]: prefix is required (it may be empty)", ep->name);
        return false;
    }
    if (!endpoint_defaults(ep)) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    if (ep->naudiences == 0) {
        snprintf(err, errlen, "[gcp-ekm:%s]: no audience: set key_uri or audiences", ep->name);
        return false;
    }
    if (ep->nkeys == 0) {
        snprintf(err, errlen, "[gcp-ekm:%s]: no key: add key.<keyPath>.allowed_emails", ep->name);
        return false;
    }
    for (size_t i = 0; i < ep->nkeys; i++)
        if (ep->keys[i].nemails == 0) {
            snprintf(err, errlen, "[gcp-ekm:%s]: key %.200s has no allowed_emails", ep->name,
                     ep->keys[i].path);
            return false;
        }
    return true;
}

bool hf_ekm_config_check(struct hf_ekm_config *cfg, char *err, size_t errlen)
{
    if (cfg == NULL || err == NULL || errlen == 0) return false;
    if (cfg->nendpoints == 0) {
        snprintf(err, errlen, "no EKM endpoint: add a section [gcp-ekm:NAME]");
        return false;
    }
    for (size_t i = 0; i < cfg->nendpoints; i++) {
        if (!endpoint_check(&cfg->endpoints[i], err, errlen)) return false;
        for (size_t j = 0; j < i; j++)
            if (strcmp(cfg->endpoints[j].prefix, cfg->endpoints[i].prefix) == 0) {
                snprintf(err, errlen, "[gcp-ekm:%s] and [gcp-ekm:%s] have the same prefix",
                         cfg->endpoints[j].name, cfg->endpoints[i].name);
                return false;
            }
    }
    return true;
}

static void endpoint_free(struct hf_ekm_endpoint *ep)
{
    for (size_t i = 0; i < ep->nkeys; i++) {
        free(ep->keys[i].path);
        hf_conf_list_free(ep->keys[i].emails, ep->keys[i].nemails);
    }
    free(ep->keys);
    hf_conf_list_free(ep->audiences, ep->naudiences);
    hf_jwt_trust_free(&ep->trust);
    free(ep->name);
    free(ep->prefix);
    free(ep->key_uri);
    free(ep->policy_file);
}

void hf_ekm_config_free(struct hf_ekm_config *cfg)
{
    if (cfg == NULL) return;
    for (size_t i = 0; i < cfg->nendpoints; i++)
        endpoint_free(&cfg->endpoints[i]);
    free(cfg->endpoints);
    memset(cfg, 0, sizeof(*cfg));
}

const struct hf_ekm_endpoint *hf_ekm_config_route(const struct hf_ekm_config *cfg, const char *path,
                                                  size_t base_len, const char **key_path,
                                                  size_t *key_path_len)
{
    const struct hf_ekm_endpoint *best = NULL;
    size_t best_len = 0;

    if (cfg == NULL || path == NULL || key_path == NULL || key_path_len == NULL) return NULL;
    for (size_t i = 0; i < cfg->nendpoints; i++) {
        const struct hf_ekm_endpoint *ep = &cfg->endpoints[i];
        size_t n = strlen(ep->prefix);

        /* The prefix, then '/' and a keyPath of one character at least. */
        if (n + 1 >= base_len || strncmp(path, ep->prefix, n) != 0 || path[n] != '/') continue;
        if (best == NULL || n > best_len) {
            best = ep;
            best_len = n;
        }
    }
    if (best != NULL) {
        *key_path = path + best_len + 1;
        *key_path_len = base_len - best_len - 1;
    }
    return best;
}

bool hf_ekm_config_is_served(const struct hf_ekm_config *cfg, const char *path)
{
    if (cfg == NULL || path == NULL) return false;
    for (size_t i = 0; i < cfg->nendpoints; i++) {
        const char *prefix = cfg->endpoints[i].prefix;
        size_t n = strlen(prefix);
        if (strncmp(path, prefix, n) == 0 && (path[n] == '/' || path[n] == '\0')) return true;
    }
    return false;
}

const struct hf_ekm_key *hf_ekm_endpoint_key(const struct hf_ekm_endpoint *ep, const char *path)
{
    if (ep == NULL || path == NULL) return NULL;
    for (size_t i = 0; i < ep->nkeys; i++)
        if (strcmp(ep->keys[i].path, path) == 0) return &ep->keys[i];
    return NULL;
}

bool hf_ekm_key_allows_email(const struct hf_ekm_key *key, const char *email)
{
    if (key == NULL || email == NULL || *email == '\0') return false;
    for (size_t i = 0; i < key->nemails; i++)
        if (strcasecmp(key->emails[i], email) == 0) return true;
    return false;
}

bool hf_ekm_uri_audience(const char *uri, char *out, size_t outlen)
{
    const char *host, *end, *at;
    size_t scheme_len;

    if (uri == NULL || out == NULL) return false;
    if (strncmp(uri, "https://", 8) == 0)
        scheme_len = 5;
    else if (strncmp(uri, "http://", 7) == 0)
        scheme_len = 4;
    else
        return false;
    host = uri + scheme_len + 3;
    end = host + strcspn(host, "/?#");
    /* user@host: the user is no part of the audience. */
    if ((at = memchr(host, '@', (size_t)(end - host))) != NULL) host = at + 1;
    if (*host == '[') {
        const char *close = memchr(host, ']', (size_t)(end - host));
        if (close == NULL) return false;
        end = close + 1;
    } else {
        const char *colon = memchr(host, ':', (size_t)(end - host));
        if (colon != NULL) end = colon;
    }
    if (end == host) return false;
    return snprintf(out, outlen, "%.*s://%.*s", (int)scheme_len, uri, (int)(end - host), host) <
           (int)outlen;
}
