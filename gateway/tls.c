/* Server TLS (see tls.h). libmicrohttpd 0.9.75 only asks for a client certificate
 * (GNUTLS_CERT_REQUEST) when given a trust list, and checks nothing during the handshake. Its
 * certificate callback, though, runs inside the handshake with the session in hand, before the
 * server's CertificateRequest is written: there we require the certificate and install a verify
 * function, so a missing or refused client certificate fails the handshake itself. */
#include "hf-build.h"

#include "gateway/tls.h"
#include "gateway/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/x509.h>
#include <microhttpd.h>
#include <openssl/crypto.h>

static struct {
    bool ready;
    char *priority;
    gnutls_pcert_st *pcerts;
    unsigned npcerts;
    gnutls_privkey_t key;
    char *client_ca_pem;
    gnutls_x509_trust_list_t trust;
    char **subjects;
    size_t nsubjects;
    char **sans;
    size_t nsans;
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

static bool credentials_load(const struct hf_gw_config *cfg, char *err, size_t errlen)
{
    gnutls_datum_t d;
    size_t len = 0;
    char *pem = NULL;
    bool ok = false;
    int rv;

    if (!(pem = file_read(cfg->tls.cert, NULL, &len, err, errlen))) return false;
    d = (gnutls_datum_t){(unsigned char *)pem, (unsigned)len};
    tls.npcerts = 16;
    if (!(tls.pcerts = calloc(tls.npcerts, sizeof(*tls.pcerts)))) goto done;
    rv = gnutls_pcert_list_import_x509_raw(tls.pcerts, &tls.npcerts, &d, GNUTLS_X509_FMT_PEM, 0);
    if (rv < 0 || tls.npcerts == 0) {
        tls.npcerts = 0;
        snprintf(err, errlen, "%s: %s", cfg->tls.cert, gnutls_strerror(rv));
        goto done;
    }
    free(pem);
    if (!(pem = file_read(cfg->tls.key, "[tls] key", &len, err, errlen))) goto done;
    d = (gnutls_datum_t){(unsigned char *)pem, (unsigned)len};
    if ((rv = gnutls_privkey_init(&tls.key)) < 0 ||
        (rv = gnutls_privkey_import_x509_raw(tls.key, &d, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        snprintf(err, errlen, "%s: %s", cfg->tls.key, gnutls_strerror(rv));
        goto done;
    }
    ok = true;
done:
    if (pem) OPENSSL_clear_free(pem, len); /* the private key's PEM */
    return ok;
}

static bool client_ca_load(const struct hf_gw_config *cfg, char *err, size_t errlen)
{
    gnutls_datum_t d;
    size_t len = 0;
    int rv;

    if (!cfg->tls.client_ca) return true;
    if (!(tls.client_ca_pem = file_read(cfg->tls.client_ca, NULL, &len, err, errlen))) return false;
    d = (gnutls_datum_t){(unsigned char *)tls.client_ca_pem, (unsigned)len};
    if ((rv = gnutls_x509_trust_list_init(&tls.trust, 0)) < 0 ||
        (rv = gnutls_x509_trust_list_add_trust_mem(tls.trust, &d, NULL, GNUTLS_X509_FMT_PEM, 0,
                                                   0)) <= 0) {
        snprintf(err, errlen, "%s: %s", cfg->tls.client_ca,
                 rv == 0 ? "no certificate in it" : gnutls_strerror(rv));
        return false;
    }
    if (!strings_copy(&tls.subjects, &tls.nsubjects, cfg->tls.subjects, cfg->tls.nsubjects) ||
        !strings_copy(&tls.sans, &tls.nsans, cfg->tls.sans, cfg->tls.nsans)) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    return true;
}

bool hf_gw_tls_setup(const struct hf_gw_config *cfg, char *err, size_t errlen)
{
    const char *bad = NULL;
    gnutls_priority_t prio;
    int rv;

    if (tls.ready) return true;
    if (!cfg->tls.cert || !cfg->tls.key) {
        snprintf(err, errlen, "[tls] needs cert and key");
        return false;
    }
    tls.priority = strdup(cfg->tls.priority ? cfg->tls.priority : HF_GW_TLS_PRIORITY);
    if (!tls.priority) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    /* A bad priority string is a config error, not a handshake failure on every connection. */
    if ((rv = gnutls_priority_init(&prio, tls.priority, &bad)) < 0) {
        snprintf(err, errlen, "[tls] priority: %s at \"%s\"", gnutls_strerror(rv), bad ? bad : "");
        goto fail;
    }
    gnutls_priority_deinit(prio);
    if (!credentials_load(cfg, err, errlen) || !client_ca_load(cfg, err, errlen)) goto fail;
    tls.ready = true;
    return true;
fail:
    hf_gw_tls_teardown();
    return false;
}

void hf_gw_tls_teardown(void)
{
    for (unsigned i = 0; i < tls.npcerts; i++)
        gnutls_pcert_deinit(&tls.pcerts[i]);
    free(tls.pcerts);
    if (tls.key) gnutls_privkey_deinit(tls.key);
    if (tls.trust) gnutls_x509_trust_list_deinit(tls.trust, 1);
    free(tls.client_ca_pem);
    for (size_t i = 0; i < tls.nsubjects; i++)
        free(tls.subjects[i]);
    free(tls.subjects);
    for (size_t i = 0; i < tls.nsans; i++)
        free(tls.sans[i]);
    free(tls.sans);
    free(tls.priority);
    memset(&tls, 0, sizeof(tls));
}

bool hf_gw_tls_is_ready(void)
{
    return tls.ready;
}

const char *hf_gw_tls_priority(void)
{
    return tls.priority;
}

const char *hf_gw_tls_client_ca_pem(void)
{
    return tls.client_ca_pem;
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

static gnutls_x509_crt_t peer_cert(gnutls_session_t session)
{
    const gnutls_datum_t *chain;
    unsigned n = 0;
    gnutls_x509_crt_t crt;

    if (gnutls_certificate_type_get(session) != GNUTLS_CRT_X509) return NULL;
    if (!(chain = gnutls_certificate_get_peers(session, &n)) || n == 0) return NULL;
    if (gnutls_x509_crt_init(&crt) < 0) return NULL;
    if (gnutls_x509_crt_import(crt, &chain[0], GNUTLS_X509_FMT_DER) < 0) {
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

/* [tls] client_subject: the subject must be one of them; client_san: one SAN must be. */
static bool names_are_accepted(gnutls_x509_crt_t crt)
{
    bool ok = true;

    if (tls.nsubjects) {
        char *dn = dn_of(crt);
        ok = dn && name_in(tls.subjects, tls.nsubjects, dn);
        free(dn);
    }
    if (ok && tls.nsans) {
        size_t len = 0, off = 0;
        char *sans = sans_of(crt, &len);
        ok = false;
        while (sans && off < len && !ok) {
            ok = name_in(tls.sans, tls.nsans, sans + off);
            off += strlen(sans + off) + 1;
        }
        free(sans);
    }
    return ok;
}

/* Runs inside the handshake once the client's Certificate message is in: non-zero ends it. */
static int client_verify(gnutls_session_t session)
{
    const gnutls_datum_t *chain;
    gnutls_x509_crt_t *crts = NULL, crt = NULL;
    unsigned n = 0, status = 0, i;
    int result = GNUTLS_E_CERTIFICATE_ERROR;

    if (!(chain = gnutls_certificate_get_peers(session, &n)) || n == 0 || n > 16) goto done;
    if (!(crts = calloc(n, sizeof(*crts)))) goto done;
    for (i = 0; i < n; i++)
        if (gnutls_x509_crt_init(&crts[i]) < 0 ||
            gnutls_x509_crt_import(crts[i], &chain[i], GNUTLS_X509_FMT_DER) < 0)
            goto done;
    if (gnutls_x509_trust_list_verify_crt(tls.trust, crts, n, 0, &status, NULL) < 0 || status != 0)
        goto done;
    crt = crts[0];
    if (!names_are_accepted(crt)) goto done;
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
    if (!tls.ready) return -1;
    if (tls.trust) {
        gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
        gnutls_session_set_verify_function(session, client_verify);
    }
    *pcert = tls.pcerts;
    *pcert_length = tls.npcerts;
    *pkey = tls.key;
    return 0;
}

void hf_gw_tls_peer(struct MHD_Connection *conn, char **subject, char **sans)
{
    const union MHD_ConnectionInfo *info;
    gnutls_x509_crt_t crt;
    size_t len = 0;

    *subject = NULL;
    *sans = NULL;
    if (!conn || !tls.trust) return;
    info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!info || !info->tls_session) return;
    if (!(crt = peer_cert((gnutls_session_t)info->tls_session))) return;
    *subject = dn_of(crt);
    *sans = sans_of(crt, &len);
    gnutls_x509_crt_deinit(crt);
}
