/* The prefix's KEK through PKCS#11: plugin.h's shared blob (hf_blob_seal, hf_blob_open) with
 * api "gws-cse" (or "gws-cse-pk") and an empty caller aad, so a CSE blob opens neither as
 * another API's nor under another key or version. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

#include <stdio.h>
#include <stdlib.h>

#include <openssl/crypto.h>

/* A session for the op's one key operation, once the deadline allows it. */
static enum hf_status session_begin(struct hf_cse_call *call, struct hf_request *req,
                                    CK_SESSION_HANDLE *s)
{
    enum hf_status st =
        hf_request_deadline_check(req, call->px->deadline_ms, HF_STATUS_UNAVAILABLE);
    CK_RV rv;

    if (st != HF_STATUS_OK) return st;
    if ((rv = hf_p11_begin(req, call->info->name, s)) != CKR_OK)
        return hf_request_fail_ckr(req, rv, "opening a session", &hf_cse_ckr);
    return HF_STATUS_OK;
}

enum hf_status hf_cse_kek_seal(struct hf_cse_call *call, struct hf_request *req, const char *api,
                               const unsigned char *pt, size_t len, unsigned char **blob,
                               size_t *blob_len)
{
    unsigned char iv[HF_BLOB_IV_LEN], *out = NULL;
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    *blob = NULL;
    *blob_len = 0;
    if (len > HF_CSE_BODY_MAX || (out = malloc(HF_BLOB_OVERHEAD + len)) == NULL)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    /* SP 800-38D 8.2.2: a random 96-bit IV per encryption. */
    if (!hf_random_public(iv, sizeof(iv))) {
        st = hf_request_fail(req, HF_STATUS_UNAVAILABLE, "no random bytes for the IV");
        goto done;
    }
    if ((st = session_begin(call, req, &s)) != HF_STATUS_OK) goto done;
    rv = hf_blob_seal(hf_p11_functions(), s, call->kek.current, call->kek.version, api,
                      call->kek.uuid, iv, NULL, 0, pt, len, out);
    if (rv != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "sealing under the KEK", &hf_cse_ckr);
        goto done;
    }
    *blob = out;
    *blob_len = HF_BLOB_OVERHEAD + len;
    out = NULL;
done:
    free(out);
    return st;
}

/* What hf_keys_decrypt_version's refusal means for a CSE blob. */
static const char *version_refusal(enum hf_status st)
{
    switch (st) {
    case HF_STATUS_BAD_CIPHERTEXT:
        return "the blob names a version this KEK never had";
    case HF_STATUS_KEY_NOT_FOUND:
        return "the blob's KEK version is destroyed";
    case HF_STATUS_KEY_DISABLED:
        return "key disabled: the blob's KEK version may not decrypt";
    case HF_STATUS_KEY_USAGE:
        return "key disabled: the KEK may not decrypt";
    default:
        return "the blob's KEK version cannot be read now";
    }
}

enum hf_status hf_cse_kek_open(struct hf_cse_call *call, struct hf_request *req, const char *api,
                               const unsigned char *blob, size_t blob_len, unsigned char **pt,
                               size_t *pt_len)
{
    CK_OBJECT_HANDLE object = CK_INVALID_HANDLE;
    CK_SESSION_HANDLE s;
    struct hf_blob b;
    unsigned char *out = NULL;
    size_t n = 0;
    enum hf_status st;
    CK_RV rv;

    *pt = NULL;
    *pt_len = 0;
    if (!hf_blob_parse(blob, blob_len, &b))
        return hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT, "not a blob of this KACLS");
    if ((st = hf_keys_decrypt_version(&call->kek, b.version, &object)) != HF_STATUS_OK) {
        if (st == HF_STATUS_INTERNAL) st = HF_STATUS_UNAVAILABLE;
        return hf_request_fail(req, st, "%s (version %lu)", version_refusal(st),
                               (unsigned long)b.version);
    }
    n = b.sealed_len - HF_BLOB_TAG_LEN;
    if ((out = malloc(n + 1)) == NULL)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    if ((st = session_begin(call, req, &s)) != HF_STATUS_OK) goto done;
    rv = hf_blob_open(hf_p11_functions(), s, object, api, call->kek.uuid, &b, NULL, 0, out);
    if (rv == CKR_ENCRYPTED_DATA_INVALID || rv == CKR_ENCRYPTED_DATA_LEN_RANGE) {
        st = hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                             "the blob does not open under this KACLS's KEK");
        goto done;
    }
    if (rv != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "opening under the KEK", &hf_cse_ckr);
        goto done;
    }
    *pt = out;
    *pt_len = n;
    out = NULL;
done:
    if (out != NULL) OPENSSL_clear_free(out, n + 1);
    return st;
}
