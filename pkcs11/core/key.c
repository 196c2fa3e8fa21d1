#include "hf-build.h"

#include "pkcs11/core/key.h"
#include "pkcs11/core/curve.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uuid/uuid.h>

/* Labels travel as "k=v\n..." in CKA_HF_LABELS: a value must not be able to forge a line. */
#define LABEL_VALUE_MAX 1024

static const char *const state_names[] = {
    [HF_STATE_PRE_ACTIVE] = "pre-active",   [HF_STATE_ACTIVE] = "active",
    [HF_STATE_DEACTIVATED] = "deactivated", [HF_STATE_COMPROMISED] = "compromised",
    [HF_STATE_DESTROYED] = "destroyed",
};

/* In mask bit order, so hf_usage_format is stable. */
static const struct {
    const char *name;
    unsigned long bit;
} usage_names[] = {
    {"sign", HF_USAGE_SIGN},       {"verify", HF_USAGE_VERIFY}, {"encrypt", HF_USAGE_ENCRYPT},
    {"decrypt", HF_USAGE_DECRYPT}, {"wrap", HF_USAGE_WRAP},     {"unwrap", HF_USAGE_UNWRAP},
    {"derive", HF_USAGE_DERIVE},
};
#define N_USAGES (sizeof(usage_names) / sizeof(usage_names[0]))

/* ---- clear and copy ---- */

static void labels_free(struct hf_label *labels, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(labels[i].name);
        free(labels[i].value);
    }
    free(labels);
}

void hf_key_clear(struct hf_key *key)
{
    if (!key) return;
    free(key->name);
    free(key->owner);
    free(key->source);
    labels_free(key->labels, key->n_labels);
    memset(key, 0, sizeof(*key));
}

void hf_key_version_clear(struct hf_key_version *v)
{
    if (!v) return;
    free(v->kek_label);
    free(v->wrapped);
    free(v->public_der);
    memset(v, 0, sizeof(*v));
}

void hf_link_clear(struct hf_link *link)
{
    if (!link) return;
    free(link->type);
    free(link->ext_id);
    memset(link, 0, sizeof(*link));
}

/* NULL stays NULL; false only on allocation failure. */
static bool str_dup(char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return !src || *dst;
}

static bool mem_dup(unsigned char **dst, const unsigned char *src, size_t len)
{
    *dst = NULL;
    if (!src) return true;
    *dst = malloc(len ? len : 1);
    if (!*dst) return false;
    memcpy(*dst, src, len);
    return true;
}

CK_RV hf_key_copy(struct hf_key *dst, const struct hf_key *src)
{
    CK_RV rv = CKR_HOST_MEMORY;

    if (!dst || !src) return CKR_ARGUMENTS_BAD;
    *dst = *src;
    dst->name = dst->owner = dst->source = NULL;
    dst->labels = NULL;
    dst->n_labels = 0;
    if (!str_dup(&dst->name, src->name) || !str_dup(&dst->owner, src->owner) ||
        !str_dup(&dst->source, src->source))
        goto done;
    if (src->n_labels) {
        dst->labels = calloc(src->n_labels, sizeof(*dst->labels));
        if (!dst->labels) goto done;
        for (; dst->n_labels < src->n_labels; dst->n_labels++) {
            struct hf_label *l = &dst->labels[dst->n_labels];
            const struct hf_label *s = &src->labels[dst->n_labels];
            if (!str_dup(&l->name, s->name) || !str_dup(&l->value, s->value)) {
                dst->n_labels++; /* so the clear frees the half-copied one */
                goto done;
            }
        }
    }
    rv = CKR_OK;
done:
    if (rv != CKR_OK) hf_key_clear(dst);
    return rv;
}

