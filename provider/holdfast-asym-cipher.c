/* ASYM_CIPHER for RSA: decryption on the token (CKM_RSA_PKCS_OAEP, CKM_RSA_PKCS, CKM_RSA_X_509)
 * in one C_DecryptInit + C_Decrypt; encryption, public-key work, in OpenSSL's default provider
 * (private library context) over the key's public half. */
#include "hf-build.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/rsa.h>

#include "provider/provider.h"

static OSSL_FUNC_asym_cipher_newctx_fn rsa_newctx;
static OSSL_FUNC_asym_cipher_freectx_fn rsa_freectx;
static OSSL_FUNC_asym_cipher_dupctx_fn rsa_dupctx;
static OSSL_FUNC_asym_cipher_encrypt_init_fn rsa_encrypt_init;
static OSSL_FUNC_asym_cipher_encrypt_fn rsa_encrypt;
static OSSL_FUNC_asym_cipher_decrypt_init_fn rsa_decrypt_init;
static OSSL_FUNC_asym_cipher_decrypt_fn rsa_decrypt;
static OSSL_FUNC_asym_cipher_get_ctx_params_fn rsa_get_ctx_params;
static OSSL_FUNC_asym_cipher_gettable_ctx_params_fn rsa_gettable_ctx_params;
static OSSL_FUNC_asym_cipher_set_ctx_params_fn rsa_set_ctx_params;
static OSSL_FUNC_asym_cipher_settable_ctx_params_fn rsa_settable_ctx_params;

struct cipher_ctx {
    struct hf_prov *prov;
    struct hf_key *key; /* a reference we hold */
    int operation;      /* EVP_PKEY_OP_ENCRYPT or EVP_PKEY_OP_DECRYPT */
    int pad;            /* RSA_PKCS1_OAEP_PADDING, RSA_PKCS1_PADDING or RSA_NO_PADDING */
    EVP_MD *oaep_md;    /* NULL: SHA-1, OpenSSL's OAEP default */
    EVP_MD *mgf1_md;    /* NULL: the OAEP digest */
    unsigned char *label;
    size_t label_len;
};

static void *rsa_newctx(void *provctx)
{
    struct cipher_ctx *ctx = OPENSSL_zalloc(sizeof(*ctx));

    if (ctx == NULL) {
        HF_RAISE_DATA(provctx, HF_R_OPENSSL_FAILED, "out of memory");
        return NULL;
    }
    ctx->prov = provctx;
    ctx->pad = RSA_PKCS1_PADDING;
    return ctx;
}

static void rsa_freectx(void *vctx)
{
    struct cipher_ctx *ctx = vctx;

    if (ctx == NULL) return;
    hf_key_unref(ctx->key);
    EVP_MD_free(ctx->oaep_md);
    EVP_MD_free(ctx->mgf1_md);
    OPENSSL_free(ctx->label);
    OPENSSL_free(ctx);
}

static void *rsa_dupctx(void *vctx)
{
    const struct cipher_ctx *src = vctx;
    struct cipher_ctx *ctx = OPENSSL_memdup(src, sizeof(*src));

    if (ctx == NULL) goto fail;
    ctx->label = NULL;
    hf_key_ref(ctx->key);
    if (ctx->oaep_md != NULL) EVP_MD_up_ref(ctx->oaep_md);
    if (ctx->mgf1_md != NULL) EVP_MD_up_ref(ctx->mgf1_md);
    if (src->label != NULL && (ctx->label = OPENSSL_memdup(src->label, src->label_len)) == NULL) {
        rsa_freectx(ctx);
        goto fail;
    }
    return ctx;
fail:
    HF_RAISE_DATA(src->prov, HF_R_OPENSSL_FAILED, "out of memory");
    return NULL;
}

/* ---- parameters ---------------------------------------------------------------------------------
 */

static int md_set(struct cipher_ctx *ctx, EVP_MD **slot, const char *name)
{
    OSSL_LIB_CTX *libctx = hf_prov_libctx(ctx->prov);
    EVP_MD *md = libctx != NULL ? EVP_MD_fetch(libctx, name, NULL) : NULL;

    if (md == NULL) {
        HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "unknown digest '%s'", name);
        return 0;
    }
    EVP_MD_free(*slot);
    *slot = md;
    return 1;
}

