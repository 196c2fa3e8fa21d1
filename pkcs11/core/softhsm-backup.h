/* Guarding the embedded default's SoftHSMv2 token against a kill during C_Login.
 *
 * SoftHSMv2 2.6 rewrites token.object in place (truncate, then write) on every C_Login. A process
 * killed in that window leaves the file empty or cut short, and with it the token, its root KEK
 * and every key wrapped under it would be gone (seen: 1 in ~36 SIGKILLed `holdfast encrypt`s).
 * So when Holdfast manages SoftHSMv2 itself ([hsm] softhsm2_conf), init keeps a copy of each
 * token's token.object, and every open first checks, under the exclusive HSM lock (no login can
 * be writing then), that each token.object is whole (the size of its copy: a login changes flag
 * values, never the size) and puts the copy back if not. A vendor HSM needs none of this. */
#ifndef HF_SOFTHSM_BACKUP_H
#define HF_SOFTHSM_BACKUP_H

#include "pkcs11/module/pkcs11-compat.h"

/* Copies every token's token.object beside it (token.object.holdfast-backup, 0600). */
CK_RV hf_softhsm_backup_tokens(const char *softhsm2_conf, const char *lock_path);
/* Restores any token.object that is missing or cut short from its copy; logs each repair. */
CK_RV hf_softhsm_repair_tokens(const char *softhsm2_conf, const char *lock_path);

#endif
