/* C_CopyObject through the built holdfast-pkcs11.so: session keys copy with a new label, id,
 * CKA_PRIVATE and CKA_MODIFIABLE, toward sensitive and unextractable only; every other attribute
 * only with the value it has (CKR_ATTRIBUTE_READ_ONLY); with CKA_TOKEN TRUE into a managed key of
 * the same value (R/W session; no lone public keys); a managed token key is never copied
 * (CKR_ACTION_PROHIBITED); the copy lives on its own and is audited as object.create with detail
 * C_CopyObject. */
#include "hf-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "module-loader.h"
#include "pkcs11/core/core.h"

#define SLOT 1
#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct hf_test_env env;
static struct hf_test_module mod;
static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE sess;
static CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
static const unsigned char aes_value[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                            11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                                            21, 22, 23, 24, 25, 26, 27, 28, 29};

/* A session AES key of aes_value, extractable or not. */
static CK_OBJECT_HANDLE aes_key(bool extractable)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_ATTRIBUTE t[] = {{CKA_CLASS, &cls, sizeof(cls)},
                        {CKA_KEY_TYPE, &type, sizeof(type)},
                        {CKA_TOKEN, &no, 1},
                        {CKA_LABEL, "orig", 4},
                        {CKA_EXTRACTABLE, extractable ? &yes : &no, 1},
                        {CKA_SENSITIVE, extractable ? &no : &yes, 1},
                        {CKA_VALUE, (void *)aes_value, sizeof(aes_value)}};

    CU_ASSERT_EQUAL(p11->C_CreateObject(sess, t, N(t), &h), CKR_OK);
    return h;
}

static int get_bool(CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type)
{
    CK_BBOOL v = 0x55;
    CK_ATTRIBUTE a = {type, &v, sizeof(v)};

    if (p11->C_GetAttributeValue(sess, h, &a, 1) != CKR_OK) return -1;
    return v == CK_TRUE;
}

static bool attr_is(CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type, const void *want, CK_ULONG len)
{
    unsigned char buf[256];
    CK_ATTRIBUTE a = {type, buf, sizeof(buf)};

    return p11->C_GetAttributeValue(sess, h, &a, 1) == CKR_OK && a.ulValueLen == len &&
           memcmp(buf, want, len) == 0;
}

static bool audit_has(const char *detail, CK_RV rv)
{
    char line[4096], want_rv[40];
    FILE *f = fopen(env.cfg.audit_path, "r");
    bool found = false;

    snprintf(want_rv, sizeof(want_rv), "\"result\":\"0x%lx\"", (unsigned long)rv);
    while (f && !found && fgets(line, sizeof(line), f))
        found = strstr(line, "\"op\":\"object.create\"") && strstr(line, detail) &&
                strstr(line, want_rv);
    if (f) fclose(f);
    return found;
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_copy_keeps_value_changes_label_and_id(void)
{
    CK_OBJECT_HANDLE orig = aes_key(true), copy = CK_INVALID_HANDLE;
    CK_ATTRIBUTE t[] = {{CKA_LABEL, "the copy", 8}, {CKA_ID, "\x42", 1}};

    CU_ASSERT_EQUAL_FATAL(p11->C_CopyObject(sess, orig, t, N(t), &copy), CKR_OK);
    CU_ASSERT_NOT_EQUAL(copy, orig);
    CU_ASSERT(attr_is(copy, CKA_LABEL, "the copy", 8));
    CU_ASSERT(attr_is(copy, CKA_ID, "\x42", 1));
    CU_ASSERT(attr_is(copy, CKA_VALUE, aes_value, sizeof(aes_value)));
    CU_ASSERT(attr_is(orig, CKA_LABEL, "orig", 4));
    CU_ASSERT_EQUAL(get_bool(orig, CKA_COPYABLE), 1);
    CU_ASSERT(audit_has("C_CopyObject", CKR_OK));
    /* Each lives on its own. */
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, orig), CKR_OK);
    CU_ASSERT(attr_is(copy, CKA_VALUE, aes_value, sizeof(aes_value)));
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, copy), CKR_OK);
}

