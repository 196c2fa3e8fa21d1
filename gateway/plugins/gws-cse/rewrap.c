/* POST <prefix>/rewrap (specs/gws-cse.md, "rewrap"): a key wrapped by another KACLS (the one
 * a customer migrates from) is unwrapped there and wrapped here under our KEK.
 *
 * The only call this plugin makes out: original_kacls_url must be https and on the prefix's
 * peers (else 403 before anything is sent); we POST <it>/privilegedunwrap with a migration
 * token of ours (aud kacls-migration, kacls_url the peer's, 5 minutes) through
 * hf_https_request: TLS verified against peer_ca, no redirects, the SSRF guard on every
 * address the name resolves to (peer_allow the only exceptions; a refusal is 403), a reply of
 * 16 KiB at most. A failing peer is 502, a peer out of time 504. The key then is sealed with
 * the authz token's resource_name and perimeter_id, as wrap would.
 *
 * The call blocks the worker thread that runs it, for up to the timeout: so the timeout is the
 * spec's 5 s or what is left of the prefix's deadline if less, the prefix's rate limit has
 * already run (call.c), and at most HF_CSE_REWRAP_CONCURRENCY rewraps of a prefix wait on
 * peers at once (more answer 429), so a slow peer cannot take every worker. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/minted.h"
#include "gateway/plugins/gws-cse/own.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#define PEER_TIMEOUT_MS 5000u
#define PEER_CONNECT_MS 2000u
#define PEER_REPLY_MAX (16u << 10)

/* What one rewrap holds, released in one place. */
struct rewrap {
    char peer[HF_CSE_VALUE_MAX + 1]; /* original_kacls_url without a trailing '/' */
    char *jwt;                       /* our migration token */
    char *out_body;                  /* the privilegedunwrap request */
    char *reply;                     /* the peer's answer: holds the key in base64 */
    size_t reply_len;
    struct json_object *root; /* the answer parsed */
    unsigned char *dek;       /* the key: secret */
    size_t dek_len;
    unsigned char *payload; /* the fields sealed: secret */
    size_t payload_len;
    unsigned char *blob;
    size_t blob_len;
};

/* The migration token is a bearer credential for 5 minutes, and the peer's answer holds the
 * key: neither outlives the call in freed memory. */
static void rewrap_clear(struct rewrap *r)
{
    if (r->jwt) OPENSSL_clear_free(r->jwt, strlen(r->jwt));
    if (r->out_body) OPENSSL_clear_free(r->out_body, strlen(r->out_body));
    if (r->reply) OPENSSL_clear_free(r->reply, r->reply_len);
    hf_json_put_wiped(r->root);
    if (r->dek) OPENSSL_clear_free(r->dek, r->dek_len);
    if (r->payload) OPENSSL_clear_free(r->payload, r->payload_len);
    free(r->blob);
}

/* Check of the target before anything is minted or sent: https, one of our peers (403). */
static enum hf_status peer_check(struct hf_cse_call *call, struct hf_request *req, struct rewrap *r)
{
    const struct hf_cse_string *u = &call->body.original_kacls_url;
    size_t len = u->len;

    if (!u->s || strncmp(u->s, "https://", 8) != 0)
        return hf_request_fail(req, HF_STATUS_DENIED, "original_kacls_url: not https");
    while (len > 8 && u->s[len - 1] == '/')
        len--;
    if (len >= sizeof(r->peer))
        return hf_request_fail(req, HF_STATUS_DENIED, "original_kacls_url: too long");
    memcpy(r->peer, u->s, len);
    r->peer[len] = '\0';
    hf_request_set_audit_field(req, "original_kacls_url", r->peer);
    if (!hf_cse_prefix_has_peer(call->px, r->peer))
        return hf_request_fail(req, HF_STATUS_DENIED, "original_kacls_url: not one of our peers");
    return HF_STATUS_OK;
}

