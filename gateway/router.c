/* Route patterns (plugin.h): literal segments, "{name}" (one non-empty segment) and "{name*}"
 * (zero or more whole segments): at most one anywhere, plus one more as the last segment (the
 * "rest" of a path under a base that itself starts with a star). Matching works on the raw path,
 * segment by segment, without allocating until a route has matched; captures are percent-decoded
 * then. */
#include "hf-build.h"

#include "gateway/router.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum seg_kind { SEG_LITERAL, SEG_PARAM, SEG_STAR };

struct segment {
    enum seg_kind kind;
    char *text; /* the literal, or the capture's name */
    size_t len;
};

struct route {
    char *method;
    void *data;
    hf_router_accepts_fn accepts; /* NULL: takes every path its pattern matches */
    size_t nsegs;
    struct segment segs[HF_ROUTER_MAX_SEGMENTS];
    size_t star; /* index of the star segment, or SIZE_MAX */
    bool rest;   /* a second star ends the pattern: segs[nsegs - 1] */
};

struct hf_router {
    struct route **routes;
    size_t n, cap;
};

/* A path segment: bytes [off, off + len) of the path. */
struct span {
    size_t off, len;
};

struct hf_router *hf_router_new(void)
{
    return calloc(1, sizeof(struct hf_router));
}

static void route_free(struct route *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->nsegs; i++)
        free(r->segs[i].text);
    free(r->method);
    free(r);
}

void hf_router_free(struct hf_router *router)
{
    if (!router) return;
    for (size_t i = 0; i < router->n; i++)
        route_free(router->routes[i]);
    free(router->routes);
    free(router);
}

size_t hf_router_count(const struct hf_router *router)
{
    return router ? router->n : 0;
}

static bool name_is_valid(const char *s, size_t len)
{
    if (len == 0) return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

static bool method_is_valid(const char *m)
{
    size_t len = m ? strlen(m) : 0;

    if (len == 0 || len > 16) return false;
    for (size_t i = 0; i < len; i++)
        if (m[i] < 'A' || m[i] > 'Z') return false;
    return true;
}

/* One pattern segment [s, s + len) into seg; false with a reason. */
static bool segment_parse(const char *s, size_t len, struct segment *seg, char *err, size_t errlen)
{
    const char *name = s;
    size_t namelen = len;

    if (len > 0 && s[0] == '{') {
        if (len < 3 || s[len - 1] != '}') {
            snprintf(err, errlen, "a '{' must open a whole segment \"{name}\"");
            return false;
        }
        name = s + 1;
        namelen = len - 2;
        seg->kind = SEG_PARAM;
        if (namelen > 0 && name[namelen - 1] == '*') {
            seg->kind = SEG_STAR;
            namelen--;
        }
        if (!name_is_valid(name, namelen)) {
            snprintf(err, errlen, "bad capture name in \"%.*s\"", (int)len, s);
            return false;
        }
    } else {
        seg->kind = SEG_LITERAL;
        if (memchr(s, '{', len) || memchr(s, '}', len)) {
            snprintf(err, errlen, "braces only around a whole segment: \"%.*s\"", (int)len, s);
            return false;
        }
    }
    if (!(seg->text = strndup(name, namelen))) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    seg->len = namelen;
    return true;
}

static bool route_compile(struct route *r, const char *pattern, char *err, size_t errlen)
{
    const char *p = pattern + 1, *end;
    size_t ncaps = 0;

    r->star = SIZE_MAX;
    for (;;) {
        struct segment *seg;

        if (r->nsegs == HF_ROUTER_MAX_SEGMENTS) {
            snprintf(err, errlen, "more than %d segments", HF_ROUTER_MAX_SEGMENTS);
            return false;
        }
        end = strchr(p, '/');
        if (!end) end = p + strlen(p);
        seg = &r->segs[r->nsegs];
        if (!segment_parse(p, (size_t)(end - p), seg, err, errlen)) return false;
        r->nsegs++;
        if (seg->kind != SEG_LITERAL) {
            for (size_t i = 0; i + 1 < r->nsegs; i++)
                if (r->segs[i].kind != SEG_LITERAL && strcmp(r->segs[i].text, seg->text) == 0) {
                    snprintf(err, errlen, "capture \"%s\" named twice", seg->text);
                    return false;
                }
            if (++ncaps > HF_ROUTER_MAX_CAPTURES) {
                snprintf(err, errlen, "more than %d captures", HF_ROUTER_MAX_CAPTURES);
                return false;
            }
        }
        if (seg->kind == SEG_STAR) {
            if (r->rest) {
                snprintf(err, errlen, "at most two {name*} per pattern, the second one last");
                return false;
            }
            if (r->star == SIZE_MAX)
                r->star = r->nsegs - 1;
            else
                r->rest = true;
        }
        if (*end == '\0') break;
        p = end + 1;
    }
    if (r->rest && r->segs[r->nsegs - 1].kind != SEG_STAR) {
        snprintf(err, errlen, "a second {name*} must be the last segment");
        return false;
    }
    return true;
}

bool hf_router_add(struct hf_router *router, const char *method, const char *pattern, void *data,
                   char *err, size_t errlen)
{
    return hf_router_add_filtered(router, method, pattern, data, NULL, err, errlen);
}

bool hf_router_add_filtered(struct hf_router *router, const char *method, const char *pattern,
                            void *data, hf_router_accepts_fn accepts, char *err, size_t errlen)
{
    struct route *r = NULL;
    bool ok = false;

    if (!router || !pattern || pattern[0] != '/') {
        snprintf(err, errlen, "a pattern starts with '/'");
        return false;
    }
    if (!method_is_valid(method)) {
        snprintf(err, errlen, "bad method \"%s\"", method ? method : "(null)");
        return false;
    }
    if (!(r = calloc(1, sizeof(*r))) || !(r->method = strdup(method))) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    r->data = data;
    r->accepts = accepts;
    if (!route_compile(r, pattern, err, errlen)) goto done;
    if (router->n == router->cap) {
        size_t cap = router->cap ? router->cap * 2 : 16;
        struct route **grown = realloc(router->routes, cap * sizeof(*grown));
        if (!grown) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        router->routes = grown;
        router->cap = cap;
    }
    router->routes[router->n++] = r;
    r = NULL;
    ok = true;
done:
    route_free(r);
    return ok;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0, len) into a new string. A '%' not followed by two hex digits stays as it
 * is; "%00" makes the capture (and so the route) fail: a NUL would cut the value short. */
static char *capture_decode(const char *s, size_t len, bool *has_nul)
{
    char *out = malloc(len + 1), *o = out;

    *has_nul = false;
    if (!out) return NULL;
    for (size_t i = 0; i < len; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < len && (hi = hex_value(s[i + 1])) >= 0 &&
            (lo = hex_value(s[i + 2])) >= 0) {
            *o = (char)(hi << 4 | lo);
            if (*o == '\0') *has_nul = true;
            o++;
            i += 2;
        } else {
            *o++ = s[i];
        }
    }
    *o = '\0';
    return out;
}

