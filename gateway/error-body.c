/* Error bodies that more than one API uses (plugin.h): a plugin points its error_body here
 * rather than keeping its own copy. */
#include "hf-build.h"

#include "gateway/plugin.h"

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
