#include "hf-build.h"

#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pkcs11/core/core.h"
#include "pkcs11/core/hsm.h"
#include "pkcs11/core/root.h"
#include "pkcs11/core/secmem.h"
#include "pkcs11/core/store.h"

/* The root over a pool (root.h) on real SoftHSMv2 tokens. Two members hold the same keys the way
 * a SoftHSMv2 clone does: member "b" is a copy of member "a"'s token directory, served by a copy
 * of the SoftHSMv2 module (a second instance in this process, reading its own SOFTHSM2_CONF)
 * behind a copy of the fault shim, whose dead file makes b answer CKR_DEVICE_ERROR to
 * everything (tests/shim/README.md). Member "c" is another token with its own keys under the
 * same labels, member "d" a token with none. */
#define TOKEN "hf-root"
#define TOKEN_OTHER "hf-root-other"
#define TOKEN_BARE "hf-root-bare"
#define KEK "hf-root-kek"

static const char *const MACS[] = {"hf-root-kek.policy-mac", "holdfast-audit-chain",
                                   "holdfast-audit-checkpoint"};
static const struct hf_root_keys KEYS = {KEK, MACS, 3, NULL};

static struct hf_test_softhsm softhsm;
static struct hf_hsm *keeper; /* a, held open: SoftHSMv2 reads SOFTHSM2_CONF at C_Initialize */
static char b_module[PATH_MAX + 16], b_dead[PATH_MAX + 32];
static bool have_b; /* the shim was built: member b exists */

static CK_RV keys_make(const char *token)
{
    struct hf_hsm *h = NULL;
    CK_RV rv = hf_hsm_token_ensure(HF_SOFTHSM_MODULE, softhsm.lock_path, token, HF_TEST_SO_PIN,
                                   HF_TEST_USER_PIN);

    if (rv == CKR_OK) rv = hf_hsm_open(HF_SOFTHSM_MODULE, NULL, token, HF_TEST_USER_PIN, &h);
    if (rv == CKR_OK && strcmp(token, TOKEN_BARE) != 0) {
        rv = hf_hsm_kek_ensure(h, KEK);
        for (size_t i = 0; i < 3 && rv == CKR_OK; i++)
            rv = hf_hsm_mac_key_ensure(h, MACS[i]);
    }
    hf_hsm_close(h);
    return rv;
}

static int run(const char *cmd)
{
    int rc = system(cmd);

    if (rc != 0) fprintf(stderr, "test-root: '%s' exited %d\n", cmd, rc);
    return rc;
}

/* Member b: a's token directory copied (the keys' values with it), a second SoftHSMv2 over the
 * copy, and a shim in front of it. */
static int clone_make(void)
{
    char cmd[4 * PATH_MAX + 256], conf[PATH_MAX + 32];
    FILE *fp;

    if (access(HF_TEST_SHIM, R_OK) != 0) {
        fprintf(stderr, "test-root: %s not built: the failover cases are skipped\n", HF_TEST_SHIM);
        return 0;
    }
    snprintf(cmd, sizeof(cmd),
             "cp -a '%s/tokens' '%s/tokens-b' && cp '%s' '%s/softhsm-b.so' && "
             "cp '%s' '%s/b.so'",
             softhsm.dir, softhsm.dir, HF_SOFTHSM_MODULE, softhsm.dir, HF_TEST_SHIM, softhsm.dir);
    if (run(cmd) != 0) return -1;
    snprintf(conf, sizeof(conf), "%s/softhsm2-b.conf", softhsm.dir);
    if ((fp = fopen(conf, "w")) == NULL) return -1;
    fprintf(fp, "directories.tokendir = %s/tokens-b\nobjectstore.backend = file\n", softhsm.dir);
    fclose(fp);
    snprintf(b_module, sizeof(b_module), "%s/b.so", softhsm.dir);
    snprintf(b_dead, sizeof(b_dead), "%s/b.so.dead", softhsm.dir);
    snprintf(cmd, sizeof(cmd), "%s.conf", b_module);
    if ((fp = fopen(cmd, "w")) == NULL) return -1;
    fprintf(fp, "module = %s/softhsm-b.so\ndead_file = %s\nenv = SOFTHSM2_CONF=%s\n", softhsm.dir,
            b_dead, conf);
    fclose(fp);
    have_b = true;
    return 0;
}

