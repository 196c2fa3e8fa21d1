/* The wrapped private key's payload, the PKCS#8 rules and the SPKI hash (pk-payload.h). */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/pk-payload.h"

#include "gateway/plugins/gws-cse/payload.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#define LEN_BYTES 2 /* each field's BE16 length */

size_t hf_cse_pk_payload_len(size_t der_len, size_t perimeter_len)
{
    if (perimeter_len > HF_CSE_PK_PERIMETER_MAX) return 0;
    /* Checked before the sum: der_len comes from a request body. */
    if (der_len > HF_CSE_PK_PAYLOAD_MAX - 2 * LEN_BYTES - perimeter_len) return 0;
    return 2 * LEN_BYTES + der_len + perimeter_len;
}

bool hf_cse_pk_payload_write(const unsigned char *der, size_t der_len, const char *perimeter_id,
                             size_t perimeter_len, unsigned char *out)
{
    const struct hf_cse_field f[2] = {{der, der_len},
                                      {(const unsigned char *)perimeter_id, perimeter_len}};
    size_t len = hf_cse_pk_payload_len(der_len, perimeter_len);

    if (out == NULL || der == NULL || der_len == 0 || len == 0) return false;
    return hf_cse_fields_encode(f, 2, out, &len);
}

bool hf_cse_pk_payload_parse(const unsigned char *pt, size_t len, struct hf_cse_pk_payload *out)
{
    struct hf_cse_field f[2];

    if (pt == NULL || out == NULL || len > HF_CSE_PK_PAYLOAD_MAX ||
        !hf_cse_fields_decode(pt, len, f, 2) || f[0].len == 0 || f[1].len > HF_CSE_PK_PERIMETER_MAX)
        return false;
    out->der = f[0].p;
    out->der_len = f[0].len;
    out->perimeter_id = (const char *)f[1].p;
    out->perimeter_len = f[1].len;
    return true;
}

/* PKCS#11 holds two-prime RSA only (CKA_PRIME_1, CKA_PRIME_2); the module signs 2048 to 4096
 * bits. An RSA-PSS-restricted key (its own OID) would not be a plain CKK_RSA object. */
static bool rsa_is_usable(const EVP_PKEY *pkey, char *why, size_t whylen)
{
    BIGNUM *third = NULL;
    int bits = EVP_PKEY_get_bits(pkey);

    if (bits < 2048 || bits > 4096) {
        snprintf(why, whylen, "private_key: RSA of %d bits (2048 to 4096 are served)", bits);
        return false;
    }
    if (EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_FACTOR3, &third)) {
        BN_clear_free(third);
        snprintf(why, whylen, "private_key: multi-prime RSA is not served");
        return false;
    }
    return true;
}

static bool ec_is_usable(const EVP_PKEY *pkey, char *why, size_t whylen)
{
    char group[64] = "";

    /* Explicit curve parameters have no group name: refused with the other curves. */
    if (EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
                                       NULL) &&
        (strcmp(group, SN_X9_62_prime256v1) == 0 || strcmp(group, SN_secp384r1) == 0))
        return true;
    snprintf(why, whylen, "private_key: EC keys on P-256 or P-384 only");
    return false;
}

bool hf_cse_pk_key_is_consistent(EVP_PKEY *pkey)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    bool ok = ctx != NULL && EVP_PKEY_check(ctx) == 1;

    EVP_PKEY_CTX_free(ctx);
    return ok;
}

enum hf_status hf_cse_pk_key_parse(const unsigned char *der, size_t der_len, EVP_PKEY **out,
                                   CK_KEY_TYPE *key_type, char *why, size_t whylen)
{
    const unsigned char *p = der;
    PKCS8_PRIV_KEY_INFO *p8 = NULL;
    EVP_PKEY *pkey = NULL;
    enum hf_status st = HF_STATUS_BAD_REQUEST;

    if (out != NULL) *out = NULL;
    if (der == NULL || out == NULL || key_type == NULL || der_len > LONG_MAX) {
        snprintf(why, whylen, "private_key: missing");
        return HF_STATUS_BAD_REQUEST;
    }
    /* PKCS8_PRIV_KEY_INFO clears its key octets when freed. */
    p8 = d2i_PKCS8_PRIV_KEY_INFO(NULL, &p, (long)der_len);
    if (p8 == NULL || p != der + der_len) {
        snprintf(why, whylen, "private_key: not one DER PKCS#8 PrivateKeyInfo");
        goto done;
    }
    if ((pkey = EVP_PKCS82PKEY(p8)) == NULL) {
        snprintf(why, whylen, "private_key: a PKCS#8 key OpenSSL cannot read");
        goto done;
    }
    switch (EVP_PKEY_get_base_id(pkey)) {
    case EVP_PKEY_RSA:
        if (!rsa_is_usable(pkey, why, whylen)) goto done;
        *key_type = CKK_RSA;
        break;
    case EVP_PKEY_EC:
        if (!ec_is_usable(pkey, why, whylen)) goto done;
        *key_type = CKK_EC;
        break;
    default:
        snprintf(why, whylen, "private_key: RSA or EC keys only");
        goto done;
    }
    *out = pkey;
    pkey = NULL;
    st = HF_STATUS_OK;
done:
    EVP_PKEY_free(pkey);
    PKCS8_PRIV_KEY_INFO_free(p8);
    return st;
}

bool hf_cse_pk_spki_hash(const EVP_PKEY *pkey, unsigned char out[HF_CSE_PK_SPKI_HASH_LEN])
{
    unsigned char *spki = NULL;
    int n;

    if (pkey == NULL || out == NULL) return false;
    if ((n = i2d_PUBKEY(pkey, &spki)) <= 0) return false;
    SHA256(spki, (size_t)n, out);
    OPENSSL_free(spki);
    return true;
}
