/* hf-load: repeats the published HYOK performance tests (shared/seeds/) against any Holdfast
 * deployment. One reading per VU level: closed-loop virtual users ramp up, hold steady and ramp
 * down; the table gives total operations, ops/s and p90 latency, and the highest throughput that
 * stays under the API's limit. tests/load/README.md says how to use it. */
#include "hf-build.h"

#include "tests/load/load.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define EXIT_TARGET 1
#define EXIT_USAGE 2
#define EXIT_INTERRUPTED 130

static void on_signal(int sig)
{
    (void)sig;
    hf_run_interrupt();
}

static bool is_loopback(const struct hf_target *t, const char *host)
{
    if (strcmp(host, "localhost") == 0) return true;
    if (t->addr.ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)&t->addr)->sin_addr.s_addr) >> 24) == 127;
    if (t->addr.ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)&t->addr)->sin6_addr, &in6addr_loopback,
                      sizeof(struct in6_addr)) == 0;
    return false;
}

/* Room for every VU's socket (a level of 5000 VUs needs 5000 descriptors). */
static int fd_limit_raise(unsigned vus, char *err, size_t errlen)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)vus + 64;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
    if (rl.rlim_cur >= need) return 0;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        snprintf(err, errlen,
                 "%u VUs need %llu file descriptors but the hard limit is %llu "
                 "(raise it with ulimit -Hn)",
                 vus, (unsigned long long)need, (unsigned long long)rl.rlim_max);
        return -1;
    }
    rl.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        snprintf(err, errlen, "cannot raise the file descriptor limit to %llu: %s",
                 (unsigned long long)need, strerror(errno));
        return -1;
    }
    return 0;
}

/* --intervals: one line per slice, for scripts (a failover test reads each slice's errors and
 * p99): "interval K FROM-TOs ops N ops/s R errors E p50 A p99 B max C ms". The last slice
 * ends with the level's plan; replies that complete after it (the tail) count there too. */
static void intervals_print(FILE *out, const struct hf_phase_plan *plan,
                            const struct hf_level_stats *s)
{
    size_t k;

    for (k = 0; plan->ninterval_ends && k <= plan->ninterval_ends; k++) {
        uint64_t from = k ? plan->interval_ends_us[k - 1] : 0;
        uint64_t to = k < plan->ninterval_ends ? plan->interval_ends_us[k] : hf_phase_end_us(plan);
        double secs = to > from ? (double)(to - from) / 1e6 : 0.0;
        const struct hf_hist *h = &s->interval_hist[k];

        fprintf(out,
                "interval %zu %.1f-%.1fs ops %llu ops/s %.1f errors %llu p50 %.2f p99 %.2f "
                "max %.2f ms\n",
                k + 1, (double)from / 1e6, (double)to / 1e6,
                (unsigned long long)s->interval_ops[k],
                secs > 0 ? (double)s->interval_ops[k] / secs : 0.0,
                (unsigned long long)s->interval_errors[k],
                (double)hf_hist_percentile(h, 50) / 1e3, (double)hf_hist_percentile(h, 99) / 1e3,
                (double)h->max_us / 1e3);
    }
    fflush(out);
}

static void errors_print(FILE *out, unsigned vus, const struct hf_level_stats *s)
{
    const char *sep = "";
    size_t i;

    fprintf(out, "  errors at %u VUs:", vus);
    for (i = 0; i < HF_STATUS_SLOTS; i++)
        if (s->status[i]) {
            fprintf(out, "%s HTTP %zu: %llu", sep, i, (unsigned long long)s->status[i]);
            sep = ",";
        }
    for (i = 0; i < HF_TERR_COUNT; i++)
        if (s->terr[i]) {
            fprintf(out, "%s %s: %llu", sep, hf_terr_name((enum hf_terr)i),
                    (unsigned long long)s->terr[i]);
            sep = ",";
        }
    fprintf(out, "\n");
}

/* One request (after the API's setup, if any) before the sweep: a wrong URL, certificate,
 * credential or key id fails here with the reason, not as a table of errors. */
static int preflight(const struct hf_load_config *cfg, const struct hf_target *target,
                     void *api_state)
{
    struct hf_level_stats *stats = calloc(1, sizeof(*stats));
    struct hf_run run = {0};
    char why[512];
    int rc = -1;

    if (!stats) return -1;
    run.cfg = cfg;
    run.target = target;
    run.api = cfg->api;
    run.api_state = api_state;
    run.plan = (struct hf_phase_plan){.steady_us = cfg->timeout_us * 3, .vus = 1};
    run.threads = 1;
    run.max_requests_per_vu = 1;
    run.stop_on_error = true;
    if (hf_run_level(&run, stats, why, sizeof(why)) != 0) {
        fprintf(stderr, "hf-load: %s\n", why[0] ? why : "the client could not start");
        goto done;
    }
    if (hf_run_interrupted()) goto done;
    if (hf_level_stats_total_ops(stats) == 0) {
        fprintf(stderr, "hf-load: the first %s request failed: %s\n", cfg->api->name,
                why[0] ? why : "no reply");
        goto done;
    }
    rc = 0;
done:
    free(stats);
    return rc;
}

