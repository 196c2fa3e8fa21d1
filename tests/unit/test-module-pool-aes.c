/* AES-ECB, -CBC, -CBC-PAD, -CTR and -CMAC with a key kept in an HSM pool (issue 14), through the
 * built holdfast-pkcs11.so: the member does the work, and the results, answers and audit records
 * are a local key's.
 *
 * A pool key's bytes cannot be read, so the suite gives it known ones: the key is made in a
 * plain pool of two SoftHSMv2 tokens (hf_core_key_create, "pool:p1"), then its object in the
 * member is replaced by one with the same template (hf_pool_key_template) and a value the test
 * chose. Every result is then compared with OpenSSL's (EVP) under those bytes: the only proof
 * that the member ran the mechanism with the caller's parameters (IV, counter block and bits)
 * rather than some other one that round-trips. A local key imported with the same bytes through
 * the module is the twin whose answers and audit records the pool key's must equal. */
#include "hf-build.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>

#include "harness-pool.h"
#include "harness.h"
#include "module-loader.h"
#include "pkcs11/core/core.h"

#define TOKEN_A "hf-mpa-a"
#define TOKEN_B "hf-mpa-b"
#define PIN_ENV "HF_TEST_MPA_PIN"

static struct hf_test_env env;
static struct hf_core *core;
static const struct hf_actor who = {"cli", "uid:test"};
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE sess;
static CK_BBOOL yes = CK_TRUE, no = CK_FALSE;

/* The bytes planted in the pool key's member object, and given to its local twin. */
static unsigned char kbytes[32];
/* pk-aes: the pool key (encrypt, decrypt, sign, verify); lk-aes: its local twin. pk-nosign and
 * lk-nosign: the default AES usage (no sign). */
static CK_OBJECT_HANDLE pool_h, local_h, pool_nosign, local_nosign;

static const unsigned char iv16[16] = {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
                                       0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf};
/* A counter block whose low 32 bits are near their top, so the counter carries between bytes. */
static const unsigned char cb16[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 0xff, 0xfe};
static const unsigned char msg[64] =
    "sixty-four bytes of plaintext for every block mode of the suite";

/* ---- set-up ---------------------------------------------------------------------------------- */

/* kbytes planted in the pool key's object, on the member that holds it. */
static CK_RV plant(const char *label)
{
    static const char *const tokens[2] = {TOKEN_A, TOKEN_B};
    int planted = 0;
    CK_RV rv =
        hf_test_pool_plant(env.cfg.hsm_module, tokens, 2, label, false, kbytes, 32, &planted);

    return rv == CKR_OK && planted != 1 ? CKR_GENERAL_ERROR : rv;
}

static CK_RV pool_key(const char *name, unsigned long usage)
{
    struct hf_key_spec spec = {
        .name = name, .alg = HF_ALG_AES, .bits = 256, .usage = usage, .source = "pool:p1"};
    struct hf_key k = {0};
    struct hf_key_version v = {0};
    CK_RV rv = hf_core_key_create(core, &spec, &who, &k, &v);

    if (rv == CKR_OK && usage != 0) rv = plant(v.uuid);
    hf_key_clear(&k);
    hf_key_version_clear(&v);
    return rv;
}

static CK_RV local_key(const char *label, bool sign, CK_OBJECT_HANDLE *h)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_ATTRIBUTE t[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_VALUE, kbytes, sizeof(kbytes)},
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, &yes, 1},
        {CKA_ENCRYPT, &yes, 1},
        {CKA_DECRYPT, &yes, 1},
        {CKA_SIGN, sign ? &yes : &no, 1},
        {CKA_VERIFY, sign ? &yes : &no, 1},
    };

    return p11->C_CreateObject(sess, t, sizeof(t) / sizeof(t[0]), h);
}

