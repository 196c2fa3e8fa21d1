/* The gws-cse token checks as pure rules over claims (gateway/plugins/gws-cse/checks.[ch]):
 * role per op (the spec's Decision list), same user with google_email's precedence and
 * without case, the email_type guest rule, kacls_url byte for byte, kacls_owner_domain,
 * delegation, and perimeter rules (globs over authn claims; "" passes; unlisted ids fail once
 * rules exist). */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/gws-cse/checks.h"

#include <string.h>

static struct json_object *claims(const char *json)
{
    struct json_object *o = json_tokener_parse(json);

    CU_ASSERT_FATAL(o != NULL);
    return o;
}

static bool role_ok(enum hf_cse_op op, const char *role)
{
    return hf_cse_role_is_allowed(hf_cse_op_info(op), role);
}

static void test_roles_per_op(void)
{
    CU_ASSERT_TRUE(role_ok(HF_CSE_OP_WRAP, "writer"));
    CU_ASSERT_TRUE(role_ok(HF_CSE_OP_WRAP, "upgrader"));
    CU_ASSERT_FALSE(role_ok(HF_CSE_OP_WRAP, "reader"));
    CU_ASSERT_TRUE(role_ok(HF_CSE_OP_UNWRAP, "reader"));
    CU_ASSERT_TRUE(role_ok(HF_CSE_OP_UNWRAP, "writer"));
    CU_ASSERT_FALSE(role_ok(HF_CSE_OP_UNWRAP, "upgrader"));
    CU_ASSERT_FALSE(role_ok(HF_CSE_OP_UNWRAP, "Reader"));
    CU_ASSERT_TRUE(role_ok(HF_CSE_OP_DELEGATE, "reader"));
    CU_ASSERT_TRUE(role_ok(HF_CSE_OP_DIGEST, "verifier"));
    CU_ASSERT_FALSE(role_ok(HF_CSE_OP_DIGEST, "reader"));
    CU_ASSERT_TRUE(role_ok(HF_CSE_OP_REWRAP, "migrator"));
    CU_ASSERT_FALSE(role_ok(HF_CSE_OP_REWRAP, "writer"));
    CU_ASSERT_TRUE(role_ok(HF_CSE_OP_PRIVATEKEYSIGN, "signer"));
    CU_ASSERT_TRUE(role_ok(HF_CSE_OP_PRIVATEKEYDECRYPT, "decrypter"));
    CU_ASSERT_FALSE(role_ok(HF_CSE_OP_PRIVATEKEYDECRYPT, "signer"));
    CU_ASSERT_FALSE(role_ok(HF_CSE_OP_PRIVILEGEDWRAP, "writer"));
    CU_ASSERT_FALSE(role_ok(HF_CSE_OP_WRAP, NULL));
}

static void test_same_user_and_google_email(void)
{
    struct json_object *plain = claims("{\"email\":\"Alice@Example.com\"}");
    struct json_object *both =
        claims("{\"email\":\"alice@idp.example\",\"google_email\":\"alice@example.com\"}");
    struct json_object *empty_google = claims("{\"email\":\"a@x\",\"google_email\":\"\"}");
    struct json_object *none = claims("{\"email\":5}");

    CU_ASSERT_STRING_EQUAL(hf_cse_authn_identity(plain), "Alice@Example.com");
    CU_ASSERT_STRING_EQUAL(hf_cse_authn_identity(both), "alice@example.com");
    CU_ASSERT_STRING_EQUAL(hf_cse_authn_identity(empty_google), "a@x");
    CU_ASSERT_PTR_NULL(hf_cse_authn_identity(none));
    CU_ASSERT_TRUE(hf_cse_same_user("alice@example.com", hf_cse_authn_identity(plain)));
    CU_ASSERT_TRUE(hf_cse_same_user("ALICE@example.com", hf_cse_authn_identity(both)));
    /* google_email wins: the IdP's own email no longer counts. */
    CU_ASSERT_FALSE(hf_cse_same_user("alice@idp.example", hf_cse_authn_identity(both)));
    CU_ASSERT_FALSE(hf_cse_same_user("bob@example.com", hf_cse_authn_identity(plain)));
    CU_ASSERT_FALSE(hf_cse_same_user(NULL, "a@x"));
    CU_ASSERT_FALSE(hf_cse_same_user("", ""));
    CU_ASSERT_FALSE(hf_cse_same_user("a@x", NULL));
    json_object_put(plain);
    json_object_put(both);
    json_object_put(empty_google);
    json_object_put(none);
}

static void test_guest_rule(void)
{
    CU_ASSERT_TRUE(hf_cse_email_type_is_allowed(NULL, false));
    CU_ASSERT_TRUE(hf_cse_email_type_is_allowed("google", false));
    CU_ASSERT_FALSE(hf_cse_email_type_is_allowed("customer_idp", false));
    CU_ASSERT_FALSE(hf_cse_email_type_is_allowed("Google", false));
    CU_ASSERT_TRUE(hf_cse_email_type_is_allowed("customer_idp", true));
}

