/* Errors that more than one API answers (plugin.h): the error body and table of the APIs whose
 * code is the HTTP status (a plugin points its error_body and errors here rather than keeping
 * its own copy), and a failed PKCS#11 call in an API's statuses (hf_request_fail_ckr). */
#include "hf-build.h"

#include "gateway/plugin.h"

_Static_assert(HF_STATUS_COUNT < 32, "struct hf_ckr_policy's mask holds every status");

/* OCI's spec ("Errors", "Limits OCI sets": it retries a 503 once) and SAP's Decision (Thales
 * lists only 400, 401, 403, 404 and 500) agree row for row. */
HF_PLUGIN_EXPORT const struct hf_error_map hf_error_map_code_status[HF_STATUS_COUNT] = {
    [HF_STATUS_OK] = {200, "200"},
    [HF_STATUS_BAD_REQUEST] = {400, "400"},
    [HF_STATUS_UNAUTHENTICATED] = {401, "401"},
    [HF_STATUS_DENIED] = {403, "403"},
    [HF_STATUS_KEY_NOT_FOUND] = {404, "404"},
    [HF_STATUS_PATH_NOT_FOUND] = {404, "404"},
    [HF_STATUS_METHOD_NOT_ALLOWED] = {405, "405"},
    [HF_STATUS_KEY_DISABLED] = {403, "403"},
    [HF_STATUS_KEY_USAGE] = {403, "403"},
    [HF_STATUS_BAD_CIPHERTEXT] = {400, "400"},
    [HF_STATUS_TOO_LARGE] = {413, "413"},
    [HF_STATUS_UNSUPPORTED] = {400, "400"},
    [HF_STATUS_THROTTLED] = {429, "429"},
    [HF_STATUS_TIMEOUT] = {503, "503"},
    [HF_STATUS_UNAVAILABLE] = {503, "503"},
    [HF_STATUS_INTERNAL] = {500, "500"},
    [HF_STATUS_BAD_GATEWAY] = {500, "500"},
};

/* OCI EKMS and SAP HYOK: "code" is the HTTP status as a string, which is the error table's name
 * for that row. */
HF_PLUGIN_EXPORT struct json_object *hf_error_body_code_message(const char *name,
                                                                const char *message)
{
    struct json_object *o = json_object_new_object();

    if (!o) return NULL;
    if (json_object_object_add(o, "code", json_object_new_string(name ? name : "500")) ||
        json_object_object_add(o, "message", json_object_new_string(message ? message : ""))) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

HF_PLUGIN_EXPORT enum hf_status hf_request_fail_ckr(struct hf_request *req, CK_RV rv,
                                                    const char *what,
                                                    const struct hf_ckr_policy *policy)
{
    uint32_t kept = policy != NULL ? policy->kept : HF_STATUS_ALL;
    enum hf_status st = hf_status_from_ckr(rv);

    if (st == HF_STATUS_OK || !(kept & HF_STATUS_BIT(st)))
        st = policy != NULL ? policy->otherwise : HF_STATUS_INTERNAL;
    return hf_request_fail(req, st, "%s failed (PKCS#11 0x%lx)", what ? what : "PKCS#11",
                           (unsigned long)rv);
}
