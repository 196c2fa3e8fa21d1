#include "hf-build.h"

#include "root.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "secmem.h"

/* The KEK and up to this many MAC keys (the policy's and the audit chain's two). */
#define ROOT_KEYS_MAX 8
/* An RFC 5649 wrap of KCV_PLAIN: 32 bytes, one 8-byte integrity block more. */
#define KCV_MAX (32 + 8)

/* What the KCVs are made of. 32 bytes, a multiple of 8: SoftHSMv2 pads nothing (hsm.h). The MAC
 * keys' string shares no prefix with what they sign in earnest (policy.c, audit.c). */
static const unsigned char KCV_PLAIN[32] = "holdfast root key check value v1";
static const char KCV_MAC_INPUT[] = "holdfast-root-key-check";

struct kcv {
    unsigned char v[KCV_MAX];
    size_t len;
};

#define REF_STORED ((size_t)-1)
/* The reference as text: this prefix, then each key's KCV in hex, the KEK's first, ','-separated
 * (hf_root_reference). */
#define REF_PREFIX "kcv1:"

struct hf_root {
    struct hf_hsm *hsm;   /* one token: borrowed */
    struct hf_pool *pool; /* a pool: owned */
    /* A pool's, fixed at open: labels[0] is the KEK, the others MAC keys; the members' names. */
    char *labels[ROOT_KEYS_MAX];
    size_t n_labels;
    char *names[HF_ROOT_MEMBERS_MAX];
    size_t n_members;
    pthread_mutex_t lock; /* guards everything below */
    bool has_ref;
    size_t ref_member; /* REF_STORED: the reference was given at open (the store's) */
    struct kcv ref[ROOT_KEYS_MAX];
    enum hf_root_check check[HF_ROOT_MEMBERS_MAX];
    size_t differs[HF_ROOT_MEMBERS_MAX]; /* MISSING, DIFFERS: which key */
};

/* ---- the key check ---- */

/* The KCV of key i (labels[0] the KEK, the others MAC keys) on the token whose session s is. */
static CK_RV kcv_compute(char *const *labels, size_t i, struct hf_hsm *hsm, CK_SESSION_HANDLE s,
                         struct kcv *out)
{
    unsigned char *blob = NULL;
    size_t len = 0;
    CK_RV rv;

    if (i > 0) {
        out->len = HF_HSM_MAC_LEN;
        return hf_hsm_hmac_on(hsm, s, labels[i], (const unsigned char *)KCV_MAC_INPUT,
                              sizeof(KCV_MAC_INPUT) - 1, out->v);
    }
    rv = hf_hsm_wrap_on(hsm, s, labels[0], KCV_PLAIN, sizeof(KCV_PLAIN), &blob, &len);
    if (rv == CKR_OK && len > KCV_MAX) rv = CKR_FUNCTION_FAILED;
    if (rv == CKR_OK) memcpy(out->v, blob, out->len = len);
    free(blob);
    return rv;
}

static bool rv_is_key_missing(CK_RV rv)
{
    return rv == CKR_WRAPPING_KEY_HANDLE_INVALID || rv == CKR_KEY_HANDLE_INVALID;
}

/* Who the reference is, for people. Under root->lock, with has_ref. */
static void ref_describe(const struct hf_root *root, char *buf, size_t len)
{
    if (root->ref_member == REF_STORED)
        snprintf(buf, len, "the reference stored by `holdfast init` ([hsm]'s keys)");
    else
        snprintf(buf, len, "member %s's", root->names[root->ref_member]);
}

/* Notes member's refusal, logged when it is news. Under root->lock. */
static void refusal_log(struct hf_root *root, size_t member, size_t key, bool missing)
{
    enum hf_root_check now = missing ? HF_ROOT_CHECK_MISSING : HF_ROOT_CHECK_DIFFERS;
    char ref[128];

    if (root->check[member] == now && root->differs[member] == key) return;
    root->check[member] = now;
    root->differs[member] = key;
    if (root->has_ref) ref_describe(root, ref, sizeof(ref));
    if (missing && root->has_ref && root->ref_member == REF_STORED)
        hf_log_error("root: member %s refused, kept out of service: it lacks the key '%s' (clone "
                     "the token of [hsm] to it)",
                     root->names[member], root->labels[key]);
    else if (missing && root->has_ref)
        hf_log_error("root: member %s refused, kept out of service: it lacks the key '%s' (clone "
                     "the token of member %s to it)",
                     root->names[member], root->labels[key], root->names[root->ref_member]);
    else if (missing)
        hf_log_error("root: member %s refused, kept out of service: it lacks the key '%s' "
                     "(`holdfast init` makes the keys on the first member, to be cloned)",
                     root->names[member], root->labels[key]);
    else
        hf_log_error("root: member %s refused, kept out of service: its key '%s' differs from "
                     "%s (it is not a clone of that token)",
                     root->names[member], root->labels[key], ref);
}

