/* hf-load's bearer-token builders (Cloud EKM wrap, Workspace CSE wrap and unwrap): the tokens
 * they mint pass the gateway's own verifier (hf_jwt_verify over a JWKS of the test's keys) with
 * the issuers, audiences and claims the plugins are configured for, and the requests carry what
 * the specs ask. Keys and JWKS are made here. */
#include "hf-build.h"

#include "gateway/plugin.h"
#include "tests/load/load.h"
#include "tests/unit/harness.h"
#include "tests/unit/jwt-mint.h"

#include <json.h>
#include <openssl/pem.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMAIL "user@example.test"
#define AUTHZ_ISS "gsuitecse-tokenissuer-drive@system.gserviceaccount.com"
/* B64 of the spec's blob over a 32-byte key and hf-load's resource name, perimeter "". */
#define WRAPPED_LEN 144
#define SHORT_BLOB "{\"wrapped_key\":\"AAAA\"}"

static char dir[64], user_pem[128], authz_pem[128], other_pem[128], jwks_path[128];
static struct hf_load_config cfg;
static char err[1024];

static bool pem_write(EVP_PKEY *key, const char *path)
{
    FILE *f = fopen(path, "w");
    bool ok = f && PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) == 1;

    if (f) ok = fclose(f) == 0 && ok;
    return ok;
}

/* Keys "user" and "authz" published in the JWKS; "other" is not. */
static int suite_init(void)
{
    EVP_PKEY *user = hf_test_key_rsa(2048), *authz = hf_test_key_rsa(2048);
    EVP_PKEY *other = hf_test_key_rsa(2048);
    char *jwks[2] = {NULL, NULL};
    int rc = -1;

    snprintf(dir, sizeof(dir), "/tmp/hf-load-jwt-XXXXXX");
    if (!mkdtemp(dir) || !user || !authz || !other) goto done;
    snprintf(user_pem, sizeof(user_pem), "%s/user.pem", dir);
    snprintf(authz_pem, sizeof(authz_pem), "%s/authz.pem", dir);
    snprintf(other_pem, sizeof(other_pem), "%s/other.pem", dir);
    snprintf(jwks_path, sizeof(jwks_path), "%s/jwks.json", dir);
    jwks[0] = hf_test_jwk(user, "user");
    jwks[1] = hf_test_jwk(authz, "authz");
    if (pem_write(user, user_pem) && pem_write(authz, authz_pem) && pem_write(other, other_pem) &&
        jwks[0] && jwks[1] && hf_test_jwks_write(jwks_path, (const char *const *)jwks, 2))
        rc = 0;
done:
    free(jwks[0]);
    free(jwks[1]);
    EVP_PKEY_free(user);
    EVP_PKEY_free(authz);
    EVP_PKEY_free(other);
    return rc;
}

