/* XKS request bodies (gateway/plugins/aws-xks/request.[ch]): what each operation requires, the
 * JSON and base64 a proxy must refuse (ValidationException) or take (unknown fields, unknown
 * kmsOperation), and the size rules at and over Holdfast's caps (UnsupportedOperationException). */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/aws-xks/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#define MD_KEY_OP                                                                                  \
    "\"requestMetadata\":{\"awsPrincipalArn\":\"arn:aws:iam::123456789012:user/Alice\","           \
    "\"kmsKeyArn\":\"arn:aws:kms:us-east-2:123456789012:key/1234abcd\","                           \
    "\"kmsOperation\":\"Encrypt\",\"kmsRequestId\":\"4112f4d6-db54-4af4-ae30-c55a22a8dfae\","      \
    "\"kmsViaService\":\"ebs\"}"
#define MD_HEALTH                                                                                  \
    "\"requestMetadata\":{\"kmsRequestId\":\"4112f4d6\",\"kmsOperation\":\"KmsHealthCheck\"}"

/* "Hello World!" and "project=nile,department=marketing", as the spec's examples send them. */
#define PT_B64 "SGVsbG8gV29ybGQh"
#define AAD_B64 "cHJvamVjdD1uaWxlLGRlcGFydG1lbnQ9bWFya2V0aW5n"
#define IV_B64 "HMrlRw85cAJUd5Ax"
#define TAG_B64 "vBxN2ncH1oEkR8WVXpmyYQ=="
#define CM_B64 "a2V5X3ZlcnNpb249MQ=="

static struct hf_xks_request req;
static char why[256];

static enum hf_status parse_caps(enum hf_xks_op op, const char *body,
                                 const struct hf_xks_caps *caps)
{
    hf_xks_request_clear(&req);
    return hf_xks_request_parse(op, (const unsigned char *)body, strlen(body), caps, &req, why,
                                sizeof(why));
}

static enum hf_status parse(enum hf_xks_op op, const char *body)
{
    return parse_caps(op, body, NULL);
}

/* The reason given for a refusal is printable ASCII, non-empty and names what was wrong. */
static void assert_why(const char *fragment)
{
    CU_ASSERT(why[0] != '\0');
    for (const char *p = why; *p; p++)
        CU_ASSERT(*p >= 0x20 && *p <= 0x7e);
    if (strstr(why, fragment) == NULL) {
        fprintf(stderr, "\n  why '%s' lacks '%s'\n", why, fragment);
        CU_FAIL("the reason does not name the field");
    }
}

/* A body with one field of the given decoded size (base64 of n bytes of 'x'). */
static char *body_with_b64(const char *head, const char *field, size_t n, const char *tail)
{
    unsigned char *raw = malloc(n + 1);
    size_t b64len = (n + 2) / 3 * 4, len;
    char *b64 = malloc(b64len + 1), *body;

    CU_ASSERT_FATAL(raw != NULL && b64 != NULL);
    memset(raw, 'x', n);
    EVP_EncodeBlock((unsigned char *)b64, raw, (int)n);
    len = strlen(head) + strlen(field) + b64len + strlen(tail) + 16;
    body = malloc(len);
    CU_ASSERT_FATAL(body != NULL);
    snprintf(body, len, "%s\"%s\":\"%s\"%s", head, field, b64, tail);
    free(raw);
    free(b64);
    return body;
}

static int suite_clean(void)
{
    hf_xks_request_clear(&req);
    return 0;
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static void test_malformed_json_is_a_validation_error(void)
{
    static const char *const bad[] = {
        "",
        "{",
        "{\"requestMetadata\":}",
        "{'requestMetadata':{}}",
        "{\"requestMetadata\":{\"kmsRequestId\":\"a\",\"kmsOperation\":\"b\"}} trailing",
        "{\"requestMetadata\":{\"kmsRequestId\":\"a\",\"kmsOperation\":\"b\"},}",
        "[]",
        "\"string\"",
        "null",
        "{\"requestMetadata\":{\"kmsRequestId\":\"a\",\"kmsOperation\":\"b\"}}{}",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CU_ASSERT_EQUAL(parse(HF_XKS_OP_HEALTH, bad[i]), HF_STATUS_BAD_REQUEST);
        CU_ASSERT(why[0] != '\0');
        CU_ASSERT_PTR_NULL(req.root);
    }
    /* Whitespace after the object is not data. */
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_HEALTH, "{" MD_HEALTH "}\r\n  "), HF_STATUS_OK);
}

