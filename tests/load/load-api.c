/* hf-load's request builders: one entry per cloud API in hf_load_apis[]. Each plugin issue adds
 * its own rows here (build a request, judge the reply) and a seeds file stem for its plots.
 *
 * Builders run on every client thread at once: the shared state is read-only after init, a VU's
 * own state is touched by its thread only, and per-thread caches are _Thread_local. */
#include "hf-build.h"

#include "tests/load/load.h"
#include "gateway/plugins/aws-xks/sigv4.h"

#include <errno.h>
#include <json.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || errlen == 0) return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- static: a GET of the URL itself (the ceiling test against nginx) -------------------- */

struct static_state {
    struct hf_buf request; /* the same bytes every time, as wrk sends them */
};

static int static_init(const struct hf_load_config *cfg, void **state, char *err, size_t errlen)
{
    struct static_state *s = calloc(1, sizeof(*s));

    if (!s ||
        hf_buf_printf(&s->request, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n",
                      cfg->target.path[0] ? cfg->target.path : "/", cfg->target.authority) != 0) {
        if (s) hf_buf_free(&s->request);
        free(s);
        fail(err, errlen, "out of memory");
        return -1;
    }
    *state = s;
    return 0;
}

static void static_free(void *state)
{
    struct static_state *s = state;

    if (!s) return;
    hf_buf_free(&s->request);
    free(s);
}

static int static_build(void *state, void **vu_state, struct hf_buf *out, bool *setup)
{
    struct static_state *s = state;

    *setup = false;
    return hf_buf_append(out, s->request.data, s->request.len);
}

static const struct hf_load_api api_static = {
    .name = "static",
    .seed_api = NULL,
    .title = "GET of the URL (ceiling test)",
    .limit_ms = 250,
    .init = static_init,
    .free_state = static_free,
    .build = static_build,
};

/* ---- AWS XKS (specs/aws-xks.md) ------------------------------------------------------------ */

enum xks_op { XKS_ENCRYPT, XKS_DECRYPT, XKS_METADATA };

struct xks_state {
    enum xks_op op;
    char akid[64];
    char *secret; /* cleansed on free */
    char region[64];
    char path_base[1536]; /* ".../kms/xks/v1/keys/<keyId>/" */
    char authority[272];
    char key_arn[192];
    FILE *ids; /* --ids: every accepted reply's kmsRequestId (stdio locks it per line) */
};

/* A VU's own: its decrypt input (made by one encrypt, the VU's setup request) and a request id
 * counter. */
struct xks_vu {
    uint64_t seq;
    uint32_t id_salt;
    bool ready;
    char plaintext[48]; /* b64 of the 32 bytes last encrypted */
    char *ciphertext, *iv, *tag, *metadata;
};

#define XKS_PRINCIPAL "arn:aws:iam::111122223333:user/hf-load"
#define XKS_SIGNED_HEADERS "content-type;host;x-amz-date"

static bool chars_ok(const char *s, const char *extra)
{
    for (; *s; s++) {
        char c = *s;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              strchr(extra, c)))
            return false;
    }
    return true;
}

static void xks_free(void *state)
{
    struct xks_state *s = state;

    if (!s) return;
    /* A short file must not pass for the whole account of the run. */
    if (s->ids && fclose(s->ids) != 0) fprintf(stderr, "hf-load: --ids: %s\n", strerror(errno));
    if (s->secret) OPENSSL_clear_free(s->secret, strlen(s->secret));
    OPENSSL_cleanse(s, sizeof(*s));
    free(s);
}

static int xks_init_op(const struct hf_load_config *cfg, void **state, char *err, size_t errlen,
                       enum xks_op op)
{
    struct xks_state *s = NULL;
    const char *colon;
    size_t akid_len;
    int n;

