#include "hf-build.h"

#include "harness-pool.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pkcs11/core/core-internal.h"
#include "pkcs11/core/pool-clone.h"
#include "pkcs11/core/source-pool.h"

/* A clone pool's replication key is made by one process among those opening the pool at once
 * (core-pool-sync.c: the generation claimed in the store's meta). Two core handles on one store
 * stand for two processes or nodes: each has its own members' modules sessions and caches, and
 * they meet only in the store and in the tokens. */
#define TOKEN_A "hf-repl-a"
#define TOKEN_B "hf-repl-b"
#define PIN_ENV "HF_TEST_REPL_PIN"
#define ROUNDS 20

static const struct hf_actor who = {"cli", "uid:test"};
static struct hf_test_env env;
static struct hf_core *core;  /* the pools' maker and checker */
static struct hf_core *rival; /* the second opener */
/* "flaky"'s member: a fault shim copy whose first two C_GenerateKey calls fail. */
static char flaky_module[PATH_MAX + 16];
static bool have_flaky;

static CK_RV clone_pool_add(const char *name)
{
    return hf_test_pool_add(core, &who, env.cfg.hsm_module, name, HF_POOL_MODE_CLONE, TOKEN_A,
                            TOKEN_B, PIN_ENV, 4);
}

/* A clone pool of one member on TOKEN_A through module, written to the store directly
 * (hf_core_pool_add would probe the member: a SoftHSMv2 login per pool). */
static CK_RV solo_pool_add(const char *name, const char *module)
{
    struct hf_store_pool_member m = {.name = "a",
                                     .module_path = (char *)module,
                                     .token_label = TOKEN_A,
                                     .pin_env = PIN_ENV,
                                     .concurrency = 4};
    struct hf_store_pool p = {.name = (char *)name,
                              .mode = HF_POOL_MODE_CLONE,
                              .created = hf_now(),
                              .updated = hf_now(),
                              .members = &m,
                              .n_members = 1};

    return hf_store_pool_insert(hf_core_store(core), &p);
}

static int suite_init(void)
{
    char name[16];
    CK_RV rv = hf_test_pool_suite_setup(&env, &core, &who, TOKEN_A, TOKEN_B, PIN_ENV, 4);

    for (int i = 0; i < ROUNDS && rv == CKR_OK; i++) {
        snprintf(name, sizeof(name), "race-%d", i);
        rv = solo_pool_add(name, env.cfg.hsm_module);
    }
    if (rv == CKR_OK) rv = clone_pool_add("pair");
    if (rv == CKR_OK) rv = solo_pool_add("stale", env.cfg.hsm_module);
    if (rv == CKR_OK) rv = solo_pool_add("slow", env.cfg.hsm_module);
    if (rv == CKR_OK) {
        int made =
            hf_test_shim_copy(HF_TEST_SHIM, env.dir, "flaky.so", env.cfg.hsm_module,
                              "fail_first = C_GenerateKey 2\n", flaky_module, sizeof(flaky_module));
        if (made < 0) rv = CKR_GENERAL_ERROR;
        if ((have_flaky = made == 1)) rv = solo_pool_add("flaky", flaky_module);
    }
    if (rv == CKR_OK) rv = hf_core_open(&env.cfg, &rival);
    /* Under helgrind (threads one at a time, each call tens of times slower) a claimant's key
     * could take longer than the waiters' three takeover times, and they would give up on it. */
    if (hf_test_under_valgrind()) hf_core_repl_takeover_ms *= 10;
    if (rv != CKR_OK) fprintf(stderr, "test-pool-repl: setup failed: 0x%lx\n", (unsigned long)rv);
    return rv == CKR_OK ? 0 : -1;
}

static int suite_clean(void)
{
    hf_core_close(rival);
    hf_core_close(core);
    hf_test_env_teardown(&env);
    return 0;
}

/* ---- helpers ---- */

/* How many of member's secret keys are labelled label. */
static size_t label_count(struct hf_pool *pool, size_t member, const char *label)
{
    char **labels = NULL;
    size_t n = 0, count = 0;

    if (hf_pool_labels(pool, member, &labels, &n) != CKR_OK) return (size_t)-1;
    for (size_t i = 0; i < n; i++)
        count += strcmp(labels[i], label) == 0;
    hf_pool_labels_free(labels, n);
    return count;
}

/* Whether the pool's members hold one and the same replication key: one object under its label
 * on the member it is made on (two processes each making one would leave two there), at least
 * one on every other (two copying it at once may each leave a copy: the same value), and keys
 * made on either member copied to the other under it (a copy is a wrap on one member and an
 * unwrap on the other: with two different keys the unwrap fails). */
