/* Strict JWS base64url: the text is mapped onto the standard alphabet and padded, then decoded
 * by hf_base64_decode, which does the coding (OpenSSL) and refuses non-canonical pad bits. */
#include "hf-build.h"

#include "gateway/b64url.h"
#include "gateway/plugin.h"

#include <stdlib.h>
#include <string.h>

static bool is_url_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

bool hf_b64url_decode(const char *in, size_t len, size_t max_out, unsigned char **out,
                      size_t *outlen)
{
    size_t padded = (len + 3) / 4 * 4, n = 0;
    unsigned char *buf = NULL;
    char *std = NULL;
    bool ok = false;

    *out = NULL;
    *outlen = 0;
    if (len % 4 == 1 || len / 4 * 3 > max_out + 2) return false;
    if (!(std = malloc(padded + 1)) || !(buf = malloc(padded / 4 * 3 + 1))) goto done;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];

        if (!is_url_char(c)) goto done;
        std[i] = c == '-' ? '+' : c == '_' ? '/' : (char)c;
    }
    memset(std + len, '=', padded - len);
    if (!hf_base64_decode(std, padded, buf, &n) || n > max_out) goto done;
    buf[n] = '\0';
    *out = buf;
    *outlen = n;
    buf = NULL;
    ok = true;
done:
    free(std);
    free(buf);
    return ok;
}
