/* Certificate (CKO_CERTIFICATE, CKC_X_509) and data (CKO_DATA) objects: what general PKCS#11
 * software keeps beside its keys (a TLS server's certificate, CMS recipients, application data).
 * They are no managed keys: no versions, states, links or material. An object is a bag of
 * attributes (cert-data-attrs.c), fixed at creation but for CKA_LABEL and CKA_ID. Token objects
 * live in the store (hf_store_object_*, read afresh on every call: nothing here is on a hot path),
 * session objects in a table of this file with the life of session keys (session-objects.c calls
 * the ends).
 *
 * Handles have kind 0 in the low two bits, which no key face uses: (store row id << 2) for a
 * token object, HF_SESSION_HANDLE_BIT | (serial << 2) for a session one. */
#include "hf-build.h"

#include "cert-data.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    pthread_mutex_t lock;  /* guards objs, n */
    struct hf_dobj **objs; /* owned, in creation (handle) order */
    size_t n;
} table = {.lock = PTHREAD_MUTEX_INITIALIZER};

static atomic_ulong serial; /* never reset while loaded: a destroyed handle never comes back */

/* ---- records ---------------------------------------------------------------------------- */

CK_RV hf_dobj_record(const HF_REQUEST_CONTEXT *ctx, const char *operation, const struct hf_dobj *d,
                     const char *detail, CK_RV result)
{
    char key[40];
    bool token = hf_dobj_is_true(d, CKA_TOKEN);
    bool cert = hf_dobj_ulong(d, CKA_CLASS) == CKO_CERTIFICATE;

    snprintf(key, sizeof(key), "%s:0x%lx", token ? "object" : "session", (unsigned long)d->handle);
    return hf_module_audit_item(ctx, operation, key,
                                cert ? (token ? "token certificate" : "session certificate")
                                     : (token ? "token data" : "session data"),
                                detail, result);
}

static CK_RV record_end(const struct hf_dobj *d, const char *why)
{
    HF_REQUEST_CONTEXT maker = {.api = d->api, .caller = d->caller};
    return hf_dobj_record(&maker, "object.destroy", d, why, CKR_OK);
}

/* ---- lookup --------------------------------------------------------------------------------- */

static bool is_visible(const struct hf_dobj *d)
{
    return !hf_dobj_is_true(d, CKA_PRIVATE) || atomic_load(&hf_mod.login) == HF_LOGIN_USER;
}

static size_t table_index(CK_OBJECT_HANDLE h, bool *found)
{
    size_t i = 0;

    while (i < table.n && table.objs[i]->handle != h)
        i++;
    *found = i < table.n;
    return i;
}

CK_RV hf_dobj_get(CK_OBJECT_HANDLE h, struct hf_dobj **out)
{
    struct hf_store_object row = {0};
    struct hf_dobj *d = NULL;
    CK_RV rv;

    if (HF_HANDLE_IS_SESSION(h)) {
        bool found;
        pthread_mutex_lock(&table.lock);
        size_t i = table_index(h, &found);
        rv = found ? hf_dobj_copy(table.objs[i], &d) : CKR_OBJECT_HANDLE_INVALID;
        pthread_mutex_unlock(&table.lock);
    } else {
        rv = hf_store_object_get(hf_core_store(hf_mod.core), HF_HANDLE_VERSION_ID(h), &row);
        if (rv == CKR_KEY_HANDLE_INVALID) rv = CKR_OBJECT_HANDLE_INVALID;
        if (rv == CKR_OK) rv = hf_dobj_from_row(&row, &d);
        hf_store_object_clear(&row);
    }
    if (rv == CKR_OK && !is_visible(d)) rv = CKR_OBJECT_HANDLE_INVALID;
    if (rv != CKR_OK) {
        hf_dobj_free(d);
        return rv;
    }
    *out = d;
    return CKR_OK;
}

bool hf_dobj_is_handle(CK_OBJECT_HANDLE h)
{
    return h != CK_INVALID_HANDLE && HF_HANDLE_KIND(h) == 0;
}

