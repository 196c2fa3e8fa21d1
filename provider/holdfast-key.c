/* struct hf_key: a reference to a token key (its private half never leaves the token) plus its
 * public half as an OpenSSL key in the provider's private library context. */
#include "hf-build.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/objects.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>

#include "provider/provider.h"

const char *hf_key_type_name(CK_KEY_TYPE type)
{
    return type == CKK_RSA ? "RSA" : type == CKK_EC_EDWARDS ? "ED25519" : "EC";
}

bool hf_key_is_private(const struct hf_key *key)
{
    return key != NULL && key->cls == CKO_PRIVATE_KEY;
}

struct hf_key *hf_key_new(struct hf_prov *prov, CK_KEY_TYPE type)
{
    struct hf_key *key;

    if (type != CKK_RSA && type != CKK_EC && type != CKK_EC_EDWARDS) {
        HF_RAISE_DATA(prov, HF_R_UNSUPPORTED, "key type %lu", (unsigned long)type);
        return NULL;
    }
    key = OPENSSL_zalloc(sizeof(*key));
    if (key == NULL) {
        HF_RAISE_DATA(prov, HF_R_OPENSSL_FAILED, "out of memory");
        return NULL;
    }
    key->magic = HF_KEY_MAGIC;
    atomic_init(&key->refs, 1);
    key->prov = prov;
    key->type = type;
    key->cls = CKO_PUBLIC_KEY;
    key->handle = CK_INVALID_HANDLE;
    pthread_mutex_init(&key->lock, NULL);
    return key;
}

struct hf_key *hf_key_ref(struct hf_key *key)
{
    if (key != NULL) atomic_fetch_add_explicit(&key->refs, 1, memory_order_relaxed);
    return key;
}

void hf_key_unref(struct hf_key *key)
{
    if (key == NULL || atomic_fetch_sub_explicit(&key->refs, 1, memory_order_acq_rel) != 1) return;
    EVP_PKEY_free(key->pub);
    OPENSSL_free(key->id);
    OPENSSL_free(key->label);
    pthread_mutex_destroy(&key->lock);
    key->magic = 0;
    OPENSSL_free(key);
}

struct hf_key *hf_key_dup(const struct hf_key *key)
{
    struct hf_key *copy = hf_key_new(key->prov, key->type);

    if (copy == NULL) return NULL;
    copy->cls = key->cls;
    copy->slot = key->slot;
    copy->always_authenticate = key->always_authenticate;
    copy->handle = atomic_load(&key->handle);
    copy->handle_generation = atomic_load(&key->handle_generation);
    copy->ecdsa_der = atomic_load(&key->ecdsa_der);
    if ((key->pub != NULL && !EVP_PKEY_up_ref(key->pub)) ||
        (key->id_len > 0 && (copy->id = OPENSSL_memdup(key->id, key->id_len)) == NULL) ||
        (key->label != NULL && (copy->label = OPENSSL_strdup(key->label)) == NULL)) {
        HF_RAISE_DATA(key->prov, HF_R_OPENSSL_FAILED, "out of memory");
        hf_key_unref(copy);
        return NULL;
    }
    copy->pub = key->pub;
    copy->id_len = key->id_len;
    return copy;
}

/* ---- the public half ----------------------------------------------------------------------------
 */

static EVP_PKEY *pub_from_params(struct hf_prov *prov, CK_KEY_TYPE type, OSSL_PARAM *params)
{
    OSSL_LIB_CTX *libctx = hf_prov_libctx(prov);
    EVP_PKEY_CTX *ctx = NULL;
    EVP_PKEY *pub = NULL;

    if (libctx == NULL) return NULL;
    ctx = EVP_PKEY_CTX_new_from_name(libctx, hf_key_type_name(type), NULL);
    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) <= 0 ||
        EVP_PKEY_fromdata(ctx, &pub, EVP_PKEY_PUBLIC_KEY, params) <= 0) {
        HF_RAISE_DATA(prov, HF_R_OPENSSL_FAILED, "cannot build the %s public key",
                      hf_key_type_name(type));
        pub = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    return pub;
}

