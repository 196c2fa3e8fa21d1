/* C_WrapKey and C_UnwrapKey with a key kept in an HSM pool (issue 14), through the built
 * holdfast-pkcs11.so: CKM_AES_KEY_WRAP and CKM_AES_KEY_WRAP_PAD (and _KWP) run in the member
 * (pool-wrap.h), and the blobs, answers and audit records are a local key's.
 *
 * As in test-module-pool-aes.c, the pool key gets known bytes: made in a clone pool of two
 * SoftHSMv2 tokens ("pool:cl"), its object on each member is replaced by one with the same
 * template and a value the test chose, so every blob is compared byte for byte with OpenSSL's
 * (EVP_aes_256_wrap, _wrap_pad) under those bytes, and a local key imported with them through the
 * module is the twin whose answers must be the same. Member b is a copy of the fault shim in front
 * of the same SoftHSMv2 (tests/shim/README.md), whose dead file makes it fail every call: the
 * failover case. An RSA pool key unwraps an AES key that OpenSSL put under its public key with
 * RSA-OAEP (the RSA family's member path, for C_UnwrapKey). */
#include "hf-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include "harness-pool.h"
#include "harness.h"
#include "module-loader.h"
#include "pkcs11/core/core.h"

#define TOKEN_A "hf-mpw-a"
#define TOKEN_B "hf-mpw-b"
#define PIN_ENV "HF_TEST_MPW_PIN"

static struct hf_test_env env;
static struct hf_core *core;
static const struct hf_actor who = {"cli", "uid:test"};
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE sess;
static CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
static char shim[PATH_MAX + 16], dead[PATH_MAX + 32];
static bool have_shim;

/* The wrapping key's bytes (planted in the pool key's member objects, and its local twin's), and
 * the key wrapped. */
static unsigned char kbytes[32], tbytes[32];
/* pw-aes: the pool key; lw-aes: its twin; pw-nowrap, lw-nowrap: encrypt and decrypt only;
 * target: an AES key the module holds, extractable; starget: the same bytes, a session key. */
static CK_OBJECT_HANDLE pool_h, local_h, pool_nowrap, local_nowrap, target, starget;

static const CK_MECHANISM_TYPE kw_mechs[] = {CKM_AES_KEY_WRAP, CKM_AES_KEY_WRAP_PAD,
                                             CKM_AES_KEY_WRAP_KWP};
#define N_KW (sizeof(kw_mechs) / sizeof(kw_mechs[0]))

/* ---- set-up ---------------------------------------------------------------------------------- */

/* kbytes planted in the pool key's objects, on both members. */
static CK_RV plant(const char *label)
{
    static const char *const tokens[2] = {TOKEN_A, TOKEN_B};
    int planted = 0;
    CK_RV rv = hf_test_pool_plant(env.cfg.hsm_module, tokens, 2, label, true, kbytes, 32, &planted);

    return rv == CKR_OK && planted != 2 ? CKR_GENERAL_ERROR : rv;
}

static CK_RV pool_key(const char *name, unsigned long usage)
{
    struct hf_key_spec spec = {
        .name = name, .alg = HF_ALG_AES, .bits = 256, .usage = usage, .source = "pool:cl"};
    struct hf_key k = {0};
    struct hf_key_version v = {0};
    CK_RV rv = hf_core_key_create(core, &spec, &who, &k, &v);

    if (rv == CKR_OK && (usage & HF_USAGE_WRAP)) rv = plant(v.uuid);
    hf_key_clear(&k);
    hf_key_version_clear(&v);
    return rv;
}

/* An AES key through the module: value, label, token or session, wrap usage, exportable. */
static CK_RV aes_import(const unsigned char value[32], const char *label, bool token, bool wrap,
                        CK_OBJECT_HANDLE *h)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_ATTRIBUTE t[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_VALUE, (void *)value, 32},
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, token ? &yes : &no, 1},
        {CKA_ENCRYPT, &yes, 1},
        {CKA_DECRYPT, &yes, 1},
        {CKA_WRAP, wrap ? &yes : &no, 1},
        {CKA_UNWRAP, wrap ? &yes : &no, 1},
        {CKA_SENSITIVE, &no, 1},
        {CKA_EXTRACTABLE, &yes, 1},
    };

    return p11->C_CreateObject(sess, t, sizeof(t) / sizeof(t[0]), h);
}

