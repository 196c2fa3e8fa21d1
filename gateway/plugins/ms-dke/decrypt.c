/* Decrypt: POST [/<prefix>]/{keyName}/{keyId}/decrypt (spec, "Decrypt"): RSA-OAEP with SHA-256
 * and MGF1-SHA-256 under the private key of the version keyId names; the key never leaves the
 * key store. */
#include "hf-build.h"

#include "gateway/plugins/ms-dke/internal.h"

#include <stdio.h>
#include <stdlib.h>

#include <openssl/crypto.h>

#include "gateway/plugins/ms-dke/authz.h"

/* The version keyId names, and whether it may decrypt now (deactivated and compromised
 * versions still do: old documents stay readable). */
static enum hf_status version_find(struct hf_request *req, const struct hf_key_ref *key,
                                   const struct hf_dke_target *t, struct hf_key_version *v)
{
    enum hf_status st = hf_keys_version_by_uuid(key, t->key_id, v);

    if (st == HF_STATUS_KEY_NOT_FOUND)
        return hf_request_fail(req, st, "DKE key %s has no version %s", t->name, t->key_id);
    if (st != HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE, "version %s of %s cannot be read now",
                               t->key_id, t->name);
    return hf_dke_key_may(req, key, HF_KEY_OP_DECRYPT, v->state, "decrypt");
}

/* A bad OAEP ciphertext names the field; every other CK_RV keeps its status. */
static enum hf_status fail_ckr(struct hf_request *req, CK_RV rv, const char *what)
{
    if (rv == CKR_ENCRYPTED_DATA_INVALID || rv == CKR_ENCRYPTED_DATA_LEN_RANGE)
        return hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                               "value: not a ciphertext of this key version (OAEP)");
    return hf_request_fail_ckr(req, rv, what, NULL);
}

static enum hf_status oaep_decrypt(struct hf_request *req, const struct hf_key_version *v,
                                   const struct hf_dke_decrypt *body)
{
    unsigned char *pt = malloc(body->len);
    size_t pt_len = body->len;
    struct json_object *reply = NULL, *value;
    enum hf_status st;
    CK_SESSION_HANDLE s;
    CK_RV rv;

    if (pt == NULL) return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    if ((rv = hf_p11_begin(req, "decrypt", &s)) != CKR_OK) {
        st = fail_ckr(req, rv, "opening a session");
        goto done;
    }
    rv = hf_rsa_oaep_decrypt(hf_p11_functions(), s, v->object, CKM_SHA256, body->value, body->len,
                             pt, &pt_len);
    if (rv != CKR_OK) {
        st = fail_ckr(req, rv, "decrypt");
        goto done;
    }
    /* The bytes exactly as decrypted: Office's are a 44-byte structure, not a bare AES key. */
    if ((reply = json_object_new_object()) == NULL ||
        (value = hf_json_base64(pt, pt_len)) == NULL ||
        json_object_object_add(reply, "value", value) != 0) {
        hf_json_put_wiped(reply);
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
        goto done;
    }
    hf_reply_json(req, 200, reply);
    st = HF_STATUS_OK;
done:
    OPENSSL_clear_free(pt, body->len);
    return st;
}

/* After the token: the body (400), the key under this service (404), the allowlist (403), the
 * key and its link (404, 503, 403), the version (404, 403), the ciphertext's length (400). */
static enum hf_status decrypt_authorized(struct hf_dke_state *st, struct hf_request *req,
                                         const struct hf_dke_target *t, const struct hf_jwt *tok,
                                         struct hf_dke_decrypt *body)
{
    const struct hf_dke_key *policy;
    const unsigned char *raw;
    size_t raw_len = 0;
    struct hf_key_ref key;
    struct hf_key_version v;
    char why[256] = "";
    enum hf_status s;

    if ((s = hf_request_rate_check(req, st->rate, "the DKE service")) != HF_STATUS_OK) return s;
    raw = hf_request_body(req, &raw_len);
    if ((s = hf_dke_decrypt_parse(raw, raw_len, body, why, sizeof(why))) != HF_STATUS_OK)
        return hf_request_fail(req, s, "%s", why);
    if ((policy = hf_dke_config_key(&st->cfg, t->name)) == NULL)
        return hf_request_fail(req, HF_STATUS_KEY_NOT_FOUND, "no DKE key %s", t->name);
    if (!hf_dke_key_allows(policy, hf_jwt_claims(tok)))
        return hf_request_fail(
            req, HF_STATUS_DENIED, "the caller may not decrypt with key %s (%s)", t->name,
            policy->mode == HF_DKE_AUTHZ_EMAIL ? "email or upn not allowed" : "no allowed group");
    if ((s = hf_dke_key_find(req, t->name, &key)) != HF_STATUS_OK) return s;
    if ((s = version_find(req, &key, t, &v)) != HF_STATUS_OK) return s;
    if (body->len != key.bits / 8)
        return hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                               "value: %zu bytes, the modulus of key %s is %lu", body->len, t->name,
                               (unsigned long)(key.bits / 8));
    return oaep_decrypt(req, &v, body);
}

enum hf_status hf_dke_decrypt(struct hf_dke_state *st, struct hf_request *req,
                              const struct hf_dke_target *t)
{
    struct hf_jwt *tok = NULL;
    struct hf_dke_decrypt body = {0};
    enum hf_status s = hf_dke_authenticate(st, req, t, &tok);

    if (s == HF_STATUS_OK) s = decrypt_authorized(st, req, t, tok, &body);
    hf_dke_decrypt_clear(&body);
    if (tok != NULL) hf_jwt_release(tok);
    return s;
}
