/* JWKS parsing (RFC 7517, with RFC 7518 section 6 for the RSA and EC members). Keys are built
 * with EVP_PKEY_fromdata, so OpenSSL checks what it builds; what stays here is the shape of the
 * document and the limits a hostile or broken key server could otherwise push on us. */
#include "hf-build.h"

#include "gateway/b64url.h"
#include "gateway/jwks.h"
#include "gateway/outbound.h"
#include "gateway/why.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>

#define RSA_MIN_BYTES 256u  /* 2048 bits: RFC 7518 section 3.3 */
#define RSA_MAX_BYTES 1024u /* 8192 bits: past that a verify is a denial of service */
#define RSA_MAX_E_BYTES 8u
#define P256_COORD_BYTES 32u

struct hf_jwks {
    atomic_uint refs;
    size_t n;
    struct hf_jwk keys[HF_JWKS_MAX_KEYS];
};

static const char *member_string(struct json_object *o, const char *name)
{
    struct json_object *v;

    if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* A base64url member of at most max bytes, decoded; NULL (with *why) when absent or bad. */
static unsigned char *member_bytes(struct json_object *o, const char *name, size_t max, size_t *len)
{
    const char *s = member_string(o, name);
    unsigned char *out;

    if (!s || !hf_b64url_decode(s, strlen(s), max, &out, len)) return NULL;
    return out;
}

static EVP_PKEY *pkey_from_params(const char *type, OSSL_PARAM_BLD *bld)
{
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    EVP_PKEY *pkey = NULL;

    if (!params || !ctx || EVP_PKEY_fromdata_init(ctx) <= 0 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0)
        pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    return pkey;
}

static EVP_PKEY *rsa_key(struct json_object *o, char *why, size_t whylen)
{
    unsigned char *n = NULL, *e = NULL;
    size_t nlen = 0, elen = 0;
    BIGNUM *bn = NULL, *be = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    EVP_PKEY *pkey = NULL;

    if (!(n = member_bytes(o, "n", RSA_MAX_BYTES + 1, &nlen)) ||
        !(e = member_bytes(o, "e", RSA_MAX_E_BYTES, &elen))) {
        hf_why(why, whylen, "RSA key without valid base64url n and e");
        goto done;
    }
    /* RFC 7518 section 6.3.1.1: no leading zero octet, so the length is the size. */
    if (nlen < RSA_MIN_BYTES || nlen > RSA_MAX_BYTES || n[0] == 0) {
        hf_why(why, whylen, "RSA modulus of %zu bytes (2048 to 8192 bits taken)", nlen);
        goto done;
    }
    if (elen == 0 || !(e[elen - 1] & 1) || (elen == 1 && e[0] < 3)) {
        hf_why(why, whylen, "RSA public exponent is not an odd number of at least 3");
        goto done;
    }
    if (!(bn = BN_bin2bn(n, (int)nlen, NULL)) || !(be = BN_bin2bn(e, (int)elen, NULL)) ||
        !(bld = OSSL_PARAM_BLD_new()) || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) ||
        !(pkey = pkey_from_params("RSA", bld)))
        hf_why(why, whylen, "RSA key refused by OpenSSL");
done:
    BN_free(bn);
    BN_free(be);
    OSSL_PARAM_BLD_free(bld);
    free(n);
    free(e);
    return pkey;
}

