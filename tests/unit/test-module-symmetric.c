/* The module's general-purpose symmetric mechanisms through the built holdfast-pkcs11.so:
 * AES-ECB/CBC/CBC-PAD/CTR against NIST SP 800-38A F.1-F.5 and OpenSSL computing the same in the
 * test, AES-CMAC against RFC 4493, on token and session keys imported with C_CreateObject; the
 * two-call convention and section 5.2's operation state; C_DigestKey; the audit record of each
 * operation. */
#include "hf-build.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "harness.h"
#include "module-loader.h"
#include "pkcs11/module/holdfast.h"

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE sess;
static CK_BBOOL yes = CK_TRUE, no = CK_FALSE;

/* SP 800-38A appendix F: the AES-128 key, the four plaintext blocks, and the IV / initial
 * counter block. */
static const unsigned char k128[16] = {0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6,
                                       0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c};
static const unsigned char pt64[64] = {
    0x6b, 0xc1, 0xbe, 0xe2, 0x2e, 0x40, 0x9f, 0x96, 0xe9, 0x3d, 0x7e, 0x11, 0x73, 0x93, 0x17, 0x2a,
    0xae, 0x2d, 0x8a, 0x57, 0x1e, 0x03, 0xac, 0x9c, 0x9e, 0xb7, 0x6f, 0xac, 0x45, 0xaf, 0x8e, 0x51,
    0x30, 0xc8, 0x1c, 0x46, 0xa3, 0x5c, 0xe4, 0x11, 0xe5, 0xfb, 0xc1, 0x19, 0x1a, 0x0a, 0x52, 0xef,
    0xf6, 0x9f, 0x24, 0x45, 0xdf, 0x4f, 0x9b, 0x17, 0xad, 0x2b, 0x41, 0x7b, 0xe6, 0x6c, 0x37, 0x10};
static unsigned char iv_f2[16] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
                                  0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f};
static const unsigned char ctr_f5[16] = {0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7,
                                         0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff};

static CK_OBJECT_HANDLE tok128;  /* token AES-128 with the SP 800-38A key */
static CK_OBJECT_HANDLE sess256; /* session AES-256, random value known to the test */
static unsigned char k256[32];

static CK_RV aes_import(const char *label, bool token, const unsigned char *value, CK_ULONG len,
                        CK_OBJECT_HANDLE *h)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_VALUE, (void *)value, len},
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, token ? &yes : &no, 1},
        {CKA_ENCRYPT, &yes, 1},
        {CKA_DECRYPT, &yes, 1},
        {CKA_SIGN, &yes, 1},
        {CKA_VERIFY, &yes, 1},
    };

    return p11->C_CreateObject(sess, tmpl, sizeof(tmpl) / sizeof(tmpl[0]), h);
}

static CK_RV encrypt(CK_MECHANISM *m, CK_OBJECT_HANDLE key, const unsigned char *in, CK_ULONG inlen,
                     unsigned char *out, CK_ULONG *outlen)
{
    CK_RV rv = p11->C_EncryptInit(sess, m, key);

    return rv != CKR_OK ? rv : p11->C_Encrypt(sess, (CK_BYTE_PTR)in, inlen, out, outlen);
}

static CK_RV decrypt(CK_MECHANISM *m, CK_OBJECT_HANDLE key, const unsigned char *in, CK_ULONG inlen,
                     unsigned char *out, CK_ULONG *outlen)
{
    CK_RV rv = p11->C_DecryptInit(sess, m, key);

    return rv != CKR_OK ? rv : p11->C_Decrypt(sess, (CK_BYTE_PTR)in, inlen, out, outlen);
}

static CK_RV sign(CK_MECHANISM *m, CK_OBJECT_HANDLE key, const unsigned char *in, CK_ULONG inlen,
                  unsigned char *out, CK_ULONG *outlen)
{
    CK_RV rv = p11->C_SignInit(sess, m, key);

    return rv != CKR_OK ? rv : p11->C_Sign(sess, (CK_BYTE_PTR)in, inlen, out, outlen);
}

static CK_RV verify(CK_MECHANISM *m, CK_OBJECT_HANDLE key, const unsigned char *in, CK_ULONG inlen,
                    const unsigned char *sig, CK_ULONG siglen)
{
    CK_RV rv = p11->C_VerifyInit(sess, m, key);

    return rv != CKR_OK ? rv
                        : p11->C_Verify(sess, (CK_BYTE_PTR)in, inlen, (CK_BYTE_PTR)sig, siglen);
}

/* Whether one line of the audit log holds all of the given fragments (NULL-terminated). */
static bool audit_line_has(const char *first, ...)
{
    char line[4096];
    FILE *f = fopen(env.cfg.audit_path, "r");
    bool found = false;

    if (f == NULL) return false;
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        va_list ap;
        found = true;
        va_start(ap, first);
        for (const char *frag = first; frag != NULL && found; frag = va_arg(ap, const char *))
            found = strstr(line, frag) != NULL;
        va_end(ap);
    }
    fclose(f);
    return found;
}

/* Whether the audit log records op with mechanism mech and result rv. */
static bool audit_has(const char *op, const char *mech, CK_RV rv)
{
    char want_op[64], want_mech[80], want_rv[40];

    snprintf(want_op, sizeof(want_op), "\"op\":\"%s\"", op);
    snprintf(want_mech, sizeof(want_mech), "\"%s\"", mech);
    snprintf(want_rv, sizeof(want_rv), "\"result\":\"0x%lx\"", (unsigned long)rv);
    return audit_line_has(want_op, want_mech, want_rv, (const char *)NULL);
}

/* OpenSSL's own answer: cipher name, padding, one shot. Returns the output length or -1. */
static int openssl_cipher(const char *name, bool enc, bool pad, const unsigned char *key,
                          const unsigned char *iv, const unsigned char *in, int inlen,
                          unsigned char *out)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, name, NULL);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int len = 0, flen = 0, ok;

    ok = c != NULL && ctx != NULL && EVP_CipherInit_ex2(ctx, c, key, iv, enc, NULL) &&
         EVP_CIPHER_CTX_set_padding(ctx, pad) && EVP_CipherUpdate(ctx, out, &len, in, inlen) &&
         EVP_CipherFinal_ex(ctx, out + len, &flen);
    EVP_CIPHER_CTX_free(ctx);
    EVP_CIPHER_free(c);
    return ok ? len + flen : -1;
}

