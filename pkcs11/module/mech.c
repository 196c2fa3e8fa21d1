/* The mechanism table (C_GetMechanismList/Info) and the dispatch from an operation to its
 * mechanism family: hf_mech_op_init checks mechanism, key type and usage once, then the family's
 * init parses the parameters; hf_mech_encrypt & co. route the one-shot work.
 *
 * Every mechanism carries CKF_HW: pkcs11-tool --test only runs its signature tests on mechanisms
 * flagged CKF_SIGN|CKF_HW (opt_allow_sw defaults to CKF_HW), and Holdfast's keys never leave the
 * module, which is what the flag tells a caller. */
#include "hf-build.h"

#include <string.h>

#include "pkcs11/module/mech.h"

#define EC_FLAGS (CKF_EC_F_P | CKF_EC_NAMEDCURVE | CKF_EC_UNCOMPRESS)
#define RSA_SIGN (CKF_SIGN | CKF_VERIFY | CKF_HW)
#define ECDSA_SIGN (CKF_SIGN | CKF_VERIFY | EC_FLAGS | CKF_HW)
#define AES_KW (CKF_WRAP | CKF_UNWRAP | CKF_ENCRYPT | CKF_DECRYPT | CKF_HW)
#define DIGEST (CKF_DIGEST | CKF_HW)
#define AES_CRYPT (CKF_ENCRYPT | CKF_DECRYPT | CKF_HW)
#define MAC (CKF_SIGN | CKF_VERIFY | CKF_HW)

/* Key sizes in the units PKCS#11 wants: bytes for AES, bits for RSA and EC.
 * The order is the order of C_GetMechanismList, which callers walk: pkcs11-tool --test digests
 * with the first CKF_DIGEST entry and signs with the first RSA entry it knows (RSA_PKCS here). */
