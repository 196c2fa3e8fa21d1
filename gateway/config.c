/* holdfastd's config file through libinih. libinih does not tell the handler the line number
 * (INI_HANDLER_LINENO is off in distribution builds), so our reader counts lines, as the core's
 * config reader does. Relative paths are taken from the config file's directory, so the daemon
 * reads the same files whatever its working directory (systemd starts it in /). */
#include "hf-build.h"

#include "gateway/config.h"
#include "gateway/conf-value.h"
#include "gateway/config-internal.h"
#include "gateway/log.h"
#include "gateway/plugin.h"

#include "pkcs11/common/secret-file.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>
#include <openssl/crypto.h>

#define DEFAULT_MODULE HF_P11MODULEDIR "/holdfast-pkcs11.so"

void hf_gw_cfg_fail(struct hf_gw_parse *ctx, const char *fmt, ...)
{
    va_list ap;

    if (ctx->failed) return; /* the first error is the one to fix first */
    ctx->failed = true;
    ctx->err_line = ctx->line; /* 0 for what only the whole file shows */
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof(ctx->err), fmt, ap);
    va_end(ap);
}

/* libinih's reader: one line (or up to num - 1 bytes of one) per call. */
static char *reader(char *str, int num, void *stream)
{
    struct hf_gw_parse *ctx = stream;
    size_t n = 0, max = num > 1 ? (size_t)num - 1 : 0;

    if (ctx->pos >= ctx->len) return NULL;
    if (ctx->line_done) ctx->line++;
    while (n < max && ctx->pos < ctx->len) {
        char c = ctx->text[ctx->pos++];
        str[n++] = c == '\0' ? ' ' : c;
        if (c == '\n') break;
    }
    str[n] = '\0';
    ctx->line_done = n > 0 && str[n - 1] == '\n';
    /* libinih would take the rest of an over-long line as a line of its own. */
    if (!ctx->line_done && ctx->pos < ctx->len) {
        hf_gw_cfg_fail(ctx, "line too long (at most %d characters)", num - 2);
        while (ctx->pos < ctx->len && ctx->text[ctx->pos] != '\n')
            ctx->pos++;
    }
    return str;
}

/* The shared parsers (plugin.h); the gateway's keys keep their own messages, which name the key
 * and the range in the file's own terms. */
bool hf_gw_cfg_bool(const char *v, bool *out)
{
    return hf_conf_bool(v, out, NULL, 0);
}

static bool parse_ulong(const char *v, unsigned long min, unsigned long max, unsigned long *out)
{
    uint64_t n;

    if (!hf_conf_uint(v, min, max, &n, NULL, 0)) return false;
    *out = (unsigned long)n;
    return true;
}

/* A size with an optional k/m suffix (KiB, MiB). */
static bool parse_size(const char *v, size_t min, size_t max, size_t *out)
{
    uint64_t n;

    if (!hf_conf_size(v, min, max, &n, NULL, 0)) return false;
    *out = (size_t)n;
    return true;
}

static char *path_resolve(struct hf_gw_parse *ctx, const char *v)
{
    char *out = hf_gw_conf_path_in(ctx->dir, v);

    if (!out) ctx->oom = true;
    return out;
}

bool hf_gw_cfg_str_set(struct hf_gw_parse *ctx, char **field, const char *v, bool is_path)
{
    char *copy = is_path ? path_resolve(ctx, v) : strdup(v);

    if (!copy) {
        ctx->oom = true;
        return false;
    }
    free(*field);
    *field = copy;
    return true;
}

/* Appends one element of size elem to *arr (n elements). */
void *hf_gw_cfg_push(struct hf_gw_parse *ctx, void **arr, size_t *n, size_t elem)
{
    char *grown;

    if (*n >= SIZE_MAX / elem - 1 || !(grown = realloc(*arr, (*n + 1) * elem))) {
        ctx->oom = true;
        return NULL;
    }
    *arr = grown;
    memset(grown + *n * elem, 0, elem);
    return grown + (*n)++ * elem;
}

