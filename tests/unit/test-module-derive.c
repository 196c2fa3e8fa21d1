/* C_DeriveKey through the built holdfast-pkcs11.so. CKM_ECDH1_DERIVE between a Holdfast EC key
 * (session or token, P-256 and P-384) and an OpenSSL-generated peer, the peer's point given bare
 * and as DER: the derived key's value equals OpenSSL's EVP_PKEY_derive (CKD_NULL, truncated to
 * CKA_VALUE_LEN from the leading end) and its X9.63 KDF; a point off the curve, a key without
 * CKA_DERIVE and the public face are refused with the exact CKR_. CKM_HKDF_DERIVE against RFC 5869
 * cases 1-3 (extract and expand, extract alone), against OpenSSL's EVP_KDF for SHA-384/512 and
 * with the salt from a key. The derived key's sensitivity rules and the audit records. */
#include "hf-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/param_build.h>

#include "harness.h"
#include "module-loader.h"
#include "pkcs11/core/core.h"
#include "pkcs11/module/pkcs11-compat.h"

#define SLOT 1
#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE sess;
static CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
static CK_OBJECT_CLASS secret_cls = CKO_SECRET_KEY;
static CK_KEY_TYPE generic_type = CKK_GENERIC_SECRET, aes_type = CKK_AES;
static const unsigned char oid_p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48,
                                         0xce, 0x3d, 0x03, 0x01, 0x07};
static const unsigned char oid_p384[] = {0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22};

/* ---- helpers ------------------------------------------------------------------------------- */

static CK_RV ec_pair(unsigned bits, bool token, bool derive, CK_OBJECT_HANDLE *pub,
                     CK_OBJECT_HANDLE *priv)
{
    CK_MECHANISM mech = {CKM_EC_KEY_PAIR_GEN, NULL, 0};
    CK_ATTRIBUTE pt[] = {{CKA_EC_PARAMS, (void *)(bits == 384 ? oid_p384 : oid_p256),
                          bits == 384 ? sizeof(oid_p384) : sizeof(oid_p256)},
                         {CKA_TOKEN, token ? &yes : &no, 1}};
    CK_ATTRIBUTE vt[] = {{CKA_TOKEN, token ? &yes : &no, 1}, {CKA_DERIVE, derive ? &yes : &no, 1}};

    return p11->C_GenerateKeyPair(sess, &mech, pt, N(pt), vt, N(vt), pub, priv);
}

/* Bytes of an attribute, malloc'd; NULL when it cannot be read. */
static unsigned char *get_bytes(CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type, size_t *len)
{
    CK_ATTRIBUTE a = {type, NULL, 0};
    unsigned char *buf;

    if (p11->C_GetAttributeValue(sess, h, &a, 1) != CKR_OK) return NULL;
    if ((buf = malloc(a.ulValueLen + 1)) == NULL) return NULL;
    a.pValue = buf;
    if (p11->C_GetAttributeValue(sess, h, &a, 1) != CKR_OK) {
        free(buf);
        return NULL;
    }
    *len = a.ulValueLen;
    return buf;
}

static int get_bool(CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type)
{
    CK_BBOOL v = 0x55;
    CK_ATTRIBUTE a = {type, &v, sizeof(v)};

    if (p11->C_GetAttributeValue(sess, h, &a, 1) != CKR_OK) return -1;
    return v == CK_TRUE;
}

/* An OpenSSL EC key of the curve, and its uncompressed point. */
static EVP_PKEY *peer_new(unsigned bits, unsigned char *point, size_t *len)
{
    EVP_PKEY *pk = EVP_EC_gen(bits == 384 ? "P-384" : "P-256");

    if (pk &&
        !EVP_PKEY_get_octet_string_param(pk, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point, 200, len)) {
        EVP_PKEY_free(pk);
        return NULL;
    }
    return pk;
}

