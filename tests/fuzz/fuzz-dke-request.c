/* libFuzzer target for gateway/plugins/ms-dke/request.c and authz.c: the path's target, the
 * decrypt body parser and the caller's identity, on arbitrary bytes.
 *
 * Input: the first byte picks what the rest is (low two bits): a path under "/dke", a decrypt
 * body, or a token's claims (JSON) for the identity and allowlist rules. Besides "no crash, no
 * leak, no UB", it checks what the handlers rely on: a target's name is a valid key name and
 * its key id a lower-case UUID; an accepted body's value is there and within the modulus cap;
 * a refusal says why in printable ASCII. */
#include "hf-build.h"

#include "gateway/plugin.h"
#include "gateway/plugins/ms-dke/authz.h"
#include "gateway/plugins/ms-dke/request.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const uint8_t *data, size_t size)
{
    char *path = malloc(size + 1);
    struct hf_dke_target t;

    if (path == NULL) return;
    memcpy(path, data, size);
    path[size] = '\0';
    hf_dke_path_parse("/dke", path, &t);
    if (t.kind != HF_DKE_T_NONE && !hf_dke_name_is_valid(t.name, strlen(t.name))) abort();
    if (t.kind == HF_DKE_T_KEY && t.key_id[0] != '\0') abort();
    if (t.kind == HF_DKE_T_DECRYPT) {
        if (!hf_uuid_text_is_valid(t.key_id, strlen(t.key_id))) abort();
        for (const char *p = t.key_id; *p; p++)
            if (isupper((unsigned char)*p)) abort();
    }
    if (t.kind != HF_DKE_T_NONE && strncmp(path, "/dke/", 5) != 0) abort();
    free(path);
}

static void check_why(const char *why)
{
    if (*why == '\0') abort();
    for (const char *p = why; *p; p++)
        if (*p < 0x20 || *p > 0x7e) abort();
}

static void check_body(const uint8_t *data, size_t size)
{
    struct hf_dke_decrypt d;
    char why[256] = "";
    enum hf_status st = hf_dke_decrypt_parse(data, size, &d, why, sizeof(why));

    if (st == HF_STATUS_OK) {
        if (d.value == NULL || d.len > HF_DKE_VALUE_MAX) abort();
    } else {
        if (st != HF_STATUS_BAD_REQUEST && st != HF_STATUS_INTERNAL) abort();
        if (d.value != NULL) abort();
        check_why(why);
    }
    hf_dke_decrypt_clear(&d);
}

static void check_claims(const uint8_t *data, size_t size)
{
    static char a[] = "alice@contoso.com", g[] = "0b2c7a1e-8d3f-4c5b-9a6e-1f2d3c4b5a69";
    static char *emails[] = {a}, *groups[] = {g};
    struct hf_dke_key ke = {
        .name = "k", .mode = HF_DKE_AUTHZ_EMAIL, .allowed = emails, .nallowed = 1};
    struct hf_dke_key kg = {
        .name = "k", .mode = HF_DKE_AUTHZ_GROUP, .allowed = groups, .nallowed = 1};
    struct json_object *claims = NULL;
    char why[256], who[320];

    if (hf_json_parse(data, size, 0, 0, &claims, why, sizeof(why)) != HF_STATUS_OK) return;
    if (hf_dke_identity(claims, who, sizeof(who))) {
        if (who[0] == '\0' || isspace((unsigned char)who[0]) ||
            isspace((unsigned char)who[strlen(who) - 1]))
            abort();
    }
    /* An email-mode key lets in exactly its address, whatever else the claims hold. */
    if (hf_dke_key_allows(&ke, claims) !=
        (hf_dke_identity(claims, who, sizeof(who)) && strcasecmp(who, a) == 0))
        abort();
    (void)hf_dke_key_allows(&kg, claims);
    (void)hf_dke_scope_has(claims, "user_impersonation");
    json_object_put(claims);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    switch (data[0] & 3) {
    case 0:
        check_path(data + 1, size - 1);
        break;
    case 1:
        check_body(data + 1, size - 1);
        break;
    default:
        check_claims(data + 1, size - 1);
    }
    return 0;
}
