/* CKM_ECDH1_DERIVE (PKCS#11 2.40 section 2.3.15): the shared secret of the base EC private key
 * and the caller's public value, given as the bare uncompressed point or its DER OCTET STRING
 * (callers send both), with CKD_NULL (the secret itself) or the ANSI X9.63 KDF over SHA-1/224/
 * 256/384/512 (OpenSSL's "X963KDF"). A point that is not on the key's curve is
 * CKR_MECHANISM_PARAM_INVALID. */
#include "hf-build.h"

#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <stdlib.h>
#include <string.h>

#include "pkcs11/core/crypto.h"
#include "pkcs11/core/secmem.h"
#include "pkcs11/module/mech.h"

/* The digest of an X9.63 KDF, "" for CKD_NULL, NULL for a KDF we do not offer. */
static const char *kdf_md(CK_ULONG kdf)
{
    switch (kdf) {
    case CKD_NULL:
        return "";
    case CKD_SHA1_KDF:
        return "SHA1";
    case CKD_SHA224_KDF:
        return "SHA224";
    case CKD_SHA256_KDF:
        return "SHA256";
    case CKD_SHA384_KDF:
        return "SHA384";
    case CKD_SHA512_KDF:
        return "SHA512";
    }
    return NULL;
}

static CK_RV params_get(const CK_MECHANISM *mech, const CK_ECDH1_DERIVE_PARAMS **out)
{
    const CK_ECDH1_DERIVE_PARAMS *p = mech->pParameter;

    if (p == NULL || mech->ulParameterLen != sizeof(*p)) return CKR_MECHANISM_PARAM_INVALID;
    if (p->pPublicData == NULL || p->ulPublicDataLen == 0) return CKR_MECHANISM_PARAM_INVALID;
    if (kdf_md(p->kdf) == NULL) return CKR_MECHANISM_PARAM_INVALID;
    if (p->ulSharedDataLen != 0 && p->pSharedData == NULL) return CKR_MECHANISM_PARAM_INVALID;
    /* Section 2.3.15: with CKD_NULL there is no shared data. */
    if (p->kdf == CKD_NULL && p->ulSharedDataLen != 0) return CKR_MECHANISM_PARAM_INVALID;
    *out = p;
    return CKR_OK;
}

/* The peer's key on the base key's curve, through the same checks as an imported public key. */
static CK_RV peer_key(struct hf_object *base, const CK_ECDH1_DERIVE_PARAMS *p, EVP_PKEY **peer)
{
    unsigned char params[64], *der = NULL;
    CK_ATTRIBUTE t[] = {{CKA_EC_PARAMS, params, sizeof(params)},
                        {CKA_EC_POINT, p->pPublicData, p->ulPublicDataLen}};
    bool secret = false;
    size_t len = 0;
    CK_RV rv = hf_object_attr_get(base, &t[0], &secret);

    if (rv == CKR_OK) rv = hf_tmpl_public_der(CKK_EC, t, 2, &der, &len);
    if (rv == CKR_ATTRIBUTE_VALUE_INVALID) return CKR_MECHANISM_PARAM_INVALID;
    if (rv == CKR_OK) rv = hf_public_from_der(der, len, peer);
    free(der);
    return rv;
}

/* Z, the x coordinate of the shared point, as many bytes as the field (SEC 1 section 3.3.1). */
static CK_RV shared_secret(EVP_PKEY *priv, EVP_PKEY *peer, unsigned char **z, size_t *zlen)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(hf_crypto_libctx(), priv, NULL);
    CK_RV rv = ctx ? CKR_OK : CKR_HOST_MEMORY;

    *z = NULL;
    if (rv == CKR_OK &&
        (EVP_PKEY_derive_init(ctx) <= 0 || EVP_PKEY_derive_set_peer(ctx, peer) <= 0 ||
         EVP_PKEY_derive(ctx, NULL, zlen) <= 0))
        rv = CKR_MECHANISM_PARAM_INVALID;
    if (rv == CKR_OK && (*z = hf_secmem_alloc(*zlen)) == NULL) rv = CKR_HOST_MEMORY;
    if (rv == CKR_OK && EVP_PKEY_derive(ctx, *z, zlen) <= 0) rv = CKR_FUNCTION_FAILED;
    if (rv != CKR_OK) {
        hf_secmem_free(*z, *zlen);
        *z = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    return rv;
}

