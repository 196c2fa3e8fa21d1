/* Bearer-token verification (plugin.h's hf_jwt_*): RFC 7519 JWTs in RFC 7515 compact form, with
 * the RFC 8725 rules: the algorithm is the issuer's choice, never the token's (none and HMAC are
 * refused, and the key's type must be the one the algorithm names, so an RSA public key cannot
 * be used as an HMAC secret), crit is refused, and a verified token is cached by its hash. */
#include "hf-build.h"

#include "gateway/b64url.h"
#include "gateway/jwks.h"
#include "gateway/jwt.h"
#include "gateway/why.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>

#define MAX_HEADER 2048u
#define MAX_SIG 1024u /* RSA-8192 */
#define ES256_SIG 64u /* r || s, RFC 7518 section 3.4 */

struct hf_jwt {
    atomic_uint refs;
    struct json_object *claims;
    int64_t exp;
};

/* One issuer, its strings copied. */
struct issuer {
    struct hf_jwt_issuer cfg;
    char **strings; /* every copied string, to free */
    size_t nstrings;
    struct hf_jwks_source *keys;
};

struct hf_jwt_verifier {
    struct issuer *issuers;
    size_t nissuers;
    struct hf_jwt_cache *cache;
    EVP_MD *sha256;
    int64_t (*wall_s)(void);
};

static const char *member_string(const struct json_object *o, const char *name)
{
    struct json_object *v;

    if (!json_object_object_get_ex((struct json_object *)o, name, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* ---- the parse step ------------------------------------------------------------------------ */

static unsigned alg_of(const char *alg, char *why, size_t whylen)
{
    if (!alg) {
        hf_why(why, whylen, "token header has no alg");
        return 0;
    }
    if (strcmp(alg, "RS256") == 0) return HF_JWT_RS256;
    if (strcmp(alg, "ES256") == 0) return HF_JWT_ES256;
    if (strcasecmp(alg, "none") == 0)
        hf_why(why, whylen, "unsigned token (alg none) refused");
    else if (strncmp(alg, "HS", 2) == 0)
        hf_why(why, whylen, "HMAC token (alg HS*) refused");
    else
        hf_why(why, whylen, "token alg not supported");
    return 0;
}

static bool segment_json(const char *seg, size_t len, size_t max, int depth, const char *what,
                         struct json_object **out, char *why, size_t whylen)
{
    unsigned char *text = NULL;
    size_t n = 0;
    char reason[128];
    bool ok = false;

    if (!hf_b64url_decode(seg, len, max, &text, &n)) {
        hf_why(why, whylen, "token %s is not base64url", what);
        goto done;
    }
    if (hf_json_parse(text, n, max, depth, out, reason, sizeof(reason)) != HF_STATUS_OK) {
        hf_why(why, whylen, "token %s: %s", what, reason);
        goto done;
    }
    if (!json_object_is_type(*out, json_type_object)) {
        hf_why(why, whylen, "token %s is not a JSON object", what);
        json_object_put(*out);
        *out = NULL;
        goto done;
    }
    ok = true;
done:
    free(text);
    return ok;
}

static bool header_is_acceptable(struct hf_jws *jws, char *why, size_t whylen)
{
    struct json_object *crit;

    if (json_object_object_get_ex(jws->header, "crit", &crit)) {
        /* RFC 7515 section 4.1.11: we understand no extension, so none may be critical. */
        hf_why(why, whylen, "token header has crit");
        return false;
    }
    if (!(jws->alg = alg_of(member_string(jws->header, "alg"), why, whylen))) return false;
    if (!(jws->kid = member_string(jws->header, "kid"))) {
        hf_why(why, whylen, "token header has no kid");
        return false;
    }
    return true;
}

enum hf_status hf_jws_parse(const char *token, size_t len, struct hf_jws *out, char *why,
                            size_t whylen)
{
    const char *dot1, *dot2, *payload, *sig;

    memset(out, 0, sizeof(*out));
    if (!token || len == 0 || len > HF_JWT_MAX_LEN) {
        hf_why(why, whylen, "token empty or over 8 KiB");
        return HF_STATUS_UNAUTHENTICATED;
    }
    if (!(dot1 = memchr(token, '.', len)) ||
        !(dot2 = memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - token))) ||
        memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - token))) {
        hf_why(why, whylen, "token is not three dot-separated segments");
        return HF_STATUS_UNAUTHENTICATED;
    }
    payload = dot1 + 1;
    sig = dot2 + 1;
    out->signed_len = (size_t)(dot2 - token);
    if (!segment_json(token, (size_t)(dot1 - token), MAX_HEADER, 4, "header", &out->header, why,
                      whylen) ||
        !header_is_acceptable(out, why, whylen) ||
        !segment_json(payload, (size_t)(dot2 - payload), HF_JWT_MAX_LEN, HF_JSON_DEFAULT_DEPTH,
                      "claims", &out->claims, why, whylen))
        goto fail;
    if (!(out->iss = member_string(out->claims, "iss"))) {
        hf_why(why, whylen, "token has no string iss");
        goto fail;
    }
    if (!hf_b64url_decode(sig, len - (size_t)(sig - token), MAX_SIG, &out->sig, &out->siglen) ||
        out->siglen == 0) {
        hf_why(why, whylen, "token signature is empty or not base64url");
        goto fail;
    }
    return HF_STATUS_OK;
