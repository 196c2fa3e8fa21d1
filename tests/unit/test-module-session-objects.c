/* Session objects (CKA_TOKEN FALSE) through the built holdfast-pkcs11.so: AES, RSA and EC keys
 * made or imported in R/O and R/W sessions, with and without login (private ones need it), used
 * by the module's mechanisms (OAEP decrypt of OpenSSL's ciphertext, PSS and ECDSA signatures that
 * OpenSSL verifies, AES-GCM), found, changed, destroyed; gone when the session that made them
 * closes (not another), at logout (the private ones), C_CloseAllSessions and C_Finalize;
 * audited under a marker; the token-object rules unchanged; two threads making, using and
 * destroying them at once. */
#include "hf-build.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include "harness.h"
#include "module-loader.h"
#include "pkcs11/core/core.h"

#define SLOT 1
#define RO CKF_SERIAL_SESSION
#define RW (CKF_SERIAL_SESSION | CKF_RW_SESSION)
#define MAX_FOUND 256
#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;
static CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
static CK_OBJECT_CLASS secret_cls = CKO_SECRET_KEY, priv_cls = CKO_PRIVATE_KEY,
                       pub_cls = CKO_PUBLIC_KEY;
static CK_KEY_TYPE aes_type = CKK_AES, rsa_type = CKK_RSA, ec_type = CKK_EC;
static const unsigned char oid_p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48,
                                         0xce, 0x3d, 0x03, 0x01, 0x07};

/* An OpenSSL RSA key and its components as a C_CreateObject template, made once (slow). */
static EVP_PKEY *rsa_key;
static unsigned char rsa_bufs[8][512];
static CK_ATTRIBUTE rsa_parts[8];

/* ---- helpers ------------------------------------------------------------------------------- */

static CK_SESSION_HANDLE open_session(CK_FLAGS flags)
{
    CK_SESSION_HANDLE s = CK_INVALID_HANDLE;

    CU_ASSERT_EQUAL(p11->C_OpenSession(SLOT, flags, NULL, NULL, &s), CKR_OK);
    return s;
}

static CK_RV login(CK_SESSION_HANDLE s)
{
    return p11->C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)HF_TEST_USER_PIN, strlen(HF_TEST_USER_PIN));
}

/* Logged in (or out) whatever the state was: login is the application's. */
static void ensure_login(CK_SESSION_HANDLE s, bool in)
{
    CK_RV rv = in ? login(s) : p11->C_Logout(s);

    CU_ASSERT(rv == CKR_OK || rv == (in ? CKR_USER_ALREADY_LOGGED_IN : CKR_USER_NOT_LOGGED_IN));
}

static CK_RV aes_session_key(CK_SESSION_HANDLE s, const char *label, const CK_BBOOL *private,
                             CK_OBJECT_HANDLE *h)
{
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 32;
    CK_ATTRIBUTE t[] = {
        {CKA_CLASS, &secret_cls, sizeof(secret_cls)}, {CKA_KEY_TYPE, &aes_type, sizeof(aes_type)},
        {CKA_VALUE_LEN, &len, sizeof(len)},           {CKA_TOKEN, &no, 1},
        {CKA_LABEL, (void *)label, strlen(label)},    {CKA_PRIVATE, (void *)private, 1},
    };

    return p11->C_GenerateKey(s, &mech, t, private ? N(t) : N(t) - 1, h);
}

static CK_ULONG get_ulong(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type)
{
    CK_ULONG v = 0xdeadbeef;
    CK_ATTRIBUTE a = {type, &v, sizeof(v)};

    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(s, h, &a, 1), CKR_OK);
    return v;
}

static int get_bool(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type)
{
    CK_BBOOL v = 0x55;
    CK_ATTRIBUTE a = {type, &v, sizeof(v)};

    if (p11->C_GetAttributeValue(s, h, &a, 1) != CKR_OK) return -1;
    return v == CK_TRUE;
}

/* Whether the attribute reads exactly want. */
static bool attr_is(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type,
                    const void *want, CK_ULONG want_len)
{
    unsigned char buf[512];
    CK_ATTRIBUTE a = {type, buf, sizeof(buf)};

    return p11->C_GetAttributeValue(s, h, &a, 1) == CKR_OK && a.ulValueLen == want_len &&
           memcmp(buf, want, want_len) == 0;
}

static bool exists(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h)
{
    CK_OBJECT_CLASS cls;
    CK_ATTRIBUTE a = {CKA_CLASS, &cls, sizeof(cls)};
    CK_RV rv = p11->C_GetAttributeValue(s, h, &a, 1);

    CU_ASSERT(rv == CKR_OK || rv == CKR_OBJECT_HANDLE_INVALID);
    return rv == CKR_OK;
}

static CK_ULONG find(CK_SESSION_HANDLE s, CK_ATTRIBUTE *t, CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    CK_ULONG count = 0;

    CU_ASSERT_EQUAL_FATAL(p11->C_FindObjectsInit(s, t, n), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_FindObjects(s, out, MAX_FOUND, &count), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_FindObjectsFinal(s), CKR_OK);
    return count;
}

static bool found_has(const CK_OBJECT_HANDLE *found, CK_ULONG n, CK_OBJECT_HANDLE h)
{
    for (CK_ULONG i = 0; i < n; i++)
        if (found[i] == h) return true;
    return false;
}

