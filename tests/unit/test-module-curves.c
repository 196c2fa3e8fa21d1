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

static const CK_BYTE ed_oid[] = {0x06, 0x03, 0x2b, 0x65, 0x70};
static const CK_BYTE ed_name[] = {0x13, 0x0c, 'e', 'd', 'w', 'a', 'r',
                                  'd',  's',  '2', '5', '5', '1', '9'};
static CK_OBJECT_HANDLE ed_pub, ed_priv;         /* C_GenerateKeyPair, token */
static CK_OBJECT_HANDLE ed_cli_pub, ed_cli_priv; /* `holdfast key create --alg Ed25519` */

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

/* Whether one line of the audit log holds both fragments. */
static bool audit_line_has(const char *a, const char *b)
{
    char line[4096];
    FILE *f = fopen(env.cfg.audit_path, "r");
    bool found = false;

    while (f && !found && fgets(line, sizeof(line), f) != NULL)
        found = strstr(line, a) != NULL && strstr(line, b) != NULL;
    if (f) fclose(f);
    return found;
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
    if (cli_key_create("t-cli-521", "EC-P521") != 0 || cli_key_create("t-cli-ed", "Ed25519") != 0) {
        fprintf(stderr, "holdfast key create --alg EC-P521 / Ed25519 failed\n");
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
    cli_pub = hf_test_find_by_label(p11, sess, CKO_PUBLIC_KEY, "t-cli-521");
    cli_priv = hf_test_find_by_label(p11, sess, CKO_PRIVATE_KEY, "t-cli-521");
    if (pair_create(CKM_EC_EDWARDS_KEY_PAIR_GEN, ed_oid, sizeof(ed_oid), &yes, &ed_pub, &ed_priv) !=
        CKR_OK) {
        fprintf(stderr, "Ed25519 key generation failed\n");
        return -1;
    }
    ed_cli_pub = hf_test_find_by_label(p11, sess, CKO_PUBLIC_KEY, "t-cli-ed");
    ed_cli_priv = hf_test_find_by_label(p11, sess, CKO_PRIVATE_KEY, "t-cli-ed");
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

/* CKM_HF_ECDSA_DER answers at most what OpenSSL's EVP_PKEY_get_size says (139 bytes on P-521):
 * the provider sizes its buffer by that. */
static void test_p521_der_signature_fits_openssl_size(void)
{
    unsigned char hash[32], der[160], *p = der;
    CK_ULONG len = sizeof(der);
    CK_MECHANISM m = {CKM_HF_ECDSA_DER, NULL, 0};
    EVP_PKEY *pk = public_of(p521_pub, "EC", "P-521");
    EVP_PKEY_CTX *vc = pk ? EVP_PKEY_CTX_new(pk, NULL) : NULL;
    ECDSA_SIG *s;

    memset(hash, 0x21, sizeof(hash));
    CU_ASSERT_PTR_NOT_NULL_FATAL(vc);
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, p521_priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, hash, sizeof(hash), NULL, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, (CK_ULONG)EVP_PKEY_get_size(pk));
    CU_ASSERT_EQUAL(p11->C_Sign(sess, hash, sizeof(hash), der, &len), CKR_OK);
    CU_ASSERT_TRUE((s = d2i_ECDSA_SIG(NULL, (const unsigned char **)&p, (long)len)) != NULL);
    CU_ASSERT_TRUE(EVP_PKEY_verify_init(vc) == 1 &&
                   EVP_PKEY_verify(vc, der, len, hash, sizeof(hash)) == 1);
    ECDSA_SIG_free(s);
    EVP_PKEY_CTX_free(vc);
    EVP_PKEY_free(pk);
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

/* ---- Ed25519 --------------------------------------------------------------------------------- */

static int openssl_ed25519_verify(EVP_PKEY *pub, const unsigned char *sig, size_t siglen,
                                  const unsigned char *m, size_t mlen)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md && EVP_DigestVerifyInit(md, NULL, NULL, NULL, pub) == 1 &&
             EVP_DigestVerify(md, sig, siglen, m, mlen) == 1;

    EVP_MD_CTX_free(md);
    return ok;
}

static void assert_ed25519_signs_for_openssl(CK_OBJECT_HANDLE pub, CK_OBJECT_HANDLE priv)
{
    unsigned char sig[64];
    CK_ULONG siglen = sizeof(sig);
    EVP_PKEY *pk = public_of(pub, "ED25519", NULL);

    CU_ASSERT_PTR_NOT_NULL_FATAL(pk);
    CU_ASSERT_EQUAL(sign(CKM_EDDSA, priv, msg, sizeof(msg), sig, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(siglen, 64);
    CU_ASSERT_TRUE(openssl_ed25519_verify(pk, sig, siglen, msg, sizeof(msg)));
    CU_ASSERT_EQUAL(verify(CKM_EDDSA, pub, msg, sizeof(msg), sig, siglen), CKR_OK);
    sig[3] ^= 0x10;
    CU_ASSERT_FALSE(openssl_ed25519_verify(pk, sig, siglen, msg, sizeof(msg)));
    CU_ASSERT_EQUAL(verify(CKM_EDDSA, pub, msg, sizeof(msg), sig, siglen), CKR_SIGNATURE_INVALID);
    CU_ASSERT_EQUAL(verify(CKM_EDDSA, pub, msg, sizeof(msg), sig, 63), CKR_SIGNATURE_LEN_RANGE);
    EVP_PKEY_free(pk);
}

static void test_ed25519_key_shows_its_type_oid_and_point(void)
{
    CK_ULONG len = 0, plen = 0, tlen = 0;
    unsigned char *params = attr_get(ed_pub, CKA_EC_PARAMS, &len);
    unsigned char *point = attr_get(ed_priv, CKA_EC_POINT, &plen);
    unsigned char *type = attr_get(ed_priv, CKA_KEY_TYPE, &tlen);
    unsigned char *gen = attr_get(ed_priv, CKA_KEY_GEN_MECHANISM, &tlen);

    CU_ASSERT_TRUE(params && len == sizeof(ed_oid) && memcmp(params, ed_oid, len) == 0);
    CU_ASSERT_TRUE(point && plen == 34 && point[0] == 0x04 && point[1] == 32);
    CU_ASSERT_TRUE(type && *(CK_KEY_TYPE *)type == CKK_EC_EDWARDS);
    CU_ASSERT_TRUE(gen && *(CK_MECHANISM_TYPE *)gen == CKM_EC_EDWARDS_KEY_PAIR_GEN);
    free(params);
    free(point);
    free(type);
    free(gen);
}

static void test_ed25519_generated_key_signs_and_openssl_verifies(void)
{
    assert_ed25519_signs_for_openssl(ed_pub, ed_priv);
}

static void test_ed25519_cli_key_signs_and_openssl_verifies(void)
{
    CU_ASSERT_NOT_EQUAL_FATAL(ed_cli_priv, CK_INVALID_HANDLE);
    CU_ASSERT_NOT_EQUAL_FATAL(ed_cli_pub, CK_INVALID_HANDLE);
    assert_ed25519_signs_for_openssl(ed_cli_pub, ed_cli_priv);
}

static void test_ed25519_by_name_makes_session_keys(void)
{
    CK_OBJECT_HANDLE pub, priv;

    CU_ASSERT_EQUAL_FATAL(
        pair_create(CKM_EC_EDWARDS_KEY_PAIR_GEN, ed_name, sizeof(ed_name), &no, &pub, &priv),
        CKR_OK);
    assert_ed25519_signs_for_openssl(pub, priv);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, pub), CKR_OK);
}

static int hex_to(const char *hex, unsigned char *out, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (sscanf(hex + 2 * i, "%2hhx", &out[i]) != 1) return -1;
    return 0;
}

/* priv wrapped under a session AES key (KWP) and unwrapped as a session Ed25519 key still makes
 * the RFC's signature of the empty message. */
static void unwrapped_signs_rfc8032_test_1(CK_OBJECT_HANDLE priv, const unsigned char *want)
{
    CK_MECHANISM gen = {CKM_AES_KEY_GEN, NULL, 0}, kwp = {CKM_AES_KEY_WRAP_KWP, NULL, 0};
    CK_ULONG klen = 32, wlen = 0, siglen = 64;
    CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
    CK_KEY_TYPE kt = CKK_EC_EDWARDS;
    CK_ATTRIBUTE kt_aes[] = {{CKA_VALUE_LEN, &klen, sizeof(klen)},
                             {CKA_TOKEN, &no, 1},
                             {CKA_WRAP, &yes, 1},
                             {CKA_UNWRAP, &yes, 1}};
    CK_ATTRIBUTE ut[] = {{CKA_CLASS, &cls, sizeof(cls)},
                         {CKA_KEY_TYPE, &kt, sizeof(kt)},
                         {CKA_TOKEN, &no, 1},
                         {CKA_SIGN, &yes, 1}};
    CK_OBJECT_HANDLE kek, back = CK_INVALID_HANDLE;
    unsigned char wrapped[256], sig[64];

    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(sess, &gen, kt_aes, 4, &kek), CKR_OK);
    wlen = sizeof(wrapped);
    CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &kwp, kek, priv, wrapped, &wlen), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_UnwrapKey(sess, &kwp, kek, wrapped, wlen, ut, 4, &back), CKR_OK);
    CU_ASSERT_EQUAL(sign(CKM_EDDSA, back, NULL, 0, sig, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(memcmp(sig, want, 64), 0);
    p11->C_DestroyObject(sess, back);
    p11->C_DestroyObject(sess, kek);
}

/* RFC 8032 section 7.1, TEST 1: the empty message under its secret key, imported with
 * CKA_VALUE as a session object. Ed25519 is deterministic: the signature is the RFC's. */
static void test_ed25519_signs_rfc8032_test_1(void)
{
    static const char sk_hex[] = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    static const char pk_hex[] = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    static const char sig_hex[] =
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
        "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";
    unsigned char sk[32], pk[32], want[64], sig[64], *point = NULL, *value = NULL;
    CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
    CK_KEY_TYPE kt = CKK_EC_EDWARDS;
    CK_ULONG siglen = sizeof(sig), plen = 0, vlen = 0;
    CK_OBJECT_HANDLE priv;

    CU_ASSERT_FATAL(hex_to(sk_hex, sk, 32) == 0 && hex_to(pk_hex, pk, 32) == 0 &&
                    hex_to(sig_hex, want, 64) == 0);
    CK_ATTRIBUTE t[] = {{CKA_CLASS, &cls, sizeof(cls)},
                        {CKA_KEY_TYPE, &kt, sizeof(kt)},
                        {CKA_TOKEN, &no, 1},
                        {CKA_SIGN, &yes, 1},
                        {CKA_EC_PARAMS, (void *)ed_name, sizeof(ed_name)},
                        {CKA_VALUE, sk, sizeof(sk)},
                        {CKA_EXTRACTABLE, &yes, 1},
                        {CKA_SENSITIVE, &no, 1}};
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(sess, t, 8, &priv), CKR_OK);
    /* Extractable: CKA_VALUE gives the seed back, as it came in. */
    value = attr_get(priv, CKA_VALUE, &vlen);
    CU_ASSERT_TRUE(value && vlen == 32 && memcmp(value, sk, 32) == 0);
    if (value) OPENSSL_cleanse(value, vlen);
    free(value);
    point = attr_get(priv, CKA_EC_POINT, &plen);
    CU_ASSERT_TRUE(point && plen == 34 && memcmp(point + 2, pk, 32) == 0);
    CU_ASSERT_EQUAL(sign(CKM_EDDSA, priv, NULL, 0, sig, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(siglen, 64);
    CU_ASSERT_EQUAL(memcmp(sig, want, 64), 0);
    /* CK_EDDSA_PARAMS asking for pure Ed25519 is the same mechanism. */
    CK_EDDSA_PARAMS pure = {CK_FALSE, 0, NULL};
    CK_MECHANISM m = {CKM_EDDSA, &pure, sizeof(pure)};
    memset(sig, 0, sizeof(sig));
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, NULL, 0, sig, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(memcmp(sig, want, 64), 0);
    unwrapped_signs_rfc8032_test_1(priv, want);
    p11->C_DestroyObject(sess, priv);
    free(point);
    OPENSSL_cleanse(sk, sizeof(sk));
}

/* A public key from OpenSSL, as a lone session object (the OID form of CKA_EC_PARAMS and the
 * bare 32 bytes both taken): OpenSSL's signatures verify through the module. */
static void test_ed25519_openssl_signature_verifies_through_module(void)
{
    EVP_PKEY *pk = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    unsigned char raw[32], der[34], sig[64];
    size_t rawlen = sizeof(raw), siglen = sizeof(sig);
    CK_OBJECT_CLASS cls = CKO_PUBLIC_KEY;
    CK_KEY_TYPE kt = CKK_EC_EDWARDS;
    CK_OBJECT_HANDLE pub, bare;
    EVP_MD_CTX *md = EVP_MD_CTX_new();

    CU_ASSERT_FATAL(pk && EVP_PKEY_get_raw_public_key(pk, raw, &rawlen) == 1 && rawlen == 32);
    CU_ASSERT_FATAL(md && EVP_DigestSignInit(md, NULL, NULL, NULL, pk) == 1 &&
                    EVP_DigestSign(md, sig, &siglen, msg, sizeof(msg)) == 1);
    der[0] = 0x04, der[1] = 32;
    memcpy(der + 2, raw, 32);
    CK_ATTRIBUTE t[] = {{CKA_CLASS, &cls, sizeof(cls)},
                        {CKA_KEY_TYPE, &kt, sizeof(kt)},
                        {CKA_TOKEN, &no, 1},
                        {CKA_EC_PARAMS, (void *)ed_oid, sizeof(ed_oid)},
                        {CKA_EC_POINT, der, sizeof(der)}};
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(sess, t, 5, &pub), CKR_OK);
    t[4] = (CK_ATTRIBUTE){CKA_EC_POINT, raw, sizeof(raw)};
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(sess, t, 5, &bare), CKR_OK);
    CU_ASSERT_EQUAL(verify(CKM_EDDSA, pub, msg, sizeof(msg), sig, 64), CKR_OK);
    CU_ASSERT_EQUAL(verify(CKM_EDDSA, bare, msg, sizeof(msg), sig, 64), CKR_OK);
    CU_ASSERT_EQUAL(verify(CKM_EDDSA, pub, msg, sizeof(msg) - 1, sig, 64), CKR_SIGNATURE_INVALID);
    p11->C_DestroyObject(sess, pub);
    p11->C_DestroyObject(sess, bare);
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(pk);
}

