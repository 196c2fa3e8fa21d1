/* [gws-cse:NAME] sections into KACLS prefixes (config.h documents every option). One table
 * says what kind of value each plain option takes; authn.LABEL.* and perimeter.ID are parsed
 * beside it. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/plugin.h"

static const char *const default_authz_issuers[] = {
    "gsuitecse-tokenissuer-drive@system.gserviceaccount.com",
    "gsuitecse-tokenissuer-meet@system.gserviceaccount.com",
    "gsuitecse-tokenissuer-calendar@system.gserviceaccount.com",
};
static const char gmail_authz_issuer[] = "gsuitecse-tokenissuer-gmail@system.gserviceaccount.com";

/* ---- small owners of strings and lists ------------------------------------------------------- */

static void vec_free(char **items, size_t n)
{
    hf_conf_list_free(items, n);
}

/* *dst = a copy of value (the old one freed); false out of memory. */
static bool str_put(char **dst, const char *value)
{
    char *copy = value ? strdup(value) : NULL;

    if (value != NULL && copy == NULL) return false;
    free(*dst);
    *dst = copy;
    return true;
}

/* Appends copies of src[0..n) to (*items, *count). */
static bool vec_append(char ***items, size_t *count, const char *const *src, size_t n)
{
    char **grown = realloc(*items, (*count + n + 1) * sizeof(**items));

    if (grown == NULL) return false;
    *items = grown;
    for (size_t i = 0; i < n; i++) {
        if ((grown[*count] = strdup(src[i])) == NULL) return false;
        (*count)++;
    }
    return true;
}

static bool fail(char *err, size_t errlen, const char *fmt, ...) HF_PRINTF(3, 4);

static bool fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return false;
}

static bool is_https(const char *url)
{
    return strncmp(url, "https://", 8) == 0 && url[8] != '\0' && url[8] != '/';
}

/* ---- the kinds of value ---------------------------------------------------------------------- */

enum kind {
    K_TEXT,   /* a string kept as given */
    K_HTTPS,  /* an https URL kept byte for byte */
    K_PATH,   /* a file, relative to the config file's directory */
    K_SOURCE, /* a file or an https URL (%s allowed: a template) */
    K_LIST,   /* items */
    K_EMAILS, /* items with '@', lower-cased */
    K_URLS,   /* https items, a trailing '/' dropped */
    K_BOOL,
    K_GUESTS, /* allow | deny */
    K_COUNT,  /* 0..1000000 */
    K_MS,     /* a duration, 0..60 s */
    K_SKEW    /* a duration, 0..HF_CSE_SKEW_MAX_S, kept in seconds */
};

struct option {
    const char *name;
    enum kind kind;
    size_t off;       /* the member of struct hf_cse_prefix */
    size_t count_off; /* lists: their count */
};

#define OPT(n, k, m)                                                                               \
    {                                                                                              \
        n, k, offsetof(struct hf_cse_prefix, m), 0                                                 \
    }
#define OPT_LIST(s, k, m)                                                                          \
    {                                                                                              \
        s, k, offsetof(struct hf_cse_prefix, m), offsetof(struct hf_cse_prefix, n##m)              \
    }

static const struct option options[] = {
    OPT("kacls_url", K_HTTPS, kacls_url),
    OPT("kek", K_TEXT, kek),
    OPT("signing_key", K_TEXT, signing_key),
    OPT_LIST("authz_issuers", K_LIST, authz_issuers),
    OPT("authz_jwks", K_SOURCE, authz_jwks),
    OPT("jwks_ca", K_PATH, jwks_ca),
    OPT_LIST("jwks_allow", K_LIST, jwks_allow),
    OPT_LIST("admins", K_EMAILS, admins),
    OPT("guests", K_GUESTS, guests),
    OPT("owner_domain", K_TEXT, owner_domain),
    OPT_LIST("peers", K_URLS, peers),
    OPT("peer_ca", K_PATH, peer_ca),
    OPT_LIST("peer_allow", K_LIST, peer_allow),
    OPT_LIST("origins", K_LIST, origins),
    OPT("gmail", K_BOOL, gmail),
    OPT("name", K_TEXT, display_name),
    OPT("rate_limit", K_COUNT, rate_limit),
    OPT("deadline", K_MS, deadline_ms),
    OPT("clock_skew", K_SKEW, skew_s),
};

/* A list's items checked and normalised for kind. */
static bool items_check(enum kind kind, char **items, size_t n, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        char *it = items[i];
        size_t len = strlen(it);

        if (kind == K_EMAILS) {
            if (strchr(it, '@') == NULL)
                return fail(err, errlen, "'%.64s' is not an email address", it);
            for (char *p = it; *p; p++)
                *p = (char)tolower((unsigned char)*p);
        } else if (kind == K_URLS) {
            if (!is_https(it)) return fail(err, errlen, "'%.64s' is not an https URL", it);
            while (len > 9 && it[len - 1] == '/')
                it[--len] = '\0';
        }
    }
    return true;
}