/* GCM: encrypt with enc, decrypt with dec in session s, and compare. */
static CK_RV gcm_across(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE enc, CK_OBJECT_HANDLE dec)
{
    unsigned char iv[12] = {1, 2, 3}, pt[] = "session object", ct[64], back[64];
    CK_GCM_PARAMS gp = {iv, sizeof(iv), 96, NULL, 0, 128};
    CK_MECHANISM m = {CKM_AES_GCM, &gp, sizeof(gp)};
    CK_ULONG ctlen = sizeof(ct), backlen = sizeof(back);
    CK_RV rv;

    if ((rv = p11->C_EncryptInit(s, &m, enc)) != CKR_OK) return rv;
    if ((rv = p11->C_Encrypt(s, pt, sizeof(pt), ct, &ctlen)) != CKR_OK) return rv;
    if ((rv = p11->C_DecryptInit(s, &m, dec)) != CKR_OK) return rv;
    if ((rv = p11->C_Decrypt(s, ct, ctlen, back, &backlen)) != CKR_OK) return rv;
    return backlen == sizeof(pt) && memcmp(back, pt, backlen) == 0 ? CKR_OK : CKR_GENERAL_ERROR;
}

/* An AES-GCM round trip through key h. */
static CK_RV gcm_round_trip(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h)
{
    return gcm_across(s, h, h);
}

/* The RSA private key template with CKA_TOKEN FALSE and the given label (t holds 12). */
static CK_ULONG rsa_template(CK_ATTRIBUTE *t, const char *label, const void *id, CK_ULONG id_len)
{
    CK_ULONG n = 0;

    for (size_t i = 0; i < N(rsa_parts); i++)
        t[n++] = rsa_parts[i];
    t[n++] = (CK_ATTRIBUTE){CKA_CLASS, &priv_cls, sizeof(priv_cls)};
    t[n++] = (CK_ATTRIBUTE){CKA_KEY_TYPE, &rsa_type, sizeof(rsa_type)};
    t[n++] = (CK_ATTRIBUTE){CKA_TOKEN, &no, 1};
    t[n++] = (CK_ATTRIBUTE){CKA_LABEL, (void *)label, strlen(label)};
    if (id) t[n++] = (CK_ATTRIBUTE){CKA_ID, (void *)id, id_len};
    return n;
}

static bool audit_line_has(const char *a, const char *b, const char *c)
{
    char line[4096];
    FILE *f = fopen(env.cfg.audit_path, "r");
    bool found = false;

    if (!f) return false;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, a) && (!b || strstr(line, b)) && (!c || strstr(line, c));
    fclose(f);
    return found;
}

/* ---- suite --------------------------------------------------------------------------------- */

static int suite_init(void)
{
    static const char *const params[] = {
        OSSL_PKEY_PARAM_RSA_N,         OSSL_PKEY_PARAM_RSA_E,
        OSSL_PKEY_PARAM_RSA_D,         OSSL_PKEY_PARAM_RSA_FACTOR1,
        OSSL_PKEY_PARAM_RSA_FACTOR2,   OSSL_PKEY_PARAM_RSA_EXPONENT1,
        OSSL_PKEY_PARAM_RSA_EXPONENT2, OSSL_PKEY_PARAM_RSA_COEFFICIENT1};
    static const CK_ATTRIBUTE_TYPE types[] = {
        CKA_MODULUS, CKA_PUBLIC_EXPONENT, CKA_PRIVATE_EXPONENT, CKA_PRIME_1,
        CKA_PRIME_2, CKA_EXPONENT_1,      CKA_EXPONENT_2,       CKA_COEFFICIENT};

    if (hf_test_env_setup(&env, NULL) != 0) return -1;
    if (hf_test_module_load(&mod) != 0) return -1;
    p11 = mod.p11;
    if (p11->C_Initialize(NULL) != CKR_OK) return -1;
    if (!(rsa_key = EVP_RSA_gen(2048))) return -1;
    for (size_t i = 0; i < N(params); i++) {
        BIGNUM *bn = NULL;
        if (!EVP_PKEY_get_bn_param(rsa_key, params[i], &bn)) return -1;
        rsa_parts[i] = (CK_ATTRIBUTE){types[i], rsa_bufs[i], (CK_ULONG)BN_bn2bin(bn, rsa_bufs[i])};
        BN_clear_free(bn);
    }
    return 0;
}

static int suite_clean(void)
{
    if (p11) p11->C_Finalize(NULL);
    OPENSSL_cleanse(rsa_bufs, sizeof(rsa_bufs));
    EVP_PKEY_free(rsa_key);
    hf_test_module_unload(&mod);
    hf_test_env_teardown(&env);
    return 0;
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_aes_session_key_in_a_read_only_session(void)
{
    CK_SESSION_HANDLE ro = open_session(RO), rw = open_session(RW);
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 32;
    unsigned char id[] = {0x42, 0x00, 0x17};
    CK_ATTRIBUTE t[] = {{CKA_VALUE_LEN, &len, sizeof(len)},
                        {CKA_TOKEN, &no, 1},
                        {CKA_LABEL, "A key with spaces", 17},
                        {CKA_ID, id, sizeof(id)}};
    CK_ATTRIBUTE token[] = {{CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_TOKEN, &yes, 1}};
    unsigned char value[32];
    CK_ATTRIBUTE secret = {CKA_VALUE, value, sizeof(value)};
    CK_ATTRIBUTE uuid = {CKA_HF_KEY_UUID, NULL, 0};
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE, th;

    ensure_login(ro, true);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(ro, &mech, t, N(t), &h), CKR_OK);
    /* Their own handle range: no token handle has this bit. */
    CU_ASSERT((h & ((CK_OBJECT_HANDLE)1 << (sizeof(CK_OBJECT_HANDLE) * 8 - 2))) != 0);
    CU_ASSERT_EQUAL(get_bool(ro, h, CKA_TOKEN), 0);
    CU_ASSERT_EQUAL(get_bool(ro, h, CKA_PRIVATE), 1);
    CU_ASSERT_EQUAL(get_bool(ro, h, CKA_LOCAL), 1);
    CU_ASSERT_EQUAL(get_ulong(ro, h, CKA_CLASS), CKO_SECRET_KEY);
    CU_ASSERT_EQUAL(get_ulong(ro, h, CKA_VALUE_LEN), 32);
    CU_ASSERT(attr_is(ro, h, CKA_LABEL, "A key with spaces", 17));
    CU_ASSERT(attr_is(ro, h, CKA_ID, id, sizeof(id)));
    /* Sensitive by default, as token keys; no vendor attributes (no managed key behind it). */
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(ro, h, &secret, 1), CKR_ATTRIBUTE_SENSITIVE);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(ro, h, &uuid, 1), CKR_ATTRIBUTE_TYPE_INVALID);
    CU_ASSERT_EQUAL(gcm_round_trip(ro, h), CKR_OK);
    /* Every session of the application sees and uses it. */
    CU_ASSERT_EQUAL(gcm_round_trip(rw, h), CKR_OK);
    /* A token object still needs a R/W session. */
    CU_ASSERT_EQUAL(p11->C_GenerateKey(ro, &mech, token, N(token), &th), CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
    CU_ASSERT_FALSE(exists(rw, h));
    CU_ASSERT_EQUAL(p11->C_CloseSession(rw), CKR_OK);
}

