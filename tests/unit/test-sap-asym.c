/* SAP HYOK's asymmetric algorithms (gateway/plugins/sap-hyok/asym.[ch] over request.h's enum
 * parsers): each algorithm name's hash and mechanism, the exact spelling the spec's enums
 * require, the OAEP plaintext limit (checked against OpenSSL's own RSA-OAEP on a real key, so the
 * formula cannot only agree with itself), the RAW and DIGEST message rules and the PSS
 * mechanism's parameters. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/sap-hyok/asym.h"

#include <string.h>

#include <openssl/evp.h>
#include <openssl/rsa.h>

static struct hf_sap_hash oaep(const char *name)
{
    struct hf_sap_hash h = {0};

    CU_ASSERT_TRUE(hf_sap_oaep_alg_parse(name, &h));
    return h;
}

static struct hf_sap_hash pss(const char *name)
{
    struct hf_sap_hash h = {0};

    CU_ASSERT_TRUE(hf_sap_pss_alg_parse(name, &h));
    return h;
}

static void test_oaep_names_map_to_their_hash(void)
{
    static const struct {
        const char *name, *md;
        CK_MECHANISM_TYPE hash;
        CK_RSA_PKCS_MGF_TYPE mgf;
        size_t len;
    } want[] = {{"RSAES_OAEP_SHA_1", "SHA1", CKM_SHA_1, CKG_MGF1_SHA1, 20},
                {"RSAES_OAEP_SHA_256", "SHA256", CKM_SHA256, CKG_MGF1_SHA256, 32},
                {"RSAES_OAEP_SHA_384", "SHA384", CKM_SHA384, CKG_MGF1_SHA384, 48},
                {"RSAES_OAEP_SHA_512", "SHA512", CKM_SHA512, CKG_MGF1_SHA512, 64}};

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct hf_sap_hash h = oaep(want[i].name);

        CU_ASSERT_EQUAL(h.mech, want[i].hash);
        CU_ASSERT_EQUAL(h.mgf, want[i].mgf);
        CU_ASSERT_EQUAL(h.len, want[i].len);
        CU_ASSERT_STRING_EQUAL(h.name, want[i].md);
        /* The EVP name is one OpenSSL knows, of that length. */
        CU_ASSERT_EQUAL(EVP_MD_get_size(EVP_get_digestbyname(h.name)), (int)want[i].len);
    }
}

/* RAW signs with the hash-and-sign mechanism (the module hashes), DIGEST with CKM_RSA_PKCS_PSS
 * over the given hash; both with MGF1 on the same hash and the hash's length of salt. */
static void test_pss_names_map_to_their_mechanisms(void)
{
    static const struct {
        const char *name;
        CK_MECHANISM_TYPE hash, sign;
        CK_RSA_PKCS_MGF_TYPE mgf;
        size_t len;
    } want[] = {{"RSASSA_PSS_SHA_256", CKM_SHA256, CKM_SHA256_RSA_PKCS_PSS, CKG_MGF1_SHA256, 32},
                {"RSASSA_PSS_SHA_384", CKM_SHA384, CKM_SHA384_RSA_PKCS_PSS, CKG_MGF1_SHA384, 48},
                {"RSASSA_PSS_SHA_512", CKM_SHA512, CKM_SHA512_RSA_PKCS_PSS, CKG_MGF1_SHA512, 64}};

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct hf_sap_hash h = pss(want[i].name);
        struct hf_sap_pss_mech m;

        CU_ASSERT_TRUE_FATAL(hf_sap_pss_mechanism(&h, HF_SAP_MESSAGE_RAW, &m));
        CU_ASSERT_EQUAL(m.mech.mechanism, want[i].sign);
        CU_ASSERT_PTR_EQUAL(m.mech.pParameter, &m.params);
        CU_ASSERT_EQUAL(m.mech.ulParameterLen, sizeof(CK_RSA_PKCS_PSS_PARAMS));
        CU_ASSERT_EQUAL(m.params.hashAlg, want[i].hash);
        CU_ASSERT_EQUAL(m.params.mgf, want[i].mgf);
        CU_ASSERT_EQUAL(m.params.sLen, want[i].len);
        CU_ASSERT_TRUE_FATAL(hf_sap_pss_mechanism(&h, HF_SAP_MESSAGE_DIGEST, &m));
        CU_ASSERT_EQUAL(m.mech.mechanism, CKM_RSA_PKCS_PSS);
        CU_ASSERT_EQUAL(m.params.hashAlg, want[i].hash);
        CU_ASSERT_EQUAL(m.params.mgf, want[i].mgf);
        CU_ASSERT_EQUAL(m.params.sLen, want[i].len);
    }
}

