/* AES block modes, AES-CMAC and HMAC (crypto-sym.h). Algorithms are fetched per call from the
 * core's library context: these modes serve general PKCS#11 callers, not the gateway's hot
 * path, and OpenSSL caches fetched methods per library context. */
#include "hf-build.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "crypto-sym.h"

static const char *aes_bits(size_t keylen)
{
    return keylen == 16 ? "128" : keylen == 24 ? "192" : keylen == 32 ? "256" : NULL;
}

/* The raw AES key of m, or NULL with *rv set. */
static const unsigned char *aes_key(const struct hf_material *m, size_t *keylen, CK_RV *rv)
{
    const unsigned char *key;

    *rv = CKR_KEY_TYPE_INCONSISTENT;
    if (hf_material_alg(m) != HF_ALG_AES) return NULL;
    key = hf_material_secret(m, keylen);
    *rv = CKR_KEY_SIZE_RANGE;
    if (key == NULL || aes_bits(*keylen) == NULL) return NULL;
    *rv = hf_crypto_libctx() != NULL ? CKR_OK : CKR_GENERAL_ERROR;
    return *rv == CKR_OK ? key : NULL;
}

/* Whether inlen bytes of CTR from counter block iv stay within its low ctr_bits: the last block
 * uses counter + blocks - 1, which must not carry out of them (SP 800-38A B.2: counter blocks
 * must be unique; OpenSSL would carry into the nonce bits). */
static bool ctr_is_in_range(const unsigned char *iv, unsigned ctr_bits, size_t inlen)
{
    unsigned char last[HF_AES_BLOCK];
    uint64_t add = inlen == 0 ? 0 : (inlen - 1) / HF_AES_BLOCK;
    unsigned carry = 0;
    bool same;

    if (ctr_bits >= 128) return true; /* the whole block counts, modulo 2^128 */
    memcpy(last, iv, sizeof(last));
    for (int i = HF_AES_BLOCK - 1; i >= 0 && (add != 0 || carry != 0); i--) {
        unsigned sum = last[i] + (unsigned)(add & 0xff) + carry;
        last[i] = (unsigned char)sum;
        carry = sum >> 8;
        add >>= 8;
    }
    if (carry != 0) return false;
    /* The bits above the counter must be unchanged. */
    unsigned whole = (128 - ctr_bits) / 8, part = (128 - ctr_bits) % 8;
    same = memcmp(last, iv, whole) == 0;
    if (same && part != 0) {
        unsigned char mask = (unsigned char)(0xff << (8 - part));
        same = (last[whole] & mask) == (iv[whole] & mask);
    }
    return same;
}

CK_RV hf_aes_cipher_size(enum hf_aes_mode mode, bool enc, const unsigned char *iv,
                         unsigned ctr_bits, size_t inlen, size_t *need)
{
    CK_RV len_rv = enc ? CKR_DATA_LEN_RANGE : CKR_ENCRYPTED_DATA_LEN_RANGE;

    if (inlen > INT_MAX - HF_AES_BLOCK) return len_rv;
    if (mode != HF_AES_ECB && iv == NULL) return CKR_MECHANISM_PARAM_INVALID;
    *need = inlen;
    switch (mode) {
    case HF_AES_ECB:
    case HF_AES_CBC:
        return inlen % HF_AES_BLOCK == 0 ? CKR_OK : len_rv;
    case HF_AES_CBC_PAD:
        if (enc) *need = inlen / HF_AES_BLOCK * HF_AES_BLOCK + HF_AES_BLOCK;
        return enc || (inlen != 0 && inlen % HF_AES_BLOCK == 0) ? CKR_OK : len_rv;
    case HF_AES_CTR:
        if (ctr_bits < 1 || ctr_bits > 128) return CKR_MECHANISM_PARAM_INVALID;
        return ctr_is_in_range(iv, ctr_bits, inlen) ? CKR_OK : len_rv;
    default:
        return CKR_MECHANISM_INVALID;
    }
}

static EVP_CIPHER *cipher_fetch(enum hf_aes_mode mode, size_t keylen)
{
    char name[32];

    snprintf(name, sizeof(name), "AES-%s-%s", aes_bits(keylen),
             mode == HF_AES_ECB   ? "ECB"
             : mode == HF_AES_CTR ? "CTR"
                                  : "CBC");
    return EVP_CIPHER_fetch(hf_crypto_libctx(), name, NULL);
}

