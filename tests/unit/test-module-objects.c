/* Keys as PKCS#11 objects, through the built holdfast-pkcs11.so: generation from templates,
 * the attributes each face shows (public parts checked against OpenSSL, secret values refused
 * unless exportable), visibility before login, finding (label means the current version, CKA_ID
 * any version, stable order), changes (rename, state, destroy), import, and handles that survive
 * a restart. A change made to the store behind the module's back (another process rotating a
 * key) shows within the module's revalidation interval. */
#include "hf-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "harness.h"
#include "module-loader.h"
#include "pkcs11/core/core.h"

#define SLOT 1
#define RW (CKF_SERIAL_SESSION | CKF_RW_SESSION)
#define MAX_FOUND 256
#define N(a) (sizeof(a) / sizeof((a)[0]))
/* The module revalidates its caches against the store at most every 500 ms. */
#define REVALIDATE_WAIT_US 650000

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE sess;
static CK_BBOOL yes = CK_TRUE, no = CK_FALSE;

static CK_OBJECT_HANDLE rsa_pub, rsa_priv; /* made once: RSA generation is slow */

static const unsigned char oid_p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48,
                                         0xce, 0x3d, 0x03, 0x01, 0x07};
static const unsigned char oid_p384[] = {0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22};

/* ---- helpers ------------------------------------------------------------------------------- */

static CK_ULONG get_ulong(CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type)
{
    CK_ULONG v = 0xdeadbeef;
    CK_ATTRIBUTE a = {type, &v, sizeof(v)};

    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, h, &a, 1), CKR_OK);
    CU_ASSERT_EQUAL(a.ulValueLen, sizeof(v));
    return v;
}

static bool get_bool(CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type)
{
    CK_BBOOL v = 0x55;
    CK_ATTRIBUTE a = {type, &v, sizeof(v)};

    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, h, &a, 1), CKR_OK);
    CU_ASSERT(v == CK_TRUE || v == CK_FALSE);
    return v == CK_TRUE;
}

/* Two-call read; malloc'd (NUL-terminated for strings), *len set. NULL on failure. */
static unsigned char *get_bytes(CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type, CK_ULONG *len)
{
    CK_ATTRIBUTE a = {type, NULL, 0};
    unsigned char *buf;

    if (p11->C_GetAttributeValue(sess, h, &a, 1) != CKR_OK) return NULL;
    buf = malloc(a.ulValueLen + 1);
    if (!buf) return NULL;
    a.pValue = buf;
    if (p11->C_GetAttributeValue(sess, h, &a, 1) != CKR_OK) {
        free(buf);
        return NULL;
    }
    buf[a.ulValueLen] = '\0';
    *len = a.ulValueLen;
    return buf;
}

static CK_ULONG find(CK_ATTRIBUTE *tmpl, CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    CK_ULONG count = 0;

    CU_ASSERT_EQUAL_FATAL(p11->C_FindObjectsInit(sess, tmpl, n), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_FindObjects(sess, out, MAX_FOUND, &count), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_FindObjectsFinal(sess), CKR_OK);
    return count;
}

static CK_ULONG find_label(const char *label, CK_OBJECT_CLASS cls, CK_OBJECT_HANDLE *out)
{
    CK_ATTRIBUTE tmpl[] = {{CKA_LABEL, (void *)label, strlen(label)},
                           {CKA_CLASS, &cls, sizeof(cls)}};

    return find(tmpl, N(tmpl), out);
}

static CK_RV aes_gen(CK_SESSION_HANDLE s, const char *label, CK_ULONG bytes, bool extractable,
                     CK_OBJECT_HANDLE *h)
{
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_VALUE_LEN, &bytes, sizeof(bytes)},
        {CKA_TOKEN, &yes, 1},
        {CKA_EXTRACTABLE, extractable ? &yes : &no, 1},
    };

    return p11->C_GenerateKey(s, &mech, tmpl, N(tmpl), h);
}

static CK_RV ec_gen(const char *label, const void *params, size_t params_len, CK_OBJECT_HANDLE *pub,
                    CK_OBJECT_HANDLE *priv)
{
    CK_MECHANISM mech = {CKM_EC_KEY_PAIR_GEN, NULL, 0};
    CK_ATTRIBUTE pt[] = {{CKA_EC_PARAMS, (void *)params, params_len},
                         {CKA_LABEL, (void *)label, strlen(label)},
                         {CKA_VERIFY, &yes, 1}};
    CK_ATTRIBUTE vt[] = {{CKA_SIGN, &yes, 1}, {CKA_DERIVE, &yes, 1}};

    return p11->C_GenerateKeyPair(sess, &mech, pt, N(pt), vt, N(vt), pub, priv);
}

static CK_RV rsa_gen(CK_ULONG bits, const CK_BYTE *e, size_t elen, CK_OBJECT_HANDLE *pub,
                     CK_OBJECT_HANDLE *priv)
{
    CK_MECHANISM mech = {CKM_RSA_PKCS_KEY_PAIR_GEN, NULL, 0};
    CK_ATTRIBUTE pt[] = {{CKA_MODULUS_BITS, &bits, sizeof(bits)},
                         {CKA_PUBLIC_EXPONENT, (void *)e, elen},
                         {CKA_LABEL, "rsa-main", 8},
                         {CKA_ENCRYPT, &yes, 1}};
    CK_ATTRIBUTE vt[] = {{CKA_LABEL, "rsa-main", 8}, {CKA_DECRYPT, &yes, 1}, {CKA_SIGN, &yes, 1}};

    return p11->C_GenerateKeyPair(sess, &mech, pt, N(pt), vt, N(vt), pub, priv);
}

static void login(void)
{
    CU_ASSERT_EQUAL(
        p11->C_Login(sess, CKU_USER, (CK_UTF8CHAR_PTR)HF_TEST_USER_PIN, strlen(HF_TEST_USER_PIN)),
        CKR_OK);
}

/* The SubjectPublicKeyInfo the module shows, as an OpenSSL key. */
static EVP_PKEY *spki_of(CK_OBJECT_HANDLE h)
{
    CK_ULONG len = 0;
    unsigned char *der = get_bytes(h, CKA_PUBLIC_KEY_INFO, &len);
    const unsigned char *p = der;
    EVP_PKEY *pkey = der ? d2i_PUBKEY(NULL, &p, (long)len) : NULL;

    free(der);
    return pkey;
}

static bool bn_attr_equals(CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type, EVP_PKEY *pkey,
                           const char *param)
{
    CK_ULONG len = 0;
    unsigned char *bytes = get_bytes(h, type, &len);
    BIGNUM *want = NULL, *got = bytes ? BN_bin2bn(bytes, (int)len, NULL) : NULL;
    bool same = got && EVP_PKEY_get_bn_param(pkey, param, &want) && BN_cmp(want, got) == 0;

    BN_free(want);
    BN_free(got);
    free(bytes);
    return same;
}

/* ---- suite --------------------------------------------------------------------------------- */

static int suite_init(void)
{
    static const CK_BYTE f4[] = {1, 0, 1};

    if (hf_test_env_setup(&env, NULL) != 0) return -1;
    if (hf_test_module_load(&mod) != 0) return -1;
    p11 = mod.p11;
    if (hf_test_module_start(p11, &sess) != CKR_OK) return -1;
    return rsa_gen(2048, f4, sizeof(f4), &rsa_pub, &rsa_priv) == CKR_OK ? 0 : -1;
}

static int suite_clean(void)
{
    if (p11) p11->C_Finalize(NULL);
    hf_test_module_unload(&mod);
    hf_test_env_teardown(&env);
    return 0;
}

/* ---- generation and attributes ----------------------------------------------------------- */