CK_RV hf_key_version_copy(struct hf_key_version *dst, const struct hf_key_version *src)
{
    if (!dst || !src) return CKR_ARGUMENTS_BAD;
    *dst = *src;
    dst->kek_label = NULL;
    dst->wrapped = dst->public_der = NULL;
    if (!str_dup(&dst->kek_label, src->kek_label) ||
        !mem_dup(&dst->wrapped, src->wrapped, src->wrapped_len) ||
        !mem_dup(&dst->public_der, src->public_der, src->public_der_len)) {
        hf_key_version_clear(dst);
        return CKR_HOST_MEMORY;
    }
    return CKR_OK;
}

/* ---- KMIP state rules ---- */

bool hf_key_state_allows(unsigned long state, unsigned long usage_bit)
{
    /* KMIP 1.4 section 3.22: deactivated and compromised objects may still be used to process
     * (decrypt, unwrap, verify) what was protected earlier, never to protect anything new. */
    const unsigned long process = HF_USAGE_DECRYPT | HF_USAGE_UNWRAP | HF_USAGE_VERIFY;
    /* Deriving makes a new key: protecting, so active only. */
    const unsigned long all =
        process | HF_USAGE_ENCRYPT | HF_USAGE_WRAP | HF_USAGE_SIGN | HF_USAGE_DERIVE;
    unsigned long allowed = 0;

    if (state == HF_STATE_ACTIVE)
        allowed = all;
    else if (state == HF_STATE_DEACTIVATED || state == HF_STATE_COMPROMISED)
        allowed = process;
    return usage_bit != 0 && (usage_bit & ~allowed) == 0;
}

bool hf_key_is_usable_for(const struct hf_key *key, unsigned long usage_bit)
{
    return key && (usage_bit & ~key->usage) == 0 && hf_key_state_allows(key->state, usage_bit);
}

bool hf_key_state_can_move(unsigned long from, unsigned long to)
{
    /* KMIP 1.4 section 3.22: states only move forward and destroyed is final. The enumeration
     * values are in that order, and any forward move is one of the allowed transitions. */
    if (from < HF_STATE_PRE_ACTIVE || to > HF_STATE_DESTROYED) return false;
    return to > from;
}

unsigned long hf_key_version_state(const struct hf_key *key, const struct hf_key_version *v)
{
    if (!v || v->state == 0 || key->state == HF_STATE_PRE_ACTIVE || key->state >= v->state)
        return key->state;
    return v->state;
}

bool hf_key_version_is_usable_for(const struct hf_key *key, const struct hf_key_version *v,
                                  unsigned long usage_bit)
{
    return key && (usage_bit & ~key->usage) == 0 &&
           hf_key_state_allows(hf_key_version_state(key, v), usage_bit);
}

bool hf_version_state_can_move(unsigned long from, unsigned long to)
{
    /* KMIP 1.4 section 4.21: an active object is revoked before it is destroyed. */
    if (from < HF_STATE_ACTIVE || to <= HF_STATE_ACTIVE) return false;
    if (from == HF_STATE_ACTIVE && to == HF_STATE_DESTROYED) return false;
    return hf_key_state_can_move(from, to);
}

/* ---- validation ---- */

static bool name_char_is_valid(int c)
{
    return isascii(c) && (isalnum(c) || strchr("._:/@+-", c));
}

bool hf_label_name_is_valid(const char *name)
{
    size_t len;

    if (!name) return false;
    len = strlen(name);
    if (len == 0 || len > HF_NAME_MAX) return false;
    for (size_t i = 0; i < len; i++)
        if (!name_char_is_valid((unsigned char)name[i])) return false;
    return true;
}

bool hf_key_name_is_valid(const char *name)
{
    /* Keys are looked up by "UUID or name": a name shaped like a UUID would be ambiguous. */
    return hf_label_name_is_valid(name) && !hf_uuid_is_valid(name);
}

static bool label_value_is_valid(const char *value)
{
    size_t len = strlen(value);

    if (len > LABEL_VALUE_MAX) return false;
    for (size_t i = 0; i < len; i++)
        if (iscntrl((unsigned char)value[i])) return false;
    return true;
}

