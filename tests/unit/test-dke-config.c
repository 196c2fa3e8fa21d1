/* The ms-dke plugin's configuration (gateway/plugins/ms-dke/config.[ch]): defaults (Entra's
 * JWKS and authority, 300 s skew, a day's cache.exp, the audience from base_url), every option,
 * the key options and their one mode, refusals, the served paths and the URL origin. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/ms-dke/config.h"

#include <string.h>

static struct hf_dke_config cfg;
static char err[256];

static bool set(const char *name, const char *value)
{
    err[0] = '\0';
    return hf_dke_config_set(&cfg, "", name, value, err, sizeof(err));
}

static int setup(void)
{
    hf_dke_config_free(&cfg);
    return hf_dke_config_init(&cfg) ? 0 : -1;
}

static void test_defaults(void)
{
    CU_ASSERT_EQUAL_FATAL(setup(), 0);
    CU_ASSERT_TRUE(set("base_url", "https://dke.contoso.com:8443/dke"));
    CU_ASSERT_TRUE(set("issuers", "https://sts.windows.net/tenant/"));
    CU_ASSERT_TRUE(hf_dke_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_STRING_EQUAL(cfg.audience, "https://dke.contoso.com:8443");
    CU_ASSERT_STRING_EQUAL(cfg.trust.jwks, HF_DKE_DEFAULT_JWKS);
    CU_ASSERT_STRING_EQUAL(cfg.authority, "https://login.windows.net/common/oauth2/authorize");
    CU_ASSERT_STRING_EQUAL(cfg.prefix, "");
    CU_ASSERT_EQUAL(cfg.skew_s, 300);
    CU_ASSERT_EQUAL(cfg.cache_exp_s, 86400);
    CU_ASSERT_PTR_NULL(cfg.required_scope);
    CU_ASSERT_EQUAL(cfg.nappids, 0);
}

static void test_options(void)
{
    const struct hf_dke_key *k;

    CU_ASSERT_EQUAL_FATAL(setup(), 0);
    CU_ASSERT_TRUE(set("prefix", "/dke/v1/"));
    CU_ASSERT_STRING_EQUAL(cfg.prefix, "/dke/v1");
    CU_ASSERT_TRUE(set("base_url", "https://dke.contoso.com/dke/v1"));
    CU_ASSERT_TRUE(set("audience", "https://aud.contoso.com"));
    CU_ASSERT_TRUE(set("issuers", "https://sts.windows.net/a/, https://sts.windows.net/b/"));
    CU_ASSERT_TRUE(set("jwks", "/etc/jwks.json"));
    CU_ASSERT_TRUE(set("jwks_ca", "/etc/ca.pem"));
    CU_ASSERT_TRUE(set("jwks_allow", "127.0.0.0/8"));
    CU_ASSERT_TRUE(set("authority", "https://login.microsoftonline.com/t/oauth2/authorize"));
    CU_ASSERT_TRUE(set("clock_skew", "60s"));
    CU_ASSERT_TRUE(set("required_scope", "user_impersonation"));
    CU_ASSERT_TRUE(set("allowed_appids", "d3590ed6-52b3-4102-aeff-aad2292ab01c"));
    CU_ASSERT_TRUE(set("cache_exp", "2h"));
    CU_ASSERT_TRUE(set("rate_limit", "50"));
    CU_ASSERT_TRUE(set("key.contoso.key.allowed_emails", "Alice@Contoso.com, bob@contoso.com"));
    CU_ASSERT_TRUE(set("key.contoso.key.cache_exp", "10m"));
    CU_ASSERT_TRUE(set("key.grp.allowed_groups", "0b2c7a1e-8d3f-4c5b-9a6e-1f2d3c4b5a69"));
    CU_ASSERT_TRUE(hf_dke_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_STRING_EQUAL(cfg.audience, "https://aud.contoso.com");
    CU_ASSERT_EQUAL(cfg.trust.nissuers, 2);
    CU_ASSERT_EQUAL(cfg.skew_s, 60);
    CU_ASSERT_EQUAL(cfg.cache_exp_s, 7200);
    CU_ASSERT_EQUAL(cfg.rate_limit, 50);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k = hf_dke_config_key(&cfg, "contoso.key"));
    CU_ASSERT_EQUAL(k->mode, HF_DKE_AUTHZ_EMAIL);
    CU_ASSERT_EQUAL(k->nallowed, 2);
    CU_ASSERT_STRING_EQUAL(k->allowed[0], "alice@contoso.com");
    CU_ASSERT_EQUAL(hf_dke_key_cache_exp_s(&cfg, k), 600);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k = hf_dke_config_key(&cfg, "grp"));
    CU_ASSERT_EQUAL(k->mode, HF_DKE_AUTHZ_GROUP);
    CU_ASSERT_EQUAL(hf_dke_key_cache_exp_s(&cfg, k), 7200);
    CU_ASSERT_PTR_NULL(hf_dke_config_key(&cfg, "Contoso.key"));
}

static void test_bad_values_are_refused(void)
{
    CU_ASSERT_EQUAL_FATAL(setup(), 0);
    CU_ASSERT_FALSE(hf_dke_config_set(&cfg, "two", "prefix", "/x", err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "one key service"));
    CU_ASSERT_FALSE(set("colour", "blue"));
    CU_ASSERT_FALSE(set("prefix", "dke"));
    CU_ASSERT_FALSE(set("prefix", "/a//b"));
    CU_ASSERT_FALSE(set("prefix", "/a b"));
    CU_ASSERT_FALSE(set("prefix", "/.."));
    CU_ASSERT_FALSE(set("base_url", "http://dke.contoso.com"));
    CU_ASSERT_FALSE(set("base_url", "https://user@dke.contoso.com"));
    CU_ASSERT_FALSE(set("audience", "dke.contoso.com"));
    CU_ASSERT_FALSE(set("authority", "https://"));
    CU_ASSERT_FALSE(set("clock_skew", "601s"));
    CU_ASSERT_FALSE(set("clock_skew", "0"));
    CU_ASSERT_FALSE(set("cache_exp", "31d"));
    CU_ASSERT_FALSE(set("rate_limit", "-1"));
    CU_ASSERT_FALSE(set("key..allowed_emails", "a@b"));
    CU_ASSERT_FALSE(set("key.a/b.allowed_emails", "a@b"));
    CU_ASSERT_FALSE(set("key.k", "a@b"));
    CU_ASSERT_FALSE(set("key.k.colour", "blue"));
    CU_ASSERT_FALSE(set("key.k.allowed_emails", "not-an-address"));
    CU_ASSERT_TRUE(set("key.m.allowed_emails", "a@b"));
    CU_ASSERT_FALSE(set("key.m.allowed_groups", "g"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "not both"));
}

static void test_a_whole_config_needs_its_parts(void)
{
    CU_ASSERT_EQUAL_FATAL(setup(), 0);
    CU_ASSERT_FALSE(hf_dke_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "base_url"));
    CU_ASSERT_TRUE(set("base_url", "https://dke.contoso.com"));
    CU_ASSERT_FALSE(hf_dke_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "issuers"));
    CU_ASSERT_TRUE(set("issuers", "https://sts.windows.net/t/"));
    CU_ASSERT_TRUE(set("key.k.cache_exp", "1h"));
    CU_ASSERT_FALSE(hf_dke_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "key k has no"));
    CU_ASSERT_TRUE(set("key.k.allowed_groups", "g1"));
    CU_ASSERT_TRUE(hf_dke_config_check(&cfg, err, sizeof(err)));
}

static void test_served_paths_and_origins(void)
{
    char o[64];

    CU_ASSERT_EQUAL_FATAL(setup(), 0);
    CU_ASSERT_TRUE(hf_dke_config_is_served(&cfg, "/anything"));
    CU_ASSERT_TRUE(set("prefix", "/dke"));
    CU_ASSERT_TRUE(hf_dke_config_is_served(&cfg, "/dke"));
    CU_ASSERT_TRUE(hf_dke_config_is_served(&cfg, "/dke/k"));
    CU_ASSERT_FALSE(hf_dke_config_is_served(&cfg, "/dkex/k"));
    CU_ASSERT_FALSE(hf_dke_config_is_served(&cfg, "/other"));
    CU_ASSERT_TRUE(hf_dke_url_origin("https://h.example:8443/a/b?c", o, sizeof(o)));
    CU_ASSERT_STRING_EQUAL(o, "https://h.example:8443");
    CU_ASSERT_TRUE(hf_dke_url_origin("https://h", o, sizeof(o)));
    CU_ASSERT_STRING_EQUAL(o, "https://h");
    CU_ASSERT_FALSE(hf_dke_url_origin("http://h", o, sizeof(o)));
    CU_ASSERT_FALSE(hf_dke_url_origin("https:///x", o, sizeof(o)));
    CU_ASSERT_FALSE(hf_dke_url_origin("https://a@h", o, sizeof(o)));
    CU_ASSERT_FALSE(hf_dke_url_origin("https://a-very-long-host.example", o, 12));
}

static int suite_clean(void)
{
    hf_dke_config_free(&cfg);
    return 0;
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"defaults: Entra, 300 s skew, a day, the audience from base_url", test_defaults},
        {"every option and key option", test_options},
        {"bad values are refused", test_bad_values_are_refused},
        {"a whole config needs its parts", test_a_whole_config_needs_its_parts},
        {"served paths and URL origins", test_served_paths_and_origins},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"dke-config", NULL, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