/* Member b's module: a copy of the shim (one per member: tests/shim/README.md) over the same
 * SoftHSMv2, which the process loads once, so b sees the tokens a does. */
static int shim_make(void)
{
    char conf[PATH_MAX + 48];
    int made;

    snprintf(dead, sizeof(dead), "%s/b.so.dead", env.dir);
    snprintf(conf, sizeof(conf), "dead_file = %s\n", dead);
    made = hf_test_shim_copy(HF_TEST_SHIM, env.dir, "b.so", env.cfg.hsm_module, conf, shim,
                             sizeof(shim));
    have_shim = made == 1;
    return made < 0 ? -1 : 0;
}

static int suite_init(void)
{
    const unsigned long all = HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT | HF_USAGE_WRAP | HF_USAGE_UNWRAP;
    CK_RV rv;

    for (size_t i = 0; i < sizeof(kbytes); i++) {
        kbytes[i] = (unsigned char)(i * 29 + 7);
        tbytes[i] = (unsigned char)(i * 13 + 101);
    }
    rv = hf_test_pool_suite_setup(&env, &core, &who, TOKEN_A, TOKEN_B, PIN_ENV, 2);
    if (rv == CKR_OK && shim_make() != 0) rv = CKR_GENERAL_ERROR;
    if (rv == CKR_OK)
        rv = hf_test_pool_add_modules(core, &who, env.cfg.hsm_module,
                                      have_shim ? shim : env.cfg.hsm_module, "cl",
                                      HF_POOL_MODE_CLONE, TOKEN_A, TOKEN_B, PIN_ENV, 2);
    if (rv == CKR_OK) rv = pool_key("pw-aes", all);
    if (rv == CKR_OK) rv = pool_key("pw-nowrap", HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT);
    if (rv == CKR_OK && hf_test_module_load(&mod) != 0) rv = CKR_GENERAL_ERROR;
    if (rv == CKR_OK) p11 = mod.p11;
    if (rv == CKR_OK) rv = hf_test_module_start(p11, &sess);
    if (rv == CKR_OK) rv = aes_import(kbytes, "lw-aes", true, true, &local_h);
    if (rv == CKR_OK) rv = aes_import(kbytes, "lw-nowrap", true, false, &local_nowrap);
    if (rv == CKR_OK) rv = aes_import(tbytes, "target", true, false, &target);
    if (rv == CKR_OK) rv = aes_import(tbytes, "starget", false, false, &starget);
    if (rv == CKR_OK) {
        pool_h = hf_test_find_by_label(p11, sess, CKO_SECRET_KEY, "pw-aes");
        pool_nowrap = hf_test_find_by_label(p11, sess, CKO_SECRET_KEY, "pw-nowrap");
        if (pool_h == CK_INVALID_HANDLE || pool_nowrap == CK_INVALID_HANDLE) rv = CKR_GENERAL_ERROR;
    }
    if (rv != CKR_OK) fprintf(stderr, "suite setup failed: 0x%lx\n", (unsigned long)rv);
    return rv == CKR_OK ? 0 : -1;
}

static int suite_clean(void)
{
    if (p11 != NULL) {
        p11->C_CloseSession(sess);
        p11->C_Finalize(NULL);
    }
    hf_test_module_unload(&mod);
    hf_core_close(core);
    if (have_shim) unlink(dead);
    hf_test_env_teardown(&env);
    return 0;
}

/* ---- helpers --------------------------------------------------------------------------------- */

