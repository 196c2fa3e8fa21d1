#include "hf-build.h"

#include "file.h"
#include "hsm.h"
#include "hsm-providers.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "crypto.h"
#include "log.h"
#include "secmem.h"

/* Sessions per token. SoftHSMv2 gets slower, not faster, with more threads inside it (see
 * ARCHITECTURE.md), and wrap/unwrap happen once per key version, so a few are plenty. */
#define HSM_SESSIONS_MAX 4
/* Lock-file descriptors kept between holds: more holders than this open and close their own. */
#define HSM_LOCK_SPARES 64

/* Lookups of a token that seems missing or broken, with a reload and a pause (20 ms, then 40)
 * between them. */
#define HSM_TOKEN_TRIES 3

/* ---- loaded modules (process-wide) ---------------------------------------------------------
 * A module may be opened by several struct hf_hsm (the CLI opens, closes and reopens; tests open
 * two). C_Initialize/C_Finalize are per process, so the first user initialises and the last one
 * finalises. Only open and close take modules_lock: never an operation. */

struct login {
    struct login *next;
    CK_SLOT_ID slot;
    unsigned char pin_digest[32];
};

struct module {
    struct module *next;
    void *dl;
    CK_FUNCTION_LIST_PTR f;
    unsigned refs;
    bool owns_init; /* our C_Initialize succeeded: ours to finalise */
    bool forked;    /* inherited across fork(): must be initialised again before use */
    /* Tokens we logged in to: login is per application, so a second C_Login answers
     * CKR_USER_ALREADY_LOGGED_IN without looking at the PIN; this lets us still refuse a
     * wrong one. */
    struct login *logins;
    struct hf_hsm_providers held; /* until after its C_Finalize (hsm-providers.c) */
};

static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
static struct module *modules; /* guarded by modules_lock */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void modules_prepare(void)
{
    pthread_mutex_lock(&modules_lock);
}

static void modules_parent(void)
{
    pthread_mutex_unlock(&modules_lock);
}

static void modules_child(void)
{
    /* PKCS#11 2.40 section 6.7.7: the child must C_Initialize again before any other call. */
    for (struct module *m = modules; m != NULL; m = m->next)
        m->forked = true;
    pthread_mutex_unlock(&modules_lock);
}

static void atfork_register(void)
{
    pthread_atfork(modules_prepare, modules_parent, modules_child);
}

static void logins_free(struct login *l)
{
    while (l != NULL) {
        struct login *next = l->next;
        OPENSSL_cleanse(l, sizeof(*l));
        free(l);
        l = next;
    }
}

/* C_Initialize for a new or inherited entry. Caller holds modules_lock. */
static CK_RV module_initialize(struct module *m)
{
    CK_C_INITIALIZE_ARGS args = {.flags = CKF_OS_LOCKING_OK};
    CK_RV rv = m->f->C_Initialize(&args);

    if (rv != CKR_OK && rv != CKR_CRYPTOKI_ALREADY_INITIALIZED) return rv;
    /* Already initialised by someone else in this process (the host application): share it,
     * and leave finalising to them. */
    m->owns_init = rv == CKR_OK;
    m->forked = false;
    m->refs = 0;
    logins_free(m->logins);
    m->logins = NULL;
    return CKR_OK;
}

/* The entry of an already loaded module, or NULL. Caller holds modules_lock. */
static struct module *module_find(void *dl)
{
    struct module *m = modules;

    while (m != NULL && m->dl != dl)
        m = m->next;
    return m;
}

/* A new entry for dl: C_GetFunctionList and C_Initialize. Caller holds modules_lock. */
static CK_RV module_load(void *dl, struct module **out)
{
    CK_C_GetFunctionList get_list = (CK_C_GetFunctionList)dlsym(dl, "C_GetFunctionList");
    struct module *m = NULL;
    CK_RV rv = CKR_GENERAL_ERROR;

    if (get_list == NULL || (m = calloc(1, sizeof(*m))) == NULL) goto done;
    m->dl = dl;
    if ((rv = get_list(&m->f)) != CKR_OK || m->f == NULL) goto done;
    rv = module_initialize(m);
done:
    if (rv == CKR_OK && m->f != NULL) {
        hf_hsm_providers_hold(&m->held);
        m->next = modules;
        modules = m;
        *out = m;
    } else {
        free(m);
        rv = rv == CKR_OK ? CKR_GENERAL_ERROR : rv;
    }
    return rv;
}

static CK_RV module_get(const char *path, struct module **out)
{
    struct module *m;
    void *dl;
    CK_RV rv = CKR_OK;

    pthread_once(&atfork_once, atfork_register);
    /* Never through the p11-kit proxy: it would load Holdfast itself (ARCHITECTURE.md).
     * RTLD_NODELETE: a backend's exit-time teardown (SoftHSMv2's static destructors) is then
     * registered once, at its first load, before the module's exit handler (module-exit.c),
     * which therefore always runs first, whatever the host's C_Initialize/C_Finalize history. */
    if ((dl = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) == NULL) {
        hf_log_error("hsm: cannot load %s: %s", path, dlerror());
        return CKR_GENERAL_ERROR;
    }
    pthread_mutex_lock(&modules_lock);
    if ((m = module_find(dl)) != NULL) {
        dlclose(dl); /* the entry holds one handle already */
        dl = NULL;
        if (m->forked) rv = module_initialize(m);
    } else {
        rv = module_load(dl, &m);
    }
    if (rv == CKR_OK) {
        m->refs++;
        *out = m;
    }
    pthread_mutex_unlock(&modules_lock);
    if (rv != CKR_OK) {
        hf_log_error("hsm: %s did not initialise (0x%lx)", path, (unsigned long)rv);
        if (dl != NULL) dlclose(dl);
    }
    return rv;
}

static void module_put(struct module *m)
{
    struct module **link;

    if (m == NULL) return;
    pthread_mutex_lock(&modules_lock);
    if (--m->refs == 0) {
        for (link = &modules; *link != m; link = &(*link)->next)
            ;
        *link = m->next;
        if (m->owns_init) m->f->C_Finalize(NULL);
        hf_hsm_providers_release(&m->held);
        dlclose(m->dl);
        logins_free(m->logins);
        free(m);
    }
    pthread_mutex_unlock(&modules_lock);
}

static void pin_digest(const char *pin, size_t len, unsigned char out[32])
{
    size_t n = 32;

    if (hf_digest("SHA256", (const unsigned char *)pin, len, out, &n) != CKR_OK) memset(out, 0, 32);
}

