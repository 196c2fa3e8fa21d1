/* Minting RS256 tokens through the module (gateway/jwt-sign.c) and verifying them with the
 * gateway's own verifier over an inline key set (jwks_json): the built holdfast-pkcs11.so,
 * opened as holdfastd opens it (hf_gw_p11_open with the gateway PIN), signs with a key pair it
 * generated; the public JWK comes from the module's attributes, never from the test. */
#include "hf-build.h"

#include "gateway/jwks.h"
#include "gateway/p11.h"
#include "gateway/request.h"
#include "tests/unit/gw-module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KACLS "https://kacls.test/cse"

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_OBJECT_HANDLE pub, priv, other_pub, other_priv;

static CK_RV rsa_generate(const char *label, CK_OBJECT_HANDLE *pubh, CK_OBJECT_HANDLE *privh)
{
    CK_FUNCTION_LIST_PTR p11 = hf_p11_functions();
    CK_MECHANISM mech = {CKM_RSA_PKCS_KEY_PAIR_GEN, NULL, 0};
    CK_BBOOL yes = CK_TRUE;
    CK_ULONG bits = 2048;
    CK_BYTE e[] = {1, 0, 1};
    CK_ATTRIBUTE pt[] = {
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, &yes, 1},
        {CKA_MODULUS_BITS, &bits, sizeof(bits)},
        {CKA_PUBLIC_EXPONENT, e, sizeof(e)},
        {CKA_VERIFY, &yes, 1},
    };
    CK_ATTRIBUTE vt[] = {
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, &yes, 1},
        {CKA_SIGN, &yes, 1},
    };
    CK_SLOT_ID slot;
    CK_ULONG n = 1;
    CK_SESSION_HANDLE s;
    CK_RV rv;

    /* Token objects need a R/W session; the gateway's own are read-only. */
    if ((rv = p11->C_GetSlotList(CK_TRUE, &slot, &n)) != CKR_OK) return rv;
    rv = p11->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &s);
    if (rv != CKR_OK) return rv;
    rv = p11->C_GenerateKeyPair(s, &mech, pt, 5, vt, 3, pubh, privh);
    p11->C_CloseSession(s);
    return rv;
}

static int suite_init(void)
{
    CK_RV rv;

    if (hf_test_gw_module_open(&env, &mod) != 0) return -1;
    if ((rv = rsa_generate("jwt-sign", &pub, &priv)) != CKR_OK ||
        (rv = rsa_generate("jwt-sign-other", &other_pub, &other_priv)) != CKR_OK) {
        fprintf(stderr, "RSA key generation failed: 0x%lx\n", (unsigned long)rv);
        return -1;
    }
    return 0;
}

static int suite_clean(void)
{
    hf_test_gw_module_close(&env, &mod);
    return 0;
}

static struct json_object *claims_new(void)
{
    struct json_object *c = json_object_new_object();

    json_object_object_add(c, "iss", json_object_new_string(KACLS));
    json_object_object_add(c, "aud", json_object_new_string(KACLS));
    json_object_object_add(c, "email", json_object_new_string("alice@example.com"));
    json_object_object_add(c, "resource_name", json_object_new_string("//drive/files/1"));
    json_object_object_add(c, "exp", json_object_new_int64(hf_wall_s() + 900));
    return c;
}

/* {"keys":[jwk of each object]} as text (a new string). */
static char *jwks_of(const CK_OBJECT_HANDLE *keys, const char *const *kids, size_t n)
{
    struct json_object *set = json_object_new_object(), *arr = json_object_new_array();
    char *text;

    for (size_t i = 0; i < n; i++) {
        struct json_object *jwk = hf_jwk_rsa_public(keys[i], kids[i]);

        CU_ASSERT_PTR_NOT_NULL(jwk);
        if (jwk) json_object_array_add(arr, jwk);
    }
    json_object_object_add(set, "keys", arr);
    text = strdup(json_object_to_json_string_ext(set, JSON_C_TO_STRING_PLAIN));
    json_object_put(set);
    return text;
}

