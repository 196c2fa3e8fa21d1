/* The gateway's PKCS#11 connection: one module loaded by path (never through the p11-kit proxy,
 * which hides the vendor interface), logged in once, and two sessions per thread made on first
 * use: one that carries request contexts to key operations (hf_p11_begin) and one for lookups
 * (keys.c), so a lookup never consumes, or is refused by, a request's context. */
#ifndef HF_GATEWAY_P11_H
#define HF_GATEWAY_P11_H

#include "gateway/plugin.h"

/* hf_p11_begin's answer on a listener thread when the request's key lives in an HSM pool: the
 * handler is to stop without side effects (every plugin fails the request, as for any session
 * it cannot have), and server.c runs it again on the pool's workers. Unknown to
 * hf_status_from_ckr (an internal error), it never reaches an answer or a record. */
#define HF_GW_CKR_DEFERRED (CKR_VENDOR_DEFINED | 0x48470001UL)

/* Loads module, initialises it (CKF_OS_LOCKING_OK), finds the token labelled token_label (NULL:
 * the first slot with a token) and logs in with pin (NULL: no login). */
bool hf_gw_p11_open(const char *module, const char *token_label, const char *pin, char *err,
                    size_t errlen);
void hf_gw_p11_close(void);
bool hf_gw_p11_is_open(void);
const char *hf_gw_p11_module(void);

/* What answers: the module (C_GetTokenInfo on our slot), and its key store (a link lookup,
 * through the module's link cache). */
enum hf_gw_p11_health {
    HF_GW_P11_UP,
    HF_GW_P11_STORE_DOWN, /* the module answers, its key store does not */
    HF_GW_P11_DOWN,       /* the module does not answer (or is not open) */
};
enum hf_gw_p11_health hf_gw_p11_health(void);
/* hf_gw_p11_health() == HF_GW_P11_UP. */
bool hf_gw_p11_is_healthy(void);

/* This thread's lookup session. */
CK_RV hf_gw_p11_lookup_session(CK_SESSION_HANDLE *session);
/* Forgets this thread's sessions after CKR_SESSION_HANDLE_INVALID & co.: the next use opens new
 * ones. */
void hf_gw_p11_sessions_drop(void);
bool hf_gw_p11_rv_is_session_lost(CK_RV rv);
/* An RSA object's CKA_MODULUS and CKA_PUBLIC_EXPONENT on this thread's lookup session (p11-crypt.c;
 * *nlen, *elen: room in, length out). */
CK_RV hf_gw_rsa_public_read(CK_OBJECT_HANDLE key, unsigned char *n, CK_ULONG *nlen,
                            unsigned char *e, CK_ULONG *elen);

/* Whether the module can record a request that made no key operation (HF_AuditRequest). */
bool hf_gw_p11_has_audit_request(void);
bool hf_gw_p11_last_record_failed(CK_SESSION_HANDLE session);
/* Whether it can record a summary of requests refused before authentication (1.2). */
bool hf_gw_p11_has_audit_summary(void);
/* The audit log's free space and state (1.2); false when the module cannot say. */
bool hf_gw_p11_audit_status(HF_AUDIT_STATUS *status);
/* The one record of a request that made no key operation (HF_AuditRequestSession through the
 * login session, or HF_AuditRequest from a 1.1 module). The module answers
 * CKR_USER_NOT_LOGGED_IN unless the gateway logged in with the gateway PIN. */
CK_RV hf_gw_p11_audit_request(const HF_REQUEST_CONTEXT *ctx, const char *fields, CK_RV result,
                              CK_ULONG_LONG *seq);
/* fields: the request's audit fields (hf_gw_audit_fields_json) or NULL; a module before 1.3
 * writes the record without them. */
/* Registers a plugin's link type with the module (1.3; true without it); false with err. */
bool hf_gw_p11_link_type_register(const char *link_type, char *err, size_t errlen);
/* Whether the module answers HF_GetKeyLink (1.3): hf_keys_by_version_uuid needs it. */
bool hf_gw_p11_has_key_link(void);
/* After a request: clears a request context that no key operation consumed. */
void hf_gw_p11_request_end(struct hf_request *req);

/* The CK_RV an audit record gets for a request that failed with status before any key
 * operation. */
CK_RV hf_gw_ckr_from_status(enum hf_status status);

/* A PIN from a file: its first line, without the line end. NULL with err on failure. */
char *hf_gw_pin_read(const char *path, char *err, size_t errlen);

#endif /* HF_GATEWAY_P11_H */