/* Records a verified PIN, or checks one the module did not verify. */
static CK_RV module_login_note(struct module *m, CK_SLOT_ID slot, const char *pin, size_t len,
                               bool verified)
{
    unsigned char digest[32];
    struct login *l;
    CK_RV rv = CKR_OK;

    pin_digest(pin, len, digest);
    pthread_mutex_lock(&modules_lock);
    for (l = m->logins; l != NULL && l->slot != slot; l = l->next)
        ;
    if (verified) {
        if (l == NULL && (l = calloc(1, sizeof(*l))) != NULL) {
            l->slot = slot;
            l->next = m->logins;
            m->logins = l;
        }
        if (l != NULL) memcpy(l->pin_digest, digest, 32);
    } else if (l != NULL && CRYPTO_memcmp(l->pin_digest, digest, 32) != 0) {
        rv = CKR_PIN_INCORRECT;
    }
    pthread_mutex_unlock(&modules_lock);
    OPENSSL_cleanse(digest, sizeof(digest));
    return rv;
}

/* Drops our use of the module and loads it again after a pause. SoftHSMv2 reads a token's files
 * at C_Initialize and, once it has read one half-written, keeps that token invalid until
 * C_Finalize. module_put finalises only a module we initialised and nobody else in the process
 * uses; otherwise the pause and the slot rescan of the next lookup are all we can do. On failure
 * *m is NULL. */
static CK_RV module_reload(const char *path, struct module **m, int attempt)
{
    struct timespec pause = {0, 20L * 1000 * 1000 * attempt};

    module_put(*m);
    *m = NULL;
    nanosleep(&pause, NULL);
    return module_get(path, m);
}

/* ---- the token lock (between processes) -----------------------------------------------------
 * SoftHSMv2 2.6's file store rewrites token.object in place (truncate, then write) on every
 * C_Login, to reset the PIN-count flags, and C_Initialize and most calls read it again. A process
 * reading it in that window sees no token (CKR_TOKEN_NOT_PRESENT: `holdfast init` would create a
 * second one) or a half-written one, which it then keeps as invalid ("Token integrity check
 * failed", CKR_GENERAL_ERROR): SoftHSMv2 issue #757; measured, 12-17 of 40 CLI encrypt|decrypt
 * pipes failed. So processes sharing a state directory take a flock on one file there: LOCK_EX
 * to load the module, log in or create the token, LOCK_SH around every other backend call.
 * An HSM of another vendor needs none of it and loses nothing that shows: LOCK_SH is four system
 * calls (measured on SoftHSMv2: 58 -> 62 us per unwrap; open+close 1.2 ms either way), taken
 * only on wrap and unwrap, which are rare (the local source caches what it unwraps: once per key
 * version per process), and contended only while another process opens.
 *
 * Each concurrent hold has a descriptor of its own: flock locks belong to the open file
 * description, so threads sharing one descriptor would share one lock (the first LOCK_UN would
 * end the others' holds), and holds on different descriptors exclude each other within a process
 * too. run_once keeps its descriptors between holds (lock_spares); the rarer exclusive holds
 * open one each time.
 *
 * fork(): a child inherits any descriptor a parent thread holds at that moment, and with it the
 * description and its lock. A LOCK_UN by the child would end the parent's hold, so the child
 * never locks or unlocks one (hf_hsm_abandon only closes the spares, unlocked); closing is safe,
 * as a flock lock ends only with the last descriptor of its description. The
 * parent always unlocks explicitly before close() for the same reason: by close() alone the
 * lock would live on in the child's copy until the child exits (both verified on Linux 6).
 * O_CLOEXEC keeps the descriptor out of exec'd programs. */

static bool rv_is_token_unreadable(CK_RV rv)
{
    return rv == CKR_TOKEN_NOT_PRESENT || rv == CKR_GENERAL_ERROR || rv == CKR_DEVICE_ERROR;
}

/* ---- tokens -------------------------------------------------------------------------------- */

static bool label_pad(const char *label, unsigned char out[32])
{
    size_t n = strlen(label);

    if (n == 0 || n > 32) return false;
    memset(out, ' ', 32);
    memcpy(out, label, n);
    return true;
}

/* The slot holding the token labelled label (want_free false), or an uninitialised token
 * (want_free true). CKR_TOKEN_NOT_PRESENT when none. */
static CK_RV token_find(CK_FUNCTION_LIST_PTR f, const unsigned char label[32], bool want_free,
                        CK_SLOT_ID *slot)
{
    CK_SLOT_ID *slots = NULL;
    CK_ULONG n = 0;
    CK_TOKEN_INFO info;
    CK_RV rv;

    /* Sized first: SoftHSMv2 also rescans (and offers a fresh empty slot) only then. */
    if ((rv = f->C_GetSlotList(CK_TRUE, NULL, &n)) != CKR_OK) return rv;
    if (n == 0) return CKR_TOKEN_NOT_PRESENT;
    if ((slots = calloc(n, sizeof(*slots))) == NULL) return CKR_HOST_MEMORY;
    if ((rv = f->C_GetSlotList(CK_TRUE, slots, &n)) != CKR_OK) goto done;
    rv = CKR_TOKEN_NOT_PRESENT;
    for (CK_ULONG i = 0; i < n; i++) {
        if (f->C_GetTokenInfo(slots[i], &info) != CKR_OK) continue;
        bool is_free = !(info.flags & CKF_TOKEN_INITIALIZED);
        if (want_free ? is_free : (!is_free && memcmp(info.label, label, 32) == 0)) {
            *slot = slots[i];
            rv = CKR_OK;
            break;
        }
    }
done:
    free(slots);
    return rv;
}

static CK_RV token_init(CK_FUNCTION_LIST_PTR f, const unsigned char label[32], const char *so_pin,
                        const char *user_pin)
{
    CK_SESSION_HANDLE s = CK_INVALID_HANDLE;
    CK_SLOT_ID slot;
    CK_RV rv;

    if ((rv = token_find(f, label, true, &slot)) != CKR_OK) return rv;
    rv = f->C_InitToken(slot, (CK_UTF8CHAR_PTR)so_pin, strlen(so_pin), (CK_UTF8CHAR_PTR)label);
    if (rv != CKR_OK) return rv;
    /* SoftHSMv2 renumbers a slot once its token is initialised: look it up again. */
    if ((rv = token_find(f, label, false, &slot)) != CKR_OK) return rv;
    if ((rv = f->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &s)) !=
        CKR_OK)
        return rv;
    rv = f->C_Login(s, CKU_SO, (CK_UTF8CHAR_PTR)so_pin, strlen(so_pin));
    if (rv == CKR_OK) {
        rv = f->C_InitPIN(s, (CK_UTF8CHAR_PTR)user_pin, strlen(user_pin));
        f->C_Logout(s);
    }
    f->C_CloseSession(s);
    return rv;
}

