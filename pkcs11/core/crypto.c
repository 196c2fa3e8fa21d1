#include "hf-build.h"

#include "crypto.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/core_names.h>
#include <openssl/decoder.h>
#include <openssl/ec.h>
#include <openssl/encoder.h>
#include <openssl/err.h>
#include <openssl/param_build.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include "curve.h"
#include "secmem.h"

#include "annotate.h" /* the refcount is ordered by atomics helgrind does not see */

/* OpenSSL's error queue is per thread and belongs to the host application too: every public
 * function below sets a mark on entry and pops back to it on exit, so nothing we caused is left
 * queued (an application that checks ERR_get_error after an unrelated call would otherwise see
 * our failures) while errors the application queued before calling us survive. */

#define HF_SIGN_CTX_POOL 8

struct rsa_dec;

struct hf_material {
    atomic_uint refs;
    enum hf_alg alg;
    unsigned bits;
    unsigned char *secret; /* AES: hf_secmem memory */
    size_t secret_len;
    EVP_PKEY *pkey; /* RSA/EC: private key in the private library context */
    /* EC: contexts already through EVP_PKEY_sign_init, reused: creating and initialising one
     * (a provider fetch under OpenSSL's method-store lock) cost a sixth of an ECDSA P-256 sign.
     * RSA: decryption contexts, likewise (rsa_dec_take). The lock guards both pools and
     * pkey_lent. */
    pthread_mutex_t sign_ctx_lock;
    EVP_PKEY_CTX *sign_ctxs[HF_SIGN_CTX_POOL];
    unsigned nsign_ctxs;
    struct rsa_dec *decs[HF_SIGN_CTX_POOL];
    unsigned ndecs;
    bool pkey_lent; /* pkey itself backs a decryption context (the others back copies) */
};

/* Fetching an algorithm walks the provider's method store under a lock: measured at several
 * microseconds, as much as an AES-GCM operation on 32 bytes. Everything the hot paths use is
 * fetched once. Index by AES key length: 16, 24, 32 bytes. */
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;
static OSSL_LIB_CTX *libctx;
static EVP_CIPHER *gcm_ciphers[3], *kw_ciphers[3], *kwp_ciphers[3];
static struct {
    const char *name;
    EVP_MD *md;
} mds[] = {{"SHA1", NULL}, {"SHA224", NULL}, {"SHA256", NULL}, {"SHA384", NULL}, {"SHA512", NULL}};

#define N_MDS (sizeof(mds) / sizeof(mds[0]))

static void crypto_init(void)
{
    static const char *const sizes[3] = {"128", "192", "256"};
    char name[32];
    OSSL_LIB_CTX *ctx;

    ERR_set_mark();
    ctx = OSSL_LIB_CTX_new();
    /* Only the default provider: a Holdfast provider loaded by the application's openssl.cnf
     * lives in the default context and can never be chosen here. */
    if (ctx == NULL || OSSL_PROVIDER_load(ctx, "default") == NULL) {
        OSSL_LIB_CTX_free(ctx);
        goto done;
    }
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "AES-%s-GCM", sizes[i]);
        gcm_ciphers[i] = EVP_CIPHER_fetch(ctx, name, NULL);
        snprintf(name, sizeof(name), "AES-%s-WRAP", sizes[i]);
        kw_ciphers[i] = EVP_CIPHER_fetch(ctx, name, NULL);
        snprintf(name, sizeof(name), "AES-%s-WRAP-PAD", sizes[i]);
        kwp_ciphers[i] = EVP_CIPHER_fetch(ctx, name, NULL);
    }
    for (size_t i = 0; i < N_MDS; i++)
        mds[i].md = EVP_MD_fetch(ctx, mds[i].name, NULL);
    libctx = ctx;
done:
    ERR_pop_to_mark();
}

static bool crypto_is_ready(void)
{
    pthread_once(&crypto_once, crypto_init);
    return libctx != NULL;
}

OSSL_LIB_CTX *hf_crypto_libctx(void)
{
    crypto_is_ready();
    return libctx;
}

static int aes_index(size_t keylen)
{
    return keylen == 16 ? 0 : keylen == 24 ? 1 : keylen == 32 ? 2 : -1;
}

/* A new reference to the digest called name (any OpenSSL alias), or NULL. The names the table
 * holds are tried first: EVP_MD_is_a looks the name up in OpenSSL's name map, under a lock, and
 * "SHA256" went through two of those for SHA1 and SHA224 before it matched. */
static EVP_MD *md_get(const char *name)
{
    for (int alias = 0; alias < 2; alias++) {
        for (size_t i = 0; i < N_MDS; i++) {
            if (mds[i].md != NULL && (alias ? EVP_MD_is_a(mds[i].md, name)
                                            : strcasecmp(name, mds[i].name) == 0)) {
                EVP_MD_up_ref(mds[i].md);
                return mds[i].md;
            }
        }
    }
    return EVP_MD_fetch(libctx, name, NULL);
}

/* The CKR for the failure OpenSSL just queued, where it says more than "failed". */
static CK_RV rv_from_err(CK_RV fallback)
{
    unsigned long e = ERR_peek_last_error();
    int reason = ERR_GET_REASON(e);

    if (reason == ERR_R_MALLOC_FAILURE) return CKR_HOST_MEMORY;
    if (ERR_GET_LIB(e) == ERR_LIB_RSA || ERR_GET_LIB(e) == ERR_LIB_PROV) {
        if (reason == RSA_R_DATA_TOO_LARGE_FOR_MODULUS) return CKR_DATA_INVALID;
        if (reason == RSA_R_DATA_TOO_LARGE_FOR_KEY_SIZE || reason == RSA_R_DATA_TOO_LARGE)
            return CKR_DATA_LEN_RANGE;
    }
    return fallback;
}

/* The two-call convention: CKR_OK with *outlen = need when out is NULL (and nothing to do),
 * CKR_BUFFER_TOO_SMALL when short. Returns true when the caller should go on. */
static bool out_is_ready(unsigned char *out, size_t *outlen, size_t need, CK_RV *rv)
{
    if (out == NULL || *outlen < need) {
        *rv = out == NULL ? CKR_OK : CKR_BUFFER_TOO_SMALL;
        *outlen = need;
        return false;
    }
    return true;
}

/* ---- material ------------------------------------------------------------------------------ */

static void rsa_dec_free(struct rsa_dec *d);

static struct hf_material *material_new(enum hf_alg alg, unsigned bits)
{
    struct hf_material *m = calloc(1, sizeof(*m));

    if (m == NULL) return NULL;
    atomic_init(&m->refs, 1);
    pthread_mutex_init(&m->sign_ctx_lock, NULL);
    m->alg = alg;
    m->bits = bits;
    return m;
}

/* material_begin and material_end bracket the making of a new material: an OpenSSL error mark
 * (errors of a failed try stay internal), and on failure the half-made material released. */
static CK_RV material_begin(enum hf_alg alg, unsigned bits, struct hf_material **m)
{
    ERR_set_mark();
    *m = material_new(alg, bits);
    return *m != NULL ? CKR_OK : CKR_HOST_MEMORY;
}

static CK_RV material_end(struct hf_material *m, CK_RV rv, struct hf_material **out)
{
    if (rv == CKR_OK)
        *out = m;
    else
        hf_material_unref(m);
    ERR_pop_to_mark();
    return rv;
}

struct hf_material *hf_material_ref(struct hf_material *m)
{
    if (m != NULL) atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
    return m;
}

void hf_material_unref(struct hf_material *m)
{
    if (m == NULL) return;
    ANNOTATE_HAPPENS_BEFORE(&m->refs);
    if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1) return;
    ANNOTATE_HAPPENS_AFTER(&m->refs);
    hf_secmem_free(m->secret, m->secret_len);
    while (m->nsign_ctxs > 0)
        EVP_PKEY_CTX_free(m->sign_ctxs[--m->nsign_ctxs]);
    while (m->ndecs > 0)
        rsa_dec_free(m->decs[--m->ndecs]);
    pthread_mutex_destroy(&m->sign_ctx_lock);
    EVP_PKEY_free(m->pkey); /* OpenSSL clears private BIGNUMs as it frees them */
    free(m);
}

