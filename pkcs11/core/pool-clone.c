/* Copying keys between pool members (pool-clone.h). */
#include "hf-build.h"

#include "pool-clone.h"

#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

/* An RSA modulus of this size wraps the replication key for the moment it crosses between two
 * members (128-bit strength, as the AES-256 key it carries deserves more than RSA-2048's 112). */
#define RSA_BITS 3072
#define RSA_MODULUS_MAX (RSA_BITS / 8)

static CK_MECHANISM kwp_mech = {CKM_AES_KEY_WRAP_PAD, NULL, 0};

static CK_OBJECT_CLASS secret_class = CKO_SECRET_KEY, private_class = CKO_PRIVATE_KEY;
/* Each kind's CKA_KEY_TYPE, by enum hf_pool_obj. */
static CK_KEY_TYPE key_types[] = {
    [HF_POOL_OBJ_REPLICATION] = CKK_AES,
    [HF_POOL_OBJ_AES] = CKK_AES,
    [HF_POOL_OBJ_RSA] = CKK_RSA,
    [HF_POOL_OBJ_EC] = CKK_EC,
    [HF_POOL_OBJ_ED25519] = CKK_EC_EDWARDS,
};
static CK_BBOOL tmpl_true = CK_TRUE, tmpl_false = CK_FALSE;

CK_OBJECT_CLASS hf_pool_obj_class(enum hf_pool_obj obj)
{
    return obj == HF_POOL_OBJ_REPLICATION || obj == HF_POOL_OBJ_AES ? CKO_SECRET_KEY
                                                                    : CKO_PRIVATE_KEY;
}

size_t hf_pool_key_template(enum hf_pool_obj obj, const char *label,
                            CK_ATTRIBUTE out[HF_POOL_TEMPLATE_MAX])
{
    /* A data key encrypts and decrypts (an RSA one decrypts and signs, an EC or Ed25519 one
     * signs only); the replication key wraps and unwraps only, so it is no oracle for anything
     * but keys. All are token objects, sensitive (never readable in clear) and extractable (a copy
     * to another member, or to an export pool's backup, is a C_WrapKey: source-pool.c's gen_fn
     * says why that is the price of clone mode). A private key takes no CKA_ENCRYPT or CKA_WRAP:
     * its slots say CKA_SIGN and CKA_DERIVE (false but for EC keys) instead. An AES data key
     * also signs: AES-CMAC in the member is a C_Sign (source-pool.c's hf_pool_key_cmac); a
     * private key's CKA_SIGN is in the slot above, so its template stops before that last entry.
     * An AES data key wraps and unwraps too: key wrap with a pool key is a C_WrapKey or
     * C_UnwrapKey under it in the member (pool-wrap.h); the module checks each key's usage
     * first, as it does for CKA_SIGN. */
    bool priv = hf_pool_obj_class(obj) == CKO_PRIVATE_KEY, repl = obj == HF_POOL_OBJ_REPLICATION;
    bool sign_only = obj == HF_POOL_OBJ_EC || obj == HF_POOL_OBJ_ED25519;
    CK_BBOOL *data = repl ? &tmpl_false : &tmpl_true;
    CK_BBOOL *keys = repl || obj == HF_POOL_OBJ_AES ? &tmpl_true : &tmpl_false;
    /* An EC key derives too: ECDH in the member (source-pool.c's hf_pool_key_ecdh). */
    CK_BBOOL *derive = obj == HF_POOL_OBJ_EC ? &tmpl_true : &tmpl_false;
    CK_ATTRIBUTE t[] = {
        {CKA_CLASS, priv ? &private_class : &secret_class, sizeof(CK_OBJECT_CLASS)},
        {CKA_KEY_TYPE, &key_types[obj], sizeof(CK_KEY_TYPE)},
        {CKA_TOKEN, &tmpl_true, sizeof(tmpl_true)},
        {CKA_PRIVATE, &tmpl_true, sizeof(tmpl_true)},
        {CKA_SENSITIVE, &tmpl_true, sizeof(tmpl_true)},
        {CKA_EXTRACTABLE, &tmpl_true, sizeof(tmpl_true)},
        {priv ? CKA_SIGN : CKA_ENCRYPT, data, sizeof(*data)},
        {CKA_DECRYPT, sign_only ? &tmpl_false : data, sizeof(*data)},
        {priv ? CKA_DERIVE : CKA_WRAP, priv ? derive : keys, sizeof(*keys)},
        {CKA_UNWRAP, keys, sizeof(*keys)},
        {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_ID, (void *)label, strlen(label)},
        {CKA_SIGN, data, sizeof(*data)},
    };
    size_t n = sizeof(t) / sizeof(t[0]) - (priv ? 1 : 0);

    memcpy(out, t, n * sizeof(t[0]));
    return n;
}

