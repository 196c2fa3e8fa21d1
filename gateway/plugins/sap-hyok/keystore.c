/* Keystore get-metadata: POST <prefix>/keystores/{keystore_id}/get-metadata (spec's table). A
 * configured keystore is always ACTIVE: a keystore SAP must stop using is removed from the
 * configuration (its URL then answers 404), and its keys are stopped by blocking their links. */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/internal.h"

enum hf_status hf_sap_keystore_metadata(struct hf_sap_call *call, struct hf_request *req)
{
    struct json_object *o = json_object_new_object();

    if (o == NULL ||
        json_object_object_add(o, "keystore_id", json_object_new_string(call->ks->id)) != 0 ||
        json_object_object_add(o, "sap_tenant_id", json_object_new_string(call->ks->tenant)) != 0 ||
        json_object_object_add(o, "state", json_object_new_string("ACTIVE")) != 0) {
        json_object_put(o);
        o = NULL;
    }
    return hf_reply_json_or_fail(req, 200, o);
}
