/* plugin.h's config values (gateway/conf-value.c, gateway/conf-secret.c): every parser's
 * accepted and refused forms and its bounds, relative paths taken from the config file's
 * directory (also as the loader reads a file), and secret files under holdfastd's rule. */
#include "hf-build.h"

#include "gateway/conf-value.h"
#include "gateway/config.h"
#include "gateway/plugin.h"
#include "tests/unit/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[64];
static char err[512];

static int suite_init(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/hf-test-gwconfval-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int suite_cleanup(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- bool, numbers, sizes, durations --------------------------------------------------- */

static void test_bools(void)
{
    static const char *const yes[] = {"true", "yes", "on", "1", "TRUE", "On"};
    static const char *const no[] = {"false", "no", "off", "0", "No", "OFF"};
    static const char *const bad[] = {"", "2", "y", "enabled", " on", "on ", "truee"};
    bool v;

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        v = false;
        CU_ASSERT_TRUE(hf_conf_bool(yes[i], &v, err, sizeof(err)) && v);
        v = true;
        CU_ASSERT_TRUE(hf_conf_bool(no[i], &v, err, sizeof(err)) && !v);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        CU_ASSERT_FALSE(hf_conf_bool(bad[i], &v, err, sizeof(err)));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "expected on or off"));
    }
    CU_ASSERT_FALSE(hf_conf_bool(NULL, &v, err, sizeof(err)));
}

static void test_whole_numbers_and_their_bounds(void)
{
    static const char *const bad[] = {"",     "-1",  "+1",    " 1", "1 ",
                                      "0x10", "1.5", "12abc", "1k", "18446744073709551616"};
    uint64_t v = 0;

    CU_ASSERT_TRUE(hf_conf_uint("0", 0, 10, &v, err, sizeof(err)) && v == 0);
    CU_ASSERT_TRUE(hf_conf_uint("10", 0, 10, &v, err, sizeof(err)) && v == 10);
    CU_ASSERT_TRUE(hf_conf_uint("007", 0, 10, &v, err, sizeof(err)) && v == 7);
    CU_ASSERT_TRUE(hf_conf_uint("18446744073709551615", 0, UINT64_MAX, &v, err, sizeof(err)) &&
                   v == UINT64_MAX);
    CU_ASSERT_FALSE(hf_conf_uint("11", 0, 10, &v, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "from 0 to 10"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "\"11\""));
    CU_ASSERT_FALSE(hf_conf_uint("4", 5, 10, &v, err, sizeof(err)));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CU_ASSERT_FALSE(hf_conf_uint(bad[i], 0, UINT64_MAX, &v, err, sizeof(err)));
    CU_ASSERT_EQUAL(v, UINT64_MAX); /* a refusal leaves the value alone */
    CU_ASSERT_FALSE(hf_conf_uint(NULL, 0, 1, &v, NULL, 0));
}

static void test_sizes_with_their_suffixes(void)
{
    static const struct {
        const char *in;
        uint64_t want;
    } ok[] = {{"0", 0},        {"512", 512},    {"1k", 1024},       {"16K", 16384},
              {"2M", 2097152}, {"3m", 3145728}, {"1G", 1073741824}, {"4g", 4294967296u}};
    static const char *const bad[] = {
        "", "k", "1kb", "1 k", "-1k", "1.5k", "1t", "1kk", "18014398509481984k"};
    uint64_t v;

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        v = 1;
        CU_ASSERT_TRUE(hf_conf_size(ok[i].in, 0, UINT64_MAX, &v, err, sizeof(err)));
        CU_ASSERT_EQUAL(v, ok[i].want);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CU_ASSERT_FALSE(hf_conf_size(bad[i], 0, UINT64_MAX, &v, err, sizeof(err)));
    /* Bounds apply to the bytes, after the suffix. */
    CU_ASSERT_TRUE(hf_conf_size("1k", 1024, 1024, &v, err, sizeof(err)));
    CU_ASSERT_FALSE(hf_conf_size("1k", 0, 1023, &v, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "from 0 to 1023 bytes"));
    CU_ASSERT_FALSE(hf_conf_size("1023", 1024, 2048, &v, err, sizeof(err)));
}

static void test_durations_with_their_units(void)
{
    static const struct {
        const char *in;
        uint64_t want;
    } ok[] = {{"250", 250},   {"250ms", 250},  {"0s", 0},       {"2s", 2000},
              {"3m", 180000}, {"1h", 3600000}, {"1H", 3600000}, {"90S", 90000}};
    static const char *const bad[] = {
        "", "s", "1d", "1.5s", "1 s", "-1s", "1sec", "1msx", "5124095576030432h"};
    uint64_t v;

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        v = 1;
        CU_ASSERT_TRUE(hf_conf_duration_ms(ok[i].in, 0, UINT64_MAX, &v, err, sizeof(err)));
        CU_ASSERT_EQUAL(v, ok[i].want);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CU_ASSERT_FALSE(hf_conf_duration_ms(bad[i], 0, UINT64_MAX, &v, err, sizeof(err)));
    CU_ASSERT_TRUE(hf_conf_duration_ms("1s", 1000, 1000, &v, err, sizeof(err)));
    CU_ASSERT_FALSE(hf_conf_duration_ms("2s", 0, 1999, &v, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "from 0 to 1999 ms"));
    CU_ASSERT_FALSE(hf_conf_duration_ms("99", 100, 200, &v, err, sizeof(err)));
}

