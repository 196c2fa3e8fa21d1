/* The gcp-ekm configuration (gateway/plugins/gcp-ekm/config.[ch], policy-file.c): endpoints and
 * their defaults (audience from the key URI, Google's issuers and JWKS), per-key allowlists and
 * KAJ policies, in the section or from a policy_file (relative to the config file's directory),
 * what a whole config must have, routing a path to its endpoint and keyPath, and which paths the
 * plugin's catch-all routes accept. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/conf-value.h"
#include "gateway/plugins/gcp-ekm/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    CU_ASSERT_EQUAL_FATAL(ep->trust.nissuers, 2);
    CU_ASSERT_STRING_EQUAL(ep->trust.issuers[0], "https://accounts.google.com");
    CU_ASSERT_STRING_EQUAL(ep->trust.issuers[1], "accounts.google.com");
    CU_ASSERT_STRING_EQUAL(ep->trust.jwks, HF_EKM_DEFAULT_JWKS);
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
    CU_ASSERT_EQUAL(ep->trust.nissuers, 1);
    CU_ASSERT_STRING_EQUAL(ep->trust.jwks, "https://127.0.0.1:9/jwks");
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

/* The paths the catch-all routes take: under a prefix ("" takes all), nothing else. */
static void test_served_paths_are_under_a_prefix(void)
{
    minimal();
    CU_ASSERT_TRUE(set("b", "prefix", "/x/y"));
    CU_ASSERT_TRUE(hf_ekm_config_is_served(&cfg, "/ekm/v0/keys/k1:wrap"));
    CU_ASSERT_TRUE(hf_ekm_config_is_served(&cfg, "/ekm"));
    CU_ASSERT_TRUE(hf_ekm_config_is_served(&cfg, "/x/y/k:unwrap"));
    CU_ASSERT_FALSE(hf_ekm_config_is_served(&cfg, "/ekmx/k:wrap"));
    CU_ASSERT_FALSE(hf_ekm_config_is_served(&cfg, "/x/k:wrap"));
    CU_ASSERT_FALSE(hf_ekm_config_is_served(&cfg, "/cse/wrap"));
    CU_ASSERT_FALSE(hf_ekm_config_is_served(&cfg, "/"));
    CU_ASSERT_TRUE(set("c", "prefix", ""));
    CU_ASSERT_TRUE(hf_ekm_config_is_served(&cfg, "/cse/wrap"));
    CU_ASSERT_FALSE(hf_ekm_config_is_served(NULL, "/ekm/k"));
}

/* A policy file in a temp dir, named as the config gives it: relative to that dir. */
static char policy_dir[] = "/tmp/hf-test-ekmpolicy-XXXXXX";

static void policy_write(const char *name, const char *text, mode_t mode)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", policy_dir, name);
    f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
    CU_ASSERT_EQUAL(chmod(path, mode), 0);
}

static void test_policy_file_keys(void)
{
    const struct hf_ekm_key *k;

    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(policy_dir));
    policy_write("kaj.ini",
                 "; the payroll keys\n"
                 "[key:v0/keys/pay.1]\n"
                 "allowed_emails = A@x.example, b@x.example\n"
                 "reasons = CUSTOMER_INITIATED_ACCESS, 6\n"
                 "reason_absent = deny\n"
                 "cache_duration = 2m\n"
                 "[key:v0/keys/pay.2]\n"
                 "allowed_emails = c@x.example\n",
                 0644);
    hf_gw_conf_dir_set(policy_dir);
    minimal();
    CU_ASSERT_TRUE(set("a", "policy_file", "kaj.ini"));
    CU_ASSERT_TRUE_FATAL(hf_ekm_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_EQUAL(cfg.endpoints[0].nkeys, 3);
    k = hf_ekm_endpoint_key(&cfg.endpoints[0], "v0/keys/pay.1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    CU_ASSERT_TRUE(hf_ekm_key_allows_email(k, "a@X.example"));
    CU_ASSERT_EQUAL(k->kaj.allowed, (1u << 5) | (1u << 6));
    CU_ASSERT_FALSE(k->kaj.absent_allowed);
    CU_ASSERT_EQUAL(k->cache_duration_s, 120);
    k = hf_ekm_endpoint_key(&cfg.endpoints[0], "v0/keys/pay.2");
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    CU_ASSERT_TRUE(k->kaj.absent_allowed);
    /* The section's key stays the section's. */
    CU_ASSERT_PTR_NOT_NULL(hf_ekm_endpoint_key(&cfg.endpoints[0], "v0/keys/k1"));
    hf_gw_conf_dir_set(NULL);
}

static void test_policy_file_refusals(void)
{
    hf_gw_conf_dir_set(policy_dir);
    /* A key in both places, whichever comes first. */
    minimal();
    CU_ASSERT_TRUE(set("a", "policy_file", "kaj.ini"));
    CU_ASSERT_FALSE(set("a", "key.v0/keys/pay.2.reasons", "all"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "v0/keys/pay.2 is defined both"));
    policy_write("k1.ini", "[key:v0/keys/k1]\nreasons = all\n", 0644);
    minimal();
    CU_ASSERT_FALSE(set("a", "policy_file", "k1.ini"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "k1.ini:2: key v0/keys/k1 is defined both"));
    /* Bad lines are named with the file and line. */
    policy_write("bad.ini", "[key:v0/keys/z]\nallowed_emails = z@x\ncolour = red\n", 0644);
    minimal();
    CU_ASSERT_FALSE(set("a", "policy_file", "bad.ini"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "bad.ini:3: unknown key option 'colour'"));
    policy_write("sect.ini", "[keys]\nallowed_emails = z@x\n", 0644);
    minimal();
    CU_ASSERT_FALSE(set("a", "policy_file", "sect.ini"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "sect.ini:2: want sections [key:<keyPath>]"));
    /* One writable by others could grant them keys. */
    policy_write("open.ini", "[key:v0/keys/z]\nallowed_emails = z@x\n", 0666);
    minimal();
    CU_ASSERT_FALSE(set("a", "policy_file", "open.ini"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "world-writable"));
    minimal();
    CU_ASSERT_FALSE(set("a", "policy_file", "missing.ini"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "missing.ini"));
    /* One per endpoint. */
    minimal();
    CU_ASSERT_TRUE(set("a", "policy_file", "kaj.ini"));
    CU_ASSERT_FALSE(set("a", "policy_file", "kaj.ini"));
    hf_gw_conf_dir_set(NULL);
    hf_ekm_config_free(&cfg);
    for (const char *const *n =
             (const char *const[]){"kaj.ini", "k1.ini", "bad.ini", "sect.ini", "open.ini", NULL};
         *n; n++) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", policy_dir, *n);
        unlink(path);
    }
    rmdir(policy_dir);
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
        {"served paths are under a prefix", test_served_paths_are_under_a_prefix},
        {"a policy_file's [key:PATH] sections, relative to the config file", test_policy_file_keys},
        {"a policy_file: a key in both places, bad lines with file:line, writable by others",
         test_policy_file_refusals},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"ekm-config", NULL, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
