/* A test-only holdfastd plugin ("test") that exercises the seam of gateway/plugin.h the way a
 * cloud plugin does, with none of a cloud's protocol: tests/integration/gateway.sh drives it.
 *
 *   POST /test/v1/links/{linkId}/encrypt   {"plaintext": b64} -> AES-256-GCM under the key the
 *        link ([test] link_type, default aws-xks)/linkId points to, through hf_keys_by_link +
 * hf_p11_begin (the core writes the request's audit record); a blocked link fails with KEY_DISABLED
 *   POST /test/v1/links/{linkId}/decrypt   {"ciphertext","iv","keyVersion"}: the version's object
 *        through hf_keys_version (old versions after a rotation)
 *   GET  /test/v1/fail                     fails with BAD_REQUEST before any key operation (the
 *        gateway writes the record)
 *   GET  /test/v1/config                   {"greeting": ...} from [test] greeting (SIGHUP)
 *   GET  /test/{rest*}/echo/{id}           the captures, the query, a header and the client
 *        certificate's subject and SANs
 *   POST /test/v1/post-only                {"ok": true}; any other method gets a 405
 *   GET  /test/v1/versions/{versionUuid}   the key version a version UUID names, through
 *        hf_keys_by_version_uuid + hf_keys_version_info, and what hf_key_may says of it
 *   GET, OPTIONS /{any*}                   a catch-all that accepts only paths under [test]
 *        catchall_prefix (none: it declines every path), as gcp-ekm and gws-cse do on one
 *        listener: GET answers {"catchall": path} with header X-Test-Extra, its operation set to
 *        "catchall.get" (hf_request_set_operation); GET .../fail fails (Unsupported), with
 *        X-Test-Extra still; OPTIONS is unaudited: a bodiless 204 with
 *        Access-Control-Allow-Origin, or for .../fail a failure that no summary counts
 *
 * Its link type is its own, "test-api" (holdfastd registers it at start): [test] link_type
 * overrides it. Headers X-Test-Caller and X-Test-Request-Id become the audit caller and cloud
 * request id; every request gets the audit fields "tricky" (quotes, a backslash, non-ASCII),
 * "health_check" and, from header X-Test-Note, "note". */
#include "hf-build.h"

#include "gateway/plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#define TEST_LINK_TYPE "test-api"
/* JSON must escape the quote and the backslash and keep the UTF-8 (o umlaut, a snowman). */
#define TRICKY_FIELD "say \"hi\" \\ J\xc3\xb6rg \xe2\x98\x83"

struct state {
    char greeting[128];
    char link_type[33];
    char catchall_prefix[64]; /* "": the catch-all declines every path */
};

static const struct hf_error_map errors[HF_STATUS_COUNT] = {
    [HF_STATUS_OK] = {200, "OK"},
    [HF_STATUS_BAD_REQUEST] = {400, "TestValidation"},
    [HF_STATUS_UNAUTHENTICATED] = {401, "TestUnauthenticated"},
    [HF_STATUS_DENIED] = {403, "TestDenied"},
    [HF_STATUS_KEY_NOT_FOUND] = {404, "TestKeyNotFound"},
    [HF_STATUS_PATH_NOT_FOUND] = {404, "TestNotFound"},
    [HF_STATUS_METHOD_NOT_ALLOWED] = {405, "TestMethod"},
    [HF_STATUS_KEY_DISABLED] = {400, "TestKeyDisabled"},
    [HF_STATUS_KEY_USAGE] = {400, "TestKeyUsage"},
    [HF_STATUS_BAD_CIPHERTEXT] = {400, "TestBadCiphertext"},
    [HF_STATUS_TOO_LARGE] = {413, "TestTooLarge"},
    [HF_STATUS_UNSUPPORTED] = {400, "TestUnsupported"},
    [HF_STATUS_THROTTLED] = {429, "TestThrottled"},
    [HF_STATUS_TIMEOUT] = {504, "TestTimeout"},
    [HF_STATUS_UNAVAILABLE] = {503, "TestUnavailable"},
    [HF_STATUS_INTERNAL] = {500, "TestInternal"},
    [HF_STATUS_BAD_GATEWAY] = {502, "TestBadGateway"},
};

static struct json_object *error_body(const char *name, const char *message)
{
    struct json_object *o = json_object_new_object();

