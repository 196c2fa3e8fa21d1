/* hf-fault-shim: a PKCS#11 2.40 module that forwards every call to another module and adds
 * faults (latency, random CKR_DEVICE_ERROR, a "dead" switch, a function's first calls failed),
 * for HSM pool tests.
 *
 * Its configuration is <this .so's path>.conf, found through dladdr(), so copies of the .so at
 * different paths (different inodes: glibc loads each separately) are independent pool members
 * with independent faults. The file is re-read when its mtime changes, checked at most every
 * 100 ms, as are the dead file and the on-demand stats request. README.md beside this file lists
 * the keys and the stats format. */
#include "hf-build.h"

#include <dlfcn.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <p11-kit/pkcs11.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HF_EXPORT __attribute__((visibility("default")))

#define REFRESH_NS (100 * 1000 * 1000LL)
#define ENV_MAX 16
/* More than the functions of SHIM_FUNCTIONS (a static assertion below checks it). */
#define FN_MAX 96

/* How the shim treats a call (the class column of the function table below). */
enum fault_class {
    ALWAYS, /* forwarded whatever the faults: C_GetInfo (C_Finalize is written out) */
    PLAIN,  /* refused while the HSM is dead, otherwise forwarded at once */
    OP,     /* touches a session or token: dead, latency and fail_permille all apply */
};

/* The configuration as parsed; `module` and `env` count at the first C_Initialize only. */
struct conf {
    char module[PATH_MAX];
    char dead_file[PATH_MAX];
    unsigned long latency_us;
    unsigned long fail_permille;
    char env[ENV_MAX][256]; /* "NAME=VALUE" */
    int n_env;
    bool has_module;
    bool fail_skip[FN_MAX]; /* by fn_index: never failed at random */
    int fail_first_fn;      /* by fn_index, -1: none */
    unsigned long fail_first_n, fail_first_rv;
};

/* The index of a forwarded function by its name ("C_FindObjectsFinal"), -1 for none (defined
 * after the function table). */
static int fn_index(const char *name);

/* Our own paths, resolved once on the first C_Initialize. */
static char self_path[PATH_MAX];
static char conf_path[PATH_MAX + 8];
static char stats_path[PATH_MAX + 8];
static char dump_path[PATH_MAX + 8];

/* Guards init/finalize and `real`'s loading; never held across a forwarded call. */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static void *real_handle;         /* dlopen'ed once, kept for the process's life */
static CK_FUNCTION_LIST_PTR real; /* the wrapped module's list; owned by it */
static atomic_bool initialized;   /* our C_Initialize succeeded, no C_Finalize since */
static bool real_owned;           /* we initialised the real module: we finalize it */
static struct conf boot_conf;     /* as read by the first C_Initialize */

/* What the refresh reads and every call uses. */
static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;
static struct timespec conf_mtime; /* under refresh_lock */
static char dead_file[PATH_MAX];   /* under refresh_lock */
static atomic_llong next_refresh_ns;
static atomic_ulong latency_us;
static atomic_ulong fail_permille;
static atomic_bool fail_skip[FN_MAX];
static atomic_ulong fail_first_left[FN_MAX]; /* calls still to fail, by fn_index */
static atomic_ulong fail_first_rv;
static atomic_bool dead;

/* Counters, written to the stats file. */
static atomic_ulong n_calls;        /* every entry but C_GetFunctionList */
static atomic_ulong n_forwarded;    /* passed to the real module */
static atomic_ulong n_op_forwarded; /* of which OP calls: each one slept latency_us */
/* The sleeps measured, per configured latency: a benchmark that changes the latency between its
 * runs reads each run's own. A few distinct latencies per process; one beyond those is not
 * counted. */
#define SLEPT_LATENCIES 16
static struct {
    pthread_mutex_t lock; /* guards the table: taken once per delayed call, which sleeps anyway */
    size_t n;
    struct {
        unsigned long latency_us, calls, slept_us;
    } at[SLEPT_LATENCIES];
} slept = {.lock = PTHREAD_MUTEX_INITIALIZER};
static atomic_ulong n_injected_dead;   /* CKR_DEVICE_ERROR: dead_file existed */
static atomic_ulong n_injected_random; /* CKR_DEVICE_ERROR: fail_permille drew it */
static atomic_ulong n_injected_first;  /* fail_first_rv: a fail_first call */

