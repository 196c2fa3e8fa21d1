/* The module's cryptographic entry points, through the built holdfast-pkcs11.so as an application
 * sees it: results checked against OpenSSL computing the same thing from the public (or
 * exported) key, the two-call convention, operation state, usage and KMIP state enforcement,
 * wrap/unwrap, and the audit record each key operation leaves. */
#include "hf-build.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include "harness.h"
#include "module-loader.h"
#include "pkcs11/core/core.h"
#include "pkcs11/module/holdfast.h"

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE sess;

/* Keys made once for the whole program (RSA generation is slow on the shared machine). */
static CK_OBJECT_HANDLE aes;               /* AES-256, every AES usage, exportable */
static CK_OBJECT_HANDLE aes_enc;           /* AES-256, encrypt only */
static CK_OBJECT_HANDLE aes_sealed;        /* AES-256, not exportable */
static CK_OBJECT_HANDLE rsa_pub, rsa_priv; /* RSA-2048, every usage incl. wrap, exportable */
static CK_OBJECT_HANDLE ec256_pub, ec256_priv, ec384_pub, ec384_priv;

static CK_BBOOL yes = CK_TRUE, no = CK_FALSE;

/* The module's revalidation interval (internal.h HF_REVALIDATE_MS). */
#define HF_REVALIDATE_MS_FOR_TEST 500

/* ---- helpers --------------------------------------------------------------------------------- */

static CK_RV aes_create(const char *label, bool decrypt, bool extractable, CK_OBJECT_HANDLE *h)
{
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 32;
    CK_ATTRIBUTE tmpl[] = {
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_VALUE_LEN, &len, sizeof(len)},
        {CKA_TOKEN, &yes, sizeof(yes)},
        {CKA_ENCRYPT, &yes, sizeof(yes)},
        {CKA_DECRYPT, decrypt ? &yes : &no, sizeof(yes)},
        {CKA_WRAP, decrypt ? &yes : &no, sizeof(yes)},
        {CKA_UNWRAP, decrypt ? &yes : &no, sizeof(yes)},
        {CKA_EXTRACTABLE, extractable ? &yes : &no, sizeof(yes)},
    };

    return p11->C_GenerateKey(sess, &mech, tmpl, sizeof(tmpl) / sizeof(tmpl[0]), h);
}

static CK_RV rsa_create(const char *label, CK_OBJECT_HANDLE *pub, CK_OBJECT_HANDLE *priv)
{
    CK_MECHANISM mech = {CKM_RSA_PKCS_KEY_PAIR_GEN, NULL, 0};
    CK_ULONG bits = 2048;
    CK_BYTE e[] = {1, 0, 1};
    CK_ATTRIBUTE pt[] = {
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, &yes, 1},
        {CKA_MODULUS_BITS, &bits, sizeof(bits)},
        {CKA_PUBLIC_EXPONENT, e, sizeof(e)},
        {CKA_ENCRYPT, &yes, 1},
        {CKA_VERIFY, &yes, 1},
        {CKA_WRAP, &yes, 1},
    };
    CK_ATTRIBUTE vt[] = {
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, &yes, 1},
        {CKA_DECRYPT, &yes, 1},
        {CKA_SIGN, &yes, 1},
        {CKA_UNWRAP, &yes, 1},
        {CKA_EXTRACTABLE, &yes, 1},
    };

    return p11->C_GenerateKeyPair(sess, &mech, pt, sizeof(pt) / sizeof(pt[0]), vt,
                                  sizeof(vt) / sizeof(vt[0]), pub, priv);
}

/* An RSA-2048 pair whose private key may decrypt or sign, not both. */
static CK_RV rsa_create_one_use(const char *label, bool decrypt, CK_OBJECT_HANDLE *pub,
                                CK_OBJECT_HANDLE *priv)
{
    CK_MECHANISM mech = {CKM_RSA_PKCS_KEY_PAIR_GEN, NULL, 0};
    CK_ULONG bits = 2048;
    CK_ATTRIBUTE pt[] = {
        {CKA_LABEL, (void *)label, strlen(label)}, {CKA_TOKEN, &yes, 1},
        {CKA_MODULUS_BITS, &bits, sizeof(bits)},   {CKA_ENCRYPT, decrypt ? &yes : &no, 1},
        {CKA_VERIFY, decrypt ? &no : &yes, 1},
    };
    CK_ATTRIBUTE vt[] = {
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, &yes, 1},
        {CKA_DECRYPT, decrypt ? &yes : &no, 1},
        {CKA_SIGN, decrypt ? &no : &yes, 1},
    };

    return p11->C_GenerateKeyPair(sess, &mech, pt, sizeof(pt) / sizeof(pt[0]), vt,
                                  sizeof(vt) / sizeof(vt[0]), pub, priv);
}

static CK_RV ec_create(const char *label, bool p384, CK_OBJECT_HANDLE *pub, CK_OBJECT_HANDLE *priv)
{
    static const CK_BYTE p256_oid[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
    static const CK_BYTE p384_oid[] = {0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22};
    CK_MECHANISM mech = {CKM_EC_KEY_PAIR_GEN, NULL, 0};
    CK_ATTRIBUTE pt[] = {
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, &yes, 1},
        {CKA_EC_PARAMS, (void *)(p384 ? p384_oid : p256_oid),
         p384 ? sizeof(p384_oid) : sizeof(p256_oid)},
        {CKA_VERIFY, &yes, 1},
    };
    CK_ATTRIBUTE vt[] = {
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, &yes, 1},
        {CKA_SIGN, &yes, 1},
        {CKA_EXTRACTABLE, &yes, 1},
    };

    return p11->C_GenerateKeyPair(sess, &mech, pt, sizeof(pt) / sizeof(pt[0]), vt,
                                  sizeof(vt) / sizeof(vt[0]), pub, priv);
}

/* An attribute's value, malloc'd; NULL when it cannot be read. */
static unsigned char *attr_get(CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type, CK_ULONG *len)
{
    CK_ATTRIBUTE a = {type, NULL, 0};
    unsigned char *v;

    if (p11->C_GetAttributeValue(sess, h, &a, 1) != CKR_OK || a.ulValueLen == 0 ||
        a.ulValueLen == CK_UNAVAILABLE_INFORMATION)
        return NULL;
    v = malloc(a.ulValueLen);
    a.pValue = v;
    if (v == NULL || p11->C_GetAttributeValue(sess, h, &a, 1) != CKR_OK) {
        free(v);
        return NULL;
    }
    *len = a.ulValueLen;
    return v;
}

/* The key's UUID as the audit log names it. */
static void key_uuid(CK_OBJECT_HANDLE h, char out[HF_UUID_LEN + 1])
{
    CK_ULONG len = 0;
    unsigned char *v = attr_get(h, CKA_HF_KEY_UUID, &len);

    memset(out, 0, HF_UUID_LEN + 1);
    if (v != NULL && len == HF_UUID_LEN) memcpy(out, v, HF_UUID_LEN);
    free(v);
}

/* An OpenSSL public key rebuilt from what the module shows (CKA_MODULUS/CKA_PUBLIC_EXPONENT or
 * CKA_EC_PARAMS/CKA_EC_POINT), as a relying party would. */
static EVP_PKEY *rsa_public(CK_OBJECT_HANDLE pub)
{
    CK_ULONG nlen = 0, elen = 0;
    unsigned char *n = attr_get(pub, CKA_MODULUS, &nlen),
                  *e = attr_get(pub, CKA_PUBLIC_EXPONENT, &elen);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    BIGNUM *bn = n ? BN_bin2bn(n, (int)nlen, NULL) : NULL,
           *be = e ? BN_bin2bn(e, (int)elen, NULL) : NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    EVP_PKEY *pkey = NULL;

    if (bn && be && bld && ctx && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) &&
        (params = OSSL_PARAM_BLD_to_param(bld)) != NULL && EVP_PKEY_fromdata_init(ctx) > 0)
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    EVP_PKEY_CTX_free(ctx);
    BN_free(bn);
    BN_free(be);
    free(n);
    free(e);
    return pkey;
}

static EVP_PKEY *ec_public(CK_OBJECT_HANDLE pub, const char *group)
{
    CK_ULONG len = 0;
    unsigned char *der = attr_get(pub, CKA_EC_POINT, &len);
    const unsigned char *p = der;
    ASN1_OCTET_STRING *os = der ? d2i_ASN1_OCTET_STRING(NULL, &p, (long)len) : NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    EVP_PKEY *pkey = NULL;

    if (os != NULL && ctx != NULL && EVP_PKEY_fromdata_init(ctx) > 0) {
        OSSL_PARAM params[] = {
            OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)group, 0),
            OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)ASN1_STRING_get0_data(os),
                                    (size_t)ASN1_STRING_length(os)),
            OSSL_PARAM_END,
        };
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params);
    }
    ASN1_OCTET_STRING_free(os);
    EVP_PKEY_CTX_free(ctx);
    free(der);
    return pkey;
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

/* Whether the audit log holds a record of op on the key with result rv. */
static bool audit_has(const char *op, const char *uuid, CK_RV rv)
{
    char want_op[64], want_key[64], want_rv[40];

    snprintf(want_op, sizeof(want_op), "\"op\":\"%s\"", op);
    snprintf(want_key, sizeof(want_key), "\"key\":\"%s\"", uuid);
    snprintf(want_rv, sizeof(want_rv), "\"result\":\"0x%lx\"", (unsigned long)rv);
    return audit_line_has(want_op, want_key, want_rv, (const char *)NULL);
}

static CK_GCM_PARAMS gcm_params(unsigned char *iv, CK_ULONG ivlen, unsigned char *aad,
                                CK_ULONG aadlen, CK_ULONG tagbits)
{
    CK_GCM_PARAMS p = {iv, ivlen, ivlen * 8, aad, aadlen, tagbits};
    return p;
}

/* ---- suite setup ----------------------------------------------------------------------------- */

static int suite_init(void)
{
    if (hf_test_env_setup(&env, NULL) != 0 || hf_test_module_load(&mod) != 0) return -1;
    p11 = mod.p11;
    if (hf_test_module_start(p11, &sess) != CKR_OK) return -1;
    if (aes_create("t-aes", true, true, &aes) != CKR_OK ||
        aes_create("t-aes-enc", false, true, &aes_enc) != CKR_OK ||
        aes_create("t-aes-sealed", true, false, &aes_sealed) != CKR_OK ||
        rsa_create("t-rsa", &rsa_pub, &rsa_priv) != CKR_OK ||
        ec_create("t-ec256", false, &ec256_pub, &ec256_priv) != CKR_OK ||
        ec_create("t-ec384", true, &ec384_pub, &ec384_priv) != CKR_OK) {
        fprintf(stderr, "key generation failed\n");
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

/* ---- AES-GCM --------------------------------------------------------------------------------- */

static unsigned char iv12[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
static unsigned char aad[] = "header";
static const unsigned char msg32[32] = "thirty-two bytes of a data key!";

static void test_gcm_round_trip_restores_the_plaintext(void)
{
    CK_GCM_PARAMS gp = gcm_params(iv12, 12, aad, sizeof(aad), 128);
    CK_MECHANISM m = {CKM_AES_GCM, &gp, sizeof(gp)};
    unsigned char ct[64], pt[64];
    CK_ULONG ctlen = sizeof(ct), ptlen = sizeof(pt);

    CU_ASSERT_EQUAL(encrypt(&m, aes, msg32, 32, ct, &ctlen), CKR_OK);
    CU_ASSERT_EQUAL(ctlen, 32 + 16);
    CU_ASSERT_EQUAL(decrypt(&m, aes, ct, ctlen, pt, &ptlen), CKR_OK);
    CU_ASSERT_EQUAL(ptlen, 32);
    CU_ASSERT_EQUAL(memcmp(pt, msg32, 32), 0);
}

/* OpenSSL with the exported key value: ciphertext || tag, byte for byte, in both directions. */
static int openssl_gcm(bool enc, const unsigned char *key, const unsigned char *in, int inlen,
                       unsigned char *out, unsigned char *tag, int taglen)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int len = 0, fin = 0, ok;

    ok = EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) &&
         EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) &&
         EVP_CipherInit_ex(c, NULL, NULL, key, iv12, enc) &&
         EVP_CipherUpdate(c, NULL, &len, aad, sizeof(aad)) &&
         EVP_CipherUpdate(c, out, &len, in, inlen) &&
         (enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, taglen, tag)) &&
         EVP_CipherFinal_ex(c, out + len, &fin) &&
         (!enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, taglen, tag));
    EVP_CIPHER_CTX_free(c);
    return ok ? len + fin : -1;
}

