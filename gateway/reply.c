/* plugin.h's replies: hf_reply_json (and hf_reply_json_or_fail, a handler's last step),
 * hf_reply_empty (a bodiless success) and hf_reply_header, the extra headers a plugin wants on
 * whatever the request is answered (server.c sends them on every path that writes a response). */
#include "hf-build.h"

#include "gateway/log.h"
#include "gateway/request.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>
#include <openssl/crypto.h>

/* The gateway's own: a plugin's copy would contradict the body, the framing or the id. */
static bool name_is_reserved(const char *name)
{
    static const char *const reserved[] = {"Content-Type", "Content-Length", "Connection",
                                           "X-Request-Id", "Allow"};

    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strcasecmp(name, reserved[i]) == 0) return true;
    return false;
}

/* RFC 9110 section 5.6.2: a field name is a token. */
static bool name_is_token(const char *name)
{
    size_t len = strlen(name);

    return len > 0 && len <= 64 &&
           strspn(name, "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvw"
                        "xyz") == len;
}

/* CR or LF would end the header and start another (response splitting). */
static bool value_is_safe(const char *value)
{
    return strpbrk(value, "\r\n") == NULL && strlen(value) <= 4096;
}

/* A later reply replaces an earlier one; the earlier body may be a plaintext. */
static void reply_reset(struct hf_request *req, unsigned http_status, bool empty)
{
    if (req->reply) OPENSSL_clear_free(req->reply, req->reply_len);
    req->reply = NULL;
    req->reply_len = 0;
    req->replied = true;
    req->reply_empty = empty;
    req->http_status = http_status;
}

HF_PLUGIN_EXPORT void hf_reply_json(struct hf_request *req, unsigned http_status,
                                    struct json_object *body)
{
    const char *s;
    size_t len;

    if (!req) {
        json_object_put(body);
        return;
    }
    reply_reset(req, http_status, false);
    if (!body) return;
    s = json_object_to_json_string_ext(body,
                                       JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    len = s ? strlen(s) : 0;
    if (s && (req->reply = malloc(len + 1))) {
        memcpy(req->reply, s, len + 1);
        req->reply_len = len;
    } else {
        req->replied = false; /* out of memory: the server answers INTERNAL */
    }
    /* json-c keeps the serialisation inside the object; it may be a plaintext. */
    if (s) OPENSSL_cleanse((void *)s, len);
    json_object_put(body);
}

HF_PLUGIN_EXPORT enum hf_status hf_reply_json_or_fail(struct hf_request *req, unsigned http_status,
                                                      struct json_object *body)
{
    if (body == NULL) return hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
    hf_reply_json(req, http_status, body);
    return HF_STATUS_OK;
}

HF_PLUGIN_EXPORT void hf_reply_empty(struct hf_request *req, unsigned http_status)
{
    if (req) reply_reset(req, http_status, true);
}

HF_PLUGIN_EXPORT void hf_reply_header(struct hf_request *req, const char *name, const char *value)
{
    struct hf_gw_header *h;

    if (!req || !name || !value) return;
    if (!name_is_token(name) || name_is_reserved(name) || !value_is_safe(value)) {
        /* The name only: the value may be what an attacker put in a request. */
        hf_gw_log_warn("request %s: response header \"%.64s\" refused (the gateway's own, not a "
                       "token, or a value with CR, LF or over 4096 bytes)",
                       req->id, name);
        return;
    }
    if (req->nreply_headers == HF_REPLY_HEADERS_MAX) {
        hf_gw_log_warn("request %s: response header \"%s\" dropped: at most %d per request",
                       req->id, name, HF_REPLY_HEADERS_MAX);
        return;
    }
    h = &req->reply_headers[req->nreply_headers];
    if (!(h->name = strdup(name)) || !(h->value = strdup(value))) {
        free(h->name);
        h->name = NULL;
        return;
    }
    req->nreply_headers++;
}

void hf_gw_reply_headers_clear(struct hf_request *req)
{
    for (size_t i = 0; i < req->nreply_headers; i++) {
        free(req->reply_headers[i].name);
        free(req->reply_headers[i].value);
    }
    req->nreply_headers = 0;
}
