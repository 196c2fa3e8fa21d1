/* libFuzzer target for gateway/plugins/gws-cse/request.c: the CSE body parser of every op, on
 * arbitrary bytes.
 *
 * Input: the first byte picks the op (modulo HF_CSE_OP_COUNT); the rest is the body. Besides
 * "no crash, no leak, no UB", it checks what the checks and handlers rely on for an accepted
 * body: every field the op requires is there, every field within the spec's cap, strings
 * without NUL, and a refusal says why in printable ASCII with one of the op's statuses. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/request.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_string(const struct hf_cse_string *s, size_t cap)
{
    if (s->s != NULL && (s->len > cap || strlen(s->s) != s->len)) abort();
}

static void check_bytes(const struct hf_cse_bytes *b, size_t cap)
{
    if (b->present ? b->data == NULL || b->len > cap : b->data != NULL) abort();
}

static void check_accepted(const struct hf_cse_request *r)
{
    const struct hf_cse_op_info *info = hf_cse_op_info(r->op);

    if (info->authn && r->authentication.s == NULL) abort();
    if (info->authz && r->authorization.s == NULL) abort();
    check_string(&r->authentication, HF_CSE_JWT_MAX);
    check_string(&r->authorization, HF_CSE_JWT_MAX);
    check_string(&r->reason, HF_CSE_MEDIUM_MAX);
    check_string(&r->resource_name, HF_CSE_SMALL_MAX);
    check_string(&r->perimeter_id, HF_CSE_SMALL_MAX);
    check_bytes(&r->key, HF_CSE_SMALL_MAX);
    check_bytes(&r->wrapped_key, HF_CSE_MEDIUM_MAX);
    check_bytes(&r->digest, HF_CSE_SMALL_MAX);
    check_bytes(&r->encrypted_data_encryption_key, HF_CSE_MEDIUM_MAX);
    check_bytes(&r->wrapped_private_key, HF_CSE_PK_MAX);
    check_bytes(&r->private_key, HF_CSE_PK_MAX);
    if ((r->op == HF_CSE_OP_WRAP || r->op == HF_CSE_OP_PRIVILEGEDWRAP) && !r->key.present) abort();
    if ((r->op == HF_CSE_OP_UNWRAP || r->op == HF_CSE_OP_DIGEST) && !r->wrapped_key.present)
        abort();
    if (r->rsa_pss_salt_length_present &&
        (r->rsa_pss_salt_length < 0 || r->rsa_pss_salt_length > 1024))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hf_cse_request r;
    enum hf_cse_op op;
    char why[256];
    enum hf_status st;

    if (size == 0) return 0;
    op = (enum hf_cse_op)(data[0] % HF_CSE_OP_COUNT);
    st = hf_cse_request_parse(op, data + 1, size - 1, &r, why, sizeof(why));
    if (st == HF_STATUS_OK) {
        check_accepted(&r);
    } else {
        if (st != HF_STATUS_BAD_REQUEST && st != HF_STATUS_TOO_LARGE && st != HF_STATUS_INTERNAL)
            abort();
        if (why[0] == '\0') abort();
        for (const char *p = why; *p; p++)
            if (*p < 0x20 || *p > 0x7e) abort();
    }
    hf_cse_request_clear(&r);
    return 0;
}