/* One pass; *outlen gets what was written. */
static CK_RV cipher_run(EVP_CIPHER *cipher, const unsigned char *key, enum hf_aes_mode mode,
                        bool enc, const unsigned char *iv, const unsigned char *in, size_t inlen,
                        unsigned char *out, size_t *outlen)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int len = 0, flen = 0;
    CK_RV rv = CKR_FUNCTION_FAILED;

    if (ctx == NULL) return CKR_HOST_MEMORY;
    if (!EVP_CipherInit_ex2(ctx, cipher, key, iv, enc ? 1 : 0, NULL)) goto done;
    EVP_CIPHER_CTX_set_padding(ctx, mode == HF_AES_CBC_PAD ? 1 : 0);
    if (inlen != 0 && !EVP_CipherUpdate(ctx, out, &len, in, (int)inlen)) goto done;
    if (!EVP_CipherFinal_ex(ctx, out + len, &flen)) {
        /* Only a CBC-PAD decryption can fail here: its padding is wrong. */
        rv = enc ? CKR_FUNCTION_FAILED : CKR_ENCRYPTED_DATA_INVALID;
        goto done;
    }
    *outlen = (size_t)len + (size_t)flen;
    rv = CKR_OK;
done:
    EVP_CIPHER_CTX_free(ctx);
    return rv;
}

CK_RV hf_aes_cipher(const struct hf_material *m, enum hf_aes_mode mode, bool enc,
                    const unsigned char *iv, unsigned ctr_bits, const unsigned char *in,
                    size_t inlen, unsigned char *out, size_t *outlen)
{
    const unsigned char *key;
    EVP_CIPHER *cipher = NULL;
    size_t keylen, need = 0;
    CK_RV rv;

    if (m == NULL || outlen == NULL || (in == NULL && inlen != 0)) return CKR_ARGUMENTS_BAD;
    if ((key = aes_key(m, &keylen, &rv)) == NULL) return rv;
    if ((rv = hf_aes_cipher_size(mode, enc, iv, ctr_bits, inlen, &need)) != CKR_OK) return rv;
    if (out == NULL || *outlen < need) {
        rv = out == NULL ? CKR_OK : CKR_BUFFER_TOO_SMALL;
        *outlen = need;
        return rv;
    }
    ERR_set_mark();
    cipher = cipher_fetch(mode, keylen);
    rv = cipher == NULL ? CKR_GENERAL_ERROR
                        : cipher_run(cipher, key, mode, enc, iv, in, inlen, out, outlen);
    /* A failed CBC-PAD decryption has written unchecked plaintext. */
    if (rv != CKR_OK) OPENSSL_cleanse(out, need);
    EVP_CIPHER_free(cipher);
    ERR_pop_to_mark();
    return rv;
}

/* One MAC over in with the given algorithm parameters. */
static CK_RV mac_run(const char *alg, const OSSL_PARAM *params, const unsigned char *key,
                     size_t keylen, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t cap, size_t *outlen)
{
    EVP_MAC *mac = NULL;
    EVP_MAC_CTX *ctx = NULL;
    CK_RV rv = CKR_FUNCTION_FAILED;

    if (hf_crypto_libctx() == NULL) return CKR_GENERAL_ERROR;
    ERR_set_mark();
    if ((mac = EVP_MAC_fetch(hf_crypto_libctx(), alg, NULL)) == NULL ||
        (ctx = EVP_MAC_CTX_new(mac)) == NULL) {
        rv = CKR_GENERAL_ERROR;
        goto done;
    }
    if (!EVP_MAC_init(ctx, key, keylen, params)) goto done;
    if (inlen != 0 && !EVP_MAC_update(ctx, in, inlen)) goto done;
    if (!EVP_MAC_final(ctx, out, outlen, cap)) goto done;
    rv = CKR_OK;
done:
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    ERR_pop_to_mark();
    return rv;
}

CK_RV hf_aes_cmac(const struct hf_material *m, const unsigned char *in, size_t inlen,
                  unsigned char out[HF_AES_BLOCK])
{
    const unsigned char *key;
    char cipher[32];
    size_t keylen, len;
    CK_RV rv;

    if (m == NULL || out == NULL || (in == NULL && inlen != 0)) return CKR_ARGUMENTS_BAD;
    if ((key = aes_key(m, &keylen, &rv)) == NULL) return rv;
    snprintf(cipher, sizeof(cipher), "AES-%s-CBC", aes_bits(keylen));
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, cipher, 0),
                           OSSL_PARAM_END};
    return mac_run("CMAC", params, key, keylen, in, inlen, out, HF_AES_BLOCK, &len);
}

CK_RV hf_hmac(const struct hf_material *m, const char *md, const unsigned char *in, size_t inlen,
              unsigned char *out, size_t *outlen)
{
    const unsigned char *key;
    size_t keylen = 0;

    if (m == NULL || md == NULL || out == NULL || outlen == NULL || (in == NULL && inlen != 0))
        return CKR_ARGUMENTS_BAD;
    key = hf_material_secret(m, &keylen);
    if (key == NULL || keylen == 0) return CKR_KEY_TYPE_INCONSISTENT;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)md, 0),
                           OSSL_PARAM_END};
    return mac_run("HMAC", params, key, keylen, in, inlen, out, EVP_MAX_MD_SIZE, outlen);
}
