/* The path's target and the decrypt body (request.h). */
#include "hf-build.h"

#include "gateway/plugins/ms-dke/request.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>

bool hf_dke_name_is_valid(const char *name, size_t len)
{
    if (name == NULL || len == 0 || len > HF_DKE_NAME_MAX) return false;
    /* Dot segments mean something to every URL normaliser between Office and us. */
    if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-') return false;
    }
    return true;
}

/* The path after prefix, or NULL when path is not under it at a segment boundary. */
static const char *after_prefix(const char *prefix, const char *path)
{
    size_t n = strlen(prefix);

    if (strncmp(path, prefix, n) != 0) return NULL;
    return path[n] == '/' ? path + n : NULL;
}

void hf_dke_path_parse(const char *prefix, const char *path, struct hf_dke_target *out)
{
    const char *rest, *seg[4];
    size_t len[4], nseg = 0;

    memset(out, 0, sizeof(*out));
    if (prefix == NULL || path == NULL || (rest = after_prefix(prefix, path)) == NULL) return;
    /* rest is "/a[/b/c]": at most three non-empty segments. */
    while (*rest == '/' && nseg < 4) {
        seg[nseg] = ++rest;
        len[nseg] = strcspn(rest, "/");
        if (len[nseg] == 0) return;
        rest += len[nseg++];
    }
    if (*rest != '\0' || !hf_dke_name_is_valid(seg[0], len[0])) return;
    if (nseg == 1) {
        out->kind = HF_DKE_T_KEY;
    } else if (nseg == 3 && hf_uuid_text_is_valid(seg[1], len[1]) && len[2] == 7 &&
               strncasecmp(seg[2], "decrypt", 7) == 0) {
        /* The reference routes .../Decrypt case-insensitively; key ids are UUIDs, any case. */
        for (size_t i = 0; i < HF_DKE_UUID_LEN; i++)
            out->key_id[i] = (char)tolower((unsigned char)seg[1][i]);
        out->kind = HF_DKE_T_DECRYPT;
    } else {
        return;
    }
    memcpy(out->name, seg[0], len[0]);
    out->name[len[0]] = '\0';
}

enum hf_status hf_dke_decrypt_parse(const void *body, size_t len, struct hf_dke_decrypt *out,
                                    char *why, size_t whylen)
{
    struct json_object *root = NULL;
    const char *alg = NULL;
    char reason[160] = "";
    enum hf_status st;

    memset(out, 0, sizeof(*out));
    st = hf_json_parse(body, len, HF_DKE_MAX_BODY, 0, &root, reason, sizeof(reason));
    if (st != HF_STATUS_OK) {
        snprintf(why, whylen, "the body is not JSON: %s", reason);
        return st == HF_STATUS_INTERNAL ? st : HF_STATUS_BAD_REQUEST;
    }
    if (!json_object_is_type(root, json_type_object)) {
        snprintf(why, whylen, "the body is not a JSON object");
        st = HF_STATUS_BAD_REQUEST;
        goto done;
    }
    st = hf_json_member_string(root, "", "alg", true, 64, HF_STATUS_BAD_REQUEST, &alg, NULL, why,
                               whylen);
    if (st != HF_STATUS_OK) goto done;
    if (strcmp(alg, HF_DKE_ALG) != 0) {
        snprintf(why, whylen, "alg: only " HF_DKE_ALG " is supported");
        st = HF_STATUS_BAD_REQUEST;
        goto done;
    }
    st = hf_json_member_base64(root, "value", true, false, HF_DKE_VALUE_MAX, HF_STATUS_BAD_REQUEST,
                               &out->value, &out->len, why, whylen);
done:
    json_object_put(root);
    if (st != HF_STATUS_OK) hf_dke_decrypt_clear(out);
    return st;
}

void hf_dke_decrypt_clear(struct hf_dke_decrypt *d)
{
    if (d == NULL) return;
    OPENSSL_clear_free(d->value, d->len);
    d->value = NULL;
    d->len = 0;
}

bool hf_dke_cache_exp_format(int64_t t, char out[20])
{
    time_t tt = (time_t)t;
    struct tm tm;

    if ((int64_t)tt != t || gmtime_r(&tt, &tm) == NULL || tm.tm_year + 1900 > 9999 ||
        tm.tm_year + 1900 < 0)
        return false;
    return strftime(out, 20, "%Y-%m-%dT%H:%M:%S", &tm) == 19;
}
