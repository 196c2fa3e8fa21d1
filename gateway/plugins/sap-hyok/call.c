/* The steps every SAP HYOK route shares, in the order of the spec's "Authentication" and
 * "Authorization and state" sections (internal.h, hf_sap_call_begin), and the helpers the
 * operations share. */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The route's keystore: a path naming none is 404 before authentication, since the pins that
 * would authenticate the caller are the keystore's. */
static enum hf_status keystore_find(const struct hf_sap_state *st, struct hf_request *req,
                                    struct hf_sap_call *call)
{
    const char *prefix = hf_request_param(req, "prefix");
    const char *want = st->cfg.prefix[0] == '/' ? st->cfg.prefix + 1 : st->cfg.prefix;
    const char *id = hf_request_param(req, "keystore_id");

    /* {prefix*} took the earliest "keystores" segment: a path that hid a second one behind the
     * configured prefix names no keystore of ours. */
    if (prefix == NULL || strcmp(prefix, want) != 0 || id == NULL ||
        (call->ks = hf_sap_config_keystore(&st->cfg, id)) == NULL)
        return hf_request_fail(req, HF_STATUS_PATH_NOT_FOUND, "no such keystore");
    return HF_STATUS_OK;
}

/* Step 2 of "Authentication": the leaf's SHA-256 against the keystore's one or two pins. The
 * handshake already checked the chain (step 1). */
static enum hf_status pin_check(struct hf_sap_call *call, struct hf_request *req)
{
    unsigned char digest[32];
    static const char hex[] = "0123456789abcdef";

    if (!hf_request_client_cert_sha256(req, digest))
        return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED, "no client certificate");
    for (size_t i = 0; i < 32; i++) {
        call->cert_sha256[2 * i] = hex[digest[i] >> 4];
        call->cert_sha256[2 * i + 1] = hex[digest[i] & 15];
    }
    call->cert_sha256[64] = '\0';
    hf_request_set_audit(req, call->cert_sha256, NULL, NULL);
    if (!hf_sap_keystore_has_pin(call->ks, digest))
        return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED,
                               "the client certificate is not pinned for this keystore");
    hf_request_set_authenticated(req);
    return HF_STATUS_OK;
}

/* The spec's audit list: sap_request_id, tenant, group, user type, certificate fingerprint. */
static void audit_fields_set(const struct hf_sap_call *call, struct hf_request *req,
                             const char *key_ref)
{
    const struct hf_sap_metadata *m = &call->meta;

    hf_request_set_audit_field(req, "keystore_id", call->ks->id);
    hf_request_set_audit_field(req, "sap_tenant_id", m->tenant);
    hf_request_set_audit_field(req, "sap_group_id", m->group);
    hf_request_set_audit_field(req, "sap_user_type", m->user_type);
    hf_request_set_audit_field(req, "sap_request_id", m->request_id);
    hf_request_set_audit_field(req, "cert_sha256", call->cert_sha256);
    hf_request_set_audit(req, call->cert_sha256, m->request_id, key_ref);
}

static enum hf_status tenant_check(const struct hf_sap_call *call, struct hf_request *req)
{
    if (strcmp(call->meta.tenant, call->ks->tenant) != 0)
        return hf_request_fail(req, HF_STATUS_DENIED,
                               "request_metadata.sap_tenant_id: not this keystore's tenant");
    if (!hf_sap_keystore_allows_group(call->ks, call->meta.group))
        return hf_request_fail(req, HF_STATUS_DENIED,
                               "request_metadata.sap_group_id: %s this keystore's groups",
                               call->meta.group ? "not one of" : "absent, required by");
    return HF_STATUS_OK;
}

/* The key linked in this keystore as "<keystore_id>/<external_key_id>", whose UUID is
 * external_key_id (the spec's Decision). A destroyed key is not found. */
static enum hf_status key_find(struct hf_sap_call *call, struct hf_request *req)
{
    const char *ext = hf_request_param(req, "external_key_id");
    enum hf_status st;

