/* The oci-ekms configuration (gateway/plugins/oci-ekms/config.[ch]): the global section's prefix
 * and random status, vaults with their token settings, what a whole config must have, vault
 * lookup by id, and the client pin. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/oci-ekms/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VAULT "f2898529-ad61-48f9-9cd8-25edb26d5fbf"
#define VAULT2 "0c4e9f20-1111-4222-8333-444455556666"

static struct hf_oci_config cfg;
static char err[256];

static bool set(const char *instance, const char *name, const char *value)
{
    err[0] = '\0';
    return hf_oci_config_set(&cfg, instance, name, value, err, sizeof(err));
}

static bool check(void)
{
    err[0] = '\0';
    return hf_oci_config_check(&cfg, err, sizeof(err));
}

/* Vault "a", every required option set. */
static void vault_a(void)
{
    hf_oci_config_free(&cfg);
    CU_ASSERT_TRUE_FATAL(set("a", "vault_id", VAULT));
    CU_ASSERT_TRUE_FATAL(set("a", "issuer", "https://idcs-1.identity.oraclecloud.com"));
    CU_ASSERT_TRUE_FATAL(set("a", "audience", "https://10.0.0.31/"));
    CU_ASSERT_TRUE_FATAL(set("a", "jwks", "/etc/holdfast/idcs.jwks"));
}

static int suite_clean(void)
{
    hf_oci_config_free(&cfg);
    return 0;
}

static void test_minimal_vault_gets_the_defaults(void)
{
    vault_a();
    CU_ASSERT_TRUE_FATAL(check());
    CU_ASSERT_STRING_EQUAL(hf_oci_config_prefix(&cfg), "/api/v1/cckm/oci/ekm/v1");
    CU_ASSERT_EQUAL(cfg.random_status, 201);
    CU_ASSERT_EQUAL(cfg.nvaults, 1);
    CU_ASSERT_FALSE(cfg.vaults[0].disabled);
    CU_ASSERT_EQUAL(cfg.vaults[0].rate_limit, 0);
    CU_ASSERT_STRING_EQUAL(cfg.vaults[0].audiences[0], "https://10.0.0.31/");
}

static void test_each_required_option_is_named(void)
{
    static const char *const opts[] = {"vault_id", "issuer", "audience", "jwks"};

    for (size_t i = 0; i < 4; i++) {
        hf_oci_config_free(&cfg);
        for (size_t j = 0; j < 4; j++) {
            static const char *const vals[] = {VAULT, "https://i", "https://a/", "/j"};
            if (j != i) CU_ASSERT_TRUE_FATAL(set("a", opts[j], vals[j]));
        }
        CU_ASSERT_FALSE(check());
        CU_ASSERT_PTR_NOT_NULL(strstr(err, opts[i]));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "[oci-ekms:a]"));
    }
    hf_oci_config_free(&cfg);
    CU_ASSERT_FALSE(check());
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no OCI vault"));
}

static void test_vault_id_must_be_a_uuid(void)
{
    hf_oci_config_free(&cfg);
    CU_ASSERT_FALSE(set("a", "vault_id", "vault-1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "holdfast uuid"));
    CU_ASSERT_FALSE(set("a", "vault_id", "F2898529-AD61-48F9-9CD8-25EDB26D5FBF"));
    CU_ASSERT_FALSE(set("a", "vault_id", VAULT "0"));
    CU_ASSERT_FALSE(set("a", "vault_id", "f2898529-ad61-48f9-9cd8_25edb26d5fbf"));
    CU_ASSERT_TRUE(set("a", "vault_id", VAULT));
    CU_ASSERT_TRUE(hf_oci_uuid_is_valid(VAULT, 36));
    CU_ASSERT_FALSE(hf_oci_uuid_is_valid(VAULT, 35));
    CU_ASSERT_FALSE(hf_oci_uuid_is_valid(NULL, 36));
}

static void test_two_vaults_need_two_ids(void)
{
    vault_a();
    CU_ASSERT_TRUE_FATAL(set("b", "vault_id", VAULT));
    CU_ASSERT_TRUE_FATAL(set("b", "issuer", "https://idcs-2.identity.oraclecloud.com"));
    CU_ASSERT_TRUE_FATAL(set("b", "audience", "https://10.0.0.32/"));
    CU_ASSERT_TRUE_FATAL(set("b", "jwks", "/j2"));
    CU_ASSERT_FALSE(check());
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "same vault_id"));
    CU_ASSERT_TRUE_FATAL(set("b", "vault_id", VAULT2));
    CU_ASSERT_TRUE_FATAL(check());
    CU_ASSERT_PTR_EQUAL(hf_oci_config_vault(&cfg, VAULT, 36), &cfg.vaults[0]);
    CU_ASSERT_PTR_EQUAL(hf_oci_config_vault(&cfg, VAULT2, 36), &cfg.vaults[1]);
    CU_ASSERT_PTR_NULL(hf_oci_config_vault(&cfg, VAULT, 35));
    CU_ASSERT_PTR_NULL(hf_oci_config_vault(&cfg, "00000000-0000-4000-8000-000000000000", 36));
    CU_ASSERT_PTR_NULL(hf_oci_config_vault(&cfg, NULL, 36));
}

