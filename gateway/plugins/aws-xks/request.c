/* XKS request bodies: strict JSON through json-c, strict base64 through hf_base64_decode, then the
 * spec's field rules per operation (request.h). */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/request.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "gateway/plugins/aws-xks/crypto.h"

/* Nesting a real request never needs; json-c's default (32) would also do, this just bounds
 * what a hostile body can make the parser build. */
#define XKS_JSON_DEPTH 16

bool hf_xks_key_id_is_valid(const char *key_id)
{
    size_t n = 0;

    if (key_id == NULL) return false;
    for (const char *p = key_id; *p; p++, n++) {
        char c = *p;
        if (n >= 128 || !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            return false;
    }
    return n >= 1;
}

void hf_xks_request_clear(struct hf_xks_request *r)
{
    if (r == NULL) return;
    if (r->input.data != NULL) OPENSSL_clear_free(r->input.data, r->input.len);
    free(r->aad.data);
    free(r->cm.data);
    /* The base64 plaintext in the JSON tree is the plaintext too, and json-c frees without
     * cleansing. */
    hf_json_put_wiped(r->root);
    OPENSSL_cleanse(r, sizeof(*r));
}

/* A base64 member decoded into blob (plugin.h's strict form: the spec's base64 is padded
 * standard). cap: the largest decoded size Holdfast takes, or exact sizes for fixed fields
 * (checked by the caller). */
static enum hf_status get_blob(struct json_object *obj, const char *name, bool required, size_t cap,
                               enum hf_status over_cap, struct hf_xks_blob *blob, char *why,
                               size_t whylen)
{
    enum hf_status st = hf_json_member_base64(obj, name, required, false, cap, over_cap,
                                              &blob->data, &blob->len, why, whylen);

    blob->present = blob->data != NULL;
    return st;
}

/* The requestMetadata fields each operation requires (spec: the operation's request payload). */
static enum hf_status parse_metadata(enum hf_xks_op op, struct json_object *root,
                                     struct hf_xks_request_metadata *md, char *why, size_t whylen)
{
    static const char where[] = "requestMetadata.";
    struct json_object *obj = NULL;
    const bool key_op = op != HF_XKS_OP_HEALTH;
    const bool crypto_op = op == HF_XKS_OP_ENCRYPT || op == HF_XKS_OP_DECRYPT;
    const struct {
        const char *name;
        bool required;
        const char **out;
    } fields[] = {
        {"awsPrincipalArn", key_op, &md->aws_principal_arn},
        /* Absent on the GetKeyMetadata of a KMS CreateKey: the key ARN does not exist yet. */
        {"kmsKeyArn", crypto_op, &md->kms_key_arn},
        {"kmsOperation", true, &md->kms_operation},
        {"kmsRequestId", true, &md->kms_request_id},
        {"kmsViaService", false, &md->kms_via_service},
        {"awsSourceVpc", false, &md->aws_source_vpc},
        {"awsSourceVpce", false, &md->aws_source_vpce},
    };
    enum hf_status st;

    if (!json_object_object_get_ex(root, "requestMetadata", &obj)) {
        snprintf(why, whylen, "requestMetadata is required");
        return HF_STATUS_BAD_REQUEST;
    }
    if (!json_object_is_type(obj, json_type_object)) {
        snprintf(why, whylen, "requestMetadata must be an object");
        return HF_STATUS_BAD_REQUEST;
    }
    /* kmsOperation and kmsRequestId are opaque (never rejected for their content); a length
     * over what ARNs may have is still over this proxy's cap. */
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        st = hf_json_member_string(obj, where, fields[i].name, fields[i].required, HF_XKS_ARN_MAX,
                                   HF_STATUS_UNSUPPORTED, fields[i].out, NULL, why, whylen);
        if (st != HF_STATUS_OK) return st;
    }
    return HF_STATUS_OK;
}

static enum hf_status expect_enum(struct json_object *root, const char *name, bool required,
                                  const char *want, bool *present, char *why, size_t whylen)
{
    const char *s;
    enum hf_status st = hf_json_member_string(root, "", name, required, 0, HF_STATUS_BAD_REQUEST,
                                              &s, NULL, why, whylen);

    if (present) *present = s != NULL;
    if (st != HF_STATUS_OK || s == NULL) return st;
    if (strcmp(s, want) != 0) {
        snprintf(why, whylen, "%s must be %s", name, want);
        return HF_STATUS_BAD_REQUEST;
    }
    return HF_STATUS_OK;
}

/* One JSON object: the gateway's strict reader (duplicate keys, invalid UTF-8 and trailing data
 * refused), bounded in depth. */
static enum hf_status parse_json(const unsigned char *body, size_t len, struct json_object **out,
                                 char *why, size_t whylen)
{
    enum hf_status st;

    *out = NULL;
    if (len == 0) {
        snprintf(why, whylen, "the body is empty; a JSON object is required");
        return HF_STATUS_BAD_REQUEST;
    }
    if ((st = hf_json_parse(body, len, 0, XKS_JSON_DEPTH, out, why, whylen)) != HF_STATUS_OK)
        return st;
    if (!json_object_is_type(*out, json_type_object)) {
        snprintf(why, whylen, "the body must be a JSON object");
        hf_json_put_wiped(*out);
        *out = NULL;
        return HF_STATUS_BAD_REQUEST;
    }
    return HF_STATUS_OK;
}

