/* [sap-hyok] and [sap-hyok:KEYSTORE_ID] sections into keystores (config.h). */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "gateway/plugin.h"

static struct hf_sap_keystore *keystore_get(struct hf_sap_config *cfg, const char *id, char *err,
                                            size_t errlen)
{
    struct hf_sap_keystore *grown, *ks;

    if (!hf_uuid_text_is_valid(id, strlen(id))) {
        snprintf(err, errlen, "[sap-hyok:%.40s]: a keystore id is a UUID (holdfast uuid)", id);
        return NULL;
    }
    for (size_t i = 0; i < cfg->nkeystores; i++)
        if (strcasecmp(cfg->keystores[i].id, id) == 0) return &cfg->keystores[i];
    if ((grown = realloc(cfg->keystores, (cfg->nkeystores + 1) * sizeof(*grown))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    cfg->keystores = grown;
    ks = &grown[cfg->nkeystores++];
    memset(ks, 0, sizeof(*ks));
    for (size_t i = 0; i < HF_SAP_UUID_LEN; i++)
        ks->id[i] = (char)tolower((unsigned char)id[i]);
    return ks;
}

static int hex_nibble(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c = (char)tolower((unsigned char)c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* 64 hex digits, optionally with a colon between bytes (openssl x509 -fingerprint's form). */
static bool pin_parse(const char *s, unsigned char out[32])
{
    size_t n = 0;

    while (*s && n < 32) {
        int hi = hex_nibble(s[0]), lo = hi < 0 ? -1 : hex_nibble(s[1]);
        if (lo < 0) return false;
        out[n++] = (unsigned char)(hi << 4 | lo);
        s += 2;
        if (*s == ':' && n < 32 && s[1] != '\0') s++;
    }
    return n == 32 && *s == '\0';
}

static bool pins_set(struct hf_sap_keystore *ks, const char *value, char *err, size_t errlen)
{
    char **items = NULL;
    size_t n = 0;
    bool ok = false;

    if (!hf_conf_list(value, &items, &n, err, errlen)) return false;
    if (n < 1 || n > HF_SAP_PINS_MAX) {
        snprintf(err, errlen, "pins: one or two SHA-256 fingerprints, got %zu", n);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        if (!pin_parse(items[i], ks->pins[i])) {
            snprintf(err, errlen, "pins: item %zu is not a SHA-256 fingerprint (64 hex digits)",
                     i + 1);
            goto done;
        }
    ks->npins = n;
    ok = true;
done:
    hf_conf_list_free(items, n);
    return ok;
}

static bool keystore_set(struct hf_sap_keystore *ks, const char *name, const char *value, char *err,
                         size_t errlen)
{
    if (strcmp(name, "tenant") == 0) {
        char *copy;
        if (value[0] == '\0') {
            snprintf(err, errlen, "tenant: an SAP tenant id, not empty");
            return false;
        }
        if ((copy = strdup(value)) == NULL) {
            snprintf(err, errlen, "out of memory");
            return false;
        }
        free(ks->tenant);
        ks->tenant = copy;
        ks->tenant_set = true;
        return true;
    }
    if (strcmp(name, "groups") == 0) {
        char **items = NULL;
        size_t n = 0;
        if (!hf_conf_list(value, &items, &n, err, errlen)) return false;
        hf_conf_list_free(ks->groups, ks->ngroups);
        ks->groups = items;
        ks->ngroups = n;
        return true;
    }
    if (strcmp(name, "pins") == 0) return pins_set(ks, value, err, errlen);
    snprintf(err, errlen, "unknown keystore option '%.32s' (tenant, groups, pins)", name);
    return false;
}

static bool segment_char_is_valid(char c)
{
    return isalnum((unsigned char)c) || strchr("._~-", c) != NULL;
}

/* "" or "/seg/seg": no empty, "." or ".." segment, and no "keystores" segment, which would make
 * the route patterns' split ambiguous. */
static bool prefix_is_valid(const char *p)
{
    while (*p) {
        const char *seg, *end;
        size_t len;
        if (*p != '/') return false;
        seg = ++p;
        while (*p && *p != '/') {
            if (!segment_char_is_valid(*p)) return false;
            p++;
        }
        end = p;
        len = (size_t)(end - seg);
        if (len == 0 || (len == 1 && seg[0] == '.') || (len == 2 && strncmp(seg, "..", 2) == 0) ||
            (len == 9 && strncmp(seg, "keystores", 9) == 0))
            return false;
    }
    return true;
}

static bool global_set(struct hf_sap_config *cfg, const char *name, const char *value, char *err,
                       size_t errlen)
{
    char *copy;

    if (strcmp(name, "prefix") != 0) {
        snprintf(err, errlen, "unknown option '%.32s' of [sap-hyok] (prefix)", name);
        return false;
    }
    if (strlen(value) > 256 || !prefix_is_valid(value)) {
        snprintf(err, errlen,
                 "prefix: \"\" or /seg/seg ([A-Za-z0-9._~-] segments, none \"keystores\")");
        return false;
    }
    if ((copy = strdup(value)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    free(cfg->prefix);
    cfg->prefix = copy;
    return true;
}

bool hf_sap_config_set(struct hf_sap_config *cfg, const char *instance, const char *name,
                       const char *value, char *err, size_t errlen)
{
    struct hf_sap_keystore *ks;

    if (instance == NULL || instance[0] == '\0') return global_set(cfg, name, value, err, errlen);
    if ((ks = keystore_get(cfg, instance, err, errlen)) == NULL) return false;
    return keystore_set(ks, name, value, err, errlen);
}

bool hf_sap_config_check(struct hf_sap_config *cfg, char *err, size_t errlen)
{
    if (cfg->prefix == NULL && (cfg->prefix = strdup(HF_SAP_DEFAULT_PREFIX)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    if (cfg->nkeystores == 0) {
        snprintf(err, errlen, "sap-hyok: no keystore ([sap-hyok:KEYSTORE_ID] with tenant, pins)");
        return false;
    }
    for (size_t i = 0; i < cfg->nkeystores; i++) {
        const struct hf_sap_keystore *ks = &cfg->keystores[i];
        if (!ks->tenant_set || ks->npins == 0) {
            snprintf(err, errlen, "[sap-hyok:%s]: %s is required", ks->id,
                     ks->tenant_set ? "pins" : "tenant");
            return false;
        }
    }
    return true;
}

void hf_sap_config_free(struct hf_sap_config *cfg)
{
    if (cfg == NULL) return;
    for (size_t i = 0; i < cfg->nkeystores; i++) {
        free(cfg->keystores[i].tenant);
        hf_conf_list_free(cfg->keystores[i].groups, cfg->keystores[i].ngroups);
    }
    free(cfg->keystores);
    free(cfg->prefix);
    memset(cfg, 0, sizeof(*cfg));
}

const struct hf_sap_keystore *hf_sap_config_keystore(const struct hf_sap_config *cfg,
                                                     const char *id)
{
    if (cfg == NULL || id == NULL) return NULL;
    for (size_t i = 0; i < cfg->nkeystores; i++)
        if (strcasecmp(cfg->keystores[i].id, id) == 0) return &cfg->keystores[i];
    return NULL;
}

bool hf_sap_keystore_has_pin(const struct hf_sap_keystore *ks, const unsigned char digest[32])
{
    int found = 0;

    /* No early exit: which pin matched, or whether the first did, stays off the clock. */
    for (size_t i = 0; i < ks->npins; i++)
        found |= CRYPTO_memcmp(ks->pins[i], digest, 32) == 0;
    return found != 0;
}

bool hf_sap_keystore_allows_group(const struct hf_sap_keystore *ks, const char *group)
{
    if (ks->ngroups == 0) return true;
    if (group == NULL) return false;
    for (size_t i = 0; i < ks->ngroups; i++)
        if (strcmp(ks->groups[i], group) == 0) return true;
    return false;
}

bool hf_sap_config_is_served(const struct hf_sap_config *cfg, const char *path)
{
    const char *prefix = cfg->prefix ? cfg->prefix : HF_SAP_DEFAULT_PREFIX;
    size_t n = strlen(prefix);

    return strncmp(path, prefix, n) == 0 && strncmp(path + n, "/keystores/", 11) == 0;
}
