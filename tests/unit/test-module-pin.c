/* The PIN attempt counter through holdfast-pkcs11.so, as an application sees it: the token
 * flags as wrong PINs add up (COUNT_LOW, FINAL_TRY, LOCKED), a locked PIN refused even when
 * right, a right PIN clearing the count, the SO unlocking the user with C_InitPIN, wrong old
 * PINs in C_SetPIN counted, the gateway's PIN never counted nor locked out, counts shared by
 * every process on the store, and `holdfast token unlock`'s core call with its record.
 * [token] pin_attempts = 3 here. */
#include "hf-build.h"

#include <json.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "module-loader.h"
#include "pkcs11/core/core.h"

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE rw;

#define PIN(s) ((CK_UTF8CHAR_PTR)(s)), (CK_ULONG)strlen(s)
#define SLOT 1
#define USER_FLAGS (CKF_USER_PIN_COUNT_LOW | CKF_USER_PIN_FINAL_TRY | CKF_USER_PIN_LOCKED)
#define SO_FLAGS (CKF_SO_PIN_COUNT_LOW | CKF_SO_PIN_FINAL_TRY | CKF_SO_PIN_LOCKED)

static int suite_init(void)
{
    if (hf_test_env_setup(&env, "[token]\npin_attempts = 3\n") != 0) return -1;
    if (hf_test_module_load(&mod) != 0) return -1;
    p11 = mod.p11;
    if (p11->C_Initialize(NULL) != CKR_OK) return -1;
    return p11->C_OpenSession(SLOT, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &rw) == CKR_OK
               ? 0
               : -1;
}

static int suite_clean(void)
{
    if (p11) p11->C_Finalize(NULL);
    hf_test_module_unload(&mod);
    hf_test_env_teardown(&env);
    return 0;
}

static CK_FLAGS token_flags(CK_FLAGS mask)
{
    CK_TOKEN_INFO info;

    CU_ASSERT_EQUAL_FATAL(p11->C_GetTokenInfo(SLOT, &info), CKR_OK);
    return info.flags & mask;
}

static CK_RV login(CK_USER_TYPE who, const char *pin)
{
    CK_RV rv = p11->C_Login(rw, who, PIN(pin));

    if (rv == CKR_OK) CU_ASSERT_EQUAL(p11->C_Logout(rw), CKR_OK);
    return rv;
}

