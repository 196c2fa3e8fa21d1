/* New keys from templates: C_GenerateKey, C_GenerateKeyPair and C_CreateObject (import), and
 * hf_keygen_import for C_UnwrapKey. A template becomes a struct hf_key_spec (name, usage,
 * exportability) and the core creates the key, writing its audit record. A template with
 * CKA_TOKEN FALSE makes session objects instead (session-keys.c): the same checks of mechanism,
 * size and template, material kept in memory only. */
#include "hf-build.h"

#include "internal.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pkcs11/core/crypto.h"
#include "pkcs11/core/curve.h"
#include "pkcs11/core/secmem.h"

/* A spec and the storage its strings point into. */
struct spec_buf {
    struct hf_key_spec spec;
    char name[HF_NAME_MAX + 1];
    char label[HF_P11_TEXT_MAX + 1];      /* a CKA_LABEL that is no key name */
    char id_hex[2 * HF_P11_TEXT_MAX + 1]; /* the caller's CKA_ID */
    struct hf_label labels[3];            /* hf.imported, p11.label, p11.id */
};

static void spec_label_add(struct spec_buf *sb, const char *name, const char *value)
{
    sb->labels[sb->spec.n_labels].name = (char *)name;
    sb->labels[sb->spec.n_labels].value = (char *)value;
    sb->spec.labels = sb->labels;
    sb->spec.n_labels++;
}

/* ---- templates -> spec ------------------------------------------------------------------ */

static bool name_is_taken(const char *name)
{
    struct hf_key key = {0};
    bool taken = hf_store_key_get(hf_core_store(hf_mod.core), name, &key) == CKR_OK;

    hf_key_clear(&key);
    return taken;
}

static CK_RV tmpl_label(const CK_ATTRIBUTE *t, CK_ULONG n, char *out, bool *present)
{
    const CK_ATTRIBUTE *a = hf_tmpl_find(t, n, CKA_LABEL);

    *present = a != NULL;
    if (!a) return CKR_OK;
    if (!hf_p11_label_is_valid(a->pValue, a->ulValueLen)) return CKR_ATTRIBUTE_VALUE_INVALID;
    memcpy(out, a->pValue, a->ulValueLen);
    out[a->ulValueLen] = '\0';
    return CKR_OK;
}

/* CKA_LABEL is the key's name when it can be one ("web-tls", not taken); any other label ("RSA
 * Pkey sigver Test", or a second key labelled "web-tls", as PKCS#11 allows) is kept as the key's
 * p11.label, and the key is named "key-<8 hex digits>", as it is without a label. Both
 * templates of a pair may carry it, but only once. */
static CK_RV spec_name(const CK_ATTRIBUTE *pub, CK_ULONG pub_n, const CK_ATTRIBUTE *priv,
                       CK_ULONG priv_n, struct spec_buf *sb)
{
    char other[HF_P11_TEXT_MAX + 1];
    bool has_priv, has_pub;
    unsigned char rnd[4];
    CK_RV rv;

    if ((rv = tmpl_label(priv, priv_n, sb->label, &has_priv)) != CKR_OK) return rv;
    if ((rv = tmpl_label(pub, pub_n, other, &has_pub)) != CKR_OK) return rv;
    if (has_priv && has_pub && strcmp(sb->label, other) != 0) return CKR_TEMPLATE_INCONSISTENT;
    if (!has_priv && has_pub) memcpy(sb->label, other, sizeof(other));
    if ((has_priv || has_pub) && hf_key_name_is_valid(sb->label) && !name_is_taken(sb->label)) {
        memcpy(sb->name, sb->label, strlen(sb->label) + 1);
    } else {
        if ((rv = hf_random(rnd, sizeof(rnd))) != CKR_OK) return rv;
        snprintf(sb->name, sizeof(sb->name), "key-%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
                 rnd[3]);
        if (has_priv || has_pub) spec_label_add(sb, HF_P11_LABEL, sb->label);
    }
    sb->spec.name = sb->name;
    return CKR_OK;
}

/* The caller's CKA_ID, kept as the key's p11.id (hex); both templates of a pair may carry it,
 * but only once. Without one, CKA_ID is the version's UUID. */
