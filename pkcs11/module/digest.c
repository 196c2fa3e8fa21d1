/* C_Digest*: CKM_SHA_1 .. CKM_SHA512. Not key operations, so no audit record, except
 * C_DigestKey's. Multi-part input
 * is collected like the other operations' (pkcs11-tool --test requires every CKF_DIGEST
 * mechanism to be multi-part capable). */
#include "hf-build.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "pkcs11/module/mech.h"

CK_RV hf_mech_digest(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    size_t len = sizeof(md);
    CK_RV rv = hf_mech_out_check(out, outlen, hf_mech_md_size(op->asym_md));

    if (rv != CKR_OK || out == NULL) return rv;
    rv = hf_digest(op->asym_md, in, inlen, md, &len);
    if (rv == CKR_OK) {
        memcpy(out, md, len);
        *outlen = len;
    }
    OPENSSL_cleanse(md, sizeof(md));
    return rv;
}

HF_EXPORT CK_RV C_DigestInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism)
{
    return hf_entry_init(hSession, HF_OP_DIGEST, pMechanism, CK_INVALID_HANDLE);
}

HF_EXPORT CK_RV C_Digest(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen,
                         CK_BYTE_PTR pDigest, CK_ULONG_PTR pulDigestLen)
{
    return hf_entry_oneshot(hSession, HF_OP_DIGEST, pData, ulDataLen, pDigest, pulDigestLen);
}

HF_EXPORT CK_RV C_DigestUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen)
{
    return hf_entry_update(hSession, HF_OP_DIGEST, pPart, ulPartLen, NULL, NULL);
}

/* The key's value joins the digest's input (PKCS#11 2.40 section 5.10), for secret keys only
 * (CKR_KEY_INDIGESTIBLE otherwise), as SoftHSMv2 does: it digests sensitive and unexportable
 * keys too when the hash is one of the SHA family, which every digest here is. The key must be
 * in a state where it may still be used (KMIP 1.4 section 3.22, as for verify). The digest names
 * a key, so the call is audited like a key operation; an error ends the digest, as a failed
 * C_DigestUpdate does. */
static CK_RV digest_key(struct hf_op *op, struct hf_object *obj)
{
    struct hf_material *m = NULL;
    const unsigned char *bytes;
    size_t len = 0;
    CK_RV rv = CKR_OK;

    if (obj->kind != HF_OBJ_SECRET) return CKR_KEY_INDIGESTIBLE;
    if (!hf_key_state_allows(hf_key_version_state(&obj->key, &obj->version), HF_USAGE_VERIFY))
        return CKR_KEY_FUNCTION_NOT_PERMITTED;
    if ((rv = hf_object_material(obj, &m)) != CKR_OK) return rv;
    bytes = hf_material_secret(m, &len);
    rv = bytes != NULL && len != 0 ? hf_op_append(op, bytes, len) : CKR_KEY_INDIGESTIBLE;
    hf_material_unref(m);
    return rv;
}

HF_EXPORT CK_RV C_DigestKey(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hKey)
{
    const struct hf_mech_info *info;
    struct hf_object *obj = NULL;
    struct hf_session *s;
    uint64_t started = hf_monotonic_us();
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    struct hf_op *op = &s->ops[HF_OP_DIGEST];
    if (!op->active) {
        rv = CKR_OPERATION_NOT_INITIALIZED;
        goto done;
    }
    info = hf_mech_find(op->mech);
    rv = hf_object_get(s, hKey, &obj);
    if (rv == CKR_OBJECT_HANDLE_INVALID) rv = CKR_KEY_HANDLE_INVALID;
    if (rv == CKR_OK) rv = digest_key(op, obj);
    if (obj != NULL && hf_module_audit(s, "digest_key", obj, info != NULL ? info->name : "unknown",
                                       rv, started) != CKR_OK)
        rv = CKR_HF_AUDIT_FAILED;
    else if (obj == NULL)
        rv = hf_entry_refusal(s, "digest_key", NULL, op->mech, rv);
    if (rv != CKR_OK) hf_op_reset(op);
done:
    hf_object_unref(obj);
    hf_session_put(s);
    return rv;
}

HF_EXPORT CK_RV C_DigestFinal(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pDigest,
                              CK_ULONG_PTR pulDigestLen)
{
    return hf_entry_final(hSession, HF_OP_DIGEST, pDigest, pulDigestLen);
}