static int suite_init(void)
{
    if (hf_test_env_setup(&env, NULL) != 0 || hf_test_module_load(&mod) != 0) return -1;
    p11 = mod.p11;
    if (hf_test_module_start(p11, &sess) != CKR_OK) return -1;
    for (size_t i = 0; i < sizeof(k256); i++)
        k256[i] = (unsigned char)(i * 37 + 11);
    if (aes_import("sym-tok128", true, k128, sizeof(k128), &tok128) != CKR_OK ||
        aes_import("sym-sess256", false, k256, sizeof(k256), &sess256) != CKR_OK) {
        fprintf(stderr, "key import failed\n");
        return -1;
    }
    return 0;
}

static int suite_clean(void)
{
    if (p11 != NULL) {
        p11->C_CloseSession(sess);
        p11->C_Finalize(NULL);
    }
    hf_test_module_unload(&mod);
    hf_test_env_teardown(&env);
    return 0;
}

/* ---- AES block modes ------------------------------------------------------------------------- */

/* Encrypts want's plaintext with mech on key, compares, and decrypts back. */
static void check_vector(CK_MECHANISM *m, CK_OBJECT_HANDLE key, const unsigned char *in,
                         CK_ULONG inlen, const unsigned char *want, CK_ULONG wantlen)
{
    unsigned char out[256], back[256];
    CK_ULONG len = sizeof(out), blen = sizeof(back);

    CU_ASSERT_EQUAL_FATAL(encrypt(m, key, in, inlen, out, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, wantlen);
    CU_ASSERT_EQUAL(memcmp(out, want, wantlen), 0);
    CU_ASSERT_EQUAL_FATAL(decrypt(m, key, want, wantlen, back, &blen), CKR_OK);
    CU_ASSERT_EQUAL(blen, inlen);
    CU_ASSERT_EQUAL(memcmp(back, in, inlen), 0);
}

static void test_sp800_38a_vectors_for_ecb_cbc_and_ctr(void)
{
    /* F.1.1 ECB-AES128, F.2.1 CBC-AES128, F.5.1 CTR-AES128. */
    static const unsigned char ecb[64] = {
        0x3a, 0xd7, 0x7b, 0xb4, 0x0d, 0x7a, 0x36, 0x60, 0xa8, 0x9e, 0xca, 0xf3, 0x24,
        0x66, 0xef, 0x97, 0xf5, 0xd3, 0xd5, 0x85, 0x03, 0xb9, 0x69, 0x9d, 0xe7, 0x85,
        0x89, 0x5a, 0x96, 0xfd, 0xba, 0xaf, 0x43, 0xb1, 0xcd, 0x7f, 0x59, 0x8e, 0xce,
        0x23, 0x88, 0x1b, 0x00, 0xe3, 0xed, 0x03, 0x06, 0x88, 0x7b, 0x0c, 0x78, 0x5e,
        0x27, 0xe8, 0xad, 0x3f, 0x82, 0x23, 0x20, 0x71, 0x04, 0x72, 0x5d, 0xd4};
    static const unsigned char cbc[64] = {
        0x76, 0x49, 0xab, 0xac, 0x81, 0x19, 0xb2, 0x46, 0xce, 0xe9, 0x8e, 0x9b, 0x12,
        0xe9, 0x19, 0x7d, 0x50, 0x86, 0xcb, 0x9b, 0x50, 0x72, 0x19, 0xee, 0x95, 0xdb,
        0x11, 0x3a, 0x91, 0x76, 0x78, 0xb2, 0x73, 0xbe, 0xd6, 0xb8, 0xe3, 0xc1, 0x74,
        0x3b, 0x71, 0x16, 0xe6, 0x9e, 0x22, 0x22, 0x95, 0x16, 0x3f, 0xf1, 0xca, 0xa1,
        0x68, 0x1f, 0xac, 0x09, 0x12, 0x0e, 0xca, 0x30, 0x75, 0x86, 0xe1, 0xa7};
    static const unsigned char ctr[64] = {
        0x87, 0x4d, 0x61, 0x91, 0xb6, 0x20, 0xe3, 0x26, 0x1b, 0xef, 0x68, 0x64, 0x99,
        0x0d, 0xb6, 0xce, 0x98, 0x06, 0xf6, 0x6b, 0x79, 0x70, 0xfd, 0xff, 0x86, 0x17,
        0x18, 0x7b, 0xb9, 0xff, 0xfd, 0xff, 0x5a, 0xe4, 0xdf, 0x3e, 0xdb, 0xd5, 0xd3,
        0x5e, 0x5b, 0x4f, 0x09, 0x02, 0x0d, 0xb0, 0x3e, 0xab, 0x1e, 0x03, 0x1d, 0xda,
        0x2f, 0xbe, 0x03, 0xd1, 0x79, 0x21, 0x70, 0xa0, 0xf3, 0x00, 0x9c, 0xee};
    CK_AES_CTR_PARAMS cp = {128, {0}};
    CK_MECHANISM m_ecb = {CKM_AES_ECB, NULL, 0};
    CK_MECHANISM m_cbc = {CKM_AES_CBC, iv_f2, sizeof(iv_f2)};
    CK_MECHANISM m_ctr = {CKM_AES_CTR, &cp, sizeof(cp)};

    memcpy(cp.cb, ctr_f5, sizeof(cp.cb));
    check_vector(&m_ecb, tok128, pt64, 64, ecb, 64);
    check_vector(&m_cbc, tok128, pt64, 64, cbc, 64);
    check_vector(&m_ctr, tok128, pt64, 64, ctr, 64);
    /* CTR is a stream: a partial last block is its prefix of the keystream. */
    check_vector(&m_ctr, tok128, pt64, 37, ctr, 37);
    CU_ASSERT_TRUE(audit_has("encrypt", "CKM_AES_CTR", CKR_OK));
    CU_ASSERT_TRUE(audit_has("decrypt", "CKM_AES_ECB", CKR_OK));
}

/* Every mode on the session AES-256 key, against OpenSSL's output for the same input. */
static void test_modes_match_openssl_on_a_session_key(void)
{
    static const struct {
        CK_MECHANISM_TYPE type;
        const char *name;
        bool pad;
        CK_ULONG len;
    } cases[] = {
        {CKM_AES_ECB, "AES-256-ECB", false, 48},    {CKM_AES_CBC, "AES-256-CBC", false, 64},
        {CKM_AES_CBC_PAD, "AES-256-CBC", true, 0},  {CKM_AES_CBC_PAD, "AES-256-CBC", true, 1},
        {CKM_AES_CBC_PAD, "AES-256-CBC", true, 16}, {CKM_AES_CBC_PAD, "AES-256-CBC", true, 61},
        {CKM_AES_CTR, "AES-256-CTR", false, 50},
    };
    CK_AES_CTR_PARAMS cp = {128, {0}};
    unsigned char want[128], out[128], back[128];

    memcpy(cp.cb, iv_f2, 16);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CK_MECHANISM m = {cases[i].type, iv_f2, 16};
        const unsigned char *iv = cases[i].type == CKM_AES_ECB ? NULL : iv_f2;
        int n = openssl_cipher(cases[i].name, true, cases[i].pad, k256, iv, pt64, (int)cases[i].len,
                               want);
        CK_ULONG len = sizeof(out), blen = sizeof(back);

        if (cases[i].type == CKM_AES_ECB) m.pParameter = NULL, m.ulParameterLen = 0;
        if (cases[i].type == CKM_AES_CTR) m.pParameter = &cp, m.ulParameterLen = sizeof(cp);
        CU_ASSERT_FATAL(n >= 0);
        CU_ASSERT_EQUAL(encrypt(&m, sess256, pt64, cases[i].len, out, &len), CKR_OK);
        CU_ASSERT_EQUAL(len, (CK_ULONG)n);
        CU_ASSERT_EQUAL(memcmp(out, want, (size_t)n), 0);
        CU_ASSERT_EQUAL(decrypt(&m, sess256, want, (CK_ULONG)n, back, &blen), CKR_OK);
        CU_ASSERT_EQUAL(blen, cases[i].len);
        CU_ASSERT_EQUAL(memcmp(back, pt64, cases[i].len), 0);
    }
}