/* One line on stderr: the only channel a PKCS#11 module has for "your config is broken". */
__attribute__((format(printf, 1, 2))) static void log_line(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hf-fault-shim: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A per-thread xorshift64*, seeded from getrandom: no lock, no shared state. */
static unsigned long draw_permille(void)
{
    static _Thread_local uint64_t state;
    if (state == 0) {
        if (getrandom(&state, sizeof(state), 0) != (ssize_t)sizeof(state))
            state = (uint64_t)now_ns() ^ (uint64_t)pthread_self();
        state |= 1; /* xorshift never leaves 0 */
    }
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return (unsigned long)((state * 0x2545F4914F6CDD1DULL) >> 32) % 1000;
}

static bool parse_ulong(const char *s, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-') return false;
    *out = v;
    return true;
}

static bool copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap) return false;
    memcpy(dst, src, n + 1);
    return true;
}

/* inih handler: sections are ignored, an unknown key or a bad value fails the parse. */
static int conf_key(void *user, const char *section, const char *name, const char *value)
{
    struct conf *c = user;
    if (strcmp(name, "module") == 0) {
        c->has_module = copy_str(c->module, sizeof(c->module), value);
        return c->has_module;
    }
    if (strcmp(name, "dead_file") == 0) return copy_str(c->dead_file, sizeof(c->dead_file), value);
    if (strcmp(name, "latency_us") == 0) return parse_ulong(value, &c->latency_us);
    if (strcmp(name, "fail_permille") == 0)
        return parse_ulong(value, &c->fail_permille) && c->fail_permille <= 1000;
    if (strcmp(name, "fail_skip") == 0) {
        char buf[1024], *tok, *save = NULL;
        if (!copy_str(buf, sizeof(buf), value)) return 0;
        for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
            int i = fn_index(tok);
            if (i < 0) return 0;
            c->fail_skip[i] = true;
        }
        return 1;
    }
    if (strcmp(name, "fail_first") == 0) {
        char fn[64];
        int end = 0;
        if (sscanf(value, "%63s %lu %n", fn, &c->fail_first_n, &end) != 2 || value[end] != '\0')
            return 0;
        return (c->fail_first_fn = fn_index(fn)) >= 0;
    }
    if (strcmp(name, "fail_first_rv") == 0) return parse_ulong(value, &c->fail_first_rv);
    if (strcmp(name, "env") == 0) {
        const char *eq = strchr(value, '=');
        if (eq == NULL || eq == value || c->n_env == ENV_MAX) return 0;
        return copy_str(c->env[c->n_env++], sizeof(c->env[0]), value);
    }
    return 0;
}

/* Reads conf_path into *c; false (and one line on stderr) when it is missing or malformed. */
static bool conf_read(struct conf *c, struct timespec *mtime)
{
    struct stat st;
    memset(c, 0, sizeof(*c));
    c->fail_first_fn = -1;
    c->fail_first_rv = CKR_GENERAL_ERROR;
    if (stat(conf_path, &st) != 0) {
        log_line("cannot read %s: %s", conf_path, strerror(errno));
        return false;
    }
    *mtime = st.st_mtim;
    int line = ini_parse(conf_path, conf_key, c);
    if (line != 0) {
        if (line < 0)
            log_line("cannot open %s", conf_path);
        else
            log_line("%s:%d: unknown key or bad value", conf_path, line);
        return false;
    }
    return true;
}

static void conf_apply(const struct conf *c)
{
    atomic_store(&latency_us, c->latency_us);
    atomic_store(&fail_permille, c->fail_permille);
    for (int i = 0; i < FN_MAX; i++) {
        atomic_store(&fail_skip[i], c->fail_skip[i]);
        atomic_store(&fail_first_left[i], i == c->fail_first_fn ? c->fail_first_n : 0);
    }
    atomic_store(&fail_first_rv, c->fail_first_rv);
    memcpy(dead_file, c->dead_file, sizeof(dead_file));
}