CK_RV hf_hsm_token_ensure(const char *module_path, const char *lock_path, const char *token_label,
                          const char *so_pin, const char *user_pin)
{
    unsigned char label[32];
    struct module *m = NULL;
    CK_SLOT_ID slot;
    int fd = -1;
    CK_RV rv;

    if (module_path == NULL || token_label == NULL || so_pin == NULL || user_pin == NULL ||
        !label_pad(token_label, label))
        return CKR_ARGUMENTS_BAD;
    /* Exclusive from before the module reads the token directory until the token exists: two
     * processes that both looked first would each create one. */
    if ((rv = hf_lockfile_take(lock_path, LOCK_EX, &fd)) != CKR_OK) return rv;
    rv = module_get(module_path, &m);
    /* A token only half readable (a process not holding our lock logged in) is not a missing
     * one: look again before creating a second. */
    for (int attempt = 1; rv == CKR_OK; attempt++) {
        rv = token_find(m->f, label, false, &slot);
        if (!rv_is_token_unreadable(rv) || attempt == HSM_TOKEN_TRIES) break;
        rv = module_reload(module_path, &m, attempt);
    }
    if (rv == CKR_TOKEN_NOT_PRESENT) rv = token_init(m->f, label, so_pin, user_pin);
    if (rv != CKR_OK) hf_log_error("hsm: cannot create token %s (0x%lx)", token_label, rv);
    hf_lockfile_drop(fd);
    module_put(m);
    return rv;
}

/* ---- struct hf_hsm: a session pool and the KEK handle cache -------------------------------- */

/* A cached object handle: labels are unique per class only (a key pair's halves share one). */
struct handle {
    struct handle *next;
    CK_OBJECT_CLASS cls;
    char *label;
    CK_OBJECT_HANDLE handle;
};

struct hf_hsm {
    struct module *mod;
    CK_FUNCTION_LIST_PTR f;
    CK_SLOT_ID slot;
    char *lock_path; /* NULL: no lock between processes */
    char *pin;       /* hf_secmem: new sessions may need to log in again */
    size_t pin_len;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t idle_cond;
    CK_SESSION_HANDLE *idle; /* sessions_max of them */
    size_t n_idle, n_open, sessions_max;
    /* SoftHSMv2 2.6's C_FindObjects rereads every object of the token: handles are found once
     * per (class, label) and kept (ARCHITECTURE.md measures the cost). */
    struct handle *handles;
    /* Lock-file descriptors between holds (run_once): opening one per call was 15% of a pool
     * member's encrypt on SoftHSMv2. Each is its own open file description, so each excludes the
     * others as the token lock requires. */
    int lock_spares[HSM_LOCK_SPARES];
    size_t n_lock_spares;
};

static CK_RV session_login(struct hf_hsm *hsm, CK_SESSION_HANDLE s)
{
    CK_RV rv = hsm->f->C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)hsm->pin, hsm->pin_len);

    if (rv == CKR_OK || rv == CKR_USER_ALREADY_LOGGED_IN)
        return module_login_note(hsm->mod, hsm->slot, hsm->pin, hsm->pin_len, rv == CKR_OK);
    return rv;
}

static CK_RV session_open(struct hf_hsm *hsm, CK_SESSION_HANDLE *out)
{
    CK_RV rv =
        hsm->f->C_OpenSession(hsm->slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, out);

    if (rv != CKR_OK) return rv;
    if ((rv = session_login(hsm, *out)) != CKR_OK) hsm->f->C_CloseSession(*out);
    return rv;
}

/* session_open for the pool after hf_hsm_open: exclusive, because its C_Login is a real one (and
 * rewrites SoftHSMv2's token file) whenever our last session had closed, which logs us out. */
static CK_RV session_add(struct hf_hsm *hsm, CK_SESSION_HANDLE *out)
{
    int fd;
    CK_RV rv = hf_lockfile_take(hsm->lock_path, LOCK_EX, &fd);

    if (rv == CKR_OK) rv = session_open(hsm, out);
    hf_lockfile_drop(fd);
    return rv;
}

static CK_RV session_relogin(struct hf_hsm *hsm, CK_SESSION_HANDLE s)
{
    int fd;
    CK_RV rv = hf_lockfile_take(hsm->lock_path, LOCK_EX, &fd);

    if (rv == CKR_OK) rv = session_login(hsm, s);
    hf_lockfile_drop(fd);
    return rv;
}

/* A logged-in session for one operation: idle, new while under the limit, or waited for. Takes
 * the token lock itself, so it must be called without it. */
static CK_RV session_take(struct hf_hsm *hsm, CK_SESSION_HANDLE *out)
{
    CK_RV rv;

    pthread_mutex_lock(&hsm->lock);
    while (hsm->n_idle == 0 && hsm->n_open >= hsm->sessions_max)
        pthread_cond_wait(&hsm->idle_cond, &hsm->lock);
    if (hsm->n_idle > 0) {
        *out = hsm->idle[--hsm->n_idle];
        pthread_mutex_unlock(&hsm->lock);
        return CKR_OK;
    }
    hsm->n_open++; /* reserved; opened outside the lock */
    pthread_mutex_unlock(&hsm->lock);

    if ((rv = session_add(hsm, out)) != CKR_OK) {
        pthread_mutex_lock(&hsm->lock);
        hsm->n_open--;
        pthread_cond_signal(&hsm->idle_cond);
        pthread_mutex_unlock(&hsm->lock);
    }
    return rv;
}

static bool rv_is_session_lost(CK_RV rv)
{
    /* CKR_OPERATION_ACTIVE: an operation some call could not end is still on the session. */
    return rv == CKR_SESSION_HANDLE_INVALID || rv == CKR_SESSION_CLOSED || rv == CKR_DEVICE_ERROR ||
           rv == CKR_DEVICE_REMOVED || rv == CKR_TOKEN_NOT_PRESENT || rv == CKR_OPERATION_ACTIVE;
}

/* Back to the pool, or closed when the last operation says it is broken. */
static void handles_drop_all(struct hf_hsm *hsm);

static void session_give(struct hf_hsm *hsm, CK_SESSION_HANDLE s, CK_RV last)
{
    bool lost = rv_is_session_lost(last);

    if (lost) hsm->f->C_CloseSession(s);
    /* The backend itself may be gone (a network HSM's server): when it comes back, its handles
     * may name other objects, and a cached one could encrypt under another key. */
    if (lost && last != CKR_OPERATION_ACTIVE) handles_drop_all(hsm);
    pthread_mutex_lock(&hsm->lock);
    if (lost)
        hsm->n_open--;
    else
        hsm->idle[hsm->n_idle++] = s;
    pthread_cond_signal(&hsm->idle_cond);
    pthread_mutex_unlock(&hsm->lock);
}