/* A list replaces what an earlier line of the same option gave. */
static bool list_put(const struct option *o, void *base, const char *value, char *err,
                     size_t errlen)
{
    char ***items = (char ***)((char *)base + o->off), **fresh = NULL;
    size_t *count = (size_t *)((char *)base + o->count_off), nfresh = 0;

    if (!hf_conf_list(value, &fresh, &nfresh, err, errlen)) return false;
    if (!items_check(o->kind, fresh, nfresh, err, errlen)) {
        vec_free(fresh, nfresh);
        return false;
    }
    vec_free(*items, *count);
    *items = fresh;
    *count = nfresh;
    return true;
}

static bool number_put(const struct option *o, void *base, const char *value, char *err,
                       size_t errlen)
{
    unsigned *dst = (unsigned *)((char *)base + o->off);
    uint64_t v;
    bool ok;

    if (o->kind == K_COUNT)
        ok = hf_conf_uint(value, 0, 1000000, &v, err, errlen);
    else if (o->kind == K_MS)
        ok = hf_conf_duration_ms(value, 0, 60000, &v, err, errlen);
    else
        ok = hf_conf_duration_ms(value, 0, HF_CSE_SKEW_MAX_S * 1000u, &v, err, errlen);
    if (!ok) return false;
    *dst = (unsigned)(o->kind == K_SKEW ? v / 1000 : v);
    return true;
}

/* A template holds one "%s" and no other '%', so it can go to snprintf. */
static bool template_is_valid(const char *value)
{
    const char *p = strchr(value, '%');

    return p == NULL || (p[1] == 's' && strchr(p + 2, '%') == NULL);
}

static bool text_put(const struct option *o, void *base, const char *value, char *err,
                     size_t errlen)
{
    char **dst = (char **)((char *)base + o->off), *path;

    if (o->kind == K_HTTPS && !is_https(value))
        return fail(err, errlen, "%s: want an https:// URL", o->name);
    if (o->kind == K_SOURCE && !template_is_valid(value))
        return fail(err, errlen, "%s: one %%s at most (the issuer), no other '%%'", o->name);
    if (o->kind == K_PATH || (o->kind == K_SOURCE && strncmp(value, "https://", 8) != 0)) {
        if ((path = hf_conf_path(value)) == NULL) return fail(err, errlen, "%s", "out of memory");
        free(*dst);
        *dst = path;
        return true;
    }
    if (!str_put(dst, value)) return fail(err, errlen, "%s", "out of memory");
    return true;
}

static bool option_put(const struct option *o, struct hf_cse_prefix *px, const char *value,
                       char *err, size_t errlen)
{
    bool *flag = (bool *)((char *)px + o->off);

    switch (o->kind) {
    case K_LIST:
    case K_EMAILS:
    case K_URLS:
        return list_put(o, px, value, err, errlen);
    case K_BOOL:
        return hf_conf_bool(value, flag, err, errlen);
    case K_GUESTS:
        if (strcmp(value, "allow") != 0 && strcmp(value, "deny") != 0)
            return fail(err, errlen, "%s: allow or deny", o->name);
        *flag = strcmp(value, "allow") == 0;
        return true;
    case K_COUNT:
    case K_MS:
    case K_SKEW:
        return number_put(o, px, value, err, errlen);
    default:
        return text_put(o, px, value, err, errlen);
    }
}

/* ---- prefix ---------------------------------------------------------------------------------- */

static bool segment_char_is_valid(char c)
{
    return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '~' || c == '-';
}

