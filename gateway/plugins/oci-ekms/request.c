/* OCI EKMS paths and bodies (request.h): the route table as path shapes, then the gateway's
 * strict JSON reader and member helpers, then the spec's sizes and enumerations. */
#include "hf-build.h"

#include "gateway/plugins/oci-ekms/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

/* ---- paths ------------------------------------------------------------------------------- */

#define SEGMENTS_MAX 6

/* path's segments (after the leading '/'), at most SEGMENTS_MAX; false for an empty one or
 * more than that. */
static bool segments_split(const char *path, const char *seg[SEGMENTS_MAX],
                           size_t len[SEGMENTS_MAX], size_t *n)
{
    *n = 0;
    while (*path == '/') {
        const char *s = ++path;
        size_t l = strcspn(s, "/");

        if (l == 0 || *n == SEGMENTS_MAX) return false;
        seg[*n] = s;
        len[(*n)++] = l;
        path = s + l;
    }
    return *path == '\0';
}

static bool seg_is(const char *s, size_t len, const char *word)
{
    return strlen(word) == len && strncmp(s, word, len) == 0;
}

static void id_copy(char dst[HF_OCI_ID_MAX + 1], const char *s, size_t len)
{
    dst[0] = '\0';
    if (len <= HF_OCI_ID_MAX) {
        memcpy(dst, s, len);
        dst[len] = '\0';
    }
}

/* Segments after the vault id's: the key-level routes. */
static enum hf_oci_op key_route(const char *const *seg, const size_t *len, size_t n)
{
    if (n == 2 && seg_is(seg[1], len[1], "metadata")) return HF_OCI_OP_KEY_METADATA;
    if (n == 2 && seg_is(seg[1], len[1], "encrypt")) return HF_OCI_OP_ENCRYPT;
    if (n == 2 && seg_is(seg[1], len[1], "decrypt")) return HF_OCI_OP_DECRYPT;
    if (n == 2 && seg_is(seg[1], len[1], "generateRandomBytes")) return HF_OCI_OP_KEY_RANDOM;
    if (n == 4 && seg_is(seg[1], len[1], "keyVersions") && seg_is(seg[3], len[3], "metadata"))
        return HF_OCI_OP_VERSION_METADATA;
    return HF_OCI_OP_NONE;
}

bool hf_oci_path_parse(const char *path, const char *prefix, struct hf_oci_target *out)
{
    const char *seg[SEGMENTS_MAX];
    size_t len[SEGMENTS_MAX], n, plen;

    if (out != NULL) memset(out, 0, sizeof(*out));
    if (path == NULL || prefix == NULL || out == NULL) return false;
    plen = strlen(prefix);
    if (strncmp(path, prefix, plen) != 0 || strncmp(path + plen, "/vaults/", 8) != 0) return false;
    /* Under the prefix: ours, whatever follows (a malformed rest is this API's 404). */
    if (!segments_split(path + plen + 7, seg, len, &n) || n < 2) return true;
    id_copy(out->vault_id, seg[0], len[0]);
    if (n == 2 && seg_is(seg[1], len[1], "metadata"))
        out->op = HF_OCI_OP_VAULT_METADATA;
    else if (n == 2 && seg_is(seg[1], len[1], "generateRandomBytes"))
        out->op = HF_OCI_OP_VAULT_RANDOM;
    else if (n >= 4 && seg_is(seg[1], len[1], "keys")) {
        id_copy(out->key_id, seg[2], len[2]);
        out->op = key_route(seg + 2, len + 2, n - 2);
        if (out->op == HF_OCI_OP_VERSION_METADATA) id_copy(out->version_id, seg[4], len[4]);
    }
    return true;
}

const char *hf_oci_op_method(enum hf_oci_op op)
{
    switch (op) {
    case HF_OCI_OP_VAULT_METADATA:
    case HF_OCI_OP_KEY_METADATA:
    case HF_OCI_OP_VERSION_METADATA:
        return "GET";
    case HF_OCI_OP_NONE:
        return NULL;
    default:
        return "POST";
    }
}

static const struct {
    const char *name;
    const char *legacy;
} op_names[] = {
    [HF_OCI_OP_NONE] = {"oci", NULL},
    [HF_OCI_OP_VAULT_METADATA] = {"getVaultMetadata", "oci_hyok_getVaultMetadata"},
    [HF_OCI_OP_KEY_METADATA] = {"getKeyMetadata", "oci_hyok_getKeyMetadata"},
    [HF_OCI_OP_VERSION_METADATA] = {"getKeyVersionMetadata", "oci_hyok_getKeyVersionMetadata"},
    [HF_OCI_OP_ENCRYPT] = {"encrypt", "oci_hyok_encrypt"},
    [HF_OCI_OP_DECRYPT] = {"decrypt", "oci_hyok_decrypt"},
    [HF_OCI_OP_VAULT_RANDOM] = {"generateRandomBytes", "oci_hyok_generateRandomBytes"},
    [HF_OCI_OP_KEY_RANDOM] = {"generateRandomBytes.key", "oci_hyok_generateRandomBytes"},
};