bool hf_gw_cfg_strings_push(struct hf_gw_parse *ctx, char ***arr, size_t *n, const char *v)
{
    char **slot = hf_gw_cfg_push(ctx, (void **)arr, n, sizeof(char *));

    if (!slot) return false;
    if (!(*slot = strdup(v))) {
        (*n)--;
        ctx->oom = true;
        return false;
    }
    return true;
}

/* Plain HTTP carries decrypt answers, which are plaintext keys: without TLS only loopback
 * (a local balancer or sidecar terminating TLS) is safe, anything else must say "insecure". */
bool hf_gw_cfg_host_is_loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "localhost") == 0;
}

bool hf_gw_cfg_plain_is_allowed(struct hf_gw_parse *ctx, const char *host, bool insecure)
{
    if (insecure || hf_gw_cfg_host_is_loopback(host)) return true;
    hf_gw_cfg_fail(ctx,
                   "listen: plain HTTP on %s, which is not loopback: decrypt answers carry "
                   "plaintext keys; add \"tls\", or \"insecure\" if the network is trusted",
                   host[0] ? host : "every address");
    return false;
}

bool hf_gw_cfg_address_parse(struct hf_gw_parse *ctx, const char *v, char **host, char **port)
{
    char buf[256], *colon, *h = buf;
    unsigned long n;

    if (strlen(v) >= sizeof(buf)) goto bad;
    memcpy(buf, v, strlen(v) + 1);
    if (!(colon = strrchr(buf, ':'))) goto bad;
    *colon = '\0';
    if (!parse_ulong(colon + 1, 1, 65535, &n)) goto bad;
    if (h[0] == '[') {
        size_t hl = strlen(h);
        if (hl < 3 || h[hl - 1] != ']') goto bad;
        h[hl - 1] = '\0';
        h++;
    } else if (strchr(h, ':')) {
        goto bad; /* an IPv6 address needs brackets */
    }
    if (strcmp(h, "*") == 0) h = "";
    *host = strdup(h);
    *port = strdup(colon + 1);
    if (!*host || !*port) ctx->oom = true;
    return !ctx->oom;
bad:
    hf_gw_cfg_fail(ctx, "listen: expected host:port [tls], e.g. 127.0.0.1:8443 tls, got \"%s\"", v);
    return false;
}

/* [gateway] "listen = host:port [tls|insecure]": a listener with [tls]'s policy serving every
 * plugin. */
static bool listen_add(struct hf_gw_parse *ctx, const char *v)
{
    char buf[256], *addr, *opt;
    struct hf_gw_listen *l;
    bool tls = false, insecure = false;

    if (strlen(v) >= sizeof(buf) || (memcpy(buf, v, strlen(v) + 1), !(addr = strtok(buf, " \t")))) {
        hf_gw_cfg_fail(ctx, "listen: expected host:port [tls], e.g. 127.0.0.1:8443 tls, got \"%s\"",
                       v);
        return false;
    }
    while ((opt = strtok(NULL, " \t"))) {
        if (strcmp(opt, "tls") == 0) {
            tls = true;
        } else if (strcmp(opt, "insecure") == 0) {
            insecure = true;
        } else {
            hf_gw_cfg_fail(ctx, "listen: unknown option \"%s\" (\"tls\" or \"insecure\")", opt);
            return false;
        }
    }
    if (!(l = hf_gw_cfg_push(ctx, (void **)&ctx->cfg->listens, &ctx->cfg->nlistens, sizeof(*l))))
        return false;
    l->line = ctx->line;
    if (!hf_gw_cfg_address_parse(ctx, addr, &l->host, &l->port)) return false;
    if (tls && insecure) {
        hf_gw_cfg_fail(ctx, "listen: \"insecure\" is for plain HTTP, not with \"tls\"");
        return false;
    }
    if (!tls && !hf_gw_cfg_plain_is_allowed(ctx, l->host, insecure)) return false;
    l->tls = tls;
    l->insecure = insecure;
    if (!(l->name = strdup(addr))) ctx->oom = true;
    return !ctx->oom;
}

