/* Keys whose material lives in an HSM pool (issue 14): AES keys generated inside a member of a
 * two-token SoftHSMv2 pool, used for AES-GCM through the core and through the PKCS#11 module,
 * rotated and destroyed; the store keeps no material for them. A clone-mode pool on the same two
 * tokens: its keys are on both members, either member decrypts alone, a member that lost a key's
 * object is re-synced in the background while requests go to the other, and destroying the key
 * removes it from both. */
#include "hf-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "harness-pool.h"
#include "module-loader.h"
#include "pkcs11/core/core.h"
#include "pkcs11/core/hsm.h"
#include "pkcs11/core/source-pool.h"

#include <unistd.h>

#define TOKEN_A "hf-pool-a"
#define TOKEN_B "hf-pool-b"
#define PIN_ENV "HF_TEST_POOL_PIN"

static struct hf_test_env env;
static struct hf_core *core;
static const struct hf_actor who = {"cli", "uid:test"};

static const unsigned char iv12[12] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2};
static const unsigned char aad[] = "request-header";
static const unsigned char msg32[32] = "a 32-byte data key, in clear...";

/* ---- helpers --------------------------------------------------------------------------------- */

static CK_RV pool_add_mode(const char *name, enum hf_pool_mode mode, const char *label_a,
                           const char *label_b)
{
    return hf_test_pool_add(core, &who, env.cfg.hsm_module, name, mode, label_a, label_b, PIN_ENV,
                            2);
}

/* What a member token says about the object labelled label. */
struct probe {
    const char *label;
    bool found;
    CK_BBOOL sensitive, extractable, token;
};

static CK_RV probe_fn(struct hf_hsm *hsm, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, void *arg)
{
    struct probe *p = arg;
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_ATTRIBUTE a[] = {{CKA_SENSITIVE, &p->sensitive, sizeof(CK_BBOOL)},
                        {CKA_EXTRACTABLE, &p->extractable, sizeof(CK_BBOOL)},
                        {CKA_TOKEN, &p->token, sizeof(CK_BBOOL)}};
    CK_RV rv;

    /* A fresh search each time (the cache would remember a destroyed object's handle). */
    hf_hsm_object_forget(hsm, CKO_SECRET_KEY, p->label);
    if ((rv = hf_hsm_object_find(hsm, s, CKO_SECRET_KEY, p->label, &h)) != CKR_OK) return rv;
    p->found = h != CK_INVALID_HANDLE;
    return p->found ? f->C_GetAttributeValue(s, h, a, 3) : CKR_OK;
}

/* How many of the two member tokens hold label; *out: the last one found. */
static int members_holding(const char *label, struct probe *out)
{
    const char *tokens[2] = {TOKEN_A, TOKEN_B};
    int n = 0;

    for (int i = 0; i < 2; i++) {
        struct hf_hsm *hsm = NULL;
        struct probe p = {.label = label};
        CU_ASSERT_EQUAL_FATAL(
            hf_hsm_open(env.cfg.hsm_module, NULL, tokens[i], HF_TEST_USER_PIN, &hsm), CKR_OK);
        CU_ASSERT_EQUAL(hf_hsm_run(hsm, probe_fn, &p), CKR_OK);
        hf_hsm_close(hsm);
        if (p.found) {
            n++;
            if (out) *out = p;
        }
    }
    return n;
}

static CK_RV key_make(const char *name, const char *source, struct hf_key *k,
                      struct hf_key_version *v)
{
    struct hf_key_spec spec = {.name = name, .alg = HF_ALG_AES, .bits = 256, .source = source};

    return hf_core_key_create(core, &spec, &who, k, v);
}

static CK_RV gcm(const struct hf_key *k, const struct hf_key_version *v, bool enc,
                 const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen)
{
    return hf_core_key_gcm(core, k, v, enc, iv12, sizeof(iv12), aad, sizeof(aad), 16, in, inlen,
                           out, outlen);
}

