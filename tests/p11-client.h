/* A minimal PKCS#11 client for the test and benchmark programs: loads any module by path (the
 * Holdfast module, or SoftHSMv2 for comparison), opens a logged-in session, finds keys by label.
 * Only the standard PKCS#11 API: these programs see the module exactly as an application does. */
#ifndef HF_TEST_P11_CLIENT_H
#define HF_TEST_P11_CLIENT_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pkcs11/module/holdfast.h"

struct p11_client {
    void *dl;
    CK_FUNCTION_LIST *f;
    CK_SLOT_ID slot;
    bool shared; /* another user in this process initialised the module: never finalise it */
};

static inline void p11_die(const char *what, CK_RV rv)
{
    fprintf(stderr, "%s failed: CKR 0x%lx\n", what, (unsigned long)rv);
    exit(1);
}

/* Loads module and picks the slot whose token is labelled token_label (NULL: the first token). */
static inline void p11_client_load(struct p11_client *c, const char *module,
                                   const char *token_label)
{
    CK_C_GetFunctionList get;
    CK_C_INITIALIZE_ARGS args = {.flags = CKF_OS_LOCKING_OK};
    CK_SLOT_ID slots[64];
    CK_ULONG n = 64;
    CK_RV rv;

    c->dl = dlopen(module, RTLD_NOW | RTLD_LOCAL);
    if (!c->dl) {
        fprintf(stderr, "dlopen %s: %s\n", module, dlerror());
        exit(1);
    }
    get = (CK_C_GetFunctionList)dlsym(c->dl, "C_GetFunctionList");
    if (!get || get(&c->f) != CKR_OK) p11_die("C_GetFunctionList", CKR_GENERAL_ERROR);
    /* Holdfast's core may have initialised the same SoftHSMv2 library in this process. */
    rv = c->f->C_Initialize(&args);
    c->shared = rv == CKR_CRYPTOKI_ALREADY_INITIALIZED;
    if (rv != CKR_OK && !c->shared) p11_die("C_Initialize", rv);
    if ((rv = c->f->C_GetSlotList(CK_TRUE, slots, &n)) != CKR_OK || n == 0)
        p11_die("C_GetSlotList", rv ? rv : CKR_TOKEN_NOT_PRESENT);
    c->slot = slots[0];
    for (CK_ULONG i = 0; token_label && i < n; i++) {
        CK_TOKEN_INFO ti;
        size_t len = strlen(token_label);
        if (c->f->C_GetTokenInfo(slots[i], &ti) != CKR_OK) continue;
        if (len <= sizeof(ti.label) && memcmp(ti.label, token_label, len) == 0 &&
            (len == sizeof(ti.label) || ti.label[len] == ' ')) {
            c->slot = slots[i];
            return;
        }
    }
    if (token_label) p11_die("finding the token", CKR_TOKEN_NOT_PRESENT);
}

/* A RW session; the first call per process logs the user in (login is per application). */
static inline CK_SESSION_HANDLE p11_client_session(struct p11_client *c, const char *pin)
{
    CK_SESSION_HANDLE s;
    CK_RV rv = c->f->C_OpenSession(c->slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &s);
    if (rv != CKR_OK) p11_die("C_OpenSession", rv);
    rv = c->f->C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin));
    if (rv != CKR_OK && rv != CKR_USER_ALREADY_LOGGED_IN) p11_die("C_Login", rv);
    return s;
}

/* The first object of class cls labelled label, or CK_INVALID_HANDLE. */
static inline CK_OBJECT_HANDLE p11_client_find(struct p11_client *c, CK_SESSION_HANDLE s,
                                               CK_OBJECT_CLASS cls, const char *label)
{
    CK_ATTRIBUTE tmpl[] = {{CKA_CLASS, &cls, sizeof(cls)},
                           {CKA_LABEL, (void *)label, strlen(label)}};
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_ULONG n = 0;

    if (c->f->C_FindObjectsInit(s, tmpl, 2) != CKR_OK) return CK_INVALID_HANDLE;
    if (c->f->C_FindObjects(s, &h, 1, &n) != CKR_OK || n == 0) h = CK_INVALID_HANDLE;
    c->f->C_FindObjectsFinal(s);
    return h;
}

static inline void p11_client_unload(struct p11_client *c)
{
    if (!c->shared) c->f->C_Finalize(NULL);
    /* Not dlclose'd: SoftHSMv2 registers atexit handlers that would then point nowhere. */
}

#endif
