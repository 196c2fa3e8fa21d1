/* Shared by the gws-cse plugin's files: the state, one call's way through the spec's checks,
 * the operations and the steps they share. */
#ifndef HF_CSE_INTERNAL_H
#define HF_CSE_INTERNAL_H

#include <pthread.h>

#include "gateway/plugin.h"
#include "gateway/plugins/gws-cse/checks.h"
#include "gateway/plugins/gws-cse/config.h"
#include "gateway/plugins/gws-cse/payload.h"
#include "gateway/plugins/gws-cse/request.h"

#define HF_CSE_LINK_TYPE "gws-cse"
#define HF_CSE_AUTHZ_AUDIENCE "cse-authorization"
#define HF_CSE_MIGRATION_AUDIENCE "kacls-migration"

/* The status page's cached health check (status.c): a KEK wrap/unwrap round trip. */
struct hf_cse_health {
    pthread_mutex_t lock; /* guards the fields below */
    uint64_t checked_us;  /* hf_now_us of the last check; 0: never */
    bool ok;
};

/* cse-mint's own tokens (delegated, migration) and key set: opaque here. */
struct hf_cse_own;

/* What a prefix needs at run time beyond its configuration. */
struct hf_cse_prefix_rt {
    struct hf_jwt_verifier *authn; /* the authn.LABEL issuers */
    struct hf_jwt_verifier *authz; /* the authz issuers, aud cse-authorization, RS256 */
    /* The peers' migration tokens (iss a peer, aud kacls-migration): set by
     * hf_cse_tokens_start_own; NULL: none accepted. */
    struct hf_jwt_verifier *migration;
    /* The signing key's state (own.c), NULL without signing_key: our delegated tokens
     * (iss = aud = kacls_url) verify through hf_cse_own_verify_delegated, whose key set
     * follows the key's rotations, so no verifier pointer here could stay current. */
    struct hf_cse_own *own;
    struct hf_rate *rate;
    struct hf_cse_health health;
};

/* One state per configuration generation (the gateway swaps states on SIGHUP). */
struct hf_cse_state {
    struct hf_cse_config cfg;
    struct hf_cse_prefix_rt *rt; /* one per cfg.prefixes[], same order */
    bool started;
};

/* What kind of token the authentication field held. */
enum hf_cse_authn_kind {
    HF_CSE_AUTHN_NONE,      /* the op takes none */
    HF_CSE_AUTHN_IDP,       /* an authn.LABEL issuer's */
    HF_CSE_AUTHN_DELEGATED, /* ours, from delegate */
    HF_CSE_AUTHN_MIGRATION  /* a peer KACLS's, for privilegedunwrap */
};

/* One call on its way: where it goes, who makes it, what it asks. */
struct hf_cse_call {
    struct hf_cse_state *state;
    const struct hf_cse_prefix *px;
    struct hf_cse_prefix_rt *rt;
    enum hf_cse_op op;
    const struct hf_cse_op_info *info;
    struct hf_cse_request body;
    struct hf_jwt *authn; /* verified tokens; NULL when the op takes none */
    struct hf_jwt *authz;
    enum hf_cse_authn_kind authn_kind;
    /* Effective values, borrowed from the tokens or the body: the audited user (authz email,
     * else the authn identity), and the resource_name and perimeter_id the op binds ("" when
     * absent): authz's, or the body's for privileged ops. */
    const char *user;
    const char *resource_name;
    const char *perimeter_id;
    const char *delegated_to; /* authz's, NULL when absent */
    struct hf_key_ref kek;    /* the prefix's KEK, read at check 10 */
};

/* ---- the steps every call shares (call.c, tokens.c, checks.c) ---------------------------- */

/* Checks 1-10 in the spec's order, for a POST op: the body (400), every token (401), the rate
 * limit (429), then checks 3-10 (403; the KEK's store outage 503, no such link 404).
 * HF_STATUS_OK, or the status the request was failed with. Release with hf_cse_call_end
 * either way. */
enum hf_status hf_cse_call_begin(struct hf_cse_state *state, const struct hf_cse_prefix *px,
                                 enum hf_cse_op op, struct hf_request *req,
                                 struct hf_cse_call *call);
void hf_cse_call_end(struct hf_cse_call *call);

/* Check 2 (tokens.c): the body's authentication and authorization tokens, as the op takes
 * them, verified (signature, iss, aud, exp, nbf, iat; 401). Sets call->authn, authn_kind,
 * authz, and marks the request authenticated. */
enum hf_status hf_cse_tokens_verify(struct hf_cse_call *call, struct hf_request *req);
/* Builds rt's authn and authz verifiers from px (at start). false with a message. */
bool hf_cse_tokens_start(const struct hf_cse_prefix *px, struct hf_cse_prefix_rt *rt, char *err,
                         size_t errlen);
void hf_cse_tokens_stop(struct hf_cse_prefix_rt *rt);
/* cse-mint's hooks (own.c): rt->migration and rt->own for px (at start, after
 * hf_cse_tokens_start), and their release. */
bool hf_cse_tokens_start_own(const struct hf_cse_prefix *px, struct hf_cse_prefix_rt *rt, char *err,
                             size_t errlen);
void hf_cse_tokens_stop_own(struct hf_cse_prefix_rt *rt);
/* Our delegated token, verified against the signing key's current and previous public keys:
 * hf_jwt_verify's contract; HF_STATUS_UNAUTHENTICATED when rt has no signing key. */
enum hf_status hf_cse_own_verify_delegated(struct hf_cse_prefix_rt *rt, const char *token,
                                           size_t len, struct hf_jwt **out, char *why,
                                           size_t whylen);

/* Checks 3-10 (checks.c) on a call whose tokens are verified; the audit fields are set first.
 * blocked link or KEK state: 403 "key disabled". */
