/* What a gws-cse wrapped_key seals (gateway/plugins/gws-cse/payload.[ch], rkh.c): the BE16
 * length-prefixed fields, the spec's known-answer blob sealed through PKCS#11 (plugin.h's
 * hf_blob_seal, CKM_AES_GCM on a SoftHSMv2 token holding google-ekm's KEK 00..1f) and opened
 * back, the api string binding it, and the three resource key hash vectors. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugin.h"
#include "gateway/plugins/gws-cse/payload.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define KA_UUID "6f1c3b2a-0000-4000-8000-000000000001"
#define KA_BLOB                                                                                    \
    "AQAAAAEAAQIDBAUGBwgJCgtHACYWxe6vYtIz8vjenAoO5taLWYkkLxlKDojgaQxyacQDiIS7FIflq755njBJRA=="
#define TOKEN_LABEL "hf-test-cse"

static struct hf_test_softhsm softhsm;
static void *dl;
static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE session = CK_INVALID_HANDLE;
static CK_OBJECT_HANDLE kek = CK_INVALID_HANDLE;

static const unsigned char dek[] = {0xf0, 0x0d};
static const struct hf_cse_field ka_fields[3] = {
    {dek, 2},
    {(const unsigned char *)"my_resource", 11},
    {(const unsigned char *)"my_perimeter", 12},
};

/* ---- a SoftHSMv2 token holding the known-answer KEK ------------------------------------------ */

static CK_SLOT_ID token_slot(const char *label)
{
    CK_SLOT_ID slots[16];
    CK_ULONG n = 16;
    CK_TOKEN_INFO info;

    if (p11->C_GetSlotList(CK_TRUE, slots, &n) != CKR_OK) return (CK_SLOT_ID)-1;
    for (CK_ULONG i = 0; i < n; i++)
        if (p11->C_GetTokenInfo(slots[i], &info) == CKR_OK &&
            (info.flags & CKF_TOKEN_INITIALIZED) && memcmp(info.label, label, strlen(label)) == 0)
            return slots[i];
    return (CK_SLOT_ID)-1;
}

static CK_RV token_make(void)
{
    CK_UTF8CHAR label[32];
    CK_SLOT_ID slots[16], slot;
    CK_ULONG n = 16;
    CK_RV rv;

    memset(label, ' ', sizeof(label));
    memcpy(label, TOKEN_LABEL, strlen(TOKEN_LABEL));
    if ((rv = p11->C_GetSlotList(CK_TRUE, slots, &n)) != CKR_OK) return rv;
    if (n == 0) return CKR_SLOT_ID_INVALID;
    rv = p11->C_InitToken(slots[0], (CK_UTF8CHAR_PTR)HF_TEST_SO_PIN, strlen(HF_TEST_SO_PIN), label);
    /* SoftHSMv2 moves an initialised token to a slot of its own. */
    if (rv != CKR_OK || (slot = token_slot(TOKEN_LABEL)) == (CK_SLOT_ID)-1) return rv ? rv : 1;
    if ((rv = p11->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL,
                                 &session)) != CKR_OK ||
        (rv = p11->C_Login(session, CKU_SO, (CK_UTF8CHAR_PTR)HF_TEST_SO_PIN,
                           strlen(HF_TEST_SO_PIN))) != CKR_OK ||
        (rv = p11->C_InitPIN(session, (CK_UTF8CHAR_PTR)HF_TEST_USER_PIN,
                             strlen(HF_TEST_USER_PIN))) != CKR_OK ||
        (rv = p11->C_Logout(session)) != CKR_OK)
        return rv;
    return p11->C_Login(session, CKU_USER, (CK_UTF8CHAR_PTR)HF_TEST_USER_PIN,
                        strlen(HF_TEST_USER_PIN));
}

static CK_RV kek_import(void)
{
    unsigned char value[32];
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_ATTRIBUTE t[] = {
        {CKA_CLASS, &cls, sizeof(cls)},   {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_TOKEN, &no, sizeof(no)},     {CKA_ENCRYPT, &yes, sizeof(yes)},
        {CKA_DECRYPT, &yes, sizeof(yes)}, {CKA_VALUE, value, sizeof(value)},
    };

    for (int i = 0; i < 32; i++)
        value[i] = (unsigned char)i;
    return p11->C_CreateObject(session, t, sizeof(t) / sizeof(t[0]), &kek);
}

