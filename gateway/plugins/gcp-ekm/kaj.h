/* Key Access Justifications (specs/google-ekm.md, "Key Access Justifications"): the reason enum
 * Cloud EKM sends in additionalContext.accessReasonContext.reason, and one key's policy over it.
 * Pure. */
#ifndef HF_EKM_KAJ_H
#define HF_EKM_KAJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* REASON_UNSPECIFIED 0 .. CUSTOMER_AUTHORIZED_WORKFLOW_SERVICING 11. */
#define HF_EKM_REASON_COUNT 12
/* No reason given, or one this build does not know (the spec: an unknown value counts as
 * absent, so a reason Google adds later meets the "absent" rule, not a guess). */
#define HF_EKM_REASON_ABSENT (-1)

/* Which reasons a key admits: a bit per reason number, and whether a call without one may
 * pass. The default (hf_ekm_kaj_default) admits everything. */
struct hf_ekm_kaj_policy {
    uint32_t allowed;
    bool absent_allowed;
};

struct hf_ekm_kaj_policy hf_ekm_kaj_default(void);
/* The reason's enum name, or NULL outside 0..11. */
const char *hf_ekm_reason_name(int reason);
/* A reason by enum name (exact, as proto3 JSON writes it) or decimal number: 0..11, or
 * HF_EKM_REASON_ABSENT when it names none of them. */
int hf_ekm_reason_parse(const char *text);
bool hf_ekm_kaj_allows(const struct hf_ekm_kaj_policy *policy, int reason);
/* A config value: "all", "none", or a list of names and numbers (commas or spaces). false with
 * a message for an unknown name. */
bool hf_ekm_kaj_reasons_parse(const char *value, uint32_t *allowed, char *err, size_t errlen);

#endif /* HF_EKM_KAJ_H */
