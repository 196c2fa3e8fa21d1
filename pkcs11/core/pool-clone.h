/* Copying keys between the members of a clone- or export-mode HSM pool (issue 14; source-pool.h
 * says what the modes are). Everything here runs through pool.h's executor, one member at a time:
 * a step that needs two members (wrap on one, unwrap on the other) takes the first member's slot,
 * lets it go, then takes the second's, so no caller ever holds one member's concurrency slot while
 * it waits for another's (two copies in opposite directions would otherwise deadlock under load).
 *
 * - The pool's replication key: one AES-256 token object in every member, labelled
 *   HF_POOL_REPL_LABEL_PREFIX + the pool name, the same value everywhere, sensitive and able to
 *   wrap and unwrap only. It is generated inside one member; a member that lacks it gets it by
 *   RSA-OAEP: that member makes an RSA key pair as session objects, the holder imports the
 *   public key (a session object too) and wraps the replication key under it, the lacking member
 *   unwraps it with its private key into a token object, then drops the pair. So the key is
 *   never in clear outside an HSM.
 * - A key version's object (labelled with the version's UUID: an AES secret key or an RSA private
 *   key) is copied by C_WrapKey under the replication key on a member that has it
 *   (CKM_AES_KEY_WRAP_PAD) and C_UnwrapKey into the other member with the same label and
 *   attributes.
 *
 * Results: CKR_OK; CKR_KEY_HANDLE_INVALID when the object to copy (or the replication key) is on
 * no member asked; the executor's (HF_POOL_RV_UNAVAILABLE for a member out of service); the
 * token's. Member indexes are pool.h's. */
#ifndef HF_POOL_CLONE_H
#define HF_POOL_CLONE_H

#include <stdbool.h>
#include <stddef.h>

#include "pool.h"

#define HF_POOL_REPL_LABEL_PREFIX "holdfast-pool-replication:"
/* Room for the prefix, a pool name (store.h: at most 32 bytes) and the NUL. */
#define HF_POOL_REPL_LABEL_MAX 64

/* What a clone or export pool keeps on its members: the pool's replication key, an AES version's
 * secret key, or an RSA, EC or Ed25519 version's private key (SoftHSMv2 wraps a private key as
 * its PKCS#8 encoding under CKM_AES_KEY_WRAP_PAD, and unwraps it so). Each kind has its object
 * class (hf_pool_obj_class) and its template (hf_pool_key_template). */
enum hf_pool_obj {
    HF_POOL_OBJ_REPLICATION,
    HF_POOL_OBJ_AES,
    HF_POOL_OBJ_RSA,
    HF_POOL_OBJ_EC,
    HF_POOL_OBJ_ED25519,
};
CK_OBJECT_CLASS hf_pool_obj_class(enum hf_pool_obj obj);

/* The template of a pool's token key of kind obj labelled label (CKA_LABEL and CKA_ID), as
 * C_UnwrapKey takes it (no CKA_VALUE_LEN, no RSA components: the blob has them); generation adds
 * what it needs to it, so a version's copies are made as the version was. Returns the number of
 * attributes written; the values are static or label (borrowed). */
#define HF_POOL_TEMPLATE_MAX 13
size_t hf_pool_key_template(enum hf_pool_obj obj, const char *label,
                            CK_ATTRIBUTE out[HF_POOL_TEMPLATE_MAX]);

/* C_UnwrapKey of blob under unwrapping (mech) into a token key as hf_pool_key_template makes it,
 * labelled label, that no search by label finds before it is whole: SoftHSMv2 2.6 makes an
 * unwrapped object in two transactions, its attributes first and its CKA_VALUE (or a private
 * key's components) after, and an operation begun between them on an object found by label
 * fails (C_EncryptInit answers CKR_MECHANISM_INVALID). So the object is made under
 * HF_POOL_PENDING_LABEL_PREFIX + label and relabelled once C_UnwrapKey has returned; one that
 * cannot be relabelled is destroyed. A process killed between the two leaves a pending object
 * nothing finds: a later copy makes another. */
#define HF_POOL_PENDING_LABEL_PREFIX "holdfast-pending:"
CK_RV hf_pool_unwrap_labelled(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, CK_MECHANISM_PTR mech,
                              CK_OBJECT_HANDLE unwrapping, const unsigned char *blob,
                              size_t blob_len, enum hf_pool_obj obj, const char *label,
                              CK_OBJECT_HANDLE *h);

/* The label of pool_name's replication key into buf (HF_POOL_REPL_LABEL_MAX bytes). */
void hf_pool_repl_label(const char *pool_name, char buf[HF_POOL_REPL_LABEL_MAX]);

/* The labels of every secret-key and private-key token object on member, sorted (strcmp), for
 * a re-sync to see in one search what the member lacks (SoftHSMv2 2.6 rereads every object per
 * C_FindObjects, so one search per version would be quadratic). *labels and each string are the
 * caller's: hf_pool_labels_free. */
CK_RV hf_pool_labels(struct hf_pool *pool, size_t member, char ***labels, size_t *n);
void hf_pool_labels_free(char **labels, size_t n);
bool hf_pool_labels_has(char *const *labels, size_t n, const char *label);

/* Makes sure member holds the replication key repl_label: CKR_OK when it has it; else copied
 * from a healthy member that has it (RSA-OAEP, above); else, when may_generate, generated on
 * member. The caller says may_generate false once keys were copied under a replication key (the
 * store has clone versions of the pool): a member out of service may then hold the only one, and
 * a second, different key under the same label would make copies between them fail. */
CK_RV hf_pool_repl_ensure(struct hf_pool *pool, const char *repl_label, size_t member,
                          bool may_generate);

/* A generation claimed across processes (core-pool-sync.c): generates the replication key on
 * member under a pending label of its own (HF_POOL_PENDING_LABEL_PREFIX, repl_label, '#', tag),
 * which nothing looks for, then calls publish(arg), which answers CKR_OK only when the claim
 * named by tag still stands and is now published; the key then gets repl_label. Any other answer
 * destroys the pending key (nothing could have used it) and is returned. When member holds the
 * replication key already, publish's answer, nothing generated. */
typedef CK_RV (*hf_pool_claim_fn)(void *arg);
CK_RV hf_pool_repl_generate_claimed(struct hf_pool *pool, const char *repl_label, size_t member,
                                    const char *tag, hf_pool_claim_fn publish, void *arg);
/* A claim published whose maker stopped before the relabel: the pending key tagged tag, on the
 * first member in service that holds it, gets repl_label. CKR_KEY_HANDLE_INVALID when none
 * does. */
CK_RV hf_pool_repl_adopt(struct hf_pool *pool, const char *repl_label, const char *tag);

/* Copies the object of kind obj labelled label from member src to member dst under the
 * replication key; CKR_OK at once when dst has it already. */
CK_RV hf_pool_clone_copy(struct hf_pool *pool, const char *repl_label, const char *label,
                         enum hf_pool_obj obj, size_t src, size_t dst);

/* As hf_pool_clone_copy, from the first healthy member other than dst that holds label. */
CK_RV hf_pool_clone_copy_any(struct hf_pool *pool, const char *repl_label, const char *label,
                             enum hf_pool_obj obj, size_t dst);

#endif
