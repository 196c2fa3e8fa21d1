/* Operations and hooks other helpers write, answering 501 until they do: each deletes its stub
 * here as it adds its own file. Nothing else lives in this file. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

static enum hf_status not_yet(struct hf_cse_call *call, struct hf_request *req)
{
    return hf_request_fail(req, HF_STATUS_UNSUPPORTED, "%s is not served yet", call->info->name);
}

/* cse-mint */
enum hf_status hf_cse_rewrap(struct hf_cse_call *call, struct hf_request *req)
{
    return not_yet(call, req);
}

enum hf_status hf_cse_delegate(struct hf_cse_call *call, struct hf_request *req)
{
    return not_yet(call, req);
}

enum hf_status hf_cse_certs(struct hf_cse_call *call, struct hf_request *req)
{
    return not_yet(call, req);
}

bool hf_cse_tokens_start_own(const struct hf_cse_prefix *px, struct hf_cse_prefix_rt *rt, char *err,
                             size_t errlen)
{
    (void)px;
    (void)rt;
    (void)err;
    (void)errlen;
    return true;
}

void hf_cse_tokens_stop_own(struct hf_cse_prefix_rt *rt)
{
    (void)rt;
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