static struct hf_jwt_verifier *verifier_of(const char *jwks_json)
{
    const char *auds[] = {KACLS};
    struct hf_jwt_issuer iss = {.issuer = KACLS,
                                .audiences = auds,
                                .naudiences = 1,
                                .algs = HF_JWT_RS256,
                                .jwks_json = jwks_json};
    struct hf_jwt_verifier *v = hf_jwt_verifier_new();
    char err[256] = "";

    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    if (!hf_jwt_verifier_add(v, &iss, err, sizeof(err))) {
        fprintf(stderr, "hf_jwt_verifier_add: %s\n", err);
        CU_FAIL("the inline key set is refused");
    }
    return v;
}

static char *mint(CK_OBJECT_HANDLE key, const char *kid, enum hf_status *st)
{
    struct hf_request *req = hf_request_new("POST", "/cse/delegate");
    struct json_object *claims = claims_new();
    char *token = NULL, why[256] = "";

    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    req->api = "gws-cse";
    *st = hf_jwt_sign_rs256(req, "delegate.sign", key, kid, claims, &token, why, sizeof(why));
    if (*st != HF_STATUS_OK) CU_ASSERT_PTR_NULL(token);
    hf_gw_p11_request_end(req);
    hf_request_free(req);
    json_object_put(claims);
    return token;
}

static enum hf_status verify(struct hf_jwt_verifier *v, const char *token)
{
    struct hf_jwt *t = NULL;
    char why[256] = "";
    enum hf_status st = hf_jwt_verify(v, token, strlen(token), &t, why, sizeof(why));

    hf_jwt_release(t);
    return st;
}

/* Whether the token's decoded claims segment holds text as written (compact, "/" unescaped). */
static bool payload_has(const char *token, const char *text)
{
    const char *p = strchr(token, '.'), *end = strrchr(token, '.');
    unsigned char buf[2048];
    size_t n = 0;

    if (!p || end <= p + 1 || hf_base64_decoded_max((size_t)(end - p - 1)) >= sizeof(buf))
        return false;
    if (!hf_base64_decode_any(p + 1, (size_t)(end - p - 1), buf, &n)) return false;
    buf[n] = '\0';
    return strstr((const char *)buf, text) != NULL;
}

static void test_minted_token_verifies_against_the_module_public_key(void)
{
    const char *kids[] = {"v1"};
    char *jwks = jwks_of(&priv, kids, 1), *token;
    struct hf_jwt_verifier *v = verifier_of(jwks);
    struct hf_jwt *t = NULL;
    enum hf_status st;
    char why[256] = "";

    token = mint(priv, "v1", &st);
    CU_ASSERT_EQUAL_FATAL(st, HF_STATUS_OK);
    CU_ASSERT_EQUAL(hf_jwt_verify(v, token, strlen(token), &t, why, sizeof(why)), HF_STATUS_OK);
    if (t) {
        /* The claims arrive as minted, slashes unescaped in the signed bytes too. */
        CU_ASSERT_STRING_EQUAL(hf_jwt_claim(t, "resource_name"), "//drive/files/1");
        CU_ASSERT_STRING_EQUAL(hf_jwt_claim(t, "email"), "alice@example.com");
    }
    CU_ASSERT_TRUE(payload_has(token, "\"resource_name\":\"//drive/files/1\""));
    hf_jwt_release(t);
    hf_jwt_verifier_free(v);
    free(token);
    free(jwks);
}

/* Every byte of the token is covered: one flipped character of the header, the claims or the
 * signature is refused. */
