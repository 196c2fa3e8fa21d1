/* The one audit record of a request (plugin.h, "Audit"). The core writes it when the handler's
 * key operation ran on the session from hf_p11_begin; otherwise the gateway asks the core to
 * write it (HF_AuditRequest) from the request's outcome. The caller then waits for it to be
 * durable (server.c) before answering. A refusal before authentication has no record of its
 * own: it is counted into a summary (preauth.h) and answered at once. */
#ifndef HF_GATEWAY_AUDIT_H
#define HF_GATEWAY_AUDIT_H

#include "gateway/request.h"

/* Finds or writes req's record. *seq gets its sequence number, or 0 when there is nothing to
 * wait for (a module without the vendor interface, success events switched off). false when the
 * record could not be written: the request must then not succeed. */
bool hf_gw_audit_record(struct hf_request *req, bool success_events, CK_ULONG_LONG *seq);

/* audit-fields.c: the plugin's fields (hf_request_set_audit_field) as the compact JSON object
 * HF_SetRequestFields takes; NULL when there are none (or out of memory). Caller frees. */
char *hf_gw_audit_fields_json(const struct hf_request *req);
/* Frees them (hf_request_free). */
void hf_gw_audit_fields_clear(struct hf_request *req);

#endif /* HF_GATEWAY_AUDIT_H */
