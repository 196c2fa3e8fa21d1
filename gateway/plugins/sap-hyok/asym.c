/* The asymmetric routes (RSA-OAEP, RSASSA-PSS, the public key): stubs until their owner's
 * asym.c replaces this file (internal.h has the contract it is written against). */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/internal.h"

static enum hf_status not_built(struct hf_request *req)
{
    return hf_request_fail(req, HF_STATUS_INTERNAL, "not built");
}

enum hf_status sap_asym_encrypt(struct hf_sap_call *call, struct hf_request *req)
{
    (void)call;
    return not_built(req);
}

enum hf_status sap_asym_decrypt(struct hf_sap_call *call, struct hf_request *req)
{
    (void)call;
    return not_built(req);
}

enum hf_status sap_asym_sign(struct hf_sap_call *call, struct hf_request *req)
{
    (void)call;
    return not_built(req);
}

enum hf_status sap_asym_verify(struct hf_sap_call *call, struct hf_request *req)
{
    (void)call;
    return not_built(req);
}

enum hf_status sap_public_key(struct hf_sap_call *call, struct hf_request *req)
{
    (void)call;
    return not_built(req);
}
