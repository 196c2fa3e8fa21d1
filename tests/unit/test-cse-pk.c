/* The Gmail private-key parts of gws-cse that need no module (pk-payload.[ch], pk-alg.[ch]):
 * the wrapped payload's layout and bounds, which PKCS#8 keys are served, the SPKI hash against
 * OpenSSL's encoder, the algorithm table, and the DigestInfo we sign against the signature
 * OpenSSL's RSA_sign path makes over the same digest. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/gws-cse/pk-alg.h"
#include "gateway/plugins/gws-cse/pk-payload.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/encoder.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

static EVP_PKEY *rsa2048, *p256;

static int suite_init(void)
{
    rsa2048 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    p256 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    return rsa2048 != NULL && p256 != NULL ? 0 : -1;
}

static int suite_clean(void)
{
    EVP_PKEY_free(rsa2048);
    EVP_PKEY_free(p256);
    return 0;
}

/* pkey as a DER PKCS#8 PrivateKeyInfo (free()). */
static unsigned char *pkcs8_of(const EVP_PKEY *pkey, size_t *len)
{
    PKCS8_PRIV_KEY_INFO *p8 = EVP_PKEY2PKCS8(pkey);
    unsigned char *der = NULL, *copy = NULL;
    int n;

    if (p8 != NULL && (n = i2d_PKCS8_PRIV_KEY_INFO(p8, &der)) > 0 &&
        (copy = malloc((size_t)n + 1)) != NULL) {
        memcpy(copy, der, (size_t)n);
        *len = (size_t)n;
    }
    OPENSSL_free(der);
    PKCS8_PRIV_KEY_INFO_free(p8);
    return copy;
}

static enum hf_status parse(const EVP_PKEY *pkey, CK_KEY_TYPE *type)
{
    size_t len = 0;
    unsigned char *der = pkcs8_of(pkey, &len);
    EVP_PKEY *out = NULL;
    char why[160] = "";
    enum hf_status st;

    CU_ASSERT_FATAL(der != NULL);
    st = hf_cse_pk_key_parse(der, len, &out, type, why, sizeof(why));
    CU_ASSERT_EQUAL(st == HF_STATUS_OK, out != NULL);
    if (st != HF_STATUS_OK) CU_ASSERT(why[0] != '\0');
    EVP_PKEY_free(out);
    free(der);
    return st;
}

static void test_payload_round_trip(void)
{
    static const unsigned char der[] = {0x30, 0x03, 0x02, 0x01, 0x00};
    unsigned char buf[64];
    struct hf_cse_pk_payload p;
    size_t n = hf_cse_pk_payload_len(sizeof(der), 9);

    CU_ASSERT_EQUAL_FATAL(n, 2 + sizeof(der) + 2 + 9);
    CU_ASSERT_FATAL(hf_cse_pk_payload_write(der, sizeof(der), "perimeter", 9, buf));
    CU_ASSERT(buf[0] == 0 && buf[1] == sizeof(der));
    CU_ASSERT(buf[2 + sizeof(der)] == 0 && buf[3 + sizeof(der)] == 9);
    CU_ASSERT_FATAL(hf_cse_pk_payload_parse(buf, n, &p));
    CU_ASSERT_EQUAL(p.der_len, sizeof(der));
    CU_ASSERT(memcmp(p.der, der, sizeof(der)) == 0);
    CU_ASSERT_EQUAL(p.perimeter_len, 9);
    CU_ASSERT(memcmp(p.perimeter_id, "perimeter", 9) == 0);
    /* The empty perimeter: "" passes the perimeter rules, so it must survive as "". */
    n = hf_cse_pk_payload_len(sizeof(der), 0);
    CU_ASSERT_FATAL(hf_cse_pk_payload_write(der, sizeof(der), NULL, 0, buf));
    CU_ASSERT_FATAL(hf_cse_pk_payload_parse(buf, n, &p));
    CU_ASSERT_EQUAL(p.perimeter_len, 0);
}