static void test_rsa_import_decrypts_oaep_and_signs_pss(void)
{
    CK_SESSION_HANDLE ro = open_session(RO);
    CK_ATTRIBUTE t[16], pub_t[6];
    CK_ULONG n = rsa_template(t, "rsa session", "\x01\x02", 2), siglen, ptlen;
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE, pub = CK_INVALID_HANDLE;
    CK_RSA_PKCS_OAEP_PARAMS op = {CKM_SHA256, CKG_MGF1_SHA256, CKZ_DATA_SPECIFIED, NULL, 0};
    CK_MECHANISM oaep = {CKM_RSA_PKCS_OAEP, &op, sizeof(op)};
    CK_RSA_PKCS_PSS_PARAMS pp = {CKM_SHA256, CKG_MGF1_SHA256, 32};
    CK_MECHANISM pss = {CKM_SHA256_RSA_PKCS_PSS, &pp, sizeof(pp)};
    unsigned char msg[] = "a Gmail message key", ct[256], pt[256], sig[256];
    size_t ctlen = sizeof(ct);
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new(rsa_key, NULL);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *vc = NULL;

    ensure_login(ro, true);
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(ro, t, n, &h), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(ro, h, CKA_TOKEN), 0);
    CU_ASSERT_EQUAL(get_bool(ro, h, CKA_LOCAL), 0);
    CU_ASSERT_EQUAL(get_bool(ro, h, CKA_ALWAYS_SENSITIVE), 0);
    CU_ASSERT_EQUAL(get_ulong(ro, h, CKA_MODULUS_BITS), 2048);
    CU_ASSERT(attr_is(ro, h, CKA_MODULUS, rsa_parts[0].pValue, rsa_parts[0].ulValueLen));
    /* OpenSSL encrypts, the session object decrypts. */
    CU_ASSERT_FATAL(c && EVP_PKEY_encrypt_init(c) > 0 &&
                    EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_OAEP_PADDING) > 0 &&
                    EVP_PKEY_CTX_set_rsa_oaep_md(c, EVP_sha256()) > 0 &&
                    EVP_PKEY_CTX_set_rsa_mgf1_md(c, EVP_sha256()) > 0 &&
                    EVP_PKEY_encrypt(c, ct, &ctlen, msg, sizeof(msg)) > 0);
    CU_ASSERT_EQUAL_FATAL(p11->C_DecryptInit(ro, &oaep, h), CKR_OK);
    ptlen = sizeof(pt);
    CU_ASSERT_EQUAL(p11->C_Decrypt(ro, ct, (CK_ULONG)ctlen, pt, &ptlen), CKR_OK);
    CU_ASSERT(ptlen == sizeof(msg) && memcmp(pt, msg, ptlen) == 0);
    /* The session object signs, OpenSSL verifies. */
    CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(ro, &pss, h), CKR_OK);
    siglen = sizeof(sig);
    CU_ASSERT_EQUAL(p11->C_Sign(ro, msg, sizeof(msg), sig, &siglen), CKR_OK);
    CU_ASSERT_FATAL(md && EVP_DigestVerifyInit(md, &vc, EVP_sha256(), NULL, rsa_key) > 0 &&
                    EVP_PKEY_CTX_set_rsa_padding(vc, RSA_PKCS1_PSS_PADDING) > 0 &&
                    EVP_PKEY_CTX_set_rsa_pss_saltlen(vc, 32) > 0);
    CU_ASSERT_EQUAL(EVP_DigestVerify(md, sig, siglen, msg, sizeof(msg)), 1);
    /* A lone public key as a session object verifies it too, and refuses a forgery. */
    pub_t[0] = (CK_ATTRIBUTE){CKA_CLASS, &pub_cls, sizeof(pub_cls)};
    pub_t[1] = (CK_ATTRIBUTE){CKA_KEY_TYPE, &rsa_type, sizeof(rsa_type)};
    pub_t[2] = (CK_ATTRIBUTE){CKA_TOKEN, &no, 1};
    pub_t[3] = rsa_parts[0];
    pub_t[4] = rsa_parts[1];
    CU_ASSERT_EQUAL(p11->C_CreateObject(ro, pub_t, 5, &pub), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(ro, pub, CKA_PRIVATE), 0);
    CU_ASSERT_EQUAL_FATAL(p11->C_VerifyInit(ro, &pss, pub), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Verify(ro, msg, sizeof(msg), sig, siglen), CKR_OK);
    sig[10] ^= 1;
    CU_ASSERT_EQUAL_FATAL(p11->C_VerifyInit(ro, &pss, pub), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Verify(ro, msg, sizeof(msg), sig, siglen), CKR_SIGNATURE_INVALID);
    /* As a token object, a lone public key still has no place. */
    pub_t[2] = (CK_ATTRIBUTE){CKA_TOKEN, &yes, 1};
    {
        CK_SESSION_HANDLE rw = open_session(RW);
        CU_ASSERT_EQUAL(p11->C_CreateObject(rw, pub_t, 5, &pub), CKR_TEMPLATE_INCONSISTENT);
        CU_ASSERT_EQUAL(p11->C_CloseSession(rw), CKR_OK);
    }
    EVP_MD_CTX_free(md);
    EVP_PKEY_CTX_free(c);
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
}

