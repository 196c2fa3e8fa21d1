/* hf-load's command line: options, durations, VU levels and the target URL. Every refusal says
 * which option is wrong and what a right value looks like. */
#include "hf-build.h"

#include "tests/load/load.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int hf_duration_parse(const char *text, uint64_t *out_us)
{
    char *end;
    double v, scale;

    if (!text || !out_us || !*text) return -1;
    if (!isdigit((unsigned char)text[0]) && text[0] != '.') return -1; /* no sign, no space */
    errno = 0;
    v = strtod(text, &end);
    if (errno != 0 || end == text || !isfinite(v) || v < 0) return -1;
    if (*end == '\0' || strcmp(end, "s") == 0)
        scale = 1e6;
    else if (strcmp(end, "ms") == 0)
        scale = 1e3;
    else if (strcmp(end, "us") == 0)
        scale = 1;
    else if (strcmp(end, "m") == 0)
        scale = 60e6;
    else if (strcmp(end, "h") == 0)
        scale = 3600e6;
    else
        return -1;
    v *= scale;
    if (v > 366.0 * 86400e6) return -1; /* a year: a typo, not a load test */
    *out_us = (uint64_t)llround(v);
    return 0;
}

/* A positive integer in [1, max]; -1 otherwise. */
static int uint_parse(const char *text, unsigned max, unsigned *out)
{
    char *end;
    unsigned long v;

    if (!text || !isdigit((unsigned char)text[0])) return -1;
    errno = 0;
    v = strtoul(text, &end, 10);
    if (errno != 0 || *end != '\0' || v == 0 || v > max) return -1;
    *out = (unsigned)v;
    return 0;
}

int hf_url_parse(const char *url, struct hf_url *out, char *err, size_t errlen)
{
    const char *p, *host, *host_end, *port = NULL, *path;
    size_t hlen, plen = 0, alen;

    memset(out, 0, sizeof(*out));
    if (!url || !*url) {
        fail(err, errlen, "--url is empty (e.g. https://127.0.0.1:8443)");
        return -1;
    }
    if (strncmp(url, "https://", 8) == 0) {
        out->tls = true;
        p = url + 8;
    } else if (strncmp(url, "http://", 7) == 0) {
        p = url + 7;
    } else {
        fail(err, errlen, "--url '%s': the scheme must be http:// or https://", url);
        return -1;
    }
    path = p + strcspn(p, "/?#");
    if (strpbrk(p, "?#")) {
        fail(err, errlen, "--url '%s': no query or fragment, please", url);
        return -1;
    }
    if (memchr(p, '@', (size_t)(path - p))) {
        fail(err, errlen, "--url '%s': no user info in the URL (use --credentials)", url);
        return -1;
    }
    alen = (size_t)(path - p);
    if (*p == '[') { /* IPv6 literal */
        host = p + 1;
        host_end = memchr(host, ']', alen);
        if (!host_end) {
            fail(err, errlen, "--url '%s': unterminated [IPv6 address]", url);
            return -1;
        }
        if (host_end + 1 < path) {
            if (host_end[1] != ':') {
                fail(err, errlen, "--url '%s': expected ':port' after ']'", url);
                return -1;
            }
            port = host_end + 2;
        }
    } else {
        host = p;
        host_end = memchr(p, ':', alen);
        if (host_end)
            port = host_end + 1;
        else
            host_end = path;
    }
    hlen = (size_t)(host_end - host);
    if (hlen == 0 || hlen >= sizeof(out->host)) {
        fail(err, errlen, "--url '%s': the host is empty or too long", url);
        return -1;
    }
    memcpy(out->host, host, hlen);
    if (port) {
        unsigned v;
        char tmp[8];

        plen = (size_t)(path - port);
        if (plen == 0 || plen >= sizeof(tmp)) goto bad_port;
        memcpy(tmp, port, plen);
        tmp[plen] = '\0';
        if (uint_parse(tmp, 65535, &v) != 0) goto bad_port;
        snprintf(out->port, sizeof(out->port), "%u", v);
    } else {
        snprintf(out->port, sizeof(out->port), "%s", out->tls ? "443" : "80");
    }
    if (alen >= sizeof(out->authority) || strlen(path) >= sizeof(out->path)) {
        fail(err, errlen, "--url '%s' is too long", url);
        return -1;
    }
    memcpy(out->authority, p, alen);
    /* A trailing slash adds nothing: the API paths are appended to this one. */
    snprintf(out->path, sizeof(out->path), "%s", path);
    plen = strlen(out->path);
    while (plen > 0 && out->path[plen - 1] == '/')
        out->path[--plen] = '\0';
    return 0;

bad_port:
    fail(err, errlen, "--url '%s': the port must be a number from 1 to 65535", url);
    return -1;
}

