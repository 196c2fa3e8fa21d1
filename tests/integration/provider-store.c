/* provider-store PROVIDER_DIR PIN: the holdfast provider as a C program uses it, OSSL_STORE to
 * find token keys and EVP to sign and decrypt with them, every result checked in a library
 * context that holds OpenSSL's default provider only. Run by provider-store.sh, which makes the
 * store and the keys prov-rsa (RSA-2048) and prov-ec (EC P-256) and checks the audit log after.
 *
 * Covers: a refused PIN never offered again (a second provider instance starts clean);
 * listings with and without a PIN; ECDSA, RSA PKCS#1 v1.5 and PSS, pre-hashed and digest-sign;
 * OAEP and PKCS#1 decryption; key comparison across providers; private material refused on the
 * way out and on the way in; public-key import; 4 threads signing with one key; and fork: a
 * child signs with the keys its parent loaded (the provider re-initialises the module and logs
 * back in), and the parent goes on signing after it; a second provider instance sharing the
 * module and its login, also in a child. Exit 0 when every check passed. */
#include "hf-build.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>
#include <openssl/store.h>
#include <openssl/ui.h>
#include <openssl/x509.h>

static atomic_int failures;

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, (what));                       \
            ERR_print_errors_fp(stderr);                                                           \
            atomic_fetch_add(&failures, 1);                                                        \
        }                                                                                          \
    } while (0)

static const char *provider_dir;
static OSSL_LIB_CTX *plain; /* OpenSSL's default provider only: the referee */

/* A library context and the providers loaded into it (unloaded before the context is freed). */
struct lib {
    OSSL_LIB_CTX *ctx;
    OSSL_PROVIDER *dflt, *holdfast;
};

static void lib_open(struct lib *l, bool holdfast)
{
    memset(l, 0, sizeof(*l));
    l->ctx = OSSL_LIB_CTX_new();
    if (l->ctx == NULL || !OSSL_PROVIDER_set_default_search_path(l->ctx, provider_dir) ||
        (l->dflt = OSSL_PROVIDER_load(l->ctx, "default")) == NULL ||
        (holdfast && (l->holdfast = OSSL_PROVIDER_load(l->ctx, "holdfast")) == NULL)) {
        ERR_print_errors_fp(stderr);
        fprintf(stderr, "cannot load the providers (holdfast from %s)\n", provider_dir);
        exit(1);
    }
}

static void lib_close(struct lib *l)
{
    OSSL_PROVIDER_unload(l->holdfast);
    OSSL_PROVIDER_unload(l->dflt);
    OSSL_LIB_CTX_free(l->ctx);
}

/* OpenSSL's UI hands this the PIN, as -passin does for the openssl CLI. */
static int pin_cb(char *buf, int size, int rwflag, void *u)
{
    const char *pin = u;
    int len = (int)strlen(pin);

    if (len >= size) return -1;
    memcpy(buf, pin, (size_t)len);
    return len;
}

struct listing {
    int pkeys, pubkeys, others;
    EVP_PKEY *first_pkey, *first_pubkey;
};

/* Every object uri names; pin NULL: no UI at all. */
static void store_list(OSSL_LIB_CTX *ctx, const char *uri, const char *pin, int expect,
                       struct listing *l)
{
    UI_METHOD *ui = pin != NULL ? UI_UTIL_wrap_read_pem_callback(pin_cb, 0) : NULL;
    OSSL_STORE_CTX *st = OSSL_STORE_open_ex(uri, ctx, NULL, ui, (void *)pin, NULL, NULL, NULL);
    OSSL_STORE_INFO *info;

