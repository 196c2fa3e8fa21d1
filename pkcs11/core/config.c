#include "hf-build.h"

#include "config.h"
#include "log.h"
#include "pool.h"

#include "pkcs11/common/secret-file.h"

#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_STATE_DIR HF_LOCALSTATEDIR "/lib/holdfast"
#define DEFAULT_CONF HF_SYSCONFDIR "/holdfast/holdfast.conf"

enum value_type {
    V_STR,
    V_PATH,
    V_UINT,
    V_SIZE, /* uint64_t bytes: a number with an optional k, m, g or t (powers of 1024) */
    V_BOOL,
    V_PIN,
    V_PIN_FILE,
    V_PIN_ENV,
    V_SOFTHSM2_CONF
};

/* Every key the file may hold; offset locates its field in struct hf_config. */
struct config_key {
    const char *section;
    const char *name;
    enum value_type type;
    size_t offset;
    unsigned long min, max; /* V_UINT */
};

#define FIELD(f) offsetof(struct hf_config, f)

static const struct config_key config_keys[] = {
    {"holdfast", "state_dir", V_PATH, FIELD(state_dir), 0, 0},
    {"holdfast", "node", V_STR, FIELD(node), 0, 0},
    {"token", "label", V_STR, FIELD(token_label), 0, 0},
    {"token", "pin_attempts", V_UINT, FIELD(pin_attempts), 1, 1000},
    {"token", "pin_iterations", V_UINT, FIELD(pin_iterations), 1000, 10000000},
    {"store", "path", V_PATH, FIELD(store_path), 0, 0},
    {"hsm", "module", V_STR, FIELD(hsm_module), 0, 0},
    {"hsm", "token", V_STR, FIELD(hsm_token), 0, 0},
    {"hsm", "pin", V_PIN, FIELD(hsm_pin), 0, 0},
    {"hsm", "pin_file", V_PIN_FILE, FIELD(hsm_pin_file), 0, 0},
    {"hsm", "pin_env", V_PIN_ENV, FIELD(hsm_pin_env), 0, 0},
    {"hsm", "so_pin_file", V_PATH, FIELD(hsm_so_pin_file), 0, 0},
    {"hsm", "softhsm2_conf", V_SOFTHSM2_CONF, FIELD(softhsm2_conf), 0, 0},
    {"hsm", "root_kek_label", V_STR, FIELD(kek_label), 0, 0},
    {"hsm", "concurrency", V_UINT, FIELD(hsm_concurrency), 1, 1024},
    {"audit", "path", V_PATH, FIELD(audit_path), 0, 0},
    /* An hour bounds how much a crash of the machine (not the process) may lose. */
    {"audit", "sync_interval_ms", V_UINT, FIELD(audit_sync_interval_ms), 0, 3600000},
    {"audit", "success_events", V_BOOL, FIELD(audit_success_events), 0, 0},
    {"audit", "reserve", V_SIZE, FIELD(audit_reserve), 0, 0},
    {"audit", "alarm", V_SIZE, FIELD(audit_alarm), 0, 0},
    {"audit", "checkpoint_interval_ms", V_UINT, FIELD(audit_checkpoint_interval_ms), 10, 3600000},
    {"cache", "max_keys", V_UINT, FIELD(cache_max_keys), 1, 16777216},
    {"pools", "queue_max", V_UINT, FIELD(pool_queue_max), 0, 65536},
    {"pools", "queue_wait_ms", V_UINT, FIELD(pool_queue_wait_ms), 1, 600000},
    {"pools", "call_timeout_ms", V_UINT, FIELD(pool_call_timeout_ms), 1, 3600000},
};

/* Parser state. libinih's handler is not told the line number (INI_HANDLER_LINENO is a build
 * option of the library, off in distributions), so our own reader counts lines. */
struct parse_ctx {
    struct hf_config *cfg;
    FILE *fp;
    unsigned line;
    bool line_done; /* the last read ended a line */
    unsigned err_line;
    char err[200];
    const char *pin_source; /* the [hsm] pin key given, if any */
    bool softhsm2_conf_given;
};

