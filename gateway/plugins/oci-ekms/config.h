/* The oci-ekms plugin's configuration (specs/oci-ekms.md, "Transport" and "Authentication"):
 * the URL prefix, the random route's status, and the vaults, each a Holdfast object with its
 * own token settings.
 *
 *   [oci-ekms]
 *   prefix = /api/v1/cckm/oci/ekm/v1   "" or "/seg/seg" ([A-Za-z0-9._~-] segments); the default
 *                                      is Thales', so its clients and the k6 script run unchanged
 *   random_status = 201                GenerateRandomBytes' success status: 201 (Thales) or 200
 *
 *   [oci-ekms:NAME]                    one vault (NAME is the operator's, for messages)
 *   vault_id = UUID                    the vault's id in the URL, minted with `holdfast uuid`
 *                                      (required; lower-case 8-4-4-4-12)
 *   issuer = https://idcs-<id>.identity.oraclecloud.com   "iss" must equal it (required)
 *   audience = https://10.0.0.31/      the primary audience "aud" must hold (required; a list:
 *                                      any of them)
 *   jwks = PATH | https://...          the domain's signing keys (required): a file, or the
 *                                      domain's /admin/v1/SigningCert/jwk
 *   jwks_ca = PATH                     trust anchors for an https jwks (default: the system's)
 *   jwks_allow = 127.0.0.0/8           CIDRs the SSRF guard lets the jwks fetch reach
 *   client_ids = ID, ...               the token's client_id (or sub when it has none) must be
 *                                      one of them (default: any client of the domain)
 *   disabled = no                      yes: every route of the vault answers 403
 *   rate_limit = 0                     requests per second for the vault (0: none) -> 429
 *
 * Pure, except for plugin.h's hf_conf_* value parsers, so unit tests drive it. */
#ifndef HF_OCI_CONFIG_H
#define HF_OCI_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define HF_OCI_DEFAULT_PREFIX "/api/v1/cckm/oci/ekm/v1"
#define HF_OCI_UUID_LEN 36

struct hf_oci_vault {
    char *name;
    char id[HF_OCI_UUID_LEN + 1]; /* "" until vault_id is set */
    char *issuer;
    char **audiences;
    size_t naudiences;
    char *jwks;
    char *jwks_ca;
    char **jwks_allow;
    size_t njwks_allow;
    char **client_ids;
    size_t nclient_ids;
    bool disabled;
    unsigned rate_limit;
};

struct hf_oci_config {
    char *prefix;           /* "" or "/a/b"; NULL until set: the default */
    unsigned random_status; /* 201 or 200 */
    struct hf_oci_vault *vaults;
    size_t nvaults;
};

/* One "name = value" of "[oci-ekms]" (instance "") or "[oci-ekms:<instance>]". false with a
 * message for an unknown name or a bad value. */
bool hf_oci_config_set(struct hf_oci_config *cfg, const char *instance, const char *name,
                       const char *value, char *err, size_t errlen);
/* The whole, defaults filled in: a vault at least, each with vault_id, issuer, audience and
 * jwks, no vault_id twice. */
bool hf_oci_config_check(struct hf_oci_config *cfg, char *err, size_t errlen);
void hf_oci_config_free(struct hf_oci_config *cfg);

/* The prefix in force (the default until one is set). */
const char *hf_oci_config_prefix(const struct hf_oci_config *cfg);
/* The vault whose vault_id is id[0..len), or NULL. */
const struct hf_oci_vault *hf_oci_config_vault(const struct hf_oci_config *cfg, const char *id,
                                               size_t len);
/* Whether client (a token's client_id or sub) may call vault: true when it pins none. */
bool hf_oci_vault_allows_client(const struct hf_oci_vault *vault, const char *client);
/* Whether s[0..len) is a UUID as Holdfast writes them: lower-case 8-4-4-4-12 hex. */
bool hf_oci_uuid_is_valid(const char *s, size_t len);

#endif /* HF_OCI_CONFIG_H */
