/* The asymmetric routes (specs/sap-hyok.md "Crypto"): asymmetric-encrypt and -decrypt
 * (RSAES-OAEP, CKM_RSA_PKCS_OAEP with MGF1 on the same hash and an empty label),
 * asymmetric-sign and -verify (RSASSA-PSS, salt as long as the hash; RAW messages hashed by the
 * module, DIGEST ones signed as given) and get-public-key (PEM SubjectPublicKeyInfo). Written
 * against internal.h's contract: the pipeline has found the key and the version. */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/asym.h"
#include "gateway/plugins/sap-hyok/internal.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>

/* The algorithm member, its spelling kept for the reply. */
struct alg {
    const char *name;
    struct hf_sap_hash hash;
};

static enum hf_status alg_get(const struct hf_sap_call *call, struct hf_request *req, bool pss,
                              struct alg *out)
{
    enum hf_status st = hf_sap_member_str(call, req, "algorithm", true, &out->name);

    if (st != HF_STATUS_OK) return st;
    if (pss ? hf_sap_pss_alg_parse(out->name, &out->hash)
            : hf_sap_oaep_alg_parse(out->name, &out->hash))
        return HF_STATUS_OK;
    return hf_request_fail(req, HF_STATUS_BAD_REQUEST, "algorithm: not one of %s",
                           pss ? "RSASSA_PSS_SHA_256|384|512" : "RSAES_OAEP_SHA_1|256|384|512");
}

static enum hf_status message_type_get(const struct hf_sap_call *call, struct hf_request *req,
                                       enum hf_sap_message_type *out)
{
    const char *name = NULL;
    enum hf_status st = hf_sap_member_str(call, req, "message_type", true, &name);

    if (st != HF_STATUS_OK) return st;
    if (hf_sap_message_type_parse(name, out)) return HF_STATUS_OK;
    return hf_request_fail(req, HF_STATUS_BAD_REQUEST, "message_type: not one of RAW|DIGEST");
}

/* An RSA key that may do op now with the call's version (403 otherwise). */
static enum hf_status rsa_checks(const struct hf_sap_call *call, struct hf_request *req,
                                 enum hf_key_op op)
{
    enum hf_status st = hf_sap_key_is_rsa(call, req);

    if (st == HF_STATUS_OK) st = hf_sap_key_may(call, req, op);
    if (st == HF_STATUS_OK && (call->key.bits + 7) / 8 > HF_SAP_RSA_MAX)
        st = hf_request_fail(req, HF_STATUS_UNSUPPORTED, "key %s: RSA-%lu is over RSA-4096",
                             call->external_key_id, (unsigned long)call->key.bits);
    return st;
}

static size_t modulus_len(const struct hf_sap_call *call)
{
    return (call->key.bits + 7) / 8;
}

static enum hf_status session_get(struct hf_request *req, CK_SESSION_HANDLE *s)
{
    CK_RV rv = hf_p11_begin(req, NULL, s);

    return rv == CKR_OK ? HF_STATUS_OK : hf_sap_fail_ckr(req, rv, "opening a session");
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
static enum hf_status reply_with_version(const struct hf_sap_call *call, struct hf_request *req,
                                         const char *name, const unsigned char *data, size_t len,
                                         const struct alg *alg)
{
    struct json_object *o = json_object_new_object();

    if (o != NULL &&
        (!hf_sap_reply_add_b64(o, name, data, len) || !add_string(o, "algorithm", alg->name) ||
         !hf_sap_reply_add_version(call, o))) {
        json_object_put(o);
        o = NULL;
    }
    return hf_sap_reply(req, o);
}

enum hf_status sap_asym_encrypt(struct hf_sap_call *call, struct hf_request *req)
{
    unsigned char *pt = NULL, ct[HF_SAP_RSA_MAX];
    size_t pt_len = 0, ct_len = sizeof(ct), max;
    struct alg alg;
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    if ((st = alg_get(call, req, false, &alg)) ||
        (st = hf_sap_member_b64(call, req, "plaintext", true, HF_SAP_RSA_MAX, &pt, &pt_len)) ||
        (st = rsa_checks(call, req, HF_KEY_OP_ENCRYPT)))
        goto done;
    if (pt_len > (max = hf_sap_oaep_plaintext_max(&alg.hash, modulus_len(call)))) {
        st = hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                             "plaintext: %zu bytes, %s under RSA-%lu takes at most %zu", pt_len,
                             alg.name, (unsigned long)call->key.bits, max);
        goto done;
    }
    if ((st = session_get(req, &s))) goto done;
    rv = hf_rsa_oaep_encrypt(hf_p11_functions(), s, call->version.pub, alg.hash.mech, pt, pt_len,
                             ct, &ct_len);
    if (rv != CKR_OK) {
        st = hf_sap_fail_ckr(req, rv, "encrypt");
        goto done;
    }
    st = reply_with_version(call, req, "ciphertext", ct, ct_len, &alg);
done:
    OPENSSL_clear_free(pt, pt_len);
    return st;
}

