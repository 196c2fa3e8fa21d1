/* HSM pools for the unit tests that need one (test-source-pool, test-core-pool-status). */
#ifndef HF_TEST_HARNESS_POOL_H
#define HF_TEST_HARNESS_POOL_H

#include "pkcs11/core/core.h"

/* Adds pool name in mode through hf_core_pool_add: member "a" on token label_a and, when
 * label_b is not NULL, member "b" on label_b, both on module with their PIN in the environment
 * variable pin_env and at most concurrency calls in flight. */
CK_RV hf_test_pool_add(struct hf_core *core, const struct hf_actor *who, const char *module,
                       const char *name, enum hf_pool_mode mode, const char *label_a,
                       const char *label_b, const char *pin_env, unsigned concurrency);

#endif