static void test_a_changed_byte_is_refused(void)
{
    const char *kids[] = {"v1"};
    char *jwks = jwks_of(&priv, kids, 1), *token;
    struct hf_jwt_verifier *v = verifier_of(jwks);
    enum hf_status st;
    size_t len, dot1, dot2;

    token = mint(priv, "v1", &st);
    CU_ASSERT_EQUAL_FATAL(st, HF_STATUS_OK);
    len = strlen(token);
    dot1 = (size_t)(strchr(token, '.') - token);
    dot2 = (size_t)(strrchr(token, '.') - token);
    const size_t at[] = {dot1 / 2, dot1 + 1 + (dot2 - dot1) / 2, dot2 + 1 + (len - dot2) / 2};
    for (size_t i = 0; i < 3; i++) {
        char saved = token[at[i]];

        token[at[i]] = saved == 'A' ? 'B' : 'A';
        CU_ASSERT_EQUAL(verify(v, token), HF_STATUS_UNAUTHENTICATED);
        token[at[i]] = saved;
    }
    /* Restored, it verifies: the refusals above were the changed bytes. */
    CU_ASSERT_EQUAL(verify(v, token), HF_STATUS_OK);
    hf_jwt_verifier_free(v);
    free(token);
    free(jwks);
}

/* A key set of another key, or of our key under another kid, does not accept it. */
static void test_another_key_or_kid_is_refused(void)
{
    const char *kid_v1[] = {"v1"}, *kid_v2[] = {"v2"};
    char *other = jwks_of(&other_priv, kid_v1, 1), *renamed = jwks_of(&priv, kid_v2, 1), *token;
    struct hf_jwt_verifier *v1 = verifier_of(other), *v2 = verifier_of(renamed);
    enum hf_status st;

    token = mint(priv, "v1", &st);
    CU_ASSERT_EQUAL_FATAL(st, HF_STATUS_OK);
    CU_ASSERT_EQUAL(verify(v1, token), HF_STATUS_UNAUTHENTICATED);
    /* An inline set has nothing to refetch for the unknown kid: refused, and nothing waits. */
    CU_ASSERT_EQUAL(verify(v2, token), HF_STATUS_UNAUTHENTICATED);
    hf_jwt_verifier_free(v1);
    hf_jwt_verifier_free(v2);
    free(token);
    free(other);
    free(renamed);
}

/* The private object and its public face give the same JWK; a set holding both versions'
 * keys (a rotation) accepts tokens of either. */
static void test_private_and_public_objects_give_one_jwk(void)
{
    struct json_object *a = hf_jwk_rsa_public(priv, "v1"), *b = hf_jwk_rsa_public(pub, "v1");
    const CK_OBJECT_HANDLE both[] = {priv, other_priv};
    const char *kids[] = {"v1", "v2"};
    char *jwks = jwks_of(both, kids, 2), *t1, *t2;
    struct hf_jwt_verifier *v = verifier_of(jwks);
    enum hf_status st;

    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_TRUE(json_object_equal(a, b));
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(a, "e")), "AQAB");
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(a, "kty")), "RSA");
    t1 = mint(priv, "v1", &st);
    t2 = mint(other_priv, "v2", &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t2);
    CU_ASSERT_EQUAL(verify(v, t1), HF_STATUS_OK);
    CU_ASSERT_EQUAL(verify(v, t2), HF_STATUS_OK);
    json_object_put(a);
    json_object_put(b);
    hf_jwt_verifier_free(v);
    free(t1);
    free(t2);
    free(jwks);
}

/* What the module refuses is the caller's status, and no token comes out. */
static void test_a_key_that_cannot_sign_gives_no_token(void)
{
    enum hf_status st;
    char *token = mint(pub, "v1", &st);

    CU_ASSERT_PTR_NULL(token);
    CU_ASSERT_NOT_EQUAL(st, HF_STATUS_OK);
    token = mint((CK_OBJECT_HANDLE)0x7fffff, "v1", &st);
    CU_ASSERT_PTR_NULL(token);
    CU_ASSERT_NOT_EQUAL(st, HF_STATUS_OK);
    CU_ASSERT_PTR_NULL(hf_jwk_rsa_public((CK_OBJECT_HANDLE)0x7fffff, "v1"));
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"a minted token verifies against the module's public key",
         test_minted_token_verifies_against_the_module_public_key},
        {"a changed byte is refused", test_a_changed_byte_is_refused},
        {"another key or kid is refused", test_another_key_or_kid_is_refused},
        {"private and public objects give one JWK", test_private_and_public_objects_give_one_jwk},
        {"a key that cannot sign gives no token", test_a_key_that_cannot_sign_gives_no_token},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {
        {"jwt-sign", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