/* The module key's public half (its CKA_EC_POINT, DER) as an OpenSSL key. */
static EVP_PKEY *module_public(CK_OBJECT_HANDLE pub, unsigned bits)
{
    size_t len = 0;
    unsigned char *der = get_bytes(pub, CKA_EC_POINT, &len);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    OSSL_PARAM *params = NULL;
    EVP_PKEY *pk = NULL;

    if (der && len > 2 && bld && ctx &&
        OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
                                        bits == 384 ? "P-384" : "P-256", 0) &&
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, der + 2, len - 2) &&
        (params = OSSL_PARAM_BLD_to_param(bld)) && EVP_PKEY_fromdata_init(ctx) > 0)
        EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    EVP_PKEY_CTX_free(ctx);
    free(der);
    return pk;
}

/* OpenSSL's side of the agreement: Z. */
static size_t openssl_z(EVP_PKEY *peer, EVP_PKEY *pub, unsigned char *z)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(peer, NULL);
    size_t len = 66;

    if (!ctx || EVP_PKEY_derive_init(ctx) <= 0 || EVP_PKEY_derive_set_peer(ctx, pub) <= 0 ||
        EVP_PKEY_derive(ctx, z, &len) <= 0)
        len = 0;
    EVP_PKEY_CTX_free(ctx);
    return len;
}

/* C_DeriveKey of an extractable session key of type and len (0: none given). */
static CK_RV derive(CK_MECHANISM *m, CK_OBJECT_HANDLE base, CK_KEY_TYPE type, CK_ULONG len,
                    bool token, CK_OBJECT_HANDLE *out)
{
    CK_ATTRIBUTE t[] = {
        {CKA_CLASS, &secret_cls, sizeof(secret_cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_TOKEN, token ? &yes : &no, 1},
        {CKA_EXTRACTABLE, &yes, 1},
        {CKA_SENSITIVE, &no, 1},
        {CKA_DERIVE, &yes, 1},
        {CKA_VALUE_LEN, &len, sizeof(len)},
    };

    return p11->C_DeriveKey(sess, m, base, t, len ? N(t) : N(t) - 1, out);
}

static bool value_is(CK_OBJECT_HANDLE h, const unsigned char *want, size_t want_len)
{
    size_t len = 0;
    unsigned char *v = get_bytes(h, CKA_VALUE, &len);
    bool same = v && len == want_len && memcmp(v, want, len) == 0;

    free(v);
    return same;
}

static bool audit_has(const char *op, CK_RV rv)
{
    char line[4096], want_op[64], want_rv[40];
    FILE *f = fopen(env.cfg.audit_path, "r");
    bool found = false;

    snprintf(want_op, sizeof(want_op), "\"op\":\"%s\"", op);
    snprintf(want_rv, sizeof(want_rv), "\"result\":\"0x%lx\"", (unsigned long)rv);
    while (f && !found && fgets(line, sizeof(line), f))
        found = strstr(line, want_op) && strstr(line, want_rv);
    if (f) fclose(f);
    return found;
}

/* ---- ECDH ---------------------------------------------------------------------------------- */

static void ecdh_check(unsigned bits, bool token)
{
    CK_OBJECT_HANDLE pub = 0, priv = 0, k = 0;
    unsigned char point[200], der[202], z[66];
    size_t point_len = 0, zlen;
    CK_ECDH1_DERIVE_PARAMS p = {CKD_NULL, 0, NULL, 0, point};
    CK_MECHANISM m = {CKM_ECDH1_DERIVE, &p, sizeof(p)};
    EVP_PKEY *peer = peer_new(bits, point, &point_len), *ours;

    CU_ASSERT_PTR_NOT_NULL_FATAL(peer);
    CU_ASSERT_EQUAL_FATAL(ec_pair(bits, token, true, &pub, &priv), CKR_OK);
    ours = module_public(pub, bits);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ours);
    zlen = openssl_z(peer, ours, z);
    CU_ASSERT_EQUAL_FATAL(zlen, (bits + 7) / 8);
    /* The bare point, then its DER OCTET STRING. */
    p.ulPublicDataLen = point_len;
    CU_ASSERT_EQUAL(derive(&m, priv, CKK_GENERIC_SECRET, 0, false, &k), CKR_OK);
    CU_ASSERT(value_is(k, z, zlen));
    CU_ASSERT_EQUAL(get_bool(k, CKA_TOKEN), 0);
    CU_ASSERT_EQUAL(get_bool(k, CKA_LOCAL), 0);
    der[0] = 0x04;
    der[1] = (unsigned char)point_len;
    memcpy(der + 2, point, point_len);
    p.pPublicData = der;
    p.ulPublicDataLen = point_len + 2;
    CU_ASSERT_EQUAL(derive(&m, priv, CKK_AES, 16, false, &k), CKR_OK);
    CU_ASSERT(value_is(k, z + zlen - 16, 16));
    CU_ASSERT(audit_has("derive", CKR_OK));
    /* The public face derives nothing. */
    CU_ASSERT_EQUAL(derive(&m, pub, CKK_GENERIC_SECRET, 0, false, &k), CKR_KEY_TYPE_INCONSISTENT);
    EVP_PKEY_free(ours);
    EVP_PKEY_free(peer);
    OPENSSL_cleanse(z, sizeof(z));
}

