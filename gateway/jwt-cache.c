/* The verified-token cache. The published load tests send one token for a whole run, so a hit
 * must cost a hash and a lookup, and many threads hit at once: the table is set-associative
 * (4 ways, evicting the oldest or an expired entry of the set), each set under the lock of one
 * of 64 shards, so no lock is global and a lookup touches one cache line of keys. */
#include "hf-build.h"

#include "gateway/jwt.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define WAYS 4u
#define SETS 1024u /* 4096 entries */
#define SHARDS 64u

struct entry {
    unsigned char key[32];
    struct hf_jwt *t; /* a reference; NULL: free */
    int64_t expires;
    uint64_t stamp; /* insertion order within the shard */
};

struct shard {
    pthread_mutex_t lock; /* guards the sets whose index is this shard's modulo SHARDS */
    uint64_t next_stamp;
};

struct hf_jwt_cache {
    struct shard shards[SHARDS];
    struct entry sets[SETS][WAYS];
};

struct hf_jwt_cache *hf_jwt_cache_new(void)
{
    struct hf_jwt_cache *c = calloc(1, sizeof(*c));

    if (!c) return NULL;
    for (size_t i = 0; i < SHARDS; i++)
        pthread_mutex_init(&c->shards[i].lock, NULL);
    return c;
}

void hf_jwt_cache_free(struct hf_jwt_cache *c)
{
    if (!c) return;
    for (size_t s = 0; s < SETS; s++)
        for (size_t w = 0; w < WAYS; w++)
            hf_jwt_release(c->sets[s][w].t);
    for (size_t i = 0; i < SHARDS; i++)
        pthread_mutex_destroy(&c->shards[i].lock);
    free(c);
}

/* The key is a SHA-256: its bytes are already uniform. */
static size_t set_of(const unsigned char key[32])
{
    return ((size_t)key[0] | (size_t)key[1] << 8) % SETS;
}

struct hf_jwt *hf_jwt_cache_get(struct hf_jwt_cache *c, const unsigned char key[32], int64_t now)
{
    size_t si = set_of(key);
    struct shard *sh = &c->shards[si % SHARDS];
    struct hf_jwt *hit = NULL, *stale = NULL;
    struct entry *e;

    pthread_mutex_lock(&sh->lock);
    for (size_t w = 0; w < WAYS; w++) {
        e = &c->sets[si][w];
        if (!e->t || memcmp(e->key, key, 32) != 0) continue;
        if (now < e->expires) {
            hit = hf_jwt_ref(e->t);
        } else {
            stale = e->t;
            e->t = NULL;
        }
        break;
    }
    pthread_mutex_unlock(&sh->lock);
    hf_jwt_release(stale); /* may free a claims tree: outside the lock */
    return hit;
}

static bool is_reusable(const struct entry *e, int64_t now)
{
    return !e->t || e->expires <= now;
}

void hf_jwt_cache_put(struct hf_jwt_cache *c, const unsigned char key[32], struct hf_jwt *t,
                      int64_t expires, int64_t now)
{
    size_t si = set_of(key);
    struct shard *sh = &c->shards[si % SHARDS];
    struct entry *victim = NULL, *e;
    struct hf_jwt *old;

    if (expires <= now) return;
    pthread_mutex_lock(&sh->lock);
    for (size_t w = 0; w < WAYS; w++) {
        e = &c->sets[si][w];
        if (e->t && memcmp(e->key, key, 32) == 0) { /* another thread verified it too */
            victim = e;
            break;
        }
        if (!victim || (is_reusable(e, now) && !is_reusable(victim, now)) ||
            (is_reusable(e, now) == is_reusable(victim, now) && e->stamp < victim->stamp))
            victim = e;
    }
    old = victim->t;
    memcpy(victim->key, key, 32);
    victim->t = hf_jwt_ref(t);
    victim->expires = expires;
    victim->stamp = sh->next_stamp++;
    pthread_mutex_unlock(&sh->lock);
    hf_jwt_release(old);
}