/* "10,20,40" into cfg->vus. */
static int vus_list_parse(const char *text, struct hf_load_config *cfg, char *err, size_t errlen)
{
    char item[32];
    const char *p = text;

    cfg->nlevels = 0;
    for (;;) {
        size_t n = strcspn(p, ",");
        unsigned v;

        if (n == 0 || n >= sizeof(item)) goto bad;
        memcpy(item, p, n);
        item[n] = '\0';
        if (uint_parse(item, HF_LOAD_MAX_VUS, &v) != 0) {
            fail(err, errlen, "--vus: '%s' is not a VU count from 1 to %u", item, HF_LOAD_MAX_VUS);
            return -1;
        }
        if (cfg->nlevels == HF_LOAD_MAX_LEVELS) {
            fail(err, errlen, "--vus: at most %u levels", HF_LOAD_MAX_LEVELS);
            return -1;
        }
        cfg->vus[cfg->nlevels++] = v;
        if (p[n] == '\0') return 0;
        p += n + 1;
    }
bad:
    fail(err, errlen, "--vus '%s': expected a comma-separated list such as 10,20,40", text);
    return -1;
}

/* "FROM:TO[:xFACTOR|:+STEP]" (default x2) into cfg->vus. */
static int sweep_parse(const char *text, struct hf_load_config *cfg, char *err, size_t errlen)
{
    char buf[64], *from_s, *to_s, *step_s;
    unsigned from, to, step = 2;
    bool multiply = true;
    uint64_t v;

    if (strlen(text) >= sizeof(buf)) goto bad;
    snprintf(buf, sizeof(buf), "%s", text);
    from_s = buf;
    to_s = strchr(from_s, ':');
    if (!to_s) goto bad;
    *to_s++ = '\0';
    step_s = strchr(to_s, ':');
    if (step_s) *step_s++ = '\0';
    if (uint_parse(from_s, HF_LOAD_MAX_VUS, &from) != 0 ||
        uint_parse(to_s, HF_LOAD_MAX_VUS, &to) != 0) {
        fail(err, errlen, "--sweep '%s': FROM and TO must be VU counts from 1 to %u", text,
             HF_LOAD_MAX_VUS);
        return -1;
    }
    if (to < from) {
        fail(err, errlen, "--sweep '%s': TO (%u) is below FROM (%u)", text, to, from);
        return -1;
    }
    if (step_s) {
        if (step_s[0] == 'x' || step_s[0] == '*')
            multiply = true;
        else if (step_s[0] == '+')
            multiply = false;
        else
            goto bad;
        if (uint_parse(step_s + 1, HF_LOAD_MAX_VUS, &step) != 0 || (multiply && step < 2)) {
            fail(err, errlen, "--sweep '%s': the step must be x2 or more, or +1 or more", text);
            return -1;
        }
    }
    cfg->nlevels = 0;
    for (v = from; v <= to; v = multiply ? v * step : v + step) {
        if (cfg->nlevels == HF_LOAD_MAX_LEVELS) {
            fail(err, errlen, "--sweep '%s': more than %u levels; use a bigger step", text,
                 HF_LOAD_MAX_LEVELS);
            return -1;
        }
        cfg->vus[cfg->nlevels++] = (unsigned)v;
    }
    /* End on TO itself, so "10:100:x2" also measures 100. */
    if (cfg->vus[cfg->nlevels - 1] != to) {
        if (cfg->nlevels == HF_LOAD_MAX_LEVELS) {
            fail(err, errlen, "--sweep '%s': more than %u levels", text, HF_LOAD_MAX_LEVELS);
            return -1;
        }
        cfg->vus[cfg->nlevels++] = to;
    }
    cfg->stop_at_limit = true;
    return 0;
bad:
    fail(err, errlen, "--sweep '%s': expected FROM:TO[:xFACTOR|:+STEP], e.g. 10:640:x2", text);
    return -1;
}

