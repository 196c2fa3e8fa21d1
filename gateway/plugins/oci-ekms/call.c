/* The steps every EKMS operation shares, in the order of the spec's "Authorization and state"
 * (internal.h, hf_oci_call_begin). */
#include "hf-build.h"

#include "gateway/plugins/oci-ekms/internal.h"

#include <stdio.h>
#include <string.h>

static bool op_is_key_level(enum hf_oci_op op)
{
    return op != HF_OCI_OP_VAULT_METADATA && op != HF_OCI_OP_VAULT_RANDOM;
}

/* opc-request-id (spec, "Transport"): echoed as "<caller id>/<holdfast id>", or Holdfast's
 * alone; the echoed form is the record's request id and the caller's a field of its own, so
 * the audit holds both. A value no OCI would send (over 128 bytes, not printable) is refused
 * before it reaches a header or a record. */
enum hf_status hf_oci_request_id_set(struct hf_oci_call *call, struct hf_request *req)
{
    const char *opc = hf_request_header(req, "opc-request-id");
    size_t n = opc != NULL ? strlen(opc) : 0;
    bool printable = n <= HF_OCI_REQUEST_ID_MAX;

    for (size_t i = 0; i < n && printable; i++)
        printable = opc[i] >= 0x21 && opc[i] <= 0x7e;
    if (n == 0 || !printable) {
        snprintf(call->request_id, sizeof(call->request_id), "%s", hf_request_id(req));
        hf_reply_header(req, "opc-request-id", call->request_id);
        if (n == 0) return HF_STATUS_OK;
        return hf_request_fail(req, HF_STATUS_BAD_REQUEST,
                               "opc-request-id: at most %u printable characters",
                               HF_OCI_REQUEST_ID_MAX);
    }
    snprintf(call->request_id, sizeof(call->request_id), "%s/%s", opc, hf_request_id(req));
    hf_reply_header(req, "opc-request-id", call->request_id);
    hf_request_set_audit_field(req, "opc_request_id", opc);
    hf_request_set_audit(req, NULL, call->request_id, NULL);
    return HF_STATUS_OK;
}

static bool id_is_uuid(const char *id)
{
    return hf_oci_uuid_is_valid(id, strlen(id));
}

/* Spec, "Authorization and state" 4: request ids, vault, key, version, client, result. Ids
 * from the path are recorded only when they are UUIDs: a raw path may hold any byte, and a
 * record takes UTF-8. */
static void audit_set(struct hf_oci_call *call, struct hf_request *req)
{
    bool key_ref = op_is_key_level(call->t.op) && id_is_uuid(call->t.key_id);

    hf_request_set_audit_field(req, "vault_id", call->vault->id);
    if (key_ref) hf_request_set_audit_field(req, "key_id", call->t.key_id);
    if (id_is_uuid(call->t.version_id))
        hf_request_set_audit_field(req, "key_version_id", call->t.version_id);
    if (call->client != NULL) hf_request_set_audit_field(req, "client", call->client);
    hf_request_set_audit(req, call->client, call->request_id,
                         key_ref ? call->link_id : call->vault->id);
}

/* Step 1 and 3 for key-level routes: the key linked in this vault as "<vaultId>/<keyId>",
 * whose UUID keyId must be (OCI's externalKeyId is the Holdfast key's UUID), AES-256 only. */
static enum hf_status key_find(struct hf_oci_call *call, struct hf_request *req)
{
    const char *kid = call->t.key_id;
    enum hf_status st;

    if (!id_is_uuid(kid))
        return hf_request_fail(req, HF_STATUS_KEY_NOT_FOUND, "no such key in vault %s",
                               call->vault->id);
    hf_request_set_link(req, HF_OCI_LINK_TYPE, call->link_id);
    st = hf_keys_by_link(HF_OCI_LINK_TYPE, call->link_id, &call->key);
    if (st == HF_STATUS_KEY_NOT_FOUND || (st == HF_STATUS_OK && strcmp(call->key.uuid, kid) != 0))
        return hf_request_fail(req, HF_STATUS_KEY_NOT_FOUND, "no key %s in vault %s", kid,
                               call->vault->id);
    if (st != HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE, "key %s cannot be read now", kid);
    if (call->key.key_type != CKK_AES || call->key.bits != 256)
        return hf_request_fail(req, HF_STATUS_KEY_USAGE, "key disabled: key %s is not AES-256",
                               kid);
    return HF_STATUS_OK;
}

