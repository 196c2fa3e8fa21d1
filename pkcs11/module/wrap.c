/* C_WrapKey and C_UnwrapKey: a key leaves or enters the module encrypted under another key.
 * The bytes are the key's material in the core's interchange form: the raw value for AES, a
 * PKCS#8 PrivateKeyInfo for RSA and EC. Wrapping reuses the encrypt/decrypt mechanisms with the
 * CKF_WRAP/CKF_UNWRAP capability and the wrap/unwrap usage bits; the import goes through the
 * same template rules as key generation (hf_keygen_import). */
#include "hf-build.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/x509.h>

#include "pkcs11/core/secmem.h"
#include "pkcs11/module/mech.h"

static const char *mech_name(CK_MECHANISM_TYPE type)
{
    const struct hf_mech_info *info = hf_mech_find(type);

    return info != NULL ? info->name : "unknown";
}

/* The handle errors of C_WrapKey/C_UnwrapKey name which key was wrong. */
static CK_RV object_get(struct hf_session *s, CK_OBJECT_HANDLE h, CK_RV invalid,
                        struct hf_object **out)
{
    CK_RV rv = hf_object_get(s, h, out);

    return rv == CKR_OBJECT_HANDLE_INVALID ? invalid : rv;
}

static CK_RV prepare(struct hf_op *op, bool wrap, const CK_MECHANISM *mech, struct hf_object *key)
{
    CK_RV rv =
        hf_mech_op_prepare(op, wrap ? HF_OP_ENCRYPT : HF_OP_DECRYPT, wrap ? CKF_WRAP : CKF_UNWRAP,
                           wrap ? HF_USAGE_WRAP : HF_USAGE_UNWRAP, mech, key);

    if (rv == CKR_KEY_TYPE_INCONSISTENT)
        return wrap ? CKR_WRAPPING_KEY_TYPE_INCONSISTENT : CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT;
    return rv;
}

/* The key to wrap, as bytes in locked memory (hf_secmem_free). */
static CK_RV export_bytes(const struct hf_object *target, unsigned char **bytes, size_t *len)
{
    struct hf_material *m = NULL;
    CK_RV rv;

    if (target->kind == HF_OBJ_PUBLIC)
        return CKR_KEY_NOT_WRAPPABLE; /* public keys are read as attributes, never wrapped */
    if (!target->key.exportable) return CKR_KEY_UNEXTRACTABLE;
    rv = hf_object_material((struct hf_object *)target, &m);
    if (rv == CKR_OK) rv = hf_material_to_bytes(m, bytes, len);
    hf_material_unref(m);
    return rv;
}

/* Wraps target under op's key; the audit record names both keys, since what matters about a
 * wrap is which key left the module. */
static CK_RV wrap_run(struct hf_session *s, struct hf_op *op, const struct hf_object *target,
                      unsigned char *out, size_t *outlen)
{
    unsigned char *bytes = NULL;
    size_t len = 0, cap = *outlen;
    char detail[160];
    CK_RV rv = export_bytes(target, &bytes, &len);

    if (rv == CKR_OK) rv = hf_mech_encrypt(op, bytes, len, out, outlen);
    hf_secmem_free(bytes, len);
    if (rv == CKR_DATA_LEN_RANGE) rv = CKR_KEY_SIZE_RANGE;
    if (rv == CKR_BUFFER_TOO_SMALL || (rv == CKR_OK && out == NULL)) return rv;
    if (target->sobj)
        snprintf(detail, sizeof(detail), "%s wrapped=session:0x%lx", mech_name(op->mech),
                 (unsigned long)target->handle);
    else
        snprintf(detail, sizeof(detail), "%s wrapped=%s version=%u", mech_name(op->mech),
                 target->key.uuid, target->version.version);
    if (hf_module_audit(s, "wrap", op->obj, detail, rv, op->started_us) != CKR_OK) {
        if (out != NULL) OPENSSL_cleanse(out, cap);
        rv = CKR_HF_AUDIT_FAILED;
    }
    return rv;
}

HF_EXPORT CK_RV C_WrapKey(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                          CK_OBJECT_HANDLE hWrappingKey, CK_OBJECT_HANDLE hKey,
                          CK_BYTE_PTR pWrappedKey, CK_ULONG_PTR pulWrappedKeyLen)
{
    struct hf_object *wrapping = NULL, *target = NULL;
    struct hf_op op = {0};
    struct hf_session *s;
    size_t len;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (pMechanism == NULL || pulWrappedKeyLen == NULL) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    rv = object_get(s, hWrappingKey, CKR_WRAPPING_KEY_HANDLE_INVALID, &wrapping);
    if (rv == CKR_OK) rv = object_get(s, hKey, CKR_KEY_HANDLE_INVALID, &target);
    if (rv == CKR_OK) rv = prepare(&op, true, pMechanism, wrapping);
    rv = hf_entry_refusal(s, "wrap", wrapping, pMechanism->mechanism, rv);
    if (rv != CKR_OK) goto done;
    len = *pulWrappedKeyLen;
    rv = wrap_run(s, &op, target, pWrappedKey, &len);
    *pulWrappedKeyLen = len;
done:
    hf_op_reset(&op);
    hf_object_unref(target);
    hf_object_unref(wrapping);
    hf_session_put(s);
    return rv;
}