static CK_RV spec_id(const CK_ATTRIBUTE *pub, CK_ULONG pub_n, const CK_ATTRIBUTE *priv,
                     CK_ULONG priv_n, struct spec_buf *sb)
{
    const CK_ATTRIBUTE *a = hf_tmpl_find(priv, priv_n, CKA_ID);
    const CK_ATTRIBUTE *b = pub ? hf_tmpl_find(pub, pub_n, CKA_ID) : NULL;

    if (a && b &&
        (a->ulValueLen != b->ulValueLen ||
         (a->ulValueLen && memcmp(a->pValue, b->pValue, a->ulValueLen) != 0)))
        return CKR_TEMPLATE_INCONSISTENT;
    if (!a) a = b;
    if (!a) return CKR_OK;
    if (a->ulValueLen > HF_P11_TEXT_MAX || (a->ulValueLen && !a->pValue))
        return CKR_ATTRIBUTE_VALUE_INVALID;
    hf_p11_hex(a->pValue, a->ulValueLen, sb->id_hex);
    spec_label_add(sb, HF_P11_ID, sb->id_hex);
    return CKR_OK;
}

CK_RV hf_tmpl_is_session(const CK_ATTRIBUTE *tmpl, CK_ULONG n, bool *session)
{
    bool present, token = true;
    CK_RV rv = hf_tmpl_bool(tmpl, n, CKA_TOKEN, &present, &token);

    *session = rv == CKR_OK && present && !token;
    return rv;
}

/* A pair is made of session objects when a template asks for it and neither asks for a token
 * object: a token key always has both faces in the store, so half a pair cannot be one. */
static CK_RV pair_is_session(const CK_ATTRIBUTE *pub, CK_ULONG pub_n, const CK_ATTRIBUTE *priv,
                             CK_ULONG priv_n, bool *session)
{
    bool pub_present, pub_token = true, priv_present, priv_token = true;
    CK_RV rv = hf_tmpl_bool(pub, pub_n, CKA_TOKEN, &pub_present, &pub_token);

    if (rv == CKR_OK) rv = hf_tmpl_bool(priv, priv_n, CKA_TOKEN, &priv_present, &priv_token);
    if (rv != CKR_OK) return rv;
    *session = (pub_present && !pub_token) || (priv_present && !priv_token);
    if (*session && ((pub_present && pub_token) || (priv_present && priv_token)))
        return CKR_TEMPLATE_INCONSISTENT;
    return CKR_OK;
}

/* The token path's guard: a session template never gets this far. */
static CK_RV tmpl_token_check(const CK_ATTRIBUTE *t, CK_ULONG n)
{
    bool session;
    CK_RV rv = hf_tmpl_is_session(t, n, &session);

    return rv != CKR_OK ? rv : session ? CKR_TEMPLATE_INCONSISTENT : CKR_OK;
}

static CK_KEY_TYPE alg_key_type(enum hf_alg alg)
{
    return alg == HF_ALG_AES       ? CKK_AES
           : alg == HF_ALG_GENERIC ? CKK_GENERIC_SECRET
           : alg == HF_ALG_RSA     ? CKK_RSA
           : alg == HF_ALG_ED25519 ? CKK_EC_EDWARDS
                                   : CKK_EC;
}

/* CKA_CLASS and CKA_KEY_TYPE, when present, must be what the mechanism makes. */
static CK_RV tmpl_kind_check(const CK_ATTRIBUTE *t, CK_ULONG n, CK_OBJECT_CLASS cls,
                             CK_KEY_TYPE type)
{
    bool present;
    CK_ULONG v = 0;
    CK_RV rv;

    if ((rv = hf_tmpl_ulong(t, n, CKA_CLASS, &present, &v)) != CKR_OK) return rv;
    if (present && v != cls) return CKR_TEMPLATE_INCONSISTENT;
    if ((rv = hf_tmpl_ulong(t, n, CKA_KEY_TYPE, &present, &v)) != CKR_OK) return rv;
    if (present && v != type) return CKR_TEMPLATE_INCONSISTENT;
    return CKR_OK;
}

/* pub: the public template of a pair (NULL for a secret key); priv: the secret or private
 * one, which also decides exportability. */
