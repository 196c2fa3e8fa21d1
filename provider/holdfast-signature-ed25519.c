/* SIGNATURE for Ed25519: one-shot digest-sign and digest-verify only, as OpenSSL's own Ed25519
 * (RFC 8032 hashes the message inside the signature: there is no digest to choose, and no
 * multi-part form in OpenSSL 3.0 or in PKCS#11's CKM_EDDSA). The token signs the message with
 * CKM_EDDSA; verifying is public-key work, in the provider's private library context. */
#include "hf-build.h"

#include <string.h>

#include <openssl/core_names.h>

#include "provider/provider.h"

#define ED25519_SIG_LEN 64

static OSSL_FUNC_signature_newctx_fn ed_newctx;
static OSSL_FUNC_signature_freectx_fn ed_freectx;
static OSSL_FUNC_signature_dupctx_fn ed_dupctx;
static OSSL_FUNC_signature_digest_sign_init_fn ed_digest_sign_init;
static OSSL_FUNC_signature_digest_sign_fn ed_digest_sign;
static OSSL_FUNC_signature_digest_verify_init_fn ed_digest_verify_init;
static OSSL_FUNC_signature_digest_verify_fn ed_digest_verify;
static OSSL_FUNC_signature_get_ctx_params_fn ed_get_ctx_params;
static OSSL_FUNC_signature_gettable_ctx_params_fn ed_gettable_ctx_params;

struct ed_ctx {
    struct hf_prov *prov;
    struct hf_key *key; /* a reference we hold */
    int operation;      /* EVP_PKEY_OP_SIGN or EVP_PKEY_OP_VERIFY */
};

static void *ed_newctx(void *provctx, const char *propq)
{
    struct ed_ctx *ctx = OPENSSL_zalloc(sizeof(*ctx));

    if (ctx == NULL) {
        HF_RAISE_DATA(provctx, HF_R_OPENSSL_FAILED, "out of memory");
        return NULL;
    }
    ctx->prov = provctx;
    return ctx;
}

static void ed_freectx(void *vctx)
{
    struct ed_ctx *ctx = vctx;

    if (ctx == NULL) return;
    hf_key_unref(ctx->key);
    OPENSSL_free(ctx);
}

static void *ed_dupctx(void *vctx)
{
    const struct ed_ctx *src = vctx;
    struct ed_ctx *ctx = OPENSSL_memdup(src, sizeof(*src));

    if (ctx == NULL) {
        HF_RAISE_DATA(src->prov, HF_R_OPENSSL_FAILED, "out of memory");
        return NULL;
    }
    hf_key_ref(ctx->key);
    return ctx;
}

static int ed_init(struct ed_ctx *ctx, const char *mdname, struct hf_key *key, int op)
{
    if (ctx == NULL) return 0;
    if (mdname != NULL && mdname[0] != '\0') {
        HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "Ed25519 takes no digest (%s)", mdname);
        return 0;
    }
    if (key != NULL) {
        if (key->type != CKK_EC_EDWARDS || key->pub == NULL) {
            HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "not an Ed25519 key");
            return 0;
        }
        if (op == EVP_PKEY_OP_SIGN && !hf_key_is_private(key)) {
            HF_RAISE(ctx->prov, HF_R_PUBLIC_KEY_ONLY);
            return 0;
        }
        hf_key_unref(ctx->key);
        ctx->key = hf_key_ref(key);
    }
    if (ctx->key == NULL) {
        HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "no key");
        return 0;
    }
    ctx->operation = op;
    return 1;
}

static int ed_digest_sign_init(void *vctx, const char *mdname, void *vkey, const OSSL_PARAM p[])
{
    return ed_init(vctx, mdname, vkey, EVP_PKEY_OP_SIGN);
}

static int ed_digest_verify_init(void *vctx, const char *mdname, void *vkey, const OSSL_PARAM p[])
{
    return ed_init(vctx, mdname, vkey, EVP_PKEY_OP_VERIFY);
}

