/* hf_https_request (gateway/outbound.c) against `openssl s_server -HTTP` on loopback, with a
 * throw-away CA and certificate made here: verified with ca_file, refused without it, refused
 * for loopback unless allow_cidrs lists it, the host name checked, the size cap, the total
 * timeout against a peer that never answers, non-https refused; and a JWKS served with
 * Cache-Control. */
#include "hf-build.h"

#include "gateway/jwks.h"
#include "gateway/outbound.h"
#include "tests/unit/harness.h"
#include "tests/unit/jwt-mint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Under valgrind a TLS handshake alone can take seconds: only the timeout case keeps a short
 * limit. */
#define RUN_MS 60000u

static char dir[64], ca[128], base[64];
static pid_t server = -1;
static int silent_fd = -1, silent_port;
static const char *const loopback[] = {"127.0.0.0/8", "::1/128"};

static int free_port(int *fd_out)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    port = ntohs(a.sin_port);
    if (fd_out) {
        *fd_out = fd; /* kept: a listener that accepts and never answers */
        listen(fd, 8);
    } else {
        close(fd);
    }
    return port;
}

static bool write_file(const char *name, const char *headers, const char *body, size_t len)
{
    char path[192];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (!(f = fopen(path, "w"))) return false;
    /* "-" as headers: no Content-Length, so the body ends with the connection and only the
     * size seen while reading can stop it. */
    if (strcmp(headers, "-") == 0)
        fprintf(f, "HTTP/1.0 200 OK\r\n\r\n");
    else
        fprintf(f, "HTTP/1.0 200 OK\r\n%sContent-Length: %zu\r\n\r\n", headers, len);
    fwrite(body, 1, len, f);
    return fclose(f) == 0;
}

static bool make_certs(void)
{
    char cmd[2048];

    snprintf(cmd, sizeof(cmd),
             "cd '%s' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
             "-keyout ca.key -out ca.pem -subj /CN=hf-test-ca -days 1 "
             "-addext basicConstraints=critical,CA:TRUE 2>/dev/null && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key "
             "-out srv.csr -subj /CN=127.0.0.1 2>/dev/null && "
             "printf 'subjectAltName=IP:127.0.0.1\\n' > ext.cnf && "
             "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 "
             "-extfile ext.cnf -out srv.pem 2>/dev/null && "
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
             "-keyout other.key -out other.pem -subj /CN=hf-other-ca -days 1 2>/dev/null",
             dir);
    return system(cmd) == 0;
}

static bool server_is_up(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

    for (int i = 0; i < 200; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        bool up = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;

        close(fd);
        if (up) return true;
        usleep(25000);
    }
    return false;
}

static int suite_init(void)
{
    char accept[32], big[100000];
    int port;

    snprintf(dir, sizeof(dir), "/tmp/hf-outbound-XXXXXX");
    if (!mkdtemp(dir) || !make_certs()) return -1;
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    memset(big, 'x', sizeof(big));
    if (!write_file("hello", "", "hello", 5) || !write_file("big", "", big, sizeof(big)) ||
        !write_file("big-unsized", "-", big, sizeof(big)))
        return -1;
    if ((port = free_port(NULL)) < 0 || (silent_port = free_port(&silent_fd)) < 0) return -1;
    snprintf(base, sizeof(base), "https://127.0.0.1:%d", port);
    snprintf(accept, sizeof(accept), "127.0.0.1:%d", port);
    if ((server = fork()) == 0) {
        if (chdir(dir) != 0) _exit(127);
        execlp("openssl", "openssl", "s_server", "-quiet", "-HTTP", "-accept", accept, "-cert",
               "srv.pem", "-key", "srv.key", (char *)NULL);
        _exit(127);
    }
    return server > 0 && server_is_up(port) ? 0 : -1;
}

