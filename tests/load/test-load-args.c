/* hf-load's arguments: what it accepts, the one-line reason for each refusal, and the XKS request
 * builder (its SigV4 signature must pass the gateway's own verifier). */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/sigv4.h"
#include "tests/load/load.h"
#include "tests/unit/harness.h"

#include <ctype.h>
#include <json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AKID "AKIAIOSFODNN7EXAMPLEX"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY0123456789"

static struct hf_load_config cfg;
static char err[1024];

/* Parses a NULL-terminated list of arguments (argv[0] is added). */
static enum hf_args_result parse(const char *first, ...)
{
    char *argv[64];
    int argc = 0;
    va_list ap;
    const char *a;

    argv[argc++] = "hf-load";
    va_start(ap, first);
    for (a = first; a && argc < 63; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    err[0] = '\0';
    return hf_load_args_parse(argc, argv, &cfg, err, sizeof(err));
}

#define ASSERT_REFUSED_WITH(fragment, ...)                                                         \
    do {                                                                                           \
        CU_ASSERT_EQUAL(parse(__VA_ARGS__, NULL), HF_ARGS_ERROR);                                  \
        if (!strstr(err, fragment)) {                                                              \
            fprintf(stderr, "\n    message '%s' lacks '%s'\n", err, fragment);                     \
            CU_FAIL("the error message does not say what is wrong");                               \
        }                                                                                          \
    } while (0)

static void test_minimal_command_gets_the_seeds_defaults(void)
{
    CU_ASSERT_EQUAL_FATAL(
        parse("--url", "http://127.0.0.1:8080", "--api", "static", "--vus", "10", NULL),
        HF_ARGS_OK);
    CU_ASSERT_EQUAL(cfg.nlevels, 1);
    CU_ASSERT_EQUAL(cfg.vus[0], 10);
    CU_ASSERT_FALSE(cfg.stop_at_limit);
    CU_ASSERT_EQUAL(cfg.ramp_up_us, 5000000);
    CU_ASSERT_EQUAL(cfg.steady_us, 30000000);
    CU_ASSERT_EQUAL(cfg.ramp_down_us, 5000000);
    CU_ASSERT_EQUAL(cfg.think_max_us, 0);
    CU_ASSERT_EQUAL(cfg.retries, 0); /* a failure counts as one unless asked */
    CU_ASSERT_EQUAL(cfg.limit_ms, 250);
    CU_ASSERT_FALSE(cfg.target.tls);
    CU_ASSERT_STRING_EQUAL(cfg.target.port, "8080");
}

static void test_vus_list_and_options(void)
{
    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://gw.example:8443/", "--api", "xks-encrypt",
                                "--vus", "10,20,40", "--ramp-up", "1s", "--steady", "1500ms",
                                "--ramp-down", "0", "--think", "400ms:700ms", "--limit", "150",
                                "--threads", "3", "--insecure", "--intervals", "10s,20",
                                "--retries", "2", NULL),
                          HF_ARGS_OK);
    CU_ASSERT_EQUAL(cfg.retries, 2);
    CU_ASSERT_EQUAL(cfg.nlevels, 3);
    CU_ASSERT_EQUAL(cfg.ninterval_ends, 2);
    CU_ASSERT_EQUAL(cfg.interval_ends_us[0], 10000000);
    CU_ASSERT_EQUAL(cfg.interval_ends_us[1], 20000000);
    CU_ASSERT_EQUAL(cfg.vus[2], 40);
    CU_ASSERT_EQUAL(cfg.ramp_up_us, 1000000);
    CU_ASSERT_EQUAL(cfg.steady_us, 1500000);
    CU_ASSERT_EQUAL(cfg.ramp_down_us, 0);
    CU_ASSERT_EQUAL(cfg.think_min_us, 400000);
    CU_ASSERT_EQUAL(cfg.think_max_us, 700000);
    CU_ASSERT_EQUAL(cfg.limit_ms, 150);
    CU_ASSERT_EQUAL(cfg.threads, 3);
    CU_ASSERT_TRUE(cfg.target.tls);
    CU_ASSERT_STRING_EQUAL(cfg.target.path, "");
}