static CK_RV spec_parse(const CK_ATTRIBUTE *pub, CK_ULONG pub_n, const CK_ATTRIBUTE *priv,
                        CK_ULONG priv_n, enum hf_alg alg, unsigned bits, struct spec_buf *sb)
{
    CK_KEY_TYPE type = alg_key_type(alg);
    CK_RV rv;

    memset(sb, 0, sizeof(*sb));
    sb->spec.alg = alg;
    sb->spec.bits = bits;
    sb->spec.usage = hf_usage_default(alg);
    if (pub && (rv = tmpl_kind_check(pub, pub_n, CKO_PUBLIC_KEY, type)) != CKR_OK) return rv;
    if (pub && (rv = tmpl_token_check(pub, pub_n)) != CKR_OK) return rv;
    rv = tmpl_kind_check(priv, priv_n, hf_alg_is_secret(alg) ? CKO_SECRET_KEY : CKO_PRIVATE_KEY,
                         type);
    if (rv == CKR_OK) rv = tmpl_token_check(priv, priv_n);
    if (rv != CKR_OK) return rv;
    if ((rv = spec_name(pub, pub_n, priv, priv_n, sb)) != CKR_OK) return rv;
    if ((rv = spec_id(pub, pub_n, priv, priv_n, sb)) != CKR_OK) return rv;
    if ((rv = hf_tmpl_usage(pub, pub_n, &sb->spec.usage)) != CKR_OK) return rv;
    if ((rv = hf_tmpl_usage(priv, priv_n, &sb->spec.usage)) != CKR_OK) return rv;
    /* The core reads 0 as "the default": a template that clears every use is refused. */
    if (sb->spec.usage == 0) return CKR_TEMPLATE_INCONSISTENT;
    return hf_tmpl_exportable(priv, priv_n, &sb->spec.exportable);
}

/* ---- creation --------------------------------------------------------------------------- */

/* Session objects from material: generated (bytes NULL) or imported. pub NULL with a secret key
 * or a lone private key. */
static CK_RV session_make(struct hf_session *s, enum hf_alg alg, unsigned bits,
                          const unsigned char *bytes, size_t len, const CK_ATTRIBUTE *pub,
                          CK_ULONG pub_n, const CK_ATTRIBUTE *priv, CK_ULONG priv_n,
                          CK_OBJECT_HANDLE *pub_out, CK_OBJECT_HANDLE *priv_out)
{
    CK_KEY_TYPE type = alg_key_type(alg);
    struct hf_material *m = NULL;
    bool present, is_private = true;
    CK_RV rv = hf_tmpl_bool(priv, priv_n, CKA_PRIVATE, &present, &is_private);

    /* Before an RSA key is made for nothing; the table checks again as it takes the object. */
    if (rv == CKR_OK && is_private && atomic_load(&hf_mod.login) != HF_LOGIN_USER)
        rv = CKR_USER_NOT_LOGGED_IN;
    if (rv == CKR_OK && pub) rv = tmpl_kind_check(pub, pub_n, CKO_PUBLIC_KEY, type);
    if (rv == CKR_OK)
        rv = tmpl_kind_check(priv, priv_n, hf_alg_is_secret(alg) ? CKO_SECRET_KEY : CKO_PRIVATE_KEY,
                             type);
    if (rv == CKR_OK)
        rv = bytes ? hf_material_from_bytes(alg, bits, bytes, len, &m)
                   : hf_material_generate(alg, bits, &m);
    if (rv == CKR_OK && hf_alg_is_secret(alg))
        rv = hf_session_key_secret(s, m, !bytes, priv, priv_n, priv_out);
    else if (rv == CKR_OK)
        rv = hf_session_key_pair(s, m, !bytes, pub, pub_n, priv, priv_n, pub_out, priv_out);
    hf_material_unref(m);
    return rv;
}

/* Creates (bytes NULL) or imports the key; *v is its first version. */
static CK_RV key_make(struct hf_session *s, const struct spec_buf *sb, const unsigned char *bytes,
                      size_t len, struct hf_key_version *v)
{
    struct hf_actor who;
    char caller[48];
    CK_RV rv;

    hf_module_actor(s, &who, caller, sizeof(caller));
    if (bytes)
        rv = hf_core_key_import(hf_mod.core, &sb->spec, bytes, len, &who, NULL, v);
    else
        rv = hf_core_key_create(hf_mod.core, &sb->spec, &who, NULL, v);
    hf_session_clear_ctx(s);
    return rv;
}

