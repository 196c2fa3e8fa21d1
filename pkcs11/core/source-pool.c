/* Keys in an HSM pool: generation, AES (GCM, ECB, CBC, CBC-PAD, CTR, CMAC), RSA and destruction
 * inside a member (source-pool.h). */
#include "hf-build.h"

#include "source-pool.h"

#include "crypto.h"
#include "curve.h"
#include "log.h"
#include "pool-clone.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

/* ---- generation ---- */

struct gen_call {
    const char *label;
    CK_ULONG value_len;
    bool extractable;
    size_t member;
};

/* A new version's object: made with the template its copies are unwrapped with
 * (hf_pool_key_template), so every member's copy is alike. Always sensitive: the value is never
 * readable in clear. A plain-mode key is never extractable either, so it never leaves its member.
 * A clone-mode key must be extractable, since copying it to another member is C_WrapKey under
 * the replication key (and an export pool's copy under its backup KEK is another C_WrapKey).
 * CKA_WRAP_WITH_TRUSTED would narrow that to trusted wrapping keys, but only a Security Officer
 * session may set CKA_TRUSTED on the replication key, and Holdfast holds members' user PINs
 * only: whoever holds a member's user PIN can wrap a clone-mode key under a key of their own. */
static size_t gen_template(enum hf_pool_obj obj, const char *label, CK_BBOOL *extractable,
                           CK_ATTRIBUTE out[HF_POOL_TEMPLATE_MAX])
{
    size_t n = hf_pool_key_template(obj, label, out);

    for (size_t i = 0; i < n; i++)
        if (out[i].type == CKA_EXTRACTABLE) out[i].pValue = extractable;
    return n;
}

static CK_RV gen_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                    void *arg)
{
    struct gen_call *g = arg;
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    CK_BBOOL extractable = g->extractable ? CK_TRUE : CK_FALSE;
    CK_ATTRIBUTE tmpl[HF_POOL_TEMPLATE_MAX + 1];
    size_t nt = gen_template(HF_POOL_OBJ_AES, g->label, &extractable, tmpl);
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_RV rv;

    (void)hsm;
    tmpl[nt++] = (CK_ATTRIBUTE){CKA_VALUE_LEN, &g->value_len, sizeof(g->value_len)};
    rv = f->C_GenerateKey(s, &mech, tmpl, (CK_ULONG)nt, &h);
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
    rv = hf_pool_run_slow(pool, gen_fn, &g);
    if (rv == CKR_OK) *member = g.member;
    return rv;
}

/* A key pair (RSA, EC or Ed25519): the private half a token object as gen_fn's AES keys are
 * (gen_template), decrypt and sign only (sign only for EC and Ed25519); the public half a session
 * object, read and destroyed at once: the store keeps it (public_der), so public work needs no
 * member. */
struct pair_gen_call {
    const char *label;
    enum hf_pool_obj obj;
    CK_ULONG bits;                /* RSA */
    const struct hf_curve *curve; /* EC, Ed25519 */
    bool extractable;
    size_t member;
    /* RSA: the modulus and exponent; EC and Ed25519: CKA_EC_POINT in pub[0] */
    unsigned char pub[2][HF_POOL_RSA_MAX_BYTES];
    CK_ULONG pub_len[2];
};

static CK_RV pair_gen_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                         CK_SESSION_HANDLE s, void *arg)
{
    struct pair_gen_call *g = arg;
    bool rsa = g->obj == HF_POOL_OBJ_RSA;
    CK_MECHANISM mech = {rsa                        ? CKM_RSA_PKCS_KEY_PAIR_GEN
                         : g->obj == HF_POOL_OBJ_EC ? CKM_EC_KEY_PAIR_GEN
                                                    : CKM_EC_EDWARDS_KEY_PAIR_GEN,
                         NULL, 0};
    CK_OBJECT_CLASS pub_cls = CKO_PUBLIC_KEY;
    CK_KEY_TYPE type = rsa ? CKK_RSA : g->obj == HF_POOL_OBJ_EC ? CKK_EC : CKK_EC_EDWARDS;
    CK_BYTE f4[] = {0x01, 0x00, 0x01};
    CK_BBOOL no = CK_FALSE, extractable = g->extractable ? CK_TRUE : CK_FALSE;
    CK_ATTRIBUTE pub_tmpl[] = {
        {CKA_CLASS, &pub_cls, sizeof(pub_cls)},
        {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_TOKEN, &no, sizeof(no)},
        /* an EC curve by its namedCurve OID, which every token reads */
        rsa ? (CK_ATTRIBUTE){CKA_MODULUS_BITS, &g->bits, sizeof(g->bits)}
            : (CK_ATTRIBUTE){CKA_EC_PARAMS, (void *)g->curve->oid, g->curve->oid_len},
        {CKA_PUBLIC_EXPONENT, f4, sizeof(f4)},
    };
    CK_ATTRIBUTE priv_tmpl[HF_POOL_TEMPLATE_MAX];
    size_t np = gen_template(g->obj, g->label, &extractable, priv_tmpl);
    CK_ATTRIBUTE comps[] = {
        {rsa ? CKA_MODULUS : CKA_EC_POINT, g->pub[0], sizeof(g->pub[0])},
        {CKA_PUBLIC_EXPONENT, g->pub[1], sizeof(g->pub[1])},
    };
    CK_ULONG ncomps = rsa ? 2 : 1;
    CK_OBJECT_HANDLE pub = CK_INVALID_HANDLE, priv = CK_INVALID_HANDLE;
    CK_RV rv;

    (void)hsm;
    rv = f->C_GenerateKeyPair(s, &mech, pub_tmpl, sizeof(pub_tmpl) / sizeof(pub_tmpl[0]) - !rsa,
                              priv_tmpl, (CK_ULONG)np, &pub, &priv);
    if (rv != CKR_OK) return rv;
    rv = f->C_GetAttributeValue(s, pub, comps, ncomps);
    f->C_DestroyObject(s, pub);
    if (rv == CKR_OK) {
        g->pub_len[0] = comps[0].ulValueLen;
        g->pub_len[1] = rsa ? comps[1].ulValueLen : 0;
        g->member = member;
    } else {
        f->C_DestroyObject(s, priv); /* no public key for the store: no key */
    }
    return rv;
}