bool hf_dobj_is_template(const CK_ATTRIBUTE *t, CK_ULONG n)
{
    const CK_ATTRIBUTE *a = hf_tmpl_find(t, n, CKA_CLASS);
    CK_OBJECT_CLASS cls;

    if (!a || !a->pValue || a->ulValueLen != sizeof(cls)) return false;
    memcpy(&cls, a->pValue, sizeof(cls));
    return cls == CKO_CERTIFICATE || cls == CKO_DATA;
}

/* ---- creation --------------------------------------------------------------------------- */

static CK_RV token_add(struct hf_dobj *d)
{
    struct hf_store_object row;
    CK_RV rv = hf_dobj_to_row(d, &row);

    if (rv == CKR_OK) rv = hf_store_object_insert(hf_core_store(hf_mod.core), &row);
    if (rv == CKR_OK) d->handle = HF_HANDLE(row.id, 0);
    free(row.attrs);
    return rv;
}

/* A private one needs the user logged in, checked under the table's lock so that a logout in
 * between cannot leave it behind. Takes d over on success. */
static CK_RV session_add(struct hf_session *s, struct hf_dobj *d)
{
    const HF_REQUEST_CONTEXT *ctx = s->has_ctx ? &s->ctx : NULL;
    unsigned long n = atomic_fetch_add(&serial, 1) + 1;
    struct hf_dobj **grown;
    CK_RV rv = CKR_OK;

    if (n >= (HF_SESSION_HANDLE_BIT >> 2)) return CKR_HOST_MEMORY;
    d->handle = HF_SESSION_HANDLE_BIT | ((CK_OBJECT_HANDLE)n << 2);
    d->owner = s->handle;
    if (ctx && ctx->api && !(d->api = strdup(ctx->api))) return CKR_HOST_MEMORY;
    if (ctx && ctx->caller && !(d->caller = strdup(ctx->caller))) return CKR_HOST_MEMORY;
    pthread_mutex_lock(&table.lock);
    if (hf_dobj_is_true(d, CKA_PRIVATE) && atomic_load(&hf_mod.login) != HF_LOGIN_USER)
        rv = CKR_USER_NOT_LOGGED_IN;
    else if (!(grown = realloc(table.objs, (table.n + 1) * sizeof(*grown))))
        rv = CKR_HOST_MEMORY;
    else
        (table.objs = grown)[table.n++] = d;
    pthread_mutex_unlock(&table.lock);
    return rv;
}

/* Removes h from wherever it lives; *gone (may be NULL) gets the session object taken out. */
static CK_RV dobj_remove(CK_OBJECT_HANDLE h, struct hf_dobj **gone)
{
    struct hf_dobj *d = NULL;
    bool found;

    if (!HF_HANDLE_IS_SESSION(h)) {
        CK_RV rv = hf_store_object_delete(hf_core_store(hf_mod.core), HF_HANDLE_VERSION_ID(h));
        return rv == CKR_KEY_HANDLE_INVALID ? CKR_OBJECT_HANDLE_INVALID : rv;
    }
    pthread_mutex_lock(&table.lock);
    size_t i = table_index(h, &found);
    if (found) {
        d = table.objs[i];
        memmove(&table.objs[i], &table.objs[i + 1], (table.n - i - 1) * sizeof(table.objs[0]));
        table.n--;
    }
    pthread_mutex_unlock(&table.lock);
    if (gone)
        *gone = d;
    else
        hf_dobj_free(d);
    return found ? CKR_OK : CKR_OBJECT_HANDLE_INVALID;
}

