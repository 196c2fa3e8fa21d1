#include "hf-build.h"

#include "harness.h"
#include "pkcs11/core/audit.h"
#include "pkcs11/core/audit-key.h"
#include "pkcs11/core/hsm.h"
#include "pkcs11/core/root.h"
#include "pkcs11/core/store.h"

#include <dirent.h>
#include <errno.h>
#include <json.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[64];
static unsigned file_counter;

/* Kept global so a forked child's abandoned logs stay reachable for valgrind. */
static struct hf_audit *volatile child_abandoned[2];

static int suite_init(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/hf-test-audit-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int suite_clean(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    char path[PATH_MAX + 256];

    if (!d) return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof(path), "%s/%s", tmpdir, e->d_name);
            unlink(path);
        }
    closedir(d);
    return rmdir(tmpdir);
}

static void new_path(char *out, size_t len)
{
    snprintf(out, len, "%s/audit-%u.log", tmpdir, ++file_counter);
}

static struct hf_audit_config config_for(const char *path)
{
    return (struct hf_audit_config){
        .path = path, .node = "node-a", .sync_interval_ms = 5, .success_events = true};
}

static struct hf_audit *open_log(const char *path)
{
    struct hf_audit_config cfg = config_for(path);
    struct hf_audit *a = NULL;

    CU_ASSERT_EQUAL_FATAL(hf_audit_open(&cfg, &a), CKR_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    return a;
}

static uint64_t append_op(struct hf_audit *a, const char *op, const char *caller, CK_RV result)
{
    struct hf_audit_record rec = {.api = "pkcs11",
                                  .operation = op,
                                  .key_uuid = "6f9619ff-8b86-4011-b42d-00c04fc964ff",
                                  .key_name = "demo",
                                  .version = 1,
                                  .caller = caller,
                                  .result = result,
                                  .latency_us = 12};
    uint64_t seq = 0;

    CU_ASSERT_EQUAL(hf_audit_append(a, &rec, &seq), CKR_OK);
    return seq;
}

/* ---- reading and rewriting files ---- */

struct lines {
    char **v;
    size_t n;
};

static struct lines lines_read(const char *path)
{
    struct lines l = {0};
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    while (getline(&line, &cap, f) >= 0) {
        l.v = realloc(l.v, (l.n + 1) * sizeof(*l.v));
        l.v[l.n++] = strdup(line);
    }
    free(line);
    fclose(f);
    return l;
}

static void lines_write(const char *path, const struct lines *l)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i]) fputs(l->v[i], f);
    fclose(f);
}

static void lines_free(struct lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static json_object *parse_line(const char *line)
{
    json_object *o = json_tokener_parse(line);
    CU_ASSERT_PTR_NOT_NULL(o);
    return o;
}

static const char *get_str(json_object *o, const char *name)
{
    json_object *v;
    return json_object_object_get_ex(o, name, &v) ? json_object_get_string(v) : NULL;
}

static int64_t get_int(json_object *o, const char *name)
{
    json_object *v;
    return json_object_object_get_ex(o, name, &v) ? json_object_get_int64(v) : -1;
}

static CK_RV verify(const char *path, struct hf_audit_verify_result *res)
{
    CK_RV rv = hf_audit_verify(path, res);
    if (rv != CKR_OK)
        fprintf(stderr, "\n    verify: line %llu: %s\n", (unsigned long long)res->bad_line,
                res->reason);
    return rv;
}

/* An independent implementation of the documented chain rule, for crafted records:
 * line = body + ',"prev":"<hex prev>"' + ',"hash":"<hex sha256(prev || that)>"}' + '\n'. */
static char *craft_line(const char *body, const unsigned char prev[32])
{
    static const char hx[] = "0123456789abcdef";
    char prevhex[65], hashhex[65], *head, *line;
    unsigned char h[32];
    unsigned int hl = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();

    for (int i = 0; i < 32; i++) {
        prevhex[2 * i] = hx[prev[i] >> 4];
        prevhex[2 * i + 1] = hx[prev[i] & 15];
    }
    prevhex[64] = '\0';
    CU_ASSERT_FATAL(asprintf(&head, "%s,\"prev\":\"%s\"", body, prevhex) > 0);
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    EVP_DigestUpdate(ctx, prev, 32);
    EVP_DigestUpdate(ctx, head, strlen(head));
    EVP_DigestFinal_ex(ctx, h, &hl);
    EVP_MD_CTX_free(ctx);
    for (int i = 0; i < 32; i++) {
        hashhex[2 * i] = hx[h[i] >> 4];
        hashhex[2 * i + 1] = hx[h[i] & 15];
    }
    hashhex[64] = '\0';
    CU_ASSERT_FATAL(asprintf(&line, "%s,\"hash\":\"%s\"}\n", head, hashhex) > 0);
    free(head);
    return line;
}

/* The same rule for a record after its stream's first, whose prev is implied:
 * line = body + ',"hash":"<hex sha256(prev || body)>"}' + '\n'. */
static char *craft_line_implied(const char *body, const unsigned char prev[32])
{
    static const char hx[] = "0123456789abcdef";
    char hashhex[65], *line;
    unsigned char h[32];
    unsigned int hl = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();

    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    EVP_DigestUpdate(ctx, prev, 32);
    EVP_DigestUpdate(ctx, body, strlen(body));
    EVP_DigestFinal_ex(ctx, h, &hl);
    EVP_MD_CTX_free(ctx);
    for (int i = 0; i < 32; i++) {
        hashhex[2 * i] = hx[h[i] >> 4];
        hashhex[2 * i + 1] = hx[h[i] & 15];
    }
    hashhex[64] = '\0';
    CU_ASSERT_FATAL(asprintf(&line, "%s,\"hash\":\"%s\"}\n", body, hashhex) > 0);
    return line;
}

static void hex_to_bytes(const char *hex, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (unsigned char)v;
    }
}

/* ---- opening ---- */

