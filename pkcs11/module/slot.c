/* The one slot and its token (one token per key store), mechanisms, PINs and login. Login state
 * belongs to the application, not to a session (PKCS#11 2.40 section 5.6): it lives in
 * hf_mod.login. */
#include "hf-build.h"

#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define PIN_MIN 4
#define PIN_MAX 255

/* ---- slot and token --------------------------------------------------------------------- */

HF_EXPORT CK_RV C_GetSlotList(CK_BBOOL tokenPresent, CK_SLOT_ID_PTR pSlotList,
                              CK_ULONG_PTR pulCount)
{
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(pulCount, CKR_ARGUMENTS_BAD);
    /* The token is always present, so tokenPresent changes nothing. */
    if (pSlotList && *pulCount < 1)
        rv = CKR_BUFFER_TOO_SMALL;
    else if (pSlotList)
        pSlotList[0] = HF_SLOT_ID;
    *pulCount = 1;
    return rv;
}

HF_EXPORT CK_RV C_GetSlotInfo(CK_SLOT_ID slotID, CK_SLOT_INFO_PTR pInfo)
{
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(slotID == HF_SLOT_ID, CKR_SLOT_ID_INVALID);
    hf_return_val_if_fail(pInfo, CKR_ARGUMENTS_BAD);
    memset(pInfo, 0, sizeof(*pInfo));
    hf_pad_copy(pInfo->slotDescription, sizeof(pInfo->slotDescription), "Holdfast key store");
    hf_pad_copy(pInfo->manufacturerID, sizeof(pInfo->manufacturerID), "Holdfast");
    /* Not CKF_HW_SLOT: the keys are software keys (under an HSM-held root KEK). Not removable,
     * so NSS requires CKF_TOKEN_PRESENT, which always holds. */
    pInfo->flags = CKF_TOKEN_PRESENT;
    pInfo->hardwareVersion = hf_module_version();
    pInfo->firmwareVersion = hf_module_version();
    return CKR_OK;
}

/* The serial made by `holdfast init` (16 hex digits); a store without one gets zeros. */
static void token_serial(unsigned char *dst, size_t n)
{
    char *serial = NULL;

    if (hf_store_meta_get(hf_core_store(hf_mod.core), HF_META_TOKEN_SERIAL, &serial) != CKR_OK)
        serial = NULL;
    hf_pad_copy(dst, n, serial ? serial : "0000000000000000");
    free(serial);
}

/* PKCS#11 2.40 section 3.2's counter flags: some wrong PINs, one try left, locked. */
static CK_FLAGS pin_count_flags(enum hf_user user)
{
    uint64_t failures = hf_core_pin_failures(hf_mod.core, user);
    unsigned limit = hf_core_pin_attempts(hf_mod.core);
    bool so = user == HF_USER_SO;

    if (failures >= limit) return so ? CKF_SO_PIN_LOCKED : CKF_USER_PIN_LOCKED;
    if (failures + 1 == limit)
        return so ? CKF_SO_PIN_FINAL_TRY | CKF_SO_PIN_COUNT_LOW
                  : CKF_USER_PIN_FINAL_TRY | CKF_USER_PIN_COUNT_LOW;
    if (failures > 0) return so ? CKF_SO_PIN_COUNT_LOW : CKF_USER_PIN_COUNT_LOW;
    return 0;
}

HF_EXPORT CK_RV C_GetTokenInfo(CK_SLOT_ID slotID, CK_TOKEN_INFO_PTR pInfo)
{
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(slotID == HF_SLOT_ID, CKR_SLOT_ID_INVALID);
    hf_return_val_if_fail(pInfo, CKR_ARGUMENTS_BAD);
    memset(pInfo, 0, sizeof(*pInfo));
    hf_pad_copy(pInfo->label, sizeof(pInfo->label),
                hf_mod.cfg.token_label ? hf_mod.cfg.token_label : "holdfast");
    hf_pad_copy(pInfo->manufacturerID, sizeof(pInfo->manufacturerID), "Holdfast");
    hf_pad_copy(pInfo->model, sizeof(pInfo->model), "Holdfast");
    token_serial(pInfo->serialNumber, sizeof(pInfo->serialNumber));
    pInfo->flags = CKF_RNG | CKF_LOGIN_REQUIRED | CKF_TOKEN_INITIALIZED;
    if (hf_core_pin_is_set(hf_mod.core, HF_USER_NORMAL)) pInfo->flags |= CKF_USER_PIN_INITIALIZED;
    pInfo->flags |= pin_count_flags(HF_USER_NORMAL) | pin_count_flags(HF_USER_SO);
    pInfo->ulMaxSessionCount = HF_MAX_SESSIONS;
    pInfo->ulSessionCount = atomic_load(&hf_mod.session_count);
    pInfo->ulMaxRwSessionCount = HF_MAX_SESSIONS;
    pInfo->ulRwSessionCount = atomic_load(&hf_mod.rw_session_count);
    pInfo->ulMaxPinLen = PIN_MAX;
    pInfo->ulMinPinLen = PIN_MIN;
    pInfo->ulTotalPublicMemory = CK_UNAVAILABLE_INFORMATION;
    pInfo->ulFreePublicMemory = CK_UNAVAILABLE_INFORMATION;
    pInfo->ulTotalPrivateMemory = CK_UNAVAILABLE_INFORMATION;
    pInfo->ulFreePrivateMemory = CK_UNAVAILABLE_INFORMATION;
    pInfo->hardwareVersion = hf_module_version();
    pInfo->firmwareVersion = hf_module_version();
    /* No CKF_CLOCK_ON_TOKEN: utcTime is meaningless and left blank. */
    hf_pad_copy(pInfo->utcTime, sizeof(pInfo->utcTime), "");
    return CKR_OK;
}