static void detail_of(const struct hf_dobj *d, char *buf, size_t len)
{
    const CK_ATTRIBUTE *id = hf_dobj_attr(d, CKA_ID);
    char hex[2 * 32 + 1] = "";

    if (id) hf_p11_hex(id->pValue, id->ulValueLen < 32 ? id->ulValueLen : 32, hex);
    snprintf(buf, len, "%s private=%s id=%s size=%lu",
             hf_dobj_ulong(d, CKA_CLASS) == CKO_CERTIFICATE ? "CKO_CERTIFICATE" : "CKO_DATA",
             hf_dobj_is_true(d, CKA_PRIVATE) ? "true" : "false", hex,
             (unsigned long)hf_dobj_attr(d, CKA_VALUE)->ulValueLen);
}

CK_RV hf_dobj_add(struct hf_session *s, struct hf_dobj *d, const char *why, CK_OBJECT_HANDLE *out)
{
    const HF_REQUEST_CONTEXT *ctx = s->has_ctx ? &s->ctx : NULL;
    bool token = hf_dobj_is_true(d, CKA_TOKEN);
    char detail[128];
    size_t len;
    CK_RV rv = CKR_OK;

    /* Token objects need a R/W session and the user; session ones any session (section 4.4),
     * the private ones the user. */
    if (token && (rv = hf_session_check_write(s)) != CKR_OK) goto done;
    rv = token ? token_add(d) : session_add(s, d);
    detail_of(d, detail, sizeof(detail));
    len = strlen(detail);
    if (why) snprintf(detail + len, sizeof(detail) - len, " %s", why);
    if (hf_dobj_record(ctx, "object.create", d, detail, rv) != CKR_OK && rv == CKR_OK) {
        /* Unrecorded, it must not stay. */
        dobj_remove(d->handle, NULL);
        d = token ? d : NULL;
        rv = CKR_HF_AUDIT_FAILED;
        goto done;
    }
    if (rv == CKR_OK) {
        *out = d->handle;
        if (!token) d = NULL; /* the table's now */
    }
done:
    hf_dobj_free(d);
    return rv;
}

CK_RV hf_dobj_create(struct hf_session *s, const CK_ATTRIBUTE *t, CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    CK_OBJECT_CLASS cls = CKO_DATA;
    struct hf_dobj *d = NULL;
    CK_RV rv;

    memcpy(&cls, hf_tmpl_find(t, n, CKA_CLASS)->pValue, sizeof(cls));
    if ((rv = hf_dobj_from_template(cls, t, n, &d)) != CKR_OK) return rv;
    return hf_dobj_add(s, d, NULL, out);
}

/* ---- the entry points' work --------------------------------------------------------------- */

CK_RV hf_dobj_attrs_get(CK_OBJECT_HANDLE h, CK_ATTRIBUTE *t, CK_ULONG n)
{
    struct hf_dobj *d = NULL;
    CK_RV rv = hf_dobj_get(h, &d);

    for (CK_ULONG i = 0; i < n && d; i++) {
        const CK_ATTRIBUTE *a = hf_dobj_attr(d, t[i].type);
        CK_RV r = CKR_OK;
        if (!a)
            r = CKR_ATTRIBUTE_TYPE_INVALID;
        else if (t[i].pValue && t[i].ulValueLen < a->ulValueLen)
            r = CKR_BUFFER_TOO_SMALL;
        else if (t[i].pValue)
            memcpy(t[i].pValue, a->pValue, a->ulValueLen);
        t[i].ulValueLen = r == CKR_OK ? a->ulValueLen : CK_UNAVAILABLE_INFORMATION;
        /* Section 5.7: every attribute is processed, the answer names a problem met. */
        if (r != CKR_OK && rv == CKR_OK) rv = r;
    }
    hf_dobj_free(d);
    return rv;
}

CK_RV hf_dobj_size(CK_OBJECT_HANDLE h, CK_ULONG *size)
{
    struct hf_dobj *d = NULL;
    CK_RV rv = hf_dobj_get(h, &d);

    if (rv != CKR_OK) return rv;
    *size = 0;
    for (size_t i = 0; i < d->n; i++)
        *size += sizeof(CK_ATTRIBUTE) + d->attrs[i].ulValueLen;
    hf_dobj_free(d);
    return CKR_OK;
}