    if (!cfg->key_id || !*cfg->key_id) {
        fail(err, errlen, "--api %s needs --key-id (the XKS key id linked to a Holdfast key)",
             cfg->api->name);
        return -1;
    }
    if (strlen(cfg->key_id) > 128 || !chars_ok(cfg->key_id, "._-")) {
        fail(err, errlen, "--key-id '%s': 1 to 128 characters of A-Z a-z 0-9 . _ -", cfg->key_id);
        return -1;
    }
    if (cfg->prefix &&
        (strlen(cfg->prefix) > 117 || !chars_ok(cfg->prefix, "/_-") || cfg->prefix[0] == '/')) {
        fail(err, errlen,
             "--prefix '%s': up to 117 characters of A-Z a-z 0-9 / _ -, without a "
             "leading slash",
             cfg->prefix);
        return -1;
    }
    if (!cfg->credentials || !*cfg->credentials) {
        fail(err, errlen, "--api %s needs --credentials AKID:SECRET (or HF_LOAD_CREDENTIALS)",
             cfg->api->name);
        return -1;
    }
    colon = strchr(cfg->credentials, ':');
    akid_len = colon ? (size_t)(colon - cfg->credentials) : 0;
    if (!colon || akid_len == 0 || colon[1] == '\0') {
        fail(err, errlen, "--credentials: expected ACCESS_KEY_ID:SECRET (both non-empty)");
        return -1;
    }
    s = calloc(1, sizeof(*s));
    if (!s) goto oom;
    if (akid_len >= sizeof(s->akid)) {
        fail(err, errlen, "--credentials: the access key id is too long");
        goto fail;
    }
    if (strlen(cfg->region) == 0 || strlen(cfg->region) >= sizeof(s->region)) {
        fail(err, errlen, "--region '%s': expected a region name such as us-east-1", cfg->region);
        goto fail;
    }
    s->op = op;
    memcpy(s->akid, cfg->credentials, akid_len);
    s->secret = strdup(colon + 1);
    if (!s->secret) goto oom;
    snprintf(s->region, sizeof(s->region), "%s", cfg->region);
    snprintf(s->authority, sizeof(s->authority), "%s", cfg->target.authority);
    n = snprintf(s->path_base, sizeof(s->path_base), "%s%s%s/kms/xks/v1/keys/%s/", cfg->target.path,
                 cfg->prefix && *cfg->prefix ? "/" : "", cfg->prefix ? cfg->prefix : "",
                 cfg->key_id);
    if (n < 0 || (size_t)n >= sizeof(s->path_base)) {
        fail(err, errlen, "--url path and --prefix are too long");
        goto fail;
    }
    snprintf(s->key_arn, sizeof(s->key_arn), "arn:aws:kms:%s:111122223333:key/hf-load-%.64s",
             s->region, cfg->key_id);
    if (cfg->ids_path && !(s->ids = fopen(cfg->ids_path, "w"))) {
        fail(err, errlen, "--ids %s: %s", cfg->ids_path, strerror(errno));
        goto fail;
    }
    *state = s;
    return 0;
oom:
    fail(err, errlen, "out of memory");
fail:
    xks_free(s);
    return -1;
}

static int xks_init_encrypt(const struct hf_load_config *cfg, void **state, char *err, size_t n)
{
    return xks_init_op(cfg, state, err, n, XKS_ENCRYPT);
}
static int xks_init_decrypt(const struct hf_load_config *cfg, void **state, char *err, size_t n)
{
    return xks_init_op(cfg, state, err, n, XKS_DECRYPT);
}
static int xks_init_metadata(const struct hf_load_config *cfg, void **state, char *err, size_t n)
{
    return xks_init_op(cfg, state, err, n, XKS_METADATA);
}

static void xks_vu_free(void *vu_state)
{
    struct xks_vu *v = vu_state;

    if (!v) return;
    free(v->ciphertext);
    free(v->iv);
    free(v->tag);
    free(v->metadata);
    OPENSSL_cleanse(v, sizeof(*v));
    free(v);
}

/* X-Amz-Date for now, formatted once per second per thread. */
static const char *amz_date(time_t *now_out)
{
    static _Thread_local time_t cached_at = (time_t)-1;
    static _Thread_local char cached[17];
    time_t now = time(NULL);
    struct tm tm;

    if (now != cached_at && gmtime_r(&now, &tm)) {
        strftime(cached, sizeof(cached), "%Y%m%dT%H%M%SZ", &tm);
        cached_at = now;
    }
    *now_out = now;
    return cached;
}

struct sign_headers {
    const char *host;
    const char *date;
};

static const char *sign_header(void *ctx, const char *name)
{
    const struct sign_headers *h = ctx;

    if (strcmp(name, "host") == 0) return h->host;
    if (strcmp(name, "x-amz-date") == 0) return h->date;
    if (strcmp(name, "content-type") == 0) return "application/json";
    return NULL;
}