bool hf_alg_bits_is_valid(enum hf_alg alg, unsigned bits)
{
    switch (alg) {
    case HF_ALG_AES:
        return bits == 128 || bits == 192 || bits == 256;
    case HF_ALG_RSA:
        return bits == 2048 || bits == 3072 || bits == 4096;
    case HF_ALG_EC:
        return hf_curve_find(alg, bits) != NULL;
    case HF_ALG_GENERIC:
        return bits >= 112 && bits <= 4096 && bits % 8 == 0;
    case HF_ALG_ED25519:
        return hf_curve_find(alg, bits) != NULL;
    }
    return false;
}

bool hf_uuid_is_valid(const char *s)
{
    if (!s || strlen(s) != HF_UUID_LEN) return false;
    for (int i = 0; i < HF_UUID_LEN; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i])) return false;
    }
    return true;
}

void hf_uuid_generate(char out[HF_UUID_LEN + 1])
{
    uuid_t u;

    uuid_generate_random(u);
    uuid_unparse_lower(u, out);
}

/* ---- names ---- */

const char *hf_state_name(unsigned long state)
{
    if (state < HF_STATE_PRE_ACTIVE || state > HF_STATE_DESTROYED) return "unknown";
    return state_names[state];
}

bool hf_state_parse(const char *s, unsigned long *state)
{
    if (!s || !state) return false;
    for (unsigned long i = HF_STATE_PRE_ACTIVE; i <= HF_STATE_DESTROYED; i++) {
        if (strcasecmp(s, state_names[i]) == 0) {
            *state = i;
            return true;
        }
    }
    return false;
}

const char *hf_alg_name(enum hf_alg alg)
{
    switch (alg) {
    case HF_ALG_AES:
        return "AES";
    case HF_ALG_RSA:
        return "RSA";
    case HF_ALG_EC:
        return "EC";
    case HF_ALG_GENERIC:
        return "HMAC";
    case HF_ALG_ED25519:
        return "Ed25519";
    }
    return "unknown";
}

/* Grammar: [AES|RSA|EC|HMAC][-|_][P[-]]BITS (HMAC: a generic secret of BITS), case-insensitive; "P"
 * (a NIST curve) implies EC and is only accepted there. */
bool hf_alg_spec_parse(const char *s, enum hf_alg *alg, unsigned *bits)
{
    static const struct {
        const char *word;
        enum hf_alg alg;
    } words[] = {
        {"AES", HF_ALG_AES}, {"RSA", HF_ALG_RSA}, {"EC", HF_ALG_EC}, {"HMAC", HF_ALG_GENERIC}};
    enum hf_alg a = 0;
    unsigned long n;
    char *end;

    if (!s || !alg || !bits) return false;
    /* A curve with one size: its name says it all. */
    if (strcasecmp(s, "Ed25519") == 0) {
        *alg = HF_ALG_ED25519;
        *bits = 256;
        return true;
    }
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t len = strlen(words[i].word);
        if (strncasecmp(s, words[i].word, len) == 0) {
            a = words[i].alg;
            s += len;
            break;
        }
    }
    if (a && (*s == '-' || *s == '_')) s++;
    if ((a == 0 || a == HF_ALG_EC) && (*s == 'P' || *s == 'p')) {
        a = HF_ALG_EC;
        s++;
        if (*s == '-') s++;
    }
    if (a == 0 || !isdigit((unsigned char)*s)) return false;
    n = strtoul(s, &end, 10);
    if (*end != '\0' || n > 65536 || !hf_alg_bits_is_valid(a, (unsigned)n)) return false;
    *alg = a;
    *bits = (unsigned)n;
    return true;
}

/* ---- usage ---- */

