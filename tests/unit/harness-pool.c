#include "hf-build.h"

#include "tests/unit/harness-pool.h"

#include "pkcs11/core/hsm.h"
#include "pkcs11/core/pool-clone.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int hf_test_shim_copy(const char *shim, const char *dir, const char *name, const char *module,
                      const char *conf, char *path, size_t len)
{
    char cmd[3 * PATH_MAX + 64];
    FILE *fp;

    if (access(shim, R_OK) != 0) {
        fprintf(stderr, "%s not built: the cases that need it do not run\n", shim);
        return 0;
    }
    snprintf(path, len, "%s/%s", dir, name);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", shim, path);
    if (system(cmd) != 0) return -1;
    snprintf(cmd, sizeof(cmd), "%s.conf", path);
    if ((fp = fopen(cmd, "w")) == NULL) return -1;
    fprintf(fp, "module = %s\n%s", module, conf != NULL ? conf : "");
    return fclose(fp) == 0 ? 1 : -1;
}

CK_RV hf_test_pool_add(struct hf_core *core, const struct hf_actor *who, const char *module,
                       const char *name, enum hf_pool_mode mode, const char *label_a,
                       const char *label_b, const char *pin_env, unsigned concurrency)
{
    return hf_test_pool_add_modules(core, who, module, module, name, mode, label_a, label_b,
                                    pin_env, concurrency);
}

CK_RV hf_test_pool_add_modules(struct hf_core *core, const struct hf_actor *who, const char *module,
                               const char *module_b, const char *name, enum hf_pool_mode mode,
                               const char *label_a, const char *label_b, const char *pin_env,
                               unsigned concurrency)
{
    struct hf_store_pool p = {0};
    const char *labels[2] = {label_a, label_b}, *modules[2] = {module, module_b};
    CK_RV rv = CKR_HOST_MEMORY;

    p.name = strdup(name);
    p.mode = mode;
    p.n_members = label_b ? 2 : 1;
    if (p.name == NULL || (p.members = calloc(p.n_members, sizeof(*p.members))) == NULL) goto out;
    for (size_t i = 0; i < p.n_members; i++) {
        p.members[i].name = strdup(i == 0 ? "a" : "b");
        p.members[i].module_path = strdup(modules[i]);
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

struct plant {
    const char *label;
    CK_BBOOL extractable;
    const unsigned char *value;
    size_t len;
    int planted;
};

static CK_RV plant_fn(struct hf_hsm *hsm, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, void *arg)
{
    struct plant *p = arg;
    CK_ATTRIBUTE t[HF_POOL_TEMPLATE_MAX + 1];
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    size_t n;
    CK_RV rv;

    hf_hsm_object_forget(hsm, CKO_SECRET_KEY, p->label);
    if ((rv = hf_hsm_object_find(hsm, s, CKO_SECRET_KEY, p->label, &h)) != CKR_OK) return rv;
    if (h == CK_INVALID_HANDLE) return CKR_OK;
    rv = f->C_DestroyObject(s, h);
    hf_hsm_object_forget(hsm, CKO_SECRET_KEY, p->label);
    if (rv != CKR_OK) return rv;
    n = hf_pool_key_template(HF_POOL_OBJ_AES, p->label, t);
    for (size_t i = 0; i < n; i++)
        if (t[i].type == CKA_EXTRACTABLE) t[i].pValue = &p->extractable;
    t[n++] = (CK_ATTRIBUTE){CKA_VALUE, (void *)p->value, (CK_ULONG)p->len};
    if ((rv = f->C_CreateObject(s, t, (CK_ULONG)n, &h)) == CKR_OK) p->planted++;
    return rv;
}

CK_RV hf_test_pool_plant(const char *module, const char *const *tokens, size_t n, const char *label,
                         bool extractable, const unsigned char *value, size_t len, int *planted)
{
    struct plant p = {label, extractable ? CK_TRUE : CK_FALSE, value, len, 0};
    CK_RV rv = CKR_OK;

    for (size_t i = 0; i < n && rv == CKR_OK; i++) {
        struct hf_hsm *hsm = NULL;
        rv = hf_hsm_open(module, NULL, tokens[i], HF_TEST_USER_PIN, &hsm);
        if (rv == CKR_OK) rv = hf_hsm_run(hsm, plant_fn, &p);
        hf_hsm_close(hsm);
    }
    *planted = p.planted;
    return rv;
}