CK_RV hf_keygen_secret(struct hf_session *s, const CK_MECHANISM *mech, const CK_ATTRIBUTE *tmpl,
                       CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    struct hf_key_version v = {0};
    struct spec_buf sb;
    bool present, session;
    CK_ULONG len = 0;
    enum hf_alg alg;
    CK_RV rv;

    if (mech->mechanism != CKM_AES_KEY_GEN && mech->mechanism != CKM_GENERIC_SECRET_KEY_GEN)
        return CKR_MECHANISM_INVALID;
    alg = mech->mechanism == CKM_AES_KEY_GEN ? HF_ALG_AES : HF_ALG_GENERIC;
    if (mech->pParameter || mech->ulParameterLen) return CKR_MECHANISM_PARAM_INVALID;
    if ((rv = hf_tmpl_ulong(tmpl, n, CKA_VALUE_LEN, &present, &len)) != CKR_OK) return rv;
    if (!present) return CKR_TEMPLATE_INCOMPLETE;
    if (len > 512 || !hf_alg_bits_is_valid(alg, (unsigned)len * 8))
        return CKR_ATTRIBUTE_VALUE_INVALID;
    if ((rv = hf_tmpl_is_session(tmpl, n, &session)) != CKR_OK) return rv;
    if (session)
        return session_make(s, alg, (unsigned)len * 8, NULL, 0, NULL, 0, tmpl, n, NULL, out);
    if ((rv = spec_parse(NULL, 0, tmpl, n, alg, (unsigned)len * 8, &sb)) != CKR_OK) return rv;
    rv = key_make(s, &sb, NULL, 0, &v);
    if (rv == CKR_OK) *out = HF_HANDLE(v.id, HF_OBJ_SECRET);
    hf_key_version_clear(&v);
    return rv;
}

/* CKA_PUBLIC_EXPONENT: 65537 only (leading zero bytes allowed). */
static CK_RV rsa_exponent_check(const CK_ATTRIBUTE *t, CK_ULONG n)
{
    static const unsigned char f4[] = {0x01, 0x00, 0x01};
    const CK_ATTRIBUTE *a = hf_tmpl_find(t, n, CKA_PUBLIC_EXPONENT);
    const unsigned char *p;
    CK_ULONG len;

    if (!a) return CKR_OK;
    p = a->pValue;
    len = a->ulValueLen;
    while (len && p && *p == 0)
        p++, len--;
    if (len != sizeof(f4) || memcmp(p, f4, sizeof(f4)) != 0) return CKR_ATTRIBUTE_VALUE_INVALID;
    return CKR_OK;
}

static CK_RV rsa_bits(const CK_ATTRIBUTE *t, CK_ULONG n, unsigned *bits)
{
    bool present;
    CK_ULONG b = 0;
    CK_RV rv = hf_tmpl_ulong(t, n, CKA_MODULUS_BITS, &present, &b);

    if (rv != CKR_OK) return rv;
    if (!present) return CKR_TEMPLATE_INCOMPLETE;
    if (b != 2048 && b != 3072 && b != 4096) return CKR_ATTRIBUTE_VALUE_INVALID;
    *bits = (unsigned)b;
    return rsa_exponent_check(t, n);
}

static CK_RV ec_bits(const CK_ATTRIBUTE *t, CK_ULONG n, enum hf_alg alg, unsigned *bits)
{
    const CK_ATTRIBUTE *a = hf_tmpl_find(t, n, CKA_EC_PARAMS);

    return a ? hf_tmpl_curve_bits(a, alg, bits) : CKR_TEMPLATE_INCOMPLETE;
}