/* Parts of 1, 7 and the rest, through Update and Final, give the single-part answer. */
static void test_multipart_equals_single_part(void)
{
    CK_MECHANISM_TYPE types[] = {CKM_AES_ECB, CKM_AES_CBC, CKM_AES_CBC_PAD, CKM_AES_CTR};
    CK_AES_CTR_PARAMS cp = {64, {0}};
    unsigned char one[128], multi[128], back[128];

    memcpy(cp.cb, ctr_f5, 16);
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        CK_MECHANISM m = {types[i], iv_f2, 16};
        CK_ULONG inlen = types[i] == CKM_AES_CBC_PAD || types[i] == CKM_AES_CTR ? 45 : 48;
        CK_ULONG len = sizeof(one), total = 0, part, ctlen;

        if (types[i] == CKM_AES_ECB) m.pParameter = NULL, m.ulParameterLen = 0;
        if (types[i] == CKM_AES_CTR) m.pParameter = &cp, m.ulParameterLen = sizeof(cp);
        CU_ASSERT_EQUAL_FATAL(encrypt(&m, tok128, pt64, inlen, one, &len), CKR_OK);
        ctlen = len;
        CU_ASSERT_EQUAL_FATAL(p11->C_EncryptInit(sess, &m, tok128), CKR_OK);
        for (CK_ULONG off = 0, step = 1; off < inlen; off += step, step = step == 1 ? 7 : 64) {
            CK_ULONG n = off + step > inlen ? inlen - off : step;
            part = sizeof(multi) - total;
            CU_ASSERT_EQUAL(
                p11->C_EncryptUpdate(sess, (CK_BYTE_PTR)pt64 + off, n, multi + total, &part),
                CKR_OK);
            total += part;
        }
        part = sizeof(multi) - total;
        CU_ASSERT_EQUAL(p11->C_EncryptFinal(sess, multi + total, &part), CKR_OK);
        total += part;
        CU_ASSERT_EQUAL(total, ctlen);
        CU_ASSERT_EQUAL(memcmp(one, multi, ctlen), 0);
        /* And back, in two parts. */
        CU_ASSERT_EQUAL_FATAL(p11->C_DecryptInit(sess, &m, tok128), CKR_OK);
        part = sizeof(back);
        CU_ASSERT_EQUAL(p11->C_DecryptUpdate(sess, one, 5, back, &part), CKR_OK);
        total = part;
        part = sizeof(back) - total;
        CU_ASSERT_EQUAL(p11->C_DecryptUpdate(sess, one + 5, ctlen - 5, back + total, &part),
                        CKR_OK);
        total += part;
        part = sizeof(back) - total;
        CU_ASSERT_EQUAL(p11->C_DecryptFinal(sess, back + total, &part), CKR_OK);
        total += part;
        CU_ASSERT_EQUAL(total, inlen);
        CU_ASSERT_EQUAL(memcmp(back, pt64, inlen), 0);
    }
}

