/* make bench-provider: RSA-3072 and ECDSA P-256 signatures through the holdfast OpenSSL provider
 * (local keys in Holdfast, reached through PKCS#11) against OpenSSL's default provider with the
 * same key material, in one run, on 1 and 2 threads.
 *
 *   bench-provider import --module MODULE --pin PIN --dir DIR
 *       makes the two keys with OpenSSL, writes them to DIR/bench-{rsa,ec}.pem (for the default
 *       provider) and imports them into the token (C_CreateObject, labels bench-rsa, bench-ec)
 *   bench-provider run --provider-path DIR --module MODULE --pin PIN --dir DIR [--seconds S]
 *                      [--rounds N] [--threads 1,2] [--only TEXT]
 *       loads holdfast:bench-rsa and holdfast:bench-ec through the provider's store, the PEM
 *       files through the default provider, and measures
 *         sign         EVP_PKEY_sign of a SHA-256 digest, the context set up once per thread
 *         digest-sign  EVP_DigestSignInit + EVP_DigestSign of 64 bytes, a new context per
 *                      signature (what a TLS server does per handshake)
 *       and, for "sign", the module called directly ("pkcs11": C_SignInit + C_Sign of the input
 *       the provider sends, a session per thread), so holdfast / pkcs11 is the provider's own
 *       cost and pkcs11 / default the module's.
 *
 * Each figure is the best of N rounds of S seconds (default 5 x 1 s), the implementations
 * taking turns. --only TEXT runs the cells whose "mode key provider" contains TEXT (profiling).
 * RSA signs PKCS#1 v1.5 with SHA-256. A signature of each provider key is checked with the
 * default provider's public key before timing starts. */
#include "hf-build.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>
#include <openssl/store.h>
#include <openssl/ui.h>
#include <openssl/x509.h>

#include "tests/p11-client.h"

enum impl { IMPL_PROVIDER, IMPL_PKCS11, IMPL_DEFAULT };
enum alg { ALG_RSA, ALG_EC };
enum mode { MODE_SIGN, MODE_DIGEST_SIGN };
static const char *const impl_names[] = {"holdfast", "pkcs11", "default"};
static const char *const alg_names[] = {"RSA-3072", "ECDSA P-256"};
static const char *const mode_names[] = {"sign", "digest-sign"};

static EVP_PKEY *keys[3][2];     /* [impl][alg]; [IMPL_PKCS11] unused */
static struct p11_client direct; /* the module called directly (IMPL_PKCS11) */
static const char *const labels[] = {"bench-rsa", "bench-ec"};
static unsigned char digest_info[51]; /* DER DigestInfo of the SHA-256 digest signed */
static double seconds = 1.0;          /* per round */
static int rounds = 5;
static const char *only; /* --only: run the cells whose "mode key provider" contains this */
static atomic_bool stop;
static const char *store_pin;
static atomic_ulong errors;

struct worker {
    pthread_t tid;
    enum impl impl;
    enum alg alg;
    enum mode mode;
    unsigned long ops;
};

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

