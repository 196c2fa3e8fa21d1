/* CKM_ECDSA (the caller hashes) and CKM_ECDSA_SHA* (we hash), over P-256, P-384 and P-521.
 * Signatures are r||s, each zero-padded to the order's byte length (PKCS#11 2.40 2.3.1), not DER;
 * the vendor CKM_HF_ECDSA_DER (holdfast.h) signs a hash into DER. */
#include "hf-build.h"

#include "pkcs11/module/mech.h"

static size_t signature_bytes(const struct hf_op *op)
{
    return 2 * ((op->obj->key.bits + 7) / 8);
}

/* The largest DER ECDSA-Sig-Value, as OpenSSL's EVP_PKEY_get_size counts it (the provider sizes
 * its buffer by that): two INTEGERs below the order, which need a leading zero byte only when
 * the order's bits fill whole bytes (P-256, P-384; not P-521, whose 66th byte is 0 or 1), in a
 * SEQUENCE whose length takes a second byte past 127. */
static size_t der_signature_max(const struct hf_op *op)
{
    size_t body = 2 * (2 + op->obj->key.bits / 8 + 1);

    return body + (body > 127 ? 3 : 2);
}

CK_RV hf_ecdsa_init(struct hf_op *op, const CK_MECHANISM *mech)
{
    op->asym.md = hf_mech_hash_md(mech->mechanism, NULL); /* NULL for the two that take a hash */
    op->asym_md = op->asym.md;
    op->asym.ecdsa_der = mech->mechanism == CKM_HF_ECDSA_DER;
    return CKR_OK;
}

/* CKM_ECDSA signs a hash: empty input is a caller error, and nothing longer than SHA-512's is a
 * hash (ECDSA would silently truncate it). */
static CK_RV input_check(const struct hf_op *op, size_t inlen)
{
    if (op->asym.md != NULL) return CKR_OK;
    return inlen != 0 && inlen <= 64 ? CKR_OK : CKR_DATA_LEN_RANGE;
}

CK_RV hf_ecdsa_sign(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                    size_t *outlen)
{
    CK_RV rv = input_check(op, inlen);

    if (rv == CKR_OK)
        rv = hf_mech_out_check(out, outlen,
                               op->asym.ecdsa_der ? der_signature_max(op) : signature_bytes(op));
    if (rv != CKR_OK || out == NULL) return rv;
    if (op->material == NULL) /* a pool key (hf_mech_op_prepare): the member does it */
        return hf_core_key_ecdsa_sign(hf_mod.core, &op->obj->key, &op->obj->version, &op->asym, in,
                                      inlen, out, outlen);
    return hf_asym_sign(op->material, &op->asym, in, inlen, out, outlen);
}

CK_RV hf_ecdsa_verify(struct hf_op *op, const unsigned char *in, size_t inlen,
                      const unsigned char *sig, size_t siglen)
{
    CK_RV rv = input_check(op, inlen);

    if (rv != CKR_OK) return rv;
    if (siglen != signature_bytes(op)) return CKR_SIGNATURE_LEN_RANGE;
    return hf_asym_verify(op->obj->pub, &op->asym, in, inlen, sig, siglen);
}