static void test_lengths_and_parameters_are_checked(void)
{
    CK_MECHANISM ecb = {CKM_AES_ECB, NULL, 0}, cbc = {CKM_AES_CBC, iv_f2, 16};
    CK_MECHANISM pad = {CKM_AES_CBC_PAD, iv_f2, 16};
    CK_AES_CTR_PARAMS cp = {8, {0}};
    CK_MECHANISM ctr = {CKM_AES_CTR, &cp, sizeof(cp)};
    unsigned char out[128];
    CK_ULONG len = sizeof(out);

    CU_ASSERT_EQUAL(encrypt(&ecb, tok128, pt64, 15, out, &len), CKR_DATA_LEN_RANGE);
    len = sizeof(out);
    CU_ASSERT_EQUAL(encrypt(&cbc, tok128, pt64, 17, out, &len), CKR_DATA_LEN_RANGE);
    len = sizeof(out);
    CU_ASSERT_EQUAL(decrypt(&cbc, tok128, pt64, 17, out, &len), CKR_ENCRYPTED_DATA_LEN_RANGE);
    len = sizeof(out);
    CU_ASSERT_EQUAL(decrypt(&pad, tok128, pt64, 0, out, &len), CKR_ENCRYPTED_DATA_LEN_RANGE);
    /* A block of zeros under raw CBC decrypts, under CBC-PAD, to a last byte of 0: no valid
     * padding. */
    static const unsigned char zeros[16];
    unsigned char ct[16];
    len = sizeof(ct);
    CU_ASSERT_EQUAL_FATAL(encrypt(&cbc, tok128, zeros, 16, ct, &len), CKR_OK);
    len = sizeof(out);
    CU_ASSERT_EQUAL(decrypt(&pad, tok128, ct, 16, out, &len), CKR_ENCRYPTED_DATA_INVALID);
    CU_ASSERT_TRUE(audit_has("decrypt", "CKM_AES_CBC_PAD", CKR_ENCRYPTED_DATA_INVALID));
    /* Parameters: IV of 16 bytes for CBC, none for ECB, counter bits 1..128 for CTR. */
    cbc.ulParameterLen = 12;
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &cbc, tok128), CKR_MECHANISM_PARAM_INVALID);
    cbc.pParameter = NULL, cbc.ulParameterLen = 16;
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &cbc, tok128), CKR_MECHANISM_PARAM_INVALID);
    ecb.pParameter = iv_f2, ecb.ulParameterLen = 16;
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &ecb, tok128), CKR_MECHANISM_PARAM_INVALID);
    cp.ulCounterBits = 0;
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &ctr, tok128), CKR_MECHANISM_PARAM_INVALID);
    cp.ulCounterBits = 129;
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &ctr, tok128), CKR_MECHANISM_PARAM_INVALID);
    ctr.ulParameterLen = 16;
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &ctr, tok128), CKR_MECHANISM_PARAM_INVALID);
    /* An 8-bit counter at 0xfe has two blocks left: a third would repeat counter 0x00 with
     * its nonce, so it is refused rather than carried into the nonce as OpenSSL would. */
    ctr.ulParameterLen = sizeof(cp);
    cp.ulCounterBits = 8;
    cp.cb[15] = 0xfe;
    len = sizeof(out);
    CU_ASSERT_EQUAL(encrypt(&ctr, tok128, pt64, 32, out, &len), CKR_OK);
    len = sizeof(out);
    CU_ASSERT_EQUAL(encrypt(&ctr, tok128, pt64, 33, out, &len), CKR_DATA_LEN_RANGE);
    /* 12 bits: the carry from the low byte into the next stays inside the counter. */
    cp.ulCounterBits = 12;
    len = sizeof(out);
    CU_ASSERT_EQUAL(encrypt(&ctr, tok128, pt64, 48, out, &len), CKR_OK);
}

/* Section 5.2: a size query and a short buffer keep the operation; the error ending it is
 * audited and leaves nothing active. CBC-PAD's exact size comes after the padding is read. */
static void test_two_call_convention_and_operation_state(void)
{
    CK_MECHANISM pad = {CKM_AES_CBC_PAD, iv_f2, 16};
    unsigned char ct[64], out[64];
    CK_ULONG len = 0, ctlen;

    CU_ASSERT_EQUAL_FATAL(p11->C_EncryptInit(sess, &pad, tok128), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)pt64, 20, NULL, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 32);
    len = 31;
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)pt64, 20, ct, &len), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(len, 32);
    len = sizeof(ct);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)pt64, 20, ct, &len), CKR_OK);
    ctlen = len;
    len = sizeof(ct);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)pt64, 20, ct, &len),
                    CKR_OPERATION_NOT_INITIALIZED);

    CU_ASSERT_EQUAL_FATAL(p11->C_DecryptInit(sess, &pad, tok128), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DecryptInit(sess, &pad, tok128), CKR_OPERATION_ACTIVE);
    len = 0;
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, ct, ctlen, NULL, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, ctlen); /* an upper bound, as PKCS#11 allows */
    len = 19;
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, ct, ctlen, out, &len), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(len, 20);
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, ct, ctlen, out, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 20);
    CU_ASSERT_EQUAL(memcmp(out, pt64, 20), 0);

    /* A length error ends the operation. */
    CU_ASSERT_EQUAL_FATAL(p11->C_DecryptInit(sess, &pad, tok128), CKR_OK);
    len = sizeof(out);
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, ct, 17, out, &len), CKR_ENCRYPTED_DATA_LEN_RANGE);
    len = sizeof(out);
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, ct, ctlen, out, &len), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_TRUE(audit_has("decrypt", "CKM_AES_CBC_PAD", CKR_ENCRYPTED_DATA_LEN_RANGE));
}

static void test_mechanism_info_and_key_types(void)
{
    static const CK_MECHANISM_TYPE crypt[] = {CKM_AES_ECB, CKM_AES_CBC, CKM_AES_CBC_PAD,
                                              CKM_AES_CTR};
    static const CK_MECHANISM_TYPE mac[] = {CKM_AES_CMAC, CKM_AES_CMAC_GENERAL};
    static const CK_BYTE p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
    CK_MECHANISM ec_gen = {CKM_EC_KEY_PAIR_GEN, NULL, 0}, cbc = {CKM_AES_CBC, iv_f2, 16};
    CK_MECHANISM cmac = {CKM_AES_CMAC, NULL, 0};
    CK_ATTRIBUTE pt[] = {{CKA_EC_PARAMS, (void *)p256, sizeof(p256)}, {CKA_LABEL, "sym-ec", 6}};
    CK_ATTRIBUTE vt[] = {{CKA_SIGN, &yes, 1}, {CKA_LABEL, "sym-ec", 6}};
    CK_OBJECT_HANDLE pub, priv;
    CK_SLOT_ID slot;
    CK_ULONG n = 1;
    CK_MECHANISM_INFO info;

    CU_ASSERT_EQUAL_FATAL(p11->C_GetSlotList(CK_TRUE, &slot, &n), CKR_OK);
    for (size_t i = 0; i < sizeof(crypt) / sizeof(crypt[0]); i++) {
        CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(slot, crypt[i], &info), CKR_OK);
        CU_ASSERT_EQUAL(info.ulMinKeySize, 16);
        CU_ASSERT_EQUAL(info.ulMaxKeySize, 32);
        CU_ASSERT_EQUAL(info.flags, CKF_ENCRYPT | CKF_DECRYPT | CKF_HW);
    }
    for (size_t i = 0; i < sizeof(mac) / sizeof(mac[0]); i++) {
        CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(slot, mac[i], &info), CKR_OK);
        CU_ASSERT_EQUAL(info.ulMinKeySize, 16);
        CU_ASSERT_EQUAL(info.ulMaxKeySize, 32);
        CU_ASSERT_EQUAL(info.flags, CKF_SIGN | CKF_VERIFY | CKF_HW);
    }
    /* The capability is checked: CBC does not sign, CMAC does not encrypt. */
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &cbc, tok128), CKR_MECHANISM_INVALID);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &cmac, tok128), CKR_MECHANISM_INVALID);
    /* And the key type. */
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKeyPair(sess, &ec_gen, pt, 2, vt, 2, &pub, &priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &cmac, priv), CKR_KEY_TYPE_INCONSISTENT);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &cbc, pub), CKR_KEY_TYPE_INCONSISTENT);
}