static void test_aes_key_shows_its_attributes(void)
{
    CK_OBJECT_HANDLE h;
    CK_ULONG len = 0;
    unsigned char *s;
    CK_BYTE value[32];
    CK_ATTRIBUTE a = {CKA_VALUE, value, sizeof(value)};

    CU_ASSERT_EQUAL_FATAL(aes_gen(sess, "aes-plain", 32, false, &h), CKR_OK);
    CU_ASSERT_EQUAL(h & 3, 1); /* a secret face */
    CU_ASSERT_EQUAL(get_ulong(h, CKA_CLASS), CKO_SECRET_KEY);
    CU_ASSERT_EQUAL(get_ulong(h, CKA_KEY_TYPE), CKK_AES);
    CU_ASSERT_EQUAL(get_ulong(h, CKA_VALUE_LEN), 32);
    CU_ASSERT(get_bool(h, CKA_TOKEN));
    CU_ASSERT(get_bool(h, CKA_PRIVATE));
    CU_ASSERT(get_bool(h, CKA_SENSITIVE));
    CU_ASSERT(get_bool(h, CKA_ALWAYS_SENSITIVE));
    CU_ASSERT(get_bool(h, CKA_NEVER_EXTRACTABLE));
    CU_ASSERT_FALSE(get_bool(h, CKA_EXTRACTABLE));
    CU_ASSERT(get_bool(h, CKA_LOCAL));
    CU_ASSERT(get_bool(h, CKA_ENCRYPT));
    CU_ASSERT(get_bool(h, CKA_DECRYPT));
    CU_ASSERT(get_bool(h, CKA_WRAP));
    CU_ASSERT(get_bool(h, CKA_UNWRAP));
    CU_ASSERT_FALSE(get_bool(h, CKA_SIGN));
    CU_ASSERT_FALSE(get_bool(h, CKA_DERIVE));
    CU_ASSERT_EQUAL(get_ulong(h, CKA_KEY_GEN_MECHANISM), CKM_AES_KEY_GEN);
    s = get_bytes(h, CKA_LABEL, &len);
    CU_ASSERT(s && len == 9 && memcmp(s, "aes-plain", 9) == 0);
    free(s);
    s = get_bytes(h, CKA_ID, &len);
    CU_ASSERT(s && len == 16);
    free(s);

    /* The key's value never leaves a non-exportable key. */
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, h, &a, 1), CKR_ATTRIBUTE_SENSITIVE);
    CU_ASSERT_EQUAL(a.ulValueLen, CK_UNAVAILABLE_INFORMATION);
    a.pValue = NULL;
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, h, &a, 1), CKR_ATTRIBUTE_SENSITIVE);

    /* Vendor attributes. */
    s = get_bytes(h, CKA_HF_KEY_UUID, &len);
    CU_ASSERT(s && len == 36 && s[8] == '-');
    free(s);
    s = get_bytes(h, CKA_HF_VERSION_UUID, &len);
    CU_ASSERT(s && len == 36);
    free(s);
    CU_ASSERT_EQUAL(get_ulong(h, CKA_HF_VERSION), 1);
    CU_ASSERT_EQUAL(get_ulong(h, CKA_HF_STATE), HF_STATE_ACTIVE);
    CU_ASSERT_EQUAL(get_ulong(h, CKA_HF_USAGE),
                    HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT | HF_USAGE_WRAP | HF_USAGE_UNWRAP);
    CU_ASSERT(get_bool(h, CKA_HF_IS_CURRENT));
    s = get_bytes(h, CKA_HF_SOURCE, &len);
    CU_ASSERT(s && strcmp((char *)s, "local") == 0);
    free(s);
    s = get_bytes(h, CKA_HF_OWNER, &len);
    CU_ASSERT(s && len > 0);
    free(s);
    s = get_bytes(h, CKA_HF_LABELS, &len);
    CU_ASSERT(s && len == 0);
    free(s);
    CU_ASSERT(labs((long)get_ulong(h, CKA_HF_CREATED) - (long)time(NULL)) < 120);
}

static void test_keygen_template_errors(void)
{
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0}, bad = {CKM_AES_GCM, NULL, 0};
    CK_OBJECT_CLASS pubcls = CKO_PUBLIC_KEY;
    CK_ULONG len = 32, badlen = 17;
    CK_OBJECT_HANDLE h;
    CK_ATTRIBUTE nolen[] = {{CKA_LABEL, "no-len", 6}};
    CK_ATTRIBUTE oddlen[] = {{CKA_VALUE_LEN, &badlen, sizeof(badlen)}};
    CK_ATTRIBUTE wrongcls[] = {{CKA_VALUE_LEN, &len, sizeof(len)},
                               {CKA_CLASS, &pubcls, sizeof(pubcls)}};
    CK_ATTRIBUTE badname[] = {{CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_LABEL, "bad\nlabel", 9}};
    CK_ATTRIBUTE badutf8[] = {{CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_LABEL, "bad\xc3", 4}};
    CK_ATTRIBUTE badbool[] = {{CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_ENCRYPT, &len, sizeof(len)}};
    CK_ATTRIBUTE nouse[] = {{CKA_VALUE_LEN, &len, sizeof(len)},
                            {CKA_ENCRYPT, &no, 1},
                            {CKA_DECRYPT, &no, 1},
                            {CKA_WRAP, &no, 1},
                            {CKA_UNWRAP, &no, 1}};
    CK_ATTRIBUTE nolabel[] = {{CKA_VALUE_LEN, &len, sizeof(len)}};
    CK_ULONG n = 0;
    unsigned char *name;

    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, NULL, nolabel, 1, &h), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &mech, nolabel, 1, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &mech, NULL, 1, &h), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(0x7777, &mech, nolabel, 1, &h), CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &bad, nolabel, 1, &h), CKR_MECHANISM_INVALID);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &mech, nolen, N(nolen), &h), CKR_TEMPLATE_INCOMPLETE);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &mech, oddlen, N(oddlen), &h),
                    CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &mech, wrongcls, N(wrongcls), &h),
                    CKR_TEMPLATE_INCONSISTENT);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &mech, badname, N(badname), &h),
                    CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &mech, badutf8, N(badutf8), &h),
                    CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &mech, badbool, N(badbool), &h),
                    CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &mech, nouse, N(nouse), &h),
                    CKR_TEMPLATE_INCONSISTENT);
    /* Without CKA_LABEL the key still gets a name. */
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(sess, &mech, nolabel, N(nolabel), &h), CKR_OK);
    name = get_bytes(h, CKA_LABEL, &n);
    CU_ASSERT(name && n == 12 && memcmp(name, "key-", 4) == 0);
    free(name);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, h), CKR_OK);
}

static void test_keygen_needs_rw_session_and_user(void)
{
    CK_SESSION_HANDLE ro;
    CK_OBJECT_HANDLE h;

    CU_ASSERT_EQUAL_FATAL(p11->C_OpenSession(SLOT, CKF_SERIAL_SESSION, NULL, NULL, &ro), CKR_OK);
    CU_ASSERT_EQUAL(aes_gen(ro, "from-ro", 16, false, &h), CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_Logout(sess), CKR_OK);
    CU_ASSERT_EQUAL(aes_gen(sess, "no-login", 16, false, &h), CKR_USER_NOT_LOGGED_IN);
    login();
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
}

