/* C_DeriveKey: a new secret key (CKK_GENERIC_SECRET or CKK_AES of CKA_VALUE_LEN bytes) from an EC
 * private key by CKM_ECDH1_DERIVE (mech-ecdh.c) or from a generic secret by CKM_HKDF_DERIVE
 * (mech-hkdf.c). The base key needs the derive usage (CKA_DERIVE). The new key is a session
 * object, or with CKA_TOKEN TRUE a managed key made from the derived bytes as an import is.
 * Sensitivity follows the template; a session key keeps CKA_ALWAYS_SENSITIVE and
 * CKA_NEVER_EXTRACTABLE only if its base had them (PKCS#11 2.40 section 4.9). */
#include "hf-build.h"

#include <stdio.h>

#include "pkcs11/core/crypto.h"
#include "pkcs11/core/secmem.h"
#include "pkcs11/module/mech.h"

/* What the template asks of the new key. want 0: the mechanism's own length. */
struct target {
    enum hf_alg alg;
    size_t want;
};

static CK_RV target_get(const CK_ATTRIBUTE *t, CK_ULONG n, struct target *out)
{
    CK_ULONG cls = CKO_SECRET_KEY, type = CKK_GENERIC_SECRET, len = 0;
    bool has_cls, has_type, has_len;
    CK_RV rv = hf_tmpl_ulong(t, n, CKA_CLASS, &has_cls, &cls);

    if (rv == CKR_OK) rv = hf_tmpl_ulong(t, n, CKA_KEY_TYPE, &has_type, &type);
    if (rv == CKR_OK) rv = hf_tmpl_ulong(t, n, CKA_VALUE_LEN, &has_len, &len);
    if (rv != CKR_OK) return rv;
    /* The value is the mechanism's to make. */
    if (cls != CKO_SECRET_KEY || hf_tmpl_find(t, n, CKA_VALUE)) return CKR_TEMPLATE_INCONSISTENT;
    if (type == CKK_AES) {
        if (!has_len) return CKR_TEMPLATE_INCOMPLETE;
        if (len != 16 && len != 24 && len != 32) return CKR_ATTRIBUTE_VALUE_INVALID;
        out->alg = HF_ALG_AES;
    } else if (type == CKK_GENERIC_SECRET) {
        if (has_len && !hf_alg_bits_is_valid(HF_ALG_GENERIC, (unsigned)len * 8))
            return CKR_ATTRIBUTE_VALUE_INVALID;
        out->alg = HF_ALG_GENERIC;
    } else {
        return CKR_TEMPLATE_INCONSISTENT;
    }
    out->want = has_len ? len : 0;
    return CKR_OK;
}

static CK_RV base_check(const CK_MECHANISM *mech, const struct hf_object *base)
{
    const struct hf_mech_info *info = hf_mech_find(mech->mechanism);
    bool ecdh = mech->mechanism == CKM_ECDH1_DERIVE;

    if (info == NULL || !(info->info.flags & CKF_DERIVE)) return CKR_MECHANISM_INVALID;
    if (ecdh ? base->kind != HF_OBJ_PRIVATE || base->key_type != CKK_EC
             : base->kind != HF_OBJ_SECRET || base->key_type != CKK_GENERIC_SECRET)
        return CKR_KEY_TYPE_INCONSISTENT;
    return hf_object_check_usage(base, HF_USAGE_DERIVE);
}

static bool base_is_sealed(const struct hf_object *base)
{
    CK_BBOOL always = CK_FALSE, never = CK_FALSE;
    CK_ATTRIBUTE a[] = {{CKA_ALWAYS_SENSITIVE, &always, sizeof(always)},
                        {CKA_NEVER_EXTRACTABLE, &never, sizeof(never)}};
    bool secret = false;

    return hf_object_attr_get(base, &a[0], &secret) == CKR_OK &&
           hf_object_attr_get(base, &a[1], &secret) == CKR_OK && always && never;
}

static CK_RV key_make(struct hf_session *s, const struct hf_object *base, enum hf_alg alg,
                      const unsigned char *bytes, size_t len, const CK_ATTRIBUTE *t, CK_ULONG n,
                      bool session, CK_OBJECT_HANDLE *out)
{
    struct hf_material *m = NULL;
    CK_RV rv;

    if (!session) return hf_keygen_import(s, alg, (unsigned)len * 8, bytes, len, t, n, out);
    rv = hf_material_from_bytes(alg, (unsigned)len * 8, bytes, len, &m);
    if (rv == CKR_OK) rv = hf_session_key_derived(s, m, base_is_sealed(base), t, n, out);
    hf_material_unref(m);
    return rv;
}

static CK_RV derive_run(struct hf_session *s, const CK_MECHANISM *mech, struct hf_object *base,
                        const CK_ATTRIBUTE *t, CK_ULONG n, bool session, CK_OBJECT_HANDLE *out)
{
    uint64_t started = hf_monotonic_us();
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    struct target tg = {0};
    unsigned char *bytes = NULL;
    size_t len = 0;
    char detail[96];
    CK_RV rv = target_get(t, n, &tg);

    if (rv == CKR_OK && mech->mechanism == CKM_ECDH1_DERIVE)
        rv = hf_ecdh_derive(base, mech, tg.want, &bytes, &len);
    else if (rv == CKR_OK)
        rv = hf_hkdf_derive(s, base, mech, tg.want, &bytes, &len);
    if (rv == CKR_OK) rv = key_make(s, base, tg.alg, bytes, len, t, n, session, &h);
    hf_secmem_free(bytes, len);
    snprintf(detail, sizeof(detail), "%s derived=0x%lx", hf_mech_find(mech->mechanism)->name,
             (unsigned long)h);
    if (hf_module_audit(s, "derive", base, detail, rv, started) != CKR_OK) {
        /* A key whose making is not on record must not be used. */
        if (rv == CKR_OK && session) hf_session_object_destroy(s, h);
        return CKR_HF_AUDIT_FAILED;
    }
    if (rv == CKR_OK) *out = h;
    return rv;
}

HF_EXPORT CK_RV C_DeriveKey(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                            CK_OBJECT_HANDLE hBaseKey, CK_ATTRIBUTE_PTR pTemplate,
                            CK_ULONG ulAttributeCount, CK_OBJECT_HANDLE_PTR phKey)
{
    struct hf_object *base = NULL;
    struct hf_session *s;
    bool session = false;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (pMechanism == NULL || phKey == NULL) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    rv = hf_tmpl_check(pTemplate, ulAttributeCount);
    if (rv == CKR_OK) rv = hf_tmpl_is_session(pTemplate, ulAttributeCount, &session);
    /* A session object may be made in any session; a private one needs the user (checked as it
     * is added). */
    if (rv == CKR_OK && !session) rv = hf_session_check_write(s);
    if (rv == CKR_OK && (rv = hf_object_get(s, hBaseKey, &base)) == CKR_OBJECT_HANDLE_INVALID)
        rv = CKR_KEY_HANDLE_INVALID;
    if (rv == CKR_OK) rv = base_check(pMechanism, base);
    rv = hf_entry_refusal(s, "derive", base, pMechanism->mechanism, rv);
    if (rv == CKR_OK)
        rv = derive_run(s, pMechanism, base, pTemplate, ulAttributeCount, session, phKey);
done:
    hf_object_unref(base);
    hf_session_put(s);
    return rv;
}
