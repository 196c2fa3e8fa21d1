/* STORE for pkcs11: and holdfast: URIs (holdfast-uri.c).
 *
 * A load finds every object the URI names on every matching token, then hands them out one per
 * call: a private key as a reference to a struct hf_key (its material stays on the token); a
 * public key as its SubjectPublicKeyInfo, so OpenSSL's own decoders make it a default-provider
 * key (public-key work stays there); a certificate as its DER.
 *
 * Private objects need the token logged in: the PIN comes from the URI, the provider's
 * pkcs11-module-pin, or OpenSSL's passphrase callback (the UI: -passin, a prompt). When none has
 * one and the URI does not insist on private objects, only public objects are listed. */
#include "hf-build.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/core_object.h>
#include <openssl/crypto.h>
#include <openssl/store.h>
#include <openssl/x509.h>

#include "provider/provider.h"

/* Objects one token may contribute to one load; more are not listed. */
#define FIND_MAX 4096

static OSSL_FUNC_store_open_fn store_open;
static OSSL_FUNC_store_settable_ctx_params_fn store_settable_ctx_params;
static OSSL_FUNC_store_set_ctx_params_fn store_set_ctx_params;
static OSSL_FUNC_store_load_fn store_load;
static OSSL_FUNC_store_eof_fn store_eof;
static OSSL_FUNC_store_close_fn store_close;

struct found {
    CK_SLOT_ID slot;
    CK_OBJECT_HANDLE obj;
    CK_OBJECT_CLASS cls;
};

struct store_ctx {
    struct hf_prov *prov;
    struct hf_uri *uri;
    int expect; /* OSSL_STORE_INFO_* wanted, 0: any */
    bool searched, failed;
    struct found *found;
    size_t nfound, next;
    /* Keys handed out by reference: they must live as long as OpenSSL may load them. */
    struct hf_key **keys;
    size_t nkeys;
};

static void *store_open(void *provctx, const char *uri)
{
    struct store_ctx *ctx;

    if (uri == NULL) return NULL;
    if ((ctx = OPENSSL_zalloc(sizeof(*ctx))) == NULL) {
        HF_RAISE_DATA(provctx, HF_R_OPENSSL_FAILED, "out of memory");
        return NULL;
    }
    ctx->prov = provctx;
    if (!hf_uri_parse(provctx, uri, &ctx->uri)) {
        OPENSSL_free(ctx);
        return NULL;
    }
    return ctx;
}

static const OSSL_PARAM *store_settable_ctx_params(void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_int(OSSL_STORE_PARAM_EXPECT, NULL),
        OSSL_PARAM_END,
    };
    return table;
}

static int store_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    struct store_ctx *ctx = vctx;
    const OSSL_PARAM *p;

    if (ctx == NULL) return 0;
    p = OSSL_PARAM_locate_const(params, OSSL_STORE_PARAM_EXPECT);
    if (p != NULL && !OSSL_PARAM_get_int(p, &ctx->expect)) return 0;
    return 1;
}

/* Which classes this load may return, from the URI's type and OpenSSL's expectation. */
static bool class_wanted(const struct store_ctx *ctx, CK_OBJECT_CLASS cls)
{
    if (ctx->uri->has_class && ctx->uri->cls != cls) return false;
    switch (ctx->expect) {
    case 0:
        return cls == CKO_PRIVATE_KEY || cls == CKO_PUBLIC_KEY || cls == CKO_CERTIFICATE;
    case OSSL_STORE_INFO_PKEY:
        return cls == CKO_PRIVATE_KEY;
    case OSSL_STORE_INFO_PUBKEY:
        return cls == CKO_PUBLIC_KEY;
    case OSSL_STORE_INFO_CERT:
        return cls == CKO_CERTIFICATE;
    default:
        return false;
    }
}