/* {authentication, wrapped_key, resource_name, reason}: the peer's privilegedunwrap. */
static enum hf_status out_body_make(struct hf_cse_call *call, struct hf_request *req,
                                    struct rewrap *r)
{
    struct json_object *o = json_object_new_object();
    struct json_object *wk =
        hf_json_base64(call->body.wrapped_key.data, call->body.wrapped_key.len);
    const char *text;

    if (!o || !wk || json_object_object_add(o, "wrapped_key", wk) != 0) {
        json_object_put(wk);
        goto oom;
    }
    if (json_object_object_add(o, "authentication", json_object_new_string(r->jwt)) ||
        json_object_object_add(o, "resource_name", json_object_new_string(call->resource_name)) ||
        json_object_object_add(
            o, "reason", json_object_new_string(call->body.reason.s ? call->body.reason.s : "")))
        goto oom;
    text =
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (!text || !(r->out_body = strdup(text))) goto oom;
    hf_json_put_wiped(o);
    return HF_STATUS_OK;
oom:
    hf_json_put_wiped(o);
    return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
}

/* The peer's time: 5 s, or what the prefix's deadline leaves if less. 0: no time left. */
static unsigned peer_timeout_ms(const struct hf_cse_call *call, const struct hf_request *req)
{
    uint64_t waited_ms = (hf_now_us() - hf_request_received_us(req)) / 1000u;

    if (call->px->deadline_ms == 0) return PEER_TIMEOUT_MS;
    if (waited_ms >= call->px->deadline_ms) return 0;
    return call->px->deadline_ms - waited_ms < PEER_TIMEOUT_MS
               ? (unsigned)(call->px->deadline_ms - waited_ms)
               : PEER_TIMEOUT_MS;
}

static enum hf_status peer_call(struct hf_cse_call *call, struct hf_request *req, struct rewrap *r)
{
    static const char *const headers[] = {"Content-Type: application/json"};
    struct hf_outbound_policy policy = {
        .connect_timeout_ms = PEER_CONNECT_MS,
        .total_timeout_ms = peer_timeout_ms(call, req),
        .max_response = PEER_REPLY_MAX,
        .ca_file = call->px->peer_ca,
        .allow_cidrs = (const char *const *)call->px->peer_allow,
        .nallow_cidrs = call->px->npeer_allow,
    };
    char url[HF_CSE_VALUE_MAX + 32], why[256] = "";
    long status = 0;
    enum hf_status st;

    if (policy.total_timeout_ms == 0)
        return hf_request_deadline_check(req, call->px->deadline_ms, HF_STATUS_TIMEOUT);
    if (policy.connect_timeout_ms > policy.total_timeout_ms)
        policy.connect_timeout_ms = policy.total_timeout_ms;
    snprintf(url, sizeof(url), "%s/privilegedunwrap", r->peer);
    st = hf_https_request(&policy, "POST", url, headers, 1, r->out_body, strlen(r->out_body),
                          &status, &r->reply, &r->reply_len, why, sizeof(why));
    switch (st) {
    case HF_STATUS_OK:
        break;
    case HF_STATUS_DENIED:
        return hf_request_fail(req, HF_STATUS_DENIED, "original_kacls_url refused: %s", why);
    case HF_STATUS_TIMEOUT:
        return hf_request_fail(req, HF_STATUS_TIMEOUT, "the original KACLS timed out: %s", why);
    default:
        return hf_request_fail(req, HF_STATUS_BAD_GATEWAY, "the original KACLS failed: %s", why);
    }
    if (status != 200)
        return hf_request_fail(req, HF_STATUS_BAD_GATEWAY, "the original KACLS answered %ld",
                               status);
    return HF_STATUS_OK;
}

/* The peer's {"key": base64}: the key, at most the spec's 128 bytes (502 for anything else). */
static enum hf_status peer_key(struct hf_request *req, struct rewrap *r)
{
    char why[256] = "";

