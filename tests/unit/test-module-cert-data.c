/* Certificate (CKO_CERTIFICATE, X.509) and data (CKO_DATA) objects through the built
 * holdfast-pkcs11.so: token ones persisted across C_Finalize, session ones in any session; the
 * R/O, R/W and login rules; CKA_SUBJECT, CKA_ISSUER, CKA_SERIAL_NUMBER and CKA_CHECK_VALUE as
 * OpenSSL reads them from the certificate; found by class, label, id, subject, issuer and serial,
 * and value; label and id changed, nothing else; destroyed and audited; bad DER and contradicting
 * templates refused with the exact CKR_; C_CopyObject in each direction, token and session, the
 * copy equal to the original but for what the template may change, refusals with the exact CKR_. */
#include "hf-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include "harness.h"
#include "module-loader.h"

#define SLOT 1
#define RO CKF_SERIAL_SESSION
#define RW (CKF_SERIAL_SESSION | CKF_RW_SESSION)
#define MAX_FOUND 64
#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;
static CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
static CK_OBJECT_CLASS cert_cls = CKO_CERTIFICATE, data_cls = CKO_DATA;
static CK_CERTIFICATE_TYPE x509 = CKC_X_509;

/* A self-signed certificate made by OpenSSL, and its names and serial as DER. */
static unsigned char *cert_der, *subj_der, *iss_der, *serial_der;
static int cert_len, subj_len, iss_len, serial_len;

static CK_SESSION_HANDLE open_session(CK_FLAGS flags)
{
    CK_SESSION_HANDLE s = CK_INVALID_HANDLE;

    CU_ASSERT_EQUAL(p11->C_OpenSession(SLOT, flags, NULL, NULL, &s), CKR_OK);
    return s;
}

static void ensure_login(CK_SESSION_HANDLE s, bool in)
{
    CK_RV rv =
        in ? p11->C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)HF_TEST_USER_PIN, strlen(HF_TEST_USER_PIN))
           : p11->C_Logout(s);

    CU_ASSERT(rv == CKR_OK || rv == (in ? CKR_USER_ALREADY_LOGGED_IN : CKR_USER_NOT_LOGGED_IN));
}

static CK_ULONG find(CK_SESSION_HANDLE s, CK_ATTRIBUTE *t, CK_ULONG n, CK_OBJECT_HANDLE *out)
{
    CK_ULONG count = 0;

    CU_ASSERT_EQUAL_FATAL(p11->C_FindObjectsInit(s, t, n), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_FindObjects(s, out, MAX_FOUND, &count), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_FindObjectsFinal(s), CKR_OK);
    return count;
}

/* Whether exactly h is found by t. */
static bool found_only(CK_SESSION_HANDLE s, CK_ATTRIBUTE *t, CK_ULONG n, CK_OBJECT_HANDLE h)
{
    CK_OBJECT_HANDLE found[MAX_FOUND];

    return find(s, t, n, found) == 1 && found[0] == h;
}

static bool attr_is(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type,
                    const void *want, CK_ULONG want_len)
{
    unsigned char buf[4096];
    CK_ATTRIBUTE a = {type, buf, sizeof(buf)};

    return p11->C_GetAttributeValue(s, h, &a, 1) == CKR_OK && a.ulValueLen == want_len &&
           memcmp(buf, want, want_len) == 0;
}

static bool audit_has(const char *a, const char *b)
{
    char line[4096];
    FILE *f = fopen(env.cfg.audit_path, "r");
    bool found = false;

    if (!f) return false;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, a) && (!b || strstr(line, b));
    fclose(f);
    return found;
}

/* A certificate template: t holds 6. */
static CK_ULONG cert_template(CK_ATTRIBUTE *t, CK_BBOOL *token, const char *label)
{
    CK_ULONG n = 0;

    t[n++] = (CK_ATTRIBUTE){CKA_CLASS, &cert_cls, sizeof(cert_cls)};
    t[n++] = (CK_ATTRIBUTE){CKA_CERTIFICATE_TYPE, &x509, sizeof(x509)};
    t[n++] = (CK_ATTRIBUTE){CKA_VALUE, cert_der, (CK_ULONG)cert_len};
    t[n++] = (CK_ATTRIBUTE){CKA_LABEL, (void *)label, strlen(label)};
    t[n++] = (CK_ATTRIBUTE){CKA_ID, "\x42", 1};
    if (token) t[n++] = (CK_ATTRIBUTE){CKA_TOKEN, token, 1};
    return n;
}

