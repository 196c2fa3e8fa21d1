/* base64url as JWS writes it (RFC 7515 section 2): the URL-safe alphabet, no padding. */
#ifndef HF_GATEWAY_B64URL_H
#define HF_GATEWAY_B64URL_H

#include <stdbool.h>
#include <stddef.h>

/* Decodes in[0..len) into a new buffer (*out, free(); NUL-terminated for JSON segments) of
 * *outlen bytes. false for padding, whitespace, the standard alphabet, a length no encoding has,
 * non-zero left-over bits, or more than max_out bytes. */
bool hf_b64url_decode(const char *in, size_t len, size_t max_out, unsigned char **out,
                      size_t *outlen);

#endif /* HF_GATEWAY_B64URL_H */
