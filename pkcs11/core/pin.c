#include "hf-build.h"

#include "config.h"
#include "core.h"
#include "log.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rounds of a new record are [token] pin_iterations (100000 by default: login is rare, so
 * every guess at the PIN hashes of a stolen store may cost tens of milliseconds on one core
 * without slowing anyone who knows the PIN). A tampered store must not turn one check into hours
 * of work. */
#define PIN_ITERATIONS_MAX 10000000UL
#define PIN_SALT_LEN 16
#define PIN_HASH_LEN 32
#define PIN_LEN_MIN 4
#define PIN_LEN_MAX 255
#define PIN_SCHEME "pbkdf2-sha256"

static const char *pin_meta_name(enum hf_user user)
{
    return user == HF_USER_SO        ? HF_META_PIN_SO
           : user == HF_USER_GATEWAY ? HF_META_PIN_GATEWAY
                                     : HF_META_PIN_USER;
}

static CK_RV pbkdf2(const char *pin, size_t len, const unsigned char *salt, size_t salt_len,
                    unsigned iter, unsigned char out[PIN_HASH_LEN])
{
    EVP_KDF *kdf = EVP_KDF_fetch(hf_crypto_libctx(), "PBKDF2", NULL);
    EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    OSSL_PARAM params[5];
    char digest[] = "SHA256";
    CK_RV rv = CKR_FUNCTION_FAILED;

    if (ctx == NULL) goto done;
    /* OpenSSL wants a non-NULL pointer even for an empty password. */
    params[0] =
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD, (void *)(len ? pin : ""), len);
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
    params[2] = OSSL_PARAM_construct_uint(OSSL_KDF_PARAM_ITER, &iter);
    params[3] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0);
    params[4] = OSSL_PARAM_construct_end();
    if (EVP_KDF_derive(ctx, out, PIN_HASH_LEN, params) == 1) rv = CKR_OK;
done:
    if (rv != CKR_OK) hf_log_error("PBKDF2 failed (OpenSSL's default provider missing?)");
    EVP_KDF_CTX_free(ctx);
    EVP_KDF_free(kdf);
    return rv;
}

/* Base64 of len bytes into out (which holds 4 * ceil(len / 3) + 1). */
static void b64_encode(const unsigned char *in, size_t len, char *out)
{
    EVP_EncodeBlock((unsigned char *)out, in, (int)len);
}

/* Decodes exactly want bytes from s (standard padded base64), false otherwise. */
static bool b64_decode(const char *s, size_t slen, unsigned char *out, size_t want)
{
    unsigned char buf[64];
    size_t pad = 0;
    int n;

    if (slen == 0 || slen % 4 != 0 || slen / 4 * 3 > sizeof(buf)) return false;
    /* EVP_DecodeBlock counts padding as zero bytes of output: take them off. */
    while (pad < 2 && s[slen - 1 - pad] == '=')
        pad++;
    n = EVP_DecodeBlock(buf, (const unsigned char *)s, (int)slen);
    if (n < 0 || (size_t)n - pad != want) return false;
    memcpy(out, buf, want);
    return true;
}

static bool pin_len_is_valid(size_t len)
{
    return len >= PIN_LEN_MIN && len <= PIN_LEN_MAX;
}

/* Parses "pbkdf2-sha256$ITER$SALT$HASH". */
static bool record_parse(const char *rec, unsigned *iter, unsigned char salt[PIN_SALT_LEN],
                         unsigned char hash[PIN_HASH_LEN])
{
    const char *p = rec, *salt_b64, *hash_b64;
    unsigned long n;
    char *end;

    if (strncmp(p, PIN_SCHEME "$", sizeof(PIN_SCHEME)) != 0) return false;
    p += sizeof(PIN_SCHEME);
    if (*p < '1' || *p > '9') return false;
    n = strtoul(p, &end, 10);
    if (*end != '$' || n > PIN_ITERATIONS_MAX) return false;
    salt_b64 = end + 1;
    hash_b64 = strchr(salt_b64, '$');
    if (hash_b64 == NULL) return false;
    *iter = (unsigned)n;
    return b64_decode(salt_b64, (size_t)(hash_b64 - salt_b64), salt, PIN_SALT_LEN) &&
           b64_decode(hash_b64 + 1, strlen(hash_b64 + 1), hash, PIN_HASH_LEN);
}