enum hf_alg hf_material_alg(const struct hf_material *m)
{
    return m->alg;
}

unsigned hf_material_bits(const struct hf_material *m)
{
    return m->bits;
}

const unsigned char *hf_material_secret(const struct hf_material *m, size_t *len)
{
    if (len != NULL) *len = m != NULL ? m->secret_len : 0;
    return m != NULL ? m->secret : NULL;
}

EVP_PKEY *hf_material_pkey(const struct hf_material *m)
{
    return m != NULL ? m->pkey : NULL;
}

static const char *ec_group_name(unsigned bits)
{
    const struct hf_curve *c = hf_curve_find(HF_ALG_EC, bits);

    return c ? c->group : NULL;
}

/* OpenSSL's key type name of an asymmetric alg. */
static const char *pkey_type(enum hf_alg alg)
{
    return alg == HF_ALG_RSA ? "RSA" : alg == HF_ALG_ED25519 ? "ED25519" : "EC";
}

enum hf_alg hf_pkey_alg(EVP_PKEY *pkey)
{
    return EVP_PKEY_is_a(pkey, "RSA")       ? HF_ALG_RSA
           : EVP_PKEY_is_a(pkey, "EC")      ? HF_ALG_EC
           : EVP_PKEY_is_a(pkey, "ED25519") ? HF_ALG_ED25519
                                            : 0;
}

unsigned hf_pkey_bits(EVP_PKEY *pkey)
{
    /* OpenSSL says 253 (the group order's bits); PKCS#11 modules say 256, as the key model. */
    return EVP_PKEY_is_a(pkey, "ED25519") ? 256 : (unsigned)EVP_PKEY_get_bits(pkey);
}

static bool alg_bits_are_supported(enum hf_alg alg, unsigned bits)
{
    switch (alg) {
    case HF_ALG_AES:
        return bits == 128 || bits == 192 || bits == 256;
    case HF_ALG_RSA: /* policy (which sizes keys may have) is the key model's, not ours */
        return bits >= 1024 && bits <= 16384;
    case HF_ALG_EC:
        return ec_group_name(bits) != NULL;
    case HF_ALG_GENERIC:
    case HF_ALG_ED25519:
        return hf_alg_bits_is_valid(alg, bits);
    }
    return false;
}

static CK_RV pkey_generate(enum hf_alg alg, unsigned bits, EVP_PKEY **out)
{
    EVP_PKEY_CTX *pctx = EVP_PKEY_CTX_new_from_name(libctx, pkey_type(alg), NULL);
    CK_RV rv = CKR_FUNCTION_FAILED;

    if (pctx == NULL || EVP_PKEY_keygen_init(pctx) <= 0) goto done;
    /* RSA: OpenSSL's default public exponent is 65537 (RSA_F4), which is what we want. */
    if (alg == HF_ALG_RSA && EVP_PKEY_CTX_set_rsa_keygen_bits(pctx, (int)bits) <= 0) goto done;
    if (alg == HF_ALG_EC && EVP_PKEY_CTX_set_group_name(pctx, ec_group_name(bits)) <= 0) goto done;
    if (EVP_PKEY_generate(pctx, out) <= 0) goto done;
    rv = CKR_OK;
done:
    if (rv != CKR_OK) rv = rv_from_err(rv);
    EVP_PKEY_CTX_free(pctx);
    return rv;
}

CK_RV hf_material_generate(enum hf_alg alg, unsigned bits, struct hf_material **out)
{
    struct hf_material *m = NULL;
    CK_RV rv;

    if (out == NULL) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    if (!alg_bits_are_supported(alg, bits)) return CKR_KEY_SIZE_RANGE;
    if (!crypto_is_ready()) return CKR_GENERAL_ERROR;
    if ((rv = material_begin(alg, bits, &m)) != CKR_OK) goto done;
    rv = CKR_FUNCTION_FAILED;
    if (hf_alg_is_secret(alg)) {
        m->secret_len = bits / 8;
        if ((m->secret = hf_secmem_alloc(m->secret_len)) == NULL) {
            rv = CKR_HOST_MEMORY;
            goto done;
        }
        if (RAND_priv_bytes_ex(libctx, m->secret, m->secret_len, 0) != 1) goto done;
        rv = CKR_OK;
    } else {
        rv = pkey_generate(alg, bits, &m->pkey);
    }
done:
    return material_end(m, rv, out);
}

/* bits 0 takes the key's own size. */
static CK_RV pkey_decode(enum hf_alg alg, unsigned bits, const unsigned char *bytes, size_t len,
                         EVP_PKEY **out)
{
    const char *type = pkey_type(alg);
    OSSL_DECODER_CTX *dctx;
    EVP_PKEY *pkey = NULL;
    const unsigned char *p = bytes;
    size_t left = len;
    CK_RV rv = CKR_DATA_INVALID;

    /* Any key type, so that a key of the wrong algorithm is told apart from garbage. */
    dctx = OSSL_DECODER_CTX_new_for_pkey(&pkey, "DER", "PrivateKeyInfo", NULL, EVP_PKEY_KEYPAIR,
                                         libctx, NULL);
    if (dctx == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    if (!OSSL_DECODER_from_data(dctx, &p, &left) || pkey == NULL || left != 0) goto done;
    if (!EVP_PKEY_is_a(pkey, type)) {
        rv = CKR_KEY_TYPE_INCONSISTENT;
        goto done;
    }
    if (bits != 0 && hf_pkey_bits(pkey) != bits) {
        rv = CKR_KEY_SIZE_RANGE;
        goto done;
    }
    *out = pkey;
    pkey = NULL;
    rv = CKR_OK;
done:
    EVP_PKEY_free(pkey);
    OSSL_DECODER_CTX_free(dctx);
    return rv;
}

CK_RV hf_material_from_bytes(enum hf_alg alg, unsigned bits, const unsigned char *bytes, size_t len,
                             struct hf_material **out)
{
    struct hf_material *m = NULL;
    CK_RV rv;

    if (out == NULL || bytes == NULL) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    if (alg != HF_ALG_AES && alg != HF_ALG_RSA && alg != HF_ALG_EC && alg != HF_ALG_GENERIC &&
        alg != HF_ALG_ED25519)
        return CKR_KEY_TYPE_INCONSISTENT;
    if (alg == HF_ALG_AES && (aes_index(len) < 0 || (bits != 0 && bits != len * 8)))
        return CKR_KEY_SIZE_RANGE;
    if (alg == HF_ALG_GENERIC && (len > 512 || !hf_alg_bits_is_valid(alg, (unsigned)len * 8) ||
                                  (bits != 0 && bits != len * 8)))
        return CKR_KEY_SIZE_RANGE;
    if (!crypto_is_ready()) return CKR_GENERAL_ERROR;
    if ((rv = material_begin(alg, bits, &m)) != CKR_OK) goto done;
    if (hf_alg_is_secret(alg)) {
        m->bits = (unsigned)len * 8;
        m->secret_len = len;
        if ((m->secret = hf_secmem_alloc(len)) == NULL) {
            rv = CKR_HOST_MEMORY;
            goto done;
        }
        memcpy(m->secret, bytes, len);
    } else {
        rv = pkey_decode(alg, bits, bytes, len, &m->pkey);
        if (rv == CKR_OK) m->bits = hf_pkey_bits(m->pkey);
    }
done:
    return material_end(m, rv, out);
}

static CK_RV pkey_fromdata(enum hf_alg alg, OSSL_PARAM *params, EVP_PKEY **out)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(libctx, pkey_type(alg), NULL);
    EVP_PKEY_CTX *check = NULL;
    EVP_PKEY *pkey = NULL;
    CK_RV rv = CKR_ATTRIBUTE_VALUE_INVALID;

    if (ctx == NULL) return CKR_GENERAL_ERROR;
    if (EVP_PKEY_fromdata_init(ctx) <= 0 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_KEYPAIR, params) <= 0)
        goto done;
    check = EVP_PKEY_CTX_new_from_pkey(libctx, pkey, NULL);
    if (check == NULL || EVP_PKEY_pairwise_check(check) != 1) goto done;
    *out = pkey;
    pkey = NULL;
    rv = CKR_OK;