enum hf_status hf_oci_call_begin(struct hf_oci_state *st, struct hf_request *req,
                                 const struct hf_oci_target *t, struct hf_oci_call *call)
{
    const unsigned char *body;
    size_t body_len = 0;
    char why[256] = "", who[160];
    enum hf_status s;

    call->st = st;
    call->t = *t;
    /* Before authentication: the vault's token settings decide who may call. */
    call->vault = hf_oci_config_vault(&st->cfg, t->vault_id, strlen(t->vault_id));
    if (call->vault == NULL) return hf_request_fail(req, HF_STATUS_KEY_NOT_FOUND, "no such vault");
    call->rt = &st->rt[call->vault - st->cfg.vaults];
    snprintf(call->link_id, sizeof(call->link_id), "%s/%s", call->vault->id, t->key_id);
    if ((s = hf_oci_authenticate(call, req)) != HF_STATUS_OK) return s;
    audit_set(call, req);
    if ((s = hf_oci_authorize(call, req)) != HF_STATUS_OK) return s;
    if (call->vault->disabled)
        return hf_request_fail(req, HF_STATUS_DENIED, "vault %s is disabled in Holdfast",
                               call->vault->id);
    snprintf(who, sizeof(who), "vault %s", call->vault->name);
    if ((s = hf_request_rate_check(req, call->rt->rate, who)) != HF_STATUS_OK) return s;
    body = hf_request_body(req, &body_len);
    if ((s = hf_oci_request_parse(t->op, body, body_len, &call->body, why, sizeof(why))) !=
        HF_STATUS_OK)
        return hf_request_fail(req, s, "%s", why);
    return op_is_key_level(t->op) ? key_find(call, req) : HF_STATUS_OK;
}

void hf_oci_call_end(struct hf_oci_call *call)
{
    if (call == NULL) return;
    hf_oci_request_clear(&call->body);
    if (call->token != NULL) hf_jwt_release(call->token);
    call->token = NULL;
    call->client = NULL;
}

enum hf_status hf_oci_key_may(struct hf_oci_call *call, struct hf_request *req, enum hf_key_op op,
                              CK_ULONG state)
{
    static const char *const what[] = {"encrypt", "decrypt", "sign", "verify", "be described"};
    enum hf_status st;

    if (call->key.blocked)
        return hf_request_fail(req, HF_STATUS_KEY_DISABLED,
                               "key disabled: the link of key %s is blocked", call->key.uuid);
    /* Spec, "Authorization and state" 3: only an active key answers, metadata included (never
     * 200 with a BLOCKED or other state), and only one that may both encrypt and decrypt. */
    if (op == HF_KEY_OP_METADATA) {
        CK_ULONG s = state != 0 ? state : call->key.state;
        if (s != HF_STATE_ACTIVE || (call->key.usage & (HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT)) !=
                                        (HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT))
            return hf_request_fail(req, HF_STATUS_KEY_DISABLED,
                                   "key disabled: key %s is not active for encrypt and decrypt",
                                   call->key.uuid);
        return HF_STATUS_OK;
    }
    if ((st = hf_key_may(&call->key, op, state)) == HF_STATUS_OK) return HF_STATUS_OK;
    return hf_request_fail(req, HF_STATUS_KEY_DISABLED, "key disabled: key %s may not %s now (%s)",
                           call->key.uuid, what[op],
                           st == HF_STATUS_KEY_USAGE ? "its usage" : "its state");
}

enum hf_status hf_oci_version_find(struct hf_oci_call *call, struct hf_request *req,
                                   const char *uuid, struct hf_key_version *out)
{
    enum hf_status st;

    if (uuid == NULL || !hf_oci_uuid_is_valid(uuid, strlen(uuid)))
        return hf_request_fail(req, HF_STATUS_KEY_NOT_FOUND, "no such version of key %s",
                               call->key.uuid);
    hf_request_set_audit_field(req, "key_version_id", uuid);
    st = hf_keys_version_by_uuid(&call->key, uuid, out);
    if (st == HF_STATUS_KEY_NOT_FOUND)
        return hf_request_fail(req, st, "no version %s of key %s (or it is destroyed)", uuid,
                               call->key.uuid);
    if (st != HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE,
                               "the versions of key %s cannot be read now", call->key.uuid);
    return HF_STATUS_OK;
}

enum hf_status hf_oci_fail_ckr(struct hf_request *req, CK_RV rv, const char *what)
{
    static const struct hf_ckr_policy oci_ckr = {HF_STATUS_BIT(HF_STATUS_BAD_CIPHERTEXT) |
                                                     HF_STATUS_BIT(HF_STATUS_THROTTLED) |
                                                     HF_STATUS_BIT(HF_STATUS_TIMEOUT),
                                                 HF_STATUS_UNAVAILABLE};
    enum hf_status st = hf_status_from_ckr(rv);

    /* A key the module refuses (blocked, state, usage) is OCI's one "key disabled" 403. */
    if (st == HF_STATUS_KEY_DISABLED || st == HF_STATUS_KEY_USAGE)
        return hf_request_fail(req, HF_STATUS_KEY_DISABLED,
                               "key disabled: %s refused (PKCS#11 0x%lx)", what, (unsigned long)rv);
    return hf_request_fail_ckr(req, rv, what, &oci_ckr);
}
