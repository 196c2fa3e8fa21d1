/* Finding or writing a request's one audit record (audit.h). */
#include "hf-build.h"

#include "gateway/audit.h"
#include "gateway/log.h"
#include "gateway/p11.h"
#include "gateway/preauth.h"

#include <stdio.h>
#include <stdlib.h>

bool hf_gw_audit_record(struct hf_request *req, bool success_events, CK_ULONG_LONG *seq)
{
    const HF_FUNCTION_LIST *v = hf_p11_vendor();
    char detail[512], *fields;
    CK_ULONG_LONG now = 0;
    HF_REQUEST_CONTEXT ctx;
    CK_RV rv;

    *seq = 0;
    /* plugin.h: an answer no auditor needs (a preflight, a public key set) is neither recorded
     * nor summarised, so a flood of them cannot fill the log. A key operation it ran anyway
     * has the core's record, waited for below. */
    if (req->unaudited && !req->authenticated && !req->p11_began) return true;
    if (hf_gw_preauth_is_refusal(req)) {
        /* Counted, summarised later: nothing to wait for, so the answer leaves at once. */
        hf_gw_preauth_count(req);
        return true;
    }
    if (!v) return true; /* another vendor's module: it keeps no audit of ours */
    if (req->p11_began && v->HF_GetLastAuditSeq(req->p11_session, &now) == CKR_OK &&
        now > req->seq_before) {
        *seq = now; /* the key operation's record is the request's */
        /* Unless the request was refused after it (CSE: a blob bound to another resource,
         * which only its opening shows): that record says ok, so the refusal gets one too. A
         * key operation that failed (a bad tag) has the request's failure on record already. */
        if (!req->failed || hf_gw_p11_last_record_failed(req->p11_session)) return true;
    }
    if (!req->failed) {
        /* A key operation that succeeded without a record: the core's success events are off.
         * A success without a key operation: ours may be. */
        if (req->p11_began || !success_events) return true;
    }
    if (!hf_gw_p11_has_audit_request()) {
        hf_gw_log_warn("audit: the PKCS#11 module cannot record request %s (no HF_AuditRequest)",
                       req->id);
        return true;
    }
    if (req->failed)
        snprintf(detail, sizeof(detail), "%s: %s", req->error_name ? req->error_name : "Error",
                 req->message);
    ctx = (HF_REQUEST_CONTEXT){
        .api = req->api,
        .operation = req->operation,
        .caller = req->caller,
        .request_id = req->cloud_request_id ? req->cloud_request_id : req->id,
        .link_type = req->link_type,
        .link_id = req->link_id,
        .detail = req->failed ? detail : NULL,
        .received_us = req->received_us,
    };
    fields = hf_gw_audit_fields_json(req);
    rv = hf_gw_p11_audit_request(&ctx, fields,
                                 req->failed ? hf_gw_ckr_from_status(req->status) : CKR_OK, seq);
    free(fields);
    if (rv != CKR_OK) {
        hf_gw_log_error("audit: cannot record request %s: 0x%lx", req->id, (unsigned long)rv);
        *seq = 0;
        return false;
    }
    return true;
}