fail:
    hf_jws_clear(out);
    return HF_STATUS_UNAUTHENTICATED;
}

void hf_jws_clear(struct hf_jws *jws)
{
    if (!jws) return;
    json_object_put(jws->header);
    json_object_put(jws->claims);
    free(jws->sig);
    memset(jws, 0, sizeof(*jws));
}

/* ---- the claims rules ---------------------------------------------------------------------- */

/* Dates past this many seconds from the epoch either way (some 300,000 years) are refused, so
 * that adding the skew cannot overflow (json-c clamps larger integers to INT64_MAX). */
#define MAX_DATE 10000000000000LL

/* A NumericDate (RFC 7519 section 2): an integer or a number with a fraction. */
static bool numeric_date(const struct json_object *claims, const char *name, bool *present,
                         int64_t *out)
{
    struct json_object *v;
    double d;

    *present = json_object_object_get_ex((struct json_object *)claims, name, &v);
    if (!*present) return true;
    if (json_object_is_type(v, json_type_int)) {
        *out = json_object_get_int64(v);
        return *out >= -MAX_DATE && *out <= MAX_DATE;
    }
    if (!json_object_is_type(v, json_type_double)) return false;
    d = json_object_get_double(v);
    if (d < (double)-MAX_DATE || d > (double)MAX_DATE) return false;
    *out = (int64_t)d;
    return true;
}

static bool audience_is_accepted(const struct hf_jwt_issuer *iss, const char *aud)
{
    for (size_t i = 0; aud && i < iss->naudiences; i++)
        if (strcmp(iss->audiences[i], aud) == 0) return true;
    return false;
}

static bool aud_is_valid(const struct hf_jwt_issuer *iss, const struct json_object *claims)
{
    struct json_object *aud;
    size_t n;

    if (!json_object_object_get_ex((struct json_object *)claims, "aud", &aud)) return false;
    if (json_object_is_type(aud, json_type_string))
        return audience_is_accepted(iss, json_object_get_string(aud));
    if (!json_object_is_type(aud, json_type_array)) return false;
    n = json_object_array_length(aud);
    for (size_t i = 0; i < n; i++) {
        struct json_object *a = json_object_array_get_idx(aud, i);

        if (json_object_is_type(a, json_type_string) &&
            audience_is_accepted(iss, json_object_get_string(a)))
            return true;
    }
    return false;
}

static bool times_are_valid(const struct hf_jwt_issuer *iss, const struct json_object *claims,
                            int64_t now, char *why, size_t whylen)
{
    int64_t skew = iss->skew_s ? iss->skew_s : 60, exp = 0, nbf = 0, iat = 0;
    bool has_exp, has_nbf, has_iat;

    if (!numeric_date(claims, "exp", &has_exp, &exp) || !has_exp ||
        !numeric_date(claims, "nbf", &has_nbf, &nbf) ||
        !numeric_date(claims, "iat", &has_iat, &iat)) {
        hf_why(why, whylen, "token exp missing, or exp, nbf or iat not a number");
        return false;
    }
    if (now >= exp + skew) {
        hf_why(why, whylen, "token expired");
        return false;
    }
    if (has_nbf && nbf > now + skew) {
        hf_why(why, whylen, "token not yet valid (nbf)");
        return false;
    }
    if (has_iat && iat > now + skew) {
        hf_why(why, whylen, "token issued in the future (iat)");
        return false;
    }
    return true;
}