static void test_rsa_pair_shares_its_id_and_shows_public_parts(void)
{
    CK_ULONG a = 0, b = 0;
    unsigned char *id_pub = get_bytes(rsa_pub, CKA_ID, &a),
                  *id_priv = get_bytes(rsa_priv, CKA_ID, &b);
    EVP_PKEY *spki = spki_of(rsa_pub);
    CK_BYTE buf[8];
    CK_ATTRIBUTE secret = {CKA_PRIVATE_EXPONENT, buf, sizeof(buf)};

    /* pkcs11-tool pairs a private key with its public key by CKA_ID. */
    CU_ASSERT(id_pub && id_priv && a == 16 && b == 16 && memcmp(id_pub, id_priv, 16) == 0);
    free(id_pub);
    free(id_priv);
    CU_ASSERT_EQUAL(rsa_pub & 3, 3);
    CU_ASSERT_EQUAL(rsa_priv & 3, 2);
    CU_ASSERT_EQUAL(rsa_pub >> 2, rsa_priv >> 2);
    CU_ASSERT_EQUAL(get_ulong(rsa_pub, CKA_CLASS), CKO_PUBLIC_KEY);
    CU_ASSERT_EQUAL(get_ulong(rsa_priv, CKA_CLASS), CKO_PRIVATE_KEY);
    CU_ASSERT_EQUAL(get_ulong(rsa_priv, CKA_KEY_TYPE), CKK_RSA);
    CU_ASSERT_EQUAL(get_ulong(rsa_pub, CKA_MODULUS_BITS), 2048);
    CU_ASSERT_EQUAL(get_ulong(rsa_priv, CKA_MODULUS_BITS), 2048);
    CU_ASSERT_FALSE(get_bool(rsa_pub, CKA_PRIVATE));
    CU_ASSERT(get_bool(rsa_priv, CKA_PRIVATE));
    CU_ASSERT(get_bool(rsa_pub, CKA_ENCRYPT));
    CU_ASSERT(get_bool(rsa_pub, CKA_VERIFY));
    CU_ASSERT(get_bool(rsa_priv, CKA_DECRYPT));
    CU_ASSERT(get_bool(rsa_priv, CKA_SIGN));
    CU_ASSERT_FALSE(get_bool(rsa_priv, CKA_ALWAYS_AUTHENTICATE));
    CU_ASSERT_EQUAL(get_ulong(rsa_pub, CKA_KEY_GEN_MECHANISM), CKM_RSA_PKCS_KEY_PAIR_GEN);
    /* Role attributes belong to one face only. */
    CU_ASSERT_EQUAL(
        p11->C_GetAttributeValue(sess, rsa_pub, &(CK_ATTRIBUTE){CKA_DECRYPT, buf, 1}, 1),
        CKR_ATTRIBUTE_TYPE_INVALID);
    CU_ASSERT_PTR_NOT_NULL_FATAL(spki);
    CU_ASSERT_EQUAL(EVP_PKEY_get_bits(spki), 2048);
    CU_ASSERT(bn_attr_equals(rsa_pub, CKA_MODULUS, spki, OSSL_PKEY_PARAM_RSA_N));
    CU_ASSERT(bn_attr_equals(rsa_priv, CKA_MODULUS, spki, OSSL_PKEY_PARAM_RSA_N));
    CU_ASSERT(bn_attr_equals(rsa_pub, CKA_PUBLIC_EXPONENT, spki, OSSL_PKEY_PARAM_RSA_E));
    EVP_PKEY_free(spki);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, rsa_priv, &secret, 1), CKR_ATTRIBUTE_SENSITIVE);
    secret.type = CKA_PRIME_1;
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, rsa_priv, &secret, 1), CKR_ATTRIBUTE_SENSITIVE);
    secret.type = CKA_PRIVATE_EXPONENT;
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, rsa_pub, &secret, 1),
                    CKR_ATTRIBUTE_TYPE_INVALID);
}

static void test_rsa_keygen_template_errors(void)
{
    static const CK_BYTE f4[] = {1, 0, 1}, three[] = {3}, big[] = {1, 0, 0, 1};
    CK_MECHANISM mech = {CKM_RSA_PKCS_KEY_PAIR_GEN, NULL, 0};
    CK_ATTRIBUTE none[] = {{CKA_LABEL, "no-bits", 7}};
    CK_OBJECT_HANDLE pub, priv;

    CU_ASSERT_EQUAL(rsa_gen(1024, f4, sizeof(f4), &pub, &priv), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(rsa_gen(2048, three, sizeof(three), &pub, &priv), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(rsa_gen(2048, big, sizeof(big), &pub, &priv), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GenerateKeyPair(sess, &mech, none, 1, NULL, 0, &pub, &priv),
                    CKR_TEMPLATE_INCOMPLETE);
    CU_ASSERT_EQUAL(p11->C_GenerateKeyPair(sess, &mech, none, 1, NULL, 0, NULL, &priv),
                    CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_GenerateKeyPair(sess, &mech, NULL, 1, NULL, 0, &pub, &priv),
                    CKR_ARGUMENTS_BAD);
    mech.mechanism = CKM_AES_KEY_GEN;
    CU_ASSERT_EQUAL(p11->C_GenerateKeyPair(sess, &mech, none, 1, NULL, 0, &pub, &priv),
                    CKR_MECHANISM_INVALID);
}

static void ec_check(CK_OBJECT_HANDLE pub, CK_OBJECT_HANDLE priv, const unsigned char *oid,
                     size_t oid_len, size_t point_len)
{
    unsigned char point[200];
    size_t plen = 0;
    CK_ULONG len = 0;
    unsigned char *params = get_bytes(pub, CKA_EC_PARAMS, &len);
    unsigned char *ecpt;
    EVP_PKEY *spki = spki_of(pub);

    CU_ASSERT(params && len == oid_len && memcmp(params, oid, oid_len) == 0);
    free(params);
    CU_ASSERT_EQUAL(get_ulong(priv, CKA_KEY_TYPE), CKK_EC);
    CU_ASSERT_PTR_NOT_NULL_FATAL(spki);
    CU_ASSERT_FATAL(EVP_PKEY_get_octet_string_param(spki, OSSL_PKEY_PARAM_PUB_KEY, point,
                                                    sizeof(point), &plen));
    CU_ASSERT_EQUAL(plen, point_len);
    /* A DER OCTET STRING around the uncompressed point, on both faces. */
    for (int face = 0; face < 2; face++) {
        ecpt = get_bytes(face ? priv : pub, CKA_EC_POINT, &len);
        CU_ASSERT(ecpt && len == plen + 2 && ecpt[0] == 0x04 && ecpt[1] == plen &&
                  ecpt[2] == 0x04 && memcmp(ecpt + 2, point, plen) == 0);
        free(ecpt);
    }
    CU_ASSERT(get_bool(priv, CKA_SIGN));
    CU_ASSERT_FALSE(get_bool(priv, CKA_DECRYPT));
    /* ec_gen's private template asks for CKA_DERIVE (ECDH). */
    CU_ASSERT(get_bool(priv, CKA_DERIVE));
    CU_ASSERT_FALSE(get_bool(pub, CKA_DERIVE));
    CU_ASSERT_EQUAL(get_ulong(pub, CKA_HF_USAGE),
                    HF_USAGE_SIGN | HF_USAGE_VERIFY | HF_USAGE_DERIVE);
    EVP_PKEY_free(spki);
}

static void test_ec_pairs_p256_and_p384(void)
{
    static const unsigned char printable[] = {0x13, 0x05, 'P', '-', '3', '8', '4'};
    static const unsigned char unknown[] = {0x06, 0x03, 0x2b, 0x65, 0x70}; /* Ed25519 */
    CK_OBJECT_HANDLE pub, priv;

    CU_ASSERT_EQUAL_FATAL(ec_gen("ec-256", oid_p256, sizeof(oid_p256), &pub, &priv), CKR_OK);
    ec_check(pub, priv, oid_p256, sizeof(oid_p256), 65);
    CU_ASSERT_EQUAL_FATAL(ec_gen("ec-384", printable, sizeof(printable), &pub, &priv), CKR_OK);
    ec_check(pub, priv, oid_p384, sizeof(oid_p384), 97);
    CU_ASSERT_EQUAL(ec_gen("ec-bad", unknown, sizeof(unknown), &pub, &priv),
                    CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(ec_gen("ec-none", NULL, 0, &pub, &priv), CKR_ATTRIBUTE_VALUE_INVALID);
}

static void test_exportable_value_is_readable_and_audited(void)
{
    CK_OBJECT_HANDLE h;
    CK_BYTE value[32], small[8];
    CK_ATTRIBUTE a = {CKA_VALUE, NULL, 0};
    HF_FUNCTION_LIST *hf;
    CK_INTERFACE_PTR i;
    CK_C_GetInterface get = (CK_C_GetInterface)hf_test_module_sym(&mod, "C_GetInterface");
    CK_ULONG_LONG before = 0, after = 0;

    CU_ASSERT_FATAL(get && get((CK_UTF8CHAR_PTR)HF_INTERFACE_NAME, NULL, &i, 0) == CKR_OK);
    hf = i->pFunctionList;
    CU_ASSERT_EQUAL_FATAL(aes_gen(sess, "aes-export", 24, true, &h), CKR_OK);
    CU_ASSERT_FALSE(get_bool(h, CKA_SENSITIVE));
    CU_ASSERT(get_bool(h, CKA_EXTRACTABLE));
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, h, &a, 1), CKR_OK);
    CU_ASSERT_EQUAL(a.ulValueLen, 24);
    a.pValue = small;
    a.ulValueLen = sizeof(small);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, h, &a, 1), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(a.ulValueLen, CK_UNAVAILABLE_INFORMATION);
    CU_ASSERT_EQUAL(hf->HF_GetLastAuditSeq(sess, &before), CKR_OK);
    a.pValue = value;
    a.ulValueLen = sizeof(value);
    memset(value, 0, sizeof(value));
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, h, &a, 1), CKR_OK);
    CU_ASSERT_EQUAL(a.ulValueLen, 24);
    CU_ASSERT(memcmp(value, (CK_BYTE[24]){0}, 24) != 0);
    /* Reading a key's value is an export: it has its audit record. */
    CU_ASSERT_EQUAL(hf->HF_GetLastAuditSeq(sess, &after), CKR_OK);
    CU_ASSERT(after > before);
}

