/* The SSRF guard's classifier. An IPv6 address that carries an IPv4 one (mapped, compatible,
 * NAT64, 6to4) is judged by the IPv4 address too: otherwise ::ffff:127.0.0.1 or
 * 64:ff9b::a9fe:a9fe would reach loopback or the metadata service past an IPv4-only table. */
#include "hf-build.h"

#include "gateway/ssrf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Ranges no outbound call reaches unless allowed (RFC 6890 special-purpose registries). */
static const char *const refused_text[] = {
    "0.0.0.0/8",      /* "this network", 0.0.0.0 reaches loopback on Linux */
    "10.0.0.0/8",     /* RFC 1918 */
    "100.64.0.0/10",  /* CGNAT, RFC 6598 */
    "127.0.0.0/8",    /* loopback */
    "169.254.0.0/16", /* link-local, 169.254.169.254 the cloud metadata service */
    "172.16.0.0/12",  /* RFC 1918 */
    "192.0.0.0/24",   /* IETF protocol assignments (some are metadata-like services) */
    "192.168.0.0/16", /* RFC 1918 */
    "198.18.0.0/15",  /* benchmarking */
    "224.0.0.0/4",    /* multicast */
    "240.0.0.0/4",    /* reserved, 255.255.255.255 broadcast among them */
    "::/128",         /* unspecified */
    "::1/128",        /* loopback */
    "::/96",          /* deprecated IPv4-compatible, and the rest of the reserved ::/8 */
    "100::/64",       /* discard-only */
    "2001::/32",      /* Teredo: its IPv4 address is obfuscated, so the whole range */
    "fc00::/7",       /* unique local */
    "fe80::/10",      /* link-local */
    "fec0::/10",      /* deprecated site-local, still routed inside some networks */
    "ff00::/8",       /* multicast */
};
#define NREFUSED (sizeof(refused_text) / sizeof(refused_text[0]))

static struct hf_cidr refused[NREFUSED];
static pthread_once_t refused_once = PTHREAD_ONCE_INIT;

static void refused_init(void)
{
    for (size_t i = 0; i < NREFUSED; i++)
        if (!hf_cidr_parse(refused_text[i], &refused[i])) abort(); /* a typo in the table */
}

bool hf_cidr_parse(const char *text, struct hf_cidr *out)
{
    char buf[INET6_ADDRSTRLEN + 8];
    const char *slash;
    size_t addrlen;
    unsigned long prefix;
    char *end;
    unsigned max;

    if (!text || !out) return false;
    slash = strchr(text, '/');
    addrlen = slash ? (size_t)(slash - text) : strlen(text);
    if (addrlen == 0 || addrlen >= INET6_ADDRSTRLEN) return false;
    memcpy(buf, text, addrlen);
    buf[addrlen] = '\0';
    memset(out, 0, sizeof(*out));
    if (inet_pton(AF_INET, buf, out->addr) == 1)
        out->family = AF_INET, max = 32;
    else if (inet_pton(AF_INET6, buf, out->addr) == 1)
        out->family = AF_INET6, max = 128;
    else
        return false;
    out->prefix = max;
    if (!slash) return true;
    if (slash[1] < '0' || slash[1] > '9') return false;
    prefix = strtoul(slash + 1, &end, 10);
    if (*end != '\0' || prefix > max) return false;
    out->prefix = (unsigned)prefix;
    return true;
}

static bool cidr_holds(const struct hf_cidr *c, int family, const unsigned char *addr)
{
    unsigned whole = c->prefix / 8, rest = c->prefix % 8;

    if (c->family != family) return false;
    if (memcmp(c->addr, addr, whole) != 0) return false;
    if (rest == 0) return true;
    return ((c->addr[whole] ^ addr[whole]) & (unsigned char)(0xff << (8 - rest))) == 0;
}

static bool prefix_is(const unsigned char *a, const unsigned char *p, size_t n)
{
    return memcmp(a, p, n) == 0;
}

/* The IPv4 address an IPv6 one carries, if it is of a form that reaches IPv4 hosts. */
static bool embedded_v4(const unsigned char *a6, unsigned char v4[4])
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char compat[12] = {0};
    static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b};
    static const unsigned char six2four[2] = {0x20, 0x02};

    if (prefix_is(a6, mapped, 12) || prefix_is(a6, nat64, 12) ||
        (prefix_is(a6, compat, 12) && (a6[12] | a6[13] | a6[14]) != 0)) {
        memcpy(v4, a6 + 12, 4);
        return true;
    }
    if (prefix_is(a6, six2four, 2)) {
        memcpy(v4, a6 + 2, 4);
        return true;
    }
    return false;
}

static bool in_list(const struct hf_cidr *list, size_t n, int family, const unsigned char *addr)
{
    for (size_t i = 0; i < n; i++)
        if (cidr_holds(&list[i], family, addr)) return true;
    return false;
}

bool hf_ssrf_is_allowed(const struct sockaddr *sa, socklen_t salen, const struct hf_cidr *allow,
                        size_t nallow)
{
    const unsigned char *addr;
    unsigned char v4[4];
    bool has_v4 = false;
    int family;

    if (!sa) return false;
    pthread_once(&refused_once, refused_init);
    if (sa->sa_family == AF_INET && salen >= (socklen_t)sizeof(struct sockaddr_in)) {
        family = AF_INET;
        addr = (const unsigned char *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    } else if (sa->sa_family == AF_INET6 && salen >= (socklen_t)sizeof(struct sockaddr_in6)) {
        family = AF_INET6;
        addr = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
        has_v4 = embedded_v4(addr, v4);
    } else {
        return false;
    }
    if (in_list(allow, nallow, family, addr) || (has_v4 && in_list(allow, nallow, AF_INET, v4)))
        return true;
    if (in_list(refused, NREFUSED, family, addr)) return false;
    return !(has_v4 && in_list(refused, NREFUSED, AF_INET, v4));
}
