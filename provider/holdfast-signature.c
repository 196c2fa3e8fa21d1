/* SIGNATURE: RSA (PKCS#1 v1.5, PSS, raw) and ECDSA, pre-hashed (EVP_PKEY_sign) and digest-sign
 * (EVP_DigestSign).
 *
 * Signing: the message is hashed here, with OpenSSL in the provider's private library context,
 * and the token signs the digest in one C_SignInit + C_Sign (CKM_RSA_PKCS over a DigestInfo,
 * CKM_RSA_PKCS_PSS, CKM_ECDSA): any module has those mechanisms, and the pooled session is busy
 * for one call only, never across a caller's updates. Holdfast's module also signs ECDSA straight
 * into DER (CKM_HF_ECDSA_DER), which spares converting r || s back here.
 *
 * Verifying, and the AlgorithmIdentifier a certificate needs, are public-key work: they run in
 * OpenSSL's default provider (private library context) over the key's public half. */
#include "hf-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/objects.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include "provider/provider.h"

static OSSL_FUNC_signature_newctx_fn rsa_newctx;
static OSSL_FUNC_signature_newctx_fn ecdsa_newctx;
static OSSL_FUNC_signature_freectx_fn sig_freectx;
static OSSL_FUNC_signature_dupctx_fn sig_dupctx;
static OSSL_FUNC_signature_sign_init_fn sig_sign_init;
static OSSL_FUNC_signature_sign_fn sig_sign;
static OSSL_FUNC_signature_verify_init_fn sig_verify_init;
static OSSL_FUNC_signature_verify_fn sig_verify;
static OSSL_FUNC_signature_digest_sign_init_fn sig_digest_sign_init;
static OSSL_FUNC_signature_digest_sign_update_fn sig_digest_update;
static OSSL_FUNC_signature_digest_sign_final_fn sig_digest_sign_final;
static OSSL_FUNC_signature_digest_verify_init_fn sig_digest_verify_init;
static OSSL_FUNC_signature_digest_verify_update_fn sig_digest_verify_update;
static OSSL_FUNC_signature_digest_verify_final_fn sig_digest_verify_final;
static OSSL_FUNC_signature_get_ctx_params_fn sig_get_ctx_params;
static OSSL_FUNC_signature_gettable_ctx_params_fn rsa_gettable_ctx_params;
static OSSL_FUNC_signature_gettable_ctx_params_fn ecdsa_gettable_ctx_params;
static OSSL_FUNC_signature_set_ctx_params_fn sig_set_ctx_params;
static OSSL_FUNC_signature_settable_ctx_params_fn rsa_settable_ctx_params;
static OSSL_FUNC_signature_settable_ctx_params_fn ecdsa_settable_ctx_params;

struct sig_ctx {
    struct hf_prov *prov;
    CK_KEY_TYPE type;   /* the algorithm this context serves: CKK_RSA or CKK_EC */
    struct hf_key *key; /* a reference we hold */
    int operation;      /* EVP_PKEY_OP_SIGN or EVP_PKEY_OP_VERIFY */
    int pad;            /* RSA: RSA_PKCS1_PADDING, RSA_PKCS1_PSS_PADDING or RSA_NO_PADDING */
    int saltlen;        /* RSA PSS: a length or RSA_PSS_SALTLEN_DIGEST/_AUTO/_MAX */
    EVP_MD *md;         /* NULL: the input is signed as given */
    EVP_MD *mgf1_md;    /* NULL: md */
    EVP_MD_CTX *mdctx;  /* digest-sign/verify: the message hashed so far */
    bool md_fixed;      /* digest-sign/verify: the digest cannot change mid-message */
};

static void *sig_newctx(void *provctx, CK_KEY_TYPE type)
{
    struct sig_ctx *ctx = OPENSSL_zalloc(sizeof(*ctx));

    if (ctx == NULL) {
        HF_RAISE_DATA(provctx, HF_R_OPENSSL_FAILED, "out of memory");
        return NULL;
    }
    ctx->prov = provctx;
    ctx->type = type;
    return ctx;
}