CK_RV hf_pool_unwrap_labelled(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech,
                              CK_OBJECT_HANDLE unwrapping, const unsigned char *blob,
                              size_t blob_len, enum hf_pool_obj obj, const char *label,
                              CK_OBJECT_HANDLE *h)
{
    char pending[128];
    CK_ATTRIBUTE tmpl[HF_POOL_TEMPLATE_MAX];
    CK_ULONG nt;
    CK_ATTRIBUTE named[] = {{CKA_LABEL, (void *)label, strlen(label)},
                            {CKA_ID, (void *)label, strlen(label)}};
    CK_RV rv;

    if ((size_t)snprintf(pending, sizeof(pending), "%s%s", HF_POOL_PENDING_LABEL_PREFIX, label) >=
        sizeof(pending))
        return CKR_ARGUMENTS_BAD;
    nt = (CK_ULONG)hf_pool_key_template(obj, pending, tmpl);
    *h = CK_INVALID_HANDLE;
    rv = f->C_UnwrapKey(s, mech, unwrapping, (CK_BYTE_PTR)blob, (CK_ULONG)blob_len, tmpl, nt, h);
    if (rv != CKR_OK) return rv;
    if ((rv = f->C_SetAttributeValue(s, *h, named, 2)) != CKR_OK) {
        f->C_DestroyObject(s, *h);
        *h = CK_INVALID_HANDLE;
    }
    return rv;
}

void hf_pool_repl_label(const char *pool_name, char buf[HF_POOL_REPL_LABEL_MAX])
{
    snprintf(buf, HF_POOL_REPL_LABEL_MAX, "%s%s", HF_POOL_REPL_LABEL_PREFIX, pool_name);
}

static bool rv_is_stale_handle(CK_RV rv)
{
    return rv == CKR_KEY_HANDLE_INVALID || rv == CKR_OBJECT_HANDLE_INVALID ||
           rv == CKR_WRAPPING_KEY_HANDLE_INVALID || rv == CKR_UNWRAPPING_KEY_HANDLE_INVALID;
}

/* The key of class cls labelled label: CKR_KEY_HANDLE_INVALID when the token has none. */
static CK_RV key_find(struct hf_hsm *hsm, CK_SESSION_HANDLE s, CK_OBJECT_CLASS cls,
                      const char *label, CK_OBJECT_HANDLE *h)
{
    CK_RV rv = hf_hsm_object_find(hsm, s, cls, label, h);

    if (rv == CKR_OK && *h == CK_INVALID_HANDLE) rv = CKR_KEY_HANDLE_INVALID;
    return rv;
}

/* ---- listing a member's keys ---- */

struct labels_call {
    char **labels;
    size_t n, cap;
};

static void labels_reset(struct labels_call *c)
{
    hf_pool_labels_free(c->labels, c->n);
    memset(c, 0, sizeof(*c));
}

