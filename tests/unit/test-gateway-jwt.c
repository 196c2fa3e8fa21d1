/* Bearer-token verification (gateway/jwt.c, gateway/jwks.c, gateway/jwt-cache.c): one case per
 * rule, with keys generated here (RSA-2048, RSA-3072, P-256), JWKS files written here and tokens
 * minted here with OpenSSL. Time is the test's: the verifier reads a fake wall clock. */
#include "hf-build.h"

#include "gateway/jwks.h"
#include "gateway/jwt.h"
#include "gateway/request.h"
#include "tests/unit/harness.h"
#include "tests/unit/jwt-mint.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>

#define ISS "https://issuer.test"
#define NOW 1900000000

static char dir[64], jwks_path[128];
static EVP_PKEY *rsa, *rsa3072, *ec, *rotated;
static char *jwk_rsa, *jwk_rsa3072, *jwk_ec, *jwk_rotated;
static int64_t fake_now = NOW;

static int64_t fake_clock(void)
{
    return fake_now;
}

static int suite_init(void)
{
    snprintf(dir, sizeof(dir), "/tmp/hf-jwt-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    snprintf(jwks_path, sizeof(jwks_path), "%s/jwks.json", dir);
    rsa = hf_test_key_rsa(2048);
    rsa3072 = hf_test_key_rsa(3072);
    ec = hf_test_key_p256();
    rotated = hf_test_key_p256();
    if (!rsa || !rsa3072 || !ec || !rotated) return -1;
    jwk_rsa = hf_test_jwk(rsa, "rsa");
    jwk_rsa3072 = hf_test_jwk(rsa3072, "rsa3072");
    jwk_ec = hf_test_jwk(ec, "ec");
    jwk_rotated = hf_test_jwk(rotated, "rotated");
    return 0;
}

static int suite_clean(void)
{
    char cmd[128];

    EVP_PKEY_free(rsa);
    EVP_PKEY_free(rsa3072);
    EVP_PKEY_free(ec);
    EVP_PKEY_free(rotated);
    free(jwk_rsa);
    free(jwk_rsa3072);
    free(jwk_ec);
    free(jwk_rotated);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_default_jwks(void)
{
    const char *keys[] = {jwk_rsa, jwk_rsa3072, jwk_ec};

    CU_ASSERT_TRUE_FATAL(hf_test_jwks_write(jwks_path, keys, 3));
}

/* A verifier for ISS (audiences aud-a, aud-b; RS256 and ES256; email required). */
static struct hf_jwt_verifier *verifier(unsigned skew_s)
{
    static const char *const auds[] = {"aud-a", "aud-b"}, *const req[] = {"email"};
    struct hf_jwt_issuer iss = {.issuer = ISS,
                                .jwks = jwks_path,
                                .audiences = auds,
                                .naudiences = 2,
                                .algs = HF_JWT_RS256 | HF_JWT_ES256,
                                .skew_s = skew_s,
                                .required = req,
                                .nrequired = 1};
    struct hf_jwt_verifier *v = hf_jwt_verifier_new();
    char err[256] = "";

    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_TRUE(hf_jwt_verifier_add(v, &iss, err, sizeof(err)));
    if (err[0]) fprintf(stderr, "verifier: %s\n", err);
    hf_jwt_verifier_set_clock(v, fake_clock);
    return v;
}

static char *claims(const char *extra)
{
    char *c = malloc(16384);

    snprintf(c, 16384,
             "{\"iss\":\"" ISS "\",\"aud\":\"aud-a\",\"email\":\"agent@example.test\","
             "\"iat\":%d,\"exp\":%d%s%s}",
             NOW - 10, NOW + 3600, extra[0] ? "," : "", extra);
    return c;
}

static char *mint(EVP_PKEY *key, const char *alg, const char *kid, const char *claims_json)
{
    char header[256];

    snprintf(header, sizeof(header), "{\"alg\":\"%s\",\"typ\":\"JWT\",\"kid\":\"%s\"}", alg, kid);
    return hf_test_jwt_mint(key, header, claims_json);
}

/* The verdict on token, and that a refusal's reason holds want (when given). */
static enum hf_status verify_str(struct hf_jwt_verifier *v, const char *token, const char *want)
{
    struct hf_jwt *t = NULL;
    char why[256] = "";
    enum hf_status st = hf_jwt_verify(v, token, strlen(token), &t, why, sizeof(why));

    if (st == HF_STATUS_OK) {
        CU_ASSERT_PTR_NOT_NULL(t);
    } else {
        CU_ASSERT_PTR_NULL(t);
        CU_ASSERT(why[0] != '\0');
        if (want && !strstr(why, want)) {
            fprintf(stderr, "\n  reason \"%s\" lacks \"%s\"\n", why, want);
            CU_FAIL("refused for another reason");
        }
    }
    hf_jwt_release(t);
    return st;
}

/* Mints with key/alg/kid over the default claims plus extra, then verifies. */
static enum hf_status check(struct hf_jwt_verifier *v, EVP_PKEY *key, const char *alg,
                            const char *kid, const char *extra, const char *want)
{
    char *c = claims(extra), *tok = mint(key, alg, kid, c);
    enum hf_status st = verify_str(v, tok, want);

    free(c);
    free(tok);
    return st;
}

static void test_good_tokens_verify(void)
{
    struct hf_jwt_verifier *v;
    struct hf_jwt *t = NULL;
    char *c, *tok;

    write_default_jwks();
    v = verifier(0);
    CU_ASSERT_EQUAL(check(v, rsa, "RS256", "rsa", "", NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(check(v, rsa3072, "RS256", "rsa3072", "", NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(check(v, ec, "ES256", "ec", "", NULL), HF_STATUS_OK);
    c = claims("\"n\":7");
    tok = mint(ec, "ES256", "ec", c);
    CU_ASSERT_EQUAL_FATAL(hf_jwt_verify(v, tok, strlen(tok), &t, NULL, 0), HF_STATUS_OK);
    CU_ASSERT_STRING_EQUAL(hf_jwt_claim(t, "email"), "agent@example.test");
    CU_ASSERT_PTR_NULL(hf_jwt_claim(t, "n")); /* not a string */
    CU_ASSERT_PTR_NULL(hf_jwt_claim(t, "absent"));
    CU_ASSERT_EQUAL(hf_jwt_exp(t), NOW + 3600);
    CU_ASSERT_PTR_NOT_NULL(hf_jwt_claims(t));
    hf_jwt_release(t);
    free(c);
    free(tok);
    hf_jwt_verifier_free(v);
}

static void test_bad_signature_is_refused(void)
{
    struct hf_jwt_verifier *v;
    char *c = claims(""), *tok, *other;
    size_t n;

    write_default_jwks();
    v = verifier(0);
    for (int i = 0; i < 2; i++) {
        tok = mint(i ? ec : rsa, i ? "ES256" : "RS256", i ? "ec" : "rsa", c);
        n = strlen(tok);
        tok[n - 10] = tok[n - 10] == 'A' ? 'B' : 'A';
        CU_ASSERT_EQUAL(verify_str(v, tok, "signature"), HF_STATUS_UNAUTHENTICATED);
        free(tok);
    }
    /* Signed by a key that is not the kid's. */
    other = mint(rsa3072, "RS256", "rsa", c);
    CU_ASSERT_EQUAL(verify_str(v, other, "signature"), HF_STATUS_UNAUTHENTICATED);
    /* ES256 wants exactly r || s: a DER signature is no JWS signature. */
    free(other);
    free(c);
    hf_jwt_verifier_free(v);
}

static bool wait_for_loads(struct hf_jwks_source *src, uint64_t more_than)
{
    for (int i = 0; i < 500; i++) {
        if (hf_jwks_source_loads(src) > more_than) return true;
        usleep(10000);
    }
    return false;
}

static void test_unknown_kid_refetches_once(void)
{
    const char *keys[] = {jwk_rsa, jwk_rotated, jwk_ec};
    struct hf_jwt_verifier *v;
    struct hf_jwks_source *src;
    uint64_t loads;

    write_default_jwks();
    v = verifier(0);
    src = hf_jwt_verifier_source(v, 0);
    loads = hf_jwks_source_loads(src);
    /* The issuer rotates a key in: the first token fails, and asks for a refetch. */
    CU_ASSERT_TRUE_FATAL(hf_test_jwks_write(jwks_path, keys, 2));
    CU_ASSERT_EQUAL(check(v, rotated, "ES256", "rotated", "", "kid"), HF_STATUS_UNAUTHENTICATED);
    CU_ASSERT_TRUE_FATAL(wait_for_loads(src, loads));
    CU_ASSERT_EQUAL(check(v, rotated, "ES256", "rotated", "", NULL), HF_STATUS_OK);
    /* Another unknown kid within 30 s: refused, and no refetch. */
    loads = hf_jwks_source_loads(src);
    CU_ASSERT_TRUE_FATAL(hf_test_jwks_write(jwks_path, keys, 3));
    CU_ASSERT_EQUAL(check(v, ec, "ES256", "ec", "", "kid"), HF_STATUS_UNAUTHENTICATED);
    usleep(300000);
    CU_ASSERT_EQUAL(hf_jwks_source_loads(src), loads);
    CU_ASSERT_EQUAL(check(v, ec, "ES256", "ec", "", "kid"), HF_STATUS_UNAUTHENTICATED);
    hf_jwt_verifier_free(v);
}

static void test_alg_none_and_hmac_are_refused(void)
{
    struct hf_jwt_verifier *v;
    char *c = claims(""), *h, *cl, tok[2048], *pem = NULL;
    const char *hs = "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"rsa\"}";
    BIO *mem = BIO_new(BIO_s_mem());
    long pemlen;
    char *hmac;

    write_default_jwks();
    v = verifier(0);
    h = hf_test_b64url("{\"alg\":\"none\",\"kid\":\"rsa\"}", 26);
    cl = hf_test_b64url(c, strlen(c));
    snprintf(tok, sizeof(tok), "%s.%s.", h, cl);
    CU_ASSERT_EQUAL(verify_str(v, tok, "none"), HF_STATUS_UNAUTHENTICATED);
    snprintf(tok, sizeof(tok), "%s.%s.c2ln", h, cl);
    CU_ASSERT_EQUAL(verify_str(v, tok, "none"), HF_STATUS_UNAUTHENTICATED);
    /* The classic key confusion: HS256 keyed with the RSA public key as the server has it. */
    CU_ASSERT_TRUE_FATAL(PEM_write_bio_PUBKEY(mem, rsa));
    pemlen = BIO_get_mem_data(mem, &pem);
    hmac = hf_test_jwt_hs256(pem, (size_t)pemlen, hs, c);
    CU_ASSERT_EQUAL(verify_str(v, hmac, "HMAC"), HF_STATUS_UNAUTHENTICATED);
    free(hmac);
    hmac = hf_test_jwt_hs256(jwk_rsa, strlen(jwk_rsa), hs, c);
    CU_ASSERT_EQUAL(verify_str(v, hmac, "HMAC"), HF_STATUS_UNAUTHENTICATED);
    free(hmac);
    BIO_free(mem);
    free(h);
    free(cl);
    free(c);
    hf_jwt_verifier_free(v);
}

static void test_alg_must_match_key_type(void)
{
    struct hf_jwt_verifier *v;
    char *c = claims(""), *tok;

    write_default_jwks();
    v = verifier(0);
    /* ES256 named over the RSA key's kid (signed with the EC key), and the reverse. */
    tok = mint(ec, "ES256", "rsa", c);
    CU_ASSERT_EQUAL(verify_str(v, tok, "match"), HF_STATUS_UNAUTHENTICATED);
    free(tok);
    tok = mint(rsa, "RS256", "ec", c);
    CU_ASSERT_EQUAL(verify_str(v, tok, "match"), HF_STATUS_UNAUTHENTICATED);
    free(tok);
    free(c);
    hf_jwt_verifier_free(v);
}

static void test_issuer_algorithms_are_honoured(void)
{
    static const char *const auds[] = {"aud-a"};
    struct hf_jwt_issuer iss = {
        .issuer = ISS, .jwks = jwks_path, .audiences = auds, .naudiences = 1};
    struct hf_jwt_verifier *v = hf_jwt_verifier_new();
    char err[128];

    write_default_jwks();
    CU_ASSERT_TRUE_FATAL(hf_jwt_verifier_add(v, &iss, err, sizeof(err))); /* algs 0: RS256 */
    hf_jwt_verifier_set_clock(v, fake_clock);
    CU_ASSERT_EQUAL(check(v, rsa, "RS256", "rsa", "", NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(check(v, ec, "ES256", "ec", "", "not allowed"), HF_STATUS_UNAUTHENTICATED);
    hf_jwt_verifier_free(v);
}

static void test_wrong_iss_and_aud_are_refused(void)
{
    struct hf_jwt_verifier *v;
    char c[512], *tok;

    write_default_jwks();
    v = verifier(0);
    snprintf(c, sizeof(c),
             "{\"iss\":\"https://other.test\",\"aud\":\"aud-a\",\"email\":\"e\","
             "\"exp\":%d}",
             NOW + 60);
    tok = mint(rsa, "RS256", "rsa", c);
    CU_ASSERT_EQUAL(verify_str(v, tok, "iss"), HF_STATUS_UNAUTHENTICATED);
    free(tok);
    const char *auds[][2] = {
        {"\"aud-c\"", "aud"}, {"[\"aud-c\",\"x\"]", "aud"}, {"[]", "aud"},
        {"7", "aud"},         {"[\"x\",\"aud-b\"]", NULL},  {"\"aud-b\"", NULL}};
    for (size_t i = 0; i < sizeof(auds) / sizeof(auds[0]); i++) {
        snprintf(c, sizeof(c), "{\"iss\":\"" ISS "\",\"aud\":%s,\"email\":\"e\",\"exp\":%d}",
                 auds[i][0], NOW + 60);
        tok = mint(rsa, "RS256", "rsa", c);
        CU_ASSERT_EQUAL(verify_str(v, tok, auds[i][1]),
                        auds[i][1] ? HF_STATUS_UNAUTHENTICATED : HF_STATUS_OK);
        free(tok);
    }
    snprintf(c, sizeof(c), "{\"iss\":\"" ISS "\",\"email\":\"e\",\"exp\":%d}", NOW + 60);
    tok = mint(rsa, "RS256", "rsa", c);
    CU_ASSERT_EQUAL(verify_str(v, tok, "aud"), HF_STATUS_UNAUTHENTICATED);
    free(tok);
    hf_jwt_verifier_free(v);
}

static enum hf_status check_times(struct hf_jwt_verifier *v, const char *times, const char *want)
{
    char c[512], *tok;
    enum hf_status st;

    snprintf(c, sizeof(c), "{\"iss\":\"" ISS "\",\"aud\":\"aud-a\",\"email\":\"e\"%s}", times);
    tok = mint(rsa, "RS256", "rsa", c);
    st = verify_str(v, tok, want);
    free(tok);
    return st;
}

static void test_times_and_skew(void)
{
    struct hf_jwt_verifier *v, *tight;
    char t[128];

    write_default_jwks();
    v = verifier(0);     /* skew 60 s */
    tight = verifier(5); /* skew 5 s */
    snprintf(t, sizeof(t), ",\"exp\":%d", NOW - 120);
    CU_ASSERT_EQUAL(check_times(v, t, "expired"), HF_STATUS_UNAUTHENTICATED);
    snprintf(t, sizeof(t), ",\"exp\":%d", NOW - 30); /* within the skew */
    CU_ASSERT_EQUAL(check_times(v, t, NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(check_times(tight, t, "expired"), HF_STATUS_UNAUTHENTICATED);
    snprintf(t, sizeof(t), ",\"exp\":%d.5", NOW + 100); /* a NumericDate may have a fraction */
    CU_ASSERT_EQUAL(check_times(v, t, NULL), HF_STATUS_OK);
    snprintf(t, sizeof(t), ",\"exp\":%d,\"nbf\":%d", NOW + 600, NOW + 120);
    CU_ASSERT_EQUAL(check_times(v, t, "nbf"), HF_STATUS_UNAUTHENTICATED);
    snprintf(t, sizeof(t), ",\"exp\":%d,\"nbf\":%d", NOW + 600, NOW + 30);
    CU_ASSERT_EQUAL(check_times(v, t, NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(check_times(tight, t, "nbf"), HF_STATUS_UNAUTHENTICATED);
    snprintf(t, sizeof(t), ",\"exp\":%d,\"iat\":%d", NOW + 600, NOW + 120);
    CU_ASSERT_EQUAL(check_times(v, t, "iat"), HF_STATUS_UNAUTHENTICATED);
    snprintf(t, sizeof(t), ",\"exp\":%d,\"iat\":%d", NOW + 600, NOW + 30);
    CU_ASSERT_EQUAL(check_times(v, t, NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(check_times(tight, t, "iat"), HF_STATUS_UNAUTHENTICATED);
    /* exp is required, and times are numbers. */
    CU_ASSERT_EQUAL(check_times(v, "", "exp"), HF_STATUS_UNAUTHENTICATED);
    CU_ASSERT_EQUAL(check_times(v, ",\"exp\":\"1900000600\"", "exp"), HF_STATUS_UNAUTHENTICATED);
    /* Dates so large that adding the skew would overflow (found by fuzz-jwt). */
    CU_ASSERT_EQUAL(check_times(v, ",\"exp\":1900000600000061899999979990", "not a number"),
                    HF_STATUS_UNAUTHENTICATED);
    CU_ASSERT_EQUAL(check_times(v, ",\"exp\":9223372036854775807", "not a number"),
                    HF_STATUS_UNAUTHENTICATED);
    snprintf(t, sizeof(t), ",\"exp\":%d,\"iat\":-9223372036854775807", NOW + 600);
    CU_ASSERT_EQUAL(check_times(v, t, "not a number"), HF_STATUS_UNAUTHENTICATED);
    snprintf(t, sizeof(t), ",\"exp\":%d,\"nbf\":true", NOW + 600);
    CU_ASSERT_EQUAL(check_times(v, t, "nbf"), HF_STATUS_UNAUTHENTICATED);
    hf_jwt_verifier_free(v);
    hf_jwt_verifier_free(tight);
}

static void test_required_claims(void)
{
    struct hf_jwt_verifier *v;
    char c[512], *tok;

    write_default_jwks();
    v = verifier(0);
    snprintf(c, sizeof(c), "{\"iss\":\"" ISS "\",\"aud\":\"aud-a\",\"exp\":%d}", NOW + 60);
    tok = mint(rsa, "RS256", "rsa", c);
    CU_ASSERT_EQUAL(verify_str(v, tok, "required"), HF_STATUS_UNAUTHENTICATED);
    free(tok);
    hf_jwt_verifier_free(v);
}

static void test_oversized_token_is_refused(void)
{
    struct hf_jwt_verifier *v;
    char *pad = malloc(9000), *c, *tok;

    write_default_jwks();
    v = verifier(0);
    /* A valid signature over claims that make the token just over 8 KiB. */
    strcpy(pad, "\"pad\":\"");
    memset(pad + 7, 'a', 6000);
    strcpy(pad + 6007, "\"");
    c = claims(pad);
    tok = mint(rsa, "RS256", "rsa", c);
    CU_ASSERT(strlen(tok) > 8192);
    CU_ASSERT_EQUAL(verify_str(v, tok, "8 KiB"), HF_STATUS_UNAUTHENTICATED);
    free(tok);
    free(c);
    /* The same claims a little shorter pass: the limit, not the claim, refused it. */
    strcpy(pad + 7 + 5000, "\"");
    c = claims(pad);
    tok = mint(rsa, "RS256", "rsa", c);
    CU_ASSERT(strlen(tok) < 8192);
    CU_ASSERT_EQUAL(verify_str(v, tok, NULL), HF_STATUS_OK);
    free(tok);
    free(c);
    free(pad);
    hf_jwt_verifier_free(v);
}

/* A token made of the given header and claims JSON, with a well-formed signature segment. */
static enum hf_status check_raw(struct hf_jwt_verifier *v, const char *header, const char *cl,
                                const char *want)
{
    char *h = hf_test_b64url(header, strlen(header)), *c = hf_test_b64url(cl, strlen(cl));
    char tok[2048];

    snprintf(tok, sizeof(tok), "%s.%s.c2lnbmF0dXJl", h, c);
    free(h);
    free(c);
    return verify_str(v, tok, want);
}

static void test_malformed_tokens_are_refused(void)
{
    static const char *const bad[] = {"",
                                      "abc",
                                      "a.b",
                                      "a.b.c.d",
                                      "..",
                                      "eyJhbGciOiJSUzI1NiJ9..",
                                      "eyJh bGciOiJSUzI1NiJ9.e30.c2ln",
                                      "eyJhbGciOiJSUzI1NiJ9=.e30.c2ln",
                                      "eyJhbGciOiJSUzI1NiJ9.e30.c2ln+/",
                                      "A.e30.c2ln"};
    struct hf_jwt_verifier *v;
    char c[256];

    write_default_jwks();
    v = verifier(0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CU_ASSERT_EQUAL(verify_str(v, bad[i], NULL), HF_STATUS_UNAUTHENTICATED);
    snprintf(c, sizeof(c), "{\"iss\":\"" ISS "\",\"aud\":\"aud-a\",\"email\":\"e\",\"exp\":%d}",
             NOW + 60);
    CU_ASSERT_EQUAL(check_raw(v, "[\"RS256\"]", c, "object"), HF_STATUS_UNAUTHENTICATED);
    CU_ASSERT_EQUAL(check_raw(v, "{\"alg\":\"RS256\",\"kid\":\"rsa\",\"kid\":\"ec\"}", c, "header"),
                    HF_STATUS_UNAUTHENTICATED);
    CU_ASSERT_EQUAL(
        check_raw(v, "{\"alg\":\"RS256\",\"kid\":\"rsa\",\"crit\":[\"exp\"]}", c, "crit"),
        HF_STATUS_UNAUTHENTICATED);
    CU_ASSERT_EQUAL(check_raw(v, "{\"alg\":\"RS256\"}", c, "kid"), HF_STATUS_UNAUTHENTICATED);
    CU_ASSERT_EQUAL(check_raw(v, "{\"alg\":\"RS512\",\"kid\":\"rsa\"}", c, "alg"),
                    HF_STATUS_UNAUTHENTICATED);
    CU_ASSERT_EQUAL(check_raw(v, "{\"alg\":\"RS256\",\"kid\":\"rsa\"}", "[1]", "claims"),
                    HF_STATUS_UNAUTHENTICATED);
    CU_ASSERT_EQUAL(check_raw(v, "{\"alg\":\"RS256\",\"kid\":\"rsa\"}",
                              "{\"iss\":\"a\",\"iss\":\"" ISS "\"}", "claims"),
                    HF_STATUS_UNAUTHENTICATED);
    CU_ASSERT_EQUAL(check_raw(v, "{\"alg\":\"RS256\",\"kid\":\"rsa\"}", "{\"iss\":7}", "iss"),
                    HF_STATUS_UNAUTHENTICATED);
    /* Well-formed but signed by nobody: the signature, not the form, refuses it. */
    CU_ASSERT_EQUAL(check_raw(v, "{\"alg\":\"RS256\",\"kid\":\"rsa\"}", c, "signature"),
                    HF_STATUS_UNAUTHENTICATED);
    hf_jwt_verifier_free(v);
}

static void test_cache_hits_and_expires(void)
{
    struct hf_jwt_verifier *v;
    struct hf_jwt *a = NULL, *b = NULL;
    char c[512], *tok;

    write_default_jwks();
    v = verifier(0);
    snprintf(c, sizeof(c), "{\"iss\":\"" ISS "\",\"aud\":\"aud-a\",\"email\":\"e@x\",\"exp\":%d}",
             NOW + 100);
    tok = mint(rsa, "RS256", "rsa", c);
    CU_ASSERT_EQUAL_FATAL(hf_jwt_verify(v, tok, strlen(tok), &a, NULL, 0), HF_STATUS_OK);
    CU_ASSERT_EQUAL_FATAL(hf_jwt_verify(v, tok, strlen(tok), &b, NULL, 0), HF_STATUS_OK);
    /* The second answer is the cached token itself, with the same claims. */
    CU_ASSERT_PTR_EQUAL(a, b);
    CU_ASSERT_STRING_EQUAL(hf_jwt_claim(b, "email"), "e@x");
    hf_jwt_release(a);
    hf_jwt_release(b);
    /* Past exp (and the skew), the cached entry is no answer: the token is refused. */
    fake_now = NOW + 100 + 61;
    CU_ASSERT_EQUAL(verify_str(v, tok, "expired"), HF_STATUS_UNAUTHENTICATED);
    fake_now = NOW;
    free(tok);
    hf_jwt_verifier_free(v);
}

static struct hf_jwt_verifier *shared_v;
static const char *shared_tok;

static void *verify_many(void *arg)
{
    long ok = 0;

    (void)arg;
    for (int i = 0; i < 2000; i++) {
        struct hf_jwt *t = NULL;

        if (hf_jwt_verify(shared_v, shared_tok, strlen(shared_tok), &t, NULL, 0) == HF_STATUS_OK &&
            strcmp(hf_jwt_claim(t, "email"), "agent@example.test") == 0)
            ok++;
        hf_jwt_release(t);
    }
    return (void *)ok;
}

static void test_cache_is_shared_by_threads(void)
{
    pthread_t th[4];
    char *c = claims(""), *tok;
    void *ok;

    write_default_jwks();
    shared_v = verifier(0);
    shared_tok = tok = mint(ec, "ES256", "ec", c);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, verify_many, NULL), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], &ok);
        CU_ASSERT_EQUAL((long)ok, 2000);
    }
    hf_jwt_verifier_free(shared_v);
    free(tok);
    free(c);
}

static void test_cache_stays_bounded(void)
{
    struct hf_jwt_cache *cache = hf_jwt_cache_new();
    struct hf_jwt_verifier *v;
    struct hf_jwt *t = NULL, *got;
    unsigned char key[32] = {0};
    int found = 0;
    char *c = claims(""), *tok;

    write_default_jwks();
    v = verifier(0);
    tok = mint(rsa, "RS256", "rsa", c);
    CU_ASSERT_EQUAL_FATAL(hf_jwt_verify(v, tok, strlen(tok), &t, NULL, 0), HF_STATUS_OK);
    /* 5000 keys into 4096 places: the oldest go, the newest stay. */
    for (unsigned i = 0; i < 5000; i++) {
        memcpy(key, &i, sizeof(i));
        key[4] = (unsigned char)i;
        hf_jwt_cache_put(cache, key, t, NOW + 100, NOW);
    }
    for (unsigned i = 0; i < 5000; i++) {
        memcpy(key, &i, sizeof(i));
        key[4] = (unsigned char)i;
        if ((got = hf_jwt_cache_get(cache, key, NOW))) found++;
        hf_jwt_release(got);
    }
    CU_ASSERT(found <= 4096);
    CU_ASSERT(found > 3000);
    memcpy(key, &(unsigned){4999}, sizeof(unsigned));
    key[4] = (unsigned char)4999;
    CU_ASSERT_PTR_NOT_NULL(got = hf_jwt_cache_get(cache, key, NOW));
    hf_jwt_release(got);
    CU_ASSERT_PTR_NULL(hf_jwt_cache_get(cache, key, NOW + 100)); /* expired */
    hf_jwt_cache_free(cache);
    hf_jwt_release(t);
    free(tok);
    free(c);
    hf_jwt_verifier_free(v);
}

static bool jwks_parses(const char *text, size_t *nkeys)
{
    struct hf_jwks *set = NULL;
    char why[256] = "";
    bool ok = hf_jwks_parse(text, strlen(text), &set, why, sizeof(why));

    if (!ok) CU_ASSERT(why[0] != '\0');
    if (!ok && getenv("HF_TEST_VERBOSE")) fprintf(stderr, "\n  JWKS refused: %s\n", why);
    if (nkeys) *nkeys = hf_jwks_count(set);
    hf_jwks_unref(set);
    return ok;
}

static void test_jwks_rules(void)
{
    char doc[16384], *small;
    EVP_PKEY *k1024 = hf_test_key_rsa(1024);
    size_t n = 0;

    snprintf(doc, sizeof(doc), "{\"keys\":[%s,%s]}", jwk_rsa, jwk_ec);
    CU_ASSERT_TRUE(jwks_parses(doc, &n));
    CU_ASSERT_EQUAL(n, 2);
    /* Unknown kty, another curve, an encryption key and another alg are skipped. */
    snprintf(doc, sizeof(doc),
             "{\"keys\":[{\"kty\":\"oct\",\"kid\":\"s\",\"k\":\"AAAA\"},"
             "{\"kty\":\"EC\",\"crv\":\"P-384\",\"kid\":\"p384\",\"x\":\"AA\",\"y\":\"AA\"},"
             "{\"kty\":\"OKP\",\"kid\":\"ed\"},%s]}",
             jwk_ec);
    CU_ASSERT_TRUE(jwks_parses(doc, &n));
    CU_ASSERT_EQUAL(n, 1);
    snprintf(doc, sizeof(doc), "{\"keys\":[%s]}", jwk_rsa);
    memcpy(strstr(doc, "\"use\":\"sig\""), "\"use\":\"enc\"", 11);
    CU_ASSERT_TRUE(jwks_parses(doc, &n));
    CU_ASSERT_EQUAL(n, 0);
    memcpy(strstr(doc, "\"use\":\"enc\""), "\"alg\":\"RS1\"", 11);
    CU_ASSERT_TRUE(jwks_parses(doc, &n));
    CU_ASSERT_EQUAL(n, 0);
    memcpy(strstr(doc, "\"alg\":\"RS1\""), "\"alg\":\"ES2\"", 11);
    CU_ASSERT_TRUE(jwks_parses(doc, &n));
    CU_ASSERT_EQUAL(n, 0);
    /* Refused: a duplicate kid, bad base64url, a short modulus, a point off the curve, no keys
     * array, duplicate members. */
    snprintf(doc, sizeof(doc), "{\"keys\":[%s,%s]}", jwk_rsa, jwk_rsa);
    CU_ASSERT_FALSE(jwks_parses(doc, NULL));
    snprintf(doc, sizeof(doc),
             "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"r\",\"n\":\"AQAB=\",\"e\":"
             "\"AQAB\"}]}");
    CU_ASSERT_FALSE(jwks_parses(doc, NULL));
    small = hf_test_jwk(k1024, "small");
    snprintf(doc, sizeof(doc), "{\"keys\":[%s]}", small);
    CU_ASSERT_FALSE(jwks_parses(doc, NULL));
    free(small);
    snprintf(doc, sizeof(doc),
             "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"off\","
             "\"x\":\"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\","
             "\"y\":\"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}]}");
    CU_ASSERT_FALSE(jwks_parses(doc, NULL));
    CU_ASSERT_FALSE(jwks_parses("{\"keys\":{}}", NULL));
    CU_ASSERT_FALSE(jwks_parses("{\"keys\":[],\"keys\":[]}", NULL));
    CU_ASSERT_FALSE(jwks_parses("{\"keys\":[7]}", NULL));
    EVP_PKEY_free(k1024);
}

static void test_jwks_size_limits(void)
{
    char *doc = malloc(HF_JWKS_MAX_KEYS * 200 + 64);

    for (unsigned n = HF_JWKS_MAX_KEYS; n <= HF_JWKS_MAX_KEYS + 1; n++) {
        char *p = doc + sprintf(doc, "{\"keys\":[");

        for (unsigned i = 0; i < n; i++)
            p += sprintf(p, "%s{\"kty\":\"oct\",\"kid\":\"k%u\"}", i ? "," : "", i);
        sprintf(p, "]}");
        /* The limit and no fewer: these are all skipped (oct), so only the count refuses. */
        CU_ASSERT_EQUAL(jwks_parses(doc, NULL), n <= HF_JWKS_MAX_KEYS);
    }
    free(doc);
}

static void test_refresh_follows_cache_control(void)
{
    CU_ASSERT_EQUAL(hf_jwks_next_refresh_s(true, true, 19523, 3600), 3600);
    CU_ASSERT_EQUAL(hf_jwks_next_refresh_s(true, true, 600, 3600), 600);
    CU_ASSERT_EQUAL(hf_jwks_next_refresh_s(true, true, 5, 3600), HF_JWKS_REFRESH_MIN_S);
    CU_ASSERT_EQUAL(hf_jwks_next_refresh_s(true, true, 0, 3600), HF_JWKS_REFRESH_MIN_S);
    CU_ASSERT_EQUAL(hf_jwks_next_refresh_s(true, true, -1, 3600), 3600);
    /* A failure keeps the last set and retries; with no set yet, sooner. */
    CU_ASSERT_EQUAL(hf_jwks_next_refresh_s(false, true, -1, 3600), HF_JWKS_REFRESH_MIN_S);
    CU_ASSERT(hf_jwks_next_refresh_s(false, false, -1, 3600) < HF_JWKS_REFRESH_MIN_S);
}

static void test_verifier_config_is_checked(void)
{
    static const char *const auds[] = {"a"};
    struct hf_jwt_verifier *v = hf_jwt_verifier_new();
    struct hf_jwt_issuer iss = {
        .issuer = ISS, .jwks = "/nonexistent/jwks.json", .audiences = auds, .naudiences = 1};
    char err[256] = "";

    CU_ASSERT_FALSE(hf_jwt_verifier_add(v, &iss, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "nonexistent"));
    iss.jwks = jwks_path;
    iss.naudiences = 0;
    CU_ASSERT_FALSE(hf_jwt_verifier_add(v, &iss, err, sizeof(err)));
    iss.naudiences = 1;
    iss.algs = 4;
    CU_ASSERT_FALSE(hf_jwt_verifier_add(v, &iss, err, sizeof(err)));
    hf_jwt_verifier_free(v);
}

/* A plugin's issuers, jwks and the rest as hf_jwt_trust reads them: an option given twice means
 * its last line, every issuer gets the template's audiences, other names are the plugin's. */
static void test_trust_settings(void)
{
    static const char *const auds[] = {"aud-a"}, *const req[] = {"email"};
    const struct hf_jwt_issuer each = {
        .audiences = auds, .naudiences = 1, .algs = HF_JWT_RS256, .required = req, .nrequired = 1};
    struct hf_jwt_trust t = {0};
    struct hf_jwt_verifier *v = hf_jwt_verifier_new();
    char err[512] = "";

    write_default_jwks();
    CU_ASSERT_EQUAL(hf_jwt_trust_set(&t, "issuers", "https://gone.test", err, sizeof(err)), 1);
    CU_ASSERT_EQUAL(hf_jwt_trust_set(&t, "issuers", "https://other.test, " ISS, err, sizeof(err)),
                    1);
    CU_ASSERT_EQUAL(hf_jwt_trust_set(&t, "jwks", jwks_path, err, sizeof(err)), 1);
    CU_ASSERT_EQUAL(hf_jwt_trust_set(&t, "jwks_allow", "127.0.0.0/8", err, sizeof(err)), 1);
    CU_ASSERT_EQUAL(hf_jwt_trust_set(&t, "audience", "aud-a", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL_FATAL(t.nissuers, 2);
    CU_ASSERT_STRING_EQUAL(t.issuers[1], ISS);
    CU_ASSERT_EQUAL(t.njwks_allow, 1);
    CU_ASSERT_TRUE_FATAL(hf_jwt_trust_add(v, &t, &each, err, sizeof(err)));
    hf_jwt_verifier_set_clock(v, fake_clock);
    CU_ASSERT_EQUAL(check(v, rsa, "RS256", "rsa", "", NULL), HF_STATUS_OK);
    /* The template's algs hold for every issuer: ES256 was not configured. */
    CU_ASSERT_EQUAL(check(v, ec, "ES256", "ec", "", "alg"), HF_STATUS_UNAUTHENTICATED);
    hf_jwt_verifier_free(v);
    CU_ASSERT_EQUAL(hf_jwt_trust_set(&t, "jwks", "/nonexistent/jwks.json", err, sizeof(err)), 1);
    CU_ASSERT_FATAL((v = hf_jwt_verifier_new()) != NULL);
    CU_ASSERT_FALSE(hf_jwt_trust_add(v, &t, &each, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "jwks /nonexistent/jwks.json"));
    hf_jwt_verifier_free(v);
    hf_jwt_trust_free(&t);
    CU_ASSERT_PTR_NULL(t.issuers);
    CU_ASSERT_EQUAL(t.nissuers, 0);
}

/* A request carrying the given Authorization headers (NULL-terminated). */
static struct hf_request *bearer_request(const char *const *auth)
{
    struct hf_request *req = hf_request_new("POST", "/x");

    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    for (; auth != NULL && *auth != NULL; auth++)
        CU_ASSERT_TRUE_FATAL(hf_request_header_add(req, "Authorization", *auth));
    return req;
}

static enum hf_status bearer_verdict(struct hf_jwt_verifier *v, const char *const *auth,
                                     const char *want)
{
    struct hf_request *req = bearer_request(auth);
    struct hf_jwt *t = (struct hf_jwt *)&t; /* must come back NULL on refusal */
    char why[256] = "";
    enum hf_status st = hf_request_bearer_verify(req, v, &t, why, sizeof(why));

    if (st == HF_STATUS_OK) {
        CU_ASSERT_PTR_NOT_NULL(t);
        CU_ASSERT_STRING_EQUAL(hf_jwt_claim(t, "email"), "agent@example.test");
        hf_jwt_release(t);
    } else {
        CU_ASSERT_PTR_NULL(t);
        if (want != NULL && strstr(why, want) == NULL) {
            fprintf(stderr, "\n  reason \"%s\" lacks \"%s\"\n", why, want);
            CU_FAIL("refused for another reason");
        }
    }
    hf_request_free(req);
    return st;
}

static void test_request_bearer_verify(void)
{
    struct hf_jwt_verifier *v;
    char *c = claims(""), *tok = mint(rsa, "RS256", "rsa", c), *bad = mint(ec, "ES256", "rsa", c);
    char good[4096], other[4096];
    const char *const ok[] = {good, NULL}, *const lower[] = {other, NULL};
    const char *const twice[] = {good, good, NULL}, *const basic[] = {"Basic Zm9vOmJhcg==", NULL};
    const char *const forged[] = {other, NULL};

    write_default_jwks();
    v = verifier(0);
    snprintf(good, sizeof(good), "Bearer %s", tok);
    CU_ASSERT_EQUAL(bearer_verdict(v, ok, NULL), HF_STATUS_OK);
    snprintf(other, sizeof(other), "bearer  %s ", tok);
    CU_ASSERT_EQUAL(bearer_verdict(v, lower, NULL), HF_STATUS_OK);
    CU_ASSERT_EQUAL(bearer_verdict(v, NULL, "a bearer token is required"),
                    HF_STATUS_UNAUTHENTICATED);
    CU_ASSERT_EQUAL(bearer_verdict(v, twice, "more than once"), HF_STATUS_UNAUTHENTICATED);
    CU_ASSERT_EQUAL(bearer_verdict(v, basic, "not one bearer token"), HF_STATUS_UNAUTHENTICATED);
    snprintf(other, sizeof(other), "Bearer %s", bad);
    CU_ASSERT_EQUAL(bearer_verdict(v, forged, "the bearer token is refused: "),
                    HF_STATUS_UNAUTHENTICATED);
    CU_ASSERT_EQUAL(hf_request_bearer_verify(NULL, v, NULL, NULL, 0), HF_STATUS_INTERNAL);
    hf_jwt_verifier_free(v);
    free(c);
    free(tok);
    free(bad);
}

static CU_TestInfo jwt_tests[] = {
    {"good RS256 (2048, 3072) and ES256 tokens verify; claims read back", test_good_tokens_verify},
    {"a bad signature or another key's signature is refused", test_bad_signature_is_refused},
    {"an unknown kid fails and refetches once; a second within 30 s does not",
     test_unknown_kid_refetches_once},
    {"alg none and HS256 keyed with the RSA public key are refused",
     test_alg_none_and_hmac_are_refused},
    {"alg must match the key's type", test_alg_must_match_key_type},
    {"an issuer's algorithms are honoured (RS256 by default)", test_issuer_algorithms_are_honoured},
    {"wrong iss, wrong or missing aud (string and array) are refused",
     test_wrong_iss_and_aud_are_refused},
    {"exp required; expired, nbf and iat in the future refused; skew honoured",
     test_times_and_skew},
    {"a missing required claim is refused", test_required_claims},
    {"a token over 8 KiB is refused", test_oversized_token_is_refused},
    {"malformed segments, headers and claims are refused", test_malformed_tokens_are_refused},
    {"a cache hit returns the same token; an expired cached token is refused",
     test_cache_hits_and_expires},
    {"threads share cached tokens", test_cache_is_shared_by_threads},
    {"the cache stays bounded and expires entries", test_cache_stays_bounded},
    {"JWKS: keys taken, skipped and refused", test_jwks_rules},
    {"JWKS: too many keys are refused", test_jwks_size_limits},
    {"refreshes follow Cache-Control max-age within [60 s, refresh_max_s]",
     test_refresh_follows_cache_control},
    {"an issuer with no key set, no audience or unknown algs is refused",
     test_verifier_config_is_checked},
    {"hf_jwt_trust: the issuer settings every token plugin shares", test_trust_settings},
    {"hf_request_bearer_verify: a good bearer passes; absent, repeated, not Bearer, refused fail",
     test_request_bearer_verify},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-jwt", suite_init, suite_clean, NULL, NULL, jwt_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