static void test_copy_only_toward_sensitive(void)
{
    CK_OBJECT_HANDLE open_key = aes_key(true), sealed = aes_key(false), copy = 0;
    CK_ATTRIBUTE sens[] = {{CKA_SENSITIVE, &yes, 1}};
    CK_ATTRIBUTE unsens[] = {{CKA_SENSITIVE, &no, 1}};
    CK_ATTRIBUTE ext[] = {{CKA_EXTRACTABLE, &yes, 1}};
    CK_ATTRIBUTE unext[] = {{CKA_EXTRACTABLE, &no, 1}};
    unsigned char buf[32];
    CK_ATTRIBUTE value = {CKA_VALUE, buf, sizeof(buf)};

    CU_ASSERT_EQUAL_FATAL(p11->C_CopyObject(sess, open_key, sens, 1, &copy), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(copy, CKA_SENSITIVE), 1);
    CU_ASSERT_EQUAL(get_bool(copy, CKA_ALWAYS_SENSITIVE), 0); /* it was not, before */
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, copy, &value, 1), CKR_ATTRIBUTE_SENSITIVE);
    CU_ASSERT(attr_is(open_key, CKA_VALUE, aes_value, sizeof(aes_value)));
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, open_key, unext, 1, &copy), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(copy, CKA_EXTRACTABLE), 0);
    /* Never back. */
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, sealed, unsens, 1, &copy), CKR_ATTRIBUTE_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, sealed, ext, 1, &copy), CKR_ATTRIBUTE_READ_ONLY);
    CU_ASSERT(audit_has("C_CopyObject", CKR_ATTRIBUTE_READ_ONLY));
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, sealed, sens, 1, &copy), CKR_OK);
}

static void test_copy_template_rules(void)
{
    CK_OBJECT_HANDLE orig = aes_key(false), copy = 0;
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY, other_cls = CKO_PRIVATE_KEY;
    CK_ULONG len = 32, other_len = 16;
    CK_ATTRIBUTE same[] = {{CKA_CLASS, &cls, sizeof(cls)}, {CKA_VALUE_LEN, &len, sizeof(len)}};
    CK_ATTRIBUTE changed_cls[] = {{CKA_CLASS, &other_cls, sizeof(other_cls)}};
    CK_ATTRIBUTE changed_len[] = {{CKA_VALUE_LEN, &other_len, sizeof(other_len)}};
    CK_ATTRIBUTE no_encrypt[] = {{CKA_ENCRYPT, &no, 1}};
    CK_ATTRIBUTE session[] = {{CKA_TOKEN, &no, 1}};
    CK_ATTRIBUTE fixed[] = {{CKA_MODIFIABLE, &no, 1}};
    CK_ATTRIBUTE public_copy[] = {{CKA_PRIVATE, &no, 1}};
    CK_ATTRIBUTE relabel = {CKA_LABEL, "x", 1};

    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, orig, same, N(same), &copy), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, orig, session, 1, &copy), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, orig, changed_cls, 1, &copy), CKR_ATTRIBUTE_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, orig, changed_len, 1, &copy), CKR_ATTRIBUTE_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, orig, no_encrypt, 1, &copy), CKR_ATTRIBUTE_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, orig, NULL, 0, NULL), CKR_ARGUMENTS_BAD);
    /* CKA_MODIFIABLE FALSE: the copy's attributes stay as they are. */
    CU_ASSERT_EQUAL_FATAL(p11->C_CopyObject(sess, orig, fixed, 1, &copy), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(copy, CKA_MODIFIABLE), 0);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(sess, copy, &relabel, 1), CKR_ACTION_PROHIBITED);
    CU_ASSERT_EQUAL(p11->C_SetAttributeValue(sess, orig, &relabel, 1), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, orig, public_copy, 1, &copy), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(copy, CKA_PRIVATE), 0);
    CU_ASSERT_EQUAL(get_bool(orig, CKA_PRIVATE), 1);
}

/* A session key's copy with CKA_TOKEN TRUE is a managed key with the same material. */
static void test_copy_into_token_key(void)
{
    CK_OBJECT_HANDLE open_key = aes_key(true), copy = 0;
    CK_ATTRIBUTE t[] = {{CKA_TOKEN, &yes, 1}, {CKA_LABEL, "copied into the token", 21}};
    CK_ATTRIBUTE fixed[] = {{CKA_TOKEN, &yes, 1}, {CKA_MODIFIABLE, &no, 1}};
    CK_ATTRIBUTE sealed[] = {{CKA_TOKEN, &yes, 1}, {CKA_SENSITIVE, &yes, 1}};
    unsigned char buf[32];
    CK_ATTRIBUTE value = {CKA_VALUE, buf, sizeof(buf)};

    CU_ASSERT_EQUAL_FATAL(p11->C_CopyObject(sess, open_key, t, N(t), &copy), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(copy, CKA_TOKEN), 1);
    CU_ASSERT_EQUAL(get_bool(copy, CKA_LOCAL), 0);
    CU_ASSERT(attr_is(copy, CKA_LABEL, "copied into the token", 21));
    CU_ASSERT(attr_is(copy, CKA_VALUE, aes_value, sizeof(aes_value)));
    CU_ASSERT(audit_has("C_CopyObject token", CKR_OK));
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, copy), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, open_key, sealed, N(sealed), &copy), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, copy, &value, 1), CKR_ATTRIBUTE_SENSITIVE);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, copy), CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, open_key, fixed, N(fixed), &copy),
                    CKR_TEMPLATE_INCONSISTENT);
}

