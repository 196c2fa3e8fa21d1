/* hf-load's outputs: the seeds' table (VUs, total ops, ops/s, p90 ms, and more), CSV in the
 * seeds' columns, a markdown section with the per-core comparison, and gnuplot plots of p90
 * against ops/s per server core beside the published series. */
#include "hf-build.h"

#include "tests/load/load.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define SEED_SERIES_MAX 6 /* the plot keeps the best few published series: more is unreadable */

/* Dark enough to read on white, apart from Holdfast's blue and the limit's red. */
static const char *const seed_colours[SEED_SERIES_MAX] = {"#e07000", "#2e8b57", "#7b3fa0",
                                                          "#8b5a2b", "#555555", "#c71585"};

static void fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || errlen == 0) return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- Seeds -------------------------------------------------------------------------------------
 */

enum {
    COL_API,
    COL_DEPLOYMENT,
    COL_CLIENT,
    COL_SERVER,
    COL_NODES,
    COL_CPUS,
    COL_RAM,
    COL_KEY_SOURCE,
    COL_VARIANT,
    COL_VUS,
    COL_TOTAL,
    COL_OPS,
    COL_LATENCY,
    COL_STAT,
    COL_THRESHOLD,
    COL_COUNT
};

static double num_or(const char *s, double dflt)
{
    char *end;
    double v;

    if (!s || !*s) return dflt;
    v = strtod(s, &end);
    return end == s ? dflt : v;
}

