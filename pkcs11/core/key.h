/* The CipherTrust-style key model: keys, versions, labels and links, and the KMIP state rules.
 * Plain data: the store fills these, the core and the module read them. */
#ifndef HF_KEY_H
#define HF_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pkcs11/module/holdfast.h"

#define HF_UUID_LEN 36
#define HF_NAME_MAX 255
/* The policy MAC of a key, version or link row (HMAC-SHA-256 under an HSM-held key: policy.h). */
#define HF_POLICY_MAC_LEN 32
#define HF_KEY_SOURCE_LOCAL "local"
#define HF_KEY_SOURCE_POOL_PREFIX "pool:"

enum hf_alg {
    HF_ALG_AES = 1, /* bits: 128, 192, 256 */
    HF_ALG_RSA = 2, /* bits: 2048, 3072, 4096 */
    HF_ALG_EC = 3,  /* bits: 256 (P-256), 384 (P-384), 521 (P-521): curve.h */
    /* A generic secret (CKK_GENERIC_SECRET, HMAC keys); bits: whole bytes, 112 (SP 800-131A's
     * least HMAC key strength) to 4096. Named "HMAC" ("HMAC-256"). */
    HF_ALG_GENERIC = 4,
    /* Ed25519 (RFC 8032, CKK_EC_EDWARDS); bits: 256, the size PKCS#11 modules report. Named
     * "Ed25519". */
    HF_ALG_ED25519 = 5,
};

/* Whether keys of alg are one secret byte string (AES, generic), not a key pair. */
static inline bool hf_alg_is_secret(enum hf_alg alg)
{
    return alg == HF_ALG_AES || alg == HF_ALG_GENERIC;
}

struct hf_label {
    char *name;
    char *value;
};

struct hf_key {
    char uuid[HF_UUID_LEN + 1];
    /* unique; [A-Za-z0-9._:/@+-], 1..255 chars, not UUID-shaped (hf_key_name_is_valid) */
    char *name;
    enum hf_alg alg;
    unsigned bits;
    unsigned long usage; /* HF_USAGE_* mask */
    unsigned long state; /* HF_STATE_* */
    char *owner;
    /* "local", or HF_KEY_SOURCE_POOL_PREFIX + an HSM pool's name ("pool:NAME", store.h): the
     * prefix keeps a pool of any name apart from "local" */
    char *source;
    bool exportable;
    int64_t created; /* seconds since the epoch */
    int64_t updated;
    unsigned current_version; /* newest version number; 1 after creation */
    struct hf_label *labels;  /* sorted by name */
    size_t n_labels;
    unsigned char mac[HF_POLICY_MAC_LEN]; /* policy MAC as stored; has_mac false: none (NULL) */
    bool has_mac;
};

struct hf_key_version {
    int64_t id; /* store row id: stable, never reused; the module builds object handles from it */
    char uuid[HF_UUID_LEN + 1];
    char key_uuid[HF_UUID_LEN + 1];
    unsigned version;
    /* HF_STATE_ACTIVE, DEACTIVATED, COMPROMISED (holdfast key version ...), or DESTROYED once
     * its material is gone; it narrows the key's state (hf_key_version_state) */
    unsigned long state;
    int64_t created;
    /* Which root KEK wrapped it; for a version of a pool key (source "pool:NAME"), where its
     * material lives instead: "pool:NAME/MEMBER" (HF_KEY_SOURCE_POOL_PREFIX, the pool and the
     * member it was generated on) in a plain pool, "pool:NAME" (every member) in a clone or
     * export pool (source-pool.h). A pool version has no usable material in the store (wrapped
     * NULL, or in an export pool its key wrapped under the pool's backup KEK, for re-seeding a
     * member only), so only its state (HF_STATE_DESTROYED) says it is destroyed, never wrapped ==
     * NULL alone (hf_key_version_has_material). The label is under the policy MAC, so editing
     * the store cannot move a version to another member or pool. */
    char *kek_label;
    unsigned char
        *wrapped; /* material wrapped with AES-KWP under the root KEK; NULL once destroyed */
    size_t wrapped_len;
    unsigned char *public_der; /* SubjectPublicKeyInfo DER for RSA and EC; NULL for AES */
    size_t public_der_len;
    unsigned char mac[HF_POLICY_MAC_LEN]; /* policy MAC as stored; has_mac false: none (NULL) */
    bool has_mac;
};

struct hf_link {
    int64_t id;
    char *type;   /* "aws-xks", "gcp-ekm", "oci", "sap", "gws-cse", ... */
    char *ext_id; /* the cloud's identifier; (type, ext_id) is unique */
    char key_uuid[HF_UUID_LEN + 1];
    bool blocked;
    int64_t created;
    int64_t updated;
    unsigned char mac[HF_POLICY_MAC_LEN]; /* policy MAC as stored; has_mac false: none (NULL) */
    bool has_mac;
};

