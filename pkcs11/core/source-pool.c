/* Keys in an HSM pool: generation, AES-GCM and destruction inside a member (source-pool.h). */
#include "hf-build.h"

#include "source-pool.h"

#include "log.h"
#include "pool-clone.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* ---- generation ---- */

struct gen_call {
    const char *label;
    CK_ULONG value_len;
    bool extractable;
    size_t member;
};

static CK_RV gen_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                    void *arg)
{
    struct gen_call *g = arg;
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE, extractable = g->extractable ? CK_TRUE : CK_FALSE;
    /* Always sensitive: the value is never readable in clear. A plain-mode key is never
     * extractable either, so it never leaves its member. A clone-mode key must be extractable,
     * since copying it to another member is C_WrapKey under the replication key (and an export
     * pool's copy under its backup KEK is another C_WrapKey). CKA_WRAP_WITH_TRUSTED would narrow
     * that to trusted wrapping keys, but only a Security Officer session may set CKA_TRUSTED
     * on the replication key, and Holdfast holds members' user PINs only: whoever holds a
     * member's user PIN can wrap a clone-mode key under a key of their own. */
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_VALUE_LEN, &g->value_len, sizeof(g->value_len)},
        {CKA_TOKEN, &yes, sizeof(yes)},
        {CKA_PRIVATE, &yes, sizeof(yes)},
        {CKA_SENSITIVE, &yes, sizeof(yes)},
        {CKA_EXTRACTABLE, &extractable, sizeof(extractable)},
        {CKA_ENCRYPT, &yes, sizeof(yes)},
        {CKA_DECRYPT, &yes, sizeof(yes)},
        {CKA_WRAP, &no, sizeof(no)},
        {CKA_UNWRAP, &no, sizeof(no)},
        {CKA_LABEL, (void *)g->label, strlen(g->label)},
        {CKA_ID, (void *)g->label, strlen(g->label)},
    };
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_RV rv;

    (void)hsm;
    rv = f->C_GenerateKey(s, &mech, tmpl, sizeof(tmpl) / sizeof(tmpl[0]), &h);
    if (rv == CKR_OK) g->member = member;
    return rv;
}

CK_RV hf_pool_key_generate(struct hf_pool *pool, unsigned bits, const char *label, size_t *member)
{
    struct gen_call g = {label, bits / 8, false, 0};
    CK_RV rv;

    if (pool == NULL || label == NULL || member == NULL) return CKR_ARGUMENTS_BAD;
    if (bits != 128 && bits != 192 && bits != 256) return CKR_KEY_SIZE_RANGE;
    /* A member that made the key and then failed before answering leaves an orphan there; the
     * retry's member is the one recorded. */
    rv = hf_pool_run(pool, gen_fn, &g);
    if (rv == CKR_OK) *member = g.member;
    return rv;
}

/* Copies label from member made to every other member; one that is out of service or cannot
 * take it now is marked stale, so the probe thread's re-sync gives it the key later. */
static void clone_spread(struct hf_pool *pool, const char *repl_label, const char *label,
                         size_t made)
{
    size_t n = hf_pool_status(pool, NULL, 0);

    for (size_t i = 0; i < n; i++) {
        CK_RV rv;
        if (i == made) continue;
        rv = hf_pool_clone_copy(pool, repl_label, label, made, i);
        if (rv == CKR_OK) continue;
        if (rv != HF_POOL_RV_UNAVAILABLE)
            hf_log_warn("pool: key %s not copied to member %zu now (0x%lx): left to its re-sync",
                        label, i, (unsigned long)rv);
        hf_pool_member_stale(pool, i);
    }
}

CK_RV hf_pool_key_generate_clone(struct hf_pool *pool, unsigned bits, const char *label,
                                 const char *repl_label)
{
    struct gen_call g = {label, bits / 8, true, 0};
    CK_RV rv;

    if (pool == NULL || label == NULL || repl_label == NULL) return CKR_ARGUMENTS_BAD;
    if (bits != 128 && bits != 192 && bits != 256) return CKR_KEY_SIZE_RANGE;
    if ((rv = hf_pool_run(pool, gen_fn, &g)) != CKR_OK) return rv;
    clone_spread(pool, repl_label, label, g.member);
    return CKR_OK;
}

/* ---- AES-GCM ---- */