    json_object_object_add(o, "errorName", json_object_new_string(name));
    json_object_object_add(o, "errorMessage", json_object_new_string(message));
    return o;
}

/* X-Test-Caller stands for an API's authentication: a request that names its caller is
 * authenticated, so its failures get their own audit record; one without is refused before
 * authentication when it fails (only counted, plugin.h "Audit"). */
static void audit_from_headers(struct hf_request *req, const char *key_ref)
{
    const char *caller = hf_request_header(req, "X-Test-Caller");

    if (caller) hf_request_set_authenticated(req);
    hf_request_set_audit(req, caller, hf_request_header(req, "X-Test-Request-Id"), key_ref);
    hf_request_set_audit_field(req, "tricky", TRICKY_FIELD);
    hf_request_set_audit_field(req, "health_check", "true");
    hf_request_set_audit_field(req, "health_check", "false"); /* a later value replaces */
    hf_request_set_audit_field(req, "note", hf_request_header(req, "X-Test-Note"));
}

/* The version a UUID names, the way OCI, SAP and DKE name versions. */
static enum hf_status version_handle(void *state, struct hf_request *req)
{
    const struct state *st = state;
    const char *uuid = hf_request_param(req, "versionUuid");
    char link_id[256], vuuid[37];
    struct json_object *out;
    struct hf_key_ref key;
    CK_OBJECT_HANDLE obj;
    CK_ULONG version = 0, vstate = 0;
    enum hf_status rc;

    audit_from_headers(req, uuid);
    if ((rc = hf_keys_by_version_uuid(st->link_type, uuid, &key, &version, link_id)) !=
        HF_STATUS_OK)
        return hf_request_fail(req, rc, "version %s: not found through %s", uuid, st->link_type);
    hf_request_set_link(req, st->link_type, link_id);
    if ((rc = hf_keys_version_info(&key, version, &obj, &vstate, vuuid)) != HF_STATUS_OK)
        return hf_request_fail(req, rc, "version %lu: no object", (unsigned long)version);
    if ((rc = hf_key_may(&key, HF_KEY_OP_DECRYPT, vstate)) != HF_STATUS_OK)
        return hf_request_fail(req, rc, "version %s may not decrypt", uuid);
    out = json_object_new_object();
    json_object_object_add(out, "keyName", json_object_new_string(key.name));
    json_object_object_add(out, "linkId", json_object_new_string(link_id));
    json_object_object_add(out, "version", json_object_new_int64((int64_t)version));
    json_object_object_add(out, "versionUuid", json_object_new_string(vuuid));
    json_object_object_add(out, "currentVersion", json_object_new_int64((int64_t)key.version));
    json_object_object_add(out, "currentVersionUuid", json_object_new_string(key.version_uuid));
    json_object_object_add(
        out, "mayEncrypt",
        json_object_new_boolean(hf_key_may(&key, HF_KEY_OP_ENCRYPT, 0) == HF_STATUS_OK));
    hf_reply_json(req, 200, out);
    return HF_STATUS_OK;
}

static enum hf_status encrypt_handle(void *state, struct hf_request *req)
{
    const struct state *st = state;
    const char *link = hf_request_param(req, "linkId");
    struct json_object *in = NULL, *pt, *out;
    CK_FUNCTION_LIST_PTR f = hf_p11_functions();
    unsigned char iv[12], *plain = NULL, *ct = NULL;
    size_t body_len, plain_len = 0, b64_len;
    const unsigned char *body = hf_request_body(req, &body_len);
    CK_GCM_PARAMS gcm = {iv, sizeof(iv), 96, NULL, 0, 128};
    CK_MECHANISM mech = {CKM_AES_GCM, &gcm, sizeof(gcm)};
    struct hf_key_ref key;
    CK_SESSION_HANDLE s;
    CK_ULONG ct_len;
    enum hf_status rc;
    char *b64;
    CK_RV rv;