static void *rsa_newctx(void *provctx, const char *propq)
{
    return sig_newctx(provctx, CKK_RSA);
}

static void *ecdsa_newctx(void *provctx, const char *propq)
{
    return sig_newctx(provctx, CKK_EC);
}

static void sig_freectx(void *vctx)
{
    struct sig_ctx *ctx = vctx;

    if (ctx == NULL) return;
    hf_key_unref(ctx->key);
    EVP_MD_free(ctx->md);
    EVP_MD_free(ctx->mgf1_md);
    EVP_MD_CTX_free(ctx->mdctx);
    OPENSSL_free(ctx);
}

static void *sig_dupctx(void *vctx)
{
    const struct sig_ctx *src = vctx;
    struct sig_ctx *ctx = OPENSSL_memdup(src, sizeof(*src));

    if (ctx == NULL) {
        HF_RAISE_DATA(src->prov, HF_R_OPENSSL_FAILED, "out of memory");
        return NULL;
    }
    ctx->mdctx = NULL;
    hf_key_ref(ctx->key);
    if ((ctx->md != NULL && !EVP_MD_up_ref(ctx->md)) ||
        (ctx->mgf1_md != NULL && !EVP_MD_up_ref(ctx->mgf1_md))) {
        /* up_ref of a fetched method cannot fail short of a broken library: keep it simple. */
        ctx->md = ctx->mgf1_md = NULL;
        ctx->key = NULL;
        sig_freectx(ctx);
        return NULL;
    }
    if (src->mdctx != NULL &&
        ((ctx->mdctx = EVP_MD_CTX_new()) == NULL || !EVP_MD_CTX_copy_ex(ctx->mdctx, src->mdctx))) {
        HF_RAISE_DATA(src->prov, HF_R_OPENSSL_FAILED, "cannot copy the digest state");
        sig_freectx(ctx);
        return NULL;
    }
    return ctx;
}

/* ---- parameters ---------------------------------------------------------------------------------
 */

static int digest_set(struct sig_ctx *ctx, EVP_MD **slot, const char *name)
{
    OSSL_LIB_CTX *libctx = hf_prov_libctx(ctx->prov);
    EVP_MD *md;

    if (libctx == NULL) return 0;
    if (slot == &ctx->md && ctx->md_fixed && ctx->md != NULL) {
        if (EVP_MD_is_a(ctx->md, name)) return 1;
        HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT,
                      "the digest cannot change once a message is being signed");
        return 0;
    }
    /* Property queries name the caller's providers, not ours: the digest is fetched by name
     * from the default provider. */
    md = EVP_MD_fetch(libctx, name, NULL);
    if (md == NULL) {
        HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "unknown digest '%s'", name);
        return 0;
    }
    EVP_MD_free(*slot);
    *slot = md;
    return 1;
}

static const struct {
    int len;
    const char *name;
} salt_names[] = {
    {RSA_PSS_SALTLEN_DIGEST, OSSL_PKEY_RSA_PSS_SALT_LEN_DIGEST},
    {RSA_PSS_SALTLEN_MAX, OSSL_PKEY_RSA_PSS_SALT_LEN_MAX},
    {RSA_PSS_SALTLEN_AUTO, OSSL_PKEY_RSA_PSS_SALT_LEN_AUTO},
};

#define SALTLEN_INVALID (-100)

