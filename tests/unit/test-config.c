#include "hf-build.h"

#include "harness.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pkcs11/core/config.h"

#include "pkcs11/common/secret-file.h"

static char tmpdir[PATH_MAX];
static char conf_path[PATH_MAX + 32];

static int suite_init(void)
{
    const char *base = getenv("TMPDIR");

    snprintf(tmpdir, sizeof(tmpdir), "%s/hf-test-config-XXXXXX", base ? base : "/tmp");
    if (mkdtemp(tmpdir) == NULL) return -1;
    snprintf(conf_path, sizeof(conf_path), "%s/holdfast.conf", tmpdir);
    unsetenv("HOLDFAST_STATE_DIR");
    unsetenv("HOLDFAST_CONF");
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static int suite_cleanup(void)
{
    return nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void file_write(const char *path, const char *text, mode_t mode)
{
    FILE *fp = fopen(path, "w");

    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fputs(text, fp);
    fclose(fp);
    chmod(path, mode);
}

/* Loads text as the config file; the result, err is filled. */
static CK_RV conf_load(const char *text, struct hf_config *cfg, char *err, size_t errlen)
{
    file_write(conf_path, text, 0600);
    return hf_config_load(conf_path, cfg, err, errlen);
}

/* The load fails with CKR_ARGUMENTS_BAD and err names "holdfast.conf:LINE: " and holds want. */
static void load_fails_at(const char *text, int line, const char *want)
{
    struct hf_config cfg;
    char err[256], prefix[PATH_MAX + 64];

    CU_ASSERT_EQUAL(conf_load(text, &cfg, err, sizeof(err)), CKR_ARGUMENTS_BAD);
    snprintf(prefix, sizeof(prefix), "%s:%d: ", conf_path, line);
    CU_ASSERT_NSTRING_EQUAL(err, prefix, strlen(prefix));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    if (strncmp(err, prefix, strlen(prefix)) != 0 || strstr(err, want) == NULL)
        fprintf(stderr, "\n  got: %s\n  want: %s...%s\n", err, prefix, want);
}

static char *str_join(const char *a, const char *b)
{
    static char buf[PATH_MAX * 2];

    snprintf(buf, sizeof(buf), "%s%s", a, b);
    return buf;
}

static void test_defaults_live_under_the_state_dir(void)
{
    struct hf_config cfg;
    char host[256] = "";

    CU_ASSERT_EQUAL_FATAL(hf_config_set_defaults(&cfg, "/srv/hf"), CKR_OK);
    CU_ASSERT_PTR_NULL(cfg.path);
    CU_ASSERT_STRING_EQUAL(cfg.state_dir, "/srv/hf");
    CU_ASSERT_STRING_EQUAL(cfg.store_path, "/srv/hf/holdfast.db");
    CU_ASSERT_STRING_EQUAL(cfg.hsm_pin_file, "/srv/hf/hsm.pin");
    CU_ASSERT_STRING_EQUAL(cfg.hsm_so_pin_file, "/srv/hf/hsm.so-pin");
    CU_ASSERT_STRING_EQUAL(cfg.softhsm2_conf, "/srv/hf/softhsm2.conf");
    CU_ASSERT_STRING_EQUAL(cfg.audit_path, "/srv/hf/audit.log");
    CU_ASSERT_STRING_EQUAL(cfg.token_label, "holdfast");
    CU_ASSERT_STRING_EQUAL(cfg.hsm_token, "holdfast");
    CU_ASSERT_STRING_EQUAL(cfg.kek_label, "holdfast-root-kek");
    CU_ASSERT_STRING_EQUAL(cfg.hsm_module, HF_SOFTHSM_MODULE);
    CU_ASSERT_PTR_NULL(cfg.hsm_pin);
    CU_ASSERT_PTR_NULL(cfg.hsm_pin_env);
    CU_ASSERT_EQUAL(cfg.audit_sync_interval_ms, 5);
    CU_ASSERT_TRUE(cfg.audit_success_events);
    CU_ASSERT_EQUAL(cfg.cache_max_keys, 4096);
    CU_ASSERT_EQUAL(cfg.pool_queue_max, 256);
    CU_ASSERT_EQUAL(cfg.pool_queue_wait_ms, 2000);
    CU_ASSERT_EQUAL(cfg.pool_call_timeout_ms, 10000);
    gethostname(host, sizeof(host) - 1);
    CU_ASSERT_STRING_EQUAL(cfg.node, host);
    hf_config_free(&cfg);
    CU_ASSERT_PTR_NULL(cfg.state_dir);
}

static void test_default_state_dir_follows_the_environment(void)
{
    struct hf_config cfg;

    setenv("HOLDFAST_STATE_DIR", "/env/state", 1);
    CU_ASSERT_EQUAL_FATAL(hf_config_set_defaults(&cfg, NULL), CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.state_dir, "/env/state");
    CU_ASSERT_STRING_EQUAL(cfg.store_path, "/env/state/holdfast.db");
    hf_config_free(&cfg);
    unsetenv("HOLDFAST_STATE_DIR");
    CU_ASSERT_EQUAL_FATAL(hf_config_set_defaults(&cfg, NULL), CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.state_dir, HF_LOCALSTATEDIR "/lib/holdfast");
    hf_config_free(&cfg);
}

static void test_default_path_follows_holdfast_conf(void)
{
    setenv("HOLDFAST_CONF", "/somewhere/h.conf", 1);
    CU_ASSERT_STRING_EQUAL(hf_config_default_path(), "/somewhere/h.conf");
    unsetenv("HOLDFAST_CONF");
    CU_ASSERT_STRING_EQUAL(hf_config_default_path(), HF_SYSCONFDIR "/holdfast/holdfast.conf");
}

static void test_every_key_is_read(void)
{
    struct hf_config cfg;
    char err[256] = "";
    char pin_path[PATH_MAX + 16], text[PATH_MAX + 1024];

    snprintf(pin_path, sizeof(pin_path), "%s/my.pin", tmpdir);
    file_write(pin_path, "1234\n", 0600);
    snprintf(text, sizeof(text),
             "# comment\n"
             "[holdfast]\nstate_dir = /st\nnode = node-7\n"
             "[token]\nlabel = my-token\n"
             "[store]\npath = /db/h.db\n"
             "[hsm]\nmodule = /opt/softhsm/libsofthsm2.so\ntoken = backend\npin_file = %s\n"
             "so_pin_file = /p/so\nsofthsm2_conf = /p/softhsm2.conf\nroot_kek_label = kek-2\n"
             "[audit]\npath = /a/audit.log ; inline comment\nsync_interval_ms = 20\n"
             "success_events = off\n"
             "[cache]\nmax_keys = 17\n"
             "[pools]\nqueue_max = 0\nqueue_wait_ms = 150\ncall_timeout_ms = 900\n",
             pin_path);
    CU_ASSERT_EQUAL_FATAL(conf_load(text, &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.path, conf_path);
    CU_ASSERT_STRING_EQUAL(cfg.state_dir, "/st");
    CU_ASSERT_STRING_EQUAL(cfg.node, "node-7");
    CU_ASSERT_STRING_EQUAL(cfg.token_label, "my-token");
    CU_ASSERT_STRING_EQUAL(cfg.store_path, "/db/h.db");
    CU_ASSERT_STRING_EQUAL(cfg.hsm_module, "/opt/softhsm/libsofthsm2.so");
    CU_ASSERT_STRING_EQUAL(cfg.hsm_token, "backend");
    CU_ASSERT_STRING_EQUAL(cfg.hsm_pin_file, pin_path);
    CU_ASSERT_STRING_EQUAL(cfg.hsm_pin, "1234");
    CU_ASSERT_STRING_EQUAL(cfg.hsm_so_pin_file, "/p/so");
    CU_ASSERT_STRING_EQUAL(cfg.softhsm2_conf, "/p/softhsm2.conf");
    CU_ASSERT_STRING_EQUAL(cfg.kek_label, "kek-2");
    CU_ASSERT_STRING_EQUAL(cfg.audit_path, "/a/audit.log");
    CU_ASSERT_EQUAL(cfg.audit_sync_interval_ms, 20);
    CU_ASSERT_FALSE(cfg.audit_success_events);
    CU_ASSERT_EQUAL(cfg.cache_max_keys, 17);
    CU_ASSERT_EQUAL(cfg.pool_queue_max, 0); /* nobody waits: a busy pool throttles at once */
    CU_ASSERT_EQUAL(cfg.pool_queue_wait_ms, 150);
    CU_ASSERT_EQUAL(cfg.pool_call_timeout_ms, 900);
    hf_config_free(&cfg);
}

static void test_relative_paths_are_taken_from_the_state_dir(void)
{
    struct hf_config cfg;
    char err[256] = "";

    CU_ASSERT_EQUAL_FATAL(conf_load("[holdfast]\nstate_dir = /st\n[store]\npath = db/h.db\n"
                                    "[hsm]\npin_file = pins/user\nso_pin_file = so\n"
                                    "softhsm2_conf = s.conf\n[audit]\npath = log/a\n",
                                    &cfg, err, sizeof(err)),
                          CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.store_path, "/st/db/h.db");
    CU_ASSERT_STRING_EQUAL(cfg.hsm_pin_file, "/st/pins/user");
    CU_ASSERT_STRING_EQUAL(cfg.hsm_so_pin_file, "/st/so");
    CU_ASSERT_STRING_EQUAL(cfg.softhsm2_conf, "/st/s.conf");
    CU_ASSERT_STRING_EQUAL(cfg.audit_path, "/st/log/a");
    CU_ASSERT_PTR_NULL(cfg.hsm_pin); /* the pin file does not exist yet: fine for load */
    hf_config_free(&cfg);
}

static void test_relative_state_dir_is_taken_from_the_file_directory(void)
{
    struct hf_config cfg;
    char err[256] = "";

    CU_ASSERT_EQUAL_FATAL(conf_load("[holdfast]\nstate_dir = state\n", &cfg, err, sizeof(err)),
                          CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.state_dir, str_join(tmpdir, "/state"));
    CU_ASSERT_STRING_EQUAL(cfg.store_path, str_join(tmpdir, "/state/holdfast.db"));
    hf_config_free(&cfg);
}

static void test_store_locators_keep_their_scheme(void)
{
    struct hf_config cfg;
    char err[256] = "";

    CU_ASSERT_EQUAL_FATAL(conf_load("[holdfast]\nstate_dir = /st\n[store]\npath = sqlite:h.db\n",
                                    &cfg, err, sizeof(err)),
                          CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.store_path, "sqlite:/st/h.db");
    hf_config_free(&cfg);
    CU_ASSERT_EQUAL_FATAL(
        conf_load("[store]\npath = postgresql://db/holdfast\n", &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.store_path, "postgresql://db/holdfast");
    hf_config_free(&cfg);
}

static void test_pin_file_first_line_without_newline(void)
{
    struct hf_config cfg;
    char err[256] = "", pin_path[PATH_MAX + 16], text[PATH_MAX + 64];

    snprintf(pin_path, sizeof(pin_path), "%s/crlf.pin", tmpdir);
    file_write(pin_path, "s3cret-pin\r\nsecond line\n", 0600);
    snprintf(text, sizeof(text), "[hsm]\npin_file = %s\n", pin_path);
    CU_ASSERT_EQUAL_FATAL(conf_load(text, &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.hsm_pin, "s3cret-pin");
    /* Re-reading picks up a changed file. */
    file_write(pin_path, "other", 0600);
    CU_ASSERT_EQUAL(hf_config_resolve_pin(&cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.hsm_pin, "other");
    hf_config_free(&cfg);
}

static void test_group_readable_pin_file_still_loads(void)
{
    struct hf_config cfg;
    char err[256] = "", pin_path[PATH_MAX + 16], text[PATH_MAX + 64];

    snprintf(pin_path, sizeof(pin_path), "%s/group.pin", tmpdir);
    file_write(pin_path, "4321\n", 0640);
    snprintf(text, sizeof(text), "[hsm]\npin_file = %s\n", pin_path);
    CU_ASSERT_EQUAL_FATAL(conf_load(text, &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.hsm_pin, "4321");
    hf_config_free(&cfg);
}

/* mode: the pin file's; want: in the error, which names the file and its mode. */
static void pin_file_mode_is_refused(mode_t mode, const char *want)
{
    struct hf_config cfg;
    char err[512] = "", pin_path[PATH_MAX + 16], text[PATH_MAX + 64], mode_text[16];

    snprintf(pin_path, sizeof(pin_path), "%s/open-%04o.pin", tmpdir, (unsigned)mode);
    file_write(pin_path, "4321\n", 0600);
    CU_ASSERT_EQUAL_FATAL(chmod(pin_path, mode), 0);
    snprintf(text, sizeof(text), "[hsm]\npin_file = %s\n", pin_path);
    CU_ASSERT_EQUAL(conf_load(text, &cfg, err, sizeof(err)), CKR_ARGUMENTS_BAD);
    snprintf(mode_text, sizeof(mode_text), "mode %04o", (unsigned)mode);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, pin_path));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, mode_text));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "chmod 600"));
}

static void test_open_pin_files_are_refused(void)
{
    pin_file_mode_is_refused(0644, "world-readable");
    pin_file_mode_is_refused(0604, "world-readable");
    pin_file_mode_is_refused(0620, "group-writable");
    pin_file_mode_is_refused(0602, "world-writable");
}

/* holdfast.conf holding [hsm] pin is held to the pin file's rule; without a PIN it is not. */
static void test_a_config_holding_a_pin_is_a_secret_file(void)
{
    struct hf_config cfg;
    char err[512] = "";

    file_write(conf_path, "[hsm]\npin = literal-1\n", 0644);
    CU_ASSERT_EQUAL(hf_config_load(conf_path, &cfg, err, sizeof(err)), CKR_ARGUMENTS_BAD);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, conf_path));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "mode 0644: world-readable"));
    file_write(conf_path, "[hsm]\npin = literal-1\n", 0640);
    CU_ASSERT_EQUAL_FATAL(hf_config_load(conf_path, &cfg, err, sizeof(err)), CKR_OK);
    hf_config_free(&cfg);
    file_write(conf_path, "[holdfast]\nstate_dir = /st\n", 0644);
    CU_ASSERT_EQUAL_FATAL(hf_config_load(conf_path, &cfg, err, sizeof(err)), CKR_OK);
    hf_config_free(&cfg);
}

