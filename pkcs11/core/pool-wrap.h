/* AES key wrap with a pool key (issue 14): RFC 3394 (CKM_AES_KEY_WRAP) and RFC 5649
 * (CKM_AES_KEY_WRAP_PAD) run by the member that holds the key, which never leaves it.
 *
 * PKCS#11 tokens wrap objects, not bytes: SoftHSMv2 2.6 offers these mechanisms to C_WrapKey and
 * C_UnwrapKey only (C_EncryptInit answers CKR_MECHANISM_INVALID). So a wrap puts the bytes into
 * the member as a session object (a generic secret: any length; extractable, so it can be
 * wrapped; sensitive, so it is never read back), wraps it under the key and destroys it; an
 * unwrap makes such an object from the blob (extractable and not sensitive this time, so its
 * value can be read), reads it and destroys it. Either is one call on one member's session,
 * which a failover repeats whole on another member. */
#ifndef HF_POOL_WRAP_H
#define HF_POOL_WRAP_H

#include <stdbool.h>
#include <stddef.h>

#include "pool.h"

/* in (inlen bytes) wrapped (wrap true) or unwrapped with the AES key labelled label in member
 * (HF_POOL_KEY_ANY_MEMBER: on any healthy member that holds it, as hf_pool_key_gcm); pad: RFC
 * 5649. Lengths and answers as the local source's hf_aes_kw_wrap / hf_aes_kw_unwrap (crypto.h),
 * checked before any call: out NULL asks for the size (an unwrap's upper bound, inlen - 8); a
 * short buffer is CKR_BUFFER_TOO_SMALL with the size set, for an RFC 5649 unwrap the exact one
 * (the member unwraps to learn it); a blob that does not unwrap is CKR_WRAPPED_KEY_INVALID, and
 * never takes a member out. A member whose wrap does not unwrap to in again answers
 * CKR_KEY_NOT_WRAPPABLE (SoftHSMv2 2.6 pads a value to whole 8-byte blocks with zeros before RFC
 * 5649, so its blob of 1218 bytes unwraps, anywhere, to 1224): checked where that can happen,
 * RFC 5649 of a length that is not a multiple of 8. A key made before pool AES keys had
 * CKA_WRAP and CKA_UNWRAP (hf_pool_key_template) answers CKR_KEY_FUNCTION_NOT_PERMITTED. */
CK_RV hf_pool_key_kw(struct hf_pool *pool, size_t member, const char *label, bool pad, bool wrap,
                     const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen);

#endif