bool hf_jwt_claims_are_valid(const struct hf_jwt_issuer *iss, const struct json_object *claims,
                             int64_t now, char *why, size_t whylen)
{
    const char *got = member_string(claims, "iss");

    if (!got || strcmp(got, iss->issuer) != 0) {
        hf_why(why, whylen, "token iss is not the issuer's");
        return false;
    }
    if (!aud_is_valid(iss, claims)) {
        hf_why(why, whylen, "token aud holds none of the accepted audiences");
        return false;
    }
    if (!times_are_valid(iss, claims, now, why, whylen)) return false;
    for (size_t i = 0; i < iss->nrequired; i++)
        if (!json_object_object_get_ex((struct json_object *)claims, iss->required[i], NULL)) {
            hf_why(why, whylen, "token lacks a required claim");
            return false;
        }
    return true;
}

/* ---- signatures ---------------------------------------------------------------------------- */

/* JWS carries ECDSA signatures as r || s (RFC 7518 section 3.4); OpenSSL verifies DER. */
static unsigned char *es256_der(const unsigned char *sig, size_t siglen, int *derlen)
{
    ECDSA_SIG *es = ECDSA_SIG_new();
    BIGNUM *r = NULL, *s = NULL;
    unsigned char *der = NULL;

    *derlen = 0;
    if (!es || siglen != ES256_SIG || !(r = BN_bin2bn(sig, ES256_SIG / 2, NULL)) ||
        !(s = BN_bin2bn(sig + ES256_SIG / 2, ES256_SIG / 2, NULL)) || !ECDSA_SIG_set0(es, r, s))
        goto done;
    r = s = NULL;
    if ((*derlen = i2d_ECDSA_SIG(es, &der)) <= 0) der = NULL;
done:
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(es);
    return der;
}

static bool signature_is_valid(const struct hf_jwk *k, const struct hf_jws *jws, const char *input)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    unsigned char *der = NULL;
    const unsigned char *sig = jws->sig;
    size_t siglen = jws->siglen;
    int derlen;
    bool ok = false;

    if (!ctx) return false;
    if (k->alg == HF_JWT_ES256) {
        if (!(der = es256_der(jws->sig, jws->siglen, &derlen))) goto done;
        sig = der;
        siglen = (size_t)derlen;
    }
    if (EVP_DigestVerifyInit_ex(ctx, &pctx, "SHA256", NULL, NULL, k->pkey, NULL) != 1) goto done;
    if (k->alg == HF_JWT_RS256 && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1)
        goto done;
    ok = EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *)input, jws->signed_len) == 1;
done:
    OPENSSL_free(der);
    EVP_MD_CTX_free(ctx);
    return ok;
}

/* ---- the verifier -------------------------------------------------------------------------- */

static int64_t wall_now(void)
{
    return hf_wall_s();
}

HF_PLUGIN_EXPORT struct hf_jwt_verifier *hf_jwt_verifier_new(void)
{
    struct hf_jwt_verifier *v = calloc(1, sizeof(*v));

    if (!v) return NULL;
    v->wall_s = wall_now;
    if (!(v->cache = hf_jwt_cache_new()) || !(v->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL))) {
        hf_jwt_verifier_free(v);
        return NULL;
    }
    return v;
}

static char *keep(struct issuer *is, const char *s)
{
    char *copy = s ? strdup(s) : NULL;

    if (copy) is->strings[is->nstrings++] = copy;
    return copy;
}

/* Copies every string of cfg into is; false when out of memory. */
static bool issuer_copy(struct issuer *is, const struct hf_jwt_issuer *cfg)
{
    const char **auds, **req;

    is->cfg = *cfg;
    is->strings = calloc(2 + cfg->naudiences + cfg->nrequired, sizeof(char *));
    auds = calloc(cfg->naudiences + 1, sizeof(*auds));
    req = calloc(cfg->nrequired + 1, sizeof(*req));
    is->cfg.audiences = auds;
    is->cfg.required = req;
    if (!is->strings || !auds || !req || !(is->cfg.issuer = keep(is, cfg->issuer)) ||
        (cfg->jwks && !(is->cfg.jwks = keep(is, cfg->jwks))))
        return false;
    for (size_t i = 0; i < cfg->naudiences; i++)
        if (!(auds[i] = keep(is, cfg->audiences[i]))) return false;
    for (size_t i = 0; i < cfg->nrequired; i++)
        if (!(req[i] = keep(is, cfg->required[i]))) return false;
    if (!is->cfg.algs) is->cfg.algs = HF_JWT_RS256;
    is->cfg.fetch = NULL;     /* the key source keeps its own copy */
    is->cfg.jwks_json = NULL; /* parsed into the source, which keeps the keys */
    return true;
}

static void issuer_clear(struct issuer *is)
{
    hf_jwks_source_free(is->keys);
    for (size_t i = 0; i < is->nstrings; i++)
        free(is->strings[i]);
    free(is->strings);
    free((void *)is->cfg.audiences);
    free((void *)is->cfg.required);
    memset(is, 0, sizeof(*is));
}

