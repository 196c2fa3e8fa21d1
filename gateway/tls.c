/* Server TLS (see tls.h). libmicrohttpd 0.9.75 only asks for a client certificate
 * (GNUTLS_CERT_REQUEST) when given a trust list, and checks nothing during the handshake. Its
 * certificate callback, though, runs inside the handshake with the session in hand, before the
 * server's CertificateRequest is written: there we require (or, when optional, request) the
 * certificate and install a verify function, so a missing (when required) or refused client
 * certificate fails the handshake itself. */
#include "hf-build.h"

#include "gateway/tls.h"
#include "gateway/config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <openssl/crypto.h>

/* One listener's TLS: loaded at start, read-only afterwards (handshakes read it unlocked). */
struct tls_ctx {
    unsigned port;
    char *priority;
    gnutls_pcert_st *pcerts;
    unsigned npcerts;
    gnutls_privkey_t key;
    char *client_ca_pem;
    gnutls_x509_trust_list_t trust;
    enum hf_gw_client_cert mode;
    char **subjects;
    size_t nsubjects;
    char **sans;
    size_t nsans;
};

static struct {
    bool ready;
    struct tls_ctx ctx[HF_GW_MAX_LISTENERS];
    size_t n;
} tls;

/* secret: what the file is when it holds a private key (its mode is checked), else NULL. */
static char *file_read(const char *path, const char *secret, size_t *len, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "rb");
    char *buf = NULL;
    long size;

    if (!fp) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (secret && !hf_gw_secret_file_is_usable(fileno(fp), secret, path, err, errlen)) goto done;
    if (fseek(fp, 0, SEEK_END) != 0 || (size = ftell(fp)) < 0 || size > 1024 * 1024 ||
        fseek(fp, 0, SEEK_SET) != 0) {
        snprintf(err, errlen, "%s: cannot read (or larger than 1 MiB)", path);
        goto done;
    }
    if (!(buf = malloc((size_t)size + 1))) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (fread(buf, 1, (size_t)size, fp) != (size_t)size) {
        snprintf(err, errlen, "%s: read error", path);
        free(buf);
        buf = NULL;
        goto done;
    }
    buf[size] = '\0';
    *len = (size_t)size;
done:
    fclose(fp);
    return buf;
}

static bool strings_copy(char ***dst, size_t *ndst, char *const *src, size_t n)
{
    if (n == 0) return true;
    if (!(*dst = calloc(n, sizeof(char *)))) return false;
    for (size_t i = 0; i < n; i++)
        if (!((*dst)[i] = strdup(src[i]))) return false;
    *ndst = n;
    return true;
}