static const struct hf_mech_info mechs[] = {
    {CKM_AES_KEY_GEN, "CKM_AES_KEY_GEN", {16, 32, CKF_GENERATE | CKF_HW}},
    /* Generic secrets in bytes, as AES: 14 (112 bits) to 512. */
    {CKM_GENERIC_SECRET_KEY_GEN, "CKM_GENERIC_SECRET_KEY_GEN", {14, 512, CKF_GENERATE | CKF_HW}},
    {CKM_SHA256_HMAC, "CKM_SHA256_HMAC", {14, 512, MAC}},
    {CKM_SHA384_HMAC, "CKM_SHA384_HMAC", {14, 512, MAC}},
    {CKM_SHA512_HMAC, "CKM_SHA512_HMAC", {14, 512, MAC}},
    {CKM_SHA_1_HMAC, "CKM_SHA_1_HMAC", {14, 512, MAC}},
    {CKM_AES_GCM, "CKM_AES_GCM", {16, 32, CKF_ENCRYPT | CKF_DECRYPT | CKF_HW}},
    {CKM_AES_CBC_PAD, "CKM_AES_CBC_PAD", {16, 32, AES_CRYPT}},
    {CKM_AES_CBC, "CKM_AES_CBC", {16, 32, AES_CRYPT}},
    {CKM_AES_ECB, "CKM_AES_ECB", {16, 32, AES_CRYPT}},
    {CKM_AES_CTR, "CKM_AES_CTR", {16, 32, AES_CRYPT}},
    {CKM_AES_CMAC, "CKM_AES_CMAC", {16, 32, MAC}},
    {CKM_AES_CMAC_GENERAL, "CKM_AES_CMAC_GENERAL", {16, 32, MAC}},
    {CKM_AES_KEY_WRAP, "CKM_AES_KEY_WRAP", {16, 32, AES_KW}},
    {CKM_AES_KEY_WRAP_PAD, "CKM_AES_KEY_WRAP_PAD", {16, 32, AES_KW}},
    {CKM_AES_KEY_WRAP_KWP, "CKM_AES_KEY_WRAP_KWP", {16, 32, AES_KW}},
    {CKM_RSA_PKCS_KEY_PAIR_GEN,
     "CKM_RSA_PKCS_KEY_PAIR_GEN",
     {2048, 4096, CKF_GENERATE_KEY_PAIR | CKF_HW}},
    /* C_WrapKey/C_UnwrapKey accept RSA PKCS#1 v1.5 and OAEP (an AES key under an RSA public
     * key), so those two say CKF_WRAP|CKF_UNWRAP as well. */
    {CKM_RSA_PKCS,
     "CKM_RSA_PKCS",
     {2048, 4096, CKF_ENCRYPT | CKF_DECRYPT | CKF_WRAP | CKF_UNWRAP | RSA_SIGN}},
    {CKM_RSA_X_509, "CKM_RSA_X_509", {2048, 4096, CKF_ENCRYPT | CKF_DECRYPT | RSA_SIGN}},
    {CKM_RSA_PKCS_OAEP,
     "CKM_RSA_PKCS_OAEP",
     {2048, 4096, CKF_ENCRYPT | CKF_DECRYPT | CKF_WRAP | CKF_UNWRAP | CKF_HW}},
    {CKM_RSA_PKCS_PSS, "CKM_RSA_PKCS_PSS", {2048, 4096, RSA_SIGN}},
    {CKM_SHA1_RSA_PKCS, "CKM_SHA1_RSA_PKCS", {2048, 4096, RSA_SIGN}},
    {CKM_SHA224_RSA_PKCS, "CKM_SHA224_RSA_PKCS", {2048, 4096, RSA_SIGN}},
    {CKM_SHA256_RSA_PKCS, "CKM_SHA256_RSA_PKCS", {2048, 4096, RSA_SIGN}},
    {CKM_SHA384_RSA_PKCS, "CKM_SHA384_RSA_PKCS", {2048, 4096, RSA_SIGN}},
    {CKM_SHA512_RSA_PKCS, "CKM_SHA512_RSA_PKCS", {2048, 4096, RSA_SIGN}},
    {CKM_SHA1_RSA_PKCS_PSS, "CKM_SHA1_RSA_PKCS_PSS", {2048, 4096, RSA_SIGN}},
    {CKM_SHA224_RSA_PKCS_PSS, "CKM_SHA224_RSA_PKCS_PSS", {2048, 4096, RSA_SIGN}},
    {CKM_SHA256_RSA_PKCS_PSS, "CKM_SHA256_RSA_PKCS_PSS", {2048, 4096, RSA_SIGN}},
    {CKM_SHA384_RSA_PKCS_PSS, "CKM_SHA384_RSA_PKCS_PSS", {2048, 4096, RSA_SIGN}},
    {CKM_SHA512_RSA_PKCS_PSS, "CKM_SHA512_RSA_PKCS_PSS", {2048, 4096, RSA_SIGN}},
    {CKM_EC_KEY_PAIR_GEN,
     "CKM_EC_KEY_PAIR_GEN",
     {256, 521, CKF_GENERATE_KEY_PAIR | EC_FLAGS | CKF_HW}},
    {CKM_ECDSA, "CKM_ECDSA", {256, 521, ECDSA_SIGN}},
    {CKM_ECDSA_SHA1, "CKM_ECDSA_SHA1", {256, 521, ECDSA_SIGN}},
    {CKM_ECDSA_SHA224, "CKM_ECDSA_SHA224", {256, 521, ECDSA_SIGN}},
    {CKM_ECDSA_SHA256, "CKM_ECDSA_SHA256", {256, 521, ECDSA_SIGN}},
    {CKM_ECDSA_SHA384, "CKM_ECDSA_SHA384", {256, 521, ECDSA_SIGN}},
    {CKM_ECDSA_SHA512, "CKM_ECDSA_SHA512", {256, 521, ECDSA_SIGN}},
    {CKM_HF_ECDSA_DER, "CKM_HF_ECDSA_DER", {256, 521, CKF_SIGN | EC_FLAGS | CKF_HW}},
    /* Ed25519 only: 256 bits, as SoftHSMv2 and OpenSC count its keys. */
    {CKM_EC_EDWARDS_KEY_PAIR_GEN,
     "CKM_EC_EDWARDS_KEY_PAIR_GEN",
     {256, 256, CKF_GENERATE_KEY_PAIR | CKF_HW}},
    {CKM_EDDSA, "CKM_EDDSA", {256, 256, CKF_SIGN | CKF_VERIFY | CKF_HW}},
    /* Derivation (derive.c): ECDH from EC private keys in bits, HKDF from generic secrets in
     * bytes. */
    {CKM_ECDH1_DERIVE, "CKM_ECDH1_DERIVE", {256, 384, CKF_DERIVE | EC_FLAGS | CKF_HW}},
    {CKM_HKDF_DERIVE, "CKM_HKDF_DERIVE", {14, 512, CKF_DERIVE | CKF_HW}},
    {CKM_SHA_1, "CKM_SHA_1", {0, 0, DIGEST}},
    {CKM_SHA224, "CKM_SHA224", {0, 0, DIGEST}},
    {CKM_SHA256, "CKM_SHA256", {0, 0, DIGEST}},
    {CKM_SHA384, "CKM_SHA384", {0, 0, DIGEST}},
    {CKM_SHA512, "CKM_SHA512", {0, 0, DIGEST}},
};
#define N_MECHS (sizeof(mechs) / sizeof(mechs[0]))