static void stats_write(void)
{
    if (stats_path[0] == '\0') return;
    char tmp[sizeof(stats_path) + 32];
    snprintf(tmp, sizeof(tmp), "%s.%ld", stats_path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (f == NULL) return;
    unsigned long dead_n = atomic_load(&n_injected_dead);
    unsigned long random_n = atomic_load(&n_injected_random);
    unsigned long first_n = atomic_load(&n_injected_first);
    fprintf(f,
            "pid = %ld\ncalls = %lu\nforwarded = %lu\ninjected = %lu\ninjected_dead = %lu\n"
            "injected_random = %lu\ninjected_first = %lu\nop_forwarded = %lu\n",
            (long)getpid(), atomic_load(&n_calls), atomic_load(&n_forwarded),
            dead_n + random_n + first_n, dead_n, random_n, first_n, atomic_load(&n_op_forwarded));
    pthread_mutex_lock(&slept.lock);
    for (size_t i = 0; i < slept.n; i++)
        fprintf(f, "op_slept_at_%lu_us = %lu %lu\n", slept.at[i].latency_us, slept.at[i].calls,
                slept.at[i].slept_us);
    pthread_mutex_unlock(&slept.lock);
    /* rename: a reader sees the old stats or the new ones, never half a file. */
    if (fclose(f) != 0 || rename(tmp, stats_path) != 0) unlink(tmp);
}

/* At most every REFRESH_NS, one thread re-reads a changed config, looks for the dead file and
 * answers a dump request; the others go on with the values they see. */
static void refresh(bool force)
{
    long long now = now_ns();
    if (!force && now < atomic_load(&next_refresh_ns)) return;
    if (pthread_mutex_trylock(&refresh_lock) != 0) return;
    /* refresh_lock held */
    atomic_store(&next_refresh_ns, now + REFRESH_NS);
    struct stat st;
    if (stat(conf_path, &st) == 0 &&
        (st.st_mtim.tv_sec != conf_mtime.tv_sec || st.st_mtim.tv_nsec != conf_mtime.tv_nsec)) {
        struct conf *c = malloc(sizeof(*c));
        struct timespec mtime;
        if (c != NULL && conf_read(c, &mtime)) {
            conf_apply(c);
            conf_mtime = mtime;
        } else {
            conf_mtime = st.st_mtim; /* logged once; the old values stay */
        }
        free(c);
    }
    atomic_store(&dead, dead_file[0] != '\0' && access(dead_file, F_OK) == 0);
    if (access(dump_path, F_OK) == 0) {
        stats_write();
        unlink(dump_path);
    }
    pthread_mutex_unlock(&refresh_lock);
}

/* Whether a call of class cls may go on to the real module; *rv is its answer if not. */
static uint64_t monotonic_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* Sleeps us microseconds and answers what the sleep took. The caller's timer slack (50 us by
 * default) would add up to a quarter to a 200 us latency, so the sleeping thread's is set to
 * 1 ns (it keeps it: a test module's caller loses nothing by waking on time): the latency is
 * then what was configured plus the kernel's wake-up, which the answer includes so that a
 * benchmark can use the latency the member really had. */
static unsigned long latency_sleep(unsigned long us)
{
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000};
    uint64_t start;

    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    start = monotonic_us();
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    return (unsigned long)(monotonic_us() - start);
}

static void slept_add(unsigned long asked_us, unsigned long took_us)
{
    size_t i;

    pthread_mutex_lock(&slept.lock);
    for (i = 0; i < slept.n && slept.at[i].latency_us != asked_us; i++) {
    }
    if (i == slept.n && slept.n < SLEPT_LATENCIES) slept.at[slept.n++].latency_us = asked_us;
    if (i < slept.n) {
        slept.at[i].calls++;
        slept.at[i].slept_us += took_us;
    }
    pthread_mutex_unlock(&slept.lock);
}

/* Whether this call of fn is one of its first fail_first calls: each is taken once. */
static bool first_failure_take(int fn)
{
    unsigned long left;

    if (fn < 0) return false;
    left = atomic_load(&fail_first_left[fn]);
    while (left > 0 && !atomic_compare_exchange_weak(&fail_first_left[fn], &left, left - 1)) {
    }
    return left > 0;
}

