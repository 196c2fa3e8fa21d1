/* AWS Signature Version 4 for the XKS proxy API: see sigv4.h and specs/aws-xks.md,
 * "Authentication: SigV4". The algorithm is AWS's ("Create a signed AWS API request"); the XKS
 * proxy spec (aws-kms-xksproxy-api-spec, Appendix A) fixes the service name and the scope. */
#include "hf-build.h"

#include "sigv4.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHA256_LEN 32
#define TERMINATOR "aws4_request"
#define AKID_MIN 20
#define AKID_MAX 30
#define SECRET_MIN 43
#define SECRET_MAX 64
#define SCOPE_FIELD_MAX 32
#define AMZ_DATE_LEN 16 /* yyyymmddThhmmssZ */
/* Enough for a few access keys x allowed regions x two days around midnight; a full table
 * evicts the oldest date first. */
#define CACHE_SLOTS 64

/* Fetching an algorithm takes the provider store's lock; everything the hot path uses is fetched
 * once, in a private library context holding only the default provider (so a Holdfast provider
 * loaded by openssl.cnf into the default context is never asked to hash a request). */
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;
static OSSL_LIB_CTX *libctx;
static EVP_MD *sha256_md;
/* HMAC-SHA256 with no key yet: each call duplicates it, because naming the digest at init
 * would fetch it again (a lock and a name lookup) for every HMAC. */
static EVP_MAC_CTX *hmac_template;

static void crypto_init(void)
{
    OSSL_LIB_CTX *ctx;
    EVP_MD *md = NULL;
    EVP_MAC *mac = NULL;
    EVP_MAC_CTX *hmac = NULL;
    OSSL_PARAM params[2];

    ERR_set_mark();
    ctx = OSSL_LIB_CTX_new();
    if (ctx == NULL || OSSL_PROVIDER_load(ctx, "default") == NULL) goto done;
    md = EVP_MD_fetch(ctx, "SHA256", NULL);
    mac = EVP_MAC_fetch(ctx, "HMAC", NULL);
    if (md == NULL || mac == NULL || (hmac = EVP_MAC_CTX_new(mac)) == NULL) goto done;
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0);
    params[1] = OSSL_PARAM_construct_end();
    if (EVP_MAC_CTX_set_params(hmac, params) != 1) goto done;
    sha256_md = md;
    hmac_template = hmac;
    libctx = ctx;
    ctx = NULL;
    md = NULL;
    hmac = NULL;
done:
    EVP_MAC_CTX_free(hmac);
    EVP_MD_free(md);
    EVP_MAC_free(mac); /* the template holds its own reference */
    OSSL_LIB_CTX_free(ctx);
    ERR_pop_to_mark();
}

static bool crypto_is_ready(void)
{
    pthread_once(&crypto_once, crypto_init);
    return libctx != NULL;
}

static bool sha256(const void *data, size_t len, unsigned char out[SHA256_LEN])
{
    unsigned int outlen = 0;

    return EVP_Digest(data, len, out, &outlen, sha256_md, NULL) == 1 && outlen == SHA256_LEN;
}

static bool hmac_sha256(const unsigned char *key, size_t keylen, const void *data, size_t len,
                        unsigned char out[SHA256_LEN])
{
    EVP_MAC_CTX *ctx = NULL;
    size_t outlen = 0;
    bool ok = false;

    ctx = EVP_MAC_CTX_dup(hmac_template);
    if (ctx == NULL) goto done;
    if (EVP_MAC_init(ctx, key, keylen, NULL) != 1) goto done;
    if (EVP_MAC_update(ctx, data, len) != 1) goto done;
    if (EVP_MAC_final(ctx, out, &outlen, SHA256_LEN) != 1 || outlen != SHA256_LEN) goto done;
    ok = true;
done:
    EVP_MAC_CTX_free(ctx); /* cleanses the keyed state */
    return ok;
}

static void hex_encode(const unsigned char *in, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * len] = '\0';
}

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request"). */
static bool signing_key_derive(const char *secret, size_t secret_len, const char *date,
                               const char *region, const char *service,
                               unsigned char key[SHA256_LEN])
{
    unsigned char k[SHA256_LEN];
    /* On the stack, cleansed: a heap copy of the secret would outlive this call in free lists.
     * Room past SECRET_MAX: tests sign with invalid secrets to see verification refuse them. */
    unsigned char first[4 + 4 * SECRET_MAX];
    size_t first_len = 4 + secret_len;
    bool ok = false;

    if (secret_len > 4 * SECRET_MAX) goto done;
    memcpy(first, "AWS4", 4);
    memcpy(first + 4, secret, secret_len);
    if (!hmac_sha256(first, first_len, date, strlen(date), k)) goto done;
    if (!hmac_sha256(k, sizeof(k), region, strlen(region), k)) goto done;
    if (!hmac_sha256(k, sizeof(k), service, strlen(service), k)) goto done;
    if (!hmac_sha256(k, sizeof(k), TERMINATOR, strlen(TERMINATOR), key)) goto done;
    ok = true;
done:
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(first, sizeof(first));
    return ok;
}

