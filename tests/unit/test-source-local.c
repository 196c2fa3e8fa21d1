#include "hf-build.h"
#include "harness.h"

int main(void)
{
    static CU_SuiteInfo suites[] = {CU_SUITE_INFO_NULL};
    return hf_test_run(suites);
}