/* EdDSA has no multi-part form: an Update is CKR_FUNCTION_NOT_SUPPORTED and ends the
 * operation. */
static void test_eddsa_multipart_is_refused_and_ends_the_operation(void)
{
    CK_MECHANISM m = {CKM_EDDSA, NULL, 0};
    unsigned char sig[64] = {0};
    CK_ULONG siglen = sizeof(sig);

    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, ed_priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SignUpdate(sess, (CK_BYTE_PTR)msg, sizeof(msg)),
                    CKR_FUNCTION_NOT_SUPPORTED);
    CU_ASSERT_EQUAL(p11->C_SignFinal(sess, sig, &siglen), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_VerifyInit(sess, &m, ed_pub), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_VerifyUpdate(sess, (CK_BYTE_PTR)msg, sizeof(msg)),
                    CKR_FUNCTION_NOT_SUPPORTED);
    CU_ASSERT_EQUAL(p11->C_VerifyFinal(sess, sig, 64), CKR_OPERATION_NOT_INITIALIZED);
    /* And one-shot still works afterwards. Both the refusal and the success are recorded. */
    CU_ASSERT_EQUAL(sign(CKM_EDDSA, ed_priv, msg, sizeof(msg), sig, &siglen), CKR_OK);
    CU_ASSERT_TRUE(audit_line_has("\"CKM_EDDSA\"", "\"result\":\"0x54\""));
    CU_ASSERT_TRUE(audit_line_has("\"CKM_EDDSA\"", "\"result\":\"0x0\""));
}