static EVP_PKEY *rsa_pub_read(struct hf_prov *prov, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE obj)
{
    unsigned char *n_val = NULL, *e_val = NULL;
    size_t n_len, e_len;
    BIGNUM *n = NULL, *e = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY *pub = NULL;

    if (hf_p11_attr_get(prov->p11, s, obj, CKA_MODULUS, &n_val, &n_len) != 1 ||
        hf_p11_attr_get(prov->p11, s, obj, CKA_PUBLIC_EXPONENT, &e_val, &e_len) != 1) {
        HF_RAISE_DATA(prov, HF_R_PKCS11_ERROR, "RSA key without a readable modulus/exponent");
        goto done;
    }
    if ((n = BN_bin2bn(n_val, (int)n_len, NULL)) == NULL ||
        (e = BN_bin2bn(e_val, (int)e_len, NULL)) == NULL || (bld = OSSL_PARAM_BLD_new()) == NULL ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e) ||
        (params = OSSL_PARAM_BLD_to_param(bld)) == NULL) {
        HF_RAISE_DATA(prov, HF_R_OPENSSL_FAILED, "out of memory");
        goto done;
    }
    pub = pub_from_params(prov, CKK_RSA, params);
done:
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(n);
    BN_free(e);
    OPENSSL_free(n_val);
    OPENSSL_free(e_val);
    return pub;
}

/* CKA_EC_POINT of obj, or of the public key object sharing its CKA_ID: PKCS#11 puts the point
 * on the public object only (holdfast has it on both). */
static int ec_point_read(struct hf_prov *prov, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE obj,
                         const unsigned char *id, size_t id_len, unsigned char **val, size_t *len)
{
    CK_OBJECT_CLASS cls = CKO_PUBLIC_KEY;
    CK_KEY_TYPE kt = CKK_EC;
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &kt, sizeof(kt)},
        {CKA_ID, (void *)id, id_len},
    };
    CK_OBJECT_HANDLE pub;
    CK_ULONG count = 0;
    int r;

    r = hf_p11_attr_get(prov->p11, s, obj, CKA_EC_POINT, val, len);
    if (r != 0 || id_len == 0) return r;
    if (!hf_p11_find(prov->p11, s, tmpl, 3, &pub, 1, &count)) return -1;
    return count == 1 ? hf_p11_attr_get(prov->p11, s, pub, CKA_EC_POINT, val, len) : 0;
}

static EVP_PKEY *ec_pub_read(struct hf_prov *prov, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE obj,
                             const unsigned char *id, size_t id_len)
{
    unsigned char *ecp = NULL, *point = NULL;
    size_t ecp_len = 0, point_len = 0;
    const unsigned char *in;
    ASN1_OBJECT *oid = NULL;
    ASN1_OCTET_STRING *os = NULL;
    const char *group;
    OSSL_PARAM params[3];
    EVP_PKEY *pub = NULL;

    if (hf_p11_attr_get(prov->p11, s, obj, CKA_EC_PARAMS, &ecp, &ecp_len) != 1 ||
        ec_point_read(prov, s, obj, id, id_len, &point, &point_len) != 1) {
        HF_RAISE_DATA(prov, HF_R_PKCS11_ERROR, "EC key without readable parameters/point");
        goto done;
    }
    in = ecp;
    oid = d2i_ASN1_OBJECT(NULL, &in, (long)ecp_len);
    group = oid != NULL ? OBJ_nid2sn(OBJ_obj2nid(oid)) : NULL;
    if (group == NULL || OBJ_obj2nid(oid) == NID_undef) {
        HF_RAISE_DATA(prov, HF_R_UNSUPPORTED, "EC parameters other than a named curve");
        goto done;
    }
    /* PKCS#11 2.40 says DER OCTET STRING; some modules give the raw point. */
    in = point;
    os = d2i_ASN1_OCTET_STRING(NULL, &in, (long)point_len);
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)group, 0);
    if (os != NULL && in == point + point_len)
        params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, os->data,
                                                      (size_t)os->length);
    else
        params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point, point_len);
    params[2] = OSSL_PARAM_construct_end();
    pub = pub_from_params(prov, CKK_EC, params);
