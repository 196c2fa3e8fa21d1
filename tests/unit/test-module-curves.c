/* EC P-521 and Ed25519 through the built holdfast-pkcs11.so: keys made by the module and by the
 * CLI sign, and OpenSSL verifies; what OpenSSL signs verifies through the module; known answers
 * (RFC 8032); refusals with the standard's return codes. */
#include "hf-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "harness.h"
#include "module-loader.h"
#include "pkcs11/module/holdfast.h"

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE sess;
static CK_BBOOL yes = CK_TRUE, no = CK_FALSE;

static const CK_BYTE p521_oid[] = {0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23};
static const CK_BYTE p521_name[] = {0x13, 0x09, 's', 'e', 'c', 'p', '5', '2', '1', 'r', '1'};
static const unsigned char msg[] = "a message for P-521";

static CK_OBJECT_HANDLE p521_pub, p521_priv; /* made by C_GenerateKeyPair */
static CK_OBJECT_HANDLE cli_pub, cli_priv;   /* made by `holdfast key create --alg EC-P521` */

/* ---- helpers --------------------------------------------------------------------------------- */

static CK_RV pair_create(CK_MECHANISM_TYPE type, const CK_BYTE *params, CK_ULONG params_len,
                         CK_BBOOL *token, CK_OBJECT_HANDLE *pub, CK_OBJECT_HANDLE *priv)
{
    CK_MECHANISM mech = {type, NULL, 0};
    CK_ATTRIBUTE pt[] = {
        {CKA_TOKEN, token, 1},
        {CKA_EC_PARAMS, (void *)params, params_len},
        {CKA_VERIFY, &yes, 1},
    };
    CK_ATTRIBUTE vt[] = {{CKA_TOKEN, token, 1}, {CKA_SIGN, &yes, 1}};

    return p11->C_GenerateKeyPair(sess, &mech, pt, 3, vt, 2, pub, priv);
}

static unsigned char *attr_get(CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type, CK_ULONG *len)
{
    CK_ATTRIBUTE a = {type, NULL, 0};
    unsigned char *v;

    if (p11->C_GetAttributeValue(sess, h, &a, 1) != CKR_OK || a.ulValueLen == 0 ||
        a.ulValueLen == CK_UNAVAILABLE_INFORMATION)
        return NULL;
    if ((v = malloc(a.ulValueLen)) == NULL) return NULL;
    a.pValue = v;
    if (p11->C_GetAttributeValue(sess, h, &a, 1) != CKR_OK) {
        free(v);
        return NULL;
    }
    *len = a.ulValueLen;
    return v;
}

/* The first object of class cls with this label. */
static CK_OBJECT_HANDLE find_by_label(CK_OBJECT_CLASS cls, const char *label)
{
    CK_ATTRIBUTE t[] = {{CKA_CLASS, &cls, sizeof(cls)}, {CKA_LABEL, (void *)label, strlen(label)}};
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_ULONG n = 0;

    if (p11->C_FindObjectsInit(sess, t, 2) != CKR_OK) return CK_INVALID_HANDLE;
    if (p11->C_FindObjects(sess, &h, 1, &n) != CKR_OK || n != 1) h = CK_INVALID_HANDLE;
    p11->C_FindObjectsFinal(sess);
    return h;
}

/* The public key a relying party rebuilds from CKA_EC_POINT (a DER OCTET STRING). */
static EVP_PKEY *public_of(CK_OBJECT_HANDLE pub, const char *type, const char *group)
{
    CK_ULONG len = 0;
    unsigned char *der = attr_get(pub, CKA_EC_POINT, &len);
    const unsigned char *p = der;
    ASN1_OCTET_STRING *os = der ? d2i_ASN1_OCTET_STRING(NULL, &p, (long)len) : NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    EVP_PKEY *pkey = NULL;
    OSSL_PARAM params[3], *q = params;

    if (os != NULL && p == der + len && ctx != NULL && EVP_PKEY_fromdata_init(ctx) > 0) {
        if (group)
            *q++ = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)group, 0);
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, os->data,
                                                 (size_t)os->length);
        *q = OSSL_PARAM_construct_end();
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params);
    }
    ASN1_OCTET_STRING_free(os);
    EVP_PKEY_CTX_free(ctx);
    free(der);
    return pkey;
}

static CK_RV sign(CK_MECHANISM_TYPE type, CK_OBJECT_HANDLE key, const unsigned char *in,
                  CK_ULONG inlen, unsigned char *out, CK_ULONG *outlen)
{
    CK_MECHANISM m = {type, NULL, 0};
    CK_RV rv = p11->C_SignInit(sess, &m, key);

    return rv != CKR_OK ? rv : p11->C_Sign(sess, (CK_BYTE_PTR)in, inlen, out, outlen);
}

