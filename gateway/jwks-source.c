/* A JWKS kept current by a thread of its own, so that no request ever waits on a key server:
 * requests read the current set (a reference taken under a short lock) and, for an unknown kid,
 * only ask for a refetch. */
#include "hf-build.h"

#include "gateway/jwks.h"
#include "gateway/log.h"
#include "gateway/why.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* While no set was ever loaded, retry this often rather than wait a whole refresh period. */
#define FIRST_RETRY_S 5u

struct hf_jwks_source {
    char *location;
    struct hf_outbound_policy policy;
    char *ca_file;
    char **allow;
    unsigned refresh_max_s;
    unsigned first_wait_s; /* what the load at start said */

    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t wake;
    struct hf_jwks *current;
    bool refetch_wanted, stopping;
    uint64_t loads;
    uint64_t last_refetch_us; /* 0: never */
    pthread_t thread;
    bool started;
};

static struct timespec deadline_in(unsigned seconds)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += seconds;
    return ts;
}

unsigned hf_jwks_next_refresh_s(bool loaded, bool have_set, long max_age_s, unsigned refresh_max_s)
{
    if (!loaded) return have_set ? HF_JWKS_REFRESH_MIN_S : FIRST_RETRY_S;
    if (max_age_s < 0) return refresh_max_s;
    if (max_age_s < (long)HF_JWKS_REFRESH_MIN_S) return HF_JWKS_REFRESH_MIN_S;
    return max_age_s > (long)refresh_max_s ? refresh_max_s : (unsigned)max_age_s;
}

/* One load; on success the new set replaces the current one. Returns the seconds until the
 * next refresh. */
static unsigned refresh(struct hf_jwks_source *s, bool *loaded, char *why, size_t whylen)
{
    struct hf_jwks *set = NULL, *old;
    long max_age = -1;
    bool have;

    *loaded = hf_jwks_load(s->location, &s->policy, &set, &max_age, why, whylen);
    pthread_mutex_lock(&s->lock);
    if (*loaded) {
        old = s->current;
        s->current = set;
        s->loads++;
        set = old;
    }
    have = s->current != NULL;
    pthread_mutex_unlock(&s->lock);
    hf_jwks_unref(set);
    return hf_jwks_next_refresh_s(*loaded, have, max_age, s->refresh_max_s);
}

static void *refresher(void *arg)
{
    struct hf_jwks_source *s = arg;
    unsigned wait_s = s->first_wait_s;
    char why[512];
    bool loaded;

    for (;;) {
        struct timespec until = deadline_in(wait_s);
        int rc = 0;

        pthread_mutex_lock(&s->lock);
        while (!s->stopping && !s->refetch_wanted && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&s->wake, &s->lock, &until);
        s->refetch_wanted = false;
        if (s->stopping) {
            pthread_mutex_unlock(&s->lock);
            break;
        }
        pthread_mutex_unlock(&s->lock);
        why[0] = '\0';
        wait_s = refresh(s, &loaded, why, sizeof(why));
        if (!loaded) hf_gw_log_warn("JWKS refresh failed, keeping the last set: %s", why);
    }
    return NULL;
}

static bool policy_copy(struct hf_jwks_source *s, const struct hf_outbound_policy *p)
{
    if (!p) return true;
    s->policy = *p;
    s->policy.ca_file = NULL;
    s->policy.allow_cidrs = NULL;
    s->policy.nallow_cidrs = 0;
    if (p->ca_file && !(s->ca_file = strdup(p->ca_file))) return false;
    s->policy.ca_file = s->ca_file;
    if (p->nallow_cidrs == 0) return true;
    if (!(s->allow = calloc(p->nallow_cidrs, sizeof(*s->allow)))) return false;
    for (size_t i = 0; i < p->nallow_cidrs; i++) {
        if (!(s->allow[i] = strdup(p->allow_cidrs[i]))) return false;
        s->policy.nallow_cidrs = i + 1;
    }
    s->policy.allow_cidrs = (const char *const *)s->allow;
    return true;
}

