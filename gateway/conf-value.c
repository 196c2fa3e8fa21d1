/* plugin.h's config value parsers: one value of a section in, a typed value or a message naming
 * what was wanted out. Numbers are decimal digits only: strtoull alone would take a sign, blanks
 * and "0x", and a config that means something other than it reads is worse than one refused. */
#include "hf-build.h"

#include "gateway/conf-value.h"
#include "gateway/plugin.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Set only while the loader hands out a file's lines, on the thread that does it. */
static _Thread_local const char *conf_dir;

void hf_gw_conf_dir_set(const char *dir)
{
    conf_dir = dir;
}

char *hf_gw_conf_path_in(const char *dir, const char *value)
{
    size_t need;
    char *out;

    if (value == NULL) return NULL;
    if (value[0] == '/' || dir == NULL || dir[0] == '\0') return strdup(value);
    need = strlen(dir) + 1 + strlen(value) + 1;
    if ((out = malloc(need)) != NULL) snprintf(out, need, "%s/%s", dir, value);
    return out;
}

HF_PLUGIN_EXPORT char *hf_conf_path(const char *value)
{
    return hf_gw_conf_path_in(conf_dir, value);
}

HF_PLUGIN_EXPORT bool hf_conf_bool(const char *value, bool *out, char *err, size_t errlen)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};

    for (size_t i = 0; value != NULL && out != NULL && i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(value, yes[i]) == 0) return *out = true, true;
        if (strcasecmp(value, no[i]) == 0) return *out = false, true;
    }
    if (err && errlen)
        snprintf(err, errlen, "expected on or off (true/false, yes/no, 1/0), got \"%.64s\"",
                 value ? value : "");
    return false;
}

/* Leading decimal digits of s into *n; *end after them. false without digits or on overflow. */
static bool digits_parse(const char *s, uint64_t *n, const char **end)
{
    char *e;

    if (!isdigit((unsigned char)s[0])) return false;
    errno = 0;
    *n = strtoull(s, &e, 10);
    *end = e;
    return errno == 0;
}

/* n * mult within [min, max] into *out. */
static bool scaled_in_range(uint64_t n, uint64_t mult, uint64_t min, uint64_t max, uint64_t *out)
{
    if (n > UINT64_MAX / mult || n * mult < min || n * mult > max) return false;
    *out = n * mult;
    return true;
}

HF_PLUGIN_EXPORT bool hf_conf_uint(const char *value, uint64_t min, uint64_t max, uint64_t *out,
                                   char *err, size_t errlen)
{
    const char *end = NULL;
    uint64_t n;

    if (value && out && digits_parse(value, &n, &end) && *end == '\0' &&
        scaled_in_range(n, 1, min, max, out))
        return true;
    if (err && errlen)
        snprintf(err, errlen, "expected a whole number from %llu to %llu, got \"%.64s\"",
                 (unsigned long long)min, (unsigned long long)max, value ? value : "");
    return false;
}

/* The multiplier a unit names, from units[] (case-insensitive), or 0. */
struct unit {
    const char *name;
    uint64_t mult;
};

static uint64_t unit_mult(const struct unit *units, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(units[i].name, name) == 0) return units[i].mult;
    return 0;
}

/* A number with a unit of units[] (what: "size", "duration"; help: the units in words): the
 * scaled value within [min, max], or false with a message. */
static bool with_unit(const char *value, const struct unit *units, size_t nunits, uint64_t min,
                      uint64_t max, uint64_t *out, const char *what, const char *help, char *err,
                      size_t errlen)
{
    const char *end = NULL;
    uint64_t n, mult;

    if (value != NULL && out != NULL && digits_parse(value, &n, &end) &&
        (mult = unit_mult(units, nunits, end)) != 0 && scaled_in_range(n, mult, min, max, out))
        return true;
    if (err && errlen)
        snprintf(err, errlen, "expected a %s from %llu to %llu %s, got \"%.64s\"", what,
                 (unsigned long long)min, (unsigned long long)max, help, value ? value : "");
    return false;
}

HF_PLUGIN_EXPORT bool hf_conf_size(const char *value, uint64_t min, uint64_t max, uint64_t *out,
                                   char *err, size_t errlen)
{
    static const struct unit units[] = {
        {"", 1}, {"k", 1024}, {"m", 1024 * 1024}, {"g", 1024 * 1024 * 1024}};

    return with_unit(value, units, sizeof(units) / sizeof(units[0]), min, max, out, "size",
                     "bytes (a number, then k, M or G for KiB, MiB, GiB)", err, errlen);
}

HF_PLUGIN_EXPORT bool hf_conf_duration_ms(const char *value, uint64_t min, uint64_t max,
                                          uint64_t *out, char *err, size_t errlen)
{
    static const struct unit units[] = {
        {"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60 * 1000}, {"h", 60 * 60 * 1000}};

    return with_unit(value, units, sizeof(units) / sizeof(units[0]), min, max, out, "duration",
                     "ms (a number, then ms, s, m or h; bare: ms)", err, errlen);
}

static bool list_push(char ***items, size_t *n, const char *item, size_t len)
{
    char **grown, *copy;

    if (*n >= SIZE_MAX / sizeof(**items) - 1 || (copy = strndup(item, len)) == NULL) return false;
    if ((grown = realloc(*items, (*n + 1) * sizeof(**items))) == NULL) {
        free(copy);
        return false;
    }
    grown[(*n)++] = copy;
    *items = grown;
    return true;
}

HF_PLUGIN_EXPORT bool hf_conf_list(const char *value, char ***items, size_t *n, char *err,
                                   size_t errlen)
{
    static const char separators[] = ", \t\r\n";
    const char *p = value;

    if (value == NULL || items == NULL || n == NULL) {
        if (err && errlen) snprintf(err, errlen, "internal: no list");
        return false;
    }
    while (*p) {
        size_t len;

        p += strspn(p, separators);
        if ((len = strcspn(p, separators)) == 0) break;
        if (!list_push(items, n, p, len)) {
            if (err && errlen) snprintf(err, errlen, "out of memory");
            return false;
        }
        p += len;
    }
    return true;
}

HF_PLUGIN_EXPORT void hf_conf_list_free(char **items, size_t n)
{
    for (size_t i = 0; items != NULL && i < n; i++)
        free(items[i]);
    free(items);
}

HF_PLUGIN_EXPORT bool hf_conf_list_set(const char *value, char ***items, size_t *n, char *err,
                                       size_t errlen)
{
    char **fresh = NULL;
    size_t nfresh = 0;

    if (!hf_conf_list(value, &fresh, &nfresh, err, errlen)) {
        hf_conf_list_free(fresh, nfresh);
        return false;
    }
    hf_conf_list_free(*items, *n);
    *items = fresh;
    *n = nfresh;
    return true;
}

HF_PLUGIN_EXPORT bool hf_conf_string_set(char **dst, const char *value, char *err, size_t errlen)
{
    char *copy = strdup(value);

    if (copy == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    free(*dst);
    *dst = copy;
    return true;
}
