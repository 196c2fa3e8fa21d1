/* holdfastd: the gateway daemon. Reads its config, opens the PKCS#11 module, loads the plugins,
 * listens; SIGHUP reloads, SIGTERM drains then stops, SIGINT stops. Runs in the foreground
 * (systemd, containers, tests) or detaches without -f. Signals are taken synchronously by the main
 * thread (sigwaitinfo), so no handler ever runs inside a worker. */
#include "hf-build.h"

#include "gateway/config.h"
#include "gateway/keys.h"
#include "gateway/log.h"
#include "gateway/metrics.h"
#include "gateway/outbound.h"
#include "gateway/plugin.h"
#include "gateway/preauth.h"
#include "gateway/p11.h"
#include "gateway/reload.h"
#include "gateway/server.h"
#include "gateway/tls.h"

#include "pkcs11/common/no-dump.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#define DEFAULT_CONFIG HF_SYSCONFDIR "/holdfast/holdfastd.conf"
#define STOP_WAIT_MS 5000

static void usage(FILE *to)
{
    fprintf(to,
            "usage: holdfastd [-c CONFIG] [-f] [-t] [-p PIDFILE]\n"
            "  -c CONFIG   config file (default %s)\n"
            "  -f          stay in the foreground\n"
            "  -t          check the config (and load the plugins), then exit\n"
            "  -p PIDFILE  write the process id there (overrides [gateway] pidfile)\n"
            "  -h          this help\n",
            DEFAULT_CONFIG);
}

/* systemd's readiness protocol (sd_notify(3)) without libsystemd: one datagram to
 * $NOTIFY_SOCKET, when systemd gave one. */
static void notify_systemd(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len;
    int fd;

    if (!path || (path[0] != '/' && path[0] != '@') || (len = strlen(path)) >= sizeof(sa.sun_path))
        return;
    memcpy(sa.sun_path, path, len);
    if (sa.sun_path[0] == '@') sa.sun_path[0] = '\0'; /* abstract socket */
    if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) return;
    /* Readiness is advisory: a failed send only delays what systemd shows. */
    if (sendto(fd, state, strlen(state), 0, (struct sockaddr *)&sa,
               (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0) {
    }
    close(fd);
}

static bool pidfile_write(const char *path)
{
    char buf[32];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
    bool ok = fd >= 0 && write(fd, buf, (size_t)n) == n;

    if (fd >= 0) close(fd);
    return ok;
}

/* The classic detach: a new session, no controlling terminal, stdio on /dev/null. Done before
 * any thread exists (the PKCS#11 module starts its audit writer in C_Initialize). */
static bool detach(void)
{
    pid_t pid = fork();
    int fd;

    if (pid < 0) return false;
    if (pid > 0) _exit(0);
    if (setsid() < 0) return false;
    if ((pid = fork()) < 0) return false;
    if (pid > 0) _exit(0);
    if (chdir("/") != 0) return false;
    if ((fd = open("/dev/null", O_RDWR)) >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd > 2) close(fd);
    }
    return true;
}

static char *pin_get(const struct hf_gw_config *cfg, char *err, size_t errlen, bool *ok)
{
    *ok = true;
    if (cfg->pin) {
        char *pin = strdup(cfg->pin);
        if (!pin) *ok = false, snprintf(err, errlen, "out of memory");
        return pin;
    }
    if (cfg->pin_file) {
        char *pin = hf_gw_pin_read(cfg->pin_file, err, errlen);
        if (!pin) *ok = false;
        return pin;
    }
    return NULL;
}

static bool config_has_tls(const struct hf_gw_config *cfg)
{
    for (size_t i = 0; i < cfg->nlistens; i++)
        if (cfg->listens[i].tls) return true;
    return false;
}

/* -t: everything that can be checked without the module or the network. */
static int config_test(struct hf_gw_config *cfg)
{
    char err[512] = "";
    struct hf_gw_generation *gen;
    const char *path = cfg->path ? cfg->path : "";
    char *name = strdup(path);

    if (config_has_tls(cfg) && !hf_gw_tls_setup(cfg, err, sizeof(err))) {
        fprintf(stderr, "holdfastd: %s\n", err);
        free(name);
        hf_gw_config_free(cfg);
        return 1;
    }
    hf_gw_tls_teardown();
    if (!(gen = hf_gw_generation_build(cfg, false, err, sizeof(err)))) {
        fprintf(stderr, "holdfastd: %s\n", err);
        free(name);
        return 1;
    }
    hf_gw_generation_unref(gen);
    printf("holdfastd: %s: ok\n", name ? name : "config");
    free(name);
    return 0;
}