/* got against the reference, which got becomes when there is none yet. Under root->lock. */
static CK_RV kcvs_compare(struct hf_root *root, size_t member, const struct kcv *got)
{
    char ref[128];

    if (!root->has_ref) {
        memcpy(root->ref, got, root->n_labels * sizeof(*got));
        root->ref_member = member;
        root->has_ref = true;
    }
    for (size_t i = 0; i < root->n_labels; i++) {
        if (got[i].len == root->ref[i].len &&
            CRYPTO_memcmp(got[i].v, root->ref[i].v, got[i].len) == 0)
            continue;
        refusal_log(root, member, i, false);
        return CKR_KEY_CHANGED;
    }
    if (root->check[member] != HF_ROOT_CHECK_SAME && root->check[member] != HF_ROOT_CHECK_PENDING) {
        ref_describe(root, ref, sizeof(ref));
        hf_log_info("root: member %s holds the same keys as %s now", root->names[member], ref);
    }
    root->check[member] = HF_ROOT_CHECK_SAME;
    return CKR_OK;
}

/* The pool's probe_fn, at open and before a member comes back: its KCVs equal the reference's. */
static CK_RV member_check(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f,
                          CK_SESSION_HANDLE s, void *arg)
{
    struct hf_root *root = arg;
    struct kcv got[ROOT_KEYS_MAX];
    CK_RV rv = CKR_OK;

    (void)f;
    if (member >= root->n_members) return CKR_ARGUMENTS_BAD;
    for (size_t i = 0; i < root->n_labels && rv == CKR_OK; i++) {
        if ((rv = kcv_compute(root->labels, i, hsm, s, &got[i])) == CKR_OK) continue;
        /* Anything else is the member's trouble of the moment: the probe tries again. */
        if (!rv_is_key_missing(rv)) return rv;
        pthread_mutex_lock(&root->lock);
        refusal_log(root, member, i, true);
        pthread_mutex_unlock(&root->lock);
        return rv;
    }
    pthread_mutex_lock(&root->lock);
    rv = kcvs_compare(root, member, got);
    pthread_mutex_unlock(&root->lock);
    return rv;
}

/* ---- open and close ---- */

static struct hf_root *root_new(void)
{
    struct hf_root *root = calloc(1, sizeof(*root));

    if (root != NULL) pthread_mutex_init(&root->lock, NULL);
    return root;
}

static void root_free(struct hf_root *root)
{
    for (size_t i = 0; i < root->n_labels; i++)
        free(root->labels[i]);
    for (size_t i = 0; i < root->n_members; i++)
        free(root->names[i]);
    pthread_mutex_destroy(&root->lock);
    free(root);
}

CK_RV hf_root_of_hsm(struct hf_hsm *hsm, struct hf_root **out)
{
    struct hf_root *root;

    if (hsm == NULL || out == NULL) return CKR_ARGUMENTS_BAD;
    if ((root = root_new()) == NULL) return CKR_HOST_MEMORY;
    root->hsm = hsm;
    *out = root;
    return CKR_OK;
}

/* The labels and names the check needs, copied into root. */
static CK_RV root_fill(struct hf_root *root, const struct hf_pool_member_spec *members,
                       size_t n_members, const struct hf_root_keys *keys)
{
    root->labels[root->n_labels++] = strdup(keys->kek_label);
    for (size_t i = 0; i < keys->n_mac_labels; i++)
        root->labels[root->n_labels++] = strdup(keys->mac_labels[i]);
    for (size_t i = 0; i < n_members; i++)
        root->names[root->n_members++] = strdup(members[i].name ? members[i].name : "?");
    for (size_t i = 0; i < root->n_labels; i++)
        if (root->labels[i] == NULL) return CKR_HOST_MEMORY;
    for (size_t i = 0; i < root->n_members; i++)
        if (root->names[i] == NULL) return CKR_HOST_MEMORY;
    return CKR_OK;
}

