/* AES key wrap with a pool key, in the member that holds it (pool-wrap.h). */
#include "hf-build.h"

#include "pool-wrap.h"

#include "secmem.h"
#include "source-pool.h"

#include <limits.h>
#include <string.h>

#include <openssl/crypto.h>

static CK_OBJECT_CLASS secret_class = CKO_SECRET_KEY;
static CK_KEY_TYPE generic_type = CKK_GENERIC_SECRET;
static CK_BBOOL tmpl_true = CK_TRUE, tmpl_false = CK_FALSE;

#define BYTES_TEMPLATE_MAX 6

struct kw_call {
    const char *label;
    CK_MECHANISM mech;
    bool wrap;
    bool check; /* a wrap whose blob is unwrapped again in the member (pool-wrap.h) */
    const unsigned char *in;
    size_t inlen;
    CK_OBJECT_HANDLE obj; /* a wrap's session object, holding in */
    unsigned char *scratch;
    size_t scratch_len, result_len;
    bool *missing; /* hf_pool_key_run's */
};

/* The session object bytes live in for one call (value NULL: one C_UnwrapKey makes). readable:
 * not sensitive, so C_GetAttributeValue gives the value (CKA_EXTRACTABLE too is needed for
 * that, PKCS#11 2.40 section 4.9); otherwise it can only be wrapped. */
static CK_ULONG bytes_template(CK_ATTRIBUTE t[BYTES_TEMPLATE_MAX], bool readable,
                               const unsigned char *value, size_t len)
{
    const CK_ATTRIBUTE tmpl[BYTES_TEMPLATE_MAX] = {
        {CKA_CLASS, &secret_class, sizeof(secret_class)},
        {CKA_KEY_TYPE, &generic_type, sizeof(generic_type)},
        {CKA_TOKEN, &tmpl_false, sizeof(CK_BBOOL)},
        {CKA_SENSITIVE, readable ? &tmpl_false : &tmpl_true, sizeof(CK_BBOOL)},
        {CKA_EXTRACTABLE, &tmpl_true, sizeof(CK_BBOOL)},
        {CKA_VALUE, (void *)value, (CK_ULONG)len},
    };
    CK_ULONG n = value != NULL ? BYTES_TEMPLATE_MAX : BYTES_TEMPLATE_MAX - 1;

    memcpy(t, tmpl, n * sizeof(tmpl[0]));
    return n;
}

/* After the key was found, these mean the blob: SoftHSMv2 2.6 answers a failed integrity check
 * CKR_GENERAL_ERROR. Never the suspect class either, so forged input takes no member out. */
static bool rv_is_bad_blob(CK_RV rv)
{
    return rv == CKR_GENERAL_ERROR || rv == CKR_FUNCTION_FAILED || rv == CKR_WRAPPED_KEY_INVALID ||
           rv == CKR_WRAPPED_KEY_LEN_RANGE || rv == CKR_ENCRYPTED_DATA_INVALID;
}

/* blob unwrapped under key into a readable session object, whose value goes into out (capacity
 * *outlen, set to the value's length) before the object is destroyed. */
static CK_RV unwrap_read(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, CK_MECHANISM *mech,
                         CK_OBJECT_HANDLE key, const unsigned char *blob, size_t len,
                         unsigned char *out, size_t *outlen)
{
    CK_ATTRIBUTE t[BYTES_TEMPLATE_MAX], value = {CKA_VALUE, out, (CK_ULONG)*outlen};
    CK_ULONG nt = bytes_template(t, true, NULL, 0);
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_RV rv = f->C_UnwrapKey(s, mech, key, (CK_BYTE_PTR)blob, (CK_ULONG)len, t, nt, &h);

    /* The token's name for a key handle it no longer knows, which hf_pool_key_use looks for. */
    if (rv == CKR_UNWRAPPING_KEY_HANDLE_INVALID) return CKR_KEY_HANDLE_INVALID;
    if (rv_is_bad_blob(rv)) return CKR_WRAPPED_KEY_INVALID;
    if (rv != CKR_OK) return rv;
    rv = f->C_GetAttributeValue(s, h, &value, 1);
    f->C_DestroyObject(s, h);
    if (rv == CKR_OK) *outlen = value.ulValueLen;
    return rv;
}

/* The blob just made, unwrapped again: it must give back exactly the bytes wrapped. */
static CK_RV wrap_check(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                        struct kw_call *c)
{
    size_t cap = c->result_len, len = cap;
    unsigned char *back = hf_secmem_alloc(cap);
    CK_RV rv = back != NULL ? CKR_OK : CKR_HOST_MEMORY;

    if (rv == CKR_OK) rv = unwrap_read(f, s, &c->mech, key, c->scratch, c->result_len, back, &len);
    if (rv == CKR_WRAPPED_KEY_INVALID ||
        (rv == CKR_OK && (len != c->inlen || CRYPTO_memcmp(back, c->in, len) != 0)))
        rv = CKR_KEY_NOT_WRAPPABLE;
    hf_secmem_free(back, cap);
    return rv;
}