struct gcm_call {
    const char *label;
    bool encrypt;
    CK_GCM_PARAMS params;
    const unsigned char *in;
    size_t inlen;
    unsigned char *scratch; /* inlen + tag bytes: what any member may ask for */
    size_t scratch_len;
    size_t result_len;
    bool *missing; /* clone keys: per member, it answered that it lacks the object */
};

static bool rv_is_stale_handle(CK_RV rv)
{
    return rv == CKR_KEY_HANDLE_INVALID || rv == CKR_OBJECT_HANDLE_INVALID;
}

static CK_RV gcm_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                    void *arg)
{
    struct gcm_call *c = arg;
    CK_MECHANISM mech = {CKM_AES_GCM, &c->params, sizeof(c->params)};
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_ULONG n = (CK_ULONG)c->scratch_len;
    CK_RV rv = CKR_OK;

    /* A cached handle the token no longer knows (the object deleted and made again by another
     * process) is forgotten and searched for once more. */
    for (int pass = 0; pass < 2; pass++) {
        if ((rv = hf_hsm_object_find(hsm, s, CKO_SECRET_KEY, c->label, &h)) != CKR_OK) return rv;
        if (h == CK_INVALID_HANDLE) {
            if (c->missing != NULL) c->missing[member] = true;
            return CKR_KEY_HANDLE_INVALID;
        }
        rv = c->encrypt ? f->C_EncryptInit(s, &mech, h) : f->C_DecryptInit(s, &mech, h);
        if (!rv_is_stale_handle(rv)) break;
        hf_hsm_object_forget(hsm, CKO_SECRET_KEY, c->label);
    }
    if (rv != CKR_OK) return rv;
    /* The scratch buffer is as large as the input plus a tag, more than either direction
     * needs, so the operation always ends here (no CKR_BUFFER_TOO_SMALL leaves it active). */
    if (c->encrypt) {
        rv = f->C_Encrypt(s, (CK_BYTE_PTR)c->in, (CK_ULONG)c->inlen, c->scratch, &n);
    } else {
        rv = f->C_Decrypt(s, (CK_BYTE_PTR)c->in, (CK_ULONG)c->inlen, c->scratch, &n);
        /* SoftHSMv2 2.6 answers a tag that does not verify with CKR_GENERAL_ERROR (its
         * decryptFinal fails), others with CKR_ENCRYPTED_DATA_INVALID: after an accepted
         * C_DecryptInit both mean the input, and the local source's answer is the latter. */
        if (rv == CKR_GENERAL_ERROR || rv == CKR_FUNCTION_FAILED) rv = CKR_ENCRYPTED_DATA_INVALID;
    }
    if (rv == CKR_BUFFER_TOO_SMALL) rv = CKR_GENERAL_ERROR; /* never: the buffer is sized */
    if (rv == CKR_OK) c->result_len = n;
    return rv;
}

/* Members whose misses a request tracks on its stack; a larger pool (pool.h sets no limit, the
 * store does: HF_POOL_MEMBERS_MAX) takes them from the heap. No allocation on the hot path. */
#define MISSING_ON_STACK 64

/* A clone-mode key's work (fn sets (*missing)[member] when the member lacks the object) on any
 * healthy member, failover included; when the member it lands on lacks the object, on each other
 * member in turn until one has it. Each member that lacked it is marked stale for its re-sync,
 * never taken out of service: one missing object says nothing of the member's health. Every
 * attempt is a call of its own, so no member's slot is held while another's is awaited. */
static CK_RV clone_run(struct hf_pool *pool, hf_pool_fn fn, void *arg, bool **missing)
{
    bool on_stack[MISSING_ON_STACK] = {false}, busy = false;
    size_t n = hf_pool_status(pool, NULL, 0);
    CK_RV rv;

    *missing = n <= MISSING_ON_STACK ? on_stack : calloc(n, sizeof(**missing));
    if (*missing == NULL) return CKR_HOST_MEMORY;
    rv = hf_pool_run(pool, fn, arg);
    for (size_t i = 0; rv == CKR_KEY_HANDLE_INVALID && i < n; i++) {
        CK_RV one;
        if ((*missing)[i]) continue;
        one = hf_pool_run_on(pool, i, fn, arg);
        /* A member out of service cannot say; any other answer is the call's. */
        if (one == HF_POOL_RV_THROTTLED) busy = true;
        if (one != HF_POOL_RV_UNAVAILABLE && one != HF_POOL_RV_THROTTLED) rv = one;
    }
    /* A member that may have it was only busy: the caller's throttling answer, to retry. */
    if (rv == CKR_KEY_HANDLE_INVALID && busy) rv = HF_POOL_RV_THROTTLED;
    for (size_t i = 0; i < n; i++)
        if ((*missing)[i]) hf_pool_member_stale(pool, i);
    if (*missing != on_stack) free(*missing);
    *missing = NULL;
    return rv;
}

