/* CKM_HKDF_DERIVE (PKCS#11 3.0 section 2.43, RFC 5869) through OpenSSL's "HKDF": extract, expand
 * or both, with SHA-1/224/256/384/512, the salt none (a hash length of zeros), given bytes or the
 * value of a generic secret key the caller may derive with. */
#include "hf-build.h"

#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <string.h>

#include "pkcs11/core/crypto.h"
#include "pkcs11/core/secmem.h"
#include "pkcs11/module/mech.h"

/* RFC 5869 section 2.3: L <= 255 * HashLen. */
#define HKDF_MAX_BLOCKS 255

static const char *prf_md(CK_MECHANISM_TYPE prf)
{
    switch (prf) {
    case CKM_SHA_1:
    case CKM_SHA224:
    case CKM_SHA256:
    case CKM_SHA384:
    case CKM_SHA512:
        return hf_mech_hash_md(prf, NULL);
    }
    return NULL;
}

static CK_RV params_get(const CK_MECHANISM *mech, const CK_HKDF_PARAMS **out)
{
    const CK_HKDF_PARAMS *p = mech->pParameter;

    if (p == NULL || mech->ulParameterLen != sizeof(*p)) return CKR_MECHANISM_PARAM_INVALID;
    if (!p->bExtract && !p->bExpand) return CKR_MECHANISM_PARAM_INVALID;
    if (prf_md(p->prfHashMechanism) == NULL) return CKR_MECHANISM_PARAM_INVALID;
    if (p->ulInfoLen != 0 && p->pInfo == NULL) return CKR_MECHANISM_PARAM_INVALID;
    if (p->bExtract) {
        if (p->ulSaltType != CKF_HKDF_SALT_NULL && p->ulSaltType != CKF_HKDF_SALT_DATA &&
            p->ulSaltType != CKF_HKDF_SALT_KEY)
            return CKR_MECHANISM_PARAM_INVALID;
        if (p->ulSaltType == CKF_HKDF_SALT_DATA && (p->pSalt == NULL || p->ulSaltLen == 0))
            return CKR_MECHANISM_PARAM_INVALID;
    }
    *out = p;
    return CKR_OK;
}

/* A secret key's value as material (a reference): the salt key must be a generic secret the
 * caller may derive with, as the base key. */
static CK_RV salt_key(struct hf_session *s, CK_OBJECT_HANDLE h, struct hf_material **m)
{
    struct hf_object *obj = NULL;
    CK_RV rv = hf_object_get(s, h, &obj);

    if (rv == CKR_OBJECT_HANDLE_INVALID) rv = CKR_MECHANISM_PARAM_INVALID;
    if (rv == CKR_OK && (obj->kind != HF_OBJ_SECRET || obj->key_type != CKK_GENERIC_SECRET))
        rv = CKR_KEY_TYPE_INCONSISTENT;
    if (rv == CKR_OK) rv = hf_object_check_usage(obj, HF_USAGE_DERIVE);
    if (rv == CKR_OK) rv = hf_object_material(obj, m);
    hf_object_unref(obj);
    return rv;
}

static CK_RV run(const CK_HKDF_PARAMS *p, const unsigned char *ikm, size_t ikm_len,
                 const unsigned char *salt, size_t salt_len, unsigned char *out, size_t len)
{
    EVP_KDF *kdf = EVP_KDF_fetch(hf_crypto_libctx(), "HKDF", NULL);
    EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    OSSL_PARAM params[6], *q = params;
    const char *mode = !p->bExpand    ? "EXTRACT_ONLY"
                       : !p->bExtract ? "EXPAND_ONLY"
                                      : "EXTRACT_AND_EXPAND";
    CK_RV rv = ctx ? CKR_OK : CKR_HOST_MEMORY;

    *q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MODE, (char *)mode, 0);
    *q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
                                            (char *)prf_md(p->prfHashMechanism), 0);
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, ikm_len);
    if (salt_len)
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
    if (p->bExpand && p->ulInfoLen)
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, p->pInfo, p->ulInfoLen);
    *q = OSSL_PARAM_construct_end();
    if (rv == CKR_OK && EVP_KDF_derive(ctx, out, len, params) <= 0) rv = CKR_FUNCTION_FAILED;
    EVP_KDF_CTX_free(ctx);
    EVP_KDF_free(kdf);
    return rv;
}

/* Extract alone makes the PRK, a hash long; expand makes what the template asks for. */
static CK_RV out_len(const CK_HKDF_PARAMS *p, size_t want, size_t *len)
{
    size_t hash = hf_mech_md_size(prf_md(p->prfHashMechanism));

    if (!p->bExpand) {
        if (want != 0 && want != hash) return CKR_TEMPLATE_INCONSISTENT;
        *len = hash;
        return CKR_OK;
    }
    if (want == 0) return CKR_TEMPLATE_INCOMPLETE;
    if (want > HKDF_MAX_BLOCKS * hash) return CKR_TEMPLATE_INCONSISTENT;
    *len = want;
    return CKR_OK;
}

CK_RV hf_hkdf_derive(struct hf_session *s, struct hf_object *base, const CK_MECHANISM *mech,
                     size_t want, unsigned char **out, size_t *outlen)
{
    const CK_HKDF_PARAMS *p = NULL;
    struct hf_material *m = NULL, *salt_m = NULL;
    const unsigned char *ikm, *salt = NULL;
    size_t ikm_len = 0, salt_len = 0, len = 0;
    CK_RV rv = params_get(mech, &p);

    if (rv == CKR_OK) rv = out_len(p, want, &len);
    if (rv == CKR_OK && p->bExtract && p->ulSaltType == CKF_HKDF_SALT_KEY)
        rv = salt_key(s, p->hSaltKey, &salt_m);
    if (rv == CKR_OK && salt_m) salt = hf_material_secret(salt_m, &salt_len);
    if (rv == CKR_OK && p->bExtract && p->ulSaltType == CKF_HKDF_SALT_DATA)
        salt = p->pSalt, salt_len = p->ulSaltLen;
    if (rv == CKR_OK) rv = hf_object_material(base, &m);
    if (rv == CKR_OK && (ikm = hf_material_secret(m, &ikm_len)) == NULL)
        rv = CKR_KEY_TYPE_INCONSISTENT;
    if (rv == CKR_OK && (*out = hf_secmem_alloc(len)) == NULL) rv = CKR_HOST_MEMORY;
    if (rv == CKR_OK && (rv = run(p, ikm, ikm_len, salt, salt_len, *out, len)) != CKR_OK) {
        hf_secmem_free(*out, len);
        *out = NULL;
    }
    if (rv == CKR_OK) *outlen = len;
    hf_material_unref(salt_m);
    hf_material_unref(m);
    return rv;
}
