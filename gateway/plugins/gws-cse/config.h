/* The gws-cse plugin's configuration: KACLS prefixes, one CSE link to one AES-256 KEK each.
 *
 *   [gws-cse:NAME]               one KACLS prefix
 *   prefix = /cse                "" or "/seg/..." ([A-Za-z0-9._~-] segments); distinct; required
 *   kacls_url = https://kacls.example.com/cse   byte for byte the authz token's kacls_url; required
 *   kek = LINK_ID                the gws-cse link to the AES-256 KEK (default: NAME)
 *   signing_key = LINK_ID        a gws-cse link to an RSA-3072 key: delegated and migration
 *                                tokens, /certs (absent: delegate and rewrap answer 501)
 *   authn.LABEL.issuer = URL     an authentication token issuer (customer IdP or Google)
 *   authn.LABEL.jwks = FILE|https URL                          required with issuer
 *   authn.LABEL.audiences = client ids                         required with issuer
 *   authn.LABEL.algs = RS256, ES256                            (default both)
 *   authz_issuers = list         default gsuitecse-tokenissuer-{drive,meet,calendar}@system.
 *                                gserviceaccount.com (and -gmail@ when gmail = on)
 *   authz_jwks = TEMPLATE|FILE|URL   default HF_CSE_DEFAULT_AUTHZ_JWKS (%s: the issuer)
 *   jwks_ca = PATH ; jwks_allow = CIDRs     trust anchors and SSRF exceptions, JWKS fetches
 *   admins = emails              privileged ops (compared without case)
 *   guests = allow|deny          email_type other than "google" (default deny)
 *   owner_domain = DOMAIN        kacls_owner_domain, when the token sets it, must equal it
 *   perimeter.ID = claim=glob, claim=glob   the authn claims an authz perimeter_id needs
 *   peers = https://old.example.com/cse, ...  rewrap targets and migration-token issuers
 *   peer_ca = PATH ; peer_allow = CIDRs      trust anchors and SSRF exceptions for peers
 *   origins = list               CORS origins (default https://client-side-encryption.google.com)
 *   gmail = off|on               stage 2 (Gmail ops; off: 501 and absent from /status)
 *   name = TEXT                  /status "name"
 *   rate_limit = 0 ; deadline = 0 ; clock_skew = 60s
 *
 * Pure, except for the hf_conf_* value parsers of plugin.h, so unit tests drive it. */
#ifndef HF_CSE_CONFIG_H
#define HF_CSE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HF_CSE_DEFAULT_AUTHZ_JWKS "https://www.googleapis.com/service_accounts/v1/jwk/%s"
#define HF_CSE_DEFAULT_ORIGIN "https://client-side-encryption.google.com"
#define HF_CSE_SKEW_MAX_S 300
/* What a config value may hold that reaches a path, a claim or a header. */
#define HF_CSE_VALUE_MAX 1024

/* HF_JWT_RS256 / HF_JWT_ES256 of plugin.h. */
#define HF_CSE_ALGS_DEFAULT 3u

struct hf_cse_authn {
    char *label;
    char *issuer; /* "iss" */
    char *jwks;   /* a file (already resolved against the config's directory) or https URL */
    char **audiences;
    size_t naudiences;
    unsigned algs; /* HF_JWT_RS256 | HF_JWT_ES256 */
};

/* One "claim=glob" of a perimeter rule: the authn claim (a string) must match the fnmatch(3)
 * glob. */
struct hf_cse_claim_rule {
    char *claim;
    char *glob;
};

struct hf_cse_perimeter {
    char *id;
    struct hf_cse_claim_rule *rules; /* all must hold */
    size_t nrules;
};

struct hf_cse_prefix {
    char *name;
    char *prefix; /* "" or "/a/b" */
    bool prefix_set;
    char *kacls_url;
    char *kek;         /* link id; NAME by default */
    char *signing_key; /* link id, NULL: no delegate, rewrap, /certs keys */
    struct hf_cse_authn *authn;
    size_t nauthn;
    char **authz_issuers;
    size_t nauthz_issuers;
    char *authz_jwks; /* a template with one %s, a file or an https URL */
    char *jwks_ca;
    char **jwks_allow;
    size_t njwks_allow;
    char **admins; /* lower case */
    size_t nadmins;
    bool guests;
    char *owner_domain;
    struct hf_cse_perimeter *perimeters;
    size_t nperimeters;
    char **peers; /* KACLS URLs, no trailing '/' */
    size_t npeers;
    char *peer_ca;
    char **peer_allow;
    size_t npeer_allow;
    char **origins;
    size_t norigins;
    bool gmail;
    char *display_name; /* "name": /status's name, NULL: absent */
    unsigned rate_limit;
    unsigned deadline_ms;
    unsigned skew_s;
};

struct hf_cse_config {
    struct hf_cse_prefix *prefixes;
    size_t nprefixes;
};

/* One "name = value" of "[gws-cse:<instance>]". false with a message for an unknown name or a
 * bad value. */
bool hf_cse_config_set(struct hf_cse_config *cfg, const char *instance, const char *name,
                       const char *value, char *err, size_t errlen);
/* The whole, with defaults filled in: a prefix at least, each with prefix and an https
 * kacls_url, distinct prefixes, each authn issuer complete. */
bool hf_cse_config_check(struct hf_cse_config *cfg, char *err, size_t errlen);
void hf_cse_config_free(struct hf_cse_config *cfg);

/* The prefix a request path is under: the longest prefix P with path = P "/" REST; *rest gets
 * REST (may be "" or hold '/'). NULL if none. */
const struct hf_cse_prefix *hf_cse_config_route(const struct hf_cse_config *cfg, const char *path,
                                                const char **rest);
/* The authz JWKS of issuer under px: the template with %s replaced, or the file or URL as is,
 * into out. false when it does not fit. */
bool hf_cse_authz_jwks(const struct hf_cse_prefix *px, const char *issuer, char *out,
                       size_t outlen);
/* Whether email (any case) is one of px's admins. */
bool hf_cse_prefix_is_admin(const struct hf_cse_prefix *px, const char *email);
/* Whether origin is one of px's CORS origins (byte for byte, as browsers send it). */
bool hf_cse_prefix_allows_origin(const struct hf_cse_prefix *px, const char *origin);
/* The perimeter rule for id, or NULL. */
const struct hf_cse_perimeter *hf_cse_prefix_perimeter(const struct hf_cse_prefix *px,
                                                       const char *id);
/* Whether url (a KACLS URL, a trailing '/' ignored) is one of px's peers. */
bool hf_cse_prefix_has_peer(const struct hf_cse_prefix *px, const char *url);

#endif /* HF_CSE_CONFIG_H */