static bool issuer_config_is_usable(const struct hf_jwt_issuer *iss, char *err, size_t errlen)
{
    if (!iss || !iss->issuer || !iss->issuer[0] ||
        !((iss->jwks && iss->jwks[0]) || iss->jwks_json)) {
        hf_why(err, errlen, "an issuer needs its iss and a JWKS");
        return false;
    }
    if (iss->naudiences == 0 || !iss->audiences) {
        hf_why(err, errlen, "issuer %s: no accepted audience", iss->issuer);
        return false;
    }
    if (iss->algs & ~(HF_JWT_RS256 | HF_JWT_ES256)) {
        hf_why(err, errlen, "issuer %s: algorithms other than RS256 and ES256", iss->issuer);
        return false;
    }
    return true;
}

HF_PLUGIN_EXPORT bool hf_jwt_verifier_add(struct hf_jwt_verifier *v,
                                          const struct hf_jwt_issuer *iss, char *err, size_t errlen)
{
    struct issuer *grown, *is;
    char why[512] = "";

    if (!v || !issuer_config_is_usable(iss, err, errlen)) return false;
    if (!(grown = realloc(v->issuers, (v->nissuers + 1) * sizeof(*grown)))) goto oom;
    v->issuers = grown;
    is = &v->issuers[v->nissuers];
    memset(is, 0, sizeof(*is));
    if (!issuer_copy(is, iss)) {
        issuer_clear(is);
        goto oom;
    }
    if (iss->jwks_json)
        is->keys = hf_jwks_source_inline(iss->jwks_json, why, sizeof(why));
    else
        is->keys =
            hf_jwks_source_new(is->cfg.jwks, iss->fetch,
                               iss->refresh_max_s ? iss->refresh_max_s : 3600, why, sizeof(why));
    if (!is->keys) {
        hf_why(err, errlen, "issuer %s: %s", iss->issuer, why);
        issuer_clear(is);
        return false;
    }
    v->nissuers++;
    return true;
oom:
    hf_why(err, errlen, "out of memory");
    return false;
}

HF_PLUGIN_EXPORT void hf_jwt_verifier_free(struct hf_jwt_verifier *v)
{
    if (!v) return;
    for (size_t i = 0; i < v->nissuers; i++)
        issuer_clear(&v->issuers[i]);
    free(v->issuers);
    hf_jwt_cache_free(v->cache);
    EVP_MD_free(v->sha256);
    free(v);
}

void hf_jwt_verifier_set_clock(struct hf_jwt_verifier *v, int64_t (*wall_s)(void))
{
    v->wall_s = wall_s ? wall_s : wall_now;
}

struct hf_jwks_source *hf_jwt_verifier_source(struct hf_jwt_verifier *v, size_t i)
{
    return i < v->nissuers ? v->issuers[i].keys : NULL;
}

/* The token against one issuer of its iss: algorithm, key, signature, claims. */
static bool issuer_accepts(struct issuer *is, const struct hf_jws *jws, const char *token,
                           int64_t now, char *why, size_t whylen)
{
    struct hf_jwks *set;
    const struct hf_jwk *k;
    bool ok = false;

    if (!(is->cfg.algs & jws->alg)) {
        hf_why(why, whylen, "token alg not allowed for its issuer");
        return false;
    }
    set = hf_jwks_source_get(is->keys);
    if (!(k = hf_jwks_find(set, jws->kid))) {
        hf_jwks_source_refetch(is->keys); /* a rotated key: the thread fetches, we fail now */
        hf_why(why, whylen, "token kid unknown to its issuer");
    } else if (k->alg != jws->alg) {
        hf_why(why, whylen, "token alg does not match its key's type");
    } else if (!signature_is_valid(k, jws, token)) {
        hf_why(why, whylen, "token signature does not verify");
    } else {
        ok = hf_jwt_claims_are_valid(&is->cfg, jws->claims, now, why, whylen);
    }
    hf_jwks_unref(set);
    return ok;
}

static struct hf_jwt *jwt_new(struct hf_jws *jws)
{
    struct hf_jwt *t = calloc(1, sizeof(*t));
    bool has_exp;

    if (!t) return NULL;
    atomic_init(&t->refs, 1);
    numeric_date(jws->claims, "exp", &has_exp, &t->exp);
    t->claims = jws->claims;
    jws->claims = NULL;
    return t;
}

