/* C_CopyObject (PKCS#11 2.40 section 5.7): a new session object like a session object, the
 * template changing only what a copy may change (section 4.4's tables, footnote 8): CKA_PRIVATE,
 * CKA_MODIFIABLE, CKA_LABEL, CKA_ID, and for keys CKA_SENSITIVE FALSE to TRUE and
 * CKA_EXTRACTABLE TRUE to FALSE; any other attribute may be given with the value it has
 * (else CKR_ATTRIBUTE_READ_ONLY). With CKA_TOKEN TRUE a session key's copy is a managed key of
 * the same material, made as an import is. A managed token key keeps one identity: a copy, token or
 * session, would escape its states, rotation, links and audit, so it is CKR_ACTION_PROHIBITED
 * (3.0). Each class copies through its own function (copy_key here, hf_dobj_copy_object for
 * certificate and data objects, token or session: they have no managed identity), the template
 * read by one reader (hf_copy_change_read) with the class's rule for the rest. */
#include "hf-build.h"

#include "internal.h"
#include "object-copy.h"

#include <stdlib.h>

#include "pkcs11/core/crypto.h"
#include "pkcs11/core/secmem.h"

static CK_RV bool_of(const CK_ATTRIBUTE *a, bool *val)
{
    if (a->ulValueLen != sizeof(CK_BBOOL) || !a->pValue) return CKR_ATTRIBUTE_VALUE_INVALID;
    *val = *(const CK_BBOOL *)a->pValue != CK_FALSE;
    return CKR_OK;
}

static CK_RV change_one(const CK_ATTRIBUTE *a, hf_copy_other_fn other, const void *obj,
                        struct hf_copy_change *c)
{
    bool val = false;
    CK_RV rv = CKR_OK;

    switch (a->type) {
    case CKA_LABEL:
    case CKA_ID:
        if (a->ulValueLen > HF_P11_TEXT_MAX) return CKR_ATTRIBUTE_VALUE_INVALID;
        *(a->type == CKA_LABEL ? &c->label : &c->id) = a;
        return CKR_OK;
    case CKA_TOKEN:
        c->has_token = true;
        return bool_of(a, &c->to_token);
    case CKA_PRIVATE:
        c->has_private = true;
        return bool_of(a, &c->is_private);
    case CKA_MODIFIABLE:
        c->has_fixed = true;
        if ((rv = bool_of(a, &val)) == CKR_OK) c->is_fixed = !val;
        return rv;
    }
    return other(obj, a, c);
}

CK_RV hf_copy_change_read(const CK_ATTRIBUTE *t, CK_ULONG n, hf_copy_other_fn other,
                          const void *obj, struct hf_copy_change *c)
{
    CK_RV rv = CKR_OK;

    for (CK_ULONG i = 0; i < n && rv == CKR_OK; i++)
        rv = change_one(&t[i], other, obj, c);
    return rv;
}

/* CKA_SENSITIVE (sensitive TRUE) or CKA_EXTRACTABLE (sensitive FALSE): only toward sealed. */
static CK_RV seal_read(const struct hf_object *obj, const CK_ATTRIBUTE *a, bool sensitive,
                       struct hf_copy_change *c)
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

static CK_RV key_other(const void *arg, const CK_ATTRIBUTE *a, struct hf_copy_change *c)
{
    const struct hf_object *obj = arg;
    bool key_face = obj->kind != HF_OBJ_PUBLIC;

    if (key_face && a->type == CKA_SENSITIVE) return seal_read(obj, a, true, c);
    if (key_face && a->type == CKA_EXTRACTABLE) return seal_read(obj, a, false, c);
    return hf_object_matches(obj, a, 1) ? CKR_OK : CKR_ATTRIBUTE_READ_ONLY;
}

/* The bytes of a template attribute: the change's, else the session object's own. */
static void bytes_attr(CK_ATTRIBUTE *t, CK_ULONG *n, CK_ATTRIBUTE_TYPE type,
                       const CK_ATTRIBUTE *given, unsigned char *own, size_t own_len)
{
    if (given ? given->ulValueLen == 0 : own_len == 0) return;
    t[(*n)++] = given ? *given : (CK_ATTRIBUTE){type, own, own_len};
}

/* The copy as a managed key: the session key's material imported with its label, id, usage
 * and sensitivity (a token key is always private and modifiable). */
static CK_RV copy_to_token(struct hf_session *s, const struct hf_object *obj,
                           const struct hf_copy_change *c, CK_OBJECT_HANDLE *out)
{
    static const struct {
        CK_ATTRIBUTE_TYPE type;
        unsigned long bit;
    } uses[] = {{CKA_ENCRYPT, HF_USAGE_ENCRYPT}, {CKA_DECRYPT, HF_USAGE_DECRYPT},
                {CKA_WRAP, HF_USAGE_WRAP},       {CKA_UNWRAP, HF_USAGE_UNWRAP},
                {CKA_SIGN, HF_USAGE_SIGN},       {CKA_VERIFY, HF_USAGE_VERIFY},
                {CKA_DERIVE, HF_USAGE_DERIVE}};
    static CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    bool exportable = obj->key.exportable && !c->seal;
    CK_ATTRIBUTE t[4 + sizeof(uses) / sizeof(uses[0])];
    struct hf_material *m = NULL;
    unsigned char *bytes = NULL;
    size_t len = 0;
    CK_ULONG n = 0;
    CK_RV rv;

    /* No lone public keys and no fixed keys among managed keys. */
    if (obj->kind == HF_OBJ_PUBLIC || c->is_fixed) return CKR_TEMPLATE_INCONSISTENT;
    if ((rv = hf_session_check_write(s)) != CKR_OK) return rv;
    t[n++] = (CK_ATTRIBUTE){CKA_TOKEN, &yes, 1};
    t[n++] = (CK_ATTRIBUTE){CKA_EXTRACTABLE, exportable ? &yes : &no, 1};
    bytes_attr(t, &n, CKA_LABEL, c->label, obj->sobj->label, obj->sobj->label_len);
    bytes_attr(t, &n, CKA_ID, c->id, obj->sobj->id, obj->sobj->id_len);
    for (size_t i = 0; i < sizeof(uses) / sizeof(uses[0]); i++)
        t[n++] = (CK_ATTRIBUTE){uses[i].type, obj->key.usage & uses[i].bit ? &yes : &no, 1};
    rv = hf_object_material((struct hf_object *)obj, &m);
    if (rv == CKR_OK) rv = hf_material_to_bytes(m, &bytes, &len);
    if (rv == CKR_OK) rv = hf_keygen_import(s, obj->key.alg, obj->key.bits, bytes, len, t, n, out);
    hf_secmem_free(bytes, len);
    hf_material_unref(m);
    return rv;
}

static CK_RV copy_key(struct hf_session *s, const struct hf_object *obj, const CK_ATTRIBUTE *t,
                      CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    struct hf_copy_change c = {0};
    struct hf_object *copy = NULL;
    struct hf_session_attrs *sa;
    CK_RV rv = hf_copy_change_read(t, n, key_other, obj, &c);

    if (rv == CKR_OK && c.to_token) {
        rv = copy_to_token(s, obj, &c, out);
        if (hf_module_audit_object(s->has_ctx ? &s->ctx : NULL, "object.create", obj,
                                   "C_CopyObject token", rv) != CKR_OK &&
            rv == CKR_OK)
            rv = CKR_HF_AUDIT_FAILED;
        return rv;
    }
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
    if (hf_dobj_is_handle(hObject)) {
        rv = hf_dobj_copy_object(s, hObject, pTemplate, ulCount, phNewObject);
        goto done;
    }
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
