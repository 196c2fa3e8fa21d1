#include "hf-build.h"

#include "harness.h"

#include <dirent.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pkcs11/core/core.h"
#include "pkcs11/core/store.h"

static const struct hf_actor cli = {"cli", "uid:4242"};

/* ---- helpers ---- */

/* Verified with the token of the env whose log path is (its holdfast.conf is beside it). */
static uint64_t audit_count(const char *path)
{
    struct hf_audit_verify_result res;
    struct hf_config cfg;
    char conf[PATH_MAX], err[256];
    const char *slash = strrchr(path, '/');

    memset(&res, 0, sizeof(res));
    snprintf(conf, sizeof(conf), "%.*s/holdfast.conf", (int)(slash - path), path);
    CU_ASSERT_EQUAL_FATAL(hf_config_load(conf, &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_audit_verify(&cfg, path, true, false, &res), CKR_OK);
    hf_config_free(&cfg);
    if (res.bad_line != 0) fprintf(stderr, "\n  audit line %lu: %s\n", res.bad_line, res.reason);
    return res.records;
}

/* The last record of the log, parsed; NULL if none. Caller: json_object_put. */
static json_object *audit_last(const char *path)
{
    FILE *fp = fopen(path, "r");
    char line[8192], last[8192] = "";

    if (fp == NULL) return NULL;
    while (fgets(line, sizeof(line), fp) != NULL)
        if (line[0] == '{') snprintf(last, sizeof(last), "%s", line);
    fclose(fp);
    return json_tokener_parse(last);
}

/* Exactly one record was added since n0, for op with result rv. */
static void audit_expect_one(const char *path, uint64_t n0, const char *op, CK_RV rv)
{
    json_object *last = audit_last(path);
    char result[32];

    snprintf(result, sizeof(result), "0x%lx", (unsigned long)rv);
    CU_ASSERT_EQUAL(audit_count(path), n0 + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(last);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(last, "op"), op);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(last, "result"), result);
    if (strcmp(hf_test_json_str(last, "op"), op) != 0 ||
        strcmp(hf_test_json_str(last, "result"), result) != 0)
        fprintf(stderr, "\n  last record: %s\n", json_object_to_json_string(last));
    json_object_put(last);
}

/* Runs expr, which must return want and leave exactly one audit record of op. */
#define AUDITED(path, op, want, expr)                                                              \
    do {                                                                                           \
        uint64_t n0_ = audit_count(path);                                                          \
        CK_RV rv_ = (expr);                                                                        \
        CU_ASSERT_EQUAL(rv_, (CK_RV)(want));                                                       \
        if (rv_ != (CK_RV)(want))                                                                  \
            fprintf(stderr, "\n  %s: got 0x%lx, want 0x%lx\n", #expr, (unsigned long)rv_,          \
                    (unsigned long)(want));                                                        \
        audit_expect_one(path, n0_, op, want);                                                     \
    } while (0)

static unsigned file_mode(const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0) return 0;
    return (unsigned)(st.st_mode & 07777);
}

static char *file_read(const char *path)
{
    FILE *fp = fopen(path, "r");
    char *buf = calloc(1, 4096);

    if (fp != NULL && buf != NULL) fread(buf, 1, 4095, fp);
    if (fp != NULL) fclose(fp);
    return buf;
}

static char *meta_get(struct hf_core *core, const char *name)
{
    char *v = NULL;

    CU_ASSERT_EQUAL(hf_store_meta_get(hf_core_store(core), name, &v), CKR_OK);
    return v;
}

static struct hf_key_spec spec_of(const char *name, enum hf_alg alg, unsigned bits)
{
    struct hf_key_spec spec = {.name = name, .alg = alg, .bits = bits};
    return spec;
}

/* Encrypts and decrypts a line with AES-GCM under version v. */
static void aes_round_trip(struct hf_core *core, const struct hf_key_version *v)
{
    static const unsigned char iv[12] = {1, 2, 3};
    const char *msg = "attack at dawn";
    unsigned char ct[64], pt[64];
    size_t ctlen = sizeof(ct), ptlen = sizeof(pt);
    struct hf_material *m = NULL;

    CU_ASSERT_EQUAL_FATAL(hf_core_material(core, v, &m), CKR_OK);
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(m, iv, sizeof(iv), NULL, 0, 16, (const unsigned char *)msg,
                                       strlen(msg), ct, &ctlen),
                    CKR_OK);
    CU_ASSERT_EQUAL(ctlen, strlen(msg) + 16);
    CU_ASSERT_EQUAL(hf_aes_gcm_decrypt(m, iv, sizeof(iv), NULL, 0, 16, ct, ctlen, pt, &ptlen),
                    CKR_OK);
    CU_ASSERT_EQUAL(ptlen, strlen(msg));
    CU_ASSERT_EQUAL(memcmp(pt, msg, strlen(msg)), 0);
    hf_material_unref(m);
}

/* Signs with the private material and verifies with the stored public key. */
static void sign_round_trip(struct hf_core *core, const struct hf_key_version *v,
                            enum hf_rsa_padding padding)
{
    struct hf_asym_params p = {.padding = padding, .md = "SHA256"};
    const unsigned char data[] = "to be signed";
    unsigned char sig[1024];
    size_t siglen = sizeof(sig);
    struct hf_material *m = NULL;
    EVP_PKEY *pub = NULL;

    CU_ASSERT_PTR_NOT_NULL_FATAL(v->public_der);
    CU_ASSERT_EQUAL_FATAL(hf_core_material(core, v, &m), CKR_OK);
    CU_ASSERT_EQUAL(hf_asym_sign(m, &p, data, sizeof(data), sig, &siglen), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_public_from_der(v->public_der, v->public_der_len, &pub), CKR_OK);
    CU_ASSERT_EQUAL(hf_asym_verify(pub, &p, data, sizeof(data), sig, siglen), CKR_OK);
    sig[siglen / 2] ^= 1;
    CU_ASSERT_NOT_EQUAL(hf_asym_verify(pub, &p, data, sizeof(data), sig, siglen), CKR_OK);
    EVP_PKEY_free(pub);
    hf_material_unref(m);
}

/* ---- init and open (each test makes its own key store) ---- */

