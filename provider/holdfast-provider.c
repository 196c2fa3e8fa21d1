/* The provider's entry point: OSSL_provider_init, its configuration, the algorithms it offers,
 * its errors and its private library context.
 *
 * Configuration (the provider's openssl.cnf section, see conf/openssl-holdfast.cnf):
 *   pkcs11-module-path  the PKCS#11 module (default: $HOLDFAST_PKCS11_MODULE, else
 *                       holdfast-pkcs11.so in p11-kit's module directory)
 *   pkcs11-module-pin   file:PATH, env:VAR or the PIN itself (else OpenSSL's UI asks)
 *   pkcs11-module-finalize  yes (default) or no: no never calls C_Finalize, for a module
 *                       that must end itself at exit (pkcs11-provider's no-deinit quirk)
 * Nothing is loaded at init: OpenSSL may be initialising itself (reading openssl.cnf) when it
 * calls us, and the module we would load uses OpenSSL too. */
#include "hf-build.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/provider.h>

#include "provider/provider.h"

#define HF_PROV_DEFAULT_MODULE HF_P11MODULEDIR "/holdfast-pkcs11.so"
#define HF_PROV_MODULE_ENV "HOLDFAST_PKCS11_MODULE"

static OSSL_FUNC_provider_teardown_fn prov_teardown;
static OSSL_FUNC_provider_gettable_params_fn prov_gettable_params;
static OSSL_FUNC_provider_get_params_fn prov_get_params;
static OSSL_FUNC_provider_query_operation_fn prov_query_operation;
static OSSL_FUNC_provider_get_reason_strings_fn prov_get_reason_strings;
OSSL_provider_init_fn OSSL_provider_init;

/* ---- errors -----------------------------------------------------------------------------------
 */

static const OSSL_ITEM reason_strings[] = {
    {HF_R_MODULE_LOAD, "cannot load or initialise the PKCS#11 module"},
    {HF_R_PKCS11_ERROR, "PKCS#11 call failed"},
    {HF_R_BAD_URI, "bad pkcs11: or holdfast: URI"},
    {HF_R_LOGIN_REQUIRED, "the token needs a PIN and none was given"},
    {HF_R_LOGIN_FAILED, "the token refused the PIN"},
    {HF_R_LOGIN_NOT_RETRIED, "an earlier login failed; not retried, a retry could lock the token"},
    {HF_R_PRIVATE_KEY_IMPORT, "private key material cannot be imported through the provider"},
    {HF_R_PUBLIC_KEY_ONLY, "this key is a public key: no private-key operation"},
    {HF_R_UNSUPPORTED, "not supported by the holdfast provider"},
    {HF_R_INVALID_ARGUMENT, "invalid argument"},
    {HF_R_BUFFER_TOO_SMALL, "output buffer too small"},
    {HF_R_OPENSSL_FAILED, "OpenSSL operation failed in the provider's library context"},
    {HF_R_PRIVATE_KEY_STAYS, "the private key stays in the token: it has no encoding"},
    {0, NULL},
};

void hf_err_raise(const struct hf_prov *prov, const char *file, int line, const char *func,
                  int reason, const char *fmt, ...)
{
    va_list ap;

    if (prov == NULL || prov->core_new_error == NULL) return;
    prov->core_new_error(prov->handle);
    prov->core_set_error_debug(prov->handle, file, line, func);
    va_start(ap, fmt);
    prov->core_vset_error(prov->handle, (uint32_t)reason, fmt, ap);
    va_end(ap);
}

/* ---- private library context ------------------------------------------------------------------
 */

OSSL_LIB_CTX *hf_prov_libctx(struct hf_prov *prov)
{
    OSSL_LIB_CTX *ctx = atomic_load_explicit(&prov->libctx, memory_order_acquire);

    if (ctx != NULL) return ctx;
    pthread_mutex_lock(&prov->libctx_lock);
    ctx = atomic_load_explicit(&prov->libctx, memory_order_relaxed);
    if (ctx == NULL) {
        ctx = OSSL_LIB_CTX_new();
        if (ctx != NULL && (prov->libctx_default = OSSL_PROVIDER_load(ctx, "default")) == NULL) {
            OSSL_LIB_CTX_free(ctx);
            ctx = NULL;
        }
        if (ctx == NULL)
            HF_RAISE_DATA(prov, HF_R_OPENSSL_FAILED, "cannot make a library context");
        else
            atomic_store_explicit(&prov->libctx, ctx, memory_order_release);
    }
    pthread_mutex_unlock(&prov->libctx_lock);
    return ctx;
}

/* ---- algorithms ---------------------------------------------------------------------------------
 */

/* Names as OpenSSL's default provider spells them, so EVP_PKEY_is_a, certificates and TLS treat
 * our keys as the RSA and EC keys they are. */
#define RSA_NAMES "RSA:rsaEncryption:1.2.840.113549.1.1.1"
#define EC_NAMES "EC:id-ecPublicKey:1.2.840.10045.2.1"
#define ED25519_NAMES "ED25519:1.3.101.112"