/* ---- suite ----------------------------------------------------------------------------------- */

static int suite_init(void)
{
    CK_RV rv = hf_test_pool_suite_setup(&env, &core, &who, TOKEN_A, TOKEN_B, PIN_ENV, 2);

    if (rv == CKR_OK) rv = pool_add_mode("cl", HF_POOL_MODE_CLONE, TOKEN_A, TOKEN_B);
    if (rv == CKR_OK) rv = pool_add_mode("ex", HF_POOL_MODE_EXPORT, TOKEN_A, TOKEN_B);
    if (rv != CKR_OK) fprintf(stderr, "suite setup failed: 0x%lx\n", (unsigned long)rv);
    return rv == CKR_OK ? 0 : -1;
}

static int suite_clean(void)
{
    hf_core_close(core);
    hf_test_env_teardown(&env);
    return 0;
}

/* ---- cases ----------------------------------------------------------------------------------- */

static void test_a_pool_key_is_a_sensitive_object_in_one_member_and_no_material_in_the_store(void)
{
    struct hf_key k = {0};
    struct hf_key_version v = {0}, row = {0};
    struct probe p = {0};

    CU_ASSERT_EQUAL_FATAL(key_make("pk-made", "pool:p1", &k, &v), CKR_OK);
    CU_ASSERT_STRING_EQUAL(k.source, "pool:p1");
    CU_ASSERT_PTR_NULL(v.wrapped);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v.kek_label);
    CU_ASSERT(strncmp(v.kek_label, "pool:p1/", 8) == 0);
    /* The row as the store gives it back (its policy MAC checked): live, with no material. */
    CU_ASSERT_EQUAL_FATAL(hf_store_version_find(hf_core_store(core), k.uuid, 1, &row), CKR_OK);
    CU_ASSERT_PTR_NULL(row.wrapped);
    CU_ASSERT_EQUAL(row.wrapped_len, 0);
    CU_ASSERT_EQUAL(row.state, HF_STATE_ACTIVE);
    CU_ASSERT(row.has_mac);
    CU_ASSERT(hf_key_version_has_material(&row));
    CU_ASSERT_STRING_EQUAL(row.kek_label, v.kek_label);
    /* Exactly one member holds it, labelled with the version's UUID, and it cannot leave. */
    CU_ASSERT_EQUAL(members_holding(v.uuid, &p), 1);
    CU_ASSERT_EQUAL(p.sensitive, CK_TRUE);
    CU_ASSERT_EQUAL(p.extractable, CK_FALSE);
    CU_ASSERT_EQUAL(p.token, CK_TRUE);
    /* Its material is nobody's to read in process. */
    struct hf_material *m = NULL;
    CU_ASSERT_EQUAL(hf_core_material(core, &v, &m), CKR_KEY_FUNCTION_NOT_PERMITTED);
    CU_ASSERT_PTR_NULL(m);
    hf_key_clear(&k);
    hf_key_version_clear(&v);
    hf_key_version_clear(&row);
}

