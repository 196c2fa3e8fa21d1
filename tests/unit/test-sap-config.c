/* The sap-hyok configuration (gateway/plugins/sap-hyok/config.[ch]): keystores named by UUID
 * with a tenant, one or two pins (hex with or without colons) and an optional group allowlist;
 * the default prefix and the prefixes refused; what a whole config must have; the pin compare;
 * the group rule; which paths the routes accept. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugin.h"
#include "gateway/plugins/sap-hyok/config.h"

#include <stdio.h>
#include <string.h>

#define KS1 "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
#define KS2 "0b1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
#define PIN_A "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define PIN_B                                                                                      \
    "FF:EE:DD:CC:BB:AA:99:88:77:66:55:44:33:22:11:00:FF:EE:DD:CC:BB:AA:99:88:77:66:55:44:33:22:"   \
    "11:00"

static struct hf_sap_config cfg;
static char err[256];

static bool set(const char *instance, const char *name, const char *value)
{
    err[0] = '\0';
    return hf_sap_config_set(&cfg, instance, name, value, err, sizeof(err));
}

static int suite_clean(void)
{
    hf_sap_config_free(&cfg);
    return 0;
}

static void minimal(void)
{
    hf_sap_config_free(&cfg);
    CU_ASSERT_TRUE_FATAL(set(KS1, "tenant", "tenant-1"));
    CU_ASSERT_TRUE_FATAL(set(KS1, "pins", PIN_A));
}

static void pin_of(const char *hex, unsigned char out[32])
{
    for (size_t i = 0; i < 32; i++) {
        unsigned v;
        CU_ASSERT_EQUAL_FATAL(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (unsigned char)v;
    }
}

static void test_a_keystore_with_the_default_prefix(void)
{
    const struct hf_sap_keystore *ks;

    minimal();
    CU_ASSERT_TRUE_FATAL(hf_sap_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_STRING_EQUAL(cfg.prefix, HF_SAP_DEFAULT_PREFIX);
    CU_ASSERT_STRING_EQUAL(cfg.prefix, "/api/v1/cckm/sap/hyok/v1");
    CU_ASSERT_EQUAL_FATAL(cfg.nkeystores, 1);
    /* Found by its id in any case. */
    ks = hf_sap_config_keystore(&cfg, "6F1C2A3B-4D5E-4F60-8A7B-9C0D1E2F3A4B");
    CU_ASSERT_PTR_EQUAL(ks, &cfg.keystores[0]);
    CU_ASSERT_STRING_EQUAL(ks->id, KS1);
    CU_ASSERT_STRING_EQUAL(ks->tenant, "tenant-1");
    CU_ASSERT_EQUAL(ks->npins, 1);
    CU_ASSERT_EQUAL(ks->ngroups, 0);
    CU_ASSERT_PTR_NULL(hf_sap_config_keystore(&cfg, KS2));
}

static void test_two_pins_and_groups(void)
{
    const struct hf_sap_keystore *ks;
    unsigned char a[32], b[32], c[32];

    minimal();
    CU_ASSERT_TRUE_FATAL(set(KS1, "pins", PIN_A ", " PIN_B));
    CU_ASSERT_TRUE_FATAL(set(KS1, "groups", "g1, g2"));
    CU_ASSERT_TRUE_FATAL(set("", "prefix", ""));
    CU_ASSERT_TRUE_FATAL(hf_sap_config_check(&cfg, err, sizeof(err)));
    ks = &cfg.keystores[0];
    CU_ASSERT_EQUAL(ks->npins, 2);
    pin_of(PIN_A, a);
    pin_of("ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100", b);
    memcpy(c, a, 32);
    c[31] ^= 1;
    CU_ASSERT_TRUE(hf_sap_keystore_has_pin(ks, a));
    CU_ASSERT_TRUE(hf_sap_keystore_has_pin(ks, b));
    CU_ASSERT_FALSE(hf_sap_keystore_has_pin(ks, c));
    CU_ASSERT_TRUE(hf_sap_keystore_allows_group(ks, "g2"));
    CU_ASSERT_FALSE(hf_sap_keystore_allows_group(ks, "G2"));
    CU_ASSERT_FALSE(hf_sap_keystore_allows_group(ks, "g3"));
    CU_ASSERT_FALSE(hf_sap_keystore_allows_group(ks, NULL));
    CU_ASSERT_STRING_EQUAL(cfg.prefix, "");
    /* A later pins line replaces the earlier one (rotation done: the old pin goes). */
    CU_ASSERT_TRUE(set(KS1, "pins", PIN_B));
    CU_ASSERT_EQUAL(cfg.keystores[0].npins, 1);
    CU_ASSERT_FALSE(hf_sap_keystore_has_pin(&cfg.keystores[0], a));
}

static void test_no_allowlist_allows_any_group(void)
{
    minimal();
    CU_ASSERT_TRUE(hf_sap_keystore_allows_group(&cfg.keystores[0], NULL));
    CU_ASSERT_TRUE(hf_sap_keystore_allows_group(&cfg.keystores[0], "any"));
}