/* The spec's enums are exact: other case, other families' names, SHA-1 PSS, trailing bytes and
 * empty strings are bad enums (400), never a guess. */
static void test_other_spellings_are_unknown(void)
{
    static const char *const bad_oaep[] = {"rsaes_oaep_sha_256",
                                           "RSAES_OAEP_SHA_224",
                                           "RSAES_OAEP_SHA256",
                                           "RSAES_OAEP_SHA_256 ",
                                           "RSASSA_PSS_SHA_256",
                                           "RSAES_OAEP_SHA_",
                                           "",
                                           "RSAES_PKCS1_V1_5"};
    static const char *const bad_pss[] = {"RSASSA_PSS_SHA_1",     "rsassa_pss_sha_256",
                                          "RSAES_OAEP_SHA_256",   "RSASSA_PSS_SHA_256\n",
                                          "RSASSA_PKCS1_SHA_256", ""};
    struct hf_sap_hash h;
    struct hf_sap_pss_mech m;

    for (size_t i = 0; i < sizeof(bad_oaep) / sizeof(bad_oaep[0]); i++)
        CU_ASSERT_FALSE(hf_sap_oaep_alg_parse(bad_oaep[i], &h));
    for (size_t i = 0; i < sizeof(bad_pss) / sizeof(bad_pss[0]); i++)
        CU_ASSERT_FALSE(hf_sap_pss_alg_parse(bad_pss[i], &h));
    CU_ASSERT_FALSE(hf_sap_oaep_alg_parse(NULL, &h));
    CU_ASSERT_FALSE(hf_sap_pss_alg_parse(NULL, &h));
    /* No PSS mechanism for a hash PKCS#11 has none for, and none for no hash. */
    h = oaep("RSAES_OAEP_SHA_256");
    h.mech = CKM_MD5;
    CU_ASSERT_FALSE(hf_sap_pss_mechanism(&h, HF_SAP_MESSAGE_RAW, &m));
    CU_ASSERT_FALSE(hf_sap_pss_mechanism(NULL, HF_SAP_MESSAGE_RAW, &m));
}

static void test_message_types(void)
{
    enum hf_sap_message_type t = HF_SAP_MESSAGE_DIGEST;

    CU_ASSERT_TRUE(hf_sap_message_type_parse("RAW", &t));
    CU_ASSERT_EQUAL(t, HF_SAP_MESSAGE_RAW);
    CU_ASSERT_TRUE(hf_sap_message_type_parse("DIGEST", &t));
    CU_ASSERT_EQUAL(t, HF_SAP_MESSAGE_DIGEST);
    CU_ASSERT_FALSE(hf_sap_message_type_parse("raw", &t));
    CU_ASSERT_FALSE(hf_sap_message_type_parse("DIGESTED", &t));
    CU_ASSERT_FALSE(hf_sap_message_type_parse("", &t));
    CU_ASSERT_FALSE(hf_sap_message_type_parse(NULL, &t));
    CU_ASSERT_EQUAL(t, HF_SAP_MESSAGE_DIGEST); /* untouched by the refusals */
}

static void test_oaep_limits_of_3072_and_4096(void)
{
    struct hf_sap_hash h1 = oaep("RSAES_OAEP_SHA_1"), h256 = oaep("RSAES_OAEP_SHA_256");
    struct hf_sap_hash h384 = oaep("RSAES_OAEP_SHA_384"), h512 = oaep("RSAES_OAEP_SHA_512");

    CU_ASSERT_EQUAL(hf_sap_oaep_plaintext_max(&h1, 384), 342);
    CU_ASSERT_EQUAL(hf_sap_oaep_plaintext_max(&h256, 384), 318);
    CU_ASSERT_EQUAL(hf_sap_oaep_plaintext_max(&h384, 384), 286);
    CU_ASSERT_EQUAL(hf_sap_oaep_plaintext_max(&h512, 384), 254);
    CU_ASSERT_EQUAL(hf_sap_oaep_plaintext_max(&h1, 512), 470);
    CU_ASSERT_EQUAL(hf_sap_oaep_plaintext_max(&h512, 512), 382);
    /* A modulus too short for the hash holds nothing (and never wraps round). */
    CU_ASSERT_EQUAL(hf_sap_oaep_plaintext_max(&h512, 130), 0);
    CU_ASSERT_EQUAL(hf_sap_oaep_plaintext_max(&h512, 129), 0);
    CU_ASSERT_EQUAL(hf_sap_oaep_plaintext_max(&h512, 0), 0);
    CU_ASSERT_EQUAL(hf_sap_oaep_plaintext_max(NULL, 384), 0);
}

