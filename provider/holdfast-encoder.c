/* ENCODERs: SubjectPublicKeyInfo (DER and PEM) of an RSA, EC or Ed25519 key, so `openssl pkey
 * -pubout`, certificate requests and anything else that writes a public key can write ours. The
 * bytes come from OpenSSL (i2d_PUBKEY / PEM_write_bio_PUBKEY) over the key's public half. Private
 * keys have no encoding: their material is on the token; the PrivateKeyInfo encoders exist only
 * to say so. */
#include "hf-build.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "provider/provider.h"

static OSSL_FUNC_encoder_newctx_fn enc_newctx;
static OSSL_FUNC_encoder_freectx_fn enc_freectx;
static OSSL_FUNC_encoder_does_selection_fn enc_does_selection;
static OSSL_FUNC_encoder_encode_fn enc_encode_der;
static OSSL_FUNC_encoder_encode_fn enc_encode_pem;
static OSSL_FUNC_encoder_import_object_fn rsa_import_object;
static OSSL_FUNC_encoder_import_object_fn ec_import_object;
static OSSL_FUNC_encoder_import_object_fn ed25519_import_object;
static OSSL_FUNC_encoder_free_object_fn enc_free_object;
static OSSL_FUNC_encoder_does_selection_fn priv_does_selection;
static OSSL_FUNC_encoder_encode_fn priv_encode;

/* The provider context is all an encoder needs. */
static void *enc_newctx(void *provctx)
{
    return provctx;
}

static void enc_freectx(void *vctx) {}

/* As OpenSSL's own SubjectPublicKeyInfo encoders: a request that includes the private key is
 * not ours to answer. */
static int enc_does_selection(void *provctx, int selection)
{
    if (selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) return 0;
    return (selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) != 0;
}

static void *import_object(void *provctx, CK_KEY_TYPE type, int selection,
                           const OSSL_PARAM params[])
{
    return hf_key_import_public(provctx, type, selection, params);
}

static void *rsa_import_object(void *vctx, int selection, const OSSL_PARAM params[])
{
    return import_object(vctx, CKK_RSA, selection, params);
}

static void *ec_import_object(void *vctx, int selection, const OSSL_PARAM params[])
{
    return import_object(vctx, CKK_EC, selection, params);
}

static void *ed25519_import_object(void *vctx, int selection, const OSSL_PARAM params[])
{
    return import_object(vctx, CKK_EC_EDWARDS, selection, params);
}

static void enc_free_object(void *obj)
{
    hf_key_unref(obj);
}

static int core_write(struct hf_prov *prov, OSSL_CORE_BIO *out, const void *data, size_t len)
{
    size_t written = 0;

    if (prov->core_bio_write_ex == NULL || !prov->core_bio_write_ex(out, data, len, &written) ||
        written != len) {
        HF_RAISE_DATA(prov, HF_R_OPENSSL_FAILED, "cannot write the encoded key");
        return 0;
    }
    return 1;
}

static const struct hf_key *key_of(struct hf_prov *prov, const void *obj_raw,
                                   const OSSL_PARAM obj_abstract[], int selection)
{
    const struct hf_key *key = obj_raw;

    if (obj_abstract != NULL) {
        HF_RAISE_DATA(prov, HF_R_UNSUPPORTED, "encoding a key given as parameters");
        return NULL;
    }
    if (key == NULL || key->pub == NULL || !enc_does_selection(prov, selection)) {
        HF_RAISE_DATA(prov, HF_R_INVALID_ARGUMENT, "only public keys are encoded here");
        return NULL;
    }
    return key;
}

static int enc_encode_der(void *vctx, OSSL_CORE_BIO *out, const void *obj_raw,
                          const OSSL_PARAM obj_abstract[], int selection,
                          OSSL_PASSPHRASE_CALLBACK *cb, void *cbarg)
{
    struct hf_prov *prov = vctx;
    const struct hf_key *key = key_of(prov, obj_raw, obj_abstract, selection);
    unsigned char *der = NULL;
    int len, ok;

    if (key == NULL) return 0;
    len = i2d_PUBKEY(key->pub, &der);
    if (len <= 0) {
        HF_RAISE_DATA(prov, HF_R_OPENSSL_FAILED, "cannot encode the public key");
        return 0;
    }
    ok = core_write(prov, out, der, (size_t)len);
    OPENSSL_free(der);
    return ok;
}

static int enc_encode_pem(void *vctx, OSSL_CORE_BIO *out, const void *obj_raw,
                          const OSSL_PARAM obj_abstract[], int selection,
                          OSSL_PASSPHRASE_CALLBACK *cb, void *cbarg)
{
    struct hf_prov *prov = vctx;
    const struct hf_key *key = key_of(prov, obj_raw, obj_abstract, selection);
    BIO *mem;
    char *data;
    long len;
    int ok = 0;

    if (key == NULL) return 0;
    if ((mem = BIO_new(BIO_s_mem())) == NULL || !PEM_write_bio_PUBKEY(mem, key->pub)) {
        HF_RAISE_DATA(prov, HF_R_OPENSSL_FAILED, "cannot encode the public key");
        goto done;
    }
    len = BIO_get_mem_data(mem, &data);
    ok = len > 0 && core_write(prov, out, data, (size_t)len);
done:
    BIO_free(mem);
    return ok;
}

static int priv_does_selection(void *provctx, int selection)
{
    return (selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0;
}

static int priv_encode(void *vctx, OSSL_CORE_BIO *out, const void *obj_raw,
                       const OSSL_PARAM obj_abstract[], int selection, OSSL_PASSPHRASE_CALLBACK *cb,
                       void *cbarg)
{
    HF_RAISE(vctx, HF_R_PRIVATE_KEY_STAYS);
    return 0;
}

const OSSL_DISPATCH hf_private_key_encoder_functions[] = {
    {OSSL_FUNC_ENCODER_NEWCTX, (void (*)(void))enc_newctx},
    {OSSL_FUNC_ENCODER_FREECTX, (void (*)(void))enc_freectx},
    {OSSL_FUNC_ENCODER_DOES_SELECTION, (void (*)(void))priv_does_selection},
    {OSSL_FUNC_ENCODER_ENCODE, (void (*)(void))priv_encode},
    {0, NULL},
};

#define ENCODER(name, kind, import)                                                                \
    const OSSL_DISPATCH name[] = {                                                                 \
        {OSSL_FUNC_ENCODER_NEWCTX, (void (*)(void))enc_newctx},                                    \
        {OSSL_FUNC_ENCODER_FREECTX, (void (*)(void))enc_freectx},                                  \
        {OSSL_FUNC_ENCODER_DOES_SELECTION, (void (*)(void))enc_does_selection},                    \
        {OSSL_FUNC_ENCODER_ENCODE, (void (*)(void))enc_encode_##kind},                             \
        {OSSL_FUNC_ENCODER_IMPORT_OBJECT, (void (*)(void))import},                                 \
        {OSSL_FUNC_ENCODER_FREE_OBJECT, (void (*)(void))enc_free_object},                          \
        {0, NULL},                                                                                 \
    }

ENCODER(hf_rsa_spki_der_encoder_functions, der, rsa_import_object);
ENCODER(hf_rsa_spki_pem_encoder_functions, pem, rsa_import_object);
ENCODER(hf_ec_spki_der_encoder_functions, der, ec_import_object);
ENCODER(hf_ec_spki_pem_encoder_functions, pem, ec_import_object);
ENCODER(hf_ed25519_spki_der_encoder_functions, der, ed25519_import_object);
ENCODER(hf_ed25519_spki_pem_encoder_functions, pem, ed25519_import_object);
