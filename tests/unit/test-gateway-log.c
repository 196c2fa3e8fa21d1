/* The gateway's log (gateway/log.c): request lines from several threads gather in memory and
 * must reach the file whole, one per request, never interleaved, within the flush interval and
 * at close; events go out at once. */
#include "hf-build.h"

#include "gateway/log.h"
#include "gateway/request.h"
#include "tests/unit/harness.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define LINES_PER_THREAD 2000

static char log_path[] = "/tmp/hf-test-gwlog-XXXXXX";

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Lines in the file that parse as JSON objects; *bad counts the others. */
static size_t count_lines(size_t *bad)
{
    FILE *f = fopen(log_path, "r");
    char line[4096];
    size_t n = 0;

    *bad = 0;
    if (!f) return 0;
    while (fgets(line, sizeof(line), f)) {
        struct json_object *o = json_tokener_parse(line);
        if (o && json_object_is_type(o, json_type_object) && line[strlen(line) - 1] == '\n')
            n++;
        else
            (*bad)++;
        json_object_put(o);
    }
    fclose(f);
    return n;
}

static void *log_requests(void *arg)
{
    struct hf_request *req = hf_request_new("POST", "/kms/xks/v1/keys/k/encrypt");

    (void)arg;
    if (!req) return NULL;
    for (int i = 0; i < LINES_PER_THREAD; i++)
        hf_gw_log_request(req, 200, NULL, 1234);
    hf_request_free(req);
    return req;
}

static void test_request_lines_arrive_whole_within_the_interval(void)
{
    pthread_t t[THREADS];
    void *done[THREADS];
    size_t bad = 0, n;
    char err[256];
    int fd = mkstemp(log_path);

    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    CU_ASSERT_FATAL(hf_gw_log_open(log_path, err, sizeof(err)));
    for (int i = 0; i < THREADS; i++)
        CU_ASSERT_FATAL(pthread_create(&t[i], NULL, log_requests, NULL) == 0);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], &done[i]);
        CU_ASSERT_PTR_NOT_NULL(done[i]);
    }
    /* Up to the flush interval (plus slack for a loaded machine), every line is in the file. */
    for (int waited = 0; waited < 20 * HF_GW_LOG_FLUSH_MS; waited += 10) {
        if (count_lines(&bad) == THREADS * LINES_PER_THREAD) break;
        sleep_ms(10);
    }
    n = count_lines(&bad);
    CU_ASSERT_EQUAL(n, THREADS * LINES_PER_THREAD);
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_close_writes_what_gathered(void)
{
    struct hf_request *req = hf_request_new("GET", "/healthz");
    size_t before, bad = 0;

    CU_ASSERT_FATAL(req != NULL);
    before = count_lines(&bad);
    hf_gw_log_request(req, 200, NULL, 10);
    hf_gw_log_request(req, 503, "Unavailable", 20);
    hf_gw_log_close();
    CU_ASSERT_EQUAL(count_lines(&bad), before + 2);
    CU_ASSERT_EQUAL(bad, 0);
    hf_request_free(req);
}

static void test_events_are_written_at_once(void)
{
    char err[256];
    size_t before, bad = 0;

    /* After close, the log is standard error; open the file again for this case. */
    CU_ASSERT_FATAL(hf_gw_log_open(log_path, err, sizeof(err)));
    before = count_lines(&bad);
    hf_gw_log_warn("a warning with %d parts", 2);
    CU_ASSERT_EQUAL(count_lines(&bad), before + 1);
    CU_ASSERT_EQUAL(bad, 0);
    hf_gw_log_close();
    unlink(log_path);
}

static CU_TestInfo log_tests[] = {
    {"request lines from threads arrive whole within the flush interval",
     test_request_lines_arrive_whole_within_the_interval},
    {"closing writes the lines gathered so far", test_close_writes_what_gathered},
    {"events are written at once", test_events_are_written_at_once},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-log", NULL, NULL, NULL, NULL, log_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
