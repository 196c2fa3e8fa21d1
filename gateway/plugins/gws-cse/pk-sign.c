/* privatekeysign (specs/gws-cse.md "Stage 2"): the wrapped private key opens under the KEK and
 * signs the digest Gmail's client made of an S/MIME message's SignedAttributes. The digest is
 * given, never the message: PKCS#1 v1.5 signs its DigestInfo with CKM_RSA_PKCS, PSS signs it
 * with CKM_RSA_PKCS_PSS (MGF1 with the same hash; salt rsa_pss_salt_length, default the hash's
 * length). */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/pk-ops.h"

#include <openssl/crypto.h>

/* RFC 8017 9.1.1 step 3: the encoded message must hold the hash, the salt and two bytes. */
static enum hf_status salt_get(const struct hf_cse_call *call, struct hf_request *req,
                               const struct hf_cse_pk_key *key, const struct hf_cse_pk_alg *alg,
                               CK_ULONG *salt)
{
    const struct hf_cse_request *b = &call->body;
    size_t em_len = ((size_t)EVP_PKEY_get_bits(key->pkey) - 1 + 7) / 8;
    int64_t want = b->rsa_pss_salt_length_present ? b->rsa_pss_salt_length : (int64_t)alg->hash_len;

    if (want < 0 || em_len < alg->hash_len + 2 || (uint64_t)want > em_len - alg->hash_len - 2)
        return hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                               "rsa_pss_salt_length: %lld does not fit this key with %s",
                               (long long)want, alg->name);
    *salt = (CK_ULONG)want;
    return HF_STATUS_OK;
}

/* What the mechanism signs: the DigestInfo (PKCS#1 v1.5) or the digest itself (PSS). */
static enum hf_status input_get(const struct hf_cse_call *call, struct hf_request *req,
                                const struct hf_cse_pk_alg *alg, unsigned char **in, size_t *in_len)
{
    const struct hf_cse_bytes *d = &call->body.digest;

    *in = NULL;
    if (alg->scheme == HF_CSE_PK_PSS) {
        *in_len = d->len;
        return HF_STATUS_OK;
    }
    if ((*in = hf_cse_pk_digest_info(alg, d->data, d->len, in_len)) == NULL)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    return HF_STATUS_OK;
}

enum hf_status hf_cse_privatekeysign(struct hf_cse_call *call, struct hf_request *req)
{
    const struct hf_cse_bytes *d = &call->body.digest;
    const struct hf_cse_pk_alg *alg;
    struct hf_cse_pk_key key;
    struct hf_cse_pk_mech m;
    unsigned char *sig = NULL, *info = NULL;
    size_t sig_len = 0, info_len = 0;
    CK_ULONG salt = 0;
    enum hf_status st;

    if ((st = hf_cse_pk_alg_get(call, req, HF_CSE_PK_SIGN, &alg)) != HF_STATUS_OK) return st;
    if (d->len != alg->hash_len)
        return hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                               "digest: %zu bytes, %s signs a %zu-byte digest", d->len, alg->name,
                               alg->hash_len);
    if ((st = hf_cse_pk_open(call, req, &key)) != HF_STATUS_OK) return st;
    if ((st = hf_cse_pk_key_check(call, req, &key, alg, true)) != HF_STATUS_OK) goto done;
    if (alg->scheme == HF_CSE_PK_PSS &&
        (st = salt_get(call, req, &key, alg, &salt)) != HF_STATUS_OK)
        goto done;
    if ((st = input_get(call, req, alg, &info, &info_len)) != HF_STATUS_OK) goto done;
    hf_cse_pk_mechanism(alg, NULL, 0, salt, &m);
    st = hf_cse_pk_run(call, req, &key, alg, &m, info ? info : d->data, info_len, &sig, &sig_len);
    if (st == HF_STATUS_OK) st = hf_cse_reply_bytes(req, "signature", sig, sig_len, false);
done:
    if (sig != NULL) OPENSSL_secure_clear_free(sig, sig_len);
    OPENSSL_free(info);
    hf_cse_pk_key_clear(&key);
    return st;
}