done:
    ASN1_OCTET_STRING_free(os);
    ASN1_OBJECT_free(oid);
    OPENSSL_free(ecp);
    OPENSSL_free(point);
    return pub;
}

/* The public half: CKA_PUBLIC_KEY_INFO when the module has it (holdfast does), else from the
 * key's components. */
static EVP_PKEY *pub_read(struct hf_key *key, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE obj)
{
    struct hf_prov *prov = key->prov;
    OSSL_LIB_CTX *libctx = hf_prov_libctx(prov);
    unsigned char *spki = NULL;
    const unsigned char *in;
    size_t len = 0;
    EVP_PKEY *pub = NULL;
    int r;

    if (libctx == NULL) return NULL;
    r = hf_p11_attr_get(prov->p11, s, obj, CKA_PUBLIC_KEY_INFO, &spki, &len);
    if (r < 0) return NULL;
    if (r == 1 && len > 0) {
        in = spki;
        pub = d2i_PUBKEY_ex(NULL, &in, (long)len, libctx, NULL);
        OPENSSL_free(spki);
        if (pub != NULL && EVP_PKEY_is_a(pub, hf_key_type_name(key->type))) return pub;
        EVP_PKEY_free(pub);
        pub = NULL;
    } else {
        OPENSSL_free(spki);
    }
    if (key->type == CKK_EC_EDWARDS) { /* Ed25519 keys come with CKA_PUBLIC_KEY_INFO here */
        HF_RAISE_DATA(prov, HF_R_UNSUPPORTED, "Ed25519 key without CKA_PUBLIC_KEY_INFO");
        return NULL;
    }
    return key->type == CKK_RSA ? rsa_pub_read(prov, s, obj)
                                : ec_pub_read(prov, s, obj, key->id, key->id_len);
}

struct hf_key *hf_key_from_object(struct hf_prov *prov, CK_SLOT_ID slot, CK_SESSION_HANDLE session,
                                  CK_OBJECT_HANDLE obj, CK_OBJECT_CLASS cls, bool *unsupported)
{
    unsigned char *val = NULL, *label = NULL;
    size_t len = 0, label_len = 0;
    CK_KEY_TYPE type;
    struct hf_key *key = NULL;
    int r;

    *unsupported = false;
    r = hf_p11_attr_get(prov->p11, session, obj, CKA_KEY_TYPE, &val, &len);
    if (r < 0) goto fail;
    if (r == 0 || len != sizeof(type)) {
        HF_RAISE_DATA(prov, HF_R_PKCS11_ERROR, "key object without CKA_KEY_TYPE");
        goto fail;
    }
    memcpy(&type, val, sizeof(type));
    OPENSSL_free(val);
    val = NULL;
    if (type != CKK_RSA && type != CKK_EC && type != CKK_EC_EDWARDS) {
        *unsupported = true;
        return NULL;
    }
    if ((key = hf_key_new(prov, type)) == NULL) goto fail;
    key->cls = cls;
    key->slot = slot;
    key->handle = obj;
    key->handle_generation = hf_p11_generation(prov->p11);
    if (hf_p11_attr_get(prov->p11, session, obj, CKA_ID, &key->id, &key->id_len) < 0) goto fail;
    r = hf_p11_attr_get(prov->p11, session, obj, CKA_LABEL, &label, &label_len);
    if (r < 0) goto fail;
    if (r == 1) {
        key->label = OPENSSL_strndup((const char *)label, label_len);
        OPENSSL_free(label);
        if (key->label == NULL) goto fail;
    }
    if (cls == CKO_PRIVATE_KEY) {
        r = hf_p11_attr_get(prov->p11, session, obj, CKA_ALWAYS_AUTHENTICATE, &val, &len);
        if (r < 0) goto fail;
        key->always_authenticate = r == 1 && len == sizeof(CK_BBOOL) && val[0] == CK_TRUE;
        OPENSSL_free(val);
        val = NULL;
    }
    if ((key->pub = pub_read(key, session, obj)) == NULL) goto fail;
    return key;
fail:
    OPENSSL_free(val);
    hf_key_unref(key);
    return NULL;
}