/* OpenSSL's verdict on an r || s ECDSA signature over hash by the public key in spki. */
static bool openssl_ecdsa_verifies(const unsigned char *spki, long spki_len,
                                   const unsigned char *hash, const unsigned char *rs)
{
    const unsigned char *p = spki;
    EVP_PKEY *pkey = d2i_PUBKEY(NULL, &p, spki_len);
    EVP_PKEY_CTX *c = pkey ? EVP_PKEY_CTX_new(pkey, NULL) : NULL;
    ECDSA_SIG *sig = ECDSA_SIG_new();
    unsigned char *der = NULL;
    int der_len = 0;
    bool ok = false;

    if (c && sig && ECDSA_SIG_set0(sig, BN_bin2bn(rs, 32, NULL), BN_bin2bn(rs + 32, 32, NULL)))
        der_len = i2d_ECDSA_SIG(sig, &der);
    if (der_len > 0 && EVP_PKEY_verify_init(c) > 0)
        ok = EVP_PKEY_verify(c, der, (size_t)der_len, hash, 32) == 1;
    OPENSSL_free(der);
    ECDSA_SIG_free(sig);
    EVP_PKEY_CTX_free(c);
    EVP_PKEY_free(pkey);
    return ok;
}

static void test_ec_session_pair_signs_and_verifies(void)
{
    CK_SESSION_HANDLE rw = open_session(RW);
    CK_MECHANISM gen = {CKM_EC_KEY_PAIR_GEN, NULL, 0}, ecdsa = {CKM_ECDSA, NULL, 0};
    CK_ATTRIBUTE pt[] = {{CKA_EC_PARAMS, (void *)oid_p256, sizeof(oid_p256)},
                         {CKA_TOKEN, &no, 1},
                         {CKA_LABEL, "ec pair", 7}};
    CK_ATTRIBUTE vt[] = {{CKA_TOKEN, &no, 1}, {CKA_ID, "\x42", 1}};
    CK_ATTRIBUTE mixed[] = {{CKA_TOKEN, &yes, 1}};
    CK_OBJECT_HANDLE pub = 0, priv = 0;
    unsigned char hash[32], sig[64], spki[256];
    CK_ATTRIBUTE info = {CKA_PUBLIC_KEY_INFO, spki, sizeof(spki)};
    CK_ULONG siglen = sizeof(sig);

    ensure_login(rw, true);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKeyPair(rw, &gen, pt, N(pt), vt, N(vt), &pub, &priv),
                          CKR_OK);
    CU_ASSERT_NOT_EQUAL(pub, priv);
    CU_ASSERT_EQUAL(get_bool(rw, pub, CKA_TOKEN), 0);
    CU_ASSERT_EQUAL(get_bool(rw, priv, CKA_TOKEN), 0);
    CU_ASSERT_EQUAL(get_bool(rw, pub, CKA_PRIVATE), 0);
    CU_ASSERT_EQUAL(get_bool(rw, priv, CKA_PRIVATE), 1);
    /* Each template's label and id; the one a template lacks comes from the other. */
    CU_ASSERT(attr_is(rw, priv, CKA_LABEL, "ec pair", 7));
    CU_ASSERT(attr_is(rw, pub, CKA_ID, "\x42", 1));
    CU_ASSERT(attr_is(rw, priv, CKA_EC_PARAMS, oid_p256, sizeof(oid_p256)));
    SHA256((const unsigned char *)"data", 4, hash);
    CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(rw, &ecdsa, priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Sign(rw, hash, sizeof(hash), sig, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(siglen, 64);
    CU_ASSERT_EQUAL_FATAL(p11->C_GetAttributeValue(rw, pub, &info, 1), CKR_OK);
    CU_ASSERT(openssl_ecdsa_verifies(spki, (long)info.ulValueLen, hash, sig));
    CU_ASSERT_EQUAL_FATAL(p11->C_VerifyInit(rw, &ecdsa, pub), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Verify(rw, hash, sizeof(hash), sig, siglen), CKR_OK);
    /* A public face never signs. */
    CU_ASSERT_EQUAL(p11->C_SignInit(rw, &ecdsa, pub), CKR_KEY_FUNCTION_NOT_PERMITTED);
    /* Half a pair on the token is no pair. */
    CU_ASSERT_EQUAL(p11->C_GenerateKeyPair(rw, &gen, pt, N(pt), mixed, N(mixed), &pub, &priv),
                    CKR_TEMPLATE_INCONSISTENT);
    CU_ASSERT_EQUAL(p11->C_CloseSession(rw), CKR_OK);
}

static void test_ec_import_signs_for_openssl(void)
{
    CK_SESSION_HANDLE ro = open_session(RO);
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    BIGNUM *d = NULL;
    unsigned char value[32], hash[32], sig[64], *spki = NULL;
    CK_MECHANISM ecdsa = {CKM_ECDSA, NULL, 0};
    CK_ATTRIBUTE t[] = {{CKA_CLASS, &priv_cls, sizeof(priv_cls)},
                        {CKA_KEY_TYPE, &ec_type, sizeof(ec_type)},
                        {CKA_TOKEN, &no, 1},
                        {CKA_EC_PARAMS, (void *)oid_p256, sizeof(oid_p256)},
                        {CKA_VALUE, value, sizeof(value)}};
    CK_OBJECT_HANDLE h = 0;
    CK_ULONG siglen = sizeof(sig);
    int spki_len;

    CU_ASSERT_FATAL(pkey && EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_PRIV_KEY, &d));
    CU_ASSERT_FATAL(BN_bn2binpad(d, value, sizeof(value)) == sizeof(value));
    ensure_login(ro, true);
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(ro, t, N(t), &h), CKR_OK);
    SHA256((const unsigned char *)"imported", 8, hash);
    CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(ro, &ecdsa, h), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Sign(ro, hash, sizeof(hash), sig, &siglen), CKR_OK);
    spki_len = i2d_PUBKEY(pkey, &spki);
    CU_ASSERT(openssl_ecdsa_verifies(spki, spki_len, hash, sig));
    OPENSSL_free(spki);
    OPENSSL_cleanse(value, sizeof(value));
    BN_clear_free(d);
    EVP_PKEY_free(pkey);
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
}