    audit_from_headers(req, link);
    hf_request_set_link(req, st->link_type, link);
    if (!f) return hf_request_fail(req, HF_STATUS_UNAVAILABLE, "no PKCS#11 module");
    /* The gateway's strict reader, as every plugin's (a duplicate key is refused). */
    if (hf_json_parse(body, body_len, 0, 0, &in, NULL, 0) != HF_STATUS_OK ||
        !json_object_object_get_ex(in, "plaintext", &pt) ||
        !json_object_is_type(pt, json_type_string)) {
        rc = hf_request_fail(req, HF_STATUS_BAD_REQUEST, "plaintext (base64) is required");
        goto done;
    }
    b64_len = (size_t)json_object_get_string_len(pt);
    if (!(plain = malloc(hf_base64_decoded_max(b64_len) + 1)) ||
        !hf_base64_decode(json_object_get_string(pt), b64_len, plain, &plain_len)) {
        rc = hf_request_fail(req, HF_STATUS_BAD_REQUEST, "plaintext is not base64");
        goto done;
    }
    if ((rc = hf_keys_by_link(st->link_type, link, &key)) != HF_STATUS_OK) {
        hf_request_fail(req, rc, "link %s: no key", link);
        goto done;
    }
    if (key.blocked) {
        rc = hf_request_fail(req, HF_STATUS_KEY_DISABLED, "link %s is blocked", link);
        goto done;
    }
    hf_request_set_audit(req, hf_request_header(req, "X-Test-Caller"),
                         hf_request_header(req, "X-Test-Request-Id"), key.uuid);
    RAND_bytes(iv, sizeof(iv));
    if (!(ct = malloc(plain_len + 16))) {
        rc = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
        goto done;
    }
    ct_len = plain_len + 16;
    if ((rv = hf_p11_begin(req, NULL, &s)) != CKR_OK ||
        (rv = f->C_EncryptInit(s, &mech, key.current)) != CKR_OK ||
        (rv = f->C_Encrypt(s, plain, plain_len, ct, &ct_len)) != CKR_OK) {
        rc = hf_request_fail(req, hf_status_from_ckr(rv), "encrypt: CKR 0x%lx", (unsigned long)rv);
        goto done;
    }
    out = json_object_new_object();
    b64 = hf_base64_encode(ct, ct_len);
    json_object_object_add(out, "ciphertext", json_object_new_string(b64 ? b64 : ""));
    free(b64);
    b64 = hf_base64_encode(iv, sizeof(iv));
    json_object_object_add(out, "iv", json_object_new_string(b64 ? b64 : ""));
    free(b64);
    json_object_object_add(out, "keyVersion", json_object_new_int64((int64_t)key.version));
    json_object_object_add(out, "keyName", json_object_new_string(key.name));
    hf_reply_json(req, 200, out);
    rc = HF_STATUS_OK;
done:
    hf_json_put_wiped(in);
    free(plain);
    free(ct);
    return rc;
}

/* Old ciphertexts name their version: hf_keys_version finds its object. */
static enum hf_status decrypt_handle(void *state, struct hf_request *req)
{
    const struct state *st = state;
    const char *link = hf_request_param(req, "linkId");
    CK_FUNCTION_LIST_PTR f = hf_p11_functions();
    struct json_object *in = NULL, *ct_j, *iv_j, *v_j, *out;
    unsigned char *ct = NULL, *plain = NULL, iv[16];
    size_t body_len, ct_len = 0, iv_len = 0;
    const unsigned char *body = hf_request_body(req, &body_len);
    CK_GCM_PARAMS gcm = {iv, 0, 0, NULL, 0, 128};
    CK_MECHANISM mech = {CKM_AES_GCM, &gcm, sizeof(gcm)};
    CK_OBJECT_HANDLE obj;
    CK_ULONG plain_len, vstate;
    struct hf_key_ref key;
    CK_SESSION_HANDLE s;
    enum hf_status rc;
    char *b64;
    CK_RV rv;

