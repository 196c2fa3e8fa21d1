/* One Gmail private key for one call (specs/gws-cse.md "Stage 2", Decision: a PKCS#11 session
 * object per call): the wrapped_private_key opened with the prefix's KEK, then the key as a
 * session object of the gateway's module for exactly one decrypt or sign, destroyed after it.
 * The private key is in this process only between those steps, in OpenSSL's secure heap, and
 * every copy (the payload, the PKCS#8, the components handed to C_CreateObject) is cleansed. */
#ifndef HF_CSE_PK_SESSION_H
#define HF_CSE_PK_SESSION_H

#include <openssl/evp.h>

#include "gateway/plugins/gws-cse/internal.h"
#include "gateway/plugins/gws-cse/pk-alg.h"
#include "gateway/plugins/gws-cse/pk-payload.h"

/* An opened wrapped private key. */
struct hf_cse_pk_key {
    EVP_PKEY *pkey; /* owned: hf_cse_pk_key_clear */
    CK_KEY_TYPE key_type;
    char perimeter_id[HF_CSE_PK_PERIMETER_MAX + 1]; /* the perimeter it was wrapped for */
};

/* Opens the call's wrapped_private_key with the prefix's KEK (hf_cse_kek_open: the version
 * the blob names, after the state rules). HF_STATUS_OK with *key; otherwise the request is
 * failed: 400 for anything not a blob of this KEK, 404 for a destroyed version, 403 when the KEK
 * may not decrypt, 503 when the module cannot. */
enum hf_status hf_cse_pk_open(struct hf_cse_call *call, struct hf_request *req,
                              struct hf_cse_pk_key *key);
void hf_cse_pk_key_clear(struct hf_cse_pk_key *key);

/* Runs alg with key (RSA: the caller checked) as a session object: C_CreateObject (not a token
 * object, private, sensitive, only the use alg needs), C_DecryptInit + C_Decrypt or C_SignInit
 * + C_Sign of in[0..in_len) under m, C_DestroyObject whatever happened, as the request's key
 * operation (the module audits it). HF_STATUS_OK with *out (OPENSSL_secure_malloc'd: release
 * with OPENSSL_secure_clear_free(*out, *out_len)); otherwise the request is failed (400 for a
 * ciphertext the key refuses: bad padding, a wrong length). */
enum hf_status hf_cse_pk_run(struct hf_cse_call *call, struct hf_request *req,
                             const struct hf_cse_pk_key *key, const struct hf_cse_pk_alg *alg,
                             const struct hf_cse_pk_mech *m, const unsigned char *in, size_t in_len,
                             unsigned char **out, size_t *out_len);

#endif /* HF_CSE_PK_SESSION_H */
