/* holdfastd's one config file (conf/holdfastd.conf.sample documents every key).
 *
 * [gateway] listeners, threads, limits, the PKCS#11 module and its login, plugins, log; [tls];
 * [listener:NAME] (a listener with its own TLS policy and plugins, config-listener.c); [audit];
 * [plugin:NAME] (where a plugin's shared object is); every other section belongs to the plugin
 * it is named after ("NAME" or "NAME:instance") and is handed, line by line, to that plugin's
 * configure() once the plugins are loaded (plugins.c). */
#ifndef HF_GATEWAY_CONFIG_H
#define HF_GATEWAY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define HF_GW_DEFAULT_MAX_BODY (64 * 1024)
#define HF_GW_DEFAULT_MAX_CONNECTIONS 1024
#define HF_GW_DEFAULT_CONNECTION_TIMEOUT 30
#define HF_GW_DEFAULT_PREAUTH_INTERVAL_MS 10000
#define HF_GW_DEFAULT_PREAUTH_SOURCES 4096
/* A few keep-alive connections per KMS front end are all one address needs; a balancer in front
 * (every client one address) wants 0 or more than max_connections. */
#define HF_GW_DEFAULT_MAX_PER_ADDRESS 64
#define HF_GW_DEFAULT_HEADER_TIMEOUT 10  /* seconds for the request line and headers */
#define HF_GW_DEFAULT_BODY_MIN_RATE 1024 /* bytes per second, averaged over the upload */
/* A balancer checking /healthz every 500 ms marks a node down after two or three failed checks. */
#define HF_GW_DEFAULT_DRAIN_MS 2000

/* Listeners at most (one libmicrohttpd daemon each). */
#define HF_GW_MAX_LISTENERS 16

enum hf_gw_client_cert {
    HF_GW_CLIENT_CERT_OFF,      /* none asked for */
    HF_GW_CLIENT_CERT_OPTIONAL, /* asked for; none is fine, a presented one must verify */
    HF_GW_CLIENT_CERT_REQUIRED  /* the handshake fails without one that verifies */
};

/* One listener's TLS policy: [tls] for the [gateway] listen lines, its own for a
 * [listener:NAME]. */
struct hf_gw_tls_conf {
    char *cert, *key, *client_ca, *priority;
    char **subjects; /* accepted client subject DNs (any of), RFC 4514 */
    size_t nsubjects;
    char **sans; /* accepted client subjectAltName values (any of) */
    size_t nsans;
    enum hf_gw_client_cert client_cert; /* by default REQUIRED when client_ca is set, else OFF */
    unsigned client_cert_line;          /* where client_certificate was given; 0: not given */
};

struct hf_gw_listen {
    char *name; /* [listener:NAME]'s NAME; for a [gateway] listen line "host:port" */
    char *host; /* numeric address or name; "[::1]" is stored as "::1" */
    char *port;
    bool tls;
    bool insecure; /* plain HTTP on an address that is not loopback, on purpose */
    unsigned line; /* the listen line */
    /* A [listener:NAME] section's own TLS policy; a [gateway] listen line uses [tls]
     * (hf_gw_config_listen_tls gives the one that applies). */
    bool own_tls;
    struct hf_gw_tls_conf tls_conf;
    char **plugins; /* the plugins it serves; none listed: every loaded plugin */
    size_t nplugins;
    unsigned plugins_line;
};

struct hf_gw_plugin_conf {
    char *name;
    char *path; /* NULL: plugin_dir/NAME.so */
    unsigned line;
};

/* One line of a plugin's section, kept until the plugin is loaded. */
struct hf_gw_setting {
    char *section;
    char *name;
    char *value;
    unsigned line;
};

struct hf_gw_api_flag {
    char *api;
    bool on;
};

struct hf_gw_config {
    char *path; /* for messages: "path:line: ..." */
    char *dir;  /* the file's directory, for relative paths; NULL when parsed from memory */

    struct hf_gw_listen *listens;
    size_t nlistens;
    unsigned threads; /* 0 = one per core, plus one per call the HSM pools may have in flight */
    size_t max_body;
    unsigned max_connections;
    unsigned connection_timeout; /* seconds of idleness before a connection is closed */
    unsigned max_per_address;    /* open connections per client address; 0 = no limit */
    unsigned header_timeout;     /* seconds from accept (or the last answer) to all headers */
    size_t body_min_rate;        /* bytes per second under which an upload is cut; 0 = none */
    unsigned drain_ms;           /* SIGTERM: /healthz down this long before stopping; 0 = none */

    char *module;      /* PKCS#11 module path */
    char *token_label; /* NULL: the first slot with a token */
    char *pin;         /* the user PIN itself (discouraged) */
    char *pin_file;    /* or a file whose first line is the PIN */

    char *plugin_dir;
    struct hf_gw_plugin_conf *plugins; /* in config order: routes are tried in this order */
    size_t nplugins;

    char *log_path; /* NULL or "-": stderr */
    char *pidfile;

    struct hf_gw_tls_conf tls; /* [tls], for the [gateway] listen lines */

    bool success_events; /* gateway-written records of successful requests */
    /* Refusals before authentication (preauth.h): a summary per key this often, at most this
     * many keys. Read at start. */
    unsigned preauth_interval_ms;
    unsigned preauth_sources;
    struct hf_gw_api_flag *success_by_api;
    size_t nsuccess_by_api;

    struct hf_gw_setting *settings;
    size_t nsettings;
};

/* Reads path. NULL with "path:line: why" in err on any error (unknown section or key, bad
 * value, no listener, two listeners on one port, a TLS listener without cert and key, client
 * certificates without a client CA, a listener naming a plugin that is not loaded). */
struct hf_gw_config *hf_gw_config_load(const char *path, char *err, size_t errlen);
/* The same from memory; name is used in messages. */
struct hf_gw_config *hf_gw_config_parse(const char *text, size_t len, const char *name, char *err,
                                        size_t errlen);
void hf_gw_config_free(struct hf_gw_config *cfg);

/* The TLS policy of listener l of cfg (its own, or [tls]). */
const struct hf_gw_tls_conf *hf_gw_config_listen_tls(const struct hf_gw_config *cfg,
                                                     const struct hf_gw_listen *l);
/* Whether listener l serves the plugin named name. */
bool hf_gw_config_listen_serves(const struct hf_gw_listen *l, const char *name);
/* Whether a and b listen alike (address, TLS policy): what a reload cannot change. The plugins
 * they serve may differ. */
bool hf_gw_config_listen_is_same(const struct hf_gw_config *ca, const struct hf_gw_listen *a,
                                 const struct hf_gw_config *cb, const struct hf_gw_listen *b);

/* Whether the gateway records successful requests of api that made no key operation. */
bool hf_gw_config_success_events(const struct hf_gw_config *cfg, const char *api);
/* pkcs11/common/secret-file.h's rule for a secret file the gateway reads (holdfastd.conf with a PIN
 * or credential, pin_file, the TLS key): false with "WHAT PATH: mode ...; chmod 600" in err; a
 * group-readable one is logged as a warning and used. */
bool hf_gw_secret_file_is_usable(int fd, const char *what, const char *path, char *err,
                                 size_t errlen);
/* Whether a section name is one the gateway reads itself. */
bool hf_gw_config_section_is_own(const char *section);

#endif /* HF_GATEWAY_CONFIG_H */
