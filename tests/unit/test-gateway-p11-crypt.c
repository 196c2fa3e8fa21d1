/* plugin.h's key operations through PKCS#11 (gateway/p11-crypt.c) and a key's versions by UUID
 * (gateway/keys-versions.c), on the built holdfast-pkcs11.so opened as holdfastd opens it:
 * AES-GCM against specs/sap-hyok.md's known answer, RSA-OAEP with each hash both ways, an RSA
 * object's public key equal to the module's modulus, the code/message error body. */
#include "hf-build.h"

#include "gateway/p11.h"
#include "gateway/request.h"
#include "tests/unit/gw-module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_SESSION_HANDLE admin;
static CK_OBJECT_HANDLE rsa_pub, rsa_priv, aes_kat;

static CK_RV rsa_generate(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE *pubh, CK_OBJECT_HANDLE *privh)
{
    CK_MECHANISM mech = {CKM_RSA_PKCS_KEY_PAIR_GEN, NULL, 0};
    CK_BBOOL yes = CK_TRUE;
    CK_ULONG bits = 2048;
    CK_BYTE e[] = {1, 0, 1};
    CK_ATTRIBUTE pt[] = {
        {CKA_LABEL, "p11-crypt-rsa", 13},
        {CKA_TOKEN, &yes, 1},
        {CKA_MODULUS_BITS, &bits, sizeof(bits)},
        {CKA_PUBLIC_EXPONENT, e, sizeof(e)},
        {CKA_ENCRYPT, &yes, 1},
    };
    CK_ATTRIBUTE vt[] = {
        {CKA_LABEL, "p11-crypt-rsa", 13}, {CKA_TOKEN, &yes, 1}, {CKA_DECRYPT, &yes, 1}};

    return hf_p11_functions()->C_GenerateKeyPair(s, &mech, pt, 5, vt, 3, pubh, privh);
}

/* The known answer's key, 00..1f, as a session object (the module imports those). */
static CK_RV aes_import(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE *h)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    unsigned char value[32];
    CK_ATTRIBUTE t[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_TOKEN, &no, 1},
        {CKA_VALUE, value, sizeof(value)},
        {CKA_ENCRYPT, &yes, 1},
        {CKA_DECRYPT, &yes, 1},
    };

    for (size_t i = 0; i < sizeof(value); i++)
        value[i] = (unsigned char)i;
    return hf_p11_functions()->C_CreateObject(s, t, 6, h);
}

static int suite_init(void)
{
    CK_FUNCTION_LIST_PTR p11;
    CK_SLOT_ID slot;
    CK_ULONG n = 1;
    CK_RV rv;

    if (hf_test_gw_module_open(&env, &mod) != 0) return -1;
    p11 = hf_p11_functions();
    if (p11->C_GetSlotList(CK_TRUE, &slot, &n) != CKR_OK ||
        p11->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &admin) != CKR_OK)
        return -1;
    if ((rv = rsa_generate(admin, &rsa_pub, &rsa_priv)) != CKR_OK ||
        (rv = aes_import(admin, &aes_kat)) != CKR_OK) {
        fprintf(stderr, "key set-up failed: 0x%lx\n", (unsigned long)rv);
        return -1;
    }
    return 0;
}

static int suite_clean(void)
{
    hf_p11_functions()->C_CloseSession(admin);
    hf_test_gw_module_close(&env, &mod);
    return 0;
}

/* The request's key-operation session, as a handler gets it. */
static CK_SESSION_HANDLE op_session(struct hf_request **req)
{
    CK_SESSION_HANDLE s = CK_INVALID_HANDLE;

    *req = hf_request_new("POST", "/p11-crypt");
    CU_ASSERT_PTR_NOT_NULL_FATAL(*req);
    CU_ASSERT_EQUAL_FATAL(hf_p11_begin(*req, "test", &s), CKR_OK);
    return s;
}

static char *b64(const unsigned char *b, size_t n)
{
    return hf_base64_encode(b, n);
}

/* specs/sap-hyok.md: key 00..1f, IV 00..0b, "testing": ciphertext M2elb6yLpQ==, tag
 * w3dJz9U5pTRn/T866ZyH0A== without aad and hxtVnm2l0Rsr+V7xGP/JJg== with aad "sap". */