/* json-c keeps the last of two equal keys: which plaintext or which kmsRequestId would be
 * encrypted and audited would depend on the reader. Refused, at any depth; so is invalid UTF-8. */
static void test_duplicate_keys_and_bad_utf8_are_validation_errors(void)
{
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT, "{" MD_KEY_OP ",\"plaintext\":\"" PT_B64
                                             "\",\"encryptionAlgorithm\":\"AES_GCM\","
                                             "\"plaintext\":\"AAAA\"}"),
                    HF_STATUS_BAD_REQUEST);
    assert_why("duplicate key");
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_HEALTH, "{\"requestMetadata\":{\"kmsRequestId\":\"a\","
                                            "\"kmsOperation\":\"x\",\"kmsRequestId\":\"b\"}}"),
                    HF_STATUS_BAD_REQUEST);
    assert_why("duplicate key");
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_HEALTH, "{\"requestMetadata\":{\"kmsRequestId\":\"\xc0\xaf\","
                                            "\"kmsOperation\":\"x\"}}"),
                    HF_STATUS_BAD_REQUEST);
    assert_why("UTF-8");
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_HEALTH,
                          "{\"requestMetadata\":{\"kmsRequestId\":\"\xed\xa0\x80\","
                          "\"kmsOperation\":\"x\"}}"),
                    HF_STATUS_BAD_REQUEST);
}

static void test_body_with_nul_inside_is_refused(void)
{
    static const char body[] = "{" MD_HEALTH "}\0garbage";

    hf_xks_request_clear(&req);
    CU_ASSERT_EQUAL(hf_xks_request_parse(HF_XKS_OP_HEALTH, (const unsigned char *)body,
                                         sizeof(body) - 1, NULL, &req, why, sizeof(why)),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_HEALTH, "{\"requestMetadata\":{\"kmsRequestId\":\"a\\u0000b\","
                                            "\"kmsOperation\":\"x\"}}"),
                    HF_STATUS_BAD_REQUEST);
    assert_why("kmsRequestId");
}

static void test_health_needs_request_id_and_operation(void)
{
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_HEALTH, "{}"), HF_STATUS_BAD_REQUEST);
    assert_why("requestMetadata");
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_HEALTH, "{\"requestMetadata\":{}}"), HF_STATUS_BAD_REQUEST);
    assert_why("kmsOperation");
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_HEALTH, "{\"requestMetadata\":{\"kmsOperation\":\"x\"}}"),
                    HF_STATUS_BAD_REQUEST);
    assert_why("kmsRequestId");
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_HEALTH, "{\"requestMetadata\":[]}"), HF_STATUS_BAD_REQUEST);
    assert_why("requestMetadata must be an object");
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_HEALTH, "{" MD_HEALTH "}"), HF_STATUS_OK);
    CU_ASSERT_STRING_EQUAL(req.md.kms_request_id, "4112f4d6");
    CU_ASSERT_STRING_EQUAL(req.md.kms_operation, "KmsHealthCheck");
    CU_ASSERT_PTR_NULL(req.md.aws_principal_arn);
}

static void test_metadata_key_arn_is_optional_principal_is_not(void)
{
    /* GetKeyMetadata during a KMS CreateKey: there is no key ARN yet. */
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_METADATA,
                          "{\"requestMetadata\":{\"awsPrincipalArn\":\"p\","
                          "\"kmsOperation\":\"CreateKey\",\"kmsRequestId\":\"r\"}}"),
                    HF_STATUS_OK);
    CU_ASSERT_PTR_NULL(req.md.kms_key_arn);
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_METADATA, "{\"requestMetadata\":{\"kmsOperation\":\"Describe"
                                              "Key\",\"kmsRequestId\":\"r\"}}"),
                    HF_STATUS_BAD_REQUEST);
    assert_why("awsPrincipalArn");
}

