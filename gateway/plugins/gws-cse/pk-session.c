/* A Gmail private key for one call: the blob opened, the key as a session object for one
 * operation (pk-session.h). */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/pk-session.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>

/* The payload's key and perimeter into key; pt is authenticated, so a failure is ours. */
static enum hf_status payload_take(struct hf_request *req, const unsigned char *pt, size_t len,
                                   struct hf_cse_pk_key *key)
{
    struct hf_cse_pk_payload p;
    char why[160];

    if (!hf_cse_pk_payload_parse(pt, len, &p))
        return hf_request_fail(req, HF_STATUS_INTERNAL, "wrapped_private_key: bad payload");
    if (hf_cse_pk_key_parse(p.der, p.der_len, &key->pkey, &key->key_type, why, sizeof(why)) !=
        HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_INTERNAL, "wrapped_private_key: %s", why);
    memcpy(key->perimeter_id, p.perimeter_id, p.perimeter_len);
    key->perimeter_id[p.perimeter_len] = '\0';
    return HF_STATUS_OK;
}

enum hf_status hf_cse_pk_open(struct hf_cse_call *call, struct hf_request *req,
                              struct hf_cse_pk_key *key)
{
    const struct hf_cse_bytes *w = &call->body.wrapped_private_key;
    unsigned char *pt = NULL;
    size_t pt_len = 0;
    enum hf_status st;

    memset(key, 0, sizeof(*key));
    st = hf_cse_kek_open(call, req, HF_CSE_API_PK, w->data, w->len, &pt, &pt_len);
    if (st == HF_STATUS_OK) st = payload_take(req, pt, pt_len, key);
    if (pt != NULL) OPENSSL_clear_free(pt, pt_len);
    if (st != HF_STATUS_OK) hf_cse_pk_key_clear(key);
    return st;
}

void hf_cse_pk_key_clear(struct hf_cse_pk_key *key)
{
    if (key == NULL) return;
    EVP_PKEY_free(key->pkey); /* OpenSSL clears the private parts it frees */
    key->pkey = NULL;
}

/* The RSA private key's components as CKA_* values (RFC 8017 3.2, the second representation,
 * which is what a PKCS#11 RSA private key object holds). */
static const struct {
    CK_ATTRIBUTE_TYPE type;
    const char *param;
} rsa_parts[] = {
    {CKA_MODULUS, OSSL_PKEY_PARAM_RSA_N},
    {CKA_PUBLIC_EXPONENT, OSSL_PKEY_PARAM_RSA_E},
    {CKA_PRIVATE_EXPONENT, OSSL_PKEY_PARAM_RSA_D},
    {CKA_PRIME_1, OSSL_PKEY_PARAM_RSA_FACTOR1},
    {CKA_PRIME_2, OSSL_PKEY_PARAM_RSA_FACTOR2},
    {CKA_EXPONENT_1, OSSL_PKEY_PARAM_RSA_EXPONENT1},
    {CKA_EXPONENT_2, OSSL_PKEY_PARAM_RSA_EXPONENT2},
    {CKA_COEFFICIENT, OSSL_PKEY_PARAM_RSA_COEFFICIENT1},
};
#define N_RSA_PARTS (sizeof(rsa_parts) / sizeof(rsa_parts[0]))
#define N_FIXED 7 /* class, key type, token, private, sensitive, extractable, decrypt or sign */

/* The object's template: the fixed attributes, then the components, each in a buffer of
 * OpenSSL's secure heap that parts_clear cleanses. */
struct rsa_template {
    CK_OBJECT_CLASS cls;
    CK_KEY_TYPE type;
    CK_BBOOL yes, no;
    CK_ATTRIBUTE attrs[N_FIXED + N_RSA_PARTS];
};

static void parts_clear(struct rsa_template *t)
{
    for (size_t i = N_FIXED; i < N_FIXED + N_RSA_PARTS; i++)
        if (t->attrs[i].pValue != NULL)
            OPENSSL_secure_clear_free(t->attrs[i].pValue, t->attrs[i].ulValueLen);
}

static bool part_put(const EVP_PKEY *pkey, const char *param, CK_ATTRIBUTE *attr)
{
    BIGNUM *bn = NULL;
    bool ok = false;
    int n;

    if (!EVP_PKEY_get_bn_param(pkey, param, &bn) || (n = BN_num_bytes(bn)) <= 0) goto done;
    if ((attr->pValue = OPENSSL_secure_malloc((size_t)n)) == NULL) goto done;
    attr->ulValueLen = (CK_ULONG)n;
    ok = BN_bn2bin(bn, attr->pValue) == n;
done:
    BN_clear_free(bn);
    return ok;
}

