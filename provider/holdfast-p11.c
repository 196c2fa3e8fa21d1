/* The PKCS#11 side of the provider: the module (loaded by path on first use), its
 * re-initialisation after fork, token logins and a pool of sessions.
 *
 * Speed: a key operation costs one pool pop and push (a mutex held for a few instructions), a
 * C_SignInit and a C_Sign. Sessions are opened once and reused; object handles live in the key
 * (holdfast-key.c); nothing searches per operation.
 *
 * Logins: PKCS#11 logins are per application and last while one of its sessions is open, so each
 * logged-in token keeps a "keeper" session that the pool never closes. A PIN the token refused
 * is never offered again in this process, by any provider instance: a retry loop is how tokens
 * get locked. What a token accepted or refused is remembered per process (struct token_memo),
 * since every instance that loads the same module shares its login state.
 *
 * Fork: a pthread_atfork child handler bumps fork_count; the next use in the child calls
 * C_Initialize again (PKCS#11 2.40 section 6.7.7: the child must), forgets the parent's sessions
 * (never closing them: they are the parent's) and logs back in with the PIN that worked. The
 * prepare handler takes every instance's lock so the child never inherits a half-updated pool. */
#include "hf-build.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/params.h>

#include "provider/provider.h"

#define PIN_MAX 256

struct slot_state {
    CK_SLOT_ID id;
    bool logged_in; /* no further login needed, in the current generation */
    bool has_keeper;
    CK_SESSION_HANDLE keeper;
};

/* What one token of one loaded module accepted or refused, for the whole process: instances
 * loading the same module share one login state (PKCS#11 logins are per application). */
struct token_memo {
    void *dl; /* the module (dlopen handle: one per file in a process) */
    CK_SLOT_ID slot;
    bool login_failed;  /* the token refused a PIN: never try again */
    unsigned char *pin; /* the PIN it accepted (secret), to log in again after a fork */
    size_t pin_len;
    struct token_memo *next;
};

struct pooled {
    CK_SLOT_ID slot;
    CK_SESSION_HANDLE session;
};

struct hf_p11 {
    struct hf_prov *prov;
    char *module_path;
    char *pin_spec;             /* secret: cleansed on free */
    struct hf_p11 *next;        /* in the fork registry */
    pthread_mutex_t login_lock; /* one login attempt at a time: serialises PIN use */
    pthread_mutex_t lock;       /* guards the fields below */
    void *dl;
    CK_FUNCTION_LIST *fn;
    bool we_initialised;     /* C_Finalize at teardown only if we called C_Initialize first */
    bool finalize;           /* and only if configured to (pkcs11-module-finalize) */
    atomic_ulong ready_fork; /* fork_count when last initialised; 0: never */
    atomic_ulong generation;
    struct slot_state *slots;
    size_t nslots;
    struct pooled *pool;
    size_t npool, pool_cap;
};

/* Process-wide: bumped in every forked child. Starts at 1 so that 0 means "never initialised". */
static atomic_ulong fork_count = 1;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hf_p11 *registry; /* guarded by registry_lock */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
/* A leaf lock: held for a lookup or a copy, never across a call. */
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct token_memo *memos; /* guarded by memo_lock */

static void atfork_prepare(void)
{
    pthread_mutex_lock(&registry_lock);
    for (struct hf_p11 *p = registry; p != NULL; p = p->next)
        pthread_mutex_lock(&p->lock);
    pthread_mutex_lock(&memo_lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&memo_lock);
    for (struct hf_p11 *p = registry; p != NULL; p = p->next)
        pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&registry_lock);
}

static void atfork_child(void)
{
    pthread_mutex_unlock(&memo_lock);
    for (struct hf_p11 *p = registry; p != NULL; p = p->next) {
        pthread_mutex_unlock(&p->lock);
        /* A thread that held it (waiting for a PIN prompt) does not exist in the child. */
        pthread_mutex_init(&p->login_lock, NULL);
    }
    atomic_fetch_add(&fork_count, 1);
    pthread_mutex_unlock(&registry_lock);
}

