/* The gws-cse configuration (gateway/plugins/gws-cse/config.[ch]): the agreed keys, their
 * defaults (KEK link, Google's authz issuers and JWKS template, the CSE origin, skew), the
 * checks on a whole config (prefix and https kacls_url required, distinct prefixes, complete
 * authn issuers), the values refused line by line, and routing a path to its prefix. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugin.h"
#include "gateway/plugins/gws-cse/config.h"

#include <string.h>

static struct hf_cse_config cfg;
static char err[256];

/* Each row: instance, name, value. */
struct line {
    const char *in, *name, *value;
};

static bool apply(const struct line *lines, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        err[0] = '\0';
        if (!hf_cse_config_set(&cfg, lines[i].in, lines[i].name, lines[i].value, err, sizeof(err)))
            return false;
    }
    return true;
}

static const struct line base[] = {
    {"main", "prefix", "/cse/"},
    {"main", "kacls_url", "https://kacls.example.com/cse"},
    {"main", "authn.idp.issuer", "https://idp.example.com"},
    {"main", "authn.idp.jwks", "https://idp.example.com/jwks"},
    {"main", "authn.idp.audiences", "client-1, client-2"},
};

static void fresh(void)
{
    hf_cse_config_free(&cfg);
    CU_ASSERT_TRUE_FATAL(apply(base, sizeof(base) / sizeof(base[0])));
}

static int suite_clean(void)
{
    hf_cse_config_free(&cfg);
    return 0;
}

static void test_defaults(void)
{
    const struct hf_cse_prefix *px;
    char jwks[256];

    fresh();
    CU_ASSERT_TRUE_FATAL(hf_cse_config_check(&cfg, err, sizeof(err)));
    px = &cfg.prefixes[0];
    CU_ASSERT_STRING_EQUAL(px->prefix, "/cse");
    CU_ASSERT_STRING_EQUAL(px->kek, "main");
    CU_ASSERT_PTR_NULL(px->signing_key);
    CU_ASSERT_EQUAL_FATAL(px->nauthz_issuers, 3);
    CU_ASSERT_STRING_EQUAL(px->authz_issuers[0],
                           "gsuitecse-tokenissuer-drive@system.gserviceaccount.com");
    CU_ASSERT_STRING_EQUAL(px->authz_issuers[2],
                           "gsuitecse-tokenissuer-calendar@system.gserviceaccount.com");
    CU_ASSERT_TRUE_FATAL(hf_cse_authz_jwks(px, px->authz_issuers[1], jwks, sizeof(jwks)));
    CU_ASSERT_STRING_EQUAL(jwks, "https://www.googleapis.com/service_accounts/v1/jwk/"
                                 "gsuitecse-tokenissuer-meet@system.gserviceaccount.com");
    CU_ASSERT_EQUAL_FATAL(px->norigins, 1);
    CU_ASSERT_STRING_EQUAL(px->origins[0], "https://client-side-encryption.google.com");
    CU_ASSERT_EQUAL(px->skew_s, 60);
    CU_ASSERT_FALSE(px->guests);
    CU_ASSERT_FALSE(px->gmail);
    CU_ASSERT_EQUAL_FATAL(px->nauthn, 1);
    CU_ASSERT_EQUAL(px->authn[0].algs, HF_JWT_RS256 | HF_JWT_ES256);
    CU_ASSERT_EQUAL(px->authn[0].naudiences, 2);
}