const char *hf_oci_op_name(enum hf_oci_op op)
{
    return (size_t)op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op].name : "oci";
}

const char *hf_oci_op_legacy_scope(enum hf_oci_op op)
{
    return (size_t)op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op].legacy : NULL;
}

/* ---- bodies ------------------------------------------------------------------------------ */

static enum hf_status bytes_get(const struct json_object *o, const char *name, bool required,
                                size_t max, struct hf_oci_bytes *b, char *why, size_t whylen)
{
    enum hf_status st = hf_json_member_base64(o, name, required, false, max, HF_STATUS_BAD_REQUEST,
                                              &b->data, &b->len, why, whylen);

    b->present = st == HF_STATUS_OK && b->data != NULL;
    return st;
}

/* mode: AES_GCM or GCM (the spec's two spellings), when given. */
static enum hf_status mode_get(const struct json_object *o, struct hf_oci_request *r, char *why,
                               size_t whylen)
{
    const char *mode = NULL;
    enum hf_status st = hf_json_member_string(o, "", "mode", false, 32, HF_STATUS_BAD_REQUEST,
                                              &mode, NULL, why, whylen);

    if (st != HF_STATUS_OK || mode == NULL) return st;
    if (strcmp(mode, "AES_GCM") != 0 && strcmp(mode, "GCM") != 0) {
        snprintf(why, whylen, "mode: only AES_GCM (or GCM) is served");
        return HF_STATUS_BAD_REQUEST;
    }
    r->mode_given = true;
    return HF_STATUS_OK;
}

static enum hf_status version_get(const struct json_object *o, struct hf_oci_request *r, char *why,
                                  size_t whylen)
{
    return hf_json_member_string(o, "", "keyVersionId", false, 256, HF_STATUS_BAD_REQUEST,
                                 &r->key_version_id, NULL, why, whylen);
}

static enum hf_status encrypt_parse(const struct json_object *o, struct hf_oci_request *r,
                                    char *why, size_t whylen)
{
    enum hf_status st;

    if ((st = bytes_get(o, "plaintext", true, HF_OCI_PLAINTEXT_MAX, &r->plaintext, why, whylen)) !=
        HF_STATUS_OK)
        return st;
    if (r->plaintext.len == 0) {
        snprintf(why, whylen, "plaintext: at least one byte");
        return HF_STATUS_BAD_REQUEST;
    }
    if ((st = bytes_get(o, "aad", false, HF_OCI_AAD_MAX, &r->aad, why, whylen)) != HF_STATUS_OK ||
        (st = bytes_get(o, "iv", false, 0, &r->iv, why, whylen)) != HF_STATUS_OK ||
        (st = mode_get(o, r, why, whylen)) != HF_STATUS_OK)
        return st;
    return version_get(o, r, why, whylen);
}

/* pad: only "none" (GCM pads nothing), when given. */
static enum hf_status pad_check(const struct json_object *o, char *why, size_t whylen)
{
    const char *pad = NULL;
    enum hf_status st = hf_json_member_string(o, "", "pad", false, 32, HF_STATUS_BAD_REQUEST, &pad,
                                              NULL, why, whylen);

    if (st != HF_STATUS_OK || pad == NULL) return st;
    if (strcasecmp(pad, "none") != 0) {
        snprintf(why, whylen, "pad: only none");
        return HF_STATUS_BAD_REQUEST;
    }
    return HF_STATUS_OK;
}

static enum hf_status decrypt_parse(const struct json_object *o, struct hf_oci_request *r,
                                    char *why, size_t whylen)
{
    enum hf_status st;

    if ((st = bytes_get(o, "ciphertext", true, HF_OCI_CIPHERTEXT_MAX, &r->ciphertext, why,
                        whylen)) != HF_STATUS_OK ||
        (st = bytes_get(o, "aad", false, HF_OCI_AAD_MAX, &r->aad, why, whylen)) != HF_STATUS_OK ||
        (st = bytes_get(o, "iv", false, 64, &r->iv, why, whylen)) != HF_STATUS_OK ||
        (st = bytes_get(o, "tag", false, 64, &r->tag, why, whylen)) != HF_STATUS_OK ||
        (st = mode_get(o, r, why, whylen)) != HF_STATUS_OK ||
        (st = pad_check(o, why, whylen)) != HF_STATUS_OK)
        return st;
    return version_get(o, r, why, whylen);
}

/* length: a JSON integer 1..65535 (not a string, not 1.0). */
static enum hf_status random_parse(struct json_object *o, struct hf_oci_request *r, char *why,
                                   size_t whylen)
{
    struct json_object *v = NULL;
    int64_t n;

    if (!json_object_object_get_ex(o, "length", &v) || v == NULL) {
        snprintf(why, whylen, "length: required");
        return HF_STATUS_BAD_REQUEST;
    }
    if (!json_object_is_type(v, json_type_int)) {
        snprintf(why, whylen, "length: must be a JSON integer");
        return HF_STATUS_BAD_REQUEST;
    }
    n = json_object_get_int64(v);
    /* json-c saturates at INT64_MAX and reads unsigned ones above it so; both are over. */
    if (n < 1 || n > (int64_t)HF_OCI_RANDOM_MAX) {
        snprintf(why, whylen, "length: 1..%u", HF_OCI_RANDOM_MAX);
        return HF_STATUS_BAD_REQUEST;
    }
    r->length = (unsigned)n;
    return HF_STATUS_OK;
}

