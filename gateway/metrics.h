/* /metrics in the Prometheus text format (version 0.0.4): requests by API, operation and HTTP
 * status, latency histograms by API and operation, key-source health, reloads, in-flight
 * requests. Counting is lock-free (atomics); only registering a series and rendering lock. */
#ifndef HF_GATEWAY_METRICS_H
#define HF_GATEWAY_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkcs11/module/holdfast.h"

struct hf_gw_series; /* one (api, operation): lives until hf_gw_metrics_shutdown */

/* The series of (api, operation), made on first call. NULL if out of memory. */
struct hf_gw_series *hf_gw_metrics_series(const char *api, const char *operation);
void hf_gw_metrics_observe(struct hf_gw_series *series, unsigned http_status, uint64_t latency_us);

void hf_gw_metrics_reload_count(bool ok);
void hf_gw_metrics_audit_failure(void);
void hf_gw_metrics_inflight_add(int delta);
void hf_gw_metrics_audit_waiting_add(int delta);
void hf_gw_metrics_preauth_refused(void);
/* A summary record of refused requests: written, or refused (under the audit reserve). */
void hf_gw_metrics_preauth_summary(bool written);

/* The whole page, new (free()); key_source_up is the health probe's answer, audit (NULL: not
 * known) the audit log's space. */
char *hf_gw_metrics_render(bool key_source_up, const HF_AUDIT_STATUS *audit, size_t *len);
void hf_gw_metrics_shutdown(void);

#endif /* HF_GATEWAY_METRICS_H */
