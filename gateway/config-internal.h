/* What config.c shares with config-listener.c only: the parser's state and its helpers. */
#ifndef HF_GATEWAY_CONFIG_INTERNAL_H
#define HF_GATEWAY_CONFIG_INTERNAL_H

#include "gateway/config.h"

#include <stdbool.h>
#include <stddef.h>

struct hf_gw_parse {
    struct hf_gw_config *cfg;
    const char *name; /* file name for messages */
    const char *dir;  /* the file's directory, for relative paths ("" for none) */
    const char *text; /* the whole file */
    size_t len, pos;
    unsigned line;
    bool line_done;
    bool failed;
    unsigned err_line;
    char err[256];
    bool oom;
};

/* Records the first error, at ctx->line (0: the whole file). */
void hf_gw_cfg_fail(struct hf_gw_parse *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
bool hf_gw_cfg_bool(const char *v, bool *out);
/* Replaces *field with a copy of v (a path relative to the config file's directory when
 * is_path). */
bool hf_gw_cfg_str_set(struct hf_gw_parse *ctx, char **field, const char *v, bool is_path);
/* Appends a zeroed element of size elem to *arr (n elements); NULL if out of memory. */
void *hf_gw_cfg_push(struct hf_gw_parse *ctx, void **arr, size_t *n, size_t elem);
bool hf_gw_cfg_strings_push(struct hf_gw_parse *ctx, char ***arr, size_t *n, const char *v);
bool hf_gw_cfg_host_is_loopback(const char *host);
/* [a-z0-9_-]{1,64}: plugin and listener names. */
bool hf_gw_cfg_name_is_valid(const char *s, size_t len);
/* "host:port", "[v6]:port", "*:port": new strings in *host ("" for every address) and *port.
 * false (with the error recorded) when malformed. */
bool hf_gw_cfg_address_parse(struct hf_gw_parse *ctx, const char *v, char **host, char **port);
/* The refusal of plain HTTP off loopback without "insecure"; true when the listener may be. */
bool hf_gw_cfg_plain_is_allowed(struct hf_gw_parse *ctx, const char *host, bool insecure);

/* cert, key, client_ca, priority, client_subject, client_san: the keys [tls] and
 * [listener:NAME] share. *known is false for any other name (nothing recorded then). */
bool hf_gw_cfg_tls_field(struct hf_gw_parse *ctx, struct hf_gw_tls_conf *t, const char *name,
                         const char *v, bool *known);

/* [listener:NAME] (config-listener.c). */
bool hf_gw_cfg_listener_key(struct hf_gw_parse *ctx, const char *section, const char *name,
                            const char *v);
/* Whole-file checks of every listener: a listen address each, distinct ports, TLS settings
 * complete and consistent, plugins that are loaded. */
bool hf_gw_cfg_listeners_check(struct hf_gw_parse *ctx);
void hf_gw_cfg_tls_conf_free(struct hf_gw_tls_conf *t);
void hf_gw_cfg_listen_free(struct hf_gw_listen *l);

#endif /* HF_GATEWAY_CONFIG_INTERNAL_H */