/* The rule itself (pkcs11/common/secret-file.h), owners included, which a test cannot chown. */
static void test_the_secret_file_rule(void)
{
    struct stat st = {.st_uid = 1000, .st_gid = 1000};
    char msg[256];

    st.st_mode = S_IFREG | 0600;
    CU_ASSERT_EQUAL(hf_secret_file_judge(&st, 1000, "pin_file", "/p", msg, sizeof(msg)),
                    HF_SECRET_FILE_OK);
    st.st_mode = S_IFREG | 0400;
    CU_ASSERT_EQUAL(hf_secret_file_judge(&st, 1000, "pin_file", "/p", msg, sizeof(msg)),
                    HF_SECRET_FILE_OK);
    st.st_mode = S_IFREG | 0640;
    CU_ASSERT_EQUAL(hf_secret_file_judge(&st, 1000, "pin_file", "/p", msg, sizeof(msg)),
                    HF_SECRET_FILE_WARN);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "pin_file /p: mode 0640: group-readable"));
    st.st_mode = S_IFREG | 0644;
    CU_ASSERT_EQUAL(hf_secret_file_judge(&st, 1000, "pin_file", "/p", msg, sizeof(msg)),
                    HF_SECRET_FILE_REFUSE);
    CU_ASSERT_STRING_EQUAL(msg, "pin_file /p: mode 0644: world-readable; chmod 600");
    st.st_mode = S_IFREG | 0660;
    CU_ASSERT_EQUAL(hf_secret_file_judge(&st, 1000, "pin_file", "/p", msg, sizeof(msg)),
                    HF_SECRET_FILE_REFUSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "group-writable"));
    /* Root's files serve everyone; another unprivileged user's do not, whatever their mode. */
    st.st_mode = S_IFREG | 0600;
    st.st_uid = 0;
    CU_ASSERT_EQUAL(hf_secret_file_judge(&st, 1000, "pin_file", "/p", msg, sizeof(msg)),
                    HF_SECRET_FILE_OK);
    st.st_uid = 1001;
    CU_ASSERT_EQUAL(hf_secret_file_judge(&st, 1000, "pin_file", "/p", msg, sizeof(msg)),
                    HF_SECRET_FILE_REFUSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "owned by uid 1001"));
    CU_ASSERT_EQUAL(hf_secret_file_judge(&st, 0, "pin_file", "/p", msg, sizeof(msg)),
                    HF_SECRET_FILE_REFUSE);
}