static int found_add(struct store_ctx *ctx, CK_SLOT_ID slot, CK_OBJECT_HANDLE obj,
                     CK_OBJECT_CLASS cls)
{
    struct found *grown;

    grown = OPENSSL_realloc(ctx->found, (ctx->nfound + 1) * sizeof(*grown));
    if (grown == NULL) {
        HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "out of memory");
        return 0;
    }
    ctx->found = grown;
    grown[ctx->nfound++] = (struct found){slot, obj, cls};
    return 1;
}

/* The objects of one token. 1 or 0 (error raised). */
static int search_slot(struct store_ctx *ctx, CK_SLOT_ID slot, OSSL_PASSPHRASE_CALLBACK *pw_cb,
                       void *pw_cbarg)
{
    struct hf_p11 *p = ctx->prov->p11;
    const struct hf_uri *uri = ctx->uri;
    bool privates = class_wanted(ctx, CKO_PRIVATE_KEY);
    bool demanded = privates && ((uri->has_class && uri->cls == CKO_PRIVATE_KEY) ||
                                 ctx->expect == OSSL_STORE_INFO_PKEY);
    CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
    CK_ULONG version = uri->version, count = 0;
    CK_ATTRIBUTE tmpl[4];
    CK_ULONG n = 0;
    CK_OBJECT_HANDLE *objs = NULL;
    CK_SESSION_HANDLE s;
    int r, ok = 0;

    if (privates) {
        r = hf_p11_login(p, slot, uri->pin, pw_cb, pw_cbarg);
        if (r == 0) return 0;
        if (r < 0 && demanded) {
            HF_RAISE_DATA(ctx->prov, HF_R_LOGIN_REQUIRED,
                          "set pkcs11-module-pin, pass -passin, or add pin-source to the URI");
            return 0;
        }
        privates = r > 0;
    }
    /* One class asked for: let the module filter. */
    if (ctx->uri->has_class || ctx->expect != 0) {
        if (ctx->uri->has_class)
            cls = ctx->uri->cls;
        else if (ctx->expect == OSSL_STORE_INFO_PUBKEY)
            cls = CKO_PUBLIC_KEY;
        else if (ctx->expect == OSSL_STORE_INFO_CERT)
            cls = CKO_CERTIFICATE;
        tmpl[n++] = (CK_ATTRIBUTE){CKA_CLASS, &cls, sizeof(cls)};
    }
    if (uri->object != NULL)
        tmpl[n++] = (CK_ATTRIBUTE){CKA_LABEL, uri->object, strlen(uri->object)};
    if (uri->id != NULL) tmpl[n++] = (CK_ATTRIBUTE){CKA_ID, uri->id, uri->id_len};
    if (uri->has_version) tmpl[n++] = (CK_ATTRIBUTE){CKA_HF_VERSION, &version, sizeof(version)};

    if ((objs = OPENSSL_malloc(FIND_MAX * sizeof(*objs))) == NULL) {
        HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "out of memory");
        return 0;
    }
    if (!hf_p11_session_get(p, slot, &s)) goto done;
    if (!hf_p11_find(p, s, tmpl, n, objs, FIND_MAX, &count)) {
        hf_p11_session_put(p, slot, s, true);
        goto done;
    }
    r = 1;
    for (CK_ULONG i = 0; i < count; i++) {
        unsigned char *val = NULL;
        size_t len = 0;
        CK_OBJECT_CLASS oc;

        r = hf_p11_attr_get(p, s, objs[i], CKA_CLASS, &val, &len);
        if (r < 0) break;
        if (r == 0 || len != sizeof(oc)) {
            OPENSSL_free(val);
            continue;
        }
        memcpy(&oc, val, sizeof(oc));
        OPENSSL_free(val);
        if (!class_wanted(ctx, oc) || (oc == CKO_PRIVATE_KEY && !privates)) continue;
        if (!found_add(ctx, slot, objs[i], oc)) {
            r = -1;
            break;
        }
    }
    hf_p11_session_put(p, slot, s, true);
    ok = r >= 0;
done:
    OPENSSL_free(objs);
    return ok;
}

