/* The aws-xks configuration (config.h): name = value lines into key stores, then a check of the
 * whole. Runs on start and on every SIGHUP into a fresh struct, so a reload that fails leaves the
 * running state untouched. */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "gateway/plugins/aws-xks/sigv4.h"

#define XKS_LINE_MAX 512
#define XKS_CREDENTIAL_FILE_MAX (64 * 1024) /* a few credentials; anything larger is not one */

/* ---- validation of single values (credentials: sigv4.h) -------------------------------------- */

bool hf_xks_prefix_normalise(const char *in, char *out, size_t outlen)
{
    size_t n;

    if (in == NULL || out == NULL || outlen == 0) return false;
    if (*in == '/') in++;
    n = strlen(in);
    if (n == 0) {
        out[0] = '\0';
        return true;
    }
    /* Counted as KMS shows it, with its leading slash: "/<prefix>" + "/kms/xks/v1" <= 128. */
    if (n + 1 < HF_XKS_PREFIX_MIN || n + 1 > HF_XKS_PREFIX_MAX || n >= outlen) return false;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '/' || c == '_' || c == '-'))
            return false;
        /* No empty segment: a router never captures one. */
        if (c == '/' && (i + 1 == n || in[i + 1] == '/')) return false;
    }
    memcpy(out, in, n + 1);
    return true;
}

/* plugin.h's parser; the messages stay this file's, which name the option and the spec's range. */
static bool parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
    uint64_t v;

    if (!hf_conf_uint(s, min, max, &v, NULL, 0)) return false;
    *out = (unsigned long)v;
    return true;
}

/* Replaces *slot with a copy of value. */
static bool set_string(char **slot, const char *value)
{
    char *copy = strdup(value);

    if (copy == NULL) return false;
    free(*slot);
    *slot = copy;
    return true;
}

static bool list_append(char ***list, size_t *n, const char *item)
{
    char **grown;
    char *copy;

    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*list)[i], item)) return true; /* already there */
    if ((copy = strdup(item)) == NULL) return false;
    if ((grown = realloc(*list, (*n + 1) * sizeof(**list))) == NULL) {
        free(copy);
        return false;
    }
    grown[(*n)++] = copy;
    *list = grown;
    return true;
}

/* ---- stores and credentials ----------------------------------------------------------------- */

void hf_xks_config_init(struct hf_xks_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->health_cache_s = 10;
    cfg->fleet_size = 1;
}

static void store_free(struct hf_xks_store *s)
{
    free(s->name);
    free(s->prefix);
    for (size_t i = 0; i < s->ncreds; i++)
        if (s->creds[i].secret)
            OPENSSL_secure_clear_free(s->creds[i].secret, strlen(s->creds[i].secret) + 1);
    if (s->creds) OPENSSL_cleanse(s->creds, s->ncreds * sizeof(*s->creds));
    free(s->creds);
    hf_conf_list_free(s->regions, s->nregions);
    hf_conf_list_free(s->keys, s->nkeys);
    free(s->health_key);
    free(s->mtls_subject);
    free(s->mtls_san);
    for (size_t i = 0; i < s->nrules; i++)
        hf_xks_rule_clear(&s->rules[i]);
    free(s->rules);
    memset(s, 0, sizeof(*s));
}

void hf_xks_config_free(struct hf_xks_config *cfg)
{
    if (cfg == NULL) return;
    for (size_t i = 0; i < cfg->nstores; i++)
        store_free(&cfg->stores[i]);
    free(cfg->stores);
    free(cfg->health_key);
    memset(cfg, 0, sizeof(*cfg));
}

static struct hf_xks_store *store_get(struct hf_xks_config *cfg, const char *instance)
{
    struct hf_xks_store *grown, *s;