static void ctx_fail(struct parse_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void ctx_fail(struct parse_ctx *ctx, const char *fmt, ...)
{
    va_list ap;

    if (ctx->err_line != 0) return; /* the first error is the one to fix first */
    ctx->err_line = ctx->line;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof(ctx->err), fmt, ap);
    va_end(ap);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0) return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static char *reader(char *str, int num, void *stream)
{
    struct parse_ctx *ctx = stream;
    char *got = fgets(str, num, ctx->fp);
    size_t len;

    if (got == NULL) return NULL;
    if (ctx->line_done) ctx->line++;
    len = strlen(got);
    ctx->line_done = len > 0 && got[len - 1] == '\n';
    /* libinih would take the rest of an over-long line as a line of its own. */
    if (!ctx->line_done && !feof(ctx->fp))
        ctx_fail(ctx, "line too long (at most %d characters)", num - 3);
    return got;
}

static bool parse_uint(const char *s, unsigned long min, unsigned long max, unsigned *out)
{
    char *end;
    unsigned long v;

    if (*s < '0' || *s > '9') return false; /* strtoul would accept "-1" and " 5" */
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max) return false;
    *out = (unsigned)v;
    return true;
}

static bool parse_size(const char *s, uint64_t *out)
{
    static const char units[] = "kmgt";
    char *end;
    unsigned long long v;
    const char *u;
    unsigned shift = 0;

    if (*s < '0' || *s > '9') return false;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0) return false;
    if (*end != '\0') {
        if (end[1] != '\0' || !(u = strchr(units, end[0] | 0x20))) return false;
        shift = 10 * (unsigned)(u - units + 1);
    }
    if (v > (UINT64_MAX >> shift)) return false;
    *out = (uint64_t)v << shift;
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    static const char *const words[][2] = {
        {"true", "false"}, {"yes", "no"}, {"on", "off"}, {"1", "0"}};

    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        for (int no = 0; no < 2; no++) {
            if (strcasecmp(s, words[i][no]) == 0) {
                *out = no == 0;
                return true;
            }
        }
    }
    return false;
}

static void field_set(char **field, const char *value, bool secret)
{
    if (*field != NULL) {
        if (secret) OPENSSL_cleanse(*field, strlen(*field));
        free(*field);
    }
    *field = strdup(value);
}

static void pin_source_set(struct parse_ctx *ctx, const struct config_key *k)
{
    if (ctx->pin_source != NULL && strcmp(ctx->pin_source, k->name) != 0) {
        ctx_fail(ctx, "[hsm] %s and %s are exclusive: give one PIN source", ctx->pin_source,
                 k->name);
        return;
    }
    ctx->pin_source = k->name;
    if (k->type == V_PIN)
        hf_log_warn("%s:%u: [hsm] pin puts the HSM PIN in the config file; prefer pin_file or "
                    "pin_env",
                    ctx->cfg->path, ctx->line);
}

static void key_value_set(struct parse_ctx *ctx, const struct config_key *k, const char *value)
{
    char *base = (char *)ctx->cfg;
    char **str = (char **)(base + k->offset);

    switch (k->type) {
    case V_UINT:
        if (!parse_uint(value, k->min, k->max, (unsigned *)(base + k->offset)))
            ctx_fail(ctx, "[%s] %s: '%s' is not a number from %lu to %lu", k->section, k->name,
                     value, k->min, k->max);
        return;
    case V_SIZE:
        if (!parse_size(value, (uint64_t *)(base + k->offset)))
            ctx_fail(ctx, "[%s] %s: '%s' is not a size (a number of bytes, or with k, m, g, t)",
                     k->section, k->name, value);
        return;
    case V_BOOL:
        if (!parse_bool(value, (bool *)(base + k->offset)))
            ctx_fail(ctx, "[%s] %s: '%s' is not a boolean (true/false, yes/no, on/off, 1/0)",
                     k->section, k->name, value);
        return;
    case V_PIN:
    case V_PIN_FILE:
    case V_PIN_ENV:
        pin_source_set(ctx, k);
        break;
    case V_SOFTHSM2_CONF:
        ctx->softhsm2_conf_given = true;
        break;
    case V_STR:
    case V_PATH:
        break;
    }
    if (*value == '\0' && k->type != V_SOFTHSM2_CONF) {
        ctx_fail(ctx, "[%s] %s: empty value", k->section, k->name);
        return;
    }
    field_set(str, value, k->type == V_PIN);
    if (*str == NULL) ctx_fail(ctx, "out of memory");
}