static void test_gcm_matches_openssl_both_ways(void)
{
    CK_GCM_PARAMS gp = gcm_params(iv12, 12, aad, sizeof(aad), 96);
    CK_MECHANISM m = {CKM_AES_GCM, &gp, sizeof(gp)};
    unsigned char ct[64], ref[64], pt[64];
    CK_ULONG klen = 0, ctlen = sizeof(ct), ptlen = sizeof(pt);
    unsigned char *key = attr_get(aes, CKA_VALUE, &klen);

    CU_ASSERT_PTR_NOT_NULL_FATAL(key);
    CU_ASSERT_EQUAL_FATAL(klen, 32);
    CU_ASSERT_EQUAL(encrypt(&m, aes, msg32, 32, ct, &ctlen), CKR_OK);
    CU_ASSERT_EQUAL(ctlen, 32 + 12);
    CU_ASSERT_EQUAL(openssl_gcm(true, key, msg32, 32, ref, ref + 32, 12), 32);
    CU_ASSERT_EQUAL(memcmp(ct, ref, 44), 0);
    /* And what OpenSSL made, the module opens. */
    ref[0] ^= 0x55;
    CU_ASSERT_EQUAL(openssl_gcm(false, key, ref, 32, pt, ref + 32, 12), -1); /* sanity: tamper */
    ref[0] ^= 0x55;
    CU_ASSERT_EQUAL(decrypt(&m, aes, ref, 44, pt, &ptlen), CKR_OK);
    CU_ASSERT_EQUAL(memcmp(pt, msg32, 32), 0);
    free(key);
}

static void test_gcm_tamper_is_refused_and_audited(void)
{
    CK_GCM_PARAMS gp = gcm_params(iv12, 12, NULL, 0, 128);
    CK_MECHANISM m = {CKM_AES_GCM, &gp, sizeof(gp)};
    unsigned char ct[64], pt[64];
    CK_ULONG ctlen = sizeof(ct), ptlen = sizeof(pt);
    char uuid[HF_UUID_LEN + 1];

    key_uuid(aes, uuid);
    CU_ASSERT_EQUAL_FATAL(encrypt(&m, aes, msg32, 32, ct, &ctlen), CKR_OK);
    ct[5] ^= 1;
    memset(pt, 0xAA, sizeof(pt));
    CU_ASSERT_EQUAL(decrypt(&m, aes, ct, ctlen, pt, &ptlen), CKR_ENCRYPTED_DATA_INVALID);
    /* No unauthenticated plaintext reaches the caller. */
    CU_ASSERT_PTR_NULL(memmem(pt, sizeof(pt), msg32 + 8, 8));
    /* The failure ended the operation, and it is on record with its result. */
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, ct, ctlen, pt, &ptlen), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_TRUE(audit_has("decrypt", uuid, CKR_ENCRYPTED_DATA_INVALID));
    CU_ASSERT_TRUE(audit_has("encrypt", uuid, CKR_OK));
    /* A tampered AAD fails the same way. */
    gp = gcm_params(iv12, 12, aad, 3, 128);
    ct[5] ^= 1;
    ptlen = sizeof(pt);
    CU_ASSERT_EQUAL(decrypt(&m, aes, ct, ctlen, pt, &ptlen), CKR_ENCRYPTED_DATA_INVALID);
}

static void test_gcm_multipart_equals_single_part(void)
{
    unsigned char data[100], one[200], multi[200], pt[200];
    CK_GCM_PARAMS gp = gcm_params(iv12, 12, aad, sizeof(aad), 128);
    CK_MECHANISM m = {CKM_AES_GCM, &gp, sizeof(gp)};
    CK_ULONG onelen = sizeof(one), n, total = 0, ptlen;

    RAND_bytes(data, sizeof(data));
    CU_ASSERT_EQUAL_FATAL(encrypt(&m, aes, data, sizeof(data), one, &onelen), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_EncryptInit(sess, &m, aes), CKR_OK);
    for (int i = 0; i < 4; i++) {
        n = sizeof(multi) - total;
        CU_ASSERT_EQUAL(p11->C_EncryptUpdate(sess, data + 25 * i, 25, multi + total, &n), CKR_OK);
        total += n;
    }
    n = sizeof(multi) - total;
    CU_ASSERT_EQUAL(p11->C_EncryptFinal(sess, multi + total, &n), CKR_OK);
    total += n;
    CU_ASSERT_EQUAL(total, onelen);
    CU_ASSERT_EQUAL(memcmp(one, multi, onelen), 0);

    /* Multi-part decryption, with a size query on the final part. */
    CU_ASSERT_EQUAL_FATAL(p11->C_DecryptInit(sess, &m, aes), CKR_OK);
    n = sizeof(pt);
    CU_ASSERT_EQUAL(p11->C_DecryptUpdate(sess, one, 60, pt, &n), CKR_OK);
    CU_ASSERT_EQUAL(n, 0);
    n = sizeof(pt);
    CU_ASSERT_EQUAL(p11->C_DecryptUpdate(sess, one + 60, onelen - 60, pt, &n), CKR_OK);
    ptlen = 0;
    CU_ASSERT_EQUAL(p11->C_DecryptFinal(sess, NULL, &ptlen), CKR_OK);
    CU_ASSERT_EQUAL(ptlen, sizeof(data));
    CU_ASSERT_EQUAL(p11->C_DecryptFinal(sess, pt, &ptlen), CKR_OK);
    CU_ASSERT_EQUAL(ptlen, sizeof(data));
    CU_ASSERT_EQUAL(memcmp(pt, data, sizeof(data)), 0);
    /* A single-part call cannot finish a multi-part operation. */
    CU_ASSERT_EQUAL_FATAL(p11->C_EncryptInit(sess, &m, aes), CKR_OK);
    n = sizeof(multi);
    CU_ASSERT_EQUAL(p11->C_EncryptUpdate(sess, data, 10, multi, &n), CKR_OK);
    n = sizeof(multi);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, data, 10, multi, &n), CKR_OPERATION_ACTIVE);
    CU_ASSERT_EQUAL(p11->C_EncryptFinal(sess, multi, &n), CKR_OK);
    CU_ASSERT_EQUAL(n, 10 + 16);
}

static void test_gcm_two_call_convention(void)
{
    CK_GCM_PARAMS gp = gcm_params(iv12, 12, NULL, 0, 128);
    CK_MECHANISM m = {CKM_AES_GCM, &gp, sizeof(gp)};
    unsigned char ct[64];
    CK_ULONG len = 0;

    CU_ASSERT_EQUAL_FATAL(p11->C_EncryptInit(sess, &m, aes), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)msg32, 32, NULL, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 48);
    len = 47;
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)msg32, 32, ct, &len), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(len, 48);
    /* Still active after both answers; the real call ends it. */
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, aes), CKR_OPERATION_ACTIVE);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)msg32, 32, ct, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 48);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)msg32, 32, ct, &len),
                    CKR_OPERATION_NOT_INITIALIZED);
    /* A missing length pointer is a bad argument, and ends the operation. */
    CU_ASSERT_EQUAL_FATAL(p11->C_EncryptInit(sess, &m, aes), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)msg32, 32, ct, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, aes), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, aes), CKR_OPERATION_ACTIVE);
    len = sizeof(ct);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)msg32, 32, ct, &len), CKR_OK);
}

/* PKCS#11 2.40 as published had no ulIvBits; callers built against it pass the shorter struct. */
struct gcm_v240 {
    CK_BYTE_PTR pIv;
    CK_ULONG ulIvLen;
    CK_BYTE_PTR pAAD;
    CK_ULONG ulAADLen;
    CK_ULONG ulTagBits;
};

static void test_gcm_parameters_are_checked(void)
{
    CK_GCM_PARAMS gp;
    CK_MECHANISM m = {CKM_AES_GCM, &gp, sizeof(gp)};
    struct gcm_v240 old = {iv12, 12, aad, sizeof(aad), 128};
    CK_MECHANISM mold = {CKM_AES_GCM, &old, sizeof(old)};
    unsigned char ct[64], ref[64];
    CK_ULONG len = sizeof(ct), reflen = sizeof(ref);
    static const CK_ULONG bad_tags[] = {0, 24, 32, 33, 64, 88, 100, 136};
    char uuid[HF_UUID_LEN + 1];

    gp = gcm_params(iv12, 0, NULL, 0, 128);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, aes), CKR_MECHANISM_PARAM_INVALID);
    gp = gcm_params(NULL, 12, NULL, 0, 128);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, aes), CKR_MECHANISM_PARAM_INVALID);
    gp = gcm_params(iv12, 257, NULL, 0, 128);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, aes), CKR_MECHANISM_PARAM_INVALID);
    gp = gcm_params(iv12, 12, NULL, 5, 128);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, aes), CKR_MECHANISM_PARAM_INVALID);
    for (size_t i = 0; i < sizeof(bad_tags) / sizeof(bad_tags[0]); i++) {
        gp = gcm_params(iv12, 12, NULL, 0, bad_tags[i]);
        CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, aes), CKR_MECHANISM_PARAM_INVALID);
    }
    /* A failed start on a named key is on record too (a gateway request gets its one record). */
    key_uuid(aes, uuid);
    CU_ASSERT_TRUE(audit_has("encrypt", uuid, CKR_MECHANISM_PARAM_INVALID));
    m.ulParameterLen = sizeof(gp) - 1;
    gp = gcm_params(iv12, 12, NULL, 0, 128);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, aes), CKR_MECHANISM_PARAM_INVALID);
    m.pParameter = NULL;
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, aes), CKR_MECHANISM_PARAM_INVALID);
    /* The 2.40 layout gives the same result as the 3.0 one; a 96-bit tag is the shortest. */
    CU_ASSERT_EQUAL(encrypt(&mold, aes, msg32, 32, ct, &len), CKR_OK);
    gp = gcm_params(iv12, 12, aad, sizeof(aad), 128);
    m.pParameter = &gp;
    m.ulParameterLen = sizeof(gp);
    CU_ASSERT_EQUAL(encrypt(&m, aes, msg32, 32, ref, &reflen), CKR_OK);
    CU_ASSERT_EQUAL(len, reflen);
    CU_ASSERT_EQUAL(memcmp(ct, ref, len), 0);
    gp = gcm_params(iv12, 1, NULL, 0, 96);
    len = sizeof(ct);
    CU_ASSERT_EQUAL(encrypt(&m, aes, msg32, 32, ct, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 44);
    /* Ciphertext shorter than the tag. */
    gp = gcm_params(iv12, 12, NULL, 0, 128);
    len = sizeof(ct);
    CU_ASSERT_EQUAL(decrypt(&m, aes, ct, 15, ref, &len), CKR_ENCRYPTED_DATA_LEN_RANGE);
}

