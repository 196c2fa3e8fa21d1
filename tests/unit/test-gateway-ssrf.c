/* The SSRF guard's classifier (gateway/ssrf.c) over a table of addresses: what an outbound call
 * may reach, in every spelling an attacker could use, and what allow_cidrs opens. */
#include "hf-build.h"

#include "gateway/ssrf.h"
#include "tests/unit/harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static bool allowed(const char *addr, const char *const *allow, size_t nallow)
{
    struct sockaddr_storage ss;
    struct hf_cidr cidrs[8];
    socklen_t len;

    memset(&ss, 0, sizeof(ss));
    if (inet_pton(AF_INET, addr, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
        ss.ss_family = AF_INET;
        len = sizeof(struct sockaddr_in);
    } else {
        CU_ASSERT_EQUAL_FATAL(inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&ss)->sin6_addr),
                              1);
        ss.ss_family = AF_INET6;
        len = sizeof(struct sockaddr_in6);
    }
    for (size_t i = 0; i < nallow; i++)
        CU_ASSERT_TRUE_FATAL(hf_cidr_parse(allow[i], &cidrs[i]));
    return hf_ssrf_is_allowed((struct sockaddr *)&ss, len, cidrs, nallow);
}

static void test_refused_addresses(void)
{
    static const char *const refused[] = {
        "127.0.0.1", "127.255.255.254", "10.0.0.1", "10.255.255.255", "172.16.0.1",
        "172.31.255.255", "192.168.1.1", "169.254.169.254", "169.254.0.1", "100.64.0.1",
        "100.127.255.255", "0.0.0.0", "0.1.2.3", "224.0.0.1", "239.255.255.250", "255.255.255.255",
        "240.0.0.1", "192.0.0.170", "198.18.0.1", "::", "::1", "fc00::1", "fd12:3456::1", "fe80::1",
        "febf::1", "ff02::1", "fec0::1",
        /* IPv4 inside IPv6: mapped, compatible, NAT64, 6to4 */
        "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.1.2.3", "::127.0.0.1",
        "::ffff:0.0.0.0", "64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "2002:7f00:1::1",
        "2002:a9fe:a9fe::", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "::ffff:192.168.0.1"};

    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        if (allowed(refused[i], NULL, 0)) {
            fprintf(stderr, "\n  %s allowed\n", refused[i]);
            CU_FAIL("a refused address was allowed");
        }
}

static void test_public_addresses_are_allowed(void)
{
    static const char *const ok[] = {"8.8.8.8",          "142.250.180.10",
                                     "172.15.255.255",   "172.32.0.1",
                                     "100.63.255.255",   "100.128.0.1",
                                     "169.253.255.255",  "11.0.0.1",
                                     "223.255.255.255",  "2607:f8b0:4004:800::200e",
                                     "2a00:1450::1",     "::ffff:8.8.8.8",
                                     "64:ff9b::808:808", "2002:808:808::1"};

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (!allowed(ok[i], NULL, 0)) {
            fprintf(stderr, "\n  %s refused\n", ok[i]);
            CU_FAIL("a public address was refused");
        }
}

static void test_allow_cidrs_open_ranges(void)
{
    static const char *const lo[] = {"127.0.0.0/8", "::1/128"}, *const host[] = {"10.1.2.3"};
    static const char *const v6[] = {"fd00::/8"};

    CU_ASSERT_TRUE(allowed("127.0.0.1", lo, 2));
    CU_ASSERT_TRUE(allowed("::1", lo, 2));
    CU_ASSERT_TRUE(allowed("::ffff:127.0.0.1", lo, 2)); /* the mapped form of an allowed one */
    CU_ASSERT_FALSE(allowed("10.0.0.1", lo, 2));
    CU_ASSERT_FALSE(allowed("169.254.169.254", lo, 2));
    CU_ASSERT_TRUE(allowed("10.1.2.3", host, 1));
    CU_ASSERT_FALSE(allowed("10.1.2.4", host, 1));
    CU_ASSERT_TRUE(allowed("fd12::1", v6, 1));
    CU_ASSERT_FALSE(allowed("fc12::1", v6, 1));
    CU_ASSERT_FALSE(allowed("127.0.0.1", v6, 1));
}

static void test_cidr_parse(void)
{
    struct hf_cidr c;

    CU_ASSERT_TRUE(hf_cidr_parse("10.0.0.0/8", &c));
    CU_ASSERT_EQUAL(c.family, AF_INET);
    CU_ASSERT_EQUAL(c.prefix, 8);
    CU_ASSERT_TRUE(hf_cidr_parse("::1", &c));
    CU_ASSERT_EQUAL(c.prefix, 128);
    CU_ASSERT_TRUE(hf_cidr_parse("0.0.0.0/0", &c));
    CU_ASSERT_FALSE(hf_cidr_parse("10.0.0.0/33", &c));
    CU_ASSERT_FALSE(hf_cidr_parse("::/129", &c));
    CU_ASSERT_FALSE(hf_cidr_parse("10.0.0.0/", &c));
    CU_ASSERT_FALSE(hf_cidr_parse("10.0.0.0/8x", &c));
    CU_ASSERT_FALSE(hf_cidr_parse("10.0.0.0/-1", &c));
    CU_ASSERT_FALSE(hf_cidr_parse("localhost", &c));
    CU_ASSERT_FALSE(hf_cidr_parse("", &c));
    CU_ASSERT_FALSE(hf_cidr_parse("10.0.0/8", &c));
}

static CU_TestInfo ssrf_tests[] = {
    {"loopback, private, link-local, CGNAT, multicast, reserved and their IPv6 forms are refused",
     test_refused_addresses},
    {"public addresses are allowed", test_public_addresses_are_allowed},
    {"allow_cidrs opens exactly their ranges", test_allow_cidrs_open_ranges},
    {"CIDRs parse; bad ones are refused", test_cidr_parse},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-ssrf", NULL, NULL, NULL, NULL, ssrf_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