static void test_ecdh_p256_session_key(void)
{
    ecdh_check(256, false);
}

static void test_ecdh_p384_token_key(void)
{
    ecdh_check(384, true);
}

static void test_ecdh_x963_kdf_matches_openssl(void)
{
    CK_OBJECT_HANDLE pub = 0, priv = 0, k = 0;
    unsigned char point[200], z[66], want[40], shared[] = "holdfast x9.63";
    size_t point_len = 0, zlen;
    CK_ECDH1_DERIVE_PARAMS p = {CKD_SHA256_KDF, sizeof(shared) - 1, shared, 0, point};
    CK_MECHANISM m = {CKM_ECDH1_DERIVE, &p, sizeof(p)};
    EVP_PKEY *peer = peer_new(256, point, &point_len), *ours;
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "X963KDF", NULL);
    EVP_KDF_CTX *kctx = EVP_KDF_CTX_new(kdf);
    OSSL_PARAM params[4];

    CU_ASSERT_EQUAL_FATAL(ec_pair(256, false, true, &pub, &priv), CKR_OK);
    ours = module_public(pub, 256);
    zlen = openssl_z(peer, ours, z);
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0);
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, z, zlen);
    params[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, shared, sizeof(shared) - 1);
    params[3] = OSSL_PARAM_construct_end();
    CU_ASSERT_EQUAL_FATAL(EVP_KDF_derive(kctx, want, sizeof(want), params), 1);
    p.ulPublicDataLen = point_len;
    CU_ASSERT_EQUAL(derive(&m, priv, CKK_GENERIC_SECRET, sizeof(want), false, &k), CKR_OK);
    CU_ASSERT(value_is(k, want, sizeof(want)));
    /* A KDF has no length of its own. */
    CU_ASSERT_EQUAL(derive(&m, priv, CKK_GENERIC_SECRET, 0, false, &k), CKR_TEMPLATE_INCOMPLETE);
    EVP_KDF_CTX_free(kctx);
    EVP_KDF_free(kdf);
    EVP_PKEY_free(ours);
    EVP_PKEY_free(peer);
}

