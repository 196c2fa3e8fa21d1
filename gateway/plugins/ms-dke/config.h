/* The ms-dke plugin's configuration: one DKE key service and the keys it serves.
 *
 *   [ms-dke]
 *   prefix = /dke                  "" or "/seg/seg" ([A-Za-z0-9._-] segments): the URL path the
 *                                  key URLs start with
 *   base_url = https://dke.contoso.com/dke   the key URL base the sensitivity labels name
 *                                  (required): kid = base_url/<keyName>/<keyId>, never from Host
 *   audience = https://dke.contoso.com       "aud" must equal it, and the 401 challenge's
 *                                  resource and realm (default: base_url's scheme://host[:port])
 *   issuers = https://sts.windows.net/<tenantId>/, ...   "iss" must be one of them (required)
 *   jwks = https://login.microsoftonline.com/common/discovery/v2.0/keys   a file or an https URL
 *   jwks_ca = PATH                 trust anchors for an https jwks (default: the system's)
 *   jwks_allow = 127.0.0.0/8       CIDRs the SSRF guard lets the jwks fetch reach
 *   authority = https://login.windows.net/common/oauth2/authorize   the challenge's authorization
 *   clock_skew = 300s              exp, nbf tolerance (1 s..600 s; the reference's .NET default)
 *   required_scope = user_impersonation   "scp" must hold it (default: not checked)
 *   allowed_appids = d3590ed6-52b3-4102-aeff-aad2292ab01c, ...   "appid" must be one (default: any)
 *   cache_exp = 1d                 the GET answer's cache.exp, from now (1 s..30 days)
 *   rate_limit = 0                 decrypts per second (0: none) -> 429
 *   key.NAME.allowed_emails = alice@contoso.com, ...   email mode: the token's email, else upn
 *   key.NAME.allowed_groups = <object id>, ...         group mode: the token's groups
 *   key.NAME.cache_exp = 12h       this key's cache.exp (default: the section's)
 *
 * NAME is the DKE key name (a link of type ms-dke, `holdfast link add ms-dke NAME KEY`); each key
 * has exactly one mode. Pure, except for the hf_conf_* value parsers of plugin.h. */
#ifndef HF_DKE_CONFIG_H
#define HF_DKE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/plugin.h"

#define HF_DKE_DEFAULT_JWKS "https://login.microsoftonline.com/common/discovery/v2.0/keys"
#define HF_DKE_DEFAULT_AUTHORITY "https://login.windows.net/common/oauth2/authorize"
#define HF_DKE_DEFAULT_CACHE_EXP_S 86400u
#define HF_DKE_CACHE_EXP_MAX_S (30u * 86400u)
#define HF_DKE_SKEW_MAX_S 600u

/* Per key, one authorization mode (spec, "Authorization"). */
enum hf_dke_authz { HF_DKE_AUTHZ_NONE = 0, HF_DKE_AUTHZ_EMAIL, HF_DKE_AUTHZ_GROUP };

struct hf_dke_key {
    char *name; /* the ms-dke link's id, the URL's keyName */
    enum hf_dke_authz mode;
    char **allowed; /* emails (lower case) or group object ids */
    size_t nallowed;
    uint64_t cache_exp_s; /* 0: the section's */
};

struct hf_dke_config {
    char *prefix; /* "" or "/a/b" */
    char *base_url;
    char *audience;
    struct hf_jwt_trust trust; /* issuers, jwks, jwks_ca, jwks_allow (plugin.h) */
    char *authority;
    unsigned skew_s;
    char *required_scope;
    char **appids;
    size_t nappids;
    uint64_t cache_exp_s;
    unsigned rate_limit;
    struct hf_dke_key *keys;
    size_t nkeys;
};

/* A config with its defaults; false if out of memory. */
bool hf_dke_config_init(struct hf_dke_config *cfg);
/* One "name = value" of [ms-dke] (instance ""; instances are refused). */
bool hf_dke_config_set(struct hf_dke_config *cfg, const char *instance, const char *name,
                       const char *value, char *err, size_t errlen);
/* The whole: base_url and issuers given, the audience filled in, a mode for every key. */
bool hf_dke_config_check(struct hf_dke_config *cfg, char *err, size_t errlen);
void hf_dke_config_free(struct hf_dke_config *cfg);

/* Whether path is the prefix itself or under it: the paths this plugin answers. */
bool hf_dke_config_is_served(const struct hf_dke_config *cfg, const char *path);
/* The key NAME, or NULL. */
const struct hf_dke_key *hf_dke_config_key(const struct hf_dke_config *cfg, const char *name);
/* The key's cache.exp in seconds. */
uint64_t hf_dke_key_cache_exp_s(const struct hf_dke_config *cfg, const struct hf_dke_key *key);
/* "scheme://host[:port]" of an https URL into out; false if url is not https://host... */
bool hf_dke_url_origin(const char *url, char *out, size_t outlen);

#endif /* HF_DKE_CONFIG_H */
