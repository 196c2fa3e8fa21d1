/* JSON Web Key Sets (RFC 7517) for JWT verification: a parsed set of public keys, and a source
 * that keeps one current (a file or an https URL, refreshed by a thread of its own). Gateway
 * internal: plugins reach these through plugin.h's hf_jwt_* only. */
#ifndef HF_GATEWAY_JWKS_H
#define HF_GATEWAY_JWKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "gateway/plugin.h"

/* A key set's size limits: a JWKS is a few keys; more is an attack or a mistake. */
#define HF_JWKS_MAX_BYTES (256u << 10)
#define HF_JWKS_MAX_KEYS 64u
#define HF_JWKS_MAX_KID 256u

/* Unknown-kid refetches are at least this far apart (the specs' 30 s). */
#define HF_JWKS_REFETCH_MIN_S 30u
/* A refresh never comes sooner than this after the last, whatever Cache-Control says. */
#define HF_JWKS_REFRESH_MIN_S 60u

struct hf_jwk {
    const char *kid;
    unsigned alg;   /* the one algorithm it verifies: HF_JWT_RS256 (RSA) or HF_JWT_ES256 (P-256) */
    EVP_PKEY *pkey; /* public key; shared by every thread that verifies with it */
};

/* An immutable set, reference-counted so a refresh never pulls a key from under a verify. */
struct hf_jwks;

/* Parses a JWKS. Keys of another kty, another curve, another alg or use "enc" are skipped;
 * duplicate kids, bad base64url, RSA moduli outside 2048-8192 bits, points off the curve and
 * sets over the limits above are refused (false with a printable reason). */
bool hf_jwks_parse(const char *text, size_t len, struct hf_jwks **out, char *why, size_t whylen);
/* The key with this kid, or NULL; valid while the set is held. */
const struct hf_jwk *hf_jwks_find(const struct hf_jwks *set, const char *kid);
size_t hf_jwks_count(const struct hf_jwks *set);
struct hf_jwks *hf_jwks_ref(struct hf_jwks *set);
void hf_jwks_unref(struct hf_jwks *set);

/* Reads a set from a file path or an https URL (through hf_https_fetch with policy); *max_age_s
 * gets the reply's Cache-Control max-age (-1: none, or a file). */
bool hf_jwks_load(const char *location, const struct hf_outbound_policy *policy,
                  struct hf_jwks **out, long *max_age_s, char *why, size_t whylen);

/* A set kept current by a thread: refreshed every max-age (bounded to
 * [HF_JWKS_REFRESH_MIN_S, refresh_max_s]), and on demand for an unknown kid. A failed refresh
 * keeps the last good set. */
struct hf_jwks_source;

/* Copies location and policy (its strings too) and loads the set now. A file that cannot be
 * loaded: NULL with the reason. A URL that cannot be fetched: logged, retried in the background,
 * and the source starts empty. NULL also when out of memory. */
struct hf_jwks_source *hf_jwks_source_new(const char *location,
                                          const struct hf_outbound_policy *policy,
                                          unsigned refresh_max_s, char *err, size_t errlen);
/* A set given as JWKS text (copied by parsing it): never fetched, never refreshed, refetch does
 * nothing. For keys the gateway holds itself (a KACLS's own signing keys). NULL with the reason
 * when the text is not a usable key set. */
struct hf_jwks_source *hf_jwks_source_inline(const char *json, char *err, size_t errlen);
/* The current set (a reference: hf_jwks_unref), or NULL while none was loaded. */
struct hf_jwks *hf_jwks_source_get(struct hf_jwks_source *src);
/* Asks the thread for a refetch, at most once per HF_JWKS_REFETCH_MIN_S; never waits. */
void hf_jwks_source_refetch(struct hf_jwks_source *src);
/* How many times a set was loaded: tests wait on it rather than on time. */
uint64_t hf_jwks_source_loads(struct hf_jwks_source *src);
void hf_jwks_source_free(struct hf_jwks_source *src);
/* Seconds until the next refresh: after a load, Cache-Control's max-age bounded to
 * [HF_JWKS_REFRESH_MIN_S, refresh_max_s] (none: refresh_max_s); after a failure,
 * HF_JWKS_REFRESH_MIN_S while a set is held, a few seconds while none ever was. */
unsigned hf_jwks_next_refresh_s(bool loaded, bool have_set, long max_age_s, unsigned refresh_max_s);

#endif /* HF_GATEWAY_JWKS_H */