const struct hf_mech_info *hf_mech_find(CK_MECHANISM_TYPE type)
{
    for (size_t i = 0; i < N_MECHS; i++)
        if (mechs[i].type == type) return &mechs[i];
    return NULL;
}

CK_RV hf_mech_list(CK_MECHANISM_TYPE_PTR list, CK_ULONG_PTR count)
{
    CK_ULONG have;

    hf_return_val_if_fail(count != NULL, CKR_ARGUMENTS_BAD);
    have = *count;
    *count = N_MECHS;
    if (list == NULL) return CKR_OK;
    if (have < N_MECHS) return CKR_BUFFER_TOO_SMALL;
    for (size_t i = 0; i < N_MECHS; i++)
        list[i] = mechs[i].type;
    return CKR_OK;
}

enum hf_mech_family hf_mech_family(CK_MECHANISM_TYPE type)
{
    switch (type) {
    case CKM_AES_KEY_GEN:
    case CKM_GENERIC_SECRET_KEY_GEN:
    case CKM_RSA_PKCS_KEY_PAIR_GEN:
    case CKM_EC_KEY_PAIR_GEN:
    case CKM_EC_EDWARDS_KEY_PAIR_GEN:
        return HF_FAMILY_KEYGEN;
    case CKM_EDDSA:
        return HF_FAMILY_EDDSA;
    case CKM_AES_GCM:
        return HF_FAMILY_AES_GCM;
    case CKM_AES_KEY_WRAP:
    case CKM_AES_KEY_WRAP_PAD:
    case CKM_AES_KEY_WRAP_KWP:
        return HF_FAMILY_AES_KW;
    case CKM_AES_ECB:
    case CKM_AES_CBC:
    case CKM_AES_CBC_PAD:
    case CKM_AES_CTR:
        return HF_FAMILY_AES;
    case CKM_AES_CMAC:
    case CKM_AES_CMAC_GENERAL:
        return HF_FAMILY_MAC;
    case CKM_SHA_1_HMAC:
    case CKM_SHA256_HMAC:
    case CKM_SHA384_HMAC:
    case CKM_SHA512_HMAC:
        return HF_FAMILY_HMAC;
    case CKM_ECDSA:
    case CKM_ECDSA_SHA1:
    case CKM_ECDSA_SHA224:
    case CKM_ECDSA_SHA256:
    case CKM_ECDSA_SHA384:
    case CKM_ECDSA_SHA512:
    case CKM_HF_ECDSA_DER:
        return HF_FAMILY_ECDSA;
    case CKM_SHA_1:
    case CKM_SHA224:
    case CKM_SHA256:
    case CKM_SHA384:
    case CKM_SHA512:
        return HF_FAMILY_DIGEST;
    case CKM_ECDH1_DERIVE:
    case CKM_HKDF_DERIVE:
        return HF_FAMILY_DERIVE;
    default:
        /* Every other mechanism of the table is an RSA one. */
        return hf_mech_find(type) != NULL ? HF_FAMILY_RSA : 0;
    }
}

