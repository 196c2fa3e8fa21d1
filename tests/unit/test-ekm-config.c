/* The gcp-ekm configuration (gateway/plugins/gcp-ekm/config.[ch]): endpoints and their
 * defaults (audience from the key URI, Google's issuers and JWKS), per-key allowlists and KAJ
 * policies, what a whole config must have, and routing a path to its endpoint and keyPath. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/gcp-ekm/config.h"

#include <string.h>

static struct hf_ekm_config cfg;
static char err[256];

static bool set(const char *instance, const char *name, const char *value)
{
    err[0] = '\0';
    return hf_ekm_config_set(&cfg, instance, name, value, err, sizeof(err));
}

static int suite_clean(void)
{
    hf_ekm_config_free(&cfg);
    return 0;
}

/* A config of one endpoint "a" with key k1, checked. */
static void minimal(void)
{
    hf_ekm_config_free(&cfg);
    CU_ASSERT_TRUE_FATAL(set("a", "prefix", "/ekm/"));
    CU_ASSERT_TRUE_FATAL(set("a", "key_uri", "https://ekm.example.com:8443/ekm"));
    CU_ASSERT_TRUE_FATAL(
        set("a", "key.v0/keys/k1.allowed_emails", "Service-1@gcp-sa-ekms.iam.gserviceaccount.com"));
}

static void test_defaults_come_from_the_key_uri_and_google(void)
{
    const struct hf_ekm_endpoint *ep;

    minimal();
    CU_ASSERT_TRUE_FATAL(hf_ekm_config_check(&cfg, err, sizeof(err)));
    ep = &cfg.endpoints[0];
    CU_ASSERT_STRING_EQUAL(ep->prefix, "/ekm");
    CU_ASSERT_EQUAL_FATAL(ep->naudiences, 1);
    CU_ASSERT_STRING_EQUAL(ep->audiences[0], "https://ekm.example.com");
    CU_ASSERT_EQUAL_FATAL(ep->nissuers, 2);
    CU_ASSERT_STRING_EQUAL(ep->issuers[0], "https://accounts.google.com");
    CU_ASSERT_STRING_EQUAL(ep->issuers[1], "accounts.google.com");
    CU_ASSERT_STRING_EQUAL(ep->jwks, HF_EKM_DEFAULT_JWKS);
    CU_ASSERT_EQUAL(ep->skew_s, 60);
    CU_ASSERT_EQUAL_FATAL(ep->nkeys, 1);
    CU_ASSERT_TRUE(ep->keys[0].kaj.absent_allowed);
    CU_ASSERT_EQUAL(ep->keys[0].kaj.allowed, 0xfffu);
    CU_ASSERT_EQUAL(ep->keys[0].cache_duration_s, 0);
}

static void test_configured_values_win(void)
{
    const struct hf_ekm_endpoint *ep;

    minimal();
    CU_ASSERT_TRUE(set("a", "audiences", "https://one, https://two"));
    CU_ASSERT_TRUE(set("a", "issuers", "https://issuer.test"));
    CU_ASSERT_TRUE(set("a", "jwks", "https://127.0.0.1:9/jwks"));
    CU_ASSERT_TRUE(set("a", "clock_skew", "5s"));
    CU_ASSERT_TRUE_FATAL(hf_ekm_config_check(&cfg, err, sizeof(err)));
    ep = &cfg.endpoints[0];
    CU_ASSERT_EQUAL(ep->naudiences, 2);
    CU_ASSERT_STRING_EQUAL(ep->audiences[1], "https://two");
    CU_ASSERT_EQUAL(ep->nissuers, 1);
    CU_ASSERT_STRING_EQUAL(ep->jwks, "https://127.0.0.1:9/jwks");
    CU_ASSERT_EQUAL(ep->skew_s, 5);
}

