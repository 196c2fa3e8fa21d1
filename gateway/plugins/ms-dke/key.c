/* The public key: GET [/<prefix>]/{keyName} (spec, "Public key"), anonymous, and the key
 * lookups decrypt shares. */
#include "hf-build.h"

#include "gateway/plugins/ms-dke/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>

enum hf_status hf_dke_key_find(struct hf_request *req, const char *name, struct hf_key_ref *key)
{
    enum hf_status st = hf_keys_by_link(HF_DKE_LINK_TYPE, name, key);

    if (st == HF_STATUS_KEY_NOT_FOUND) return hf_request_fail(req, st, "no DKE key %s", name);
    if (st != HF_STATUS_OK)
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE, "DKE key %s cannot be read now", name);
    if (key->blocked)
        return hf_request_fail(req, HF_STATUS_KEY_DISABLED, "the DKE link of key %s is blocked",
                               name);
    /* The spec's Decision: RSA-2048 as Microsoft's reference, larger only after interop. */
    if (key->key_type != CKK_RSA || key->bits < 2048 || key->bits > 4096)
        return hf_request_fail(req, HF_STATUS_KEY_USAGE, "DKE key %s is not RSA-2048..4096", name);
    return HF_STATUS_OK;
}

enum hf_status hf_dke_key_may(struct hf_request *req, const struct hf_key_ref *key,
                              enum hf_key_op op, CK_ULONG state, const char *what)
{
    enum hf_status st = hf_key_may(key, op, state);

    if (st == HF_STATUS_OK) return st;
    return hf_request_fail(req, st, "DKE key %s may not %s: %s", key->name, what,
                           st == HF_STATUS_KEY_USAGE ? "its usage forbids it"
                                                     : "its state forbids it");
}

/* {"kty","n","e","alg","kid"}: n the big-endian modulus in padded standard base64 (not
 * base64url), e a JSON integer, alg RS256 as the tester wants although the key decrypts. */
static struct json_object *jwk_new(EVP_PKEY *pkey, const char *kid)
{
    BIGNUM *n = NULL, *e = NULL;
    unsigned char *mod = NULL;
    struct json_object *o = NULL, *nv = NULL;
    int len;

    if (!EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_N, &n) ||
        !EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_E, &e) || BN_num_bits(e) > 62)
        goto done;
    len = BN_num_bytes(n);
    if ((mod = malloc((size_t)len)) == NULL || BN_bn2bin(n, mod) != len ||
        (nv = hf_json_base64(mod, (size_t)len)) == NULL || (o = json_object_new_object()) == NULL)
        goto done;
    if (json_object_object_add(o, "kty", json_object_new_string("RSA")) != 0 ||
        json_object_object_add(o, "n", nv) != 0)
        goto fail;
    nv = NULL;
    if (json_object_object_add(o, "e", json_object_new_int64((int64_t)BN_get_word(e))) != 0 ||
        json_object_object_add(o, "alg", json_object_new_string("RS256")) != 0 ||
        json_object_object_add(o, "kid", json_object_new_string(kid)) != 0)
        goto fail;
    goto done;
fail:
    json_object_put(o);
    o = NULL;
done:
    json_object_put(nv);
    free(mod);
    BN_free(n);
    BN_free(e);
    return o;
}

static struct json_object *reply_new(EVP_PKEY *pkey, const char *kid, const char *exp)
{
    struct json_object *o = json_object_new_object(), *jwk = jwk_new(pkey, kid), *cache = NULL;

    if (o == NULL || jwk == NULL || (cache = json_object_new_object()) == NULL ||
        json_object_object_add(cache, "exp", json_object_new_string(exp)) != 0 ||
        json_object_object_add(o, "key", jwk) != 0)
        goto fail;
    jwk = NULL;
    if (json_object_object_add(o, "cache", cache) == 0) return o;
fail:
    json_object_put(cache);
    json_object_put(jwk);
    json_object_put(o);
    return NULL;
}

enum hf_status hf_dke_public_key(struct hf_dke_state *st, struct hf_request *req,
                                 const struct hf_dke_target *t)
{
    const struct hf_dke_key *policy = hf_dke_config_key(&st->cfg, t->name);
    struct hf_key_ref key;
    struct json_object *reply;
    EVP_PKEY *pkey;
    char kid[1024], exp[20];
    enum hf_status s;

    /* A key this service does not serve answers like one that does not exist. */
    if (policy == NULL)
        return hf_request_fail(req, HF_STATUS_KEY_NOT_FOUND, "no DKE key %s", t->name);
    if ((s = hf_dke_key_find(req, t->name, &key)) != HF_STATUS_OK) return s;
    /* New content must not be protected with a key that may no longer encrypt. */
    if ((s = hf_dke_key_may(req, &key, HF_KEY_OP_ENCRYPT, 0, "publish its key")) != HF_STATUS_OK)
        return s;
    if ((size_t)snprintf(kid, sizeof(kid), "%s/%s/%s", st->cfg.base_url, t->name,
                         key.version_uuid) >= sizeof(kid) ||
        !hf_dke_cache_exp_format(hf_wall_s() + (int64_t)hf_dke_key_cache_exp_s(&st->cfg, policy),
                                 exp))
        return hf_request_fail(req, HF_STATUS_INTERNAL, "the key URL or cache.exp cannot be made");
    pkey = hf_rsa_public_pkey(key.current_pub != CK_INVALID_HANDLE ? key.current_pub : key.current);
    if (pkey == NULL)
        return hf_request_fail(req, HF_STATUS_UNAVAILABLE, "the public key of %s cannot be read",
                               t->name);
    reply = reply_new(pkey, kid, exp);
    EVP_PKEY_free(pkey);
    if (reply == NULL) return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    /* A public key holds nothing an auditor needs, and anyone may ask for it. */
    hf_request_set_unaudited(req);
    hf_reply_json(req, 200, reply);
    return HF_STATUS_OK;
}