static CK_RV label_push(struct labels_call *c, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                        CK_OBJECT_HANDLE h)
{
    CK_OBJECT_CLASS cls = CKO_DATA;
    CK_ATTRIBUTE a[] = {{CKA_CLASS, &cls, sizeof(cls)}, {CKA_LABEL, NULL, 0}};
    char *label;
    CK_RV rv;

    rv = f->C_GetAttributeValue(s, h, a, 2);
    /* Any other object on the token (a certificate, a vendor's) is none of ours to list. */
    if (rv == CKR_ATTRIBUTE_TYPE_INVALID || rv == CKR_ATTRIBUTE_SENSITIVE) return CKR_OK;
    if (rv != CKR_OK) return rv;
    if (cls != CKO_SECRET_KEY && cls != CKO_PRIVATE_KEY) return CKR_OK;
    if (a[1].ulValueLen == (CK_ULONG)-1 || a[1].ulValueLen > 256) return CKR_OK; /* none of ours */
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        char **grown = realloc(c->labels, cap * sizeof(*grown));
        if (grown == NULL) return CKR_HOST_MEMORY;
        c->labels = grown;
        c->cap = cap;
    }
    if ((label = calloc(1, a[1].ulValueLen + 1)) == NULL) return CKR_HOST_MEMORY;
    a[1].pValue = label;
    if ((rv = f->C_GetAttributeValue(s, h, &a[1], 1)) != CKR_OK) {
        free(label);
        return rv;
    }
    c->labels[c->n++] = label;
    return CKR_OK;
}

static CK_RV labels_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                       CK_SESSION_HANDLE s, void *arg)
{
    struct labels_call *c = arg;
    CK_BBOOL yes = CK_TRUE;
    /* Both classes in one search, each object's class read with its label (label_push). */
    CK_ATTRIBUTE tmpl[] = {{CKA_TOKEN, &yes, sizeof(yes)}};
    CK_OBJECT_HANDLE hs[64];
    CK_ULONG got = 0;
    CK_RV rv, rv2;

    (void)hsm;
    (void)member;
    labels_reset(c); /* hf_hsm_run may run this twice */
    if ((rv = f->C_FindObjectsInit(s, tmpl, 1)) != CKR_OK) return rv;
    do {
        rv = f->C_FindObjects(s, hs, sizeof(hs) / sizeof(hs[0]), &got);
        for (CK_ULONG i = 0; rv == CKR_OK && i < got; i++)
            rv = label_push(c, f, s, hs[i]);
    } while (rv == CKR_OK && got > 0);
    rv2 = f->C_FindObjectsFinal(s);
    return rv != CKR_OK ? rv : rv2;
}

static int label_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

CK_RV hf_pool_labels(struct hf_pool *pool, size_t member, char ***labels, size_t *n)
{
    struct labels_call c = {0};
    CK_RV rv;

    if (pool == NULL || labels == NULL || n == NULL) return CKR_ARGUMENTS_BAD;
    *labels = NULL;
    *n = 0;
    rv = hf_pool_run_on(pool, member, labels_fn, &c);
    if (rv != CKR_OK) {
        labels_reset(&c);
        return rv;
    }
    if (c.n > 0) qsort(c.labels, c.n, sizeof(*c.labels), label_cmp);
    *labels = c.labels;
    *n = c.n;
    return CKR_OK;
}

void hf_pool_labels_free(char **labels, size_t n)
{
    for (size_t i = 0; labels != NULL && i < n; i++)
        free(labels[i]);
    free(labels);
}

bool hf_pool_labels_has(char *const *labels, size_t n, const char *label)
{
    return n > 0 && bsearch(&label, labels, n, sizeof(*labels), label_cmp) != NULL;
}

/* ---- presence ---- */

struct has_call {
    CK_OBJECT_CLASS cls;
    const char *label;
};

static CK_RV has_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                    void *arg)
{
    const struct has_call *c = arg;
    CK_OBJECT_HANDLE h;

    (void)member;
    (void)f;
    return key_find(hsm, s, c->cls, c->label, &h);
}

/* CKR_OK when member holds label of kind obj, CKR_KEY_HANDLE_INVALID when not, else the
 * executor's. */
static CK_RV member_has(struct hf_pool *pool, size_t member, enum hf_pool_obj obj,
                        const char *label)
{
    struct has_call c = {hf_pool_obj_class(obj), label};

    return hf_pool_run_on(pool, member, has_fn, &c);
}

/* ---- copying a key version under the replication key ---- */

struct wrap_call {
    const char *repl_label, *label;
    enum hf_pool_obj obj;
    unsigned char *blob;
    CK_ULONG blob_len;
};

