#include "hf-build.h"

#include "source-local.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "secmem.h"

/* ---- the wrap format ----
 * What the root KEK wraps (AES-KWP) is a header, then the material:
 *   "HFW1" | key UUID (36, lower case) | version UUID (36) | version number (u32 BE) |
 *   material length (u32 BE) | material (raw AES bytes or PKCS#8 DER)
 * KWP authenticates the whole plaintext, so the header binds the blob to its key and version: a
 * blob copied into another key's or version's row (same KEK, so it unwraps fine) names the wrong
 * row and is refused. RSA and EC blobs were caught by their public key before; an AES blob has
 * none, so without the header it could be moved into an exportable key and read out. The length
 * field lets the reader cut the up to 7 zero bytes SoftHSMv2 pads with (hsm.h). */
#define WRAP_MAGIC "HFW1"
#define WRAP_MAGIC_LEN 4
#define WRAP_BIND_LEN (WRAP_MAGIC_LEN + 2 * HF_UUID_LEN + 4) /* what names the row */
#define WRAP_HEADER_LEN (WRAP_BIND_LEN + 4)

static void put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_uuid(unsigned char *p, const char *uuid)
{
    size_t i;

    for (i = 0; i < HF_UUID_LEN && uuid[i]; i++)
        p[i] = (unsigned char)tolower((unsigned char)uuid[i]);
    memset(p + i, 0, HF_UUID_LEN - i);
}

/* The part of the header that names v's row. */
static void wrap_bind(const struct hf_key_version *v, unsigned char out[WRAP_BIND_LEN])
{
    memcpy(out, WRAP_MAGIC, WRAP_MAGIC_LEN);
    put_uuid(out + WRAP_MAGIC_LEN, v->key_uuid);
    put_uuid(out + WRAP_MAGIC_LEN + HF_UUID_LEN, v->uuid);
    put_u32(out + WRAP_MAGIC_LEN + 2 * HF_UUID_LEN, v->version);
}

/* header | bytes, into secmem memory (*out, *out_len: free with hf_secmem_free). */
static CK_RV wrap_plain(const struct hf_key_version *v, const unsigned char *bytes, size_t len,
                        unsigned char **out, size_t *out_len)
{
    if (len > UINT32_MAX - WRAP_HEADER_LEN) return CKR_DATA_LEN_RANGE;
    if ((*out = hf_secmem_alloc(WRAP_HEADER_LEN + len)) == NULL) return CKR_HOST_MEMORY;
    wrap_bind(v, *out);
    put_u32(*out + WRAP_BIND_LEN, (uint32_t)len);
    memcpy(*out + WRAP_HEADER_LEN, bytes, len);
    *out_len = WRAP_HEADER_LEN + len;
    return CKR_OK;
}

static bool plain_is_wrap_format(const unsigned char *p, size_t len)
{
    return len >= WRAP_HEADER_LEN && memcmp(p, WRAP_MAGIC, WRAP_MAGIC_LEN) == 0;
}

/* The material inside an unwrapped plaintext, once its header is found to name v's row. */
static CK_RV wrap_open(const struct hf_key_version *v, const unsigned char *p, size_t len,
                       const unsigned char **bytes, size_t *n)
{
    unsigned char want[WRAP_BIND_LEN];
    size_t body;

    if (!plain_is_wrap_format(p, len)) return CKR_WRAPPED_KEY_INVALID;
    wrap_bind(v, want);
    if (CRYPTO_memcmp(p, want, WRAP_BIND_LEN) != 0) {
        hf_log_error("key %s version %u: its wrapped material belongs to another key or version: "
                     "refused",
                     v->key_uuid, v->version);
        return CKR_WRAPPED_KEY_INVALID;
    }
    body = get_u32(p + WRAP_BIND_LEN);
    if (body > len - WRAP_HEADER_LEN || len - WRAP_HEADER_LEN - body >= 8)
        return CKR_WRAPPED_KEY_INVALID;
    for (size_t i = WRAP_HEADER_LEN + body; i < len; i++)
        if (p[i] != 0) return CKR_WRAPPED_KEY_INVALID;
    *bytes = p + WRAP_HEADER_LEN;
    *n = body;
    return CKR_OK;
}