    memset(l, 0, sizeof(*l));
    if (st != NULL) {
        if (expect != 0) OSSL_STORE_expect(st, expect);
        while (!OSSL_STORE_eof(st)) {
            if ((info = OSSL_STORE_load(st)) == NULL) continue;
            switch (OSSL_STORE_INFO_get_type(info)) {
            case OSSL_STORE_INFO_PKEY:
                if (l->pkeys++ == 0) l->first_pkey = OSSL_STORE_INFO_get1_PKEY(info);
                break;
            case OSSL_STORE_INFO_PUBKEY:
                if (l->pubkeys++ == 0) l->first_pubkey = OSSL_STORE_INFO_get1_PUBKEY(info);
                break;
            default:
                l->others++;
            }
            OSSL_STORE_INFO_free(info);
        }
        OSSL_STORE_close(st);
    }
    UI_destroy_method(ui);
}

static EVP_PKEY *load_private(OSSL_LIB_CTX *ctx, const char *uri, const char *pin)
{
    struct listing l;

    store_list(ctx, uri, pin, OSSL_STORE_INFO_PKEY, &l);
    return l.first_pkey;
}

/* Whether the error queue holds one of ours saying text; empties the queue. */
static bool error_says(const char *text)
{
    const char *data = NULL;
    unsigned long e;
    bool found = false;
    int flags;

    while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
        const char *reason = ERR_reason_error_string(e);
        if ((reason != NULL && strstr(reason, text) != NULL) ||
            ((flags & ERR_TXT_STRING) && data != NULL && strstr(data, text) != NULL))
            found = true;
    }
    return found;
}

/* The public half as the default provider sees it, from our SubjectPublicKeyInfo encoder. */
static EVP_PKEY *public_of(EVP_PKEY *key)
{
    unsigned char *der = NULL;
    const unsigned char *p;
    int len = i2d_PUBKEY(key, &der);
    EVP_PKEY *pub;

    if (len <= 0) return NULL;
    p = der;
    pub = d2i_PUBKEY_ex(NULL, &p, len, plain, NULL);
    OPENSSL_free(der);
    return pub;
}

/* ---- signing -----------------------------------------------------------------------------------
 */

enum pad { PAD_NONE_EC, PAD_PKCS1, PAD_PSS };

static bool sign_digest(EVP_PKEY *key, enum pad pad, const unsigned char *dgst, unsigned char *sig,
                        size_t *siglen)
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
    bool ok = c != NULL && EVP_PKEY_sign_init(c) == 1 &&
              EVP_PKEY_CTX_set_signature_md(c, EVP_sha256()) == 1 &&
              (pad == PAD_NONE_EC ||
               EVP_PKEY_CTX_set_rsa_padding(c, pad == PAD_PSS ? RSA_PKCS1_PSS_PADDING
                                                              : RSA_PKCS1_PADDING) == 1) &&
              EVP_PKEY_sign(c, sig, siglen, dgst, 32) == 1;

    EVP_PKEY_CTX_free(c);
    return ok;
}

static bool verify_digest(EVP_PKEY *pub, enum pad pad, const unsigned char *dgst,
                          const unsigned char *sig, size_t siglen)
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(plain, pub, NULL);
    bool ok = c != NULL && EVP_PKEY_verify_init(c) == 1 &&
              EVP_PKEY_CTX_set_signature_md(c, EVP_sha256()) == 1 &&
              (pad == PAD_NONE_EC ||
               EVP_PKEY_CTX_set_rsa_padding(c, pad == PAD_PSS ? RSA_PKCS1_PSS_PADDING
                                                              : RSA_PKCS1_PADDING) == 1) &&
              EVP_PKEY_verify(c, sig, siglen, dgst, 32) == 1;

    EVP_PKEY_CTX_free(c);
    return ok;
}

/* Sign a fresh digest with key, verify with pub in the default provider. */
static bool sign_round(EVP_PKEY *key, EVP_PKEY *pub, enum pad pad, unsigned int seed)
{
    unsigned char dgst[32], sig[512];
    size_t siglen = sizeof(sig);

    for (size_t i = 0; i < sizeof(dgst); i++)
        dgst[i] = (unsigned char)(seed * 31 + i);
    return sign_digest(key, pad, dgst, sig, &siglen) && verify_digest(pub, pad, dgst, sig, siglen);
}

