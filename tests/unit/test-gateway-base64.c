/* plugin.h's codecs (gateway/base64.c): strict RFC 4648 section 4, the lenient decoder proto3
 * JSON and JWTs need (either alphabet, padded or not, never mixed, no whitespace), the URL-safe
 * unpadded encoder, and base64 as a json string. */
#include "hf-build.h"

#include "gateway/plugin.h"
#include "tests/unit/harness.h"

#include <stdlib.h>
#include <string.h>

/* Decodes in with hf_base64_decode_any into a buffer of exactly hf_base64_decoded_max bytes
 * (ASan sees any overrun); true when it decodes to want[0..want_len). */
static bool any_decodes_to(const char *in, const void *want, size_t want_len)
{
    size_t len = strlen(in), max = hf_base64_decoded_max(len), got = 0;
    unsigned char *out = malloc(max + 1);
    bool ok;

    if (out == NULL) return false;
    ok = hf_base64_decode_any(in, len, out, &got) && got == want_len &&
         memcmp(out, want, want_len) == 0;
    free(out);
    return ok;
}

static bool any_refuses(const char *in)
{
    size_t len = strlen(in), got = 99;
    unsigned char *out = malloc(hf_base64_decoded_max(len) + 1);
    bool refused = out != NULL && !hf_base64_decode_any(in, len, out, &got) && got == 99;

    free(out);
    return refused;
}

static void test_any_takes_both_alphabets_padded_or_not(void)
{
    /* 0xfb 0xff 0xbf: "+/+/" standard, "-_-_" URL-safe. */
    static const unsigned char b[] = {0xfb, 0xff, 0xbf};

    CU_ASSERT_TRUE(any_decodes_to("+/+/", b, 3));
    CU_ASSERT_TRUE(any_decodes_to("-_-_", b, 3));
    CU_ASSERT_TRUE(any_decodes_to("SGVsbG8=", "Hello", 5));
    CU_ASSERT_TRUE(any_decodes_to("SGVsbG8", "Hello", 5));
    CU_ASSERT_TRUE(any_decodes_to("SGk=", "Hi", 2));
    CU_ASSERT_TRUE(any_decodes_to("SGk", "Hi", 2));
    CU_ASSERT_TRUE(any_decodes_to("SA==", "H", 1));
    CU_ASSERT_TRUE(any_decodes_to("SA", "H", 1));
    CU_ASSERT_TRUE(any_decodes_to("-_8", b, 2));
    CU_ASSERT_TRUE(any_decodes_to("-_8=", b, 2));
    CU_ASSERT_TRUE(any_decodes_to("+/8", b, 2));
    CU_ASSERT_TRUE(any_decodes_to("", "", 0));
}

static void test_any_refuses_what_is_not_base64(void)
{
    static const char *const bad[] = {
        "+/-_",                               /* mixed alphabets */
        "-_8+",                               /* mixed alphabets */
        "SGVs bG8",                           /* whitespace */
        "SGVsbG8\n", " SGk", "SGk=\r\n", "S", /* a lone character is no byte */
        "SGVsb",                              /* the same after a whole group */
        "SG=k",                               /* padding inside */
        "SA=",                                /* padded, yet not to a whole group */
        "SA===",                              /* too much padding */
        "====",                               /* nothing but padding */
        "==",        "SGk*",                  /* outside both alphabets */
        "SGl=",                               /* pad bits not zero: not the one encoding of "Hi" */
        "SB",                                 /* the same unpadded */
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (!any_refuses(bad[i])) fprintf(stderr, "\n  accepted: '%s'\n", bad[i]);
        CU_ASSERT_TRUE(any_refuses(bad[i]));
    }
    CU_ASSERT_FALSE(hf_base64_decode_any(NULL, 0, (unsigned char *)"", NULL));
}

/* Inputs longer than the decoder's stack chunk, in both alphabets, padded and not. */
/* Padding where the decoder's stack chunk ends is still padding inside the text. */
static void test_any_refuses_padding_at_a_chunk_boundary(void)
{
    char text[261];

    memset(text, 'A', 260);
    memcpy(text + 254, "==", 2);
    text[260] = '\0';
    CU_ASSERT_TRUE(any_refuses(text));
}

static void test_any_decodes_long_inputs(void)
{
    unsigned char data[1001];
    char *std, *url;

    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (unsigned char)(i * 7 + 3);
    for (size_t n = 995; n <= sizeof(data); n++) {
        std = hf_base64_encode(data, n);
        url = hf_base64url_encode(data, n);
        CU_ASSERT_PTR_NOT_NULL_FATAL(std);
        CU_ASSERT_PTR_NOT_NULL_FATAL(url);
        CU_ASSERT_TRUE(any_decodes_to(std, data, n));
        CU_ASSERT_TRUE(any_decodes_to(url, data, n));
        free(std);
        free(url);
    }
}

/* The strict decoder is unchanged: standard alphabet, padded, nothing else. */
static void test_strict_stays_strict(void)
{
    unsigned char out[16];
    size_t got;

    CU_ASSERT_TRUE(hf_base64_decode("SGk=", 4, out, &got) && got == 2);
    CU_ASSERT_FALSE(hf_base64_decode("SGk", 3, out, &got));
    CU_ASSERT_FALSE(hf_base64_decode("-_-_", 4, out, &got));
    CU_ASSERT_EQUAL(hf_base64_decoded_max(4), 3);
    CU_ASSERT_EQUAL(hf_base64_decoded_max(3), 3); /* an unpadded group still writes 3 */
    CU_ASSERT_EQUAL(hf_base64_decoded_max(0), 0);
}

static void encodes_url(const void *in, size_t len, const char *want)
{
    char *got = hf_base64url_encode(in, len);

    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_STRING_EQUAL(got, want);
    free(got);
}

static void test_url_encoding_is_unpadded_url_safe(void)
{
    static const unsigned char b[] = {0xfb, 0xff, 0xbf};

    encodes_url(b, 3, "-_-_");
    encodes_url(b, 2, "-_8");
    encodes_url(b, 1, "-w");
    encodes_url("Hello", 5, "SGVsbG8");
    encodes_url("", 0, "");
    /* RFC 7515 appendix A.1's protected header, as JWS writes it. */
    encodes_url("{\"typ\":\"JWT\",\r\n \"alg\":\"HS256\"}", 30,
                "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9");
}

static void test_json_base64_is_a_standard_padded_string(void)
{
    static const unsigned char b[] = {0xfb, 0xff};
    struct json_object *o = hf_json_base64(b, 2);

    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_TRUE(json_object_is_type(o, json_type_string));
    CU_ASSERT_STRING_EQUAL(json_object_get_string(o), "+/8=");
    json_object_put(o);
}

static CU_TestInfo base64_tests[] = {
    {"lenient: standard or URL-safe, padded or not", test_any_takes_both_alphabets_padded_or_not},
    {"lenient: mixed alphabets, whitespace, bad padding and lengths refused",
     test_any_refuses_what_is_not_base64},
    {"lenient: inputs over the stack chunk decode whole", test_any_decodes_long_inputs},
    {"lenient: padding at a chunk's end inside the text is refused",
     test_any_refuses_padding_at_a_chunk_boundary},
    {"strict: standard and padded only", test_strict_stays_strict},
    {"URL-safe encoding has no padding", test_url_encoding_is_unpadded_url_safe},
    {"base64 as a json string is standard and padded",
     test_json_base64_is_a_standard_padded_string},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-base64", NULL, NULL, NULL, NULL, base64_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
