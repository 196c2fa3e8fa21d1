/* hf-load's OCI EKMS builder (specs/oci-ekms.md): the k6 `oci_hyok` shape, an encrypt of a
 * 32-byte plaintext with one bearer token for the whole run. The token is an IAM identity
 * domain (IDCS) client-credentials access token, minted once from a test key (RS256) as the
 * domain would sign it, so the run measures the gateway's verified-token cache, as OCI's own
 * reuse of a token does. */
#include "hf-build.h"

#include "tests/load/load.h"

#include <json.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OCI_TOKEN_LIFE_S 3600 /* a run never outlasts it */
#define OCI_DEFAULT_PREFIX "/api/v1/cckm/oci/ekm/v1"
#define OCI_DEFAULT_ISSUER "https://identity.oraclecloud.com/"
#define OCI_CLIENT_ID "hf-load"
#define OCI_PLAINTEXT_LEN 32
/* The spec's ciphertext: 0x01 || BE32 version || IV(12) || C || T(16). */
#define OCI_BLOB_LEN (1 + 4 + 12 + OCI_PLAINTEXT_LEN + 16)
#define B64_LEN(n) (((n) + 2) / 3 * 4)

struct oci_state {
    char *token;
    char path[1600]; /* "<url path><prefix>/vaults/<vaultId>/keys/<keyId>/encrypt" */
    char authority[272];
};

/* The primary audience defaults to Holdfast's URL as the confidential resource app names it. */
static char *token_mint(const struct hf_load_config *cfg, char *err, size_t errlen)
{
    struct json_object *c = json_object_new_object();
    int64_t now = (int64_t)time(NULL);
    char aud[300];
    char *token;

    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(aud, sizeof(aud), "https://%s/", cfg->target.authority);
    json_object_object_add(c, "iss",
                           json_object_new_string(cfg->issuer ? cfg->issuer : OCI_DEFAULT_ISSUER));
    json_object_object_add(c, "aud", json_object_new_string(cfg->audience ? cfg->audience : aud));
    json_object_object_add(c, "scope", json_object_new_string("oci_ekms"));
    json_object_object_add(c, "client_id", json_object_new_string(OCI_CLIENT_ID));
    json_object_object_add(c, "sub", json_object_new_string(OCI_CLIENT_ID));
    json_object_object_add(c, "iat", json_object_new_int64(now));
    json_object_object_add(c, "exp", json_object_new_int64(now + OCI_TOKEN_LIFE_S));
    token = hf_load_jwt_mint(cfg->token_key, cfg->token_kid, c, err, errlen);
    json_object_put(c);
    return token;
}

static void oci_free(void *state)
{
    struct oci_state *s = state;

    if (!s) return;
    free(s->token);
    free(s);
}

static int oci_init(const struct hf_load_config *cfg, void **state, char *err, size_t errlen)
{
    struct oci_state *s = calloc(1, sizeof(*s));
    const char *prefix = cfg->prefix ? cfg->prefix : OCI_DEFAULT_PREFIX;
    char why[512];
    int n, rc = -1;

    if (!s) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (!cfg->vault_id || !*cfg->vault_id || !cfg->key_id || !*cfg->key_id || !cfg->token_key ||
        !cfg->token_kid) {
        snprintf(err, errlen,
                 "--api %s needs --vault-id UUID, --key-id UUID, --token-key PEM and "
                 "--token-kid KID",
                 cfg->api->name);
        goto done;
    }
    if (!(s->token = token_mint(cfg, why, sizeof(why)))) {
        snprintf(err, errlen, "--token-key %s", why);
        goto done;
    }
    snprintf(s->authority, sizeof(s->authority), "%s", cfg->target.authority);
    n = snprintf(s->path, sizeof(s->path), "%s%s%s/vaults/%s/keys/%s/encrypt", cfg->target.path,
                 *prefix && *prefix != '/' ? "/" : "", prefix, cfg->vault_id, cfg->key_id);
    if (n < 0 || (size_t)n >= sizeof(s->path)) {
        snprintf(err, errlen, "--url path, --prefix, --vault-id and --key-id are too long");
        goto done;
    }
    *state = s;
    s = NULL;
    rc = 0;
done:
    oci_free(s);
    return rc;
}

static int oci_build(void *state, void **vu_state, struct hf_buf *out, bool *setup)
{
    struct oci_state *s = state;
    unsigned char pt[OCI_PLAINTEXT_LEN];
    char pt64[B64_LEN(OCI_PLAINTEXT_LEN) + 1], body[128];
    int n;

    (void)vu_state;
    *setup = false;
    if (RAND_bytes(pt, sizeof(pt)) != 1) return -1;
    EVP_EncodeBlock((unsigned char *)pt64, pt, (int)sizeof(pt));
    n = snprintf(body, sizeof(body), "{\"plaintext\":\"%s\"}", pt64);
    if (n < 0 || (size_t)n >= sizeof(body)) return -1;
    return hf_buf_printf(out,
                         "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                         "Content-Length: %d\r\nAuthorization: Bearer %s\r\n\r\n%s",
                         s->path, s->authority, n, s->token, body);
}

/* A whole encrypt reply: the self-contained ciphertext of 32 bytes, its IV and tag, AES_GCM. */
static int oci_check(void *state, void **vu_state, bool setup, const char *body, size_t len)
{
    struct json_object *o = hf_load_reply_parse(body, len);
    const char *ct = o ? hf_load_json_str(o, "ciphertext") : NULL;
    const char *iv = o ? hf_load_json_str(o, "iv") : NULL;
    const char *tag = o ? hf_load_json_str(o, "tag") : NULL;
    const char *mode = o ? hf_load_json_str(o, "mode") : NULL;
    int rc = ct && strlen(ct) == B64_LEN(OCI_BLOB_LEN) && iv && strlen(iv) == B64_LEN(12) && tag &&
                     strlen(tag) == B64_LEN(16) && mode && strcmp(mode, "AES_GCM") == 0
                 ? 0
                 : -1;

    (void)state;
    (void)vu_state;
    (void)setup;
    json_object_put(o);
    return rc;
}

const struct hf_load_api hf_load_api_oci_encrypt = {
    .name = "oci-encrypt",
    .seed_api = "oci-ekms",
    .title = "OCI EKMS encrypt (IDCS bearer token)",
    .limit_ms = 100,
    .init = oci_init,
    .free_state = oci_free,
    .build = oci_build,
    .check = oci_check,
};
