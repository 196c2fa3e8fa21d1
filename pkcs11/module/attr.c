/* Attributes: every value an object shows is computed here from the key model, once, for
 * C_GetAttributeValue and for template matching in C_FindObjectsInit alike, so the two can never
 * disagree. Also C_SetAttributeValue (rename, state) and the template readers. */
#include "hf-build.h"

#include "internal.h"

#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "pkcs11/core/curve.h"

/* One computed value: small ones inline, larger ones on the heap (cleansed when secret). */
struct attr_val {
    const void *ptr;
    size_t len;
    union {
        CK_ULONG ul;
        CK_BBOOL b;
        unsigned char bytes[16];
    } u;
    unsigned char *heap;
    size_t heap_len;
    bool secret;
};

static void val_clear(struct attr_val *v)
{
    if (v->heap && v->secret)
        OPENSSL_clear_free(v->heap, v->heap_len);
    else
        free(v->heap);
    memset(v, 0, sizeof(*v));
}

static CK_RV val_ulong(struct attr_val *v, CK_ULONG x)
{
    v->u.ul = x;
    v->ptr = &v->u.ul;
    v->len = sizeof(CK_ULONG);
    return CKR_OK;
}

static CK_RV val_bool(struct attr_val *v, bool x)
{
    v->u.b = x ? CK_TRUE : CK_FALSE;
    v->ptr = &v->u.b;
    v->len = sizeof(CK_BBOOL);
    return CKR_OK;
}

static CK_RV val_bytes(struct attr_val *v, const void *p, size_t len)
{
    v->ptr = len ? p : "";
    v->len = len;
    return CKR_OK;
}

static CK_RV val_str(struct attr_val *v, const char *s)
{
    return val_bytes(v, s ? s : "", s ? strlen(s) : 0);
}

/* Takes ownership of heap (len bytes). */
static CK_RV val_heap(struct attr_val *v, unsigned char *heap, size_t len, bool secret)
{
    v->heap = heap;
    v->heap_len = len;
    v->secret = secret;
    return val_bytes(v, heap, len);
}

/* ---- computed values -------------------------------------------------------------------- */

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* CKA_ID: the version UUID's 16 raw bytes (one per version, shared by its two faces). */
static CK_RV val_uuid_bytes(struct attr_val *v, const char *uuid)
{
    size_t n = 0;

    for (const char *p = uuid; *p && n < 16; p++) {
        int hi, lo;
        if (*p == '-') continue;
        hi = hex_digit(p[0]);
        lo = p[1] ? hex_digit(p[1]) : -1;
        if (hi < 0 || lo < 0) return CKR_GENERAL_ERROR;
        v->u.bytes[n++] = (unsigned char)(hi << 4 | lo);
        p++;
    }
    if (n != 16) return CKR_GENERAL_ERROR;
    return val_bytes(v, v->u.bytes, 16);
}

static CK_RV val_labels(struct attr_val *v, const struct hf_key *key)
{
    size_t need = 1, off = 0;
    unsigned char *buf;

    for (size_t i = 0; i < key->n_labels; i++)
        need += strlen(key->labels[i].name) + strlen(key->labels[i].value) + 2;
    if (!(buf = malloc(need))) return CKR_HOST_MEMORY;
    for (size_t i = 0; i < key->n_labels; i++)
        off += (size_t)snprintf((char *)buf + off, need - off, "%s%s=%s", i ? "\n" : "",
                                key->labels[i].name, key->labels[i].value);
    return val_heap(v, buf, off, false);
}

/* The public key of obj: the loaded one, or (for the find path's views) parsed from the DER. */
static CK_RV pub_get(const struct hf_object *obj, EVP_PKEY **pub, EVP_PKEY **tmp)
{
    *tmp = NULL;
    *pub = obj->pub;
    if (*pub) return CKR_OK;
    if (!obj->version.public_der) return CKR_GENERAL_ERROR;
    if (hf_public_from_der(obj->version.public_der, obj->version.public_der_len, tmp) != CKR_OK)
        return CKR_GENERAL_ERROR;
    *pub = *tmp;
    return CKR_OK;
}

/* A big-endian integer parameter of pkey, left-padded to pad bytes (0: minimal). */
static CK_RV val_octets(struct attr_val *v, EVP_PKEY *pkey, const char *name, bool secret)
{
    unsigned char *buf = malloc(64);
    size_t len = 0;

    if (!buf) return CKR_HOST_MEMORY;
    if (!EVP_PKEY_get_octet_string_param(pkey, name, buf, 64, &len)) {
        OPENSSL_clear_free(buf, 64);
        return CKR_GENERAL_ERROR;
    }
    return val_heap(v, buf, len, secret);
}