/* ---- lists ----------------------------------------------------------------------------- */

static void test_lists_are_split_trimmed_and_appended(void)
{
    char **items = NULL;
    size_t n = 0;

    CU_ASSERT_TRUE(hf_conf_list("a, b c\td", &items, &n, err, sizeof(err)));
    CU_ASSERT_FATAL(n == 4);
    CU_ASSERT_STRING_EQUAL(items[0], "a");
    CU_ASSERT_STRING_EQUAL(items[1], "b");
    CU_ASSERT_STRING_EQUAL(items[3], "d");
    /* Empty items are skipped; a second line appends. */
    CU_ASSERT_TRUE(hf_conf_list(" ,, e ,,f, ", &items, &n, err, sizeof(err)));
    CU_ASSERT_FATAL(n == 6);
    CU_ASSERT_STRING_EQUAL(items[4], "e");
    CU_ASSERT_STRING_EQUAL(items[5], "f");
    CU_ASSERT_TRUE(hf_conf_list("", &items, &n, err, sizeof(err)));
    CU_ASSERT_TRUE(hf_conf_list(" , ", &items, &n, err, sizeof(err)));
    CU_ASSERT_EQUAL(n, 6);
    CU_ASSERT_FALSE(hf_conf_list(NULL, &items, &n, err, sizeof(err)));
    hf_conf_list_free(items, n);
    hf_conf_list_free(NULL, 0);
}

/* ---- paths ----------------------------------------------------------------------------- */

static void path_is(const char *value, const char *want)
{
    char *got = hf_conf_path(value);

    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "\n  hf_conf_path(%s): %s, want %s\n", value, got, want);
    CU_ASSERT_STRING_EQUAL(got, want);
    free(got);
}

static void test_relative_paths_are_the_config_files(void)
{
    hf_gw_conf_dir_set("/etc/holdfast");
    path_is("creds", "/etc/holdfast/creds");
    path_is("sub/../jwks.json", "/etc/holdfast/sub/../jwks.json");
    path_is("/abs/creds", "/abs/creds");
    hf_gw_conf_dir_set("/");
    path_is("creds", "//creds");
    /* Outside a config file's lines (or from memory) a path stays as given. */
    hf_gw_conf_dir_set(NULL);
    path_is("creds", "creds");
    hf_gw_conf_dir_set("");
    path_is("creds", "creds");
    CU_ASSERT_PTR_NULL(hf_conf_path(NULL));
}

/* The loader keeps the file's directory, which it hands to hf_conf_path with every plugin line
 * (plugins.c), at start and on SIGHUP alike (both load the file with hf_gw_config_load). */
