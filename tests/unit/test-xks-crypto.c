/* Holdfast's XKS AES-GCM construction (gateway/plugins/aws-xks/crypto.h): the spec's known-answer
 * vectors computed with the plugin's own AAD builder (OpenSSL doing the GCM), the spec's CDIV
 * example, the ciphertextMetadata format, and the same construction through the built
 * holdfast-pkcs11.so with the known key imported: the vectors again, every tampered input
 * refused, the spec's sizes, and a key that may not decrypt. */
#include "hf-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "gateway/plugin.h"
#include "gateway/plugins/aws-xks/crypto.h"
#include "harness.h"
#include "module-loader.h"

static const unsigned char kat_key[32] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                          11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                          22, 23, 24, 25, 26, 27, 28, 29, 30, 31};
static const unsigned char kat_iv[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
static const char kat_pt[] = "Hello World!";
static const char kat_aad[] = "project=nile,department=marketing";
static const char kat_cm[] = "key_version=1";
/* specs/aws-xks.md, "The AES-GCM construction". */
static const char kat_ct_b64[] = "D2e6d6rFlXT/LfOq";
static const char kat_tag_b64[] = "z16Jpi+YEVrPfy7xOkRNVw==";
static const char kat_tag_empty_b64[] = "+DX8ZJOvQVMTeK7gwOAsdg==";

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE sess;
static CK_OBJECT_HANDLE key_known, key_enc_only;

/* The decoding of a known-good base64 constant. */
static size_t b64(const char *in, unsigned char *out)
{
    size_t n = 0;

    CU_ASSERT_FATAL(hf_base64_decode(in, strlen(in), out, &n));
    return n;
}

/* AES-256-GCM in OpenSSL, AAD built by the plugin's builder: the reference. */
static void reference_seal(const char *aad, const char *cm, unsigned char *ct, unsigned char *tag)
{
    size_t full_len = 0;
    unsigned char *full =
        hf_xks_gcm_aad_new((const unsigned char *)aad, aad ? strlen(aad) : 0,
                           (const unsigned char *)cm, cm ? strlen(cm) : 0, &full_len);
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(full);
    CU_ASSERT_FATAL(c != NULL);
    CU_ASSERT_EQUAL(EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, kat_key, kat_iv), 1);
    CU_ASSERT_EQUAL(EVP_EncryptUpdate(c, NULL, &n, full, (int)full_len), 1);
    CU_ASSERT_EQUAL(EVP_EncryptUpdate(c, ct, &n, (const unsigned char *)kat_pt, 12), 1);
    CU_ASSERT_EQUAL(EVP_EncryptFinal_ex(c, ct + n, &n), 1);
    CU_ASSERT_EQUAL(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag), 1);
    EVP_CIPHER_CTX_free(c);
    free(full);
}

/* ---- pure: builders and the known answers ---------------------------------------------------- */

