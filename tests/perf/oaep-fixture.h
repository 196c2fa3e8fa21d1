/* What rsa-oaep-ref and mhd-floor --rsa-oaep decrypt, so make bench-sap sets the same work side by
 * side: an RSA key and the RSAES-OAEP SHA-256 ciphertext (MGF1 on SHA-256, no label) of a random
 * 32-byte key under it, as SAP's asymmetric-decrypt carries one. */
#ifndef HF_PERF_OAEP_FIXTURE_H
#define HF_PERF_OAEP_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/evp.h>

/* Length of the fixture's plaintext, which every decryption must give back. */
#define HF_PERF_OAEP_PT_LEN 32

/* A new key of bits (the caller frees it) and its ciphertext in ct, of capacity *ctlen (set to
 * the length written). NULL when OpenSSL made neither. */
EVP_PKEY *hf_perf_oaep_fixture(unsigned bits, unsigned char *ct, size_t *ctlen);

/* A context on key set up for the fixture's OAEP (the caller frees it); NULL on failure. */
EVP_PKEY_CTX *hf_perf_oaep_ctx(EVP_PKEY *key, bool decrypt);

#endif /* HF_PERF_OAEP_FIXTURE_H */