HF_EXPORT CK_RV C_GetMechanismList(CK_SLOT_ID slotID, CK_MECHANISM_TYPE_PTR pMechanismList,
                                   CK_ULONG_PTR pulCount)
{
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(slotID == HF_SLOT_ID, CKR_SLOT_ID_INVALID);
    hf_return_val_if_fail(pulCount, CKR_ARGUMENTS_BAD);
    return hf_mech_list(pMechanismList, pulCount);
}

HF_EXPORT CK_RV C_GetMechanismInfo(CK_SLOT_ID slotID, CK_MECHANISM_TYPE type,
                                   CK_MECHANISM_INFO_PTR pInfo)
{
    const struct hf_mech_info *m;
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(slotID == HF_SLOT_ID, CKR_SLOT_ID_INVALID);
    hf_return_val_if_fail(pInfo, CKR_ARGUMENTS_BAD);
    m = hf_mech_find(type);
    if (!m) return CKR_MECHANISM_INVALID;
    *pInfo = m->info;
    return CKR_OK;
}

/* ---- PINs ------------------------------------------------------------------------------- */

HF_EXPORT CK_RV C_InitToken(CK_SLOT_ID slotID, CK_UTF8CHAR_PTR pPin, CK_ULONG ulPinLen,
                            CK_UTF8CHAR_PTR pLabel)
{
    CK_RV rv = hf_module_check();

    if (rv != CKR_OK) return rv;
    hf_return_val_if_fail(slotID == HF_SLOT_ID, CKR_SLOT_ID_INVALID);
    /* Re-initialising would destroy every key of the store: that is an administrator's act. */
    hf_log_warn("C_InitToken: not supported; use `holdfast init` to set up the token");
    return CKR_FUNCTION_NOT_SUPPORTED;
}

/* No protected authentication path (CKF_PROTECTED_AUTHENTICATION_PATH): a NULL PIN is a
 * missing argument, whatever its length. */
static CK_RV pin_arg_check(CK_UTF8CHAR_PTR pin, CK_ULONG len)
{
    return pin ? CKR_OK : CKR_ARGUMENTS_BAD;
}

static CK_RV pin_len_check(CK_ULONG len)
{
    return len < PIN_MIN || len > PIN_MAX ? CKR_PIN_LEN_RANGE : CKR_OK;
}

HF_EXPORT CK_RV C_InitPIN(CK_SESSION_HANDLE hSession, CK_UTF8CHAR_PTR pPin, CK_ULONG ulPinLen)
{
    uint64_t started = hf_monotonic_us();
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s), arv;

    if (rv != CKR_OK) return rv;
    if ((rv = pin_arg_check(pPin, ulPinLen)) != CKR_OK) goto done;
    if (!(s->flags & CKF_RW_SESSION)) {
        rv = CKR_SESSION_READ_ONLY;
        goto done;
    }
    if (atomic_load(&hf_mod.login) != HF_LOGIN_SO) {
        rv = CKR_USER_NOT_LOGGED_IN;
        goto done;
    }
    if ((rv = pin_len_check(ulPinLen)) != CKR_OK) goto done;
    rv = hf_core_pin_set(hf_mod.core, HF_USER_NORMAL, (const char *)pPin, ulPinLen);
    /* The SO's new PIN for the user is how a locked user gets back in (PKCS#11 2.40 5.6). */
    if (rv == CKR_OK) rv = hf_core_pin_unlock(hf_mod.core, HF_USER_NORMAL, NULL);
    arv = hf_module_audit(s, "pin.init", NULL, "user", rv, started);
    if (rv == CKR_OK) rv = arv;
done:
    hf_session_put(s);
    return rv;
}