static bool repl_is_one(struct hf_pool *pool, const char *name, size_t n_members)
{
    char repl[HF_POOL_REPL_LABEL_MAX], label[64];
    bool ok = true;

    hf_pool_repl_label(name, repl);
    for (size_t m = 0; m < n_members; m++) {
        size_t c = label_count(pool, m, repl);
        if (m == 0 ? c == 1 : c >= 1 && c != (size_t)-1) continue;
        fprintf(stderr, "pool %s: member %zu holds %zu replication keys\n", name, m, c);
        ok = false;
    }
    /* Generation picks the member with the fewest calls in flight, round robin on ties: four
     * keys are made on both. */
    for (int k = 0; n_members > 1 && k < 4; k++) {
        snprintf(label, sizeof(label), "%s-key-%d", name, k);
        if (hf_pool_key_generate_clone(pool, 256, label, repl) != CKR_OK) return false;
        for (size_t m = 0; m < n_members; m++)
            if (label_count(pool, m, label) != 1) {
                fprintf(stderr, "pool %s: key %s was not copied to member %zu\n", name, label, m);
                ok = false;
            }
    }
    return ok;
}

struct opener {
    struct hf_core *core;
    const char *name;
    struct hf_pool *pool; /* NULL: open it (core_pool_use); else establish its key on it */
    pthread_barrier_t *start;
    CK_RV rv;
};

static void *open_at_once(void *arg)
{
    struct opener *o = arg;
    struct hf_pool *pool = NULL;

    pthread_barrier_wait(o->start);
    if (o->pool != NULL)
        core_pool_repl_establish(o->core, o->name, o->pool);
    else
        o->rv = core_pool_use(o->core, o->name, &pool);
    return NULL;
}

/* Two openers at once, one on core and one on rival (pools: each one's pool, or NULL). */
static void race(const char *name, struct hf_pool *pools[2], CK_RV rv[2])
{
    pthread_barrier_t start;
    struct opener o[2] = {{core, name, pools ? pools[0] : NULL, &start, 0},
                          {rival, name, pools ? pools[1] : NULL, &start, 0}};
    pthread_t t[2];

    pthread_barrier_init(&start, NULL, 2);
    for (int k = 0; k < 2; k++)
        pthread_create(&t[k], NULL, open_at_once, &o[k]);
    for (int k = 0; k < 2; k++) {
        pthread_join(t[k], NULL);
        rv[k] = o[k].rv;
    }
    pthread_barrier_destroy(&start);
}

static uint64_t now_ms(void)
{
    return hf_monotonic_us() / 1000u;
}

/* ---- cases ---- */

static void test_two_openers_of_a_fresh_clone_pool_make_one_replication_key(void)
{
    struct hf_pool *pools[2] = {NULL, NULL};
    unsigned bad = 0;
    CK_RV rv[2];

    CU_ASSERT_PTR_NOT_NULL_FATAL(rival);
    /* Each round a fresh pool on the same token: core_pool_repl_establish, as each process's
     * first open runs it, on each handle's own open of the member (the pool rows differ by name
     * only, and the key's label is the pool's). */
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_open(core, "race-0", NULL, &pools[0]), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_open(rival, "race-0", NULL, &pools[1]), CKR_OK);
    /* Valgrind runs one thread at a time: a race it rarely shows there, so a few rounds. */
    for (int i = 0; i < hf_test_rounds(ROUNDS); i++) {
        char name[16];
        snprintf(name, sizeof(name), "race-%d", i);
        race(name, pools, rv);
        if (!repl_is_one(pools[0], name, 1)) bad++;
    }
    if (bad)
        fprintf(stderr, "test-pool-repl: %u of %d rounds made two keys\n", bad,
                hf_test_rounds(ROUNDS));
    CU_ASSERT_EQUAL(bad, 0);
    hf_pool_close(pools[0]);
    hf_pool_close(pools[1]);
    /* Two members, the whole first open on each handle: one key, and keys made on either member
     * copy to the other. */
    race("pair", NULL, rv);
    CU_ASSERT_EQUAL(rv[0], CKR_OK);
    CU_ASSERT_EQUAL(rv[1], CKR_OK);
    CU_ASSERT_EQUAL_FATAL(core_pool_use(core, "pair", &pools[0]), CKR_OK);
    CU_ASSERT_TRUE(repl_is_one(pools[0], "pair", 2));
}

