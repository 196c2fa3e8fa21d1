/* Session key objects from templates: the objects keygen.c asks for when a template says
 * CKA_TOKEN FALSE, and lone public keys (C_CreateObject of a CKO_PUBLIC_KEY). keygen.c has
 * checked the mechanism, the size and the template's class and key type, and made the material
 * (hf_material: AES keys in locked memory, RSA/EC keys in the core's library context); here the
 * template's label, id, CKA_PRIVATE, usage and extractability become the object's, and the
 * object goes to the session object table (session-objects.c). */
#include "hf-build.h"

#include "internal.h"

#include <openssl/asn1.h>
#include <openssl/core_names.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>

#include "pkcs11/core/crypto.h"
#include "pkcs11/core/curve.h"

/* Longest CKA_LABEL and CKA_ID kept: PKCS#11 sets none; more is no label anybody reads. */
#define ATTR_MAX 255

static CK_RV object_new(enum hf_object_kind kind, enum hf_alg alg, unsigned bits,
                        struct hf_object **out)
{
    struct hf_object *obj = calloc(1, sizeof(*obj));
    CK_RV rv;

    if (!obj) return CKR_HOST_MEMORY;
    atomic_init(&obj->refs, 1);
    obj->key.alg = alg;
    obj->key.bits = bits;
    obj->key.state = HF_STATE_ACTIVE;
    if (!(obj->sobj = calloc(1, sizeof(*obj->sobj)))) {
        hf_object_unref(obj);
        return CKR_HOST_MEMORY;
    }
    if ((rv = hf_object_face_init(obj, kind)) != CKR_OK) {
        hf_object_unref(obj);
        return rv;
    }
    *out = obj;
    return CKR_OK;
}

/* CKA_LABEL or CKA_ID of t, else of other (a pair's other template: pkcs11-tool pairs keys by
 * CKA_ID and names both), else empty. */
static CK_RV bytes_attr(const CK_ATTRIBUTE *t, CK_ULONG n, const CK_ATTRIBUTE *other,
                        CK_ULONG other_n, CK_ATTRIBUTE_TYPE type, unsigned char **out, size_t *len)
{
    const CK_ATTRIBUTE *a = hf_tmpl_find(t, n, type);

    if (!a) a = hf_tmpl_find(other, other_n, type);
    *len = a ? a->ulValueLen : 0;
    if (*len > ATTR_MAX) return CKR_ATTRIBUTE_VALUE_INVALID;
    if (!(*out = malloc(*len ? *len : 1))) return CKR_HOST_MEMORY;
    if (*len) memcpy(*out, a->pValue, *len);
    return CKR_OK;
}

/* What the template says of the object itself; usage is the key's (a pair's two templates). */
static CK_RV attrs_set(struct hf_object *obj, const CK_ATTRIBUTE *t, CK_ULONG n,
                       const CK_ATTRIBUTE *other, CK_ULONG other_n, unsigned long usage,
                       bool exportable, bool local)
{
    struct hf_session_attrs *sa = obj->sobj;
    bool present, val = obj->kind != HF_OBJ_PUBLIC; /* section 4.4: the token's default */
    CK_RV rv = hf_tmpl_bool(t, n, CKA_PRIVATE, &present, &val);

    if (rv == CKR_OK) rv = bytes_attr(t, n, other, other_n, CKA_LABEL, &sa->label, &sa->label_len);
    if (rv == CKR_OK) rv = bytes_attr(t, n, other, other_n, CKA_ID, &sa->id, &sa->id_len);
    sa->is_private = val;
    sa->is_local = local;
    sa->is_sealed = local;
    obj->key.usage = usage;
    obj->key.exportable = exportable;
    return rv;
}

/* The usage mask of a key from its templates; every use cleared is a template that makes no
 * key (as for token keys). */
