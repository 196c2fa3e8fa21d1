/* holdfastd's log: one JSON object per line, to stderr or a file (reopened on SIGHUP, for
 * logrotate). One line per request (time, request id, API, operation, method, path, status,
 * error name, latency, key, caller, cloud request id); never a body, a secret or a plaintext.
 * Events (start, reload, errors) are lines too, with "level" and "msg".
 *
 * Events are written at once. Request lines gather in memory and are written within
 * HF_GW_LOG_FLUSH_MS (or when 64 KiB have gathered): a write() per request cost ~12% of an XKS
 * encrypt. A killed gateway may therefore lose its last request lines, never an audit record:
 * the audit log is the durable account of every request, this log is for operators. */
#ifndef HF_GATEWAY_LOG_H
#define HF_GATEWAY_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hf_request;

#define HF_GW_LOG_FLUSH_MS 100

/* path NULL, "-" or "stderr": standard error. Opens (or reopens) the log. */
bool hf_gw_log_open(const char *path, char *err, size_t errlen);
/* Writes the request lines gathered so far, stops the flusher and closes the log. */
void hf_gw_log_close(void);

void hf_gw_log_request(const struct hf_request *req, unsigned http_status, const char *error_name,
                       uint64_t latency_us);
void hf_gw_log_event(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define hf_gw_log_info(...) hf_gw_log_event("info", __VA_ARGS__)
#define hf_gw_log_warn(...) hf_gw_log_event("warn", __VA_ARGS__)
#define hf_gw_log_error(...) hf_gw_log_event("error", __VA_ARGS__)

#endif /* HF_GATEWAY_LOG_H */
