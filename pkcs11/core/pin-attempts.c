/* The PIN attempt counter: [token] pin_attempts wrong PINs in a row lock the SO's or the
 * user's PIN (PKCS#11's CKF_*_PIN_LOCKED) until the SO sets the user's PIN again (C_InitPIN) or
 * `holdfast token unlock` clears it. The counts live in the store's metadata, so every process
 * on the store (applications, the gateway, the CLI) shares them and a guesser gains nothing by
 * starting more processes. */
#include "hf-build.h"

#include <stdlib.h>

#include "pkcs11/core/audit.h"
#include "pkcs11/core/core.h"
#include "pkcs11/core/log.h"
#include "pkcs11/core/store.h"

static const char *failures_name(enum hf_user user)
{
    return user == HF_USER_SO ? "pin.so.failures" : "pin.user.failures";
}

static bool is_counted(enum hf_user user)
{
    return user == HF_USER_SO || user == HF_USER_NORMAL;
}

unsigned hf_core_pin_attempts(struct hf_core *core)
{
    return hf_core_config(core)->pin_attempts;
}

uint64_t hf_core_pin_failures(struct hf_core *core, enum hf_user user)
{
    char *value = NULL, *end;
    uint64_t n = 0;

    if (core == NULL || !is_counted(user)) return 0;
    if (hf_store_meta_get(hf_core_store(core), failures_name(user), &value) == CKR_OK) {
        n = strtoull(value, &end, 10);
        if (*end != '\0') n = 0;
    }
    free(value);
    return n;
}

static CK_RV failures_clear(struct hf_core *core, enum hf_user user)
{
    return hf_store_meta_set(hf_core_store(core), failures_name(user), "0");
}

CK_RV hf_core_pin_unlock(struct hf_core *core, enum hf_user user, const struct hf_actor *who)
{
    struct hf_audit_record rec = {.operation = "pin.unlock", .authenticated = true};
    CK_RV rv;

    if (core == NULL) return CKR_ARGUMENTS_BAD;
    rv = is_counted(user) ? failures_clear(core, user) : CKR_USER_TYPE_INVALID;
    if (who == NULL) return rv;
    rec.api = who->api;
    rec.caller = who->caller;
    rec.detail = user == HF_USER_SO ? "so" : "user";
    rec.result = rv;
    if (hf_audit_append(hf_core_audit(core), &rec, NULL) != CKR_OK && rv == CKR_OK)
        rv = CKR_HF_AUDIT_FAILED;
    return rv;
}

CK_RV hf_core_pin_login(struct hf_core *core, enum hf_user user, const char *pin, size_t len,
                        bool *as_gateway)
{
    uint64_t failures, count;
    bool locked;
    CK_RV rv = CKR_PIN_INCORRECT;

    if (core == NULL) return CKR_ARGUMENTS_BAD;
    if (as_gateway != NULL) *as_gateway = false;
    if (!is_counted(user)) return hf_core_pin_check(core, user, pin, len);
    failures = hf_core_pin_failures(core, user);
    locked = failures >= hf_core_pin_attempts(core);
    if (!locked) {
        rv = hf_core_pin_check(core, user, pin, len);
        if (rv == CKR_OK) return failures != 0 ? failures_clear(core, user) : CKR_OK;
    }
    if (as_gateway != NULL && user == HF_USER_NORMAL && (rv == CKR_PIN_INCORRECT || locked) &&
        hf_core_pin_check(core, HF_USER_GATEWAY, pin, len) == CKR_OK) {
        *as_gateway = true;
        return CKR_OK;
    }
    if (locked) return CKR_PIN_LOCKED;
    if (rv != CKR_PIN_INCORRECT) return rv;
    if (hf_store_meta_count_add(hf_core_store(core), failures_name(user), &count) != CKR_OK) {
        /* Uncounted, the attempt must not stand as a free guess either way: it was wrong. */
        hf_log_error("pin: cannot count a wrong %s PIN", user == HF_USER_SO ? "SO" : "user");
        return CKR_PIN_INCORRECT;
    }
    if (count >= hf_core_pin_attempts(core))
        hf_log_warn("pin: the %s PIN is locked after %llu wrong PINs",
                    user == HF_USER_SO ? "SO" : "user", (unsigned long long)count);
    return CKR_PIN_INCORRECT;
}