static int xks_build(void *state, void **vu_state, struct hf_buf *out, bool *setup)
{
    struct xks_state *s = state;
    struct xks_vu *v = *vu_state;
    struct hf_buf body = {0}, path = {0};
    struct sign_headers hdrs;
    struct hf_sigv4_request req;
    unsigned char pt[32];
    const char *op_name;
    char *auth = NULL;
    time_t now;
    int rc = -1;

    if (!v) {
        v = calloc(1, sizeof(*v));
        if (!v) return -1;
        if (RAND_bytes((unsigned char *)&v->id_salt, sizeof(v->id_salt)) != 1) {
            free(v);
            return -1;
        }
        *vu_state = v;
    }
    v->seq++;
    *setup = s->op == XKS_DECRYPT && !v->ready;
    if (s->op == XKS_ENCRYPT || *setup) {
        /* A fresh random plaintext every time: nothing is cached on the server's side. */
        if (RAND_bytes(pt, sizeof(pt)) != 1) goto done;
        EVP_EncodeBlock((unsigned char *)v->plaintext, pt, (int)sizeof(pt));
        op_name = "encrypt";
        if (hf_buf_printf(&body,
                          "{\"requestMetadata\":{\"awsPrincipalArn\":\"" XKS_PRINCIPAL "\","
                          "\"kmsKeyArn\":\"%s\",\"kmsOperation\":\"Encrypt\","
                          "\"kmsRequestId\":\"%08x-%012llx\"},\"plaintext\":\"%s\","
                          "\"encryptionAlgorithm\":\"AES_GCM\"}",
                          s->key_arn, v->id_salt, (unsigned long long)v->seq, v->plaintext) != 0)
            goto done;
    } else if (s->op == XKS_DECRYPT) {
        op_name = "decrypt";
        if (hf_buf_printf(&body,
                          "{\"requestMetadata\":{\"awsPrincipalArn\":\"" XKS_PRINCIPAL "\","
                          "\"kmsKeyArn\":\"%s\",\"kmsOperation\":\"Decrypt\","
                          "\"kmsRequestId\":\"%08x-%012llx\"},\"ciphertext\":\"%s\","
                          "\"encryptionAlgorithm\":\"AES_GCM\",\"initializationVector\":\"%s\","
                          "\"authenticationTag\":\"%s\"",
                          s->key_arn, v->id_salt, (unsigned long long)v->seq, v->ciphertext, v->iv,
                          v->tag) != 0)
            goto done;
        if (v->metadata && hf_buf_printf(&body, ",\"ciphertextMetadata\":\"%s\"", v->metadata) != 0)
            goto done;
        if (hf_buf_append(&body, "}", 1) != 0) goto done;
    } else {
        op_name = "metadata";
        if (hf_buf_printf(&body,
                          "{\"requestMetadata\":{\"awsPrincipalArn\":\"" XKS_PRINCIPAL "\","
                          "\"kmsOperation\":\"DescribeKey\","
                          "\"kmsRequestId\":\"%08x-%012llx\"}}",
                          v->id_salt, (unsigned long long)v->seq) != 0)
            goto done;
    }
    if (hf_buf_printf(&path, "%s%s", s->path_base, op_name) != 0) goto done;

    /* Signed per request with the current time, as KMS does: the proxy checks a 5-minute skew
     * window, so a signature made once would stop working mid-run. */
    hdrs.host = s->authority;
    hdrs.date = amz_date(&now);
    req = (struct hf_sigv4_request){.method = "POST",
                                    .path = path.data,
                                    .query = "",
                                    .header = sign_header,
                                    .header_ctx = &hdrs,
                                    .body = (const unsigned char *)body.data,
                                    .body_len = body.len,
                                    .now = now};
    auth = hf_sigv4_sign(&req, s->akid, s->secret, s->region, "kms-xks-proxy", hdrs.date,
                         XKS_SIGNED_HEADERS);
    if (!auth) goto done;
    if (hf_buf_printf(out,
                      "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nX-Amz-Date: %s\r\nAuthorization: %s\r\n\r\n",
                      path.data, s->authority, body.len, hdrs.date, auth) != 0 ||
        hf_buf_append(out, body.data, body.len) != 0)
        goto done;
    rc = 0;
done:
    OPENSSL_cleanse(pt, sizeof(pt));
    free(auth);
    hf_buf_free(&body);
    hf_buf_free(&path);
    return rc;
}

struct json_object *hf_load_reply_parse(const char *body, size_t len)
{
    struct json_tokener *tok = json_tokener_new();
    struct json_object *o = NULL;

    /* A reply is judged by its first MiB: no API answers more for one key. */
    if (tok) o = json_tokener_parse_ex(tok, body, (int)(len > 1 << 20 ? 1 << 20 : len));
    if (o && !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        o = NULL;
    }
    if (tok) json_tokener_free(tok);
    return o;
}

