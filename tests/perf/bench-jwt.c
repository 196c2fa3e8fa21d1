/* hf_jwt_verify cached against uncached (make bench-jwt; not a test). The published cloud load
 * tests send one token for a whole run, so the cached figure is what a bearer-token API pays
 * per request; the uncached one is a new token's first verification (RS256 with RSA-2048,
 * ES256 with P-256). Prints ops/s on one thread, and cached on two. */
#include "hf-build.h"

#include "gateway/jwt.h"
#include "tests/unit/jwt-mint.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DISTINCT 2000
#define CACHED_ROUNDS 1000000

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct hf_jwt_verifier *verifier(const char *jwks)
{
    static const char *const auds[] = {"aud"}, *const req[] = {"email"};
    struct hf_jwt_issuer iss = {.issuer = "https://issuer.test",
                                .jwks = jwks,
                                .audiences = auds,
                                .naudiences = 1,
                                .algs = HF_JWT_RS256 | HF_JWT_ES256,
                                .required = req,
                                .nrequired = 1};
    struct hf_jwt_verifier *v = hf_jwt_verifier_new();
    char err[256];

    if (!v || !hf_jwt_verifier_add(v, &iss, err, sizeof(err))) {
        fprintf(stderr, "bench-jwt: %s\n", err);
        exit(1);
    }
    return v;
}

static char *token(EVP_PKEY *k, const char *alg, const char *kid, int n)
{
    char header[128], claims[256];

    snprintf(header, sizeof(header), "{\"alg\":\"%s\",\"kid\":\"%s\"}", alg, kid);
    snprintf(claims, sizeof(claims),
             "{\"iss\":\"https://issuer.test\",\"aud\":\"aud\",\"email\":\"agent@example.test\","
             "\"exp\":%lld,\"jti\":\"%d\"}",
             (long long)time(NULL) + 3600, n);
    return hf_test_jwt_mint(k, header, claims);
}

static bool verify(struct hf_jwt_verifier *v, const char *tok)
{
    struct hf_jwt *t = NULL;
    bool ok = hf_jwt_verify(v, tok, strlen(tok), &t, NULL, 0) == HF_STATUS_OK;

    hf_jwt_release(t);
    return ok;
}

struct run {
    struct hf_jwt_verifier *v;
    const char *tok;
    long ok;
};

static void *cached_loop(void *arg)
{
    struct run *r = arg;

    for (int i = 0; i < CACHED_ROUNDS; i++)
        r->ok += verify(r->v, r->tok);
    return NULL;
}

static void bench(const char *jwks, EVP_PKEY *k, const char *alg, const char *kid)
{
    struct hf_jwt_verifier *v = verifier(jwks);
    char **toks = calloc(DISTINCT, sizeof(char *));
    struct run runs[2];
    pthread_t th[2];
    double t0, uncached, cached, cached2;
    long ok = 0;

    for (int i = 0; i < DISTINCT; i++)
        toks[i] = token(k, alg, kid, i);
    t0 = now_s();
    for (int i = 0; i < DISTINCT; i++)
        ok += verify(v, toks[i]);
    uncached = DISTINCT / (now_s() - t0);
    runs[0] = (struct run){v, toks[0], 0};
    t0 = now_s();
    cached_loop(&runs[0]);
    cached = CACHED_ROUNDS / (now_s() - t0);
    runs[0].ok = runs[1].ok = 0;
    runs[1] = (struct run){v, toks[1], 0};
    t0 = now_s();
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, cached_loop, &runs[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    cached2 = 2.0 * CACHED_ROUNDS / (now_s() - t0);
    if (ok != DISTINCT || runs[0].ok != CACHED_ROUNDS || runs[1].ok != CACHED_ROUNDS) {
        fprintf(stderr, "bench-jwt: a verification failed\n");
        exit(1);
    }
    printf("%s: uncached %.0f ops/s, cached %.0f ops/s (1 thread), %.0f ops/s (2 threads), "
           "cached/uncached %.0fx\n",
           alg, uncached, cached, cached2, cached / uncached);
    for (int i = 0; i < DISTINCT; i++)
        free(toks[i]);
    free(toks);
    hf_jwt_verifier_free(v);
}

int main(void)
{
    char path[64];
    EVP_PKEY *rsa = hf_test_key_rsa(2048), *ec = hf_test_key_p256();
    char *jr = hf_test_jwk(rsa, "rsa"), *je = hf_test_jwk(ec, "ec");
    const char *keys[] = {jr, je};

    snprintf(path, sizeof(path), "/tmp/hf-bench-jwt-%d.json", (int)getpid());
    if (!hf_test_jwks_write(path, keys, 2)) return 1;
    bench(path, rsa, "RS256", "rsa");
    bench(path, ec, "ES256", "ec");
    unlink(path);
    free(jr);
    free(je);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec);
    return 0;
}
