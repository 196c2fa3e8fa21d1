#include "hf-build.h"

#include "harness.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#ifdef HAVE_VALGRIND_VALGRIND_H
#include <valgrind/valgrind.h>
#endif

bool hf_test_under_valgrind(void)
{
#ifdef HAVE_VALGRIND_VALGRIND_H
    return RUNNING_ON_VALGRIND != 0;
#else
    return false;
#endif
}

int hf_test_rounds(int n)
{
    if (hf_test_under_valgrind()) return n / 8 > 2 ? n / 8 : 2;
    return n;
}

int hf_test_run(CU_SuiteInfo *suites)
{
    unsigned failures;

    if (CU_initialize_registry() != CUE_SUCCESS) {
        fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
        return 1;
    }
    if (CU_register_suites(suites) != CUE_SUCCESS) {
        fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
        CU_cleanup_registry();
        return 1;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    /* A suite whose init failed runs nothing: count it as a failure, not a pass. */
    failures = CU_get_number_of_failures() + CU_get_number_of_suites_failed();
    CU_cleanup_registry();
    return failures == 0 ? 0 : 1;
}