static bool may_forward(enum fault_class cls, int fn, CK_RV *rv)
{
    atomic_fetch_add(&n_calls, 1);
    if (!atomic_load(&initialized)) {
        *rv = CKR_CRYPTOKI_NOT_INITIALIZED;
        return false;
    }
    if (cls == ALWAYS) goto forward;
    refresh(false);
    if (atomic_load(&dead)) {
        atomic_fetch_add(&n_injected_dead, 1);
        *rv = CKR_DEVICE_ERROR;
        return false;
    }
    if (first_failure_take(fn)) {
        atomic_fetch_add(&n_injected_first, 1);
        *rv = atomic_load(&fail_first_rv);
        return false;
    }
    if (cls == PLAIN) goto forward;
    unsigned long permille = atomic_load(&fail_permille);
    if (permille > 0 && !(fn >= 0 && atomic_load(&fail_skip[fn])) && draw_permille() < permille) {
        atomic_fetch_add(&n_injected_random, 1);
        *rv = CKR_DEVICE_ERROR;
        return false;
    }
    unsigned long us = atomic_load(&latency_us);
    if (us > 0) slept_add(us, latency_sleep(us));
    atomic_fetch_add(&n_op_forwarded, 1);
forward:
    atomic_fetch_add(&n_forwarded, 1);
    return true;
}

/* The PKCS#11 2.40 function list but the four written out below (C_Initialize, C_Finalize,
 * C_GetFunctionList, and C_GetInfo, which is ALWAYS): X(name, class, (parameters), (arguments)).
 * The class column is the one table of which calls are slowed and failed at random. */
