/* The prefix's own signing key (own.h): its key set, kept current across rotations, minting,
 * our delegated tokens' verification, and the peers' migration-token verifier. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/own.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The key set built for one current version of the signing key; immutable once built. */
struct own_set {
    atomic_uint refs;
    char key_uuid[37];
    CK_ULONG version;
    struct json_object *jwks;          /* {"keys":[current, previous]} */
    struct hf_jwt_verifier *delegated; /* iss = aud = kacls_url over jwks */
};

struct hf_cse_own {
    const struct hf_cse_prefix *px; /* the state's configuration, which outlives this */
    pthread_mutex_t lock;           /* guards set */
    struct own_set *set;
    atomic_uint rewraps; /* rewraps waiting on a peer now */
};

static void set_unref(struct own_set *set)
{
    if (!set || atomic_fetch_sub(&set->refs, 1) != 1) return;
    hf_jwt_verifier_free(set->delegated);
    json_object_put(set->jwks);
    free(set);
}

static bool set_is_for(const struct own_set *set, const struct hf_key_ref *ref)
{
    return set->version == ref->version && strcmp(set->key_uuid, ref->uuid) == 0;
}

/* The public JWK of version v of the signing key, appended to keys: the current one always,
 * an older one unless destroyed or compromised (a compromised key's tokens must not verify). */
static bool keys_add(struct json_object *keys, const struct hf_key_ref *ref, CK_ULONG v)
{
    CK_OBJECT_HANDLE obj = ref->current;
    CK_ULONG state = ref->state;
    char uuid[37];
    struct json_object *jwk;

    memcpy(uuid, ref->version_uuid, sizeof(uuid));
    if (v != ref->version && (hf_keys_version_info(ref, v, &obj, &state, uuid) != HF_STATUS_OK ||
                              state == HF_STATE_COMPROMISED || state == HF_STATE_DESTROYED))
        return true;
    if (!(jwk = hf_jwk_rsa_public(obj, uuid))) return false;
    if (json_object_array_add(keys, jwk) == 0) return true;
    json_object_put(jwk);
    return false;
}

static bool set_verifier(const struct hf_cse_prefix *px, struct own_set *set, char *err,
                         size_t errlen)
{
    const char *auds[] = {px->kacls_url};
    struct hf_jwt_issuer iss = {
        .issuer = px->kacls_url,
        .audiences = auds,
        .naudiences = 1,
        .algs = HF_JWT_RS256,
        .skew_s = px->skew_s,
        .jwks_json = json_object_to_json_string_ext(set->jwks, JSON_C_TO_STRING_PLAIN),
    };

    return iss.jwks_json && (set->delegated = hf_jwt_verifier_new()) &&
           hf_jwt_verifier_add(set->delegated, &iss, err, errlen);
}