static bool credentials_load(struct tls_ctx *c, const struct hf_gw_tls_conf *t, const char *where,
                             char *err, size_t errlen)
{
    gnutls_datum_t d;
    size_t len = 0;
    char *pem = NULL, what[112];
    bool ok = false;
    int rv;

    if (!(pem = file_read(t->cert, NULL, &len, err, errlen))) return false;
    d = (gnutls_datum_t){(unsigned char *)pem, (unsigned)len};
    c->npcerts = 16;
    if (!(c->pcerts = calloc(c->npcerts, sizeof(*c->pcerts)))) goto done;
    rv = gnutls_pcert_list_import_x509_raw(c->pcerts, &c->npcerts, &d, GNUTLS_X509_FMT_PEM, 0);
    if (rv < 0 || c->npcerts == 0) {
        c->npcerts = 0;
        snprintf(err, errlen, "%s: %s", t->cert, gnutls_strerror(rv));
        goto done;
    }
    free(pem);
    snprintf(what, sizeof(what), "%s key", where);
    if (!(pem = file_read(t->key, what, &len, err, errlen))) goto done;
    d = (gnutls_datum_t){(unsigned char *)pem, (unsigned)len};
    if ((rv = gnutls_privkey_init(&c->key)) < 0 ||
        (rv = gnutls_privkey_import_x509_raw(c->key, &d, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        snprintf(err, errlen, "%s: %s", t->key, gnutls_strerror(rv));
        goto done;
    }
    ok = true;
done:
    if (pem) OPENSSL_clear_free(pem, len); /* the private key's PEM */
    return ok;
}

static bool client_ca_load(struct tls_ctx *c, const struct hf_gw_tls_conf *t, char *err,
                           size_t errlen)
{
    gnutls_datum_t d;
    size_t len = 0;
    int rv;

    if (!t->client_ca || t->client_cert == HF_GW_CLIENT_CERT_OFF) return true;
    if (!(c->client_ca_pem = file_read(t->client_ca, NULL, &len, err, errlen))) return false;
    d = (gnutls_datum_t){(unsigned char *)c->client_ca_pem, (unsigned)len};
    if ((rv = gnutls_x509_trust_list_init(&c->trust, 0)) < 0 ||
        (rv = gnutls_x509_trust_list_add_trust_mem(c->trust, &d, NULL, GNUTLS_X509_FMT_PEM, 0,
                                                   0)) <= 0) {
        snprintf(err, errlen, "%s: %s", t->client_ca,
                 rv == 0 ? "no certificate in it" : gnutls_strerror(rv));
        return false;
    }
    if (!strings_copy(&c->subjects, &c->nsubjects, t->subjects, t->nsubjects) ||
        !strings_copy(&c->sans, &c->nsans, t->sans, t->nsans)) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    c->mode = t->client_cert;
    return true;
}

static bool ctx_load(struct tls_ctx *c, const struct hf_gw_config *cfg,
                     const struct hf_gw_listen *l, char *err, size_t errlen)
{
    const struct hf_gw_tls_conf *t = hf_gw_config_listen_tls(cfg, l);
    char where[96];
    const char *bad = NULL;
    gnutls_priority_t prio;
    int rv;

    if (l->own_tls)
        snprintf(where, sizeof(where), "[listener:%s]", l->name);
    else
        snprintf(where, sizeof(where), "[tls]");
    if (!t->cert || !t->key) {
        snprintf(err, errlen, "%s needs cert and key", where);
        return false;
    }
    c->port = (unsigned)strtoul(l->port, NULL, 10);
    if (!(c->priority = strdup(t->priority ? t->priority : HF_GW_TLS_PRIORITY))) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    /* A bad priority string is a config error, not a handshake failure on every connection. */
    if ((rv = gnutls_priority_init(&prio, c->priority, &bad)) < 0) {
        snprintf(err, errlen, "%s priority: %s at \"%s\"", where, gnutls_strerror(rv),
                 bad ? bad : "");
        return false;
    }
    gnutls_priority_deinit(prio);
    return credentials_load(c, t, where, err, errlen) && client_ca_load(c, t, err, errlen);
}

bool hf_gw_tls_setup(const struct hf_gw_config *cfg, char *err, size_t errlen)
{
    if (tls.ready) return true;
    for (size_t i = 0; i < cfg->nlistens; i++) {
        if (!cfg->listens[i].tls) continue;
        if (tls.n == HF_GW_MAX_LISTENERS) {
            snprintf(err, errlen, "at most %d listeners", HF_GW_MAX_LISTENERS);
            goto fail;
        }
        if (!ctx_load(&tls.ctx[tls.n++], cfg, &cfg->listens[i], err, errlen)) goto fail;
    }
    tls.ready = true;
    return true;
fail:
    hf_gw_tls_teardown();
    return false;
}

static void ctx_free(struct tls_ctx *c)
{
    for (unsigned i = 0; i < c->npcerts; i++)
        gnutls_pcert_deinit(&c->pcerts[i]);
    free(c->pcerts);
    if (c->key) gnutls_privkey_deinit(c->key);
    if (c->trust) gnutls_x509_trust_list_deinit(c->trust, 1);
    free(c->client_ca_pem);
    for (size_t i = 0; i < c->nsubjects; i++)
        free(c->subjects[i]);
    free(c->subjects);
    for (size_t i = 0; i < c->nsans; i++)
        free(c->sans[i]);
    free(c->sans);
    free(c->priority);
}

void hf_gw_tls_teardown(void)
{
    for (size_t i = 0; i < tls.n; i++)
        ctx_free(&tls.ctx[i]);
    memset(&tls, 0, sizeof(tls));
}

bool hf_gw_tls_is_ready(void)
{
    return tls.ready;
}

static const struct tls_ctx *ctx_of_port(unsigned port)
{
    for (size_t i = 0; i < tls.n; i++)
        if (tls.ctx[i].port == port) return &tls.ctx[i];
    return NULL;
}

const char *hf_gw_tls_priority(const char *port)
{
    const struct tls_ctx *c = ctx_of_port((unsigned)strtoul(port, NULL, 10));

    return c ? c->priority : NULL;
}

const char *hf_gw_tls_client_ca_pem(const char *port)
{
    const struct tls_ctx *c = ctx_of_port((unsigned)strtoul(port, NULL, 10));

    return c ? c->client_ca_pem : NULL;
}

/* The listener a handshake runs on, by the port the connection came in on: libmicrohttpd's
 * certificate callback has no closure, but it gives the session, whose transport is the
 * accepted socket (libmicrohttpd sets it with gnutls_transport_set_int). */
static const struct tls_ctx *ctx_of_session(gnutls_session_t session)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd = gnutls_transport_get_int(session);

    if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return NULL;
    if (ss.ss_family == AF_INET) return ctx_of_port(ntohs(((struct sockaddr_in *)&ss)->sin_port));
    if (ss.ss_family == AF_INET6)
        return ctx_of_port(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
    return NULL;
}

/* ---- reading a certificate ---------------------------------------------------------------- */

static char *dn_of(gnutls_x509_crt_t crt)
{
    gnutls_datum_t dn = {NULL, 0};
    char *out = NULL;

    if (gnutls_x509_crt_get_dn3(crt, &dn, 0) < 0) return NULL;
    if ((out = malloc(dn.size + 1))) {
        memcpy(out, dn.data, dn.size);
        out[dn.size] = '\0';
    }
    gnutls_free(dn.data);
    return out;
}

/* The subjectAltName values as text (DNS names, URIs, e-mail addresses, IP addresses), NUL
 * separated, ending with an empty string. *len excludes the final empty string's NUL. */
static char *sans_of(gnutls_x509_crt_t crt, size_t *outlen)
{
    char *out = NULL, *grown;
    size_t len = 0;

    for (unsigned seq = 0; seq < 64; seq++) {
        char buf[1024], text[INET6_ADDRSTRLEN];
        size_t size = sizeof(buf) - 1, vlen;
        const char *v = buf;
        int type = gnutls_x509_crt_get_subject_alt_name(crt, seq, buf, &size, NULL);

        if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) break;
        if (type < 0) continue; /* too long: skipped, never truncated into another name */
        buf[size] = '\0';
        if (type == GNUTLS_SAN_IPADDRESS) {
            if (!inet_ntop(size == 16 ? AF_INET6 : AF_INET, buf, text, sizeof(text))) continue;
            v = text;
        } else if (type != GNUTLS_SAN_DNSNAME && type != GNUTLS_SAN_URI &&
                   type != GNUTLS_SAN_RFC822NAME) {
            continue;
        }
        vlen = strlen(v);
        if (!(grown = realloc(out, len + vlen + 2))) {
            free(out);
            return NULL;
        }
        out = grown;
        memcpy(out + len, v, vlen + 1);
        len += vlen + 1;
    }
    if (!(grown = realloc(out, len + 1))) {
        free(out);
        return NULL;
    }
    grown[len] = '\0';
    *outlen = len;
    return grown;
}

/* The client's leaf certificate as presented (DER), or NULL. */
static const gnutls_datum_t *leaf_der(gnutls_session_t session)
{
    const gnutls_datum_t *chain;
    unsigned n = 0;

    if (gnutls_certificate_type_get(session) != GNUTLS_CRT_X509) return NULL;
    chain = gnutls_certificate_get_peers(session, &n);
    return chain && n > 0 ? &chain[0] : NULL;
}

static gnutls_x509_crt_t peer_cert(gnutls_session_t session)
{
    const gnutls_datum_t *leaf = leaf_der(session);
    gnutls_x509_crt_t crt;

    if (!leaf || gnutls_x509_crt_init(&crt) < 0) return NULL;
    if (gnutls_x509_crt_import(crt, leaf, GNUTLS_X509_FMT_DER) < 0) {
        gnutls_x509_crt_deinit(crt);
        return NULL;
    }
    return crt;
}

static bool name_in(char *const *list, size_t n, const char *v)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], v) == 0) return true;
    return false;
}

