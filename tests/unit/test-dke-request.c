/* DKE request parsing (gateway/plugins/ms-dke/request.[ch]): the path's target (key and
 * decrypt routes under a prefix, "decrypt" in any case, the key name and key id rules, what is
 * no route), the decrypt body (alg, strict base64, the value cap, malformed JSON, unknown
 * members ignored) and cache.exp's format. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/ms-dke/request.h"

#include <stdio.h>
#include <string.h>

#define UUID "0b2c7a1e-8d3f-4c5b-9a6e-1f2d3c4b5a69"

static struct hf_dke_target t;

static enum hf_dke_target_kind target(const char *prefix, const char *path)
{
    hf_dke_path_parse(prefix, path, &t);
    return t.kind;
}

static void test_the_key_route(void)
{
    CU_ASSERT_EQUAL(target("/dke", "/dke/contoso-key"), HF_DKE_T_KEY);
    CU_ASSERT_STRING_EQUAL(t.name, "contoso-key");
    CU_ASSERT_STRING_EQUAL(t.key_id, "");
    CU_ASSERT_EQUAL(target("", "/A.b_c-9"), HF_DKE_T_KEY);
    CU_ASSERT_STRING_EQUAL(t.name, "A.b_c-9");
    CU_ASSERT_EQUAL(target("/a/b", "/a/b/k"), HF_DKE_T_KEY);
}

static void test_the_decrypt_route_ignores_case(void)
{
    CU_ASSERT_EQUAL(target("/dke", "/dke/k/" UUID "/decrypt"), HF_DKE_T_DECRYPT);
    CU_ASSERT_STRING_EQUAL(t.name, "k");
    CU_ASSERT_STRING_EQUAL(t.key_id, UUID);
    CU_ASSERT_EQUAL(target("/dke", "/dke/k/" UUID "/Decrypt"), HF_DKE_T_DECRYPT);
    CU_ASSERT_EQUAL(target("/dke", "/dke/k/" UUID "/DECRYPT"), HF_DKE_T_DECRYPT);
    /* A key id in upper case names the same version. */
    CU_ASSERT_EQUAL(target("/dke", "/dke/k/0B2C7A1E-8D3F-4C5B-9A6E-1F2D3C4B5A69/decrypt"),
                    HF_DKE_T_DECRYPT);
    CU_ASSERT_STRING_EQUAL(t.key_id, UUID);
}

static void test_what_is_no_route(void)
{
    static const char *const paths[] = {
        "/dke",
        "/dke/",
        "/dkex/k",
        "/other/k",
        "/dke/k/",
        "/dke//k",
        "/dke/k/" UUID,
        "/dke/k/" UUID "/encrypt",
        "/dke/k/" UUID "/decrypt/",
        "/dke/k/" UUID "/decryptx",
        "/dke/k/not-a-uuid/decrypt",
        "/dke/k/0b2c7a1e-8d3f-4c5b-9a6e-1f2d3c4b5a6/decrypt",
        "/dke/k/0b2c7a1e_8d3f-4c5b-9a6e-1f2d3c4b5a69/decrypt",
        "/dke/k/0b2c7a1e-8d3f-4c5b-9a6e-1f2d3c4b5a6g/decrypt",
        "/dke/k/" UUID "/decrypt/x",
        "/dke/k%2e/x",
        "/dke/..",
        "/dke/.",
        "/dke/k!",
        "/dke/a b",
        "",
    };

    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        if (target("/dke", paths[i]) != HF_DKE_T_NONE) {
            fprintf(stderr, "\n  '%s' is a route\n", paths[i]);
            CU_FAIL("a path that names nothing is a route");
        }
    }
    CU_ASSERT_EQUAL(target("", "/"), HF_DKE_T_NONE);
}

static void test_key_names(void)
{
    char name[HF_DKE_NAME_MAX + 2];

    memset(name, 'a', sizeof(name));
    CU_ASSERT_TRUE(hf_dke_name_is_valid(name, HF_DKE_NAME_MAX));
    CU_ASSERT_FALSE(hf_dke_name_is_valid(name, HF_DKE_NAME_MAX + 1));
    CU_ASSERT_FALSE(hf_dke_name_is_valid(name, 0));
    CU_ASSERT_TRUE(hf_dke_name_is_valid("...", 3));
    CU_ASSERT_FALSE(hf_dke_name_is_valid("..", 2));
    CU_ASSERT_FALSE(hf_dke_name_is_valid("a/b", 3));
    CU_ASSERT_FALSE(hf_dke_name_is_valid("a~b", 3));
    name[HF_DKE_NAME_MAX] = '\0';
    snprintf(t.name, sizeof(t.name), "%s", "");
    {
        char path[HF_DKE_NAME_MAX + 8];
        snprintf(path, sizeof(path), "/d/%s", name);
        CU_ASSERT_EQUAL(target("/d", path), HF_DKE_T_KEY);
        CU_ASSERT_STRING_EQUAL(t.name, name);
    }
}