static int oaep_encrypt(EVP_PKEY *pkey, const char *md, const unsigned char *in, size_t len)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(pkey, NULL);
    unsigned char out[384];
    size_t outlen = sizeof(out);
    int ok = ctx != NULL && EVP_PKEY_encrypt_init(ctx) > 0 &&
             EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) > 0 &&
             EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_get_digestbyname(md)) > 0 &&
             EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_get_digestbyname(md)) > 0 &&
             EVP_PKEY_encrypt(ctx, out, &outlen, in, len) > 0;

    EVP_PKEY_CTX_free(ctx);
    return ok;
}

/* OpenSSL encrypts exactly the limit and refuses one byte more, for every hash. */
static void test_oaep_limit_is_openssls(void)
{
    static const char *const names[] = {"RSAES_OAEP_SHA_1", "RSAES_OAEP_SHA_256",
                                        "RSAES_OAEP_SHA_384", "RSAES_OAEP_SHA_512"};
    static unsigned char in[384];
    EVP_PKEY *pkey = EVP_RSA_gen(3072);

    CU_ASSERT_PTR_NOT_NULL_FATAL(pkey);
    for (size_t i = 0; i < 4; i++) {
        struct hf_sap_hash h = oaep(names[i]);
        size_t max = hf_sap_oaep_plaintext_max(&h, 384);

        CU_ASSERT_TRUE(oaep_encrypt(pkey, h.name, in, max));
        CU_ASSERT_FALSE(oaep_encrypt(pkey, h.name, in, max + 1));
    }
    EVP_PKEY_free(pkey);
}

static void test_messages_raw_and_digest(void)
{
    struct hf_sap_hash a256 = pss("RSASSA_PSS_SHA_256"), a384 = pss("RSASSA_PSS_SHA_384");
    struct hf_sap_hash a512 = pss("RSASSA_PSS_SHA_512");
    char why[256] = "";

    CU_ASSERT_TRUE(hf_sap_pss_message_is_valid(&a256, HF_SAP_MESSAGE_RAW, 0, why, sizeof(why)));
    CU_ASSERT_TRUE(hf_sap_pss_message_is_valid(&a256, HF_SAP_MESSAGE_RAW, 32, why, sizeof(why)));
    CU_ASSERT_TRUE(hf_sap_pss_message_is_valid(&a512, HF_SAP_MESSAGE_RAW, 4096, why, sizeof(why)));
    CU_ASSERT_FALSE(hf_sap_pss_message_is_valid(&a256, HF_SAP_MESSAGE_RAW, 4097, why, sizeof(why)));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "4097"));
    CU_ASSERT_TRUE(hf_sap_pss_message_is_valid(&a256, HF_SAP_MESSAGE_DIGEST, 32, why, sizeof(why)));
    CU_ASSERT_TRUE(hf_sap_pss_message_is_valid(&a384, HF_SAP_MESSAGE_DIGEST, 48, why, sizeof(why)));
    CU_ASSERT_TRUE(hf_sap_pss_message_is_valid(&a512, HF_SAP_MESSAGE_DIGEST, 64, why, sizeof(why)));
    /* Another hash's length is as wrong as any other. */
    CU_ASSERT_FALSE(
        hf_sap_pss_message_is_valid(&a256, HF_SAP_MESSAGE_DIGEST, 48, why, sizeof(why)));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "48-byte"));
    CU_ASSERT_FALSE(
        hf_sap_pss_message_is_valid(&a384, HF_SAP_MESSAGE_DIGEST, 32, why, sizeof(why)));
    CU_ASSERT_FALSE(hf_sap_pss_message_is_valid(&a512, HF_SAP_MESSAGE_DIGEST, 0, why, sizeof(why)));
    CU_ASSERT_FALSE(
        hf_sap_pss_message_is_valid(&a512, HF_SAP_MESSAGE_DIGEST, 65, why, sizeof(why)));
    CU_ASSERT_FALSE(hf_sap_pss_message_is_valid(NULL, HF_SAP_MESSAGE_RAW, 1, why, sizeof(why)));
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"OAEP names map to their hash", test_oaep_names_map_to_their_hash},
        {"PSS names map to their mechanisms", test_pss_names_map_to_their_mechanisms},
        {"other spellings are unknown", test_other_spellings_are_unknown},
        {"message types RAW and DIGEST", test_message_types},
        {"OAEP limits of RSA-3072 and 4096", test_oaep_limits_of_3072_and_4096},
        {"OAEP limit is OpenSSL's", test_oaep_limit_is_openssls},
        {"messages: RAW and DIGEST sizes", test_messages_raw_and_digest},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"sap-asym", NULL, NULL, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