static void test_sweep_levels(void)
{
    CU_ASSERT_EQUAL_FATAL(parse("--url", "http://h", "--api", "static", "--sweep", "10:80", NULL),
                          HF_ARGS_OK);
    CU_ASSERT_TRUE(cfg.stop_at_limit);
    CU_ASSERT_EQUAL(cfg.nlevels, 4);
    CU_ASSERT_EQUAL(cfg.vus[0], 10);
    CU_ASSERT_EQUAL(cfg.vus[3], 80);

    CU_ASSERT_EQUAL_FATAL(
        parse("--url", "http://h", "--api", "static", "--sweep", "10:100:x2", NULL), HF_ARGS_OK);
    CU_ASSERT_EQUAL(cfg.nlevels, 5); /* 10 20 40 80, and TO itself */
    CU_ASSERT_EQUAL(cfg.vus[4], 100);

    CU_ASSERT_EQUAL_FATAL(
        parse("--url", "http://h", "--api", "static", "--sweep", "10:30:+10", NULL), HF_ARGS_OK);
    CU_ASSERT_EQUAL(cfg.nlevels, 3);
    CU_ASSERT_EQUAL(cfg.vus[2], 30);
}

static void test_help(void)
{
    CU_ASSERT_EQUAL(parse("--help", NULL), HF_ARGS_HELP);
}

static void test_bad_arguments_say_what_is_wrong(void)
{
    ASSERT_REFUSED_WITH("--url is required", "--api", "static", "--vus", "1");
    ASSERT_REFUSED_WITH("--api is required", "--url", "http://h", "--vus", "1");
    ASSERT_REFUSED_WITH("'nope' is unknown; known: xks-encrypt", "--url", "http://h", "--api",
                        "nope", "--vus", "1");
    ASSERT_REFUSED_WITH("say how many VUs", "--url", "http://h", "--api", "static");
    ASSERT_REFUSED_WITH("--retries '11': expected 0 to 10", "--url", "http://h", "--api", "static",
                        "--vus", "1", "--retries", "11");
    ASSERT_REFUSED_WITH("--ids: only the xks APIs", "--url", "http://h", "--api", "static", "--vus",
                        "1", "--ids", "ids.txt");
    ASSERT_REFUSED_WITH("exclude each other", "--url", "http://h", "--api", "static", "--vus", "1",
                        "--sweep", "1:4");
    ASSERT_REFUSED_WITH("'abc' is not a VU count", "--url", "http://h", "--api", "static", "--vus",
                        "10,abc");
    ASSERT_REFUSED_WITH("'0' is not a VU count", "--url", "http://h", "--api", "static", "--vus",
                        "0");
    ASSERT_REFUSED_WITH("comma-separated", "--url", "http://h", "--api", "static", "--vus",
                        "10,,20");
    ASSERT_REFUSED_WITH("'99999' is not a VU count", "--url", "http://h", "--api", "static",
                        "--vus", "99999");
    ASSERT_REFUSED_WITH("TO (10) is below FROM (20)", "--url", "http://h", "--api", "static",
                        "--sweep", "20:10");
    ASSERT_REFUSED_WITH("x2 or more", "--url", "http://h", "--api", "static", "--sweep", "1:10:x1");
    ASSERT_REFUSED_WITH("expected FROM:TO", "--url", "http://h", "--api", "static", "--sweep",
                        "10");
    ASSERT_REFUSED_WITH("--steady must be more than 0", "--url", "http://h", "--api", "static",
                        "--vus", "1", "--steady", "0");
    ASSERT_REFUSED_WITH("--ramp-up '5x': expected a duration", "--url", "http://h", "--api",
                        "static", "--vus", "1", "--ramp-up", "5x");
    ASSERT_REFUSED_WITH("--ramp-down '-1'", "--url", "http://h", "--api", "static", "--vus", "1",
                        "--ramp-down", "-1");
    ASSERT_REFUSED_WITH("upper bound is below", "--url", "http://h", "--api", "static", "--vus",
                        "1", "--think", "300ms:100ms");
    ASSERT_REFUSED_WITH("the cuts must increase", "--url", "http://h", "--api", "static", "--vus",
                        "1", "--intervals", "10,10");
    ASSERT_REFUSED_WITH("at most 7 cuts", "--url", "http://h", "--api", "static", "--vus", "1",
                        "--intervals", "1,2,3,4,5,6,7,8");
    ASSERT_REFUSED_WITH("--intervals 'soon'", "--url", "http://h", "--api", "static", "--vus",
                        "1", "--intervals", "soon");
    ASSERT_REFUSED_WITH("--threads '0'", "--url", "http://h", "--api", "static", "--vus", "1",
                        "--threads", "0");
    ASSERT_REFUSED_WITH("--limit 'fast'", "--url", "http://h", "--api", "static", "--vus", "1",
                        "--limit", "fast");
    ASSERT_REFUSED_WITH("need an https:// URL", "--url", "http://h", "--api", "static", "--vus",
                        "1", "--insecure");
    ASSERT_REFUSED_WITH("choose one", "--url", "https://h", "--api", "static", "--vus", "1",
                        "--insecure", "--cacert", "/x.pem");
    ASSERT_REFUSED_WITH("unknown option '--frobnicate'", "--url", "http://h", "--api", "static",
                        "--vus", "1", "--frobnicate");
    ASSERT_REFUSED_WITH("--vus needs a value", "--url", "http://h", "--api", "static", "--vus");
    ASSERT_REFUSED_WITH("unexpected argument 'extra'", "--url", "http://h", "--api", "static",
                        "--vus", "1", "extra");
    ASSERT_REFUSED_WITH("--server-cores 'many'", "--url", "http://h", "--api", "static", "--vus",
                        "1", "--server-cores", "many");
}

