/* hf_audit_fields_canon (audit-fields.h). json-c parses and writes; what is checked here is
 * only the shape the record format promises a reader of the log: one flat object of strings
 * under short lower-case names. */
#include "hf-build.h"

#include "pkcs11/core/audit-fields.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

/* Strict JSON whose raw bytes are valid UTF-8; NULL otherwise. */
static json_object *parse_strict(const char *text, size_t len)
{
    json_tokener *tok = json_tokener_new_ex(2);
    json_object *obj = NULL;

    if (!tok) return NULL;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    obj = json_tokener_parse_ex(tok, text, (int)len);
    if (obj && json_tokener_get_parse_end(tok) != len) {
        json_object_put(obj);
        obj = NULL;
    }
    json_tokener_free(tok);
    return obj;
}

static bool shape_is_valid(json_object *obj)
{
    if (!json_object_is_type(obj, json_type_object)) return false;
    if (json_object_object_length(obj) > HF_REQUEST_FIELDS_MAX) return false;
    json_object_object_foreach(obj, name, value)
    {
        if (!hf_name_is_valid(name, HF_REQUEST_FIELDS_NAME_MAX, '_') ||
            !json_object_is_type(value, json_type_string))
            return false;
    }
    return true;
}

CK_RV hf_audit_fields_canon(const char *text, char **out)
{
    json_object *obj = NULL, *again = NULL;
    const char *canon;
    size_t len = text ? strlen(text) : 0;
    CK_RV rv = CKR_ARGUMENTS_BAD;

    if (!out) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    if (len == 0 || len > HF_REQUEST_FIELDS_MAX_LEN) goto done;
    if (!(obj = parse_strict(text, len)) || !shape_is_valid(obj)) goto done;
    canon = json_object_to_json_string_ext(obj,
                                           JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (!canon) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    /* A \u escape of a lone surrogate parses, and json-c writes its bytes out raw: the text
     * written must itself read back as valid UTF-8, or the record line would not be. */
    len = strlen(canon);
    if (len > HF_REQUEST_FIELDS_MAX_LEN || !(again = parse_strict(canon, len))) goto done;
    rv = (*out = strdup(canon)) ? CKR_OK : CKR_HOST_MEMORY;
done:
    json_object_put(again);
    json_object_put(obj);
    return rv;
}
