/* The pool key source (issue 14): key material generated inside a member of an HSM pool
 * (pool.h) that never leaves the HSMs in clear. Each version is one token object labelled with
 * the version's UUID (unique, and how any member finds it); the store keeps no material for it,
 * only where it lives (key.h: kek_label).
 *
 * - Plain mode: a key lives on the member that generated it (kek_label "pool:NAME/MEMBER"),
 *   sensitive and never extractable, so its work runs there alone (hf_pool_run_on): that member
 *   out of service is HF_POOL_RV_UNAVAILABLE for its keys, while creation goes to any healthy
 *   member (hf_pool_run, failover included).
 * - Clone mode: a key is generated on one healthy member and copied to every other by wrap and
 *   unwrap under the pool's replication key (pool-clone.h), so it is on every member
 *   (kek_label "pool:NAME", no member) and its work runs on any healthy member, failover
 *   included. Its objects are sensitive but extractable (the copy is a C_WrapKey: gen_fn says
 *   why). A member that was out of service, or lacks a key when a request lands on it, is
 *   re-synced from the store's list of the pool's versions on the probe thread (core-pool.c),
 *   never on a request's; the request itself moves to a member that has the key.
 * - Export mode: clone mode, and each version is also kept in the store wrapped under the pool's
 *   backup KEK, so an empty token can be re-seeded (holdfast pool restore).
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

/* The member argument for a clone-mode key, which is on every member. */
#define HF_POOL_KEY_ANY_MEMBER ((size_t)-1)

/* A clone-mode key: generated (sensitive, extractable) on a healthy member, then copied under the
 * replication key repl_label to every other member; a member the copy does not reach now is
 * marked stale (hf_pool_member_stale) for its re-sync. CKR_OK once the key exists on one member. */
CK_RV hf_pool_key_generate_clone(struct hf_pool *pool, unsigned bits, const char *label,
                                 const char *repl_label);

/* AES-GCM in member with the object labelled label: encrypt (out: ciphertext || tag,
 * inlen + taglen bytes) or decrypt (out: inlen - taglen bytes; a wrong tag is
 * CKR_ENCRYPTED_DATA_INVALID, as the local source answers). *outlen is out's capacity on entry
 * and must hold the whole result (the caller keeps the two-call convention). The object missing
 * from the member is CKR_KEY_HANDLE_INVALID. member HF_POOL_KEY_ANY_MEMBER: on any healthy member
 * that has the object (clone mode, above); CKR_KEY_HANDLE_INVALID only when none has it. */
CK_RV hf_pool_key_gcm(struct hf_pool *pool, size_t member, const char *label, bool encrypt,
                      const unsigned char *iv, size_t ivlen, const unsigned char *aad,
                      size_t aadlen, size_t taglen, const unsigned char *in, size_t inlen,
                      unsigned char *out, size_t *outlen);

/* Destroys the object labelled label on member (HF_POOL_KEY_ANY_MEMBER: on every member it can
 * reach, the first failure answered); CKR_OK when there is none. */
CK_RV hf_pool_key_destroy(struct hf_pool *pool, size_t member, const char *label);

#endif