static void test_encrypt_and_decrypt_need_the_key_arn(void)
{
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT, "{\"requestMetadata\":{\"awsPrincipalArn\":\"p\","
                                             "\"kmsOperation\":\"Encrypt\",\"kmsRequestId\":"
                                             "\"r\"},\"plaintext\":\"" PT_B64
                                             "\",\"encryptionAlgorithm\":\"AES_GCM\"}"),
                    HF_STATUS_BAD_REQUEST);
    assert_why("kmsKeyArn");
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_DECRYPT, "{\"requestMetadata\":{\"awsPrincipalArn\":\"p\","
                                             "\"kmsOperation\":\"Decrypt\",\"kmsRequestId\":"
                                             "\"r\"},\"ciphertext\":\"" PT_B64
                                             "\",\"encryptionAlgorithm\":\"AES_GCM\","
                                             "\"initializationVector\":\"" IV_B64 "\","
                                             "\"authenticationTag\":\"" TAG_B64 "\"}"),
                    HF_STATUS_BAD_REQUEST);
    assert_why("kmsKeyArn");
}

static void test_wrong_types_are_validation_errors(void)
{
    static const char *const bad[] = {
        "{\"requestMetadata\":\"x\",\"plaintext\":\"" PT_B64 "\",\"encryptionAlgorithm\":"
        "\"AES_GCM\"}",
        "{" MD_KEY_OP ",\"plaintext\":12,\"encryptionAlgorithm\":\"AES_GCM\"}",
        "{" MD_KEY_OP ",\"plaintext\":null,\"encryptionAlgorithm\":\"AES_GCM\"}",
        "{" MD_KEY_OP ",\"plaintext\":[\"" PT_B64 "\"],\"encryptionAlgorithm\":\"AES_GCM\"}",
        "{" MD_KEY_OP ",\"plaintext\":\"" PT_B64 "\",\"encryptionAlgorithm\":true}",
        "{" MD_KEY_OP ",\"plaintext\":\"" PT_B64 "\",\"encryptionAlgorithm\":\"AES_GCM\","
        "\"additionalAuthenticatedData\":{}}",
        "{\"requestMetadata\":{\"awsPrincipalArn\":1,\"kmsKeyArn\":\"k\",\"kmsOperation\":\"E\","
        "\"kmsRequestId\":\"r\"},\"plaintext\":\"" PT_B64 "\",\"encryptionAlgorithm\":"
        "\"AES_GCM\"}",
        "{\"requestMetadata\":{\"awsPrincipalArn\":\"p\",\"kmsKeyArn\":\"k\",\"kmsOperation\":"
        "\"E\",\"kmsRequestId\":\"r\",\"kmsViaService\":false},\"plaintext\":\"" PT_B64 "\","
        "\"encryptionAlgorithm\":\"AES_GCM\"}",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT, bad[i]), HF_STATUS_BAD_REQUEST);
        CU_ASSERT(strstr(why, "must be") != NULL);
    }
}

static void test_unknown_fields_and_operations_are_accepted(void)
{
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT,
                          "{\"future\":{\"deep\":[1,2,{\"x\":null}]},\"requestMetadata\":{"
                          "\"awsPrincipalArn\":\"p\",\"kmsKeyArn\":\"k\",\"kmsOperation\":"
                          "\"BulkEncrypt\",\"kmsRequestId\":\"not-a-uuid\",\"SourceIdentity\":7,"
                          "\"kmsRecipientAttestationPCR0\":\"x\"},\"plaintext\":\"" PT_B64
                          "\",\"encryptionAlgorithm\":\"AES_GCM\",\"extra\":true}"),
                    HF_STATUS_OK);
    CU_ASSERT_STRING_EQUAL(req.md.kms_operation, "BulkEncrypt");
    CU_ASSERT_EQUAL(req.input.len, 12);
    CU_ASSERT_EQUAL(memcmp(req.input.data, "Hello World!", 12), 0);
    CU_ASSERT_FALSE(req.aad.present);
    CU_ASSERT_FALSE(req.want_cdiv);
}