static int suite_init(void)
{
    const unsigned long all = HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT | HF_USAGE_SIGN | HF_USAGE_VERIFY;
    CK_RV rv;

    for (size_t i = 0; i < sizeof(kbytes); i++)
        kbytes[i] = (unsigned char)(i * 29 + 7);
    rv = hf_test_pool_suite_setup(&env, &core, &who, TOKEN_A, TOKEN_B, PIN_ENV, 2);
    if (rv == CKR_OK) rv = pool_key("pk-aes", all);
    if (rv == CKR_OK) rv = pool_key("pk-nosign", 0);
    if (rv == CKR_OK && hf_test_module_load(&mod) != 0) rv = CKR_GENERAL_ERROR;
    if (rv == CKR_OK) p11 = mod.p11;
    if (rv == CKR_OK) rv = hf_test_module_start(p11, &sess);
    if (rv == CKR_OK) rv = local_key("lk-aes", true, &local_h);
    if (rv == CKR_OK) rv = local_key("lk-nosign", false, &local_nosign);
    if (rv == CKR_OK) {
        pool_h = hf_test_find_by_label(p11, sess, CKO_SECRET_KEY, "pk-aes");
        pool_nosign = hf_test_find_by_label(p11, sess, CKO_SECRET_KEY, "pk-nosign");
        if (pool_h == CK_INVALID_HANDLE || pool_nosign == CK_INVALID_HANDLE) rv = CKR_GENERAL_ERROR;
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
    hf_test_env_teardown(&env);
    return 0;
}

/* ---- helpers --------------------------------------------------------------------------------- */

/* OpenSSL's answer under kbytes: cipher name (AES-256-ECB, ...), padding, one shot. */
static int openssl_cipher(const char *name, bool enc, bool pad, const unsigned char *iv,
                          const unsigned char *in, int inlen, unsigned char *out)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, name, NULL);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int len = 0, flen = 0, ok;

    ok = c != NULL && ctx != NULL && EVP_CipherInit_ex2(ctx, c, kbytes, iv, enc, NULL) &&
         EVP_CIPHER_CTX_set_padding(ctx, pad) && EVP_CipherUpdate(ctx, out, &len, in, inlen) &&
         EVP_CipherFinal_ex(ctx, out + len, &flen);
    EVP_CIPHER_CTX_free(ctx);
    EVP_CIPHER_free(c);
    return ok ? len + flen : -1;
}

/* AES-256-CMAC of in under kbytes (16 bytes into out). */
static bool openssl_cmac(const unsigned char *in, size_t inlen, unsigned char out[16])
{
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "CMAC", NULL);
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, "AES-256-CBC", 0), OSSL_PARAM_END};
    size_t len = 0;
    bool ok = ctx != NULL && EVP_MAC_init(ctx, kbytes, sizeof(kbytes), params) &&
              EVP_MAC_update(ctx, in, inlen) && EVP_MAC_final(ctx, out, &len, 16) && len == 16;

    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    return ok;
}

/* Single-part (split 0) or multi-part: two Updates, the first of split bytes, then Final. An
 * Update's output is collected into out as well (the module gives none before Final). */
static CK_RV run_crypt(CK_MECHANISM *m, CK_OBJECT_HANDLE key, bool enc, const unsigned char *in,
                       CK_ULONG inlen, CK_ULONG split, unsigned char *out, CK_ULONG *outlen)
{
    CK_RV rv = enc ? p11->C_EncryptInit(sess, m, key) : p11->C_DecryptInit(sess, m, key);
    CK_ULONG cap = *outlen, done = 0, n;

    if (rv != CKR_OK) return rv;
    if (split == 0)
        return enc ? p11->C_Encrypt(sess, (CK_BYTE_PTR)in, inlen, out, outlen)
                   : p11->C_Decrypt(sess, (CK_BYTE_PTR)in, inlen, out, outlen);
    for (int part = 0; part < 2; part++) {
        const unsigned char *p = part == 0 ? in : in + split;
        CK_ULONG len = part == 0 ? split : inlen - split;
        n = cap - done;
        rv = enc ? p11->C_EncryptUpdate(sess, (CK_BYTE_PTR)p, len, out + done, &n)
                 : p11->C_DecryptUpdate(sess, (CK_BYTE_PTR)p, len, out + done, &n);
        if (rv != CKR_OK) return rv;
        done += n;
    }
    n = cap - done;
    rv =
        enc ? p11->C_EncryptFinal(sess, out + done, &n) : p11->C_DecryptFinal(sess, out + done, &n);
    *outlen = done + n;
    return rv;
}