/* ---- operation state and mechanism checks ---------------------------------------------------- */

static void test_calls_without_init_are_refused(void)
{
    unsigned char buf[64];
    CK_ULONG len = sizeof(buf);

    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, buf, 16, buf, &len), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_EncryptUpdate(sess, buf, 16, buf, &len), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_EncryptFinal(sess, buf, &len), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, buf, 16, buf, &len), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_DecryptFinal(sess, buf, &len), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, buf, 16, buf, &len), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_SignUpdate(sess, buf, 16), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_SignFinal(sess, buf, &len), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_Verify(sess, buf, 16, buf, 16), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_VerifyFinal(sess, buf, 16), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_Digest(sess, buf, 16, buf, &len), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_DigestUpdate(sess, buf, 16), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_DigestFinal(sess, buf, &len), CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_Encrypt(0, buf, 16, buf, &len), CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, NULL, aes), CKR_ARGUMENTS_BAD);
}

static void test_operations_of_each_kind_run_side_by_side(void)
{
    CK_GCM_PARAMS gp = gcm_params(iv12, 12, NULL, 0, 128);
    CK_MECHANISM gcm = {CKM_AES_GCM, &gp, sizeof(gp)};
    CK_MECHANISM sha = {CKM_SHA256, NULL, 0};
    CK_MECHANISM ecdsa = {CKM_ECDSA_SHA256, NULL, 0};
    unsigned char buf[128] = "all four at once";
    CK_ULONG len = sizeof(buf);

    CU_ASSERT_EQUAL_FATAL(p11->C_EncryptInit(sess, &gcm, aes), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_DecryptInit(sess, &gcm, aes), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_DigestInit(sess, &sha), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(sess, &ecdsa, ec256_priv), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DigestInit(sess, &sha), CKR_OPERATION_ACTIVE);
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &ecdsa, ec256_priv), CKR_OPERATION_ACTIVE);
    CU_ASSERT_EQUAL(p11->C_DecryptInit(sess, &gcm, aes), CKR_OPERATION_ACTIVE);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, buf, 10, buf, &len), CKR_OK);
    len = sizeof(buf);
    CU_ASSERT_EQUAL(p11->C_Digest(sess, buf, 10, buf, &len), CKR_OK);
    len = sizeof(buf);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, buf, 10, buf, &len), CKR_OK);
    len = sizeof(buf);
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, buf, 26, buf, &len), CKR_OK);
}

static void test_wrong_mechanism_or_key_is_refused(void)
{
    CK_GCM_PARAMS gp = gcm_params(iv12, 12, NULL, 0, 128);
    CK_MECHANISM gcm = {CKM_AES_GCM, &gp, sizeof(gp)};
    CK_MECHANISM m = {CKM_SHA256, NULL, 0};

    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, aes), CKR_MECHANISM_INVALID);
    m.mechanism = CKM_ECDSA; /* a signature mechanism cannot encrypt */
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, aes), CKR_MECHANISM_INVALID);
    m.mechanism = CKM_DES3_CBC; /* not offered */
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, aes), CKR_MECHANISM_INVALID);
    m.mechanism = CKM_MD5_RSA_PKCS;
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, rsa_priv), CKR_MECHANISM_INVALID);
    m.mechanism = CKM_MD5;
    CU_ASSERT_EQUAL(p11->C_DigestInit(sess, &m), CKR_MECHANISM_INVALID);
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &gcm, aes), CKR_MECHANISM_INVALID);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &gcm, rsa_pub), CKR_KEY_TYPE_INCONSISTENT);
    m.mechanism = CKM_RSA_PKCS;
    CU_ASSERT_EQUAL(p11->C_DecryptInit(sess, &m, ec256_priv), CKR_KEY_TYPE_INCONSISTENT);
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, aes), CKR_KEY_TYPE_INCONSISTENT);
    m.mechanism = CKM_ECDSA;
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, rsa_priv), CKR_KEY_TYPE_INCONSISTENT);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &gcm, 0x7ffffff0), CKR_KEY_HANDLE_INVALID);
    /* None of these left an operation behind. */
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &gcm, aes), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &gcm, 0), CKR_OPERATION_ACTIVE);
    {
        unsigned char buf[64];
        CK_ULONG len = sizeof(buf);
        CU_ASSERT_EQUAL(p11->C_Encrypt(sess, buf, 8, buf, &len), CKR_OK);
    }
}

static void test_mechanism_info_reports_sizes_and_hw(void)
{
    CK_MECHANISM_INFO info;
    CK_MECHANISM_TYPE list[64];
    CK_ULONG n = 0;
    CK_SLOT_ID slot = 0;
    CK_SESSION_INFO si;

    CU_ASSERT_EQUAL_FATAL(p11->C_GetSessionInfo(sess, &si), CKR_OK);
    slot = si.slotID;
    CU_ASSERT_EQUAL(p11->C_GetMechanismList(slot, NULL, &n), CKR_OK);
    CU_ASSERT_TRUE(n >= 30 && n <= 64);
    CU_ASSERT_EQUAL(p11->C_GetMechanismList(slot, list, &n), CKR_OK);
    for (CK_ULONG i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(slot, list[i], &info), CKR_OK);
        CU_ASSERT_TRUE(info.flags & CKF_HW);
    }
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(slot, CKM_AES_GCM, &info), CKR_OK);
    CU_ASSERT_EQUAL(info.ulMinKeySize, 16); /* bytes for AES */
    CU_ASSERT_EQUAL(info.ulMaxKeySize, 32);
    CU_ASSERT_EQUAL(info.flags & (CKF_ENCRYPT | CKF_DECRYPT | CKF_SIGN), CKF_ENCRYPT | CKF_DECRYPT);
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(slot, CKM_RSA_PKCS_KEY_PAIR_GEN, &info), CKR_OK);
    CU_ASSERT_EQUAL(info.ulMinKeySize, 2048); /* bits for RSA */
    CU_ASSERT_EQUAL(info.ulMaxKeySize, 4096);
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(slot, CKM_ECDSA_SHA384, &info), CKR_OK);
    CU_ASSERT_EQUAL(info.ulMinKeySize, 256);
    CU_ASSERT_EQUAL(info.ulMaxKeySize, 521);
    CU_ASSERT_TRUE(info.flags & CKF_EC_NAMEDCURVE);
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(slot, CKM_SHA512, &info), CKR_OK);
    CU_ASSERT_TRUE(info.flags & CKF_DIGEST);
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(slot, CKM_MD5, &info), CKR_MECHANISM_INVALID);
}

/* ---- AES key wrap ---------------------------------------------------------------------------- */

static CK_RV aes_import(const char *label, const unsigned char *value, CK_ULONG len,
                        CK_OBJECT_HANDLE *h)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_VALUE, (void *)value, len},
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, &yes, 1},
        {CKA_ENCRYPT, &yes, 1},
        {CKA_DECRYPT, &yes, 1},
        {CKA_WRAP, &yes, 1},
        {CKA_UNWRAP, &yes, 1},
        {CKA_EXTRACTABLE, &yes, 1},
    };

    return p11->C_CreateObject(sess, tmpl, sizeof(tmpl) / sizeof(tmpl[0]), h);
}

static void test_kw_matches_rfc3394_vector(void)
{
    static const unsigned char kek[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const unsigned char data[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                           0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
    /* RFC 3394 4.1: wrap 128 bits of key data with a 128-bit KEK. */
    static const unsigned char want[24] = {0x1f, 0xa6, 0x8b, 0x0a, 0x81, 0x12, 0xb4, 0x47,
                                           0xae, 0xf3, 0x4b, 0xd8, 0xfb, 0x5a, 0x7b, 0x82,
                                           0x9d, 0x3e, 0x86, 0x23, 0x71, 0xd2, 0xcf, 0xe5};
    CK_MECHANISM m = {CKM_AES_KEY_WRAP, NULL, 0};
    CK_OBJECT_HANDLE h;
    unsigned char out[64], back[64];
    CK_ULONG len = sizeof(out), blen = sizeof(back);

    CU_ASSERT_EQUAL_FATAL(aes_import("t-kw-3394", kek, sizeof(kek), &h), CKR_OK);
    CU_ASSERT_EQUAL(encrypt(&m, h, data, sizeof(data), out, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, sizeof(want));
    CU_ASSERT_EQUAL(memcmp(out, want, sizeof(want)), 0);
    CU_ASSERT_EQUAL(decrypt(&m, h, want, sizeof(want), back, &blen), CKR_OK);
    CU_ASSERT_EQUAL(blen, sizeof(data));
    CU_ASSERT_EQUAL(memcmp(back, data, sizeof(data)), 0);
    /* RFC 3394 takes whole 64-bit blocks, at least two. */
    len = sizeof(out);
    CU_ASSERT_EQUAL(encrypt(&m, h, data, 15, out, &len), CKR_DATA_LEN_RANGE);
    len = sizeof(out);
    CU_ASSERT_EQUAL(encrypt(&m, h, data, 8, out, &len), CKR_DATA_LEN_RANGE);
    /* An integrity failure is bad ciphertext to C_Decrypt. */
    memcpy(out, want, sizeof(want));
    out[3] ^= 1;
    blen = sizeof(back);
    CU_ASSERT_EQUAL(decrypt(&m, h, out, sizeof(want), back, &blen), CKR_ENCRYPTED_DATA_INVALID);
    blen = sizeof(back);
    CU_ASSERT_EQUAL(decrypt(&m, h, out, 20, back, &blen), CKR_ENCRYPTED_DATA_LEN_RANGE);
    /* Alternative initial values are not supported. */
    m.pParameter = back;
    m.ulParameterLen = 8;
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, h), CKR_MECHANISM_PARAM_INVALID);
}

static void test_kwp_matches_rfc5649_vectors_under_both_names(void)
{
    static const unsigned char kek[24] = {0x58, 0x40, 0xdf, 0x6e, 0x29, 0xb0, 0x2a, 0xf1,
                                          0xab, 0x49, 0x3b, 0x70, 0x5b, 0xf1, 0x6e, 0xa1,
                                          0xae, 0x83, 0x38, 0xf4, 0xdc, 0xc1, 0x76, 0xa8};
    static const unsigned char key20[20] = {0xc3, 0x7b, 0x7e, 0x64, 0x92, 0x58, 0x43,
                                            0x40, 0xbe, 0xd1, 0x22, 0x07, 0x80, 0x89,
                                            0x41, 0x15, 0x50, 0x68, 0xf7, 0x38};
    static const unsigned char want20[32] = {0x13, 0x8b, 0xde, 0xaa, 0x9b, 0x8f, 0xa7, 0xfc,
                                             0x61, 0xf9, 0x77, 0x42, 0xe7, 0x22, 0x48, 0xee,
                                             0x5a, 0xe6, 0xae, 0x53, 0x60, 0xd1, 0xae, 0x6a,
                                             0x5f, 0x54, 0xf3, 0x73, 0xfa, 0x54, 0x3b, 0x6a};
    static const unsigned char key7[7] = {0x46, 0x6f, 0x72, 0x50, 0x61, 0x73, 0x69};
    static const unsigned char want7[16] = {0xaf, 0xbe, 0xb0, 0xf0, 0x7d, 0xfb, 0xf5, 0x41,
                                            0x92, 0x00, 0xf2, 0xcc, 0xb5, 0x0b, 0xb2, 0x4f};
    static const CK_MECHANISM_TYPE names[] = {CKM_AES_KEY_WRAP_KWP, CKM_AES_KEY_WRAP_PAD};
    CK_OBJECT_HANDLE h;
    unsigned char out[64], back[64];
    CK_ULONG len, blen;

    CU_ASSERT_EQUAL_FATAL(aes_import("t-kw-5649", kek, sizeof(kek), &h), CKR_OK);
    for (int i = 0; i < 2; i++) {
        CK_MECHANISM m = {names[i], NULL, 0};
        len = sizeof(out);
        CU_ASSERT_EQUAL(encrypt(&m, h, key20, sizeof(key20), out, &len), CKR_OK);
        CU_ASSERT_EQUAL(len, sizeof(want20));
        CU_ASSERT_EQUAL(memcmp(out, want20, sizeof(want20)), 0);
        len = sizeof(out);
        CU_ASSERT_EQUAL(encrypt(&m, h, key7, sizeof(key7), out, &len), CKR_OK);
        CU_ASSERT_EQUAL(len, sizeof(want7));
        CU_ASSERT_EQUAL(memcmp(out, want7, sizeof(want7)), 0);
        /* The size answer is an upper bound; a buffer of the real length is enough. */
        CU_ASSERT_EQUAL_FATAL(p11->C_DecryptInit(sess, &m, h), CKR_OK);
        blen = 0;
        CU_ASSERT_EQUAL(p11->C_Decrypt(sess, (CK_BYTE_PTR)want20, 32, NULL, &blen), CKR_OK);
        CU_ASSERT_TRUE(blen >= 20);
        blen = 19;
        CU_ASSERT_EQUAL(p11->C_Decrypt(sess, (CK_BYTE_PTR)want20, 32, back, &blen),
                        CKR_BUFFER_TOO_SMALL);
        CU_ASSERT_EQUAL(blen, 20);
        CU_ASSERT_EQUAL(p11->C_Decrypt(sess, (CK_BYTE_PTR)want20, 32, back, &blen), CKR_OK);
        CU_ASSERT_EQUAL(blen, 20);
        CU_ASSERT_EQUAL(memcmp(back, key20, 20), 0);
        blen = sizeof(back);
        CU_ASSERT_EQUAL(decrypt(&m, h, want7, sizeof(want7), back, &blen), CKR_OK);
        CU_ASSERT_EQUAL(blen, 7);
        CU_ASSERT_EQUAL(memcmp(back, key7, 7), 0);
    }
}

/* ---- RSA ------------------------------------------------------------------------------------- */

static const EVP_MD *md_of(CK_MECHANISM_TYPE hash)
{
    switch (hash) {
    case CKM_SHA_1:
        return EVP_sha1();
    case CKM_SHA224:
        return EVP_sha224();
    case CKM_SHA256:
        return EVP_sha256();
    case CKM_SHA384:
        return EVP_sha384();
    default:
        return EVP_sha512();
    }
}

/* OpenSSL's verdict on a signature over data (hashed with md), RSA (pss: PSS with salt) or EC
 * (r||s converted to DER). */
static bool openssl_verifies(EVP_PKEY *pub, const EVP_MD *md, int pss_salt,
                             const unsigned char *data, size_t len, const unsigned char *sig,
                             size_t siglen)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pc = NULL;
    unsigned char *der = NULL;
    int ok = 0;

    if (EVP_PKEY_is_a(pub, "EC")) {
        ECDSA_SIG *s = ECDSA_SIG_new();
        int half = (int)siglen / 2, dlen;
        ECDSA_SIG_set0(s, BN_bin2bn(sig, half, NULL), BN_bin2bn(sig + half, half, NULL));
        dlen = i2d_ECDSA_SIG(s, &der);
        ECDSA_SIG_free(s);
        sig = der;
        siglen = dlen > 0 ? (size_t)dlen : 0;
    }
    if (EVP_DigestVerifyInit(c, &pc, md, NULL, pub) == 1) {
        if (pss_salt >= 0) {
            EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING);
            EVP_PKEY_CTX_set_rsa_mgf1_md(pc, md);
            EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, pss_salt);
        }
        ok = EVP_DigestVerify(c, sig, siglen, data, len);
    }
    OPENSSL_free(der);
    EVP_MD_CTX_free(c);
    return ok == 1;
}

