/* Random bytes for public values (plugin.h): the DRBG is asked a batch at a time per thread.
 * One RAND_bytes call per IV or request id cost 3-5% of an XKS encrypt each: its locks and
 * reseed checks, not its bytes. The batch is the DRBG's output all the same. */
#include "hf-build.h"

#include "gateway/plugin.h"

#include <string.h>

#include <openssl/rand.h>

#define POOL_SIZE 512
/* Larger requests skip the pool: they are rare and would drain it at once. */
#define POOL_TAKE_MAX 32

static _Thread_local unsigned char pool[POOL_SIZE];
static _Thread_local size_t pool_left;

HF_PLUGIN_EXPORT bool hf_random_public(void *out, size_t len)
{
    if (len > POOL_TAKE_MAX) return RAND_bytes(out, (int)len) == 1;
    if (pool_left < len) {
        if (RAND_bytes(pool, sizeof(pool)) != 1) return false;
        pool_left = sizeof(pool);
    }
    pool_left -= len;
    memcpy(out, pool + pool_left, len);
    /* Handed out once only. */
    memset(pool + pool_left, 0, len);
    return true;
}
