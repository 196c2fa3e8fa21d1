#include "hf-build.h"

#include "harness.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pkcs11/core/core.h"

static int conf_write(const char *path, const char *dir, const char *extra_conf)
{
    FILE *fp = fopen(path, "w");

    if (fp == NULL) return -1;
    fprintf(fp, "# Written by the unit-test harness.\n[holdfast]\nstate_dir = %s\n", dir);
    if (extra_conf != NULL) fputs(extra_conf, fp);
    return fclose(fp) == 0 ? 0 : -1;
}

int hf_test_env_setup(struct hf_test_env *env, const char *extra_conf)
{
    const char *tmp = getenv("TMPDIR");
    char err[512] = "";
    CK_RV rv;

    memset(env, 0, sizeof(*env));
    snprintf(env->dir, sizeof(env->dir), "%s/hf-test-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(env->dir) == NULL) {
        perror("hf_test_env_setup: mkdtemp");
        return -1;
    }
    if (snprintf(env->conf_path, sizeof(env->conf_path), "%s/holdfast.conf", env->dir) >=
        (int)sizeof(env->conf_path)) {
        fprintf(stderr, "hf_test_env_setup: %s: path too long\n", env->dir);
        goto fail;
    }
    if (conf_write(env->conf_path, env->dir, extra_conf) != 0) {
        perror("hf_test_env_setup: holdfast.conf");
        goto fail;
    }
    rv = hf_config_load(env->conf_path, &env->cfg, err, sizeof(err));
    if (rv != CKR_OK) {
        fprintf(stderr, "hf_test_env_setup: config: %s (0x%lx)\n", err, (unsigned long)rv);
        goto fail;
    }
    /* Only the root KEK (AES) is made here: no RSA key generation, so setup stays fast. */
    rv = hf_core_init(&env->cfg, HF_TEST_SO_PIN, HF_TEST_USER_PIN, false);
    if (rv != CKR_OK) {
        fprintf(stderr, "hf_test_env_setup: hf_core_init: 0x%lx\n", (unsigned long)rv);
        goto fail;
    }
    /* A module loaded with dlopen finds its store through this. */
    setenv("HOLDFAST_CONF", env->conf_path, 1);
    return 0;
fail:
    hf_test_env_teardown(env);
    return -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (remove(path) != 0) perror(path);
    return 0; /* remove what can be removed */
}

void hf_test_env_teardown(struct hf_test_env *env)
{
    const char *conf = getenv("HOLDFAST_CONF");

    if (env == NULL) return;
    if (conf != NULL && strcmp(conf, env->conf_path) == 0) unsetenv("HOLDFAST_CONF");
    if (env->dir[0] != '\0') nftw(env->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    hf_config_free(&env->cfg);
    env->dir[0] = '\0';
    env->conf_path[0] = '\0';
}