static int search(struct store_ctx *ctx, OSSL_PASSPHRASE_CALLBACK *pw_cb, void *pw_cbarg)
{
    struct hf_p11 *p = ctx->prov->p11;
    CK_FUNCTION_LIST *fn;
    CK_SLOT_ID *slots = NULL;
    CK_ULONG nslots = 0;
    CK_INFO lib;
    char buf[32];
    CK_RV rv;
    int ok = 0;

    if (!hf_p11_ready(p, &fn)) return 0;
    if ((rv = fn->C_GetInfo(&lib)) != CKR_OK ||
        (rv = fn->C_GetSlotList(CK_TRUE, NULL, &nslots)) != CKR_OK) {
        HF_RAISE_DATA(ctx->prov, HF_R_PKCS11_ERROR, "C_GetSlotList: %s", hf_ckr_name(rv, buf));
        return 0;
    }
    if (nslots == 0) return 1;
    if ((slots = OPENSSL_malloc(nslots * sizeof(*slots))) == NULL) {
        HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "out of memory");
        return 0;
    }
    if ((rv = fn->C_GetSlotList(CK_TRUE, slots, &nslots)) != CKR_OK) {
        HF_RAISE_DATA(ctx->prov, HF_R_PKCS11_ERROR, "C_GetSlotList: %s", hf_ckr_name(rv, buf));
        goto done;
    }
    for (CK_ULONG i = 0; i < nslots; i++) {
        CK_SLOT_INFO si;
        CK_TOKEN_INFO ti;

        /* A token removed meanwhile is simply not there. */
        if (fn->C_GetSlotInfo(slots[i], &si) != CKR_OK ||
            fn->C_GetTokenInfo(slots[i], &ti) != CKR_OK)
            continue;
        if (!hf_uri_matches_token(ctx->uri, &lib, slots[i], &si, &ti)) continue;
        if (!search_slot(ctx, slots[i], pw_cb, pw_cbarg)) goto done;
    }
    ok = 1;
done:
    OPENSSL_free(slots);
    return ok;
}

/* Keeps key alive until the store is closed (OpenSSL loads references during our callback,
 * and may keep its own). Takes over the caller's reference. 1 or 0 (error raised, key freed). */
static int keys_keep(struct store_ctx *ctx, struct hf_key *key)
{
    struct hf_key **grown = OPENSSL_realloc(ctx->keys, (ctx->nkeys + 1) * sizeof(*grown));

    if (grown == NULL) {
        HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "out of memory");
        hf_key_unref(key);
        return 0;
    }
    ctx->keys = grown;
    ctx->keys[ctx->nkeys++] = key;
    return 1;
}

/* Hands one found object to OpenSSL. 1: given (the callback's answer in *cb_ok); 0: error
 * raised; -1: skipped (a key type we do not handle, a certificate without a value). */