/* Sign (split as crypt's) into out. */
static CK_RV mac_sign(CK_MECHANISM *m, CK_OBJECT_HANDLE key, const unsigned char *in,
                      CK_ULONG inlen, CK_ULONG split, unsigned char *out, CK_ULONG *outlen)
{
    CK_RV rv = p11->C_SignInit(sess, m, key);

    if (rv != CKR_OK) return rv;
    if (split == 0) return p11->C_Sign(sess, (CK_BYTE_PTR)in, inlen, out, outlen);
    if ((rv = p11->C_SignUpdate(sess, (CK_BYTE_PTR)in, split)) != CKR_OK) return rv;
    if ((rv = p11->C_SignUpdate(sess, (CK_BYTE_PTR)in + split, inlen - split)) != CKR_OK) return rv;
    return p11->C_SignFinal(sess, out, outlen);
}

static CK_RV mac_verify(CK_MECHANISM *m, CK_OBJECT_HANDLE key, const unsigned char *in,
                        CK_ULONG inlen, CK_ULONG split, const unsigned char *sig, CK_ULONG siglen)
{
    CK_RV rv = p11->C_VerifyInit(sess, m, key);

    if (rv != CKR_OK) return rv;
    if (split == 0) return p11->C_Verify(sess, (CK_BYTE_PTR)in, inlen, (CK_BYTE_PTR)sig, siglen);
    if ((rv = p11->C_VerifyUpdate(sess, (CK_BYTE_PTR)in, split)) != CKR_OK) return rv;
    if ((rv = p11->C_VerifyUpdate(sess, (CK_BYTE_PTR)in + split, inlen - split)) != CKR_OK)
        return rv;
    return p11->C_VerifyFinal(sess, (CK_BYTE_PTR)sig, siglen);
}

/* Audit records of key_name for op with mechanism mech and result rv. */
static int audit_count(const char *key_name, const char *op, const char *mech, CK_RV rv)
{
    char want_mech[80];

    snprintf(want_mech, sizeof(want_mech), "\"%s\"", mech);
    return hf_test_audit_count(env.cfg.audit_path, key_name, op, want_mech, rv);
}

/* The pool key and its twin have the same records (n > 0 of them) for op, mech and rv. */
static void audit_same(const char *op, const char *mech, CK_RV rv)
{
    int pool = audit_count("pk-aes", op, mech, rv), local = audit_count("lk-aes", op, mech, rv);

    CU_ASSERT(pool > 0);
    CU_ASSERT_EQUAL(pool, local);
}

/* ---- cases ----------------------------------------------------------------------------------- */