static int ed_digest_sign(void *vctx, unsigned char *sig, size_t *siglen, size_t sigsize,
                          const unsigned char *tbs, size_t tbslen)
{
    struct ed_ctx *ctx = vctx;
    CK_MECHANISM mech = {CKM_EDDSA, NULL, 0};
    size_t len = sigsize;

    if (ctx == NULL || ctx->key == NULL || siglen == NULL) return 0;
    if (sig == NULL) {
        *siglen = ED25519_SIG_LEN;
        return 1;
    }
    if (ctx->operation != EVP_PKEY_OP_SIGN) {
        HF_RAISE_DATA(ctx->prov, HF_R_INVALID_ARGUMENT, "context not initialised for signing");
        return 0;
    }
    if (sigsize < ED25519_SIG_LEN) {
        HF_RAISE_DATA(ctx->prov, HF_R_BUFFER_TOO_SMALL, "%zu bytes, %d needed", sigsize,
                      ED25519_SIG_LEN);
        return 0;
    }
    if (!hf_key_op(ctx->key, HF_KEY_SIGN, &mech, tbs, tbslen, sig, &len)) return 0;
    *siglen = len;
    return 1;
}

static int ed_digest_verify(void *vctx, const unsigned char *sig, size_t siglen,
                            const unsigned char *tbs, size_t tbslen)
{
    struct ed_ctx *ctx = vctx;
    OSSL_LIB_CTX *libctx;
    EVP_MD_CTX *md;
    int r = 0;

    if (ctx == NULL || ctx->key == NULL || (libctx = hf_prov_libctx(ctx->prov)) == NULL) return 0;
    if ((md = EVP_MD_CTX_new()) == NULL) {
        HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "out of memory");
        return 0;
    }
    if (EVP_DigestVerifyInit_ex(md, NULL, NULL, libctx, NULL, ctx->key->pub, NULL) == 1)
        r = EVP_DigestVerify(md, sig, siglen, tbs, tbslen);
    EVP_MD_CTX_free(md);
    return r == 1;
}

/* The AlgorithmIdentifier a certificate or request signed with this key carries (RFC 8410
 * section 3: the OID, no parameters). */
static int ed_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    static const unsigned char alg_id[] = {0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70};
    OSSL_PARAM *p = OSSL_PARAM_locate(params, OSSL_SIGNATURE_PARAM_ALGORITHM_ID);

    return p == NULL || OSSL_PARAM_set_octet_string(p, alg_id, sizeof(alg_id));
}

static const OSSL_PARAM *ed_gettable_ctx_params(void *vctx, void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_octet_string(OSSL_SIGNATURE_PARAM_ALGORITHM_ID, NULL, 0),
        OSSL_PARAM_END,
    };
    return table;
}

const OSSL_DISPATCH hf_ed25519_signature_functions[] = {
    {OSSL_FUNC_SIGNATURE_NEWCTX, (void (*)(void))ed_newctx},
    {OSSL_FUNC_SIGNATURE_FREECTX, (void (*)(void))ed_freectx},
    {OSSL_FUNC_SIGNATURE_DUPCTX, (void (*)(void))ed_dupctx},
    {OSSL_FUNC_SIGNATURE_DIGEST_SIGN_INIT, (void (*)(void))ed_digest_sign_init},
    {OSSL_FUNC_SIGNATURE_DIGEST_SIGN, (void (*)(void))ed_digest_sign},
    {OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_INIT, (void (*)(void))ed_digest_verify_init},
    {OSSL_FUNC_SIGNATURE_DIGEST_VERIFY, (void (*)(void))ed_digest_verify},
    {OSSL_FUNC_SIGNATURE_GET_CTX_PARAMS, (void (*)(void))ed_get_ctx_params},
    {OSSL_FUNC_SIGNATURE_GETTABLE_CTX_PARAMS, (void (*)(void))ed_gettable_ctx_params},
    {0, NULL},
};