bool hf_gw_cfg_name_is_valid(const char *s, size_t len)
{
    if (len == 0 || len > 64) return false;
    for (size_t i = 0; i < len; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-' ||
              s[i] == '_'))
            return false;
    return true;
}

static struct hf_gw_plugin_conf *plugin_find(struct hf_gw_config *cfg, const char *name, size_t len)
{
    for (size_t i = 0; i < cfg->nplugins; i++)
        if (strlen(cfg->plugins[i].name) == len && memcmp(cfg->plugins[i].name, name, len) == 0)
            return &cfg->plugins[i];
    return NULL;
}

static struct hf_gw_plugin_conf *plugin_add(struct hf_gw_parse *ctx, const char *name, size_t len)
{
    struct hf_gw_plugin_conf *p = plugin_find(ctx->cfg, name, len);

    if (p) return p;
    if (!hf_gw_cfg_name_is_valid(name, len)) {
        hf_gw_cfg_fail(ctx, "bad plugin name \"%.*s\" (a-z, 0-9, '-', '_')", (int)len, name);
        return NULL;
    }
    if (!(p = hf_gw_cfg_push(ctx, (void **)&ctx->cfg->plugins, &ctx->cfg->nplugins, sizeof(*p))))
        return NULL;
    p->line = ctx->line;
    if (!(p->name = strndup(name, len))) ctx->oom = true;
    return p->name ? p : NULL;
}

/* "a, b c": names separated by commas or blanks. */
static bool plugins_list(struct hf_gw_parse *ctx, const char *v)
{
    const char *p = v;

    while (*p) {
        size_t n;
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        n = strcspn(p, ", \t");
        if (n == 0) break;
        if (!plugin_add(ctx, p, n)) return false;
        p += n;
    }
    return true;
}

static bool gateway_key(struct hf_gw_parse *ctx, const char *name, const char *v)
{
    struct hf_gw_config *cfg = ctx->cfg;
    unsigned long n;

    if (strcmp(name, "listen") == 0) return listen_add(ctx, v);
    if (strcmp(name, "threads") == 0) {
        if (!parse_ulong(v, 0, 256, &n)) goto bad_number;
        cfg->threads = (unsigned)n;
        return true;
    }
    if (strcmp(name, "max_body") == 0) {
        if (!parse_size(v, 1024, 64 * 1024 * 1024, &cfg->max_body)) {
            hf_gw_cfg_fail(ctx, "max_body: a size from 1k to 64m, got \"%s\"", v);
            return false;
        }
        return true;
    }
    if (strcmp(name, "max_connections") == 0) {
        if (!parse_ulong(v, 1, 1000000, &n)) goto bad_number;
        cfg->max_connections = (unsigned)n;
        return true;
    }
    if (strcmp(name, "connection_timeout") == 0) {
        if (!parse_ulong(v, 1, 86400, &n)) goto bad_number;
        cfg->connection_timeout = (unsigned)n;
        return true;
    }
    if (strcmp(name, "max_connections_per_address") == 0) {
        if (!parse_ulong(v, 0, 1000000, &n)) goto bad_number;
        cfg->max_per_address = (unsigned)n;
        return true;
    }
    if (strcmp(name, "header_timeout") == 0) {
        if (!parse_ulong(v, 1, 3600, &n)) goto bad_number;
        cfg->header_timeout = (unsigned)n;
        return true;
    }
    if (strcmp(name, "body_min_rate") == 0) {
        if (!parse_size(v, 0, 64 * 1024 * 1024, &cfg->body_min_rate)) {
            hf_gw_cfg_fail(ctx, "body_min_rate: bytes per second from 0 (off) to 64m, got \"%s\"",
                           v);
            return false;
        }
        return true;
    }
    if (strcmp(name, "drain_ms") == 0) {
        if (!parse_ulong(v, 0, 600000, &n)) goto bad_number;
        cfg->drain_ms = (unsigned)n;
        return true;
    }
    if (strcmp(name, "module") == 0) return hf_gw_cfg_str_set(ctx, &cfg->module, v, true);
    if (strcmp(name, "token") == 0) return hf_gw_cfg_str_set(ctx, &cfg->token_label, v, false);
    if (strcmp(name, "pin") == 0) {
        if (cfg->pin) OPENSSL_clear_free(cfg->pin, strlen(cfg->pin));
        cfg->pin = NULL;
        return hf_gw_cfg_str_set(ctx, &cfg->pin, v, false);
    }
    if (strcmp(name, "pin_file") == 0) return hf_gw_cfg_str_set(ctx, &cfg->pin_file, v, true);
    if (strcmp(name, "plugin_dir") == 0) return hf_gw_cfg_str_set(ctx, &cfg->plugin_dir, v, true);
    if (strcmp(name, "plugins") == 0) return plugins_list(ctx, v);
    if (strcmp(name, "log") == 0)
        return hf_gw_cfg_str_set(ctx, &cfg->log_path, v,
                                 strcmp(v, "-") != 0 && strcmp(v, "stderr") != 0);
    if (strcmp(name, "pidfile") == 0) return hf_gw_cfg_str_set(ctx, &cfg->pidfile, v, true);
    hf_gw_cfg_fail(ctx, "unknown key \"%s\" in [gateway]", name);
    return false;
bad_number:
    hf_gw_cfg_fail(ctx, "%s: not a number in range: \"%s\"", name, v);
    return false;
}