static void test_init_twice_keeps_pins_kek_and_files(void)
{
    struct hf_test_env env;
    struct hf_core *core = NULL;
    struct hf_key_version v = {0};
    struct hf_key_spec spec = spec_of("before-reinit", HF_ALG_AES, 256);
    char *pin1, *so1, *conf1, *serial1, *upin1, *sopin1;
    char *pin2, *so2, *conf2;
    uint64_t records;

    CU_ASSERT_EQUAL_FATAL(hf_test_env_setup(&env, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_key_create(core, &spec, &cli, NULL, &v), CKR_OK);
    serial1 = meta_get(core, HF_META_TOKEN_SERIAL);
    upin1 = meta_get(core, HF_META_PIN_USER);
    sopin1 = meta_get(core, HF_META_PIN_SO);
    hf_core_close(core);
    core = NULL;
    pin1 = file_read(env.cfg.hsm_pin_file);
    so1 = file_read(env.cfg.hsm_so_pin_file);
    conf1 = file_read(env.cfg.softhsm2_conf);
    records = audit_count(env.cfg.audit_path);

    /* Other PINs without reset: nothing changes. */
    CU_ASSERT_EQUAL(hf_core_init(&env.cfg, "other-so-pin", "other-user-pin", false), CKR_OK);
    pin2 = file_read(env.cfg.hsm_pin_file);
    so2 = file_read(env.cfg.hsm_so_pin_file);
    conf2 = file_read(env.cfg.softhsm2_conf);
    CU_ASSERT_STRING_EQUAL(pin1, pin2);
    CU_ASSERT_STRING_EQUAL(so1, so2);
    CU_ASSERT_STRING_EQUAL(conf1, conf2);
    CU_ASSERT_EQUAL(strlen(pin1), 33); /* 16 random bytes in hex, and a newline */
    CU_ASSERT_EQUAL(audit_count(env.cfg.audit_path), records);

    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    {
        char *serial2 = meta_get(core, HF_META_TOKEN_SERIAL);
        char *upin2 = meta_get(core, HF_META_PIN_USER);
        char *sopin2 = meta_get(core, HF_META_PIN_SO);

        CU_ASSERT_STRING_EQUAL(serial1, serial2);
        CU_ASSERT_EQUAL(strlen(serial2), 16);
        CU_ASSERT_STRING_EQUAL(upin1, upin2);
        CU_ASSERT_STRING_EQUAL(sopin1, sopin2);
        free(serial2);
        free(upin2);
        free(sopin2);
    }
    CU_ASSERT_EQUAL(
        hf_core_pin_check(core, HF_USER_NORMAL, HF_TEST_USER_PIN, strlen(HF_TEST_USER_PIN)),
        CKR_OK);
    /* The root KEK is the same one: the key made before still unwraps. */
    aes_round_trip(core, &v);
    hf_core_close(core);
    hf_key_version_clear(&v);
    free(pin1), free(so1), free(conf1), free(serial1), free(upin1), free(sopin1);
    free(pin2), free(so2), free(conf2);
    hf_test_env_teardown(&env);
}

static void test_init_reset_replaces_the_token_pins(void)
{
    struct hf_test_env env;
    struct hf_core *core = NULL;
    json_object *last;
    uint64_t records;

    CU_ASSERT_EQUAL_FATAL(hf_test_env_setup(&env, NULL), 0);
    records = audit_count(env.cfg.audit_path);
    CU_ASSERT_EQUAL(hf_core_init(&env.cfg, "new-so-pin", "new-user-pin", true), CKR_OK);
    /* The PIN change is audited. */
    CU_ASSERT(audit_count(env.cfg.audit_path) > records);
    last = hf_test_audit_find_last(env.cfg.audit_path, "token.init");
    CU_ASSERT_PTR_NOT_NULL_FATAL(last);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(last, "detail"), "so_pin=set user_pin=set");
    json_object_put(last);
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_pin_check(core, HF_USER_NORMAL, "new-user-pin", 12), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_pin_check(core, HF_USER_SO, "new-so-pin", 10), CKR_OK);
    CU_ASSERT_EQUAL(
        hf_core_pin_check(core, HF_USER_NORMAL, HF_TEST_USER_PIN, strlen(HF_TEST_USER_PIN)),
        CKR_PIN_INCORRECT);
    hf_core_close(core);
    hf_test_env_teardown(&env);
}

