/* The root of a key store: the root KEK that wraps local keys (source-local.h) and the HMAC keys
 * of the store's policy MAC (policy.h) and of the audit chain (audit.h), in one backend token
 * (hsm.h) or in a pool of tokens that hold the same keys (pool.h; issue 14: "the root KEK of
 * local keys may itself live in a pool, so several nodes can share it").
 *
 * One token: every call is the hf_hsm_* call it names, nothing in between.
 *
 * A pool: every call runs through hf_pool_run, so it has the pool's HA (the healthy member with
 * the fewest calls in flight; a device error, a lost session or a call past its time takes the
 * member out and the call is retried once on another; the probe puts members back). Holdfast
 * never extracts these keys (sensitive, never extractable): the members hold the same ones
 * because the HSM vendor's cloning put them there (a Luna HA group, an nShield security world; a
 * copy of the token directory for SoftHSMv2). That is checked, since a member with another KEK
 * would answer garbage for every blob: a member is put in service (at open, and each time the
 * probe would bring it back) only when its key check values equal the reference's: those the
 * caller gives (hf_root_keys.reference: the store's, recorded by `holdfast init` from [hsm]), or
 * without them the first member to pass at open. A KCV is the AES-KWP (RFC 5649, deterministic)
 * wrap of a fixed 32-byte value under the KEK, and an HMAC of a fixed string under each MAC key. A
 * member that lacks a key or whose values differ stays out of service, with one log line naming it
 * and saying why (again only after it passed in between). Keys are never made in a pool
 * (hf_root_mac_key_ensure only checks): `holdfast init` makes them on the first member alone, to be
 * cloned.
 *
 * Thread-safe. */
#ifndef HF_ROOT_H
#define HF_ROOT_H

#include <stdbool.h>
#include <stddef.h>

#include "hsm.h"
#include "pool.h"

struct hf_root;

/* The keys every member of a pool must hold, the same everywhere: the KEK and the MAC keys.
 * Borrowed for hf_root_open_pool only (copied). */
struct hf_root_keys {
    const char *kek_label;
    const char *const *mac_labels;
    size_t n_mac_labels;
    /* The reference's key check values as hf_root_reference wrote them (the store keeps
     * [hsm]'s, written by `holdfast init`: core-root.c), against which every member is checked;
     * NULL: the first member to pass at open becomes the reference. */
    const char *reference;
};

#define HF_ROOT_MEMBERS_MAX 8

/* A root of one token. hsm is borrowed: it must outlive the root. *out is the caller's. */
CK_RV hf_root_of_hsm(struct hf_hsm *hsm, struct hf_root **out);
/* A root over a pool of members (as hf_pool_open takes them; at most HF_ROOT_MEMBERS_MAX).
 * opts may be NULL; its probe_fn and on_member_back must be NULL (the root's own check is the
 * probe). HF_POOL_RV_UNAVAILABLE when no member passes the check (logged, naming each member
 * and why); CKR_DATA_INVALID for a keys->reference that does not read as one; hf_pool_open's
 * errors. */
CK_RV hf_root_open_pool(const struct hf_pool_member_spec *members, size_t n_members,
                        const struct hf_pool_options *opts, const struct hf_root_keys *keys,
                        struct hf_root **out);
void hf_root_close(struct hf_root *root);

/* The reference a pool's members are checked against, as text (not secret: each value is a MAC
 * of a fixed input under one of the keys, which only a token holding that key can make): "kcv1:"
 * and each key's KCV in hex, the KEK's first, ','-separated. *text malloc'd.
 * CKR_KEY_HANDLE_INVALID when there is none (no member has passed yet; a root of one token). */
CK_RV hf_root_reference(struct hf_root *root, char **text);
/* The same computed on one token (holdfast init's [hsm]), which must hold every key. */
CK_RV hf_root_reference_of_hsm(struct hf_hsm *hsm, const struct hf_root_keys *keys, char **text);
/* After fork(), in the child: nothing of the parent's is used or freed (a pool's probe thread
 * does not exist here; the token of a one-token root is the caller's to abandon). */
void hf_root_abandon(struct hf_root *root);

/* As hf_hsm_wrap, hf_hsm_unwrap and hf_hsm_hmac, plus the pool's results
 * (HF_POOL_RV_THROTTLED, HF_POOL_RV_UNAVAILABLE). */
CK_RV hf_root_wrap(struct hf_root *root, const char *kek_label, const unsigned char *plain,
                   size_t plain_len, unsigned char **wrapped, size_t *wrapped_len);
CK_RV hf_root_unwrap(struct hf_root *root, const char *kek_label, const unsigned char *wrapped,
                     size_t wrapped_len, unsigned char **plain, size_t *plain_len);
CK_RV hf_root_hmac(struct hf_root *root, const char *mac_label, const unsigned char *data,
                   size_t len, unsigned char mac[HF_HSM_MAC_LEN]);

/* One token: hf_hsm_mac_key_ensure (made when missing). A pool: CKR_OK when the members in
 * service hold the key, CKR_KEY_HANDLE_INVALID (logged) when they do not: a key made on one member
 * would differ from its clones'. */
CK_RV hf_root_mac_key_ensure(struct hf_root *root, const char *mac_label);
bool hf_root_has_kek(struct hf_root *root, const char *kek_label);

/* What the key check last found on a member of a pool. */
enum hf_root_check {
    HF_ROOT_CHECK_PENDING, /* not checked yet: unreachable since the open */
    HF_ROOT_CHECK_SAME,    /* the reference's keys: in service unless the pool took it out */
    HF_ROOT_CHECK_MISSING, /* lacks a key: never in service (clone a member's token to it) */
    HF_ROOT_CHECK_DIFFERS  /* another key under a label: never in service (not a clone) */
};

struct hf_root_member_status {
    struct hf_pool_member_status pool; /* pool.name: the root's copy, valid until close */
    enum hf_root_check check;
    const char *differs; /* MISSING, DIFFERS: the label of the key (the root's copy) */
};

/* A pool's members (the number of members; with out, a snapshot of the first n); 0 for a root
 * of one token. */
size_t hf_root_status(struct hf_root *root, struct hf_root_member_status *out, size_t n);

#endif