const char *hf_mech_hash_md(CK_MECHANISM_TYPE type, size_t *len)
{
    const char *md = NULL;
    size_t n = 0;

    switch (type) {
    case CKM_SHA_1:
    case CKM_SHA_1_HMAC:
    case CKM_SHA1_RSA_PKCS:
    case CKM_SHA1_RSA_PKCS_PSS:
    case CKM_ECDSA_SHA1:
        md = "SHA1", n = 20;
        break;
    case CKM_SHA224:
    case CKM_SHA224_RSA_PKCS:
    case CKM_SHA224_RSA_PKCS_PSS:
    case CKM_ECDSA_SHA224:
        md = "SHA224", n = 28;
        break;
    case CKM_SHA256:
    case CKM_SHA256_HMAC:
    case CKM_SHA256_RSA_PKCS:
    case CKM_SHA256_RSA_PKCS_PSS:
    case CKM_ECDSA_SHA256:
        md = "SHA256", n = 32;
        break;
    case CKM_SHA384:
    case CKM_SHA384_HMAC:
    case CKM_SHA384_RSA_PKCS:
    case CKM_SHA384_RSA_PKCS_PSS:
    case CKM_ECDSA_SHA384:
        md = "SHA384", n = 48;
        break;
    case CKM_SHA512:
    case CKM_SHA512_HMAC:
    case CKM_SHA512_RSA_PKCS:
    case CKM_SHA512_RSA_PKCS_PSS:
    case CKM_ECDSA_SHA512:
        md = "SHA512", n = 64;
        break;
    default:
        break;
    }
    if (len != NULL) *len = n;
    return md;
}

const char *hf_mech_mgf1_md(CK_ULONG mgf)
{
    switch (mgf) {
    case CKG_MGF1_SHA1:
        return "SHA1";
    case CKG_MGF1_SHA224:
        return "SHA224";
    case CKG_MGF1_SHA256:
        return "SHA256";
    case CKG_MGF1_SHA384:
        return "SHA384";
    case CKG_MGF1_SHA512:
        return "SHA512";
    default:
        return NULL;
    }
}

size_t hf_mech_md_size(const char *md)
{
    static const struct {
        const char *name;
        size_t len;
    } sizes[] = {{"SHA1", 20}, {"SHA224", 28}, {"SHA256", 32}, {"SHA384", 48}, {"SHA512", 64}};

    for (size_t i = 0; md != NULL && i < sizeof(sizes) / sizeof(sizes[0]); i++)
        if (strcmp(md, sizes[i].name) == 0) return sizes[i].len;
    return 0;
}

bool hf_mech_is_single_part(CK_MECHANISM_TYPE type)
{
    return type == CKM_EDDSA;
}

CK_RV hf_mech_out_check(const unsigned char *out, size_t *outlen, size_t need)
{
    size_t have = *outlen;

    *outlen = need;
    if (out == NULL) return CKR_OK;
    return have < need ? CKR_BUFFER_TOO_SMALL : CKR_OK;
}