done:
    EVP_PKEY_CTX_free(check);
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(pkey);
    return rv;
}

CK_RV hf_material_from_params(enum hf_alg alg, OSSL_PARAM *params, struct hf_material **out)
{
    struct hf_material *m = NULL;
    CK_RV rv;

    if (out == NULL || params == NULL) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    if (alg != HF_ALG_RSA && alg != HF_ALG_EC && alg != HF_ALG_ED25519)
        return CKR_KEY_TYPE_INCONSISTENT;
    if (!crypto_is_ready()) return CKR_GENERAL_ERROR;
    if ((rv = material_begin(alg, 0, &m)) == CKR_OK) rv = pkey_fromdata(alg, params, &m->pkey);
    if (rv == CKR_OK) m->bits = hf_pkey_bits(m->pkey);
    return material_end(m, rv, out);
}

CK_RV hf_material_to_bytes(const struct hf_material *m, unsigned char **bytes, size_t *len)
{
    OSSL_ENCODER_CTX *ectx = NULL;
    unsigned char *der = NULL, *buf = NULL;
    size_t der_len = 0, buf_len = 0;
    CK_RV rv = CKR_FUNCTION_FAILED;

    if (m == NULL || bytes == NULL || len == NULL) return CKR_ARGUMENTS_BAD;
    ERR_set_mark();
    if (hf_alg_is_secret(m->alg)) {
        der = m->secret;
        der_len = m->secret_len;
    } else {
        ectx =
            OSSL_ENCODER_CTX_new_for_pkey(m->pkey, EVP_PKEY_KEYPAIR, "DER", "PrivateKeyInfo", NULL);
        if (ectx == NULL || !OSSL_ENCODER_to_data(ectx, &der, &der_len)) goto done;
    }
    buf_len = der_len;
    if ((buf = hf_secmem_alloc(buf_len)) == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    memcpy(buf, der, der_len);
    *bytes = buf;
    *len = buf_len;
    rv = CKR_OK;
done:
    if (!hf_alg_is_secret(m->alg)) OPENSSL_clear_free(der, der_len);
    OSSL_ENCODER_CTX_free(ectx);
    ERR_pop_to_mark();
    return rv;
}

static CK_RV pubkey_der(EVP_PKEY *pkey, unsigned char **der, size_t *len)
{
    unsigned char *buf = NULL, *p;
    int n;
    CK_RV rv = CKR_FUNCTION_FAILED;

    ERR_set_mark();
    /* Sized first so the result is plain malloc memory the caller frees with free(). */
    if ((n = i2d_PUBKEY(pkey, NULL)) <= 0) goto done;
    if ((buf = malloc((size_t)n)) == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    p = buf;
    if (i2d_PUBKEY(pkey, &p) != n) goto done;
    *der = buf;
    *len = (size_t)n;
    buf = NULL;
    rv = CKR_OK;
done:
    free(buf);
    ERR_pop_to_mark();
    return rv;
}

CK_RV hf_material_public_der(const struct hf_material *m, unsigned char **der, size_t *len)
{
    if (m == NULL || der == NULL || len == NULL) return CKR_ARGUMENTS_BAD;
    if (m->pkey == NULL) return CKR_KEY_TYPE_INCONSISTENT;
    return pubkey_der(m->pkey, der, len);
}

/* A public key of OpenSSL's key type type from its parameters; NULL when they make none. */
static EVP_PKEY *public_from_params(const char *type, OSSL_PARAM *params)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(libctx, type, NULL);
    EVP_PKEY *pkey = NULL;

    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) <= 0 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0)
        pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    return pkey;
}

CK_RV hf_rsa_public_der(const unsigned char *n, size_t nlen, const unsigned char *e, size_t elen,
                        unsigned bits, unsigned char **der, size_t *len)
{
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY *pkey = NULL;
    BIGNUM *bn_n = NULL, *bn_e = NULL;
    CK_RV rv = CKR_HOST_MEMORY;

    if (n == NULL || e == NULL || der == NULL || len == NULL || nlen > INT_MAX || elen > INT_MAX)
        return CKR_ARGUMENTS_BAD;
    if (!crypto_is_ready()) return CKR_GENERAL_ERROR;
    ERR_set_mark();
    if ((bn_n = BN_bin2bn(n, (int)nlen, NULL)) == NULL ||
        (bn_e = BN_bin2bn(e, (int)elen, NULL)) == NULL || (bld = OSSL_PARAM_BLD_new()) == NULL ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) ||
        (params = OSSL_PARAM_BLD_to_param(bld)) == NULL)
        goto done;
    rv = CKR_ATTRIBUTE_VALUE_INVALID;
    if ((pkey = public_from_params("RSA", params)) == NULL ||
        (unsigned)EVP_PKEY_get_bits(pkey) != bits)
        goto done;
    rv = pubkey_der(pkey, der, len);
done:
    EVP_PKEY_free(pkey);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn_n);
    BN_free(bn_e);
    ERR_pop_to_mark();
    return rv;
}

CK_RV hf_ec_public_der(enum hf_alg alg, unsigned bits, const unsigned char *point, size_t len,
                       unsigned char **der, size_t *der_len)
{
    const struct hf_curve *c = hf_curve_find(alg, bits);
    size_t raw = alg == HF_ALG_ED25519 ? 32 : 1 + 2 * (((size_t)bits + 7) / 8);
    const unsigned char *p = point;
    ASN1_OCTET_STRING *os = NULL;
    OSSL_PARAM params[3];
    size_t np = 0;
    EVP_PKEY *pkey = NULL;
    CK_RV rv = CKR_ATTRIBUTE_VALUE_INVALID;

    if (c == NULL || point == NULL || der == NULL || der_len == NULL || len > LONG_MAX)
        return CKR_ARGUMENTS_BAD;
    if (!crypto_is_ready()) return CKR_GENERAL_ERROR;
    ERR_set_mark();
    /* The DER form is the longer one: a bare point has exactly raw bytes. */
    if (len != raw) {
        if ((os = d2i_ASN1_OCTET_STRING(NULL, &p, (long)len)) == NULL || p != point + len ||
            (size_t)ASN1_STRING_length(os) != raw)
            goto done;
        point = ASN1_STRING_get0_data(os);
        len = raw;
    }
    if (alg == HF_ALG_EC)
        params[np++] =
            OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)c->group, 0);
    params[np++] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)point, len);
    params[np] = OSSL_PARAM_construct_end();
    if ((pkey = public_from_params(alg == HF_ALG_EC ? "EC" : c->group, params)) == NULL) goto done;
    rv = pubkey_der(pkey, der, der_len);
done:
    EVP_PKEY_free(pkey);
    ASN1_OCTET_STRING_free(os);
    ERR_pop_to_mark();
    return rv;
}

CK_RV hf_public_from_der(const unsigned char *der, size_t len, EVP_PKEY **out)
{
    const unsigned char *p = der;
    EVP_PKEY *pkey;
    CK_RV rv = CKR_DATA_INVALID;

    if (der == NULL || out == NULL) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    if (len == 0 || len > LONG_MAX) return CKR_DATA_INVALID;
    if (!crypto_is_ready()) return CKR_GENERAL_ERROR;
    ERR_set_mark();
    pkey = d2i_PUBKEY_ex(NULL, &p, (long)len, libctx, NULL);
    if (pkey != NULL && p == der + len && hf_pkey_alg(pkey) != 0) {
        *out = pkey;
        pkey = NULL;
        rv = CKR_OK;
    }
    EVP_PKEY_free(pkey);
    ERR_pop_to_mark();
    return rv;
}

/* ---- AES ----------------------------------------------------------------------------------- */

static CK_RV aes_check(const struct hf_material *m)
{
    if (m->alg != HF_ALG_AES) return CKR_KEY_TYPE_INCONSISTENT;
    if (aes_index(m->secret_len) < 0) return CKR_KEY_SIZE_RANGE;
    if (!crypto_is_ready()) return CKR_GENERAL_ERROR;
    return CKR_OK;
}