static bool source_start(struct hf_jwks_source *s, char *err, size_t errlen)
{
    pthread_condattr_t attr;
    bool is_url = strncmp(s->location, "https://", 8) == 0;
    bool loaded;
    char why[512] = "";

    s->first_wait_s = refresh(s, &loaded, why, sizeof(why));
    if (!loaded && !is_url) {
        snprintf(err, errlen, "%s", why);
        return false;
    }
    if (!loaded) hf_gw_log_warn("JWKS not loaded yet, retrying in the background: %s", why);
    if (pthread_condattr_init(&attr) != 0) return false;
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    s->started = pthread_cond_init(&s->wake, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (!s->started) return false;
    if (pthread_create(&s->thread, NULL, refresher, s) != 0) {
        pthread_cond_destroy(&s->wake);
        s->started = false;
        snprintf(err, errlen, "cannot start the JWKS refresh thread");
        return false;
    }
    return true;
}

struct hf_jwks_source *hf_jwks_source_new(const char *location,
                                          const struct hf_outbound_policy *policy,
                                          unsigned refresh_max_s, char *err, size_t errlen)
{
    struct hf_jwks_source *s = calloc(1, sizeof(*s));

    if (err && errlen) err[0] = '\0';
    if (!s) return NULL;
    pthread_mutex_init(&s->lock, NULL);
    s->refresh_max_s =
        refresh_max_s < HF_JWKS_REFRESH_MIN_S ? HF_JWKS_REFRESH_MIN_S : refresh_max_s;
    if (!(s->location = strdup(location)) || !policy_copy(s, policy) ||
        !source_start(s, err, errlen)) {
        if (err && errlen && !err[0]) snprintf(err, errlen, "out of memory");
        hf_jwks_source_free(s);
        return NULL;
    }
    return s;
}

struct hf_jwks_source *hf_jwks_source_inline(const char *json, char *err, size_t errlen)
{
    struct hf_jwks_source *s = calloc(1, sizeof(*s));

    if (err && errlen) err[0] = '\0';
    if (!s) {
        hf_why(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    if (!hf_jwks_parse(json, strlen(json), &s->current, err, errlen)) {
        hf_jwks_source_free(s);
        return NULL;
    }
    s->loads = 1;
    return s;
}

struct hf_jwks *hf_jwks_source_get(struct hf_jwks_source *s)
{
    struct hf_jwks *set;

    pthread_mutex_lock(&s->lock);
    set = hf_jwks_ref(s->current);
    pthread_mutex_unlock(&s->lock);
    return set;
}

void hf_jwks_source_refetch(struct hf_jwks_source *s)
{
    uint64_t now = hf_now_us();

    if (!s->started) return; /* an inline set: nowhere to fetch from */
    pthread_mutex_lock(&s->lock);
    if (s->last_refetch_us == 0 ||
        now - s->last_refetch_us >= (uint64_t)HF_JWKS_REFETCH_MIN_S * 1000000u) {
        s->last_refetch_us = now;
        s->refetch_wanted = true;
        pthread_cond_signal(&s->wake);
    }
    pthread_mutex_unlock(&s->lock);
}

uint64_t hf_jwks_source_loads(struct hf_jwks_source *s)
{
    uint64_t n;

    pthread_mutex_lock(&s->lock);
    n = s->loads;
    pthread_mutex_unlock(&s->lock);
    return n;
}

void hf_jwks_source_free(struct hf_jwks_source *s)
{
    if (!s) return;
    if (s->started) {
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        pthread_cond_destroy(&s->wake);
    }
    hf_jwks_unref(s->current);
    pthread_mutex_destroy(&s->lock);
    for (size_t i = 0; s->allow && i < s->policy.nallow_cidrs; i++)
        free(s->allow[i]);
    free(s->allow);
    free(s->ca_file);
    free(s->location);
    free(s);
}
