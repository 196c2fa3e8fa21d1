/* A growable byte buffer for requests and reports. Sizes are checked before they grow. */
#include "hf-build.h"

#include "tests/load/load.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hf_buf_reserve(struct hf_buf *b, size_t extra)
{
    size_t need, cap;
    char *p;

    if (!b) return -1;
    if (extra > SIZE_MAX - b->len - 1) return -1;
    need = b->len + extra + 1; /* room for a terminating NUL, so text stays a C string */
    if (need <= b->cap) return 0;
    cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) return -1;
        cap *= 2;
    }
    p = realloc(b->data, cap);
    if (!p) return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

int hf_buf_append(struct hf_buf *b, const void *data, size_t len)
{
    if (hf_buf_reserve(b, len) != 0) return -1;
    if (len) memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int hf_buf_printf(struct hf_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (hf_buf_reserve(b, 64) != 0) return -1;
    va_start(ap, fmt);
    n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if ((size_t)n >= b->cap - b->len) {
        if (hf_buf_reserve(b, (size_t)n) != 0) return -1;
        va_start(ap, fmt);
        n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= b->cap - b->len) return -1;
    }
    b->len += (size_t)n;
    return 0;
}

void hf_buf_free(struct hf_buf *b)
{
    if (!b) return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