static void test_the_spec_examples_parse(void)
{
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT,
                          "{" MD_KEY_OP ",\"additionalAuthenticatedData\":\"" AAD_B64
                          "\",\"plaintext\":\"" PT_B64 "\",\"encryptionAlgorithm\":\"AES_GCM\","
                          "\"ciphertextDataIntegrityValueAlgorithm\":"
                          "\"SHA_256\"}"),
                    HF_STATUS_OK);
    CU_ASSERT_TRUE(req.want_cdiv);
    CU_ASSERT_TRUE(req.aad.present);
    CU_ASSERT_EQUAL(req.aad.len, 33);
    CU_ASSERT_EQUAL(memcmp(req.aad.data, "project=nile,department=marketing", 33), 0);
    CU_ASSERT_STRING_EQUAL(req.md.kms_via_service, "ebs");
    CU_ASSERT_PTR_NULL(req.md.aws_source_vpc);

    CU_ASSERT_EQUAL(parse(HF_XKS_OP_DECRYPT,
                          "{" MD_KEY_OP ",\"additionalAuthenticatedData\":\"" AAD_B64
                          "\",\"encryptionAlgorithm\":\"AES_GCM\",\"ciphertext\":"
                          "\"ghxkK1txeDNn3q8Y\",\"ciphertextMetadata\":\"" CM_B64 "\","
                          "\"initializationVector\":\"" IV_B64 "\",\"authenticationTag\":"
                          "\"" TAG_B64 "\"}"),
                    HF_STATUS_OK);
    CU_ASSERT_EQUAL(req.input.len, 12);
    CU_ASSERT_EQUAL(req.iv_len, 12);
    CU_ASSERT_EQUAL(req.iv[0], 0x1c);
    CU_ASSERT_EQUAL(req.tag[15], 0x61);
    CU_ASSERT_TRUE(req.cm.present);
    CU_ASSERT_EQUAL(req.cm.len, 13);
    CU_ASSERT_EQUAL(memcmp(req.cm.data, "key_version=1", 13), 0);
}

static void test_wrong_enums_are_validation_errors(void)
{
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT,
                          "{" MD_KEY_OP ",\"plaintext\":\"" PT_B64 "\",\"encryptionAlgorithm\":"
                          "\"AES_CBC\"}"),
                    HF_STATUS_BAD_REQUEST);
    assert_why("encryptionAlgorithm must be AES_GCM");
    CU_ASSERT_PTR_NULL(strstr(why, "AES_CBC")); /* the value is not echoed */
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT,
                          "{" MD_KEY_OP ",\"plaintext\":\"" PT_B64 "\",\"encryptionAlgorithm\":"
                          "\"aes_gcm\"}"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT, "{" MD_KEY_OP ",\"plaintext\":\"" PT_B64 "\"}"),
                    HF_STATUS_BAD_REQUEST);
    assert_why("encryptionAlgorithm is required");
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT,
                          "{" MD_KEY_OP ",\"plaintext\":\"" PT_B64 "\",\"encryptionAlgorithm\":"
                          "\"AES_GCM\",\"ciphertextDataIntegrityValueAlgorithm\":\"SHA_512\"}"),
                    HF_STATUS_BAD_REQUEST);
    assert_why("ciphertextDataIntegrityValueAlgorithm must be SHA_256");
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_DECRYPT,
                          "{" MD_KEY_OP ",\"ciphertext\":\"" PT_B64 "\",\"encryptionAlgorithm\":"
                          "\"AES_GCM_256\",\"initializationVector\":\"" IV_B64 "\","
                          "\"authenticationTag\":\"" TAG_B64 "\"}"),
                    HF_STATUS_BAD_REQUEST);
}