    audit_from_headers(req, link);
    hf_request_set_link(req, st->link_type, link);
    if (!f) return hf_request_fail(req, HF_STATUS_UNAVAILABLE, "no PKCS#11 module");
    if (hf_json_parse(body, body_len, 0, 0, &in, NULL, 0) != HF_STATUS_OK ||
        !json_object_object_get_ex(in, "ciphertext", &ct_j) ||
        !json_object_object_get_ex(in, "iv", &iv_j) ||
        !json_object_object_get_ex(in, "keyVersion", &v_j) ||
        json_object_get_string_len(iv_j) != 16) {
        rc = hf_request_fail(req, HF_STATUS_BAD_REQUEST, "ciphertext, iv, keyVersion required");
        goto done;
    }
    ct_len = (size_t)json_object_get_string_len(ct_j);
    if (!(ct = malloc(hf_base64_decoded_max(ct_len) + 1)) || !(plain = malloc(ct_len + 1)) ||
        !hf_base64_decode(json_object_get_string(ct_j), ct_len, ct, &ct_len) || ct_len < 16 ||
        !hf_base64_decode(json_object_get_string(iv_j), 16, iv, &iv_len)) {
        rc = hf_request_fail(req, HF_STATUS_BAD_REQUEST, "bad base64");
        goto done;
    }
    gcm.ulIvLen = iv_len;
    gcm.ulIvBits = iv_len * 8;
    if ((rc = hf_keys_by_link(st->link_type, link, &key)) != HF_STATUS_OK ||
        (rc = hf_keys_version(&key, (CK_ULONG)json_object_get_int64(v_j), &obj, &vstate)) !=
            HF_STATUS_OK) {
        hf_request_fail(req, rc, "link %s: no such key or version", link);
        goto done;
    }
    plain_len = ct_len;
    if ((rv = hf_p11_begin(req, NULL, &s)) != CKR_OK ||
        (rv = f->C_DecryptInit(s, &mech, obj)) != CKR_OK ||
        (rv = f->C_Decrypt(s, ct, ct_len, plain, &plain_len)) != CKR_OK) {
        rc = hf_request_fail(req, hf_status_from_ckr(rv), "decrypt: CKR 0x%lx", (unsigned long)rv);
        goto done;
    }
    out = json_object_new_object();
    b64 = hf_base64_encode(plain, plain_len);
    json_object_object_add(out, "plaintext", json_object_new_string(b64 ? b64 : ""));
    free(b64);
    hf_reply_json(req, 200, out);
    rc = HF_STATUS_OK;
done:
    hf_json_put_wiped(in);
    free(ct);
    free(plain);
    return rc;
}

static enum hf_status fail_handle(void *state, struct hf_request *req)
{
    audit_from_headers(req, NULL);
    return hf_request_fail(req, HF_STATUS_BAD_REQUEST, "refused before any key operation");
}

static enum hf_status config_handle(void *state, struct hf_request *req)
{
    struct state *st = state;
    struct json_object *out = json_object_new_object();

    audit_from_headers(req, NULL);
    json_object_object_add(out, "greeting", json_object_new_string(st->greeting));
    hf_reply_json(req, 200, out);
    return HF_STATUS_OK;
}

static enum hf_status echo_handle(void *state, struct hf_request *req)
{
    struct json_object *out = json_object_new_object();
    const char *h = hf_request_header(req, "x-test-echo"), *subject, *sans;

    audit_from_headers(req, NULL);
    json_object_object_add(out, "rest", json_object_new_string(hf_request_param(req, "rest")));
    json_object_object_add(out, "id", json_object_new_string(hf_request_param(req, "id")));
    json_object_object_add(out, "query", json_object_new_string(hf_request_query(req)));
    json_object_object_add(out, "path", json_object_new_string(hf_request_path(req)));
    json_object_object_add(out, "header", h ? json_object_new_string(h) : NULL);
    json_object_object_add(out, "requestId", json_object_new_string(hf_request_id(req)));
    subject = hf_request_client_subject(req);
    json_object_object_add(out, "clientSubject", subject ? json_object_new_string(subject) : NULL);
    if ((sans = hf_request_client_sans(req))) {
        struct json_object *list = json_object_new_array();
        for (; *sans; sans += strlen(sans) + 1)
            json_object_array_add(list, json_object_new_string(sans));
        json_object_object_add(out, "clientSans", list);
    }
    hf_reply_json(req, 200, out);
    return HF_STATUS_OK;
}

static enum hf_status post_only_handle(void *state, struct hf_request *req)
{
    struct json_object *out = json_object_new_object();

    json_object_object_add(out, "ok", json_object_new_boolean(1));
    hf_reply_json(req, 200, out);
    return HF_STATUS_OK;
}

static bool catchall_accepts(void *state, const char *path)
{
    const struct state *st = state;
    size_t n = strlen(st->catchall_prefix);

    return n > 0 && strncmp(path, st->catchall_prefix, n) == 0 &&
           (path[n] == '/' || path[n] == '\0');
}

