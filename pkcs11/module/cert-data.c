/* Certificate (CKO_CERTIFICATE, CKC_X_509) and data (CKO_DATA) objects: what general PKCS#11
 * software keeps beside its keys (a TLS server's certificate, CMS recipients, application data).
 * They are no managed keys: no versions, states, links or material. An object is a bag of
 * attributes, fixed at creation but for CKA_LABEL and CKA_ID. Token objects live in the store
 * (hf_store_object_*, read afresh on every call: nothing here is on a hot path), session objects
 * in a table of this file with the life of session keys (session-objects.c calls the ends).
 *
 * Handles have kind 0 in the low two bits, which no key face uses: (store row id << 2) for a
 * token object, HF_SESSION_HANDLE_BIT | (serial << 2) for a session one. */
#include "hf-build.h"

#include "internal.h"

#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dobj {
    CK_OBJECT_HANDLE handle;
    CK_ATTRIBUTE *attrs; /* values owned; CKA_CLASS, CKA_TOKEN and CKA_PRIVATE always present */
    size_t n;
    CK_SESSION_HANDLE owner; /* session objects: the maker, and who it was for the records */
    char *api, *caller;
};

static struct {
    pthread_mutex_t lock; /* guards objs, n */
    struct dobj **objs;   /* owned, in creation (handle) order */
    size_t n;
} table = {.lock = PTHREAD_MUTEX_INITIALIZER};

static atomic_ulong serial; /* never reset while loaded: a destroyed handle never comes back */

/* ---- the bag of attributes ---------------------------------------------------------------- */

static void dobj_free(struct dobj *d)
{
    if (!d) return;
    for (size_t i = 0; i < d->n; i++)
        free(d->attrs[i].pValue);
    free(d->attrs);
    free(d->api);
    free(d->caller);
    free(d);
}

static CK_ATTRIBUTE *bag_find(const struct dobj *d, CK_ATTRIBUTE_TYPE type)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->attrs[i].type == type) return &d->attrs[i];
    return NULL;
}

/* Sets type to a copy of len bytes at p, replacing an earlier value. */
static CK_RV bag_set(struct dobj *d, CK_ATTRIBUTE_TYPE type, const void *p, size_t len)
{
    CK_ATTRIBUTE *a = bag_find(d, type);
    void *copy = malloc(len ? len : 1);

    if (!copy) return CKR_HOST_MEMORY;
    if (len) memcpy(copy, p, len);
    if (!a) {
        CK_ATTRIBUTE *grown = realloc(d->attrs, (d->n + 1) * sizeof(*grown));
        if (!grown) {
            free(copy);
            return CKR_HOST_MEMORY;
        }
        d->attrs = grown;
        a = &d->attrs[d->n++];
        a->type = type;
    } else {
        free(a->pValue);
    }
    a->pValue = copy;
    a->ulValueLen = len;
    return CKR_OK;
}

static CK_RV bag_bool(struct dobj *d, CK_ATTRIBUTE_TYPE type, bool v)
{
    CK_BBOOL b = v ? CK_TRUE : CK_FALSE;
    return bag_set(d, type, &b, sizeof(b));
}

static CK_RV bag_ulong(struct dobj *d, CK_ATTRIBUTE_TYPE type, CK_ULONG v)
{
    return bag_set(d, type, &v, sizeof(v));
}

static bool bag_is_true(const struct dobj *d, CK_ATTRIBUTE_TYPE type)
{
    const CK_ATTRIBUTE *a = bag_find(d, type);
    return a && a->ulValueLen == sizeof(CK_BBOOL) && *(CK_BBOOL *)a->pValue == CK_TRUE;
}

static CK_ULONG bag_ulong_of(const struct dobj *d, CK_ATTRIBUTE_TYPE type)
{
    const CK_ATTRIBUTE *a = bag_find(d, type);
    CK_ULONG v = 0;

    if (a && a->ulValueLen == sizeof(v)) memcpy(&v, a->pValue, sizeof(v));
    return v;
}

