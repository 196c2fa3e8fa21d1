/* Base64 for the plugins: OpenSSL does the coding; this file only refuses what RFC 4648 does not
 * allow, which EVP_DecodeBlock would quietly accept (whitespace, missing or misplaced padding,
 * non-zero pad bits), and maps the URL-safe alphabet (section 5) onto the standard one. */
#include "hf-build.h"

#include "gateway/plugin.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

/* Whole groups of 3 for every started group of 4: an unpadded input decodes through its padded
 * form, whose last group OpenSSL writes out in full. */
HF_PLUGIN_EXPORT size_t hf_base64_decoded_max(size_t len)
{
    return len / 4 * 3 + (len % 4 ? 3 : 0);
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

/* ---- lenient input (proto3 JSON, JWT segments) and URL-safe output ------------------------- */

/* Which alphabet in[0..len) is written in: 's' standard, 'u' URL-safe, 0 mixed or neither. A
 * text with none of the four characters that differ is either. */
static char alphabet_of(const char *in, size_t len)
{
    bool std = false, url = false;

    for (size_t i = 0; i < len; i++) {
        std |= in[i] == '+' || in[i] == '/';
        url |= in[i] == '-' || in[i] == '_';
    }
    return std && url ? 0 : url ? 'u' : 's';
}

/* Groups translated and decoded a chunk at a time on the stack: no copy of a (possibly secret)
 * input reaches the heap. A multiple of 4. */
#define B64_CHUNK 256

HF_PLUGIN_EXPORT bool hf_base64_decode_any(const char *in, size_t len, unsigned char *out,
                                           size_t *outlen)
{
    char chunk[B64_CHUNK];
    size_t data = len, done = 0, got, total = 0;
    char alphabet;
    bool ok = true;

    if (!in || !out || !outlen) return false;
    while (data > 0 && in[data - 1] == '=' && len - data < 2)
        data--;
    /* Padded: to a whole group. (Unpadded, the padding added below makes a lone character in
     * the last group "X===", which the strict decoder refuses.) */
    if (data != len && len % 4 != 0) return false;
    if ((alphabet = alphabet_of(in, data)) == 0) return false;
    /* What proto3 JSON writers send, standard and padded, is the strict form: decoded in place,
     * without the chunked translation (which measured 2-3x the strict decoder here). */
    if (alphabet == 's' && len % 4 == 0) return hf_base64_decode(in, len, out, outlen);
    while (ok && done < data) {
        size_t n = data - done < B64_CHUNK ? data - done : B64_CHUNK;

        for (size_t i = 0; i < n; i++) {
            char c = in[done + i];
            /* Only at the end: a chunk of its own would pass "AA==" to the strict decoder. */
            if (c == '=') ok = false;
            chunk[i] = alphabet == 'u' && c == '-' ? '+' : alphabet == 'u' && c == '_' ? '/' : c;
        }
        done += n;
        while (done == data && n % 4 != 0)
            chunk[n++] = '=';
        ok = ok && hf_base64_decode(chunk, n, out + total, &got);
        total += ok ? got : 0;
    }
    OPENSSL_cleanse(chunk, sizeof(chunk));
    if (ok) *outlen = total;
    return ok;
}

HF_PLUGIN_EXPORT char *hf_base64url_encode(const unsigned char *in, size_t len)
{
    char *s = hf_base64_encode(in, len), *p;

    if (s == NULL) return NULL;
    for (p = s; *p && *p != '='; p++)
        *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
    *p = '\0';
    return s;
}

HF_PLUGIN_EXPORT struct json_object *hf_json_base64(const unsigned char *in, size_t len)
{
    char *s = hf_base64_encode(in, len);
    struct json_object *o;

    if (s == NULL) return NULL;
    o = json_object_new_string(s);
    /* It may be a plaintext (a decrypt's answer): the copy made here is wiped. */
    OPENSSL_clear_free(s, strlen(s));
    return o;
}