static void test_ecb_cbc_cbc_pad_and_ctr_on_a_pool_key_equal_openssl_single_and_multi_part(void)
{
    CK_AES_CTR_PARAMS ctr = {32, {0}};
    CK_MECHANISM mechs[] = {{CKM_AES_ECB, NULL, 0},
                            {CKM_AES_CBC, (CK_VOID_PTR)iv16, sizeof(iv16)},
                            {CKM_AES_CBC_PAD, (CK_VOID_PTR)iv16, sizeof(iv16)},
                            {CKM_AES_CTR, &ctr, sizeof(ctr)}};
    static const char *const names[] = {"AES-256-ECB", "AES-256-CBC", "AES-256-CBC", "AES-256-CTR"};
    static const char *const audit_names[] = {"CKM_AES_ECB", "CKM_AES_CBC", "CKM_AES_CBC_PAD",
                                              "CKM_AES_CTR"};
    /* Whole blocks for ECB and CBC; CBC-PAD and CTR take any length. */
    static const CK_ULONG lens[] = {64, 48, 37, 50};

    memcpy(ctr.cb, cb16, sizeof(cb16));
    for (size_t i = 0; i < sizeof(mechs) / sizeof(mechs[0]); i++) {
        unsigned char want[80], out[80];
        bool pad = mechs[i].mechanism == CKM_AES_CBC_PAD;
        const unsigned char *iv = mechs[i].mechanism == CKM_AES_CTR ? cb16 : iv16;
        int wlen = openssl_cipher(names[i], true, pad, i == 0 ? NULL : iv, msg, (int)lens[i], want);
        CK_ULONG len = sizeof(out), size = 0;

        CU_ASSERT_FATAL(wlen > 0);
        /* The size query answered in the module, then the work in the member (and in process for
         * the twin, whose audit records are compared below). */
        for (int k = 0; k < 2; k++) {
            CU_ASSERT_EQUAL_FATAL(p11->C_EncryptInit(sess, &mechs[i], k ? local_h : pool_h),
                                  CKR_OK);
            CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)msg, lens[i], NULL, &size), CKR_OK);
            CU_ASSERT_EQUAL(size, (CK_ULONG)wlen);
            len = sizeof(out);
            CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)msg, lens[i], out, &len), CKR_OK);
            CU_ASSERT(len == (CK_ULONG)wlen && memcmp(out, want, len) == 0);
        }
        /* Single-part (split 0) and multi-part both ways. */
        for (CK_ULONG split = 0; split <= 20; split += 20) {
            len = sizeof(out);
            CU_ASSERT_EQUAL(run_crypt(&mechs[i], pool_h, true, msg, lens[i], split, out, &len),
                            CKR_OK);
            CU_ASSERT(len == (CK_ULONG)wlen && memcmp(out, want, len) == 0);
            len = sizeof(out);
            CU_ASSERT_EQUAL(
                run_crypt(&mechs[i], pool_h, false, want, (CK_ULONG)wlen, split, out, &len),
                CKR_OK);
            CU_ASSERT(len == lens[i] && memcmp(out, msg, len) == 0);
            /* Its twin, for the audit records below. */
            len = sizeof(out);
            CU_ASSERT_EQUAL(run_crypt(&mechs[i], local_h, true, msg, lens[i], split, out, &len),
                            CKR_OK);
            CU_ASSERT(len == (CK_ULONG)wlen && memcmp(out, want, len) == 0);
            len = sizeof(out);
            CU_ASSERT_EQUAL(
                run_crypt(&mechs[i], local_h, false, want, (CK_ULONG)wlen, split, out, &len),
                CKR_OK);
        }
        audit_same("encrypt", audit_names[i], CKR_OK);
        audit_same("decrypt", audit_names[i], CKR_OK);
    }
}

