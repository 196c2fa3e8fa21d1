/* The HSM pool's failover against real failing HSMs (issue 14): N threads send steady
 * AES-ECB encryptions of one block through hf_pool_run for a while, each answer checked against
 * OpenSSL's AES-ECB of the same block under the same key value, so a member answering garbage
 * counts as a failure. At the end, one line per phase (split at the given seconds): calls,
 * failures, p50/p99/max latency and which member answered; then one line per member from
 * hf_pool_status. Exit status 0 only with zero failed calls. pool-failover.sh drives it.
 *
 *   pool-failover [--threads N] [--seconds D] [--phases S1,S2,...] [--key-label L]
 *                 --member NAME MODULE TOKEN-LABEL PIN CONCURRENCY ...
 *
 * Before the pool opens, each member gets the test key (CKA_LABEL L, a fixed AES-256 value,
 * sensitive, not extractable) by C_CreateObject unless its token has one already. */
#include "hf-build.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pkcs11/core/hsm.h"
#include "pkcs11/core/pool.h"

#define MEMBERS_MAX 8
#define PHASES_MAX 8
#define THREADS_MAX 256

/* A test value, not a secret: the same on every member, so any member can answer any call. */
static const CK_BYTE key_value[32] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f};
static const char *key_label = "pool-failover";

static struct hf_pool_member_spec specs[MEMBERS_MAX];
static size_t n_members;
static double phase_ends[PHASES_MAX]; /* seconds from the start; the last is the run's end */
static size_t n_phases;
static double seconds = 9;
static unsigned n_threads = 8;
static uint64_t t_start_us;

/* One call as the caller saw it: when it started (from t_start_us), how long hf_pool_run took,
 * whether it failed and which member answered. */
struct sample {
    uint64_t start_us;
    uint32_t latency_us;
    uint8_t member; /* MEMBERS_MAX: none */
    bool failed;
};

/* Each thread's own samples: owned by the thread until it is joined, by main after. */
struct worker {
    pthread_t thread;
    unsigned id;
    struct sample *samples;
    size_t n, cap;
    uint64_t first_failure_rv;
    bool has_failure;
};

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- the work: one AES-ECB block under the test key ------------------------------------------ */

struct encrypt_call {
    CK_BYTE in[16], out[16];
    size_t member; /* who answered last */
};

static CK_RV key_handle(struct hf_hsm *hsm, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE *h)
{
    CK_RV rv = hf_hsm_object_find(hsm, s, CKO_SECRET_KEY, key_label, h);

    if (rv == CKR_OK && *h == CK_INVALID_HANDLE) rv = CKR_KEY_HANDLE_INVALID;
    return rv;
}

static CK_RV encrypt_block(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                           CK_SESSION_HANDLE s, void *arg)
{
    struct encrypt_call *c = arg;
    CK_MECHANISM mech = {CKM_AES_ECB, NULL, 0};
    CK_OBJECT_HANDLE key;
    CK_ULONG len = sizeof(c->out);
    CK_RV rv;

    c->member = member;
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((rv = key_handle(hsm, s, &key)) != CKR_OK) return rv;
        rv = f->C_EncryptInit(s, &mech, key);
        if (rv != CKR_KEY_HANDLE_INVALID && rv != CKR_OBJECT_HANDLE_INVALID) break;
        /* A handle cached before the token was reloaded: search again. */
        hf_hsm_object_forget(hsm, CKO_SECRET_KEY, key_label);
    }
    if (rv != CKR_OK) return rv;
    return f->C_Encrypt(s, c->in, sizeof(c->in), c->out, &len);
}

static bool is_expected(const CK_BYTE in[16], const CK_BYTE out[16])
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    unsigned char want[32];
    int len = 0;
    bool ok;

    ok = ctx != NULL && EVP_EncryptInit_ex(ctx, EVP_aes_256_ecb(), NULL, key_value, NULL) == 1 &&
         EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 &&
         EVP_EncryptUpdate(ctx, want, &len, in, 16) == 1 && len == 16 && memcmp(want, out, 16) == 0;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/* The probe's own check: a member comes back only when it encrypts correctly. */
static CK_RV probe_encrypt(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                           CK_SESSION_HANDLE s, void *arg)
{
    struct encrypt_call c = {{0}, {0}, 0};
    CK_RV rv;

    (void)arg;
    memcpy(c.in, "pool-failover-pr", 16);
    rv = encrypt_block(hsm, member, f, s, &c);
    if (rv == CKR_OK && !is_expected(c.in, c.out)) rv = CKR_DEVICE_ERROR;
    return rv;
}

/* ---- the test key on each member ------------------------------------------------------------- */

