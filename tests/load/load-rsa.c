/* What the SAP and DKE builders share to prepare their RSA ciphertexts: OAEP with SHA-256 on the
 * key the API publishes (as SAP's and Office's clients encrypt, never through the key manager),
 * and standard padded base64 both ways, which every HYOK API's binary fields use. */
#include "hf-build.h"

#include "tests/load/load.h"

#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <string.h>

int hf_load_rsa_oaep256_encrypt(EVP_PKEY *pub, const unsigned char *pt, size_t ptlen,
                                unsigned char **ct, size_t *ctlen)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(pub, NULL);
    unsigned char *out = NULL;
    size_t len = 0;
    int rc = -1;

    if (!ctx || EVP_PKEY_encrypt_init(ctx) != 1 ||
        EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) != 1 ||
        EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_sha256()) != 1 ||
        EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha256()) != 1 ||
        EVP_PKEY_encrypt(ctx, NULL, &len, pt, ptlen) != 1 || !(out = malloc(len)) ||
        EVP_PKEY_encrypt(ctx, out, &len, pt, ptlen) != 1)
        goto done;
    *ct = out;
    *ctlen = len;
    out = NULL;
    rc = 0;
done:
    free(out);
    EVP_PKEY_CTX_free(ctx);
    return rc;
}

char *hf_load_b64(const unsigned char *data, size_t len)
{
    char *out;

    if (len > (size_t)1 << 24 || !(out = malloc((len + 2) / 3 * 4 + 1))) return NULL;
    EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    return out;
}

unsigned char *hf_load_unb64(const char *text, size_t *len)
{
    size_t n = text ? strlen(text) : 0;
    unsigned char *out;
    int got;

    if (n == 0 || n % 4 != 0 || n > (size_t)1 << 24 || !(out = malloc(n / 4 * 3))) return NULL;
    got = EVP_DecodeBlock(out, (const unsigned char *)text, (int)n);
    if (got < 0) {
        free(out);
        return NULL;
    }
    /* EVP_DecodeBlock counts the padding's zero bytes as data. */
    if (text[n - 1] == '=') got--;
    if (text[n - 2] == '=') got--;
    *len = (size_t)got;
    return out;
}