static int sig_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    struct sig_ctx *ctx = vctx;
    const OSSL_PARAM *p;
    const char *s;
    int mode = -1;

    if (ctx == NULL) return 0;
    if (params == NULL) return 1;
    p = OSSL_PARAM_locate_const(params, OSSL_SIGNATURE_PARAM_DIGEST);
    if (p != NULL && (!OSSL_PARAM_get_utf8_string_ptr(p, &s) || !digest_set(ctx, &ctx->md, s)))
        return 0;
    if (ctx->type != CKK_RSA) return 1;

    p = OSSL_PARAM_locate_const(params, OSSL_SIGNATURE_PARAM_PAD_MODE);
    if (p != NULL) {
        if (!hf_mech_rsa_pad_get(p, &mode)) return 0;
        if (mode != RSA_PKCS1_PADDING && mode != RSA_PKCS1_PSS_PADDING && mode != RSA_NO_PADDING) {
            HF_RAISE_DATA(ctx->prov, HF_R_UNSUPPORTED, "RSA signature padding mode");
            return 0;
        }
        ctx->pad = mode;
    }
    p = OSSL_PARAM_locate_const(params, OSSL_SIGNATURE_PARAM_PSS_SALTLEN);
    if (p != NULL) {
        int len = SALTLEN_INVALID;
        if (p->data_type == OSSL_PARAM_UTF8_STRING) {
            if (!OSSL_PARAM_get_utf8_string_ptr(p, &s)) return 0;
            for (size_t i = 0; i < sizeof(salt_names) / sizeof(salt_names[0]); i++)
                if (strcmp(s, salt_names[i].name) == 0) len = salt_names[i].len;
            if (len == SALTLEN_INVALID) {
                /* A number as a string, as `-pkeyopt rsa_pss_saltlen:32` passes it. */
                char *end;
                long v = strtol(s, &end, 10);
                if (*s != '\0' && *end == '\0' && v >= 0 && v <= 65535) len = (int)v;
            }
        } else if (!OSSL_PARAM_get_int(p, &len)) {
            return 0;
        }
        if (len < RSA_PSS_SALTLEN_MAX) {
            HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "PSS salt length");
            return 0;
        }
        ctx->saltlen = len;
    }
    p = OSSL_PARAM_locate_const(params, OSSL_SIGNATURE_PARAM_MGF1_DIGEST);
    if (p != NULL && (!OSSL_PARAM_get_utf8_string_ptr(p, &s) || !digest_set(ctx, &ctx->mgf1_md, s)))
        return 0;
    return 1;
}

static const OSSL_PARAM *rsa_settable_ctx_params(void *vctx, void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PROPERTIES, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PAD_MODE, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PSS_SALTLEN, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_MGF1_DIGEST, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_MGF1_PROPERTIES, NULL, 0),
        OSSL_PARAM_END,
    };
    return table;
}

static const OSSL_PARAM *ecdsa_settable_ctx_params(void *vctx, void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PROPERTIES, NULL, 0),
        OSSL_PARAM_END,
    };
    return table;
}

/* The salt length to sign with (RFC 8017 9.1.1: emLen >= hLen + sLen + 2). 1 or 0 (raised). */
static int pss_saltlen(const struct sig_ctx *ctx, CK_ULONG *out)
{
    int hlen = EVP_MD_get_size(ctx->md), bits = EVP_PKEY_get_bits(ctx->key->pub);
    int emlen = (bits - 1 + 7) / 8, max = emlen - hlen - 2;

    if (hlen <= 0 || bits <= 0 || max < 0) {
        HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "key too small for PSS with this digest");
        return 0;
    }
    switch (ctx->saltlen) {
    case RSA_PSS_SALTLEN_DIGEST:
        *out = (CK_ULONG)hlen;
        break;
    case RSA_PSS_SALTLEN_AUTO: /* when signing, "auto" is the largest salt */
    case RSA_PSS_SALTLEN_MAX:
        *out = (CK_ULONG)max;
        break;
    default:
        *out = (CK_ULONG)ctx->saltlen;
        break;
    }
    if (*out > (CK_ULONG)max) {
        HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "PSS salt longer than the key allows");
        return 0;
    }
    return 1;
}

/* The same operation in OpenSSL's default provider over the public half: for verifying and for
 * the signature's AlgorithmIdentifier. NULL with an error raised. */