/* Z of a pool key (hf_object_is_in_pool): made in its member from the peer's point. */
static CK_RV pool_secret(struct hf_object *base, EVP_PKEY *peer, unsigned char **z, size_t *zlen)
{
    unsigned char point[1 + 2 * 66]; /* P-521's uncompressed point */
    size_t len = 0;
    CK_RV rv;

    *z = NULL;
    *zlen = (base->key.bits + 7) / 8;
    if (!EVP_PKEY_get_octet_string_param(peer, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point,
                                         sizeof(point), &len))
        return CKR_MECHANISM_PARAM_INVALID;
    if ((*z = hf_secmem_alloc(*zlen)) == NULL) return CKR_HOST_MEMORY;
    rv = hf_core_key_ecdh(hf_mod.core, &base->key, &base->version, point, len, *z, *zlen);
    if (rv != CKR_OK) {
        hf_secmem_free(*z, *zlen);
        *z = NULL;
    }
    return rv;
}

static CK_RV x963(const char *md, const unsigned char *z, size_t zlen,
                  const CK_ECDH1_DERIVE_PARAMS *p, unsigned char *out, size_t len)
{
    EVP_KDF *kdf = EVP_KDF_fetch(hf_crypto_libctx(), "X963KDF", NULL);
    EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    OSSL_PARAM params[4], *q = params;
    CK_RV rv = ctx ? CKR_OK : CKR_HOST_MEMORY;

    *q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)md, 0);
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)z, zlen);
    if (p->ulSharedDataLen)
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, p->pSharedData,
                                                 p->ulSharedDataLen);
    *q = OSSL_PARAM_construct_end();
    if (rv == CKR_OK && EVP_KDF_derive(ctx, out, len, params) <= 0) rv = CKR_FUNCTION_FAILED;
    EVP_KDF_CTX_free(ctx);
    EVP_KDF_free(kdf);
    return rv;
}

/* CKD_NULL: Z itself, or its last want bytes (as SoftHSMv2 truncates: from the leading end). */
static CK_RV output(const char *md, unsigned char *z, size_t zlen, const CK_ECDH1_DERIVE_PARAMS *p,
                    size_t want, unsigned char **out, size_t *outlen)
{
    CK_RV rv;

    if (*md == '\0') {
        if (want > zlen) return CKR_TEMPLATE_INCONSISTENT;
        if (want == 0) want = zlen;
        if ((*out = hf_secmem_alloc(want)) == NULL) return CKR_HOST_MEMORY;
        memcpy(*out, z + zlen - want, want);
        *outlen = want;
        return CKR_OK;
    }
    if (want == 0) return CKR_TEMPLATE_INCOMPLETE; /* a KDF has no length of its own */
    if ((*out = hf_secmem_alloc(want)) == NULL) return CKR_HOST_MEMORY;
    if ((rv = x963(md, z, zlen, p, *out, want)) != CKR_OK) {
        hf_secmem_free(*out, want);
        *out = NULL;
        return rv;
    }
    *outlen = want;
    return CKR_OK;
}

CK_RV hf_ecdh_derive(struct hf_object *base, const CK_MECHANISM *mech, size_t want,
                     unsigned char **out, size_t *outlen)
{
    const CK_ECDH1_DERIVE_PARAMS *p = NULL;
    struct hf_material *m = NULL;
    EVP_PKEY *peer = NULL;
    unsigned char *z = NULL;
    size_t zlen = 0;
    CK_RV rv = params_get(mech, &p);

    if (rv == CKR_OK) rv = peer_key(base, p, &peer);
    if (rv == CKR_OK && hf_object_is_in_pool(base))
        rv = pool_secret(base, peer, &z, &zlen);
    else if (rv == CKR_OK && (rv = hf_object_material(base, &m)) == CKR_OK)
        rv = shared_secret(hf_material_pkey(m), peer, &z, &zlen);
    if (rv == CKR_OK) rv = output(kdf_md(p->kdf), z, zlen, p, want, out, outlen);
    hf_secmem_free(z, zlen);
    hf_material_unref(m);
    EVP_PKEY_free(peer);
    return rv;
}
