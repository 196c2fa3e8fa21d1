/* hf-load's SAP HYOK builders (specs/sap-hyok.md, "Limits": the OCI k6 shape on
 * symmetric-decrypt and on asymmetric-decrypt with RSAES_OAEP_SHA_256), over mutual TLS with the
 * client certificate given by --cert/--key, as SAP Data Custodian presents its own.
 *
 * Each VU prepares its ciphertext once, with one unmeasured request, then only decrypts it:
 *   sap-decrypt      symmetric-encrypt of a random 32-byte key (the API's own encrypt route),
 *                    then symmetric-decrypt of its ciphertext, iv, tag and key_version_id;
 *   sap-rsa-decrypt  get-public-key, OpenSSL's RSA-OAEP SHA-256 of a random 32-byte key on that
 *                    public key (as SAP would encrypt), then asymmetric-decrypt of the 384 bytes.
 * Every decrypt must give back the VU's own key. The decrypt request is the same bytes for the
 * whole run, so it is built once per VU. */
#include "hf-build.h"

#include "tests/load/load.h"

#include <json.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAP_DEFAULT_PREFIX "/api/v1/cckm/sap/hyok/v1"
#define SAP_KEY_LEN 32
#define SAP_RSA_BYTES 384 /* RSA-3072: what the seeds' RSA table and the spec's load check use */
#define B64_LEN(n) (((n) + 2) / 3 * 4)

struct sap_state {
    bool rsa;
    char base[1600]; /* "<url path><prefix>/keystores/<id>/keys/<key>/" */
    char authority[272];
    char *metadata; /* "\"request_metadata\":{...}" shared by every request */
};

struct sap_vu {
    bool ready;
    char key[B64_LEN(SAP_KEY_LEN) + 1]; /* b64 of the plaintext the decrypt must give back */
    struct hf_buf request;              /* the VU's decrypt, once prepared */
};

static void sap_free(void *state)
{
    struct sap_state *s = state;

    if (!s) return;
    free(s->metadata);
    free(s);
}

static void sap_vu_free(void *vu_state)
{
    struct sap_vu *v = vu_state;

    if (!v) return;
    hf_buf_free(&v->request);
    OPENSSL_cleanse(v, sizeof(*v));
    free(v);
}

static char *metadata_make(const struct hf_load_config *cfg)
{
    struct json_object *o = json_object_new_object();
    struct hf_buf b = {0};

    if (!o) return NULL;
    json_object_object_add(o, "sap_tenant_id", json_object_new_string(cfg->tenant));
    json_object_object_add(o, "sap_user_type", json_object_new_string("USER_DEV"));
    json_object_object_add(o, "sap_request_id", json_object_new_string("hf-load"));
    if (hf_buf_printf(&b, "\"request_metadata\":%s",
                      json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) != 0)
        hf_buf_free(&b);
    json_object_put(o);
    return b.data;
}

static int sap_init_op(const struct hf_load_config *cfg, void **state, char *err, size_t errlen,
                       bool rsa)
{
    struct sap_state *s = calloc(1, sizeof(*s));
    const char *prefix = cfg->prefix ? cfg->prefix : SAP_DEFAULT_PREFIX;
    int n, rc = -1;

    if (!s) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (!cfg->keystore_id || !*cfg->keystore_id || !cfg->key_id || !*cfg->key_id || !cfg->tenant ||
        !*cfg->tenant) {
        snprintf(err, errlen, "--api %s needs --keystore-id UUID, --key-id UUID and --tenant ID",
                 cfg->api->name);
        goto done;
    }
    if (!cfg->client_cert) {
        snprintf(err, errlen,
                 "--api %s needs --cert PEM (and --key PEM): SAP authenticates by mutual TLS",
                 cfg->api->name);
        goto done;
    }
    n = snprintf(s->base, sizeof(s->base), "%s%s%s/keystores/%s/keys/%s/", cfg->target.path,
                 *prefix && *prefix != '/' ? "/" : "", prefix, cfg->keystore_id, cfg->key_id);
    if (n < 0 || (size_t)n >= sizeof(s->base)) {
        snprintf(err, errlen, "--url path, --prefix, --keystore-id and --key-id are too long");
        goto done;
    }
    if (!(s->metadata = metadata_make(cfg))) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    snprintf(s->authority, sizeof(s->authority), "%s", cfg->target.authority);
    s->rsa = rsa;
    *state = s;
    s = NULL;
    rc = 0;
done:
    sap_free(s);
    return rc;
}

static int sap_init_aes(const struct hf_load_config *cfg, void **state, char *err, size_t n)
{
    return sap_init_op(cfg, state, err, n, false);
}

static int sap_init_rsa(const struct hf_load_config *cfg, void **state, char *err, size_t n)
{
    return sap_init_op(cfg, state, err, n, true);
}

/* POST base+route with {request_metadata, members}; members is "" or ",\"a\":..." text. */
static int request_append(const struct sap_state *s, struct hf_buf *out, const char *route,
                          const char *members)
{
    size_t len = 1 + strlen(s->metadata) + strlen(members) + 1;

    return hf_buf_printf(out,
                         "POST %s%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                         "Content-Length: %zu\r\n\r\n{%s%s}",
                         s->base, route, s->authority, len, s->metadata, members);
}

