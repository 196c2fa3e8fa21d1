/* hf-load's Cloud EKM builder (specs/google-ekm.md): wrap with a bearer ID token hf-load mints
 * once from a test key (RS256, as Google's would be), so the run measures what a reused token
 * costs the gateway: its token cache, not a signature check per call. */
#include "hf-build.h"

#include "tests/load/load.h"

#include <json.h>
#include <openssl/evp.h>
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

/* The ID token Cloud EKM's service agent would present: Google's issuer, the endpoint's audience.
 */
static char *token_mint(const struct hf_load_config *cfg, char *err, size_t errlen)
{
    struct json_object *claims = json_object_new_object();
    int64_t now = (int64_t)time(NULL);
    char *token = NULL;

    if (!claims) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    json_object_object_add(claims, "iss", json_object_new_string("https://accounts.google.com"));
    json_object_object_add(
        claims, "aud", json_object_new_string(cfg->audience ? cfg->audience : "https://ekm.test"));
    json_object_object_add(claims, "email", json_object_new_string(cfg->email));
    json_object_object_add(claims, "email_verified", json_object_new_boolean(1));
    json_object_object_add(claims, "sub", json_object_new_string("hf-load"));
    json_object_object_add(claims, "iat", json_object_new_int64(now));
    json_object_object_add(claims, "exp", json_object_new_int64(now + EKM_TOKEN_LIFE_S));
    token = hf_load_jwt_mint(cfg->token_key, cfg->token_kid, claims, err, errlen);
    json_object_put(claims);
    return token;
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
    char why[512];
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
    if ((s->token = token_mint(cfg, why, sizeof(why))) == NULL) {
        snprintf(err, errlen, "--token-key %s", why);
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
    struct json_object *o = hf_load_reply_parse(body, len);
    const char *blob = o ? hf_load_json_str(o, "wrappedBlob") : NULL;
    int rc = blob && strlen(blob) == 88 ? 0 : -1;

    (void)state;
    (void)vu_state;
    (void)setup;
    json_object_put(o);
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