/* OpenSSL's secure heap (locked, MADV_DONTDUMP, cleansed on free), made before any key is
 * loaded: the private parts of every RSA/EC key the module unwraps (BN_secure_new) and the SigV4
 * secrets and signing keys (aws-xks) live there. Sized for the core's default key cache: an
 * RSA-4096 key takes 1792 bytes (test-crypto), 4096 of them 7 MiB. Its lock is taken when a key
 * is loaded or freed and per ECDSA signature (the nonce), never per AES-GCM request. */
#define SECURE_HEAP_SIZE (16u << 20)

static bool secure_heap_init(void)
{
    int rc;

    if (!hf_secure_heap_is_wanted()) return true;
    if ((rc = CRYPTO_secure_malloc_init(SECURE_HEAP_SIZE, 16)) == 0) {
        fprintf(stderr, "holdfastd: cannot make OpenSSL's secure heap (%u MiB)\n",
                SECURE_HEAP_SIZE >> 20);
        return false;
    }
    if (rc == 2)
        fprintf(stderr,
                "holdfastd: warning: OpenSSL's secure heap is not locked in memory "
                "(RLIMIT_MEMLOCK under %u MiB?): keys may be swapped out\n",
                SECURE_HEAP_SIZE >> 20);
    return true;
}

/* A signal of sigs, or 0 once deadline_us (hf_now_us's clock; 0: none) has passed; -1 on error. */
static int signal_wait(const sigset_t *sigs, uint64_t deadline_us)
{
    for (;;) {
        siginfo_t si;
        uint64_t now = hf_now_us(), left;
        struct timespec ts;
        int sig;

        if (deadline_us == 0) {
            sig = sigwaitinfo(sigs, &si);
        } else {
            if (now >= deadline_us) return 0;
            left = deadline_us - now;
            ts = (struct timespec){(time_t)(left / 1000000u), (long)(left % 1000000u) * 1000};
            sig = sigtimedwait(sigs, &si, &ts);
            if (sig < 0 && errno == EAGAIN) return 0;
        }
        if (sig >= 0 || errno != EINTR) return sig;
    }
}

static void reload(const char *config_path)
{
    char err[512] = "";

    notify_systemd("RELOADING=1");
    if (hf_gw_reload(config_path, err, sizeof(err))) {
        hf_gw_metrics_reload_count(true);
        hf_gw_log_info("reloaded %s", config_path);
    } else {
        hf_gw_metrics_reload_count(false);
        hf_gw_log_error("reload refused, the running configuration stays: %s", err);
    }
    notify_systemd("READY=1");
}

/* Until a stop: SIGHUP reloads; SIGINT stops at once; SIGTERM drains for drain_ms (a balancer
 * sees /healthz fail and moves its traffic while every request that still comes is served),
 * then stops, or at once on a second SIGTERM or a SIGINT (or when signals cannot be waited for,
 * as before draining existed). A SIGHUP while draining is ignored: systemd was told STOPPING,
 * and a reload would tell it READY again. */
static void signals_serve(const sigset_t *sigs, const char *config_path, unsigned drain_ms)
{
    uint64_t drain_until = 0;

    for (;;) {
        int sig = signal_wait(sigs, drain_until);

        if (sig < 0) {
            hf_gw_log_error("sigwaitinfo: %s", strerror(errno));
            return;
        }
        if (sig == 0) {
            hf_gw_log_info("drained for %u ms, stopping", drain_ms);
            return;
        }
        if (sig == SIGHUP) {
            if (drain_until == 0)
                reload(config_path);
            else
                hf_gw_log_info("reload ignored: draining");
            continue;
        }
        if (sig == SIGTERM && drain_until == 0 && drain_ms > 0) {
            hf_gw_log_info("draining on signal %d: /healthz answers 503 for %u ms, then stop", sig,
                           drain_ms);
            notify_systemd("STOPPING=1");
            hf_gw_server_drain();
            drain_until = hf_now_us() + (uint64_t)drain_ms * 1000u;
            continue;
        }
        hf_gw_log_info("stopping on signal %d", sig);
        notify_systemd("STOPPING=1");
        return;
    }
}