static void test_session_keys_wrap_and_unwrap(void)
{
    CK_SESSION_HANDLE ro = open_session(RO);
    CK_MECHANISM gen = {CKM_AES_KEY_GEN, NULL, 0}, kw = {CKM_AES_KEY_WRAP_PAD, NULL, 0};
    CK_ULONG len = 32;
    CK_ATTRIBUTE kek_t[] = {{CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_TOKEN, &no, 1}};
    CK_ATTRIBUTE key_t[] = {
        {CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_TOKEN, &no, 1}, {CKA_EXTRACTABLE, &yes, 1}};
    CK_ATTRIBUTE sealed_t[] = {{CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_TOKEN, &no, 1}};
    CK_ATTRIBUTE unwrap_t[] = {{CKA_CLASS, &secret_cls, sizeof(secret_cls)},
                               {CKA_KEY_TYPE, &aes_type, sizeof(aes_type)},
                               {CKA_TOKEN, &no, 1}};
    CK_OBJECT_HANDLE kek = 0, key = 0, sealed = 0, back = 0;
    unsigned char wrapped[64];
    CK_ULONG wlen = sizeof(wrapped);

    ensure_login(ro, true);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(ro, &gen, kek_t, N(kek_t), &kek), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(ro, &gen, key_t, N(key_t), &key), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(ro, &gen, sealed_t, N(sealed_t), &sealed), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(ro, key, CKA_EXTRACTABLE), 1);
    CU_ASSERT_EQUAL(p11->C_WrapKey(ro, &kw, kek, sealed, wrapped, &wlen), CKR_KEY_UNEXTRACTABLE);
    wlen = sizeof(wrapped);
    CU_ASSERT_EQUAL_FATAL(p11->C_WrapKey(ro, &kw, kek, key, wrapped, &wlen), CKR_OK);
    /* Unwrapped in a R/O session, as a session object again: the same key. */
    CU_ASSERT_EQUAL_FATAL(
        p11->C_UnwrapKey(ro, &kw, kek, wrapped, wlen, unwrap_t, N(unwrap_t), &back), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(ro, back, CKA_TOKEN), 0);
    CU_ASSERT_EQUAL(get_bool(ro, back, CKA_LOCAL), 0);
    CU_ASSERT_EQUAL(gcm_across(ro, key, back), CKR_OK);
    CU_ASSERT_EQUAL(gcm_across(ro, sealed, back), CKR_ENCRYPTED_DATA_INVALID);
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
}