static CK_RV object_search(struct hf_hsm *hsm, CK_SESSION_HANDLE s, CK_OBJECT_CLASS cls,
                           const char *label, CK_OBJECT_HANDLE *handle)
{
    CK_BBOOL yes = CK_TRUE;
    /* By class and label alone: the root KEK is CKK_AES, the MAC keys CKK_GENERIC_SECRET, and
     * each has a label of its own. */
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_TOKEN, &yes, sizeof(yes)},
        {CKA_LABEL, (void *)label, strlen(label)},
    };
    CK_ULONG n = 0;
    CK_RV rv, final;

    *handle = CK_INVALID_HANDLE;
    if ((rv = hsm->f->C_FindObjectsInit(s, tmpl, 3)) != CKR_OK) return rv;
    rv = hsm->f->C_FindObjects(s, handle, 1, &n);
    /* A search that did not end leaves the session unusable (CKR_OPERATION_ACTIVE to every
     * later init): its failure is the call's, so the session is dropped, not given back. */
    final = hsm->f->C_FindObjectsFinal(s);
    if (rv == CKR_OK) rv = final;
    if (rv == CKR_OK && n == 0) *handle = CK_INVALID_HANDLE;
    return rv;
}

static CK_OBJECT_HANDLE handle_cached(struct hf_hsm *hsm, CK_OBJECT_CLASS cls, const char *label)
{
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;

    pthread_mutex_lock(&hsm->lock);
    for (struct handle *k = hsm->handles; k != NULL; k = k->next)
        if (k->cls == cls && strcmp(k->label, label) == 0) h = k->handle;
    pthread_mutex_unlock(&hsm->lock);
    return h;
}

static void handle_remember(struct hf_hsm *hsm, CK_OBJECT_CLASS cls, const char *label,
                            CK_OBJECT_HANDLE h)
{
    struct handle *k = calloc(1, sizeof(*k));

    if (k == NULL || (k->label = strdup(label)) == NULL) {
        free(k);
        return; /* only a cache */
    }
    k->cls = cls;
    k->handle = h;
    pthread_mutex_lock(&hsm->lock);
    k->next = hsm->handles;
    hsm->handles = k;
    pthread_mutex_unlock(&hsm->lock);
}

static void handles_free(struct handle *list)
{
    while (list != NULL) {
        struct handle *next = list->next;
        free(list->label);
        free(list);
        list = next;
    }
}

/* After the token said the handle is stale (the object was deleted, or re-created elsewhere).
 * Every entry goes: two threads that both searched may have left two. */
static void handle_forget(struct hf_hsm *hsm, CK_OBJECT_CLASS cls, const char *label)
{
    struct handle **link, *gone = NULL;

    pthread_mutex_lock(&hsm->lock);
    for (link = &hsm->handles; *link != NULL;) {
        struct handle *k = *link;
        if (k->cls == cls && strcmp(k->label, label) == 0) {
            *link = k->next;
            k->next = gone;
            gone = k;
        } else {
            link = &k->next;
        }
    }
    pthread_mutex_unlock(&hsm->lock);
    handles_free(gone);
}

/* The object's handle, CK_INVALID_HANDLE when the token has none. Caller holds the token
 * lock. */
static CK_RV handle_get(struct hf_hsm *hsm, CK_SESSION_HANDLE s, CK_OBJECT_CLASS cls,
                        const char *label, CK_OBJECT_HANDLE *h)
{
    CK_RV rv;

    if ((*h = handle_cached(hsm, cls, label)) != CK_INVALID_HANDLE) return CKR_OK;
    if ((rv = object_search(hsm, s, cls, label, h)) != CKR_OK) return rv;
    /* Two threads may both search: a duplicate entry holds the same handle and is harmless. */
    if (*h != CK_INVALID_HANDLE) handle_remember(hsm, cls, label, *h);
    return CKR_OK;
}

CK_RV hf_hsm_object_find(struct hf_hsm *hsm, CK_SESSION_HANDLE s, CK_OBJECT_CLASS cls,
                         const char *label, CK_OBJECT_HANDLE *h)
{
    if (h != NULL) *h = CK_INVALID_HANDLE;
    if (hsm == NULL || label == NULL || *label == '\0' || h == NULL) return CKR_ARGUMENTS_BAD;
    return handle_get(hsm, s, cls, label, h);
}

static void handles_drop_all(struct hf_hsm *hsm)
{
    struct handle *gone;

    pthread_mutex_lock(&hsm->lock);
    gone = hsm->handles;
    hsm->handles = NULL;
    pthread_mutex_unlock(&hsm->lock);
    handles_free(gone);
}

void hf_hsm_objects_forget_all(struct hf_hsm *hsm)
{
    if (hsm != NULL) handles_drop_all(hsm);
}

void hf_hsm_object_forget(struct hf_hsm *hsm, CK_OBJECT_CLASS cls, const char *label)
{
    if (hsm == NULL || label == NULL) return;
    handle_forget(hsm, cls, label);
}

/* The KEK and MAC keys are secret keys. */
static CK_RV kek_handle(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *label,
                        CK_OBJECT_HANDLE *h)
{
    return handle_get(hsm, s, CKO_SECRET_KEY, label, h);
}

static bool rv_is_stale_kek(CK_RV rv)
{
    return rv == CKR_KEY_HANDLE_INVALID || rv == CKR_OBJECT_HANDLE_INVALID ||
           rv == CKR_WRAPPING_KEY_HANDLE_INVALID || rv == CKR_UNWRAPPING_KEY_HANDLE_INVALID;
}

/* Finds the token and logs one session in (so a wrong PIN shows at open rather than at first
 * use), reloading the module between tries while the token looks missing or broken. Caller
 * holds the token lock exclusively. */
static CK_RV hsm_login(struct hf_hsm *hsm, const char *module_path, const unsigned char label[32])
{
    CK_SESSION_HANDLE s;
    CK_RV rv;

    for (int attempt = 1;; attempt++) {
        rv = token_find(hsm->f, label, false, &hsm->slot);
        if (rv == CKR_OK) rv = session_open(hsm, &s);
        if (rv == CKR_OK) break;
        if (!rv_is_token_unreadable(rv) || attempt == HSM_TOKEN_TRIES) return rv;
        hf_log_debug("hsm: token unreadable (0x%lx), loading %s again", rv, module_path);
        if ((rv = module_reload(module_path, &hsm->mod, attempt)) != CKR_OK) return rv;
        hsm->f = hsm->mod->f;
    }
    hsm->idle[hsm->n_idle++] = s;
    hsm->n_open = 1;
    return CKR_OK;
}

