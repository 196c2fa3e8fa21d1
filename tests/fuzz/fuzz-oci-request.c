/* libFuzzer target for gateway/plugins/oci-ekms/request.c: the EKMS path rules, the request
 * body parser (every operation) and the token scope rule, on arbitrary bytes.
 *
 * Input: the first byte's low three bits pick the operation, bits 3 and 4 what the rest is: a
 * body (0), a path (1), token claims for the scope rule (2). Besides "no crash, no leak, no
 * UB", it checks what the handlers rely on: an accepted body holds its required fields within
 * the spec's sizes; a parsed path's ids fit and its operation has a method; a refusal says why
 * in printable ASCII. */
#include "hf-build.h"

#include "gateway/plugins/oci-ekms/request.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_accepted(const struct hf_oci_request *r)
{
    switch (r->op) {
    case HF_OCI_OP_ENCRYPT:
        if (!r->plaintext.present || r->plaintext.len == 0 ||
            r->plaintext.len > HF_OCI_PLAINTEXT_MAX)
            abort();
        break;
    case HF_OCI_OP_DECRYPT:
        if (!r->ciphertext.present || r->ciphertext.len > HF_OCI_CIPHERTEXT_MAX) abort();
        break;
    case HF_OCI_OP_VAULT_RANDOM:
    case HF_OCI_OP_KEY_RANDOM:
        if (r->length < 1 || r->length > HF_OCI_RANDOM_MAX) abort();
        break;
    default:
        if (r->root != NULL) abort(); /* GET routes read no body */
    }
    if (r->aad.present ? r->aad.data == NULL || r->aad.len > HF_OCI_AAD_MAX : r->aad.len != 0)
        abort();
}

static void check_why(const char *why)
{
    if (why[0] == '\0') abort();
    for (const char *p = why; *p; p++)
        if (*p < 0x20 || *p > 0x7e) abort();
}

static char *text(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);

    if (s == NULL) return NULL;
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

static void check_path(const uint8_t *data, size_t size)
{
    static const char *const prefixes[] = {"", "/api/v1/cckm/oci/ekm/v1"};
    char *path = text(data, size);
    struct hf_oci_target t;

    if (path == NULL) return;
    for (size_t i = 0; i < 2; i++) {
        bool ours = hf_oci_path_parse(path, prefixes[i], &t);
        if (!ours && t.op != HF_OCI_OP_NONE) abort();
        if (t.op != HF_OCI_OP_NONE && (hf_oci_op_method(t.op) == NULL || !strstr(path, "/vaults/")))
            abort();
        if (strlen(t.vault_id) > HF_OCI_ID_MAX || strlen(t.key_id) > HF_OCI_ID_MAX ||
            strlen(t.version_id) > HF_OCI_ID_MAX)
            abort();
    }
    free(path);
}

static void check_scope(enum hf_oci_op op, const uint8_t *data, size_t size)
{
    static const char *const auds[] = {"https://10.0.0.31/", "https://hf.test"};
    struct json_object *claims = NULL;
    char why[256];

    if (hf_json_parse(data, size, 0, 0, &claims, why, sizeof(why)) != HF_STATUS_OK) return;
    (void)hf_oci_scope_allows(claims, op, auds, 2);
    json_object_put(claims);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hf_oci_request r;
    enum hf_oci_op op;
    char why[256] = "";
    enum hf_status st;

    if (size == 0) return 0;
    op = (enum hf_oci_op)(data[0] & 7);
    switch ((data[0] >> 3) & 3) {
    case 1:
        check_path(data + 1, size - 1);
        return 0;
    case 2:
        check_scope(op, data + 1, size - 1);
        return 0;
    default:
        break;
    }
    st = hf_oci_request_parse(op, data + 1, size - 1, &r, why, sizeof(why));
    if (st == HF_STATUS_OK)
        check_accepted(&r);
    else
        check_why(why);
    hf_oci_request_clear(&r);
    return 0;
}
