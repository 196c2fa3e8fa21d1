/* The shared bodies of the cryptographic entry points: C_{Encrypt,Decrypt,Sign,Verify,Digest}
 * Init, the single-part call, Update and Final all run through here, so the operation-state
 * rules, the two-call convention and the audit record are written once.
 *
 * PKCS#11 2.40 section 5.2: a single-part or Final call ends the operation unless it returned
 * CKR_BUFFER_TOO_SMALL or was a successful size query (NULL output). An Update that fails ends
 * it too (section 5.12 and pkcs11-tool, which re-Inits after a failed Update). */
#include "hf-build.h"

#include <string.h>

#include <openssl/crypto.h>

#include "pkcs11/module/mech.h"

const char *hf_entry_op_name(enum hf_op_kind kind)
{
    static const char *const names[HF_OP_KINDS] = {"encrypt", "decrypt", "sign", "verify",
                                                   "digest"};

    return kind < HF_OP_KINDS ? names[kind] : "unknown";
}

static const char *mech_name(CK_MECHANISM_TYPE type)
{
    const struct hf_mech_info *info = hf_mech_find(type);

    return info != NULL ? info->name : "unknown";
}

/* Ends op with result rv: the audit record of a key operation (digests have none), and the
 * output withheld when that record cannot be written (a key operation must never go
 * unrecorded). */
static CK_RV op_finish(struct hf_session *s, struct hf_op *op, enum hf_op_kind kind, CK_RV rv,
                       unsigned char *out, size_t outlen)
{
    CK_RV arv = CKR_OK;

    if (kind != HF_OP_DIGEST)
        arv = hf_module_audit(s, hf_entry_op_name(kind), op->obj, mech_name(op->mech), rv,
                              op->started_us);
    if (arv != CKR_OK) {
        if (out != NULL) OPENSSL_cleanse(out, outlen);
        rv = CKR_HF_AUDIT_FAILED;
    }
    hf_op_reset(op);
    return rv;
}

static CK_RV digest_init(struct hf_op *op, const CK_MECHANISM *mech)
{
    if (hf_mech_family(mech->mechanism) != HF_FAMILY_DIGEST) return CKR_MECHANISM_INVALID;
    op->mech = mech->mechanism;
    op->asym_md = hf_mech_hash_md(mech->mechanism, NULL);
    op->active = true;
    return CKR_OK;
}

CK_RV hf_entry_refusal(struct hf_session *s, const char *operation, const struct hf_object *obj,
                       CK_MECHANISM_TYPE mech, CK_RV rv)
{
    /* Once a caller has named a key it may use, a failed start is an attempt on that key and is
     * recorded, whatever the reason (usage, KMIP state, mechanism, parameters): the gateway
     * relies on the core for the one record of its request. A blocked link hides the key, and
     * is recorded without it. */
    if (rv == CKR_OK || (obj == NULL && rv != CKR_HF_LINK_BLOCKED)) return rv;
    if (hf_module_audit(s, operation, obj, mech_name(mech), rv, hf_monotonic_us()) != CKR_OK)
        return CKR_HF_AUDIT_FAILED;
    return rv;
}

static CK_RV key_init(struct hf_session *s, struct hf_op *op, enum hf_op_kind kind,
                      const CK_MECHANISM *mech, CK_OBJECT_HANDLE key)
{
    struct hf_object *obj = NULL;
    CK_RV rv = hf_object_get(s, key, &obj);

    if (rv == CKR_OBJECT_HANDLE_INVALID) rv = CKR_KEY_HANDLE_INVALID;
    if (rv == CKR_OK) rv = hf_mech_op_init(op, kind, mech, obj);
    rv = hf_entry_refusal(s, hf_entry_op_name(kind), obj, mech->mechanism, rv);
    hf_object_unref(obj);
    return rv;
}

CK_RV hf_entry_init(CK_SESSION_HANDLE hs, enum hf_op_kind kind, CK_MECHANISM_PTR mech,
                    CK_OBJECT_HANDLE key)
{
    struct hf_session *s;
    struct hf_op *op;
    CK_RV rv = hf_session_get(hs, &s);

    if (rv != CKR_OK) return rv;
    op = &s->ops[kind];
    if (mech == NULL)
        rv = CKR_ARGUMENTS_BAD;
    else if (op->active)
        rv = CKR_OPERATION_ACTIVE;
    else if (kind == HF_OP_DIGEST)
        rv = digest_init(op, mech);
    else
        rv = key_init(s, op, kind, mech, key);
    hf_session_put(s);
    return rv;
}

static CK_RV op_run(struct hf_op *op, enum hf_op_kind kind, const unsigned char *in, size_t inlen,
                    unsigned char *out, size_t *outlen)
{
    switch (kind) {
    case HF_OP_ENCRYPT:
        return hf_mech_encrypt(op, in, inlen, out, outlen);
    case HF_OP_DECRYPT:
        return hf_mech_decrypt(op, in, inlen, out, outlen);
    case HF_OP_SIGN:
        return hf_mech_sign(op, in, inlen, out, outlen);
    case HF_OP_DIGEST:
        return hf_mech_digest(op, in, inlen, out, outlen);
    default:
        return CKR_FUNCTION_FAILED;
    }
}

