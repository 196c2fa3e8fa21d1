/* privatekeydecrypt and privilegedprivatekeydecrypt (specs/gws-cse.md "Stage 2"): the wrapped
 * private key opens under the KEK, then decrypts the encrypted_data_encryption_key Gmail's
 * client made with its public key. privatekeydecrypt also holds the key's perimeter_id to the
 * perimeter rules (check 8), as unwrap does the wrapped_key's; the privileged form is an
 * admin's (check 9, checks.c) and is held to the key's SPKI instead, as privilegedunwrap is to
 * the request's resource_name. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/pk-ops.h"

#include <openssl/crypto.h>

/* RSAES needs exactly one block of the modulus' size (RFC 8017 7.1.2 and 7.2.2, step 1): said
 * here as the field's fault rather than left to the module's length error. */
static enum hf_status edek_check(const struct hf_cse_call *call, struct hf_request *req,
                                 const struct hf_cse_pk_key *key)
{
    size_t k = (size_t)EVP_PKEY_get_size(key->pkey);

    if (call->body.encrypted_data_encryption_key.len == k) return HF_STATUS_OK;
    return hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                           "encrypted_data_encryption_key: %zu bytes, the key's modulus is %zu",
                           call->body.encrypted_data_encryption_key.len, k);
}

static enum hf_status decrypt_run(struct hf_cse_call *call, struct hf_request *req, bool privileged)
{
    const struct hf_cse_request *b = &call->body;
    const struct hf_cse_pk_alg *alg;
    struct hf_cse_pk_key key;
    struct hf_cse_pk_mech m;
    unsigned char *dek = NULL;
    size_t dek_len = 0;
    enum hf_status st;

    if ((st = hf_cse_pk_alg_get(call, req, HF_CSE_PK_DECRYPT, &alg)) != HF_STATUS_OK) return st;
    if (privileged && (st = hf_cse_pk_spki_algorithm_check(call, req)) != HF_STATUS_OK) return st;
    if ((st = hf_cse_pk_open(call, req, &key)) != HF_STATUS_OK) return st;
    if ((st = hf_cse_pk_key_check(call, req, &key, alg, !privileged)) != HF_STATUS_OK) goto done;
    if ((st = edek_check(call, req, &key)) != HF_STATUS_OK) goto done;
    hf_cse_pk_mechanism(alg, b->rsa_oaep_label.data, b->rsa_oaep_label.len, 0, &m);
    st = hf_cse_pk_run(call, req, &key, alg, &m, b->encrypted_data_encryption_key.data,
                       b->encrypted_data_encryption_key.len, &dek, &dek_len);
    if (st == HF_STATUS_OK) st = hf_cse_reply_bytes(req, "data_encryption_key", dek, dek_len, true);
done:
    if (dek != NULL) OPENSSL_secure_clear_free(dek, dek_len);
    hf_cse_pk_key_clear(&key);
    return st;
}

enum hf_status hf_cse_privatekeydecrypt(struct hf_cse_call *call, struct hf_request *req)
{
    return decrypt_run(call, req, false);
}

enum hf_status hf_cse_privilegedprivatekeydecrypt(struct hf_cse_call *call, struct hf_request *req)
{
    return decrypt_run(call, req, true);
}
