/* The gateway's JSON-lines log (log.h). Lines are built whole, and every write() holds whole
 * lines only, so lines from worker threads never interleave (O_APPEND on a file; a pipe keeps
 * writes up to PIPE_BUF whole, and an event line stays short). Request lines go through one
 * buffer under a mutex: the worker threads hold it for a memcpy, and only when the buffer is full
 * for a write; a flusher thread writes what gathered HF_GW_LOG_FLUSH_MS after the first line. */
#include "hf-build.h"

#include "gateway/log.h"
#include "gateway/request.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

static atomic_int log_fd = 2;

#define GATHER_SIZE (64 * 1024)

static struct {
    pthread_mutex_t lock;
    pthread_cond_t filled;  /* the buffer went from empty to not */
    pthread_cond_t stopped; /* close asks the flusher to end */
    pthread_once_t once;
    pthread_t flusher;
    bool flusher_running, stopping;
    size_t len;
    char buf[GATHER_SIZE];
} gather = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .filled = PTHREAD_COND_INITIALIZER,
    .stopped = PTHREAD_COND_INITIALIZER,
    .once = PTHREAD_ONCE_INIT,
};

static void write_whole(const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(atomic_load(&log_fd), p, len);
        if (n < 0 && errno == EINTR) continue;
        /* A full disk or a closed pipe must not stop the gateway: the lines are lost. */
        if (n <= 0) return;
        p += n;
        len -= (size_t)n;
    }
}

/* Under gather.lock. */
static void gather_flush_locked(void)
{
    write_whole(gather.buf, gather.len);
    gather.len = 0;
}

static void deadline_after_ms(struct timespec *ts, unsigned ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_nsec += (long)ms * 1000000L;
    ts->tv_sec += ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

static void *flusher_main(void *arg)
{
    struct timespec deadline;

    (void)arg;
    pthread_mutex_lock(&gather.lock);
    while (!gather.stopping) {
        if (gather.len == 0) {
            pthread_cond_wait(&gather.filled, &gather.lock);
            continue;
        }
        deadline_after_ms(&deadline, HF_GW_LOG_FLUSH_MS);
        while (!gather.stopping &&
               pthread_cond_timedwait(&gather.stopped, &gather.lock, &deadline) != ETIMEDOUT) {
        }
        gather_flush_locked();
    }
    pthread_mutex_unlock(&gather.lock);
    return NULL;
}

static void flusher_start(void)
{
    pthread_condattr_t attr;

    pthread_mutex_lock(&gather.lock);
    if (gather.stopping) { /* a line after hf_gw_log_close: written at once from now on */
        pthread_mutex_unlock(&gather.lock);
        return;
    }
    pthread_mutex_unlock(&gather.lock);
    /* The flush deadline is on the monotonic clock: setting the time must not hold lines. */
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_destroy(&gather.stopped);
    pthread_cond_init(&gather.stopped, &attr);
    pthread_condattr_destroy(&attr);
    gather.flusher_running = pthread_create(&gather.flusher, NULL, flusher_main, NULL) == 0;
}

/* Without a flusher (it could not start) every line is written at once. */
static void gather_line(const char *line, size_t len)
{
    bool was_empty;

    pthread_once(&gather.once, flusher_start);
    pthread_mutex_lock(&gather.lock);
    if (!gather.flusher_running || gather.stopping) {
        gather_flush_locked();
        write_whole(line, len);
        pthread_mutex_unlock(&gather.lock);
        return;
    }
    if (gather.len + len > sizeof(gather.buf)) gather_flush_locked();
    was_empty = gather.len == 0;
    memcpy(gather.buf + gather.len, line, len);
    gather.len += len;
    if (was_empty) pthread_cond_signal(&gather.filled);
    pthread_mutex_unlock(&gather.lock);
}

bool hf_gw_log_open(const char *path, char *err, size_t errlen)
{
    int fd, old;

    if (!path || strcmp(path, "-") == 0 || strcmp(path, "stderr") == 0) {
        old = atomic_exchange(&log_fd, 2);
        if (old > 2) close(old);
        return true;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0) {
        snprintf(err, errlen, "log %s: %s", path, strerror(errno));
        return false;
    }
    old = atomic_load(&log_fd);
    if (old > 2) {
        /* Reopen in place: a thread writing right now writes to the old or the new file, never
         * to a closed descriptor. */
        if (dup2(fd, old) < 0) {
            snprintf(err, errlen, "log %s: %s", path, strerror(errno));
            close(fd);
            return false;
        }
        close(fd);
    } else {
        atomic_store(&log_fd, fd);
    }
    return true;
}

void hf_gw_log_close(void)
{
    int old;

    pthread_mutex_lock(&gather.lock);
    gather.stopping = true;
    pthread_cond_signal(&gather.filled);
    pthread_cond_signal(&gather.stopped);
    pthread_mutex_unlock(&gather.lock);
    if (gather.flusher_running) pthread_join(gather.flusher, NULL);
    pthread_mutex_lock(&gather.lock);
    gather.flusher_running = false;
    gather_flush_locked();
    pthread_mutex_unlock(&gather.lock);
    old = atomic_exchange(&log_fd, 2);

    if (old > 2) close(old);
}

static void time_add(struct json_object *o)
{
    struct timespec ts;
    struct tm tm;
    char buf[96];

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             ts.tv_nsec / 1000000 % 1000);
    json_object_object_add(o, "time", json_object_new_string(buf));
}

/* gathered: a request line (see the top of the file); else an event, written at once. */
static void line_write(struct json_object *o, bool gathered)
{
    const char *s =
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t len = s ? strlen(s) : 0;
    char stackbuf[2048], *line = stackbuf;

    if (!s) return;
    if (len + 2 > sizeof(stackbuf)) len = sizeof(stackbuf) - 2; /* an event that long is cut */
    memcpy(line, s, len);
    line[len++] = '\n';
    if (gathered)
        gather_line(line, len);
    else
        write_whole(line, len);
}

static void str_add(struct json_object *o, const char *k, const char *v)
{
    if (v) json_object_object_add(o, k, json_object_new_string(v));
}

void hf_gw_log_request(const struct hf_request *req, unsigned http_status, const char *error_name,
                       uint64_t latency_us)
{
    struct json_object *o = json_object_new_object();

    if (!o) return;
    time_add(o);
    str_add(o, "request_id", req->id);
    str_add(o, "api", req->api);
    str_add(o, "operation", req->operation);
    str_add(o, "method", req->method);
    str_add(o, "path", req->path);
    json_object_object_add(o, "status", json_object_new_int((int)http_status));
    str_add(o, "error", error_name);
    json_object_object_add(o, "latency_us", json_object_new_int64((int64_t)latency_us));
    str_add(o, "key", req->key_ref);
    str_add(o, "caller", req->caller);
    str_add(o, "cloud_request_id", req->cloud_request_id);
    if (req->audit_seq)
        json_object_object_add(o, "audit_seq", json_object_new_int64((int64_t)req->audit_seq));
    line_write(o, true);
    json_object_put(o);
}

void hf_gw_log_event(const char *level, const char *fmt, ...)
{
    struct json_object *o = json_object_new_object();
    char msg[1024];
    va_list ap;

    if (!o) return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    time_add(o);
    str_add(o, "level", level);
    str_add(o, "msg", msg);
    line_write(o, false);
    json_object_put(o);
}
