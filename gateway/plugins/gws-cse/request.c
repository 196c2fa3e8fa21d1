/* CSE operations and request bodies (request.h): the op table, one table of the fields each op
 * requires and allows, then the gateway's strict JSON reader and member helpers. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* ---- the operations -------------------------------------------------------------------------- */

/* Check 3's roles (spec's Decision list). */
static const char *const roles_wrap[] = {"writer", "upgrader", NULL};
static const char *const roles_read[] = {"reader", "writer", NULL};
static const char *const roles_digest[] = {"verifier", NULL};
static const char *const roles_rewrap[] = {"migrator", NULL};
static const char *const roles_sign[] = {"signer", NULL};
static const char *const roles_decrypt[] = {"decrypter", NULL};

static const struct hf_cse_op_info ops[HF_CSE_OP_COUNT] = {
    /* name, method, stage2, authn, authz, privileged, signing_key, roles, kek */
    [HF_CSE_OP_WRAP] = {"wrap", "POST", false, true, true, false, false, roles_wrap,
                        HF_CSE_KEK_WRAP},
    [HF_CSE_OP_UNWRAP] = {"unwrap", "POST", false, true, true, false, false, roles_read,
                          HF_CSE_KEK_UNWRAP},
    [HF_CSE_OP_PRIVILEGEDWRAP] = {"privilegedwrap", "POST", false, true, false, true, false, NULL,
                                  HF_CSE_KEK_WRAP},
    [HF_CSE_OP_PRIVILEGEDUNWRAP] = {"privilegedunwrap", "POST", false, true, false, true, false,
                                    NULL, HF_CSE_KEK_UNWRAP},
    [HF_CSE_OP_DIGEST] = {"digest", "POST", false, false, true, false, false, roles_digest,
                          HF_CSE_KEK_UNWRAP},
    /* rewrap opens the peer's key elsewhere and seals it under ours. */
    [HF_CSE_OP_REWRAP] = {"rewrap", "POST", false, false, true, false, true, roles_rewrap,
                          HF_CSE_KEK_WRAP},
    [HF_CSE_OP_DELEGATE] = {"delegate", "POST", false, true, true, false, true, roles_read,
                            HF_CSE_KEK_NONE},
    [HF_CSE_OP_STATUS] = {"status", "GET", false, false, false, false, false, NULL,
                          HF_CSE_KEK_NONE},
    [HF_CSE_OP_CERTS] = {"certs", "GET", false, false, false, false, false, NULL, HF_CSE_KEK_NONE},
    [HF_CSE_OP_PRIVATEKEYDECRYPT] = {"privatekeydecrypt", "POST", true, true, true, false, false,
                                     roles_decrypt, HF_CSE_KEK_UNWRAP},
    [HF_CSE_OP_PRIVILEGEDPRIVATEKEYDECRYPT] = {"privilegedprivatekeydecrypt", "POST", true, true,
                                               false, true, false, NULL, HF_CSE_KEK_UNWRAP},
    [HF_CSE_OP_PRIVATEKEYSIGN] = {"privatekeysign", "POST", true, true, true, false, false,
                                  roles_sign, HF_CSE_KEK_UNWRAP},
    [HF_CSE_OP_WRAPPRIVATEKEY] = {"wrapprivatekey", "POST", true, true, false, true, false, NULL,
                                  HF_CSE_KEK_WRAP},
};

const struct hf_cse_op_info *hf_cse_op_info(enum hf_cse_op op)
{
    return (unsigned)op < HF_CSE_OP_COUNT ? &ops[op] : NULL;
}

bool hf_cse_op_find(const char *name, enum hf_cse_op *op)
{
    if (name == NULL || op == NULL) return false;
    for (unsigned i = 0; i < HF_CSE_OP_COUNT; i++)
        if (strcmp(name, ops[i].name) == 0) {
            *op = (enum hf_cse_op)i;
            return true;
        }
    return false;
}

/* ---- the fields ------------------------------------------------------------------------------ */

enum field_kind { FK_STRING, FK_BASE64, FK_INT };

enum field_id {
    F_AUTHENTICATION,
    F_AUTHORIZATION,
    F_REASON,
    F_KEY,
    F_WRAPPED_KEY,
    F_RESOURCE_NAME,
    F_PERIMETER_ID,
    F_ORIGINAL_KACLS_URL,
    F_ALGORITHM,
    F_EDEK,
    F_RSA_OAEP_LABEL,
    F_WRAPPED_PRIVATE_KEY,
    F_SPKI_HASH,
    F_SPKI_HASH_ALGORITHM,
    F_DIGEST,
    F_RSA_PSS_SALT_LENGTH,
    F_PRIVATE_KEY,
    F_COUNT
};

struct field {
    const char *name;
    enum field_kind kind;
    size_t max; /* bytes: decoded for base64 */
    size_t off; /* its struct hf_cse_string or hf_cse_bytes in struct hf_cse_request */
};

