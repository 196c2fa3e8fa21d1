/* GetHealthStatus's ekmFleetDetails for HSM pool members (aws-xks health-fleet.c): the spec's
 * healthStatus of each member, its id and model, and the spec's cap of ten entries. */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/health-fleet.h"
#include "tests/unit/harness.h"

#include <stdio.h>
#include <string.h>

static HF_POOL_MEMBER_STATUS member(const char *pool, const char *name, bool healthy)
{
    HF_POOL_MEMBER_STATUS m;

    memset(&m, 0, sizeof(m));
    snprintf(m.pool, sizeof(m.pool), "%s", pool);
    snprintf(m.member, sizeof(m.member), "%s", name);
    snprintf(m.model, sizeof(m.model), "libsofthsm2.so token pool-%s", name);
    m.healthy = healthy ? CK_TRUE : CK_FALSE;
    m.concurrency = 2;
    m.queue_max = 256;
    return m;
}

static void test_health_status_of_a_member(void)
{
    HF_POOL_MEMBER_STATUS m = member("p1", "a", true);

    CU_ASSERT_STRING_EQUAL(hf_xks_fleet_status(&m), "ACTIVE");
    m.in_flight = 2; /* at its limit, nobody waiting: still ACTIVE */
    CU_ASSERT_STRING_EQUAL(hf_xks_fleet_status(&m), "ACTIVE");
    m.queue_waiting = 3; /* at its limit with callers queued: serving, but strained */
    CU_ASSERT_STRING_EQUAL(hf_xks_fleet_status(&m), "DEGRADED");
    m.healthy = CK_FALSE;
    CU_ASSERT_STRING_EQUAL(hf_xks_fleet_status(&m), "UNAVAILABLE");
    m = member("p1", "a", true);
    m.open_result = CKR_DEVICE_ERROR; /* the pool cannot be opened on this node */
    CU_ASSERT_STRING_EQUAL(hf_xks_fleet_status(&m), "UNAVAILABLE");
}

static void test_entries_and_the_cap_of_ten(void)
{
    HF_POOL_MEMBER_STATUS m[12];
    struct json_object *fleet = json_object_new_array(), *e, *v;
    size_t dropped = 99;
    char name[8];

    CU_ASSERT_PTR_NOT_NULL_FATAL(fleet);
    /* The module's own token is the first entry already. */
    json_object_array_add(fleet, json_object_new_object());
    for (size_t i = 0; i < 12; i++) {
        snprintf(name, sizeof(name), "m%zu", i);
        m[i] = member("p1", name, i != 1);
    }
    CU_ASSERT_TRUE(hf_xks_fleet_add_pools(fleet, m, 12, &dropped));
    CU_ASSERT_EQUAL(json_object_array_length(fleet), HF_XKS_FLEET_MAX);
    CU_ASSERT_EQUAL(dropped, 3);
    e = json_object_array_get_idx(fleet, 1);
    CU_ASSERT_TRUE(json_object_object_get_ex(e, "id", &v));
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "p1/m0");
    CU_ASSERT_TRUE(json_object_object_get_ex(e, "model", &v));
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "libsofthsm2.so token pool-m0");
    CU_ASSERT_TRUE(json_object_object_get_ex(e, "healthStatus", &v));
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "ACTIVE");
    e = json_object_array_get_idx(fleet, 2);
    CU_ASSERT_TRUE(json_object_object_get_ex(e, "healthStatus", &v));
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "UNAVAILABLE");
    json_object_put(fleet);
}

static CU_TestInfo fleet_tests[] = {
    {"a member's healthStatus", test_health_status_of_a_member},
    {"one entry per member, ten in all at most", test_entries_and_the_cap_of_ten},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"xks-fleet", NULL, NULL, NULL, NULL, fleet_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
