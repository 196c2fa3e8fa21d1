/* CKM_EDDSA over Ed25519 keys (PKCS#11 3.0 section 2.3.14): "pure" Ed25519 only, no prehash and
 * no context (Ed25519ph and Ed25519ctx need OpenSSL 3.2), single-part only (entry.c refuses the
 * updates): the whole message is signed, as RFC 8032 defines it. */
#include "hf-build.h"

#include "pkcs11/module/mech.h"

/* No parameter, or CK_EDDSA_PARAMS asking for nothing beyond Ed25519 itself. */
CK_RV hf_eddsa_init(struct hf_op *op, const CK_MECHANISM *mech)
{
    const CK_EDDSA_PARAMS *p = mech->pParameter;

    (void)op;
    if (p == NULL) return mech->ulParameterLen == 0 ? CKR_OK : CKR_MECHANISM_PARAM_INVALID;
    if (mech->ulParameterLen != sizeof(*p)) return CKR_MECHANISM_PARAM_INVALID;
    return !p->phFlag && p->ulContextDataLen == 0 ? CKR_OK : CKR_MECHANISM_PARAM_INVALID;
}

CK_RV hf_eddsa_sign(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                    size_t *outlen)
{
    if (op->material == NULL) /* a pool key (hf_mech_op_prepare): the member does it */
        return hf_core_key_ed25519_sign(hf_mod.core, &op->obj->key, &op->obj->version, in, inlen,
                                        out, outlen);
    return hf_ed25519_sign(op->material, in, inlen, out, outlen);
}

CK_RV hf_eddsa_verify(struct hf_op *op, const unsigned char *in, size_t inlen,
                      const unsigned char *sig, size_t siglen)
{
    return hf_ed25519_verify(op->obj->pub, in, inlen, sig, siglen);
}