static void test_decrypt_requires_iv_and_tag_of_the_right_sizes(void)
{
    char body[1024];
    static const struct {
        const char *iv, *tag;
        enum hf_status want;
        const char *why; /* what the reason names */
    } cases[] = {
        {IV_B64, TAG_B64, HF_STATUS_OK, NULL},
        {"AAAAAAAAAAAAAAAAAAAAAA==", TAG_B64, HF_STATUS_OK, NULL}, /* 16-byte IV: allowed */
        {"AAAAAAAAAAAAAAAAAA==", TAG_B64, HF_STATUS_BAD_REQUEST, "initializationVector must"},
        {"AAAAAAAAAAAAAAA=", TAG_B64, HF_STATUS_BAD_REQUEST, "initializationVector must"},
        {"", TAG_B64, HF_STATUS_BAD_REQUEST, "initializationVector must"},
        {"AAAAAAAAAAAAAAAAAAAAAAAAAAAA", TAG_B64, HF_STATUS_BAD_REQUEST, "initializationVector is"},
        {IV_B64, "AAAAAAAAAAAAAAAAAAAA", HF_STATUS_BAD_REQUEST, "authenticationTag must"},
        {IV_B64, "AAAAAAAAAAAAAAAAAAAAAAAA", HF_STATUS_BAD_REQUEST, "authenticationTag is"},
        {NULL, TAG_B64, HF_STATUS_BAD_REQUEST, "initializationVector is required"},
        {IV_B64, NULL, HF_STATUS_BAD_REQUEST, "authenticationTag is required"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char iv[64] = "", tag[64] = "";

        if (cases[i].iv) snprintf(iv, sizeof(iv), ",\"initializationVector\":\"%s\"", cases[i].iv);
        if (cases[i].tag) snprintf(tag, sizeof(tag), ",\"authenticationTag\":\"%s\"", cases[i].tag);
        snprintf(body, sizeof(body),
                 "{" MD_KEY_OP ",\"ciphertext\":\"" PT_B64 "\",\"encryptionAlgorithm\":"
                 "\"AES_GCM\"%s%s}",
                 iv, tag);
        CU_ASSERT_EQUAL(parse(HF_XKS_OP_DECRYPT, body), cases[i].want);
        if (cases[i].why) assert_why(cases[i].why);
    }
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_DECRYPT, "{" MD_KEY_OP ",\"ciphertext\":\"" PT_B64 "\","
                                             "\"encryptionAlgorithm\":\"AES_GCM\","
                                             "\"initializationVector\":\"AAAAAAAAAAAAAAAAAAAAAA="
                                             "=\",\"authenticationTag\":\"" TAG_B64 "\"}"),
                    HF_STATUS_OK);
    CU_ASSERT_EQUAL(req.iv_len, 16);
}

/* ---- base64 ---------------------------------------------------------------------------------- */

static void test_bad_base64_is_a_validation_error(void)
{
    static const char *const bad[] = {
        "SGVsbG8gV29ybGQh!",    /* a character outside the alphabet */
        "SGVsbG8gV29ybGQ",      /* not a multiple of four */
        "SGVsbG8gV29ybA",       /* padding missing */
        "SGVs bG8gV29ybGQh",    /* inner space */
        "SGVsbG8g\\nV29ybGQh",  /* a newline (JSON escape) */
        " SGVsbG8gV29ybGQh",    /* leading space */
        "SGVsbG8gV29ybGQh ",    /* trailing space */
        "SGVsbG8-V29ybGQh",     /* URL-safe alphabet */
        "SGVsbG8_V29ybGQh",     /* URL-safe alphabet */
        "SGVsbG8gV29ybB==",     /* non-canonical: pad bits set */
        "SGVsbG8gV29ybGR=",     /* non-canonical: pad bits set */
        "SGVs=G8gV29ybGQh",     /* padding in the middle */
        "SGVsbG8gV29ybGQh====", /* padding alone */
        "S===",                 /* too much padding */
    };
    char body[512];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(body, sizeof(body),
                 "{" MD_KEY_OP ",\"plaintext\":\"%s\",\"encryptionAlgorithm\":\"AES_GCM\"}",
                 bad[i]);
        CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT, body), HF_STATUS_BAD_REQUEST);
        assert_why("plaintext is not valid base64");
        snprintf(body, sizeof(body),
                 "{" MD_KEY_OP ",\"plaintext\":\"" PT_B64 "\",\"encryptionAlgorithm\":"
                 "\"AES_GCM\",\"additionalAuthenticatedData\":\"%s\"}",
                 bad[i]);
        CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT, body), HF_STATUS_BAD_REQUEST);
        assert_why("additionalAuthenticatedData is not valid base64");
    }
    /* The canonical forms of the same lengths are fine, and so is an empty field. */
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT, "{" MD_KEY_OP ",\"plaintext\":\"SGVsbG8gV29ybA==\","
                                             "\"encryptionAlgorithm\":\"AES_GCM\","
                                             "\"additionalAuthenticatedData\":\"\"}"),
                    HF_STATUS_OK);
    CU_ASSERT_EQUAL(req.input.len, 10);
    CU_ASSERT_TRUE(req.aad.present);
    CU_ASSERT_EQUAL(req.aad.len, 0);
}

