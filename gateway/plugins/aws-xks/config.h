/* The aws-xks plugin's configuration: key stores, their credentials, allowlists and rules.
 *
 *   [aws-xks]                      options for every store (all optional)
 *   health_key = KEYID             the XKS key id (aws-xks link) of the health-check key
 *   health_cache_seconds = 10      0..60: how long a health answer is reused
 *   fleet_size = 1                 xksProxyFleetSize: gateway nodes behind the balancer
 *
 *   [aws-xks:NAME]                 one logical key store (one URI path prefix)
 *   prefix = /keystores/a          "" or 9..117 characters of [A-Za-z0-9/_-] ("/" optional
 *                                  in front, none at the end, no empty segment)
 *   credential = AKID:SECRET       repeatable (two at once during a rotation); AKID 20..30 of
 *                                  [A-Z2-7], secret 43..64 of [A-Za-z0-9+/=]
 *   credential_file = PATH         one AKID:SECRET per line ('#' comments); not world-readable;
 *                                  a relative PATH is the config file's directory's
 *   regions = us-east-1, ...       SigV4 regions accepted (required)
 *   keys = k1, k2 | *              XKS key ids this store serves; "*" = any aws-xks link
 *   health_key = KEYID             overrides [aws-xks] health_key
 *   mtls_subject = GLOB            client certificate subject DN required (fnmatch)
 *   mtls_san = GLOB                a client certificate SAN must match (fnmatch)
 *   authorization = on|off         secondary authorization: deny unless a rule allows
 *   allow = NAME FIELD=GLOB ...    rules, first match wins; FIELD is keyId, awsPrincipalArn,
 *   deny = NAME FIELD=GLOB ...     kmsKeyArn, kmsOperation, kmsViaService, awsSourceVpc,
 *                                  awsSourceVpce; an absent field matches as ""
 *   max_plaintext = 4300           caps (never below the spec's minimums)
 *   max_aad = 8192
 *   rate_limit = 0                 requests per second for the store (0: none) -> 429
 *   deadline_ms = 0                a request older than this when its key operation would
 *                                  start answers 503 instead (0: none; KMS gives up at 250)
 *
 * Pure: building and checking the structs needs nothing of the gateway, so unit tests drive it.
 */
#ifndef HF_XKS_CONFIG_H
#define HF_XKS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "gateway/plugins/aws-xks/request.h"

#define HF_XKS_PREFIX_MIN 9
#define HF_XKS_PREFIX_MAX 117 /* "/<prefix>/kms/xks/v1" is at most 128 characters */
#define HF_XKS_AKID_MIN 20    /* hf_sigv4_akid_is_valid and hf_sigv4_secret_is_valid check these */
#define HF_XKS_AKID_MAX 30
#define HF_XKS_SECRET_MIN 43
#define HF_XKS_SECRET_MAX 64
#define HF_XKS_HEALTH_CACHE_MAX_S 60

struct hf_xks_credential {
    char akid[HF_XKS_AKID_MAX + 1];
    char *secret; /* cleansed on free */
};

/* The request fields a secondary authorization rule can match. */
enum hf_xks_field {
    HF_XKS_FIELD_KEY_ID,
    HF_XKS_FIELD_PRINCIPAL,
    HF_XKS_FIELD_KMS_KEY_ARN,
    HF_XKS_FIELD_OPERATION,
    HF_XKS_FIELD_VIA_SERVICE,
    HF_XKS_FIELD_SOURCE_VPC,
    HF_XKS_FIELD_SOURCE_VPCE,
    HF_XKS_FIELD_COUNT
};

struct hf_xks_rule {
    char *name;
    bool allow;
    char *glob[HF_XKS_FIELD_COUNT]; /* NULL: any value */
};

struct hf_xks_store {
    char *name;   /* the section's instance */
    char *prefix; /* without leading or trailing '/': "" or "keystores/a" */
    bool prefix_set;
    struct hf_xks_credential *creds;
    size_t ncreds;
    char **regions;
    size_t nregions;
    char **keys;
    size_t nkeys;
    bool any_key; /* keys = * */
    char *health_key;
    char *mtls_subject;
    char *mtls_san;
    bool authorization;
    struct hf_xks_rule *rules;
    size_t nrules;
    struct hf_xks_caps caps;
    unsigned rate_limit;
    unsigned deadline_ms;
};

struct hf_xks_config {
    struct hf_xks_store *stores;
    size_t nstores;
    char *health_key;
    unsigned health_cache_s;
    unsigned fleet_size;
};

/* Empty config with the defaults. */
void hf_xks_config_init(struct hf_xks_config *cfg);
/* One "name = value" of section "aws-xks" (instance "") or "aws-xks:<instance>". false with a
 * message in err for an unknown name or a bad value. */
bool hf_xks_config_set(struct hf_xks_config *cfg, const char *instance, const char *name,
                       const char *value, char *err, size_t errlen);
/* The whole: at least one store, distinct prefixes, each store with credentials, regions, keys
 * and a health key, rules only with authorization = on. */
bool hf_xks_config_check(struct hf_xks_config *cfg, char *err, size_t errlen);
void hf_xks_config_free(struct hf_xks_config *cfg);

/* The store whose prefix is the route's {prefix*} capture (slashes around it ignored), or NULL. */
const struct hf_xks_store *hf_xks_config_store(const struct hf_xks_config *cfg, const char *prefix);
/* The secret of akid in the store, or NULL. */
const char *hf_xks_store_secret(const struct hf_xks_store *store, const char *akid);
/* Whether the store serves XKS key id key_id (its allowlist). */
bool hf_xks_store_has_key(const struct hf_xks_store *store, const char *key_id);

/* Normalises a configured prefix into out (no leading or trailing '/'); false if invalid. */
bool hf_xks_prefix_normalise(const char *in, char *out, size_t outlen);

/* Secondary authorization: the first rule of the store matching values (indexed by
 * enum hf_xks_field; NULL = absent) or NULL when none does (default deny). */
const struct hf_xks_rule *hf_xks_authz_match(const struct hf_xks_store *store,
                                             const char *const values[HF_XKS_FIELD_COUNT]);
/* Parses "NAME FIELD=GLOB ..." into rule (freed by hf_xks_rule_clear). */
bool hf_xks_rule_parse(const char *text, bool allow, struct hf_xks_rule *rule, char *err,
                       size_t errlen);
void hf_xks_rule_clear(struct hf_xks_rule *rule);

#endif /* HF_XKS_CONFIG_H */