static int make_cert(void)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_NAME *name = X509_NAME_new();
    int ok = key && x && name;

    ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                          (const unsigned char *)"holdfast cert test", -1, -1, 0);
    ok = ok && ASN1_INTEGER_set(X509_get_serialNumber(x), 0x4217) && X509_set_version(x, 2);
    ok = ok && X509_set_subject_name(x, name) && X509_set_issuer_name(x, name);
    ok = ok && X509_gmtime_adj(X509_getm_notBefore(x), 0) &&
         X509_gmtime_adj(X509_getm_notAfter(x), 3600) && X509_set_pubkey(x, key);
    ok = ok && X509_sign(x, key, EVP_sha256()) > 0;
    if (ok) {
        cert_len = i2d_X509(x, &cert_der);
        subj_len = i2d_X509_NAME(X509_get_subject_name(x), &subj_der);
        iss_len = i2d_X509_NAME(X509_get_issuer_name(x), &iss_der);
        serial_len = i2d_ASN1_INTEGER(X509_get_serialNumber(x), &serial_der);
        ok = cert_len > 0 && subj_len > 0 && iss_len > 0 && serial_len > 0;
    }
    X509_NAME_free(name);
    X509_free(x);
    EVP_PKEY_free(key);
    return ok ? 0 : -1;
}

static int suite_init(void)
{
    if (make_cert() != 0) return -1;
    if (hf_test_env_setup(&env, NULL) != 0) return -1;
    if (hf_test_module_load(&mod) != 0) return -1;
    p11 = mod.p11;
    return p11->C_Initialize(NULL) == CKR_OK ? 0 : -1;
}

