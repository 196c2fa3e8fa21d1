/* plugin.h's blob and its GCM AAD (gateway/blob.c): specs/google-ekm.md's two known answers,
 * computed with OpenSSL's raw AES-256-GCM over the gateway's AAD builder with api "google-ekm",
 * the AAD binding the api string (a blob of one API never opens as another's), and the
 * parser's fail-closed rules. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/blob.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#define KA_UUID "6f1c3b2a-0000-4000-8000-000000000001"
#define KA_WITH_AAD "AQAAAAEAAQIDBAUGBwgJCgsPZ7p3qsWVdP8t86rOcM94zHcQPB7COOrUfuNP"
#define KA_NO_AAD "AQAAAAEAAQIDBAUGBwgJCgsPZ7p3qsWVdP8t86r8+XZpU1aAeT+519In7tai"

static const char pt[] = "Hello World!";

/* The spec's known-answer blob for aad, base64, in out (at least 128 bytes). */
static void known_answer(const char *aad, char *out)
{
    unsigned char key[32], iv[HF_BLOB_IV_LEN], blob[HF_BLOB_OVERHEAD + sizeof(pt) - 1];
    unsigned char *full;
    size_t full_len = 0, aad_len = strlen(aad);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int n = 0;

    for (int i = 0; i < 32; i++)
        key[i] = (unsigned char)i;
    for (int i = 0; i < HF_BLOB_IV_LEN; i++)
        iv[i] = (unsigned char)i;
    full =
        hf_blob_aad_new(1, "google-ekm", KA_UUID, (const unsigned char *)aad, aad_len, &full_len);
    CU_ASSERT_FATAL(full != NULL && ctx != NULL);
    CU_ASSERT_FATAL(hf_blob_header(1, iv, blob));
    CU_ASSERT_FATAL(EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, iv) == 1);
    CU_ASSERT_FATAL(EVP_EncryptUpdate(ctx, NULL, &n, full, (int)full_len) == 1);
    CU_ASSERT_FATAL(EVP_EncryptUpdate(ctx, blob + HF_BLOB_HEADER_LEN, &n, (const unsigned char *)pt,
                                      (int)sizeof(pt) - 1) == 1);
    CU_ASSERT_FATAL(EVP_EncryptFinal_ex(ctx, blob + HF_BLOB_HEADER_LEN + n, &n) == 1);
    CU_ASSERT_FATAL(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, HF_BLOB_TAG_LEN,
                                        blob + HF_BLOB_HEADER_LEN + sizeof(pt) - 1) == 1);
    EVP_EncodeBlock((unsigned char *)out, blob, (int)sizeof(blob));
    EVP_CIPHER_CTX_free(ctx);
    free(full);
}

static void test_known_answer_with_aad(void)
{
    char b64[128];

    known_answer("project=nile", b64);
    CU_ASSERT_STRING_EQUAL(b64, KA_WITH_AAD);
}

static void test_known_answer_without_aad(void)
{
    char b64[128];

    known_answer("", b64);
    CU_ASSERT_STRING_EQUAL(b64, KA_NO_AAD);
}

/* The AAD's layout, byte for byte: format, version, api, UUID, aad, each with its length. */
static void test_aad_layout(void)
{
    static const unsigned char want_head[] = {0x01, 0x00, 0x00, 0x01, 0x02, 0x00, 0x0a};
    size_t len = 0;
    unsigned char *a =
        hf_blob_aad_new(258, "google-ekm", KA_UUID, (const unsigned char *)"xy", 2, &len);

    CU_ASSERT_FATAL(a != NULL);
    CU_ASSERT_EQUAL(len, 1 + 4 + 2 + 10 + 2 + 36 + 4 + 2);
    CU_ASSERT(memcmp(a, want_head, sizeof(want_head)) == 0);
    CU_ASSERT(memcmp(a + 7, "google-ekm", 10) == 0);
    CU_ASSERT(a[17] == 0 && a[18] == 36);
    CU_ASSERT(memcmp(a + 19, KA_UUID, 36) == 0);
    CU_ASSERT(a[55] == 0 && a[56] == 0 && a[57] == 0 && a[58] == 2);
    CU_ASSERT(memcmp(a + 59, "xy", 2) == 0);
    free(a);
}

static void test_aad_refuses_what_does_not_fit(void)
{
    size_t len = 0;
    char long_api[300];

    memset(long_api, 'a', sizeof(long_api) - 1);
    long_api[sizeof(long_api) - 1] = '\0';
    CU_ASSERT_PTR_NULL(hf_blob_aad_new(0, "google-ekm", KA_UUID, NULL, 0, &len));
    CU_ASSERT_PTR_NULL(
        hf_blob_aad_new((CK_ULONG)UINT32_MAX + 1, "google-ekm", KA_UUID, NULL, 0, &len));
    CU_ASSERT_PTR_NULL(hf_blob_aad_new(1, "google-ekm", "not-a-uuid", NULL, 0, &len));
    CU_ASSERT_PTR_NULL(hf_blob_aad_new(1, "google-ekm", KA_UUID, NULL, 3, &len));
    CU_ASSERT_PTR_NULL(hf_blob_aad_new(1, "", KA_UUID, NULL, 0, &len));
    CU_ASSERT_PTR_NULL(hf_blob_aad_new(1, NULL, KA_UUID, NULL, 0, &len));
    CU_ASSERT_PTR_NULL(hf_blob_aad_new(1, long_api, KA_UUID, NULL, 0, &len));
}

