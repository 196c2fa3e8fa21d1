/* The general half of holdfast-pkcs11.so through dlopen, as an application sees it: library
 * life cycle (initialise arguments, double initialise, fork), information about the library,
 * slot and token, the interfaces of PKCS#11 3.0, sessions and the login state machine, PINs,
 * and the Holdfast vendor interface. Every entry point's bad-argument answers are checked. */
#include "hf-build.h"

#include <json.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "module-loader.h"
#include "pkcs11/core/audit.h"
#include "pkcs11/core/core.h"

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;

#define USER_PIN ((CK_UTF8CHAR_PTR)HF_TEST_USER_PIN)
#define USER_PIN_LEN (strlen(HF_TEST_USER_PIN))
#define SO_PIN ((CK_UTF8CHAR_PTR)HF_TEST_SO_PIN)
#define SO_PIN_LEN (strlen(HF_TEST_SO_PIN))
#define GW_PIN ((CK_UTF8CHAR_PTR)HF_TEST_GATEWAY_PIN)
#define GW_PIN_LEN (strlen(HF_TEST_GATEWAY_PIN))
#define SLOT 1 /* the module's one slot */
#define RW (CKF_SERIAL_SESSION | CKF_RW_SESSION)
#define RO CKF_SERIAL_SESSION
#define BAD_SLOT 4242
#define BAD_SESSION 0x7777

static int suite_init(void)
{
    if (hf_test_env_setup(&env, NULL) != 0) return -1;
    if (hf_test_module_load(&mod) != 0) return -1;
    p11 = mod.p11;
    return 0;
}

static int suite_clean(void)
{
    if (p11) p11->C_Finalize(NULL);
    hf_test_module_unload(&mod);
    hf_test_env_teardown(&env);
    return 0;
}

static CK_SESSION_HANDLE open_session(CK_FLAGS flags)
{
    CK_SESSION_HANDLE s = CK_INVALID_HANDLE;

    CU_ASSERT_EQUAL_FATAL(p11->C_OpenSession(SLOT, flags, NULL, NULL, &s), CKR_OK);
    return s;
}

static CK_STATE session_state(CK_SESSION_HANDLE s)
{
    CK_SESSION_INFO info;

    memset(&info, 0xa5, sizeof(info));
    CU_ASSERT_EQUAL(p11->C_GetSessionInfo(s, &info), CKR_OK);
    return info.state;
}

static bool padded_equals(const unsigned char *field, size_t n, const char *want)
{
    size_t len = strlen(want);

    if (len > n || memcmp(field, want, len) != 0) return false;
    for (size_t i = len; i < n; i++)
        if (field[i] != ' ') return false;
    return true;
}

/* ---- before C_Initialize ------------------------------------------------------------------ */

static void test_every_entry_point_refuses_before_initialize(void)
{
    CK_INFO info;
    CK_SLOT_INFO sinfo;
    CK_TOKEN_INFO tinfo;
    CK_MECHANISM_INFO minfo;
    CK_SESSION_INFO ssinfo;
    CK_SESSION_HANDLE s;
    CK_SLOT_ID slot;
    CK_ULONG n = 1;
    CK_OBJECT_HANDLE h;
    CK_ATTRIBUTE a = {CKA_LABEL, NULL, 0};
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    const CK_RV want = CKR_CRYPTOKI_NOT_INITIALIZED;

    CU_ASSERT_EQUAL(p11->C_Finalize(NULL), want);
    CU_ASSERT_EQUAL(p11->C_GetInfo(&info), want);
    CU_ASSERT_EQUAL(p11->C_GetSlotList(CK_FALSE, &slot, &n), want);
    CU_ASSERT_EQUAL(p11->C_GetSlotInfo(SLOT, &sinfo), want);
    CU_ASSERT_EQUAL(p11->C_GetTokenInfo(SLOT, &tinfo), want);
    CU_ASSERT_EQUAL(p11->C_GetMechanismList(SLOT, NULL, &n), want);
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(SLOT, CKM_AES_GCM, &minfo), want);
    CU_ASSERT_EQUAL(p11->C_InitToken(SLOT, SO_PIN, SO_PIN_LEN, NULL), want);
    CU_ASSERT_EQUAL(p11->C_OpenSession(SLOT, RW, NULL, NULL, &s), want);
    CU_ASSERT_EQUAL(p11->C_CloseSession(1), want);
    CU_ASSERT_EQUAL(p11->C_CloseAllSessions(SLOT), want);
    CU_ASSERT_EQUAL(p11->C_GetSessionInfo(1, &ssinfo), want);
    CU_ASSERT_EQUAL(p11->C_Login(1, CKU_USER, USER_PIN, USER_PIN_LEN), want);
    CU_ASSERT_EQUAL(p11->C_Logout(1), want);
    CU_ASSERT_EQUAL(p11->C_InitPIN(1, USER_PIN, USER_PIN_LEN), want);
    CU_ASSERT_EQUAL(p11->C_SetPIN(1, USER_PIN, USER_PIN_LEN, USER_PIN, USER_PIN_LEN), want);
    CU_ASSERT_EQUAL(p11->C_CreateObject(1, &a, 1, &h), want);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(1, 5), want);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(1, 5, &a, 1), want);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(1, 5, &a, 1), want);
    CU_ASSERT_EQUAL(p11->C_FindObjectsInit(1, NULL, 0), want);
    CU_ASSERT_EQUAL(p11->C_FindObjects(1, &h, 1, &n), want);
    CU_ASSERT_EQUAL(p11->C_FindObjectsFinal(1), want);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(1, &mech, &a, 1, &h), want);
    CU_ASSERT_EQUAL(p11->C_GenerateKeyPair(1, &mech, &a, 1, &a, 1, &h, &h), want);
    CU_ASSERT_EQUAL(p11->C_GetObjectSize(1, 5, &n), want);
    CU_ASSERT_EQUAL(p11->C_CopyObject(1, 5, &a, 1, &h), want);
    CU_ASSERT_EQUAL(p11->C_GetFunctionStatus(1), want);
    CU_ASSERT_EQUAL(p11->C_CancelFunction(1), want);
    CU_ASSERT_EQUAL(p11->C_WaitForSlotEvent(0, &slot, NULL), want);
    CU_ASSERT_EQUAL(p11->C_GetOperationState(1, NULL, &n), want);
    CU_ASSERT_EQUAL(p11->C_SignRecoverInit(1, &mech, 5), want);
    CU_ASSERT_EQUAL(p11->C_DigestEncryptUpdate(1, NULL, 0, NULL, &n), want);
}

static void test_initialize_validates_its_arguments(void)
{
    CK_C_INITIALIZE_ARGS args;
    int dummy;

    memset(&args, 0, sizeof(args));
    args.pReserved = &dummy;
    CU_ASSERT_EQUAL(p11->C_Initialize(&args), CKR_ARGUMENTS_BAD);

    /* The four mutex callbacks come all or none. */
    memset(&args, 0, sizeof(args));
    args.CreateMutex = (CK_CREATEMUTEX)1;
    CU_ASSERT_EQUAL(p11->C_Initialize(&args), CKR_ARGUMENTS_BAD);
    args.DestroyMutex = (CK_DESTROYMUTEX)1;
    args.LockMutex = (CK_LOCKMUTEX)1;
    CU_ASSERT_EQUAL(p11->C_Initialize(&args), CKR_ARGUMENTS_BAD);

    /* Callbacks we would have to use instead of OS locking: we cannot. */
    args.UnlockMutex = (CK_UNLOCKMUTEX)1;
    CU_ASSERT_EQUAL(p11->C_Initialize(&args), CKR_CANT_LOCK);

    /* NSS's arguments: callbacks, OS locking allowed, no threads of our own asked. */
    args.flags = CKF_OS_LOCKING_OK | CKF_LIBRARY_CANT_CREATE_OS_THREADS;
    CU_ASSERT_EQUAL_FATAL(p11->C_Initialize(&args), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Finalize(NULL), CKR_OK);

    /* p11-kit's: no callbacks, OS locking. */
    memset(&args, 0, sizeof(args));
    args.flags = CKF_OS_LOCKING_OK;
    CU_ASSERT_EQUAL_FATAL(p11->C_Initialize(&args), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Finalize(NULL), CKR_OK);
}

static void test_initialize_twice_and_finalize_twice(void)
{
    int dummy;

    CU_ASSERT_EQUAL_FATAL(p11->C_Initialize(NULL), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Initialize(NULL), CKR_CRYPTOKI_ALREADY_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_Finalize(&dummy), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_Finalize(NULL), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Finalize(NULL), CKR_CRYPTOKI_NOT_INITIALIZED);
    /* And the library comes back after a finalize. */
    CU_ASSERT_EQUAL(p11->C_Initialize(NULL), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Finalize(NULL), CKR_OK);
}

