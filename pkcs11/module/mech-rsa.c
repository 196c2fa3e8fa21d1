/* RSA mechanisms: CKM_RSA_PKCS, CKM_RSA_X_509, CKM_RSA_PKCS_OAEP, CKM_RSA_PKCS_PSS and the
 * hash-and-sign CKM_SHA*_RSA_PKCS(_PSS). Parameters are checked here so that a caller gets the
 * PKCS#11 error it can act on (pkcs11-tool skips a mechanism on CKR_MECHANISM_PARAM_INVALID but
 * aborts on most others); the RSA work is the core's. */
#include "hf-build.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "pkcs11/module/mech.h"

static size_t modulus_bytes(const struct hf_op *op)
{
    return (op->obj->key.bits + 7) / 8;
}

static CK_RV oaep_init(struct hf_op *op, const CK_MECHANISM *mech)
{
    const CK_RSA_PKCS_OAEP_PARAMS *p = mech->pParameter;
    const void *label;
    size_t label_len;

    if (p == NULL || mech->ulParameterLen != sizeof(*p)) return CKR_MECHANISM_PARAM_INVALID;
    op->asym.md = hf_mech_hash_md(p->hashAlg, NULL);
    op->asym.mgf1_md = hf_mech_mgf1_md(p->mgf);
    if (hf_mech_family(p->hashAlg) != HF_FAMILY_DIGEST || op->asym.mgf1_md == NULL)
        return CKR_MECHANISM_PARAM_INVALID;
    label = p->pSourceData;
    label_len = p->ulSourceDataLen;
    /* CKZ_DATA_SPECIFIED is the only source the spec defines; pkcs11-tool (and others) send
     * source 0 for "no label", which means the same as an empty one. */
    if (p->source != CKZ_DATA_SPECIFIED && (p->source != 0 || label_len != 0))
        return CKR_MECHANISM_PARAM_INVALID;
    if ((label == NULL && label_len != 0) || label_len > HF_MAX_DATA_LEN)
        return CKR_MECHANISM_PARAM_INVALID;
    if (label_len != 0) {
        /* malloc: hf_op_reset frees it with free() */
        if ((op->aad = malloc(label_len)) == NULL) return CKR_HOST_MEMORY;
        memcpy(op->aad, label, label_len);
        op->aad_len = label_len;
    }
    op->asym.padding = HF_RSA_OAEP;
    op->asym.label = op->aad;
    op->asym.label_len = op->aad_len;
    op->asym_md = op->asym.md;
    return CKR_OK;
}

static CK_RV pss_init(struct hf_op *op, const CK_MECHANISM *mech)
{
    const CK_RSA_PKCS_PSS_PARAMS *p = mech->pParameter;
    size_t hlen, emlen = modulus_bytes(op);
    const char *md;

    if (p == NULL || mech->ulParameterLen != sizeof(*p)) return CKR_MECHANISM_PARAM_INVALID;
    md = hf_mech_hash_md(p->hashAlg, &hlen);
    if (hf_mech_family(p->hashAlg) != HF_FAMILY_DIGEST || hf_mech_mgf1_md(p->mgf) == NULL)
        return CKR_MECHANISM_PARAM_INVALID;
    /* PKCS#11 2.40 2.1.15: for CKM_SHAx_RSA_PKCS_PSS, hashAlg must be the mechanism's hash. */
    if (mech->mechanism != CKM_RSA_PKCS_PSS &&
        strcmp(md, hf_mech_hash_md(mech->mechanism, NULL)) != 0)
        return CKR_MECHANISM_PARAM_INVALID;
    /* RFC 8017 9.1.1: emLen >= hLen + sLen + 2 (emBits is one less than the modulus bits, which
     * for our whole-byte moduli costs nothing). */
    if (p->sLen > emlen || emlen < hlen + 2 || p->sLen > emlen - hlen - 2)
        return CKR_MECHANISM_PARAM_INVALID;
    op->asym.padding = HF_RSA_PSS;
    op->asym.mgf1_md = hf_mech_mgf1_md(p->mgf);
    op->asym.pss_saltlen = (long)p->sLen;
    op->asym_md = md;
    if (mech->mechanism != CKM_RSA_PKCS_PSS) {
        op->asym.md = md;
        return CKR_OK;
    }
    /* CKM_RSA_PKCS_PSS signs a digest the caller made, and the core takes that digest's hash
     * from MGF1 (crypto.h: md NULL means the input is a digest). A different MGF1 hash is legal
     * but unused in practice; refuse it rather than sign with the wrong hash. */
    if (strcmp(op->asym.mgf1_md, md) != 0) return CKR_MECHANISM_PARAM_INVALID;
    return CKR_OK;
}