static void test_rsa_pkcs1_signatures_verify_in_openssl(void)
{
    static const CK_MECHANISM_TYPE mechs[][2] = {
        {CKM_SHA1_RSA_PKCS, CKM_SHA_1},    {CKM_SHA224_RSA_PKCS, CKM_SHA224},
        {CKM_SHA256_RSA_PKCS, CKM_SHA256}, {CKM_SHA384_RSA_PKCS, CKM_SHA384},
        {CKM_SHA512_RSA_PKCS, CKM_SHA512},
    };
    EVP_PKEY *pub = rsa_public(rsa_pub);
    unsigned char data[300], sig[512], sig2[512];
    CK_ULONG len, len2;

    CU_ASSERT_PTR_NOT_NULL_FATAL(pub);
    RAND_bytes(data, sizeof(data));
    for (size_t i = 0; i < sizeof(mechs) / sizeof(mechs[0]); i++) {
        CK_MECHANISM m = {mechs[i][0], NULL, 0};
        len = sizeof(sig);
        CU_ASSERT_EQUAL(sign(&m, rsa_priv, data, sizeof(data), sig, &len), CKR_OK);
        CU_ASSERT_EQUAL(len, 256);
        CU_ASSERT_TRUE(openssl_verifies(pub, md_of(mechs[i][1]), -1, data, sizeof(data), sig, len));
        CU_ASSERT_EQUAL(verify(&m, rsa_pub, data, sizeof(data), sig, len), CKR_OK);
        /* Multi-part gives the same (deterministic) signature. */
        CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(sess, &m, rsa_priv), CKR_OK);
        CU_ASSERT_EQUAL(p11->C_SignUpdate(sess, data, 7), CKR_OK);
        CU_ASSERT_EQUAL(p11->C_SignUpdate(sess, data + 7, sizeof(data) - 7), CKR_OK);
        len2 = sizeof(sig2);
        CU_ASSERT_EQUAL(p11->C_SignFinal(sess, sig2, &len2), CKR_OK);
        CU_ASSERT_EQUAL(len2, len);
        CU_ASSERT_EQUAL(memcmp(sig, sig2, len), 0);
        /* Multi-part verification, then a tampered signature. */
        CU_ASSERT_EQUAL_FATAL(p11->C_VerifyInit(sess, &m, rsa_pub), CKR_OK);
        CU_ASSERT_EQUAL(p11->C_VerifyUpdate(sess, data, 100), CKR_OK);
        CU_ASSERT_EQUAL(p11->C_VerifyUpdate(sess, data + 100, sizeof(data) - 100), CKR_OK);
        CU_ASSERT_EQUAL(p11->C_VerifyFinal(sess, sig, len), CKR_OK);
        sig[10] ^= 1;
        CU_ASSERT_EQUAL(verify(&m, rsa_pub, data, sizeof(data), sig, len), CKR_SIGNATURE_INVALID);
        CU_ASSERT_EQUAL(verify(&m, rsa_pub, data, sizeof(data), sig, len - 1),
                        CKR_SIGNATURE_LEN_RANGE);
    }
    EVP_PKEY_free(pub);
}

/* pkcs11-tool --test signs a DigestInfo with CKM_RSA_PKCS and a padded block with
 * CKM_RSA_X_509, and checks both with OpenSSL as SHA-1 signatures. */
static void test_rsa_raw_mechanisms_sign_digestinfo_and_blocks(void)
{
    static const unsigned char prefix[] = {0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e,
                                           0x03, 0x02, 0x1a, 0x05, 0x00, 0x04, 0x14};
    unsigned char data[] = "pkcs11-tool signs this", di[35], block[256], sig[512], sig2[512];
    CK_MECHANISM pkcs = {CKM_RSA_PKCS, NULL, 0}, x509 = {CKM_RSA_X_509, NULL, 0};
    EVP_PKEY *pub = rsa_public(rsa_pub);
    CK_ULONG len = sizeof(sig), len2 = sizeof(sig2);

    CU_ASSERT_PTR_NOT_NULL_FATAL(pub);
    memcpy(di, prefix, sizeof(prefix));
    SHA1(data, sizeof(data), di + sizeof(prefix));
    CU_ASSERT_EQUAL(sign(&pkcs, rsa_priv, di, sizeof(di), sig, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 256);
    CU_ASSERT_TRUE(openssl_verifies(pub, EVP_sha1(), -1, data, sizeof(data), sig, len));
    CU_ASSERT_EQUAL(verify(&pkcs, rsa_pub, di, sizeof(di), sig, len), CKR_OK);
    /* The same signature by hand: 00 01 FF.. 00 DigestInfo through raw RSA. */
    block[0] = 0, block[1] = 1;
    memset(block + 2, 0xff, 256 - 3 - sizeof(di));
    block[256 - sizeof(di) - 1] = 0;
    memcpy(block + 256 - sizeof(di), di, sizeof(di));
    CU_ASSERT_EQUAL(sign(&x509, rsa_priv, block, sizeof(block), sig2, &len2), CKR_OK);
    CU_ASSERT_EQUAL(len2, 256);
    CU_ASSERT_EQUAL(memcmp(sig, sig2, 256), 0);
    CU_ASSERT_EQUAL(verify(&x509, rsa_pub, block, sizeof(block), sig2, len2), CKR_OK);
    /* Input shorter than the modulus is the same number without its leading zero. */
    len2 = sizeof(sig2);
    CU_ASSERT_EQUAL(sign(&x509, rsa_priv, block + 1, sizeof(block) - 1, sig2, &len2), CKR_OK);
    CU_ASSERT_EQUAL(memcmp(sig, sig2, 256), 0);
    /* Too long for PKCS#1 v1.5 (k - 11 bytes at most). */
    len = sizeof(sig);
    CU_ASSERT_EQUAL(sign(&pkcs, rsa_priv, block, 246, sig, &len), CKR_DATA_LEN_RANGE);
    /* Two-call convention on C_Sign, as pkcs11-tool checks it. */
    CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(sess, &pkcs, rsa_priv), CKR_OK);
    len = 1;
    CU_ASSERT_EQUAL(p11->C_Sign(sess, di, sizeof(di), sig, &len), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(len, 256);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, di, sizeof(di), NULL, &len), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, di, sizeof(di), sig, &len), CKR_OK);
    EVP_PKEY_free(pub);
}