static CK_RV gcm_check(const struct hf_material *m, const unsigned char *iv, size_t ivlen,
                       const unsigned char *aad, size_t aadlen, size_t taglen)
{
    /* The provider keeps at most 128 IV bytes (GCM_IV_MAX_SIZE); SP 800-38D recommends 12. */
    if (iv == NULL || ivlen < 1 || ivlen > 128) return CKR_MECHANISM_PARAM_INVALID;
    if ((aad == NULL && aadlen != 0) || aadlen > INT_MAX) return CKR_MECHANISM_PARAM_INVALID;
    if (taglen < 4 || taglen > 16) return CKR_MECHANISM_PARAM_INVALID;
    return aes_check(m);
}

/* One GCM pass; enc writes taglen bytes of tag, !enc checks them. */
static CK_RV gcm_run(const struct hf_material *m, int enc, const unsigned char *iv, size_t ivlen,
                     const unsigned char *aad, size_t aadlen, const unsigned char *in, size_t inlen,
                     unsigned char *out, unsigned char *tag, size_t taglen)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    OSSL_PARAM params[] = {OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, &ivlen),
                           OSSL_PARAM_END};
    unsigned char final[16];
    int len;
    CK_RV rv = CKR_FUNCTION_FAILED;

    if (ctx == NULL) return CKR_HOST_MEMORY;
    const EVP_CIPHER *cipher = gcm_ciphers[aes_index(m->secret_len)];
    /* The IV length must be set before the IV (the provider copies ivlen bytes of it); the
     * common 12-byte IV is the default, so it needs only one init. */
    if (ivlen == 12 ? !EVP_CipherInit_ex2(ctx, cipher, m->secret, iv, enc, NULL)
                    : (!EVP_CipherInit_ex2(ctx, cipher, NULL, NULL, enc, params) ||
                       !EVP_CipherInit_ex2(ctx, NULL, m->secret, iv, enc, NULL)))
        goto done;
    if (aadlen != 0 && !EVP_CipherUpdate(ctx, NULL, &len, aad, (int)aadlen)) goto done;
    if (inlen != 0 && !EVP_CipherUpdate(ctx, out, &len, in, (int)inlen)) goto done;
    if (!enc && !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, (int)taglen, tag)) goto done;
    if (!EVP_CipherFinal_ex(ctx, final, &len)) {
        rv = enc ? CKR_FUNCTION_FAILED : CKR_ENCRYPTED_DATA_INVALID;
        goto done;
    }
    if (enc && !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, (int)taglen, tag)) goto done;
    rv = CKR_OK;
done:
    EVP_CIPHER_CTX_free(ctx);
    return rv;
}

CK_RV hf_aes_gcm_encrypt(const struct hf_material *m, const unsigned char *iv, size_t ivlen,
                         const unsigned char *aad, size_t aadlen, size_t taglen,
                         const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen)
{
    CK_RV rv;

    if (m == NULL || outlen == NULL || (in == NULL && inlen != 0)) return CKR_ARGUMENTS_BAD;
    if ((rv = gcm_check(m, iv, ivlen, aad, aadlen, taglen)) != CKR_OK) return rv;
    if (inlen > INT_MAX) return CKR_DATA_LEN_RANGE;
    if (!out_is_ready(out, outlen, inlen + taglen, &rv)) return rv;
    ERR_set_mark();
    rv = gcm_run(m, 1, iv, ivlen, aad, aadlen, in, inlen, out, out + inlen, taglen);
    if (rv == CKR_OK)
        *outlen = inlen + taglen;
    else
        OPENSSL_cleanse(out, inlen + taglen);
    ERR_pop_to_mark();
    return rv;
}

CK_RV hf_aes_gcm_decrypt(const struct hf_material *m, const unsigned char *iv, size_t ivlen,
                         const unsigned char *aad, size_t aadlen, size_t taglen,
                         const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen)
{
    unsigned char tag[16];
    size_t n;
    CK_RV rv;

    if (m == NULL || outlen == NULL || (in == NULL && inlen != 0)) return CKR_ARGUMENTS_BAD;
    if ((rv = gcm_check(m, iv, ivlen, aad, aadlen, taglen)) != CKR_OK) return rv;
    if (inlen < taglen) return CKR_ENCRYPTED_DATA_LEN_RANGE;
    if (inlen > INT_MAX) return CKR_ENCRYPTED_DATA_LEN_RANGE;
    n = inlen - taglen;
    if (!out_is_ready(out, outlen, n, &rv)) return rv;
    /* Copied first: out may overlap in (decryption in place). */
    memcpy(tag, in + n, taglen);
    ERR_set_mark();
    rv = gcm_run(m, 0, iv, ivlen, aad, aadlen, in, n, out, tag, taglen);
    /* OpenSSL decrypts before it checks the tag: a forged message must leave no plaintext. */
    if (rv == CKR_OK)
        *outlen = n;
    else
        OPENSSL_cleanse(out, n);
    ERR_pop_to_mark();
    return rv;
}

