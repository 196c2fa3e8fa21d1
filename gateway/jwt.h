/* JWT verification's inner parts (gateway internal; plugins use plugin.h's hf_jwt_*): the
 * compact JWS parse and the claims rules, which need no key (the fuzz target drives them), the
 * verified-token cache, and the test hooks. */
#ifndef HF_GATEWAY_JWT_H
#define HF_GATEWAY_JWT_H

#include "gateway/plugin.h"

#define HF_JWT_MAX_LEN 8192u

/* A compact JWS split and decoded; nothing checked but its form. */
struct hf_jws {
    struct json_object *header, *claims; /* objects, owned */
    unsigned char *sig;                  /* owned */
    size_t siglen;
    size_t signed_len; /* bytes of "header.payload", the signing input */
    unsigned alg;      /* HF_JWT_RS256, HF_JWT_ES256 */
    const char *kid;   /* in header */
    const char *iss;   /* in claims */
};

/* Three base64url segments, a header (JSON object: alg RS256 or ES256, a kid, no crit) and a
 * claims object (with a string iss), both read by hf_json_parse; at most HF_JWT_MAX_LEN bytes.
 * HF_STATUS_UNAUTHENTICATED with a printable reason otherwise. */
enum hf_status hf_jws_parse(const char *token, size_t len, struct hf_jws *out, char *why,
                            size_t whylen);
void hf_jws_clear(struct hf_jws *jws);

/* The issuer's claims rules at time now (seconds since the epoch): iss, aud, exp, nbf, iat, the
 * required claims. false with a printable reason. */
bool hf_jwt_claims_are_valid(const struct hf_jwt_issuer *iss, const struct json_object *claims,
                             int64_t now, char *why, size_t whylen);

/* The verified-token cache: keyed by a token's SHA-256, bounded, thread-safe. */
struct hf_jwt_cache;
struct hf_jwt_cache *hf_jwt_cache_new(void);
void hf_jwt_cache_free(struct hf_jwt_cache *c);
/* A reference to the token cached under key, if it expires after now; else NULL. */
struct hf_jwt *hf_jwt_cache_get(struct hf_jwt_cache *c, const unsigned char key[32], int64_t now);
/* Caches t (taking a reference of its own) until expires, evicting the oldest entry of its set
 * when full. */
void hf_jwt_cache_put(struct hf_jwt_cache *c, const unsigned char key[32], struct hf_jwt *t,
                      int64_t expires, int64_t now);

struct hf_jwt *hf_jwt_ref(struct hf_jwt *t);

/* Tests: the wall clock the verifier reads (exp, nbf, iat, cache expiry). */
void hf_jwt_verifier_set_clock(struct hf_jwt_verifier *v, int64_t (*wall_s)(void));
/* Tests: the key source of issuer i (added order), to wait for a refetch. */
struct hf_jwks_source *hf_jwt_verifier_source(struct hf_jwt_verifier *v, size_t i);

#endif /* HF_GATEWAY_JWT_H */
