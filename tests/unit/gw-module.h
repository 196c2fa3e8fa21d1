/* For the gateway suites that run on the built module: load holdfast-pkcs11.so, then open it as
 * holdfastd does (hf_gw_p11_open by path, with the gateway PIN), so hf_p11_* and hf_keys_* work
 * as in the daemon. */
#ifndef HF_TEST_GW_MODULE_H
#define HF_TEST_GW_MODULE_H

#include "gateway/p11.h"
#include "tests/unit/harness.h"
#include "tests/unit/module-loader.h"

#include <dlfcn.h>
#include <stdio.h>

/* 0 once the environment is made and the module open through the gateway; -1 (reason printed)
 * otherwise. holdfastd opens the module by path: the one the loader found, as dladdr names it. */
static inline int hf_test_gw_module_open(struct hf_test_env *env, struct hf_test_module *mod)
{
    char err[256] = "";
    Dl_info info;
    void *sym;

    if (hf_test_env_setup(env, NULL) != 0 || hf_test_module_dlopen(mod) != 0) return -1;
    if (!(sym = dlsym(mod->dl, "C_GetFunctionList")) || !dladdr(sym, &info) || !info.dli_fname)
        return -1;
    if (!hf_gw_p11_open(info.dli_fname, NULL, HF_TEST_GATEWAY_PIN, err, sizeof(err))) {
        fprintf(stderr, "hf_gw_p11_open: %s\n", err);
        return -1;
    }
    return 0;
}

static inline void hf_test_gw_module_close(struct hf_test_env *env, struct hf_test_module *mod)
{
    hf_gw_p11_close();
    hf_test_module_unload(mod);
    hf_test_env_teardown(env);
}

#endif /* HF_TEST_GW_MODULE_H */
