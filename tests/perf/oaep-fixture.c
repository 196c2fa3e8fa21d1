/* The OAEP fixture (oaep-fixture.h). */
#include "hf-build.h"

#include "tests/perf/oaep-fixture.h"

#include <openssl/rand.h>
#include <openssl/rsa.h>

EVP_PKEY_CTX *hf_perf_oaep_ctx(EVP_PKEY *key, bool decrypt)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(key, NULL);

    if (!ctx || (decrypt ? EVP_PKEY_decrypt_init(ctx) : EVP_PKEY_encrypt_init(ctx)) != 1 ||
        EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) != 1 ||
        EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_sha256()) != 1 ||
        EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha256()) != 1) {
        EVP_PKEY_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

EVP_PKEY *hf_perf_oaep_fixture(unsigned bits, unsigned char *ct, size_t *ctlen)
{
    unsigned char pt[HF_PERF_OAEP_PT_LEN];
    EVP_PKEY *key = EVP_RSA_gen(bits);
    EVP_PKEY_CTX *ctx = NULL;

    if (!key || RAND_bytes(pt, sizeof(pt)) != 1 || !(ctx = hf_perf_oaep_ctx(key, false)) ||
        EVP_PKEY_encrypt(ctx, ct, ctlen, pt, sizeof(pt)) != 1) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    return key;
}
