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

static int jwk_append(struct hf_buf *set, const char *path, const char *kid, char *err,
                      size_t errlen)
{
    EVP_PKEY *key = key_read(path);
    char *jwk = key ? hf_test_jwk(key, kid) : NULL;
    int rc = -1;

    if (!key)
        snprintf(err, errlen, "%s: not a PEM private key", path);
    else if (!jwk || hf_buf_printf(set, "%s%s", set->len ? "," : "{\"keys\":[", jwk) != 0)
        snprintf(err, errlen, "%s: no JWK for it", path);
    else
        rc = 0;
    free(jwk);
    EVP_PKEY_free(key);
    return rc;
}

int hf_load_jwks_print(FILE *out, const struct hf_load_config *cfg, char *err, size_t errlen)
{
    struct hf_buf set = {0};
    int rc = -1;

    /* Whole or nothing: a key that cannot be read leaves no half set on the output. */
    if (jwk_append(&set, cfg->token_key, cfg->token_kid, err, errlen) != 0 ||
        (cfg->authz_key && jwk_append(&set, cfg->authz_key, cfg->authz_kid, err, errlen) != 0))
        goto done;
    if (hf_buf_append(&set, "]}\n", 3) != 0 || fwrite(set.data, 1, set.len, out) != set.len) {
        snprintf(err, errlen, "cannot write the key set");
        goto done;
    }
    rc = 0;
done:
    hf_buf_free(&set);
    return rc;
}