static const OSSL_ALGORITHM keymgmt_algs[] = {
    {RSA_NAMES, HF_PROV_PROPS, hf_rsa_keymgmt_functions, "holdfast RSA key (token reference)"},
    {EC_NAMES, HF_PROV_PROPS, hf_ec_keymgmt_functions, "holdfast EC key (token reference)"},
    {ED25519_NAMES, HF_PROV_PROPS, hf_ed25519_keymgmt_functions,
     "holdfast Ed25519 key (token reference)"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM signature_algs[] = {
    {RSA_NAMES, HF_PROV_PROPS, hf_rsa_signature_functions, "RSA PKCS#1 v1.5 and PSS on a token"},
    {"ECDSA", HF_PROV_PROPS, hf_ecdsa_signature_functions, "ECDSA on a token"},
    {ED25519_NAMES, HF_PROV_PROPS, hf_ed25519_signature_functions, "Ed25519 on a token"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM asym_cipher_algs[] = {
    {RSA_NAMES, HF_PROV_PROPS, hf_rsa_asym_cipher_functions, "RSA OAEP and PKCS#1 on a token"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM store_algs[] = {
    {"pkcs11", HF_PROV_PROPS, hf_store_functions, "RFC 7512 pkcs11: URIs"},
    {"holdfast", HF_PROV_PROPS, hf_store_functions, "holdfast:<key name>[;version=N]"},
    {NULL, NULL, NULL, NULL},
};

#define SPKI_DER HF_PROV_PROPS ",output=der,structure=SubjectPublicKeyInfo"
#define SPKI_PEM HF_PROV_PROPS ",output=pem,structure=SubjectPublicKeyInfo"
#define P8_DER HF_PROV_PROPS ",output=der,structure=PrivateKeyInfo"
#define P8_PEM HF_PROV_PROPS ",output=pem,structure=PrivateKeyInfo"
static const OSSL_ALGORITHM encoder_algs[] = {
    {RSA_NAMES, SPKI_DER, hf_rsa_spki_der_encoder_functions, NULL},
    {RSA_NAMES, SPKI_PEM, hf_rsa_spki_pem_encoder_functions, NULL},
    {EC_NAMES, SPKI_DER, hf_ec_spki_der_encoder_functions, NULL},
    {EC_NAMES, SPKI_PEM, hf_ec_spki_pem_encoder_functions, NULL},
    {ED25519_NAMES, SPKI_DER, hf_ed25519_spki_der_encoder_functions, NULL},
    {ED25519_NAMES, SPKI_PEM, hf_ed25519_spki_pem_encoder_functions, NULL},
    /* Private keys: encoders that only say why there is no encoding (else OpenSSL fails
     * without a word). */
    {RSA_NAMES, P8_DER, hf_private_key_encoder_functions, NULL},
    {RSA_NAMES, P8_PEM, hf_private_key_encoder_functions, NULL},
    {EC_NAMES, P8_DER, hf_private_key_encoder_functions, NULL},
    {EC_NAMES, P8_PEM, hf_private_key_encoder_functions, NULL},
    {ED25519_NAMES, P8_DER, hf_private_key_encoder_functions, NULL},
    {ED25519_NAMES, P8_PEM, hf_private_key_encoder_functions, NULL},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM *prov_query_operation(void *provctx, int operation_id, int *no_cache)
{
    *no_cache = 0;
    switch (operation_id) {
    case OSSL_OP_KEYMGMT:
        return keymgmt_algs;
    case OSSL_OP_SIGNATURE:
        return signature_algs;
    case OSSL_OP_ASYM_CIPHER:
        return asym_cipher_algs;
    case OSSL_OP_STORE:
        return store_algs;
    case OSSL_OP_ENCODER:
        return encoder_algs;
    default:
        return NULL;
    }
}

static const OSSL_ITEM *prov_get_reason_strings(void *provctx)
{
    return reason_strings;
}

/* ---- provider parameters ----------------------------------------------------------------------
 */

static const OSSL_PARAM *prov_gettable_params(void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_NAME, NULL, 0),
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_VERSION, NULL, 0),
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_BUILDINFO, NULL, 0),
        OSSL_PARAM_int(OSSL_PROV_PARAM_STATUS, NULL),
        OSSL_PARAM_END,
    };
    return table;
}

static int prov_get_params(void *provctx, OSSL_PARAM params[])
{
    OSSL_PARAM *p;

    p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_NAME);
    if (p != NULL && !OSSL_PARAM_set_utf8_ptr(p, "Holdfast PKCS#11 provider")) return 0;
    p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_VERSION);
    if (p != NULL && !OSSL_PARAM_set_utf8_ptr(p, PACKAGE_VERSION)) return 0;
    p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_BUILDINFO);
    if (p != NULL && !OSSL_PARAM_set_utf8_ptr(p, PACKAGE_STRING)) return 0;
    p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_STATUS);
    if (p != NULL && !OSSL_PARAM_set_int(p, 1)) return 0;
    return 1;
}