bool hf_gw_cfg_tls_field(struct hf_gw_parse *ctx, struct hf_gw_tls_conf *t, const char *name,
                         const char *v, bool *known)
{
    *known = true;
    if (strcmp(name, "cert") == 0) return hf_gw_cfg_str_set(ctx, &t->cert, v, true);
    if (strcmp(name, "key") == 0) return hf_gw_cfg_str_set(ctx, &t->key, v, true);
    if (strcmp(name, "client_ca") == 0) return hf_gw_cfg_str_set(ctx, &t->client_ca, v, true);
    if (strcmp(name, "priority") == 0) return hf_gw_cfg_str_set(ctx, &t->priority, v, false);
    if (strcmp(name, "client_subject") == 0)
        return hf_gw_cfg_strings_push(ctx, &t->subjects, &t->nsubjects, v);
    if (strcmp(name, "client_san") == 0) return hf_gw_cfg_strings_push(ctx, &t->sans, &t->nsans, v);
    *known = false;
    return false;
}

static bool tls_key(struct hf_gw_parse *ctx, const char *name, const char *v)
{
    bool known, ok = hf_gw_cfg_tls_field(ctx, &ctx->cfg->tls, name, v, &known);

    if (!known) hf_gw_cfg_fail(ctx, "unknown key \"%s\" in [tls]", name);
    return ok;
}

static bool audit_key(struct hf_gw_parse *ctx, const char *name, const char *v)
{
    struct hf_gw_config *cfg = ctx->cfg;
    struct hf_gw_api_flag *f;
    bool on;

    unsigned long n;

    if (strcmp(name, "preauth_interval_ms") == 0 || strcmp(name, "preauth_sources") == 0) {
        bool interval = name[8] == 'i';
        if (!parse_ulong(v, interval ? 100 : 16, interval ? 3600000 : 1000000, &n)) {
            hf_gw_cfg_fail(ctx, "%s: not a number in range (%s): \"%s\"", name,
                           interval ? "100 to 3600000" : "16 to 1000000", v);
            return false;
        }
        *(interval ? &cfg->preauth_interval_ms : &cfg->preauth_sources) = (unsigned)n;
        return true;
    }
    if (strncmp(name, "success_events", 14) != 0 || (name[14] != '\0' && name[14] != '.')) {
        hf_gw_cfg_fail(ctx, "unknown key \"%s\" in [audit]", name);
        return false;
    }
    if (!hf_gw_cfg_bool(v, &on)) {
        hf_gw_cfg_fail(ctx, "%s: expected yes or no, got \"%s\"", name, v);
        return false;
    }
    if (name[14] == '\0') {
        cfg->success_events = on;
        return true;
    }
    if (!hf_gw_cfg_name_is_valid(name + 15, strlen(name + 15))) {
        hf_gw_cfg_fail(ctx, "%s: bad API name", name);
        return false;
    }
    if (!(f = hf_gw_cfg_push(ctx, (void **)&cfg->success_by_api, &cfg->nsuccess_by_api,
                             sizeof(*f))))
        return false;
    f->on = on;
    if (!(f->api = strdup(name + 15))) ctx->oom = true;
    return f->api != NULL;
}