/* OpenSSL's RFC 3394 (mech CKM_AES_KEY_WRAP) or RFC 5649 wrap (enc) or unwrap under kbytes. */
static int openssl_kw(CK_MECHANISM_TYPE mech, bool enc, const unsigned char *in, int inlen,
                      unsigned char *out)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    const EVP_CIPHER *c = mech == CKM_AES_KEY_WRAP ? EVP_aes_256_wrap() : EVP_aes_256_wrap_pad();
    int len = 0, flen = 0, ok;

    ok = ctx != NULL && EVP_CipherInit_ex(ctx, c, NULL, kbytes, NULL, enc) &&
         EVP_CipherUpdate(ctx, out, &len, in, inlen) && EVP_CipherFinal_ex(ctx, out + len, &flen);
    EVP_CIPHER_CTX_free(ctx);
    return ok ? len + flen : -1;
}

/* C_UnwrapKey into a session AES key whose value can be read back. */
static CK_RV unwrap_aes(CK_MECHANISM *m, CK_OBJECT_HANDLE key, const unsigned char *blob,
                        CK_ULONG len, CK_OBJECT_HANDLE *h)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_ATTRIBUTE t[] = {
        {CKA_CLASS, &cls, sizeof(cls)}, {CKA_KEY_TYPE, &type, sizeof(type)}, {CKA_TOKEN, &no, 1},
        {CKA_SENSITIVE, &no, 1},        {CKA_EXTRACTABLE, &yes, 1},          {CKA_ENCRYPT, &yes, 1},
    };

    *h = CK_INVALID_HANDLE;
    return p11->C_UnwrapKey(sess, m, key, (CK_BYTE_PTR)blob, len, t, sizeof(t) / sizeof(t[0]), h);
}

/* The new key holds want (32 bytes); it is destroyed after the look. */
static bool key_holds(CK_OBJECT_HANDLE h, const unsigned char *want)
{
    unsigned char val[64];
    CK_ATTRIBUTE a = {CKA_VALUE, val, sizeof(val)};
    bool ok = p11->C_GetAttributeValue(sess, h, &a, 1) == CKR_OK && a.ulValueLen == 32 &&
              memcmp(val, want, 32) == 0;

    p11->C_DestroyObject(sess, h);
    return ok;
}

/* The pool key and its twin (named pool, local) have as many records (at least one). */
static void audit_same(const char *pool, const char *local, const char *op, const char *mech,
                       CK_RV rv)
{
    int p = hf_test_audit_count(env.cfg.audit_path, pool, op, mech, rv),
        l = hf_test_audit_count(env.cfg.audit_path, local, op, mech, rv);

    CU_ASSERT(p > 0);
    CU_ASSERT_EQUAL(p, l);
}

/* ---- cases ----------------------------------------------------------------------------------- */

static void test_a_pool_key_wraps_a_key_as_openssl_and_its_local_twin_do(void)
{
    for (size_t i = 0; i < N_KW; i++) {
        CK_MECHANISM m = {kw_mechs[i], NULL, 0};
        unsigned char want[48], blob[48];
        int wlen = openssl_kw(kw_mechs[i], true, tbytes, sizeof(tbytes), want);
        CK_ULONG len = 0;

        CU_ASSERT_EQUAL_FATAL(wlen, 40);
        /* The size query answered in the module, a short buffer refused before any member call,
         * then the member's blob: OpenSSL's, for the token key and the session key alike. */
        CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &m, pool_h, target, NULL, &len), CKR_OK);
        CU_ASSERT_EQUAL(len, 40);
        len = 39;
        CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &m, pool_h, target, blob, &len), CKR_BUFFER_TOO_SMALL);
        CU_ASSERT_EQUAL(len, 40);
        for (int k = 0; k < 4; k++) {
            CK_OBJECT_HANDLE key = k < 2 ? pool_h : local_h, t = k % 2 ? starget : target;
            memset(blob, 0, sizeof(blob));
            len = sizeof(blob);
            CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &m, key, t, blob, &len), CKR_OK);
            CU_ASSERT(len == 40 && memcmp(blob, want, 40) == 0);
        }
    }
    audit_same("pw-aes", "lw-aes", "wrap", "CKM_AES_KEY_WRAP_PAD", CKR_OK);
}

