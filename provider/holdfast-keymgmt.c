/* KEYMGMT for RSA, EC and Ed25519. A key is a struct hf_key: a token reference (loaded from the
 * store) or a public key (imported, so OpenSSL can compare a certificate's key with ours).
 *
 * Export gives the public half only, and refuses outright when asked for a private key: OpenSSL
 * asks for the whole key pair when it wants to move our key to another provider (to sign there),
 * and a public half passed off as the pair would make it sign with no private key. Refused, it
 * comes back to our own SIGNATURE and ASYM_CIPHER. When asked for the public half (to match,
 * compare, encode or verify), it gets it. */
#include "hf-build.h"

#include <string.h>

#include <openssl/core_names.h>

#include "provider/provider.h"

static OSSL_FUNC_keymgmt_new_fn rsa_new;
static OSSL_FUNC_keymgmt_new_fn ec_new;
static OSSL_FUNC_keymgmt_free_fn key_free;
static OSSL_FUNC_keymgmt_load_fn rsa_load;
static OSSL_FUNC_keymgmt_load_fn ec_load;
static OSSL_FUNC_keymgmt_has_fn key_has;
static OSSL_FUNC_keymgmt_match_fn key_match;
static OSSL_FUNC_keymgmt_import_fn key_import;
static OSSL_FUNC_keymgmt_import_types_fn rsa_types;
static OSSL_FUNC_keymgmt_import_types_fn ec_types;
static OSSL_FUNC_keymgmt_export_fn key_export;
static OSSL_FUNC_keymgmt_get_params_fn key_get_params;
static OSSL_FUNC_keymgmt_gettable_params_fn rsa_gettable_params;
static OSSL_FUNC_keymgmt_gettable_params_fn ec_gettable_params;
static OSSL_FUNC_keymgmt_query_operation_name_fn rsa_query_operation_name;
static OSSL_FUNC_keymgmt_query_operation_name_fn ec_query_operation_name;
static OSSL_FUNC_keymgmt_dup_fn key_dup;
static OSSL_FUNC_keymgmt_new_fn ed25519_new;
static OSSL_FUNC_keymgmt_load_fn ed25519_load;
static OSSL_FUNC_keymgmt_import_types_fn ed25519_types;
static OSSL_FUNC_keymgmt_gettable_params_fn ed25519_gettable_params;
static OSSL_FUNC_keymgmt_query_operation_name_fn ed25519_query_operation_name;

static void *rsa_new(void *provctx)
{
    return hf_key_new(provctx, CKK_RSA);
}

static void *ec_new(void *provctx)
{
    return hf_key_new(provctx, CKK_EC);
}

static void key_free(void *keydata)
{
    hf_key_unref(keydata);
}

/* A reference is the address of a struct hf_key our store holds for as long as OpenSSL may
 * load it (the store context's life): we take our own reference. */
static void *key_load(const void *reference, size_t reference_sz, CK_KEY_TYPE type)
{
    struct hf_key *key;

    if (reference == NULL || reference_sz != sizeof(key)) return NULL;
    memcpy(&key, reference, sizeof(key));
    if (key == NULL || key->magic != HF_KEY_MAGIC || key->type != type) return NULL;
    return hf_key_ref(key);
}

static void *rsa_load(const void *reference, size_t reference_sz)
{
    return key_load(reference, reference_sz, CKK_RSA);
}

static void *ec_load(const void *reference, size_t reference_sz)
{
    return key_load(reference, reference_sz, CKK_EC);
}

static int key_has(const void *keydata, int selection)
{
    const struct hf_key *key = keydata;

    if (key == NULL) return 0;
    if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) && key->cls != CKO_PRIVATE_KEY) return 0;
    if ((selection & (OSSL_KEYMGMT_SELECT_PUBLIC_KEY | OSSL_KEYMGMT_SELECT_ALL_PARAMETERS)) &&
        key->pub == NULL)
        return 0;
    return 1;
}

/* Two keys match when their public halves do: a token private key and its certificate's public
 * key are one key pair exactly when their public parts are equal. */