/* glibc unregisters these when the provider is unloaded (pthread_atfork records the DSO). */
static void atfork_register(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* At exit, modules are finalised here, before the libraries they loaded run their own exit
 * handlers: OpenSSL tears providers down from its atexit handler, registered before any module
 * was loaded and so run after them, when SoftHSMv2 (under holdfast's core) has already destroyed
 * its C++ statics, and a C_Finalize then crashes inside it. Registered after the first
 * C_Initialize, so it runs before those. atexit() from a shared object is bound to it (glibc's
 * __cxa_atexit with __dso_handle): if OpenSSL unloads us first, it runs then and finds nothing
 * left to do. */
static void atexit_finalize(void)
{
    pthread_mutex_lock(&registry_lock);
    for (struct hf_p11 *p = registry; p != NULL; p = p->next) {
        pthread_mutex_lock(&p->lock);
        if (p->fn != NULL && p->we_initialised && p->finalize &&
            atomic_load(&p->ready_fork) == atomic_load(&fork_count))
            p->fn->C_Finalize(NULL);
        /* Whatever was ours is gone now, or belongs to whoever initialised the module. */
        p->we_initialised = false;
        p->npool = 0;
        for (size_t i = 0; i < p->nslots; i++) {
            p->slots[i].has_keeper = false;
            p->slots[i].logged_in = false;
        }
        atomic_store(&p->ready_fork, 0);
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_unlock(&registry_lock);
}

static pthread_once_t atexit_once = PTHREAD_ONCE_INIT;

static void atexit_register(void)
{
    atexit(atexit_finalize);
}

const char *hf_ckr_name(CK_RV rv, char buf[32])
{
    static const struct {
        CK_RV rv;
        const char *name;
    } names[] = {
#define N(x) {x, #x}
        N(CKR_OK),
        N(CKR_HOST_MEMORY),
        N(CKR_SLOT_ID_INVALID),
        N(CKR_GENERAL_ERROR),
        N(CKR_FUNCTION_FAILED),
        N(CKR_ARGUMENTS_BAD),
        N(CKR_ATTRIBUTE_SENSITIVE),
        N(CKR_ATTRIBUTE_TYPE_INVALID),
        N(CKR_DATA_INVALID),
        N(CKR_DATA_LEN_RANGE),
        N(CKR_DEVICE_ERROR),
        N(CKR_DEVICE_MEMORY),
        N(CKR_DEVICE_REMOVED),
        N(CKR_ENCRYPTED_DATA_INVALID),
        N(CKR_ENCRYPTED_DATA_LEN_RANGE),
        N(CKR_FUNCTION_NOT_SUPPORTED),
        N(CKR_KEY_HANDLE_INVALID),
        N(CKR_KEY_SIZE_RANGE),
        N(CKR_KEY_TYPE_INCONSISTENT),
        N(CKR_KEY_FUNCTION_NOT_PERMITTED),
        N(CKR_MECHANISM_INVALID),
        N(CKR_MECHANISM_PARAM_INVALID),
        N(CKR_OBJECT_HANDLE_INVALID),
        N(CKR_OPERATION_ACTIVE),
        N(CKR_OPERATION_NOT_INITIALIZED),
        N(CKR_PIN_INCORRECT),
        N(CKR_PIN_INVALID),
        N(CKR_PIN_LEN_RANGE),
        N(CKR_PIN_EXPIRED),
        N(CKR_PIN_LOCKED),
        N(CKR_SESSION_CLOSED),
        N(CKR_SESSION_COUNT),
        N(CKR_SESSION_HANDLE_INVALID),
        N(CKR_TOKEN_NOT_PRESENT),
        N(CKR_TOKEN_NOT_RECOGNIZED),
        N(CKR_USER_ALREADY_LOGGED_IN),
        N(CKR_USER_NOT_LOGGED_IN),
        N(CKR_USER_PIN_NOT_INITIALIZED),
        N(CKR_USER_TYPE_INVALID),
        N(CKR_BUFFER_TOO_SMALL),
        N(CKR_CRYPTOKI_NOT_INITIALIZED),
        N(CKR_CRYPTOKI_ALREADY_INITIALIZED),
        N(CKR_HF_LINK_BLOCKED),
        N(CKR_HF_AUDIT_FAILED),
        N(CKR_HF_POLICY_INVALID),
#undef N
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].rv == rv) return names[i].name;
    snprintf(buf, 32, "CKR 0x%lx", (unsigned long)rv);
    return buf;
}

#define RAISE_CKR(p, call, rv)                                                                     \
    do {                                                                                           \
        char ckr_buf_[32];                                                                         \
        HF_RAISE_DATA((p)->prov, HF_R_PKCS11_ERROR, "%s: %s", (call),                              \
                      hf_ckr_name((rv), ckr_buf_));                                                \
    } while (0)

static char *strdup_secret(const char *s)
{
    return s != NULL ? OPENSSL_strdup(s) : NULL;
}

static void free_secret(char *s)
{
    if (s != NULL) OPENSSL_clear_free(s, strlen(s));
}

/* ---- what tokens accepted and refused ----------------------------------------------------------
 */

/* With memo_lock held. NULL when absent (and not made, or out of memory). */
static struct token_memo *memo_find(void *dl, CK_SLOT_ID slot, bool make)
{
    struct token_memo *m;

    for (m = memos; m != NULL; m = m->next)
        if (m->dl == dl && m->slot == slot) return m;
    if (!make || (m = OPENSSL_zalloc(sizeof(*m))) == NULL) return NULL;
    m->dl = dl;
    m->slot = slot;
    m->next = memos;
    memos = m;
    return m;
}

static bool memo_login_failed(void *dl, CK_SLOT_ID slot)
{
    struct token_memo *m;
    bool failed;

    pthread_mutex_lock(&memo_lock);
    m = memo_find(dl, slot, false);
    failed = m != NULL && m->login_failed;
    pthread_mutex_unlock(&memo_lock);
    return failed;
}

/* The token refused a PIN. Also forgets the one it once accepted: it changed. */
static void memo_fail(void *dl, CK_SLOT_ID slot)
{
    struct token_memo *m;

    pthread_mutex_lock(&memo_lock);
    if ((m = memo_find(dl, slot, true)) != NULL) {
        m->login_failed = true;
        if (m->pin != NULL) OPENSSL_clear_free(m->pin, m->pin_len);
        m->pin = NULL;
        m->pin_len = 0;
    }
    pthread_mutex_unlock(&memo_lock);
}

static void memo_keep_pin(void *dl, CK_SLOT_ID slot, const char *pin, size_t len)
{
    struct token_memo *m;
    unsigned char *copy = OPENSSL_malloc(len ? len : 1);

    if (copy == NULL) return; /* then a forked child cannot log in again: reported there */
    memcpy(copy, pin, len);
    pthread_mutex_lock(&memo_lock);
    if ((m = memo_find(dl, slot, true)) != NULL) {
        if (m->pin != NULL) OPENSSL_clear_free(m->pin, m->pin_len);
        m->pin = copy;
        m->pin_len = len;
        copy = NULL;
    }
    pthread_mutex_unlock(&memo_lock);
    if (copy != NULL) OPENSSL_clear_free(copy, len);
}

/* The PIN slot's token accepted, copied into buf (cap bytes). Whether there is one. */
static bool memo_pin(void *dl, CK_SLOT_ID slot, char *buf, size_t cap, size_t *len)
{
    struct token_memo *m;
    bool have = false;

    pthread_mutex_lock(&memo_lock);
    m = memo_find(dl, slot, false);
    if (m != NULL && m->pin != NULL && m->pin_len < cap) {
        memcpy(buf, m->pin, m->pin_len);
        buf[m->pin_len] = '\0';
        *len = m->pin_len;
        have = true;
    }
    pthread_mutex_unlock(&memo_lock);
    return have;
}

/* Forgets every token of module dl (its last user in the process is going). */
static void memo_forget(void *dl)
{
    struct token_memo **mp, *m;

    pthread_mutex_lock(&memo_lock);
    for (mp = &memos; (m = *mp) != NULL;) {
        if (m->dl != dl) {
            mp = &m->next;
            continue;
        }
        *mp = m->next;
        if (m->pin != NULL) OPENSSL_clear_free(m->pin, m->pin_len);
        OPENSSL_free(m);
    }
    pthread_mutex_unlock(&memo_lock);
}

struct hf_p11 *hf_p11_new(struct hf_prov *prov, const char *module, const char *pin_spec,
                          bool finalize)
{
    struct hf_p11 *p = OPENSSL_zalloc(sizeof(*p));

    if (p == NULL) goto fail;
    p->prov = prov;
    p->finalize = finalize;
    p->module_path = OPENSSL_strdup(module);
    p->pin_spec = strdup_secret(pin_spec);
    if (p->module_path == NULL || (pin_spec != NULL && p->pin_spec == NULL)) goto fail;
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->login_lock, NULL);
    pthread_once(&atfork_once, atfork_register);
    pthread_mutex_lock(&registry_lock);
    p->next = registry;
    registry = p;
    pthread_mutex_unlock(&registry_lock);
    return p;
fail:
    HF_RAISE_DATA(prov, HF_R_MODULE_LOAD, "out of memory");
    if (p != NULL) {
        OPENSSL_free(p->module_path);
        free_secret(p->pin_spec);
        OPENSSL_free(p);
    }
    return NULL;
}

void hf_p11_free(struct hf_p11 *p)
{
    struct hf_p11 **pp, *other;
    bool last = true;

    if (p == NULL) return;
    pthread_mutex_lock(&registry_lock);
    for (pp = &registry; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    for (other = registry; other != NULL; other = other->next)
        if (p->dl != NULL && other->dl == p->dl) last = false;
    pthread_mutex_unlock(&registry_lock);
    if (last && p->dl != NULL) memo_forget(p->dl);
    /* Only touch the module if it was initialised in this process (not merely inherited from a
     * parent that forked us): its state here may be the parent's. */
    if (p->fn != NULL && atomic_load(&p->ready_fork) == atomic_load(&fork_count)) {
        if (p->we_initialised && p->finalize) {
            p->fn->C_Finalize(NULL); /* closes every session, ends every login */
        } else {
            /* Someone else in the process uses the module too, or the module ends itself
             * (pkcs11-module-finalize = no): leave it initialised, close only what is ours. */
            for (size_t i = 0; i < p->npool; i++)
                p->fn->C_CloseSession(p->pool[i].session);
            for (size_t i = 0; i < p->nslots; i++)
                if (p->slots[i].has_keeper) p->fn->C_CloseSession(p->slots[i].keeper);
        }
    }
    /* The module was opened RTLD_NODELETE: dlclose only drops our reference. */
    if (p->dl != NULL) dlclose(p->dl);
    OPENSSL_free(p->slots);
    OPENSSL_free(p->pool);
    OPENSSL_free(p->module_path);
    free_secret(p->pin_spec);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->login_lock);
    OPENSSL_free(p);
}

const char *hf_p11_module_path(const struct hf_p11 *p)
{
    return p->module_path;
}

unsigned long hf_p11_generation(struct hf_p11 *p)
{
    return atomic_load_explicit(&p->generation, memory_order_acquire);
}

/* The slot's state, added if new; valid while p->lock is held. NULL when out of memory. */
static struct slot_state *slot_state(struct hf_p11 *p, CK_SLOT_ID slot)
{
    struct slot_state *grown;

    for (size_t i = 0; i < p->nslots; i++)
        if (p->slots[i].id == slot) return &p->slots[i];
    grown = OPENSSL_realloc(p->slots, (p->nslots + 1) * sizeof(*grown));
    if (grown == NULL) return NULL;
    p->slots = grown;
    memset(&grown[p->nslots], 0, sizeof(*grown));
    grown[p->nslots].id = slot;
    return &grown[p->nslots++];
}

/* Refusals that count toward a token's retry limit (or mean it already locked): never retried. */
static bool ckr_is_pin_refusal(CK_RV rv)
{
    return rv == CKR_PIN_INCORRECT || rv == CKR_PIN_INVALID || rv == CKR_PIN_LEN_RANGE ||
           rv == CKR_PIN_EXPIRED || rv == CKR_PIN_LOCKED;
}

/* With p->lock held. Logs in again, after a fork, every token we were logged in to. A failure
 * leaves the token logged out: its keys then fail with CKR_USER_NOT_LOGGED_IN, reported there. */
static void relogin_locked(struct hf_p11 *p)
{
    char pin[PIN_MAX];
    size_t pin_len = 0;

    for (size_t i = 0; i < p->nslots; i++) {
        struct slot_state *st = &p->slots[i];
        CK_RV rv;

        if (!memo_pin(p->dl, st->id, pin, sizeof(pin), &pin_len)) continue;
        rv = p->fn->C_OpenSession(st->id, CKF_SERIAL_SESSION, NULL, NULL, &st->keeper);
        if (rv != CKR_OK) continue;
        st->has_keeper = true;
        rv = p->fn->C_Login(st->keeper, CKU_USER, (CK_UTF8CHAR_PTR)pin, (CK_ULONG)pin_len);
        if (rv == CKR_OK || rv == CKR_USER_ALREADY_LOGGED_IN)
            st->logged_in = true;
        else if (ckr_is_pin_refusal(rv))
            memo_fail(p->dl, st->id);
    }
    OPENSSL_cleanse(pin, sizeof(pin));
}

static int ready_locked(struct hf_p11 *p, unsigned long forks)
{
    CK_C_INITIALIZE_ARGS args = {NULL, NULL, NULL, NULL, CKF_OS_LOCKING_OK, NULL};
    CK_C_GetFunctionList get;
    bool reinit = p->fn != NULL;
    CK_RV rv;

    if (atomic_load_explicit(&p->ready_fork, memory_order_relaxed) == forks) return 1;
    if (p->dl == NULL) {
        /* RTLD_NODELETE: a module keeps process-lifetime state (threads' OpenSSL cleanup
         * handlers, atfork handlers) that must stay mapped after we let it go. */
        p->dl = dlopen(p->module_path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (p->dl == NULL) {
            HF_RAISE_DATA(p->prov, HF_R_MODULE_LOAD, "%s", dlerror());
            return 0;
        }
        get = (CK_C_GetFunctionList)dlsym(p->dl, "C_GetFunctionList");
        if (get == NULL || (rv = get(&p->fn)) != CKR_OK || p->fn == NULL) {
            HF_RAISE_DATA(p->prov, HF_R_MODULE_LOAD, "%s: no usable C_GetFunctionList",
                          p->module_path);
            p->fn = NULL;
            dlclose(p->dl);
            p->dl = NULL;
            return 0;
        }
    }
    rv = p->fn->C_Initialize(&args);
    if (rv == CKR_OK) {
        p->we_initialised = true;
    } else if (rv == CKR_CRYPTOKI_ALREADY_INITIALIZED) {
        /* Another user in this process initialised it (or, after a fork, a module that does not
         * notice forks kept its state): share it; finalise it only if we initialised it. */
        p->we_initialised = reinit && p->we_initialised;
    } else {
        char buf[32];
        HF_RAISE_DATA(p->prov, HF_R_MODULE_LOAD, "%s: C_Initialize: %s", p->module_path,
                      hf_ckr_name(rv, buf));
        return 0;
    }
    /* The parent's sessions and logins are not ours to use or close in a child. */
    p->npool = 0;
    for (size_t i = 0; i < p->nslots; i++) {
        p->slots[i].logged_in = false;
        p->slots[i].has_keeper = false;
    }
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_once(&atexit_once, atexit_register);
    if (reinit) relogin_locked(p);
    atomic_store_explicit(&p->ready_fork, forks, memory_order_release);
    return 1;
}

int hf_p11_ready(struct hf_p11 *p, CK_FUNCTION_LIST **fn)
{
    unsigned long forks = atomic_load_explicit(&fork_count, memory_order_acquire);
    int ok;

    if (atomic_load_explicit(&p->ready_fork, memory_order_acquire) == forks) {
        *fn = p->fn;
        return 1;
    }
    pthread_mutex_lock(&p->lock);
    ok = ready_locked(p, forks);
    *fn = p->fn;
    pthread_mutex_unlock(&p->lock);
    return ok;
}

int hf_p11_session_get(struct hf_p11 *p, CK_SLOT_ID slot, CK_SESSION_HANDLE *session)
{
    CK_FUNCTION_LIST *fn;
    CK_RV rv;

    if (!hf_p11_ready(p, &fn)) return 0;
    pthread_mutex_lock(&p->lock);
    for (size_t i = p->npool; i-- > 0;) {
        if (p->pool[i].slot == slot) {
            *session = p->pool[i].session;
            p->pool[i] = p->pool[--p->npool];
            pthread_mutex_unlock(&p->lock);
            return 1;
        }
    }
    pthread_mutex_unlock(&p->lock);
    rv = fn->C_OpenSession(slot, CKF_SERIAL_SESSION, NULL, NULL, session);
    if (rv != CKR_OK) {
        RAISE_CKR(p, "C_OpenSession", rv);
        return 0;
    }
    return 1;
}

void hf_p11_session_put(struct hf_p11 *p, CK_SLOT_ID slot, CK_SESSION_HANDLE session, bool reusable)
{
    struct pooled *grown;

    if (reusable) {
        pthread_mutex_lock(&p->lock);
        if (p->npool == p->pool_cap) {
            size_t cap = p->pool_cap ? p->pool_cap * 2 : 8;
            grown = cap > p->pool_cap ? OPENSSL_realloc(p->pool, cap * sizeof(*grown)) : NULL;
            if (grown != NULL) {
                p->pool = grown;
                p->pool_cap = cap;
            }
        }
        if (p->npool < p->pool_cap) {
            p->pool[p->npool].slot = slot;
            p->pool[p->npool++].session = session;
            pthread_mutex_unlock(&p->lock);
            return;
        }
        pthread_mutex_unlock(&p->lock);
    }
    /* Keeper sessions hold the login, so closing this one never logs the token out. */
    p->fn->C_CloseSession(session);
}

/* ---- PINs --------------------------------------------------------------------------------------
 */

/* Reads the first line of path (a PIN file) into buf. 1 or 0 (error raised). */
static int pin_read_file(struct hf_p11 *p, const char *path, char *buf, size_t cap, size_t *len)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;
    int ok = 0;

    if (f == NULL) {
        HF_RAISE_DATA(p->prov, HF_R_LOGIN_REQUIRED, "cannot open PIN file %s: %s", path,
                      strerror(errno));
        return 0;
    }
    if (fgets(buf, (int)cap, f) == NULL) {
        HF_RAISE_DATA(p->prov, HF_R_LOGIN_REQUIRED, "PIN file %s is empty", path);
        goto done;
    }
    n = strcspn(buf, "\r\n");
    buf[n] = '\0';
    *len = n;
    ok = 1;
done:
    fclose(f);
    return ok;
}

/* The PIN to offer, from the first source that has one. 1: buf holds *len bytes; 0: error
 * raised; -1: no source. */
static int pin_obtain(struct hf_p11 *p, const char *uri_pin, OSSL_PASSPHRASE_CALLBACK *cb,
                      void *cbarg, const CK_TOKEN_INFO *ti, char *buf, size_t cap, size_t *len)
{
    const char *spec = uri_pin != NULL ? uri_pin : p->pin_spec;
    char info[80];
    size_t label_len;

    if (uri_pin != NULL ||
        (spec != NULL && strncmp(spec, "file:", 5) != 0 && strncmp(spec, "env:", 4) != 0)) {
        *len = strlen(spec);
        if (*len >= cap) goto too_long;
        memcpy(buf, spec, *len + 1);
        return 1;
    }
    if (spec != NULL && strncmp(spec, "file:", 5) == 0)
        return pin_read_file(p, spec + 5, buf, cap, len);
    if (spec != NULL) {
        const char *v = getenv(spec + 4);
        if (v == NULL) {
            HF_RAISE_DATA(p->prov, HF_R_LOGIN_REQUIRED, "PIN variable %s is not set", spec + 4);
            return 0;
        }
        *len = strlen(v);
        if (*len >= cap) goto too_long;
        memcpy(buf, v, *len + 1);
        return 1;
    }
    if (cb != NULL) {
        OSSL_PARAM params[2];

        for (label_len = sizeof(ti->label); label_len > 0 && ti->label[label_len - 1] == ' ';)
            label_len--;
        snprintf(info, sizeof(info), "PKCS#11 token \"%.*s\" (user PIN)", (int)label_len,
                 (const char *)ti->label);
        params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PASSPHRASE_PARAM_INFO, info, 0);
        params[1] = OSSL_PARAM_construct_end();
        /* A callback that cannot ask (no terminal, no -passin) is "no PIN", not an error. */
        if (!cb(buf, cap - 1, len, params, cbarg) || *len >= cap) return -1;
        buf[*len] = '\0';
        return 1;
    }
    return -1;
too_long:
    HF_RAISE_DATA(p->prov, HF_R_LOGIN_REQUIRED, "PIN longer than %d bytes", PIN_MAX - 1);
    return 0;
}