static void test_payload_bounds_fit_the_spec(void)
{
    const size_t room = HF_CSE_PK_WRAPPED_MAX - HF_BLOB_OVERHEAD - 4;

    /* Whatever PKCS#8 fits the spec's 8 KB wrapped_private_key fits the payload. */
    CU_ASSERT_EQUAL(hf_cse_pk_payload_len(room, 0), room + 4);
    CU_ASSERT_EQUAL(hf_cse_pk_payload_len(room - 128, 128), room + 4);
    CU_ASSERT_EQUAL(hf_cse_pk_payload_len(room + 1, 0), 0);
    CU_ASSERT_EQUAL(hf_cse_pk_payload_len(room - 128, 129), 0);
    CU_ASSERT_EQUAL(hf_cse_pk_payload_len((size_t)-1, 0), 0);
}

static void test_payload_parse_fails_closed(void)
{
    static const unsigned char der[] = {0x30, 0x00};
    unsigned char buf[16];
    struct hf_cse_pk_payload p;
    size_t n = hf_cse_pk_payload_len(sizeof(der), 1);

    CU_ASSERT_FATAL(hf_cse_pk_payload_write(der, sizeof(der), "x", 1, buf));
    CU_ASSERT_TRUE(hf_cse_pk_payload_parse(buf, n, &p));
    CU_ASSERT_FALSE(hf_cse_pk_payload_parse(buf, n - 1, &p)); /* short */
    buf[n] = 0;
    CU_ASSERT_FALSE(hf_cse_pk_payload_parse(buf, n + 1, &p)); /* a byte after */
    CU_ASSERT_FALSE(hf_cse_pk_payload_parse(buf, 3, &p));
    buf[1] = 0; /* an empty key */
    CU_ASSERT_FALSE(hf_cse_pk_payload_parse(buf, n, &p));
    buf[1] = 0xff; /* past the end */
    CU_ASSERT_FALSE(hf_cse_pk_payload_parse(buf, n, &p));
    CU_ASSERT_FALSE(hf_cse_pk_payload_write(der, 0, "x", 1, buf));
}

static void test_served_keys_parse(void)
{
    EVP_PKEY *p384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
    CK_KEY_TYPE type = 0;

    CU_ASSERT_EQUAL(parse(rsa2048, &type), HF_STATUS_OK);
    CU_ASSERT_EQUAL(type, CKK_RSA);
    CU_ASSERT_EQUAL(parse(p256, &type), HF_STATUS_OK);
    CU_ASSERT_EQUAL(type, CKK_EC);
    CU_ASSERT_FATAL(p384 != NULL);
    CU_ASSERT_EQUAL(parse(p384, &type), HF_STATUS_OK);
    EVP_PKEY_free(p384);
}

static void test_other_keys_are_refused(void)
{
    EVP_PKEY *rsa1024 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
    EVP_PKEY *k1 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "secp256k1");
    EVP_PKEY *ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    CK_KEY_TYPE type;

    CU_ASSERT_FATAL(rsa1024 != NULL && k1 != NULL && ed != NULL);
    CU_ASSERT_EQUAL(parse(rsa1024, &type), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(k1, &type), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(ed, &type), HF_STATUS_BAD_REQUEST);
    EVP_PKEY_free(rsa1024);
    EVP_PKEY_free(k1);
    EVP_PKEY_free(ed);
}

