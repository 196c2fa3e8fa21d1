/* hf-load's Cloud EKM builder (specs/google-ekm.md): wrap with a bearer ID token hf-load mints
 * once from a test key (RS256, as Google's would be), so the run measures what a reused token
 * costs the gateway: its token cache, not a signature check per call. */
#include "hf-build.h"

#include "tests/load/load.h"

#include <json.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EKM_TOKEN_LIFE_S 3600 /* a run never outlasts it */

struct ekm_state {
    char *token;
    char path[1600]; /* ".../<prefix>/<keyPath>:wrap" */
    char authority[272];
};

static char *b64url(const unsigned char *in, size_t len)
{
    char *out = malloc((len + 2) / 3 * 4 + 1);
    size_t n;

    if (out == NULL) return NULL;
    EVP_EncodeBlock((unsigned char *)out, in, (int)len);
    n = strcspn(out, "=");
    out[n] = '\0';
    for (char *p = out; *p; p++)
        *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
    return out;
}

/* header.claims.signature, RS256 over the first two. NULL on failure. */
static char *token_mint(EVP_PKEY *key, const char *kid, const char *aud, const char *email)
{
    char header[256], claims[1024], *h = NULL, *c = NULL, *sig64 = NULL, *out = NULL;
    unsigned char sig[1024];
    size_t siglen = sizeof(sig), len;
    long now = (long)time(NULL);
    EVP_MD_CTX *md = EVP_MD_CTX_new();

    snprintf(header, sizeof(header), "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"%s\"}", kid);
    snprintf(claims, sizeof(claims),
             "{\"iss\":\"https://accounts.google.com\",\"aud\":\"%s\",\"email\":\"%s\","
             "\"email_verified\":true,\"sub\":\"hf-load\",\"iat\":%ld,\"exp\":%ld}",
             aud, email, now, now + EKM_TOKEN_LIFE_S);
    if (md == NULL || (h = b64url((unsigned char *)header, strlen(header))) == NULL ||
        (c = b64url((unsigned char *)claims, strlen(claims))) == NULL)
        goto done;
    len = strlen(h) + 1 + strlen(c);
    if ((out = malloc(len + 1 + sizeof(sig) * 4 / 3 + 4)) == NULL) goto done;
    snprintf(out, len + 1, "%s.%s", h, c);
    if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
        EVP_DigestSign(md, sig, &siglen, (unsigned char *)out, len) != 1 ||
        (sig64 = b64url(sig, siglen)) == NULL) {
        free(out);
        out = NULL;
        goto done;
    }
    sprintf(out + len, ".%s", sig64);
done:
    EVP_MD_CTX_free(md);
    free(h);
    free(c);
    free(sig64);
    return out;
}

static EVP_PKEY *key_load(const char *path)
{
    FILE *f = fopen(path, "r");
    EVP_PKEY *k;

    if (f == NULL) return NULL;
    k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    return k;
}

static void ekm_free(void *state)
{
    struct ekm_state *s = state;

    if (s == NULL) return;
    free(s->token);
    free(s);
}

static int ekm_init(const struct hf_load_config *cfg, void **state, char *err, size_t errlen)
{
    struct ekm_state *s = calloc(1, sizeof(*s));
    EVP_PKEY *key = NULL;
    int n, rc = -1;

    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (!cfg->key_id || !*cfg->key_id || !cfg->token_key || !cfg->token_kid || !cfg->email) {
        snprintf(err, errlen,
                 "--api %s needs --key-id KEYPATH, --token-key PEM, --token-kid KID and --email",
                 cfg->api->name);
        goto done;
    }
    if ((key = key_load(cfg->token_key)) == NULL) {
        snprintf(err, errlen, "--token-key %s: not a PEM private key", cfg->token_key);
        goto done;
    }
    s->token = token_mint(key, cfg->token_kid, cfg->audience ? cfg->audience : "https://ekm.test",
                          cfg->email);
    if (s->token == NULL) {
        snprintf(err, errlen, "--token-key %s: cannot sign an RS256 token with it", cfg->token_key);
        goto done;
    }
    snprintf(s->authority, sizeof(s->authority), "%s", cfg->target.authority);
    n = snprintf(s->path, sizeof(s->path), "%s%s%s/%s:wrap", cfg->target.path,
                 cfg->prefix && *cfg->prefix ? "/" : "", cfg->prefix ? cfg->prefix : "",
                 cfg->key_id);
    if (n < 0 || (size_t)n >= sizeof(s->path)) {
        snprintf(err, errlen, "--url path, --prefix and --key-id are too long");
        goto done;
    }
    *state = s;
    s = NULL;
    rc = 0;
done:
    EVP_PKEY_free(key);
    ekm_free(s);
    return rc;
}

static int ekm_build(void *state, void **vu_state, struct hf_buf *out, bool *setup)
{
    struct ekm_state *s = state;
    unsigned char pt[32];
    char pt64[48], body[256];
    int n;

    (void)vu_state;
    *setup = false;
    /* A fresh random 32-byte DEK every call, as Cloud KMS wraps them. */
    if (RAND_bytes(pt, sizeof(pt)) != 1) return -1;
    EVP_EncodeBlock((unsigned char *)pt64, pt, (int)sizeof(pt));
    n = snprintf(body, sizeof(body),
                 "{\"plaintext\":\"%s\",\"additionalContext\":{\"accessReasonContext\":"
                 "{\"reason\":\"CUSTOMER_INITIATED_ACCESS\"}}}",
                 pt64);
    if (n < 0 || (size_t)n >= sizeof(body)) return -1;
    return hf_buf_printf(out,
                         "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                         "Content-Length: %d\r\nAuthorization: Bearer %s\r\n\r\n%s",
                         s->path, s->authority, n, s->token, body);
}

/* 32 bytes wrap into a 65-byte blob: 88 base64 characters. */
static int ekm_check(void *state, void **vu_state, bool setup, const char *body, size_t len)
{
    struct json_tokener *tok = json_tokener_new();
    struct json_object *o = NULL, *v;
    int rc = -1;

    (void)state;
    (void)vu_state;
    (void)setup;
    if (tok != NULL) o = json_tokener_parse_ex(tok, body, (int)(len > 4096 ? 4096 : len));
    if (o != NULL && json_object_object_get_ex(o, "wrappedBlob", &v) &&
        json_object_is_type(v, json_type_string) && json_object_get_string_len(v) == 88)
        rc = 0;
    json_object_put(o);
    if (tok != NULL) json_tokener_free(tok);
    return rc;
}

const struct hf_load_api hf_load_api_ekm_wrap = {
    .name = "ekm-wrap",
    .seed_api = "gcp-ekm",
    .title = "Cloud EKM wrap (bearer ID token)",
    .limit_ms = 150,
    .init = ekm_init,
    .free_state = ekm_free,
    .build = ekm_build,
    .check = ekm_check,
};