/* ---- the signing-key cache ---- */

struct cache_entry {
    bool used;
    char akid[AKID_MAX + 1];
    char date[9];
    char region[SCOPE_FIELD_MAX + 1];
    char service[SCOPE_FIELD_MAX + 1];
    /* The secret the key was derived from: a caller that reuses one cache across a secret
     * change still never gets a key made from the old secret. */
    char secret[SECRET_MAX + 1];
    size_t secret_len;
    unsigned char key[SHA256_LEN];
};

struct hf_sigv4_cache {
    pthread_rwlock_t lock; /* guards slots and next_victim; held only to copy 32 bytes */
    unsigned next_victim;
    struct cache_entry slots[CACHE_SLOTS];
};

/* Signing keys are as good as the secret for a day: the cache lives in OpenSSL's secure heap
 * (holdfastd makes one: locked, not in core dumps), allocated once per credential set, so the
 * heap's lock is never on the request path. Without a secure heap: ordinary memory. */
struct hf_sigv4_cache *hf_sigv4_cache_new(void)
{
    struct hf_sigv4_cache *cache = OPENSSL_secure_zalloc(sizeof(*cache));

    if (cache == NULL) return NULL;
    if (pthread_rwlock_init(&cache->lock, NULL) != 0) {
        OPENSSL_secure_free(cache);
        return NULL;
    }
    return cache;
}

void hf_sigv4_cache_free(struct hf_sigv4_cache *cache)
{
    if (cache == NULL) return;
    pthread_rwlock_destroy(&cache->lock);
    OPENSSL_secure_clear_free(cache, sizeof(*cache));
}

static bool entry_is_for(const struct cache_entry *e, const struct hf_sigv4_auth *auth,
                         const char *service)
{
    return e->used && strcmp(e->akid, auth->akid) == 0 && strcmp(e->date, auth->date) == 0 &&
           strcmp(e->region, auth->region) == 0 && strcmp(e->service, service) == 0;
}

static bool cache_lookup(struct hf_sigv4_cache *cache, const struct hf_sigv4_auth *auth,
                         const char *service, const char *secret, size_t secret_len,
                         unsigned char key[SHA256_LEN])
{
    bool found = false;

    if (pthread_rwlock_rdlock(&cache->lock) != 0) return false;
    for (size_t i = 0; i < CACHE_SLOTS; i++) {
        const struct cache_entry *e = &cache->slots[i];

        if (entry_is_for(e, auth, service)) {
            found =
                e->secret_len == secret_len && CRYPTO_memcmp(e->secret, secret, secret_len) == 0;
            if (found) memcpy(key, e->key, SHA256_LEN);
            break;
        }
    }
    pthread_rwlock_unlock(&cache->lock);
    return found;
}

static void cache_insert(struct hf_sigv4_cache *cache, const struct hf_sigv4_auth *auth,
                         const char *service, const char *secret, size_t secret_len,
                         const unsigned char key[SHA256_LEN])
{
    struct cache_entry *slot = NULL;

    if (secret_len > SECRET_MAX || strlen(service) > SCOPE_FIELD_MAX) return;
    if (pthread_rwlock_wrlock(&cache->lock) != 0) return;
    /* Same scope (a racing thread, or a changed secret): overwrite. Else a free slot. Else the
     * slot with the oldest date, searched from a moving start so ties do not always hit one. */
    for (size_t i = 0; i < CACHE_SLOTS && slot == NULL; i++)
        if (entry_is_for(&cache->slots[i], auth, service)) slot = &cache->slots[i];
    for (size_t i = 0; i < CACHE_SLOTS && slot == NULL; i++)
        if (!cache->slots[i].used) slot = &cache->slots[i];
    if (slot == NULL) {
        for (size_t n = 0; n < CACHE_SLOTS; n++) {
            struct cache_entry *e = &cache->slots[(cache->next_victim + n) % CACHE_SLOTS];

            if (slot == NULL || strcmp(e->date, slot->date) < 0) slot = e;
        }
        cache->next_victim = (cache->next_victim + 1) % CACHE_SLOTS;
    }
    OPENSSL_cleanse(slot, sizeof(*slot));
    slot->used = true;
    strcpy(slot->akid, auth->akid);
    strcpy(slot->date, auth->date);
    strcpy(slot->region, auth->region);
    strcpy(slot->service, service);
    memcpy(slot->secret, secret, secret_len);
    slot->secret_len = secret_len;
    memcpy(slot->key, key, SHA256_LEN);
    pthread_rwlock_unlock(&cache->lock);
}