static void test_init_refuses_bad_arguments(void)
{
    struct hf_config cfg;
    char dir[] = "/tmp/hf-test-badinit-XXXXXX";

    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    CU_ASSERT_EQUAL(hf_core_init(NULL, "so-pin", "user-pin", false), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL_FATAL(hf_config_set_defaults(&cfg, dir), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_init(&cfg, "abc", "user-pin", false), CKR_PIN_LEN_RANGE);
    /* A fresh store needs both PINs. */
    CU_ASSERT_EQUAL(hf_core_init(&cfg, "so-pin-1", NULL, false), CKR_ARGUMENTS_BAD);
    hf_config_free(&cfg);
    CU_ASSERT_EQUAL(system("rm -rf /tmp/hf-test-badinit-*"), 0);
}

static void test_open_before_init_is_not_recognised(void)
{
    struct hf_config cfg;
    struct hf_core *core = (struct hf_core *)&cfg; /* must be reset to NULL */
    char dir[] = "/tmp/hf-test-noinit-XXXXXX";
    struct hf_store *store = NULL;
    FILE *fp;

    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    CU_ASSERT_EQUAL_FATAL(hf_config_set_defaults(&cfg, dir), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_open(&cfg, &core), CKR_TOKEN_NOT_RECOGNIZED);
    CU_ASSERT_PTR_NULL(core);
    /* A store without token PINs is not an initialised one either. */
    CU_ASSERT_EQUAL_FATAL(hf_store_open(cfg.store_path, &store), CKR_OK);
    hf_store_close(store);
    fp = fopen(cfg.hsm_pin_file, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fputs("1234\n", fp);
    fclose(fp);
    chmod(cfg.hsm_pin_file, 0600);
    CU_ASSERT_EQUAL(hf_core_open(&cfg, &core), CKR_TOKEN_NOT_RECOGNIZED);
    CU_ASSERT_PTR_NULL(core);
    CU_ASSERT_EQUAL(hf_core_open(NULL, &core), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_core_open(&cfg, NULL), CKR_ARGUMENTS_BAD);
    hf_config_free(&cfg);
    CU_ASSERT_EQUAL(system("rm -rf /tmp/hf-test-noinit-*"), 0);
}

static void test_secrets_are_private_files(void)
{
    struct hf_test_env env;
    struct hf_core *core = NULL;
    char tokens[PATH_MAX + 16];

    CU_ASSERT_EQUAL_FATAL(hf_test_env_setup(&env, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    snprintf(tokens, sizeof(tokens), "%s/tokens", env.cfg.state_dir);
    CU_ASSERT_EQUAL(file_mode(env.cfg.state_dir), 0700);
    CU_ASSERT_EQUAL(file_mode(tokens), 0700);
    CU_ASSERT_EQUAL(file_mode(env.cfg.store_path), 0600);
    CU_ASSERT_EQUAL(file_mode(env.cfg.hsm_pin_file), 0600);
    CU_ASSERT_EQUAL(file_mode(env.cfg.hsm_so_pin_file), 0600);
    CU_ASSERT_EQUAL(file_mode(env.cfg.audit_path), 0600);
    hf_core_close(core);
    hf_test_env_teardown(&env);
}

/* The token files of the embedded default's SoftHSMv2 token (one directory under tokens/). */
static int token_file_path(const struct hf_test_env *env, char *out, size_t len)
{
    char tokens[PATH_MAX + 16];
    struct dirent *e;
    DIR *d;
    int found = -1;

    snprintf(tokens, sizeof(tokens), "%s/tokens", env->cfg.state_dir);
    if (!(d = opendir(tokens))) return -1;
    while ((e = readdir(d)) != NULL && found != 0)
        if (e->d_name[0] != '.') {
            found = snprintf(out, len, "%s/%s/token.object", tokens, e->d_name) < (int)len
                        ? access(out, F_OK)
                        : -1;
        }
    closedir(d);
    return found;
}

static void test_open_repairs_a_token_cut_short_by_a_killed_login(void)
{
    struct hf_test_env env;
    struct hf_core *core = NULL;
    struct hf_key key = {0};
    struct hf_key_version v = {0};
    struct hf_material *m = NULL;
    struct hf_key_spec spec = {.name = "survivor", .alg = HF_ALG_AES, .bits = 256};
    char token[PATH_MAX + 64];
    struct stat st;

    CU_ASSERT_EQUAL_FATAL(hf_test_env_setup(&env, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &spec, &cli, &key, &v), CKR_OK);
    hf_core_close(core);
    core = NULL;
    /* What SoftHSMv2 leaves when a process dies between its truncate and its write. */
    CU_ASSERT_EQUAL_FATAL(token_file_path(&env, token, sizeof(token)), 0);
    CU_ASSERT_EQUAL_FATAL(truncate(token, 0), 0);
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    CU_ASSERT(stat(token, &st) == 0 && st.st_size > 0);
    CU_ASSERT_EQUAL(hf_core_material(core, &v, &m), CKR_OK);
    hf_material_unref(m);
    hf_core_close(core);
    hf_key_clear(&key);
    hf_key_version_clear(&v);
    hf_test_env_teardown(&env);
}

static void test_state_dir_is_created_0700(void)
{
    struct hf_config cfg;
    char dir[] = "/tmp/hf-test-mkdir-XXXXXX", sub[64];

    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(sub, sizeof(sub), "%s/a/b/state", dir);
    CU_ASSERT_EQUAL_FATAL(hf_config_set_defaults(&cfg, sub), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_init(&cfg, HF_TEST_SO_PIN, HF_TEST_USER_PIN, false), CKR_OK);
    CU_ASSERT_EQUAL(file_mode(sub), 0700);
    CU_ASSERT_EQUAL(file_mode(cfg.softhsm2_conf), 0600);
    hf_config_free(&cfg);
    CU_ASSERT_EQUAL(system("rm -rf /tmp/hf-test-mkdir-*"), 0);
}

static void test_failures_are_recorded_without_success_events(void)
{
    struct hf_test_env env;
    struct hf_core *core = NULL;
    struct hf_key_spec spec = spec_of("quiet", HF_ALG_AES, 256);
    uint64_t n0;

    CU_ASSERT_EQUAL_FATAL(hf_test_env_setup(&env, "[audit]\nsuccess_events = false\n"), 0);
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    n0 = audit_count(env.cfg.audit_path);
    CU_ASSERT_EQUAL(hf_core_key_create(core, &spec, &cli, NULL, NULL), CKR_OK);
    CU_ASSERT_EQUAL(audit_count(env.cfg.audit_path), n0);
    AUDITED(env.cfg.audit_path, "key.create", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_key_create(core, &spec, &cli, NULL, NULL));
    hf_core_close(core);
    hf_test_env_teardown(&env);
}

/* ---- one key store shared by the key-management tests ---- */

static struct hf_test_env env;
static struct hf_core *core;
static const char *audit_path;

static int keys_init(void)
{
    if (hf_test_env_setup(&env, NULL) != 0) return -1;
    audit_path = env.cfg.audit_path;
    return hf_core_open(&env.cfg, &core) == CKR_OK ? 0 : -1;
}

static int keys_cleanup(void)
{
    hf_core_close(core);
    hf_test_env_teardown(&env);
    return 0;
}

static void test_pins_right_wrong_and_out_of_range(void)
{
    const char *user = HF_TEST_USER_PIN, *so = HF_TEST_SO_PIN;
    char long_pin[300];

    memset(long_pin, 'x', sizeof(long_pin));
    CU_ASSERT_TRUE(hf_core_pin_is_set(core, HF_USER_NORMAL));
    CU_ASSERT_TRUE(hf_core_pin_is_set(core, HF_USER_SO));
    CU_ASSERT_EQUAL(hf_core_pin_check(core, HF_USER_NORMAL, user, strlen(user)), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_pin_check(core, HF_USER_SO, so, strlen(so)), CKR_OK);
    /* Each PIN is its user's only. */
    CU_ASSERT_EQUAL(hf_core_pin_check(core, HF_USER_SO, user, strlen(user)), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(hf_core_pin_check(core, HF_USER_NORMAL, user, strlen(user) - 1),
                    CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(hf_core_pin_check(core, HF_USER_NORMAL, "abc", 3), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(hf_core_pin_check(core, HF_USER_NORMAL, long_pin, 256), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(hf_core_pin_check(core, 7, user, strlen(user)), CKR_USER_TYPE_INVALID);
    CU_ASSERT_EQUAL(hf_core_pin_check(NULL, HF_USER_NORMAL, user, strlen(user)), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_core_pin_set(core, HF_USER_NORMAL, "abc", 3), CKR_PIN_LEN_RANGE);
    CU_ASSERT_EQUAL(hf_core_pin_set(core, HF_USER_NORMAL, long_pin, 256), CKR_PIN_LEN_RANGE);
    CU_ASSERT_EQUAL(hf_core_pin_set(core, HF_USER_NORMAL, NULL, 8), CKR_ARGUMENTS_BAD);
}

static void test_pin_set_replaces_the_pin(void)
{
    const char *user = HF_TEST_USER_PIN;
    /* 255 bytes, with a NUL inside: PINs are bytes. */
    char long_pin[255];

    memset(long_pin, 'y', sizeof(long_pin));
    long_pin[10] = '\0';
    CU_ASSERT_EQUAL_FATAL(hf_core_pin_set(core, HF_USER_NORMAL, long_pin, sizeof(long_pin)),
                          CKR_OK);
    CU_ASSERT_EQUAL(hf_core_pin_check(core, HF_USER_NORMAL, long_pin, sizeof(long_pin)), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_pin_check(core, HF_USER_NORMAL, long_pin, 10), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(hf_core_pin_check(core, HF_USER_NORMAL, user, strlen(user)), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(hf_core_pin_set(core, HF_USER_NORMAL, user, strlen(user)), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_pin_check(core, HF_USER_NORMAL, user, strlen(user)), CKR_OK);
}

static void test_pin_record_is_salted_pbkdf2(void)
{
    char *rec = meta_get(core, HF_META_PIN_USER);
    char *so = meta_get(core, HF_META_PIN_SO);

    CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
    /* The rounds are [token] pin_iterations, which the harness sets to its floor. */
    CU_ASSERT_EQUAL(strncmp(rec, "pbkdf2-sha256$1000$", 19), 0);
    CU_ASSERT_PTR_NULL(strstr(rec, HF_TEST_USER_PIN));
    /* Two PINs never share a salt. */
    CU_ASSERT_NOT_EQUAL(strncmp(rec, so, 19 + 24), 0);
    free(rec);
    free(so);
}

static void test_create_aes_256_is_usable(void)
{
    struct hf_key key = {0};
    struct hf_key_version v = {0};
    struct hf_key_spec spec = spec_of("aes-one", HF_ALG_AES, 256);
    json_object *last;

    AUDITED(audit_path, "key.create", CKR_OK, hf_core_key_create(core, &spec, &cli, &key, &v));
    CU_ASSERT_TRUE(hf_uuid_is_valid(key.uuid));
    CU_ASSERT_STRING_EQUAL(key.name, "aes-one");
    CU_ASSERT_EQUAL(key.alg, HF_ALG_AES);
    CU_ASSERT_EQUAL(key.bits, 256);
    CU_ASSERT_EQUAL(key.usage, hf_usage_default(HF_ALG_AES));
    CU_ASSERT_EQUAL(key.state, HF_STATE_ACTIVE);
    CU_ASSERT_STRING_EQUAL(key.owner, "uid:4242");
    CU_ASSERT_STRING_EQUAL(key.source, "local");
    CU_ASSERT_EQUAL(key.current_version, 1);
    CU_ASSERT_EQUAL(v.version, 1);
    CU_ASSERT_STRING_EQUAL(v.key_uuid, key.uuid);
    CU_ASSERT_TRUE(hf_uuid_is_valid(v.uuid));
    CU_ASSERT_STRING_NOT_EQUAL(v.uuid, key.uuid);
    CU_ASSERT_PTR_NOT_NULL(v.wrapped);
    CU_ASSERT_PTR_NULL(v.public_der);
    /* The record names the key, the actor and what was made. */
    last = audit_last(audit_path);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(last, "key"), key.uuid);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(last, "key_name"), "aes-one");
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(last, "api"), "cli");
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(last, "caller"), "uid:4242");
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(last, "detail"),
                           "AES-256 usage=encrypt,decrypt,wrap,unwrap");
    json_object_put(last);
    aes_round_trip(core, &v);
    hf_key_clear(&key);
    hf_key_version_clear(&v);
}

static void test_create_rsa_2048_signs(void)
{
    struct hf_key_version v = {0};
    struct hf_key_spec spec = spec_of("rsa-one", HF_ALG_RSA, 2048);

    AUDITED(audit_path, "key.create", CKR_OK, hf_core_key_create(core, &spec, &cli, NULL, &v));
    sign_round_trip(core, &v, HF_RSA_PKCS1);
    hf_key_version_clear(&v);
}

static void test_create_ec_p256_signs(void)
{
    struct hf_key key = {0};
    struct hf_key_version v = {0};
    struct hf_key_spec spec = spec_of("ec-one", HF_ALG_EC, 256);

    AUDITED(audit_path, "key.create", CKR_OK, hf_core_key_create(core, &spec, NULL, &key, &v));
    CU_ASSERT_EQUAL(key.usage, HF_USAGE_SIGN | HF_USAGE_VERIFY);
    sign_round_trip(core, &v, 0);
    hf_key_clear(&key);
    hf_key_version_clear(&v);
}

static void test_create_keeps_usage_state_labels_owner(void)
{
    struct hf_label labels[] = {{"team", "payments"}, {"env", "prod"}};
    struct hf_key_spec spec = spec_of("aes-labelled", HF_ALG_AES, 128);
    struct hf_key key = {0};

    spec.usage = HF_USAGE_ENCRYPT;
    spec.state = HF_STATE_PRE_ACTIVE;
    spec.owner = "alice";
    spec.exportable = true;
    spec.labels = labels;
    spec.n_labels = 2;
    AUDITED(audit_path, "key.create", CKR_OK, hf_core_key_create(core, &spec, &cli, NULL, NULL));
    CU_ASSERT_EQUAL_FATAL(hf_store_key_get(hf_core_store(core), "aes-labelled", &key), CKR_OK);
    CU_ASSERT_EQUAL(key.usage, HF_USAGE_ENCRYPT);
    CU_ASSERT_EQUAL(key.state, HF_STATE_PRE_ACTIVE);
    CU_ASSERT_STRING_EQUAL(key.owner, "alice");
    CU_ASSERT_TRUE(key.exportable);
    CU_ASSERT_EQUAL(key.bits, 128);
    CU_ASSERT_STRING_EQUAL(hf_key_label_get(&key, "team"), "payments");
    CU_ASSERT_STRING_EQUAL(hf_key_label_get(&key, "env"), "prod");
    hf_key_clear(&key);
}

static void test_duplicate_name_is_refused_and_audited(void)
{
    struct hf_key_spec spec = spec_of("aes-dup", HF_ALG_AES, 256);
    struct hf_key *keys = NULL;
    size_t n = 0, dups = 0;

    AUDITED(audit_path, "key.create", CKR_OK, hf_core_key_create(core, &spec, &cli, NULL, NULL));
    AUDITED(audit_path, "key.create", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_key_create(core, &spec, &cli, NULL, NULL));
    CU_ASSERT_EQUAL_FATAL(hf_store_key_list(hf_core_store(core), &keys, &n), CKR_OK);
    for (size_t i = 0; i < n; i++) {
        dups += strcmp(keys[i].name, "aes-dup") == 0;
        hf_key_clear(&keys[i]);
    }
    free(keys);
    CU_ASSERT_EQUAL(dups, 1);
}

static void test_bad_specs_are_refused_and_audited(void)
{
    struct hf_key_spec spec = spec_of("bad name with spaces", HF_ALG_AES, 256);
    struct hf_label bad_label[] = {{"bad label", "x"}};

    AUDITED(audit_path, "key.create", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_key_create(core, &spec, &cli, NULL, NULL));
    spec = spec_of("aes-odd-size", HF_ALG_AES, 200);
    AUDITED(audit_path, "key.create", CKR_KEY_SIZE_RANGE,
            hf_core_key_create(core, &spec, &cli, NULL, NULL));
    spec = spec_of("rsa-small", HF_ALG_RSA, 1024);
    AUDITED(audit_path, "key.create", CKR_KEY_SIZE_RANGE,
            hf_core_key_create(core, &spec, &cli, NULL, NULL));
    spec = spec_of("ec-odd", HF_ALG_EC, 512);
    AUDITED(audit_path, "key.create", CKR_KEY_SIZE_RANGE,
            hf_core_key_create(core, &spec, &cli, NULL, NULL));
    spec = spec_of("aes-bad-usage", HF_ALG_AES, 256);
    spec.usage = 0x4000;
    AUDITED(audit_path, "key.create", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_key_create(core, &spec, &cli, NULL, NULL));
    spec = spec_of("aes-born-dead", HF_ALG_AES, 256);
    spec.state = HF_STATE_DESTROYED;
    AUDITED(audit_path, "key.create", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_key_create(core, &spec, &cli, NULL, NULL));
    spec = spec_of("aes-bad-label", HF_ALG_AES, 256);
    spec.labels = bad_label;
    spec.n_labels = 1;
    AUDITED(audit_path, "key.create", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_key_create(core, &spec, &cli, NULL, NULL));
    AUDITED(audit_path, "key.create", CKR_ARGUMENTS_BAD,
            hf_core_key_create(core, NULL, &cli, NULL, NULL));
    CU_ASSERT_EQUAL(hf_core_key_create(NULL, &spec, &cli, NULL, NULL), CKR_ARGUMENTS_BAD);
}

static void test_import_aes_keeps_the_bytes(void)
{
    unsigned char raw[32];
    struct hf_key_spec spec = spec_of("aes-imported", HF_ALG_AES, 256);
    struct hf_key_version v = {0};
    struct hf_material *m = NULL;
    const unsigned char *secret;
    size_t len = 0;

    for (size_t i = 0; i < sizeof(raw); i++)
        raw[i] = (unsigned char)(i * 7 + 1);
    AUDITED(audit_path, "key.import", CKR_OK,
            hf_core_key_import(core, &spec, raw, sizeof(raw), &cli, NULL, &v));
    CU_ASSERT_EQUAL_FATAL(hf_core_material(core, &v, &m), CKR_OK);
    secret = hf_material_secret(m, &len);
    CU_ASSERT_EQUAL(len, sizeof(raw));
    CU_ASSERT_EQUAL(memcmp(secret, raw, sizeof(raw)), 0);
    hf_material_unref(m);
    hf_key_version_clear(&v);
    spec = spec_of("aes-imported-short", HF_ALG_AES, 256);
    AUDITED(audit_path, "key.import", CKR_ARGUMENTS_BAD,
            hf_core_key_import(core, &spec, NULL, 0, &cli, NULL, NULL));
    CU_ASSERT_NOT_EQUAL(hf_core_key_import(core, &spec, raw, 16, &cli, NULL, NULL), CKR_OK);
}

static void test_rotate_adds_a_version_and_keeps_the_old(void)
{
    struct hf_key_spec spec = spec_of("aes-rotating", HF_ALG_AES, 256);
    struct hf_key key = {0};
    struct hf_key_version v1 = {0}, v2 = {0}, old = {0};
    json_object *last;

    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &spec, &cli, &key, &v1), CKR_OK);
    AUDITED(audit_path, "key.rotate", CKR_OK, hf_core_key_rotate(core, "aes-rotating", &cli, &v2));
    CU_ASSERT_EQUAL(v2.version, 2);
    CU_ASSERT_STRING_EQUAL(v2.key_uuid, key.uuid);
    CU_ASSERT_STRING_NOT_EQUAL(v2.uuid, v1.uuid);
    last = audit_last(audit_path);
    CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(last, "version")), 2);
    json_object_put(last);
    hf_key_clear(&key);
    CU_ASSERT_EQUAL_FATAL(hf_store_key_get(hf_core_store(core), v1.key_uuid, &key), CKR_OK);
    CU_ASSERT_EQUAL(key.current_version, 2);
    /* Version 1 is still there for old ciphertexts, and different from version 2. */
    CU_ASSERT_EQUAL_FATAL(hf_store_version_find(hf_core_store(core), key.uuid, 1, &old), CKR_OK);
    aes_round_trip(core, &old);
    aes_round_trip(core, &v2);
    {
        struct hf_material *m1 = NULL, *m2 = NULL;
        size_t l1 = 0, l2 = 0;

        CU_ASSERT_EQUAL(hf_core_material(core, &old, &m1), CKR_OK);
        CU_ASSERT_EQUAL(hf_core_material(core, &v2, &m2), CKR_OK);
        if (m1 && m2)
            CU_ASSERT_NOT_EQUAL(
                memcmp(hf_material_secret(m1, &l1), hf_material_secret(m2, &l2), 32), 0);
        hf_material_unref(m1);
        hf_material_unref(m2);
    }
    AUDITED(audit_path, "key.rotate", CKR_OK, hf_core_key_rotate(core, key.uuid, &cli, NULL));
    AUDITED(audit_path, "key.rotate", CKR_KEY_HANDLE_INVALID,
            hf_core_key_rotate(core, "no-such-key", &cli, NULL));
    AUDITED(audit_path, "key.rotate", CKR_ARGUMENTS_BAD,
            hf_core_key_rotate(core, NULL, &cli, NULL));
    hf_key_clear(&key);
    hf_key_version_clear(&v1);
    hf_key_version_clear(&v2);
    hf_key_version_clear(&old);
}

static unsigned long state_of(const char *ref)
{
    struct hf_key key = {0};
    unsigned long state = 0;

    if (hf_store_key_get(hf_core_store(core), ref, &key) == CKR_OK) state = key.state;
    hf_key_clear(&key);
    return state;
}

static void test_state_moves_follow_kmip(void)
{
    struct hf_key_spec spec = spec_of("aes-states", HF_ALG_AES, 256);

    spec.state = HF_STATE_PRE_ACTIVE;
    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &spec, &cli, NULL, NULL), CKR_OK);
    AUDITED(audit_path, "key.set_state", CKR_OK,
            hf_core_key_set_state(core, "aes-states", HF_STATE_ACTIVE, &cli));
    CU_ASSERT_EQUAL(state_of("aes-states"), HF_STATE_ACTIVE);
    AUDITED(audit_path, "key.set_state", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_key_set_state(core, "aes-states", HF_STATE_PRE_ACTIVE, &cli));
    AUDITED(audit_path, "key.set_state", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_key_set_state(core, "aes-states", HF_STATE_ACTIVE, &cli));
    AUDITED(audit_path, "key.set_state", CKR_OK,
            hf_core_key_set_state(core, "aes-states", HF_STATE_DEACTIVATED, &cli));
    /* A deactivated key may still be rotated (its old data stays readable). */
    AUDITED(audit_path, "key.rotate", CKR_OK, hf_core_key_rotate(core, "aes-states", &cli, NULL));
    AUDITED(audit_path, "key.set_state", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_key_set_state(core, "aes-states", HF_STATE_ACTIVE, &cli));
    AUDITED(audit_path, "key.set_state", CKR_OK,
            hf_core_key_set_state(core, "aes-states", HF_STATE_COMPROMISED, &cli));
    CU_ASSERT_EQUAL(state_of("aes-states"), HF_STATE_COMPROMISED);
    AUDITED(audit_path, "key.rotate", CKR_KEY_FUNCTION_NOT_PERMITTED,
            hf_core_key_rotate(core, "aes-states", &cli, NULL));
    AUDITED(audit_path, "key.set_state", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_key_set_state(core, "aes-states", 99, &cli));
    AUDITED(audit_path, "key.set_state", CKR_KEY_HANDLE_INVALID,
            hf_core_key_set_state(core, "no-such-key", HF_STATE_ACTIVE, &cli));
    CU_ASSERT_EQUAL(state_of("aes-states"), HF_STATE_COMPROMISED);
}

