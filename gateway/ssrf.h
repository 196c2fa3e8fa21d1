/* The SSRF guard's address classifier: which addresses an outbound call may connect to. Pure
 * (no I/O, no state), so its table is unit-tested on its own (tests/unit/test-gateway-ssrf.c). */
#ifndef HF_GATEWAY_SSRF_H
#define HF_GATEWAY_SSRF_H

#include <stdbool.h>
#include <stddef.h>

#include <sys/socket.h>

/* An address range; IPv4 ranges are kept as IPv4 (family AF_INET, 4 bytes used). */
struct hf_cidr {
    int family; /* AF_INET or AF_INET6 */
    unsigned char addr[16];
    unsigned prefix;
};

/* "a.b.c.d/n", "x::y/n", or a bare address (a host route). false for anything else. */
bool hf_cidr_parse(const char *text, struct hf_cidr *out);

/* True when an outbound call may connect to sa: a public unicast address, or one inside
 * allow[0..nallow). Loopback, RFC 1918, CGNAT, link-local (the cloud metadata address among
 * them), unique-local, multicast, unspecified, reserved and broadcast addresses are refused, also
 * when written as an IPv4-mapped, IPv4-compatible, NAT64 or 6to4 IPv6 address. */
bool hf_ssrf_is_allowed(const struct sockaddr *sa, socklen_t salen, const struct hf_cidr *allow,
                        size_t nallow);

#endif /* HF_GATEWAY_SSRF_H */
