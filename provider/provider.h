/* The contract between the files of provider/ (the holdfast OpenSSL 3 provider). Nothing outside
 * this folder includes it.
 *
 * The provider talks PKCS#11 only (plus holdfast.h's vendor attributes): it never includes
 * pkcs11/core/ headers, so it runs unchanged over any vendor's module.
 *
 * Who owns what:
 *  - struct hf_prov: one per loaded provider instance (the provctx OpenSSL hands back to us).
 *  - struct hf_p11: one per hf_prov; the module, its sessions and its login state.
 *  - struct hf_key: reference-counted (hf_key_ref / hf_key_unref); shared by the store, the
 *    EVP_PKEYs OpenSSL builds over it and the operation contexts that use it. Immutable once
 *    built, except the cached object handle, which hf_p11 refreshes after a fork.
 *
 * Public-key work (verify, encrypt, encoding, comparing) runs in hf_prov's private
 * OSSL_LIB_CTX, which holds OpenSSL's default provider only: the same code OpenSSL would run, and
 * never a route back into this provider, wherever it is loaded. */
#ifndef HF_PROVIDER_H
#define HF_PROVIDER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/evp.h>

#include "pkcs11/module/holdfast.h"

#define HF_PROV_PROPS "provider=holdfast"

/* Reason codes of the errors we raise (text in holdfast-provider.c). */
enum {
    HF_R_MODULE_LOAD = 1,    /* the PKCS#11 module cannot be loaded or initialised */
    HF_R_PKCS11_ERROR,       /* a PKCS#11 call failed; the data names the call and CKR_ */
    HF_R_BAD_URI,            /* a pkcs11: or holdfast: URI we cannot parse */
    HF_R_LOGIN_REQUIRED,     /* private objects need a PIN and none was given */
    HF_R_LOGIN_FAILED,       /* the token refused the PIN */
    HF_R_LOGIN_NOT_RETRIED,  /* an earlier login failed; another try could lock the token */
    HF_R_PRIVATE_KEY_IMPORT, /* private key material cannot be imported through the provider */
    HF_R_PUBLIC_KEY_ONLY,    /* a private-key operation on a key that is only a public key */
    HF_R_UNSUPPORTED,        /* a parameter value or mode this provider does not implement */
    HF_R_INVALID_ARGUMENT,   /* a bad parameter, size or length from the caller */
    HF_R_BUFFER_TOO_SMALL,   /* an output buffer below the size the operation needs */
    HF_R_OPENSSL_FAILED,     /* OpenSSL failed in the private library context */
    HF_R_PRIVATE_KEY_STAYS,  /* asked to encode a token private key */
};

struct hf_p11;

struct hf_prov {
    const OSSL_CORE_HANDLE *handle;
    struct hf_p11 *p11;
    /* Made on first use (see hf_prov_libctx); guarded by libctx_lock until set. */
    _Atomic(OSSL_LIB_CTX *) libctx;
    OSSL_PROVIDER *libctx_default; /* unloaded before the context is freed (else it leaks) */
    pthread_mutex_t libctx_lock;
    /* Core upcalls. */
    OSSL_FUNC_core_new_error_fn *core_new_error;
    OSSL_FUNC_core_set_error_debug_fn *core_set_error_debug;
    OSSL_FUNC_core_vset_error_fn *core_vset_error;
    OSSL_FUNC_BIO_write_ex_fn *core_bio_write_ex;
};

/* The private library context (default provider only), made on first use so that loading the
 * provider from openssl.cnf, inside OpenSSL's own initialisation, does no work. NULL (error
 * raised) if it cannot be made. */
OSSL_LIB_CTX *hf_prov_libctx(struct hf_prov *prov);

/* Raises a provider error with the caller's location; fmt may be NULL. */
void hf_err_raise(const struct hf_prov *prov, const char *file, int line, const char *func,
                  int reason, const char *fmt, ...);
#define HF_RAISE(prov, reason)                                                                     \
    hf_err_raise((prov), OPENSSL_FILE, OPENSSL_LINE, OPENSSL_FUNC, (reason), NULL)
#define HF_RAISE_DATA(prov, reason, ...)                                                           \
    hf_err_raise((prov), OPENSSL_FILE, OPENSSL_LINE, OPENSSL_FUNC, (reason), __VA_ARGS__)

/* ---- PKCS#11 (holdfast-p11.c) ------------------------------------------------------------- */

/* module: path of the PKCS#11 module; pin_spec: the configured PIN source ("file:PATH",
 * "env:VAR" or the PIN itself), may be NULL. Both are copied. Nothing is loaded yet.
 * finalize: whether this provider calls C_Finalize (at teardown and exit) on a module it
 * initialised; false leaves the end to the module (pkcs11-module-finalize = no). */
struct hf_p11 *hf_p11_new(struct hf_prov *prov, const char *module, const char *pin_spec,
                          bool finalize);
