/* Key get-metadata: POST .../keys/{external_key_id}/get-metadata (spec's table). A blocked link
 * or a state that forbids use still answers 200, with state "Disabled" and no key_ops, so SAP
 * Data Custodian can show the key's state (spec, "Authorization and state"). */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/internal.h"

#include <stdio.h>

/* AES_256, RSA_3072, RSA_4096: the spec's specs; any other key is served as Disabled. */
static bool key_spec(const struct hf_key_ref *k, char *out, size_t outlen)
{
    const char *type = k->key_type == CKK_AES ? "AES" : k->key_type == CKK_RSA ? "RSA" : "EC";

    snprintf(out, outlen, "%s_%lu", type, (unsigned long)k->bits);
    return (k->key_type == CKK_AES && k->bits == 256) ||
           (k->key_type == CKK_RSA && (k->bits == 3072 || k->bits == 4096));
}

static bool key_is_enabled(const struct hf_key_ref *k)
{
    return !k->blocked && k->state == HF_STATE_ACTIVE &&
           hf_key_may(k, HF_KEY_OP_METADATA, 0) == HF_STATUS_OK;
}

/* The operations its usage mask allows, as SAP names them. */
static struct json_object *key_ops_new(const struct hf_key_ref *k, bool enabled)
{
    static const struct {
        CK_ULONG usage;
        const char *name;
        bool rsa_only;
    } ops[] = {
        {HF_USAGE_ENCRYPT, "ENCRYPT", false},
        {HF_USAGE_DECRYPT, "DECRYPT", false},
        {HF_USAGE_SIGN, "SIGN", true},
        {HF_USAGE_VERIFY, "VERIFY", true},
    };
    struct json_object *a = json_object_new_array();

    for (size_t i = 0; a != NULL && enabled && i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (!(k->usage & ops[i].usage) || (ops[i].rsa_only && k->key_type != CKK_RSA)) continue;
        if (json_object_array_add(a, json_object_new_string(ops[i].name)) != 0) {
            json_object_put(a);
            return NULL;
        }
    }
    return a;
}

enum hf_status hf_sap_key_metadata(struct hf_sap_call *call, struct hf_request *req)
{
    const struct hf_key_ref *k = &call->key;
    char spec[32];
    bool enabled = key_spec(k, spec, sizeof(spec)) && key_is_enabled(k);
    struct json_object *o = json_object_new_object(), *ops = key_ops_new(k, enabled);

    if (o == NULL || ops == NULL ||
        json_object_object_add(o, "key_id", json_object_new_string(call->external_key_id)) ||
        !hf_sap_reply_add_version(call, o) ||
        json_object_object_add(o, "state",
                               json_object_new_string(enabled ? "Enabled" : "Disabled")) ||
        json_object_object_add(o, "key_ops", ops)) {
        json_object_put(ops);
        json_object_put(o);
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    }
    if (json_object_object_add(o, "key_spec", json_object_new_string(spec)) != 0) {
        json_object_put(o);
        o = NULL;
    }
    return hf_reply_json_or_fail(req, 200, o);
}
