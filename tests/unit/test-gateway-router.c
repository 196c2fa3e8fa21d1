/* The gateway router (gateway/router.c): plugin.h's pattern syntax, captures, 405 against 404,
 * and the patterns it refuses. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/router.h"

#include <stdlib.h>
#include <string.h>

static int tag[8]; /* route data: &tag[i] says which route matched */

static struct hf_router *router_of(const char *const *spec)
{
    struct hf_router *r = hf_router_new();
    char err[160];

    CU_ASSERT_FATAL(r != NULL);
    for (size_t i = 0; spec[i]; i += 2) {
        bool ok = hf_router_add(r, spec[i], spec[i + 1], &tag[i / 2], err, sizeof(err));
        CU_ASSERT(ok);
        if (!ok) fprintf(stderr, "%s %s: %s\n", spec[i], spec[i + 1], err);
    }
    return r;
}

static enum hf_router_result match(const struct hf_router *r, const char *method, const char *path,
                                   struct hf_router_match *m)
{
    return hf_router_match(r, method, path, strlen(path), m);
}

static const char *capture(const struct hf_router_match *m, const char *name)
{
    for (size_t i = 0; i < m->ncaptures; i++)
        if (strcmp(m->captures[i].name, name) == 0) return m->captures[i].value;
    return NULL;
}

static void test_literal_paths_match_exactly(void)
{
    static const char *const spec[] = {"GET", "/a/b", "GET", "/a", NULL};
    struct hf_router *r = router_of(spec);
    struct hf_router_match m;

    CU_ASSERT_EQUAL(match(r, "GET", "/a/b", &m), HF_ROUTER_FOUND);
    CU_ASSERT_PTR_EQUAL(m.data, &tag[0]);
    CU_ASSERT_EQUAL(m.ncaptures, 0);
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "GET", "/a", &m), HF_ROUTER_FOUND);
    CU_ASSERT_PTR_EQUAL(m.data, &tag[1]);
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "GET", "/a/b/", &m), HF_ROUTER_NOT_FOUND);
    CU_ASSERT_EQUAL(match(r, "GET", "/a/bc", &m), HF_ROUTER_NOT_FOUND);
    CU_ASSERT_EQUAL(match(r, "GET", "/A/b", &m), HF_ROUTER_NOT_FOUND);
    CU_ASSERT_EQUAL(match(r, "GET", "a/b", &m), HF_ROUTER_NOT_FOUND);
    CU_ASSERT_EQUAL(match(r, "GET", "", &m), HF_ROUTER_NOT_FOUND);
    CU_ASSERT_PTR_NULL(m.data);
    hf_router_free(r);
}

static void test_param_captures_one_non_empty_segment(void)
{
    static const char *const spec[] = {"POST", "/kms/xks/v1/keys/{keyId}/encrypt", NULL};
    struct hf_router *r = router_of(spec);
    struct hf_router_match m;

    CU_ASSERT_EQUAL(match(r, "POST", "/kms/xks/v1/keys/k-1/encrypt", &m), HF_ROUTER_FOUND);
    CU_ASSERT_STRING_EQUAL(capture(&m, "keyId"), "k-1");
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "POST", "/kms/xks/v1/keys//encrypt", &m), HF_ROUTER_NOT_FOUND);
    CU_ASSERT_EQUAL(match(r, "POST", "/kms/xks/v1/keys/a/b/encrypt", &m), HF_ROUTER_NOT_FOUND);
    hf_router_free(r);
}