static int duration_opt(const char *name, const char *text, bool zero_ok, uint64_t *out, char *err,
                        size_t errlen)
{
    if (hf_duration_parse(text, out) != 0) {
        fail(err, errlen, "--%s '%s': expected a duration such as 5s, 500ms or 1m", name, text);
        return -1;
    }
    if (!zero_ok && *out == 0) {
        fail(err, errlen, "--%s must be more than 0", name);
        return -1;
    }
    return 0;
}

void hf_load_usage(FILE *out)
{
    size_t i;

    fprintf(out,
            "Usage: hf-load --url URL --api API (--vus N[,N...] | --sweep FROM:TO[:xF|:+S]) "
            "[options]\n"
            "Repeats the published HYOK performance tests (closed-loop k6 virtual users) against\n"
            "a Holdfast deployment: one reading per VU level, ramp-up, steady, ramp-down.\n"
            "\n"
            "Target:\n"
            "  --url URL             http[s]://host[:port][/path]; the API's paths go after path\n"
            "  --api API             the request to send (below)\n"
            "  --cacert FILE         trust this CA for https (default: the system store)\n"
            "  --insecure            do not verify the server certificate\n"
            "  --cert FILE           client certificate (PEM) for mutual TLS (SAP)\n"
            "  --key FILE            its private key (PEM; default: in the --cert file)\n"
            "  --timeout D           give up on a request after D (default 10s)\n"
            "  --retries N           send a request again, on a new connection, when its\n"
            "                        connection ended before any byte of its reply, up to N\n"
            "                        times (as SDKs retry a reset); counted apart (default 0)\n"
            "Load:\n"
            "  --vus LIST            VU levels, e.g. 10,20,40 (all are run)\n"
            "  --sweep FROM:TO[:xF|:+S]  levels FROM, FROM*F (or +S)... TO; stops after the\n"
            "                        first level whose p90 passes the limit\n"
            "  --ramp-up D           default 5s      --steady D   default 30s\n"
            "  --ramp-down D         default 5s      --pause D    between levels, default 2s\n"
            "  --think D[:D2]        pause after each operation (uniform in D..D2); default 0\n"
            "  --intervals T1,T2...  also report each level cut at T1, T2... from its start\n"
            "                        (ops, errors, p50, p99, max per slice; up to 7 cuts)\n"
            "  --threads N           client threads (default: one per CPU)\n"
            "  --limit MS            latency limit for p90 (default: the API's)\n"
            "API parameters:\n"
            "  --prefix P            XKS: the key store's URI prefix (no slashes around it); EKM:\n"
            "                        the endpoint's prefix; CSE: the KACLS prefix (cse); OCI,\n"
            "                        SAP: the root before /vaults, /keystores (default\n"
            "                        Thales'); DKE: the path before the key name\n"
            "  --key-id ID           XKS: the external key id; EKM: the keyPath (v0/keys/k1);\n"
            "                        OCI, SAP: the key's UUID; DKE: the key name\n"
            "  --credentials AKID:SECRET  XKS SigV4 pair (or the HF_LOAD_CREDENTIALS variable,\n"
            "                        which keeps the secret out of the process list)\n"
            "  --region R            XKS: SigV4 region (default us-east-1)\n"
            "  --token-key FILE      EKM, CSE, OCI, DKE: private key (PEM) hf-load signs its\n"
            "                        token with (CSE: the authentication token)\n"
            "  --token-kid KID       EKM, CSE, OCI, DKE: the token's kid (its id in the\n"
            "                        gateway's JWKS)\n"
            "  --audience AUD        EKM, CSE: the token's aud (default https://ekm.test; CSE:\n"
            "                        hf-load, the client id; OCI: https://HOST/; DKE:\n"
            "                        https://HOST, both the --url's)\n"
            "  --email EMAIL         EKM: the token's email (the key's allowed service agent);\n"
            "                        CSE: the user, in both tokens; DKE: the reader\n"
            "  --issuer ISS          CSE: the authentication token's iss (default\n"
            "                        https://idp.hf-load.test); OCI, DKE: the token's iss\n"
            "  --kacls-url URL       CSE: the authorization token's kacls_url (default: --url\n"
            "                        and --prefix, as the prefix's kacls_url must read)\n"
            "  --authz-key FILE      CSE: the key signing the authorization token (default\n"
            "  --authz-kid KID       --token-key and --token-kid)\n"
            "  --vault-id ID         OCI: the vault (vaultId) the key is linked in\n"
            "  --keystore-id ID      SAP: the keystore (keystore_id) the key is linked in\n"
            "  --tenant ID           SAP: request_metadata.sap_tenant_id (the keystore's tenant)\n"
            "  --print-jwks          print the JWKS of --token-key (and --authz-key) for the\n"
            "                        gateway's config, then exit (no --url, --api or VUs)\n"
            "Output (the table always goes to standard output):\n"
            "  --csv FILE            rows in the seeds' columns plus hf-load's own ('-': stdout)\n"
            "  --ids FILE            XKS: the kmsRequestId of every accepted reply, one a line\n"
            "  --markdown FILE       the table and the per-core comparison with the seeds\n"
            "  --plot PREFIX         PREFIX.svg and PREFIX.png: p90 against ops/s per core,\n"
            "                        with the limit and the seeds' series (needs gnuplot)\n"
            "  --seeds DIR           the seeds CSVs (default $HF_LOAD_SEEDS)\n"
            "  --label TEXT          names this deployment in CSV and plots\n"
            "  --server-cores N      CPU cores of the server, for per-core figures (default:\n"
            "                        this machine's when the target is loopback)\n"
            "  --server-nodes N      gateway nodes behind the URL (default 1)\n"
            "  --progress / --no-progress   live progress line (default: on a terminal)\n"
            "  --quiet               only the table\n"
            "  --help\n"
            "\n"
            "APIs:\n");
    for (i = 0; hf_load_apis[i]; i++)
        fprintf(out, "  %-14s %s (limit %u ms)\n", hf_load_apis[i]->name, hf_load_apis[i]->title,
                hf_load_apis[i]->limit_ms);
    fprintf(out, "\nExit status: 0 done; 1 the target failed (unreachable, TLS, refused requests);"
                 "\n2 bad arguments; 130 interrupted (the levels finished before are printed).\n");
}

