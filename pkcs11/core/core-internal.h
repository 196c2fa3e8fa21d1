/* The body of struct hf_core, shared by core.c (lifecycle: init, open, close) and core-key.c
 * (key management). Included by those two files only. */
#ifndef HF_CORE_INTERNAL_H
#define HF_CORE_INTERNAL_H

#include "core.h"
#include "policy.h"

struct hf_core {
    const struct hf_config *cfg; /* borrowed */
    struct hf_store *store;
    struct hf_hsm *hsm;
    struct hf_local *local; /* borrows hsm */
    struct hf_audit *audit;
    struct hf_policy *policy; /* borrows hsm; its hooks are installed in store */
};

#endif
