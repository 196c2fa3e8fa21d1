/* holdfastd's config file (gateway/config.c): every key read as documented, relative paths taken
 * from the file's directory, and every bad file refused with its name and line. */
#include "hf-build.h"

#include "harness.h"
#include "gateway/config.h"
#include "gateway/plugins.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[64];

static int suite_init(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/hf-test-gwconf-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int suite_cleanup(void)
{
    char path[128];

    snprintf(path, sizeof(path), "%s/holdfastd.conf", tmpdir);
    unlink(path);
    return rmdir(tmpdir);
}

static struct hf_gw_config *parse(const char *text, char *err, size_t errlen)
{
    err[0] = '\0';
    return hf_gw_config_parse(text, strlen(text), "t.conf", err, errlen);
}

struct refusal {
    const char *text;
    const char *want; /* the message starts with this */
};

/* Each of bad (after head) is refused, and the message starts with what the operator must fix. */
static void refusals_check(const struct refusal *bad, size_t n, const char *head)
{
    char text[512], err[256];

    for (size_t i = 0; i < n; i++) {
        struct hf_gw_config *cfg;
        snprintf(text, sizeof(text), "%s%s", head, bad[i].text);
        cfg = parse(text, err, sizeof(err));
        CU_ASSERT_PTR_NULL(cfg);
        hf_gw_config_free(cfg);
        if (strncmp(err, bad[i].want, strlen(bad[i].want)) != 0) {
            fprintf(stderr, "case %zu: got \"%s\", want \"%s...\"\n", i, err, bad[i].want);
            CU_FAIL("message does not name the problem and line");
        }
    }
}

static void test_a_full_config_is_read(void)
{
    static const char text[] = "# comment\n"
                               "[gateway]\n"
                               "listen = 127.0.0.1:8080\n"
                               "listen = [::1]:8443 tls\n"
                               "listen = *:9000 insecure\n"
                               "threads = 4\n"
                               "max_connections_per_address = 8\n"
                               "header_timeout = 3\n"
                               "body_min_rate = 2k\n"
                               "drain_ms = 0\n"
                               "max_body = 16k\n"
                               "max_connections = 100\n"
                               "connection_timeout = 5\n"
                               "module = /opt/m.so\n"
                               "token = holdfast\n"
                               "pin_file = /run/pin\n"
                               "plugin_dir = /opt/plugins\n"
                               "plugins = aws-xks, gcp-ekm\n"
                               "log = /var/log/h.log\n"
                               "[tls]\n"
                               "cert = /etc/c.pem\n"
                               "key = /etc/k.pem\n"
                               "client_ca = /etc/ca.pem\n"
                               "client_subject = CN=a,O=b\n"
                               "client_subject = CN=c\n"
                               "client_san = cks.kms.eu-west-1.amazonaws.com\n"
                               "[audit]\n"
                               "success_events = no\n"
                               "success_events.aws-xks = yes\n"
                               "[plugin:extra]\n"
                               "path = /opt/extra.so\n"
                               "[aws-xks]\n"
                               "uri_prefix = /example\n"
                               "[aws-xks:store2]\n"
                               "uri_prefix = /other\n";
    char err[256];
    struct hf_gw_config *cfg = parse(text, err, sizeof(err));

    CU_ASSERT_FATAL(cfg != NULL);
    CU_ASSERT_EQUAL(cfg->nlistens, 3);
    CU_ASSERT_STRING_EQUAL(cfg->listens[0].host, "127.0.0.1");
    CU_ASSERT_STRING_EQUAL(cfg->listens[0].port, "8080");
    CU_ASSERT_FALSE(cfg->listens[0].tls);
    CU_ASSERT_STRING_EQUAL(cfg->listens[1].host, "::1");
    CU_ASSERT(cfg->listens[1].tls);
    CU_ASSERT_EQUAL(cfg->listens[1].line, 4);
    CU_ASSERT_STRING_EQUAL(cfg->listens[2].host, "");
    CU_ASSERT_EQUAL(cfg->threads, 4);
    CU_ASSERT_EQUAL(cfg->max_body, 16 * 1024);
    CU_ASSERT_EQUAL(cfg->max_connections, 100);
    CU_ASSERT_EQUAL(cfg->connection_timeout, 5);
    CU_ASSERT_FALSE(cfg->listens[0].insecure);
    CU_ASSERT_TRUE(cfg->listens[2].insecure);
    CU_ASSERT_EQUAL(cfg->max_per_address, 8);
    CU_ASSERT_EQUAL(cfg->header_timeout, 3);
    CU_ASSERT_EQUAL(cfg->body_min_rate, 2048);
    CU_ASSERT_EQUAL(cfg->drain_ms, 0); /* SIGTERM stops at once */
    CU_ASSERT_STRING_EQUAL(cfg->module, "/opt/m.so");
    CU_ASSERT_STRING_EQUAL(cfg->token_label, "holdfast");
    CU_ASSERT_STRING_EQUAL(cfg->pin_file, "/run/pin");
    CU_ASSERT_STRING_EQUAL(cfg->plugin_dir, "/opt/plugins");
    CU_ASSERT_FATAL(cfg->nplugins == 3);
    CU_ASSERT_STRING_EQUAL(cfg->plugins[0].name, "aws-xks");
    CU_ASSERT_PTR_NULL(cfg->plugins[0].path);
    CU_ASSERT_STRING_EQUAL(cfg->plugins[1].name, "gcp-ekm");
    CU_ASSERT_STRING_EQUAL(cfg->plugins[2].name, "extra");
    CU_ASSERT_STRING_EQUAL(cfg->plugins[2].path, "/opt/extra.so");
    CU_ASSERT_STRING_EQUAL(cfg->log_path, "/var/log/h.log");
    CU_ASSERT_EQUAL(cfg->tls.nsubjects, 2);
    CU_ASSERT_STRING_EQUAL(cfg->tls.subjects[0], "CN=a,O=b");
    CU_ASSERT_EQUAL(cfg->tls.nsans, 1);
    CU_ASSERT_FALSE(hf_gw_config_success_events(cfg, "gcp-ekm"));
    CU_ASSERT(hf_gw_config_success_events(cfg, "aws-xks"));
    CU_ASSERT_FATAL(cfg->nsettings == 2);
    CU_ASSERT_STRING_EQUAL(cfg->settings[0].section, "aws-xks");
    CU_ASSERT_STRING_EQUAL(cfg->settings[0].name, "uri_prefix");
    CU_ASSERT_STRING_EQUAL(cfg->settings[0].value, "/example");
    CU_ASSERT_EQUAL(cfg->settings[0].line, 33);
    CU_ASSERT_STRING_EQUAL(cfg->settings[1].section, "aws-xks:store2");
    CU_ASSERT_EQUAL(cfg->settings[1].line, 35);
    hf_gw_config_free(cfg);
}

static void test_defaults(void)
{
    char err[256];
    struct hf_gw_config *cfg = parse("[gateway]\nlisten = 127.0.0.1:1\n", err, sizeof(err));

    CU_ASSERT_FATAL(cfg != NULL);
    CU_ASSERT_EQUAL(cfg->threads, 0);
    CU_ASSERT_EQUAL(cfg->max_body, HF_GW_DEFAULT_MAX_BODY);
    CU_ASSERT_EQUAL(cfg->max_per_address, HF_GW_DEFAULT_MAX_PER_ADDRESS);
    CU_ASSERT_EQUAL(cfg->header_timeout, HF_GW_DEFAULT_HEADER_TIMEOUT);
    CU_ASSERT_EQUAL(cfg->body_min_rate, HF_GW_DEFAULT_BODY_MIN_RATE);
    CU_ASSERT_EQUAL(cfg->drain_ms, 2000);
    CU_ASSERT_STRING_EQUAL(cfg->module, HF_P11MODULEDIR "/holdfast-pkcs11.so");
    CU_ASSERT_STRING_EQUAL(cfg->plugin_dir, HF_PLUGINDIR);
    CU_ASSERT_PTR_NULL(cfg->token_label);
    CU_ASSERT_PTR_NULL(cfg->pin);
    CU_ASSERT_EQUAL(cfg->nplugins, 0);
    CU_ASSERT(hf_gw_config_success_events(cfg, "aws-xks"));
    CU_ASSERT_EQUAL(cfg->preauth_interval_ms, HF_GW_DEFAULT_PREAUTH_INTERVAL_MS);
    CU_ASSERT_EQUAL(cfg->preauth_sources, HF_GW_DEFAULT_PREAUTH_SOURCES);
    hf_gw_config_free(cfg);
}

static void test_preauth_summary_settings_are_read(void)
{
    char err[256];
    struct hf_gw_config *cfg = parse("[gateway]\nlisten = 127.0.0.1:1\n[audit]\n"
                                     "preauth_interval_ms = 1000\npreauth_sources = 64\n",
                                     err, sizeof(err));

    CU_ASSERT_FATAL(cfg != NULL);
    CU_ASSERT_EQUAL(cfg->preauth_interval_ms, 1000);
    CU_ASSERT_EQUAL(cfg->preauth_sources, 64);
    hf_gw_config_free(cfg);
}

static void test_relative_paths_follow_the_file(void)
{
    char path[128], err[256];
    struct hf_gw_config *cfg;
    FILE *fp;

    snprintf(path, sizeof(path), "%s/holdfastd.conf", tmpdir);
    fp = fopen(path, "w");
    CU_ASSERT_FATAL(fp != NULL);
    fputs("[gateway]\nlisten = 127.0.0.1:1 tls\npin_file = pins/user.pin\n"
          "[tls]\ncert = c.pem\nkey = /abs/k.pem\n[plugin:x]\npath = x.so\n",
          fp);
    fclose(fp);
    cfg = hf_gw_config_load(path, err, sizeof(err));
    CU_ASSERT_FATAL(cfg != NULL);
    {
        char want[160];
        snprintf(want, sizeof(want), "%s/pins/user.pin", tmpdir);
        CU_ASSERT_STRING_EQUAL(cfg->pin_file, want);
        snprintf(want, sizeof(want), "%s/c.pem", tmpdir);
        CU_ASSERT_STRING_EQUAL(cfg->tls.cert, want);
        snprintf(want, sizeof(want), "%s/x.so", tmpdir);
        CU_ASSERT_STRING_EQUAL(cfg->plugins[0].path, want);
    }
    CU_ASSERT_STRING_EQUAL(cfg->tls.key, "/abs/k.pem");
    hf_gw_config_free(cfg);
    CU_ASSERT_PTR_NULL(hf_gw_config_load("/nonexistent/holdfastd.conf", err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/holdfastd.conf"));
}

/* Each bad file is refused, and the message starts with what the operator must fix. */
static void test_bad_configs_name_the_line(void)
{
    static const struct refusal bad[] = {
        {"[gateway]\nlisten = 127.0.0.1:1\nlisten_on = x\n", "t.conf:3: unknown key \"listen_on\""},
        {"[gateway]\nlisten = 127.0.0.1\n", "t.conf:2: listen: expected host:port"},
        {"[gateway]\nlisten = 127.0.0.1:99999\n", "t.conf:2: listen: expected host:port"},
        {"[gateway]\nlisten = ::1:80\n", "t.conf:2: listen: expected host:port"},
        {"[gateway]\nlisten = 127.0.0.1:80 ssl\n", "t.conf:2: listen: unknown option \"ssl\""},
        /* Plain HTTP off loopback carries plaintext keys: only when the config says so. */
        {"[gateway]\nlisten = 0.0.0.0:80\n", "t.conf:2: listen: plain HTTP on 0.0.0.0"},
        {"[gateway]\nlisten = *:80\n", "t.conf:2: listen: plain HTTP on every address"},
        {"[gateway]\nlisten = [fe80::1]:80\n", "t.conf:2: listen: plain HTTP on fe80::1"},
        {"[gateway]\nlisten = 10.0.0.1:80 tls insecure\n", "t.conf:2: listen: \"insecure\" is"},
        {"[gateway]\nlisten = 127.0.0.1:80\nheader_timeout = 0\n",
         "t.conf:3: header_timeout: not a number"},
        {"[gateway]\nlisten = 127.0.0.1:80\ndrain_ms = 600001\n",
         "t.conf:3: drain_ms: not a number"},
        {"[gateway]\nlisten = 127.0.0.1:80\nbody_min_rate = fast\n",
         "t.conf:3: body_min_rate: bytes per second"},
        {"[gateway]\nlisten = 127.0.0.1:80\nthreads = many\n", "t.conf:3: threads: not a number"},
        {"[gateway]\nlisten = 127.0.0.1:80\nthreads = -1\n", "t.conf:3: threads: not a number"},
        {"[gateway]\nlisten = 127.0.0.1:80\nmax_body = 10\n", "t.conf:3: max_body: a size"},
        {"[gateway]\nlisten = 127.0.0.1:80\nmax_body = 1g\n", "t.conf:3: max_body: a size"},
        {"[gateway]\n\nlisten = 127.0.0.1:80 tls\n", "t.conf:3: a tls listener needs [tls] cert"},
        {"[gateway]\nlisten = 127.0.0.1:80 tls\n[tls]\ncert = c\nkey = k\nclient_san = x\n",
         "t.conf: [tls] client_subject and client_san need client_ca"},
        {"[gateway]\nlisten = 127.0.0.1:80\n[tls]\nclient_ca = ca.pem\n",
         "t.conf: [tls] client checks without a tls listener"},
        {"[gateway]\nlisten = 127.0.0.1:80\npin = 1234\npin_file = f\n",
         "t.conf: [gateway] pin and pin_file are exclusive"},
        {"listen = 127.0.0.1:80\n", "t.conf:1: \"listen\" outside any section"},
        {"[gateway]\nlisten = 127.0.0.1:80\nthis line has no equals sign\n",
         "t.conf:3: syntax error"},
        {"[gateway]\nlisten = 127.0.0.1:80\n[unclosed\n", "t.conf:3: syntax error"},
        {"[gateway]\nthreads = 2\n", "t.conf: no listen line"},
        {"", "t.conf: no listen line"},
        {"[gateway]\nlisten = 127.0.0.1:80\n[audit]\nsuccess_events = maybe\n",
         "t.conf:4: success_events: expected yes or no"},
        {"[gateway]\nlisten = 127.0.0.1:80\n[audit]\npreauth_interval_ms = 5\n",
         "t.conf:4: preauth_interval_ms: not a number in range (100 to 3600000)"},
        {"[gateway]\nlisten = 127.0.0.1:80\n[audit]\npreauth_sources = 0\n",
         "t.conf:4: preauth_sources: not a number in range (16 to 1000000)"},
        {"[gateway]\nlisten = 127.0.0.1:80\n[audit]\npath = x\n",
         "t.conf:4: unknown key \"path\" in [audit]"},
        {"[gateway]\nlisten = 127.0.0.1:80\nplugins = good, Bad!\n", "t.conf:3: bad plugin name"},
        {"[gateway]\nlisten = 127.0.0.1:80\n[plugin:x]\nfile = x.so\n",
         "t.conf:4: unknown key \"file\" in [plugin:x]"},
        {"[gateway]\nlisten = 127.0.0.1:80\n[Weird Section]\na = b\n",
         "t.conf:4: unknown section [Weird Section]"},
        {"[gateway]\nlisten = 127.0.0.1:80\n[tls]\ncertificate = x\n",
         "t.conf:4: unknown key \"certificate\" in [tls]"},
    };

    refusals_check(bad, sizeof(bad) / sizeof(bad[0]), "");
}

static void test_an_over_long_line_is_refused_with_its_number(void)
{
    char text[600], err[256];
    struct hf_gw_config *cfg;

    snprintf(text, sizeof(text),
             "[gateway]\nlisten = 127.0.0.1:80\n[tls]\nclient_subject = %0300d\n", 0);
    cfg = parse(text, err, sizeof(err));
    CU_ASSERT_PTR_NULL(cfg);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "t.conf:4: line too long"));
    hf_gw_config_free(cfg);
}

/* Sections of plugins that are not loaded are found once the plugin list is known. */
static void test_a_section_without_its_plugin_is_refused(void)
{
    char err[256];
    struct hf_gw_config *cfg =
        parse("[gateway]\nlisten = 127.0.0.1:80\n\n[gcp-ekm]\nkey = value\n", err, sizeof(err));
    struct hf_gw_generation *gen;

    CU_ASSERT_FATAL(cfg != NULL);
    gen = hf_gw_generation_build(cfg, false, err, sizeof(err));
    CU_ASSERT_PTR_NULL(gen);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "t.conf:5: unknown section [gcp-ekm]"));
    hf_gw_generation_unref(gen);
}