int main(int argc, char **argv)
{
    struct hf_load_config cfg;
    struct hf_target target;
    struct hf_level_result results[HF_LOAD_MAX_LEVELS];
    struct hf_level_stats *stats = NULL;
    struct hf_seed_row *seeds = NULL;
    struct hf_report report = {0};
    struct sigaction sa = {0};
    char err[1024], label[300], host[256];
    void *api_state = NULL;
    unsigned max_vus = 0;
    size_t i, nseeds = 0, done_levels = 0;
    bool target_open = false, target_failed = false;
    int rc = EXIT_USAGE;
    FILE *f;

    switch (hf_load_args_parse(argc, argv, &cfg, err, sizeof(err))) {
    case HF_ARGS_HELP:
        hf_load_usage(stdout);
        return 0;
    case HF_ARGS_JWKS:
        if (hf_load_jwks_print(stdout, &cfg, err, sizeof(err)) == 0 && fflush(stdout) == 0)
            return 0;
        fprintf(stderr, "hf-load: %s\n", err);
        return EXIT_USAGE;
    case HF_ARGS_ERROR:
        fprintf(stderr, "hf-load: %s\n", err);
        return EXIT_USAGE;
    case HF_ARGS_OK:
        break;
    }
    if (cfg.api->init(&cfg, &api_state, err, sizeof(err)) != 0) {
        fprintf(stderr, "hf-load: %s\n", err);
        return EXIT_USAGE;
    }
    for (i = 0; i < cfg.nlevels; i++)
        if (cfg.vus[i] > max_vus) max_vus = cfg.vus[i];
    if (fd_limit_raise(max_vus, err, sizeof(err)) != 0) {
        fprintf(stderr, "hf-load: %s\n", err);
        goto done;
    }
    if (cfg.threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cfg.threads = n > 0 ? (unsigned)n : 1;
    }
    if (cfg.progress < 0) cfg.progress = !cfg.quiet && isatty(STDERR_FILENO);

    signal(SIGPIPE, SIG_IGN);
    sa.sa_handler = on_signal; /* no SA_RESTART: waits return at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    rc = EXIT_TARGET;
    if (hf_target_open(&cfg, &target, err, sizeof(err)) != 0) {
        fprintf(stderr, "hf-load: %s\n", err);
        goto done;
    }
    target_open = true;
    report.loopback = is_loopback(&target, cfg.target.host);
    if (cfg.server_cores == 0 && report.loopback) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cfg.server_cores = n > 0 ? (unsigned)n : 0;
    }
    if (gethostname(host, sizeof(host)) != 0) snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    if (cfg.label)
        snprintf(label, sizeof(label), "%s", cfg.label);
    else if (report.loopback)
        snprintf(label, sizeof(label), "holdfastd on %s", host);
    else
        snprintf(label, sizeof(label), "%s", cfg.target.host);

    report.cfg = &cfg;
    report.levels = results;
    report.total_cores = cfg.server_cores * cfg.server_nodes;
    report.label = label;
    if (cfg.api->seed_api && (cfg.plot_prefix || cfg.markdown_path)) {
        if (hf_seeds_load(cfg.seeds_dir, cfg.api->seed_api, &seeds, &nseeds, err, sizeof(err)) != 0)
            fprintf(stderr, "hf-load: no comparison with the published figures: %s\n", err);
        report.seeds = seeds;
        report.nseeds = nseeds;
    }

    if (preflight(&cfg, &target, api_state) != 0) goto done;

    stats = calloc(1, sizeof(*stats));
    if (!stats) {
        fprintf(stderr, "hf-load: out of memory\n");
        goto done;
    }
    if (!cfg.quiet)
        printf("hf-load: %s against %s; %s %.0fs ramp-up, %.0fs steady, %.0fs ramp-down; "
               "%u client threads; limit p90 %u ms\n\n",
               cfg.api->title, cfg.url, cfg.stop_at_limit ? "sweep," : "levels,",
               (double)cfg.ramp_up_us / 1e6, (double)cfg.steady_us / 1e6,
               (double)cfg.ramp_down_us / 1e6, cfg.threads, cfg.limit_ms);
    hf_report_table_header(stdout, &report);
    rc = 0;
    for (i = 0; i < cfg.nlevels && !hf_run_interrupted(); i++) {
        struct hf_run run = {0};
        char why[512];

        if (i > 0 && cfg.pause_us) {
            struct timespec ts = {(time_t)(cfg.pause_us / 1000000),
                                  (long)(cfg.pause_us % 1000000) * 1000};
            nanosleep(&ts, NULL);
        }
        run.cfg = &cfg;
        run.target = &target;
        run.api = cfg.api;
        run.api_state = api_state;
        run.plan = (struct hf_phase_plan){.ramp_up_us = cfg.ramp_up_us,
                                          .steady_us = cfg.steady_us,
                                          .ramp_down_us = cfg.ramp_down_us,
                                          .vus = cfg.vus[i]};
        memcpy(run.plan.interval_ends_us, cfg.interval_ends_us, sizeof(cfg.interval_ends_us));
        run.plan.ninterval_ends = cfg.ninterval_ends;
        run.threads = cfg.threads;
        run.progress = cfg.progress;
        if (hf_run_level(&run, stats, why, sizeof(why)) != 0) {
            fprintf(stderr, "hf-load: %s\n", why[0] ? why : "the client failed");
            rc = EXIT_TARGET;
            break;
        }
        if (hf_run_interrupted()) break; /* a cut-short level is no reading: leave it out */
        hf_level_result_compute(stats, &run.plan, cfg.limit_ms, &results[i]);
        done_levels = i + 1;
        report.nlevels = done_levels;
        hf_report_table_row(stdout, &report, &results[i]);
        intervals_print(stdout, &run.plan, stats);
        if (stats->retries)
            printf("  retries at %u VUs: %llu (sent again: the connection ended before the reply)\n",
                   cfg.vus[i], (unsigned long long)stats->retries);
        if (hf_level_stats_errors(stats)) {
            errors_print(stderr, cfg.vus[i], stats);
            if (why[0]) fprintf(stderr, "  first error: %s\n", why);
        }
        if (hf_level_stats_total_ops(stats) == 0 && hf_level_stats_errors(stats)) {
            fprintf(stderr, "hf-load: every request failed at %u VUs; stopping\n", cfg.vus[i]);
            target_failed = true;
            break;
        }
        if (cfg.stop_at_limit && results[i].over_limit) break;
    }
    if (hf_run_interrupted()) {
        fprintf(stderr, "hf-load: interrupted; the levels finished before are kept\n");
        rc = EXIT_INTERRUPTED;
    }
    if (!cfg.quiet && done_levels) {
        int best = hf_report_best(&report);
        if (best >= 0) {
            printf("\nBest within %u ms: %.1f ops/s at %u VUs (p90 %.2f ms)", cfg.limit_ms,
                   results[best].ops_per_s, results[best].vus, results[best].p90_ms);
            if (report.total_cores)
                printf(", %.1f ops/s per server core (%u cores%s)",
                       results[best].ops_per_s / report.total_cores, report.total_cores,
                       report.loopback ? ", shared with this client" : "");
            printf(".\n");
        } else {
            printf("\nNo level stayed within %u ms.\n", cfg.limit_ms);
        }
        printf("total ops: the whole run (all phases), as the seeds count it; ops/s and "
               "latencies: the steady phase.\n");
    }
    if (target_failed) rc = EXIT_TARGET;

    if (done_levels && cfg.csv_path) {
        f = strcmp(cfg.csv_path, "-") == 0 ? stdout : fopen(cfg.csv_path, "w");
        if (!f || hf_report_csv(f, &report) != 0 || (f != stdout && fclose(f) != 0)) {
            fprintf(stderr, "hf-load: cannot write %s: %s\n", cfg.csv_path, strerror(errno));
            rc = EXIT_TARGET;
        }
    }
    if (done_levels && cfg.markdown_path) {
        f = fopen(cfg.markdown_path, "w");
        if (!f || hf_report_markdown(f, &report) != 0 || fclose(f) != 0) {
            fprintf(stderr, "hf-load: cannot write %s: %s\n", cfg.markdown_path, strerror(errno));
            rc = EXIT_TARGET;
        }
    }
    if (done_levels && cfg.plot_prefix) {
        if (hf_report_plot(cfg.plot_prefix, &report, err, sizeof(err)) != 0) {
            fprintf(stderr, "hf-load: %s\n", err);
            rc = EXIT_TARGET;
        } else if (!cfg.quiet) {
            printf("plots: %s.svg %s.png\n", cfg.plot_prefix, cfg.plot_prefix);
        }
    }
done:
    free(stats);
    free(seeds);
    if (target_open) hf_target_close(&target);
    if (api_state) cfg.api->free_state(api_state);
    return rc;
}