static int key_match(const void *keydata1, const void *keydata2, int selection)
{
    const struct hf_key *a = keydata1, *b = keydata2;

    if (a == NULL || b == NULL || a->type != b->type) return 0;
    if (a == b) return 1;
    if (a->pub == NULL || b->pub == NULL) return 0;
    if ((selection & OSSL_KEYMGMT_SELECT_KEYPAIR) != 0) return EVP_PKEY_eq(a->pub, b->pub) == 1;
    if ((selection & OSSL_KEYMGMT_SELECT_ALL_PARAMETERS) != 0)
        return EVP_PKEY_parameters_eq(a->pub, b->pub) == 1;
    return 1;
}

static int key_import(void *keydata, int selection, const OSSL_PARAM params[])
{
    struct hf_key *key = keydata;

    if (key == NULL || params == NULL) return 0;
    return hf_key_set_public(key, selection, params);
}

static const OSSL_PARAM *rsa_types(int selection)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_N, NULL, 0),
        OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_E, NULL, 0),
        OSSL_PARAM_END,
    };
    return (selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) ? table : NULL;
}

static const OSSL_PARAM *ec_types(int selection)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_EC_ENCODING, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, NULL, 0),
        OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_PUB_KEY, NULL, 0),
        OSSL_PARAM_END,
    };
    return (selection & (OSSL_KEYMGMT_SELECT_PUBLIC_KEY | OSSL_KEYMGMT_SELECT_ALL_PARAMETERS))
               ? table
               : NULL;
}

static int key_export(void *keydata, int selection, OSSL_CALLBACK *cb, void *cbarg)
{
    struct hf_key *key = keydata;
    OSSL_PARAM *params = NULL;
    int ok;

    if (key == NULL || key->pub == NULL) return 0;
    /* Not raised: OpenSSL asks this on every operation it first tries elsewhere, and takes
     * the refusal as its cue to use ours. */
    if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0 && key->cls == CKO_PRIVATE_KEY) return 0;
    if ((selection & (OSSL_KEYMGMT_SELECT_PUBLIC_KEY | OSSL_KEYMGMT_SELECT_ALL_PARAMETERS)) == 0)
        return 0;
    if (EVP_PKEY_todata(key->pub,
                        (selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) ? EVP_PKEY_PUBLIC_KEY
                                                                     : EVP_PKEY_KEY_PARAMETERS,
                        &params) <= 0) {
        HF_RAISE_DATA(key->prov, HF_R_OPENSSL_FAILED, "cannot export the public key");
        return 0;
    }
    ok = cb(params, cbarg);
    OSSL_PARAM_free(params);
    return ok;
}

/* Sizes, curve, encoded point, default digest: what OpenSSL's own keymgmt says of the same
 * public key. */
static int key_get_params(void *keydata, OSSL_PARAM params[])
{
    struct hf_key *key = keydata;

    if (key == NULL || key->pub == NULL) return 0;
    return EVP_PKEY_get_params(key->pub, params);
}

static const OSSL_PARAM *rsa_gettable_params(void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_int(OSSL_PKEY_PARAM_BITS, NULL),
        OSSL_PARAM_int(OSSL_PKEY_PARAM_SECURITY_BITS, NULL),
        OSSL_PARAM_int(OSSL_PKEY_PARAM_MAX_SIZE, NULL),
        OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_DEFAULT_DIGEST, NULL, 0),
        OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_N, NULL, 0),
        OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_E, NULL, 0),
        OSSL_PARAM_END,
    };
    return table;
}

static const OSSL_PARAM *ec_gettable_params(void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_int(OSSL_PKEY_PARAM_BITS, NULL),
        OSSL_PARAM_int(OSSL_PKEY_PARAM_SECURITY_BITS, NULL),
        OSSL_PARAM_int(OSSL_PKEY_PARAM_MAX_SIZE, NULL),
        OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_DEFAULT_DIGEST, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_EC_ENCODING, NULL, 0),
        OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, NULL, 0),
        OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_PUB_KEY, NULL, 0),
        OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, NULL, 0),
        OSSL_PARAM_END,
    };
    return table;
}

static const char *rsa_query_operation_name(int operation_id)
{
    return "RSA";
}

static const char *ec_query_operation_name(int operation_id)
{
    switch (operation_id) {
    case OSSL_OP_SIGNATURE:
        return "ECDSA";
    case OSSL_OP_KEYEXCH:
        return "ECDH";
    default:
        return NULL;
    }
}

