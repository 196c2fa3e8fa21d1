/* Certificate and data objects (store.h's hf_store_object_*) removed by the operator: the
 * module makes and destroys them through PKCS#11; `holdfast object delete` comes here so that
 * the removal has its audit record like every other change made by the CLI. */
#include "hf-build.h"

#include <stdio.h>

#include "pkcs11/core/audit.h"
#include "pkcs11/core/core.h"
#include "pkcs11/core/store.h"

CK_RV hf_core_object_delete(struct hf_core *core, int64_t id, const struct hf_actor *who)
{
    struct hf_audit_record rec = {.operation = "object.destroy", .authenticated = true};
    char key[40];
    CK_RV rv;

    if (core == NULL || who == NULL) return CKR_ARGUMENTS_BAD;
    rv = hf_store_object_delete(hf_core_store(core), id);
    /* The module's handle of the object, so the record names what PKCS#11 callers saw. */
    snprintf(key, sizeof(key), "object:0x%llx", (unsigned long long)id << 2);
    rec.api = who->api;
    rec.caller = who->caller;
    rec.key_uuid = key;
    rec.detail = "holdfast object delete";
    rec.result = rv;
    if (hf_audit_append(hf_core_audit(core), &rec, NULL) != CKR_OK && rv == CKR_OK)
        rv = CKR_HF_AUDIT_FAILED;
    return rv;
}
