/* A caller's CKA_LABEL and CKA_ID on a token key. Keys are named by the store's rules (a name
 * is what the CLI, links and URIs use), but PKCS#11 software picks its own labels ("RSA Pkey
 * sigver Test") and ids (pairs a certificate with its key by CKA_ID): those are kept as the
 * key's labels p11.label and p11.id, reported in place of the name and the version UUID, and
 * found by a search as any attribute is (find.c compares what C_GetAttributeValue returns). */
#include "hf-build.h"

#include <string.h>

#include <openssl/asn1.h>

#include "internal.h"

bool hf_p11_label_is_valid(const void *value, size_t len)
{
    const unsigned char *p = value;
    unsigned long c;

    if (p == NULL || len == 0 || len > HF_P11_TEXT_MAX) return false;
    while (len > 0) {
        int n = UTF8_getc(p, (int)len, &c);
        if (n <= 0 || c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)) return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

void hf_p11_hex(const void *in, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *p = in;

    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * len] = '\0';
}

const char *hf_p11_key_label(const struct hf_key *key)
{
    const char *label = hf_key_label_get(key, HF_P11_LABEL);

    return label != NULL ? label : key->name;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

bool hf_p11_key_id(const struct hf_key *key, unsigned char *out, size_t *len)
{
    const char *hex = hf_key_label_get(key, HF_P11_ID);
    size_t n;

    if (hex == NULL || (n = strlen(hex)) % 2 != 0 || n / 2 > HF_P11_TEXT_MAX) return false;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    *len = n / 2;
    return true;
}
