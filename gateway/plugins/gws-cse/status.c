/* GET <prefix>/status (specs/gws-cse.md, "Operations"): what this KACLS is and serves, after a
 * health check of its KEK (a wrap and unwrap round trip through PKCS#11), cached so a public,
 * unauthenticated page costs at most one round trip a minute per prefix; failing: 503. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

#include <string.h>

#define HEALTH_OK_US (60u * 1000000u)
/* A failure is kept shorter, so a recovered backend shows soon. */
#define HEALTH_FAIL_US (5u * 1000000u)
#define PROBE_LEN 32

/* A KEK round trip that fails nothing but itself: the page answers 503 on false. */
static bool kek_round_trip(const struct hf_cse_prefix *px, struct hf_request *req)
{
    static const unsigned char pt[PROBE_LEN];
    unsigned char iv[HF_BLOB_IV_LEN], blob[HF_BLOB_OVERHEAD + PROBE_LEN], back[PROBE_LEN];
    CK_FUNCTION_LIST_PTR p11 = hf_p11_functions();
    struct hf_key_ref kek;
    CK_SESSION_HANDLE s;
    struct hf_blob b;

    if (hf_keys_by_link(HF_CSE_LINK_TYPE, px->kek, &kek) != HF_STATUS_OK || kek.blocked ||
        !hf_random_public(iv, sizeof(iv)))
        return false;
    if (hf_p11_begin(req, "status.health_check", &s) != CKR_OK ||
        hf_blob_seal(p11, s, kek.current, kek.version, HF_CSE_API, kek.uuid, iv, NULL, 0, pt,
                     PROBE_LEN, blob) != CKR_OK ||
        !hf_blob_parse(blob, sizeof(blob), &b))
        return false;
    if (hf_p11_begin(req, "status.health_check", &s) != CKR_OK ||
        hf_blob_open(p11, s, kek.current, HF_CSE_API, kek.uuid, &b, NULL, 0, back) != CKR_OK)
        return false;
    return memcmp(back, pt, PROBE_LEN) == 0;
}

static bool is_healthy(struct hf_cse_call *call, struct hf_request *req)
{
    struct hf_cse_health *h = &call->rt->health;
    uint64_t now = hf_now_us();
    bool cached = false, ok = false;

    pthread_mutex_lock(&h->lock);
    if (h->checked_us != 0 && now - h->checked_us < (h->ok ? HEALTH_OK_US : HEALTH_FAIL_US)) {
        cached = true;
        ok = h->ok;
    }
    pthread_mutex_unlock(&h->lock);
    if (cached) return ok;
    /* Not under the lock: no lock is held across a call into the HSM (STYLE.md). Two pages
     * at once may both probe; the later result stays. */
    ok = kek_round_trip(call->px, req);
    /* A KEK in an HSM pool: this pass stopped before the round trip, which runs on the pool's
     * workers; a failure it did not see is not the KEK's. */
    if (hf_request_deferred(req)) return false;
    pthread_mutex_lock(&h->lock);
    h->checked_us = hf_now_us();
    h->ok = ok;
    pthread_mutex_unlock(&h->lock);
    return ok;
}

static struct json_object *operations_new(const struct hf_cse_prefix *px)
{
    struct json_object *a = json_object_new_array();

    for (unsigned i = 0; a != NULL && i < HF_CSE_OP_COUNT; i++) {
        if (!hf_cse_op_is_enabled(px, (enum hf_cse_op)i)) continue;
        if (json_object_array_add(a, json_object_new_string(hf_cse_op_info(i)->name)) != 0) {
            json_object_put(a);
            return NULL;
        }
    }
    return a;
}

enum hf_status hf_cse_status(struct hf_cse_call *call, struct hf_request *req)
{
    const struct hf_cse_prefix *px = call->px;
    struct json_object *o, *ops;

    if (!is_healthy(call, req))
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE, "the KEK health check failed");
    if ((o = json_object_new_object()) == NULL || (ops = operations_new(px)) == NULL ||
        json_object_object_add(o, "operations_supported", ops) != 0 ||
        json_object_object_add(o, "server_type", json_object_new_string("KACLS")) != 0 ||
        json_object_object_add(o, "vendor_id", json_object_new_string("Holdfast")) != 0 ||
        json_object_object_add(o, "version", json_object_new_string(PACKAGE_VERSION)) != 0 ||
        (px->display_name != NULL &&
         json_object_object_add(o, "name", json_object_new_string(px->display_name)) != 0)) {
        json_object_put(o);
        return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    }
    hf_reply_json(req, 200, o);
    return HF_STATUS_OK;
}
