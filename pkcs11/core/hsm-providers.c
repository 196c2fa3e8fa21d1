/* A backend's crypto outlives the host's providers. SoftHSMv2 does its crypto with OpenSSL in the
 * process's default library context, whose providers are the host's: openssl's apps, given
 * -provider, unload theirs (default too) before they exit, and the module's C_Finalize comes
 * after, from an exit handler. The backend then had no HMAC: the closing audit checkpoint, signed
 * in the HSM, was lost ("audit: cannot derive a stream key in the HSM: 0x5"), leaving the
 * process's records unanchored (tests/integration/provider-exit-audit.sh). So while a backend is
 * loaded we hold an activation of each provider that serves it in that context: the host's
 * unload then only drops its own, and ours goes with the backend (hf_hsm_providers_release, after
 * its C_Finalize), still before OpenSSL's exit-time cleanup. No provider is added: only those the
 * host activated, or OpenSSL's fallback, are held. */
#include "hf-build.h"

#include "hsm-providers.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

/* What SoftHSMv2 uses to answer the audit (CKM_SHA256_HMAC over a token key it decrypts with
 * AES-256-CBC). */
static const OSSL_PROVIDER *serving(int kind)
{
    const OSSL_PROVIDER *p = NULL;

    if (kind == 0) {
        EVP_MD *md = EVP_MD_fetch(NULL, "SHA256", NULL);
        p = md ? EVP_MD_get0_provider(md) : NULL;
        EVP_MD_free(md);
    } else if (kind == 1) {
        EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        p = mac ? EVP_MAC_get0_provider(mac) : NULL;
        EVP_MAC_free(mac);
    } else {
        EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, "AES-256-CBC", NULL);
        p = c ? EVP_CIPHER_get0_provider(c) : NULL;
        EVP_CIPHER_free(c);
    }
    return p;
}

static bool held_has(const struct hf_hsm_providers *held, const OSSL_PROVIDER *p)
{
    for (size_t i = 0; i < held->n; i++)
        if (held->p[i] == p) return true;
    return false;
}

void hf_hsm_providers_hold(struct hf_hsm_providers *held)
{
    held->n = 0;
    /* A fetch that fails is the backend's to report, not an error left in the host's queue. */
    ERR_set_mark();
    for (int kind = 0; kind < HF_HSM_PROVIDERS_MAX; kind++) {
        const OSSL_PROVIDER *p = serving(kind);

        if (p == NULL || held_has(held, p)) continue;
        /* Loading an active provider by name only adds an activation (OSSL_PROVIDER_load(3)),
         * and hands back the same provider. */
        OSSL_PROVIDER *again = OSSL_PROVIDER_load(NULL, OSSL_PROVIDER_get0_name(p));
        if (again != NULL) held->p[held->n++] = again;
    }
    ERR_pop_to_mark();
}

void hf_hsm_providers_release(struct hf_hsm_providers *held)
{
    for (size_t i = held->n; i > 0; i--)
        OSSL_PROVIDER_unload(held->p[i - 1]);
    held->n = 0;
}