/* The pool a key is kept in (the NAME of its "pool:NAME" source), or NULL for a local key. */
static inline const char *hf_key_pool_name(const struct hf_key *key)
{
    size_t n = strlen(HF_KEY_SOURCE_POOL_PREFIX);

    if (key->source == NULL || strncmp(key->source, HF_KEY_SOURCE_POOL_PREFIX, n) != 0) return NULL;
    return key->source + n;
}

/* Whether v's material lives in an HSM pool (kek_label "pool:NAME/MEMBER"). */
static inline bool hf_key_version_is_in_pool(const struct hf_key_version *v)
{
    return v->kek_label != NULL &&
           strncmp(v->kek_label, HF_KEY_SOURCE_POOL_PREFIX, strlen(HF_KEY_SOURCE_POOL_PREFIX)) == 0;
}

/* Whether v still has material: wrapped in the store, or in a pool, and not destroyed. */
static inline bool hf_key_version_has_material(const struct hf_key_version *v)
{
    return v->state != HF_STATE_DESTROYED && (v->wrapped != NULL || hf_key_version_is_in_pool(v));
}

/* Frees the members (not the struct) and leaves it zeroed. NULL is fine. */
void hf_key_clear(struct hf_key *key);
void hf_key_version_clear(struct hf_key_version *v);
void hf_link_clear(struct hf_link *link);
/* Deep copies; dst must be zeroed or cleared. CKR_HOST_MEMORY on allocation failure. */
CK_RV hf_key_copy(struct hf_key *dst, const struct hf_key *src);
CK_RV hf_key_version_copy(struct hf_key_version *dst, const struct hf_key_version *src);

/* KMIP state rules: pre-active nothing; active all of the mask; deactivated and compromised only
 * decrypt, unwrap and verify; destroyed nothing. usage_bit is one HF_USAGE_* bit. */
bool hf_key_state_allows(unsigned long state, unsigned long usage_bit);
/* Both the state and the key's usage mask allow usage_bit. */
bool hf_key_is_usable_for(const struct hf_key *key, unsigned long usage_bit);
/* Allowed transitions: pre-active -> active|deactivated|compromised|destroyed,
 * active -> deactivated|compromised|destroyed, deactivated -> compromised|destroyed,
 * compromised -> destroyed. */
bool hf_key_state_can_move(unsigned long from, unsigned long to);
/* The state an object of version v acts in: a version can only fall behind its key, never
 * revive it, so the key's state while the key is pre-active or further along, else v's own.
 * A version state of 0 (session objects) is the key's. */
unsigned long hf_key_version_state(const struct hf_key *key, const struct hf_key_version *v);
/* The key's usage mask and hf_key_version_state allow usage_bit: the one rule the module (and
 * so every plugin) applies per version, the key's own rule when the version is active. */
bool hf_key_version_is_usable_for(const struct hf_key *key, const struct hf_key_version *v,
                                  unsigned long usage_bit);
/* A version's own moves, KMIP's without pre-active and without destroying an active object:
 * active -> deactivated|compromised, deactivated -> compromised|destroyed,
 * compromised -> destroyed. */
bool hf_version_state_can_move(unsigned long from, unsigned long to);

bool hf_key_name_is_valid(const char *name);
bool hf_alg_bits_is_valid(enum hf_alg alg, unsigned bits);
bool hf_uuid_is_valid(const char *s);
/* Writes a fresh random (v4) UUID, lower case, NUL-terminated. */
void hf_uuid_generate(char out[HF_UUID_LEN + 1]);

const char *hf_state_name(unsigned long state); /* "pre-active", "active", ... or "unknown" */
bool hf_state_parse(const char *s, unsigned long *state);
const char *hf_alg_name(enum hf_alg alg); /* "AES", "RSA", "EC", "HMAC", "Ed25519" */
/* "AES-256", "RSA-3072", "EC-P256" (also "aes256", "ec-p384", "P-256"), "Ed25519". */
bool hf_alg_spec_parse(const char *s, enum hf_alg *alg, unsigned *bits);
/* "encrypt,decrypt,wrap" <-> mask. Unknown words fail. */
bool hf_usage_parse(const char *s, unsigned long *mask);
/* Writes "encrypt,decrypt"; returns the length needed (snprintf convention). */
size_t hf_usage_format(unsigned long mask, char *out, size_t outlen);
/* Default usage for an algorithm: AES encrypt|decrypt|wrap|unwrap, RSA all but wrap,
 * EC sign|verify. */
unsigned long hf_usage_default(enum hf_alg alg);

/* Labels: returns the value or NULL. */
const char *hf_key_label_get(const struct hf_key *key, const char *name);
/* Sets (value != NULL) or removes (value == NULL) a label, keeping the array sorted. Names follow
 * the key-name alphabet; values are at most 1024 chars without control characters (CKA_HF_LABELS
 * is "k=v\n..."): CKR_ATTRIBUTE_VALUE_INVALID otherwise. */
CK_RV hf_key_label_set(struct hf_key *key, const char *name, const char *value);
bool hf_label_name_is_valid(const char *name);

#endif