static int suite_clean(void)
{
    char cmd[128];

    if (server > 0) {
        kill(server, SIGTERM);
        waitpid(server, NULL, 0);
    }
    if (silent_fd >= 0) close(silent_fd);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static enum hf_status get(const struct hf_outbound_policy *p, const char *url, long *status,
                          char **body, size_t *len)
{
    char why[256] = "";
    enum hf_status st =
        hf_https_request(p, "GET", url, NULL, 0, NULL, 0, status, body, len, why, sizeof(why));

    if (st != HF_STATUS_OK) {
        CU_ASSERT(why[0] != '\0');
        CU_ASSERT_PTR_NULL(*body);
    }
    return st;
}

static char *url(const char *host, const char *path)
{
    static char buf[256];

    snprintf(buf, sizeof(buf), "%s%s", host ? host : base, path);
    return buf;
}

static void test_verified_with_ca_file(void)
{
    struct hf_outbound_policy p = {
        .ca_file = ca, .allow_cidrs = loopback, .nallow_cidrs = 2, .total_timeout_ms = RUN_MS};
    const char *hdr[] = {"Accept: text/plain"};
    char *body = NULL, why[128];
    size_t len = 0;
    long status = 0;

    CU_ASSERT_EQUAL_FATAL(get(&p, url(NULL, "/hello"), &status, &body, &len), HF_STATUS_OK);
    CU_ASSERT_EQUAL(status, 200);
    CU_ASSERT_EQUAL(len, 5);
    CU_ASSERT_STRING_EQUAL(body, "hello");
    free(body);
    body = NULL;
    CU_ASSERT_EQUAL(hf_https_request(&p, "GET", url(NULL, "/hello"), hdr, 1, NULL, 0, &status,
                                     &body, &len, why, sizeof(why)),
                    HF_STATUS_OK);
    free(body);
}

static void test_refused_without_trust(void)
{
    struct hf_outbound_policy p = {
        .allow_cidrs = loopback, .nallow_cidrs = 2, .total_timeout_ms = RUN_MS};
    char *body = NULL, other[192];
    size_t len;
    long status;

    /* The system's trust store does not hold the test's CA. */
    CU_ASSERT_EQUAL(get(&p, url(NULL, "/hello"), &status, &body, &len), HF_STATUS_UNAVAILABLE);
    /* A CA that did not sign the server's certificate. */
    snprintf(other, sizeof(other), "%s/other.pem", dir);
    p.ca_file = other;
    CU_ASSERT_EQUAL(get(&p, url(NULL, "/hello"), &status, &body, &len), HF_STATUS_UNAVAILABLE);
}

static void test_host_name_is_verified(void)
{
    struct hf_outbound_policy p = {
        .ca_file = ca, .allow_cidrs = loopback, .nallow_cidrs = 2, .total_timeout_ms = RUN_MS};
    char host[64], *body = NULL;
    size_t len;
    long status;

    /* The certificate names 127.0.0.1 only: "localhost" reaches the same server and fails. */
    snprintf(host, sizeof(host), "https://localhost:%s", strrchr(base, ':') + 1);
    CU_ASSERT_EQUAL(get(&p, url(host, "/hello"), &status, &body, &len), HF_STATUS_UNAVAILABLE);
}

static void test_loopback_needs_allow_cidrs(void)
{
    static const char *const v6only[] = {"::1/128"}, *const garbage[] = {"not-a-cidr"};
    struct hf_outbound_policy p = {.ca_file = ca, .total_timeout_ms = RUN_MS};
    char *body = NULL, why[256] = "";
    size_t len;
    long status;

    CU_ASSERT_EQUAL(hf_https_request(&p, "GET", url(NULL, "/hello"), NULL, 0, NULL, 0, &status,
                                     &body, &len, why, sizeof(why)),
                    HF_STATUS_DENIED);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "SSRF"));
    p.allow_cidrs = v6only;
    p.nallow_cidrs = 1;
    CU_ASSERT_EQUAL(get(&p, url(NULL, "/hello"), &status, &body, &len), HF_STATUS_DENIED);
    p.allow_cidrs = garbage;
    CU_ASSERT_NOT_EQUAL(get(&p, url(NULL, "/hello"), &status, &body, &len), HF_STATUS_OK);
}

static void test_size_cap(void)
{
    struct hf_outbound_policy p = {
        .ca_file = ca, .allow_cidrs = loopback, .nallow_cidrs = 2, .total_timeout_ms = RUN_MS};
    char *body = NULL;
    size_t len;
    long status;

    /* The default cap (64 KiB) and a set one, both under the 100000-byte reply. */
    CU_ASSERT_EQUAL(get(&p, url(NULL, "/big"), &status, &body, &len), HF_STATUS_TOO_LARGE);
    CU_ASSERT_EQUAL(get(&p, url(NULL, "/big-unsized"), &status, &body, &len), HF_STATUS_TOO_LARGE);
    p.max_response = 4;
    CU_ASSERT_EQUAL(get(&p, url(NULL, "/hello"), &status, &body, &len), HF_STATUS_TOO_LARGE);
    p.max_response = 200000;
    CU_ASSERT_EQUAL_FATAL(get(&p, url(NULL, "/big"), &status, &body, &len), HF_STATUS_OK);
    CU_ASSERT_EQUAL(len, 100000);
    free(body);
}

