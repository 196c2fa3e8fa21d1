/* Outbound HTTPS (plugin.h's hf_https_request) through libcurl, and what the gateway itself
 * needs of it: the process-wide libcurl set-up, and the Cache-Control max-age of a reply (JWKS
 * refresh, gateway/jwks-source.c). */
#ifndef HF_GATEWAY_OUTBOUND_H
#define HF_GATEWAY_OUTBOUND_H

#include "gateway/plugin.h"

/* curl_global_init: once, in holdfastd's main thread before any other thread starts (libcurl
 * and OpenSSL's global state are not made thread-safely on first use). */
bool hf_outbound_global_init(void);
void hf_outbound_global_cleanup(void);

/* hf_https_request, also giving the reply's Cache-Control max-age in seconds (-1: none). */
enum hf_status hf_https_fetch(const struct hf_outbound_policy *policy, const char *method,
                              const char *url, const char *const *headers, size_t nheaders,
                              const void *req_body, size_t req_len, long *http_status, char **body,
                              size_t *body_len, long *max_age_s, char *why, size_t whylen);

#endif /* HF_GATEWAY_OUTBOUND_H */