static void test_managed_key_is_never_copied(void)
{
    CK_MECHANISM gen = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 32;
    CK_ATTRIBUTE t[] = {
        {CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_TOKEN, &yes, 1}, {CKA_LABEL, "managed-copy", 12}};
    CK_ATTRIBUTE session[] = {{CKA_TOKEN, &no, 1}};
    CK_OBJECT_HANDLE managed = 0, copy = 0;

    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKey(sess, &gen, t, N(t), &managed), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(managed, CKA_COPYABLE), 0);
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, managed, NULL, 0, &copy), CKR_ACTION_PROHIBITED);
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, managed, session, 1, &copy), CKR_ACTION_PROHIBITED);
    CU_ASSERT(audit_has("C_CopyObject", CKR_ACTION_PROHIBITED));
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, 0x7ffffff0, NULL, 0, &copy), CKR_OBJECT_HANDLE_INVALID);
    CU_ASSERT_EQUAL(p11->C_DestroyObject(sess, managed), CKR_OK);
}

/* Session objects copy in a read-only session too; a copy of a key pair's public object. */
static void test_copy_in_read_only_session(void)
{
    CK_MECHANISM gen = {CKM_EC_KEY_PAIR_GEN, NULL, 0};
    static const unsigned char oid_p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48,
                                             0xce, 0x3d, 0x03, 0x01, 0x07};
    CK_ATTRIBUTE pt[] = {{CKA_EC_PARAMS, (void *)oid_p256, sizeof(oid_p256)}, {CKA_TOKEN, &no, 1}};
    CK_ATTRIBUTE vt[] = {{CKA_TOKEN, &no, 1}};
    CK_ATTRIBUTE priv_copy[] = {{CKA_PRIVATE, &yes, 1}};
    CK_ATTRIBUTE token[] = {{CKA_TOKEN, &yes, 1}};
    CK_OBJECT_HANDLE pub = 0, priv = 0, copy = 0;
    CK_SESSION_HANDLE ro = 0;
    unsigned char point[80];
    CK_ATTRIBUTE ec_point = {CKA_EC_POINT, point, sizeof(point)};

    CU_ASSERT_EQUAL_FATAL(p11->C_OpenSession(SLOT, CKF_SERIAL_SESSION, NULL, NULL, &ro), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(p11->C_GenerateKeyPair(ro, &gen, pt, N(pt), vt, N(vt), &pub, &priv),
                          CKR_OK);
    CU_ASSERT_EQUAL(p11->C_CopyObject(ro, pub, priv_copy, 1, &copy), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(copy, CKA_PRIVATE), 1);
    CU_ASSERT_EQUAL(p11->C_GetAttributeValue(sess, pub, &ec_point, 1), CKR_OK);
    CU_ASSERT(attr_is(copy, CKA_EC_POINT, point, ec_point.ulValueLen));
    CU_ASSERT_EQUAL(p11->C_CopyObject(ro, priv, NULL, 0, &copy), CKR_OK);
    CU_ASSERT_EQUAL(get_bool(copy, CKA_SIGN), 1);
    /* Token objects need a R/W session; a lone public key is no managed key. */
    CU_ASSERT_EQUAL(p11->C_CopyObject(ro, priv, token, 1, &copy), CKR_SESSION_READ_ONLY);
    CU_ASSERT_EQUAL(p11->C_CopyObject(sess, pub, token, 1, &copy), CKR_TEMPLATE_INCONSISTENT);
    CU_ASSERT_EQUAL(p11->C_CloseSession(ro), CKR_OK);
}

/* ---- suite --------------------------------------------------------------------------------- */

static int suite_init(void)
{
    if (hf_test_env_setup(&env, NULL) != 0) return -1;
    if (hf_test_module_load(&mod) != 0) return -1;
    p11 = mod.p11;
    if (hf_test_module_start(p11, &sess) != CKR_OK) return -1;
    return 0;
}

static int suite_clean(void)
{
    if (p11) p11->C_Finalize(NULL);
    hf_test_module_unload(&mod);
    hf_test_env_teardown(&env);
    return 0;
}

static CU_TestInfo copy_tests[] = {
    {"a copy keeps the value, changes label and id", test_copy_keeps_value_changes_label_and_id},
    {"a copy goes only toward sensitive", test_copy_only_toward_sensitive},
    {"what a copy template may change", test_copy_template_rules},
    {"a copy into a token key", test_copy_into_token_key},
    {"a managed key is never copied", test_managed_key_is_never_copied},
    {"copies in a read-only session", test_copy_in_read_only_session},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    CU_SuiteInfo suites[] = {
        {"module-copy", suite_init, suite_clean, NULL, NULL, copy_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
