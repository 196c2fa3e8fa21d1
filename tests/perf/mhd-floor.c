/* mhd-floor: the least any libmicrohttpd gateway built like holdfastd can cost per request, for
 * make bench-gateway to set beside nginx and holdfastd in the same run.
 *
 * It answers every request with one fixed body, on libmicrohttpd with holdfastd's flags (a thread
 * pool sized to the cores; epoll for plain listeners, poll for TLS; keep-alive). With --suspend
 * each request is also suspended and resumed from another thread in batches, which is what
 * ARCHITECTURE.md's durable-audit rule costs at the least (a request gives its thread back while
 * its record's group commit runs) with no audit, crypto or parsing at all.
 *
 *   mhd-floor PORT BODY [--suspend] [--tls CERT KEY]
 *
 * Runs until killed. */
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

int main(int argc, char **argv)
{
    const char *cert_path = NULL, *key_path = NULL;
    char *cert = NULL, *key = NULL;
    unsigned flags, threads;
    struct MHD_Daemon *d;
    pthread_t tid;

    if (argc < 3) {
        fprintf(stderr, "usage: mhd-floor PORT BODY [--suspend] [--tls CERT KEY]\n");
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
        } else {
            fprintf(stderr, "mhd-floor: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (cert_path && (!(cert = file_read(cert_path)) || !(key = file_read(key_path)))) {
        fprintf(stderr, "mhd-floor: cannot read %s or %s\n", cert_path, key_path);
        return 1;
    }
    if (suspend_each && pthread_create(&tid, NULL, resumer_main, NULL) != 0) return 1;
    threads = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    flags = (cert ? MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_TLS : MHD_USE_EPOLL_INTERNAL_THREAD) |
            MHD_ALLOW_SUSPEND_RESUME;
    /* The TLS options last: a plain daemon ends its option list before them. */
    d = MHD_start_daemon(flags, (uint16_t)atoi(argv[1]), NULL, NULL, on_request, NULL,
                         MHD_OPTION_THREAD_POOL_SIZE, threads < 1 ? 1u : threads,
                         MHD_OPTION_CONNECTION_LIMIT, 1024u, MHD_OPTION_NOTIFY_COMPLETED,
                         on_completed, NULL, cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END,
                         cert, MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "mhd-floor: cannot listen on port %s\n", argv[1]);
        return 1;
    }
    for (;;)
        pause();
}