int hf_p11_login(struct hf_p11 *p, CK_SLOT_ID slot, const char *uri_pin,
                 OSSL_PASSPHRASE_CALLBACK *cb, void *cbarg)
{
    CK_FUNCTION_LIST *fn;
    CK_TOKEN_INFO ti;
    CK_SESSION_INFO si;
    CK_SESSION_HANDLE keeper = CK_INVALID_HANDLE;
    struct slot_state *st;
    char pin[PIN_MAX];
    size_t pin_len = 0;
    bool protected_path;
    CK_RV rv;
    int r = 0, got;

    if (!hf_p11_ready(p, &fn)) return 0;
    pthread_mutex_lock(&p->login_lock);
    pthread_mutex_lock(&p->lock);
    st = slot_state(p, slot);
    r = st != NULL && st->logged_in;
    pthread_mutex_unlock(&p->lock);
    if (st == NULL) HF_RAISE_DATA(p->prov, HF_R_LOGIN_FAILED, "out of memory");
    if (st == NULL || r == 1) goto done;
    if (memo_login_failed(p->dl, slot)) {
        HF_RAISE(p->prov, HF_R_LOGIN_NOT_RETRIED);
        goto done;
    }

    rv = fn->C_GetTokenInfo(slot, &ti);
    if (rv != CKR_OK) {
        RAISE_CKR(p, "C_GetTokenInfo", rv);
        goto done;
    }
    if (!(ti.flags & CKF_LOGIN_REQUIRED)) {
        pthread_mutex_lock(&p->lock);
        if ((st = slot_state(p, slot)) != NULL) st->logged_in = true;
        pthread_mutex_unlock(&p->lock);
        r = 1;
        goto done;
    }
    if (ti.flags & CKF_USER_PIN_LOCKED) {
        HF_RAISE_DATA(p->prov, HF_R_LOGIN_FAILED, "the token's user PIN is locked");
        goto done;
    }
    rv = fn->C_OpenSession(slot, CKF_SERIAL_SESSION, NULL, NULL, &keeper);
    if (rv != CKR_OK) {
        RAISE_CKR(p, "C_OpenSession", rv);
        goto done;
    }
    /* Someone else in the process (the application, another instance) may have logged in:
     * then no PIN is needed, and none is offered. */
    if (fn->C_GetSessionInfo(keeper, &si) == CKR_OK &&
        (si.state == CKS_RO_USER_FUNCTIONS || si.state == CKS_RW_USER_FUNCTIONS)) {
        rv = CKR_USER_ALREADY_LOGGED_IN;
        got = -1;
        goto logged_in;
    }
    protected_path = (ti.flags & CKF_PROTECTED_AUTHENTICATION_PATH) != 0;
    got = pin_obtain(p, uri_pin, cb, cbarg, &ti, pin, sizeof(pin), &pin_len);
    if (got == 0 || (got < 0 && !protected_path)) {
        fn->C_CloseSession(keeper);
        r = got < 0 ? -1 : 0;
        goto done;
    }
    /* Protected authentication path without a PIN: the reader's keypad asks (NULL PIN). */
    rv = fn->C_Login(keeper, CKU_USER, got < 0 ? NULL : (CK_UTF8CHAR_PTR)pin,
                     got < 0 ? 0 : (CK_ULONG)pin_len);
    if (rv != CKR_OK && rv != CKR_USER_ALREADY_LOGGED_IN) {
        char buf[32];
        fn->C_CloseSession(keeper);
        if (ckr_is_pin_refusal(rv)) {
            memo_fail(p->dl, slot);
            HF_RAISE_DATA(p->prov, HF_R_LOGIN_FAILED, "C_Login: %s", hf_ckr_name(rv, buf));
        } else {
            RAISE_CKR(p, "C_Login", rv);
        }
        goto done;
    }
    /* Keep the PIN for logging in again after a fork, but only one the token checked: with
     * CKR_USER_ALREADY_LOGGED_IN (someone else in the process logged in) it was never tried,
     * and offering an unchecked PIN later could count toward locking the token. */
    if (got > 0 && rv == CKR_OK) memo_keep_pin(p->dl, slot, pin, pin_len);
logged_in:
    pthread_mutex_lock(&p->lock);
    if ((st = slot_state(p, slot)) != NULL) {
        st->logged_in = true;
        st->has_keeper = true;
        st->keeper = keeper;
    }
    pthread_mutex_unlock(&p->lock);
    r = 1;
done:
    OPENSSL_cleanse(pin, sizeof(pin));
    pthread_mutex_unlock(&p->login_lock);
    return r;
}