static void test_a_missing_plugin_is_refused_with_its_line(void)
{
    char err[256];
    struct hf_gw_config *cfg = parse("[gateway]\nlisten = 127.0.0.1:80\nplugin_dir = /nonexistent\n"
                                     "plugins = nothere\n",
                                     err, sizeof(err));
    struct hf_gw_generation *gen;

    CU_ASSERT_FATAL(cfg != NULL);
    gen = hf_gw_generation_build(cfg, false, err, sizeof(err));
    CU_ASSERT_PTR_NULL(gen);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "t.conf:4: plugin nothere"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/nothere.so"));
    hf_gw_generation_unref(gen);
}

/* [listener:NAME]: its own address, TLS policy and plugins, beside a [gateway] listen line that
 * keeps [tls]'s policy and serves every plugin. */
static void test_listener_sections_are_read(void)
{
    static const char text[] = "[gateway]\n"
                               "listen = 127.0.0.1:8080\n"
                               "listen = 127.0.0.1:8443 tls\n"
                               "plugins = aws-xks, test\n"
                               "[tls]\n"
                               "cert = /etc/c.pem\n"
                               "key = /etc/k.pem\n"
                               "client_ca = /etc/ca.pem\n"
                               "[listener:xks]\n"
                               "listen = 0.0.0.0:9443\n"
                               "cert = /etc/x.pem\n"
                               "key = /etc/x.key\n"
                               "client_ca = /etc/xca.pem\n"
                               "client_subject = CN=kms\n"
                               "client_san = cks.kms.eu-west-1.amazonaws.com\n"
                               "plugins = aws-xks\n"
                               "[listener:bearer]\n"
                               "listen = [::1]:9444\n"
                               "cert = /etc/b.pem\n"
                               "key = /etc/b.key\n"
                               "client_ca = /etc/bca.pem\n"
                               "client_certificate = optional\n"
                               "priority = NORMAL\n"
                               "[listener:plain]\n"
                               "listen = 10.0.0.1:9080\n"
                               "tls = off\n"
                               "insecure = yes\n"
                               "plugins = test\n";
    char err[256];
    struct hf_gw_config *cfg = parse(text, err, sizeof(err));
    const struct hf_gw_listen *l;
    const struct hf_gw_tls_conf *t;

    if (!cfg) fprintf(stderr, "%s\n", err);
    CU_ASSERT_FATAL(cfg != NULL);
    CU_ASSERT_EQUAL_FATAL(cfg->nlistens, 5);
    /* The [gateway] lines: [tls], client certificates required as before, every plugin. */
    l = &cfg->listens[1];
    CU_ASSERT_FALSE(l->own_tls);
    CU_ASSERT(hf_gw_config_listen_tls(cfg, l) == &cfg->tls);
    CU_ASSERT_EQUAL(cfg->tls.client_cert, HF_GW_CLIENT_CERT_REQUIRED);
    CU_ASSERT(hf_gw_config_listen_serves(l, "aws-xks") && hf_gw_config_listen_serves(l, "test"));
    l = &cfg->listens[2];
    t = hf_gw_config_listen_tls(cfg, l);
    CU_ASSERT_STRING_EQUAL(l->name, "xks");
    CU_ASSERT_STRING_EQUAL(l->host, "0.0.0.0");
    CU_ASSERT_STRING_EQUAL(l->port, "9443");
    CU_ASSERT(l->tls); /* on unless tls = off */
    CU_ASSERT_EQUAL(l->line, 10);
    CU_ASSERT_STRING_EQUAL(t->cert, "/etc/x.pem");
    CU_ASSERT_STRING_EQUAL(t->client_ca, "/etc/xca.pem");
    CU_ASSERT_EQUAL(t->client_cert, HF_GW_CLIENT_CERT_REQUIRED); /* a client CA's default */
    CU_ASSERT(t->nsubjects == 1 && t->nsans == 1);
    CU_ASSERT(hf_gw_config_listen_serves(l, "aws-xks"));
    CU_ASSERT_FALSE(hf_gw_config_listen_serves(l, "test"));
    l = &cfg->listens[3];
    t = hf_gw_config_listen_tls(cfg, l);
    CU_ASSERT_STRING_EQUAL(l->host, "::1");
    CU_ASSERT_EQUAL(t->client_cert, HF_GW_CLIENT_CERT_OPTIONAL);
    CU_ASSERT_STRING_EQUAL(t->priority, "NORMAL");
    CU_ASSERT(hf_gw_config_listen_serves(l, "test"));
    l = &cfg->listens[4];
    CU_ASSERT(!l->tls && l->insecure);
    hf_gw_config_free(cfg);
}