static int suite_clean(void)
{
    if (p11) p11->C_Finalize(NULL);
    hf_test_module_unload(&mod);
    hf_test_env_teardown(&env);
    OPENSSL_free(cert_der);
    OPENSSL_free(subj_der);
    OPENSSL_free(iss_der);
    OPENSSL_free(serial_der);
    return 0;
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_token_certificate_attributes_and_persistence(void)
{
    CK_SESSION_HANDLE rw = open_session(RW), ro;
    CK_ATTRIBUTE t[6], by_class_label[] = {{CKA_CLASS, &cert_cls, sizeof(cert_cls)},
                                           {CKA_LABEL, "TLS server cert", 15}};
    CK_ATTRIBUTE by_id[] = {{CKA_CLASS, &cert_cls, sizeof(cert_cls)}, {CKA_ID, "\x42", 1}};
    CK_ATTRIBUTE by_subject[] = {{CKA_SUBJECT, NULL, 0}};
    CK_ATTRIBUTE by_issuer_serial[] = {{CKA_ISSUER, NULL, 0}, {CKA_SERIAL_NUMBER, NULL, 0}};
    CK_ATTRIBUTE by_value[] = {{CKA_VALUE, NULL, 0}};
    unsigned char sha[SHA_DIGEST_LENGTH];
    CK_OBJECT_HANDLE h = 0;
    CK_ULONG size = 0, category = 0;
    char key[48];

    by_subject[0].pValue = subj_der;
    by_subject[0].ulValueLen = (CK_ULONG)subj_len;
    by_issuer_serial[0] = (CK_ATTRIBUTE){CKA_ISSUER, iss_der, (CK_ULONG)iss_len};
    by_issuer_serial[1] = (CK_ATTRIBUTE){CKA_SERIAL_NUMBER, serial_der, (CK_ULONG)serial_len};
    by_value[0] = (CK_ATTRIBUTE){CKA_VALUE, cert_der, (CK_ULONG)cert_len};
    ensure_login(rw, true);
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(rw, t, cert_template(t, NULL, "TLS server cert"), &h),
                          CKR_OK);
    CU_ASSERT_TRUE(attr_is(rw, h, CKA_SUBJECT, subj_der, (CK_ULONG)subj_len));
    CU_ASSERT_TRUE(attr_is(rw, h, CKA_ISSUER, iss_der, (CK_ULONG)iss_len));
    CU_ASSERT_TRUE(attr_is(rw, h, CKA_SERIAL_NUMBER, serial_der, (CK_ULONG)serial_len));
    CU_ASSERT_TRUE(attr_is(rw, h, CKA_VALUE, cert_der, (CK_ULONG)cert_len));
    SHA1(cert_der, (size_t)cert_len, sha);
    CU_ASSERT_TRUE(attr_is(rw, h, CKA_CHECK_VALUE, sha, 3));
    CU_ASSERT_TRUE(attr_is(rw, h, CKA_TOKEN, &yes, 1));
    CU_ASSERT_TRUE(attr_is(rw, h, CKA_PRIVATE, &no, 1));
    CU_ASSERT_TRUE(attr_is(rw, h, CKA_TRUSTED, &no, 1));
    CU_ASSERT_TRUE(attr_is(rw, h, CKA_MODIFIABLE, &yes, 1));
    CU_ASSERT_TRUE(attr_is(rw, h, CKA_CERTIFICATE_TYPE, &x509, sizeof(x509)));
    CU_ASSERT_TRUE(attr_is(rw, h, CKA_CERTIFICATE_CATEGORY, &category, sizeof(category)));
    CU_ASSERT_TRUE(attr_is(rw, h, CKA_START_DATE, "", 0));
    snprintf(key, sizeof(key), "\"key\":\"object:0x%lx\"", (unsigned long)h);
    CU_ASSERT_TRUE(audit_has("\"op\":\"object.create\"", key));
    CU_ASSERT_EQUAL(p11->C_GetObjectSize(rw, h, &size), CKR_OK);
    CU_ASSERT_TRUE(size > (CK_ULONG)cert_len);

    /* Persisted: another load of the module, a R/O session, nobody logged in. */
    CU_ASSERT_EQUAL(p11->C_Finalize(NULL), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_Initialize(NULL), CKR_OK);
    ro = open_session(RO);
    CU_ASSERT_TRUE(found_only(ro, by_class_label, N(by_class_label), h));
    CU_ASSERT_TRUE(found_only(ro, by_id, N(by_id), h));
    CU_ASSERT_TRUE(found_only(ro, by_subject, N(by_subject), h));
    CU_ASSERT_TRUE(found_only(ro, by_issuer_serial, N(by_issuer_serial), h));
    CU_ASSERT_TRUE(found_only(ro, by_value, N(by_value), h));
    CU_ASSERT_TRUE(attr_is(ro, h, CKA_VALUE, cert_der, (CK_ULONG)cert_len));

    /* Label and id change (R/W, user), nothing else does. */
    CK_ATTRIBUTE relabel[] = {{CKA_LABEL, "renamed cert", 12}, {CKA_ID, "\x43", 1}};
    CK_ATTRIBUTE revalue[] = {{CKA_VALUE, "x", 1}};
    CK_ATTRIBUTE retype[] = {{CKA_KEY_TYPE, &x509, sizeof(x509)}};
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(ro, h, relabel, N(relabel)), CKR_SESSION_READ_ONLY);
    rw = open_session(RW);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(rw, h, relabel, N(relabel)), CKR_USER_NOT_LOGGED_IN);
    ensure_login(rw, true);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(rw, h, relabel, N(relabel)), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(rw, h, revalue, N(revalue)), CKR_ATTRIBUTE_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(rw, h, retype, N(retype)), CKR_ATTRIBUTE_TYPE_INVALID);
    CU_ASSERT_TRUE(attr_is(ro, h, CKA_LABEL, "renamed cert", 12));
    CU_ASSERT_TRUE(attr_is(ro, h, CKA_ID, "\x43", 1));

    /* Destroyed only from a R/W session with the user. */
    CU_ASSERT_EQUAL(p11->C_DestroyObject(ro, h), CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(rw, h), CKR_OK);
    CU_ASSERT_TRUE(audit_has("\"op\":\"object.destroy\"", key));
    CU_ASSERT_EQUAL(find(ro, by_value, N(by_value), (CK_OBJECT_HANDLE[MAX_FOUND]){0}), 0);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(rw, h), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_CloseAllSessions(SLOT), CKR_OK);
}

static void test_token_objects_need_rw_and_login(void)
{
    CK_SESSION_HANDLE ro = open_session(RO), rw = open_session(RW);
    CK_ATTRIBUTE t[6];
    CK_OBJECT_HANDLE h = 0;

    ensure_login(ro, false);
    CU_ASSERT_EQUAL(p11->C_CreateObject(ro, t, cert_template(t, &yes, "ro"), &h),
                    CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_CreateObject(rw, t, cert_template(t, &yes, "rw"), &h),
                    CKR_USER_NOT_LOGGED_IN);
    ensure_login(ro, true);
    CU_ASSERT_EQUAL(p11->C_CreateObject(ro, t, cert_template(t, &yes, "ro"), &h),
                    CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_CloseAllSessions(SLOT), CKR_OK);
}

