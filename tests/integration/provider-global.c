/* provider-global MODULE PIN ORDER: the holdfast provider loaded globally (OPENSSL_CONF, set by
 * provider-global.sh, activates it in the default library context and makes every fetch that
 * names no provider prefer it) in a process that also uses holdfast-pkcs11.so directly.
 *
 * ORDER "module-first": the program initialises the module itself, then the provider finds it
 * initialised and shares it. ORDER "provider-first": the provider's first use initialises the
 * module (so the core, SoftHSMv2 under it and their OpenSSL set-up run inside a provider call),
 * then the program shares it.
 *
 * Either way the core generates RSA and EC keys, signs and decrypts through PKCS#11 while OpenSSL
 * prefers the holdfast provider process-wide, and two threads work at once (one through the
 * provider, one through PKCS#11). The core's crypto runs in its own library context, so none of
 * it can route back into the provider: a recursion would deadlock (the watchdog fails the run)
 * or fail an operation. Every signature is checked with the default provider. */
#include "hf-build.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>
#include <openssl/store.h>
#include <openssl/x509.h>

#include "tests/p11-client.h"

static atomic_int failures;
static struct p11_client client;
static const char *pin;
static char ec_label[64], ec2_label[64], rsa_label[64]; /* ORDER-ec, ORDER-ec-2, ORDER-rsa */

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, (what));                       \
            ERR_print_errors_fp(stderr);                                                           \
            atomic_fetch_add(&failures, 1);                                                        \
        }                                                                                          \
    } while (0)

static void on_alarm(int sig)
{
    static const char msg[] = "provider-global: no progress for 120 s (deadlock?)\n";
    (void)sig;
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(3);
}

/* ---- PKCS#11, directly ----------------------------------------------------------------------- */

static void generate(CK_SESSION_HANDLE s, bool rsa, const char *label, CK_OBJECT_HANDLE *pub,
                     CK_OBJECT_HANDLE *priv)
{
    static const CK_BYTE p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
    static const CK_BYTE e[] = {1, 0, 1};
    CK_MECHANISM mech = {rsa ? CKM_RSA_PKCS_KEY_PAIR_GEN : CKM_EC_KEY_PAIR_GEN, NULL, 0};
    CK_ULONG bits = 2048;
    CK_BBOOL yes = CK_TRUE;
    CK_ATTRIBUTE pub_rsa[] = {{CKA_MODULUS_BITS, &bits, sizeof(bits)},
                              {CKA_PUBLIC_EXPONENT, (void *)e, sizeof(e)},
                              {CKA_LABEL, (void *)label, strlen(label)}};
    CK_ATTRIBUTE pub_ec[] = {{CKA_EC_PARAMS, (void *)p256, sizeof(p256)},
                             {CKA_LABEL, (void *)label, strlen(label)}};
    CK_ATTRIBUTE priv_tmpl[] = {{CKA_TOKEN, &yes, sizeof(yes)},
                                {CKA_SIGN, &yes, sizeof(yes)},
                                {CKA_LABEL, (void *)label, strlen(label)}};
    CK_RV rv = client.f->C_GenerateKeyPair(s, &mech, rsa ? pub_rsa : pub_ec, rsa ? 3 : 2, priv_tmpl,
                                           3, pub, priv);
    if (rv != CKR_OK) p11_die("C_GenerateKeyPair", rv);
}

/* The public key of a token key, as a default-provider key (CKA_PUBLIC_KEY_INFO). */
static EVP_PKEY *token_public(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE pub)
{
    unsigned char der[1024];
    const unsigned char *p = der;
    CK_ATTRIBUTE a = {CKA_PUBLIC_KEY_INFO, der, sizeof(der)};

    if (client.f->C_GetAttributeValue(s, pub, &a, 1) != CKR_OK) return NULL;
    return d2i_PUBKEY_ex(NULL, &p, (long)a.ulValueLen, NULL, "provider=default");
}

/* C_Sign with CKM_ECDSA over a digest, checked with the default provider. */
static bool direct_ecdsa(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE priv, EVP_PKEY *pub, int seed)
{
    unsigned char dgst[32], raw[64], *der = NULL;
    CK_ULONG len = sizeof(raw);
    CK_MECHANISM mech = {CKM_ECDSA, NULL, 0};
    ECDSA_SIG *sig = ECDSA_SIG_new();
    EVP_PKEY_CTX *v = NULL;
    int der_len;
    bool ok = false;

    memset(dgst, seed, sizeof(dgst));
    if (client.f->C_SignInit(s, &mech, priv) != CKR_OK ||
        client.f->C_Sign(s, dgst, sizeof(dgst), raw, &len) != CKR_OK || len != 64)
        goto done;
    if (sig == NULL ||
        !ECDSA_SIG_set0(sig, BN_bin2bn(raw, 32, NULL), BN_bin2bn(raw + 32, 32, NULL)) ||
        (der_len = i2d_ECDSA_SIG(sig, &der)) <= 0)
        goto done;
    v = EVP_PKEY_CTX_new_from_pkey(NULL, pub, "provider=default");
    ok = v != NULL && EVP_PKEY_verify_init(v) == 1 &&
         EVP_PKEY_verify(v, der, (size_t)der_len, dgst, sizeof(dgst)) == 1;
done:
    EVP_PKEY_CTX_free(v);
    ECDSA_SIG_free(sig);
    OPENSSL_free(der);
    return ok;
}