#define FIELD(id, n, k, m) [id] = {#n, k, m, offsetof(struct hf_cse_request, n)}
/* The spec's "Sizes"; the ones it leaves open (original_kacls_url, algorithm, spki_hash*,
 * rsa_oaep_label) get the nearest of its caps. */
static const struct field fields[F_COUNT] = {
    FIELD(F_AUTHENTICATION, authentication, FK_STRING, HF_CSE_JWT_MAX),
    FIELD(F_AUTHORIZATION, authorization, FK_STRING, HF_CSE_JWT_MAX),
    FIELD(F_REASON, reason, FK_STRING, HF_CSE_MEDIUM_MAX),
    FIELD(F_KEY, key, FK_BASE64, HF_CSE_SMALL_MAX),
    FIELD(F_WRAPPED_KEY, wrapped_key, FK_BASE64, HF_CSE_MEDIUM_MAX),
    FIELD(F_RESOURCE_NAME, resource_name, FK_STRING, HF_CSE_SMALL_MAX),
    FIELD(F_PERIMETER_ID, perimeter_id, FK_STRING, HF_CSE_SMALL_MAX),
    FIELD(F_ORIGINAL_KACLS_URL, original_kacls_url, FK_STRING, HF_CSE_MEDIUM_MAX),
    FIELD(F_ALGORITHM, algorithm, FK_STRING, HF_CSE_SMALL_MAX),
    FIELD(F_EDEK, encrypted_data_encryption_key, FK_BASE64, HF_CSE_MEDIUM_MAX),
    FIELD(F_RSA_OAEP_LABEL, rsa_oaep_label, FK_BASE64, HF_CSE_MEDIUM_MAX),
    FIELD(F_WRAPPED_PRIVATE_KEY, wrapped_private_key, FK_BASE64, HF_CSE_PK_MAX),
    FIELD(F_SPKI_HASH, spki_hash, FK_STRING, HF_CSE_SMALL_MAX),
    FIELD(F_SPKI_HASH_ALGORITHM, spki_hash_algorithm, FK_STRING, HF_CSE_SMALL_MAX),
    FIELD(F_DIGEST, digest, FK_BASE64, HF_CSE_SMALL_MAX),
    FIELD(F_RSA_PSS_SALT_LENGTH, rsa_pss_salt_length, FK_INT, 0),
    FIELD(F_PRIVATE_KEY, private_key, FK_BASE64, HF_CSE_PK_MAX),
};

#define B(f) (1u << (f))
#define AUTH_BOTH (B(F_AUTHENTICATION) | B(F_AUTHORIZATION))

/* The fields each op requires, and the optional ones it also reads (spec, "Operations"). */
static const struct {
    unsigned required, optional;
} op_fields[HF_CSE_OP_COUNT] = {
    [HF_CSE_OP_WRAP] = {AUTH_BOTH | B(F_KEY), B(F_REASON)},
    [HF_CSE_OP_UNWRAP] = {AUTH_BOTH | B(F_WRAPPED_KEY), B(F_REASON)},
    [HF_CSE_OP_PRIVILEGEDWRAP] = {B(F_AUTHENTICATION) | B(F_KEY) | B(F_RESOURCE_NAME),
                                  B(F_PERIMETER_ID) | B(F_REASON)},
    [HF_CSE_OP_PRIVILEGEDUNWRAP] = {B(F_AUTHENTICATION) | B(F_WRAPPED_KEY) | B(F_RESOURCE_NAME),
                                    B(F_REASON)},
    [HF_CSE_OP_DIGEST] = {B(F_AUTHORIZATION) | B(F_WRAPPED_KEY), B(F_REASON)},
    [HF_CSE_OP_REWRAP] = {B(F_AUTHORIZATION) | B(F_ORIGINAL_KACLS_URL) | B(F_WRAPPED_KEY),
                          B(F_REASON)},
    [HF_CSE_OP_DELEGATE] = {AUTH_BOTH, B(F_REASON)},
    [HF_CSE_OP_STATUS] = {0, 0},
    [HF_CSE_OP_CERTS] = {0, 0},
    [HF_CSE_OP_PRIVATEKEYDECRYPT] = {AUTH_BOTH | B(F_ALGORITHM) | B(F_EDEK) |
                                         B(F_WRAPPED_PRIVATE_KEY),
                                     B(F_RSA_OAEP_LABEL) | B(F_REASON)},
    [HF_CSE_OP_PRIVILEGEDPRIVATEKEYDECRYPT] = {B(F_AUTHENTICATION) | B(F_ALGORITHM) | B(F_EDEK) |
                                                   B(F_WRAPPED_PRIVATE_KEY) | B(F_SPKI_HASH) |
                                                   B(F_SPKI_HASH_ALGORITHM),
                                               B(F_RSA_OAEP_LABEL) | B(F_REASON)},
    [HF_CSE_OP_PRIVATEKEYSIGN] = {AUTH_BOTH | B(F_ALGORITHM) | B(F_DIGEST) |
                                      B(F_WRAPPED_PRIVATE_KEY),
                                  B(F_RSA_PSS_SALT_LENGTH) | B(F_REASON)},
    /* No reason (spec). */
    [HF_CSE_OP_WRAPPRIVATEKEY] = {B(F_AUTHENTICATION) | B(F_PERIMETER_ID) | B(F_PRIVATE_KEY), 0},
};

