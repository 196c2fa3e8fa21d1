/* Strict standard base64 for the plugins: OpenSSL does the coding; this file only refuses what
 * RFC 4648 section 4 does not allow, which EVP_DecodeBlock would quietly accept (whitespace,
 * missing or misplaced padding, non-zero pad bits). */
#include "hf-build.h"

#include "gateway/plugin.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

HF_PLUGIN_EXPORT size_t hf_base64_decoded_max(size_t len)
{
    return len / 4 * 3;
}

static bool is_b64_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

/* Canonical form only: the bits a padded group leaves over must be zero (RFC 4648 section 3.5),
 * so every byte string has exactly one accepted encoding. */
static bool pad_bits_are_zero(unsigned char last, size_t pad)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = strchr(alphabet, last);
    unsigned v = (unsigned)(p - alphabet);

    return pad == 0 || (pad == 1 ? (v & 3) == 0 : (v & 15) == 0);
}

HF_PLUGIN_EXPORT bool hf_base64_decode(const char *in, size_t len, unsigned char *out,
                                       size_t *outlen)
{
    size_t pad = 0, i;
    int n;

    if (!in || !out || !outlen || len % 4 != 0 || len > INT_MAX) return false;
    if (len == 0) {
        *outlen = 0;
        return true;
    }
    if (in[len - 1] == '=') pad = in[len - 2] == '=' ? 2 : 1;
    for (i = 0; i < len - pad; i++)
        if (!is_b64_char((unsigned char)in[i])) return false;
    if (!pad_bits_are_zero((unsigned char)in[len - pad - 1], pad)) return false;
    n = EVP_DecodeBlock(out, (const unsigned char *)in, (int)len);
    if (n < 0 || (size_t)n < pad) return false;
    *outlen = (size_t)n - pad;
    return true;
}

HF_PLUGIN_EXPORT char *hf_base64_encode(const unsigned char *in, size_t len)
{
    size_t need;
    char *out;

    if (len > (size_t)INT_MAX / 4 * 3 - 3) return NULL;
    need = (len + 2) / 3 * 4 + 1;
    out = malloc(need);
    if (!out) return NULL;
    EVP_EncodeBlock((unsigned char *)out, in ? in : (const unsigned char *)"", (int)len);
    return out;
}
