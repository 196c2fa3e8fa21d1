/* specs/oci-ekms.md's known answer: key 00..1f, version 1, IV 00..0b, key UUID
 * 6f1c3b2a-0000-4000-8000-000000000001, the k6 script's plaintext, no aad, api "oci-ekms",
 * through the gateway's blob layout and AAD builder (gateway/blob.c) with OpenSSL's raw
 * AES-256-GCM; the iv and tag fields the plugin answers are the blob's parts; any changed byte,
 * another api string or an aad fails. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/blob.h"
#include "gateway/plugins/oci-ekms/request.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#define KA_UUID "6f1c3b2a-0000-4000-8000-000000000001"
#define KA_PT "abcdefghijklmnopqrstuvwxyzabcdef"
#define KA_CT                                                                                      \
    "AQAAAAEAAQIDBAUGBwgJCgsmYLV/oIOlc+Qr/Ofchxcd8qT0QIUNKARBHYTnfg1l1BzX+4oDMsm4bt0Li6VnNDI="
#define KA_IV "AAECAwQFBgcICQoL"
#define KA_TAG "HNf7igMyybhu3QuLpWc0Mg=="

static unsigned char key[32];

static int suite_init(void)
{
    for (int i = 0; i < 32; i++)
        key[i] = (unsigned char)i;
    return 0;
}

static char *b64(const unsigned char *in, size_t len)
{
    char *out = malloc(4 * ((len + 2) / 3) + 1);

    if (out != NULL) EVP_EncodeBlock((unsigned char *)out, in, (int)len);
    return out;
}

static void test_known_answer_seals(void)
{
    unsigned char iv[HF_BLOB_IV_LEN], blob[HF_BLOB_OVERHEAD + sizeof(KA_PT) - 1], *aad;
    size_t aad_len = 0, pt_len = sizeof(KA_PT) - 1;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    char *ct, *tag, *ivs;
    int n = 0;

    for (int i = 0; i < HF_BLOB_IV_LEN; i++)
        iv[i] = (unsigned char)i;
    aad = hf_blob_aad_new(1, "oci-ekms", KA_UUID, NULL, 0, &aad_len);
    CU_ASSERT_FATAL(aad != NULL && ctx != NULL);
    CU_ASSERT_FATAL(hf_blob_header(1, iv, blob));
    CU_ASSERT_FATAL(EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, iv) == 1);
    CU_ASSERT_FATAL(EVP_EncryptUpdate(ctx, NULL, &n, aad, (int)aad_len) == 1);
    CU_ASSERT_FATAL(EVP_EncryptUpdate(ctx, blob + HF_BLOB_HEADER_LEN, &n,
                                      (const unsigned char *)KA_PT, (int)pt_len) == 1);
    CU_ASSERT_FATAL(EVP_EncryptFinal_ex(ctx, blob + HF_BLOB_HEADER_LEN + n, &n) == 1);
    CU_ASSERT_FATAL(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, HF_BLOB_TAG_LEN,
                                        blob + HF_BLOB_HEADER_LEN + pt_len) == 1);
    ct = b64(blob, sizeof(blob));
    ivs = b64(blob + 5, HF_BLOB_IV_LEN);
    tag = b64(blob + sizeof(blob) - HF_BLOB_TAG_LEN, HF_BLOB_TAG_LEN);
    CU_ASSERT_STRING_EQUAL(ct, KA_CT);
    CU_ASSERT_STRING_EQUAL(ivs, KA_IV);
    CU_ASSERT_STRING_EQUAL(tag, KA_TAG);
    free(ct);
    free(ivs);
    free(tag);
    free(aad);
    EVP_CIPHER_CTX_free(ctx);
}

/* Opens KA_CT, changed at byte flip (-1: none), under api and aad: whether the tag holds. */
static bool opens(int flip, const char *api, const char *aad_text)
{
    unsigned char raw[128], out[64], *aad;
    size_t aad_len = 0;
    int len = EVP_DecodeBlock(raw, (const unsigned char *)KA_CT, (int)strlen(KA_CT)), n = 0;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    struct hf_blob b;
    bool ok;

    len -= 1; /* EVP_DecodeBlock counts the one '=' of padding as a byte */
    if (flip >= 0) raw[flip] ^= 0x01;
    aad = hf_blob_aad_new(1, api, KA_UUID, (const unsigned char *)aad_text, strlen(aad_text),
                          &aad_len);
    if (!hf_blob_parse(raw, (size_t)len, &b) || b.version != 1) {
        free(aad);
        EVP_CIPHER_CTX_free(ctx);
        return false;
    }
    ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, b.iv) == 1 &&
         EVP_DecryptUpdate(ctx, NULL, &n, aad, (int)aad_len) == 1 &&
         EVP_DecryptUpdate(ctx, out, &n, b.sealed, (int)(b.sealed_len - HF_BLOB_TAG_LEN)) == 1 &&
         EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, HF_BLOB_TAG_LEN,
                             (void *)(b.sealed + b.sealed_len - HF_BLOB_TAG_LEN)) == 1 &&
         EVP_DecryptFinal_ex(ctx, out + n, &n) == 1;
    if (ok) ok = memcmp(out, KA_PT, sizeof(KA_PT) - 1) == 0;
    free(aad);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

static void test_known_answer_opens_and_fails_closed(void)
{
    CU_ASSERT_TRUE(opens(-1, "oci-ekms", ""));
    CU_ASSERT_FALSE(opens(-1, "google-ekm", ""));
    CU_ASSERT_FALSE(opens(-1, "oci-ekms", "x"));
    /* Every byte: format, version, IV, ciphertext, tag. */
    for (int i = 0; i < HF_BLOB_OVERHEAD + (int)sizeof(KA_PT) - 1; i++)
        CU_ASSERT_FALSE(opens(i, "oci-ekms", ""));
}

/* The decrypt body the encrypt answer makes parses to the blob's own iv and tag. */
static void test_decrypt_body_of_the_known_answer(void)
{
    static const char body[] =
        "{\"ciphertext\":\"" KA_CT "\",\"iv\":\"" KA_IV "\",\"tag\":\"" KA_TAG
        "\",\"mode\":\"AES_GCM\",\"keyId\":\"" KA_UUID "\"}";
    struct hf_oci_request r;
    struct hf_blob b;
    char why[256] = "";

    CU_ASSERT_EQUAL_FATAL(hf_oci_request_parse(HF_OCI_OP_DECRYPT, (const unsigned char *)body,
                                               strlen(body), &r, why, sizeof(why)),
                          HF_STATUS_OK);
    CU_ASSERT_TRUE_FATAL(hf_blob_parse(r.ciphertext.data, r.ciphertext.len, &b));
    CU_ASSERT_EQUAL(r.iv.len, HF_BLOB_IV_LEN);
    CU_ASSERT_EQUAL(memcmp(r.iv.data, b.iv, HF_BLOB_IV_LEN), 0);
    CU_ASSERT_EQUAL(r.tag.len, HF_BLOB_TAG_LEN);
    CU_ASSERT_EQUAL(memcmp(r.tag.data, b.sealed + b.sealed_len - HF_BLOB_TAG_LEN, HF_BLOB_TAG_LEN),
                    0);
    hf_oci_request_clear(&r);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"the spec's known answer: ciphertext, iv and tag", test_known_answer_seals},
        {"the known answer opens; another api, an aad or any changed byte does not",
         test_known_answer_opens_and_fails_closed},
        {"the known answer's decrypt body carries the blob's iv and tag",
         test_decrypt_body_of_the_known_answer},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"oci-blob", suite_init, NULL, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