    for (size_t i = 0; i < cfg->nstores; i++)
        if (!strcmp(cfg->stores[i].name, instance)) return &cfg->stores[i];
    grown = realloc(cfg->stores, (cfg->nstores + 1) * sizeof(*grown));
    if (grown == NULL) return NULL;
    cfg->stores = grown;
    s = &grown[cfg->nstores];
    memset(s, 0, sizeof(*s));
    if ((s->name = strdup(instance)) == NULL || (s->prefix = strdup("")) == NULL) {
        free(s->name);
        free(s->prefix);
        return NULL;
    }
    s->caps.max_plaintext = HF_XKS_MIN_PLAINTEXT;
    s->caps.max_aad = HF_XKS_MIN_AAD;
    cfg->nstores++;
    return s;
}

/* A SigV4 secret's copy in OpenSSL's secure heap (holdfastd makes one: locked, not in core
 * dumps; ordinary memory without it), freed with OPENSSL_secure_clear_free. Loaded with the
 * config, never on the request path. */
static char *secret_dup(const char *text)
{
    size_t len = strlen(text) + 1;
    char *copy = OPENSSL_secure_malloc(len);

    if (copy) memcpy(copy, text, len);
    return copy;
}

/* "AKID:SECRET" into the store. A repeated AKID must carry the same secret: an access key id
 * names exactly one secret (spec, Appendix A). */
static bool credential_add(struct hf_xks_store *s, const char *text, char *err, size_t errlen)
{
    const char *colon = strchr(text, ':');
    char akid[HF_XKS_AKID_MAX + 2] = "";
    struct hf_xks_credential *grown;
    char *secret;
    size_t n;

    if (colon == NULL) {
        snprintf(err, errlen, "credential must be ACCESS_KEY_ID:SECRET");
        return false;
    }
    n = (size_t)(colon - text);
    if (n < sizeof(akid)) {
        memcpy(akid, text, n);
        akid[n] = '\0';
    }
    if (n >= sizeof(akid) || !hf_sigv4_akid_is_valid(akid)) {
        snprintf(err, errlen, "credential: the access key id must be %d..%d characters of A-Z, 2-7",
                 HF_XKS_AKID_MIN, HF_XKS_AKID_MAX);
        return false;
    }
    if (!hf_sigv4_secret_is_valid(colon + 1)) {
        snprintf(err, errlen,
                 "credential %s: the secret must be %d..%d characters of A-Z, a-z, 0-9, +, /, =",
                 akid, HF_XKS_SECRET_MIN, HF_XKS_SECRET_MAX);
        return false;
    }
    for (size_t i = 0; i < s->ncreds; i++)
        if (!strcmp(s->creds[i].akid, akid)) {
            if (!strcmp(s->creds[i].secret, colon + 1)) return true;
            snprintf(err, errlen, "credential %s is given twice with different secrets", akid);
            return false;
        }
    if ((secret = secret_dup(colon + 1)) == NULL) goto oom;
    if ((grown = realloc(s->creds, (s->ncreds + 1) * sizeof(*grown))) == NULL) {
        OPENSSL_secure_clear_free(secret, strlen(secret) + 1);
        goto oom;
    }
    s->creds = grown;
    memcpy(grown[s->ncreds].akid, akid, strlen(akid) + 1);
    grown[s->ncreds].secret = secret;
    s->ncreds++;
    return true;
oom:
    snprintf(err, errlen, "out of memory");
    return false;
}

static char *trim(char *s)
{
    char *end;

    while (*s == ' ' || *s == '\t')
        s++;
    end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
        *--end = '\0';
    return s;
}

/* The file's lines, one credential each ('#' comments). line is a scratch copy of one line. */
static bool credential_lines_add(struct hf_xks_store *s, const char *path, const char *text,
                                 char line[XKS_LINE_MAX], char *err, size_t errlen)
{
    unsigned lineno = 0;

    for (const char *p = text; *p; lineno++) {
        size_t n = strcspn(p, "\n");
        char *t;

        if (n >= XKS_LINE_MAX - 1) {
            snprintf(err, errlen, "credential_file %s:%u: line too long", path, lineno + 1);
            return false;
        }
        memcpy(line, p, n);
        line[n] = '\0';
        p += n + (p[n] == '\n');
        t = trim(line);
        if (*t == '\0' || *t == '#') continue;
        if (!credential_add(s, t, err, errlen)) {
            size_t used = strlen(err);
            snprintf(err + used, errlen - used, " (%s:%u)", path, lineno + 1);
            return false;
        }
    }
    return true;
}