static void test_open_creates_the_file_0600(void)
{
    char path[PATH_MAX];
    struct stat st;
    mode_t old = umask(0); /* the mode must come from open(), not from the umask */

    new_path(path, sizeof(path));
    struct hf_audit *a = open_log(path);
    umask(old);
    CU_ASSERT_EQUAL(stat(path, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
    hf_audit_close(a);
}

static void test_open_and_calls_reject_bad_arguments(void)
{
    struct hf_audit_config cfg = config_for(NULL);
    struct hf_audit_verify_result res;
    struct hf_audit_record rec = {.operation = "x"};
    struct hf_audit *a = (struct hf_audit *)&cfg;
    char path[PATH_MAX];

    CU_ASSERT_EQUAL(hf_audit_open(&cfg, &a), CKR_ARGUMENTS_BAD);
    CU_ASSERT_PTR_NULL(a);
    cfg.path = "";
    CU_ASSERT_EQUAL(hf_audit_open(&cfg, &a), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_audit_open(NULL, &a), CKR_ARGUMENTS_BAD);
    new_path(path, sizeof(path));
    cfg.path = path;
    CU_ASSERT_EQUAL(hf_audit_open(&cfg, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(access(path, F_OK), -1); /* nothing created on a bad call */
    cfg.path = "/nonexistent-dir/audit.log";
    CU_ASSERT_EQUAL(hf_audit_open(&cfg, &a), CKR_HF_AUDIT_FAILED);
    CU_ASSERT_PTR_NULL(a);

    CU_ASSERT_EQUAL(hf_audit_append(NULL, &rec, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_audit_wait_durable(NULL, 1), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_audit_notify_durable(NULL, 1, (HF_AUDIT_DURABLE_FN)free, NULL),
                    CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_audit_verify(NULL, &res), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_audit_verify(path, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_TRUE(hf_audit_is_failed(NULL));
    CU_ASSERT_EQUAL(hf_audit_durable_seq(NULL), 0);
    hf_audit_close(NULL);
    hf_audit_abandon(NULL);

    a = open_log(path);
    CU_ASSERT_EQUAL(hf_audit_append(a, NULL, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_audit_notify_durable(a, 1, NULL, NULL), CKR_ARGUMENTS_BAD);
    hf_audit_close(a);
}

static void test_verify_of_a_missing_file_fails_with_a_reason(void)
{
    struct hf_audit_verify_result res;

    CU_ASSERT_EQUAL(hf_audit_verify("/nonexistent-dir/audit.log", &res), CKR_FUNCTION_FAILED);
    CU_ASSERT_NOT_EQUAL(res.reason[0], '\0');
}

/* ---- the record format ---- */

static void test_records_are_json_lines_with_the_documented_members(void)
{
    static const char *const order[] = {"seq",        "stream",     "time",   "node",     "pid",
                                        "api",        "op",         "key",    "key_name", "version",
                                        "caller",     "request_id", "detail", "result",   "ok",
                                        "latency_us", "hash"};
    struct hf_audit_record rec = {.api = "aws-xks",
                                  .operation = "encrypt",
                                  .key_uuid = "6f9619ff-8b86-4011-b42d-00c04fc964ff",
                                  .key_name = "payroll",
                                  .version = 3,
                                  .caller = "arn:aws:iam::111122223333:role/x",
                                  .request_id = "req-1",
                                  .detail = "CKM_AES_GCM",
                                  .result = CKR_OK,
                                  .latency_us = 1234};
    struct hf_audit_record bad = {.operation = "sign", .result = CKR_KEY_FUNCTION_NOT_PERMITTED};
    char path[PATH_MAX];
    uint64_t seq = 0;
    size_t i = 0;

    new_path(path, sizeof(path));
    struct hf_audit *a = open_log(path);
    CU_ASSERT_EQUAL(hf_audit_append(a, &rec, &seq), CKR_OK);
    CU_ASSERT_EQUAL(seq, 2); /* 1 is the stream-open */
    CU_ASSERT_EQUAL(hf_audit_append(a, &bad, &seq), CKR_OK);
    CU_ASSERT_EQUAL(seq, 3);
    hf_audit_close(a);

    struct lines l = lines_read(path);
    CU_ASSERT_EQUAL_FATAL(l.n, 4);
    json_object *open = parse_line(l.v[0]), *full = parse_line(l.v[1]);
    json_object *fail = parse_line(l.v[2]), *close = parse_line(l.v[3]);
    CU_ASSERT_STRING_EQUAL(get_str(open, "op"), "stream-open");
    CU_ASSERT_EQUAL(get_int(open, "seq"), 1);
    CU_ASSERT_STRING_EQUAL(get_str(open, "prev"), "00000000000000000000000000000000"
                                                  "00000000000000000000000000000000");
    json_object_object_foreach(full, name, val)
    {
        (void)val;
        CU_ASSERT_FATAL(i < sizeof(order) / sizeof(order[0]));
        CU_ASSERT_STRING_EQUAL(name, order[i]);
        i++;
    }
    CU_ASSERT_EQUAL(i, sizeof(order) / sizeof(order[0]));
    CU_ASSERT_EQUAL(get_int(full, "seq"), 2);
    CU_ASSERT_STRING_EQUAL(get_str(full, "stream"), get_str(open, "stream"));
    CU_ASSERT_EQUAL(strspn(get_str(full, "stream"), "0123456789abcdef"), 16);
    const char *t = get_str(full, "time"); /* 2024-05-01T12:34:56.123456Z */
    CU_ASSERT_EQUAL(strlen(t), 27);
    CU_ASSERT(t[4] == '-' && t[10] == 'T' && t[19] == '.' && t[26] == 'Z');
    CU_ASSERT_STRING_EQUAL(get_str(full, "node"), "node-a");
    CU_ASSERT_EQUAL(get_int(full, "pid"), getpid());
    CU_ASSERT_STRING_EQUAL(get_str(full, "api"), "aws-xks");
    CU_ASSERT_STRING_EQUAL(get_str(full, "op"), "encrypt");
    CU_ASSERT_STRING_EQUAL(get_str(full, "key"), rec.key_uuid);
    CU_ASSERT_STRING_EQUAL(get_str(full, "key_name"), "payroll");
    CU_ASSERT_EQUAL(get_int(full, "version"), 3);
    CU_ASSERT_STRING_EQUAL(get_str(full, "caller"), rec.caller);
    CU_ASSERT_STRING_EQUAL(get_str(full, "request_id"), "req-1");
    CU_ASSERT_STRING_EQUAL(get_str(full, "detail"), "CKM_AES_GCM");
    CU_ASSERT_STRING_EQUAL(get_str(full, "result"), "0x0");
    CU_ASSERT_STRING_EQUAL(get_str(full, "ok"), "true");
    CU_ASSERT_EQUAL(get_int(full, "latency_us"), 1234);
    /* prev is named by the stream-open only; later records chain to their predecessor. */
    CU_ASSERT_PTR_NULL(get_str(full, "prev"));
    /* A failure: its CK_RV in hex, ok false, absent strings and version 0 omitted. */
    CU_ASSERT_STRING_EQUAL(get_str(fail, "result"), "0x68");
    CU_ASSERT_STRING_EQUAL(get_str(fail, "ok"), "false");
    CU_ASSERT_PTR_NULL(get_str(fail, "key"));
    CU_ASSERT_PTR_NULL(get_str(fail, "caller"));
    CU_ASSERT_EQUAL(get_int(fail, "version"), -1);
    CU_ASSERT_PTR_NULL(get_str(fail, "prev"));
    CU_ASSERT_STRING_EQUAL(get_str(close, "op"), "stream-close");
    CU_ASSERT_EQUAL(get_int(close, "seq"), 4);

    /* hash = SHA-256(prev bytes || the line up to ',"hash"'), recomputed independently: for the
     * stream-open with the prev it names, for the next with the stream-open's hash. */
    unsigned char prev[32];
    hex_to_bytes(get_str(open, "prev"), prev, 32);
    char *body = strdup(l.v[0]);
    *strstr(body, ",\"prev\":") = '\0';
    char *again = craft_line(body, prev);
    CU_ASSERT_STRING_EQUAL(again, l.v[0]);
    free(again);
    free(body);
    hex_to_bytes(get_str(open, "hash"), prev, 32);
    body = strdup(l.v[1]);
    *strstr(body, ",\"hash\":") = '\0';
    again = craft_line_implied(body, prev);
    CU_ASSERT_STRING_EQUAL(again, l.v[1]);
    free(again);
    free(body);

    json_object_put(open);
    json_object_put(full);
    json_object_put(fail);
    json_object_put(close);
    lines_free(&l);
}

static void test_strings_are_escaped_and_round_trip_through_json_c(void)
{
    const char *caller = "he said \"hi\" \\ back\nnew\tline\r\x01\x1f end";
    const char *request_id = "\x7f caf\xc3\xa9 \"\\\"";
    struct hf_audit_record rec = {
        .operation = "decrypt", .caller = caller, .request_id = request_id, .result = CKR_OK};
    char path[PATH_MAX];

    new_path(path, sizeof(path));
    struct hf_audit *a = open_log(path);
    CU_ASSERT_EQUAL(hf_audit_append(a, &rec, NULL), CKR_OK);
    hf_audit_close(a);

    struct lines l = lines_read(path);
    CU_ASSERT_EQUAL_FATAL(l.n, 3);
    for (const char *p = l.v[1]; *p != '\n'; p++)
        CU_ASSERT((unsigned char)*p >= 0x20); /* one line: no raw control character */
    CU_ASSERT_PTR_NOT_NULL(strstr(l.v[1], "\\u0001\\u001f"));
    json_object *o = parse_line(l.v[1]);
    CU_ASSERT_STRING_EQUAL(get_str(o, "caller"), caller);
    CU_ASSERT_STRING_EQUAL(get_str(o, "request_id"), request_id);
    json_object_put(o);
    lines_free(&l);
}

static void test_a_record_longer_than_the_stack_buffer_is_written_whole(void)
{
    char path[PATH_MAX], *detail = malloc(5001);
    struct hf_audit_verify_result res;

    memset(detail, '"', 5000); /* escapes to 10000 bytes */
    detail[5000] = '\0';
    struct hf_audit_record rec = {.operation = "x", .detail = detail, .result = CKR_OK};
    new_path(path, sizeof(path));
    struct hf_audit *a = open_log(path);
    CU_ASSERT_EQUAL(hf_audit_append(a, &rec, NULL), CKR_OK);
    hf_audit_close(a);
    struct lines l = lines_read(path);
    CU_ASSERT_EQUAL_FATAL(l.n, 3);
    json_object *o = parse_line(l.v[1]);
    CU_ASSERT_STRING_EQUAL(get_str(o, "detail"), detail);
    json_object_put(o);
    lines_free(&l);
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, 3);
    free(detail);
}

static void test_success_events_off_skips_successes_but_records_failures(void)
{
    char path[PATH_MAX];
    struct hf_audit_config cfg;
    struct hf_audit_record ok = {.operation = "encrypt", .result = CKR_OK};
    struct hf_audit_record no = {.operation = "encrypt", .result = CKR_KEY_HANDLE_INVALID};
    struct hf_audit_verify_result res;
    struct hf_audit *a = NULL;
    uint64_t seq = 99;

    new_path(path, sizeof(path));
    cfg = config_for(path);
    cfg.success_events = false;
    CU_ASSERT_EQUAL_FATAL(hf_audit_open(&cfg, &a), CKR_OK);
    CU_ASSERT_EQUAL(hf_audit_append(a, &ok, &seq), CKR_OK);
    CU_ASSERT_EQUAL(seq, 1); /* nothing written: the last seq, the stream-open's */
    CU_ASSERT_EQUAL(hf_audit_append(a, &no, &seq), CKR_OK);
    CU_ASSERT_EQUAL(seq, 2);
    CU_ASSERT_EQUAL(hf_audit_append(a, &ok, &seq), CKR_OK);
    CU_ASSERT_EQUAL(seq, 2);
    CU_ASSERT_EQUAL(hf_audit_wait_durable(a, seq), CKR_OK);
    hf_audit_close(a);

    struct lines l = lines_read(path);
    CU_ASSERT_EQUAL_FATAL(l.n, 3); /* stream-open, the failure, stream-close */
    json_object *o = parse_line(l.v[1]);
    CU_ASSERT_STRING_EQUAL(get_str(o, "result"), "0x60");
    json_object_put(o);
    lines_free(&l);
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
}

/* ---- verification ---- */

static void test_verify_passes_with_several_streams_and_a_forked_child(void)
{
    char path[PATH_MAX];
    struct hf_audit_verify_result res;
    int status = -1;

#ifdef HF_TEST_UNDER_ASAN
    /* The writer threads of a and b allocate while we fork: under ASan the child hung in its
     * allocator (seen twice). The plain build and memcheck run this case. */
    puts("\n    skipped under ASan: fork while writer threads allocate");
    return;
#endif

    new_path(path, sizeof(path));
    struct hf_audit *a = open_log(path), *b = open_log(path); /* two streams, one process */
    for (int i = 0; i < 5; i++) {
        append_op(a, "encrypt", "alice", CKR_OK);
        append_op(b, "decrypt", "bob", CKR_OK);
    }
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        struct hf_audit_record rec = {.operation = "sign", .result = CKR_OK};
        struct hf_audit *c = NULL;
        int ok = 1;
        child_abandoned[0] = a;
        child_abandoned[1] = b;
        hf_audit_abandon(a);
        hf_audit_abandon(b);
        ok &= hf_audit_append(a, &rec, NULL) == CKR_HF_AUDIT_FAILED; /* not the parent's */
        ok &= hf_audit_open(&(struct hf_audit_config){.path = path, .success_events = true}, &c) ==
              CKR_OK;
        for (int i = 0; i < 3 && c; i++)
            ok &= hf_audit_append(c, &rec, NULL) == CKR_OK;
        hf_audit_close(c);
        _exit(ok ? 0 : 1);
    }
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    append_op(a, "encrypt", "alice", CKR_OK);
    append_op(b, "decrypt", "bob", CKR_FUNCTION_FAILED);
    hf_audit_close(b);
    hf_audit_close(a);

    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.streams, 3);
    CU_ASSERT_EQUAL(res.records, 2 * (1 + 6 + 1) + (1 + 3 + 1));
    CU_ASSERT_EQUAL(res.bad_line, 0);
}

/* Two logs open at once in one process, each in its own chunk of the file, 2 x (open + 4 +
 * close) records in 13 lines:
 * 1 a-open, 2 a2, 3 a3, 4 a4, 5 a5, 6 a-close, 7 the rest of a's chunk blanked (a closed while b's
 * chunk followed), 8 b-open, 9 b2, ... 13 b-close (b's unused space cut off). */
static struct lines good_file(char *path, size_t len)
{
    new_path(path, len);
    struct hf_audit *a = open_log(path), *b = open_log(path);
    for (int i = 0; i < 4; i++) {
        append_op(a, "encrypt", "alice", CKR_OK);
        append_op(b, "decrypt", "bob", CKR_OK);
    }
    hf_audit_close(a);
    hf_audit_close(b);
    struct lines l = lines_read(path);
    CU_ASSERT_EQUAL_FATAL(l.n, 13);
    CU_ASSERT_EQUAL(strspn(l.v[6], " "), strlen(l.v[6]) - 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(l.v[7], "stream-open"));
    return l;
}

static void expect_bad_line(const char *path, uint64_t line, const char *reason_part)
{
    struct hf_audit_verify_result res;

    CU_ASSERT_EQUAL(hf_audit_verify(path, &res), CKR_FUNCTION_FAILED);
    CU_ASSERT_EQUAL(res.bad_line, line);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.reason, reason_part));
    if (res.bad_line != line || !strstr(res.reason, reason_part))
        fprintf(stderr, "\n    got line %llu: %s\n", (unsigned long long)res.bad_line, res.reason);
}

static void test_verify_fails_on_an_altered_record(void)
{
    char path[PATH_MAX];
    struct lines l = good_file(path, sizeof(path));

    *strstr(l.v[4], "alice") = 'A'; /* line 5: still JSON, one char changed */
    lines_write(path, &l);
    expect_bad_line(path, 5, "hash does not match");
    lines_free(&l);
}

static void test_verify_fails_on_a_line_that_is_not_json(void)
{
    char path[PATH_MAX];
    struct lines l = good_file(path, sizeof(path));

    l.v[5][0] = '['; /* line 6 */
    lines_write(path, &l);
    expect_bad_line(path, 6, "not a JSON record");
    lines_free(&l);

    l = good_file(path, sizeof(path));
    l.v[12][0] = 'X'; /* the last line, whole with its newline: not torn, damaged */
    lines_write(path, &l);
    expect_bad_line(path, 13, "not a JSON record");
    lines_free(&l);
}

static void test_verify_fails_on_a_deleted_record(void)
{
    char path[PATH_MAX];
    struct lines l = good_file(path, sizeof(path));

    free(l.v[2]); /* a3 (line 3): a4, now on line 3, does not chain to a2 */
    l.v[2] = NULL;
    lines_write(path, &l);
    expect_bad_line(path, 3, "removed or moved");
    lines_free(&l);
}

static void test_verify_fails_on_a_deleted_stream_open(void)
{
    char path[PATH_MAX];
    struct lines l = good_file(path, sizeof(path));

    free(l.v[7]); /* b-open: b2, now line 8, belongs to no stream */
    l.v[7] = NULL;
    lines_write(path, &l);
    expect_bad_line(path, 8, "never opened");
    lines_free(&l);
}

static void test_verify_fails_on_reordered_records(void)
{
    char path[PATH_MAX];
    struct lines l = good_file(path, sizeof(path));
    char *tmp = l.v[1]; /* swap a2 (line 2) and a3 (line 3) */

    l.v[1] = l.v[2];
    l.v[2] = tmp;
    lines_write(path, &l);
    expect_bad_line(path, 2, "removed or moved");
    lines_free(&l);
}

static void test_verify_fails_on_a_stream_open_with_a_bogus_prev(void)
{
    char path[PATH_MAX];
    unsigned char bogus[32], zero[32] = {0};
    struct lines l = good_file(path, sizeof(path));
    FILE *f;

    for (int i = 0; i < 32; i++)
        bogus[i] = (unsigned char)(i * 7 + 1);
    /* Correctly hashed, but naming a record that is not in the file. */
    char *line =
        craft_line("{\"seq\":1,\"stream\":\"0123456789abcdef\",\"op\":\"stream-open\"", bogus);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(path, "a"));
    fputs(line, f);
    fclose(f);
    expect_bad_line(path, 14, "names no earlier record");
    free(line);

    /* The zero hash is only for the file's first record. */
    lines_write(path, &l);
    line = craft_line("{\"seq\":1,\"stream\":\"0123456789abcdef\",\"op\":\"stream-open\"", zero);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(path, "a"));
    fputs(line, f);
    fclose(f);
    expect_bad_line(path, 14, "names no earlier record");
    free(line);
    lines_free(&l);
}

static void test_verify_fails_on_a_record_after_stream_close(void)
{
    char path[PATH_MAX];
    unsigned char prev[32];
    struct lines l = good_file(path, sizeof(path));
    json_object *close = parse_line(l.v[5]); /* a-close */
    char body[256];
    FILE *f;

    hex_to_bytes(get_str(close, "hash"), prev, 32);
    snprintf(body, sizeof(body), "{\"seq\":%lld,\"stream\":\"%s\",\"op\":\"encrypt\"",
             (long long)get_int(close, "seq") + 1, get_str(close, "stream"));
    char *line = craft_line_implied(body, prev);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(path, "a"));
    fputs(line, f);
    fclose(f);
    expect_bad_line(path, 14, "after its stream's stream-close");
    free(line);
    json_object_put(close);
    lines_free(&l);
}

