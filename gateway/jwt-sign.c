/* Minting RS256 tokens with a key the module holds (CSE delegated and migration tokens), and
 * the public JWK a verifier needs for them: the private key never leaves the module, and the
 * signature is the request's audited key operation (hf_p11_begin). */
#include "hf-build.h"

#include "gateway/p11.h"
#include "gateway/plugin.h"
#include "gateway/why.h"

#include <stdlib.h>
#include <string.h>

/* RSA up to 8192 bits, the largest modulus a JWKS we read accepts (gateway/jwks.c). */
#define RSA_MAX_BYTES 1024u

/* Compact and without json-c's "\/": the segment is what the verifier hashes, so it must be
 * exactly what we serialised; slashes stay readable in kacls_url and resource_name. */
static char *segment(const struct json_object *o)
{
    const char *text = json_object_to_json_string_ext(
        (struct json_object *)o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

    return text ? hf_base64url_encode((const unsigned char *)text, strlen(text)) : NULL;
}

/* "header.payload": the JWS signing input (RFC 7515 section 5.1). */
static char *signing_input(const char *kid, const struct json_object *claims)
{
    struct json_object *header = json_object_new_object();
    char *h = NULL, *p = NULL, *input = NULL;
    size_t hl, pl;

    if (!header || json_object_object_add(header, "alg", json_object_new_string("RS256")) ||
        json_object_object_add(header, "typ", json_object_new_string("JWT")) ||
        json_object_object_add(header, "kid", json_object_new_string(kid)))
        goto done;
    if (!(h = segment(header)) || !(p = segment(claims))) goto done;
    hl = strlen(h);
    pl = strlen(p);
    if (!(input = malloc(hl + 1 + pl + 1))) goto done;
    memcpy(input, h, hl);
    input[hl] = '.';
    memcpy(input + hl + 1, p, pl + 1);
done:
    json_object_put(header);
    free(h);
    free(p);
    return input;
}

static CK_RV rsa_sign(struct hf_request *req, const char *operation, CK_OBJECT_HANDLE key,
                      const char *input, unsigned char *sig, CK_ULONG *siglen)
{
    CK_FUNCTION_LIST_PTR p11 = hf_p11_functions();
    CK_MECHANISM mech = {CKM_SHA256_RSA_PKCS, NULL, 0};
    CK_SESSION_HANDLE s;
    CK_RV rv;

    if (!p11) return CKR_CRYPTOKI_NOT_INITIALIZED;
    if ((rv = hf_p11_begin(req, operation, &s)) != CKR_OK) return rv;
    if ((rv = p11->C_SignInit(s, &mech, key)) != CKR_OK) return rv;
    /* One call with a buffer for the largest modulus: no size query, so the one C_Sign is
     * the one audited operation. */
    return p11->C_Sign(s, (CK_BYTE_PTR)input, strlen(input), sig, siglen);
}

HF_PLUGIN_EXPORT enum hf_status hf_jwt_sign_rs256(struct hf_request *req, const char *operation,
                                                  CK_OBJECT_HANDLE key, const char *kid,
                                                  const struct json_object *claims, char **token,
                                                  char *why, size_t whylen)
{
    unsigned char sig[RSA_MAX_BYTES];
    CK_ULONG siglen = sizeof(sig);
    char *input = NULL, *s = NULL;
    enum hf_status st = HF_STATUS_INTERNAL;
    size_t il, sl;
    CK_RV rv;

    if (token) *token = NULL;
    if (!req || !kid || !claims || !token || !json_object_is_type(claims, json_type_object)) {
        hf_why(why, whylen, "a token needs a request, a kid, claims and somewhere to go");
        return HF_STATUS_INTERNAL;
    }
    if (!(input = signing_input(kid, claims))) {
        hf_why(why, whylen, "out of memory");
        goto done;
    }
    if ((rv = rsa_sign(req, operation, key, input, sig, &siglen)) != CKR_OK) {
        st = hf_status_from_ckr(rv);
        hf_why(why, whylen, "RS256 signature: CKR 0x%lx", (unsigned long)rv);
        goto done;
    }
    if (!(s = hf_base64url_encode(sig, siglen))) {
        hf_why(why, whylen, "out of memory");
        goto done;
    }
    il = strlen(input);
    sl = strlen(s);
    if (!(*token = malloc(il + 1 + sl + 1))) {
        hf_why(why, whylen, "out of memory");
        goto done;
    }
    memcpy(*token, input, il);
    (*token)[il] = '.';
    memcpy(*token + il + 1, s, sl + 1);
    st = HF_STATUS_OK;
done:
    free(input);
    free(s);
    return st;
}

/* A JWK integer: base64url of its unsigned big-endian bytes, no leading zeros (RFC 7518
 * section 6.3.1). */
static struct json_object *jwk_uint(const unsigned char *b, CK_ULONG len)
{
    struct json_object *o = NULL;
    char *text;

    while (len > 1 && b[0] == 0) {
        b++;
        len--;
    }
    if ((text = hf_base64url_encode(b, len))) o = json_object_new_string(text);
    free(text);
    return o;
}

HF_PLUGIN_EXPORT struct json_object *hf_jwk_rsa_public(CK_OBJECT_HANDLE key, const char *kid)
{
    unsigned char n[RSA_MAX_BYTES], e[16];
    CK_ULONG nlen = sizeof(n), elen = sizeof(e);
    struct json_object *jwk = NULL;

    if (!kid || hf_gw_rsa_public_read(key, n, &nlen, e, &elen) != CKR_OK || nlen == 0 || elen == 0)
        return NULL;
    if (!(jwk = json_object_new_object()) ||
        json_object_object_add(jwk, "kty", json_object_new_string("RSA")) ||
        json_object_object_add(jwk, "alg", json_object_new_string("RS256")) ||
        json_object_object_add(jwk, "use", json_object_new_string("sig")) ||
        json_object_object_add(jwk, "kid", json_object_new_string(kid)) ||
        json_object_object_add(jwk, "n", jwk_uint(n, nlen)) ||
        json_object_object_add(jwk, "e", jwk_uint(e, elen)) || !json_object_object_get(jwk, "n") ||
        !json_object_object_get(jwk, "e")) {
        json_object_put(jwk);
        return NULL;
    }
    return jwk;
}