/* RSA OAEP: encrypt with the default provider, C_Decrypt on the token. */
static bool direct_oaep(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE priv, EVP_PKEY *pub)
{
    unsigned char msg[32], ct[256], pt[256];
    size_t ctlen = sizeof(ct);
    CK_ULONG ptlen = sizeof(pt);
    CK_RSA_PKCS_OAEP_PARAMS oaep = {CKM_SHA256, CKG_MGF1_SHA256, CKZ_DATA_SPECIFIED, NULL, 0};
    CK_MECHANISM mech = {CKM_RSA_PKCS_OAEP, &oaep, sizeof(oaep)};
    EVP_PKEY_CTX *e = EVP_PKEY_CTX_new_from_pkey(NULL, pub, "provider=default");
    bool ok;

    memset(msg, 0x33, sizeof(msg));
    ok = e != NULL && EVP_PKEY_encrypt_init(e) == 1 &&
         EVP_PKEY_CTX_set_rsa_padding(e, RSA_PKCS1_OAEP_PADDING) == 1 &&
         EVP_PKEY_CTX_set_rsa_oaep_md(e, EVP_sha256()) == 1 &&
         EVP_PKEY_encrypt(e, ct, &ctlen, msg, sizeof(msg)) == 1 &&
         client.f->C_DecryptInit(s, &mech, priv) == CKR_OK &&
         client.f->C_Decrypt(s, ct, (CK_ULONG)ctlen, pt, &ptlen) == CKR_OK &&
         ptlen == sizeof(msg) && memcmp(pt, msg, sizeof(msg)) == 0;
    EVP_PKEY_CTX_free(e);
    return ok;
}

/* ---- the provider, globally --------------------------------------------------------------- */

static EVP_PKEY *provider_load(const char *uri)
{
    OSSL_STORE_CTX *st = OSSL_STORE_open(uri, NULL, NULL, NULL, NULL);
    OSSL_STORE_INFO *info;
    EVP_PKEY *key = NULL;

    if (st == NULL) return NULL;
    OSSL_STORE_expect(st, OSSL_STORE_INFO_PKEY);
    while (key == NULL && !OSSL_STORE_eof(st)) {
        if ((info = OSSL_STORE_load(st)) == NULL) continue;
        key = OSSL_STORE_INFO_get1_PKEY(info);
        OSSL_STORE_INFO_free(info);
    }
    OSSL_STORE_close(st);
    return key;
}

static bool provider_sign(EVP_PKEY *key, EVP_PKEY *pub, int seed)
{
    unsigned char dgst[32], sig[512];
    size_t siglen = sizeof(sig);
    EVP_PKEY_CTX *s = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
    EVP_PKEY_CTX *v = EVP_PKEY_CTX_new_from_pkey(NULL, pub, "provider=default");
    bool ok;

    memset(dgst, seed, sizeof(dgst));
    ok = s != NULL && v != NULL && EVP_PKEY_sign_init(s) == 1 &&
         EVP_PKEY_sign(s, sig, &siglen, dgst, sizeof(dgst)) == 1 && EVP_PKEY_verify_init(v) == 1 &&
         EVP_PKEY_verify(v, sig, siglen, dgst, sizeof(dgst)) == 1;
    EVP_PKEY_CTX_free(s);
    EVP_PKEY_CTX_free(v);
    return ok;
}

static bool provider_is_holdfast(EVP_PKEY *key)
{
    const OSSL_PROVIDER *prov = key != NULL ? EVP_PKEY_get0_provider(key) : NULL;
    return prov != NULL && strcmp(OSSL_PROVIDER_get0_name(prov), "holdfast") == 0;
}

/* ---- both at once ------------------------------------------------------------------------- */

struct both {
    EVP_PKEY *prov_key, *prov_pub;
    CK_OBJECT_HANDLE direct_priv;
    EVP_PKEY *direct_pub;
    int bad;
};

static void *provider_thread(void *arg)
{
    struct both *b = arg;
    for (int i = 0; i < 200; i++)
        if (!provider_sign(b->prov_key, b->prov_pub, i)) b->bad++;
    return NULL;
}

static void *direct_thread(void *arg)
{
    struct both *b = arg;
    CK_SESSION_HANDLE s = p11_client_session(&client, pin);
    CK_OBJECT_HANDLE pub, priv;

    for (int i = 0; i < 200; i++)
        if (!direct_ecdsa(s, b->direct_priv, b->direct_pub, i)) b->bad++;
    /* Key generation (the core wraps the new key under the root KEK, in SoftHSMv2). */
    generate(s, false, ec2_label, &pub, &priv);
    client.f->C_CloseSession(s);
    return NULL;
}