CK_RV hf_core_pin_set(struct hf_core *core, enum hf_user user, const char *pin, size_t len)
{
    unsigned char salt[PIN_SALT_LEN], hash[PIN_HASH_LEN];
    char salt_b64[4 * ((PIN_SALT_LEN + 2) / 3) + 1], hash_b64[4 * ((PIN_HASH_LEN + 2) / 3) + 1];
    char rec[sizeof(PIN_SCHEME) + 12 + sizeof(salt_b64) + sizeof(hash_b64)];
    unsigned iter;
    CK_RV rv;

    if (core == NULL || (pin == NULL && len > 0)) return CKR_ARGUMENTS_BAD;
    if (user != HF_USER_SO && user != HF_USER_NORMAL && user != HF_USER_GATEWAY)
        return CKR_USER_TYPE_INVALID;
    if (!pin_len_is_valid(len)) return CKR_PIN_LEN_RANGE;
    rv = hf_random(salt, sizeof(salt));
    if (rv != CKR_OK) goto done;
    iter = hf_core_config(core)->pin_iterations;
    rv = pbkdf2(pin, len, salt, sizeof(salt), iter, hash);
    if (rv != CKR_OK) goto done;
    b64_encode(salt, sizeof(salt), salt_b64);
    b64_encode(hash, sizeof(hash), hash_b64);
    snprintf(rec, sizeof(rec), PIN_SCHEME "$%u$%s$%s", iter, salt_b64, hash_b64);
    rv = hf_store_meta_set(hf_core_store(core), pin_meta_name(user), rec);
done:
    OPENSSL_cleanse(hash, sizeof(hash));
    OPENSSL_cleanse(hash_b64, sizeof(hash_b64));
    OPENSSL_cleanse(rec, sizeof(rec));
    return rv;
}

CK_RV hf_core_pin_check(struct hf_core *core, enum hf_user user, const char *pin, size_t len)
{
    unsigned char salt[PIN_SALT_LEN], want[PIN_HASH_LEN], got[PIN_HASH_LEN];
    unsigned iter;
    char *rec = NULL;
    CK_RV rv;

    if (core == NULL || (pin == NULL && len > 0)) return CKR_ARGUMENTS_BAD;
    if (user != HF_USER_SO && user != HF_USER_NORMAL && user != HF_USER_GATEWAY)
        return CKR_USER_TYPE_INVALID;
    rv = hf_store_meta_get(hf_core_store(core), pin_meta_name(user), &rec);
    if (rv == CKR_KEY_HANDLE_INVALID) return CKR_USER_PIN_NOT_INITIALIZED;
    if (rv != CKR_OK) return rv;
    /* A length no PIN can have is simply wrong: C_Login has no CKR_PIN_LEN_RANGE (PKCS#11 2.40
     * section 5.6), and answering early saves the PBKDF2 work. */
    if (!pin_len_is_valid(len)) {
        rv = CKR_PIN_INCORRECT;
        goto done;
    }
    if (!record_parse(rec, &iter, salt, want)) {
        hf_log_error("token metadata %s is not a PIN record: store damaged?", pin_meta_name(user));
        rv = CKR_DEVICE_ERROR;
        goto done;
    }
    rv = pbkdf2(pin, len, salt, sizeof(salt), iter, got);
    if (rv != CKR_OK) goto done;
    rv = CRYPTO_memcmp(got, want, sizeof(got)) == 0 ? CKR_OK : CKR_PIN_INCORRECT;
done:
    OPENSSL_cleanse(got, sizeof(got));
    OPENSSL_cleanse(want, sizeof(want));
    if (rec != NULL) OPENSSL_clear_free(rec, strlen(rec));
    return rv;
}

bool hf_core_pin_is_set(struct hf_core *core, enum hf_user user)
{
    char *rec = NULL;
    bool set;

    if (core == NULL) return false;
    set = hf_store_meta_get(hf_core_store(core), pin_meta_name(user), &rec) == CKR_OK;
    free(rec);
    return set;
}