static CK_RV verify(CK_MECHANISM_TYPE type, CK_OBJECT_HANDLE key, const unsigned char *in,
                    CK_ULONG inlen, const unsigned char *sig, CK_ULONG siglen)
{
    CK_MECHANISM m = {type, NULL, 0};
    CK_RV rv = p11->C_VerifyInit(sess, &m, key);

    return rv != CKR_OK ? rv
                        : p11->C_Verify(sess, (CK_BYTE_PTR)in, inlen, (CK_BYTE_PTR)sig, siglen);
}

/* PKCS#11's r || s as the DER ECDSA-Sig-Value OpenSSL verifies (malloc'd by OpenSSL). */
static int rs_to_der(const unsigned char *rs, size_t len, unsigned char **der)
{
    ECDSA_SIG *s = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(rs, (int)len / 2, NULL),
           *sv = BN_bin2bn(rs + len / 2, (int)len / 2, NULL);
    int n = -1;

    *der = NULL;
    if (s && r && sv && ECDSA_SIG_set0(s, r, sv)) {
        r = sv = NULL;
        n = i2d_ECDSA_SIG(s, der);
    }
    BN_free(r);
    BN_free(sv);
    ECDSA_SIG_free(s);
    return n;
}

/* The DER ECDSA-Sig-Value as r || s of 2 * half bytes. */
static bool der_to_rs(const unsigned char *der, size_t len, size_t half, unsigned char *rs)
{
    const unsigned char *p = der;
    ECDSA_SIG *s = d2i_ECDSA_SIG(NULL, &p, (long)len);
    bool ok = s && BN_bn2binpad(ECDSA_SIG_get0_r(s), rs, (int)half) == (int)half &&
              BN_bn2binpad(ECDSA_SIG_get0_s(s), rs + half, (int)half) == (int)half;

    ECDSA_SIG_free(s);
    return ok;
}

/* OpenSSL's verdict on an ECDSA r || s over msg with SHA-256. */
static int openssl_ecdsa_verify(EVP_PKEY *pub, const unsigned char *rs, size_t len)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char *der = NULL;
    int n = rs_to_der(rs, len, &der), ok = 0;

    if (md && n > 0 && EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pub) == 1)
        ok = EVP_DigestVerify(md, der, (size_t)n, msg, sizeof(msg)) == 1;
    OPENSSL_free(der);
    EVP_MD_CTX_free(md);
    return ok;
}

