/* URIs the store accepts:
 *   pkcs11:<path>[?<query>]   RFC 7512. Path attributes: token, manufacturer, serial, model,
 *                             library-manufacturer, library-description, library-version,
 *                             slot-description, slot-manufacturer, slot-id, object, id, type.
 *                             Query: pin-value, pin-source (a file, read at once), module-name
 *                             (ignored), module-path (must name the configured module).
 *   holdfast:<key name>[;version=N][;type=private|public]
 *                             Holdfast's own: the key's current version, or version N
 *                             (CKA_HF_VERSION).
 * Values are percent-decoded (RFC 7512 section 2.3). An attribute we do not know in the path is
 * an error, not ignored: a URI that means more than we understand must not match a key. */
#include "hf-build.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "provider/provider.h"

#define PIN_FILE_MAX 256

void hf_uri_free(struct hf_uri *uri)
{
    if (uri == NULL) return;
    OPENSSL_free(uri->token);
    OPENSSL_free(uri->manufacturer);
    OPENSSL_free(uri->serial);
    OPENSSL_free(uri->model);
    OPENSSL_free(uri->lib_manufacturer);
    OPENSSL_free(uri->lib_description);
    OPENSSL_free(uri->lib_version);
    OPENSSL_free(uri->slot_description);
    OPENSSL_free(uri->slot_manufacturer);
    OPENSSL_free(uri->object);
    OPENSSL_free(uri->id);
    if (uri->pin != NULL) OPENSSL_clear_free(uri->pin, strlen(uri->pin));
    OPENSSL_free(uri);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..len) into a new NUL-terminated buffer; *out_len excludes the NUL. NULL
 * on a bad escape or out of memory. */
static unsigned char *pct_decode(const char *s, size_t len, size_t *out_len)
{
    unsigned char *out = OPENSSL_malloc(len + 1);
    size_t n = 0;

    if (out == NULL) return NULL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '%') {
            int hi, lo;
            if (i + 2 >= len) goto bad;
            hi = hexval(s[i + 1]);
            lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0) goto bad;
            out[n++] = (unsigned char)(hi * 16 + lo);
            i += 2;
        } else {
            out[n++] = (unsigned char)s[i];
        }
    }
    out[n] = '\0';
    *out_len = n;
    return out;
bad:
    OPENSSL_free(out);
    return NULL;
}

/* A decoded text value: no NUL inside. */
static char *text_decode(const char *s, size_t len)
{
    size_t n;
    unsigned char *v = pct_decode(s, len, &n);

    if (v != NULL && memchr(v, '\0', n) != NULL) {
        OPENSSL_free(v);
        return NULL;
    }
    return (char *)v;
}

static const struct {
    const char *name;
    size_t offset;
} text_attrs[] = {
    {"token", offsetof(struct hf_uri, token)},
    {"manufacturer", offsetof(struct hf_uri, manufacturer)},
    {"serial", offsetof(struct hf_uri, serial)},
    {"model", offsetof(struct hf_uri, model)},
    {"library-manufacturer", offsetof(struct hf_uri, lib_manufacturer)},
    {"library-description", offsetof(struct hf_uri, lib_description)},
    {"library-version", offsetof(struct hf_uri, lib_version)},
    {"slot-description", offsetof(struct hf_uri, slot_description)},
    {"slot-manufacturer", offsetof(struct hf_uri, slot_manufacturer)},
    {"object", offsetof(struct hf_uri, object)},
};

static const struct {
    const char *name;
    CK_OBJECT_CLASS cls;
} type_names[] = {
    {"private", CKO_PRIVATE_KEY},   {"public", CKO_PUBLIC_KEY}, {"cert", CKO_CERTIFICATE},
    {"secret-key", CKO_SECRET_KEY}, {"data", CKO_DATA},
};

static int set_type(struct hf_uri *uri, const char *v)
{
    for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
        if (strcmp(v, type_names[i].name) == 0) {
            uri->has_class = true;
            uri->cls = type_names[i].cls;
            return 1;
        }
    }
    return 0;
}

static int parse_ulong(const char *v, CK_ULONG *out)
{
    char *end;
    unsigned long n;

    if (v[0] < '0' || v[0] > '9') return 0;
    n = strtoul(v, &end, 10);
    if (*end != '\0') return 0;
    *out = n;
    return 1;
}