static bool plugin_section_key(struct hf_gw_parse *ctx, const char *section, const char *name,
                               const char *v)
{
    const char *pname = section + 7; /* after "plugin:" */
    struct hf_gw_plugin_conf *p;

    if (!(p = plugin_add(ctx, pname, strlen(pname)))) return false;
    if (strcmp(name, "path") == 0) {
        free(p->path);
        return (p->path = path_resolve(ctx, v)) != NULL;
    }
    hf_gw_cfg_fail(ctx, "unknown key \"%s\" in [%s] (only path)", name, section);
    return false;
}

static bool setting_keep(struct hf_gw_parse *ctx, const char *section, const char *name,
                         const char *v)
{
    struct hf_gw_config *cfg = ctx->cfg;
    struct hf_gw_setting *s;
    size_t plen = strcspn(section, ":");

    if (!hf_gw_cfg_name_is_valid(section, plen) ||
        (section[plen] == ':' && section[plen + 1] == 0)) {
        hf_gw_cfg_fail(ctx, "unknown section [%s]", section);
        return false;
    }
    if (!(s = hf_gw_cfg_push(ctx, (void **)&cfg->settings, &cfg->nsettings, sizeof(*s))))
        return false;
    s->line = ctx->line;
    s->section = strdup(section);
    s->name = strdup(name);
    s->value = strdup(v);
    if (!s->section || !s->name || !s->value) ctx->oom = true;
    return !ctx->oom;
}

bool hf_gw_config_section_is_own(const char *section)
{
    return strcmp(section, "gateway") == 0 || strcmp(section, "tls") == 0 ||
           strcmp(section, "audit") == 0 || strncmp(section, "plugin:", 7) == 0 ||
           strncmp(section, "listener:", 9) == 0;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    struct hf_gw_parse *ctx = user;
    bool ok;

    if (ctx->failed || ctx->oom) return 1; /* keep only the first error */
    if (strcmp(section, "gateway") == 0)
        ok = gateway_key(ctx, name, value);
    else if (strcmp(section, "tls") == 0)
        ok = tls_key(ctx, name, value);
    else if (strcmp(section, "audit") == 0)
        ok = audit_key(ctx, name, value);
    else if (strncmp(section, "plugin:", 7) == 0)
        ok = plugin_section_key(ctx, section, name, value);
    else if (strncmp(section, "listener:", 9) == 0)
        ok = hf_gw_cfg_listener_key(ctx, section, name, value);
    else if (section[0] == '\0') {
        hf_gw_cfg_fail(ctx, "\"%s\" outside any section", name);
        ok = false;
    } else
        ok = setting_keep(ctx, section, name, value);
    if (!ok && ctx->oom) hf_gw_cfg_fail(ctx, "out of memory");
    return ok ? 1 : 0;
}

/* What only the whole file can tell. */
static bool config_check(struct hf_gw_parse *ctx)
{
    struct hf_gw_config *cfg = ctx->cfg;
    bool any_tls = false;

    if (cfg->nlistens == 0) {
        hf_gw_cfg_fail(ctx, "no listen line in [gateway] and no [listener:NAME]");
        return false;
    }
    cfg->tls.client_cert = cfg->tls.client_ca ? HF_GW_CLIENT_CERT_REQUIRED : HF_GW_CLIENT_CERT_OFF;
    for (size_t i = 0; i < cfg->nlistens; i++)
        if (cfg->listens[i].tls && !cfg->listens[i].own_tls) {
            any_tls = true;
            if (!cfg->tls.cert || !cfg->tls.key) {
                ctx->line = cfg->listens[i].line;
                hf_gw_cfg_fail(ctx, "a tls listener needs [tls] cert and key");
                return false;
            }
        }
    if (!any_tls && (cfg->tls.client_ca || cfg->tls.nsubjects || cfg->tls.nsans)) {
        hf_gw_cfg_fail(ctx, "[tls] client checks without a tls listener");
        return false;
    }
    if ((cfg->tls.nsubjects || cfg->tls.nsans) && !cfg->tls.client_ca) {
        hf_gw_cfg_fail(ctx, "[tls] client_subject and client_san need client_ca");
        return false;
    }
    if (cfg->pin && cfg->pin_file) {
        hf_gw_cfg_fail(ctx, "[gateway] pin and pin_file are exclusive");
        return false;
    }
    return hf_gw_cfg_listeners_check(ctx);
}

