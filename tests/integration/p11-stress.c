/* Concurrency: N threads, each with its own session, encrypt/decrypt (AES-GCM), sign/verify
 * (RSA-PSS, ECDSA) with the same keys for a while, and make, use and destroy session objects;
 * every result is checked. Exit 0 only with
 * zero errors. Run plain, under helgrind, and in a --enable-tsan build by concurrency.sh.
 *
 *   p11-stress MODULE PIN THREADS SECONDS */
#include "hf-build.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "tests/p11-client.h"

static struct p11_client client;
static const char *pin;
static double seconds;
static atomic_ulong errors, ops;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define CHECK(what, expr)                                                                          \
    do {                                                                                           \
        CK_RV rv_ = (expr);                                                                        \
        if (rv_ != CKR_OK) {                                                                       \
            fprintf(stderr, "%s: CKR 0x%lx\n", what, (unsigned long)rv_);                          \
            atomic_fetch_add(&errors, 1);                                                          \
            return;                                                                                \
        }                                                                                          \
    } while (0)

static void aes_round(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key, unsigned n)
{
    CK_FUNCTION_LIST *f = client.f;
    unsigned char iv[12] = {0}, pt[64], ct[80], back[80];
    CK_ULONG ct_len = sizeof(ct), back_len = sizeof(back);
    CK_GCM_PARAMS gcm = {iv, sizeof(iv), 96, (CK_BYTE_PTR) "aad", 3, 128};
    CK_MECHANISM m = {CKM_AES_GCM, &gcm, sizeof(gcm)};

    memcpy(iv, &n, sizeof(n));
    memset(pt, (int)n, sizeof(pt));
    CHECK("C_EncryptInit", f->C_EncryptInit(s, &m, key));
    CHECK("C_Encrypt", f->C_Encrypt(s, pt, sizeof(pt), ct, &ct_len));
    CHECK("C_DecryptInit", f->C_DecryptInit(s, &m, key));
    CHECK("C_Decrypt", f->C_Decrypt(s, ct, ct_len, back, &back_len));
    if (back_len != sizeof(pt) || memcmp(back, pt, sizeof(pt)) != 0) {
        fprintf(stderr, "AES-GCM round trip mismatch\n");
        atomic_fetch_add(&errors, 1);
    }
}

static void sign_round(CK_SESSION_HANDLE s, CK_MECHANISM *m, CK_OBJECT_HANDLE priv,
                       CK_OBJECT_HANDLE pub, unsigned n)
{
    CK_FUNCTION_LIST *f = client.f;
    unsigned char msg[48], sig[512];
    CK_ULONG sig_len = sizeof(sig);

    memset(msg, (int)n, sizeof(msg));
    CHECK("C_SignInit", f->C_SignInit(s, m, priv));
    CHECK("C_Sign", f->C_Sign(s, msg, sizeof(msg), sig, &sig_len));
    CHECK("C_VerifyInit", f->C_VerifyInit(s, m, pub));
    CHECK("C_Verify", f->C_Verify(s, msg, sizeof(msg), sig, sig_len));
    msg[0] ^= 1; /* a changed message must not verify */
    CHECK("C_VerifyInit", f->C_VerifyInit(s, m, pub));
    if (f->C_Verify(s, msg, sizeof(msg), sig, sig_len) != CKR_SIGNATURE_INVALID) {
        fprintf(stderr, "tampered message verified\n");
        atomic_fetch_add(&errors, 1);
    }
}

/* Session objects made, used and destroyed by every thread at once: an AES key each time, an EC
 * pair now and then (the module's session object table under its write lock). */
