/* PKCS#11 names for the digests OpenSSL hands us (signature and OAEP parameters). */
#include "hf-build.h"

#include "provider/provider.h"

static const struct {
    const char *name;
    CK_MECHANISM_TYPE mech;
    CK_RSA_PKCS_MGF_TYPE mgf;
} digests[] = {
    {"SHA1", CKM_SHA_1, CKG_MGF1_SHA1},      {"SHA224", CKM_SHA224, CKG_MGF1_SHA224},
    {"SHA256", CKM_SHA256, CKG_MGF1_SHA256}, {"SHA384", CKM_SHA384, CKG_MGF1_SHA384},
    {"SHA512", CKM_SHA512, CKG_MGF1_SHA512},
};

CK_MECHANISM_TYPE hf_mech_digest(const EVP_MD *md)
{
    for (size_t i = 0; md != NULL && i < sizeof(digests) / sizeof(digests[0]); i++)
        if (EVP_MD_is_a(md, digests[i].name)) return digests[i].mech;
    return 0;
}

CK_RSA_PKCS_MGF_TYPE hf_mech_mgf1(const EVP_MD *md)
{
    for (size_t i = 0; md != NULL && i < sizeof(digests) / sizeof(digests[0]); i++)
        if (EVP_MD_is_a(md, digests[i].name)) return digests[i].mgf;
    return 0;
}
