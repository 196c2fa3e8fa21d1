/* The backup KEK inside a member (pool-backup.h). */
#include "hf-build.h"

#include "pool-backup.h"

#include "crypto.h"
#include "pool-clone.h"
#include "secmem.h"

#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <stdlib.h>
#include <string.h>

static CK_MECHANISM kwp_mech = {CKM_AES_KEY_WRAP_PAD, NULL, 0};

/* Each blob is wrapped under a key of its own label: HKDF-SHA256 of the backup KEK, the label as
 * info. The store's row MAC does not cover a version's blob (a local key's is bound by a header
 * inside its wrap: source-local.c), so without this a blob copied to another version's row would
 * restore one key under the other's label; under the wrong label's key it now fails RFC 5649's
 * integrity check instead. */
static CK_RV kek_for_label(const unsigned char kek[HF_POOL_BACKUP_KEK_LEN], const char *label,
                           unsigned char out[HF_POOL_BACKUP_KEK_LEN])
{
    static const char salt[] = "holdfast pool backup v2";
    EVP_KDF *kdf = EVP_KDF_fetch(hf_crypto_libctx(), "HKDF", NULL);
    EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)kek, HF_POOL_BACKUP_KEK_LEN),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, sizeof(salt) - 1),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)label, strlen(label)),
        OSSL_PARAM_construct_end(),
    };
    CK_RV rv = ctx && EVP_KDF_derive(ctx, out, HF_POOL_BACKUP_KEK_LEN, params) == 1
                   ? CKR_OK
                   : CKR_FUNCTION_FAILED;

    EVP_KDF_CTX_free(ctx);
    EVP_KDF_free(kdf);
    return rv;
}

/* label's wrapping key as a session object that wraps and unwraps only, as the header says. */
static CK_RV kek_load(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                      const unsigned char kek[HF_POOL_BACKUP_KEK_LEN], const char *label,
                      CK_OBJECT_HANDLE *h)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_TOKEN, &no, sizeof(no)},
        {CKA_PRIVATE, &yes, sizeof(yes)},
        {CKA_SENSITIVE, &yes, sizeof(yes)},
        {CKA_EXTRACTABLE, &no, sizeof(no)},
        {CKA_ENCRYPT, &no, sizeof(no)},
        {CKA_DECRYPT, &no, sizeof(no)},
        {CKA_WRAP, &yes, sizeof(yes)},
        {CKA_UNWRAP, &yes, sizeof(yes)},
        {CKA_VALUE, NULL, HF_POOL_BACKUP_KEK_LEN},
    };
    unsigned char *derived = hf_secmem_alloc(HF_POOL_BACKUP_KEK_LEN);
    CK_RV rv = derived ? kek_for_label(kek, label, derived) : CKR_HOST_MEMORY;

    tmpl[sizeof(tmpl) / sizeof(tmpl[0]) - 1].pValue = derived;
    if (rv == CKR_OK) rv = f->C_CreateObject(s, tmpl, sizeof(tmpl) / sizeof(tmpl[0]), h);
    hf_secmem_free(derived, HF_POOL_BACKUP_KEK_LEN);
    return rv;
}

/* ---- wrap ---- */

struct wrap_call {
    const unsigned char *kek;
    const char *label;
    CK_OBJECT_CLASS cls;
    unsigned char *blob;
    CK_ULONG blob_len;
};

static CK_RV wrap_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                     void *arg)
{
    struct wrap_call *c = arg;
    CK_OBJECT_HANDLE k = CK_INVALID_HANDLE, h = CK_INVALID_HANDLE;
    CK_ULONG len = 0;
    CK_RV rv;

    (void)member;
    /* A fresh search: a cached handle may name an object another process deleted. */
    hf_hsm_object_forget(hsm, c->cls, c->label);
    if ((rv = hf_hsm_object_find(hsm, s, c->cls, c->label, &h)) != CKR_OK) return rv;
    if (h == CK_INVALID_HANDLE) return CKR_KEY_HANDLE_INVALID;
    if ((rv = kek_load(f, s, c->kek, c->label, &k)) != CKR_OK) return rv;
    rv = f->C_WrapKey(s, &kwp_mech, k, h, NULL, &len);
    if (rv == CKR_OK) {
        free(c->blob);
        c->blob = malloc(len);
        rv = c->blob == NULL ? CKR_HOST_MEMORY : f->C_WrapKey(s, &kwp_mech, k, h, c->blob, &len);
        c->blob_len = len;
    }
    f->C_DestroyObject(s, k);
    return rv;
}