static bool path_ends_with_fail(const char *path)
{
    size_t len = strlen(path);

    return len >= 5 && strcmp(path + len - 5, "/fail") == 0;
}

static enum hf_status catchall_handle(void *state, struct hf_request *req)
{
    const char *path = hf_request_path(req);
    struct json_object *out;

    hf_reply_header(req, "X-Test-Extra", "yes");
    if (strcmp(hf_request_method(req), "OPTIONS") == 0) {
        hf_request_set_unaudited(req);
        if (path_ends_with_fail(path))
            return hf_request_fail(req, HF_STATUS_UNSUPPORTED, "an unaudited failure");
        hf_reply_header(req, "Access-Control-Allow-Origin", "https://client.example");
        /* Refused by the gateway (it sets these itself, or they would split the response),
         * logged, never sent. */
        hf_reply_header(req, "Content-Type", "text/evil");
        hf_reply_header(req, "X-Split", "a\r\nInjected: yes");
        hf_reply_empty(req, 204);
        return HF_STATUS_OK;
    }
    hf_request_set_operation(req, "catchall.get");
    if (path_ends_with_fail(path))
        return hf_request_fail(req, HF_STATUS_UNSUPPORTED, "the catch-all fails on request");
    out = json_object_new_object();
    json_object_object_add(out, "catchall", json_object_new_string(path));
    hf_reply_json(req, 200, out);
    return HF_STATUS_OK;
}

static const struct hf_route routes[] = {
    {"POST", "/test/v1/links/{linkId}/encrypt", "encrypt", encrypt_handle, NULL},
    {"POST", "/test/v1/links/{linkId}/decrypt", "decrypt", decrypt_handle, NULL},
    {"GET", "/test/v1/fail", "fail", fail_handle, NULL},
    {"GET", "/test/v1/config", "config", config_handle, NULL},
    {"POST", "/test/v1/post-only", "post-only", post_only_handle, NULL},
    {"GET", "/test/v1/versions/{versionUuid}", "version", version_handle, NULL},
    {"GET", "/test/{rest*}/echo/{id}", "echo", echo_handle, NULL},
    {"GET", "/{any*}", "catchall", catchall_handle, catchall_accepts},
    {"OPTIONS", "/{any*}", "catchall", catchall_handle, catchall_accepts},
};

static void *create(void)
{
    struct state *st = calloc(1, sizeof(*st));

    if (st) {
        snprintf(st->greeting, sizeof(st->greeting), "hello");
        snprintf(st->link_type, sizeof(st->link_type), "%s", TEST_LINK_TYPE);
    }
    return st;
}

static bool configure(void *state, const char *instance, const char *name, const char *value,
                      char *err, size_t errlen)
{
    struct state *st = state;

    if (instance[0] != '\0') {
        snprintf(err, errlen, "no instances");
        return false;
    }
    if (strcmp(name, "greeting") == 0) {
        snprintf(st->greeting, sizeof(st->greeting), "%s", value);
        return true;
    }
    if (strcmp(name, "catchall_prefix") == 0) {
        snprintf(st->catchall_prefix, sizeof(st->catchall_prefix), "%s", value);
        return true;
    }
    if (strcmp(name, "link_type") == 0) {
        snprintf(st->link_type, sizeof(st->link_type), "%s", value);
        return true;
    }
    snprintf(err, errlen, "unknown key");
    return false;
}

static bool start(void *state, char *err, size_t errlen)
{
    return true;
}

static void destroy(void *state)
{
    free(state);
}

static const struct hf_plugin plugin = {
    .abi_version = HF_PLUGIN_ABI_VERSION,
    .name = "test",
    .link_type = TEST_LINK_TYPE,
    /* Not the default, so tests see the buckets and the share follow the plugin's own limit. */
    .latency_limit_ms = 40,
    /* Under gateway.sh's [gateway] max_body (16k), so its test sees the API's own limit win. */
    .max_body = 12 * 1024,
    .routes = routes,
    .nroutes = sizeof(routes) / sizeof(routes[0]),
    .errors = errors,
    .error_body = error_body,
    .create = create,
    .configure = configure,
    .start = start,
    .destroy = destroy,
};

HF_PLUGIN_EXPORT const struct hf_plugin *hf_plugin_entry(void)
{
    return &plugin;
}