static void test_gcm_known_answer_and_tamper(void)
{
    static const unsigned char pt[] = "testing";
    const size_t len = sizeof(pt) - 1;
    unsigned char iv[12], sealed[64], back[64];
    struct hf_request *req;
    CK_SESSION_HANDLE s;
    char *text;

    for (size_t i = 0; i < sizeof(iv); i++)
        iv[i] = (unsigned char)i;
    s = op_session(&req);
    CU_ASSERT_EQUAL_FATAL(hf_gcm_seal(hf_p11_functions(), s, aes_kat, iv, NULL, 0, pt, len, sealed),
                          CKR_OK);
    text = b64(sealed, len);
    CU_ASSERT_STRING_EQUAL(text, "M2elb6yLpQ==");
    free(text);
    text = b64(sealed + len, 16);
    CU_ASSERT_STRING_EQUAL(text, "w3dJz9U5pTRn/T866ZyH0A==");
    free(text);
    CU_ASSERT_EQUAL(hf_gcm_seal(hf_p11_functions(), s, aes_kat, iv, (const unsigned char *)"sap", 3,
                                pt, len, sealed),
                    CKR_OK);
    text = b64(sealed + len, 16);
    CU_ASSERT_STRING_EQUAL(text, "hxtVnm2l0Rsr+V7xGP/JJg==");
    free(text);
    /* Opened with the aad it was sealed with, refused without it or with a changed byte. */
    CU_ASSERT_EQUAL(hf_gcm_open(hf_p11_functions(), s, aes_kat, iv, (const unsigned char *)"sap", 3,
                                sealed, len + 16, back),
                    CKR_OK);
    CU_ASSERT(memcmp(back, pt, len) == 0);
    CU_ASSERT_EQUAL(
        hf_gcm_open(hf_p11_functions(), s, aes_kat, iv, NULL, 0, sealed, len + 16, back),
        CKR_ENCRYPTED_DATA_INVALID);
    sealed[0] ^= 1;
    CU_ASSERT_EQUAL(hf_gcm_open(hf_p11_functions(), s, aes_kat, iv, (const unsigned char *)"sap", 3,
                                sealed, len + 16, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    CU_ASSERT_EQUAL(hf_gcm_open(hf_p11_functions(), s, aes_kat, iv, NULL, 0, sealed, 15, back),
                    CKR_ARGUMENTS_BAD);
    hf_request_free(req);
}

static void test_oaep_each_hash_both_ways(void)
{
    static const CK_MECHANISM_TYPE hashes[] = {CKM_SHA_1, CKM_SHA256, CKM_SHA384, CKM_SHA512};
    static const unsigned char msg[] = "a 32-byte data encryption key!!";
    unsigned char ct[256], pt[256];
    struct hf_request *req;
    CK_SESSION_HANDLE s = op_session(&req);

    for (size_t i = 0; i < sizeof(hashes) / sizeof(hashes[0]); i++) {
        size_t ctlen = sizeof(ct), ptlen = sizeof(pt);
        CU_ASSERT_EQUAL(hf_rsa_oaep_encrypt(hf_p11_functions(), s, rsa_pub, hashes[i], msg,
                                            sizeof(msg), ct, &ctlen),
                        CKR_OK);
        CU_ASSERT_EQUAL(ctlen, 256);
        CU_ASSERT_EQUAL(
            hf_rsa_oaep_decrypt(hf_p11_functions(), s, rsa_priv, hashes[i], ct, ctlen, pt, &ptlen),
            CKR_OK);
        CU_ASSERT(ptlen == sizeof(msg) && memcmp(pt, msg, ptlen) == 0);
        /* Another hash than the one it was made with fails its padding check. */
        ptlen = sizeof(pt);
        CU_ASSERT_EQUAL(hf_rsa_oaep_decrypt(hf_p11_functions(), s, rsa_priv, hashes[(i + 1) % 4],
                                            ct, ctlen, pt, &ptlen),
                        CKR_ENCRYPTED_DATA_INVALID);
    }
    {
        size_t ptlen = sizeof(pt);
        CU_ASSERT_EQUAL(
            hf_rsa_oaep_decrypt(hf_p11_functions(), s, rsa_priv, CKM_MD5, ct, 256, pt, &ptlen),
            CKR_ARGUMENTS_BAD);
    }
    hf_request_free(req);
}

/* The EVP_PKEY's modulus is the module's, from either face, and OpenSSL's OAEP under it is what
 * the module opens. */
static void test_public_pkey_matches_the_module(void)
{
    EVP_PKEY *from_priv = hf_rsa_public_pkey(rsa_priv), *from_pub = hf_rsa_public_pkey(rsa_pub);
    unsigned char n[256], ct[256], pt[64];
    CK_ATTRIBUTE a = {CKA_MODULUS, n, sizeof(n)};
    BIGNUM *bn = NULL;
    unsigned char mine[256];
    size_t ctlen = sizeof(ct), ptlen = sizeof(pt);
    EVP_PKEY_CTX *c = NULL;
    struct hf_request *req;
    CK_SESSION_HANDLE s;

    CU_ASSERT_PTR_NOT_NULL_FATAL(from_priv);
    CU_ASSERT_PTR_NOT_NULL_FATAL(from_pub);
    CU_ASSERT_EQUAL(EVP_PKEY_eq(from_priv, from_pub), 1);
    CU_ASSERT_EQUAL_FATAL(hf_p11_functions()->C_GetAttributeValue(admin, rsa_pub, &a, 1), CKR_OK);
    CU_ASSERT_FATAL(EVP_PKEY_get_bn_param(from_pub, OSSL_PKEY_PARAM_RSA_N, &bn) == 1);
    CU_ASSERT_EQUAL(BN_bn2binpad(bn, mine, sizeof(mine)), 256);
    CU_ASSERT(a.ulValueLen == 256 && memcmp(mine, n, 256) == 0);
    CU_ASSERT_FATAL((c = EVP_PKEY_CTX_new(from_pub, NULL)) && EVP_PKEY_encrypt_init(c) > 0 &&
                    EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_OAEP_PADDING) > 0 &&
                    EVP_PKEY_CTX_set_rsa_oaep_md(c, EVP_sha256()) > 0 &&
                    EVP_PKEY_CTX_set_rsa_mgf1_md(c, EVP_sha256()) > 0 &&
                    EVP_PKEY_encrypt(c, ct, &ctlen, (const unsigned char *)"hello", 5) > 0);
    s = op_session(&req);
    CU_ASSERT_EQUAL(
        hf_rsa_oaep_decrypt(hf_p11_functions(), s, rsa_priv, CKM_SHA256, ct, ctlen, pt, &ptlen),
        CKR_OK);
    CU_ASSERT(ptlen == 5 && memcmp(pt, "hello", 5) == 0);
    CU_ASSERT_PTR_NULL(hf_rsa_public_pkey(aes_kat));
    hf_request_free(req);
    EVP_PKEY_CTX_free(c);
    BN_free(bn);
    EVP_PKEY_free(from_priv);
    EVP_PKEY_free(from_pub);
}

/* A key made through PKCS#11 is a managed key of one version: found by its version's UUID with
 * both faces, listed alone; another UUID is not found. */
static void test_versions_by_uuid_and_listing(void)
{
    struct hf_key_ref key = {0};
    struct hf_key_version v, *list = NULL;
    size_t n = 0;
    CK_ATTRIBUTE a[] = {
        {CKA_HF_KEY_UUID, key.uuid, 36},
        {CKA_HF_VERSION_UUID, key.version_uuid, 36},
        {CKA_HF_VERSION, &key.version, sizeof(key.version)},
    };

    CU_ASSERT_EQUAL_FATAL(hf_p11_functions()->C_GetAttributeValue(admin, rsa_priv, a, 3), CKR_OK);
    key.key_type = CKK_RSA;
    CU_ASSERT_EQUAL_FATAL(hf_keys_version_by_uuid(&key, key.version_uuid, &v), HF_STATUS_OK);
    CU_ASSERT_EQUAL(v.version, key.version);
    CU_ASSERT_STRING_EQUAL(v.uuid, key.version_uuid);
    CU_ASSERT_EQUAL(v.object, rsa_priv);
    CU_ASSERT_EQUAL(v.pub, rsa_pub);
    CU_ASSERT_EQUAL(v.state, HF_STATE_ACTIVE);
    CU_ASSERT(v.created > 1700000000 && v.created <= hf_wall_s());
    /* Cached: the same answer again. */
    CU_ASSERT_EQUAL(hf_keys_version_by_uuid(&key, key.version_uuid, &v), HF_STATUS_OK);
    CU_ASSERT_EQUAL(v.object, rsa_priv);
    CU_ASSERT_EQUAL(hf_keys_version_by_uuid(&key, "00000000-0000-4000-8000-000000000000", &v),
                    HF_STATUS_KEY_NOT_FOUND);
    CU_ASSERT_EQUAL(hf_keys_version_by_uuid(&key, "short", &v), HF_STATUS_KEY_NOT_FOUND);
    CU_ASSERT_EQUAL_FATAL(hf_keys_versions(&key, &list, &n), HF_STATUS_OK);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_STRING_EQUAL(list[0].uuid, key.version_uuid);
    CU_ASSERT_EQUAL(list[0].object, rsa_priv);
    CU_ASSERT_EQUAL(list[0].pub, rsa_pub);
    free(list);
}

static void test_code_message_error_body(void)
{
    struct json_object *o = hf_error_body_code_message("403", "key disabled");

    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                           "{\"code\":\"403\",\"message\":\"key disabled\"}");
    json_object_put(o);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"AES-GCM: the known answer, aad and tampering", test_gcm_known_answer_and_tamper},
        {"RSA-OAEP with each hash, both ways", test_oaep_each_hash_both_ways},
        {"an RSA object's public key is the module's", test_public_pkey_matches_the_module},
        {"a key's version by UUID, and the listing", test_versions_by_uuid_and_listing},
        {"the code/message error body", test_code_message_error_body},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"gateway-p11-crypt", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
