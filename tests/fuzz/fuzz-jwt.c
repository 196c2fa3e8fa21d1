/* libFuzzer target for gateway/jwt.c's parse step and claims rules: the compact JWS split, the
 * base64url segments, the header and claims JSON, then the issuer's iss/aud/exp/nbf/iat and
 * required-claim checks at a fixed time. No signature is needed to reach the claims rules (they
 * run on what the parse gives); the input then goes through a whole hf_jwt_verify as well (a
 * P-256 key set made at start), so the kid lookup, the r || s conversion and the cache see it.
 *
 * Checks besides "no crash, no leak, no UB": an accepted parse names RS256 or ES256, has a kid
 * and an iss, and its signing input ends before the token; no random input verifies. */
#include "hf-build.h"

#include "gateway/jwt.h"
#include "tests/unit/jwt-mint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const auds[] = {"aud-a", "aud-b"}, *const req[] = {"email"};
static const struct hf_jwt_issuer issuer = {.issuer = "https://issuer.test",
                                            .audiences = auds,
                                            .naudiences = 2,
                                            .algs = HF_JWT_RS256 | HF_JWT_ES256,
                                            .required = req,
                                            .nrequired = 1};
static struct hf_jwt_verifier *verifier;

static int64_t fixed_now(void)
{
    return 1900000000;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct hf_jwt_issuer iss = issuer;
    static char path[64];
    EVP_PKEY *k = hf_test_key_p256();
    char *jwk = hf_test_jwk(k, "ec");
    const char *keys[] = {jwk};

    (void)argc, (void)argv;
    snprintf(path, sizeof(path), "/tmp/hf-fuzz-jwt-%d.json", (int)getpid());
    if (!k || !jwk || !hf_test_jwks_write(path, keys, 1)) abort();
    iss.jwks = path;
    if (!(verifier = hf_jwt_verifier_new()) || !hf_jwt_verifier_add(verifier, &iss, NULL, 0))
        abort();
    hf_jwt_verifier_set_clock(verifier, fixed_now);
    unlink(path);
    free(jwk);
    EVP_PKEY_free(k);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hf_jws jws;
    struct hf_jwt *t = NULL;
    char why[256];

    if (hf_jws_parse((const char *)data, size, &jws, why, sizeof(why)) == HF_STATUS_OK) {
        if ((jws.alg != HF_JWT_RS256 && jws.alg != HF_JWT_ES256) || !jws.kid || !jws.iss ||
            jws.signed_len >= size || !jws.sig || jws.siglen == 0)
            abort();
        hf_jwt_claims_are_valid(&issuer, jws.claims, fixed_now(), why, sizeof(why));
        hf_jws_clear(&jws);
    }
    if (hf_jwt_verify(verifier, (const char *)data, size, &t, why, sizeof(why)) == HF_STATUS_OK)
        abort(); /* a forged ES256 signature */
    return 0;
}