int main(int argc, char **argv)
{
    const char *config_path = DEFAULT_CONFIG, *pidfile = NULL;
    bool foreground = false, test = false, pin_ok;
    struct hf_gw_config *cfg = NULL;
    struct hf_gw_generation *gen;
    sigset_t sigs;
    char err[512] = "", *pin = NULL;
    int opt, rc = 1;

    /* Before anything secret is read (config, PIN, credentials, the TLS key). */
    if (!hf_process_no_dump(err, sizeof(err))) {
        fprintf(stderr, "holdfastd: %s\n", err);
        return 1;
    }
    if (!secure_heap_init()) return 1;
    /* Before any thread: plugins fetch key sets (JWKS) while they are configured. */
    if (!hf_outbound_global_init()) {
        fprintf(stderr, "holdfastd: cannot initialise libcurl\n");
        return 1;
    }
    while ((opt = getopt(argc, argv, "c:ftp:h")) != -1) {
        switch (opt) {
        case 'c':
            config_path = optarg;
            break;
        case 'f':
            foreground = true;
            break;
        case 't':
            test = true;
            break;
        case 'p':
            pidfile = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    if (!(cfg = hf_gw_config_load(config_path, err, sizeof(err)))) {
        fprintf(stderr, "holdfastd: %s\n", err);
        return 1;
    }
    if (test) return config_test(cfg);

    /* Every thread made from here on inherits the mask: only sigwaitinfo below takes them. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (!hf_gw_log_open(cfg->log_path, err, sizeof(err))) {
        fprintf(stderr, "holdfastd: %s\n", err);
        goto done;
    }
    if (!foreground && !detach()) {
        hf_gw_log_error("cannot detach: %s", strerror(errno));
        goto done;
    }
    if (!pidfile) pidfile = cfg->pidfile;
    if (pidfile && !pidfile_write(pidfile)) {
        hf_gw_log_error("pidfile %s: %s", pidfile, strerror(errno));
        pidfile = NULL;
        goto done;
    }
    if (config_has_tls(cfg) && !hf_gw_tls_setup(cfg, err, sizeof(err))) {
        hf_gw_log_error("%s", err);
        goto done;
    }
    pin = pin_get(cfg, err, sizeof(err), &pin_ok);
    if (!pin_ok) {
        hf_gw_log_error("%s", err);
        goto done;
    }
    if (!hf_gw_p11_open(cfg->module, cfg->token_label, pin, err, sizeof(err))) {
        hf_gw_log_error("PKCS#11: %s", err);
        goto done;
    }
    if (pin) OPENSSL_clear_free(pin, strlen(pin));
    pin = NULL;
    {
        /* The generation takes the config; the server keeps reading listener settings from it,
         * and a reload keeps the listeners: keep a copy of the ones in use. */
        struct hf_gw_config *running = hf_gw_config_load(config_path, err, sizeof(err));
        if (!running) {
            hf_gw_log_error("%s", err);
            goto done;
        }
        if (!(gen = hf_gw_generation_build(cfg, true, err, sizeof(err)))) {
            cfg = NULL;
            hf_gw_config_free(running);
            hf_gw_log_error("%s", err);
            goto done;
        }
        cfg = running;
    }
    hf_gw_reload_install(gen);
    if (!hf_gw_preauth_start(cfg->preauth_interval_ms, cfg->preauth_sources)) {
        hf_gw_log_error("cannot start the summary thread for refused requests");
        goto done;
    }
    if (!hf_gw_server_start(cfg, err, sizeof(err))) {
        hf_gw_log_error("%s", err);
        goto done;
    }
    hf_gw_log_info("holdfastd %s ready (module %s, config %s)", PACKAGE_VERSION, hf_gw_p11_module(),
                   config_path);
    notify_systemd("READY=1");

    signals_serve(&sigs, config_path, cfg->drain_ms);
    rc = 0;
    hf_gw_server_stop(STOP_WAIT_MS);
done:
    if (pin) OPENSSL_clear_free(pin, strlen(pin));
    hf_gw_preauth_stop(); /* after the server: its last refusals are in the summaries */
    hf_gw_reload_shutdown();
    hf_gw_keys_shutdown();
    hf_gw_p11_close();
    hf_gw_tls_teardown();
    hf_gw_metrics_shutdown();
    if (pidfile) unlink(pidfile);
    hf_gw_config_free(cfg);
    hf_gw_log_close();
    return rc;
}