static CK_RV wrap_once(struct hf_hsm *hsm, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                       struct wrap_call *c)
{
    CK_OBJECT_HANDLE r, h;
    CK_ULONG len = 0;
    CK_RV rv;

    if ((rv = key_find(hsm, s, CKO_SECRET_KEY, c->repl_label, &r)) != CKR_OK) return rv;
    if ((rv = key_find(hsm, s, hf_pool_obj_class(c->obj), c->label, &h)) != CKR_OK) return rv;
    if ((rv = f->C_WrapKey(s, &kwp_mech, r, h, NULL, &len)) != CKR_OK) return rv;
    free(c->blob);
    if ((c->blob = malloc(len)) == NULL) return CKR_HOST_MEMORY;
    rv = f->C_WrapKey(s, &kwp_mech, r, h, c->blob, &len);
    c->blob_len = len;
    return rv;
}

static CK_RV wrap_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                     void *arg)
{
    struct wrap_call *c = arg;
    CK_RV rv = CKR_OK;

    (void)member;
    /* A cached handle the token no longer knows is forgotten and searched for once more. */
    for (int pass = 0; pass < 2; pass++) {
        rv = wrap_once(hsm, f, s, c);
        if (!rv_is_stale_handle(rv) || pass == 1) break;
        hf_hsm_object_forget(hsm, CKO_SECRET_KEY, c->repl_label);
        hf_hsm_object_forget(hsm, hf_pool_obj_class(c->obj), c->label);
    }
    return rv;
}

/* A copied version's object: as a clone-mode generation makes it (source-pool.c says why each
 * attribute is what it is), so every member's copy can be copied again. */
static CK_RV unwrap_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                       CK_SESSION_HANDLE s, void *arg)
{
    struct wrap_call *c = arg;
    CK_OBJECT_HANDLE r = CK_INVALID_HANDLE, h = CK_INVALID_HANDLE;
    CK_RV rv;

    (void)member;
    /* Another copier (a re-sync, another node) may have been first: one object per label. */
    if (key_find(hsm, s, hf_pool_obj_class(c->obj), c->label, &h) == CKR_OK) return CKR_OK;
    for (int pass = 0; pass < 2; pass++) {
        if ((rv = key_find(hsm, s, CKO_SECRET_KEY, c->repl_label, &r)) != CKR_OK) return rv;
        rv =
            hf_pool_unwrap_labelled(f, s, &kwp_mech, r, c->blob, c->blob_len, c->obj, c->label, &h);
        if (!rv_is_stale_handle(rv)) break;
        hf_hsm_object_forget(hsm, CKO_SECRET_KEY, c->repl_label);
    }
    return rv;
}

CK_RV hf_pool_clone_copy(struct hf_pool *pool, const char *repl_label, const char *label,
                         enum hf_pool_obj obj, size_t src, size_t dst)
{
    struct wrap_call c = {.repl_label = repl_label, .label = label, .obj = obj};
    CK_RV rv;

    if (pool == NULL || repl_label == NULL || label == NULL || src == dst) return CKR_ARGUMENTS_BAD;
    if ((rv = member_has(pool, dst, obj, label)) != CKR_KEY_HANDLE_INVALID) return rv;
    /* Two calls, never one inside the other: src's slot is free again before dst's is taken. */
    rv = hf_pool_run_on(pool, src, wrap_fn, &c);
    if (rv == CKR_OK) rv = hf_pool_run_on(pool, dst, unwrap_fn, &c);
    free(c.blob); /* ciphertext under the replication key: nothing in clear */
    return rv;
}

CK_RV hf_pool_clone_copy_any(struct hf_pool *pool, const char *repl_label, const char *label,
                             enum hf_pool_obj obj, size_t dst)
{
    size_t n = hf_pool_status(pool, NULL, 0);
    CK_RV rv = CKR_KEY_HANDLE_INVALID;

    for (size_t src = 0; src < n; src++) {
        CK_RV one;
        if (src == dst) continue;
        one = hf_pool_clone_copy(pool, repl_label, label, obj, src, dst);
        if (one == CKR_OK) return CKR_OK;
        /* The copy's own failures say more than "not on that member". */
        if (one != CKR_KEY_HANDLE_INVALID && one != HF_POOL_RV_UNAVAILABLE) rv = one;
    }
    return rv;
}

