/* CORS (spec, "Transport and CORS"): the Drive, Docs and Meet clients call the KACLS from the
 * browser, origin https://client-side-encryption.google.com (or one configured). */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

void hf_cse_cors_headers(const struct hf_cse_prefix *px, struct hf_request *req)
{
    const char *origin = hf_request_header(req, "Origin");

    /* An unlisted origin gets no CORS header at all, so the browser refuses the answer. */
    if (!hf_cse_prefix_allows_origin(px, origin)) return;
    hf_reply_header(req, "Access-Control-Allow-Origin", origin);
    hf_reply_header(req, "Vary", "Origin");
}

enum hf_status hf_cse_preflight(const struct hf_cse_prefix *px, struct hf_request *req)
{
    /* A preflight carries no credentials: nothing to audit, and a flood of them must not fill
     * the log (plugin.h, hf_request_set_unaudited). */
    hf_request_set_unaudited(req);
    hf_request_set_operation(req, "preflight");
    if (hf_cse_prefix_allows_origin(px, hf_request_header(req, "Origin"))) {
        hf_reply_header(req, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        hf_reply_header(req, "Access-Control-Allow-Headers", "content-type");
        hf_reply_header(req, "Access-Control-Max-Age", "3600");
    }
    hf_reply_empty(req, 204);
    return HF_STATUS_OK;
}