static void test_decrypt_base64_fields_are_checked(void)
{
    static const char *const fields[] = {"ciphertext", "initializationVector", "authenticationTag",
                                         "ciphertextMetadata", "additionalAuthenticatedData"};
    char body[1024];

    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const char *f = fields[i];
        snprintf(body, sizeof(body),
                 "{" MD_KEY_OP ",\"encryptionAlgorithm\":\"AES_GCM\",\"ciphertext\":\"%s\","
                 "\"initializationVector\":\"%s\",\"authenticationTag\":\"%s\","
                 "\"ciphertextMetadata\":\"%s\",\"additionalAuthenticatedData\":\"%s\"}",
                 !strcmp(f, "ciphertext") ? "ghxk*1txeDNn3q8Y" : "ghxkK1txeDNn3q8Y",
                 !strcmp(f, "initializationVector") ? "HMrlRw85cAJUd5A" : IV_B64,
                 !strcmp(f, "authenticationTag") ? "vBxN2ncH1oEkR8WVXpmyYQ=" : TAG_B64,
                 !strcmp(f, "ciphertextMetadata") ? "a2V5X3ZlcnNpb249MQ=" : CM_B64,
                 !strcmp(f, "additionalAuthenticatedData") ? "cHJvamVjdD1uaWxl\\tGRl" : AAD_B64);
        CU_ASSERT_EQUAL(parse(HF_XKS_OP_DECRYPT, body), HF_STATUS_BAD_REQUEST);
        assert_why(f);
    }
}

/* ---- sizes ----------------------------------------------------------------------------------- */

static void test_plaintext_4300_is_taken_4301_is_over_the_cap(void)
{
    const char *head = "{" MD_KEY_OP ",\"encryptionAlgorithm\":\"AES_GCM\",";
    char *at = body_with_b64(head, "plaintext", HF_XKS_MIN_PLAINTEXT, "}");
    char *over = body_with_b64(head, "plaintext", HF_XKS_MIN_PLAINTEXT + 1, "}");
    const struct hf_xks_caps bigger = {HF_XKS_MIN_PLAINTEXT + 1, HF_XKS_MIN_AAD};

    CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT, at), HF_STATUS_OK);
    CU_ASSERT_EQUAL(req.input.len, 4300);
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT, over), HF_STATUS_UNSUPPORTED);
    assert_why("plaintext is 4301 bytes");
    CU_ASSERT_EQUAL(parse_caps(HF_XKS_OP_ENCRYPT, over, &bigger), HF_STATUS_OK);
    free(at);
    free(over);
}

