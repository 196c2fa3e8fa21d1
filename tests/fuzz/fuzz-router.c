/* The gateway's router and config parser on arbitrary bytes (gateway/router.c, config.c).
 *
 * Input: the first byte picks the target. Even: the router. The rest is lines; each line but the
 * last, "METHOD PATTERN", adds a route (refusals are fine) after a fixed set of real patterns;
 * the last line is a raw path, matched with GET and with POST. Odd: the rest is a config file.
 * Checked beyond "no crash, no leak": a match names a route of its method, captures are bounded
 * NUL-free strings no longer than the path, a 405 names its route and its methods, and a parsed
 * config has at least one listener. */
#include "hf-build.h"

#include "gateway/config.h"
#include "gateway/router.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fixed[][2] = {
    {"POST", "/{prefix*}/kms/xks/v1/keys/{keyId}/encrypt"},
    {"POST", "/{prefix*}/kms/xks/v1/keys/{keyId}/decrypt"},
    {"POST", "/{prefix*}/kms/xks/v1/keys/{keyId}/metadata"},
    {"POST", "/{prefix*}/kms/xks/v1/health"},
    {"POST", "/v1/{keyPath*}/wrap"},
    {"GET", "/a/{x}/b/{y}"},
    {"POST", "/{prefix*}/kms/xks/v1/{rest*}"},
    {"GET", "/{p*}/x/{q}/y/{r*}"},
};

struct route_tag {
    char method[24];
};

static void router_check(const char *data, size_t size)
{
    struct hf_router *r = hf_router_new();
    struct route_tag tags[16];
    size_t ntags = 0, start = 0;
    char err[160];

    if (!r) return;
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        snprintf(tags[ntags].method, sizeof(tags[ntags].method), "%s", fixed[i][0]);
        if (!hf_router_add(r, fixed[i][0], fixed[i][1], &tags[ntags], err, sizeof(err))) abort();
        ntags++;
    }
    /* Every line but the last: a route to add. */
    for (size_t i = 0; i < size && ntags < 16; i++) {
        char line[512], *sp;
        size_t len;
        if (data[i] != '\n') continue;
        len = i - start < sizeof(line) - 1 ? i - start : sizeof(line) - 1;
        memcpy(line, data + start, len);
        line[len] = '\0';
        start = i + 1;
        if (memchr(line, '\0', len) || !(sp = strchr(line, ' '))) continue;
        *sp = '\0';
        snprintf(tags[ntags].method, sizeof(tags[ntags].method), "%s", line);
        if (hf_router_add(r, line, sp + 1, &tags[ntags], err, sizeof(err))) ntags++;
    }
    {
        const char *path = data + start;
        size_t pathlen = size - start;
        static const char *const methods[] = {"GET", "POST"};

        for (size_t k = 0; k < 2; k++) {
            struct hf_router_match m;
            enum hf_router_result res = hf_router_match(r, methods[k], path, pathlen, &m);

            if (res == HF_ROUTER_FOUND) {
                const struct route_tag *t = m.data;
                if (!t || strcmp(t->method, methods[k]) != 0) abort();
                if (m.ncaptures > HF_ROUTER_MAX_CAPTURES) abort();
                for (size_t c = 0; c < m.ncaptures; c++)
                    if (!m.captures[c].name || !m.captures[c].value ||
                        strlen(m.captures[c].value) > pathlen)
                        abort();
            } else if (res == HF_ROUTER_METHOD_NOT_ALLOWED) {
                if (!m.data || m.allow[0] == '\0' || m.ncaptures != 0) abort();
            } else if (m.data || m.ncaptures) {
                abort();
            }
            hf_router_match_clear(&m);
        }
    }
    hf_router_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];

    if (size == 0) return 0;
    if (data[0] % 2 == 0) {
        router_check((const char *)data + 1, size - 1);
    } else {
        struct hf_gw_config *cfg =
            hf_gw_config_parse((const char *)data + 1, size - 1, "fuzz.conf", err, sizeof(err));
        if (cfg && cfg->nlistens == 0) abort();
        if (!cfg && err[0] == '\0') abort(); /* a refusal always says why */
        hf_gw_config_free(cfg);
    }
    return 0;
}