static CK_RV val_bn(struct attr_val *v, EVP_PKEY *pkey, const char *name, size_t pad, bool secret)
{
    BIGNUM *bn = NULL;
    unsigned char *buf = NULL;
    size_t len;
    CK_RV rv = CKR_GENERAL_ERROR;

    if (!EVP_PKEY_get_bn_param(pkey, name, &bn)) goto done;
    len = (size_t)BN_num_bytes(bn);
    if (pad > len) len = pad;
    if (!(buf = malloc(len ? len : 1))) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    if (BN_bn2binpad(bn, buf, (int)len) < 0) goto done;
    rv = val_heap(v, buf, len, secret);
    buf = NULL;
done:
    if (buf) OPENSSL_clear_free(buf, len);
    BN_clear_free(bn);
    return rv;
}

static CK_RV val_pub_bn(struct attr_val *v, const struct hf_object *obj, const char *name)
{
    EVP_PKEY *pub, *tmp;
    CK_RV rv = pub_get(obj, &pub, &tmp);

    if (rv == CKR_OK) rv = val_bn(v, pub, name, 0, false);
    EVP_PKEY_free(tmp);
    return rv;
}

/* CKA_EC_POINT: the uncompressed point as a DER OCTET STRING (X9.62, as SoftHSMv2 and
 * pkcs11-tool have it). */
static CK_RV val_ec_point(struct attr_val *v, const struct hf_object *obj)
{
    unsigned char point[133], *der = NULL, *buf; /* P-521's uncompressed point: 133 bytes */
    ASN1_OCTET_STRING *os = NULL;
    size_t len = 0;
    int der_len = 0;
    EVP_PKEY *pub, *tmp;
    CK_RV rv = pub_get(obj, &pub, &tmp);

    if (rv == CKR_OK &&
        !EVP_PKEY_get_octet_string_param(pub, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof(point), &len))
        rv = CKR_GENERAL_ERROR;
    EVP_PKEY_free(tmp);
    if (rv != CKR_OK) return rv;
    /* P-521's point needs a two-byte DER length: OpenSSL's encoder, not ours. */
    if (!(os = ASN1_OCTET_STRING_new()) || !ASN1_OCTET_STRING_set(os, point, (int)len) ||
        (der_len = i2d_ASN1_OCTET_STRING(os, &der)) <= 0)
        rv = CKR_HOST_MEMORY;
    ASN1_OCTET_STRING_free(os);
    if (rv == CKR_OK && !(buf = malloc((size_t)der_len))) rv = CKR_HOST_MEMORY;
    if (rv == CKR_OK) memcpy(buf, der, (size_t)der_len);
    OPENSSL_free(der);
    return rv == CKR_OK ? val_heap(v, buf, (size_t)der_len, false) : rv;
}

static CK_RV val_ec_params(struct attr_val *v, const struct hf_object *obj)
{
    const struct hf_curve *c = hf_curve_find(obj->key.alg, obj->key.bits);

    return c ? val_bytes(v, c->oid, c->oid_len) : CKR_GENERAL_ERROR;
}

/* Key values leave only for exportable keys; reading one is a key export. */
static CK_RV val_secret(struct attr_val *v, const struct hf_object *obj, const char *param)
{
    struct hf_material *m = NULL;
    const unsigned char *raw;
    unsigned char *buf;
    size_t len = 0;
    CK_RV rv;

    if (!obj->key.exportable) return CKR_ATTRIBUTE_SENSITIVE;
    rv = hf_object_material((struct hf_object *)obj, &m);
    if (rv != CKR_OK) return rv;
    if (!param) {
        raw = hf_material_secret(m, &len);
        buf = raw ? malloc(len ? len : 1) : NULL;
        if (!buf)
            rv = raw ? CKR_HOST_MEMORY : CKR_GENERAL_ERROR;
        else {
            memcpy(buf, raw, len);
            rv = val_heap(v, buf, len, true);
        }
    } else if (obj->key.alg == HF_ALG_ED25519) {
        rv = val_octets(v, hf_material_pkey(m), param, true); /* RFC 8032's 32-byte seed */
    } else {
        size_t pad = obj->key.alg == HF_ALG_EC ? (obj->key.bits + 7) / 8 : 0;
        rv = val_bn(v, hf_material_pkey(m), param, pad, true);
    }
    hf_material_unref(m);
    return rv;
}

/* ---- which attribute applies to which face ---------------------------------------------- */

#define F_SECRET (1u << HF_OBJ_SECRET)
#define F_PRIVATE (1u << HF_OBJ_PRIVATE)
#define F_PUBLIC (1u << HF_OBJ_PUBLIC)
#define F_KEYS (F_SECRET | F_PRIVATE | F_PUBLIC)

static bool face_has(const struct hf_object *obj, unsigned faces)
{
    return (faces & (1u << obj->kind)) != 0;
}

static CK_RV val_usage(struct attr_val *v, const struct hf_object *obj, unsigned faces,
                       unsigned long bit)
{
    if (!face_has(obj, faces)) return CKR_ATTRIBUTE_TYPE_INVALID;
    /* Mask, face and KMIP state together: what an operation would be allowed to do now. */
    return val_bool(v, bit && hf_object_is_usable_for(obj, bit));
}

