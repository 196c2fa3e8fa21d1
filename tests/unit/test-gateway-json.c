/* hf_json_parse (gateway/json.c), the strict reader every plugin's bodies go through: what json-c
 * lets through that a key manager must not (duplicate keys at any depth, invalid UTF-8 in the
 * text or made by escapes), its depth and size limits, and hf_json_wipe clearing secrets. */
#include "hf-build.h"

#include "gateway/json.h"
#include "tests/unit/harness.h"

#include <stdlib.h>
#include <string.h>

static enum hf_status parse(const char *text, size_t len, struct json_object **out)
{
    char why[256];
    enum hf_status st = hf_json_parse(text, len, 0, 0, out, why, sizeof(why));

    /* The reason is always printable and never empty on failure. */
    if (st != HF_STATUS_OK) {
        CU_ASSERT(why[0] != '\0');
        for (const char *p = why; *p; p++)
            CU_ASSERT(*p >= 0x20 && *p < 0x7f);
        CU_ASSERT_PTR_NULL(*out);
    }
    return st;
}

static enum hf_status parse_str(const char *text)
{
    struct json_object *o = NULL;
    enum hf_status st = parse(text, strlen(text), &o);

    json_object_put(o);
    return st;
}

static void test_valid_bodies_parse(void)
{
    struct json_object *o = NULL, *v = NULL;

    CU_ASSERT_EQUAL(parse_str("{}"), HF_STATUS_OK);
    CU_ASSERT_EQUAL(parse_str(" {\"a\":1,\"b\":{\"a\":2},\"c\":[{\"a\":3},{\"a\":4}]} \r\n"),
                    HF_STATUS_OK);
    /* The same key in two different objects is no duplicate; a colon inside a string or an
     * escaped quote is no member. */
    CU_ASSERT_EQUAL(parse_str("{\"x:y\":\"a:b\\\":c\",\"k\":{\"x:y\":\"\\\\\"}}"), HF_STATUS_OK);
    CU_ASSERT_EQUAL(parse_str("[1,\"two\",null,true]"), HF_STATUS_OK);
    /* A value that only its end terminates. */
    CU_ASSERT_EQUAL(parse_str("9"), HF_STATUS_OK);
    CU_ASSERT_EQUAL(parse_str("true"), HF_STATUS_OK);
    CU_ASSERT_EQUAL(parse_str("-1.5e3"), HF_STATUS_OK);
    CU_ASSERT_EQUAL(parse_str("9 x"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("{\"a\":"), HF_STATUS_BAD_REQUEST);
    /* Well-formed multibyte UTF-8, raw and escaped (a surrogate pair). */
    CU_ASSERT_EQUAL(parse_str("{\"k\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\x91\"}"), HF_STATUS_OK);
    CU_ASSERT_EQUAL(parse_str("{\"k\":\"\\ud83d\\udd11\"}"), HF_STATUS_OK);
    CU_ASSERT_EQUAL_FATAL(parse("{\"a\":\"b\"}", 9, &o), HF_STATUS_OK);
    CU_ASSERT_TRUE(json_object_object_get_ex(o, "a", &v));
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "b");
    json_object_put(o);
}