CK_RV hf_keygen_pair(struct hf_session *s, const CK_MECHANISM *mech, const CK_ATTRIBUTE *pub_tmpl,
                     CK_ULONG pub_n, const CK_ATTRIBUTE *priv_tmpl, CK_ULONG priv_n,
                     CK_OBJECT_HANDLE *pub, CK_OBJECT_HANDLE *priv)
{
    struct hf_key_version v = {0};
    struct spec_buf sb;
    enum hf_alg alg;
    unsigned bits = 0;
    bool session;
    CK_RV rv;

    switch (mech->mechanism) {
    case CKM_RSA_PKCS_KEY_PAIR_GEN:
        alg = HF_ALG_RSA;
        rv = rsa_bits(pub_tmpl, pub_n, &bits);
        break;
    case CKM_EC_KEY_PAIR_GEN:
        alg = HF_ALG_EC;
        rv = ec_bits(pub_tmpl, pub_n, alg, &bits);
        break;
    case CKM_EC_EDWARDS_KEY_PAIR_GEN:
        alg = HF_ALG_ED25519;
        rv = ec_bits(pub_tmpl, pub_n, alg, &bits);
        break;
    default:
        return CKR_MECHANISM_INVALID;
    }
    if (rv != CKR_OK) return rv;
    if (mech->pParameter || mech->ulParameterLen) return CKR_MECHANISM_PARAM_INVALID;
    if ((rv = pair_is_session(pub_tmpl, pub_n, priv_tmpl, priv_n, &session)) != CKR_OK) return rv;
    if (session)
        return session_make(s, alg, bits, NULL, 0, pub_tmpl, pub_n, priv_tmpl, priv_n, pub, priv);
    if ((rv = spec_parse(pub_tmpl, pub_n, priv_tmpl, priv_n, alg, bits, &sb)) != CKR_OK) return rv;
    rv = key_make(s, &sb, NULL, 0, &v);
    if (rv == CKR_OK) {
        *pub = HF_HANDLE(v.id, HF_OBJ_PUBLIC);
        *priv = HF_HANDLE(v.id, HF_OBJ_PRIVATE);
    }
    hf_key_version_clear(&v);
    return rv;
}

CK_RV hf_keygen_import(struct hf_session *s, enum hf_alg alg, unsigned bits,
                       const unsigned char *bytes, size_t len, const CK_ATTRIBUTE *tmpl, CK_ULONG n,
                       CK_OBJECT_HANDLE *out)
{
    struct hf_key_version v = {0};
    struct spec_buf sb;
    bool session;
    CK_RV rv;

    hf_return_val_if_fail(s && bytes && out, CKR_ARGUMENTS_BAD);
    if ((rv = hf_tmpl_check(tmpl, n)) != CKR_OK) return rv;
    if ((rv = hf_tmpl_is_session(tmpl, n, &session)) != CKR_OK) return rv;
    if (session) return session_make(s, alg, bits, bytes, len, NULL, 0, tmpl, n, NULL, out);
    if ((rv = spec_parse(NULL, 0, tmpl, n, alg, bits, &sb)) != CKR_OK) return rv;
    /* CKA_LOCAL is FALSE for a key that came from outside (attr.c reads this label). */
    spec_label_add(&sb, "hf.imported", "true");
    rv = key_make(s, &sb, bytes, len, &v);
    if (rv == CKR_OK)
        *out = HF_HANDLE(v.id, hf_alg_is_secret(alg) ? HF_OBJ_SECRET : HF_OBJ_PRIVATE);
    hf_key_version_clear(&v);
    return rv;
}

/* ---- entry points ----------------------------------------------------------------------- */

HF_EXPORT CK_RV C_GenerateKey(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                              CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount,
                              CK_OBJECT_HANDLE_PTR phKey)
{
    struct hf_session *s;
    bool session = false;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (!pMechanism || !phKey) rv = CKR_ARGUMENTS_BAD;
    if (rv == CKR_OK) rv = hf_tmpl_check(pTemplate, ulCount);
    if (rv == CKR_OK) rv = hf_tmpl_is_session(pTemplate, ulCount, &session);
    /* Section 4.4's table: session objects in any session; a private one needs the user, which
     * the session object table checks as it takes it. */
    if (rv == CKR_OK && !session) rv = hf_session_check_write(s);
    if (rv == CKR_OK) rv = hf_keygen_secret(s, pMechanism, pTemplate, ulCount, phKey);
    hf_session_put(s);
    return rv;
}