static struct hf_hsm *hsm_new(const char *lock_path, const char *pin)
{
    struct hf_hsm *hsm = calloc(1, sizeof(*hsm));

    if (hsm == NULL) return NULL;
    hsm->pin_len = strlen(pin);
    hsm->pin = hf_secmem_alloc(hsm->pin_len + 1);
    hsm->lock_path = lock_path ? strdup(lock_path) : NULL;
    hsm->sessions_max = HSM_SESSIONS_MAX;
    hsm->idle = calloc(hsm->sessions_max, sizeof(*hsm->idle));
    if (hsm->pin == NULL || (lock_path != NULL && hsm->lock_path == NULL) || hsm->idle == NULL) {
        hf_secmem_free(hsm->pin, hsm->pin_len + 1);
        free(hsm->lock_path);
        free(hsm->idle);
        free(hsm);
        return NULL;
    }
    memcpy(hsm->pin, pin, hsm->pin_len);
    pthread_mutex_init(&hsm->lock, NULL);
    pthread_cond_init(&hsm->idle_cond, NULL);
    return hsm;
}

CK_RV hf_hsm_open(const char *module_path, const char *lock_path, const char *token_label,
                  const char *pin, struct hf_hsm **out)
{
    unsigned char label[32];
    struct hf_hsm *hsm = NULL;
    int fd = -1;
    CK_RV rv;

    if (module_path == NULL || token_label == NULL || pin == NULL || out == NULL ||
        !label_pad(token_label, label))
        return CKR_ARGUMENTS_BAD;
    *out = NULL;
    if ((hsm = hsm_new(lock_path, pin)) == NULL) return CKR_HOST_MEMORY;
    /* Exclusive across C_Initialize (which reads every token), the lookup and C_Login (which
     * rewrites the token file). */
    if ((rv = hf_lockfile_take(lock_path, LOCK_EX, &fd)) != CKR_OK) goto done;
    if ((rv = module_get(module_path, &hsm->mod)) != CKR_OK) goto done;
    hsm->f = hsm->mod->f;
    if ((rv = hsm_login(hsm, module_path, label)) == CKR_OK) *out = hsm;
done:
    hf_lockfile_drop(fd);
    if (rv != CKR_OK) hf_hsm_close(hsm);
    return rv;
}

static void hsm_free(struct hf_hsm *hsm)
{
    handles_free(hsm->handles);
    /* Closing never ends a hold: none is on a spare, and in a forked child (hf_hsm_abandon) the
     * parent's descriptors keep their descriptions. */
    for (size_t i = 0; i < hsm->n_lock_spares; i++)
        close(hsm->lock_spares[i]);
    hf_secmem_free(hsm->pin, hsm->pin_len + 1);
    free(hsm->lock_path);
    free(hsm->idle);
    free(hsm);
}

CK_RV hf_hsm_sessions_max_set(struct hf_hsm *hsm, size_t n)
{
    CK_SESSION_HANDLE *idle;

    if (hsm == NULL || n == 0) return CKR_ARGUMENTS_BAD;
    pthread_mutex_lock(&hsm->lock);
    /* Never below what is open already: those sessions come back to the idle list. */
    if (n < hsm->n_open) n = hsm->n_open;
    if ((idle = realloc(hsm->idle, n * sizeof(*idle))) == NULL) {
        pthread_mutex_unlock(&hsm->lock);
        return CKR_HOST_MEMORY;
    }
    hsm->idle = idle;
    hsm->sessions_max = n;
    pthread_cond_broadcast(&hsm->idle_cond);
    pthread_mutex_unlock(&hsm->lock);
    return CKR_OK;
}

void hf_hsm_close(struct hf_hsm *hsm)
{
    if (hsm == NULL) return;
    /* Our sessions only: C_CloseAllSessions would also end other users' sessions on the slot. */
    for (size_t i = 0; i < hsm->n_idle; i++)
        hsm->f->C_CloseSession(hsm->idle[i]);
    module_put(hsm->mod);
    pthread_cond_destroy(&hsm->idle_cond);
    pthread_mutex_destroy(&hsm->lock);
    hsm_free(hsm);
}

void hf_hsm_abandon(struct hf_hsm *hsm)
{
    /* The parent's sessions are not ours, and the lock may have been held by a thread that does
     * not exist in the child: free the memory and nothing else. The module entry stays, marked
     * forked, and is initialised again by the next hf_hsm_open. No token lock to release: none
     * is held between calls, and one a parent thread holds is the parent's (see the token
     * lock, above flock_take). */
    if (hsm == NULL) return;
    hsm_free(hsm);
}

/* ---- KEK ----------------------------------------------------------------------------------- */

typedef CK_RV (*key_generate_fn)(struct hf_hsm *, CK_SESSION_HANDLE, const char *,
                                 CK_OBJECT_HANDLE *);

static CK_RV kek_generate(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *label,
                          CK_OBJECT_HANDLE *h)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_ULONG len = 32;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_MECHANISM mech = {CKM_AES_KEY_GEN, NULL, 0};
    /* Wrap and unwrap only: a KEK that could decrypt would turn any wrapped blob into an
     * oracle for its plaintext. */
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},     {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_TOKEN, &yes, sizeof(yes)},
        {CKA_PRIVATE, &yes, sizeof(yes)},   {CKA_SENSITIVE, &yes, sizeof(yes)},
        {CKA_EXTRACTABLE, &no, sizeof(no)}, {CKA_WRAP, &yes, sizeof(yes)},
        {CKA_UNWRAP, &yes, sizeof(yes)},    {CKA_ENCRYPT, &no, sizeof(no)},
        {CKA_DECRYPT, &no, sizeof(no)},     {CKA_LABEL, (void *)label, strlen(label)},
    };

    return hsm->f->C_GenerateKey(s, &mech, tmpl, sizeof(tmpl) / sizeof(tmpl[0]), h);
}

/* A MAC key: HMAC-SHA-256 sign and verify only, never extractable, so whoever can write the
 * store or the audit log still cannot compute a MAC without the token. */