static void test_verify_tolerates_a_torn_last_line(void)
{
    char path[PATH_MAX];
    struct hf_audit_verify_result res;
    struct lines l = good_file(path, sizeof(path));
    FILE *f;

    CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(path, "a"));
    fwrite(l.v[4], 1, 40, f); /* a killed writer's first 40 bytes, no newline */
    fclose(f);
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, 12);
    CU_ASSERT_EQUAL(res.bad_line, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.reason, "line 14: torn"));
    lines_free(&l);
}

static void test_a_record_glued_to_a_torn_line_still_verifies(void)
{
    char path[PATH_MAX];
    struct hf_audit_verify_result res;
    struct lines l = good_file(path, sizeof(path));
    FILE *f;

    CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(path, "a"));
    fwrite(l.v[4], 1, 100, f);
    fclose(f);
    /* The next opener claims space right after the torn bytes, and names the last whole
     * record. */
    struct hf_audit *a = open_log(path);
    append_op(a, "encrypt", "carol", CKR_OK);
    hf_audit_close(a);
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, 12 + 3);
    CU_ASSERT_EQUAL(res.streams, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.reason, "line 14: torn"));
    lines_free(&l);
}

/* What a process storing a record when it is killed leaves: a prefix, then zeros up to the record
 * after it. Nothing of that stream may follow, or the torn record hid a removal. */
static void test_a_torn_record_with_zeros_verifies_but_not_its_stream_after_it(void)
{
    char path[PATH_MAX], zeros[300] = {0};
    struct hf_audit_verify_result res;
    struct lines l = good_file(path, sizeof(path));
    FILE *f;

    CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(path, "w"));
    for (size_t i = 0; i < 12; i++) /* a and b up to b5; b-close left out */
        fputs(l.v[i], f);
    fwrite(l.v[12], 1, 60, f); /* b-close torn: its stream id is in the first 60 bytes */
    fwrite(zeros, 1, sizeof(zeros), f);
    fclose(f);
    struct hf_audit *c = open_log(path);
    append_op(c, "sign", "carol", CKR_OK);
    hf_audit_close(c);
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, 11 + 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.reason, "line 13: torn"));

    /* b5 torn, but b's close record after it: b5 was not the end of its stream. */
    CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(path, "w"));
    for (size_t i = 0; i < 11; i++)
        fputs(l.v[i], f);
    fwrite(l.v[11], 1, 60, f);
    fwrite(zeros, 1, sizeof(zeros), f);
    fputs(l.v[12], f);
    fclose(f);
    expect_bad_line(path, 12, "after a torn record of its stream");
    lines_free(&l);
}

/* Zeros and blanks are space that was claimed and not used (a killed process's, or one given
 * up): they are skipped wherever they are, also before a record on the same line. */
static void test_zeros_and_blanks_between_records_are_skipped(void)
{
    char path[PATH_MAX], zeros[5000] = {0};
    struct hf_audit_verify_result res;
    struct lines l = good_file(path, sizeof(path));
    FILE *f;

    CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(path, "w"));
    for (size_t i = 0; i < l.n; i++) {
        if (i == 3 || i == 9) fwrite(zeros, 1, sizeof(zeros), f);
        if (i == 10) fputs("     \n\n", f);
        fputs(l.v[i], f);
    }
    fwrite(zeros, 1, sizeof(zeros), f);
    fclose(f);
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, 12);
    CU_ASSERT_EQUAL(res.reason[0], '\0');
    lines_free(&l);
}

/* A log written before prev became implied (prev in every record, seqs 1, 2, 3 per stream) still
 * verifies, and so does what is appended to it now; its chain rules still hold. */
static void test_a_log_in_the_older_format_verifies_and_takes_new_records(void)
{
    char path[PATH_MAX], body[160], *line;
    unsigned char prev[32] = {0};
    struct hf_audit_verify_result res;
    json_object *o;
    FILE *f;

    new_path(path, sizeof(path));
    CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(path, "w"));
    for (int seq = 1; seq <= 3; seq++) {
        snprintf(body, sizeof(body), "{\"seq\":%d,\"stream\":\"00000000000000aa\",\"op\":\"%s\"",
                 seq, seq == 1 ? "stream-open" : "encrypt");
        line = craft_line(body, prev);
        fputs(line, f);
        o = parse_line(line);
        hex_to_bytes(get_str(o, "hash"), prev, 32);
        json_object_put(o);
        free(line);
    }
    fclose(f);
    struct hf_audit *a = open_log(path);
    append_op(a, "decrypt", "dave", CKR_OK);
    hf_audit_close(a);
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, 3 + 3);
    CU_ASSERT_EQUAL(res.streams, 2);

    /* Older records still number their stream 1, 2, 3: a gap is a missing record. */
    struct lines l = lines_read(path);
    free(l.v[1]);
    l.v[1] = NULL;
    lines_write(path, &l);
    expect_bad_line(path, 2, "missing or out of order");
    lines_free(&l);
}

/* ---- chunks ---- */

static size_t count_byte(const char *path, int byte)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;
    int c;

    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    while ((c = fgetc(f)) != EOF)
        n += c == byte;
    fclose(f);
    return n;
}

/* A log outgrows chunk after chunk. Closed, the file is text: records and the blank line each
 * chunk left for the next one, no zeros, nothing claimed left at the end. */
static void test_a_log_grows_over_many_chunks_and_closes_as_text(void)
{
    char path[PATH_MAX];
    struct hf_audit_verify_result res;
    const int n = 20000; /* ~5 MB: chunks of 32 KiB doubling to 4 MiB */
    size_t blanks = 0;

    new_path(path, sizeof(path));
    struct hf_audit *a = open_log(path);
    for (int i = 0; i < n; i++)
        append_op(a, "encrypt", "alice", CKR_OK);
    hf_audit_close(a);
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, (uint64_t)n + 2);
    CU_ASSERT_EQUAL(res.streams, 1);
    CU_ASSERT_EQUAL(count_byte(path, '\0'), 0);
    struct lines l = lines_read(path);
    for (size_t i = 0; i < l.n; i++) {
        if (l.v[i][0] == ' ' || l.v[i][0] == '\n')
            blanks++;
        else
            CU_ASSERT_EQUAL(l.v[i][0], '{');
    }
    CU_ASSERT(blanks >= 5 && blanks <= 12); /* one per chunk change */
    CU_ASSERT_PTR_NOT_NULL(strstr(l.v[l.n - 1], "stream-close"));
    CU_ASSERT_PTR_NOT_NULL(strchr(l.v[l.n - 1], '\n'));
    lines_free(&l);
}