static CK_RV usage_of(enum hf_alg alg, const CK_ATTRIBUTE *pub, CK_ULONG pub_n,
                      const CK_ATTRIBUTE *priv, CK_ULONG priv_n, unsigned long *usage)
{
    CK_RV rv;

    *usage = hf_usage_default(alg);
    if ((rv = hf_tmpl_usage(pub, pub_n, usage)) != CKR_OK) return rv;
    if ((rv = hf_tmpl_usage(priv, priv_n, usage)) != CKR_OK) return rv;
    return *usage ? CKR_OK : CKR_TEMPLATE_INCONSISTENT;
}

static CK_RV secret_make(struct hf_session *s, struct hf_material *m, bool local, bool sealed,
                         const CK_ATTRIBUTE *tmpl, CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    struct hf_object *obj = NULL;
    unsigned long usage = 0;
    bool exportable = false;
    enum hf_alg alg = hf_material_alg(m);
    CK_RV rv = usage_of(alg, NULL, 0, tmpl, n, &usage);

    if (rv == CKR_OK) rv = hf_tmpl_exportable(tmpl, n, &exportable);
    if (rv == CKR_OK) rv = object_new(HF_OBJ_SECRET, alg, hf_material_bits(m), &obj);
    if (rv == CKR_OK) rv = attrs_set(obj, tmpl, n, NULL, 0, usage, exportable, local);
    if (rv != CKR_OK) {
        hf_object_unref(obj);
        return rv;
    }
    obj->sobj->is_sealed = sealed;
    atomic_init(&obj->material, hf_material_ref(m));
    return hf_session_object_add(s, obj, out);
}

CK_RV hf_session_key_secret(struct hf_session *s, struct hf_material *m, bool local,
                            const CK_ATTRIBUTE *tmpl, CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    return secret_make(s, m, local, local, tmpl, n, out);
}

CK_RV hf_session_key_derived(struct hf_session *s, struct hf_material *m, bool sealed,
                             const CK_ATTRIBUTE *tmpl, CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    return secret_make(s, m, false, sealed, tmpl, n, out);
}

/* The public half of an object: its SubjectPublicKeyInfo (CKA_PUBLIC_KEY_INFO) and the key the
 * public operations use. Takes over der. */
static CK_RV public_set(struct hf_object *obj, unsigned char *der, size_t len)
{
    obj->version.public_der = der;
    obj->version.public_der_len = len;
    return hf_public_from_der(der, len, &obj->pub);
}

static CK_RV pair_face(struct hf_material *m, enum hf_object_kind kind, const CK_ATTRIBUTE *t,
                       CK_ULONG n, const CK_ATTRIBUTE *other, CK_ULONG other_n, unsigned long usage,
                       bool exportable, bool local, struct hf_object **out)
{
    enum hf_alg alg = hf_material_alg(m);
    struct hf_object *obj = NULL;
    unsigned char *der = NULL;
    size_t len = 0;
    CK_RV rv = object_new(kind, alg, hf_material_bits(m), &obj);

    if (rv == CKR_OK) rv = attrs_set(obj, t, n, other, other_n, usage, exportable, local);
    if (rv == CKR_OK) rv = hf_material_public_der(m, &der, &len);
    if (rv == CKR_OK) rv = public_set(obj, der, len);
    if (rv == CKR_OK && kind == HF_OBJ_PRIVATE) atomic_init(&obj->material, hf_material_ref(m));
    if (rv != CKR_OK) {
        hf_object_unref(obj);
        return rv;
    }
    *out = obj;
    return CKR_OK;
}

