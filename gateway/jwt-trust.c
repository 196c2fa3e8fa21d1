/* The issuer settings every token-checking plugin shares (plugin.h, struct hf_jwt_trust): one
 * reader, so that an option means the same in [gcp-ekm:NAME] as in [ms-dke]. */
#include "hf-build.h"

#include "gateway/jwt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

HF_PLUGIN_EXPORT int hf_jwt_trust_set(struct hf_jwt_trust *t, const char *name, const char *value,
                                      char *err, size_t errlen)
{
    bool ok;

    if (strcmp(name, "issuers") == 0) {
        ok = hf_conf_list_set(value, &t->issuers, &t->nissuers, err, errlen);
    } else if (strcmp(name, "jwks_allow") == 0) {
        ok = hf_conf_list_set(value, &t->jwks_allow, &t->njwks_allow, err, errlen);
    } else if (strcmp(name, "jwks") == 0) {
        ok = hf_conf_string_set(&t->jwks, value, err, errlen);
    } else if (strcmp(name, "jwks_ca") == 0) {
        /* A relative path means the config file's directory, as every other path option. */
        char *path = hf_conf_path(value);

        if ((ok = path != NULL)) {
            free(t->jwks_ca);
            t->jwks_ca = path;
        } else {
            snprintf(err, errlen, "out of memory");
        }
    } else {
        return 0;
    }
    return ok ? 1 : -1;
}

HF_PLUGIN_EXPORT void hf_jwt_trust_free(struct hf_jwt_trust *t)
{
    hf_conf_list_free(t->issuers, t->nissuers);
    hf_conf_list_free(t->jwks_allow, t->njwks_allow);
    free(t->jwks);
    free(t->jwks_ca);
    memset(t, 0, sizeof(*t));
}

HF_PLUGIN_EXPORT bool hf_jwt_trust_add(struct hf_jwt_verifier *v, const struct hf_jwt_trust *t,
                                       const struct hf_jwt_issuer *tmpl, char *err, size_t errlen)
{
    struct hf_outbound_policy fetch = {
        .ca_file = t->jwks_ca,
        .allow_cidrs = (const char *const *)t->jwks_allow,
        .nallow_cidrs = t->njwks_allow,
    };

    for (size_t i = 0; i < t->nissuers; i++) {
        struct hf_jwt_issuer iss = *tmpl;
        char why[256];

        iss.issuer = t->issuers[i];
        iss.jwks = t->jwks;
        iss.fetch = &fetch; /* hf_jwt_verifier_add copies what it keeps */
        if (!hf_jwt_verifier_add(v, &iss, why, sizeof(why))) {
            snprintf(err, errlen, "jwks %s: %s", t->jwks, why);
            return false;
        }
    }
    return true;
}