static CK_RV kw_run(const struct hf_material *m, bool pad, int enc, const unsigned char *in,
                    size_t inlen, unsigned char *out, size_t *outlen)
{
    int i = aes_index(m->secret_len);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int len = 0;
    CK_RV rv = enc ? CKR_FUNCTION_FAILED : CKR_WRAPPED_KEY_INVALID;

    if (ctx == NULL) return CKR_HOST_MEMORY;
    /* Wrap modes are refused without this flag (they write more than they read). */
    EVP_CIPHER_CTX_set_flags(ctx, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
    if (!EVP_CipherInit_ex2(ctx, pad ? kwp_ciphers[i] : kw_ciphers[i], m->secret, NULL, enc,
                            NULL)) {
        rv = CKR_FUNCTION_FAILED;
        goto done;
    }
    if (!EVP_CipherUpdate(ctx, out, &len, in, (int)inlen) || len <= 0) goto done;
    *outlen = (size_t)len;
    rv = CKR_OK;
done:
    EVP_CIPHER_CTX_free(ctx);
    return rv;
}

CK_RV hf_aes_kw_wrap(const struct hf_material *m, bool pad, const unsigned char *in, size_t inlen,
                     unsigned char *out, size_t *outlen)
{
    size_t need;
    CK_RV rv;

    if (m == NULL || in == NULL || outlen == NULL) return CKR_ARGUMENTS_BAD;
    if ((rv = aes_check(m)) != CKR_OK) return rv;
    /* RFC 3394 section 2: at least two 64-bit blocks; RFC 5649: 1 to 2^32-1 octets. */
    if (!pad && (inlen < 16 || inlen % 8 != 0)) return CKR_DATA_LEN_RANGE;
    if (inlen < 1 || inlen > INT_MAX - 16) return CKR_DATA_LEN_RANGE;
    need = (inlen + 7) / 8 * 8 + 8;
    if (!out_is_ready(out, outlen, need, &rv)) return rv;
    ERR_set_mark();
    rv = kw_run(m, pad, 1, in, inlen, out, outlen);
    ERR_pop_to_mark();
    return rv;
}

CK_RV hf_aes_kw_unwrap(const struct hf_material *m, bool pad, const unsigned char *in, size_t inlen,
                       unsigned char *out, size_t *outlen)
{
    size_t need, cap;
    CK_RV rv;

    if (m == NULL || in == NULL || outlen == NULL) return CKR_ARGUMENTS_BAD;
    if ((rv = aes_check(m)) != CKR_OK) return rv;
    if (inlen % 8 != 0 || inlen < (pad ? 16u : 24u) || inlen > INT_MAX)
        return CKR_WRAPPED_KEY_LEN_RANGE;
    /* For KWP this is an upper bound (PKCS#11 allows that): the true length is only known
     * after the integrity check, and OpenSSL writes the padded length first. */
    need = inlen - 8;
    cap = *outlen;
    if (!out_is_ready(out, outlen, need, &rv)) return rv;
    ERR_set_mark();
    rv = kw_run(m, pad, 0, in, inlen, out, outlen);
    if (rv != CKR_OK) {
        OPENSSL_cleanse(out, need);
        *outlen = cap;
    }
    ERR_pop_to_mark();
    return rv;
}

/* ---- RSA and EC ---------------------------------------------------------------------------- */

/* The bytes of one ECDSA coordinate (r or s): the group order's size. */
static size_t ec_half(EVP_PKEY *pkey)
{
    return ((size_t)EVP_PKEY_get_bits(pkey) + 7) / 8;
}

static bool pkey_is_rsa(EVP_PKEY *pkey)
{
    return EVP_PKEY_is_a(pkey, "RSA");
}

static bool pkey_is_ec(EVP_PKEY *pkey)
{
    return EVP_PKEY_is_a(pkey, "EC");
}

/* The input to sign or verify: the digest of in when p->md names one (into buf), else in. */
struct tbs {
    unsigned char buf[EVP_MAX_MD_SIZE];
    const unsigned char *data;
    size_t len;
    EVP_MD *md; /* the input's hash, when known (own reference) */
};

static CK_RV tbs_prepare(struct tbs *t, const struct hf_asym_params *p, const unsigned char *in,
                         size_t inlen)
{
    unsigned int n = 0;

    t->data = in;
    t->len = inlen;
    t->md = NULL;
    if (p->md == NULL) return CKR_OK;
    if ((t->md = md_get(p->md)) == NULL) return CKR_MECHANISM_PARAM_INVALID;
    if (!EVP_Digest(in, inlen, t->buf, &n, t->md, NULL)) return CKR_FUNCTION_FAILED;
    t->data = t->buf;
    t->len = n;
    return CKR_OK;
}

/* RSA_NO_PADDING works on exactly one modulus-sized block: shorter input is a big-endian number
 * with its leading zero bytes left out (PKCS#11 CKM_RSA_X_509), so put them back. */
static CK_RV raw_block(size_t k, const unsigned char *in, size_t inlen, unsigned char **block)
{
    if (inlen > k) return CKR_DATA_LEN_RANGE;
    if ((*block = calloc(1, k)) == NULL) return CKR_HOST_MEMORY;
    memcpy(*block + (k - inlen), in, inlen);
    return CKR_OK;
}

/* Padding, hashes and salt of an RSA signature context. md is the signature hash (NULL: the
 * input is already encoded, CKM_RSA_PKCS and CKM_RSA_X_509). */
static CK_RV rsa_sig_setup(EVP_PKEY_CTX *pctx, const struct hf_asym_params *p, EVP_MD *md)
{
    EVP_MD *mgf1 = NULL;
    CK_RV rv = CKR_FUNCTION_FAILED;
    int pad = p->padding == HF_RSA_PKCS1 ? RSA_PKCS1_PADDING
              : p->padding == HF_RSA_PSS ? RSA_PKCS1_PSS_PADDING
                                         : RSA_NO_PADDING;

    if (EVP_PKEY_CTX_set_rsa_padding(pctx, pad) <= 0) goto done;
    if (md != NULL && EVP_PKEY_CTX_set_signature_md(pctx, md) <= 0) goto done;
    if (p->padding == HF_RSA_PSS) {
        if (p->mgf1_md != NULL && (mgf1 = md_get(p->mgf1_md)) == NULL) {
            rv = CKR_MECHANISM_PARAM_INVALID;
            goto done;
        }
        if (EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, mgf1 != NULL ? mgf1 : md) <= 0 ||
            EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, (int)p->pss_saltlen) <= 0) {
            rv = CKR_MECHANISM_PARAM_INVALID;
            goto done;
        }
    }
    rv = CKR_OK;
done:
    EVP_MD_free(mgf1);
    return rv;
}

/* Checks the input against the padding's limits; for PSS on a digest, finds the hash that
 * made it. t->md is the signature hash on return. */
static CK_RV rsa_sig_input(EVP_PKEY *pkey, const struct hf_asym_params *p, struct tbs *t)
{
    size_t k = (size_t)EVP_PKEY_get_size(pkey);
    size_t em_len = ((size_t)EVP_PKEY_get_bits(pkey) - 1 + 7) / 8;

    switch (p->padding) {
    case HF_RSA_PKCS1: /* RFC 8017 9.2: the DigestInfo needs tLen <= k - 11 */
        return t->md == NULL && t->len > k - 11 ? CKR_DATA_LEN_RANGE : CKR_OK;
    case HF_RSA_RAW:
        return t->md == NULL ? CKR_OK : CKR_MECHANISM_PARAM_INVALID;
    case HF_RSA_PSS:
        /* CKM_RSA_PKCS_PSS signs a digest: its hash is the one MGF1 names (PKCS#11 lets the
         * two differ; the input's hash is then not known, and no one does that). */
        if (t->md == NULL && (p->mgf1_md == NULL || (t->md = md_get(p->mgf1_md)) == NULL))
            return CKR_MECHANISM_PARAM_INVALID;
        if (t->len != (size_t)EVP_MD_get_size(t->md)) return CKR_DATA_LEN_RANGE;
        /* RFC 8017 9.1.1 step 3: emLen >= hLen + sLen + 2 */
        if (p->pss_saltlen > INT_MAX ||
            (p->pss_saltlen >= 0 && t->len + (size_t)p->pss_saltlen + 2 > em_len))
            return CKR_MECHANISM_PARAM_INVALID;
        return CKR_OK;
    default:
        return CKR_MECHANISM_INVALID;
    }
}

/* rsa_sig_input, and for raw RSA the modulus-sized block (*block, malloc'd) put in t's place as
 * what EVP_PKEY_sign/verify get. */
static CK_RV rsa_tbs_prepare(EVP_PKEY *pkey, const struct hf_asym_params *p, struct tbs *t,
                             unsigned char **block)
{
    size_t k = (size_t)EVP_PKEY_get_size(pkey);
    CK_RV rv = rsa_sig_input(pkey, p, t);

    if (rv != CKR_OK || p->padding != HF_RSA_RAW) return rv;
    if ((rv = raw_block(k, t->data, t->len, block)) != CKR_OK) return rv;
    t->data = *block;
    t->len = k;
    return CKR_OK;
}

static CK_RV rsa_sign(EVP_PKEY *pkey, const struct hf_asym_params *p, struct tbs *t,
                      unsigned char *out, size_t *outlen)
{
    size_t siglen = (size_t)EVP_PKEY_get_size(pkey);
    EVP_PKEY_CTX *pctx = NULL;
    unsigned char *block = NULL;
    CK_RV rv;

    if ((rv = rsa_tbs_prepare(pkey, p, t, &block)) != CKR_OK) goto done;
    rv = CKR_FUNCTION_FAILED;
    if ((pctx = EVP_PKEY_CTX_new_from_pkey(libctx, pkey, NULL)) == NULL ||
        EVP_PKEY_sign_init(pctx) <= 0)
        goto done;
    if ((rv = rsa_sig_setup(pctx, p, t->md)) != CKR_OK) goto done;
    if (EVP_PKEY_sign(pctx, out, &siglen, t->data, t->len) <= 0) {
        rv = rv_from_err(CKR_FUNCTION_FAILED);
        goto done;
    }
    *outlen = siglen;
    rv = CKR_OK;
done:
    free(block);
    EVP_PKEY_CTX_free(pctx);
    return rv;
}

/* A sign-initialised context of m's key, from the pool or new; NULL on failure. The material is
 * shared and otherwise immutable: only the pool changes, under its lock. */
static EVP_PKEY_CTX *sign_ctx_take(struct hf_material *m)
{
    EVP_PKEY_CTX *pctx = NULL;

    pthread_mutex_lock(&m->sign_ctx_lock);
    if (m->nsign_ctxs > 0) pctx = m->sign_ctxs[--m->nsign_ctxs];
    pthread_mutex_unlock(&m->sign_ctx_lock);
    if (pctx != NULL) return pctx;
    if ((pctx = EVP_PKEY_CTX_new_from_pkey(libctx, m->pkey, NULL)) == NULL ||
        EVP_PKEY_sign_init(pctx) <= 0) {
        EVP_PKEY_CTX_free(pctx);
        return NULL;
    }
    return pctx;
}