static void test_bad_listeners_name_the_line(void)
{
    static const char head[] = "[gateway]\nplugins = aws-xks\n";
    static const struct refusal bad[] = {
        /* after head (2 lines) */
        {"listen = 127.0.0.1:80\n[listener:a]\nlisten = 127.0.0.1:80\ntls = off\n",
         "t.conf:5: listener a: port 80 is already listener 127.0.0.1:80's (line 3)"},
        {"[listener:a]\nlisten = 127.0.0.1:80\ntls = off\nplugins = aws-xks, gcp-ekm\n",
         "t.conf:6: [listener:a] plugins: \"gcp-ekm\" is not loaded"},
        {"[listener:a]\nlisten = 127.0.0.1:80\n", "t.conf:4: [listener:a] has tls = on and needs "
                                                  "cert and key"},
        {"[listener:a]\nlisten = 127.0.0.1:80\ncert = c\nclient_certificate = optional\nkey = k\n",
         "t.conf:6: [listener:a] client_certificate = optional needs client_ca"},
        {"[listener:a]\nlisten = 127.0.0.1:80\ncert = c\nkey = k\nclient_certificate = required\n",
         "t.conf:7: [listener:a] client_certificate = required needs client_ca"},
        {"[listener:a]\nlisten = 127.0.0.1:80\ncert = c\nkey = k\nclient_ca = ca\n"
         "client_certificate = off\n",
         "t.conf:8: [listener:a] client_ca, client_subject and client_san need"},
        {"[listener:a]\nlisten = 127.0.0.1:80\ntls = off\ncert = c\n",
         "t.conf:4: [listener:a] has TLS settings but tls = off"},
        {"[listener:a]\nlisten = 10.1.1.1:80\ntls = off\n", "t.conf:4: listen: plain HTTP on "
                                                            "10.1.1.1"},
        {"[listener:a]\nlisten = 10.1.1.1:80\ninsecure = yes\ncert = c\nkey = k\n",
         "t.conf:4: [listener:a]: insecure is for plain HTTP"},
        {"[listener:a]\ntls = off\n", "t.conf:4: [listener:a] needs listen = host:port"},
        {"[listener:a]\nlisten = 127.0.0.1:80\nlisten = 127.0.0.1:81\n",
         "t.conf:5: listen given twice in [listener:a]"},
        {"[listener:a]\nlisten = 127.0.0.1:80\nclient_certificate = maybe\n",
         "t.conf:5: client_certificate: required, optional or off"},
        {"[listener:a]\nlisten = 127.0.0.1:80\nport = 9\n",
         "t.conf:5: unknown key \"port\" in [listener:a]"},
        {"[listener:a]\nlisten = 127.0.0.1:80\ntls = maybe\n", "t.conf:5: tls: expected on or off"},
        {"[listener:A!]\nlisten = 127.0.0.1:80\n", "t.conf:4: bad listener name \"A!\""},
        {"[listener:a]\nlisten = 127.0.0.1\n", "t.conf:4: listen: expected host:port"},
    };

    refusals_check(bad, sizeof(bad) / sizeof(bad[0]), head);
}