/* CKA_LABEL and CKA_ID only, unless CKA_MODIFIABLE is FALSE (section 4.4: read-only then). */
static CK_RV change_take(struct hf_dobj *d, const CK_ATTRIBUTE *t, CK_ULONG n)
{
    bool modifiable = hf_dobj_is_true(d, CKA_MODIFIABLE);

    for (CK_ULONG i = 0; i < n; i++) {
        CK_RV rv;
        if (!hf_dobj_attr(d, t[i].type)) return CKR_ATTRIBUTE_TYPE_INVALID;
        if (!modifiable || (t[i].type != CKA_LABEL && t[i].type != CKA_ID))
            return CKR_ATTRIBUTE_READ_ONLY;
        if (t[i].ulValueLen > HF_P11_TEXT_MAX) return CKR_ATTRIBUTE_VALUE_INVALID;
        if ((rv = hf_dobj_attr_set(d, t[i].type, t[i].pValue, t[i].ulValueLen)) != CKR_OK)
            return rv;
    }
    return CKR_OK;
}

static CK_RV session_replace(struct hf_dobj *d)
{
    bool found;

    pthread_mutex_lock(&table.lock);
    size_t i = table_index(d->handle, &found);
    if (found) {
        hf_dobj_free(table.objs[i]);
        table.objs[i] = d;
    }
    pthread_mutex_unlock(&table.lock);
    return found ? CKR_OK : CKR_OBJECT_HANDLE_INVALID;
}

CK_RV hf_dobj_attrs_set(struct hf_session *s, CK_OBJECT_HANDLE h, const CK_ATTRIBUTE *t, CK_ULONG n)
{
    struct hf_store_object row = {0};
    struct hf_dobj *d = NULL;
    CK_RV rv = hf_dobj_get(h, &d);

    if (rv == CKR_OK && hf_dobj_is_true(d, CKA_TOKEN)) rv = hf_session_check_write(s);
    if (rv == CKR_OK) rv = change_take(d, t, n);
    if (rv == CKR_OK && !hf_dobj_is_true(d, CKA_TOKEN)) {
        rv = session_replace(d);
        if (rv == CKR_OK) d = NULL;
    } else if (rv == CKR_OK) {
        rv = hf_dobj_to_row(d, &row);
        if (rv == CKR_OK) rv = hf_store_object_update(hf_core_store(hf_mod.core), &row);
        if (rv == CKR_KEY_HANDLE_INVALID) rv = CKR_OBJECT_HANDLE_INVALID;
        free(row.attrs);
    }
    hf_dobj_free(d);
    return rv;
}

CK_RV hf_dobj_destroy(struct hf_session *s, CK_OBJECT_HANDLE h)
{
    struct hf_dobj *d = NULL, *gone = NULL;
    CK_RV rv = hf_dobj_get(h, &d);

    if (rv == CKR_OK && hf_dobj_is_true(d, CKA_TOKEN)) rv = hf_session_check_write(s);
    if (rv != CKR_OK) goto done;
    rv = dobj_remove(h, &gone);
    if (rv == CKR_OK && s->has_ctx)
        rv = hf_dobj_record(&s->ctx, "object.destroy", d, "C_DestroyObject", CKR_OK);
    else if (rv == CKR_OK && gone)
        rv = record_end(gone, "C_DestroyObject");
    else if (rv == CKR_OK)
        rv = hf_dobj_record(NULL, "object.destroy", d, "C_DestroyObject", CKR_OK);
done:
    hf_dobj_free(gone);
    hf_dobj_free(d);
    return rv;
}

/* ---- finding -------------------------------------------------------------------------------- */

static bool dobj_matches(const struct hf_dobj *d, const CK_ATTRIBUTE *t, CK_ULONG n)
{
    if (!is_visible(d)) return false;
    for (CK_ULONG i = 0; i < n; i++) {
        const CK_ATTRIBUTE *a = hf_dobj_attr(d, t[i].type);
        if (!a || a->ulValueLen != t[i].ulValueLen ||
            (a->ulValueLen && memcmp(a->pValue, t[i].pValue, a->ulValueLen) != 0))
            return false;
    }
    return true;
}