CK_RV hf_session_key_pair(struct hf_session *s, struct hf_material *m, bool local,
                          const CK_ATTRIBUTE *pub_tmpl, CK_ULONG pub_n,
                          const CK_ATTRIBUTE *priv_tmpl, CK_ULONG priv_n, CK_OBJECT_HANDLE *pub,
                          CK_OBJECT_HANDLE *priv)
{
    struct hf_object *priv_obj = NULL, *pub_obj = NULL;
    unsigned long usage = 0;
    bool exportable = false;
    CK_RV rv = usage_of(hf_material_alg(m), pub_tmpl, pub_n, priv_tmpl, priv_n, &usage);

    if (rv == CKR_OK) rv = hf_tmpl_exportable(priv_tmpl, priv_n, &exportable);
    if (rv == CKR_OK)
        rv = pair_face(m, HF_OBJ_PRIVATE, priv_tmpl, priv_n, pub_tmpl, pub_n, usage, exportable,
                       local, &priv_obj);
    if (rv == CKR_OK && pub)
        rv = pair_face(m, HF_OBJ_PUBLIC, pub_tmpl, pub_n, priv_tmpl, priv_n, usage, false, local,
                       &pub_obj);
    if (rv != CKR_OK) goto fail;
    rv = hf_session_object_add(s, priv_obj, priv);
    priv_obj = NULL;
    if (rv != CKR_OK || !pub) goto fail;
    rv = hf_session_object_add(s, pub_obj, pub);
    pub_obj = NULL;
    /* Half a pair is no answer to C_GenerateKeyPair. */
    if (rv != CKR_OK) hf_session_object_destroy(s, *priv);
fail:
    hf_object_unref(priv_obj);
    hf_object_unref(pub_obj);
    return rv;
}

/* ---- lone public keys ----------------------------------------------------------------------- */

/* The EC point of CKA_EC_POINT: the DER OCTET STRING PKCS#11 specifies, or the bare point some
 * callers give (told apart by length: the DER form is longer). EC points are uncompressed (04 ||
 * x || y); an Ed25519 one is the 32-byte encoding of RFC 8032, with no prefix. */
static CK_RV ec_point(const CK_ATTRIBUTE *a, enum hf_alg alg, unsigned bits,
                      const unsigned char **p, size_t *len)
{
    size_t raw = alg == HF_ALG_ED25519 ? 32 : 1 + 2 * ((bits + 7) / 8);
    unsigned char first = alg == HF_ALG_ED25519 ? 0 : 0x04;
    const unsigned char *v = a ? a->pValue : NULL, *in = v;
    long content = 0;
    int tag = 0, xclass = 0;

    if (!v) return CKR_TEMPLATE_INCOMPLETE;
    /* P-521's 133 bytes take a long-form length: let OpenSSL read the header. */
    if (a->ulValueLen > raw &&
        ASN1_get_object(&in, &content, &tag, &xclass, (long)a->ulValueLen) == 0 &&
        tag == V_ASN1_OCTET_STRING && xclass == V_ASN1_UNIVERSAL && (size_t)content == raw &&
        in + content == v + a->ulValueLen && (!first || in[0] == first)) {
        *p = in;
        *len = raw;
        return CKR_OK;
    }
    if (a->ulValueLen == raw && (!first || v[0] == first)) {
        *p = v;
        *len = raw;
        return CKR_OK;
    }
    return CKR_ATTRIBUTE_VALUE_INVALID;
}

/* The public key's parameters, as OpenSSL imports them. */
static CK_RV public_params(CK_KEY_TYPE type, const CK_ATTRIBUTE *t, CK_ULONG n, OSSL_PARAM_BLD *bld,
                           BIGNUM **bn)
{
    const unsigned char *point = NULL;
    size_t point_len = 0;
    unsigned bits = 0;
    CK_RV rv;

    if (type == CKK_RSA) {
        rv = hf_tmpl_bn_push(bld, t, n, CKA_MODULUS, OSSL_PKEY_PARAM_RSA_N, &bn[0]);
        if (rv == CKR_OK)
            rv = hf_tmpl_bn_push(bld, t, n, CKA_PUBLIC_EXPONENT, OSSL_PKEY_PARAM_RSA_E, &bn[1]);
        return rv;
    }
    const CK_ATTRIBUTE *params = hf_tmpl_find(t, n, CKA_EC_PARAMS);
    enum hf_alg alg = type == CKK_EC_EDWARDS ? HF_ALG_ED25519 : HF_ALG_EC;
    rv = params ? hf_tmpl_curve_bits(params, alg, &bits) : CKR_TEMPLATE_INCOMPLETE;
    if (rv == CKR_OK)
        rv = ec_point(hf_tmpl_find(t, n, CKA_EC_POINT), alg, bits, &point, &point_len);
    if (rv != CKR_OK) return rv;
    if ((alg == HF_ALG_EC &&
         !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
                                          hf_curve_find(alg, bits)->group, 0)) ||
        !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, point_len))
        return CKR_HOST_MEMORY;
    return CKR_OK;
}

