/* hsm-ref: SoftHSMv2 called directly, the reference make bench-hsm sets XKS encrypt on a pool key
 * beside (issue 14: >= 0.8x at no injected latency). THREADS threads each open their own
 * logged-in session on one of the TOKENs (thread i on token i mod N, as a pool spreads its calls
 * over its members) and, for SECONDS, encrypt a fresh 32-byte plaintext (an XKS data key) with
 * AES-256-GCM under the key labelled LABEL, a 12-byte IV and a 16-byte tag: C_EncryptInit then
 * C_Encrypt, the two calls a pool member gets for one XKS encrypt. Prints one line:
 *
 *   ops/s N p50_ms A p99_ms B errors E threads T
 *
 *   hsm-ref SECONDS THREADS MODULE PIN LABEL TOKEN [TOKEN...]
 *
 * Exit status 0 only when no call failed. */
#include "hf-build.h"

#include <openssl/rand.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "tests/p11-client.h"

#define THREADS_MAX 256
#define TOKENS_MAX 8
/* Latency histogram: 1 us buckets up to 100 ms, the rest in the last one; plenty for a p99 of
 * calls that take tens of microseconds. */
#define BUCKETS 100001

struct worker {
    pthread_t thread;
    struct p11_client *client;
    const char *pin, *label;
    double seconds;
    uint64_t ops, errors;
    uint32_t *hist; /* BUCKETS counts, the thread's own */
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *run(void *arg)
{
    struct worker *w = arg;
    CK_SESSION_HANDLE s = p11_client_session(w->client, w->pin);
    CK_OBJECT_HANDLE key = p11_client_find(w->client, s, CKO_SECRET_KEY, w->label);
    CK_BYTE iv[12], pt[32], ct[32 + 16];
    CK_GCM_PARAMS gcm = {.pIv = iv, .ulIvLen = sizeof(iv), .ulIvBits = 96, .ulTagBits = 128};
    CK_MECHANISM mech = {CKM_AES_GCM, &gcm, sizeof(gcm)};
    double end;

    if (key == CK_INVALID_HANDLE) p11_die("finding the key", CKR_KEY_HANDLE_INVALID);
    end = now_s() + w->seconds;
    for (;;) {
        double t0 = now_s(), t1;
        CK_ULONG n = sizeof(ct);
        CK_RV rv;
        uint64_t us;

        if (t0 >= end) break;
        /* Fresh IV and plaintext each time, as the gateway's are (OpenSSL's RNG, as its). */
        if (RAND_bytes(iv, sizeof(iv)) != 1 || RAND_bytes(pt, sizeof(pt)) != 1) {
            w->errors++;
            continue;
        }
        rv = w->client->f->C_EncryptInit(s, &mech, key);
        if (rv == CKR_OK) rv = w->client->f->C_Encrypt(s, pt, sizeof(pt), ct, &n);
        t1 = now_s();
        if (rv != CKR_OK || n != sizeof(ct)) {
            w->errors++;
            continue;
        }
        us = (uint64_t)((t1 - t0) * 1e6);
        w->hist[us < BUCKETS ? us : BUCKETS - 1]++;
        w->ops++;
    }
    w->client->f->C_CloseSession(s);
    return NULL;
}

static double percentile_ms(const uint64_t *hist, uint64_t total, double p)
{
    uint64_t rank = (uint64_t)((double)total * p / 100.0 + 0.999999), seen = 0;

    if (rank == 0) rank = 1;
    for (size_t i = 0; i < BUCKETS; i++) {
        seen += hist[i];
        if (seen >= rank) return (double)i / 1e3;
    }
    return 0.0;
}

int main(int argc, char **argv)
{
    static struct p11_client clients[TOKENS_MAX];
    static struct worker workers[THREADS_MAX];
    uint64_t *hist, ops = 0, errors = 0;
    unsigned threads;
    size_t ntokens;
    double seconds, t0, elapsed;

    if (argc < 7) {
        fprintf(stderr, "usage: hsm-ref SECONDS THREADS MODULE PIN LABEL TOKEN [TOKEN...]\n");
        return 2;
    }
    seconds = atof(argv[1]);
    threads = (unsigned)atoi(argv[2]);
    ntokens = (size_t)(argc - 6);
    if (seconds <= 0 || threads == 0 || threads > THREADS_MAX || ntokens > TOKENS_MAX) {
        fprintf(stderr, "hsm-ref: SECONDS > 0, THREADS 1 to %d, at most %d tokens\n", THREADS_MAX,
                TOKENS_MAX);
        return 2;
    }
    /* One module, loaded once (SoftHSMv2 keeps one instance per process): each client picks its
     * token's slot from it. */
    for (size_t i = 0; i < ntokens; i++)
        p11_client_load(&clients[i], argv[3], argv[6 + i]);
    hist = calloc(BUCKETS, sizeof(*hist));
    if (!hist) return 1;
    t0 = now_s();
    for (unsigned i = 0; i < threads; i++) {
        workers[i] = (struct worker){.client = &clients[i % ntokens],
                                     .pin = argv[4],
                                     .label = argv[5],
                                     .seconds = seconds,
                                     .hist = calloc(BUCKETS, sizeof(uint32_t))};
        if (!workers[i].hist || pthread_create(&workers[i].thread, NULL, run, &workers[i]) != 0) {
            fprintf(stderr, "hsm-ref: cannot start thread %u\n", i);
            return 1;
        }
    }
    for (unsigned i = 0; i < threads; i++) {
        pthread_join(workers[i].thread, NULL);
        ops += workers[i].ops;
        errors += workers[i].errors;
        for (size_t b = 0; b < BUCKETS; b++)
            hist[b] += workers[i].hist[b];
        free(workers[i].hist);
    }
    elapsed = now_s() - t0;
    printf("ops/s %.1f p50_ms %.3f p99_ms %.3f errors %llu threads %u\n", (double)ops / elapsed,
           percentile_ms(hist, ops, 50), percentile_ms(hist, ops, 99), (unsigned long long)errors,
           threads);
    free(hist);
    p11_client_unload(&clients[0]);
    return errors ? 1 : 0;
}