/* Copies label (of kind obj) from member made to every other member; one that is out of service
 * or cannot take it now is marked stale, so the probe thread's re-sync gives it the key later.
 * A token that will not wrap such a key (SoftHSMv2 2.6 wraps no Ed25519 private key:
 * CKR_KEY_NOT_WRAPPABLE) could never give it to another member: the key is destroyed and that is
 * the answer, rather than a clone key that lives on one member. */
static CK_RV clone_spread(struct hf_pool *pool, const char *repl_label, const char *label,
                          enum hf_pool_obj obj, size_t made)
{
    size_t n = hf_pool_status(pool, NULL, 0);

    for (size_t i = 0; i < n; i++) {
        CK_RV rv;
        if (i == made) continue;
        rv = hf_pool_clone_copy(pool, repl_label, label, obj, made, i);
        if (rv == CKR_OK) continue;
        if (rv == CKR_KEY_NOT_WRAPPABLE || rv == CKR_KEY_UNEXTRACTABLE) {
            hf_log_error("pool: key %s cannot be copied between members (0x%lx): not made", label,
                         (unsigned long)rv);
            hf_pool_key_destroy(pool, HF_POOL_KEY_ANY_MEMBER, label);
            return rv;
        }
        if (rv != HF_POOL_RV_UNAVAILABLE)
            hf_log_warn("pool: key %s not copied to member %zu now (0x%lx): left to its re-sync",
                        label, i, (unsigned long)rv);
        hf_pool_member_stale(pool, i);
    }
    return CKR_OK;
}

CK_RV hf_pool_key_generate_clone(struct hf_pool *pool, unsigned bits, const char *label,
                                 const char *repl_label)
{
    struct gen_call g = {label, bits / 8, true, 0};
    CK_RV rv;

    if (pool == NULL || label == NULL || repl_label == NULL) return CKR_ARGUMENTS_BAD;
    if (bits != 128 && bits != 192 && bits != 256) return CKR_KEY_SIZE_RANGE;
    if ((rv = hf_pool_run_slow(pool, gen_fn, &g)) != CKR_OK) return rv;
    return clone_spread(pool, repl_label, label, HF_POOL_OBJ_AES, g.member);
}

/* The public key pair_gen_fn read, as the store keeps it. */
static CK_RV pair_public_der(const struct pair_gen_call *g, unsigned char **der, size_t *der_len)
{
    if (g->obj == HF_POOL_OBJ_RSA)
        return hf_rsa_public_der(g->pub[0], g->pub_len[0], g->pub[1], g->pub_len[1],
                                 (unsigned)g->bits, der, der_len);
    return hf_ec_public_der(g->curve->alg, g->curve->bits, g->pub[0], g->pub_len[0], der, der_len);
}

