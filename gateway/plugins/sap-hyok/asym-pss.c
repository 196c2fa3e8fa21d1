/* asymmetric-sign and asymmetric-verify (specs/sap-hyok.md "Crypto"): RSASSA-PSS with MGF1 on
 * the same hash and a salt as long as the hash; a RAW message (at most 4096 bytes) is hashed by
 * the module (CKM_SHA*_RSA_PKCS_PSS), a DIGEST one must be the hash's length and is signed as
 * given (CKM_RSA_PKCS_PSS). */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/asym-ops.h"

#include <stdlib.h>

/* The members sign and verify share, checked in the spec's order: algorithm, message_type,
 * message (its size by type), then the key. */
struct pss_input {
    struct hf_sap_asym_alg alg;
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

    if ((st = hf_sap_asym_alg_get(call, req, true, &in->alg)) ||
        (st = hf_sap_asym_message_type_get(call, req, &in->type)) ||
        (st = hf_sap_member_b64(call, req, "message", true, HF_SAP_MESSAGE_MAX, &in->msg,
                                &in->msg_len)))
        return st;
    if (!hf_sap_pss_message_is_valid(&in->alg.hash, in->type, in->msg_len, why, sizeof(why)))
        return hf_request_fail(req, HF_STATUS_BAD_REQUEST, "%s", why);
    if (!hf_sap_pss_mechanism(&in->alg.hash, in->type, &in->m))
        return hf_request_fail(req, HF_STATUS_INTERNAL, "no PSS mechanism for %s", in->alg.name);
    return hf_sap_asym_key_check(call, req, op);
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

    if ((st = pss_input_get(call, req, HF_KEY_OP_SIGN, &in)) || (st = hf_sap_asym_session(req, &s)))
        goto done;
    if ((rv = p11->C_SignInit(s, &in.m.mech, call->version.object)) == CKR_OK)
        rv = p11->C_Sign(s, in.msg, in.msg_len, sig, &sig_len);
    if (rv != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "sign", &hf_sap_ckr);
        goto done;
    }
    st = hf_sap_asym_reply(call, req, "signature", sig, sig_len, &in.alg);
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
        (st = hf_sap_asym_session(req, &s)))
        goto done;
    if ((rv = p11->C_VerifyInit(s, &in.m.mech, call->version.pub)) == CKR_OK)
        rv = p11->C_Verify(s, in.msg, in.msg_len, sig, sig_len);
    /* The spec's Decision: a signature that does not verify, of any length, is an answer
     * (valid:false), not an error; the module's record of the operation says why. */
    if (rv != CKR_OK && rv != CKR_SIGNATURE_INVALID && rv != CKR_SIGNATURE_LEN_RANGE) {
        st = hf_request_fail_ckr(req, rv, "verify", &hf_sap_ckr);
        goto done;
    }
    st = hf_reply_json_or_fail(req, 200, valid_reply(rv == CKR_OK));
done:
    free(sig);
    free(in.msg);
    return st;
}
