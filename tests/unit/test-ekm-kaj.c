/* Key Access Justifications (gateway/plugins/gcp-ekm/kaj.[ch]): reasons by name and number,
 * unknown values counting as absent, the default policy and narrowed ones. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/plugins/gcp-ekm/kaj.h"

#include <string.h>

static void test_reasons_by_name_and_number(void)
{
    CU_ASSERT_EQUAL(hf_ekm_reason_parse("REASON_UNSPECIFIED"), 0);
    CU_ASSERT_EQUAL(hf_ekm_reason_parse("CUSTOMER_INITIATED_ACCESS"), 5);
    CU_ASSERT_EQUAL(hf_ekm_reason_parse("CUSTOMER_AUTHORIZED_WORKFLOW_SERVICING"), 11);
    CU_ASSERT_EQUAL(hf_ekm_reason_parse("5"), 5);
    CU_ASSERT_EQUAL(hf_ekm_reason_parse("11"), 11);
    CU_ASSERT_STRING_EQUAL(hf_ekm_reason_name(3), "THIRD_PARTY_DATA_REQUEST");
    CU_ASSERT_PTR_NULL(hf_ekm_reason_name(12));
    CU_ASSERT_PTR_NULL(hf_ekm_reason_name(HF_EKM_REASON_ABSENT));
}

/* The spec: an unknown value counts as absent (names match exactly, as proto3 writes them). */
static void test_unknown_reasons_are_absent(void)
{
    CU_ASSERT_EQUAL(hf_ekm_reason_parse("12"), HF_EKM_REASON_ABSENT);
    CU_ASSERT_EQUAL(hf_ekm_reason_parse("005"), HF_EKM_REASON_ABSENT);
    CU_ASSERT_EQUAL(hf_ekm_reason_parse("customer_initiated_access"), HF_EKM_REASON_ABSENT);
    CU_ASSERT_EQUAL(hf_ekm_reason_parse("A_REASON_FROM_THE_FUTURE"), HF_EKM_REASON_ABSENT);
    CU_ASSERT_EQUAL(hf_ekm_reason_parse(""), HF_EKM_REASON_ABSENT);
    CU_ASSERT_EQUAL(hf_ekm_reason_parse(NULL), HF_EKM_REASON_ABSENT);
}

static void test_default_allows_every_reason_and_absence(void)
{
    struct hf_ekm_kaj_policy p = hf_ekm_kaj_default();

    for (int r = 0; r < HF_EKM_REASON_COUNT; r++)
        CU_ASSERT_TRUE(hf_ekm_kaj_allows(&p, r));
    CU_ASSERT_TRUE(hf_ekm_kaj_allows(&p, HF_EKM_REASON_ABSENT));
}

static void test_narrowed_policy_allows_only_its_reasons(void)
{
    struct hf_ekm_kaj_policy p = {0, false};
    char err[256];

    CU_ASSERT_TRUE_FATAL(
        hf_ekm_kaj_reasons_parse("CUSTOMER_INITIATED_ACCESS, 6", &p.allowed, err, sizeof(err)));
    for (int r = 0; r < HF_EKM_REASON_COUNT; r++)
        CU_ASSERT_EQUAL(hf_ekm_kaj_allows(&p, r), r == 5 || r == 6);
    CU_ASSERT_FALSE(hf_ekm_kaj_allows(&p, HF_EKM_REASON_ABSENT));
    p.absent_allowed = true;
    CU_ASSERT_TRUE(hf_ekm_kaj_allows(&p, HF_EKM_REASON_ABSENT));
    CU_ASSERT_TRUE(hf_ekm_kaj_allows(&p, 12) == hf_ekm_kaj_allows(&p, HF_EKM_REASON_ABSENT));
}

static void test_reason_lists_all_none_and_errors(void)
{
    uint32_t a = 0;
    char err[256] = "";

    CU_ASSERT_TRUE(hf_ekm_kaj_reasons_parse("all", &a, err, sizeof(err)));
    CU_ASSERT_EQUAL(a, 0xfffu);
    CU_ASSERT_TRUE(hf_ekm_kaj_reasons_parse("none", &a, err, sizeof(err)));
    CU_ASSERT_EQUAL(a, 0u);
    CU_ASSERT_TRUE(hf_ekm_kaj_reasons_parse(" 1 2,,3 ", &a, err, sizeof(err)));
    CU_ASSERT_EQUAL(a, 0xeu);
    CU_ASSERT_FALSE(
        hf_ekm_kaj_reasons_parse("CUSTOMER_INITIATED_ACCESS, BOGUS", &a, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "BOGUS"));
    CU_ASSERT_FALSE(hf_ekm_kaj_reasons_parse("12", &a, err, sizeof(err)));
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"reasons by name and number", test_reasons_by_name_and_number},
        {"unknown reasons are absent", test_unknown_reasons_are_absent},
        {"default allows every reason and absence", test_default_allows_every_reason_and_absence},
        {"narrowed policy allows only its reasons", test_narrowed_policy_allows_only_its_reasons},
        {"reason lists: all, none and errors", test_reason_lists_all_none_and_errors},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"ekm-kaj", NULL, NULL, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
