/* mhd-floor: the least any libmicrohttpd gateway built like holdfastd can cost per request, for
 * make bench-gateway and make bench-sap to set beside holdfastd in the same run.
 *
 * It answers every request with one fixed body, on libmicrohttpd with holdfastd's flags (a thread
 * pool sized to the cores; epoll for plain listeners, poll for TLS; keep-alive; the server
 * certificate given by a callback in the handshake). With --suspend each request is also
 * suspended and resumed from another thread in batches, which is what ARCHITECTURE.md's
 * durable-audit rule costs at the least (a request gives its thread back while its record's
 * group commit runs) with no audit, crypto or parsing at all.
 *
 * --client-ca requires a client certificate chaining to CA in every handshake, as holdfastd's
 * listeners with client_certificate = required do (gateway/tls.c: the trust list also given to
 * libmicrohttpd, the request and a verify function set from the certificate callback, so a
 * refused certificate fails the handshake). --rsa-oaep makes each request also decrypt one
 * RSAES-OAEP SHA-256 ciphertext of a BITS key with OpenSSL (oaep-fixture.h, what rsa-oaep-ref
 * decrypts; one context per server thread): with both, what SAP's asymmetric-decrypt costs any
 * libmicrohttpd server at the least (make bench-sap).
 *
 *   mhd-floor PORT BODY [--suspend] [--tls CERT KEY [--client-ca CA]] [--rsa-oaep BITS]
 *
 * Runs until killed. */
#include "hf-build.h"

#include "tests/perf/oaep-fixture.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct floor_request {
    bool suspended, resumed;
    struct MHD_Connection *conn;
    struct floor_request *next;
};

static const char *reply_body;
static size_t reply_len;
static bool suspend_each;

/* The server's certificate chain and key for the handshake callback; read-only once started. */
static struct {
    gnutls_pcert_st chain[8];
    unsigned nchain;
    gnutls_privkey_t key;
    bool client_cert_required;
} tls;

/* --rsa-oaep: the key and the ciphertext every request decrypts. */
static struct {
    EVP_PKEY *key;
    unsigned char ct[1024];
    size_t ctlen;
} rsa = {.ctlen = sizeof(rsa.ct)};

/* Each server thread's decryption context, made on its first request: contexts are not shared
 * between threads, and one made per request would be work the floor need not do. */
static _Thread_local EVP_PKEY_CTX *rsa_ctx;

static bool rsa_decrypt(void)
{
    unsigned char pt[1024];
    size_t ptlen = sizeof(pt);

    if (!rsa_ctx && !(rsa_ctx = hf_perf_oaep_ctx(rsa.key, true))) return false;
    return EVP_PKEY_decrypt(rsa_ctx, pt, &ptlen, rsa.ct, rsa.ctlen) == 1 &&
           ptlen == HF_PERF_OAEP_PT_LEN;
}

/* The chain against the trust list libmicrohttpd loaded from MHD_OPTION_HTTPS_MEM_TRUST, inside
 * the handshake: non-zero ends it. */
static int client_verify(gnutls_session_t session)
{
    unsigned status = 0;

    return gnutls_certificate_verify_peers2(session, &status) == 0 && status == 0
               ? 0
               : GNUTLS_E_CERTIFICATE_ERROR;
}

/* libmicrohttpd asks for a client certificate only when given a trust list and never checks it:
 * as gateway/tls.c, the certificate callback (in the handshake, before the CertificateRequest is
 * written) requires one and installs the check. */
static int cert_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                         const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                         gnutls_pcert_st **pcert, unsigned int *pcert_length,
                         gnutls_privkey_t *pkey)
{
    (void)req_ca_dn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
    if (tls.client_cert_required) {
        gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
        gnutls_session_set_verify_function(session, client_verify);
    }
    *pcert = tls.chain;
    *pcert_length = tls.nchain;
    *pkey = tls.key;
    return 0;
}

