/* HSM pools for the unit tests that need one (test-source-pool, test-core-pool-status). */
#ifndef HF_TEST_HARNESS_POOL_H
#define HF_TEST_HARNESS_POOL_H

#include "pkcs11/core/core.h"
#include "tests/unit/harness.h"

/* Adds pool name in mode through hf_core_pool_add: member "a" on token label_a and, when
 * label_b is not NULL, member "b" on label_b, both on module with their PIN in the environment
 * variable pin_env and at most concurrency calls in flight. */
CK_RV hf_test_pool_add(struct hf_core *core, const struct hf_actor *who, const char *module,
                       const char *name, enum hf_pool_mode mode, const char *label_a,
                       const char *label_b, const char *pin_env, unsigned concurrency);
/* The same with member b on a module of its own (module_b: a copy of the fault shim, say). */
CK_RV hf_test_pool_add_modules(struct hf_core *core, const struct hf_actor *who, const char *module,
                               const char *module_b, const char *name, enum hf_pool_mode mode,
                               const char *label_a, const char *label_b, const char *pin_env,
                               unsigned concurrency);

/* A copy of the fault shim (shim: the built .so) at dir/name, one copy per member
 * (tests/shim/README.md), over module: its config "module = MODULE", then conf (whole lines, or
 * NULL). Its path in path. 1: made; 0: the shim is not built (printed: the caller goes without);
 * -1: failed. */
int hf_test_shim_copy(const char *shim, const char *dir, const char *name, const char *module,
                      const char *conf, char *path, size_t len);

/* A pool suite's start: env set up (hf_test_env_setup), the user PIN in pin_env, tokens token_a
 * and token_b in its SoftHSMv2, *core opened on it, then pool "p1" (plain, members a and b on the
 * two tokens) and pool "dead" (one member on a token that does not exist: it never opens), each
 * member at most concurrency calls in flight. CKR_OK, or the first failure (printed). */
CK_RV hf_test_pool_suite_setup(struct hf_test_env *env, struct hf_core **core,
                               const struct hf_actor *who, const char *token_a, const char *token_b,
                               const char *pin_env, unsigned concurrency);

/* Replaces the secret key labelled label on each token named in tokens (n of them, through
 * module) by one made with the pool's template for an AES key (hf_pool_key_template), extractable
 * as given (a plain pool's keys are not, a clone pool's are), and value (len bytes): a pool key
 * whose bytes a test knows. *planted: how many tokens held one. */
CK_RV hf_test_pool_plant(const char *module, const char *const *tokens, size_t n, const char *label,
                         bool extractable, const unsigned char *value, size_t len, int *planted);

#endif