static void test_ecdh_refusals(void)
{
    CK_OBJECT_HANDLE pub = 0, priv = 0, plain_pub = 0, plain = 0, k = 0;
    unsigned char point[200];
    size_t point_len = 0;
    CK_ECDH1_DERIVE_PARAMS p = {CKD_NULL, 0, NULL, 0, point};
    CK_MECHANISM m = {CKM_ECDH1_DERIVE, &p, sizeof(p)};
    EVP_PKEY *peer = peer_new(256, point, &point_len);

    CU_ASSERT_EQUAL_FATAL(ec_pair(256, false, true, &pub, &priv), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(ec_pair(256, false, false, &plain_pub, &plain), CKR_OK);
    p.ulPublicDataLen = point_len;
    CU_ASSERT_EQUAL(get_bool(plain, CKA_DERIVE), 0);
    CU_ASSERT_EQUAL(get_bool(priv, CKA_DERIVE), 1);
    CU_ASSERT_EQUAL(derive(&m, plain, CKK_GENERIC_SECRET, 0, false, &k),
                    CKR_KEY_FUNCTION_NOT_PERMITTED);
    CU_ASSERT(audit_has("derive", CKR_KEY_FUNCTION_NOT_PERMITTED));
    /* Off the curve: the last byte of y changed. */
    point[point_len - 1] ^= 1;
    CU_ASSERT_EQUAL(derive(&m, priv, CKK_GENERIC_SECRET, 0, false, &k),
                    CKR_MECHANISM_PARAM_INVALID);
    CU_ASSERT(audit_has("derive", CKR_MECHANISM_PARAM_INVALID));
    point[point_len - 1] ^= 1;
    /* A truncated point, and shared data with CKD_NULL. */
    p.ulPublicDataLen = point_len - 1;
    CU_ASSERT_EQUAL(derive(&m, priv, CKK_GENERIC_SECRET, 0, false, &k),
                    CKR_MECHANISM_PARAM_INVALID);
    p.ulPublicDataLen = point_len;
    p.pSharedData = point;
    p.ulSharedDataLen = 4;
    CU_ASSERT_EQUAL(derive(&m, priv, CKK_GENERIC_SECRET, 0, false, &k),
                    CKR_MECHANISM_PARAM_INVALID);
    p.pSharedData = NULL;
    p.ulSharedDataLen = 0;
    /* More than Z has, and no key type the module derives. */
    CU_ASSERT_EQUAL(derive(&m, priv, CKK_GENERIC_SECRET, 40, false, &k), CKR_TEMPLATE_INCONSISTENT);
    CU_ASSERT_EQUAL(derive(&m, priv, CKK_RSA, 32, false, &k), CKR_TEMPLATE_INCONSISTENT);
    /* A deactivated key only processes old data: no new keys from it. */
    CK_OBJECT_HANDLE tok_pub = 0, tok = 0;
    CK_ULONG deactivated = HF_STATE_DEACTIVATED;
    CK_ATTRIBUTE state = {CKA_HF_STATE, &deactivated, sizeof(deactivated)};
    CU_ASSERT_EQUAL_FATAL(ec_pair(256, true, true, &tok_pub, &tok), CKR_OK);
    CU_ASSERT_EQUAL(derive(&m, tok, CKK_GENERIC_SECRET, 0, false, &k), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(sess, tok, &state, 1), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(tok, CKA_DERIVE), 0);
    CU_ASSERT_EQUAL(derive(&m, tok, CKK_GENERIC_SECRET, 0, false, &k),
                    CKR_KEY_FUNCTION_NOT_PERMITTED);
    m.ulParameterLen = 3;
    CU_ASSERT_EQUAL(derive(&m, priv, CKK_GENERIC_SECRET, 0, false, &k),
                    CKR_MECHANISM_PARAM_INVALID);
    EVP_PKEY_free(peer);
}

/* A base that was always sensitive passes it on to a sensitive derived key, not to an
 * extractable one (PKCS#11 2.40 section 4.9). */
static void test_derived_key_sensitivity(void)
{
    CK_OBJECT_HANDLE pub = 0, priv = 0, k = 0;
    unsigned char point[200];
    size_t point_len = 0;
    CK_ECDH1_DERIVE_PARAMS p = {CKD_NULL, 0, NULL, 0, point};
    CK_MECHANISM m = {CKM_ECDH1_DERIVE, &p, sizeof(p)};
    CK_ULONG len = 32;
    CK_ATTRIBUTE t[] = {{CKA_CLASS, &secret_cls, sizeof(secret_cls)},
                        {CKA_KEY_TYPE, &aes_type, sizeof(aes_type)},
                        {CKA_TOKEN, &no, 1},
                        {CKA_VALUE_LEN, &len, sizeof(len)}};
    EVP_PKEY *peer = peer_new(256, point, &point_len);

    p.ulPublicDataLen = point_len;
    CU_ASSERT_EQUAL_FATAL(ec_pair(256, false, true, &pub, &priv), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(priv, CKA_ALWAYS_SENSITIVE), 1);
    CU_ASSERT_EQUAL_FATAL(p11->C_DeriveKey(sess, &m, priv, t, N(t), &k), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(k, CKA_SENSITIVE), 1);
    CU_ASSERT_EQUAL(get_bool(k, CKA_ALWAYS_SENSITIVE), 1);
    CU_ASSERT_EQUAL(get_bool(k, CKA_NEVER_EXTRACTABLE), 1);
    CU_ASSERT_EQUAL(get_bool(k, CKA_ENCRYPT), 1); /* an AES key's default usage */
    CU_ASSERT_EQUAL(derive(&m, priv, CKK_AES, 32, false, &k), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(k, CKA_SENSITIVE), 0);
    CU_ASSERT_EQUAL(get_bool(k, CKA_ALWAYS_SENSITIVE), 0);
    CU_ASSERT_EQUAL(get_bool(k, CKA_NEVER_EXTRACTABLE), 0);
    /* A token key derived here is a managed key like an import. */
    CU_ASSERT_EQUAL(derive(&m, priv, CKK_AES, 32, true, &k), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(k, CKA_TOKEN), 1);
    CU_ASSERT_EQUAL(get_bool(k, CKA_LOCAL), 0);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, k), CKR_OK);
    EVP_PKEY_free(peer);
}