static bool defaults_set(struct hf_gw_parse *ctx)
{
    struct hf_gw_config *cfg = ctx->cfg;

    if (!cfg->module && !(cfg->module = strdup(DEFAULT_MODULE))) return false;
    if (!cfg->plugin_dir && !(cfg->plugin_dir = strdup(HF_PLUGINDIR))) return false;
    return true;
}

static struct hf_gw_config *config_parse(const char *text, size_t len, const char *name,
                                         const char *dir, char *err, size_t errlen)
{
    struct hf_gw_parse ctx = {.name = name, .dir = dir, .text = text, .len = len};
    struct hf_gw_config *cfg = calloc(1, sizeof(*cfg));
    int ini_line;

    if (!cfg || !(cfg->path = strdup(name))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    cfg->max_body = HF_GW_DEFAULT_MAX_BODY;
    cfg->max_connections = HF_GW_DEFAULT_MAX_CONNECTIONS;
    cfg->connection_timeout = HF_GW_DEFAULT_CONNECTION_TIMEOUT;
    cfg->max_per_address = HF_GW_DEFAULT_MAX_PER_ADDRESS;
    cfg->header_timeout = HF_GW_DEFAULT_HEADER_TIMEOUT;
    cfg->body_min_rate = HF_GW_DEFAULT_BODY_MIN_RATE;
    cfg->drain_ms = HF_GW_DEFAULT_DRAIN_MS;
    cfg->success_events = true;
    cfg->preauth_interval_ms = HF_GW_DEFAULT_PREAUTH_INTERVAL_MS;
    cfg->preauth_sources = HF_GW_DEFAULT_PREAUTH_SOURCES;
    ctx.cfg = cfg;
    ctx.line_done = true;
    ini_line = ini_parse_stream(reader, &ctx, handler, &ctx);
    if (ini_line < 0) {
        snprintf(err, errlen, "%s: out of memory", name);
        goto fail;
    }
    /* A syntax error libinih found before any of ours (a line without '=' or ']'). */
    if (ini_line > 0 && (!ctx.failed || (unsigned)ini_line < ctx.err_line)) {
        snprintf(err, errlen, "%s:%d: syntax error (expected [section] or name = value)", name,
                 ini_line);
        goto fail;
    }
    if (!ctx.failed && !ctx.oom) {
        ctx.line = 0; /* whole-file checks name no line unless they know one */
        config_check(&ctx);
    }
    if (ctx.failed) {
        if (ctx.err_line != 0)
            snprintf(err, errlen, "%s:%u: %s", name, ctx.err_line, ctx.err);
        else
            snprintf(err, errlen, "%s: %s", name, ctx.err);
        goto fail;
    }
    if (ctx.oom || !defaults_set(&ctx)) {
        snprintf(err, errlen, "%s: out of memory", name);
        goto fail;
    }
    return cfg;
fail:
    hf_gw_config_free(cfg);
    return NULL;
}

struct hf_gw_config *hf_gw_config_parse(const char *text, size_t len, const char *name, char *err,
                                        size_t errlen)
{
    if (!text || !name) {
        snprintf(err, errlen, "no config");
        return NULL;
    }
    return config_parse(text, len, name, "", err, errlen);
}

static void secret_file_warn(const char *msg)
{
    hf_gw_log_warn("%s", msg);
}

bool hf_gw_secret_file_is_usable(int fd, const char *what, const char *path, char *err,
                                 size_t errlen)
{
    return hf_secret_file_is_usable(fd, what, path, secret_file_warn, err, errlen);
}

/* Setting names that hold a secret in any section: the gateway's own pin, and what plugins call
 * theirs (aws-xks: credential). */
static bool config_holds_secret(const struct hf_gw_config *cfg)
{
    static const char *const secret_names[] = {"pin", "credential", "secret", "password"};

    if (cfg->pin) return true;
    for (size_t i = 0; i < cfg->nsettings; i++)
        for (size_t j = 0; j < sizeof(secret_names) / sizeof(secret_names[0]); j++)
            if (strcmp(cfg->settings[i].name, secret_names[j]) == 0) return true;
    return false;
}

struct hf_gw_config *hf_gw_config_load(const char *path, char *err, size_t errlen)
{
    struct hf_gw_config *cfg = NULL;
    char *text = NULL, *dir = NULL, *slash;
    size_t len = 0, cap = 0;
    FILE *fp;

    if (!path) {
        snprintf(err, errlen, "no config file given");
        return NULL;
    }
    if (!(fp = fopen(path, "r"))) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    for (;;) {
        size_t got;
        if (len + 4096 > cap) {
            char *grown;
            if (cap > 16 * 1024 * 1024) {
                snprintf(err, errlen, "%s: too large", path);
                goto done;
            }
            cap = cap ? cap * 2 : 8192;
            if (!(grown = realloc(text, cap))) {
                snprintf(err, errlen, "out of memory");
                goto done;
            }
            text = grown;
        }
        got = fread(text + len, 1, cap - len, fp);
        len += got;
        if (got == 0) break;
    }
    if (ferror(fp)) {
        snprintf(err, errlen, "%s: read error", path);
        goto done;
    }
    if (!(dir = strdup(path))) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir ? 1 : 0] = '\0';
    else
        dir[0] = '\0';
    cfg = config_parse(text ? text : "", len, path, dir, err, errlen);
    if (cfg) {
        cfg->dir = dir; /* plugins' relative paths (hf_conf_path) start there too */
        dir = NULL;
    }
    if (cfg && config_holds_secret(cfg) &&
        !hf_gw_secret_file_is_usable(fileno(fp), "config file (it holds a PIN or credential)", path,
                                     err, errlen)) {
        hf_gw_config_free(cfg);
        cfg = NULL;
    }
done:
    fclose(fp);
    free(text);
    free(dir);
    return cfg;
}