/* ---- validation helpers ---- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_lower_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f');
}

/* RFC 9110 tchar, lowercase letters only (SignedHeaders lists lowercase names). */
static bool is_header_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || is_digit(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

bool hf_sigv4_akid_is_valid(const char *akid)
{
    size_t n;

    if (akid == NULL) return false;
    n = strlen(akid);
    if (n < AKID_MIN || n > AKID_MAX) return false;
    for (size_t i = 0; i < n; i++)
        if (!((akid[i] >= 'A' && akid[i] <= 'Z') || (akid[i] >= '2' && akid[i] <= '7')))
            return false;
    return true;
}

bool hf_sigv4_secret_is_valid(const char *secret)
{
    size_t n;

    if (secret == NULL) return false;
    n = strnlen(secret, SECRET_MAX + 1);
    if (n < SECRET_MIN || n > SECRET_MAX) return false;
    for (size_t i = 0; i < n; i++) {
        char c = secret[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '/' ||
              c == '+' || c == '='))
            return false;
    }
    return true;
}

/* "yyyymmddThhmmssZ", a real UTC date and time (no Feb 30, no leap second). */
static bool amz_date_parse(const char *s, size_t n, time_t *out)
{
    int v[6] = {0};
    static const int offs[6] = {0, 4, 6, 9, 11, 13}, lens[6] = {4, 2, 2, 2, 2, 2};
    struct tm tm = {0}, check;
    time_t t;

    if (n != AMZ_DATE_LEN || s[8] != 'T' || s[15] != 'Z') return false;
    for (int f = 0; f < 6; f++)
        for (int i = 0; i < lens[f]; i++) {
            if (!is_digit(s[offs[f] + i])) return false;
            v[f] = v[f] * 10 + (s[offs[f] + i] - '0');
        }
    if (v[0] < 1970 || v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 ||
        v[5] > 59)
        return false;
    tm.tm_year = v[0] - 1900;
    tm.tm_mon = v[1] - 1;
    tm.tm_mday = v[2];
    tm.tm_hour = v[3];
    tm.tm_min = v[4];
    tm.tm_sec = v[5];
    t = timegm(&tm);
    if (t == (time_t)-1 || gmtime_r(&t, &check) == NULL) return false;
    if (check.tm_mday != v[2] || check.tm_mon != v[1] - 1) return false;
    *out = t;
    return true;
}

/* ---- Authorization ---- */

enum parse_status {
    PARSE_OK,
    PARSE_MALFORMED,
    PARSE_BAD_TERMINATOR, /* well formed, but the scope does not end in aws4_request */
};

/* Credential=AKID/yyyymmdd/region/service/aws4_request (v is not NUL-terminated). */
static enum parse_status credential_parse(const char *v, size_t n, struct hf_sigv4_auth *out,
                                          const char **reason)
{
    const char *part[5];
    size_t len[5];
    size_t k = 0, start = 0;

    for (size_t i = 0; i <= n; i++) {
        if (i == n || v[i] == '/') {
            if (k == 5) goto malformed;
            part[k] = v + start;
            len[k] = i - start;
            k++;
            start = i + 1;
        }
    }
    if (k != 5) goto malformed;
    /* access key id */
    if (len[0] < AKID_MIN || len[0] > AKID_MAX) goto malformed;
    memcpy(out->akid, part[0], len[0]);
    out->akid[len[0]] = '\0';
    if (!hf_sigv4_akid_is_valid(out->akid)) goto malformed;
    /* date */
    if (len[1] != 8) goto malformed;
    for (size_t i = 0; i < 8; i++)
        if (!is_digit(part[1][i])) goto malformed;
    memcpy(out->date, part[1], 8);
    out->date[8] = '\0';
    /* region and service: checked against the policy later; here only their shape */
    for (int f = 2; f <= 3; f++) {
        char *dst = f == 2 ? out->region : out->service;

        if (len[f] == 0 || len[f] > SCOPE_FIELD_MAX) goto malformed;
        for (size_t i = 0; i < len[f]; i++)
            if (part[f][i] <= ' ' || part[f][i] > '~') goto malformed;
        memcpy(dst, part[f], len[f]);
        dst[len[f]] = '\0';
    }
    if (len[4] != strlen(TERMINATOR) || memcmp(part[4], TERMINATOR, len[4]) != 0)
        return PARSE_BAD_TERMINATOR;
    return PARSE_OK;
malformed:
    *reason = "malformed Credential in Authorization";
    return PARSE_MALFORMED;
}

/* Lowercase header names joined by ';', strictly ascending (so each appears once, and the
 * canonical headers come out in the sorted order SigV4 requires). */