/* ---- AES-CMAC -------------------------------------------------------------------------------- */

static void test_cmac_matches_rfc4493_vectors(void)
{
    /* RFC 4493 section 4, examples 1-4: the SP 800-38A key over 0, 16, 40 and 64 bytes. */
    static const struct {
        CK_ULONG len;
        unsigned char mac[16];
    } ex[] = {
        {0,
         {0xbb, 0x1d, 0x69, 0x29, 0xe9, 0x59, 0x37, 0x28, 0x7f, 0xa3, 0x7d, 0x12, 0x9b, 0x75, 0x67,
          0x46}},
        {16,
         {0x07, 0x0a, 0x16, 0xb4, 0x6b, 0x4d, 0x41, 0x44, 0xf7, 0x9b, 0xdd, 0x9d, 0xd0, 0x4a, 0x28,
          0x7c}},
        {40,
         {0xdf, 0xa6, 0x67, 0x47, 0xde, 0x9a, 0xe6, 0x30, 0x30, 0xca, 0x32, 0x61, 0x14, 0x97, 0xc8,
          0x27}},
        {64,
         {0x51, 0xf0, 0xbe, 0xbf, 0x7e, 0x3b, 0x9d, 0x92, 0xfc, 0x49, 0x74, 0x17, 0x79, 0x36, 0x3c,
          0xfe}},
    };
    CK_MECHANISM cmac = {CKM_AES_CMAC, NULL, 0};
    unsigned char mac[32];

    for (size_t i = 0; i < sizeof(ex) / sizeof(ex[0]); i++) {
        CK_ULONG len = sizeof(mac);
        CU_ASSERT_EQUAL(sign(&cmac, tok128, pt64, ex[i].len, mac, &len), CKR_OK);
        CU_ASSERT_EQUAL(len, 16);
        CU_ASSERT_EQUAL(memcmp(mac, ex[i].mac, 16), 0);
        CU_ASSERT_EQUAL(verify(&cmac, tok128, pt64, ex[i].len, ex[i].mac, 16), CKR_OK);
    }
    /* Multi-part: example 3 in parts of 1, 20 and 19. */
    CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(sess, &cmac, tok128), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SignUpdate(sess, (CK_BYTE_PTR)pt64, 1), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SignUpdate(sess, (CK_BYTE_PTR)pt64 + 1, 20), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SignUpdate(sess, (CK_BYTE_PTR)pt64 + 21, 19), CKR_OK);
    CK_ULONG len = sizeof(mac);
    CU_ASSERT_EQUAL(p11->C_SignFinal(sess, mac, &len), CKR_OK);
    CU_ASSERT_EQUAL(memcmp(mac, ex[2].mac, 16), 0);
    CU_ASSERT_EQUAL_FATAL(p11->C_VerifyInit(sess, &cmac, tok128), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_VerifyUpdate(sess, (CK_BYTE_PTR)pt64, 33), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_VerifyUpdate(sess, (CK_BYTE_PTR)pt64 + 33, 7), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_VerifyFinal(sess, (CK_BYTE_PTR)ex[2].mac, 16), CKR_OK);
    CU_ASSERT_TRUE(audit_has("sign", "CKM_AES_CMAC", CKR_OK));
    CU_ASSERT_TRUE(audit_has("verify", "CKM_AES_CMAC", CKR_OK));
}

/* A CMAC under the session AES-256 key equals OpenSSL's EVP_MAC "CMAC". */
static void test_cmac_matches_openssl_on_a_session_key(void)
{
    CK_MECHANISM cmac = {CKM_AES_CMAC, NULL, 0};
    EVP_MAC *emac = EVP_MAC_fetch(NULL, "CMAC", NULL);
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(emac);
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("cipher", "AES-256-CBC", 0),
                           OSSL_PARAM_END};
    unsigned char want[16], mac[16];
    size_t wlen = 0;
    CK_ULONG len = sizeof(mac);

    CU_ASSERT_FATAL(ctx != NULL && EVP_MAC_init(ctx, k256, sizeof(k256), params) &&
                    EVP_MAC_update(ctx, pt64, 50) && EVP_MAC_final(ctx, want, &wlen, 16));
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(emac);
    CU_ASSERT_EQUAL(sign(&cmac, sess256, pt64, 50, mac, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, wlen);
    CU_ASSERT_EQUAL(memcmp(mac, want, 16), 0);
}