HF_EXPORT CK_RV C_GenerateKeyPair(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                                  CK_ATTRIBUTE_PTR pPublicKeyTemplate,
                                  CK_ULONG ulPublicKeyAttributeCount,
                                  CK_ATTRIBUTE_PTR pPrivateKeyTemplate,
                                  CK_ULONG ulPrivateKeyAttributeCount,
                                  CK_OBJECT_HANDLE_PTR phPublicKey,
                                  CK_OBJECT_HANDLE_PTR phPrivateKey)
{
    struct hf_session *s;
    bool session = false;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (!pMechanism || !phPublicKey || !phPrivateKey) rv = CKR_ARGUMENTS_BAD;
    if (rv == CKR_OK) rv = hf_tmpl_check(pPublicKeyTemplate, ulPublicKeyAttributeCount);
    if (rv == CKR_OK) rv = hf_tmpl_check(pPrivateKeyTemplate, ulPrivateKeyAttributeCount);
    if (rv == CKR_OK)
        rv = pair_is_session(pPublicKeyTemplate, ulPublicKeyAttributeCount, pPrivateKeyTemplate,
                             ulPrivateKeyAttributeCount, &session);
    if (rv == CKR_OK && !session) rv = hf_session_check_write(s);
    if (rv == CKR_OK)
        rv = hf_keygen_pair(s, pMechanism, pPublicKeyTemplate, ulPublicKeyAttributeCount,
                            pPrivateKeyTemplate, ulPrivateKeyAttributeCount, phPublicKey,
                            phPrivateKey);
    hf_session_put(s);
    return rv;
}

/* ---- C_CreateObject: private keys from their components, as PKCS#8 ---------------------- */

/* The PKCS#8 DER (hf_secmem memory) of the key pair params make, for hf_keygen_import. */
static CK_RV params_import_der(enum hf_alg alg, OSSL_PARAM *params, unsigned char **der,
                               size_t *len, unsigned *bits)
{
    struct hf_material *m = NULL;
    CK_RV rv = hf_material_from_params(alg, params, &m);

    if (rv == CKR_OK) {
        *bits = hf_material_bits(m);
        rv = hf_material_to_bytes(m, der, len);
    }
    hf_material_unref(m);
    return rv;
}

CK_RV hf_tmpl_bn_push(OSSL_PARAM_BLD *bld, const CK_ATTRIBUTE *t, CK_ULONG n,
                      CK_ATTRIBUTE_TYPE type, const char *name, BIGNUM **bn)
{
    const CK_ATTRIBUTE *a = hf_tmpl_find(t, n, type);

    if (!a || !a->pValue || a->ulValueLen == 0) return CKR_TEMPLATE_INCOMPLETE;
    if (a->ulValueLen > 1024) return CKR_ATTRIBUTE_VALUE_INVALID;
    if (!(*bn = BN_bin2bn(a->pValue, (int)a->ulValueLen, NULL))) return CKR_HOST_MEMORY;
    return OSSL_PARAM_BLD_push_BN(bld, name, *bn) ? CKR_OK : CKR_HOST_MEMORY;
}

static CK_RV rsa_import_der(const CK_ATTRIBUTE *t, CK_ULONG n, unsigned char **der, size_t *len,
                            unsigned *bits)
{
    static const struct {
        CK_ATTRIBUTE_TYPE type;
        const char *name;
    } parts[] = {
        {CKA_MODULUS, OSSL_PKEY_PARAM_RSA_N},
        {CKA_PUBLIC_EXPONENT, OSSL_PKEY_PARAM_RSA_E},
        {CKA_PRIVATE_EXPONENT, OSSL_PKEY_PARAM_RSA_D},
        {CKA_PRIME_1, OSSL_PKEY_PARAM_RSA_FACTOR1},
        {CKA_PRIME_2, OSSL_PKEY_PARAM_RSA_FACTOR2},
        {CKA_EXPONENT_1, OSSL_PKEY_PARAM_RSA_EXPONENT1},
        {CKA_EXPONENT_2, OSSL_PKEY_PARAM_RSA_EXPONENT2},
        {CKA_COEFFICIENT, OSSL_PKEY_PARAM_RSA_COEFFICIENT1},
    };
    BIGNUM *bn[sizeof(parts) / sizeof(parts[0])] = {0};
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    CK_RV rv = bld ? CKR_OK : CKR_HOST_MEMORY;

    /* All CRT parts are required: OpenSSL cannot use a key without them efficiently. */
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && rv == CKR_OK; i++)
        rv = hf_tmpl_bn_push(bld, t, n, parts[i].type, parts[i].name, &bn[i]);
    if (rv == CKR_OK && !(params = OSSL_PARAM_BLD_to_param(bld))) rv = CKR_HOST_MEMORY;
    if (rv == CKR_OK) rv = params_import_der(HF_ALG_RSA, params, der, len, bits);
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        BN_clear_free(bn[i]);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    return rv;
}

