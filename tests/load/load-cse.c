/* hf-load's Workspace CSE builders (specs/gws-cse.md): wrap, and unwrap of the VU's own wrapped
 * key. The authentication token (the customer IdP's) and the authorization token (Google's Drive
 * token issuer, role writer, which both operations accept) are minted once at start, as a
 * client reuses them for a whole document session, so the run measures the gateway's token
 * cache, not a signature check per call. */
#include "hf-build.h"

#include "tests/load/load.h"

#include <json.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CSE_TOKEN_LIFE_S 3600 /* a run never outlasts it */
#define CSE_AUTHZ_ISSUER "gsuitecse-tokenissuer-drive@system.gserviceaccount.com"
#define CSE_RESOURCE "//googleapis.com/drive/files/hf-load"
#define CSE_KEY_LEN 32
/* The spec's blob: 0x01 || BE32 version || IV(12) || C || T(16), C over BE16 len || key ||
 * BE16 len || resource_name || BE16 len || perimeter_id (""). */
#define CSE_BLOB_LEN (1 + 4 + 12 + 2 + CSE_KEY_LEN + 2 + (sizeof(CSE_RESOURCE) - 1) + 2 + 16)
#define B64_LEN(n) (((n) + 2) / 3 * 4)

struct cse_state {
    bool unwrap;
    char path_wrap[1600], path_unwrap[1600]; /* ".../<prefix>/wrap" */
    char authority[272];
    struct hf_buf head; /* the body up to its last member: tokens and reason, shared by all */
};

/* A VU's own: the key it wrapped last (b64) and, for unwrap, the blob of its setup wrap. */
struct cse_vu {
    bool ready;
    char key[B64_LEN(CSE_KEY_LEN) + 1];
    char *wrapped_key;
};

static void cse_free(void *state)
{
    struct cse_state *s = state;

    if (!s) return;
    hf_buf_free(&s->head);
    free(s);
}

static void cse_vu_free(void *vu_state)
{
    struct cse_vu *v = vu_state;

    if (!v) return;
    free(v->wrapped_key);
    OPENSSL_cleanse(v, sizeof(*v));
    free(v);
}

static void claim(struct json_object *o, const char *name, const char *value)
{
    json_object_object_add(o, name, json_object_new_string(value));
}

static char *authn_mint(const struct hf_load_config *cfg, int64_t now, char *err, size_t errlen)
{
    struct json_object *c = json_object_new_object();
    char *token;

    if (!c) return NULL;
    claim(c, "iss", cfg->issuer ? cfg->issuer : "https://idp.hf-load.test");
    claim(c, "aud", cfg->audience ? cfg->audience : "hf-load");
    claim(c, "email", cfg->email);
    claim(c, "sub", "hf-load");
    json_object_object_add(c, "iat", json_object_new_int64(now));
    json_object_object_add(c, "exp", json_object_new_int64(now + CSE_TOKEN_LIFE_S));
    token = hf_load_jwt_mint(cfg->token_key, cfg->token_kid, c, err, errlen);
    json_object_put(c);
    return token;
}

/* Spec "Tokens": the claims a Drive authorization token carries; perimeter_id "" passes the
 * perimeter rule whatever rules exist, and email_type google passes the guest rule. */
static char *authz_mint(const struct hf_load_config *cfg, const char *kacls_url, int64_t now,
                        char *err, size_t errlen)
{
    struct json_object *c = json_object_new_object();
    char *token;

    if (!c) return NULL;
    claim(c, "iss", CSE_AUTHZ_ISSUER);
    claim(c, "aud", "cse-authorization");
    claim(c, "email", cfg->email);
    claim(c, "email_type", "google");
    claim(c, "role", "writer");
    claim(c, "resource_name", CSE_RESOURCE);
    claim(c, "perimeter_id", "");
    claim(c, "kacls_url", kacls_url);
    json_object_object_add(c, "iat", json_object_new_int64(now));
    json_object_object_add(c, "exp", json_object_new_int64(now + CSE_TOKEN_LIFE_S));
    token = hf_load_jwt_mint(cfg->authz_key ? cfg->authz_key : cfg->token_key,
                             cfg->authz_kid ? cfg->authz_kid : cfg->token_kid, c, err, errlen);
    json_object_put(c);
    return token;
}

/* "" or "seg[/seg]" from --prefix, which may be given with its leading slash as in the config. */
static const char *prefix_of(const struct hf_load_config *cfg)
{
    const char *p = cfg->prefix ? cfg->prefix : "";

    while (*p == '/')
        p++;
    return p;
}

static int paths_set(const struct hf_load_config *cfg, struct cse_state *s, char *kacls_url,
                     size_t len)
{
    const char *prefix = prefix_of(cfg);
    const char *sep = *prefix ? "/" : "";
    int a, b, c;

    a = snprintf(s->path_wrap, sizeof(s->path_wrap), "%s%s%s/wrap", cfg->target.path, sep, prefix);
    b = snprintf(s->path_unwrap, sizeof(s->path_unwrap), "%s%s%s/unwrap", cfg->target.path, sep,
                 prefix);
    /* The authz token's kacls_url must be the prefix's configured one byte for byte (check 6). */
    if (cfg->kacls_url)
        c = snprintf(kacls_url, len, "%s", cfg->kacls_url);
    else
        c = snprintf(kacls_url, len, "%s://%s%s%s%s", cfg->target.tls ? "https" : "http",
                     cfg->target.authority, cfg->target.path, sep, prefix);
    snprintf(s->authority, sizeof(s->authority), "%s", cfg->target.authority);
    return a < 0 || b < 0 || c < 0 || (size_t)a >= sizeof(s->path_wrap) ||
                   (size_t)b >= sizeof(s->path_unwrap) || (size_t)c >= len
               ? -1
               : 0;
}