static CK_RV key_create(struct hf_hsm *hsm, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, void *arg)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_TOKEN, &yes, sizeof(yes)},
        {CKA_PRIVATE, &yes, sizeof(yes)},
        {CKA_SENSITIVE, &yes, sizeof(yes)},
        {CKA_EXTRACTABLE, &no, sizeof(no)},
        {CKA_ENCRYPT, &yes, sizeof(yes)},
        {CKA_LABEL, (void *)key_label, strlen(key_label)},
        {CKA_VALUE, (void *)key_value, sizeof(key_value)},
    };
    CK_OBJECT_HANDLE h;
    CK_RV rv = hf_hsm_object_find(hsm, s, CKO_SECRET_KEY, key_label, &h);

    (void)arg;
    if (rv != CKR_OK || h != CK_INVALID_HANDLE) return rv;
    return f->C_CreateObject(s, tmpl, sizeof(tmpl) / sizeof(tmpl[0]), &h);
}

static bool keys_ensure(void)
{
    for (size_t i = 0; i < n_members; i++) {
        struct hf_hsm *hsm = NULL;
        CK_RV rv =
            hf_hsm_open(specs[i].module_path, NULL, specs[i].token_label, specs[i].pin, &hsm);
        if (rv == CKR_OK) rv = hf_hsm_run(hsm, key_create, NULL);
        hf_hsm_close(hsm);
        if (rv != CKR_OK) {
            fprintf(stderr, "pool-failover: member %s: the test key: 0x%lx\n", specs[i].name,
                    (unsigned long)rv);
            return false;
        }
    }
    return true;
}

/* ---- the load -------------------------------------------------------------------------------- */

static struct hf_pool *pool;

static bool sample_add(struct worker *w, const struct sample *s)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 4096;
        struct sample *grown = realloc(w->samples, cap * sizeof(*grown));
        if (grown == NULL) return false;
        w->samples = grown;
        w->cap = cap;
    }
    w->samples[w->n++] = *s;
    return true;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    uint64_t end = t_start_us + (uint64_t)(seconds * 1e6);
    uint64_t seq = 0;

    for (;;) {
        struct encrypt_call c = {{0}, {0}, MEMBERS_MAX};
        struct sample s = {0};
        uint64_t t0 = now_us();
        CK_RV rv;

        if (t0 >= end) break;
        /* A different block each call: an answer replayed from an earlier call is caught. */
        memcpy(c.in, &w->id, sizeof(w->id));
        memcpy(c.in + 8, &seq, sizeof(seq));
        seq++;
        rv = hf_pool_run(pool, encrypt_block, &c);
        s.start_us = t0 - t_start_us;
        s.latency_us = (uint32_t)(now_us() - t0);
        s.member = rv == CKR_OK ? (uint8_t)c.member : MEMBERS_MAX;
        s.failed = rv != CKR_OK || !is_expected(c.in, c.out);
        if (s.failed && !w->has_failure) {
            w->has_failure = true;
            w->first_failure_rv = rv == CKR_OK ? (uint64_t)-1 : rv;
        }
        if (!sample_add(w, &s)) {
            fprintf(stderr, "pool-failover: out of memory\n");
            break;
        }
    }
    return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

static uint32_t percentile(const uint32_t *sorted, size_t n, unsigned pct)
{
    if (n == 0) return 0;
    size_t i = (n * pct + 99) / 100; /* nearest rank */
    return sorted[i == 0 ? 0 : i - 1];
}

/* One line per phase; the count of failed calls over all phases. */
static uint64_t phases_report(struct worker *workers)
{
    uint64_t failed_all = 0, start = 0;

    for (size_t p = 0; p < n_phases; p++) {
        uint64_t end = (uint64_t)(phase_ends[p] * 1e6);
        uint64_t calls = 0, failed = 0, by_member[MEMBERS_MAX + 1] = {0};
        uint32_t *lat = NULL;
        size_t n = 0;

        for (unsigned t = 0; t < n_threads; t++)
            for (size_t i = 0; i < workers[t].n; i++) {
                const struct sample *s = &workers[t].samples[i];
                if (s->start_us < start || (s->start_us >= end && p + 1 < n_phases)) continue;
                calls++;
            }
        if (calls > 0 && (lat = malloc(calls * sizeof(*lat))) == NULL) {
            fprintf(stderr, "pool-failover: out of memory\n");
            exit(1);
        }
        for (unsigned t = 0; t < n_threads; t++)
            for (size_t i = 0; i < workers[t].n; i++) {
                const struct sample *s = &workers[t].samples[i];
                if (s->start_us < start || (s->start_us >= end && p + 1 < n_phases)) continue;
                lat[n++] = s->latency_us;
                failed += s->failed;
                by_member[s->member]++;
            }
        qsort(lat, n, sizeof(*lat), cmp_u32);
        printf("phase %zu %.1f-%.1fs: calls %llu failures %llu p50 %u us p99 %u us max %u us "
               "answered",
               p + 1, (double)start / 1e6, phase_ends[p], (unsigned long long)calls,
               (unsigned long long)failed, percentile(lat, n, 50), percentile(lat, n, 99),
               n > 0 ? lat[n - 1] : 0);
        for (size_t m = 0; m < n_members; m++)
            printf(" %s=%llu", specs[m].name, (unsigned long long)by_member[m]);
        printf("\n");
        free(lat);
        failed_all += failed;
        start = end;
    }
    return failed_all;
}

