/* Shared by the .c files of pkcs11/module only: the module's global state, sessions, objects,
 * the mechanism table. The module is thin: key management, crypto, material and audit live in
 * pkcs11/core/; this layer maps PKCS#11 calls onto them.
 *
 * Hot-path rules (ARCHITECTURE.md, performance): a session is found by index without a shared
 * lock and then locked on its own; an object is taken from the session's one-entry cache before
 * the shared object table (a read-mostly rwlock); store revalidation happens at most every
 * HF_REVALIDATE_MS by one thread. */
#ifndef HF_MODULE_INTERNAL_H
#define HF_MODULE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pkcs11/core/core.h"
#include "pkcs11/core/log.h"
#include "holdfast.h"

struct hf_session;
struct hf_object;

#define HF_EXPORT __attribute__((visibility("default")))

#define HF_SLOT_ID 1UL
#define HF_MAX_SESSIONS 4096
#define HF_REVALIDATE_MS 500
/* Multi-part operations accumulate their input; past this the operation is refused. */
#define HF_MAX_DATA_LEN (64UL * 1024 * 1024)

/* Evaluates to rv (and logs at debug level) when cond is false: argument checks at the top of
 * entry points, never assert(). */
#define hf_return_val_if_fail(cond, rv)                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            hf_log_debug("%s: check failed: %s", __func__, #cond);                                 \
            return (rv);                                                                           \
        }                                                                                          \
    } while (0)

/* ---- global state (module.c) ------------------------------------------------------------ */

enum hf_login { HF_LOGIN_NONE = 0, HF_LOGIN_USER, HF_LOGIN_SO };

struct hf_module {
    pthread_mutex_t lock; /* guards initialise/finalise and the fields below marked (lock) */
    atomic_bool initialized;
    pid_t pid;                   /* pid that initialised: a forked child must C_Initialize again */
    struct hf_config cfg;        /* (lock) */
    struct hf_core *core;        /* (lock) set while initialized */
    _Atomic enum hf_login login; /* PKCS#11 login state is per application, not per session */
    /* The user login was made with the gateway PIN (HF_USER_GATEWAY): the vendor calls that write
     * records in another API's name are allowed. Meaningful only while login is HF_LOGIN_USER. */
    atomic_bool login_gateway;
    atomic_ulong session_count;
    atomic_ulong rw_session_count;
    atomic_uint_fast64_t generation; /* bumped when the store changed under us: objects reload */
    char caller[48]; /* "pkcs11:uid:N", the audit identity of a plain PKCS#11 application; made
                      * once at C_Initialize (getuid per operation cost 4% of an AES-GCM op) */
};
extern struct hf_module hf_mod;

/* Whether the application is logged in as the gateway (HF_USER_GATEWAY). */
bool hf_module_is_gateway(void);
/* CKR_CRYPTOKI_NOT_INITIALIZED unless initialised in this process. */
CK_RV hf_module_check(void);
/* module-exit.c: finalising before the backend's exit-time teardown, and before an unload. */
void hf_module_exit_arm(void);
bool hf_module_exit_finalized(void);
/* The library version (from PACKAGE_VERSION) reported by C_GetInfo and the slot. */
CK_VERSION hf_module_version(void);
/* Copies src into a blank-padded, unterminated PKCS#11 text field of n bytes. */
void hf_pad_copy(unsigned char *dst, size_t n, const char *src);
/* Who a management call made through session s is for (the core writes its audit record):
 * the request context's api and caller, else "pkcs11" and "pkcs11:uid:<uid>" written to buf. */
void hf_module_actor(const struct hf_session *s, struct hf_actor *who, char *buf, size_t buflen);
/* Every PKCS#11 key operation and key change lands here for its audit record: fills in api,
 * caller and request id from the session's request context (vendor interface) or "pkcs11". */
CK_RV hf_module_audit(struct hf_session *s, const char *operation, const struct hf_object *obj,
                      const char *detail, CK_RV result, uint64_t started_us);
/* The record of a session object's creation or destruction: under ctx (may be NULL: "pkcs11"
 * and the application's uid), which it leaves to the session's next key operation. */