static void test_aad_layout_binds_both_lengths(void)
{
    size_t len = 0;
    unsigned char *a = hf_xks_gcm_aad_new(NULL, 0, NULL, 0, &len);
    unsigned char *b;

    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(len, 3);
    CU_ASSERT_EQUAL(memcmp(a, "\0\0\0", 3), 0);
    free(a);
    a = hf_xks_gcm_aad_new((const unsigned char *)"ab", 2, (const unsigned char *)"xyz", 3, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(len, 2 + 2 + 1 + 3);
    CU_ASSERT_EQUAL(memcmp(a,
                           "\x00\x02"
                           "ab\x03xyz",
                           8),
                    0);
    /* The spec's case: cm passed as aad and no cm must not give the same GCM AAD. */
    b = hf_xks_gcm_aad_new((const unsigned char *)"xyz", 3, NULL, 0, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_NOT_EQUAL(memcmp(a + 2, b + 2, 4), 0);
    free(a);
    free(b);
    /* 65535 bytes of aad fit the BE16; one more does not, nor does a 256-byte cm. */
    a = malloc(65536);
    CU_ASSERT_FATAL(a != NULL);
    memset(a, 7, 65536);
    b = hf_xks_gcm_aad_new(a, 65535, a, 255, &len);
    CU_ASSERT_PTR_NOT_NULL(b);
    CU_ASSERT_EQUAL(len, 2 + 65535 + 1 + 255);
    if (b) CU_ASSERT(b[0] == 0xff && b[1] == 0xff && b[65537] == 0xff);
    free(b);
    CU_ASSERT_PTR_NULL(hf_xks_gcm_aad_new(a, 65536, NULL, 0, &len));
    CU_ASSERT_PTR_NULL(hf_xks_gcm_aad_new(NULL, 0, a, 256, &len));
    CU_ASSERT_PTR_NULL(hf_xks_gcm_aad_new(NULL, 1, NULL, 0, &len));
    free(a);
}

static void test_known_answers_with_the_plugin_aad_builder(void)
{
    unsigned char ct[12], tag[16], want_ct[16], want_tag[16];

    CU_ASSERT_EQUAL(b64(kat_ct_b64, want_ct), 12);
    CU_ASSERT_EQUAL(b64(kat_tag_b64, want_tag), 16);
    reference_seal(kat_aad, kat_cm, ct, tag);
    CU_ASSERT_EQUAL(memcmp(ct, want_ct, 12), 0);
    CU_ASSERT_EQUAL(memcmp(tag, want_tag, 16), 0);
    /* No aad, no cm: GCM AAD 00 00 00; same keystream, another tag. */
    CU_ASSERT_EQUAL(b64(kat_tag_empty_b64, want_tag), 16);
    reference_seal(NULL, NULL, ct, tag);
    CU_ASSERT_EQUAL(memcmp(ct, want_ct, 12), 0);
    CU_ASSERT_EQUAL(memcmp(tag, want_tag, 16), 0);
}

static void test_cdiv_matches_the_spec_example(void)
{
    /* The spec's Appendix C: 33 bytes of AAD, 13 of metadata, IV, ciphertext and tag. */
    unsigned char iv[16], ct[16], tag[16], want[32], got[HF_XKS_CDIV_LEN];

    CU_ASSERT_EQUAL(b64("HMrlRw85cAJUd5Ax", iv), 12);
    CU_ASSERT_EQUAL(b64("ghxkK1txeDNn3q8Y", ct), 12);
    CU_ASSERT_EQUAL(b64("vBxN2ncH1oEkR8WVXpmyYQ==", tag), 16);
    CU_ASSERT_EQUAL(b64("qHA/ImC9h5HsLRXqCyPmWgYx7tzyoTplzILbP0fPXsc=", want), 32);
    CU_ASSERT_TRUE(hf_xks_cdiv((const unsigned char *)kat_aad, 33, (const unsigned char *)kat_cm,
                               13, iv, 12, ct, 12, tag, 16, got));
    CU_ASSERT_EQUAL(memcmp(got, want, 32), 0);
    /* Absent parts are empty strings: without the aad the value changes. */
    CU_ASSERT_TRUE(
        hf_xks_cdiv(NULL, 0, (const unsigned char *)kat_cm, 13, iv, 12, ct, 12, tag, 16, got));
    CU_ASSERT_NOT_EQUAL(memcmp(got, want, 32), 0);
}

static void test_ciphertext_metadata_carries_the_version(void)
{
    unsigned char cm[HF_XKS_CM_LEN];
    CK_ULONG v = 0;

    CU_ASSERT_TRUE(hf_xks_cm_encode(1, cm));
    CU_ASSERT_EQUAL(memcmp(cm, "\x01\x00\x00\x00\x01", 5), 0);
    CU_ASSERT_TRUE(hf_xks_cm_decode(cm, sizeof(cm), &v));
    CU_ASSERT_EQUAL(v, 1);
    CU_ASSERT_TRUE(hf_xks_cm_encode(0x01020304UL, cm));
    CU_ASSERT_EQUAL(memcmp(cm, "\x01\x01\x02\x03\x04", 5), 0);
    CU_ASSERT_TRUE(hf_xks_cm_decode(cm, sizeof(cm), &v));
    CU_ASSERT_EQUAL(v, 0x01020304UL);
    CU_ASSERT_FALSE(hf_xks_cm_encode(0, cm));
#if ULONG_MAX > 0xffffffffUL
    CU_ASSERT_FALSE(hf_xks_cm_encode(0x100000000UL, cm));
#endif
    /* What Holdfast did not write: another format byte, another length, version 0. */
    CU_ASSERT_FALSE(hf_xks_cm_decode((const unsigned char *)"\x02\x00\x00\x00\x01", 5, &v));
    CU_ASSERT_FALSE(hf_xks_cm_decode((const unsigned char *)"\x01\x00\x00\x01", 4, &v));
    CU_ASSERT_FALSE(hf_xks_cm_decode((const unsigned char *)"\x01\x00\x00\x00\x01\x00", 6, &v));
    CU_ASSERT_FALSE(hf_xks_cm_decode((const unsigned char *)"\x01\x00\x00\x00\x00", 5, &v));
    CU_ASSERT_FALSE(hf_xks_cm_decode((const unsigned char *)kat_cm, 13, &v));
}

/* ---- through PKCS#11 ------------------------------------------------------------------------- */

static CK_RV aes_import(const char *label, bool decrypt, CK_OBJECT_HANDLE *h)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_VALUE, (void *)kat_key, sizeof(kat_key)},
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, &yes, 1},
        {CKA_ENCRYPT, &yes, 1},
        {CKA_DECRYPT, decrypt ? &yes : &no, 1},
    };

    return p11->C_CreateObject(sess, tmpl, sizeof(tmpl) / sizeof(tmpl[0]), h);
}

