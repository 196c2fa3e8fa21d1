#include "hf-build.h"

#include "harness.h"

#include <ftw.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pkcs11/core/core.h"

/* A fresh dir $TMPDIR/<prefix>-XXXXXX into dir (PATH_MAX bytes). */
static int tmpdir_make(char *dir, const char *prefix)
{
    const char *tmp = getenv("TMPDIR");

    if (snprintf(dir, PATH_MAX, "%s/%s-XXXXXX", tmp && tmp[0] ? tmp : "/tmp", prefix) >= PATH_MAX) {
        fprintf(stderr, "%s: temp dir path too long\n", prefix);
        dir[0] = '\0';
        return -1;
    }
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        dir[0] = '\0';
        return -1;
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    if (remove(path) != 0) perror(path);
    return 0; /* remove what can be removed */
}

static void tmpdir_remove(char *dir)
{
    if (dir[0] != '\0') nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    dir[0] = '\0';
}

static int conf_write(const char *path, const char *dir, const char *extra_conf)
{
    FILE *fp = fopen(path, "w");

    if (fp == NULL) return -1;
    fprintf(fp, "# Written by the unit-test harness.\n[holdfast]\nstate_dir = %s\n", dir);
    /* Every login hashes the PIN: at the default 100000 rounds that is 2.4 s under valgrind, most
     * of the suites' time there. The floor keeps the same code path. */
    fputs("[token]\npin_iterations = 1000\n", fp);
    if (extra_conf != NULL) fputs(extra_conf, fp);
    /* No periodic checkpoint lands between the records a test counts; close still writes one. */
    fputs("\n[audit]\ncheckpoint_interval_ms = 3600000\n", fp);
    return fclose(fp) == 0 ? 0 : -1;
}

int hf_test_env_setup(struct hf_test_env *env, const char *extra_conf)
{
    char err[512] = "";
    CK_RV rv;

    memset(env, 0, sizeof(*env));
    if (tmpdir_make(env->dir, "hf-test") != 0) return -1;
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
    if (rv == CKR_OK) {
        bool changed;
        rv = hf_core_init_gateway_pin(&env->cfg, HF_TEST_GATEWAY_PIN, false, &changed);
    }
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

void hf_test_env_teardown(struct hf_test_env *env)
{
    const char *conf = getenv("HOLDFAST_CONF");

    if (env == NULL) return;
    if (conf != NULL && strcmp(conf, env->conf_path) == 0) unsetenv("HOLDFAST_CONF");
    tmpdir_remove(env->dir);
    hf_config_free(&env->cfg);
    env->conf_path[0] = '\0';
}

int hf_test_softhsm_setup(struct hf_test_softhsm *hsm, const char *prefix)
{
    char conf[PATH_MAX + 32], tokens[PATH_MAX + 32], real[PATH_MAX];
    FILE *fp;

    memset(hsm, 0, sizeof(*hsm));
    if (tmpdir_make(hsm->dir, prefix) != 0) return -1;
    /* Canonical, so lock_path compares equal to the /proc/self/fd links of the open lock. */
    if (realpath(hsm->dir, real) != NULL) memcpy(hsm->dir, real, sizeof(real));
    snprintf(tokens, sizeof(tokens), "%s/tokens", hsm->dir);
    snprintf(conf, sizeof(conf), "%s/softhsm2.conf", hsm->dir);
    if (snprintf(hsm->lock_path, sizeof(hsm->lock_path), "%s/hsm.lock", hsm->dir) >=
            (int)sizeof(hsm->lock_path) ||
        mkdir(tokens, 0700) != 0 || (fp = fopen(conf, "w")) == NULL) {
        perror("hf_test_softhsm_setup");
        hf_test_softhsm_teardown(hsm);
        return -1;
    }
    fprintf(fp,
            "directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n"
            "slots.removable = false\nlibrary.reset_on_fork = true\n",
            tokens);
    if (fclose(fp) != 0) {
        perror(conf);
        hf_test_softhsm_teardown(hsm);
        return -1;
    }
    setenv("SOFTHSM2_CONF", conf, 1);
    return 0;
}

void hf_test_softhsm_teardown(struct hf_test_softhsm *hsm)
{
    if (hsm == NULL) return;
    tmpdir_remove(hsm->dir);
    hsm->lock_path[0] = '\0';
}

json_object *hf_test_audit_find_last(const char *path, const char *op)
{
    FILE *fp = fopen(path, "r");
    char line[8192], want[128];
    json_object *found = NULL;

    if (fp == NULL) return NULL;
    snprintf(want, sizeof(want), "\"op\":\"%s\"", op);
    while (fgets(line, sizeof(line), fp) != NULL) {
        if (strstr(line, want) == NULL) continue;
        json_object_put(found);
        found = json_tokener_parse(line);
    }
    fclose(fp);
    return found;
}

int hf_test_audit_count(const char *path, const char *key_name, const char *op, const char *text,
                        unsigned long rv)
{
    char line[8192], want_key[96], want_op[64], want_rv[40];
    FILE *f = fopen(path, "r");
    int n = 0;

    if (f == NULL) return -1;
    snprintf(want_key, sizeof(want_key), "\"key_name\":\"%s\"", key_name);
    snprintf(want_op, sizeof(want_op), "\"op\":\"%s\"", op);
    snprintf(want_rv, sizeof(want_rv), "\"result\":\"0x%lx\"", rv);
    while (fgets(line, sizeof(line), f) != NULL)
        if (strstr(line, want_key) && strstr(line, want_op) && strstr(line, text) &&
            strstr(line, want_rv))
            n++;
    fclose(f);
    return n;
}

const char *hf_test_json_str(json_object *o, const char *name)
{
    json_object *v;

    return json_object_object_get_ex(o, name, &v) ? json_object_get_string(v) : "";
}
