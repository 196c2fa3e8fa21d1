/* The sap-hyok plugin's AES-256-GCM (gateway/plugins/sap-hyok/gcm.c) on the built
 * holdfast-pkcs11.so opened as holdfastd opens it: specs/sap-hyok.md's known answer (key
 * 00..1f, IV 00..0b, "testing"), with and without aad "sap", which shows the AAD is the decoded
 * aad and nothing else; then a changed byte of the ciphertext, tag or IV, and other aad, refused
 * with the plaintext buffer cleansed. */
#include "hf-build.h"

#include "gateway/p11.h"
#include "gateway/plugins/sap-hyok/gcm.h"
#include "gateway/request.h"
#include "tests/unit/gw-module.h"

#include <stdlib.h>
#include <string.h>

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_SESSION_HANDLE admin;
static CK_OBJECT_HANDLE kat;

/* The known answer's key as a session object. */
static CK_RV kat_import(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE *h)
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

    if (hf_test_gw_module_open(&env, &mod) != 0) return -1;
    p11 = hf_p11_functions();
    if (p11->C_GetSlotList(CK_TRUE, &slot, &n) != CKR_OK ||
        p11->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &admin) !=
            CKR_OK ||
        kat_import(admin, &kat) != CKR_OK)
        return -1;
    return 0;
}

static int suite_clean(void)
{
    hf_p11_functions()->C_CloseSession(admin);
    hf_test_gw_module_close(&env, &mod);
    return 0;
}

static void b64_is(const unsigned char *b, size_t n, const char *want)
{
    char *text = hf_base64_encode(b, n);

    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_STRING_EQUAL(text, want);
    free(text);
}

static void test_the_specs_known_answer(void)
{
    static const unsigned char pt[] = "testing";
    const size_t len = sizeof(pt) - 1;
    unsigned char iv[HF_SAP_IV_LEN], ct[16], tag[HF_SAP_TAG_LEN];
    struct hf_request *req = hf_request_new("POST", "/sap-gcm");
    CK_SESSION_HANDLE s = CK_INVALID_HANDLE;

    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    for (size_t i = 0; i < sizeof(iv); i++)
        iv[i] = (unsigned char)i;
    CU_ASSERT_EQUAL_FATAL(hf_p11_begin(req, "test", &s), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(
        hf_sap_gcm_seal(hf_p11_functions(), s, kat, iv, NULL, 0, pt, len, ct, tag), CKR_OK);
    b64_is(ct, len, "M2elb6yLpQ==");
    b64_is(tag, sizeof(tag), "w3dJz9U5pTRn/T866ZyH0A==");
    CU_ASSERT_EQUAL_FATAL(hf_p11_begin(req, "test", &s), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_sap_gcm_seal(hf_p11_functions(), s, kat, iv,
                                          (const unsigned char *)"sap", 3, pt, len, ct, tag),
                          CKR_OK);
    b64_is(ct, len, "M2elb6yLpQ==");
    b64_is(tag, sizeof(tag), "hxtVnm2l0Rsr+V7xGP/JJg==");
    hf_request_free(req);
}

static void test_any_change_is_refused(void)
{
    static const unsigned char pt[] = "testing";
    const size_t len = sizeof(pt) - 1;
    unsigned char iv[HF_SAP_IV_LEN], ct[16], tag[HF_SAP_TAG_LEN], back[16];
    const unsigned char *sap = (const unsigned char *)"sap";
    struct hf_request *req = hf_request_new("POST", "/sap-gcm");
    CK_FUNCTION_LIST_PTR p11 = hf_p11_functions();
    CK_SESSION_HANDLE s = CK_INVALID_HANDLE;

    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    memset(iv, 7, sizeof(iv));
    CU_ASSERT_EQUAL_FATAL(hf_p11_begin(req, "test", &s), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_sap_gcm_seal(p11, s, kat, iv, sap, 3, pt, len, ct, tag), CKR_OK);
    CU_ASSERT_EQUAL(hf_sap_gcm_open(p11, s, kat, iv, sap, 3, ct, len, tag, back), CKR_OK);
    CU_ASSERT(memcmp(back, pt, len) == 0);
    CU_ASSERT_EQUAL(hf_sap_gcm_open(p11, s, kat, iv, NULL, 0, ct, len, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    CU_ASSERT_EQUAL(
        hf_sap_gcm_open(p11, s, kat, iv, (const unsigned char *)"sAp", 3, ct, len, tag, back),
        CKR_ENCRYPTED_DATA_INVALID);
    ct[len - 1] ^= 0x80;
    CU_ASSERT_EQUAL(hf_sap_gcm_open(p11, s, kat, iv, sap, 3, ct, len, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    for (size_t i = 0; i < len; i++)
        CU_ASSERT_EQUAL(back[i], 0);
    ct[len - 1] ^= 0x80;
    tag[0] ^= 1;
    CU_ASSERT_EQUAL(hf_sap_gcm_open(p11, s, kat, iv, sap, 3, ct, len, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    tag[0] ^= 1;
    iv[11] ^= 1;
    CU_ASSERT_EQUAL(hf_sap_gcm_open(p11, s, kat, iv, sap, 3, ct, len, tag, back),
                    CKR_ENCRYPTED_DATA_INVALID);
    iv[11] ^= 1;
    /* An empty plaintext seals to a tag alone, and opens. */
    CU_ASSERT_EQUAL_FATAL(hf_sap_gcm_seal(p11, s, kat, iv, NULL, 0, pt, 0, ct, tag), CKR_OK);
    CU_ASSERT_EQUAL(hf_sap_gcm_open(p11, s, kat, iv, NULL, 0, ct, 0, tag, back), CKR_OK);
    hf_request_free(req);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"the spec's known answer, without and with aad", test_the_specs_known_answer},
        {"any change is refused", test_any_change_is_refused},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"sap-gcm", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