/* ---- HKDF ---------------------------------------------------------------------------------- */

static CK_OBJECT_HANDLE generic_key_in(const unsigned char *value, CK_ULONG len, bool token)
{
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_ATTRIBUTE t[] = {{CKA_CLASS, &secret_cls, sizeof(secret_cls)},
                        {CKA_KEY_TYPE, &generic_type, sizeof(generic_type)},
                        {CKA_TOKEN, token ? &yes : &no, 1},
                        {CKA_DERIVE, &yes, 1},
                        {CKA_VALUE, (void *)value, len}};

    CU_ASSERT_EQUAL(p11->C_CreateObject(sess, t, N(t), &h), CKR_OK);
    return h;
}

static CK_OBJECT_HANDLE generic_key(const unsigned char *value, CK_ULONG len)
{
    return generic_key_in(value, len, false);
}

static void hex(const char *s, unsigned char *out, size_t *len)
{
    for (*len = 0; s[2 * *len]; (*len)++)
        sscanf(s + 2 * *len, "%2hhx", &out[*len]);
}

struct rfc5869 {
    const char *ikm, *salt, *info, *prk, *okm;
};

/* RFC 5869 appendix A.1-A.3 (SHA-256). */
static const struct rfc5869 cases[] = {
    {"0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "000102030405060708090a0b0c",
     "f0f1f2f3f4f5f6f7f8f9", "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
     "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"},
    {"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2"
     "d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f",
     "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8"
     "d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeaf",
     "b0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcd"
     "ddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
     "06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244",
     "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e59"
     "0e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87"},
    {"0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "", "",
     "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04",
     "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"},
};

static void test_hkdf_rfc5869_vectors(void)
{
    for (size_t i = 0; i < N(cases); i++) {
        unsigned char ikm[128], salt[128], info[128], prk[64], okm[128];
        size_t ikm_len, salt_len, info_len, prk_len, okm_len;
        CK_OBJECT_HANDLE base, k = 0;
        hex(cases[i].ikm, ikm, &ikm_len);
        hex(cases[i].salt, salt, &salt_len);
        hex(cases[i].info, info, &info_len);
        hex(cases[i].prk, prk, &prk_len);
        hex(cases[i].okm, okm, &okm_len);
        /* Case 1 from a managed token key, the others from session keys. */
        base = generic_key_in(ikm, ikm_len, i == 0);
        CU_ASSERT_EQUAL(get_bool(base, CKA_TOKEN), i == 0);
        /* Case 3 has no salt: the NULL salt type, a hash length of zeros. */
        CK_HKDF_PARAMS p = {CK_TRUE,
                            CK_TRUE,
                            CKM_SHA256,
                            salt_len ? CKF_HKDF_SALT_DATA : CKF_HKDF_SALT_NULL,
                            salt_len ? salt : NULL,
                            salt_len,
                            CK_INVALID_HANDLE,
                            info_len ? info : NULL,
                            info_len};
        CK_MECHANISM m = {CKM_HKDF_DERIVE, &p, sizeof(p)};
        CU_ASSERT_EQUAL(derive(&m, base, CKK_GENERIC_SECRET, okm_len, false, &k), CKR_OK);
        CU_ASSERT(value_is(k, okm, okm_len));
        /* Extract alone gives the PRK; expand alone from it the OKM. */
        p.bExpand = CK_FALSE;
        CU_ASSERT_EQUAL(derive(&m, base, CKK_GENERIC_SECRET, 0, false, &k), CKR_OK);
        CU_ASSERT(value_is(k, prk, prk_len));
        p.bExpand = CK_TRUE;
        p.bExtract = CK_FALSE;
        CU_ASSERT_EQUAL(derive(&m, k, CKK_GENERIC_SECRET, okm_len, false, &k), CKR_OK);
        CU_ASSERT(value_is(k, okm, okm_len));
    }
}

