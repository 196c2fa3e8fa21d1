#include "hf-build.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <p11-kit/p11-kit.h>

#include "pkcs11/tool/cli.h"

/* ---- errors ---- */

void hf_cli_error(const char *fmt, ...)
{
    va_list ap;

    fputs("holdfast: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void hf_cli_usage_print(struct hf_cli *cli, FILE *out)
{
    const struct hf_cli_command *cmd = cli->current;

    if (!cmd) return;
    fprintf(out, "Usage: holdfast %s%s%s\n\n%s\n", cli->command, cmd->args[0] ? " " : "", cmd->args,
            cmd->help);
    if (cmd->details) fprintf(out, "\n%s", cmd->details);
}

int hf_cli_usage_error(struct hf_cli *cli, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "holdfast: %s: ", cli->command);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'holdfast %s --help'.\n", cli->command);
    return HF_EXIT_USAGE;
}

int hf_cli_exit_code(CK_RV rv)
{
    switch (rv) {
    case CKR_OK:
        return HF_EXIT_OK;
    case CKR_KEY_HANDLE_INVALID:
    case CKR_OBJECT_HANDLE_INVALID:
        return HF_EXIT_NOT_FOUND;
    case CKR_TOKEN_NOT_RECOGNIZED:
        return HF_EXIT_NOT_INIT;
    case CKR_HF_AUDIT_FAILED:
        return HF_EXIT_AUDIT;
    default:
        return HF_EXIT_FAILED;
    }
}

const char *hf_cli_strerror(CK_RV rv)
{
    /* p11-kit knows the standard codes only; its wording for some is terse for an admin. */
    switch (rv) {
    case CKR_HF_AUDIT_FAILED:
        return "the audit log cannot be written, so key operations are stopped";
    case CKR_HF_LINK_BLOCKED:
        return "the link is blocked";
    case CKR_HF_POLICY_INVALID:
        return "the key's policy in the store fails its MAC: the store was changed outside "
               "Holdfast (refused and audited; restore the store from a backup)";
    case CKR_KEY_FUNCTION_NOT_PERMITTED:
        return "the key's state or usage does not permit this operation";
    case CKR_ATTRIBUTE_VALUE_INVALID:
        return "a value was refused (name taken or invalid, usage not valid for the algorithm, "
               "bad label, or a state change KMIP forbids)";
    case CKR_ENCRYPTED_DATA_INVALID:
        return "the ciphertext is damaged or was not made by this key version";
    case CKR_DEVICE_ERROR:
        /* The store's database or the HSM: the core's log line just above names which. */
        return "the key store's database or the HSM did not answer (the line above says which)";
    default:
        return p11_kit_strerror(rv);
    }
}

int hf_cli_fail(struct hf_cli *cli, CK_RV rv, const char *what)
{
    int code = hf_cli_exit_code(rv);

    if (code == HF_EXIT_NOT_FOUND)
        hf_cli_error("%s not found", what);
    else if (code == HF_EXIT_NOT_INIT)
        hf_cli_error("the key store is not initialised: run `holdfast init` first");
    else
        hf_cli_error("%s: %s: %s (CKR 0x%lx)", cli->command, what, hf_cli_strerror(rv), rv);
    return code;
}

/* ---- tables ---- */

struct hf_table {
    size_t ncols;
    size_t nrows; /* rows including the header */
    size_t cap;
    char **cells; /* nrows * ncols */
};

struct hf_table *hf_table_new(size_t ncols, const char *const *headers)
{
    struct hf_table *t = calloc(1, sizeof(*t));

    if (!t) return NULL;
    t->ncols = ncols;
    if (!hf_table_add(t, headers)) {
        hf_table_free(t);
        return NULL;
    }
    return t;
}

bool hf_table_add(struct hf_table *t, const char *const *cells)
{
    if (!t || !cells) return false;
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        char **grown;

        if (cap > SIZE_MAX / sizeof(char *) / t->ncols) return false;
        grown = realloc(t->cells, cap * t->ncols * sizeof(char *));
        if (!grown) return false;
        t->cells = grown;
        t->cap = cap;
    }
    for (size_t i = 0; i < t->ncols; i++) {
        char *copy = strdup(cells[i] ? cells[i] : "-");

        if (!copy) {
            for (size_t j = 0; j < i; j++)
                free(t->cells[t->nrows * t->ncols + j]);
            return false;
        }
        t->cells[t->nrows * t->ncols + i] = copy;
    }
    t->nrows++;
    return true;
}