static void test_destroy_erases_the_material(void)
{
    struct hf_key_spec spec = spec_of("aes-doomed", HF_ALG_AES, 256);
    struct hf_key_version v1 = {0}, v2 = {0}, again = {0};
    struct hf_material *m = NULL;

    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &spec, &cli, NULL, &v1), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_core_key_rotate(core, "aes-doomed", &cli, &v2), CKR_OK);
    aes_round_trip(core, &v1); /* cached now: destroy must evict it */
    AUDITED(audit_path, "key.destroy", CKR_OK, hf_core_key_destroy(core, "aes-doomed", &cli));
    CU_ASSERT_EQUAL(state_of("aes-doomed"), HF_STATE_DESTROYED);
    for (unsigned n = 1; n <= 2; n++) {
        CU_ASSERT_EQUAL_FATAL(hf_store_version_find(hf_core_store(core), v1.key_uuid, n, &again),
                              CKR_OK);
        CU_ASSERT_PTR_NULL(again.wrapped);
        CU_ASSERT_EQUAL(again.state, HF_STATE_DESTROYED);
        CU_ASSERT_NOT_EQUAL(hf_core_material(core, &again, &m), CKR_OK);
        CU_ASSERT_PTR_NULL(m);
        hf_key_version_clear(&again);
    }
    AUDITED(audit_path, "key.destroy", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_key_destroy(core, "aes-doomed", &cli));
    AUDITED(audit_path, "key.rotate", CKR_KEY_FUNCTION_NOT_PERMITTED,
            hf_core_key_rotate(core, "aes-doomed", &cli, NULL));
    AUDITED(audit_path, "key.set_state", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_key_set_state(core, "aes-doomed", HF_STATE_ACTIVE, &cli));
    AUDITED(audit_path, "key.destroy", CKR_KEY_HANDLE_INVALID,
            hf_core_key_destroy(core, "no-such-key", &cli));
    hf_key_version_clear(&v1);
    hf_key_version_clear(&v2);
}