static void test_cmac_and_cmac_general_on_a_pool_key_equal_openssl_and_verify_as_locally(void)
{
    CK_ULONG twelve = 12;
    CK_MECHANISM cmac = {CKM_AES_CMAC, NULL, 0};
    CK_MECHANISM general = {CKM_AES_CMAC_GENERAL, &twelve, sizeof(twelve)};
    unsigned char want[16], empty_want[16], sig[16];
    CK_ULONG len;

    CU_ASSERT_FATAL(openssl_cmac(msg, 40, want));
    CU_ASSERT_FATAL(openssl_cmac(msg, 0, empty_want));
    for (CK_ULONG split = 0; split <= 13; split += 13) {
        len = sizeof(sig);
        CU_ASSERT_EQUAL(mac_sign(&cmac, pool_h, msg, 40, split, sig, &len), CKR_OK);
        CU_ASSERT(len == 16 && memcmp(sig, want, 16) == 0);
        CU_ASSERT_EQUAL(mac_verify(&cmac, pool_h, msg, 40, split, want, 16), CKR_OK);
        len = sizeof(sig);
        CU_ASSERT_EQUAL(mac_sign(&general, pool_h, msg, 40, split, sig, &len), CKR_OK);
        CU_ASSERT(len == 12 && memcmp(sig, want, 12) == 0);
        CU_ASSERT_EQUAL(mac_verify(&general, pool_h, msg, 40, split, want, 12), CKR_OK);
        /* The twin, for the audit records below. */
        len = sizeof(sig);
        CU_ASSERT_EQUAL(mac_sign(&cmac, local_h, msg, 40, split, sig, &len), CKR_OK);
        CU_ASSERT_EQUAL(mac_verify(&cmac, local_h, msg, 40, split, want, 16), CKR_OK);
        len = sizeof(sig);
        CU_ASSERT_EQUAL(mac_sign(&general, local_h, msg, 40, split, sig, &len), CKR_OK);
        CU_ASSERT_EQUAL(mac_verify(&general, local_h, msg, 40, split, want, 12), CKR_OK);
    }
    /* The empty message (SP 800-38B's padded last block, subkey K2). */
    for (int i = 0; i < 2; i++) {
        len = sizeof(sig);
        CU_ASSERT_EQUAL(mac_sign(&cmac, i == 0 ? pool_h : local_h, msg, 0, 0, sig, &len), CKR_OK);
        CU_ASSERT(len == 16 && memcmp(sig, empty_want, 16) == 0);
    }

    /* A wrong MAC, or one of the wrong length: the local key's answers, recorded alike. */
    memcpy(sig, want, 16);
    sig[5] ^= 1;
    for (int i = 0; i < 2; i++) {
        CK_OBJECT_HANDLE h = i == 0 ? pool_h : local_h;
        CU_ASSERT_EQUAL(mac_verify(&cmac, h, msg, 40, 0, sig, 16), CKR_SIGNATURE_INVALID);
        CU_ASSERT_EQUAL(mac_verify(&cmac, h, msg, 40, 0, want, 15), CKR_SIGNATURE_LEN_RANGE);
    }
    audit_same("sign", "CKM_AES_CMAC", CKR_OK);
    audit_same("verify", "CKM_AES_CMAC", CKR_OK);
    audit_same("sign", "CKM_AES_CMAC_GENERAL", CKR_OK);
    audit_same("verify", "CKM_AES_CMAC_GENERAL", CKR_OK);
    audit_same("verify", "CKM_AES_CMAC", CKR_SIGNATURE_INVALID);
    audit_same("verify", "CKM_AES_CMAC", CKR_SIGNATURE_LEN_RANGE);
}

/* One operation's answer: its result and its output's length. */
struct answer {
    CK_RV rv;
    CK_ULONG len;
};