static void test_digest_sign(EVP_PKEY *key, EVP_PKEY *pub, const char *what)
{
    static const unsigned char msg[] = "a message of some length, hashed by the provider";
    unsigned char sig[512];
    size_t siglen = sizeof(sig);
    EVP_MD_CTX *s = EVP_MD_CTX_new(), *v = EVP_MD_CTX_new();

    CHECK(s != NULL && EVP_DigestSignInit_ex(s, NULL, "SHA384", NULL, NULL, key, NULL) == 1 &&
              EVP_DigestSignUpdate(s, msg, 10) == 1 &&
              EVP_DigestSignUpdate(s, msg + 10, sizeof(msg) - 10) == 1 &&
              EVP_DigestSignFinal(s, sig, &siglen) == 1,
          what);
    CHECK(v != NULL && EVP_DigestVerifyInit_ex(v, NULL, "SHA384", plain, NULL, pub, NULL) == 1 &&
              EVP_DigestVerify(v, sig, siglen, msg, sizeof(msg)) == 1,
          what);
    EVP_MD_CTX_free(s);
    EVP_MD_CTX_free(v);
}

static void test_decrypt(EVP_PKEY *rsa, EVP_PKEY *rsa_pub, bool oaep)
{
    unsigned char secret[48], ct[512], pt[512];
    size_t ctlen = sizeof(ct), ptlen = sizeof(pt);
    EVP_PKEY_CTX *e = EVP_PKEY_CTX_new_from_pkey(plain, rsa_pub, NULL);
    EVP_PKEY_CTX *d = EVP_PKEY_CTX_new_from_pkey(NULL, rsa, NULL);
    int pad = oaep ? RSA_PKCS1_OAEP_PADDING : RSA_PKCS1_PADDING;

    memset(secret, 0x42, sizeof(secret));
    CHECK(e != NULL && EVP_PKEY_encrypt_init(e) == 1 && EVP_PKEY_CTX_set_rsa_padding(e, pad) == 1 &&
              (!oaep || (EVP_PKEY_CTX_set_rsa_oaep_md(e, EVP_sha256()) == 1 &&
                         EVP_PKEY_CTX_set_rsa_mgf1_md(e, EVP_sha256()) == 1)) &&
              EVP_PKEY_encrypt(e, ct, &ctlen, secret, sizeof(secret)) == 1,
          "encrypt with the default provider");
    CHECK(d != NULL && EVP_PKEY_decrypt_init(d) == 1 && EVP_PKEY_CTX_set_rsa_padding(d, pad) == 1 &&
              (!oaep || (EVP_PKEY_CTX_set_rsa_oaep_md(d, EVP_sha256()) == 1 &&
                         EVP_PKEY_CTX_set_rsa_mgf1_md(d, EVP_sha256()) == 1)) &&
              EVP_PKEY_decrypt(d, pt, &ptlen, ct, ctlen) == 1,
          oaep ? "OAEP decrypt through the provider" : "PKCS#1 decrypt through the provider");
    CHECK(ptlen == sizeof(secret) && memcmp(pt, secret, ptlen) == 0, "decrypted plaintext");
    EVP_PKEY_CTX_free(e);
    EVP_PKEY_CTX_free(d);
}

/* ---- threads
 * ------------------------------------------------------------------------------------- */

struct thread_arg {
    EVP_PKEY *key, *pub;
    unsigned int seed;
    int bad;
};

static void *thread_main(void *arg)
{
    struct thread_arg *t = arg;

    for (int i = 0; i < 100; i++)
        if (!sign_round(t->key, t->pub, PAD_NONE_EC, t->seed * 1000 + (unsigned int)i)) t->bad++;
    return NULL;
}

/* ---- fork ----------------------------------------------------------------------------------- */