static void test_bad_values_are_refused(void)
{
    hf_sap_config_free(&cfg);
    CU_ASSERT_FALSE(set("not-a-uuid", "tenant", "t"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "UUID"));
    CU_ASSERT_FALSE(set(KS1, "tenant", ""));
    CU_ASSERT_FALSE(set(KS1, "pins", "abcd"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "SHA-256"));
    CU_ASSERT_FALSE(set(KS1, "pins", PIN_A "00"));
    CU_ASSERT_FALSE(set(KS1, "pins", PIN_A ":"));
    CU_ASSERT_FALSE(
        set(KS1, "pins", "zz112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"));
    CU_ASSERT_FALSE(set(KS1, "pins", PIN_A "," PIN_A "," PIN_A));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "one or two"));
    CU_ASSERT_FALSE(set(KS1, "pins", ""));
    CU_ASSERT_FALSE(set(KS1, "colour", "blue"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "colour"));
    CU_ASSERT_FALSE(set("", "tenant", "t"));
    CU_ASSERT_FALSE(set("", "prefix", "api/v1"));
    CU_ASSERT_FALSE(set("", "prefix", "/api//v1"));
    CU_ASSERT_FALSE(set("", "prefix", "/api/"));
    CU_ASSERT_FALSE(set("", "prefix", "/api/../x"));
    CU_ASSERT_FALSE(set("", "prefix", "/x/keystores"));
    CU_ASSERT_FALSE(set("", "prefix", "/a b"));
    CU_ASSERT_TRUE(set("", "prefix", "/sap.v1/x_y~z-1"));
}

static void test_a_whole_config_needs_its_parts(void)
{
    hf_sap_config_free(&cfg);
    CU_ASSERT_FALSE(hf_sap_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no keystore"));
    CU_ASSERT_TRUE_FATAL(set(KS1, "tenant", "t"));
    CU_ASSERT_FALSE(hf_sap_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "pins is required"));
    hf_sap_config_free(&cfg);
    CU_ASSERT_TRUE_FATAL(set(KS1, "pins", PIN_A));
    CU_ASSERT_FALSE(hf_sap_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "tenant is required"));
    /* Two keystores, each complete. */
    CU_ASSERT_TRUE_FATAL(set(KS1, "tenant", "t"));
    CU_ASSERT_TRUE_FATAL(set(KS2, "tenant", "u"));
    CU_ASSERT_FALSE(hf_sap_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, KS2));
    CU_ASSERT_TRUE_FATAL(set(KS2, "pins", PIN_B));
    CU_ASSERT_TRUE(hf_sap_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_EQUAL(cfg.nkeystores, 2);
}

static void test_served_paths_are_under_the_prefix(void)
{
    minimal();
    CU_ASSERT_TRUE_FATAL(hf_sap_config_check(&cfg, err, sizeof(err)));
    CU_ASSERT_TRUE(
        hf_sap_config_is_served(&cfg, "/api/v1/cckm/sap/hyok/v1/keystores/x/get-metadata"));
    CU_ASSERT_FALSE(hf_sap_config_is_served(&cfg, "/api/v1/cckm/sap/hyok/v2/keystores/x"));
    CU_ASSERT_FALSE(hf_sap_config_is_served(&cfg, "/x/api/v1/cckm/sap/hyok/v1/keystores/x"));
    CU_ASSERT_FALSE(hf_sap_config_is_served(&cfg, "/api/v1/cckm/sap/hyok/v1/keystoresx/"));
    CU_ASSERT_TRUE(set("", "prefix", ""));
    CU_ASSERT_TRUE(hf_sap_config_is_served(&cfg, "/keystores/x/get-metadata"));
    CU_ASSERT_FALSE(hf_sap_config_is_served(&cfg, "/api/keystores/x/get-metadata"));
}

static void test_uuids(void)
{
    CU_ASSERT_TRUE(hf_uuid_text_is_valid(KS1, 36));
    CU_ASSERT_TRUE(hf_uuid_text_is_valid("6F1C2A3B-4D5E-4F60-8A7B-9C0D1E2F3A4B", 36));
    CU_ASSERT_FALSE(hf_uuid_text_is_valid(KS1, 35));
    CU_ASSERT_FALSE(hf_uuid_text_is_valid("6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4g", 36));
    CU_ASSERT_FALSE(hf_uuid_text_is_valid("6f1c2a3b04d5e-4f60-8a7b-9c0d1e2f3a4b", 36));
    CU_ASSERT_FALSE(hf_uuid_text_is_valid(NULL, 36));
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"a keystore with the default prefix", test_a_keystore_with_the_default_prefix},
        {"two pins and groups", test_two_pins_and_groups},
        {"no allowlist allows any group", test_no_allowlist_allows_any_group},
        {"bad values are refused", test_bad_values_are_refused},
        {"a whole config needs its parts", test_a_whole_config_needs_its_parts},
        {"served paths are under the prefix", test_served_paths_are_under_the_prefix},
        {"uuids", test_uuids},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"sap-config", NULL, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