static void test_get_attribute_value_processes_every_attribute(void)
{
    CK_OBJECT_HANDLE h[4];
    CK_OBJECT_CLASS cls = 0;
    CK_BYTE value[32], label[64];
    CK_ATTRIBUTE t[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_VALUE, value, sizeof(value)},   /* sensitive */
        {CKA_MODULUS, value, sizeof(value)}, /* not an AES attribute */
        {CKA_LABEL, label, sizeof(label)},
    };

    CU_ASSERT_EQUAL_FATAL(find_label("aes-plain", CKO_SECRET_KEY, h), 1);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, h[0], NULL, 1), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, 0, t, 1), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, (h[0] | 3), t, 1), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, (999999 << 2) | 1, t, 1),
                    CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(0x7777, h[0], t, 1), CKR_SESSION_HANDLE_INVALID);
    {
        CK_RV rv = p11->C_GetAttributeValue(sess, h[0], t, N(t));
        CU_ASSERT(rv == CKR_ATTRIBUTE_SENSITIVE || rv == CKR_ATTRIBUTE_TYPE_INVALID);
    }
    CU_ASSERT_EQUAL(cls, CKO_SECRET_KEY);
    CU_ASSERT_EQUAL(t[1].ulValueLen, CK_UNAVAILABLE_INFORMATION);
    CU_ASSERT_EQUAL(t[2].ulValueLen, CK_UNAVAILABLE_INFORMATION);
    CU_ASSERT_EQUAL(t[3].ulValueLen, 9);
    CU_ASSERT(memcmp(label, "aes-plain", 9) == 0);
    CU_ASSERT_EQUAL(
        p11->C_GetAttributeValue(sess, h[0], &(CK_ATTRIBUTE){CKA_VENDOR_DEFINED | 1, NULL, 0}, 1),
        CKR_ATTRIBUTE_TYPE_INVALID);
}

static void test_private_objects_are_invisible_before_login(void)
{
    CK_OBJECT_HANDLE found[MAX_FOUND], secret;
    CK_OBJECT_CLASS priv = CKO_PRIVATE_KEY, pub = CKO_PUBLIC_KEY, sec = CKO_SECRET_KEY;
    CK_ATTRIBUTE tp[] = {{CKA_CLASS, &priv, sizeof(priv)}};
    CK_ATTRIBUTE tu[] = {{CKA_CLASS, &pub, sizeof(pub)}};
    CK_ATTRIBUTE ts[] = {{CKA_CLASS, &sec, sizeof(sec)}};
    CK_ULONG n;

    CU_ASSERT_EQUAL_FATAL(find_label("aes-plain", CKO_SECRET_KEY, &secret), 1);
    CU_ASSERT_EQUAL_FATAL(p11->C_Logout(sess), CKR_OK);
    CU_ASSERT_EQUAL(find(tp, 1, found), 0);
    CU_ASSERT_EQUAL(find(ts, 1, found), 0);
    n = find(tu, 1, found);
    CU_ASSERT(n >= 1);
    CU_ASSERT_EQUAL(
        p11->C_GetAttributeValue(sess, rsa_priv, &(CK_ATTRIBUTE){CKA_CLASS, NULL, 0}, 1),
        CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, secret, &(CK_ATTRIBUTE){CKA_CLASS, NULL, 0}, 1),
                    CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(get_ulong(rsa_pub, CKA_CLASS), CKO_PUBLIC_KEY);
    login();
    CU_ASSERT(find(tp, 1, found) >= 1);
    CU_ASSERT_EQUAL(get_ulong(rsa_priv, CKA_CLASS), CKO_PRIVATE_KEY);
}

/* ---- finding ------------------------------------------------------------------------------- */

/* Another process (the CLI, through a core of its own: its rows carry their policy MACs)
 * rotates the key: a second version. */
static void store_rotate(const char *key_uuid)
{
    struct hf_core *core = NULL;

    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_key_rotate(core, key_uuid, NULL, NULL), CKR_OK);
    hf_core_close(core);
}

