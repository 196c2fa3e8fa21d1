/* GetHealthStatus: POST <prefix>/kms/xks/v1/health (specs/aws-xks.md).
 *
 * A deep check, as the spec asks: the store's dedicated health key encrypts and decrypts a fresh
 * random block under the same construction KMS's calls use, so a 200 means an encrypt right after
 * would work. The answer is reused for health_cache_seconds (the spec allows up to a minute)
 * while the health key's link stays open; a failed check is never reused, so recovery shows at
 * the next call. Never subject to secondary
 * authorization.
 *
 * ekmFleetDetails: the token the module's session is on (the root KEK's), then one entry per HSM
 * pool member behind the module, its healthStatus from the pool's live status on this node
 * (hf_p11_pool_status), so KMS sees a member go out of service and come back. The pools are
 * read only when an answer is made, never from the cache's path. */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/plugins/aws-xks/health-fleet.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#define HEALTH_PROBE_LEN 32 /* a data key's size, what KMS sends most */

void hf_xks_health_clear(struct hf_xks_store_rt *rt)
{
    json_object_put(rt->health);
    rt->health = NULL;
    rt->health_expires_us = 0;
}

/* PKCS#11 blank-padded fixed-width text into a C string. */
static void p11_text(const CK_UTF8CHAR *in, size_t len, char *out, size_t outlen)
{
    size_t n = len < outlen - 1 ? len : outlen - 1;

    while (n > 0 && (in[n - 1] == ' ' || in[n - 1] == '\0'))
        n--;
    for (size_t i = 0; i < n; i++)
        out[i] = (in[i] >= 0x20 && in[i] <= 0x7e) ? (char)in[i] : '?';
    out[n] = '\0';
}

/* One member of the key source behind the module: today the one token the session is on. */
struct member {
    char id[64];
    char model[160];
    char vendor[40];
};

static void member_describe(CK_SESSION_HANDLE s, struct member *m)
{
    CK_FUNCTION_LIST_PTR p11 = hf_p11_functions();
    CK_SESSION_INFO si;
    CK_TOKEN_INFO ti;
    char manufacturer[40], model[20], serial[20], label[40];

    snprintf(m->id, sizeof(m->id), "hsm-1");
    snprintf(m->model, sizeof(m->model), "PKCS#11 token");
    snprintf(m->vendor, sizeof(m->vendor), "unknown");
    if (p11 == NULL || p11->C_GetSessionInfo(s, &si) != CKR_OK ||
        p11->C_GetTokenInfo(si.slotID, &ti) != CKR_OK)
        return;
    p11_text(ti.manufacturerID, sizeof(ti.manufacturerID), manufacturer, sizeof(manufacturer));
    p11_text(ti.model, sizeof(ti.model), model, sizeof(model));
    p11_text(ti.serialNumber, sizeof(ti.serialNumber), serial, sizeof(serial));
    p11_text(ti.label, sizeof(ti.label), label, sizeof(label));
    snprintf(m->id, sizeof(m->id), "%s", serial[0] ? serial : label[0] ? label : "hsm-1");
    /* "<vendor> <model>", unless the model already names its vendor. */
    snprintf(m->model, sizeof(m->model), "%s%s%s (hardware %u.%u, firmware %u.%u)",
             strncmp(model, manufacturer, strlen(manufacturer)) == 0 ? "" : manufacturer,
             strncmp(model, manufacturer, strlen(manufacturer)) == 0 ? "" : " ", model,
             ti.hardwareVersion.major, ti.hardwareVersion.minor, ti.firmwareVersion.major,
             ti.firmwareVersion.minor);
    if (manufacturer[0]) snprintf(m->vendor, sizeof(m->vendor), "%s", manufacturer);
}

/* The crypto round trip on the health key; fails the request on any problem. */
static enum hf_status health_check(struct hf_xks_call *call, struct hf_request *req,
                                   struct member *m)
{
    const char *id = call->store->health_key;
    unsigned char probe[HEALTH_PROBE_LEN], ct[HEALTH_PROBE_LEN], back[HEALTH_PROBE_LEN];
    unsigned char iv[HF_XKS_IV_LEN], tag[HF_XKS_TAG_LEN], cm[HF_XKS_CM_LEN];
    struct hf_key_ref key;
    CK_SESSION_HANDLE s;
    enum hf_status st;
    CK_RV rv;