static CK_RV val_flag(struct attr_val *v, const struct hf_object *obj, unsigned faces, bool x)
{
    if (!face_has(obj, faces)) return CKR_ATTRIBUTE_TYPE_INVALID;
    return val_bool(v, x);
}

static bool is_imported(const struct hf_object *obj)
{
    if (obj->sobj) return !obj->sobj->is_local;
    return hf_key_label_get(&obj->key, "hf.imported") != NULL;
}

static CK_MECHANISM_TYPE keygen_mechanism(const struct hf_object *obj)
{
    if (is_imported(obj)) return CK_UNAVAILABLE_INFORMATION;
    switch (obj->key.alg) {
    case HF_ALG_AES:
        return CKM_AES_KEY_GEN;
    case HF_ALG_GENERIC:
        return CKM_GENERIC_SECRET_KEY_GEN;
    case HF_ALG_RSA:
        return CKM_RSA_PKCS_KEY_PAIR_GEN;
    case HF_ALG_EC:
        return CKM_EC_KEY_PAIR_GEN;
    case HF_ALG_ED25519:
        return CKM_EC_EDWARDS_KEY_PAIR_GEN;
    }
    return CK_UNAVAILABLE_INFORMATION;
}

/* CKA_ID: the caller's (p11.id), else the version UUID's bytes. */
static CK_RV caller_id(struct attr_val *v, const struct hf_object *obj)
{
    unsigned char *id;
    size_t len = 0;

    if (hf_key_label_get(&obj->key, HF_P11_ID) == NULL) return val_uuid_bytes(v, obj->version.uuid);
    if ((id = malloc(HF_P11_TEXT_MAX)) == NULL) return CKR_HOST_MEMORY;
    if (hf_p11_key_id(&obj->key, id, &len)) return val_heap(v, id, len, false);
    free(id);
    return val_uuid_bytes(v, obj->version.uuid);
}

/* What a session object shows in place of a managed key's values: the caller's label and id,
 * its own CKA_PRIVATE, and the sensitivity a key made or imported here has had all along (an
 * imported key was outside before: never ALWAYS_SENSITIVE, never NEVER_EXTRACTABLE). */
static CK_RV session_compute(const struct hf_object *obj, CK_ATTRIBUTE_TYPE type,
                             struct attr_val *v)
{
    const struct hf_session_attrs *sa = obj->sobj;
    bool sensitive = !obj->key.exportable;

    switch (type) {
    case CKA_TOKEN:
        return val_bool(v, false);
    case CKA_PRIVATE:
        return val_bool(v, sa->is_private);
    case CKA_LABEL:
        return val_bytes(v, sa->label, sa->label_len);
    case CKA_ID:
        return val_bytes(v, sa->id, sa->id_len);
    case CKA_MODIFIABLE:
        return val_bool(v, !sa->is_fixed);
    case CKA_COPYABLE:
        return val_bool(v, true);
    case CKA_ALWAYS_SENSITIVE:
        return val_flag(v, obj, F_SECRET | F_PRIVATE, sensitive && sa->is_sealed);
    case CKA_NEVER_EXTRACTABLE:
        return val_flag(v, obj, F_SECRET | F_PRIVATE, sensitive && sa->is_sealed);
    }
    return CKR_ATTRIBUTE_TYPE_INVALID;
}