static void sign_ctx_give_back(struct hf_material *m, EVP_PKEY_CTX *pctx)
{
    pthread_mutex_lock(&m->sign_ctx_lock);
    if (m->nsign_ctxs < HF_SIGN_CTX_POOL) {
        m->sign_ctxs[m->nsign_ctxs++] = pctx;
        pctx = NULL;
    }
    pthread_mutex_unlock(&m->sign_ctx_lock);
    EVP_PKEY_CTX_free(pctx);
}

/* out holds sig_size(m, der_out) bytes. */
static CK_RV ecdsa_sign(struct hf_material *m, const struct tbs *t, bool der_out,
                        unsigned char *out, size_t *outlen)
{
    size_t half = ec_half(m->pkey), der_len = (size_t)EVP_PKEY_get_size(m->pkey);
    EVP_PKEY_CTX *pctx = NULL;
    unsigned char der[160]; /* an ECDSA signature over P-521 is at most 139 bytes of DER */
    const unsigned char *p = der;
    ECDSA_SIG *sig = NULL;
    CK_RV rv = CKR_FUNCTION_FAILED;

    if (der_len > sizeof(der)) return CKR_FUNCTION_FAILED;
    if ((pctx = sign_ctx_take(m)) == NULL) return CKR_FUNCTION_FAILED;
    if (EVP_PKEY_sign(pctx, der, &der_len, t->data, t->len) <= 0) {
        EVP_PKEY_CTX_free(pctx); /* its state after a failure is not worth trusting */
        return CKR_FUNCTION_FAILED;
    }
    sign_ctx_give_back(m, pctx);
    if (der_out) {
        memcpy(out, der, der_len);
        *outlen = der_len;
        return CKR_OK;
    }
    /* PKCS#11 (and every cloud API) wants r || s, each as wide as the group order. */
    if ((sig = d2i_ECDSA_SIG(NULL, &p, (long)der_len)) == NULL ||
        BN_bn2binpad(ECDSA_SIG_get0_r(sig), out, (int)half) < 0 ||
        BN_bn2binpad(ECDSA_SIG_get0_s(sig), out + half, (int)half) < 0)
        goto done;
    *outlen = 2 * half;
    rv = CKR_OK;
done:
    ECDSA_SIG_free(sig);
    return rv;
}

/* For ECDSA in DER, the largest signature of the curve (EVP_PKEY_get_size). By m->alg, not
 * EVP_PKEY_is_a: that looks the name up, under a lock, on every signature. */
static size_t sig_size(const struct hf_material *m, bool ecdsa_der)
{
    return m->alg == HF_ALG_EC && !ecdsa_der ? 2 * ec_half(m->pkey)
                                             : (size_t)EVP_PKEY_get_size(m->pkey);
}

CK_RV hf_asym_sign(const struct hf_material *m, const struct hf_asym_params *p,
                   const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen)
{
    struct tbs t = {.md = NULL};
    CK_RV rv;

    if (m == NULL || p == NULL || outlen == NULL || (in == NULL && inlen != 0))
        return CKR_ARGUMENTS_BAD;
    if (m->pkey == NULL) return CKR_KEY_TYPE_INCONSISTENT;
    if (!out_is_ready(out, outlen, sig_size(m, p->ecdsa_der), &rv)) return rv;
    ERR_set_mark();
    if ((rv = tbs_prepare(&t, p, in, inlen)) != CKR_OK) goto done;
    if (m->alg == HF_ALG_EC)
        rv = ecdsa_sign((struct hf_material *)m, &t, p->ecdsa_der, out, outlen);
    else
        rv = rsa_sign(m->pkey, p, &t, out, outlen);
done:
    EVP_MD_free(t.md);
    OPENSSL_cleanse(t.buf, sizeof(t.buf));
    ERR_pop_to_mark();
    return rv;
}

/* r || s, each half bytes, as OpenSSL's ECDSA_SIG; NULL when out of memory. */
static ECDSA_SIG *ecdsa_sig_of(const unsigned char *sig, size_t half)
{
    ECDSA_SIG *s = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, (int)half, NULL), *sv = BN_bin2bn(sig + half, (int)half, NULL);

    if (s != NULL && r != NULL && sv != NULL && ECDSA_SIG_set0(s, r, sv)) return s;
    BN_free(r);
    BN_free(sv);
    ECDSA_SIG_free(s);
    return NULL;
}

/* r || s back to the DER SEQUENCE OpenSSL verifies. *der is OpenSSL memory. */
static CK_RV ecdsa_der(EVP_PKEY *pub, const unsigned char *sig, size_t siglen, unsigned char **der,
                       int *der_len)
{
    size_t half = ec_half(pub);
    ECDSA_SIG *s = NULL;
    CK_RV rv = CKR_HOST_MEMORY;

    if (siglen != 2 * half) return CKR_SIGNATURE_LEN_RANGE;
    if ((s = ecdsa_sig_of(sig, half)) == NULL) goto done;
    *der = NULL;
    if ((*der_len = i2d_ECDSA_SIG(s, der)) <= 0) goto done;
    rv = CKR_OK;
done:
    ECDSA_SIG_free(s);
    return rv;
}

CK_RV hf_ecdsa_der_from_rs(const unsigned char *rs, size_t rs_len, unsigned char *out,
                           size_t *outlen)
{
    ECDSA_SIG *s = NULL;
    unsigned char *p = out;
    int n;
    CK_RV rv = CKR_HOST_MEMORY;

    if (rs == NULL || out == NULL || outlen == NULL || rs_len == 0 || rs_len % 2 != 0 ||
        rs_len / 2 > INT_MAX)
        return CKR_ARGUMENTS_BAD;
    ERR_set_mark();
    if ((s = ecdsa_sig_of(rs, rs_len / 2)) == NULL) goto done;
    rv = CKR_FUNCTION_FAILED;
    if ((n = i2d_ECDSA_SIG(s, NULL)) <= 0) goto done;
    rv = (size_t)n > *outlen ? CKR_BUFFER_TOO_SMALL : CKR_OK;
    if (rv == CKR_OK && i2d_ECDSA_SIG(s, &p) != n) rv = CKR_FUNCTION_FAILED;
    *outlen = (size_t)n;
done:
    ECDSA_SIG_free(s);
    ERR_pop_to_mark();
    return rv;
}

static CK_RV verify_run(EVP_PKEY *pub, const struct hf_asym_params *p, struct tbs *t,
                        const unsigned char *sig, size_t siglen)
{
    EVP_PKEY_CTX *pctx = NULL;
    unsigned char *der = NULL, *block = NULL;
    int der_len = 0;
    CK_RV rv;

    if (pkey_is_ec(pub)) {
        if ((rv = ecdsa_der(pub, sig, siglen, &der, &der_len)) != CKR_OK) goto done;
        sig = der;
        siglen = (size_t)der_len;
    } else {
        if (siglen != (size_t)EVP_PKEY_get_size(pub)) {
            rv = CKR_SIGNATURE_LEN_RANGE;
            goto done;
        }
        if ((rv = rsa_tbs_prepare(pub, p, t, &block)) != CKR_OK) goto done;
    }
    rv = CKR_FUNCTION_FAILED;
    if ((pctx = EVP_PKEY_CTX_new_from_pkey(libctx, pub, NULL)) == NULL ||
        EVP_PKEY_verify_init(pctx) <= 0)
        goto done;
    if (pkey_is_rsa(pub) && (rv = rsa_sig_setup(pctx, p, t->md)) != CKR_OK) goto done;
    rv = EVP_PKEY_verify(pctx, sig, siglen, t->data, t->len) == 1
             ? CKR_OK
             : rv_from_err(CKR_SIGNATURE_INVALID);
    if (rv == CKR_DATA_LEN_RANGE || rv == CKR_DATA_INVALID) rv = CKR_SIGNATURE_INVALID;
done:
    OPENSSL_free(der);
    free(block);
    EVP_PKEY_CTX_free(pctx);
    return rv;
}