static void test_rsa_pss_signatures_verify_in_openssl(void)
{
    static const CK_MECHANISM_TYPE mechs[][3] = {
        {CKM_SHA1_RSA_PKCS_PSS, CKM_SHA_1, CKG_MGF1_SHA1},
        {CKM_SHA224_RSA_PKCS_PSS, CKM_SHA224, CKG_MGF1_SHA224},
        {CKM_SHA256_RSA_PKCS_PSS, CKM_SHA256, CKG_MGF1_SHA256},
        {CKM_SHA384_RSA_PKCS_PSS, CKM_SHA384, CKG_MGF1_SHA384},
        {CKM_SHA512_RSA_PKCS_PSS, CKM_SHA512, CKG_MGF1_SHA512},
    };
    EVP_PKEY *pub = rsa_public(rsa_pub);
    unsigned char data[77], hash[32], sig[512];
    CK_ULONG len;

    CU_ASSERT_PTR_NOT_NULL_FATAL(pub);
    RAND_bytes(data, sizeof(data));
    for (size_t i = 0; i < sizeof(mechs) / sizeof(mechs[0]); i++) {
        CK_RSA_PKCS_PSS_PARAMS pp = {mechs[i][1], mechs[i][2], 20};
        CK_MECHANISM m = {mechs[i][0], &pp, sizeof(pp)};
        len = sizeof(sig);
        CU_ASSERT_EQUAL(sign(&m, rsa_priv, data, sizeof(data), sig, &len), CKR_OK);
        CU_ASSERT_EQUAL(len, 256);
        CU_ASSERT_TRUE(openssl_verifies(pub, md_of(mechs[i][1]), 20, data, sizeof(data), sig, len));
        CU_ASSERT_EQUAL(verify(&m, rsa_pub, data, sizeof(data), sig, len), CKR_OK);
        sig[0] ^= 0x40;
        CU_ASSERT_EQUAL(verify(&m, rsa_pub, data, sizeof(data), sig, len), CKR_SIGNATURE_INVALID);
    }
    /* CKM_RSA_PKCS_PSS over a digest the caller made. */
    {
        CK_RSA_PKCS_PSS_PARAMS pp = {CKM_SHA256, CKG_MGF1_SHA256, 32};
        CK_MECHANISM m = {CKM_RSA_PKCS_PSS, &pp, sizeof(pp)};
        SHA256(data, sizeof(data), hash);
        len = sizeof(sig);
        CU_ASSERT_EQUAL(sign(&m, rsa_priv, hash, sizeof(hash), sig, &len), CKR_OK);
        CU_ASSERT_TRUE(openssl_verifies(pub, EVP_sha256(), 32, data, sizeof(data), sig, len));
        CU_ASSERT_EQUAL(verify(&m, rsa_pub, hash, sizeof(hash), sig, len), CKR_OK);
        len = sizeof(sig);
        CU_ASSERT_EQUAL(sign(&m, rsa_priv, hash, 20, sig, &len), CKR_DATA_LEN_RANGE);
    }
    EVP_PKEY_free(pub);
}

static void test_rsa_pss_parameters_are_checked(void)
{
    CK_RSA_PKCS_PSS_PARAMS pp = {CKM_SHA_1, CKG_MGF1_SHA256, 32};
    CK_MECHANISM m = {CKM_SHA256_RSA_PKCS_PSS, &pp, sizeof(pp)};

    /* The hash must be the mechanism's. */
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, rsa_priv), CKR_MECHANISM_PARAM_INVALID);
    pp.hashAlg = CKM_SHA256;
    pp.mgf = 0x77;
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, rsa_priv), CKR_MECHANISM_PARAM_INVALID);
    pp.mgf = CKG_MGF1_SHA256;
    pp.sLen = 256 - 32 - 1; /* emLen >= hLen + sLen + 2 fails */
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, rsa_priv), CKR_MECHANISM_PARAM_INVALID);
    pp.sLen = 32;
    m.ulParameterLen = sizeof(pp) - 1;
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, rsa_priv), CKR_MECHANISM_PARAM_INVALID);
    m.pParameter = NULL;
    m.ulParameterLen = 0;
    CU_ASSERT_EQUAL(p11->C_VerifyInit(sess, &m, rsa_pub), CKR_MECHANISM_PARAM_INVALID);
    pp.hashAlg = CKM_MD5;
    m.pParameter = &pp;
    m.ulParameterLen = sizeof(pp);
    m.mechanism = CKM_RSA_PKCS_PSS;
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, rsa_priv), CKR_MECHANISM_PARAM_INVALID);
    pp.hashAlg = CKM_SHA256;
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &m, rsa_priv), CKR_OK);
    {
        unsigned char hash[32] = {1}, sig[256];
        CK_ULONG len = sizeof(sig);
        CU_ASSERT_EQUAL(p11->C_Sign(sess, hash, 32, sig, &len), CKR_OK);
    }
}

/* OpenSSL encrypts to the public key; the module decrypts. */
static int openssl_oaep(EVP_PKEY *pub, const EVP_MD *md, const EVP_MD *mgf, const char *label,
                        const unsigned char *in, size_t inlen, unsigned char *out)
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new(pub, NULL);
    size_t len = 512;
    int ok = EVP_PKEY_encrypt_init(c) > 0 &&
             EVP_PKEY_CTX_set_rsa_padding(c, md ? RSA_PKCS1_OAEP_PADDING : RSA_PKCS1_PADDING) > 0;

    if (ok && md != NULL)
        ok = EVP_PKEY_CTX_set_rsa_oaep_md(c, md) > 0 && EVP_PKEY_CTX_set_rsa_mgf1_md(c, mgf) > 0;
    if (ok && label != NULL)
        ok = EVP_PKEY_CTX_set0_rsa_oaep_label(c, OPENSSL_strdup(label), (int)strlen(label)) > 0;
    ok = ok && EVP_PKEY_encrypt(c, out, &len, in, inlen) > 0;
    EVP_PKEY_CTX_free(c);
    return ok ? (int)len : -1;
}

static void test_rsa_oaep_decrypts_what_openssl_encrypts(void)
{
    static const CK_MECHANISM_TYPE hashes[][2] = {
        {CKM_SHA_1, CKG_MGF1_SHA1},    {CKM_SHA224, CKG_MGF1_SHA224}, {CKM_SHA256, CKG_MGF1_SHA256},
        {CKM_SHA384, CKG_MGF1_SHA384}, {CKM_SHA512, CKG_MGF1_SHA512}, {CKM_SHA256, CKG_MGF1_SHA1},
    };
    static const EVP_MD *(*const mgfs[])(void) = {EVP_sha1,   EVP_sha224, EVP_sha256,
                                                  EVP_sha384, EVP_sha512, EVP_sha1};
    EVP_PKEY *pub = rsa_public(rsa_pub);
    unsigned char ct[512], pt[512], msg[10] = "ten bytes";
    CK_ULONG ptlen;
    int ctlen;

    CU_ASSERT_PTR_NOT_NULL_FATAL(pub);
    for (size_t i = 0; i < sizeof(hashes) / sizeof(hashes[0]); i++) {
        for (int labelled = 0; labelled < 2; labelled++) {
            /* pkcs11-tool's unlabelled call says source 0, not CKZ_DATA_SPECIFIED. */
            CK_RSA_PKCS_OAEP_PARAMS op = {hashes[i][0], hashes[i][1],
                                          labelled ? CKZ_DATA_SPECIFIED : 0,
                                          labelled ? "ABC" : NULL, labelled ? 3 : 0};
            CK_MECHANISM m = {CKM_RSA_PKCS_OAEP, &op, sizeof(op)};
            ctlen = openssl_oaep(pub, md_of(hashes[i][0]), mgfs[i](), labelled ? "ABC" : NULL, msg,
                                 sizeof(msg), ct);
            CU_ASSERT_EQUAL_FATAL(ctlen, 256);
            ptlen = sizeof(pt);
            CU_ASSERT_EQUAL(decrypt(&m, rsa_priv, ct, (CK_ULONG)ctlen, pt, &ptlen), CKR_OK);
            CU_ASSERT_EQUAL(ptlen, sizeof(msg));
            CU_ASSERT_EQUAL(memcmp(pt, msg, sizeof(msg)), 0);
            /* And the module's own encryption opens the same way, into an exact buffer. */
            ctlen = 512;
            {
                CK_ULONG cl = sizeof(ct);
                CU_ASSERT_EQUAL(encrypt(&m, rsa_pub, msg, sizeof(msg), ct, &cl), CKR_OK);
                ctlen = (int)cl;
            }
            ptlen = sizeof(msg);
            CU_ASSERT_EQUAL(decrypt(&m, rsa_priv, ct, (CK_ULONG)ctlen, pt, &ptlen), CKR_OK);
            CU_ASSERT_EQUAL(memcmp(pt, msg, sizeof(msg)), 0);
        }
    }
    EVP_PKEY_free(pub);
}

static void test_rsa_oaep_parameters_are_checked(void)
{
    CK_RSA_PKCS_OAEP_PARAMS op = {CKM_MD5, CKG_MGF1_SHA256, CKZ_DATA_SPECIFIED, NULL, 0};
    CK_MECHANISM m = {CKM_RSA_PKCS_OAEP, &op, sizeof(op)};

    CU_ASSERT_EQUAL(p11->C_DecryptInit(sess, &m, rsa_priv), CKR_MECHANISM_PARAM_INVALID);
    op.hashAlg = CKM_SHA256;
    op.mgf = 0x42;
    CU_ASSERT_EQUAL(p11->C_DecryptInit(sess, &m, rsa_priv), CKR_MECHANISM_PARAM_INVALID);
    op.mgf = CKG_MGF1_SHA256;
    op.source = 2;
    CU_ASSERT_EQUAL(p11->C_DecryptInit(sess, &m, rsa_priv), CKR_MECHANISM_PARAM_INVALID);
    op.source = 0; /* "no source" with a label makes no sense */
    op.pSourceData = "ABC";
    op.ulSourceDataLen = 3;
    CU_ASSERT_EQUAL(p11->C_DecryptInit(sess, &m, rsa_priv), CKR_MECHANISM_PARAM_INVALID);
    op.source = CKZ_DATA_SPECIFIED;
    op.pSourceData = NULL;
    CU_ASSERT_EQUAL(p11->C_DecryptInit(sess, &m, rsa_priv), CKR_MECHANISM_PARAM_INVALID);
    m.ulParameterLen = 8;
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, rsa_pub), CKR_MECHANISM_PARAM_INVALID);
    m.pParameter = NULL;
    m.ulParameterLen = 0;
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &m, rsa_pub), CKR_MECHANISM_PARAM_INVALID);
}

static void test_rsa_pkcs1_and_raw_decrypt_keep_lengths(void)
{
    CK_MECHANISM pkcs = {CKM_RSA_PKCS, NULL, 0}, x509 = {CKM_RSA_X_509, NULL, 0};
    EVP_PKEY *pub = rsa_public(rsa_pub);
    unsigned char msg[256], ct[512], pt[512];
    CK_ULONG ptlen = sizeof(pt);
    EVP_PKEY_CTX *c;
    size_t clen = sizeof(ct);
    int ctlen;

    CU_ASSERT_PTR_NOT_NULL_FATAL(pub);
    RAND_bytes(msg, sizeof(msg));
    ctlen = openssl_oaep(pub, NULL, NULL, NULL, msg, 10, ct);
    CU_ASSERT_EQUAL_FATAL(ctlen, 256);
    CU_ASSERT_EQUAL(decrypt(&pkcs, rsa_priv, ct, 256, pt, &ptlen), CKR_OK);
    CU_ASSERT_EQUAL(ptlen, 10);
    CU_ASSERT_EQUAL(memcmp(pt, msg, 10), 0);
    /* A buffer of the plaintext's size is enough, one byte less is not. */
    ptlen = 9;
    CU_ASSERT_EQUAL(decrypt(&pkcs, rsa_priv, ct, 256, pt, &ptlen), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(ptlen, 10);
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, ct, 256, pt, &ptlen), CKR_OK);
    CU_ASSERT_EQUAL(memcmp(pt, msg, 10), 0);
    /* Raw RSA: a modulus-sized block with a leading zero comes back whole. */
    msg[0] = 0;
    c = EVP_PKEY_CTX_new(pub, NULL);
    CU_ASSERT_FATAL(EVP_PKEY_encrypt_init(c) > 0 &&
                    EVP_PKEY_CTX_set_rsa_padding(c, RSA_NO_PADDING) > 0 &&
                    EVP_PKEY_encrypt(c, ct, &clen, msg, 256) > 0);
    EVP_PKEY_CTX_free(c);
    ptlen = sizeof(pt);
    CU_ASSERT_EQUAL(decrypt(&x509, rsa_priv, ct, (CK_ULONG)clen, pt, &ptlen), CKR_OK);
    CU_ASSERT_EQUAL(ptlen, 256);
    CU_ASSERT_EQUAL(memcmp(pt, msg, 256), 0);
    /* Garbage and wrong lengths. */
    ct[0] ^= 0x80;
    ptlen = sizeof(pt);
    CU_ASSERT_EQUAL(decrypt(&pkcs, rsa_priv, ct, 255, pt, &ptlen), CKR_ENCRYPTED_DATA_LEN_RANGE);
    ptlen = sizeof(pt);
    RAND_bytes(ct + 1, 255);
    ct[0] = 0x10;
    CU_ASSERT_EQUAL(decrypt(&pkcs, rsa_priv, ct, 256, pt, &ptlen), CKR_ENCRYPTED_DATA_INVALID);
    EVP_PKEY_free(pub);
}

