/* hf_why: one formatter for the reasons the outbound, JWKS and JWT helpers give. */
#include "hf-build.h"

#include "gateway/why.h"

#include <stdarg.h>
#include <stdio.h>

void hf_why(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;

    if (!why || whylen == 0) return;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
}
