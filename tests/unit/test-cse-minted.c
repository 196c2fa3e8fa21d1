/* The claims of the tokens the gws-cse plugin mints (gateway/plugins/gws-cse/minted.h): the
 * delegated token's (specs/gws-cse.md, "Tokens": iss = aud = KACLS_URL, the original email and
 * google_email, delegated_to, resource_name, 15 minutes) and the migration token's (aud
 * kacls-migration, the peer's kacls_url, 5 minutes). */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/minted.h"
#include "tests/unit/harness.h"

#include <string.h>

#define KACLS "https://kacls.test/cse"
#define NOW 1900000000

static const char *str(struct json_object *o, const char *name)
{
    struct json_object *v;

    if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string))
        return "";
    return json_object_get_string(v);
}

static int64_t num(struct json_object *o, const char *name)
{
    struct json_object *v;

    return json_object_object_get_ex(o, name, &v) ? json_object_get_int64(v) : -1;
}

static void test_delegated_claims_carry_the_original_caller(void)
{
    struct json_object *authn =
        json_tokener_parse("{\"email\":\"alice@example.com\",\"google_email\":\"alice@gmail.com\","
                           "\"delegated_to\":\"ignored\",\"role\":\"writer\"}");
    struct json_object *c = hf_cse_delegated_claims(KACLS, authn, "bob@example.com", "//r/1", NOW);

    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(str(c, "iss"), KACLS);
    CU_ASSERT_STRING_EQUAL(str(c, "aud"), KACLS);
    CU_ASSERT_STRING_EQUAL(str(c, "email"), "alice@example.com");
    CU_ASSERT_STRING_EQUAL(str(c, "google_email"), "alice@gmail.com");
    /* delegated_to is the authz token's, never the authn's. */
    CU_ASSERT_STRING_EQUAL(str(c, "delegated_to"), "bob@example.com");
    CU_ASSERT_STRING_EQUAL(str(c, "resource_name"), "//r/1");
    CU_ASSERT_EQUAL(num(c, "iat"), NOW);
    CU_ASSERT_EQUAL(num(c, "exp"), NOW + 15 * 60);
    /* Nothing else of the authn token is passed on. */
    CU_ASSERT_FALSE(json_object_object_get_ex(c, "role", NULL));
    CU_ASSERT_EQUAL(json_object_object_length(c), 8);
    json_object_put(c);
    json_object_put(authn);
}

static void test_delegated_claims_need_an_email_and_a_delegate(void)
{
    struct json_object *plain = json_tokener_parse("{\"email\":\"alice@example.com\"}");
    struct json_object *none = json_tokener_parse("{\"google_email\":\"alice@gmail.com\"}");
    struct json_object *c;

    /* Without google_email there is none in the token. */
    c = hf_cse_delegated_claims(KACLS, plain, "bob@example.com", NULL, NOW);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_FALSE(json_object_object_get_ex(c, "google_email", NULL));
    CU_ASSERT_STRING_EQUAL(str(c, "resource_name"), "");
    json_object_put(c);
    CU_ASSERT_PTR_NULL(hf_cse_delegated_claims(KACLS, none, "bob@example.com", "r", NOW));
    CU_ASSERT_PTR_NULL(hf_cse_delegated_claims(KACLS, plain, "", "r", NOW));
    CU_ASSERT_PTR_NULL(hf_cse_delegated_claims(KACLS, plain, NULL, "r", NOW));
    CU_ASSERT_PTR_NULL(hf_cse_delegated_claims(KACLS, NULL, "bob@example.com", "r", NOW));
    json_object_put(plain);
    json_object_put(none);
}

static void test_migration_claims_name_the_peer(void)
{
    struct json_object *c = hf_cse_migration_claims(KACLS, "https://old.test/cse", "//r/2", NOW);

    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(str(c, "iss"), KACLS);
    CU_ASSERT_STRING_EQUAL(str(c, "aud"), "kacls-migration");
    CU_ASSERT_STRING_EQUAL(str(c, "kacls_url"), "https://old.test/cse");
    CU_ASSERT_STRING_EQUAL(str(c, "resource_name"), "//r/2");
    CU_ASSERT_EQUAL(num(c, "iat"), NOW);
    CU_ASSERT_EQUAL(num(c, "exp"), NOW + 5 * 60);
    CU_ASSERT_EQUAL(json_object_object_length(c), 6);
    json_object_put(c);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"delegated claims carry the original caller",
         test_delegated_claims_carry_the_original_caller},
        {"delegated claims need an email and a delegate",
         test_delegated_claims_need_an_email_and_a_delegate},
        {"migration claims name the peer", test_migration_claims_name_the_peer},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {
        {"cse-minted", NULL, NULL, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
