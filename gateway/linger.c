/* Lingering close (linger.h): one thread polls the lingering sockets and reads them dry.
 *
 * Only the thread removes a socket; hf_gw_linger_adopt only appends. The thread therefore
 * works on a copy of the first k slots outside the lock, and their indices stay valid. */
#include "hf-build.h"

#include "gateway/linger.h"
#include "gateway/plugin.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#define POLL_MS 100
/* Read per socket per pass: a client that floods cannot hold the thread from the others. */
#define DRAIN_PER_PASS (256u * 1024u)

struct lingering {
    int fd;
    uint64_t due_us;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool running, stop;                   /* lock */
    struct lingering s[HF_GW_LINGER_MAX]; /* lock for n and appends */
    size_t n;
} lg = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

/* Reads what has come in. False once the socket is done: the client closed its side, or it
 * failed (a reset from the client is its own business now). */
static bool drain(int fd)
{
    char scratch[16384];
    size_t total = 0;

    while (total < DRAIN_PER_PASS) {
        ssize_t got = recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
        if (got > 0) {
            total += (size_t)got;
            continue;
        }
        return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    }
    return true;
}

/* Waits for sockets, then one poll over a copy of them; the closed ones get fd -1. */
static size_t pass(void)
{
    struct pollfd pfd[HF_GW_LINGER_MAX];
    size_t k;
    uint64_t now;

    pthread_mutex_lock(&lg.lock);
    while (lg.n == 0 && !lg.stop)
        pthread_cond_wait(&lg.wake, &lg.lock);
    k = lg.n;
    for (size_t i = 0; i < k; i++)
        pfd[i] = (struct pollfd){.fd = lg.s[i].fd, .events = POLLIN};
    pthread_mutex_unlock(&lg.lock);
    if (k == 0) return 0;
    (void)poll(pfd, k, POLL_MS);
    now = hf_now_us();
    for (size_t i = 0; i < k; i++) {
        bool keep = now < lg.s[i].due_us;
        if (keep && pfd[i].revents) keep = drain(pfd[i].fd);
        if (keep) continue;
        close(pfd[i].fd);
        lg.s[i].fd = -1; /* only this thread writes a slot below k */
    }
    return k;
}

/* Drops the slots pass closed, keeping those adopted meanwhile. */
static void compact(size_t k)
{
    size_t kept = 0;

    pthread_mutex_lock(&lg.lock);
    for (size_t i = 0; i < lg.n; i++)
        if (i >= k || lg.s[i].fd >= 0) lg.s[kept++] = lg.s[i];
    lg.n = kept;
    pthread_mutex_unlock(&lg.lock);
}

static void *linger_main(void *arg)
{
    (void)arg;
    for (;;) {
        size_t k = pass();
        compact(k);
        pthread_mutex_lock(&lg.lock);
        bool stop = lg.stop;
        pthread_mutex_unlock(&lg.lock);
        if (stop) return NULL;
    }
}

bool hf_gw_linger_start(char *err, size_t errlen)
{
    pthread_mutex_lock(&lg.lock);
    lg.stop = false;
    lg.n = 0;
    pthread_mutex_unlock(&lg.lock);
    if (pthread_create(&lg.thread, NULL, linger_main, NULL) != 0) {
        snprintf(err, errlen, "cannot start the lingering-close thread");
        return false;
    }
    pthread_mutex_lock(&lg.lock);
    lg.running = true;
    pthread_mutex_unlock(&lg.lock);
    return true;
}

void hf_gw_linger_adopt(int fd)
{
    int dup_fd;

    pthread_mutex_lock(&lg.lock);
    if (lg.running && !lg.stop && lg.n < HF_GW_LINGER_MAX &&
        (dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) >= 0) {
        lg.s[lg.n++] = (struct lingering){
            .fd = dup_fd, .due_us = hf_now_us() + (uint64_t)HF_GW_LINGER_MS * 1000u};
        pthread_cond_signal(&lg.wake);
    }
    pthread_mutex_unlock(&lg.lock);
}

void hf_gw_linger_stop(void)
{
    pthread_mutex_lock(&lg.lock);
    if (!lg.running) {
        pthread_mutex_unlock(&lg.lock);
        return;
    }
    lg.stop = true;
    pthread_cond_signal(&lg.wake);
    pthread_mutex_unlock(&lg.lock);
    pthread_join(lg.thread, NULL);
    for (size_t i = 0; i < lg.n; i++)
        close(lg.s[i].fd);
    lg.n = 0;
    lg.running = false;
}