static void test_user_pin_counts_down_to_a_lockout(void)
{
    CU_ASSERT_EQUAL(token_flags(USER_FLAGS), 0);
    CU_ASSERT_EQUAL(login(CKU_USER, "wrong-pin-1"), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(token_flags(USER_FLAGS), CKF_USER_PIN_COUNT_LOW);
    CU_ASSERT_EQUAL(login(CKU_USER, "wrong-pin-2"), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(token_flags(USER_FLAGS), CKF_USER_PIN_COUNT_LOW | CKF_USER_PIN_FINAL_TRY);
    CU_ASSERT_EQUAL(login(CKU_USER, "wrong-pin-3"), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(token_flags(USER_FLAGS), CKF_USER_PIN_LOCKED);
    /* Locked: the right PIN is refused too, and the SO's PIN is not touched. */
    CU_ASSERT_EQUAL(login(CKU_USER, HF_TEST_USER_PIN), CKR_PIN_LOCKED);
    CU_ASSERT_EQUAL(token_flags(SO_FLAGS), 0);
    /* C_SetPIN with the right old PIN is refused as well. */
    CU_ASSERT_EQUAL(p11->C_SetPIN(rw, PIN(HF_TEST_USER_PIN), PIN("another-user-pin")),
                    CKR_PIN_LOCKED);
}

static void test_gateway_pin_is_never_counted_nor_locked_out(void)
{
    /* The user is locked (previous test): the gateway still logs in, and adds no failure. */
    CU_ASSERT_EQUAL(token_flags(USER_FLAGS), CKF_USER_PIN_LOCKED);
    CU_ASSERT_EQUAL(login(CKU_USER, HF_TEST_GATEWAY_PIN), CKR_OK);
    CU_ASSERT_EQUAL(token_flags(USER_FLAGS), CKF_USER_PIN_LOCKED);
}

static void test_so_unlocks_the_user_with_init_pin(void)
{
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(rw, CKU_SO, PIN(HF_TEST_SO_PIN)), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_InitPIN(rw, PIN(HF_TEST_USER_PIN)), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Logout(rw), CKR_OK);
    CU_ASSERT_EQUAL(token_flags(USER_FLAGS), 0);
    CU_ASSERT_EQUAL(login(CKU_USER, HF_TEST_USER_PIN), CKR_OK);
}

static void test_right_pin_clears_the_count(void)
{
    CU_ASSERT_EQUAL(login(CKU_USER, "wrong-pin-4"), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(login(CKU_USER, "wrong-pin-5"), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(login(CKU_USER, HF_TEST_USER_PIN), CKR_OK);
    CU_ASSERT_EQUAL(token_flags(USER_FLAGS), 0);
    /* So two more wrong ones leave one try, not a lockout. */
    CU_ASSERT_EQUAL(login(CKU_USER, "wrong-pin-6"), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(login(CKU_USER, "wrong-pin-7"), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(token_flags(USER_FLAGS), CKF_USER_PIN_COUNT_LOW | CKF_USER_PIN_FINAL_TRY);
    CU_ASSERT_EQUAL(login(CKU_USER, HF_TEST_USER_PIN), CKR_OK);
}

/* A wrong old PIN in C_SetPIN is a guess like a wrong login. */
static void test_set_pin_with_a_wrong_old_pin_counts(void)
{
    CU_ASSERT_EQUAL(p11->C_SetPIN(rw, PIN("wrong-old-pin"), PIN("another-user-pin")),
                    CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(token_flags(USER_FLAGS), CKF_USER_PIN_COUNT_LOW);
    CU_ASSERT_EQUAL(login(CKU_USER, HF_TEST_USER_PIN), CKR_OK);
}

/* Guessers in other processes share the one count: three children, one wrong PIN each. */
static void test_count_is_shared_across_processes(void)
{
#ifdef HF_TEST_UNDER_ASAN
    /* ASan's allocator may hang a child forked while the audit writer runs (harness.h): the
     * count's atomicity is the store's, not a memory matter. Lock the way a guesser would. */
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(login(CKU_USER, "guess"), CKR_PIN_INCORRECT);
#else
    for (int i = 0; i < 3; i++) {
        pid_t pid = fork();
        CU_ASSERT_FATAL(pid >= 0);
        if (pid == 0) {
            CK_SESSION_HANDLE s;
            CK_RV rv = p11->C_Initialize(NULL);
            if (rv == CKR_OK) rv = p11->C_OpenSession(SLOT, CKF_SERIAL_SESSION, NULL, NULL, &s);
            if (rv == CKR_OK) rv = p11->C_Login(s, CKU_USER, PIN("child-guess"));
            _exit(rv == CKR_PIN_INCORRECT ? 0 : 1);
        }
        int status = 0;
        CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
        CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
#endif
    CU_ASSERT_EQUAL(token_flags(USER_FLAGS), CKF_USER_PIN_LOCKED);
}

/* `holdfast token unlock`: the core call, audited. */
static void test_core_unlock_clears_and_is_recorded(void)
{
    struct hf_actor who = {"cli", "uid:test"};
    struct hf_core *core = NULL;
    struct json_object *rec;

    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_pin_failures(core, HF_USER_NORMAL), 3);
    CU_ASSERT_EQUAL(hf_core_pin_unlock(core, HF_USER_NORMAL, &who), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_pin_failures(core, HF_USER_NORMAL), 0);
    CU_ASSERT_EQUAL(hf_core_pin_unlock(core, HF_USER_GATEWAY, &who), CKR_USER_TYPE_INVALID);
    hf_core_close(core);
    rec = hf_test_audit_find_last(env.cfg.audit_path, "pin.unlock");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
    CU_ASSERT_STRING_EQUAL(hf_test_json_str(rec, "caller"), "uid:test");
    json_object_put(rec);
    CU_ASSERT_EQUAL(token_flags(USER_FLAGS), 0);
    CU_ASSERT_EQUAL(login(CKU_USER, HF_TEST_USER_PIN), CKR_OK);
}

static void test_so_pin_locks_too(void)
{
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(login(CKU_SO, "wrong-so-pin"), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(token_flags(SO_FLAGS), CKF_SO_PIN_LOCKED);
    CU_ASSERT_EQUAL(login(CKU_SO, HF_TEST_SO_PIN), CKR_PIN_LOCKED);
    CU_ASSERT_EQUAL(token_flags(USER_FLAGS), 0);
}

int main(void)
{
    /* In order: each test starts from the counts the one before left. */
    static CU_TestInfo tests[] = {
        {"the user PIN counts down to a lockout", test_user_pin_counts_down_to_a_lockout},
        {"the gateway PIN is never counted nor locked out",
         test_gateway_pin_is_never_counted_nor_locked_out},
        {"the SO unlocks the user with C_InitPIN", test_so_unlocks_the_user_with_init_pin},
        {"a right PIN clears the count", test_right_pin_clears_the_count},
        {"C_SetPIN with a wrong old PIN counts", test_set_pin_with_a_wrong_old_pin_counts},
        {"the count is shared across processes", test_count_is_shared_across_processes},
        {"the core's unlock clears and is recorded", test_core_unlock_clears_and_is_recorded},
        {"the SO PIN locks too", test_so_pin_locks_too},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"module-pin", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
