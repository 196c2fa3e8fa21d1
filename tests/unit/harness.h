/* Shared by the CUnit suites: a throw-away embedded key store per test program, and a runner.
 *
 * hf_test_env_setup makes a temp dir holding a SoftHSMv2 config and token, a root KEK, a SQLite
 * store and a holdfast.conf (written to env->conf_path, and exported as HOLDFAST_CONF so a
 * dlopen'ed module finds it), through hf_core_init with HF_TEST_SO_PIN / HF_TEST_USER_PIN.
 * Teardown removes the dir. */
#ifndef HF_TEST_HARNESS_H
#define HF_TEST_HARNESS_H

#include <limits.h>
#include <stdbool.h>
#include <CUnit/CUnit.h>

#include "pkcs11/core/config.h"

/* Built with AddressSanitizer (gcc defines the first, clang answers the second). ASan's allocator
 * is not fork-safe while another thread is inside it: a child forked then may deadlock there. */
#if defined(__SANITIZE_ADDRESS__)
#define HF_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HF_TEST_UNDER_ASAN 1
#endif
#endif

#define HF_TEST_SO_PIN "so-secret-5678"
#define HF_TEST_USER_PIN "user-secret-1234"
/* The gateway's PIN (hf_core_init_gateway_pin): a user login that may attach request contexts. */
#define HF_TEST_GATEWAY_PIN "gateway-secret-9012"

struct hf_test_env {
    char dir[PATH_MAX];
    char conf_path[PATH_MAX];
    struct hf_config cfg;
};

/* 0 on success; prints why and returns -1 otherwise. extra_conf (may be NULL) is appended to the
 * generated holdfast.conf, e.g. "[audit]\nsuccess_events = false\n". */
int hf_test_env_setup(struct hf_test_env *env, const char *extra_conf);
void hf_test_env_teardown(struct hf_test_env *env);

/* Reading an env's audit log (json-c's json_object, declared here so that a suite that never
 * reads one needs no json-c headers). */
struct json_object;
/* The last record of operation op in the log at path, parsed; NULL if none. Caller:
 * json_object_put. */
struct json_object *hf_test_audit_find_last(const char *path, const char *op);
/* Member name of o as a string; "" when absent, so a mismatch fails an assertion, not the run. */
const char *hf_test_json_str(struct json_object *o, const char *name);
/* The records in the log at path of key key_name (its "key_name"), operation op, result rv, whose
 * line also holds text (a mechanism's name, say; quote it to match it whole); -1 when the log
 * cannot be read. */
int hf_test_audit_count(const char *path, const char *key_name, const char *op, const char *text,
                        unsigned long rv);

/* A bare SoftHSMv2 setup for suites that test the HSM seam alone (no core, no key store): a temp
 * dir named after prefix holding an empty token directory and a softhsm2.conf, exported as
 * SOFTHSM2_CONF (before the first dlopen: SoftHSMv2 reads it in C_Initialize). dir is a
 * canonical path; lock_path names the token lock file in it, for hf_hsm_* (hf_hsm makes the
 * file). */
struct hf_test_softhsm {
    char dir[PATH_MAX];
    char lock_path[PATH_MAX];
};

/* 0 on success; prints why and returns -1 otherwise. */
int hf_test_softhsm_setup(struct hf_test_softhsm *hsm, const char *prefix);
/* Removes the dir; tolerates a setup that failed or never ran. */
void hf_test_softhsm_teardown(struct hf_test_softhsm *hsm);

/* How many rounds to run of a loop that repeats work for races or load: n, but n / 8 (at least
 * 2) under valgrind, which runs one thread at a time 20-50 times slower. Memcheck sees a memory
 * error in the first rounds if at all; the plain and ASan runs keep every round for the races. */
int hf_test_rounds(int n);
/* For the few cases that leave out under valgrind work that another case already takes through
 * the same code (say why where it is used). */
bool hf_test_under_valgrind(void);

/* Registers suites, runs them in CUnit's basic mode (verbose), returns the process exit code:
 * 0 when every assertion passed, 1 otherwise (so automake counts failures). */
int hf_test_run(CU_SuiteInfo *suites);

#endif