static void session_round(CK_SESSION_HANDLE s, CK_MECHANISM *m_ecdsa, unsigned n)
{
    static const unsigned char p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48,
                                         0xce, 0x3d, 0x03, 0x01, 0x07};
    CK_FUNCTION_LIST *f = client.f;
    CK_MECHANISM aes_gen = {CKM_AES_KEY_GEN, NULL, 0}, ec_gen = {CKM_EC_KEY_PAIR_GEN, NULL, 0};
    CK_BBOOL no = CK_FALSE;
    CK_ULONG len = 32;
    CK_ATTRIBUTE aes_t[] = {{CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_TOKEN, &no, sizeof(no)}};
    CK_ATTRIBUTE pub_t[] = {{CKA_EC_PARAMS, (void *)p256, sizeof(p256)},
                            {CKA_TOKEN, &no, sizeof(no)}};
    CK_ATTRIBUTE priv_t[] = {{CKA_TOKEN, &no, sizeof(no)}};
    CK_OBJECT_HANDLE aes, pub, priv;

    CHECK("C_GenerateKey (session)", f->C_GenerateKey(s, &aes_gen, aes_t, 2, &aes));
    aes_round(s, aes, n);
    CHECK("C_DestroyObject (session)", f->C_DestroyObject(s, aes));
    if (n % 4 != 0) return;
    CHECK("C_GenerateKeyPair (session)",
          f->C_GenerateKeyPair(s, &ec_gen, pub_t, 2, priv_t, 1, &pub, &priv));
    sign_round(s, m_ecdsa, priv, pub, n);
    CHECK("C_DestroyObject (session)", f->C_DestroyObject(s, priv));
    CHECK("C_DestroyObject (session)", f->C_DestroyObject(s, pub));
}

/* main's single round before the threads start: OpenSSL's lazy set-up (its primary DRBG, each
 * RSA key's Montgomery contexts) happens there, so helgrind watches our concurrency, not that. */
static bool warming;

static void *worker(void *arg)
{
    CK_SESSION_HANDLE s = p11_client_session(&client, pin);
    CK_OBJECT_HANDLE aes = p11_client_find(&client, s, CKO_SECRET_KEY, "stress-aes");
    CK_OBJECT_HANDLE rsa = p11_client_find(&client, s, CKO_PRIVATE_KEY, "stress-rsa");
    CK_OBJECT_HANDLE rsa_pub = p11_client_find(&client, s, CKO_PUBLIC_KEY, "stress-rsa");
    CK_OBJECT_HANDLE ec = p11_client_find(&client, s, CKO_PRIVATE_KEY, "stress-ec");
    CK_OBJECT_HANDLE ec_pub = p11_client_find(&client, s, CKO_PUBLIC_KEY, "stress-ec");
    CK_RSA_PKCS_PSS_PARAMS pss = {CKM_SHA256, CKG_MGF1_SHA256, 32};
    CK_MECHANISM m_pss = {CKM_SHA256_RSA_PKCS_PSS, &pss, sizeof(pss)};
    CK_MECHANISM m_ecdsa = {CKM_ECDSA_SHA256, NULL, 0};
    double end = now_s() + seconds;
    unsigned n = (unsigned)(uintptr_t)arg * 1000003u;

    if (!aes || !rsa || !rsa_pub || !ec || !ec_pub) {
        fprintf(stderr, "stress keys not found\n");
        atomic_fetch_add(&errors, 1);
        return NULL;
    }
    do {
        for (int i = 0; i < 16; i++)
            aes_round(s, aes, n++);
        sign_round(s, &m_ecdsa, ec, ec_pub, n++);
        if (n % 8 == 0 || warming) sign_round(s, &m_pss, rsa, rsa_pub, n);
        session_round(s, &m_ecdsa, n++);
        atomic_fetch_add(&ops, 19);
    } while (!warming && now_s() < end);
    client.f->C_CloseSession(s);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t tids[64];
    int threads;

    if (argc != 5) {
        fprintf(stderr, "usage: p11-stress MODULE PIN THREADS SECONDS\n");
        return 2;
    }
    pin = argv[2];
    threads = atoi(argv[3]);
    seconds = atof(argv[4]);
    if (threads < 1 || threads > 64 || seconds <= 0) return 2;
    p11_client_load(&client, argv[1], NULL);
    warming = true;
    worker(NULL);
    warming = false;
    for (int i = 0; i < threads; i++)
        pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    p11_client_unload(&client);
    printf("p11-stress: %d threads, %lu operations, %lu errors\n", threads, atomic_load(&ops),
           atomic_load(&errors));
    return atomic_load(&errors) == 0 && atomic_load(&ops) > 0 ? 0 : 1;
}