static void test_missing_pin_file_fails_only_on_resolve(void)
{
    struct hf_config cfg;
    char err[256] = "";

    CU_ASSERT_EQUAL_FATAL(conf_load("[hsm]\npin_file = /nonexistent/pin\n", &cfg, err, sizeof(err)),
                          CKR_OK);
    CU_ASSERT_PTR_NULL(cfg.hsm_pin);
    CU_ASSERT_EQUAL(hf_config_resolve_pin(&cfg, err, sizeof(err)), CKR_ARGUMENTS_BAD);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/pin"));
    hf_config_free(&cfg);
}

static void test_empty_pin_file_is_refused(void)
{
    struct hf_config cfg;
    char err[256] = "", pin_path[PATH_MAX + 16], text[PATH_MAX + 64];

    snprintf(pin_path, sizeof(pin_path), "%s/empty.pin", tmpdir);
    file_write(pin_path, "\n", 0600);
    snprintf(text, sizeof(text), "[hsm]\npin_file = %s\n", pin_path);
    CU_ASSERT_EQUAL(conf_load(text, &cfg, err, sizeof(err)), CKR_ARGUMENTS_BAD);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "empty"));
}

static void test_pin_from_the_environment(void)
{
    struct hf_config cfg;
    char err[256] = "";

    setenv("HF_TEST_PIN_VAR", "env-pin", 1);
    CU_ASSERT_EQUAL_FATAL(conf_load("[hsm]\npin_env = HF_TEST_PIN_VAR\n", &cfg, err, sizeof(err)),
                          CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.hsm_pin, "env-pin");
    CU_ASSERT_STRING_EQUAL(cfg.hsm_pin_env, "HF_TEST_PIN_VAR");
    CU_ASSERT_PTR_NULL(cfg.hsm_pin_file);
    hf_config_free(&cfg);
    unsetenv("HF_TEST_PIN_VAR");
    CU_ASSERT_EQUAL(conf_load("[hsm]\npin_env = HF_TEST_PIN_VAR\n", &cfg, err, sizeof(err)),
                    CKR_ARGUMENTS_BAD);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "HF_TEST_PIN_VAR"));
}

