/* plugin.h's hf_key_may: the one "may this key do this operation now" rule every plugin asks,
 * and hf_keys_decrypt_version: which version object opens what an older version sealed.
 *
 * It repeats the core's KMIP rule (pkcs11/core/key.c, hf_key_state_allows) on the gateway's side
 * of the seam, so a plugin answers its API's own error (disabled, usage) before any PKCS#11 call:
 * the module refuses the same operations anyway, but with one CK_RV for all of them
 * (CKR_KEY_FUNCTION_NOT_PERMITTED), which a cloud cannot tell apart. */
#include "hf-build.h"

#include "gateway/keys.h"
#include "gateway/plugin.h"

/* KMIP 1.4 section 3.22 (ARCHITECTURE.md, the key model): pre-active and destroyed keys do
 * nothing; active ones everything; deactivated and compromised ones only process what was
 * protected earlier (decrypt, unwrap, verify), never protect anything new. */
static bool state_allows(CK_ULONG state, enum hf_key_op op)
{
    switch (state) {
    case HF_STATE_ACTIVE:
        return true;
    case HF_STATE_DEACTIVATED:
    case HF_STATE_COMPROMISED:
        return op == HF_KEY_OP_DECRYPT || op == HF_KEY_OP_VERIFY;
    default:
        return false;
    }
}

/* The usage bit the module checks for the PKCS#11 call op maps onto (wrap and unwrap calls of a
 * cloud API are C_Encrypt and C_Decrypt here). */
static CK_ULONG usage_of(enum hf_key_op op)
{
    switch (op) {
    case HF_KEY_OP_ENCRYPT:
        return HF_USAGE_ENCRYPT;
    case HF_KEY_OP_DECRYPT:
        return HF_USAGE_DECRYPT;
    case HF_KEY_OP_SIGN:
        return HF_USAGE_SIGN;
    case HF_KEY_OP_VERIFY:
        return HF_USAGE_VERIFY;
    default:
        return 0;
    }
}

HF_PLUGIN_EXPORT enum hf_status hf_key_may(const struct hf_key_ref *key, enum hf_key_op op,
                                           CK_ULONG state)
{
    if (!key || op < HF_KEY_OP_ENCRYPT || op > HF_KEY_OP_METADATA) return HF_STATUS_INTERNAL;
    if (key->blocked) return HF_STATUS_KEY_DISABLED;
    if (op == HF_KEY_OP_METADATA) return HF_STATUS_OK;
    /* Decrypt and verify follow the version that sealed the data; new data needs the key's
     * current state, and a version an API names (OCI's keyVersionId) must allow it as well. */
    if ((op == HF_KEY_OP_ENCRYPT || op == HF_KEY_OP_SIGN) && state != 0 && !state_allows(state, op))
        return HF_STATUS_KEY_DISABLED;
    if (state == 0 || op == HF_KEY_OP_ENCRYPT || op == HF_KEY_OP_SIGN) state = key->state;
    if (!state_allows(state, op)) return HF_STATUS_KEY_DISABLED;
    if (!(key->usage & usage_of(op))) return HF_STATUS_KEY_USAGE;
    return HF_STATUS_OK;
}

enum hf_status hf_gw_key_decrypt_judge(const struct hf_key_ref *key, CK_ULONG version,
                                       enum hf_status found, CK_ULONG state)
{
    if (!key) return HF_STATUS_INTERNAL;
    /* Versions count up from 1: one past the current was never this key's (a blob of another
     * key, or forged), which no API may answer as a disabled key. */
    if (version == 0 || version > key->version) return HF_STATUS_BAD_CIPHERTEXT;
    if (found == HF_STATUS_KEY_NOT_FOUND || (found == HF_STATUS_OK && state == HF_STATE_DESTROYED))
        return HF_STATUS_KEY_NOT_FOUND;
    if (found != HF_STATUS_OK) return HF_STATUS_UNAVAILABLE;
    return hf_key_may(key, HF_KEY_OP_DECRYPT, state);
}

HF_PLUGIN_EXPORT enum hf_status hf_keys_decrypt_version(const struct hf_key_ref *key,
                                                        CK_ULONG version, CK_OBJECT_HANDLE *object)
{
    CK_OBJECT_HANDLE found_object = CK_INVALID_HANDLE;
    CK_ULONG state = 0;
    enum hf_status found = HF_STATUS_UNAVAILABLE, st;

    if (!key || !object) return HF_STATUS_INTERNAL;
    *object = CK_INVALID_HANDLE;
    if (version != 0 && version <= key->version)
        found = hf_keys_version_info(key, version, &found_object, &state, NULL);
    st = hf_gw_key_decrypt_judge(key, version, found, state);
    if (st == HF_STATUS_OK) *object = found_object;
    return st;
}