void hf_gw_config_free(struct hf_gw_config *cfg)
{
    if (!cfg) return;
    for (size_t i = 0; i < cfg->nlistens; i++)
        hf_gw_cfg_listen_free(&cfg->listens[i]);
    free(cfg->listens);
    for (size_t i = 0; i < cfg->nplugins; i++) {
        free(cfg->plugins[i].name);
        free(cfg->plugins[i].path);
    }
    free(cfg->plugins);
    for (size_t i = 0; i < cfg->nsettings; i++) {
        free(cfg->settings[i].section);
        free(cfg->settings[i].name);
        free(cfg->settings[i].value);
    }
    free(cfg->settings);
    for (size_t i = 0; i < cfg->nsuccess_by_api; i++)
        free(cfg->success_by_api[i].api);
    free(cfg->success_by_api);
    hf_gw_cfg_tls_conf_free(&cfg->tls);
    /* A PIN is a secret: cleared before its memory goes back. */
    if (cfg->pin) OPENSSL_clear_free(cfg->pin, strlen(cfg->pin));
    free(cfg->pin_file);
    free(cfg->module);
    free(cfg->token_label);
    free(cfg->plugin_dir);
    free(cfg->log_path);
    free(cfg->pidfile);
    free(cfg->path);
    free(cfg->dir);
    free(cfg);
}

bool hf_gw_config_success_events(const struct hf_gw_config *cfg, const char *api)
{
    if (!cfg) return true;
    /* The last line naming the API wins, as for every other key. */
    for (size_t i = cfg->nsuccess_by_api; i-- > 0;)
        if (api && strcmp(cfg->success_by_api[i].api, api) == 0) return cfg->success_by_api[i].on;
    return cfg->success_events;
}
