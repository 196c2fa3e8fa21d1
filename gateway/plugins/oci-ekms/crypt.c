/* Encrypt and Decrypt (spec, "Request rules" and "Crypto"): AES-256-GCM through the module with a
 * random 96-bit IV; the ciphertext is the gateway's self-contained blob with api "oci-ekms", so
 * it names the version that sealed it and opens after a rotation. iv, tag and keyVersionId are
 * also answered as fields; given back at decrypt they must agree with the blob, else 400. */
#include "hf-build.h"

#include "gateway/plugins/oci-ekms/internal.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

static bool add(struct json_object *o, const char *name, struct json_object *v)
{
    if (v != NULL && json_object_object_add(o, name, v) == 0) return true;
    json_object_put(v);
    return false;
}

static struct json_object *encrypt_reply(const struct hf_oci_call *call, const char *version_uuid,
                                         const unsigned char *blob, size_t len)
{
    const struct hf_oci_bytes *aad = &call->body.aad;
    struct json_object *o = json_object_new_object();

    if (o != NULL && add(o, "ciphertext", hf_json_base64(blob, len)) &&
        add(o, "iv", hf_json_base64(blob + HF_BLOB_HEADER_LEN - HF_BLOB_IV_LEN, HF_BLOB_IV_LEN)) &&
        add(o, "tag", hf_json_base64(blob + len - HF_BLOB_TAG_LEN, HF_BLOB_TAG_LEN)) &&
        add(o, "mode", json_object_new_string("AES_GCM")) &&
        add(o, "keyId", json_object_new_string(call->key.uuid)) &&
        add(o, "keyVersionId", json_object_new_string(version_uuid)) &&
        (!aad->present || add(o, "aad", hf_json_base64(aad->data, aad->len))))
        return o;
    json_object_put(o);
    return NULL;
}

enum hf_status hf_oci_encrypt(struct hf_oci_call *call, struct hf_request *req)
{
    const struct hf_oci_request *b = &call->body;
    struct hf_key_version v = {.version = call->key.version, .object = call->key.current};
    unsigned char iv[HF_BLOB_IV_LEN], *blob = NULL;
    const size_t blob_len = HF_BLOB_OVERHEAD + b->plaintext.len;
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    memcpy(v.uuid, call->key.version_uuid, sizeof(v.uuid));
    if (b->key_version_id != NULL &&
        (st = hf_oci_version_find(call, req, b->key_version_id, &v)) != HF_STATUS_OK)
        return st;
    hf_request_set_audit_field(req, "key_version_id", v.uuid);
    if ((st = hf_oci_key_may(call, req, HF_KEY_OP_ENCRYPT, v.state)) != HF_STATUS_OK) return st;
    /* Spec's Decision: Holdfast always draws the IV (SP 800-38D 8.2.2); a caller's is noted. */
    if (b->iv.present) hf_request_set_audit_field(req, "iv_ignored", "true");
    if ((blob = malloc(blob_len)) == NULL)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    if (!hf_random_public(iv, sizeof(iv))) {
        st = hf_request_fail(req, HF_STATUS_UNAVAILABLE, "no random bytes for the IV");
        goto done;
    }
    if ((rv = hf_p11_begin(req, NULL, &s)) != CKR_OK) {
        st = hf_oci_fail_ckr(req, rv, "opening a session");
        goto done;
    }
    rv = hf_blob_seal(hf_p11_functions(), s, v.object, v.version, HF_OCI_API, call->key.uuid, iv,
                      b->aad.data, b->aad.len, b->plaintext.data, b->plaintext.len, blob);
    if (rv != CKR_OK) {
        st = hf_oci_fail_ckr(req, rv, "encrypt");
        goto done;
    }
    st = hf_reply_json_or_fail(req, 200, encrypt_reply(call, v.uuid, blob, blob_len));
done:
    free(blob);
    return st;
}

/* The optional fields against what the blob carries: keyVersionId (404 unknown or destroyed,
 * 400 another version's), iv and tag (400), compared in constant time. */