static EVP_PKEY *p256_key(struct json_object *o, char *why, size_t whylen)
{
    unsigned char *x = NULL, *y = NULL, point[1 + 2 * P256_COORD_BYTES];
    size_t xlen = 0, ylen = 0;
    OSSL_PARAM_BLD *bld = NULL;
    EVP_PKEY_CTX *check = NULL;
    EVP_PKEY *pkey = NULL;

    if (!(x = member_bytes(o, "x", P256_COORD_BYTES, &xlen)) ||
        !(y = member_bytes(o, "y", P256_COORD_BYTES, &ylen)) || xlen != P256_COORD_BYTES ||
        ylen != P256_COORD_BYTES) {
        hf_why(why, whylen, "P-256 key without 32-byte base64url x and y");
        goto done;
    }
    point[0] = 4; /* uncompressed (SEC 1 section 2.3.3) */
    memcpy(point + 1, x, P256_COORD_BYTES);
    memcpy(point + 1 + P256_COORD_BYTES, y, P256_COORD_BYTES);
    if (!(bld = OSSL_PARAM_BLD_new()) ||
        !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) ||
        !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof(point)) ||
        !(pkey = pkey_from_params("EC", bld)) || !(check = EVP_PKEY_CTX_new(pkey, NULL)) ||
        EVP_PKEY_public_check(check) != 1) {
        hf_why(why, whylen, "P-256 point refused by OpenSSL");
        EVP_PKEY_free(pkey);
        pkey = NULL;
    }
done:
    EVP_PKEY_CTX_free(check);
    OSSL_PARAM_BLD_free(bld);
    free(x);
    free(y);
    return pkey;
}

/* Which algorithm a key is for, or 0 to skip it (another kty, curve, alg or use). */
static unsigned key_alg(struct json_object *o)
{
    const char *kty = member_string(o, "kty"), *alg = member_string(o, "alg");
    const char *use = member_string(o, "use"), *crv = member_string(o, "crv");
    unsigned want;

    if (!kty) return 0;
    if (strcmp(kty, "RSA") == 0)
        want = HF_JWT_RS256;
    else if (strcmp(kty, "EC") == 0 && crv && strcmp(crv, "P-256") == 0)
        want = HF_JWT_ES256;
    else
        return 0;
    if (use && strcmp(use, "sig") != 0) return 0;
    if (alg && strcmp(alg, want == HF_JWT_RS256 ? "RS256" : "ES256") != 0) return 0;
    return want;
}

static bool add_key(struct hf_jwks *set, struct json_object *o, size_t index, char *why,
                    size_t whylen)
{
    char reason[160] = "";
    const char *kid = member_string(o, "kid");
    unsigned alg = key_alg(o);
    struct hf_jwk *k;

    if (alg == 0) return true;
    if (!kid || kid[0] == '\0' || strlen(kid) > HF_JWKS_MAX_KID) {
        hf_why(why, whylen, "key %zu: no kid, or one over %u bytes", index, HF_JWKS_MAX_KID);
        return false;
    }
    if (hf_jwks_find(set, kid)) {
        hf_why(why, whylen, "key %zu: a second key with the same kid", index);
        return false;
    }
    k = &set->keys[set->n];
    k->pkey = alg == HF_JWT_RS256 ? rsa_key(o, reason, sizeof(reason))
                                  : p256_key(o, reason, sizeof(reason));
    if (!k->pkey) {
        hf_why(why, whylen, "key %zu: %s", index, reason);
        return false;
    }
    /* kid points into the parsed document, which the set does not keep: copy it. */
    if (!(k->kid = strdup(kid))) {
        EVP_PKEY_free(k->pkey);
        hf_why(why, whylen, "out of memory");
        return false;
    }
    k->alg = alg;
    set->n++;
    return true;
}