CK_RV hf_module_audit_object(const HF_REQUEST_CONTEXT *ctx, const char *operation,
                             const struct hf_object *obj, const char *detail, CK_RV result);
/* The record of the creation or destruction of what is no key (a certificate or data object,
 * cert-data.c), named item ("object:0x<handle>") and item_name, under ctx as above. */
CK_RV hf_module_audit_item(const HF_REQUEST_CONTEXT *ctx, const char *operation, const char *item,
                           const char *item_name, const char *detail, CK_RV result);
/* The record of a gateway request that ended before any key operation (HF_AuditRequest), or
 * with preauth a summary of requests refused before authentication (HF_AuditSummary), which may
 * not use the audit log's free-space reserve. */
CK_RV hf_module_audit_request(const HF_REQUEST_CONTEXT *ctx, const char *fields, CK_RV result,
                              bool preauth, CK_ULONG_LONG *seq);

/* ---- objects (object.c, attr.c, find.c) ------------------------------------------------- */

/* Handle layout: (version row id << 2) | kind. Stable across processes and restarts. */
enum hf_object_kind { HF_OBJ_SECRET = 1, HF_OBJ_PRIVATE = 2, HF_OBJ_PUBLIC = 3 };
#define HF_HANDLE(version_id, kind) ((CK_OBJECT_HANDLE)(((uint64_t)(version_id) << 2) | (kind)))
#define HF_HANDLE_VERSION_ID(h) ((int64_t)((uint64_t)(h) >> 2))
#define HF_HANDLE_KIND(h) ((enum hf_object_kind)((h)&3))

/* Session objects (session-objects.c) have handles of their own range: the bit below set, a
 * counter that never repeats while the module is loaded, and the kind in the low bits. Token
 * handles would need a store row id past 2^(CK_ULONG bits - 4) to reach it. */
#define HF_SESSION_HANDLE_BIT ((CK_OBJECT_HANDLE)1 << (sizeof(CK_OBJECT_HANDLE) * 8 - 2))
#define HF_HANDLE_IS_SESSION(h) (((h)&HF_SESSION_HANDLE_BIT) != 0)

/* What only a session object has: it is no managed key (no versions, links or states), so these
 * stand where the key model's own values stand for a token object. Owned by the object. */
struct hf_session_attrs {
    CK_SESSION_HANDLE owner; /* the session that made it: closing that session destroys it */
    bool is_private;         /* CKA_PRIVATE: visible only while the user is logged in */
    bool is_local;           /* CKA_LOCAL: generated here, not imported */
    /* CKA_ALWAYS_SENSITIVE and CKA_NEVER_EXTRACTABLE while sensitive: generated here, or derived
     * from a key that had them (PKCS#11 2.40 section 4.9: a derived key inherits them). */
    bool is_sealed;
    bool is_fixed; /* CKA_MODIFIABLE FALSE (a copy made so): C_SetAttributeValue is refused */
    unsigned char *label; /* CKA_LABEL and CKA_ID as given (any bytes) */
    size_t label_len;
    unsigned char *id;
    size_t id_len;
    char *api, *caller; /* who made it, for the record of its destruction */
    /* Its audit "key" and "key_name", made once with its handle: formatting them per record
     * cost a session object 15% of an AES-GCM operation against a token key. */
    char audit_key[32], audit_name[48];
};

/* An immutable snapshot of one face of one key version, or a session object (sobj != NULL: key
 * and version then hold only what the mechanisms and attributes read: alg, bits, usage, state,
 * exportable, public_der). Shared by reference count. */
struct hf_object {
    atomic_uint refs;
    CK_OBJECT_HANDLE handle;
    enum hf_object_kind kind;
    CK_OBJECT_CLASS cls;
    CK_KEY_TYPE key_type;
    struct hf_key key;             /* key metadata at load time */
    struct hf_key_version version; /* version metadata (wrapped material included) */
    bool is_current;
    EVP_PKEY *pub; /* RSA/EC public key (from version.public_der), for verify and encrypt */
    /* The usable material, fetched from the core on first use and kept with the object: the
     * core's cache sits behind one mutex that every operation would otherwise take. */
    _Atomic(struct hf_material *) material;
    uint64_t generation;
    struct hf_session_attrs *sobj; /* NULL for a token object */
};

