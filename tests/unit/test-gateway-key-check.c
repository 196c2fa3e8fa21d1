/* hf_key_may (gateway/key-check.c): every KMIP state against every operation, the version state
 * that decrypt and verify take, the blocked link and the usage mask. */
#include "hf-build.h"

#include "gateway/keys.h"
#include "gateway/plugin.h"
#include "tests/unit/harness.h"

#include <string.h>

#define USAGE_ALL                                                                                  \
    (HF_USAGE_SIGN | HF_USAGE_VERIFY | HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT | HF_USAGE_WRAP |       \
     HF_USAGE_UNWRAP)

static struct hf_key_ref key_in(CK_ULONG state, CK_ULONG usage, bool blocked)
{
    struct hf_key_ref k;

    memset(&k, 0, sizeof(k));
    k.state = state;
    k.usage = usage;
    k.blocked = blocked;
    k.version = 2;
    return k;
}

#define OK HF_STATUS_OK
#define DIS HF_STATUS_KEY_DISABLED

/* ARCHITECTURE.md's key model: rows are states, columns encrypt, decrypt, sign, verify,
 * metadata. */
static const struct {
    CK_ULONG state;
    enum hf_status want[5];
} state_table[] = {
    {HF_STATE_PRE_ACTIVE, {DIS, DIS, DIS, DIS, OK}}, {HF_STATE_ACTIVE, {OK, OK, OK, OK, OK}},
    {HF_STATE_DEACTIVATED, {DIS, OK, DIS, OK, OK}},  {HF_STATE_COMPROMISED, {DIS, OK, DIS, OK, OK}},
    {HF_STATE_DESTROYED, {DIS, DIS, DIS, DIS, OK}},
};

static const enum hf_key_op ops[5] = {HF_KEY_OP_ENCRYPT, HF_KEY_OP_DECRYPT, HF_KEY_OP_SIGN,
                                      HF_KEY_OP_VERIFY, HF_KEY_OP_METADATA};

static void test_every_state_and_op(void)
{
    for (size_t i = 0; i < sizeof(state_table) / sizeof(state_table[0]); i++) {
        struct hf_key_ref k = key_in(state_table[i].state, USAGE_ALL, false);
        for (size_t j = 0; j < 5; j++) {
            enum hf_status got = hf_key_may(&k, ops[j], 0);
            if (got != state_table[i].want[j])
                fprintf(stderr, "state %lu op %d: got %d, want %d\n",
                        (unsigned long)state_table[i].state, (int)ops[j], (int)got,
                        (int)state_table[i].want[j]);
            CU_ASSERT_EQUAL(got, state_table[i].want[j]);
        }
    }
}

/* An old version's state, passed in: decrypt and verify follow it; encrypt and sign need the
 * current version's state, and the named version's as well. */
static void test_version_state_counts_for_decrypt_only(void)
{
    struct hf_key_ref active = key_in(HF_STATE_ACTIVE, USAGE_ALL, false);
    struct hf_key_ref deact = key_in(HF_STATE_DEACTIVATED, USAGE_ALL, false);

    CU_ASSERT_EQUAL(hf_key_may(&active, HF_KEY_OP_DECRYPT, HF_STATE_DESTROYED), DIS);
    CU_ASSERT_EQUAL(hf_key_may(&active, HF_KEY_OP_DECRYPT, HF_STATE_PRE_ACTIVE), DIS);
    CU_ASSERT_EQUAL(hf_key_may(&active, HF_KEY_OP_DECRYPT, HF_STATE_COMPROMISED), OK);
    CU_ASSERT_EQUAL(hf_key_may(&active, HF_KEY_OP_VERIFY, HF_STATE_DEACTIVATED), OK);
    CU_ASSERT_EQUAL(hf_key_may(&active, HF_KEY_OP_VERIFY, HF_STATE_DESTROYED), DIS);
    CU_ASSERT_EQUAL(hf_key_may(&deact, HF_KEY_OP_DECRYPT, HF_STATE_ACTIVE), OK);
    /* A current version that may not encrypt is not rescued by another version's state. */
    CU_ASSERT_EQUAL(hf_key_may(&deact, HF_KEY_OP_ENCRYPT, HF_STATE_ACTIVE), DIS);
    CU_ASSERT_EQUAL(hf_key_may(&deact, HF_KEY_OP_SIGN, HF_STATE_ACTIVE), DIS);
    /* A version an API names for new data (OCI's keyVersionId) must allow it too: a
     * deactivated or compromised version of an active key protects nothing new. */
    CU_ASSERT_EQUAL(hf_key_may(&active, HF_KEY_OP_ENCRYPT, HF_STATE_DESTROYED), DIS);
    CU_ASSERT_EQUAL(hf_key_may(&active, HF_KEY_OP_ENCRYPT, HF_STATE_DEACTIVATED), DIS);
    CU_ASSERT_EQUAL(hf_key_may(&active, HF_KEY_OP_SIGN, HF_STATE_COMPROMISED), DIS);
    CU_ASSERT_EQUAL(hf_key_may(&active, HF_KEY_OP_ENCRYPT, HF_STATE_ACTIVE), OK);
}