/* A whole chunk cut out of the middle of a stream breaks its chain at the next record. */
static void test_verify_fails_on_a_removed_chunk(void)
{
    char path[PATH_MAX];
    size_t first = 0, second = 0;

    new_path(path, sizeof(path));
    struct hf_audit *a = open_log(path);
    for (int i = 0; i < 2000; i++)
        append_op(a, "encrypt", "alice", CKR_OK);
    hf_audit_close(a);
    struct lines l = lines_read(path);
    for (size_t i = 0; i < l.n && !second; i++)
        if (l.v[i][0] == ' ') *(first ? &second : &first) = i;
    CU_ASSERT_FATAL(first > 0 && second > first);
    for (size_t i = first + 1; i <= second; i++) { /* the second chunk, and its blank line */
        free(l.v[i]);
        l.v[i] = NULL;
    }
    lines_write(path, &l);
    expect_bad_line(path, first + 2, "removed or moved");
    lines_free(&l);
}

/* Space claimed and never used at the end of the file (killed processes' chunks, live ones'
 * claimed ahead) can run to many megabytes: an opener still names the last record before it. */
static void test_an_opener_names_the_last_record_across_megabytes_of_zeros(void)
{
    char path[PATH_MAX];
    struct hf_audit_verify_result res;
    struct stat st;

    new_path(path, sizeof(path));
    struct hf_audit *a = open_log(path);
    append_op(a, "encrypt", "alice", CKR_OK);
    hf_audit_close(a);
    CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
    CU_ASSERT_EQUAL_FATAL(truncate(path, st.st_size + (40 << 20)), 0);
    a = open_log(path);
    append_op(a, "encrypt", "bob", CKR_OK);
    hf_audit_close(a);
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, 6);
    CU_ASSERT_EQUAL(res.streams, 2);
}

/* A record longer than any chunk gets a chunk of its own. */
static void test_a_record_longer_than_a_chunk_is_stored_whole(void)
{
    char path[PATH_MAX], *detail = malloc(40001);
    struct hf_audit_verify_result res;

    memset(detail, '"', 40000); /* escapes to 80000 bytes: more than the first chunks */
    detail[40000] = '\0';
    struct hf_audit_record rec = {.operation = "x", .detail = detail, .result = CKR_OK};
    new_path(path, sizeof(path));
    struct hf_audit *a = open_log(path);
    append_op(a, "encrypt", "alice", CKR_OK);
    CU_ASSERT_EQUAL(hf_audit_append(a, &rec, NULL), CKR_OK);
    append_op(a, "encrypt", "alice", CKR_OK);
    hf_audit_close(a);
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, 5);
    free(detail);
}

/* SIGKILL right after appends returned: every one of them is in the file (the page cache had
 * them), zeros follow where the process had claimed space, and the next opener and verify carry
 * on past them. */
static void test_records_survive_a_sigkill_and_the_zeros_after_them_verify(void)
{
    char path[PATH_MAX];
    struct hf_audit_verify_result res;
    int status = -1, fds[2];
    uint64_t last = 0;

    new_path(path, sizeof(path));
    CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        struct hf_audit_config cfg = config_for(path);
        struct hf_audit *c = NULL;
        uint64_t seq = 0;
        cfg.sync_interval_ms = 60000; /* nothing synced: only the page cache has them */
        if (hf_audit_open(&cfg, &c) != CKR_OK) _exit(1);
        for (int i = 0; i < 300; i++)
            if (hf_audit_append(c, &(struct hf_audit_record){.operation = "sign"}, &seq) != CKR_OK)
                _exit(2);
        if (write(fds[1], &seq, sizeof(seq)) != (ssize_t)sizeof(seq)) _exit(3);
        raise(SIGKILL);
        _exit(4);
    }
    close(fds[1]);
    CU_ASSERT_EQUAL(read(fds[0], &last, sizeof(last)), (ssize_t)sizeof(last));
    close(fds[0]);
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    CU_ASSERT_EQUAL(last, 301);
    CU_ASSERT(count_byte(path, '\0') > 0);
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, 301);

    struct hf_audit *a = open_log(path);
    append_op(a, "encrypt", "alice", CKR_OK);
    hf_audit_close(a);
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, 301 + 3);
    CU_ASSERT_EQUAL(res.streams, 2);
}

/* ---- durability ---- */

static void test_wait_durable_returns_once_the_record_is_synced(void)
{
    char path[PATH_MAX];
    struct hf_audit_config cfg;
    struct hf_audit *a = NULL;

    new_path(path, sizeof(path));
    cfg = config_for(path);
    cfg.sync_interval_ms = 60000; /* only a waiter can make the writer sync before close */
    CU_ASSERT_EQUAL_FATAL(hf_audit_open(&cfg, &a), CKR_OK);
    uint64_t seq = append_op(a, "encrypt", "alice", CKR_OK);
    CU_ASSERT_EQUAL(hf_audit_wait_durable(a, seq), CKR_OK);
    CU_ASSERT(hf_audit_durable_seq(a) >= seq);
    CU_ASSERT_EQUAL(hf_audit_wait_durable(a, 0), CKR_OK);
    CU_ASSERT_EQUAL(hf_audit_wait_durable(a, seq + 1), CKR_ARGUMENTS_BAD); /* never written */
    hf_audit_close(a);
}

static void test_the_writer_syncs_within_the_interval_without_a_waiter(void)
{
    char path[PATH_MAX];
    struct hf_audit *a;
    struct timespec pause = {0, 2000000};

    new_path(path, sizeof(path));
    a = open_log(path); /* 5 ms interval */
    uint64_t seq = append_op(a, "encrypt", "alice", CKR_OK);
    for (int i = 0; i < 2500 && hf_audit_durable_seq(a) < seq; i++)
        nanosleep(&pause, NULL);
    CU_ASSERT(hf_audit_durable_seq(a) >= seq);
    hf_audit_close(a);
}

struct notified {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int calls;
    pthread_t thread;
};

static void on_durable(void *arg)
{
    struct notified *n = arg;
    pthread_mutex_lock(&n->lock);
    n->calls++;
    n->thread = pthread_self();
    pthread_cond_signal(&n->cond);
    pthread_mutex_unlock(&n->lock);
}

static void wait_called(struct notified *n, int calls)
{
    struct timespec deadline;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    pthread_mutex_lock(&n->lock);
    while (n->calls < calls && pthread_cond_timedwait(&n->cond, &n->lock, &deadline) == 0) {
    }
    pthread_mutex_unlock(&n->lock);
}

static void test_notify_runs_on_the_writer_or_at_once_when_durable(void)
{
    char path[PATH_MAX];
    struct hf_audit_config cfg;
    struct hf_audit *a = NULL;
    struct notified n = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

    new_path(path, sizeof(path));
    cfg = config_for(path);
    cfg.sync_interval_ms = 60000;
    CU_ASSERT_EQUAL_FATAL(hf_audit_open(&cfg, &a), CKR_OK);
    uint64_t seq = append_op(a, "encrypt", "alice", CKR_OK);
    CU_ASSERT(hf_audit_durable_seq(a) < seq); /* nobody asked yet, interval a minute */
    CU_ASSERT_EQUAL(hf_audit_notify_durable(a, seq, on_durable, &n), CKR_OK);
    wait_called(&n, 1);
    pthread_mutex_lock(&n.lock);
    CU_ASSERT_EQUAL(n.calls, 1);
    CU_ASSERT_FALSE(pthread_equal(n.thread, pthread_self())); /* the writer's thread */
    pthread_mutex_unlock(&n.lock);
    CU_ASSERT(hf_audit_durable_seq(a) >= seq);

    /* Already durable: called before notify returns, on this thread. */
    CU_ASSERT_EQUAL(hf_audit_notify_durable(a, seq, on_durable, &n), CKR_OK);
    CU_ASSERT_EQUAL(n.calls, 2);
    CU_ASSERT_TRUE(pthread_equal(n.thread, pthread_self()));
    /* A seq never written would never fire. */
    CU_ASSERT_EQUAL(hf_audit_notify_durable(a, seq + 5, on_durable, &n), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(n.calls, 2);
    hf_audit_close(a);
    pthread_mutex_destroy(&n.lock);
    pthread_cond_destroy(&n.cond);
}

#define GROUP_THREADS 4
#define GROUP_APPENDS 2000

struct appender {
    struct hf_audit *audit;
    uint64_t seqs[GROUP_APPENDS];
    int errors;
};

static void *appender_main(void *arg)
{
    struct appender *ap = arg;
    struct hf_audit_record rec = {.api = "pkcs11", .operation = "encrypt", .result = CKR_OK};

    for (int i = 0; i < GROUP_APPENDS; i++) {
        if (hf_audit_append(ap->audit, &rec, &ap->seqs[i]) != CKR_OK) ap->errors++;
        /* Some callers wait for durability, as the gateway does: they share the syncs. */
        if (i % 50 == 0 && hf_audit_wait_durable(ap->audit, ap->seqs[i]) != CKR_OK) ap->errors++;
    }
    return NULL;
}

static void test_group_commit_many_threads_their_own_streams(void)
{
    char path[PATH_MAX];
    struct hf_audit_verify_result res;
    struct appender *ap = calloc(GROUP_THREADS, sizeof(*ap));
    pthread_t th[GROUP_THREADS];
    /* + the open's stream-open, + one per lane a thread opened */
    const uint64_t total = GROUP_THREADS * GROUP_APPENDS + 1 + GROUP_THREADS;
    unsigned char *seen = calloc(total + 2, 1);
    uint64_t dupes = 0, out_of_range = 0, last = 0;

    new_path(path, sizeof(path));
    struct hf_audit *a = open_log(path);
    for (int t = 0; t < GROUP_THREADS; t++) {
        ap[t].audit = a;
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[t], NULL, appender_main, &ap[t]), 0);
    }
    for (int t = 0; t < GROUP_THREADS; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < GROUP_THREADS; t++) {
        CU_ASSERT_EQUAL(ap[t].errors, 0);
        for (int i = 0; i < GROUP_APPENDS; i++) {
            uint64_t s = ap[t].seqs[i];
            if (s < 2 || s > total)
                out_of_range++;
            else if (seen[s]++)
                dupes++;
            if (s > last) last = s;
        }
    }
    CU_ASSERT_EQUAL(dupes, 0);
    CU_ASSERT_EQUAL(out_of_range, 0);
    CU_ASSERT_EQUAL(hf_audit_wait_durable(a, last), CKR_OK);
    CU_ASSERT(hf_audit_durable_seq(a) >= last);
    hf_audit_close(a);
    /* Every record present and chained. The threads took lanes of their own: a stream each
     * (and its stream-open and stream-close) besides the one the open started. */
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT(res.streams >= 2 && res.streams <= GROUP_THREADS + 1);
    CU_ASSERT_EQUAL(res.records, GROUP_THREADS * GROUP_APPENDS + 2 * res.streams);
    free(seen);
    free(ap);
}