static bool segment_matches(const struct segment *seg, const char *path, const struct span *sp)
{
    if (seg->kind == SEG_PARAM) return sp->len > 0;
    return seg->len == sp->len && memcmp(seg->text, path + sp->off, sp->len) == 0;
}

/* Pattern segments pat[0, np), none a star, against path segments segs[0, np); appends the
 * captures to caps[*n]. */
static bool fixed_matches(const struct segment *pat, size_t np, const char *path,
                          const struct span *segs, struct span *caps, size_t *n)
{
    for (size_t i = 0; i < np; i++) {
        if (!segment_matches(&pat[i], path, &segs[i])) return false;
        if (pat[i].kind == SEG_PARAM) caps[(*n)++] = segs[i];
    }
    return true;
}

/* The span covering path segments [first, last): nothing when they are the same. */
static struct span star_span(const struct span *segs, size_t first, size_t last)
{
    if (first == last) return (struct span){0, 0};
    return (struct span){segs[first].off,
                         segs[last - 1].off + segs[last - 1].len - segs[first].off};
}

/* A pattern "A/{x*}/B/{rest*}": A matches the path's first segments, B the earliest place after
 * them where it matches (so {x*} takes as little as it can), {rest*} whatever follows. */
static bool two_stars_match(const struct route *r, const char *path, const struct span *segs,
                            size_t nsegs, struct span *caps, size_t *ncaps)
{
    size_t a = r->star, b = r->nsegs - r->star - 2, n = 0;

    if (nsegs < a + b || !fixed_matches(r->segs, a, path, segs, caps, &n)) return false;
    for (size_t k = a; k + b <= nsegs; k++) {
        size_t m = n + 1;
        if (!fixed_matches(&r->segs[a + 1], b, path, &segs[k], caps, &m)) continue;
        caps[n] = star_span(segs, a, k);
        caps[m++] = star_span(segs, k + b, nsegs);
        *ncaps = m;
        return true;
    }
    return false;
}

/* Whether the route's pattern matches; on a match, fills the captures' spans (start, end offsets
 * into path) in pattern order. */
