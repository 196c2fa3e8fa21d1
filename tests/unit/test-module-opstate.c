/* PKCS#11 2.40 section 5.2's operation-state rules through holdfast-pkcs11.so, for every
 * operation a caller runs in one or several parts: a size query (NULL output) and
 * CKR_BUFFER_TOO_SMALL keep the operation active, and the answer then comes whole; any other
 * error ends it (the next call answers CKR_OPERATION_NOT_INITIALIZED), as does success; an
 * Update that fails ends it too; C_*Init on an active operation is CKR_OPERATION_ACTIVE. */
#include "hf-build.h"

#include <string.h>

#include "harness.h"
#include "module-loader.h"

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE sess;
static CK_OBJECT_HANDLE aes, ec_pub, ec_priv;
static CK_BBOOL yes = CK_TRUE;
static unsigned char iv[12] = {7};
static CK_GCM_PARAMS gcm = {iv, sizeof(iv), 96, NULL, 0, 128};
static CK_MECHANISM gcm_mech = {CKM_AES_GCM, &gcm, sizeof(gcm)};
static CK_MECHANISM ecdsa = {CKM_ECDSA_SHA256, NULL, 0};
static CK_MECHANISM sha256 = {CKM_SHA256, NULL, 0};
static unsigned char msg[] = "the operation-state rules of section 5.2";
#define MSG_LEN (sizeof(msg) - 1)

static int suite_init(void)
{
    static const CK_BYTE p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
    CK_MECHANISM aes_gen = {CKM_AES_KEY_GEN, NULL, 0}, ec_gen = {CKM_EC_KEY_PAIR_GEN, NULL, 0};
    CK_ULONG len = 32;
    CK_ATTRIBUTE at[] = {{CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_LABEL, "opstate-aes", 11}};
    CK_ATTRIBUTE pt[] = {{CKA_EC_PARAMS, (void *)p256, sizeof(p256)},
                         {CKA_LABEL, "opstate-ec", 10}};
    CK_ATTRIBUTE vt[] = {{CKA_SIGN, &yes, 1}, {CKA_LABEL, "opstate-ec", 10}};

    if (hf_test_env_setup(&env, NULL) != 0 || hf_test_module_load(&mod) != 0) return -1;
    p11 = mod.p11;
    if (hf_test_module_start(p11, &sess) != CKR_OK) return -1;
    if (p11->C_GenerateKey(sess, &aes_gen, at, 2, &aes) != CKR_OK) return -1;
    return p11->C_GenerateKeyPair(sess, &ec_gen, pt, 2, vt, 2, &ec_pub, &ec_priv) == CKR_OK ? 0
                                                                                            : -1;
}

static int suite_clean(void)
{
    if (p11) p11->C_Finalize(NULL);
    hf_test_module_unload(&mod);
    hf_test_env_teardown(&env);
    return 0;
}

/* An encryption of msg for the decrypt cases: C || T. */
static CK_ULONG sealed(unsigned char *out, CK_ULONG cap)
{
    CK_ULONG len = cap;

    CU_ASSERT_EQUAL_FATAL(p11->C_EncryptInit(sess, &gcm_mech, aes), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_Encrypt(sess, msg, MSG_LEN, out, &len), CKR_OK);
    return len;
}

static void test_encrypt(void)
{
    unsigned char out[128];
    CK_ULONG len = 0;

    CU_ASSERT_EQUAL_FATAL(p11->C_EncryptInit(sess, &gcm_mech, aes), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &gcm_mech, aes), CKR_OPERATION_ACTIVE);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, msg, MSG_LEN, NULL, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, MSG_LEN + 16);
    len = 4;
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, msg, MSG_LEN, out, &len), CKR_BUFFER_TOO_SMALL);
    len = sizeof(out);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, msg, MSG_LEN, out, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, MSG_LEN + 16);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, msg, MSG_LEN, out, &len), CKR_OPERATION_NOT_INITIALIZED);
    /* Another error ends it. */
    CU_ASSERT_EQUAL_FATAL(p11->C_EncryptInit(sess, &gcm_mech, aes), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, msg, MSG_LEN, out, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, msg, MSG_LEN, out, &len), CKR_OPERATION_NOT_INITIALIZED);
}

static void test_decrypt(void)
{
    unsigned char ct[128], pt[128];
    CK_ULONG ctlen = sealed(ct, sizeof(ct)), len = 0;

    CU_ASSERT_EQUAL_FATAL(p11->C_DecryptInit(sess, &gcm_mech, aes), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, ct, ctlen, NULL, &len), CKR_OK);
    CU_ASSERT(len >= MSG_LEN);
    len = 2;
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, ct, ctlen, pt, &len), CKR_BUFFER_TOO_SMALL);
    len = sizeof(pt);
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, ct, ctlen, pt, &len), CKR_OK);
    CU_ASSERT(len == MSG_LEN && memcmp(pt, msg, len) == 0);
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, ct, ctlen, pt, &len), CKR_OPERATION_NOT_INITIALIZED);
    /* A tampered tag ends it: a second try is not a second guess on the same operation. */
    ct[ctlen - 1] ^= 1;
    CU_ASSERT_EQUAL_FATAL(p11->C_DecryptInit(sess, &gcm_mech, aes), CKR_OK);
    len = sizeof(pt);
    CU_ASSERT_NOT_EQUAL(p11->C_Decrypt(sess, ct, ctlen, pt, &len), CKR_OK);
    len = sizeof(pt);
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, ct, ctlen, pt, &len), CKR_OPERATION_NOT_INITIALIZED);
}