static void die(const char *what)
{
    fprintf(stderr, "bench-provider: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

static EVP_PKEY_CTX *sign_ctx(EVP_PKEY *key)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);

    if (ctx == NULL || EVP_PKEY_sign_init(ctx) <= 0 ||
        EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) <= 0 ||
        (EVP_PKEY_is_a(key, "RSA") && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) <= 0)) {
        EVP_PKEY_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* DER DigestInfo (RFC 8017 9.2) for SHA-256, with a zero digest the workers fill in. */
static void digest_info_make(void)
{
    X509_SIG *sig = X509_SIG_new();
    X509_ALGOR *alg;
    ASN1_OCTET_STRING *oct;
    unsigned char zero[32] = {0}, *p = digest_info;

    if (sig == NULL) die("X509_SIG_new");
    X509_SIG_getm(sig, &alg, &oct);
    if (!X509_ALGOR_set0(alg, OBJ_nid2obj(NID_sha256), V_ASN1_NULL, NULL) ||
        !ASN1_OCTET_STRING_set(oct, zero, sizeof(zero)) ||
        i2d_X509_SIG(sig, NULL) != (int)sizeof(digest_info) || i2d_X509_SIG(sig, &p) <= 0)
        die("DigestInfo");
    X509_SIG_free(sig);
}

/* The module without the provider: C_SignInit + C_Sign of the same input the provider sends
 * (a DigestInfo for RSA PKCS#1 v1.5, the digest for ECDSA), on a session of this thread. */
static void *direct_worker(struct worker *w, const unsigned char *dgst)
{
    CK_SESSION_HANDLE s = p11_client_session(&direct, store_pin);
    CK_OBJECT_HANDLE key = p11_client_find(&direct, s, CKO_PRIVATE_KEY, labels[w->alg]);
    CK_MECHANISM mech = {w->alg == ALG_RSA ? CKM_RSA_PKCS : CKM_ECDSA, NULL, 0};
    unsigned char sig[512];
    CK_RV rv = key == CK_INVALID_HANDLE ? CKR_KEY_HANDLE_INVALID : CKR_OK;

    memcpy(digest_info + sizeof(digest_info) - 32, dgst, 32);
    while (rv == CKR_OK && !atomic_load_explicit(&stop, memory_order_relaxed)) {
        CK_ULONG siglen = sizeof(sig);
        rv = direct.f->C_SignInit(s, &mech, key);
        if (rv == CKR_OK)
            rv = w->alg == ALG_RSA
                     ? direct.f->C_Sign(s, digest_info, sizeof(digest_info), sig, &siglen)
                     : direct.f->C_Sign(s, (CK_BYTE_PTR)dgst, 32, sig, &siglen);
        if (rv == CKR_OK) w->ops++;
    }
    if (rv != CKR_OK && atomic_fetch_add(&errors, 1) == 0) p11_die("direct C_Sign", rv);
    direct.f->C_CloseSession(s);
    return NULL;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    EVP_PKEY *key = keys[w->impl][w->alg];
    unsigned char dgst[32], msg[64], sig[512];
    EVP_PKEY_CTX *ctx = NULL;
    size_t siglen;

    memset(dgst, 0x5a, sizeof(dgst));
    memset(msg, 0xa5, sizeof(msg));
    if (w->impl == IMPL_PKCS11) return direct_worker(w, dgst);
    if (w->mode == MODE_SIGN && (ctx = sign_ctx(key)) == NULL) {
        atomic_fetch_add(&errors, 1);
        return NULL;
    }
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        bool ok;
        siglen = sizeof(sig);
        if (w->mode == MODE_SIGN) {
            ok = EVP_PKEY_sign(ctx, sig, &siglen, dgst, sizeof(dgst)) == 1;
        } else {
            EVP_MD_CTX *md = EVP_MD_CTX_new();
            ok = md != NULL &&
                 EVP_DigestSignInit_ex(md, NULL, "SHA256", NULL, NULL, key, NULL) == 1 &&
                 EVP_DigestSign(md, sig, &siglen, msg, sizeof(msg)) == 1;
            EVP_MD_CTX_free(md);
        }
        if (!ok) {
            if (atomic_fetch_add(&errors, 1) == 0) ERR_print_errors_fp(stderr);
            break;
        }
        w->ops++;
    }
    EVP_PKEY_CTX_free(ctx);
    return NULL;
}

/* Signatures per second of wall time; *per_cpu: per second of this process's CPU time (every
 * thread, the module's audit writer included), which other load on the machine disturbs less. */
static double run_cell(enum impl impl, enum alg alg, enum mode mode, int threads, double *per_cpu)
{
    struct worker w[16];
    unsigned long total = 0;
    double t0, t1, c0, c1;

    atomic_store(&stop, false);
    c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    t0 = now_s();
    for (int i = 0; i < threads; i++) {
        w[i] = (struct worker){.impl = impl, .alg = alg, .mode = mode};
        pthread_create(&w[i].tid, NULL, worker_main, &w[i]);
    }
    while (now_s() - t0 < seconds) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&stop, true);
    for (int i = 0; i < threads; i++) {
        pthread_join(w[i].tid, NULL);
        total += w[i].ops;
    }
    t1 = now_s();
    c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    *per_cpu = c1 > c0 ? (double)total / (c1 - c0) : 0;
    return (double)total / (t1 - t0);
}

/* ---- import ------------------------------------------------------------------------------------
 */

static CK_BYTE *bn_bytes(EVP_PKEY *key, const char *name, CK_ULONG *len)
{
    BIGNUM *bn = NULL;
    CK_BYTE *out;

    if (!EVP_PKEY_get_bn_param(key, name, &bn)) die(name);
    *len = (CK_ULONG)BN_num_bytes(bn);
    out = OPENSSL_malloc(*len ? *len : 1);
    if (out == NULL) die("out of memory");
    BN_bn2bin(bn, out);
    BN_clear_free(bn);
    return out;
}