#define SHIM_FUNCTIONS(X)                                                                          \
    X(C_GetSlotList, PLAIN, (CK_BBOOL present, CK_SLOT_ID_PTR list, CK_ULONG_PTR count),           \
      (present, list, count))                                                                      \
    X(C_GetSlotInfo, PLAIN, (CK_SLOT_ID slot, CK_SLOT_INFO_PTR info), (slot, info))                \
    X(C_GetTokenInfo, PLAIN, (CK_SLOT_ID slot, CK_TOKEN_INFO_PTR info), (slot, info))              \
    X(C_GetMechanismList, PLAIN,                                                                   \
      (CK_SLOT_ID slot, CK_MECHANISM_TYPE_PTR list, CK_ULONG_PTR count), (slot, list, count))      \
    X(C_GetMechanismInfo, PLAIN,                                                                   \
      (CK_SLOT_ID slot, CK_MECHANISM_TYPE type, CK_MECHANISM_INFO_PTR info), (slot, type, info))   \
    X(C_InitToken, PLAIN,                                                                          \
      (CK_SLOT_ID slot, CK_UTF8CHAR_PTR pin, CK_ULONG pin_len, CK_UTF8CHAR_PTR label),             \
      (slot, pin, pin_len, label))                                                                 \
    X(C_InitPIN, PLAIN, (CK_SESSION_HANDLE s, CK_UTF8CHAR_PTR pin, CK_ULONG pin_len),              \
      (s, pin, pin_len))                                                                           \
    X(C_SetPIN, PLAIN,                                                                             \
      (CK_SESSION_HANDLE s, CK_UTF8CHAR_PTR old_pin, CK_ULONG old_len, CK_UTF8CHAR_PTR new_pin,    \
       CK_ULONG new_len),                                                                          \
      (s, old_pin, old_len, new_pin, new_len))                                                     \
    X(C_OpenSession, OP,                                                                           \
      (CK_SLOT_ID slot, CK_FLAGS flags, CK_VOID_PTR app, CK_NOTIFY notify,                         \
       CK_SESSION_HANDLE_PTR s),                                                                   \
      (slot, flags, app, notify, s))                                                               \
    X(C_CloseSession, PLAIN, (CK_SESSION_HANDLE s), (s))                                           \
    X(C_CloseAllSessions, PLAIN, (CK_SLOT_ID slot), (slot))                                        \
    X(C_GetSessionInfo, PLAIN, (CK_SESSION_HANDLE s, CK_SESSION_INFO_PTR info), (s, info))         \
    X(C_GetOperationState, PLAIN, (CK_SESSION_HANDLE s, CK_BYTE_PTR state, CK_ULONG_PTR len),      \
      (s, state, len))                                                                             \
    X(C_SetOperationState, PLAIN,                                                                  \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR state, CK_ULONG len, CK_OBJECT_HANDLE enc_key,             \
       CK_OBJECT_HANDLE auth_key),                                                                 \
      (s, state, len, enc_key, auth_key))                                                          \
    X(C_Login, OP,                                                                                 \
      (CK_SESSION_HANDLE s, CK_USER_TYPE user, CK_UTF8CHAR_PTR pin, CK_ULONG pin_len),             \
      (s, user, pin, pin_len))                                                                     \
    X(C_Logout, PLAIN, (CK_SESSION_HANDLE s), (s))                                                 \
    X(C_CreateObject, OP,                                                                          \
      (CK_SESSION_HANDLE s, CK_ATTRIBUTE_PTR tmpl, CK_ULONG n, CK_OBJECT_HANDLE_PTR obj),          \
      (s, tmpl, n, obj))                                                                           \
    X(C_CopyObject, PLAIN,                                                                         \
      (CK_SESSION_HANDLE s, CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_PTR tmpl, CK_ULONG n,               \
       CK_OBJECT_HANDLE_PTR new_obj),                                                              \
      (s, obj, tmpl, n, new_obj))                                                                  \
    X(C_DestroyObject, OP, (CK_SESSION_HANDLE s, CK_OBJECT_HANDLE obj), (s, obj))                  \
    X(C_GetObjectSize, PLAIN, (CK_SESSION_HANDLE s, CK_OBJECT_HANDLE obj, CK_ULONG_PTR size),      \
      (s, obj, size))                                                                              \
    X(C_GetAttributeValue, OP,                                                                     \
      (CK_SESSION_HANDLE s, CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_PTR tmpl, CK_ULONG n),              \
      (s, obj, tmpl, n))                                                                           \
    X(C_SetAttributeValue, PLAIN,                                                                  \
      (CK_SESSION_HANDLE s, CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_PTR tmpl, CK_ULONG n),              \
      (s, obj, tmpl, n))                                                                           \
    X(C_FindObjectsInit, OP, (CK_SESSION_HANDLE s, CK_ATTRIBUTE_PTR tmpl, CK_ULONG n),             \
      (s, tmpl, n))                                                                                \
    X(C_FindObjects, OP,                                                                           \
      (CK_SESSION_HANDLE s, CK_OBJECT_HANDLE_PTR objs, CK_ULONG max, CK_ULONG_PTR count),          \
      (s, objs, max, count))                                                                       \
    X(C_FindObjectsFinal, OP, (CK_SESSION_HANDLE s), (s))                                          \
    X(C_EncryptInit, OP, (CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech, CK_OBJECT_HANDLE key),       \
      (s, mech, key))                                                                              \
    X(C_Encrypt, OP,                                                                               \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len, CK_BYTE_PTR out,                      \
       CK_ULONG_PTR out_len),                                                                      \
      (s, in, in_len, out, out_len))                                                               \
    X(C_EncryptUpdate, OP,                                                                         \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len, CK_BYTE_PTR out,                      \
       CK_ULONG_PTR out_len),                                                                      \
      (s, in, in_len, out, out_len))                                                               \
    X(C_EncryptFinal, OP, (CK_SESSION_HANDLE s, CK_BYTE_PTR out, CK_ULONG_PTR out_len),            \
      (s, out, out_len))                                                                           \
    X(C_DecryptInit, OP, (CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech, CK_OBJECT_HANDLE key),       \
      (s, mech, key))                                                                              \
    X(C_Decrypt, OP,                                                                               \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len, CK_BYTE_PTR out,                      \
       CK_ULONG_PTR out_len),                                                                      \
      (s, in, in_len, out, out_len))                                                               \
    X(C_DecryptUpdate, OP,                                                                         \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len, CK_BYTE_PTR out,                      \
       CK_ULONG_PTR out_len),                                                                      \
      (s, in, in_len, out, out_len))                                                               \
    X(C_DecryptFinal, OP, (CK_SESSION_HANDLE s, CK_BYTE_PTR out, CK_ULONG_PTR out_len),            \
      (s, out, out_len))                                                                           \
    X(C_DigestInit, PLAIN, (CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech), (s, mech))                \
    X(C_Digest, PLAIN,                                                                             \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len, CK_BYTE_PTR out,                      \
       CK_ULONG_PTR out_len),                                                                      \
      (s, in, in_len, out, out_len))                                                               \
    X(C_DigestUpdate, PLAIN, (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len),               \
      (s, in, in_len))                                                                             \
    X(C_DigestKey, PLAIN, (CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key), (s, key))                   \
    X(C_DigestFinal, PLAIN, (CK_SESSION_HANDLE s, CK_BYTE_PTR out, CK_ULONG_PTR out_len),          \
      (s, out, out_len))                                                                           \
    X(C_SignInit, OP, (CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech, CK_OBJECT_HANDLE key),          \
      (s, mech, key))                                                                              \
    X(C_Sign, OP,                                                                                  \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len, CK_BYTE_PTR sig,                      \
       CK_ULONG_PTR sig_len),                                                                      \
      (s, in, in_len, sig, sig_len))                                                               \
    X(C_SignUpdate, OP, (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len), (s, in, in_len))   \
    X(C_SignFinal, OP, (CK_SESSION_HANDLE s, CK_BYTE_PTR sig, CK_ULONG_PTR sig_len),               \
      (s, sig, sig_len))                                                                           \
    X(C_SignRecoverInit, OP, (CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech, CK_OBJECT_HANDLE key),   \
      (s, mech, key))                                                                              \
    X(C_SignRecover, OP,                                                                           \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len, CK_BYTE_PTR sig,                      \
       CK_ULONG_PTR sig_len),                                                                      \
      (s, in, in_len, sig, sig_len))                                                               \
    X(C_VerifyInit, OP, (CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech, CK_OBJECT_HANDLE key),        \
      (s, mech, key))                                                                              \
    X(C_Verify, OP,                                                                                \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len, CK_BYTE_PTR sig, CK_ULONG sig_len),   \
      (s, in, in_len, sig, sig_len))                                                               \
    X(C_VerifyUpdate, OP, (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len), (s, in, in_len)) \
    X(C_VerifyFinal, OP, (CK_SESSION_HANDLE s, CK_BYTE_PTR sig, CK_ULONG sig_len),                 \
      (s, sig, sig_len))                                                                           \
    X(C_VerifyRecoverInit, OP, (CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech, CK_OBJECT_HANDLE key), \
      (s, mech, key))                                                                              \
    X(C_VerifyRecover, OP,                                                                         \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR sig, CK_ULONG sig_len, CK_BYTE_PTR out,                    \
       CK_ULONG_PTR out_len),                                                                      \
      (s, sig, sig_len, out, out_len))                                                             \
    X(C_DigestEncryptUpdate, PLAIN,                                                                \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len, CK_BYTE_PTR out,                      \
       CK_ULONG_PTR out_len),                                                                      \
      (s, in, in_len, out, out_len))                                                               \
    X(C_DecryptDigestUpdate, OP,                                                                   \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len, CK_BYTE_PTR out,                      \
       CK_ULONG_PTR out_len),                                                                      \
      (s, in, in_len, out, out_len))                                                               \
    X(C_SignEncryptUpdate, OP,                                                                     \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len, CK_BYTE_PTR out,                      \
       CK_ULONG_PTR out_len),                                                                      \
      (s, in, in_len, out, out_len))                                                               \
    X(C_DecryptVerifyUpdate, OP,                                                                   \
      (CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG in_len, CK_BYTE_PTR out,                      \
       CK_ULONG_PTR out_len),                                                                      \
      (s, in, in_len, out, out_len))                                                               \
    X(C_GenerateKey, OP,                                                                           \
      (CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech, CK_ATTRIBUTE_PTR tmpl, CK_ULONG n,              \
       CK_OBJECT_HANDLE_PTR key),                                                                  \
      (s, mech, tmpl, n, key))                                                                     \
    X(C_GenerateKeyPair, OP,                                                                       \
      (CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech, CK_ATTRIBUTE_PTR pub_tmpl, CK_ULONG pub_n,      \
       CK_ATTRIBUTE_PTR priv_tmpl, CK_ULONG priv_n, CK_OBJECT_HANDLE_PTR pub,                      \
       CK_OBJECT_HANDLE_PTR priv),                                                                 \
      (s, mech, pub_tmpl, pub_n, priv_tmpl, priv_n, pub, priv))                                    \
    X(C_WrapKey, OP,                                                                               \
      (CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech, CK_OBJECT_HANDLE wrapping,                      \
       CK_OBJECT_HANDLE key, CK_BYTE_PTR out, CK_ULONG_PTR out_len),                               \
      (s, mech, wrapping, key, out, out_len))                                                      \
    X(C_UnwrapKey, OP,                                                                             \
      (CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech, CK_OBJECT_HANDLE unwrapping, CK_BYTE_PTR in,    \
       CK_ULONG in_len, CK_ATTRIBUTE_PTR tmpl, CK_ULONG n, CK_OBJECT_HANDLE_PTR key),              \
      (s, mech, unwrapping, in, in_len, tmpl, n, key))                                             \
    X(C_DeriveKey, PLAIN,                                                                          \
      (CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech, CK_OBJECT_HANDLE base, CK_ATTRIBUTE_PTR tmpl,   \
       CK_ULONG n, CK_OBJECT_HANDLE_PTR key),                                                      \
      (s, mech, base, tmpl, n, key))                                                               \
    X(C_SeedRandom, PLAIN, (CK_SESSION_HANDLE s, CK_BYTE_PTR seed, CK_ULONG len), (s, seed, len))  \
    X(C_GenerateRandom, PLAIN, (CK_SESSION_HANDLE s, CK_BYTE_PTR out, CK_ULONG len),               \
      (s, out, len))                                                                               \
    X(C_GetFunctionStatus, PLAIN, (CK_SESSION_HANDLE s), (s))                                      \
    X(C_CancelFunction, PLAIN, (CK_SESSION_HANDLE s), (s))                                         \
    X(C_WaitForSlotEvent, PLAIN, (CK_FLAGS flags, CK_SLOT_ID_PTR slot, CK_VOID_PTR reserved),      \
      (flags, slot, reserved))