void hf_p11_free(struct hf_p11 *p);
const char *hf_p11_module_path(const struct hf_p11 *p);

/* Loads and initialises the module on first use, and again in a forked child (logging back in
 * to every token it was logged in to). 1 with *fn set, or 0 with an error raised. */
int hf_p11_ready(struct hf_p11 *p, CK_FUNCTION_LIST **fn);
/* Changes each time the module is initialised (first use, after a fork): object handles found
 * under one generation are re-found under the next. */
unsigned long hf_p11_generation(struct hf_p11 *p);

/* A session on slot from the pool (or a new one); give it back with hf_p11_session_put, with
 * reusable false when the session may be left in a bad state. 1 or 0 (error raised). */
int hf_p11_session_get(struct hf_p11 *p, CK_SLOT_ID slot, CK_SESSION_HANDLE *session);
void hf_p11_session_put(struct hf_p11 *p, CK_SLOT_ID slot, CK_SESSION_HANDLE session,
                        bool reusable);

/* Logs the user in to slot's token unless it already is (or needs no login). PIN sources, first
 * found wins: uri_pin (from the URI, may be NULL), the configured pkcs11-module-pin, then cb
 * (OpenSSL's passphrase callback, may be NULL). A refused PIN is never tried again in this
 * process. 1: logged in; 0: failed (error raised); -1: no PIN source at all (nothing raised). */
int hf_p11_login(struct hf_p11 *p, CK_SLOT_ID slot, const char *uri_pin,
                 OSSL_PASSPHRASE_CALLBACK *cb, void *cbarg);

/* C_Login(CKU_CONTEXT_SPECIFIC) on session, for a key with CKA_ALWAYS_AUTHENTICATE, with the PIN
 * that logged the token in (or the configured one). 1 or 0 (error raised). */
int hf_p11_context_login(struct hf_p11 *p, CK_SLOT_ID slot, CK_SESSION_HANDLE session);
/* C_FindObjects over template on session: up to max handles into out, *count set. 1 or 0. */
int hf_p11_find(struct hf_p11 *p, CK_SESSION_HANDLE session, CK_ATTRIBUTE *tmpl, CK_ULONG n,
                CK_OBJECT_HANDLE *out, CK_ULONG max, CK_ULONG *count);
/* One attribute's value, allocated (caller frees with OPENSSL_free; *len may be 0). 1: read;
 * 0: the object has no such attribute, or it is sensitive (nothing raised); -1: error raised. */
int hf_p11_attr_get(struct hf_p11 *p, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE obj,
                    CK_ATTRIBUTE_TYPE type, unsigned char **val, size_t *len);

/* Printable name of a return value, e.g. "CKR_PIN_INCORRECT" (hex for unknown ones). */
const char *hf_ckr_name(CK_RV rv, char buf[32]);

/* ---- keys (holdfast-key.c) ---------------------------------------------------------------- */

#define HF_KEY_MAGIC 0x48464b59U /* "HFKY": checks a store reference really is one of ours */

struct hf_key {
    unsigned int magic;
    atomic_int refs;
    struct hf_prov *prov;
    CK_KEY_TYPE type;    /* CKK_RSA, CKK_EC or CKK_EC_EDWARDS (Ed25519) */
    CK_OBJECT_CLASS cls; /* CKO_PRIVATE_KEY: a token key; CKO_PUBLIC_KEY: public parts only */
    EVP_PKEY *pub;       /* the public half, in prov's private libctx; NULL until imported */
    /* Where the private key object lives (cls == CKO_PRIVATE_KEY), to find it again after a
     * fork: slot, CKA_ID and CKA_LABEL. */
    CK_SLOT_ID slot;
    unsigned char *id;
    size_t id_len;
    char *label;
    bool always_authenticate; /* CKA_ALWAYS_AUTHENTICATE: a context login before each use */
    pthread_mutex_t lock;     /* serialises re-finding the handle */
    _Atomic CK_OBJECT_HANDLE handle;
    atomic_ulong handle_generation; /* hf_p11_generation the handle belongs to */
    atomic_int ecdsa_der;           /* hf_key_signs_ecdsa_der: 0 not asked yet, 1 yes, -1 no */
};

/* A key with no material yet (keymgmt new, before import). */
struct hf_key *hf_key_new(struct hf_prov *prov, CK_KEY_TYPE type);
/* A key over a token object (private or public key object), reading its type, identity and
 * public half through session. NULL with an error raised, or NULL silently (*unsupported set)
 * for a key type other than RSA and EC. */
struct hf_key *hf_key_from_object(struct hf_prov *prov, CK_SLOT_ID slot, CK_SESSION_HANDLE session,
                                  CK_OBJECT_HANDLE obj, CK_OBJECT_CLASS cls, bool *unsupported);