static void import_rsa(struct p11_client *c, CK_SESSION_HANDLE s, EVP_PKEY *key)
{
    static const char *const names[] = {
        OSSL_PKEY_PARAM_RSA_N,         OSSL_PKEY_PARAM_RSA_E,
        OSSL_PKEY_PARAM_RSA_D,         OSSL_PKEY_PARAM_RSA_FACTOR1,
        OSSL_PKEY_PARAM_RSA_FACTOR2,   OSSL_PKEY_PARAM_RSA_EXPONENT1,
        OSSL_PKEY_PARAM_RSA_EXPONENT2, OSSL_PKEY_PARAM_RSA_COEFFICIENT1,
    };
    static const CK_ATTRIBUTE_TYPE types[] = {
        CKA_MODULUS, CKA_PUBLIC_EXPONENT, CKA_PRIVATE_EXPONENT, CKA_PRIME_1,
        CKA_PRIME_2, CKA_EXPONENT_1,      CKA_EXPONENT_2,       CKA_COEFFICIENT,
    };
    CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
    CK_KEY_TYPE kt = CKK_RSA;
    CK_BBOOL yes = CK_TRUE;
    CK_ATTRIBUTE tmpl[12] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &kt, sizeof(kt)},
        {CKA_TOKEN, &yes, sizeof(yes)},
        {CKA_LABEL, "bench-rsa", 9},
    };
    CK_OBJECT_HANDLE h;
    CK_RV rv;

    for (int i = 0; i < 8; i++) {
        CK_ULONG len;
        tmpl[4 + i].type = types[i];
        tmpl[4 + i].pValue = bn_bytes(key, names[i], &len);
        tmpl[4 + i].ulValueLen = len;
    }
    if ((rv = c->f->C_CreateObject(s, tmpl, 12, &h)) != CKR_OK) p11_die("C_CreateObject RSA", rv);
    for (int i = 4; i < 12; i++)
        OPENSSL_clear_free(tmpl[i].pValue, tmpl[i].ulValueLen);
}

static void import_ec(struct p11_client *c, CK_SESSION_HANDLE s, EVP_PKEY *key)
{
    /* DER OID of prime256v1 (RFC 5480). */
    static const CK_BYTE p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
    CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
    CK_KEY_TYPE kt = CKK_EC;
    CK_BBOOL yes = CK_TRUE;
    CK_ULONG len;
    CK_BYTE *d = bn_bytes(key, OSSL_PKEY_PARAM_PRIV_KEY, &len), value[32] = {0};
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &kt, sizeof(kt)},
        {CKA_TOKEN, &yes, sizeof(yes)},
        {CKA_LABEL, "bench-ec", 8},
        {CKA_EC_PARAMS, (void *)p256, sizeof(p256)},
        {CKA_VALUE, value, sizeof(value)},
    };
    CK_OBJECT_HANDLE h;
    CK_RV rv;

    if (len > sizeof(value)) die("EC private key too long");
    memcpy(value + sizeof(value) - len, d, len); /* fixed length, leading zeros kept */
    OPENSSL_clear_free(d, len);
    if ((rv = c->f->C_CreateObject(s, tmpl, 6, &h)) != CKR_OK) p11_die("C_CreateObject EC", rv);
    OPENSSL_cleanse(value, sizeof(value));
}

static void write_pem(const char *dir, const char *name, EVP_PKEY *key)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s.pem", dir, name);
    if ((f = fopen(path, "w")) == NULL || !PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL))
        die(path);
    fclose(f);
}

static int cmd_import(const char *module, const char *pin, const char *dir)
{
    struct p11_client c;
    CK_SESSION_HANDLE s;
    EVP_PKEY *rsa = EVP_RSA_gen(3072), *ec = EVP_EC_gen("P-256");

    if (rsa == NULL || ec == NULL) die("key generation");
    write_pem(dir, "bench-rsa", rsa);
    write_pem(dir, "bench-ec", ec);
    p11_client_load(&c, module, NULL);
    s = p11_client_session(&c, pin);
    import_rsa(&c, s, rsa);
    import_ec(&c, s, ec);
    c.f->C_CloseSession(s);
    p11_client_unload(&c);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec);
    return 0;
}

/* ---- run ---------------------------------------------------------------------------------------
 */

static int pin_cb(char *buf, int size, int rwflag, void *u)
{
    int len = (int)strlen(store_pin);

    if (len >= size) return -1;
    memcpy(buf, store_pin, (size_t)len);
    return len;
}