/* ---- the reference as text ---- */

static CK_RV ref_encode(const struct kcv *ref, size_t n, char **text)
{
    static const char digits[] = "0123456789abcdef";
    size_t len = sizeof(REF_PREFIX);
    char *t, *p;

    for (size_t i = 0; i < n; i++)
        len += 2 * ref[i].len + 1;
    if ((t = malloc(len)) == NULL) return CKR_HOST_MEMORY;
    p = t + strlen(strcpy(t, REF_PREFIX));
    for (size_t i = 0; i < n; i++) {
        if (i > 0) *p++ = ',';
        for (size_t j = 0; j < ref[i].len; j++) {
            *p++ = digits[ref[i].v[j] >> 4];
            *p++ = digits[ref[i].v[j] & 15];
        }
    }
    *p = '\0';
    *text = t;
    return CKR_OK;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* text into n KCVs: the KEK's a wrap (KCV_MAX), the MAC keys' HF_HSM_MAC_LEN each. */
static bool ref_decode(const char *text, struct kcv *ref, size_t n)
{
    const char *p = text;

    if (strncmp(p, REF_PREFIX, strlen(REF_PREFIX)) != 0) return false;
    p += strlen(REF_PREFIX);
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        if (i > 0 && *p++ != ',') return false;
        while (hex_digit(p[0]) >= 0 && hex_digit(p[1]) >= 0) {
            if (len == KCV_MAX) return false;
            ref[i].v[len++] = (unsigned char)(hex_digit(p[0]) << 4 | hex_digit(p[1]));
            p += 2;
        }
        if (i == 0 ? len == 0 : len != HF_HSM_MAC_LEN) return false;
        ref[i].len = len;
    }
    return *p == '\0';
}

CK_RV hf_root_reference(struct hf_root *root, char **text)
{
    CK_RV rv = CKR_KEY_HANDLE_INVALID;

    if (root == NULL || text == NULL) return CKR_ARGUMENTS_BAD;
    *text = NULL;
    if (root->pool == NULL) return rv;
    pthread_mutex_lock(&root->lock);
    if (root->has_ref) rv = ref_encode(root->ref, root->n_labels, text);
    pthread_mutex_unlock(&root->lock);
    return rv;
}

struct ref_call {
    char *labels[ROOT_KEYS_MAX];
    size_t n;
    struct kcv kcv[ROOT_KEYS_MAX];
};

static CK_RV ref_fn(struct hf_hsm *hsm, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, void *arg)
{
    struct ref_call *c = arg;
    CK_RV rv = CKR_OK;

    (void)f;
    for (size_t i = 0; i < c->n && rv == CKR_OK; i++)
        rv = kcv_compute(c->labels, i, hsm, s, &c->kcv[i]);
    return rv;
}

static bool keys_are_valid(const struct hf_root_keys *keys);

CK_RV hf_root_reference_of_hsm(struct hf_hsm *hsm, const struct hf_root_keys *keys, char **text)
{
    struct ref_call c = {.n = 0};
    CK_RV rv;

    if (hsm == NULL || text == NULL || !keys_are_valid(keys)) return CKR_ARGUMENTS_BAD;
    *text = NULL;
    c.labels[c.n++] = (char *)keys->kek_label;
    for (size_t i = 0; i < keys->n_mac_labels; i++)
        c.labels[c.n++] = (char *)keys->mac_labels[i];
    if ((rv = hf_hsm_run(hsm, ref_fn, &c)) == CKR_OK) rv = ref_encode(c.kcv, c.n, text);
    return rv;
}