/* The uncompressed public point priv * G, which PKCS#11 does not give us with CKA_VALUE. */
static CK_RV ec_public_point(int nid, const BIGNUM *priv, unsigned char *out, size_t *len)
{
    EC_GROUP *group = EC_GROUP_new_by_curve_name_ex(hf_crypto_libctx(), NULL, nid);
    EC_POINT *pt = group ? EC_POINT_new(group) : NULL;
    CK_RV rv = CKR_ATTRIBUTE_VALUE_INVALID;

    if (!pt) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    if (BN_is_zero(priv) || BN_cmp(priv, EC_GROUP_get0_order(group)) >= 0) goto done;
    if (!EC_POINT_mul(group, pt, priv, NULL, NULL, NULL)) goto done;
    *len = EC_POINT_point2oct(group, pt, POINT_CONVERSION_UNCOMPRESSED, out, *len, NULL);
    if (*len != 0) rv = CKR_OK;
done:
    EC_POINT_free(pt);
    EC_GROUP_free(group);
    return rv;
}

static CK_RV ec_import_der(const CK_ATTRIBUTE *t, CK_ULONG n, unsigned char **der, size_t *len,
                           unsigned *bits)
{
    const CK_ATTRIBUTE *params_attr = hf_tmpl_find(t, n, CKA_EC_PARAMS);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    unsigned char point[133];
    size_t point_len = sizeof(point);
    BIGNUM *priv = NULL;
    const struct hf_curve *curve = NULL;
    CK_RV rv = bld ? CKR_OK : CKR_HOST_MEMORY;

    if (rv == CKR_OK)
        rv = params_attr ? hf_tmpl_ec_bits(params_attr, bits) : CKR_TEMPLATE_INCOMPLETE;
    if (rv == CKR_OK) curve = hf_curve_find(HF_ALG_EC, *bits);
    if (rv == CKR_OK) rv = hf_tmpl_bn_push(bld, t, n, CKA_VALUE, OSSL_PKEY_PARAM_PRIV_KEY, &priv);
    if (rv == CKR_OK) rv = ec_public_point(curve->nid, priv, point, &point_len);
    if (rv == CKR_OK &&
        (!OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, curve->group, 0) ||
         !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, point_len) ||
         !(params = OSSL_PARAM_BLD_to_param(bld))))
        rv = CKR_HOST_MEMORY;
    if (rv == CKR_OK) rv = params_import_der(HF_ALG_EC, params, der, len, bits);
    BN_clear_free(priv);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    return rv;
}

/* An Ed25519 private key from its 32-byte seed (CKA_VALUE); OpenSSL derives the public key. */
static CK_RV ed25519_import_der(const CK_ATTRIBUTE *t, CK_ULONG n, unsigned char **der, size_t *len,
                                unsigned *bits)
{
    const CK_ATTRIBUTE *params = hf_tmpl_find(t, n, CKA_EC_PARAMS);
    const CK_ATTRIBUTE *value = hf_tmpl_find(t, n, CKA_VALUE);
    CK_RV rv = params ? hf_tmpl_curve_bits(params, HF_ALG_ED25519, bits) : CKR_TEMPLATE_INCOMPLETE;

    if (rv != CKR_OK) return rv;
    if (!value || !value->pValue) return CKR_TEMPLATE_INCOMPLETE;
    if (value->ulValueLen != 32) return CKR_ATTRIBUTE_VALUE_INVALID;
    OSSL_PARAM p[] = {OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_PRIV_KEY, value->pValue, 32),
                      OSSL_PARAM_END};
    return params_import_der(HF_ALG_ED25519, p, der, len, bits);
}