static void test_star_takes_zero_or_more_segments_with_slashes(void)
{
    static const char *const spec[] = {"POST", "/{prefix*}/kms/xks/v1/keys/{keyId}/encrypt", "GET",
                                       "/files/{rest*}", NULL};
    struct hf_router *r = router_of(spec);
    struct hf_router_match m;

    CU_ASSERT_EQUAL(match(r, "POST", "/kms/xks/v1/keys/k1/encrypt", &m), HF_ROUTER_FOUND);
    CU_ASSERT_STRING_EQUAL(capture(&m, "prefix"), "");
    CU_ASSERT_STRING_EQUAL(capture(&m, "keyId"), "k1");
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "POST", "/a/b/c/kms/xks/v1/keys/k2/encrypt", &m), HF_ROUTER_FOUND);
    CU_ASSERT_STRING_EQUAL(capture(&m, "prefix"), "a/b/c");
    CU_ASSERT_STRING_EQUAL(capture(&m, "keyId"), "k2");
    hf_router_match_clear(&m);
    /* The star may itself hold the literal words that follow it. */
    CU_ASSERT_EQUAL(match(r, "POST", "/kms/kms/xks/v1/keys/k3/encrypt", &m), HF_ROUTER_FOUND);
    CU_ASSERT_STRING_EQUAL(capture(&m, "prefix"), "kms");
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "GET", "/files/x/y/z.txt", &m), HF_ROUTER_FOUND);
    CU_ASSERT_STRING_EQUAL(capture(&m, "rest"), "x/y/z.txt");
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "GET", "/files", &m), HF_ROUTER_FOUND);
    CU_ASSERT_STRING_EQUAL(capture(&m, "rest"), "");
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "POST", "/a/kms/xks/v1/keys/encrypt", &m), HF_ROUTER_NOT_FOUND);
    hf_router_free(r);
}

static void test_captures_are_percent_decoded(void)
{
    static const char *const spec[] = {"GET", "/k/{id}", "GET", "/z/{id}", NULL};
    struct hf_router *r = router_of(spec);
    struct hf_router_match m;

    CU_ASSERT_EQUAL(match(r, "GET", "/k/a%2Fb%20c", &m), HF_ROUTER_FOUND);
    CU_ASSERT_STRING_EQUAL(capture(&m, "id"), "a/b c");
    hf_router_match_clear(&m);
    /* A '%' without two hex digits stays as it is. */
    CU_ASSERT_EQUAL(match(r, "GET", "/k/100%", &m), HF_ROUTER_FOUND);
    CU_ASSERT_STRING_EQUAL(capture(&m, "id"), "100%");
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "GET", "/k/%zz", &m), HF_ROUTER_FOUND);
    CU_ASSERT_STRING_EQUAL(capture(&m, "id"), "%zz");
    hf_router_match_clear(&m);
    /* A NUL would cut the value short: no route matches. */
    CU_ASSERT_EQUAL(match(r, "GET", "/k/a%00b", &m), HF_ROUTER_NOT_FOUND);
    CU_ASSERT_EQUAL(m.ncaptures, 0);
    hf_router_free(r);
}

static void test_other_method_is_405_with_allow(void)
{
    static const char *const spec[] = {"POST", "/x/{id}", "PUT", "/x/{id}", "POST", "/y", NULL};
    struct hf_router *r = router_of(spec);
    struct hf_router_match m;

    CU_ASSERT_EQUAL(match(r, "GET", "/x/1", &m), HF_ROUTER_METHOD_NOT_ALLOWED);
    CU_ASSERT_PTR_EQUAL(m.data, &tag[0]); /* the first route that would match */
    CU_ASSERT_STRING_EQUAL(m.allow, "POST, PUT");
    CU_ASSERT_EQUAL(m.ncaptures, 0);
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "PUT", "/x/1", &m), HF_ROUTER_FOUND);
    CU_ASSERT_PTR_EQUAL(m.data, &tag[1]);
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "GET", "/z", &m), HF_ROUTER_NOT_FOUND);
    CU_ASSERT_PTR_NULL(m.data);
    CU_ASSERT_STRING_EQUAL(m.allow, "");
    /* Methods are case-sensitive (RFC 9110 section 9.1). */
    CU_ASSERT_EQUAL(match(r, "post", "/y", &m), HF_ROUTER_METHOD_NOT_ALLOWED);
    hf_router_match_clear(&m);
    hf_router_free(r);
}

static void test_first_route_in_order_wins(void)
{
    static const char *const spec[] = {"GET", "/a/{x}", "GET", "/a/fixed", NULL};
    struct hf_router *r = router_of(spec);
    struct hf_router_match m;

    CU_ASSERT_EQUAL(match(r, "GET", "/a/fixed", &m), HF_ROUTER_FOUND);
    CU_ASSERT_PTR_EQUAL(m.data, &tag[0]);
    CU_ASSERT_STRING_EQUAL(capture(&m, "x"), "fixed");
    hf_router_match_clear(&m);
    hf_router_free(r);
}