/* ---- the replication key ---- */

/* The replication key (hf_pool_key_template): sensitive (its value is never readable),
 * extractable only because a new member gets it by wrapping (RSA-OAEP) and an export pool keeps
 * it wrapped under its backup KEK; wraps and unwraps, never encrypts data. */
static CK_RV repl_generate(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, const char *label)
{
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_ULONG len = 32;
    CK_ATTRIBUTE tmpl[HF_POOL_TEMPLATE_MAX + 1];
    size_t nt = hf_pool_key_template(HF_POOL_OBJ_REPLICATION, label, tmpl);
    CK_OBJECT_HANDLE h;

    tmpl[nt++] = (CK_ATTRIBUTE){CKA_VALUE_LEN, &len, sizeof(len)};
    return f->C_GenerateKey(s, &mech, tmpl, (CK_ULONG)nt, &h);
}

static CK_RV repl_gen_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                         CK_SESSION_HANDLE s, void *arg)
{
    const char *label = arg;
    CK_OBJECT_HANDLE h;

    (void)member;
    if (key_find(hsm, s, CKO_SECRET_KEY, label, &h) == CKR_OK) return CKR_OK;
    return repl_generate(f, s, label);
}

/* Step 1, on the member that lacks the key: an RSA pair of session objects, gone with the
 * session at the latest. The private key unwraps only and is never extractable. */
struct rsa_call {
    CK_OBJECT_HANDLE priv;
    unsigned char modulus[RSA_MODULUS_MAX];
    unsigned char exponent[8];
    CK_ULONG modulus_len, exponent_len;
};

static CK_RV rsa_pair_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                         CK_SESSION_HANDLE s, void *arg)
{
    struct rsa_call *c = arg;
    CK_MECHANISM mech = {CKM_RSA_PKCS_KEY_PAIR_GEN, NULL, 0};
    CK_ULONG bits = RSA_BITS;
    CK_BYTE e[] = {1, 0, 1};
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_ATTRIBUTE pub[] = {
        {CKA_TOKEN, &no, sizeof(no)},
        {CKA_ENCRYPT, &no, sizeof(no)},
        {CKA_VERIFY, &no, sizeof(no)},
        {CKA_WRAP, &yes, sizeof(yes)},
        {CKA_MODULUS_BITS, &bits, sizeof(bits)},
        {CKA_PUBLIC_EXPONENT, e, sizeof(e)},
    };
    CK_ATTRIBUTE priv[] = {
        {CKA_TOKEN, &no, sizeof(no)},       {CKA_PRIVATE, &yes, sizeof(yes)},
        {CKA_SENSITIVE, &yes, sizeof(yes)}, {CKA_EXTRACTABLE, &no, sizeof(no)},
        {CKA_DECRYPT, &no, sizeof(no)},     {CKA_SIGN, &no, sizeof(no)},
        {CKA_UNWRAP, &yes, sizeof(yes)},
    };
    CK_OBJECT_HANDLE hpub = CK_INVALID_HANDLE;
    CK_ATTRIBUTE out[] = {{CKA_MODULUS, c->modulus, sizeof(c->modulus)},
                          {CKA_PUBLIC_EXPONENT, c->exponent, sizeof(c->exponent)}};
    CK_RV rv;

    (void)hsm;
    (void)member;
    rv = f->C_GenerateKeyPair(s, &mech, pub, sizeof(pub) / sizeof(pub[0]), priv,
                              sizeof(priv) / sizeof(priv[0]), &hpub, &c->priv);
    if (rv != CKR_OK) return rv;
    rv = f->C_GetAttributeValue(s, hpub, out, 2);
    c->modulus_len = out[0].ulValueLen;
    c->exponent_len = out[1].ulValueLen;
    f->C_DestroyObject(s, hpub);
    if (rv != CKR_OK) f->C_DestroyObject(s, c->priv);
    return rv;
}

/* OAEP's hash: SHA-256 first. SoftHSMv2 2.6 refuses any OAEP hash but SHA-1 with MGF1-SHA-1
 * (MechParamCheckRSAPKCSOAEP: CKR_ARGUMENTS_BAD), so SHA-1 is the fallback; OAEP needs no
 * collision resistance from its hash, so OAEP-SHA-1 still protects the key. */