/* ---- [hsm.NAME]: more members of the root ---- */

static bool root_name_is_valid(const char *name)
{
    size_t len = strlen(name);

    if (len == 0 || len > HF_CONFIG_ROOT_NAME_MAX || strcmp(name, "hsm") == 0) return false;
    return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") == len;
}

/* The member named name, added when new. */
static struct hf_config_root_member *root_member_get(struct parse_ctx *ctx, const char *name)
{
    struct hf_config *cfg = ctx->cfg;
    struct hf_config_root_member *m;

    for (size_t i = 0; i < cfg->n_root_members; i++)
        if (strcmp(cfg->root_members[i].name, name) == 0) return &cfg->root_members[i];
    if (!root_name_is_valid(name)) {
        ctx_fail(ctx, "[hsm.%s]: a member's name is 1 to %d of a-z 0-9 -, and not \"hsm\"", name,
                 HF_CONFIG_ROOT_NAME_MAX);
        return NULL;
    }
    if (cfg->n_root_members == HF_CONFIG_ROOT_MEMBERS_MAX) {
        ctx_fail(ctx, "[hsm.%s]: at most %d members beside [hsm]", name,
                 HF_CONFIG_ROOT_MEMBERS_MAX);
        return NULL;
    }
    m = &cfg->root_members[cfg->n_root_members];
    if ((m->name = strdup(name)) == NULL) {
        ctx_fail(ctx, "out of memory");
        return NULL;
    }
    cfg->n_root_members++;
    m->concurrency = 4;
    m->line = ctx->line;
    return m;
}

/* The field of m that key names; a second PIN source, or an unknown key, fails. */
static char **root_member_field(struct parse_ctx *ctx, struct hf_config_root_member *m,
                                const char *key)
{
    char **pins[] = {&m->pin, &m->pin_file, &m->pin_env};
    const char *pin_keys[] = {"pin", "pin_file", "pin_env"};

    if (strcmp(key, "module") == 0) return &m->module;
    if (strcmp(key, "token") == 0) return &m->token;
    for (size_t i = 0; i < 3; i++) {
        if (strcmp(key, pin_keys[i]) != 0) continue;
        for (size_t j = 0; j < 3; j++)
            if (j != i && *pins[j] != NULL)
                ctx_fail(ctx, "[hsm.%s] %s and %s are exclusive: give one PIN source", m->name,
                         pin_keys[j], key);
        return ctx->err_line == 0 ? pins[i] : NULL;
    }
    ctx_fail(ctx, "unknown key '%s' in [hsm.%s]", key, m->name);
    return NULL;
}

static int root_member_key(struct parse_ctx *ctx, const char *member, const char *key,
                           const char *value)
{
    struct hf_config_root_member *m = root_member_get(ctx, member);
    char **field;

    if (m == NULL) return 0;
    if (strcmp(key, "concurrency") == 0) {
        if (!parse_uint(value, 1, 1024, &m->concurrency))
            ctx_fail(ctx, "[hsm.%s] concurrency: '%s' is not a number from 1 to 1024", member,
                     value);
        return ctx->err_line == 0;
    }
    if ((field = root_member_field(ctx, m, key)) == NULL) return 0;
    if (*value == '\0') {
        ctx_fail(ctx, "[hsm.%s] %s: empty value", member, key);
        return 0;
    }
    field_set(field, value, field == &m->pin);
    if (*field == NULL) ctx_fail(ctx, "out of memory");
    if (field == &m->pin)
        hf_log_warn("%s:%u: [hsm.%s] pin puts an HSM PIN in the config file; prefer pin_file or "
                    "pin_env",
                    ctx->cfg->path, ctx->line, member);
    return ctx->err_line == 0;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    struct parse_ctx *ctx = user;
    bool section_known = false;

    if (strncmp(section, "hsm.", 4) == 0) return root_member_key(ctx, section + 4, name, value);
    for (size_t i = 0; i < sizeof(config_keys) / sizeof(config_keys[0]); i++) {
        const struct config_key *k = &config_keys[i];

        if (strcmp(section, k->section) != 0) continue;
        section_known = true;
        if (strcmp(name, k->name) != 0) continue;
        key_value_set(ctx, k, value);
        return ctx->err_line == 0;
    }
    if (section[0] == '\0')
        ctx_fail(ctx, "key '%s' outside of any section", name);
    else if (section_known)
        ctx_fail(ctx, "unknown key '%s' in [%s]", name, section);
    else
        ctx_fail(ctx, "unknown section [%s]", section);
    return 0;
}

