/* The local key source: key material lives in the metadata store wrapped (AES-KWP) under a root
 * KEK that never leaves the HSM. On first use a version is unwrapped once and cached; later uses
 * are in-process OpenSSL calls with no HSM round trip (the fast path, like CipherTrust's own
 * keys). The cache is bounded (least recently used out) and every entry is zeroed on eviction. */
#ifndef HF_SOURCE_LOCAL_H
#define HF_SOURCE_LOCAL_H

#include "crypto.h"
#include "root.h"
#include "key.h"

struct hf_local;

/* root is borrowed: it must outlive the source. */
CK_RV hf_local_open(struct hf_root *root, const char *kek_label, size_t cache_max,
                    struct hf_local **out);
void hf_local_close(struct hf_local *local);

/* Wraps m for storage: fills v->wrapped, v->wrapped_len, v->kek_label, and v->public_der for
 * RSA/EC. v->uuid, v->key_uuid and v->version must be set: the wrap binds them (a blob moved to
 * another row is CKR_WRAPPED_KEY_INVALID at load). */
CK_RV hf_local_seal(struct hf_local *local, const struct hf_material *m, struct hf_key_version *v);

/* The usable material of version v (cached by v->id). *out is a new reference. A destroyed
 * version (no wrapped material) is CKR_KEY_HANDLE_INVALID. */
CK_RV hf_local_material(struct hf_local *local, const struct hf_key_version *v,
                        struct hf_material **out);
/* The same for a version of a key of algorithm alg: a secret's stored bytes do not say whether
 * they are an AES or a generic secret key (HF_ALG_AES is what hf_local_material assumes). The
 * cache holds one material per version, whichever call loaded it. */
CK_RV hf_local_material_as(struct hf_local *local, enum hf_alg alg, const struct hf_key_version *v,
                           struct hf_material **out);

/* Migration: rewraps a blob made before the wrap bound its row (plain material under the KEK)
 * in the bound format, replacing v->wrapped; a blob already bound is left alone. */
CK_RV hf_local_rewrap(struct hf_local *local, struct hf_key_version *v);

/* Drops one cached version (destroy), or all (flush). */
void hf_local_evict(struct hf_local *local, int64_t version_id);
void hf_local_flush(struct hf_local *local);
size_t hf_local_cached(struct hf_local *local);

#endif
