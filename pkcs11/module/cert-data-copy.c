/* C_CopyObject of a certificate or data object, token or session, into either (PKCS#11 2.40
 * section 5.7). Such an object has no managed identity (no versions, states or links), so a copy
 * escapes nothing: it is a new object made by the create path (hf_dobj_add) from the original's
 * attributes, the template changing only what section 4.4 lets a copy change (read by
 * hf_copy_change_read, as for keys); any other attribute only with the value it has. */
#include "hf-build.h"

#include "cert-data.h"
#include "object-copy.h"

#include <stdlib.h>
#include <string.h>

/* What the reader leaves: an attribute of the class only with its own value. */
static CK_RV dobj_other(const void *arg, const CK_ATTRIBUTE *a, struct hf_copy_change *c)
{
    const CK_ATTRIBUTE *own = hf_dobj_attr(arg, a->type);

    (void)c;
    if (!own) return CKR_ATTRIBUTE_TYPE_INVALID;
    if (own->ulValueLen != a->ulValueLen ||
        (a->ulValueLen && memcmp(own->pValue, a->pValue, a->ulValueLen) != 0))
        return CKR_ATTRIBUTE_READ_ONLY;
    return CKR_OK;
}

/* The copy: the original's attributes with c's changes, no handle and no maker yet (the create
 * path gives both: the maker is this session's caller, not the original's). */
static CK_RV copy_make(const struct hf_dobj *src, const struct hf_copy_change *c,
                       struct hf_dobj **out)
{
    struct hf_dobj *d = NULL;
    CK_RV rv = hf_dobj_copy(src, &d);

    if (rv != CKR_OK) return rv;
    free(d->api);
    free(d->caller);
    d->api = d->caller = NULL;
    d->handle = CK_INVALID_HANDLE;
    d->owner = CK_INVALID_HANDLE;
    /* An id only where the class has one (a session data object has none). */
    if (c->id && !hf_dobj_attr(d, CKA_ID)) rv = CKR_ATTRIBUTE_TYPE_INVALID;
    if (rv == CKR_OK && c->id) rv = hf_dobj_attr_set(d, CKA_ID, c->id->pValue, c->id->ulValueLen);
    if (rv == CKR_OK && c->label)
        rv = hf_dobj_attr_set(d, CKA_LABEL, c->label->pValue, c->label->ulValueLen);
    if (rv == CKR_OK && c->has_token) rv = hf_dobj_attr_bool(d, CKA_TOKEN, c->to_token);
    if (rv == CKR_OK && c->has_private) rv = hf_dobj_attr_bool(d, CKA_PRIVATE, c->is_private);
    if (rv == CKR_OK && c->has_fixed) rv = hf_dobj_attr_bool(d, CKA_MODIFIABLE, !c->is_fixed);
    if (rv != CKR_OK) {
        hf_dobj_free(d);
        return rv;
    }
    *out = d;
    return CKR_OK;
}

CK_RV hf_dobj_copy_object(struct hf_session *s, CK_OBJECT_HANDLE h, const CK_ATTRIBUTE *t,
                          CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    struct hf_copy_change c = {0};
    struct hf_dobj *src = NULL, *d = NULL;
    CK_RV rv = hf_dobj_get(h, &src);

    if (rv != CKR_OK) return rv;
    rv = hf_copy_change_read(t, n, dobj_other, src, &c);
    if (rv == CKR_OK) rv = copy_make(src, &c, &d);
    /* A token copy: a R/W session and the user, as C_CreateObject (refusals recorded here,
     * naming the original). */
    if (rv == CKR_OK && hf_dobj_is_true(d, CKA_TOKEN)) rv = hf_session_check_write(s);
    if (rv == CKR_OK) {
        rv = hf_dobj_add(s, d, "C_CopyObject", out);
    } else {
        hf_dobj_free(d);
        if (hf_dobj_record(s->has_ctx ? &s->ctx : NULL, "object.create", src, "C_CopyObject", rv) !=
            CKR_OK)
            rv = CKR_HF_AUDIT_FAILED;
    }
    hf_dobj_free(src);
    return rv;
}
