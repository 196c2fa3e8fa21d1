/* The aws-xks configuration (gateway/plugins/aws-xks/config.[ch], authz.c): prefixes, credentials
 * at both ends of their sizes, several credential sets, credential files, allowlists, the check of
 * the whole, and secondary authorization rules (first match wins, default deny). */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/aws-xks/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AKID20 "AKIAIOSFODNN7EXAMPLE"
#define AKID30 "ABCDEFGHIJKLMNOPQRSTUVWXYZ2345"
#define SECRET43 "FYtE5EFA5FT0mCc3DrGUe2sti527BitkQ0Zr9MO9fvE"
#define SECRET64 "VU6W2byoiBrhDqNGbx703oL0syCAmhlQgwNUT123456VU6W2byoiBrhDqNGbx703"

static struct hf_xks_config cfg;
static char err[512];

static bool set(const char *instance, const char *name, const char *value)
{
    return hf_xks_config_set(&cfg, instance, name, value, err, sizeof(err));
}

static void reset(void)
{
    hf_xks_config_free(&cfg);
    hf_xks_config_init(&cfg);
    err[0] = '\0';
}

/* A store that passes the check. */
static void store_minimal(const char *name, const char *prefix)
{
    CU_ASSERT_TRUE(set(name, "prefix", prefix));
    CU_ASSERT_TRUE(set(name, "credential", AKID20 ":" SECRET43));
    CU_ASSERT_TRUE(set(name, "regions", "us-east-1"));
    CU_ASSERT_TRUE(set(name, "keys", "k1"));
    CU_ASSERT_TRUE(set(name, "health_key", "health"));
}

static int suite_clean(void)
{
    hf_xks_config_free(&cfg);
    return 0;
}

static void test_prefix_sizes_and_alphabet(void)
{
    char out[HF_XKS_PREFIX_MAX + 1], in[200];

    CU_ASSERT_TRUE(hf_xks_prefix_normalise("", out, sizeof(out)));
    CU_ASSERT_STRING_EQUAL(out, "");
    CU_ASSERT_TRUE(hf_xks_prefix_normalise("/", out, sizeof(out)));
    CU_ASSERT_STRING_EQUAL(out, "");
    /* Counted with the leading '/': 9..117. */
    CU_ASSERT_TRUE(hf_xks_prefix_normalise("/abcdefgh", out, sizeof(out)));
    CU_ASSERT_STRING_EQUAL(out, "abcdefgh");
    CU_ASSERT_TRUE(hf_xks_prefix_normalise("abcdefgh", out, sizeof(out)));
    CU_ASSERT_STRING_EQUAL(out, "abcdefgh");
    CU_ASSERT_FALSE(hf_xks_prefix_normalise("/abcdefg", out, sizeof(out)));
    in[0] = '/';
    memset(in + 1, 'p', 116);
    in[117] = '\0';
    CU_ASSERT_TRUE(hf_xks_prefix_normalise(in, out, sizeof(out)));
    in[117] = 'p';
    in[118] = '\0';
    CU_ASSERT_FALSE(hf_xks_prefix_normalise(in, out, sizeof(out)));
    CU_ASSERT_TRUE(hf_xks_prefix_normalise("/keystores/A-b_9", out, sizeof(out)));
    CU_ASSERT_STRING_EQUAL(out, "keystores/A-b_9");
    CU_ASSERT_FALSE(hf_xks_prefix_normalise("/keystores/a.b", out, sizeof(out)));
    CU_ASSERT_FALSE(hf_xks_prefix_normalise("/keystores//ab", out, sizeof(out)));
    CU_ASSERT_FALSE(hf_xks_prefix_normalise("/keystores/ab/", out, sizeof(out)));
    CU_ASSERT_FALSE(hf_xks_prefix_normalise("/keystores/%41b", out, sizeof(out)));
}