static void test_aad_8192_is_taken_8193_is_over_the_cap(void)
{
    const char *head =
        "{" MD_KEY_OP ",\"encryptionAlgorithm\":\"AES_GCM\",\"plaintext\":\"" PT_B64 "\",";
    char *at = body_with_b64(head, "additionalAuthenticatedData", HF_XKS_MIN_AAD, "}");
    char *over = body_with_b64(head, "additionalAuthenticatedData", HF_XKS_MIN_AAD + 1, "}");

    CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT, at), HF_STATUS_OK);
    CU_ASSERT_EQUAL(req.aad.len, 8192);
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_ENCRYPT, over), HF_STATUS_UNSUPPORTED);
    assert_why("additionalAuthenticatedData is 8193 bytes");
    free(at);
    free(over);
}

static void test_ciphertext_sizes_follow_the_plaintext_cap(void)
{
    const char *head = "{" MD_KEY_OP ",\"encryptionAlgorithm\":\"AES_GCM\","
                       "\"initializationVector\":\"" IV_B64 "\",\"authenticationTag\":\"" TAG_B64
                       "\",\"ciphertextMetadata\":\"" CM_B64 "\",";
    char *at = body_with_b64(head, "ciphertext", HF_XKS_MIN_PLAINTEXT, "}");
    char *over = body_with_b64(head, "ciphertext", HF_XKS_MIN_PLAINTEXT + 1, "}");

    CU_ASSERT_EQUAL(parse(HF_XKS_OP_DECRYPT, at), HF_STATUS_OK);
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_DECRYPT, over), HF_STATUS_UNSUPPORTED);
    assert_why("ciphertext");
    free(at);
    free(over);
}

static void test_ciphertext_metadata_over_20_bytes_is_invalid(void)
{
    const char *head = "{" MD_KEY_OP ",\"encryptionAlgorithm\":\"AES_GCM\",\"ciphertext\":"
                       "\"" PT_B64 "\",\"initializationVector\":\"" IV_B64 "\","
                       "\"authenticationTag\":\"" TAG_B64 "\",";
    char *at = body_with_b64(head, "ciphertextMetadata", 20, "}");
    char *over = body_with_b64(head, "ciphertextMetadata", 21, "}");

    CU_ASSERT_EQUAL(parse(HF_XKS_OP_DECRYPT, at), HF_STATUS_OK);
    CU_ASSERT_EQUAL(req.cm.len, 20);
    /* The spec's own limit, not an implementation cap: a validation error. */
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_DECRYPT, over), HF_STATUS_BAD_REQUEST);
    assert_why("ciphertextMetadata is 21 bytes");
    free(at);
    free(over);
}

static void test_arns_of_2048_are_taken_longer_is_over_the_cap(void)
{
    char *arn = malloc(2050), *body = malloc(2400);

    CU_ASSERT_FATAL(arn != NULL && body != NULL);
    memset(arn, 'a', 2049);
    memcpy(arn, "arn:aws:iam::1:role/", 20);
    arn[2048] = '\0';
    snprintf(body, 2400,
             "{\"requestMetadata\":{\"awsPrincipalArn\":\"%s\",\"kmsOperation\":\"DescribeKey\","
             "\"kmsRequestId\":\"r\",\"kmsKeyArn\":\"%s\"}}",
             arn, "arn:aws:kms:us-east-1:1:key/k");
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_METADATA, body), HF_STATUS_OK);
    CU_ASSERT_EQUAL(strlen(req.md.aws_principal_arn), 2048);
    arn[2048] = 'a';
    arn[2049] = '\0';
    snprintf(body, 2400,
             "{\"requestMetadata\":{\"awsPrincipalArn\":\"%s\",\"kmsOperation\":\"DescribeKey\","
             "\"kmsRequestId\":\"r\"}}",
             arn);
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_METADATA, body), HF_STATUS_UNSUPPORTED);
    assert_why("awsPrincipalArn is 2049 characters");
    free(arn);
    free(body);
}

static void test_too_deep_json_is_refused(void)
{
    char body[512];
    size_t n = 0;

    n += (size_t)snprintf(body, sizeof(body), "{" MD_HEALTH ",\"x\":");
    for (int i = 0; i < 40; i++)
        body[n++] = '[';
    for (int i = 0; i < 40; i++)
        body[n++] = ']';
    body[n++] = '}';
    body[n] = '\0';
    CU_ASSERT_EQUAL(parse(HF_XKS_OP_HEALTH, body), HF_STATUS_BAD_REQUEST);
}