static void hkdf_openssl_check(CK_MECHANISM_TYPE prf, const char *md)
{
    unsigned char ikm[48], salt[24], info[] = "holdfast hkdf", want[100];
    CK_OBJECT_HANDLE base, salt_key, k = 0;
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(kdf);
    OSSL_PARAM params[5];
    CK_HKDF_PARAMS p = {CK_TRUE,      CK_TRUE,           prf,  CKF_HKDF_SALT_DATA, salt,
                        sizeof(salt), CK_INVALID_HANDLE, info, sizeof(info) - 1};
    CK_MECHANISM m = {CKM_HKDF_DERIVE, &p, sizeof(p)};

    for (size_t i = 0; i < sizeof(ikm); i++)
        ikm[i] = (unsigned char)(i * 7 + 1);
    for (size_t i = 0; i < sizeof(salt); i++)
        salt[i] = (unsigned char)(0xa0 + i);
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)md, 0);
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, ikm, sizeof(ikm));
    params[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt, sizeof(salt));
    params[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, sizeof(info) - 1);
    params[4] = OSSL_PARAM_construct_end();
    CU_ASSERT_EQUAL_FATAL(EVP_KDF_derive(ctx, want, sizeof(want), params), 1);
    base = generic_key(ikm, sizeof(ikm));
    CU_ASSERT_EQUAL(derive(&m, base, CKK_GENERIC_SECRET, sizeof(want), false, &k), CKR_OK);
    CU_ASSERT(value_is(k, want, sizeof(want)));
    /* The same salt as a key's value. */
    salt_key = generic_key(salt, sizeof(salt));
    p.ulSaltType = CKF_HKDF_SALT_KEY;
    p.pSalt = NULL;
    p.ulSaltLen = 0;
    p.hSaltKey = salt_key;
    CU_ASSERT_EQUAL(derive(&m, base, CKK_AES, 32, false, &k), CKR_OK);
    CU_ASSERT(value_is(k, want, 32));
    EVP_KDF_CTX_free(ctx);
    EVP_KDF_free(kdf);
}

static void test_hkdf_sha384_matches_openssl(void)
{
    hkdf_openssl_check(CKM_SHA384, "SHA384");
}

static void test_hkdf_sha512_matches_openssl(void)
{
    hkdf_openssl_check(CKM_SHA512, "SHA512");
}