/* Storage and key attributes common to every face. */
static CK_RV common_compute(const struct hf_object *obj, CK_ATTRIBUTE_TYPE type, struct attr_val *v)
{
    bool sensitive = !obj->key.exportable;
    CK_RV rv;

    if (obj->sobj && (rv = session_compute(obj, type, v)) != CKR_ATTRIBUTE_TYPE_INVALID) return rv;
    switch (type) {
    case CKA_CLASS:
        return val_ulong(v, obj->cls);
    case CKA_TOKEN:
        return val_bool(v, true);
    case CKA_PRIVATE:
        return val_bool(v, obj->kind != HF_OBJ_PUBLIC);
    case CKA_MODIFIABLE:
        return val_bool(v, true);
    case CKA_COPYABLE:
        return val_bool(v, false);
    case CKA_DESTROYABLE:
        return val_bool(v, true);
    case CKA_LABEL:
        return val_str(v, hf_p11_key_label(&obj->key));
    case CKA_KEY_TYPE:
        return val_ulong(v, obj->key_type);
    case CKA_ID:
        return caller_id(v, obj);
    case CKA_START_DATE:
    case CKA_END_DATE:
        return val_bytes(v, "", 0);
    case CKA_DERIVE:
        return val_usage(v, obj, F_KEYS, HF_USAGE_DERIVE);
    case CKA_LOCAL:
        return val_bool(v, !is_imported(obj));
    case CKA_KEY_GEN_MECHANISM:
        return val_ulong(v, keygen_mechanism(obj));
    case CKA_ENCRYPT:
        return val_usage(v, obj, F_SECRET | F_PUBLIC, HF_USAGE_ENCRYPT);
    case CKA_DECRYPT:
        return val_usage(v, obj, F_SECRET | F_PRIVATE, HF_USAGE_DECRYPT);
    case CKA_WRAP:
        return val_usage(v, obj, F_SECRET | F_PUBLIC, HF_USAGE_WRAP);
    case CKA_UNWRAP:
        return val_usage(v, obj, F_SECRET | F_PRIVATE, HF_USAGE_UNWRAP);
    case CKA_SIGN:
        return val_usage(v, obj, F_SECRET | F_PRIVATE, HF_USAGE_SIGN);
    case CKA_VERIFY:
        return val_usage(v, obj, F_SECRET | F_PUBLIC, HF_USAGE_VERIFY);
    case CKA_SIGN_RECOVER:
        return val_usage(v, obj, F_PRIVATE, 0);
    case CKA_VERIFY_RECOVER:
        return val_usage(v, obj, F_PUBLIC, 0);
    case CKA_SENSITIVE:
        return val_flag(v, obj, F_SECRET | F_PRIVATE, sensitive);
    case CKA_ALWAYS_SENSITIVE:
    case CKA_NEVER_EXTRACTABLE:
        /* Imported material was outside the token before: never "always" or "never". */
        return val_flag(v, obj, F_SECRET | F_PRIVATE, sensitive && !is_imported(obj));
    case CKA_EXTRACTABLE:
        return val_flag(v, obj, F_SECRET | F_PRIVATE, !sensitive);
    case CKA_WRAP_WITH_TRUSTED:
        return val_flag(v, obj, F_SECRET | F_PRIVATE, false);
    case CKA_ALWAYS_AUTHENTICATE:
        return val_flag(v, obj, F_PRIVATE, false);
    case CKA_TRUSTED:
        return val_flag(v, obj, F_SECRET | F_PUBLIC, false);
    case CKA_SUBJECT:
        if (!face_has(obj, F_PRIVATE | F_PUBLIC)) return CKR_ATTRIBUTE_TYPE_INVALID;
        return val_bytes(v, "", 0);
    case CKA_PUBLIC_KEY_INFO:
        if (!face_has(obj, F_PRIVATE | F_PUBLIC)) return CKR_ATTRIBUTE_TYPE_INVALID;
        return val_bytes(v, obj->version.public_der, obj->version.public_der_len);
    }
    return CKR_ATTRIBUTE_TYPE_INVALID;
}

static CK_RV aes_compute(const struct hf_object *obj, CK_ATTRIBUTE_TYPE type, struct attr_val *v)
{
    switch (type) {
    case CKA_VALUE:
        return val_secret(v, obj, NULL);
    case CKA_VALUE_LEN:
        return val_ulong(v, obj->key.bits / 8);
    }
    return CKR_ATTRIBUTE_TYPE_INVALID;
}

static CK_RV rsa_compute(const struct hf_object *obj, CK_ATTRIBUTE_TYPE type, struct attr_val *v)
{
    bool priv = obj->kind == HF_OBJ_PRIVATE;

    switch (type) {
    case CKA_MODULUS:
        return val_pub_bn(v, obj, OSSL_PKEY_PARAM_RSA_N);
    case CKA_MODULUS_BITS:
        return val_ulong(v, obj->key.bits);
    case CKA_PUBLIC_EXPONENT:
        return val_pub_bn(v, obj, OSSL_PKEY_PARAM_RSA_E);
    }
    if (!priv) return CKR_ATTRIBUTE_TYPE_INVALID;
    switch (type) {
    case CKA_PRIVATE_EXPONENT:
        return val_secret(v, obj, OSSL_PKEY_PARAM_RSA_D);
    case CKA_PRIME_1:
        return val_secret(v, obj, OSSL_PKEY_PARAM_RSA_FACTOR1);
    case CKA_PRIME_2:
        return val_secret(v, obj, OSSL_PKEY_PARAM_RSA_FACTOR2);
    case CKA_EXPONENT_1:
        return val_secret(v, obj, OSSL_PKEY_PARAM_RSA_EXPONENT1);
    case CKA_EXPONENT_2:
        return val_secret(v, obj, OSSL_PKEY_PARAM_RSA_EXPONENT2);
    case CKA_COEFFICIENT:
        return val_secret(v, obj, OSSL_PKEY_PARAM_RSA_COEFFICIENT1);
    }
    return CKR_ATTRIBUTE_TYPE_INVALID;
}

static CK_RV ec_compute(const struct hf_object *obj, CK_ATTRIBUTE_TYPE type, struct attr_val *v)
{
    switch (type) {
    case CKA_EC_PARAMS:
        return val_ec_params(v, obj);
    case CKA_EC_POINT:
        return val_ec_point(v, obj);
    case CKA_VALUE:
        if (obj->kind != HF_OBJ_PRIVATE) return CKR_ATTRIBUTE_TYPE_INVALID;
        return val_secret(v, obj, OSSL_PKEY_PARAM_PRIV_KEY);
    }
    return CKR_ATTRIBUTE_TYPE_INVALID;
}

