/* plugin.h's hf_json_member_*: a request body's string and base64 members with the checks every
 * API's fields need (present when required, a string, no NUL, a size cap), and messages that
 * name the field, never its value (the message reaches the audit record and the error body). */
#include "hf-build.h"

#include "gateway/plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* The cap message: an implementation cap says whose it is. */
static enum hf_status over_cap_fail(const char *where, const char *name, size_t n, const char *unit,
                                    size_t cap, enum hf_status over_cap, char *why, size_t whylen)
{
    if (over_cap == HF_STATUS_UNSUPPORTED)
        snprintf(why, whylen, "%s%s is %zu %s; this proxy takes at most %zu", where, name, n, unit,
                 cap);
    else
        snprintf(why, whylen, "%s%s is %zu %s; at most %zu are allowed", where, name, n, unit, cap);
    return over_cap;
}

HF_PLUGIN_EXPORT enum hf_status hf_json_member_string(const struct json_object *obj,
                                                      const char *where, const char *name,
                                                      bool required, size_t max_len,
                                                      enum hf_status over_cap, const char **out,
                                                      size_t *len, char *why, size_t whylen)
{
    struct json_object *v = NULL;
    const char *s;
    int n;

    if (out == NULL || name == NULL || why == NULL || whylen == 0) return HF_STATUS_INTERNAL;
    *out = NULL;
    if (len) *len = 0;
    if (where == NULL) where = "";
    if (obj == NULL || !json_object_object_get_ex(obj, name, &v)) {
        if (!required) return HF_STATUS_OK;
        snprintf(why, whylen, "%s%s is required", where, name);
        return HF_STATUS_BAD_REQUEST;
    }
    if (!json_object_is_type(v, json_type_string)) {
        snprintf(why, whylen, "%s%s must be a string", where, name);
        return HF_STATUS_BAD_REQUEST;
    }
    s = json_object_get_string(v);
    n = json_object_get_string_len(v);
    /* Every consumer reads C strings: an embedded NUL would cut what was checked. */
    if (s == NULL || n < 0 || strlen(s) != (size_t)n) {
        snprintf(why, whylen, "%s%s must not contain a NUL character", where, name);
        return HF_STATUS_BAD_REQUEST;
    }
    if (max_len != 0 && (size_t)n > max_len)
        return over_cap_fail(where, name, (size_t)n, "characters", max_len, over_cap, why, whylen);
    *out = s;
    if (len) *len = (size_t)n;
    return HF_STATUS_OK;
}

HF_PLUGIN_EXPORT enum hf_status hf_json_member_base64(const struct json_object *obj,
                                                      const char *name, bool required, bool any,
                                                      size_t max_len, enum hf_status over_cap,
                                                      unsigned char **data, size_t *len, char *why,
                                                      size_t whylen)
{
    const char *s;
    size_t n = 0, max, got = 0;
    unsigned char *buf;
    enum hf_status st;

    if (data == NULL || len == NULL) return HF_STATUS_INTERNAL;
    *data = NULL;
    *len = 0;
    st = hf_json_member_string(obj, "", name, required, 0, over_cap, &s, &n, why, whylen);
    if (st != HF_STATUS_OK || s == NULL) return st;
    max = hf_base64_decoded_max(n);
    /* +1: malloc(0) may return NULL, and an empty field is valid. */
    if ((buf = malloc(max + 1)) == NULL) {
        snprintf(why, whylen, "out of memory decoding %s", name);
        return HF_STATUS_INTERNAL;
    }
    if (!(any ? hf_base64_decode_any(s, n, buf, &got) : hf_base64_decode(s, n, buf, &got))) {
        snprintf(why, whylen, "%s is not valid base64 (%s)", name,
                 any ? "standard or URL-safe, padded or not" : "RFC 4648 section 4, padded");
        st = HF_STATUS_BAD_REQUEST;
    } else if (max_len != 0 && got > max_len) {
        st = over_cap_fail("", name, got, "bytes", max_len, over_cap, why, whylen);
    }
    if (st != HF_STATUS_OK) {
        /* It may have been a plaintext. */
        OPENSSL_clear_free(buf, max + 1);
        return st;
    }
    *data = buf;
    *len = got;
    return HF_STATUS_OK;
}