    hf_request_set_link(req, HF_XKS_LINK_TYPE, id);
    st = hf_keys_by_link(HF_XKS_LINK_TYPE, id, &key);
    if (st == HF_STATUS_KEY_NOT_FOUND)
        return hf_request_fail(req, HF_STATUS_INTERNAL,
                               "health check: no key has the XKS key id %s (health_key)", id);
    if (st != HF_STATUS_OK)
        return hf_request_fail(req, st, "health check: the health key %s cannot be read", id);
    if (key.blocked)
        return hf_request_fail(req, HF_STATUS_KEY_DISABLED,
                               "health check: the XKS link of health key %s is blocked", id);
    if (key.key_type != CKK_AES || key.bits != 256 ||
        hf_key_may(&key, HF_KEY_OP_ENCRYPT, 0) != HF_STATUS_OK ||
        hf_key_may(&key, HF_KEY_OP_DECRYPT, 0) != HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_INTERNAL,
                               "health check: health key %s must be an active AES-256 key that "
                               "may encrypt and decrypt",
                               id);
    if (!hf_xks_cm_encode(key.version, cm) || RAND_bytes(probe, sizeof(probe)) != 1 ||
        RAND_bytes(iv, sizeof(iv)) != 1)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "health check: no random bytes");
    if ((st = hf_xks_session_begin(call, req, "health.encrypt", &s)) != HF_STATUS_OK) return st;
    member_describe(s, m);
    rv = hf_xks_gcm_seal(hf_p11_functions(), s, key.current, iv, NULL, 0, cm, sizeof(cm), probe,
                         sizeof(probe), ct, tag);
    if (rv != CKR_OK) return hf_request_fail_ckr(req, rv, "health check: encrypt", NULL);
    if ((rv = hf_p11_begin(req, "health.decrypt", &s)) != CKR_OK)
        return hf_request_fail_ckr(req, rv, "health check: opening a session", NULL);
    rv = hf_xks_gcm_open(hf_p11_functions(), s, key.current, iv, sizeof(iv), NULL, 0, cm,
                         sizeof(cm), ct, sizeof(ct), tag, back);
    if (rv != CKR_OK) return hf_request_fail_ckr(req, rv, "health check: decrypt", NULL);
    if (CRYPTO_memcmp(back, probe, sizeof(probe)) != 0)
        return hf_request_fail(req, HF_STATUS_INTERNAL,
                               "health check: the probe decrypted to something else");
    return HF_STATUS_OK;
}

/* The pool members after the module's own token; a module that cannot tell adds none. Beyond
 * the spec's ten entries the rest are left out (the health record's fields count them). */
static bool fleet_add_pools(struct hf_request *req, struct json_object *fleet)
{
    HF_POOL_MEMBER_STATUS *members = NULL;
    size_t n = 0, dropped = 0;
    char count[24];
    bool ok = true;

    if (hf_p11_pool_status(&members, &n) && n > 0) {
        ok = hf_xks_fleet_add_pools(fleet, members, n, &dropped);
        snprintf(count, sizeof(count), "%zu", dropped);
        if (dropped > 0) hf_request_set_audit_field(req, "fleet_members_left_out", count);
    }
    free(members);
    return ok;
}

static struct json_object *health_answer(struct hf_request *req, const struct hf_xks_state *state,
                                         const struct member *m)
{
    struct json_object *o = json_object_new_object(), *fleet = json_object_new_array(),
                       *entry = json_object_new_object();

    if (o == NULL || fleet == NULL || entry == NULL) goto fail;
    if (json_object_object_add(entry, "id", json_object_new_string(m->id)) != 0 ||
        json_object_object_add(entry, "model", json_object_new_string(m->model)) != 0 ||
        json_object_object_add(entry, "healthStatus", json_object_new_string("ACTIVE")) != 0 ||
        json_object_array_add(fleet, entry) != 0)
        goto fail;
    entry = NULL;
    if (!fleet_add_pools(req, fleet)) goto fail;
    if (json_object_object_add(o, "xksProxyFleetSize",
                               json_object_new_int((int)state->cfg.fleet_size)) != 0 ||
        json_object_object_add(o, "xksProxyVendor", json_object_new_string("Holdfast")) != 0 ||
        json_object_object_add(o, "xksProxyModel",
                               json_object_new_string("holdfastd " PACKAGE_VERSION)) != 0 ||
        json_object_object_add(o, "ekmVendor", json_object_new_string(m->vendor)) != 0 ||
        json_object_object_add(o, "ekmFleetDetails", fleet) != 0)
        goto fail;
    return o;
fail:
    json_object_put(entry);
    json_object_put(fleet);
    json_object_put(o);
    return NULL;
}

/* A remembered answer stands only while the health key's link is open: blocking it is the kill
 * switch, which must show within a second (the link read is the module's cached one). */
static bool health_link_is_open(const struct hf_xks_call *call)
{
    struct hf_key_ref key;

    return hf_keys_by_link(HF_XKS_LINK_TYPE, call->store->health_key, &key) == HF_STATUS_OK &&
           !key.blocked;
}

enum hf_status hf_xks_handle_health(void *state, struct hf_request *req)
{
    struct hf_xks_state *xs = state;
    struct hf_xks_call call;
    struct json_object *answer = NULL, *cached = NULL;
    struct member m;
    uint64_t now;
    enum hf_status st;

    if ((st = hf_xks_call_begin(state, req, HF_XKS_OP_HEALTH, &call)) != HF_STATUS_OK) return st;
    now = hf_now_us();
    bool reusable = health_link_is_open(&call); /* before the lock: a PKCS#11 call */
    pthread_mutex_lock(&call.rt->health_lock);
    if (reusable && call.rt->health != NULL && now < call.rt->health_expires_us &&
        json_object_deep_copy(call.rt->health, &answer, NULL) != 0)
        answer = NULL;
    pthread_mutex_unlock(&call.rt->health_lock);
    if (answer == NULL) {
        if ((st = health_check(&call, req, &m)) != HF_STATUS_OK) goto done;
        if ((answer = health_answer(req, xs, &m)) == NULL) {
            st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
            goto done;
        }
        if (xs->cfg.health_cache_s > 0 && json_object_deep_copy(answer, &cached, NULL) == 0) {
            pthread_mutex_lock(&call.rt->health_lock);
            hf_xks_health_clear(call.rt);
            call.rt->health = cached;
            call.rt->health_expires_us = now + (uint64_t)xs->cfg.health_cache_s * 1000000u;
            pthread_mutex_unlock(&call.rt->health_lock);
        }
    }
    hf_reply_json(req, 200, answer);
    st = HF_STATUS_OK;
done:
    hf_xks_call_end(&call);
    return st;
}