static void test_timeout(void)
{
    struct hf_outbound_policy p = {
        .ca_file = ca, .allow_cidrs = loopback, .nallow_cidrs = 2, .total_timeout_ms = 400};
    struct timespec t0, t1;
    char host[64], *body = NULL;
    size_t len;
    long status;
    double s;

    snprintf(host, sizeof(host), "https://127.0.0.1:%d", silent_port);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CU_ASSERT_EQUAL(get(&p, url(host, "/"), &status, &body, &len), HF_STATUS_TIMEOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CU_ASSERT(s >= 0.35 && s < 3.0);
}

static void test_only_https(void)
{
    struct hf_outbound_policy p = {
        .ca_file = ca, .allow_cidrs = loopback, .nallow_cidrs = 2, .total_timeout_ms = RUN_MS};
    char plain[64], *body = NULL;
    size_t len;
    long status;

    snprintf(plain, sizeof(plain), "http://%s", base + 8);
    CU_ASSERT_EQUAL(get(&p, url(plain, "/hello"), &status, &body, &len), HF_STATUS_DENIED);
    CU_ASSERT_EQUAL(get(&p, "ftp://127.0.0.1/x", &status, &body, &len), HF_STATUS_DENIED);
    CU_ASSERT_EQUAL(get(&p, "file:///etc/passwd", &status, &body, &len), HF_STATUS_DENIED);
    CU_ASSERT_EQUAL(get(&p, "not a url", &status, &body, &len), HF_STATUS_DENIED);
}

static void test_jwks_over_https(void)
{
    struct hf_outbound_policy p = {
        .ca_file = ca, .allow_cidrs = loopback, .nallow_cidrs = 2, .total_timeout_ms = RUN_MS};
    EVP_PKEY *k = hf_test_key_p256();
    char *jwk = hf_test_jwk(k, "k1"), doc[1024], why[256] = "";
    struct hf_jwks_source *src;
    struct hf_jwks *set = NULL;
    long max_age = 0;

    snprintf(doc, sizeof(doc), "{\"keys\":[%s]}", jwk);
    CU_ASSERT_TRUE_FATAL(write_file(
        "jwks", "Cache-Control: public, max-age=19523, must-revalidate\r\n", doc, strlen(doc)));
    CU_ASSERT_TRUE_FATAL(
        write_file("jwks-nostore", "Cache-Control: no-store\r\n", doc, strlen(doc)));
    CU_ASSERT_TRUE(hf_jwks_load(url(NULL, "/jwks"), &p, &set, &max_age, why, sizeof(why)));
    CU_ASSERT_EQUAL(max_age, 19523);
    CU_ASSERT_PTR_NOT_NULL(hf_jwks_find(set, "k1"));
    hf_jwks_unref(set);
    CU_ASSERT_TRUE(hf_jwks_load(url(NULL, "/jwks-nostore"), &p, &set, &max_age, why, sizeof(why)));
    CU_ASSERT_EQUAL(max_age, 0);
    hf_jwks_unref(set);
    CU_ASSERT_TRUE(hf_jwks_load(url(NULL, "/hello"), &p, &set, &max_age, why, sizeof(why)) ==
                   false);
    /* A source over https: loaded at once; one whose URL fails starts empty, not refused. */
    CU_ASSERT_PTR_NOT_NULL_FATAL(
        src = hf_jwks_source_new(url(NULL, "/jwks"), &p, 3600, why, sizeof(why)));
    CU_ASSERT_EQUAL(hf_jwks_source_loads(src), 1);
    hf_jwks_source_free(src);
    p.nallow_cidrs = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(
        src = hf_jwks_source_new(url(NULL, "/jwks"), &p, 3600, why, sizeof(why)));
    CU_ASSERT_EQUAL(hf_jwks_source_loads(src), 0);
    CU_ASSERT_PTR_NULL(hf_jwks_source_get(src));
    hf_jwks_source_free(src);
    free(jwk);
    EVP_PKEY_free(k);
}

static CU_TestInfo outbound_tests[] = {
    {"a peer verified through ca_file answers", test_verified_with_ca_file},
    {"without the right trust anchor the call fails", test_refused_without_trust},
    {"the host name is verified", test_host_name_is_verified},
    {"loopback is refused unless allow_cidrs lists it", test_loopback_needs_allow_cidrs},
    {"a reply over max_response is refused", test_size_cap},
    {"a peer that never answers times out", test_timeout},
    {"only https URLs are fetched", test_only_https},
    {"a JWKS over https, with its Cache-Control max-age", test_jwks_over_https},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-outbound", suite_init, suite_clean, NULL, NULL, outbound_tests},
        CU_SUITE_INFO_NULL,
    };
    int rc;

    if (!hf_outbound_global_init()) return 1;
    rc = hf_test_run(suites);
    hf_outbound_global_cleanup();
    return rc;
}