static void test_prefix_forms(void)
{
    vault_a();
    CU_ASSERT_TRUE(set("", "prefix", "/oci/ekm/"));
    CU_ASSERT_STRING_EQUAL(hf_oci_config_prefix(&cfg), "/oci/ekm");
    CU_ASSERT_TRUE(set("", "prefix", "oci"));
    CU_ASSERT_STRING_EQUAL(hf_oci_config_prefix(&cfg), "/oci");
    CU_ASSERT_TRUE(set("", "prefix", ""));
    CU_ASSERT_STRING_EQUAL(hf_oci_config_prefix(&cfg), "");
    CU_ASSERT_TRUE(set("", "prefix", "/"));
    CU_ASSERT_STRING_EQUAL(hf_oci_config_prefix(&cfg), "");
    CU_ASSERT_FALSE(set("", "prefix", "/a//b"));
    CU_ASSERT_FALSE(set("", "prefix", "/a/../b"));
    CU_ASSERT_FALSE(set("", "prefix", "/a/./b"));
    CU_ASSERT_FALSE(set("", "prefix", "/a b"));
    CU_ASSERT_FALSE(set("", "prefix", "/a?b"));
    CU_ASSERT_STRING_EQUAL(hf_oci_config_prefix(&cfg), "");
    CU_ASSERT_TRUE(check());
}

static void test_options_and_their_values(void)
{
    vault_a();
    CU_ASSERT_TRUE(set("", "random_status", "200"));
    CU_ASSERT_EQUAL(cfg.random_status, 200);
    CU_ASSERT_FALSE(set("", "random_status", "204"));
    CU_ASSERT_FALSE(set("", "vault_id", VAULT)); /* vaults go in [oci-ekms:NAME] */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "[oci-ekms:NAME]"));
    CU_ASSERT_FALSE(set("", "nonsense", "1"));
    CU_ASSERT_TRUE(set("a", "disabled", "yes"));
    CU_ASSERT_TRUE(cfg.vaults[0].disabled);
    CU_ASSERT_FALSE(set("a", "disabled", "maybe"));
    CU_ASSERT_TRUE(set("a", "rate_limit", "50"));
    CU_ASSERT_EQUAL(cfg.vaults[0].rate_limit, 50);
    CU_ASSERT_FALSE(set("a", "rate_limit", "-1"));
    CU_ASSERT_TRUE(set("a", "audience", "https://10.0.0.31/, https://vault.example.com/"));
    CU_ASSERT_EQUAL(cfg.vaults[0].naudiences, 2);
    CU_ASSERT_TRUE(set("a", "jwks_allow", "127.0.0.0/8"));
    CU_ASSERT_EQUAL(cfg.vaults[0].njwks_allow, 1);
    CU_ASSERT_TRUE(set("a", "jwks_ca", "/etc/ca.pem"));
    CU_ASSERT_STRING_EQUAL(cfg.vaults[0].jwks_ca, "/etc/ca.pem");
    CU_ASSERT_FALSE(set("a", "scopes", "oci_ekms"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown vault option"));
    CU_ASSERT_TRUE(check());
}

static void test_client_pin(void)
{
    vault_a();
    CU_ASSERT_TRUE(hf_oci_vault_allows_client(&cfg.vaults[0], "anyone"));
    CU_ASSERT_TRUE(hf_oci_vault_allows_client(&cfg.vaults[0], NULL));
    CU_ASSERT_TRUE(set("a", "client_ids", "abc123, def456"));
    CU_ASSERT_TRUE(hf_oci_vault_allows_client(&cfg.vaults[0], "abc123"));
    CU_ASSERT_TRUE(hf_oci_vault_allows_client(&cfg.vaults[0], "def456"));
    CU_ASSERT_FALSE(hf_oci_vault_allows_client(&cfg.vaults[0], "abc12"));
    CU_ASSERT_FALSE(hf_oci_vault_allows_client(&cfg.vaults[0], "abc1234"));
    CU_ASSERT_FALSE(hf_oci_vault_allows_client(&cfg.vaults[0], "ABC123"));
    CU_ASSERT_FALSE(hf_oci_vault_allows_client(&cfg.vaults[0], ""));
    CU_ASSERT_FALSE(hf_oci_vault_allows_client(&cfg.vaults[0], NULL));
    CU_ASSERT_FALSE(hf_oci_vault_allows_client(NULL, "abc123"));
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"a minimal vault gets the default prefix and 201", test_minimal_vault_gets_the_defaults},
        {"each required vault option is named when missing", test_each_required_option_is_named},
        {"vault_id must be a lower-case UUID", test_vault_id_must_be_a_uuid},
        {"two vaults need two ids; vaults are found by id", test_two_vaults_need_two_ids},
        {"prefix forms and refusals", test_prefix_forms},
        {"options and their values", test_options_and_their_values},
        {"the client pin: exact, any of the list, none set admits all", test_client_pin},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"oci-config", NULL, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
