/* One backend HSM token reached through its vendor's PKCS#11 module, loaded by path with dlopen
 * (never through the p11-kit proxy, which would load Holdfast itself and fail a recursive
 * C_Initialize). Holds the root KEK: an AES-256 token key, sensitive, never extractable, able to
 * wrap and unwrap only.
 *
 * Key material crosses as CKK_GENERIC_SECRET session objects so one code path wraps raw AES keys
 * and PKCS#8 DER alike with CKM_AES_KEY_WRAP_PAD (RFC 5649, which is what SoftHSMv2 2.6 and most
 * HSMs implement under that mechanism number).
 *
 * Thread-safe: a small pool of logged-in sessions; no in-process lock is held across a backend
 * call except the pool's own handout.
 *
 * Processes: given a lock_path, every call that loads the module, logs in or creates the token
 * holds flock(LOCK_EX) on that file and every other backend call holds LOCK_SH, so no process
 * reads the token's files while another rewrites them (SoftHSMv2 2.6 rewrites its token file on
 * every C_Login: hsm.c). All processes sharing a token must pass the same file; NULL locks
 * nothing. The file is created 0600 when missing; a lock file that cannot be opened is
 * CKR_FUNCTION_FAILED. */
#ifndef HF_HSM_H
#define HF_HSM_H

#include <stdbool.h>
#include <stddef.h>

#include "pkcs11/module/pkcs11-compat.h"

struct hf_hsm;

/* Creates the token if the module has no token labelled token_label yet: C_InitToken on the
 * first free slot (SoftHSMv2 always offers one), then C_InitPIN with user_pin. Idempotent: an
 * existing token is left alone (CKR_OK). Processes racing with one lock_path create one token. */
CK_RV hf_hsm_token_ensure(const char *module_path, const char *lock_path, const char *token_label,
                          const char *so_pin, const char *user_pin);

/* Loads module_path, finds the token by label and logs in as user. CKR_TOKEN_NOT_PRESENT when no
 * such token, CKR_PIN_INCORRECT on a wrong PIN (never retried: retries lock tokens). A token that
 * looks missing or broken is looked up again a few times, reloading the module, before the error
 * is returned (about 0.1 s). */
CK_RV hf_hsm_open(const char *module_path, const char *lock_path, const char *token_label,
                  const char *pin, struct hf_hsm **out);
/* Sessions the handle may open at once (4 after hf_hsm_open): a pool member's calls in flight
 * each need one, so its concurrency limit is set here (pool.c); calls past it wait for one. Never
 * lowered under the sessions already open. */
CK_RV hf_hsm_sessions_max_set(struct hf_hsm *hsm, size_t n);
void hf_hsm_close(struct hf_hsm *hsm);

/* Creates the root KEK labelled kek_label unless it exists. */
CK_RV hf_hsm_kek_ensure(struct hf_hsm *hsm, const char *kek_label);
bool hf_hsm_has_kek(struct hf_hsm *hsm, const char *kek_label);

/* AES-KWP under the KEK. *wrapped is malloc'd; *plain is hf_secmem memory (free with
 * hf_secmem_free(*plain, *plain_len)). A tampered blob is CKR_WRAPPED_KEY_INVALID.
 * *plain may end in up to 7 zero bytes that were not wrapped: SoftHSMv2 2.6 zero-pads a generic
 * secret to a multiple of 8 before RFC 5649 and returns the padded value, so wrap plaintexts
 * that carry their own length (raw AES keys, DER) and trim. */
CK_RV hf_hsm_wrap(struct hf_hsm *hsm, const char *kek_label, const unsigned char *plain,
                  size_t plain_len, unsigned char **wrapped, size_t *wrapped_len);
CK_RV hf_hsm_unwrap(struct hf_hsm *hsm, const char *kek_label, const unsigned char *wrapped,
                    size_t wrapped_len, unsigned char **plain, size_t *plain_len);

/* The same three inside an hf_hsm_run callback (or a pool's, pool.h), on its session s: the
 * root's work over a pool of tokens (root.h). The callback's runner holds the token lock and
 * replaces lost sessions; these only look the key up again once when its cached handle went
 * stale. */