bool hf_jwks_parse(const char *text, size_t len, struct hf_jwks **out, char *why, size_t whylen)
{
    struct json_object *doc = NULL, *keys;
    struct hf_jwks *set = NULL;
    char reason[160];
    size_t nkeys;
    bool ok = false;

    *out = NULL;
    if (hf_json_parse(text, len, HF_JWKS_MAX_BYTES, 8, &doc, reason, sizeof(reason)) !=
        HF_STATUS_OK) {
        hf_why(why, whylen, "JWKS: %s", reason);
        goto done;
    }
    if (!json_object_is_type(doc, json_type_object) ||
        !json_object_object_get_ex(doc, "keys", &keys) ||
        !json_object_is_type(keys, json_type_array)) {
        hf_why(why, whylen, "JWKS: no \"keys\" array");
        goto done;
    }
    if ((nkeys = json_object_array_length(keys)) > HF_JWKS_MAX_KEYS) {
        hf_why(why, whylen, "JWKS: %zu keys, over %u", nkeys, HF_JWKS_MAX_KEYS);
        goto done;
    }
    if (!(set = calloc(1, sizeof(*set)))) {
        hf_why(why, whylen, "out of memory");
        goto done;
    }
    atomic_init(&set->refs, 1);
    for (size_t i = 0; i < nkeys; i++) {
        struct json_object *k = json_object_array_get_idx(keys, i);

        if (!json_object_is_type(k, json_type_object)) {
            hf_why(why, whylen, "JWKS: key %zu is not an object", i);
            goto done;
        }
        if (!add_key(set, k, i, why, whylen)) goto done;
    }
    *out = set;
    set = NULL;
    ok = true;
done:
    hf_jwks_unref(set);
    json_object_put(doc);
    return ok;
}

const struct hf_jwk *hf_jwks_find(const struct hf_jwks *set, const char *kid)
{
    if (!set || !kid) return NULL;
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->keys[i].kid, kid) == 0) return &set->keys[i];
    return NULL;
}

size_t hf_jwks_count(const struct hf_jwks *set)
{
    return set ? set->n : 0;
}

struct hf_jwks *hf_jwks_ref(struct hf_jwks *set)
{
    if (set) atomic_fetch_add_explicit(&set->refs, 1, memory_order_relaxed);
    return set;
}

void hf_jwks_unref(struct hf_jwks *set)
{
    if (!set || atomic_fetch_sub_explicit(&set->refs, 1, memory_order_acq_rel) != 1) return;
    for (size_t i = 0; i < set->n; i++) {
        EVP_PKEY_free(set->keys[i].pkey);
        free((char *)set->keys[i].kid);
    }
    free(set);
}

static bool read_file(const char *path, char **text, size_t *len, char *why, size_t whylen)
{
    FILE *f = fopen(path, "re");
    char *buf = NULL;
    size_t n;
    bool ok = false;

    if (!f) {
        hf_why(why, whylen, "%s: %s", path, strerror(errno));
        return false;
    }
    if (!(buf = malloc(HF_JWKS_MAX_BYTES + 1))) {
        hf_why(why, whylen, "out of memory");
        goto done;
    }
    n = fread(buf, 1, HF_JWKS_MAX_BYTES + 1, f);
    if (ferror(f) || n > HF_JWKS_MAX_BYTES) {
        hf_why(why, whylen, "%s: %s", path, ferror(f) ? "read error" : "over 256 KiB");
        goto done;
    }
    *text = buf;
    *len = n;
    buf = NULL;
    ok = true;
done:
    free(buf);
    fclose(f);
    return ok;
}

bool hf_jwks_load(const char *location, const struct hf_outbound_policy *policy,
                  struct hf_jwks **out, long *max_age_s, char *why, size_t whylen)
{
    struct hf_outbound_policy p = policy ? *policy : (struct hf_outbound_policy){0};
    char *text = NULL, reason[256] = "";
    size_t len = 0;
    long status = 0;
    bool ok = false;

    *out = NULL;
    *max_age_s = -1;
    if (strncmp(location, "https://", 8) != 0 && strncmp(location, "http://", 7) != 0) {
        if (!read_file(location, &text, &len, why, whylen)) return false;
    } else {
        if (!p.max_response) p.max_response = HF_JWKS_MAX_BYTES;
        if (hf_https_fetch(&p, "GET", location, NULL, 0, NULL, 0, &status, &text, &len, max_age_s,
                           reason, sizeof(reason)) != HF_STATUS_OK) {
            hf_why(why, whylen, "%s: %s", location, reason);
            return false;
        }
        if (status != 200) {
            hf_why(why, whylen, "%s: HTTP status %ld", location, status);
            goto done;
        }
    }
    ok = hf_jwks_parse(text, len, out, why, whylen);
done:
    free(text);
    return ok;
}
