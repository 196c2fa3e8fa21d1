/* PKCS#11 names for the digests OpenSSL hands us (signature and OAEP parameters), and RSA padding
 * modes as OpenSSL names them. */
#include "hf-build.h"

#include "provider/provider.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/rsa.h>

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

/* OpenSSL passes a padding mode as its name or as its RSA_*_PADDING number. */
static const struct {
    int mode;
    const char *name;
} rsa_pads[] = {
    {RSA_PKCS1_PADDING, OSSL_PKEY_RSA_PAD_MODE_PKCSV15},
    {RSA_PKCS1_OAEP_PADDING, OSSL_PKEY_RSA_PAD_MODE_OAEP},
    {RSA_PKCS1_PSS_PADDING, OSSL_PKEY_RSA_PAD_MODE_PSS},
    {RSA_NO_PADDING, OSSL_PKEY_RSA_PAD_MODE_NONE},
};

int hf_mech_rsa_pad_get(const OSSL_PARAM *p, int *mode)
{
    const char *s;

    *mode = -1;
    if (p->data_type != OSSL_PARAM_UTF8_STRING) return OSSL_PARAM_get_int(p, mode);
    if (!OSSL_PARAM_get_utf8_string_ptr(p, &s)) return 0;
    for (size_t i = 0; i < sizeof(rsa_pads) / sizeof(rsa_pads[0]); i++)
        if (strcmp(s, rsa_pads[i].name) == 0) *mode = rsa_pads[i].mode;
    return 1;
}

int hf_mech_rsa_pad_set(OSSL_PARAM *p, int mode)
{
    if (p->data_type != OSSL_PARAM_UTF8_STRING) return OSSL_PARAM_set_int(p, mode);
    for (size_t i = 0; i < sizeof(rsa_pads) / sizeof(rsa_pads[0]); i++)
        if (rsa_pads[i].mode == mode) return OSSL_PARAM_set_utf8_string(p, rsa_pads[i].name);
    return 0;
}