static int cse_init_op(const struct hf_load_config *cfg, void **state, char *err, size_t errlen,
                       bool unwrap)
{
    struct cse_state *s = calloc(1, sizeof(*s));
    char kacls_url[2048], why[512], *authn = NULL, *authz = NULL;
    int64_t now = (int64_t)time(NULL);
    int rc = -1;

    if (!s) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (!cfg->token_key || !cfg->token_kid || !cfg->email || !*cfg->email) {
        snprintf(err, errlen, "--api %s needs --token-key PEM, --token-kid KID and --email",
                 cfg->api->name);
        goto done;
    }
    if ((cfg->authz_key == NULL) != (cfg->authz_kid == NULL)) {
        snprintf(err, errlen, "--authz-key and --authz-kid go together");
        goto done;
    }
    if (paths_set(cfg, s, kacls_url, sizeof(kacls_url)) != 0) {
        snprintf(err, errlen, "--url path, --prefix or --kacls-url is too long");
        goto done;
    }
    if (!(authn = authn_mint(cfg, now, why, sizeof(why)))) {
        snprintf(err, errlen, "--token-key %s", why);
        goto done;
    }
    if (!(authz = authz_mint(cfg, kacls_url, now, why, sizeof(why)))) {
        snprintf(err, errlen, "%s %s", cfg->authz_key ? "--authz-key" : "--token-key", why);
        goto done;
    }
    /* `reason` is opaque to the KACLS (logged, never parsed). */
    if (hf_buf_printf(&s->head,
                      "{\"authentication\":\"%s\",\"authorization\":\"%s\","
                      "\"reason\":\"hf-load\",",
                      authn, authz) != 0) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    s->unwrap = unwrap;
    *state = s;
    s = NULL;
    rc = 0;
done:
    free(authn);
    free(authz);
    cse_free(s);
    return rc;
}

static int cse_init_wrap(const struct hf_load_config *cfg, void **state, char *err, size_t n)
{
    return cse_init_op(cfg, state, err, n, false);
}

static int cse_init_unwrap(const struct hf_load_config *cfg, void **state, char *err, size_t n)
{
    return cse_init_op(cfg, state, err, n, true);
}

/* POST path with the shared tokens and reason, then "member":"value" to close the body. */
static int request_append(const struct cse_state *s, struct hf_buf *out, const char *path,
                          const char *member, const char *value)
{
    size_t body_len = s->head.len + strlen(member) + strlen(value) + sizeof("\"\":\"\"}") - 1;

    if (hf_buf_printf(out,
                      "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n\r\n",
                      path, s->authority, body_len) != 0 ||
        hf_buf_append(out, s->head.data, s->head.len) != 0 ||
        hf_buf_printf(out, "\"%s\":\"%s\"}", member, value) != 0)
        return -1;
    return 0;
}

static int cse_build(void *state, void **vu_state, struct hf_buf *out, bool *setup)
{
    struct cse_state *s = state;
    struct cse_vu *v = *vu_state;
    unsigned char key[CSE_KEY_LEN];
    int rc = -1;

    if (!v) {
        if (!(v = calloc(1, sizeof(*v)))) goto done;
        *vu_state = v;
    }
    *setup = s->unwrap && !v->ready;
    if (s->unwrap && !*setup) {
        rc = request_append(s, out, s->path_unwrap, "wrapped_key", v->wrapped_key);
        goto done;
    }
    /* A fresh random DEK every wrap, as a Drive client makes one per document. */
    if (RAND_bytes(key, sizeof(key)) != 1) goto done;
    EVP_EncodeBlock((unsigned char *)v->key, key, (int)sizeof(key));
    rc = request_append(s, out, s->path_wrap, "key", v->key);
done:
    OPENSSL_cleanse(key, sizeof(key));
    return rc;
}

static int cse_check(void *state, void **vu_state, bool setup, const char *body, size_t len)
{
    struct cse_state *s = state;
    struct cse_vu *v = *vu_state;
    struct json_object *o = hf_load_reply_parse(body, len);
    const char *got;
    int rc = -1;

    if (!o || !v) goto done;
    if (s->unwrap && !setup) {
        /* The key that comes back must be the one this VU wrapped. */
        got = hf_load_json_str(o, "key");
        rc = got && strcmp(got, v->key) == 0 ? 0 : -1;
        goto done;
    }
    got = hf_load_json_str(o, "wrapped_key");
    if (!got || strlen(got) != B64_LEN(CSE_BLOB_LEN)) goto done;
    if (setup) {
        free(v->wrapped_key);
        if (!(v->wrapped_key = strdup(got))) goto done;
        v->ready = true;
    }
    rc = 0;
done:
    json_object_put(o);
    return rc;
}

const struct hf_load_api hf_load_api_cse_wrap = {
    .name = "cse-wrap",
    .seed_api = "gws-cse",
    .title = "Workspace CSE wrap (authn + authz tokens)",
    .limit_ms = 200,
    .init = cse_init_wrap,
    .free_state = cse_free,
    .build = cse_build,
    .check = cse_check,
    .free_vu = cse_vu_free,
};

const struct hf_load_api hf_load_api_cse_unwrap = {
    .name = "cse-unwrap",
    .seed_api = "gws-cse",
    .title = "Workspace CSE unwrap of the VU's own key",
    .limit_ms = 200,
    .init = cse_init_unwrap,
    .free_state = cse_free,
    .build = cse_build,
    .check = cse_check,
    .free_vu = cse_vu_free,
};
