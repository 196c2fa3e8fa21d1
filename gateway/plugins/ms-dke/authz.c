/* The caller's identity and the key's allowlist (authz.h). */
#include "hf-build.h"

#include "gateway/plugins/ms-dke/authz.h"

#include <string.h>
#include <strings.h>

static const char *claim_string(const struct json_object *claims, const char *name)
{
    struct json_object *v = NULL;

    if (!json_object_object_get_ex(claims, name, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* C's isspace() set, as .NET's String.Trim() takes at least these. */
static const char blank[] = " \t\n\v\f\r";

/* value trimmed into out; false when nothing is left or it does not fit. */
static bool trimmed(const char *value, char *out, size_t outlen)
{
    size_t len;

    if (value == NULL) return false;
    value += strspn(value, blank);
    len = strlen(value);
    while (len > 0 && memchr(blank, value[len - 1], sizeof(blank) - 1) != NULL)
        len--;
    if (len == 0 || len >= outlen) return false;
    memcpy(out, value, len);
    out[len] = '\0';
    return true;
}

bool hf_dke_identity(const struct json_object *claims, char *out, size_t outlen)
{
    if (claims == NULL || out == NULL) return false;
    /* email first, as the reference reads it; upn is what v1 tokens of a work account carry. */
    if (trimmed(claim_string(claims, "email"), out, outlen)) return true;
    return trimmed(claim_string(claims, "upn"), out, outlen);
}

static bool is_allowed(const struct hf_dke_key *key, const char *who)
{
    for (size_t i = 0; i < key->nallowed; i++)
        if (strcasecmp(key->allowed[i], who) == 0) return true;
    return false;
}

static bool groups_allowed(const struct hf_dke_key *key, const struct json_object *claims)
{
    struct json_object *groups = NULL;
    size_t n;

    if (!json_object_object_get_ex(claims, "groups", &groups) ||
        !json_object_is_type(groups, json_type_array))
        return false;
    n = json_object_array_length(groups);
    for (size_t i = 0; i < n; i++) {
        struct json_object *g = json_object_array_get_idx(groups, i);
        if (json_object_is_type(g, json_type_string) && is_allowed(key, json_object_get_string(g)))
            return true;
    }
    return false;
}

bool hf_dke_key_allows(const struct hf_dke_key *key, const struct json_object *claims)
{
    char who[320];

    if (key == NULL || claims == NULL) return false;
    switch (key->mode) {
    case HF_DKE_AUTHZ_EMAIL:
        return hf_dke_identity(claims, who, sizeof(who)) && is_allowed(key, who);
    case HF_DKE_AUTHZ_GROUP:
        return groups_allowed(key, claims);
    default:
        return false;
    }
}

bool hf_dke_scope_has(const struct json_object *claims, const char *scope)
{
    const char *scp = claim_string(claims, "scp");
    size_t n = scope ? strlen(scope) : 0;

    if (scp == NULL || n == 0) return false;
    for (const char *p = scp; *p;) {
        size_t len;

        p += strspn(p, " ");
        len = strcspn(p, " ");
        if (len == n && strncmp(p, scope, n) == 0) return true;
        p += len;
    }
    return false;
}