/* holdfast.h's vendor attributes, on every face. */
static CK_RV vendor_compute(const struct hf_object *obj, CK_ATTRIBUTE_TYPE type, struct attr_val *v)
{
    /* A session object is no managed key: no UUID, versions, state, labels, owner or source. */
    if (obj->sobj) return CKR_ATTRIBUTE_TYPE_INVALID;
    switch (type) {
    case CKA_HF_KEY_UUID:
        return val_str(v, obj->key.uuid);
    case CKA_HF_VERSION_UUID:
        return val_str(v, obj->version.uuid);
    case CKA_HF_VERSION:
        return val_ulong(v, obj->version.version);
    case CKA_HF_STATE:
        return val_ulong(v, hf_key_version_state(&obj->key, &obj->version));
    case CKA_HF_USAGE:
        return val_ulong(v, obj->key.usage);
    case CKA_HF_IS_CURRENT:
        return val_bool(v, obj->is_current);
    case CKA_HF_LABELS:
        return val_labels(v, &obj->key);
    case CKA_HF_OWNER:
        return val_str(v, obj->key.owner);
    case CKA_HF_SOURCE:
        return val_str(v, obj->key.source);
    case CKA_HF_CREATED:
        return val_ulong(v, (CK_ULONG)obj->version.created);
    }
    return CKR_ATTRIBUTE_TYPE_INVALID;
}

static CK_RV attr_compute(const struct hf_object *obj, CK_ATTRIBUTE_TYPE type, struct attr_val *v)
{
    CK_RV rv = common_compute(obj, type, v);

    if (rv != CKR_ATTRIBUTE_TYPE_INVALID) return rv;
    if ((rv = vendor_compute(obj, type, v)) != CKR_ATTRIBUTE_TYPE_INVALID) return rv;
    switch (obj->key.alg) {
    case HF_ALG_AES:
    case HF_ALG_GENERIC: /* CKA_VALUE and CKA_VALUE_LEN, as AES */
        return aes_compute(obj, type, v);
    case HF_ALG_RSA:
        return rsa_compute(obj, type, v);
    case HF_ALG_EC:
    case HF_ALG_ED25519: /* CKA_EC_PARAMS, CKA_EC_POINT and CKA_VALUE, as EC (PKCS#11 3.0 2.3.5) */
        return ec_compute(obj, type, v);
    }
    return CKR_ATTRIBUTE_TYPE_INVALID;
}

/* Attributes that hold key material: never computed for a match, cleansed on the way out. */
static bool type_is_secret(CK_ATTRIBUTE_TYPE type)
{
    switch (type) {
    case CKA_VALUE:
    case CKA_PRIVATE_EXPONENT:
    case CKA_PRIME_1:
    case CKA_PRIME_2:
    case CKA_EXPONENT_1:
    case CKA_EXPONENT_2:
    case CKA_COEFFICIENT:
        return true;
    }
    return false;
}

/* ---- for the entry points --------------------------------------------------------------- */

CK_RV hf_object_attr_get(const struct hf_object *obj, CK_ATTRIBUTE *attr, bool *secret)
{
    struct attr_val v = {0};
    CK_RV rv = attr_compute(obj, attr->type, &v);

    if (rv == CKR_ATTRIBUTE_SENSITIVE || rv == CKR_ATTRIBUTE_TYPE_INVALID) {
        attr->ulValueLen = CK_UNAVAILABLE_INFORMATION;
        return rv;
    }
    if (rv != CKR_OK) return rv;
    if (!attr->pValue) {
        attr->ulValueLen = v.len;
    } else if (attr->ulValueLen < v.len) {
        attr->ulValueLen = CK_UNAVAILABLE_INFORMATION;
        rv = CKR_BUFFER_TOO_SMALL;
    } else {
        memcpy(attr->pValue, v.ptr, v.len);
        attr->ulValueLen = v.len;
        if (v.secret) *secret = true;
    }
    val_clear(&v);
    return rv;
}

bool hf_object_matches(const struct hf_object *obj, const CK_ATTRIBUTE *tmpl, CK_ULONG n)
{
    for (CK_ULONG i = 0; i < n; i++) {
        struct attr_val v = {0};
        bool same;

        /* Searching by a key's secret value would make it an oracle for that value. */
        if (type_is_secret(tmpl[i].type)) return false;
        if (attr_compute(obj, tmpl[i].type, &v) != CKR_OK) return false;
        same = v.len == tmpl[i].ulValueLen &&
               (v.len == 0 || memcmp(v.ptr, tmpl[i].pValue, v.len) == 0);
        val_clear(&v);
        if (!same) return false;
    }
    return true;
}

/* ---- templates -------------------------------------------------------------------------- */