static void members_report(void)
{
    struct hf_pool_member_status st[MEMBERS_MAX];
    struct hf_pool_queue_status q;
    size_t n = hf_pool_status(pool, st, MEMBERS_MAX);

    for (size_t i = 0; i < n && i < MEMBERS_MAX; i++)
        printf("member %s: calls %llu failures %llu failovers %llu queued %llu healthy %s\n",
               st[i].name, (unsigned long long)st[i].calls, (unsigned long long)st[i].failures,
               (unsigned long long)st[i].failovers, (unsigned long long)st[i].queued,
               st[i].healthy ? "yes" : "no");
    hf_pool_queue_status(pool, &q);
    printf("pool: throttled %llu unavailable %llu\n", (unsigned long long)q.throttled,
           (unsigned long long)q.unavailable);
}

/* ---- arguments ------------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: pool-failover [--threads N] [--seconds D] [--phases S1,S2,...] "
                    "[--key-label L] --member NAME MODULE TOKEN-LABEL PIN CONCURRENCY ...\n");
    exit(2);
}

static bool phases_parse(const char *arg)
{
    char *copy = strdup(arg), *save = NULL;
    bool ok = copy != NULL;

    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; ok && tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        char *end;
        double v = strtod(tok, &end);
        ok = *end == '\0' && v > 0 && n_phases + 1 < PHASES_MAX &&
             (n_phases == 0 || v > phase_ends[n_phases - 1]);
        if (ok) phase_ends[n_phases++] = v;
    }
    free(copy);
    return ok;
}

static void args_parse(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            n_threads = (unsigned)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = strtod(argv[++i], NULL);
        } else if (strcmp(argv[i], "--phases") == 0 && i + 1 < argc) {
            if (!phases_parse(argv[++i])) usage();
        } else if (strcmp(argv[i], "--key-label") == 0 && i + 1 < argc) {
            key_label = argv[++i];
        } else if (strcmp(argv[i], "--member") == 0 && i + 5 < argc && n_members < MEMBERS_MAX) {
            struct hf_pool_member_spec *m = &specs[n_members++];
            m->name = argv[i + 1];
            m->module_path = argv[i + 2];
            m->token_label = argv[i + 3];
            m->pin = argv[i + 4];
            m->concurrency = (unsigned)strtoul(argv[i + 5], NULL, 10);
            i += 5;
        } else {
            usage();
        }
    }
    if (n_members == 0 || n_threads == 0 || n_threads > THREADS_MAX || !(seconds > 0)) usage();
    if (n_phases > 0 && phase_ends[n_phases - 1] >= seconds) usage();
    phase_ends[n_phases++] = seconds;
}

int main(int argc, char **argv)
{
    struct hf_pool_options opts = {
        .queue_max = THREADS_MAX,
        .probe_fn = probe_encrypt,
    };
    struct worker *workers = NULL;
    uint64_t failed = 0;
    unsigned started = 0;
    int status = 1;
    CK_RV rv;

    args_parse(argc, argv);
    /* p11-kit-client writes to its server's socket without MSG_NOSIGNAL: once the server is
     * killed, the next write would end this process (tests/shim/README.md). */
    signal(SIGPIPE, SIG_IGN);
    if (!keys_ensure()) return 1;
    if ((rv = hf_pool_open(specs, n_members, &opts, &pool)) != CKR_OK) {
        fprintf(stderr, "pool-failover: hf_pool_open: 0x%lx\n", (unsigned long)rv);
        return 1;
    }
    if ((workers = calloc(n_threads, sizeof(*workers))) == NULL) goto done;
    printf("pool-failover: %u threads, %.1f s, %zu members\n", n_threads, seconds, n_members);
    fflush(stdout);
    t_start_us = now_us();
    for (started = 0; started < n_threads; started++) {
        workers[started].id = started;
        if (pthread_create(&workers[started].thread, NULL, worker_main, &workers[started]) != 0)
            break;
    }
    for (unsigned t = 0; t < started; t++)
        pthread_join(workers[t].thread, NULL);
    if (started < n_threads) {
        fprintf(stderr, "pool-failover: started %u of %u threads\n", started, n_threads);
        goto done;
    }
    failed = phases_report(workers);
    members_report();
    for (unsigned t = 0; t < n_threads; t++)
        if (workers[t].has_failure)
            fprintf(stderr, "pool-failover: thread %u: first failure 0x%llx%s\n", t,
                    (unsigned long long)workers[t].first_failure_rv,
                    workers[t].first_failure_rv == (uint64_t)-1 ? " (a wrong ciphertext)" : "");
    status = failed == 0 ? 0 : 1;
done:
    hf_pool_close(pool);
    for (unsigned t = 0; workers != NULL && t < n_threads; t++)
        free(workers[t].samples);
    free(workers);
    return status;
}