    if (ext == NULL || !hf_uuid_text_is_valid(ext, strlen(ext)))
        return hf_request_fail(req, HF_STATUS_KEY_NOT_FOUND, "no such key in this keystore");
    for (size_t i = 0; i <= HF_SAP_UUID_LEN; i++)
        call->external_key_id[i] = (char)tolower((unsigned char)ext[i]);
    snprintf(call->link_id, sizeof(call->link_id), "%s/%s", call->ks->id, call->external_key_id);
    hf_request_set_link(req, HF_SAP_LINK_TYPE, call->link_id);
    st = hf_keys_by_link(HF_SAP_LINK_TYPE, call->link_id, &call->key);
    if (st == HF_STATUS_KEY_NOT_FOUND ||
        (st == HF_STATUS_OK && strcasecmp(call->key.uuid, call->external_key_id) != 0))
        return hf_request_fail(req, HF_STATUS_KEY_NOT_FOUND, "no key %s in this keystore",
                               call->external_key_id);
    if (st != HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE, "the key store cannot be read now");
    return HF_STATUS_OK;
}

static void version_current(struct hf_sap_call *call)
{
    const struct hf_key_ref *k = &call->key;

    call->version.version = k->version;
    memcpy(call->version.uuid, k->version_uuid, sizeof(call->version.uuid));
    call->version.state = k->state;
    call->version.object = k->current;
    call->version.pub = k->current_pub;
}

static enum hf_status version_find(struct hf_sap_call *call, struct hf_request *req,
                                   enum hf_sap_version_rule rule)
{
    const char *id = NULL;
    enum hf_status st;

    if (rule != HF_SAP_VERSION_CURRENT &&
        (st = hf_sap_member_str(call, req, "key_version_id", rule == HF_SAP_VERSION_REQUIRED,
                                &id)) != HF_STATUS_OK)
        return st;
    if (id == NULL) {
        version_current(call);
        return HF_STATUS_OK;
    }
    call->version_named = true;
    st = hf_keys_version_by_uuid(&call->key, id, &call->version);
    if (st == HF_STATUS_KEY_NOT_FOUND)
        return hf_request_fail(req, st, "key_version_id: no such version of key %s",
                               call->external_key_id);
    if (st != HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE, "the key store cannot be read now");
    return HF_STATUS_OK;
}

enum hf_status hf_sap_call_begin(struct hf_sap_state *st, struct hf_request *req,
                                 enum hf_sap_version_rule rule, struct hf_sap_call *call)
{
    const unsigned char *body;
    size_t len = 0;
    char why[256] = "";
    enum hf_status s;

    memset(call, 0, sizeof(*call));
    if ((s = keystore_find(st, req, call)) != HF_STATUS_OK || (s = pin_check(call, req))) return s;
    body = hf_request_body(req, &len);
    if ((s = hf_sap_body_parse(body, len, &call->body, &call->meta, why, sizeof(why))))
        return hf_request_fail(req, s, "%s", why);
    audit_fields_set(call, req,
                     rule == HF_SAP_VERSION_NONE ? NULL : hf_request_param(req, "external_key_id"));
    if ((s = tenant_check(call, req)) != HF_STATUS_OK) return s;
    if (rule == HF_SAP_VERSION_NONE) return HF_STATUS_OK;
    if ((s = key_find(call, req)) != HF_STATUS_OK) return s;
    return version_find(call, req, rule);
}

void hf_sap_call_end(struct hf_sap_call *call)
{
    if (call == NULL) return;
    hf_json_put_wiped(call->body);
    call->body = NULL;
    memset(&call->meta, 0, sizeof(call->meta));
}

/* ---- helpers for the operations -------------------------------------------------------------- */

enum hf_status hf_sap_key_may(const struct hf_sap_call *call, struct hf_request *req,
                              enum hf_key_op op)
{
    enum hf_status st;

