/* The resource key hash (specs/gws-cse.md, "Crypto"): what digest and rewrap answer, so Google
 * can tell that a wrapped key still holds the DEK it expects, bound to the blob's resource and
 * perimeter, without seeing the DEK. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/payload.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

bool hf_cse_resource_key_hash(const unsigned char *dek, size_t dek_len, const char *resource_name,
                              size_t rn_len, const char *perimeter_id, size_t pid_len,
                              char out[HF_CSE_RKH_LEN])
{
    static const char label[] = "ResourceKeyDigest:";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    unsigned char mac[32];
    size_t mac_len = 0;
    EVP_MAC *hmac = NULL;
    EVP_MAC_CTX *ctx = NULL;
    bool ok = false;

    if (resource_name == NULL && rn_len == 0) resource_name = "";
    if (perimeter_id == NULL && pid_len == 0) perimeter_id = "";
    if (dek == NULL || out == NULL || (resource_name == NULL && rn_len != 0) ||
        (perimeter_id == NULL && pid_len != 0))
        return false;
    /* Streamed, so the message is never joined in a buffer of its own. */
    if ((hmac = EVP_MAC_fetch(NULL, "HMAC", NULL)) == NULL ||
        (ctx = EVP_MAC_CTX_new(hmac)) == NULL || EVP_MAC_init(ctx, dek, dek_len, params) != 1 ||
        EVP_MAC_update(ctx, (const unsigned char *)label, sizeof(label) - 1) != 1 ||
        EVP_MAC_update(ctx, (const unsigned char *)resource_name, rn_len) != 1 ||
        EVP_MAC_update(ctx, (const unsigned char *)":", 1) != 1 ||
        EVP_MAC_update(ctx, (const unsigned char *)perimeter_id, pid_len) != 1 ||
        EVP_MAC_final(ctx, mac, &mac_len, sizeof(mac)) != 1 || mac_len != sizeof(mac))
        goto done;
    ok = EVP_EncodeBlock((unsigned char *)out, mac, (int)sizeof(mac)) == HF_CSE_RKH_LEN - 1;
done:
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(hmac);
    OPENSSL_cleanse(mac, sizeof(mac));
    return ok;
}
