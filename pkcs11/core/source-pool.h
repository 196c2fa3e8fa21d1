/* The pool key source (issue 14): key material generated inside a member of an HSM pool
 * (pool.h) that never leaves the HSMs in clear. Each version is one token object on the member
 * that generated it, labelled with the version's UUID (unique, and how any member finds it);
 * the store keeps no material for it, only where it lives (key.h, kek_label "pool:NAME/MEMBER").
 *
 * A plain-mode pool's key lives on its member alone, so its work runs there
 * (hf_pool_run_on): that member out of service is HF_POOL_RV_UNAVAILABLE for its keys, while
 * creation goes to any healthy member (hf_pool_run, failover included). Clone and export modes,
 * which copy a key to every member or keep it wrapped for re-seeding, come later.
 *
 * AES only, and AES-GCM only for now: other mechanisms answer CKR_MECHANISM_INVALID above. */
#ifndef HF_SOURCE_POOL_H
#define HF_SOURCE_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "key.h"
#include "pool.h"

/* Generates an AES key of bits inside a healthy member: a token object, sensitive and never
 * extractable, labelled label (the version UUID). *member is the member it was made on. */
CK_RV hf_pool_key_generate(struct hf_pool *pool, unsigned bits, const char *label, size_t *member);

/* AES-GCM in member with the object labelled label: encrypt (out: ciphertext || tag,
 * inlen + taglen bytes) or decrypt (out: inlen - taglen bytes; a wrong tag is
 * CKR_ENCRYPTED_DATA_INVALID, as the local source answers). *outlen is out's capacity on entry
 * and must hold the whole result (the caller keeps the two-call convention). The object missing
 * from the member is CKR_KEY_HANDLE_INVALID. */
CK_RV hf_pool_key_gcm(struct hf_pool *pool, size_t member, const char *label, bool encrypt,
                      const unsigned char *iv, size_t ivlen, const unsigned char *aad,
                      size_t aadlen, size_t taglen, const unsigned char *in, size_t inlen,
                      unsigned char *out, size_t *outlen);

/* Destroys the object labelled label on member; CKR_OK when there is none. */
CK_RV hf_pool_key_destroy(struct hf_pool *pool, size_t member, const char *label);

#endif