static CK_RV mac_key_generate(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *label,
                              CK_OBJECT_HANDLE *h)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_GENERIC_SECRET;
    CK_ULONG len = 32;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_MECHANISM mech = {CKM_GENERIC_SECRET_KEY_GEN, NULL, 0};
    CK_ATTRIBUTE tmpl[] = {
        {CKA_CLASS, &cls, sizeof(cls)},     {CKA_KEY_TYPE, &type, sizeof(type)},
        {CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_TOKEN, &yes, sizeof(yes)},
        {CKA_PRIVATE, &yes, sizeof(yes)},   {CKA_SENSITIVE, &yes, sizeof(yes)},
        {CKA_EXTRACTABLE, &no, sizeof(no)}, {CKA_SIGN, &yes, sizeof(yes)},
        {CKA_VERIFY, &yes, sizeof(yes)},    {CKA_WRAP, &no, sizeof(no)},
        {CKA_UNWRAP, &no, sizeof(no)},      {CKA_LABEL, (void *)label, strlen(label)},
    };

    return hsm->f->C_GenerateKey(s, &mech, tmpl, sizeof(tmpl) / sizeof(tmpl[0]), h);
}

/* The key's handle under the token lock; generated first (by generate, when not NULL) if the
 * token has none. Generating writes a token object and the token's generation file, so it locks
 * exclusively; it happens once, at init. */
static CK_RV kek_get(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *label,
                     key_generate_fn generate, CK_OBJECT_HANDLE *h)
{
    int fd;
    CK_RV rv = hf_lockfile_take(hsm->lock_path, generate != NULL ? LOCK_EX : LOCK_SH, &fd);

    *h = CK_INVALID_HANDLE;
    if (rv != CKR_OK) return rv;
    rv = kek_handle(hsm, s, label, h);
    if (rv == CKR_OK && generate != NULL && *h == CK_INVALID_HANDLE &&
        (rv = generate(hsm, s, label, h)) == CKR_OK)
        handle_remember(hsm, CKO_SECRET_KEY, label, *h);
    hf_lockfile_drop(fd);
    return rv;
}

static CK_RV key_ensure(struct hf_hsm *hsm, const char *label, key_generate_fn generate)
{
    CK_SESSION_HANDLE s;
    CK_OBJECT_HANDLE h;
    CK_RV rv;

    if (hsm == NULL || label == NULL || *label == '\0') return CKR_ARGUMENTS_BAD;
    if ((rv = session_take(hsm, &s)) != CKR_OK) return rv;
    rv = kek_get(hsm, s, label, generate, &h);
    session_give(hsm, s, rv);
    return rv;
}

CK_RV hf_hsm_kek_ensure(struct hf_hsm *hsm, const char *kek_label)
{
    return key_ensure(hsm, kek_label, kek_generate);
}

CK_RV hf_hsm_mac_key_ensure(struct hf_hsm *hsm, const char *mac_label)
{
    return key_ensure(hsm, mac_label, mac_key_generate);
}

bool hf_hsm_has_kek(struct hf_hsm *hsm, const char *kek_label)
{
    CK_SESSION_HANDLE s;
    CK_OBJECT_HANDLE h;
    CK_RV rv;

    if (hsm == NULL || kek_label == NULL) return false;
    if (session_take(hsm, &s) != CKR_OK) return false;
    rv = kek_get(hsm, s, kek_label, NULL, &h);
    session_give(hsm, s, rv);
    return rv == CKR_OK && h != CK_INVALID_HANDLE;
}

/* ---- wrap and unwrap ----------------------------------------------------------------------- */

/* SoftHSMv2 2.6.1, measured: CKM_AES_KEY_WRAP_PAD on a CKK_GENERIC_SECRET of any length from 1
 * byte to 8 KB works, and the blob is standard RFC 5649 (OpenSSL's AES-256-WRAP-PAD opens it),
 * but SoftHSMv2 first zero-pads the value to a multiple of 8, so C_UnwrapKey returns the padded
 * length. hf_hsm_unwrap therefore may return up to 7 trailing zero bytes; the local source trims
 * them (its plaintexts, raw AES keys and DER, carry their own length). */
static CK_MECHANISM kwp_mech = {CKM_AES_KEY_WRAP_PAD, NULL, 0};

/* The plaintext travels as a session secret SoftHSMv2 will wrap and reveal; the template is
 * shared by both directions (wrap appends CKA_VALUE). Only read, never written, by the module. */
static CK_OBJECT_CLASS carrier_class = CKO_SECRET_KEY;
static CK_KEY_TYPE carrier_type = CKK_GENERIC_SECRET;
static CK_BBOOL carrier_yes = CK_TRUE, carrier_no = CK_FALSE;
static CK_ATTRIBUTE carrier_tmpl[] = {
    {CKA_CLASS, &carrier_class, sizeof(carrier_class)},
    {CKA_KEY_TYPE, &carrier_type, sizeof(carrier_type)},
    {CKA_TOKEN, &carrier_no, sizeof(carrier_no)},
    {CKA_SENSITIVE, &carrier_no, sizeof(carrier_no)},
    {CKA_EXTRACTABLE, &carrier_yes, sizeof(carrier_yes)},
};
#define CARRIER_N (sizeof(carrier_tmpl) / sizeof(carrier_tmpl[0]))

struct wrap_job {
    const unsigned char *in;
    size_t in_len;
    unsigned char *out; /* wrap: malloc'd; unwrap: hf_secmem */
    size_t out_len;
};

static CK_RV wrap_once(struct hf_hsm *hsm, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE kek,
                       struct wrap_job *job)
{
    CK_ATTRIBUTE tmpl[CARRIER_N + 1];
    CK_OBJECT_HANDLE obj = CK_INVALID_HANDLE;
    CK_ULONG len = 0;
    CK_RV rv;

    memcpy(tmpl, carrier_tmpl, sizeof(carrier_tmpl));
    tmpl[CARRIER_N] = (CK_ATTRIBUTE){CKA_VALUE, (void *)job->in, job->in_len};
    if ((rv = hsm->f->C_CreateObject(s, tmpl, CARRIER_N + 1, &obj)) != CKR_OK) return rv;
    if ((rv = hsm->f->C_WrapKey(s, &kwp_mech, kek, obj, NULL, &len)) != CKR_OK) goto done;
    if ((job->out = malloc(len ? len : 1)) == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    if ((rv = hsm->f->C_WrapKey(s, &kwp_mech, kek, obj, job->out, &len)) != CKR_OK) goto done;
    job->out_len = len;
done:
    hsm->f->C_DestroyObject(s, obj);
    if (rv != CKR_OK) {
        free(job->out);
        job->out = NULL;
    }
    return rv;
}

static CK_RV unwrap_once(struct hf_hsm *hsm, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE kek,
                         struct wrap_job *job)
{
    CK_ATTRIBUTE value = {CKA_VALUE, NULL, 0};
    CK_OBJECT_HANDLE obj = CK_INVALID_HANDLE;
    CK_RV rv;