const char *hf_load_json_str(struct json_object *o, const char *name)
{
    struct json_object *f;

    if (!json_object_object_get_ex(o, name, &f) || !json_object_is_type(f, json_type_string))
        return NULL;
    return json_object_get_string(f);
}

static int xks_check(void *state, void **vu_state, bool setup, const char *body, size_t len)
{
    struct xks_state *s = state;
    struct xks_vu *v = *vu_state;
    struct json_object *o = hf_load_reply_parse(body, len);
    const char *ct, *iv, *tag, *cm, *pt;
    int rc = -1;

    if (!o) goto done;
    if (s->op == XKS_METADATA) {
        rc = hf_load_json_str(o, "keySpec") ? 0 : -1;
        goto done;
    }
    if (s->op == XKS_ENCRYPT || setup) {
        ct = hf_load_json_str(o, "ciphertext");
        iv = hf_load_json_str(o, "initializationVector");
        tag = hf_load_json_str(o, "authenticationTag");
        cm = hf_load_json_str(o, "ciphertextMetadata");
        /* 32 bytes in, 32 bytes out: AES-GCM keeps the length (44 base64 characters). */
        if (!ct || strlen(ct) != 44 || !iv || !tag) goto done;
        if (setup && v) {
            free(v->ciphertext);
            free(v->iv);
            free(v->tag);
            free(v->metadata);
            v->ciphertext = strdup(ct);
            v->iv = strdup(iv);
            v->tag = strdup(tag);
            v->metadata = cm ? strdup(cm) : NULL;
            if (!v->ciphertext || !v->iv || !v->tag || (cm && !v->metadata)) goto done;
            v->ready = true;
        }
        rc = 0;
        goto done;
    }
    /* decrypt: the plaintext must be the one this VU encrypted. */
    pt = hf_load_json_str(o, "plaintext");
    rc = v && pt && strcmp(pt, v->plaintext) == 0 ? 0 : -1;
done:
    json_object_put(o);
    /* One request in flight per VU: seq is still the one this reply answers. An id that cannot
     * be written fails the request, so the file never misses an accepted one silently. */
    if (rc == 0 && s->ids && v &&
        fprintf(s->ids, "%08x-%012llx\n", v->id_salt, (unsigned long long)v->seq) < 0)
        rc = -1;
    return rc;
}

static const struct hf_load_api api_xks_encrypt = {
    .name = "xks-encrypt",
    .seed_api = "aws-xks",
    .title = "AWS XKS encrypt, 32-byte random plaintext",
    .limit_ms = 250,
    .init = xks_init_encrypt,
    .free_state = xks_free,
    .build = xks_build,
    .check = xks_check,
    .free_vu = xks_vu_free,
};

static const struct hf_load_api api_xks_decrypt = {
    .name = "xks-decrypt",
    .seed_api = "aws-xks",
    .title = "AWS XKS decrypt of a 32-byte ciphertext",
    .limit_ms = 250,
    .init = xks_init_decrypt,
    .free_state = xks_free,
    .build = xks_build,
    .check = xks_check,
    .free_vu = xks_vu_free,
};

static const struct hf_load_api api_xks_metadata = {
    .name = "xks-metadata",
    .seed_api = "aws-xks",
    .title = "AWS XKS key metadata",
    .limit_ms = 250,
    .init = xks_init_metadata,
    .free_state = xks_free,
    .build = xks_build,
    .check = xks_check,
    .free_vu = xks_vu_free,
};

/* Plugin issues add their builders here (gcp-ekm 150 ms, gws-cse 200 ms, oci-ekms 100 ms). */
const struct hf_load_api *const hf_load_apis[] = {
    &api_xks_encrypt,
    &api_xks_decrypt,
    &api_xks_metadata,
    &hf_load_api_ekm_wrap,
    &hf_load_api_cse_wrap,
    &hf_load_api_cse_unwrap,
    &hf_load_api_oci_encrypt,
    &hf_load_api_sap_decrypt,
    &hf_load_api_sap_rsa_decrypt,
    &hf_load_api_dke_decrypt,
    &api_static,
    NULL,
};

const struct hf_load_api *hf_load_api_find(const char *name)
{
    size_t i;

    if (!name) return NULL;
    for (i = 0; hf_load_apis[i]; i++)
        if (strcmp(hf_load_apis[i]->name, name) == 0) return hf_load_apis[i];
    return NULL;
}