static void test_a_pool_key_unwraps_openssl_blobs_into_the_key_they_hold(void)
{
    for (size_t i = 0; i < N_KW; i++) {
        CK_MECHANISM m = {kw_mechs[i], NULL, 0};
        unsigned char blob[48];
        int blen = openssl_kw(kw_mechs[i], true, tbytes, sizeof(tbytes), blob);

        CU_ASSERT_EQUAL_FATAL(blen, 40);
        for (int k = 0; k < 2; k++) {
            CK_OBJECT_HANDLE h;
            CU_ASSERT_EQUAL(unwrap_aes(&m, k ? local_h : pool_h, blob, 40, &h), CKR_OK);
            CU_ASSERT(key_holds(h, tbytes));
        }
    }
    audit_same("pw-aes", "lw-aes", "unwrap", "CKM_AES_KEY_WRAP", CKR_OK);
}

/* C_Encrypt and C_Decrypt take the same mechanisms on any bytes: RFC 5649 of a length that is
 * not whole blocks is where SoftHSMv2 2.6 goes wrong (pool-wrap.h), and a member that gets it
 * wrong says so rather than hand out its blob; its unwrap of OpenSSL's is right, to the byte. */
static void test_data_of_any_length_unwraps_exactly_and_a_wrong_member_wrap_is_refused(void)
{
    CK_MECHANISM kwp = {CKM_AES_KEY_WRAP_PAD, NULL, 0};
    static const unsigned char data[17] = "seventeen bytes!";
    unsigned char blob[32], out[32];
    int blen = openssl_kw(CKM_AES_KEY_WRAP_PAD, true, data, sizeof(data), blob);
    CK_ULONG len = sizeof(out);
    CK_RV rv;

    CU_ASSERT_EQUAL_FATAL(blen, 32);
    for (int k = 0; k < 2; k++) {
        CK_OBJECT_HANDLE key = k ? local_h : pool_h;
        /* A buffer short of the value gets its exact size, then the bytes; one short of the
         * bound only (24) but long enough takes them at once. */
        CU_ASSERT_EQUAL_FATAL(p11->C_DecryptInit(sess, &kwp, key), CKR_OK);
        len = 10;
        CU_ASSERT_EQUAL(p11->C_Decrypt(sess, blob, 32, out, &len), CKR_BUFFER_TOO_SMALL);
        CU_ASSERT_EQUAL(len, 17);
        CU_ASSERT_EQUAL(p11->C_Decrypt(sess, blob, 32, out, &len), CKR_OK);
        CU_ASSERT(len == 17 && memcmp(out, data, 17) == 0);
        CU_ASSERT_EQUAL_FATAL(p11->C_DecryptInit(sess, &kwp, key), CKR_OK);
        len = 20;
        CU_ASSERT_EQUAL(p11->C_Decrypt(sess, blob, 32, out, &len), CKR_OK);
        CU_ASSERT(len == 17 && memcmp(out, data, 17) == 0);
    }
    CU_ASSERT_EQUAL_FATAL(p11->C_EncryptInit(sess, &kwp, pool_h), CKR_OK);
    len = sizeof(out);
    rv = p11->C_Encrypt(sess, (CK_BYTE_PTR)data, sizeof(data), out, &len);
    /* SoftHSMv2 2.6, the members here: its blob would unwrap to 24 bytes (a token that wraps it
     * right gives OpenSSL's blob). */
    CU_ASSERT_EQUAL(rv, CKR_KEY_NOT_WRAPPABLE);
}

