/* The pure parts of the XKS AES-GCM construction: the GCM AAD, Holdfast's ciphertextMetadata and
 * the ciphertextDataIntegrityValue (crypto.h says what each is). */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/crypto.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

unsigned char *hf_xks_gcm_aad_new(const unsigned char *aad, size_t aad_len, const unsigned char *cm,
                                  size_t cm_len, size_t *out_len)
{
    unsigned char *out, *p;
    size_t len;

    if (out_len == NULL || aad_len > HF_XKS_AAD_MAX || cm_len > HF_XKS_CM_MAX) return NULL;
    if ((aad == NULL && aad_len != 0) || (cm == NULL && cm_len != 0)) return NULL;
    /* Both lengths are bounded above, so this sum cannot overflow. */
    len = 2 + aad_len + 1 + cm_len;
    if ((out = malloc(len)) == NULL) return NULL;
    p = out;
    *p++ = (unsigned char)(aad_len >> 8);
    *p++ = (unsigned char)aad_len;
    if (aad_len != 0) memcpy(p, aad, aad_len);
    p += aad_len;
    *p++ = (unsigned char)cm_len;
    if (cm_len != 0) memcpy(p, cm, cm_len);
    *out_len = len;
    return out;
}

bool hf_xks_cm_encode(CK_ULONG version, unsigned char out[HF_XKS_CM_LEN])
{
    if (out == NULL || version == 0 || version > 0xffffffffUL) return false;
    out[0] = HF_XKS_CM_FORMAT_V1;
    out[1] = (unsigned char)(version >> 24);
    out[2] = (unsigned char)(version >> 16);
    out[3] = (unsigned char)(version >> 8);
    out[4] = (unsigned char)version;
    return true;
}

bool hf_xks_cm_decode(const unsigned char *cm, size_t cm_len, CK_ULONG *version)
{
    CK_ULONG v;

    if (cm == NULL || version == NULL || cm_len != HF_XKS_CM_LEN || cm[0] != HF_XKS_CM_FORMAT_V1)
        return false;
    v = (CK_ULONG)cm[1] << 24 | (CK_ULONG)cm[2] << 16 | (CK_ULONG)cm[3] << 8 | (CK_ULONG)cm[4];
    if (v == 0) return false;
    *version = v;
    return true;
}

bool hf_xks_cdiv(const unsigned char *aad, size_t aad_len, const unsigned char *cm, size_t cm_len,
                 const unsigned char *iv, size_t iv_len, const unsigned char *ct, size_t ct_len,
                 const unsigned char *tag, size_t tag_len, unsigned char out[HF_XKS_CDIV_LEN])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int n = 0;
    bool ok = false;

    if (ctx == NULL || out == NULL) goto done;
    /* The spec hashes the plain concatenation, without lengths: CDIV guards against bit flips,
     * not against an adversary (Appendix C). Empty parts are simply skipped. */
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
        (aad_len != 0 && EVP_DigestUpdate(ctx, aad, aad_len) != 1) ||
        (cm_len != 0 && EVP_DigestUpdate(ctx, cm, cm_len) != 1) ||
        (iv_len != 0 && EVP_DigestUpdate(ctx, iv, iv_len) != 1) ||
        (ct_len != 0 && EVP_DigestUpdate(ctx, ct, ct_len) != 1) ||
        (tag_len != 0 && EVP_DigestUpdate(ctx, tag, tag_len) != 1) ||
        EVP_DigestFinal_ex(ctx, out, &n) != 1 || n != HF_XKS_CDIV_LEN)
        goto done;
    ok = true;
done:
    EVP_MD_CTX_free(ctx);
    return ok;
}