/* pin-source: a file path or a file: URI; the PIN is the file's first line. */
static char *pin_from_source(const char *src)
{
    char buf[PIN_FILE_MAX];
    FILE *f;
    char *pin = NULL;

    if (strncmp(src, "file:", 5) == 0) src += 5;
    if ((f = fopen(src, "r")) == NULL) return NULL;
    if (fgets(buf, sizeof(buf), f) != NULL) {
        buf[strcspn(buf, "\r\n")] = '\0';
        pin = OPENSSL_strdup(buf);
    }
    fclose(f);
    OPENSSL_cleanse(buf, sizeof(buf));
    return pin;
}

/* One name=value of a pkcs11: URI. 1, or 0 with why in *err. */
static int pkcs11_attr(struct hf_prov *prov, struct hf_uri *uri, const char *attr, size_t len,
                       bool query, const char **err)
{
    const char *eq = memchr(attr, '=', len);
    size_t nlen;
    char *v = NULL;
    int ok = 0;

    if (eq == NULL) {
        *err = "attribute without '='";
        return 0;
    }
    nlen = (size_t)(eq - attr);
    if (strncmp(attr, "id", nlen) == 0 && nlen == 2 && !query) {
        if (uri->id != NULL) goto dup;
        uri->id = pct_decode(eq + 1, len - nlen - 1, &uri->id_len);
        if (uri->id == NULL) *err = "bad percent-encoding";
        return uri->id != NULL;
    }
    if ((v = text_decode(eq + 1, len - nlen - 1)) == NULL) {
        *err = "bad percent-encoding";
        return 0;
    }
    if (!query) {
        for (size_t i = 0; i < sizeof(text_attrs) / sizeof(text_attrs[0]); i++) {
            char **slot = (char **)((char *)uri + text_attrs[i].offset);
            if (strlen(text_attrs[i].name) != nlen || strncmp(attr, text_attrs[i].name, nlen) != 0)
                continue;
            if (*slot != NULL) goto dup;
            *slot = v;
            return 1;
        }
        if (nlen == 4 && strncmp(attr, "type", 4) == 0) {
            if (uri->has_class) goto dup;
            ok = set_type(uri, v);
            if (!ok) *err = "unknown type";
        } else if (nlen == 7 && strncmp(attr, "slot-id", 7) == 0) {
            if (uri->has_slot_id) goto dup;
            ok = parse_ulong(v, &uri->slot_id);
            uri->has_slot_id = ok;
            if (!ok) *err = "slot-id is not a number";
        } else {
            *err = "unknown path attribute";
        }
        OPENSSL_free(v);
        return ok;
    }
    if (nlen == 9 && strncmp(attr, "pin-value", 9) == 0) {
        if (uri->pin != NULL) goto dup;
        uri->pin = v;
        return 1;
    }
    if (nlen == 10 && strncmp(attr, "pin-source", 10) == 0) {
        if (uri->pin != NULL) goto dup;
        uri->pin = pin_from_source(v);
        ok = uri->pin != NULL;
        if (!ok) *err = "cannot read the pin-source file";
    } else if (nlen == 11 && strncmp(attr, "module-path", 11) == 0) {
        ok = strcmp(v, hf_p11_module_path(prov->p11)) == 0;
        if (!ok) *err = "module-path differs from the configured pkcs11-module-path";
    } else {
        ok = 1; /* module-name and vendor query attributes: RFC 7512 lets us ignore them */
    }
    OPENSSL_free(v);
    return ok;
dup:
    OPENSSL_free(v);
    *err = "attribute given twice";
    return 0;
}

static int parse_pkcs11(struct hf_prov *prov, struct hf_uri *uri, const char *s, const char **err)
{
    const char *q = strchr(s, '?');
    size_t path_len = q != NULL ? (size_t)(q - s) : strlen(s);
    const char *p = s, *end = s + path_len, *next;

    while (p < end) {
        next = memchr(p, ';', (size_t)(end - p));
        if (next == NULL) next = end;
        if (next > p && !pkcs11_attr(prov, uri, p, (size_t)(next - p), false, err)) return 0;
        p = next + 1;
    }
    if (q == NULL) return 1;
    p = q + 1;
    end = p + strlen(p);
    while (p < end) {
        next = memchr(p, '&', (size_t)(end - p));
        if (next == NULL) next = end;
        if (next > p && !pkcs11_attr(prov, uri, p, (size_t)(next - p), true, err)) return 0;
        p = next + 1;
    }
    return 1;
}