static void test_label_finds_the_current_version_id_finds_any(void)
{
    CK_OBJECT_HANDLE v1, found[MAX_FOUND];
    CK_ULONG len = 0, one = 1, n;
    unsigned char *uuid, *id1;
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;

    CU_ASSERT_EQUAL_FATAL(aes_gen(sess, "aes-rotated", 32, false, &v1), CKR_OK);
    uuid = get_bytes(v1, CKA_HF_KEY_UUID, &len);
    id1 = get_bytes(v1, CKA_ID, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(uuid);
    CU_ASSERT_PTR_NOT_NULL_FATAL(id1);
    store_rotate((char *)uuid);
    usleep(REVALIDATE_WAIT_US);

    /* The name means the key: its current version. */
    CU_ASSERT_EQUAL(find_label("aes-rotated", CKO_SECRET_KEY, found), 1);
    CU_ASSERT_NOT_EQUAL(found[0], v1);
    CU_ASSERT_EQUAL(get_ulong(found[0], CKA_HF_VERSION), 2);
    CU_ASSERT(get_bool(found[0], CKA_HF_IS_CURRENT));
    /* The old handle is still the old version, no longer current (the cache saw the change). */
    CU_ASSERT_EQUAL(get_ulong(v1, CKA_HF_VERSION), 1);
    CU_ASSERT_FALSE(get_bool(v1, CKA_HF_IS_CURRENT));
    {
        CK_ATTRIBUTE by_id[] = {{CKA_ID, id1, 16}};
        CK_ATTRIBUTE by_version[] = {{CKA_LABEL, "aes-rotated", 11},
                                     {CKA_HF_VERSION, &one, sizeof(one)}};
        CK_ATTRIBUTE by_key[] = {{CKA_HF_KEY_UUID, uuid, 36}, {CKA_CLASS, &cls, sizeof(cls)}};

        n = find(by_id, N(by_id), found);
        CU_ASSERT(n == 1 && found[0] == v1);
        n = find(by_version, N(by_version), found);
        CU_ASSERT(n == 1 && found[0] == v1);
        CU_ASSERT_EQUAL(find(by_key, N(by_key), found), 2);
    }
    free(uuid);
    free(id1);
}

static void test_find_order_is_stable(void)
{
    CK_OBJECT_HANDLE a[MAX_FOUND], b[MAX_FOUND], one;
    CK_ULONG na = find(NULL, 0, a), nb = 0, got;

    CU_ASSERT_FATAL(na >= 6);
    /* One at a time, as pkcs11-tool walks keys "by index". */
    CU_ASSERT_EQUAL_FATAL(p11->C_FindObjectsInit(sess, NULL, 0), CKR_OK);
    while (p11->C_FindObjects(sess, &one, 1, &got) == CKR_OK && got == 1 && nb < MAX_FOUND)
        b[nb++] = one;
    CU_ASSERT_EQUAL(p11->C_FindObjectsFinal(sess), CKR_OK);
    CU_ASSERT_EQUAL(na, nb);
    CU_ASSERT(memcmp(a, b, na * sizeof(a[0])) == 0);
    /* By version, then face: a private key just before its public key. */
    for (CK_ULONG i = 1; i < na; i++)
        CU_ASSERT(a[i - 1] < a[i]);
}

static void test_find_api_errors(void)
{
    CK_OBJECT_HANDLE h[4];
    CK_ULONG n = 9;
    CK_OBJECT_CLASS data = CKO_DATA, nss_trust = CKO_VENDOR_DEFINED | 0x4e534803;
    CK_ATTRIBUTE td[] = {{CKA_CLASS, &data, sizeof(data)}};
    CK_ATTRIBUTE tn[] = {{CKA_TOKEN, &yes, 1}, {CKA_CLASS, &nss_trust, sizeof(nss_trust)}};
    CK_ATTRIBUTE tv[] = {{CKA_VALUE, h, 16}};

    CU_ASSERT_EQUAL(p11->C_FindObjects(sess, h, 4, &n), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_FindObjectsFinal(sess), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_FindObjectsInit(sess, NULL, 2), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_FindObjectsInit(0x7777, NULL, 0), CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL_FATAL(p11->C_FindObjectsInit(sess, NULL, 0), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_FindObjectsInit(sess, NULL, 0), CKR_OPERATION_ACTIVE);
    CU_ASSERT_EQUAL(p11->C_FindObjects(sess, NULL, 4, &n), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_FindObjects(sess, h, 4, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_FindObjects(sess, h, 0, &n), CKR_OK);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(p11->C_FindObjectsFinal(sess), CKR_OK);
    /* Classes we do not have (NSS asks for its trust objects) match nothing. */
    CU_ASSERT_EQUAL(find(td, N(td), h), 0);
    CU_ASSERT_EQUAL(find(tn, N(tn), h), 0);
    /* Nobody finds a key by guessing its value. */
    CU_ASSERT_EQUAL(find(tv, N(tv), h), 0);
}

/* ---- changes ------------------------------------------------------------------------------- */

static void test_set_attribute_renames_and_changes_state(void)
{
    CK_OBJECT_HANDLE pub, priv, h, found[MAX_FOUND];
    CK_ULONG deactivated = HF_STATE_DEACTIVATED, active = HF_STATE_ACTIVE, len = 0;
    CK_ATTRIBUTE rename[] = {{CKA_LABEL, "ec-renamed", 10}};
    CK_ATTRIBUTE badname[] = {{CKA_LABEL, "bad\tname", 8}};
    CK_ATTRIBUTE readonly[] = {{CKA_SIGN, &no, 1}};
    CK_ATTRIBUTE unknown[] = {{CKA_VENDOR_DEFINED | 7, &no, 1}};
    CK_ATTRIBUTE deact[] = {{CKA_HF_STATE, &deactivated, sizeof(deactivated)}};
    CK_ATTRIBUTE back[] = {{CKA_HF_STATE, &active, sizeof(active)}};
    unsigned char *label, iv[12] = {0};
    CK_GCM_PARAMS gcm = {iv, sizeof(iv), 96, NULL, 0, 128};
    CK_MECHANISM mech = {CKM_AES_GCM, &gcm, sizeof(gcm)};

    CU_ASSERT_EQUAL_FATAL(ec_gen("ec-rename", oid_p256, sizeof(oid_p256), &pub, &priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(sess, priv, badname, 1), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(sess, priv, readonly, 1), CKR_ATTRIBUTE_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(sess, priv, unknown, 1), CKR_ATTRIBUTE_TYPE_INVALID);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(sess, priv, NULL, 1), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(sess, pub, rename, 1), CKR_OK);
    label = get_bytes(priv, CKA_LABEL, &len);
    CU_ASSERT(label && len == 10 && memcmp(label, "ec-renamed", 10) == 0);
    free(label);
    CU_ASSERT_EQUAL(find_label("ec-rename", CKO_PRIVATE_KEY, found), 0);
    CU_ASSERT_EQUAL(find_label("ec-renamed", CKO_PRIVATE_KEY, found), 1);

    /* A deactivated key still verifies and decrypts old data but protects nothing new. */
    CU_ASSERT_EQUAL_FATAL(aes_gen(sess, "aes-retire", 32, false, &h), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(sess, h, deact, 1), CKR_OK);
    CU_ASSERT_EQUAL(get_ulong(h, CKA_HF_STATE), HF_STATE_DEACTIVATED);
    CU_ASSERT_FALSE(get_bool(h, CKA_ENCRYPT));
    CU_ASSERT(get_bool(h, CKA_DECRYPT));
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &mech, h), CKR_KEY_FUNCTION_NOT_PERMITTED);
    /* KMIP states only move forward. */
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(sess, h, back, 1), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(get_ulong(h, CKA_HF_STATE), HF_STATE_DEACTIVATED);
}

static void test_changes_need_rw_session_and_user(void)
{
    CK_SESSION_HANDLE ro;
    CK_ATTRIBUTE rename[] = {{CKA_LABEL, "never", 5}};

    CU_ASSERT_EQUAL_FATAL(p11->C_OpenSession(SLOT, CKF_SERIAL_SESSION, NULL, NULL, &ro), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(ro, rsa_priv, rename, 1), CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(ro, rsa_priv), CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_Logout(sess), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(sess, rsa_pub, rename, 1), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, rsa_pub), CKR_USER_NOT_LOGGED_IN);
    login();
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
}

/* The public object of a pair goes alone; the private one takes the whole key. */
static void test_destroy_object_public_alone_private_the_key(void)
{
    CK_OBJECT_HANDLE pub, priv, found[MAX_FOUND];
    CK_MECHANISM ecdsa = {CKM_ECDSA, NULL, 0};
    unsigned char hash[32] = {1}, sig[64];
    CK_ULONG siglen = sizeof(sig);

    CU_ASSERT_EQUAL_FATAL(ec_gen("ec-doomed", oid_p256, sizeof(oid_p256), &pub, &priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, 0), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(0x7777, pub), CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, pub), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, pub, &(CK_ATTRIBUTE){CKA_CLASS, NULL, 0}, 1),
                    CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, pub), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(find_label("ec-doomed", CKO_PUBLIC_KEY, found), 0);
    CU_ASSERT_EQUAL(find_label("ec-doomed", CKO_PRIVATE_KEY, found), 1);
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &ecdsa, priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, hash, sizeof(hash), sig, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, priv, &(CK_ATTRIBUTE){CKA_CLASS, NULL, 0}, 1),
                    CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, priv), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(find_label("ec-doomed", CKO_PRIVATE_KEY, found), 0);
    CU_ASSERT_EQUAL(find_label("ec-doomed", CKO_PUBLIC_KEY, found), 0);
}

static void test_copy_object_and_object_size(void)
{
    CK_OBJECT_HANDLE h;
    CK_ULONG size = 0;

    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, rsa_priv, NULL, 0, &h), CKR_ACTION_PROHIBITED);
    CU_ASSERT_EQUAL(p11->C_GetObjectSize(sess, rsa_priv, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_GetObjectSize(sess, 0, &size), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetObjectSize(sess, rsa_priv, &size), CKR_OK);
    CU_ASSERT_EQUAL(size, CK_UNAVAILABLE_INFORMATION);
}

/* General PKCS#11 software picks its own labels and ids: any UTF-8 label (spaces, a label
 * another key has), a CKA_ID shared by both faces, each kept, read back and searchable, and
 * changeable with C_SetAttributeValue. */
