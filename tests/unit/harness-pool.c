#include "hf-build.h"

#include "tests/unit/harness-pool.h"

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