static bool signed_headers_parse(const char *v, size_t n, struct hf_sigv4_auth *out)
{
    const char *prev = NULL;
    size_t prev_len = 0, start = 0;

    if (n == 0 || n >= sizeof(out->signed_headers)) return false;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || v[i] == ';') {
            const char *name = v + start;
            size_t len = i - start;
            int cmp;

            if (len == 0) return false;
            if (prev != NULL) {
                cmp = memcmp(prev, name, prev_len < len ? prev_len : len);
                if (cmp > 0 || (cmp == 0 && prev_len >= len)) return false;
            }
            prev = name;
            prev_len = len;
            start = i + 1;
        } else if (!is_header_name_char(v[i])) {
            return false;
        }
    }
    memcpy(out->signed_headers, v, n);
    out->signed_headers[n] = '\0';
    return true;
}

static enum parse_status authorization_parse(const char *h, struct hf_sigv4_auth *out,
                                             const char **reason)
{
    size_t alg_len = strlen(HF_SIGV4_ALGORITHM);
    bool have_cred = false, have_sh = false, have_sig = false, bad_terminator = false;
    const char *p;

    memset(out, 0, sizeof(*out));
    *reason = "malformed Authorization";
    if (h == NULL) return PARSE_MALFORMED;
    /* A header value's surrounding whitespace is not part of it (RFC 9110, 5.5). */
    while (is_blank(*h))
        h++;
    if (strncmp(h, HF_SIGV4_ALGORITHM, alg_len) != 0 || !is_blank(h[alg_len])) {
        *reason = "Authorization is not " HF_SIGV4_ALGORITHM;
        return PARSE_MALFORMED;
    }
    p = h + alg_len;
    while (is_blank(*p))
        p++;
    for (;;) {
        const char *name = p, *val;
        size_t name_len, val_len;

        while (*p != '\0' && *p != '=' && *p != ',' && !is_blank(*p))
            p++;
        if (*p != '=') return PARSE_MALFORMED;
        name_len = (size_t)(p - name);
        val = ++p;
        while (*p != '\0' && *p != ',' && !is_blank(*p))
            p++;
        val_len = (size_t)(p - val);
        if (name_len == 10 && memcmp(name, "Credential", 10) == 0 && !have_cred) {
            enum parse_status st = credential_parse(val, val_len, out, reason);

            if (st == PARSE_MALFORMED) return st;
            bad_terminator = st == PARSE_BAD_TERMINATOR;
            have_cred = true;
        } else if (name_len == 13 && memcmp(name, "SignedHeaders", 13) == 0 && !have_sh) {
            if (!signed_headers_parse(val, val_len, out)) {
                *reason = "malformed SignedHeaders in Authorization";
                return PARSE_MALFORMED;
            }
            have_sh = true;
        } else if (name_len == 9 && memcmp(name, "Signature", 9) == 0 && !have_sig) {
            if (val_len != 64) goto bad_signature;
            for (size_t i = 0; i < 64; i++)
                if (!is_lower_hex(val[i])) goto bad_signature;
            memcpy(out->signature, val, 64);
            out->signature[64] = '\0';
            have_sig = true;
        } else {
            *reason = "unknown or repeated component in Authorization";
            return PARSE_MALFORMED;
        }
        while (is_blank(*p))
            p++;
        if (*p == '\0') break;
        if (*p != ',') return PARSE_MALFORMED;
        p++;
        while (is_blank(*p))
            p++;
    }
    if (!have_cred || !have_sh || !have_sig) {
        *reason = "Authorization lacks Credential, SignedHeaders or Signature";
        return PARSE_MALFORMED;
    }
    return bad_terminator ? PARSE_BAD_TERMINATOR : PARSE_OK;
bad_signature:
    *reason = "Signature in Authorization is not 64 lowercase hex digits";
    return PARSE_MALFORMED;
}

bool hf_sigv4_parse_authorization(const char *header, struct hf_sigv4_auth *out)
{
    const char *reason;

    if (out == NULL) return false;
    return authorization_parse(header, out, &reason) == PARSE_OK;
}

/* ---- the canonical request ---- */

struct buf {
    char *p;
    size_t len, cap;
    bool failed;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
    size_t need, cap;
    char *np;

