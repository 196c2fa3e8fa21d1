/* Programs that hold secrets (holdfastd, the holdfast CLI) make themselves undumpable at start:
 * a core file, or another process of the same user reading /proc/PID/mem or attaching a
 * debugger, would hand out PINs, SigV4 secrets and unwrapped key material. Header-only and
 * libc-only (pkcs11/common/README.md): the CLI and the gateway may not include each other's
 * headers.
 *
 * Not called from holdfast-pkcs11.so: whether a PKCS#11 host process (Firefox, an HTTP server)
 * may dump core is that program's decision, not a library's. */
#ifndef HF_COMMON_NO_DUMP_H
#define HF_COMMON_NO_DUMP_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

/* RLIMIT_CORE 0 (soft and hard: the process cannot raise it again) and PR_SET_DUMPABLE 0 (no core
 * even for a raised limit, /proc/PID/{mem,environ,maps} and ptrace for root only). */
static inline bool hf_process_no_dump(char *err, size_t errlen)
{
    const struct rlimit none = {0, 0};
    struct rlimit now;

    /* Already 0 under systemd (LimitCORE=0), whose unit also filters out @resources. */
    if ((getrlimit(RLIMIT_CORE, &now) != 0 || now.rlim_cur != 0 || now.rlim_max != 0) &&
        setrlimit(RLIMIT_CORE, &none) != 0) {
        if (err && errlen) snprintf(err, errlen, "setrlimit(RLIMIT_CORE, 0): %s", strerror(errno));
        return false;
    }
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        if (err && errlen) snprintf(err, errlen, "prctl(PR_SET_DUMPABLE, 0): %s", strerror(errno));
        return false;
    }
    return true;
}

/* Whether the program should make OpenSSL's secure heap. Not in sanitizer builds: ASan checks
 * no bounds inside OpenSSL's own arena, and LeakSanitizer does not scan it, so what the DRBG
 * keeps there (its state is allocated in the arena and points at ordinary allocations) reads
 * as leaked at exit. Those builds run on the ordinary heap, where the sanitizers see it all. */
static inline bool hf_secure_heap_is_wanted(void)
{
#ifdef HF_SANITIZED
    return false;
#else
    return true;
#endif
}

#endif /* HF_COMMON_NO_DUMP_H */
