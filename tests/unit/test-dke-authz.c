/* The caller's identity and a DKE key's allowlist (gateway/plugins/ms-dke/authz.[ch]): email
 * before upn, trimmed, case ignored; group object ids intersected; no claim or no match is a
 * refusal; the scp claim's scopes. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/ms-dke/authz.h"

#include <string.h>

static struct json_object *claims(const char *json)
{
    struct json_object *o = json_tokener_parse(json);

    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    return o;
}

static char alice[] = "alice@contoso.com", bob[] = "bob@contoso.com";
static char g1[] = "0b2c7a1e-8d3f-4c5b-9a6e-1f2d3c4b5a69",
            g2[] = "11111111-2222-3333-4444-555555555555";
static char *emails[] = {alice, bob}, *groups[] = {g1, g2};
static const struct hf_dke_key by_email = {
    .name = "k", .mode = HF_DKE_AUTHZ_EMAIL, .allowed = emails, .nallowed = 2};
static const struct hf_dke_key by_group = {
    .name = "k", .mode = HF_DKE_AUTHZ_GROUP, .allowed = groups, .nallowed = 2};

static bool allows(const struct hf_dke_key *k, const char *json)
{
    struct json_object *c = claims(json);
    bool ok = hf_dke_key_allows(k, c);

    json_object_put(c);
    return ok;
}

static void test_identity_is_email_then_upn_trimmed(void)
{
    char who[64];
    struct json_object *c = claims("{\"email\":\"  Alice@Contoso.com\\t\",\"upn\":\"bob@x\"}");

    CU_ASSERT_TRUE(hf_dke_identity(c, who, sizeof(who)));
    CU_ASSERT_STRING_EQUAL(who, "Alice@Contoso.com");
    json_object_put(c);
    c = claims("{\"email\":\"   \",\"upn\":\" bob@contoso.com \"}");
    CU_ASSERT_TRUE(hf_dke_identity(c, who, sizeof(who)));
    CU_ASSERT_STRING_EQUAL(who, "bob@contoso.com");
    json_object_put(c);
    /* Every C blank (the fuzzer's find: a form feed alone is no address). */
    c = claims("{\"email\":\"\\f\",\"upn\":\"\\u000b bob@contoso.com\\f\"}");
    CU_ASSERT_TRUE(hf_dke_identity(c, who, sizeof(who)));
    CU_ASSERT_STRING_EQUAL(who, "bob@contoso.com");
    json_object_put(c);
    c = claims("{\"email\":7,\"oid\":\"x\"}");
    CU_ASSERT_FALSE(hf_dke_identity(c, who, sizeof(who)));
    json_object_put(c);
    c = claims("{\"email\":\"a-very-long-address@contoso.example.com\"}");
    CU_ASSERT_FALSE(hf_dke_identity(c, who, 8)); /* does not fit: never truncated */
    json_object_put(c);
}

static void test_email_mode(void)
{
    CU_ASSERT_TRUE(allows(&by_email, "{\"email\":\"ALICE@contoso.com\"}"));
    CU_ASSERT_TRUE(allows(&by_email, "{\"upn\":\" bob@contoso.com\"}"));
    CU_ASSERT_FALSE(allows(&by_email, "{\"email\":\"eve@contoso.com\"}"));
    /* email wins over upn, so an allowed upn does not rescue another email. */
    CU_ASSERT_FALSE(
        allows(&by_email, "{\"email\":\"eve@contoso.com\",\"upn\":\"bob@contoso.com\"}"));
    CU_ASSERT_FALSE(allows(&by_email, "{\"oid\":\"x\",\"groups\":[\""
                                      "0b2c7a1e-8d3f-4c5b-9a6e-1f2d3c4b5a69"
                                      "\"]}"));
    CU_ASSERT_FALSE(allows(&by_email, "{\"email\":\"alice@contoso.com.evil\"}"));
}

static void test_group_mode(void)
{
    CU_ASSERT_TRUE(
        allows(&by_group, "{\"groups\":[\"x\",\"0B2C7A1E-8D3F-4C5B-9A6E-1F2D3C4B5A69\"]}"));
    CU_ASSERT_FALSE(allows(&by_group, "{\"groups\":[\"x\"]}"));
    CU_ASSERT_FALSE(allows(&by_group, "{\"groups\":[]}"));
    CU_ASSERT_FALSE(allows(&by_group, "{\"groups\":\"0b2c7a1e-8d3f-4c5b-9a6e-1f2d3c4b5a69\"}"));
    CU_ASSERT_FALSE(allows(&by_group, "{\"groups\":[7,null]}"));
    CU_ASSERT_FALSE(allows(&by_group, "{\"email\":\"alice@contoso.com\"}"));
}

static void test_scopes(void)
{
    struct json_object *c = claims("{\"scp\":\"openid  user_impersonation profile\"}");

    CU_ASSERT_TRUE(hf_dke_scope_has(c, "user_impersonation"));
    CU_ASSERT_TRUE(hf_dke_scope_has(c, "openid"));
    CU_ASSERT_FALSE(hf_dke_scope_has(c, "user"));
    CU_ASSERT_FALSE(hf_dke_scope_has(c, ""));
    json_object_put(c);
    c = claims("{\"scp\":[\"user_impersonation\"]}");
    CU_ASSERT_FALSE(hf_dke_scope_has(c, "user_impersonation"));
    json_object_put(c);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"identity is email, then upn, trimmed", test_identity_is_email_then_upn_trimmed},
        {"email mode compares without case", test_email_mode},
        {"group mode intersects object ids", test_group_mode},
        {"scp holds space-separated scopes", test_scopes},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"dke-authz", NULL, NULL, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