    rv = hsm->f->C_UnwrapKey(s, &kwp_mech, kek, (CK_BYTE_PTR)job->in, job->in_len, carrier_tmpl,
                             CARRIER_N, &obj);
    /* SoftHSMv2 reports a failed RFC 5649 integrity check as CKR_GENERAL_ERROR. */
    if (rv == CKR_GENERAL_ERROR || rv == CKR_WRAPPED_KEY_LEN_RANGE ||
        rv == CKR_ENCRYPTED_DATA_INVALID || rv == CKR_ENCRYPTED_DATA_LEN_RANGE)
        rv = CKR_WRAPPED_KEY_INVALID;
    if (rv != CKR_OK) return rv;
    if ((rv = hsm->f->C_GetAttributeValue(s, obj, &value, 1)) != CKR_OK) goto done;
    job->out_len = value.ulValueLen;
    if ((value.pValue = job->out = hf_secmem_alloc(job->out_len)) == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    rv = hsm->f->C_GetAttributeValue(s, obj, &value, 1);
done:
    hsm->f->C_DestroyObject(s, obj);
    if (rv != CKR_OK) {
        hf_secmem_free(job->out, job->out_len);
        job->out = NULL;
    }
    return rv;
}

typedef CK_RV (*wrap_fn)(struct hf_hsm *, CK_SESSION_HANDLE, CK_OBJECT_HANDLE, struct wrap_job *);

/* fn with the KEK, under the token lock shared: SoftHSMv2 rereads the token's files on the
 * object lookup and on the KEK's use. */
static CK_RV kek_call(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *label, wrap_fn fn,
                      CK_RV no_kek, struct wrap_job *job)
{
    CK_OBJECT_HANDLE kek;
    int fd;
    CK_RV rv = hf_lockfile_take(hsm->lock_path, LOCK_SH, &fd);

    if (rv != CKR_OK) return rv;
    if ((rv = kek_handle(hsm, s, label, &kek)) == CKR_OK)
        rv = kek == CK_INVALID_HANDLE ? no_kek : fn(hsm, s, kek, job);
    hf_lockfile_drop(fd);
    return rv;
}

/* Runs fn with a pooled session and the KEK, once more after a fix-up when the first try found
 * the KEK handle stale or the token logged out. */
static CK_RV kek_run(struct hf_hsm *hsm, const char *label, wrap_fn fn, CK_RV no_kek,
                     struct wrap_job *job)
{
    CK_SESSION_HANDLE s;
    CK_RV rv = CKR_OK;

    for (int attempt = 0; attempt < 2; attempt++) {
        if ((rv = session_take(hsm, &s)) != CKR_OK) return rv;
        rv = kek_call(hsm, s, label, fn, no_kek, job);
        if (rv == CKR_USER_NOT_LOGGED_IN && session_relogin(hsm, s) == CKR_OK) {
            session_give(hsm, s, CKR_OK);
            continue;
        }
        session_give(hsm, s, rv);
        if (!rv_is_stale_kek(rv)) break;
        handle_forget(hsm, CKO_SECRET_KEY, label);
    }
    return rv;
}

/* fn with the KEK on s, a session of an hf_hsm_run callback (which holds the token lock and
 * handles lost sessions and logins); a stale KEK handle is forgotten and looked up once more. */
static CK_RV kek_on(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *label, wrap_fn fn,
                    CK_RV no_kek, struct wrap_job *job)
{
    CK_OBJECT_HANDLE kek;
    CK_RV rv = CKR_OK;

    for (int attempt = 0; attempt < 2; attempt++) {
        if ((rv = kek_handle(hsm, s, label, &kek)) != CKR_OK) return rv;
        if (kek == CK_INVALID_HANDLE) return no_kek;
        if (!rv_is_stale_kek(rv = fn(hsm, s, kek, job))) break;
        handle_forget(hsm, CKO_SECRET_KEY, label);
    }
    return rv;
}

/* One wrap or unwrap, on a pooled session (s CK_INVALID_HANDLE) or on the caller's. */
static CK_RV kek_job(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *label, bool wrap,
                     struct wrap_job *job, unsigned char **out, size_t *out_len)
{
    wrap_fn fn = wrap ? wrap_once : unwrap_once;
    CK_RV no_kek = wrap ? CKR_WRAPPING_KEY_HANDLE_INVALID : CKR_UNWRAPPING_KEY_HANDLE_INVALID;
    CK_RV rv = s == CK_INVALID_HANDLE ? kek_run(hsm, label, fn, no_kek, job)
                                      : kek_on(hsm, s, label, fn, no_kek, job);

    if (rv == CKR_OK) {
        *out = job->out;
        *out_len = job->out_len;
    }
    return rv;
}

static CK_RV wrap_in(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *kek_label,
                     const unsigned char *plain, size_t plain_len, unsigned char **wrapped,
                     size_t *wrapped_len)
{
    struct wrap_job job = {.in = plain, .in_len = plain_len};

    if (hsm == NULL || kek_label == NULL || plain == NULL || plain_len == 0 || wrapped == NULL ||
        wrapped_len == NULL)
        return CKR_ARGUMENTS_BAD;
    return kek_job(hsm, s, kek_label, true, &job, wrapped, wrapped_len);
}

static CK_RV unwrap_in(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *kek_label,
                       const unsigned char *wrapped, size_t wrapped_len, unsigned char **plain,
                       size_t *plain_len)
{
    struct wrap_job job = {.in = wrapped, .in_len = wrapped_len};

    if (hsm == NULL || kek_label == NULL || wrapped == NULL || plain == NULL || plain_len == NULL)
        return CKR_ARGUMENTS_BAD;
    /* RFC 5649 section 4.2: a whole number of 64-bit blocks, at least two. */
    if (wrapped_len < 16 || wrapped_len % 8 != 0) return CKR_WRAPPED_KEY_INVALID;
    return kek_job(hsm, s, kek_label, false, &job, plain, plain_len);
}

CK_RV hf_hsm_wrap(struct hf_hsm *hsm, const char *kek_label, const unsigned char *plain,
                  size_t plain_len, unsigned char **wrapped, size_t *wrapped_len)
{
    return wrap_in(hsm, CK_INVALID_HANDLE, kek_label, plain, plain_len, wrapped, wrapped_len);
}

CK_RV hf_hsm_unwrap(struct hf_hsm *hsm, const char *kek_label, const unsigned char *wrapped,
                    size_t wrapped_len, unsigned char **plain, size_t *plain_len)
{
    return unwrap_in(hsm, CK_INVALID_HANDLE, kek_label, wrapped, wrapped_len, plain, plain_len);
}

CK_RV hf_hsm_wrap_on(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *kek_label,
                     const unsigned char *plain, size_t plain_len, unsigned char **wrapped,
                     size_t *wrapped_len)
{
    if (s == CK_INVALID_HANDLE) return CKR_SESSION_HANDLE_INVALID;
    return wrap_in(hsm, s, kek_label, plain, plain_len, wrapped, wrapped_len);
}

CK_RV hf_hsm_unwrap_on(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *kek_label,
                       const unsigned char *wrapped, size_t wrapped_len, unsigned char **plain,
                       size_t *plain_len)
{
    if (s == CK_INVALID_HANDLE) return CKR_SESSION_HANDLE_INVALID;
    return unwrap_in(hsm, s, kek_label, wrapped, wrapped_len, plain, plain_len);
}

/* ---- HMAC ---------------------------------------------------------------------------------- */

static CK_MECHANISM hmac_mech = {CKM_SHA256_HMAC, NULL, 0};

static CK_RV hmac_once(struct hf_hsm *hsm, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key,
                       struct wrap_job *job)
{
    CK_ULONG len = HF_HSM_MAC_LEN;
    CK_RV rv;