/* ---- ECDSA ----------------------------------------------------------------------------------- */

static void test_ecdsa_signatures_verify_in_openssl(void)
{
    static const CK_MECHANISM_TYPE mechs[][2] = {
        {CKM_ECDSA_SHA1, CKM_SHA_1},    {CKM_ECDSA_SHA224, CKM_SHA224},
        {CKM_ECDSA_SHA256, CKM_SHA256}, {CKM_ECDSA_SHA384, CKM_SHA384},
        {CKM_ECDSA_SHA512, CKM_SHA512},
    };
    struct {
        CK_OBJECT_HANDLE pub, priv;
        const char *group;
        CK_ULONG siglen;
    } keys[] = {
        {ec256_pub, ec256_priv, "P-256", 64},
        {ec384_pub, ec384_priv, "P-384", 96},
    };
    unsigned char data[123], hash[48], sig[128];
    CK_ULONG len;

    RAND_bytes(data, sizeof(data));
    for (size_t k = 0; k < 2; k++) {
        EVP_PKEY *pub = ec_public(keys[k].pub, keys[k].group);
        CK_MECHANISM raw = {CKM_ECDSA, NULL, 0};
        CU_ASSERT_PTR_NOT_NULL_FATAL(pub);
        for (size_t i = 0; i < sizeof(mechs) / sizeof(mechs[0]); i++) {
            CK_MECHANISM m = {mechs[i][0], NULL, 0};
            len = sizeof(sig);
            CU_ASSERT_EQUAL(sign(&m, keys[k].priv, data, sizeof(data), sig, &len), CKR_OK);
            CU_ASSERT_EQUAL(len, keys[k].siglen);
            CU_ASSERT_TRUE(
                openssl_verifies(pub, md_of(mechs[i][1]), -1, data, sizeof(data), sig, len));
            CU_ASSERT_EQUAL(verify(&m, keys[k].pub, data, sizeof(data), sig, len), CKR_OK);
            sig[len - 1] ^= 1;
            CU_ASSERT_EQUAL(verify(&m, keys[k].pub, data, sizeof(data), sig, len),
                            CKR_SIGNATURE_INVALID);
            CU_ASSERT_EQUAL(verify(&m, keys[k].pub, data, sizeof(data), sig, len - 2),
                            CKR_SIGNATURE_LEN_RANGE);
        }
        /* CKM_ECDSA signs the caller's hash. */
        SHA384(data, sizeof(data), hash);
        len = sizeof(sig);
        CU_ASSERT_EQUAL(sign(&raw, keys[k].priv, hash, 48, sig, &len), CKR_OK);
        CU_ASSERT_TRUE(openssl_verifies(pub, EVP_sha384(), -1, data, sizeof(data), sig, len));
        CU_ASSERT_EQUAL(verify(&raw, keys[k].pub, hash, 48, sig, len), CKR_OK);
        len = sizeof(sig);
        CU_ASSERT_EQUAL(sign(&raw, keys[k].priv, hash, 0, sig, &len), CKR_DATA_LEN_RANGE);
        /* Multi-part signing with the hash-and-sign mechanism. */
        {
            CK_MECHANISM m = {CKM_ECDSA_SHA256, NULL, 0};
            CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(sess, &m, keys[k].priv), CKR_OK);
            CU_ASSERT_EQUAL(p11->C_SignUpdate(sess, data, 50), CKR_OK);
            CU_ASSERT_EQUAL(p11->C_SignUpdate(sess, data + 50, sizeof(data) - 50), CKR_OK);
            len = sizeof(sig);
            CU_ASSERT_EQUAL(p11->C_SignFinal(sess, sig, &len), CKR_OK);
            CU_ASSERT_TRUE(openssl_verifies(pub, EVP_sha256(), -1, data, sizeof(data), sig, len));
        }
        EVP_PKEY_free(pub);
    }
}

/* CKM_HF_ECDSA_DER: the caller's hash signed into X9.62 DER, which OpenSSL verifies as it is;
 * the length query gives the curve's largest DER signature; sign only, EC keys only. */
static void test_ecdsa_der_signatures_verify_in_openssl(void)
{
    struct {
        CK_OBJECT_HANDLE pub, priv;
        const char *group;
        CK_ULONG der_max;
        size_t hash_len;
    } keys[] = {
        {ec256_pub, ec256_priv, "P-256", 72, 32},
        {ec384_pub, ec384_priv, "P-384", 104, 48},
    };
    CK_MECHANISM der = {CKM_HF_ECDSA_DER, NULL, 0};
    CK_MECHANISM_INFO info;
    CK_SESSION_INFO si;
    unsigned char data[77], hash[48], sig[128];
    CK_ULONG len;

    CU_ASSERT_EQUAL_FATAL(p11->C_GetSessionInfo(sess, &si), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(si.slotID, CKM_HF_ECDSA_DER, &info), CKR_OK);
    CU_ASSERT_TRUE((info.flags & CKF_SIGN) != 0);
    CU_ASSERT_FALSE((info.flags & CKF_VERIFY) != 0);
    RAND_bytes(data, sizeof(data));
    for (size_t k = 0; k < 2; k++) {
        EVP_PKEY *pub = ec_public(keys[k].pub, keys[k].group);
        const EVP_MD *md = keys[k].hash_len == 32 ? EVP_sha256() : EVP_sha384();
        EVP_PKEY_CTX *vc = NULL;
        CU_ASSERT_PTR_NOT_NULL_FATAL(pub);
        EVP_Digest(data, sizeof(data), hash, NULL, md, NULL);
        CU_ASSERT_EQUAL_FATAL(p11->C_SignInit(sess, &der, keys[k].priv), CKR_OK);
        len = 0;
        CU_ASSERT_EQUAL(p11->C_Sign(sess, hash, keys[k].hash_len, NULL, &len), CKR_OK);
        CU_ASSERT_EQUAL(len, keys[k].der_max);
        len = 8;
        CU_ASSERT_EQUAL(p11->C_Sign(sess, hash, keys[k].hash_len, sig, &len), CKR_BUFFER_TOO_SMALL);
        len = sizeof(sig);
        CU_ASSERT_EQUAL(p11->C_Sign(sess, hash, keys[k].hash_len, sig, &len), CKR_OK);
        CU_ASSERT_TRUE(len > 8 && len <= keys[k].der_max);
        CU_ASSERT_EQUAL(sig[0], 0x30); /* a SEQUENCE, not r || s */
        vc = EVP_PKEY_CTX_new(pub, NULL);
        CU_ASSERT_EQUAL(EVP_PKEY_verify_init(vc), 1);
        CU_ASSERT_EQUAL(EVP_PKEY_verify(vc, sig, len, hash, keys[k].hash_len), 1);
        hash[0] ^= 1;
        CU_ASSERT_EQUAL(EVP_PKEY_verify(vc, sig, len, hash, keys[k].hash_len), 0);
        EVP_PKEY_CTX_free(vc);
        /* Verifying stays with CKM_ECDSA (r || s) or OpenSSL itself. */
        CU_ASSERT_EQUAL(p11->C_VerifyInit(sess, &der, keys[k].pub), CKR_MECHANISM_INVALID);
        EVP_PKEY_free(pub);
    }
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &der, rsa_priv), CKR_KEY_TYPE_INCONSISTENT);
}

/* ---- digests --------------------------------------------------------------------------------- */

static void test_digests_match_openssl(void)
{
    static const CK_MECHANISM_TYPE mechs[] = {CKM_SHA_1, CKM_SHA224, CKM_SHA256, CKM_SHA384,
                                              CKM_SHA512};
    unsigned char data[1000], want[64], got[64];
    unsigned int wlen;
    CK_ULONG len;

    RAND_bytes(data, sizeof(data));
    for (size_t i = 0; i < sizeof(mechs) / sizeof(mechs[0]); i++) {
        CK_MECHANISM m = {mechs[i], NULL, 0};
        EVP_Digest(data, sizeof(data), want, &wlen, md_of(mechs[i]), NULL);
        CU_ASSERT_EQUAL_FATAL(p11->C_DigestInit(sess, &m), CKR_OK);
        len = 0;
        CU_ASSERT_EQUAL(p11->C_Digest(sess, data, sizeof(data), NULL, &len), CKR_OK);
        CU_ASSERT_EQUAL(len, wlen);
        len = 1;
        CU_ASSERT_EQUAL(p11->C_Digest(sess, data, sizeof(data), got, &len), CKR_BUFFER_TOO_SMALL);
        CU_ASSERT_EQUAL(len, wlen);
        CU_ASSERT_EQUAL(p11->C_Digest(sess, data, sizeof(data), got, &len), CKR_OK);
        CU_ASSERT_EQUAL(memcmp(got, want, wlen), 0);
        /* Multi-part, in uneven pieces. */
        CU_ASSERT_EQUAL_FATAL(p11->C_DigestInit(sess, &m), CKR_OK);
        CU_ASSERT_EQUAL(p11->C_DigestUpdate(sess, data, 5), CKR_OK);
        CU_ASSERT_EQUAL(p11->C_DigestUpdate(sess, data + 5, 0), CKR_OK);
        CU_ASSERT_EQUAL(p11->C_DigestUpdate(sess, data + 5, sizeof(data) - 5), CKR_OK);
        len = sizeof(got);
        memset(got, 0, sizeof(got));
        CU_ASSERT_EQUAL(p11->C_DigestFinal(sess, got, &len), CKR_OK);
        CU_ASSERT_EQUAL(len, wlen);
        CU_ASSERT_EQUAL(memcmp(got, want, wlen), 0);
    }
    /* C_DigestKey needs a digest in progress (test-module-symmetric.c runs one). */
    CU_ASSERT_EQUAL(p11->C_DigestKey(sess, aes), CKR_OPERATION_NOT_INITIALIZED);
}

/* ---- usage mask and KMIP state --------------------------------------------------------------- */

static void test_usage_mask_is_enforced_and_refusals_audited(void)
{
    CK_GCM_PARAMS gp = gcm_params(iv12, 12, NULL, 0, 128);
    CK_MECHANISM gcm = {CKM_AES_GCM, &gp, sizeof(gp)};
    CK_MECHANISM kwp = {CKM_AES_KEY_WRAP_KWP, NULL, 0};
    CK_MECHANISM pkcs = {CKM_SHA256_RSA_PKCS, NULL, 0};
    unsigned char ct[64];
    CK_ULONG len = sizeof(ct);
    char uuid[HF_UUID_LEN + 1];

    key_uuid(aes_enc, uuid);
    CU_ASSERT_EQUAL(encrypt(&gcm, aes_enc, msg32, 32, ct, &len), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DecryptInit(sess, &gcm, aes_enc), CKR_KEY_FUNCTION_NOT_PERMITTED);
    CU_ASSERT_TRUE(audit_has("decrypt", uuid, CKR_KEY_FUNCTION_NOT_PERMITTED));
    len = sizeof(ct);
    CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &kwp, aes_enc, aes, ct, &len),
                    CKR_KEY_FUNCTION_NOT_PERMITTED);
    /* A public key never signs or decrypts. */
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &pkcs, rsa_pub), CKR_KEY_FUNCTION_NOT_PERMITTED);
    pkcs.mechanism = CKM_RSA_PKCS;
    CU_ASSERT_EQUAL(p11->C_DecryptInit(sess, &pkcs, rsa_pub), CKR_KEY_FUNCTION_NOT_PERMITTED);
    /* The refusal left nothing active. */
    len = sizeof(ct);
    CU_ASSERT_EQUAL_FATAL(encrypt(&gcm, aes, msg32, 32, ct, &len), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DecryptInit(sess, &gcm, aes), CKR_OK);
    len = sizeof(ct);
    CU_ASSERT_EQUAL(p11->C_Decrypt(sess, ct, 48, ct, &len), CKR_OK);
}