/* The one-shot over in, with the two-call convention; op stays active for a size answer. */
static CK_RV op_complete(struct hf_session *s, struct hf_op *op, enum hf_op_kind kind,
                         const unsigned char *in, size_t inlen, unsigned char *out,
                         CK_ULONG_PTR outlen)
{
    size_t len;
    CK_RV rv;

    if (outlen == NULL) return op_finish(s, op, kind, CKR_ARGUMENTS_BAD, NULL, 0);
    len = *outlen;
    rv = op_run(op, kind, in, inlen, out, &len);
    *outlen = len;
    if (rv == CKR_BUFFER_TOO_SMALL || (rv == CKR_OK && out == NULL)) return rv;
    return op_finish(s, op, kind, rv, out, rv == CKR_OK ? len : 0);
}

/* The session hs, held (hf_session_put it), and its operation of kind, which has been
 * initialised; CKR_OPERATION_NOT_INITIALIZED, with nothing held, when it has not. */
static CK_RV active_op_get(CK_SESSION_HANDLE hs, enum hf_op_kind kind, struct hf_session **s,
                           struct hf_op **op)
{
    CK_RV rv = hf_session_get(hs, s);

    if (rv != CKR_OK) return rv;
    *op = &(*s)->ops[kind];
    if ((*op)->active) return CKR_OK;
    hf_session_put(*s);
    return CKR_OPERATION_NOT_INITIALIZED;
}

CK_RV hf_entry_oneshot(CK_SESSION_HANDLE hs, enum hf_op_kind kind, const unsigned char *in,
                       CK_ULONG inlen, unsigned char *out, CK_ULONG_PTR outlen)
{
    struct hf_session *s;
    struct hf_op *op;
    CK_RV rv = active_op_get(hs, kind, &s, &op);

    if (rv != CKR_OK) return rv;
    if (op->buf_len != 0)
        /* Section 5.12: a single-part call cannot finish a multi-part operation. */
        rv = CKR_OPERATION_ACTIVE;
    else if (in == NULL && inlen != 0)
        rv = op_finish(s, op, kind, CKR_ARGUMENTS_BAD, NULL, 0);
    else
        rv = op_complete(s, op, kind, in, inlen, out, outlen);
    hf_session_put(s);
    return rv;
}

CK_RV hf_entry_update(CK_SESSION_HANDLE hs, enum hf_op_kind kind, const unsigned char *in,
                      CK_ULONG inlen, unsigned char *out, CK_ULONG_PTR outlen)
{
    bool has_output = kind == HF_OP_ENCRYPT || kind == HF_OP_DECRYPT;
    struct hf_session *s;
    struct hf_op *op;
    CK_RV rv = active_op_get(hs, kind, &s, &op);

    if (rv != CKR_OK) return rv;
    if ((in == NULL && inlen != 0) || (has_output && outlen == NULL)) {
        rv = op_finish(s, op, kind, CKR_ARGUMENTS_BAD, NULL, 0);
        goto done;
    }
    /* Single-part mechanisms: the standard's answer, and the operation ends (SoftHSMv2 does the
     * same), recorded as any failed key operation. */
    if (hf_mech_is_single_part(op->mech)) {
        rv = op_finish(s, op, kind, CKR_FUNCTION_NOT_SUPPORTED, NULL, 0);
        goto done;
    }
    /* Every mechanism here needs its whole input (GCM verifies the tag before releasing any
     * plaintext; RSA and key wrap are single-block): parts are collected and the output comes
     * at Final. A NULL output buffer is a size query: answer 0 and consume nothing. */
    if (has_output) {
        *outlen = 0;
        if (out == NULL) goto done;
    }
    rv = hf_op_append(op, in, inlen);
    if (rv != CKR_OK) rv = op_finish(s, op, kind, rv, NULL, 0);
done:
    hf_session_put(s);
    return rv;
}

CK_RV hf_entry_final(CK_SESSION_HANDLE hs, enum hf_op_kind kind, unsigned char *out,
                     CK_ULONG_PTR outlen)
{
    struct hf_session *s;
    struct hf_op *op;
    CK_RV rv = active_op_get(hs, kind, &s, &op);

    if (rv != CKR_OK) return rv;
    rv = op_complete(s, op, kind, op->buf, op->buf_len, out, outlen);
    hf_session_put(s);
    return rv;
}

CK_RV hf_entry_verify(CK_SESSION_HANDLE hs, const unsigned char *in, CK_ULONG inlen,
                      const unsigned char *sig, CK_ULONG siglen, bool final)
{
    struct hf_session *s;
    struct hf_op *op;
    CK_RV rv = active_op_get(hs, HF_OP_VERIFY, &s, &op);

    if (rv != CKR_OK) return rv;
    if (!final && op->buf_len != 0) {
        rv = CKR_OPERATION_ACTIVE;
        goto done;
    }
    if (final) {
        in = op->buf;
        inlen = op->buf_len;
    }
    if ((in == NULL && inlen != 0) || (sig == NULL && siglen != 0))
        rv = CKR_ARGUMENTS_BAD;
    else
        rv = hf_mech_verify(op, in, inlen, sig, siglen);
    rv = op_finish(s, op, HF_OP_VERIFY, rv, NULL, 0);
done:
    hf_session_put(s);
    return rv;
}