    if (b->failed) return;
    if (n > SIZE_MAX - b->len - 1) goto fail;
    need = b->len + n + 1;
    if (need > b->cap) {
        cap = b->cap > SIZE_MAX / 2 ? need : b->cap * 2;
        if (cap < need) cap = need;
        if (cap < 256) cap = 256;
        np = realloc(b->p, cap);
        if (np == NULL) goto fail;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return;
fail:
    b->failed = true;
}

static void buf_adds(struct buf *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

static int hex_value(char c)
{
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* AWS's UriEncode of one query name or value, after undoing the client's own encoding (the
 * query arrives encoded): unreserved characters stay, every other byte becomes %XX. A '%' not
 * followed by two hex digits is taken literally. */
static void query_part_add(struct buf *b, const char *s, size_t n)
{
    static const char digits[] = "0123456789ABCDEF";

    for (size_t i = 0; i < n && !b->failed; i++) {
        unsigned char c = (unsigned char)s[i];
        char enc[3];

        if (c == '%' && i + 2 < n && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
            c = (unsigned char)(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
            i += 2;
        }
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            enc[0] = (char)c;
            buf_add(b, enc, 1);
        } else {
            enc[0] = '%';
            enc[1] = digits[c >> 4];
            enc[2] = digits[c & 15];
            buf_add(b, enc, 3);
        }
    }
}

struct query_param {
    char *name;  /* encoded */
    char *value; /* encoded */
};

static int query_param_cmp(const void *a, const void *b)
{
    const struct query_param *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    return c != 0 ? c : strcmp(x->value, y->value);
}

/* Parameters encoded, sorted by name then value (byte order), joined by '&'; a parameter with
 * no '=' gets an empty value. */
static bool query_canonicalize(const char *q, struct buf *out)
{
    struct query_param *params = NULL;
    size_t n = 0, max = 1;
    bool ok = false;

    if (q == NULL || *q == '\0') return true;
    for (const char *p = q; *p != '\0'; p++)
        if (*p == '&') max++;
    params = calloc(max, sizeof(*params));
    if (params == NULL) goto done;
    for (const char *p = q; *p != '\0';) {
        size_t len = strcspn(p, "&");
        const char *eq = memchr(p, '=', len);
        size_t name_len = eq != NULL ? (size_t)(eq - p) : len;
        struct buf nb = {0}, vb = {0};

        if (len > 0) {
            buf_add(&nb, "", 0);
            buf_add(&vb, "", 0);
            query_part_add(&nb, p, name_len);
            if (eq != NULL) query_part_add(&vb, eq + 1, len - name_len - 1);
            params[n].name = nb.p;
            params[n].value = vb.p;
            n++;
            if (nb.failed || vb.failed) goto done;
        }
        p += len;
        if (*p == '&') p++;
    }
    qsort(params, n, sizeof(*params), query_param_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i > 0) buf_add(out, "&", 1);
        buf_adds(out, params[i].name);
        buf_add(out, "=", 1);
        buf_adds(out, params[i].value);
    }
    ok = !out->failed;
done:
    for (size_t i = 0; i < n; i++) {
        free(params[i].name);
        free(params[i].value);
    }
    free(params);
    return ok;
}

/* Trimmed, with every inner run of spaces and tabs as one space (AWS's Trimall; curl does the
 * same when it signs). */
static void header_value_add(struct buf *b, const char *v)
{
    const char *end;

    while (is_blank(*v))
        v++;
    end = v + strlen(v);
    while (end > v && is_blank(end[-1]))
        end--;
    while (v < end) {
        const char *run = v;

        while (v < end && !is_blank(*v))
            v++;
        buf_add(b, run, (size_t)(v - run));
        if (v < end) {
            buf_add(b, " ", 1);
            while (v < end && is_blank(*v))
                v++;
        }
    }
}

enum creq_status {
    CREQ_OK,
    CREQ_MISSING_HEADER, /* missing gets the name */
    CREQ_INVALID,        /* bad arguments or SignedHeaders */
    CREQ_NO_MEMORY,
};

static enum creq_status canonical_build(const struct hf_sigv4_request *req,
                                        const struct hf_sigv4_auth *auth, char **out, char *missing,
                                        size_t missing_len)
{
    struct buf b = {0};
    unsigned char digest[SHA256_LEN];
    char hex[2 * SHA256_LEN + 1];
    char name[sizeof(auth->signed_headers)];
    const char *p;
    enum creq_status st = CREQ_INVALID;

    *out = NULL;
    if (req == NULL || auth == NULL || req->method == NULL || req->header == NULL) goto done;
    if (req->body == NULL && req->body_len != 0) goto done;
    if (auth->signed_headers[0] == '\0' ||
        strnlen(auth->signed_headers, sizeof(auth->signed_headers)) == sizeof(auth->signed_headers))
        goto done;
    if (!crypto_is_ready()) {
        st = CREQ_NO_MEMORY;
        goto done;
    }

    buf_adds(&b, req->method);
    buf_add(&b, "\n", 1);
    /* The path exactly as received (the XKS spec's rule, and what curl and KMS sign): no
     * normalisation or re-encoding; an empty path is "/". */
    buf_adds(&b, req->path != NULL && req->path[0] != '\0' ? req->path : "/");
    buf_add(&b, "\n", 1);
    if (!query_canonicalize(req->query, &b)) {
        st = CREQ_NO_MEMORY;
        goto done;
    }
    buf_add(&b, "\n", 1);
    for (p = auth->signed_headers; *p != '\0';) {
        size_t len = strcspn(p, ";");
        const char *value;

        if (len == 0) goto done;
        memcpy(name, p, len);
        name[len] = '\0';
        value = req->header(req->header_ctx, name);
        if (value == NULL) {
            if (missing != NULL && missing_len > 0) {
                size_t n = strnlen(name, missing_len - 1);

                memcpy(missing, name, n);
                missing[n] = '\0';
            }
            st = CREQ_MISSING_HEADER;
            goto done;
        }
        buf_add(&b, name, len);
        buf_add(&b, ":", 1);
        header_value_add(&b, value);
        buf_add(&b, "\n", 1);
        p += len;
        if (*p == ';') {
            p++;
            if (*p == '\0') goto done;
        }
    }
    buf_add(&b, "\n", 1);
    buf_adds(&b, auth->signed_headers);
    buf_add(&b, "\n", 1);
    if (!sha256(req->body != NULL ? (const void *)req->body : "", req->body_len, digest)) {
        st = CREQ_NO_MEMORY;
        goto done;
    }
    hex_encode(digest, sizeof(digest), hex);
    buf_add(&b, hex, 2 * SHA256_LEN);
    if (b.failed) {
        st = CREQ_NO_MEMORY;
        goto done;
    }
    *out = b.p;
    b.p = NULL;
    st = CREQ_OK;
done:
    free(b.p);
    return st;
}

char *hf_sigv4_canonical_request(const struct hf_sigv4_request *req,
                                 const struct hf_sigv4_auth *auth)
{
    char *out = NULL;

    canonical_build(req, auth, &out, NULL, 0);
    return out;
}

/* ---- signing and verifying ---- */

/* The signature (64 lowercase hex + NUL) of the canonical request under key. */
static bool signature_compute(const char *creq, const char *amz_date,
                              const struct hf_sigv4_auth *auth, const char *service,
                              const unsigned char key[SHA256_LEN], char sig[65])
{
    unsigned char digest[SHA256_LEN], mac[SHA256_LEN];
    char hex[2 * SHA256_LEN + 1];
    char sts[256];
    int n;
    bool ok = false;

    if (!sha256(creq, strlen(creq), digest)) goto done;
    hex_encode(digest, sizeof(digest), hex);
    n = snprintf(sts, sizeof(sts), "%s\n%s\n%s/%s/%s/%s\n%s", HF_SIGV4_ALGORITHM, amz_date,
                 auth->date, auth->region, service, TERMINATOR, hex);
    if (n < 0 || (size_t)n >= sizeof(sts)) goto done;
    if (!hmac_sha256(key, SHA256_LEN, sts, (size_t)n, mac)) goto done;
    hex_encode(mac, sizeof(mac), sig);
    ok = true;
done:
    OPENSSL_cleanse(mac, sizeof(mac));
    return ok;
}

/* why = before + arg + after, cut to whylen. */
static void why_set(char *why, size_t whylen, const char *before, const char *arg,
                    const char *after)
{
    if (why == NULL || whylen == 0) return;
    snprintf(why, whylen, "%s%s%s", before, arg != NULL ? arg : "", after != NULL ? after : "");
}

static bool region_is_allowed(const struct hf_sigv4_policy *policy, const char *region)
{
    for (size_t i = 0; i < policy->nregions; i++)
        if (policy->regions[i] != NULL && strcmp(policy->regions[i], region) == 0) return true;
    return false;
}

static bool signed_headers_has(const char *list, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = list; *p != '\0';) {
        size_t len = strcspn(p, ";");

        if (len == n && memcmp(p, name, n) == 0) return true;
        p += len;
        if (*p == ';') p++;
    }
    return false;
}

enum hf_sigv4_result hf_sigv4_verify(const struct hf_sigv4_request *req,
                                     const struct hf_sigv4_policy *policy,
                                     struct hf_sigv4_cache *cache, char *akid_out, char *why,
                                     size_t whylen)
{
    struct hf_sigv4_auth auth;
    enum hf_sigv4_result result = HF_SIGV4_MALFORMED;
    const char *authz, *date_hdr, *date_end, *secret, *reason;
    char amz_date[AMZ_DATE_LEN + 1];
    char missing[64];
    char sig[65] = {0};
    unsigned char key[SHA256_LEN];
    char *creq = NULL;
    unsigned max_skew;
    uint64_t skew;
    size_t secret_len;
    time_t t;

    if (akid_out != NULL) akid_out[0] = '\0';
    why_set(why, whylen, "", NULL, NULL);
    if (req == NULL || policy == NULL || req->header == NULL || req->method == NULL ||
        policy->service == NULL || policy->secret == NULL ||
        (policy->regions == NULL && policy->nregions > 0)) {
        why_set(why, whylen, "signature verifier misconfigured", NULL, NULL);
        goto done;
    }

    authz = req->header(req->header_ctx, "authorization");
    if (authz == NULL) {
        why_set(why, whylen, "Authorization header missing", NULL, NULL);
        goto done;
    }
    switch (authorization_parse(authz, &auth, &reason)) {
    case PARSE_OK:
        break;
    case PARSE_BAD_TERMINATOR:
        if (akid_out != NULL) memcpy(akid_out, auth.akid, sizeof(auth.akid));
        why_set(why, whylen, "credential scope does not end in " TERMINATOR, NULL, NULL);
        result = HF_SIGV4_BAD_SCOPE;
        goto done;
    default:
        why_set(why, whylen, reason, NULL, NULL);
        goto done;
    }
    if (akid_out != NULL) memcpy(akid_out, auth.akid, sizeof(auth.akid));

    date_hdr = req->header(req->header_ctx, "x-amz-date");
    if (date_hdr == NULL) {
        why_set(why, whylen, "X-Amz-Date header missing", NULL, NULL);
        goto done;
    }
    while (is_blank(*date_hdr))
        date_hdr++;
    date_end = date_hdr + strnlen(date_hdr, AMZ_DATE_LEN + 64);
    while (date_end > date_hdr && is_blank(date_end[-1]))
        date_end--;
    if (!amz_date_parse(date_hdr, (size_t)(date_end - date_hdr), &t)) {
        why_set(why, whylen, "X-Amz-Date is not yyyymmddThhmmssZ", NULL, NULL);
        goto done;
    }
    memcpy(amz_date, date_hdr, AMZ_DATE_LEN);
    amz_date[AMZ_DATE_LEN] = '\0';

    result = HF_SIGV4_BAD_SCOPE;
    if (memcmp(auth.date, amz_date, 8) != 0) {
        why_set(why, whylen, "credential scope date differs from X-Amz-Date", NULL, NULL);
        goto done;
    }
    if (strcmp(auth.service, policy->service) != 0) {
        why_set(why, whylen, "credential scope service is not ", policy->service, NULL);
        goto done;
    }
    if (!region_is_allowed(policy, auth.region)) {
        why_set(why, whylen, "credential scope region is not allowed", NULL, NULL);
        goto done;
    }

    /* Host binds the signature to this endpoint and X-Amz-Date to this moment; KMS and curl
     * always sign both (XKS spec, Appendix A). */
    result = HF_SIGV4_MALFORMED;
    if (!signed_headers_has(auth.signed_headers, "host") ||
        !signed_headers_has(auth.signed_headers, "x-amz-date")) {
        why_set(why, whylen, "SignedHeaders must include host and x-amz-date", NULL, NULL);
        goto done;
    }

    max_skew = policy->max_skew_s != 0 ? policy->max_skew_s : HF_SIGV4_MAX_SKEW_S;
    /* Unsigned difference: exact for any two time_t values, so no overflow on a wild clock. */
    skew = t > req->now ? (uint64_t)t - (uint64_t)req->now : (uint64_t)req->now - (uint64_t)t;
    if (skew > max_skew) {
        why_set(why, whylen, "X-Amz-Date is too far from the server's time", NULL, NULL);
        result = HF_SIGV4_SKEW;
        goto done;
    }

    secret = policy->secret(policy->secret_ctx, auth.akid);
    if (secret == NULL) {
        why_set(why, whylen, "unknown access key id", NULL, NULL);
        result = HF_SIGV4_UNKNOWN_KEY;
        goto done;
    }
    /* The configuration should have refused it; a short secret must never authenticate. */
    if (!hf_sigv4_secret_is_valid(secret)) {
        why_set(why, whylen, "access key id has no usable secret", NULL, NULL);
        result = HF_SIGV4_UNKNOWN_KEY;
        goto done;
    }
    secret_len = strlen(secret);

    switch (canonical_build(req, &auth, &creq, missing, sizeof(missing))) {
    case CREQ_OK:
        break;
    case CREQ_MISSING_HEADER:
        why_set(why, whylen, "signed header ", missing, " is not in the request");
        goto done;
    default:
        why_set(why, whylen, "internal error building the canonical request", NULL, NULL);
        goto done;
    }

    if (cache == NULL || !cache_lookup(cache, &auth, policy->service, secret, secret_len, key)) {
        if (!signing_key_derive(secret, secret_len, auth.date, auth.region, policy->service, key)) {
            why_set(why, whylen, "internal error deriving the signing key", NULL, NULL);
            goto done;
        }
        if (cache != NULL) cache_insert(cache, &auth, policy->service, secret, secret_len, key);
    }
    if (!signature_compute(creq, amz_date, &auth, policy->service, key, sig)) {
        why_set(why, whylen, "internal error computing the signature", NULL, NULL);
        goto done;
    }
    if (CRYPTO_memcmp(sig, auth.signature, 64) != 0) {
        why_set(why, whylen, "signature does not match", NULL, NULL);
        result = HF_SIGV4_MISMATCH;
        goto done;
    }
    result = HF_SIGV4_OK;
done:
    OPENSSL_cleanse(key, sizeof(key));
    OPENSSL_cleanse(sig, sizeof(sig));
    free(creq);
    return result;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lowercased, trimmed, sorted, de-duplicated, ';'-joined into out (sizeof auth.signed_headers). */
static bool signed_headers_normalize(const char *in, char *out, size_t outlen)
{
    char copy[sizeof(((struct hf_sigv4_auth *)0)->signed_headers)];
    char *names[sizeof(copy) / 2 + 1];
    size_t n = 0, len = 0, inlen = strlen(in);
    char *save = NULL;

    if (inlen >= sizeof(copy)) return false;
    memcpy(copy, in, inlen + 1);
    for (char *tok = strtok_r(copy, ";", &save); tok != NULL; tok = strtok_r(NULL, ";", &save)) {
        char *end;

        while (is_blank(*tok))
            tok++;
        end = tok + strlen(tok);
        while (end > tok && is_blank(end[-1]))
            *--end = '\0';
        if (*tok == '\0') continue;
        for (char *c = tok; *c != '\0'; c++) {
            if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
            if (!is_header_name_char(*c)) return false;
        }
        names[n++] = tok;
    }
    if (n == 0) return false;
    qsort(names, n, sizeof(names[0]), name_cmp);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(names[i]);

        if (i > 0 && strcmp(names[i], names[i - 1]) == 0) continue;
        if (len + l + 2 > outlen) return false;
        if (len > 0) out[len++] = ';';
        memcpy(out + len, names[i], l + 1);
        len += l;
    }
    return true;
}

#define AUTHZ_FORMAT "%s Credential=%s/%s/%s/%s/%s, SignedHeaders=%s, Signature=%s"

char *hf_sigv4_sign(const struct hf_sigv4_request *req, const char *akid, const char *secret,
                    const char *region, const char *service, const char *x_amz_date,
                    const char *signed_headers)
{
    struct hf_sigv4_auth auth = {0};
    unsigned char key[SHA256_LEN];
    char sig[65] = {0};
    char *creq = NULL, *out = NULL;
    size_t outlen;
    time_t t;
    int n;

    if (req == NULL || akid == NULL || secret == NULL || region == NULL || service == NULL ||
        x_amz_date == NULL || signed_headers == NULL)
        return NULL;
    /* Any credential, not only XKS-shaped ones: AWS's own test suite signs with AKIDEXAMPLE. */
    if (akid[0] == '\0' || strlen(akid) >= sizeof(auth.akid) || region[0] == '\0' ||
        strlen(region) >= sizeof(auth.region) || service[0] == '\0' ||
        strlen(service) >= sizeof(auth.service))
        return NULL;
    if (strchr(akid, '/') != NULL || strchr(region, '/') != NULL || strchr(service, '/') != NULL)
        return NULL;
    if (!amz_date_parse(x_amz_date, strlen(x_amz_date), &t)) return NULL;
    strcpy(auth.akid, akid);
    memcpy(auth.date, x_amz_date, 8);
    strcpy(auth.region, region);
    strcpy(auth.service, service);
    if (!signed_headers_normalize(signed_headers, auth.signed_headers, sizeof(auth.signed_headers)))
        return NULL;
    if (!crypto_is_ready()) return NULL;
    if (canonical_build(req, &auth, &creq, NULL, 0) != CREQ_OK) goto done;
    if (!signing_key_derive(secret, strlen(secret), auth.date, region, service, key)) goto done;
    if (!signature_compute(creq, x_amz_date, &auth, service, key, sig)) goto done;
    /* Every part is bounded by auth's field sizes, so the length fits an int. */
    n = snprintf(NULL, 0, AUTHZ_FORMAT, HF_SIGV4_ALGORITHM, akid, auth.date, region, service,
                 TERMINATOR, auth.signed_headers, sig);
    if (n < 0) goto done;
    outlen = (size_t)n + 1;
    out = malloc(outlen);
    if (out == NULL) goto done;
    snprintf(out, outlen, AUTHZ_FORMAT, HF_SIGV4_ALGORITHM, akid, auth.date, region, service,
             TERMINATOR, auth.signed_headers, sig);
done:
    OPENSSL_cleanse(key, sizeof(key));
    free(creq);
    return out;
}
