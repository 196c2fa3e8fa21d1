#include "hf-build.h"

#include "harness.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pkcs11/core/secmem.h"
#include "pkcs11/core/source-local.h"

/* A throw-away SoftHSMv2 token of our own (not the harness's full key store): this suite tests
 * the HSM seam and the local source alone. */
#define TOKEN "hf-test-local"
#define KEK "hf-root-kek"

static struct hf_test_softhsm softhsm;
static struct hf_hsm *hsm;
static struct hf_root *root; /* over hsm */

static int suite_clean(void)
{
    hf_root_close(root);
    root = NULL;
    hf_hsm_close(hsm);
    hsm = NULL;
    hf_test_softhsm_teardown(&softhsm);
    return 0;
}

static int hsm_suite_init(void)
{
    return hf_test_softhsm_setup(&softhsm, "hf-test-local");
}

/* Objects labelled label on the token, counted through the backend module directly. The module
 * is already initialised by hsm (login is per application, so this session is logged in too). */
static long objects_labelled(const char *label)
{
    void *dl = dlopen(HF_SOFTHSM_MODULE, RTLD_NOW | RTLD_LOCAL);
    CK_C_GetFunctionList get;
    CK_FUNCTION_LIST_PTR f;
    CK_SLOT_ID slots[8];
    CK_ULONG n = 8, found = 0;
    CK_TOKEN_INFO info;
    CK_SESSION_HANDLE s;
    CK_OBJECT_HANDLE h[8];
    CK_ATTRIBUTE tmpl = {CKA_LABEL, (void *)label, strlen(label)};
    long count = -1;

    if (dl == NULL) return -1;
    get = (CK_C_GetFunctionList)dlsym(dl, "C_GetFunctionList");
    if (get(&f) != CKR_OK || f->C_GetSlotList(CK_TRUE, slots, &n) != CKR_OK) goto done;
    for (CK_ULONG i = 0; i < n; i++) {
        if (f->C_GetTokenInfo(slots[i], &info) != CKR_OK ||
            memcmp(info.label, TOKEN, strlen(TOKEN)) != 0)
            continue;
        if (f->C_OpenSession(slots[i], CKF_SERIAL_SESSION, NULL, NULL, &s) != CKR_OK) goto done;
        if (f->C_FindObjectsInit(s, &tmpl, 1) == CKR_OK) {
            if (f->C_FindObjects(s, h, 8, &found) == CKR_OK) count = (long)found;
            f->C_FindObjectsFinal(s);
        }
        f->C_CloseSession(s);
    }
done:
    dlclose(dl);
    return count;
}

/* ---- hsm ----------------------------------------------------------------------------------- */

static void test_token_ensure_creates_once(void)
{
    CU_ASSERT_EQUAL(hf_hsm_token_ensure(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, HF_TEST_SO_PIN,
                                        HF_TEST_USER_PIN),
                    CKR_OK);
    CU_ASSERT_EQUAL(hf_hsm_token_ensure(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, "other-so-pin",
                                        "other-pin"),
                    CKR_OK);
    CU_ASSERT_EQUAL(hf_hsm_token_ensure(HF_SOFTHSM_MODULE, softhsm.lock_path, "", "x", "y"),
                    CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(
        hf_hsm_token_ensure("/nonexistent/module.so", softhsm.lock_path, TOKEN, "1234", "1234"),
        CKR_GENERAL_ERROR);
}

static void test_lock_file_is_private_and_must_be_usable(void)
{
    const char *bad = "/nonexistent-dir/hsm.lock";
    struct hf_hsm *h = NULL;
    struct stat st;

    CU_ASSERT_EQUAL_FATAL(stat(softhsm.lock_path, &st), 0); /* made by the first ensure */
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
    /* Running unlocked instead would bring the races back, silently: refused, loudly. */
    CU_ASSERT_EQUAL(hf_hsm_token_ensure(HF_SOFTHSM_MODULE, bad, TOKEN, "1234", "1234"),
                    CKR_FUNCTION_FAILED);
    CU_ASSERT_EQUAL(hf_hsm_open(HF_SOFTHSM_MODULE, bad, TOKEN, HF_TEST_USER_PIN, &h),
                    CKR_FUNCTION_FAILED);
    CU_ASSERT_PTR_NULL(h);
}

static void test_open_refuses_wrong_pin_and_unknown_token(void)
{
    struct hf_hsm *h = NULL;

    CU_ASSERT_EQUAL(hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, "wrong-pin-0000", &h),
                    CKR_PIN_INCORRECT);
    CU_ASSERT_PTR_NULL(h);
    /* The PIN the second ensure passed was ignored: the token kept its first one. */
    CU_ASSERT_EQUAL(hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, "other-pin", &h),
                    CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(
        hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, "no-such-token", HF_TEST_USER_PIN, &h),
        CKR_TOKEN_NOT_PRESENT);
    CU_ASSERT_PTR_NULL(h);
}

