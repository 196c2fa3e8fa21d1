/* The Key Access Justifications reason enum and the per-key policy over it (kaj.h). */
#include "hf-build.h"

#include "gateway/plugins/gcp-ekm/kaj.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* google.cloud.kms.v1.AccessReason, in number order. */
static const char *const reason_names[HF_EKM_REASON_COUNT] = {
    "REASON_UNSPECIFIED",
    "CUSTOMER_INITIATED_SUPPORT",
    "GOOGLE_INITIATED_SERVICE",
    "THIRD_PARTY_DATA_REQUEST",
    "GOOGLE_INITIATED_REVIEW",
    "CUSTOMER_INITIATED_ACCESS",
    "GOOGLE_INITIATED_SYSTEM_OPERATION",
    "REASON_NOT_EXPECTED",
    "MODIFIED_CUSTOMER_INITIATED_ACCESS",
    "MODIFIED_GOOGLE_INITIATED_SYSTEM_OPERATION",
    "GOOGLE_RESPONSE_TO_PRODUCTION_ALERT",
    "CUSTOMER_AUTHORIZED_WORKFLOW_SERVICING",
};

#define ALL_REASONS ((UINT32_C(1) << HF_EKM_REASON_COUNT) - 1)

struct hf_ekm_kaj_policy hf_ekm_kaj_default(void)
{
    struct hf_ekm_kaj_policy p = {ALL_REASONS, true};

    return p;
}

const char *hf_ekm_reason_name(int reason)
{
    if (reason < 0 || reason >= HF_EKM_REASON_COUNT) return NULL;
    return reason_names[reason];
}

int hf_ekm_reason_parse(const char *text)
{
    size_t len;

    if (text == NULL || *text == '\0') return HF_EKM_REASON_ABSENT;
    len = strlen(text);
    if (strspn(text, "0123456789") == len) {
        /* Two digits at most: 011 and 12345678901 are not enum numbers anyone sends. */
        if (len > 2) return HF_EKM_REASON_ABSENT;
        int n = atoi(text);
        return n < HF_EKM_REASON_COUNT ? n : HF_EKM_REASON_ABSENT;
    }
    for (int i = 0; i < HF_EKM_REASON_COUNT; i++)
        if (strcmp(text, reason_names[i]) == 0) return i;
    return HF_EKM_REASON_ABSENT;
}

bool hf_ekm_kaj_allows(const struct hf_ekm_kaj_policy *policy, int reason)
{
    if (policy == NULL) return false;
    if (reason < 0 || reason >= HF_EKM_REASON_COUNT) return policy->absent_allowed;
    return (policy->allowed >> reason) & 1u;
}

bool hf_ekm_kaj_reasons_parse(const char *value, uint32_t *allowed, char *err, size_t errlen)
{
    char word[64];
    const char *p = value;

    if (value == NULL || allowed == NULL) return false;
    *allowed = 0;
    while (*p) {
        size_t n = 0;
        int r;

        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        while (*p && *p != ',' && !isspace((unsigned char)*p)) {
            if (n + 1 < sizeof(word)) word[n] = *p;
            n++;
            p++;
        }
        if (n == 0) break;
        if (n >= sizeof(word)) {
            snprintf(err, errlen, "reasons: an entry is too long to be a reason");
            return false;
        }
        word[n] = '\0';
        if (strcmp(word, "all") == 0) {
            *allowed = ALL_REASONS;
            continue;
        }
        if (strcmp(word, "none") == 0) continue;
        if ((r = hf_ekm_reason_parse(word)) == HF_EKM_REASON_ABSENT) {
            snprintf(err, errlen,
                     "reasons: '%s' is no access reason (a name such as "
                     "CUSTOMER_INITIATED_ACCESS, a number 0..11, all or none)",
                     word);
            return false;
        }
        *allowed |= UINT32_C(1) << r;
    }
    return true;
}