static void test_gmail_adds_its_issuer(void)
{
    static const struct line l[] = {{"main", "gmail", "on"}};

    fresh();
    CU_ASSERT_TRUE_FATAL(apply(l, 1));
    CU_ASSERT_TRUE_FATAL(hf_cse_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_TRUE(cfg.prefixes[0].gmail);
    CU_ASSERT_EQUAL_FATAL(cfg.prefixes[0].nauthz_issuers, 4);
    CU_ASSERT_STRING_EQUAL(cfg.prefixes[0].authz_issuers[3],
                           "gsuitecse-tokenissuer-gmail@system.gserviceaccount.com");
}

static void test_every_agreed_key(void)
{
    static const struct line l[] = {
        {"main", "kek", "kek-link"},
        {"main", "signing_key", "sig-link"},
        {"main", "authn.idp.algs", "ES256"},
        {"main", "authn.g.issuer", "https://accounts.google.com"},
        {"main", "authn.g.jwks", "https://www.googleapis.com/oauth2/v3/certs"},
        {"main", "authn.g.audiences", "g-client"},
        {"main", "authz_issuers", "a@x.test b@x.test"},
        {"main", "authz_jwks", "https://127.0.0.1:8443/jwk/%s"},
        {"main", "jwks_ca", "/etc/ca.pem"},
        {"main", "jwks_allow", "127.0.0.0/8"},
        {"main", "admins", "Admin@Example.com, root@example.com"},
        {"main", "guests", "allow"},
        {"main", "owner_domain", "example.com"},
        {"main", "perimeter.p1", "hd=example.com, email=*@example.com"},
        {"main", "peers", "https://old.example.com/cse/, https://older.example.com"},
        {"main", "peer_ca", "/etc/peer-ca.pem"},
        {"main", "peer_allow", "10.0.0.0/8"},
        {"main", "origins", "https://a.test https://b.test"},
        {"main", "name", "Holdfast KACLS"},
        {"main", "rate_limit", "100"},
        {"main", "deadline", "150ms"},
        {"main", "clock_skew", "30s"},
    };
    const struct hf_cse_prefix *px;
    const struct hf_cse_perimeter *pm;
    char jwks[128];

    fresh();
    CU_ASSERT_TRUE_FATAL(apply(l, sizeof(l) / sizeof(l[0])));
    CU_ASSERT_TRUE_FATAL(hf_cse_config_check(&cfg, err, sizeof(err)));
    px = &cfg.prefixes[0];
    CU_ASSERT_STRING_EQUAL(px->kek, "kek-link");
    CU_ASSERT_STRING_EQUAL(px->signing_key, "sig-link");
    CU_ASSERT_EQUAL(px->authn[0].algs, HF_JWT_ES256);
    CU_ASSERT_EQUAL(px->nauthn, 2);
    CU_ASSERT_EQUAL(px->nauthz_issuers, 2);
    CU_ASSERT_TRUE(hf_cse_authz_jwks(px, "b@x.test", jwks, sizeof(jwks)));
    CU_ASSERT_STRING_EQUAL(jwks, "https://127.0.0.1:8443/jwk/b@x.test");
    CU_ASSERT_FALSE(hf_cse_authz_jwks(px, "b@x.test", jwks, 20));
    CU_ASSERT_STRING_EQUAL(px->jwks_ca, "/etc/ca.pem");
    CU_ASSERT_EQUAL(px->njwks_allow, 1);
    CU_ASSERT_TRUE(hf_cse_prefix_is_admin(px, "ADMIN@example.COM"));
    CU_ASSERT_FALSE(hf_cse_prefix_is_admin(px, "admin@example.org"));
    CU_ASSERT_TRUE(px->guests);
    CU_ASSERT_STRING_EQUAL(px->owner_domain, "example.com");
    CU_ASSERT_PTR_NULL(hf_cse_prefix_perimeter(px, "p2"));
    pm = hf_cse_prefix_perimeter(px, "p1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(pm);
    CU_ASSERT_EQUAL_FATAL(pm->nrules, 2);
    CU_ASSERT_STRING_EQUAL(pm->rules[1].claim, "email");
    CU_ASSERT_STRING_EQUAL(pm->rules[1].glob, "*@example.com");
    CU_ASSERT_TRUE(hf_cse_prefix_has_peer(px, "https://old.example.com/cse"));
    CU_ASSERT_TRUE(hf_cse_prefix_has_peer(px, "https://older.example.com/"));
    CU_ASSERT_FALSE(hf_cse_prefix_has_peer(px, "https://old.example.com"));
    CU_ASSERT_STRING_EQUAL(px->peer_ca, "/etc/peer-ca.pem");
    CU_ASSERT_EQUAL(px->npeer_allow, 1);
    CU_ASSERT_TRUE(hf_cse_prefix_allows_origin(px, "https://b.test"));
    CU_ASSERT_FALSE(hf_cse_prefix_allows_origin(px, "https://client-side-encryption.google.com"));
    CU_ASSERT_STRING_EQUAL(px->display_name, "Holdfast KACLS");
    CU_ASSERT_EQUAL(px->rate_limit, 100);
    CU_ASSERT_EQUAL(px->deadline_ms, 150);
    CU_ASSERT_EQUAL(px->skew_s, 30);
}

/* One bad line each: refused with a message, whatever came before. */
static void test_bad_values_are_refused(void)
{
    static const struct line bad[] = {
        {"", "prefix", "/cse"},
        {"main", "nonsense", "1"},
        {"main", "prefix", "cse"},
        {"main", "prefix", "/a//b"},
        {"main", "prefix", "/a/../b"},
        {"main", "prefix", "/a b"},
        {"main", "kacls_url", "http://kacls.example.com/cse"},
        {"main", "kacls_url", "https://"},
        {"main", "peers", "http://old.example.com"},
        {"main", "admins", "not-an-email"},
        {"main", "guests", "maybe"},
        {"main", "gmail", "perhaps"},
        {"main", "authn.idp.algs", "HS256"},
        {"main", "authn.idp.color", "red"},
        {"main", "authn..issuer", "https://x"},
        {"main", "authn.a b.issuer", "https://x"},
        {"main", "perimeter.p1", "hd"},
        {"main", "perimeter.p1", "=x"},
        {"main", "perimeter.p1", "hd=[abc"},
        {"main", "perimeter.p1", "hd=x\\"},
        {"main", "perimeter.", "hd=x"},
        {"main", "authz_jwks", "https://x/%s/%s"},
        {"main", "authz_jwks", "https://x/%d"},
        {"main", "clock_skew", "301s"},
        {"main", "rate_limit", "-1"},
        {"main", "deadline", "2m"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fresh();
        CU_ASSERT_FALSE(apply(&bad[i], 1));
        CU_ASSERT(err[0] != '\0');
    }
}

static void check_fails_with(const struct line *extra, size_t n, const char *needle)
{
    fresh();
    CU_ASSERT_TRUE_FATAL(apply(extra, n));
    CU_ASSERT_FALSE(hf_cse_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, needle));
}

static void test_a_whole_config_needs_its_parts(void)
{
    static const struct line no_prefix[] = {{"b", "kacls_url", "https://b.test"}};
    static const struct line no_url[] = {{"b", "prefix", ""}};
    static const struct line same[] = {
        {"b", "prefix", "/cse"},
        {"b", "kacls_url", "https://b.test"},
        {"b", "authn.i.issuer", "https://i"},
        {"b", "authn.i.jwks", "/j"},
        {"b", "authn.i.audiences", "c"},
    };
    static const struct line no_aud[] = {{"main", "authn.x.issuer", "https://x"},
                                         {"main", "authn.x.jwks", "/x"}};
    static const struct line no_jwks[] = {{"main", "authn.x.issuer", "https://x"}};
    static const struct line no_issuer[] = {{"main", "authn.x.jwks", "/x"}};

    check_fails_with(no_prefix, 1, "prefix is required");
    check_fails_with(no_url, 1, "kacls_url is required");
    check_fails_with(same, 5, "the same prefix");
    check_fails_with(no_aud, 2, "has no audiences");
    check_fails_with(no_jwks, 1, "has no jwks");
    check_fails_with(no_issuer, 1, "has no issuer");
    hf_cse_config_free(&cfg);
    CU_ASSERT_FALSE(hf_cse_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no KACLS prefix"));
    {
        static const struct line bare[] = {{"c", "prefix", "/c"}, {"c", "kacls_url", "https://c"}};
        CU_ASSERT_TRUE_FATAL(apply(bare, 2));
        CU_ASSERT_FALSE(hf_cse_config_check(&cfg, err, sizeof(err)));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "no authentication issuer"));
    }
}

/* The longest prefix a path is under, at a segment boundary; the rest is the op. */
static void test_routing_by_prefix(void)
{
    static const struct line more[] = {
        {"deep", "prefix", "/cse/eu"},
        {"deep", "kacls_url", "https://kacls.example.com/cse/eu"},
        {"deep", "authn.i.issuer", "https://i"},
        {"deep", "authn.i.jwks", "/j"},
        {"deep", "authn.i.audiences", "c"},
    };
    const char *rest = NULL;

    fresh();
    CU_ASSERT_TRUE_FATAL(apply(more, 5));
    CU_ASSERT_TRUE_FATAL(hf_cse_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_PTR_EQUAL(hf_cse_config_route(&cfg, "/cse/wrap", &rest), &cfg.prefixes[0]);
    CU_ASSERT_STRING_EQUAL(rest, "wrap");
    CU_ASSERT_PTR_EQUAL(hf_cse_config_route(&cfg, "/cse/eu/unwrap", &rest), &cfg.prefixes[1]);
    CU_ASSERT_STRING_EQUAL(rest, "unwrap");
    CU_ASSERT_PTR_EQUAL(hf_cse_config_route(&cfg, "/cse/", &rest), &cfg.prefixes[0]);
    CU_ASSERT_STRING_EQUAL(rest, "");
    CU_ASSERT_PTR_NULL(hf_cse_config_route(&cfg, "/cse", &rest));
    CU_ASSERT_PTR_NULL(hf_cse_config_route(&cfg, "/csex/wrap", &rest));
    CU_ASSERT_PTR_NULL(hf_cse_config_route(&cfg, "/ekm/wrap", &rest));
}

/* prefix = "" takes every path (its plugin must come last on a shared listener). */
static void test_an_empty_prefix_takes_every_path(void)
{
    static const struct line l[] = {{"main", "prefix", ""}};
    const char *rest = NULL;

    fresh();
    CU_ASSERT_TRUE_FATAL(apply(l, 1));
    CU_ASSERT_TRUE_FATAL(hf_cse_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_STRING_EQUAL(cfg.prefixes[0].prefix, "");
    CU_ASSERT_PTR_NOT_NULL(hf_cse_config_route(&cfg, "/status", &rest));
    CU_ASSERT_STRING_EQUAL(rest, "status");
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"defaults", test_defaults},
        {"gmail adds its issuer", test_gmail_adds_its_issuer},
        {"every agreed key", test_every_agreed_key},
        {"bad values are refused", test_bad_values_are_refused},
        {"a whole config needs its parts", test_a_whole_config_needs_its_parts},
        {"routing by prefix", test_routing_by_prefix},
        {"an empty prefix takes every path", test_an_empty_prefix_takes_every_path},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"cse-config", NULL, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