static void test_credentials_at_both_ends_of_their_sizes(void)
{
    reset();
    CU_ASSERT_TRUE(set("a", "credential", AKID20 ":" SECRET43));
    CU_ASSERT_TRUE(set("a", "credential", AKID30 ":" SECRET64));
    CU_ASSERT_EQUAL(cfg.stores[0].ncreds, 2);
    CU_ASSERT_STRING_EQUAL(hf_xks_store_secret(&cfg.stores[0], AKID30), SECRET64);
    /* AKID: 19 and 31 characters, lower case, a digit outside 2-7. */
    CU_ASSERT_FALSE(set("a", "credential", "AKIAIOSFODNN7EXAMPL:" SECRET43));
    CU_ASSERT(strstr(err, "access key id") != NULL);
    CU_ASSERT_FALSE(set("a", "credential", AKID30 "A:" SECRET43));
    CU_ASSERT_FALSE(set("a", "credential", "akiaiosfodnn7example:" SECRET43));
    CU_ASSERT_FALSE(set("a", "credential", "AKIAIOSFODNN1EXAMPLE:" SECRET43));
    /* Secret: 42 and 65 characters, a character outside the alphabet. */
    CU_ASSERT_FALSE(set("a", "credential",
                        AKID20 ":"
                               "FYtE5EFA5FT0mCc3DrGUe2sti527BitkQ0Zr9MO9fv"));
    CU_ASSERT(strstr(err, "secret") != NULL);
    CU_ASSERT_PTR_NULL(strstr(err, "FYtE5")); /* never echoed */
    CU_ASSERT_FALSE(set("a", "credential", AKID20 ":" SECRET64 "x"));
    CU_ASSERT_FALSE(set("a", "credential",
                        AKID20 ":"
                               "FYtE5EFA5FT0mCc3DrGUe2sti527BitkQ0Zr9MO9fv-"));
    CU_ASSERT_FALSE(set("a", "credential", AKID20 SECRET43));
    /* One access key id names one secret. */
    CU_ASSERT_TRUE(set("a", "credential", AKID20 ":" SECRET43));
    CU_ASSERT_FALSE(set("a", "credential", AKID20 ":" SECRET64));
    CU_ASSERT(strstr(err, "different secrets") != NULL);
    CU_ASSERT_EQUAL(cfg.stores[0].ncreds, 2);
    CU_ASSERT_PTR_NULL(hf_xks_store_secret(&cfg.stores[0], "AAAAAAAAAAAAAAAAAAAA"));
}

/* pkcs11/common/secret-file.h's rule: world-readable, group- or world-writable refused. */
static void test_credential_file_is_read_and_must_be_private(void)
{
    char path[] = "/tmp/hf-test-xks-cred-XXXXXX";
    int fd = mkstemp(path);
    FILE *f;

    CU_ASSERT_FATAL(fd >= 0);
    f = fdopen(fd, "w");
    CU_ASSERT_FATAL(f != NULL);
    fprintf(f, "# old and new during a rotation\n\n  " AKID20 ":" SECRET43 "  \n" AKID30
               ":" SECRET64 "\n");
    fclose(f);
    chmod(path, 0600);
    reset();
    CU_ASSERT_TRUE(set("a", "credential_file", path));
    CU_ASSERT_EQUAL(cfg.stores[0].ncreds, 2);
    CU_ASSERT_STRING_EQUAL(hf_xks_store_secret(&cfg.stores[0], AKID20), SECRET43);
    chmod(path, 0644);
    reset();
    CU_ASSERT_FALSE(set("a", "credential_file", path));
    CU_ASSERT(strstr(err, "mode 0644: world-readable; chmod 600") != NULL);
    CU_ASSERT(strstr(err, path) != NULL);
    /* Whoever may write it may add a credential of their own. */
    chmod(path, 0660);
    reset();
    CU_ASSERT_FALSE(set("a", "credential_file", path));
    CU_ASSERT(strstr(err, "mode 0660: group-writable") != NULL);
    /* Group-readable (a secret mount's group) loads, with a warning. */
    chmod(path, 0640);
    reset();
    CU_ASSERT_TRUE(set("a", "credential_file", path));
    chmod(path, 0600);
    f = fopen(path, "a");
    CU_ASSERT_FATAL(f != NULL);
    fprintf(f, "NOTANAKID:" SECRET43 "\n");
    fclose(f);
    reset();
    CU_ASSERT_FALSE(set("a", "credential_file", path));
    CU_ASSERT(strstr(err, ":5)") != NULL); /* names the line */
    unlink(path);
    reset();
    CU_ASSERT_FALSE(set("a", "credential_file", path));
}