static int suite_clean(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static enum hf_args_result parse(const char *first, ...)
{
    char *argv[64];
    int argc = 0;
    va_list ap;

    argv[argc++] = "hf-load";
    va_start(ap, first);
    for (const char *a = first; a && argc < 63; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    err[0] = '\0';
    return hf_load_args_parse(argc, argv, &cfg, err, sizeof(err));
}

/* The gateway's verifier for one issuer over a JWKS file, RS256, the claims required. */
static struct hf_jwt_verifier *verifier_over(const char *jwks, const char *iss, const char *aud,
                                             const char *const *required, size_t nrequired)
{
    struct hf_jwt_issuer issuer = {.issuer = iss,
                                   .jwks = jwks,
                                   .audiences = &aud,
                                   .naudiences = 1,
                                   .algs = HF_JWT_RS256,
                                   .required = required,
                                   .nrequired = nrequired};
    struct hf_jwt_verifier *v = hf_jwt_verifier_new();
    char why[256] = "";

    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_TRUE_FATAL(hf_jwt_verifier_add(v, &issuer, why, sizeof(why)));
    return v;
}

#define verifier(...) verifier_over(jwks_path, __VA_ARGS__)

/* The verified token (release it), or NULL, with the reason printed when it was wanted. */
static struct hf_jwt *verified_as(struct hf_jwt_verifier *v, const char *token, bool wanted)
{
    struct hf_jwt *t = NULL;
    char why[256] = "";

    if (hf_jwt_verify(v, token, strlen(token), &t, why, sizeof(why)) != HF_STATUS_OK) {
        if (wanted) fprintf(stderr, "\n    token refused: %s\n", why);
        return NULL;
    }
    return t;
}

#define verified(v, token) verified_as(v, token, true)
#define refused(v, token) (verified_as(v, token, false) == NULL)

/* A request's parts: its request line's target, a header's value, the body. */
struct request {
    char target[256];
    const char *body;
    struct json_object *json;
};

static bool header_is(const struct hf_buf *req, const char *name, const char *value)
{
    char line[1024];

    snprintf(line, sizeof(line), "\r\n%s: %s\r\n", name, value);
    return memmem(req->data, req->len, line, strlen(line)) != NULL;
}

static int request_read(struct hf_buf *req, struct request *r)
{
    const char *end;
    char len[32];

    if (hf_buf_append(req, "", 1) != 0) return -1; /* NUL-terminated for strstr */
    req->len--;
    end = strstr(req->data, "\r\n\r\n");
    if (!end || sscanf(req->data, "POST %255s HTTP/1.1\r\n", r->target) != 1) return -1;
    r->body = end + 4;
    snprintf(len, sizeof(len), "%zu", strlen(r->body));
    if (!header_is(req, "Content-Length", len)) return -1;
    r->json = json_tokener_parse(r->body);
    return r->json ? 0 : -1;
}

static const char *member(const struct request *r, const char *name)
{
    struct json_object *f;

    if (!json_object_object_get_ex(r->json, name, &f) || !json_object_is_type(f, json_type_string))
        return NULL;
    return json_object_get_string(f);
}

static void test_ekm_token_passes_the_gateway_verifier(void)
{
    static const char *const req[] = {"email"};
    struct hf_jwt_verifier *v = verifier("https://accounts.google.com", "https://ekm.test", req, 1);
    struct hf_buf out = {0};
    struct request r = {0};
    void *state = NULL, *vu = NULL;
    const char *auth;
    struct hf_jwt *t;
    bool setup = true;

    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://127.0.0.1:8443", "--api", "ekm-wrap", "--vus",
                                "1", "--prefix", "ekm", "--key-id", "v0/keys/k1", "--token-key",
                                user_pem, "--token-kid", "user", "--email", EMAIL, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_EQUAL_FATAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL_FATAL(cfg.api->build(state, &vu, &out, &setup), 0);
    CU_ASSERT_FALSE(setup);
    CU_ASSERT_EQUAL_FATAL(request_read(&out, &r), 0);
    CU_ASSERT_STRING_EQUAL(r.target, "/ekm/v0/keys/k1:wrap");
    CU_ASSERT_EQUAL(strlen(member(&r, "plaintext")), 44);
    auth = strstr(out.data, "\r\nAuthorization: Bearer ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(auth);
    {
        char token[8192];

        CU_ASSERT_EQUAL_FATAL(sscanf(auth, "\r\nAuthorization: Bearer %8191s", token), 1);
        t = verified(v, token);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        CU_ASSERT_STRING_EQUAL(hf_jwt_claim(t, "email"), EMAIL);
        hf_jwt_release(t);
    }
    json_object_put(r.json);
    cfg.api->free_state(state);
    hf_buf_free(&out);
    hf_jwt_verifier_free(v);
}

static void test_cse_options_are_checked(void)
{
    void *state = NULL;

    CU_ASSERT_EQUAL_FATAL(
        parse("--url", "https://h:1", "--api", "cse-wrap", "--vus", "1", "--email", EMAIL, NULL),
        HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--token-key"));
    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://h:1", "--api", "cse-unwrap", "--vus", "1",
                                "--email", EMAIL, "--token-key", user_pem, "--token-kid", "user",
                                "--authz-key", authz_pem, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--authz-kid"));
    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://h:1", "--api", "cse-wrap", "--vus", "1",
                                "--email", EMAIL, "--token-key", jwks_path, "--token-kid", "user",
                                NULL),
                          HF_ARGS_OK);
    CU_ASSERT_NOT_EQUAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "not a PEM private key"));
    CU_ASSERT_PTR_NULL(state);
}

