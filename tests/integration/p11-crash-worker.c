/* The PKCS#11 side of crash-safety.sh: creates keys and uses them in a loop until it is
 * SIGKILLed. After every call that returned it prints "ok PID SEQ OP" (SEQ: the audit record
 * number from the Holdfast vendor interface), flushed, so the test can check afterwards that
 * every operation that returned has its audit record.
 *
 *   p11-crash-worker MODULE PIN */
#include "hf-build.h"

#include <unistd.h>

#include "tests/p11-client.h"

int main(int argc, char **argv)
{
    struct p11_client c;
    CK_INTERFACE *iface = NULL;
    CK_C_GetInterface get_iface;
    const HF_FUNCTION_LIST *hf;
    CK_SESSION_HANDLE s;

    if (argc != 3) return 2;
    p11_client_load(&c, argv[1], NULL);
    get_iface = (CK_C_GetInterface)dlsym(c.dl, "C_GetInterface");
    if (!get_iface || get_iface((CK_UTF8CHAR_PTR)HF_INTERFACE_NAME, NULL, &iface, 0) != CKR_OK)
        p11_die("C_GetInterface(Holdfast)", CKR_GENERAL_ERROR);
    hf = iface->pFunctionList;
    s = p11_client_session(&c, argv[2]);
    setvbuf(stdout, NULL, _IOLBF, 0);

    for (unsigned i = 0;; i++) {
        char label[64];
        CK_ULONG len = 32;
        CK_BBOOL yes = CK_TRUE;
        CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
        CK_KEY_TYPE type = CKK_AES;
        CK_ATTRIBUTE tmpl[] = {
            {CKA_CLASS, &cls, sizeof(cls)},     {CKA_KEY_TYPE, &type, sizeof(type)},
            {CKA_VALUE_LEN, &len, sizeof(len)}, {CKA_LABEL, label, 0},
            {CKA_ENCRYPT, &yes, sizeof(yes)},   {CKA_DECRYPT, &yes, sizeof(yes)}};
        CK_MECHANISM gen = {CKM_AES_KEY_GEN, NULL, 0};
        CK_OBJECT_HANDLE key;
        CK_ULONG_LONG seq;
        CK_RV rv;

        snprintf(label, sizeof(label), "p11-crash-%ld-%u", (long)getpid(), i);
        tmpl[3].ulValueLen = strlen(label);
        rv = c.f->C_GenerateKey(s, &gen, tmpl, 6, &key);
        if (rv != CKR_OK) p11_die("C_GenerateKey", rv);
        hf->HF_GetLastAuditSeq(s, &seq);
        printf("ok %ld %llu key.create %s\n", (long)getpid(), (unsigned long long)seq, label);
        for (int j = 0; j < 20; j++) {
            unsigned char iv[12] = {0}, pt[32] = {0}, ct[64];
            CK_ULONG ct_len = sizeof(ct);
            CK_GCM_PARAMS gcm = {iv, sizeof(iv), 96, NULL, 0, 128};
            CK_MECHANISM m = {CKM_AES_GCM, &gcm, sizeof(gcm)};
            iv[0] = (unsigned char)j;
            if ((rv = c.f->C_EncryptInit(s, &m, key)) != CKR_OK ||
                (rv = c.f->C_Encrypt(s, pt, sizeof(pt), ct, &ct_len)) != CKR_OK)
                p11_die("C_Encrypt", rv);
            hf->HF_GetLastAuditSeq(s, &seq);
            printf("ok %ld %llu encrypt %s\n", (long)getpid(), (unsigned long long)seq, label);
        }
    }
}