static enum hf_status fields_agree(struct hf_oci_call *call, struct hf_request *req,
                                   const struct hf_blob *blob)
{
    const struct hf_oci_request *b = &call->body;
    const unsigned char *tag = blob->sealed + blob->sealed_len - HF_BLOB_TAG_LEN;
    struct hf_key_version v;
    enum hf_status st;

    if (b->key_version_id != NULL) {
        if ((st = hf_oci_version_find(call, req, b->key_version_id, &v)) != HF_STATUS_OK) return st;
        if (v.version != blob->version)
            return hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                                   "keyVersionId: not the version the ciphertext names");
    }
    if (b->iv.present &&
        (b->iv.len != HF_BLOB_IV_LEN || CRYPTO_memcmp(b->iv.data, blob->iv, HF_BLOB_IV_LEN) != 0))
        return hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                               "iv: not the IV the ciphertext carries");
    if (b->tag.present &&
        (b->tag.len != HF_BLOB_TAG_LEN || CRYPTO_memcmp(b->tag.data, tag, HF_BLOB_TAG_LEN) != 0))
        return hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                               "tag: not the tag the ciphertext carries");
    return HF_STATUS_OK;
}

/* The object of the version the blob names, its refusals in this API's words. */
static enum hf_status version_object(struct hf_oci_call *call, struct hf_request *req,
                                     const struct hf_blob *blob, CK_OBJECT_HANDLE *object)
{
    unsigned long n = (unsigned long)blob->version;

    CK_OBJECT_HANDLE same;
    CK_ULONG state;
    char uuid[37];

    switch (hf_keys_decrypt_version(&call->key, blob->version, object)) {
    case HF_STATUS_OK:
        /* The record names the version the ciphertext did (spec, "Authorization" 4). */
        if (call->body.key_version_id == NULL &&
            hf_keys_version_info(&call->key, blob->version, &same, &state, uuid) == HF_STATUS_OK)
            hf_request_set_audit_field(req, "key_version_id", uuid);
        return HF_STATUS_OK;
    case HF_STATUS_BAD_CIPHERTEXT:
        return hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                               "ciphertext: not a ciphertext of key %s", call->key.uuid);
    case HF_STATUS_KEY_NOT_FOUND:
        return hf_request_fail(req, HF_STATUS_KEY_NOT_FOUND, "version %lu of key %s is destroyed",
                               n, call->key.uuid);
    case HF_STATUS_KEY_DISABLED:
    case HF_STATUS_KEY_USAGE:
        return hf_request_fail(req, HF_STATUS_KEY_DISABLED,
                               "key disabled: version %lu of key %s may not decrypt", n,
                               call->key.uuid);
    default:
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE,
                               "version %lu of key %s cannot be read now", n, call->key.uuid);
    }
}

static enum hf_status decrypt_reply(struct hf_request *req, const unsigned char *pt, size_t len)
{
    struct json_object *o = json_object_new_object();

    if (o == NULL || !add(o, "plaintext", hf_json_base64(pt, len))) {
        hf_json_put_wiped(o);
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    }
    hf_reply_json(req, 200, o);
    return HF_STATUS_OK;
}

enum hf_status hf_oci_decrypt(struct hf_oci_call *call, struct hf_request *req)
{
    const struct hf_oci_request *b = &call->body;
    CK_OBJECT_HANDLE object = CK_INVALID_HANDLE;
    struct hf_blob blob;
    CK_SESSION_HANDLE s;
    unsigned char *pt = NULL;
    size_t pt_len = 0;
    enum hf_status st;
    CK_RV rv;

    if (!hf_blob_parse(b->ciphertext.data, b->ciphertext.len, &blob))
        return hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                               "ciphertext: not one Holdfast wrote (format or length)");
    if ((st = fields_agree(call, req, &blob)) != HF_STATUS_OK ||
        (st = version_object(call, req, &blob, &object)) != HF_STATUS_OK)
        return st;
    pt_len = blob.sealed_len - HF_BLOB_TAG_LEN;
    if ((pt = malloc(pt_len + 1)) == NULL)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    if ((rv = hf_p11_begin(req, NULL, &s)) != CKR_OK) {
        st = hf_oci_fail_ckr(req, rv, "opening a session");
        goto done;
    }
    rv = hf_blob_open(hf_p11_functions(), s, object, HF_OCI_API, call->key.uuid, &blob, b->aad.data,
                      b->aad.len, pt);
    if (rv == CKR_ENCRYPTED_DATA_INVALID || rv == CKR_ENCRYPTED_DATA_LEN_RANGE)
        st = hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                             "ciphertext: the ciphertext or aad is not what key %s sealed",
                             call->key.uuid);
    else if (rv != CKR_OK)
        st = hf_oci_fail_ckr(req, rv, "decrypt");
    else
        st = decrypt_reply(req, pt, pt_len);
done:
    OPENSSL_clear_free(pt, pt_len + 1);
    return st;
}