/* "" or "/seg/seg": no empty, "." or ".." segment, kept without a trailing '/'. */
static bool prefix_put(struct hf_cse_prefix *px, const char *value, char *err, size_t errlen)
{
    size_t len = strlen(value), seg = 0;

    while (len > 0 && value[len - 1] == '/')
        len--;
    if (len > 0 && value[0] != '/') return fail(err, errlen, "%s", "prefix: \"\" or /seg/...");
    for (size_t i = 1; i <= len; i++) {
        if (i < len && value[i] != '/') {
            if (!segment_char_is_valid(value[i]))
                return fail(err, errlen, "%s", "prefix: segments of [A-Za-z0-9._~-]");
            continue;
        }
        size_t n = i - seg - 1;
        if (n == 0 || (n == 1 && value[seg + 1] == '.') ||
            (n == 2 && value[seg + 1] == '.' && value[seg + 2] == '.'))
            return fail(err, errlen, "%s", "prefix: an empty, . or .. segment");
        seg = i;
    }
    free(px->prefix);
    if ((px->prefix = strndup(value, len)) == NULL) return fail(err, errlen, "%s", "out of memory");
    px->prefix_set = true;
    return true;
}

/* ---- authn.LABEL.* --------------------------------------------------------------------------- */

static bool label_is_valid(const char *s, size_t n)
{
    if (n == 0 || n > 64) return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-') return false;
    return true;
}

static struct hf_cse_authn *authn_get(struct hf_cse_prefix *px, const char *label, size_t n)
{
    struct hf_cse_authn *grown, *a;

    for (size_t i = 0; i < px->nauthn; i++)
        if (strlen(px->authn[i].label) == n && strncmp(px->authn[i].label, label, n) == 0)
            return &px->authn[i];
    if ((grown = realloc(px->authn, (px->nauthn + 1) * sizeof(*grown))) == NULL) return NULL;
    px->authn = grown;
    a = &grown[px->nauthn];
    memset(a, 0, sizeof(*a));
    a->algs = HF_CSE_ALGS_DEFAULT;
    if ((a->label = strndup(label, n)) == NULL) return NULL;
    px->nauthn++;
    return a;
}

static bool algs_parse(const char *value, unsigned *algs, char *err, size_t errlen)
{
    char **items = NULL;
    size_t n = 0;
    bool ok = hf_conf_list(value, &items, &n, err, errlen);

    *algs = 0;
    for (size_t i = 0; ok && i < n; i++) {
        if (strcmp(items[i], "RS256") == 0)
            *algs |= HF_JWT_RS256;
        else if (strcmp(items[i], "ES256") == 0)
            *algs |= HF_JWT_ES256;
        else
            ok = fail(err, errlen, "algs: RS256 or ES256, not '%.16s'", items[i]);
    }
    if (ok && *algs == 0) ok = fail(err, errlen, "%s", "algs: RS256, ES256 or both");
    vec_free(items, n);
    return ok;
}

static bool authn_put(struct hf_cse_prefix *px, const char *name, const char *value, char *err,
                      size_t errlen)
{
    const char *label = name + 6, *dot = strchr(label, '.');
    struct hf_cse_authn *a;
    char *path;

    if (dot == NULL || !label_is_valid(label, (size_t)(dot - label)))
        return fail(err, errlen, "'%.80s': want authn.LABEL.issuer|jwks|audiences|algs", name);
    if ((a = authn_get(px, label, (size_t)(dot - label))) == NULL)
        return fail(err, errlen, "%s", "out of memory");
    if (strcmp(dot + 1, "issuer") == 0) {
        if (*value == '\0') return fail(err, errlen, "%s", "issuer: empty");
        return str_put(&a->issuer, value) || fail(err, errlen, "%s", "out of memory");
    }
    if (strcmp(dot + 1, "jwks") == 0) {
        if (strncmp(value, "https://", 8) == 0)
            return str_put(&a->jwks, value) || fail(err, errlen, "%s", "out of memory");
        if ((path = hf_conf_path(value)) == NULL) return fail(err, errlen, "%s", "out of memory");
        free(a->jwks);
        a->jwks = path;
        return true;
    }
    if (strcmp(dot + 1, "audiences") == 0) {
        char **fresh = NULL;
        size_t nfresh = 0;
        if (!hf_conf_list(value, &fresh, &nfresh, err, errlen)) return false;
        vec_free(a->audiences, a->naudiences);
        a->audiences = fresh;
        a->naudiences = nfresh;
        return true;
    }
    if (strcmp(dot + 1, "algs") == 0) return algs_parse(value, &a->algs, err, errlen);
    return fail(err, errlen, "unknown authn option '%.32s' (issuer, jwks, audiences, algs)",
                dot + 1);
}