int hf_key_set_public(struct hf_key *key, int selection, const OSSL_PARAM params[])
{
    const char *priv_name = key->type == CKK_RSA ? OSSL_PKEY_PARAM_RSA_D : OSSL_PKEY_PARAM_PRIV_KEY;

    if (key->pub != NULL || key->cls == CKO_PRIVATE_KEY) {
        HF_RAISE_DATA(key->prov, HF_R_INVALID_ARGUMENT, "the key already has its material");
        return 0;
    }
    /* OpenSSL asks for a whole key pair even when it only holds a public key (comparing a
     * certificate with our key): refuse only actual private material. */
    if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0 &&
        OSSL_PARAM_locate_const(params, priv_name) != NULL) {
        HF_RAISE(key->prov, HF_R_PRIVATE_KEY_IMPORT);
        return 0;
    }
    if ((selection & OSSL_KEYMGMT_SELECT_KEYPAIR) == 0) {
        HF_RAISE_DATA(key->prov, HF_R_UNSUPPORTED, "import of domain parameters alone");
        return 0;
    }
    key->pub = pub_from_params(key->prov, key->type, (OSSL_PARAM *)params);
    return key->pub != NULL;
}

struct hf_key *hf_key_import_public(struct hf_prov *prov, CK_KEY_TYPE type, int selection,
                                    const OSSL_PARAM params[])
{
    struct hf_key *key = hf_key_new(prov, type);

    if (key != NULL && !hf_key_set_public(key, selection, params)) {
        hf_key_unref(key);
        key = NULL;
    }
    return key;
}

/* ---- private-key operations ---------------------------------------------------------------------
 */

/* The private object's handle in the module's current generation: after a fork (or any
 * re-initialisation) found again by class, type, CKA_ID and CKA_LABEL. */
static int key_handle(struct hf_key *key, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE *h)
{
    struct hf_p11 *p = key->prov->p11;
    unsigned long gen = hf_p11_generation(p);
    CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
    CK_ATTRIBUTE tmpl[4] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &key->type, sizeof(key->type)},
    };
    CK_ULONG n = 2, count = 0;
    CK_OBJECT_HANDLE found;
    int ok = 1;

    if (atomic_load_explicit(&key->handle_generation, memory_order_acquire) == gen) {
        *h = atomic_load_explicit(&key->handle, memory_order_relaxed);
        return 1;
    }
    pthread_mutex_lock(&key->lock);
    if (atomic_load_explicit(&key->handle_generation, memory_order_relaxed) != gen) {
        if (key->id_len > 0) tmpl[n++] = (CK_ATTRIBUTE){CKA_ID, key->id, key->id_len};
        if (key->label != NULL)
            tmpl[n++] = (CK_ATTRIBUTE){CKA_LABEL, key->label, strlen(key->label)};
        ok = hf_p11_find(p, s, tmpl, n, &found, 1, &count);
        if (ok && count == 0) {
            HF_RAISE_DATA(key->prov, HF_R_PKCS11_ERROR,
                          "key '%s' not found after the module was re-initialised (logged out?)",
                          key->label != NULL ? key->label : "");
            ok = 0;
        }
        if (ok) {
            atomic_store_explicit(&key->handle, found, memory_order_relaxed);
            atomic_store_explicit(&key->handle_generation, gen, memory_order_release);
        }
    }
    *h = atomic_load_explicit(&key->handle, memory_order_relaxed);
    pthread_mutex_unlock(&key->lock);
    return ok;
}

