/* Bearer tokens hf-load mints for the APIs that take them (Cloud EKM, Workspace CSE): a key read
 * from a PEM file, a JOSE header naming its kid, and the signature through tests/unit/jwt-mint.c,
 * the fixture the gateway's own JWT tests sign with, so no builder carries a base64url or JWS
 * encoder of its own. Claims are built with json-c by the caller. */
#include "hf-build.h"

#include "tests/load/load.h"
#include "tests/unit/jwt-mint.h"

#include <json.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>

/* JSON text as a JWS segment takes it: no spaces, and URLs without json-c's "\/". */
#define PLAIN_JSON (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static EVP_PKEY *key_read(const char *path)
{
    FILE *f = fopen(path, "r");
    EVP_PKEY *key;

    if (!f) return NULL;
    key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    return key;
}

char *hf_load_jwt_mint(const char *key_path, const char *kid, struct json_object *claims, char *err,
                       size_t errlen)
{
    struct json_object *header = json_object_new_object();
    EVP_PKEY *key = NULL;
    char *token = NULL;
    bool ec;

    if (!header) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (!(key = key_read(key_path))) {
        snprintf(err, errlen, "%s: not a PEM private key", key_path);
        goto done;
    }
    /* The alg follows the key: jwt-mint signs RS256 with RSA and ES256 with P-256. */
    ec = EVP_PKEY_is_a(key, "EC");
    if (!ec && !EVP_PKEY_is_a(key, "RSA")) {
        snprintf(err, errlen, "%s: an RSA or P-256 key is needed to sign a token", key_path);
        goto done;
    }
    json_object_object_add(header, "alg", json_object_new_string(ec ? "ES256" : "RS256"));
    json_object_object_add(header, "typ", json_object_new_string("JWT"));
    json_object_object_add(header, "kid", json_object_new_string(kid));
    token = hf_test_jwt_mint(key, json_object_to_json_string_ext(header, PLAIN_JSON),
                             json_object_to_json_string_ext(claims, PLAIN_JSON));
    if (!token) snprintf(err, errlen, "%s: cannot sign a token with it", key_path);
done:
    json_object_put(header);
    EVP_PKEY_free(key);
    return token;
}
