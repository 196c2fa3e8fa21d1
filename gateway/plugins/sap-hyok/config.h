/* The sap-hyok plugin's configuration (specs/sap-hyok.md, "Transport" and "Authentication").
 *
 *   [sap-hyok]
 *   prefix = /api/v1/cckm/sap/hyok/v1   the URL root before /keystores/ ("" or "/seg/seg",
 *                                  [A-Za-z0-9._~-] segments, none named "keystores"; this is
 *                                  the default, Thales' root)
 *
 *   [sap-hyok:KEYSTORE_ID]         one keystore: one SAP tenant's links and pinned certificate;
 *                                  KEYSTORE_ID is a UUID (`holdfast uuid` mints one), the last
 *                                  segment of the keystore URL entered in SAP Data Custodian
 *   tenant = SAP_TENANT_ID         request_metadata.sap_tenant_id must equal it (required)
 *   groups = G1, G2                optional allowlist of request_metadata.sap_group_id
 *   pins = HEX64[, HEX64]          SHA-256 of the client certificate's DER (the leaf), one or
 *                                  two (rotation); colons between bytes allowed (required)
 *
 * A key is in a keystore when it has a link of type "sap-hyok" whose id is
 * "KEYSTORE_ID/EXTERNAL_KEY_ID", EXTERNAL_KEY_ID being the key's UUID (the spec's Decision):
 *   holdfast link add sap-hyok KEYSTORE_ID/KEY_UUID KEY_NAME
 * Blocking that link is the keystore's kill switch for that key.
 *
 * Success auditing for this API alone is the gateway's switch: `[audit] success_events.sap-hyok
 * = no` (plugin.h; the module's failures-only audit): failures stay recorded.
 *
 * Pure, except for the hf_conf_* value parsers of plugin.h, so unit tests drive it. */
#ifndef HF_SAP_CONFIG_H
#define HF_SAP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define HF_SAP_DEFAULT_PREFIX "/api/v1/cckm/sap/hyok/v1"
#define HF_SAP_PINS_MAX 2
#define HF_SAP_UUID_LEN 36

struct hf_sap_keystore {
    char id[HF_SAP_UUID_LEN + 1]; /* lower case */
    char *tenant;
    bool tenant_set;
    char **groups; /* empty: any group */
    size_t ngroups;
    unsigned char pins[HF_SAP_PINS_MAX][32];
    size_t npins;
};

struct hf_sap_config {
    char *prefix; /* "" or "/a/b"; NULL until set (hf_sap_config_check fills the default) */
    struct hf_sap_keystore *keystores;
    size_t nkeystores;
};

/* One "name = value" of "[sap-hyok]" (instance "") or "[sap-hyok:<keystore id>]". false with a
 * message for an unknown name, a bad value or a keystore id that is not a UUID. */
bool hf_sap_config_set(struct hf_sap_config *cfg, const char *instance, const char *name,
                       const char *value, char *err, size_t errlen);
/* The whole, with the default prefix: at least one keystore, each with a tenant and a pin. */
bool hf_sap_config_check(struct hf_sap_config *cfg, char *err, size_t errlen);
void hf_sap_config_free(struct hf_sap_config *cfg);

/* The keystore whose id is id (any case), or NULL. */
const struct hf_sap_keystore *hf_sap_config_keystore(const struct hf_sap_config *cfg,
                                                     const char *id);
/* Whether digest is one of the keystore's pins, compared in constant time (every pin is
 * compared, whichever matches). */
bool hf_sap_keystore_has_pin(const struct hf_sap_keystore *ks, const unsigned char digest[32]);
/* Whether group (NULL: absent) passes the keystore's allowlist: always when it has none. */
bool hf_sap_keystore_allows_group(const struct hf_sap_keystore *ks, const char *group);
/* Whether path lies under "<prefix>/keystores/": the paths this plugin's routes take. */
bool hf_sap_config_is_served(const struct hf_sap_config *cfg, const char *path);

#endif /* HF_SAP_CONFIG_H */