/* Re-read on every reload: editing the file and sending SIGHUP rotates credentials. A relative
 * path is the config file's (hf_conf_path). */
static bool credential_file_load(struct hf_xks_store *s, const char *value, char *err,
                                 size_t errlen)
{
    char line[XKS_LINE_MAX], why[384] = "", *path = hf_conf_path(value), *text = NULL;
    size_t len = 0;
    bool ok = false;

    if (path == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    if (!hf_conf_secret_file(path, XKS_CREDENTIAL_FILE_MAX, &text, &len, why, sizeof(why))) {
        snprintf(err, errlen, "credential_file %s", why);
        goto done;
    }
    if (strlen(text) != len) {
        snprintf(err, errlen, "credential_file %s: holds a NUL byte", path);
        goto done;
    }
    ok = credential_lines_add(s, path, text, line, err, errlen);
done:
    OPENSSL_cleanse(line, sizeof(line));
    hf_secret_free(text, len);
    free(path);
    return ok;
}

/* "a, b c" (plugin.h's list) into the list, each item valid, none twice. */
static bool list_add_all(char ***list, size_t *n, const char *value, const char *what,
                         bool (*valid)(const char *), char *err, size_t errlen)
{
    char **items = NULL;
    size_t nitems = 0;
    bool ok = false;

    if (!hf_conf_list(value, &items, &nitems, err, errlen)) goto done;
    for (size_t i = 0; i < nitems; i++) {
        if (valid && !valid(items[i])) {
            snprintf(err, errlen, "%s: '%.64s' is not valid", what, items[i]);
            goto done;
        }
        if (!list_append(list, n, items[i])) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
    }
    ok = true;
done:
    hf_conf_list_free(items, nitems);
    return ok;
}

static bool region_is_valid(const char *r)
{
    size_t n = strlen(r);

    if (n == 0 || n > 32) return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)r[i]) || isdigit((unsigned char)r[i]) || r[i] == '-'))
            return false;
    return true;
}

static bool key_entry_is_valid(const char *k)
{
    return !strcmp(k, "*") || hf_xks_key_id_is_valid(k);
}

static bool rule_add(struct hf_xks_store *s, const char *value, bool allow, char *err,
                     size_t errlen)
{
    struct hf_xks_rule rule, *grown;

    if (!hf_xks_rule_parse(value, allow, &rule, err, errlen)) return false;
    for (size_t i = 0; i < s->nrules; i++)
        if (!strcmp(s->rules[i].name, rule.name)) {
            snprintf(err, errlen, "rule '%s' is defined twice", rule.name);
            hf_xks_rule_clear(&rule);
            return false;
        }
    if ((grown = realloc(s->rules, (s->nrules + 1) * sizeof(*grown))) == NULL) {
        hf_xks_rule_clear(&rule);
        snprintf(err, errlen, "out of memory");
        return false;
    }
    s->rules = grown;
    grown[s->nrules++] = rule;
    return true;
}

static bool set_global(struct hf_xks_config *cfg, const char *name, const char *value, char *err,
                       size_t errlen)
{
    unsigned long v;

    if (!strcmp(name, "health_key")) {
        if (!hf_xks_key_id_is_valid(value)) {
            snprintf(err, errlen, "health_key must be an XKS key id (1..128 of A-Za-z0-9._-)");
            return false;
        }
        if (!set_string(&cfg->health_key, value)) goto oom;
    } else if (!strcmp(name, "health_cache_seconds")) {
        if (!parse_uint(value, 0, HF_XKS_HEALTH_CACHE_MAX_S, &v)) {
            snprintf(err, errlen, "health_cache_seconds must be 0..%d (the spec allows a minute)",
                     HF_XKS_HEALTH_CACHE_MAX_S);
            return false;
        }
        cfg->health_cache_s = (unsigned)v;
    } else if (!strcmp(name, "fleet_size")) {
        if (!parse_uint(value, 1, 1000, &v)) {
            snprintf(err, errlen, "fleet_size must be 1..1000");
            return false;
        }
        cfg->fleet_size = (unsigned)v;
    } else {
        snprintf(err, errlen, "unknown option '%.64s' in [aws-xks]", name);
        return false;
    }
    return true;
oom:
    snprintf(err, errlen, "out of memory");
    return false;
}