    if ((rv = hsm->f->C_SignInit(s, &hmac_mech, key)) != CKR_OK) return rv;
    rv = hsm->f->C_Sign(s, (CK_BYTE_PTR)job->in, job->in_len, job->out, &len);
    if (rv == CKR_OK && len != HF_HSM_MAC_LEN) rv = CKR_FUNCTION_FAILED;
    return rv;
}

static CK_RV hmac_in(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *mac_label,
                     const unsigned char *data, size_t len, unsigned char mac[HF_HSM_MAC_LEN])
{
    struct wrap_job job = {.in = data, .in_len = len, .out = mac};

    if (hsm == NULL || mac_label == NULL || (data == NULL && len > 0) || mac == NULL)
        return CKR_ARGUMENTS_BAD;
    if (s == CK_INVALID_HANDLE)
        return kek_run(hsm, mac_label, hmac_once, CKR_KEY_HANDLE_INVALID, &job);
    return kek_on(hsm, s, mac_label, hmac_once, CKR_KEY_HANDLE_INVALID, &job);
}

CK_RV hf_hsm_hmac(struct hf_hsm *hsm, const char *mac_label, const unsigned char *data, size_t len,
                  unsigned char mac[HF_HSM_MAC_LEN])
{
    return hmac_in(hsm, CK_INVALID_HANDLE, mac_label, data, len, mac);
}

CK_RV hf_hsm_hmac_on(struct hf_hsm *hsm, CK_SESSION_HANDLE s, const char *mac_label,
                     const unsigned char *data, size_t len, unsigned char mac[HF_HSM_MAC_LEN])
{
    if (s == CK_INVALID_HANDLE) return CKR_SESSION_HANDLE_INVALID;
    return hmac_in(hsm, s, mac_label, data, len, mac);
}

/* ---- any call on a pooled session ---------------------------------------------------------- */

static bool rv_is_session_gone(CK_RV rv)
{
    return rv == CKR_SESSION_HANDLE_INVALID || rv == CKR_SESSION_CLOSED ||
           rv == CKR_OPERATION_ACTIVE;
}

/* A descriptor of the lock file for one hold: a spare, or a new one. */
static CK_RV lock_spare_take(struct hf_hsm *hsm, int *fd)
{
    pthread_mutex_lock(&hsm->lock);
    *fd = hsm->n_lock_spares > 0 ? hsm->lock_spares[--hsm->n_lock_spares] : -1;
    pthread_mutex_unlock(&hsm->lock);
    return *fd >= 0 ? CKR_OK : hf_lockfile_open(hsm->lock_path, fd);
}

/* Unlocked first (a forked child may share the description), then kept for the next hold. */
static void lock_spare_give(struct hf_hsm *hsm, int fd)
{
    bool kept = false;

    if (hf_lockfile_lock(fd, LOCK_UN) == CKR_OK) {
        pthread_mutex_lock(&hsm->lock);
        if ((kept = hsm->n_lock_spares < HSM_LOCK_SPARES))
            hsm->lock_spares[hsm->n_lock_spares++] = fd;
        pthread_mutex_unlock(&hsm->lock);
    }
    if (!kept) close(fd);
}

/* fn under the token lock shared, as every backend call other than open and login is. */
static CK_RV run_once(struct hf_hsm *hsm, CK_SESSION_HANDLE s, hf_hsm_session_fn fn, void *arg)
{
    int fd;
    CK_RV rv;

    if (hsm->lock_path == NULL) return fn(hsm, hsm->f, s, arg);
    if ((rv = lock_spare_take(hsm, &fd)) != CKR_OK) return rv;
    if ((rv = hf_lockfile_lock(fd, LOCK_SH)) != CKR_OK) {
        close(fd);
        return rv;
    }
    rv = fn(hsm, hsm->f, s, arg);
    lock_spare_give(hsm, fd);
    return rv;
}

CK_RV hf_hsm_run(struct hf_hsm *hsm, hf_hsm_session_fn fn, void *arg)
{
    CK_SESSION_HANDLE s;
    CK_RV rv = CKR_OK;

    if (hsm == NULL || fn == NULL) return CKR_ARGUMENTS_BAD;
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((rv = session_take(hsm, &s)) != CKR_OK) return rv;
        rv = run_once(hsm, s, fn, arg);
        if (attempt == 0 && rv == CKR_USER_NOT_LOGGED_IN && session_relogin(hsm, s) == CKR_OK) {
            session_give(hsm, s, CKR_OK);
            continue;
        }
        /* A lost session is closed here; one more try on a session opened afresh (the token
         * may have dropped idle sessions, or a module reload invalidated them). */
        session_give(hsm, s, rv);
        if (!rv_is_session_gone(rv)) break;
    }
    return rv;
}

static CK_RV probe_once(struct hf_hsm *hsm, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, void *arg)
{
    CK_SESSION_INFO info;
    CK_RV rv = f->C_GetSessionInfo(s, &info);

    (void)arg;
    if (rv == CKR_OK && info.slotID != hsm->slot) rv = CKR_DEVICE_ERROR;
    /* A token that logged us out answers CKR_USER_NOT_LOGGED_IN to the next key operation:
     * hf_hsm_run logs in again on that, so ask for it here too. */
    if (rv == CKR_OK && info.state != CKS_RW_USER_FUNCTIONS) rv = CKR_USER_NOT_LOGGED_IN;
    return rv;
}

CK_RV hf_hsm_probe(struct hf_hsm *hsm)
{
    return hf_hsm_run(hsm, probe_once, NULL);
}