static void test_set_state_destroyed_destroys(void)
{
    struct hf_key_spec spec = spec_of("ec-doomed", HF_ALG_EC, 384);
    struct hf_key key = {0};
    struct hf_key_version v = {0};

    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &spec, &cli, &key, NULL), CKR_OK);
    AUDITED(audit_path, "key.destroy", CKR_OK,
            hf_core_key_set_state(core, "ec-doomed", HF_STATE_DESTROYED, &cli));
    CU_ASSERT_EQUAL(state_of("ec-doomed"), HF_STATE_DESTROYED);
    CU_ASSERT_EQUAL_FATAL(hf_store_version_find(hf_core_store(core), key.uuid, 0, &v), CKR_OK);
    CU_ASSERT_PTR_NULL(v.wrapped);
    hf_key_version_clear(&v);
    hf_key_clear(&key);
}

static void test_labels_are_set_and_removed(void)
{
    struct hf_key_spec spec = spec_of("aes-labels", HF_ALG_AES, 256);
    struct hf_key key = {0};

    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &spec, &cli, NULL, NULL), CKR_OK);
    AUDITED(audit_path, "key.label_set", CKR_OK,
            hf_core_key_label_set(core, "aes-labels", "env", "prod", &cli));
    AUDITED(audit_path, "key.label_set", CKR_OK,
            hf_core_key_label_set(core, "aes-labels", "team", "blue", &cli));
    AUDITED(audit_path, "key.label_set", CKR_OK,
            hf_core_key_label_set(core, "aes-labels", "env", "staging", &cli));
    CU_ASSERT_EQUAL_FATAL(hf_store_key_get(hf_core_store(core), "aes-labels", &key), CKR_OK);
    CU_ASSERT_STRING_EQUAL(hf_key_label_get(&key, "env"), "staging");
    CU_ASSERT_STRING_EQUAL(hf_key_label_get(&key, "team"), "blue");
    hf_key_clear(&key);
    AUDITED(audit_path, "key.label_set", CKR_OK,
            hf_core_key_label_set(core, "aes-labels", "env", NULL, &cli));
    CU_ASSERT_EQUAL_FATAL(hf_store_key_get(hf_core_store(core), "aes-labels", &key), CKR_OK);
    CU_ASSERT_PTR_NULL(hf_key_label_get(&key, "env"));
    CU_ASSERT_STRING_EQUAL(hf_key_label_get(&key, "team"), "blue");
    hf_key_clear(&key);
    AUDITED(audit_path, "key.label_set", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_key_label_set(core, "aes-labels", "bad name", "x", &cli));
    AUDITED(audit_path, "key.label_set", CKR_ARGUMENTS_BAD,
            hf_core_key_label_set(core, "aes-labels", NULL, "x", &cli));
    AUDITED(audit_path, "key.label_set", CKR_KEY_HANDLE_INVALID,
            hf_core_key_label_set(core, "no-such-key", "env", "x", &cli));
}