/* Both tokens of a CSE body pass the verifier as the gws-cse plugin configures it; the authz
 * token carries the claims checks 3-6 read. */
static void check_cse_tokens(const struct request *r, const char *kacls_url)
{
    static const char *const authz_req[] = {"email", "role", "resource_name", "kacls_url"};
    static const char *const authn_req[] = {"email"};
    struct hf_jwt_verifier *vn = verifier("https://idp.hf-load.test", "hf-load", authn_req, 1);
    struct hf_jwt_verifier *vz = verifier(AUTHZ_ISS, "cse-authorization", authz_req, 4);
    struct hf_jwt *n = NULL, *z = NULL;

    CU_ASSERT_PTR_NOT_NULL_FATAL(member(r, "authentication"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(member(r, "authorization"));
    n = verified(vn, member(r, "authentication"));
    z = verified(vz, member(r, "authorization"));
    CU_ASSERT_PTR_NOT_NULL(n);
    CU_ASSERT_PTR_NOT_NULL(z);
    if (n && z) {
        CU_ASSERT_STRING_EQUAL(hf_jwt_claim(n, "email"), EMAIL);
        CU_ASSERT_STRING_EQUAL(hf_jwt_claim(z, "email"), EMAIL);
        CU_ASSERT_STRING_EQUAL(hf_jwt_claim(z, "role"), "writer");
        CU_ASSERT_STRING_EQUAL(hf_jwt_claim(z, "email_type"), "google");
        CU_ASSERT_STRING_EQUAL(hf_jwt_claim(z, "kacls_url"), kacls_url);
        CU_ASSERT_STRING_EQUAL(hf_jwt_claim(z, "perimeter_id"), "");
        CU_ASSERT_PTR_NOT_NULL(strstr(hf_jwt_claim(z, "resource_name"), "//googleapis.com/"));
    }
    /* The tokens are not interchangeable: the verifier tells the issuers apart. */
    CU_ASSERT_TRUE(refused(vz, member(r, "authentication")));
    hf_jwt_release(n);
    hf_jwt_release(z);
    hf_jwt_verifier_free(vn);
    hf_jwt_verifier_free(vz);
}

static void test_cse_wrap_request_carries_verifiable_tokens(void)
{
    struct hf_buf out = {0};
    struct request r = {0};
    void *state = NULL, *vu = NULL;
    char first_key[64] = "", first_authn[4096] = "";
    bool setup = true;

    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://127.0.0.1:8443/", "--api", "cse-wrap", "--vus",
                                "1", "--prefix", "/cse", "--token-key", user_pem, "--token-kid",
                                "user", "--email", EMAIL, NULL),
                          HF_ARGS_OK);
    CU_ASSERT_EQUAL_FATAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    for (int round = 0; round < 2; round++) {
        out.len = 0;
        CU_ASSERT_EQUAL_FATAL(cfg.api->build(state, &vu, &out, &setup), 0);
        CU_ASSERT_FALSE(setup);
        CU_ASSERT_EQUAL_FATAL(request_read(&out, &r), 0);
        CU_ASSERT_STRING_EQUAL(r.target, "/cse/wrap");
        CU_ASSERT_TRUE(header_is(&out, "Host", "127.0.0.1:8443"));
        CU_ASSERT_TRUE(header_is(&out, "Content-Type", "application/json"));
        CU_ASSERT_PTR_NOT_NULL(member(&r, "reason"));
        CU_ASSERT_EQUAL_FATAL(strlen(member(&r, "key")), 44);
        check_cse_tokens(&r, "https://127.0.0.1:8443/cse");
        /* A new DEK every call; the same tokens, minted once. */
        if (round == 0) {
            snprintf(first_key, sizeof(first_key), "%s", member(&r, "key"));
            snprintf(first_authn, sizeof(first_authn), "%s", member(&r, "authentication"));
        } else {
            CU_ASSERT_STRING_NOT_EQUAL(first_key, member(&r, "key"));
            CU_ASSERT_STRING_EQUAL(first_authn, member(&r, "authentication"));
        }
        json_object_put(r.json);
    }
    /* The reply must hold a blob of the spec's size for that key. */
    CU_ASSERT_NOT_EQUAL(cfg.api->check(state, &vu, false, SHORT_BLOB, strlen(SHORT_BLOB)), 0);
    {
        char reply[256];

        snprintf(reply, sizeof(reply), "{\"wrapped_key\":\"%0*d\"}", WRAPPED_LEN, 0);
        CU_ASSERT_EQUAL(cfg.api->check(state, &vu, false, reply, strlen(reply)), 0);
    }
    cfg.api->free_vu(vu);
    cfg.api->free_state(state);
    hf_buf_free(&out);
}