HF_PLUGIN_EXPORT enum hf_status hf_jwt_verify(struct hf_jwt_verifier *v, const char *token,
                                              size_t len, struct hf_jwt **out, char *why,
                                              size_t whylen)
{
    unsigned char key[32];
    struct hf_jws jws;
    struct hf_jwt *t;
    bool known = false;
    int64_t now;

    if (out) *out = NULL;
    if (!v || !out) return HF_STATUS_INTERNAL;
    if (!token || len == 0 || len > HF_JWT_MAX_LEN) {
        hf_why(why, whylen, "token empty or over 8 KiB");
        return HF_STATUS_UNAUTHENTICATED;
    }
    now = v->wall_s();
    if (EVP_Digest(token, len, key, NULL, v->sha256, NULL) != 1) return HF_STATUS_INTERNAL;
    if ((*out = hf_jwt_cache_get(v->cache, key, now))) return HF_STATUS_OK;
    if (hf_jws_parse(token, len, &jws, why, whylen) != HF_STATUS_OK)
        return HF_STATUS_UNAUTHENTICATED;
    for (size_t i = 0; i < v->nissuers && !*out; i++) {
        if (strcmp(v->issuers[i].cfg.issuer, jws.iss) != 0) continue;
        known = true;
        if (!issuer_accepts(&v->issuers[i], &jws, token, now, why, whylen)) continue;
        if (!(t = jwt_new(&jws))) break;
        hf_jwt_cache_put(v->cache, key, t, t->exp, now);
        *out = t;
    }
    if (!known) hf_why(why, whylen, "token iss is no configured issuer");
    hf_jws_clear(&jws);
    return *out ? HF_STATUS_OK : HF_STATUS_UNAUTHENTICATED;
}

HF_PLUGIN_EXPORT const char *hf_jwt_claim(const struct hf_jwt *t, const char *name)
{
    return t && name ? member_string(t->claims, name) : NULL;
}

HF_PLUGIN_EXPORT const struct json_object *hf_jwt_claims(const struct hf_jwt *t)
{
    return t ? t->claims : NULL;
}

HF_PLUGIN_EXPORT int64_t hf_jwt_exp(const struct hf_jwt *t)
{
    return t ? t->exp : 0;
}

struct hf_jwt *hf_jwt_ref(struct hf_jwt *t)
{
    if (t) atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

HF_PLUGIN_EXPORT void hf_jwt_release(struct hf_jwt *t)
{
    if (!t || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1) return;
    json_object_put(t->claims);
    free(t);
}

/* RFC 6750 section 2.1; the scheme is case-insensitive (RFC 9110 section 11.1). A repeated
 * Authorization header is no token: which copy counts would depend on the reader. */
HF_PLUGIN_EXPORT const char *hf_request_bearer(const struct hf_request *req, size_t *len)
{
    const char *h, *tok;
    size_t n;

    if (!req || !len || hf_request_header_count(req, "Authorization") != 1) return NULL;
    if (!(h = hf_request_header(req, "Authorization")) || strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    for (tok = h + 7; *tok == ' '; tok++)
        ;
    for (n = strlen(tok); n > 0 && (tok[n - 1] == ' ' || tok[n - 1] == '\t'); n--)
        ;
    if (n == 0 || memchr(tok, ' ', n)) return NULL;
    *len = n;
    return tok;
}

/* The step every bearer-token API takes first, worded once: which of the three ways a request
 * can lack a usable token it is, and the verifier's reason otherwise. */
HF_PLUGIN_EXPORT enum hf_status hf_request_bearer_verify(const struct hf_request *req,
                                                         struct hf_jwt_verifier *v,
                                                         struct hf_jwt **out, char *why,
                                                         size_t whylen)
{
    const char *token;
    size_t len = 0, n;
    char reason[256] = "";

    if (out != NULL) *out = NULL;
    if (req == NULL || v == NULL || out == NULL) {
        hf_why(why, whylen, "internal: no request, verifier or result");
        return HF_STATUS_INTERNAL;
    }
    if ((n = hf_request_header_count(req, "Authorization")) > 1) {
        hf_why(why, whylen, "Authorization is given more than once");
        return HF_STATUS_UNAUTHENTICATED;
    }
    if ((token = hf_request_bearer(req, &len)) == NULL) {
        hf_why(why, whylen,
               n == 0 ? "a bearer token is required: Authorization: Bearer <token>"
                      : "Authorization is not one bearer token");
        return HF_STATUS_UNAUTHENTICATED;
    }
    if (hf_jwt_verify(v, token, len, out, reason, sizeof(reason)) != HF_STATUS_OK) {
        hf_why(why, whylen, "the bearer token is refused: %s", reason);
        return HF_STATUS_UNAUTHENTICATED;
    }
    return HF_STATUS_OK;
}
