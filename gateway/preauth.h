/* Requests refused before authentication: counted, not recorded one by one.
 *
 * A 404, 405 or 413 from the gateway, and any failure of a plugin before it called
 * hf_request_set_authenticated, costs no audit record of its own and no wait: it is counted in a
 * bounded table keyed by (source address, API, error name), and one thread writes one summary
 * record per key per interval (count, first and last time, a sample request) through the vendor
 * interface's HF_AuditSummary, which may not use the audit log's free-space reserve. So an
 * anonymous flood costs memory bounded by the table and a few records per interval, and can
 * neither fill the disk nor hold a worker thread. A summary that cannot be written (under the
 * reserve) stays counted and is written at a later interval; at stop, what is left is written. */
#ifndef HF_GATEWAY_PREAUTH_H
#define HF_GATEWAY_PREAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "gateway/request.h"

#define HF_GW_PREAUTH_INTERVAL_MS 10000
#define HF_GW_PREAUTH_SOURCES 4096

/* Starts the summary thread: a summary per key every interval_ms; at most max_keys keys, the
 * rest counted together in one overflow key. */
bool hf_gw_preauth_start(unsigned interval_ms, size_t max_keys);
/* Writes what is counted and stops the thread. */
void hf_gw_preauth_stop(void);

/* Whether req (settled: failed, with its error name) was refused before authentication. */
bool hf_gw_preauth_is_refusal(const struct hf_request *req);
/* Counts req, a refusal before authentication. Never blocks on I/O. */
void hf_gw_preauth_count(const struct hf_request *req);
/* Counts a connection the gateway closed unanswered before any request was authenticated
 * (reason "HeaderTimeout": its headers were late; "SlowBody": its upload ran under the floor).
 * peer may be NULL (counted as "unknown"). Never blocks on I/O. */
void hf_gw_preauth_count_cut(const struct sockaddr *peer, const char *reason);
/* Writes a summary of every key now (tests, stop). */
void hf_gw_preauth_flush(void);

#endif /* HF_GATEWAY_PREAUTH_H */
