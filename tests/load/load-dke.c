/* hf-load's Microsoft DKE builder (specs/ms-dke.md): decrypt with an Entra ID bearer token, as
 * Office does when it opens a protected document. The token is minted once from a test key
 * (RS256); each VU fetches the key's public key once (the anonymous GET, unmeasured), encrypts a
 * random 32-byte key on it with OpenSSL (RSA-OAEP-256, as Office encrypts locally), and then
 * only decrypts that ciphertext at the key's current version (the kid's last segment), which
 * must give back the VU's own bytes. */
#include "hf-build.h"

#include "tests/load/load.h"

#include <json.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DKE_TOKEN_LIFE_S 3600 /* a run never outlasts it */
#define DKE_DEFAULT_ISSUER "https://sts.windows.net/00000000-0000-4000-8000-00000000d4e0/"
#define DKE_KEY_LEN 32
#define DKE_OFFICE_APPID "d3590ed6-52b3-4102-aeff-aad2292ab01c"
#define B64_LEN(n) (((n) + 2) / 3 * 4)

struct dke_state {
    char *token;
    char base[1600]; /* "<url path>[/<prefix>]/<keyName>" */
    char authority[272];
};

struct dke_vu {
    bool ready;
    char key[B64_LEN(DKE_KEY_LEN) + 1];
    struct hf_buf request; /* the VU's decrypt, once prepared */
};

/* Office's v1 token for the DKE service: the tenant's issuer, the service's URL as audience. */
static char *token_mint(const struct hf_load_config *cfg, char *err, size_t errlen)
{
    struct json_object *c = json_object_new_object();
    int64_t now = (int64_t)time(NULL);
    char aud[300];
    char *token;

    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(aud, sizeof(aud), "https://%s", cfg->target.authority);
    json_object_object_add(c, "iss",
                           json_object_new_string(cfg->issuer ? cfg->issuer : DKE_DEFAULT_ISSUER));
    json_object_object_add(c, "aud", json_object_new_string(cfg->audience ? cfg->audience : aud));
    json_object_object_add(c, "email", json_object_new_string(cfg->email));
    json_object_object_add(c, "upn", json_object_new_string(cfg->email));
    json_object_object_add(c, "oid",
                           json_object_new_string("00000000-0000-4000-8000-0000000001fd"));
    json_object_object_add(c, "appid", json_object_new_string(DKE_OFFICE_APPID));
    json_object_object_add(c, "scp", json_object_new_string("user_impersonation"));
    json_object_object_add(c, "iat", json_object_new_int64(now));
    json_object_object_add(c, "nbf", json_object_new_int64(now));
    json_object_object_add(c, "exp", json_object_new_int64(now + DKE_TOKEN_LIFE_S));
    token = hf_load_jwt_mint(cfg->token_key, cfg->token_kid, c, err, errlen);
    json_object_put(c);
    return token;
}

static void dke_free(void *state)
{
    struct dke_state *s = state;

    if (!s) return;
    free(s->token);
    free(s);
}

static void dke_vu_free(void *vu_state)
{
    struct dke_vu *v = vu_state;

    if (!v) return;
    hf_buf_free(&v->request);
    OPENSSL_cleanse(v, sizeof(*v));
    free(v);
}

static bool key_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 128) return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              strchr("._-", *s)))
            return false;
    return true;
}

static int dke_init(const struct hf_load_config *cfg, void **state, char *err, size_t errlen)
{
    struct dke_state *s = calloc(1, sizeof(*s));
    const char *prefix = cfg->prefix ? cfg->prefix : "";
    char why[512];
    int n, rc = -1;

    while (*prefix == '/')
        prefix++;
    if (!s) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (!cfg->key_id || !cfg->token_key || !cfg->token_kid || !cfg->email || !*cfg->email) {
        snprintf(err, errlen,
                 "--api %s needs --key-id KEYNAME, --token-key PEM, --token-kid KID and --email",
                 cfg->api->name);
        goto done;
    }
    if (!key_name_ok(cfg->key_id)) {
        snprintf(err, errlen, "--key-id '%s': a DKE key name is 1 to 128 of [A-Za-z0-9._-]",
                 cfg->key_id);
        goto done;
    }
    if (!(s->token = token_mint(cfg, why, sizeof(why)))) {
        snprintf(err, errlen, "--token-key %s", why);
        goto done;
    }
    n = snprintf(s->base, sizeof(s->base), "%s%s%s/%s", cfg->target.path, *prefix ? "/" : "",
                 prefix, cfg->key_id);
    if (n < 0 || (size_t)n >= sizeof(s->base)) {
        snprintf(err, errlen, "--url path, --prefix and --key-id are too long");
        goto done;
    }
    snprintf(s->authority, sizeof(s->authority), "%s", cfg->target.authority);
    *state = s;
    s = NULL;
    rc = 0;
done:
    dke_free(s);
    return rc;
}

