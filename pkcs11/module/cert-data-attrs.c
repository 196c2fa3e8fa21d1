/* Certificate and data objects as attributes (cert-data.h): the bag, the store's encoding of
 * what has no column of its own, and creation templates, whose certificate OpenSSL parses for
 * the attributes it implies (PKCS#11 2.40 sections 4.4 to 4.6). */
#include "hf-build.h"

#include "cert-data.h"

#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>

/* ---- the bag of attributes ---------------------------------------------------------------- */

void hf_dobj_free(struct hf_dobj *d)
{
    if (!d) return;
    for (size_t i = 0; i < d->n; i++)
        free(d->attrs[i].pValue);
    free(d->attrs);
    free(d->api);
    free(d->caller);
    free(d);
}

CK_ATTRIBUTE *hf_dobj_attr(const struct hf_dobj *d, CK_ATTRIBUTE_TYPE type)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->attrs[i].type == type) return &d->attrs[i];
    return NULL;
}

/* Sets type to a copy of len bytes at p, replacing an earlier value. */
CK_RV hf_dobj_attr_set(struct hf_dobj *d, CK_ATTRIBUTE_TYPE type, const void *p, size_t len)
{
    CK_ATTRIBUTE *a = hf_dobj_attr(d, type);
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

CK_RV hf_dobj_attr_bool(struct hf_dobj *d, CK_ATTRIBUTE_TYPE type, bool v)
{
    CK_BBOOL b = v ? CK_TRUE : CK_FALSE;
    return hf_dobj_attr_set(d, type, &b, sizeof(b));
}

CK_RV hf_dobj_attr_ulong(struct hf_dobj *d, CK_ATTRIBUTE_TYPE type, CK_ULONG v)
{
    return hf_dobj_attr_set(d, type, &v, sizeof(v));
}

bool hf_dobj_is_true(const struct hf_dobj *d, CK_ATTRIBUTE_TYPE type)
{
    const CK_ATTRIBUTE *a = hf_dobj_attr(d, type);
    return a && a->ulValueLen == sizeof(CK_BBOOL) && *(CK_BBOOL *)a->pValue == CK_TRUE;
}

CK_ULONG hf_dobj_ulong(const struct hf_dobj *d, CK_ATTRIBUTE_TYPE type)
{
    const CK_ATTRIBUTE *a = hf_dobj_attr(d, type);
    CK_ULONG v = 0;

    if (a && a->ulValueLen == sizeof(v)) memcpy(&v, a->pValue, sizeof(v));
    return v;
}

CK_RV hf_dobj_copy(const struct hf_dobj *d, struct hf_dobj **out)
{
    struct hf_dobj *c = calloc(1, sizeof(*c));
    CK_RV rv = c ? CKR_OK : CKR_HOST_MEMORY;

    for (size_t i = 0; i < d->n && rv == CKR_OK; i++)
        rv = hf_dobj_attr_set(c, d->attrs[i].type, d->attrs[i].pValue, d->attrs[i].ulValueLen);
    if (rv == CKR_OK) {
        c->handle = d->handle;
        c->owner = d->owner;
        c->api = d->api ? strdup(d->api) : NULL;
        c->caller = d->caller ? strdup(d->caller) : NULL;
        if ((d->api && !c->api) || (d->caller && !c->caller)) rv = CKR_HOST_MEMORY;
    }
    if (rv != CKR_OK) {
        hf_dobj_free(c);
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
static CK_RV attrs_encode(const struct hf_dobj *d, unsigned char **out, size_t *len)
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

static CK_RV attrs_decode(struct hf_dobj *d, const unsigned char *p, size_t len)
{
    CK_RV rv = CKR_OK;

    while (len > 0 && rv == CKR_OK) {
        size_t n;
        if (len < 12) return CKR_DEVICE_ERROR;
        n = (size_t)get_be(p + 8, 4);
        if (n > len - 12) return CKR_DEVICE_ERROR;
        rv = hf_dobj_attr_set(d, (CK_ATTRIBUTE_TYPE)get_be(p, 8), p + 12, n);
        p += 12 + n;
        len -= 12 + n;
    }
    return rv;
}

CK_RV hf_dobj_from_row(const struct hf_store_object *row, struct hf_dobj **out)
{
    struct hf_dobj *d = calloc(1, sizeof(*d));
    CK_RV rv = d ? CKR_OK : CKR_HOST_MEMORY;

    if (rv == CKR_OK) rv = hf_dobj_attr_ulong(d, CKA_CLASS, row->cls);
    if (rv == CKR_OK) rv = hf_dobj_attr_bool(d, CKA_TOKEN, true);
    if (rv == CKR_OK) rv = hf_dobj_attr_bool(d, CKA_PRIVATE, row->is_private);
    if (rv == CKR_OK) rv = hf_dobj_attr_set(d, CKA_LABEL, row->label, row->label_len);
    if (rv == CKR_OK) rv = hf_dobj_attr_set(d, CKA_ID, row->ckaid, row->ckaid_len);
    if (rv == CKR_OK) rv = hf_dobj_attr_set(d, CKA_VALUE, row->value, row->value_len);
    if (rv == CKR_OK) rv = attrs_decode(d, row->attrs, row->attrs_len);
    if (rv != CKR_OK) {
        if (rv == CKR_DEVICE_ERROR)
            hf_log_error("store: object %lld is corrupt", (long long)row->id);
        hf_dobj_free(d);
        return rv;
    }
    d->handle = HF_HANDLE(row->id, 0);
    *out = d;
    return CKR_OK;
}

CK_RV hf_dobj_to_row(const struct hf_dobj *d, struct hf_store_object *row)
{
    const CK_ATTRIBUTE *l = hf_dobj_attr(d, CKA_LABEL), *i = hf_dobj_attr(d, CKA_ID),
                       *v = hf_dobj_attr(d, CKA_VALUE);

    memset(row, 0, sizeof(*row));
    row->id = HF_HANDLE_VERSION_ID(d->handle);
    row->cls = hf_dobj_ulong(d, CKA_CLASS);
    row->is_private = hf_dobj_is_true(d, CKA_PRIVATE);
    row->label = l ? l->pValue : NULL;
    row->label_len = l ? l->ulValueLen : 0;
    row->ckaid = i ? i->pValue : NULL;
    row->ckaid_len = i ? i->ulValueLen : 0;
    row->value = v ? v->pValue : NULL;
    row->value_len = v ? v->ulValueLen : 0;
    row->created = hf_now();
    return attrs_encode(d, &row->attrs, &row->attrs_len);
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
static CK_RV tmpl_take(struct hf_dobj *d, CK_OBJECT_CLASS cls, const CK_ATTRIBUTE *t, CK_ULONG n)
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
        if ((rv = hf_dobj_attr_set(d, type, t[i].pValue, len)) != CKR_OK) return rv;
    }
    return CKR_OK;
}

/* Sets type to the value the certificate says, refusing a template value that differs. */
static CK_RV cert_derived(struct hf_dobj *d, CK_ATTRIBUTE_TYPE type, const unsigned char *der,
                          int len)
{
    const CK_ATTRIBUTE *given = hf_dobj_attr(d, type);

    if (len <= 0) return CKR_ATTRIBUTE_VALUE_INVALID;
    if (given && (given->ulValueLen != (size_t)len || memcmp(given->pValue, der, (size_t)len)))
        return CKR_ATTRIBUTE_VALUE_INVALID;
    return hf_dobj_attr_set(d, type, der, (size_t)len);
}

/* CKA_SUBJECT, CKA_ISSUER, CKA_SERIAL_NUMBER (DER, as OpenSSL reads them from the certificate)
 * and CKA_CHECK_VALUE (the first 3 bytes of the value's SHA-1, PKCS#11 2.40 section 4.6.3). */
static CK_RV cert_complete(struct hf_dobj *d)
{
    const CK_ATTRIBUTE *v = hf_dobj_attr(d, CKA_VALUE);
    /* The value's bytes, not v: hf_dobj_attr_set below may move the attribute array. */
    const unsigned char *der = v ? v->pValue : NULL, *p = der;
    size_t der_len = v ? v->ulValueLen : 0;
    unsigned char *subj = NULL, *iss = NULL, *ser = NULL, md[EVP_MAX_MD_SIZE];
    int subj_len, iss_len, ser_len;
    unsigned md_len = 0;
    X509 *x = NULL;
    CK_RV rv = CKR_ATTRIBUTE_VALUE_INVALID;

    if (!hf_dobj_attr(d, CKA_CERTIFICATE_TYPE) || der_len == 0) return CKR_TEMPLATE_INCOMPLETE;
    if (hf_dobj_ulong(d, CKA_CERTIFICATE_TYPE) != CKC_X_509) return CKR_ATTRIBUTE_VALUE_INVALID;
    if (hf_dobj_ulong(d, CKA_CERTIFICATE_CATEGORY) > 3) return CKR_ATTRIBUTE_VALUE_INVALID;
    /* Only the SO may vouch for a certificate (section 4.6.2); there is no SO use for it here. */
    if (hf_dobj_is_true(d, CKA_TRUSTED)) return CKR_ATTRIBUTE_READ_ONLY;
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
    if (rv == CKR_OK && !hf_dobj_attr(d, CKA_TRUSTED))
        rv = hf_dobj_attr_bool(d, CKA_TRUSTED, false);
    if (rv == CKR_OK && !hf_dobj_attr(d, CKA_CERTIFICATE_CATEGORY))
        rv = hf_dobj_attr_ulong(d, CKA_CERTIFICATE_CATEGORY, 0);
    if (rv == CKR_OK && !hf_dobj_attr(d, CKA_START_DATE))
        rv = hf_dobj_attr_set(d, CKA_START_DATE, NULL, 0);
    if (rv == CKR_OK && !hf_dobj_attr(d, CKA_END_DATE))
        rv = hf_dobj_attr_set(d, CKA_END_DATE, NULL, 0);
done:
    OPENSSL_free(subj);
    OPENSSL_free(iss);
    OPENSSL_free(ser);
    X509_free(x);
    return rv;
}

static CK_RV data_complete(struct hf_dobj *d)
{
    const CK_ATTRIBUTE *oid = hf_dobj_attr(d, CKA_OBJECT_ID);
    CK_RV rv = CKR_OK;

    if (oid && oid->ulValueLen) {
        const unsigned char *p = oid->pValue;
        ASN1_OBJECT *o = d2i_ASN1_OBJECT(NULL, &p, (long)oid->ulValueLen);
        bool whole = o && p == (const unsigned char *)oid->pValue + oid->ulValueLen;
        ASN1_OBJECT_free(o);
        if (!whole) return CKR_ATTRIBUTE_VALUE_INVALID;
    }
    if (!hf_dobj_attr(d, CKA_APPLICATION)) rv = hf_dobj_attr_set(d, CKA_APPLICATION, NULL, 0);
    if (rv == CKR_OK && !oid) rv = hf_dobj_attr_set(d, CKA_OBJECT_ID, NULL, 0);
    if (rv == CKR_OK && !hf_dobj_attr(d, CKA_VALUE)) rv = hf_dobj_attr_set(d, CKA_VALUE, NULL, 0);
    return rv;
}

/* The object a creation template describes. An absent CKA_TOKEN means a token object, as for
 * keys; CKA_PRIVATE's default is the token's choice (section 4.4): FALSE for a certificate
 * (public by nature), TRUE for data (an application's data may be anything). */
CK_RV hf_dobj_from_template(CK_OBJECT_CLASS cls, const CK_ATTRIBUTE *t, CK_ULONG n,
                            struct hf_dobj **out)
{
    struct hf_dobj *d = calloc(1, sizeof(*d));
    CK_RV rv = d ? tmpl_take(d, cls, t, n) : CKR_HOST_MEMORY;

    if (rv == CKR_OK && !hf_dobj_attr(d, CKA_TOKEN)) rv = hf_dobj_attr_bool(d, CKA_TOKEN, true);
    if (rv == CKR_OK && !hf_dobj_attr(d, CKA_PRIVATE))
        rv = hf_dobj_attr_bool(d, CKA_PRIVATE, cls == CKO_DATA);
    if (rv == CKR_OK && !hf_dobj_attr(d, CKA_MODIFIABLE))
        rv = hf_dobj_attr_bool(d, CKA_MODIFIABLE, true);
    if (rv == CKR_OK && !hf_dobj_attr(d, CKA_LABEL)) rv = hf_dobj_attr_set(d, CKA_LABEL, NULL, 0);
    if (rv == CKR_OK && cls == CKO_CERTIFICATE && !hf_dobj_attr(d, CKA_ID))
        rv = hf_dobj_attr_set(d, CKA_ID, NULL, 0);
    if (rv == CKR_OK) rv = cls == CKO_CERTIFICATE ? cert_complete(d) : data_complete(d);
    if (rv != CKR_OK) {
        hf_dobj_free(d);
        return rv;
    }
    *out = d;
    return CKR_OK;
}