static bool rsa_template_fill(struct rsa_template *t, const EVP_PKEY *pkey, enum hf_cse_pk_use use)
{
    size_t i = 0;

    memset(t, 0, sizeof(*t));
    t->cls = CKO_PRIVATE_KEY;
    t->type = CKK_RSA;
    t->yes = CK_TRUE;
    t->no = CK_FALSE;
    t->attrs[i++] = (CK_ATTRIBUTE){CKA_CLASS, &t->cls, sizeof(t->cls)};
    t->attrs[i++] = (CK_ATTRIBUTE){CKA_KEY_TYPE, &t->type, sizeof(t->type)};
    /* A session object: gone with the session even if C_DestroyObject never ran. */
    t->attrs[i++] = (CK_ATTRIBUTE){CKA_TOKEN, &t->no, sizeof(t->no)};
    t->attrs[i++] = (CK_ATTRIBUTE){CKA_PRIVATE, &t->yes, sizeof(t->yes)};
    t->attrs[i++] = (CK_ATTRIBUTE){CKA_SENSITIVE, &t->yes, sizeof(t->yes)};
    t->attrs[i++] = (CK_ATTRIBUTE){CKA_EXTRACTABLE, &t->no, sizeof(t->no)};
    t->attrs[i++] =
        (CK_ATTRIBUTE){use == HF_CSE_PK_SIGN ? CKA_SIGN : CKA_DECRYPT, &t->yes, sizeof(t->yes)};
    for (size_t k = 0; k < N_RSA_PARTS; k++) {
        t->attrs[i].type = rsa_parts[k].type;
        if (!part_put(pkey, rsa_parts[k].param, &t->attrs[i++])) return false;
    }
    return true;
}

/* One decrypt or sign on the object, its output in a secure buffer of the modulus' size. */
static CK_RV object_use(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE obj,
                        const struct hf_cse_pk_alg *alg, const struct hf_cse_pk_mech *m,
                        const unsigned char *in, size_t in_len, unsigned char *out,
                        CK_ULONG *out_len)
{
    CK_MECHANISM mech = m->mech;
    CK_RV rv;

    if (alg->use == HF_CSE_PK_SIGN) {
        if ((rv = p11->C_SignInit(s, &mech, obj)) != CKR_OK) return rv;
        return p11->C_Sign(s, (CK_BYTE_PTR)in, in_len, out, out_len);
    }
    if ((rv = p11->C_DecryptInit(s, &mech, obj)) != CKR_OK) return rv;
    return p11->C_Decrypt(s, (CK_BYTE_PTR)in, in_len, out, out_len);
}

enum hf_status hf_cse_pk_run(struct hf_cse_call *call, struct hf_request *req,
                             const struct hf_cse_pk_key *key, const struct hf_cse_pk_alg *alg,
                             const struct hf_cse_pk_mech *m, const unsigned char *in, size_t in_len,
                             unsigned char **out, size_t *out_len)
{
    CK_FUNCTION_LIST_PTR p11 = hf_p11_functions();
    CK_OBJECT_HANDLE obj = CK_INVALID_HANDLE;
    CK_SESSION_HANDLE s = CK_INVALID_HANDLE;
    struct rsa_template t;
    unsigned char *buf = NULL;
    size_t cap = 0;
    CK_ULONG got;
    enum hf_status st;
    CK_RV rv;

    *out = NULL;
    *out_len = 0;
    if (!rsa_template_fill(&t, key->pkey, alg->use)) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "cannot read the private key's parts");
        goto done;
    }
    cap = t.attrs[N_FIXED].ulValueLen; /* the modulus: the largest output of either use */
    if ((buf = OPENSSL_secure_malloc(cap)) == NULL) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
        goto done;
    }
    /* The second key operation of the call: its record, the module's, is the request's. */
    st = hf_request_deadline_check(req, call->px->deadline_ms, HF_STATUS_UNAVAILABLE);
    if (st != HF_STATUS_OK) goto done;
    if ((rv = hf_p11_begin(req, call->info->name, &s)) != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "opening a session", &hf_cse_ckr);
        goto done;
    }
    rv = p11->C_CreateObject(s, t.attrs, N_FIXED + N_RSA_PARTS, &obj);
    parts_clear(&t); /* the module holds its own copy now */
    memset(&t, 0, sizeof(t));
    if (rv != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, "creating the private key's session object", &hf_cse_ckr);
        goto done;
    }
    got = cap;
    rv = object_use(p11, s, obj, alg, m, in, in_len, buf, &got);
    if (rv != CKR_OK) {
        st = hf_request_fail_ckr(req, rv, alg->use == HF_CSE_PK_SIGN ? "signing" : "decrypting",
                                 &hf_cse_ckr);
        goto done;
    }
    *out = buf;
    *out_len = got;
    buf = NULL;
    st = HF_STATUS_OK;
done:
    if (obj != CK_INVALID_HANDLE) p11->C_DestroyObject(s, obj);
    parts_clear(&t);
    if (buf != NULL) OPENSSL_secure_clear_free(buf, cap);
    return st;
}
