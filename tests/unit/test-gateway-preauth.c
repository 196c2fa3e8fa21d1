/* Refusals before authentication (gateway/preauth.c): counted per (source, API, error name) in
 * a bounded table with one overflow key, one summary per key at each flush. Without the
 * vendor interface (no module here) a summary goes to the gateway's log, which this reads. */
#include "hf-build.h"

#include "gateway/preauth.h"
#include "gateway/request.h"
#include "tests/unit/gw-log.h"
#include "tests/unit/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A refused request of api with error name reason, as server.c settles one. */
static void refuse(const char *api, const char *reason, int times)
{
    for (int i = 0; i < times; i++) {
        struct hf_request *req = hf_request_new("POST", "/kms/xks/v1/keys/k1/encrypt");
        CU_ASSERT_PTR_NOT_NULL_FATAL(req);
        req->api = api;
        hf_request_fail(req, HF_STATUS_UNAUTHENTICATED, "SigV4: no");
        req->error_name = reason;
        CU_ASSERT_TRUE(hf_gw_preauth_is_refusal(req));
        hf_gw_preauth_count(req);
        hf_request_free(req);
    }
}

/* Summary lines written to the log since offset *at (moved past them): how many, and the sum of
 * their counts for reason (NULL: all), and whether one was the overflow key's. */
static size_t summaries_since(long *at, const char *reason, unsigned long *count, bool *overflow)
{
    FILE *f = fopen(hf_test_gw_log_path(), "r");
    char line[2048], want[96];
    size_t n = 0;

    *count = 0;
    *overflow = false;
    if (!f) return 0;
    fseek(f, *at, SEEK_SET);
    snprintf(want, sizeof(want), "%s: ", reason ? reason : "");
    while (fgets(line, sizeof(line), f)) {
        const char *m = strstr(line, "refused before authentication from ");
        const char *d = m ? strstr(m, "): ") : NULL;
        unsigned long c = 0;
        if (!d) continue;
        n++;
        if (strstr(m, "from overflow ")) *overflow = true;
        d += 3;
        if (reason && strncmp(d, want, strlen(want)) != 0) continue;
        if (sscanf(strchr(d, ':') + 2, "%lu requests", &c) == 1) *count += c;
    }
    *at = ftell(f);
    fclose(f);
    return n;
}

static void test_refusals_are_counted_into_one_summary_per_key(void)
{
    long at = 0;
    unsigned long count;
    bool overflow;

    CU_ASSERT_FATAL(hf_gw_preauth_start(3600000, 16));
    summaries_since(&at, NULL, &count, &overflow);
    refuse("aws-xks", "AuthenticationFailedException", 100);
    refuse("aws-xks", "InvalidUriPathException", 50);
    hf_gw_preauth_flush();
    CU_ASSERT_EQUAL(summaries_since(&at, "AuthenticationFailedException", &count, &overflow), 2);
    CU_ASSERT_EQUAL(count, 100);
    CU_ASSERT_FALSE(overflow);
    /* Counting starts afresh after a flush; stop writes what is left. */
    refuse("aws-xks", "InvalidUriPathException", 3);
    hf_gw_preauth_stop();
    CU_ASSERT_EQUAL(summaries_since(&at, "InvalidUriPathException", &count, &overflow), 1);
    CU_ASSERT_EQUAL(count, 3);
}

static void test_keys_past_the_limit_share_one_overflow_key(void)
{
    long at = 0;
    unsigned long count;
    bool overflow;
    char reason[32];

    summaries_since(&at, NULL, &count, &overflow);
    CU_ASSERT_FATAL(hf_gw_preauth_start(3600000, 16));
    for (int i = 0; i < 40; i++) {
        snprintf(reason, sizeof(reason), "Reason%02d", i);
        refuse("test", reason, 2);
    }
    hf_gw_preauth_stop();
    /* 16 keys of their own, and one for the 24 that did not fit. */
    CU_ASSERT_EQUAL(summaries_since(&at, NULL, &count, &overflow), 17);
    CU_ASSERT_TRUE(overflow);
    at = 0;
    summaries_since(&at, "various", &count, &overflow);
    CU_ASSERT_EQUAL(count, 48);
}

static void test_an_authenticated_failure_is_no_refusal(void)
{
    struct hf_request *req = hf_request_new("POST", "/x");

    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_FALSE(hf_gw_preauth_is_refusal(req)); /* not failed */
    hf_request_fail(req, HF_STATUS_DENIED, "no");
    CU_ASSERT_TRUE(hf_gw_preauth_is_refusal(req));
    hf_request_set_authenticated(req);
    CU_ASSERT_FALSE(hf_gw_preauth_is_refusal(req));
    hf_request_free(req);
}

static CU_TestInfo preauth_tests[] = {
    {"refusals are counted into one summary per key",
     test_refusals_are_counted_into_one_summary_per_key},
    {"keys past the limit share one overflow key", test_keys_past_the_limit_share_one_overflow_key},
    {"an authenticated failure is no refusal", test_an_authenticated_failure_is_no_refusal},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-preauth", hf_test_gw_log_init, hf_test_gw_log_clean, NULL, NULL, preauth_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