CK_RV hf_asym_verify(EVP_PKEY *pub, const struct hf_asym_params *p, const unsigned char *in,
                     size_t inlen, const unsigned char *sig, size_t siglen)
{
    struct tbs t = {.md = NULL};
    CK_RV rv;

    if (pub == NULL || p == NULL || sig == NULL || (in == NULL && inlen != 0))
        return CKR_ARGUMENTS_BAD;
    if (!pkey_is_rsa(pub) && !pkey_is_ec(pub)) return CKR_KEY_TYPE_INCONSISTENT;
    if (pkey_is_rsa(pub) && p->padding == HF_RSA_OAEP) return CKR_MECHANISM_INVALID;
    if (!crypto_is_ready()) return CKR_GENERAL_ERROR;
    ERR_set_mark();
    if ((rv = tbs_prepare(&t, p, in, inlen)) == CKR_OK) rv = verify_run(pub, p, &t, sig, siglen);
    EVP_MD_free(t.md);
    ERR_pop_to_mark();
    return rv;
}

/* p's OAEP hashes (own references; NULL where p names none, and for other paddings). False when
 * one is not known. */
static bool oaep_mds_get(const struct hf_asym_params *p, EVP_MD **md, EVP_MD **mgf1)
{
    *md = *mgf1 = NULL;
    if (p->padding != HF_RSA_OAEP) return true;
    if ((p->md != NULL && (*md = md_get(p->md)) == NULL) ||
        (p->mgf1_md != NULL && (*mgf1 = md_get(p->mgf1_md)) == NULL)) {
        EVP_MD_free(*md);
        *md = NULL;
        return false;
    }
    return true;
}

/* Padding and OAEP parameters of an RSA encryption or decryption context; md and mgf1 are p's
 * hashes (oaep_mds_get). */
static CK_RV rsa_pad_setup(EVP_PKEY_CTX *pctx, const struct hf_asym_params *p, EVP_MD *md,
                           EVP_MD *mgf1)
{
    unsigned char *label = NULL;
    int pad = p->padding == HF_RSA_PKCS1  ? RSA_PKCS1_PADDING
              : p->padding == HF_RSA_OAEP ? RSA_PKCS1_OAEP_PADDING
                                          : RSA_NO_PADDING;
    CK_RV rv = CKR_FUNCTION_FAILED;

    if (EVP_PKEY_CTX_set_rsa_padding(pctx, pad) <= 0) goto done;
    if (p->padding != HF_RSA_OAEP) return CKR_OK;
    rv = CKR_MECHANISM_PARAM_INVALID;
    if (md != NULL && EVP_PKEY_CTX_set_rsa_oaep_md(pctx, md) <= 0) goto done;
    /* MGF1 defaults to the OAEP hash (RFC 8017 A.2.1), which OpenSSL also does. */
    if (mgf1 != NULL && EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, mgf1) <= 0) goto done;
    if (p->label_len != 0) {
        if (p->label == NULL || p->label_len > INT_MAX) goto done;
        if ((label = OPENSSL_memdup(p->label, p->label_len)) == NULL) {
            rv = CKR_HOST_MEMORY;
            goto done;
        }
        if (EVP_PKEY_CTX_set0_rsa_oaep_label(pctx, label, (int)p->label_len) <= 0) goto done;
        label = NULL; /* owned by pctx */
    }
    rv = CKR_OK;
done:
    OPENSSL_free(label);
    return rv;
}

static CK_RV rsa_enc_setup(EVP_PKEY_CTX *pctx, const struct hf_asym_params *p)
{
    EVP_MD *md, *mgf1;
    CK_RV rv;

    if (!oaep_mds_get(p, &md, &mgf1)) return CKR_MECHANISM_PARAM_INVALID;
    rv = rsa_pad_setup(pctx, p, md, mgf1);
    EVP_MD_free(md);
    EVP_MD_free(mgf1);
    return rv;
}

/* The longest message the padding can carry in a k-byte block. */
static CK_RV rsa_enc_capacity(size_t k, const struct hf_asym_params *p, size_t *cap)
{
    EVP_MD *md;
    size_t h;

    switch (p->padding) {
    case HF_RSA_PKCS1: /* RFC 8017 7.2.1 */
        *cap = k - 11;
        return CKR_OK;
    case HF_RSA_RAW:
        *cap = k;
        return CKR_OK;
    case HF_RSA_OAEP: /* RFC 8017 7.1.1: mLen <= k - 2hLen - 2 */
        if ((md = md_get(p->md != NULL ? p->md : "SHA1")) == NULL)
            return CKR_MECHANISM_PARAM_INVALID;
        h = (size_t)EVP_MD_get_size(md);
        EVP_MD_free(md);
        if (k < 2 * h + 2) return CKR_KEY_SIZE_RANGE;
        *cap = k - 2 * h - 2;
        return CKR_OK;
    default:
        return CKR_MECHANISM_INVALID;
    }
}

CK_RV hf_asym_encrypt(EVP_PKEY *pub, const struct hf_asym_params *p, const unsigned char *in,
                      size_t inlen, unsigned char *out, size_t *outlen)
{
    EVP_PKEY_CTX *pctx = NULL;
    unsigned char *block = NULL;
    size_t k, cap;
    CK_RV rv;

    if (pub == NULL || p == NULL || outlen == NULL || (in == NULL && inlen != 0))
        return CKR_ARGUMENTS_BAD;
    if (!pkey_is_rsa(pub)) return CKR_KEY_TYPE_INCONSISTENT;
    if (!crypto_is_ready()) return CKR_GENERAL_ERROR;
    k = (size_t)EVP_PKEY_get_size(pub);
    ERR_set_mark();
    if ((rv = rsa_enc_capacity(k, p, &cap)) != CKR_OK) goto done;
    if (inlen > cap) {
        rv = CKR_DATA_LEN_RANGE;
        goto done;
    }
    if (!out_is_ready(out, outlen, k, &rv)) goto done;
    if (p->padding == HF_RSA_RAW && (rv = raw_block(k, in, inlen, &block)) != CKR_OK) goto done;
    rv = CKR_FUNCTION_FAILED;
    if ((pctx = EVP_PKEY_CTX_new_from_pkey(libctx, pub, NULL)) == NULL ||
        EVP_PKEY_encrypt_init(pctx) <= 0)
        goto done;
    if ((rv = rsa_enc_setup(pctx, p)) != CKR_OK) goto done;
    if (EVP_PKEY_encrypt(pctx, out, outlen, block != NULL ? block : in,
                         block != NULL ? k : inlen) <= 0) {
        rv = rv_from_err(CKR_FUNCTION_FAILED);
        goto done;
    }
    rv = CKR_OK;
done:
    free(block);
    EVP_PKEY_CTX_free(pctx);
    ERR_pop_to_mark();
    return rv;
}

/* A decryption context through EVP_PKEY_decrypt_init and its padding's setup, kept in its
 * material's pool for the next decryption with the same parameters: making one (a provider
 * fetch under OpenSSL's method-store lock, then the OAEP hashes fetched again by name inside
 * the provider) was over a percent of holdfastd's CPU under SAP's RSA-3072 decrypts. A context
 * made while another is in use gets a copy of the key: OpenSSL 3.0 keeps one blinding per RSA
 * key, and every thread but the one that made it shares a second one under a lock (its
 * refresh, every 32 uses, an inversion and an exponentiation), which threads on many cores
 * would queue for. The first context uses the material's key, so a key used by one thread at a
 * time costs no copy of secure-heap memory. */
struct rsa_dec {
    EVP_PKEY_CTX *pctx;
    enum hf_rsa_padding padding;
    EVP_MD *md, *mgf1; /* own references: the hashes it was set up with, NULL where none */
    bool labelled;     /* set up with an OAEP label, which is not kept: never reused */
    bool on_pkey;      /* on the material's own key (pkey_lent) */
};

static void rsa_dec_free(struct rsa_dec *d)
{
    if (d == NULL) return;
    EVP_PKEY_CTX_free(d->pctx); /* the last reference to a copy: OpenSSL clears it */
    EVP_MD_free(d->md);
    EVP_MD_free(d->mgf1);
    free(d);
}

static bool rsa_dec_is_for(const struct rsa_dec *d, const struct hf_asym_params *p, EVP_MD *md,
                           EVP_MD *mgf1)
{
    return !d->labelled && p->label_len == 0 && d->padding == p->padding && d->md == md &&
           d->mgf1 == mgf1;
}