/* A new reference to the object behind handle, loaded from the store on first use and reloaded
 * when hf_mod.generation moved. CKR_OBJECT_HANDLE_INVALID when there is none, or when it is a
 * private object and nobody is logged in. */
CK_RV hf_object_get(struct hf_session *s, CK_OBJECT_HANDLE handle, struct hf_object **out);
struct hf_object *hf_object_ref(struct hf_object *obj);
void hf_object_unref(struct hf_object *obj);
/* Whether obj is a version of a pool key (its material never leaves the pool's member: no
 * hf_object_material, AES-GCM through hf_core_key_gcm). Session objects never are. */
static inline bool hf_object_is_in_pool(const struct hf_object *obj)
{
    return obj->sobj == NULL && hf_key_version_is_in_pool(&obj->version);
}
/* The usable material (secret/private faces): hf_core_material with the object's version. */
CK_RV hf_object_material(struct hf_object *obj, struct hf_material **out);
/* usage_bit: HF_USAGE_*. CKR_KEY_FUNCTION_NOT_PERMITTED outside the key's mask or the face's
 * role (a public key never decrypts); CKR_KEY_FUNCTION_NOT_PERMITTED too when the KMIP state
 * forbids it (pre-active, destroyed; deactivated/compromised except decrypt, unwrap, verify). */
CK_RV hf_object_check_usage(const struct hf_object *obj, unsigned long usage_bit);
/* hf_object_check_usage as a yes/no (also what CKA_ENCRYPT & co. report). */
bool hf_object_is_usable_for(const struct hf_object *obj, unsigned long usage_bit);
/* Drops every cached object (finalize, fork). */
void hf_objects_flush(void);
/* Revalidates against the store at most every HF_REVALIDATE_MS (cheap when nothing changed). */
void hf_objects_revalidate(void);
/* After a change made through this module: every cached object reloads on next use. */
void hf_objects_changed(void);
/* In a forked child: the object table's locks may be held by threads that are gone; the
 * parent's objects are left behind unfreed and the table starts empty. */
void hf_objects_atfork(void);
/* Fills handle, cls, key_type and is_current of obj from obj->key and obj->version for face
 * kind. CKR_OBJECT_HANDLE_INVALID when the key has no such face (an AES key is never public). */
CK_RV hf_object_face_init(struct hf_object *obj, enum hf_object_kind kind);
/* Whether the calling application may see obj (private faces need a user login). */
bool hf_object_is_visible(const struct hf_object *obj);

/* ---- session objects (session-objects.c, session-keys.c) ---------------------------------- */

/* A new reference to the session object behind handle: CKR_OBJECT_HANDLE_INVALID when there is
 * none (visibility is hf_object_get's). */
CK_RV hf_session_object_get(CK_OBJECT_HANDLE handle, struct hf_object **out);
/* Gives obj (kind, cls, key_type, key, version, pub, material and sobj filled in; the reference
 * is taken over) a handle and makes it visible to every session, with its creation record.
 * A private object needs the user logged in (CKR_USER_NOT_LOGGED_IN), checked under the table's
 * lock so that a logout in between cannot leave it behind. */
CK_RV hf_session_object_add(struct hf_session *s, struct hf_object *obj, CK_OBJECT_HANDLE *out);
/* hf_session_object_add whose creation record says why (C_CopyObject). */
CK_RV hf_session_object_add_why(struct hf_session *s, struct hf_object *obj, const char *why,
                                CK_OBJECT_HANDLE *out);
/* A new object (reference 1) sharing obj's material and public key, with the label and id
 * replaced by label's and id's values (NULL: obj's); obj's handle until it is added. */
CK_RV hf_session_object_dup(const struct hf_object *obj, const CK_ATTRIBUTE *label,
                            const CK_ATTRIBUTE *id, struct hf_object **out);
/* C_DestroyObject of a session object (any session may: they are the application's). */
CK_RV hf_session_object_destroy(struct hf_session *s, CK_OBJECT_HANDLE handle);
/* C_SetAttributeValue of a session object: its CKA_LABEL and CKA_ID become label's and id's
 * values (NULL: unchanged). The object is replaced by a changed copy: objects are immutable. */
