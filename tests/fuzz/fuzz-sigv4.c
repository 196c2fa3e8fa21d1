/* libFuzzer target for gateway/plugins/aws-xks/sigv4.c: the Authorization parser and the
 * verifier on arbitrary requests.
 *
 * Input: lines split at '\n' --
 *   1 Authorization value (an empty line: no Authorization header)
 *   2 X-Amz-Date value (an empty line: none, unless a header line below gives one)
 *   3 method, 4 path, 5 query
 *   6.. header lines "name:value", up to an empty line; the rest is the body.
 *
 * Besides "no crash, no leak, no UB", it checks two properties on every input:
 *   - verify answers the same with and without the signing-key cache;
 *   - whenever the parsed Authorization can be re-signed for the same request (hf_sigv4_sign
 *     succeeds), verify accepts that signature: sign and verify agree on every canonical form. */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/sigv4.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_HEADERS 16
#define SECRET "Sk9f+2/abcdefghijklmnopqrstuvwxyzABCDEFGH=="

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct request {
    const char *authorization, *x_amz_date;
    size_t n;
    const char *name[MAX_HEADERS], *value[MAX_HEADERS];
};

static const char *request_header(void *ctx, const char *name)
{
    struct request *r = ctx;

    if (strcmp(name, "authorization") == 0 && r->authorization != NULL) return r->authorization;
    if (strcmp(name, "x-amz-date") == 0 && r->x_amz_date != NULL) return r->x_amz_date;
    for (size_t i = 0; i < r->n; i++)
        if (strcasecmp(r->name[i], name) == 0) return r->value[i];
    return NULL;
}

/* Every access key id that starts with 'A' is known, so inputs reach the HMACs. */
static const char *any_secret(void *ctx, const char *akid)
{
    (void)ctx;
    return akid[0] == 'A' ? SECRET : NULL;
}

static const char *every_secret(void *ctx, const char *akid)
{
    (void)ctx;
    (void)akid;
    return SECRET;
}

/* The next line of *p (NUL-terminated in place), or NULL at the end. */
static char *line_next(char **p, char *end)
{
    char *line = *p, *nl;

    if (line >= end) return NULL;
    nl = memchr(line, '\n', (size_t)(end - line));
    if (nl == NULL) {
        *p = end;
    } else {
        *nl = '\0';
        *p = nl + 1;
    }
    return line;
}

/* Seconds since the epoch of a yyyymmddThhmmssZ that hf_sigv4_sign accepted. */
static time_t amz_time(const char *s)
{
    struct tm tm = {0};

    if (sscanf(s, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) != 6)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return timegm(&tm);
}

static void round_trip_check(struct request *r, struct hf_sigv4_request *req,
                             const struct hf_sigv4_auth *auth)
{
    const char *date = request_header(r, "x-amz-date");
    const char *saved = r->authorization;
    const char *region = auth->region;
    struct hf_sigv4_policy policy = {.service = auth->service,
                                     .regions = &region,
                                     .nregions = 1,
                                     .max_skew_s = HF_SIGV4_MAX_SKEW_S,
                                     .secret = every_secret};
    char trimmed[64], why[128];
    enum hf_sigv4_result result;
    size_t len;
    char *authz;

    /* Signing the Authorization header itself cannot round-trip: signing changes it. */
    if (date == NULL || strstr(auth->signed_headers, "authorization") != NULL) return;
    while (*date == ' ' || *date == '\t')
        date++;
    len = strnlen(date, sizeof(trimmed) - 1);
    memcpy(trimmed, date, len);
    while (len > 0 && (trimmed[len - 1] == ' ' || trimmed[len - 1] == '\t'))
        len--;
    trimmed[len] = '\0';
    authz = hf_sigv4_sign(req, auth->akid, SECRET, auth->region, auth->service, trimmed,
                          auth->signed_headers);
    if (authz == NULL) return;
    r->authorization = authz;
    req->now = amz_time(trimmed);
    result = hf_sigv4_verify(req, &policy, NULL, NULL, why, sizeof(why));
    /* Verify insists on host and x-amz-date being signed; sign does not. */
    if (result != HF_SIGV4_OK &&
        !(result == HF_SIGV4_MALFORMED && (strstr(why, "SignedHeaders must include") != NULL))) {
        fprintf(stderr, "sign/verify disagree: %d (%s) for %s\n", result, why, authz);
        abort();
    }
    r->authorization = saved;
    free(authz);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct hf_sigv4_cache *cache;
    static const char *const regions[] = {"us-east-1", "eu-west-1"};
    struct hf_sigv4_policy policy = {.service = "kms-xks-proxy",
                                     .regions = regions,
                                     .nregions = 2,
                                     .max_skew_s = HF_SIGV4_MAX_SKEW_S,
                                     .secret = any_secret};
    struct request r = {0};
    struct hf_sigv4_request req = {.header = request_header, .header_ctx = &r};
    struct hf_sigv4_auth auth;
    enum hf_sigv4_result with_cache, without_cache;
    char *buf, *p, *end, *line, *creq;
    char why[128], akid[31];
    const char *date;
    bool parsed;

    if (size > 64 * 1024) return 0;
    if (cache == NULL) cache = hf_sigv4_cache_new(); /* kept for the whole run, like a gateway's */
    buf = malloc(size + 1);
    if (buf == NULL) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    p = buf;
    end = buf + size;

    line = line_next(&p, end);
    r.authorization = line != NULL && *line != '\0' ? line : NULL;
    line = line_next(&p, end);
    r.x_amz_date = line != NULL && *line != '\0' ? line : NULL;
    line = line_next(&p, end);
    req.method = line != NULL ? line : "POST";
    line = line_next(&p, end);
    req.path = line != NULL ? line : "/";
    line = line_next(&p, end);
    req.query = line != NULL ? line : "";
    while ((line = line_next(&p, end)) != NULL && *line != '\0') {
        char *colon = strchr(line, ':');

        if (colon == NULL || r.n == MAX_HEADERS) continue;
        *colon = '\0';
        r.name[r.n] = line;
        r.value[r.n] = colon + 1;
        r.n++;
    }
    req.body = (const unsigned char *)p;
    req.body_len = (size_t)(end - p);

    /* A clock near the request's own time (either side of the skew limit), else a fixed one. */
    date = request_header(&r, "x-amz-date");
    req.now = date != NULL ? amz_time(date) : 0;
    req.now = req.now != 0 ? req.now + (time_t)(size % 700) - 350 : 1700000000;

    parsed = hf_sigv4_parse_authorization(r.authorization, &auth);
    if (parsed) {
        creq = hf_sigv4_canonical_request(&req, &auth);
        free(creq);
    }
    (void)hf_sigv4_akid_is_valid(r.authorization);
    (void)hf_sigv4_secret_is_valid(r.x_amz_date);

    without_cache = hf_sigv4_verify(&req, &policy, NULL, akid, why, sizeof(why));
    with_cache = hf_sigv4_verify(&req, &policy, cache, akid, why, sizeof(why));
    if (with_cache != without_cache) {
        fprintf(stderr, "cache changed the answer: %d vs %d\n", with_cache, without_cache);
        abort();
    }
    if (parsed) round_trip_check(&r, &req, &auth);
    free(buf);
    return 0;
}
