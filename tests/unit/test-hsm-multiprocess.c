#include "hf-build.h"

#include "harness.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pkcs11/core/core.h"
#include "pkcs11/core/hsm.h"
#include "pkcs11/core/secmem.h"

/* Several processes on one SoftHSMv2 token, as the CLI, holdfastd and PKCS#11 applications are in
 * production. SoftHSMv2 2.6 rewrites the token file on every C_Login, so without hsm.c's token
 * lock the other processes see no token, or a broken one (SoftHSMv2 issue #757). */
#define TOKEN "hf-test-mp"
#define KEK "hf-root-kek"

static struct hf_test_softhsm softhsm;
static unsigned char secret[32];
static unsigned char *blob; /* secret wrapped under KEK */
static size_t blob_len;

/* A token with a KEK and a blob sealed under it. The handle is closed again, so every child
 * starts from a process without the module loaded, like a fresh CLI run. */
static int suite_init(void)
{
    struct hf_hsm *h = NULL;
    CK_RV rv;

    if (hf_test_softhsm_setup(&softhsm, "hf-test-mp") != 0) return -1;
    memset(secret, 0x5a, sizeof(secret));
    rv = hf_hsm_token_ensure(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, HF_TEST_SO_PIN,
                             HF_TEST_USER_PIN);
    if (rv == CKR_OK)
        rv = hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, HF_TEST_USER_PIN, &h);
    if (rv == CKR_OK) rv = hf_hsm_kek_ensure(h, KEK);
    if (rv == CKR_OK) rv = hf_hsm_wrap(h, KEK, secret, sizeof(secret), &blob, &blob_len);
    hf_hsm_close(h);
    if (rv != CKR_OK) fprintf(stderr, "suite setup failed: 0x%lx\n", (unsigned long)rv);
    return rv == CKR_OK ? 0 : -1;
}

static int suite_clean(void)
{
    free(blob);
    hf_test_softhsm_teardown(&softhsm);
    return 0;
}

/* ---- helpers -------------------------------------------------------------------------------- */

static uint64_t ms_now(void)
{
    return hf_monotonic_us() / 1000u;
}

/* Children started with a gate: each blocks until the parent opens it (gate_open), so they all
 * hit the token at once. */
struct gate {
    int fd[2];
};

static void gate_wait(struct gate *g)
{
    char c;

    close(g->fd[1]);
    while (read(g->fd[0], &c, 1) < 0)
        ;
    close(g->fd[0]);
}

static void gate_open(struct gate *g)
{
    close(g->fd[0]);
    close(g->fd[1]); /* EOF for every child */
}

/* Waits for all, and counts the children that did not exit 0. */
static int children_failed(const pid_t *pids, int n)
{
    int failed = 0;

    for (int i = 0; i < n; i++) {
        int status = -1;
        if (pids[i] <= 0 || waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            failed++;
    }
    return failed;
}

/* One open, unwrap and close, as a CLI decrypt does. */
static CK_RV cycle(bool unwrap)
{
    struct hf_hsm *h = NULL;
    unsigned char *p = NULL;
    size_t pl = 0;
    CK_RV rv = hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, HF_TEST_USER_PIN, &h);

    if (rv == CKR_OK && unwrap) rv = hf_hsm_unwrap(h, KEK, blob, blob_len, &p, &pl);
    /* hsm.h: up to 7 zero bytes of padding may follow. */
    if (rv == CKR_OK && unwrap && (pl < sizeof(secret) || memcmp(p, secret, sizeof(secret)) != 0))
        rv = CKR_DATA_INVALID;
    hf_secmem_free(p, pl);
    hf_hsm_close(h);
    return rv;
}

/* Failed cycles (so a run without the lock shows how often the race hits), as an exit code. */
static int cycles_failed(int rounds, bool unwrap)
{
    int failed = 0;

    for (int i = 0; i < rounds; i++) {
        CK_RV rv = cycle(unwrap);
        if (rv != CKR_OK) {
            fprintf(stderr, "pid %ld round %d: 0x%lx\n", (long)getpid(), i, (unsigned long)rv);
            failed++;
        }
    }
    return failed;
}

/* ---- cases ---------------------------------------------------------------------------------- */

enum { CHILDREN = 6, ROUNDS = 20 };

