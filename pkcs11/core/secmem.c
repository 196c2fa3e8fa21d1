#include "hf-build.h"

#include "secmem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "log.h"

/* A page is cut into 64-byte slots so that a 32-byte AES key costs one slot, not one page:
 * locked memory is scarce (RLIMIT_MEMLOCK is often 64 KiB for ordinary users). */
#define SLOT 64

/* One locked page. The header lives in ordinary memory so the locked page holds only
 * secrets. */
struct arena {
    struct arena *next;
    unsigned char *base;
    size_t used;    /* slots in use */
    uint64_t map[]; /* bit i set: slot i in use */
};

static pthread_mutex_t arenas_lock = PTHREAD_MUTEX_INITIALIZER;
static struct arena *arenas; /* guarded by arenas_lock */
static pthread_once_t page_once = PTHREAD_ONCE_INIT;
static size_t page_size; /* set once by page_once */
static size_t slots_per_page;
static atomic_flag lock_warned = ATOMIC_FLAG_INIT;

static void region_protect(void *p, size_t len)
{
    /* Core dumps go to places with other readers (systemd-coredump, crash reporters). */
    (void)madvise(p, len, MADV_DONTDUMP);
    /* A forked child (a PKCS#11 host's worker, a CGI) gets zero pages here, not the parent's
     * keys: the module is uninitialised in the child (module.c) and the core it opens again
     * unwraps afresh, so nothing in the child reads what the parent unwrapped. Linux 4.14+; on
     * an older kernel the copy stays, as before. */
#ifdef MADV_WIPEONFORK
    (void)madvise(p, len, MADV_WIPEONFORK);
#endif
    if (mlock(p, len) != 0 && !atomic_flag_test_and_set(&lock_warned))
        hf_log_warn("secmem: mlock failed (RLIMIT_MEMLOCK?): key material may be swapped");
}

static void *region_map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) return NULL;
    region_protect(p, len);
    return p;
}

static void region_unmap(void *p, size_t len)
{
    OPENSSL_cleanse(p, len);
    (void)munlock(p, len);
    munmap(p, len);
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

static bool bit_is_set(const struct arena *a, size_t i)
{
    return (a->map[i / 64] >> (i % 64)) & 1;
}

static void bits_set(struct arena *a, size_t first, size_t n, bool on)
{
    for (size_t i = first; i < first + n; i++) {
        uint64_t bit = UINT64_C(1) << (i % 64);
        if (on)
            a->map[i / 64] |= bit;
        else
            a->map[i / 64] &= ~bit;
    }
}

/* First fit of n consecutive free slots; slots_per_page when none. Caller holds arenas_lock. */
static size_t arena_find(const struct arena *a, size_t n)
{
    size_t run = 0;

    if (slots_per_page - a->used < n) return slots_per_page;
    for (size_t i = 0; i < slots_per_page; i++) {
        run = bit_is_set(a, i) ? 0 : run + 1;
        if (run == n) return i + 1 - n;
    }
    return slots_per_page;
}

static struct arena *arena_new(void)
{
    struct arena *a = calloc(1, sizeof(*a) + (slots_per_page + 63) / 64 * sizeof(uint64_t));

    if (a == NULL) return NULL;
    a->base = region_map(page_size);
    if (a->base == NULL) {
        free(a);
        return NULL;
    }
    return a;
}

static void arenas_prepare(void)
{
    pthread_mutex_lock(&arenas_lock);
}

static void arenas_release(void)
{
    pthread_mutex_unlock(&arenas_lock);
}

static void page_size_init(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    page_size = ps > 0 ? (size_t)ps : 4096;
    slots_per_page = page_size / SLOT;
    /* A fork() while another thread allocates would leave the child's copy of the lock held
     * forever, and the child re-opens its HSM (which allocates here) before anything else. */
    pthread_atfork(arenas_prepare, arenas_release, arenas_release);
}

void *hf_secmem_alloc(size_t len)
{
    void *out = NULL;
    size_t n;

    pthread_once(&page_once, page_size_init);

    if (len > page_size) {
        if (len > SIZE_MAX - page_size) return NULL;
        return region_map(round_up(len, page_size)); /* fresh anonymous pages are zero */
    }
    n = round_up(len == 0 ? 1 : len, SLOT) / SLOT;

    pthread_mutex_lock(&arenas_lock);
    struct arena *a = arenas;
    size_t at = slots_per_page;
    for (; a != NULL; a = a->next)
        if ((at = arena_find(a, n)) < slots_per_page) break;
    if (a == NULL) {
        a = arena_new();
        if (a == NULL) goto done;
        a->next = arenas;
        arenas = a;
        at = 0;
    }
    bits_set(a, at, n, true);
    a->used += n;
    out = a->base + at * SLOT;
    memset(out, 0, n * SLOT);
done:
    pthread_mutex_unlock(&arenas_lock);
    return out;
}

void hf_secmem_free(void *ptr, size_t len)
{
    struct arena **link, *a;
    unsigned char *p = ptr;
    size_t n, at, empty = 0;

    if (ptr == NULL) return;
    pthread_once(&page_once, page_size_init);
    if (len > page_size) {
        region_unmap(ptr, round_up(len, page_size));
        return;
    }
    n = round_up(len == 0 ? 1 : len, SLOT) / SLOT;

    pthread_mutex_lock(&arenas_lock);
    for (link = &arenas; (a = *link) != NULL; link = &a->next)
        if (p >= a->base && p < a->base + page_size) break;
    if (a == NULL || (size_t)(p - a->base) % SLOT != 0 ||
        (size_t)(p - a->base) / SLOT + n > slots_per_page) {
        pthread_mutex_unlock(&arenas_lock);
        hf_log_error("secmem: free of memory it did not hand out");
        return;
    }
    at = (size_t)(p - a->base) / SLOT;
    OPENSSL_cleanse(p, n * SLOT);
    bits_set(a, at, n, false);
    a->used -= n;
    if (a->used == 0) {
        /* Keep one empty page for the next key; give the rest back so locked memory follows the
         * cache's size rather than its peak. */
        for (struct arena *b = arenas; b != NULL; b = b->next)
            if (b->used == 0) empty++;
        if (empty > 1) {
            *link = a->next;
            region_unmap(a->base, page_size);
            free(a);
        }
    }
    pthread_mutex_unlock(&arenas_lock);
}