/* key.<PATH>.<option>: the path may hold dots; the option is after the last one. */
static void test_key_options(void)
{
    const struct hf_ekm_key *k;

    minimal();
    CU_ASSERT_TRUE(set("a", "key.v0/keys/fin.1.allowed_emails", "x@y, Z@Y"));
    CU_ASSERT_TRUE(set("a", "key.v0/keys/fin.1.reasons", "CUSTOMER_INITIATED_ACCESS 6"));
    CU_ASSERT_TRUE(set("a", "key.v0/keys/fin.1.reason_absent", "deny"));
    CU_ASSERT_TRUE(set("a", "key.v0/keys/fin.1.cache_duration", "5m"));
    CU_ASSERT_TRUE_FATAL(hf_ekm_config_check(&cfg, err, sizeof(err)));
    k = hf_ekm_endpoint_key(&cfg.endpoints[0], "v0/keys/fin.1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    CU_ASSERT_EQUAL(k->kaj.allowed, (1u << 5) | (1u << 6));
    CU_ASSERT_FALSE(k->kaj.absent_allowed);
    CU_ASSERT_EQUAL(k->cache_duration_s, 300);
    CU_ASSERT_TRUE(hf_ekm_key_allows_email(k, "z@y"));
    CU_ASSERT_TRUE(hf_ekm_key_allows_email(k, "X@Y"));
    CU_ASSERT_FALSE(hf_ekm_key_allows_email(k, "x@y.evil"));
    CU_ASSERT_FALSE(hf_ekm_key_allows_email(k, ""));
    CU_ASSERT_PTR_NULL(hf_ekm_endpoint_key(&cfg.endpoints[0], "v0/keys/fin"));
    CU_ASSERT_TRUE(hf_ekm_key_allows_email(hf_ekm_endpoint_key(&cfg.endpoints[0], "v0/keys/k1"),
                                           "service-1@GCP-SA-EKMS.iam.gserviceaccount.com"));
}

static void test_bad_values_are_refused(void)
{
    minimal();
    CU_ASSERT_FALSE(set("", "prefix", "/x"));
    CU_ASSERT_FALSE(set("a", "bogus", "1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "bogus"));
    CU_ASSERT_FALSE(set("a", "prefix", "/a//b"));
    CU_ASSERT_FALSE(set("a", "key_uri", "ftp://x"));
    CU_ASSERT_FALSE(set("a", "key.v0/k.reasons", "NOT_A_REASON"));
    CU_ASSERT_FALSE(set("a", "key.v0/k.reason_absent", "maybe"));
    CU_ASSERT_FALSE(set("a", "key.v0/k.colour", "red"));
    CU_ASSERT_FALSE(set("a", "key.v0//k.allowed_emails", "x@y"));
    CU_ASSERT_FALSE(set("a", "key.v0/k.allowed_emails", "not-an-email"));
    CU_ASSERT_FALSE(set("a", "clock_skew", "10m"));
}

static void test_a_whole_config_needs_its_parts(void)
{
    hf_ekm_config_free(&cfg);
    CU_ASSERT_FALSE(hf_ekm_config_check(&cfg, err, sizeof(err))); /* no endpoint */
    minimal();
    CU_ASSERT_TRUE(set("b", "key.k.allowed_emails", "x@y"));
    CU_ASSERT_TRUE(set("b", "audiences", "https://b"));
    CU_ASSERT_FALSE(hf_ekm_config_check(&cfg, err, sizeof(err))); /* b has no prefix */
    CU_ASSERT_TRUE(set("b", "prefix", "ekm"));
    CU_ASSERT_FALSE(hf_ekm_config_check(&cfg, err, sizeof(err))); /* the same prefix as a */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "same prefix"));

    minimal();
    CU_ASSERT_TRUE(set("a", "key.k2.reasons", "all"));
    CU_ASSERT_FALSE(hf_ekm_config_check(&cfg, err, sizeof(err))); /* k2 has no allowlist */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "k2"));

    hf_ekm_config_free(&cfg);
    CU_ASSERT_TRUE(set("a", "prefix", ""));
    CU_ASSERT_TRUE(set("a", "key.k.allowed_emails", "x@y"));
    CU_ASSERT_FALSE(hf_ekm_config_check(&cfg, err, sizeof(err))); /* no audience */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "audience"));
}