static void test_open_and_kek_ensure_is_idempotent(void)
{
    CU_ASSERT_EQUAL_FATAL(
        hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, HF_TEST_USER_PIN, &hsm), CKR_OK);
    CU_ASSERT_FALSE(hf_hsm_has_kek(hsm, KEK));
    CU_ASSERT_EQUAL(hf_hsm_kek_ensure(hsm, KEK), CKR_OK);
    CU_ASSERT_EQUAL(hf_hsm_kek_ensure(hsm, KEK), CKR_OK);
    CU_ASSERT_TRUE(hf_hsm_has_kek(hsm, KEK));
    CU_ASSERT_EQUAL(objects_labelled(KEK), 1);
}

static void test_hmac_key_is_created_once_and_computes_in_the_token(void)
{
    static const char label[] = "test-mac";
    static const unsigned char data[] = "policy row";
    unsigned char m1[HF_HSM_MAC_LEN], m2[HF_HSM_MAC_LEN], m3[HF_HSM_MAC_LEN];

    CU_ASSERT_EQUAL(hf_hsm_hmac(hsm, label, data, sizeof(data), m1), CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_EQUAL(hf_hsm_mac_key_ensure(hsm, label), CKR_OK);
    CU_ASSERT_EQUAL(hf_hsm_mac_key_ensure(hsm, label), CKR_OK);
    CU_ASSERT_EQUAL(objects_labelled(label), 1);
    CU_ASSERT_EQUAL_FATAL(hf_hsm_hmac(hsm, label, data, sizeof(data), m1), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_hsm_hmac(hsm, label, data, sizeof(data), m2), CKR_OK);
    CU_ASSERT_EQUAL(memcmp(m1, m2, sizeof(m1)), 0);
    CU_ASSERT_EQUAL_FATAL(hf_hsm_hmac(hsm, label, data, sizeof(data) - 1, m3), CKR_OK);
    CU_ASSERT_NOT_EQUAL(memcmp(m1, m3, sizeof(m1)), 0);
    /* The KEK wraps only: it must not serve as a MAC key. */
    CU_ASSERT_NOT_EQUAL(hf_hsm_hmac(hsm, KEK, data, sizeof(data), m3), CKR_OK);
    CU_ASSERT_EQUAL(hf_hsm_hmac(hsm, label, NULL, 1, m3), CKR_ARGUMENTS_BAD);
}

static void test_open_while_logged_in_still_checks_the_pin(void)
{
    struct hf_hsm *h = NULL;

    /* The token is logged in for this process already: the backend would not look at the PIN. */
    CU_ASSERT_EQUAL(hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, "wrong-pin-0000", &h),
                    CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL_FATAL(
        hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, HF_TEST_USER_PIN, &h), CKR_OK);
    /* A second handle shares the module; closing it leaves the first working. */
    CU_ASSERT_TRUE(hf_hsm_has_kek(h, KEK));
    hf_hsm_close(h);
    CU_ASSERT_TRUE(hf_hsm_has_kek(hsm, KEK));
    /* No lock path: no locking, same behaviour (vendor HSMs, single-process users). */
    CU_ASSERT_EQUAL_FATAL(hf_hsm_open(HF_SOFTHSM_MODULE, NULL, TOKEN, HF_TEST_USER_PIN, &h),
                          CKR_OK);
    CU_ASSERT_TRUE(hf_hsm_has_kek(h, KEK));
    hf_hsm_close(h);
}