static void test_only_one_pkcs8_is_read(void)
{
    size_t len = 0;
    unsigned char *der = pkcs8_of(rsa2048, &len);
    unsigned char *rsa_der = NULL;
    EVP_PKEY *out = NULL;
    CK_KEY_TYPE type;
    char why[160];
    int n;

    CU_ASSERT_FATAL(der != NULL);
    der[len] = 0; /* pkcs8_of leaves a byte of room */
    CU_ASSERT_EQUAL(hf_cse_pk_key_parse(der, len + 1, &out, &type, why, sizeof(why)),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(hf_cse_pk_key_parse(der, len - 1, &out, &type, why, sizeof(why)),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_PTR_NULL(out);
    /* The bare PKCS#1 RSAPrivateKey is not a PKCS#8. */
    n = i2d_PrivateKey(rsa2048, &rsa_der);
    CU_ASSERT_FATAL(n > 0);
    CU_ASSERT_EQUAL(hf_cse_pk_key_parse(rsa_der, (size_t)n, &out, &type, why, sizeof(why)),
                    HF_STATUS_BAD_REQUEST);
    OPENSSL_free(rsa_der);
    free(der);
}

/* rsa2048 with one CRT exponent changed: a key that would sign wrongly. */
static EVP_PKEY *rsa_with_bad_crt(void)
{
    static const char *names[] = {
        OSSL_PKEY_PARAM_RSA_N,         OSSL_PKEY_PARAM_RSA_E,
        OSSL_PKEY_PARAM_RSA_D,         OSSL_PKEY_PARAM_RSA_FACTOR1,
        OSSL_PKEY_PARAM_RSA_FACTOR2,   OSSL_PKEY_PARAM_RSA_EXPONENT1,
        OSSL_PKEY_PARAM_RSA_EXPONENT2, OSSL_PKEY_PARAM_RSA_COEFFICIENT1,
    };
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    BIGNUM *bn[8] = {NULL};
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    EVP_PKEY *out = NULL;

    for (size_t i = 0; i < 8; i++) {
        CU_ASSERT_FATAL(EVP_PKEY_get_bn_param(rsa2048, names[i], &bn[i]));
        if (i == 5) BN_add_word(bn[i], 2);
        OSSL_PARAM_BLD_push_BN(bld, names[i], bn[i]);
    }
    params = OSSL_PARAM_BLD_to_param(bld);
    CU_ASSERT_FATAL(params != NULL && ctx != NULL && EVP_PKEY_fromdata_init(ctx) == 1);
    CU_ASSERT_FATAL(EVP_PKEY_fromdata(ctx, &out, EVP_PKEY_KEYPAIR, params) == 1);
    for (size_t i = 0; i < 8; i++)
        BN_clear_free(bn[i]);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    EVP_PKEY_CTX_free(ctx);
    return out;
}

static void test_inconsistent_key_is_found(void)
{
    EVP_PKEY *bad = rsa_with_bad_crt();

    CU_ASSERT_FATAL(bad != NULL);
    CU_ASSERT_FALSE(hf_cse_pk_key_is_consistent(bad));
    CU_ASSERT_TRUE(hf_cse_pk_key_is_consistent(rsa2048));
    CU_ASSERT_TRUE(hf_cse_pk_key_is_consistent(p256));
    EVP_PKEY_free(bad);
}

/* SHA-256(SPKI) with the SPKI from OpenSSL's encoder, not the i2d_PUBKEY the plugin uses. */
static void spki_hash_expected(const EVP_PKEY *pkey, unsigned char out[HF_CSE_PK_SPKI_HASH_LEN])
{
    OSSL_ENCODER_CTX *ectx = OSSL_ENCODER_CTX_new_for_pkey(pkey, EVP_PKEY_PUBLIC_KEY, "DER",
                                                           "SubjectPublicKeyInfo", NULL);
    unsigned char *spki = NULL;
    size_t len = 0;

    CU_ASSERT_FATAL(ectx != NULL && OSSL_ENCODER_to_data(ectx, &spki, &len) == 1);
    CU_ASSERT_FATAL(EVP_Digest(spki, len, out, NULL, EVP_sha256(), NULL) == 1);
    OPENSSL_free(spki);
    OSSL_ENCODER_CTX_free(ectx);
}

static void test_spki_hash(void)
{
    unsigned char got[HF_CSE_PK_SPKI_HASH_LEN], want[HF_CSE_PK_SPKI_HASH_LEN];

    CU_ASSERT_FATAL(hf_cse_pk_spki_hash(rsa2048, got));
    spki_hash_expected(rsa2048, want);
    CU_ASSERT(memcmp(got, want, sizeof(got)) == 0);
    CU_ASSERT_FATAL(hf_cse_pk_spki_hash(p256, got));
    spki_hash_expected(p256, want);
    CU_ASSERT(memcmp(got, want, sizeof(got)) == 0);
}

static void test_algorithm_table(void)
{
    static const struct {
        const char *name;
        enum hf_cse_pk_use use;
        CK_MECHANISM_TYPE mech, hash;
        CK_RSA_PKCS_MGF_TYPE mgf;
        size_t hash_len;
    } want[] = {
        {"RSA/ECB/PKCS1Padding", HF_CSE_PK_DECRYPT, CKM_RSA_PKCS, 0, 0, 0},
        {"RSA/ECB/OAEPwithSHA-1andMGF1Padding", HF_CSE_PK_DECRYPT, CKM_RSA_PKCS_OAEP, CKM_SHA_1,
         CKG_MGF1_SHA1, 20},
        {"RSA/ECB/OAEPwithSHA-256andMGF1Padding", HF_CSE_PK_DECRYPT, CKM_RSA_PKCS_OAEP, CKM_SHA256,
         CKG_MGF1_SHA256, 32},
        {"RSA/ECB/OAEPwithSHA-512andMGF1Padding", HF_CSE_PK_DECRYPT, CKM_RSA_PKCS_OAEP, CKM_SHA512,
         CKG_MGF1_SHA512, 64},
        {"SHA1withRSA", HF_CSE_PK_SIGN, CKM_RSA_PKCS, CKM_SHA_1, 0, 20},
        {"SHA256withRSA", HF_CSE_PK_SIGN, CKM_RSA_PKCS, CKM_SHA256, 0, 32},
        {"SHA512withRSA", HF_CSE_PK_SIGN, CKM_RSA_PKCS, CKM_SHA512, 0, 64},
        {"SHA1withRSA/PSS", HF_CSE_PK_SIGN, CKM_RSA_PKCS_PSS, CKM_SHA_1, CKG_MGF1_SHA1, 20},
        {"SHA256withRSA/PSS", HF_CSE_PK_SIGN, CKM_RSA_PKCS_PSS, CKM_SHA256, CKG_MGF1_SHA256, 32},
        {"SHA512withRSA/PSS", HF_CSE_PK_SIGN, CKM_RSA_PKCS_PSS, CKM_SHA512, CKG_MGF1_SHA512, 64},
    };

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct hf_cse_pk_alg *a = hf_cse_pk_alg_find(want[i].name, want[i].use);

        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_EQUAL(a->mechanism, want[i].mech);
        CU_ASSERT_EQUAL(a->hash, want[i].hash);
        CU_ASSERT_EQUAL(a->mgf, want[i].mgf);
        CU_ASSERT_EQUAL(a->hash_len, want[i].hash_len);
        /* The other operation never takes it. */
        CU_ASSERT_PTR_NULL(hf_cse_pk_alg_find(want[i].name, !want[i].use));
    }
    /* Java's spelling (JCA names are case-insensitive). */
    CU_ASSERT_PTR_NOT_NULL(
        hf_cse_pk_alg_find("RSA/ECB/OAEPWithSHA-256AndMGF1Padding", HF_CSE_PK_DECRYPT));
    CU_ASSERT_PTR_NULL(hf_cse_pk_alg_find("RSA/ECB/NoPadding", HF_CSE_PK_DECRYPT));
    CU_ASSERT_PTR_NULL(hf_cse_pk_alg_find("SHA384withRSA", HF_CSE_PK_SIGN));
    CU_ASSERT_PTR_NULL(hf_cse_pk_alg_find("SHA256withECDSA", HF_CSE_PK_SIGN));
    CU_ASSERT_PTR_NULL(hf_cse_pk_alg_find("SHA256withRSA ", HF_CSE_PK_SIGN));
    CU_ASSERT_PTR_NULL(hf_cse_pk_alg_find(NULL, HF_CSE_PK_SIGN));
}

static void test_mechanism_parameters(void)
{
    static const unsigned char label[] = "lbl";
    struct hf_cse_pk_mech m;
    const struct hf_cse_pk_alg *a;

    a = hf_cse_pk_alg_find("RSA/ECB/OAEPwithSHA-512andMGF1Padding", HF_CSE_PK_DECRYPT);
    hf_cse_pk_mechanism(a, label, 3, 0, &m);
    CU_ASSERT_EQUAL(m.mech.mechanism, CKM_RSA_PKCS_OAEP);
    CU_ASSERT_PTR_EQUAL(m.mech.pParameter, &m.params.oaep);
    CU_ASSERT_EQUAL(m.mech.ulParameterLen, sizeof(CK_RSA_PKCS_OAEP_PARAMS));
    CU_ASSERT_EQUAL(m.params.oaep.hashAlg, CKM_SHA512);
    CU_ASSERT_EQUAL(m.params.oaep.mgf, CKG_MGF1_SHA512);
    CU_ASSERT_EQUAL(m.params.oaep.source, CKZ_DATA_SPECIFIED);
    CU_ASSERT_PTR_EQUAL(m.params.oaep.pSourceData, label);
    CU_ASSERT_EQUAL(m.params.oaep.ulSourceDataLen, 3);
    a = hf_cse_pk_alg_find("SHA256withRSA/PSS", HF_CSE_PK_SIGN);
    hf_cse_pk_mechanism(a, NULL, 0, 17, &m);
    CU_ASSERT_EQUAL(m.mech.mechanism, CKM_RSA_PKCS_PSS);
    CU_ASSERT_EQUAL(m.params.pss.hashAlg, CKM_SHA256);
    CU_ASSERT_EQUAL(m.params.pss.mgf, CKG_MGF1_SHA256);
    CU_ASSERT_EQUAL(m.params.pss.sLen, 17);
    a = hf_cse_pk_alg_find("SHA1withRSA", HF_CSE_PK_SIGN);
    hf_cse_pk_mechanism(a, NULL, 0, 0, &m);
    CU_ASSERT_EQUAL(m.mech.mechanism, CKM_RSA_PKCS);
    CU_ASSERT_PTR_NULL(m.mech.pParameter);
    CU_ASSERT_EQUAL(m.mech.ulParameterLen, 0);
}

/* A PKCS#1 v1.5 signature of in with rsa2048: over in as given (md NULL: what CKM_RSA_PKCS
 * does), or over the digest in with md (OpenSSL then builds the DigestInfo: RSA_sign). */
static size_t sign(const char *md, const unsigned char *in, size_t in_len, unsigned char *sig)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, rsa2048, NULL);
    size_t len = 256;

    CU_ASSERT_FATAL(ctx != NULL && EVP_PKEY_sign_init(ctx) == 1);
    CU_ASSERT_FATAL(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1);
    if (md != NULL) CU_ASSERT_FATAL(EVP_PKEY_CTX_set_signature_md(ctx, EVP_get_digestbyname(md)));
    CU_ASSERT_FATAL(EVP_PKEY_sign(ctx, sig, &len, in, in_len) == 1);
    EVP_PKEY_CTX_free(ctx);
    return len;
}