/* The longest prefix at a segment boundary wins; the keyPath is what follows its '/'. */
static void test_routing_by_prefix(void)
{
    static const char path[] = "/ekm/inner/v0/k";
    const char *kp = NULL;
    size_t kplen = 0;
    const struct hf_ekm_endpoint *ep;

    minimal();
    CU_ASSERT_TRUE(set("inner", "prefix", "/ekm/inner"));
    CU_ASSERT_TRUE(set("inner", "audiences", "https://x"));
    CU_ASSERT_TRUE(set("inner", "key.v0/k.allowed_emails", "x@y"));
    CU_ASSERT_TRUE(set("root", "prefix", ""));
    CU_ASSERT_TRUE(set("root", "audiences", "https://x"));
    CU_ASSERT_TRUE(set("root", "key.v0/k.allowed_emails", "x@y"));
    CU_ASSERT_TRUE_FATAL(hf_ekm_config_check(&cfg, err, sizeof(err)));
    ep = hf_ekm_config_route(&cfg, path, strlen(path), &kp, &kplen);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ep);
    CU_ASSERT_STRING_EQUAL(ep->name, "inner");
    CU_ASSERT(kplen == 4 && strncmp(kp, "v0/k", 4) == 0);
    ep = hf_ekm_config_route(&cfg, "/ekm/v0/k", 9, &kp, &kplen);
    CU_ASSERT_STRING_EQUAL(ep->name, "a");
    CU_ASSERT(kplen == 4 && strncmp(kp, "v0/k", 4) == 0);
    ep = hf_ekm_config_route(&cfg, "/ekmx/v0/k", 10, &kp, &kplen);
    CU_ASSERT_STRING_EQUAL(ep->name, "root");
    CU_ASSERT(kplen == 9 && strncmp(kp, "ekmx/v0/k", 9) == 0);
    /* A prefix with nothing after it names no key. */
    ep = hf_ekm_config_route(&cfg, "/ekm/inner", 10, &kp, &kplen);
    CU_ASSERT_STRING_EQUAL(ep->name, "a");
    hf_ekm_config_free(&cfg);
    minimal();
    CU_ASSERT_PTR_NULL(hf_ekm_config_route(&cfg, "/ekm", 4, &kp, &kplen));
    CU_ASSERT_PTR_NULL(hf_ekm_config_route(&cfg, "/ekm/", 5, &kp, &kplen));
    CU_ASSERT_PTR_NULL(hf_ekm_config_route(&cfg, "/other/k", 8, &kp, &kplen));
}

/* As the STET client builds it: scheme://host, no port, no path, no user. */
static void test_audience_from_a_uri(void)
{
    char out[128];

    CU_ASSERT_TRUE(hf_ekm_uri_audience("https://ekm.example.com:443/v0/k", out, sizeof(out)));
    CU_ASSERT_STRING_EQUAL(out, "https://ekm.example.com");
    CU_ASSERT_TRUE(hf_ekm_uri_audience("https://u@h.test?x", out, sizeof(out)));
    CU_ASSERT_STRING_EQUAL(out, "https://h.test");
    CU_ASSERT_TRUE(hf_ekm_uri_audience("https://[::1]:8443/p", out, sizeof(out)));
    CU_ASSERT_STRING_EQUAL(out, "https://[::1]");
    CU_ASSERT_FALSE(hf_ekm_uri_audience("ekm.example.com/p", out, sizeof(out)));
    CU_ASSERT_FALSE(hf_ekm_uri_audience("https:///p", out, sizeof(out)));
    CU_ASSERT_FALSE(hf_ekm_uri_audience("https://h.test", out, 8));
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"defaults come from the key uri and google",
         test_defaults_come_from_the_key_uri_and_google},
        {"configured values win", test_configured_values_win},
        {"key options", test_key_options},
        {"bad values are refused", test_bad_values_are_refused},
        {"a whole config needs its parts", test_a_whole_config_needs_its_parts},
        {"routing by prefix", test_routing_by_prefix},
        {"audience from a uri", test_audience_from_a_uri},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"ekm-config", NULL, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