static int module_init(void)
{
    if (hf_test_env_setup(&env, NULL) != 0 || hf_test_module_load(&mod) != 0) return -1;
    p11 = mod.p11;
    if (hf_test_module_start(p11, &sess) != CKR_OK) return -1;
    if (aes_import("xks-kat", true, &key_known) != CKR_OK ||
        aes_import("xks-kat-enc-only", false, &key_enc_only) != CKR_OK) {
        fprintf(stderr, "key import failed\n");
        return -1;
    }
    return 0;
}

static int module_clean(void)
{
    if (p11 != NULL) {
        p11->C_CloseSession(sess);
        p11->C_Finalize(NULL);
    }
    hf_test_module_unload(&mod);
    hf_test_env_teardown(&env);
    return 0;
}

static CK_RV seal(CK_OBJECT_HANDLE key, const unsigned char *iv, const char *aad, const char *cm,
                  const unsigned char *pt, size_t pt_len, unsigned char *ct, unsigned char *tag)
{
    return hf_xks_gcm_seal(p11, sess, key, iv, (const unsigned char *)aad, aad ? strlen(aad) : 0,
                           (const unsigned char *)cm, cm ? strlen(cm) : 0, pt, pt_len, ct, tag);
}

static CK_RV open_(CK_OBJECT_HANDLE key, const unsigned char *iv, size_t iv_len, const char *aad,
                   const char *cm, const unsigned char *ct, size_t ct_len, const unsigned char *tag,
                   unsigned char *pt)
{
    return hf_xks_gcm_open(p11, sess, key, iv, iv_len, (const unsigned char *)aad,
                           aad ? strlen(aad) : 0, (const unsigned char *)cm, cm ? strlen(cm) : 0,
                           ct, ct_len, tag, pt);
}