static int rsa_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    struct cipher_ctx *ctx = vctx;
    const OSSL_PARAM *p;
    const char *s;
    int mode = -1;
    void *label = NULL;
    size_t label_len = 0;

    if (ctx == NULL) return 0;
    if (params == NULL) return 1;
    p = OSSL_PARAM_locate_const(params, OSSL_ASYM_CIPHER_PARAM_PAD_MODE);
    if (p != NULL) {
        if (!hf_mech_rsa_pad_get(p, &mode)) return 0;
        /* RSA_PKCS1_WITH_TLS_PADDING (TLS 1.2 RSA key exchange) and X9.31 are not offered. */
        if (mode != RSA_PKCS1_PADDING && mode != RSA_PKCS1_OAEP_PADDING && mode != RSA_NO_PADDING) {
            HF_RAISE_DATA(ctx->prov, HF_R_UNSUPPORTED, "RSA encryption padding mode");
            return 0;
        }
        ctx->pad = mode;
    }
    p = OSSL_PARAM_locate_const(params, OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST);
    if (p != NULL && (!OSSL_PARAM_get_utf8_string_ptr(p, &s) || !md_set(ctx, &ctx->oaep_md, s)))
        return 0;
    p = OSSL_PARAM_locate_const(params, OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST);
    if (p != NULL && (!OSSL_PARAM_get_utf8_string_ptr(p, &s) || !md_set(ctx, &ctx->mgf1_md, s)))
        return 0;
    p = OSSL_PARAM_locate_const(params, OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL);
    if (p != NULL) {
        if (!OSSL_PARAM_get_octet_string(p, &label, 0, &label_len)) return 0;
        OPENSSL_free(ctx->label);
        ctx->label = label;
        ctx->label_len = label_len;
    }
    return 1;
}

static const OSSL_PARAM *rsa_settable_ctx_params(void *vctx, void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_PAD_MODE, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST_PROPS, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST_PROPS, NULL, 0),
        OSSL_PARAM_octet_string(OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL, NULL, 0),
        OSSL_PARAM_END,
    };
    return table;
}

static const char *oaep_md_name(const struct cipher_ctx *ctx)
{
    return ctx->oaep_md != NULL ? EVP_MD_get0_name(ctx->oaep_md) : "SHA1";
}

static int rsa_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    struct cipher_ctx *ctx = vctx;
    OSSL_PARAM *p;

    if (ctx == NULL) return 0;
    p = OSSL_PARAM_locate(params, OSSL_ASYM_CIPHER_PARAM_PAD_MODE);
    if (p != NULL && !hf_mech_rsa_pad_set(p, ctx->pad)) return 0;
    p = OSSL_PARAM_locate(params, OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST);
    if (p != NULL && !OSSL_PARAM_set_utf8_string(p, oaep_md_name(ctx))) return 0;
    p = OSSL_PARAM_locate(params, OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST);
    if (p != NULL && !OSSL_PARAM_set_utf8_string(p, ctx->mgf1_md ? EVP_MD_get0_name(ctx->mgf1_md)
                                                                 : oaep_md_name(ctx)))
        return 0;
    p = OSSL_PARAM_locate(params, OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL);
    if (p != NULL && !OSSL_PARAM_set_octet_ptr(p, ctx->label, ctx->label_len)) return 0;
    return 1;
}

static const OSSL_PARAM *rsa_gettable_ctx_params(void *vctx, void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_PAD_MODE, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST, NULL, 0),
        OSSL_PARAM_octet_ptr(OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL, NULL, 0),
        OSSL_PARAM_END,
    };
    return table;
}

/* ---- operations ---------------------------------------------------------------------------------
 */

static int rsa_init(struct cipher_ctx *ctx, struct hf_key *key, const OSSL_PARAM params[], int op)
{
    if (ctx == NULL) return 0;
    if (key == NULL) key = ctx->key;
    if (key == NULL || key->type != CKK_RSA || key->pub == NULL) {
        HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "not a usable RSA key");
        return 0;
    }
    if (op == EVP_PKEY_OP_DECRYPT && !hf_key_is_private(key)) {
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
    EVP_MD_free(ctx->oaep_md);
    EVP_MD_free(ctx->mgf1_md);
    ctx->oaep_md = ctx->mgf1_md = NULL;
    OPENSSL_free(ctx->label);
    ctx->label = NULL;
    ctx->label_len = 0;
    return rsa_set_ctx_params(ctx, params);
}

static int rsa_encrypt_init(void *vctx, void *vkey, const OSSL_PARAM params[])
{
    return rsa_init(vctx, vkey, params, EVP_PKEY_OP_ENCRYPT);
}

static int rsa_decrypt_init(void *vctx, void *vkey, const OSSL_PARAM params[])
{
    return rsa_init(vctx, vkey, params, EVP_PKEY_OP_DECRYPT);
}