static void test_duplicate_keys_are_refused(void)
{
    CU_ASSERT_EQUAL(parse_str("{\"a\":1,\"a\":1}"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("{\"plaintext\":\"AA==\",\"x\":0,\"plaintext\":\"AQ==\"}"),
                    HF_STATUS_BAD_REQUEST);
    /* Escapes that spell the same key are the same key. */
    CU_ASSERT_EQUAL(parse_str("{\"a\":1,\"\\u0061\":2}"), HF_STATUS_BAD_REQUEST);
}

static void test_nested_duplicate_keys_are_refused(void)
{
    CU_ASSERT_EQUAL(parse_str("{\"requestMetadata\":{\"kmsRequestId\":\"1\",\"kmsRequestId\":"
                              "\"2\"}}"),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("[{\"a\":1},{\"b\":{\"c\":[{\"d\":1,\"d\":{}}]}}]"),
                    HF_STATUS_BAD_REQUEST);
    /* A duplicate whose first value is an object (json-c frees the first silently). */
    CU_ASSERT_EQUAL(parse_str("{\"m\":{\"a\":1,\"b\":2},\"m\":{}}"), HF_STATUS_BAD_REQUEST);
}

static void test_invalid_utf8_is_refused(void)
{
    static const char *bad[] = {
        "{\"k\":\"\xc0\xaf\"}",             /* overlong '/' */
        "{\"k\":\"\xe0\x80\xaf\"}",         /* overlong, three bytes */
        "{\"k\":\"\xf0\x80\x80\xaf\"}",     /* overlong, four bytes */
        "{\"k\":\"\xed\xa0\x80\"}",         /* UTF-16 high surrogate, encoded */
        "{\"k\":\"\xed\xbf\xbf\"}",         /* low surrogate, encoded */
        "{\"k\":\"\xf4\x90\x80\x80\"}",     /* over U+10FFFF */
        "{\"k\":\"\xf8\x88\x80\x80\x80\"}", /* five bytes */
        "{\"k\":\"\xe2\x82\"}",             /* truncated inside the string */
        "{\"k\":\"\x80\"}",                 /* a lone continuation byte */
        "{\"\xff\":1}",                     /* in a key */
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CU_ASSERT_EQUAL(parse_str(bad[i]), HF_STATUS_BAD_REQUEST);
    /* Truncated at the very end of the text. */
    CU_ASSERT_EQUAL(parse_str("{\"k\":1} \xf0\x9f"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_FALSE(hf_json_utf8_is_valid((const unsigned char *)"\xf0\x9f\x94", 3));
    CU_ASSERT_TRUE(hf_json_utf8_is_valid((const unsigned char *)"\xf4\x8f\xbf\xbf", 4));
    CU_ASSERT_TRUE(hf_json_utf8_is_valid((const unsigned char *)"\xee\x80\x80", 3));
}

static void test_escaped_lone_surrogates_are_refused(void)
{
    struct json_object *o = NULL;
    enum hf_status st = parse_str("{\"k\":\"\\ud800\"}");

    /* json-c may turn a lone surrogate into U+FFFD (valid) or its CESU bytes (refused): either
     * way no invalid UTF-8 reaches a plugin. */
    if (st == HF_STATUS_OK) {
        CU_ASSERT_EQUAL(parse("{\"k\":\"\\ud800\"}", 14, &o), HF_STATUS_OK);
        CU_ASSERT_TRUE(hf_json_utf8_is_valid(
            (const unsigned char *)json_object_get_string(json_object_object_get(o, "k")),
            (size_t)json_object_get_string_len(json_object_object_get(o, "k"))));
        json_object_put(o);
    }
    CU_ASSERT_NOT_EQUAL(parse_str("{\"k\":\"\\udc00\\ud800\"}"), HF_STATUS_INTERNAL);
}

static void test_malformed_bodies_are_refused(void)
{
    CU_ASSERT_EQUAL(parse_str(""), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("{"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("{'a':1}"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("{\"a\":1,}"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("{\"a\":1} {}"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("null"), HF_STATUS_BAD_REQUEST);
    /* json-c's strict mode takes these; RFC 8259 does not. */
    CU_ASSERT_EQUAL(parse_str("{'a':1}"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("{'a\"':1,\"a\":1}"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("[NaN]"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("[-Infinity]"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("[1.]"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("[\"a\tb\"]"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("[1]/*c*/"), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(parse_str("[1.5e-3,-0,true,false]"), HF_STATUS_OK);
    CU_ASSERT_EQUAL(parse("{\"a\":1}\0", 8, &(struct json_object *){NULL}), HF_STATUS_BAD_REQUEST);
}

static char *nested(int depth)
{
    char *s = malloc((size_t)depth * 2 + 1);
    for (int i = 0; i < depth; i++) {
        s[i] = '[';
        s[depth + i] = ']';
    }
    s[depth * 2] = '\0';
    return s;
}

static void test_depth_is_limited(void)
{
    struct json_object *o = NULL;
    char *ok = nested(HF_JSON_DEFAULT_DEPTH), *deep = nested(HF_JSON_DEFAULT_DEPTH + 1);
    char *deeper = nested(4);

    CU_ASSERT_EQUAL(parse_str(ok), HF_STATUS_OK);
    CU_ASSERT_EQUAL(parse_str(deep), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(hf_json_parse(deeper, strlen(deeper), 0, 3, &o, NULL, 0),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(hf_json_parse(deeper, strlen(deeper), 0, 4, &o, NULL, 0), HF_STATUS_OK);
    json_object_put(o);
    free(ok);
    free(deep);
    free(deeper);
}

static void test_size_is_limited(void)
{
    struct json_object *o = NULL;
    const char *body = "{\"a\":\"0123456789\"}";

    CU_ASSERT_EQUAL(hf_json_parse(body, strlen(body), strlen(body) - 1, 0, &o, NULL, 0),
                    HF_STATUS_UNSUPPORTED);
    CU_ASSERT_PTR_NULL(o);
    CU_ASSERT_EQUAL(hf_json_parse(body, strlen(body), strlen(body), 0, &o, NULL, 0), HF_STATUS_OK);
    json_object_put(o);
}

static void test_wipe_clears_every_string(void)
{
    struct json_object *o = NULL, *pt = NULL, *md = NULL, *id = NULL;
    const char *body = "{\"plaintext\":\"c2VjcmV0LXNlY3JldC1zZWNyZXQ=\",\"n\":7,"
                       "\"requestMetadata\":{\"kmsRequestId\":\"abc\"},\"l\":[\"q\"]}";
    const char *p;
    size_t len;

    CU_ASSERT_EQUAL_FATAL(parse(body, strlen(body), &o), HF_STATUS_OK);
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(o, "plaintext", &pt));
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(o, "requestMetadata", &md));
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(md, "kmsRequestId", &id));
    p = json_object_get_string(pt);
    len = (size_t)json_object_get_string_len(pt);
    hf_json_wipe(o);
    for (size_t i = 0; i < len; i++)
        CU_ASSERT_EQUAL(p[i], 0);
    CU_ASSERT_EQUAL(json_object_get_string(id)[0], 0);
    CU_ASSERT_EQUAL(
        json_object_get_string(json_object_array_get_idx(json_object_object_get(o, "l"), 0))[0], 0);
    CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(o, "n")), 7);
    hf_json_put_wiped(o);
    hf_json_put_wiped(NULL);
}

static CU_TestInfo json_tests[] = {
    {"valid bodies parse, same keys in different objects included", test_valid_bodies_parse},
    {"a duplicate key is refused", test_duplicate_keys_are_refused},
    {"a duplicate key in a nested object or array is refused",
     test_nested_duplicate_keys_are_refused},
    {"overlong, surrogate, out-of-range and truncated UTF-8 are refused",
     test_invalid_utf8_is_refused},
    {"escaped lone surrogates give no invalid UTF-8", test_escaped_lone_surrogates_are_refused},
    {"malformed text, trailing data, null and json-c's leniencies are refused",
     test_malformed_bodies_are_refused},
    {"nesting over the depth limit is refused", test_depth_is_limited},
    {"text over the size limit is refused", test_size_is_limited},
    {"wipe clears every string in the tree", test_wipe_clears_every_string},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-json", NULL, NULL, NULL, NULL, json_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