static void test_digest_info_matches_openssl(void)
{
    static const char *names[] = {"SHA1withRSA", "SHA256withRSA", "SHA512withRSA"};

    for (size_t i = 0; i < 3; i++) {
        const struct hf_cse_pk_alg *a = hf_cse_pk_alg_find(names[i], HF_CSE_PK_SIGN);
        unsigned char digest[64], ours[256], theirs[256], *di;
        unsigned int dlen = 0;
        size_t di_len = 0;

        CU_ASSERT_FATAL(a != NULL);
        CU_ASSERT_FATAL(
            EVP_Digest("message", 7, digest, &dlen, EVP_get_digestbyname(a->md), NULL) == 1);
        CU_ASSERT_EQUAL(dlen, a->hash_len);
        di = hf_cse_pk_digest_info(a, digest, dlen, &di_len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(di);
        CU_ASSERT_EQUAL(di_len, (a->hash_len == 20 ? 15 : 19) + a->hash_len);
        CU_ASSERT_EQUAL(sign(NULL, di, di_len, ours), 256);
        CU_ASSERT_EQUAL(sign(a->md, digest, dlen, theirs), 256);
        CU_ASSERT(memcmp(ours, theirs, 256) == 0);
        OPENSSL_free(di);
        /* The digest is given, so its length is checked against the algorithm's. */
        CU_ASSERT_PTR_NULL(hf_cse_pk_digest_info(a, digest, dlen - 1, &di_len));
    }
    CU_ASSERT_PTR_NULL(
        hf_cse_pk_digest_info(hf_cse_pk_alg_find("RSA/ECB/PKCS1Padding", HF_CSE_PK_DECRYPT),
                              (const unsigned char *)"x", 1, &(size_t){0}));
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"payload round trip", test_payload_round_trip},
        {"payload bounds fit the spec", test_payload_bounds_fit_the_spec},
        {"payload parse fails closed", test_payload_parse_fails_closed},
        {"served keys parse", test_served_keys_parse},
        {"other keys are refused", test_other_keys_are_refused},
        {"only one pkcs8 is read", test_only_one_pkcs8_is_read},
        {"inconsistent key is found", test_inconsistent_key_is_found},
        {"spki hash", test_spki_hash},
        {"algorithm table", test_algorithm_table},
        {"mechanism parameters", test_mechanism_parameters},
        {"digest info matches openssl", test_digest_info_matches_openssl},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"cse-pk", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