static void test_gcm_round_trips_in_the_member_and_a_rotated_key_still_decrypts_old_data(void)
{
    struct hf_key k = {0};
    struct hf_key_version v1 = {0}, v2 = {0};
    unsigned char ct1[48], ct2[48], pt[48];
    size_t ct1_len = sizeof(ct1), ct2_len = sizeof(ct2), pt_len = sizeof(pt);

    CU_ASSERT_EQUAL_FATAL(key_make("pk-rot", "pool:p1", &k, &v1), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(gcm(&k, &v1, true, msg32, sizeof(msg32), ct1, &ct1_len), CKR_OK);
    CU_ASSERT_EQUAL(ct1_len, sizeof(msg32) + 16);
    CU_ASSERT(memcmp(ct1, msg32, sizeof(msg32)) != 0);
    CU_ASSERT_EQUAL_FATAL(gcm(&k, &v1, false, ct1, ct1_len, pt, &pt_len), CKR_OK);
    CU_ASSERT_EQUAL(pt_len, sizeof(msg32));
    CU_ASSERT(memcmp(pt, msg32, sizeof(msg32)) == 0);

    CU_ASSERT_EQUAL_FATAL(hf_core_key_rotate(core, "pk-rot", &who, &v2), CKR_OK);
    CU_ASSERT_EQUAL(v2.version, 2);
    CU_ASSERT_PTR_NULL(v2.wrapped);
    CU_ASSERT(hf_key_version_is_in_pool(&v2));
    CU_ASSERT_EQUAL(members_holding(v2.uuid, NULL), 1);
    CU_ASSERT_EQUAL_FATAL(gcm(&k, &v2, true, msg32, sizeof(msg32), ct2, &ct2_len), CKR_OK);
    /* Another key: another ciphertext for the same IV and input. */
    CU_ASSERT(memcmp(ct1, ct2, ct1_len) != 0);
    pt_len = sizeof(pt);
    CU_ASSERT_EQUAL(gcm(&k, &v1, false, ct1, ct1_len, pt, &pt_len), CKR_OK);
    CU_ASSERT(memcmp(pt, msg32, sizeof(msg32)) == 0);
    pt_len = sizeof(pt);
    CU_ASSERT_EQUAL(gcm(&k, &v2, false, ct2, ct2_len, pt, &pt_len), CKR_OK);
    CU_ASSERT(memcmp(pt, msg32, sizeof(msg32)) == 0);
    /* The wrong version does not open it. */
    pt_len = sizeof(pt);
    CU_ASSERT_EQUAL(gcm(&k, &v2, false, ct1, ct1_len, pt, &pt_len), CKR_ENCRYPTED_DATA_INVALID);
    hf_key_clear(&k);
    hf_key_version_clear(&v1);
    hf_key_version_clear(&v2);
}

static void test_a_tampered_tag_answers_as_a_local_key_does_and_fails_no_member_over(void)
{
    struct hf_key pk = {0}, lk = {0};
    struct hf_key_version pv = {0}, lv = {0};
    unsigned char pct[48], lct[48], pt[48];
    size_t pct_len = sizeof(pct), lct_len = sizeof(lct), pt_len;
    CK_RV local_rv;

    CU_ASSERT_EQUAL_FATAL(key_make("pk-tag", "pool:p1", &pk, &pv), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(key_make("lk-tag", NULL, &lk, &lv), CKR_OK);
    CU_ASSERT_STRING_EQUAL(lk.source, "local");
    CU_ASSERT_EQUAL_FATAL(gcm(&pk, &pv, true, msg32, sizeof(msg32), pct, &pct_len), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(gcm(&lk, &lv, true, msg32, sizeof(msg32), lct, &lct_len), CKR_OK);
    pct[pct_len - 1] ^= 1;
    lct[lct_len - 1] ^= 1;
    pt_len = sizeof(pt);
    local_rv = gcm(&lk, &lv, false, lct, lct_len, pt, &pt_len);
    CU_ASSERT_EQUAL(local_rv, CKR_ENCRYPTED_DATA_INVALID);
    /* Many times over: a forged tag is the input's fault, so the member that holds the key
     * stays in service (taken out, its keys would answer CKR_DEVICE_ERROR next). */
    for (int i = 0; i < 5; i++) {
        pt_len = sizeof(pt);
        CU_ASSERT_EQUAL(gcm(&pk, &pv, false, pct, pct_len, pt, &pt_len), local_rv);
    }
    pct[pct_len - 1] ^= 1;
    pt_len = sizeof(pt);
    CU_ASSERT_EQUAL(gcm(&pk, &pv, false, pct, pct_len, pt, &pt_len), CKR_OK);
    CU_ASSERT(memcmp(pt, msg32, sizeof(msg32)) == 0);
    hf_key_clear(&pk);
    hf_key_clear(&lk);
    hf_key_version_clear(&pv);
    hf_key_version_clear(&lv);
}

static void test_a_pool_that_is_missing_or_cannot_open_writes_nothing(void)
{
    struct hf_key k = {0};
    struct hf_key_spec spec = {.name = "pk-bad", .alg = HF_ALG_AES, .bits = 256};
    CK_RV rv;

    CU_ASSERT_EQUAL(key_make("pk-bad", "pool:nosuch", NULL, NULL), CKR_KEY_HANDLE_INVALID);
    rv = key_make("pk-bad", "pool:dead", NULL, NULL);
    CU_ASSERT_NOT_EQUAL(rv, CKR_OK);
    CU_ASSERT_EQUAL(hf_store_key_get(hf_core_store(core), "pk-bad", &k), CKR_KEY_HANDLE_INVALID);
    /* What a pool key cannot be. */
    spec.source = "pool:p1";
    spec.exportable = true;
    CU_ASSERT_EQUAL(hf_core_key_create(core, &spec, &who, NULL, NULL), CKR_ATTRIBUTE_VALUE_INVALID);
    spec.exportable = false;
    spec.alg = HF_ALG_EC;
    CU_ASSERT_EQUAL(hf_core_key_create(core, &spec, &who, NULL, NULL), CKR_KEY_SIZE_RANGE);
    spec.alg = HF_ALG_AES;
    CU_ASSERT_EQUAL(hf_core_key_import(core, &spec, msg32, sizeof(msg32), &who, NULL, NULL),
                    CKR_FUNCTION_NOT_SUPPORTED);
    spec.source = "hsm:p1";
    CU_ASSERT_EQUAL(hf_core_key_create(core, &spec, &who, NULL, NULL), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(hf_store_key_get(hf_core_store(core), "pk-bad", &k), CKR_KEY_HANDLE_INVALID);
    hf_key_clear(&k);
}

static void test_destroying_a_version_or_the_key_destroys_the_member_objects(void)
{
    struct hf_key k = {0};
    struct hf_key_version v1 = {0}, v2 = {0}, v3 = {0};
    unsigned char ct[48];
    size_t ct_len = sizeof(ct);

    CU_ASSERT_EQUAL_FATAL(key_make("pk-gone", "pool:p1", &k, &v1), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_core_key_rotate(core, "pk-gone", &who, &v2), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_core_key_rotate(core, "pk-gone", &who, &v3), CKR_OK);
    CU_ASSERT_EQUAL(members_holding(v1.uuid, NULL), 1);
    CU_ASSERT_EQUAL(hf_core_version_set_state(core, "pk-gone", 1, HF_STATE_DEACTIVATED, &who),
                    CKR_OK);
    CU_ASSERT_EQUAL(hf_core_version_set_state(core, "pk-gone", 1, HF_STATE_DESTROYED, &who),
                    CKR_OK);
    CU_ASSERT_EQUAL(members_holding(v1.uuid, NULL), 0);
    CU_ASSERT_EQUAL(members_holding(v2.uuid, NULL), 1);
    CU_ASSERT_EQUAL(hf_core_key_destroy(core, "pk-gone", &who), CKR_OK);
    CU_ASSERT_EQUAL(members_holding(v2.uuid, NULL), 0);
    CU_ASSERT_EQUAL(members_holding(v3.uuid, NULL), 0);
    hf_key_version_clear(&v3);
    CU_ASSERT_EQUAL_FATAL(hf_store_version_find(hf_core_store(core), k.uuid, 3, &v3), CKR_OK);
    CU_ASSERT_EQUAL(v3.state, HF_STATE_DESTROYED);
    CU_ASSERT(!hf_key_version_has_material(&v3));
    CU_ASSERT_EQUAL(gcm(&k, &v3, true, msg32, sizeof(msg32), ct, &ct_len), CKR_KEY_HANDLE_INVALID);
    hf_key_clear(&k);
    hf_key_version_clear(&v1);
    hf_key_version_clear(&v2);
    hf_key_version_clear(&v3);
}

/* ---- clone mode -------------------------------------------------------------------------------
 */

static CK_RV destroy_on_fn(struct hf_hsm *hsm, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                           void *arg)
{
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_RV rv;

    hf_hsm_object_forget(hsm, CKO_SECRET_KEY, arg);
    if ((rv = hf_hsm_object_find(hsm, s, CKO_SECRET_KEY, arg, &h)) != CKR_OK) return rv;
    return h == CK_INVALID_HANDLE ? CKR_KEY_HANDLE_INVALID : f->C_DestroyObject(s, h);
}

/* Destroys the object labelled label on one token behind the core's back. */
static CK_RV destroy_on(const char *token, const char *label)
{
    struct hf_hsm *hsm = NULL;
    CK_RV rv = hf_hsm_open(env.cfg.hsm_module, NULL, token, HF_TEST_USER_PIN, &hsm);

    if (rv == CKR_OK) rv = hf_hsm_run(hsm, destroy_on_fn, (void *)label);
    hf_hsm_close(hsm);
    return rv;
}

static void test_a_clone_key_is_on_both_members_and_either_member_alone_decrypts(void)
{
    struct hf_key k = {0};
    struct hf_key_version v = {0};
    struct hf_pool *pool = NULL;
    struct probe p = {0};
    unsigned char ct[48], pt[32];
    size_t ct_len = sizeof(ct);

    CU_ASSERT_EQUAL_FATAL(key_make("ck-both", "pool:cl", &k, &v), CKR_OK);
    CU_ASSERT_STRING_EQUAL(v.kek_label, "pool:cl");
    CU_ASSERT_PTR_NULL(v.wrapped);
    CU_ASSERT_EQUAL(members_holding(v.uuid, &p), 2);
    /* Never readable; extractable, since a copy is a wrap under the replication key. */
    CU_ASSERT_EQUAL(p.sensitive, CK_TRUE);
    CU_ASSERT_EQUAL(p.extractable, CK_TRUE);
    CU_ASSERT_EQUAL(members_holding("holdfast-pool-replication:cl", &p), 2);
    CU_ASSERT_EQUAL(p.sensitive, CK_TRUE);
    CU_ASSERT_EQUAL(gcm(&k, &v, true, msg32, sizeof(msg32), ct, &ct_len), CKR_OK);
    /* Each member on its own, through an executor of our own. */
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_open(core, "cl", NULL, &pool), CKR_OK);
    for (size_t m = 0; m < 2; m++) {
        size_t pt_len = sizeof(pt);
        memset(pt, 0, sizeof(pt));
        CU_ASSERT_EQUAL(hf_pool_key_gcm(pool, m, v.uuid, false, iv12, sizeof(iv12), aad,
                                        sizeof(aad), 16, ct, ct_len, pt, &pt_len),
                        CKR_OK);
        CU_ASSERT(pt_len == sizeof(msg32) && memcmp(pt, msg32, sizeof(msg32)) == 0);
    }
    hf_pool_close(pool);
    hf_key_clear(&k);
    hf_key_version_clear(&v);
}

static void test_a_member_that_lost_a_clone_key_fails_no_request_and_is_re_synced(void)
{
    struct hf_key k = {0};
    struct hf_key_version v = {0};
    unsigned char ct[48], pt[32];
    size_t ct_len = sizeof(ct);
    int waited = 0;

    CU_ASSERT_EQUAL_FATAL(key_make("ck-lost", "pool:cl", &k, &v), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(gcm(&k, &v, true, msg32, sizeof(msg32), ct, &ct_len), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(destroy_on(TOKEN_B, v.uuid), CKR_OK);
    CU_ASSERT_EQUAL(members_holding(v.uuid, NULL), 1);
    /* Requests alternate between the members: those landing on b move to a. */
    for (int i = 0; i < 4; i++) {
        size_t pt_len = sizeof(pt);
        CU_ASSERT_EQUAL(gcm(&k, &v, false, ct, ct_len, pt, &pt_len), CKR_OK);
    }
    /* The probe thread copies the key back to b. A copy can fail (SoftHSMv2 answers
     * CKR_GENERAL_ERROR now and then while another session of the process searches the token,
     * as members_holding does): the next request that lands on b marks it again, as in service. */
    while (members_holding(v.uuid, NULL) < 2 && waited++ < 100) {
        size_t pt_len = sizeof(pt);
        CU_ASSERT_EQUAL(gcm(&k, &v, false, ct, ct_len, pt, &pt_len), CKR_OK);
        usleep(100 * 1000);
    }
    CU_ASSERT_EQUAL(members_holding(v.uuid, NULL), 2);
    hf_key_clear(&k);
    hf_key_version_clear(&v);
}

static void test_destroying_a_clone_key_removes_it_from_every_member(void)
{
    struct hf_key k = {0};
    struct hf_key_version v1 = {0}, v2 = {0};

    CU_ASSERT_EQUAL_FATAL(key_make("ck-gone", "pool:cl", &k, &v1), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_core_key_rotate(core, "ck-gone", &who, &v2), CKR_OK);
    CU_ASSERT_STRING_EQUAL(v2.kek_label, "pool:cl");
    CU_ASSERT_EQUAL(members_holding(v1.uuid, NULL), 2);
    CU_ASSERT_EQUAL(members_holding(v2.uuid, NULL), 2);
    CU_ASSERT_EQUAL(hf_core_key_destroy(core, "ck-gone", &who), CKR_OK);
    CU_ASSERT_EQUAL(members_holding(v1.uuid, NULL), 0);
    CU_ASSERT_EQUAL(members_holding(v2.uuid, NULL), 0);
    hf_key_clear(&k);
    hf_key_version_clear(&v1);
    hf_key_version_clear(&v2);
}

static void test_an_export_member_emptied_is_restored_from_the_store_and_decrypts_alone(void)
{
    struct hf_key k = {0};
    struct hf_key_version v = {0};
    struct hf_pool *pool = NULL;
    unsigned char ct[48], pt[32];
    size_t ct_len = sizeof(ct), pt_len = sizeof(pt), restored = 0;

    CU_ASSERT_EQUAL_FATAL(key_make("ek", "pool:ex", &k, &v), CKR_OK);
    CU_ASSERT_STRING_EQUAL(v.kek_label, "pool:ex");
    /* The backup blob: the key wrapped under the pool's backup KEK, never the key itself. */
    CU_ASSERT_PTR_NOT_NULL(v.wrapped);
    CU_ASSERT(v.wrapped_len == 40);
    CU_ASSERT_EQUAL(gcm(&k, &v, true, msg32, sizeof(msg32), ct, &ct_len), CKR_OK);
    /* b loses everything of the pool's, as a replaced token would. */
    CU_ASSERT_EQUAL_FATAL(destroy_on(TOKEN_B, v.uuid), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(destroy_on(TOKEN_B, "holdfast-pool-replication:ex"), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_pool_restore(core, "ex", "b", &who, &restored), CKR_OK);
    CU_ASSERT_EQUAL(restored, 2);
    CU_ASSERT_EQUAL(members_holding(v.uuid, NULL), 2);
    CU_ASSERT_EQUAL(members_holding("holdfast-pool-replication:ex", NULL), 2);
    CU_ASSERT_EQUAL(hf_core_pool_restore(core, "ex", "b", &who, &restored), CKR_OK);
    CU_ASSERT_EQUAL(restored, 0);
    CU_ASSERT_EQUAL_FATAL(hf_core_pool_open(core, "ex", NULL, &pool), CKR_OK);
    CU_ASSERT_EQUAL(hf_pool_key_gcm(pool, 1, v.uuid, false, iv12, sizeof(iv12), aad, sizeof(aad),
                                    16, ct, ct_len, pt, &pt_len),
                    CKR_OK);
    CU_ASSERT(pt_len == sizeof(msg32) && memcmp(pt, msg32, sizeof(msg32)) == 0);
    hf_pool_close(pool);
    /* Only an export pool, and only its members. */
    CU_ASSERT_EQUAL(hf_core_pool_restore(core, "cl", "b", &who, &restored),
                    CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(hf_core_pool_restore(core, "ex", "zz", &who, &restored),
                    CKR_KEY_HANDLE_INVALID);
    hf_key_clear(&k);
    hf_key_version_clear(&v);
}

/* ---- through the PKCS#11 module -----------------------------------------------------------------
 */

static CK_OBJECT_HANDLE find_secret(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s,
                                    const char *label)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_ATTRIBUTE t[] = {{CKA_CLASS, &cls, sizeof(cls)}, {CKA_LABEL, (void *)label, strlen(label)}};
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_ULONG n = 0;

    if (p11->C_FindObjectsInit(s, t, 2) != CKR_OK) return CK_INVALID_HANDLE;
    if (p11->C_FindObjects(s, &h, 1, &n) != CKR_OK || n != 1) h = CK_INVALID_HANDLE;
    p11->C_FindObjectsFinal(s);
    return h;
}

static CK_RV p11_gcm(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h, bool enc,
                     const unsigned char *in, CK_ULONG inlen, unsigned char *out, CK_ULONG *outlen)
{
    CK_GCM_PARAMS gp = {(CK_BYTE_PTR)iv12, sizeof(iv12), 96, (CK_BYTE_PTR)aad, sizeof(aad), 128};
    CK_MECHANISM m = {CKM_AES_GCM, &gp, sizeof(gp)};
    CK_RV rv = enc ? p11->C_EncryptInit(s, &m, h) : p11->C_DecryptInit(s, &m, h);

    if (rv != CKR_OK) return rv;
    return enc ? p11->C_Encrypt(s, (CK_BYTE_PTR)in, inlen, out, outlen)
               : p11->C_Decrypt(s, (CK_BYTE_PTR)in, inlen, out, outlen);
}

static void test_the_module_encrypts_and_decrypts_with_a_pool_key_as_with_a_local_one(void)
{
    struct hf_test_module mod;
    CK_FUNCTION_LIST_PTR p11;
    CK_SESSION_HANDLE s;
    CK_OBJECT_HANDLE pool_h, local_h;
    struct hf_key k = {0};
    struct hf_key_version v = {0};
    unsigned char ct[48], core_ct[48], pt[48], lct[48];
    size_t core_len = sizeof(core_ct);
    CK_ULONG ct_len = sizeof(ct), pt_len = sizeof(pt), lct_len = sizeof(lct), size = 0;
    unsigned char iv16[16] = {0};
    CK_MECHANISM cbc = {CKM_AES_CBC_PAD, iv16, sizeof(iv16)};
    CK_RV local_rv;

    CU_ASSERT_EQUAL_FATAL(key_make("pk-mod", "pool:p1", &k, &v), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(key_make("lk-mod", NULL, NULL, NULL), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(gcm(&k, &v, true, msg32, sizeof(msg32), core_ct, &core_len), CKR_OK);

    CU_ASSERT_EQUAL_FATAL(hf_test_module_load(&mod), 0);
    p11 = mod.p11;
    CU_ASSERT_EQUAL_FATAL(hf_test_module_start(p11, &s), CKR_OK);
    pool_h = find_secret(p11, s, "pk-mod");
    local_h = find_secret(p11, s, "lk-mod");
    CU_ASSERT_NOT_EQUAL_FATAL(pool_h, CK_INVALID_HANDLE);
    CU_ASSERT_NOT_EQUAL_FATAL(local_h, CK_INVALID_HANDLE);

    /* The two-call convention, then the work in the member. */
    CU_ASSERT_EQUAL(p11_gcm(p11, s, pool_h, true, msg32, sizeof(msg32), NULL, &size), CKR_OK);
    CU_ASSERT_EQUAL(size, sizeof(msg32) + 16);
    CU_ASSERT_EQUAL_FATAL(p11->C_Encrypt(s, (CK_BYTE_PTR)msg32, sizeof(msg32), ct, &ct_len),
                          CKR_OK);
    /* The same key as the core's: the same IV gives the same ciphertext. */
    CU_ASSERT_EQUAL(ct_len, core_len);
    CU_ASSERT(memcmp(ct, core_ct, core_len) == 0);
    CU_ASSERT_EQUAL(p11_gcm(p11, s, pool_h, false, ct, ct_len, pt, &pt_len), CKR_OK);
    CU_ASSERT_EQUAL(pt_len, sizeof(msg32));
    CU_ASSERT(memcmp(pt, msg32, sizeof(msg32)) == 0);

    /* A tampered tag: the local key's answer, for both. */
    CU_ASSERT_EQUAL_FATAL(p11_gcm(p11, s, local_h, true, msg32, sizeof(msg32), lct, &lct_len),
                          CKR_OK);
    lct[lct_len - 1] ^= 1;
    ct[ct_len - 1] ^= 1;
    pt_len = sizeof(pt);
    local_rv = p11_gcm(p11, s, local_h, false, lct, lct_len, pt, &pt_len);
    CU_ASSERT_EQUAL(local_rv, CKR_ENCRYPTED_DATA_INVALID);
    pt_len = sizeof(pt);
    CU_ASSERT_EQUAL(p11_gcm(p11, s, pool_h, false, ct, ct_len, pt, &pt_len), local_rv);

    /* Other mechanisms are not served for pool keys yet; the local key takes them. */
    CU_ASSERT_EQUAL(p11->C_EncryptInit(s, &cbc, pool_h), CKR_MECHANISM_INVALID);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(s, &cbc, local_h), CKR_OK);
    size = sizeof(lct);
    CU_ASSERT_EQUAL(p11->C_Encrypt(s, (CK_BYTE_PTR)msg32, sizeof(msg32), lct, &size), CKR_OK);
    /* Its value stays in the HSM. */
    {
        unsigned char val[32];
        CK_ATTRIBUTE a = {CKA_VALUE, val, sizeof(val)};
        CU_ASSERT_EQUAL(p11->C_GetAttributeValue(s, pool_h, &a, 1), CKR_ATTRIBUTE_SENSITIVE);
    }

    p11->C_CloseSession(s);
    p11->C_Finalize(NULL);
    hf_test_module_unload(&mod);
    hf_key_clear(&k);
    hf_key_version_clear(&v);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"a pool key is a sensitive object in one member and no material in the store",
         test_a_pool_key_is_a_sensitive_object_in_one_member_and_no_material_in_the_store},
        {"GCM round trips in the member and a rotated key still decrypts old data",
         test_gcm_round_trips_in_the_member_and_a_rotated_key_still_decrypts_old_data},
        {"a tampered tag answers as a local key does and fails no member over",
         test_a_tampered_tag_answers_as_a_local_key_does_and_fails_no_member_over},
        {"a pool that is missing or cannot open writes nothing",
         test_a_pool_that_is_missing_or_cannot_open_writes_nothing},
        {"destroying a version or the key destroys the member objects",
         test_destroying_a_version_or_the_key_destroys_the_member_objects},
        {"the module encrypts and decrypts with a pool key as with a local one",
         test_the_module_encrypts_and_decrypts_with_a_pool_key_as_with_a_local_one},
        {"a clone key is on both members and either member alone decrypts",
         test_a_clone_key_is_on_both_members_and_either_member_alone_decrypts},
        {"a member that lost a clone key fails no request and is re-synced",
         test_a_member_that_lost_a_clone_key_fails_no_request_and_is_re_synced},
        {"destroying a clone key removes it from every member",
         test_destroying_a_clone_key_removes_it_from_every_member},
        {"an export member emptied is restored from the store and decrypts alone",
         test_an_export_member_emptied_is_restored_from_the_store_and_decrypts_alone},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"source-pool", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
