/* hf_https_request through libcurl. Everything an attacker who controls a URL, a DNS answer or
 * a peer could use is closed here, once, for every plugin: other schemes, redirects, proxies
 * from the environment, TLS below 1.2, unverified peers, slow or endless replies, and addresses
 * inside the organisation's network (the SSRF guard, applied to the address libcurl is about to
 * connect to: a DNS answer that changes between a check and the connect cannot slip past). */
#include "hf-build.h"

#include "gateway/outbound.h"
#include "gateway/ssrf.h"
#include "gateway/why.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#define DEFAULT_CONNECT_MS 2000u
#define DEFAULT_TOTAL_MS 5000u
#define DEFAULT_MAX_RESPONSE (64u << 10)
#define MAX_ALLOW_CIDRS 64u

/* One transfer's state, seen by the callbacks. */
struct transfer {
    struct hf_cidr allow[MAX_ALLOW_CIDRS];
    size_t nallow;
    bool guard_refused;
    char refused_addr[64];
    size_t max_response;
    bool too_large;
    char *body;
    size_t len, cap;
};

bool hf_outbound_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

void hf_outbound_global_cleanup(void)
{
    curl_global_cleanup();
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct transfer *t = arg;
    size_t n = size * nmemb, want;
    char *grown;

    if (n > t->max_response - t->len) {
        t->too_large = true;
        return 0; /* CURLE_WRITE_ERROR: the rest is never read */
    }
    if (t->len + n + 1 > t->cap) {
        want = t->cap ? t->cap * 2 : 4096;
        while (want < t->len + n + 1)
            want *= 2;
        if (want > t->max_response + 1) want = t->max_response + 1;
        /* Not realloc: a reply may hold key material (CSE rewrap), and realloc would leave
         * the old copy in freed memory. */
        if (!(grown = malloc(want))) return 0;
        if (t->body) {
            memcpy(grown, t->body, t->len);
            OPENSSL_clear_free(t->body, t->cap);
        }
        t->body = grown;
        t->cap = want;
    }
    memcpy(t->body + t->len, data, n);
    t->len += n;
    t->body[t->len] = '\0';
    return n;
}

static curl_socket_t on_open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct transfer *t = arg;
    char host[INET6_ADDRSTRLEN] = "?";
    const void *in;

    if (purpose != CURLSOCKTYPE_IPCXN) return CURL_SOCKET_BAD;
    if (!hf_ssrf_is_allowed(&a->addr, a->addrlen, t->allow, t->nallow)) {
        in = a->family == AF_INET6
                 ? (const void *)&((const struct sockaddr_in6 *)(const void *)&a->addr)->sin6_addr
                 : (const void *)&((const struct sockaddr_in *)(const void *)&a->addr)->sin_addr;
        inet_ntop(a->family, in, host, sizeof(host));
        t->guard_refused = true;
        snprintf(t->refused_addr, sizeof(t->refused_addr), "%s", host);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static bool allow_list_parse(const struct hf_outbound_policy *p, struct transfer *t, char *why,
                             size_t whylen)
{
    if (p->nallow_cidrs > MAX_ALLOW_CIDRS) {
        hf_why(why, whylen, "more than %u allowed CIDRs", MAX_ALLOW_CIDRS);
        return false;
    }
    for (size_t i = 0; i < p->nallow_cidrs; i++)
        if (!hf_cidr_parse(p->allow_cidrs[i], &t->allow[i])) {
            hf_why(why, whylen, "allowed CIDR %zu is not an address or a CIDR", i + 1);
            return false;
        }
    t->nallow = p->nallow_cidrs;
    return true;
}

/* The scheme from libcurl's own URL parser, so what we check is what it will use. */
static bool url_is_https(const char *url)
{
    CURLU *u = curl_url();
    char *scheme = NULL;
    bool ok;

    if (!u) return false;
    ok = curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
         curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
         strcasecmp(scheme, "https") == 0;
    curl_free(scheme);
    curl_url_cleanup(u);
    return ok;
}

/* "max-age=N" among the Cache-Control directives (RFC 9111 section 5.2.2.1); no-store and
 * no-cache count as 0 (refresh as soon as allowed). */
static long cache_max_age(CURL *c)
{
    struct curl_header *h = NULL;
    const char *v, *p;
    long age = -1;

    if (curl_easy_header(c, "Cache-Control", 0, CURLH_HEADER, -1, &h) != CURLHE_OK) return -1;
    for (v = h->value; *v; v = p) {
        while (*v == ' ' || *v == ',' || *v == '\t')
            v++;
        p = v + strcspn(v, ",");
        if (strncasecmp(v, "max-age=", 8) == 0 && v[8] >= '0' && v[8] <= '9')
            age = strtol(v + 8, NULL, 10);
        else if (strncasecmp(v, "no-store", 8) == 0 || strncasecmp(v, "no-cache", 8) == 0)
            return 0;
    }
    return age;
}

static bool set_options(CURL *c, const struct hf_outbound_policy *p, const char *method,
                        const char *url, struct curl_slist *hdrs, const void *req_body,
                        size_t req_len, struct transfer *t)
{
    bool ok = true;

#define SET(opt, val) ok = ok && curl_easy_setopt(c, opt, val) == CURLE_OK
    SET(CURLOPT_URL, url);
    SET(CURLOPT_PROTOCOLS_STR, "https");
    SET(CURLOPT_REDIR_PROTOCOLS_STR, "https");
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_PROXY, ""); /* a proxy from the environment would be what the guard sees */
    SET(CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    SET(CURLOPT_SSL_VERIFYPEER, 1L);
    SET(CURLOPT_SSL_VERIFYHOST, 2L);
    if (p->ca_file) SET(CURLOPT_CAINFO, p->ca_file);
    SET(CURLOPT_CONNECTTIMEOUT_MS,
        (long)(p->connect_timeout_ms ? p->connect_timeout_ms : DEFAULT_CONNECT_MS));
    SET(CURLOPT_TIMEOUT_MS, (long)(p->total_timeout_ms ? p->total_timeout_ms : DEFAULT_TOTAL_MS));
    SET(CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for DNS timeouts */
    SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)t->max_response);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, t);
    SET(CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    SET(CURLOPT_OPENSOCKETDATA, t);
    SET(CURLOPT_HTTPHEADER, hdrs);
    if (req_body || strcmp(method, "POST") == 0) {
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req_len);
        SET(CURLOPT_POSTFIELDS, req_body ? req_body : "");
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
        SET(CURLOPT_CUSTOMREQUEST, method);
#undef SET
    return ok;
}