/* ---- write failure ---- */

static void test_a_log_that_cannot_be_written_fails_open(void)
{
    struct hf_audit_config cfg = config_for("/dev/full"); /* every write: ENOSPC */
    struct hf_audit *a = NULL;

    CU_ASSERT_EQUAL(hf_audit_open(&cfg, &a), CKR_HF_AUDIT_FAILED);
    CU_ASSERT_PTR_NULL(a);
}

static void test_a_write_failure_stops_every_later_append(void)
{
    char path[PATH_MAX];
    struct stat st;
    struct rlimit old, small;
    struct hf_audit_verify_result res;
    struct hf_audit_record rec = {.operation = "encrypt", .caller = "alice", .result = CKR_OK};
    struct notified n = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    CK_RV rv = CKR_OK;
    uint64_t seq = 0, last_ok = 0;
    int appended = 0;

    new_path(path, sizeof(path));
    struct hf_audit *a = open_log(path);
    CU_ASSERT_EQUAL(hf_audit_wait_durable(a, 1), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
    /* A full disk without root: past RLIMIT_FSIZE, claiming the next chunk fails with EFBIG,
     * and SIGXFSZ is ignored so that the process survives it. The file's size already holds
     * the first chunk: appends go on into it until the claim of the next one fails (the writer
     * claims it when the first is half used, or the lane when it is full). */
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old);
    small = old;
    small.rlim_cur = (rlim_t)st.st_size + 1000;
    CU_ASSERT_EQUAL_FATAL(setrlimit(RLIMIT_FSIZE, &small), 0);
    while (appended < 100000 && (rv = hf_audit_append(a, &rec, &seq)) == CKR_OK) {
        appended++;
        last_ok = seq;
    }
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);

    CU_ASSERT(appended > 0 && appended < (int)(st.st_size / 100));
    CU_ASSERT_EQUAL(rv, CKR_HF_AUDIT_FAILED);
    CU_ASSERT_TRUE(hf_audit_is_failed(a));
    /* The disk has room again: the log stays failed, failures included. */
    CU_ASSERT_EQUAL(hf_audit_append(a, &rec, &seq), CKR_HF_AUDIT_FAILED);
    rec.result = CKR_FUNCTION_FAILED;
    CU_ASSERT_EQUAL(hf_audit_append(a, &rec, &seq), CKR_HF_AUDIT_FAILED);
    /* The records whose append returned CKR_OK were recorded: they still become durable. */
    CU_ASSERT_EQUAL(hf_audit_wait_durable(a, last_ok), CKR_OK);
    CU_ASSERT(hf_audit_durable_seq(a) >= last_ok);
    CU_ASSERT_EQUAL(hf_audit_notify_durable(a, last_ok, on_durable, &n), CKR_OK);
    CU_ASSERT_EQUAL(n.calls, 1);
    hf_audit_close(a);
    /* What reached the file is a valid chain of every record that was appended. */
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, (uint64_t)appended + 1);
}

static void test_a_sync_failure_fails_waiters_and_runs_callbacks(void)
{
    char path[PATH_MAX];
    struct hf_audit_config cfg;
    struct hf_audit *a = NULL;
    struct notified n = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

    /* A FIFO takes writes (into the pipe buffer) but fdatasync() on it fails with EINVAL. */
    new_path(path, sizeof(path));
    CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
    cfg = config_for(path);
    cfg.sync_interval_ms = 60000;
    CU_ASSERT_EQUAL_FATAL(hf_audit_open(&cfg, &a), CKR_OK);
    uint64_t seq = append_op(a, "encrypt", "alice", CKR_OK);
    CU_ASSERT_FALSE(hf_audit_is_failed(a));
    /* The callback still runs, so that nobody waits for ever on a record that will never be
     * durable; the waiter learns why. */
    CU_ASSERT_EQUAL(hf_audit_notify_durable(a, seq, on_durable, &n), CKR_OK);
    wait_called(&n, 1);
    CU_ASSERT_EQUAL(n.calls, 1);
    CU_ASSERT_EQUAL(hf_audit_wait_durable(a, seq), CKR_HF_AUDIT_FAILED);
    CU_ASSERT(hf_audit_durable_seq(a) < seq);
    CU_ASSERT_TRUE(hf_audit_is_failed(a));
    struct hf_audit_record rec = {.operation = "encrypt", .result = CKR_FUNCTION_FAILED};
    CU_ASSERT_EQUAL(hf_audit_append(a, &rec, NULL), CKR_HF_AUDIT_FAILED);
    CU_ASSERT_EQUAL(hf_audit_notify_durable(a, seq, on_durable, &n), CKR_HF_AUDIT_FAILED);
    CU_ASSERT_EQUAL(n.calls, 1);
    hf_audit_close(a);
    pthread_mutex_destroy(&n.lock);
    pthread_cond_destroy(&n.cond);
}

