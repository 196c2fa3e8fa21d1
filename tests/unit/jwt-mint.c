/* Test fixtures for bearer tokens (jwt-mint.h). */
#include "hf-build.h"

#include "tests/unit/jwt-mint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>

EVP_PKEY *hf_test_key_rsa(unsigned bits)
{
    return EVP_RSA_gen(bits);
}

EVP_PKEY *hf_test_key_p256(void)
{
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

char *hf_test_b64url(const void *data, size_t len)
{
    char *out = malloc((len + 2) / 3 * 4 + 1);
    int n;

    if (!out) return NULL;
    n = EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    while (n > 0 && out[n - 1] == '=')
        n--;
    out[n] = '\0';
    for (char *p = out; *p; p++)
        *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
    return out;
}

static char *bn_param_b64url(EVP_PKEY *key, const char *name, int pad)
{
    BIGNUM *bn = NULL;
    unsigned char buf[1024];
    char *out = NULL;
    int n;

    if (!EVP_PKEY_get_bn_param(key, name, &bn)) return NULL;
    n = pad ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf);
    if (n > 0) out = hf_test_b64url(buf, (size_t)n);
    BN_free(bn);
    return out;
}

char *hf_test_jwk(EVP_PKEY *key, const char *kid)
{
    char *a, *b, *out = malloc(4096);
    bool rsa = EVP_PKEY_is_a(key, "RSA");

    if (!out) return NULL;
    a = bn_param_b64url(key, rsa ? OSSL_PKEY_PARAM_RSA_N : OSSL_PKEY_PARAM_EC_PUB_X, rsa ? 0 : 32);
    b = bn_param_b64url(key, rsa ? OSSL_PKEY_PARAM_RSA_E : OSSL_PKEY_PARAM_EC_PUB_Y, rsa ? 0 : 32);
    if (rsa)
        snprintf(out, 4096,
                 "{\"kty\":\"RSA\",\"kid\":\"%s\",\"use\":\"sig\",\"n\":\"%s\",\"e\":\"%s\"}", kid,
                 a, b);
    else
        snprintf(out, 4096,
                 "{\"kty\":\"EC\",\"kid\":\"%s\",\"crv\":\"P-256\",\"x\":\"%s\",\"y\":\"%s\"}", kid,
                 a, b);
    free(a);
    free(b);
    return out;
}

bool hf_test_jwks_write(const char *path, const char *const *jwks, size_t n)
{
    char tmp[4096];
    FILE *f;
    bool ok;

    /* Written beside and renamed, so a refresh never reads half a file. */
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (!(f = fopen(tmp, "w"))) return false;
    fputs("{\"keys\":[", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? "," : "", jwks[i]);
    fputs("]}", f);
    ok = fclose(f) == 0 && rename(tmp, path) == 0;
    return ok;
}

static char *signing_input(const char *header, const char *claims)
{
    char *h = hf_test_b64url(header, strlen(header)), *c = hf_test_b64url(claims, strlen(claims));
    char *out = malloc(strlen(h) + strlen(c) + 2 + 1400);

    if (out) sprintf(out, "%s.%s", h, c);
    free(h);
    free(c);
    return out;
}

static void append_sig(char *token, const unsigned char *sig, size_t len)
{
    char *s = hf_test_b64url(sig, len);

    strcat(token, ".");
    strcat(token, s);
    free(s);
}

/* ECDSA's DER signature as JWS writes it: r and s, 32 bytes each. */
static size_t der_to_raw(const unsigned char *der, size_t len, unsigned char raw[64])
{
    ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &der, (long)len);

    if (!es) return 0;
    BN_bn2binpad(ECDSA_SIG_get0_r(es), raw, 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(es), raw + 32, 32);
    ECDSA_SIG_free(es);
    return 64;
}

char *hf_test_jwt_mint(EVP_PKEY *key, const char *header, const char *claims)
{
    char *token = signing_input(header, claims);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char sig[1024], raw[64];
    size_t len = sizeof(sig);

    if (!token || !ctx || EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) != 1 ||
        EVP_DigestSign(ctx, sig, &len, (unsigned char *)token, strlen(token)) != 1) {
        free(token);
        token = NULL;
    } else if (EVP_PKEY_is_a(key, "EC")) {
        append_sig(token, raw, der_to_raw(sig, len, raw));
    } else {
        append_sig(token, sig, len);
    }
    EVP_MD_CTX_free(ctx);
    return token;
}

char *hf_test_jwt_hs256(const void *secret, size_t len, const char *header, const char *claims)
{
    char *token = signing_input(header, claims);
    unsigned char mac[32];
    size_t maclen = 0;

    if (token && !EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, secret, len, (unsigned char *)token,
                            strlen(token), mac, sizeof(mac), &maclen)) {
        free(token);
        return NULL;
    }
    if (token) append_sig(token, mac, maclen);
    return token;
}
