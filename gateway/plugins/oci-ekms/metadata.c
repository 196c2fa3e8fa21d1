/* GetVaultMetadata, GetKeyMetadata, GetKeyVersionMetadata (spec, "Request rules"): only an
 * active key or version answers 200, always as "ACTIVE" (spec, "Authorization and state" 3). */
#include "hf-build.h"

#include "gateway/plugins/oci-ekms/internal.h"

static bool add_string(struct json_object *o, const char *name, const char *value)
{
    struct json_object *v = json_object_new_string(value);

    if (v != NULL && json_object_object_add(o, name, v) == 0) return true;
    json_object_put(v);
    return false;
}

static bool add_ops(struct json_object *o, const char *name)
{
    struct json_object *a = json_object_new_array();

    if (a != NULL && json_object_array_add(a, json_object_new_string("ENCRYPT")) == 0 &&
        json_object_array_add(a, json_object_new_string("DECRYPT")) == 0 &&
        json_object_object_add(o, name, a) == 0)
        return true;
    json_object_put(a);
    return false;
}

/* Hands o to the request, or fails it when building o ran out of memory. */
static enum hf_status reply(struct hf_request *req, struct json_object *o, bool ok)
{
    if (o == NULL || !ok) {
        json_object_put(o);
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    }
    hf_reply_json(req, 200, o);
    return HF_STATUS_OK;
}

enum hf_status hf_oci_vault_metadata(struct hf_oci_call *call, struct hf_request *req)
{
    struct json_object *o = json_object_new_object();

    (void)call;
    return reply(req, o,
                 o != NULL && add_string(o, "state", "ACTIVE") &&
                     add_string(o, "vendor", "Holdfast"));
}

static struct json_object *shape_new(void)
{
    struct json_object *s = json_object_new_object();

    if (s != NULL && add_string(s, "algorithm", "AES") &&
        json_object_object_add(s, "length", json_object_new_int(256)) == 0)
        return s;
    json_object_put(s);
    return NULL;
}

enum hf_status hf_oci_key_metadata(struct hf_oci_call *call, struct hf_request *req)
{
    struct json_object *o, *shape;
    enum hf_status st;
    bool ok;

    if ((st = hf_oci_key_may(call, req, HF_KEY_OP_METADATA, 0)) != HF_STATUS_OK) return st;
    hf_request_set_audit_field(req, "key_version_id", call->key.version_uuid);
    o = json_object_new_object();
    ok = o != NULL && add_string(o, "keyId", call->key.uuid) &&
         add_string(o, "currentKeyVersionId", call->key.version_uuid);
    if (ok && ((shape = shape_new()) == NULL || json_object_object_add(o, "keyShape", shape))) {
        json_object_put(shape);
        ok = false;
    }
    ok = ok && add_string(o, "state", "ACTIVE") && add_ops(o, "keyOps");
    return reply(req, o, ok);
}

enum hf_status hf_oci_version_metadata(struct hf_oci_call *call, struct hf_request *req)
{
    struct hf_key_version v;
    struct json_object *o;
    enum hf_status st;

    if ((st = hf_oci_version_find(call, req, call->t.version_id, &v)) != HF_STATUS_OK) return st;
    if ((st = hf_oci_key_may(call, req, HF_KEY_OP_METADATA, v.state)) != HF_STATUS_OK) return st;
    o = json_object_new_object();
    return reply(req, o,
                 o != NULL && add_string(o, "keyId", call->key.uuid) &&
                     add_string(o, "keyVersionId", v.uuid) && add_string(o, "state", "ACTIVE") &&
                     add_ops(o, "keyVersionOps"));
}