/* Algorithm and size of the unwrapped bytes: raw AES for a secret key, PKCS#8 (whose own
 * AlgorithmIdentifier tells RSA from EC and Ed25519) for a private key. */
static CK_RV material_kind(const CK_ATTRIBUTE *tmpl, CK_ULONG n, const unsigned char *bytes,
                           size_t len, enum hf_alg *alg, unsigned *bits)
{
    CK_ULONG cls = CKO_SECRET_KEY, type = CKK_AES;
    bool has_cls = false, has_type = false;
    const unsigned char *p = bytes;
    EVP_PKEY *pkey;
    CK_RV rv = hf_tmpl_ulong(tmpl, n, CKA_CLASS, &has_cls, &cls);

    if (rv == CKR_OK) rv = hf_tmpl_ulong(tmpl, n, CKA_KEY_TYPE, &has_type, &type);
    if (rv != CKR_OK) return rv;
    if (!has_cls && !has_type) return CKR_TEMPLATE_INCOMPLETE;
    if (has_type && type != CKK_AES && type != CKK_RSA && type != CKK_EC && type != CKK_EC_EDWARDS)
        return CKR_TEMPLATE_INCONSISTENT;
    if (has_type ? type == CKK_AES : cls == CKO_SECRET_KEY) {
        if (len != 16 && len != 24 && len != 32) return CKR_WRAPPED_KEY_INVALID;
        *alg = HF_ALG_AES;
        *bits = (unsigned)len * 8;
        return CKR_OK;
    }
    pkey = d2i_AutoPrivateKey_ex(NULL, &p, (long)len, hf_crypto_libctx(), NULL);
    if (pkey == NULL) return CKR_WRAPPED_KEY_INVALID;
    *alg = hf_pkey_alg(pkey);
    *bits = hf_pkey_bits(pkey);
    EVP_PKEY_free(pkey);
    /* The template's class and key type are checked against alg by hf_keygen_import. */
    return *alg != 0 ? CKR_OK : CKR_WRAPPED_KEY_INVALID;
}

static CK_RV unwrap_run(struct hf_session *s, struct hf_op *op, const unsigned char *in,
                        size_t inlen, const CK_ATTRIBUTE *tmpl, CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    unsigned char *bytes = NULL;
    size_t cap = 0, len = 0;
    enum hf_alg alg = 0;
    unsigned bits = 0;
    CK_RV rv = hf_mech_decrypt(op, in, inlen, NULL, &cap);

    if (rv == CKR_OK && (bytes = hf_secmem_alloc(cap ? cap : 1)) == NULL) rv = CKR_HOST_MEMORY;
    len = cap;
    if (rv == CKR_OK) rv = hf_mech_decrypt(op, in, inlen, bytes, &len);
    if (rv == CKR_ENCRYPTED_DATA_LEN_RANGE)
        rv = CKR_WRAPPED_KEY_LEN_RANGE;
    else if (rv == CKR_ENCRYPTED_DATA_INVALID)
        rv = CKR_WRAPPED_KEY_INVALID;
    if (rv == CKR_OK) rv = material_kind(tmpl, n, bytes, len, &alg, &bits);
    if (rv == CKR_OK) rv = hf_keygen_import(s, alg, bits, bytes, len, tmpl, n, out);
    hf_secmem_free(bytes, cap ? cap : 1);
    if (hf_module_audit(s, "unwrap", op->obj, mech_name(op->mech), rv, op->started_us) != CKR_OK)
        rv = CKR_HF_AUDIT_FAILED;
    return rv;
}

HF_EXPORT CK_RV C_UnwrapKey(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                            CK_OBJECT_HANDLE hUnwrappingKey, CK_BYTE_PTR pWrappedKey,
                            CK_ULONG ulWrappedKeyLen, CK_ATTRIBUTE_PTR pTemplate,
                            CK_ULONG ulAttributeCount, CK_OBJECT_HANDLE_PTR phKey)
{
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    struct hf_object *unwrapping = NULL;
    struct hf_op op = {0};
    struct hf_session *s;
    bool session = false;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (pMechanism == NULL || pWrappedKey == NULL || phKey == NULL) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    rv = hf_tmpl_check(pTemplate, ulAttributeCount);
    if (rv == CKR_OK) rv = hf_tmpl_is_session(pTemplate, ulAttributeCount, &session);
    if (rv != CKR_OK) goto done;
    /* A session object may be made in any session; a private one needs the user (checked as it
     * is added). */
    if (!session && atomic_load(&hf_mod.login) != HF_LOGIN_USER)
        rv = CKR_USER_NOT_LOGGED_IN;
    else if (!session && !(s->flags & CKF_RW_SESSION))
        rv = CKR_SESSION_READ_ONLY;
    else
        rv = object_get(s, hUnwrappingKey, CKR_UNWRAPPING_KEY_HANDLE_INVALID, &unwrapping);
    if (rv == CKR_OK) rv = prepare(&op, false, pMechanism, unwrapping);
    rv = hf_entry_refusal(s, "unwrap", unwrapping, pMechanism->mechanism, rv);
    if (rv == CKR_OK)
        rv = unwrap_run(s, &op, pWrappedKey, ulWrappedKeyLen, pTemplate, ulAttributeCount, &h);
    if (rv == CKR_OK) *phKey = h;
done:
    hf_op_reset(&op);
    hf_object_unref(unwrapping);
    hf_session_put(s);
    return rv;
}