static bool link_is_blocked(const char *type, const char *id)
{
    struct hf_link link = {0};
    bool blocked;

    CU_ASSERT_EQUAL(hf_store_link_get(hf_core_store(core), type, id, &link), CKR_OK);
    blocked = link.blocked;
    hf_link_clear(&link);
    return blocked;
}

static void test_links_are_added_blocked_and_unblocked(void)
{
    struct hf_key_spec spec = spec_of("aes-linked", HF_ALG_AES, 256);
    struct hf_key key = {0};
    struct hf_link link = {0};
    const char *xks = "arn:aws:kms:eu-west-1:111122223333:key/xks-1";
    json_object *last;

    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &spec, &cli, &key, NULL), CKR_OK);
    AUDITED(audit_path, "link.add", CKR_OK,
            hf_core_link_add(core, "aws-xks", xks, "aes-linked", &cli));
    CU_ASSERT_EQUAL_FATAL(hf_store_link_get(hf_core_store(core), "aws-xks", xks, &link), CKR_OK);
    CU_ASSERT_STRING_EQUAL(link.key_uuid, key.uuid);
    CU_ASSERT_FALSE(link.blocked);
    hf_link_clear(&link);
    AUDITED(audit_path, "link.block", CKR_OK,
            hf_core_link_set_blocked(core, "aws-xks", xks, true, &cli));
    CU_ASSERT_TRUE(link_is_blocked("aws-xks", xks));
    last = audit_last(audit_path);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(last, "key"), key.uuid);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(last, "key_name"), "aes-linked");
    json_object_put(last);
    AUDITED(audit_path, "link.unblock", CKR_OK,
            hf_core_link_set_blocked(core, "aws-xks", xks, false, &cli));
    CU_ASSERT_FALSE(link_is_blocked("aws-xks", xks));
    /* Every known type links; the same key may have several. */
    AUDITED(audit_path, "link.add", CKR_OK,
            hf_core_link_add(core, "gcp-ekm", "projects/p/keys/k", key.uuid, &cli));
    AUDITED(audit_path, "link.add", CKR_OK,
            hf_core_link_add(core, "oci", "ocid1.key", key.uuid, &cli));
    AUDITED(audit_path, "link.add", CKR_OK, hf_core_link_add(core, "sap", "sap-1", key.uuid, &cli));
    AUDITED(audit_path, "link.add", CKR_OK,
            hf_core_link_add(core, "gws-cse", "https://cse.example/k", key.uuid, &cli));
    AUDITED(audit_path, "link.add", CKR_OK, hf_core_link_add(core, "dke", "dke-1", key.uuid, &cli));
    AUDITED(audit_path, "link.add", CKR_ATTRIBUTE_VALUE_INVALID,
            hf_core_link_add(core, "aws-xks", xks, "aes-linked", &cli));
    AUDITED(audit_path, "link.add", CKR_ARGUMENTS_BAD,
            hf_core_link_add(core, "azure-byok", "x", "aes-linked", &cli));
    AUDITED(audit_path, "link.add", CKR_ARGUMENTS_BAD,
            hf_core_link_add(core, "aws-xks", "", "aes-linked", &cli));
    AUDITED(audit_path, "link.add", CKR_ARGUMENTS_BAD,
            hf_core_link_add(core, "aws-xks", "bad\nid", "aes-linked", &cli));
    AUDITED(audit_path, "link.add", CKR_KEY_HANDLE_INVALID,
            hf_core_link_add(core, "aws-xks", "xks-2", "no-such-key", &cli));
    AUDITED(audit_path, "link.block", CKR_KEY_HANDLE_INVALID,
            hf_core_link_set_blocked(core, "aws-xks", "no-such-link", true, &cli));
    AUDITED(audit_path, "link.unblock", CKR_ARGUMENTS_BAD,
            hf_core_link_set_blocked(core, "nope", xks, false, &cli));
    hf_key_clear(&key);
}