int hf_p11_context_login(struct hf_p11 *p, CK_SLOT_ID slot, CK_SESSION_HANDLE session)
{
    char pin[PIN_MAX];
    size_t pin_len = 0;
    char buf[32];
    CK_RV rv;
    int ok = 0;

    if (memo_login_failed(p->dl, slot)) {
        HF_RAISE(p->prov, HF_R_LOGIN_NOT_RETRIED);
        goto done;
    }
    if (!memo_pin(p->dl, slot, pin, sizeof(pin), &pin_len) &&
        pin_obtain(p, NULL, NULL, NULL, NULL, pin, sizeof(pin), &pin_len) != 1) {
        HF_RAISE_DATA(p->prov, HF_R_LOGIN_REQUIRED, "the key needs its PIN for each use");
        goto done;
    }
    rv = p->fn->C_Login(session, CKU_CONTEXT_SPECIFIC, (CK_UTF8CHAR_PTR)pin, (CK_ULONG)pin_len);
    if (rv != CKR_OK) {
        if (ckr_is_pin_refusal(rv)) memo_fail(p->dl, slot);
        HF_RAISE_DATA(p->prov, HF_R_LOGIN_FAILED, "C_Login (context specific): %s",
                      hf_ckr_name(rv, buf));
        goto done;
    }
    ok = 1;
done:
    OPENSSL_cleanse(pin, sizeof(pin));
    return ok;
}