/* Opens the blob b64 (the known answer's key) with raw AES-256-GCM under the AAD for api: true
 * when the tag verifies. */
static bool opens_as(const char *b64, const char *api)
{
    unsigned char key[32], blob[128], out[128], *full;
    size_t full_len = 0;
    int len = EVP_DecodeBlock(blob, (const unsigned char *)b64, (int)strlen(b64)), n = 0;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    struct hf_blob b;
    bool ok = false;

    for (int i = 0; i < 32; i++)
        key[i] = (unsigned char)i;
    /* EVP_DecodeBlock counts the padding's zero bytes in: the known answers have none. */
    if (len <= 0 || !hf_blob_parse(blob, (size_t)len, &b) || !ctx) goto done;
    if (!(full = hf_blob_aad_new(b.version, api, KA_UUID, (const unsigned char *)"project=nile", 12,
                                 &full_len)))
        goto done;
    ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, b.iv) == 1 &&
         EVP_DecryptUpdate(ctx, NULL, &n, full, (int)full_len) == 1 &&
         EVP_DecryptUpdate(ctx, out, &n, b.sealed, (int)(b.sealed_len - HF_BLOB_TAG_LEN)) == 1 &&
         EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, HF_BLOB_TAG_LEN,
                             (void *)(b.sealed + b.sealed_len - HF_BLOB_TAG_LEN)) == 1 &&
         EVP_DecryptFinal_ex(ctx, out + n, &n) == 1;
    free(full);
done:
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/* The api string is in the AAD: what gcp-ekm sealed does not open as gws-cse's, nor the
 * other way round, with the same key, version, UUID and caller AAD. */
static void test_another_api_changes_the_aad(void)
{
    size_t la = 0, lb = 0;
    unsigned char *a = hf_blob_aad_new(1, "google-ekm", KA_UUID, NULL, 0, &la);
    unsigned char *b = hf_blob_aad_new(1, "gws-cse", KA_UUID, NULL, 0, &lb);

    CU_ASSERT_FATAL(a != NULL && b != NULL);
    CU_ASSERT_EQUAL(la, lb + 3);
    CU_ASSERT(b[6] == 7 && memcmp(b + 7, "gws-cse", 7) == 0);
    free(a);
    free(b);
    CU_ASSERT_TRUE(opens_as(KA_WITH_AAD, "google-ekm"));
    CU_ASSERT_FALSE(opens_as(KA_WITH_AAD, "gws-cse"));
    CU_ASSERT_FALSE(opens_as(KA_WITH_AAD, "gws-cse-pk"));
}

static void test_blob_parse_splits_the_header(void)
{
    unsigned char blob[HF_BLOB_OVERHEAD + 4] = {0x01, 0x00, 0x00, 0x01, 0x07};
    struct hf_blob b;

    CU_ASSERT_FATAL(hf_blob_parse(blob, sizeof(blob), &b));
    CU_ASSERT_EQUAL(b.version, 263);
    CU_ASSERT_PTR_EQUAL(b.iv, blob + 5);
    CU_ASSERT_PTR_EQUAL(b.sealed, blob + 17);
    CU_ASSERT_EQUAL(b.sealed_len, 4 + HF_BLOB_TAG_LEN);
}

/* Fail closed: an unknown format byte, version 0, anything shorter than header and tag. */
static void test_blob_parse_fails_closed(void)
{
    unsigned char blob[HF_BLOB_OVERHEAD] = {0x01, 0x00, 0x00, 0x00, 0x01};
    struct hf_blob b;

    CU_ASSERT_TRUE(hf_blob_parse(blob, sizeof(blob), &b)); /* empty plaintext */
    CU_ASSERT_FALSE(hf_blob_parse(blob, sizeof(blob) - 1, &b));
    CU_ASSERT_FALSE(hf_blob_parse(blob, 0, &b));
    blob[0] = 0x02;
    CU_ASSERT_FALSE(hf_blob_parse(blob, sizeof(blob), &b));
    blob[0] = 0x01;
    blob[4] = 0x00;
    CU_ASSERT_FALSE(hf_blob_parse(blob, sizeof(blob), &b));
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"known answer with aad", test_known_answer_with_aad},
        {"known answer without aad", test_known_answer_without_aad},
        {"aad layout", test_aad_layout},
        {"aad refuses what does not fit", test_aad_refuses_what_does_not_fit},
        {"another api string changes the aad: a google-ekm blob does not open as gws-cse",
         test_another_api_changes_the_aad},
        {"blob parse splits the header", test_blob_parse_splits_the_header},
        {"blob parse fails closed", test_blob_parse_fails_closed},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"gateway-blob", NULL, NULL, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