CK_RV hf_pool_key_generate_pair(struct hf_pool *pool, enum hf_alg alg, unsigned bits,
                                const char *label, const char *repl_label, size_t *member,
                                unsigned char **der, size_t *der_len)
{
    struct pair_gen_call *g;
    CK_RV rv;

    if (pool == NULL || label == NULL || member == NULL || der == NULL || der_len == NULL)
        return CKR_ARGUMENTS_BAD;
    if (alg == HF_ALG_RSA ? bits != 2048 && bits != 3072 && bits != 4096
                          : hf_curve_find(alg, bits) == NULL)
        return CKR_KEY_SIZE_RANGE;
    /* On the heap: two RSA-4096 components are a kilobyte. */
    if ((g = calloc(1, sizeof(*g))) == NULL) return CKR_HOST_MEMORY;
    *g = (struct pair_gen_call){.label = label,
                                .obj = hf_pool_obj_of(alg),
                                .bits = bits,
                                .curve = hf_curve_find(alg, bits),
                                .extractable = repl_label != NULL};
    /* As hf_pool_key_generate: the retry's member is the one recorded. */
    if ((rv = hf_pool_run_slow(pool, pair_gen_fn, g)) != CKR_OK) goto done;
    /* No copy before the public key is known: a pair the store cannot keep goes from one member. */
    if ((rv = pair_public_der(g, der, der_len)) != CKR_OK) {
        hf_pool_key_destroy(pool, g->member, label);
        goto done;
    }
    *member = g->member;
    if (repl_label != NULL) {
        *member = HF_POOL_KEY_ANY_MEMBER;
        if ((rv = clone_spread(pool, repl_label, label, g->obj, g->member)) != CKR_OK) {
            free(*der);
            *der = NULL;
        }
    }
done:
    free(g);
    return rv;
}

enum hf_pool_obj hf_pool_obj_of(enum hf_alg alg)
{
    switch (alg) {
    case HF_ALG_RSA:
        return HF_POOL_OBJ_RSA;
    case HF_ALG_EC:
        return HF_POOL_OBJ_EC;
    case HF_ALG_ED25519:
        return HF_POOL_OBJ_ED25519;
    default:
        return HF_POOL_OBJ_AES;
    }
}

/* ---- work with a key in a member ---- */

enum key_op { KEY_ENCRYPT, KEY_DECRYPT, KEY_SIGN, KEY_DERIVE_ECDH };

/* One single-part operation with the object of class cls labelled label, its output made in
 * scratch (as large as any member may ask for, so the operation always ends in the member: no
 * CKR_BUFFER_TOO_SMALL leaves it active). */
struct key_call {
    const char *label;
    CK_OBJECT_CLASS cls;
    enum key_op op;
    CK_MECHANISM mech;
    /* A mechanism the token refuses, done another way: RSA-OAEP for its hash decrypted raw and
     * decoded in process; CKM_ECDSA_SHA* as CKM_ECDSA of the hash made in process (fallback_in,
     * when set, is the input then). */
    const CK_MECHANISM *fallback;
    bool fell_back;
    const unsigned char *in, *fallback_in;
    size_t inlen, fallback_inlen;
    unsigned char *scratch;
    size_t scratch_len;
    size_t result_len;
    bool *missing; /* clone keys: per member, it answered that it lacks the object */
};

static bool rv_is_stale_handle(CK_RV rv)
{
    return rv == CKR_KEY_HANDLE_INVALID || rv == CKR_OBJECT_HANDLE_INVALID;
}

static bool rv_is_mech_refused(CK_RV rv)
{
    return rv == CKR_MECHANISM_PARAM_INVALID || rv == CKR_MECHANISM_INVALID ||
           rv == CKR_ARGUMENTS_BAD;
}

static CK_RV key_init(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, struct key_call *c,
                      CK_OBJECT_HANDLE h)
{
    /* The three Inits have one signature. */
    CK_C_SignInit init = c->op == KEY_ENCRYPT ? f->C_EncryptInit
                         : c->op == KEY_SIGN  ? f->C_SignInit
                                              : f->C_DecryptInit;
    CK_RV rv = init(s, &c->mech, h);

    c->fell_back = false;
    if (c->fallback == NULL || !rv_is_mech_refused(rv)) return rv;
    c->fell_back = true;
    return init(s, (CK_MECHANISM_PTR)c->fallback, h);
}

/* ECDH (CKD_NULL) of the private key h and the peer's point c->in: the member derives Z into a
 * session object it may read (not sensitive, extractable: Z is the output, as the local source
 * hands it out), read into the scratch and destroyed at once. */
static CK_RV key_derive_ecdh(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, struct key_call *c,
                             CK_OBJECT_HANDLE h)
{
    CK_ECDH1_DERIVE_PARAMS params = {CKD_NULL, 0, NULL, (CK_ULONG)c->inlen, (CK_BYTE_PTR)c->in};
    CK_MECHANISM mech = {CKM_ECDH1_DERIVE, &params, sizeof(params)};
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_GENERIC_SECRET;
    CK_BBOOL no = CK_FALSE, yes = CK_TRUE;
    CK_ULONG len = (CK_ULONG)c->scratch_len;
    CK_ATTRIBUTE t[] = {
        {CKA_CLASS, &cls, sizeof(cls)},       {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_TOKEN, &no, sizeof(no)},         {CKA_SENSITIVE, &no, sizeof(no)},
        {CKA_EXTRACTABLE, &yes, sizeof(yes)}, {CKA_VALUE_LEN, &len, sizeof(len)},
    };
    CK_ATTRIBUTE value = {CKA_VALUE, c->scratch, (CK_ULONG)c->scratch_len};
    CK_OBJECT_HANDLE z = CK_INVALID_HANDLE;
    CK_RV rv = f->C_DeriveKey(s, &mech, h, t, sizeof(t) / sizeof(t[0]), &z);

    if (rv != CKR_OK) return rv;
    rv = f->C_GetAttributeValue(s, z, &value, 1);
    f->C_DestroyObject(s, z);
    if (rv == CKR_OK) c->result_len = value.ulValueLen;
    return rv;
}