static void test_the_loader_knows_the_files_directory(void)
{
    char dir[128], path[160];
    struct hf_gw_config *cfg;
    FILE *f;

    snprintf(dir, sizeof(dir), "%s/etc", tmpdir);
    CU_ASSERT_FATAL(mkdir(dir, 0700) == 0);
    snprintf(path, sizeof(path), "%s/holdfastd.conf", dir);
    CU_ASSERT_FATAL((f = fopen(path, "w")) != NULL);
    fputs("[gateway]\nlisten = 127.0.0.1:8080\npin_file = pin\n", f);
    fclose(f);
    cfg = hf_gw_config_load(path, err, sizeof(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg->dir);
    CU_ASSERT_STRING_EQUAL(cfg->dir, dir);
    hf_gw_conf_dir_set(cfg->dir);
    snprintf(path, sizeof(path), "%s/creds", dir);
    path_is("creds", path);
    hf_gw_conf_dir_set(NULL);
    /* The gateway's own relative paths resolve the same way. */
    snprintf(path, sizeof(path), "%s/pin", dir);
    CU_ASSERT_STRING_EQUAL(cfg->pin_file, path);
    hf_gw_config_free(cfg);
    cfg = hf_gw_config_parse("[gateway]\nlisten = 127.0.0.1:1\n", 30, "t.conf", err, sizeof(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    CU_ASSERT_PTR_NULL(cfg->dir);
    hf_gw_config_free(cfg);
}

/* ---- secret files ---------------------------------------------------------------------- */

static void secret_write(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");

    CU_ASSERT_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
    CU_ASSERT_FATAL(chmod(path, mode) == 0);
}

/* Refused, with the path first and the reason named. */
static void secret_refused(const char *path, size_t max, const char *why)
{
    char *data = (char *)1;
    size_t len = 7;

    err[0] = '\0';
    CU_ASSERT_FALSE(hf_conf_secret_file(path, max, &data, &len, err, sizeof(err)));
    CU_ASSERT_PTR_NULL(data);
    CU_ASSERT_EQUAL(len, 0);
    CU_ASSERT_EQUAL(strncmp(err, path, strlen(path)), 0);
    if (strstr(err, why) == NULL) fprintf(stderr, "\n  '%s' lacks '%s'\n", err, why);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, why));
}

static void test_a_private_secret_file_is_read(void)
{
    char path[128], *data = NULL;
    size_t len = 0;

    snprintf(path, sizeof(path), "%s/secret", tmpdir);
    secret_write(path, "AKID:SECRET\n", 0600);
    CU_ASSERT_TRUE_FATAL(hf_conf_secret_file(path, 0, &data, &len, err, sizeof(err)));
    CU_ASSERT_EQUAL(len, 12);
    CU_ASSERT_STRING_EQUAL(data, "AKID:SECRET\n"); /* NUL-terminated */
    hf_secret_free(data, len);
    /* Group-readable (a secret mount's group) is used, with a warning in the log. */
    CU_ASSERT_FATAL(chmod(path, 0640) == 0);
    CU_ASSERT_TRUE_FATAL(hf_conf_secret_file(path, 12, &data, &len, err, sizeof(err)));
    hf_secret_free(data, len);
    hf_secret_free(NULL, 0);
    /* An empty file is an empty secret. */
    secret_write(path, "", 0600);
    CU_ASSERT_TRUE_FATAL(hf_conf_secret_file(path, 0, &data, &len, err, sizeof(err)));
    CU_ASSERT_EQUAL(len, 0);
    CU_ASSERT_STRING_EQUAL(data, "");
    hf_secret_free(data, len);
    unlink(path);
}

static void test_a_secret_file_others_could_read_or_change_is_refused(void)
{
    char path[128];

    snprintf(path, sizeof(path), "%s/secret", tmpdir);
    secret_write(path, "AKID:SECRET\n", 0644);
    secret_refused(path, 0, ": mode 0644: world-readable; chmod 600");
    CU_ASSERT_FATAL(chmod(path, 0604) == 0);
    secret_refused(path, 0, "world-readable");
    CU_ASSERT_FATAL(chmod(path, 0602) == 0);
    secret_refused(path, 0, ": mode 0602: world-writable");
    CU_ASSERT_FATAL(chmod(path, 0620) == 0);
    secret_refused(path, 0, ": mode 0620: group-writable");
    CU_ASSERT_FATAL(chmod(path, 0600) == 0);
    /* Whoever owns it can chmod it open: another unprivileged user's file is not ours. */
    if (geteuid() == 0) {
        CU_ASSERT_FATAL(chown(path, 1, 1) == 0);
        secret_refused(path, 0, ": owned by uid 1");
    }
    unlink(path);
}

static void test_a_secret_file_must_exist_be_a_file_and_fit(void)
{
    char path[128];

    snprintf(path, sizeof(path), "%s/absent", tmpdir);
    secret_refused(path, 0, "No such file");
    secret_refused(tmpdir, 0, "not a regular file");
    snprintf(path, sizeof(path), "%s/secret", tmpdir);
    secret_write(path, "0123456789", 0600);
    secret_refused(path, 9, "10 bytes, over the 9");
    unlink(path);
}

static CU_TestInfo value_tests[] = {
    {"bools: the eight words in any case, nothing else", test_bools},
    {"whole numbers: digits only, within their bounds", test_whole_numbers_and_their_bounds},
    {"sizes: k, M, G are 1024-based, bounds on the bytes", test_sizes_with_their_suffixes},
    {"durations: ms, s, m, h (bare: ms), bounds on the ms", test_durations_with_their_units},
    {"lists: split on commas and blanks, empties skipped, appended",
     test_lists_are_split_trimmed_and_appended},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo path_tests[] = {
    {"relative paths are the config file's directory's", test_relative_paths_are_the_config_files},
    {"the loader keeps the file's directory for plugin lines",
     test_the_loader_knows_the_files_directory},
    {"a private secret file is read, NUL-terminated", test_a_private_secret_file_is_read},
    {"world-readable, writable by others or another owner's: refused",
     test_a_secret_file_others_could_read_or_change_is_refused},
    {"a missing, non-regular or oversized secret file is refused",
     test_a_secret_file_must_exist_be_a_file_and_fit},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-conf-values", NULL, NULL, NULL, NULL, value_tests},
        {"gateway-conf-files", suite_init, suite_cleanup, NULL, NULL, path_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