static EVP_PKEY_CTX *public_ctx(const struct sig_ctx *ctx)
{
    OSSL_LIB_CTX *libctx = hf_prov_libctx(ctx->prov);
    EVP_PKEY_CTX *pc = libctx ? EVP_PKEY_CTX_new_from_pkey(libctx, ctx->key->pub, NULL) : NULL;
    CK_ULONG salt;

    if (pc == NULL || EVP_PKEY_verify_init(pc) <= 0 ||
        (ctx->md != NULL && EVP_PKEY_CTX_set_signature_md(pc, ctx->md) <= 0))
        goto fail;
    if (ctx->type == CKK_RSA) {
        if (EVP_PKEY_CTX_set_rsa_padding(pc, ctx->pad) <= 0) goto fail;
        if (ctx->pad == RSA_PKCS1_PSS_PADDING) {
            /* Signing states the length it uses (for the AlgorithmIdentifier); verifying with
             * "auto" accepts whatever length the signature has. */
            if (ctx->md != NULL &&
                (ctx->operation == EVP_PKEY_OP_SIGN || ctx->saltlen != RSA_PSS_SALTLEN_AUTO)) {
                if (!pss_saltlen(ctx, &salt)) goto fail_quiet;
                if (EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, (int)salt) <= 0) goto fail;
            }
            if ((ctx->mgf1_md != NULL || ctx->md != NULL) &&
                EVP_PKEY_CTX_set_rsa_mgf1_md(pc, ctx->mgf1_md ? ctx->mgf1_md : ctx->md) <= 0)
                goto fail;
        }
    }
    return pc;
fail:
    HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "cannot set up the public-key operation");
fail_quiet:
    EVP_PKEY_CTX_free(pc);
    return NULL;
}

static int sig_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    struct sig_ctx *ctx = vctx;
    OSSL_PARAM *p;

    if (ctx == NULL) return 0;
    p = OSSL_PARAM_locate(params, OSSL_SIGNATURE_PARAM_ALGORITHM_ID);
    if (p != NULL) {
        EVP_PKEY_CTX *pc;
        OSSL_PARAM one[2] = {*p, OSSL_PARAM_END};
        int ok;

        if (ctx->key == NULL) return 0;
        if ((pc = public_ctx(ctx)) == NULL) return 0;
        ok = EVP_PKEY_CTX_get_params(pc, one);
        EVP_PKEY_CTX_free(pc);
        if (!ok) {
            HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "no AlgorithmIdentifier");
            return 0;
        }
        p->return_size = one[0].return_size;
    }
    p = OSSL_PARAM_locate(params, OSSL_SIGNATURE_PARAM_DIGEST);
    if (p != NULL && !OSSL_PARAM_set_utf8_string(p, ctx->md ? EVP_MD_get0_name(ctx->md) : ""))
        return 0;
    if (ctx->type != CKK_RSA) return 1;
    p = OSSL_PARAM_locate(params, OSSL_SIGNATURE_PARAM_PAD_MODE);
    if (p != NULL && !hf_mech_rsa_pad_set(p, ctx->pad)) return 0;
    p = OSSL_PARAM_locate(params, OSSL_SIGNATURE_PARAM_PSS_SALTLEN);
    if (p != NULL) {
        int ok = 0;
        if (p->data_type == OSSL_PARAM_INTEGER) {
            ok = OSSL_PARAM_set_int(p, ctx->saltlen);
        } else {
            char num[16];
            snprintf(num, sizeof(num), "%d", ctx->saltlen);
            ok = OSSL_PARAM_set_utf8_string(p, num);
            for (size_t i = 0; i < sizeof(salt_names) / sizeof(salt_names[0]); i++)
                if (salt_names[i].len == ctx->saltlen)
                    ok = OSSL_PARAM_set_utf8_string(p, salt_names[i].name);
        }
        if (!ok) return 0;
    }
    p = OSSL_PARAM_locate(params, OSSL_SIGNATURE_PARAM_MGF1_DIGEST);
    if (p != NULL) {
        const EVP_MD *m = ctx->mgf1_md ? ctx->mgf1_md : ctx->md;
        if (!OSSL_PARAM_set_utf8_string(p, m ? EVP_MD_get0_name(m) : "")) return 0;
    }
    return 1;
}