/* An independent copy sharing nothing mutable. */
struct hf_key *hf_key_dup(const struct hf_key *key);
struct hf_key *hf_key_ref(struct hf_key *key);
void hf_key_unref(struct hf_key *key);
/* The algorithm name OpenSSL knows the key type by ("RSA", "EC"). */
const char *hf_key_type_name(CK_KEY_TYPE type);
bool hf_key_is_private(const struct hf_key *key);

/* Whether key's module signs ECDSA straight into DER (Holdfast's CKM_HF_ECDSA_DER), which saves
 * converting r || s to DER in both the module and here. Asked once per key. */
bool hf_key_signs_ecdsa_der(struct hf_key *key);

enum hf_key_op { HF_KEY_SIGN, HF_KEY_DECRYPT };
/* One private-key operation on the token: C_SignInit+C_Sign or C_DecryptInit+C_Decrypt on a
 * pooled session, with the cached object handle. *outlen: capacity in, length out. 1 or 0. */
int hf_key_op(struct hf_key *key, enum hf_key_op op, CK_MECHANISM *mech, const unsigned char *in,
              size_t inlen, unsigned char *out, size_t *outlen);

/* ---- URIs (holdfast-uri.c) ---------------------------------------------------------------- */

/* A parsed RFC 7512 pkcs11: URI, or a holdfast:<name>[;version=N][;type=T] one. Strings are
 * percent-decoded and NUL-terminated; NULL where the URI does not say. */
struct hf_uri {
    char *token, *manufacturer, *serial, *model;
    char *lib_manufacturer, *lib_description, *lib_version;
    char *slot_description, *slot_manufacturer;
    bool has_slot_id;
    CK_SLOT_ID slot_id;
    char *object;
    unsigned char *id;
    size_t id_len;
    bool has_class;
    CK_OBJECT_CLASS cls;
    bool has_version; /* holdfast: only */
    CK_ULONG version;
    char *pin; /* pin-value, or what pin-source names (read at parse time) */
};

/* 1 with *out set (free with hf_uri_free), or 0 with an error raised. */
int hf_uri_parse(struct hf_prov *prov, const char *text, struct hf_uri **out);
void hf_uri_free(struct hf_uri *uri);
/* Whether the slot, its token and the library match the URI's token/slot/library attributes. */
bool hf_uri_matches_token(const struct hf_uri *uri, const CK_INFO *lib, CK_SLOT_ID slot,
                          const CK_SLOT_INFO *si, const CK_TOKEN_INFO *ti);

/* ---- dispatch tables ---------------------------------------------------------------------- */

extern const OSSL_DISPATCH hf_rsa_keymgmt_functions[];
extern const OSSL_DISPATCH hf_ec_keymgmt_functions[];
extern const OSSL_DISPATCH hf_ed25519_keymgmt_functions[];
extern const OSSL_DISPATCH hf_ed25519_signature_functions[];
extern const OSSL_DISPATCH hf_rsa_signature_functions[];
extern const OSSL_DISPATCH hf_ecdsa_signature_functions[];
extern const OSSL_DISPATCH hf_rsa_asym_cipher_functions[];
extern const OSSL_DISPATCH hf_store_functions[];
extern const OSSL_DISPATCH hf_rsa_spki_der_encoder_functions[];
extern const OSSL_DISPATCH hf_rsa_spki_pem_encoder_functions[];
extern const OSSL_DISPATCH hf_ec_spki_der_encoder_functions[];
extern const OSSL_DISPATCH hf_ec_spki_pem_encoder_functions[];
extern const OSSL_DISPATCH hf_ed25519_spki_der_encoder_functions[];
extern const OSSL_DISPATCH hf_ed25519_spki_pem_encoder_functions[];
extern const OSSL_DISPATCH hf_private_key_encoder_functions[];

/* Shared by the keymgmt and the encoders' import_object: a public-only key from OSSL_PARAMs.
 * NULL with an error raised (private material among them is refused). */
struct hf_key *hf_key_import_public(struct hf_prov *prov, CK_KEY_TYPE type, int selection,
                                    const OSSL_PARAM params[]);
int hf_key_set_public(struct hf_key *key, int selection, const OSSL_PARAM params[]);

/* Signature and cipher helpers (holdfast-mech.c): PKCS#11 names for OpenSSL digests. */
/* CKM_SHA* and CKG_MGF1_SHA* for md; 0 (nothing raised) when PKCS#11 has none. */
CK_MECHANISM_TYPE hf_mech_digest(const EVP_MD *md);
CK_RSA_PKCS_MGF_TYPE hf_mech_mgf1(const EVP_MD *md);
/* An RSA padding mode parameter (name or number) into *mode (-1 for an unknown name); 0 if p is
 * malformed. */
int hf_mech_rsa_pad_get(const OSSL_PARAM *p, int *mode);
/* Writes mode into p, as a name or a number as p asks; 0 for a mode without a name. */
int hf_mech_rsa_pad_set(OSSL_PARAM *p, int mode);

#endif /* HF_PROVIDER_H */
