/* For the module suites: load the built holdfast-pkcs11.so with dlopen, as any PKCS#11 program
 * does, and the usual start (initialise, open a R/W session, log the user in).
 *
 * The module is found through $HF_MODULE (set by `make check`), else next to this test program
 * in the build tree. Call hf_test_env_setup first: it exports HOLDFAST_CONF, which the module
 * reads in C_Initialize. */
#ifndef HF_TEST_MODULE_LOADER_H
#define HF_TEST_MODULE_LOADER_H

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "pkcs11/module/holdfast.h"

struct hf_test_module {
    void *dl;
    CK_FUNCTION_LIST_PTR p11;
};

/* Candidates relative to the test binary (tests/unit/ of the build tree): libtool puts the
 * module in .libs/ of the directory its Makefile lives in. */
/* RTLD_NODELETE: the module's process-lifetime state (the core's OpenSSL library context, its
 * locked-memory arenas) stays mapped after dlclose, as in a program that loads it once, so a
 * leak check at exit tells real leaks from that. */
static inline int hf_test_module_dlopen(struct hf_test_module *m)
{
    const int flags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
    static const char *const rel[] = {"../../pkcs11/module/.libs/holdfast-pkcs11.so"};
    const char *env = getenv("HF_MODULE");
    char exe[PATH_MAX], path[PATH_MAX + 64];
    ssize_t n;
    char *slash;

    if (env && env[0] && (m->dl = dlopen(env, flags))) return 0;
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) return -1;
    exe[n] = '\0';
    if (!(slash = strrchr(exe, '/'))) return -1;
    *slash = '\0';
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", exe, rel[i]);
        if ((m->dl = dlopen(path, flags))) return 0;
    }
    fprintf(stderr, "cannot load holdfast-pkcs11.so (HF_MODULE=%s): %s\n", env ? env : "(unset)",
            dlerror());
    return -1;
}

/* 0 with m->p11 set, -1 (reason printed) otherwise. */
static inline int hf_test_module_load(struct hf_test_module *m)
{
    CK_C_GetFunctionList get;

    memset(m, 0, sizeof(*m));
    if (hf_test_module_dlopen(m) != 0) return -1;
    get = (CK_C_GetFunctionList)dlsym(m->dl, "C_GetFunctionList");
    if (!get || get(&m->p11) != CKR_OK || !m->p11) {
        fprintf(stderr, "holdfast-pkcs11.so: no usable C_GetFunctionList\n");
        dlclose(m->dl);
        m->dl = NULL;
        return -1;
    }
    return 0;
}

static inline void hf_test_module_unload(struct hf_test_module *m)
{
    if (m->dl) dlclose(m->dl);
    memset(m, 0, sizeof(*m));
}

/* A symbol of the module other than the function list (C_GetInterface). */
static inline void *hf_test_module_sym(struct hf_test_module *m, const char *name)
{
    return m->dl ? dlsym(m->dl, name) : NULL;
}

/* A R/W session on the slot, with the user logged in with HF_TEST_USER_PIN. */
static inline CK_RV hf_test_module_session(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE *sess)
{
    CK_SLOT_ID slot;
    CK_ULONG n = 1;
    CK_RV rv;

    if ((rv = p11->C_GetSlotList(CK_TRUE, &slot, &n)) != CKR_OK) return rv;
    if (n != 1) return CKR_GENERAL_ERROR;
    rv = p11->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, sess);
    if (rv != CKR_OK) return rv;
    return p11->C_Login(*sess, CKU_USER, (CK_UTF8CHAR_PTR)HF_TEST_USER_PIN,
                        strlen(HF_TEST_USER_PIN));
}

/* C_Initialize, then hf_test_module_session. */
static inline CK_RV hf_test_module_start(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE *sess)
{
    CK_RV rv = p11->C_Initialize(NULL);

    return rv != CKR_OK ? rv : hf_test_module_session(p11, sess);
}

/* The one object of class cls labelled label that session s sees; CK_INVALID_HANDLE when there
 * is none, or more than one. */
static inline CK_OBJECT_HANDLE hf_test_find_by_label(CK_FUNCTION_LIST_PTR p11, CK_SESSION_HANDLE s,
                                                     CK_OBJECT_CLASS cls, const char *label)
{
    CK_ATTRIBUTE t[] = {{CKA_CLASS, &cls, sizeof(cls)}, {CKA_LABEL, (void *)label, strlen(label)}};
    CK_OBJECT_HANDLE h[2] = {CK_INVALID_HANDLE, CK_INVALID_HANDLE};
    CK_ULONG n = 0;

    if (p11->C_FindObjectsInit(s, t, 2) != CKR_OK) return CK_INVALID_HANDLE;
    if (p11->C_FindObjects(s, h, 2, &n) != CKR_OK || n != 1) h[0] = CK_INVALID_HANDLE;
    p11->C_FindObjectsFinal(s);
    return h[0];
}

#endif