static int dke_build(void *state, void **vu_state, struct hf_buf *out, bool *setup)
{
    struct dke_state *s = state;
    struct dke_vu *v = *vu_state;

    if (!v) {
        if (!(v = calloc(1, sizeof(*v)))) return -1;
        *vu_state = v;
    }
    *setup = !v->ready;
    if (v->ready) return hf_buf_append(out, v->request.data, v->request.len);
    return hf_buf_printf(out, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", s->base, s->authority);
}

/* The JWK's n (standard base64, big-endian) and e (a JSON integer) as an OpenSSL public key. */
static EVP_PKEY *jwk_public(struct json_object *jwk)
{
    struct json_object *e_obj;
    const char *n64 = hf_load_json_str(jwk, "n");
    unsigned char *n = NULL;
    size_t nlen = 0;
    BIGNUM *bn_n = NULL, *bn_e = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    EVP_PKEY *pub = NULL;

    if (!json_object_object_get_ex(jwk, "e", &e_obj) ||
        !json_object_is_type(e_obj, json_type_int) || json_object_get_int64(e_obj) < 3 ||
        !(n = hf_load_unb64(n64, &nlen)) || !(bn_n = BN_bin2bn(n, (int)nlen, NULL)) ||
        !(bn_e = BN_new()) || !BN_set_word(bn_e, (BN_ULONG)json_object_get_int64(e_obj)) ||
        !(bld = OSSL_PARAM_BLD_new()) ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) ||
        !(params = OSSL_PARAM_BLD_to_param(bld)) ||
        !(ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) ||
        EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pub, EVP_PKEY_PUBLIC_KEY, params) != 1)
        pub = NULL;
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn_e);
    BN_free(bn_n);
    free(n);
    return pub;
}

/* The version to decrypt at: the kid URL's last segment (Office posts to kid + "/decrypt"). */
static const char *kid_version(const char *kid)
{
    const char *slash = kid ? strrchr(kid, '/') : NULL;

    if (!slash || !slash[1] || strchr(slash, '"') || strchr(slash, '\\') || strchr(slash, '?'))
        return NULL;
    return slash + 1;
}

static int dke_prepare(const struct dke_state *s, struct dke_vu *v, struct json_object *o)
{
    struct json_object *jwk = NULL;
    EVP_PKEY *pub = NULL;
    unsigned char key[DKE_KEY_LEN], *ct = NULL;
    const char *version, *kty;
    size_t ctlen = 0;
    char *ct64 = NULL;
    int n, rc = -1;

    if (!json_object_object_get_ex(o, "key", &jwk) || !json_object_is_type(jwk, json_type_object) ||
        !(kty = hf_load_json_str(jwk, "kty")) || strcmp(kty, "RSA") != 0 ||
        !(version = kid_version(hf_load_json_str(jwk, "kid"))) || !(pub = jwk_public(jwk)) ||
        RAND_bytes(key, sizeof(key)) != 1 ||
        hf_load_rsa_oaep256_encrypt(pub, key, sizeof(key), &ct, &ctlen) != 0 ||
        !(ct64 = hf_load_b64(ct, ctlen)))
        goto done;
    EVP_EncodeBlock((unsigned char *)v->key, key, (int)sizeof(key));
    n = (int)(sizeof("{\"alg\":\"RSA-OAEP-256\",\"value\":\"\"}") - 1 + strlen(ct64));
    v->request.len = 0;
    if (hf_buf_printf(&v->request,
                      "POST %s/%s/decrypt HTTP/1.1\r\nHost: %s\r\nContent-Type: "
                      "application/json\r\nContent-Length: %d\r\nAuthorization: Bearer %s\r\n\r\n"
                      "{\"alg\":\"RSA-OAEP-256\",\"value\":\"%s\"}",
                      s->base, version, s->authority, n, s->token, ct64) != 0)
        goto done;
    rc = 0;
done:
    OPENSSL_cleanse(key, sizeof(key));
    free(ct64);
    free(ct);
    EVP_PKEY_free(pub);
    return rc;
}

static int dke_check(void *state, void **vu_state, bool setup, const char *body, size_t len)
{
    struct dke_vu *v = *vu_state;
    struct json_object *o = hf_load_reply_parse(body, len);
    const char *pt;
    int rc = -1;

    if (!o || !v) goto done;
    if (!setup) {
        pt = hf_load_json_str(o, "value");
        rc = pt && strcmp(pt, v->key) == 0 ? 0 : -1;
        goto done;
    }
    rc = dke_prepare(state, v, o);
    v->ready = rc == 0;
done:
    json_object_put(o);
    return rc;
}

const struct hf_load_api hf_load_api_dke_decrypt = {
    .name = "dke-decrypt",
    .seed_api = NULL, /* beyond the seeds: Microsoft publishes no figure */
    .title = "Microsoft DKE decrypt (Entra ID bearer token, RSA-OAEP-256)",
    .limit_ms = 100,
    .init = dke_init,
    .free_state = dke_free,
    .build = dke_build,
    .check = dke_check,
    .free_vu = dke_vu_free,
};