CK_RV hf_tmpl_public_der(CK_KEY_TYPE type, const CK_ATTRIBUTE *t, CK_ULONG n, unsigned char **der,
                         size_t *len)
{
    OSSL_LIB_CTX *libctx = hf_crypto_libctx();
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(libctx,
                                                   type == CKK_RSA          ? "RSA"
                                                   : type == CKK_EC_EDWARDS ? "ED25519"
                                                                            : "EC",
                                                   NULL);
    EVP_PKEY_CTX *check = NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    BIGNUM *bn[2] = {NULL, NULL};
    EVP_PKEY *pkey = NULL;
    unsigned char *p = NULL;
    int l;
    CK_RV rv = ctx && bld ? CKR_OK : CKR_HOST_MEMORY;

    if (rv == CKR_OK) rv = public_params(type, t, n, bld, bn);
    if (rv == CKR_OK && !(params = OSSL_PARAM_BLD_to_param(bld))) rv = CKR_HOST_MEMORY;
    if (rv == CKR_OK && (EVP_PKEY_fromdata_init(ctx) <= 0 ||
                         EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0))
        rv = CKR_ATTRIBUTE_VALUE_INVALID;
    if (rv == CKR_OK && (!(check = EVP_PKEY_CTX_new_from_pkey(libctx, pkey, NULL)) ||
                         EVP_PKEY_public_check(check) <= 0))
        rv = CKR_ATTRIBUTE_VALUE_INVALID;
    if (rv == CKR_OK && ((l = i2d_PUBKEY(pkey, &p)) <= 0)) rv = CKR_HOST_MEMORY;
    if (rv == CKR_OK) {
        *der = p;
        *len = (size_t)l;
    }
    BN_free(bn[0]);
    BN_free(bn[1]);
    EVP_PKEY_free(pkey);
    EVP_PKEY_CTX_free(check);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    EVP_PKEY_CTX_free(ctx);
    return rv;
}

CK_RV hf_session_key_public(struct hf_session *s, const CK_ATTRIBUTE *tmpl, CK_ULONG n,
                            CK_OBJECT_HANDLE *out)
{
    struct hf_object *obj = NULL;
    unsigned char *der = NULL;
    unsigned long usage = 0;
    size_t len = 0;
    enum hf_alg alg;
    bool present;
    CK_ULONG type = 0;
    CK_RV rv = hf_tmpl_ulong(tmpl, n, CKA_KEY_TYPE, &present, &type);

    if (rv != CKR_OK) return rv;
    if (!present) return CKR_TEMPLATE_INCOMPLETE;
    if (type != CKK_RSA && type != CKK_EC && type != CKK_EC_EDWARDS)
        return CKR_ATTRIBUTE_VALUE_INVALID;
    alg = type == CKK_RSA ? HF_ALG_RSA : type == CKK_EC ? HF_ALG_EC : HF_ALG_ED25519;
    if ((rv = usage_of(alg, tmpl, n, NULL, 0, &usage)) != CKR_OK) return rv;
    if ((rv = hf_tmpl_public_der(type, tmpl, n, &der, &len)) != CKR_OK) return rv;
    rv = object_new(HF_OBJ_PUBLIC, alg, 0, &obj);
    if (rv == CKR_OK) {
        rv = public_set(obj, der, len);
        der = NULL;
    }
    if (rv == CKR_OK) obj->key.bits = hf_pkey_bits(obj->pub);
    /* The module's policy holds for imported public keys too: no RSA under 2048 bits. */
    if (rv == CKR_OK && !hf_alg_bits_is_valid(alg, obj->key.bits)) rv = CKR_KEY_SIZE_RANGE;
    if (rv == CKR_OK) rv = attrs_set(obj, tmpl, n, NULL, 0, usage, false, false);
    free(der);
    if (rv != CKR_OK) {
        hf_object_unref(obj);
        return rv;
    }
    return hf_session_object_add(s, obj, out);
}