static void test_session_objects_in_any_session(void)
{
    CK_SESSION_HANDLE ro = open_session(RO), other = open_session(RO);
    CK_ATTRIBUTE t[6], sess[] = {{CKA_TOKEN, &no, 1}, {CKA_CLASS, &cert_cls, sizeof(cert_cls)}};
    CK_ATTRIBUTE data[] = {{CKA_CLASS, &data_cls, sizeof(data_cls)},
                           {CKA_TOKEN, &no, 1},
                           {CKA_VALUE, "secret note", 11},
                           {CKA_APPLICATION, "holdfast test", 13}};
    CK_ATTRIBUTE public_data[] = {
        {CKA_CLASS, &data_cls, sizeof(data_cls)}, {CKA_TOKEN, &no, 1}, {CKA_PRIVATE, &no, 1}};
    CK_ATTRIBUTE data_cls_only[] = {{CKA_CLASS, &data_cls, sizeof(data_cls)}};
    CK_OBJECT_HANDLE h = 0, d = 0, p = 0, found[MAX_FOUND];

    ensure_login(ro, false);
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(ro, t, cert_template(t, &no, "session cert"), &h),
                          CKR_OK);
    CU_ASSERT_TRUE(attr_is(other, h, CKA_TOKEN, &no, 1));
    CU_ASSERT_TRUE(found_only(other, sess, N(sess), h));
    /* Data objects are private unless asked otherwise: the user first. */
    CU_ASSERT_EQUAL(p11->C_CreateObject(ro, data, N(data), &d), CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(p11->C_CreateObject(ro, public_data, N(public_data), &p), CKR_OK);
    ensure_login(ro, true);
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(ro, data, N(data), &d), CKR_OK);
    CU_ASSERT_TRUE(attr_is(other, d, CKA_PRIVATE, &yes, 1));
    CU_ASSERT_TRUE(attr_is(other, d, CKA_APPLICATION, "holdfast test", 13));
    CU_ASSERT_TRUE(attr_is(other, d, CKA_VALUE, "secret note", 11));
    CU_ASSERT_TRUE(attr_is(other, d, CKA_OBJECT_ID, "", 0));
    CU_ASSERT_EQUAL(find(other, data_cls_only, N(data_cls_only), found), 2);
    /* Logout takes the private one; the maker's close the rest. */
    ensure_login(ro, false);
    CU_ASSERT_EQUAL(find(other, data_cls_only, N(data_cls_only), found), 1);
    ensure_login(ro, true);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(other, d, data, 1), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_TRUE(audit_has("\"op\":\"object.destroy\"", "logout"));
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(other, h, sess, 1), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(other, p, data, 1), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_CloseAllSessions(SLOT), CKR_OK);
}

static void test_token_data_object_is_private(void)
{
    CK_SESSION_HANDLE rw = open_session(RW), ro = open_session(RO);
    static const unsigned char oid[] = {0x06, 0x03, 0x2a, 0x03, 0x04};
    CK_ATTRIBUTE data[] = {{CKA_CLASS, &data_cls, sizeof(data_cls)},
                           {CKA_TOKEN, &yes, 1},
                           {CKA_LABEL, "config blob", 11},
                           {CKA_OBJECT_ID, (void *)oid, sizeof(oid)},
                           {CKA_MODIFIABLE, &no, 1},
                           {CKA_VALUE, "\x00\x01\x02", 3}};
    CK_ATTRIBUTE by_label[] = {{CKA_LABEL, "config blob", 11}};
    CK_ATTRIBUTE relabel[] = {{CKA_LABEL, "other", 5}};
    CK_OBJECT_HANDLE d = 0, found[MAX_FOUND];

    ensure_login(rw, true);
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(rw, data, N(data), &d), CKR_OK);
    CU_ASSERT_TRUE(attr_is(ro, d, CKA_OBJECT_ID, oid, sizeof(oid)));
    CU_ASSERT_TRUE(attr_is(ro, d, CKA_VALUE, "\x00\x01\x02", 3));
    /* CKA_MODIFIABLE FALSE: not even the label. */
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(rw, d, relabel, 1), CKR_ATTRIBUTE_READ_ONLY);
    ensure_login(rw, false);
    CU_ASSERT_EQUAL(find(ro, by_label, 1, found), 0);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(ro, d, data, 1), CKR_OBJECT_HANDLE_INVALID);
    ensure_login(rw, true);
    CU_ASSERT_TRUE(found_only(ro, by_label, 1, d));
    CU_ASSERT_EQUAL(p11->C_DestroyObject(rw, d), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseAllSessions(SLOT), CKR_OK);
}