CK_RV hf_tmpl_check(const CK_ATTRIBUTE *tmpl, CK_ULONG n)
{
    if (n && !tmpl) return CKR_ARGUMENTS_BAD;
    for (CK_ULONG i = 0; i < n; i++)
        if (!tmpl[i].pValue && tmpl[i].ulValueLen) return CKR_ARGUMENTS_BAD;
    return CKR_OK;
}

const CK_ATTRIBUTE *hf_tmpl_find(const CK_ATTRIBUTE *tmpl, CK_ULONG n, CK_ATTRIBUTE_TYPE type)
{
    for (CK_ULONG i = 0; tmpl && i < n; i++)
        if (tmpl[i].type == type) return &tmpl[i];
    return NULL;
}

CK_RV hf_tmpl_bool(const CK_ATTRIBUTE *tmpl, CK_ULONG n, CK_ATTRIBUTE_TYPE type, bool *present,
                   bool *val)
{
    const CK_ATTRIBUTE *a = hf_tmpl_find(tmpl, n, type);

    *present = a != NULL;
    if (!a) return CKR_OK;
    if (a->ulValueLen != sizeof(CK_BBOOL) || !a->pValue) return CKR_ATTRIBUTE_VALUE_INVALID;
    *val = *(const CK_BBOOL *)a->pValue != CK_FALSE;
    return CKR_OK;
}

CK_RV hf_tmpl_ulong(const CK_ATTRIBUTE *tmpl, CK_ULONG n, CK_ATTRIBUTE_TYPE type, bool *present,
                    CK_ULONG *val)
{
    const CK_ATTRIBUTE *a = hf_tmpl_find(tmpl, n, type);

    *present = a != NULL;
    if (!a) return CKR_OK;
    if (a->ulValueLen != sizeof(CK_ULONG) || !a->pValue) return CKR_ATTRIBUTE_VALUE_INVALID;
    memcpy(val, a->pValue, sizeof(CK_ULONG));
    return CKR_OK;
}

/* A pair's two templates are read one after the other (public first, then private). */
CK_RV hf_tmpl_usage(const CK_ATTRIBUTE *t, CK_ULONG n, unsigned long *usage)
{
    static const struct {
        CK_ATTRIBUTE_TYPE type;
        unsigned long bit;
    } map[] = {
        {CKA_ENCRYPT, HF_USAGE_ENCRYPT}, {CKA_DECRYPT, HF_USAGE_DECRYPT},
        {CKA_WRAP, HF_USAGE_WRAP},       {CKA_UNWRAP, HF_USAGE_UNWRAP},
        {CKA_SIGN, HF_USAGE_SIGN},       {CKA_VERIFY, HF_USAGE_VERIFY},
        {CKA_DERIVE, HF_USAGE_DERIVE},
    };

    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        bool present, val = false;
        CK_RV rv = hf_tmpl_bool(t, n, map[i].type, &present, &val);
        if (rv != CKR_OK) return rv;
        if (present && val) *usage |= map[i].bit;
        if (present && !val) *usage &= ~map[i].bit;
    }
    return CKR_OK;
}

/* Our key model has one switch, exportable, for both CKA_EXTRACTABLE and !CKA_SENSITIVE: a key
 * is exportable only when asked to be extractable and not asked to be sensitive. */
CK_RV hf_tmpl_exportable(const CK_ATTRIBUTE *t, CK_ULONG n, bool *exportable)
{
    bool has_ext, ext = false, has_sens, sens = false;
    CK_RV rv;

    if ((rv = hf_tmpl_bool(t, n, CKA_EXTRACTABLE, &has_ext, &ext)) != CKR_OK) return rv;
    if ((rv = hf_tmpl_bool(t, n, CKA_SENSITIVE, &has_sens, &sens)) != CKR_OK) return rv;
    *exportable = has_ext && ext && !(has_sens && sens);
    return CKR_OK;
}

/* CKA_EC_PARAMS: the DER namedCurve OID, or (PKCS#11 3.0) a DER PrintableString curve name. */
CK_RV hf_tmpl_curve_bits(const CK_ATTRIBUTE *a, enum hf_alg alg, unsigned *bits)
{
    const struct hf_curve *c = hf_curve_from_params(a->pValue, a->ulValueLen);

    if (!c || c->alg != alg) return CKR_ATTRIBUTE_VALUE_INVALID;
    *bits = c->bits;
    return CKR_OK;
}

CK_RV hf_tmpl_ec_bits(const CK_ATTRIBUTE *a, unsigned *bits)
{
    return hf_tmpl_curve_bits(a, HF_ALG_EC, bits);
}

/* ---- C_GetAttributeValue ---------------------------------------------------------------- */

/* An export whose audit record failed must not leave: wipe every key value copied out. */
static void secrets_withdraw(CK_ATTRIBUTE *tmpl, CK_ULONG n)
{
    for (CK_ULONG i = 0; i < n; i++) {
        if (!type_is_secret(tmpl[i].type) || !tmpl[i].pValue) continue;
        if (tmpl[i].ulValueLen != CK_UNAVAILABLE_INFORMATION)
            OPENSSL_cleanse(tmpl[i].pValue, tmpl[i].ulValueLen);
        tmpl[i].ulValueLen = CK_UNAVAILABLE_INFORMATION;
    }
}