/* A new set for ref's current version and the one before (one reference, the caller's). */
static struct own_set *set_build(const struct hf_cse_prefix *px, const struct hf_key_ref *ref,
                                 char *err, size_t errlen)
{
    struct own_set *set = calloc(1, sizeof(*set));
    struct json_object *keys = json_object_new_array();

    if (!set || !keys || !(set->jwks = json_object_new_object()) ||
        json_object_object_add(set->jwks, "keys", keys) != 0) {
        json_object_put(keys);
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    atomic_init(&set->refs, 1);
    memcpy(set->key_uuid, ref->uuid, sizeof(set->key_uuid));
    set->version = ref->version;
    if (!keys_add(keys, ref, ref->version) ||
        (ref->version > 1 && !keys_add(keys, ref, ref->version - 1))) {
        snprintf(err, errlen, "signing_key %s: its public key cannot be read", px->signing_key);
        goto fail;
    }
    if (!set_verifier(px, set, err, errlen)) goto fail;
    return set;
fail:
    set_unref(set);
    return NULL;
}

/* The signing key as its link names it now (ref) and the key set for it (*out, a reference;
 * NULL when none could be had). Returns the lookup's status: when the store cannot say, *out
 * is the last set built, so verifying goes on through an outage while minting fails. A set
 * that cannot be built is UNAVAILABLE, with the reason in err. */
static enum hf_status own_current(struct hf_cse_own *own, struct hf_key_ref *ref,
                                  struct own_set **out, char *err, size_t errlen)
{
    enum hf_status st = hf_keys_by_link(HF_CSE_LINK_TYPE, own->px->signing_key, ref);
    struct own_set *set, *old;

    if (st == HF_STATUS_OK && ref->key_type != CKK_RSA) st = HF_STATUS_KEY_USAGE;
    pthread_mutex_lock(&own->lock);
    if ((set = own->set) && (st != HF_STATUS_OK || set_is_for(set, ref)))
        atomic_fetch_add(&set->refs, 1);
    else
        set = NULL;
    pthread_mutex_unlock(&own->lock);
    if (set || st != HF_STATUS_OK) {
        *out = set;
        return st;
    }
    /* Built outside the lock: it reads the module. Two threads racing here build two sets
     * for one version; the later swap wins and both are correct. */
    if (!(set = set_build(own->px, ref, err, errlen))) {
        pthread_mutex_lock(&own->lock);
        if ((set = own->set)) atomic_fetch_add(&set->refs, 1);
        pthread_mutex_unlock(&own->lock);
        *out = set;
        return HF_STATUS_UNAVAILABLE;
    }
    atomic_fetch_add(&set->refs, 1); /* the caller's; the first is own's */
    pthread_mutex_lock(&own->lock);
    old = own->set;
    own->set = set;
    pthread_mutex_unlock(&own->lock);
    set_unref(old);
    *out = set;
    return HF_STATUS_OK;
}

enum hf_status hf_cse_own_mint(struct hf_cse_call *call, struct hf_request *req,
                               const char *operation, const struct json_object *claims,
                               char **token)
{
    struct hf_cse_own *own = call->rt->own;
    struct own_set *set = NULL;
    struct hf_key_ref ref;
    enum hf_status st;
    char why[256] = "";

    *token = NULL;
    if (!own) return hf_request_fail(req, HF_STATUS_UNSUPPORTED, "this KACLS has no signing_key");
    st = own_current(own, &ref, &set, why, sizeof(why));
    set_unref(set);
    if (st == HF_STATUS_KEY_USAGE)
        return hf_request_fail(req, st, "signing_key %s: not an RSA key", call->px->signing_key);
    if (st != HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE, "signing_key %s: cannot be read",
                               call->px->signing_key);
    if ((st = hf_key_may(&ref, HF_KEY_OP_SIGN, 0)) != HF_STATUS_OK)
        return hf_request_fail(req, st, "signing_key %s: key disabled for signing",
                               call->px->signing_key);
    /* The core refuses a key operation when the request's link is blocked: for the signature
     * that is the signing key's link, then the KEK's again for what follows (rewrap's seal). */
    hf_request_set_link(req, HF_CSE_LINK_TYPE, call->px->signing_key);
    st = hf_jwt_sign_rs256(req, operation, ref.current, ref.version_uuid, claims, token, why,
                           sizeof(why));
    hf_request_set_link(req, HF_CSE_LINK_TYPE, call->px->kek);
    if (st == HF_STATUS_OK) return st;
    /* A slow HSM is a backend fault here, not the peer timeout TIMEOUT means in this API. */
    return hf_request_fail(req, st == HF_STATUS_TIMEOUT ? HF_STATUS_UNAVAILABLE : st,
                           "signing a token: %s", why);
}

enum hf_status hf_cse_own_verify_delegated(struct hf_cse_prefix_rt *rt, const char *token,
                                           size_t len, struct hf_jwt **out, char *why,
                                           size_t whylen)
{
    struct own_set *set = NULL;
    struct hf_key_ref ref;
    enum hf_status st;

    *out = NULL;
    if (!rt->own) {
        snprintf(why, whylen, "this KACLS issues no delegated tokens");
        return HF_STATUS_UNAUTHENTICATED;
    }
    own_current(rt->own, &ref, &set, why, whylen);
    if (!set) {
        snprintf(why, whylen, "the KACLS's own key set cannot be read");
        return HF_STATUS_UNAUTHENTICATED;
    }
    st = hf_jwt_verify(set->delegated, token, len, out, why, whylen);
    set_unref(set);
    return st;
}

struct json_object *hf_cse_own_jwks(struct hf_cse_prefix_rt *rt)
{
    struct json_object *copy = NULL, *empty;
    struct own_set *set = NULL;
    struct hf_key_ref ref;
    char err[256];

    if (!rt->own) {
        if (!(empty = json_object_new_object())) return NULL;
        if (json_object_object_add(empty, "keys", json_object_new_array()) == 0) return empty;
        json_object_put(empty);
        return NULL;
    }
    own_current(rt->own, &ref, &set, err, sizeof(err));
    if (set && json_object_deep_copy(set->jwks, &copy, NULL) != 0) copy = NULL;
    set_unref(set);
    return copy;
}

bool hf_cse_own_rewrap_enter(struct hf_cse_prefix_rt *rt)
{
    if (!rt->own) return false;
    if (atomic_fetch_add(&rt->own->rewraps, 1) < HF_CSE_REWRAP_CONCURRENCY) return true;
    atomic_fetch_sub(&rt->own->rewraps, 1);
    return false;
}

void hf_cse_own_rewrap_leave(struct hf_cse_prefix_rt *rt)
{
    if (rt->own) atomic_fetch_sub(&rt->own->rewraps, 1);
}

/* ---- start and stop ------------------------------------------------------------------------- */

static bool own_start(const struct hf_cse_prefix *px, struct hf_cse_prefix_rt *rt, char *err,
                      size_t errlen)
{
    struct hf_key_ref ref;
    struct own_set *set = NULL;
    enum hf_status st;
    bool have_set;

    if (!(rt->own = calloc(1, sizeof(*rt->own)))) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    rt->own->px = px;
    pthread_mutex_init(&rt->own->lock, NULL);
    atomic_init(&rt->own->rewraps, 0);
    err[0] = '\0';
    st = own_current(rt->own, &ref, &set, err, errlen);
    have_set = set != NULL;
    set_unref(set);
    if (st == HF_STATUS_OK && have_set && ref.bits >= 3072) return true;
    if (st == HF_STATUS_KEY_NOT_FOUND)
        snprintf(err, errlen, "signing_key %s: no such %s link", px->signing_key, HF_CSE_LINK_TYPE);
    else if (st == HF_STATUS_KEY_USAGE)
        snprintf(err, errlen, "signing_key %s: not an RSA key (RSA-3072 wanted)", px->signing_key);
    else if (st == HF_STATUS_OK)
        snprintf(err, errlen, "signing_key %s: an RSA key of 3072 bits at least is needed",
                 px->signing_key);
    else if (!err[0])
        snprintf(err, errlen, "signing_key %s: the key store cannot be read", px->signing_key);
    return false;
}

/* One issuer per peer: its migration tokens (aud kacls-migration) verify against <peer>/certs,
 * fetched through the peer policy (peer_ca, peer_allow), refreshed in the background. */
static bool migration_start(const struct hf_cse_prefix *px, struct hf_cse_prefix_rt *rt, char *err,
                            size_t errlen)
{
    static const char *const auds[] = {HF_CSE_MIGRATION_AUDIENCE};
    static const char *const required[] = {"kacls_url", "resource_name"};
    const struct hf_outbound_policy fetch = {
        .ca_file = px->peer_ca,
        .allow_cidrs = (const char *const *)px->peer_allow,
        .nallow_cidrs = px->npeer_allow,
    };
    char jwks[HF_CSE_VALUE_MAX + 8];

    if (!(rt->migration = hf_jwt_verifier_new())) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    for (size_t i = 0; i < px->npeers; i++) {
        struct hf_jwt_issuer iss = {
            .issuer = px->peers[i],
            .jwks = jwks,
            .audiences = auds,
            .naudiences = 1,
            .algs = HF_JWT_RS256,
            .skew_s = px->skew_s,
            .required = required,
            .nrequired = 2,
            .fetch = &fetch,
        };

        if ((size_t)snprintf(jwks, sizeof(jwks), "%s/certs", px->peers[i]) >= sizeof(jwks)) {
            snprintf(err, errlen, "peer %s: URL too long", px->peers[i]);
            return false;
        }
        if (!hf_jwt_verifier_add(rt->migration, &iss, err, errlen)) return false;
    }
    return true;
}

bool hf_cse_tokens_start_own(const struct hf_cse_prefix *px, struct hf_cse_prefix_rt *rt, char *err,
                             size_t errlen)
{
    if (px->signing_key && !own_start(px, rt, err, errlen)) return false;
    return px->npeers == 0 || migration_start(px, rt, err, errlen);
}

void hf_cse_tokens_stop_own(struct hf_cse_prefix_rt *rt)
{
    hf_jwt_verifier_free(rt->migration);
    rt->migration = NULL;
    if (!rt->own) return;
    set_unref(rt->own->set);
    pthread_mutex_destroy(&rt->own->lock);
    free(rt->own);
    rt->own = NULL;
}