static void test_initialize_fails_cleanly_without_a_key_store(void)
{
    char conf[PATH_MAX + 32];
    FILE *fp;

    /* A config naming a state directory where `holdfast init` never ran. */
    snprintf(conf, sizeof(conf), "%s/empty.conf", env.dir);
    fp = fopen(conf, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fprintf(fp, "[holdfast]\nstate_dir = %s/never-initialised\n", env.dir);
    fclose(fp);
    setenv("HOLDFAST_CONF", conf, 1);
    CU_ASSERT_NOT_EQUAL(p11->C_Initialize(NULL), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GetInfo(&(CK_INFO){0}), CKR_CRYPTOKI_NOT_INITIALIZED);
    snprintf(conf, sizeof(conf), "%s/missing.conf", env.dir);
    setenv("HOLDFAST_CONF", conf, 1);
    CU_ASSERT_NOT_EQUAL(p11->C_Initialize(NULL), CKR_OK);
    setenv("HOLDFAST_CONF", env.conf_path, 1);
    CU_ASSERT_EQUAL(p11->C_Initialize(NULL), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Finalize(NULL), CKR_OK);
}

/* ---- function lists and interfaces -------------------------------------------------------- */

static void test_function_list_is_complete_2_40(void)
{
    CK_C_GetFunctionList get = (CK_C_GetFunctionList)hf_test_module_sym(&mod, "C_GetFunctionList");
    CK_FUNCTION_LIST_PTR list = NULL;
    void **fn;
    size_t n;

    CU_ASSERT_PTR_NOT_NULL_FATAL(get);
    CU_ASSERT_EQUAL(get(NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL_FATAL(get(&list), CKR_OK);
    CU_ASSERT_EQUAL(list->version.major, 2);
    CU_ASSERT_EQUAL(list->version.minor, 40);
    fn = (void **)&list->C_Initialize;
    n = (sizeof(*list) - offsetof(CK_FUNCTION_LIST, C_Initialize)) / sizeof(void *);
    CU_ASSERT_EQUAL(n, 68);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_PTR_NOT_NULL(fn[i]);
    /* Each entry is the exported symbol of the same name (programs mix both ways). */
    CU_ASSERT_PTR_EQUAL((void *)list->C_Login, hf_test_module_sym(&mod, "C_Login"));
    CU_ASSERT_PTR_EQUAL((void *)list->C_FindObjects, hf_test_module_sym(&mod, "C_FindObjects"));
}

static void test_interface_list_offers_pkcs11_and_holdfast(void)
{
    CK_C_GetInterfaceList list =
        (CK_C_GetInterfaceList)hf_test_module_sym(&mod, "C_GetInterfaceList");
    CK_INTERFACE ifs[4];
    CK_ULONG n = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(list);
    CU_ASSERT_EQUAL(list(NULL, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(list(NULL, &n), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    n = 1;
    CU_ASSERT_EQUAL(list(ifs, &n), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(n, 2);
    n = 4;
    CU_ASSERT_EQUAL_FATAL(list(ifs, &n), CKR_OK);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_STRING_EQUAL((char *)ifs[0].pInterfaceName, "PKCS 11");
    CU_ASSERT_PTR_EQUAL(ifs[0].pFunctionList, p11);
    CU_ASSERT_STRING_EQUAL((char *)ifs[1].pInterfaceName, HF_INTERFACE_NAME);
}

static void test_get_interface_matches_name_version_and_flags(void)
{
    CK_C_GetInterface get = (CK_C_GetInterface)hf_test_module_sym(&mod, "C_GetInterface");
    CK_VERSION v240 = {2, 40}, v30 = {3, 0};
    CK_VERSION vhf = {HF_INTERFACE_VERSION_MAJOR, HF_INTERFACE_VERSION_MINOR};
    CK_INTERFACE_PTR i = NULL;
    HF_FUNCTION_LIST *hf;

    CU_ASSERT_PTR_NOT_NULL_FATAL(get);
    CU_ASSERT_EQUAL(get((CK_UTF8CHAR_PTR) "PKCS 11", NULL, NULL, 0), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL_FATAL(get((CK_UTF8CHAR_PTR) "PKCS 11", NULL, &i, 0), CKR_OK);
    CU_ASSERT_PTR_EQUAL(i->pFunctionList, p11);
    CU_ASSERT_EQUAL(get((CK_UTF8CHAR_PTR) "PKCS 11", &v240, &i, 0), CKR_OK);
    CU_ASSERT_EQUAL(get(NULL, NULL, &i, 0), CKR_OK);
    CU_ASSERT_PTR_EQUAL(i->pFunctionList, p11);
    CU_ASSERT_NOT_EQUAL(get((CK_UTF8CHAR_PTR) "PKCS 11", &v30, &i, 0), CKR_OK);
    /* NSS asks for a fork-safe interface first; we are not one (a child re-initialises). */
    CU_ASSERT_NOT_EQUAL(get((CK_UTF8CHAR_PTR) "PKCS 11", NULL, &i, CKF_INTERFACE_FORK_SAFE),
                        CKR_OK);
    CU_ASSERT_NOT_EQUAL(get((CK_UTF8CHAR_PTR) "Vendor NSS FIPS Interface", NULL, &i, 0), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(get((CK_UTF8CHAR_PTR)HF_INTERFACE_NAME, &vhf, &i, 0), CKR_OK);
    hf = i->pFunctionList;
    CU_ASSERT_EQUAL(hf->version.major, HF_INTERFACE_VERSION_MAJOR);
    CU_ASSERT_EQUAL(hf->version.minor, HF_INTERFACE_VERSION_MINOR);
    CU_ASSERT_PTR_NOT_NULL(hf->HF_SetRequestContext);
    CU_ASSERT_PTR_NOT_NULL(hf->HF_GetLinkInfo);
    CU_ASSERT_PTR_NOT_NULL(hf->HF_AuditRequest); /* 1.1 */
}

/* ---- library, slot and token information --------------------------------------------------- */

static int started_init(void)
{
    if (suite_init() != 0) return -1;
    return p11->C_Initialize(NULL) == CKR_OK ? 0 : -1;
}

static void test_get_info_describes_the_library(void)
{
    CK_INFO info;

    CU_ASSERT_EQUAL(p11->C_GetInfo(NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL_FATAL(p11->C_GetInfo(&info), CKR_OK);
    CU_ASSERT_EQUAL(info.cryptokiVersion.major, 2);
    CU_ASSERT_EQUAL(info.cryptokiVersion.minor, 40);
    CU_ASSERT(padded_equals(info.manufacturerID, sizeof(info.manufacturerID), "Holdfast"));
    CU_ASSERT(padded_equals(info.libraryDescription, sizeof(info.libraryDescription),
                            "Holdfast PKCS#11"));
    CU_ASSERT_EQUAL(info.flags, 0);
}

static void test_slot_list_two_call(void)
{
    CK_SLOT_ID slots[2] = {0, 0};
    CK_ULONG n = 0;

    CU_ASSERT_EQUAL(p11->C_GetSlotList(CK_FALSE, NULL, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_GetSlotList(CK_FALSE, NULL, &n), CKR_OK);
    CU_ASSERT_EQUAL(n, 1);
    n = 0;
    CU_ASSERT_EQUAL(p11->C_GetSlotList(CK_TRUE, slots, &n), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(n, 1);
    n = 2;
    CU_ASSERT_EQUAL(p11->C_GetSlotList(CK_TRUE, slots, &n), CKR_OK);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(slots[0], SLOT);
    n = 2;
    CU_ASSERT_EQUAL(p11->C_GetSlotList(CK_FALSE, slots, &n), CKR_OK);
    CU_ASSERT_EQUAL(n, 1);
}

static void test_slot_info_has_a_token(void)
{
    CK_SLOT_INFO info;

    CU_ASSERT_EQUAL(p11->C_GetSlotInfo(BAD_SLOT, &info), CKR_SLOT_ID_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetSlotInfo(SLOT, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL_FATAL(p11->C_GetSlotInfo(SLOT, &info), CKR_OK);
    CU_ASSERT(info.flags & CKF_TOKEN_PRESENT);
    CU_ASSERT_FALSE(info.flags & CKF_REMOVABLE_DEVICE);
    CU_ASSERT(padded_equals(info.manufacturerID, sizeof(info.manufacturerID), "Holdfast"));
}

static void test_token_info_describes_the_key_store(void)
{
    CK_TOKEN_INFO info;
    CK_SESSION_HANDLE s1, s2;

    CU_ASSERT_EQUAL(p11->C_GetTokenInfo(BAD_SLOT, &info), CKR_SLOT_ID_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetTokenInfo(SLOT, NULL), CKR_ARGUMENTS_BAD);
    s1 = open_session(RW);
    s2 = open_session(RO);
    CU_ASSERT_EQUAL_FATAL(p11->C_GetTokenInfo(SLOT, &info), CKR_OK);
    CU_ASSERT(padded_equals(info.label, sizeof(info.label), env.cfg.token_label));
    CU_ASSERT(padded_equals(info.manufacturerID, sizeof(info.manufacturerID), "Holdfast"));
    CU_ASSERT(padded_equals(info.model, sizeof(info.model), "Holdfast"));
    CU_ASSERT_NOT_EQUAL(info.serialNumber[0], ' ');
    CU_ASSERT_EQUAL(info.flags & (CKF_RNG | CKF_LOGIN_REQUIRED | CKF_USER_PIN_INITIALIZED |
                                  CKF_TOKEN_INITIALIZED | CKF_WRITE_PROTECTED),
                    CKF_RNG | CKF_LOGIN_REQUIRED | CKF_USER_PIN_INITIALIZED |
                        CKF_TOKEN_INITIALIZED);
    CU_ASSERT_EQUAL(info.ulSessionCount, 2);
    CU_ASSERT_EQUAL(info.ulRwSessionCount, 1);
    CU_ASSERT(info.ulMaxSessionCount > 1); /* NSS opens R/W sessions only when this is 1 */
    CU_ASSERT_EQUAL(info.ulMinPinLen, 4);
    CU_ASSERT_EQUAL(info.ulMaxPinLen, 255);
    CU_ASSERT_EQUAL(info.ulTotalPublicMemory, CK_UNAVAILABLE_INFORMATION);
    CU_ASSERT_EQUAL(info.ulFreePrivateMemory, CK_UNAVAILABLE_INFORMATION);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s1), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s2), CKR_OK);
}

static void test_mechanism_list_two_call_and_info(void)
{
    CK_MECHANISM_TYPE *list, small[1];
    CK_MECHANISM_INFO info;
    CK_ULONG n = 0, m;
    bool aes_gen = false, rsa_gen = false, ec_gen = false;

    CU_ASSERT_EQUAL(p11->C_GetMechanismList(BAD_SLOT, NULL, &n), CKR_SLOT_ID_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetMechanismList(SLOT, NULL, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL_FATAL(p11->C_GetMechanismList(SLOT, NULL, &n), CKR_OK);
    CU_ASSERT_FATAL(n > 1);
    m = 1;
    CU_ASSERT_EQUAL(p11->C_GetMechanismList(SLOT, small, &m), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(m, n);
    list = calloc(n, sizeof(*list));
    CU_ASSERT_PTR_NOT_NULL_FATAL(list);
    m = n;
    CU_ASSERT_EQUAL(p11->C_GetMechanismList(SLOT, list, &m), CKR_OK);
    CU_ASSERT_EQUAL(m, n);
    for (CK_ULONG i = 0; i < m; i++) {
        CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(SLOT, list[i], &info), CKR_OK);
        aes_gen |= list[i] == CKM_AES_KEY_GEN && (info.flags & CKF_GENERATE);
        rsa_gen |= list[i] == CKM_RSA_PKCS_KEY_PAIR_GEN && (info.flags & CKF_GENERATE_KEY_PAIR);
        ec_gen |= list[i] == CKM_EC_KEY_PAIR_GEN && (info.flags & CKF_GENERATE_KEY_PAIR);
    }
    CU_ASSERT(aes_gen && rsa_gen && ec_gen);
    free(list);
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(SLOT, CKM_DES_ECB, &info), CKR_MECHANISM_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(SLOT, CKM_AES_KEY_GEN, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_GetMechanismInfo(BAD_SLOT, CKM_AES_KEY_GEN, &info), CKR_SLOT_ID_INVALID);
}

static void test_init_token_is_left_to_the_cli(void)
{
    CK_UTF8CHAR label[32];

    memset(label, ' ', sizeof(label));
    CU_ASSERT_EQUAL(p11->C_InitToken(BAD_SLOT, SO_PIN, SO_PIN_LEN, label), CKR_SLOT_ID_INVALID);
    CU_ASSERT_EQUAL(p11->C_InitToken(SLOT, SO_PIN, SO_PIN_LEN, label), CKR_FUNCTION_NOT_SUPPORTED);
}

static void test_unsupported_functions_say_so(void)
{
    CK_SESSION_HANDLE s = open_session(RW);
    CK_SLOT_ID slot;
    CK_ULONG n = 0;
    CK_MECHANISM mech = {CKM_RSA_PKCS, NULL, 0};

    CU_ASSERT_EQUAL(p11->C_GetFunctionStatus(s), CKR_FUNCTION_NOT_PARALLEL);
    CU_ASSERT_EQUAL(p11->C_CancelFunction(s), CKR_FUNCTION_NOT_PARALLEL);
    CU_ASSERT_EQUAL(p11->C_WaitForSlotEvent(CKF_DONT_BLOCK, &slot, NULL),
                    CKR_FUNCTION_NOT_SUPPORTED);
    CU_ASSERT_EQUAL(p11->C_GetOperationState(s, NULL, &n), CKR_FUNCTION_NOT_SUPPORTED);
    CU_ASSERT_EQUAL(p11->C_SetOperationState(s, NULL, 0, 0, 0), CKR_FUNCTION_NOT_SUPPORTED);
    CU_ASSERT_EQUAL(p11->C_SignRecoverInit(s, &mech, 5), CKR_FUNCTION_NOT_SUPPORTED);
    CU_ASSERT_EQUAL(p11->C_VerifyRecoverInit(s, &mech, 5), CKR_FUNCTION_NOT_SUPPORTED);
    CU_ASSERT_EQUAL(p11->C_DecryptVerifyUpdate(s, NULL, 0, NULL, &n), CKR_FUNCTION_NOT_SUPPORTED);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

/* ---- sessions ----------------------------------------------------------------------------- */

static int sessions_init(void)
{
    return started_init();
}

static void test_open_session_checks_its_arguments(void)
{
    CK_SESSION_HANDLE s;
    int app;

    CU_ASSERT_EQUAL(p11->C_OpenSession(BAD_SLOT, RW, NULL, NULL, &s), CKR_SLOT_ID_INVALID);
    CU_ASSERT_EQUAL(p11->C_OpenSession(SLOT, RW, NULL, NULL, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_OpenSession(SLOT, CKF_RW_SESSION, NULL, NULL, &s),
                    CKR_SESSION_PARALLEL_NOT_SUPPORTED);
    /* NSS passes its slot and a notify callback. */
    CU_ASSERT_EQUAL_FATAL(
        p11->C_OpenSession(SLOT, RO, &app, (CK_NOTIFY)test_open_session_checks_its_arguments, &s),
        CKR_OK);
    CU_ASSERT_NOT_EQUAL(s, CK_INVALID_HANDLE);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

static void test_session_handles_die_with_their_session(void)
{
    CK_SESSION_INFO info;
    CK_SESSION_HANDLE a, b;

    CU_ASSERT_EQUAL(p11->C_GetSessionInfo(CK_INVALID_HANDLE, &info), CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetSessionInfo(BAD_SESSION, &info), CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_CloseSession(BAD_SESSION), CKR_SESSION_HANDLE_INVALID);
    a = open_session(RW);
    CU_ASSERT_EQUAL(p11->C_GetSessionInfo(a, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_CloseSession(a), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(a), CKR_SESSION_HANDLE_INVALID);
    /* The struct is reused, its old handle stays dead. */
    b = open_session(RW);
    CU_ASSERT_NOT_EQUAL(a, b);
    CU_ASSERT_EQUAL(p11->C_GetSessionInfo(a, &info), CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetSessionInfo(b, &info), CKR_OK);
    CU_ASSERT_EQUAL(info.slotID, SLOT);
    CU_ASSERT_EQUAL(info.flags, RW);
    CU_ASSERT_EQUAL(p11->C_CloseSession(b), CKR_OK);
}

static void test_session_states_follow_login(void)
{
    CK_SESSION_HANDLE ro = open_session(RO), rw = open_session(RW);

    CU_ASSERT_EQUAL(session_state(ro), CKS_RO_PUBLIC_SESSION);
    CU_ASSERT_EQUAL(session_state(rw), CKS_RW_PUBLIC_SESSION);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(ro, CKU_USER, USER_PIN, USER_PIN_LEN), CKR_OK);
    /* Login belongs to the application: every session sees it. */
    CU_ASSERT_EQUAL(session_state(ro), CKS_RO_USER_FUNCTIONS);
    CU_ASSERT_EQUAL(session_state(rw), CKS_RW_USER_FUNCTIONS);
    CU_ASSERT_EQUAL(p11->C_Logout(rw), CKR_OK);
    CU_ASSERT_EQUAL(session_state(ro), CKS_RO_PUBLIC_SESSION);
    CU_ASSERT_EQUAL(p11->C_Logout(rw), CKR_USER_NOT_LOGGED_IN);

    /* The SO works in R/W sessions only. */
    CU_ASSERT_EQUAL(p11->C_Login(rw, CKU_SO, SO_PIN, SO_PIN_LEN), CKR_SESSION_READ_ONLY_EXISTS);
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(rw, CKU_SO, SO_PIN, SO_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(session_state(rw), CKS_RW_SO_FUNCTIONS);
    CU_ASSERT_EQUAL(p11->C_OpenSession(SLOT, RO, NULL, NULL, &ro),
                    CKR_SESSION_READ_WRITE_SO_EXISTS);
    CU_ASSERT_EQUAL(p11->C_Logout(rw), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(rw), CKR_OK);
}

static void test_login_errors(void)
{
    CK_SESSION_HANDLE s = open_session(RW);

    CU_ASSERT_EQUAL(p11->C_Login(BAD_SESSION, CKU_USER, USER_PIN, USER_PIN_LEN),
                    CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_USER, NULL, 4), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_Login(s, 77, USER_PIN, USER_PIN_LEN), CKR_USER_TYPE_INVALID);
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_CONTEXT_SPECIFIC, USER_PIN, USER_PIN_LEN),
                    CKR_OPERATION_NOT_INITIALIZED);
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR) "wrong-pin", 9), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_USER, USER_PIN, USER_PIN_LEN - 1), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_SO, USER_PIN, USER_PIN_LEN), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(session_state(s), CKS_RW_PUBLIC_SESSION);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, USER_PIN, USER_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_USER, USER_PIN, USER_PIN_LEN), CKR_USER_ALREADY_LOGGED_IN);
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_SO, SO_PIN, SO_PIN_LEN),
                    CKR_USER_ANOTHER_ALREADY_LOGGED_IN);
    CU_ASSERT_EQUAL(p11->C_Logout(BAD_SESSION), CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

static void test_closing_the_last_session_logs_out(void)
{
    CK_SESSION_HANDLE a = open_session(RW), b = open_session(RO);

    CU_ASSERT_EQUAL_FATAL(p11->C_Login(a, CKU_USER, USER_PIN, USER_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(a), CKR_OK);
    CU_ASSERT_EQUAL(session_state(b), CKS_RO_USER_FUNCTIONS);
    CU_ASSERT_EQUAL(p11->C_CloseSession(b), CKR_OK);
    a = open_session(RW);
    CU_ASSERT_EQUAL(session_state(a), CKS_RW_PUBLIC_SESSION);

    CU_ASSERT_EQUAL_FATAL(p11->C_Login(a, CKU_USER, USER_PIN, USER_PIN_LEN), CKR_OK);
    b = open_session(RW);
    CU_ASSERT_EQUAL(p11->C_CloseAllSessions(BAD_SLOT), CKR_SLOT_ID_INVALID);
    CU_ASSERT_EQUAL(p11->C_CloseAllSessions(SLOT), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GetSessionInfo(a, &(CK_SESSION_INFO){0}), CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetSessionInfo(b, &(CK_SESSION_INFO){0}), CKR_SESSION_HANDLE_INVALID);
    a = open_session(RO);
    CU_ASSERT_EQUAL(session_state(a), CKS_RO_PUBLIC_SESSION);
    CU_ASSERT_EQUAL(p11->C_CloseSession(a), CKR_OK);
}

static void test_many_sessions_at_once(void)
{
    enum { N = 300 };
    CK_SESSION_HANDLE *s = calloc(N, sizeof(*s));
    CK_TOKEN_INFO info;

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    for (int i = 0; i < N; i++)
        s[i] = open_session(i % 2 ? RW : RO);
    CU_ASSERT_EQUAL(p11->C_GetTokenInfo(SLOT, &info), CKR_OK);
    CU_ASSERT_EQUAL(info.ulSessionCount, N);
    CU_ASSERT_EQUAL(info.ulRwSessionCount, N / 2);
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < i; j++)
            CU_ASSERT_NOT_EQUAL(s[i], s[j]);
        CU_ASSERT_EQUAL(p11->C_CloseSession(s[i]), CKR_OK);
    }
    free(s);
}

/* ---- PINs --------------------------------------------------------------------------------- */

static void test_set_pin_changes_the_user_pin(void)
{
    CK_SESSION_HANDLE ro = open_session(RO), s = open_session(RW);
    CK_UTF8CHAR_PTR other = (CK_UTF8CHAR_PTR) "another-pin-99";

    CU_ASSERT_EQUAL(p11->C_SetPIN(ro, USER_PIN, USER_PIN_LEN, other, 14), CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_SetPIN(s, NULL, 4, other, 14), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_SetPIN(s, USER_PIN, USER_PIN_LEN, NULL, 4), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_SetPIN(s, other, 14, other, 14), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(p11->C_SetPIN(s, USER_PIN, USER_PIN_LEN, other, 3), CKR_PIN_LEN_RANGE);
    /* From a public session: the user's own PIN. */
    CU_ASSERT_EQUAL_FATAL(p11->C_SetPIN(s, USER_PIN, USER_PIN_LEN, other, 14), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_USER, USER_PIN, USER_PIN_LEN), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, other, 14), CKR_OK);
    /* Logged in: still the user's. */
    CU_ASSERT_EQUAL(p11->C_SetPIN(s, other, 14, USER_PIN, USER_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_USER, USER_PIN, USER_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

static void test_so_sets_its_own_pin_and_inits_the_user_pin(void)
{
    CK_SESSION_HANDLE s = open_session(RW);
    CK_UTF8CHAR_PTR fresh = (CK_UTF8CHAR_PTR) "fresh-user-pin";

    CU_ASSERT_EQUAL(p11->C_InitPIN(s, fresh, 14), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, USER_PIN, USER_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_InitPIN(s, fresh, 14), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);

    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_SO, SO_PIN, SO_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_InitPIN(s, NULL, 0), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_InitPIN(s, fresh, 2), CKR_PIN_LEN_RANGE);
    CU_ASSERT_EQUAL(p11->C_InitPIN(s, fresh, 14), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SetPIN(s, SO_PIN, SO_PIN_LEN, (CK_UTF8CHAR_PTR) "new-so-pin", 10),
                    CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_SO, SO_PIN, SO_PIN_LEN), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_SO, (CK_UTF8CHAR_PTR) "new-so-pin", 10), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SetPIN(s, (CK_UTF8CHAR_PTR) "new-so-pin", 10, SO_PIN, SO_PIN_LEN),
                    CKR_OK);
    CU_ASSERT_EQUAL(p11->C_InitPIN(s, USER_PIN, USER_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_USER, fresh, 14), CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_USER, USER_PIN, USER_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

/* ---- the vendor interface ----------------------------------------------------------------- */

static HF_FUNCTION_LIST *vendor(void)
{
    CK_C_GetInterface get = (CK_C_GetInterface)hf_test_module_sym(&mod, "C_GetInterface");
    CK_INTERFACE_PTR i = NULL;

    if (!get || get((CK_UTF8CHAR_PTR)HF_INTERFACE_NAME, NULL, &i, 0) != CKR_OK) return NULL;
    return i->pFunctionList;
}

static bool audit_log_has(const char *needle)
{
    FILE *fp = fopen(env.cfg.audit_path, "r");
    char line[4096];
    bool found = false;

    if (!fp) return false;
    while (!found && fgets(line, sizeof(line), fp))
        found = strstr(line, needle) != NULL;
    fclose(fp);
    return found;
}

static int durable_calls;
static void on_durable(void *arg)
{
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

static void test_vendor_context_lands_in_the_audit_record(void)
{
    HF_FUNCTION_LIST *hf = vendor();
    HF_REQUEST_CONTEXT ctx = {.api = "unit-test",
                              .operation = "probe",
                              .caller = "tester",
                              .request_id = "req-8c1d7f",
                              .link_type = NULL,
                              .link_id = NULL};
    CK_SESSION_HANDLE s = open_session(RW);
    CK_ULONG_LONG seq0 = 99, seq1 = 0, seq2 = 0;
    CK_RV result = CKR_GENERAL_ERROR;

    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(BAD_SESSION, &ctx), CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(hf->HF_GetLastAuditSeq(s, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_GetLastAuditSeq(BAD_SESSION, &seq0), CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(hf->HF_GetLastAuditSeq(s, &seq0), CKR_OK);
    CU_ASSERT_EQUAL(seq0, 0);

    /* Only the gateway's login may attach a context; it then serves the next operation. */
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, &ctx), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, GW_PIN, GW_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, &ctx), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR) "not-the-pin", 11),
                    CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(hf->HF_GetLastAuditSeq(s, &seq1), CKR_OK);
    CU_ASSERT(seq1 > 0);
    /* 1.5: that record holds the failure. */
    CU_ASSERT_FATAL(hf->version.minor >= 5 && hf->HF_GetLastAuditResult);
    CU_ASSERT_EQUAL(hf->HF_GetLastAuditResult(s, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_GetLastAuditResult(BAD_SESSION, &result), CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(hf->HF_GetLastAuditResult(s, &result), CKR_OK);
    CU_ASSERT_EQUAL(result, CKR_PIN_INCORRECT);
    CU_ASSERT_EQUAL(hf->HF_AuditWaitDurable(seq1), CKR_OK);
    CU_ASSERT(audit_log_has("req-8c1d7f"));
    CU_ASSERT(audit_log_has("unit-test"));

    /* The context served one operation; the next record is the plain PKCS#11 one. */
    CU_ASSERT_EQUAL(p11->C_Login(s, CKU_USER, USER_PIN, USER_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_GetLastAuditSeq(s, &seq2), CKR_OK);
    CU_ASSERT(seq2 > seq1);
    CU_ASSERT_EQUAL(hf->HF_GetLastAuditResult(s, &result), CKR_OK);
    CU_ASSERT_EQUAL(result, CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_AuditNotifyDurable(seq2, NULL, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_AuditNotifyDurable(seq2, on_durable, &durable_calls), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_AuditWaitDurable(seq2), CKR_OK);
    for (int i = 0; i < 100 && __atomic_load_n(&durable_calls, __ATOMIC_SEQ_CST) == 0; i++)
        usleep(10000);
    CU_ASSERT_EQUAL(__atomic_load_n(&durable_calls, __ATOMIC_SEQ_CST), 1);

    /* The user PIN's login is an ordinary caller: no context. NULL clears a context that was
     * set. */
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, &ctx), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, GW_PIN, GW_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, &ctx), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, NULL), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

static void test_vendor_link_info(void)
{
    HF_FUNCTION_LIST *hf = vendor();
    CK_SESSION_HANDLE s = open_session(RO);
    HF_LINK_INFO info;

    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    CU_ASSERT_EQUAL(hf->HF_GetLinkInfo(s, "aws-xks", "no-such-key", &info), CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_EQUAL(hf->HF_GetLinkInfo(s, NULL, "x", &info), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_GetLinkInfo(s, "aws-xks", "x", NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_GetLinkInfo(BAD_SESSION, "aws-xks", "x", &info),
                    CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

/* The store as another process (the CLI, through a core of its own, so its rows carry their
 * policy MACs) changes it: links are added and blocked there. */
static void store_link(const char *key_uuid, bool add, bool blocked)
{
    struct hf_core *core = NULL;

    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    if (add) {
        CU_ASSERT_EQUAL(hf_core_link_add(core, "aws-xks", "xks-key-1", key_uuid, NULL), CKR_OK);
    } else {
        CU_ASSERT_EQUAL(hf_core_link_set_blocked(core, "aws-xks", "xks-key-1", blocked, NULL),
                        CKR_OK);
    }
    hf_core_close(core);
}

static uint64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* One use of key through the link of ctx (a context serves one operation). */
static CK_RV use_through_link(HF_FUNCTION_LIST *hf, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                              const HF_REQUEST_CONTEXT *ctx)
{
    CK_ATTRIBUTE get_cls = {CKA_CLASS, NULL, 0};
    CK_RV rv = hf->HF_SetRequestContext(s, ctx);

    return rv != CKR_OK ? rv : p11->C_GetAttributeValue(s, key, &get_cls, 1);
}

/* Milliseconds until use_through_link gives want (polling every 10 ms), or more than limit. */
static uint64_t ms_until(HF_FUNCTION_LIST *hf, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                         const HF_REQUEST_CONTEXT *ctx, CK_RV want, uint64_t limit)
{
    uint64_t start = mono_ms(), now = start;

    while (use_through_link(hf, s, key, ctx) != want && (now = mono_ms()) - start <= limit)
        usleep(10000);
    return now - start;
}

/* The kill switch through the link cache: a block made through another store handle (as the CLI
 * makes it, from another process) stops the key's use through the link within a second, and an
 * unblock lets it through again as soon; an unknown link is refused, also when asked again. */
static void test_a_blocked_link_stops_its_key_within_a_second(void)
{
    HF_FUNCTION_LIST *hf = vendor();
    HF_REQUEST_CONTEXT ctx = {.api = "aws-xks",
                              .operation = "Encrypt",
                              .caller = "arn:test",
                              .request_id = "r-1",
                              .link_type = "aws-xks",
                              .link_id = "xks-key-1"};
    HF_REQUEST_CONTEXT unknown = ctx;
    CK_SESSION_HANDLE s = open_session(RW);
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 32;
    CK_ATTRIBUTE tmpl[] = {{CKA_LABEL, "linked-key", 10}, {CKA_VALUE_LEN, &len, sizeof(len)}};
    char uuid[HF_UUID_LEN + 1] = "";
    CK_ATTRIBUTE get_uuid = {CKA_HF_KEY_UUID, uuid, HF_UUID_LEN};
    CK_ATTRIBUTE get_cls = {CKA_CLASS, NULL, 0};
    CK_OBJECT_HANDLE key;
    HF_LINK_INFO info;
    uint64_t ms;

    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    unknown.link_id = "xks-no-such-key";
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, GW_PIN, GW_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(s, &mech, tmpl, 2, &key), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_GetAttributeValue(s, key, &get_uuid, 1), CKR_OK);
    /* Asked about before it exists: "no such link" is an answer the cache keeps for a while. */
    CU_ASSERT_EQUAL(hf->HF_GetLinkInfo(s, "aws-xks", "xks-key-1", &info), CKR_KEY_HANDLE_INVALID);
    store_link(uuid, true, false);
    ms = ms_until(hf, s, key, &ctx, CKR_OK, 1500);
    CU_ASSERT(ms <= 1000);
    CU_ASSERT_EQUAL(hf->HF_GetLinkInfo(s, "aws-xks", "xks-key-1", &info), CKR_OK);
    CU_ASSERT_STRING_EQUAL(info.key_uuid, uuid);
    CU_ASSERT_EQUAL(info.blocked, CK_FALSE);

    store_link(uuid, false, true);
    ms = ms_until(hf, s, key, &ctx, CKR_HF_LINK_BLOCKED, 1500);
    CU_ASSERT(ms <= 1000);
    if (ms > 1000) fprintf(stderr, "\n    the block took %llu ms\n", (unsigned long long)ms);
    /* From then on, every use through the link is refused, and the vendor call agrees. */
    for (int i = 0; i < 20; i++)
        CU_ASSERT_EQUAL(use_through_link(hf, s, key, &ctx), CKR_HF_LINK_BLOCKED);
    CU_ASSERT_EQUAL(hf->HF_GetLinkInfo(s, "aws-xks", "xks-key-1", &info), CKR_OK);
    CU_ASSERT_EQUAL(info.blocked, CK_TRUE);
    /* Without the link in the context the key is the key: other programs are not cut off. */
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, NULL), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(s, key, &get_cls, 1), CKR_OK);

    /* An unknown link fails, the second time (from the cache) as the first. */
    CU_ASSERT_EQUAL(use_through_link(hf, s, key, &unknown), CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_EQUAL(use_through_link(hf, s, key, &unknown), CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_EQUAL(hf->HF_GetLinkInfo(s, "aws-xks", "xks-no-such-key", &info),
                    CKR_KEY_HANDLE_INVALID);

    store_link(uuid, false, false);
    ms = ms_until(hf, s, key, &ctx, CKR_OK, 1500);
    CU_ASSERT(ms <= 1000);
    CU_ASSERT_EQUAL(use_through_link(hf, s, key, &ctx), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, NULL), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(s, key), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

/* The store edited behind Holdfast's back (sqlite3 on the file): the link's row then fails its
 * policy MAC. Blocking is the HYOK kill switch, so an unblock made that way must not let the key
 * through: the link stays unusable, on the module's next look at the store as on every later. */
static void test_a_link_unblocked_by_editing_the_store_stays_unusable(void)
{
    HF_FUNCTION_LIST *hf = vendor();
    HF_REQUEST_CONTEXT ctx = {.api = "aws-xks",
                              .operation = "Encrypt",
                              .caller = "arn:test",
                              .request_id = "r-2",
                              .link_type = "aws-xks",
                              .link_id = "xks-edited"};
    CK_SESSION_HANDLE s = open_session(RW);
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 32;
    CK_ATTRIBUTE tmpl[] = {{CKA_LABEL, "edited-link-key", 15}, {CKA_VALUE_LEN, &len, sizeof(len)}};
    char uuid[HF_UUID_LEN + 1] = "";
    CK_ATTRIBUTE get_uuid = {CKA_HF_KEY_UUID, uuid, HF_UUID_LEN};
    struct hf_core *core = NULL;
    CK_OBJECT_HANDLE key;
    HF_LINK_INFO info;
    sqlite3 *db = NULL;

    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    /* The gateway's login: only it may name a link in a request context. */
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, GW_PIN, GW_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(s, &mech, tmpl, 2, &key), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_GetAttributeValue(s, key, &get_uuid, 1), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_link_add(core, "aws-xks", "xks-edited", uuid, NULL), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_link_set_blocked(core, "aws-xks", "xks-edited", true, NULL), CKR_OK);
    hf_core_close(core);
    CU_ASSERT(ms_until(hf, s, key, &ctx, CKR_HF_LINK_BLOCKED, 1500) <= 1000);

    CU_ASSERT_EQUAL_FATAL(sqlite3_open(env.cfg.store_path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    CU_ASSERT_EQUAL(sqlite3_exec(db, "UPDATE links SET blocked = 0 WHERE ext_id = 'xks-edited'",
                                 NULL, NULL, NULL),
                    SQLITE_OK);
    usleep((HF_LINK_CACHE_MS + 200) * 1000);
    for (int i = 0; i < 20; i++)
        CU_ASSERT_EQUAL(use_through_link(hf, s, key, &ctx), CKR_HF_POLICY_INVALID);
    CU_ASSERT_EQUAL(hf->HF_GetLinkInfo(s, "aws-xks", "xks-edited", &info), CKR_HF_POLICY_INVALID);
    /* Put back as Holdfast wrote it, the link is what it was: blocked. */
    CU_ASSERT_EQUAL(sqlite3_exec(db, "UPDATE links SET blocked = 1 WHERE ext_id = 'xks-edited'",
                                 NULL, NULL, NULL),
                    SQLITE_OK);
    sqlite3_close(db);
    CU_ASSERT(ms_until(hf, s, key, &ctx, CKR_HF_LINK_BLOCKED, 1500) <= 1000);
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, NULL), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(s, key), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

/* Points link aws-xks/ext_id at key_uuid through another store handle (the CLI's way of moving
 * a link: delete, then add). */
static void store_link_move(const char *ext_id, const char *key_uuid)
{
    struct hf_core *core = NULL;

    /* Through a core, as the CLI writes: a row without its policy MAC would be refused. */
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    hf_store_link_delete(hf_core_store(core), "aws-xks", ext_id); /* absent the first time */
    CU_ASSERT_EQUAL(hf_core_link_add(core, "aws-xks", ext_id, key_uuid, NULL), CKR_OK);
    hf_core_close(core);
}

static CK_OBJECT_HANDLE linked_aes_key(CK_SESSION_HANDLE s, const char *label,
                                       char uuid[HF_UUID_LEN + 1])
{
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 32;
    CK_ATTRIBUTE tmpl[] = {{CKA_LABEL, (void *)label, strlen(label)},
                           {CKA_VALUE_LEN, &len, sizeof(len)}};
    CK_ATTRIBUTE get_uuid = {CKA_HF_KEY_UUID, uuid, HF_UUID_LEN};
    CK_OBJECT_HANDLE key = CK_INVALID_HANDLE;

    memset(uuid, 0, HF_UUID_LEN + 1);
    CU_ASSERT_EQUAL(p11->C_GenerateKey(s, &mech, tmpl, 2, &key), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(s, key, &get_uuid, 1), CKR_OK);
    return key;
}

/* The kill switch for a moved link: once the link names another key, the old key is refused
 * through it within the link cache's time (it used to stay usable: only the blocked flag was
 * checked), and the new key goes through. */
static void test_a_moved_link_stops_the_old_key(void)
{
    HF_FUNCTION_LIST *hf = vendor();
    HF_REQUEST_CONTEXT ctx = {.api = "aws-xks",
                              .operation = "Encrypt",
                              .request_id = "r-move",
                              .link_type = "aws-xks",
                              .link_id = "xks-moved"};
    CK_SESSION_HANDLE s = open_session(RW);
    char uuid_a[HF_UUID_LEN + 1], uuid_b[HF_UUID_LEN + 1];
    CK_OBJECT_HANDLE a, b;
    uint64_t ms;

    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    /* The gateway's login: only it may name a link in a request context. */
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, GW_PIN, GW_PIN_LEN), CKR_OK);
    a = linked_aes_key(s, "moved-from", uuid_a);
    b = linked_aes_key(s, "moved-to", uuid_b);
    store_link_move("xks-moved", uuid_a);
    CU_ASSERT(ms_until(hf, s, a, &ctx, CKR_OK, 1500) <= 1000);
    store_link_move("xks-moved", uuid_b);
    ms = ms_until(hf, s, a, &ctx, CKR_KEY_HANDLE_INVALID, 1500);
    CU_ASSERT(ms <= HF_LINK_CACHE_MS + 100);
    if (ms > HF_LINK_CACHE_MS + 100)
        fprintf(stderr, "\n    the old key still served %llu ms\n", (unsigned long long)ms);
    CU_ASSERT_EQUAL(use_through_link(hf, s, a, &ctx), CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_EQUAL(use_through_link(hf, s, b, &ctx), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, NULL), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(s, a), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(s, b), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

/* ---- the vendor audit record of a request ------------------------------------------------ */

static uint64_t audit_records(void)
{
    struct hf_audit_verify_result res;

    CU_ASSERT_EQUAL(hf_core_audit_verify(&env.cfg, NULL, true, false, &res), CKR_OK);
    return res.records;
}

/* The record whose line holds needle (a unique request id), parsed; NULL if none. The caller
 * frees it with json_object_put. */
static json_object *audit_record_with(const char *needle)
{
    FILE *fp = fopen(env.cfg.audit_path, "r");
    char *line = NULL, *rec;
    size_t cap = 0;
    json_object *found = NULL;

    if (!fp) return NULL;
    while (!found && getline(&line, &cap, fp) >= 0)
        if (strstr(line, needle) && (rec = strstr(line, "{\"seq\":")))
            found = json_tokener_parse(rec);
    free(line);
    fclose(fp);
    return found;
}

static const char *member(json_object *o, const char *name)
{
    json_object *v;

    return o && json_object_object_get_ex(o, name, &v) ? json_object_get_string(v) : "";
}

static int64_t member_int(json_object *o, const char *name)
{
    json_object *v;

    return o && json_object_object_get_ex(o, name, &v) ? json_object_get_int64(v) : -1;
}

/* A request that ended before any key operation (here: failed authentication) still gets its one
 * record, with what the gateway knew, and a seq to wait on. */
static void test_audit_request_writes_one_record_with_the_context(void)
{
    HF_FUNCTION_LIST *hf = vendor();
    HF_REQUEST_CONTEXT ctx = {.api = "aws-xks",
                              .operation = "Decrypt",
                              .caller = "arn:aws:iam::111122223333:role/kms",
                              .request_id = "req-audit-request-7f3a",
                              .detail = "AuthenticationFailedException: signature mismatch"};
    CK_ULONG_LONG seq = 0;
    uint64_t n0;
    json_object *rec;
    char seqtxt[32];

    CK_SESSION_HANDLE s = open_session(RW);

    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, GW_PIN, GW_PIN_LEN), CKR_OK);
    n0 = audit_records();
    CU_ASSERT_EQUAL(hf->HF_AuditRequest(&ctx, CKR_PIN_INCORRECT, &seq), CKR_OK);
    CU_ASSERT(seq > 0);
    CU_ASSERT_EQUAL(hf->HF_AuditWaitDurable(seq), CKR_OK);
    CU_ASSERT_EQUAL(audit_records(), n0 + 1);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
    rec = audit_record_with("req-audit-request-7f3a");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
    snprintf(seqtxt, sizeof(seqtxt), "%llu", seq);
    CU_ASSERT_STRING_EQUAL(member(rec, "seq"), seqtxt);
    CU_ASSERT_STRING_EQUAL(member(rec, "api"), "aws-xks");
    CU_ASSERT_STRING_EQUAL(member(rec, "op"), "Decrypt");
    CU_ASSERT_STRING_EQUAL(member(rec, "caller"), "arn:aws:iam::111122223333:role/kms");
    CU_ASSERT_STRING_EQUAL(member(rec, "request_id"), "req-audit-request-7f3a");
    CU_ASSERT_STRING_EQUAL(member(rec, "detail"),
                           "AuthenticationFailedException: signature mismatch");
    CU_ASSERT_STRING_EQUAL(member(rec, "result"), "0xa0"); /* CKR_PIN_INCORRECT */
    CU_ASSERT_STRING_EQUAL(member(rec, "ok"), "false");
    json_object_put(rec);
}

/* A record in another API's name is the gateway's to write: an ordinary PKCS#11 caller (no
 * login, or the user PIN's) cannot forge one, through either vendor call. */
static void test_vendor_records_need_the_gateway_login(void)
{
    HF_FUNCTION_LIST *hf = vendor();
    HF_REQUEST_CONTEXT ctx = {.api = "aws-xks",
                              .operation = "Decrypt",
                              .caller = "arn:aws:iam::111122223333:role/forged",
                              .request_id = "req-forged-0001"};
    CK_SESSION_HANDLE s = open_session(RW);
    CK_ULONG_LONG seq = 0;
    uint64_t n0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    CU_ASSERT_FATAL(hf->version.minor >= 2);
    n0 = audit_records();
    CU_ASSERT_EQUAL(hf->HF_AuditRequest(&ctx, CKR_OK, &seq), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(hf->HF_AuditRequestSession(s, &ctx, CKR_OK, &seq), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, &ctx), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, USER_PIN, USER_PIN_LEN), CKR_OK);
    n0++; /* the login's record */
    CU_ASSERT_EQUAL(hf->HF_AuditRequest(&ctx, CKR_OK, &seq), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(hf->HF_AuditRequestSession(s, &ctx, CKR_OK, &seq), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, &ctx), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(seq, 0);
    CU_ASSERT_EQUAL(audit_records(), n0);
    CU_ASSERT(!audit_log_has("req-forged-0001"));
    /* The gateway's login may, through a session of its own. */
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, GW_PIN, GW_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_AuditRequestSession(BAD_SESSION, &ctx, CKR_OK, &seq),
                    CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(hf->HF_AuditRequestSession(s, &ctx, CKR_OK, &seq), CKR_OK);
    CU_ASSERT(seq > 0);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

/* 1.3: a request's fields reach the record of HF_AuditRequestSession (a failed request) and of
 * the next key operation (a success), escaped as JSON (quotes, backslash, control characters;
 * UTF-8 kept); they serve one record; malformed ones are refused; only the gateway sets them;
 * `audit verify` still passes over such records. */
static void test_request_fields_land_in_one_record(void)
{
    HF_FUNCTION_LIST *hf = vendor();
    HF_REQUEST_CONTEXT ctx = {.api = "unit-test", .operation = "wrap", .request_id = "req-f1"};
    static const char fields[] =
        "{\"reason\":\"CUSTOMER_INITIATED_ACCESS\",\"quote\":\"a \\\"b\\\" c\\\\d\","
        "\"name\":\"J\\u00f6rg \\u2603\",\"ctl\":\"x\\ny\"}";
    static const char want[] =
        "\"fields\":{\"reason\":\"CUSTOMER_INITIATED_ACCESS\","
        "\"quote\":\"a \\\"b\\\" c\\\\d\",\"name\":\"J\xc3\xb6rg \xe2\x98\x83\","
        "\"ctl\":\"x\\ny\"},\"result\"";
    unsigned char iv[12] = {1}, msg[16] = {2}, ct[64];
    CK_GCM_PARAMS gp = {iv, sizeof(iv), 96, NULL, 0, 128};
    CK_MECHANISM gcm = {CKM_AES_GCM, &gp, sizeof(gp)};
    CK_SESSION_HANDLE s = open_session(RW);
    CK_OBJECT_HANDLE key;
    CK_ULONG ctlen;
    char uuid[HF_UUID_LEN + 1];
    CK_ULONG_LONG seq = 0;
    json_object *rec, *f;

    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    CU_ASSERT_FATAL(hf->version.minor >= 3);
    CU_ASSERT_EQUAL(hf->HF_SetRequestFields(s, fields), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, GW_PIN, GW_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_SetRequestFields(BAD_SESSION, fields), CKR_SESSION_HANDLE_INVALID);
    /* Not an object of at most 8 strings under [a-z0-9_]{1,32}, or not valid UTF-8. */
    CU_ASSERT_EQUAL(hf->HF_SetRequestFields(s, "[\"a\"]"), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_SetRequestFields(s, "{\"a\":1}"), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_SetRequestFields(s, "{\"a\":{\"b\":\"c\"}}"), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_SetRequestFields(s, "{\"Bad\":\"c\"}"), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_SetRequestFields(s, "{\"a\":\"b\"} x"), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_SetRequestFields(s, "{\"a\":\"\xc3\"}"), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_SetRequestFields(s, "{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\",\"d\":\"4\","
                                               "\"e\":\"5\",\"f\":\"6\",\"g\":\"7\",\"h\":\"8\","
                                               "\"i\":\"9\"}"),
                    CKR_ARGUMENTS_BAD);
    {
        char big[HF_REQUEST_FIELDS_MAX_LEN + 16];
        memset(big, 'v', sizeof(big));
        memcpy(big, "{\"a\":\"", 6);
        memcpy(big + sizeof(big) - 3, "\"}", 3);
        CU_ASSERT_EQUAL(hf->HF_SetRequestFields(s, big), CKR_ARGUMENTS_BAD);
    }
    /* A failed request's record. */
    CU_ASSERT_EQUAL(hf->HF_SetRequestFields(s, fields), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_AuditRequestSession(s, &ctx, CKR_KEY_FUNCTION_NOT_PERMITTED, &seq),
                    CKR_OK);
    CU_ASSERT(audit_log_has(want));
    rec = audit_record_with("req-f1");
    CU_ASSERT_TRUE(json_object_object_get_ex(rec, "fields", &f));
    CU_ASSERT_STRING_EQUAL(member(f, "quote"), "a \"b\" c\\d");
    CU_ASSERT_STRING_EQUAL(member(f, "name"), "J\xc3\xb6rg \xe2\x98\x83");
    json_object_put(rec);
    /* Spent: the next request record has none. */
    ctx.request_id = "req-f2";
    CU_ASSERT_EQUAL(hf->HF_AuditRequestSession(s, &ctx, CKR_OK, &seq), CKR_OK);
    rec = audit_record_with("req-f2");
    CU_ASSERT_PTR_NOT_NULL(rec);
    CU_ASSERT_FALSE(json_object_object_get_ex(rec, "fields", &f));
    json_object_put(rec);
    /* A key operation's record (a success); HF_SetRequestContext clears fields set before it. */
    key = linked_aes_key(s, "aes-fields", uuid);
    ctx.request_id = "req-f3";
    CU_ASSERT_EQUAL(hf->HF_SetRequestFields(s, "{\"stale\":\"yes\"}"), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, &ctx), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_SetRequestFields(s, "{\"resource_name\":\"//x/\\\"y\\\"\"}"), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(s, &gcm, key), CKR_OK);
    ctlen = sizeof(ct);
    CU_ASSERT_EQUAL(p11->C_Encrypt(s, msg, sizeof(msg), ct, &ctlen), CKR_OK);
    rec = audit_record_with("req-f3");
    CU_ASSERT_TRUE(json_object_object_get_ex(rec, "fields", &f));
    CU_ASSERT_STRING_EQUAL(member(f, "resource_name"), "//x/\"y\"");
    CU_ASSERT_FALSE(json_object_object_get_ex(f, "stale", NULL));
    CU_ASSERT_STRING_EQUAL(member(rec, "ok"), "true");
    json_object_put(rec);
    CU_ASSERT(audit_log_has("\"fields\":{\"resource_name\":\"//x/\\\"y\\\"\"}"));
    CU_ASSERT_EQUAL(hf->HF_SetRequestFields(s, NULL), CKR_OK);
    CU_ASSERT(audit_records() > 0); /* audit verify passes over the records with fields */
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

/* 1.4: a request of an API whose successes go unrecorded: its key operation's success writes no
 * record, a failure still does; the flag is spent with the context; only the gateway sets it. */
static void test_request_audit_failures_only(void)
{
    HF_FUNCTION_LIST *hf = vendor();
    HF_REQUEST_CONTEXT ctx = {.api = "unit-test", .operation = "decrypt", .request_id = "req-q1"};
    unsigned char iv[12] = {1}, msg[16] = {2}, ct[64], pt[64];
    CK_GCM_PARAMS gp = {iv, sizeof(iv), 96, NULL, 0, 128};
    CK_MECHANISM gcm = {CKM_AES_GCM, &gp, sizeof(gp)};
    CK_SESSION_HANDLE s = open_session(RW);
    CK_OBJECT_HANDLE key;
    CK_ULONG ctlen = sizeof(ct), ptlen = sizeof(pt);
    char uuid[HF_UUID_LEN + 1];
    json_object *rec;

    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    CU_ASSERT_FATAL(hf->version.minor >= 4 && hf->HF_SetRequestAudit);
    CU_ASSERT_EQUAL(hf->HF_SetRequestAudit(s, HF_REQUEST_AUDIT_FAILURES_ONLY),
                    CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, GW_PIN, GW_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_SetRequestAudit(BAD_SESSION, 0), CKR_SESSION_HANDLE_INVALID);
    CU_ASSERT_EQUAL(hf->HF_SetRequestAudit(s, 0x80), CKR_ARGUMENTS_BAD);
    key = linked_aes_key(s, "aes-failures-only", uuid);
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, &ctx), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_SetRequestAudit(s, HF_REQUEST_AUDIT_FAILURES_ONLY), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(s, &gcm, key), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Encrypt(s, msg, sizeof(msg), ct, &ctlen), CKR_OK);
    CU_ASSERT_PTR_NULL(audit_record_with("req-q1"));
    /* A failure of the same kind of request is recorded. */
    ctx.request_id = "req-q2";
    ct[0] ^= 1;
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, &ctx), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_SetRequestAudit(s, HF_REQUEST_AUDIT_FAILURES_ONLY), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DecryptInit(s, &gcm, key), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Decrypt(s, ct, ctlen, pt, &ptlen), CKR_ENCRYPTED_DATA_INVALID);
    rec = audit_record_with("req-q2");
    CU_ASSERT_PTR_NOT_NULL(rec);
    json_object_put(rec);
    /* Spent: the next request, without the flag, records its success. */
    ctx.request_id = "req-q3";
    ct[0] ^= 1;
    ptlen = sizeof(pt);
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, &ctx), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DecryptInit(s, &gcm, key), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Decrypt(s, ct, ctlen, pt, &ptlen), CKR_OK);
    rec = audit_record_with("req-q3");
    CU_ASSERT_PTR_NOT_NULL(rec);
    json_object_put(rec);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

/* 1.3: the gateway registers a plugin's link type (audited), then links of it can be made;
 * HF_GetKeyLink finds a key's link of a type, two-call. */
static void test_link_types_register_and_key_links(void)
{
    HF_FUNCTION_LIST *hf = vendor();
    CK_SESSION_HANDLE s = open_session(RW);
    struct hf_core *core = NULL;
    char uuid[HF_UUID_LEN + 1], id[64];
    CK_ULONG len = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    CU_ASSERT_EQUAL(hf->HF_RegisterLinkType(s, "unit-api"), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, GW_PIN, GW_PIN_LEN), CKR_OK);
    linked_aes_key(s, "aes-typed-link", uuid);
    CU_ASSERT_EQUAL(hf->HF_RegisterLinkType(s, "Unit_API"), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_RegisterLinkType(s, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL_FATAL(hf_core_open(&env.cfg, &core), CKR_OK);
    CU_ASSERT_EQUAL(hf_core_link_add(core, "unit-api", "u-1", uuid, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_RegisterLinkType(s, "unit-api"), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_RegisterLinkType(s, "unit-api"), CKR_OK);
    CU_ASSERT(audit_log_has("\"op\":\"link.type_add\",\"caller\""));
    CU_ASSERT_EQUAL(hf_core_link_add(core, "unit-api", "u-1", uuid, NULL), CKR_OK);
    hf_core_close(core);
    CU_ASSERT_EQUAL(hf->HF_GetKeyLink(s, uuid, "aws-xks", NULL, &len), CKR_KEY_HANDLE_INVALID);
    CU_ASSERT_EQUAL(hf->HF_GetKeyLink(s, "not-a-uuid", "unit-api", NULL, &len), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_GetKeyLink(s, uuid, "unit-api", NULL, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 4);
    len = 3;
    CU_ASSERT_EQUAL(hf->HF_GetKeyLink(s, uuid, "unit-api", id, &len), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(len, 4);
    len = sizeof(id);
    CU_ASSERT_EQUAL(hf->HF_GetKeyLink(s, uuid, "unit-api", id, &len), CKR_OK);
    CU_ASSERT_STRING_EQUAL(id, "u-1");
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

static void test_audit_request_refuses_bad_arguments(void)
{
    HF_FUNCTION_LIST *hf = vendor();
    HF_REQUEST_CONTEXT ctx = {.api = "aws-xks", .operation = "Encrypt", .request_id = "r-bad"};
    HF_REQUEST_CONTEXT no_api = ctx, no_op = ctx;
    CK_ULONG_LONG seq = 0;
    uint64_t n0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    no_api.api = NULL;
    no_op.operation = NULL;
    n0 = audit_records();
    CU_ASSERT_EQUAL(hf->HF_AuditRequest(NULL, CKR_OK, &seq), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_AuditRequest(&ctx, CKR_OK, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_AuditRequest(&no_api, CKR_OK, &seq), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf->HF_AuditRequest(&no_op, CKR_OK, &seq), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(seq, 0);
    CU_ASSERT_EQUAL(audit_records(), n0); /* nothing recorded for a bad call */
}

/* With received_us set, the record's latency runs from when the request arrived (here 250 ms
 * before the operation), not from when the key operation started. */
static void test_a_key_operation_records_latency_from_received_us(void)
{
    HF_FUNCTION_LIST *hf = vendor();
    struct timespec now;
    HF_REQUEST_CONTEXT ctx = {.api = "aws-xks",
                              .operation = "Encrypt",
                              .caller = "arn:test",
                              .request_id = "req-latency-91c2"};
    CK_SESSION_HANDLE s = open_session(RW);
    CK_MECHANISM gen = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 32, ctlen;
    CK_ATTRIBUTE tmpl[] = {{CKA_LABEL, "latency-key", 11}, {CKA_VALUE_LEN, &len, sizeof(len)}};
    unsigned char iv[12] = {1}, msg[16] = {2}, ct[64];
    CK_GCM_PARAMS gp = {iv, sizeof(iv), 96, NULL, 0, 128};
    CK_MECHANISM gcm = {CKM_AES_GCM, &gp, sizeof(gp)};
    CK_ULONG_LONG seq = 0;
    CK_OBJECT_HANDLE key;
    json_object *rec;
    int64_t latency;

    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    CU_ASSERT_EQUAL_FATAL(p11->C_Login(s, CKU_USER, GW_PIN, GW_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(s, &gen, tmpl, 2, &key), CKR_OK);
    clock_gettime(CLOCK_MONOTONIC, &now);
    ctx.received_us =
        (CK_ULONG_LONG)now.tv_sec * 1000000u + (CK_ULONG_LONG)now.tv_nsec / 1000u - 250000u;
    CU_ASSERT_EQUAL(hf->HF_SetRequestContext(s, &ctx), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_EncryptInit(s, &gcm, key), CKR_OK);
    ctlen = sizeof(ct);
    CU_ASSERT_EQUAL(p11->C_Encrypt(s, msg, sizeof(msg), ct, &ctlen), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_GetLastAuditSeq(s, &seq), CKR_OK);
    CU_ASSERT_EQUAL(hf->HF_AuditWaitDurable(seq), CKR_OK);
    rec = audit_record_with("req-latency-91c2");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
    CU_ASSERT_STRING_EQUAL(member(rec, "op"), "Encrypt");
    CU_ASSERT_STRING_EQUAL(member(rec, "result"), "0x0");
    CU_ASSERT_EQUAL(member_int(rec, "seq"), (int64_t)seq);
    latency = member_int(rec, "latency_us");
    CU_ASSERT(latency >= 250000 && latency < 250000 + 5000000);
    json_object_put(rec);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(s, key), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_Logout(s), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

/* ---- fork --------------------------------------------------------------------------------- */

static int child_run(void)
{
    CK_SESSION_HANDLE s;
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_ATTRIBUTE tmpl[] = {{CKA_CLASS, &cls, sizeof(cls)}};
    CK_OBJECT_HANDLE found[8];
    CK_ULONG n = 0, slots = 1;
    CK_SLOT_ID slot;

    /* PKCS#11 2.40 section 6.7.7: the child starts uninitialised. */
    if (p11->C_GetSlotList(CK_TRUE, &slot, &slots) != CKR_CRYPTOKI_NOT_INITIALIZED) return 10;
    if (p11->C_Initialize(NULL) != CKR_OK) return 11;
    if (hf_test_module_session(p11, &s) != CKR_OK) return 12;
    if (p11->C_FindObjectsInit(s, tmpl, 1) != CKR_OK) return 13;
    if (p11->C_FindObjects(s, found, 8, &n) != CKR_OK || n < 1) return 14;
    if (p11->C_FindObjectsFinal(s) != CKR_OK) return 15;
    if (p11->C_Finalize(NULL) != CKR_OK) return 16;
    return 0;
}

static void test_fork_child_initializes_again(void)
{
    CK_SESSION_HANDLE s = open_session(RW);
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 16;
    CK_ATTRIBUTE tmpl[] = {{CKA_LABEL, "fork-key", 8}, {CKA_VALUE_LEN, &len, sizeof(len)}};
    CK_OBJECT_HANDLE key;
    CK_SESSION_INFO info;
    int status = -1;
    pid_t pid;

    if (session_state(s) == CKS_RW_PUBLIC_SESSION)
        CU_ASSERT_EQUAL(p11->C_Login(s, CKU_USER, USER_PIN, USER_PIN_LEN), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(s, &mech, tmpl, 2, &key), CKR_OK);
    /* The parent holds a loaded object and a session using it: the child must drop both. */
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(s, key, &(CK_ATTRIBUTE){CKA_LABEL, NULL, 0}, 1),
                    CKR_OK);
    fflush(NULL);
    pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) _exit(child_run());
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT(WIFEXITED(status));
    CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
    /* The parent is untouched by its child. */
    CU_ASSERT_EQUAL(p11->C_GetSessionInfo(s, &info), CKR_OK);
    CU_ASSERT_EQUAL(info.state, CKS_RW_USER_FUNCTIONS);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(s, key), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseSession(s), CKR_OK);
}

/* ---- registration ------------------------------------------------------------------------- */

static CU_TestInfo library_tests[] = {
    {"every entry point refuses before C_Initialize",
     test_every_entry_point_refuses_before_initialize},
    {"C_Initialize validates its arguments", test_initialize_validates_its_arguments},
    {"initialize twice, finalize twice", test_initialize_twice_and_finalize_twice},
    {"C_Initialize fails cleanly without a key store",
     test_initialize_fails_cleanly_without_a_key_store},
    {"the function list is the complete 2.40 one", test_function_list_is_complete_2_40},
    {"the interface list offers PKCS 11 and Holdfast",
     test_interface_list_offers_pkcs11_and_holdfast},
    {"C_GetInterface matches name, version and flags",
     test_get_interface_matches_name_version_and_flags},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo token_tests[] = {
    {"C_GetInfo describes the library", test_get_info_describes_the_library},
    {"C_GetSlotList two-call", test_slot_list_two_call},
    {"the slot has a token", test_slot_info_has_a_token},
    {"C_GetTokenInfo describes the key store", test_token_info_describes_the_key_store},
    {"mechanism list two-call, info for each", test_mechanism_list_two_call_and_info},
    {"C_InitToken is left to the CLI", test_init_token_is_left_to_the_cli},
    {"unsupported functions say so", test_unsupported_functions_say_so},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo session_tests[] = {
    {"C_OpenSession checks its arguments", test_open_session_checks_its_arguments},
    {"session handles die with their session", test_session_handles_die_with_their_session},
    {"session states follow login", test_session_states_follow_login},
    {"login errors", test_login_errors},
    {"closing the last session logs out", test_closing_the_last_session_logs_out},
    {"300 sessions at once", test_many_sessions_at_once},
    {"C_SetPIN changes the user PIN", test_set_pin_changes_the_user_pin},
    {"the SO sets its PIN and inits the user PIN", test_so_sets_its_own_pin_and_inits_the_user_pin},
    {"the vendor request context lands in the audit record",
     test_vendor_context_lands_in_the_audit_record},
    {"vendor link info", test_vendor_link_info},
    {"a blocked link stops its key within a second",
     test_a_blocked_link_stops_its_key_within_a_second},
    {"a link unblocked by editing the store stays unusable",
     test_a_link_unblocked_by_editing_the_store_stays_unusable},
    {"a moved link stops the old key", test_a_moved_link_stops_the_old_key},
    {"HF_AuditRequest writes one record with the context",
     test_audit_request_writes_one_record_with_the_context},
    {"HF_AuditRequest refuses bad arguments", test_audit_request_refuses_bad_arguments},
    {"vendor records need the gateway login", test_vendor_records_need_the_gateway_login},
    {"request fields land in one record, escaped, and are checked",
     test_request_fields_land_in_one_record},
    {"link types are registered by the gateway; a key's link is found by type",
     test_link_types_register_and_key_links},
    {"a request may record failures only", test_request_audit_failures_only},
    {"a key operation records latency from received_us",
     test_a_key_operation_records_latency_from_received_us},
    {"a forked child initializes again", test_fork_child_initializes_again},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    CU_SuiteInfo suites[] = {
        {"module-library", suite_init, suite_clean, NULL, NULL, library_tests},
        {"module-token", started_init, suite_clean, NULL, NULL, token_tests},
        {"module-sessions", sessions_init, suite_clean, NULL, NULL, session_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
