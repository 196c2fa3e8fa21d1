/* SAP HYOK request parsing (gateway/plugins/sap-hyok/request.[ch]): the body and its
 * request_metadata, integer members, get-versions-metadata's paging and its selection,
 * RFC 3339 both ways, and the spec's enums. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/sap-hyok/request.h"

#include <string.h>

static struct json_object *root;
static struct hf_sap_metadata meta;
static char why[256];

static enum hf_status parse(const char *body)
{
    hf_json_put_wiped(root);
    root = NULL;
    why[0] = '\0';
    return hf_sap_body_parse((const unsigned char *)body, strlen(body), &root, &meta, why,
                             sizeof(why));
}

static int suite_clean(void)
{
    hf_json_put_wiped(root);
    root = NULL;
    return 0;
}

static void test_request_metadata(void)
{
    CU_ASSERT_EQUAL_FATAL(parse("{\"request_metadata\":{\"sap_tenant_id\":\"t1\",\"sap_group_id\":"
                                "\"g1\",\"sap_user_type\":\"USER_DEV\",\"sap_request_id\":\"r-1\","
                                "\"other\":1},\"unknown\":[1,2]}"),
                          HF_STATUS_OK);
    CU_ASSERT_STRING_EQUAL(meta.tenant, "t1");
    CU_ASSERT_STRING_EQUAL(meta.group, "g1");
    CU_ASSERT_STRING_EQUAL(meta.user_type, "USER_DEV");
    CU_ASSERT_STRING_EQUAL(meta.request_id, "r-1");
    CU_ASSERT_EQUAL_FATAL(parse("{\"request_metadata\":{\"sap_tenant_id\":\"t1\"}}"), HF_STATUS_OK);
    CU_ASSERT_PTR_NULL(meta.group);
    CU_ASSERT_PTR_NULL(meta.request_id);
}

static void test_bad_bodies_are_refused(void)
{
    static const struct {
        const char *body, *why;
    } cases[] = {
        {"", NULL},
        {"[1]", "not a JSON object"},
        {"{\"a\":1", NULL},
        {"{}", "request_metadata is required"},
        {"{\"request_metadata\":null}", "request_metadata is required"},
        {"{\"request_metadata\":\"t1\"}", "want an object"},
        {"{\"request_metadata\":{}}", "sap_tenant_id"},
        {"{\"request_metadata\":{\"sap_tenant_id\":\"\"}}", "empty"},
        {"{\"request_metadata\":{\"sap_tenant_id\":7}}", "sap_tenant_id"},
        {"{\"request_metadata\":{\"sap_tenant_id\":\"t\",\"sap_group_id\":1}}", "sap_group_id"},
        {"{\"request_metadata\":{\"sap_tenant_id\":\"t\",\"sap_tenant_id\":\"u\"}}", NULL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CU_ASSERT_EQUAL(parse(cases[i].body), HF_STATUS_BAD_REQUEST);
        CU_ASSERT_PTR_NULL(root);
        CU_ASSERT_NOT_EQUAL(why[0], '\0');
        if (cases[i].why != NULL && strstr(why, cases[i].why) == NULL)
            CU_FAIL_FATAL("the reason does not name the field");
    }
}

static void test_a_metadata_string_over_the_cap(void)
{
    char body[600];
    char big[HF_SAP_STRING_MAX + 2];

    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    snprintf(body, sizeof(body),
             "{\"request_metadata\":{\"sap_tenant_id\":\"t\",\"sap_request_id\":\"%s\"}}", big);
    CU_ASSERT_EQUAL(parse(body), HF_STATUS_BAD_REQUEST);
    big[HF_SAP_STRING_MAX] = '\0';
    snprintf(body, sizeof(body),
             "{\"request_metadata\":{\"sap_tenant_id\":\"t\",\"sap_request_id\":\"%s\"}}", big);
    CU_ASSERT_EQUAL(parse(body), HF_STATUS_OK);
}

static void test_integers(void)
{
    int64_t n = -1;

    CU_ASSERT_EQUAL_FATAL(parse("{\"request_metadata\":{\"sap_tenant_id\":\"t\"},\"a\":5,"
                                "\"b\":\"5\",\"c\":5.0,\"d\":99999999999999999999,\"e\":-1}"),
                          HF_STATUS_OK);
    CU_ASSERT_EQUAL(hf_sap_member_int(root, "a", true, 1, 10, 0, &n, why, sizeof(why)),
                    HF_STATUS_OK);
    CU_ASSERT_EQUAL(n, 5);
    CU_ASSERT_EQUAL(hf_sap_member_int(root, "a", true, 6, 10, 0, &n, why, sizeof(why)),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(hf_sap_member_int(root, "b", true, 1, 10, 0, &n, why, sizeof(why)),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(hf_sap_member_int(root, "c", true, 1, 10, 0, &n, why, sizeof(why)),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(hf_sap_member_int(root, "d", true, 1, INT32_MAX, 0, &n, why, sizeof(why)),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(hf_sap_member_int(root, "e", true, 0, 10, 0, &n, why, sizeof(why)),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(hf_sap_member_int(root, "absent", true, 0, 10, 0, &n, why, sizeof(why)),
                    HF_STATUS_BAD_REQUEST);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "absent is required"));
    CU_ASSERT_EQUAL(hf_sap_member_int(root, "absent", false, 0, 10, 7, &n, why, sizeof(why)),
                    HF_STATUS_OK);
    CU_ASSERT_EQUAL(n, 7);
}

/* Five versions, created at 100..500. */
static const struct hf_key_version versions[5] = {
    {1, "00000000-0000-4000-8000-000000000001", HF_STATE_DEACTIVATED, 100, 0, 0},
    {2, "00000000-0000-4000-8000-000000000002", HF_STATE_ACTIVE, 200, 0, 0},
    {3, "00000000-0000-4000-8000-000000000003", HF_STATE_ACTIVE, 300, 0, 0},
    {4, "00000000-0000-4000-8000-000000000004", HF_STATE_ACTIVE, 400, 0, 0},
    {5, "00000000-0000-4000-8000-000000000005", HF_STATE_ACTIVE, 500, 0, 0},
};

