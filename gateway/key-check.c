/* plugin.h's hf_key_may: the one "may this key do this operation now" rule every plugin asks.
 *
 * It repeats the core's KMIP rule (pkcs11/core/key.c, hf_key_state_allows) on the gateway's side
 * of the seam, so a plugin answers its API's own error (disabled, usage) before any PKCS#11 call:
 * the module refuses the same operations anyway, but with one CK_RV for all of them
 * (CKR_KEY_FUNCTION_NOT_PERMITTED), which a cloud cannot tell apart. */
#include "hf-build.h"

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
    /* New material is only ever protected under the current version, so only decrypt and verify
     * take another version's state. */
    if (state == 0 || op == HF_KEY_OP_ENCRYPT || op == HF_KEY_OP_SIGN) state = key->state;
    if (!state_allows(state, op)) return HF_STATUS_KEY_DISABLED;
    if (!(key->usage & usage_of(op))) return HF_STATUS_KEY_USAGE;
    return HF_STATUS_OK;
}