/* dir/rel when rel is relative; a copy of rel otherwise. */
static char *path_resolve(const char *dir, const char *rel)
{
    char *out;

    if (rel[0] == '/' || dir == NULL) return strdup(rel);
    if (asprintf(&out, "%s/%s", dir, rel) < 0) return NULL;
    return out;
}

static CK_RV path_field_resolve(char **field, const char *dir, const char *default_name)
{
    char *resolved;

    if (*field == NULL) {
        if (asprintf(&resolved, "%s/%s", dir, default_name) < 0) return CKR_HOST_MEMORY;
    } else {
        resolved = path_resolve(dir, *field);
        if (resolved == NULL) return CKR_HOST_MEMORY;
        free(*field);
    }
    *field = resolved;
    return CKR_OK;
}

/* The store locator may be a URL ("postgresql://...") or "sqlite:PATH": only a plain or sqlite
 * path is taken from state_dir. */
static CK_RV store_path_resolve(struct hf_config *cfg)
{
    char *s = cfg->store_path;
    char *out;

    if (s != NULL && strstr(s, "://") != NULL) return CKR_OK;
    if (s != NULL && strncmp(s, "sqlite:", 7) == 0 && s[7] != '/') {
        if (asprintf(&out, "sqlite:%s/%s", cfg->state_dir, s + 7) < 0) return CKR_HOST_MEMORY;
        free(cfg->store_path);
        cfg->store_path = out;
        return CKR_OK;
    }
    return path_field_resolve(&cfg->store_path, cfg->state_dir, "holdfast.db");
}

static bool module_is_softhsm(const char *module)
{
    const char *slash = strrchr(module, '/');

    return strstr(slash ? slash + 1 : module, "softhsm") != NULL;
}

static CK_RV str_default(char **field, const char *value)
{
    if (*field != NULL) return CKR_OK;
    *field = strdup(value);
    return *field ? CKR_OK : CKR_HOST_MEMORY;
}

static CK_RV node_default(struct hf_config *cfg)
{
    char host[256] = "";

    if (cfg->node != NULL) return CKR_OK;
    if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') strcpy(host, "localhost");
    return str_default(&cfg->node, host);
}

/* Fills what the file left out and takes relative paths from state_dir. base_dir: where a
 * relative state_dir lives (the config file's directory), or NULL to keep it as given. */
static CK_RV config_complete(struct hf_config *cfg, const struct parse_ctx *ctx,
                             const char *base_dir)
{
    const char *env = getenv("HOLDFAST_STATE_DIR");
    bool softhsm;
    CK_RV rv;

    if (cfg->state_dir == NULL)
        cfg->state_dir = strdup(env != NULL && env[0] != '\0' ? env : DEFAULT_STATE_DIR);
    else if (cfg->state_dir[0] != '/' && base_dir != NULL) {
        char *abs = path_resolve(base_dir, cfg->state_dir);
        free(cfg->state_dir);
        cfg->state_dir = abs;
    }
    if (cfg->state_dir == NULL) return CKR_HOST_MEMORY;

    softhsm = cfg->hsm_module == NULL || module_is_softhsm(cfg->hsm_module);
    if ((rv = node_default(cfg)) != CKR_OK ||
        (rv = str_default(&cfg->token_label, "holdfast")) != CKR_OK ||
        (rv = str_default(&cfg->hsm_module, HF_SOFTHSM_MODULE)) != CKR_OK ||
        (rv = str_default(&cfg->hsm_token, "holdfast")) != CKR_OK ||
        (rv = str_default(&cfg->kek_label, "holdfast-root-kek")) != CKR_OK ||
        (rv = store_path_resolve(cfg)) != CKR_OK ||
        (rv = path_field_resolve(&cfg->hsm_so_pin_file, cfg->state_dir, "hsm.so-pin")) != CKR_OK ||
        (rv = path_field_resolve(&cfg->audit_path, cfg->state_dir, "audit.log")) != CKR_OK)
        return rv;
    /* A literal PIN or an environment variable replaces the pin file. */
    if (ctx->pin_source == NULL || strcmp(ctx->pin_source, "pin_file") == 0)
        if ((rv = path_field_resolve(&cfg->hsm_pin_file, cfg->state_dir, "hsm.pin")) != CKR_OK)
            return rv;
    /* softhsm2_conf means something only to SoftHSMv2; "softhsm2_conf =" turns it off. */
    if (cfg->softhsm2_conf != NULL && cfg->softhsm2_conf[0] == '\0') {
        free(cfg->softhsm2_conf);
        cfg->softhsm2_conf = NULL;
    } else if (cfg->softhsm2_conf != NULL || (!ctx->softhsm2_conf_given && softhsm)) {
        rv = path_field_resolve(&cfg->softhsm2_conf, cfg->state_dir, "softhsm2.conf");
        if (rv != CKR_OK) return rv;
    }
    return CKR_OK;
}