/* ---- objects -----------------------------------------------------------------------------------
 */

int hf_p11_find(struct hf_p11 *p, CK_SESSION_HANDLE session, CK_ATTRIBUTE *tmpl, CK_ULONG n,
                CK_OBJECT_HANDLE *out, CK_ULONG max, CK_ULONG *count)
{
    CK_FUNCTION_LIST *fn = p->fn;
    CK_ULONG got = 0, k;
    CK_RV rv;

    *count = 0;
    rv = fn->C_FindObjectsInit(session, tmpl, n);
    if (rv != CKR_OK) {
        RAISE_CKR(p, "C_FindObjectsInit", rv);
        return 0;
    }
    while (got < max) {
        rv = fn->C_FindObjects(session, out + got, max - got, &k);
        if (rv != CKR_OK || k == 0) break;
        got += k;
    }
    fn->C_FindObjectsFinal(session);
    if (rv != CKR_OK) {
        RAISE_CKR(p, "C_FindObjects", rv);
        return 0;
    }
    *count = got;
    return 1;
}

int hf_p11_attr_get(struct hf_p11 *p, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE obj,
                    CK_ATTRIBUTE_TYPE type, unsigned char **val, size_t *len)
{
    CK_ATTRIBUTE a = {type, NULL, 0};
    CK_RV rv;

    *val = NULL;
    *len = 0;
    rv = p->fn->C_GetAttributeValue(session, obj, &a, 1);
    if (rv == CKR_ATTRIBUTE_TYPE_INVALID || rv == CKR_ATTRIBUTE_SENSITIVE ||
        (rv == CKR_OK && a.ulValueLen == CK_UNAVAILABLE_INFORMATION))
        return 0;
    if (rv != CKR_OK) {
        RAISE_CKR(p, "C_GetAttributeValue", rv);
        return -1;
    }
    a.pValue = OPENSSL_malloc(a.ulValueLen ? a.ulValueLen : 1);
    if (a.pValue == NULL) {
        HF_RAISE_DATA(p->prov, HF_R_PKCS11_ERROR, "out of memory");
        return -1;
    }
    rv = p->fn->C_GetAttributeValue(session, obj, &a, 1);
    if (rv != CKR_OK) {
        OPENSSL_free(a.pValue);
        RAISE_CKR(p, "C_GetAttributeValue", rv);
        return -1;
    }
    *val = a.pValue;
    *len = a.ulValueLen;
    return 1;
}
