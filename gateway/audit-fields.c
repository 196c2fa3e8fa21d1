/* plugin.h's hf_request_set_audit_field: a plugin's own audit fields, kept on the request and
 * handed to the module as one JSON object (HF_SetRequestFields), which the core checks again and
 * writes as the record's "fields". */
#include "hf-build.h"

#include "gateway/audit.h"
#include "gateway/json.h"
#include "gateway/log.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(HF_AUDIT_FIELDS_MAX <= HF_REQUEST_FIELDS_MAX,
               "plugin.h promises plugins more fields than the module takes");

static void field_remove(struct hf_request *req, size_t i)
{
    free(req->audit_fields[i].name);
    free(req->audit_fields[i].value);
    req->audit_fields[i] = req->audit_fields[--req->naudit_fields];
    memset(&req->audit_fields[req->naudit_fields], 0, sizeof(req->audit_fields[0]));
}

/* Refusals are logged, never failed: a field is there to explain a request, not to decide it. */
HF_PLUGIN_EXPORT void hf_request_set_audit_field(struct hf_request *req, const char *name,
                                                 const char *value)
{
    char *copy;
    size_t i;

    if (!req || !name) return;
    if (!hf_name_is_valid(name, HF_REQUEST_FIELDS_NAME_MAX, '_')) {
        hf_gw_log_warn("request %s: audit field name refused: want [a-z0-9_]{1,32}", req->id);
        return;
    }
    for (i = 0; i < req->naudit_fields; i++)
        if (strcmp(req->audit_fields[i].name, name) == 0) break;
    if (!value) {
        if (i < req->naudit_fields) field_remove(req, i);
        return;
    }
    if (!hf_json_utf8_is_valid((const unsigned char *)value, strlen(value))) {
        hf_gw_log_warn("request %s: audit field %s is not UTF-8: dropped", req->id, name);
        return;
    }
    if (i == HF_AUDIT_FIELDS_MAX) {
        hf_gw_log_warn("request %s: more than %d audit fields: %s dropped", req->id,
                       HF_AUDIT_FIELDS_MAX, name);
        return;
    }
    if (!(copy = strdup(value))) return;
    if (i < req->naudit_fields) {
        free(req->audit_fields[i].value);
        req->audit_fields[i].value = copy;
    } else if ((req->audit_fields[i].name = strdup(name))) {
        req->audit_fields[i].value = copy;
        req->naudit_fields++;
    } else {
        free(copy);
    }
}

char *hf_gw_audit_fields_json(const struct hf_request *req)
{
    struct json_object *obj;
    const char *text;
    char *out = NULL;

    if (!req || req->naudit_fields == 0) return NULL;
    if (!(obj = json_object_new_object())) return NULL;
    for (size_t i = 0; i < req->naudit_fields; i++)
        if (json_object_object_add(obj, req->audit_fields[i].name,
                                   json_object_new_string(req->audit_fields[i].value)) != 0)
            goto done;
    text = json_object_to_json_string_ext(obj,
                                          JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    /* The module refuses what is over its bound: better no fields than no record. */
    if (text && strlen(text) <= HF_REQUEST_FIELDS_MAX_LEN)
        out = strdup(text);
    else if (text)
        hf_gw_log_warn("request %s: audit fields over %d bytes: dropped", req->id,
                       HF_REQUEST_FIELDS_MAX_LEN);
done:
    json_object_put(obj);
    return out;
}

void hf_gw_audit_fields_clear(struct hf_request *req)
{
    while (req && req->naudit_fields > 0)
        field_remove(req, req->naudit_fields - 1);
}
