/* C_FindObjects*: a snapshot of matching handles taken at C_FindObjectsInit, walking every key
 * version of the store in id order and each version's faces in kind order, then the session
 * objects in the order they were made, so the order is the same on every search (pkcs11-tool picks
 * keys "by index" across several searches). Matching uses the attribute values of attr.c, so a
 * template matches exactly what C_GetAttributeValue would show. */
#include "hf-build.h"

#include "internal.h"

#include <stdlib.h>
#include <string.h>

struct find_ctx {
    const CK_ATTRIBUTE *tmpl;
    CK_ULONG n;
    bool current_only;
    bool id_means_key; /* CKA_ID and no version: a caller's id (p11.id) names the key */
    bool logged_in;
    CK_OBJECT_HANDLE *found;
    size_t found_n, found_cap;
};

/* holdfast.h: a search by CKA_LABEL (the key's name) means the key, so it finds the current
 * version only, unless the template also names a version. */
static bool template_names_version(const CK_ATTRIBUTE *tmpl, CK_ULONG n)
{
    return hf_tmpl_find(tmpl, n, CKA_HF_VERSION) || hf_tmpl_find(tmpl, n, CKA_HF_VERSION_UUID);
}

static bool template_wants_current(const CK_ATTRIBUTE *tmpl, CK_ULONG n)
{
    return hf_tmpl_find(tmpl, n, CKA_LABEL) && !hf_tmpl_find(tmpl, n, CKA_ID) &&
           !template_names_version(tmpl, n);
}

static CK_RV found_push(struct find_ctx *f, CK_OBJECT_HANDLE h)
{
    if (f->found_n == f->found_cap) {
        size_t cap = f->found_cap ? f->found_cap * 2 : 16;
        CK_OBJECT_HANDLE *grown = realloc(f->found, cap * sizeof(*grown));
        if (!grown) return CKR_HOST_MEMORY;
        f->found = grown;
        f->found_cap = cap;
    }
    f->found[f->found_n++] = h;
    return CKR_OK;
}

static CK_RV version_visit(const struct hf_key *key, const struct hf_key_version *v, void *arg)
{
    static const enum hf_object_kind kinds[] = {HF_OBJ_SECRET, HF_OBJ_PRIVATE, HF_OBJ_PUBLIC};
    struct find_ctx *f = arg;
    struct hf_object view = {0};
    CK_RV rv = CKR_OK;

    if (key->state == HF_STATE_DESTROYED || v->state == HF_STATE_DESTROYED) return CKR_OK;
    /* A borrowed view: key and version stay the store's, nothing is freed. */
    view.key = *key;
    view.version = *v;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && rv == CKR_OK; i++) {
        if (hf_object_face_init(&view, kinds[i]) != CKR_OK) continue;
        if (f->current_only && !view.is_current) return CKR_OK;
        /* The caller's id is the key's, shared by its versions: like a label, it means the
         * current one (without p11.id, CKA_ID is a version's UUID and selects that version). */
        if (f->id_means_key && !view.is_current && hf_key_label_get(key, HF_P11_ID)) return CKR_OK;
        if (view.kind != HF_OBJ_PUBLIC && !f->logged_in) continue;
        if (hf_object_matches(&view, f->tmpl, f->n)) rv = found_push(f, view.handle);
    }
    return rv;
}

static CK_RV session_visit(const struct hf_object *obj, void *arg)
{
    struct find_ctx *f = arg;

    if (obj->sobj->is_private && !f->logged_in) return CKR_OK;
    return hf_object_matches(obj, f->tmpl, f->n) ? found_push(f, obj->handle) : CKR_OK;
}

/* Certificates and data (cert-data.c), after the keys. */
static CK_RV dobj_push(void *arg, CK_OBJECT_HANDLE h)
{
    return found_push(arg, h);
}

/* Token objects (the store's, in version order), then session objects (in creation order);
 * CKA_TOKEN in the template spares the walk that cannot match. */
static CK_RV find_all(struct find_ctx *f)
{
    bool present, token = false;
    CK_RV rv = hf_tmpl_bool(f->tmpl, f->n, CKA_TOKEN, &present, &token);

    if (rv != CKR_OK) return rv == CKR_ATTRIBUTE_VALUE_INVALID ? CKR_OK : rv;
    if (!present || token) rv = hf_store_version_each(hf_core_store(hf_mod.core), version_visit, f);
    if (rv == CKR_OK && (!present || !token)) rv = hf_session_objects_each(session_visit, f);
    if (rv == CKR_OK)
        rv = hf_dobj_find(f->tmpl, f->n, !present || token, !present || !token, dobj_push, f);
    return rv;
}

HF_EXPORT CK_RV C_FindObjectsInit(CK_SESSION_HANDLE hSession, CK_ATTRIBUTE_PTR pTemplate,
                                  CK_ULONG ulCount)
{
    struct find_ctx f = {0};
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if ((rv = hf_tmpl_check(pTemplate, ulCount)) != CKR_OK) goto done;
    if (s->find_active) {
        rv = CKR_OPERATION_ACTIVE;
        goto done;
    }
    f.tmpl = pTemplate;
    f.n = ulCount;
    f.current_only = template_wants_current(pTemplate, ulCount);
    f.id_means_key =
        hf_tmpl_find(pTemplate, ulCount, CKA_ID) && !template_names_version(pTemplate, ulCount);
    f.logged_in = atomic_load(&hf_mod.login) == HF_LOGIN_USER;
    rv = find_all(&f);
    if (rv != CKR_OK) {
        free(f.found);
        goto done;
    }
    s->found = f.found;
    s->found_n = f.found_n;
    s->found_pos = 0;
    s->find_active = true;
done:
    hf_session_put(s);
    return rv;
}

HF_EXPORT CK_RV C_FindObjects(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE_PTR phObject,
                              CK_ULONG ulMaxObjectCount, CK_ULONG_PTR pulObjectCount)
{
    struct hf_session *s;
    size_t n;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (!phObject || !pulObjectCount) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    if (!s->find_active) {
        rv = CKR_OPERATION_NOT_INITIALIZED;
        goto done;
    }
    n = s->found_n - s->found_pos;
    if (n > ulMaxObjectCount) n = ulMaxObjectCount;
    if (n) memcpy(phObject, s->found + s->found_pos, n * sizeof(*phObject));
    s->found_pos += n;
    *pulObjectCount = n;
done:
    hf_session_put(s);
    return rv;
}

HF_EXPORT CK_RV C_FindObjectsFinal(CK_SESSION_HANDLE hSession)
{
    struct hf_session *s;
    CK_RV rv = hf_session_get(hSession, &s);

    if (rv != CKR_OK) return rv;
    if (!s->find_active) {
        rv = CKR_OPERATION_NOT_INITIALIZED;
    } else {
        free(s->found);
        s->found = NULL;
        s->found_n = s->found_pos = 0;
        s->find_active = false;
    }
    hf_session_put(s);
    return rv;
}