static enum hf_status paging(const char *members, struct hf_sap_paging *p)
{
    char body[512];

    snprintf(body, sizeof(body), "{\"request_metadata\":{\"sap_tenant_id\":\"t\"}%s%s}",
             members[0] ? "," : "", members);
    CU_ASSERT_EQUAL_FATAL(parse(body), HF_STATUS_OK);
    return hf_sap_paging_parse(root, p, why, sizeof(why));
}

static void test_paging_defaults_and_ranges(void)
{
    struct hf_sap_paging p;

    CU_ASSERT_EQUAL_FATAL(paging("", &p), HF_STATUS_OK);
    CU_ASSERT_EQUAL(p.skip, 0);
    CU_ASSERT_EQUAL(p.limit, 10);
    CU_ASSERT_PTR_NULL(p.key_version_id);
    CU_ASSERT_FALSE(p.has_created_after);
    CU_ASSERT_EQUAL(paging("\"limit\":100,\"skip\":3", &p), HF_STATUS_OK);
    CU_ASSERT_EQUAL(p.limit, 100);
    CU_ASSERT_EQUAL(p.skip, 3);
    CU_ASSERT_EQUAL(paging("\"limit\":0", &p), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "limit"));
    CU_ASSERT_EQUAL(paging("\"limit\":101", &p), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(paging("\"skip\":-1", &p), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(paging("\"skip\":\"1\"", &p), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(paging("\"created_after\":\"yesterday\"", &p), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "created_after"));
    CU_ASSERT_EQUAL(paging("\"created_after\":5", &p), HF_STATUS_BAD_REQUEST);
    CU_ASSERT_EQUAL(paging("\"key_version_id\":5", &p), HF_STATUS_BAD_REQUEST);
}

static void test_paging_selects_a_slice(void)
{
    struct hf_sap_paging p;
    size_t sel[5], total, first, count;

    CU_ASSERT_EQUAL_FATAL(paging("\"skip\":1,\"limit\":2", &p), HF_STATUS_OK);
    hf_sap_paging_select(&p, versions, 5, sel, &total, &first, &count);
    CU_ASSERT_EQUAL(total, 5);
    CU_ASSERT_EQUAL(first, 1);
    CU_ASSERT_EQUAL(count, 2);
    CU_ASSERT_EQUAL(sel[first], 1);
    CU_ASSERT_EQUAL(sel[first + 1], 2);
    /* Past the end: an empty page, the total still told. */
    CU_ASSERT_EQUAL_FATAL(paging("\"skip\":9", &p), HF_STATUS_OK);
    hf_sap_paging_select(&p, versions, 5, sel, &total, &first, &count);
    CU_ASSERT_EQUAL(total, 5);
    CU_ASSERT_EQUAL(count, 0);
    /* created_after is strict, and the offset counts: 00:05:00+00:01 is 00:04:00Z = 240 s. */
    CU_ASSERT_EQUAL_FATAL(paging("\"created_after\":\"1970-01-01T00:05:00+00:01\"", &p),
                          HF_STATUS_OK);
    CU_ASSERT_EQUAL(p.created_after, 240);
    hf_sap_paging_select(&p, versions, 5, sel, &total, &first, &count);
    CU_ASSERT_EQUAL(total, 3);
    CU_ASSERT_EQUAL(sel[0], 2);
    CU_ASSERT_EQUAL_FATAL(paging("\"created_after\":\"1970-01-01T00:05:00Z\"", &p), HF_STATUS_OK);
    hf_sap_paging_select(&p, versions, 5, sel, &total, &first, &count);
    CU_ASSERT_EQUAL(total, 2);
    CU_ASSERT_EQUAL(sel[0], 3);
    CU_ASSERT_EQUAL_FATAL(paging("\"key_version_id\":\"00000000-0000-4000-8000-000000000004\"", &p),
                          HF_STATUS_OK);
    hf_sap_paging_select(&p, versions, 5, sel, &total, &first, &count);
    CU_ASSERT_EQUAL(total, 1);
    CU_ASSERT_EQUAL(count, 1);
    CU_ASSERT_EQUAL(sel[0], 3);
    hf_sap_paging_select(&p, versions, 0, sel, &total, &first, &count);
    CU_ASSERT_EQUAL(total, 0);
    CU_ASSERT_EQUAL(count, 0);
}

static void test_rfc3339(void)
{
    int64_t t = 0;
    char out[32];

    CU_ASSERT_TRUE(hf_sap_rfc3339_parse("1970-01-01T00:00:00Z", &t));
    CU_ASSERT_EQUAL(t, 0);
    CU_ASSERT_TRUE(hf_sap_rfc3339_parse("2026-12-02T18:00:00.123456Z", &t));
    CU_ASSERT_EQUAL(t, 1796234400);
    CU_ASSERT_TRUE(hf_sap_rfc3339_parse("2026-12-02t19:30:00+01:30", &t));
    CU_ASSERT_EQUAL(t, 1796234400);
    CU_ASSERT_TRUE(hf_sap_rfc3339_parse("2024-02-29T00:00:00-00:00", &t));
    CU_ASSERT_EQUAL(t, 1709164800);
    CU_ASSERT_FALSE(hf_sap_rfc3339_parse("2023-02-29T00:00:00Z", &t));
    CU_ASSERT_FALSE(hf_sap_rfc3339_parse("2026-13-01T00:00:00Z", &t));
    CU_ASSERT_FALSE(hf_sap_rfc3339_parse("2026-12-02 18:00:00Z", &t));
    CU_ASSERT_FALSE(hf_sap_rfc3339_parse("2026-12-02T18:00:00", &t));
    CU_ASSERT_FALSE(hf_sap_rfc3339_parse("2026-12-02T18:00:00.Z", &t));
    CU_ASSERT_FALSE(hf_sap_rfc3339_parse("2026-12-02T24:00:00Z", &t));
    CU_ASSERT_FALSE(hf_sap_rfc3339_parse("2026-12-02T18:00:00+0100", &t));
    CU_ASSERT_FALSE(hf_sap_rfc3339_parse("2026-12-02T18:00:00Zjunk", &t));
    CU_ASSERT_FALSE(hf_sap_rfc3339_parse("2026-12-02", &t));
    hf_sap_rfc3339_format(1796234400, out, sizeof(out));
    CU_ASSERT_STRING_EQUAL(out, "2026-12-02T18:00:00Z");
}

static void test_enums(void)
{
    struct hf_sap_hash h;
    enum hf_sap_message_type mt;

    CU_ASSERT_TRUE_FATAL(hf_sap_oaep_alg_parse("RSAES_OAEP_SHA_1", &h));
    CU_ASSERT_EQUAL(h.mech, CKM_SHA_1);
    CU_ASSERT_EQUAL(h.len, 20);
    CU_ASSERT_TRUE_FATAL(hf_sap_oaep_alg_parse("RSAES_OAEP_SHA_256", &h));
    CU_ASSERT_EQUAL(h.mech, CKM_SHA256);
    CU_ASSERT_EQUAL(h.mgf, CKG_MGF1_SHA256);
    CU_ASSERT_TRUE(hf_sap_oaep_alg_parse("RSAES_OAEP_SHA_512", &h));
    CU_ASSERT_EQUAL(h.len, 64);
    CU_ASSERT_FALSE(hf_sap_oaep_alg_parse("RSAES_OAEP_SHA_224", &h));
    CU_ASSERT_FALSE(hf_sap_oaep_alg_parse("rsaes_oaep_sha_256", &h));
    CU_ASSERT_FALSE(hf_sap_oaep_alg_parse("RSAES_OAEP_SHA_2560", &h));
    CU_ASSERT_FALSE(hf_sap_oaep_alg_parse(NULL, &h));
    CU_ASSERT_FALSE(hf_sap_pss_alg_parse("RSASSA_PSS_SHA_1", &h));
    CU_ASSERT_TRUE_FATAL(hf_sap_pss_alg_parse("RSASSA_PSS_SHA_384", &h));
    CU_ASSERT_EQUAL(h.mech, CKM_SHA384);
    CU_ASSERT_EQUAL(h.len, 48);
    CU_ASSERT_STRING_EQUAL(h.name, "SHA384");
    CU_ASSERT_TRUE(hf_sap_message_type_parse("RAW", &mt));
    CU_ASSERT_EQUAL(mt, HF_SAP_MESSAGE_RAW);
    CU_ASSERT_TRUE(hf_sap_message_type_parse("DIGEST", &mt));
    CU_ASSERT_EQUAL(mt, HF_SAP_MESSAGE_DIGEST);
    CU_ASSERT_FALSE(hf_sap_message_type_parse("raw", &mt));
    CU_ASSERT_FALSE(hf_sap_message_type_parse("", &mt));
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"request_metadata", test_request_metadata},
        {"bad bodies are refused", test_bad_bodies_are_refused},
        {"a metadata string over the cap", test_a_metadata_string_over_the_cap},
        {"integers", test_integers},
        {"paging defaults and ranges", test_paging_defaults_and_ranges},
        {"paging selects a slice", test_paging_selects_a_slice},
        {"rfc 3339", test_rfc3339},
        {"enums", test_enums},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"sap-request", NULL, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