static void test_cse_unwrap_prepares_with_one_wrap(void)
{
    struct hf_buf out = {0};
    struct request r = {0};
    void *state = NULL, *vu = NULL;
    char key[64], reply[256];
    bool setup = false;

    CU_ASSERT_EQUAL_FATAL(parse("--url", "https://127.0.0.1:8443", "--api", "cse-unwrap", "--vus",
                                "1", "--prefix", "cse", "--token-key", user_pem, "--token-kid",
                                "user", "--authz-key", authz_pem, "--authz-kid", "authz",
                                "--kacls-url", "https://kacls.example.test/cse", "--email", EMAIL,
                                NULL),
                          HF_ARGS_OK);
    CU_ASSERT_EQUAL_FATAL(cfg.api->init(&cfg, &state, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL_FATAL(cfg.api->build(state, &vu, &out, &setup), 0);
    CU_ASSERT_TRUE(setup); /* first a wrap, not measured */
    CU_ASSERT_EQUAL_FATAL(request_read(&out, &r), 0);
    CU_ASSERT_STRING_EQUAL(r.target, "/cse/wrap");
    snprintf(key, sizeof(key), "%s", member(&r, "key"));
    json_object_put(r.json);
    /* A short blob does not prepare the VU: it wraps again. */
    CU_ASSERT_NOT_EQUAL(cfg.api->check(state, &vu, true, SHORT_BLOB, strlen(SHORT_BLOB)), 0);
    out.len = 0;
    CU_ASSERT_EQUAL_FATAL(cfg.api->build(state, &vu, &out, &setup), 0);
    CU_ASSERT_TRUE(setup);
    CU_ASSERT_EQUAL_FATAL(request_read(&out, &r), 0);
    snprintf(key, sizeof(key), "%s", member(&r, "key"));
    json_object_put(r.json);
    snprintf(reply, sizeof(reply), "{\"wrapped_key\":\"%0*d\"}", WRAPPED_LEN, 7);
    CU_ASSERT_EQUAL(cfg.api->check(state, &vu, true, reply, strlen(reply)), 0);

    for (int round = 0; round < 2; round++) {
        out.len = 0;
        CU_ASSERT_EQUAL_FATAL(cfg.api->build(state, &vu, &out, &setup), 0);
        CU_ASSERT_FALSE(setup);
        CU_ASSERT_EQUAL_FATAL(request_read(&out, &r), 0);
        CU_ASSERT_STRING_EQUAL(r.target, "/cse/unwrap");
        CU_ASSERT_PTR_NULL(member(&r, "key"));
        CU_ASSERT_EQUAL(strlen(member(&r, "wrapped_key")), WRAPPED_LEN);
        CU_ASSERT_EQUAL(member(&r, "wrapped_key")[WRAPPED_LEN - 1], '7');
        check_cse_tokens(&r, "https://kacls.example.test/cse");
        json_object_put(r.json);
    }
    /* The unwrapped key must be the VU's own. */
    snprintf(reply, sizeof(reply), "{\"key\":\"%s\"}", key);
    CU_ASSERT_EQUAL(cfg.api->check(state, &vu, false, reply, strlen(reply)), 0);
    reply[10] ^= 1;
    CU_ASSERT_NOT_EQUAL(cfg.api->check(state, &vu, false, reply, strlen(reply)), 0);
    cfg.api->free_vu(vu);
    cfg.api->free_state(state);
    hf_buf_free(&out);
}

static void test_token_signed_by_an_unpublished_key_is_refused(void)
{
    static const char *const req[] = {"email"};
    struct hf_jwt_verifier *v = verifier("https://idp.hf-load.test", "hf-load", req, 1);
    struct json_object *c = json_tokener_parse(
        "{\"iss\":\"https://idp.hf-load.test\",\"aud\":\"hf-load\",\"email\":\"" EMAIL "\","
        "\"exp\":4102444800}");
    char *good = hf_load_jwt_mint(user_pem, "user", c, err, sizeof(err));
    char *bad = hf_load_jwt_mint(other_pem, "user", c, err, sizeof(err));
    struct hf_jwt *t;

    CU_ASSERT_PTR_NOT_NULL_FATAL(good);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
    t = verified(v, good);
    CU_ASSERT_PTR_NOT_NULL(t);
    hf_jwt_release(t);
    /* The verifier really checks the signature hf-load makes. */
    CU_ASSERT_TRUE(refused(v, bad));
    free(good);
    free(bad);
    json_object_put(c);
    hf_jwt_verifier_free(v);
}

static void test_printed_jwks_verifies_the_tokens(void)
{
    static const char *const req[] = {"email"};
    struct json_object *c = json_tokener_parse(
        "{\"iss\":\"https://idp.hf-load.test\",\"aud\":\"hf-load\",\"email\":\"" EMAIL "\","
        "\"exp\":4102444800}");
    char path[160], *user = NULL, *authz = NULL;
    struct hf_jwt_verifier *v;
    struct hf_jwt *t;
    FILE *f;

    CU_ASSERT_EQUAL(parse("--print-jwks", NULL), HF_ARGS_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--token-key"));
    CU_ASSERT_EQUAL_FATAL(parse("--print-jwks", "--token-key", user_pem, "--token-kid", "u2",
                                "--authz-key", authz_pem, "--authz-kid", "z2", NULL),
                          HF_ARGS_JWKS);
    snprintf(path, sizeof(path), "%s/printed.jwks", dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(path, "w"));
    CU_ASSERT_EQUAL(hf_load_jwks_print(f, &cfg, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL_FATAL(fclose(f), 0);
    /* The printed set verifies tokens of both keys under their kids; another key is refused. */
    v = verifier_over(path, "https://idp.hf-load.test", "hf-load", req, 1);
    user = hf_load_jwt_mint(user_pem, "u2", c, err, sizeof(err));
    authz = hf_load_jwt_mint(authz_pem, "z2", c, err, sizeof(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(user);
    CU_ASSERT_PTR_NOT_NULL_FATAL(authz);
    CU_ASSERT_PTR_NOT_NULL(t = verified(v, user));
    hf_jwt_release(t);
    CU_ASSERT_PTR_NOT_NULL(t = verified(v, authz));
    hf_jwt_release(t);
    free(authz);
    authz = hf_load_jwt_mint(authz_pem, "u2", c, err, sizeof(err));
    CU_ASSERT_TRUE(refused(v, authz));
    free(user);
    free(authz);
    json_object_put(c);
    hf_jwt_verifier_free(v);
}

static CU_TestInfo tests[] = {
    {"the EKM token passes the gateway's verifier", test_ekm_token_passes_the_gateway_verifier},
    {"CSE options are checked", test_cse_options_are_checked},
    {"a CSE wrap carries tokens the gateway verifies",
     test_cse_wrap_request_carries_verifiable_tokens},
    {"CSE unwrap prepares with one wrap", test_cse_unwrap_prepares_with_one_wrap},
    {"a token signed by an unpublished key is refused",
     test_token_signed_by_an_unpublished_key_is_refused},
    {"--print-jwks gives the key set that verifies the tokens",
     test_printed_jwks_verifies_the_tokens},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"load-jwt", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
