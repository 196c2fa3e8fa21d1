/* SAP HYOK's asymmetric size rules and PSS mechanisms (asym.h). */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/asym.h"

#include <stdio.h>
#include <string.h>

size_t hf_sap_oaep_plaintext_max(const struct hf_sap_hash *h, size_t k)
{
    if (h == NULL || k < 2 * h->len + 2) return 0;
    return k - 2 * h->len - 2;
}

bool hf_sap_pss_message_is_valid(const struct hf_sap_hash *h, enum hf_sap_message_type type,
                                 size_t len, char *why, size_t whylen)
{
    if (h == NULL) {
        snprintf(why, whylen, "algorithm: unknown");
        return false;
    }
    if (type == HF_SAP_MESSAGE_DIGEST && len != h->len) {
        snprintf(why, whylen, "message: a %zu-byte digest, %s takes %zu bytes", len, h->name,
                 h->len);
        return false;
    }
    if (type == HF_SAP_MESSAGE_RAW && len > HF_SAP_MESSAGE_MAX) {
        snprintf(why, whylen, "message: %zu bytes, over %u", len, HF_SAP_MESSAGE_MAX);
        return false;
    }
    return true;
}

static CK_MECHANISM_TYPE hash_and_sign(CK_MECHANISM_TYPE hash)
{
    switch (hash) {
    case CKM_SHA_1:
        return CKM_SHA1_RSA_PKCS_PSS;
    case CKM_SHA256:
        return CKM_SHA256_RSA_PKCS_PSS;
    case CKM_SHA384:
        return CKM_SHA384_RSA_PKCS_PSS;
    case CKM_SHA512:
        return CKM_SHA512_RSA_PKCS_PSS;
    default:
        return CKM_VENDOR_DEFINED;
    }
}

bool hf_sap_pss_mechanism(const struct hf_sap_hash *h, enum hf_sap_message_type type,
                          struct hf_sap_pss_mech *m)
{
    memset(m, 0, sizeof(*m));
    if (h == NULL || hash_and_sign(h->mech) == CKM_VENDOR_DEFINED) return false;
    m->params.hashAlg = h->mech;
    m->params.mgf = h->mgf;
    m->params.sLen = h->len;
    m->mech.mechanism = type == HF_SAP_MESSAGE_RAW ? hash_and_sign(h->mech) : CKM_RSA_PKCS_PSS;
    m->mech.pParameter = &m->params;
    m->mech.ulParameterLen = sizeof(m->params);
    return true;
}