/* What a reload may change: a listener's plugins, not its address or TLS policy. */
static void test_listeners_compare_without_their_plugins(void)
{
    static const char base[] = "[gateway]\nplugins = aws-xks, test\n[listener:a]\n"
                               "listen = 127.0.0.1:80\ncert = c\nkey = k\nclient_ca = ca\n%s";
    static const struct {
        const char *extra;
        bool same;
    } cases[] = {
        {"plugins = test\n", true},
        {"client_certificate = required\n", true}, /* the default, said */
        {"client_certificate = optional\n", false},
        {"client_subject = CN=x\n", false},
        {"priority = NORMAL\n", false},
    };
    char text[512], err[256];
    struct hf_gw_config *a, *b;

    snprintf(text, sizeof(text), base, "");
    a = parse(text, err, sizeof(err));
    CU_ASSERT_FATAL(a != NULL);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(text, sizeof(text), base, cases[i].extra);
        b = parse(text, err, sizeof(err));
        CU_ASSERT_FATAL(b != NULL);
        if (hf_gw_config_listen_is_same(a, &a->listens[0], b, &b->listens[0]) != cases[i].same) {
            fprintf(stderr, "compare case %zu (%s)\n", i, cases[i].extra);
            CU_FAIL("a listener compares wrongly");
        }
        hf_gw_config_free(b);
    }
    hf_gw_config_free(a);
}

static CU_TestInfo config_tests[] = {
    {"a full config is read", test_a_full_config_is_read},
    {"listener sections are read", test_listener_sections_are_read},
    {"bad listeners name the line", test_bad_listeners_name_the_line},
    {"listeners compare without their plugins", test_listeners_compare_without_their_plugins},
    {"defaults", test_defaults},
    {"preauth summary settings are read", test_preauth_summary_settings_are_read},
    {"relative paths follow the file", test_relative_paths_follow_the_file},
    {"bad configs are refused naming file and line", test_bad_configs_name_the_line},
    {"an over-long line is refused with its number",
     test_an_over_long_line_is_refused_with_its_number},
    {"a section without its plugin is refused", test_a_section_without_its_plugin_is_refused},
    {"a missing plugin is refused with its line", test_a_missing_plugin_is_refused_with_its_line},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-config", suite_init, suite_cleanup, NULL, NULL, config_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
