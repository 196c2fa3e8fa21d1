/* Unwrap: POST [/<prefix>]/<keyPath>:unwrap (spec, "Crypto"). The blob names the version that
 * sealed it; everything about a blob that is not this key's (unknown format, short, a version
 * the key never had, any changed byte, other AAD) fails closed with 400, never 403, which
 * would make Cloud EKM disable the key version. */
#include "hf-build.h"

#include "gateway/plugins/gcp-ekm/internal.h"

#include <stdio.h>
#include <stdlib.h>

#include <openssl/crypto.h>

/* The version object the blob names (hf_keys_decrypt_version: the state rules, deactivated and
 * compromised versions still unwrap), its refusals in this API's words. */
static enum hf_status version_find(const struct hf_ekm_call *call, const struct hf_blob *blob,
                                   struct hf_request *req, CK_OBJECT_HANDLE *object)
{
    unsigned long v = (unsigned long)blob->version;

    switch (hf_keys_decrypt_version(&call->key, blob->version, object)) {
    case HF_STATUS_OK:
        return HF_STATUS_OK;
    case HF_STATUS_BAD_CIPHERTEXT:
        return hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT, "wrappedBlob: not a blob of key %s",
                               call->key_path);
    case HF_STATUS_KEY_NOT_FOUND:
        return hf_request_fail(req, HF_STATUS_KEY_NOT_FOUND, "version %lu of key %s is destroyed",
                               v, call->key_path);
    case HF_STATUS_KEY_DISABLED:
        return hf_request_fail(req, HF_STATUS_KEY_DISABLED, "version %lu of key %s may not unwrap",
                               v, call->key_path);
    case HF_STATUS_KEY_USAGE:
        return hf_request_fail(req, HF_STATUS_KEY_USAGE, "key %s may not unwrap", call->key_path);
    default:
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE,
                               "version %lu of key %s cannot be read now", v, call->key_path);
    }
}

static struct json_object *reply_new(const struct hf_ekm_call *call, const unsigned char *pt,
                                     size_t pt_len)
{
    struct json_object *o = json_object_new_object(), *v;
    char duration[32];

    if (o == NULL || (v = hf_json_base64(pt, pt_len)) == NULL ||
        json_object_object_add(o, "plaintext", v) != 0)
        goto fail;
    /* google.protobuf.Duration in JSON: seconds with an "s"; only when the key sets one. */
    if (call->policy->cache_duration_s != 0) {
        snprintf(duration, sizeof(duration), "%llus",
                 (unsigned long long)call->policy->cache_duration_s);
        if (json_object_object_add(o, "allowedCacheDuration", json_object_new_string(duration)))
            goto fail;
    }
    return o;
fail:
    hf_json_put_wiped(o);
    return NULL;
}

enum hf_status hf_ekm_unwrap(struct hf_ekm_call *call, struct hf_request *req)
{
    const struct hf_ekm_request *b = &call->body;
    struct hf_blob blob;
    CK_OBJECT_HANDLE object = CK_INVALID_HANDLE;
    CK_SESSION_HANDLE s;
    unsigned char *pt = NULL;
    size_t pt_len = 0;
    enum hf_status st;
    CK_RV rv;

    if (!hf_blob_parse(b->input.data, b->input.len, &blob))
        return hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                               "wrappedBlob: not a blob this EKM wrote (format or length)");
    if ((st = version_find(call, &blob, req, &object)) != HF_STATUS_OK) return st;
    pt_len = blob.sealed_len - HF_BLOB_TAG_LEN;
    if ((pt = malloc(pt_len + 1)) == NULL)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    if ((st = hf_ekm_deadline_check(call, req)) != HF_STATUS_OK) goto done;
    if ((rv = hf_p11_begin(req, "unwrap", &s)) != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "opening a session", &hf_ekm_ckr);
        goto done;
    }
    rv = hf_blob_open(hf_p11_functions(), s, object, HF_EKM_API, call->key.uuid, &blob, b->aad.data,
                      b->aad.len, pt);
    if (rv == CKR_ENCRYPTED_DATA_INVALID || rv == CKR_ENCRYPTED_DATA_LEN_RANGE) {
        st = hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                             "wrappedBlob: the blob or additionalAuthenticatedData is not what "
                             "key %s wrapped",
                             call->key_path);
        goto done;
    }
    if (rv != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "unwrap", &hf_ekm_ckr);
        goto done;
    }
    st = hf_reply_json_or_fail(req, 200, reply_new(call, pt, pt_len));
done:
    OPENSSL_clear_free(pt, pt_len + 1);
    return st;
}