static int sap_build(void *state, void **vu_state, struct hf_buf *out, bool *setup)
{
    struct sap_state *s = state;
    struct sap_vu *v = *vu_state;
    unsigned char key[SAP_KEY_LEN];
    char members[128];
    int rc = -1;

    if (!v) {
        if (!(v = calloc(1, sizeof(*v)))) return -1;
        *vu_state = v;
    }
    *setup = !v->ready;
    if (v->ready) return hf_buf_append(out, v->request.data, v->request.len);
    if (s->rsa) return request_append(s, out, "get-public-key", "");
    /* A fresh random key per VU, as a data key SAP would have the keystore wrap. */
    if (RAND_bytes(key, sizeof(key)) != 1) goto done;
    EVP_EncodeBlock((unsigned char *)v->key, key, (int)sizeof(key));
    snprintf(members, sizeof(members), ",\"plaintext\":\"%s\"", v->key);
    rc = request_append(s, out, "symmetric-encrypt", members);
done:
    OPENSSL_cleanse(key, sizeof(key));
    OPENSSL_cleanse(members, sizeof(members));
    return rc;
}

/* The symmetric-encrypt reply's four fields make the VU's decrypt. */
static int aes_prepare(const struct sap_state *s, struct sap_vu *v, struct json_object *o)
{
    const char *ct = hf_load_json_str(o, "ciphertext"), *iv = hf_load_json_str(o, "iv");
    const char *tag = hf_load_json_str(o, "tag"), *ver = hf_load_json_str(o, "key_version_id");
    struct hf_buf m = {0};
    int rc;

    if (!ct || strlen(ct) != B64_LEN(SAP_KEY_LEN) || !iv || strlen(iv) != B64_LEN(12) || !tag ||
        strlen(tag) != B64_LEN(16) || !ver || strchr(ver, '"') || strchr(ver, '\\'))
        return -1;
    rc = hf_buf_printf(&m,
                       ",\"ciphertext\":\"%s\",\"iv\":\"%s\",\"tag\":\"%s\","
                       "\"key_version_id\":\"%s\"",
                       ct, iv, tag, ver) != 0 ||
                 request_append(s, &v->request, "symmetric-decrypt", m.data) != 0
             ? -1
             : 0;
    hf_buf_free(&m);
    return rc;
}

static EVP_PKEY *pem_public(const char *pem)
{
    BIO *bio = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *pub = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;

    BIO_free(bio);
    return pub;
}

/* OAEP SHA-256 of a fresh key on the published RSA-3072 key makes the VU's decrypt. */
static int rsa_prepare(const struct sap_state *s, struct sap_vu *v, struct json_object *o)
{
    const char *pem = hf_load_json_str(o, "public_key");
    const char *ver = hf_load_json_str(o, "key_version_id");
    EVP_PKEY *pub = pem ? pem_public(pem) : NULL;
    unsigned char key[SAP_KEY_LEN], *ct = NULL;
    size_t ctlen = 0;
    char *ct64 = NULL;
    struct hf_buf m = {0};
    int rc = -1;

    if (!pub || EVP_PKEY_get_size(pub) != SAP_RSA_BYTES || !ver || strchr(ver, '"') ||
        strchr(ver, '\\') || RAND_bytes(key, sizeof(key)) != 1 ||
        hf_load_rsa_oaep256_encrypt(pub, key, sizeof(key), &ct, &ctlen) != 0 ||
        !(ct64 = hf_load_b64(ct, ctlen)))
        goto done;
    EVP_EncodeBlock((unsigned char *)v->key, key, (int)sizeof(key));
    if (hf_buf_printf(&m,
                      ",\"ciphertext\":\"%s\",\"algorithm\":\"RSAES_OAEP_SHA_256\","
                      "\"key_version_id\":\"%s\"",
                      ct64, ver) != 0 ||
        request_append(s, &v->request, "asymmetric-decrypt", m.data) != 0)
        goto done;
    rc = 0;
done:
    OPENSSL_cleanse(key, sizeof(key));
    hf_buf_free(&m);
    free(ct64);
    free(ct);
    EVP_PKEY_free(pub);
    return rc;
}

static int sap_check(void *state, void **vu_state, bool setup, const char *body, size_t len)
{
    struct sap_state *s = state;
    struct sap_vu *v = *vu_state;
    struct json_object *o = hf_load_reply_parse(body, len);
    const char *pt;
    int rc = -1;

    if (!o || !v) goto done;
    if (!setup) {
        pt = hf_load_json_str(o, "plaintext");
        rc = pt && strcmp(pt, v->key) == 0 ? 0 : -1;
        goto done;
    }
    v->request.len = 0;
    rc = s->rsa ? rsa_prepare(s, v, o) : aes_prepare(s, v, o);
    v->ready = rc == 0;
done:
    json_object_put(o);
    return rc;
}

const struct hf_load_api hf_load_api_sap_decrypt = {
    .name = "sap-decrypt",
    .seed_api = "sap-hyok",
    .title = "SAP HYOK AES-256 symmetric-decrypt (mutual TLS)",
    .limit_ms = 100,
    .init = sap_init_aes,
    .free_state = sap_free,
    .build = sap_build,
    .check = sap_check,
    .free_vu = sap_vu_free,
};

const struct hf_load_api hf_load_api_sap_rsa_decrypt = {
    .name = "sap-rsa-decrypt",
    .seed_api = "sap-hyok",
    .title = "SAP HYOK RSA-3072 OAEP SHA-256 asymmetric-decrypt (mutual TLS)",
    .limit_ms = 100,
    .init = sap_init_rsa,
    .free_state = sap_free,
    .build = sap_build,
    .check = sap_check,
    .free_vu = sap_vu_free,
};