static bool set_store(struct hf_xks_store *s, const char *name, const char *value, char *err,
                      size_t errlen)
{
    char buf[HF_XKS_PREFIX_MAX + 1];
    unsigned long v;

    if (!strcmp(name, "prefix")) {
        if (!hf_xks_prefix_normalise(value, buf, sizeof(buf))) {
            snprintf(err, errlen,
                     "prefix must be empty or %d..%d characters of A-Za-z0-9/_- (with its "
                     "leading '/', no empty segment)",
                     HF_XKS_PREFIX_MIN, HF_XKS_PREFIX_MAX);
            return false;
        }
        if (!set_string(&s->prefix, buf)) goto oom;
        s->prefix_set = true;
    } else if (!strcmp(name, "credential")) {
        return credential_add(s, value, err, errlen);
    } else if (!strcmp(name, "credential_file")) {
        return credential_file_load(s, value, err, errlen);
    } else if (!strcmp(name, "regions") || !strcmp(name, "region")) {
        return list_add_all(&s->regions, &s->nregions, value, "regions", region_is_valid, err,
                            errlen);
    } else if (!strcmp(name, "keys")) {
        if (!list_add_all(&s->keys, &s->nkeys, value, "keys", key_entry_is_valid, err, errlen))
            return false;
        for (size_t i = 0; i < s->nkeys; i++)
            if (!strcmp(s->keys[i], "*")) s->any_key = true;
    } else if (!strcmp(name, "health_key")) {
        if (!hf_xks_key_id_is_valid(value)) {
            snprintf(err, errlen, "health_key must be an XKS key id (1..128 of A-Za-z0-9._-)");
            return false;
        }
        if (!set_string(&s->health_key, value)) goto oom;
    } else if (!strcmp(name, "mtls_subject")) {
        if (!*value || !set_string(&s->mtls_subject, value)) goto bad;
    } else if (!strcmp(name, "mtls_san")) {
        if (!*value || !set_string(&s->mtls_san, value)) goto bad;
    } else if (!strcmp(name, "authorization")) {
        if (!hf_conf_bool(value, &s->authorization, NULL, 0)) goto bad;
    } else if (!strcmp(name, "allow") || !strcmp(name, "deny")) {
        return rule_add(s, value, name[0] == 'a', err, errlen);
    } else if (!strcmp(name, "max_plaintext")) {
        /* The AAD length field is 16 bits, so the cap on AAD stops there; plaintext is bounded
         * by the gateway's body limit, this cap only keeps it honest. */
        if (!parse_uint(value, HF_XKS_MIN_PLAINTEXT, 16UL * 1024 * 1024, &v)) goto bad;
        s->caps.max_plaintext = v;
    } else if (!strcmp(name, "max_aad")) {
        if (!parse_uint(value, HF_XKS_MIN_AAD, 0xffff, &v)) goto bad;
        s->caps.max_aad = v;
    } else if (!strcmp(name, "rate_limit")) {
        if (!parse_uint(value, 0, 1000000, &v)) goto bad;
        s->rate_limit = (unsigned)v;
    } else if (!strcmp(name, "deadline_ms")) {
        if (!parse_uint(value, 0, 600000, &v)) goto bad;
        s->deadline_ms = (unsigned)v;
    } else {
        snprintf(err, errlen, "unknown option '%.64s' in [aws-xks:%.64s]", name, s->name);
        return false;
    }
    return true;
bad:
    snprintf(err, errlen, "%s: bad value", name);
    return false;
oom:
    snprintf(err, errlen, "out of memory");
    return false;
}