/* A link of a type only once the type is registered; registering is idempotent and audited. */
static void test_link_types_are_registered(void)
{
    struct hf_key key = {0};
    struct hf_key_spec spec = spec_of("aes-typed", HF_ALG_AES, 256);
    bool added = true;

    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &spec, &cli, &key, NULL), CKR_OK);
    AUDITED(audit_path, "link.add", CKR_ARGUMENTS_BAD,
            hf_core_link_add(core, "test-api", "t-1", key.uuid, &cli));
    AUDITED(audit_path, "link.type_add", CKR_OK,
            hf_core_link_type_add(core, "test-api", &cli, &added));
    CU_ASSERT_TRUE(added);
    AUDITED(audit_path, "link.type_add", CKR_OK,
            hf_core_link_type_add(core, "test-api", &cli, &added));
    CU_ASSERT_FALSE(added);
    AUDITED(audit_path, "link.add", CKR_OK,
            hf_core_link_add(core, "test-api", "t-1", key.uuid, &cli));
    AUDITED(audit_path, "link.block", CKR_OK,
            hf_core_link_set_blocked(core, "test-api", "t-1", true, &cli));
    AUDITED(audit_path, "link.type_add", CKR_ARGUMENTS_BAD,
            hf_core_link_type_add(core, "Test_API", &cli, NULL));
    AUDITED(audit_path, "link.type_add", CKR_ARGUMENTS_BAD,
            hf_core_link_type_add(core, "", &cli, NULL));
    AUDITED(audit_path, "link.type_add", CKR_ARGUMENTS_BAD,
            hf_core_link_type_add(core, "abcdefghijklmnopqrstuvwxyz0123456", &cli, NULL));
    AUDITED(audit_path, "link.type_add", CKR_OK,
            hf_core_link_type_add(core, "abcdefghijklmnopqrstuvwxyz-01234", &cli, NULL));
    hf_key_clear(&key);
}