static void test_the_whole_is_checked(void)
{
    reset();
    CU_ASSERT_FALSE(hf_xks_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT(strstr(err, "no key store") != NULL);
    store_minimal("a", "");
    CU_ASSERT_TRUE(hf_xks_config_check(&cfg, err, sizeof(err)));
    store_minimal("b", "/keystores/b");
    CU_ASSERT_TRUE(hf_xks_config_check(&cfg, err, sizeof(err)));
    store_minimal("c", "keystores/b");
    CU_ASSERT_FALSE(hf_xks_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT(strstr(err, "same prefix") != NULL);

    reset();
    CU_ASSERT_TRUE(set("a", "credential", AKID20 ":" SECRET43));
    CU_ASSERT_FALSE(hf_xks_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT(strstr(err, "prefix is required") != NULL);
    CU_ASSERT_TRUE(set("a", "prefix", ""));
    CU_ASSERT_FALSE(hf_xks_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT(strstr(err, "regions") != NULL);
    CU_ASSERT_TRUE(set("a", "regions", "us-east-1, eu-west-1"));
    CU_ASSERT_EQUAL(cfg.stores[0].nregions, 2);
    CU_ASSERT_FALSE(hf_xks_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT(strstr(err, "keys") != NULL);
    CU_ASSERT_TRUE(set("a", "keys", "*"));
    CU_ASSERT_FALSE(hf_xks_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT(strstr(err, "health_key") != NULL);
    /* The [aws-xks] health key is every store's default. */
    CU_ASSERT_TRUE(set("", "health_key", "hk"));
    CU_ASSERT_TRUE(hf_xks_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_STRING_EQUAL(cfg.stores[0].health_key, "hk");
    CU_ASSERT_TRUE(set("a", "allow", "r1 kmsOperation=Encrypt"));
    CU_ASSERT_FALSE(hf_xks_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT(strstr(err, "authorization = on") != NULL);
    CU_ASSERT_TRUE(set("a", "authorization", "on"));
    CU_ASSERT_TRUE(hf_xks_config_check(&cfg, err, sizeof(err)));
}

static void test_bad_values_are_refused(void)
{
    reset();
    CU_ASSERT_FALSE(set("a", "frobnicate", "1"));
    CU_ASSERT(strstr(err, "unknown option") != NULL);
    CU_ASSERT_FALSE(set("", "frobnicate", "1"));
    CU_ASSERT_FALSE(set("", "health_cache_seconds", "61"));
    CU_ASSERT_TRUE(set("", "health_cache_seconds", "60"));
    CU_ASSERT_FALSE(set("", "fleet_size", "0"));
    CU_ASSERT_FALSE(set("a", "max_plaintext", "4299"));
    CU_ASSERT_TRUE(set("a", "max_plaintext", "65536"));
    CU_ASSERT_FALSE(set("a", "max_aad", "8191"));
    CU_ASSERT_FALSE(set("a", "max_aad", "65536")); /* the AAD length field is 16 bits */
    CU_ASSERT_TRUE(set("a", "max_aad", "65535"));
    CU_ASSERT_FALSE(set("a", "rate_limit", "-1"));
    CU_ASSERT_FALSE(set("a", "rate_limit", "10x"));
    CU_ASSERT_FALSE(set("a", "regions", "US_EAST"));
    CU_ASSERT_FALSE(set("a", "keys", "bad/key"));
    CU_ASSERT_FALSE(set("a", "prefix", "/short"));
    CU_ASSERT_FALSE(set("a", "authorization", "maybe"));
    CU_ASSERT_FALSE(set("bad name", "prefix", ""));
    CU_ASSERT_FALSE(set("a", "allow", "r1 color=red"));
    CU_ASSERT(strstr(err, "unknown field") != NULL);
    CU_ASSERT_FALSE(set("a", "allow", "r1 kmsOperation"));
    CU_ASSERT_FALSE(set("a", "allow", "kmsOperation=x"));
    CU_ASSERT_FALSE(set("a", "allow", "r1 keyId=a keyId=b"));
    CU_ASSERT_TRUE(set("a", "allow", "r1"));
    CU_ASSERT_FALSE(set("a", "deny", "r1 keyId=x"));
    CU_ASSERT(strstr(err, "twice") != NULL);
}

static void test_store_lookup_and_allowlist(void)
{
    const struct hf_xks_store *s;

    reset();
    store_minimal("root", "");
    store_minimal("b", "/keystores/b");
    CU_ASSERT_TRUE(set("b", "keys", "k2, k3"));
    CU_ASSERT_TRUE(hf_xks_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_PTR_EQUAL(hf_xks_config_store(&cfg, ""), &cfg.stores[0]);
    CU_ASSERT_PTR_EQUAL(hf_xks_config_store(&cfg, "/"), &cfg.stores[0]);
    s = hf_xks_config_store(&cfg, "keystores/b");
    CU_ASSERT_PTR_EQUAL(s, &cfg.stores[1]);
    CU_ASSERT_PTR_EQUAL(hf_xks_config_store(&cfg, "/keystores/b/"), s);
    CU_ASSERT_PTR_NULL(hf_xks_config_store(&cfg, "keystores"));
    CU_ASSERT_PTR_NULL(hf_xks_config_store(&cfg, "keystores/b/c"));
    CU_ASSERT_PTR_NULL(hf_xks_config_store(&cfg, "Keystores/b"));
    CU_ASSERT_TRUE(hf_xks_store_has_key(s, "k1"));
    CU_ASSERT_TRUE(hf_xks_store_has_key(s, "k3"));
    CU_ASSERT_FALSE(hf_xks_store_has_key(s, "k4"));
    CU_ASSERT_FALSE(hf_xks_store_has_key(&cfg.stores[0], "k2"));
    CU_ASSERT_TRUE(set("root", "keys", "*"));
    CU_ASSERT_TRUE(hf_xks_store_has_key(&cfg.stores[0], "anything"));
}

static void test_authorization_first_match_wins_default_deny(void)
{
    const char *v[HF_XKS_FIELD_COUNT] = {0};
    const struct hf_xks_rule *r;
    const struct hf_xks_store *s;

    reset();
    store_minimal("a", "");
    CU_ASSERT_TRUE(set("a", "authorization", "on"));
    CU_ASSERT_TRUE(set("a", "deny", "no-bob awsPrincipalArn=arn:aws:iam::*:user/bob"));
    CU_ASSERT_TRUE(set("a", "allow",
                       "ebs-only keyId=k1 kmsViaService=ebs "
                       "awsPrincipalArn=arn:aws:iam::111122223333:*"));
    CU_ASSERT_TRUE(set("a", "allow", "vpc awsSourceVpc=vpc-1* kmsOperation=[DE]*crypt"));
    CU_ASSERT_TRUE(hf_xks_config_check(&cfg, err, sizeof(err)));
    s = &cfg.stores[0];

    v[HF_XKS_FIELD_KEY_ID] = "k1";
    v[HF_XKS_FIELD_PRINCIPAL] = "arn:aws:iam::111122223333:role/app/x";
    v[HF_XKS_FIELD_VIA_SERVICE] = "ebs";
    v[HF_XKS_FIELD_OPERATION] = "Encrypt";
    r = hf_xks_authz_match(s, v);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_STRING_EQUAL(r->name, "ebs-only");
    CU_ASSERT_TRUE(r->allow);
    /* The deny before it wins for bob, whatever else matches. */
    v[HF_XKS_FIELD_PRINCIPAL] = "arn:aws:iam::111122223333:user/bob";
    r = hf_xks_authz_match(s, v);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_STRING_EQUAL(r->name, "no-bob");
    CU_ASSERT_FALSE(r->allow);
    /* An absent field matches as "": no kmsViaService, no ebs rule; no VPC, no vpc rule. */
    v[HF_XKS_FIELD_PRINCIPAL] = "arn:aws:iam::111122223333:role/app";
    v[HF_XKS_FIELD_VIA_SERVICE] = NULL;
    CU_ASSERT_PTR_NULL(hf_xks_authz_match(s, v));
    v[HF_XKS_FIELD_SOURCE_VPC] = "vpc-123";
    r = hf_xks_authz_match(s, v);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_STRING_EQUAL(r->name, "vpc");
    v[HF_XKS_FIELD_OPERATION] = "GenerateDataKey";
    CU_ASSERT_PTR_NULL(hf_xks_authz_match(s, v));
    v[HF_XKS_FIELD_OPERATION] = "Decrypt";
    CU_ASSERT_PTR_NOT_NULL(hf_xks_authz_match(s, v));
    /* Another account's principal is not the 111122223333 glob. */
    v[HF_XKS_FIELD_SOURCE_VPC] = NULL;
    v[HF_XKS_FIELD_VIA_SERVICE] = "ebs";
    v[HF_XKS_FIELD_PRINCIPAL] = "arn:aws:iam::999999999999:role/app";
    CU_ASSERT_PTR_NULL(hf_xks_authz_match(s, v));
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"prefix sizes and alphabet", test_prefix_sizes_and_alphabet},
        {"credentials at both ends of their sizes", test_credentials_at_both_ends_of_their_sizes},
        {"credential file is read and must be private",
         test_credential_file_is_read_and_must_be_private},
        {"the whole is checked", test_the_whole_is_checked},
        {"bad values are refused", test_bad_values_are_refused},
        {"store lookup and allowlist", test_store_lookup_and_allowlist},
        {"authorization: first match wins, default deny",
         test_authorization_first_match_wins_default_deny},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"xks-config", NULL, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