/* One refusal's answer on the pool key and on its twin. */
static void answers_of(CK_OBJECT_HANDLE key, CK_OBJECT_HANDLE nowrap, CK_RV a[5])
{
    CK_MECHANISM kwp = {CKM_AES_KEY_WRAP_PAD, NULL, 0}, kw = {CKM_AES_KEY_WRAP, NULL, 0};
    unsigned char blob[48];
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_ULONG len = sizeof(blob);

    CU_ASSERT_EQUAL_FATAL(openssl_kw(CKM_AES_KEY_WRAP_PAD, true, tbytes, 32, blob), 40);
    blob[9] ^= 1;
    a[0] = unwrap_aes(&kwp, key, blob, 40, &h);
    /* Not whole blocks, or too short for RFC 3394. */
    a[1] = unwrap_aes(&kwp, key, blob, 39, &h);
    a[2] = unwrap_aes(&kw, key, blob, 16, &h);
    /* Usage without wrap and unwrap. */
    a[3] = p11->C_WrapKey(sess, &kwp, nowrap, target, blob, &len);
    CU_ASSERT_EQUAL_FATAL(openssl_kw(CKM_AES_KEY_WRAP_PAD, true, tbytes, 32, blob), 40);
    a[4] = unwrap_aes(&kwp, nowrap, blob, 40, &h);
}

static void test_a_tampered_blob_or_a_key_without_wrap_usage_answers_as_the_local_twin(void)
{
    static const CK_RV want[5] = {CKR_WRAPPED_KEY_INVALID, CKR_WRAPPED_KEY_LEN_RANGE,
                                  CKR_WRAPPED_KEY_LEN_RANGE, CKR_KEY_FUNCTION_NOT_PERMITTED,
                                  CKR_KEY_FUNCTION_NOT_PERMITTED};
    CK_RV pool[5], local[5];

    answers_of(pool_h, pool_nowrap, pool);
    answers_of(local_h, local_nowrap, local);
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(local[i], want[i]);
        CU_ASSERT_EQUAL(pool[i], want[i]);
        if (pool[i] != want[i]) fprintf(stderr, "answer %d: 0x%lx\n", i, pool[i]);
    }
    audit_same("pw-aes", "lw-aes", "unwrap", "CKM_AES_KEY_WRAP_PAD", CKR_WRAPPED_KEY_INVALID);
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Member b's figures in the module's pool "cl". */
static bool member_b_status(HF_POOL_MEMBER_STATUS *out)
{
    CK_C_GetInterface get = (CK_C_GetInterface)hf_test_module_sym(&mod, "C_GetInterface");
    CK_INTERFACE_PTR iface = NULL;
    HF_POOL_MEMBER_STATUS st[8];
    CK_ULONG n = 8;
    const HF_FUNCTION_LIST *hf;

    if (get == NULL || get((CK_UTF8CHAR_PTR)HF_INTERFACE_NAME, NULL, &iface, 0) != CKR_OK)
        return false;
    hf = iface->pFunctionList;
    if (hf->HF_GetPoolStatus(st, &n) != CKR_OK) return false;
    for (CK_ULONG i = 0; i < n; i++)
        if (strcmp(st[i].pool, "cl") == 0 && strcmp(st[i].member, "b") == 0) {
            *out = st[i];
            return true;
        }
    return false;
}

static void test_wrapping_and_unwrapping_fail_over_when_a_member_dies(void)
{
    CK_MECHANISM kwp = {CKM_AES_KEY_WRAP_PAD, NULL, 0};
    HF_POOL_MEMBER_STATUS b;
    unsigned char want[48], blob[48];
    FILE *fp;

    if (!have_shim) return;
    CU_ASSERT_EQUAL_FATAL(openssl_kw(CKM_AES_KEY_WRAP_PAD, true, tbytes, 32, want), 40);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp = fopen(dead, "w"));
    fclose(fp);
    sleep_ms(250); /* the shim looks every 100 ms */
    /* Calls alternate between the members: the first to land on b fails there and is run again
     * on a; b is then out of service. Every call answers as if nothing happened. */
    for (int r = 0; r < 4; r++) {
        CK_OBJECT_HANDLE h;
        CK_ULONG len = sizeof(blob);
        CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &kwp, pool_h, target, blob, &len), CKR_OK);
        CU_ASSERT(len == 40 && memcmp(blob, want, 40) == 0);
        CU_ASSERT_EQUAL(unwrap_aes(&kwp, pool_h, want, 40, &h), CKR_OK);
        CU_ASSERT(key_holds(h, tbytes));
    }
    CU_ASSERT_FATAL(member_b_status(&b));
    CU_ASSERT_FALSE(b.healthy);
    CU_ASSERT(b.failovers > 0);
    unlink(dead);
}

