/* Cloud EKM request bodies and paths (request.h): the gateway's strict JSON reader, then
 * proto3 JSON's field naming and base64 rules, then the spec's sizes. */
#include "hf-build.h"

#include "gateway/plugins/gcp-ekm/request.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "gateway/plugins/gcp-ekm/kaj.h"

/* A message field: its name as proto3 JSON matching sees it (lower case, no '_') and its path
 * for messages and google.rpc.BadRequest details. */
struct field {
    const char *norm;
    const char *path;
};

enum { F_KEY_PATH, F_INPUT, F_CONTEXT, F_AAD, F_URI_PREFIX, F_TOP_COUNT };
enum { C_FULL_NAME, C_RELATIVE_NAME, C_REASON_CONTEXT, C_HEALTH_CHECK, C_COUNT };

static const struct field wrap_fields[F_TOP_COUNT] = {
    {"keypath", "keyPath"},
    {"plaintext", "plaintext"},
    {"additionalcontext", "additionalContext"},
    {"additionalauthenticateddata", "additionalAuthenticatedData"},
    {"keyuriprefix", "keyUriPrefix"},
};
static const struct field unwrap_fields[F_TOP_COUNT] = {
    {"keypath", "keyPath"},
    {"wrappedblob", "wrappedBlob"},
    {"additionalcontext", "additionalContext"},
    {"additionalauthenticateddata", "additionalAuthenticatedData"},
    {"keyuriprefix", "keyUriPrefix"},
};
static const struct field context_fields[C_COUNT] = {
    {"fullresourcename", "additionalContext.fullResourceName"},
    {"relativeresourcename", "additionalContext.relativeResourceName"},
    {"accessreasoncontext", "additionalContext.accessReasonContext"},
    {"iskeyhealthcheck", "additionalContext.isKeyHealthCheck"},
};
static const struct field reason_fields[1] = {
    {"reason", "additionalContext.accessReasonContext.reason"},
};

/* The most fields one message has (the top level). */
#define FIELDS_MAX ((size_t)F_TOP_COUNT)

/* Longer than any field name above: a longer member is unknown whatever it spells. */
#define NORM_MAX 40

/* name in proto3 JSON matching form into out; false when it is too long to be one of ours. */
static bool name_normalise(const char *name, char out[NORM_MAX + 1])
{
    size_t n = 0;

    for (const char *p = name; *p; p++) {
        if (*p == '_') continue;
        if (n == NORM_MAX) return false;
        out[n++] = (char)tolower((unsigned char)*p);
    }
    out[n] = '\0';
    return true;
}

/* The members of obj that are fields[0..n), into vals (NULL: absent or JSON null). */
static enum hf_status fields_collect(struct json_object *obj, const char *where,
                                     const struct field *fields, size_t n,
                                     struct json_object **vals, char *why, size_t whylen)
{
    bool seen[FIELDS_MAX] = {false};
    char norm[NORM_MAX + 1];

    if (!json_object_is_type(obj, json_type_object)) {
        snprintf(why, whylen, "%s: must be a JSON object", where);
        return HF_STATUS_BAD_REQUEST;
    }
    for (size_t i = 0; i < n; i++)
        vals[i] = NULL;
    json_object_object_foreach(obj, key, val)
    {
        if (!name_normalise(key, norm)) continue;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(norm, fields[i].norm) != 0) continue;
            /* The strict reader refused the same spelling twice; two spellings of one field
             * would leave which one counts to the order of members. */
            if (seen[i]) {
                snprintf(why, whylen, "%s: given twice (names match without case and '_')",
                         fields[i].path);
                return HF_STATUS_BAD_REQUEST;
            }
            seen[i] = true;
            vals[i] = json_object_is_type(val, json_type_null) ? NULL : val;
        }
    }
    return HF_STATUS_OK;
}

static enum hf_status get_string(struct json_object *v, const char *path, const char **out,
                                 char *why, size_t whylen)
{
    const char *s;
    int len;

    *out = NULL;
    if (v == NULL) return HF_STATUS_OK;
    if (!json_object_is_type(v, json_type_string)) {
        snprintf(why, whylen, "%s: must be a string", path);
        return HF_STATUS_BAD_REQUEST;
    }
    s = json_object_get_string(v);
    len = json_object_get_string_len(v);
    if (s == NULL || len < 0 || strlen(s) != (size_t)len) {
        snprintf(why, whylen, "%s: must not contain a NUL character", path);
        return HF_STATUS_BAD_REQUEST;
    }
    if ((size_t)len > HF_EKM_STRING_MAX) {
        snprintf(why, whylen, "%s: longer than %u characters", path, HF_EKM_STRING_MAX);
        return HF_STATUS_BAD_REQUEST;
    }
    *out = s;
    return HF_STATUS_OK;
}