static int parse_holdfast(struct hf_uri *uri, const char *s, const char **err)
{
    const char *semi = strchr(s, ';'), *p, *next;
    size_t name_len = semi != NULL ? (size_t)(semi - s) : strlen(s);
    char *v;

    if (name_len == 0) {
        *err = "no key name";
        return 0;
    }
    if ((uri->object = text_decode(s, name_len)) == NULL) {
        *err = "bad percent-encoding";
        return 0;
    }
    for (p = semi; p != NULL; p = next) {
        p++;
        next = strchr(p, ';');
        size_t len = next != NULL ? (size_t)(next - p) : strlen(p);
        int ok = 0;
        if (len > 8 && strncmp(p, "version=", 8) == 0 && !uri->has_version) {
            if ((v = text_decode(p + 8, len - 8)) == NULL) break;
            ok = parse_ulong(v, &uri->version) && uri->version > 0;
            uri->has_version = ok;
        } else if (len > 5 && strncmp(p, "type=", 5) == 0 && !uri->has_class) {
            if ((v = text_decode(p + 5, len - 5)) == NULL) break;
            ok = (strcmp(v, "private") == 0 || strcmp(v, "public") == 0) && set_type(uri, v);
        } else {
            *err = "unknown or repeated attribute (version=N, type=private|public)";
            return 0;
        }
        OPENSSL_free(v);
        if (!ok) {
            *err = "bad version or type";
            return 0;
        }
    }
    if (p != NULL) {
        *err = "bad percent-encoding";
        return 0;
    }
    return 1;
}

int hf_uri_parse(struct hf_prov *prov, const char *text, struct hf_uri **out)
{
    struct hf_uri *uri = OPENSSL_zalloc(sizeof(*uri));
    const char *err = "unknown scheme";
    int ok = 0;

    *out = NULL;
    if (uri == NULL) {
        HF_RAISE_DATA(prov, HF_R_OPENSSL_FAILED, "out of memory");
        return 0;
    }
    if (OPENSSL_strncasecmp(text, "pkcs11:", 7) == 0)
        ok = parse_pkcs11(prov, uri, text + 7, &err);
    else if (OPENSSL_strncasecmp(text, "holdfast:", 9) == 0)
        ok = parse_holdfast(uri, text + 9, &err);
    if (!ok) {
        /* The URI may hold a PIN: name the problem, never echo the URI. */
        HF_RAISE_DATA(prov, HF_R_BAD_URI, "%s", err);
        hf_uri_free(uri);
        return 0;
    }
    *out = uri;
    return 1;
}

/* A URI value against a PKCS#11 blank-padded field. */
static bool field_is(const char *want, const CK_UTF8CHAR *field, size_t size)
{
    size_t n;

    if (want == NULL) return true;
    n = strlen(want);
    if (n > size || memcmp(want, field, n) != 0) return false;
    for (size_t i = n; i < size; i++)
        if (field[i] != ' ') return false;
    return true;
}

bool hf_uri_matches_token(const struct hf_uri *uri, const CK_INFO *lib, CK_SLOT_ID slot,
                          const CK_SLOT_INFO *si, const CK_TOKEN_INFO *ti)
{
    char version[16];

    if (uri->has_slot_id && uri->slot_id != slot) return false;
    if (uri->lib_version != NULL) {
        snprintf(version, sizeof(version), "%u.%u", lib->libraryVersion.major,
                 lib->libraryVersion.minor);
        if (strcmp(uri->lib_version, version) != 0) return false;
    }
    return field_is(uri->lib_manufacturer, lib->manufacturerID, sizeof(lib->manufacturerID)) &&
           field_is(uri->lib_description, lib->libraryDescription,
                    sizeof(lib->libraryDescription)) &&
           field_is(uri->slot_description, si->slotDescription, sizeof(si->slotDescription)) &&
           field_is(uri->slot_manufacturer, si->manufacturerID, sizeof(si->manufacturerID)) &&
           field_is(uri->token, ti->label, sizeof(ti->label)) &&
           field_is(uri->manufacturer, ti->manufacturerID, sizeof(ti->manufacturerID)) &&
           field_is(uri->model, ti->model, sizeof(ti->model)) &&
           field_is(uri->serial, ti->serialNumber, sizeof(ti->serialNumber));
}