/* ---- keyId ----------------------------------------------------------------------------------- */

static void test_key_ids_follow_the_spec_alphabet(void)
{
    char id[130];

    CU_ASSERT_TRUE(hf_xks_key_id_is_valid("a"));
    CU_ASSERT_TRUE(hf_xks_key_id_is_valid("b42c7fbf-de61-441c-ae24-123456789012"));
    CU_ASSERT_TRUE(hf_xks_key_id_is_valid("Key_1.v2-X"));
    memset(id, 'k', 128);
    id[128] = '\0';
    CU_ASSERT_TRUE(hf_xks_key_id_is_valid(id));
    id[128] = 'k';
    id[129] = '\0';
    CU_ASSERT_FALSE(hf_xks_key_id_is_valid(id));
    CU_ASSERT_FALSE(hf_xks_key_id_is_valid(""));
    CU_ASSERT_FALSE(hf_xks_key_id_is_valid(NULL));
    CU_ASSERT_FALSE(hf_xks_key_id_is_valid("a/b"));
    CU_ASSERT_FALSE(hf_xks_key_id_is_valid("a b"));
    CU_ASSERT_FALSE(hf_xks_key_id_is_valid("a%2Fb"));
    CU_ASSERT_FALSE(hf_xks_key_id_is_valid("caf\xc3\xa9"));
}

int main(void)
{
    static CU_TestInfo json_tests[] = {
        {"duplicate keys and invalid UTF-8 are validation errors",
         test_duplicate_keys_and_bad_utf8_are_validation_errors},
        {"malformed json is a validation error", test_malformed_json_is_a_validation_error},
        {"body with nul inside is refused", test_body_with_nul_inside_is_refused},
        {"health needs request id and operation", test_health_needs_request_id_and_operation},
        {"metadata key arn is optional, principal is not",
         test_metadata_key_arn_is_optional_principal_is_not},
        {"encrypt and decrypt need the key arn", test_encrypt_and_decrypt_need_the_key_arn},
        {"wrong types are validation errors", test_wrong_types_are_validation_errors},
        {"unknown fields and operations are accepted",
         test_unknown_fields_and_operations_are_accepted},
        {"the spec examples parse", test_the_spec_examples_parse},
        {"wrong enums are validation errors", test_wrong_enums_are_validation_errors},
        {"decrypt requires iv and tag of the right sizes",
         test_decrypt_requires_iv_and_tag_of_the_right_sizes},
        {"too deep json is refused", test_too_deep_json_is_refused},
        {"key ids follow the spec alphabet", test_key_ids_follow_the_spec_alphabet},
        CU_TEST_INFO_NULL,
    };
    static CU_TestInfo base64_tests[] = {
        {"bad base64 is a validation error", test_bad_base64_is_a_validation_error},
        {"decrypt base64 fields are checked", test_decrypt_base64_fields_are_checked},
        CU_TEST_INFO_NULL,
    };
    static CU_TestInfo size_tests[] = {
        {"plaintext 4300 is taken, 4301 is over the cap",
         test_plaintext_4300_is_taken_4301_is_over_the_cap},
        {"aad 8192 is taken, 8193 is over the cap", test_aad_8192_is_taken_8193_is_over_the_cap},
        {"ciphertext sizes follow the plaintext cap",
         test_ciphertext_sizes_follow_the_plaintext_cap},
        {"ciphertext metadata over 20 bytes is invalid",
         test_ciphertext_metadata_over_20_bytes_is_invalid},
        {"arns of 2048 are taken, longer is over the cap",
         test_arns_of_2048_are_taken_longer_is_over_the_cap},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"xks-request-json", NULL, suite_clean, NULL, NULL, json_tests},
        {"xks-request-base64", NULL, suite_clean, NULL, NULL, base64_tests},
        {"xks-request-sizes", NULL, suite_clean, NULL, NULL, size_tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