#define SHIM_FORWARDER(name, cls, params, args)                                                    \
    static CK_RV shim_##name params                                                                \
    {                                                                                              \
        CK_RV rv;                                                                                  \
        if (!may_forward(cls, FN_##name, &rv)) return rv;                                          \
        return real->name args;                                                                    \
    }
/* Each forwarded function's index (FN_C_Encrypt...) and name, for fail_skip. */
#define SHIM_FN_ID(name, cls, params, args) FN_##name,
enum { SHIM_FUNCTIONS(SHIM_FN_ID) FN_COUNT };
_Static_assert(FN_COUNT <= FN_MAX, "FN_MAX must exceed the number of forwarded functions");
#define SHIM_FN_NAME(name, cls, params, args) #name,
static const char *const fn_names[FN_COUNT] = {SHIM_FUNCTIONS(SHIM_FN_NAME)};

static int fn_index(const char *name)
{
    for (int i = 0; i < FN_COUNT; i++)
        if (strcmp(fn_names[i], name) == 0) return i;
    return -1;
}

SHIM_FUNCTIONS(SHIM_FORWARDER)

/* Our own path, from the loader: each copy of the .so has its own. */
static bool paths_resolve(void)
{
    if (self_path[0] != '\0') return true;
    Dl_info info;
    if (dladdr((void *)&paths_resolve, &info) == 0 || info.dli_fname == NULL) return false;
    char buf[PATH_MAX];
    if (info.dli_fname[0] == '/') {
        if (!copy_str(buf, sizeof(buf), info.dli_fname)) return false;
    } else {
        /* Loaded by a relative path: make it absolute now, before anyone changes directory. */
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof(cwd)) == NULL) return false;
        int n = snprintf(buf, sizeof(buf), "%s/%s", cwd, info.dli_fname);
        if (n < 0 || (size_t)n >= sizeof(buf)) return false;
    }
    snprintf(conf_path, sizeof(conf_path), "%s.conf", buf);
    snprintf(stats_path, sizeof(stats_path), "%s.stats", buf);
    snprintf(dump_path, sizeof(dump_path), "%s.dump", buf);
    memcpy(self_path, buf, sizeof(self_path));
    return true;
}