static struct hf_dke_decrypt d;
static char why[256];

static enum hf_status parse(const char *body)
{
    hf_dke_decrypt_clear(&d);
    why[0] = '\0';
    return hf_dke_decrypt_parse(body, strlen(body), &d, why, sizeof(why));
}

static void test_a_decrypt_body(void)
{
    CU_ASSERT_EQUAL(parse("{\"alg\":\"RSA-OAEP-256\",\"value\":\"AAEC/w==\"}"), HF_STATUS_OK);
    CU_ASSERT_EQUAL(d.len, 4);
    CU_ASSERT_EQUAL(memcmp(d.value, "\x00\x01\x02\xff", 4), 0);
    /* Unknown members are ignored, as the reference's model binder does. */
    CU_ASSERT_EQUAL(parse("{\"value\":\"AA==\",\"kid\":\"x\",\"alg\":\"RSA-OAEP-256\"}"),
                    HF_STATUS_OK);
}

static void assert_refused(const char *body, const char *names)
{
    CU_ASSERT_EQUAL(parse(body), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_PTR_NULL(d.value);
    if (strstr(why, names) == NULL) {
        fprintf(stderr, "\n  why '%s' does not name '%s'\n", why, names);
        CU_FAIL("the reason does not name what is wrong");
    }
}

static void test_bad_decrypt_bodies(void)
{
    char big[1024], b64[700];

    assert_refused("", "JSON");
    assert_refused("{\"alg\":\"RSA-OAEP-256\",\"value\":\"AA==\"", "JSON");
    assert_refused("[1]", "object");
    assert_refused("{\"value\":\"AA==\"}", "alg");
    assert_refused("{\"alg\":\"RSA-OAEP\",\"value\":\"AA==\"}", "alg");
    assert_refused("{\"alg\":\"rsa-oaep-256\",\"value\":\"AA==\"}", "alg");
    assert_refused("{\"alg\":256,\"value\":\"AA==\"}", "alg");
    assert_refused("{\"alg\":\"RSA-OAEP-256\"}", "value");
    assert_refused("{\"alg\":\"RSA-OAEP-256\",\"value\":\"AA\"}", "value");
    assert_refused("{\"alg\":\"RSA-OAEP-256\",\"value\":\"AA-_\"}", "value");
    assert_refused("{\"alg\":\"RSA-OAEP-256\",\"value\":\"AA ==\"}", "value");
    assert_refused("{\"alg\":\"RSA-OAEP-256\",\"value\":7}", "value");
    assert_refused("{\"alg\":\"RSA-OAEP-256\",\"alg\":\"RSA-OAEP-256\",\"value\":\"AA==\"}",
                   "duplicate");
    /* 513 bytes (684 characters of base64): over RSA-4096's modulus. */
    memset(b64, 'A', 684);
    b64[684] = '\0';
    snprintf(big, sizeof(big), "{\"alg\":\"RSA-OAEP-256\",\"value\":\"%s\"}", b64);
    assert_refused(big, "value");
}

static void test_the_value_cap(void)
{
    char body[800];
    char b64[700];

    /* 512 bytes of zeros is "AAAA" x 170 + "AAA=". */
    memset(b64, 'A', 680);
    memcpy(b64 + 680, "AAA=", 5);
    snprintf(body, sizeof(body), "{\"alg\":\"RSA-OAEP-256\",\"value\":\"%s\"}", b64);
    CU_ASSERT_EQUAL(parse(body), HF_STATUS_OK);
    CU_ASSERT_EQUAL(d.len, HF_DKE_VALUE_MAX);
}

static void test_cache_exp_format(void)
{
    char out[20];

    CU_ASSERT_TRUE(hf_dke_cache_exp_format(1738324800, out)); /* 2025-01-31T12:00:00Z */
    CU_ASSERT_STRING_EQUAL(out, "2025-01-31T12:00:00");
    CU_ASSERT_TRUE(hf_dke_cache_exp_format(0, out));
    CU_ASSERT_STRING_EQUAL(out, "1970-01-01T00:00:00");
    CU_ASSERT_FALSE(hf_dke_cache_exp_format(INT64_C(253402300800), out)); /* year 10000 */
}

static int suite_clean(void)
{
    hf_dke_decrypt_clear(&d);
    return 0;
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"the key route under a prefix", test_the_key_route},
        {"the decrypt route ignores case", test_the_decrypt_route_ignores_case},
        {"what is no route", test_what_is_no_route},
        {"key names", test_key_names},
        {"a decrypt body", test_a_decrypt_body},
        {"bad decrypt bodies are refused naming the field", test_bad_decrypt_bodies},
        {"the value cap is RSA-4096's modulus", test_the_value_cap},
        {"cache.exp is UTC without a zone", test_cache_exp_format},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"dke-request", NULL, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