static enum hf_status parse_encrypt(struct json_object *root, const struct hf_xks_caps *caps,
                                    struct hf_xks_request *r, char *why, size_t whylen)
{
    enum hf_status st;

    if ((st = get_blob(root, "plaintext", true, caps->max_plaintext, HF_STATUS_UNSUPPORTED,
                       &r->input, why, whylen)) != HF_STATUS_OK ||
        (st = expect_enum(root, "encryptionAlgorithm", true, "AES_GCM", NULL, why, whylen)) !=
            HF_STATUS_OK ||
        (st = get_blob(root, "additionalAuthenticatedData", false, caps->max_aad,
                       HF_STATUS_UNSUPPORTED, &r->aad, why, whylen)) != HF_STATUS_OK ||
        (st = expect_enum(root, "ciphertextDataIntegrityValueAlgorithm", false, "SHA_256",
                          &r->want_cdiv, why, whylen)) != HF_STATUS_OK)
        return st;
    return HF_STATUS_OK;
}

static enum hf_status parse_decrypt(struct json_object *root, const struct hf_xks_caps *caps,
                                    struct hf_xks_request *r, char *why, size_t whylen)
{
    struct hf_xks_blob iv = {0}, tag = {0};
    enum hf_status st;

    if ((st = get_blob(root, "ciphertext", true, caps->max_plaintext, HF_STATUS_UNSUPPORTED,
                       &r->input, why, whylen)) != HF_STATUS_OK ||
        (st = expect_enum(root, "encryptionAlgorithm", true, "AES_GCM", NULL, why, whylen)) !=
            HF_STATUS_OK ||
        (st = get_blob(root, "additionalAuthenticatedData", false, caps->max_aad,
                       HF_STATUS_UNSUPPORTED, &r->aad, why, whylen)) != HF_STATUS_OK ||
        /* The spec caps ciphertextMetadata at 20 bytes: more is not ours, nor anyone's. */
        (st = get_blob(root, "ciphertextMetadata", false, HF_XKS_CM_SPEC_MAX, HF_STATUS_BAD_REQUEST,
                       &r->cm, why, whylen)) != HF_STATUS_OK ||
        (st = get_blob(root, "initializationVector", true, sizeof(r->iv), HF_STATUS_BAD_REQUEST,
                       &iv, why, whylen)) != HF_STATUS_OK ||
        (st = get_blob(root, "authenticationTag", true, sizeof(r->tag), HF_STATUS_BAD_REQUEST, &tag,
                       why, whylen)) != HF_STATUS_OK)
        goto done;
    st = HF_STATUS_BAD_REQUEST;
    if (iv.len != 12 && iv.len != 16) {
        snprintf(why, whylen, "initializationVector must be 12 or 16 bytes, not %zu", iv.len);
        goto done;
    }
    if (tag.len != HF_XKS_TAG_LEN) {
        snprintf(why, whylen, "authenticationTag must be %d bytes, not %zu", HF_XKS_TAG_LEN,
                 tag.len);
        goto done;
    }
    memcpy(r->iv, iv.data, iv.len);
    r->iv_len = iv.len;
    memcpy(r->tag, tag.data, tag.len);
    st = HF_STATUS_OK;
done:
    free(iv.data);
    free(tag.data);
    return st;
}

enum hf_status hf_xks_request_parse(enum hf_xks_op op, const unsigned char *body, size_t len,
                                    const struct hf_xks_caps *caps, struct hf_xks_request *out,
                                    char *why, size_t whylen)
{
    static const struct hf_xks_caps spec_minimum = {HF_XKS_MIN_PLAINTEXT, HF_XKS_MIN_AAD};
    char scratch[8];
    enum hf_status st = HF_STATUS_INTERNAL;

    if (why == NULL || whylen == 0) why = scratch, whylen = sizeof(scratch);
    why[0] = '\0';
    if (out == NULL || (body == NULL && len != 0)) {
        snprintf(why, whylen, "internal: bad arguments");
        return HF_STATUS_INTERNAL;
    }
    memset(out, 0, sizeof(*out));
    out->op = op;
    if (caps == NULL) caps = &spec_minimum;
    if ((st = parse_json(body, len, &out->root, why, whylen)) != HF_STATUS_OK) goto done;
    if ((st = parse_metadata(op, out->root, &out->md, why, whylen)) != HF_STATUS_OK) goto done;
    switch (op) {
    case HF_XKS_OP_ENCRYPT:
        st = parse_encrypt(out->root, caps, out, why, whylen);
        break;
    case HF_XKS_OP_DECRYPT:
        st = parse_decrypt(out->root, caps, out, why, whylen);
        break;
    case HF_XKS_OP_METADATA:
    case HF_XKS_OP_HEALTH:
        st = HF_STATUS_OK;
        break;
    default:
        snprintf(why, whylen, "internal: unknown operation");
        st = HF_STATUS_INTERNAL;
    }
done:
    if (st != HF_STATUS_OK) hf_xks_request_clear(out);
    return st;
}