static void test_sign_single_and_multi_part(void)
{
    unsigned char sig[128];
    CK_ULONG len = 0;

    CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(sess, &ecdsa, ec_priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &ecdsa, ec_priv), CKR_OPERATION_ACTIVE);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, msg, MSG_LEN, NULL, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 64);
    len = 10;
    CU_ASSERT_EQUAL(p11->C_Sign(sess, msg, MSG_LEN, sig, &len), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(len, 64);
    len = sizeof(sig);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, msg, MSG_LEN, sig, &len), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, msg, MSG_LEN, sig, &len), CKR_OPERATION_NOT_INITIALIZED);
    /* Multi-part: a size query at Final keeps it, the real Final ends it. */
    CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(sess, &ecdsa, ec_priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SignUpdate(sess, msg, 10), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SignUpdate(sess, msg + 10, MSG_LEN - 10), CKR_OK);
    len = 0;
    CU_ASSERT_EQUAL(p11->C_SignFinal(sess, NULL, &len), CKR_OK);
    len = sizeof(sig);
    CU_ASSERT_EQUAL(p11->C_SignFinal(sess, sig, &len), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SignFinal(sess, sig, &len), CKR_OPERATION_NOT_INITIALIZED);
    /* A failed Update ends it. */
    CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(sess, &ecdsa, ec_priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SignUpdate(sess, NULL, 5), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_SignUpdate(sess, msg, 5), CKR_OPERATION_NOT_INITIALIZED);
}

static void test_verify(void)
{
    unsigned char sig[128];
    CK_ULONG len = sizeof(sig);

    CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(sess, &ecdsa, ec_priv), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_Sign(sess, msg, MSG_LEN, sig, &len), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_VerifyInit(sess, &ecdsa, ec_pub), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_VerifyInit(sess, &ecdsa, ec_pub), CKR_OPERATION_ACTIVE);
    CU_ASSERT_EQUAL(p11->C_Verify(sess, msg, MSG_LEN, sig, len), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Verify(sess, msg, MSG_LEN, sig, len), CKR_OPERATION_NOT_INITIALIZED);
    /* A bad signature is an answer that ends the operation. */
    sig[3] ^= 1;
    CU_ASSERT_EQUAL_FATAL(p11->C_VerifyInit(sess, &ecdsa, ec_pub), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Verify(sess, msg, MSG_LEN, sig, len), CKR_SIGNATURE_INVALID);
    sig[3] ^= 1;
    CU_ASSERT_EQUAL(p11->C_Verify(sess, msg, MSG_LEN, sig, len), CKR_OPERATION_NOT_INITIALIZED);
    /* Multi-part, with a wrong length at Final. */
    CU_ASSERT_EQUAL_FATAL(p11->C_VerifyInit(sess, &ecdsa, ec_pub), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_VerifyUpdate(sess, msg, MSG_LEN), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_VerifyFinal(sess, sig, 3), CKR_SIGNATURE_LEN_RANGE);
    CU_ASSERT_EQUAL(p11->C_VerifyFinal(sess, sig, len), CKR_OPERATION_NOT_INITIALIZED);
}

static void test_digest(void)
{
    unsigned char out[64];
    CK_ULONG len = 0;

    CU_ASSERT_EQUAL_FATAL(p11->C_DigestInit(sess, &sha256), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DigestInit(sess, &sha256), CKR_OPERATION_ACTIVE);
    CU_ASSERT_EQUAL(p11->C_Digest(sess, msg, MSG_LEN, NULL, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 32);
    len = 31;
    CU_ASSERT_EQUAL(p11->C_Digest(sess, msg, MSG_LEN, out, &len), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(len, 32);
    len = sizeof(out);
    CU_ASSERT_EQUAL(p11->C_Digest(sess, msg, MSG_LEN, out, &len), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Digest(sess, msg, MSG_LEN, out, &len), CKR_OPERATION_NOT_INITIALIZED);
    /* Another error ends it (the case: a failed C_Digest left the operation active). */
    CU_ASSERT_EQUAL_FATAL(p11->C_DigestInit(sess, &sha256), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Digest(sess, NULL, MSG_LEN, out, &len), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_Digest(sess, msg, MSG_LEN, out, &len), CKR_OPERATION_NOT_INITIALIZED);
    /* Multi-part: a too-small Final keeps it. */
    CU_ASSERT_EQUAL_FATAL(p11->C_DigestInit(sess, &sha256), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DigestUpdate(sess, msg, MSG_LEN), CKR_OK);
    len = 1;
    CU_ASSERT_EQUAL(p11->C_DigestFinal(sess, out, &len), CKR_BUFFER_TOO_SMALL);
    len = sizeof(out);
    CU_ASSERT_EQUAL(p11->C_DigestFinal(sess, out, &len), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DigestFinal(sess, out, &len), CKR_OPERATION_NOT_INITIALIZED);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"encrypt", test_encrypt},
        {"decrypt", test_decrypt},
        {"sign, single- and multi-part", test_sign_single_and_multi_part},
        {"verify", test_verify},
        {"digest", test_digest},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"module-opstate", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
