/* The "fields" member of an audit record: a cloud API's own values for one request (access
 * reason, resource name, caller email, ...), as the gateway hands them over
 * (HF_SetRequestFields, holdfast.h). Checked and re-serialised once, when they arrive, so that
 * the record writer (audit.c, on every key operation's path) copies the text as it is. */
#ifndef HF_AUDIT_FIELDS_H
#define HF_AUDIT_FIELDS_H

#include "pkcs11/module/holdfast.h"

/* text: a JSON object as holdfast.h's HF_REQUEST_FIELDS_MAX describes it. *out gets its compact
 * form (malloc'd, NUL-terminated, one line, valid UTF-8, at most HF_REQUEST_FIELDS_MAX_LEN
 * bytes); CKR_ARGUMENTS_BAD for anything else, CKR_HOST_MEMORY. */
CK_RV hf_audit_fields_canon(const char *text, char **out);

#endif