/* Only Holdfast's module is asked: another vendor may give the same vendor-defined number
 * another meaning. A fork keeps the module, so the answer stays true in the child. */
bool hf_key_signs_ecdsa_der(struct hf_key *key)
{
    static const char holdfast[] = "Holdfast";
    int known = atomic_load(&key->ecdsa_der);
    CK_FUNCTION_LIST *fn;
    CK_MECHANISM_INFO mi;
    CK_INFO info;
    bool yes;

    if (known != 0) return known > 0;
    if (!hf_p11_ready(key->prov->p11, &fn)) return false; /* asked again next time */
    yes = fn->C_GetInfo(&info) == CKR_OK &&
          memcmp(info.manufacturerID, holdfast, sizeof(holdfast) - 1) == 0 &&
          info.manufacturerID[sizeof(holdfast) - 1] == ' ' &&
          fn->C_GetMechanismInfo(key->slot, CKM_HF_ECDSA_DER, &mi) == CKR_OK &&
          (mi.flags & CKF_SIGN) != 0;
    atomic_store(&key->ecdsa_der, yes ? 1 : -1);
    return yes;
}

/* Return values after which the session itself is gone or unusable. */
static bool ckr_is_session_lost(CK_RV rv)
{
    return rv == CKR_SESSION_HANDLE_INVALID || rv == CKR_SESSION_CLOSED ||
           rv == CKR_DEVICE_REMOVED || rv == CKR_DEVICE_ERROR || rv == CKR_TOKEN_NOT_PRESENT ||
           rv == CKR_CRYPTOKI_NOT_INITIALIZED;
}

int hf_key_op(struct hf_key *key, enum hf_key_op op, CK_MECHANISM *mech, const unsigned char *in,
              size_t inlen, unsigned char *out, size_t *outlen)
{
    struct hf_p11 *p = key->prov->p11;
    CK_FUNCTION_LIST *fn;
    CK_SESSION_HANDLE s;
    CK_OBJECT_HANDLE h;
    CK_ULONG len = (CK_ULONG)*outlen;
    bool active = false;
    const char *call;
    char buf[32];
    CK_RV rv;

    if (key->cls != CKO_PRIVATE_KEY) {
        HF_RAISE(key->prov, HF_R_PUBLIC_KEY_ONLY);
        return 0;
    }
    if (!hf_p11_ready(p, &fn) || !hf_p11_session_get(p, key->slot, &s)) return 0;
    if (!key_handle(key, s, &h)) {
        hf_p11_session_put(p, key->slot, s, true);
        return 0;
    }
    call = op == HF_KEY_SIGN ? "C_SignInit" : "C_DecryptInit";
    rv = op == HF_KEY_SIGN ? fn->C_SignInit(s, mech, h) : fn->C_DecryptInit(s, mech, h);
    if (rv == CKR_OK) {
        call = op == HF_KEY_SIGN ? "C_Sign" : "C_Decrypt";
        active = true;
        if (key->always_authenticate && !hf_p11_context_login(p, key->slot, s)) {
            hf_p11_session_put(p, key->slot, s, false);
            return 0;
        }
        rv = op == HF_KEY_SIGN ? fn->C_Sign(s, (CK_BYTE_PTR)in, (CK_ULONG)inlen, out, &len)
                               : fn->C_Decrypt(s, (CK_BYTE_PTR)in, (CK_ULONG)inlen, out, &len);
        /* Any answer but "buffer too small" ends the operation (PKCS#11 2.40 5.2). */
        active = rv == CKR_BUFFER_TOO_SMALL;
    }
    hf_p11_session_put(p, key->slot, s, !active && !ckr_is_session_lost(rv));
    if (rv != CKR_OK) {
        HF_RAISE_DATA(key->prov, HF_R_PKCS11_ERROR, "%s: %s", call, hf_ckr_name(rv, buf));
        return 0;
    }
    *outlen = (size_t)len;
    return 1;
}
