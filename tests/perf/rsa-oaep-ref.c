/* rsa-oaep-ref: what raw OpenSSL does with RSA-3072 private-key operations on these cores, the
 * reference make bench-sap sets SAP's asymmetric-decrypt through holdfastd beside (target
 * >= 0.9x). Each thread decrypts the same RSAES-OAEP SHA-256 ciphertext of a 32-byte key (as
 * SAP's 384-byte ciphertexts; oaep-fixture.h, which mhd-floor --rsa-oaep decrypts too) with its
 * own context on one shared key, for SECONDS, and the total is printed as "ops/s N" (wall
 * clock), after the rate per CPU second.
 *
 *   rsa-oaep-ref [SECONDS [THREADS [BITS]]]   defaults 5, 2, 3072 */
#include "hf-build.h"

#include "tests/perf/oaep-fixture.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 64

static EVP_PKEY *key;
static unsigned char ct[1024];
static size_t ctlen;
static double seconds;
static atomic_ullong total;
static atomic_int failures;

static double clock_s(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static void *worker(void *arg)
{
    EVP_PKEY_CTX *ctx = hf_perf_oaep_ctx(key, true);
    unsigned char pt[1024];
    unsigned long long n = 0;
    double end = now_s() + seconds;

    (void)arg;
    if (!ctx) {
        atomic_fetch_add(&failures, 1);
        return NULL;
    }
    /* The clock is read every 16 operations: each is about a millisecond. */
    while (n % 16 != 0 || now_s() < end) {
        size_t ptlen = sizeof(pt);

        if (EVP_PKEY_decrypt(ctx, pt, &ptlen, ct, ctlen) != 1 || ptlen != HF_PERF_OAEP_PT_LEN) {
            atomic_fetch_add(&failures, 1);
            break;
        }
        n++;
    }
    EVP_PKEY_CTX_free(ctx);
    atomic_fetch_add(&total, n);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 2 ? atoi(argv[2]) : 2, bits = argc > 3 ? atoi(argv[3]) : 3072;
    pthread_t tid[MAX_THREADS];
    double t0, cpu0, elapsed, cpu;

    seconds = argc > 1 ? atof(argv[1]) : 5;
    if (seconds <= 0 || threads < 1 || threads > MAX_THREADS || bits < 2048) {
        fprintf(stderr, "usage: rsa-oaep-ref [SECONDS [THREADS (1..%d) [BITS]]]\n", MAX_THREADS);
        return 2;
    }
    ctlen = sizeof(ct);
    if (!(key = hf_perf_oaep_fixture((unsigned)bits, ct, &ctlen))) {
        fprintf(stderr, "rsa-oaep-ref: no RSA-%d key or ciphertext\n", bits);
        return 1;
    }
    t0 = now_s();
    cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, worker, NULL) != 0) return 1;
    for (int i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    elapsed = now_s() - t0;
    cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    EVP_PKEY_free(key);
    if (atomic_load(&failures)) {
        fprintf(stderr, "rsa-oaep-ref: a decryption failed\n");
        return 1;
    }
    /* Wall-clock ops/s is what the gateway's figure is set beside; per CPU second (what
     * `openssl speed` reports) says how much of the cores a busy machine left it. */
    printf("RSA-%d OAEP SHA-256 decrypt, %d threads, %.1f s, %.1f ops per CPU second: ops/s %.1f\n",
           bits, threads, elapsed, cpu > 0 ? (double)atomic_load(&total) / cpu : 0,
           (double)atomic_load(&total) / elapsed);
    return 0;
}