/* Why no member could be put in service, one line naming each. */
static void open_refused_log(struct hf_root *root)
{
    char line[1024];
    size_t used = 0;

    pthread_mutex_lock(&root->lock);
    for (size_t i = 0; i < root->n_members && used < sizeof(line); i++) {
        const char *why = root->check[i] == HF_ROOT_CHECK_MISSING   ? "lacks"
                          : root->check[i] == HF_ROOT_CHECK_DIFFERS ? "other key"
                                                                    : "unreachable";
        const char *key =
            root->check[i] == HF_ROOT_CHECK_MISSING || root->check[i] == HF_ROOT_CHECK_DIFFERS
                ? root->labels[root->differs[i]]
                : NULL;
        int n = snprintf(line + used, sizeof(line) - used, "%s%s (%s%s%s%s)", i ? ", " : "",
                         root->names[i], why, key ? " '" : "", key ? key : "", key ? "'" : "");
        if (n > 0) used += (size_t)n;
    }
    pthread_mutex_unlock(&root->lock);
    hf_log_error("root: no member holds %s: %s",
                 root->ref_member == REF_STORED && root->has_ref
                     ? "the keys of the reference stored by `holdfast init` ([hsm]'s)"
                     : "the root's keys",
                 line);
}

static bool keys_are_valid(const struct hf_root_keys *keys)
{
    if (keys == NULL || keys->kek_label == NULL || keys->n_mac_labels >= ROOT_KEYS_MAX)
        return false;
    for (size_t i = 0; i < keys->n_mac_labels; i++)
        if (keys->mac_labels == NULL || keys->mac_labels[i] == NULL) return false;
    return true;
}

CK_RV hf_root_open_pool(const struct hf_pool_member_spec *members, size_t n_members,
                        const struct hf_pool_options *opts, const struct hf_root_keys *keys,
                        struct hf_root **out)
{
    struct hf_pool_options o = {.queue_max = HF_POOL_QUEUE_MAX_DEFAULT};
    struct hf_root *root;
    CK_RV rv;

    if (out == NULL || members == NULL || n_members == 0 || n_members > HF_ROOT_MEMBERS_MAX ||
        !keys_are_valid(keys))
        return CKR_ARGUMENTS_BAD;
    *out = NULL;
    if (opts != NULL) o = *opts;
    if (o.probe_fn != NULL || o.on_member_back != NULL) return CKR_ARGUMENTS_BAD;
    o.probe_fn = member_check;
    if ((o.probe_arg = root = root_new()) == NULL) return CKR_HOST_MEMORY;
    rv = root_fill(root, members, n_members, keys);
    if (rv == CKR_OK && keys->reference != NULL) {
        /* Every member, the first included, is checked against it: none becomes the reference
         * by being first. */
        if (!ref_decode(keys->reference, root->ref, root->n_labels)) {
            hf_log_error("root: the stored reference key check values are unreadable (%zu keys "
                         "expected): the store was edited, or its root is another one",
                         root->n_labels);
            rv = CKR_DATA_INVALID;
        }
        root->has_ref = rv == CKR_OK;
        root->ref_member = REF_STORED;
    }
    /* The check runs inside hf_pool_open already, on each member it opens. */
    if (rv == CKR_OK) rv = hf_pool_open(members, n_members, &o, &root->pool);
    if (rv == HF_POOL_RV_UNAVAILABLE) open_refused_log(root);
    if (rv != CKR_OK) {
        root_free(root);
        return rv;
    }
    *out = root;
    return CKR_OK;
}

void hf_root_close(struct hf_root *root)
{
    if (root == NULL) return;
    /* First: its probe thread calls member_check, which reads root. */
    hf_pool_close(root->pool);
    root_free(root);
}

void hf_root_abandon(struct hf_root *root)
{
    /* A pool's probe thread is gone in the child and its lock may be held: leaked, as the core
     * leaks its other pools (core.c). */
    (void)root;
}

/* ---- the work ---- */

enum op { OP_WRAP, OP_UNWRAP, OP_HMAC, OP_FIND };

struct job {
    enum op op;
    const char *label;
    const unsigned char *in;
    size_t in_len;
    unsigned char **out; /* wrap, unwrap */
    size_t *out_len;
    unsigned char *mac; /* hmac */
};

/* One job on a member. Each leaves *out untouched when it fails, so the pool may run it again
 * elsewhere. A key the member lacks is CKR_KEY_HANDLE_INVALID for OP_FIND. */