static void assert_p521_signs_for_openssl(CK_OBJECT_HANDLE pub, CK_OBJECT_HANDLE priv)
{
    unsigned char sig[2 * 66 + 8];
    CK_ULONG siglen = sizeof(sig);
    EVP_PKEY *pk = public_of(pub, "EC", "P-521");

    CU_ASSERT_PTR_NOT_NULL_FATAL(pk);
    CU_ASSERT_EQUAL(EVP_PKEY_get_bits(pk), 521);
    CU_ASSERT_EQUAL(sign(CKM_ECDSA_SHA256, priv, msg, sizeof(msg), sig, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(siglen, 132);
    CU_ASSERT_TRUE(openssl_ecdsa_verify(pk, sig, siglen));
    CU_ASSERT_EQUAL(verify(CKM_ECDSA_SHA256, pub, msg, sizeof(msg), sig, siglen), CKR_OK);
    sig[10] ^= 1;
    CU_ASSERT_FALSE(openssl_ecdsa_verify(pk, sig, siglen));
    CU_ASSERT_EQUAL(verify(CKM_ECDSA_SHA256, pub, msg, sizeof(msg), sig, siglen),
                    CKR_SIGNATURE_INVALID);
    EVP_PKEY_free(pk);
}

/* ---- suite setup ----------------------------------------------------------------------------- */

static int cli_key_create(const char *name, const char *alg)
{
    const char *cli = getenv("HF_CLI");
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "'%s' key create %s --alg %s >/dev/null",
             cli && cli[0] ? cli : "pkcs11/tool/holdfast", name, alg);
    return system(cmd);
}

static int suite_init(void)
{
    if (hf_test_env_setup(&env, NULL) != 0) return -1;
    if (cli_key_create("t-cli-521", "EC-P521") != 0) {
        fprintf(stderr, "holdfast key create --alg EC-P521 failed\n");
        return -1;
    }
    if (hf_test_module_load(&mod) != 0) return -1;
    p11 = mod.p11;
    if (hf_test_module_start(p11, &sess) != CKR_OK) return -1;
    if (pair_create(CKM_EC_KEY_PAIR_GEN, p521_oid, sizeof(p521_oid), &yes, &p521_pub, &p521_priv) !=
        CKR_OK) {
        fprintf(stderr, "P-521 key generation failed\n");
        return -1;
    }
    cli_pub = find_by_label(CKO_PUBLIC_KEY, "t-cli-521");
    cli_priv = find_by_label(CKO_PRIVATE_KEY, "t-cli-521");
    return 0;
}

static int suite_clean(void)
{
    if (p11 != NULL) {
        p11->C_CloseSession(sess);
        p11->C_Finalize(NULL);
    }
    hf_test_module_unload(&mod);
    hf_test_env_teardown(&env);
    return 0;
}

/* ---- P-521 ----------------------------------------------------------------------------------- */

static void test_p521_key_shows_its_curve_and_point(void)
{
    CK_ULONG len = 0, plen = 0;
    unsigned char *params = attr_get(p521_pub, CKA_EC_PARAMS, &len);
    unsigned char *point = attr_get(p521_priv, CKA_EC_POINT, &plen);

    CU_ASSERT_TRUE(params && len == sizeof(p521_oid) && memcmp(params, p521_oid, len) == 0);
    /* 133 bytes of uncompressed point: a DER OCTET STRING with a two-byte length. */
    CU_ASSERT_EQUAL(plen, 136);
    CU_ASSERT_TRUE(point && point[0] == 0x04 && point[1] == 0x81 && point[2] == 133 &&
                   point[3] == 0x04);
    free(params);
    free(point);
}

static void test_p521_generated_key_signs_and_openssl_verifies(void)
{
    assert_p521_signs_for_openssl(p521_pub, p521_priv);
}

static void test_p521_cli_key_signs_and_openssl_verifies(void)
{
    CU_ASSERT_NOT_EQUAL_FATAL(cli_priv, CK_INVALID_HANDLE);
    CU_ASSERT_NOT_EQUAL_FATAL(cli_pub, CK_INVALID_HANDLE);
    assert_p521_signs_for_openssl(cli_pub, cli_priv);
}

static void test_p521_by_name_makes_session_keys(void)
{
    CK_OBJECT_HANDLE pub, priv;

    CU_ASSERT_EQUAL_FATAL(
        pair_create(CKM_EC_KEY_PAIR_GEN, p521_name, sizeof(p521_name), &no, &pub, &priv), CKR_OK);
    assert_p521_signs_for_openssl(pub, priv);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, pub), CKR_OK);
}

/* An OpenSSL key imported whole (C_CreateObject: the private scalar, and the public point as a
 * lone session public key): OpenSSL's signatures verify through the module, the module's verify
 * in OpenSSL. */