static void test_hkdf_refusals(void)
{
    unsigned char ikm[32] = {1, 2, 3};
    CK_OBJECT_HANDLE base = generic_key(ikm, sizeof(ikm)), aes = 0, k = 0;
    CK_HKDF_PARAMS p = {CK_FALSE,          CK_FALSE, CKM_SHA256, CKF_HKDF_SALT_NULL, NULL, 0,
                        CK_INVALID_HANDLE, NULL,     0};
    CK_MECHANISM m = {CKM_HKDF_DERIVE, &p, sizeof(p)};
    CK_MECHANISM aes_gen = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 32;
    CK_ATTRIBUTE at[] = {
        {CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_TOKEN, &no, 1}, {CKA_DERIVE, &yes, 1}};

    CU_ASSERT_EQUAL(derive(&m, base, CKK_GENERIC_SECRET, 32, false, &k),
                    CKR_MECHANISM_PARAM_INVALID);
    p.bExtract = p.bExpand = CK_TRUE;
    p.prfHashMechanism = CKM_MD5;
    CU_ASSERT_EQUAL(derive(&m, base, CKK_GENERIC_SECRET, 32, false, &k),
                    CKR_MECHANISM_PARAM_INVALID);
    p.prfHashMechanism = CKM_SHA256;
    p.ulSaltType = CKF_HKDF_SALT_DATA; /* and no salt */
    CU_ASSERT_EQUAL(derive(&m, base, CKK_GENERIC_SECRET, 32, false, &k),
                    CKR_MECHANISM_PARAM_INVALID);
    p.ulSaltType = CKF_HKDF_SALT_KEY;
    p.hSaltKey = 0x12345;
    CU_ASSERT_EQUAL(derive(&m, base, CKK_GENERIC_SECRET, 32, false, &k),
                    CKR_MECHANISM_PARAM_INVALID);
    p.ulSaltType = CKF_HKDF_SALT_NULL;
    /* Expand without a length, and a length past 255 hash lengths. */
    CU_ASSERT_EQUAL(derive(&m, base, CKK_GENERIC_SECRET, 0, false, &k), CKR_TEMPLATE_INCOMPLETE);
    p.prfHashMechanism = CKM_SHA_1;
    CU_ASSERT_EQUAL(derive(&m, base, CKK_GENERIC_SECRET, 255 * 20 + 1, false, &k),
                    CKR_ATTRIBUTE_VALUE_INVALID);
    p.prfHashMechanism = CKM_SHA256;
    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &aes_gen, at, N(at), &aes), CKR_OK);
    CU_ASSERT_EQUAL(derive(&m, aes, CKK_GENERIC_SECRET, 32, false, &k), CKR_KEY_TYPE_INCONSISTENT);
}

static void test_mechanism_info(void)
{
    CK_MECHANISM_INFO info;

    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(SLOT, CKM_ECDH1_DERIVE, &info), CKR_OK);
    CU_ASSERT(info.flags & CKF_DERIVE);
    CU_ASSERT_EQUAL(info.ulMinKeySize, 256);
    CU_ASSERT_EQUAL(info.ulMaxKeySize, 384);
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(SLOT, CKM_HKDF_DERIVE, &info), CKR_OK);
    CU_ASSERT(info.flags & CKF_DERIVE);
    CU_ASSERT_EQUAL(info.ulMinKeySize, 14);
    CU_ASSERT_EQUAL(info.ulMaxKeySize, 512);
}

/* ---- suite --------------------------------------------------------------------------------- */

static int suite_init(void)
{
    if (hf_test_env_setup(&env, NULL) != 0) return -1;
    if (hf_test_module_load(&mod) != 0) return -1;
    p11 = mod.p11;
    if (hf_test_module_start(p11, &sess) != CKR_OK) return -1;
    return 0;
}

static int suite_clean(void)
{
    if (p11) p11->C_Finalize(NULL);
    hf_test_module_unload(&mod);
    hf_test_env_teardown(&env);
    return 0;
}

static CU_TestInfo derive_tests[] = {
    {"ECDH P-256 session key equals OpenSSL's", test_ecdh_p256_session_key},
    {"ECDH P-384 token key equals OpenSSL's", test_ecdh_p384_token_key},
    {"ECDH with the X9.63 KDF equals OpenSSL's", test_ecdh_x963_kdf_matches_openssl},
    {"ECDH refusals", test_ecdh_refusals},
    {"derived key sensitivity", test_derived_key_sensitivity},
    {"HKDF RFC 5869 cases 1-3", test_hkdf_rfc5869_vectors},
    {"HKDF SHA-384 equals OpenSSL's", test_hkdf_sha384_matches_openssl},
    {"HKDF SHA-512 equals OpenSSL's", test_hkdf_sha512_matches_openssl},
    {"HKDF refusals", test_hkdf_refusals},
    {"mechanism info", test_mechanism_info},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    CU_SuiteInfo suites[] = {
        {"module-derive", suite_init, suite_clean, NULL, NULL, derive_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