static CU_TestInfo format_tests[] = {
    {"open creates the file 0600", test_open_creates_the_file_0600},
    {"open and calls reject bad arguments", test_open_and_calls_reject_bad_arguments},
    {"records are JSON lines with the documented members",
     test_records_are_json_lines_with_the_documented_members},
    {"strings are escaped and round-trip through json-c",
     test_strings_are_escaped_and_round_trip_through_json_c},
    {"a record longer than the stack buffer is written whole",
     test_a_record_longer_than_the_stack_buffer_is_written_whole},
    {"success events off skips successes but records failures",
     test_success_events_off_skips_successes_but_records_failures},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo verify_tests[] = {
    {"verify passes with several streams and a forked child",
     test_verify_passes_with_several_streams_and_a_forked_child},
    {"verify of a missing file fails with a reason",
     test_verify_of_a_missing_file_fails_with_a_reason},
    {"verify fails on an altered record", test_verify_fails_on_an_altered_record},
    {"verify fails on a line that is not JSON", test_verify_fails_on_a_line_that_is_not_json},
    {"verify fails on a deleted record", test_verify_fails_on_a_deleted_record},
    {"verify fails on a deleted stream-open", test_verify_fails_on_a_deleted_stream_open},
    {"verify fails on reordered records", test_verify_fails_on_reordered_records},
    {"verify fails on a stream-open with a bogus prev",
     test_verify_fails_on_a_stream_open_with_a_bogus_prev},
    {"verify fails on a record after stream-close",
     test_verify_fails_on_a_record_after_stream_close},
    {"verify tolerates a torn last line", test_verify_tolerates_a_torn_last_line},
    {"a record glued to a torn line still verifies",
     test_a_record_glued_to_a_torn_line_still_verifies},
    {"a torn record with zeros verifies, but not its stream after it",
     test_a_torn_record_with_zeros_verifies_but_not_its_stream_after_it},
    {"zeros and blanks between records are skipped",
     test_zeros_and_blanks_between_records_are_skipped},
    {"a log in the older format verifies and takes new records",
     test_a_log_in_the_older_format_verifies_and_takes_new_records},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo chunk_tests[] = {
    {"a log grows over many chunks and closes as text",
     test_a_log_grows_over_many_chunks_and_closes_as_text},
    {"verify fails on a removed chunk", test_verify_fails_on_a_removed_chunk},
    {"a record longer than a chunk is stored whole",
     test_a_record_longer_than_a_chunk_is_stored_whole},
    {"an opener names the last record across megabytes of zeros",
     test_an_opener_names_the_last_record_across_megabytes_of_zeros},
    {"records survive a SIGKILL, and the zeros after them verify",
     test_records_survive_a_sigkill_and_the_zeros_after_them_verify},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo durability_tests[] = {
    {"wait durable returns once the record is synced",
     test_wait_durable_returns_once_the_record_is_synced},
    {"the writer syncs within the interval without a waiter",
     test_the_writer_syncs_within_the_interval_without_a_waiter},
    {"notify runs on the writer, or at once when durable",
     test_notify_runs_on_the_writer_or_at_once_when_durable},
    {"group commit: 4 threads x 2000 appends, a stream each",
     test_group_commit_many_threads_their_own_streams},
    {"a log that cannot be written fails open", test_a_log_that_cannot_be_written_fails_open},
    {"a write failure stops every later append", test_a_write_failure_stops_every_later_append},
    {"a sync failure fails waiters and runs callbacks",
     test_a_sync_failure_fails_waiters_and_runs_callbacks},
    CU_TEST_INFO_NULL,
};

/* ---- free space: a small tmpfs of the test's own (root only) ---- */

struct small_fs {
    char dir[PATH_MAX];
    char filler[PATH_MAX + 16];
    int filler_fd;
};

/* Mounts a tmpfs of size bytes; false (and the test says it skips) when not allowed. */
static bool small_fs_mount(struct small_fs *fs, const char *size)
{
    char opts[64];

    snprintf(fs->dir, sizeof(fs->dir), "%s/fs-%u", tmpdir, ++file_counter);
    snprintf(fs->filler, sizeof(fs->filler), "%s/filler", fs->dir);
    fs->filler_fd = -1;
    snprintf(opts, sizeof(opts), "size=%s,mode=0700", size);
    if (mkdir(fs->dir, 0700) != 0) return false;
    if (mount("tmpfs", fs->dir, "tmpfs", 0, opts) != 0) {
        printf("\n    skipped: mount -t tmpfs needs root (%s) ", strerror(errno));
        rmdir(fs->dir);
        return false;
    }
    return true;
}

static void small_fs_unmount(struct small_fs *fs)
{
    if (fs->filler_fd >= 0) close(fs->filler_fd);
    umount2(fs->dir, MNT_DETACH);
    rmdir(fs->dir);
}

static uint64_t small_fs_free(const struct small_fs *fs)
{
    struct statvfs sv;

    CU_ASSERT_EQUAL_FATAL(statvfs(fs->dir, &sv), 0);
    return (uint64_t)sv.f_bavail * sv.f_frsize;
}

/* Another tenant of the file system takes space until at most leave bytes are free. */
static void small_fs_fill(struct small_fs *fs, uint64_t leave)
{
    struct stat st;
    uint64_t free = small_fs_free(fs);

    if (fs->filler_fd < 0) fs->filler_fd = open(fs->filler, O_RDWR | O_CREAT, 0600);
    CU_ASSERT_FATAL(fs->filler_fd >= 0);
    CU_ASSERT_EQUAL_FATAL(fstat(fs->filler_fd, &st), 0);
    if (free <= leave) return;
    /* tmpfs gives back what a failed fallocate took: shrink the request until it fits. */
    for (uint64_t more = free - leave; more >= 4096; more /= 2)
        if (posix_fallocate(fs->filler_fd, st.st_size, (off_t)more) == 0) break;
}

static void small_fs_free_filler(struct small_fs *fs)
{
    if (fs->filler_fd >= 0) close(fs->filler_fd);
    fs->filler_fd = -1;
    unlink(fs->filler);
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void test_a_full_disk_stops_appends_and_writing_resumes_once_space_is_freed(void)
{
    struct small_fs fs;
    char path[PATH_MAX + 32];
    struct hf_audit_record rec = {
        .operation = "encrypt", .caller = "alice", .result = CKR_OK, .authenticated = true};
    struct hf_audit_status st;
    struct hf_audit_verify_result res;
    struct timespec t0;
    uint64_t seq = 0, ok = 0;
    CK_RV rv = CKR_OK;

    if (!small_fs_mount(&fs, "1m")) return;
    snprintf(path, sizeof(path), "%s/audit.log", fs.dir);
    struct hf_audit_config cfg = config_for(path);
    struct hf_audit *a = NULL;
    CU_ASSERT_EQUAL_FATAL(hf_audit_open(&cfg, &a), CKR_OK);
    small_fs_fill(&fs, 0);
    for (int i = 0; i < 100000 && (rv = hf_audit_append(a, &rec, &seq)) == CKR_OK; i++)
        ok++;
    CU_ASSERT_EQUAL(rv, CKR_HF_AUDIT_FAILED);
    CU_ASSERT(ok > 0 && ok < 100000);
    /* Full is not failed: nothing is lost, and the log waits for space. */
    CU_ASSERT_FALSE(hf_audit_is_failed(a));
    hf_audit_status(a, &st);
    CU_ASSERT_EQUAL(st.space, HF_AUDIT_SPACE_FULL);
    CU_ASSERT(st.refused >= 1);
    CU_ASSERT_EQUAL(hf_audit_wait_durable(a, seq), CKR_OK);

    small_fs_free_filler(&fs);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (seconds_since(&t0) < 5 && (rv = hf_audit_append(a, &rec, &seq)) != CKR_OK) {
        struct timespec pause = {0, 5 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    CU_ASSERT_EQUAL(rv, CKR_OK);
    /* Tried again at most every 100 ms: back within a few of those. */
    CU_ASSERT(seconds_since(&t0) < 1.0);
    ok++;
    for (int i = 0; i < 100 && rv == CKR_OK; i++, ok++)
        rv = hf_audit_append(a, &rec, &seq);
    CU_ASSERT_EQUAL(rv, CKR_OK);
    hf_audit_status(a, &st);
    CU_ASSERT_EQUAL(st.space, HF_AUDIT_SPACE_OK);
    CU_ASSERT_EQUAL(hf_audit_wait_durable(a, seq), CKR_OK);
    hf_audit_close(a);
    /* Every record that was accepted, before and after, is in one valid chain. */
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, ok + 2); /* with the stream-open and the stream-close */
    small_fs_unmount(&fs);
}

static void test_under_the_reserve_only_authenticated_records_are_written(void)
{
    struct small_fs fs;
    char path[PATH_MAX + 32];
    struct hf_audit_record anon = {
        .operation = "preauth.summary", .caller = "192.0.2.7", .result = CKR_FUNCTION_FAILED};
    struct hf_audit_record key_op = anon;
    struct hf_audit_status st;
    struct hf_audit_verify_result res;
    struct timespec t0;
    uint64_t seq = 0;
    CK_RV rv = CKR_OK;
    int i;

    key_op.operation = "encrypt";
    key_op.authenticated = true;
    if (!small_fs_mount(&fs, "4m")) return;
    snprintf(path, sizeof(path), "%s/audit.log", fs.dir);
    struct hf_audit_config cfg = config_for(path);
    cfg.reserve_bytes = 1u << 20;
    cfg.alarm_bytes = 2u << 20;
    struct hf_audit *a = NULL;
    CU_ASSERT_EQUAL_FATAL(hf_audit_open(&cfg, &a), CKR_OK);
    hf_audit_status(a, &st);
    CU_ASSERT_EQUAL(st.space, HF_AUDIT_SPACE_OK);
    CU_ASSERT_EQUAL(st.reserve_bytes, 1u << 20);

    /* Under the alarm threshold: the alarm shows at the next claim, and everything is written. */
    small_fs_fill(&fs, 1536u << 10);
    for (i = 0; i < 2000 && rv == CKR_OK; i++)
        rv = hf_audit_append(a, &anon, &seq);
    CU_ASSERT_EQUAL(rv, CKR_OK);
    hf_audit_status(a, &st);
    CU_ASSERT_EQUAL(st.space, HF_AUDIT_SPACE_ALARM);

    /* Under the reserve: anonymous records run out with the space claimed over it. */
    small_fs_fill(&fs, 512u << 10);
    for (i = 0; i < 100000 && (rv = hf_audit_append(a, &anon, &seq)) == CKR_OK; i++) {
    }
    CU_ASSERT_EQUAL(rv, CKR_HF_AUDIT_FAILED);
    CU_ASSERT_FALSE(hf_audit_is_failed(a));
    hf_audit_status(a, &st);
    CU_ASSERT_EQUAL(st.space, HF_AUDIT_SPACE_RESERVE);
    CU_ASSERT(st.free_bytes < st.reserve_bytes);
    /* ... while key operations go on in the reserve, for many chunks' worth ... */
    for (i = 0; i < 1000 && (rv = hf_audit_append(a, &key_op, &seq)) == CKR_OK; i++) {
    }
    CU_ASSERT_EQUAL(rv, CKR_OK);
    CU_ASSERT_EQUAL(hf_audit_wait_durable(a, seq), CKR_OK);
    CU_ASSERT_EQUAL(hf_audit_append(a, &anon, NULL), CKR_HF_AUDIT_FAILED);

    /* Space returns: anonymous records are written again, without a reopen. */
    small_fs_free_filler(&fs);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (seconds_since(&t0) < 5 && (rv = hf_audit_append(a, &anon, &seq)) != CKR_OK) {
        struct timespec pause = {0, 5 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    CU_ASSERT_EQUAL(rv, CKR_OK);
    CU_ASSERT(seconds_since(&t0) < 1.0);
    hf_audit_status(a, &st);
    CU_ASSERT_EQUAL(st.space, HF_AUDIT_SPACE_OK);
    hf_audit_close(a);
    CU_ASSERT_EQUAL(verify(path, &res), CKR_OK);
    small_fs_unmount(&fs);
}

static CU_TestInfo space_tests[] = {
    {"a full disk stops appends, and writing resumes once space is freed",
     test_a_full_disk_stops_appends_and_writing_resumes_once_space_is_freed},
    {"under the reserve only authenticated records are written",
     test_under_the_reserve_only_authenticated_records_are_written},
    CU_TEST_INFO_NULL,
};

/* ---- the keyed chain and checkpoints (a real SoftHSMv2 token) ---- */

#define KEYED_TOKEN "hf-audit-a"
#define OTHER_TOKEN "hf-audit-b"

static struct hf_test_softhsm softhsm;

static struct hf_hsm *hsm_a, *hsm_b;
static struct hf_root *root_a, *root_b; /* root_b: the same labels, other keys */

static struct hf_hsm *keyed_token(const char *label, struct hf_root **root)
{
    struct hf_hsm *h = NULL;

    if (hf_hsm_token_ensure(HF_SOFTHSM_MODULE, softhsm.lock_path, label, HF_TEST_SO_PIN,
                            HF_TEST_USER_PIN) != CKR_OK ||
        hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, label, HF_TEST_USER_PIN, &h) != CKR_OK ||
        hf_hsm_mac_key_ensure(h, HF_AUDIT_MAC_LABEL) != CKR_OK ||
        hf_hsm_mac_key_ensure(h, HF_AUDIT_CHECKPOINT_LABEL) != CKR_OK ||
        hf_root_of_hsm(h, root) != CKR_OK) {
        hf_hsm_close(h);
        return NULL;
    }
    return h;
}

static int keyed_suite_init(void)
{
    if (suite_init() != 0 || hf_test_softhsm_setup(&softhsm, "hf-test-audit-hsm") != 0) return -1;
    hsm_a = keyed_token(KEYED_TOKEN, &root_a);
    hsm_b = keyed_token(OTHER_TOKEN, &root_b);
    return hsm_a && hsm_b ? 0 : -1;
}

static int keyed_suite_clean(void)
{
    hf_root_close(root_a);
    hf_root_close(root_b);
    hf_hsm_close(hsm_a);
    hf_hsm_close(hsm_b);
    hsm_a = hsm_b = NULL;
    root_a = root_b = NULL;
    hf_test_softhsm_teardown(&softhsm);
    return suite_clean();
}

/* A log and the store that records its checkpoints, as a core has them. */
struct keyed {
    char path[256];
    char db[PATH_MAX];
    struct hf_store *store;
};

static void keyed_setup(struct keyed *k)
{
    new_path(k->path, sizeof(k->path));
    snprintf(k->db, sizeof(k->db), "%.250s.db", k->path);
    CU_ASSERT_EQUAL_FATAL(hf_store_open(k->db, &k->store), CKR_OK);
}

static void keyed_teardown(struct keyed *k)
{
    hf_store_close(k->store);
    unlink(k->db);
}

static struct hf_audit *keyed_open(struct keyed *k, struct hf_root *h, unsigned interval_ms)
{
    struct hf_audit_config cfg = config_for(k->path);
    struct hf_audit *a = NULL;

    cfg.root = h;
    cfg.store = k->store;
    cfg.checkpoint_interval_ms = interval_ms ? interval_ms : 3600000;
    CU_ASSERT_EQUAL_FATAL(hf_audit_open(&cfg, &a), CKR_OK);
    return a;
}

/* One opened log's worth: open, n records, close. */
static void keyed_session(struct keyed *k, struct hf_root *h, int n)
{
    struct hf_audit *a = keyed_open(k, h, 0);
    for (int i = 0; i < n; i++)
        append_op(a, "encrypt", "alice", CKR_OK);
    hf_audit_close(a);
}

static CK_RV keyed_verify(const struct keyed *k, const char *path, struct hf_root *h, bool torn_ok,
                          bool strict, struct hf_audit_verify_result *res)
{
    struct hf_audit_verify_config vc = {.path = path ? path : k->path,
                                        .root = h,
                                        .store = k->store,
                                        .node = "node-a", /* config_for's */
                                        .allow_torn_tail = torn_ok,
                                        .strict = strict};
    return hf_audit_verify_keyed(&vc, res);
}

/* The file's lines (each with its '\n'); *n of them. Caller frees each and the array. */
static char **klines_read(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    char **lines = NULL, *line = NULL;
    size_t cap = 0;
    ssize_t len;

    *n = 0;
    if (!f) return NULL;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lines = realloc(lines, (*n + 1) * sizeof(*lines));
        lines[(*n)++] = strdup(line);
    }
    free(line);
    fclose(f);
    return lines;
}

static void klines_write(const char *path, char **lines, size_t n)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    for (size_t i = 0; i < n; i++)
        if (lines[i]) fputs(lines[i], f);
    fclose(f);
}

static void klines_free(char **lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

/* The last line holding every needle (NULL-terminated), or -1. */
static long line_find_last(char **lines, size_t n, const char *a, const char *b)
{
    for (size_t i = n; i-- > 0;)
        if (lines[i] && strstr(lines[i], a) && (!b || strstr(lines[i], b))) return (long)i;
    return -1;
}

static void test_a_keyed_log_verifies_with_its_token_only(void)
{
    struct hf_audit_verify_result res;
    struct keyed k;
    char *v = NULL;

    keyed_setup(&k);
    keyed_session(&k, root_a, 5);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, true, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, 5 + 2 + 2); /* + a stream-open and -close each for data and ckpt */
    CU_ASSERT_EQUAL(res.checkpoints, 1);
    CU_ASSERT_EQUAL(res.unanchored, 0);
    CU_ASSERT_EQUAL(res.legacy, 0);
    CU_ASSERT_EQUAL(hf_store_meta_get(k.store, HF_META_AUDIT_CHECKPOINT ".node-a", &v), CKR_OK);
    CU_ASSERT_PTR_NOT_NULL(v);
    free(v);
    /* No token, or another token's keys: nothing can be checked. */
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, NULL, false, false, &res), CKR_FUNCTION_FAILED);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.reason, "needs the token"));
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_b, false, false, &res), CKR_FUNCTION_FAILED);
    CU_ASSERT_EQUAL(res.bad_line, 1);
    keyed_teardown(&k);
}