static void test_caller_label_and_id_are_kept_and_found(void)
{
    static const char label[] = "A key with spaces \xc3\xa9";
    static const unsigned char id[] = {0x42};
    CK_MECHANISM mech = {CKM_EC_KEY_PAIR_GEN, NULL, 0};
    CK_OBJECT_CLASS priv_cls = CKO_PRIVATE_KEY;
    CK_ATTRIBUTE pt[] = {{CKA_TOKEN, &yes, 1},
                         {CKA_EC_PARAMS, (void *)oid_p256, sizeof(oid_p256)},
                         {CKA_LABEL, (void *)label, sizeof(label) - 1},
                         {CKA_ID, (void *)id, sizeof(id)}};
    CK_ATTRIBUTE vt[] = {{CKA_TOKEN, &yes, 1},
                         {CKA_SIGN, &yes, 1},
                         {CKA_LABEL, (void *)label, sizeof(label) - 1},
                         {CKA_ID, (void *)id, sizeof(id)}};
    CK_ATTRIBUTE by_id[] = {{CKA_ID, (void *)id, sizeof(id)},
                            {CKA_CLASS, &priv_cls, sizeof(priv_cls)}};
    CK_ATTRIBUTE relabel[] = {{CKA_LABEL, "another label", 13}, {CKA_ID, "\x43\x44", 2}};
    CK_ATTRIBUTE named[] = {{CKA_LABEL, "ec-named-again", 14}};
    CK_OBJECT_HANDLE pub, priv, again_pub, again_priv, found[MAX_FOUND];
    unsigned char *v;
    CK_ULONG len = 0;

    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKeyPair(sess, &mech, pt, N(pt), vt, N(vt), &pub, &priv),
                          CKR_OK);
    v = get_bytes(priv, CKA_LABEL, &len);
    CU_ASSERT(v && len == sizeof(label) - 1 && memcmp(v, label, len) == 0);
    free(v);
    v = get_bytes(pub, CKA_ID, &len);
    CU_ASSERT(v && len == 1 && v[0] == 0x42);
    free(v);
    CU_ASSERT_EQUAL(find_label(label, CKO_PRIVATE_KEY, found), 1);
    CU_ASSERT_EQUAL(found[0], priv);
    CU_ASSERT_EQUAL(find(by_id, N(by_id), found), 1);
    CU_ASSERT_EQUAL(found[0], priv);
    /* The same label again is another key (PKCS#11 labels need not be unique). */
    CU_ASSERT_EQUAL_FATAL(
        p11->C_GenerateKeyPair(sess, &mech, pt, N(pt), vt, N(vt), &again_pub, &again_priv), CKR_OK);
    CU_ASSERT_EQUAL(find_label(label, CKO_PRIVATE_KEY, found), 2);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, again_priv), CKR_OK);
    /* Relabelled and re-identified: both faces show it, the old values find nothing. */
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(sess, priv, relabel, N(relabel)), CKR_OK);
    v = get_bytes(pub, CKA_LABEL, &len);
    CU_ASSERT(v && len == 13 && memcmp(v, "another label", 13) == 0);
    free(v);
    v = get_bytes(pub, CKA_ID, &len);
    CU_ASSERT(v && len == 2 && memcmp(v, "\x43\x44", 2) == 0);
    free(v);
    CU_ASSERT_EQUAL(find_label(label, CKO_PRIVATE_KEY, found), 0);
    CU_ASSERT_EQUAL(find(by_id, N(by_id), found), 0);
    /* A label that can be a name renames the key and replaces the kept label. */
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(sess, priv, named, 1), CKR_OK);
    CU_ASSERT_EQUAL(find_label("ec-named-again", CKO_PRIVATE_KEY, found), 1);
    CU_ASSERT_EQUAL(find_label("another label", CKO_PRIVATE_KEY, found), 0);
}

/* ---- import -------------------------------------------------------------------------------- */

static void test_create_object_imports_an_aes_key(void)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_BYTE key[32], back[32];
    CK_ATTRIBUTE t[] = {{CKA_CLASS, &cls, sizeof(cls)}, {CKA_KEY_TYPE, &type, sizeof(type)},
                        {CKA_VALUE, key, sizeof(key)},  {CKA_LABEL, "aes-imported", 12},
                        {CKA_EXTRACTABLE, &yes, 1},     {CKA_TOKEN, &yes, 1}};
    CK_ATTRIBUTE v = {CKA_VALUE, back, sizeof(back)};
    CK_OBJECT_HANDLE h;

    for (size_t i = 0; i < sizeof(key); i++)
        key[i] = (CK_BYTE)(i * 7 + 3);
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(sess, t, N(t), &h), CKR_OK);
    CU_ASSERT_EQUAL(get_ulong(h, CKA_VALUE_LEN), 32);
    CU_ASSERT_FALSE(get_bool(h, CKA_LOCAL));
    CU_ASSERT_EQUAL(get_ulong(h, CKA_KEY_GEN_MECHANISM), CK_UNAVAILABLE_INFORMATION);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, h, &v, 1), CKR_OK);
    CU_ASSERT(v.ulValueLen == 32 && memcmp(back, key, 32) == 0);
    /* Made sensitive on import, it is sensitive now, but was not always (it came from outside). */
    t[3].pValue = "aes-imported-2";
    t[3].ulValueLen = 14;
    t[4].pValue = &no;
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(sess, t, N(t), &h), CKR_OK);
    CU_ASSERT_TRUE(get_bool(h, CKA_SENSITIVE));
    CU_ASSERT_FALSE(get_bool(h, CKA_EXTRACTABLE));
    CU_ASSERT_FALSE(get_bool(h, CKA_ALWAYS_SENSITIVE));
    CU_ASSERT_FALSE(get_bool(h, CKA_NEVER_EXTRACTABLE));
}

static void rsa_attr(CK_ATTRIBUTE *a, CK_ATTRIBUTE_TYPE type, EVP_PKEY *pkey, const char *param,
                     unsigned char *buf)
{
    BIGNUM *bn = NULL;

    CU_ASSERT_FATAL(EVP_PKEY_get_bn_param(pkey, param, &bn));
    a->type = type;
    a->pValue = buf;
    a->ulValueLen = (CK_ULONG)BN_bn2bin(bn, buf);
    BN_clear_free(bn);
}

static void test_create_object_imports_an_openssl_rsa_key(void)
{
    static const struct {
        CK_ATTRIBUTE_TYPE type;
        const char *param;
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
    EVP_PKEY *pkey = EVP_RSA_gen(2048);
    CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
    CK_KEY_TYPE type = CKK_RSA;
    CK_ATTRIBUTE t[N(parts) + 3];
    static unsigned char bufs[N(parts)][512];
    CK_OBJECT_HANDLE h, found[MAX_FOUND];
    CK_ULONG len = 0;
    unsigned char *id;

    CU_ASSERT_PTR_NOT_NULL_FATAL(pkey);
    for (size_t i = 0; i < N(parts); i++)
        rsa_attr(&t[i], parts[i].type, pkey, parts[i].param, bufs[i]);
    t[N(parts)] = (CK_ATTRIBUTE){CKA_CLASS, &cls, sizeof(cls)};
    t[N(parts) + 1] = (CK_ATTRIBUTE){CKA_KEY_TYPE, &type, sizeof(type)};
    t[N(parts) + 2] = (CK_ATTRIBUTE){CKA_LABEL, "rsa-imported", 12};

    /* A corrupted CRT part is refused, not stored. */
    bufs[5][3] ^= 0x40;
    CU_ASSERT_EQUAL(p11->C_CreateObject(sess, t, N(t), &h), CKR_ATTRIBUTE_VALUE_INVALID);
    bufs[5][3] ^= 0x40;
    /* Without the CRT parts it is incomplete. */
    CU_ASSERT_EQUAL(p11->C_CreateObject(sess, t + 3, N(t) - 3, &h), CKR_TEMPLATE_INCOMPLETE);

    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(sess, t, N(t), &h), CKR_OK);
    CU_ASSERT_EQUAL(h & 3, 2);
    CU_ASSERT(bn_attr_equals(h, CKA_MODULUS, pkey, OSSL_PKEY_PARAM_RSA_N));
    CU_ASSERT_EQUAL(get_ulong(h, CKA_MODULUS_BITS), 2048);
    CU_ASSERT(get_bool(h, CKA_SENSITIVE));
    /* Its public face is there, found by the same CKA_ID. */
    id = get_bytes(h, CKA_ID, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(id);
    {
        CK_OBJECT_CLASS pubcls = CKO_PUBLIC_KEY;
        CK_ATTRIBUTE q[] = {{CKA_CLASS, &pubcls, sizeof(pubcls)}, {CKA_ID, id, len}};
        CU_ASSERT_EQUAL_FATAL(find(q, N(q), found), 1);
        CU_ASSERT(bn_attr_equals(found[0], CKA_PUBLIC_EXPONENT, pkey, OSSL_PKEY_PARAM_RSA_E));
    }
    free(id);
    OPENSSL_cleanse(bufs, sizeof(bufs));
    EVP_PKEY_free(pkey);
}

static void test_create_object_imports_an_openssl_ec_key(void)
{
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
    CK_KEY_TYPE type = CKK_EC;
    unsigned char priv[32], point[65];
    size_t plen = 0;
    BIGNUM *d = NULL;
    CK_ATTRIBUTE t[] = {{CKA_CLASS, &cls, sizeof(cls)},
                        {CKA_KEY_TYPE, &type, sizeof(type)},
                        {CKA_EC_PARAMS, (void *)oid_p256, sizeof(oid_p256)},
                        {CKA_VALUE, priv, sizeof(priv)},
                        {CKA_LABEL, "ec-imported", 11},
                        {CKA_EXTRACTABLE, &yes, 1}};
    CK_ATTRIBUTE v = {CKA_VALUE, NULL, 0};
    CK_OBJECT_HANDLE h;
    CK_ULONG len = 0;
    unsigned char *ecpt, back[32];

    CU_ASSERT_PTR_NOT_NULL_FATAL(pkey);
    CU_ASSERT_FATAL(EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_PRIV_KEY, &d));
    CU_ASSERT_FATAL(BN_bn2binpad(d, priv, sizeof(priv)) == sizeof(priv));
    CU_ASSERT_FATAL(EVP_PKEY_get_octet_string_param(pkey, OSSL_PKEY_PARAM_PUB_KEY, point,
                                                    sizeof(point), &plen));
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(sess, t, N(t), &h), CKR_OK);
    ecpt = get_bytes(h, CKA_EC_POINT, &len);
    CU_ASSERT(ecpt && len == 67 && memcmp(ecpt + 2, point, 65) == 0);
    free(ecpt);
    /* Exportable: the scalar comes back as it went in. */
    v.pValue = back;
    v.ulValueLen = sizeof(back);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, h, &v, 1), CKR_OK);
    CU_ASSERT(v.ulValueLen == 32 && memcmp(back, priv, 32) == 0);
    BN_clear_free(d);
    OPENSSL_cleanse(priv, sizeof(priv));
    EVP_PKEY_free(pkey);
}