bool hf_usage_parse(const char *s, unsigned long *mask)
{
    unsigned long m = 0;

    if (!s || !mask) return false;
    while (*s) {
        size_t len = strcspn(s, ",");
        const char *word = s;
        size_t wlen = len;
        bool found = false;

        while (wlen && isspace((unsigned char)*word))
            word++, wlen--;
        while (wlen && isspace((unsigned char)word[wlen - 1]))
            wlen--;
        for (size_t i = 0; i < N_USAGES && !found; i++) {
            if (strlen(usage_names[i].name) == wlen &&
                strncasecmp(word, usage_names[i].name, wlen) == 0) {
                m |= usage_names[i].bit;
                found = true;
            }
        }
        if (!found) return false; /* also an empty word: "encrypt,,decrypt" */
        s += len;
        if (*s == ',' && *++s == '\0') return false;
    }
    if (m == 0) return false;
    *mask = m;
    return true;
}

size_t hf_usage_format(unsigned long mask, char *out, size_t outlen)
{
    size_t need = 0;

    if (out && outlen) out[0] = '\0';
    for (size_t i = 0; i < N_USAGES; i++) {
        if (!(mask & usage_names[i].bit)) continue;
        const char *sep = need ? "," : "";
        size_t add = strlen(sep) + strlen(usage_names[i].name);
        if (out && need + add < outlen) {
            strcpy(out + need, sep);
            strcat(out + need, usage_names[i].name);
        }
        need += add;
    }
    return need;
}

unsigned long hf_usage_default(enum hf_alg alg)
{
    switch (alg) {
    case HF_ALG_AES:
        return HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT | HF_USAGE_WRAP | HF_USAGE_UNWRAP;
    case HF_ALG_RSA:
        return HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT | HF_USAGE_UNWRAP | HF_USAGE_SIGN |
               HF_USAGE_VERIFY;
    case HF_ALG_EC:
    case HF_ALG_GENERIC:
    case HF_ALG_ED25519:
        return HF_USAGE_SIGN | HF_USAGE_VERIFY;
    }
    return 0;
}

/* ---- labels ---- */

/* Index of name, or of where it would go (*found false). */
static size_t label_find(const struct hf_key *key, const char *name, bool *found)
{
    size_t lo = 0, hi = key->n_labels;

    *found = false;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, key->labels[mid].name);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

const char *hf_key_label_get(const struct hf_key *key, const char *name)
{
    bool found;
    size_t i;

    if (!key || !name) return NULL;
    i = label_find(key, name, &found);
    return found ? key->labels[i].value : NULL;
}

CK_RV hf_key_label_set(struct hf_key *key, const char *name, const char *value)
{
    struct hf_label *grown;
    char *n = NULL, *v = NULL;
    bool found;
    size_t i;
    CK_RV rv = CKR_HOST_MEMORY;

    if (!key || !name) return CKR_ARGUMENTS_BAD;
    if (!hf_label_name_is_valid(name)) return CKR_ATTRIBUTE_VALUE_INVALID;
    if (value && !label_value_is_valid(value)) return CKR_ATTRIBUTE_VALUE_INVALID;
    i = label_find(key, name, &found);
    if (!value) {
        if (found) {
            free(key->labels[i].name);
            free(key->labels[i].value);
            memmove(&key->labels[i], &key->labels[i + 1],
                    (key->n_labels - i - 1) * sizeof(*key->labels));
            key->n_labels--;
        }
        return CKR_OK;
    }
    if (!(v = strdup(value))) goto done;
    if (found) {
        free(key->labels[i].value);
        key->labels[i].value = v;
        v = NULL;
        rv = CKR_OK;
        goto done;
    }
    if (!(n = strdup(name))) goto done;
    grown = realloc(key->labels, (key->n_labels + 1) * sizeof(*key->labels));
    if (!grown) goto done;
    key->labels = grown;
    memmove(&key->labels[i + 1], &key->labels[i], (key->n_labels - i) * sizeof(*key->labels));
    key->labels[i].name = n;
    key->labels[i].value = v;
    key->n_labels++;
    n = v = NULL;
    rv = CKR_OK;
done:
    free(n);
    free(v);
    return rv;
}