CK_RV hf_pool_key_gcm(struct hf_pool *pool, size_t member, const char *label, bool encrypt,
                      const unsigned char *iv, size_t ivlen, const unsigned char *aad,
                      size_t aadlen, size_t taglen, const unsigned char *in, size_t inlen,
                      unsigned char *out, size_t *outlen)
{
    struct gcm_call c = {.label = label, .encrypt = encrypt, .in = in, .inlen = inlen};
    size_t need;
    CK_RV rv;

    if (pool == NULL || label == NULL || iv == NULL || outlen == NULL || (in == NULL && inlen) ||
        (aad == NULL && aadlen) || out == NULL)
        return CKR_ARGUMENTS_BAD;
    if (!encrypt && inlen < taglen) return CKR_ENCRYPTED_DATA_LEN_RANGE;
    if (inlen > SIZE_MAX - taglen - 1) return CKR_DATA_LEN_RANGE;
    need = encrypt ? inlen + taglen : inlen - taglen;
    if (*outlen < need) {
        *outlen = need;
        return CKR_BUFFER_TOO_SMALL;
    }
    c.params = (CK_GCM_PARAMS){.pIv = (CK_BYTE_PTR)iv,
                               .ulIvLen = (CK_ULONG)ivlen,
                               .ulIvBits = (CK_ULONG)ivlen * 8,
                               .pAAD = (CK_BYTE_PTR)aad,
                               .ulAADLen = (CK_ULONG)aadlen,
                               .ulTagBits = (CK_ULONG)taglen * 8};
    c.scratch_len = inlen + taglen + 1;
    if ((c.scratch = malloc(c.scratch_len)) == NULL) return CKR_HOST_MEMORY;
    rv = member == HF_POOL_KEY_ANY_MEMBER ? clone_run(pool, gcm_fn, &c, &c.missing)
                                          : hf_pool_run_on(pool, member, gcm_fn, &c);
    if (rv == CKR_OK && c.result_len != need) rv = CKR_GENERAL_ERROR;
    if (rv == CKR_OK) {
        memcpy(out, c.scratch, need);
        *outlen = need;
    }
    OPENSSL_clear_free(c.scratch, c.scratch_len); /* it may hold plaintext */
    return rv;
}

/* ---- destruction ---- */

static CK_RV destroy_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                        CK_SESSION_HANDLE s, void *arg)
{
    const char *label = arg;
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_RV rv;

    (void)member;
    /* Two copiers racing (a re-sync on two nodes) can leave two objects under one label: all go. */
    for (int i = 0; i < 8; i++) {
        if ((rv = hf_hsm_object_find(hsm, s, CKO_SECRET_KEY, label, &h)) != CKR_OK) return rv;
        if (h == CK_INVALID_HANDLE) return CKR_OK;
        rv = f->C_DestroyObject(s, h);
        hf_hsm_object_forget(hsm, CKO_SECRET_KEY, label);
        if (rv != CKR_OK && !rv_is_stale_handle(rv)) return rv;
    }
    return CKR_OK;
}

CK_RV hf_pool_key_destroy(struct hf_pool *pool, size_t member, const char *label)
{
    size_t n = hf_pool_status(pool, NULL, 0);
    CK_RV rv = CKR_OK;

    if (pool == NULL || label == NULL) return CKR_ARGUMENTS_BAD;
    if (member != HF_POOL_KEY_ANY_MEMBER)
        return hf_pool_run_on(pool, member, destroy_fn, (void *)label);
    /* Every member it can reach; the first failure is the answer, the others still tried. */
    for (size_t i = 0; i < n; i++) {
        CK_RV one = hf_pool_run_on(pool, i, destroy_fn, (void *)label);
        if (one != CKR_OK && rv == CKR_OK) rv = one;
    }
    return rv;
}
