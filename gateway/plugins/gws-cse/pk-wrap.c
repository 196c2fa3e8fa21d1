/* wrapprivatekey (specs/gws-cse.md "Stage 2"): an administrator (check 9) hands over a user's
 * S/MIME private key once; it comes back sealed under the prefix's KEK with the perimeter it is
 * for (pk-payload.h), for Gmail to keep and send with each privatekeydecrypt or
 * privatekeysign. The key is read with OpenSSL first, so only a key those calls can use is
 * sealed. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/pk-ops.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* The private key as the payload to seal (secret: the caller cleanses it). */
static enum hf_status payload_make(const struct hf_cse_call *call, struct hf_request *req,
                                   unsigned char **pt, size_t *pt_len)
{
    const struct hf_cse_bytes *k = &call->body.private_key;
    const char *pid = call->perimeter_id;
    size_t pid_len = strlen(pid);
    EVP_PKEY *pkey = NULL;
    CK_KEY_TYPE type;
    char why[160] = "";
    enum hf_status st = hf_cse_pk_key_parse(k->data, k->len, &pkey, &type, why, sizeof(why));
    bool consistent = st == HF_STATUS_OK && hf_cse_pk_key_is_consistent(pkey);

    EVP_PKEY_free(pkey);
    if (st != HF_STATUS_OK) return hf_request_fail(req, st, "%s", why);
    if (!consistent)
        return hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                               "private_key: the key's parts do not agree");
    if ((*pt_len = hf_cse_pk_payload_len(k->len, pid_len)) == 0)
        return hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                               "private_key: too large to wrap within the spec's 8 KB");
    if ((*pt = malloc(*pt_len)) == NULL)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    if (!hf_cse_pk_payload_write(k->data, k->len, pid, pid_len, *pt))
        return hf_request_fail(req, HF_STATUS_INTERNAL, "cannot lay out the payload");
    return HF_STATUS_OK;
}

enum hf_status hf_cse_wrapprivatekey(struct hf_cse_call *call, struct hf_request *req)
{
    unsigned char *pt = NULL, *blob = NULL;
    size_t pt_len = 0, blob_len = 0;
    enum hf_status st = payload_make(call, req, &pt, &pt_len);

    if (st == HF_STATUS_OK)
        st = hf_cse_kek_seal(call, req, HF_CSE_API_PK, pt, pt_len, &blob, &blob_len);
    if (st == HF_STATUS_OK)
        st = hf_cse_reply_bytes(req, "wrapped_private_key", blob, blob_len, false);
    if (pt != NULL) OPENSSL_clear_free(pt, pt_len);
    free(blob);
    return st;
}