static enum hf_status status_from_curl(CURLcode rc, const struct transfer *t, const char *errbuf,
                                       char *why, size_t whylen)
{
    if (t->guard_refused) {
        hf_why(why, whylen, "address %s refused by the SSRF guard", t->refused_addr);
        return HF_STATUS_DENIED;
    }
    if (t->too_large || rc == CURLE_FILESIZE_EXCEEDED) {
        hf_why(why, whylen, "reply over %zu bytes", t->max_response);
        return HF_STATUS_TOO_LARGE;
    }
    hf_why(why, whylen, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
    switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
        return HF_STATUS_TIMEOUT;
    case CURLE_UNSUPPORTED_PROTOCOL:
        return HF_STATUS_DENIED;
    case CURLE_OUT_OF_MEMORY:
        return HF_STATUS_INTERNAL;
    default:
        return HF_STATUS_UNAVAILABLE;
    }
}

enum hf_status hf_https_fetch(const struct hf_outbound_policy *policy, const char *method,
                              const char *url, const char *const *headers, size_t nheaders,
                              const void *req_body, size_t req_len, long *http_status, char **body,
                              size_t *body_len, long *max_age_s, char *why, size_t whylen)
{
    static const struct hf_outbound_policy defaults;
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = NULL, *more;
    struct transfer *t = NULL;
    enum hf_status st = HF_STATUS_INTERNAL;
    CURL *c = NULL;
    CURLcode rc;

    if (why && whylen) why[0] = '\0';
    if (!method || !url || !http_status || !body || !body_len) {
        hf_why(why, whylen, "bad arguments");
        return HF_STATUS_INTERNAL;
    }
    *body = NULL;
    *body_len = 0;
    if (max_age_s) *max_age_s = -1;
    if (!policy) policy = &defaults;
    if (!url_is_https(url)) {
        hf_why(why, whylen, "not an https URL");
        return HF_STATUS_DENIED;
    }
    if (!(t = calloc(1, sizeof(*t)))) goto done;
    t->max_response = policy->max_response ? policy->max_response : DEFAULT_MAX_RESPONSE;
    if (!allow_list_parse(policy, t, why, whylen)) goto done;
    for (size_t i = 0; i < nheaders; i++) {
        if (!(more = curl_slist_append(hdrs, headers[i]))) goto done;
        hdrs = more;
    }
    if (!(c = curl_easy_init())) goto done;
    if (!set_options(c, policy, method, url, hdrs, req_body, req_len, t) ||
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK) {
        hf_why(why, whylen, "libcurl refused an option");
        goto done;
    }
    if ((rc = curl_easy_perform(c)) != CURLE_OK) {
        st = status_from_curl(rc, t, errbuf, why, whylen);
        goto done;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, http_status);
    if (max_age_s) *max_age_s = cache_max_age(c);
    if (!t->body && !(t->body = calloc(1, 1))) goto done;
    *body = t->body;
    *body_len = t->len;
    t->body = NULL;
    st = HF_STATUS_OK;
done:
    if (st == HF_STATUS_INTERNAL && why && whylen && !why[0]) hf_why(why, whylen, "out of memory");
    curl_easy_cleanup(c);
    curl_slist_free_all(hdrs);
    if (t) OPENSSL_clear_free(t->body, t->cap);
    free(t);
    return st;
}

HF_PLUGIN_EXPORT enum hf_status
hf_https_request(const struct hf_outbound_policy *policy, const char *method, const char *url,
                 const char *const *headers, size_t nheaders, const void *req_body, size_t req_len,
                 long *http_status, char **body, size_t *body_len, char *why, size_t whylen)
{
    return hf_https_fetch(policy, method, url, headers, nheaders, req_body, req_len, http_status,
                          body, body_len, NULL, why, whylen);
}
