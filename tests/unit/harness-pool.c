#include "hf-build.h"

#include "tests/unit/harness-pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CK_RV hf_test_pool_add(struct hf_core *core, const struct hf_actor *who, const char *module,
                       const char *name, enum hf_pool_mode mode, const char *label_a,
                       const char *label_b, const char *pin_env, unsigned concurrency)
{
    struct hf_store_pool p = {0};
    const char *labels[2] = {label_a, label_b};
    CK_RV rv = CKR_HOST_MEMORY;

    p.name = strdup(name);
    p.mode = mode;
    p.n_members = label_b ? 2 : 1;
    if (p.name == NULL || (p.members = calloc(p.n_members, sizeof(*p.members))) == NULL) goto out;
    for (size_t i = 0; i < p.n_members; i++) {
        p.members[i].name = strdup(i == 0 ? "a" : "b");
        p.members[i].module_path = strdup(module);
        p.members[i].token_label = strdup(labels[i]);
        p.members[i].pin_env = strdup(pin_env);
        p.members[i].concurrency = concurrency;
    }
    rv = hf_core_pool_add(core, &p, who);
out:
    hf_store_pool_clear(&p);
    return rv;
}

CK_RV hf_test_pool_suite_setup(struct hf_test_env *env, struct hf_core **core,
                               const struct hf_actor *who, const char *token_a, const char *token_b,
                               const char *pin_env, unsigned concurrency)
{
    const char *module;
    CK_RV rv;

    if (hf_test_env_setup(env, NULL) != 0) return CKR_GENERAL_ERROR;
    module = env->cfg.hsm_module;
    setenv(pin_env, HF_TEST_USER_PIN, 1);
    rv = hf_hsm_token_ensure(module, NULL, token_a, HF_TEST_SO_PIN, HF_TEST_USER_PIN);
    if (rv == CKR_OK)
        rv = hf_hsm_token_ensure(module, NULL, token_b, HF_TEST_SO_PIN, HF_TEST_USER_PIN);
    if (rv == CKR_OK) rv = hf_core_open(&env->cfg, core);
    if (rv == CKR_OK)
        rv = hf_test_pool_add(*core, who, module, "p1", HF_POOL_MODE_PLAIN, token_a, token_b,
                              pin_env, concurrency);
    if (rv == CKR_OK)
        rv = hf_test_pool_add(*core, who, module, "dead", HF_POOL_MODE_PLAIN, "hf-no-such-token",
                              NULL, pin_env, concurrency);
    if (rv != CKR_OK) fprintf(stderr, "pool suite setup failed: 0x%lx\n", (unsigned long)rv);
    return rv;
}