int hf_seeds_load(const char *dir, const char *stem, struct hf_seed_row **rows, size_t *nrows,
                  char *err, size_t errlen)
{
    char path[4096], line[2048];
    struct hf_seed_row *out = NULL, *grown;
    size_t n = 0, cap = 0;
    unsigned lineno = 0;
    FILE *f;
    int rc = -1;

    *rows = NULL;
    *nrows = 0;
    if (!dir || !stem) {
        fail(err, errlen, "no seeds directory (--seeds DIR or HF_LOAD_SEEDS)");
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s.csv", dir, stem);
    f = fopen(path, "r");
    if (!f) {
        fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        char *cols[COL_COUNT], *p = line;
        size_t c = 0;

        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (lineno == 1 || !line[0]) continue; /* the header */
        /* The seeds contain no quotes and no commas inside fields (their README says so). */
        while (c < COL_COUNT) {
            cols[c++] = p;
            p = strchr(p, ',');
            if (!p) break;
            *p++ = '\0';
        }
        if (c != COL_COUNT || p) {
            fail(err, errlen, "%s:%u: expected %d columns", path, lineno, COL_COUNT);
            goto done;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            grown = realloc(out, cap * sizeof(*out));
            if (!grown) {
                fail(err, errlen, "out of memory");
                goto done;
            }
            out = grown;
        }
        memset(&out[n], 0, sizeof(out[n]));
        snprintf(out[n].deployment, sizeof(out[n].deployment), "%s", cols[COL_DEPLOYMENT]);
        snprintf(out[n].variant, sizeof(out[n].variant), "%s", cols[COL_VARIANT]);
        snprintf(out[n].key_source, sizeof(out[n].key_source), "%s", cols[COL_KEY_SOURCE]);
        snprintf(out[n].latency_stat, sizeof(out[n].latency_stat), "%s", cols[COL_STAT]);
        out[n].nodes = (unsigned)num_or(cols[COL_NODES], 1);
        out[n].cpus = (unsigned)num_or(cols[COL_CPUS], 0);
        out[n].vus = (unsigned)num_or(cols[COL_VUS], 0);
        out[n].ops_per_s = num_or(cols[COL_OPS], 0);
        out[n].latency_ms = num_or(cols[COL_LATENCY], -1);
        out[n].threshold_ms = num_or(cols[COL_THRESHOLD], -1);
        if (out[n].nodes == 0) out[n].nodes = 1;
        n++;
    }
    if (ferror(f)) {
        fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
        goto done;
    }
    *rows = out;
    *nrows = n;
    out = NULL;
    rc = 0;
done:
    free(out);
    fclose(f);
    return rc;
}

static bool seed_within(const struct hf_seed_row *s)
{
    if (s->latency_ms < 0) return strcmp(s->latency_stat, "max_under_threshold") == 0;
    return s->threshold_ms < 0 || s->latency_ms <= s->threshold_ms;
}

static bool same_series(const struct hf_seed_row *a, const struct hf_seed_row *b)
{
    return a->nodes == b->nodes && a->cpus == b->cpus &&
           strcmp(a->deployment, b->deployment) == 0 && strcmp(a->variant, b->variant) == 0;
}

static double seed_per_core(const struct hf_seed_row *s)
{
    return s->cpus ? s->ops_per_s / ((double)s->nodes * s->cpus) : 0;
}

/* A short name for a published series: "CCKM 1x16 CPU, CM keys, on premises". */
static void seed_title(const struct hf_seed_row *s, char *out, size_t len)
{
    const char *ks = strcmp(s->key_source, "CipherTrust Manager") == 0 ? "CM keys"
                     : strncmp(s->key_source, "Luna", 4) == 0          ? "Luna HSM"
                                                                       : s->key_source;
    const char *where = strstr(s->deployment, "on premises") || strstr(s->deployment, "on Premises")
                            ? ", on premises"
                        : strstr(s->deployment, "on AWS") ? ", AWS"
                        : strstr(s->deployment, "on GCP") ? ", GCP"
                        : strstr(s->deployment, "on OCI") ? ", OCI"
                                                          : "";

    snprintf(out, len, "CCKM %ux%u CPU, %s%s%s%s", s->nodes, s->cpus, ks, s->variant[0] ? ", " : "",
             s->variant, where);
}

/* ---- Table and CSV -----------------------------------------------------------------------------
 */

static double per_core(const struct hf_report *r, double ops)
{
    return r->total_cores ? ops / r->total_cores : 0;
}

int hf_report_best(const struct hf_report *r)
{
    int best = -1;
    size_t i;

    for (i = 0; i < r->nlevels; i++)
        if (!r->levels[i].over_limit &&
            (best < 0 || r->levels[i].ops_per_s > r->levels[best].ops_per_s))
            best = (int)i;
    return best;
}

void hf_report_table_header(FILE *out, const struct hf_report *r)
{
    fprintf(out, "|   VUs | total ops |     ops/s |   p90 ms |   p50 ms |   p99 ms |   max ms | "
                 "errors | ops/s per core |\n"
                 "|------:|----------:|----------:|---------:|---------:|---------:|---------:|"
                 "-------:|---------------:|\n");
    (void)r;
}

void hf_report_table_row(FILE *out, const struct hf_report *r, const struct hf_level_result *l)
{
    char core[32];

    if (r->total_cores)
        snprintf(core, sizeof(core), "%.1f", per_core(r, l->ops_per_s));
    else
        snprintf(core, sizeof(core), "n/a");
    fprintf(out, "| %5u | %9llu | %9.1f | %8.2f | %8.2f | %8.2f | %8.2f | %6llu | %14s |%s\n",
            l->vus, (unsigned long long)l->total_ops, l->ops_per_s, l->p90_ms, l->p50_ms, l->p99_ms,
            l->max_ms, (unsigned long long)l->errors, core, l->over_limit ? " over the limit" : "");
    fflush(out);
}

/* CSV fields must not hold commas or quotes: the seeds' rule (commas become ';'). */
static void csv_field(FILE *out, const char *s)
{
    for (; s && *s; s++)
        fputc(*s == ',' ? ';' : *s == '"' ? '\'' : *s, out);
}

int hf_report_csv(FILE *out, const struct hf_report *r)
{
    const struct hf_load_config *cfg = r->cfg;
    size_t i;

    fprintf(out, "api,deployment,client_location,server_location,nodes,cpus,ram_gb,key_source,"
                 "variant,virtual_users,total_ops,ops_per_s,latency_ms,latency_stat,threshold_ms,"
                 "steady_ops,run_ops_per_s,p50_ms,p99_ms,max_ms,mean_ms,errors,"
                 "ops_per_s_per_core,ramp_up_s,steady_s,ramp_down_s,think_ms\n");
    for (i = 0; i < r->nlevels; i++) {
        const struct hf_level_result *l = &r->levels[i];

        csv_field(out, cfg->api->seed_api ? cfg->api->seed_api : cfg->api->name);
        fputc(',', out);
        csv_field(out, r->label);
        fputc(',', out);
        csv_field(out, r->loopback ? "same host" : "");
        fputc(',', out);
        csv_field(out, cfg->target.host);
        fprintf(out, ",%u,", cfg->server_nodes);
        if (cfg->server_cores) fprintf(out, "%u", cfg->server_cores);
        fputs(",,Holdfast,", out);
        csv_field(out, cfg->api->name);
        fprintf(out, ",%u,%llu,%.2f,%.2f,p90,%u,%llu,%.2f,%.2f,%.2f,%.2f,%.2f,%llu,", l->vus,
                (unsigned long long)l->total_ops, l->ops_per_s, l->p90_ms, cfg->limit_ms,
                (unsigned long long)l->steady_ops, l->run_ops_per_s, l->p50_ms, l->p99_ms,
                l->max_ms, l->mean_ms, (unsigned long long)l->errors);
        if (r->total_cores) fprintf(out, "%.2f", per_core(r, l->ops_per_s));
        fprintf(out, ",%.3f,%.3f,%.3f,%.1f\n", (double)cfg->ramp_up_us / 1e6,
                (double)cfg->steady_us / 1e6, (double)cfg->ramp_down_us / 1e6,
                (double)(cfg->think_min_us + cfg->think_max_us) / 2e3);
    }
    return ferror(out) ? -1 : 0;
}

/* ---- Markdown ----------------------------------------------------------------------------------
 */

static int cmp_per_core_desc(const void *a, const void *b)
{
    double x = seed_per_core(*(const struct hf_seed_row *const *)a);
    double y = seed_per_core(*(const struct hf_seed_row *const *)b);
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The best row within the limit of each published series, for the comparison table and plot. */
static size_t seed_bests(const struct hf_report *r, const struct hf_seed_row **out, size_t max)
{
    size_t i, j, n = 0;

    for (i = 0; i < r->nseeds; i++) {
        const struct hf_seed_row *s = &r->seeds[i];

        if (!seed_within(s)) continue;
        for (j = 0; j < n; j++)
            if (same_series(out[j], s)) break;
        if (j < n) {
            if (s->ops_per_s > out[j]->ops_per_s) out[j] = s;
        } else if (n < max) {
            out[n++] = s;
        }
    }
    return n;
}

int hf_report_markdown(FILE *out, const struct hf_report *r)
{
    const struct hf_load_config *cfg = r->cfg;
    const struct hf_seed_row **bests = NULL;
    int best = hf_report_best(r);
    size_t i, nb, unknown = 0;

    fprintf(out, "### %s: %s\n\n", cfg->api->title, r->label);
    fprintf(out, "Target `%s`; VUs ramp up over %.0f s, hold %.0f s, ramp down over %.0f s",
            cfg->url, (double)cfg->ramp_up_us / 1e6, (double)cfg->steady_us / 1e6,
            (double)cfg->ramp_down_us / 1e6);
    if (cfg->think_max_us)
        fprintf(out, "; each VU pauses %.0f to %.0f ms after an operation",
                (double)cfg->think_min_us / 1e3, (double)cfg->think_max_us / 1e3);
    fprintf(out, "; latency limit %u ms (p90).", cfg->limit_ms);
    if (r->total_cores)
        fprintf(out, " Server: %u node(s) x %u core(s)%s.", cfg->server_nodes, cfg->server_cores,
                r->loopback ? ", shared with the load client (k6 on the CM host, as in the "
                              "seeds' zero-latency set-ups)"
                            : "");
    fprintf(out, "\n\n");
    hf_report_table_header(out, r);
    for (i = 0; i < r->nlevels; i++)
        hf_report_table_row(out, r, &r->levels[i]);
    fprintf(out, "\n*total ops* counts every successful operation of the run (ramp-up, steady, "
                 "ramp-down), as the seeds do; *ops/s* and the latencies are the steady phase "
                 "only (the seeds' ops/s, total over the whole run, is `run_ops_per_s` in the "
                 "CSV). Failed requests count as errors, not as operations.\n\n");
    if (best >= 0) {
        const struct hf_level_result *l = &r->levels[best];
        fprintf(out, "**Best within the %u ms limit:** %.1f ops/s at %u VUs (p90 %.2f ms)",
                cfg->limit_ms, l->ops_per_s, l->vus, l->p90_ms);
        if (r->total_cores) fprintf(out, ", %.1f ops/s per server core", per_core(r, l->ops_per_s));
        fprintf(out, ".\n\n");
    } else {
        fprintf(out, "**No level stayed within the %u ms limit.**\n\n", cfg->limit_ms);
    }
    if (!r->nseeds) return ferror(out) ? -1 : 0;

    bests = calloc(r->nseeds, sizeof(*bests));
    if (!bests) return -1;
    nb = seed_bests(r, bests, r->nseeds);
    qsort(bests, nb, sizeof(*bests), cmp_per_core_desc);
    fprintf(out, "#### Per server core, beside the published figures (`%s.csv`)\n\n",
            cfg->api->seed_api);
    fprintf(out,
            "| deployment | server cores | ops/s within the limit | latency | ops/s per core |\n"
            "|---|---:|---:|---|---:|\n");
    if (best >= 0) {
        char cores[32] = "n/a", pc[32] = "n/a";

        if (r->total_cores) {
            snprintf(cores, sizeof(cores), "%u", r->total_cores);
            snprintf(pc, sizeof(pc), "%.1f", per_core(r, r->levels[best].ops_per_s));
        }
        fprintf(out, "| **Holdfast: %s** | %s | %.1f | p90 %.2f ms | **%s** |\n", r->label, cores,
                r->levels[best].ops_per_s, r->levels[best].p90_ms, pc);
    }
    for (i = 0; i < nb; i++) {
        const struct hf_seed_row *s = bests[i];
        char title[320], lat[64];

        if (!s->cpus) {
            unknown++;
            continue;
        }
        seed_title(s, title, sizeof(title));
        if (s->latency_ms < 0)
            snprintf(lat, sizeof(lat), "< %.0f ms (p90 not published)", s->threshold_ms);
        else
            snprintf(lat, sizeof(lat), "%s %.2f ms", s->latency_stat, s->latency_ms);
        fprintf(out, "| %s | %u | %.2f | %s | %.1f |\n", title, s->nodes * s->cpus, s->ops_per_s,
                lat, seed_per_core(s));
    }
    fprintf(out, "\n");
    if (unknown)
        fprintf(out,
                "%zu more published deployment(s) give no CPU count, so they cannot be set "
                "per core (`%s.csv` has them).\n\n",
                unknown, cfg->api->seed_api);
    free(bests);
    return ferror(out) ? -1 : 0;
}

/* ---- Plot --------------------------------------------------------------------------------------
 */

/* A gnuplot double-quoted string. */
static void gp_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static int cmp_series_desc(const void *a, const void *b)
{
    return cmp_per_core_desc(a, b);
}

int hf_report_plot(const char *prefix, const struct hf_report *r, char *err, size_t errlen)
{
    const struct hf_load_config *cfg = r->cfg;
    const struct hf_seed_row **bests = NULL;
    char path[4096], cmd[4200];
    FILE *f = NULL;
    size_t i, j, nb = 0, nplot = 0;
    int rc = -1, status;

    if (!r->total_cores) {
        fail(err, errlen, "--plot needs the server's core count: --server-cores N");
        return -1;
    }
    /* Our series. */
    snprintf(path, sizeof(path), "%s.dat", prefix);
    f = fopen(path, "w");
    if (!f) goto io;
    fprintf(f, "# vus ops_per_s ops_per_s_per_core p90_ms\n");
    for (i = 0; i < r->nlevels; i++)
        if (r->levels[i].steady_ops)
            fprintf(f, "%u %.2f %.3f %.3f\n", r->levels[i].vus, r->levels[i].ops_per_s,
                    per_core(r, r->levels[i].ops_per_s), r->levels[i].p90_ms);
    if (fclose(f) != 0) {
        f = NULL;
        goto io;
    }
    f = NULL;

    /* The published series with known cores, best first: one gnuplot data block each. */
    if (r->nseeds) {
        bests = calloc(r->nseeds, sizeof(*bests));
        if (!bests) goto oom;
        nb = seed_bests(r, bests, r->nseeds);
        for (i = j = 0; i < nb; i++)
            if (bests[i]->cpus) bests[j++] = bests[i];
        nb = j;
        qsort(bests, nb, sizeof(*bests), cmp_series_desc);
        nplot = nb < SEED_SERIES_MAX ? nb : SEED_SERIES_MAX;
    }
    snprintf(path, sizeof(path), "%s-seeds.dat", prefix);
    f = fopen(path, "w");
    if (!f) goto io;
    fprintf(f, "# ops_per_s_per_core latency_ms (one block per published series)\n");
    for (i = 0; i < nplot; i++) {
        const struct hf_seed_row *b = bests[i];
        for (j = 0; j < r->nseeds; j++) {
            const struct hf_seed_row *s = &r->seeds[j];
            if (!same_series(s, b)) continue;
            /* XKS publishes only "the most under the limit": drawn on the limit line. */
            fprintf(f, "%.3f %.3f\n", seed_per_core(s),
                    s->latency_ms < 0 ? s->threshold_ms : s->latency_ms);
        }
        fprintf(f, "\n\n");
    }
    if (fclose(f) != 0) {
        f = NULL;
        goto io;
    }
    f = NULL;

    snprintf(path, sizeof(path), "%s.gp", prefix);
    f = fopen(path, "w");
    if (!f) goto io;
    fprintf(f, "# Made by hf-load; run `gnuplot %s.gp` to redraw.\n", prefix);
    fprintf(f, "set grid\nset key outside below left Left reverse\n");
    fprintf(f, "set logscale y\nset xrange [0:*]\n");
    fprintf(f, "set xlabel \"operations per second per server CPU core (normalised: ops/s / "
               "(nodes x cores))\"\n");
    fprintf(f, "set ylabel \"p90 latency, ms (log scale)\"\n");
    fprintf(f, "set title ");
    {
        char title[512];
        snprintf(title, sizeof(title),
                 "%s: p90 latency against throughput per server core "
                 "(limit %u ms)",
                 cfg->api->title, cfg->limit_ms);
        gp_string(f, title);
    }
    fprintf(f, "\nlimit = %u\n", cfg->limit_ms);
    /* An arrow spans the whole x range; a function would stop at the last data point. */
    fprintf(f, "set arrow 1 from graph 0, first limit to graph 1, first limit nohead dt 2 lw 2 "
               "lc rgb \"#c00000\"\n");
    fprintf(f,
            "do for [t in \"svg png\"] {\n"
            "  if (t eq \"svg\") { set terminal svg size 1100,760 dynamic noenhanced background "
            "\"white\" font \"sans,12\"; set output \"%s.svg\" }\n"
            "  else { set terminal pngcairo size 1100,760 noenhanced background \"white\" font "
            "\"sans,10\"; set output \"%s.png\" }\n",
            prefix, prefix);
    fprintf(f, "  plot NaN with lines dt 2 lw 2 lc rgb \"#c00000\" title ");
    {
        char t[128];
        snprintf(t, sizeof(t), "%s limit: %u ms", cfg->api->seed_api ? cfg->api->seed_api : "API",
                 cfg->limit_ms);
        gp_string(f, t);
    }
    fprintf(f,
            ", \\\n    \"%s.dat\" using 3:4 with linespoints lw 3 pt 7 ps 1.3 lc rgb "
            "\"#1f5fbf\" title ",
            prefix);
    {
        char t[512];
        snprintf(t, sizeof(t), "Holdfast: %s, %u core(s)%s; labels = VUs", r->label, r->total_cores,
                 r->loopback ? ", shared with the load client" : "");
        gp_string(f, t);
    }
    fprintf(f, ", \\\n    \"%s.dat\" using 3:4:1 with labels offset 0,1 notitle", prefix);
    for (i = 0; i < nplot; i++) {
        char t[256];
        bool single = bests[i]->latency_ms < 0;

        seed_title(bests[i], t, sizeof(t));
        if (single) {
            size_t n = strlen(t);
            snprintf(t + n, sizeof(t) - n, ": most ops/s under %.0f ms (latency not published)",
                     bests[i]->threshold_ms);
        }
        fprintf(f, ", \\\n    \"%s-seeds.dat\" index %zu using 1:2 with %s lc rgb \"%s\" title ",
                prefix, i, single ? "points pt 11 ps 2.2" : "linespoints pt 5 dt 3",
                seed_colours[i % SEED_SERIES_MAX]);
        gp_string(f, t);
    }
    fprintf(f, "\n}\n");
    if (fclose(f) != 0) {
        f = NULL;
        goto io;
    }
    f = NULL;

    snprintf(cmd, sizeof(cmd), "gnuplot '%s.gp'", prefix);
    if (strchr(prefix, '\'')) {
        fail(err, errlen, "--plot '%s': no quotes in the prefix, please", prefix);
        goto done;
    }
    status = system(cmd);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fail(err, errlen, "gnuplot failed on %s.gp (%s)", prefix,
             WIFEXITED(status) && WEXITSTATUS(status) == 127
                 ? "gnuplot is not installed: apt-get install gnuplot-nox"
                 : "see its message above");
        goto done;
    }
    rc = 0;
    goto done;
oom:
    fail(err, errlen, "out of memory");
    goto done;
io:
    fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
done:
    if (f) fclose(f);
    free(bests);
    return rc;
}
