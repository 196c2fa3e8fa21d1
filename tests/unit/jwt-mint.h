/* Test fixtures for bearer tokens: keys made in the test, their JWKs, and tokens signed with
 * OpenSSL, so no token, key or JWKS is committed. Shared by the JWT, outbound and bench code. */
#ifndef HF_TEST_JWT_MINT_H
#define HF_TEST_JWT_MINT_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/evp.h>

EVP_PKEY *hf_test_key_rsa(unsigned bits);
EVP_PKEY *hf_test_key_p256(void);
/* base64url without padding; a new string (free()). */
char *hf_test_b64url(const void *data, size_t len);
/* The public JWK of key ({"kty":..., "kid":kid, ...}); a new string (free()). */
char *hf_test_jwk(EVP_PKEY *key, const char *kid);
/* Writes {"keys":[jwks...]} to path. */
bool hf_test_jwks_write(const char *path, const char *const *jwks, size_t n);
/* header.claims.signature: RS256 with an RSA key, ES256 (r || s) with an EC key; the JSON is
 * taken as given. A new string (free()). */
char *hf_test_jwt_mint(EVP_PKEY *key, const char *header, const char *claims);
/* The same signed with HMAC-SHA256 under secret. */
char *hf_test_jwt_hs256(const void *secret, size_t len, const char *header, const char *claims);

#endif