static void test_blocked_link_refuses_everything(void)
{
    for (size_t i = 0; i < sizeof(state_table) / sizeof(state_table[0]); i++) {
        struct hf_key_ref k = key_in(state_table[i].state, USAGE_ALL, true);
        for (size_t j = 0; j < 5; j++)
            CU_ASSERT_EQUAL(hf_key_may(&k, ops[j], 0), DIS);
    }
}

static void test_usage_mask_is_checked_after_state(void)
{
    static const CK_ULONG bits[4] = {HF_USAGE_ENCRYPT, HF_USAGE_DECRYPT, HF_USAGE_SIGN,
                                     HF_USAGE_VERIFY};

    for (size_t j = 0; j < 4; j++) {
        struct hf_key_ref without = key_in(HF_STATE_ACTIVE, USAGE_ALL & ~bits[j], false);
        struct hf_key_ref only = key_in(HF_STATE_ACTIVE, bits[j], false);
        CU_ASSERT_EQUAL(hf_key_may(&without, ops[j], 0), HF_STATUS_KEY_USAGE);
        CU_ASSERT_EQUAL(hf_key_may(&only, ops[j], 0), OK);
    }
    /* Wrap and unwrap bits are not encrypt and decrypt: the module checks the latter. */
    struct hf_key_ref wrap = key_in(HF_STATE_ACTIVE, HF_USAGE_WRAP | HF_USAGE_UNWRAP, false);
    CU_ASSERT_EQUAL(hf_key_may(&wrap, HF_KEY_OP_ENCRYPT, 0), HF_STATUS_KEY_USAGE);
    CU_ASSERT_EQUAL(hf_key_may(&wrap, HF_KEY_OP_DECRYPT, 0), HF_STATUS_KEY_USAGE);
    /* A state that forbids the op is the answer before the mask: the cloud's "disabled". */
    struct hf_key_ref pre = key_in(HF_STATE_PRE_ACTIVE, 0, false);
    CU_ASSERT_EQUAL(hf_key_may(&pre, HF_KEY_OP_ENCRYPT, 0), DIS);
    struct hf_key_ref none = key_in(HF_STATE_ACTIVE, 0, false);
    CU_ASSERT_EQUAL(hf_key_may(&none, HF_KEY_OP_METADATA, 0), OK);
}

static void test_bad_arguments(void)
{
    struct hf_key_ref k = key_in(HF_STATE_ACTIVE, USAGE_ALL, false);

    CU_ASSERT_EQUAL(hf_key_may(NULL, HF_KEY_OP_ENCRYPT, 0), HF_STATUS_INTERNAL);
    CU_ASSERT_EQUAL(hf_key_may(&k, (enum hf_key_op)99, 0), HF_STATUS_INTERNAL);
}