static void test_cmac_general_bad_macs_and_operation_state(void)
{
    static const unsigned char ex2[16] = {0x07, 0x0a, 0x16, 0xb4, 0x6b, 0x4d, 0x41, 0x44,
                                          0xf7, 0x9b, 0xdd, 0x9d, 0xd0, 0x4a, 0x28, 0x7c};
    CK_ULONG mlen = 10;
    CK_MECHANISM gen = {CKM_AES_CMAC_GENERAL, &mlen, sizeof(mlen)};
    CK_MECHANISM cmac = {CKM_AES_CMAC, NULL, 0};
    unsigned char mac[32], bad[16];
    CK_ULONG len = 0;

    /* CMAC_GENERAL: the leading bytes of the full MAC, 8 to 16 of them. */
    CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(sess, &gen, tok128), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, (CK_BYTE_PTR)pt64, 16, NULL, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 10);
    len = 9;
    CU_ASSERT_EQUAL(p11->C_Sign(sess, (CK_BYTE_PTR)pt64, 16, mac, &len), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(len, 10);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, (CK_BYTE_PTR)pt64, 16, mac, &len), CKR_OK);
    CU_ASSERT_EQUAL(memcmp(mac, ex2, 10), 0);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, (CK_BYTE_PTR)pt64, 16, mac, &len),
                    CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(verify(&gen, tok128, pt64, 16, ex2, 10), CKR_OK);
    CU_ASSERT_EQUAL(verify(&gen, tok128, pt64, 16, ex2, 16), CKR_SIGNATURE_LEN_RANGE);
    mlen = 7;
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &gen, tok128), CKR_MECHANISM_PARAM_INVALID);
    mlen = 17;
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &gen, tok128), CKR_MECHANISM_PARAM_INVALID);
    gen.ulParameterLen = 4;
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &gen, tok128), CKR_MECHANISM_PARAM_INVALID);
    cmac.pParameter = &mlen, cmac.ulParameterLen = sizeof(mlen);
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &cmac, tok128), CKR_MECHANISM_PARAM_INVALID);
    cmac.pParameter = NULL, cmac.ulParameterLen = 0;
    /* A wrong MAC, or the right one for other data, is refused, audited, and ends the
     * operation. */
    memcpy(bad, ex2, 16);
    bad[15] ^= 0x80;
    CU_ASSERT_EQUAL(verify(&cmac, tok128, pt64, 16, bad, 16), CKR_SIGNATURE_INVALID);
    CU_ASSERT_EQUAL(p11->C_Verify(sess, (CK_BYTE_PTR)pt64, 16, (CK_BYTE_PTR)ex2, 16),
                    CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(verify(&cmac, tok128, pt64, 15, ex2, 16), CKR_SIGNATURE_INVALID);
    CU_ASSERT_EQUAL(verify(&cmac, tok128, pt64, 16, ex2, 15), CKR_SIGNATURE_LEN_RANGE);
    CU_ASSERT_TRUE(audit_has("verify", "CKM_AES_CMAC", CKR_SIGNATURE_INVALID));
}

/* ---- C_DigestKey ----------------------------------------------------------------------------- */

/* SHA-256 of prefix || key value || suffix through C_DigestUpdate/C_DigestKey equals OpenSSL's
 * over the same bytes, for a token and a session key. */
static void test_digest_key_feeds_the_key_value(void)
{
    static const unsigned char pre[] = "before", post[] = "after";
    CK_MECHANISM sha = {CKM_SHA256, NULL, 0};
    const struct {
        CK_OBJECT_HANDLE h;
        const unsigned char *value;
        size_t len;
    } keys[] = {{tok128, k128, sizeof(k128)}, {sess256, k256, sizeof(k256)}};
    unsigned char want[32], got[32], all[64];

    for (size_t i = 0; i < 2; i++) {
        CK_ULONG len = sizeof(got);
        size_t n = 0;
        memcpy(all, pre, 6), n = 6;
        memcpy(all + n, keys[i].value, keys[i].len), n += keys[i].len;
        memcpy(all + n, post, 5), n += 5;
        CU_ASSERT_FATAL(EVP_Digest(all, n, want, NULL, EVP_sha256(), NULL) == 1);
        CU_ASSERT_EQUAL_FATAL(p11->C_DigestInit(sess, &sha), CKR_OK);
        CU_ASSERT_EQUAL(p11->C_DigestUpdate(sess, (CK_BYTE_PTR)pre, 6), CKR_OK);
        CU_ASSERT_EQUAL(p11->C_DigestKey(sess, keys[i].h), CKR_OK);
        CU_ASSERT_EQUAL(p11->C_DigestUpdate(sess, (CK_BYTE_PTR)post, 5), CKR_OK);
        /* Section 5.12: the single-part call cannot finish what C_DigestKey began. */
        CU_ASSERT_EQUAL(p11->C_Digest(sess, (CK_BYTE_PTR)post, 5, got, &len), CKR_OPERATION_ACTIVE);
        CU_ASSERT_EQUAL(p11->C_DigestFinal(sess, got, &len), CKR_OK);
        CU_ASSERT_EQUAL(len, 32);
        CU_ASSERT_EQUAL(memcmp(got, want, 32), 0);
    }
    CU_ASSERT_TRUE(audit_has("digest_key", "CKM_SHA256", CKR_OK));
}

static void test_digest_key_refusals_end_the_digest(void)
{
    static const CK_BYTE p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
    CK_MECHANISM ec_gen = {CKM_EC_KEY_PAIR_GEN, NULL, 0}, sha = {CKM_SHA256, NULL, 0};
    CK_ATTRIBUTE pt[] = {{CKA_EC_PARAMS, (void *)p256, sizeof(p256)}, {CKA_LABEL, "sym-ec2", 7}};
    CK_ATTRIBUTE vt[] = {{CKA_SIGN, &yes, 1}, {CKA_LABEL, "sym-ec2", 7}};
    CK_OBJECT_HANDLE pub, priv;
    unsigned char got[32];
    CK_ULONG len = sizeof(got);

    CU_ASSERT_EQUAL(p11->C_DigestKey(sess, tok128), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKeyPair(sess, &ec_gen, pt, 2, vt, 2, &pub, &priv), CKR_OK);
    /* Only secret keys: a private or public key's value is not one byte string. */
    CU_ASSERT_EQUAL_FATAL(p11->C_DigestInit(sess, &sha), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DigestKey(sess, priv), CKR_KEY_INDIGESTIBLE);
    CU_ASSERT_EQUAL(p11->C_DigestFinal(sess, got, &len), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_TRUE(audit_has("digest_key", "CKM_SHA256", CKR_KEY_INDIGESTIBLE));
    CU_ASSERT_EQUAL_FATAL(p11->C_DigestInit(sess, &sha), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DigestKey(sess, pub), CKR_KEY_INDIGESTIBLE);
    CU_ASSERT_EQUAL_FATAL(p11->C_DigestInit(sess, &sha), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DigestKey(sess, 0x7777777), CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_DigestFinal(sess, got, &len), CKR_OPERATION_NOT_INITIALIZED);
}

/* ---- generic secrets and HMAC ---------------------------------------------------------------- */

static CK_RV secret_import(const char *label, bool token, const unsigned char *value, CK_ULONG len,
                           CK_OBJECT_HANDLE *h)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_GENERIC_SECRET;
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_VALUE, (void *)value, len},
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, token ? &yes : &no, 1},
        {CKA_SIGN, &yes, 1},
        {CKA_VERIFY, &yes, 1},
    };

    return p11->C_CreateObject(sess, tmpl, sizeof(tmpl) / sizeof(tmpl[0]), h);
}