static int emit(struct store_ctx *ctx, const struct found *f, OSSL_CALLBACK *object_cb,
                void *object_cbarg, int *cb_ok)
{
    struct hf_p11 *p = ctx->prov->p11;
    OSSL_PARAM params[6];
    int object_type = f->cls == CKO_CERTIFICATE ? OSSL_OBJECT_CERT : OSSL_OBJECT_PKEY;
    struct hf_key *key;
    unsigned char *der = NULL;
    size_t der_len = 0;
    CK_SESSION_HANDLE s;
    bool unsupported = false;
    int n = 0, r, len;

    if (!hf_p11_session_get(p, f->slot, &s)) return 0;
    params[n++] = OSSL_PARAM_construct_int(OSSL_OBJECT_PARAM_TYPE, &object_type);
    if (f->cls == CKO_CERTIFICATE) {
        r = hf_p11_attr_get(p, s, f->obj, CKA_VALUE, &der, &der_len);
        hf_p11_session_put(p, f->slot, s, true);
        if (r <= 0) return r < 0 ? 0 : -1;
        params[n++] = OSSL_PARAM_construct_octet_string(OSSL_OBJECT_PARAM_DATA, der, der_len);
        params[n] = OSSL_PARAM_construct_end();
        *cb_ok = object_cb(params, object_cbarg);
        OPENSSL_free(der);
        return 1;
    }
    key = hf_key_from_object(ctx->prov, f->slot, s, f->obj, f->cls, &unsupported);
    hf_p11_session_put(p, f->slot, s, true);
    if (key == NULL) return unsupported ? -1 : 0;
    params[n++] = OSSL_PARAM_construct_utf8_string(OSSL_OBJECT_PARAM_DATA_TYPE,
                                                   (char *)hf_key_type_name(key->type), 0);
    if (f->cls == CKO_PRIVATE_KEY) {
        if (!keys_keep(ctx, key)) return 0;
        params[n++] =
            OSSL_PARAM_construct_octet_string(OSSL_OBJECT_PARAM_REFERENCE, &key, sizeof(key));
        params[n] = OSSL_PARAM_construct_end();
        *cb_ok = object_cb(params, object_cbarg);
        return 1;
    }
    len = i2d_PUBKEY(key->pub, &der);
    hf_key_unref(key);
    if (len <= 0) {
        HF_RAISE_DATA(ctx->prov, HF_R_OPENSSL_FAILED, "cannot encode the public key");
        return 0;
    }
    params[n++] = OSSL_PARAM_construct_octet_string(OSSL_OBJECT_PARAM_DATA, der, (size_t)len);
    params[n++] = OSSL_PARAM_construct_utf8_string(OSSL_OBJECT_PARAM_DATA_STRUCTURE,
                                                   "SubjectPublicKeyInfo", 0);
    params[n] = OSSL_PARAM_construct_end();
    *cb_ok = object_cb(params, object_cbarg);
    OPENSSL_free(der);
    return 1;
}

static int store_load(void *vctx, OSSL_CALLBACK *object_cb, void *object_cbarg,
                      OSSL_PASSPHRASE_CALLBACK *pw_cb, void *pw_cbarg)
{
    struct store_ctx *ctx = vctx;
    int r, cb_ok = 0;

    if (ctx == NULL || ctx->failed) return 0;
    if (!ctx->searched) {
        ctx->searched = true;
        if (!search(ctx, pw_cb, pw_cbarg)) {
            ctx->failed = true; /* eof from now on: callers loop until eof */
            return 0;
        }
    }
    while (ctx->next < ctx->nfound) {
        r = emit(ctx, &ctx->found[ctx->next++], object_cb, object_cbarg, &cb_ok);
        if (r == 0) {
            ctx->failed = true;
            return 0;
        }
        if (r > 0) return cb_ok;
    }
    return 0;
}

static int store_eof(void *vctx)
{
    struct store_ctx *ctx = vctx;

    return ctx == NULL || ctx->failed || (ctx->searched && ctx->next >= ctx->nfound);
}

static int store_close(void *vctx)
{
    struct store_ctx *ctx = vctx;

    if (ctx == NULL) return 1;
    for (size_t i = 0; i < ctx->nkeys; i++)
        hf_key_unref(ctx->keys[i]);
    OPENSSL_free(ctx->keys);
    OPENSSL_free(ctx->found);
    hf_uri_free(ctx->uri);
    OPENSSL_free(ctx);
    return 1;
}

const OSSL_DISPATCH hf_store_functions[] = {
    {OSSL_FUNC_STORE_OPEN, (void (*)(void))store_open},
    {OSSL_FUNC_STORE_SETTABLE_CTX_PARAMS, (void (*)(void))store_settable_ctx_params},
    {OSSL_FUNC_STORE_SET_CTX_PARAMS, (void (*)(void))store_set_ctx_params},
    {OSSL_FUNC_STORE_LOAD, (void (*)(void))store_load},
    {OSSL_FUNC_STORE_EOF, (void (*)(void))store_eof},
    {OSSL_FUNC_STORE_CLOSE, (void (*)(void))store_close},
    {0, NULL},
};
