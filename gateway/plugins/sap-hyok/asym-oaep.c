/* asymmetric-encrypt and asymmetric-decrypt (specs/sap-hyok.md "Crypto"): RSAES-OAEP,
 * CKM_RSA_PKCS_OAEP with MGF1 on the same hash and an empty label (plugin.h's hf_rsa_oaep_*),
 * plaintext at most k - 2 hLen - 2 bytes. */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/asym-ops.h"

#include <stdlib.h>

#include <openssl/crypto.h>

enum hf_status sap_asym_encrypt(struct hf_sap_call *call, struct hf_request *req)
{
    unsigned char *pt = NULL, ct[HF_SAP_RSA_MAX];
    size_t pt_len = 0, ct_len = sizeof(ct), max;
    struct hf_sap_asym_alg alg;
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    if ((st = hf_sap_asym_alg_get(call, req, false, &alg)) ||
        (st = hf_sap_member_b64(call, req, "plaintext", true, HF_SAP_RSA_MAX, &pt, &pt_len)) ||
        (st = hf_sap_asym_key_check(call, req, HF_KEY_OP_ENCRYPT)))
        goto done;
    if (pt_len > (max = hf_sap_oaep_plaintext_max(&alg.hash, hf_sap_asym_modulus_len(call)))) {
        st = hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                             "plaintext: %zu bytes, %s under RSA-%lu takes at most %zu", pt_len,
                             alg.name, (unsigned long)call->key.bits, max);
        goto done;
    }
    if ((st = hf_sap_asym_session(req, &s))) goto done;
    rv = hf_rsa_oaep_encrypt(hf_p11_functions(), s, call->version.pub, alg.hash.mech, pt, pt_len,
                             ct, &ct_len);
    if (rv != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "encrypt", &hf_sap_ckr);
        goto done;
    }
    st = hf_sap_asym_reply(call, req, "ciphertext", ct, ct_len, &alg);
done:
    OPENSSL_clear_free(pt, pt_len);
    return st;
}

enum hf_status sap_asym_decrypt(struct hf_sap_call *call, struct hf_request *req)
{
    unsigned char *ct = NULL, pt[HF_SAP_RSA_MAX];
    size_t ct_len = 0, pt_len = sizeof(pt);
    struct json_object *o = NULL;
    struct hf_sap_asym_alg alg;
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    if ((st = hf_sap_asym_alg_get(call, req, false, &alg)) ||
        (st = hf_sap_member_b64(call, req, "ciphertext", true, HF_SAP_RSA_MAX, &ct, &ct_len)) ||
        (st = hf_sap_asym_key_check(call, req, HF_KEY_OP_DECRYPT)))
        goto done;
    /* RFC 8017 7.1.2 step 1: exactly one block of the modulus' size; said as the field's fault
     * rather than left to the module's length error. */
    if (ct_len != hf_sap_asym_modulus_len(call)) {
        st = hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                             "ciphertext: %zu bytes, the key's modulus is %zu", ct_len,
                             hf_sap_asym_modulus_len(call));
        goto done;
    }
    if ((st = hf_sap_asym_session(req, &s))) goto done;
    rv = hf_rsa_oaep_decrypt(hf_p11_functions(), s, call->version.object, alg.hash.mech, ct, ct_len,
                             pt, &pt_len);
    if (rv != CKR_OK) {
        /* One message for every OAEP failure: which step failed is Manger's oracle. */
        st = hf_request_fail_ckr(req, rv,
                                 "decrypt (ciphertext, algorithm and key_version_id must be "
                                 "those of the encryption)",
                                 &hf_sap_ckr);
        goto done;
    }
    if ((o = json_object_new_object()) != NULL &&
        !hf_sap_reply_add_b64(o, "plaintext", pt, pt_len)) {
        hf_json_put_wiped(o);
        o = NULL;
    }
    st = hf_reply_json_or_fail(req, 200, o);
done:
    OPENSSL_cleanse(pt, sizeof(pt));
    free(ct);
    return st;
}