static void env_apply(const struct conf *c)
{
    for (int i = 0; i < c->n_env; i++) {
        char name[sizeof(c->env[0])];
        const char *eq = strchr(c->env[i], '=');
        memcpy(name, c->env[i], (size_t)(eq - c->env[i]));
        name[eq - c->env[i]] = '\0';
        setenv(name, eq + 1, 1);
    }
}

/* Loads the real module once (init_lock held): env first, so a p11-kit-client.so copy finds
 * its own P11_KIT_SERVER_ADDRESS. */
static CK_RV real_load(const struct conf *c)
{
    if (real != NULL) return CKR_OK;
    env_apply(c);
    real_handle = dlopen(c->module, RTLD_LOCAL | RTLD_NOW);
    if (real_handle == NULL) {
        log_line("cannot load %s: %s", c->module, dlerror());
        return CKR_GENERAL_ERROR;
    }
    CK_C_GetFunctionList get = (CK_C_GetFunctionList)dlsym(real_handle, "C_GetFunctionList");
    CK_FUNCTION_LIST_PTR list = NULL;
    if (get == NULL || get(&list) != CKR_OK || list == NULL) {
        log_line("%s: no C_GetFunctionList", c->module);
        dlclose(real_handle);
        real_handle = NULL;
        return CKR_GENERAL_ERROR;
    }
    real = list;
    return CKR_OK;
}