/* Raw RSA with a private key is decryption and signing at once: it needs both usages. */
static void test_raw_rsa_needs_decrypt_and_sign(void)
{
    CK_MECHANISM raw = {CKM_RSA_X_509, NULL, 0}, pkcs = {CKM_RSA_PKCS, NULL, 0};
    CK_OBJECT_HANDLE dec_pub, dec, sig_pub, sig;
    unsigned char ct[256], pt[256];
    CK_ULONG len = sizeof(ct), ptlen = sizeof(pt);

    CU_ASSERT_EQUAL_FATAL(rsa_create_one_use("t-rsa-dec-only", true, &dec_pub, &dec), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(rsa_create_one_use("t-rsa-sig-only", false, &sig_pub, &sig), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DecryptInit(sess, &raw, dec), CKR_KEY_FUNCTION_NOT_PERMITTED);
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &raw, sig), CKR_KEY_FUNCTION_NOT_PERMITTED);
    /* Each still does its own job with a padded mechanism. */
    CU_ASSERT_EQUAL(p11->C_SignInit(sess, &pkcs, sig), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Sign(sess, (CK_BYTE_PTR)msg32, 32, ct, &len), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_VerifyInit(sess, &pkcs, sig_pub), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Verify(sess, (CK_BYTE_PTR)msg32, 32, ct, len), CKR_OK);
    len = sizeof(ct);
    CU_ASSERT_EQUAL(encrypt(&pkcs, dec_pub, msg32, 32, ct, &len), CKR_OK);
    CU_ASSERT_EQUAL(decrypt(&pkcs, dec, ct, len, pt, &ptlen), CKR_OK);
    CU_ASSERT_EQUAL(ptlen, 32);
    CU_ASSERT_EQUAL(memcmp(pt, msg32, 32), 0);
}

/* KMIP: a deactivated key still decrypts old data but encrypts nothing new. The change is made
 * by another opener of the store (as the CLI would), and the module sees it within
 * HF_REVALIDATE_MS. */
static void test_deactivated_key_decrypts_but_does_not_encrypt(void)
{
    CK_GCM_PARAMS gp = gcm_params(iv12, 12, NULL, 0, 128);
    CK_MECHANISM gcm = {CKM_AES_GCM, &gp, sizeof(gp)};
    struct hf_actor who = {"cli", "test"};
    struct hf_core *core = NULL;
    CK_OBJECT_HANDLE h;
    unsigned char ct[64], pt[64];
    CK_ULONG len = sizeof(ct), ptlen = sizeof(pt);

    CU_ASSERT_EQUAL_FATAL(aes_create("t-aes-state", true, false, &h), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(encrypt(&gcm, h, msg32, 32, ct, &len), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_key_set_state(core, "t-aes-state", HF_STATE_DEACTIVATED, &who), CKR_OK);
    hf_core_close(core);
    usleep((HF_REVALIDATE_MS_FOR_TEST + 200) * 1000);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &gcm, h), CKR_KEY_FUNCTION_NOT_PERMITTED);
    CU_ASSERT_EQUAL(decrypt(&gcm, h, ct, len, pt, &ptlen), CKR_OK);
    CU_ASSERT_EQUAL(ptlen, 32);
    CU_ASSERT_EQUAL(memcmp(pt, msg32, 32), 0);
}

/* The HYOK kill switch: a request context naming a blocked link stops the key's use, and the
 * refusal is on record with the caller's request id. */
static void test_blocked_link_refuses_and_is_audited(void)
{
    CK_GCM_PARAMS gp = gcm_params(iv12, 12, NULL, 0, 128);
    CK_MECHANISM gcm = {CKM_AES_GCM, &gp, sizeof(gp)};
    struct hf_actor who = {"cli", "test"};
    HF_REQUEST_CONTEXT ctx = {.api = "aws-xks",
                              .request_id = "req-blocked-1",
                              .link_type = "aws-xks",
                              .link_id = "ext-blocked"};
    CK_C_GetInterface get = (CK_C_GetInterface)hf_test_module_sym(&mod, "C_GetInterface");
    CK_INTERFACE_PTR iface = NULL;
    const HF_FUNCTION_LIST *hf;
    struct hf_core *core = NULL;
    char want_rv[40];

    CU_ASSERT_PTR_NOT_NULL_FATAL(get);
    CU_ASSERT_EQUAL_FATAL(get((CK_UTF8CHAR_PTR)HF_INTERFACE_NAME, NULL, &iface, 0), CKR_OK);
    hf = iface->pFunctionList;
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_link_add(core, "aws-xks", "ext-blocked", "t-aes-enc", &who), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_link_set_blocked(core, "aws-xks", "ext-blocked", true, &who), CKR_OK);
    hf_core_close(core);
    /* A request context is the gateway's to attach: its login, for this test. */
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(sess, &ctx), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(p11->C_Logout(sess), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(sess, CKU_USER, (CK_UTF8CHAR_PTR)HF_TEST_GATEWAY_PIN,
                                       strlen(HF_TEST_GATEWAY_PIN)),
                          CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf->HF_SetRequestContext(sess, &ctx), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &gcm, aes_enc), CKR_HF_LINK_BLOCKED);
    snprintf(want_rv, sizeof(want_rv), "\"result\":\"0x%lx\"", (unsigned long)CKR_HF_LINK_BLOCKED);
    CU_ASSERT_TRUE(audit_line_has("\"request_id\":\"req-blocked-1\"", want_rv,
                                  "\"api\":\"aws-xks\"", (const char *)NULL));
    /* The context was for that one operation: the next call goes through. */
    CU_ASSERT_EQUAL(p11->C_EncryptInit(sess, &gcm, aes_enc), CKR_OK);
    {
        unsigned char ct[64];
        CK_ULONG len = sizeof(ct);
        CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)msg32, 32, ct, &len), CKR_OK);
    }
    CU_ASSERT_EQUAL(p11->C_Logout(sess), CKR_OK);
    CU_ASSERT_EQUAL(
        p11->C_Login(sess, CKU_USER, (CK_UTF8CHAR_PTR)HF_TEST_USER_PIN, strlen(HF_TEST_USER_PIN)),
        CKR_OK);
}

/* ---- wrap and unwrap ------------------------------------------------------------------------- */

static CK_RV aes_unwrap(CK_MECHANISM *m, CK_OBJECT_HANDLE kek, const unsigned char *blob,
                        CK_ULONG len, const char *label, CK_OBJECT_HANDLE *h)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, &yes, 1},
        {CKA_ENCRYPT, &yes, 1},
        {CKA_DECRYPT, &yes, 1},
    };

    return p11->C_UnwrapKey(sess, m, kek, (CK_BYTE_PTR)blob, len, tmpl,
                            sizeof(tmpl) / sizeof(tmpl[0]), h);
}

/* Both keys encrypt and decrypt each other's GCM output: they are the same key. */
static bool same_aes_key(CK_OBJECT_HANDLE a, CK_OBJECT_HANDLE b)
{
    CK_GCM_PARAMS gp = gcm_params(iv12, 12, NULL, 0, 128);
    CK_MECHANISM gcm = {CKM_AES_GCM, &gp, sizeof(gp)};
    unsigned char ct[64], pt[64];
    CK_ULONG len = sizeof(ct), ptlen = sizeof(pt);

    return encrypt(&gcm, a, msg32, 32, ct, &len) == CKR_OK &&
           decrypt(&gcm, b, ct, len, pt, &ptlen) == CKR_OK && ptlen == 32 &&
           memcmp(pt, msg32, 32) == 0;
}

static void test_wrap_unwrap_aes_under_aes_matches_openssl(void)
{
    CK_MECHANISM kwp = {CKM_AES_KEY_WRAP_KWP, NULL, 0};
    CK_ULONG klen = 0, tlen = 0, len = 0;
    unsigned char *kek = attr_get(aes, CKA_VALUE, &klen),
                  *val = attr_get(aes_enc, CKA_VALUE, &tlen);
    unsigned char blob[64], ref[64];
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    CK_OBJECT_HANDLE h = 0;
    char uuid[HF_UUID_LEN + 1];
    int n = 0;

    CU_ASSERT_FATAL(kek != NULL && val != NULL);
    key_uuid(aes, uuid);
    CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &kwp, aes, aes_enc, NULL, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 40);
    len = 39;
    CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &kwp, aes, aes_enc, blob, &len), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(len, 40);
    CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &kwp, aes, aes_enc, blob, &len), CKR_OK);
    CU_ASSERT_TRUE(audit_has("wrap", uuid, CKR_OK));
    /* OpenSSL's RFC 5649 under the exported KEK gives the same bytes. */
    EVP_CIPHER_CTX_set_flags(c, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
    CU_ASSERT(EVP_EncryptInit_ex(c, EVP_aes_256_wrap_pad(), NULL, kek, NULL) &&
              EVP_EncryptUpdate(c, ref, &n, val, (int)tlen));
    CU_ASSERT_EQUAL(n, 40);
    CU_ASSERT_EQUAL(memcmp(blob, ref, 40), 0);
    CU_ASSERT_EQUAL(aes_unwrap(&kwp, aes, blob, len, "t-unwrapped", &h), CKR_OK);
    CU_ASSERT_TRUE(same_aes_key(aes_enc, h));
    CU_ASSERT_TRUE(audit_has("unwrap", uuid, CKR_OK));
    /* A damaged blob, a short one, and a template that says nothing about the key. */
    blob[7] ^= 1;
    CU_ASSERT_EQUAL(aes_unwrap(&kwp, aes, blob, len, "t-unwrapped-2", &h), CKR_WRAPPED_KEY_INVALID);
    CU_ASSERT_EQUAL(aes_unwrap(&kwp, aes, blob, 12, "t-unwrapped-3", &h),
                    CKR_WRAPPED_KEY_LEN_RANGE);
    blob[7] ^= 1;
    CU_ASSERT_EQUAL(p11->C_UnwrapKey(sess, &kwp, aes, blob, len, NULL, 0, &h),
                    CKR_TEMPLATE_INCOMPLETE);
    {
        CK_KEY_TYPE des = CKK_DES3;
        CK_ATTRIBUTE t[] = {{CKA_KEY_TYPE, &des, sizeof(des)}};
        CU_ASSERT_EQUAL(p11->C_UnwrapKey(sess, &kwp, aes, blob, len, t, 1, &h),
                        CKR_TEMPLATE_INCONSISTENT);
    }
    EVP_CIPHER_CTX_free(c);
    free(kek);
    free(val);
}