static int suite_init(void)
{
    if (hf_test_softhsm_setup(&softhsm, "hf-test-root") != 0) return -1;
    if (keys_make(TOKEN) != CKR_OK || keys_make(TOKEN_OTHER) != CKR_OK ||
        keys_make(TOKEN_BARE) != CKR_OK)
        return -1;
    if (hf_hsm_open(HF_SOFTHSM_MODULE, NULL, TOKEN, HF_TEST_USER_PIN, &keeper) != CKR_OK) return -1;
    return clone_make();
}

static int suite_clean(void)
{
    hf_hsm_close(keeper);
    keeper = NULL;
    hf_test_softhsm_teardown(&softhsm);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------------- */

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static struct hf_pool_member_spec spec(const char *name, const char *module, const char *token)
{
    return (struct hf_pool_member_spec){name, module, token, HF_TEST_USER_PIN, NULL, 2};
}

static struct hf_root *root_open(const struct hf_pool_member_spec *specs, size_t n)
{
    struct hf_pool_options opts = {.queue_max = 16, .probe_interval_ms = 50};
    struct hf_root *root = NULL;

    CU_ASSERT_EQUAL(hf_root_open_pool(specs, n, &opts, &KEYS, &root), CKR_OK);
    return root;
}

/* Waits (up to ms) until member's health is want. */
static bool health_wait(struct hf_root *root, size_t member, bool want, unsigned ms)
{
    struct hf_root_member_status st[4];

    for (unsigned waited = 0;; waited += 20) {
        hf_root_status(root, st, 4);
        if (st[member].pool.healthy == want || waited >= ms) return st[member].pool.healthy == want;
        sleep_ms(20);
    }
}

/* A wrap, an unwrap of it and an HMAC through root, each checked against a's token directly. */
static bool work_once(struct hf_root *root, unsigned i)
{
    unsigned char plain[32], mac[HF_HSM_MAC_LEN], want[HF_HSM_MAC_LEN];
    unsigned char *blob = NULL, *back = NULL;
    size_t blob_len = 0, back_len = 0;
    bool ok;

    memset(plain, (int)i, sizeof(plain));
    ok = hf_root_wrap(root, KEK, plain, sizeof(plain), &blob, &blob_len) == CKR_OK &&
         hf_root_unwrap(root, KEK, blob, blob_len, &back, &back_len) == CKR_OK &&
         back_len == sizeof(plain) && memcmp(back, plain, sizeof(plain)) == 0 &&
         hf_root_hmac(root, MACS[i % 3], plain, sizeof(plain), mac) == CKR_OK &&
         hf_hsm_hmac(keeper, MACS[i % 3], plain, sizeof(plain), want) == CKR_OK &&
         memcmp(mac, want, sizeof(mac)) == 0;
    if (back) hf_secmem_free(back, back_len);
    free(blob);
    return ok;
}

/* ---- cases --------------------------------------------------------------------------------- */

static void test_a_member_with_other_keys_or_none_is_refused(void)
{
    struct hf_pool_member_spec specs[3] = {spec("a", HF_SOFTHSM_MODULE, TOKEN),
                                           spec("c", HF_SOFTHSM_MODULE, TOKEN_OTHER),
                                           spec("d", HF_SOFTHSM_MODULE, TOKEN_BARE)};
    struct hf_root_member_status st[3];
    struct hf_root *root = root_open(specs, 3);

    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    CU_ASSERT_EQUAL(hf_root_status(root, st, 3), 3);
    CU_ASSERT_TRUE(st[0].pool.healthy);
    CU_ASSERT_EQUAL(st[0].check, HF_ROOT_CHECK_SAME);
    CU_ASSERT_FALSE(st[1].pool.healthy);
    CU_ASSERT_EQUAL(st[1].check, HF_ROOT_CHECK_DIFFERS);
    CU_ASSERT_STRING_EQUAL(st[1].differs, KEK);
    CU_ASSERT_FALSE(st[2].pool.healthy);
    CU_ASSERT_EQUAL(st[2].check, HF_ROOT_CHECK_MISSING);
    /* The probe answers the token, but the check keeps both out, round after round. */
    sleep_ms(300);
    hf_root_status(root, st, 3);
    CU_ASSERT_FALSE(st[1].pool.healthy);
    CU_ASSERT_FALSE(st[2].pool.healthy);
    for (unsigned i = 0; i < 20; i++)
        CU_ASSERT_TRUE(work_once(root, i));
    hf_root_status(root, st, 3);
    CU_ASSERT_EQUAL(st[1].pool.calls + st[2].pool.calls, 0);
    hf_root_close(root);
}

static void test_the_first_member_to_pass_is_the_reference(void)
{
    /* c first: its keys are the reference, so a's differ. Nothing says which is right but the
     * order the operator gave; what matters is that no two different keys serve together. */
    struct hf_pool_member_spec specs[2] = {spec("c", HF_SOFTHSM_MODULE, TOKEN_OTHER),
                                           spec("a", HF_SOFTHSM_MODULE, TOKEN)};
    struct hf_root_member_status st[2];
    struct hf_root *root = root_open(specs, 2);

    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    hf_root_status(root, st, 2);
    CU_ASSERT_TRUE(st[0].pool.healthy);
    CU_ASSERT_FALSE(st[1].pool.healthy);
    CU_ASSERT_EQUAL(st[1].check, HF_ROOT_CHECK_DIFFERS);
    hf_root_close(root);
}

static void test_no_member_with_the_keys_fails_the_open(void)
{
    struct hf_pool_member_spec specs[1] = {spec("d", HF_SOFTHSM_MODULE, TOKEN_BARE)};
    struct hf_root *root = NULL;

    CU_ASSERT_EQUAL(hf_root_open_pool(specs, 1, NULL, &KEYS, &root), HF_POOL_RV_UNAVAILABLE);
    CU_ASSERT_PTR_NULL(root);
}

static void test_a_clone_serves_the_same_results(void)
{
    struct hf_pool_member_spec specs[2] = {spec("a", HF_SOFTHSM_MODULE, TOKEN),
                                           spec("b", b_module, TOKEN)};
    struct hf_root_member_status st[2];
    struct hf_root *root;

    if (!have_b) return;
    root = root_open(specs, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    hf_root_status(root, st, 2);
    CU_ASSERT_TRUE(st[0].pool.healthy && st[1].pool.healthy);
    CU_ASSERT_EQUAL(st[1].check, HF_ROOT_CHECK_SAME);
    for (unsigned i = 0; i < 40; i++)
        CU_ASSERT_TRUE(work_once(root, i));
    /* Both served (fewest in flight, round robin on ties): a blob wrapped on one unwraps on
     * the other. */
    hf_root_status(root, st, 2);
    CU_ASSERT_TRUE(st[0].pool.calls > 0 && st[1].pool.calls > 0);
    hf_root_close(root);
}

static void test_wrap_unwrap_and_hmac_fail_over_when_a_member_dies(void)
{
    struct hf_pool_member_spec specs[2] = {spec("b", b_module, TOKEN),
                                           spec("a", HF_SOFTHSM_MODULE, TOKEN)};
    struct hf_root_member_status st[2];
    struct hf_root *root;
    uint64_t calls_before;
    FILE *fp;

    if (!have_b) return;
    root = root_open(specs, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    CU_ASSERT_TRUE(health_wait(root, 0, true, 10));
    /* b dies: every call on it answers CKR_DEVICE_ERROR (the shim looks every 100 ms). */
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp = fopen(b_dead, "w"));
    fclose(fp);
    sleep_ms(250);
    for (unsigned i = 0; i < 40; i++)
        CU_ASSERT_TRUE(work_once(root, i));
    hf_root_status(root, st, 2);
    CU_ASSERT_FALSE(st[0].pool.healthy);
    CU_ASSERT_TRUE(st[0].pool.failures > 0);
    CU_ASSERT_TRUE(st[0].pool.failovers > 0);
    /* Back: the probe re-opens it, checks its keys again, and it serves. */
    unlink(b_dead);
    CU_ASSERT_TRUE(health_wait(root, 0, true, 3000));
    hf_root_status(root, st, 2);
    CU_ASSERT_EQUAL(st[0].check, HF_ROOT_CHECK_SAME);
    calls_before = st[0].pool.calls;
    for (unsigned i = 0; i < 40; i++)
        CU_ASSERT_TRUE(work_once(root, i));
    hf_root_status(root, st, 2);
    CU_ASSERT_TRUE(st[0].pool.calls > calls_before);
    hf_root_close(root);
}

static void test_a_pool_never_makes_a_key(void)
{
    struct hf_pool_member_spec specs[1] = {spec("a", HF_SOFTHSM_MODULE, TOKEN)};
    struct hf_root *root = root_open(specs, 1);

    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    CU_ASSERT_EQUAL(hf_root_mac_key_ensure(root, MACS[1]), CKR_OK);
    CU_ASSERT_EQUAL(hf_root_mac_key_ensure(root, "hf-root-new-mac"), CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_FALSE(hf_hsm_has_kek(keeper, "hf-root-new-mac"));
    CU_ASSERT_TRUE(hf_root_has_kek(root, KEK));
    CU_ASSERT_FALSE(hf_root_has_kek(root, "hf-no-such-kek"));
    hf_root_close(root);
}

static void test_one_token_is_the_token_itself(void)
{
    unsigned char mac[HF_HSM_MAC_LEN], want[HF_HSM_MAC_LEN];
    struct hf_root *root = NULL;

    CU_ASSERT_EQUAL(hf_root_of_hsm(NULL, &root), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL_FATAL(hf_root_of_hsm(keeper, &root), CKR_OK);
    CU_ASSERT_EQUAL(hf_root_status(root, NULL, 0), 0);
    CU_ASSERT_EQUAL(hf_root_hmac(root, MACS[0], (const unsigned char *)"x", 1, mac), CKR_OK);
    CU_ASSERT_EQUAL(hf_hsm_hmac(keeper, MACS[0], (const unsigned char *)"x", 1, want), CKR_OK);
    CU_ASSERT_EQUAL(memcmp(mac, want, sizeof(mac)), 0);
    CU_ASSERT_TRUE(work_once(root, 7));
    hf_root_close(root);
}

static CK_RV no_probe(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                      CK_SESSION_HANDLE s, void *arg)
{
    (void)hsm, (void)member, (void)f, (void)s, (void)arg;
    return CKR_OK;
}

/* ---- the stored reference ---- */

/* The reference of a's keys, as `holdfast init` stores it. */
static char *reference_of_a(void)
{
    char *ref = NULL;

    CU_ASSERT_EQUAL(hf_root_reference_of_hsm(keeper, &KEYS, &ref), CKR_OK);
    return ref;
}

static void dead_set(bool dead)
{
    FILE *fp;

    if (!dead) {
        unlink(b_dead);
    } else if ((fp = fopen(b_dead, "w")) != NULL) {
        fclose(fp);
    }
    sleep_ms(250); /* the shim looks every 100 ms */
}

static void test_with_a_stored_reference_a_member_with_other_keys_first_stays_out(void)
{
    /* [hsm] (b) down at open and c, with other keys, the first to answer: by the first-to-pass
     * rule c would be the reference and a, the right clone, refused. */
    struct hf_pool_member_spec specs[3] = {spec("b", b_module, TOKEN),
                                           spec("c", HF_SOFTHSM_MODULE, TOKEN_OTHER),
                                           spec("a", HF_SOFTHSM_MODULE, TOKEN)};
    struct hf_pool_options opts = {.queue_max = 16, .probe_interval_ms = 50};
    struct hf_root_member_status st[3];
    struct hf_root_keys keys = KEYS;
    struct hf_root *root = NULL;
    char *ref = reference_of_a(), *in_use = NULL;

    if (!have_b || ref == NULL) goto done;
    dead_set(true);
    keys.reference = ref;
    CU_ASSERT_EQUAL_FATAL(hf_root_open_pool(specs, 3, &opts, &keys, &root), CKR_OK);
    hf_root_status(root, st, 3);
    CU_ASSERT_FALSE(st[0].pool.healthy);
    CU_ASSERT_FALSE(st[1].pool.healthy);
    CU_ASSERT_EQUAL(st[1].check, HF_ROOT_CHECK_DIFFERS);
    CU_ASSERT_TRUE(st[2].pool.healthy);
    CU_ASSERT_EQUAL(st[2].check, HF_ROOT_CHECK_SAME);
    for (unsigned i = 0; i < 10; i++)
        CU_ASSERT_TRUE(work_once(root, i));
    CU_ASSERT_EQUAL(hf_root_reference(root, &in_use), CKR_OK);
    CU_ASSERT_STRING_EQUAL(in_use ? in_use : "", ref);
    /* [hsm] back: it passes; c never does. */
    dead_set(false);
    CU_ASSERT_TRUE(health_wait(root, 0, true, 3000));
    hf_root_status(root, st, 3);
    CU_ASSERT_EQUAL(st[0].check, HF_ROOT_CHECK_SAME);
    CU_ASSERT_FALSE(st[1].pool.healthy);
    CU_ASSERT_EQUAL(st[1].pool.calls, 0);
    hf_root_close(root);
done:
    free(in_use);
    free(ref);
}

static void test_no_member_matching_the_stored_reference_fails_the_open(void)
{
    struct hf_pool_member_spec specs[2] = {spec("c", HF_SOFTHSM_MODULE, TOKEN_OTHER),
                                           spec("d", HF_SOFTHSM_MODULE, TOKEN_BARE)};
    struct hf_root_keys keys = KEYS;
    struct hf_root *root = NULL;
    char *ref = reference_of_a();

    CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
    keys.reference = ref;
    CU_ASSERT_EQUAL(hf_root_open_pool(specs, 2, NULL, &keys, &root), HF_POOL_RV_UNAVAILABLE);
    CU_ASSERT_PTR_NULL(root);
    /* Cut short, or not a reference at all: refused before any member is asked. */
    ref[strlen(ref) - 2] = '\0';
    CU_ASSERT_EQUAL(hf_root_open_pool(specs, 2, NULL, &keys, &root), CKR_DATA_INVALID);
    keys.reference = "kcv1:";
    CU_ASSERT_EQUAL(hf_root_open_pool(specs, 2, NULL, &keys, &root), CKR_DATA_INVALID);
    CU_ASSERT_PTR_NULL(root);
    free(ref);
}

/* A core over the root pool [hsm] = b, [hsm.c] = c, [hsm.a] = a, in a state dir of its own. */
static int core_conf_write(const char *dir, char *conf, size_t len)
{
    char pin[PATH_MAX + 16];
    FILE *fp;

    snprintf(pin, sizeof(pin), "%s/hsm.pin", dir);
    if ((fp = fopen(pin, "w")) == NULL) return -1;
    fprintf(fp, "%s\n", HF_TEST_USER_PIN);
    fclose(fp);
    chmod(pin, 0600);
    snprintf(conf, len, "%s/holdfast.conf", dir);
    if ((fp = fopen(conf, "w")) == NULL) return -1;
    fprintf(fp,
            "[holdfast]\nstate_dir = %s\n"
            "[hsm]\nmodule = %s\ntoken = %s\npin_file = %s\nroot_kek_label = %s\n"
            "softhsm2_conf =\n"
            "[hsm.c]\nmodule = %s\ntoken = %s\n"
            "[hsm.a]\nmodule = %s\ntoken = %s\n",
            dir, b_module, TOKEN, pin, KEK, HF_SOFTHSM_MODULE, TOKEN_OTHER, HF_SOFTHSM_MODULE,
            TOKEN);
    fclose(fp);
    return 0;
}

static char *stored_reference(const struct hf_config *cfg)
{
    struct hf_store *store = NULL;
    char *ref = NULL;

    CU_ASSERT_EQUAL_FATAL(hf_store_open(cfg->store_path, &store), CKR_OK);
    hf_store_meta_get(store, HF_META_ROOT_REFERENCE, &ref);
    hf_store_close(store);
    return ref;
}

static void test_init_stores_the_reference_and_an_old_store_gets_it_from_hsm(void)
{
    struct hf_config cfg;
    struct hf_core *core = NULL;
    struct hf_core_root_member *m = NULL;
    struct hf_store *store = NULL;
    char dir[PATH_MAX + 8], conf[PATH_MAX + 48], err[256];
    char *ref = reference_of_a(), *got = NULL;
    bool swapped = false, stored = false;
    size_t n = 0;

    if (!have_b || ref == NULL) goto out;
    snprintf(dir, sizeof(dir), "%s/core", softhsm.dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0700), 0);
    CU_ASSERT_EQUAL_FATAL(core_conf_write(dir, conf, sizeof(conf)), 0);
    CU_ASSERT_EQUAL_FATAL(hf_config_load(conf, &cfg, err, sizeof(err)), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_core_init(&cfg, HF_TEST_SO_PIN, HF_TEST_USER_PIN, false), CKR_OK);
    got = stored_reference(&cfg);
    CU_ASSERT_STRING_EQUAL(got ? got : "", ref); /* [hsm]'s: b is a clone of a */
    free(got);

    /* A store made before the reference: none stored. [hsm] down at open, c first to pass: the
     * old rule stands, and nothing is stored from c. */
    CU_ASSERT_EQUAL_FATAL(hf_store_open(cfg.store_path, &store), CKR_OK);
    CU_ASSERT_EQUAL(hf_store_meta_swap(store, HF_META_ROOT_REFERENCE, ref, NULL, &swapped), CKR_OK);
    CU_ASSERT_TRUE(swapped);
    hf_store_close(store);
    dead_set(true);
    if (hf_core_open(&cfg, &core) == CKR_OK) {
        CU_ASSERT_EQUAL(hf_core_root_reference_is_stored(core, &stored), CKR_OK);
        CU_ASSERT_FALSE(stored);
        hf_core_close(core);
        core = NULL;
    }
    CU_ASSERT_PTR_NULL(got = stored_reference(&cfg));
    free(got);
    /* [hsm] passes at this open: its values become the store's. */
    dead_set(false);
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_root_reference_is_stored(core, &stored), CKR_OK);
    CU_ASSERT_TRUE(stored);
    hf_core_close(core);
    core = NULL;
    got = stored_reference(&cfg);
    CU_ASSERT_STRING_EQUAL(got ? got : "", ref);
    free(got);
    /* From then on [hsm] down at open changes nothing: c stays out, a serves. */
    dead_set(true);
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_root_status(core, &m, &n), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_STRING_EQUAL(m[1].name, "c");
    CU_ASSERT_EQUAL(m[1].check, HF_ROOT_CHECK_DIFFERS);
    CU_ASSERT_FALSE(m[1].status.healthy);
    CU_ASSERT_STRING_EQUAL(m[2].name, "a");
    CU_ASSERT_EQUAL(m[2].check, HF_ROOT_CHECK_SAME);
    CU_ASSERT_TRUE(m[2].status.healthy);
    free(m);
    hf_core_close(core);
    dead_set(false);
    hf_config_free(&cfg);
out:
    free(ref);
}

static void test_open_refuses_bad_arguments(void)
{
    struct hf_pool_member_spec specs[HF_ROOT_MEMBERS_MAX + 1];
    struct hf_pool_options opts = {.probe_fn = no_probe};
    struct hf_root_keys no_kek = {NULL, MACS, 3, NULL};
    struct hf_root *root = NULL;

    for (size_t i = 0; i <= HF_ROOT_MEMBERS_MAX; i++)
        specs[i] = spec("a", HF_SOFTHSM_MODULE, TOKEN);
    CU_ASSERT_EQUAL(hf_root_open_pool(specs, 1, &opts, &KEYS, &root), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_root_open_pool(specs, 1, NULL, &no_kek, &root), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_root_open_pool(specs, HF_ROOT_MEMBERS_MAX + 1, NULL, &KEYS, &root),
                    CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_root_open_pool(specs, 0, NULL, &KEYS, &root), CKR_ARGUMENTS_BAD);
    CU_ASSERT_PTR_NULL(root);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"a member with other keys or none is refused",
         test_a_member_with_other_keys_or_none_is_refused},
        {"the first member to pass is the reference",
         test_the_first_member_to_pass_is_the_reference},
        {"no member with the keys fails the open", test_no_member_with_the_keys_fails_the_open},
        {"a clone serves the same results", test_a_clone_serves_the_same_results},
        {"wrap, unwrap and hmac fail over when a member dies",
         test_wrap_unwrap_and_hmac_fail_over_when_a_member_dies},
        {"a pool never makes a key", test_a_pool_never_makes_a_key},
        {"one token is the token itself", test_one_token_is_the_token_itself},
        {"open refuses bad arguments", test_open_refuses_bad_arguments},
        {"with a stored reference a member with other keys first stays out",
         test_with_a_stored_reference_a_member_with_other_keys_first_stays_out},
        {"no member matching the stored reference fails the open",
         test_no_member_matching_the_stored_reference_fails_the_open},
        {"init stores the reference and an old store gets it from [hsm]",
         test_init_stores_the_reference_and_an_old_store_gets_it_from_hsm},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"root over a pool", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