static void test_login_rules_and_logout(void)
{
    CK_SESSION_HANDLE ro = open_session(RO), rw = open_session(RW);
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 16;
    CK_ATTRIBUTE token[] = {{CKA_VALUE_LEN, &len, sizeof(len)}};
    CK_OBJECT_HANDLE pub_key = 0, priv_key = 0, th;
    CK_ATTRIBUTE t[16];
    CK_ULONG n = rsa_template(t, "needs login", NULL, 0);

    ensure_login(ro, false);
    /* Without login: a private session object (the default for a secret key) is refused, a
     * public one is made and used. */
    CU_ASSERT_EQUAL(aes_session_key(ro, "private", NULL, &th), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(aes_session_key(ro, "private", &yes, &th), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(p11->C_CreateObject(ro, t, n, &th), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL_FATAL(aes_session_key(ro, "public", &no, &pub_key), CKR_OK);
    CU_ASSERT_EQUAL(gcm_round_trip(ro, pub_key), CKR_OK);
    /* Token objects: R/W and the user, as before. */
    CU_ASSERT_EQUAL(p11->C_GenerateKey(rw, &mech, token, N(token), &th), CKR_USER_NOT_LOGGED_IN);
    ensure_login(ro, true);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(ro, &mech, token, N(token), &th), CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL_FATAL(aes_session_key(ro, "private", NULL, &priv_key), CKR_OK);
    CU_ASSERT_TRUE(exists(rw, priv_key));
    /* Logout destroys the private ones (they do not come back with the next login) and keeps
     * the public ones. */
    CU_ASSERT_EQUAL(p11->C_Logout(rw), CKR_OK);
    CU_ASSERT_FALSE(exists(ro, priv_key));
    CU_ASSERT_TRUE(exists(ro, pub_key));
    ensure_login(ro, true);
    CU_ASSERT_FALSE(exists(ro, priv_key));
    CU_ASSERT_TRUE(audit_line_has("\"op\":\"object.destroy\"", "logout", NULL));
    CU_ASSERT_EQUAL(p11->C_CloseSession(rw), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
}

static void test_other_sessions_see_them_until_the_maker_closes(void)
{
    CK_SESSION_HANDLE a = open_session(RO), b = open_session(RO);
    CK_OBJECT_HANDLE priv_key = 0, pub_key = 0, found[MAX_FOUND];
    CK_ATTRIBUTE by_label[] = {{CKA_LABEL, "hide-me", 7}};
    CK_ULONG n;

    ensure_login(a, true);
    CU_ASSERT_EQUAL_FATAL(aes_session_key(a, "hide-me", NULL, &priv_key), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(aes_session_key(a, "hide-me", &no, &pub_key), CKR_OK);
    n = find(b, by_label, N(by_label), found);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT(found_has(found, n, priv_key) && found_has(found, n, pub_key));
    CU_ASSERT_EQUAL(p11->C_CloseSession(a), CKR_OK);
    CU_ASSERT_FALSE(exists(b, priv_key));
    CU_ASSERT_FALSE(exists(b, pub_key));
    CU_ASSERT_EQUAL(find(b, by_label, N(by_label), found), 0);
    CU_ASSERT_EQUAL(p11->C_CloseSession(b), CKR_OK);
}

static void test_find_with_and_without_cka_token(void)
{
    CK_SESSION_HANDLE rw = open_session(RW);
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 16;
    CK_ATTRIBUTE token_t[] = {{CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_LABEL, "find-token", 10}};
    CK_ATTRIBUTE any[] = {{CKA_CLASS, &secret_cls, sizeof(secret_cls)}};
    CK_ATTRIBUTE sess_only[] = {{CKA_CLASS, &secret_cls, sizeof(secret_cls)}, {CKA_TOKEN, &no, 1}};
    CK_ATTRIBUTE token_only[] = {{CKA_CLASS, &secret_cls, sizeof(secret_cls)},
                                 {CKA_TOKEN, &yes, 1}};
    CK_ATTRIBUTE by_label[] = {{CKA_LABEL, "find-session", 12}};
    CK_OBJECT_HANDLE tk = 0, sk = 0, found[MAX_FOUND];
    CK_ULONG n;

    ensure_login(rw, true);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(rw, &mech, token_t, N(token_t), &tk), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(aes_session_key(rw, "find-session", NULL, &sk), CKR_OK);
    n = find(rw, any, N(any), found);
    CU_ASSERT(found_has(found, n, tk) && found_has(found, n, sk));
    n = find(rw, sess_only, N(sess_only), found);
    CU_ASSERT(found_has(found, n, sk) && !found_has(found, n, tk));
    n = find(rw, token_only, N(token_only), found);
    CU_ASSERT(!found_has(found, n, sk) && found_has(found, n, tk));
    n = find(rw, by_label, N(by_label), found);
    CU_ASSERT(n == 1 && found[0] == sk);
    ensure_login(rw, false);
    CU_ASSERT_EQUAL(find(rw, sess_only, N(sess_only), found), 0);
    CU_ASSERT_EQUAL(p11->C_CloseSession(rw), CKR_OK);
}

static void test_close_of_another_session_keeps_them(void)
{
    CK_SESSION_HANDLE maker = open_session(RO), other = open_session(RO);
    CK_OBJECT_HANDLE h = 0;

    ensure_login(maker, true);
    CU_ASSERT_EQUAL_FATAL(aes_session_key(maker, "kept", NULL, &h), CKR_OK);
    CU_ASSERT_EQUAL(gcm_round_trip(other, h), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(other), CKR_OK);
    CU_ASSERT_TRUE(exists(maker, h));
    CU_ASSERT_EQUAL(gcm_round_trip(maker, h), CKR_OK);
    other = open_session(RO);
    CU_ASSERT_EQUAL(p11->C_CloseSession(maker), CKR_OK);
    ensure_login(other, true);
    CU_ASSERT_FALSE(exists(other, h));
    CU_ASSERT_EQUAL(gcm_round_trip(other, h), CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_CloseSession(other), CKR_OK);
}

static void test_destroy_and_set_attributes(void)
{
    CK_SESSION_HANDLE ro = open_session(RO);
    CK_OBJECT_HANDLE h = 0;
    CK_ATTRIBUTE change[] = {{CKA_LABEL, "renamed key", 11}, {CKA_ID, "\x09\x08", 2}};
    CK_ATTRIBUTE ro_attr[] = {{CKA_ENCRYPT, &no, 1}};
    CK_ATTRIBUTE bad[] = {{CKA_HF_STATE, &no, 1}};

    ensure_login(ro, true);
    CU_ASSERT_EQUAL_FATAL(aes_session_key(ro, "to-destroy", NULL, &h), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(ro, h, change, N(change)), CKR_OK);
    CU_ASSERT(attr_is(ro, h, CKA_LABEL, "renamed key", 11));
    CU_ASSERT(attr_is(ro, h, CKA_ID, "\x09\x08", 2));
    CU_ASSERT_EQUAL(gcm_round_trip(ro, h), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(ro, h, ro_attr, N(ro_attr)), CKR_ATTRIBUTE_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(ro, h, bad, N(bad)), CKR_ATTRIBUTE_TYPE_INVALID);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(ro, h), CKR_OK);
    CU_ASSERT_FALSE(exists(ro, h));
    CU_ASSERT_EQUAL(p11->C_DestroyObject(ro, h), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
}

static void test_token_objects_keep_their_rules(void)
{
    CK_SESSION_HANDLE ro = open_session(RO), rw = open_session(RW);
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 16;
    CK_ATTRIBUTE t[] = {{CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_LABEL, "token-rules", 11}};
    CK_ATTRIBUTE imp[] = {{CKA_CLASS, &secret_cls, sizeof(secret_cls)},
                          {CKA_KEY_TYPE, &aes_type, sizeof(aes_type)},
                          {CKA_VALUE, "0123456789abcdef", 16}};
    CK_ATTRIBUTE rename[] = {{CKA_LABEL, "token-renamed", 13}};
    CK_OBJECT_HANDLE h = 0, th;

    ensure_login(rw, true);
    CU_ASSERT_EQUAL(p11->C_CreateObject(ro, imp, N(imp), &th), CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(rw, &mech, t, N(t), &h), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(rw, h, CKA_TOKEN), 1);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(ro, h, rename, N(rename)), CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(ro, h), CKR_SESSION_READ_ONLY);
    /* A token object outlives every session. */
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
    CU_ASSERT_TRUE(exists(rw, h));
    ensure_login(rw, false);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(rw, &mech, t, N(t), &th), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(p11->C_CloseSession(rw), CKR_OK);
}

static void test_operations_are_audited_under_a_marker(void)
{
    CK_SESSION_HANDLE ro = open_session(RO);
    CK_OBJECT_HANDLE h = 0;
    char key[64];

    ensure_login(ro, true);
    CU_ASSERT_EQUAL_FATAL(aes_session_key(ro, "audited", NULL, &h), CKR_OK);
    CU_ASSERT_EQUAL(gcm_round_trip(ro, h), CKR_OK);
    snprintf(key, sizeof(key), "\"key\":\"session:0x%lx\"", (unsigned long)h);
    CU_ASSERT_TRUE(audit_line_has("\"op\":\"object.create\"", key, "AES-256 secret"));
    CU_ASSERT_TRUE(audit_line_has("\"op\":\"encrypt\"", key, "\"result\":\"0x0\""));
    CU_ASSERT_TRUE(audit_line_has("\"op\":\"decrypt\"", key, "\"key_name\":\"session AES-256"));
    CU_ASSERT_FALSE(audit_line_has("\"op\":\"object.destroy\"", key, NULL));
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
    CU_ASSERT_TRUE(audit_line_has("\"op\":\"object.destroy\"", key, "session closed"));
}

/* The gateway's way (gws-cse's Gmail operations): a request context, then a key imported as a
 * session object and used. The creation record names the request but leaves its context to the
 * key operation, whose record is the request's; a blocked link stops the session object too,
 * while an open link to another key does not hide it. */
static void test_a_gateway_request_imports_and_uses_one(void)
{
    CK_SESSION_HANDLE rw = open_session(RW);
    CK_C_GetInterface get = (CK_C_GetInterface)hf_test_module_sym(&mod, "C_GetInterface");
    HF_REQUEST_CONTEXT ctx = {.api = "gws-cse",
                              .operation = "privilegedprivatekeydecrypt",
                              .caller = "alice@example.com",
                              .request_id = "req-session-1"};
    CK_MECHANISM gen = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 32;
    CK_ATTRIBUTE token_t[] = {{CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_LABEL, "cse-kek", 7}};
    CK_INTERFACE_PTR iface = NULL;
    const HF_FUNCTION_LIST *hf;
    struct hf_actor who = {"cli", "test"};
    struct hf_core *core = NULL;
    CK_ATTRIBUTE t[16];
    CK_ULONG n = rsa_template(t, "gmail key", NULL, 0);
    CK_OBJECT_HANDLE kek = 0, h = 0;
    CK_RSA_PKCS_PSS_PARAMS pp = {CKM_SHA256, CKG_MGF1_SHA256, 32};
    CK_MECHANISM pss = {CKM_SHA256_RSA_PKCS_PSS, &pp, sizeof(pp)};
    unsigned char sig[256];
    CK_ULONG siglen = sizeof(sig);
    char key[64];

    CU_ASSERT_PTR_NOT_NULL_FATAL(get);
    CU_ASSERT_EQUAL_FATAL(get((CK_UTF8CHAR_PTR)HF_INTERFACE_NAME, NULL, &iface, 0), CKR_OK);
    hf = iface->pFunctionList;
    ensure_login(rw, false);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(rw, CKU_USER, (CK_UTF8CHAR_PTR)HF_TEST_GATEWAY_PIN,
                                       strlen(HF_TEST_GATEWAY_PIN)),
                          CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(rw, &gen, token_t, N(token_t), &kek), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf->HF_SetRequestContext(rw, &ctx), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(rw, t, n, &h), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(rw, &pss, h), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Sign(rw, (CK_BYTE_PTR) "m", 1, sig, &siglen), CKR_OK);
    snprintf(key, sizeof(key), "\"key\":\"session:0x%lx\"", (unsigned long)h);
    CU_ASSERT_TRUE(
        audit_line_has("\"op\":\"object.create\"", key, "\"request_id\":\"req-session-1\""));
    CU_ASSERT_TRUE(audit_line_has("\"op\":\"privilegedprivatekeydecrypt\"", key,
                                  "\"request_id\":\"req-session-1\""));
    /* Destroyed after the request's record, without a context: on record as its maker's. */
    {
        CK_OBJECT_HANDLE tmp = 0;
        char tmp_key[64];
        CU_ASSERT_EQUAL_FATAL(hf->HF_SetRequestContext(rw, &ctx), CKR_OK);
        CU_ASSERT_EQUAL_FATAL(aes_session_key(rw, "per-request", NULL, &tmp), CKR_OK);
        CU_ASSERT_EQUAL(hf->HF_SetRequestContext(rw, NULL), CKR_OK);
        CU_ASSERT_EQUAL(p11->C_DestroyObject(rw, tmp), CKR_OK);
        snprintf(tmp_key, sizeof(tmp_key), "\"key\":\"session:0x%lx\"", (unsigned long)tmp);
        CU_ASSERT_TRUE(audit_line_has("\"op\":\"object.destroy\"", tmp_key,
                                      "\"caller\":\"alice@example.com\""));
    }
    /* A link: open and naming another key, the session object is still the request's to use;
     * blocked, it stops there too. */
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_link_add(core, "gws-cse", "cse-link", "cse-kek", &who), CKR_OK);
    ctx.link_type = "gws-cse";
    ctx.link_id = "cse-link";
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(rw, &ctx), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SignInit(rw, &pss, h), CKR_OK);
    siglen = sizeof(sig);
    CU_ASSERT_EQUAL(p11->C_Sign(rw, (CK_BYTE_PTR) "m", 1, sig, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_link_set_blocked(core, "gws-cse", "cse-link", true, &who), CKR_OK);
    hf_core_close(core);
    usleep(650000); /* the store's link cache answers at most 500 ms late */
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(rw, &ctx), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SignInit(rw, &pss, h), CKR_HF_LINK_BLOCKED);
    /* Cleaning up after a refused request still works, through the blocked link too. */
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(rw, &ctx), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(rw, h), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(rw, NULL), CKR_OK);
    CU_ASSERT_TRUE(
        audit_line_has("\"op\":\"object.destroy\"", key, "\"caller\":\"alice@example.com\""));
    CU_ASSERT_EQUAL(p11->C_Logout(rw), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(rw), CKR_OK);
}