static bool pattern_matches(const struct route *r, const char *path, const struct span *segs,
                            size_t nsegs, struct span *caps, size_t *ncaps)
{
    size_t tail, n = 0;

    if (r->rest) return two_stars_match(r, path, segs, nsegs, caps, ncaps);
    if (r->star == SIZE_MAX) {
        if (nsegs != r->nsegs || !fixed_matches(r->segs, nsegs, path, segs, caps, &n)) return false;
        *ncaps = n;
        return true;
    }
    /* Segments before the star match the path's first ones, segments after it its last ones;
     * the star takes whatever lies between (possibly nothing). */
    if (nsegs + 1 < r->nsegs) return false;
    tail = r->nsegs - r->star - 1;
    if (!fixed_matches(r->segs, r->star, path, segs, caps, &n)) return false;
    caps[n++] = star_span(segs, r->star, nsegs - tail);
    if (!fixed_matches(&r->segs[r->star + 1], tail, path, &segs[nsegs - tail], caps, &n))
        return false;
    *ncaps = n;
    return true;
}

/* Splits "/a/b" into spans; false for a path that is not absolute or is too deep. */
static bool path_split(const char *path, size_t len, struct span *segs, size_t *nsegs)
{
    size_t n = 0, start;

    if (len == 0 || path[0] != '/') return false;
    start = 1;
    for (size_t i = 1; i <= len; i++) {
        if (i == len || path[i] == '/') {
            if (n == HF_ROUTER_MAX_PATH_SEGS) return false;
            segs[n++] = (struct span){start, i - start};
            start = i + 1;
        }
    }
    *nsegs = n;
    return true;
}

static void allow_add(char *allow, size_t size, const char *method)
{
    size_t used = strlen(allow), mlen = strlen(method);
    const char *p = allow;

    /* Already listed? */
    while ((p = strstr(p, method))) {
        if ((p == allow || p[-1] == ' ') && (p[mlen] == ',' || p[mlen] == '\0')) return;
        p += mlen;
    }
    if (used + mlen + 3 > size) return;
    snprintf(allow + used, size - used, "%s%s", used ? ", " : "", method);
}

static enum hf_router_result captures_fill(const struct route *r, const char *path,
                                           const struct span *caps, size_t ncaps,
                                           struct hf_router_match *m)
{
    size_t ci = 0;

    for (size_t i = 0; i < r->nsegs && ci < ncaps; i++) {
        bool has_nul;
        if (r->segs[i].kind == SEG_LITERAL) continue;
        m->captures[ci].name = r->segs[i].text;
        m->captures[ci].value = capture_decode(path + caps[ci].off, caps[ci].len, &has_nul);
        m->ncaptures = ++ci;
        if (!m->captures[ci - 1].value) return HF_ROUTER_NO_MEMORY;
        if (has_nul) return HF_ROUTER_NOT_FOUND;
    }
    return HF_ROUTER_FOUND;
}

enum hf_router_result hf_router_match(const struct hf_router *router, const char *method,
                                      const char *path, size_t pathlen, struct hf_router_match *m)
{
    struct span segs[HF_ROUTER_MAX_PATH_SEGS], caps[HF_ROUTER_MAX_CAPTURES];
    size_t nsegs = 0, ncaps = 0;
    enum hf_router_result result = HF_ROUTER_NOT_FOUND;

    if (!m) return HF_ROUTER_NOT_FOUND;
    memset(m, 0, sizeof(*m));
    if (!router || !method || !path || !path_split(path, pathlen, segs, &nsegs))
        return HF_ROUTER_NOT_FOUND;
    for (size_t i = 0; i < router->n; i++) {
        const struct route *r = router->routes[i];
        enum hf_router_result got;

        if (!pattern_matches(r, path, segs, nsegs, caps, &ncaps)) continue;
        /* After the pattern, so a plugin's filter only sees paths its routes could take. */
        if (r->accepts && !r->accepts(r->data, path, pathlen)) continue;
        if (strcmp(r->method, method) != 0) {
            if (result == HF_ROUTER_NOT_FOUND) m->data = r->data;
            result = HF_ROUTER_METHOD_NOT_ALLOWED;
            allow_add(m->allow, sizeof(m->allow), r->method);
            continue;
        }
        got = captures_fill(r, path, caps, ncaps, m);
        if (got == HF_ROUTER_FOUND) {
            m->data = r->data;
            m->allow[0] = '\0';
            return HF_ROUTER_FOUND;
        }
        for (size_t c = 0; c < m->ncaptures; c++)
            free(m->captures[c].value);
        m->ncaptures = 0;
        if (got == HF_ROUTER_NO_MEMORY) {
            m->data = NULL;
            return got;
        }
        /* A capture that decodes to a NUL: this route does not match; try the next. */
    }
    if (result == HF_ROUTER_NOT_FOUND) m->data = NULL;
    return result;
}

void hf_router_match_clear(struct hf_router_match *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->ncaptures; i++)
        free(m->captures[i].value);
    m->ncaptures = 0;
    m->data = NULL;
}