/* The same refusals, sizes and usage checks on key and on its twin, element by element. */
static void answers_of(CK_OBJECT_HANDLE key, CK_OBJECT_HANDLE nosign, struct answer a[9])
{
    CK_AES_CTR_PARAMS ctr8 = {8, {0}};
    CK_MECHANISM ecb = {CKM_AES_ECB, NULL, 0};
    CK_MECHANISM cbc_pad = {CKM_AES_CBC_PAD, (CK_VOID_PTR)iv16, sizeof(iv16)};
    CK_MECHANISM zero_iv_pad = {CKM_AES_CBC_PAD, (CK_VOID_PTR) "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
                                16};
    CK_MECHANISM ctr = {CKM_AES_CTR, &ctr8, sizeof(ctr8)};
    CK_MECHANISM cmac = {CKM_AES_CMAC, NULL, 0};
    CK_MECHANISM kw = {CKM_AES_KEY_WRAP_PAD, NULL, 0};
    unsigned char ct[80], out[80], block[16] = {0};
    CK_ULONG len = sizeof(out);
    int i = 0;

    memset(ctr8.cb, 0x55, sizeof(ctr8.cb));
    ctr8.cb[15] = 0xff; /* one more block carries out of the 8 counter bits */
    /* Not whole blocks, either way. */
    a[i].rv = run_crypt(&ecb, key, true, msg, 15, 0, out, &len), a[i++].len = 0;
    len = sizeof(out);
    a[i].rv = run_crypt(&ecb, key, false, msg, 17, 0, out, &len), a[i++].len = 0;
    /* Empty input: nothing to compute. */
    len = sizeof(out);
    a[i].rv = run_crypt(&ecb, key, true, msg, 0, 0, out, &len), a[i++].len = len;
    /* Padding that is wrong: a block whose plaintext ends in a zero byte, under a zero IV. */
    memcpy(block, msg, 15);
    block[15] = 0;
    len = sizeof(ct);
    CU_ASSERT_EQUAL(run_crypt(&ecb, key, true, block, 16, 0, ct, &len), CKR_OK);
    len = sizeof(out);
    a[i].rv = run_crypt(&zero_iv_pad, key, false, ct, 16, 0, out, &len), a[i++].len = 0;
    /* CBC-PAD: a buffer short of the ciphertext gets the plaintext's exact size, then the text. */
    len = sizeof(ct);
    CU_ASSERT_EQUAL(run_crypt(&cbc_pad, key, true, msg, 37, 0, ct, &len), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_DecryptInit(sess, &cbc_pad, key), CKR_OK);
    len = 30;
    a[i].rv = p11->C_Decrypt(sess, ct, 48, out, &len), a[i++].len = len;
    len = 37;
    a[i].rv = p11->C_Decrypt(sess, ct, 48, out, &len), a[i++].len = len;
    CU_ASSERT(memcmp(out, msg, 37) == 0);
    /* CTR: a second block would reuse a counter value. */
    len = sizeof(out);
    a[i].rv = run_crypt(&ctr, key, true, msg, 32, 0, out, &len), a[i++].len = 0;
    /* CMAC with a key whose usage has no sign; key wrap (test-module-pool-wrap.c has more). */
    a[i].rv = p11->C_SignInit(sess, &cmac, nosign), a[i++].len = 0;
    a[i].rv = p11->C_EncryptInit(sess, &kw, key), a[i++].len = 0;
    len = sizeof(out);
    if (a[i - 1].rv == CKR_OK) CU_ASSERT_EQUAL(p11->C_Encrypt(sess, block, 16, out, &len), CKR_OK);
}

static void test_a_pool_key_refuses_and_sizes_as_its_local_twin(void)
{
    static const struct answer want_local[9] = {
        {CKR_DATA_LEN_RANGE, 0},         {CKR_ENCRYPTED_DATA_LEN_RANGE, 0},   {CKR_OK, 0},
        {CKR_ENCRYPTED_DATA_INVALID, 0}, {CKR_BUFFER_TOO_SMALL, 37},          {CKR_OK, 37},
        {CKR_DATA_LEN_RANGE, 0},         {CKR_KEY_FUNCTION_NOT_PERMITTED, 0}, {CKR_OK, 0}};
    struct answer pool[9] = {{0}}, local[9] = {{0}};

    answers_of(pool_h, pool_nosign, pool);
    answers_of(local_h, local_nosign, local);
    for (int i = 0; i < 9; i++) {
        CU_ASSERT_EQUAL(local[i].rv, want_local[i].rv);
        CU_ASSERT_EQUAL(local[i].len, want_local[i].len);
        CU_ASSERT_EQUAL(pool[i].rv, want_local[i].rv);
        CU_ASSERT_EQUAL(pool[i].len, want_local[i].len);
        if (pool[i].rv != want_local[i].rv) fprintf(stderr, "answer %d: 0x%lx\n", i, pool[i].rv);
    }
    audit_same("decrypt", "CKM_AES_CBC_PAD", CKR_ENCRYPTED_DATA_INVALID);
    audit_same("encrypt", "CKM_AES_CTR", CKR_DATA_LEN_RANGE);
    audit_same("encrypt", "CKM_AES_ECB", CKR_DATA_LEN_RANGE);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"ECB, CBC, CBC-PAD and CTR on a pool key equal OpenSSL's, single- and multi-part",
         test_ecb_cbc_cbc_pad_and_ctr_on_a_pool_key_equal_openssl_single_and_multi_part},
        {"CMAC and CMAC-general on a pool key equal OpenSSL's and verify as locally",
         test_cmac_and_cmac_general_on_a_pool_key_equal_openssl_and_verify_as_locally},
        {"a pool key refuses and sizes as its local twin",
         test_a_pool_key_refuses_and_sizes_as_its_local_twin},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"module-pool-aes", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