static CK_RV key_check(enum hf_mech_family family, enum hf_op_kind kind,
                       const struct hf_object *obj)
{
    /* Private-key work needs the private face; public-key work the public key (either face). */
    bool private_op = kind == HF_OP_DECRYPT || kind == HF_OP_SIGN;

    switch (family) {
    case HF_FAMILY_AES_GCM:
    case HF_FAMILY_AES_KW:
    case HF_FAMILY_AES:
    case HF_FAMILY_MAC:
        return obj->kind == HF_OBJ_SECRET && obj->key_type == CKK_AES ? CKR_OK
                                                                      : CKR_KEY_TYPE_INCONSISTENT;
    case HF_FAMILY_HMAC:
        return obj->kind == HF_OBJ_SECRET && obj->key_type == CKK_GENERIC_SECRET
                   ? CKR_OK
                   : CKR_KEY_TYPE_INCONSISTENT;
    case HF_FAMILY_RSA:
    case HF_FAMILY_ECDSA:
    case HF_FAMILY_EDDSA:
        if (obj->key_type != (family == HF_FAMILY_RSA     ? CKK_RSA
                              : family == HF_FAMILY_ECDSA ? CKK_EC
                                                          : CKK_EC_EDWARDS) ||
            obj->kind == HF_OBJ_SECRET)
            return CKR_KEY_TYPE_INCONSISTENT;
        if (private_op && obj->kind != HF_OBJ_PRIVATE) return CKR_KEY_FUNCTION_NOT_PERMITTED;
        if (!private_op && obj->pub == NULL) return CKR_KEY_TYPE_INCONSISTENT;
        return CKR_OK;
    default:
        return CKR_MECHANISM_INVALID;
    }
}

static CK_RV family_init(enum hf_mech_family family, struct hf_op *op, const CK_MECHANISM *mech)
{
    switch (family) {
    case HF_FAMILY_AES_GCM:
        return hf_gcm_init(op, mech);
    case HF_FAMILY_AES_KW:
        return hf_kw_init(op, mech);
    case HF_FAMILY_AES:
        return hf_aes_init(op, mech);
    case HF_FAMILY_MAC:
    case HF_FAMILY_HMAC:
        return hf_mac_init(op, mech);
    case HF_FAMILY_RSA:
        return hf_rsa_init(op, mech);
    case HF_FAMILY_ECDSA:
        return hf_ecdsa_init(op, mech);
    case HF_FAMILY_EDDSA:
        return hf_eddsa_init(op, mech);
    default:
        return CKR_MECHANISM_INVALID;
    }
}

/* A pool key's material stays in its member (source-pool.h): hf_gcm_*, hf_aes_*, hf_mac_*
 * (CMAC), hf_rsa_decrypt/sign, hf_ecdsa_sign and hf_eddsa_sign send the work there (public work
 * uses the stored public key); a family not listed here has no member path, so a pool key
 * refuses it. */
static bool pool_family_ok(enum hf_mech_family family)
{
    switch (family) {
    case HF_FAMILY_AES_GCM:
    case HF_FAMILY_AES:
    case HF_FAMILY_AES_KW: /* hf_kw_*: the member wraps (pool-wrap.h) */
    case HF_FAMILY_MAC:
    case HF_FAMILY_RSA:
    case HF_FAMILY_ECDSA:
    case HF_FAMILY_EDDSA:
        return true;
    default:
        return false;
    }
}

CK_RV hf_mech_op_prepare(struct hf_op *op, enum hf_op_kind kind, CK_FLAGS flag, unsigned long usage,
                         const CK_MECHANISM *mech, struct hf_object *obj)
{
    const struct hf_mech_info *info = hf_mech_find(mech->mechanism);
    enum hf_mech_family family;
    bool private_op = kind == HF_OP_DECRYPT || kind == HF_OP_SIGN;
    CK_RV rv;

    if (info == NULL || !(info->info.flags & flag)) return CKR_MECHANISM_INVALID;
    /* Raw RSA with the private key is both a decryption and a signature (of any block the
     * caller pads): a key allowed only one of them must not do the other through it. */
    if (mech->mechanism == CKM_RSA_X_509 && private_op) usage |= HF_USAGE_DECRYPT | HF_USAGE_SIGN;
    family = hf_mech_family(mech->mechanism);
    rv = key_check(family, kind, obj);
    if (rv == CKR_OK && hf_object_is_in_pool(obj) && !pool_family_ok(family))
        rv = CKR_MECHANISM_INVALID;
    if (rv == CKR_OK) rv = hf_object_check_usage(obj, usage);
    if (rv != CKR_OK) return rv;
    op->mech = mech->mechanism;
    op->obj = hf_object_ref(obj);
    rv = family_init(family, op, mech);
    if (rv == CKR_OK && (private_op || obj->kind == HF_OBJ_SECRET) && !hf_object_is_in_pool(obj))
        rv = hf_object_material(obj, &op->material);
    if (rv != CKR_OK) {
        hf_op_reset(op);
        return rv;
    }
    op->started_us = hf_monotonic_us();
    op->active = true;
    return CKR_OK;
}