HF_EXPORT CK_RV C_SetPIN(CK_SESSION_HANDLE hSession, CK_UTF8CHAR_PTR pOldPin, CK_ULONG ulOldLen,
                         CK_UTF8CHAR_PTR pNewPin, CK_ULONG ulNewLen)
{
    uint64_t started = hf_monotonic_us();
    enum hf_user user;
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s), arv;

    if (rv != CKR_OK) return rv;
    if ((rv = pin_arg_check(pOldPin, ulOldLen)) != CKR_OK) goto done;
    if ((rv = pin_arg_check(pNewPin, ulNewLen)) != CKR_OK) goto done;
    if (!(s->flags & CKF_RW_SESSION)) {
        rv = CKR_SESSION_READ_ONLY;
        goto done;
    }
    /* Section 5.6: the SO's PIN when the SO is logged in, else the user's (also from a public
     * session, which is how a user changes a PIN before logging in). */
    user = atomic_load(&hf_mod.login) == HF_LOGIN_SO ? HF_USER_SO : HF_USER_NORMAL;
    rv = hf_core_pin_login(hf_mod.core, user, (const char *)pOldPin, ulOldLen, NULL);
    if (rv == CKR_OK) rv = pin_len_check(ulNewLen);
    if (rv == CKR_OK) rv = hf_core_pin_set(hf_mod.core, user, (const char *)pNewPin, ulNewLen);
    arv = hf_module_audit(s, "pin.set", NULL, user == HF_USER_SO ? "so" : "user", rv, started);
    if (rv == CKR_OK) rv = arv;
done:
    hf_session_put(s);
    return rv;
}

/* ---- login ------------------------------------------------------------------------------ */

static CK_RV login_state_check(enum hf_login want)
{
    enum hf_login now = atomic_load(&hf_mod.login);

    if (now == want) return CKR_USER_ALREADY_LOGGED_IN;
    if (now != HF_LOGIN_NONE) return CKR_USER_ANOTHER_ALREADY_LOGGED_IN;
    /* Section 5.6: the SO works in R/W sessions only. */
    if (want == HF_LOGIN_SO &&
        atomic_load(&hf_mod.rw_session_count) < atomic_load(&hf_mod.session_count))
        return CKR_SESSION_READ_ONLY_EXISTS;
    return CKR_OK;
}

static CK_RV login_user_type(CK_USER_TYPE type, enum hf_login *want)
{
    switch (type) {
    case CKU_SO:
        *want = HF_LOGIN_SO;
        return CKR_OK;
    case CKU_USER:
        *want = HF_LOGIN_USER;
        return CKR_OK;
    /* No key has CKA_ALWAYS_AUTHENTICATE, so there is never an operation to authenticate. */
    case CKU_CONTEXT_SPECIFIC:
        return CKR_OPERATION_NOT_INITIALIZED;
    default:
        return CKR_USER_TYPE_INVALID;
    }
}

HF_EXPORT CK_RV C_Login(CK_SESSION_HANDLE hSession, CK_USER_TYPE userType, CK_UTF8CHAR_PTR pPin,
                        CK_ULONG ulPinLen)
{
    uint64_t started = hf_monotonic_us();
    enum hf_login want = HF_LOGIN_NONE, none = HF_LOGIN_NONE;
    bool gateway = false;
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s), arv;

    if (rv != CKR_OK) return rv;
    if ((rv = login_user_type(userType, &want)) != CKR_OK) goto done;
    if ((rv = pin_arg_check(pPin, ulPinLen)) != CKR_OK) goto done;
    if ((rv = login_state_check(want)) != CKR_OK) goto done;
    /* CKU_USER with the gateway's PIN: the same user, plus the right to write records in another
     * API's name (holdfast.h). PKCS#11 has one user type, so the PIN tells the two apart. */
    rv = hf_core_pin_login(hf_mod.core, want == HF_LOGIN_SO ? HF_USER_SO : HF_USER_NORMAL,
                           (const char *)pPin, ulPinLen, want == HF_LOGIN_USER ? &gateway : NULL);
    /* Set before the login shows, so that nobody sees the user logged in with the previous
     * login's role. */
    if (rv == CKR_OK) atomic_store(&hf_mod.login_gateway, gateway);
    /* Another thread may have logged in meanwhile: the first one wins. */
    if (rv == CKR_OK && !atomic_compare_exchange_strong(&hf_mod.login, &none, want))
        rv = none == want ? CKR_USER_ALREADY_LOGGED_IN : CKR_USER_ANOTHER_ALREADY_LOGGED_IN;
    arv = hf_module_audit(s, "login", NULL,
                          want == HF_LOGIN_SO ? "so"
                          : gateway           ? "gateway"
                                              : "user",
                          rv, started);
    if (rv == CKR_OK && arv != CKR_OK) {
        /* An unrecorded login must not stand. */
        atomic_store(&hf_mod.login, HF_LOGIN_NONE);
        rv = arv;
    }
done:
    hf_session_put(s);
    return rv;
}

HF_EXPORT CK_RV C_Logout(CK_SESSION_HANDLE hSession)
{
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (atomic_exchange(&hf_mod.login, HF_LOGIN_NONE) == HF_LOGIN_NONE) rv = CKR_USER_NOT_LOGGED_IN;
    /* Section 4.4 / 5.6: the private session objects go with the login that could see them. */
    if (rv == CKR_OK) hf_session_objects_logout();
    hf_session_put(s);
    return rv;
}