static void test_bad_certificates_are_refused(void)
{
    CK_SESSION_HANDLE rw = open_session(RW);
    CK_ATTRIBUTE t[8];
    CK_OBJECT_HANDLE h = 0, found[MAX_FOUND];
    CK_ULONG n, other_type = CKC_X_509_ATTR_CERT;
    unsigned char *longer = malloc((size_t)cert_len + 1), wrong_serial[] = {0x02, 0x01, 0x07};
    unsigned char *big = calloc(1, 64 * 1024 + 1);
    CK_ATTRIBUTE certs[] = {{CKA_CLASS, &cert_cls, sizeof(cert_cls)}};

    CU_ASSERT_FATAL(longer && big);
    ensure_login(rw, true);
    n = cert_template(t, &no, "bad");
    t[2].pValue = "not a certificate";
    t[2].ulValueLen = 17;
    CU_ASSERT_EQUAL(p11->C_CreateObject(rw, t, n, &h), CKR_ATTRIBUTE_VALUE_INVALID);
    /* A certificate and then some: not one DER certificate. */
    memcpy(longer, cert_der, (size_t)cert_len);
    longer[cert_len] = 0;
    t[2] = (CK_ATTRIBUTE){CKA_VALUE, longer, (CK_ULONG)cert_len + 1};
    CU_ASSERT_EQUAL(p11->C_CreateObject(rw, t, n, &h), CKR_ATTRIBUTE_VALUE_INVALID);
    t[2] = (CK_ATTRIBUTE){CKA_VALUE, big, 64 * 1024 + 1};
    CU_ASSERT_EQUAL(p11->C_CreateObject(rw, t, n, &h), CKR_ATTRIBUTE_VALUE_INVALID);
    n = cert_template(t, &no, "bad");
    t[n] = (CK_ATTRIBUTE){CKA_SUBJECT, "\x30\x00", 2};
    CU_ASSERT_EQUAL(p11->C_CreateObject(rw, t, n + 1, &h), CKR_ATTRIBUTE_VALUE_INVALID);
    t[n] = (CK_ATTRIBUTE){CKA_SERIAL_NUMBER, wrong_serial, sizeof(wrong_serial)};
    CU_ASSERT_EQUAL(p11->C_CreateObject(rw, t, n + 1, &h), CKR_ATTRIBUTE_VALUE_INVALID);
    t[n] = (CK_ATTRIBUTE){CKA_TRUSTED, &yes, 1};
    CU_ASSERT_EQUAL(p11->C_CreateObject(rw, t, n + 1, &h), CKR_ATTRIBUTE_READ_ONLY);
    t[n] = (CK_ATTRIBUTE){CKA_MODULUS, "\x01", 1};
    CU_ASSERT_EQUAL(p11->C_CreateObject(rw, t, n + 1, &h), CKR_ATTRIBUTE_TYPE_INVALID);
    /* The template's own subject, issuer and serial, when they agree, are fine. */
    t[n] = (CK_ATTRIBUTE){CKA_SUBJECT, subj_der, (CK_ULONG)subj_len};
    t[n + 1] = (CK_ATTRIBUTE){CKA_SERIAL_NUMBER, serial_der, (CK_ULONG)serial_len};
    CU_ASSERT_EQUAL(p11->C_CreateObject(rw, t, n + 2, &h), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(rw, h), CKR_OK);
    t[1].pValue = &other_type;
    CU_ASSERT_EQUAL(p11->C_CreateObject(rw, t, n, &h), CKR_ATTRIBUTE_VALUE_INVALID);
    t[1] = t[--n];
    CU_ASSERT_EQUAL(p11->C_CreateObject(rw, t, n, &h), CKR_TEMPLATE_INCOMPLETE);
    /* Nothing was left behind. */
    CU_ASSERT_EQUAL(find(rw, certs, N(certs), found), 0);
    free(longer);
    free(big);
    CU_ASSERT_EQUAL(p11->C_CloseAllSessions(SLOT), CKR_OK);
}

/* ---- C_CopyObject ------------------------------------------------------------------------ */

static const CK_ATTRIBUTE_TYPE cert_types[] = {CKA_CLASS,         CKA_TOKEN,
                                               CKA_PRIVATE,       CKA_MODIFIABLE,
                                               CKA_LABEL,         CKA_ID,
                                               CKA_VALUE,         CKA_CERTIFICATE_TYPE,
                                               CKA_SUBJECT,       CKA_ISSUER,
                                               CKA_SERIAL_NUMBER, CKA_CHECK_VALUE,
                                               CKA_TRUSTED,       CKA_CERTIFICATE_CATEGORY,
                                               CKA_START_DATE,    CKA_END_DATE};
