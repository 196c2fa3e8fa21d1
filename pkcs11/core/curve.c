/* The curve table (curve.h). */
#include "hf-build.h"

#include "curve.h"

#include <openssl/obj_mac.h>
#include <string.h>

/* DER namedCurve OIDs (RFC 5480 section 2.1.1.1). */
static const unsigned char oid_p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48,
                                         0xce, 0x3d, 0x03, 0x01, 0x07};
static const unsigned char oid_p384[] = {0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22};
static const unsigned char oid_p521[] = {0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23};
/* id-Ed25519 1.3.101.112 (RFC 8410), which PKCS#11 3.0 section 2.3.5 allows beside the name. */
static const unsigned char oid_ed25519[] = {0x06, 0x03, 0x2b, 0x65, 0x70};

static const char *const names_p256[] = {"prime256v1", "secp256r1", "P-256", NULL};
static const char *const names_p384[] = {"secp384r1", "P-384", NULL};
static const char *const names_p521[] = {"secp521r1", "P-521", NULL};
static const char *const names_ed25519[] = {"edwards25519", NULL}; /* PKCS#11 3.0 2.3.5 */

static const struct hf_curve curves[] = {
    {HF_ALG_EC, 256, "P-256", NID_X9_62_prime256v1, oid_p256, sizeof(oid_p256), names_p256},
    {HF_ALG_EC, 384, "P-384", NID_secp384r1, oid_p384, sizeof(oid_p384), names_p384},
    {HF_ALG_EC, 521, "P-521", NID_secp521r1, oid_p521, sizeof(oid_p521), names_p521},
    {HF_ALG_ED25519, 256, "ED25519", NID_ED25519, oid_ed25519, sizeof(oid_ed25519), names_ed25519},
};

#define N_CURVES (sizeof(curves) / sizeof(curves[0]))

const struct hf_curve *hf_curve_find(enum hf_alg alg, unsigned bits)
{
    for (size_t i = 0; i < N_CURVES; i++)
        if (curves[i].alg == alg && curves[i].bits == bits) return &curves[i];
    return NULL;
}

static bool curve_has_name(const struct hf_curve *c, const unsigned char *name, size_t len)
{
    for (const char *const *n = c->names; *n; n++)
        if (strlen(*n) == len && memcmp(*n, name, len) == 0) return true;
    return false;
}

const struct hf_curve *hf_curve_from_params(const unsigned char *p, size_t len)
{
    /* A PrintableString (tag 0x13) short enough for a one-byte length: every name is. */
    bool printable = p && len >= 2 && p[0] == 0x13 && p[1] == len - 2;

    if (!p) return NULL;
    for (size_t i = 0; i < N_CURVES; i++) {
        const struct hf_curve *c = &curves[i];
        if (len == c->oid_len && memcmp(p, c->oid, len) == 0) return c;
        if (printable && curve_has_name(c, p + 2, len - 2)) return c;
    }
    return NULL;
}