/* ---- perimeter.ID = claim=glob, ... ---------------------------------------------------------- */

static bool claim_name_is_valid(const char *s, size_t n)
{
    if (n == 0 || n > 64) return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && strchr("_.:-", s[i]) == NULL) return false;
    return true;
}

/* fnmatch(3) takes any pattern; an unclosed '[' or a trailing '\' would match nothing the
 * operator meant, so they are refused here. */
static bool glob_is_valid(const char *g)
{
    if (*g == '\0') return false;
    for (const char *p = g; *p; p++) {
        if (*p == '\\') {
            if (*++p == '\0') return false;
        } else if (*p == '[') {
            const char *q = p + 1;
            if (*q == '!' || *q == '^') q++;
            if (*q == ']') q++;
            if ((q = strchr(q, ']')) == NULL) return false;
            p = q;
        }
    }
    return true;
}

static void perimeter_clear(struct hf_cse_perimeter *pm)
{
    for (size_t i = 0; i < pm->nrules; i++) {
        free(pm->rules[i].claim);
        free(pm->rules[i].glob);
    }
    free(pm->rules);
    pm->rules = NULL;
    pm->nrules = 0;
}

static bool rules_parse(struct hf_cse_perimeter *pm, char **items, size_t n, char *err,
                        size_t errlen)
{
    if ((pm->rules = calloc(n ? n : 1, sizeof(*pm->rules))) == NULL)
        return fail(err, errlen, "%s", "out of memory");
    for (size_t i = 0; i < n; i++) {
        char *eq = strchr(items[i], '=');
        if (eq == NULL || !claim_name_is_valid(items[i], (size_t)(eq - items[i])) ||
            !glob_is_valid(eq + 1))
            return fail(err, errlen, "perimeter: want claim=glob, not '%.64s'", items[i]);
        pm->rules[i].claim = strndup(items[i], (size_t)(eq - items[i]));
        pm->rules[i].glob = strdup(eq + 1);
        pm->nrules = i + 1;
        if (pm->rules[i].claim == NULL || pm->rules[i].glob == NULL)
            return fail(err, errlen, "%s", "out of memory");
    }
    return true;
}

static bool perimeter_put(struct hf_cse_prefix *px, const char *name, const char *value, char *err,
                          size_t errlen)
{
    const char *id = name + 10;
    struct hf_cse_perimeter *pm = NULL, *grown;
    char **items = NULL;
    size_t n = 0;
    bool ok;

    if (*id == '\0' || strlen(id) > 128)
        return fail(err, errlen, "%s", "perimeter.ID: an id of 1..128 bytes");
    if (!hf_conf_list(value, &items, &n, err, errlen)) return false;
    if (n == 0) {
        vec_free(items, n);
        return fail(err, errlen, "perimeter.%.64s: at least one claim=glob", id);
    }
    for (size_t i = 0; i < px->nperimeters && pm == NULL; i++)
        if (strcmp(px->perimeters[i].id, id) == 0) pm = &px->perimeters[i];
    if (pm == NULL && (grown = realloc(px->perimeters, (px->nperimeters + 1) * sizeof(*grown)))) {
        px->perimeters = grown;
        pm = &grown[px->nperimeters];
        memset(pm, 0, sizeof(*pm));
        if ((pm->id = strdup(id)) != NULL) px->nperimeters++;
    }
    if (pm == NULL || pm->id == NULL) {
        vec_free(items, n);
        return fail(err, errlen, "%s", "out of memory");
    }
    perimeter_clear(pm);
    ok = rules_parse(pm, items, n, err, errlen);
    vec_free(items, n);
    return ok;
}

/* ---- sections -------------------------------------------------------------------------------- */

static struct hf_cse_prefix *prefix_get(struct hf_cse_config *cfg, const char *name)
{
    struct hf_cse_prefix *grown, *px;

    for (size_t i = 0; i < cfg->nprefixes; i++)
        if (strcmp(cfg->prefixes[i].name, name) == 0) return &cfg->prefixes[i];
    if ((grown = realloc(cfg->prefixes, (cfg->nprefixes + 1) * sizeof(*grown))) == NULL)
        return NULL;
    cfg->prefixes = grown;
    px = &grown[cfg->nprefixes];
    memset(px, 0, sizeof(*px));
    px->skew_s = 60;
    if ((px->name = strdup(name)) == NULL) return NULL;
    cfg->nprefixes++;
    return px;
}