CK_RV hf_session_object_set(const struct hf_object *obj, const CK_ATTRIBUTE *label,
                            const CK_ATTRIBUTE *id);
/* Calls visit on every session object in handle order (creation order), under the table's read
 * lock: visit must not call back into the table. */
CK_RV hf_session_objects_each(CK_RV (*visit)(const struct hf_object *obj, void *arg), void *arg);
/* The ends of a session object's life, each recorded: the closing of the session that made it
 * (with s locked), logout (the private ones), C_Finalize (flush: every object, recorded with
 * detail why unless it is NULL), and fork (atfork: the parent's objects are abandoned, the table
 * starts empty). */
void hf_session_objects_close(struct hf_session *s);
void hf_session_objects_logout(void);
void hf_session_objects_flush(const char *why);
void hf_session_objects_atfork(void);

/* Session key objects from templates (session-keys.c), called by keygen.c once the mechanism and
 * the template's class and key type are checked. m is borrowed (the objects take their own
 * references); local: generated here (CKA_LOCAL). */
CK_RV hf_session_key_secret(struct hf_session *s, struct hf_material *m, bool local,
                            const CK_ATTRIBUTE *tmpl, CK_ULONG n, CK_OBJECT_HANDLE *out);
/* A key made by C_DeriveKey (CKA_LOCAL FALSE); sealed: the base key was always sensitive and
 * never extractable, which the new key keeps while it is sensitive itself. */
CK_RV hf_session_key_derived(struct hf_session *s, struct hf_material *m, bool sealed,
                             const CK_ATTRIBUTE *tmpl, CK_ULONG n, CK_OBJECT_HANDLE *out);
/* pub NULL: only the private object (C_CreateObject, C_UnwrapKey). */
CK_RV hf_session_key_pair(struct hf_session *s, struct hf_material *m, bool local,
                          const CK_ATTRIBUTE *pub_tmpl, CK_ULONG pub_n,
                          const CK_ATTRIBUTE *priv_tmpl, CK_ULONG priv_n, CK_OBJECT_HANDLE *pub,
                          CK_OBJECT_HANDLE *priv);
/* C_CreateObject of a CKO_PUBLIC_KEY (RSA: CKA_MODULUS and CKA_PUBLIC_EXPONENT; EC:
 * CKA_EC_PARAMS and CKA_EC_POINT). */
CK_RV hf_session_key_public(struct hf_session *s, const CK_ATTRIBUTE *tmpl, CK_ULONG n,
                            CK_OBJECT_HANDLE *out);
/* The SubjectPublicKeyInfo DER (malloc'd) of the RSA or EC public key a template describes
 * (CKA_EC_POINT DER or bare): OpenSSL checks the point is on the curve, the RSA key as a public
 * key (CKR_ATTRIBUTE_VALUE_INVALID). */
CK_RV hf_tmpl_public_der(CK_KEY_TYPE type, const CK_ATTRIBUTE *t, CK_ULONG n, unsigned char **der,
                         size_t *len);
/* The template asks for a session object: CKA_TOKEN FALSE (absent means a token object here: a
 * Holdfast key is persistent unless asked otherwise). */
CK_RV hf_tmpl_is_session(const CK_ATTRIBUTE *tmpl, CK_ULONG n, bool *session);

/* ---- certificate and data objects (cert-data.c) ------------------------------------------ */

/* Past this a CKA_VALUE (or any attribute) of a certificate or data object is
 * CKR_ATTRIBUTE_VALUE_INVALID: a certificate chain fits many times over. */
#define HF_DOBJ_VALUE_MAX (64UL * 1024)
/* Handles of kind 0 (no key face has it), and templates of CKO_CERTIFICATE or CKO_DATA. */
bool hf_dobj_is_handle(CK_OBJECT_HANDLE h);
bool hf_dobj_is_template(const CK_ATTRIBUTE *tmpl, CK_ULONG n);
/* The entry points' work for such objects: C_CreateObject, C_GetAttributeValue,
 * C_SetAttributeValue, C_GetObjectSize, C_DestroyObject, and the objects that match tmpl for
 * C_FindObjectsInit (token and/or session ones, pushed in store then creation order). */