/* cfg zeroed: the defaults that are not strings, which the file may then override. */
static void scalars_default(struct hf_config *cfg)
{
    cfg->audit_sync_interval_ms = 5;
    cfg->audit_success_events = true;
    cfg->audit_reserve = HF_CONFIG_AUDIT_RESERVE;
    cfg->audit_alarm = 0;
    cfg->audit_checkpoint_interval_ms = 1000;
    cfg->cache_max_keys = 4096;
    cfg->pin_attempts = 10;
    cfg->pin_iterations = 100000;
    cfg->pool_queue_max = HF_POOL_QUEUE_MAX_DEFAULT;
    cfg->pool_queue_wait_ms = HF_POOL_QUEUE_WAIT_MS;
    cfg->pool_call_timeout_ms = HF_POOL_CALL_TIMEOUT_MS;
    cfg->hsm_concurrency = 4;
}

const char *hf_config_default_path(void)
{
    const char *env = getenv("HOLDFAST_CONF");

    return env != NULL && env[0] != '\0' ? env : DEFAULT_CONF;
}

CK_RV hf_config_set_defaults(struct hf_config *cfg, const char *state_dir)
{
    struct parse_ctx ctx = {.cfg = cfg};
    CK_RV rv;

    if (cfg == NULL) return CKR_ARGUMENTS_BAD;
    memset(cfg, 0, sizeof(*cfg));
    scalars_default(cfg);
    if (state_dir != NULL && (cfg->state_dir = strdup(state_dir)) == NULL) return CKR_HOST_MEMORY;
    rv = config_complete(cfg, &ctx, NULL);
    if (rv != CKR_OK) hf_config_free(cfg);
    return rv;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');

    if (slash == NULL) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* Parses path into cfg (already zeroed, cfg->path set). */
static CK_RV config_parse(const char *path, struct hf_config *cfg, struct parse_ctx *ctx, char *err,
                          size_t errlen)
{
    int ini_line;

    ctx->cfg = cfg;
    ctx->line_done = true;
    ctx->fp = fopen(path, "re");
    if (ctx->fp == NULL) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return CKR_ARGUMENTS_BAD;
    }
    ini_line = ini_parse_stream(reader, ctx, handler, ctx);
    fclose(ctx->fp);
    if (ini_line < 0) {
        set_err(err, errlen, "%s: out of memory", path);
        return CKR_HOST_MEMORY;
    }
    /* libinih counts the lines it reads itself; ours are exact even after an over-long one. */
    if (ini_line > 0 && (ctx->err_line == 0 || (unsigned)ini_line < ctx->err_line)) {
        set_err(err, errlen, "%s:%d: syntax error (expected [section] or key = value)", path,
                ini_line);
        return CKR_ARGUMENTS_BAD;
    }
    if (ctx->err_line != 0) {
        set_err(err, errlen, "%s:%u: %s", path, ctx->err_line, ctx->err);
        return CKR_ARGUMENTS_BAD;
    }
    return CKR_OK;
}

static CK_RV pin_resolve(struct hf_config *cfg, bool missing_ok, char *err, size_t errlen);
static CK_RV root_members_complete(struct hf_config *cfg, char *err, size_t errlen);
static bool secret_file_is_usable(int fd, const char *what, const char *path, char *err,
                                  size_t errlen);

static bool root_has_literal_pin(const struct hf_config *cfg)
{
    for (size_t i = 0; i < cfg->n_root_members; i++)
        if (cfg->root_members[i].pin != NULL) return true;
    return false;
}