struct oaep_call {
    struct rsa_call *rsa;
    const char *repl_label;
    CK_RSA_PKCS_OAEP_PARAMS params;
    unsigned char *blob;
    CK_ULONG blob_len;
};

static bool rv_is_param_refused(CK_RV rv)
{
    return rv == CKR_ARGUMENTS_BAD || rv == CKR_MECHANISM_PARAM_INVALID ||
           rv == CKR_MECHANISM_INVALID;
}

/* Step 2, on the holder: the public key imported as a session object, the replication key
 * wrapped under it. */
static CK_RV oaep_wrap_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                          CK_SESSION_HANDLE s, void *arg)
{
    struct oaep_call *c = arg;
    CK_MECHANISM mech = {CKM_RSA_PKCS_OAEP, &c->params, sizeof(c->params)};
    CK_OBJECT_CLASS cls = CKO_PUBLIC_KEY;
    CK_KEY_TYPE type = CKK_RSA;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_ATTRIBUTE pub[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_TOKEN, &no, sizeof(no)},
        {CKA_WRAP, &yes, sizeof(yes)},
        {CKA_ENCRYPT, &no, sizeof(no)},
        {CKA_VERIFY, &no, sizeof(no)},
        {CKA_MODULUS, c->rsa->modulus, c->rsa->modulus_len},
        {CKA_PUBLIC_EXPONENT, c->rsa->exponent, c->rsa->exponent_len},
    };
    CK_OBJECT_HANDLE hpub = CK_INVALID_HANDLE, r;
    CK_ULONG len = 0;
    CK_RV rv;

    (void)member;
    if ((rv = key_find(hsm, s, CKO_SECRET_KEY, c->repl_label, &r)) != CKR_OK) return rv;
    if ((rv = f->C_CreateObject(s, pub, sizeof(pub) / sizeof(pub[0]), &hpub)) != CKR_OK) return rv;
    rv = f->C_WrapKey(s, &mech, hpub, r, NULL, &len);
    if (rv == CKR_OK) {
        free(c->blob);
        c->blob = malloc(len);
        rv = c->blob == NULL ? CKR_HOST_MEMORY : f->C_WrapKey(s, &mech, hpub, r, c->blob, &len);
        c->blob_len = len;
    }
    if (rv_is_stale_handle(rv) && rv != CKR_WRAPPING_KEY_HANDLE_INVALID)
        hf_hsm_object_forget(hsm, CKO_SECRET_KEY, c->repl_label);
    f->C_DestroyObject(s, hpub);
    return rv;
}

/* Step 3, on the member that lacks the key: unwrapped into a token object, attributes as
 * repl_gen_fn's. */
static CK_RV oaep_unwrap_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                            CK_SESSION_HANDLE s, void *arg)
{
    struct oaep_call *c = arg;
    CK_MECHANISM mech = {CKM_RSA_PKCS_OAEP, &c->params, sizeof(c->params)};
    CK_OBJECT_HANDLE h;

    (void)member;
    if (key_find(hsm, s, CKO_SECRET_KEY, c->repl_label, &h) == CKR_OK) return CKR_OK;
    return hf_pool_unwrap_labelled(f, s, &mech, c->rsa->priv, c->blob, c->blob_len,
                                   HF_POOL_OBJ_REPLICATION, c->repl_label, &h);
}

static CK_RV priv_destroy_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                             CK_SESSION_HANDLE s, void *arg)
{
    (void)hsm;
    (void)member;
    f->C_DestroyObject(s, ((struct rsa_call *)arg)->priv);
    return CKR_OK;
}

/* The replication key from holder to dst by RSA-OAEP; the steps as the file comment says, one
 * member's slot at a time. */
