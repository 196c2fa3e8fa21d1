/* The checks of a Gmail call around its wrapped private key (pk-ops.h). */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/pk-ops.h"

#include <string.h>

#include <openssl/crypto.h>

#define SPKI_HASH_ALGORITHM "SHA-256" /* the only one the spec names */

enum hf_status hf_cse_pk_alg_get(const struct hf_cse_call *call, struct hf_request *req,
                                 enum hf_cse_pk_use use, const struct hf_cse_pk_alg **alg)
{
    const char *name = call->body.algorithm.s;

    if ((*alg = hf_cse_pk_alg_find(name, use)) != NULL) return HF_STATUS_OK;
    return hf_request_fail(req, HF_STATUS_BAD_REQUEST, "algorithm: %.64s is not served by %s",
                           name ? name : "", call->info->name);
}

enum hf_status hf_cse_pk_spki_algorithm_check(const struct hf_cse_call *call,
                                              struct hf_request *req)
{
    const char *a = call->body.spki_hash_algorithm.s;

    if (a != NULL && strcmp(a, SPKI_HASH_ALGORITHM) == 0) return HF_STATUS_OK;
    return hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                           "spki_hash_algorithm: only " SPKI_HASH_ALGORITHM " is served");
}

/* One spki_hash (base64, any alphabet, padded or not) against the key's. */
static bool spki_hash_is(const char *b64, const unsigned char want[HF_CSE_PK_SPKI_HASH_LEN])
{
    unsigned char got[HF_CSE_SMALL_MAX];
    size_t len = strlen(b64), n = 0;

    return len <= HF_CSE_SMALL_MAX && hf_base64_decode_any(b64, len, got, &n) &&
           n == HF_CSE_PK_SPKI_HASH_LEN && CRYPTO_memcmp(got, want, n) == 0;
}

static enum hf_status spki_check(const struct hf_cse_call *call, struct hf_request *req,
                                 const struct hf_cse_pk_key *key)
{
    const struct json_object *az = call->authz ? hf_jwt_claims(call->authz) : NULL;
    const char *token = hf_cse_claim(az, "spki_hash"), *token_alg;
    const char *body = call->body.spki_hash.s;
    unsigned char have[HF_CSE_PK_SPKI_HASH_LEN];

    if (token == NULL && body == NULL) return HF_STATUS_OK;
    token_alg = hf_cse_claim(az, "spki_hash_algorithm");
    if (token != NULL && token_alg != NULL && strcmp(token_alg, SPKI_HASH_ALGORITHM) != 0)
        return hf_request_fail(
            req, HF_STATUS_DENIED,
            "authorization: spki_hash_algorithm %.32s is not " SPKI_HASH_ALGORITHM, token_alg);
    if (!hf_cse_pk_spki_hash(key->pkey, have))
        return hf_request_fail(req, HF_STATUS_INTERNAL, "cannot hash the key's SPKI");
    if (body != NULL && !spki_hash_is(body, have))
        return hf_request_fail(req, HF_STATUS_DENIED, "spki_hash: not the wrapped key's");
    if (token != NULL && !spki_hash_is(token, have))
        return hf_request_fail(req, HF_STATUS_DENIED,
                               "authorization: spki_hash is not the wrapped key's");
    return HF_STATUS_OK;
}

enum hf_status hf_cse_pk_key_check(struct hf_cse_call *call, struct hf_request *req,
                                   const struct hf_cse_pk_key *key, const struct hf_cse_pk_alg *alg,
                                   bool perimeter)
{
    enum hf_status st;

    if (key->key_type != CKK_RSA)
        return hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                               "algorithm: %s needs an RSA key; the wrapped key is EC", alg->name);
    if (perimeter) {
        /* Audited as the perimeter the key was wrapped for, as unwrap does the blob's. */
        hf_request_set_audit_field(req, "perimeter_id", key->perimeter_id);
        if ((st = hf_cse_perimeter_check(call, req, key->perimeter_id)) != HF_STATUS_OK) return st;
    }
    return spki_check(call, req, key);
}