/* The child's side of test_abandon_after_fork: drops the parent's core, opens its own, uses the
 * parent's key and makes one. */
static CK_RV child_work(const struct hf_key_version *v)
{
    static struct hf_core *child;
    struct hf_key_spec spec = spec_of("aes-child", HF_ALG_AES, 256);
    struct hf_material *m = NULL;
    CK_RV rv;

    hf_core_abandon(core);
    rv = hf_core_open(&env.cfg, &child);
    if (rv == CKR_OK) rv = hf_core_key_create(child, &spec, &cli, NULL, NULL);
    if (rv == CKR_OK) rv = hf_core_material(child, v, &m);
    hf_material_unref(m);
    hf_core_close(child);
    return rv;
}

/* A forked child drops the parent's core and works with its own; the parent carries on. The
 * child reports through a pipe and ends by exec, not exit: what abandon leaks on purpose would
 * otherwise fill valgrind's exit-time leak report of the child. */
static void test_abandon_after_fork(void)
{
    struct hf_key_spec spec = spec_of("aes-parent", HF_ALG_AES, 256);
    struct hf_key_version v = {0};
    CK_RV child_rv = CKR_GENERAL_ERROR;
    int fds[2], status;
    pid_t pid;

    CU_ASSERT_EQUAL_FATAL(hf_core_key_create(core, &spec, &cli, NULL, &v), CKR_OK);
    aes_round_trip(core, &v);
    CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
    pid = fork();
    CU_ASSERT_NOT_EQUAL_FATAL(pid, -1);
    if (pid == 0) {
        close(fds[0]);
        child_rv = child_work(&v);
        if (write(fds[1], &child_rv, sizeof(child_rv)) != sizeof(child_rv)) _exit(1);
        execl("/bin/true", "true", (char *)NULL);
        _exit(0);
    }
    close(fds[1]);
    CU_ASSERT_EQUAL(read(fds[0], &child_rv, sizeof(child_rv)), sizeof(child_rv));
    close(fds[0]);
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_EQUAL(child_rv, CKR_OK);
    CU_ASSERT_EQUAL(state_of("aes-child"), HF_STATE_ACTIVE);
    aes_round_trip(core, &v);
    CU_ASSERT_EQUAL(hf_core_key_rotate(core, "aes-parent", &cli, NULL), CKR_OK);
    hf_key_version_clear(&v);
}

static void test_the_audit_log_verifies(void)
{
    struct hf_audit_verify_result res;

    memset(&res, 0, sizeof(res));
    CU_ASSERT_EQUAL(hf_core_audit_verify(&env.cfg, audit_path, true, false, &res), CKR_OK);
    CU_ASSERT(res.checkpoints >= 1);
    CU_ASSERT_EQUAL(res.bad_line, 0);
    CU_ASSERT(res.records > 50);
    CU_ASSERT(res.streams >= 2);
}

static void test_clocks_move(void)
{
    uint64_t t0 = hf_monotonic_us();

    CU_ASSERT(hf_now() > 1700000000);
    usleep(2000);
    CU_ASSERT(hf_monotonic_us() - t0 >= 2000);
}

static CU_TestInfo init_tests[] = {
    {"init twice keeps PINs, root KEK and files", test_init_twice_keeps_pins_kek_and_files},
    {"init with reset replaces the token PINs", test_init_reset_replaces_the_token_pins},
    {"init refuses bad arguments", test_init_refuses_bad_arguments},
    {"open before init is CKR_TOKEN_NOT_RECOGNIZED", test_open_before_init_is_not_recognised},
    {"store, PIN files and audit log are 0600, dirs 0700", test_secrets_are_private_files},
    {"state dir is created 0700 with its parents", test_state_dir_is_created_0700},
    {"open repairs a token cut short by a killed login",
     test_open_repairs_a_token_cut_short_by_a_killed_login},
    {"failures are recorded without success events",
     test_failures_are_recorded_without_success_events},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo key_tests[] = {
    {"PINs: right, wrong and out of range", test_pins_right_wrong_and_out_of_range},
    {"pin set replaces the PIN", test_pin_set_replaces_the_pin},
    {"PIN record is salted PBKDF2", test_pin_record_is_salted_pbkdf2},
    {"create AES-256: usable for AES-GCM", test_create_aes_256_is_usable},
    {"create RSA-2048: signs and verifies", test_create_rsa_2048_signs},
    {"create EC-P256: signs and verifies", test_create_ec_p256_signs},
    {"create keeps usage, state, labels, owner", test_create_keeps_usage_state_labels_owner},
    {"duplicate name is refused and audited", test_duplicate_name_is_refused_and_audited},
    {"bad specs are refused and audited", test_bad_specs_are_refused_and_audited},
    {"import AES keeps the bytes", test_import_aes_keeps_the_bytes},
    {"rotate adds a version and keeps the old", test_rotate_adds_a_version_and_keeps_the_old},
    {"state moves follow KMIP", test_state_moves_follow_kmip},
    {"destroy erases the material", test_destroy_erases_the_material},
    {"set_state destroyed destroys", test_set_state_destroyed_destroys},
    {"labels are set and removed", test_labels_are_set_and_removed},
    {"links are added, blocked and unblocked", test_links_are_added_blocked_and_unblocked},
    {"link types must be registered; registering is idempotent and audited",
     test_link_types_are_registered},
    {"abandon after fork: child opens its own core", test_abandon_after_fork},
    {"the audit log verifies", test_the_audit_log_verifies},
    {"clocks move", test_clocks_move},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"core init and open", NULL, NULL, NULL, NULL, init_tests},
        {"core key management", keys_init, keys_cleanup, NULL, NULL, key_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