    if (call->key.blocked)
        return hf_request_fail(req, HF_STATUS_KEY_DISABLED, "the SAP link of key %s is blocked",
                               call->external_key_id);
    st = hf_key_may(&call->key, op, call->version_named ? call->version.state : 0);
    if (st == HF_STATUS_OK) return st;
    return hf_request_fail(req, st, "key %s may not do this: %s", call->external_key_id,
                           st == HF_STATUS_KEY_USAGE ? "its usage mask forbids it"
                                                     : "its state forbids it");
}

enum hf_status hf_sap_key_is_rsa(const struct hf_sap_call *call, struct hf_request *req)
{
    if (call->key.key_type == CKK_RSA) return HF_STATUS_OK;
    return hf_request_fail(req, HF_STATUS_KEY_USAGE, "key %s is not an RSA key",
                           call->external_key_id);
}

enum hf_status hf_sap_key_is_aes(const struct hf_sap_call *call, struct hf_request *req)
{
    if (call->key.key_type == CKK_AES && call->key.bits == 256) return HF_STATUS_OK;
    return hf_request_fail(req, HF_STATUS_KEY_USAGE, "key %s is not an AES-256 key",
                           call->external_key_id);
}

const struct hf_ckr_policy hf_sap_ckr = {
    /* BAD_REQUEST: an OAEP plaintext over k - 2 hLen - 2, a bad parameter. */
    HF_STATUS_BIT(HF_STATUS_BAD_REQUEST) | HF_STATUS_BIT(HF_STATUS_BAD_CIPHERTEXT) |
        HF_STATUS_BIT(HF_STATUS_KEY_DISABLED) | HF_STATUS_BIT(HF_STATUS_KEY_USAGE) |
        HF_STATUS_BIT(HF_STATUS_KEY_NOT_FOUND) | HF_STATUS_BIT(HF_STATUS_THROTTLED) |
        HF_STATUS_BIT(HF_STATUS_TIMEOUT) | HF_STATUS_BIT(HF_STATUS_UNAVAILABLE),
    HF_STATUS_INTERNAL};

enum hf_status hf_sap_member_b64(const struct hf_sap_call *call, struct hf_request *req,
                                 const char *name, bool required, size_t max_len,
                                 unsigned char **data, size_t *len)
{
    char why[256] = "";
    enum hf_status st = hf_json_member_base64(call->body, name, required, false, max_len,
                                              HF_STATUS_BAD_REQUEST, data, len, why, sizeof(why));

    return st == HF_STATUS_OK ? st : hf_request_fail(req, st, "%s", why);
}

enum hf_status hf_sap_member_str(const struct hf_sap_call *call, struct hf_request *req,
                                 const char *name, bool required, const char **out)
{
    char why[256] = "";
    enum hf_status st = hf_json_member_string(call->body, "", name, required, HF_SAP_STRING_MAX,
                                              HF_STATUS_BAD_REQUEST, out, NULL, why, sizeof(why));

    return st == HF_STATUS_OK ? st : hf_request_fail(req, st, "%s", why);
}

enum hf_status hf_sap_member_integer(const struct hf_sap_call *call, struct hf_request *req,
                                     const char *name, bool required, int64_t min, int64_t max,
                                     int64_t dflt, int64_t *out)
{
    char why[256] = "";
    enum hf_status st =
        hf_sap_member_int(call->body, name, required, min, max, dflt, out, why, sizeof(why));

    return st == HF_STATUS_OK ? st : hf_request_fail(req, st, "%s", why);
}

bool hf_sap_reply_add_version(const struct hf_sap_call *call, struct json_object *reply)
{
    struct json_object *v = json_object_new_string(call->version.uuid);

    if (v != NULL && json_object_object_add(reply, "key_version_id", v) == 0) return true;
    json_object_put(v);
    return false;
}

bool hf_sap_reply_add_b64(struct json_object *reply, const char *name, const unsigned char *data,
                          size_t len)
{
    struct json_object *v = hf_json_base64(data, len);

    if (v != NULL && json_object_object_add(reply, name, v) == 0) return true;
    json_object_put(v);
    return false;
}
