/* Ending safely however the host ends. Two hosts crashed in the module:
 * - one that calls C_Finalize from an exit handler registered before it loaded the module
 * (OpenSSL's OPENSSL_cleanup, through a provider): by then the backend's own exit-time teardown
 * (SoftHSMv2's static destructors, registered when the core loaded it) has run, and closing its
 * sessions crashed inside it;
 * - one that dlcloses the module without C_Finalize: the audit writer and checkpoint threads
 *   went on running in unmapped code.
 * The handler below is registered with atexit after the core has loaded its backends. From a
 * shared object, atexit is __cxa_atexit bound to this object, so glibc runs it both at exit(),
 * before any handler registered earlier (the backends' teardown and the host's own), and at the
 * dlclose that unmaps us. Either way it finalises while the backend still works: records are
 * flushed, threads joined, sessions closed. The backends are loaded RTLD_NODELETE (hsm.c), so
 * their teardown is registered once and this handler, armed after it, always precedes it. */
#include "hf-build.h"

#include "internal.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_bool finalized_at_exit;

/* Threads still inside the module at exit may hold its lock: wait a while, never forever. */
static bool module_lock_within(unsigned ms)
{
    struct timespec pause = {0, 1000 * 1000};

    for (unsigned i = 0; i < ms; i++) {
        if (pthread_mutex_trylock(&hf_mod.lock) == 0) return true;
        nanosleep(&pause, NULL);
    }
    return false;
}

static void finalize_at_exit(void)
{
    bool ours;

    if (!module_lock_within(1000)) return;
    /* A forked child inherits the handler but not the parent's module (module.c, atfork). */
    ours = atomic_load(&hf_mod.initialized) && hf_mod.pid == getpid();
    pthread_mutex_unlock(&hf_mod.lock);
    if (ours && C_Finalize(NULL) == CKR_OK) atomic_store(&finalized_at_exit, true);
}

static void exit_handler_register(void)
{
    if (atexit(finalize_at_exit) != 0)
        hf_log_warn("atexit failed: C_Finalize from a late exit handler may reach a torn-down "
                    "backend");
}

void hf_module_exit_arm(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, exit_handler_register);
}

/* The host's own C_Finalize after ours ran at exit is answered as done, not as misuse. */
bool hf_module_exit_finalized(void)
{
    return atomic_load(&finalized_at_exit);
}