static void test_wrap_unwrap_sizes_up_to_rsa4096_pkcs8(void)
{
    /* 16 and 32: AES keys; 1218, 2437, 2504: RSA-2048 to RSA-4096 PKCS#8 sizes. */
    static const size_t sizes[] = {16, 32, 121, 1218, 2437, 2504};
    unsigned char buf[2504];

    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        unsigned char *w = NULL, *p = NULL;
        size_t wl = 0, pl = 0;
        CU_ASSERT_EQUAL_FATAL(hf_hsm_wrap(hsm, KEK, buf, sizes[i], &w, &wl), CKR_OK);
        CU_ASSERT_EQUAL(wl, (sizes[i] + 7) / 8 * 8 + 8); /* RFC 5649 */
        CU_ASSERT_EQUAL_FATAL(hf_hsm_unwrap(hsm, KEK, w, wl, &p, &pl), CKR_OK);
        /* hsm.h: up to 7 zero bytes of padding may follow. */
        CU_ASSERT_TRUE(pl >= sizes[i] && pl - sizes[i] < 8);
        CU_ASSERT_EQUAL(memcmp(p, buf, sizes[i]), 0);
        for (size_t j = sizes[i]; j < pl; j++)
            CU_ASSERT_EQUAL(p[j], 0);
        hf_secmem_free(p, pl);
        free(w);
    }
}

static void test_unwrap_refuses_tampered_and_unknown_kek(void)
{
    unsigned char key[32] = {1, 2, 3}, *w = NULL, *p = NULL;
    size_t wl = 0, pl = 0;

    CU_ASSERT_EQUAL_FATAL(hf_hsm_wrap(hsm, KEK, key, sizeof(key), &w, &wl), CKR_OK);
    w[5] ^= 0x40;
    CU_ASSERT_EQUAL(hf_hsm_unwrap(hsm, KEK, w, wl, &p, &pl), CKR_WRAPPED_KEY_INVALID);
    CU_ASSERT_PTR_NULL(p);
    w[5] ^= 0x40;
    CU_ASSERT_EQUAL(hf_hsm_unwrap(hsm, KEK, w, wl - 8, &p, &pl), CKR_WRAPPED_KEY_INVALID);
    CU_ASSERT_EQUAL(hf_hsm_unwrap(hsm, KEK, w, wl - 1, &p, &pl), CKR_WRAPPED_KEY_INVALID);
    CU_ASSERT_EQUAL(hf_hsm_unwrap(hsm, "no-such-kek", w, wl, &p, &pl),
                    CKR_UNWRAPPING_KEY_HANDLE_INVALID);
    free(w);
    w = NULL;
    CU_ASSERT_EQUAL(hf_hsm_wrap(hsm, "no-such-kek", key, sizeof(key), &w, &wl),
                    CKR_WRAPPING_KEY_HANDLE_INVALID);
    CU_ASSERT_PTR_NULL(w);
    CU_ASSERT_FALSE(hf_hsm_has_kek(hsm, "no-such-kek"));
    CU_ASSERT_EQUAL(hf_hsm_wrap(NULL, KEK, key, sizeof(key), &w, &wl), CKR_ARGUMENTS_BAD);
}

/* The child of a fork forgets the parent's HSM state, opens its own, and can unwrap; the
 * parent's handle keeps working. Exit code 0 means all of that held in the child. */
static int child_reopen_and_unwrap(const unsigned char *w, size_t wl, const unsigned char *key)
{
    struct hf_hsm *mine = NULL;
    unsigned char *p = NULL;
    size_t pl = 0;
    int code = 1;

    hf_hsm_abandon(hsm);
    if (hf_hsm_open(HF_SOFTHSM_MODULE, softhsm.lock_path, TOKEN, HF_TEST_USER_PIN, &mine) ==
            CKR_OK &&
        hf_hsm_unwrap(mine, KEK, w, wl, &p, &pl) == CKR_OK && pl == 32 && memcmp(p, key, 32) == 0)
        code = 0;
    hf_secmem_free(p, pl);
    hf_hsm_close(mine);
    return code;
}

static void test_child_after_fork_reopens(void)
{
    unsigned char key[32] = {9, 8, 7}, *w = NULL, *p = NULL;
    size_t wl = 0, pl = 0;
    int status = -1;
    pid_t pid;

    CU_ASSERT_EQUAL_FATAL(hf_hsm_wrap(hsm, KEK, key, sizeof(key), &w, &wl), CKR_OK);
    fflush(NULL);
    if ((pid = fork()) == 0) _exit(child_reopen_and_unwrap(w, wl, key));
    CU_ASSERT_FATAL(pid > 0);
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_EQUAL(hf_hsm_unwrap(hsm, KEK, w, wl, &p, &pl), CKR_OK);
    CU_ASSERT_EQUAL(pl, 32);
    hf_secmem_free(p, pl);
    free(w);
}

/* ---- local source -------------------------------------------------------------------------- */

