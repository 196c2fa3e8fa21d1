/* The reason a gateway helper gives for a refusal, into the caller's buffer. */
#ifndef HF_GATEWAY_WHY_H
#define HF_GATEWAY_WHY_H

#include <stddef.h>

#include "gateway/plugin.h"

/* snprintf into why[0..whylen); why NULL or whylen 0: nothing. */
void hf_why(char *why, size_t whylen, const char *fmt, ...) HF_PRINTF(3, 4);

#endif /* HF_GATEWAY_WHY_H */