static CK_RV job_run(struct hf_hsm *hsm, size_t member, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                     void *arg)
{
    struct job *j = arg;
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_RV rv;

    (void)member;
    (void)f;
    switch (j->op) {
    case OP_WRAP:
        return hf_hsm_wrap_on(hsm, s, j->label, j->in, j->in_len, j->out, j->out_len);
    case OP_UNWRAP:
        return hf_hsm_unwrap_on(hsm, s, j->label, j->in, j->in_len, j->out, j->out_len);
    case OP_HMAC:
        return hf_hsm_hmac_on(hsm, s, j->label, j->in, j->in_len, j->mac);
    case OP_FIND:
        break;
    }
    rv = hf_hsm_object_find(hsm, s, CKO_SECRET_KEY, j->label, &h);
    return rv == CKR_OK && h == CK_INVALID_HANDLE ? CKR_KEY_HANDLE_INVALID : rv;
}

CK_RV hf_root_wrap(struct hf_root *root, const char *kek_label, const unsigned char *plain,
                   size_t plain_len, unsigned char **wrapped, size_t *wrapped_len)
{
    struct job j = {OP_WRAP, kek_label, plain, plain_len, wrapped, wrapped_len, NULL};

    if (root == NULL) return CKR_ARGUMENTS_BAD;
    if (root->hsm) return hf_hsm_wrap(root->hsm, kek_label, plain, plain_len, wrapped, wrapped_len);
    return hf_pool_run(root->pool, job_run, &j);
}

CK_RV hf_root_unwrap(struct hf_root *root, const char *kek_label, const unsigned char *wrapped,
                     size_t wrapped_len, unsigned char **plain, size_t *plain_len)
{
    struct job j = {OP_UNWRAP, kek_label, wrapped, wrapped_len, plain, plain_len, NULL};

    if (root == NULL) return CKR_ARGUMENTS_BAD;
    if (root->hsm)
        return hf_hsm_unwrap(root->hsm, kek_label, wrapped, wrapped_len, plain, plain_len);
    return hf_pool_run(root->pool, job_run, &j);
}

CK_RV hf_root_hmac(struct hf_root *root, const char *mac_label, const unsigned char *data,
                   size_t len, unsigned char mac[HF_HSM_MAC_LEN])
{
    struct job j = {OP_HMAC, mac_label, data, len, NULL, NULL, mac};

    if (root == NULL) return CKR_ARGUMENTS_BAD;
    if (root->hsm) return hf_hsm_hmac(root->hsm, mac_label, data, len, mac);
    return hf_pool_run(root->pool, job_run, &j);
}

CK_RV hf_root_mac_key_ensure(struct hf_root *root, const char *mac_label)
{
    struct job j = {.op = OP_FIND, .label = mac_label};
    CK_RV rv;

    if (root == NULL || mac_label == NULL) return CKR_ARGUMENTS_BAD;
    if (root->hsm) return hf_hsm_mac_key_ensure(root->hsm, mac_label);
    if ((rv = hf_pool_run(root->pool, job_run, &j)) == CKR_KEY_HANDLE_INVALID)
        hf_log_error("root: the pool's members have no key '%s': `holdfast init` makes it on the "
                     "first member, to be cloned to the others",
                     mac_label);
    return rv;
}

bool hf_root_has_kek(struct hf_root *root, const char *kek_label)
{
    struct job j = {.op = OP_FIND, .label = kek_label};

    if (root == NULL || kek_label == NULL) return false;
    if (root->hsm) return hf_hsm_has_kek(root->hsm, kek_label);
    return hf_pool_run(root->pool, job_run, &j) == CKR_OK;
}

size_t hf_root_status(struct hf_root *root, struct hf_root_member_status *out, size_t n)
{
    struct hf_pool_member_status st[HF_ROOT_MEMBERS_MAX];
    size_t total;

    if (root == NULL || root->pool == NULL) return 0;
    total = hf_pool_status(root->pool, st, HF_ROOT_MEMBERS_MAX);
    pthread_mutex_lock(&root->lock);
    for (size_t i = 0; out != NULL && i < n && i < total && i < HF_ROOT_MEMBERS_MAX; i++) {
        bool refused =
            root->check[i] == HF_ROOT_CHECK_MISSING || root->check[i] == HF_ROOT_CHECK_DIFFERS;
        out[i] = (struct hf_root_member_status){.pool = st[i],
                                                .check = root->check[i],
                                                .differs = refused ? root->labels[root->differs[i]]
                                                                   : NULL};
    }
    pthread_mutex_unlock(&root->lock);
    return total;
}