static void test_six_processes_unwrap_while_another_logs_in(void)
{
    pid_t pids[CHILDREN];
    struct gate g;

    CU_ASSERT_EQUAL_FATAL(pipe(g.fd), 0);
    fflush(NULL);
    for (int i = 0; i < CHILDREN; i++) {
        if ((pids[i] = fork()) == 0) {
            gate_wait(&g);
            _exit(cycles_failed(ROUNDS, true));
        }
    }
    gate_open(&g);
    CU_ASSERT_EQUAL(cycles_failed(ROUNDS, false), 0);
    CU_ASSERT_EQUAL(children_failed(pids, CHILDREN), 0);
}

/* Tokens labelled label, seen by a process of its own (this one's module state would be stale). */
static int tokens_labelled(const char *label)
{
    pid_t pid;
    int status = -1;

    fflush(NULL);
    if ((pid = fork()) == 0) {
        void *dl = dlopen(HF_SOFTHSM_MODULE, RTLD_NOW | RTLD_LOCAL);
        CK_C_GetFunctionList get = dl ? (CK_C_GetFunctionList)dlsym(dl, "C_GetFunctionList") : NULL;
        CK_FUNCTION_LIST_PTR f;
        CK_SLOT_ID slots[32];
        CK_ULONG n = 32;
        CK_TOKEN_INFO info;
        int count = 0;

        if (get == NULL || get(&f) != CKR_OK || f->C_Initialize(NULL) != CKR_OK ||
            f->C_GetSlotList(CK_TRUE, slots, &n) != CKR_OK)
            _exit(100);
        for (CK_ULONG i = 0; i < n; i++)
            if (f->C_GetTokenInfo(slots[i], &info) == CKR_OK &&
                (info.flags & CKF_TOKEN_INITIALIZED) &&
                memcmp(info.label, label, strlen(label)) == 0 && info.label[strlen(label)] == ' ')
                count++;
        f->C_Finalize(NULL);
        _exit(count);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

static void test_four_processes_ensuring_a_token_create_one(void)
{
    enum { N = 4 };
    const char *label = "hf-test-mp-new";
    pid_t pids[N];
    struct gate g;

    CU_ASSERT_EQUAL_FATAL(tokens_labelled(label), 0);
    CU_ASSERT_EQUAL_FATAL(pipe(g.fd), 0);
    fflush(NULL);
    for (int i = 0; i < N; i++) {
        if ((pids[i] = fork()) == 0) {
            gate_wait(&g);
            _exit(hf_hsm_token_ensure(HF_SOFTHSM_MODULE, softhsm.lock_path, label, HF_TEST_SO_PIN,
                                      HF_TEST_USER_PIN) == CKR_OK
                      ? 0
                      : 1);
        }
    }
    gate_open(&g);
    CU_ASSERT_EQUAL(children_failed(pids, N), 0);
    CU_ASSERT_EQUAL(tokens_labelled(label), 1);
}

/* A process of its own holding op on the lock file until ms have passed or holder_end. */
struct holder {
    pid_t pid;
    int stop; /* write end: closing it ends the hold */
};

static bool holder_start(struct holder *h, int op, int ms)
{
    int ready[2], stop[2];
    char c = 0;

    if (pipe(ready) != 0 || pipe(stop) != 0) return false;
    fflush(NULL);
    if ((h->pid = fork()) == 0) {
        struct pollfd p = {.fd = stop[0], .events = POLLIN};
        int fd = open(softhsm.lock_path, O_RDWR | O_CLOEXEC);
        close(stop[1]);
        if (fd < 0 || flock(fd, op) != 0 || write(ready[1], "x", 1) != 1) _exit(1);
        poll(&p, 1, ms); /* woken by EOF when the parent closes stop[1] */
        _exit(0);
    }
    close(ready[1]);
    close(stop[0]);
    h->stop = stop[1];
    if (h->pid > 0 && read(ready[0], &c, 1) != 1) h->pid = -1;
    close(ready[0]);
    return h->pid > 0;
}

static bool holder_is_running(const struct holder *h)
{
    return waitpid(h->pid, NULL, WNOHANG) == 0;
}

static void holder_end(struct holder *h)
{
    close(h->stop);
    waitpid(h->pid, NULL, 0);
}

static void test_open_and_unwrap_wait_for_an_exclusive_holder(void)
{
    enum { HOLD_MS = 400 };
    struct hf_hsm *h = NULL;
    struct holder hold;
    unsigned char *p = NULL;
    size_t pl = 0;
    uint64_t t0;

    CU_ASSERT_FATAL(holder_start(&hold, LOCK_EX, HOLD_MS));
    t0 = ms_now();
    CU_ASSERT_EQUAL_FATAL(
        hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, HF_TEST_USER_PIN, &h), CKR_OK);
    CU_ASSERT_TRUE(ms_now() - t0 >= HOLD_MS - 50);
    holder_end(&hold);

    /* A process logging in (the holder) must not have its token file read under it. */
    CU_ASSERT_FATAL(holder_start(&hold, LOCK_EX, HOLD_MS));
    t0 = ms_now();
    CU_ASSERT_EQUAL(hf_hsm_unwrap(h, KEK, blob, blob_len, &p, &pl), CKR_OK);
    CU_ASSERT_TRUE(ms_now() - t0 >= HOLD_MS - 50);
    holder_end(&hold);
    hf_secmem_free(p, pl);
    hf_hsm_close(h);
}

static void test_unwrap_shares_the_lock_and_open_does_not(void)
{
    struct hf_hsm *h = NULL;
    struct holder hold;
    unsigned char *p = NULL;
    size_t pl = 0;
    uint64_t t0;

    CU_ASSERT_EQUAL_FATAL(
        hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, HF_TEST_USER_PIN, &h), CKR_OK);
    /* A reader elsewhere holds it for up to 30 s: unwrap runs beside it, open waits for it. */
    CU_ASSERT_FATAL(holder_start(&hold, LOCK_SH, 30000));
    CU_ASSERT_EQUAL(hf_hsm_unwrap(h, KEK, blob, blob_len, &p, &pl), CKR_OK);
    CU_ASSERT_TRUE(hf_hsm_has_kek(h, KEK));
    CU_ASSERT_TRUE(holder_is_running(&hold));
    hf_secmem_free(p, pl);
    hf_hsm_close(h);
    h = NULL;
    holder_end(&hold);
    CU_ASSERT_FATAL(holder_start(&hold, LOCK_SH, 400));
    t0 = ms_now();
    CU_ASSERT_EQUAL(hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, HF_TEST_USER_PIN, &h),
                    CKR_OK);
    CU_ASSERT_TRUE(ms_now() - t0 >= 350);
    holder_end(&hold);
    hf_hsm_close(h);
}