/* A bytes field, decoded; cap in decoded bytes, checked on the encoded length first so an
 * oversized field is refused before anything is decoded. */
static enum hf_status get_bytes(struct json_object *v, const char *path, bool required, size_t cap,
                                struct hf_ekm_bytes *out, char *why, size_t whylen)
{
    const char *s;
    size_t len;

    if (v == NULL) {
        if (!required) return HF_STATUS_OK;
        snprintf(why, whylen, "%s: required", path);
        return HF_STATUS_BAD_REQUEST;
    }
    if (!json_object_is_type(v, json_type_string)) {
        snprintf(why, whylen, "%s: must be a base64 string", path);
        return HF_STATUS_BAD_REQUEST;
    }
    s = json_object_get_string(v);
    len = (size_t)json_object_get_string_len(v);
    if (len > (cap + 2) / 3 * 4) {
        snprintf(why, whylen, "%s: over %zu bytes", path, cap);
        return HF_STATUS_BAD_REQUEST;
    }
    /* Unpadded input decodes to up to 3 bytes per 4 characters, rounded up. */
    if ((out->data = malloc((len + 3) / 4 * 3 + 1)) == NULL) {
        snprintf(why, whylen, "out of memory");
        return HF_STATUS_INTERNAL;
    }
    if (!hf_base64_decode_any(s, len, out->data, &out->len)) {
        snprintf(why, whylen, "%s: not base64 (standard or URL-safe, padded or not)", path);
        return HF_STATUS_BAD_REQUEST;
    }
    if (out->len > cap) {
        snprintf(why, whylen, "%s: over %zu bytes", path, cap);
        return HF_STATUS_BAD_REQUEST;
    }
    out->present = true;
    return HF_STATUS_OK;
}

/* accessReasonContext.reason: proto3 JSON writes an enum as its name or its number. */
static enum hf_status get_reason(struct json_object *arc, int *reason, char *why, size_t whylen)
{
    struct json_object *v[1];
    enum hf_status st;

    *reason = HF_EKM_REASON_ABSENT;
    if (arc == NULL) return HF_STATUS_OK;
    st = fields_collect(arc, "additionalContext.accessReasonContext", reason_fields, 1, v, why,
                        whylen);
    if (st != HF_STATUS_OK || v[0] == NULL) return st;
    if (json_object_is_type(v[0], json_type_string)) {
        *reason = hf_ekm_reason_parse(json_object_get_string(v[0]));
        return HF_STATUS_OK;
    }
    if (json_object_is_type(v[0], json_type_int)) {
        int64_t n = json_object_get_int64(v[0]);
        *reason = (n >= 0 && n < HF_EKM_REASON_COUNT) ? (int)n : HF_EKM_REASON_ABSENT;
        return HF_STATUS_OK;
    }
    snprintf(why, whylen, "%s: must be an enum name or number", reason_fields[0].path);
    return HF_STATUS_BAD_REQUEST;
}

static enum hf_status context_parse(struct json_object *ctx, struct hf_ekm_request *out, char *why,
                                    size_t whylen)
{
    struct json_object *v[C_COUNT];
    enum hf_status st;

    out->reason = HF_EKM_REASON_ABSENT;
    if (ctx == NULL) return HF_STATUS_OK;
    st = fields_collect(ctx, "additionalContext", context_fields, C_COUNT, v, why, whylen);
    if (st != HF_STATUS_OK ||
        (st = get_string(v[C_FULL_NAME], context_fields[C_FULL_NAME].path, &out->full_resource_name,
                         why, whylen)) != HF_STATUS_OK ||
        (st = get_string(v[C_RELATIVE_NAME], context_fields[C_RELATIVE_NAME].path,
                         &out->relative_resource_name, why, whylen)) != HF_STATUS_OK ||
        (st = get_reason(v[C_REASON_CONTEXT], &out->reason, why, whylen)) != HF_STATUS_OK)
        return st;
    if (v[C_HEALTH_CHECK] != NULL) {
        if (!json_object_is_type(v[C_HEALTH_CHECK], json_type_boolean)) {
            snprintf(why, whylen, "%s: must be true or false", context_fields[C_HEALTH_CHECK].path);
            return HF_STATUS_BAD_REQUEST;
        }
        out->health_check = json_object_get_boolean(v[C_HEALTH_CHECK]);
    }
    return HF_STATUS_OK;
}