enum hf_status hf_cse_checks_run(struct hf_cse_call *call, struct hf_request *req);
/* Check 8 on another perimeter_id (unwrap: the blob's). */
enum hf_status hf_cse_perimeter_check(struct hf_cse_call *call, struct hf_request *req,
                                      const char *perimeter_id);

/* ---- the KEK (kek.c) ------------------------------------------------------------------------ */

/* Seals pt[0..len) under the KEK's current version with a fresh IV (api HF_CSE_API or
 * HF_CSE_API_PK, empty aad) as the request's key operation: *blob (malloc'd) and *blob_len.
 * Fails the request on error. */
enum hf_status hf_cse_kek_seal(struct hf_cse_call *call, struct hf_request *req, const char *api,
                               const unsigned char *pt, size_t len, unsigned char **blob,
                               size_t *blob_len);
/* Opens blob under the version it names (404 destroyed, 400 not ours): *pt (malloc'd; release
 * with OPENSSL_clear_free(*pt, *pt_len)). Fails the request on error. */
enum hf_status hf_cse_kek_open(struct hf_cse_call *call, struct hf_request *req, const char *api,
                               const unsigned char *blob, size_t blob_len, unsigned char **pt,
                               size_t *pt_len);
/* ---- the wrapped_key (keyblob.c) ----------------------------------------------------------- */

/* dek bound to resource_name and perimeter_id ("" when absent), sealed under the KEK as the
 * request's key operation: *wrapped, a new json string of the blob's base64. Fails the
 * request on error. */
enum hf_status hf_cse_key_seal(struct hf_cse_call *call, struct hf_request *req,
                               const unsigned char *dek, size_t dek_len, const char *resource_name,
                               const char *perimeter_id, struct json_object **wrapped);
/* An opened wrapped_key: the fields point into pt (secret: release with hf_cse_opened_clear). */
struct hf_cse_opened {
    unsigned char *pt;
    size_t pt_len;
    const unsigned char *dek;
    size_t dek_len;
    const char *resource_name; /* not NUL-terminated */
    size_t resource_name_len;
    const char *perimeter_id; /* not NUL-terminated */
    size_t perimeter_id_len;
};
/* Opens a wrapped_key under the version it names. Fails the request on error. */
enum hf_status hf_cse_key_open(struct hf_cse_call *call, struct hf_request *req,
                               const unsigned char *blob, size_t blob_len,
                               struct hf_cse_opened *out);
void hf_cse_opened_clear(struct hf_cse_opened *o);
/* Whether the blob was bound to resource_name, byte for byte. */
bool hf_cse_opened_is_for(const struct hf_cse_opened *o, const char *resource_name);
/* The blob's perimeter_id as a new C string (free()); NULL out of memory. */
char *hf_cse_opened_perimeter(const struct hf_cse_opened *o);

/* A key operation's CK_RV in the spec's words (hf_request_fail_ckr's policy): refusals 403, a
 * bad blob 400, the rest 503. */
extern const struct hf_ckr_policy hf_cse_ckr;

/* ---- CORS and replies (cors.c) ------------------------------------------------------------- */

/* Access-Control-Allow-Origin and Vary for a listed Origin (every response, errors too). */
void hf_cse_cors_headers(const struct hf_cse_prefix *px, struct hf_request *req);
/* OPTIONS on any path under px: 204 with the spec's headers; no auth, no audit. */
enum hf_status hf_cse_preflight(const struct hf_cse_prefix *px, struct hf_request *req);
/* The 200 answer {name: base64 of data[0..len)}; secret: the base64 is wiped once sent (a DEK,
 * not a blob or a signature). HF_STATUS_OK, or the request failed (out of memory). */
enum hf_status hf_cse_reply_bytes(struct hf_request *req, const char *name,
                                  const unsigned char *data, size_t len, bool secret);

/* ---- the operations: after hf_cse_call_begin for POSTs; status and certs take a call with
 * only state, px, rt, op and info set ------------------------------------------------------- */
typedef enum hf_status (*hf_cse_op_fn)(struct hf_cse_call *call, struct hf_request *req);

enum hf_status hf_cse_wrap(struct hf_cse_call *call, struct hf_request *req);
enum hf_status hf_cse_unwrap(struct hf_cse_call *call, struct hf_request *req);
enum hf_status hf_cse_privilegedwrap(struct hf_cse_call *call, struct hf_request *req);
enum hf_status hf_cse_privilegedunwrap(struct hf_cse_call *call, struct hf_request *req);
enum hf_status hf_cse_digest(struct hf_cse_call *call, struct hf_request *req);
enum hf_status hf_cse_rewrap(struct hf_cse_call *call, struct hf_request *req);
enum hf_status hf_cse_delegate(struct hf_cse_call *call, struct hf_request *req);
enum hf_status hf_cse_status(struct hf_cse_call *call, struct hf_request *req);
enum hf_status hf_cse_certs(struct hf_cse_call *call, struct hf_request *req);
enum hf_status hf_cse_privatekeydecrypt(struct hf_cse_call *call, struct hf_request *req);
enum hf_status hf_cse_privilegedprivatekeydecrypt(struct hf_cse_call *call, struct hf_request *req);
enum hf_status hf_cse_privatekeysign(struct hf_cse_call *call, struct hf_request *req);
enum hf_status hf_cse_wrapprivatekey(struct hf_cse_call *call, struct hf_request *req);

/* Whether op is served under px now (stage 2 needs gmail = on; delegate and rewrap a
 * signing_key): /status lists exactly these, the others answer 501. */
bool hf_cse_op_is_enabled(const struct hf_cse_prefix *px, enum hf_cse_op op);

#endif /* HF_CSE_INTERNAL_H */
