#include "hf-build.h"

#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int log_max = HF_LOG_WARN;
static int log_to_syslog;

static const char *const level_names[] = {"error", "warn", "info", "debug"};
static const int syslog_levels[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

static void log_setup(void)
{
    const char *level = getenv("HOLDFAST_LOG_LEVEL");
    const char *sink = getenv("HOLDFAST_LOG");

    for (int i = 0; level && i < 4; i++)
        if (strcasecmp(level, level_names[i]) == 0) log_max = i;
    if (sink && strcmp(sink, "syslog") == 0) {
        log_to_syslog = 1;
        openlog("holdfast", LOG_PID, LOG_DAEMON);
    }
}

void hf_log(enum hf_log_level level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    pthread_once(&log_once, log_setup);
    if ((int)level > log_max) return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (log_to_syslog) {
        syslog(syslog_levels[level], "%s", msg);
        return;
    }
    /* One line per event, key=value, so log shippers need no parser of their own. */
    struct timespec ts;
    struct tm tm;
    char when[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(stderr, "time=%s.%03ldZ level=%s pid=%ld msg=\"%s\"\n", when, ts.tv_nsec / 1000000,
            level_names[level], (long)getpid(), msg);
}