void hf_table_print(const struct hf_table *t, FILE *out, const char *indent)
{
    size_t width[16] = {0};

    if (!t || t->ncols > sizeof(width) / sizeof(width[0])) return;
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++) {
            size_t len = strlen(t->cells[r * t->ncols + c]);
            if (len > width[c]) width[c] = len;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        fputs(indent ? indent : "", out);
        for (size_t c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[r * t->ncols + c];

            /* The last column is not padded, so lines carry no trailing blanks. */
            if (c + 1 == t->ncols)
                fprintf(out, "%s\n", cell);
            else
                fprintf(out, "%-*s  ", (int)width[c], cell);
        }
    }
}

void hf_table_free(struct hf_table *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

/* ---- JSON and formatting ---- */

int hf_cli_json_print(json_object *obj)
{
    const char *s;

    if (!obj) {
        hf_cli_error("out of memory");
        return HF_EXIT_FAILED;
    }
    s = json_object_to_json_string_ext(obj,
                                       JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    puts(s);
    json_object_put(obj);
    return HF_EXIT_OK;
}

void hf_time_format(int64_t t, char *out, size_t outlen)
{
    time_t tt = (time_t)t;
    struct tm tm;

    if (!gmtime_r(&tt, &tm) || strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(out, outlen, "%lld", (long long)t);
}

void hf_alg_format(enum hf_alg alg, unsigned bits, char *out, size_t outlen)
{
    if (alg == HF_ALG_EC)
        snprintf(out, outlen, "EC-P%u", bits);
    else if (alg == HF_ALG_ED25519)
        snprintf(out, outlen, "%s", hf_alg_name(alg));
    else
        snprintf(out, outlen, "%s-%u", hf_alg_name(alg), bits);
}

static json_object *json_time(int64_t t)
{
    char buf[32];

    hf_time_format(t, buf, sizeof(buf));
    return json_object_new_string(buf);
}

static json_object *json_str(const char *s)
{
    return s ? json_object_new_string(s) : NULL; /* NULL is JSON null */
}

static json_object *json_usage(unsigned long mask)
{
    char buf[128];
    json_object *arr = json_object_new_array();
    char *save = NULL;

    if (!arr) return NULL;
    hf_usage_format(mask, buf, sizeof(buf));
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save))
        json_object_array_add(arr, json_object_new_string(w));
    return arr;
}

json_object *hf_cli_key_json(const struct hf_key *key)
{
    json_object *o = json_object_new_object();
    json_object *labels = json_object_new_object();
    char alg[32];

    if (!o || !labels) {
        json_object_put(o);
        json_object_put(labels);
        return NULL;
    }
    hf_alg_format(key->alg, key->bits, alg, sizeof(alg));
    json_object_object_add(o, "name", json_str(key->name));
    json_object_object_add(o, "uuid", json_str(key->uuid));
    json_object_object_add(o, "alg", json_str(alg));
    json_object_object_add(o, "algorithm", json_str(hf_alg_name(key->alg)));
    json_object_object_add(o, "bits", json_object_new_int((int)key->bits));
    json_object_object_add(o, "state", json_str(hf_state_name(key->state)));
    json_object_object_add(o, "version", json_object_new_int64(key->current_version));
    json_object_object_add(o, "usage", json_usage(key->usage));
    json_object_object_add(o, "owner", json_str(key->owner));
    json_object_object_add(o, "source", json_str(key->source));
    json_object_object_add(o, "exportable", json_object_new_boolean(key->exportable));
    json_object_object_add(o, "created", json_time(key->created));
    json_object_object_add(o, "updated", json_time(key->updated));
    for (size_t i = 0; i < key->n_labels; i++)
        json_object_object_add(labels, key->labels[i].name, json_str(key->labels[i].value));
    json_object_object_add(o, "labels", labels);
    return o;
}

json_object *hf_cli_version_json(const struct hf_key_version *v)
{
    json_object *o = json_object_new_object();

    if (!o) return NULL;
    json_object_object_add(o, "version", json_object_new_int64(v->version));
    json_object_object_add(o, "uuid", json_str(v->uuid));
    json_object_object_add(o, "key_uuid", json_str(v->key_uuid));
    json_object_object_add(o, "state", json_str(hf_state_name(v->state)));
    json_object_object_add(o, "created", json_time(v->created));
    return o;
}

json_object *hf_cli_link_json(const struct hf_link *link, const char *key_name)
{
    json_object *o = json_object_new_object();

    if (!o) return NULL;
    json_object_object_add(o, "type", json_str(link->type));
    json_object_object_add(o, "ext_id", json_str(link->ext_id));
    json_object_object_add(o, "key_uuid", json_str(link->key_uuid));
    json_object_object_add(o, "key", json_str(key_name));
    json_object_object_add(o, "blocked", json_object_new_boolean(link->blocked));
    json_object_object_add(o, "created", json_time(link->created));
    json_object_object_add(o, "updated", json_time(link->updated));
    return o;
}
