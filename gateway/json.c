/* The strict JSON reader for plugins (json.h says what it adds to json-c, and why). */
#include "hf-build.h"

#include "gateway/json.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json_visit.h>
#include <json-c/printbuf.h>
#include <openssl/crypto.h>

/* One code point from s[0..len) (RFC 3629 section 4's table, byte for byte): its length, or 0
 * when the bytes there are not a well-formed sequence. */
static size_t utf8_sequence(const unsigned char *s, size_t len)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t n;

    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4;
    else
        return 0; /* continuation byte first, C0/C1 (overlong), or F5..FF (over U+10FFFF) */
    /* The second byte's range is what rules out overlong forms, surrogates and > U+10FFFF. */
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
    if (len < n || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return n;
}

bool hf_json_utf8_is_valid(const unsigned char *s, size_t len)
{
    size_t i = 0, n;

    while (i < len) {
        if (!(n = utf8_sequence(s + i, len - i))) return false;
        i += n;
    }
    return true;
}

/* What json-c's strict mode still takes that RFC 8259 does not, found in the text it accepted:
 * single-quoted keys ({'a':1}), NaN and Infinity, "1." and control characters inside strings
 * (measured on json-c 0.16). Outside strings, JSON has only structure, whitespace, numbers and
 * the letters of true, false and null; inside, no byte under 0x20. Also counts the members of
 * every object (a ':' outside strings is one). False for anything RFC 8259 refuses. */
static bool text_is_plain_json(const unsigned char *s, size_t len, size_t *members)
{
    bool in_string = false;

    *members = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = s[i];
        if (in_string) {
            if (c < 0x20) return false;
            if (c == '\\')
                i++; /* the escaped byte cannot end the string */
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == ':') {
            (*members)++;
        } else if (c == '.') {
            if (i + 1 >= len || s[i + 1] < '0' || s[i + 1] > '9') return false;
        } else if (!strchr("{}[],-+eE0123456789truefalsn \t\r\n", c) || c == '\0') {
            return false;
        }
    }
    return true;
}

struct tree_check {
    size_t members; /* every object's length, summed */
    bool bad_utf8;
};

static bool string_is_valid(struct json_object *o)
{
    int len = json_object_get_string_len(o);

    return len >= 0 &&
           hf_json_utf8_is_valid((const unsigned char *)json_object_get_string(o), (size_t)len);
}

static int tree_visit(struct json_object *o, int flags, struct json_object *parent, const char *key,
                      size_t *index, void *arg)
{
    struct tree_check *c = arg;

    (void)parent, (void)index;
    if (flags & JSON_C_VISIT_SECOND) return JSON_C_VISIT_RETURN_CONTINUE;
    /* A key made of \u escapes is checked here; one written out was checked with the text. */
    if (key && !hf_json_utf8_is_valid((const unsigned char *)key, strlen(key))) goto bad;
    if (json_object_is_type(o, json_type_object))
        c->members += (size_t)json_object_object_length(o);
    else if (json_object_is_type(o, json_type_string) && !string_is_valid(o))
        goto bad;
    return JSON_C_VISIT_RETURN_CONTINUE;
bad:
    c->bad_utf8 = true;
    return JSON_C_VISIT_RETURN_STOP;
}

/* json-c frees its buffer without clearing it, and the buffer holds the last string the
 * tokener read (a plaintext, if that came last). */
static void tokener_free_cleared(struct json_tokener *tok)
{
    if (!tok) return;
    if (tok->pb && tok->pb->buf && tok->pb->size > 0)
        OPENSSL_cleanse(tok->pb->buf, (size_t)tok->pb->size);
    json_tokener_free(tok);
}