static void test_literal_pin_is_kept_on_resolve(void)
{
    struct hf_config cfg;
    char err[256] = "";

    CU_ASSERT_EQUAL_FATAL(conf_load("[hsm]\npin = literal-1\n", &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.hsm_pin, "literal-1");
    CU_ASSERT_PTR_NULL(cfg.hsm_pin_file);
    CU_ASSERT_EQUAL(hf_config_resolve_pin(&cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.hsm_pin, "literal-1");
    hf_config_free(&cfg);
}

static void test_two_pin_sources_are_refused(void)
{
    load_fails_at("[hsm]\npin = 1234\npin_env = X\n", 3, "exclusive");
}

static void test_unknown_key_names_its_line(void)
{
    load_fails_at("[store]\npath = x\n\nfoo = 1\n", 4, "unknown key 'foo' in [store]");
}

static void test_unknown_section_names_its_line(void)
{
    load_fails_at("; top\n[holdfast]\nnode = a\n[stroe]\npath = x\n", 5, "unknown section [stroe]");
}

static void test_key_outside_a_section_is_refused(void)
{
    load_fails_at("node = a\n", 1, "outside of any section");
}

static void test_bad_numbers_are_refused(void)
{
    load_fails_at("[cache]\nmax_keys = many\n", 2, "max_keys: 'many' is not a number");
    load_fails_at("[token]\npin_attempts = 0\n", 2, "pin_attempts");
    load_fails_at("[token]\npin_attempts = 1001\n", 2, "pin_attempts");
    load_fails_at("[token]\npin_iterations = 999\n", 2, "pin_iterations");
    load_fails_at("[token]\npin_iterations = 10000001\n", 2, "pin_iterations");
    load_fails_at("[cache]\nmax_keys = -1\n", 2, "not a number");
    load_fails_at("[cache]\nmax_keys = 0\n", 2, "not a number");
    load_fails_at("[cache]\nmax_keys = 12abc\n", 2, "not a number");
    load_fails_at("[pools]\nqueue_wait_ms = 0\n", 2, "not a number");
    load_fails_at("[pools]\nqueue_max = 65537\n", 2, "not a number");
    load_fails_at("[audit]\nsync_interval_ms = 99999999999999999999\n", 2, "not a number");
    load_fails_at("[audit]\nsync_interval_ms = 3600001\n", 2, "not a number");
}

static void test_bad_booleans_are_refused(void)
{
    struct hf_config cfg;
    char err[256] = "";

    load_fails_at("[audit]\n\nsuccess_events = maybe\n", 3, "not a boolean");
    CU_ASSERT_EQUAL_FATAL(conf_load("[audit]\nsuccess_events = NO\n", &cfg, err, sizeof(err)),
                          CKR_OK);
    CU_ASSERT_FALSE(cfg.audit_success_events);
    hf_config_free(&cfg);
}

static void test_syntax_error_names_its_line(void)
{
    load_fails_at("[store]\npath = x\nthis line has no equals sign\n", 3, "syntax error");
}

static void test_empty_value_is_refused(void)
{
    load_fails_at("[token]\nlabel =\n", 2, "empty value");
}

static void test_first_error_is_reported(void)
{
    load_fails_at("[store]\nbad1 = 1\n[nope]\nx = 1\n", 2, "unknown key 'bad1'");
}

static void test_over_long_line_is_refused(void)
{
    char text[1024];

    snprintf(text, sizeof(text), "[store]\npath = /%0600d\n", 0);
    load_fails_at(text, 2, "line too long");
}

static void test_missing_file_is_refused(void)
{
    struct hf_config cfg;
    char err[256] = "";

    CU_ASSERT_EQUAL(hf_config_load("/nonexistent/holdfast.conf", &cfg, err, sizeof(err)),
                    CKR_ARGUMENTS_BAD);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/holdfast.conf"));
    CU_ASSERT_EQUAL(hf_config_load(NULL, &cfg, err, sizeof(err)), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_config_set_defaults(NULL, "/x"), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_config_resolve_pin(NULL, err, sizeof(err)), CKR_ARGUMENTS_BAD);
}

static void test_softhsm2_conf_only_for_softhsm(void)
{
    struct hf_config cfg;
    char err[256] = "";

    CU_ASSERT_EQUAL_FATAL(
        conf_load("[hsm]\nmodule = /opt/vendor/libcknfast.so\n", &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_PTR_NULL(cfg.softhsm2_conf);
    hf_config_free(&cfg);
    CU_ASSERT_EQUAL_FATAL(conf_load("[hsm]\nsofthsm2_conf =\n", &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_PTR_NULL(cfg.softhsm2_conf);
    hf_config_free(&cfg);
}

/* [audit] reserve and alarm are sizes: bytes, or k, m, g, t in powers of 1024. */
static void test_audit_reserve_takes_a_size(void)
{
    struct hf_config cfg;
    char err[256] = "";

    CU_ASSERT_EQUAL_FATAL(conf_load("", &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_EQUAL(cfg.audit_reserve, 64ull << 20);
    CU_ASSERT_EQUAL(cfg.audit_alarm, 0);
    hf_config_free(&cfg);
    CU_ASSERT_EQUAL_FATAL(
        conf_load("[audit]\nreserve = 4m\nalarm = 10485760\n", &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_EQUAL(cfg.audit_reserve, 4ull << 20);
    CU_ASSERT_EQUAL(cfg.audit_alarm, 10ull << 20);
    hf_config_free(&cfg);
    CU_ASSERT_EQUAL_FATAL(conf_load("[audit]\nreserve = 0\n", &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_EQUAL(cfg.audit_reserve, 0);
    hf_config_free(&cfg);
    load_fails_at("[audit]\nreserve = 4x\n", 2, "is not a size");
    load_fails_at("[audit]\nreserve = -1\n", 2, "is not a size");
    load_fails_at("[audit]\nalarm = 99999999999t\n", 2, "is not a size");
}

/* conf/holdfast.conf.sample, with every key uncommented (but the two PIN sources that exclude
 * pin_file), loads and matches the built-in defaults: the sample cannot drift from the code. */
static void test_sample_documents_the_defaults(void)
{
    const char *top = getenv("top_srcdir");
    char sample[PATH_MAX], line[512], key[64];
    struct hf_config cfg, def;
    char err[256] = "";
    FILE *in, *out;
    int keys = 0, skipped = 0;

    if (top == NULL) {
        fprintf(stderr, "(top_srcdir not set: run through make check) ");
        return;
    }
    snprintf(sample, sizeof(sample), "%s/conf/holdfast.conf.sample", top);
    in = fopen(sample, "r");
    out = fopen(conf_path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(in);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    while (fgets(line, sizeof(line), in) != NULL) {
        bool is_key = sscanf(line, ";%63[a-z_0-9] =", key) == 1;

        if (is_key && strcmp(key, "pin") != 0 && strcmp(key, "pin_env") != 0) {
            fputs(line + 1, out);
            keys++;
        } else {
            skipped += is_key;
            fputs(line, out);
        }
    }
    fclose(in);
    fclose(out);
    /* Every key of config.h is documented. */
    CU_ASSERT_EQUAL(keys, 23);
    CU_ASSERT_EQUAL(skipped, 2);
    CU_ASSERT_EQUAL_FATAL(hf_config_load(conf_path, &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_config_set_defaults(&def, "/var/lib/holdfast"), CKR_OK);
    CU_ASSERT_STRING_EQUAL(cfg.state_dir, def.state_dir);
    CU_ASSERT_STRING_EQUAL(cfg.token_label, def.token_label);
    CU_ASSERT_STRING_EQUAL(cfg.store_path, def.store_path);
    CU_ASSERT_STRING_EQUAL(cfg.hsm_token, def.hsm_token);
    CU_ASSERT_STRING_EQUAL(cfg.hsm_pin_file, def.hsm_pin_file);
    CU_ASSERT_STRING_EQUAL(cfg.hsm_so_pin_file, def.hsm_so_pin_file);
    CU_ASSERT_STRING_EQUAL(cfg.softhsm2_conf, def.softhsm2_conf);
    CU_ASSERT_STRING_EQUAL(cfg.kek_label, def.kek_label);
    CU_ASSERT_STRING_EQUAL(cfg.audit_path, def.audit_path);
    CU_ASSERT_EQUAL(cfg.audit_sync_interval_ms, def.audit_sync_interval_ms);
    CU_ASSERT_EQUAL(cfg.audit_success_events, def.audit_success_events);
    CU_ASSERT_EQUAL(cfg.audit_reserve, def.audit_reserve);
    CU_ASSERT_EQUAL(cfg.audit_alarm, def.audit_alarm);
    CU_ASSERT_EQUAL(cfg.audit_checkpoint_interval_ms, def.audit_checkpoint_interval_ms);
    CU_ASSERT_EQUAL(cfg.cache_max_keys, def.cache_max_keys);
    CU_ASSERT_EQUAL(cfg.pool_queue_max, def.pool_queue_max);
    CU_ASSERT_EQUAL(cfg.pool_queue_wait_ms, def.pool_queue_wait_ms);
    CU_ASSERT_EQUAL(cfg.pool_call_timeout_ms, def.pool_call_timeout_ms);
    CU_ASSERT_EQUAL(cfg.pin_attempts, def.pin_attempts);
    CU_ASSERT_EQUAL(def.pin_attempts, 10);
    CU_ASSERT_EQUAL(cfg.pin_iterations, def.pin_iterations);
    CU_ASSERT_EQUAL(def.pin_iterations, 100000);
    CU_ASSERT_EQUAL(cfg.hsm_concurrency, def.hsm_concurrency);
    CU_ASSERT_EQUAL(cfg.n_root_members, 0);
    hf_config_free(&cfg);
    hf_config_free(&def);
}

/* [hsm.NAME]: the root's other members, in file order, each with its own PIN or [hsm]'s. */
static void test_root_members_are_read(void)
{
    struct hf_config cfg;
    char err[256] = "", pin_path[PATH_MAX + 16], text[PATH_MAX + 512];

    snprintf(pin_path, sizeof(pin_path), "%s/b.pin", tmpdir);
    file_write(pin_path, "b-pin-1234\n", 0600);
    setenv("HF_TEST_ROOT_PIN", "c-pin-5678", 1);
    snprintf(text, sizeof(text),
             "[holdfast]\nstate_dir = %s\n[hsm]\ntoken = root\nconcurrency = 6\n"
             "[hsm.b]\nmodule = /opt/b.so\npin_file = b.pin\nconcurrency = 2\n"
             "[hsm.c-2]\nmodule = /opt/c.so\ntoken = other\npin_env = HF_TEST_ROOT_PIN\n"
             "[hsm.d]\nmodule = /opt/d.so\n",
             tmpdir);
    CU_ASSERT_EQUAL_FATAL(conf_load(text, &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_EQUAL(cfg.hsm_concurrency, 6);
    CU_ASSERT_EQUAL_FATAL(cfg.n_root_members, 3);
    CU_ASSERT_STRING_EQUAL(cfg.root_members[0].name, "b");
    CU_ASSERT_STRING_EQUAL(cfg.root_members[0].module, "/opt/b.so");
    CU_ASSERT_STRING_EQUAL(cfg.root_members[0].token, "root"); /* a clone keeps its label */
    CU_ASSERT_STRING_EQUAL(cfg.root_members[0].pin_file, pin_path);
    CU_ASSERT_STRING_EQUAL(cfg.root_members[0].pin, "b-pin-1234");
    CU_ASSERT_EQUAL(cfg.root_members[0].concurrency, 2);
    CU_ASSERT_STRING_EQUAL(cfg.root_members[1].name, "c-2");
    CU_ASSERT_STRING_EQUAL(cfg.root_members[1].token, "other");
    CU_ASSERT_STRING_EQUAL(cfg.root_members[1].pin, "c-pin-5678");
    CU_ASSERT_EQUAL(cfg.root_members[1].concurrency, 4);
    CU_ASSERT_PTR_NULL(cfg.root_members[2].pin); /* [hsm]'s PIN: a clone keeps it */
    hf_config_free(&cfg);
    unsetenv("HF_TEST_ROOT_PIN");
    CU_ASSERT_EQUAL(
        conf_load("[hsm.b]\nmodule = /b.so\npin_env = HF_TEST_ROOT_PIN\n", &cfg, err, sizeof(err)),
        CKR_ARGUMENTS_BAD);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "HF_TEST_ROOT_PIN is not set"));
    CU_ASSERT_EQUAL(
        conf_load("[hsm.b]\nmodule = /b.so\npin_file = /nonexistent/pin\n", &cfg, err, sizeof(err)),
        CKR_ARGUMENTS_BAD);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/pin"));
}

static void test_root_member_mistakes_name_their_line(void)
{
    load_fails_at("[hsm.b]\nmodule = /b.so\nslot = 1\n", 3, "unknown key 'slot' in [hsm.b]");
    load_fails_at("[hsm.B]\nmodule = /b.so\n", 2, "a member's name");
    load_fails_at("[hsm.hsm]\nmodule = /b.so\n", 2, "not \"hsm\"");
    load_fails_at("[hsm.]\nmodule = /b.so\n", 2, "a member's name");
    load_fails_at("[hsm.b]\npin = 1234\npin_file = /p\n", 3, "exclusive");
    load_fails_at("[hsm.b]\nmodule =\n", 2, "empty value");
    load_fails_at("[hsm.b]\nconcurrency = 0\n", 2, "from 1 to 1024");
    load_fails_at("\n[hsm.b]\ntoken = t\n", 3, "[hsm.b] has no module");
    load_fails_at(
        "[hsm.a]\nmodule=/m\n[hsm.b]\nmodule=/m\n[hsm.c]\nmodule=/m\n[hsm.d]\nmodule=/m\n"
        "[hsm.e]\nmodule=/m\n[hsm.f]\nmodule=/m\n[hsm.g]\nmodule=/m\n[hsm.h]\nmodule=/m\n",
        16, "at most 7 members");
}

static void test_free_tolerates_null_and_twice(void)
{
    struct hf_config cfg;

    hf_config_free(NULL);
    CU_ASSERT_EQUAL_FATAL(hf_config_set_defaults(&cfg, "/x"), CKR_OK);
    hf_config_free(&cfg);
    hf_config_free(&cfg);
    CU_ASSERT_PTR_NULL(cfg.store_path);
}

static CU_TestInfo config_tests[] = {
    {"defaults live under the state dir", test_defaults_live_under_the_state_dir},
    {"default state dir follows HOLDFAST_STATE_DIR",
     test_default_state_dir_follows_the_environment},
    {"default path follows HOLDFAST_CONF", test_default_path_follows_holdfast_conf},
    {"every key is read", test_every_key_is_read},
    {"relative paths are taken from the state dir",
     test_relative_paths_are_taken_from_the_state_dir},
    {"relative state dir is taken from the file's directory",
     test_relative_state_dir_is_taken_from_the_file_directory},
    {"store locators keep their scheme", test_store_locators_keep_their_scheme},
    {"pin file: first line without its newline", test_pin_file_first_line_without_newline},
    {"group-readable pin file still loads (warning)", test_group_readable_pin_file_still_loads},
    {"world-readable or group/world-writable pin files are refused",
     test_open_pin_files_are_refused},
    {"a config holding a PIN is a secret file", test_a_config_holding_a_pin_is_a_secret_file},
    {"the secret file rule", test_the_secret_file_rule},
    {"missing pin file fails only on resolve", test_missing_pin_file_fails_only_on_resolve},
    {"empty pin file is refused", test_empty_pin_file_is_refused},
    {"pin from the environment", test_pin_from_the_environment},
    {"literal pin is kept on resolve", test_literal_pin_is_kept_on_resolve},
    {"two pin sources are refused", test_two_pin_sources_are_refused},
    {"unknown key names its line", test_unknown_key_names_its_line},
    {"unknown section names its line", test_unknown_section_names_its_line},
    {"key outside a section is refused", test_key_outside_a_section_is_refused},
    {"bad numbers are refused", test_bad_numbers_are_refused},
    {"bad booleans are refused", test_bad_booleans_are_refused},
    {"syntax error names its line", test_syntax_error_names_its_line},
    {"empty value is refused", test_empty_value_is_refused},
    {"the first error is reported", test_first_error_is_reported},
    {"over-long line is refused", test_over_long_line_is_refused},
    {"missing file and NULL arguments are refused", test_missing_file_is_refused},
    {"softhsm2_conf only for SoftHSMv2", test_softhsm2_conf_only_for_softhsm},
    {"the sample documents the defaults", test_sample_documents_the_defaults},
    {"[audit] reserve takes a size", test_audit_reserve_takes_a_size},
    {"root members are read", test_root_members_are_read},
    {"root member mistakes name their line", test_root_member_mistakes_name_their_line},
    {"free tolerates NULL and a second call", test_free_tolerates_null_and_twice},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"config", suite_init, suite_cleanup, NULL, NULL, config_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
