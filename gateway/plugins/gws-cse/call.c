/* The way every POST op goes before its handler (internal.h, hf_cse_call_begin): the body
 * (check 1, 400 or 413), the tokens (check 2, 401), the prefix's rate limit (429), then checks
 * 3-10 (checks.c). */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

#include <stdio.h>
#include <string.h>

enum hf_status hf_cse_call_begin(struct hf_cse_state *state, const struct hf_cse_prefix *px,
                                 enum hf_cse_op op, struct hf_request *req,
                                 struct hf_cse_call *call)
{
    const unsigned char *body;
    size_t len = 0;
    char why[256] = "", who[160];
    enum hf_status st;

    memset(call, 0, sizeof(*call));
    call->state = state;
    call->px = px;
    call->rt = &state->rt[px - state->cfg.prefixes];
    call->op = op;
    call->info = hf_cse_op_info(op);
    body = hf_request_body(req, &len);
    if ((st = hf_cse_request_parse(op, body, len, &call->body, why, sizeof(why))) != HF_STATUS_OK)
        return hf_request_fail(req, st, "%s", why);
    if ((st = hf_cse_tokens_verify(call, req)) != HF_STATUS_OK) return st;
    snprintf(who, sizeof(who), "KACLS %s", px->name);
    if ((st = hf_request_rate_check(req, call->rt->rate, who)) != HF_STATUS_OK) return st;
    return hf_cse_checks_run(call, req);
}

void hf_cse_call_end(struct hf_cse_call *call)
{
    if (call == NULL) return;
    hf_cse_request_clear(&call->body);
    if (call->authn != NULL) hf_jwt_release(call->authn);
    if (call->authz != NULL) hf_jwt_release(call->authz);
    call->authn = call->authz = NULL;
    call->user = call->resource_name = call->perimeter_id = call->delegated_to = NULL;
}