CK_RV hf_dobj_create(struct hf_session *s, const CK_ATTRIBUTE *tmpl, CK_ULONG n,
                     CK_OBJECT_HANDLE *out);
CK_RV hf_dobj_attrs_get(CK_OBJECT_HANDLE h, CK_ATTRIBUTE *tmpl, CK_ULONG n);
CK_RV hf_dobj_attrs_set(struct hf_session *s, CK_OBJECT_HANDLE h, const CK_ATTRIBUTE *tmpl,
                        CK_ULONG n);
CK_RV hf_dobj_size(CK_OBJECT_HANDLE h, CK_ULONG *size);
CK_RV hf_dobj_destroy(struct hf_session *s, CK_OBJECT_HANDLE h);
CK_RV hf_dobj_find(const CK_ATTRIBUTE *tmpl, CK_ULONG n, bool token, bool session,
                   CK_RV (*push)(void *arg, CK_OBJECT_HANDLE h), void *arg);
/* The ends of session ones, as hf_session_objects_close & co. (which call these). */
void hf_dobjs_close(CK_SESSION_HANDLE owner);
void hf_dobjs_logout(void);
void hf_dobjs_flush(const char *why);
void hf_dobjs_atfork(void);

/* ---- attributes and templates (attr.c) -------------------------------------------------- */

/* Fills one attribute by the rules of C_GetAttributeValue (PKCS#11 2.40 section 5.7): CKR_OK,
 * or CKR_ATTRIBUTE_SENSITIVE / CKR_ATTRIBUTE_TYPE_INVALID / CKR_BUFFER_TOO_SMALL with
 * ulValueLen = CK_UNAVAILABLE_INFORMATION. *secret is set when a key value was copied out. */
CK_RV hf_object_attr_get(const struct hf_object *obj, CK_ATTRIBUTE *attr, bool *secret);
/* Whether every attribute of tmpl has exactly obj's value (C_FindObjectsInit semantics). */
bool hf_object_matches(const struct hf_object *obj, const CK_ATTRIBUTE *tmpl, CK_ULONG n);
/* Template readers: the first attribute of type, or NULL. A present attribute of the wrong size
 * is CKR_ATTRIBUTE_VALUE_INVALID. *val is left alone when the attribute is absent. */
const CK_ATTRIBUTE *hf_tmpl_find(const CK_ATTRIBUTE *tmpl, CK_ULONG n, CK_ATTRIBUTE_TYPE type);

/* label-id.c: a caller's CKA_LABEL and CKA_ID on a token key, kept as the key's labels
 * p11.label (a CKA_LABEL that is not a key name: spaces, any UTF-8) and p11.id (hex). */
#define HF_P11_TEXT_MAX 255
#define HF_P11_LABEL "p11.label"
#define HF_P11_ID "p11.id"
/* Set when a caller destroyed a pair's public object: the key and its private face stay. */
#define HF_P11_PUBLIC_GONE "p11.public-destroyed"
/* 1..255 bytes of UTF-8 without control characters. */
bool hf_p11_label_is_valid(const void *value, size_t len);
/* out: 2 * len + 1 bytes. */
void hf_p11_hex(const void *in, size_t len, char *out);
/* The key's CKA_LABEL (p11.label, else its name) and CKA_ID (p11.id's bytes into out, at
 * least HF_P11_TEXT_MAX; false: none, the version UUID stands). */
const char *hf_p11_key_label(const struct hf_key *key);
bool hf_p11_key_id(const struct hf_key *key, unsigned char *out, size_t *len);
CK_RV hf_tmpl_bool(const CK_ATTRIBUTE *tmpl, CK_ULONG n, CK_ATTRIBUTE_TYPE type, bool *present,
                   bool *val);
CK_RV hf_tmpl_ulong(const CK_ATTRIBUTE *tmpl, CK_ULONG n, CK_ATTRIBUTE_TYPE type, bool *present,
                    CK_ULONG *val);
/* The usage mask a template asks for: *usage (the algorithm's default) with each CKA_ENCRYPT &
 * co. given TRUE added and each given FALSE removed. */
