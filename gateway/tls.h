/* Server TLS through libmicrohttpd's GnuTLS: our certificate, TLS 1.2+ with the AEAD suites
 * specs/aws-xks.md lists, and optional client certificates checked during the handshake (a
 * refused certificate ends it, before any HTTP byte).
 *
 * One TLS setup per TLS listener, found in a handshake by the port the connection came in on
 * (libmicrohttpd's certificate callback takes no closure; config.c refuses two listeners on one
 * port). Made once at start and kept across SIGHUP (listeners and TLS change only with a
 * restart). */
#ifndef HF_GATEWAY_TLS_H
#define HF_GATEWAY_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

struct MHD_Connection;
struct hf_gw_config;

/* TLS 1.3 and 1.2, AES-GCM and ChaCha20-Poly1305 only, ECDHE only; the server's order wins. */
#define HF_GW_TLS_PRIORITY                                                                         \
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-256-GCM:+CHACHA20-POLY1305:"      \
    "+AES-128-GCM:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:%SERVER_PRECEDENCE"

/* Loads every TLS listener's cert, key, client_ca and client name rules ([tls] for the
 * [gateway] listen lines, its own for a [listener:NAME]). */
bool hf_gw_tls_setup(const struct hf_gw_config *cfg, char *err, size_t errlen);
void hf_gw_tls_teardown(void);
bool hf_gw_tls_is_ready(void);

/* For MHD_start_daemon of the listener on port: the priority string, the client CA PEM (NULL:
 * no client certificates) and the certificate callback (MHD_OPTION_HTTPS_CERT_CALLBACK), which
 * asks for a client certificate (required or optional) and verifies it in the handshake. */
const char *hf_gw_tls_priority(const char *port);
const char *hf_gw_tls_client_ca_pem(const char *port);
int hf_gw_tls_cert_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                            const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                            gnutls_pcert_st **pcert, unsigned int *pcert_length,
                            gnutls_privkey_t *pkey);

/* The verified client certificate of conn: subject DN (RFC 4514) and subjectAltName values
 * (NUL-separated, ending with an empty string). false, both NULL, without TLS, on a listener that
 * asks for none, or when an optional one was not presented.
 * The strings are new (free()). */
bool hf_gw_tls_peer_names(struct MHD_Connection *conn, char **subject, char **sans);
/* The SHA-256 of that certificate's DER (what a pin names), read from the session each call
 * without parsing the certificate; false when there is none, as above. */
bool hf_gw_tls_peer_sha256(struct MHD_Connection *conn, unsigned char sha256[32]);

#endif /* HF_GATEWAY_TLS_H */