CK_RV hf_mech_op_init(struct hf_op *op, enum hf_op_kind kind, const CK_MECHANISM *mech,
                      struct hf_object *obj)
{
    static const CK_FLAGS flags[HF_OP_KINDS] = {CKF_ENCRYPT, CKF_DECRYPT, CKF_SIGN, CKF_VERIFY,
                                                CKF_DIGEST};
    static const unsigned long usage[HF_OP_KINDS] = {HF_USAGE_ENCRYPT, HF_USAGE_DECRYPT,
                                                     HF_USAGE_SIGN, HF_USAGE_VERIFY, 0};

    hf_return_val_if_fail(op != NULL && mech != NULL && obj != NULL, CKR_ARGUMENTS_BAD);
    hf_return_val_if_fail(kind < HF_OP_DIGEST, CKR_ARGUMENTS_BAD);
    return hf_mech_op_prepare(op, kind, flags[kind], usage[kind], mech, obj);
}

CK_RV hf_mech_encrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                      size_t *outlen)
{
    switch (hf_mech_family(op->mech)) {
    case HF_FAMILY_AES_GCM:
        return hf_gcm_encrypt(op, in, inlen, out, outlen);
    case HF_FAMILY_AES_KW:
        return hf_kw_encrypt(op, in, inlen, out, outlen);
    case HF_FAMILY_AES:
        return hf_aes_encrypt(op, in, inlen, out, outlen);
    case HF_FAMILY_RSA:
        return hf_rsa_encrypt(op, in, inlen, out, outlen);
    default:
        return CKR_MECHANISM_INVALID;
    }
}

CK_RV hf_mech_decrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                      size_t *outlen)
{
    switch (hf_mech_family(op->mech)) {
    case HF_FAMILY_AES_GCM:
        return hf_gcm_decrypt(op, in, inlen, out, outlen);
    case HF_FAMILY_AES_KW:
        return hf_kw_decrypt(op, in, inlen, out, outlen);
    case HF_FAMILY_AES:
        return hf_aes_decrypt(op, in, inlen, out, outlen);
    case HF_FAMILY_RSA:
        return hf_rsa_decrypt(op, in, inlen, out, outlen);
    default:
        return CKR_MECHANISM_INVALID;
    }
}

CK_RV hf_mech_sign(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                   size_t *outlen)
{
    switch (hf_mech_family(op->mech)) {
    case HF_FAMILY_RSA:
        return hf_rsa_sign(op, in, inlen, out, outlen);
    case HF_FAMILY_ECDSA:
        return hf_ecdsa_sign(op, in, inlen, out, outlen);
    case HF_FAMILY_EDDSA:
        return hf_eddsa_sign(op, in, inlen, out, outlen);
    case HF_FAMILY_MAC:
    case HF_FAMILY_HMAC:
        return hf_mac_sign(op, in, inlen, out, outlen);
    default:
        return CKR_MECHANISM_INVALID;
    }
}

CK_RV hf_mech_verify(struct hf_op *op, const unsigned char *in, size_t inlen,
                     const unsigned char *sig, size_t siglen)
{
    switch (hf_mech_family(op->mech)) {
    case HF_FAMILY_RSA:
        return hf_rsa_verify(op, in, inlen, sig, siglen);
    case HF_FAMILY_ECDSA:
        return hf_ecdsa_verify(op, in, inlen, sig, siglen);
    case HF_FAMILY_EDDSA:
        return hf_eddsa_verify(op, in, inlen, sig, siglen);
    case HF_FAMILY_MAC:
    case HF_FAMILY_HMAC:
        return hf_mac_verify(op, in, inlen, sig, siglen);
    default:
        return CKR_MECHANISM_INVALID;
    }
}