static void test_wrap_refuses_unexportable_keys_and_bad_handles(void)
{
    CK_MECHANISM kwp = {CKM_AES_KEY_WRAP_KWP, NULL, 0}, gcm = {CKM_AES_GCM, NULL, 0};
    unsigned char blob[64];
    CK_ULONG len = sizeof(blob);

    CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &kwp, aes, aes_sealed, blob, &len), CKR_KEY_UNEXTRACTABLE);
    len = sizeof(blob);
    CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &kwp, aes, 0x7ffffff0, blob, &len),
                    CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &kwp, 0x7ffffff0, aes, blob, &len),
                    CKR_WRAPPING_KEY_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &kwp, ec256_pub, aes, blob, &len),
                    CKR_WRAPPING_KEY_TYPE_INCONSISTENT);
    /* GCM cannot wrap; a public key is never wrapped. */
    CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &gcm, aes, aes_enc, blob, &len), CKR_MECHANISM_INVALID);
    CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &kwp, aes, rsa_pub, blob, &len), CKR_KEY_NOT_WRAPPABLE);
    CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &kwp, aes, aes_enc, blob, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_DeriveKey(sess, &kwp, aes, NULL, 0, NULL), CKR_ARGUMENTS_BAD);
}

static void test_wrap_unwrap_aes_under_rsa_oaep(void)
{
    CK_RSA_PKCS_OAEP_PARAMS op = {CKM_SHA256, CKG_MGF1_SHA256, CKZ_DATA_SPECIFIED, NULL, 0};
    CK_MECHANISM m = {CKM_RSA_PKCS_OAEP, &op, sizeof(op)};
    unsigned char blob[512];
    CK_ULONG len = sizeof(blob);
    CK_OBJECT_HANDLE h = 0;

    CU_ASSERT_EQUAL_FATAL(p11->C_WrapKey(sess, &m, rsa_pub, aes_enc, blob, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 256);
    CU_ASSERT_EQUAL_FATAL(aes_unwrap(&m, rsa_priv, blob, len, "t-unwrapped-rsa", &h), CKR_OK);
    CU_ASSERT_TRUE(same_aes_key(aes_enc, h));
}

static void test_wrap_unwrap_rsa_private_key_under_aes(void)
{
    CK_MECHANISM kwp = {CKM_AES_KEY_WRAP_PAD, NULL, 0}, rsa = {CKM_SHA256_RSA_PKCS, NULL, 0};
    CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
    CK_KEY_TYPE type = CKK_RSA;
    const char *label = "t-rsa-unwrapped";
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_TOKEN, &yes, 1},
        {CKA_SIGN, &yes, 1},
    };
    unsigned char *blob = NULL, sig[256], data[] = "signed by the unwrapped key";
    CK_ULONG len = 0, siglen = sizeof(sig);
    CK_OBJECT_HANDLE h = 0;

    CU_ASSERT_EQUAL_FATAL(p11->C_WrapKey(sess, &kwp, aes, rsa_priv, NULL, &len), CKR_OK);
    CU_ASSERT_TRUE(len > 1000);
    blob = malloc(len);
    CU_ASSERT_EQUAL_FATAL(p11->C_WrapKey(sess, &kwp, aes, rsa_priv, blob, &len), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_UnwrapKey(sess, &kwp, aes, blob, len, tmpl, 5, &h), CKR_OK);
    CU_ASSERT_EQUAL(sign(&rsa, h, data, sizeof(data), sig, &siglen), CKR_OK);
    /* Same key: the original's public half verifies it. */
    CU_ASSERT_EQUAL(verify(&rsa, rsa_pub, data, sizeof(data), sig, siglen), CKR_OK);
    /* RFC 3394 needs whole blocks: a P-256 PKCS#8 (138 or 121 bytes) is not made of them. */
    kwp.mechanism = CKM_AES_KEY_WRAP;
    len = 0;
    CU_ASSERT_EQUAL(p11->C_WrapKey(sess, &kwp, aes, ec256_priv, NULL, &len), CKR_KEY_SIZE_RANGE);
    free(blob);
}

static void test_unwrap_needs_a_logged_in_rw_session(void)
{
    CK_MECHANISM kwp = {CKM_AES_KEY_WRAP_KWP, NULL, 0};
    CK_SESSION_INFO si;
    CK_SESSION_HANDLE ro;
    unsigned char blob[40] = {0};
    CK_OBJECT_HANDLE h;
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_ATTRIBUTE tmpl[] = {{CKA_CLASS, &cls, sizeof(cls)}};

    CU_ASSERT_EQUAL_FATAL(p11->C_GetSessionInfo(sess, &si), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_OpenSession(si.slotID, CKF_SERIAL_SESSION, NULL, NULL, &ro),
                          CKR_OK);
    CU_ASSERT_EQUAL(p11->C_UnwrapKey(ro, &kwp, aes, blob, sizeof(blob), tmpl, 1, &h),
                    CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_UnwrapKey(ro, &kwp, aes, blob, sizeof(blob), tmpl, 1, NULL),
                    CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
}

/* ---- random ---------------------------------------------------------------------------------- */

static void test_random_bytes_and_seed(void)
{
    unsigned char a[100], b[100], seed[100] = {0};

    CU_ASSERT_EQUAL(p11->C_SeedRandom(sess, seed, sizeof(seed)), CKR_RANDOM_SEED_NOT_SUPPORTED);
    CU_ASSERT_EQUAL(p11->C_GenerateRandom(sess, a, 0), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GenerateRandom(sess, NULL, 0), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GenerateRandom(sess, a, sizeof(a)), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GenerateRandom(sess, b, sizeof(b)), CKR_OK);
    CU_ASSERT_NOT_EQUAL(memcmp(a, b, sizeof(a)), 0);
    CU_ASSERT_EQUAL(p11->C_GenerateRandom(sess, NULL, 10), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_GenerateRandom(0, a, 10), CKR_SESSION_HANDLE_INVALID);
}

/* ---- audit failure (last: it breaks the log for the rest of the process) --------------------- */

/* A key operation whose audit record cannot be written releases nothing. The log is made
 * unwritable by capping this process's file size at the log's current size. That size holds the
 * space the log has claimed ahead (audit.c: chunks), which still takes records: decryptions go
 * through until the claim of the next chunk fails, and the one that fails releases nothing. */
static void test_unrecordable_operation_releases_no_output(void)
{
    CK_GCM_PARAMS gp = gcm_params(iv12, 12, NULL, 0, 128);
    CK_MECHANISM gcm = {CKM_AES_GCM, &gp, sizeof(gp)};
    unsigned char ct[64], pt[64], zero[64] = {0};
    CK_ULONG len = sizeof(ct), ptlen = sizeof(pt);
    struct rlimit old, cap;
    struct stat st;
    CK_RV rv = CKR_OK;
    int ok = 0;

    CU_ASSERT_EQUAL_FATAL(encrypt(&gcm, aes, msg32, 32, ct, &len), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(stat(env.cfg.audit_path, &st), 0);
    CU_ASSERT_EQUAL_FATAL(getrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_IGN);
    cap = old;
    cap.rlim_cur = (rlim_t)st.st_size;
    CU_ASSERT_EQUAL_FATAL(setrlimit(RLIMIT_FSIZE, &cap), 0);
    while (rv == CKR_OK && ok < 1000000) {
        memset(pt, 0, sizeof(pt));
        ptlen = sizeof(pt);
        if ((rv = decrypt(&gcm, aes, ct, len, pt, &ptlen)) == CKR_OK) ok++;
    }
    CU_ASSERT_EQUAL(rv, CKR_HF_AUDIT_FAILED);
    CU_ASSERT(ok < st.st_size / 100); /* no more than the claimed space could hold */
    CU_ASSERT_EQUAL(memcmp(pt, zero, 32), 0);
    ptlen = sizeof(pt);
    CU_ASSERT_EQUAL(decrypt(&gcm, aes, ct, len, pt, &ptlen), CKR_HF_AUDIT_FAILED);
    CU_ASSERT_EQUAL(memcmp(pt, zero, 32), 0);
    len = sizeof(ct);
    memset(ct, 0, sizeof(ct));
    CU_ASSERT_EQUAL(encrypt(&gcm, aes, msg32, 32, ct, &len), CKR_HF_AUDIT_FAILED);
    CU_ASSERT_EQUAL(memcmp(ct, zero, sizeof(ct)), 0);
    /* Size queries do no key work and need no record. */
    CU_ASSERT_EQUAL_FATAL(p11->C_EncryptInit(sess, &gcm, aes), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)msg32, 32, NULL, &len), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Encrypt(sess, (CK_BYTE_PTR)msg32, 32, ct, &len), CKR_HF_AUDIT_FAILED);
    setrlimit(RLIMIT_FSIZE, &old);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"gcm round trip restores the plaintext", test_gcm_round_trip_restores_the_plaintext},
        {"gcm matches openssl both ways", test_gcm_matches_openssl_both_ways},
        {"gcm tamper is refused and audited", test_gcm_tamper_is_refused_and_audited},
        {"gcm multi-part equals single-part", test_gcm_multipart_equals_single_part},
        {"gcm two-call convention", test_gcm_two_call_convention},
        {"gcm parameters are checked", test_gcm_parameters_are_checked},
        {"calls without init are refused", test_calls_without_init_are_refused},
        {"operations of each kind run side by side", test_operations_of_each_kind_run_side_by_side},
        {"wrong mechanism or key is refused", test_wrong_mechanism_or_key_is_refused},
        {"mechanism info reports sizes and CKF_HW", test_mechanism_info_reports_sizes_and_hw},
        {"kw matches the RFC 3394 vector", test_kw_matches_rfc3394_vector},
        {"kwp matches RFC 5649 vectors under both names",
         test_kwp_matches_rfc5649_vectors_under_both_names},
        {"rsa pkcs1 signatures verify in openssl", test_rsa_pkcs1_signatures_verify_in_openssl},
        {"rsa raw mechanisms sign digestinfo and blocks",
         test_rsa_raw_mechanisms_sign_digestinfo_and_blocks},
        {"rsa pss signatures verify in openssl", test_rsa_pss_signatures_verify_in_openssl},
        {"rsa pss parameters are checked", test_rsa_pss_parameters_are_checked},
        {"rsa oaep decrypts what openssl encrypts", test_rsa_oaep_decrypts_what_openssl_encrypts},
        {"rsa oaep parameters are checked", test_rsa_oaep_parameters_are_checked},
        {"rsa pkcs1 and raw decrypt keep lengths", test_rsa_pkcs1_and_raw_decrypt_keep_lengths},
        {"ecdsa signatures verify in openssl", test_ecdsa_signatures_verify_in_openssl},
        {"CKM_HF_ECDSA_DER signatures are DER that openssl verifies",
         test_ecdsa_der_signatures_verify_in_openssl},
        {"digests match openssl", test_digests_match_openssl},
        {"usage mask is enforced and refusals audited",
         test_usage_mask_is_enforced_and_refusals_audited},
        {"raw RSA needs decrypt and sign", test_raw_rsa_needs_decrypt_and_sign},
        {"deactivated key decrypts but does not encrypt",
         test_deactivated_key_decrypts_but_does_not_encrypt},
        {"blocked link refuses and is audited", test_blocked_link_refuses_and_is_audited},
        {"wrap/unwrap aes under aes matches openssl",
         test_wrap_unwrap_aes_under_aes_matches_openssl},
        {"wrap refuses unexportable keys and bad handles",
         test_wrap_refuses_unexportable_keys_and_bad_handles},
        {"wrap/unwrap aes under rsa oaep", test_wrap_unwrap_aes_under_rsa_oaep},
        {"wrap/unwrap rsa private key under aes", test_wrap_unwrap_rsa_private_key_under_aes},
        {"unwrap needs a logged-in rw session", test_unwrap_needs_a_logged_in_rw_session},
        {"random bytes and seed", test_random_bytes_and_seed},
        {"unrecordable operation releases no output",
         test_unrecordable_operation_releases_no_output},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"module-crypto", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };

    return hf_test_run(suites);
}