static int suite_init(void)
{
    CK_C_GetFunctionList get;

    if (hf_test_softhsm_setup(&softhsm, "hf-test-cse") != 0) return -1;
    if ((dl = dlopen(HF_SOFTHSM_MODULE, RTLD_NOW | RTLD_LOCAL)) == NULL ||
        (get = (CK_C_GetFunctionList)dlsym(dl, "C_GetFunctionList")) == NULL ||
        get(&p11) != CKR_OK || p11->C_Initialize(NULL) != CKR_OK)
        return -1;
    return token_make() == CKR_OK && kek_import() == CKR_OK ? 0 : -1;
}

static int suite_clean(void)
{
    if (p11 != NULL) p11->C_Finalize(NULL);
    if (dl != NULL) dlclose(dl);
    hf_test_softhsm_teardown(&softhsm);
    return 0;
}

/* ---- the fields ------------------------------------------------------------------------------ */

static void test_fields_layout(void)
{
    static const unsigned char want[] = {
        0x00, 0x02, 0xf0, 0x0d, 0x00, 0x0b, 'm', 'y', '_', 'r', 'e', 's', 'o', 'u', 'r', 'c',
        'e',  0x00, 0x0c, 'm',  'y',  '_',  'p', 'e', 'r', 'i', 'm', 'e', 't', 'e', 'r'};
    unsigned char out[64];
    size_t len = 0;

    CU_ASSERT_TRUE(hf_cse_fields_encode(ka_fields, 3, NULL, &len));
    CU_ASSERT_EQUAL(len, sizeof(want));
    len = 10;
    CU_ASSERT_FALSE(hf_cse_fields_encode(ka_fields, 3, out, &len));
    CU_ASSERT_EQUAL(len, sizeof(want));
    len = sizeof(out);
    CU_ASSERT_TRUE_FATAL(hf_cse_fields_encode(ka_fields, 3, out, &len));
    CU_ASSERT_EQUAL_FATAL(len, sizeof(want));
    CU_ASSERT(memcmp(out, want, sizeof(want)) == 0);
}

static void test_fields_decode_is_exact(void)
{
    unsigned char buf[64];
    size_t len = sizeof(buf);
    struct hf_cse_field f[3];
    const struct hf_cse_field empty[3] = {{NULL, 0}, {NULL, 0}, {NULL, 0}};

    CU_ASSERT_TRUE_FATAL(hf_cse_fields_encode(ka_fields, 3, buf, &len));
    CU_ASSERT_TRUE_FATAL(hf_cse_fields_decode(buf, len, f, 3));
    CU_ASSERT_EQUAL(f[1].len, 11);
    CU_ASSERT(memcmp(f[2].p, "my_perimeter", 12) == 0);
    /* One byte more, one less, a length past the end, two fields asked of three. */
    CU_ASSERT_FALSE(hf_cse_fields_decode(buf, len + 1, f, 3));
    CU_ASSERT_FALSE(hf_cse_fields_decode(buf, len - 1, f, 3));
    CU_ASSERT_FALSE(hf_cse_fields_decode(buf, len, f, 2));
    buf[0] = 0xff;
    CU_ASSERT_FALSE(hf_cse_fields_decode(buf, len, f, 3));
    CU_ASSERT_FALSE(hf_cse_fields_decode(buf, 1, f, 1));
    /* Empty fields are fine: an absent perimeter_id is "". */
    len = sizeof(buf);
    CU_ASSERT_TRUE_FATAL(hf_cse_fields_encode(empty, 3, buf, &len));
    CU_ASSERT_EQUAL(len, 6);
    CU_ASSERT_TRUE(hf_cse_fields_decode(buf, len, f, 3));
}

static void test_fields_over_the_cap(void)
{
    struct hf_cse_field big = {dek, HF_CSE_FIELD_MAX + 1};
    size_t len = 99;

    CU_ASSERT_FALSE(hf_cse_fields_encode(&big, 1, NULL, &len));
    CU_ASSERT_EQUAL(len, 0);
}

/* ---- the blob -------------------------------------------------------------------------------- */

static void test_known_answer(void)
{
    unsigned char iv[HF_BLOB_IV_LEN], pt[64], blob[128];
    size_t pt_len = sizeof(pt);
    char *b64;

    for (int i = 0; i < HF_BLOB_IV_LEN; i++)
        iv[i] = (unsigned char)i;
    CU_ASSERT_TRUE_FATAL(hf_cse_fields_encode(ka_fields, 3, pt, &pt_len));
    CU_ASSERT_EQUAL_FATAL(
        hf_blob_seal(p11, session, kek, 1, HF_CSE_API, KA_UUID, iv, NULL, 0, pt, pt_len, blob),
        CKR_OK);
    b64 = hf_base64_encode(blob, HF_BLOB_OVERHEAD + pt_len);
    CU_ASSERT_STRING_EQUAL(b64, KA_BLOB);
    free(b64);
}

