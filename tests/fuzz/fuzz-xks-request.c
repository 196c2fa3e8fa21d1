/* libFuzzer target for gateway/plugins/aws-xks/request.c: the XKS request body parser of every
 * operation, on arbitrary bytes.
 *
 * Input: the first byte picks the operation (metadata, encrypt, decrypt, health: its value
 * modulo 4); the rest is the body. Small caps make the "over the cap" paths reachable.
 *
 * Besides "no crash, no leak, no UB", it checks what the handlers rely on for every accepted
 * body: the sizes are within the caps and the spec's limits, required fields are there, and a
 * refusal always says why in printable ASCII (the error body carries it). */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/request.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_accepted(const struct hf_xks_request *r, const struct hf_xks_caps *caps)
{
    const struct hf_xks_request_metadata *md = &r->md;

    if (md->kms_request_id == NULL || md->kms_operation == NULL) abort();
    if (r->op != HF_XKS_OP_HEALTH && md->aws_principal_arn == NULL) abort();
    if ((r->op == HF_XKS_OP_ENCRYPT || r->op == HF_XKS_OP_DECRYPT) && md->kms_key_arn == NULL)
        abort();
    if (r->input.len > caps->max_plaintext || r->aad.len > caps->max_aad) abort();
    if (r->op == HF_XKS_OP_ENCRYPT && !r->input.present) abort();
    if (r->op == HF_XKS_OP_DECRYPT) {
        if (!r->input.present || (r->iv_len != 12 && r->iv_len != 16)) abort();
        if (r->cm.len > HF_XKS_CM_SPEC_MAX) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct hf_xks_caps caps = {64, 64};
    struct hf_xks_request r;
    char why[256];
    enum hf_status st;

    if (size == 0) return 0;
    st = hf_xks_request_parse((enum hf_xks_op)(data[0] % 4), data + 1, size - 1, &caps, &r, why,
                              sizeof(why));
    if (st == HF_STATUS_OK) {
        check_accepted(&r, &caps);
        hf_xks_request_clear(&r);
        return 0;
    }
    if (st != HF_STATUS_BAD_REQUEST && st != HF_STATUS_UNSUPPORTED) abort();
    if (why[0] == '\0' || r.root != NULL || r.input.data != NULL) abort();
    for (const char *p = why; *p; p++)
        if (*p < 0x20 || *p > 0x7e) abort();
    return 0;
}