/* ---- life cycle -------------------------------------------------------------------------------
 */

static void prov_free(struct hf_prov *prov)
{
    if (prov == NULL) return;
    /* The module first: its finalisation may still use OpenSSL, never our context, but the
     * keys it leaves behind (none, once OpenSSL tears us down) would. */
    hf_p11_free(prov->p11);
    OSSL_PROVIDER_unload(prov->libctx_default);
    OSSL_LIB_CTX_free(atomic_load(&prov->libctx));
    pthread_mutex_destroy(&prov->libctx_lock);
    OPENSSL_free(prov);
}

static void prov_teardown(void *provctx)
{
    prov_free(provctx);
}

static const OSSL_DISPATCH prov_functions[] = {
    {OSSL_FUNC_PROVIDER_TEARDOWN, (void (*)(void))prov_teardown},
    {OSSL_FUNC_PROVIDER_GETTABLE_PARAMS, (void (*)(void))prov_gettable_params},
    {OSSL_FUNC_PROVIDER_GET_PARAMS, (void (*)(void))prov_get_params},
    {OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))prov_query_operation},
    {OSSL_FUNC_PROVIDER_GET_REASON_STRINGS, (void (*)(void))prov_get_reason_strings},
    {0, NULL},
};

__attribute__((visibility("default"))) int OSSL_provider_init(const OSSL_CORE_HANDLE *handle,
                                                              const OSSL_DISPATCH *in,
                                                              const OSSL_DISPATCH **out,
                                                              void **provctx)
{
    OSSL_FUNC_core_get_params_fn *core_get_params = NULL;
    struct hf_prov *prov = NULL;
    char *module = NULL, *pin = NULL, *finalize = NULL;
    const char *env;
    /* Values of our openssl.cnf section; pointers into OpenSSL's config (not ours). */
    OSSL_PARAM conf[] = {
        OSSL_PARAM_utf8_ptr("pkcs11-module-path", &module, 0),
        OSSL_PARAM_utf8_ptr("pkcs11-module-pin", &pin, 0),
        OSSL_PARAM_utf8_ptr("pkcs11-module-finalize", &finalize, 0),
        OSSL_PARAM_END,
    };
    int ok = 0;

    if (handle == NULL || in == NULL || out == NULL || provctx == NULL) return 0;
    prov = OPENSSL_zalloc(sizeof(*prov));
    if (prov == NULL) goto done;
    prov->handle = handle;
    pthread_mutex_init(&prov->libctx_lock, NULL);
    for (; in->function_id != 0; in++) {
        switch (in->function_id) {
        case OSSL_FUNC_CORE_GET_PARAMS:
            core_get_params = OSSL_FUNC_core_get_params(in);
            break;
        case OSSL_FUNC_CORE_NEW_ERROR:
            prov->core_new_error = OSSL_FUNC_core_new_error(in);
            break;
        case OSSL_FUNC_CORE_SET_ERROR_DEBUG:
            prov->core_set_error_debug = OSSL_FUNC_core_set_error_debug(in);
            break;
        case OSSL_FUNC_CORE_VSET_ERROR:
            prov->core_vset_error = OSSL_FUNC_core_vset_error(in);
            break;
        case OSSL_FUNC_BIO_WRITE_EX:
            prov->core_bio_write_ex = OSSL_FUNC_BIO_write_ex(in);
            break;
        default:
            break;
        }
    }
    if (prov->core_new_error == NULL || prov->core_set_error_debug == NULL ||
        prov->core_vset_error == NULL) {
        /* Without them we could not report a single error: refuse to load. */
        prov->core_new_error = NULL;
        goto done;
    }
    if (core_get_params == NULL || !core_get_params(handle, conf)) {
        HF_RAISE_DATA(prov, HF_R_INVALID_ARGUMENT, "cannot read the provider configuration");
        goto done;
    }
    if (module == NULL || module[0] == '\0') {
        env = getenv(HF_PROV_MODULE_ENV);
        module = env != NULL && env[0] != '\0' ? (char *)env : HF_PROV_DEFAULT_MODULE;
    }
    if (finalize != NULL && strcmp(finalize, "yes") != 0 && strcmp(finalize, "no") != 0) {
        HF_RAISE_DATA(prov, HF_R_INVALID_ARGUMENT, "pkcs11-module-finalize must be yes or no");
        goto done;
    }
    prov->p11 = hf_p11_new(prov, module, pin != NULL && pin[0] != '\0' ? pin : NULL,
                           finalize == NULL || strcmp(finalize, "no") != 0);
    if (prov->p11 == NULL) goto done;
    *out = prov_functions;
    *provctx = prov;
    prov = NULL;
    ok = 1;
done:
    prov_free(prov);
    return ok;
}