/* A stream's last record is its stream-close, which the closing checkpoint names; the record
 * before it is chained to. Either removed fails. */
static void test_removing_a_streams_last_record_fails(void)
{
    struct hf_audit_verify_result res;
    struct keyed k;
    char cut[PATH_MAX];
    size_t n;
    CU_ASSERT_FATAL(strlen(tmpdir) < 200);
    char **lines;
    long i;

    keyed_setup(&k);
    keyed_session(&k, root_a, 3);
    snprintf(cut, sizeof(cut), "%.250s.cut", k.path);
    lines = klines_read(k.path, &n);
    i = line_find_last(lines, n, "\"op\":\"stream-close\"", "\"latency_us\":0,\"hash\"");
    CU_ASSERT_FATAL(i >= 0);
    char *saved = lines[i];
    lines[i] = NULL;
    klines_write(cut, lines, n);
    CU_ASSERT_EQUAL(keyed_verify(&k, cut, root_a, false, false, &res), CKR_FUNCTION_FAILED);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.reason, "which the log lacks"));
    lines[i] = saved;
    i = line_find_last(lines, n, "\"op\":\"encrypt\"", NULL);
    CU_ASSERT_FATAL(i >= 0);
    free(lines[i]);
    lines[i] = NULL;
    klines_write(cut, lines, n);
    CU_ASSERT_EQUAL(keyed_verify(&k, cut, root_a, false, false, &res), CKR_FUNCTION_FAILED);
    klines_free(lines, n);
    unlink(cut);
    keyed_teardown(&k);
}

/* The last opened log's records, all of them (its streams and its checkpoints) cut off: the
 * store still names its closing checkpoint. */
static void test_removing_the_final_stream_fails(void)
{
    struct hf_audit_verify_result res;
    struct keyed k;
    struct stat st;
    off_t first_end;

    keyed_setup(&k);
    keyed_session(&k, root_a, 2);
    CU_ASSERT_EQUAL_FATAL(stat(k.path, &st), 0);
    first_end = st.st_size;
    keyed_session(&k, root_a, 2);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, false, &res), CKR_OK);
    CU_ASSERT_EQUAL(truncate(k.path, first_end), 0);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, false, &res), CKR_FUNCTION_FAILED);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.reason, "the store records a checkpoint the log lacks"));
    keyed_teardown(&k);
}

/* The file replaced whole: by a freshly hashed (unkeyed) log, or by one keyed under another
 * token's keys (with its own checkpoints). */
static void test_a_replaced_log_fails(void)
{
    struct hf_audit_verify_result res;
    struct keyed k, other;
    struct hf_audit *a;

    keyed_setup(&k);
    keyed_setup(&other);
    keyed_session(&k, root_a, 3);
    unlink(k.path);
    a = open_log(k.path); /* unkeyed: SHA-256, which anybody can compute */
    append_op(a, "encrypt", "alice", CKR_OK);
    hf_audit_close(a);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, false, &res), CKR_FUNCTION_FAILED);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.reason, "the store records a checkpoint the log lacks"));
    keyed_session(&other, root_b, 3);
    CU_ASSERT_EQUAL(rename(other.path, k.path), 0);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, false, &res), CKR_FUNCTION_FAILED);
    CU_ASSERT_EQUAL(res.bad_line, 1);
    keyed_teardown(&other);
    keyed_teardown(&k);
}

static void test_an_emptied_log_fails(void)
{
    struct hf_audit_verify_result res;
    struct keyed k;

    keyed_setup(&k);
    keyed_session(&k, root_a, 1);
    CU_ASSERT_EQUAL(truncate(k.path, 0), 0);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, false, &res), CKR_FUNCTION_FAILED);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.reason, "emptied"));
    keyed_teardown(&k);
}

/* A cluster: two nodes share the store and the token, each writes a log of its own. Each log
 * verifies as its node's (one checkpoint key for both named the last writer's), not as the
 * other's, and an emptied one still fails. */
static void test_nodes_sharing_a_store_keep_their_own_checkpoints(void)
{
    struct hf_audit_verify_result res;
    struct keyed k;
    struct hf_audit_config cfg;
    struct hf_audit *b = NULL;
    char path_b[256];

    keyed_setup(&k);
    keyed_session(&k, root_a, 3);
    new_path(path_b, sizeof(path_b));
    cfg = config_for(path_b);
    cfg.node = "node-b";
    cfg.root = root_a;
    cfg.store = k.store;
    cfg.checkpoint_interval_ms = 3600000;
    CU_ASSERT_EQUAL_FATAL(hf_audit_open(&cfg, &b), CKR_OK);
    append_op(b, "encrypt", "bob", CKR_OK);
    hf_audit_close(b);
    struct hf_audit_verify_config vc = {.path = path_b, .root = root_a, .store = k.store};
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, false, &res), CKR_OK);
    vc.node = "node-b";
    CU_ASSERT_EQUAL(hf_audit_verify_keyed(&vc, &res), CKR_OK);
    vc.node = "node-a";
    CU_ASSERT_EQUAL(hf_audit_verify_keyed(&vc, &res), CKR_FUNCTION_FAILED);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.reason, "the store records a checkpoint the log lacks"));
    CU_ASSERT_EQUAL(truncate(k.path, 0), 0);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, false, &res), CKR_FUNCTION_FAILED);
    unlink(path_b);
    keyed_teardown(&k);
}

/* Appended by hand: a record claiming another API and caller, or a whole unkeyed stream chained
 * to the last real record (what a writer without the token can make). */
static void test_a_forged_record_fails(void)
{
    struct hf_audit_verify_result res;
    struct keyed k;
    struct hf_audit *a;
    char forged[PATH_MAX], line[1024];
    size_t n;
    char **lines;
    long i;
    FILE *f;

    keyed_setup(&k);
    keyed_session(&k, root_a, 2);
    snprintf(forged, sizeof(forged), "%.250s.forged", k.path);
    lines = klines_read(k.path, &n);
    i = line_find_last(lines, n, "\"op\":\"encrypt\"", NULL);
    CU_ASSERT_FATAL(i >= 0);
    /* Inserted in the stream, after its last key operation, as a live writer's next record. */
    f = fopen(forged, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    snprintf(line, sizeof(line), "%s", lines[i]);
    char *api = strstr(line, "\"api\":\"pkcs11\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(api);
    memcpy(api, "\"api\":\"aws-xk\"", 14);
    for (size_t j = 0; j < n; j++) {
        fputs(lines[j], f);
        if ((long)j == i) fputs(line, f);
    }
    fclose(f);
    CU_ASSERT_EQUAL(keyed_verify(&k, forged, root_a, false, false, &res), CKR_FUNCTION_FAILED);
    CU_ASSERT_EQUAL(res.bad_line, (uint64_t)i + 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.reason, "hash does not match"));
    klines_free(lines, n);
    /* An unkeyed writer appending to the keyed log. */
    a = open_log(k.path);
    append_op(a, "encrypt", "mallory", CKR_OK);
    hf_audit_close(a);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, false, &res), CKR_FUNCTION_FAILED);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.reason, "unkeyed stream after the keyed log began"));
    unlink(forged);
    keyed_teardown(&k);
}

static void test_a_torn_last_record_fails_unless_allowed(void)
{
    struct hf_audit_verify_result res;
    struct keyed k;
    FILE *f;

    keyed_setup(&k);
    keyed_session(&k, root_a, 2);
    f = fopen(k.path, "a");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("{\"seq\":77,\"stream\":\"0123456789abcdef\",\"time\":\"2026-", f);
    fclose(f);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, false, &res), CKR_FUNCTION_FAILED);
    CU_ASSERT(res.torn_line > 0);
    CU_ASSERT_EQUAL(res.bad_line, res.torn_line);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, true, false, &res), CKR_OK);
    CU_ASSERT(res.torn_line > 0);
    keyed_teardown(&k);
}