enum hf_status sap_asym_decrypt(struct hf_sap_call *call, struct hf_request *req)
{
    unsigned char *ct = NULL, pt[HF_SAP_RSA_MAX];
    size_t ct_len = 0, pt_len = sizeof(pt);
    struct json_object *o = NULL;
    struct alg alg;
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    if ((st = alg_get(call, req, false, &alg)) ||
        (st = hf_sap_member_b64(call, req, "ciphertext", true, HF_SAP_RSA_MAX, &ct, &ct_len)) ||
        (st = rsa_checks(call, req, HF_KEY_OP_DECRYPT)))
        goto done;
    /* RFC 8017 7.1.2 step 1: exactly one block of the modulus' size; said as the field's fault
     * rather than left to the module's length error. */
    if (ct_len != modulus_len(call)) {
        st = hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                             "ciphertext: %zu bytes, the key's modulus is %zu", ct_len,
                             modulus_len(call));
        goto done;
    }
    if ((st = session_get(req, &s))) goto done;
    rv = hf_rsa_oaep_decrypt(hf_p11_functions(), s, call->version.object, alg.hash.mech, ct, ct_len,
                             pt, &pt_len);
    if (rv != CKR_OK) {
        /* One message for every OAEP failure: which step failed is Manger's oracle. */
        st = hf_sap_fail_ckr(req, rv,
                             "decrypt (ciphertext, algorithm and key_version_id must be "
                             "those of the encryption)");
        goto done;
    }
    if ((o = json_object_new_object()) != NULL &&
        !hf_sap_reply_add_b64(o, "plaintext", pt, pt_len)) {
        hf_json_put_wiped(o);
        o = NULL;
    }
    st = hf_sap_reply(req, o);
done:
    OPENSSL_cleanse(pt, sizeof(pt));
    free(ct);
    return st;
}

/* The members sign and verify share, checked in the spec's order: algorithm, message_type,
 * message (its size by type), then the key. */
struct pss_input {
    struct alg alg;
    enum hf_sap_message_type type;
    unsigned char *msg; /* malloc'd */
    size_t msg_len;
    struct hf_sap_pss_mech m;
};

static enum hf_status pss_input_get(const struct hf_sap_call *call, struct hf_request *req,
                                    enum hf_key_op op, struct pss_input *in)
{
    char why[256] = "";
    enum hf_status st;

    if ((st = alg_get(call, req, true, &in->alg)) ||
        (st = message_type_get(call, req, &in->type)) ||
        (st = hf_sap_member_b64(call, req, "message", true, HF_SAP_MESSAGE_MAX, &in->msg,
                                &in->msg_len)))
        return st;
    if (!hf_sap_pss_message_is_valid(&in->alg.hash, in->type, in->msg_len, why, sizeof(why)))
        return hf_request_fail(req, HF_STATUS_BAD_REQUEST, "%s", why);
    if (!hf_sap_pss_mechanism(&in->alg.hash, in->type, &in->m))
        return hf_request_fail(req, HF_STATUS_INTERNAL, "no PSS mechanism for %s", in->alg.name);
    return rsa_checks(call, req, op);
}

enum hf_status sap_asym_sign(struct hf_sap_call *call, struct hf_request *req)
{
    struct pss_input in = {0};
    unsigned char sig[HF_SAP_RSA_MAX];
    CK_ULONG sig_len = sizeof(sig);
    CK_FUNCTION_LIST_PTR p11 = hf_p11_functions();
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    if ((st = pss_input_get(call, req, HF_KEY_OP_SIGN, &in)) || (st = session_get(req, &s)))
        goto done;
    if ((rv = p11->C_SignInit(s, &in.m.mech, call->version.object)) == CKR_OK)
        rv = p11->C_Sign(s, in.msg, in.msg_len, sig, &sig_len);
    if (rv != CKR_OK) {
        st = hf_sap_fail_ckr(req, rv, "sign");
        goto done;
    }
    st = reply_with_version(call, req, "signature", sig, sig_len, &in.alg);
done:
    free(in.msg);
    return st;
}

static struct json_object *valid_reply(bool valid)
{
    struct json_object *o = json_object_new_object(), *v = json_object_new_boolean(valid);

    if (o != NULL && v != NULL && json_object_object_add(o, "valid", v) == 0) return o;
    json_object_put(v);
    json_object_put(o);
    return NULL;
}

enum hf_status sap_asym_verify(struct hf_sap_call *call, struct hf_request *req)
{
    struct pss_input in = {0};
    unsigned char *sig = NULL;
    size_t sig_len = 0;
    CK_FUNCTION_LIST_PTR p11 = hf_p11_functions();
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    if ((st = pss_input_get(call, req, HF_KEY_OP_VERIFY, &in)) ||
        (st = hf_sap_member_b64(call, req, "signature", true, HF_SAP_RSA_MAX, &sig, &sig_len)) ||
        (st = session_get(req, &s)))
        goto done;
    if ((rv = p11->C_VerifyInit(s, &in.m.mech, call->version.pub)) == CKR_OK)
        rv = p11->C_Verify(s, in.msg, in.msg_len, sig, sig_len);
    /* The spec's Decision: a signature that does not verify, of any length, is an answer
     * (valid:false), not an error; the module's record of the operation says why. */
    if (rv != CKR_OK && rv != CKR_SIGNATURE_INVALID && rv != CKR_SIGNATURE_LEN_RANGE) {
        st = hf_sap_fail_ckr(req, rv, "verify");
        goto done;
    }
    st = hf_sap_reply(req, valid_reply(rv == CKR_OK));
done:
    free(sig);
    free(in.msg);
    return st;
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

    if ((st = rsa_checks(call, req, HF_KEY_OP_METADATA))) return st;
    if ((pem = public_pem(call->version.pub)) == NULL)
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE,
                               "the public key of key %s cannot be read", call->external_key_id);
    if ((o = json_object_new_object()) != NULL &&
        (!add_string(o, "public_key", pem) || !hf_sap_reply_add_version(call, o))) {
        json_object_put(o);
        o = NULL;
    }
    free(pem);
    return hf_sap_reply(req, o);
}