enum hf_status hf_oci_request_parse(enum hf_oci_op op, const unsigned char *body, size_t len,
                                    struct hf_oci_request *out, char *why, size_t whylen)
{
    enum hf_status st;

    if (out == NULL) return HF_STATUS_INTERNAL;
    memset(out, 0, sizeof(*out));
    out->op = op;
    if (hf_oci_op_method(op) == NULL || strcmp(hf_oci_op_method(op), "GET") == 0)
        return HF_STATUS_OK;
    st = hf_json_parse(body, len, HF_OCI_BODY_MAX, 0, &out->root, why, whylen);
    if (st == HF_STATUS_UNSUPPORTED) st = HF_STATUS_BAD_REQUEST;
    if (st != HF_STATUS_OK) return st;
    if (!json_object_is_type(out->root, json_type_object)) {
        snprintf(why, whylen, "the body must be a JSON object");
        return HF_STATUS_BAD_REQUEST;
    }
    switch (op) {
    case HF_OCI_OP_ENCRYPT:
        return encrypt_parse(out->root, out, why, whylen);
    case HF_OCI_OP_DECRYPT:
        return decrypt_parse(out->root, out, why, whylen);
    default:
        return random_parse(out->root, out, why, whylen);
    }
}

static void bytes_clear(struct hf_oci_bytes *b)
{
    if (b->data != NULL) OPENSSL_clear_free(b->data, b->len);
    memset(b, 0, sizeof(*b));
}

void hf_oci_request_clear(struct hf_oci_request *r)
{
    if (r == NULL) return;
    bytes_clear(&r->plaintext);
    bytes_clear(&r->ciphertext);
    bytes_clear(&r->aad);
    bytes_clear(&r->iv);
    bytes_clear(&r->tag);
    hf_json_put_wiped(r->root);
    memset(r, 0, sizeof(*r));
}

/* ---- scopes ------------------------------------------------------------------------------ */

/* item is want, or one of audiences followed by want (with a '/' between when the audience
 * ends without one). */
static bool scope_is(const char *item, size_t len, const char *want, const char *const *auds,
                     size_t nauds)
{
    size_t wl = strlen(want);

    if (len == wl && strncmp(item, want, wl) == 0) return true;
    for (size_t i = 0; i < nauds; i++) {
        size_t al = strlen(auds[i]);
        bool slash = al > 0 && auds[i][al - 1] != '/';

        if (len != al + slash + wl || strncmp(item, auds[i], al) != 0) continue;
        if (slash && item[al] != '/') continue;
        if (strncmp(item + al + slash, want, wl) == 0) return true;
    }
    return false;
}

static bool item_admits(const char *item, size_t len, enum hf_oci_op op, const char *const *auds,
                        size_t nauds)
{
    const char *legacy = hf_oci_op_legacy_scope(op);

    return scope_is(item, len, "oci_ekms", auds, nauds) ||
           (legacy != NULL && scope_is(item, len, legacy, auds, nauds));
}

/* A space-separated list (RFC 6749 section 3.3). */
static bool list_admits(const char *s, enum hf_oci_op op, const char *const *auds, size_t nauds)
{
    while (s != NULL && *s != '\0') {
        size_t n;

        s += strspn(s, " ");
        n = strcspn(s, " ");
        if (n > 0 && item_admits(s, n, op, auds, nauds)) return true;
        s += n;
    }
    return false;
}

static bool claim_admits(struct json_object *v, enum hf_oci_op op, const char *const *auds,
                         size_t nauds)
{
    if (json_object_is_type(v, json_type_string))
        return list_admits(json_object_get_string(v), op, auds, nauds);
    if (!json_object_is_type(v, json_type_array)) return false;
    for (size_t i = 0; i < json_object_array_length(v); i++) {
        struct json_object *e = json_object_array_get_idx(v, i);
        if (json_object_is_type(e, json_type_string) &&
            list_admits(json_object_get_string(e), op, auds, nauds))
            return true;
    }
    return false;
}

bool hf_oci_scope_allows(const struct json_object *claims, enum hf_oci_op op,
                         const char *const *audiences, size_t naudiences)
{
    struct json_object *v = NULL;

    if (claims == NULL || op == HF_OCI_OP_NONE) return false;
    if (json_object_object_get_ex(claims, "scope", &v) &&
        claim_admits(v, op, audiences, naudiences))
        return true;
    return json_object_object_get_ex(claims, "scp", &v) &&
           claim_admits(v, op, audiences, naudiences);
}