enum {
    OPT_URL = 256,
    OPT_API,
    OPT_VUS,
    OPT_SWEEP,
    OPT_RAMP_UP,
    OPT_STEADY,
    OPT_RAMP_DOWN,
    OPT_THINK,
    OPT_INTERVALS,
    OPT_TIMEOUT,
    OPT_PAUSE,
    OPT_THREADS,
    OPT_LIMIT,
    OPT_CSV,
    OPT_IDS,
    OPT_RETRIES,
    OPT_MARKDOWN,
    OPT_PLOT,
    OPT_SEEDS,
    OPT_LABEL,
    OPT_SERVER_CORES,
    OPT_SERVER_NODES,
    OPT_PROGRESS,
    OPT_NO_PROGRESS,
    OPT_QUIET,
    OPT_CACERT,
    OPT_INSECURE,
    OPT_PREFIX,
    OPT_KEY_ID,
    OPT_CREDENTIALS,
    OPT_REGION,
    OPT_TOKEN_KEY,
    OPT_TOKEN_KID,
    OPT_AUDIENCE,
    OPT_EMAIL,
    OPT_ISSUER,
    OPT_KACLS_URL,
    OPT_AUTHZ_KEY,
    OPT_AUTHZ_KID,
    OPT_PRINT_JWKS,
    OPT_CERT,
    OPT_KEY,
    OPT_VAULT_ID,
    OPT_KEYSTORE_ID,
    OPT_TENANT,
    OPT_HELP,
};