/* A second star, last: what follows the earliest match of the segments between the two. */
static void test_a_last_star_takes_the_rest(void)
{
    static const char *const spec[] = {"POST", "/{prefix*}/kms/xks/v1/keys/{keyId}/encrypt", "POST",
                                       "/{prefix*}/kms/xks/v1/{rest*}", NULL};
    struct hf_router *r = router_of(spec);
    struct hf_router_match m;

    CU_ASSERT_EQUAL(match(r, "POST", "/p/kms/xks/v1/keys/k1/encrypt", &m), HF_ROUTER_FOUND);
    CU_ASSERT_PTR_EQUAL(m.data, &tag[0]);
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "POST", "/p/q/kms/xks/v1/keys/k1/encrypt/more/and/more/again", &m),
                    HF_ROUTER_FOUND);
    CU_ASSERT_PTR_EQUAL(m.data, &tag[1]);
    CU_ASSERT_STRING_EQUAL(capture(&m, "prefix"), "p/q");
    CU_ASSERT_STRING_EQUAL(capture(&m, "rest"), "keys/k1/encrypt/more/and/more/again");
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "POST", "/kms/xks/v1", &m), HF_ROUTER_FOUND);
    CU_ASSERT_STRING_EQUAL(capture(&m, "prefix"), "");
    CU_ASSERT_STRING_EQUAL(capture(&m, "rest"), "");
    hf_router_match_clear(&m);
    /* The earliest match: the first star takes as little as it can. */
    CU_ASSERT_EQUAL(match(r, "POST", "/kms/xks/v1/kms/xks/v1/x", &m), HF_ROUTER_FOUND);
    CU_ASSERT_STRING_EQUAL(capture(&m, "prefix"), "");
    CU_ASSERT_STRING_EQUAL(capture(&m, "rest"), "kms/xks/v1/x");
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "POST", "/kms/xks/v2/x", &m), HF_ROUTER_NOT_FOUND);
    CU_ASSERT_EQUAL(match(r, "POST", "/kms/xks", &m), HF_ROUTER_NOT_FOUND);
    CU_ASSERT_EQUAL(match(r, "GET", "/a/kms/xks/v1/b", &m), HF_ROUTER_METHOD_NOT_ALLOWED);
    hf_router_match_clear(&m);
    hf_router_free(r);
}

static void test_bad_patterns_are_refused(void)
{
    static const char *const bad[][2] = {
        {"GET", "no/leading/slash"},
        {"GET", "/{a*}/{b*}/x"},
        {"GET", "/{a*}/x/{b*}/{c*}"},
        {"GET", "/a{b}"},
        {"GET", "/{b}c"},
        {"GET", "/a}"},
        {"GET", "/{}"},
        {"GET", "/{*}"},
        {"GET", "/{a b}"},
        {"GET", "/{id}/{id}"},
        {"get", "/lowercase-method"},
        {"", "/empty-method"},
        {"GET", "/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}"},
    };
    struct hf_router *r = hf_router_new();
    char err[160];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        CU_ASSERT_FALSE(hf_router_add(r, bad[i][0], bad[i][1], NULL, err, sizeof(err)));
        CU_ASSERT(err[0] != '\0');
    }
    CU_ASSERT_FALSE(hf_router_add(r, "GET", NULL, NULL, err, sizeof(err)));
    CU_ASSERT_EQUAL(hf_router_count(r), 0);
    hf_router_free(r);
}

static void test_deep_paths_match_nothing(void)
{
    static const char *const spec[] = {"GET", "/{all*}", NULL};
    struct hf_router *r = router_of(spec);
    struct hf_router_match m;
    size_t n = 2 * (HF_ROUTER_MAX_PATH_SEGS + 1);
    char *deep = malloc(n + 1);

    CU_ASSERT_FATAL(deep != NULL);
    for (size_t i = 0; i < n; i += 2)
        memcpy(deep + i, "/a", 2);
    deep[n] = '\0';
    CU_ASSERT_EQUAL(match(r, "GET", deep, &m), HF_ROUTER_NOT_FOUND);
    deep[2 * HF_ROUTER_MAX_PATH_SEGS] = '\0'; /* exactly the limit */
    CU_ASSERT_EQUAL(match(r, "GET", deep, &m), HF_ROUTER_FOUND);
    hf_router_match_clear(&m);
    free(deep);
    hf_router_free(r);
}