static void test_eddsa_refuses_other_keys_params_and_curves(void)
{
    CK_EDDSA_PARAMS ph = {CK_TRUE, 0, NULL};
    CK_BYTE ctx[] = "context";
    CK_EDDSA_PARAMS withctx = {CK_FALSE, sizeof(ctx), ctx};
    CK_MECHANISM m = {CKM_EDDSA, &ph, sizeof(ph)};
    CK_MECHANISM ecdsa = {CKM_ECDSA_SHA256, NULL, 0};
    CK_OBJECT_HANDLE pub, priv;

    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, ed_priv), CKR_MECHANISM_PARAM_INVALID);
    m.pParameter = &withctx;
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, ed_priv), CKR_MECHANISM_PARAM_INVALID);
    m.pParameter = NULL, m.ulParameterLen = 0;
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, p521_priv), CKR_KEY_TYPE_INCONSISTENT);
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &ecdsa, ed_priv), CKR_KEY_TYPE_INCONSISTENT);
    /* Each key pair mechanism takes its own curves only. */
    CU_ASSERT_EQUAL(pair_create(CKM_EC_KEY_PAIR_GEN, ed_name, sizeof(ed_name), &no, &pub, &priv),
                    CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(
        pair_create(CKM_EC_EDWARDS_KEY_PAIR_GEN, p521_oid, sizeof(p521_oid), &no, &pub, &priv),
        CKR_ATTRIBUTE_VALUE_INVALID);
}