    if (hf_json_parse(r->reply, r->reply_len, PEER_REPLY_MAX, 0, &r->root, why, sizeof(why)) !=
            HF_STATUS_OK ||
        hf_json_member_base64(r->root, "key", true, false, HF_CSE_SMALL_MAX, HF_STATUS_BAD_REQUEST,
                              &r->dek, &r->dek_len, why, sizeof(why)) != HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_BAD_GATEWAY, "the original KACLS's answer: %s", why);
    return HF_STATUS_OK;
}

/* The key sealed here with the authz token's values, and its resource key hash. */
static enum hf_status rewrap_seal(struct hf_cse_call *call, struct hf_request *req,
                                  struct rewrap *r)
{
    const struct hf_cse_field f[3] = {
        {r->dek, r->dek_len},
        {(const unsigned char *)call->resource_name, strlen(call->resource_name)},
        {(const unsigned char *)call->perimeter_id, strlen(call->perimeter_id)},
    };
    char rkh[HF_CSE_RKH_LEN];
    struct json_object *reply, *wk;
    enum hf_status st;

    if (!hf_cse_fields_encode(f, 3, NULL, &r->payload_len) || r->payload_len == 0 ||
        !(r->payload = malloc(r->payload_len)) ||
        !hf_cse_fields_encode(f, 3, r->payload, &r->payload_len))
        return hf_request_fail(req, HF_STATUS_INTERNAL, "the key's fields cannot be encoded");
    st = hf_cse_kek_seal(call, req, HF_CSE_API, r->payload, r->payload_len, &r->blob, &r->blob_len);
    if (st != HF_STATUS_OK) return st;
    if (!hf_cse_resource_key_hash(r->dek, r->dek_len, f[1].p ? (const char *)f[1].p : "", f[1].len,
                                  call->perimeter_id, f[2].len, rkh))
        return hf_request_fail(req, HF_STATUS_INTERNAL, "resource key hash failed");
    if (!(reply = json_object_new_object())) return hf_request_fail(req, HF_STATUS_INTERNAL, "oom");
    if (!(wk = hf_json_base64(r->blob, r->blob_len)) ||
        json_object_object_add(reply, "wrapped_key", wk) != 0 ||
        json_object_object_add(reply, "resource_key_hash", json_object_new_string(rkh)) != 0) {
        json_object_put(reply);
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    }
    hf_reply_json(req, 200, reply);
    return HF_STATUS_OK;
}

enum hf_status hf_cse_rewrap(struct hf_cse_call *call, struct hf_request *req)
{
    struct rewrap r;
    struct json_object *claims = NULL;
    enum hf_status st;
    bool entered = false;

    memset(&r, 0, sizeof(r));
    if ((st = peer_check(call, req, &r)) != HF_STATUS_OK) goto done;
    if (!(entered = hf_cse_own_rewrap_enter(call->rt))) {
        st = hf_request_fail(req, HF_STATUS_THROTTLED, "%u rewraps already wait on peers",
                             HF_CSE_REWRAP_CONCURRENCY);
        goto done;
    }
    if (!(claims = hf_cse_migration_claims(call->px->kacls_url, r.peer, call->resource_name,
                                           hf_wall_s()))) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
        goto done;
    }
    if ((st = hf_cse_own_mint(call, req, "rewrap.sign", claims, &r.jwt)) != HF_STATUS_OK ||
        (st = out_body_make(call, req, &r)) != HF_STATUS_OK ||
        (st = peer_call(call, req, &r)) != HF_STATUS_OK || (st = peer_key(req, &r)) != HF_STATUS_OK)
        goto done;
    hf_cse_own_rewrap_leave(call->rt);
    entered = false;
    st = rewrap_seal(call, req, &r);
done:
    if (entered) hf_cse_own_rewrap_leave(call->rt);
    json_object_put(claims);
    rewrap_clear(&r);
    return st;
}
