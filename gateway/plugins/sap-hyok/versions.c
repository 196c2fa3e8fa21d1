/* Key get-versions-metadata: POST .../keys/{external_key_id}/get-versions-metadata (spec's
 * table): the key's versions that are not destroyed, oldest first, paged by skip and limit and
 * filtered by key_version_id and created_after (request.c, hf_sap_paging_select). */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/internal.h"

#include <stdlib.h>

static struct json_object *resource_new(const struct hf_key_version *v)
{
    struct json_object *o = json_object_new_object();
    char created[32];

    hf_sap_rfc3339_format(v->created, created, sizeof(created));
    if (o != NULL && json_object_object_add(o, "id", json_object_new_string(v->uuid)) == 0 &&
        json_object_object_add(o, "created_at", json_object_new_string(created)) == 0)
        return o;
    json_object_put(o);
    return NULL;
}

static struct json_object *page_new(const struct hf_sap_paging *p,
                                    const struct hf_key_version *versions, const size_t *sel,
                                    size_t total, size_t first, size_t count)
{
    struct json_object *o = json_object_new_object(), *res = json_object_new_array();

    for (size_t i = first; res != NULL && i < first + count; i++) {
        struct json_object *r = resource_new(&versions[sel[i]]);
        if (r == NULL || json_object_array_add(res, r) != 0) {
            json_object_put(r);
            goto fail;
        }
    }
    if (o == NULL || res == NULL ||
        json_object_object_add(o, "skip", json_object_new_int64(p->skip)) ||
        json_object_object_add(o, "limit", json_object_new_int64(p->limit)) ||
        json_object_object_add(o, "total", json_object_new_int64((int64_t)total)) ||
        json_object_object_add(o, "resources", res))
        goto fail;
    return o;
fail:
    json_object_put(res);
    json_object_put(o);
    return NULL;
}

enum hf_status hf_sap_versions_metadata(struct hf_sap_call *call, struct hf_request *req)
{
    struct hf_sap_paging p;
    struct hf_key_version *versions = NULL;
    size_t n = 0, *sel = NULL, total, first, count;
    char why[256] = "";
    enum hf_status st;

    if ((st = hf_sap_paging_parse(call->body, &p, why, sizeof(why))) != HF_STATUS_OK)
        return hf_request_fail(req, st, "%s", why);
    if ((st = hf_keys_versions(&call->key, &versions, &n)) != HF_STATUS_OK)
        return hf_request_fail(req, st == HF_STATUS_INTERNAL ? st : HF_STATUS_UNAVAILABLE,
                               "the versions of key %s cannot be read now", call->external_key_id);
    if (n > 0 && (sel = calloc(n, sizeof(*sel))) == NULL) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
        goto done;
    }
    hf_sap_paging_select(&p, versions, n, sel, &total, &first, &count);
    st = hf_reply_json_or_fail(req, 200, page_new(&p, versions, sel, total, first, count));
done:
    free(sel);
    free(versions);
    return st;
}