static CK_RV token_each(const CK_ATTRIBUTE *t, CK_ULONG n,
                        CK_RV (*push)(void *arg, CK_OBJECT_HANDLE h), void *arg)
{
    struct hf_store_object *rows = NULL;
    size_t count = 0;
    CK_RV rv = hf_store_object_list(hf_core_store(hf_mod.core), &rows, &count);

    for (size_t i = 0; i < count; i++) {
        struct hf_dobj *d = NULL;
        if (rv == CKR_OK && hf_dobj_from_row(&rows[i], &d) == CKR_OK && dobj_matches(d, t, n))
            rv = push(arg, d->handle);
        hf_dobj_free(d);
        hf_store_object_clear(&rows[i]);
    }
    free(rows);
    return rv;
}

CK_RV hf_dobj_find(const CK_ATTRIBUTE *t, CK_ULONG n, bool token, bool session,
                   CK_RV (*push)(void *arg, CK_OBJECT_HANDLE h), void *arg)
{
    CK_RV rv = token ? token_each(t, n, push, arg) : CKR_OK;

    if (rv != CKR_OK || !session) return rv;
    pthread_mutex_lock(&table.lock);
    for (size_t i = 0; i < table.n && rv == CKR_OK; i++)
        if (dobj_matches(table.objs[i], t, n)) rv = push(arg, table.objs[i]->handle);
    pthread_mutex_unlock(&table.lock);
    return rv;
}

/* ---- ends of session objects ------------------------------------------------------------- */

static bool is_owned_by(const struct hf_dobj *d, CK_SESSION_HANDLE owner)
{
    return d->owner == owner;
}

static bool is_private(const struct hf_dobj *d, CK_SESSION_HANDLE owner)
{
    (void)owner;
    return hf_dobj_is_true(d, CKA_PRIVATE);
}

static bool is_any(const struct hf_dobj *d, CK_SESSION_HANDLE owner)
{
    (void)d, (void)owner;
    return true;
}

/* Takes what pick chooses out of the table; records (unless why is NULL) after the lock. */
static void table_take(bool (*pick)(const struct hf_dobj *d, CK_SESSION_HANDLE owner),
                       CK_SESSION_HANDLE owner, const char *why)
{
    struct hf_dobj **ended = NULL;
    size_t n = 0;

    pthread_mutex_lock(&table.lock);
    for (size_t i = 0; i < table.n;) {
        if (!pick(table.objs[i], owner)) {
            i++;
            continue;
        }
        if (!ended && !(ended = malloc(table.n * sizeof(*ended)))) break;
        ended[n++] = table.objs[i];
        memmove(&table.objs[i], &table.objs[i + 1], (table.n - i - 1) * sizeof(table.objs[0]));
        table.n--;
    }
    pthread_mutex_unlock(&table.lock);
    for (size_t i = 0; i < n; i++) {
        if (why) record_end(ended[i], why);
        hf_dobj_free(ended[i]);
    }
    free(ended);
}

void hf_dobjs_close(CK_SESSION_HANDLE owner)
{
    table_take(is_owned_by, owner, "session closed");
}

void hf_dobjs_logout(void)
{
    table_take(is_private, 0, "logout");
}

void hf_dobjs_flush(const char *why)
{
    table_take(is_any, 0, why);
    pthread_mutex_lock(&table.lock);
    free(table.objs);
    table.objs = NULL;
    table.n = 0;
    pthread_mutex_unlock(&table.lock);
}

/* The parent's objects in a forked child: left reachable, never freed (as session keys). */
static struct hf_dobj **volatile abandoned;

void hf_dobjs_atfork(void)
{
    pthread_mutex_init(&table.lock, NULL);
    if (table.objs) abandoned = table.objs;
    table.objs = NULL;
    table.n = 0;
}