static const CK_ATTRIBUTE_TYPE data_types[] = {CKA_CLASS,       CKA_TOKEN,    CKA_PRIVATE,
                                               CKA_MODIFIABLE,  CKA_LABEL,    CKA_VALUE,
                                               CKA_APPLICATION, CKA_OBJECT_ID};

/* Whether a and b have the same value of every type but the changed ones (at most 2). */
static bool same_but(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE a, CK_OBJECT_HANDLE b,
                     const CK_ATTRIBUTE_TYPE *types, size_t n, CK_ATTRIBUTE_TYPE changed1,
                     CK_ATTRIBUTE_TYPE changed2)
{
    static unsigned char va[4096], vb[4096];

    for (size_t i = 0; i < n; i++) {
        CK_ATTRIBUTE x = {types[i], va, sizeof(va)}, y = {types[i], vb, sizeof(vb)};
        if (types[i] == changed1 || types[i] == changed2) continue;
        if (p11->C_GetAttributeValue(s, a, &x, 1) != CKR_OK ||
            p11->C_GetAttributeValue(s, b, &y, 1) != CKR_OK || x.ulValueLen != y.ulValueLen ||
            memcmp(va, vb, x.ulValueLen) != 0) {
            fprintf(stderr, "copy differs in attribute 0x%lx\n", (unsigned long)types[i]);
            return false;
        }
    }
    return true;
}

/* The copy's creation record: its handle, class and C_CopyObject. */
static bool copy_recorded(CK_OBJECT_HANDLE h, bool token)
{
    char key[48];

    snprintf(key, sizeof(key), "\"key\":\"%s:0x%lx\"", token ? "object" : "session",
             (unsigned long)h);
    return audit_has(key, "C_CopyObject\"");
}

static bool refusal_recorded(CK_RV rv)
{
    char want[40];

    snprintf(want, sizeof(want), "\"result\":\"0x%lx\"", (unsigned long)rv);
    return audit_has("C_CopyObject", want);
}

static void test_copy_certificate_every_direction(void)
{
    CK_SESSION_HANDLE rw = open_session(RW), ro = open_session(RO);
    CK_ATTRIBUTE t[6], to_session[] = {{CKA_TOKEN, &no, 1}};
    CK_ATTRIBUTE relabel[] = {{CKA_LABEL, "copied cert", 11}};
    CK_ATTRIBUTE to_token_id[] = {{CKA_TOKEN, &yes, 1}, {CKA_ID, "\x43", 1}};
    CK_ATTRIBUTE token_fixed[] = {{CKA_LABEL, "fixed copy", 10}, {CKA_MODIFIABLE, &no, 1}};
    CK_OBJECT_HANDLE sess = 0, tok = 0, ss = 0, st = 0, ts = 0, tt = 0;

    ensure_login(rw, true);
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(rw, t, cert_template(t, &no, "orig s"), &sess),
                          CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(rw, t, cert_template(t, &yes, "orig t"), &tok),
                          CKR_OK);

    /* session -> session, in a R/O session: only the label changes. */
    CU_ASSERT_EQUAL_FATAL(p11->C_CopyObject(ro, sess, relabel, N(relabel), &ss), CKR_OK);
    CU_ASSERT_NOT_EQUAL(ss, sess);
    CU_ASSERT_TRUE(same_but(ro, sess, ss, cert_types, N(cert_types), CKA_LABEL, CKA_LABEL));
    CU_ASSERT_TRUE(attr_is(ro, ss, CKA_LABEL, "copied cert", 11));
    CU_ASSERT_TRUE(copy_recorded(ss, false));
    /* session -> token: CKA_TOKEN and CKA_ID. */
    CU_ASSERT_EQUAL_FATAL(p11->C_CopyObject(rw, sess, to_token_id, N(to_token_id), &st), CKR_OK);
    CU_ASSERT_TRUE(same_but(ro, sess, st, cert_types, N(cert_types), CKA_TOKEN, CKA_ID));
    CU_ASSERT_TRUE(attr_is(ro, st, CKA_TOKEN, &yes, 1));
    CU_ASSERT_TRUE(attr_is(ro, st, CKA_ID, "\x43", 1));
    CU_ASSERT_TRUE(copy_recorded(st, true));
    /* token -> session, an empty template but CKA_TOKEN. */
    CU_ASSERT_EQUAL_FATAL(p11->C_CopyObject(ro, tok, to_session, N(to_session), &ts), CKR_OK);
    CU_ASSERT_TRUE(same_but(ro, tok, ts, cert_types, N(cert_types), CKA_TOKEN, CKA_TOKEN));
    CU_ASSERT_TRUE(attr_is(ro, ts, CKA_TOKEN, &no, 1));
    CU_ASSERT_TRUE(copy_recorded(ts, false));
    /* token -> token (no CKA_TOKEN: the original's), read-only from now on. */
    CU_ASSERT_EQUAL_FATAL(p11->C_CopyObject(rw, tok, token_fixed, N(token_fixed), &tt), CKR_OK);
    CU_ASSERT_TRUE(same_but(ro, tok, tt, cert_types, N(cert_types), CKA_LABEL, CKA_MODIFIABLE));
    CU_ASSERT_TRUE(attr_is(ro, tt, CKA_TOKEN, &yes, 1));
    CU_ASSERT_TRUE(attr_is(ro, tt, CKA_MODIFIABLE, &no, 1));
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(rw, tt, relabel, 1), CKR_ATTRIBUTE_READ_ONLY);
    CU_ASSERT_TRUE(copy_recorded(tt, true));

    /* Each copy outlives its original. */
    CU_ASSERT_EQUAL(p11->C_DestroyObject(rw, sess), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(rw, tok), CKR_OK);
    CU_ASSERT_TRUE(attr_is(ro, ss, CKA_VALUE, cert_der, (CK_ULONG)cert_len));
    CU_ASSERT_TRUE(attr_is(ro, st, CKA_VALUE, cert_der, (CK_ULONG)cert_len));
    CU_ASSERT_TRUE(attr_is(ro, ts, CKA_SUBJECT, subj_der, (CK_ULONG)subj_len));
    CU_ASSERT_TRUE(attr_is(ro, tt, CKA_SERIAL_NUMBER, serial_der, (CK_ULONG)serial_len));
    /* The token copies persist; the session ones end with their maker, the R/O session. */
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(rw, ss, relabel, 1), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(rw, ts, relabel, 1), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_Finalize(NULL), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_Initialize(NULL), CKR_OK);
    ro = open_session(RO);
    CU_ASSERT_TRUE(attr_is(ro, st, CKA_ID, "\x43", 1));
    CU_ASSERT_TRUE(attr_is(ro, tt, CKA_LABEL, "fixed copy", 10));
    CU_ASSERT_TRUE(attr_is(ro, tt, CKA_MODIFIABLE, &no, 1));
    rw = open_session(RW);
    ensure_login(rw, true);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(rw, st), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(rw, tt), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseAllSessions(SLOT), CKR_OK);
}

