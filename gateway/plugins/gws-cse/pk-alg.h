/* The Gmail (stage 2) algorithms: the `algorithm` strings of privatekeydecrypt and
 * privatekeysign (specs/gws-cse.md "Stage 2") and the PKCS#11 mechanism each one becomes. Pure,
 * so the table is unit-tested without a module. */
#ifndef HF_CSE_PK_ALG_H
#define HF_CSE_PK_ALG_H

#include <stdbool.h>
#include <stddef.h>

#include "pkcs11/module/holdfast.h"

enum hf_cse_pk_use {
    HF_CSE_PK_DECRYPT, /* privatekeydecrypt, privilegedprivatekeydecrypt */
    HF_CSE_PK_SIGN     /* privatekeysign */
};

enum hf_cse_pk_scheme {
    HF_CSE_PK_PKCS1, /* RSAES-PKCS1-v1_5, or RSASSA-PKCS1-v1_5 over a DigestInfo */
    HF_CSE_PK_OAEP,  /* RSAES-OAEP, MGF1 with the OAEP hash */
    HF_CSE_PK_PSS    /* RSASSA-PSS over the digest, MGF1 with the same hash */
};

struct hf_cse_pk_alg {
    const char *name; /* as the API spells it */
    enum hf_cse_pk_use use;
    enum hf_cse_pk_scheme scheme;
    CK_MECHANISM_TYPE mechanism; /* CKM_RSA_PKCS, CKM_RSA_PKCS_OAEP, CKM_RSA_PKCS_PSS */
    CK_MECHANISM_TYPE hash;      /* CKM_SHA_1, CKM_SHA256, CKM_SHA512; 0 for PKCS#1 decrypt */
    CK_RSA_PKCS_MGF_TYPE mgf;    /* CKG_MGF1_SHA*, matching hash; 0 when none */
    const char *md;              /* OpenSSL's name of hash; NULL when none */
    size_t hash_len;             /* bytes of hash: the digest's length and PSS's default salt */
};

/* The algorithm named name for use (ASCII case-insensitive, as Java's JCA names are, since the
 * Gmail client spells them as Java does), or NULL: an unknown name, or one of the other use. */
const struct hf_cse_pk_alg *hf_cse_pk_alg_find(const char *name, enum hf_cse_pk_use use);

/* The RSASSA-PKCS1-v1_5 input for a digest made with alg's hash: the DER DigestInfo
 * (RFC 8017 9.2 step 2), built by OpenSSL's ASN.1 encoder, into a new buffer (OPENSSL_free()) of
 * *len bytes. NULL when alg has no hash, digest_len is not its length, or out of memory. */
unsigned char *hf_cse_pk_digest_info(const struct hf_cse_pk_alg *alg, const unsigned char *digest,
                                     size_t digest_len, size_t *len);

/* A mechanism and the parameters it points to, filled by hf_cse_pk_mechanism. */
struct hf_cse_pk_mech {
    CK_MECHANISM mech;
    union {
        CK_RSA_PKCS_OAEP_PARAMS oaep;
        CK_RSA_PKCS_PSS_PARAMS pss;
    } params;
};

/* alg's mechanism into m (which must not move while m->mech is used): OAEP's source data is
 * label[0..label_len) (rsa_oaep_label; borrowed), PSS's salt is salt_len bytes. */
void hf_cse_pk_mechanism(const struct hf_cse_pk_alg *alg, const unsigned char *label,
                         size_t label_len, CK_ULONG salt_len, struct hf_cse_pk_mech *m);

#endif /* HF_CSE_PK_ALG_H */