static void test_module_gives_the_known_answers(void)
{
    unsigned char ct[12], tag[16], want_ct[16], want_tag[16], back[12];

    CU_ASSERT_EQUAL(b64(kat_ct_b64, want_ct), 12);
    CU_ASSERT_EQUAL(b64(kat_tag_b64, want_tag), 16);
    CU_ASSERT_EQUAL(
        seal(key_known, kat_iv, kat_aad, kat_cm, (const unsigned char *)kat_pt, 12, ct, tag),
        CKR_OK);
    CU_ASSERT_EQUAL(memcmp(ct, want_ct, 12), 0);
    CU_ASSERT_EQUAL(memcmp(tag, want_tag, 16), 0);
    CU_ASSERT_EQUAL(open_(key_known, kat_iv, 12, kat_aad, kat_cm, want_ct, 12, want_tag, back),
                    CKR_OK);
    CU_ASSERT_EQUAL(memcmp(back, kat_pt, 12), 0);

    CU_ASSERT_EQUAL(b64(kat_tag_empty_b64, want_tag), 16);
    CU_ASSERT_EQUAL(seal(key_known, kat_iv, NULL, NULL, (const unsigned char *)kat_pt, 12, ct, tag),
                    CKR_OK);
    CU_ASSERT_EQUAL(memcmp(ct, want_ct, 12), 0);
    CU_ASSERT_EQUAL(memcmp(tag, want_tag, 16), 0);
}

