/* The HTTP(S) side of holdfastd: one libmicrohttpd daemon per listener (epoll, a thread pool,
 * HTTP/1.1 keep-alive, suspend/resume), the request life cycle (route, limits, handler, audit,
 * response), /healthz and /metrics. */
#ifndef HF_GATEWAY_SERVER_H
#define HF_GATEWAY_SERVER_H

#include "gateway/config.h"

/* Starts every listener of cfg (TLS ones need hf_gw_tls_setup first). */
bool hf_gw_server_start(const struct hf_gw_config *cfg, char *err, size_t errlen);
/* From now on /healthz answers 503 {"status":"draining"} and every answer closes its
 * connection, so a balancer's checks and keep-alive clients move to other nodes, while every
 * request that still comes is served as before (SIGTERM, before hf_gw_server_stop). */
void hf_gw_server_drain(void);
/* Stops accepting, lets requests waiting for their audit record finish (up to timeout_ms), and
 * stops the daemons. */
void hf_gw_server_stop(unsigned timeout_ms);

#endif /* HF_GATEWAY_SERVER_H */
