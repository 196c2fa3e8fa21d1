/* SAP HYOK's asymmetric size rules and mechanisms (specs/sap-hyok.md "Crypto", "Sizes"), over
 * the enums request.h parses: pure, so the limits are unit-tested without a module. */
#ifndef HF_SAP_ASYM_H
#define HF_SAP_ASYM_H

#include <stdbool.h>
#include <stddef.h>

#include "gateway/plugins/sap-hyok/request.h"

/* The longest plaintext RSAES-OAEP on hash h encrypts under a k-byte modulus: k - 2 hLen - 2
 * (RFC 8017 7.1.1), 0 when the modulus is too short for the hash at all. */
size_t hf_sap_oaep_plaintext_max(const struct hf_sap_hash *h, size_t k);

/* Whether a message of len bytes fits type: RAW at most HF_SAP_MESSAGE_MAX bytes, DIGEST
 * exactly h's length. false with the reason in why (never the message). */
bool hf_sap_pss_message_is_valid(const struct hf_sap_hash *h, enum hf_sap_message_type type,
                                 size_t len, char *why, size_t whylen);

/* A mechanism and the parameters it points to, filled by hf_sap_pss_mechanism. */
struct hf_sap_pss_mech {
    CK_MECHANISM mech;
    CK_RSA_PKCS_PSS_PARAMS params;
};
/* RSASSA-PSS on h for type into m (which must not move while m->mech is used): MGF1 on the
 * same hash, salt as long as the hash (the spec's rule); RAW with the hash-and-sign mechanism,
 * so the module hashes the message, DIGEST with CKM_RSA_PKCS_PSS over the caller's digest.
 * false for a hash PKCS#11 has no PSS mechanism for. */
bool hf_sap_pss_mechanism(const struct hf_sap_hash *h, enum hf_sap_message_type type,
                          struct hf_sap_pss_mech *m);

#endif /* HF_SAP_ASYM_H */
