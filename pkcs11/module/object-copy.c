/* C_CopyObject (PKCS#11 2.40 section 5.7): a new session object like a session object, the
 * template changing only what a copy may change (section 4.4's tables, footnote 8): CKA_PRIVATE,
 * CKA_MODIFIABLE, CKA_LABEL, CKA_ID, and for keys CKA_SENSITIVE FALSE to TRUE and
 * CKA_EXTRACTABLE TRUE to FALSE; any other attribute may be given with the value it has
 * (else CKR_ATTRIBUTE_READ_ONLY). A managed token key keeps one identity: a copy, token or
 * session, would escape its states, rotation, links and audit, so it is CKR_ACTION_PROHIBITED
 * (3.0). Each class copies through its own function (copy_key); certificate and data objects
 * plug in beside it in copy_session_object. */
#include "hf-build.h"

#include "internal.h"

#include <stdlib.h>

/* What the template changes. */
struct copy_change {
    const CK_ATTRIBUTE *label, *id;
    bool has_private, is_private;
    bool has_fixed, is_fixed;
    bool seal; /* CKA_SENSITIVE TRUE or CKA_EXTRACTABLE FALSE */
};

static CK_RV bool_of(const CK_ATTRIBUTE *a, bool *val)
{
    if (a->ulValueLen != sizeof(CK_BBOOL) || !a->pValue) return CKR_ATTRIBUTE_VALUE_INVALID;
    *val = *(const CK_BBOOL *)a->pValue != CK_FALSE;
    return CKR_OK;
}

/* CKA_SENSITIVE (sensitive TRUE) or CKA_EXTRACTABLE (sensitive FALSE): only toward sealed. */
static CK_RV seal_read(const struct hf_object *obj, const CK_ATTRIBUTE *a, bool sensitive,
                       struct copy_change *c)
{
    bool val = false;
    CK_RV rv = bool_of(a, &val);

    if (rv != CKR_OK) return rv;
    if (val == sensitive) {
        c->seal = true;
        return CKR_OK;
    }
    return obj->key.exportable ? CKR_OK : CKR_ATTRIBUTE_READ_ONLY;
}

static CK_RV change_one(const struct hf_object *obj, const CK_ATTRIBUTE *a, struct copy_change *c)
{
    bool val = false, key_face = obj->kind != HF_OBJ_PUBLIC;
    CK_RV rv = CKR_OK;

    switch (a->type) {
    case CKA_LABEL:
    case CKA_ID:
        if (a->ulValueLen > HF_P11_TEXT_MAX) return CKR_ATTRIBUTE_VALUE_INVALID;
        *(a->type == CKA_LABEL ? &c->label : &c->id) = a;
        return CKR_OK;
    case CKA_TOKEN:
        /* A managed key is made, imported or unwrapped, never copied from a session key. */
        if ((rv = bool_of(a, &val)) == CKR_OK && val) rv = CKR_TEMPLATE_INCONSISTENT;
        return rv;
    case CKA_PRIVATE:
        c->has_private = true;
        return bool_of(a, &c->is_private);
    case CKA_MODIFIABLE:
        c->has_fixed = true;
        if ((rv = bool_of(a, &val)) == CKR_OK) c->is_fixed = !val;
        return rv;
    case CKA_SENSITIVE:
        if (key_face) return seal_read(obj, a, true, c);
        break;
    case CKA_EXTRACTABLE:
        if (key_face) return seal_read(obj, a, false, c);
        break;
    }
    return hf_object_matches(obj, a, 1) ? CKR_OK : CKR_ATTRIBUTE_READ_ONLY;
}

static CK_RV copy_key(struct hf_session *s, const struct hf_object *obj, const CK_ATTRIBUTE *t,
                      CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    struct copy_change c = {0};
    struct hf_object *copy = NULL;
    struct hf_session_attrs *sa;
    CK_RV rv = CKR_OK;

    for (CK_ULONG i = 0; i < n && rv == CKR_OK; i++)
        rv = change_one(obj, &t[i], &c);
    if (rv == CKR_OK) rv = hf_session_object_dup(obj, c.label, c.id, &copy);
    if (rv != CKR_OK) {
        hf_module_audit_object(s->has_ctx ? &s->ctx : NULL, "object.create", obj, "C_CopyObject",
                               rv);
        return rv;
    }
    sa = copy->sobj;
    /* The copy's maker is this session's caller (hf_session_object_add sets it). */
    free(sa->api);
    free(sa->caller);
    sa->api = sa->caller = NULL;
    if (c.has_private) sa->is_private = c.is_private;
    if (c.has_fixed) sa->is_fixed = c.is_fixed;
    if (c.seal) {
        /* Sensitive from now on is not always sensitive. */
        if (copy->key.exportable) sa->is_sealed = false;
        copy->key.exportable = false;
    }
    return hf_session_object_add_why(s, copy, "C_CopyObject", out);
}

static CK_RV copy_session_object(struct hf_session *s, const struct hf_object *obj,
                                 const CK_ATTRIBUTE *t, CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    switch (obj->cls) {
    case CKO_SECRET_KEY:
    case CKO_PRIVATE_KEY:
    case CKO_PUBLIC_KEY:
        return copy_key(s, obj, t, n, out);
    }
    return CKR_ACTION_PROHIBITED;
}

HF_EXPORT CK_RV C_CopyObject(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject,
                             CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount,
                             CK_OBJECT_HANDLE_PTR phNewObject)
{
    uint64_t started = hf_monotonic_us();
    struct hf_object *obj = NULL;
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (phNewObject == NULL) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    if ((rv = hf_tmpl_check(pTemplate, ulCount)) != CKR_OK) goto done;
    if ((rv = hf_object_get(s, hObject, &obj)) != CKR_OK) goto done;
    if (obj->sobj) {
        rv = copy_session_object(s, obj, pTemplate, ulCount, phNewObject);
        goto done;
    }
    rv = CKR_ACTION_PROHIBITED;
    if (hf_module_audit(s, "object.create", obj, "C_CopyObject", rv, started) != CKR_OK)
        rv = CKR_HF_AUDIT_FAILED;
done:
    hf_object_unref(obj);
    hf_session_put(s);
    return rv;
}