static CK_RV secret_import(struct hf_session *s, const CK_ATTRIBUTE *t, CK_ULONG n,
                           CK_OBJECT_HANDLE *out)
{
    const CK_ATTRIBUTE *value = hf_tmpl_find(t, n, CKA_VALUE);
    bool present;
    CK_ULONG type = 0, len = 0;
    enum hf_alg alg;
    CK_RV rv = hf_tmpl_ulong(t, n, CKA_KEY_TYPE, &present, &type);

    if (rv != CKR_OK) return rv;
    if (!present || !value) return CKR_TEMPLATE_INCOMPLETE;
    if (type != CKK_AES && type != CKK_GENERIC_SECRET) return CKR_ATTRIBUTE_VALUE_INVALID;
    alg = type == CKK_AES ? HF_ALG_AES : HF_ALG_GENERIC;
    if (value->ulValueLen > 512 || !hf_alg_bits_is_valid(alg, (unsigned)value->ulValueLen * 8))
        return CKR_ATTRIBUTE_VALUE_INVALID;
    rv = hf_tmpl_ulong(t, n, CKA_VALUE_LEN, &present, &len);
    if (rv == CKR_OK && present && len != value->ulValueLen) rv = CKR_TEMPLATE_INCONSISTENT;
    if (rv != CKR_OK) return rv;
    return hf_keygen_import(s, alg, (unsigned)value->ulValueLen * 8, value->pValue,
                            value->ulValueLen, t, n, out);
}

static CK_RV private_import(struct hf_session *s, const CK_ATTRIBUTE *t, CK_ULONG n,
                            CK_OBJECT_HANDLE *out)
{
    unsigned char *der = NULL;
    size_t len = 0;
    unsigned bits = 0;
    bool present;
    CK_ULONG type = 0;
    enum hf_alg alg;
    CK_RV rv = hf_tmpl_ulong(t, n, CKA_KEY_TYPE, &present, &type);

    if (rv != CKR_OK) return rv;
    if (!present) return CKR_TEMPLATE_INCOMPLETE;
    if (type == CKK_RSA) {
        alg = HF_ALG_RSA;
        rv = rsa_import_der(t, n, &der, &len, &bits);
    } else if (type == CKK_EC) {
        alg = HF_ALG_EC;
        rv = ec_import_der(t, n, &der, &len, &bits);
    } else if (type == CKK_EC_EDWARDS) {
        alg = HF_ALG_ED25519;
        rv = ed25519_import_der(t, n, &der, &len, &bits);
    } else {
        return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    if (rv == CKR_OK) rv = hf_keygen_import(s, alg, bits, der, len, t, n, out);
    hf_secmem_free(der, len);
    return rv;
}

static CK_RV object_create(struct hf_session *s, const CK_ATTRIBUTE *t, CK_ULONG n,
                           CK_OBJECT_HANDLE *out)
{
    bool present, session;
    CK_ULONG cls = 0;
    CK_RV rv = hf_tmpl_ulong(t, n, CKA_CLASS, &present, &cls);

    if (rv != CKR_OK) return rv;
    if (!present) return CKR_TEMPLATE_INCOMPLETE;
    switch (cls) {
    case CKO_SECRET_KEY:
        return secret_import(s, t, n, out);
    case CKO_PRIVATE_KEY:
        return private_import(s, t, n, out);
    case CKO_PUBLIC_KEY:
        if ((rv = hf_tmpl_is_session(t, n, &session)) != CKR_OK) return rv;
        /* A lone public key has no place in the key model; as a session object it is only
         * itself. */
        if (session) return hf_session_key_public(s, t, n, out);
        break;
    }
    /* Certificates, data objects and lone public keys have no place in the key model. */
    hf_log_info("C_CreateObject: objects of class 0x%lx are not stored; only keys", cls);
    return CKR_TEMPLATE_INCONSISTENT;
}

HF_EXPORT CK_RV C_CreateObject(CK_SESSION_HANDLE hSession, CK_ATTRIBUTE_PTR pTemplate,
                               CK_ULONG ulCount, CK_OBJECT_HANDLE_PTR phObject)
{
    struct hf_session *s;
    bool session = false;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (!pTemplate || !phObject) rv = CKR_ARGUMENTS_BAD;
    if (rv == CKR_OK) rv = hf_tmpl_check(pTemplate, ulCount);
    if (rv == CKR_OK && hf_dobj_is_template(pTemplate, ulCount)) {
        /* Certificates and data (cert-data.c) keep their own session and login rules. */
        rv = hf_dobj_create(s, pTemplate, ulCount, phObject);
        hf_session_put(s);
        return rv;
    }
    if (rv == CKR_OK) rv = hf_tmpl_is_session(pTemplate, ulCount, &session);
    if (rv == CKR_OK && !session) rv = hf_session_check_write(s);
    if (rv == CKR_OK) rv = object_create(s, pTemplate, ulCount, phObject);
    hf_session_put(s);
    return rv;
}