/* hf_keys_decrypt_version's rule: the key's current version is 2 (key_in). */
static void test_decrypt_version_maps_lookup_and_state(void)
{
    struct hf_key_ref k = key_in(HF_STATE_ACTIVE, USAGE_ALL, false);
    struct hf_key_ref blocked = key_in(HF_STATE_ACTIVE, USAGE_ALL, true);
    struct hf_key_ref sign_only = key_in(HF_STATE_ACTIVE, HF_USAGE_SIGN, false);
    CK_OBJECT_HANDLE obj = 42;

    CU_ASSERT_EQUAL(hf_gw_key_decrypt_judge(&k, 1, OK, HF_STATE_ACTIVE), OK);
    CU_ASSERT_EQUAL(hf_gw_key_decrypt_judge(&k, 2, OK, HF_STATE_ACTIVE), OK);
    /* Old versions that no longer protect still open what they sealed. */
    CU_ASSERT_EQUAL(hf_gw_key_decrypt_judge(&k, 1, OK, HF_STATE_DEACTIVATED), OK);
    CU_ASSERT_EQUAL(hf_gw_key_decrypt_judge(&k, 1, OK, HF_STATE_COMPROMISED), OK);
    CU_ASSERT_EQUAL(hf_gw_key_decrypt_judge(&k, 1, OK, HF_STATE_PRE_ACTIVE), DIS);
    /* Never this key's: a bad ciphertext, not a disabled key (Cloud EKM disables on 403). */
    CU_ASSERT_EQUAL(hf_gw_key_decrypt_judge(&k, 3, OK, HF_STATE_ACTIVE), HF_STATUS_BAD_CIPHERTEXT);
    CU_ASSERT_EQUAL(hf_gw_key_decrypt_judge(&k, 0, OK, HF_STATE_ACTIVE), HF_STATUS_BAD_CIPHERTEXT);
    /* Destroyed, or gone from the store. */
    CU_ASSERT_EQUAL(hf_gw_key_decrypt_judge(&k, 1, OK, HF_STATE_DESTROYED),
                    HF_STATUS_KEY_NOT_FOUND);
    CU_ASSERT_EQUAL(hf_gw_key_decrypt_judge(&k, 1, HF_STATUS_KEY_NOT_FOUND, 0),
                    HF_STATUS_KEY_NOT_FOUND);
    /* The store cannot say: transient, whatever the lookup's own status was. */
    CU_ASSERT_EQUAL(hf_gw_key_decrypt_judge(&k, 1, HF_STATUS_INTERNAL, 0), HF_STATUS_UNAVAILABLE);
    CU_ASSERT_EQUAL(hf_gw_key_decrypt_judge(&k, 1, HF_STATUS_UNAVAILABLE, 0),
                    HF_STATUS_UNAVAILABLE);
    /* hf_key_may's word: a blocked link, a key that may not decrypt. */
    CU_ASSERT_EQUAL(hf_gw_key_decrypt_judge(&blocked, 1, OK, HF_STATE_ACTIVE), DIS);
    CU_ASSERT_EQUAL(hf_gw_key_decrypt_judge(&sign_only, 1, OK, HF_STATE_ACTIVE),
                    HF_STATUS_KEY_USAGE);
    /* A version the key never had is refused before any lookup, the handle left invalid. */
    CU_ASSERT_EQUAL(hf_keys_decrypt_version(&k, 3, &obj), HF_STATUS_BAD_CIPHERTEXT);
    CU_ASSERT_EQUAL(obj, CK_INVALID_HANDLE);
    CU_ASSERT_EQUAL(hf_keys_decrypt_version(NULL, 1, &obj), HF_STATUS_INTERNAL);
}

static CU_TestInfo key_check_tests[] = {
    {"every state against every operation follows KMIP", test_every_state_and_op},
    {"decrypt and verify take the version's state, encrypt and sign the current one and it",
     test_version_state_counts_for_decrypt_only},
    {"a blocked link refuses every operation, metadata included",
     test_blocked_link_refuses_everything},
    {"the usage mask is checked, after the state", test_usage_mask_is_checked_after_state},
    {"bad arguments are an internal error", test_bad_arguments},
    {"a decrypt version: never the key's is a bad ciphertext, destroyed is not found, a store "
     "fault unavailable, then the state and usage rule",
     test_decrypt_version_maps_lookup_and_state},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"gateway-key-check", NULL, NULL, NULL, NULL, key_check_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
