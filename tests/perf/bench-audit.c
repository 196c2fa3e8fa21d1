/* make bench-audit: what the keyed audit chain costs per record, against the unkeyed SHA-256
 * chain (what every record cost before the chain was keyed) measured in the same run. Two logs
 * in a temp dir, one opened with a SoftHSMv2 token (keyed: HMAC under a stream key derived in
 * the HSM, checkpoints signed there) and one without; the same records are appended to each in
 * alternating slices of SLICE_MS, so the machine's drift falls on both alike. Prints records/s
 * per thread count and the ratio keyed / unkeyed; then, from the AES-GCM rate given with
 * --op-rate (bench-pkcs11's holdfast row), what the difference costs a key operation. */
#include "hf-build.h"

#include "harness.h"
#include "pkcs11/core/audit.h"
#include "pkcs11/core/hsm.h"
#include "pkcs11/core/root.h"
#include "pkcs11/core/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLICE_MS 200
#define TOKEN "hf-bench-audit"

struct slice {
    struct hf_audit *log;
    atomic_bool stop;
    atomic_ullong records;
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *appender(void *arg)
{
    struct slice *s = arg;
    const struct hf_audit_record rec = {.api = "pkcs11",
                                        .operation = "encrypt",
                                        .key_uuid = "6f9619ff-8b86-4011-b42d-00c04fc964ff",
                                        .key_name = "bench-aes",
                                        .version = 1,
                                        .caller = "bench",
                                        .detail = "CKM_AES_GCM",
                                        .result = 0,
                                        .latency_us = 3};
    unsigned long long n = 0;
    uint64_t seq;

    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        if (hf_audit_append(s->log, &rec, &seq) != CKR_OK) {
            fprintf(stderr, "bench-audit: append failed\n");
            exit(1);
        }
        n++;
    }
    atomic_fetch_add(&s->records, n);
    return NULL;
}

/* Records appended to log by threads threads in one slice, per second. */
static double slice_run(struct hf_audit *log, int threads)
{
    struct slice s = {.log = log};
    pthread_t tid[8];
    double t0 = now_s();

    for (int i = 0; i < threads; i++)
        pthread_create(&tid[i], NULL, appender, &s);
    usleep(SLICE_MS * 1000);
    atomic_store(&s.stop, true);
    for (int i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    return (double)atomic_load(&s.records) / (now_s() - t0);
}

static struct hf_audit *log_open(const char *dir, const char *name, struct hf_root *root,
                                 struct hf_store *store)
{
    char path[PATH_MAX + 64];
    struct hf_audit *a = NULL;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct hf_audit_config cfg = {.path = path,
                                  .node = "bench",
                                  .sync_interval_ms = 5,
                                  .success_events = true,
                                  .root = root,
                                  .store = store};
    if (hf_audit_open(&cfg, &a) != CKR_OK) {
        fprintf(stderr, "bench-audit: cannot open %s\n", path);
        exit(1);
    }
    return a;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 4, op_rate = argc > 2 ? atof(argv[2]) : 0;
    struct hf_test_softhsm softhsm;
    struct hf_hsm *hsm = NULL;
    struct hf_root *root = NULL;
    struct hf_store *store = NULL;
    char db[PATH_MAX + 16];

    if (hf_test_softhsm_setup(&softhsm, "hf-bench-audit") != 0) return 1;
    snprintf(db, sizeof(db), "%s/store.db", softhsm.dir);
    if (hf_hsm_token_ensure(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, HF_TEST_SO_PIN,
                            HF_TEST_USER_PIN) != CKR_OK ||
        hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, HF_TEST_USER_PIN, &hsm) !=
            CKR_OK ||
        hf_hsm_mac_key_ensure(hsm, HF_AUDIT_MAC_LABEL) != CKR_OK ||
        hf_hsm_mac_key_ensure(hsm, HF_AUDIT_CHECKPOINT_LABEL) != CKR_OK ||
        hf_root_of_hsm(hsm, &root) != CKR_OK || hf_store_open(db, &store) != CKR_OK) {
        fprintf(stderr, "bench-audit: no SoftHSMv2 token or store\n");
        return 1;
    }
    struct hf_audit *keyed = log_open(softhsm.dir, "keyed.log", root, store);
    struct hf_audit *plain = log_open(softhsm.dir, "unkeyed.log", NULL, NULL);

    printf("bench-audit: %ld cores, %.0fs per log and thread count, slices of %d ms\n",
           sysconf(_SC_NPROCESSORS_ONLN), seconds, SLICE_MS);
    printf("threads   keyed rec/s  unkeyed rec/s  keyed/unkeyed  cost per record\n");
    for (int threads = 1; threads <= 2; threads++) {
        double k = 0, u = 0;
        int slices = (int)(seconds * 1000 / SLICE_MS);
        for (int i = 0; i < slices; i++) {
            k += slice_run(keyed, threads);
            u += slice_run(plain, threads);
        }
        k /= slices;
        u /= slices;
        double extra_ns = (1e9 / k - 1e9 / u) * threads;
        printf("%7d  %12.0f  %13.0f  %13.3f  %+10.0f ns\n", threads, k, u, k / u, extra_ns);
        if (op_rate > 0)
            printf("         at %.0f key operations/s per thread: %.1f%% of each operation\n",
                   op_rate, 100.0 * extra_ns * op_rate / 1e9);
    }
    hf_audit_close(keyed);
    hf_audit_close(plain);
    hf_store_close(store);
    hf_root_close(root);
    hf_hsm_close(hsm);
    hf_test_softhsm_teardown(&softhsm);
    return 0;
}
