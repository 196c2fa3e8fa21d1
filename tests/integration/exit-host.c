/* A host that ends its use of a PKCS#11 module the ways real programs do, for exit-safety.sh:
 *   atexit     C_Finalize from an exit handler registered before the module was loaded, as
 *              OpenSSL's OPENSSL_cleanup is: it runs after the backend's own exit-time teardown
 *   unload     dlclose without C_Finalize (a host that forgets, or a provider unloaded early),
 *              then more work in the process while the module's threads would still run
 *   finalize   C_Finalize, then exit (the ordinary case)
 * Each mode signs once with the named key first, so sessions, the backend and the audit writer
 * are all live when the end comes. Usage: exit-host MODE MODULE PIN KEY_LABEL */
#include "tests/p11-client.h"

#include <time.h>

static struct p11_client host;

static void finalize_at_exit(void)
{
    CK_RV rv = host.f->C_Finalize(NULL);

    if (rv != CKR_OK) fprintf(stderr, "exit-host: C_Finalize at exit: CKR 0x%lx\n", rv);
}

static void sign_once(const char *pin, const char *label)
{
    CK_SESSION_HANDLE s = p11_client_session(&host, pin);
    CK_OBJECT_HANDLE key = p11_client_find(&host, s, CKO_PRIVATE_KEY, label);
    CK_MECHANISM mech = {CKM_ECDSA_SHA256, NULL, 0};
    unsigned char msg[] = "exit-host", sig[256];
    CK_ULONG siglen = sizeof(sig);
    CK_RV rv;

    if (key == CK_INVALID_HANDLE) p11_die("finding the key", CKR_KEY_HANDLE_INVALID);
    if ((rv = host.f->C_SignInit(s, &mech, key)) != CKR_OK) p11_die("C_SignInit", rv);
    if ((rv = host.f->C_Sign(s, msg, sizeof(msg) - 1, sig, &siglen)) != CKR_OK)
        p11_die("C_Sign", rv);
}

/* Work after the unload, long enough for a thread left in unmapped code to be scheduled. */
static void keep_busy(void)
{
    struct timespec pause = {0, 20 * 1000 * 1000};

    for (int i = 0; i < 5; i++)
        nanosleep(&pause, NULL);
}

int main(int argc, char **argv)
{
    const char *mode;

    if (argc != 5) {
        fprintf(stderr, "usage: exit-host atexit|unload|finalize MODULE PIN KEY_LABEL\n");
        return 2;
    }
    mode = argv[1];
    if (strcmp(mode, "atexit") == 0) atexit(finalize_at_exit);
    p11_client_load(&host, argv[2], NULL);
    sign_once(argv[3], argv[4]);
    if (strcmp(mode, "unload") == 0) {
        dlclose(host.dl);
        keep_busy();
    } else if (strcmp(mode, "finalize") == 0) {
        CK_RV rv = host.f->C_Finalize(NULL);
        if (rv != CKR_OK) p11_die("C_Finalize", rv);
    } else if (strcmp(mode, "atexit") != 0) {
        fprintf(stderr, "exit-host: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