static CK_RV repl_copy(struct hf_pool *pool, const char *repl_label, size_t holder, size_t dst)
{
    static const CK_MECHANISM_TYPE hashes[] = {CKM_SHA256, CKM_SHA_1};
    static const CK_RSA_PKCS_MGF_TYPE mgfs[] = {CKG_MGF1_SHA256, CKG_MGF1_SHA1};
    struct rsa_call rsa = {0};
    struct oaep_call c = {.rsa = &rsa, .repl_label = repl_label};
    CK_RV rv;

    if ((rv = hf_pool_run_on_slow(pool, dst, rsa_pair_fn, &rsa)) != CKR_OK) return rv;
    for (size_t i = 0; i < sizeof(hashes) / sizeof(hashes[0]); i++) {
        c.params = (CK_RSA_PKCS_OAEP_PARAMS){
            .hashAlg = hashes[i], .mgf = mgfs[i], .source = CKZ_DATA_SPECIFIED};
        rv = hf_pool_run_on(pool, holder, oaep_wrap_fn, &c);
        if (rv == CKR_OK) rv = hf_pool_run_on(pool, dst, oaep_unwrap_fn, &c);
        if (!rv_is_param_refused(rv)) break;
    }
    hf_pool_run_on(pool, dst, priv_destroy_fn, &rsa);
    free(c.blob);
    OPENSSL_cleanse(&rsa, sizeof(rsa)); /* a public key only, but no reason to leave it */
    return rv;
}

CK_RV hf_pool_repl_ensure(struct hf_pool *pool, const char *repl_label, size_t member,
                          bool may_generate)
{
    size_t n = hf_pool_status(pool, NULL, 0);
    CK_RV rv;

    if (pool == NULL || repl_label == NULL || member >= n) return CKR_ARGUMENTS_BAD;
    if ((rv = member_has(pool, member, HF_POOL_OBJ_REPLICATION, repl_label)) !=
        CKR_KEY_HANDLE_INVALID)
        return rv;
    for (size_t holder = 0; holder < n; holder++) {
        if (holder == member ||
            member_has(pool, holder, HF_POOL_OBJ_REPLICATION, repl_label) != CKR_OK)
            continue;
        rv = repl_copy(pool, repl_label, holder, member);
        if (rv != CKR_OK)
            hf_log_warn("pool: the replication key could not be copied to a member (0x%lx)",
                        (unsigned long)rv);
        return rv;
    }
    if (!may_generate) return CKR_KEY_HANDLE_INVALID;
    return hf_pool_run_on_slow(pool, member, repl_gen_fn, (void *)repl_label);
}

/* ---- a claimed generation (core-pool-sync.c) ---- */

/* The label a claimant's replication key has until its claim is published: nobody looks for it,
 * so nothing is copied under a key whose claim may yet lose. */
static CK_RV pending_repl_label(const char *repl_label, const char *tag, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s%s#%s", HF_POOL_PENDING_LABEL_PREFIX, repl_label, tag);

    return n > 0 && (size_t)n < len ? CKR_OK : CKR_ARGUMENTS_BAD;
}

struct pending_call {
    const char *label;   /* the replication key's */
    const char *pending; /* its pending label */
    bool existed;        /* generate: the member held the replication key already */
};

static CK_RV pending_gen_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                            CK_SESSION_HANDLE s, void *arg)
{
    struct pending_call *c = arg;
    CK_OBJECT_HANDLE h;

    (void)member;
    if ((c->existed = key_find(hsm, s, CKO_SECRET_KEY, c->label, &h) == CKR_OK)) return CKR_OK;
    if (key_find(hsm, s, CKO_SECRET_KEY, c->pending, &h) == CKR_OK) return CKR_OK;
    return repl_generate(f, s, c->pending);
}

/* The pending key gets the replication key's label (publish) or is destroyed (drop). */
static CK_RV pending_finish(struct hf_hsm *hsm, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                            struct pending_call *c, bool publish)
{
    CK_ATTRIBUTE named[] = {{CKA_LABEL, (void *)c->label, strlen(c->label)},
                            {CKA_ID, (void *)c->label, strlen(c->label)}};
    CK_OBJECT_HANDLE h;
    CK_RV rv = key_find(hsm, s, CKO_SECRET_KEY, c->pending, &h);

    if (rv != CKR_OK) return rv;
    rv = publish ? f->C_SetAttributeValue(s, h, named, 2) : f->C_DestroyObject(s, h);
    /* The cached handle now names the published key, or nothing. */
    if (rv == CKR_OK || rv_is_stale_handle(rv))
        hf_hsm_object_forget(hsm, CKO_SECRET_KEY, c->pending);
    return rv;
}