/* Section 5.7: every attribute is processed; the result names one of the problems met. */
static CK_RV attrs_get(struct hf_session *s, struct hf_object *obj, CK_ATTRIBUTE *tmpl, CK_ULONG n,
                       uint64_t started)
{
    bool secret = false;
    CK_RV rv = CKR_OK, arv;

    for (CK_ULONG i = 0; i < n; i++) {
        CK_RV r = hf_object_attr_get(obj, &tmpl[i], &secret);
        if (r == CKR_OK) continue;
        if (r != CKR_ATTRIBUTE_SENSITIVE && r != CKR_ATTRIBUTE_TYPE_INVALID &&
            r != CKR_BUFFER_TOO_SMALL) {
            tmpl[i].ulValueLen = CK_UNAVAILABLE_INFORMATION;
            rv = r;
            break;
        }
        if (rv == CKR_OK || r == CKR_ATTRIBUTE_SENSITIVE) rv = r;
    }
    if (!secret) return rv;
    arv = hf_module_audit(s, "key.export", obj, "C_GetAttributeValue", CKR_OK, started);
    if (arv != CKR_OK) {
        secrets_withdraw(tmpl, n);
        return arv;
    }
    return rv;
}

HF_EXPORT CK_RV C_GetAttributeValue(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject,
                                    CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount)
{
    uint64_t started = hf_monotonic_us();
    struct hf_object *obj = NULL;
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (!pTemplate && ulCount)
        rv = CKR_ARGUMENTS_BAD;
    else if (hf_dobj_is_handle(hObject))
        rv = hf_module_check() == CKR_OK ? hf_dobj_attrs_get(hObject, pTemplate, ulCount)
                                         : CKR_CRYPTOKI_NOT_INITIALIZED;
    else
        rv = hf_object_get(s, hObject, &obj);
    if (rv == CKR_OK && obj) rv = attrs_get(s, obj, pTemplate, ulCount, started);
    hf_object_unref(obj);
    hf_session_put(s);
    return rv;
}

/* ---- C_SetAttributeValue ---------------------------------------------------------------- */

struct attr_change {
    char *name;  /* CKA_LABEL that is a key name: the key's new name */
    char *label; /* CKA_LABEL that is not: the key's new p11.label */
    char *id;    /* CKA_ID: the new p11.id (hex) */
    bool has_state;
    CK_ULONG state; /* CKA_HF_STATE */
};

static void change_clear(struct attr_change *c)
{
    free(c->name);
    free(c->label);
    free(c->id);
}

static CK_RV change_label(struct attr_change *c, const CK_ATTRIBUTE *a)
{
    char *text;

    if (!hf_p11_label_is_valid(a->pValue, a->ulValueLen)) return CKR_ATTRIBUTE_VALUE_INVALID;
    if (!(text = strndup(a->pValue, a->ulValueLen))) return CKR_HOST_MEMORY;
    free(c->name);
    free(c->label);
    c->name = c->label = NULL;
    *(hf_key_name_is_valid(text) ? &c->name : &c->label) = text;
    return CKR_OK;
}

static CK_RV change_id(struct attr_change *c, const CK_ATTRIBUTE *a)
{
    if (a->ulValueLen > HF_P11_TEXT_MAX || (a->ulValueLen && !a->pValue))
        return CKR_ATTRIBUTE_VALUE_INVALID;
    free(c->id);
    if (!(c->id = malloc(2 * a->ulValueLen + 1))) return CKR_HOST_MEMORY;
    hf_p11_hex(a->pValue, a->ulValueLen, c->id);
    return CKR_OK;
}

/* Only the key's label (its name or p11.label), its CKA_ID (p11.id) and its KMIP state can
 * change; the rest of an object is what the key is. */
static CK_RV change_parse(const struct hf_object *obj, const CK_ATTRIBUTE *tmpl, CK_ULONG n,
                          struct attr_change *c)
{
    for (CK_ULONG i = 0; i < n; i++) {
        struct attr_val v = {0};
        CK_RV rv;

        switch (tmpl[i].type) {
        case CKA_LABEL:
            rv = change_label(c, &tmpl[i]);
            break;
        case CKA_ID:
            rv = change_id(c, &tmpl[i]);
            break;
        case CKA_HF_STATE:
            if (tmpl[i].ulValueLen != sizeof(CK_ULONG) || !tmpl[i].pValue)
                return CKR_ATTRIBUTE_VALUE_INVALID;
            memcpy(&c->state, tmpl[i].pValue, sizeof(CK_ULONG));
            c->has_state = true;
            rv = CKR_OK;
            break;
        default:
            rv = type_is_secret(tmpl[i].type) ? CKR_OK : attr_compute(obj, tmpl[i].type, &v);
            val_clear(&v);
            if (rv == CKR_OK || rv == CKR_ATTRIBUTE_SENSITIVE) rv = CKR_ATTRIBUTE_READ_ONLY;
        }
        if (rv != CKR_OK) return rv;
    }
    return CKR_OK;
}