static void test_eddsa_mechanism_info(void)
{
    CK_MECHANISM_INFO info;

    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(1, CKM_EDDSA, &info), CKR_OK);
    CU_ASSERT_EQUAL(info.ulMinKeySize, 256);
    CU_ASSERT_EQUAL(info.ulMaxKeySize, 256);
    CU_ASSERT_TRUE((info.flags & (CKF_SIGN | CKF_VERIFY)) == (CKF_SIGN | CKF_VERIFY));
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(1, CKM_EC_EDWARDS_KEY_PAIR_GEN, &info), CKR_OK);
    CU_ASSERT_TRUE(info.flags & CKF_GENERATE_KEY_PAIR);
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
        {"p521 der signature fits openssl size", test_p521_der_signature_fits_openssl_size},
        {"ec mechanisms reach 521 bits", test_ec_mechanisms_reach_521_bits},
        {"ed25519 key shows its type, oid and point",
         test_ed25519_key_shows_its_type_oid_and_point},
        {"ed25519 generated key signs and openssl verifies",
         test_ed25519_generated_key_signs_and_openssl_verifies},
        {"ed25519 cli key signs and openssl verifies",
         test_ed25519_cli_key_signs_and_openssl_verifies},
        {"ed25519 by name makes session keys", test_ed25519_by_name_makes_session_keys},
        {"ed25519 signs rfc8032 test 1", test_ed25519_signs_rfc8032_test_1},
        {"ed25519 openssl signature verifies through module",
         test_ed25519_openssl_signature_verifies_through_module},
        {"eddsa multipart is refused and ends the operation",
         test_eddsa_multipart_is_refused_and_ends_the_operation},
        {"eddsa refuses other keys, params and curves",
         test_eddsa_refuses_other_keys_params_and_curves},
        {"eddsa mechanism info", test_eddsa_mechanism_info},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"module-curves", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