static const OSSL_PARAM *rsa_gettable_ctx_params(void *vctx, void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_octet_string(OSSL_SIGNATURE_PARAM_ALGORITHM_ID, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PAD_MODE, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PSS_SALTLEN, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_MGF1_DIGEST, NULL, 0),
        OSSL_PARAM_END,
    };
    return table;
}

static const OSSL_PARAM *ecdsa_gettable_ctx_params(void *vctx, void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_octet_string(OSSL_SIGNATURE_PARAM_ALGORITHM_ID, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, NULL, 0),
        OSSL_PARAM_END,
    };
    return table;
}

/* ---- init -------------------------------------------------------------------------------------
 */

static int sig_init(struct sig_ctx *ctx, struct hf_key *key, const OSSL_PARAM params[], int op)
{
    if (ctx == NULL) return 0;
    if (key == NULL) key = ctx->key; /* re-initialising with the same key */
    if (key == NULL || key->type != ctx->type || key->pub == NULL) {
        HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "not a usable %s key",
                      hf_key_type_name(ctx->type));
        return 0;
    }
    if (op == EVP_PKEY_OP_SIGN && !hf_key_is_private(key)) {
        HF_RAISE(ctx->prov, HF_R_PUBLIC_KEY_ONLY);
        return 0;
    }
    if (key != ctx->key) {
        hf_key_ref(key);
        hf_key_unref(ctx->key);
        ctx->key = key;
    }
    ctx->operation = op;
    ctx->pad = RSA_PKCS1_PADDING;
    ctx->saltlen = RSA_PSS_SALTLEN_AUTO;
    ctx->md_fixed = false;
    EVP_MD_free(ctx->md);
    EVP_MD_free(ctx->mgf1_md);
    ctx->md = ctx->mgf1_md = NULL;
    return sig_set_ctx_params(ctx, params);
}

static int sig_sign_init(void *vctx, void *vkey, const OSSL_PARAM params[])
{
    return sig_init(vctx, vkey, params, EVP_PKEY_OP_SIGN);
}

static int sig_verify_init(void *vctx, void *vkey, const OSSL_PARAM params[])
{
    return sig_init(vctx, vkey, params, EVP_PKEY_OP_VERIFY);
}

/* ---- sign and verify ----------------------------------------------------------------------------
 */

/* DER DigestInfo (RFC 8017 9.2 step 2) of a digest made with md. */
static int digest_info(struct sig_ctx *ctx, const unsigned char *dgst, size_t len,
                       unsigned char **der, int *der_len)
{
    X509_SIG *sig = X509_SIG_new();
    X509_ALGOR *alg;
    ASN1_OCTET_STRING *oct;
    ASN1_OBJECT *oid = OBJ_nid2obj(EVP_MD_get_type(ctx->md));
    int ok = 0;

    *der = NULL;
    if (sig == NULL || oid == NULL || OBJ_obj2nid(oid) == NID_undef) goto done;
    X509_SIG_getm(sig, &alg, &oct);
    if (!X509_ALGOR_set0(alg, oid, V_ASN1_NULL, NULL) ||
        !ASN1_OCTET_STRING_set(oct, dgst, (int)len))
        goto done;
    *der_len = i2d_X509_SIG(sig, der);
    ok = *der_len > 0;
done:
    if (!ok) HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "cannot encode the DigestInfo");
    X509_SIG_free(sig);
    return ok;
}