/* The stand-in for the audit writer: takes every suspended request queued so far and resumes
 * them together, as one group commit would. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct floor_request *queue;
} resumer = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL};

static void *resumer_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct floor_request *batch;
        pthread_mutex_lock(&resumer.lock);
        while (!resumer.queue)
            pthread_cond_wait(&resumer.wake, &resumer.lock);
        batch = resumer.queue;
        resumer.queue = NULL;
        pthread_mutex_unlock(&resumer.lock);
        while (batch) {
            struct floor_request *next = batch->next;
            batch->resumed = true;
            MHD_resume_connection(batch->conn);
            batch = next;
        }
    }
    return NULL;
}

static enum MHD_Result suspend_until_resumed(struct floor_request *r, struct MHD_Connection *conn)
{
    r->suspended = true;
    r->conn = conn;
    MHD_suspend_connection(conn);
    pthread_mutex_lock(&resumer.lock);
    r->next = resumer.queue;
    resumer.queue = r;
    pthread_cond_signal(&resumer.wake);
    pthread_mutex_unlock(&resumer.lock);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    struct floor_request *r = *con_cls;
    struct MHD_Response *resp;
    enum MHD_Result rv;

    (void)cls, (void)url, (void)method, (void)version, (void)upload;
    if (!r) {
        if (!(r = calloc(1, sizeof(*r)))) return MHD_NO;
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    /* Once per request: a suspended request comes back here after its resume. */
    if (rsa.key && !r->suspended && !rsa_decrypt()) return MHD_NO;
    if (suspend_each && !r->suspended) return suspend_until_resumed(r, conn);
    if (suspend_each && !r->resumed) return MHD_YES;
    resp = MHD_create_response_from_buffer(reply_len, (void *)reply_body, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    rv = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return rv;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn, (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

static char *file_read(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len;

    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = calloc(1, (size_t)len + 1)) && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

static bool tls_load(const char *cert_path, const char *key_path)
{
    char *cert = file_read(cert_path), *key = file_read(key_path);
    gnutls_datum_t d;
    bool ok = false;

    if (!cert || !key) goto done;
    tls.nchain = sizeof(tls.chain) / sizeof(tls.chain[0]);
    d = (gnutls_datum_t){(unsigned char *)cert, (unsigned)strlen(cert)};
    if (gnutls_pcert_list_import_x509_raw(tls.chain, &tls.nchain, &d, GNUTLS_X509_FMT_PEM, 0) < 0)
        goto done;
    d = (gnutls_datum_t){(unsigned char *)key, (unsigned)strlen(key)};
    ok = gnutls_privkey_init(&tls.key) == 0 &&
         gnutls_privkey_import_x509_raw(tls.key, &d, GNUTLS_X509_FMT_PEM, NULL, 0) == 0;
done:
    free(cert);
    if (key) OPENSSL_clear_free(key, strlen(key)); /* the server's private key */
    return ok;
}

int main(int argc, char **argv)
{
    const char *cert_path = NULL, *key_path = NULL, *ca_path = NULL;
    char *client_ca = NULL;
    unsigned flags, threads, bits = 0, n = 0;
    struct MHD_OptionItem opts[8];
    struct MHD_Daemon *d;
    pthread_t tid;

    if (argc < 3) {
        fprintf(stderr, "usage: mhd-floor PORT BODY [--suspend] [--tls CERT KEY [--client-ca CA]] "
                        "[--rsa-oaep BITS]\n");
        return 2;
    }
    reply_body = argv[2];
    reply_len = strlen(reply_body);
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--suspend") == 0) {
            suspend_each = true;
        } else if (strcmp(argv[i], "--tls") == 0 && i + 2 < argc) {
            cert_path = argv[++i];
            key_path = argv[++i];
        } else if (strcmp(argv[i], "--client-ca") == 0 && i + 1 < argc) {
            ca_path = argv[++i];
        } else if (strcmp(argv[i], "--rsa-oaep") == 0 && i + 1 < argc) {
            bits = (unsigned)strtoul(argv[++i], NULL, 10);
        } else {
            fprintf(stderr, "mhd-floor: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (ca_path && !cert_path) {
        fprintf(stderr, "mhd-floor: --client-ca needs --tls\n");
        return 2;
    }
    if (cert_path && !tls_load(cert_path, key_path)) {
        fprintf(stderr, "mhd-floor: cannot load %s and %s\n", cert_path, key_path);
        return 1;
    }
    if (ca_path && !(client_ca = file_read(ca_path))) {
        fprintf(stderr, "mhd-floor: cannot read %s\n", ca_path);
        return 1;
    }
    tls.client_cert_required = client_ca != NULL;
    if (bits && !(rsa.key = hf_perf_oaep_fixture(bits, rsa.ct, &rsa.ctlen))) {
        fprintf(stderr, "mhd-floor: no RSA-%u key or ciphertext\n", bits);
        return 1;
    }
    if (suspend_each && pthread_create(&tid, NULL, resumer_main, NULL) != 0) return 1;
    threads = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    flags =
        (cert_path ? MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_TLS : MHD_USE_EPOLL_INTERNAL_THREAD) |
        MHD_ALLOW_SUSPEND_RESUME;
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, threads < 1 ? 1 : threads, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, 1024, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, NULL};
    if (cert_path)
        opts[n++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)cert_retrieve};
    if (client_ca) opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, client_ca};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    d = MHD_start_daemon(flags, (uint16_t)atoi(argv[1]), NULL, NULL, on_request, NULL,
                         MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "mhd-floor: cannot listen on port %s\n", argv[1]);
        return 1;
    }
    for (;;)
        pause();
}