CK_RV hf_rsa_init(struct hf_op *op, const CK_MECHANISM *mech)
{
    switch (mech->mechanism) {
    case CKM_RSA_PKCS:
        op->asym.padding = HF_RSA_PKCS1;
        return CKR_OK;
    case CKM_RSA_X_509:
        op->asym.padding = HF_RSA_RAW;
        return CKR_OK;
    case CKM_RSA_PKCS_OAEP:
        return oaep_init(op, mech);
    case CKM_RSA_PKCS_PSS:
    case CKM_SHA1_RSA_PKCS_PSS:
    case CKM_SHA224_RSA_PKCS_PSS:
    case CKM_SHA256_RSA_PKCS_PSS:
    case CKM_SHA384_RSA_PKCS_PSS:
    case CKM_SHA512_RSA_PKCS_PSS:
        return pss_init(op, mech);
    default:
        /* CKM_SHAx_RSA_PKCS: no parameters. */
        op->asym.padding = HF_RSA_PKCS1;
        op->asym.md = hf_mech_hash_md(mech->mechanism, NULL);
        op->asym_md = op->asym.md;
        return op->asym.md != NULL ? CKR_OK : CKR_MECHANISM_INVALID;
    }
}

/* The largest input an encryption (or a PKCS#1 v1.5 signature over raw data) takes: RFC 8017
 * 7.1.1 and 7.2.1. */
static size_t input_max(const struct hf_op *op)
{
    size_t k = modulus_bytes(op), hlen = 0;

    switch (op->asym.padding) {
    case HF_RSA_RAW:
        return k;
    case HF_RSA_OAEP:
        hlen = hf_mech_md_size(op->asym.md);
        return k > 2 * hlen + 2 ? k - 2 * hlen - 2 : 0;
    default:
        return k > 11 ? k - 11 : 0;
    }
}

CK_RV hf_rsa_encrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen)
{
    CK_RV rv;

    /* CKM_RSA_X_509 input shorter than the modulus is a number without its leading zero bytes:
     * the core puts them back. */
    if (inlen > input_max(op)) return CKR_DATA_LEN_RANGE;
    rv = hf_mech_out_check(out, outlen, modulus_bytes(op));
    if (rv != CKR_OK || out == NULL) return rv;
    return hf_asym_encrypt(op->obj->pub, &op->asym, in, inlen, out, outlen);
}

/* Decrypts into scratch memory first: the plaintext's length is known only afterwards, and a
 * caller that sized its buffer to the real plaintext (an unwrapped 32-byte key) must not be
 * refused for lacking room for a whole modulus. */
CK_RV hf_rsa_decrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t *outlen)
{
    unsigned char plain[HF_RSA_MAX_BYTES];
    size_t k = modulus_bytes(op), len = sizeof(plain), cap = *outlen;
    CK_RV rv;

    if (k > sizeof(plain)) return CKR_KEY_SIZE_RANGE;
    if (op->asym.padding == HF_RSA_RAW ? inlen > k : inlen != k)
        return CKR_ENCRYPTED_DATA_LEN_RANGE;
    if (out == NULL) {
        *outlen = k;
        return CKR_OK;
    }
    if (op->material == NULL) /* a pool key (hf_mech_op_prepare): the member does it */
        rv = hf_core_key_rsa_decrypt(hf_mod.core, &op->obj->key, &op->obj->version, &op->asym, in,
                                     inlen, plain, &len);
    else
        rv = hf_asym_decrypt(op->material, &op->asym, in, inlen, plain, &len);
    if (rv != CKR_OK) goto done;
    *outlen = len;
    if (cap < len) {
        rv = CKR_BUFFER_TOO_SMALL;
        goto done;
    }
    memcpy(out, plain, len);
done:
    OPENSSL_cleanse(plain, sizeof(plain));
    return rv;
}

static CK_RV sign_input_check(const struct hf_op *op, size_t inlen)
{
    if (op->asym.md != NULL) return CKR_OK; /* hash-and-sign: any length */
    if (op->asym.padding == HF_RSA_PSS) {
        return inlen == hf_mech_md_size(op->asym_md) ? CKR_OK : CKR_DATA_LEN_RANGE;
    }
    return inlen <= input_max(op) ? CKR_OK : CKR_DATA_LEN_RANGE;
}

CK_RV hf_rsa_sign(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                  size_t *outlen)
{
    CK_RV rv = sign_input_check(op, inlen);

    if (rv == CKR_OK) rv = hf_mech_out_check(out, outlen, modulus_bytes(op));
    if (rv != CKR_OK || out == NULL) return rv;
    if (op->material == NULL) /* a pool key (hf_mech_op_prepare): the member does it */
        return hf_core_key_rsa_sign(hf_mod.core, &op->obj->key, &op->obj->version, &op->asym, in,
                                    inlen, out, outlen);
    return hf_asym_sign(op->material, &op->asym, in, inlen, out, outlen);
}

CK_RV hf_rsa_verify(struct hf_op *op, const unsigned char *in, size_t inlen,
                    const unsigned char *sig, size_t siglen)
{
    CK_RV rv = sign_input_check(op, inlen);

    if (rv != CKR_OK) return rv;
    if (siglen != modulus_bytes(op)) return CKR_SIGNATURE_LEN_RANGE;
    return hf_asym_verify(op->obj->pub, &op->asym, in, inlen, sig, siglen);
}