/* Descriptors of this process open on the lock file. */
static int lock_fds(void)
{
    char link[PATH_MAX], target[PATH_MAX];
    struct dirent *e;
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    if (d == NULL) return -1;
    while ((e = readdir(d)) != NULL) {
        ssize_t len;
        snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
        if ((len = readlink(link, target, sizeof(target) - 1)) < 0) continue;
        target[len] = '\0';
        if (strcmp(target, softhsm.lock_path) == 0) n++;
    }
    closedir(d);
    return n;
}

static void test_no_lock_descriptor_outlives_a_call(void)
{
    struct hf_hsm *h = NULL;
    unsigned char *p = NULL;
    size_t pl = 0;
    pid_t pid;

    /* So a child forked between calls inherits no lock, and exec'd programs none at all. */
    CU_ASSERT_EQUAL_FATAL(
        hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, HF_TEST_USER_PIN, &h), CKR_OK);
    CU_ASSERT_EQUAL(lock_fds(), 0);
    CU_ASSERT_EQUAL(hf_hsm_unwrap(h, KEK, blob, blob_len, &p, &pl), CKR_OK);
    CU_ASSERT_EQUAL(lock_fds(), 0);
    /* The child forgets the parent's handle and opens its own; the parent's still works. */
    fflush(NULL);
    if ((pid = fork()) == 0) {
        hf_hsm_abandon(h);
        _exit(cycle(true) == CKR_OK ? 0 : 1);
    }
    CU_ASSERT_EQUAL(children_failed(&pid, 1), 0);
    hf_secmem_free(p, pl);
    p = NULL;
    CU_ASSERT_EQUAL(hf_hsm_unwrap(h, KEK, blob, blob_len, &p, &pl), CKR_OK);
    hf_secmem_free(p, pl);
    hf_hsm_close(h);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"6 processes open, unwrap and close 20 times while another logs in 20 times",
         test_six_processes_unwrap_while_another_logs_in},
        {"4 processes ensuring one new token create exactly one",
         test_four_processes_ensuring_a_token_create_one},
        {"open and unwrap wait for another process's exclusive lock",
         test_open_and_unwrap_wait_for_an_exclusive_holder},
        {"unwrap shares the lock with other readers; open waits for them",
         test_unwrap_shares_the_lock_and_open_does_not},
        {"no lock descriptor outlives a call; a forked child reopens",
         test_no_lock_descriptor_outlives_a_call},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"several processes on one SoftHSMv2 token", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