static const struct option long_options[] = {
    {"url", required_argument, NULL, OPT_URL},
    {"api", required_argument, NULL, OPT_API},
    {"vus", required_argument, NULL, OPT_VUS},
    {"sweep", required_argument, NULL, OPT_SWEEP},
    {"ramp-up", required_argument, NULL, OPT_RAMP_UP},
    {"steady", required_argument, NULL, OPT_STEADY},
    {"ramp-down", required_argument, NULL, OPT_RAMP_DOWN},
    {"think", required_argument, NULL, OPT_THINK},
    {"intervals", required_argument, NULL, OPT_INTERVALS},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"pause", required_argument, NULL, OPT_PAUSE},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"csv", required_argument, NULL, OPT_CSV},
    {"ids", required_argument, NULL, OPT_IDS},
    {"retries", required_argument, NULL, OPT_RETRIES},
    {"markdown", required_argument, NULL, OPT_MARKDOWN},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"seeds", required_argument, NULL, OPT_SEEDS},
    {"label", required_argument, NULL, OPT_LABEL},
    {"server-cores", required_argument, NULL, OPT_SERVER_CORES},
    {"server-nodes", required_argument, NULL, OPT_SERVER_NODES},
    {"progress", no_argument, NULL, OPT_PROGRESS},
    {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"cacert", required_argument, NULL, OPT_CACERT},
    {"insecure", no_argument, NULL, OPT_INSECURE},
    {"prefix", required_argument, NULL, OPT_PREFIX},
    {"key-id", required_argument, NULL, OPT_KEY_ID},
    {"credentials", required_argument, NULL, OPT_CREDENTIALS},
    {"region", required_argument, NULL, OPT_REGION},
    {"token-key", required_argument, NULL, OPT_TOKEN_KEY},
    {"token-kid", required_argument, NULL, OPT_TOKEN_KID},
    {"audience", required_argument, NULL, OPT_AUDIENCE},
    {"email", required_argument, NULL, OPT_EMAIL},
    {"issuer", required_argument, NULL, OPT_ISSUER},
    {"kacls-url", required_argument, NULL, OPT_KACLS_URL},
    {"authz-key", required_argument, NULL, OPT_AUTHZ_KEY},
    {"authz-kid", required_argument, NULL, OPT_AUTHZ_KID},
    {"print-jwks", no_argument, NULL, OPT_PRINT_JWKS},
    {"cert", required_argument, NULL, OPT_CERT},
    {"key", required_argument, NULL, OPT_KEY},
    {"vault-id", required_argument, NULL, OPT_VAULT_ID},
    {"keystore-id", required_argument, NULL, OPT_KEYSTORE_ID},
    {"tenant", required_argument, NULL, OPT_TENANT},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static void config_defaults(struct hf_load_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->ramp_up_us = 5000000;
    cfg->steady_us = 30000000;
    cfg->ramp_down_us = 5000000;
    cfg->timeout_us = 10000000;
    cfg->pause_us = 2000000;
    cfg->server_nodes = 1;
    cfg->progress = -1;
    cfg->region = "us-east-1";
    cfg->seeds_dir = getenv("HF_LOAD_SEEDS");
}