static void *key_dup(const void *keydata, int selection)
{
    return keydata != NULL ? hf_key_dup(keydata) : NULL;
}

#define KEYMGMT_COMMON                                                                             \
    {OSSL_FUNC_KEYMGMT_FREE, (void (*)(void))key_free},                                            \
        {OSSL_FUNC_KEYMGMT_HAS, (void (*)(void))key_has},                                          \
        {OSSL_FUNC_KEYMGMT_MATCH, (void (*)(void))key_match},                                      \
        {OSSL_FUNC_KEYMGMT_IMPORT, (void (*)(void))key_import},                                    \
        {OSSL_FUNC_KEYMGMT_EXPORT, (void (*)(void))key_export},                                    \
        {OSSL_FUNC_KEYMGMT_GET_PARAMS, (void (*)(void))key_get_params},                            \
    {                                                                                              \
        OSSL_FUNC_KEYMGMT_DUP, (void (*)(void))key_dup                                             \
    }

const OSSL_DISPATCH hf_rsa_keymgmt_functions[] = {
    {OSSL_FUNC_KEYMGMT_NEW, (void (*)(void))rsa_new},
    {OSSL_FUNC_KEYMGMT_LOAD, (void (*)(void))rsa_load},
    {OSSL_FUNC_KEYMGMT_IMPORT_TYPES, (void (*)(void))rsa_types},
    {OSSL_FUNC_KEYMGMT_EXPORT_TYPES, (void (*)(void))rsa_types},
    {OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS, (void (*)(void))rsa_gettable_params},
    {OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME, (void (*)(void))rsa_query_operation_name},
    KEYMGMT_COMMON,
    {0, NULL},
};

const OSSL_DISPATCH hf_ec_keymgmt_functions[] = {
    {OSSL_FUNC_KEYMGMT_NEW, (void (*)(void))ec_new},
    {OSSL_FUNC_KEYMGMT_LOAD, (void (*)(void))ec_load},
    {OSSL_FUNC_KEYMGMT_IMPORT_TYPES, (void (*)(void))ec_types},
    {OSSL_FUNC_KEYMGMT_EXPORT_TYPES, (void (*)(void))ec_types},
    {OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS, (void (*)(void))ec_gettable_params},
    {OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME, (void (*)(void))ec_query_operation_name},
    KEYMGMT_COMMON,
    {0, NULL},
};

/* ---- Ed25519 -----------------------------------------------------------------------------------
 */

static void *ed25519_new(void *provctx)
{
    return hf_key_new(provctx, CKK_EC_EDWARDS);
}

static void *ed25519_load(const void *reference, size_t reference_sz)
{
    return key_load(reference, reference_sz, CKK_EC_EDWARDS);
}

static const OSSL_PARAM *ed25519_types(int selection)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_PUB_KEY, NULL, 0),
        OSSL_PARAM_END,
    };
    return (selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) ? table : NULL;
}

static const OSSL_PARAM *ed25519_gettable_params(void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_int(OSSL_PKEY_PARAM_BITS, NULL),
        OSSL_PARAM_int(OSSL_PKEY_PARAM_SECURITY_BITS, NULL),
        OSSL_PARAM_int(OSSL_PKEY_PARAM_MAX_SIZE, NULL),
        OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_MANDATORY_DIGEST, NULL, 0),
        OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_PUB_KEY, NULL, 0),
        OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, NULL, 0),
        OSSL_PARAM_END,
    };
    return table;
}

static const char *ed25519_query_operation_name(int operation_id)
{
    return operation_id == OSSL_OP_SIGNATURE ? "ED25519" : NULL;
}

const OSSL_DISPATCH hf_ed25519_keymgmt_functions[] = {
    {OSSL_FUNC_KEYMGMT_NEW, (void (*)(void))ed25519_new},
    {OSSL_FUNC_KEYMGMT_LOAD, (void (*)(void))ed25519_load},
    {OSSL_FUNC_KEYMGMT_IMPORT_TYPES, (void (*)(void))ed25519_types},
    {OSSL_FUNC_KEYMGMT_EXPORT_TYPES, (void (*)(void))ed25519_types},
    {OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS, (void (*)(void))ed25519_gettable_params},
    {OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME, (void (*)(void))ed25519_query_operation_name},
    KEYMGMT_COMMON,
    {0, NULL},
};