bool hf_xks_config_set(struct hf_xks_config *cfg, const char *instance, const char *name,
                       const char *value, char *err, size_t errlen)
{
    struct hf_xks_store *s;
    char *copy;
    bool ok;

    if (cfg == NULL || name == NULL || value == NULL || err == NULL || errlen == 0) return false;
    err[0] = '\0';
    if (instance == NULL || *instance == '\0') return set_global(cfg, name, value, err, errlen);
    if (!hf_xks_key_id_is_valid(instance)) {
        snprintf(err, errlen, "store name '%.64s' must be 1..128 of A-Za-z0-9._-", instance);
        return false;
    }
    if ((s = store_get(cfg, instance)) == NULL || (copy = strdup(value)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    ok = set_store(s, name, trim(copy), err, errlen);
    OPENSSL_clear_free(copy, strlen(copy)); /* it may have held a secret */
    return ok;
}

bool hf_xks_config_check(struct hf_xks_config *cfg, char *err, size_t errlen)
{
    if (cfg == NULL || err == NULL || errlen == 0) return false;
    if (cfg->nstores == 0) {
        snprintf(err, errlen, "no key store: add a section [aws-xks:NAME]");
        return false;
    }
    for (size_t i = 0; i < cfg->nstores; i++) {
        struct hf_xks_store *s = &cfg->stores[i];

        if (!s->prefix_set) {
            snprintf(err, errlen, "[aws-xks:%s]: prefix is required (it may be empty)", s->name);
            return false;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(cfg->stores[j].prefix, s->prefix)) {
                snprintf(err, errlen, "[aws-xks:%s] and [aws-xks:%s] have the same prefix",
                         cfg->stores[j].name, s->name);
                return false;
            }
        if (s->ncreds == 0) {
            snprintf(err, errlen, "[aws-xks:%s]: no credential (credential or credential_file)",
                     s->name);
            return false;
        }
        if (s->nregions == 0) {
            snprintf(err, errlen, "[aws-xks:%s]: regions is required", s->name);
            return false;
        }
        if (s->nkeys == 0) {
            snprintf(err, errlen, "[aws-xks:%s]: keys is required (key ids, or *)", s->name);
            return false;
        }
        if (s->health_key == NULL && cfg->health_key != NULL &&
            !set_string(&s->health_key, cfg->health_key)) {
            snprintf(err, errlen, "out of memory");
            return false;
        }
        if (s->health_key == NULL) {
            snprintf(err, errlen, "[aws-xks:%s]: health_key is required (here or in [aws-xks])",
                     s->name);
            return false;
        }
        if (s->nrules != 0 && !s->authorization) {
            snprintf(err, errlen, "[aws-xks:%s]: allow/deny rules need authorization = on",
                     s->name);
            return false;
        }
    }
    return true;
}

/* ---- lookups on the request path ------------------------------------------------------------ */

const struct hf_xks_store *hf_xks_config_store(const struct hf_xks_config *cfg, const char *prefix)
{
    size_t n;

    if (cfg == NULL || prefix == NULL) return NULL;
    while (*prefix == '/')
        prefix++;
    n = strlen(prefix);
    while (n > 0 && prefix[n - 1] == '/')
        n--;
    for (size_t i = 0; i < cfg->nstores; i++) {
        const char *p = cfg->stores[i].prefix;
        if (strlen(p) == n && memcmp(p, prefix, n) == 0) return &cfg->stores[i];
    }
    return NULL;
}

const char *hf_xks_store_secret(const struct hf_xks_store *store, const char *akid)
{
    if (store == NULL || akid == NULL) return NULL;
    for (size_t i = 0; i < store->ncreds; i++)
        if (!strcmp(store->creds[i].akid, akid)) return store->creds[i].secret;
    return NULL;
}

bool hf_xks_store_has_key(const struct hf_xks_store *store, const char *key_id)
{
    if (store == NULL || key_id == NULL) return false;
    if (store->any_key) return true;
    for (size_t i = 0; i < store->nkeys; i++)
        if (!strcmp(store->keys[i], key_id)) return true;
    return false;
}