static void test_module_refuses_every_tampered_input(void)
{
    unsigned char ct[12], tag[16], bad[16], back[12], zero[12] = {0}, iv16[16] = {0};

    CU_ASSERT_EQUAL_FATAL(
        seal(key_known, kat_iv, kat_aad, kat_cm, (const unsigned char *)kat_pt, 12, ct, tag),
        CKR_OK);
    memcpy(bad, ct, 12);
    bad[11] ^= 1;
    CU_ASSERT_EQUAL(open_(key_known, kat_iv, 12, kat_aad, kat_cm, bad, 12, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    CU_ASSERT_EQUAL(memcmp(back, zero, 12), 0); /* nothing unauthenticated comes out */
    memcpy(bad, tag, 16);
    bad[0] ^= 0x80;
    CU_ASSERT_EQUAL(open_(key_known, kat_iv, 12, kat_aad, kat_cm, ct, 12, bad, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    memcpy(bad, kat_iv, 12);
    bad[5] ^= 1;
    CU_ASSERT_EQUAL(open_(key_known, bad, 12, kat_aad, kat_cm, ct, 12, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    memcpy(iv16, kat_iv, 12);
    CU_ASSERT_EQUAL(open_(key_known, iv16, 16, kat_aad, kat_cm, ct, 12, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    CU_ASSERT_EQUAL(open_(key_known, kat_iv, 12, "project=nile,department=marketinG", kat_cm, ct,
                          12, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    CU_ASSERT_EQUAL(open_(key_known, kat_iv, 12, kat_aad, "key_version=2", ct, 12, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    CU_ASSERT_EQUAL(open_(key_known, kat_iv, 12, kat_aad, NULL, ct, 12, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    CU_ASSERT_EQUAL(open_(key_known, kat_iv, 12, NULL, kat_cm, ct, 12, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    CU_ASSERT_EQUAL(open_(key_known, kat_iv, 12, kat_aad, kat_cm, ct, 11, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    CU_ASSERT_EQUAL(open_(key_known, kat_iv, 12, kat_aad, kat_cm, ct, 12, tag, back), CKR_OK);
}

static void test_module_binds_the_lengths(void)
{
    unsigned char ct[12], tag[16], back[12];

    /* The spec's example of what the lengths prevent: metadata moved into the aad. */
    CU_ASSERT_EQUAL_FATAL(
        seal(key_known, kat_iv, NULL, kat_cm, (const unsigned char *)kat_pt, 12, ct, tag), CKR_OK);
    CU_ASSERT_EQUAL(open_(key_known, kat_iv, 12, kat_cm, NULL, ct, 12, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    CU_ASSERT_EQUAL(open_(key_known, kat_iv, 12, NULL, kat_cm, ct, 12, tag, back), CKR_OK);
}

static void test_module_takes_the_spec_sizes(void)
{
    unsigned char *pt = malloc(4300), *ct = malloc(4300), *back = malloc(4300);
    unsigned char *aad = malloc(8193), tag[16], cm[HF_XKS_CM_LEN], empty_tag[16], scratch[1];

    CU_ASSERT_FATAL(pt && ct && back && aad);
    for (size_t i = 0; i < 4300; i++)
        pt[i] = (unsigned char)(i * 7);
    memset(aad, 'a', 8192);
    aad[8192] = '\0';
    CU_ASSERT_TRUE(hf_xks_cm_encode(3, cm));
    CU_ASSERT_EQUAL(
        hf_xks_gcm_seal(p11, sess, key_known, kat_iv, aad, 8192, cm, sizeof(cm), pt, 4300, ct, tag),
        CKR_OK);
    CU_ASSERT_NOT_EQUAL(memcmp(ct, pt, 4300), 0);
    CU_ASSERT_EQUAL(hf_xks_gcm_open(p11, sess, key_known, kat_iv, 12, aad, 8192, cm, sizeof(cm), ct,
                                    4300, tag, back),
                    CKR_OK);
    CU_ASSERT_EQUAL(memcmp(back, pt, 4300), 0);
    aad[8191] = 'b';
    CU_ASSERT_EQUAL(hf_xks_gcm_open(p11, sess, key_known, kat_iv, 12, aad, 8192, cm, sizeof(cm), ct,
                                    4300, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    /* An empty plaintext is a tag alone. */
    CU_ASSERT_EQUAL(hf_xks_gcm_seal(p11, sess, key_known, kat_iv, NULL, 0, cm, sizeof(cm), NULL, 0,
                                    NULL, empty_tag),
                    CKR_OK);
    CU_ASSERT_EQUAL(hf_xks_gcm_open(p11, sess, key_known, kat_iv, 12, NULL, 0, cm, sizeof(cm), NULL,
                                    0, empty_tag, scratch),
                    CKR_OK);
    free(pt);
    free(ct);
    free(back);
    free(aad);
}

static void test_module_refuses_decrypt_to_an_encrypt_only_key(void)
{
    unsigned char ct[12], tag[16], back[12];

    CU_ASSERT_EQUAL(
        seal(key_enc_only, kat_iv, kat_aad, kat_cm, (const unsigned char *)kat_pt, 12, ct, tag),
        CKR_OK);
    CU_ASSERT_EQUAL(open_(key_enc_only, kat_iv, 12, kat_aad, kat_cm, ct, 12, tag, back),
                    CKR_KEY_FUNCTION_NOT_PERMITTED);
    /* The session is free again: the known key still works on it. */
    CU_ASSERT_EQUAL(open_(key_known, kat_iv, 12, kat_aad, kat_cm, ct, 12, tag, back), CKR_OK);
}

int main(void)
{
    static CU_TestInfo pure_tests[] = {
        {"aad layout binds both lengths", test_aad_layout_binds_both_lengths},
        {"known answers with the plugin aad builder",
         test_known_answers_with_the_plugin_aad_builder},
        {"cdiv matches the spec example", test_cdiv_matches_the_spec_example},
        {"ciphertext metadata carries the version", test_ciphertext_metadata_carries_the_version},
        CU_TEST_INFO_NULL,
    };
    static CU_TestInfo module_tests[] = {
        {"module gives the known answers", test_module_gives_the_known_answers},
        {"module refuses every tampered input", test_module_refuses_every_tampered_input},
        {"module binds the lengths", test_module_binds_the_lengths},
        {"module takes the spec sizes", test_module_takes_the_spec_sizes},
        {"module refuses decrypt to an encrypt-only key",
         test_module_refuses_decrypt_to_an_encrypt_only_key},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"xks-gcm", NULL, NULL, NULL, NULL, pure_tests},
        {"xks-gcm-pkcs11", module_init, module_clean, NULL, NULL, module_tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