/* ---- two threads ----------------------------------------------------------------------------- */

#define ROUNDS 80

struct worker {
    CK_OBJECT_HANDLE shared; /* made by the main thread, used by both */
    int failures;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    CK_SESSION_HANDLE s = CK_INVALID_HANDLE;
    CK_ATTRIBUTE t[16];
    CK_ULONG n = rsa_template(t, "threaded", NULL, 0);
    CK_RSA_PKCS_PSS_PARAMS pp = {CKM_SHA256, CKG_MGF1_SHA256, 32};
    CK_MECHANISM pss = {CKM_SHA256_RSA_PKCS_PSS, &pp, sizeof(pp)};
    unsigned char sig[256];

    if (p11->C_OpenSession(SLOT, RO, NULL, NULL, &s) != CKR_OK) {
        w->failures++;
        return NULL;
    }
    for (int i = 0; i < hf_test_rounds(ROUNDS); i++) {
        CK_OBJECT_HANDLE aes = 0, rsa = 0;
        CK_ULONG siglen = sizeof(sig);
        if (aes_session_key(s, "threaded", NULL, &aes) != CKR_OK) w->failures++;
        if (gcm_round_trip(s, aes) != CKR_OK) w->failures++;
        if (gcm_round_trip(s, w->shared) != CKR_OK) w->failures++;
        if (i % 16 == 0) {
            if (p11->C_CreateObject(s, t, n, &rsa) != CKR_OK ||
                p11->C_SignInit(s, &pss, rsa) != CKR_OK ||
                p11->C_Sign(s, (CK_BYTE_PTR) "x", 1, sig, &siglen) != CKR_OK ||
                p11->C_DestroyObject(s, rsa) != CKR_OK)
                w->failures++;
        }
        if (p11->C_DestroyObject(s, aes) != CKR_OK) w->failures++;
    }
    if (p11->C_CloseSession(s) != CKR_OK) w->failures++;
    return NULL;
}

