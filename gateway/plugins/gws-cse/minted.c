/* The claims of the tokens we mint (minted.h). */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/minted.h"
#include "gateway/plugins/gws-cse/checks.h"
#include "gateway/plugins/gws-cse/internal.h"

/* Adds name = value (a string); false out of memory. */
static bool put_string(struct json_object *o, const char *name, const char *value)
{
    struct json_object *v = json_object_new_string(value);

    if (!v) return false;
    if (json_object_object_add(o, name, v) == 0) return true;
    json_object_put(v);
    return false;
}

static bool put_times(struct json_object *o, int64_t now, int64_t ttl)
{
    struct json_object *iat = json_object_new_int64(now), *exp = json_object_new_int64(now + ttl);

    if (iat && json_object_object_add(o, "iat", iat) == 0) iat = NULL;
    if (exp && json_object_object_add(o, "exp", exp) == 0) exp = NULL;
    json_object_put(iat);
    json_object_put(exp);
    return json_object_object_get_ex(o, "iat", NULL) && json_object_object_get_ex(o, "exp", NULL);
}

struct json_object *hf_cse_delegated_claims(const char *kacls_url, const struct json_object *authn,
                                            const char *delegated_to, const char *resource_name,
                                            int64_t now)
{
    const char *email = authn ? hf_cse_claim(authn, "email") : NULL;
    const char *google_email = authn ? hf_cse_claim(authn, "google_email") : NULL;
    struct json_object *c;

    if (!kacls_url || !email || !email[0] || !delegated_to || !delegated_to[0]) return NULL;
    if (!(c = json_object_new_object())) return NULL;
    if (!put_string(c, "iss", kacls_url) || !put_string(c, "aud", kacls_url) ||
        !put_string(c, "email", email) ||
        (google_email && google_email[0] && !put_string(c, "google_email", google_email)) ||
        !put_string(c, "delegated_to", delegated_to) ||
        !put_string(c, "resource_name", resource_name ? resource_name : "") ||
        !put_times(c, now, HF_CSE_DELEGATED_TTL_S)) {
        json_object_put(c);
        return NULL;
    }
    return c;
}

struct json_object *hf_cse_migration_claims(const char *kacls_url, const char *peer_url,
                                            const char *resource_name, int64_t now)
{
    struct json_object *c;

    if (!kacls_url || !peer_url || !(c = json_object_new_object())) return NULL;
    if (!put_string(c, "iss", kacls_url) || !put_string(c, "aud", HF_CSE_MIGRATION_AUDIENCE) ||
        !put_string(c, "kacls_url", peer_url) ||
        !put_string(c, "resource_name", resource_name ? resource_name : "") ||
        !put_times(c, now, HF_CSE_MIGRATION_TTL_S)) {
        json_object_put(c);
        return NULL;
    }
    return c;
}