static CK_RV pending_publish_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                                CK_SESSION_HANDLE s, void *arg)
{
    (void)member;
    return pending_finish(hsm, f, s, arg, true);
}

static CK_RV pending_drop_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                             CK_SESSION_HANDLE s, void *arg)
{
    (void)member;
    return pending_finish(hsm, f, s, arg, false);
}

/* SoftHSMv2 2.6 fails a token object's creation now and then with CKR_GENERAL_ERROR ("Could not
 * initialize the attribute") while another thread of the process works on the same token: its
 * object store shares unlocked flags between threads (tests/helgrind.supp). Under helgrind two
 * cores opening one clone pool saw it on 32 of 52 generations, and the claimant then gave its
 * claim up, as did the next one, leaving the members without the key until their re-sync.
 * pending_gen_fn finds what an earlier try made, so trying again is safe. */
#define PENDING_GEN_TRIES 5
#define PENDING_GEN_PAUSE_US 20000

static CK_RV pending_generate(struct hf_pool *pool, size_t member, struct pending_call *c)
{
    CK_RV rv = CKR_GENERAL_ERROR;

    for (int i = 0; i < PENDING_GEN_TRIES && rv == CKR_GENERAL_ERROR; i++) {
        if (i > 0) usleep(PENDING_GEN_PAUSE_US);
        rv = hf_pool_run_on_slow(pool, member, pending_gen_fn, c);
    }
    return rv;
}

CK_RV hf_pool_repl_generate_claimed(struct hf_pool *pool, const char *repl_label, size_t member,
                                    const char *tag, hf_pool_claim_fn publish, void *arg)
{
    char pending[HF_POOL_REPL_LABEL_MAX + sizeof(HF_POOL_PENDING_LABEL_PREFIX) + 64];
    struct pending_call c = {repl_label, pending, false};
    CK_RV rv, drop;

    if (pool == NULL || repl_label == NULL || tag == NULL || publish == NULL)
        return CKR_ARGUMENTS_BAD;
    if ((rv = pending_repl_label(repl_label, tag, pending, sizeof(pending))) != CKR_OK) return rv;
    if ((rv = pending_generate(pool, member, &c)) != CKR_OK) return rv;
    /* Made meanwhile by a process that held no claim: that one is the key; publish says so. */
    if (c.existed) return publish(arg);
    if ((rv = publish(arg)) == CKR_OK) return hf_pool_run_on(pool, member, pending_publish_fn, &c);
    /* Not ours to publish (taken over, or the store failed): gone before anybody could use it. */
    if ((drop = hf_pool_run_on(pool, member, pending_drop_fn, &c)) != CKR_OK)
        hf_log_warn("pool: an unpublished replication key stays on a member under '%s' (0x%lx): "
                    "nothing uses it",
                    pending, (unsigned long)drop);
    return rv;
}

CK_RV hf_pool_repl_adopt(struct hf_pool *pool, const char *repl_label, const char *tag)
{
    char pending[HF_POOL_REPL_LABEL_MAX + sizeof(HF_POOL_PENDING_LABEL_PREFIX) + 64];
    struct pending_call c = {repl_label, pending, false};
    size_t n = hf_pool_status(pool, NULL, 0);
    CK_RV rv = CKR_KEY_HANDLE_INVALID;

    if (pool == NULL || repl_label == NULL || tag == NULL) return CKR_ARGUMENTS_BAD;
    if (pending_repl_label(repl_label, tag, pending, sizeof(pending)) != CKR_OK)
        return CKR_ARGUMENTS_BAD;
    for (size_t i = 0; i < n; i++) {
        rv = hf_pool_run_on(pool, i, pending_publish_fn, &c);
        if (rv == CKR_OK) {
            hf_log_info("pool: a published replication key left pending (its maker stopped "
                        "half-way) is labelled now");
            return CKR_OK;
        }
    }
    return CKR_KEY_HANDLE_INVALID;
}