/* client_subject: the subject must be one of them; client_san: one SAN must be. */
static bool names_are_accepted(const struct tls_ctx *c, gnutls_x509_crt_t crt)
{
    bool ok = true;

    if (c->nsubjects) {
        char *dn = dn_of(crt);
        ok = dn && name_in(c->subjects, c->nsubjects, dn);
        free(dn);
    }
    if (ok && c->nsans) {
        size_t len = 0, off = 0;
        char *sans = sans_of(crt, &len);
        ok = false;
        while (sans && off < len && !ok) {
            ok = name_in(c->sans, c->nsans, sans + off);
            off += strlen(sans + off) + 1;
        }
        free(sans);
    }
    return ok;
}

/* Runs inside the handshake once the client's Certificate message is in (an empty one too,
 * when the certificate is optional): non-zero ends it. */
static int client_verify(gnutls_session_t session)
{
    const struct tls_ctx *c = ctx_of_session(session);
    const gnutls_datum_t *chain;
    gnutls_x509_crt_t *crts = NULL, crt = NULL;
    unsigned n = 0, status = 0, i;
    int result = GNUTLS_E_CERTIFICATE_ERROR;

    if (!c || !c->trust) goto done;
    chain = gnutls_certificate_get_peers(session, &n);
    if ((!chain || n == 0) && c->mode == HF_GW_CLIENT_CERT_OPTIONAL) {
        result = 0;
        goto done;
    }
    if (!chain || n == 0 || n > 16) goto done;
    if (!(crts = calloc(n, sizeof(*crts)))) goto done;
    for (i = 0; i < n; i++)
        if (gnutls_x509_crt_init(&crts[i]) < 0 ||
            gnutls_x509_crt_import(crts[i], &chain[i], GNUTLS_X509_FMT_DER) < 0)
            goto done;
    if (gnutls_x509_trust_list_verify_crt(c->trust, crts, n, 0, &status, NULL) < 0 || status != 0)
        goto done;
    crt = crts[0];
    if (!names_are_accepted(c, crt)) goto done;
    result = 0;
done:
    if (crts) {
        for (i = 0; i < n; i++)
            if (crts[i]) gnutls_x509_crt_deinit(crts[i]);
        free(crts);
    }
    return result;
}