static CK_RV shim_C_Initialize(CK_VOID_PTR init_args)
{
    CK_RV rv = CKR_OK;
    atomic_fetch_add(&n_calls, 1);
    pthread_mutex_lock(&init_lock);
    /* init_lock held */
    if (atomic_load(&initialized)) {
        rv = CKR_CRYPTOKI_ALREADY_INITIALIZED;
        goto done;
    }
    if (!paths_resolve()) {
        log_line("cannot find my own path");
        rv = CKR_GENERAL_ERROR;
        goto done;
    }
    if (!conf_read(&boot_conf, &conf_mtime)) {
        rv = CKR_GENERAL_ERROR;
        goto done;
    }
    if (!boot_conf.has_module) {
        log_line("%s: no module = line", conf_path);
        rv = CKR_GENERAL_ERROR;
        goto done;
    }
    pthread_mutex_lock(&refresh_lock);
    conf_apply(&boot_conf);
    pthread_mutex_unlock(&refresh_lock);
    /* An unreachable HSM fails its C_Initialize too. */
    refresh(true);
    if (atomic_load(&dead)) {
        atomic_fetch_add(&n_injected_dead, 1);
        rv = CKR_DEVICE_ERROR;
        goto done;
    }
    rv = real_load(&boot_conf);
    if (rv != CKR_OK) goto done;
    env_apply(&boot_conf);
    atomic_fetch_add(&n_forwarded, 1);
    rv = real->C_Initialize(init_args);
    /* Someone else in this process initialised it (another copy over the same module): use it,
     * but leave its C_Finalize to them. */
    real_owned = rv == CKR_OK;
    if (rv == CKR_CRYPTOKI_ALREADY_INITIALIZED) rv = CKR_OK;
    if (rv == CKR_OK) atomic_store(&initialized, true);
done:
    pthread_mutex_unlock(&init_lock);
    return rv;
}

static CK_RV shim_C_Finalize(CK_VOID_PTR reserved)
{
    CK_RV rv = CKR_OK;
    atomic_fetch_add(&n_calls, 1);
    if (reserved != NULL) return CKR_ARGUMENTS_BAD;
    pthread_mutex_lock(&init_lock);
    /* init_lock held */
    if (!atomic_load(&initialized)) {
        rv = CKR_CRYPTOKI_NOT_INITIALIZED;
        goto done;
    }
    if (real_owned) {
        atomic_fetch_add(&n_forwarded, 1);
        rv = real->C_Finalize(NULL);
    }
    /* The handle stays: some modules do not survive dlclose and a re-dlopen. */
    real_owned = false;
    atomic_store(&initialized, false);
    stats_write();
done:
    pthread_mutex_unlock(&init_lock);
    return rv;
}

static CK_RV shim_C_GetInfo(CK_INFO_PTR info)
{
    CK_RV rv;
    if (!may_forward(ALWAYS, -1, &rv)) return rv;
    return real->C_GetInfo(info);
}

static CK_RV shim_C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list);

#define SHIM_ENTRY(name, cls, params, args) .name = shim_##name,
static CK_FUNCTION_LIST shim_list = {.version = {CRYPTOKI_VERSION_MAJOR, CRYPTOKI_VERSION_MINOR},
                                     .C_Initialize = shim_C_Initialize,
                                     .C_Finalize = shim_C_Finalize,
                                     .C_GetInfo = shim_C_GetInfo,
                                     .C_GetFunctionList = shim_C_GetFunctionList,
                                     SHIM_FUNCTIONS(SHIM_ENTRY)};

static CK_RV shim_C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list)
{
    if (list == NULL) return CKR_ARGUMENTS_BAD;
    *list = &shim_list;
    return CKR_OK;
}

HF_EXPORT CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list)
{
    return shim_C_GetFunctionList(list);
}

/* A process that exits without C_Finalize (pkcs11-tool after an error) still leaves its
 * counts, so a test sees the failures it provoked. */
__attribute__((destructor)) static void shim_unload(void)
{
    if (atomic_load(&n_calls) > 0) stats_write();
}
