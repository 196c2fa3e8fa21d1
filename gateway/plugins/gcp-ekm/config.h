/* The gcp-ekm plugin's configuration: EKM endpoints (one per URL prefix) and the keys each
 * serves, with their allowlists and Key Access Justification policies.
 *
 *   [gcp-ekm:NAME]                 one EKM endpoint
 *   prefix = /ekm                  "" or "/seg/seg" ([A-Za-z0-9._~-] segments); required
 *   key_uri = https://ekm.example.com/ekm   the key URI base Cloud KMS is given: the default
 *                                  audience is its scheme://host (no port, no path)
 *   audiences = https://ekm.example.com     "aud" must be one of them (default: from key_uri)
 *   issuers = https://accounts.google.com, accounts.google.com   (the default)
 *   jwks = https://www.googleapis.com/oauth2/v3/certs            a file or an https URL
 *   jwks_ca = PATH                 trust anchors for an https jwks (default: the system's)
 *   jwks_allow = 127.0.0.0/8       CIDRs the SSRF guard lets the jwks fetch reach
 *   clock_skew = 60s               exp, nbf, iat tolerance (0..300 s)
 *   rate_limit = 0                 requests per second for the endpoint (0: none) -> 429
 *   deadline = 0                   a call older than this when its key operation would start
 *                                  answers 503 (0: none; Cloud EKM's target is 150 ms)
 *   key.PATH.allowed_emails = service-123@gcp-sa-ekms.iam.gserviceaccount.com, ...
 *                                  PATH (a gcp-ekm link's id, the URL's keyPath) is served by
 *                                  this endpoint; callers compared without case (required)
 *   key.PATH.reasons = all | none | NAME-or-NUMBER, ...    allowed access reasons (all)
 *   key.PATH.reason_absent = allow | deny                  a call without a reason (allow)
 *   key.PATH.cache_duration = 300s                         unwrap's allowedCacheDuration
 *   policy_file = PATH             more keys, from a file (relative: to the config file's
 *                                  directory) of [key:PATH] sections holding the same four
 *                                  options (allowed_emails = ..., reasons = ...); a key is
 *                                  defined in the file or in the section, never both; the file
 *                                  may not be group- or world-writable (it grants access)
 *
 * Pure, except for the hf_conf_* value parsers of plugin.h, so unit tests drive it. */
#ifndef HF_EKM_CONFIG_H
#define HF_EKM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/plugin.h"
#include "gateway/plugins/gcp-ekm/kaj.h"

#define HF_EKM_DEFAULT_JWKS "https://www.googleapis.com/oauth2/v3/certs"
#define HF_EKM_SKEW_MAX_S 300

/* Where a key's policy was written: one place only (config.h, policy_file). */
enum hf_ekm_key_origin { HF_EKM_KEY_FROM_SECTION, HF_EKM_KEY_FROM_FILE };

struct hf_ekm_key {
    char *path; /* the gcp-ekm link's id */
    enum hf_ekm_key_origin origin;
    char **emails; /* lower case */
    size_t nemails;
    struct hf_ekm_kaj_policy kaj;
    uint64_t cache_duration_s; /* 0: no allowedCacheDuration in the answer */
};

struct hf_ekm_endpoint {
    char *name;
    char *prefix; /* "" or "/a/b" */
    bool prefix_set;
    char *key_uri;
    char **audiences;
    size_t naudiences;
    struct hf_jwt_trust trust; /* issuers, jwks, jwks_ca, jwks_allow (plugin.h) */
    unsigned skew_s;
    unsigned rate_limit;
    unsigned deadline_ms;
    char *policy_file; /* the file's path, as hf_conf_path made it; NULL: none */
    struct hf_ekm_key *keys;
    size_t nkeys;
};

struct hf_ekm_config {
    struct hf_ekm_endpoint *endpoints;
    size_t nendpoints;
};

/* One "name = value" of "[gcp-ekm:<instance>]". false with a message for an unknown name or a
 * bad value. */
bool hf_ekm_config_set(struct hf_ekm_config *cfg, const char *instance, const char *name,
                       const char *value, char *err, size_t errlen);
/* The whole, with its defaults filled in: an endpoint at least, distinct prefixes, an audience
 * for each, an allowlist for each key. */
bool hf_ekm_config_check(struct hf_ekm_config *cfg, char *err, size_t errlen);
void hf_ekm_config_free(struct hf_ekm_config *cfg);

/* The endpoint whose prefix is the longest one starting path[0..base_len) at a segment
 * boundary, with the keyPath after it (*key_path, *key_path_len: not NUL-terminated); NULL if
 * none. */
const struct hf_ekm_endpoint *hf_ekm_config_route(const struct hf_ekm_config *cfg, const char *path,
                                                  size_t base_len, const char **key_path,
                                                  size_t *key_path_len);
/* The endpoint's key path[0..len), made on first use with the defaults and origin; NULL with
 * err when it was defined from the other origin, or out of memory. */
struct hf_ekm_key *hf_ekm_endpoint_key_get(struct hf_ekm_endpoint *ep, const char *path, size_t len,
                                           enum hf_ekm_key_origin origin, char *err, size_t errlen);
/* One of a key's options ("allowed_emails", "reasons", "reason_absent", "cache_duration"). */
bool hf_ekm_key_attr_set(struct hf_ekm_key *k, const char *attr, const char *value, char *err,
                         size_t errlen);
/* policy_file (policy-file.c): value through hf_conf_path, its [key:PATH] sections into ep's
 * keys; false with "FILE:LINE: why" or "FILE: why". At most one per endpoint. */
bool hf_ekm_policy_file_load(struct hf_ekm_endpoint *ep, const char *value, char *err,
                             size_t errlen);

/* Whether path lies under an endpoint's prefix ("<prefix>" itself or "<prefix>/..."): the
 * paths this plugin answers, with its 404 for those that name nothing. An endpoint with
 * prefix "" takes every path, so it leaves none to another catch-all plugin on its listener. */
bool hf_ekm_config_is_served(const struct hf_ekm_config *cfg, const char *path);
/* The key PATH of the endpoint, or NULL. */
const struct hf_ekm_key *hf_ekm_endpoint_key(const struct hf_ekm_endpoint *ep, const char *path);
/* Whether email (any case) is on the key's allowlist. */
bool hf_ekm_key_allows_email(const struct hf_ekm_key *key, const char *email);
/* "scheme://host" of an https URI (port, path, user info dropped) into out; false if uri is not
 * an absolute http(s) URI. */
bool hf_ekm_uri_audience(const char *uri, char *out, size_t outlen);

#endif /* HF_EKM_CONFIG_H */
