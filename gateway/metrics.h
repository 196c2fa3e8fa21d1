/* /metrics in the Prometheus text format (version 0.0.4): requests by API, operation and HTTP
 * status, latency histograms by API and operation with buckets around each API's latency
 * limit, the calls answered within that limit per API (a counter and the share since start),
 * key-source health, reloads, in-flight requests. Counting is lock-free (atomics); only registering
 * a series and rendering lock. */
#ifndef HF_GATEWAY_METRICS_H
#define HF_GATEWAY_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkcs11/module/holdfast.h"

struct hf_gw_series; /* one (api, operation): lives until hf_gw_metrics_shutdown */

/* A plugin that declares no latency limit gets KMS's for XKS. */
#define HF_GW_DEFAULT_LATENCY_LIMIT_MS 250u
#define HF_GW_MAX_LATENCY_LIMIT_MS 600000u
/* Latency buckets per series, placed around its API's limit (hf_gw_metrics_buckets). */
#define HF_GW_METRICS_NBUCKETS 14

/* The series of (api, operation), made on first call; limit_ms is the API's latency limit (the
 * first call's counts), 0 for the gateway's own endpoints, which have none (their buckets sit
 * around HF_GW_DEFAULT_LATENCY_LIMIT_MS and they count in no within-limit share). NULL if out
 * of memory. */
struct hf_gw_series *hf_gw_metrics_series(const char *api, const char *operation,
                                          unsigned limit_ms);
void hf_gw_metrics_observe(struct hf_gw_series *series, unsigned http_status, uint64_t latency_us);

void hf_gw_metrics_reload_count(bool ok);
void hf_gw_metrics_audit_failure(void);
void hf_gw_metrics_inflight_add(int delta);
void hf_gw_metrics_audit_waiting_add(int delta);
void hf_gw_metrics_preauth_refused(void);
/* A summary record of refused requests: written, or refused (under the audit reserve). */
void hf_gw_metrics_preauth_summary(bool written);

/* The histogram's upper bounds in microseconds for an API whose limit is limit_ms (0:
 * HF_GW_DEFAULT_LATENCY_LIMIT_MS; capped at HF_GW_MAX_LATENCY_LIMIT_MS), ascending: fine steps
 * far under the limit, where a healthy gateway answers, then limit/10, /4, /2, 0.8x, 1x, 1.5x,
 * 2x and 4x, so the limit is a bucket edge and the tail past it shows how far over. */
void hf_gw_metrics_buckets(unsigned limit_ms, uint64_t out_us[HF_GW_METRICS_NBUCKETS]);
/* within / total, the share of calls answered within the limit; 1 when there was no call. */
double hf_gw_metrics_ratio(unsigned long long within, unsigned long long total);

/* The whole page, new (free()); key_source_up is the health probe's answer, audit (NULL: not
 * known) the audit log's space. */
char *hf_gw_metrics_render(bool key_source_up, const HF_AUDIT_STATUS *audit, size_t *len);
/* The HSM pools' series (metrics-pool.c) for members (hf_p11_pool_status's array, pool after
 * pool), new (free()); "" for none, NULL when out of memory. Pure. */
char *hf_gw_metrics_pool_render(const HF_POOL_MEMBER_STATUS *members, size_t n, size_t *len);
/* The HSM pools' worker sets (metrics-hsm.c): n pools' names and snapshots (hsm-workers.h) as
 * text; *len its length. NULL when out of memory. */
struct hf_gw_workers_stats;
char *hf_gw_metrics_hsm_render(const char *const *pools, const struct hf_gw_workers_stats *st,
                               size_t n, size_t *len);
void hf_gw_metrics_shutdown(void);

#endif /* HF_GATEWAY_METRICS_H */