int hf_gw_tls_cert_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                            const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                            gnutls_pcert_st **pcert, unsigned int *pcert_length,
                            gnutls_privkey_t *pkey)
{
    const struct tls_ctx *c = tls.ready ? ctx_of_session(session) : NULL;

    if (!c) return -1;
    if (c->trust) {
        gnutls_certificate_server_set_request(session, c->mode == HF_GW_CLIENT_CERT_REQUIRED
                                                           ? GNUTLS_CERT_REQUIRE
                                                           : GNUTLS_CERT_REQUEST);
        gnutls_session_set_verify_function(session, client_verify);
    }
    *pcert = c->pcerts;
    *pcert_length = c->npcerts;
    *pkey = c->key;
    return 0;
}

/* The TLS session of conn when its listener checks client certificates (only those have one
 * worth naming), else NULL. */
static gnutls_session_t checked_session(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info;
    const struct tls_ctx *c;

    if (!conn) return NULL;
    info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!info || !info->tls_session) return NULL;
    c = ctx_of_session((gnutls_session_t)info->tls_session);
    return c && c->trust ? (gnutls_session_t)info->tls_session : NULL;
}

bool hf_gw_tls_peer_names(struct MHD_Connection *conn, char **subject, char **sans)
{
    gnutls_session_t session = checked_session(conn);
    gnutls_x509_crt_t crt;
    size_t len = 0;

    *subject = NULL;
    *sans = NULL;
    if (!session || !(crt = peer_cert(session))) return false;
    *subject = dn_of(crt);
    *sans = sans_of(crt, &len);
    gnutls_x509_crt_deinit(crt);
    return true;
}

/* The leaf's DER hashed as presented, not parsed: a pin names those bytes, and client_verify
 * parsed and checked them in this session's handshake. Parsing it again on every request, for
 * names SAP does not use, cost about 1.5% of holdfastd's CPU under make bench-sap's RSA load
 * (libtasn1, GnuTLS and their mallocs, by perf). */
bool hf_gw_tls_peer_sha256(struct MHD_Connection *conn, unsigned char sha256[32])
{
    gnutls_session_t session = checked_session(conn);
    const gnutls_datum_t *leaf = session ? leaf_der(session) : NULL;

    /* GnuTLS's digest, not OpenSSL's SHA256(): that fetches the algorithm from the provider's
     * store on every call, under its lock, and SAP asks for this on every request (over half a
     * percent of holdfastd's CPU under SAP's RSA decrypts, most of it the fetch). */
    return leaf && gnutls_hash_fast(GNUTLS_DIG_SHA256, leaf->data, leaf->size, sha256) == 0;
}