CK_RV hf_hsm_wrap_on(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *kek_label,
                     const unsigned char *plain, size_t plain_len, unsigned char **wrapped,
                     size_t *wrapped_len);
CK_RV hf_hsm_unwrap_on(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *kek_label,
                       const unsigned char *wrapped, size_t wrapped_len, unsigned char **plain,
                       size_t *plain_len);

/* Creates the HMAC-SHA-256 key labelled mac_label unless it exists: a token object that signs
 * and verifies only and never leaves the token (the store's policy MAC, the audit chain). */
#define HF_HSM_MAC_LEN 32
CK_RV hf_hsm_mac_key_ensure(struct hf_hsm *hsm, const char *mac_label);
/* HMAC-SHA-256 of data under mac_label, computed in the token. CKR_KEY_HANDLE_INVALID when the
 * token has no such key. */
CK_RV hf_hsm_hmac(struct hf_hsm *hsm, const char *mac_label, const unsigned char *data, size_t len,
                  unsigned char mac[HF_HSM_MAC_LEN]);
CK_RV hf_hsm_hmac_on(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *mac_label,
                     const unsigned char *data, size_t len, unsigned char mac[HF_HSM_MAC_LEN]);

/* Any PKCS#11 work on the token. fn runs on a logged-in session taken from the handle's pool
 * (at most a few are open: SoftHSMv2 slows down with more threads inside it), under the token
 * lock shared, and the session goes back afterwards. hsm and arg are passed through (borrowed for
 * the call); s is the caller's for the call only: fn must leave no operation active on it and
 * must not close it. fn may run twice: once more on a fresh session when the first answered
 * CKR_SESSION_HANDLE_INVALID, CKR_SESSION_CLOSED or CKR_OPERATION_ACTIVE (an operation left on
 * it by a call that failed to end it) (the session is closed and dropped; so is one
 * that answered CKR_DEVICE_ERROR, CKR_DEVICE_REMOVED or CKR_TOKEN_NOT_PRESENT), and once more
 * after logging in again when it answered CKR_USER_NOT_LOGGED_IN. So fn must be safe to repeat
 * (it must not have consumed arg's input when it fails). Returns fn's result, or the session
 * pool's (e.g. CKR_DEVICE_ERROR when no session can be opened). */
typedef CK_RV (*hf_hsm_session_fn)(struct hf_hsm *hsm, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                                   void *arg);
CK_RV hf_hsm_run(struct hf_hsm *hsm, hf_hsm_session_fn fn, void *arg);

/* Cheap liveness: C_GetSessionInfo on a pooled session through hf_hsm_run. CKR_OK when the token
 * answers on a session logged in as user; a lost session is replaced once first. */
CK_RV hf_hsm_probe(struct hf_hsm *hsm);

/* Token objects by class and label, for use inside an hf_hsm_run callback (s is its session):
 * found once with C_FindObjects and cached per handle (SoftHSMv2 2.6's C_FindObjects rereads
 * every object of the token: ARCHITECTURE.md). *h is CK_INVALID_HANDLE, with CKR_OK, when the
 * token has no such object (not cached: it may be created later). When the token answers a
 * cached handle with CKR_OBJECT_HANDLE_INVALID or CKR_KEY_HANDLE_INVALID (deleted, re-created
 * by another process), hf_hsm_object_forget drops it and the next find searches again. The
 * root KEK and the MAC keys live in the same cache (class CKO_SECRET_KEY). */
CK_RV hf_hsm_object_find(struct hf_hsm *hsm, CK_SESSION_HANDLE s, CK_OBJECT_CLASS cls,
                         const char *label, CK_OBJECT_HANDLE *h);
void hf_hsm_object_forget(struct hf_hsm *hsm, CK_OBJECT_CLASS cls, const char *label);
/* Drops every cached handle: the backend restarted (a network HSM's server), and its handles
 * may now name other objects. hf_hsm_run also does it when a session was lost to the device. */
void hf_hsm_objects_forget_all(struct hf_hsm *hsm);

/* After fork(): forget the parent's module state without calling into it. */
void hf_hsm_abandon(struct hf_hsm *hsm);

#endif