static int rsa_sign(struct sig_ctx *ctx, unsigned char *sig, size_t *siglen, size_t sigsize,
                    const unsigned char *tbs, size_t tbslen)
{
    CK_MECHANISM mech = {CKM_RSA_PKCS, NULL, 0};
    CK_RSA_PKCS_PSS_PARAMS pss;
    unsigned char *der = NULL;
    int der_len = 0, ok = 0;
    size_t len = sigsize;

    switch (ctx->pad) {
    case RSA_PKCS1_PADDING:
        if (ctx->md != NULL) {
            if (!digest_info(ctx, tbs, tbslen, &der, &der_len)) goto done;
            tbs = der;
            tbslen = (size_t)der_len;
        }
        break;
    case RSA_PKCS1_PSS_PADDING:
        if (ctx->md == NULL) {
            HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "PSS needs a digest");
            goto done;
        }
        pss.hashAlg = hf_mech_digest(ctx->md);
        pss.mgf = hf_mech_mgf1(ctx->mgf1_md ? ctx->mgf1_md : ctx->md);
        if (pss.hashAlg == 0 || pss.mgf == 0) {
            HF_RAISE_DATA(ctx->prov, HF_R_UNSUPPORTED, "PSS with %s", EVP_MD_get0_name(ctx->md));
            goto done;
        }
        if (!pss_saltlen(ctx, &pss.sLen)) goto done;
        mech = (CK_MECHANISM){CKM_RSA_PKCS_PSS, &pss, sizeof(pss)};
        break;
    default: /* RSA_NO_PADDING */
        if (ctx->md != NULL) {
            HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "no padding with a digest");
            goto done;
        }
        mech.mechanism = CKM_RSA_X_509;
        break;
    }
    if (!hf_key_op(ctx->key, HF_KEY_SIGN, &mech, tbs, tbslen, sig, &len)) goto done;
    *siglen = len;
    ok = 1;
done:
    OPENSSL_free(der);
    return ok;
}

/* Holdfast's module signs into DER itself. */
static int ecdsa_sign_der(struct sig_ctx *ctx, unsigned char *sig, size_t *siglen, size_t sigsize,
                          const unsigned char *tbs, size_t tbslen)
{
    CK_MECHANISM mech = {CKM_HF_ECDSA_DER, NULL, 0};
    size_t len = sigsize;

    if (!hf_key_op(ctx->key, HF_KEY_SIGN, &mech, tbs, tbslen, sig, &len)) return 0;
    *siglen = len;
    return 1;
}

/* PKCS#11 gives r || s (2.40 section 2.3.1); OpenSSL wants DER ECDSA-Sig-Value. */
static int ecdsa_sign(struct sig_ctx *ctx, unsigned char *sig, size_t *siglen, size_t sigsize,
                      const unsigned char *tbs, size_t tbslen)
{
    CK_MECHANISM mech = {CKM_ECDSA, NULL, 0};
    unsigned char raw[2 * 66]; /* P-521's r || s */
    size_t raw_len = sizeof(raw), half;
    ECDSA_SIG *es = NULL;
    BIGNUM *r = NULL, *s = NULL;
    unsigned char *out = sig;
    int der_len, ok = 0;

    if (!hf_key_op(ctx->key, HF_KEY_SIGN, &mech, tbs, tbslen, raw, &raw_len)) goto done;
    if (raw_len == 0 || raw_len % 2 != 0) {
        HF_RAISE_DATA(ctx->prov, HF_R_PKCS11_ERROR, "ECDSA signature of odd length %zu", raw_len);
        goto done;
    }
    half = raw_len / 2;
    if ((es = ECDSA_SIG_new()) == NULL || (r = BN_bin2bn(raw, (int)half, NULL)) == NULL ||
        (s = BN_bin2bn(raw + half, (int)half, NULL)) == NULL || !ECDSA_SIG_set0(es, r, s))
        goto fail;
    r = s = NULL; /* owned by es */
    /* One encoding, straight into sig: sig_sign checked sigsize against EVP_PKEY_get_size,
     * the largest DER signature of the curve. */
    if (sigsize < (size_t)EVP_PKEY_get_size(ctx->key->pub)) {
        HF_RAISE(ctx->prov, HF_R_BUFFER_TOO_SMALL);
        goto done;
    }
    if ((der_len = i2d_ECDSA_SIG(es, &out)) <= 0) goto fail;
    *siglen = (size_t)der_len;
    ok = 1;
    goto done;
fail:
    HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "cannot encode the ECDSA signature");
done:
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(es);
    OPENSSL_cleanse(raw, sizeof(raw));
    return ok;
}

