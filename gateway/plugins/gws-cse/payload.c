/* The sealed payload's fields (payload.h): BE16 len || bytes, each. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/payload.h"

#include <stdint.h>
#include <string.h>

bool hf_cse_fields_encode(const struct hf_cse_field *f, size_t n, unsigned char *out,
                          size_t *outlen)
{
    size_t need = 0, at = 0;

    if (outlen == NULL || (f == NULL && n != 0)) return false;
    for (size_t i = 0; i < n; i++) {
        /* At most 0xffff each and a handful of fields: the sum cannot overflow. */
        if (f[i].len > HF_CSE_FIELD_MAX || (f[i].p == NULL && f[i].len != 0) || n > 16) {
            *outlen = 0;
            return false;
        }
        need += 2 + f[i].len;
    }
    if (out == NULL || *outlen < need) {
        bool asked = out == NULL;
        *outlen = need;
        return asked;
    }
    for (size_t i = 0; i < n; i++) {
        out[at++] = (unsigned char)(f[i].len >> 8);
        out[at++] = (unsigned char)f[i].len;
        if (f[i].len != 0) memcpy(out + at, f[i].p, f[i].len);
        at += f[i].len;
    }
    *outlen = need;
    return true;
}

bool hf_cse_fields_decode(const unsigned char *in, size_t len, struct hf_cse_field *f, size_t n)
{
    size_t at = 0;

    if ((in == NULL && len != 0) || (f == NULL && n != 0)) return false;
    for (size_t i = 0; i < n; i++) {
        size_t flen;

        if (len - at < 2) return false;
        flen = (size_t)in[at] << 8 | in[at + 1];
        at += 2;
        if (len - at < flen) return false;
        f[i].p = in + at;
        f[i].len = flen;
        at += flen;
    }
    /* Nothing after the last field: one payload has one reading. */
    return at == len;
}
