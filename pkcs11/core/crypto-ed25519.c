/* Ed25519 signatures (crypto.h): EVP_DigestSign with no digest, the one-shot form OpenSSL 3.0
 * offers for EdDSA, in the core's library context. */
#include "hf-build.h"

#include <openssl/err.h>
#include <openssl/evp.h>

#include "crypto.h"

#define ED25519_SIG_LEN 64

CK_RV hf_ed25519_sign(const struct hf_material *m, const unsigned char *in, size_t inlen,
                      unsigned char *out, size_t *outlen)
{
    EVP_PKEY *pkey = hf_material_pkey(m);
    EVP_MD_CTX *md = NULL;
    size_t have;
    CK_RV rv = CKR_FUNCTION_FAILED;

    if (m == NULL || outlen == NULL || (in == NULL && inlen != 0)) return CKR_ARGUMENTS_BAD;
    if (hf_material_alg(m) != HF_ALG_ED25519 || pkey == NULL) return CKR_KEY_TYPE_INCONSISTENT;
    have = *outlen;
    *outlen = ED25519_SIG_LEN;
    if (out == NULL) return CKR_OK;
    if (have < ED25519_SIG_LEN) return CKR_BUFFER_TOO_SMALL;
    ERR_set_mark();
    if ((md = EVP_MD_CTX_new()) == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    if (EVP_DigestSignInit_ex(md, NULL, NULL, hf_crypto_libctx(), NULL, pkey, NULL) == 1 &&
        EVP_DigestSign(md, out, outlen, in, inlen) == 1)
        rv = CKR_OK;
done:
    EVP_MD_CTX_free(md);
    ERR_pop_to_mark();
    return rv;
}

CK_RV hf_ed25519_verify(EVP_PKEY *pub, const unsigned char *in, size_t inlen,
                        const unsigned char *sig, size_t siglen)
{
    EVP_MD_CTX *md = NULL;
    CK_RV rv = CKR_FUNCTION_FAILED;
    int ok;

    if (pub == NULL || sig == NULL || (in == NULL && inlen != 0)) return CKR_ARGUMENTS_BAD;
    if (!EVP_PKEY_is_a(pub, "ED25519")) return CKR_KEY_TYPE_INCONSISTENT;
    if (siglen != ED25519_SIG_LEN) return CKR_SIGNATURE_LEN_RANGE;
    ERR_set_mark();
    if ((md = EVP_MD_CTX_new()) == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    if (EVP_DigestVerifyInit_ex(md, NULL, NULL, hf_crypto_libctx(), NULL, pub, NULL) != 1)
        goto done;
    ok = EVP_DigestVerify(md, sig, siglen, in, inlen);
    rv = ok == 1 ? CKR_OK : ok == 0 ? CKR_SIGNATURE_INVALID : CKR_FUNCTION_FAILED;
done:
    EVP_MD_CTX_free(md);
    ERR_pop_to_mark();
    return rv;
}