/* RSA-OAEP unwrap with an RSA pool key: the RSA family's decryption in the member, under
 * C_UnwrapKey's checks. Under valgrind SoftHSMv2 takes most of a minute for the key pair, and
 * test-source-pool.c runs the member's OAEP decryption there already. */
static void test_an_rsa_pool_key_unwraps_an_aes_key_openssl_put_under_its_public_key(void)
{
    struct hf_key_spec spec = {.name = "pw-rsa",
                               .alg = HF_ALG_RSA,
                               .bits = 2048,
                               .usage = HF_USAGE_UNWRAP | HF_USAGE_DECRYPT,
                               .source = "pool:p1"};
    struct hf_key k = {0};
    struct hf_key_version v = {0};
    CK_RSA_PKCS_OAEP_PARAMS oaep = {CKM_SHA256, CKG_MGF1_SHA256, CKZ_DATA_SPECIFIED, NULL, 0};
    CK_MECHANISM m = {CKM_RSA_PKCS_OAEP, &oaep, sizeof(oaep)};
    const unsigned char *p;
    unsigned char blob[256];
    size_t blen = sizeof(blob);
    EVP_PKEY *pub = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    CK_OBJECT_HANDLE priv, h;

    if (hf_test_under_valgrind()) return;
    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &spec, &who, &k, &v), CKR_OK);
    p = v.public_der;
    CU_ASSERT_PTR_NOT_NULL_FATAL(pub = d2i_PUBKEY(NULL, &p, (long)v.public_der_len));
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx = EVP_PKEY_CTX_new(pub, NULL));
    CU_ASSERT_FATAL(EVP_PKEY_encrypt_init(ctx) > 0 &&
                    EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) > 0 &&
                    EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_sha256()) > 0 &&
                    EVP_PKEY_encrypt(ctx, blob, &blen, tbytes, sizeof(tbytes)) > 0);
    priv = hf_test_find_by_label(p11, sess, CKO_PRIVATE_KEY, "pw-rsa");
    CU_ASSERT_NOT_EQUAL_FATAL(priv, CK_INVALID_HANDLE);
    CU_ASSERT_EQUAL(unwrap_aes(&m, priv, blob, (CK_ULONG)blen, &h), CKR_OK);
    CU_ASSERT(key_holds(h, tbytes));
    blob[100] ^= 1;
    CU_ASSERT_EQUAL(unwrap_aes(&m, priv, blob, (CK_ULONG)blen, &h), CKR_WRAPPED_KEY_INVALID);
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(pub);
    hf_key_clear(&k);
    hf_key_version_clear(&v);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"a pool key wraps a key as OpenSSL and its local twin do",
         test_a_pool_key_wraps_a_key_as_openssl_and_its_local_twin_do},
        {"a pool key unwraps OpenSSL's blobs into the key they hold",
         test_a_pool_key_unwraps_openssl_blobs_into_the_key_they_hold},
        {"data of any length unwraps exactly, and a wrong member wrap is refused",
         test_data_of_any_length_unwraps_exactly_and_a_wrong_member_wrap_is_refused},
        {"a tampered blob or a key without wrap usage answers as the local twin",
         test_a_tampered_blob_or_a_key_without_wrap_usage_answers_as_the_local_twin},
        {"wrapping and unwrapping fail over when a member dies",
         test_wrapping_and_unwrapping_fail_over_when_a_member_dies},
        {"an RSA pool key unwraps an AES key OpenSSL put under its public key",
         test_an_rsa_pool_key_unwraps_an_aes_key_openssl_put_under_its_public_key},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"module-pool-wrap", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