/* The known answer opens to its payload under api gws-cse only, and as version 1 only. */
static void test_known_answer_opens(void)
{
    unsigned char blob[128], pt[128];
    size_t len = 0;
    struct hf_blob b;
    struct hf_cse_field f[3];

    CU_ASSERT_TRUE_FATAL(hf_base64_decode(KA_BLOB, strlen(KA_BLOB), blob, &len));
    CU_ASSERT_TRUE_FATAL(hf_blob_parse(blob, len, &b));
    CU_ASSERT_EQUAL(b.version, 1);
    CU_ASSERT_EQUAL_FATAL(hf_blob_open(p11, session, kek, HF_CSE_API, KA_UUID, &b, NULL, 0, pt),
                          CKR_OK);
    CU_ASSERT_TRUE_FATAL(hf_cse_fields_decode(pt, b.sealed_len - HF_BLOB_TAG_LEN, f, 3));
    CU_ASSERT(f[0].len == 2 && memcmp(f[0].p, dek, 2) == 0);
    CU_ASSERT(f[1].len == 11 && memcmp(f[1].p, "my_resource", 11) == 0);
    /* SoftHSMv2 reports a failed tag as it likes (Holdfast's module: CKR_ENCRYPTED_DATA_INVALID);
     * what counts is that nothing opens. */
    CU_ASSERT_NOT_EQUAL(hf_blob_open(p11, session, kek, HF_CSE_API_PK, KA_UUID, &b, NULL, 0, pt),
                        CKR_OK);
    CU_ASSERT_NOT_EQUAL(hf_blob_open(p11, session, kek, "google-ekm", KA_UUID, &b, NULL, 0, pt),
                        CKR_OK);
    b.version = 2;
    CU_ASSERT_NOT_EQUAL(hf_blob_open(p11, session, kek, HF_CSE_API, KA_UUID, &b, NULL, 0, pt),
                        CKR_OK);
}

/* ---- the resource key hash ------------------------------------------------------------------- */

static void rkh_vector(const char *dek_hex, const char *rn, const char *pid, const char *want)
{
    unsigned char key[64];
    size_t n = strlen(dek_hex) / 2;
    char out[HF_CSE_RKH_LEN];

    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        CU_ASSERT_FATAL(sscanf(dek_hex + 2 * i, "%2x", &v) == 1);
        key[i] = (unsigned char)v;
    }
    CU_ASSERT_TRUE_FATAL(hf_cse_resource_key_hash(key, n, rn, strlen(rn), pid, strlen(pid), out));
    CU_ASSERT_STRING_EQUAL(out, want);
}

static void test_resource_key_hash_vectors(void)
{
    rkh_vector("f00d", "my_resource", "my_perimeter",
               "EfRLb/AKdtsPSfX+vZ/Pi8h6bmKhBTu4egOABRnEdCg=");
    rkh_vector("6a68079290123ed8f23c845cc8bda91cd961c0246b79446662919e336920cbef",
               "//googleapis.com/testcase/hJB0PzRI7nl79LC18qaV8WMDCBALBSs9BREcq79MfVw", "",
               "TZqv6wbNDoEtDzwQ8YVzpa7kyGMAoQT62bJY8Lcb2BM=");
    rkh_vector("05b62b91cb66f19e27789fb69eb680fac113a70a120178d6cfa6b1b4cb11bb95",
               "//googleapis.com/testcase/od8yfZiS5ZF2RN27X4ClalsV6LobL2FwKRk4qOJxWdE",
               "perimeter1", "G2IxoXG8EO+Z3TsI8HQmIIEaWRkVcChNMrZ0xTHMLaU=");
}

int main(void)
{
    static CU_TestInfo pure[] = {
        {"fields layout", test_fields_layout},
        {"fields decode is exact", test_fields_decode_is_exact},
        {"fields over the cap", test_fields_over_the_cap},
        {"resource key hash vectors", test_resource_key_hash_vectors},
        CU_TEST_INFO_NULL,
    };
    static CU_TestInfo module[] = {
        {"known answer", test_known_answer},
        {"known answer opens as gws-cse only", test_known_answer_opens},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"cse-payload", NULL, NULL, NULL, NULL, pure},
        {"cse-payload-softhsm", suite_init, suite_clean, NULL, NULL, module},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
