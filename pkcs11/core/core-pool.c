/* HSM pools as Holdfast objects (issue 14): defined in the store (store.h, MAC'd with their
 * members), managed here with one audit record per call, failed ones too, and opened into the
 * executor of pool.h with each member's PIN read from its file or environment variable on this
 * node. A PIN is never logged, recorded or kept after the open: hf_pool_open copies it into its
 * own locked memory, and ours is wiped. */
#include "hf-build.h"

#include "core-internal.h"
#include "log.h"
#include "pool-clone.h"
#include "secmem.h"
#include "source-pool.h"

#include "pkcs11/common/secret-file.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A PIN longer than this is not a PIN (PKCS#11 tokens take at most a few dozen bytes). */
#define PIN_MAX 255

/* One pool operation's audit record. */
struct pool_op {
    struct hf_core *core;
    const struct hf_actor *who;
    const char *name; /* audit operation */
    char detail[320];
    uint64_t t0;
};

/* Fails when the audit log already has: a change that could not be recorded must not be made. */
static CK_RV op_begin(struct pool_op *op, struct hf_core *core, const struct hf_actor *who,
                      const char *name, const char *pool)
{
    memset(op, 0, sizeof(*op));
    op->core = core;
    op->who = who;
    op->name = name;
    op->t0 = hf_monotonic_us();
    /* The name as given may be anything: only a valid one is recorded as it is. */
    snprintf(op->detail, sizeof(op->detail), "pool=%s",
             pool == NULL                  ? ""
             : hf_pool_name_is_valid(pool) ? pool
                                           : "(invalid name)");
    return hf_audit_is_failed(core->audit) ? CKR_HF_AUDIT_FAILED : CKR_OK;
}

/* Writes the record; the operation's result, or CKR_HF_AUDIT_FAILED when it cannot be written
 * (as core-key.c's op_end: a committed change then stands, and the log is failed). */
static CK_RV op_end(struct pool_op *op, CK_RV rv)
{
    struct hf_audit_record rec = {
        .api = op->who && op->who->api ? op->who->api : "core",
        .operation = op->name,
        .caller = op->who ? op->who->caller : NULL,
        .detail = op->detail,
        .result = rv,
        .latency_us = hf_monotonic_us() - op->t0,
        .authenticated = true,
    };

    if (hf_audit_append(op->core->audit, &rec, NULL) != CKR_OK) {
        hf_log_error("audit log failed: %s (%s, result 0x%lx) is not recorded", op->name,
                     op->detail, (unsigned long)rv);
        return CKR_HF_AUDIT_FAILED;
    }
    return rv;
}

