/* RSAES-OAEP decoding (RFC 8017 7.1.2 step 3) of a block an HSM decrypted raw: for members whose
 * token refuses OAEP with the hash asked for (SoftHSMv2 2.6 takes SHA-1 only), source-pool.c.
 * OpenSSL's RSA_padding_check_PKCS1_OAEP_mgf1 is deprecated in 3.0 with no EVP replacement for a
 * block decrypted elsewhere, and is used on purpose: it is constant-time (Manger's attack reads
 * a decoder's timing), which a decoder of our own would have to prove. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "hf-build.h"

#include "pkcs11/core/crypto.h"

#include <limits.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

CK_RV hf_rsa_oaep_decode(const struct hf_asym_params *p, const unsigned char *em, size_t k,
                         unsigned char *out, size_t *outlen)
{
    EVP_MD *md = NULL, *mgf1 = NULL;
    CK_RV rv = CKR_MECHANISM_PARAM_INVALID;
    int n;

    if (p == NULL || em == NULL || out == NULL || outlen == NULL || p->md == NULL ||
        (p->label == NULL && p->label_len != 0))
        return CKR_ARGUMENTS_BAD;
    if (k > INT_MAX || *outlen > INT_MAX || p->label_len > INT_MAX) return CKR_DATA_LEN_RANGE;
    ERR_set_mark();
    md = EVP_MD_fetch(hf_crypto_libctx(), p->md, NULL);
    mgf1 = EVP_MD_fetch(hf_crypto_libctx(), p->mgf1_md != NULL ? p->mgf1_md : p->md, NULL);
    if (md == NULL || mgf1 == NULL) goto done;
    n = RSA_padding_check_PKCS1_OAEP_mgf1(out, (int)*outlen, em, (int)k, (int)k, p->label,
                                          (int)p->label_len, md, mgf1);
    /* One answer for every way a block can be wrong, as the local source gives. */
    rv = n < 0 ? CKR_ENCRYPTED_DATA_INVALID : CKR_OK;
    if (rv == CKR_OK) *outlen = (size_t)n;
done:
    EVP_MD_free(md);
    EVP_MD_free(mgf1);
    ERR_pop_to_mark();
    return rv;
}