int main(int argc, char **argv)
{
    CK_SESSION_HANDLE s;
    CK_OBJECT_HANDLE ec_pub_h, ec_priv_h, rsa_pub_h, rsa_priv_h;
    EVP_PKEY *ec_pub, *rsa_pub, *first = NULL, *first_pub = NULL, *ec, *rsa;
    bool provider_first;
    struct both b = {0};
    pthread_t t1, t2;

    if (argc != 4 || (strcmp(argv[3], "module-first") && strcmp(argv[3], "provider-first"))) {
        fprintf(stderr, "usage: provider-global MODULE PIN module-first|provider-first\n");
        return 2;
    }
    pin = argv[2];
    provider_first = strcmp(argv[3], "provider-first") == 0;
    snprintf(ec_label, sizeof(ec_label), "%s-ec", argv[3]);
    snprintf(ec2_label, sizeof(ec2_label), "%s-ec-2", argv[3]);
    snprintf(rsa_label, sizeof(rsa_label), "%s-rsa", argv[3]);
    signal(SIGALRM, on_alarm);
    alarm(120);

    if (!OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL) ||
        !OSSL_PROVIDER_available(NULL, "holdfast") || !OSSL_PROVIDER_available(NULL, "default")) {
        ERR_print_errors_fp(stderr);
        fprintf(stderr, "OPENSSL_CONF did not load holdfast and default globally\n");
        return 1;
    }

    if (provider_first) {
        /* The provider initialises the module, inside OSSL_STORE_load. */
        first = provider_load("holdfast:prov-ec");
        CHECK(provider_is_holdfast(first), "provider-first: load holdfast:prov-ec");
        if (first != NULL) {
            unsigned char *der = NULL;
            const unsigned char *p;
            int len = i2d_PUBKEY(first, &der);
            p = der;
            first_pub = len > 0 ? d2i_PUBKEY_ex(NULL, &p, len, NULL, "provider=default") : NULL;
            OPENSSL_free(der);
            CHECK(provider_sign(first, first_pub, 1), "provider-first: sign");
        }
    }
    p11_client_load(&client, argv[1], NULL);
    CHECK(client.shared == provider_first, "who initialised the module");
    s = p11_client_session(&client, pin);
    generate(s, false, ec_label, &ec_pub_h, &ec_priv_h);
    generate(s, true, rsa_label, &rsa_pub_h, &rsa_priv_h);
    ec_pub = token_public(s, ec_pub_h);
    rsa_pub = token_public(s, rsa_pub_h);
    CHECK(ec_pub != NULL && rsa_pub != NULL, "public keys of generated keys");
    if (ec_pub == NULL || rsa_pub == NULL) return 1;
    CHECK(direct_ecdsa(s, ec_priv_h, ec_pub, 1), "C_Sign ECDSA");
    CHECK(direct_oaep(s, rsa_priv_h, rsa_pub), "C_Decrypt OAEP");

    /* The provider, on the keys just made, in the same process. */
    {
        char uri[128];
        snprintf(uri, sizeof(uri), "holdfast:%s", ec_label);
        ec = provider_load(uri);
        snprintf(uri, sizeof(uri), "pkcs11:object=%s;type=private", rsa_label);
        rsa = provider_load(uri);
    }
    CHECK(provider_is_holdfast(ec) && provider_is_holdfast(rsa), "provider loads the new keys");
    if (ec == NULL || rsa == NULL) return 1;
    CHECK(EVP_PKEY_eq(ec, ec_pub) == 1 && EVP_PKEY_eq(rsa, rsa_pub) == 1, "same keys");
    CHECK(provider_sign(ec, ec_pub, 2), "provider ECDSA");
    CHECK(provider_sign(rsa, rsa_pub, 3), "provider RSA");

    /* At once: the provider signing on one thread, PKCS#11 directly (and key generation) on
     * another. */
    b = (struct both){ec, ec_pub, ec_priv_h, ec_pub, 0};
    pthread_create(&t1, NULL, provider_thread, &b);
    pthread_create(&t2, NULL, direct_thread, &b);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    CHECK(b.bad == 0, "concurrent provider and PKCS#11 work");
    CHECK(direct_ecdsa(s, ec_priv_h, ec_pub, 4) && provider_sign(rsa, rsa_pub, 5), "afterwards");

    EVP_PKEY_free(ec);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec_pub);
    EVP_PKEY_free(rsa_pub);
    EVP_PKEY_free(first);
    EVP_PKEY_free(first_pub);
    client.f->C_CloseSession(s);
    /* The provider shares the module: whoever initialised it finalises it (the program here,
     * or the provider when OpenSSL unloads it at exit). */
    p11_client_unload(&client);
    alarm(0);
    if (atomic_load(&failures) != 0) {
        fprintf(stderr, "%d check(s) failed\n", atomic_load(&failures));
        return 1;
    }
    printf("provider-global (%s): all checks passed\n", argv[3]);
    return 0;
}