/* The PIN reaches the provider through OpenSSL's UI, as -passin gives it to the openssl CLI. */
static EVP_PKEY *load_store(const char *uri)
{
    UI_METHOD *ui = UI_UTIL_wrap_read_pem_callback(pin_cb, 0);
    OSSL_STORE_CTX *st;
    OSSL_STORE_INFO *info;
    EVP_PKEY *key = NULL;

    if (ui == NULL) die("UI method");
    st = OSSL_STORE_open_ex(uri, NULL, NULL, ui, NULL, NULL, NULL, NULL);
    if (st == NULL) die(uri);
    OSSL_STORE_expect(st, OSSL_STORE_INFO_PKEY);
    while (key == NULL && !OSSL_STORE_eof(st)) {
        if ((info = OSSL_STORE_load(st)) == NULL) continue;
        key = OSSL_STORE_INFO_get1_PKEY(info);
        OSSL_STORE_INFO_free(info);
    }
    OSSL_STORE_close(st);
    UI_destroy_method(ui);
    if (key == NULL) die(uri);
    return key;
}

static EVP_PKEY *load_pem(const char *dir, const char *name)
{
    char path[4096];
    FILE *f;
    EVP_PKEY *key;

    snprintf(path, sizeof(path), "%s/%s.pem", dir, name);
    if ((f = fopen(path, "r")) == NULL) die(path);
    key = PEM_read_PrivateKey_ex(f, NULL, NULL, NULL, NULL, "provider=default");
    fclose(f);
    if (key == NULL) die(path);
    return key;
}

/* A provider signature checked with the default provider's public key. */
static void check_same_key(enum alg alg)
{
    unsigned char dgst[32] = {1}, sig[512];
    size_t siglen = sizeof(sig);
    EVP_PKEY_CTX *s = sign_ctx(keys[IMPL_PROVIDER][alg]);
    EVP_PKEY_CTX *v = EVP_PKEY_CTX_new_from_pkey(NULL, keys[IMPL_DEFAULT][alg], "provider=default");

    if (s == NULL || EVP_PKEY_sign(s, sig, &siglen, dgst, sizeof(dgst)) != 1) die("provider sign");
    if (v == NULL || EVP_PKEY_verify_init(v) <= 0 ||
        EVP_PKEY_CTX_set_signature_md(v, EVP_sha256()) <= 0 ||
        EVP_PKEY_verify(v, sig, siglen, dgst, sizeof(dgst)) != 1)
        die("the provider's signature does not verify with the default provider's key");
    EVP_PKEY_CTX_free(s);
    EVP_PKEY_CTX_free(v);
}