static void op_append(struct pool_op *op, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void op_append(struct pool_op *op, const char *fmt, ...)
{
    size_t len = strlen(op->detail);
    va_list ap;

    if (len >= sizeof(op->detail) - 1) return;
    va_start(ap, fmt);
    vsnprintf(op->detail + len, sizeof(op->detail) - len, fmt, ap);
    va_end(ap);
}

/* ---- management ---- */

CK_RV hf_core_pool_add(struct hf_core *core, struct hf_store_pool *pool, const struct hf_actor *who)
{
    char why[160];
    struct pool_op op;
    CK_RV rv;

    if (core == NULL) return CKR_ARGUMENTS_BAD;
    rv = op_begin(&op, core, who, "pool.add", pool ? pool->name : NULL);
    if (rv != CKR_OK) goto done;
    if (pool == NULL) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    if (!hf_store_pool_is_valid(pool, why, sizeof(why))) {
        hf_log_error("pool refused: %s", why);
        rv = CKR_ATTRIBUTE_VALUE_INVALID;
        goto done;
    }
    op_append(&op, " mode=%s members=%zu", hf_pool_mode_name(pool->mode), pool->n_members);
    /* What code every node will load is worth its line in the record. */
    for (size_t i = 0; i < pool->n_members; i++)
        op_append(&op, " %s=%.120s", pool->members[i].name, pool->members[i].module_path);
    pool->created = pool->updated = hf_now();
    rv = hf_store_pool_insert(core->store, pool);
    if (rv == CKR_ATTRIBUTE_VALUE_INVALID) hf_log_error("pool name '%s' is taken", pool->name);
done:
    return op_end(&op, rv);
}

CK_RV hf_core_pool_remove(struct hf_core *core, const char *name, const struct hf_actor *who)
{
    struct pool_op op;
    CK_RV rv;

    if (core == NULL) return CKR_ARGUMENTS_BAD;
    rv = op_begin(&op, core, who, "pool.remove", name);
    if (rv == CKR_OK)
        rv = name == NULL ? CKR_ARGUMENTS_BAD : hf_store_pool_delete(core->store, name);
    return op_end(&op, rv);
}

CK_RV hf_core_pool_get(struct hf_core *core, const char *name, const struct hf_actor *who,
                       struct hf_store_pool *out)
{
    struct pool_op op;
    CK_RV rv;

    if (core == NULL || out == NULL) return CKR_ARGUMENTS_BAD;
    rv = op_begin(&op, core, who, "pool.get", name);
    if (rv == CKR_OK)
        rv = name == NULL ? CKR_ARGUMENTS_BAD : hf_store_pool_get(core->store, name, out);
    return op_end(&op, rv);
}

CK_RV hf_core_pool_list(struct hf_core *core, const struct hf_actor *who,
                        struct hf_store_pool **pools, size_t *n)
{
    struct pool_op op;
    CK_RV rv;

    if (core == NULL || pools == NULL || n == NULL) return CKR_ARGUMENTS_BAD;
    *pools = NULL;
    *n = 0;
    rv = op_begin(&op, core, who, "pool.list", NULL);
    if (rv == CKR_OK) rv = hf_store_pool_list(core->store, pools, n);
    if (rv == CKR_OK) snprintf(op.detail, sizeof(op.detail), "pools=%zu", *n);
    rv = op_end(&op, rv);
    if (rv != CKR_OK) {
        hf_core_pools_free(*pools, *n);
        *pools = NULL;
        *n = 0;
    }
    return rv;
}

void hf_core_pools_free(struct hf_store_pool *pools, size_t n)
{
    for (size_t i = 0; pools && i < n; i++)
        hf_store_pool_clear(&pools[i]);
    free(pools);
}

/* ---- opening: PINs and lock files ---- */

/* The member's PIN into pin (PIN_MAX + 1 bytes of hf_secmem memory). A pin_file must pass the
 * secret-file rule, and more strictly than config.c's pin_file: a group-readable one is refused
 * too, since these files are pool members' production HSM PINs on every node, with no shared
 * group that should read them. */
static CK_RV pin_read(const struct hf_store_pool_member *m, char *pin, char *err, size_t errlen)
{
    char msg[512];
    const char *v;
    FILE *fp;
    CK_RV rv = CKR_PIN_INVALID;

    if (m->pin_env != NULL) {
        v = getenv(m->pin_env);
        if (v == NULL || v[0] == '\0' || strlen(v) > PIN_MAX) {
            snprintf(err, errlen, "pin_env: environment variable %s is %s", m->pin_env,
                     v == NULL || v[0] == '\0' ? "not set" : "too long for a PIN");
            return rv;
        }
        memcpy(pin, v, strlen(v) + 1);
        return CKR_OK;
    }
    if ((fp = fopen(m->pin_file, "re")) == NULL) {
        snprintf(err, errlen, "pin_file %s: %s", m->pin_file, strerror(errno));
        return rv;
    }
    switch (hf_secret_file_check_fd(fileno(fp), "pin_file", m->pin_file, msg, sizeof(msg))) {
    case HF_SECRET_FILE_OK:
        if (fgets(pin, PIN_MAX + 1, fp) == NULL) {
            snprintf(err, errlen, "pin_file %s is empty", m->pin_file);
            break;
        }
        pin[strcspn(pin, "\r\n")] = '\0';
        if (pin[0] == '\0')
            snprintf(err, errlen, "pin_file %s: the first line is empty", m->pin_file);
        else
            rv = CKR_OK;
        break;
    case HF_SECRET_FILE_WARN: /* group-readable: refused here (above) */
        snprintf(err, errlen, "pin_file %s: group-readable; chmod 600", m->pin_file);
        break;
    default:
        snprintf(err, errlen, "%s", msg);
    }
    fclose(fp);
    if (rv != CKR_OK) memset(pin, 0, PIN_MAX + 1);
    return rv;
}

/* STATE_DIR/pool.NAME.MEMBER.lock: a lock per member token, as STATE_DIR/hsm.lock is the root
 * token's (hsm.h). The dots cannot occur in either name, so no two members share a file. NULL
 * (no locking) without a state dir. */
static CK_RV lock_path(const struct hf_core *core, const char *pool, const char *member,
                       char buf[PATH_MAX], const char **path)
{
    *path = NULL;
    if (core->cfg->state_dir == NULL) return CKR_OK;
    if (snprintf(buf, PATH_MAX, "%s/pool.%s.%s.lock", core->cfg->state_dir, pool, member) >=
        PATH_MAX)
        return CKR_ARGUMENTS_BAD;
    *path = buf;
    return CKR_OK;
}

/* Opening a member by its token serial needs hsm.c to look tokens up by serial: not yet. */
static CK_RV member_openable(const struct hf_store_pool_member *m, char *err, size_t errlen)
{
    if (m->token_label != NULL) return CKR_OK;
    snprintf(err, errlen, "opening a token by its serial is not supported yet; give its label");
    return CKR_FUNCTION_NOT_SUPPORTED;
}

struct member_secrets {
    char (*pins)[PIN_MAX + 1]; /* hf_secmem, n of them */
    char (*locks)[PATH_MAX];
    size_t n;
};

static void secrets_free(struct member_secrets *s)
{
    hf_secmem_free(s->pins, s->n * sizeof(*s->pins));
    free(s->locks);
    memset(s, 0, sizeof(*s));
}

static CK_RV secrets_alloc(struct member_secrets *s, size_t n)
{
    s->n = n;
    s->pins = hf_secmem_alloc(n * sizeof(*s->pins));
    s->locks = calloc(n, sizeof(*s->locks));
    if (s->pins && s->locks) return CKR_OK;
    secrets_free(s);
    return CKR_HOST_MEMORY;
}

CK_RV hf_core_pool_open(struct hf_core *core, const char *name, const struct hf_pool_options *opts,
                        struct hf_pool **out)
{
    struct hf_store_pool pool = {0};
    struct hf_pool_member_spec *specs = NULL;
    struct member_secrets sec = {0};
    char err[600] = "";
    struct pool_op op;
    CK_RV rv;

    if (core == NULL || out == NULL) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    rv = op_begin(&op, core, NULL, "pool.open", name);
    if (rv != CKR_OK) goto done;
    if (name == NULL) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    if ((rv = hf_store_pool_get(core->store, name, &pool)) != CKR_OK) goto done;
    if ((rv = secrets_alloc(&sec, pool.n_members)) != CKR_OK) goto done;
    if ((specs = calloc(pool.n_members, sizeof(*specs))) == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    for (size_t i = 0; i < pool.n_members; i++) {
        const struct hf_store_pool_member *m = &pool.members[i];
        char why[520] = "";
        if ((rv = member_openable(m, why, sizeof(why))) == CKR_OK)
            rv = pin_read(m, sec.pins[i], why, sizeof(why));
        if (rv == CKR_OK)
            rv = lock_path(core, pool.name, m->name, sec.locks[i], &specs[i].lock_path);
        if (rv != CKR_OK) {
            snprintf(err, sizeof(err), "pool %s: member %s: %s", pool.name, m->name,
                     why[0] ? why : "lock file path too long");
            goto done;
        }
        specs[i].name = m->name;
        specs[i].module_path = m->module_path;
        specs[i].token_label = m->token_label;
        specs[i].pin = sec.pins[i];
        specs[i].concurrency = m->concurrency;
    }
    rv = hf_pool_open(specs, pool.n_members, opts, out);
    if (rv != CKR_OK) snprintf(err, sizeof(err), "pool %s: cannot open (0x%lx)", name, rv);
done:
    if (err[0]) hf_log_error("%s", err);
    free(specs);
    secrets_free(&sec);
    hf_store_pool_clear(&pool);
    rv = op_end(&op, rv);
    if (rv != CKR_OK && *out != NULL) {
        hf_pool_close(*out);
        *out = NULL;
    }
    return rv;
}

/* ---- probing ---- */

void hf_core_pool_probes_free(struct hf_core_pool_probe *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++)
        free(p[i].member);
    free(p);
}

/* Opens member i on its own and asks the token (hf_hsm_probe), so that one member's wrong PIN
 * says which member it is and does not hide how the others do (hf_pool_open fails whole on a
 * refused PIN). */
static void member_probe(struct hf_core *core, const struct hf_store_pool *pool, size_t i,
                         char *pin, struct hf_core_pool_probe *res)
{
    const struct hf_store_pool_member *m = &pool->members[i];
    char lock_buf[PATH_MAX];
    const char *lock = NULL;
    struct hf_hsm *hsm = NULL;
    CK_RV rv;

    if ((rv = member_openable(m, res->reason, sizeof(res->reason))) != CKR_OK ||
        (rv = pin_read(m, pin, res->reason, sizeof(res->reason))) != CKR_OK)
        goto done;
    if ((rv = lock_path(core, pool->name, m->name, lock_buf, &lock)) != CKR_OK) {
        snprintf(res->reason, sizeof(res->reason), "lock file path too long");
        goto done;
    }
    rv = hf_hsm_open(m->module_path, lock, m->token_label, pin, &hsm);
    if (rv == CKR_OK) rv = hf_hsm_probe(hsm);
    hf_hsm_close(hsm);
done:
    memset(pin, 0, PIN_MAX + 1);
    res->rv = rv;
}

CK_RV hf_core_pool_probe(struct hf_core *core, const char *name, const struct hf_actor *who,
                         struct hf_core_pool_probe **results, size_t *n)
{
    struct hf_store_pool pool = {0};
    struct hf_core_pool_probe *res = NULL;
    char *pin = NULL;
    size_t failed = 0;
    struct pool_op op;
    CK_RV rv;

    if (core == NULL || results == NULL || n == NULL) return CKR_ARGUMENTS_BAD;
    *results = NULL;
    *n = 0;
    rv = op_begin(&op, core, who, "pool.probe", name);
    if (rv != CKR_OK) goto done;
    if (name == NULL) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    if ((rv = hf_store_pool_get(core->store, name, &pool)) != CKR_OK) goto done;
    res = calloc(pool.n_members, sizeof(*res));
    pin = hf_secmem_alloc(PIN_MAX + 1);
    if (res == NULL || pin == NULL) {
        rv = CKR_HOST_MEMORY;
        goto done;
    }
    for (size_t i = 0; i < pool.n_members; i++) {
        if ((res[i].member = strdup(pool.members[i].name)) == NULL) {
            rv = CKR_HOST_MEMORY;
            goto done;
        }
        member_probe(core, &pool, i, pin, &res[i]);
        if (res[i].rv != CKR_OK) {
            failed++;
            op_append(&op, " %s=0x%lx", res[i].member, (unsigned long)res[i].rv);
        }
        *n = i + 1;
    }
    op_append(&op, " ok=%zu failed=%zu", pool.n_members - failed, failed);
done:
    hf_secmem_free(pin, PIN_MAX + 1);
    hf_store_pool_clear(&pool);
    rv = op_end(&op, rv);
    if (rv == CKR_OK) {
        *results = res;
    } else {
        hf_core_pool_probes_free(res, *n);
        *n = 0;
    }
    return rv;
}

/* ---- restoring an export pool's member ---- */

/* The member named member of pool, opened alone (the others may be down: a restore needs only
 * the store and this token). */
static CK_RV member_open_alone(struct hf_core *core, const struct hf_store_pool *pool,
                               const struct hf_store_pool_member *m, struct hf_hsm **hsm, char *err,
                               size_t errlen)
{
    char lock_buf[PATH_MAX];
    const char *lock = NULL;
    char *pin = hf_secmem_alloc(PIN_MAX + 1);
    CK_RV rv;

    if (pin == NULL) return CKR_HOST_MEMORY;
    if ((rv = member_openable(m, err, errlen)) == CKR_OK) rv = pin_read(m, pin, err, errlen);
    if (rv == CKR_OK && (rv = lock_path(core, pool->name, m->name, lock_buf, &lock)) != CKR_OK)
        snprintf(err, errlen, "lock file path too long");
    if (rv == CKR_OK &&
        (rv = hf_hsm_open(m->module_path, lock, m->token_label, pin, hsm)) != CKR_OK)
        snprintf(err, errlen, "token '%s' did not open (0x%lx)", m->token_label, (unsigned long)rv);
    hf_secmem_free(pin, PIN_MAX + 1);
    return rv;
}

CK_RV hf_core_pool_restore(struct hf_core *core, const char *name, const char *member,
                           const struct hf_actor *who, size_t *restored)
{
    struct hf_store_pool pool = {0};
    const struct hf_store_pool_member *m = NULL;
    struct hf_hsm *hsm = NULL;
    size_t present = 0;
    char err[600] = "";
    struct pool_op op;
    CK_RV rv;

    if (core == NULL || restored == NULL) return CKR_ARGUMENTS_BAD;
    *restored = 0;
    rv = op_begin(&op, core, who, "pool.restore", name);
    if (rv != CKR_OK) goto done;
    if (name == NULL || member == NULL) {
        rv = CKR_ARGUMENTS_BAD;
        goto done;
    }
    op_append(&op, " member=%.40s", hf_pool_name_is_valid(member) ? member : "(invalid name)");
    if ((rv = hf_store_pool_get(core->store, name, &pool)) != CKR_OK) goto done;
    if (pool.mode != HF_POOL_MODE_EXPORT) {
        snprintf(err, sizeof(err), "pool %s is in %s mode: only an export pool keeps backups", name,
                 hf_pool_mode_name(pool.mode));
        rv = CKR_ATTRIBUTE_VALUE_INVALID;
        goto done;
    }
    for (size_t i = 0; i < pool.n_members && m == NULL; i++)
        if (strcmp(pool.members[i].name, member) == 0) m = &pool.members[i];
    if (m == NULL) {
        snprintf(err, sizeof(err), "pool %s has no member '%s'", name, member);
        rv = CKR_KEY_HANDLE_INVALID;
        goto done;
    }
    if ((rv = member_open_alone(core, &pool, m, &hsm, err, sizeof(err))) != CKR_OK) goto done;
    rv = core_pool_backup_restore(core, name, hsm, restored, &present);
    op_append(&op, " restored=%zu present=%zu", *restored, present);
done:
    if (err[0]) hf_log_error("%s", err);
    hf_hsm_close(hsm);
    hf_store_pool_clear(&pool);
    return op_end(&op, rv);
}

/* ---- pools in use: the pool key source's executors ---- */

/* How long a failed open is the answer before the next caller tries again (core_pool_use). */
#define CORE_POOL_REOPEN_US (5 * 1000 * 1000)

/* A pool in use, as core-internal.h's entry (first, so the list frees it as one) plus what its
 * re-sync needs on the probe thread. Allocated and freed here only. */
struct pool_entry {
    struct core_pool base;
    struct hf_core *core;
    enum hf_pool_mode mode;
};

static struct core_pool *pool_entry_find(struct hf_core *core, const char *name)
{
    for (struct core_pool *e = core->pools; e != NULL; e = e->next)
        if (strcmp(e->name, name) == 0) return e;
    return NULL;
}

static bool mode_is_clone(enum hf_pool_mode mode)
{
    return mode == HF_POOL_MODE_CLONE || mode == HF_POOL_MODE_EXPORT;
}

/* on_member_back: the member came back or lacks a key (pool.h); runs on the probe thread. */
static void pool_member_back(struct hf_pool *pool, size_t member, void *arg)
{
    struct pool_entry *e = arg;

    core_pool_resync(e->core, e->base.name, pool, member);
}

/* Opens the pool of entry e; a clone or export pool gets its re-sync hook, its replication key
 * on every member in service, and each member in service re-synced before the first request:
 * once per process, a search per member when nothing is missing, and a short-lived process
 * (the CLI) would otherwise end before the probe thread's first round. Members out of service
 * are re-synced when they come back. */
static CK_RV pool_entry_open(struct hf_core *core, struct pool_entry *e, struct hf_pool **out)
{
    struct hf_store_pool def = {0};
    struct hf_pool_options opts = {.queue_max = core->cfg->pool_queue_max,
                                   .queue_wait_ms = core->cfg->pool_queue_wait_ms,
                                   .call_timeout_ms = core->cfg->pool_call_timeout_ms};
    struct hf_pool_member_status st[HF_POOL_MEMBERS_MAX];
    size_t n;
    CK_RV rv;

    if ((rv = hf_store_pool_get(core->store, e->base.name, &def)) != CKR_OK) return rv;
    e->mode = def.mode;
    hf_store_pool_clear(&def);
    if (mode_is_clone(e->mode)) {
        opts.on_member_back = pool_member_back;
        opts.on_member_back_arg = e;
    }
    if ((rv = hf_core_pool_open(core, e->base.name, &opts, out)) != CKR_OK) return rv;
    if (!mode_is_clone(e->mode)) return CKR_OK;
    core_pool_repl_establish(core, e->base.name, *out);
    if (e->mode == HF_POOL_MODE_EXPORT) core_pool_backup_establish(core, e->base.name, *out);
    n = hf_pool_status(*out, st, HF_POOL_MEMBERS_MAX);
    for (size_t i = 0; i < n && i < HF_POOL_MEMBERS_MAX; i++)
        if (st[i].healthy) core_pool_resync(core, e->base.name, *out, i);
    return CKR_OK;
}

CK_RV core_pool_use(struct hf_core *core, const char *name, struct hf_pool **out)
{
    struct core_pool *found;
    struct pool_entry *e;
    struct hf_pool *pool = NULL;
    CK_RV rv;

    if (core == NULL || name == NULL || out == NULL) return CKR_ARGUMENTS_BAD;
    *out = NULL;
    pthread_mutex_lock(&core->pools_lock);
    /* One thread opens a pool; the others wait for it rather than load its members twice. */
    while ((found = pool_entry_find(core, name)) != NULL && found->opening)
        pthread_cond_wait(&core->pools_cond, &core->pools_lock);
    if (found != NULL && found->pool != NULL) {
        *out = found->pool;
        pthread_mutex_unlock(&core->pools_lock);
        return CKR_OK;
    }
    /* A failed open is tried again, so a pool whose members were all down at first use comes
     * back without a restart, but not at every call: each try loads modules, logs and writes a
     * pool.open record, and requests, scrapes and health checks would repeat it many times a
     * second. Until CORE_POOL_REOPEN_US has passed, the last failure is the answer. */
    if (found != NULL && hf_monotonic_us() - found->failed_at_us < CORE_POOL_REOPEN_US) {
        rv = found->failed_rv;
        pthread_mutex_unlock(&core->pools_lock);
        return rv;
    }
    if ((e = (struct pool_entry *)found) == NULL) {
        e = calloc(1, sizeof(*e));
        if (e == NULL || (e->base.name = strdup(name)) == NULL) {
            pthread_mutex_unlock(&core->pools_lock);
            free(e);
            return CKR_HOST_MEMORY;
        }
        e->core = core;
        e->base.next = core->pools;
        core->pools = &e->base;
    }
    e->base.opening = true;
    pthread_mutex_unlock(&core->pools_lock);

    rv = pool_entry_open(core, e, &pool);

    pthread_mutex_lock(&core->pools_lock);
    e->base.opening = false;
    if (rv == CKR_OK) {
        e->base.pool = pool;
        *out = pool;
    } else {
        e->base.failed_rv = rv;
        e->base.failed_at_us = hf_monotonic_us();
    }
    pthread_cond_broadcast(&core->pools_cond);
    pthread_mutex_unlock(&core->pools_lock);
    return rv;
}

void core_pools_close(struct hf_core *core)
{
    struct core_pool *e, *next;

    /* hf_core_close: no caller is left, so nobody is opening one either. */
    for (e = core->pools; e != NULL; e = next) {
        next = e->next;
        hf_pool_close(e->pool);
        free(e->name);
        free(e);
    }
    core->pools = NULL;
}

/* kek_label "pool:NAME/MEMBER" split into its pool and member names; "pool:NAME" (a clone or
 * export version, on every member) gives *member NULL. */
static bool version_place(const struct hf_key_version *v, char *pool, size_t pool_len,
                          const char **member)
{
    const char *p = v->kek_label + strlen(HF_KEY_SOURCE_POOL_PREFIX);
    const char *slash = strchr(p, '/');
    size_t len = slash != NULL ? (size_t)(slash - p) : strlen(p);

    if (len == 0 || len >= pool_len || (slash != NULL && slash[1] == '\0')) return false;
    memcpy(pool, p, len);
    pool[len] = '\0';
    *member = slash != NULL ? slash + 1 : NULL;
    return true;
}

CK_RV core_pool_version(struct hf_core *core, const struct hf_key_version *v, struct hf_pool **pool,
                        size_t *member)
{
    char name[HF_POOL_NAME_MAX + 1];
    struct hf_pool_member_status st[HF_POOL_MEMBERS_MAX];
    const char *mname = NULL;
    size_t n;
    CK_RV rv;

    if (!hf_key_version_is_in_pool(v) || !version_place(v, name, sizeof(name), &mname))
        return CKR_KEY_HANDLE_INVALID;
    if ((rv = core_pool_use(core, name, pool)) != CKR_OK) return rv;
    if (mname == NULL) {
        *member = HF_POOL_KEY_ANY_MEMBER;
        return CKR_OK;
    }
    n = hf_pool_status(*pool, st, HF_POOL_MEMBERS_MAX);
    for (size_t i = 0; i < n && i < HF_POOL_MEMBERS_MAX; i++) {
        if (strcmp(st[i].name, mname) == 0) {
            *member = i;
            return CKR_OK;
        }
    }
    hf_log_error("key %s version %u: pool %s has no member %s any more", v->key_uuid, v->version,
                 name, mname);
    return CKR_KEY_HANDLE_INVALID;
}

void core_pool_versions_destroy(struct hf_core *core, const struct hf_key_version *vs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct hf_pool *pool = NULL;
        size_t member = 0;
        CK_RV rv;

        if (!hf_key_version_is_in_pool(&vs[i])) continue;
        rv = core_pool_version(core, &vs[i], &pool, &member);
        if (rv == CKR_OK) rv = hf_pool_key_destroy(pool, member, vs[i].uuid);
        if (rv != CKR_OK)
            hf_log_warn("key %s version %u: its object in %s was not destroyed (0x%lx): the "
                        "store row is, so nothing can use it; remove it from the member by hand",
                        vs[i].key_uuid, vs[i].version, vs[i].kek_label, (unsigned long)rv);
    }
}