static void test_create_object_errors(void)
{
    CK_OBJECT_CLASS cert = CKO_CERTIFICATE, sec = CKO_SECRET_KEY, pub = CKO_PUBLIC_KEY;
    CK_KEY_TYPE aes = CKK_AES, des = CKK_DES3, rsa = CKK_RSA;
    CK_BYTE key[20] = {0};
    CK_ATTRIBUTE tcert[] = {{CKA_CLASS, &cert, sizeof(cert)}, {CKA_VALUE, key, sizeof(key)}};
    CK_ATTRIBUTE tnocls[] = {{CKA_KEY_TYPE, &aes, sizeof(aes)}, {CKA_VALUE, key, 16}};
    CK_ATTRIBUTE tbadlen[] = {
        {CKA_CLASS, &sec, sizeof(sec)}, {CKA_KEY_TYPE, &aes, sizeof(aes)}, {CKA_VALUE, key, 20}};
    CK_ATTRIBUTE tdes[] = {
        {CKA_CLASS, &sec, sizeof(sec)}, {CKA_KEY_TYPE, &des, sizeof(des)}, {CKA_VALUE, key, 16}};
    CK_ATTRIBUTE tnoval[] = {{CKA_CLASS, &sec, sizeof(sec)}, {CKA_KEY_TYPE, &aes, sizeof(aes)}};
    CK_ATTRIBUTE tpub[] = {{CKA_CLASS, &pub, sizeof(pub)}, {CKA_KEY_TYPE, &rsa, sizeof(rsa)}};
    CK_OBJECT_HANDLE h;

    CU_ASSERT_EQUAL(p11->C_CreateObject(sess, NULL, 0, &h), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_CreateObject(sess, tcert, N(tcert), NULL), CKR_ARGUMENTS_BAD);
    /* A certificate without its CKA_CERTIFICATE_TYPE (test-module-cert-data.c has the rest). */
    CU_ASSERT_EQUAL(p11->C_CreateObject(sess, tcert, N(tcert), &h), CKR_TEMPLATE_INCOMPLETE);
    CU_ASSERT_EQUAL(p11->C_CreateObject(sess, tpub, N(tpub), &h), CKR_TEMPLATE_INCONSISTENT);
    CU_ASSERT_EQUAL(p11->C_CreateObject(sess, tnocls, N(tnocls), &h), CKR_TEMPLATE_INCOMPLETE);
    CU_ASSERT_EQUAL(p11->C_CreateObject(sess, tbadlen, N(tbadlen), &h),
                    CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(p11->C_CreateObject(sess, tdes, N(tdes), &h), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(p11->C_CreateObject(sess, tnoval, N(tnoval), &h), CKR_TEMPLATE_INCOMPLETE);
}

/* ---- across restarts and processes -------------------------------------------------------- */

static void test_handles_survive_finalize_and_initialize(void)
{
    CK_OBJECT_HANDLE before[MAX_FOUND], after[MAX_FOUND];
    CK_ULONG nb = find(NULL, 0, before), na;

    CU_ASSERT_EQUAL_FATAL(p11->C_Finalize(NULL), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_test_module_start(p11, &sess), CKR_OK);
    na = find(NULL, 0, after);
    CU_ASSERT_EQUAL(na, nb);
    CU_ASSERT(memcmp(before, after, nb * sizeof(before[0])) == 0);
    CU_ASSERT_EQUAL(get_ulong(rsa_priv, CKA_CLASS), CKO_PRIVATE_KEY);
}

static void test_store_change_behind_the_module_shows_up(void)
{
    CK_OBJECT_HANDLE h;
    CK_ULONG len = 0;
    unsigned char *uuid;
    struct hf_core *core = NULL;

    CU_ASSERT_EQUAL_FATAL(aes_gen(sess, "aes-elsewhere", 16, false, &h), CKR_OK);
    CU_ASSERT_EQUAL(get_ulong(h, CKA_HF_STATE), HF_STATE_ACTIVE);
    uuid = get_bytes(h, CKA_HF_KEY_UUID, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(uuid);
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_key_set_state(core, (char *)uuid, HF_STATE_COMPROMISED, NULL), CKR_OK);
    hf_core_close(core);
    usleep(REVALIDATE_WAIT_US);
    CU_ASSERT_EQUAL(get_ulong(h, CKA_HF_STATE), HF_STATE_COMPROMISED);
    CU_ASSERT_FALSE(get_bool(h, CKA_ENCRYPT));
    free(uuid);
}

/* One GCM pass under h (encrypt or decrypt); CK_RV of the Init, then of the call. */
static CK_RV gcm_run(bool encrypt, CK_OBJECT_HANDLE h, const unsigned char *in, CK_ULONG in_len,
                     unsigned char *out, CK_ULONG *out_len)
{
    unsigned char iv[12] = {7};
    CK_GCM_PARAMS gcm = {iv, sizeof(iv), 96, NULL, 0, 128};
    CK_MECHANISM mech = {CKM_AES_GCM, &gcm, sizeof(gcm)};
    CK_RV rv = encrypt ? p11->C_EncryptInit(sess, &mech, h) : p11->C_DecryptInit(sess, &mech, h);

    if (rv != CKR_OK) return rv;
    return encrypt ? p11->C_Encrypt(sess, (CK_BYTE_PTR)in, in_len, out, out_len)
                   : p11->C_Decrypt(sess, (CK_BYTE_PTR)in, in_len, out, out_len);
}

/* `holdfast key version ...` in another process: version 1's objects follow its own state. */
static void version_state_elsewhere(const char *key_uuid, unsigned long state)
{
    struct hf_core *core = NULL;

    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_version_set_state(core, key_uuid, 1, state, NULL), CKR_OK);
    hf_core_close(core);
    usleep(REVALIDATE_WAIT_US);
}

static void test_a_version_state_shows_on_its_objects_and_rules_them(void)
{
    static const unsigned char pt[] = "sealed under version 1";
    unsigned char ct[64], back[64];
    CK_ULONG ct_len = sizeof(ct), back_len = sizeof(back), len = 0;
    CK_OBJECT_HANDLE v1, found[MAX_FOUND];
    unsigned char *uuid;

    CU_ASSERT_EQUAL_FATAL(aes_gen(sess, "aes-vstate", 32, false, &v1), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(gcm_run(true, v1, pt, sizeof(pt), ct, &ct_len), CKR_OK);
    uuid = get_bytes(v1, CKA_HF_KEY_UUID, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(uuid);
    store_rotate((char *)uuid);
    version_state_elsewhere((char *)uuid, HF_STATE_DEACTIVATED);

    CU_ASSERT_EQUAL(get_ulong(v1, CKA_HF_STATE), HF_STATE_DEACTIVATED);
    CU_ASSERT_FALSE(get_bool(v1, CKA_ENCRYPT));
    CU_ASSERT(get_bool(v1, CKA_DECRYPT));
    CU_ASSERT_EQUAL(gcm_run(true, v1, pt, sizeof(pt), back, &back_len),
                    CKR_KEY_FUNCTION_NOT_PERMITTED);
    back_len = sizeof(back);
    CU_ASSERT_EQUAL(gcm_run(false, v1, ct, ct_len, back, &back_len), CKR_OK);
    CU_ASSERT(back_len == sizeof(pt) && memcmp(back, pt, sizeof(pt)) == 0);
    /* The key and its current version are untouched. */
    CU_ASSERT_EQUAL_FATAL(find_label("aes-vstate", CKO_SECRET_KEY, found), 1);
    CU_ASSERT_EQUAL(get_ulong(found[0], CKA_HF_STATE), HF_STATE_ACTIVE);
    CU_ASSERT(get_bool(found[0], CKA_ENCRYPT));

    version_state_elsewhere((char *)uuid, HF_STATE_COMPROMISED);
    CU_ASSERT_EQUAL(get_ulong(v1, CKA_HF_STATE), HF_STATE_COMPROMISED);
    back_len = sizeof(back);
    CU_ASSERT_EQUAL(gcm_run(false, v1, ct, ct_len, back, &back_len), CKR_OK);
    CU_ASSERT_EQUAL(gcm_run(true, v1, pt, sizeof(pt), back, &back_len),
                    CKR_KEY_FUNCTION_NOT_PERMITTED);

    version_state_elsewhere((char *)uuid, HF_STATE_DESTROYED);
    back_len = sizeof(back);
    /* Destroyed: the object is gone (a crypto Init names it a key handle). */
    CU_ASSERT_EQUAL(gcm_run(false, v1, ct, ct_len, back, &back_len), CKR_KEY_HANDLE_INVALID);
    {
        CK_ULONG st = 0;
        CK_ATTRIBUTE a = {CKA_HF_STATE, &st, sizeof(st)};
        CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, v1, &a, 1), CKR_OBJECT_HANDLE_INVALID);
    }
    CU_ASSERT_EQUAL(get_ulong(found[0], CKA_HF_STATE), HF_STATE_ACTIVE);
    free(uuid);
}

/* Policy (README, Mechanisms): RSA below 2048 bits, DES, 3DES and MD5 are never offered. */
static void test_weak_algorithms_are_refused_by_policy(void)
{
    static const CK_MECHANISM_TYPE weak[] = {
        CKM_DES_KEY_GEN,  CKM_DES2_KEY_GEN, CKM_DES3_KEY_GEN, CKM_DES_ECB,
        CKM_DES_CBC,      CKM_DES_CBC_PAD,  CKM_DES3_ECB,     CKM_DES3_CBC,
        CKM_DES3_CBC_PAD, CKM_MD5,          CKM_MD5_HMAC,     CKM_MD5_RSA_PKCS,
    };
    static const CK_BYTE f4[] = {1, 0, 1};
    CK_MECHANISM_INFO info;
    CK_OBJECT_HANDLE aes, h, pub, priv;
    CK_ULONG bits = 1024;
    CK_ATTRIBUTE pt[] = {{CKA_MODULUS_BITS, &bits, sizeof(bits)},
                         {CKA_PUBLIC_EXPONENT, (void *)f4, sizeof(f4)},
                         {CKA_TOKEN, &no, 1}};
    CK_MECHANISM rsa = {CKM_RSA_PKCS_KEY_PAIR_GEN, NULL, 0};
    CK_ULONG len = 24;
    CK_ATTRIBUTE des[] = {{CKA_VALUE_LEN, &len, sizeof(len)}};

    for (size_t i = 0; i < N(weak); i++) {
        CK_MECHANISM m = {weak[i], NULL, 0};
        CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(SLOT, weak[i], &info), CKR_MECHANISM_INVALID);
        CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &m, des, N(des), &h), CKR_MECHANISM_INVALID);
    }
    CU_ASSERT_EQUAL_FATAL(aes_gen(sess, "aes-weak-mechs", 32, false, &aes), CKR_OK);
    {
        CK_BYTE iv[8] = {0};
        CK_MECHANISM md5 = {CKM_MD5, NULL, 0}, cbc = {CKM_DES3_CBC, iv, sizeof(iv)};
        CK_MECHANISM hmac = {CKM_MD5_HMAC, NULL, 0}, rsa_md5 = {CKM_MD5_RSA_PKCS, NULL, 0};
        CU_ASSERT_EQUAL(p11->C_DigestInit(sess, &md5), CKR_MECHANISM_INVALID);
        CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &cbc, aes), CKR_MECHANISM_INVALID);
        CU_ASSERT_EQUAL(p11->C_SignInit(sess, &hmac, aes), CKR_MECHANISM_INVALID);
        CU_ASSERT_EQUAL(p11->C_SignInit(sess, &rsa_md5, rsa_priv), CKR_MECHANISM_INVALID);
    }
    /* A 1024-bit modulus is a template value the token refuses, token key or session key. */
    CU_ASSERT_EQUAL(rsa_gen(1024, f4, sizeof(f4), &pub, &priv), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GenerateKeyPair(sess, &rsa, pt, N(pt), NULL, 0, &pub, &priv),
                    CKR_ATTRIBUTE_VALUE_INVALID);
}