static struct hf_local *local;
static int64_t next_id = 1;

static void version_clear(struct hf_key_version *v)
{
    free(v->wrapped);
    free(v->kek_label);
    free(v->public_der);
    memset(v, 0, sizeof(*v));
}

static struct hf_material *material_new(enum hf_alg alg, unsigned bits)
{
    struct hf_material *m = NULL;

    CU_ASSERT_EQUAL_FATAL(hf_material_generate(alg, bits, &m), CKR_OK);
    return m;
}

static void seal(struct hf_material *m, struct hf_key_version *v)
{
    memset(v, 0, sizeof(*v));
    v->id = next_id++;
    v->state = HF_STATE_ACTIVE;
    CU_ASSERT_EQUAL_FATAL(hf_local_seal(local, m, v), CKR_OK);
}

static bool same_material(const struct hf_material *a, const struct hf_material *b)
{
    unsigned char *x = NULL, *y = NULL;
    size_t xl = 0, yl = 0;
    bool same;

    if (hf_material_to_bytes(a, &x, &xl) != CKR_OK || hf_material_to_bytes(b, &y, &yl) != CKR_OK)
        return false;
    same = xl == yl && memcmp(x, y, xl) == 0 && hf_material_alg(a) == hf_material_alg(b) &&
           hf_material_bits(a) == hf_material_bits(b);
    hf_secmem_free(x, xl);
    hf_secmem_free(y, yl);
    return same;
}