static void test_copy_data_object(void)
{
    CK_SESSION_HANDLE rw = open_session(RW);
    CK_ATTRIBUTE data[] = {{CKA_CLASS, &data_cls, sizeof(data_cls)},
                           {CKA_TOKEN, &no, 1},
                           {CKA_VALUE, "app state", 9},
                           {CKA_APPLICATION, "holdfast copy", 13}};
    CK_ATTRIBUTE to_token_public[] = {{CKA_TOKEN, &yes, 1}, {CKA_PRIVATE, &no, 1}};
    CK_ATTRIBUTE with_id[] = {{CKA_ID, "\x01", 1}};
    CK_OBJECT_HANDLE d = 0, st = 0, h = 0;

    ensure_login(rw, true);
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(rw, data, N(data), &d), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_CopyObject(rw, d, to_token_public, N(to_token_public), &st),
                          CKR_OK);
    CU_ASSERT_TRUE(same_but(rw, d, st, data_types, N(data_types), CKA_TOKEN, CKA_PRIVATE));
    CU_ASSERT_TRUE(attr_is(rw, st, CKA_PRIVATE, &no, 1));
    CU_ASSERT_TRUE(copy_recorded(st, true));
    /* A session data object has no CKA_ID to change. */
    CU_ASSERT_EQUAL(p11->C_CopyObject(rw, d, with_id, N(with_id), &h), CKR_ATTRIBUTE_TYPE_INVALID);
    /* The private original goes with logout; the public token copy stays visible. */
    ensure_login(rw, false);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(rw, d, data, 1), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_TRUE(attr_is(rw, st, CKA_VALUE, "app state", 9));
    CU_ASSERT_TRUE(attr_is(rw, st, CKA_APPLICATION, "holdfast copy", 13));
    ensure_login(rw, true);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(rw, st), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CloseAllSessions(SLOT), CKR_OK);
}