static int sig_sign(void *vctx, unsigned char *sig, size_t *siglen, size_t sigsize,
                    const unsigned char *tbs, size_t tbslen)
{
    struct sig_ctx *ctx = vctx;
    int max;

    if (ctx == NULL || ctx->key == NULL || siglen == NULL) return 0;
    max = EVP_PKEY_get_size(ctx->key->pub);
    if (max <= 0) {
        HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "unknown signature size");
        return 0;
    }
    if (sig == NULL) {
        *siglen = (size_t)max;
        return 1;
    }
    if (ctx->operation != EVP_PKEY_OP_SIGN) {
        HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "context not initialised for signing");
        return 0;
    }
    if (sigsize < (size_t)max) {
        HF_RAISE_DATA(ctx->prov, HF_R_BUFFER_TOO_SMALL, "%zu bytes, %d needed", sigsize, max);
        return 0;
    }
    if (ctx->md != NULL && tbslen != (size_t)EVP_MD_get_size(ctx->md)) {
        HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "input is not a %s digest",
                      EVP_MD_get0_name(ctx->md));
        return 0;
    }
    if (ctx->type == CKK_RSA) return rsa_sign(ctx, sig, siglen, sigsize, tbs, tbslen);
    return hf_key_signs_ecdsa_der(ctx->key) ? ecdsa_sign_der(ctx, sig, siglen, sigsize, tbs, tbslen)
                                            : ecdsa_sign(ctx, sig, siglen, sigsize, tbs, tbslen);
}

static int sig_verify(void *vctx, const unsigned char *sig, size_t siglen, const unsigned char *tbs,
                      size_t tbslen)
{
    struct sig_ctx *ctx = vctx;
    EVP_PKEY_CTX *pc;
    int r;

    if (ctx == NULL || ctx->key == NULL) return 0;
    if ((pc = public_ctx(ctx)) == NULL) return 0;
    r = EVP_PKEY_verify(pc, sig, siglen, tbs, tbslen);
    EVP_PKEY_CTX_free(pc);
    return r == 1;
}

/* ---- digest-sign and digest-verify --------------------------------------------------------------
 */

static int digest_init(struct sig_ctx *ctx, const char *mdname, struct hf_key *key,
                       const OSSL_PARAM params[], int op)
{
    char deflt[64];

    if (!sig_init(ctx, key, params, op)) return 0;
    if (mdname == NULL && ctx->md == NULL) {
        /* OpenSSL passes the key's default digest; be as kind to a direct caller. */
        if (EVP_PKEY_get_default_digest_name(ctx->key->pub, deflt, sizeof(deflt)) <= 0) {
            HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "no digest given");
            return 0;
        }
        mdname = deflt;
    }
    if (mdname != NULL && !digest_set(ctx, &ctx->md, mdname)) return 0;
    if (ctx->mdctx == NULL && (ctx->mdctx = EVP_MD_CTX_new()) == NULL) {
        HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "out of memory");
        return 0;
    }
    if (!EVP_DigestInit_ex2(ctx->mdctx, ctx->md, NULL)) {
        HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "cannot start %s", mdname);
        return 0;
    }
    ctx->md_fixed = true;
    return 1;
}

static int sig_digest_sign_init(void *vctx, const char *mdname, void *vkey,
                                const OSSL_PARAM params[])
{
    return digest_init(vctx, mdname, vkey, params, EVP_PKEY_OP_SIGN);
}

static int sig_digest_verify_init(void *vctx, const char *mdname, void *vkey,
                                  const OSSL_PARAM params[])
{
    return digest_init(vctx, mdname, vkey, params, EVP_PKEY_OP_VERIFY);
}

static int sig_digest_update(void *vctx, const unsigned char *data, size_t datalen)
{
    struct sig_ctx *ctx = vctx;

    if (ctx == NULL || ctx->mdctx == NULL) return 0;
    return EVP_DigestUpdate(ctx->mdctx, data, datalen);
}

static int sig_digest_verify_update(void *vctx, const unsigned char *data, size_t datalen)
{
    return sig_digest_update(vctx, data, datalen);
}