/* A rename is a store update of the key's name (blobs bind the UUID, so nothing else moves). */
static CK_RV key_rename(struct hf_session *s, const struct hf_object *obj, const char *name,
                        uint64_t started)
{
    struct hf_store *store = hf_core_store(hf_mod.core);
    struct hf_key key = {0};
    char detail[HF_NAME_MAX + 8];
    CK_RV rv, arv;

    rv = hf_store_key_get(store, obj->key.uuid, &key);
    if (rv == CKR_OK && (key.state == HF_STATE_DESTROYED)) rv = CKR_OBJECT_HANDLE_INVALID;
    if (rv == CKR_OK) {
        char *old = key.name;
        key.name = (char *)name;
        key.updated = hf_now();
        rv = hf_store_key_update(store, &key);
        key.name = old;
    }
    snprintf(detail, sizeof(detail), "name=%s", name);
    arv = hf_module_audit(s, "key.rename", obj, detail, rv, started);
    hf_key_clear(&key);
    return rv == CKR_OK ? arv : rv;
}

static CK_RV change_apply(struct hf_session *s, const struct hf_object *obj,
                          const struct attr_change *c, uint64_t started)
{
    struct hf_actor who;
    char caller[48];
    CK_RV rv = CKR_OK;

    hf_module_actor(s, &who, caller, sizeof(caller));
    if (c->has_state && c->state != obj->key.state)
        rv = hf_core_key_set_state(hf_mod.core, obj->key.uuid, c->state, &who);
    if (rv == CKR_OK && c->name && strcmp(c->name, obj->key.name) != 0)
        rv = key_rename(s, obj, c->name, started);
    /* A label that is a name now replaces a p11.label, one that is not becomes it. */
    if (rv == CKR_OK && (c->label || (c->name && hf_key_label_get(&obj->key, HF_P11_LABEL))))
        rv = hf_core_key_label_set(hf_mod.core, obj->key.uuid, HF_P11_LABEL, c->label, &who);
    if (rv == CKR_OK && c->id)
        rv = hf_core_key_label_set(hf_mod.core, obj->key.uuid, HF_P11_ID, c->id, &who);
    hf_objects_changed();
    return rv;
}

/* A session object's label and id are the caller's to change; the rest is what the key is. */
static CK_RV session_change(const struct hf_object *obj, const CK_ATTRIBUTE *tmpl, CK_ULONG n)
{
    const CK_ATTRIBUTE *label = NULL, *id = NULL;

    if (obj->sobj->is_fixed) return CKR_ACTION_PROHIBITED; /* 3.0: CKA_MODIFIABLE FALSE */
    for (CK_ULONG i = 0; i < n; i++) {
        struct attr_val v = {0};
        CK_RV rv = CKR_OK;

        if (tmpl[i].type == CKA_LABEL)
            label = &tmpl[i];
        else if (tmpl[i].type == CKA_ID)
            id = &tmpl[i];
        else
            rv = type_is_secret(tmpl[i].type) ? CKR_OK : attr_compute(obj, tmpl[i].type, &v);
        val_clear(&v);
        if (rv == CKR_OK && tmpl[i].type != CKA_LABEL && tmpl[i].type != CKA_ID)
            rv = CKR_ATTRIBUTE_READ_ONLY;
        if (rv == CKR_ATTRIBUTE_SENSITIVE) rv = CKR_ATTRIBUTE_READ_ONLY;
        if (rv != CKR_OK) return rv;
    }
    return hf_session_object_set(obj, label, id);
}

HF_EXPORT CK_RV C_SetAttributeValue(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject,
                                    CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount)
{
    uint64_t started = hf_monotonic_us();
    struct attr_change change = {0};
    struct hf_object *obj = NULL;
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if ((rv = hf_tmpl_check(pTemplate, ulCount)) != CKR_OK) goto done;
    if (hf_dobj_is_handle(hObject)) {
        rv = hf_dobj_attrs_set(s, hObject, pTemplate, ulCount);
        goto done;
    }
    if ((rv = hf_object_get(s, hObject, &obj)) != CKR_OK) goto done;
    if (obj->sobj) {
        /* Session objects change in any session (PKCS#11 2.40 section 4.4's table). */
        rv = session_change(obj, pTemplate, ulCount);
        goto done;
    }
    if ((rv = hf_session_check_write(s)) != CKR_OK) goto done;
    if ((rv = change_parse(obj, pTemplate, ulCount, &change)) != CKR_OK) goto done;
    rv = change_apply(s, obj, &change, started);
done:
    hf_session_clear_ctx(s);
    change_clear(&change);
    hf_object_unref(obj);
    hf_session_put(s);
    return rv;
}
