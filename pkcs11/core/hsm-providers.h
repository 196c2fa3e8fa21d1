/* The default library context's providers that a backend module's own OpenSSL uses, held while
 * the backend is loaded (hsm-providers.c says why). */
#ifndef HF_HSM_PROVIDERS_H
#define HF_HSM_PROVIDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <openssl/provider.h>

#define HF_HSM_PROVIDERS_MAX 3 /* one per algorithm held for: SHA-256, HMAC, AES-256-CBC */

struct hf_hsm_providers {
    OSSL_PROVIDER *p[HF_HSM_PROVIDERS_MAX];
    size_t n;
};

void hf_hsm_providers_hold(struct hf_hsm_providers *held);
void hf_hsm_providers_release(struct hf_hsm_providers *held);

#endif
