/* audit-key.h. OpenSSL's SHA256_* calls are deprecated in 3.0, and used here on purpose: the MAC
 * resumes from the key's inner and outer pad states twice per record, and OpenSSL 3.0's
 * EVP_MD_CTX_copy_ex allocates a context each time (measured per 280-byte record on the 2-core
 * VM: 600 ns with EVP copies, 400 ns with SHA256_CTX struct copies, 400 ns for the unkeyed
 * EVP chain). A SHA256_CTX is a plain struct, so the pad states (as secret as the key) live in
 * hf_secmem memory with it. The verifier computes the same MAC through EVP_MAC, so every test
 * that verifies a log checks this code against OpenSSL's HMAC. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "hf-build.h"

#include "pkcs11/core/audit-key.h"
#include "pkcs11/core/secmem.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <string.h>

#define RATCHET_PREFIX "holdfast-audit-ratchet"
#define HMAC_BLOCK 64

struct hf_audit_key {
    unsigned char k[HF_AUDIT_KEY_LEN];
    SHA256_CTX inner; /* after the key's ipad block */
    SHA256_CTX outer; /* after its opad block */
    SHA256_CTX work;
    unsigned every;
    unsigned used; /* records MACed under k */
};

static void pads_compute(struct hf_audit_key *key)
{
    unsigned char pad[HMAC_BLOCK];

    memset(pad, 0x36, sizeof(pad));
    for (size_t i = 0; i < HF_AUDIT_KEY_LEN; i++)
        pad[i] ^= key->k[i];
    SHA256_Init(&key->inner);
    SHA256_Update(&key->inner, pad, sizeof(pad));
    for (size_t i = 0; i < sizeof(pad); i++)
        pad[i] ^= 0x36 ^ 0x5c;
    SHA256_Init(&key->outer);
    SHA256_Update(&key->outer, pad, sizeof(pad));
    OPENSSL_cleanse(pad, sizeof(pad));
}

struct hf_audit_key *hf_audit_key_new(const unsigned char k0[HF_AUDIT_KEY_LEN], unsigned every)
{
    struct hf_audit_key *key = hf_secmem_alloc(sizeof(*key));

    if (!key) return NULL;
    memcpy(key->k, k0, HF_AUDIT_KEY_LEN);
    key->every = every ? every : 1;
    pads_compute(key);
    return key;
}

void hf_audit_key_free(struct hf_audit_key *key)
{
    hf_secmem_free(key, sizeof(*key));
}

void hf_audit_key_ratchet(unsigned char k[HF_AUDIT_KEY_LEN])
{
    SHA256_CTX c;

    SHA256_Init(&c);
    SHA256_Update(&c, RATCHET_PREFIX, sizeof(RATCHET_PREFIX) - 1);
    SHA256_Update(&c, k, HF_AUDIT_KEY_LEN);
    SHA256_Final(k, &c);
    OPENSSL_cleanse(&c, sizeof(c));
}

void hf_audit_key_mac(struct hf_audit_key *key, const unsigned char prev[HF_AUDIT_KEY_LEN],
                      const char *line, size_t len, unsigned char out[HF_AUDIT_KEY_LEN])
{
    unsigned char inner[HF_AUDIT_KEY_LEN];

    key->work = key->inner;
    SHA256_Update(&key->work, prev, HF_AUDIT_KEY_LEN);
    SHA256_Update(&key->work, line, len);
    SHA256_Final(inner, &key->work);
    key->work = key->outer;
    SHA256_Update(&key->work, inner, sizeof(inner));
    SHA256_Final(out, &key->work);
    OPENSSL_cleanse(inner, sizeof(inner));
    if (++key->used < key->every) return;
    hf_audit_key_ratchet(key->k);
    pads_compute(key);
    key->used = 0;
}