static const EVP_MD *md_of(CK_MECHANISM_TYPE m)
{
    return m == CKM_SHA_1_HMAC    ? EVP_sha1()
           : m == CKM_SHA256_HMAC ? EVP_sha256()
           : m == CKM_SHA384_HMAC ? EVP_sha384()
                                  : EVP_sha512();
}

/* HMAC of in under key with mech: sign equals OpenSSL's HMAC(), and verifies. */
static void check_hmac(CK_MECHANISM_TYPE type, CK_OBJECT_HANDLE h, const unsigned char *key,
                       size_t klen, const unsigned char *in, size_t inlen,
                       const unsigned char *want)
{
    CK_MECHANISM m = {type, NULL, 0};
    unsigned char exp[EVP_MAX_MD_SIZE], mac[EVP_MAX_MD_SIZE];
    unsigned int elen = 0;
    CK_ULONG len = sizeof(mac);

    CU_ASSERT_FATAL(HMAC(md_of(type), key, (int)klen, in, inlen, exp, &elen) != NULL);
    if (want != NULL) CU_ASSERT_EQUAL(memcmp(exp, want, elen), 0);
    CU_ASSERT_EQUAL_FATAL(sign(&m, h, in, inlen, mac, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, elen);
    CU_ASSERT_EQUAL(memcmp(mac, exp, elen), 0);
    CU_ASSERT_EQUAL(verify(&m, h, in, inlen, exp, elen), CKR_OK);
    exp[0] ^= 1;
    CU_ASSERT_EQUAL(verify(&m, h, in, inlen, exp, elen), CKR_SIGNATURE_INVALID);
    CU_ASSERT_EQUAL(verify(&m, h, in, inlen, exp, elen - 1), CKR_SIGNATURE_LEN_RANGE);
}

static void test_hmac_matches_rfc4231_vectors(void)
{
    /* RFC 4231 test case 1 (key 20 x 0x0b, "Hi There") and RFC 2202 test case 1 for SHA-1. */
    static const unsigned char tc1_256[32] = {0xb0, 0x34, 0x4c, 0x61, 0xd8, 0xdb, 0x38, 0x53,
                                              0x5c, 0xa8, 0xaf, 0xce, 0xaf, 0x0b, 0xf1, 0x2b,
                                              0x88, 0x1d, 0xc2, 0x00, 0xc9, 0x83, 0x3d, 0xa7,
                                              0x26, 0xe9, 0x37, 0x6c, 0x2e, 0x32, 0xcf, 0xf7};
    static const unsigned char tc1_384[48] = {
        0xaf, 0xd0, 0x39, 0x44, 0xd8, 0x48, 0x95, 0x62, 0x6b, 0x08, 0x25, 0xf4,
        0xab, 0x46, 0x90, 0x7f, 0x15, 0xf9, 0xda, 0xdb, 0xe4, 0x10, 0x1e, 0xc6,
        0x82, 0xaa, 0x03, 0x4c, 0x7c, 0xeb, 0xc5, 0x9c, 0xfa, 0xea, 0x9e, 0xa9,
        0x07, 0x6e, 0xde, 0x7f, 0x4a, 0xf1, 0x52, 0xe8, 0xb2, 0xfa, 0x9c, 0xb6};
    static const unsigned char tc1_512[64] = {
        0x87, 0xaa, 0x7c, 0xde, 0xa5, 0xef, 0x61, 0x9d, 0x4f, 0xf0, 0xb4, 0x24, 0x1a,
        0x1d, 0x6c, 0xb0, 0x23, 0x79, 0xf4, 0xe2, 0xce, 0x4e, 0xc2, 0x78, 0x7a, 0xd0,
        0xb3, 0x05, 0x45, 0xe1, 0x7c, 0xde, 0xda, 0xa8, 0x33, 0xb7, 0xd6, 0xb8, 0xa7,
        0x02, 0x03, 0x8b, 0x27, 0x4e, 0xae, 0xa3, 0xf4, 0xe4, 0xbe, 0x9d, 0x91, 0x4e,
        0xeb, 0x61, 0xf1, 0x70, 0x2e, 0x69, 0x6c, 0x20, 0x3a, 0x12, 0x68, 0x54};
    static const unsigned char tc1_sha1[20] = {0xb6, 0x17, 0x31, 0x86, 0x55, 0x05, 0x72,
                                               0x64, 0xe2, 0x8b, 0xc0, 0xb6, 0xfb, 0x37,
                                               0x8c, 0x8e, 0xf1, 0x46, 0xbe, 0x00};
    /* Test case 6: a 131-byte key, longer than the hash's block, over a 54-byte message. */
    static const unsigned char tc6_msg[] = "Test Using Larger Than Block-Size Key - Hash Key First";
    unsigned char k1[20], k6[131];
    CK_OBJECT_HANDLE h1, h6;

    memset(k1, 0x0b, sizeof(k1));
    memset(k6, 0xaa, sizeof(k6));
    CU_ASSERT_EQUAL_FATAL(secret_import("sym-hmac-tc1", true, k1, sizeof(k1), &h1), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(secret_import("sym-hmac-tc6", false, k6, sizeof(k6), &h6), CKR_OK);
    check_hmac(CKM_SHA256_HMAC, h1, k1, sizeof(k1), (const unsigned char *)"Hi There", 8, tc1_256);
    check_hmac(CKM_SHA384_HMAC, h1, k1, sizeof(k1), (const unsigned char *)"Hi There", 8, tc1_384);
    check_hmac(CKM_SHA512_HMAC, h1, k1, sizeof(k1), (const unsigned char *)"Hi There", 8, tc1_512);
    check_hmac(CKM_SHA_1_HMAC, h1, k1, sizeof(k1), (const unsigned char *)"Hi There", 8, tc1_sha1);
    for (CK_MECHANISM_TYPE t = 0; t < 4; t++) {
        static const CK_MECHANISM_TYPE types[] = {CKM_SHA_1_HMAC, CKM_SHA256_HMAC, CKM_SHA384_HMAC,
                                                  CKM_SHA512_HMAC};
        check_hmac(types[t], h6, k6, sizeof(k6), tc6_msg, sizeof(tc6_msg) - 1, NULL);
    }
    CU_ASSERT_TRUE(audit_has("sign", "CKM_SHA256_HMAC", CKR_OK));
    CU_ASSERT_TRUE(audit_has("verify", "CKM_SHA512_HMAC", CKR_SIGNATURE_INVALID));
}

static void test_generic_secret_keys_are_made_and_checked(void)
{
    CK_MECHANISM gen = {CKM_GENERIC_SECRET_KEY_GEN, NULL, 0}, hmac = {CKM_SHA256_HMAC, NULL, 0};
    CK_MECHANISM cbc = {CKM_AES_CBC, iv_f2, 16}, cmac = {CKM_AES_CMAC, NULL, 0};
    CK_ULONG vlen = 32, got_len = 0;
    CK_KEY_TYPE kt = 0;
    CK_MECHANISM_TYPE kgm = 0;
    unsigned char value[64], mac[64];
    CK_ATTRIBUTE tmpl[] = {{CKA_VALUE_LEN, &vlen, sizeof(vlen)},
                           {CKA_LABEL, "sym-gen", 7},
                           {CKA_TOKEN, &yes, 1},
                           {CKA_SIGN, &yes, 1},
                           {CKA_VERIFY, &yes, 1},
                           {CKA_EXTRACTABLE, &yes, 1},
                           {CKA_SENSITIVE, &no, 1}};
    CK_ATTRIBUTE get[] = {{CKA_KEY_TYPE, &kt, sizeof(kt)},
                          {CKA_KEY_GEN_MECHANISM, &kgm, sizeof(kgm)},
                          {CKA_VALUE, value, sizeof(value)},
                          {CKA_VALUE_LEN, &got_len, sizeof(got_len)}};
    CK_OBJECT_HANDLE h, hs;
    CK_SLOT_ID slot;
    CK_ULONG n = 1;
    CK_MECHANISM_INFO info;
    static const unsigned char jefe[4] = "Jefe";

    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(sess, &gen, tmpl, 7, &h), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_GetAttributeValue(sess, h, get, 4), CKR_OK);
    CU_ASSERT_EQUAL(kt, CKK_GENERIC_SECRET);
    CU_ASSERT_EQUAL(kgm, CKM_GENERIC_SECRET_KEY_GEN);
    CU_ASSERT_EQUAL(get[2].ulValueLen, 32);
    CU_ASSERT_EQUAL(got_len, 32);
    check_hmac(CKM_SHA256_HMAC, h, value, 32, pt64, 64, NULL);
    /* A session key of 14 bytes (112 bits, the least); 13 bytes and RFC 4231's 4-byte "Jefe"
     * are too weak to hold. */
    vlen = 14;
    tmpl[2].pValue = &no;
    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &gen, tmpl, 7, &hs), CKR_OK);
    vlen = 13;
    CU_ASSERT_EQUAL(p11->C_GenerateKey(sess, &gen, tmpl, 7, &hs), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(secret_import("sym-jefe", false, jefe, 4, &hs), CKR_ATTRIBUTE_VALUE_INVALID);
    /* Each key type keeps to its mechanisms. */
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &hmac, tok128), CKR_KEY_TYPE_INCONSISTENT);
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &cmac, h), CKR_KEY_TYPE_INCONSISTENT);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &cbc, h), CKR_KEY_TYPE_INCONSISTENT);
    hmac.pParameter = &vlen, hmac.ulParameterLen = sizeof(vlen);
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &hmac, h), CKR_MECHANISM_PARAM_INVALID);
    /* Two-call convention. */
    hmac.pParameter = NULL, hmac.ulParameterLen = 0;
    n = 0;
    CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(sess, &hmac, h), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, (CK_BYTE_PTR)pt64, 3, NULL, &n), CKR_OK);
    CU_ASSERT_EQUAL(n, 32);
    n = 31;
    CU_ASSERT_EQUAL(p11->C_Sign(sess, (CK_BYTE_PTR)pt64, 3, mac, &n), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, (CK_BYTE_PTR)pt64, 3, mac, &n), CKR_OK);
    /* The table. */
    n = 1;
    CU_ASSERT_EQUAL_FATAL(p11->C_GetSlotList(CK_TRUE, &slot, &n), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(slot, CKM_SHA384_HMAC, &info), CKR_OK);
    CU_ASSERT_EQUAL(info.flags, CKF_SIGN | CKF_VERIFY | CKF_HW);
    CU_ASSERT_EQUAL(info.ulMinKeySize, 14);
    CU_ASSERT_EQUAL(info.ulMaxKeySize, 512);
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(slot, CKM_GENERIC_SECRET_KEY_GEN, &info), CKR_OK);
    CU_ASSERT_EQUAL(info.flags, CKF_GENERATE | CKF_HW);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"SP 800-38A vectors for ECB, CBC and CTR", test_sp800_38a_vectors_for_ecb_cbc_and_ctr},
        {"modes match openssl on a session key", test_modes_match_openssl_on_a_session_key},
        {"multi-part equals single-part", test_multipart_equals_single_part},
        {"lengths and parameters are checked", test_lengths_and_parameters_are_checked},
        {"two-call convention and operation state", test_two_call_convention_and_operation_state},
        {"mechanism info and key types", test_mechanism_info_and_key_types},
        {"cmac matches the RFC 4493 vectors", test_cmac_matches_rfc4493_vectors},
        {"cmac matches openssl on a session key", test_cmac_matches_openssl_on_a_session_key},
        {"cmac general, bad MACs and operation state",
         test_cmac_general_bad_macs_and_operation_state},
        {"hmac matches the RFC 4231 vectors", test_hmac_matches_rfc4231_vectors},
        {"generic secret keys are made and checked", test_generic_secret_keys_are_made_and_checked},
        {"digest key feeds the key value", test_digest_key_feeds_the_key_value},
        {"digest key refusals end the digest", test_digest_key_refusals_end_the_digest},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {
        {"module-symmetric", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