CK_RV hf_pool_backup_wrap(struct hf_pool *pool, const unsigned char kek[HF_POOL_BACKUP_KEK_LEN],
                          const char *label, enum hf_pool_obj obj, unsigned char **blob,
                          size_t *blob_len)
{
    struct wrap_call c = {.kek = kek, .label = label, .cls = hf_pool_obj_class(obj)};
    size_t n = hf_pool_status(pool, NULL, 0);
    CK_RV rv = CKR_KEY_HANDLE_INVALID;

    if (pool == NULL || kek == NULL || label == NULL || blob == NULL || blob_len == NULL)
        return CKR_ARGUMENTS_BAD;
    *blob = NULL;
    *blob_len = 0;
    /* Member by member, each a call of its own: one that lacks the key or is out of service
     * says so and the next is asked. */
    for (size_t i = 0; i < n; i++) {
        CK_RV one = hf_pool_run_on(pool, i, wrap_fn, &c);
        if (one == CKR_OK) {
            *blob = c.blob;
            *blob_len = c.blob_len;
            return CKR_OK;
        }
        if (one != CKR_KEY_HANDLE_INVALID && one != HF_POOL_RV_UNAVAILABLE) rv = one;
    }
    free(c.blob);
    return rv;
}

/* ---- restore ---- */

struct restore_call {
    const unsigned char *kek;
    const char *label;
    enum hf_pool_obj obj;
    const unsigned char *blob;
    size_t blob_len;
    bool made;
};

static CK_RV restore_fn(struct hf_hsm *hsm, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, void *arg)
{
    struct restore_call *c = arg;
    CK_OBJECT_CLASS cls = hf_pool_obj_class(c->obj);
    CK_OBJECT_HANDLE k = CK_INVALID_HANDLE, h = CK_INVALID_HANDLE;
    CK_RV rv;

    hf_hsm_object_forget(hsm, cls, c->label);
    if ((rv = hf_hsm_object_find(hsm, s, cls, c->label, &h)) != CKR_OK) return rv;
    if (h != CK_INVALID_HANDLE) return CKR_OK;
    if ((rv = kek_load(f, s, c->kek, c->label, &k)) != CKR_OK) return rv;
    rv = hf_pool_unwrap_labelled(f, s, &kwp_mech, k, c->blob, c->blob_len, c->obj, c->label, &h);
    f->C_DestroyObject(s, k);
    /* SoftHSMv2 2.6 answers a failed RFC 5649 integrity check with CKR_GENERAL_ERROR (hsm.c):
     * under a KEK it accepted, that means the blob. */
    if (rv == CKR_GENERAL_ERROR || rv == CKR_FUNCTION_FAILED || rv == CKR_ENCRYPTED_DATA_INVALID)
        rv = CKR_WRAPPED_KEY_INVALID;
    if (rv == CKR_OK) c->made = true;
    return rv;
}

CK_RV hf_hsm_backup_restore(struct hf_hsm *hsm, const unsigned char kek[HF_POOL_BACKUP_KEK_LEN],
                            const char *label, enum hf_pool_obj obj, const unsigned char *blob,
                            size_t blob_len, bool *made)
{
    struct restore_call c = {kek, label, obj, blob, blob_len, false};
    CK_RV rv;

    if (hsm == NULL || kek == NULL || label == NULL || blob == NULL || made == NULL)
        return CKR_ARGUMENTS_BAD;
    rv = hf_hsm_run(hsm, restore_fn, &c);
    *made = rv == CKR_OK && c.made;
    return rv;
}