CK_RV hf_tmpl_usage(const CK_ATTRIBUTE *tmpl, CK_ULONG n, unsigned long *usage);
/* Exportable: CKA_EXTRACTABLE TRUE and CKA_SENSITIVE not TRUE (the key model has one switch). */
CK_RV hf_tmpl_exportable(const CK_ATTRIBUTE *tmpl, CK_ULONG n, bool *exportable);
/* CKA_EC_PARAMS (namedCurve OID or PrintableString name) to P-256 / P-384 / P-521 bits. */
CK_RV hf_tmpl_ec_bits(const CK_ATTRIBUTE *a, unsigned *bits);
/* The same for a curve of alg (HF_ALG_EC, HF_ALG_ED25519: "edwards25519" or 1.3.101.112). */
CK_RV hf_tmpl_curve_bits(const CK_ATTRIBUTE *a, enum hf_alg alg, unsigned *bits);
/* CKR_ARGUMENTS_BAD when a template or one of its values is NULL where a length says data. */
CK_RV hf_tmpl_check(const CK_ATTRIBUTE *tmpl, CK_ULONG n);

/* ---- sessions (session.c) -------------------------------------------------------------- */

enum hf_op_kind {
    HF_OP_ENCRYPT = 0,
    HF_OP_DECRYPT,
    HF_OP_SIGN,
    HF_OP_VERIFY,
    HF_OP_DIGEST,
    HF_OP_KINDS
};

/* One active cryptographic operation. Parameters are copied at Init time. */
struct hf_op {
    bool active;
    CK_MECHANISM_TYPE mech;
    struct hf_object *obj;        /* NULL for digest */
    struct hf_material *material; /* taken once at Init for private/secret-key work; unref'd by
                                   * hf_op_reset (NULL for digest and public-key operations) */
    struct hf_asym_params asym;
    const char *asym_md; /* static strings for asym.md / mgf1_md */
    unsigned char *iv;   /* GCM */
    size_t iv_len;
    unsigned char *aad; /* GCM AAD, OAEP label */
    size_t aad_len;
    size_t tag_len;     /* GCM tag bytes, MAC bytes */
    unsigned ctr_bits;  /* AES-CTR counter bits */
    unsigned char *buf; /* multi-part input collected so far */
    size_t buf_len, buf_cap;
    uint64_t started_us;
};

struct hf_session {
    pthread_mutex_t lock; /* held by the thread using the session, for the whole call */
    CK_SESSION_HANDLE handle;
    bool open;
    CK_FLAGS flags; /* CKF_SERIAL_SESSION | CKF_RW_SESSION */
    struct hf_op ops[HF_OP_KINDS];
    /* C_FindObjects state */
    bool find_active;
    CK_OBJECT_HANDLE *found;
    size_t found_n, found_pos;
    /* one-entry object cache (see object.c) */
    struct hf_object *last_obj;
    /* vendor interface: request context for the next key operation (strings owned here) */
    HF_REQUEST_CONTEXT ctx;
    bool has_ctx;
    char
        *fields; /* 1.3: the request's audit fields, canonical (audit-fields.h); cleared with ctx */
    CK_FLAGS audit_flags; /* 1.4: HF_REQUEST_AUDIT_*; cleared with ctx */
    uint64_t last_audit_seq;
    CK_RV last_audit_result; /* the result that record holds */
};

/* Finds and locks an open session: CKR_SESSION_HANDLE_INVALID otherwise. Release with
 * hf_session_put. Session structs are never freed while the module is initialised (closed ones
 * are reused), so the lookup needs no shared lock. */
CK_RV hf_session_get(CK_SESSION_HANDLE handle, struct hf_session **out);
void hf_session_put(struct hf_session *s);
/* Entry points that change keys need a R/W session (CKR_SESSION_READ_ONLY) and a logged-in user
 * (CKR_USER_NOT_LOGGED_IN). */
CK_RV hf_session_check_write(const struct hf_session *s);
void hf_op_reset(struct hf_op *op);
/* Appends to op->buf, refusing past HF_MAX_DATA_LEN (CKR_DATA_LEN_RANGE). */
CK_RV hf_op_append(struct hf_op *op, const unsigned char *data, size_t len);
void hf_sessions_close_all(void);
/* Clears the request context and the audit fields. */
void hf_session_clear_ctx(struct hf_session *s);
/* C_Initialize: the session table starts empty. */
CK_RV hf_sessions_init(void);
/* C_Finalize (after hf_sessions_close_all) frees every session struct. abandon: in a forked
 * child, forget the parent's sessions without freeing or locking anything (a lock's holder may
 * be gone, and freeing what a session holds takes locks). */