/* A new context on pkey (on_pkey) or on a copy of it; a copy that cannot be made (the secure
 * heap full) leaves it on pkey, slower under contention, never wrong. */
static CK_RV rsa_dec_new(EVP_PKEY *pkey, bool on_pkey, const struct hf_asym_params *p,
                         EVP_MD *md, EVP_MD *mgf1, struct rsa_dec **out)
{
    struct rsa_dec *d = calloc(1, sizeof(*d));
    EVP_PKEY *copy = NULL;
    CK_RV rv = CKR_FUNCTION_FAILED;

    if ((*out = d) == NULL) return CKR_HOST_MEMORY;
    d->padding = p->padding;
    d->labelled = p->label_len != 0;
    d->on_pkey = on_pkey;
    if (md != NULL && EVP_MD_up_ref(md)) d->md = md;
    if (mgf1 != NULL && EVP_MD_up_ref(mgf1)) d->mgf1 = mgf1;
    if (!on_pkey) copy = EVP_PKEY_dup(pkey);
    if ((d->pctx = EVP_PKEY_CTX_new_from_pkey(libctx, copy != NULL ? copy : pkey, NULL)) ==
            NULL ||
        EVP_PKEY_decrypt_init(d->pctx) <= 0)
        goto done;
    rv = rsa_pad_setup(d->pctx, p, md, mgf1);
done:
    EVP_PKEY_free(copy); /* the context holds its own reference */
    if (rv != CKR_OK) {
        rsa_dec_free(d);
        *out = NULL;
    }
    return rv;
}

/* A context of m's key set up for p, from the pool or new. The material is shared and
 * otherwise immutable: only the pool and pkey_lent change, under its lock. */
static CK_RV rsa_dec_take(struct hf_material *m, const struct hf_asym_params *p,
                          struct rsa_dec **out)
{
    struct rsa_dec *d = NULL;
    EVP_MD *md, *mgf1;
    bool on_pkey = false;
    CK_RV rv = CKR_OK;

    if (!oaep_mds_get(p, &md, &mgf1)) return CKR_MECHANISM_PARAM_INVALID;
    pthread_mutex_lock(&m->sign_ctx_lock);
    for (unsigned i = 0; i < m->ndecs && d == NULL; i++) {
        if (!rsa_dec_is_for(m->decs[i], p, md, mgf1)) continue;
        d = m->decs[i];
        m->decs[i] = m->decs[--m->ndecs];
    }
    if (d == NULL && !m->pkey_lent) on_pkey = m->pkey_lent = true;
    pthread_mutex_unlock(&m->sign_ctx_lock);
    if (d == NULL && (rv = rsa_dec_new(m->pkey, on_pkey, p, md, mgf1, &d)) != CKR_OK && on_pkey) {
        pthread_mutex_lock(&m->sign_ctx_lock);
        m->pkey_lent = false;
        pthread_mutex_unlock(&m->sign_ctx_lock);
    }
    EVP_MD_free(md);
    EVP_MD_free(mgf1);
    *out = d;
    return rv;
}

/* Back into the pool whatever the decryption gave: it leaves nothing in the context but its
 * parameters, and a bad ciphertext then costs what a good one does. */
static void rsa_dec_give_back(struct hf_material *m, struct rsa_dec *d)
{
    pthread_mutex_lock(&m->sign_ctx_lock);
    if (!d->labelled && m->ndecs < HF_SIGN_CTX_POOL) {
        m->decs[m->ndecs++] = d;
        d = NULL;
    } else if (d->on_pkey) {
        m->pkey_lent = false;
    }
    pthread_mutex_unlock(&m->sign_ctx_lock);
    rsa_dec_free(d);
}

/* Decrypts into out, which holds k bytes (OpenSSL wants room for a whole block). */
static CK_RV rsa_decrypt_block(struct hf_material *m, const struct hf_asym_params *p,
                               const unsigned char *in, size_t inlen, unsigned char *out,
                               size_t *outlen)
{
    size_t k = (size_t)EVP_PKEY_get_size(m->pkey);
    struct rsa_dec *d = NULL;
    unsigned char *block = NULL;
    CK_RV rv;

    if (p->padding == HF_RSA_RAW && (rv = raw_block(k, in, inlen, &block)) != CKR_OK) {
        rv = CKR_ENCRYPTED_DATA_LEN_RANGE;
        goto done;
    }
    if ((rv = rsa_dec_take(m, p, &d)) != CKR_OK) goto done;
    *outlen = k;
    if (EVP_PKEY_decrypt(d->pctx, out, outlen, block != NULL ? block : in,
                         block != NULL ? k : inlen) <= 0) {
        rv = rv_from_err(CKR_ENCRYPTED_DATA_INVALID);
        if (rv == CKR_DATA_INVALID || rv == CKR_DATA_LEN_RANGE) rv = CKR_ENCRYPTED_DATA_INVALID;
    }
    rsa_dec_give_back(m, d);
done:
    free(block);
    return rv;
}

CK_RV hf_asym_decrypt(const struct hf_material *m, const struct hf_asym_params *p,
                      const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen)
{
    unsigned char *tmp = NULL;
    size_t k, cap, n = 0;
    CK_RV rv;

    if (m == NULL || p == NULL || outlen == NULL || (in == NULL && inlen != 0))
        return CKR_ARGUMENTS_BAD;
    if (m->alg != HF_ALG_RSA || m->pkey == NULL) return CKR_KEY_TYPE_INCONSISTENT;
    k = (size_t)EVP_PKEY_get_size(m->pkey);
    ERR_set_mark();
    if ((rv = rsa_enc_capacity(k, p, &cap)) != CKR_OK) goto done;
    if (p->padding == HF_RSA_RAW ? inlen > k : inlen != k) {
        rv = CKR_ENCRYPTED_DATA_LEN_RANGE;
        goto done;
    }
    /* The size query answers the padding's upper bound; a given buffer is judged against the
     * true length, known only after decryption. */
    if (out == NULL) {
        *outlen = cap;
        goto done;
    }
    if (*outlen >= k) {
        rv = rsa_decrypt_block((struct hf_material *)m, p, in, inlen, out, outlen);
        goto done;
    }
    /* A buffer that fits the message but not a whole block: decrypt aside in locked memory. */
    if ((tmp = hf_secmem_alloc(k)) == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    if ((rv = rsa_decrypt_block((struct hf_material *)m, p, in, inlen, tmp, &n)) != CKR_OK)
        goto done;
    if (n > *outlen) {
        *outlen = n;
        rv = CKR_BUFFER_TOO_SMALL;
        goto done;
    }
    memcpy(out, tmp, n);
    *outlen = n;
done:
    hf_secmem_free(tmp, k);
    ERR_pop_to_mark();
    return rv;
}

/* ---- digests and randomness ---------------------------------------------------------------- */

CK_RV hf_digest(const char *md, const unsigned char *in, size_t inlen, unsigned char *out,
                size_t *outlen)
{
    EVP_MD *d;
    unsigned int n = 0;
    CK_RV rv = CKR_FUNCTION_FAILED;

    if (md == NULL || out == NULL || outlen == NULL || (in == NULL && inlen != 0))
        return CKR_ARGUMENTS_BAD;
    if (!crypto_is_ready()) return CKR_GENERAL_ERROR;
    ERR_set_mark();
    if ((d = md_get(md)) == NULL) {
        rv = CKR_MECHANISM_INVALID;
        goto done;
    }
    if (EVP_Digest(in, inlen, out, &n, d, NULL)) {
        *outlen = n;
        rv = CKR_OK;
    }
done:
    EVP_MD_free(d);
    ERR_pop_to_mark();
    return rv;
}

CK_RV hf_random(unsigned char *out, size_t len)
{
    CK_RV rv;

    if (out == NULL && len != 0) return CKR_ARGUMENTS_BAD;
    if (len == 0) return CKR_OK;
    if (!crypto_is_ready()) return CKR_GENERAL_ERROR;
    ERR_set_mark();
    rv = RAND_bytes_ex(libctx, out, len, 0) == 1 ? CKR_OK : CKR_FUNCTION_FAILED;
    ERR_pop_to_mark();
    return rv;
}
