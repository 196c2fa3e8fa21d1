/* GetKeyMetadata: POST <prefix>/kms/xks/v1/keys/{keyId}/metadata (specs/aws-xks.md).
 * No key operation: the answer comes from the key's cached snapshot, so it shows a block,
 * an unblock, a rotation or a state change within a second. */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/internal.h"

static const struct {
    CK_ULONG bit;
    const char *name;
} usages[] = {
    {HF_USAGE_ENCRYPT, "ENCRYPT"}, {HF_USAGE_DECRYPT, "DECRYPT"}, {HF_USAGE_WRAP, "WRAP"},
    {HF_USAGE_UNWRAP, "UNWRAP"},   {HF_USAGE_SIGN, "SIGN"},       {HF_USAGE_VERIFY, "VERIFY"},
};

enum hf_status hf_xks_handle_metadata(void *state, struct hf_request *req)
{
    struct hf_xks_call call;
    struct hf_key_ref key;
    struct json_object *out = NULL, *usage = NULL;
    enum hf_status st;
    bool enabled;

    if ((st = hf_xks_call_begin(state, req, HF_XKS_OP_METADATA, &call)) != HF_STATUS_OK) return st;
    if ((st = hf_xks_key_find(&call, req, &key)) != HF_STATUS_OK) goto done;
    /* XKS v1 knows AES-256 only: any other key has no keySpec to report. */
    if (key.key_type != CKK_AES || key.bits != 256) {
        st = hf_request_fail(req, HF_STATUS_UNSUPPORTED,
                             "key %s is not AES-256; XKS v1 serves AES-256 keys only", call.key_id);
        goto done;
    }
    /* keyStatus: what KMS needs to know before it sends encrypt or decrypt. A blocked link is
     * the HYOK kill switch, so it reads DISABLED exactly like a deactivated key. */
    enabled = key.state == HF_STATE_ACTIVE && !key.blocked;
    if ((out = json_object_new_object()) == NULL || (usage = json_object_new_array()) == NULL)
        goto oom;
    for (size_t i = 0; i < sizeof(usages) / sizeof(usages[0]); i++)
        if ((key.usage & usages[i].bit) &&
            json_object_array_add(usage, json_object_new_string(usages[i].name)) != 0)
            goto oom;
    if (json_object_object_add(out, "keySpec", json_object_new_string("AES_256")) != 0) goto oom;
    if (json_object_object_add(out, "keyUsage", usage) != 0) goto oom;
    usage = NULL;
    if (json_object_object_add(out, "keyStatus",
                               json_object_new_string(enabled ? "ENABLED" : "DISABLED")) != 0)
        goto oom;
    hf_reply_json(req, 200, out);
    out = NULL;
    st = HF_STATUS_OK;
    goto done;
oom:
    st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
done:
    json_object_put(usage);
    json_object_put(out);
    hf_xks_call_end(&call);
    return st;
}
