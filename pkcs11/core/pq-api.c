#include "hf-build.h"

#define HF_PQ_API_IMPL
#include "pkcs11/core/pq-api.h"

#include "pkcs11/core/log.h"

#include <dlfcn.h>
#include <pthread.h>

/* Debian's libpq5; the soname is stable across PostgreSQL releases. */
#define LIBPQ_SONAME "libpq.so.5"

struct hf_pq_api hf_pq;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static CK_RV load_rv = CKR_FUNCTION_NOT_SUPPORTED;

static void load(void)
{
    /* RTLD_NODELETE: libpq keeps process-wide state (its SSL init, atexit handlers). */
    void *dl = dlopen(LIBPQ_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);

    if (dl == NULL) {
        hf_log_error("store: the PostgreSQL store needs libpq (Debian: libpq5): %s", dlerror());
        return;
    }
#define HF_PQ_RESOLVE(name)                                                                        \
    if ((*(void **)&hf_pq.name = dlsym(dl, #name)) == NULL) {                                    \
        hf_log_error("store: %s has no %s", LIBPQ_SONAME, #name);                                 \
        return;                                                                                    \
    }
    HF_PQ_FUNCTIONS(HF_PQ_RESOLVE)
#undef HF_PQ_RESOLVE
    load_rv = CKR_OK;
}

CK_RV hf_pq_load(void)
{
    pthread_once(&load_once, load);
    return load_rv;
}
