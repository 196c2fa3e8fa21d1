/* The gateway's JSON-lines log (log.h). Each line is built whole and written with one write(),
 * so lines from worker threads never interleave (O_APPEND on a file; a pipe keeps writes up to
 * PIPE_BUF whole, and ours stay short). */
#include "hf-build.h"

#include "gateway/log.h"
#include "gateway/request.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

static atomic_int log_fd = 2;

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
    int old = atomic_exchange(&log_fd, 2);

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

static void line_write(struct json_object *o)
{
    const char *s =
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t len = s ? strlen(s) : 0;
    char stackbuf[2048], *line = stackbuf;

    if (!s) return;
    if (len + 2 > sizeof(stackbuf)) len = sizeof(stackbuf) - 2; /* an event that long is cut */
    memcpy(line, s, len);
    line[len++] = '\n';
    /* A full disk or a closed pipe must not stop the gateway: the line is lost. */
    if (write(atomic_load(&log_fd), line, len) < 0) return;
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
    line_write(o);
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
    line_write(o);
    json_object_put(o);
}