/* The writer checkpoints on its own once something was written; what came after the last
 * checkpoint is unanchored (a warning, or a failure with strict). */
static void test_checkpoints_come_periodically_and_anchor_what_was_written(void)
{
    struct hf_audit_verify_result res;
    struct keyed k;
    struct hf_audit *a;

    keyed_setup(&k);
    a = keyed_open(&k, root_a, 400);
    append_op(a, "encrypt", "alice", CKR_OK);
    append_op(a, "decrypt", "alice", CKR_OK);
    for (int i = 0; i < 100; i++) {
        usleep(20000);
        if (keyed_verify(&k, NULL, root_a, false, false, &res) == CKR_OK && res.checkpoints > 0 &&
            res.unanchored == 0)
            break;
    }
    CU_ASSERT(res.checkpoints >= 1);
    CU_ASSERT_EQUAL(res.unanchored, 0);
    /* Idle: no more checkpoints. */
    uint64_t ckpts = res.checkpoints;
    usleep(200000);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, false, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.checkpoints, ckpts);
    hf_audit_wait_durable(a, append_op(a, "sign", "bob", CKR_OK));
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, false, &res), CKR_OK);
    CU_ASSERT(res.unanchored >= 1);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, true, &res), CKR_FUNCTION_FAILED);
    hf_audit_close(a);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, true, &res), CKR_OK);
    keyed_teardown(&k);
}

/* A log from before the keyed chain: its unkeyed records are accepted as legacy (and counted),
 * the keyed ones after them verify in full. */
static void test_a_legacy_prefix_is_accepted_and_counted(void)
{
    struct hf_audit_verify_result res;
    struct keyed k;
    struct hf_audit *a;

    keyed_setup(&k);
    a = open_log(k.path);
    append_op(a, "encrypt", "alice", CKR_OK);
    hf_audit_close(a);
    keyed_session(&k, root_a, 2);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, true, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.legacy, 3);
    CU_ASSERT_EQUAL(res.checkpoints, 1);
    keyed_teardown(&k);
}

/* HMAC-SHA-256(k, prev || line) by OpenSSL's one-shot HMAC: what the chain key must agree with. */
static void hmac_ref(const unsigned char *k, const unsigned char *prev, const char *line,
                     unsigned char *out)
{
    unsigned char in[HF_AUDIT_KEY_LEN + 512];
    unsigned int outlen = 0;

    CU_ASSERT_FATAL(strlen(line) <= sizeof(in) - HF_AUDIT_KEY_LEN);
    memcpy(in, prev, HF_AUDIT_KEY_LEN);
    memcpy(in + HF_AUDIT_KEY_LEN, line, strlen(line));
    HMAC(EVP_sha256(), k, HF_AUDIT_KEY_LEN, in, HF_AUDIT_KEY_LEN + strlen(line), out, &outlen);
    CU_ASSERT_EQUAL(outlen, HF_AUDIT_KEY_LEN);
}

/* The writer's MAC is HMAC-SHA-256 under k_e for records e*every .. e*every+every-1, and k_{e+1}
 * is SHA-256("holdfast-audit-ratchet" || k_e): a key is used for exactly every records. */
static void test_the_chain_key_is_hmac_ratcheted_every_n_records(void)
{
    const unsigned every = 4;
    unsigned char k[HF_AUDIT_KEY_LEN], prev[HF_AUDIT_KEY_LEN] = {0}, got[HF_AUDIT_KEY_LEN],
                                       want[HF_AUDIT_KEY_LEN];
    struct hf_audit_key *key;

    for (size_t i = 0; i < sizeof(k); i++)
        k[i] = (unsigned char)(i * 7 + 1);
    key = hf_audit_key_new(k, every);
    CU_ASSERT_PTR_NOT_NULL_FATAL(key);
    for (unsigned i = 0; i < 3 * every + 1; i++) {
        char line[64];
        snprintf(line, sizeof(line), "{\"seq\":%u,\"op\":\"encrypt\"", i + 1);
        if (i > 0 && i % every == 0) {
            unsigned char stale[HF_AUDIT_KEY_LEN];
            hmac_ref(k, prev, line, stale);
            hf_audit_key_ratchet(k);
            hmac_ref(k, prev, line, want);
            CU_ASSERT(memcmp(stale, want, sizeof(want)) != 0);
        } else {
            hmac_ref(k, prev, line, want);
        }
        hf_audit_key_mac(key, prev, line, strlen(line), got);
        CU_ASSERT_EQUAL(memcmp(got, want, sizeof(want)), 0);
        memcpy(prev, got, sizeof(prev));
    }
    hf_audit_key_free(key);
}

/* A stream over several keys verifies, says how often it ratchets, and a record altered under a
 * later key fails as one altered under the first. */
static void test_a_stream_over_many_keys_verifies_and_fails_when_altered(void)
{
    const int n = 3 * (int)HF_AUDIT_RATCHET_EVERY + 5;
    struct hf_audit_verify_result res;
    struct keyed k;
    size_t count;
    char **lines;
    char *at;

    keyed_setup(&k);
    keyed_session(&k, root_a, n);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, true, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, (uint64_t)n + 4);
    lines = klines_read(k.path, &count);
    CU_ASSERT_FATAL(count > (size_t)n);
    CU_ASSERT_PTR_NOT_NULL(strstr(lines[0], ",\"ratchet_every\":32,"));
    long i = line_find_last(lines, count, "\"op\":\"encrypt\"", NULL);
    CU_ASSERT_FATAL(i > 2 * (long)HF_AUDIT_RATCHET_EVERY);
    CU_ASSERT_PTR_NOT_NULL_FATAL(at = strstr(lines[i - 3], "alice"));
    at[0] = 'A';
    klines_write(k.path, lines, count);
    CU_ASSERT_EQUAL(keyed_verify(&k, NULL, root_a, false, false, &res), CKR_FUNCTION_FAILED);
    CU_ASSERT_EQUAL(res.bad_line, (uint64_t)i - 2);
    klines_free(lines, count);
    keyed_teardown(&k);
}

/* A keyed stream written before stream-opens said ratchet_every ratcheted after every record:
 * such a log still verifies. */
static void test_a_keyed_log_from_before_ratchet_every_verifies(void)
{
    static const char stream[] = "00112233445566ff",
                      nonce_hex[] = "000102030405060708090a0b0c0d0e0f";
    unsigned char in[64], k[HF_AUDIT_KEY_LEN], prev[HF_AUDIT_KEY_LEN] = {0}, h[HF_AUDIT_KEY_LEN];
    struct hf_audit_verify_result res;
    struct keyed k_log;
    size_t n = 0;
    FILE *f;

    memcpy(in, "holdfast-audit-stream", 21);
    memcpy(in + 21, stream, 16);
    for (int i = 0; i < 16; i++)
        in[37 + i] = (unsigned char)i;
    CU_ASSERT_EQUAL_FATAL(hf_hsm_hmac(hsm_a, HF_AUDIT_MAC_LABEL, in, 53, k), CKR_OK);
    keyed_setup(&k_log);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(k_log.path, "w"));
    for (int seq = 1; seq <= 3; seq++) {
        char line[512], hex[2 * HF_AUDIT_KEY_LEN + 1], prevhex[2 * HF_AUDIT_KEY_LEN + 1];
        for (size_t i = 0; i < sizeof(h); i++)
            sprintf(prevhex + 2 * i, "%02x", prev[i]);
        if (seq == 1)
            n = (size_t)snprintf(line, sizeof(line),
                                 "{\"seq\":1,\"stream\":\"%s\",\"op\":\"stream-open\",\"result\":"
                                 "\"0x0\",\"ok\":true,\"latency_us\":0,\"prev\":\"%s\",\"nonce\":"
                                 "\"%s\"",
                                 stream, prevhex, nonce_hex);
        else
            n = (size_t)snprintf(line, sizeof(line),
                                 "{\"seq\":%d,\"stream\":\"%s\",\"op\":\"encrypt\",\"result\":"
                                 "\"0x0\",\"ok\":true,\"latency_us\":0",
                                 seq, stream);
        hmac_ref(k, prev, line, h);
        hf_audit_key_ratchet(k);
        memcpy(prev, h, sizeof(prev));
        for (size_t i = 0; i < sizeof(h); i++)
            sprintf(hex + 2 * i, "%02x", h[i]);
        fprintf(f, "%s,\"hash\":\"%s\"}\n", line, hex);
    }
    CU_ASSERT(n > 0);
    fclose(f);
    struct hf_audit_verify_config vc = {.path = k_log.path, .root = root_a};
    CU_ASSERT_EQUAL(hf_audit_verify_keyed(&vc, &res), CKR_OK);
    CU_ASSERT_EQUAL(res.records, 3);
    keyed_teardown(&k_log);
}

static CU_TestInfo keyed_tests[] = {
    {"a keyed log verifies with its token only", test_a_keyed_log_verifies_with_its_token_only},
    {"removing a stream's last record fails", test_removing_a_streams_last_record_fails},
    {"removing the final stream fails", test_removing_the_final_stream_fails},
    {"a replaced log (freshly hashed, or another key) fails", test_a_replaced_log_fails},
    {"an emptied log fails", test_an_emptied_log_fails},
    {"nodes sharing a store keep their own checkpoints",
     test_nodes_sharing_a_store_keep_their_own_checkpoints},
    {"a forged record fails", test_a_forged_record_fails},
    {"a torn last record fails unless allowed", test_a_torn_last_record_fails_unless_allowed},
    {"checkpoints come periodically and anchor what was written",
     test_checkpoints_come_periodically_and_anchor_what_was_written},
    {"a legacy prefix is accepted and counted", test_a_legacy_prefix_is_accepted_and_counted},
    {"the chain key is HMAC, ratcheted every n records",
     test_the_chain_key_is_hmac_ratcheted_every_n_records},
    {"a stream over many keys verifies, and fails when altered",
     test_a_stream_over_many_keys_verifies_and_fails_when_altered},
    {"a keyed log from before ratchet_every verifies",
     test_a_keyed_log_from_before_ratchet_every_verifies},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"audit format", suite_init, suite_clean, NULL, NULL, format_tests},
        {"audit verify", suite_init, suite_clean, NULL, NULL, verify_tests},
        {"audit chunks", suite_init, suite_clean, NULL, NULL, chunk_tests},
        {"audit durability", suite_init, suite_clean, NULL, NULL, durability_tests},
        {"audit free space", suite_init, suite_clean, NULL, NULL, space_tests},
        {"audit keyed chain", keyed_suite_init, keyed_suite_clean, NULL, NULL, keyed_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