static CU_TestInfo object_tests[] = {
    {"an AES key shows its attributes", test_aes_key_shows_its_attributes},
    {"key generation template errors", test_keygen_template_errors},
    {"key generation needs a R/W session and the user", test_keygen_needs_rw_session_and_user},
    {"an RSA pair shares its CKA_ID and shows its public parts",
     test_rsa_pair_shares_its_id_and_shows_public_parts},
    {"RSA key generation template errors", test_rsa_keygen_template_errors},
    {"EC pairs on P-256 and P-384", test_ec_pairs_p256_and_p384},
    {"an exportable value is readable and audited", test_exportable_value_is_readable_and_audited},
    {"C_GetAttributeValue processes every attribute",
     test_get_attribute_value_processes_every_attribute},
    {"private objects are invisible before login", test_private_objects_are_invisible_before_login},
    {"CKA_LABEL finds the current version, CKA_ID any",
     test_label_finds_the_current_version_id_finds_any},
    {"the find order is stable", test_find_order_is_stable},
    {"find API errors", test_find_api_errors},
    {"C_SetAttributeValue renames and changes state", test_set_attribute_renames_and_changes_state},
    {"a caller's label and id are kept and found", test_caller_label_and_id_are_kept_and_found},
    {"changes need a R/W session and the user", test_changes_need_rw_session_and_user},
    {"C_DestroyObject: a public object alone, a private one the key",
     test_destroy_object_public_alone_private_the_key},
    {"C_CopyObject and C_GetObjectSize", test_copy_object_and_object_size},
    {"C_CreateObject imports an AES key", test_create_object_imports_an_aes_key},
    {"C_CreateObject imports an OpenSSL RSA key", test_create_object_imports_an_openssl_rsa_key},
    {"C_CreateObject imports an OpenSSL EC key", test_create_object_imports_an_openssl_ec_key},
    {"C_CreateObject errors", test_create_object_errors},
    {"handles survive C_Finalize and C_Initialize", test_handles_survive_finalize_and_initialize},
    {"a store change behind the module shows up", test_store_change_behind_the_module_shows_up},
    {"RSA below 2048 bits, DES, 3DES and MD5 are refused by policy",
     test_weak_algorithms_are_refused_by_policy},
    {"a version's state shows on its objects and rules them",
     test_a_version_state_shows_on_its_objects_and_rules_them},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    CU_SuiteInfo suites[] = {
        {"module-objects", suite_init, suite_clean, NULL, NULL, object_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