static void test_two_threads_make_use_and_destroy(void)
{
    CK_SESSION_HANDLE main_s = open_session(RO);
    CK_ATTRIBUTE sess_only[] = {{CKA_TOKEN, &no, 1}};
    CK_OBJECT_HANDLE found[MAX_FOUND];
    struct worker w[2] = {{0}, {0}};
    pthread_t th[2];

    ensure_login(main_s, true);
    CU_ASSERT_EQUAL_FATAL(aes_session_key(main_s, "shared", NULL, &w[0].shared), CKR_OK);
    w[1].shared = w[0].shared;
    for (int i = 0; i < 2; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(w[0].failures, 0);
    CU_ASSERT_EQUAL(w[1].failures, 0);
    /* Only the shared one is left, and it goes with its session. */
    CU_ASSERT_EQUAL(find(main_s, sess_only, N(sess_only), found), 1);
    CU_ASSERT_EQUAL(p11->C_CloseSession(main_s), CKR_OK);
}

/* ---- the ends of the application ------------------------------------------------------------ */

static void test_close_all_and_finalize_destroy_them(void)
{
    CK_SESSION_HANDLE s = open_session(RO);
    CK_OBJECT_HANDLE h = 0, g = 0;
    char key[64];

    ensure_login(s, true);
    CU_ASSERT_EQUAL_FATAL(aes_session_key(s, "close-all", &no, &h), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseAllSessions(SLOT), CKR_OK);
    s = open_session(RO);
    CU_ASSERT_FALSE(exists(s, h));
    CU_ASSERT_EQUAL_FATAL(aes_session_key(s, "finalized", &no, &g), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Finalize(NULL), CKR_OK);
    snprintf(key, sizeof(key), "\"key\":\"session:0x%lx\"", (unsigned long)g);
    CU_ASSERT_TRUE(audit_line_has("\"op\":\"object.destroy\"", key, "C_Finalize"));
    CU_ASSERT_EQUAL_FATAL(p11->C_Initialize(NULL), CKR_OK);
    s = open_session(RO);
    CU_ASSERT_FALSE(exists(s, g));
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

static CU_TestInfo session_object_tests[] = {
    {"an AES session key in a R/O session", test_aes_session_key_in_a_read_only_session},
    {"an imported RSA session key decrypts OAEP and signs PSS",
     test_rsa_import_decrypts_oaep_and_signs_pss},
    {"an EC session pair signs and verifies", test_ec_session_pair_signs_and_verifies},
    {"an imported EC session key signs for OpenSSL", test_ec_import_signs_for_openssl},
    {"session keys wrap and unwrap", test_session_keys_wrap_and_unwrap},
    {"private ones need login; logout destroys them", test_login_rules_and_logout},
    {"other sessions see them until the maker closes",
     test_other_sessions_see_them_until_the_maker_closes},
    {"found with and without CKA_TOKEN", test_find_with_and_without_cka_token},
    {"closing another session keeps them", test_close_of_another_session_keeps_them},
    {"C_DestroyObject and C_SetAttributeValue", test_destroy_and_set_attributes},
    {"token objects keep their rules", test_token_objects_keep_their_rules},
    {"operations are audited under a marker", test_operations_are_audited_under_a_marker},
    {"a gateway request imports one and uses it", test_a_gateway_request_imports_and_uses_one},
    {"two threads make, use and destroy them", test_two_threads_make_use_and_destroy},
    {"C_CloseAllSessions and C_Finalize destroy them", test_close_all_and_finalize_destroy_them},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    CU_SuiteInfo suites[] = {
        {"module-session-objects", suite_init, suite_clean, NULL, NULL, session_object_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
