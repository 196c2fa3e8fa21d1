/* [oci-ekms] and [oci-ekms:NAME] sections into the prefix and the vaults (config.h). */
#include "hf-build.h"

#include "gateway/plugins/oci-ekms/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "gateway/plugin.h"

/* Lower case only: ids are matched as Holdfast writes them. */
bool hf_oci_uuid_is_valid(const char *s, size_t len)
{
    if (!hf_uuid_text_is_valid(s, len)) return false;
    for (size_t i = 0; i < len; i++)
        if (s[i] >= 'A' && s[i] <= 'F') return false;
    return true;
}

/* Kept as a path starts with it: "" or "/a/b", segments of [A-Za-z0-9._~-], none "." or "..". */
static bool prefix_set(struct hf_oci_config *cfg, const char *value, char *err, size_t errlen)
{
    size_t len = strlen(value), start;
    char *p;

    while (len > 0 && value[len - 1] == '/')
        len--;
    start = *value == '/' ? 1 : 0;
    if (len < start) len = start;
    for (size_t i = start, seg = start; i <= len; i++) {
        if (i < len && value[i] != '/') {
            if (strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-",
                       value[i]) == NULL)
                goto bad;
            continue;
        }
        if (len > start && (i == seg || (i - seg == 1 && value[seg] == '.') ||
                            (i - seg == 2 && value[seg] == '.' && value[seg + 1] == '.')))
            goto bad;
        seg = i + 1;
    }
    if ((p = malloc(len - start + 2)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    p[0] = '\0';
    if (len > start) snprintf(p, len - start + 2, "/%.*s", (int)(len - start), value + start);
    free(cfg->prefix);
    cfg->prefix = p;
    return true;
bad:
    snprintf(err, errlen, "prefix: \"\" or segments of [A-Za-z0-9._~-] joined by '/'");
    return false;
}

static bool global_set(struct hf_oci_config *cfg, const char *name, const char *value, char *err,
                       size_t errlen)
{
    uint64_t v;

    if (strcmp(name, "prefix") == 0) return prefix_set(cfg, value, err, errlen);
    if (strcmp(name, "random_status") == 0) {
        if (!hf_conf_uint(value, 200, 201, &v, err, errlen)) return false;
        cfg->random_status = (unsigned)v;
        return true;
    }
    snprintf(err, errlen,
             "unknown option '%.64s' in [oci-ekms] (prefix, random_status; vaults go in "
             "[oci-ekms:NAME])",
             name);
    return false;
}

static struct hf_oci_vault *vault_get(struct hf_oci_config *cfg, const char *name)
{
    struct hf_oci_vault *grown, *v;

    for (size_t i = 0; i < cfg->nvaults; i++)
        if (strcmp(cfg->vaults[i].name, name) == 0) return &cfg->vaults[i];
    if ((grown = realloc(cfg->vaults, (cfg->nvaults + 1) * sizeof(*grown))) == NULL) return NULL;
    cfg->vaults = grown;
    v = &grown[cfg->nvaults];
    memset(v, 0, sizeof(*v));
    if ((v->name = strdup(name)) == NULL) return NULL;
    cfg->nvaults++;
    return v;
}

static bool vault_id_set(struct hf_oci_vault *v, const char *value, char *err, size_t errlen)
{
    if (!hf_oci_uuid_is_valid(value, strlen(value))) {
        snprintf(err, errlen,
                 "vault_id: want a lower-case UUID (8-4-4-4-12 hex), as `holdfast uuid` prints");
        return false;
    }
    memcpy(v->id, value, HF_OCI_UUID_LEN + 1);
    return true;
}

static bool vault_set(struct hf_oci_vault *v, const char *name, const char *value, char *err,
                      size_t errlen)
{
    uint64_t n;

    if (strcmp(name, "vault_id") == 0) return vault_id_set(v, value, err, errlen);
    if (strcmp(name, "issuer") == 0) return hf_conf_string_set(&v->issuer, value, err, errlen);
    if (strcmp(name, "jwks") == 0) return hf_conf_string_set(&v->jwks, value, err, errlen);
    if (strcmp(name, "audience") == 0 || strcmp(name, "audiences") == 0)
        return hf_conf_list_set(value, &v->audiences, &v->naudiences, err, errlen);
    if (strcmp(name, "jwks_allow") == 0)
        return hf_conf_list_set(value, &v->jwks_allow, &v->njwks_allow, err, errlen);
    if (strcmp(name, "client_ids") == 0)
        return hf_conf_list_set(value, &v->client_ids, &v->nclient_ids, err, errlen);
    if (strcmp(name, "disabled") == 0) return hf_conf_bool(value, &v->disabled, err, errlen);
    if (strcmp(name, "rate_limit") == 0) {
        if (!hf_conf_uint(value, 0, 1000000, &n, err, errlen)) return false;
        v->rate_limit = (unsigned)n;
        return true;
    }
    if (strcmp(name, "jwks_ca") == 0) {
        char *path = hf_conf_path(value);
        if (path == NULL) {
            snprintf(err, errlen, "out of memory");
            return false;
        }
        free(v->jwks_ca);
        v->jwks_ca = path;
        return true;
    }
    snprintf(err, errlen,
             "unknown vault option '%.64s' (vault_id, issuer, audience, jwks, jwks_ca, "
             "jwks_allow, client_ids, disabled, rate_limit)",
             name);
    return false;
}

bool hf_oci_config_set(struct hf_oci_config *cfg, const char *instance, const char *name,
                       const char *value, char *err, size_t errlen)
{
    struct hf_oci_vault *v;

    if (cfg == NULL || name == NULL || value == NULL || err == NULL || errlen == 0) return false;
    err[0] = '\0';
    if (instance == NULL || *instance == '\0') return global_set(cfg, name, value, err, errlen);
    if ((v = vault_get(cfg, instance)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    return vault_set(v, name, value, err, errlen);
}

static bool vault_check(const struct hf_oci_vault *v, char *err, size_t errlen)
{
    const char *missing = v->id[0] == '\0' ? "vault_id (mint one with `holdfast uuid`)"
                          : !v->issuer     ? "issuer"
                          : !v->naudiences ? "audience"
                          : !v->jwks       ? "jwks"
                                           : NULL;

    if (missing == NULL) return true;
    snprintf(err, errlen, "[oci-ekms:%s]: %s is required", v->name, missing);
    return false;
}

bool hf_oci_config_check(struct hf_oci_config *cfg, char *err, size_t errlen)
{
    if (cfg == NULL || err == NULL || errlen == 0) return false;
    if (cfg->random_status == 0) cfg->random_status = 201;
    if (cfg->prefix == NULL &&
        !hf_conf_string_set(&cfg->prefix, HF_OCI_DEFAULT_PREFIX, err, errlen))
        return false;
    if (cfg->nvaults == 0) {
        snprintf(err, errlen, "no OCI vault: add a section [oci-ekms:NAME] with vault_id");
        return false;
    }
    for (size_t i = 0; i < cfg->nvaults; i++) {
        if (!vault_check(&cfg->vaults[i], err, errlen)) return false;
        for (size_t j = 0; j < i; j++)
            if (strcmp(cfg->vaults[j].id, cfg->vaults[i].id) == 0) {
                snprintf(err, errlen, "[oci-ekms:%s] and [oci-ekms:%s] have the same vault_id",
                         cfg->vaults[j].name, cfg->vaults[i].name);
                return false;
            }
    }
    return true;
}

static void vault_free(struct hf_oci_vault *v)
{
    free(v->name);
    free(v->issuer);
    free(v->jwks);
    free(v->jwks_ca);
    hf_conf_list_free(v->audiences, v->naudiences);
    hf_conf_list_free(v->jwks_allow, v->njwks_allow);
    hf_conf_list_free(v->client_ids, v->nclient_ids);
}

void hf_oci_config_free(struct hf_oci_config *cfg)
{
    if (cfg == NULL) return;
    for (size_t i = 0; i < cfg->nvaults; i++)
        vault_free(&cfg->vaults[i]);
    free(cfg->vaults);
    free(cfg->prefix);
    memset(cfg, 0, sizeof(*cfg));
}

const char *hf_oci_config_prefix(const struct hf_oci_config *cfg)
{
    return cfg != NULL && cfg->prefix != NULL ? cfg->prefix : HF_OCI_DEFAULT_PREFIX;
}

const struct hf_oci_vault *hf_oci_config_vault(const struct hf_oci_config *cfg, const char *id,
                                               size_t len)
{
    if (cfg == NULL || id == NULL || len != HF_OCI_UUID_LEN) return NULL;
    for (size_t i = 0; i < cfg->nvaults; i++)
        if (memcmp(cfg->vaults[i].id, id, len) == 0) return &cfg->vaults[i];
    return NULL;
}

bool hf_oci_vault_allows_client(const struct hf_oci_vault *vault, const char *client)
{
    bool hit = false;
    size_t n;

    if (vault == NULL) return false;
    if (vault->nclient_ids == 0) return true;
    if (client == NULL || *client == '\0') return false;
    n = strlen(client);
    /* A pin: compared in constant time, every entry, so timing tells no prefix of one. */
    for (size_t i = 0; i < vault->nclient_ids; i++)
        hit |= strlen(vault->client_ids[i]) == n &&
               CRYPTO_memcmp(vault->client_ids[i], client, n) == 0;
    return hit;
}