static void test_p521_openssl_key_imported_both_ways(void)
{
    EVP_PKEY *pk = EVP_EC_gen("P-521");
    BIGNUM *d = NULL;
    unsigned char dbytes[66], point[133], der_point[136], sig[2 * 66], *der = NULL;
    size_t plen = 0, derlen = 0;
    CK_OBJECT_CLASS priv_cls = CKO_PRIVATE_KEY, pub_cls = CKO_PUBLIC_KEY;
    CK_KEY_TYPE kt = CKK_EC;
    CK_OBJECT_HANDLE priv, pub;
    CK_ULONG siglen = sizeof(sig);
    EVP_MD_CTX *md = EVP_MD_CTX_new();

    CU_ASSERT_PTR_NOT_NULL_FATAL(pk);
    CU_ASSERT_TRUE_FATAL(EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_PRIV_KEY, &d) &&
                         BN_bn2binpad(d, dbytes, sizeof(dbytes)) == sizeof(dbytes));
    CU_ASSERT_TRUE_FATAL(
        EVP_PKEY_get_octet_string_param(pk, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof(point), &plen) &&
        plen == sizeof(point));
    der_point[0] = 0x04, der_point[1] = 0x81, der_point[2] = 133;
    memcpy(der_point + 3, point, sizeof(point));
    CK_ATTRIBUTE vt[] = {{CKA_CLASS, &priv_cls, sizeof(priv_cls)},
                         {CKA_KEY_TYPE, &kt, sizeof(kt)},
                         {CKA_TOKEN, &no, 1},
                         {CKA_SIGN, &yes, 1},
                         {CKA_EC_PARAMS, (void *)p521_oid, sizeof(p521_oid)},
                         {CKA_VALUE, dbytes, sizeof(dbytes)}};
    CK_ATTRIBUTE pt[] = {{CKA_CLASS, &pub_cls, sizeof(pub_cls)},
                         {CKA_KEY_TYPE, &kt, sizeof(kt)},
                         {CKA_TOKEN, &no, 1},
                         {CKA_VERIFY, &yes, 1},
                         {CKA_EC_PARAMS, (void *)p521_oid, sizeof(p521_oid)},
                         {CKA_EC_POINT, der_point, sizeof(der_point)}};
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(sess, vt, 6, &priv), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(sess, pt, 6, &pub), CKR_OK);
    /* The bare point some callers give is taken too. */
    pt[5] = (CK_ATTRIBUTE){CKA_EC_POINT, point, sizeof(point)};
    CK_OBJECT_HANDLE bare;
    CU_ASSERT_EQUAL(p11->C_CreateObject(sess, pt, 6, &bare), CKR_OK);

    CU_ASSERT_EQUAL(sign(CKM_ECDSA_SHA256, priv, msg, sizeof(msg), sig, &siglen), CKR_OK);
    CU_ASSERT_TRUE(openssl_ecdsa_verify(pk, sig, siglen));

    CU_ASSERT_TRUE_FATAL(md && EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, pk) == 1 &&
                         EVP_DigestSign(md, NULL, &derlen, msg, sizeof(msg)) == 1 &&
                         (der = OPENSSL_malloc(derlen)) != NULL &&
                         EVP_DigestSign(md, der, &derlen, msg, sizeof(msg)) == 1);
    CU_ASSERT_TRUE_FATAL(der_to_rs(der, derlen, 66, sig));
    CU_ASSERT_EQUAL(verify(CKM_ECDSA_SHA256, pub, msg, sizeof(msg), sig, 132), CKR_OK);
    CU_ASSERT_EQUAL(verify(CKM_ECDSA_SHA256, bare, msg, sizeof(msg), sig, 132), CKR_OK);
    CU_ASSERT_EQUAL(verify(CKM_ECDSA_SHA256, pub, msg, sizeof(msg), sig, 131),
                    CKR_SIGNATURE_LEN_RANGE);
    CU_ASSERT_EQUAL(verify(CKM_ECDSA_SHA256, pub, msg, sizeof(msg) - 1, sig, 132),
                    CKR_SIGNATURE_INVALID);

    p11->C_DestroyObject(sess, priv);
    p11->C_DestroyObject(sess, pub);
    p11->C_DestroyObject(sess, bare);
    OPENSSL_free(der);
    EVP_MD_CTX_free(md);
    BN_clear_free(d);
    OPENSSL_cleanse(dbytes, sizeof(dbytes));
    EVP_PKEY_free(pk);
}

/* CKM_ECDSA signs the caller's hash: SHA-512's 64 bytes, shorter than P-521's order. */
static void test_p521_ecdsa_signs_a_sha512_hash(void)
{
    unsigned char hash[64], sig[132];
    CK_ULONG siglen = sizeof(sig);

    memset(hash, 0x5a, sizeof(hash));
    CU_ASSERT_EQUAL(sign(CKM_ECDSA, p521_priv, hash, sizeof(hash), NULL, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(siglen, 132);
    /* The size query kept the operation (PKCS#11 2.40 section 5.2). */
    CU_ASSERT_EQUAL(p11->C_Sign(sess, hash, sizeof(hash), sig, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(verify(CKM_ECDSA, p521_pub, hash, sizeof(hash), sig, siglen), CKR_OK);
}

static void test_ec_mechanisms_reach_521_bits(void)
{
    static const CK_MECHANISM_TYPE types[] = {CKM_EC_KEY_PAIR_GEN, CKM_ECDSA, CKM_ECDSA_SHA256,
                                              CKM_ECDSA_SHA512, CKM_HF_ECDSA_DER};
    CK_MECHANISM_INFO info;

    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(1, types[i], &info), CKR_OK);
        CU_ASSERT_EQUAL(info.ulMinKeySize, 256);
        CU_ASSERT_EQUAL(info.ulMaxKeySize, 521);
    }
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"p521 key shows its curve and point", test_p521_key_shows_its_curve_and_point},
        {"p521 generated key signs and openssl verifies",
         test_p521_generated_key_signs_and_openssl_verifies},
        {"p521 cli key signs and openssl verifies", test_p521_cli_key_signs_and_openssl_verifies},
        {"p521 by name makes session keys", test_p521_by_name_makes_session_keys},
        {"p521 openssl key imported both ways", test_p521_openssl_key_imported_both_ways},
        {"p521 ecdsa signs a sha512 hash", test_p521_ecdsa_signs_a_sha512_hash},
        {"ec mechanisms reach 521 bits", test_ec_mechanisms_reach_521_bits},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"module-curves", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