/* What key_fn does with the key h first (hf_pool_key_use's use): an ECDH derivation whole, any
 * other operation's Init. */
static CK_RV key_start(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h, void *arg)
{
    struct key_call *c = arg;

    return c->op == KEY_DERIVE_ECDH ? key_derive_ecdh(f, s, c, h) : key_init(f, s, c, h);
}

static CK_RV key_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                    void *arg)
{
    struct key_call *c = arg;
    CK_ULONG n = (CK_ULONG)c->scratch_len, inlen = (CK_ULONG)c->inlen;
    CK_BYTE_PTR in = (CK_BYTE_PTR)c->in;
    CK_RV rv = hf_pool_key_use(hsm, member, f, s, c->cls, c->label, c->missing, key_start, c);

    if (rv != CKR_OK || c->op == KEY_DERIVE_ECDH) return rv;
    if (c->fell_back && c->fallback_in != NULL) {
        in = (CK_BYTE_PTR)c->fallback_in;
        inlen = (CK_ULONG)c->fallback_inlen;
    }
    if (c->op == KEY_ENCRYPT) {
        rv = f->C_Encrypt(s, in, inlen, c->scratch, &n);
    } else if (c->op == KEY_SIGN) {
        rv = f->C_Sign(s, in, inlen, c->scratch, &n);
    } else {
        rv = f->C_Decrypt(s, in, inlen, c->scratch, &n);
        /* SoftHSMv2 2.6 answers input that does not decrypt (a GCM tag that does not verify,
         * an RSA block that does not unpad, CBC-PAD padding that is wrong; its lengths are
         * checked before the call) with CKR_GENERAL_ERROR, others with
         * CKR_ENCRYPTED_DATA_INVALID: after an accepted C_DecryptInit all mean the input, and
         * the local source's answer is the latter. Never the suspect class either: forged
         * input must not take the member out. */
        if (rv == CKR_GENERAL_ERROR || rv == CKR_FUNCTION_FAILED || rv == CKR_DATA_INVALID ||
            rv == CKR_DATA_LEN_RANGE)
            rv = CKR_ENCRYPTED_DATA_INVALID;
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

CK_RV hf_pool_key_run(struct hf_pool *pool, size_t member, hf_pool_fn fn, void *arg, bool **missing)
{
    return member == HF_POOL_KEY_ANY_MEMBER ? clone_run(pool, fn, arg, missing)
                                            : hf_pool_run_on(pool, member, fn, arg);
}

CK_RV hf_pool_key_use(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                      CK_SESSION_HANDLE s, CK_OBJECT_CLASS cls, const char *label, bool *missing,
                      hf_pool_key_use_fn use, void *arg)
{
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_RV rv = CKR_OK;

    /* A cached handle the token no longer knows (the object deleted and made again by another
     * process) is forgotten and searched for once more. */
    for (int pass = 0; pass < 2; pass++) {
        if ((rv = hf_hsm_object_find(hsm, s, cls, label, &h)) != CKR_OK) return rv;
        if (h == CK_INVALID_HANDLE) {
            if (missing != NULL) missing[member] = true;
            return CKR_KEY_HANDLE_INVALID;
        }
        rv = use(f, s, h, arg);
        if (!rv_is_stale_handle(rv)) break;
        hf_hsm_object_forget(hsm, cls, label);
    }
    return rv;
}

/* n result bytes from src into out, whose capacity is *outlen: CKR_BUFFER_TOO_SMALL (with the
 * size set) when short, as the two-call convention says. */
static CK_RV out_put(const unsigned char *src, size_t n, unsigned char *out, size_t *outlen)
{
    CK_RV rv = n > *outlen ? CKR_BUFFER_TOO_SMALL : CKR_OK;

    if (rv == CKR_OK) memcpy(out, src, n);
    *outlen = n;
    return rv;
}

/* Runs c on member (HF_POOL_KEY_ANY_MEMBER: clone_run) with a scratch buffer of scratch_len
 * bytes, and hands out its result: into out (capacity *outlen: CKR_BUFFER_TOO_SMALL with the
 * size set when short), exactly expect bytes long unless expect is 0. The scratch may hold
 * plaintext: cleared before it is freed. */
static CK_RV key_run(struct hf_pool *pool, size_t member, struct key_call *c, size_t expect,
                     unsigned char *out, size_t *outlen)
{
    CK_RV rv;

    if ((c->scratch = malloc(c->scratch_len)) == NULL) return CKR_HOST_MEMORY;
    rv = member == HF_POOL_KEY_ANY_MEMBER ? clone_run(pool, key_fn, c, &c->missing)
                                          : hf_pool_run_on(pool, member, key_fn, c);
    if (rv == CKR_OK && expect != 0 && c->result_len != expect) rv = CKR_GENERAL_ERROR;
    if (rv == CKR_OK) rv = out_put(c->scratch, c->result_len, out, outlen);
    OPENSSL_clear_free(c->scratch, c->scratch_len);
    c->scratch = NULL;
    return rv;
}

/* ---- AES-GCM ---- */

CK_RV hf_pool_key_gcm(struct hf_pool *pool, size_t member, const char *label, bool encrypt,
                      const unsigned char *iv, size_t ivlen, const unsigned char *aad,
                      size_t aadlen, size_t taglen, const unsigned char *in, size_t inlen,
                      unsigned char *out, size_t *outlen)
{
    CK_GCM_PARAMS params;
    struct key_call c = {.label = label,
                         .cls = CKO_SECRET_KEY,
                         .op = encrypt ? KEY_ENCRYPT : KEY_DECRYPT,
                         .mech = {CKM_AES_GCM, &params, sizeof(params)},
                         .in = in,
                         .inlen = inlen};
    size_t need;

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
    params = (CK_GCM_PARAMS){.pIv = (CK_BYTE_PTR)iv,
                             .ulIvLen = (CK_ULONG)ivlen,
                             .ulIvBits = (CK_ULONG)ivlen * 8,
                             .pAAD = (CK_BYTE_PTR)aad,
                             .ulAADLen = (CK_ULONG)aadlen,
                             .ulTagBits = (CK_ULONG)taglen * 8};
    /* What any member may ask for in either direction. */
    c.scratch_len = inlen + taglen + 1;
    /* need 0 (an empty message) is checked by the capacity alone. */
    return key_run(pool, member, &c, need, out, outlen);
}

/* ---- AES-ECB, -CBC, -CBC-PAD, -CTR and -CMAC ---- */

CK_RV hf_pool_key_aes(struct hf_pool *pool, size_t member, const char *label, enum hf_aes_mode mode,
                      bool enc, const unsigned char *iv, unsigned ctr_bits, const unsigned char *in,
                      size_t inlen, unsigned char *out, size_t *outlen)
{
    static const unsigned char none[1];
    CK_AES_CTR_PARAMS ctr;
    struct key_call c = {.label = label,
                         .cls = CKO_SECRET_KEY,
                         .op = enc ? KEY_ENCRYPT : KEY_DECRYPT,
                         .in = inlen != 0 ? in : none,
                         .inlen = inlen};
    /* A CBC-PAD decryption's length is known once the member has read the padding. */
    bool exact = !(mode == HF_AES_CBC_PAD && !enc);
    size_t need = 0;
    CK_RV rv;

    if (pool == NULL || label == NULL || outlen == NULL || (in == NULL && inlen != 0))
        return CKR_ARGUMENTS_BAD;
    if ((rv = hf_aes_cipher_size(mode, enc, iv, ctr_bits, inlen, &need)) != CKR_OK) return rv;
    if (out == NULL || (exact && *outlen < need)) {
        rv = out == NULL ? CKR_OK : CKR_BUFFER_TOO_SMALL;
        *outlen = need;
        return rv;
    }
    switch (mode) {
    case HF_AES_ECB:
        c.mech = (CK_MECHANISM){CKM_AES_ECB, NULL, 0};
        break;
    case HF_AES_CTR:
        ctr.ulCounterBits = ctr_bits;
        memcpy(ctr.cb, iv, HF_AES_BLOCK);
        c.mech = (CK_MECHANISM){CKM_AES_CTR, &ctr, sizeof(ctr)};
        break;
    default:
        c.mech = (CK_MECHANISM){mode == HF_AES_CBC ? CKM_AES_CBC : CKM_AES_CBC_PAD, (CK_VOID_PTR)iv,
                                HF_AES_BLOCK};
        break;
    }
    /* Room for CBC-PAD's padding block, and for what any member may ask for. */
    c.scratch_len = inlen + HF_AES_BLOCK;
    return key_run(pool, member, &c, exact ? need : 0, out, outlen);
}

CK_RV hf_pool_key_cmac(struct hf_pool *pool, size_t member, const char *label,
                       const unsigned char *in, size_t inlen, unsigned char out[HF_AES_BLOCK])
{
    static const unsigned char none[1];
    struct key_call c = {.label = label,
                         .cls = CKO_SECRET_KEY,
                         .op = KEY_SIGN,
                         .mech = {CKM_AES_CMAC, NULL, 0},
                         .in = inlen != 0 ? in : none,
                         .inlen = inlen,
                         .scratch_len = HF_AES_BLOCK};
    size_t len = HF_AES_BLOCK;

    if (pool == NULL || label == NULL || out == NULL || (in == NULL && inlen != 0))
        return CKR_ARGUMENTS_BAD;
    return key_run(pool, member, &c, HF_AES_BLOCK, out, &len);
}

/* ---- RSA ---- */

/* A hash by OpenSSL name (crypto.h) as PKCS#11 names it, and its hash-and-sign mechanisms. */
struct sig_hash {
    const char *md;
    CK_MECHANISM_TYPE hash, pkcs, pss, ecdsa;
    CK_RSA_PKCS_MGF_TYPE mgf;
};

static const struct sig_hash sig_hashes[] = {
    {"SHA1", CKM_SHA_1, CKM_SHA1_RSA_PKCS, CKM_SHA1_RSA_PKCS_PSS, CKM_ECDSA_SHA1, CKG_MGF1_SHA1},
    {"SHA224", CKM_SHA224, CKM_SHA224_RSA_PKCS, CKM_SHA224_RSA_PKCS_PSS, CKM_ECDSA_SHA224,
     CKG_MGF1_SHA224},
    {"SHA256", CKM_SHA256, CKM_SHA256_RSA_PKCS, CKM_SHA256_RSA_PKCS_PSS, CKM_ECDSA_SHA256,
     CKG_MGF1_SHA256},
    {"SHA384", CKM_SHA384, CKM_SHA384_RSA_PKCS, CKM_SHA384_RSA_PKCS_PSS, CKM_ECDSA_SHA384,
     CKG_MGF1_SHA384},
    {"SHA512", CKM_SHA512, CKM_SHA512_RSA_PKCS, CKM_SHA512_RSA_PKCS_PSS, CKM_ECDSA_SHA512,
     CKG_MGF1_SHA512},
};

static const struct sig_hash *sig_hash_find(const char *md)
{
    for (size_t i = 0; md != NULL && i < sizeof(sig_hashes) / sizeof(sig_hashes[0]); i++)
        if (strcasecmp(md, sig_hashes[i].md) == 0) return &sig_hashes[i];
    return NULL;
}

/* The member's mechanism for p, the local source's parameters (crypto.h): the same padding,
 * hashes, salt and label. CKR_MECHANISM_PARAM_INVALID for what PKCS#11 cannot say. */
static CK_RV rsa_mechanism(const struct hf_asym_params *p, bool sign, CK_RSA_PKCS_OAEP_PARAMS *oaep,
                           CK_RSA_PKCS_PSS_PARAMS *pss, CK_MECHANISM *mech)
{
    const struct sig_hash *h = sig_hash_find(p->md);
    const struct sig_hash *mgf = sig_hash_find(p->mgf1_md != NULL ? p->mgf1_md : p->md);

    if (p->md != NULL && h == NULL) return CKR_MECHANISM_PARAM_INVALID;
    switch (p->padding) {
    case HF_RSA_RAW:
        *mech = (CK_MECHANISM){CKM_RSA_X_509, NULL, 0};
        return p->md == NULL ? CKR_OK : CKR_MECHANISM_PARAM_INVALID;
    case HF_RSA_PKCS1:
        *mech = (CK_MECHANISM){sign && h != NULL ? h->pkcs : CKM_RSA_PKCS, NULL, 0};
        return CKR_OK;
    case HF_RSA_OAEP:
        if (sign || h == NULL || mgf == NULL) return CKR_MECHANISM_PARAM_INVALID;
        *oaep = (CK_RSA_PKCS_OAEP_PARAMS){h->hash, mgf->mgf, CKZ_DATA_SPECIFIED,
                                          (CK_VOID_PTR)p->label, (CK_ULONG)p->label_len};
        *mech = (CK_MECHANISM){CKM_RSA_PKCS_OAEP, oaep, sizeof(*oaep)};
        return CKR_OK;
    case HF_RSA_PSS:
        /* A digest signed as it is (md NULL): its hash is MGF1's, as crypto.h says. */
        if (!sign || mgf == NULL || p->pss_saltlen < 0) return CKR_MECHANISM_PARAM_INVALID;
        *pss = (CK_RSA_PKCS_PSS_PARAMS){h != NULL ? h->hash : mgf->hash, mgf->mgf,
                                        (CK_ULONG)p->pss_saltlen};
        *mech = (CK_MECHANISM){h != NULL ? h->pss : CKM_RSA_PKCS_PSS, pss, sizeof(*pss)};
        return CKR_OK;
    default:
        return CKR_MECHANISM_INVALID;
    }
}

/* CKM_RSA_X_509 input shorter than the modulus is a number without its leading zero bytes
 * (crypto.c's raw_block); tokens want the whole block. *block: k bytes, or in itself. */
static CK_RV rsa_raw_block(const unsigned char *in, size_t inlen, size_t k, unsigned char **block)
{
    *block = NULL;
    if (inlen == k) return CKR_OK;
    if (inlen > k) return CKR_DATA_LEN_RANGE;
    if ((*block = calloc(1, k)) == NULL) return CKR_HOST_MEMORY;
    memcpy(*block + (k - inlen), in, inlen);
    return CKR_OK;
}

/* An OAEP block the member decrypted raw (its token refused the OAEP hash): decoded here, the
 * local source's answer for one that does not decode. */
static CK_RV rsa_oaep_finish(const struct hf_asym_params *p, unsigned char *em, size_t k,
                             unsigned char *out, size_t *outlen)
{
    unsigned char *msg = malloc(k);
    size_t n = k;
    CK_RV rv;

    if (msg == NULL) return CKR_HOST_MEMORY;
    rv = hf_rsa_oaep_decode(p, em, k, msg, &n);
    if (rv == CKR_OK) rv = out_put(msg, n, out, outlen);
    OPENSSL_clear_free(msg, k);
    return rv;
}

CK_RV hf_pool_key_rsa(struct hf_pool *pool, size_t member, const char *label, bool sign,
                      const struct hf_asym_params *p, size_t k, const unsigned char *in,
                      size_t inlen, unsigned char *out, size_t *outlen)
{
    static const CK_MECHANISM raw = {CKM_RSA_X_509, NULL, 0};
    CK_RSA_PKCS_OAEP_PARAMS oaep;
    CK_RSA_PKCS_PSS_PARAMS pss;
    struct key_call c = {
        .label = label, .cls = CKO_PRIVATE_KEY, .op = sign ? KEY_SIGN : KEY_DECRYPT};
    unsigned char *block = NULL, *em = NULL;
    size_t em_len = k;
    CK_RV rv;

    if (pool == NULL || label == NULL || p == NULL || outlen == NULL || (in == NULL && inlen) ||
        k == 0)
        return CKR_ARGUMENTS_BAD;
    if ((rv = rsa_mechanism(p, sign, &oaep, &pss, &c.mech)) != CKR_OK) return rv;
    if (!sign && (p->padding == HF_RSA_RAW ? inlen > k : inlen != k))
        return CKR_ENCRYPTED_DATA_LEN_RANGE;
    /* The size query: a signature, or the largest message a block holds. */
    if (out == NULL) {
        *outlen = k;
        return CKR_OK;
    }
    if (p->padding == HF_RSA_RAW && (rv = rsa_raw_block(in, inlen, k, &block)) != CKR_OK)
        return sign ? rv : CKR_ENCRYPTED_DATA_LEN_RANGE;
    c.in = block != NULL ? block : in;
    c.inlen = block != NULL ? k : inlen;
    if (p->padding == HF_RSA_OAEP) c.fallback = &raw;
    c.scratch_len = k;
    if ((em = malloc(k)) == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    /* Into em first: whether the member fell back to a raw block is known only afterwards. */
    rv = key_run(pool, member, &c, 0, em, &em_len);
    if (rv == CKR_OK && c.fell_back && em_len < k) {
        /* A raw result is a number: a token may leave out its leading zero bytes, and an OAEP
         * block always starts with one. */
        memmove(em + (k - em_len), em, em_len);
        memset(em, 0, k - em_len);
    }
    if (rv == CKR_OK && c.fell_back)
        rv = rsa_oaep_finish(p, em, k, out, outlen);
    else if (rv == CKR_OK)
        rv = out_put(em, em_len, out, outlen);
done:
    free(block);
    OPENSSL_clear_free(em, k);
    return rv;
}

/* ---- ECDSA and EdDSA ---- */

/* The two-call convention's first half for a result of need bytes: true (with *rv) when it is
 * answered without the member, a size query or a short buffer. */
static bool size_answered(const unsigned char *out, size_t *outlen, size_t need, CK_RV *rv)
{
    if (out != NULL && *outlen >= need) return false;
    *rv = out == NULL ? CKR_OK : CKR_BUFFER_TOO_SMALL;
    *outlen = need;
    return true;
}

CK_RV hf_pool_key_ecdsa(struct hf_pool *pool, size_t member, const char *label,
                        const struct hf_asym_params *p, size_t half, const unsigned char *in,
                        size_t inlen, unsigned char *out, size_t *outlen)
{
    static const unsigned char none[1];
    static const CK_MECHANISM plain = {CKM_ECDSA, NULL, 0};
    const struct sig_hash *h = p != NULL ? sig_hash_find(p->md) : NULL;
    unsigned char digest[EVP_MAX_MD_SIZE], rs[2 * HF_POOL_EC_MAX_HALF];
    size_t digest_len = 0, rs_len = sizeof(rs);
    struct key_call c = {.label = label,
                         .cls = CKO_PRIVATE_KEY,
                         .op = KEY_SIGN,
                         .mech = {h != NULL ? h->ecdsa : CKM_ECDSA, NULL, 0},
                         .in = inlen != 0 ? in : none,
                         .inlen = inlen,
                         .scratch_len = 2 * half};
    CK_RV rv;

    if (pool == NULL || label == NULL || p == NULL || outlen == NULL || (in == NULL && inlen) ||
        half == 0 || half > HF_POOL_EC_MAX_HALF)
        return CKR_ARGUMENTS_BAD;
    if (p->md != NULL && h == NULL) return CKR_MECHANISM_PARAM_INVALID;
    /* DER's size is known once signed: the query gets its bound, two INTEGERs of at most half + 1
     * bytes and their 2-byte headers in a SEQUENCE of at most 3 header bytes. */
    if ((out == NULL || !p->ecdsa_der) &&
        size_answered(out, outlen, p->ecdsa_der ? 2 * (half + 3) + 3 : 2 * half, &rv))
        return rv;
    /* A token without CKM_ECDSA_SHA* (SoftHSMv2 2.6 has CKM_ECDSA alone) signs the hash made
     * here: the same signature (PKCS#11 3.0 section 2.3.7: the mechanism hashes, then ECDSA). */
    if (h != NULL) {
        if ((rv = hf_digest(p->md, c.in, inlen, digest, &digest_len)) != CKR_OK) return rv;
        c.fallback = &plain;
        c.fallback_in = digest;
        c.fallback_inlen = digest_len;
    }
    if (!p->ecdsa_der) return key_run(pool, member, &c, 2 * half, out, outlen);
    rv = key_run(pool, member, &c, 2 * half, rs, &rs_len);
    if (rv == CKR_OK) rv = hf_ecdsa_der_from_rs(rs, rs_len, out, outlen);
    return rv;
}

CK_RV hf_pool_key_eddsa(struct hf_pool *pool, size_t member, const char *label,
                        const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen)
{
    static const unsigned char none[1];
    struct key_call c = {.label = label,
                         .cls = CKO_PRIVATE_KEY,
                         .op = KEY_SIGN,
                         .mech = {CKM_EDDSA, NULL, 0},
                         .in = inlen != 0 ? in : none,
                         .inlen = inlen,
                         .scratch_len = HF_POOL_ED25519_SIG_LEN};
    CK_RV rv;

    if (pool == NULL || label == NULL || outlen == NULL || (in == NULL && inlen))
        return CKR_ARGUMENTS_BAD;
    if (size_answered(out, outlen, HF_POOL_ED25519_SIG_LEN, &rv)) return rv;
    return key_run(pool, member, &c, HF_POOL_ED25519_SIG_LEN, out, outlen);
}

CK_RV hf_pool_key_ecdh(struct hf_pool *pool, size_t member, const char *label,
                       const unsigned char *point, size_t point_len, unsigned char *z, size_t zlen)
{
    struct key_call c = {.label = label,
                         .cls = CKO_PRIVATE_KEY,
                         .op = KEY_DERIVE_ECDH,
                         .in = point,
                         .inlen = point_len,
                         .scratch_len = zlen};
    size_t len = zlen;

    if (pool == NULL || label == NULL || point == NULL || point_len == 0 || z == NULL || zlen == 0)
        return CKR_ARGUMENTS_BAD;
    return key_run(pool, member, &c, zlen, z, &len);
}

/* ---- destruction ---- */

static CK_RV destroy_class(struct hf_hsm *hsm, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                           CK_OBJECT_CLASS cls, const char *label)
{
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_RV rv;

    /* Two copiers racing (a re-sync on two nodes) can leave two objects under one label: all go.
     * A label is a version's UUID: an AES version's secret key, or an RSA one's private key. */
    for (int i = 0; i < 8; i++) {
        if ((rv = hf_hsm_object_find(hsm, s, cls, label, &h)) != CKR_OK) return rv;
        if (h == CK_INVALID_HANDLE) return CKR_OK;
        rv = f->C_DestroyObject(s, h);
        hf_hsm_object_forget(hsm, cls, label);
        if (rv != CKR_OK && !rv_is_stale_handle(rv)) return rv;
    }
    return CKR_OK;
}

static CK_RV destroy_fn(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                        CK_SESSION_HANDLE s, void *arg)
{
    CK_RV rv = destroy_class(hsm, f, s, CKO_SECRET_KEY, arg);

    (void)member;
    return rv == CKR_OK ? destroy_class(hsm, f, s, CKO_PRIVATE_KEY, arg) : rv;
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
