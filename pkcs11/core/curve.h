/* The curves of EC and Ed25519 keys, in one table that the key model, the core's crypto and the
 * module's attributes all read, so a curve is added in one place. */
#ifndef HF_CURVE_H
#define HF_CURVE_H

#include <stddef.h>

#include "key.h"

struct hf_curve {
    enum hf_alg alg;
    unsigned bits;            /* the key model's size: 256, 384, 521; 255 for Ed25519 */
    const char *group;        /* OpenSSL's group (EC) or key type (Ed25519) name */
    int nid;                  /* OpenSSL's NID */
    const unsigned char *oid; /* the DER OBJECT IDENTIFIER CKA_EC_PARAMS reports */
    size_t oid_len;
    const char *const *names; /* PrintableString names CKA_EC_PARAMS may give; NULL-ended */
};

/* The curve of an EC or Ed25519 key of bits; NULL for any other. Static storage. */
const struct hf_curve *hf_curve_find(enum hf_alg alg, unsigned bits);
/* The curve a CKA_EC_PARAMS value names: its DER OID or (PKCS#11 3.0) DER PrintableString name;
 * NULL when it names none of ours. */
const struct hf_curve *hf_curve_from_params(const unsigned char *p, size_t len);

#endif
