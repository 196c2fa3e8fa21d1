/* The Gmail algorithm names and their mechanisms (pk-alg.h). */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/pk-alg.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/x509.h>

/* The spec's names (specs/gws-cse.md "Stage 2"). Only RSA: the API names no EC algorithm, so a
 * wrapped EC key is refused by every operation (400) rather than used under a guessed name. */
static const struct hf_cse_pk_alg algs[] = {
    {"RSA/ECB/PKCS1Padding", HF_CSE_PK_DECRYPT, HF_CSE_PK_PKCS1, CKM_RSA_PKCS, 0, 0, NULL, 0},
    {"RSA/ECB/OAEPwithSHA-1andMGF1Padding", HF_CSE_PK_DECRYPT, HF_CSE_PK_OAEP, CKM_RSA_PKCS_OAEP,
     CKM_SHA_1, CKG_MGF1_SHA1, "SHA1", 20},
    {"RSA/ECB/OAEPwithSHA-256andMGF1Padding", HF_CSE_PK_DECRYPT, HF_CSE_PK_OAEP, CKM_RSA_PKCS_OAEP,
     CKM_SHA256, CKG_MGF1_SHA256, "SHA256", 32},
    {"RSA/ECB/OAEPwithSHA-512andMGF1Padding", HF_CSE_PK_DECRYPT, HF_CSE_PK_OAEP, CKM_RSA_PKCS_OAEP,
     CKM_SHA512, CKG_MGF1_SHA512, "SHA512", 64},
    {"SHA1withRSA", HF_CSE_PK_SIGN, HF_CSE_PK_PKCS1, CKM_RSA_PKCS, CKM_SHA_1, 0, "SHA1", 20},
    {"SHA256withRSA", HF_CSE_PK_SIGN, HF_CSE_PK_PKCS1, CKM_RSA_PKCS, CKM_SHA256, 0, "SHA256", 32},
    {"SHA512withRSA", HF_CSE_PK_SIGN, HF_CSE_PK_PKCS1, CKM_RSA_PKCS, CKM_SHA512, 0, "SHA512", 64},
    {"SHA1withRSA/PSS", HF_CSE_PK_SIGN, HF_CSE_PK_PSS, CKM_RSA_PKCS_PSS, CKM_SHA_1, CKG_MGF1_SHA1,
     "SHA1", 20},
    {"SHA256withRSA/PSS", HF_CSE_PK_SIGN, HF_CSE_PK_PSS, CKM_RSA_PKCS_PSS, CKM_SHA256,
     CKG_MGF1_SHA256, "SHA256", 32},
    {"SHA512withRSA/PSS", HF_CSE_PK_SIGN, HF_CSE_PK_PSS, CKM_RSA_PKCS_PSS, CKM_SHA512,
     CKG_MGF1_SHA512, "SHA512", 64},
};

const struct hf_cse_pk_alg *hf_cse_pk_alg_find(const char *name, enum hf_cse_pk_use use)
{
    if (name == NULL) return NULL;
    for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++)
        if (algs[i].use == use && strcasecmp(algs[i].name, name) == 0) return &algs[i];
    return NULL;
}

unsigned char *hf_cse_pk_digest_info(const struct hf_cse_pk_alg *alg, const unsigned char *digest,
                                     size_t digest_len, size_t *len)
{
    X509_SIG *sig = NULL;
    X509_ALGOR *algor;
    ASN1_OCTET_STRING *octets;
    unsigned char *der = NULL;
    int nid, n;

    if (alg == NULL || alg->md == NULL || digest == NULL || len == NULL ||
        digest_len != alg->hash_len)
        return NULL;
    if ((nid = OBJ_sn2nid(alg->md)) == NID_undef) return NULL;
    if ((sig = X509_SIG_new()) == NULL) goto done;
    X509_SIG_getm(sig, &algor, &octets);
    /* RFC 8017 appendix A.2.4: the parameters of these hashes are an explicit NULL, which is
     * what every verifier's byte comparison of the DigestInfo expects. */
    if (!X509_ALGOR_set0(algor, OBJ_nid2obj(nid), V_ASN1_NULL, NULL) ||
        !ASN1_OCTET_STRING_set(octets, digest, (int)digest_len))
        goto done;
    if ((n = i2d_X509_SIG(sig, &der)) <= 0) {
        der = NULL;
        goto done;
    }
    *len = (size_t)n;
done:
    X509_SIG_free(sig);
    return der;
}

void hf_cse_pk_mechanism(const struct hf_cse_pk_alg *alg, const unsigned char *label,
                         size_t label_len, CK_ULONG salt_len, struct hf_cse_pk_mech *m)
{
    memset(m, 0, sizeof(*m));
    m->mech.mechanism = alg->mechanism;
    switch (alg->scheme) {
    case HF_CSE_PK_OAEP:
        /* PKCS#11 3.0 2.1.8: the label is the encoding parameter P, given as "data specified". */
        m->params.oaep = (CK_RSA_PKCS_OAEP_PARAMS){alg->hash, alg->mgf, CKZ_DATA_SPECIFIED,
                                                   (CK_VOID_PTR)label, label_len};
        m->mech.pParameter = &m->params.oaep;
        m->mech.ulParameterLen = sizeof(m->params.oaep);
        break;
    case HF_CSE_PK_PSS:
        m->params.pss = (CK_RSA_PKCS_PSS_PARAMS){alg->hash, alg->mgf, salt_len};
        m->mech.pParameter = &m->params.pss;
        m->mech.ulParameterLen = sizeof(m->params.pss);
        break;
    case HF_CSE_PK_PKCS1:
        break;
    }
}