static void test_a_claim_that_is_never_published_is_taken_over(void)
{
    struct hf_store_pool def = {0};
    struct hf_pool *pool = NULL;
    char dead[64], *v = NULL;
    unsigned saved = hf_core_repl_takeover_ms;
    uint64_t t0;

    /* A claimant that died after its claim: nothing else ever changes the value. */
    CU_ASSERT_EQUAL_FATAL(hf_store_pool_get(hf_core_store(core), "stale", &def), CKR_OK);
    snprintf(dead, sizeof(dead), "claim %lld 00000000deadbeef", (long long)def.created);
    hf_store_pool_clear(&def);
    CU_ASSERT_EQUAL(hf_store_meta_set(hf_core_store(core), "pool.replication:stale", dead), CKR_OK);
    hf_core_repl_takeover_ms = 300;
    t0 = now_ms();
    CU_ASSERT_EQUAL_FATAL(core_pool_use(core, "stale", &pool), CKR_OK);
    CU_ASSERT_TRUE(now_ms() - t0 >= 300);
    CU_ASSERT_TRUE(now_ms() - t0 < 3000);
    hf_core_repl_takeover_ms = saved;
    CU_ASSERT_TRUE(repl_is_one(pool, "stale", 1));
    /* Published by the taker, under its own tag. */
    CU_ASSERT_EQUAL_FATAL(hf_store_meta_get(hf_core_store(core), "pool.replication:stale", &v),
                          CKR_OK);
    CU_ASSERT_EQUAL(strncmp(v, "made ", 5), 0);
    CU_ASSERT_PTR_NULL(strstr(v, "deadbeef"));
    free(v);
}

static CK_RV claim_lost(void *arg)
{
    (void)arg;
    return CKR_FUNCTION_REJECTED;
}

static void test_a_claimant_whose_claim_was_taken_leaves_no_key(void)
{
    struct hf_pool *pool = NULL;
    char repl[HF_POOL_REPL_LABEL_MAX], pending[160];
    char **labels = NULL;
    size_t n = 0;

    /* "slow" opened bare (no replication key established), as a claimant has it in hand when it
     * generates; its publish then finds its claim taken over. */
    hf_pool_repl_label("slow", repl);
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_open(rival, "slow", NULL, &pool), CKR_OK);
    CU_ASSERT_EQUAL(label_count(pool, 0, repl), 0);
    CU_ASSERT_EQUAL(
        hf_pool_repl_generate_claimed(pool, repl, 0, "0123456789abcdef", claim_lost, NULL),
        CKR_FUNCTION_REJECTED);
    /* Neither under its label nor under its pending one. */
    snprintf(pending, sizeof(pending), "%s%s#0123456789abcdef", HF_POOL_PENDING_LABEL_PREFIX, repl);
    CU_ASSERT_EQUAL_FATAL(hf_pool_labels(pool, 0, &labels, &n), CKR_OK);
    CU_ASSERT_FALSE(hf_pool_labels_has(labels, n, repl));
    CU_ASSERT_FALSE(hf_pool_labels_has(labels, n, pending));
    hf_pool_labels_free(labels, n);
    hf_pool_close(pool);
}

/* What the shim copy at module counted as stat ("injected_first"), -1 if unknown: it writes its
 * stats on a call once NAME.dump exists (looked at every 100 ms at most). */
static long shim_stat(const char *module, struct hf_pool *pool, const char *stat)
{
    char path[PATH_MAX + 32], line[128];
    size_t n = strlen(stat);
    long v = -1;
    FILE *fp;

    snprintf(path, sizeof(path), "%s.dump", module);
    if ((fp = fopen(path, "w")) == NULL) return -1;
    fclose(fp);
    for (int i = 0; i < 50 && access(path, F_OK) == 0; i++) {
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
        label_count(pool, 0, "any"); /* a call, for the shim to look */
    }
    snprintf(path, sizeof(path), "%s.stats", module);
    if ((fp = fopen(path, "r")) == NULL) return -1;
    while (v < 0 && fgets(line, sizeof(line), fp) != NULL)
        if (strncmp(line, stat, n) == 0 && strncmp(line + n, " = ", 3) == 0)
            v = strtol(line + n + 3, NULL, 10);
    fclose(fp);
    return v;
}

/* A member's passing CKR_GENERAL_ERROR on the generation (SoftHSMv2 gives it while another thread
 * creates objects on the token): the claimant tries again, and the pool has its key once open,
 * not only after a re-sync. */
static void test_a_generation_that_fails_twice_is_tried_again(void)
{
    struct hf_pool *pool = NULL;
    char *v = NULL;

    if (!have_flaky) return;
    CU_ASSERT_EQUAL_FATAL(core_pool_use(core, "flaky", &pool), CKR_OK);
    CU_ASSERT_TRUE(repl_is_one(pool, "flaky", 1));
    CU_ASSERT_EQUAL(shim_stat(flaky_module, pool, "injected_first"), 2);
    CU_ASSERT_EQUAL_FATAL(hf_store_meta_get(hf_core_store(core), "pool.replication:flaky", &v),
                          CKR_OK);
    CU_ASSERT_EQUAL(strncmp(v, "made ", 5), 0);
    free(v);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"two openers of a fresh clone pool make one replication key",
         test_two_openers_of_a_fresh_clone_pool_make_one_replication_key},
        {"a claim that is never published is taken over",
         test_a_claim_that_is_never_published_is_taken_over},
        {"a claimant whose claim was taken leaves no key",
         test_a_claimant_whose_claim_was_taken_leaves_no_key},
        {"a generation that fails twice is tried again",
         test_a_generation_that_fails_twice_is_tried_again},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"clone pool replication key", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