/* Runs fn in a child (60 s to finish); whether it exited 0. */
static bool in_child(bool (*fn)(void *), void *arg)
{
    pid_t pid = fork();
    int status = 0;

    if (pid < 0) return false;
    if (pid == 0) {
        bool ok;
        alarm(60); /* a hang in the child (a lock the parent held) fails, never blocks */
        ok = fn(arg);
        if (!ok) ERR_print_errors_fp(stderr);
        _exit(ok ? 0 : 1);
    }
    for (int i = 0; i < 700; i++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
        usleep(100 * 1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    fprintf(stderr, "child did not finish\n");
    return false;
}

struct fork_keys {
    EVP_PKEY *ec, *ec_pub, *rsa, *rsa_pub;
    OSSL_LIB_CTX *ctx;
    const char *pin;
};

static bool child_signs(void *arg)
{
    struct fork_keys *k = arg;

    return sign_round(k->ec, k->ec_pub, PAD_NONE_EC, 7) &&
           sign_round(k->rsa, k->rsa_pub, PAD_PSS, 8);
}

static bool child_signs_ec(void *arg)
{
    struct fork_keys *k = arg;

    return sign_round(k->ec, k->ec_pub, PAD_NONE_EC, 13);
}

static bool child_loads_and_signs(void *arg)
{
    struct fork_keys *k = arg;
    EVP_PKEY *ec = load_private(k->ctx, "holdfast:prov-ec", NULL);
    bool ok =
        ec != NULL && EVP_PKEY_eq(ec, k->ec_pub) == 1 && sign_round(ec, k->ec_pub, PAD_NONE_EC, 9);

    EVP_PKEY_free(ec);
    return ok;
}

int main(int argc, char **argv)
{
    struct lib referee, lib1, lib;
    OSSL_LIB_CTX *ctx;
    EVP_PKEY *ec, *rsa, *ec_pub, *rsa_pub, *k;
    struct listing l;
    struct fork_keys fk;
    const char *pin;

    if (argc != 3) {
        fprintf(stderr, "usage: provider-store PROVIDER_DIR PIN\n");
        return 2;
    }
    provider_dir = argv[1];
    pin = argv[2];
    lib_open(&referee, false);
    plain = referee.ctx;

    /* A refused PIN: reported, and never offered again by this provider instance, even with
     * the right one. (First, before anything logs the token in for the process.) */
    lib_open(&lib1, true);
    CHECK(load_private(lib1.ctx, "holdfast:prov-ec", "not-the-pin") == NULL, "wrong PIN accepted");
    CHECK(error_says("refused the PIN"), "no 'refused the PIN' error");
    CHECK(load_private(lib1.ctx, "holdfast:prov-ec", pin) == NULL, "a PIN was tried again");
    CHECK(error_says("not retried"), "no 'not retried' error");
    lib_close(&lib1);

    /* Everything else in a fresh instance. No PIN: public objects only. */
    lib_open(&lib, true);
    ctx = lib.ctx;
    store_list(ctx, "pkcs11:", NULL, 0, &l);
    CHECK(l.pkeys == 0 && l.pubkeys == 2 && l.others == 0, "listing without a PIN");
    EVP_PKEY_free(l.first_pubkey);
    ERR_clear_error();
    store_list(ctx, "pkcs11:", pin, 0, &l);
    CHECK(l.pkeys == 2 && l.pubkeys == 2 && l.others == 0, "listing with the PIN");
    EVP_PKEY_free(l.first_pkey);
    EVP_PKEY_free(l.first_pubkey);
    store_list(ctx, "pkcs11:object=prov-ec;colour=blue", pin, 0, &l);
    CHECK(l.pkeys + l.pubkeys + l.others == 0, "an unknown URI attribute matched");
    CHECK(error_says("unknown path attribute"), "no 'unknown path attribute' error");

    ec = load_private(ctx, "pkcs11:object=prov-ec;type=private", pin);
    rsa = load_private(ctx, "holdfast:prov-rsa", pin);
    CHECK(ec != NULL && rsa != NULL, "loading the private keys");
    if (ec == NULL || rsa == NULL) return 1;
    ec_pub = public_of(ec);
    rsa_pub = public_of(rsa);
    CHECK(ec_pub != NULL && rsa_pub != NULL, "public halves through the encoder");
    if (ec_pub == NULL || rsa_pub == NULL) return 1;

    /* The key as OpenSSL sees it. */
    CHECK(EVP_PKEY_is_a(rsa, "RSA") && EVP_PKEY_get_bits(rsa) == 2048, "RSA key size");
    CHECK(EVP_PKEY_is_a(ec, "EC") && EVP_PKEY_get_bits(ec) == 256, "EC key size");
    {
        char group[32];
        CHECK(EVP_PKEY_get_group_name(ec, group, sizeof(group), NULL) == 1 &&
                  strcmp(group, "prime256v1") == 0,
              "EC group name");
    }
    CHECK(EVP_PKEY_eq(ec, ec_pub) == 1 && EVP_PKEY_eq(rsa_pub, rsa) == 1,
          "token key and its public key match across providers");
    CHECK(EVP_PKEY_eq(ec, rsa_pub) != 1, "different keys matched");
    store_list(ctx, "holdfast:prov-ec;type=public", NULL, 0, &l);
    CHECK(l.pubkeys == 1 && EVP_PKEY_eq(l.first_pubkey, ec_pub) == 1, "public object");
    /* The public object comes back as a default-provider key: public work stays there. */
    CHECK(l.first_pubkey != NULL &&
              strcmp(OSSL_PROVIDER_get0_name(EVP_PKEY_get0_provider(l.first_pubkey)), "default") ==
                  0,
          "public object not a default-provider key");
    EVP_PKEY_free(l.first_pubkey);

    /* Private material has no way out. */
    {
        OSSL_PARAM *params = NULL;
        BIGNUM *d = NULL;
        unsigned char *der = NULL;
        CHECK(EVP_PKEY_todata(ec, EVP_PKEY_KEYPAIR, &params) != 1, "private export");
        CHECK(EVP_PKEY_get_bn_param(rsa, OSSL_PKEY_PARAM_RSA_D, &d) != 1, "RSA d readable");
        CHECK(i2d_PrivateKey(ec, &der) <= 0, "private key encoded");
        OSSL_PARAM_free(params);
        BN_free(d);
        OPENSSL_free(der);
        ERR_clear_error();
    }
    /* Public keys import into the provider; private ones do not. */
    {
        OSSL_PARAM *pub_params = NULL, *priv_params = NULL;
        EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(ctx, "EC", "provider=holdfast");
        EVP_PKEY *mine = NULL, *full = EVP_EC_gen("P-256"), *refused = NULL;
        CHECK(EVP_PKEY_todata(ec_pub, EVP_PKEY_PUBLIC_KEY, &pub_params) == 1 &&
                  EVP_PKEY_todata(full, EVP_PKEY_KEYPAIR, &priv_params) == 1,
              "params for import");
        CHECK(c != NULL && EVP_PKEY_fromdata_init(c) == 1 &&
                  EVP_PKEY_fromdata(c, &mine, EVP_PKEY_PUBLIC_KEY, pub_params) == 1 &&
                  EVP_PKEY_eq(mine, ec) == 1,
              "public key import");
        CHECK(EVP_PKEY_fromdata(c, &refused, EVP_PKEY_KEYPAIR, priv_params) != 1,
              "private key import accepted");
        CHECK(error_says("cannot be imported"), "no 'cannot be imported' error");
        /* An imported public key verifies (through the default provider) but cannot sign. */
        CHECK(mine != NULL && !sign_round(mine, ec_pub, PAD_NONE_EC, 1), "a public key signed");
        ERR_clear_error();
        EVP_PKEY_free(mine);
        EVP_PKEY_free(full);
        OSSL_PARAM_free(pub_params);
        OSSL_PARAM_free(priv_params);
        EVP_PKEY_CTX_free(c);
    }

    /* Signing and decrypting. */
    CHECK(sign_round(ec, ec_pub, PAD_NONE_EC, 1), "ECDSA sign");
    CHECK(sign_round(rsa, rsa_pub, PAD_PKCS1, 2), "RSA PKCS#1 v1.5 sign");
    CHECK(sign_round(rsa, rsa_pub, PAD_PSS, 3), "RSA-PSS sign");
    test_digest_sign(ec, ec_pub, "ECDSA digest-sign");
    test_digest_sign(rsa, rsa_pub, "RSA digest-sign");
    test_decrypt(rsa, rsa_pub, true);
    test_decrypt(rsa, rsa_pub, false);
    /* The EC key cannot decrypt, and signing a non-digest is refused. */
    {
        unsigned char sig[512], short_in[5] = {0};
        size_t siglen = sizeof(sig);
        EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, rsa, NULL);
        CHECK(c != NULL && EVP_PKEY_sign_init(c) == 1 &&
                  EVP_PKEY_CTX_set_signature_md(c, EVP_sha256()) == 1 &&
                  EVP_PKEY_sign(c, sig, &siglen, short_in, sizeof(short_in)) != 1,
              "a 5-byte 'SHA-256 digest' was signed");
        EVP_PKEY_CTX_free(c);
        ERR_clear_error();
    }

    /* Four threads, one key. */
    {
        pthread_t tid[4];
        struct thread_arg ta[4];
        for (int i = 0; i < 4; i++) {
            ta[i] = (struct thread_arg){ec, ec_pub, (unsigned int)i, 0};
            pthread_create(&tid[i], NULL, thread_main, &ta[i]);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(tid[i], NULL);
            CHECK(ta[i].bad == 0, "a threaded signature failed");
        }
    }

    /* Fork: the child uses its parent's keys, then loads one itself; the parent carries on. */
    fk = (struct fork_keys){ec, ec_pub, rsa, rsa_pub, ctx, pin};
    CHECK(in_child(child_signs, &fk), "signing in a forked child");
    CHECK(in_child(child_loads_and_signs, &fk), "loading and signing in a forked child");
    CHECK(sign_round(ec, ec_pub, PAD_NONE_EC, 10) && sign_round(rsa, rsa_pub, PAD_PSS, 11),
          "the parent after its children");

    /* A second provider instance (another library context) shares the module and its login;
     * in a forked child it logs back in with the PIN the first instance's login proved. */
    {
        struct lib lib2;
        EVP_PKEY *ec2;
        lib_open(&lib2, true);
        ec2 = load_private(lib2.ctx, "holdfast:prov-ec", pin);
        fk = (struct fork_keys){ec2, ec_pub, rsa, rsa_pub, lib2.ctx, pin};
        CHECK(ec2 != NULL && sign_round(ec2, ec_pub, PAD_NONE_EC, 12), "a second instance");
        CHECK(ec2 != NULL && in_child(child_signs_ec, &fk), "a second instance in a child");
        EVP_PKEY_free(ec2);
        lib_close(&lib2);
    }

    k = load_private(ctx, "holdfast:prov-ec", pin);
    CHECK(k != NULL && EVP_PKEY_eq(k, ec) == 1, "loading again");
    EVP_PKEY_free(k);
    EVP_PKEY_free(ec);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec_pub);
    EVP_PKEY_free(rsa_pub);
    lib_close(&lib);
    lib_close(&referee);
    if (atomic_load(&failures) != 0) {
        fprintf(stderr, "%d check(s) failed\n", atomic_load(&failures));
        return 1;
    }
    printf("provider-store: all checks passed\n");
    return 0;
}