/* Two catch-all plugins on one router, each taking only its prefix (plugin.h's accepts). */
static bool under_prefix(void *data, const char *path, size_t pathlen)
{
    const char *prefix = data == &tag[0] ? "/ekm" : "/cse";
    size_t n = strlen(prefix);

    return pathlen >= n && memcmp(path, prefix, n) == 0 && (pathlen == n || path[n] == '/');
}

static void test_a_declining_route_is_skipped_for_404_and_405(void)
{
    struct hf_router *r = hf_router_new();
    struct hf_router_match m;
    char err[160];

    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT(
        hf_router_add_filtered(r, "POST", "/{path*}", &tag[0], under_prefix, err, sizeof(err)));
    CU_ASSERT(
        hf_router_add_filtered(r, "POST", "/{path*}", &tag[1], under_prefix, err, sizeof(err)));
    CU_ASSERT(
        hf_router_add_filtered(r, "OPTIONS", "/{path*}", &tag[1], under_prefix, err, sizeof(err)));
    CU_ASSERT_EQUAL(match(r, "POST", "/ekm/k:wrap", &m), HF_ROUTER_FOUND);
    CU_ASSERT_PTR_EQUAL(m.data, &tag[0]);
    hf_router_match_clear(&m);
    /* The first route declines: the second, though later, takes it. */
    CU_ASSERT_EQUAL(match(r, "POST", "/cse/wrap", &m), HF_ROUTER_FOUND);
    CU_ASSERT_PTR_EQUAL(m.data, &tag[1]);
    CU_ASSERT_STRING_EQUAL(capture(&m, "path"), "cse/wrap");
    hf_router_match_clear(&m);
    CU_ASSERT_EQUAL(match(r, "OPTIONS", "/cse/wrap", &m), HF_ROUTER_FOUND);
    CU_ASSERT_PTR_EQUAL(m.data, &tag[1]);
    hf_router_match_clear(&m);
    /* Only /cse's routes take OPTIONS: under /ekm it is 405 from /ekm's POST alone. */
    CU_ASSERT_EQUAL(match(r, "OPTIONS", "/ekm/k", &m), HF_ROUTER_METHOD_NOT_ALLOWED);
    CU_ASSERT_PTR_EQUAL(m.data, &tag[0]);
    CU_ASSERT_STRING_EQUAL(m.allow, "POST");
    hf_router_match_clear(&m);
    /* Outside both prefixes every route declines: 404, not 405, whatever the method. */
    CU_ASSERT_EQUAL(match(r, "POST", "/other/x", &m), HF_ROUTER_NOT_FOUND);
    CU_ASSERT_EQUAL(match(r, "OPTIONS", "/other/x", &m), HF_ROUTER_NOT_FOUND);
    CU_ASSERT_PTR_NULL(m.data);
    CU_ASSERT_EQUAL(match(r, "GET", "/ekmx/y", &m), HF_ROUTER_NOT_FOUND);
    hf_router_free(r);
}

static CU_TestInfo router_tests[] = {
    {"literal paths match exactly", test_literal_paths_match_exactly},
    {"{name} captures one non-empty segment", test_param_captures_one_non_empty_segment},
    {"{name*} takes zero or more segments, slashes included",
     test_star_takes_zero_or_more_segments_with_slashes},
    {"captures are percent-decoded, %00 matches nothing", test_captures_are_percent_decoded},
    {"another method is 405 with Allow, no path is 404", test_other_method_is_405_with_allow},
    {"the first route in order wins", test_first_route_in_order_wins},
    {"a last {name*} takes the rest after the earliest match", test_a_last_star_takes_the_rest},
    {"bad patterns are refused with a reason", test_bad_patterns_are_refused},
    {"paths deeper than the limit match nothing", test_deep_paths_match_nothing},
    {"a route that declines a path is skipped, for 404 and 405 alike",
     test_a_declining_route_is_skipped_for_404_and_405},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-router", NULL, NULL, NULL, NULL, router_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
