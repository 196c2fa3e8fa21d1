/* Operations and hooks other helpers write, answering 501 until they do: each deletes its stub
 * here as it adds its own file. Nothing else lives in this file. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

#include <string.h>

static enum hf_status not_yet(struct hf_cse_call *call, struct hf_request *req)
{
    return hf_request_fail(req, HF_STATUS_UNSUPPORTED, "%s is not served yet", call->info->name);
}

/* cse-gmail */
enum hf_status hf_cse_privatekeydecrypt(struct hf_cse_call *call, struct hf_request *req)
{
    return not_yet(call, req);
}

enum hf_status hf_cse_privilegedprivatekeydecrypt(struct hf_cse_call *call, struct hf_request *req)
{
    return not_yet(call, req);
}

enum hf_status hf_cse_privatekeysign(struct hf_cse_call *call, struct hf_request *req)
{
    return not_yet(call, req);
}

enum hf_status hf_cse_wrapprivatekey(struct hf_cse_call *call, struct hf_request *req)
{
    return not_yet(call, req);
}

/* cse-core, in progress */
enum hf_status hf_cse_wrap(struct hf_cse_call *call, struct hf_request *req)
{
    return not_yet(call, req);
}

enum hf_status hf_cse_unwrap(struct hf_cse_call *call, struct hf_request *req)
{
    return not_yet(call, req);
}

enum hf_status hf_cse_privilegedwrap(struct hf_cse_call *call, struct hf_request *req)
{
    return not_yet(call, req);
}

enum hf_status hf_cse_privilegedunwrap(struct hf_cse_call *call, struct hf_request *req)
{
    return not_yet(call, req);
}

enum hf_status hf_cse_digest(struct hf_cse_call *call, struct hf_request *req)
{
    return not_yet(call, req);
}

enum hf_status hf_cse_status(struct hf_cse_call *call, struct hf_request *req)
{
    return not_yet(call, req);
}

enum hf_status hf_cse_call_begin(struct hf_cse_state *state, const struct hf_cse_prefix *px,
                                 enum hf_cse_op op, struct hf_request *req,
                                 struct hf_cse_call *call)
{
    memset(call, 0, sizeof(*call));
    call->state = state;
    call->px = px;
    call->op = op;
    call->info = hf_cse_op_info(op);
    return not_yet(call, req);
}

void hf_cse_call_end(struct hf_cse_call *call)
{
    (void)call;
}

bool hf_cse_tokens_start(const struct hf_cse_prefix *px, struct hf_cse_prefix_rt *rt, char *err,
                         size_t errlen)
{
    (void)px;
    (void)rt;
    (void)err;
    (void)errlen;
    return true;
}

void hf_cse_tokens_stop(struct hf_cse_prefix_rt *rt)
{
    (void)rt;
}
