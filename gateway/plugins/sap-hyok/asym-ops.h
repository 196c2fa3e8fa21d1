/* What the asymmetric routes' files share (asym.c, asym-oaep.c, asym-pss.c): reading the
 * algorithm and message_type members, the RSA key checks, the session and the answers. Each
 * fails the request itself (400 for a member, 403 for the key) and returns that status. */
#ifndef HF_SAP_ASYM_OPS_H
#define HF_SAP_ASYM_OPS_H

#include "gateway/plugins/sap-hyok/asym.h"
#include "gateway/plugins/sap-hyok/internal.h"

/* The algorithm member, its spelling kept for the reply. */
struct hf_sap_asym_alg {
    const char *name; /* borrowed from the call's body */
    struct hf_sap_hash hash;
};

/* "algorithm": an RSASSA_PSS_SHA_* name when pss, else an RSAES_OAEP_SHA_* one. */
enum hf_status hf_sap_asym_alg_get(const struct hf_sap_call *call, struct hf_request *req, bool pss,
                                   struct hf_sap_asym_alg *out);
/* "message_type": RAW or DIGEST. */
enum hf_status hf_sap_asym_message_type_get(const struct hf_sap_call *call, struct hf_request *req,
                                            enum hf_sap_message_type *out);
/* An RSA key of at most RSA-4096 that may do op now with the call's version. */
enum hf_status hf_sap_asym_key_check(const struct hf_sap_call *call, struct hf_request *req,
                                     enum hf_key_op op);
/* Bytes of the key's modulus (k of RFC 8017). */
size_t hf_sap_asym_modulus_len(const struct hf_sap_call *call);
/* hf_p11_begin, failing the request when it fails. */
enum hf_status hf_sap_asym_session(struct hf_request *req, CK_SESSION_HANDLE *s);
/* Answers {name: base64(data), "algorithm", "key_version_id"}: encrypt's and sign's answer. */
enum hf_status hf_sap_asym_reply(const struct hf_sap_call *call, struct hf_request *req,
                                 const char *name, const unsigned char *data, size_t len,
                                 const struct hf_sap_asym_alg *alg);

#endif /* HF_SAP_ASYM_OPS_H */