static void test_kacls_url_and_owner_domain(void)
{
    CU_ASSERT_TRUE(hf_cse_kacls_url_matches("https://k.test/cse", "https://k.test/cse"));
    CU_ASSERT_FALSE(hf_cse_kacls_url_matches("https://k.test/cse/", "https://k.test/cse"));
    CU_ASSERT_FALSE(hf_cse_kacls_url_matches("https://K.test/cse", "https://k.test/cse"));
    CU_ASSERT_FALSE(hf_cse_kacls_url_matches(NULL, "https://k.test/cse"));
    CU_ASSERT_TRUE(hf_cse_owner_domain_is_allowed(NULL, "example.com"));
    CU_ASSERT_TRUE(hf_cse_owner_domain_is_allowed("Example.COM", "example.com"));
    CU_ASSERT_FALSE(hf_cse_owner_domain_is_allowed("evil.com", "example.com"));
    CU_ASSERT_TRUE(hf_cse_owner_domain_is_allowed("example.com", NULL));
}

static void test_delegation(void)
{
    struct json_object *az = claims("{\"delegated_to\":\"svc@x\",\"resource_name\":\"r1\"}");
    struct json_object *ok = claims("{\"delegated_to\":\"svc@x\",\"resource_name\":\"r1\"}");
    struct json_object *other_rn = claims("{\"delegated_to\":\"svc@x\",\"resource_name\":\"r2\"}");
    struct json_object *other_to = claims("{\"delegated_to\":\"eve@x\",\"resource_name\":\"r1\"}");
    struct json_object *none = claims("{\"resource_name\":\"r1\"}");

    CU_ASSERT_TRUE(hf_cse_delegation_matches(az, ok));
    CU_ASSERT_FALSE(hf_cse_delegation_matches(az, other_rn));
    CU_ASSERT_FALSE(hf_cse_delegation_matches(az, other_to));
    CU_ASSERT_FALSE(hf_cse_delegation_matches(none, none));
    json_object_put(az);
    json_object_put(ok);
    json_object_put(other_rn);
    json_object_put(other_to);
    json_object_put(none);
}

static void test_perimeter_rules(void)
{
    struct hf_cse_claim_rule r1[] = {{(char *)"hd", (char *)"example.com"},
                                     {(char *)"email", (char *)"*@example.com"}};
    struct hf_cse_claim_rule r2[] = {{(char *)"groups", (char *)"fin-[0-9]*"}};
    struct hf_cse_perimeter pms[] = {{(char *)"p1", r1, 2}, {(char *)"p2", r2, 1}};
    struct hf_cse_prefix px;
    struct json_object *alice = claims("{\"hd\":\"example.com\",\"email\":\"alice@example.com\","
                                       "\"groups\":\"fin-7\"}");
    struct json_object *eve = claims("{\"hd\":\"example.com\",\"email\":\"eve@evil.com\"}");

    memset(&px, 0, sizeof(px));
    /* No rules: every id passes. */
    CU_ASSERT_TRUE(hf_cse_perimeter_is_allowed(&px, "anything", eve));
    px.perimeters = pms;
    px.nperimeters = 2;
    CU_ASSERT_TRUE(hf_cse_perimeter_is_allowed(&px, "", eve));
    CU_ASSERT_TRUE(hf_cse_perimeter_is_allowed(&px, NULL, NULL));
    CU_ASSERT_TRUE(hf_cse_perimeter_is_allowed(&px, "p1", alice));
    CU_ASSERT_FALSE(hf_cse_perimeter_is_allowed(&px, "p1", eve));
    CU_ASSERT_TRUE(hf_cse_perimeter_is_allowed(&px, "p2", alice));
    /* A claim the token lacks fails its rule. */
    CU_ASSERT_FALSE(hf_cse_perimeter_is_allowed(&px, "p2", eve));
    /* Once rules exist, an unlisted id fails. */
    CU_ASSERT_FALSE(hf_cse_perimeter_is_allowed(&px, "p3", alice));
    CU_ASSERT_FALSE(hf_cse_perimeter_is_allowed(&px, "p1", NULL));
    json_object_put(alice);
    json_object_put(eve);
}

static void test_claims_are_strings(void)
{
    struct json_object *c = claims("{\"role\":[\"writer\"],\"email\":\"a@x\",\"n\":null}");

    CU_ASSERT_PTR_NULL(hf_cse_claim(c, "role"));
    CU_ASSERT_PTR_NULL(hf_cse_claim(c, "n"));
    CU_ASSERT_PTR_NULL(hf_cse_claim(c, "missing"));
    CU_ASSERT_STRING_EQUAL(hf_cse_claim(c, "email"), "a@x");
    CU_ASSERT_PTR_NULL(hf_cse_claim(NULL, "email"));
    json_object_put(c);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"roles per op", test_roles_per_op},
        {"same user and google_email", test_same_user_and_google_email},
        {"guest rule", test_guest_rule},
        {"kacls_url and owner domain", test_kacls_url_and_owner_domain},
        {"delegation", test_delegation},
        {"perimeter rules", test_perimeter_rules},
        {"claims are strings", test_claims_are_strings},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"cse-checks", NULL, NULL, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