/* A config file that holds an HSM PIN ([hsm] pin, [hsm.NAME] pin) is a secret file too. */
static CK_RV config_secret_check(const char *path, const struct parse_ctx *ctx, char *err,
                                 size_t errlen)
{
    int fd;
    bool ok;

    if ((ctx->pin_source == NULL || strcmp(ctx->pin_source, "pin") != 0) &&
        !root_has_literal_pin(ctx->cfg))
        return CKR_OK;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return CKR_ARGUMENTS_BAD;
    }
    ok = secret_file_is_usable(fd, "config file (it holds an HSM pin)", path, err, errlen);
    close(fd);
    return ok ? CKR_OK : CKR_ARGUMENTS_BAD;
}

CK_RV hf_config_load(const char *path, struct hf_config *cfg, char *err, size_t errlen)
{
    struct parse_ctx ctx = {0};
    char *dir = NULL;
    CK_RV rv;

    if (err != NULL && errlen > 0) err[0] = '\0';
    if (path == NULL || cfg == NULL) return CKR_ARGUMENTS_BAD;
    memset(cfg, 0, sizeof(*cfg));
    scalars_default(cfg);
    cfg->path = strdup(path);
    dir = dir_of(path);
    if (cfg->path == NULL || dir == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    rv = config_parse(path, cfg, &ctx, err, errlen);
    if (rv != CKR_OK) goto done;
    if ((rv = config_secret_check(path, &ctx, err, errlen)) != CKR_OK) goto done;
    rv = config_complete(cfg, &ctx, dir);
    if (rv != CKR_OK) {
        set_err(err, errlen, "%s: out of memory", path);
        goto done;
    }
    rv = pin_resolve(cfg, true, err, errlen);
    if (rv == CKR_OK) rv = root_members_complete(cfg, err, errlen);
done:
    free(dir);
    if (rv != CKR_OK) hf_config_free(cfg);
    return rv;
}

static void pin_clear(struct hf_config *cfg)
{
    if (cfg->hsm_pin == NULL) return;
    OPENSSL_cleanse(cfg->hsm_pin, strlen(cfg->hsm_pin));
    free(cfg->hsm_pin);
    cfg->hsm_pin = NULL;
}

static void secret_file_warn(const char *msg)
{
    hf_log_warn("%s", msg);
}

static bool secret_file_is_usable(int fd, const char *what, const char *path, char *err,
                                  size_t errlen)
{
    return hf_secret_file_is_usable(fd, what, path, secret_file_warn, err, errlen);
}

/* The first line of path, without its line end. */
static CK_RV pin_file_read(const char *path, bool missing_ok, char **pin, char *err, size_t errlen)
{
    char buf[512];
    FILE *fp = fopen(path, "re");
    CK_RV rv = CKR_ARGUMENTS_BAD;

    *pin = NULL;
    if (fp == NULL) {
        if (errno == ENOENT && missing_ok) return CKR_OK;
        set_err(err, errlen, "pin_file %s: %s", path, strerror(errno));
        return CKR_ARGUMENTS_BAD;
    }
    if (!secret_file_is_usable(fileno(fp), "pin_file", path, err, errlen)) goto done;
    if (fgets(buf, sizeof(buf), fp) == NULL) {
        set_err(err, errlen, "pin_file %s is empty", path);
        goto done;
    }
    buf[strcspn(buf, "\r\n")] = '\0';
    if (buf[0] == '\0') {
        set_err(err, errlen, "pin_file %s: the first line is empty", path);
        goto done;
    }
    *pin = strdup(buf);
    rv = *pin ? CKR_OK : CKR_HOST_MEMORY;
done:
    OPENSSL_cleanse(buf, sizeof(buf));
    fclose(fp);
    return rv;
}

static CK_RV pin_resolve(struct hf_config *cfg, bool missing_ok, char *err, size_t errlen)
{
    char *pin = NULL;
    CK_RV rv;

    if (cfg->hsm_pin_env != NULL) {
        const char *v = getenv(cfg->hsm_pin_env);

        if (v == NULL || v[0] == '\0') {
            set_err(err, errlen, "pin_env: environment variable %s is not set", cfg->hsm_pin_env);
            return CKR_ARGUMENTS_BAD;
        }
        if ((pin = strdup(v)) == NULL) return CKR_HOST_MEMORY;
    } else if (cfg->hsm_pin_file != NULL) {
        rv = pin_file_read(cfg->hsm_pin_file, missing_ok, &pin, err, errlen);
        if (rv != CKR_OK) return rv;
        if (pin == NULL) return CKR_OK; /* missing, and that is fine: init writes it */
    } else {
        /* A literal [hsm] pin: it is what it is. */
        if (cfg->hsm_pin != NULL) return CKR_OK;
        set_err(err, errlen, "no HSM PIN source: set [hsm] pin_file or pin_env");
        return CKR_ARGUMENTS_BAD;
    }
    pin_clear(cfg);
    cfg->hsm_pin = pin;
    return CKR_OK;
}

/* A member's PIN from its pin_env or pin_file (a literal one is set already). */
static CK_RV root_member_pin(const char *path, struct hf_config_root_member *m, char *err,
                             size_t errlen)
{
    const char *v;

    if (m->pin_file != NULL) return pin_file_read(m->pin_file, false, &m->pin, err, errlen);
    if (m->pin_env == NULL) return CKR_OK;
    if ((v = getenv(m->pin_env)) == NULL || v[0] == '\0') {
        set_err(err, errlen, "%s:%u: [hsm.%s] pin_env: environment variable %s is not set", path,
                m->line, m->name, m->pin_env);
        return CKR_ARGUMENTS_BAD;
    }
    return (m->pin = strdup(v)) != NULL ? CKR_OK : CKR_HOST_MEMORY;
}

/* Each [hsm.NAME]: a module, the [hsm] token's label by default, its pin_file from state_dir,
 * its PIN read. */
static CK_RV root_members_complete(struct hf_config *cfg, char *err, size_t errlen)
{
    CK_RV rv = CKR_OK;

    for (size_t i = 0; i < cfg->n_root_members && rv == CKR_OK; i++) {
        struct hf_config_root_member *m = &cfg->root_members[i];
        if (m->module == NULL) {
            set_err(err, errlen, "%s:%u: [hsm.%s] has no module", cfg->path, m->line, m->name);
            return CKR_ARGUMENTS_BAD;
        }
        if ((rv = str_default(&m->token, cfg->hsm_token)) != CKR_OK) break;
        if (m->pin_file != NULL &&
            (rv = path_field_resolve(&m->pin_file, cfg->state_dir, "")) != CKR_OK)
            break;
        rv = root_member_pin(cfg->path, m, err, errlen);
    }
    return rv;
}

CK_RV hf_config_resolve_pin(struct hf_config *cfg, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0) err[0] = '\0';
    if (cfg == NULL) return CKR_ARGUMENTS_BAD;
    return pin_resolve(cfg, false, err, errlen);
}

