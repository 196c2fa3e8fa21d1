/* Secondary authorization (specs/aws-xks.md, "Secondary authorization"): per store, ordered
 * allow/deny rules over the request's metadata, matched with fnmatch globs; the first rule that
 * matches decides and none matching denies. GetHealthStatus never comes here (the spec excludes
 * it). */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/config.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The names rules use are the spec's own field names, so a rule reads like a request. */
static const char *const field_names[HF_XKS_FIELD_COUNT] = {
    [HF_XKS_FIELD_KEY_ID] = "keyId",
    [HF_XKS_FIELD_PRINCIPAL] = "awsPrincipalArn",
    [HF_XKS_FIELD_KMS_KEY_ARN] = "kmsKeyArn",
    [HF_XKS_FIELD_OPERATION] = "kmsOperation",
    [HF_XKS_FIELD_VIA_SERVICE] = "kmsViaService",
    [HF_XKS_FIELD_SOURCE_VPC] = "awsSourceVpc",
    [HF_XKS_FIELD_SOURCE_VPCE] = "awsSourceVpce",
};

void hf_xks_rule_clear(struct hf_xks_rule *rule)
{
    if (rule == NULL) return;
    free(rule->name);
    for (int i = 0; i < HF_XKS_FIELD_COUNT; i++)
        free(rule->glob[i]);
    memset(rule, 0, sizeof(*rule));
}

static bool rule_name_is_valid(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 64) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

bool hf_xks_rule_parse(const char *text, bool allow, struct hf_xks_rule *rule, char *err,
                       size_t errlen)
{
    char *copy, *save = NULL, *tok, *eq;
    bool ok = false;
    int f;

    memset(rule, 0, sizeof(*rule));
    rule->allow = allow;
    if (text == NULL || (copy = strdup(text)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    tok = strtok_r(copy, " \t", &save);
    if (tok == NULL || strchr(tok, '=') != NULL || !rule_name_is_valid(tok)) {
        snprintf(err, errlen, "a rule is NAME FIELD=GLOB ...; NAME is 1..64 of A-Za-z0-9._-");
        goto done;
    }
    if ((rule->name = strdup(tok)) == NULL) goto oom;
    while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
        if ((eq = strchr(tok, '=')) == NULL) {
            snprintf(err, errlen, "rule %s: '%.64s' is not FIELD=GLOB", rule->name, tok);
            goto done;
        }
        *eq = '\0';
        for (f = 0; f < HF_XKS_FIELD_COUNT; f++)
            if (!strcmp(tok, field_names[f])) break;
        if (f == HF_XKS_FIELD_COUNT) {
            snprintf(err, errlen,
                     "rule %s: unknown field '%.64s' (keyId, awsPrincipalArn, kmsKeyArn, "
                     "kmsOperation, kmsViaService, awsSourceVpc, awsSourceVpce)",
                     rule->name, tok);
            goto done;
        }
        if (rule->glob[f] != NULL) {
            snprintf(err, errlen, "rule %s: %s is given twice", rule->name, tok);
            goto done;
        }
        if ((rule->glob[f] = strdup(eq + 1)) == NULL) goto oom;
    }
    ok = true;
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
done:
    free(copy);
    if (!ok) hf_xks_rule_clear(rule);
    return ok;
}

static bool rule_matches(const struct hf_xks_rule *rule,
                         const char *const values[HF_XKS_FIELD_COUNT])
{
    for (int f = 0; f < HF_XKS_FIELD_COUNT; f++) {
        if (rule->glob[f] == NULL) continue;
        /* No FNM_PATHNAME: '*' spans the '/' and ':' of ARNs. */
        if (fnmatch(rule->glob[f], values[f] ? values[f] : "", 0) != 0) return false;
    }
    return true;
}

const struct hf_xks_rule *hf_xks_authz_match(const struct hf_xks_store *store,
                                             const char *const values[HF_XKS_FIELD_COUNT])
{
    if (store == NULL || values == NULL) return NULL;
    for (size_t i = 0; i < store->nrules; i++)
        if (rule_matches(&store->rules[i], values)) return &store->rules[i];
    return NULL;
}