static int rsa_encrypt(void *vctx, unsigned char *out, size_t *outlen, size_t outsize,
                       const unsigned char *in, size_t inlen)
{
    struct cipher_ctx *ctx = vctx;
    OSSL_LIB_CTX *libctx;
    EVP_PKEY_CTX *pc = NULL;
    unsigned char *label = NULL;
    int ok = 0;

    if (ctx == NULL || ctx->key == NULL || (libctx = hf_prov_libctx(ctx->prov)) == NULL) return 0;
    if ((pc = EVP_PKEY_CTX_new_from_pkey(libctx, ctx->key->pub, NULL)) == NULL ||
        EVP_PKEY_encrypt_init(pc) <= 0 || EVP_PKEY_CTX_set_rsa_padding(pc, ctx->pad) <= 0)
        goto fail;
    if (ctx->pad == RSA_PKCS1_OAEP_PADDING) {
        if ((ctx->oaep_md != NULL && EVP_PKEY_CTX_set_rsa_oaep_md(pc, ctx->oaep_md) <= 0) ||
            (ctx->mgf1_md != NULL && EVP_PKEY_CTX_set_rsa_mgf1_md(pc, ctx->mgf1_md) <= 0))
            goto fail;
        /* set0 takes ownership of the label copy. */
        if (ctx->label != NULL) {
            if ((label = OPENSSL_memdup(ctx->label, ctx->label_len)) == NULL ||
                EVP_PKEY_CTX_set0_rsa_oaep_label(pc, label, (int)ctx->label_len) <= 0)
                goto fail;
            label = NULL;
        }
    }
    if (out == NULL) {
        ok = EVP_PKEY_encrypt(pc, NULL, outlen, in, inlen) > 0;
    } else {
        *outlen = outsize;
        ok = EVP_PKEY_encrypt(pc, out, outlen, in, inlen) > 0;
    }
    if (!ok) goto fail;
    goto done;
fail:
    HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "RSA encryption with the public key failed");
done:
    OPENSSL_free(label);
    EVP_PKEY_CTX_free(pc);
    return ok;
}

static int rsa_decrypt(void *vctx, unsigned char *out, size_t *outlen, size_t outsize,
                       const unsigned char *in, size_t inlen)
{
    struct cipher_ctx *ctx = vctx;
    CK_RSA_PKCS_OAEP_PARAMS oaep;
    CK_MECHANISM mech = {CKM_RSA_PKCS, NULL, 0};
    const EVP_MD *md;
    size_t len = outsize;
    int k;

    if (ctx == NULL || ctx->key == NULL || outlen == NULL) return 0;
    k = EVP_PKEY_get_size(ctx->key->pub);
    if (k <= 0) {
        HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "unknown key size");
        return 0;
    }
    if (out == NULL) {
        *outlen = (size_t)k;
        return 1;
    }
    if (ctx->operation != EVP_PKEY_OP_DECRYPT) {
        HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "context not initialised to decrypt");
        return 0;
    }
    switch (ctx->pad) {
    case RSA_PKCS1_OAEP_PADDING:
        md = ctx->oaep_md;
        if (md == NULL && !md_set(ctx, &ctx->oaep_md, "SHA1")) return 0;
        md = ctx->oaep_md;
        oaep.hashAlg = hf_mech_digest(md);
        oaep.mgf = hf_mech_mgf1(ctx->mgf1_md != NULL ? ctx->mgf1_md : md);
        if (oaep.hashAlg == 0 || oaep.mgf == 0) {
            HF_RAISE_DATA(ctx->prov, HF_R_UNSUPPORTED, "OAEP with %s", EVP_MD_get0_name(md));
            return 0;
        }
        oaep.source = CKZ_DATA_SPECIFIED;
        oaep.pSourceData = ctx->label;
        oaep.ulSourceDataLen = ctx->label_len;
        mech = (CK_MECHANISM){CKM_RSA_PKCS_OAEP, &oaep, sizeof(oaep)};
        break;
    case RSA_NO_PADDING:
        mech.mechanism = CKM_RSA_X_509;
        break;
    default:
        break;
    }
    if (!hf_key_op(ctx->key, HF_KEY_DECRYPT, &mech, in, inlen, out, &len)) return 0;
    *outlen = len;
    return 1;
}

const OSSL_DISPATCH hf_rsa_asym_cipher_functions[] = {
    {OSSL_FUNC_ASYM_CIPHER_NEWCTX, (void (*)(void))rsa_newctx},
    {OSSL_FUNC_ASYM_CIPHER_FREECTX, (void (*)(void))rsa_freectx},
    {OSSL_FUNC_ASYM_CIPHER_DUPCTX, (void (*)(void))rsa_dupctx},
    {OSSL_FUNC_ASYM_CIPHER_ENCRYPT_INIT, (void (*)(void))rsa_encrypt_init},
    {OSSL_FUNC_ASYM_CIPHER_ENCRYPT, (void (*)(void))rsa_encrypt},
    {OSSL_FUNC_ASYM_CIPHER_DECRYPT_INIT, (void (*)(void))rsa_decrypt_init},
    {OSSL_FUNC_ASYM_CIPHER_DECRYPT, (void (*)(void))rsa_decrypt},
    {OSSL_FUNC_ASYM_CIPHER_GET_CTX_PARAMS, (void (*)(void))rsa_get_ctx_params},
    {OSSL_FUNC_ASYM_CIPHER_GETTABLE_CTX_PARAMS, (void (*)(void))rsa_gettable_ctx_params},
    {OSSL_FUNC_ASYM_CIPHER_SET_CTX_PARAMS, (void (*)(void))rsa_set_ctx_params},
    {OSSL_FUNC_ASYM_CIPHER_SETTABLE_CTX_PARAMS, (void (*)(void))rsa_settable_ctx_params},
    {0, NULL},
};