void hf_sessions_release(bool abandon);

/* ---- mechanisms (mech.c, mech-*.c) ------------------------------------------------------ */

struct hf_mech_info {
    CK_MECHANISM_TYPE type;
    const char *name; /* "CKM_AES_GCM": audit detail */
    CK_MECHANISM_INFO info;
};

const struct hf_mech_info *hf_mech_find(CK_MECHANISM_TYPE type);
/* Fills the list, two-call convention. */
CK_RV hf_mech_list(CK_MECHANISM_TYPE_PTR list, CK_ULONG_PTR count);

/* Validates pMechanism for op and key, copies its parameters into op (CKR_MECHANISM_INVALID,
 * CKR_MECHANISM_PARAM_INVALID, CKR_KEY_TYPE_INCONSISTENT). */
CK_RV hf_mech_op_init(struct hf_op *op, enum hf_op_kind kind, const CK_MECHANISM *mech,
                      struct hf_object *obj);
/* Runs the one-shot operation of op over in (two-call convention on out). */
CK_RV hf_mech_encrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                      size_t *outlen);
CK_RV hf_mech_decrypt(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                      size_t *outlen);
CK_RV hf_mech_sign(struct hf_op *op, const unsigned char *in, size_t inlen, unsigned char *out,
                   size_t *outlen);
CK_RV hf_mech_verify(struct hf_op *op, const unsigned char *in, size_t inlen,
                     const unsigned char *sig, size_t siglen);

/* Key generation and import from templates (keygen.c): create a Holdfast key through the core. */
CK_RV hf_keygen_secret(struct hf_session *s, const CK_MECHANISM *mech, const CK_ATTRIBUTE *tmpl,
                       CK_ULONG n, CK_OBJECT_HANDLE *out);
CK_RV hf_keygen_pair(struct hf_session *s, const CK_MECHANISM *mech, const CK_ATTRIBUTE *pub_tmpl,
                     CK_ULONG pub_n, const CK_ATTRIBUTE *priv_tmpl, CK_ULONG priv_n,
                     CK_OBJECT_HANDLE *pub, CK_OBJECT_HANDLE *priv);
/* A new key from given material (C_CreateObject, C_UnwrapKey): bytes are a raw AES key or a
 * PKCS#8 PrivateKeyInfo DER; the template gives name, usage and extractability as for key
 * generation (CKA_CLASS/CKA_KEY_TYPE, when present, must agree with alg). *out is the secret or
 * private face. The caller has checked the session is R/W with a user logged in. */
CK_RV hf_keygen_import(struct hf_session *s, enum hf_alg alg, unsigned bits,
                       const unsigned char *bytes, size_t len, const CK_ATTRIBUTE *tmpl, CK_ULONG n,
                       CK_OBJECT_HANDLE *out);

/* keygen.c: pushes the big-endian integer attribute type of the template (required:
 * CKR_TEMPLATE_INCOMPLETE when absent or empty) as OSSL_PARAM name; *bn is the caller's to
 * BN_clear_free. */
CK_RV hf_tmpl_bn_push(OSSL_PARAM_BLD *bld, const CK_ATTRIBUTE *tmpl, CK_ULONG n,
                      CK_ATTRIBUTE_TYPE type, const char *name, BIGNUM **bn);

/* ---- the vendor interface (vendor.c) ---------------------------------------------------- */
extern const HF_FUNCTION_LIST hf_vendor_functions;

/* PKCS#11 3.0 entry points (pkcs11-compat.h has their types; p11-kit 0.24 no prototypes). */
CK_RV C_GetInterfaceList(CK_INTERFACE_PTR pInterfacesList, CK_ULONG_PTR pulCount);
CK_RV C_GetInterface(CK_UTF8CHAR_PTR pInterfaceName, CK_VERSION_PTR pVersion,
                     CK_INTERFACE_PTR_PTR ppInterface, CK_FLAGS flags);

#endif