enum hf_args_result hf_load_args_parse(int argc, char **argv, struct hf_load_config *cfg, char *err,
                                       size_t errlen)
{
    const char *api_name = NULL, *vus_text = NULL, *sweep_text = NULL;
    bool print_jwks = false;
    int c;

    if (!cfg || !argv) return HF_ARGS_ERROR;
    config_defaults(cfg);
    if (err && errlen) err[0] = '\0';
    opterr = 0; /* our own messages, not getopt's */
    optind = 0; /* full re-initialisation (GNU), so the tests may parse many times */
    while ((c = getopt_long(argc, argv, ":", long_options, NULL)) != -1) {
        switch (c) {
        case OPT_URL:
            cfg->url = optarg;
            break;
        case OPT_API:
            api_name = optarg;
            break;
        case OPT_VUS:
            vus_text = optarg;
            break;
        case OPT_SWEEP:
            sweep_text = optarg;
            break;
        case OPT_RAMP_UP:
            if (duration_opt("ramp-up", optarg, true, &cfg->ramp_up_us, err, errlen) != 0)
                return HF_ARGS_ERROR;
            break;
        case OPT_STEADY:
            if (duration_opt("steady", optarg, false, &cfg->steady_us, err, errlen) != 0)
                return HF_ARGS_ERROR;
            break;
        case OPT_RAMP_DOWN:
            if (duration_opt("ramp-down", optarg, true, &cfg->ramp_down_us, err, errlen) != 0)
                return HF_ARGS_ERROR;
            break;
        case OPT_TIMEOUT:
            if (duration_opt("timeout", optarg, false, &cfg->timeout_us, err, errlen) != 0)
                return HF_ARGS_ERROR;
            break;
        case OPT_PAUSE:
            if (duration_opt("pause", optarg, true, &cfg->pause_us, err, errlen) != 0)
                return HF_ARGS_ERROR;
            break;
        case OPT_THINK: {
            char buf[64], *colon;

            if (strlen(optarg) >= sizeof(buf)) {
                fail(err, errlen, "--think '%s' is too long", optarg);
                return HF_ARGS_ERROR;
            }
            snprintf(buf, sizeof(buf), "%s", optarg);
            colon = strchr(buf, ':');
            if (colon) *colon++ = '\0';
            if (duration_opt("think", buf, true, &cfg->think_min_us, err, errlen) != 0)
                return HF_ARGS_ERROR;
            cfg->think_max_us = cfg->think_min_us;
            if (colon && duration_opt("think", colon, true, &cfg->think_max_us, err, errlen) != 0)
                return HF_ARGS_ERROR;
            if (cfg->think_max_us < cfg->think_min_us) {
                fail(err, errlen, "--think '%s': the upper bound is below the lower one", optarg);
                return HF_ARGS_ERROR;
            }
            break;
        }
        case OPT_INTERVALS: {
            char buf[256], *tok, *save = NULL;

            if (strlen(optarg) >= sizeof(buf)) {
                fail(err, errlen, "--intervals '%s' is too long", optarg);
                return HF_ARGS_ERROR;
            }
            snprintf(buf, sizeof(buf), "%s", optarg);
            cfg->ninterval_ends = 0;
            for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                uint64_t t;

                if (cfg->ninterval_ends == HF_INTERVALS_MAX - 1) {
                    fail(err, errlen, "--intervals '%s': at most %d cuts", optarg,
                         HF_INTERVALS_MAX - 1);
                    return HF_ARGS_ERROR;
                }
                if (duration_opt("intervals", tok, false, &t, err, errlen) != 0)
                    return HF_ARGS_ERROR;
                if (cfg->ninterval_ends && t <= cfg->interval_ends_us[cfg->ninterval_ends - 1]) {
                    fail(err, errlen, "--intervals '%s': the cuts must increase", optarg);
                    return HF_ARGS_ERROR;
                }
                cfg->interval_ends_us[cfg->ninterval_ends++] = t;
            }
            if (cfg->ninterval_ends == 0) {
                fail(err, errlen, "--intervals '%s': expected T1[,T2...]", optarg);
                return HF_ARGS_ERROR;
            }
            break;
        }
        case OPT_THREADS:
            if (uint_parse(optarg, 1024, &cfg->threads) != 0) {
                fail(err, errlen, "--threads '%s': expected 1 to 1024", optarg);
                return HF_ARGS_ERROR;
            }
            break;
        case OPT_LIMIT:
            if (uint_parse(optarg, 3600000, &cfg->limit_ms) != 0) {
                fail(err, errlen, "--limit '%s': expected milliseconds, 1 or more", optarg);
                return HF_ARGS_ERROR;
            }
            break;
        case OPT_IDS:
            cfg->ids_path = optarg;
            break;
        case OPT_RETRIES:
            if (uint_parse(optarg, 10, &cfg->retries) != 0) {
                fail(err, errlen, "--retries '%s': expected 0 to 10", optarg);
                return HF_ARGS_ERROR;
            }
            break;
        case OPT_CSV:
            cfg->csv_path = optarg;
            break;
        case OPT_MARKDOWN:
            cfg->markdown_path = optarg;
            break;
        case OPT_PLOT:
            cfg->plot_prefix = optarg;
            break;
        case OPT_SEEDS:
            cfg->seeds_dir = optarg;
            break;
        case OPT_LABEL:
            cfg->label = optarg;
            break;
        case OPT_SERVER_CORES:
            if (uint_parse(optarg, 100000, &cfg->server_cores) != 0) {
                fail(err, errlen, "--server-cores '%s': expected a core count, 1 or more", optarg);
                return HF_ARGS_ERROR;
            }
            break;
        case OPT_SERVER_NODES:
            if (uint_parse(optarg, 10000, &cfg->server_nodes) != 0) {
                fail(err, errlen, "--server-nodes '%s': expected a node count, 1 or more", optarg);
                return HF_ARGS_ERROR;
            }
            break;
        case OPT_PROGRESS:
            cfg->progress = 1;
            break;
        case OPT_NO_PROGRESS:
            cfg->progress = 0;
            break;
        case OPT_QUIET:
            cfg->quiet = true;
            break;
        case OPT_CACERT:
            cfg->cacert = optarg;
            break;
        case OPT_INSECURE:
            cfg->insecure = true;
            break;
        case OPT_PREFIX:
            cfg->prefix = optarg;
            break;
        case OPT_KEY_ID:
            cfg->key_id = optarg;
            break;
        case OPT_CREDENTIALS:
            cfg->credentials = optarg;
            break;
        case OPT_REGION:
            cfg->region = optarg;
            break;
        case OPT_TOKEN_KEY:
            cfg->token_key = optarg;
            break;
        case OPT_TOKEN_KID:
            cfg->token_kid = optarg;
            break;
        case OPT_AUDIENCE:
            cfg->audience = optarg;
            break;
        case OPT_EMAIL:
            cfg->email = optarg;
            break;
        case OPT_ISSUER:
            cfg->issuer = optarg;
            break;
        case OPT_KACLS_URL:
            cfg->kacls_url = optarg;
            break;
        case OPT_AUTHZ_KEY:
            cfg->authz_key = optarg;
            break;
        case OPT_AUTHZ_KID:
            cfg->authz_kid = optarg;
            break;
        case OPT_PRINT_JWKS:
            print_jwks = true;
            break;
        case OPT_CERT:
            cfg->client_cert = optarg;
            break;
        case OPT_KEY:
            cfg->client_key = optarg;
            break;
        case OPT_VAULT_ID:
            cfg->vault_id = optarg;
            break;
        case OPT_KEYSTORE_ID:
            cfg->keystore_id = optarg;
            break;
        case OPT_TENANT:
            cfg->tenant = optarg;
            break;
        case OPT_HELP:
            return HF_ARGS_HELP;
        case ':':
            fail(err, errlen, "%s needs a value (see hf-load --help)", argv[optind - 1]);
            return HF_ARGS_ERROR;
        default:
            fail(err, errlen, "unknown option '%s' (see hf-load --help)", argv[optind - 1]);
            return HF_ARGS_ERROR;
        }
    }
    if (optind < argc) {
        fail(err, errlen, "unexpected argument '%s' (options start with --)", argv[optind]);
        return HF_ARGS_ERROR;
    }
    if (print_jwks) {
        if (!cfg->token_key || !cfg->token_kid ||
            (cfg->authz_key == NULL) != (cfg->authz_kid == NULL)) {
            fail(err, errlen,
                 "--print-jwks needs --token-key and --token-kid (and --authz-key "
                 "with --authz-kid)");
            return HF_ARGS_ERROR;
        }
        return HF_ARGS_JWKS;
    }
    if (!cfg->url) {
        fail(err, errlen, "--url is required, e.g. --url https://127.0.0.1:8443");
        return HF_ARGS_ERROR;
    }
    if (hf_url_parse(cfg->url, &cfg->target, err, errlen) != 0) return HF_ARGS_ERROR;
    if (!api_name) {
        fail(err, errlen, "--api is required (see hf-load --help for the list)");
        return HF_ARGS_ERROR;
    }
    cfg->api = hf_load_api_find(api_name);
    if (!cfg->api) {
        struct hf_buf names = {0};
        size_t i;

        for (i = 0; hf_load_apis[i]; i++)
            hf_buf_printf(&names, "%s%s", i ? ", " : "", hf_load_apis[i]->name);
        fail(err, errlen, "--api '%s' is unknown; known: %s", api_name,
             names.data ? names.data : "");
        hf_buf_free(&names);
        return HF_ARGS_ERROR;
    }
    if (cfg->ids_path && strncmp(cfg->api->name, "xks-", 4) != 0) {
        fail(err, errlen, "--ids: only the xks APIs carry a request id of the client's");
        return HF_ARGS_ERROR;
    }
    if (vus_text && sweep_text) {
        fail(err, errlen, "--vus and --sweep exclude each other: choose one");
        return HF_ARGS_ERROR;
    }
    if (!vus_text && !sweep_text) {
        fail(err, errlen, "say how many VUs: --vus 10,20,40 or --sweep 10:640:x2");
        return HF_ARGS_ERROR;
    }
    if (vus_text && vus_list_parse(vus_text, cfg, err, errlen) != 0) return HF_ARGS_ERROR;
    if (sweep_text && sweep_parse(sweep_text, cfg, err, errlen) != 0) return HF_ARGS_ERROR;
    if (cfg->insecure && cfg->cacert) {
        fail(err, errlen, "--insecure and --cacert exclude each other: choose one");
        return HF_ARGS_ERROR;
    }
    if ((cfg->insecure || cfg->cacert) && !cfg->target.tls) {
        fail(err, errlen, "--insecure and --cacert need an https:// URL");
        return HF_ARGS_ERROR;
    }
    if ((cfg->client_cert || cfg->client_key) && !cfg->target.tls) {
        fail(err, errlen, "--cert and --key need an https:// URL");
        return HF_ARGS_ERROR;
    }
    if (cfg->client_key && !cfg->client_cert) {
        fail(err, errlen, "--key needs --cert (the client certificate it belongs to)");
        return HF_ARGS_ERROR;
    }
    if (!cfg->credentials) cfg->credentials = getenv("HF_LOAD_CREDENTIALS");
    if (cfg->limit_ms == 0) cfg->limit_ms = cfg->api->limit_ms;
    return HF_ARGS_OK;
}