static void test_bad_urls_say_what_is_wrong(void)
{
    ASSERT_REFUSED_WITH("scheme must be http:// or https://", "--url", "ftp://h", "--api", "static",
                        "--vus", "1");
    ASSERT_REFUSED_WITH("the host is empty", "--url", "http://:8080", "--api", "static", "--vus",
                        "1");
    ASSERT_REFUSED_WITH("port must be a number from 1 to 65535", "--url", "http://h:99999", "--api",
                        "static", "--vus", "1");
    ASSERT_REFUSED_WITH("port must be a number", "--url", "http://h:", "--api", "static", "--vus",
                        "1");
    ASSERT_REFUSED_WITH("no user info", "--url", "http://me@h", "--api", "static", "--vus", "1");
    ASSERT_REFUSED_WITH("no query", "--url", "http://h/?a=1", "--api", "static", "--vus", "1");
    ASSERT_REFUSED_WITH("unterminated [IPv6", "--url", "http://[::1", "--api", "static", "--vus",
                        "1");
}

static void test_url_forms(void)
{
    struct hf_url u;

    CU_ASSERT_EQUAL_FATAL(hf_url_parse("https://[::1]:8443/store/", &u, err, sizeof(err)), 0);
    CU_ASSERT_TRUE(u.tls);
    CU_ASSERT_STRING_EQUAL(u.host, "::1");
    CU_ASSERT_STRING_EQUAL(u.port, "8443");
    CU_ASSERT_STRING_EQUAL(u.authority, "[::1]:8443");
    CU_ASSERT_STRING_EQUAL(u.path, "/store");
    CU_ASSERT_EQUAL_FATAL(hf_url_parse("http://localhost", &u, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(u.port, "80");
    CU_ASSERT_STRING_EQUAL(u.authority, "localhost");
    CU_ASSERT_EQUAL_FATAL(hf_url_parse("https://gw.example", &u, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(u.port, "443");
}

static void test_durations(void)
{
    uint64_t us;

    CU_ASSERT(hf_duration_parse("5s", &us) == 0 && us == 5000000);
    CU_ASSERT(hf_duration_parse("30", &us) == 0 && us == 30000000);
    CU_ASSERT(hf_duration_parse("500ms", &us) == 0 && us == 500000);
    CU_ASSERT(hf_duration_parse("1.5s", &us) == 0 && us == 1500000);
    CU_ASSERT(hf_duration_parse("2m", &us) == 0 && us == 120000000);
    CU_ASSERT(hf_duration_parse("0", &us) == 0 && us == 0);
    CU_ASSERT(hf_duration_parse("", &us) != 0);
    CU_ASSERT(hf_duration_parse("5x", &us) != 0);
    CU_ASSERT(hf_duration_parse("-1s", &us) != 0);
    CU_ASSERT(hf_duration_parse(" 1s", &us) != 0);
    CU_ASSERT(hf_duration_parse("1e9h", &us) != 0);
}

/* ---- XKS options and requests ---------------------------------------------------------------- */

static int xks_init(void **state)
{
    return cfg.api->init(&cfg, state, err, sizeof(err));
}

static void test_xks_options_are_checked(void)
{
    void *state = NULL;

    unsetenv("HF_LOAD_CREDENTIALS");
    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://h", "--api", "xks-encrypt", "--vus", "1",
                                "--credentials", AKID ":" SECRET, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(xks_init(&state), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "needs --key-id"));

    CU_ASSERT_EQUAL_FATAL(
        parse("--url", "https://h", "--api", "xks-encrypt", "--vus", "1", "--key-id", "k1", NULL),
        HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(xks_init(&state), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "needs --credentials"));

    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://h", "--api", "xks-decrypt", "--vus", "1",
                                "--key-id", "k1", "--credentials", "nocolon", NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(xks_init(&state), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "ACCESS_KEY_ID:SECRET"));

    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://h", "--api", "xks-encrypt", "--vus", "1",
                                "--key-id", "bad/key", "--credentials", AKID ":" SECRET, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(xks_init(&state), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--key-id 'bad/key'"));

    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://h", "--api", "xks-encrypt", "--vus", "1",
                                "--key-id", "k1", "--prefix", "/lead", "--credentials",
                                AKID ":" SECRET, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(xks_init(&state), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--prefix '/lead'"));

    /* The secret may come from the environment, out of the process list. */
    setenv("HF_LOAD_CREDENTIALS", AKID ":" SECRET, 1);
    CU_ASSERT_EQUAL_FATAL(
        parse("--url", "https://h", "--api", "xks-encrypt", "--vus", "1", "--key-id", "k1", NULL),
        HF_ARGS_OK);
    CU_ASSERT_EQUAL(xks_init(&state), 0);
    CU_ASSERT_PTR_NOT_NULL(state);
    cfg.api->free_state(state);
    unsetenv("HF_LOAD_CREDENTIALS");
}

/* A request as a server sees it. */
struct parsed {
    char method[8];
    char path[512];
    char headers[16][2][512]; /* lowercase name, value */
    size_t nheaders;
    const char *body;
    size_t body_len;
};

static int request_parse(const struct hf_buf *req, struct parsed *p)
{
    const char *s = req->data, *end = strstr(s, "\r\n\r\n"), *line, *eol;

    memset(p, 0, sizeof(*p));
    if (!end || sscanf(s, "%7s %511s HTTP/1.1", p->method, p->path) != 2) return -1;
    for (line = strstr(s, "\r\n") + 2; line < end && p->nheaders < 16; line = eol + 2) {
        const char *colon = strchr(line, ':');
        size_t i, n;

        eol = strstr(line, "\r\n");
        if (!colon || colon > eol) return -1;
        n = (size_t)(colon - line);
        for (i = 0; i < n && i < 511; i++)
            p->headers[p->nheaders][0][i] = (char)tolower((unsigned char)line[i]);
        colon++;
        while (*colon == ' ')
            colon++;
        snprintf(p->headers[p->nheaders][1], 512, "%.*s", (int)(eol - colon), colon);
        p->nheaders++;
    }
    p->body = end + 4;
    p->body_len = req->len - (size_t)(p->body - s);
    return 0;
}

static const char *parsed_header(void *ctx, const char *name)
{
    struct parsed *p = ctx;

    for (size_t i = 0; i < p->nheaders; i++)
        if (strcmp(p->headers[i][0], name) == 0) return p->headers[i][1];
    return NULL;
}

static const char *secret_of(void *ctx, const char *akid)
{
    return strcmp(akid, AKID) == 0 ? SECRET : NULL;
}

static enum hf_sigv4_result verify(struct parsed *p)
{
    static const char *const regions[] = {"eu-west-1"};
    struct hf_sigv4_request req = {.method = p->method,
                                   .path = p->path,
                                   .query = "",
                                   .header = parsed_header,
                                   .header_ctx = p,
                                   .body = (const unsigned char *)p->body,
                                   .body_len = p->body_len,
                                   .now = time(NULL)};
    struct hf_sigv4_policy policy = {.service = "kms-xks-proxy",
                                     .regions = regions,
                                     .nregions = 1,
                                     .max_skew_s = HF_SIGV4_MAX_SKEW_S,
                                     .secret = secret_of};
    char akid[31], why[256];

    return hf_sigv4_verify(&req, &policy, NULL, akid, why, sizeof(why));
}

static void test_xks_encrypt_request_is_signed_and_verifies(void)
{
    struct hf_buf req = {0};
    struct parsed p;
    void *state = NULL, *vu = NULL;
    bool setup = true;
    char first_pt[64] = "";

    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://127.0.0.1:8443", "--api", "xks-encrypt", "--vus",
                                "1", "--key-id", "hf-key-1", "--prefix", "store_one-1", "--region",
                                "eu-west-1", "--credentials", AKID ":" SECRET, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_EQUAL_FATAL(xks_init(&state), 0);
    for (int round = 0; round < 2; round++) {
        struct json_object *o, *pt;

        req.len = 0;
        CU_ASSERT_EQUAL_FATAL(cfg.api->build(state, &vu, &req, &setup), 0);
        CU_ASSERT_FALSE(setup);
        CU_ASSERT_EQUAL_FATAL(request_parse(&req, &p), 0);
        CU_ASSERT_STRING_EQUAL(p.method, "POST");
        CU_ASSERT_STRING_EQUAL(p.path, "/store_one-1/kms/xks/v1/keys/hf-key-1/encrypt");
        CU_ASSERT_STRING_EQUAL(parsed_header(&p, "host"), "127.0.0.1:8443");
        CU_ASSERT_STRING_EQUAL(parsed_header(&p, "content-type"), "application/json");
        CU_ASSERT_EQUAL((size_t)atoi(parsed_header(&p, "content-length")), p.body_len);
        CU_ASSERT_PTR_NOT_NULL(strstr(parsed_header(&p, "authorization"), "Credential=" AKID "/"));
        /* The gateway's own verifier accepts what hf-load signs. */
        CU_ASSERT_EQUAL(verify(&p), HF_SIGV4_OK);
        /* The body: 32 random bytes, new every request. */
        o = json_tokener_parse(p.body);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(o, "plaintext", &pt));
        CU_ASSERT_EQUAL(strlen(json_object_get_string(pt)), 44);
        if (round == 0)
            snprintf(first_pt, sizeof(first_pt), "%s", json_object_get_string(pt));
        else
            CU_ASSERT_STRING_NOT_EQUAL(first_pt, json_object_get_string(pt));
        json_object_put(o);
    }
    /* A changed body breaks the signature: the verifier really checks it. */
    ((char *)p.body)[p.body_len - 2] ^= 1;
    CU_ASSERT_EQUAL(verify(&p), HF_SIGV4_MISMATCH);
    cfg.api->free_vu(vu);
    cfg.api->free_state(state);
    hf_buf_free(&req);
}

static void test_xks_decrypt_prepares_with_one_encrypt(void)
{
    struct hf_buf req = {0};
    struct parsed p;
    void *state = NULL, *vu = NULL;
    bool setup = false;
    char reply[512], pt[64];
    struct json_object *o, *f;

    CU_ASSERT_EQUAL_FATAL(parse("--url", "http://127.0.0.1:8080", "--api", "xks-decrypt", "--vus",
                                "1", "--key-id", "k", "--region", "eu-west-1", "--credentials",
                                AKID ":" SECRET, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_EQUAL_FATAL(xks_init(&state), 0);
    CU_ASSERT_EQUAL_FATAL(cfg.api->build(state, &vu, &req, &setup), 0);
    CU_ASSERT_TRUE(setup); /* first an encrypt, not measured */
    CU_ASSERT_EQUAL_FATAL(request_parse(&req, &p), 0);
    CU_ASSERT_STRING_EQUAL(p.path, "/kms/xks/v1/keys/k/encrypt");
    o = json_tokener_parse(p.body);
    CU_ASSERT_TRUE_FATAL(o && json_object_object_get_ex(o, "plaintext", &f));
    snprintf(pt, sizeof(pt), "%s", json_object_get_string(f));
    json_object_put(o);
    /* A reply without a 32-byte ciphertext is refused. */
    CU_ASSERT_NOT_EQUAL(cfg.api->check(state, &vu, true, "{\"ciphertext\":\"AA==\"}", 21), 0);
    snprintf(reply, sizeof(reply),
             "{\"ciphertext\":\"%s\",\"initializationVector\":\"AAAAAAAAAAAAAAAA\","
             "\"authenticationTag\":\"AAAAAAAAAAAAAAAAAAAAAA==\",\"ciphertextMetadata\":\"AQ==\"}",
             "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=");
    CU_ASSERT_EQUAL(cfg.api->check(state, &vu, true, reply, strlen(reply)), 0);

    req.len = 0;
    CU_ASSERT_EQUAL_FATAL(cfg.api->build(state, &vu, &req, &setup), 0);
    CU_ASSERT_FALSE(setup);
    CU_ASSERT_EQUAL_FATAL(request_parse(&req, &p), 0);
    CU_ASSERT_STRING_EQUAL(p.path, "/kms/xks/v1/keys/k/decrypt");
    CU_ASSERT_EQUAL(verify(&p), HF_SIGV4_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.body, "\"ciphertextMetadata\":\"AQ==\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.body, "\"authenticationTag\":\"AAAAAAAAAAAAAAAAAAAAAA==\""));
    /* The decrypt reply must give back the VU's own plaintext. */
    snprintf(reply, sizeof(reply), "{\"plaintext\":\"%s\"}", pt);
    CU_ASSERT_EQUAL(cfg.api->check(state, &vu, false, reply, strlen(reply)), 0);
    CU_ASSERT_NOT_EQUAL(
        cfg.api->check(state, &vu, false,
                       "{\"plaintext\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}", 60),
        0);
    cfg.api->free_vu(vu);
    cfg.api->free_state(state);
    hf_buf_free(&req);
}

static CU_TestInfo args_tests[] = {
    {"a minimal command gets the seeds' defaults", test_minimal_command_gets_the_seeds_defaults},
    {"VU lists and options are read", test_vus_list_and_options},
    {"a sweep doubles up to TO", test_sweep_levels},
    {"--help asks for the usage", test_help},
    {"bad arguments say what is wrong", test_bad_arguments_say_what_is_wrong},
    {"bad URLs say what is wrong", test_bad_urls_say_what_is_wrong},
    {"URL forms: IPv6, default ports, trailing slash", test_url_forms},
    {"durations take s, ms, m and plain seconds", test_durations},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo xks_tests[] = {
    {"XKS options are checked", test_xks_options_are_checked},
    {"an XKS encrypt is signed and verifies", test_xks_encrypt_request_is_signed_and_verifies},
    {"XKS decrypt prepares with one encrypt", test_xks_decrypt_prepares_with_one_encrypt},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"load-args", NULL, NULL, NULL, NULL, args_tests},
    {"load-xks", NULL, NULL, NULL, NULL, xks_tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return hf_test_run(suites);
}
