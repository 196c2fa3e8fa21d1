/* Operations and hooks other helpers write, answering 501 until they do: each deletes its stub
 * here as it adds its own file. Nothing else lives in this file. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

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