void hf_config_free(struct hf_config *cfg)
{
    if (cfg == NULL) return;
    pin_clear(cfg);
    free(cfg->path);
    free(cfg->state_dir);
    free(cfg->node);
    free(cfg->token_label);
    free(cfg->store_path);
    free(cfg->hsm_module);
    free(cfg->hsm_token);
    free(cfg->hsm_pin_file);
    free(cfg->hsm_pin_env);
    free(cfg->hsm_so_pin_file);
    free(cfg->softhsm2_conf);
    free(cfg->kek_label);
    free(cfg->audit_path);
    for (size_t i = 0; i < cfg->n_root_members; i++) {
        struct hf_config_root_member *m = &cfg->root_members[i];
        if (m->pin != NULL) OPENSSL_clear_free(m->pin, strlen(m->pin));
        free(m->name);
        free(m->module);
        free(m->token);
        free(m->pin_file);
        free(m->pin_env);
    }
    memset(cfg, 0, sizeof(*cfg));
}

CK_RV hf_config_load_default(struct hf_config *cfg, char *err, size_t errlen)
{
    const char *env = getenv("HOLDFAST_CONF");
    const char *path = hf_config_default_path();

    if (err != NULL && errlen > 0) err[0] = '\0';
    if (cfg == NULL) return CKR_ARGUMENTS_BAD;
    if ((env == NULL || env[0] == '\0') && access(path, F_OK) != 0 && errno == ENOENT)
        return hf_config_set_defaults(cfg, NULL);
    return hf_config_load(path, cfg, err, errlen);
}
