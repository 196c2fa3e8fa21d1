/* The gateway's router: method + path patterns (plugin.h's syntax) matched against a raw path.
 *
 * Pure (no I/O, no globals), so it is unit-tested and fuzzed on its own. A router is built once
 * per configuration generation and then only read, from any number of threads. */
#ifndef HF_GATEWAY_ROUTER_H
#define HF_GATEWAY_ROUTER_H

#include <stdbool.h>
#include <stddef.h>

#define HF_ROUTER_MAX_CAPTURES 8
#define HF_ROUTER_MAX_SEGMENTS 32   /* in a pattern */
#define HF_ROUTER_MAX_PATH_SEGS 256 /* in a path: deeper paths match nothing */

struct hf_router;

struct hf_router_capture {
    const char *name; /* the pattern's name, owned by the router */
    char *value;      /* percent-decoded, owned by the match (hf_router_match_clear) */
};

struct hf_router_match {
    /* The route's data; for METHOD_NOT_ALLOWED the data of the first route whose pattern
     * matched with another method (so its plugin can shape the 405). */
    void *data;
    size_t ncaptures;
    struct hf_router_capture captures[HF_ROUTER_MAX_CAPTURES];
    char allow[96]; /* METHOD_NOT_ALLOWED: the methods that would match, "GET, POST" */
};

enum hf_router_result {
    HF_ROUTER_FOUND,
    HF_ROUTER_METHOD_NOT_ALLOWED,
    HF_ROUTER_NOT_FOUND,
    HF_ROUTER_NO_MEMORY,
};

struct hf_router *hf_router_new(void);
void hf_router_free(struct hf_router *router);

/* Whether a route whose pattern matched takes this path at all (plugin.h's hf_route.accepts):
 * called with the route's data and the path as hf_router_match was given it. */
typedef bool (*hf_router_accepts_fn)(void *data, const char *path, size_t pathlen);

/* Appends a route (routes are tried in the order added). method and pattern are copied; data is
 * borrowed. false with a reason in err for a pattern plugin.h does not allow. */
bool hf_router_add(struct hf_router *router, const char *method, const char *pattern, void *data,
                   char *err, size_t errlen);
/* The same, for a route that may decline a path its pattern matches (accepts NULL: never
 * declines). A declined route is skipped as if its pattern had not matched: it makes neither a
 * FOUND nor a METHOD_NOT_ALLOWED. */
bool hf_router_add_filtered(struct hf_router *router, const char *method, const char *pattern,
                            void *data, hf_router_accepts_fn accepts, char *err, size_t errlen);
size_t hf_router_count(const struct hf_router *router);

/* path: the raw request path (no query), pathlen bytes. The first route whose method and pattern
 * match wins. m is always initialised; clear it with hf_router_match_clear. */
enum hf_router_result hf_router_match(const struct hf_router *router, const char *method,
                                      const char *path, size_t pathlen, struct hf_router_match *m);
void hf_router_match_clear(struct hf_router_match *m);

#endif /* HF_GATEWAY_ROUTER_H */