static int sig_digest_sign_final(void *vctx, unsigned char *sig, size_t *siglen, size_t sigsize)
{
    struct sig_ctx *ctx = vctx;
    unsigned char dgst[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;

    if (ctx == NULL || ctx->mdctx == NULL) return 0;
    if (sig == NULL) return sig_sign(ctx, NULL, siglen, 0, NULL, 0); /* size only */
    if (!EVP_DigestFinal_ex(ctx->mdctx, dgst, &dlen)) {
        HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "digest failed");
        return 0;
    }
    return sig_sign(ctx, sig, siglen, sigsize, dgst, dlen);
}

static int sig_digest_verify_final(void *vctx, const unsigned char *sig, size_t siglen)
{
    struct sig_ctx *ctx = vctx;
    unsigned char dgst[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;

    if (ctx == NULL || ctx->mdctx == NULL) return 0;
    if (!EVP_DigestFinal_ex(ctx->mdctx, dgst, &dlen)) {
        HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "digest failed");
        return 0;
    }
    return sig_verify(ctx, sig, siglen, dgst, dlen);
}

#define SIGNATURE_COMMON                                                                           \
    {OSSL_FUNC_SIGNATURE_FREECTX, (void (*)(void))sig_freectx},                                    \
        {OSSL_FUNC_SIGNATURE_DUPCTX, (void (*)(void))sig_dupctx},                                  \
        {OSSL_FUNC_SIGNATURE_SIGN_INIT, (void (*)(void))sig_sign_init},                            \
        {OSSL_FUNC_SIGNATURE_SIGN, (void (*)(void))sig_sign},                                      \
        {OSSL_FUNC_SIGNATURE_VERIFY_INIT, (void (*)(void))sig_verify_init},                        \
        {OSSL_FUNC_SIGNATURE_VERIFY, (void (*)(void))sig_verify},                                  \
        {OSSL_FUNC_SIGNATURE_DIGEST_SIGN_INIT, (void (*)(void))sig_digest_sign_init},              \
        {OSSL_FUNC_SIGNATURE_DIGEST_SIGN_UPDATE, (void (*)(void))sig_digest_update},               \
        {OSSL_FUNC_SIGNATURE_DIGEST_SIGN_FINAL, (void (*)(void))sig_digest_sign_final},            \
        {OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_INIT, (void (*)(void))sig_digest_verify_init},          \
        {OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_UPDATE, (void (*)(void))sig_digest_verify_update},      \
        {OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_FINAL, (void (*)(void))sig_digest_verify_final},        \
        {OSSL_FUNC_SIGNATURE_GET_CTX_PARAMS, (void (*)(void))sig_get_ctx_params},                  \
    {                                                                                              \
        OSSL_FUNC_SIGNATURE_SET_CTX_PARAMS, (void (*)(void))sig_set_ctx_params                     \
    }

const OSSL_DISPATCH hf_rsa_signature_functions[] = {
    {OSSL_FUNC_SIGNATURE_NEWCTX, (void (*)(void))rsa_newctx},
    {OSSL_FUNC_SIGNATURE_GETTABLE_CTX_PARAMS, (void (*)(void))rsa_gettable_ctx_params},
    {OSSL_FUNC_SIGNATURE_SETTABLE_CTX_PARAMS, (void (*)(void))rsa_settable_ctx_params},
    SIGNATURE_COMMON,
    {0, NULL},
};

const OSSL_DISPATCH hf_ecdsa_signature_functions[] = {
    {OSSL_FUNC_SIGNATURE_NEWCTX, (void (*)(void))ecdsa_newctx},
    {OSSL_FUNC_SIGNATURE_GETTABLE_CTX_PARAMS, (void (*)(void))ecdsa_gettable_ctx_params},
    {OSSL_FUNC_SIGNATURE_SETTABLE_CTX_PARAMS, (void (*)(void))ecdsa_settable_ctx_params},
    SIGNATURE_COMMON,
    {0, NULL},
};