bool hf_cse_config_set(struct hf_cse_config *cfg, const char *instance, const char *name,
                       const char *value, char *err, size_t errlen)
{
    struct hf_cse_prefix *px;

    if (cfg == NULL || name == NULL || value == NULL || err == NULL || errlen == 0) return false;
    err[0] = '\0';
    if (instance == NULL || *instance == '\0')
        return fail(err, errlen, "%s", "gws-cse options go in a prefix's section [gws-cse:NAME]");
    if (strlen(value) > HF_CSE_VALUE_MAX) return fail(err, errlen, "%s: over 1024 bytes", name);
    if ((px = prefix_get(cfg, instance)) == NULL) return fail(err, errlen, "%s", "out of memory");
    if (strcmp(name, "prefix") == 0) return prefix_put(px, value, err, errlen);
    if (strncmp(name, "authn.", 6) == 0) return authn_put(px, name, value, err, errlen);
    if (strncmp(name, "perimeter.", 10) == 0) return perimeter_put(px, name, value, err, errlen);
    for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
        if (strcmp(name, options[i].name) == 0)
            return option_put(&options[i], px, value, err, errlen);
    return fail(err, errlen, "unknown option '%.64s'", name);
}

/* ---- the whole ------------------------------------------------------------------------------- */

static bool prefix_defaults(struct hf_cse_prefix *px)
{
    static const char *const origin[] = {HF_CSE_DEFAULT_ORIGIN};
    static const char *const gmail[] = {gmail_authz_issuer};

    if (px->kek == NULL && !str_put(&px->kek, px->name)) return false;
    if (px->authz_jwks == NULL && !str_put(&px->authz_jwks, HF_CSE_DEFAULT_AUTHZ_JWKS))
        return false;
    if (px->norigins == 0 && !vec_append(&px->origins, &px->norigins, origin, 1)) return false;
    if (px->nauthz_issuers == 0) {
        if (!vec_append(&px->authz_issuers, &px->nauthz_issuers, default_authz_issuers, 3))
            return false;
        if (px->gmail && !vec_append(&px->authz_issuers, &px->nauthz_issuers, gmail, 1))
            return false;
    }
    return true;
}

static bool authn_check(const struct hf_cse_prefix *px, char *err, size_t errlen)
{
    if (px->nauthn == 0) {
        snprintf(err, errlen, "[gws-cse:%s]: no authentication issuer: add authn.LABEL.issuer",
                 px->name);
        return false;
    }
    for (size_t i = 0; i < px->nauthn; i++) {
        const struct hf_cse_authn *a = &px->authn[i];
        const char *missing = a->issuer == NULL    ? "issuer"
                              : a->jwks == NULL    ? "jwks"
                              : a->naudiences == 0 ? "audiences"
                                                   : NULL;
        if (missing != NULL) {
            snprintf(err, errlen, "[gws-cse:%s]: authn.%s has no %s", px->name, a->label, missing);
            return false;
        }
    }
    return true;
}

static bool prefix_check(struct hf_cse_prefix *px, char *err, size_t errlen)
{
    if (!px->prefix_set) {
        snprintf(err, errlen, "[gws-cse:%s]: prefix is required (it may be empty)", px->name);
        return false;
    }
    if (px->kacls_url == NULL) {
        snprintf(err, errlen, "[gws-cse:%s]: kacls_url is required", px->name);
        return false;
    }
    if (!prefix_defaults(px)) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    return authn_check(px, err, errlen);
}

bool hf_cse_config_check(struct hf_cse_config *cfg, char *err, size_t errlen)
{
    if (cfg == NULL || err == NULL || errlen == 0) return false;
    if (cfg->nprefixes == 0)
        return fail(err, errlen, "%s", "no KACLS prefix: add a section [gws-cse:NAME]");
    for (size_t i = 0; i < cfg->nprefixes; i++) {
        if (!prefix_check(&cfg->prefixes[i], err, errlen)) return false;
        for (size_t j = 0; j < i; j++)
            if (strcmp(cfg->prefixes[j].prefix, cfg->prefixes[i].prefix) == 0) {
                snprintf(err, errlen, "[gws-cse:%s] and [gws-cse:%s] have the same prefix",
                         cfg->prefixes[j].name, cfg->prefixes[i].name);
                return false;
            }
    }
    return true;
}

