/* SIGHUP: a new generation is built beside the current one and swapped in (reload.h). Listeners
 * keep their address and TLS policy (a reload that changes them is refused) and take the
 * plugins they serve from the new config; threads, the PKCS#11 module and its login stay as
 * they started (a reload that changes them says so in the log). */
#include "hf-build.h"

#include "gateway/reload.h"
#include "gateway/keys.h"
#include "gateway/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct thread_gen {
    struct hf_gw_generation *gen;
    unsigned epoch;
};

static struct {
    pthread_mutex_t lock; /* guards current (the swap), and the slow path of acquire */
    struct hf_gw_generation *current;
    atomic_uint epoch; /* bumped on every swap */
    pthread_key_t key;
    pthread_once_t once;
} cur = {.lock = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT};

static void thread_gen_free(void *arg)
{
    struct thread_gen *tg = arg;

    if (tg) hf_gw_generation_unref(tg->gen);
    free(tg);
}

static void key_make(void)
{
    pthread_key_create(&cur.key, thread_gen_free);
}

void hf_gw_reload_install(struct hf_gw_generation *gen)
{
    struct hf_gw_generation *old;

    pthread_mutex_lock(&cur.lock);
    old = cur.current;
    cur.current = gen;
    atomic_fetch_add(&cur.epoch, 1);
    pthread_mutex_unlock(&cur.lock);
    hf_gw_generation_unref(old);
}

struct hf_gw_generation *hf_gw_current_acquire(void)
{
    struct thread_gen *tg;
    struct hf_gw_generation *old = NULL, *gen;
    unsigned epoch = atomic_load(&cur.epoch);

    pthread_once(&cur.once, key_make);
    if (!(tg = pthread_getspecific(cur.key))) {
        if (!(tg = calloc(1, sizeof(*tg))) || pthread_setspecific(cur.key, tg) != 0) {
            free(tg);
            /* No thread cache: the lock every time, still correct. */
            pthread_mutex_lock(&cur.lock);
            gen = hf_gw_generation_ref(cur.current);
            pthread_mutex_unlock(&cur.lock);
            return gen;
        }
    }
    if (tg->gen == NULL || tg->epoch != epoch) {
        pthread_mutex_lock(&cur.lock);
        old = tg->gen;
        tg->gen = hf_gw_generation_ref(cur.current);
        tg->epoch = atomic_load(&cur.epoch);
        pthread_mutex_unlock(&cur.lock);
        hf_gw_generation_unref(old); /* outside the lock: may destroy a plugin state */
    }
    return hf_gw_generation_ref(tg->gen);
}

static bool strs_differ(const char *a, const char *b)
{
    return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

/* A listener's address and TLS policy change only with a restart. Its plugins come from the
 * new config, so a reload that kept an old address or TLS policy would run a file that says
 * otherwise (a client CA removed, a subject rule added, still in force unseen): it is refused,
 * naming the listener, and the running configuration stays. false with the message in err. */
static bool listeners_are_unchanged(const struct hf_gw_config *old, const struct hf_gw_config *new,
                                    char *err, size_t errlen)
{
    for (size_t i = 0; i < old->nlistens || i < new->nlistens; i++) {
        const struct hf_gw_listen *a = i < old->nlistens ? &old->listens[i] : NULL,
                                  *b = i < new->nlistens ? &new->listens[i] : NULL;
        if (a && b && hf_gw_config_listen_is_same(old, a, new, b)) continue;
        snprintf(err, errlen,
                 "%s: listener %s %s: listeners, their addresses and TLS settings change only "
                 "with a restart (their plugins may change on a reload)",
                 new->path, b ? b->name : a->name,
                 !a   ? "is new"
                 : !b ? "is gone"
                      : "differs from the running one");
        return false;
    }
    return true;
}

/* What a reload cannot change but leaves alone, compared so the log says it was ignored. */
static void restart_only_check(const struct hf_gw_config *old, const struct hf_gw_config *new)
{
    if (old->threads != new->threads || old->max_connections != new->max_connections ||
        old->connection_timeout != new->connection_timeout ||
        old->max_per_address != new->max_per_address ||
        old->header_timeout != new->header_timeout || old->body_min_rate != new->body_min_rate)
        hf_gw_log_warn("reload: threads and connection limits change only with a restart; the "
                       "running ones stay");
    if (strs_differ(old->module, new->module) || strs_differ(old->token_label, new->token_label))
        hf_gw_log_warn("reload: module and token change only with a restart");
}

bool hf_gw_reload(const char *path, char *err, size_t errlen)
{
    struct hf_gw_config *cfg = hf_gw_config_load(path, err, errlen);
    struct hf_gw_generation *gen, *old;
    char logerr[256];

    if (!cfg) return false;
    pthread_mutex_lock(&cur.lock);
    old = hf_gw_generation_ref(cur.current);
    pthread_mutex_unlock(&cur.lock);
    if (old && !listeners_are_unchanged(old->config, cfg, err, errlen)) {
        hf_gw_generation_unref(old);
        hf_gw_config_free(cfg);
        return false;
    }
    if (old) restart_only_check(old->config, cfg);
    hf_gw_generation_unref(old);
    if (!hf_gw_log_open(cfg->log_path, logerr, sizeof(logerr)))
        hf_gw_log_warn("reload: %s; logging where it did", logerr);
    /* The cache first: new plugin states that look keys up in start() see fresh links. */
    hf_gw_keys_flush();
    if (!(gen = hf_gw_generation_build(cfg, true, err, errlen))) return false;
    hf_gw_reload_install(gen);
    return true;
}

void hf_gw_reload_shutdown(void)
{
    struct thread_gen *tg;

    hf_gw_reload_install(NULL);
    /* This thread's own cached reference (the main thread does not end before exit). */
    pthread_once(&cur.once, key_make);
    if ((tg = pthread_getspecific(cur.key))) {
        pthread_setspecific(cur.key, NULL);
        thread_gen_free(tg);
    }
}