static void test_copy_refusals(void)
{
    CK_SESSION_HANDLE rw = open_session(RW), ro = open_session(RO);
    CK_ATTRIBUTE t[6], certs[] = {{CKA_CLASS, &cert_cls, sizeof(cert_cls)}};
    CK_ATTRIBUTE revalue[] = {{CKA_LABEL, "ok", 2}, {CKA_VALUE, "x", 1}};
    CK_ATTRIBUTE same_subject[] = {{CKA_SUBJECT, NULL, 0}};
    CK_ATTRIBUTE retrust[] = {{CKA_TRUSTED, &yes, 1}};
    CK_ATTRIBUTE key_type[] = {{CKA_KEY_TYPE, &x509, sizeof(x509)}};
    CK_ATTRIBUTE to_token[] = {{CKA_TOKEN, &yes, 1}};
    CK_ATTRIBUTE to_private[] = {{CKA_PRIVATE, &yes, 1}};
    CK_ATTRIBUTE bad_bool[] = {{CKA_PRIVATE, "xx", 2}};
    CK_OBJECT_HANDLE sess = 0, h = 0, found[MAX_FOUND];

    same_subject[0] = (CK_ATTRIBUTE){CKA_SUBJECT, subj_der, (CK_ULONG)subj_len};
    ensure_login(rw, false);
    CU_ASSERT_EQUAL_FATAL(p11->C_CreateObject(ro, t, cert_template(t, &no, "to refuse"), &sess),
                          CKR_OK);
    /* Other attributes only with their own value. */
    CU_ASSERT_EQUAL(p11->C_CopyObject(ro, sess, revalue, N(revalue), &h), CKR_ATTRIBUTE_READ_ONLY);
    CU_ASSERT_TRUE(refusal_recorded(CKR_ATTRIBUTE_READ_ONLY));
    CU_ASSERT_EQUAL(p11->C_CopyObject(ro, sess, retrust, N(retrust), &h), CKR_ATTRIBUTE_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_CopyObject(ro, sess, key_type, N(key_type), &h),
                    CKR_ATTRIBUTE_TYPE_INVALID);
    CU_ASSERT_EQUAL(p11->C_CopyObject(ro, sess, bad_bool, N(bad_bool), &h),
                    CKR_ATTRIBUTE_VALUE_INVALID);
    /* A token copy: R/W session and user, as C_CreateObject. */
    CU_ASSERT_EQUAL(p11->C_CopyObject(ro, sess, to_token, N(to_token), &h), CKR_SESSION_READ_ONLY);
    CU_ASSERT_TRUE(refusal_recorded(CKR_SESSION_READ_ONLY));
    CU_ASSERT_EQUAL(p11->C_CopyObject(rw, sess, to_token, N(to_token), &h), CKR_USER_NOT_LOGGED_IN);
    /* A private copy: the user. */
    CU_ASSERT_EQUAL(p11->C_CopyObject(ro, sess, to_private, N(to_private), &h),
                    CKR_USER_NOT_LOGGED_IN);
    CU_ASSERT_EQUAL(p11->C_CopyObject(ro, sess, NULL, 0, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(p11->C_CopyObject(ro, sess + 4, NULL, 0, &h), CKR_OBJECT_HANDLE_INVALID);
    /* Nothing was left behind; a value given as it is is fine. */
    CU_ASSERT_EQUAL(find(ro, certs, N(certs), found), 1);
    CU_ASSERT_EQUAL(p11->C_CopyObject(ro, sess, same_subject, N(same_subject), &h), CKR_OK);
    ensure_login(ro, true);
    CU_ASSERT_EQUAL(p11->C_CopyObject(ro, sess, to_token, N(to_token), &h), CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL(find(ro, certs, N(certs), found), 2);
    CU_ASSERT_EQUAL(p11->C_CloseAllSessions(SLOT), CKR_OK);
}

static CU_TestInfo cert_data_tests[] = {
    {"a token certificate: attributes, finding, persistence, changes, destruction",
     test_token_certificate_attributes_and_persistence},
    {"token objects need a R/W session and the user", test_token_objects_need_rw_and_login},
    {"session objects in any session; private ones need login",
     test_session_objects_in_any_session},
    {"a token data object is private; CKA_MODIFIABLE FALSE holds",
     test_token_data_object_is_private},
    {"bad DER and contradicting templates are refused", test_bad_certificates_are_refused},
    {"C_CopyObject copies a certificate session/token to session/token, changing only what it may",
     test_copy_certificate_every_direction},
    {"C_CopyObject copies a data object, session to a public token one", test_copy_data_object},
    {"C_CopyObject refuses other changes, token copies outside R/W and user, private ones without",
     test_copy_refusals},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    CU_SuiteInfo suites[] = {
        {"module-cert-data", suite_init, suite_clean, NULL, NULL, cert_data_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