static void prefix_free(struct hf_cse_prefix *px)
{
    for (size_t i = 0; i < px->nauthn; i++) {
        free(px->authn[i].label);
        free(px->authn[i].issuer);
        free(px->authn[i].jwks);
        vec_free(px->authn[i].audiences, px->authn[i].naudiences);
    }
    free(px->authn);
    for (size_t i = 0; i < px->nperimeters; i++) {
        perimeter_clear(&px->perimeters[i]);
        free(px->perimeters[i].id);
    }
    free(px->perimeters);
    for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
        const struct option *o = &options[i];
        if (o->count_off != 0)
            vec_free(*(char ***)((char *)px + o->off), *(size_t *)((char *)px + o->count_off));
        else if (o->kind <= K_SOURCE)
            free(*(char **)((char *)px + o->off));
    }
    free(px->name);
    free(px->prefix);
}

void hf_cse_config_free(struct hf_cse_config *cfg)
{
    if (cfg == NULL) return;
    for (size_t i = 0; i < cfg->nprefixes; i++)
        prefix_free(&cfg->prefixes[i]);
    free(cfg->prefixes);
    memset(cfg, 0, sizeof(*cfg));
}

/* ---- lookups --------------------------------------------------------------------------------- */

const struct hf_cse_prefix *hf_cse_config_route(const struct hf_cse_config *cfg, const char *path,
                                                const char **rest)
{
    const struct hf_cse_prefix *best = NULL;
    size_t best_len = 0;

    if (cfg == NULL || path == NULL || rest == NULL) return NULL;
    for (size_t i = 0; i < cfg->nprefixes; i++) {
        const struct hf_cse_prefix *px = &cfg->prefixes[i];
        size_t n = px->prefix ? strlen(px->prefix) : 0;

        if (px->prefix == NULL || strncmp(path, px->prefix, n) != 0 || path[n] != '/') continue;
        if (best == NULL || n > best_len) {
            best = px;
            best_len = n;
        }
    }
    if (best != NULL) *rest = path + best_len + 1;
    return best;
}

bool hf_cse_authz_jwks(const struct hf_cse_prefix *px, const char *issuer, char *out, size_t outlen)
{
    const char *at;
    int n;

    if (px == NULL || px->authz_jwks == NULL || issuer == NULL || out == NULL) return false;
    if ((at = strstr(px->authz_jwks, "%s")) != NULL)
        n = snprintf(out, outlen, "%.*s%s%s", (int)(at - px->authz_jwks), px->authz_jwks, issuer,
                     at + 2);
    else
        n = snprintf(out, outlen, "%s", px->authz_jwks);
    return n >= 0 && (size_t)n < outlen;
}

bool hf_cse_prefix_is_admin(const struct hf_cse_prefix *px, const char *email)
{
    if (px == NULL || email == NULL || *email == '\0') return false;
    for (size_t i = 0; i < px->nadmins; i++)
        if (strcasecmp(px->admins[i], email) == 0) return true;
    return false;
}

bool hf_cse_prefix_allows_origin(const struct hf_cse_prefix *px, const char *origin)
{
    if (px == NULL || origin == NULL) return false;
    for (size_t i = 0; i < px->norigins; i++)
        if (strcmp(px->origins[i], origin) == 0) return true;
    return false;
}

const struct hf_cse_perimeter *hf_cse_prefix_perimeter(const struct hf_cse_prefix *px,
                                                       const char *id)
{
    if (px == NULL || id == NULL) return NULL;
    for (size_t i = 0; i < px->nperimeters; i++)
        if (strcmp(px->perimeters[i].id, id) == 0) return &px->perimeters[i];
    return NULL;
}

bool hf_cse_prefix_has_peer(const struct hf_cse_prefix *px, const char *url)
{
    size_t len;

    if (px == NULL || url == NULL) return false;
    len = strlen(url);
    while (len > 9 && url[len - 1] == '/')
        len--;
    for (size_t i = 0; i < px->npeers; i++)
        if (strlen(px->peers[i]) == len && strncmp(px->peers[i], url, len) == 0) return true;
    return false;
}