/* One cached version. Entries sit in a hash chain (lookup by version id) and on a circular LRU
 * list whose sentinel is hf_local.lru: lru.next is the most recently used. */
struct entry {
    int64_t id;
    /* The row it was loaded for (wrap_bind): a hit for a row id whose row now names another key
     * or version (ids swapped in the store) is no hit, or a cached key would serve another. */
    unsigned char bind[WRAP_BIND_LEN];
    struct hf_material *m; /* one reference, the cache's */
    struct entry *chain;
    struct entry *prev, *next;
};

struct hf_local {
    struct hf_root *root; /* borrowed */
    char *kek_label;
    size_t cache_max;
    pthread_mutex_t lock; /* guards buckets, lru and count */
    struct entry **buckets;
    size_t mask; /* bucket count - 1, a power of two */
    struct entry lru;
    size_t count;
};

static size_t bucket_of(const struct hf_local *local, int64_t id)
{
    /* Fibonacci hashing: row ids are sequential, the multiply spreads them. */
    return (size_t)(((uint64_t)id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & local->mask;
}

CK_RV hf_local_open(struct hf_root *root, const char *kek_label, size_t cache_max,
                    struct hf_local **out)
{
    struct hf_local *local;
    size_t n = 16;

    if (root == NULL || kek_label == NULL || out == NULL) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    while (n < cache_max && n < (1u << 20))
        n *= 2;
    if ((local = calloc(1, sizeof(*local))) == NULL) return CKR_HOST_MEMORY;
    local->buckets = calloc(n, sizeof(*local->buckets));
    local->kek_label = strdup(kek_label);
    if (local->buckets == NULL || local->kek_label == NULL) {
        free(local->buckets);
        free(local->kek_label);
        free(local);
        return CKR_HOST_MEMORY;
    }
    local->root = root;
    local->cache_max = cache_max;
    local->mask = n - 1;
    local->lru.next = local->lru.prev = &local->lru;
    pthread_mutex_init(&local->lock, NULL);
    *out = local;
    return CKR_OK;
}

void hf_local_close(struct hf_local *local)
{
    if (local == NULL) return;
    hf_local_flush(local);
    pthread_mutex_destroy(&local->lock);
    free(local->buckets);
    free(local->kek_label);
    free(local);
}

CK_RV hf_local_seal(struct hf_local *local, const struct hf_material *m, struct hf_key_version *v)
{
    unsigned char *bytes = NULL, *plain = NULL, *wrapped = NULL, *der = NULL;
    size_t len = 0, plain_len = 0, wrapped_len = 0, der_len = 0;
    char *kek = NULL;
    CK_RV rv;

    if (local == NULL || m == NULL || v == NULL) return CKR_ARGUMENTS_BAD;
    if ((rv = hf_material_to_bytes(m, &bytes, &len)) != CKR_OK) goto done;
    if ((rv = wrap_plain(v, bytes, len, &plain, &plain_len)) != CKR_OK) goto done;
    if (!hf_alg_is_secret(hf_material_alg(m)) &&
        (rv = hf_material_public_der(m, &der, &der_len)) != CKR_OK)
        goto done;
    if ((kek = strdup(local->kek_label)) == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    if ((rv = hf_root_wrap(local->root, local->kek_label, plain, plain_len, &wrapped,
                           &wrapped_len)) != CKR_OK)
        goto done;
    free(v->wrapped);
    free(v->kek_label);
    free(v->public_der);
    v->wrapped = wrapped;
    v->wrapped_len = wrapped_len;
    v->kek_label = kek;
    v->public_der = der;
    v->public_der_len = der_len;
    kek = NULL;
    der = NULL;
done:
    hf_secmem_free(bytes, len);
    hf_secmem_free(plain, plain_len);
    free(kek);
    free(der);
    return rv;
}

/* The length of the DER element at the start of p: the unwrapped plaintext may carry padding
 * after it (see hsm.h). 0 when p does not start with a definite-length SEQUENCE. */
static size_t der_length(const unsigned char *p, size_t len)
{
    size_t body = 0, hdr = 2;

    if (len < 2 || p[0] != 0x30) return 0;
    if (p[1] < 0x80) {
        body = p[1];
    } else {
        size_t n = p[1] & 0x7f;
        if (n == 0 || n > 4 || len < 2 + n) return 0;
        for (size_t i = 0; i < n; i++)
            body = body << 8 | p[2 + i];
        hdr += n;
    }
    return body <= len - hdr ? hdr + body : 0;
}

/* The plaintext's own length once the HSM's zero padding is cut. */
static CK_RV plain_trim(const unsigned char *p, size_t len, size_t *out)
{
    size_t n = der_length(p, len);

    if (n == 0 || len - n >= 8) return CKR_WRAPPED_KEY_INVALID;
    for (size_t i = n; i < len; i++)
        if (p[i] != 0) return CKR_WRAPPED_KEY_INVALID;
    *out = n;
    return CKR_OK;
}

/* Rebuilds the material from its wrapped form. The header must name v's key, version UUID and
 * number (wrap_open). RSA/EC: the stored public key says which algorithm and size, and must
 * match the unwrapped private key (the public key the module serves comes from the row). */
static CK_RV material_load(struct hf_local *local, enum hf_alg secret_alg,
                           const struct hf_key_version *v, struct hf_material **out)
{
    const char *kek = v->kek_label != NULL ? v->kek_label : local->kek_label;
    unsigned char *plain = NULL;
    const unsigned char *bytes;
    size_t plain_len = 0, n;
    EVP_PKEY *pub = NULL;
    enum hf_alg alg;
    CK_RV rv;

    if ((rv = hf_root_unwrap(local->root, kek, v->wrapped, v->wrapped_len, &plain, &plain_len)) !=
        CKR_OK)
        goto done;
    if ((rv = wrap_open(v, plain, plain_len, &bytes, &n)) != CKR_OK) goto done;
    if (v->public_der == NULL) {
        rv = hf_material_from_bytes(secret_alg, (unsigned)n * 8, bytes, n, out);
        goto done;
    }
    if ((rv = hf_public_from_der(v->public_der, v->public_der_len, &pub)) != CKR_OK) goto done;
    alg = hf_pkey_alg(pub);
    if ((rv = hf_material_from_bytes(alg, hf_pkey_bits(pub), bytes, n, out)) != CKR_OK) goto done;
    if (EVP_PKEY_eq(hf_material_pkey(*out), pub) != 1) {
        hf_material_unref(*out);
        *out = NULL;
        rv = CKR_WRAPPED_KEY_INVALID;
    }
done:
    if (rv != CKR_OK && rv != CKR_HOST_MEMORY && rv != CKR_WRAPPED_KEY_INVALID && plain != NULL)
        rv = CKR_WRAPPED_KEY_INVALID; /* unwrapped, but not a key of this version */
    EVP_PKEY_free(pub);
    hf_secmem_free(plain, plain_len);
    return rv;
}

/* The material of a blob wrapped before the header existed: raw AES bytes (16, 24 or 32, so never
 * padded) or DER (trimmed). */
static CK_RV legacy_length(const struct hf_key_version *v, const unsigned char *p, size_t len,
                           size_t *n)
{
    if (v->public_der != NULL) return plain_trim(p, len, n);
    if (len != 16 && len != 24 && len != 32) return CKR_WRAPPED_KEY_INVALID;
    *n = len;
    return CKR_OK;
}

CK_RV hf_local_rewrap(struct hf_local *local, struct hf_key_version *v)
{
    const char *kek;
    unsigned char *plain = NULL, *fresh = NULL, *wrapped = NULL;
    size_t plain_len = 0, fresh_len = 0, wrapped_len = 0, n;
    CK_RV rv;

    if (local == NULL || v == NULL) return CKR_ARGUMENTS_BAD;
    /* A pool version's blob is not ours: it is under the pool's backup KEK (export mode), and
     * its kek_label names a pool, not a root KEK this token holds. */
    if (v->wrapped == NULL ||
        (v->kek_label != NULL &&
         strncmp(v->kek_label, HF_KEY_SOURCE_POOL_PREFIX, strlen(HF_KEY_SOURCE_POOL_PREFIX)) == 0))
        return CKR_OK;
    kek = v->kek_label != NULL ? v->kek_label : local->kek_label;
    if ((rv = hf_root_unwrap(local->root, kek, v->wrapped, v->wrapped_len, &plain, &plain_len)) !=
        CKR_OK)
        goto done;
    if (plain_is_wrap_format(plain, plain_len)) goto done; /* already bound: its check is at load */
    if ((rv = legacy_length(v, plain, plain_len, &n)) != CKR_OK) goto done;
    if ((rv = wrap_plain(v, plain, n, &fresh, &fresh_len)) != CKR_OK) goto done;
    if ((rv = hf_root_wrap(local->root, kek, fresh, fresh_len, &wrapped, &wrapped_len)) != CKR_OK)
        goto done;
    free(v->wrapped);
    v->wrapped = wrapped;
    v->wrapped_len = wrapped_len;
done:
    if (rv != CKR_OK)
        hf_log_error("key %s version %u: cannot rewrap its material (0x%lx)", v->key_uuid,
                     v->version, (unsigned long)rv);
    hf_secmem_free(plain, plain_len);
    hf_secmem_free(fresh, fresh_len);
    return rv;
}

/* ---- the cache: every function below that says "locked" expects local->lock held --------- */

static void lru_unlink(struct entry *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
}

static void lru_push_front(struct hf_local *local, struct entry *e)
{
    e->next = local->lru.next;
    e->prev = &local->lru;
    local->lru.next->prev = e;
    local->lru.next = e;
}

/* locked */
static struct entry *cache_find(struct hf_local *local, int64_t id)
{
    struct entry *e = local->buckets[bucket_of(local, id)];

    while (e != NULL && e->id != id)
        e = e->chain;
    return e;
}

/* locked: takes e out of the chain and the list; the caller frees it. */
static void cache_remove(struct hf_local *local, struct entry *e)
{
    struct entry **link = &local->buckets[bucket_of(local, e->id)];

    while (*link != e)
        link = &(*link)->chain;
    *link = e->chain;
    lru_unlink(e);
    local->count--;
}

/* Outside the lock: the last unref zeroes key material, which is not free for RSA-4096. */
static void entries_free(struct entry *list)
{
    while (list != NULL) {
        struct entry *next = list->chain;
        hf_material_unref(list->m);
        free(list);
        list = next;
    }
}

/* locked: the entry of id if it was loaded for the row bind names; one loaded for another row
 * is dropped into *evicted. */
static struct entry *cache_find_bound(struct hf_local *local, int64_t id, const unsigned char *bind,
                                      struct entry **evicted)
{
    struct entry *e = cache_find(local, id);

    if (e == NULL || memcmp(e->bind, bind, WRAP_BIND_LEN) == 0) return e;
    cache_remove(local, e);
    e->chain = *evicted;
    *evicted = e;
    return NULL;
}

/* Adds m for id unless another thread did first; *out is a new reference to whichever is
 * cached. Entries pushed out by the bound are returned in *evicted (chained). */
static void cache_insert(struct hf_local *local, int64_t id, struct hf_material *m,
                         struct entry *fresh, struct hf_material **out, struct entry **evicted)
{
    struct entry *e;

    pthread_mutex_lock(&local->lock);
    if ((e = cache_find_bound(local, id, fresh->bind, evicted)) != NULL) {
        lru_unlink(e);
        lru_push_front(local, e);
        *out = hf_material_ref(e->m);
        fresh->m = m; /* the loser of the race: dropped with the evicted */
        fresh->chain = *evicted;
        *evicted = fresh;
        pthread_mutex_unlock(&local->lock);
        return;
    }
    fresh->id = id;
    fresh->m = m;
    size_t b = bucket_of(local, id);
    fresh->chain = local->buckets[b];
    local->buckets[b] = fresh;
    lru_push_front(local, fresh);
    local->count++;
    *out = hf_material_ref(m);
    while (local->count > local->cache_max) {
        e = local->lru.prev;
        cache_remove(local, e);
        e->chain = *evicted;
        *evicted = e;
    }
    pthread_mutex_unlock(&local->lock);
}

CK_RV hf_local_material(struct hf_local *local, const struct hf_key_version *v,
                        struct hf_material **out)
{
    return hf_local_material_as(local, HF_ALG_AES, v, out);
}

CK_RV hf_local_material_as(struct hf_local *local, enum hf_alg alg, const struct hf_key_version *v,
                           struct hf_material **out)
{
    struct hf_material *m = NULL;
    struct entry *e, *evicted = NULL;
    CK_RV rv;

    if (local == NULL || v == NULL || out == NULL) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    if (v->wrapped == NULL || v->state == HF_STATE_DESTROYED) return CKR_KEY_HANDLE_INVALID;
    unsigned char bind[WRAP_BIND_LEN];
    wrap_bind(v, bind);

    pthread_mutex_lock(&local->lock);
    if ((e = cache_find_bound(local, v->id, bind, &evicted)) != NULL) {
        lru_unlink(e);
        lru_push_front(local, e);
        *out = hf_material_ref(e->m);
    }
    pthread_mutex_unlock(&local->lock);
    entries_free(evicted);
    evicted = NULL;
    if (*out != NULL) return CKR_OK;

    /* Miss: the HSM round trip runs unlocked, so other keys' hits are not held up by it. */
    /* RSA and EC say what they are through the stored public key; a secret is what alg says. */
    if ((rv = material_load(local, alg == HF_ALG_GENERIC ? HF_ALG_GENERIC : HF_ALG_AES, v, &m)) !=
        CKR_OK)
        return rv;
    if (local->cache_max == 0) {
        *out = m;
        return CKR_OK;
    }
    if ((e = calloc(1, sizeof(*e))) == NULL) {
        *out = m; /* uncached but usable */
        return CKR_OK;
    }
    memcpy(e->bind, bind, sizeof(bind));
    cache_insert(local, v->id, m, e, out, &evicted);
    entries_free(evicted);
    return CKR_OK;
}

void hf_local_evict(struct hf_local *local, int64_t version_id)
{
    struct entry *e;

    if (local == NULL) return;
    pthread_mutex_lock(&local->lock);
    if ((e = cache_find(local, version_id)) != NULL) {
        cache_remove(local, e);
        e->chain = NULL;
    }
    pthread_mutex_unlock(&local->lock);
    entries_free(e);
}

void hf_local_flush(struct hf_local *local)
{
    struct entry *list = NULL;

    if (local == NULL) return;
    pthread_mutex_lock(&local->lock);
    while (local->lru.next != &local->lru) {
        struct entry *e = local->lru.next;
        cache_remove(local, e);
        e->chain = list;
        list = e;
    }
    pthread_mutex_unlock(&local->lock);
    entries_free(list);
}

size_t hf_local_cached(struct hf_local *local)
{
    size_t n;

    if (local == NULL) return 0;
    pthread_mutex_lock(&local->lock);
    n = local->count;
    pthread_mutex_unlock(&local->lock);
    return n;
}