static bool is_json_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static enum hf_status tokenize(const char *text, size_t len, int depth, struct json_object **out,
                               char *why, size_t whylen)
{
    struct json_tokener *tok = json_tokener_new_ex(depth);
    enum hf_status st = HF_STATUS_BAD_REQUEST;
    enum json_tokener_error err;
    size_t end;

    *out = NULL;
    if (!tok) {
        snprintf(why, whylen, "out of memory parsing the body");
        return HF_STATUS_INTERNAL;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
    *out = json_tokener_parse_ex(tok, text, (int)len);
    end = json_tokener_get_parse_end(tok);
    /* A number or literal at the very end ("9", "true") waits for the byte that ends it: the
     * end of the text is that byte (and then all the text was read). */
    if (!*out && json_tokener_get_error(tok) == json_tokener_continue) {
        *out = json_tokener_parse_ex(tok, " ", 1);
        end = len;
    }
    if (!*out) {
        err = json_tokener_get_error(tok);
        /* A lone "null" parses to NULL with no error: not a value any API takes either. */
        snprintf(why, whylen, "the body is not valid JSON (%s)",
                 err == json_tokener_continue  ? "unexpected end of data"
                 : err == json_tokener_success ? "null is not a body"
                                               : json_tokener_error_desc(err));
        goto done;
    }
    for (; end < len; end++)
        if (!is_json_space((unsigned char)text[end])) {
            snprintf(why, whylen, "the body has data after its JSON value");
            goto done;
        }
    st = HF_STATUS_OK;
done:
    if (st != HF_STATUS_OK) {
        hf_json_put_wiped(*out);
        *out = NULL;
    }
    tokener_free_cleared(tok);
    return st;
}

HF_PLUGIN_EXPORT enum hf_status hf_json_parse(const void *text, size_t len, size_t max_len,
                                              int max_depth, struct json_object **out, char *why,
                                              size_t whylen)
{
    struct tree_check check = {0, false};
    struct json_object *root = NULL;
    size_t members;
    char scratch[8];
    enum hf_status st = HF_STATUS_BAD_REQUEST;

    if (!why || whylen == 0) why = scratch, whylen = sizeof(scratch);
    why[0] = '\0';
    if (!out) return HF_STATUS_INTERNAL;
    *out = NULL;
    if (!text && len) return HF_STATUS_INTERNAL;
    if (max_depth <= 0) max_depth = HF_JSON_DEFAULT_DEPTH;
    if (max_len == 0 || max_len > INT32_MAX) max_len = INT32_MAX; /* json-c takes an int */
    if (len == 0) {
        snprintf(why, whylen, "the body is empty; a JSON value is required");
        goto done;
    }
    if (len > max_len) {
        snprintf(why, whylen, "the body is %zu bytes; this reader takes at most %zu", len, max_len);
        st = HF_STATUS_UNSUPPORTED;
        goto done;
    }
    if (!hf_json_utf8_is_valid(text, len)) {
        snprintf(why, whylen, "the body is not valid UTF-8");
        goto done;
    }
    if ((st = tokenize(text, len, max_depth, &root, why, whylen)) != HF_STATUS_OK) goto done;
    st = HF_STATUS_BAD_REQUEST;
    if (json_c_visit(root, 0, tree_visit, &check) < 0) {
        snprintf(why, whylen, "internal: the parsed body could not be walked");
        st = HF_STATUS_INTERNAL;
        goto done;
    }
    if (check.bad_utf8) {
        snprintf(why, whylen, "the body has a \\u escape that is not a Unicode scalar value");
        goto done;
    }
    if (!text_is_plain_json(text, len, &members)) {
        snprintf(why, whylen, "the body is not valid JSON (RFC 8259)");
        goto done;
    }
    if (check.members != members) {
        snprintf(why, whylen, "the body has a duplicate key in an object");
        goto done;
    }
    *out = root;
    root = NULL;
    st = HF_STATUS_OK;
done:
    hf_json_put_wiped(root);
    return st;
}

static int wipe_visit(struct json_object *o, int flags, struct json_object *parent, const char *key,
                      size_t *index, void *arg)
{
    int len;

    (void)flags, (void)parent, (void)key, (void)index, (void)arg;
    if (json_object_is_type(o, json_type_string) && (len = json_object_get_string_len(o)) > 0)
        OPENSSL_cleanse((char *)json_object_get_string(o), (size_t)len);
    return JSON_C_VISIT_RETURN_CONTINUE;
}

HF_PLUGIN_EXPORT void hf_json_wipe(struct json_object *root)
{
    if (root) json_c_visit(root, 0, wipe_visit, NULL);
}

HF_PLUGIN_EXPORT void hf_json_put_wiped(struct json_object *root)
{
    hf_json_wipe(root);
    json_object_put(root);
}