static CK_RV wrap_use(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key, void *arg)
{
    struct kw_call *c = arg;
    CK_ULONG n = (CK_ULONG)c->scratch_len;
    CK_RV rv = f->C_WrapKey(s, &c->mech, key, c->obj, c->scratch, &n);

    if (rv == CKR_WRAPPING_KEY_HANDLE_INVALID) return CKR_KEY_HANDLE_INVALID; /* as unwrap_read */
    if (rv != CKR_OK) return rv;
    c->result_len = n;
    return c->check ? wrap_check(f, s, key, c) : CKR_OK;
}

static CK_RV unwrap_use(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                        void *arg)
{
    struct kw_call *c = arg;
    size_t n = c->scratch_len;
    CK_RV rv = unwrap_read(f, s, &c->mech, key, c->in, c->inlen, c->scratch, &n);

    if (rv == CKR_OK) c->result_len = n;
    return rv;
}

static CK_RV kw_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                   void *arg)
{
    struct kw_call *c = arg;
    CK_ATTRIBUTE t[BYTES_TEMPLATE_MAX];
    CK_ULONG nt = bytes_template(t, false, c->in, c->inlen);
    CK_RV rv;

    if (!c->wrap)
        return hf_pool_key_use(hsm, member, f, s, CKO_SECRET_KEY, c->label, c->missing, unwrap_use,
                               c);
    /* Gone with the session at the latest: a member that fails mid-call keeps no copy. */
    if ((rv = f->C_CreateObject(s, t, nt, &c->obj)) != CKR_OK) return rv;
    rv = hf_pool_key_use(hsm, member, f, s, CKO_SECRET_KEY, c->label, c->missing, wrap_use, c);
    f->C_DestroyObject(s, c->obj);
    return rv;
}

/* The local source's lengths (crypto.c's hf_aes_kw_wrap and hf_aes_kw_unwrap), so no member
 * sees what a local key refuses: SoftHSMv2 2.6 pads RFC 3394 input that is not whole blocks with
 * zeros rather than refuse it. *need: the result's size, an unwrap's upper bound. */
static CK_RV kw_size(bool pad, bool wrap, size_t inlen, size_t *need)
{
    if (wrap) {
        /* RFC 3394 section 2: at least two 64-bit blocks; RFC 5649: 1 to 2^32-1 octets. */
        if ((!pad && (inlen < 16 || inlen % 8 != 0)) || inlen < 1 || inlen > INT_MAX - 16)
            return CKR_DATA_LEN_RANGE;
        *need = (inlen + 7) / 8 * 8 + 8;
        return CKR_OK;
    }
    if (inlen % 8 != 0 || inlen < (pad ? 16u : 24u) || inlen > INT_MAX)
        return CKR_WRAPPED_KEY_LEN_RANGE;
    *need = inlen - 8;
    return CKR_OK;
}

CK_RV hf_pool_key_kw(struct hf_pool *pool, size_t member, const char *label, bool pad, bool wrap,
                     const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen)
{
    struct kw_call c = {.label = label,
                        .mech = {pad ? CKM_AES_KEY_WRAP_PAD : CKM_AES_KEY_WRAP, NULL, 0},
                        .wrap = wrap,
                        .check = wrap && pad && inlen % 8 != 0,
                        .in = in,
                        .inlen = inlen};
    /* An RFC 5649 unwrap's length is known once the member has checked the blob. */
    bool exact = wrap || !pad;
    size_t need = 0;
    CK_RV rv;

    if (pool == NULL || label == NULL || in == NULL || outlen == NULL) return CKR_ARGUMENTS_BAD;
    if ((rv = kw_size(pad, wrap, inlen, &need)) != CKR_OK) return rv;
    if (out == NULL || (exact && *outlen < need)) {
        rv = out == NULL ? CKR_OK : CKR_BUFFER_TOO_SMALL;
        *outlen = need;
        return rv;
    }
    /* Locked memory: an unwrap's result is a key in clear. */
    if ((c.scratch = hf_secmem_alloc(need)) == NULL) return CKR_HOST_MEMORY;
    c.scratch_len = need;
    rv = hf_pool_key_run(pool, member, kw_fn, &c, &c.missing);
    if (rv == CKR_OK && exact && c.result_len != need) rv = CKR_GENERAL_ERROR;
    if (rv == CKR_OK && c.result_len > *outlen) rv = CKR_BUFFER_TOO_SMALL;
    if (rv == CKR_OK) memcpy(out, c.scratch, c.result_len);
    if (rv == CKR_OK || rv == CKR_BUFFER_TOO_SMALL) *outlen = c.result_len;
    hf_secmem_free(c.scratch, need);
    return rv;
}