static void test_local_open_and_bad_arguments(void)
{
    struct hf_local *l = NULL;

    CU_ASSERT_EQUAL(hf_local_open(NULL, KEK, 4, &l), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL_FATAL(hf_root_of_hsm(hsm, &root), CKR_OK);
    CU_ASSERT_EQUAL(hf_local_open(root, NULL, 4, &l), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL_FATAL(hf_local_open(root, KEK, 4, &local), CKR_OK);
    CU_ASSERT_EQUAL(hf_local_cached(local), 0);
    CU_ASSERT_EQUAL(hf_local_material(local, NULL, NULL), CKR_ARGUMENTS_BAD);
}

static void round_trip(enum hf_alg alg, unsigned bits)
{
    struct hf_material *m = material_new(alg, bits), *back = NULL;
    struct hf_key_version v;

    seal(m, &v);
    CU_ASSERT_PTR_NOT_NULL(v.wrapped);
    CU_ASSERT_STRING_EQUAL(v.kek_label, KEK);
    CU_ASSERT_EQUAL(v.public_der != NULL, alg != HF_ALG_AES);
    CU_ASSERT_EQUAL_FATAL(hf_local_material(local, &v, &back), CKR_OK);
    CU_ASSERT_PTR_NOT_EQUAL(back, m); /* rebuilt from the wrapped form, not the original */
    CU_ASSERT_TRUE(same_material(m, back));
    hf_material_unref(back);
    hf_local_evict(local, v.id);
    hf_material_unref(m);
    version_clear(&v);
}

static void test_seal_and_unwrap_aes(void)
{
    round_trip(HF_ALG_AES, 128);
    round_trip(HF_ALG_AES, 256);
}

static void test_seal_and_unwrap_rsa(void)
{
    round_trip(HF_ALG_RSA, 2048);
}

static void test_seal_and_unwrap_ec(void)
{
    /* P-256 PKCS#8 is 138 bytes and P-384 185: neither a multiple of 8, so SoftHSMv2 pads. */
    round_trip(HF_ALG_EC, 256);
    round_trip(HF_ALG_EC, 384);
}

static void test_tampered_or_swapped_blob_is_refused(void)
{
    struct hf_material *a = material_new(HF_ALG_EC, 256), *b = material_new(HF_ALG_EC, 256);
    struct hf_material *out = NULL;
    struct hf_key_version va, vb;
    unsigned char *tmp;

    seal(a, &va);
    seal(b, &vb);
    va.wrapped[va.wrapped_len / 2] ^= 0x01;
    CU_ASSERT_EQUAL(hf_local_material(local, &va, &out), CKR_WRAPPED_KEY_INVALID);
    CU_ASSERT_PTR_NULL(out);
    va.wrapped[va.wrapped_len / 2] ^= 0x01;
    /* b's blob under a's public key: unwraps fine, but is not a's key. */
    tmp = va.wrapped;
    va.wrapped = vb.wrapped;
    CU_ASSERT_EQUAL(hf_local_material(local, &va, &out), CKR_WRAPPED_KEY_INVALID);
    va.wrapped = tmp;
    CU_ASSERT_EQUAL(hf_local_material(local, &va, &out), CKR_OK);
    hf_material_unref(out);
    hf_local_flush(local);
    CU_ASSERT_EQUAL(hf_local_cached(local), 0);
    version_clear(&va);
    version_clear(&vb);
    hf_material_unref(a);
    hf_material_unref(b);
}

static void test_destroyed_version_is_refused(void)
{
    struct hf_material *m = material_new(HF_ALG_AES, 256), *out = NULL;
    struct hf_key_version v;
    unsigned char *w;

    seal(m, &v);
    w = v.wrapped;
    v.wrapped = NULL;
    CU_ASSERT_EQUAL(hf_local_material(local, &v, &out), CKR_KEY_HANDLE_INVALID);
    v.wrapped = w;
    v.state = HF_STATE_DESTROYED;
    CU_ASSERT_EQUAL(hf_local_material(local, &v, &out), CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_PTR_NULL(out);
    version_clear(&v);
    hf_material_unref(m);
}

/* A migration meets pool versions too: their blob is under a pool's backup KEK, not ours, and
 * must come out of hf_local_rewrap untouched (not "cannot rewrap", not replaced). */
static void test_rewrap_leaves_a_pool_version_alone(void)
{
    unsigned char blob[40];
    struct hf_key_version v = {.version = 1, .kek_label = (char *)"pool:p1"};

    memset(blob, 0xa5, sizeof(blob));
    v.wrapped = blob;
    v.wrapped_len = sizeof(blob);
    CU_ASSERT_EQUAL(hf_local_rewrap(local, &v), CKR_OK);
    CU_ASSERT_PTR_EQUAL(v.wrapped, blob);
    CU_ASSERT_EQUAL(v.wrapped_len, sizeof(blob));
    CU_ASSERT_EQUAL(blob[0], 0xa5);
}

static void test_cache_hit_returns_the_same_material(void)
{
    struct hf_material *m = material_new(HF_ALG_AES, 256), *one = NULL, *two = NULL;
    struct hf_key_version v;

    seal(m, &v);
    CU_ASSERT_EQUAL_FATAL(hf_local_material(local, &v, &one), CKR_OK);
    CU_ASSERT_EQUAL(hf_local_cached(local), 1);
    /* A hit needs no HSM: it works with the blob gone bad. */
    v.wrapped[0] ^= 0xff;
    CU_ASSERT_EQUAL_FATAL(hf_local_material(local, &v, &two), CKR_OK);
    CU_ASSERT_PTR_EQUAL(one, two);
    hf_material_unref(two);
    hf_local_evict(local, v.id);
    CU_ASSERT_EQUAL(hf_local_cached(local), 0);
    /* Evicted while referenced: still usable until the last unref. */
    CU_ASSERT_TRUE(same_material(m, one));
    hf_material_unref(one);
    CU_ASSERT_EQUAL(hf_local_material(local, &v, &two), CKR_WRAPPED_KEY_INVALID);
    version_clear(&v);
    hf_material_unref(m);
}

static void test_cache_evicts_least_recently_used_beyond_max(void)
{
    enum { N = 6 }; /* local's cache_max is 4 */
    struct hf_material *m[N], *got[N], *again = NULL;
    struct hf_key_version v[N];

    for (int i = 0; i < N; i++) {
        m[i] = material_new(HF_ALG_AES, 128);
        seal(m[i], &v[i]);
        CU_ASSERT_EQUAL_FATAL(hf_local_material(local, &v[i], &got[i]), CKR_OK);
        if (i == 3) { /* touch version 0 so that 1, not 0, is the oldest */
            CU_ASSERT_EQUAL(hf_local_material(local, &v[0], &again), CKR_OK);
            hf_material_unref(again);
        }
    }
    CU_ASSERT_EQUAL(hf_local_cached(local), 4);
    CU_ASSERT_EQUAL(hf_local_material(local, &v[0], &again), CKR_OK);
    CU_ASSERT_PTR_EQUAL(again, got[0]); /* kept: used recently */
    hf_material_unref(again);
    CU_ASSERT_EQUAL(hf_local_material(local, &v[1], &again), CKR_OK);
    CU_ASSERT_PTR_NOT_EQUAL(again, got[1]); /* evicted, unwrapped again */
    CU_ASSERT_TRUE(same_material(again, m[1]));
    hf_material_unref(again);
    CU_ASSERT_EQUAL(hf_local_cached(local), 4);
    for (int i = 0; i < N; i++) {
        hf_material_unref(got[i]);
        hf_material_unref(m[i]);
        version_clear(&v[i]);
    }
    hf_local_flush(local);
}

/* ---- threads ------------------------------------------------------------------------------- */

enum { THREADS = 4, VERSIONS = 16, ROUNDS = 400 };

struct hammer {
    struct hf_local *local;
    struct hf_key_version *v;
    unsigned char (*secrets)[32];
    unsigned seed;
    int errors;
};

static void *hammer_run(void *arg)
{
    struct hammer *h = arg;

    for (int i = 0; i < ROUNDS; i++) {
        int k = (int)(rand_r(&h->seed) % VERSIONS);
        struct hf_material *m = NULL;
        size_t len;
        if (hf_local_material(h->local, &h->v[k], &m) != CKR_OK) {
            h->errors++;
            continue;
        }
        const unsigned char *s = hf_material_secret(m, &len);
        if (len != 32 || memcmp(s, h->secrets[k], 32) != 0) h->errors++;
        hf_material_unref(m);
    }
    return NULL;
}

static void test_threads_hammering_sixteen_versions(void)
{
    struct hf_key_version v[VERSIONS];
    unsigned char secrets[VERSIONS][32];
    struct hammer h[THREADS];
    pthread_t t[THREADS];
    struct hf_local *l = NULL;

    /* A cache smaller than the working set: hits, misses, races and evictions all happen. */
    CU_ASSERT_EQUAL_FATAL(hf_local_open(root, KEK, 8, &l), CKR_OK);
    for (int i = 0; i < VERSIONS; i++) {
        struct hf_material *m = material_new(HF_ALG_AES, 256);
        size_t len;
        memcpy(secrets[i], hf_material_secret(m, &len), 32);
        seal(m, &v[i]);
        hf_material_unref(m);
    }
    for (int i = 0; i < THREADS; i++) {
        h[i] = (struct hammer){.local = l, .v = v, .secrets = secrets, .seed = 1234u + i};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, hammer_run, &h[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CU_ASSERT_EQUAL(h[i].errors, 0);
    }
    CU_ASSERT_TRUE(hf_local_cached(l) <= 8);
    hf_local_close(l);
    for (int i = 0; i < VERSIONS; i++)
        version_clear(&v[i]);
}

static void test_local_close(void)
{
    hf_local_close(local);
    local = NULL;
    hf_local_close(NULL);
    hf_hsm_close(NULL);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"token ensure creates the token once", test_token_ensure_creates_once},
        {"lock file is private (0600) and must be usable",
         test_lock_file_is_private_and_must_be_usable},
        {"open refuses a wrong PIN and an unknown token",
         test_open_refuses_wrong_pin_and_unknown_token},
        {"open, and KEK ensure is idempotent (one object)", test_open_and_kek_ensure_is_idempotent},
        {"HMAC key is created once and computes in the token",
         test_hmac_key_is_created_once_and_computes_in_the_token},
        {"open while logged in still checks the PIN",
         test_open_while_logged_in_still_checks_the_pin},
        {"wrap/unwrap sizes up to RSA-4096 PKCS#8", test_wrap_unwrap_sizes_up_to_rsa4096_pkcs8},
        {"unwrap refuses a tampered blob and an unknown KEK",
         test_unwrap_refuses_tampered_and_unknown_kek},
        {"child after fork reopens and unwraps", test_child_after_fork_reopens},
        {"local source open and bad arguments", test_local_open_and_bad_arguments},
        {"seal and unwrap AES", test_seal_and_unwrap_aes},
        {"seal and unwrap RSA", test_seal_and_unwrap_rsa},
        {"seal and unwrap EC", test_seal_and_unwrap_ec},
        {"tampered or swapped blob is refused", test_tampered_or_swapped_blob_is_refused},
        {"destroyed version is refused", test_destroyed_version_is_refused},
        {"rewrap leaves a pool version alone", test_rewrap_leaves_a_pool_version_alone},
        {"cache hit returns the same material", test_cache_hit_returns_the_same_material},
        {"cache evicts least recently used beyond max",
         test_cache_evicts_least_recently_used_beyond_max},
        {"4 threads hammering 16 versions", test_threads_hammering_sixteen_versions},
        {"close", test_local_close},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"local source over SoftHSMv2", hsm_suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