static int cmd_run(const char *provider_path, const char *module, const char *dir,
                   const int *threads, int nthreads)
{
    double r[2][2][3][4], rc[2][2][3][4]; /* [mode][alg][impl][thread index]: wall, CPU */

    if (!OSSL_PROVIDER_set_default_search_path(NULL, provider_path) ||
        OSSL_PROVIDER_load(NULL, "default") == NULL || OSSL_PROVIDER_load(NULL, "holdfast") == NULL)
        die("cannot load the providers");
    keys[IMPL_PROVIDER][ALG_RSA] = load_store("holdfast:bench-rsa");
    keys[IMPL_PROVIDER][ALG_EC] = load_store("holdfast:bench-ec");
    keys[IMPL_DEFAULT][ALG_RSA] = load_pem(dir, "bench-rsa");
    keys[IMPL_DEFAULT][ALG_EC] = load_pem(dir, "bench-ec");
    check_same_key(ALG_RSA);
    check_same_key(ALG_EC);
    /* The same module in the same process: it is initialised already (by the provider). */
    p11_client_load(&direct, module, NULL);
    digest_info_make();

    printf("%-12s %-12s %-9s %7s %12s %12s\n", "mode", "key", "provider", "threads", "ops/s",
           "ops/cpu-s");
    /* Each figure is the best of `rounds` runs, the implementations taking turns round by
     * round: on a shared machine, a neighbour's burst then costs one round of one side, not
     * the comparison. */
    for (int m = 0; m < 2; m++)
        for (int a = 0; a < 2; a++)
            for (int t = 0; t < nthreads; t++) {
                bool run[3];
                for (int i = 0; i < 3; i++) {
                    char cell[64];
                    snprintf(cell, sizeof(cell), "%s %s %s", mode_names[m], alg_names[a],
                             impl_names[i]);
                    run[i] = !(i == IMPL_PKCS11 && m != MODE_SIGN) &&
                             (only == NULL || strstr(cell, only) != NULL);
                    r[m][a][i][t] = rc[m][a][i][t] = run[i] ? 0 : 1;
                }
                for (int round = 0; round < rounds; round++)
                    for (int k = 0; k < 3; k++) {
                        int i = (k + round) % 3;
                        double rate, cpu_rate;
                        if (!run[i]) continue;
                        rate = run_cell(i, a, m, threads[t], &cpu_rate);
                        if (rate > r[m][a][i][t]) r[m][a][i][t] = rate;
                        if (cpu_rate > rc[m][a][i][t]) rc[m][a][i][t] = cpu_rate;
                    }
                for (int i = 0; i < 3; i++) {
                    if (!run[i]) continue;
                    printf("%-12s %-12s %-9s %7d %12.0f %12.0f\n", mode_names[m], alg_names[a],
                           impl_names[i], threads[t], r[m][a][i][t], rc[m][a][i][t]);
                    fflush(stdout);
                }
            }
    printf("\nratios, same run, same key material, by ops/s (by ops/cpu-s): holdfast / default;\n"
           "for sign also holdfast / pkcs11 (what the provider costs) and pkcs11 / default (what\n"
           "the module costs):\n");
    for (int m = 0; m < 2; m++)
        for (int a = 0; a < 2; a++)
            for (int t = 0; t < nthreads; t++) {
                printf("  %-12s %-12s %d thread(s): %.2fx (%.2fx)", mode_names[m], alg_names[a],
                       threads[t], r[m][a][IMPL_PROVIDER][t] / r[m][a][IMPL_DEFAULT][t],
                       rc[m][a][IMPL_PROVIDER][t] / rc[m][a][IMPL_DEFAULT][t]);
                if (m == MODE_SIGN)
                    printf("   %.2fx (%.2fx)   %.2fx (%.2fx)",
                           r[m][a][IMPL_PROVIDER][t] / r[m][a][IMPL_PKCS11][t],
                           rc[m][a][IMPL_PROVIDER][t] / rc[m][a][IMPL_PKCS11][t],
                           r[m][a][IMPL_PKCS11][t] / r[m][a][IMPL_DEFAULT][t],
                           rc[m][a][IMPL_PKCS11][t] / rc[m][a][IMPL_DEFAULT][t]);
                printf("\n");
            }
    printf("errors: %lu\n", atomic_load(&errors));
    for (int i = 0; i < 3; i++)
        for (int a = 0; a < 2; a++)
            EVP_PKEY_free(keys[i][a]);
    return atomic_load(&errors) == 0 ? 0 : 1;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench-provider import --module MODULE --pin PIN --dir DIR\n"
            "       bench-provider run --provider-path DIR --module MODULE --pin PIN --dir DIR "
            "[--seconds S] [--rounds N] "
            "[--threads 1,2]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *module = NULL, *pin = NULL, *dir = NULL, *provider_path = NULL;
    int threads[4] = {1, 2}, nthreads = 2;

    if (argc < 2) usage();
    for (int i = 2; i < argc; i++) {
        if (i + 1 >= argc) usage();
        if (!strcmp(argv[i], "--module"))
            module = argv[++i];
        else if (!strcmp(argv[i], "--pin"))
            pin = argv[++i];
        else if (!strcmp(argv[i], "--dir"))
            dir = argv[++i];
        else if (!strcmp(argv[i], "--provider-path"))
            provider_path = argv[++i];
        else if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--rounds")) {
            rounds = atoi(argv[++i]);
            if (rounds < 1 || rounds > 100) usage();
        } else if (!strcmp(argv[i], "--only"))
            only = argv[++i];
        else if (!strcmp(argv[i], "--threads")) {
            char *p = argv[++i];
            nthreads = 0;
            while (*p && nthreads < 4) {
                threads[nthreads] = (int)strtol(p, &p, 10);
                if (threads[nthreads] < 1 || threads[nthreads] > 16) usage();
                nthreads++;
                if (*p == ',') p++;
            }
        } else
            usage();
    }
    if (!strcmp(argv[1], "import") && module && pin && dir) return cmd_import(module, pin, dir);
    if (!strcmp(argv[1], "run") && provider_path && module && pin && dir) {
        store_pin = pin;
        return cmd_run(provider_path, module, dir, threads, nthreads);
    }
    usage();
    return 2;
}