/* A JSON integer member (rsa_pss_salt_length): 0..1024, more than any RSA key's hash room. */
static enum hf_status int_get(const struct json_object *obj, const struct field *f, bool required,
                              int64_t *out, bool *present, char *why, size_t whylen)
{
    struct json_object *v = NULL;

    if (!json_object_object_get_ex(obj, f->name, &v)) {
        if (!required) return HF_STATUS_OK;
        snprintf(why, whylen, "%s is required", f->name);
        return HF_STATUS_BAD_REQUEST;
    }
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
        json_object_get_int64(v) > 1024) {
        snprintf(why, whylen, "%s must be an integer from 0 to 1024", f->name);
        return HF_STATUS_BAD_REQUEST;
    }
    *out = json_object_get_int64(v);
    *present = true;
    return HF_STATUS_OK;
}

static enum hf_status field_get(const struct json_object *obj, const struct field *f, bool required,
                                struct hf_cse_request *out, char *why, size_t whylen)
{
    char *slot = (char *)out + f->off;
    struct hf_cse_string *str = (struct hf_cse_string *)slot;
    struct hf_cse_bytes *bytes = (struct hf_cse_bytes *)slot;
    enum hf_status st;

    switch (f->kind) {
    case FK_STRING:
        return hf_json_member_string(obj, "", f->name, required, f->max, HF_STATUS_BAD_REQUEST,
                                     &str->s, &str->len, why, whylen);
    case FK_BASE64:
        st = hf_json_member_base64(obj, f->name, required, false, f->max, HF_STATUS_BAD_REQUEST,
                                   &bytes->data, &bytes->len, why, whylen);
        bytes->present = st == HF_STATUS_OK && bytes->data != NULL;
        return st;
    case FK_INT:
        return int_get(obj, f, required, &out->rsa_pss_salt_length,
                       &out->rsa_pss_salt_length_present, why, whylen);
    }
    return HF_STATUS_INTERNAL;
}

enum hf_status hf_cse_request_parse(enum hf_cse_op op, const unsigned char *body, size_t len,
                                    struct hf_cse_request *out, char *why, size_t whylen)
{
    unsigned required, wanted;
    enum hf_status st;

    if (out == NULL || why == NULL || whylen == 0 || (unsigned)op >= HF_CSE_OP_COUNT)
        return HF_STATUS_INTERNAL;
    memset(out, 0, sizeof(*out));
    out->op = op;
    why[0] = '\0';
    if (len > HF_CSE_BODY_MAX) {
        snprintf(why, whylen, "the body is over %u bytes", HF_CSE_BODY_MAX);
        return HF_STATUS_TOO_LARGE;
    }
    if (body == NULL || len == 0) {
        snprintf(why, whylen, "the body is empty: a JSON object is required");
        return HF_STATUS_BAD_REQUEST;
    }
    st = hf_json_parse(body, len, HF_CSE_BODY_MAX, 0, &out->root, why, whylen);
    if (st == HF_STATUS_UNSUPPORTED) st = HF_STATUS_TOO_LARGE;
    if (st != HF_STATUS_OK) return st;
    if (!json_object_is_type(out->root, json_type_object)) {
        snprintf(why, whylen, "the body must be a JSON object");
        return HF_STATUS_BAD_REQUEST;
    }
    required = op_fields[op].required;
    wanted = required | op_fields[op].optional;
    for (unsigned i = 0; i < F_COUNT; i++) {
        if (!(wanted & B(i))) continue;
        st = field_get(out->root, &fields[i], (required & B(i)) != 0, out, why, whylen);
        if (st != HF_STATUS_OK) return st;
    }
    return HF_STATUS_OK;
}

void hf_cse_request_clear(struct hf_cse_request *r)
{
    if (r == NULL) return;
    for (unsigned i = 0; i < F_COUNT; i++) {
        struct hf_cse_bytes *b = (struct hf_cse_bytes *)((char *)r + fields[i].off);
        /* Keys and private keys: cleansed, with their base64 in the tree below. */
        if (fields[i].kind == FK_BASE64 && b->data != NULL) OPENSSL_clear_free(b->data, b->len);
    }
    hf_json_put_wiped(r->root);
    memset(r, 0, sizeof(*r));
}
