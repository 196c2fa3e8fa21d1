/* The asymmetric routes (specs/sap-hyok.md "Crypto"), what they share (asym-ops.h) and
 * get-public-key (PEM SubjectPublicKeyInfo); RSAES-OAEP is asym-oaep.c's, RSASSA-PSS
 * asym-pss.c's. Written against internal.h's contract: the pipeline has found the key and the
 * version. */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/asym-ops.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/pem.h>

enum hf_status hf_sap_asym_alg_get(const struct hf_sap_call *call, struct hf_request *req, bool pss,
                                   struct hf_sap_asym_alg *out)
{
    enum hf_status st = hf_sap_member_str(call, req, "algorithm", true, &out->name);

    if (st != HF_STATUS_OK) return st;
    if (pss ? hf_sap_pss_alg_parse(out->name, &out->hash)
            : hf_sap_oaep_alg_parse(out->name, &out->hash))
        return HF_STATUS_OK;
    return hf_request_fail(req, HF_STATUS_BAD_REQUEST, "algorithm: not one of %s",
                           pss ? "RSASSA_PSS_SHA_256|384|512" : "RSAES_OAEP_SHA_1|256|384|512");
}

enum hf_status hf_sap_asym_message_type_get(const struct hf_sap_call *call, struct hf_request *req,
                                            enum hf_sap_message_type *out)
{
    const char *name = NULL;
    enum hf_status st = hf_sap_member_str(call, req, "message_type", true, &name);

    if (st != HF_STATUS_OK) return st;
    if (hf_sap_message_type_parse(name, out)) return HF_STATUS_OK;
    return hf_request_fail(req, HF_STATUS_BAD_REQUEST, "message_type: not one of RAW|DIGEST");
}

/* An RSA key that may do op now with the call's version (403 otherwise). */
enum hf_status hf_sap_asym_key_check(const struct hf_sap_call *call, struct hf_request *req,
                                     enum hf_key_op op)
{
    enum hf_status st = hf_sap_key_is_rsa(call, req);

    if (st == HF_STATUS_OK) st = hf_sap_key_may(call, req, op);
    if (st == HF_STATUS_OK && (call->key.bits + 7) / 8 > HF_SAP_RSA_MAX)
        st = hf_request_fail(req, HF_STATUS_UNSUPPORTED, "key %s: RSA-%lu is over RSA-4096",
                             call->external_key_id, (unsigned long)call->key.bits);
    return st;
}

size_t hf_sap_asym_modulus_len(const struct hf_sap_call *call)
{
    return (call->key.bits + 7) / 8;
}

enum hf_status hf_sap_asym_session(struct hf_request *req, CK_SESSION_HANDLE *s)
{
    CK_RV rv = hf_p11_begin(req, NULL, s);

    return rv == CKR_OK ? HF_STATUS_OK
                        : hf_request_fail_ckr(req, rv, "opening a session", &hf_sap_ckr);
}

/* Adds a string member to o; false if out of memory. */
static bool add_string(struct json_object *o, const char *name, const char *value)
{
    struct json_object *v = json_object_new_string(value);

    if (v != NULL && json_object_object_add(o, name, v) == 0) return true;
    json_object_put(v);
    return false;
}

/* {name: base64(data), "algorithm": alg, "key_version_id"}: encrypt's and sign's answer. */
enum hf_status hf_sap_asym_reply(const struct hf_sap_call *call, struct hf_request *req,
                                 const char *name, const unsigned char *data, size_t len,
                                 const struct hf_sap_asym_alg *alg)
{
    struct json_object *o = json_object_new_object();

    if (o != NULL &&
        (!hf_sap_reply_add_b64(o, name, data, len) || !add_string(o, "algorithm", alg->name) ||
         !hf_sap_reply_add_version(call, o))) {
        json_object_put(o);
        o = NULL;
    }
    return hf_reply_json_or_fail(req, 200, o);
}

/* The version's public key as PEM SubjectPublicKeyInfo ("-----BEGIN PUBLIC KEY-----"), a new
 * string (free()); NULL if it cannot be read. */
static char *public_pem(CK_OBJECT_HANDLE key)
{
    EVP_PKEY *pkey = hf_rsa_public_pkey(key);
    BIO *bio = pkey ? BIO_new(BIO_s_mem()) : NULL;
    char *pem = NULL, *data;
    long len;

    if (bio != NULL && PEM_write_bio_PUBKEY(bio, pkey) == 1 &&
        (len = BIO_get_mem_data(bio, &data)) > 0 && (pem = malloc((size_t)len + 1)) != NULL) {
        memcpy(pem, data, (size_t)len);
        pem[len] = '\0';
    }
    BIO_free(bio);
    EVP_PKEY_free(pkey);
    return pem;
}

/* Describing the key, not using it: refused only when the link is blocked (a deactivated key's
 * public key still verifies its old signatures). */
enum hf_status sap_public_key(struct hf_sap_call *call, struct hf_request *req)
{
    struct json_object *o = NULL;
    enum hf_status st;
    char *pem;

    if ((st = hf_sap_asym_key_check(call, req, HF_KEY_OP_METADATA))) return st;
    if ((pem = public_pem(call->version.pub)) == NULL)
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE,
                               "the public key of key %s cannot be read", call->external_key_id);
    if ((o = json_object_new_object()) != NULL &&
        (!add_string(o, "public_key", pem) || !hf_sap_reply_add_version(call, o))) {
        json_object_put(o);
        o = NULL;
    }
    free(pem);
    return hf_reply_json_or_fail(req, 200, o);
}