enum hf_status hf_ekm_request_parse(enum hf_ekm_op op, const unsigned char *body, size_t len,
                                    struct hf_ekm_request *out, char *why, size_t whylen)
{
    const struct field *fields = op == HF_EKM_OP_WRAP ? wrap_fields : unwrap_fields;
    const size_t cap = op == HF_EKM_OP_WRAP ? HF_EKM_PLAINTEXT_MAX : HF_EKM_BLOB_MAX;
    struct json_object *v[F_TOP_COUNT];
    enum hf_status st;

    if (out == NULL || why == NULL || whylen == 0) return HF_STATUS_INTERNAL;
    memset(out, 0, sizeof(*out));
    out->op = op;
    out->reason = HF_EKM_REASON_ABSENT;
    if (body == NULL || len == 0) {
        snprintf(why, whylen, "the body is empty: a JSON object is required");
        return HF_STATUS_BAD_REQUEST;
    }
    if (len > HF_EKM_BODY_MAX) {
        snprintf(why, whylen, "the body is over %u bytes", HF_EKM_BODY_MAX);
        return HF_STATUS_BAD_REQUEST;
    }
    st = hf_json_parse(body, len, HF_EKM_BODY_MAX, 0, &out->root, why, whylen);
    if (st == HF_STATUS_UNSUPPORTED) st = HF_STATUS_BAD_REQUEST; /* the spec: over a cap, 400 */
    if (st != HF_STATUS_OK) return st;
    st = fields_collect(out->root, "the body", fields, F_TOP_COUNT, v, why, whylen);
    if (st != HF_STATUS_OK ||
        (st = get_string(v[F_KEY_PATH], fields[F_KEY_PATH].path, &out->key_path, why, whylen)) !=
            HF_STATUS_OK ||
        (st = get_string(v[F_URI_PREFIX], fields[F_URI_PREFIX].path, &out->key_uri_prefix, why,
                         whylen)) != HF_STATUS_OK ||
        (st = get_bytes(v[F_INPUT], fields[F_INPUT].path, true, cap, &out->input, why, whylen)) !=
            HF_STATUS_OK ||
        (st = get_bytes(v[F_AAD], fields[F_AAD].path, false, HF_EKM_AAD_MAX, &out->aad, why,
                        whylen)) != HF_STATUS_OK)
        return st;
    return context_parse(v[F_CONTEXT], out, why, whylen);
}

void hf_ekm_request_clear(struct hf_ekm_request *r)
{
    if (r == NULL) return;
    /* A wrap's plaintext is a customer's key: cleansed here and, as base64, in the tree. */
    if (r->input.data != NULL) OPENSSL_clear_free(r->input.data, r->input.len);
    free(r->aad.data);
    hf_json_put_wiped(r->root);
    memset(r, 0, sizeof(*r));
}

bool hf_ekm_path_verb(const char *path, size_t *base_len, const char **verb)
{
    const char *last, *colon;

    if (path == NULL || base_len == NULL || verb == NULL) return false;
    last = strrchr(path, '/');
    last = last ? last + 1 : path;
    if ((colon = strrchr(last, ':')) == NULL || colon[1] == '\0') return false;
    *base_len = (size_t)(colon - path);
    *verb = colon + 1;
    return true;
}

static bool key_path_char_is_valid(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '~' || c == '/' || c == '-';
}

bool hf_ekm_key_path_is_valid(const char *key_path, size_t len)
{
    size_t seg = 0; /* start of the current segment */

    if (key_path == NULL || len == 0 || len > HF_EKM_KEY_PATH_MAX) return false;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && key_path[i] != '/') {
            if (!key_path_char_is_valid(key_path[i])) return false;
            continue;
        }
        /* A segment ends: empty, "." and ".." would name another path after normalising. */
        size_t n = i - seg;
        if (n == 0 || (n == 1 && key_path[seg] == '.') ||
            (n == 2 && key_path[seg] == '.' && key_path[seg + 1] == '.'))
            return false;
        seg = i + 1;
    }
    return true;
}