static CK_RV dobj_copy(const struct dobj *d, struct dobj **out)
{
    struct dobj *c = calloc(1, sizeof(*c));
    CK_RV rv = c ? CKR_OK : CKR_HOST_MEMORY;

    for (size_t i = 0; i < d->n && rv == CKR_OK; i++)
        rv = bag_set(c, d->attrs[i].type, d->attrs[i].pValue, d->attrs[i].ulValueLen);
    if (rv == CKR_OK) {
        c->handle = d->handle;
        c->owner = d->owner;
        c->api = d->api ? strdup(d->api) : NULL;
        c->caller = d->caller ? strdup(d->caller) : NULL;
        if ((d->api && !c->api) || (d->caller && !c->caller)) rv = CKR_HOST_MEMORY;
    }
    if (rv != CKR_OK) {
        dobj_free(c);
        return rv;
    }
    *out = c;
    return CKR_OK;
}

/* ---- store encoding: the attributes without a column of their own --------------------------- */

static bool has_column(CK_ATTRIBUTE_TYPE type)
{
    return type == CKA_CLASS || type == CKA_TOKEN || type == CKA_PRIVATE || type == CKA_LABEL ||
           type == CKA_ID || type == CKA_VALUE;
}

static void put_be(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static uint64_t get_be(const unsigned char *p, int bytes)
{
    uint64_t v = 0;

    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    return v;
}

/* type (8 bytes) || length (4) || value, big-endian, for each attribute. */
static CK_RV attrs_encode(const struct dobj *d, unsigned char **out, size_t *len)
{
    size_t need = 0, off = 0;
    unsigned char *buf;

    for (size_t i = 0; i < d->n; i++)
        if (!has_column(d->attrs[i].type)) need += 12 + d->attrs[i].ulValueLen;
    if (!(buf = malloc(need ? need : 1))) return CKR_HOST_MEMORY;
    for (size_t i = 0; i < d->n; i++) {
        if (has_column(d->attrs[i].type)) continue;
        put_be(buf + off, d->attrs[i].type, 8);
        put_be(buf + off + 8, d->attrs[i].ulValueLen, 4);
        memcpy(buf + off + 12, d->attrs[i].pValue, d->attrs[i].ulValueLen);
        off += 12 + d->attrs[i].ulValueLen;
    }
    *out = buf;
    *len = need;
    return CKR_OK;
}

static CK_RV attrs_decode(struct dobj *d, const unsigned char *p, size_t len)
{
    CK_RV rv = CKR_OK;

    while (len > 0 && rv == CKR_OK) {
        size_t n;
        if (len < 12) return CKR_DEVICE_ERROR;
        n = (size_t)get_be(p + 8, 4);
        if (n > len - 12) return CKR_DEVICE_ERROR;
        rv = bag_set(d, (CK_ATTRIBUTE_TYPE)get_be(p, 8), p + 12, n);
        p += 12 + n;
        len -= 12 + n;
    }
    return rv;
}

static CK_RV from_row(const struct hf_store_object *row, struct dobj **out)
{
    struct dobj *d = calloc(1, sizeof(*d));
    CK_RV rv = d ? CKR_OK : CKR_HOST_MEMORY;

    if (rv == CKR_OK) rv = bag_ulong(d, CKA_CLASS, row->cls);
    if (rv == CKR_OK) rv = bag_bool(d, CKA_TOKEN, true);
    if (rv == CKR_OK) rv = bag_bool(d, CKA_PRIVATE, row->is_private);
    if (rv == CKR_OK) rv = bag_set(d, CKA_LABEL, row->label, row->label_len);
    if (rv == CKR_OK) rv = bag_set(d, CKA_ID, row->ckaid, row->ckaid_len);
    if (rv == CKR_OK) rv = bag_set(d, CKA_VALUE, row->value, row->value_len);
    if (rv == CKR_OK) rv = attrs_decode(d, row->attrs, row->attrs_len);
    if (rv != CKR_OK) {
        if (rv == CKR_DEVICE_ERROR)
            hf_log_error("store: object %lld is corrupt", (long long)row->id);
        dobj_free(d);
        return rv;
    }
    d->handle = HF_HANDLE(row->id, 0);
    *out = d;
    return CKR_OK;
}

static CK_RV to_row(const struct dobj *d, struct hf_store_object *row)
{
    const CK_ATTRIBUTE *l = bag_find(d, CKA_LABEL), *i = bag_find(d, CKA_ID),
                       *v = bag_find(d, CKA_VALUE);

    memset(row, 0, sizeof(*row));
    row->id = HF_HANDLE_VERSION_ID(d->handle);
    row->cls = bag_ulong_of(d, CKA_CLASS);
    row->is_private = bag_is_true(d, CKA_PRIVATE);
    row->label = l ? l->pValue : NULL;
    row->label_len = l ? l->ulValueLen : 0;
    row->ckaid = i ? i->pValue : NULL;
    row->ckaid_len = i ? i->ulValueLen : 0;
    row->value = v ? v->pValue : NULL;
    row->value_len = v ? v->ulValueLen : 0;
    row->created = hf_now();
    return attrs_encode(d, &row->attrs, &row->attrs_len);
}

/* ---- records ---------------------------------------------------------------------------- */

/* As the records of session keys, naming the object by handle and class. */
static CK_RV record(const HF_REQUEST_CONTEXT *ctx, const char *operation, const struct dobj *d,
                    const char *detail, CK_RV result)
{
    char key[40];
    bool token = bag_is_true(d, CKA_TOKEN);
    bool cert = bag_ulong_of(d, CKA_CLASS) == CKO_CERTIFICATE;

    snprintf(key, sizeof(key), "%s:0x%lx", token ? "object" : "session", (unsigned long)d->handle);
    return hf_module_audit_item(ctx, operation, key,
                                cert ? (token ? "token certificate" : "session certificate")
                                     : (token ? "token data" : "session data"),
                                detail, result);
}

static CK_RV record_end(const struct dobj *d, const char *why)
{
    HF_REQUEST_CONTEXT maker = {.api = d->api, .caller = d->caller};
    return record(&maker, "object.destroy", d, why, CKR_OK);
}

/* ---- templates -------------------------------------------------------------------------- */

static bool is_bool_type(CK_ATTRIBUTE_TYPE t)
{
    return t == CKA_TOKEN || t == CKA_PRIVATE || t == CKA_MODIFIABLE || t == CKA_TRUSTED;
}

/* What a caller may give at creation, by class (PKCS#11 2.40 sections 4.4, 4.5, 4.6). */
static bool is_allowed(CK_OBJECT_CLASS cls, CK_ATTRIBUTE_TYPE t)
{
    switch (t) {
    case CKA_CLASS:
    case CKA_TOKEN:
    case CKA_PRIVATE:
    case CKA_MODIFIABLE:
    case CKA_LABEL:
    case CKA_VALUE:
        return true;
    case CKA_APPLICATION:
    case CKA_OBJECT_ID:
        return cls == CKO_DATA;
    case CKA_ID:
    case CKA_CERTIFICATE_TYPE:
    case CKA_SUBJECT:
    case CKA_ISSUER:
    case CKA_SERIAL_NUMBER:
    case CKA_TRUSTED:
    case CKA_CERTIFICATE_CATEGORY:
    case CKA_CHECK_VALUE:
    case CKA_START_DATE:
    case CKA_END_DATE:
        return cls == CKO_CERTIFICATE;
    }
    return false;
}

/* The template's own values, checked for type and size, into d. */
static CK_RV tmpl_take(struct dobj *d, CK_OBJECT_CLASS cls, const CK_ATTRIBUTE *t, CK_ULONG n)
{
    for (CK_ULONG i = 0; i < n; i++) {
        CK_ATTRIBUTE_TYPE type = t[i].type;
        size_t len = t[i].ulValueLen;
        CK_RV rv;

        if (!is_allowed(cls, type)) return CKR_ATTRIBUTE_TYPE_INVALID;
        if (is_bool_type(type) && len != sizeof(CK_BBOOL)) return CKR_ATTRIBUTE_VALUE_INVALID;
        if ((type == CKA_CLASS || type == CKA_CERTIFICATE_TYPE ||
             type == CKA_CERTIFICATE_CATEGORY) &&
            len != sizeof(CK_ULONG))
            return CKR_ATTRIBUTE_VALUE_INVALID;
        if ((type == CKA_LABEL || type == CKA_ID) && len > HF_P11_TEXT_MAX)
            return CKR_ATTRIBUTE_VALUE_INVALID;
        if ((type == CKA_START_DATE || type == CKA_END_DATE) && len != 0 && len != sizeof(CK_DATE))
            return CKR_ATTRIBUTE_VALUE_INVALID;
        if (len > HF_DOBJ_VALUE_MAX) return CKR_ATTRIBUTE_VALUE_INVALID;
        if ((rv = bag_set(d, type, t[i].pValue, len)) != CKR_OK) return rv;
    }
    return CKR_OK;
}

/* Sets type to the value the certificate says, refusing a template value that differs. */
static CK_RV cert_derived(struct dobj *d, CK_ATTRIBUTE_TYPE type, const unsigned char *der, int len)
{
    const CK_ATTRIBUTE *given = bag_find(d, type);

    if (len <= 0) return CKR_ATTRIBUTE_VALUE_INVALID;
    if (given && (given->ulValueLen != (size_t)len || memcmp(given->pValue, der, (size_t)len)))
        return CKR_ATTRIBUTE_VALUE_INVALID;
    return bag_set(d, type, der, (size_t)len);
}

/* CKA_SUBJECT, CKA_ISSUER, CKA_SERIAL_NUMBER (DER, as OpenSSL reads them from the certificate)
 * and CKA_CHECK_VALUE (the first 3 bytes of the value's SHA-1, PKCS#11 2.40 section 4.6.3). */
static CK_RV cert_complete(struct dobj *d)
{
    const CK_ATTRIBUTE *v = bag_find(d, CKA_VALUE);
    /* The value's bytes, not v: bag_set below may move the attribute array. */
    const unsigned char *der = v ? v->pValue : NULL, *p = der;
    size_t der_len = v ? v->ulValueLen : 0;
    unsigned char *subj = NULL, *iss = NULL, *ser = NULL, md[EVP_MAX_MD_SIZE];
    int subj_len, iss_len, ser_len;
    unsigned md_len = 0;
    X509 *x = NULL;
    CK_RV rv = CKR_ATTRIBUTE_VALUE_INVALID;

    if (!bag_find(d, CKA_CERTIFICATE_TYPE) || der_len == 0) return CKR_TEMPLATE_INCOMPLETE;
    if (bag_ulong_of(d, CKA_CERTIFICATE_TYPE) != CKC_X_509) return CKR_ATTRIBUTE_VALUE_INVALID;
    if (bag_ulong_of(d, CKA_CERTIFICATE_CATEGORY) > 3) return CKR_ATTRIBUTE_VALUE_INVALID;
    /* Only the SO may vouch for a certificate (section 4.6.2); there is no SO use for it here. */
    if (bag_is_true(d, CKA_TRUSTED)) return CKR_ATTRIBUTE_READ_ONLY;
    x = d2i_X509(NULL, &p, (long)der_len);
    if (!x || p != der + der_len) goto done;
    subj_len = i2d_X509_NAME(X509_get_subject_name(x), &subj);
    iss_len = i2d_X509_NAME(X509_get_issuer_name(x), &iss);
    ser_len = i2d_ASN1_INTEGER(X509_get0_serialNumber(x), &ser);
    rv = cert_derived(d, CKA_SUBJECT, subj, subj_len);
    if (rv == CKR_OK) rv = cert_derived(d, CKA_ISSUER, iss, iss_len);
    if (rv == CKR_OK) rv = cert_derived(d, CKA_SERIAL_NUMBER, ser, ser_len);
    if (rv == CKR_OK && !EVP_Digest(der, der_len, md, &md_len, EVP_sha1(), NULL))
        rv = CKR_GENERAL_ERROR;
    if (rv == CKR_OK) rv = cert_derived(d, CKA_CHECK_VALUE, md, 3);
    if (rv == CKR_OK && !bag_find(d, CKA_TRUSTED)) rv = bag_bool(d, CKA_TRUSTED, false);
    if (rv == CKR_OK && !bag_find(d, CKA_CERTIFICATE_CATEGORY))
        rv = bag_ulong(d, CKA_CERTIFICATE_CATEGORY, 0);
    if (rv == CKR_OK && !bag_find(d, CKA_START_DATE)) rv = bag_set(d, CKA_START_DATE, NULL, 0);
    if (rv == CKR_OK && !bag_find(d, CKA_END_DATE)) rv = bag_set(d, CKA_END_DATE, NULL, 0);
done:
    OPENSSL_free(subj);
    OPENSSL_free(iss);
    OPENSSL_free(ser);
    X509_free(x);
    return rv;
}

static CK_RV data_complete(struct dobj *d)
{
    const CK_ATTRIBUTE *oid = bag_find(d, CKA_OBJECT_ID);
    CK_RV rv = CKR_OK;

    if (oid && oid->ulValueLen) {
        const unsigned char *p = oid->pValue;
        ASN1_OBJECT *o = d2i_ASN1_OBJECT(NULL, &p, (long)oid->ulValueLen);
        bool whole = o && p == (const unsigned char *)oid->pValue + oid->ulValueLen;
        ASN1_OBJECT_free(o);
        if (!whole) return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    if (!bag_find(d, CKA_APPLICATION)) rv = bag_set(d, CKA_APPLICATION, NULL, 0);
    if (rv == CKR_OK && !oid) rv = bag_set(d, CKA_OBJECT_ID, NULL, 0);
    if (rv == CKR_OK && !bag_find(d, CKA_VALUE)) rv = bag_set(d, CKA_VALUE, NULL, 0);
    return rv;
}

/* The object a creation template describes. An absent CKA_TOKEN means a token object, as for
 * keys; CKA_PRIVATE's default is the token's choice (section 4.4): FALSE for a certificate
 * (public by nature), TRUE for data (an application's data may be anything). */
static CK_RV from_template(CK_OBJECT_CLASS cls, const CK_ATTRIBUTE *t, CK_ULONG n,
                           struct dobj **out)
{
    struct dobj *d = calloc(1, sizeof(*d));
    CK_RV rv = d ? tmpl_take(d, cls, t, n) : CKR_HOST_MEMORY;

    if (rv == CKR_OK && !bag_find(d, CKA_TOKEN)) rv = bag_bool(d, CKA_TOKEN, true);
    if (rv == CKR_OK && !bag_find(d, CKA_PRIVATE)) rv = bag_bool(d, CKA_PRIVATE, cls == CKO_DATA);
    if (rv == CKR_OK && !bag_find(d, CKA_MODIFIABLE)) rv = bag_bool(d, CKA_MODIFIABLE, true);
    if (rv == CKR_OK && !bag_find(d, CKA_LABEL)) rv = bag_set(d, CKA_LABEL, NULL, 0);
    if (rv == CKR_OK && cls == CKO_CERTIFICATE && !bag_find(d, CKA_ID))
        rv = bag_set(d, CKA_ID, NULL, 0);
    if (rv == CKR_OK) rv = cls == CKO_CERTIFICATE ? cert_complete(d) : data_complete(d);
    if (rv != CKR_OK) {
        dobj_free(d);
        return rv;
    }
    *out = d;
    return CKR_OK;
}

/* ---- lookup --------------------------------------------------------------------------------- */

static bool is_visible(const struct dobj *d)
{
    return !bag_is_true(d, CKA_PRIVATE) || atomic_load(&hf_mod.login) == HF_LOGIN_USER;
}

static size_t table_index(CK_OBJECT_HANDLE h, bool *found)
{
    size_t i = 0;

    while (i < table.n && table.objs[i]->handle != h)
        i++;
    *found = i < table.n;
    return i;
}

/* A copy of the visible object behind h (the caller's to free). */
static CK_RV dobj_get(CK_OBJECT_HANDLE h, struct dobj **out)
{
    struct hf_store_object row = {0};
    struct dobj *d = NULL;
    CK_RV rv;

    if (HF_HANDLE_IS_SESSION(h)) {
        bool found;
        pthread_mutex_lock(&table.lock);
        size_t i = table_index(h, &found);
        rv = found ? dobj_copy(table.objs[i], &d) : CKR_OBJECT_HANDLE_INVALID;
        pthread_mutex_unlock(&table.lock);
    } else {
        rv = hf_store_object_get(hf_core_store(hf_mod.core), HF_HANDLE_VERSION_ID(h), &row);
        if (rv == CKR_KEY_HANDLE_INVALID) rv = CKR_OBJECT_HANDLE_INVALID;
        if (rv == CKR_OK) rv = from_row(&row, &d);
        hf_store_object_clear(&row);
    }
    if (rv == CKR_OK && !is_visible(d)) rv = CKR_OBJECT_HANDLE_INVALID;
    if (rv != CKR_OK) {
        dobj_free(d);
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

static CK_RV token_add(struct dobj *d)
{
    struct hf_store_object row;
    CK_RV rv = to_row(d, &row);

    if (rv == CKR_OK) rv = hf_store_object_insert(hf_core_store(hf_mod.core), &row);
    if (rv == CKR_OK) d->handle = HF_HANDLE(row.id, 0);
    free(row.attrs);
    return rv;
}

/* A private one needs the user logged in, checked under the table's lock so that a logout in
 * between cannot leave it behind. Takes d over on success. */
static CK_RV session_add(struct hf_session *s, struct dobj *d)
{
    const HF_REQUEST_CONTEXT *ctx = s->has_ctx ? &s->ctx : NULL;
    unsigned long n = atomic_fetch_add(&serial, 1) + 1;
    struct dobj **grown;
    CK_RV rv = CKR_OK;

    if (n >= (HF_SESSION_HANDLE_BIT >> 2)) return CKR_HOST_MEMORY;
    d->handle = HF_SESSION_HANDLE_BIT | ((CK_OBJECT_HANDLE)n << 2);
    d->owner = s->handle;
    if (ctx && ctx->api && !(d->api = strdup(ctx->api))) return CKR_HOST_MEMORY;
    if (ctx && ctx->caller && !(d->caller = strdup(ctx->caller))) return CKR_HOST_MEMORY;
    pthread_mutex_lock(&table.lock);
    if (bag_is_true(d, CKA_PRIVATE) && atomic_load(&hf_mod.login) != HF_LOGIN_USER)
        rv = CKR_USER_NOT_LOGGED_IN;
    else if (!(grown = realloc(table.objs, (table.n + 1) * sizeof(*grown))))
        rv = CKR_HOST_MEMORY;
    else
        (table.objs = grown)[table.n++] = d;
    pthread_mutex_unlock(&table.lock);
    return rv;
}

/* Removes h from wherever it lives; *gone (may be NULL) gets the session object taken out. */
static CK_RV dobj_remove(CK_OBJECT_HANDLE h, struct dobj **gone)
{
    struct dobj *d = NULL;
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
        dobj_free(d);
    return found ? CKR_OK : CKR_OBJECT_HANDLE_INVALID;
}

static void detail_of(const struct dobj *d, char *buf, size_t len)
{
    const CK_ATTRIBUTE *id = bag_find(d, CKA_ID);
    char hex[2 * 32 + 1] = "";

    if (id) hf_p11_hex(id->pValue, id->ulValueLen < 32 ? id->ulValueLen : 32, hex);
    snprintf(buf, len, "%s private=%s id=%s size=%lu",
             bag_ulong_of(d, CKA_CLASS) == CKO_CERTIFICATE ? "CKO_CERTIFICATE" : "CKO_DATA",
             bag_is_true(d, CKA_PRIVATE) ? "true" : "false", hex,
             (unsigned long)bag_find(d, CKA_VALUE)->ulValueLen);
}

CK_RV hf_dobj_create(struct hf_session *s, const CK_ATTRIBUTE *t, CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    const HF_REQUEST_CONTEXT *ctx = s->has_ctx ? &s->ctx : NULL;
    CK_OBJECT_CLASS cls = CKO_DATA;
    struct dobj *d = NULL;
    char detail[128];
    bool token;
    CK_RV rv;

    memcpy(&cls, hf_tmpl_find(t, n, CKA_CLASS)->pValue, sizeof(cls));
    if ((rv = from_template(cls, t, n, &d)) != CKR_OK) return rv;
    token = bag_is_true(d, CKA_TOKEN);
    /* Token objects need a R/W session and the user; session ones any session (section 4.4),
     * the private ones the user. */
    if (token && (rv = hf_session_check_write(s)) != CKR_OK) goto done;
    rv = token ? token_add(d) : session_add(s, d);
    detail_of(d, detail, sizeof(detail));
    if (record(ctx, "object.create", d, detail, rv) != CKR_OK && rv == CKR_OK) {
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
    dobj_free(d);
    return rv;
}

/* ---- the entry points' work --------------------------------------------------------------- */

CK_RV hf_dobj_attrs_get(CK_OBJECT_HANDLE h, CK_ATTRIBUTE *t, CK_ULONG n)
{
    struct dobj *d = NULL;
    CK_RV rv = dobj_get(h, &d);

    for (CK_ULONG i = 0; i < n && d; i++) {
        const CK_ATTRIBUTE *a = bag_find(d, t[i].type);
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
    dobj_free(d);
    return rv;
}

CK_RV hf_dobj_size(CK_OBJECT_HANDLE h, CK_ULONG *size)
{
    struct dobj *d = NULL;
    CK_RV rv = dobj_get(h, &d);

    if (rv != CKR_OK) return rv;
    *size = 0;
    for (size_t i = 0; i < d->n; i++)
        *size += sizeof(CK_ATTRIBUTE) + d->attrs[i].ulValueLen;
    dobj_free(d);
    return CKR_OK;
}

/* CKA_LABEL and CKA_ID only, unless CKA_MODIFIABLE is FALSE (section 4.4: read-only then). */
static CK_RV change_take(struct dobj *d, const CK_ATTRIBUTE *t, CK_ULONG n)
{
    bool modifiable = bag_is_true(d, CKA_MODIFIABLE);

    for (CK_ULONG i = 0; i < n; i++) {
        CK_RV rv;
        if (!bag_find(d, t[i].type)) return CKR_ATTRIBUTE_TYPE_INVALID;
        if (!modifiable || (t[i].type != CKA_LABEL && t[i].type != CKA_ID))
            return CKR_ATTRIBUTE_READ_ONLY;
        if (t[i].ulValueLen > HF_P11_TEXT_MAX) return CKR_ATTRIBUTE_VALUE_INVALID;
        if ((rv = bag_set(d, t[i].type, t[i].pValue, t[i].ulValueLen)) != CKR_OK) return rv;
    }
    return CKR_OK;
}

static CK_RV session_replace(struct dobj *d)
{
    bool found;

    pthread_mutex_lock(&table.lock);
    size_t i = table_index(d->handle, &found);
    if (found) {
        dobj_free(table.objs[i]);
        table.objs[i] = d;
    }
    pthread_mutex_unlock(&table.lock);
    return found ? CKR_OK : CKR_OBJECT_HANDLE_INVALID;
}

CK_RV hf_dobj_attrs_set(struct hf_session *s, CK_OBJECT_HANDLE h, const CK_ATTRIBUTE *t, CK_ULONG n)
{
    struct hf_store_object row = {0};
    struct dobj *d = NULL;
    CK_RV rv = dobj_get(h, &d);

    if (rv == CKR_OK && bag_is_true(d, CKA_TOKEN)) rv = hf_session_check_write(s);
    if (rv == CKR_OK) rv = change_take(d, t, n);
    if (rv == CKR_OK && !bag_is_true(d, CKA_TOKEN)) {
        rv = session_replace(d);
        if (rv == CKR_OK) d = NULL;
    } else if (rv == CKR_OK) {
        rv = to_row(d, &row);
        if (rv == CKR_OK) rv = hf_store_object_update(hf_core_store(hf_mod.core), &row);
        if (rv == CKR_KEY_HANDLE_INVALID) rv = CKR_OBJECT_HANDLE_INVALID;
        free(row.attrs);
    }
    dobj_free(d);
    return rv;
}

CK_RV hf_dobj_destroy(struct hf_session *s, CK_OBJECT_HANDLE h)
{
    struct dobj *d = NULL, *gone = NULL;
    CK_RV rv = dobj_get(h, &d);

    if (rv == CKR_OK && bag_is_true(d, CKA_TOKEN)) rv = hf_session_check_write(s);
    if (rv != CKR_OK) goto done;
    rv = dobj_remove(h, &gone);
    if (rv == CKR_OK && s->has_ctx)
        rv = record(&s->ctx, "object.destroy", d, "C_DestroyObject", CKR_OK);
    else if (rv == CKR_OK && gone)
        rv = record_end(gone, "C_DestroyObject");
    else if (rv == CKR_OK)
        rv = record(NULL, "object.destroy", d, "C_DestroyObject", CKR_OK);
done:
    dobj_free(gone);
    dobj_free(d);
    return rv;
}

/* ---- finding -------------------------------------------------------------------------------- */

static bool dobj_matches(const struct dobj *d, const CK_ATTRIBUTE *t, CK_ULONG n)
{
    if (!is_visible(d)) return false;
    for (CK_ULONG i = 0; i < n; i++) {
        const CK_ATTRIBUTE *a = bag_find(d, t[i].type);
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
        struct dobj *d = NULL;
        if (rv == CKR_OK && from_row(&rows[i], &d) == CKR_OK && dobj_matches(d, t, n))
            rv = push(arg, d->handle);
        dobj_free(d);
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

static bool is_owned_by(const struct dobj *d, CK_SESSION_HANDLE owner)
{
    return d->owner == owner;
}

static bool is_private(const struct dobj *d, CK_SESSION_HANDLE owner)
{
    (void)owner;
    return bag_is_true(d, CKA_PRIVATE);
}

static bool is_any(const struct dobj *d, CK_SESSION_HANDLE owner)
{
    (void)d, (void)owner;
    return true;
}

/* Takes what pick chooses out of the table; records (unless why is NULL) after the lock. */
static void table_take(bool (*pick)(const struct dobj *d, CK_SESSION_HANDLE owner),
                       CK_SESSION_HANDLE owner, const char *why)
{
    struct dobj **ended = NULL;
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
        dobj_free(ended[i]);
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
static struct dobj **volatile abandoned;

void hf_dobjs_atfork(void)
{
    pthread_mutex_init(&table.lock, NULL);
    if (table.objs) abandoned = table.objs;
    table.objs = NULL;
    table.n = 0;
}
