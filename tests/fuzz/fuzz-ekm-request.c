/* libFuzzer target for gateway/plugins/gcp-ekm/request.c: the Cloud EKM body parser (wrap and
 * unwrap) and the path's verb and keyPath rules, on arbitrary bytes.
 *
 * Input: the first byte picks wrap or unwrap (its low bit) and whether the rest is a body or a
 * path (bit 1). Besides "no crash, no leak, no UB", it checks what the handlers rely on for an
 * accepted body: the input is there and within the spec's caps, the reason is a known number
 * or absent, and a refusal says why in printable ASCII starting with a request field's path
 * where it names one. */
#include "hf-build.h"

#include "gateway/plugins/gcp-ekm/kaj.h"
#include "gateway/plugins/gcp-ekm/request.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_accepted(const struct hf_ekm_request *r)
{
    size_t cap = r->op == HF_EKM_OP_WRAP ? HF_EKM_PLAINTEXT_MAX : HF_EKM_BLOB_MAX;

    if (!r->input.present || r->input.data == NULL || r->input.len > cap) abort();
    if (r->aad.present ? r->aad.data == NULL || r->aad.len > HF_EKM_AAD_MAX : r->aad.len != 0)
        abort();
    if (r->reason != HF_EKM_REASON_ABSENT && hf_ekm_reason_name(r->reason) == NULL) abort();
    if (r->key_path != NULL && strlen(r->key_path) > HF_EKM_STRING_MAX) abort();
}

static void check_path(const uint8_t *data, size_t size)
{
    char *path = malloc(size + 1);
    size_t base = 0;
    const char *verb = NULL;

    if (path == NULL) return;
    memcpy(path, data, size);
    path[size] = '\0';
    if (hf_ekm_path_verb(path, &base, &verb)) {
        if (base >= strlen(path) || path[base] != ':' || verb != path + base + 1 || *verb == '\0')
            abort();
        if (strchr(verb, '/') != NULL) abort();
    }
    if (hf_ekm_key_path_is_valid(path, strlen(path)) && (strstr(path, "//") || path[0] == '/'))
        abort();
    free(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hf_ekm_request r;
    char why[256];
    enum hf_status st;

    if (size == 0) return 0;
    if (data[0] & 2) {
        check_path(data + 1, size - 1);
        return 0;
    }
    st = hf_ekm_request_parse((data[0] & 1) ? HF_EKM_OP_UNWRAP : HF_EKM_OP_WRAP, data + 1, size - 1,
                              &r, why, sizeof(why));
    if (st == HF_STATUS_OK) {
        check_accepted(&r);
    } else {
        if (st != HF_STATUS_BAD_REQUEST && st != HF_STATUS_INTERNAL) abort();
        if (why[0] == '\0') abort();
        for (const char *p = why; *p; p++)
            if (*p < 0x20 || *p > 0x7e) abort();
    }
    hf_ekm_request_clear(&r);
    return 0;
}
