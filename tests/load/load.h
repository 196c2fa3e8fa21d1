/* hf-load internals: the statistics (latency histogram, phase plan), the arguments, the request
 * builders per cloud API, the HTTP/1.1 client and the report writers.
 *
 * hf-load repeats the CipherTrust CCKM HYOK performance tests (shared/seeds/README.md): closed-loop
 * virtual users (VUs), each one keep-alive connection, ramped up, held steady and ramped down,
 * one reading per VU level. Everything here is shared by hf-load.c and its unit tests only. */
#ifndef HF_LOAD_H
#define HF_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

/* ---- Latency histogram --------------------------------------------------------------------
 * HDR-style log-linear buckets over microseconds: values below 2^HF_HIST_SUB_BITS are exact, and
 * every power of two above is split into 2^HF_HIST_SUB_BITS equal buckets, so a reported value is
 * within 1/128 (0.8%) above the true one. Fixed memory (34 KiB), O(1) record, merged by adding
 * counts; per-thread histograms need no lock. */
#define HF_HIST_SUB_BITS 7
#define HF_HIST_SUB_COUNT (1u << HF_HIST_SUB_BITS)
#define HF_HIST_MAX_BITS                                                                           \
    40 /* 2^40 us is 12.7 days; longer values are clamped into the last bucket */
#define HF_HIST_BUCKETS ((HF_HIST_MAX_BITS - HF_HIST_SUB_BITS + 1) * HF_HIST_SUB_COUNT)

struct hf_hist {
    uint64_t count;
    uint64_t sum_us;
    uint64_t min_us;
    uint64_t max_us;
    uint64_t counts[HF_HIST_BUCKETS];
};

void hf_hist_reset(struct hf_hist *h);
void hf_hist_record(struct hf_hist *h, uint64_t value_us);
void hf_hist_merge(struct hf_hist *dst, const struct hf_hist *src);
/* The nearest-rank percentile (0 < p <= 100): the smallest recorded value v such that at least
 * p% of the samples are <= v, reported as its bucket's highest value capped at the recorded
 * maximum. 0 when empty. */
uint64_t hf_hist_percentile(const struct hf_hist *h, double p);
double hf_hist_mean_us(const struct hf_hist *h);
/* Bucket arithmetic, exposed for the tests. */
size_t hf_hist_index(uint64_t value_us);
uint64_t hf_hist_bucket_high(size_t index);

/* ---- Phases --------------------------------------------------------------------------------
 * k6's ramping closed loop: VUs start one after another over the ramp-up, all run through the
 * steady phase, and leave one after another over the ramp-down. Times are microseconds from the
 * start of the level. A request belongs to the phase in which it completes; requests still in
 * flight when the ramp-down ends complete in HF_PHASE_TAIL (they count in the run's total, as
 * k6's graceful stop counts them, never in the steady figures). */
enum hf_phase {
    HF_PHASE_RAMP_UP,
    HF_PHASE_STEADY,
    HF_PHASE_RAMP_DOWN,
    HF_PHASE_TAIL,
    HF_PHASE_COUNT
};

/* --intervals: a level may also be cut, by wall clock from its start, into up to
 * HF_INTERVALS_MAX slices with a reading each (a failover test's before, during and after). */
#define HF_INTERVALS_MAX 8

struct hf_phase_plan {
    uint64_t ramp_up_us;
    uint64_t steady_us;
    uint64_t ramp_down_us;
    unsigned vus;
    /* Where each slice but the last ends, increasing, from the level's start; 0 of them: no
     * slices. The last slice runs to the level's end (its tail included). */
    uint64_t interval_ends_us[HF_INTERVALS_MAX - 1];
    size_t ninterval_ends;
};

enum hf_phase hf_phase_of(const struct hf_phase_plan *plan, uint64_t t_us);
uint64_t hf_phase_end_us(const struct hf_phase_plan *plan); /* ramp_up + steady + ramp_down */
/* When VU i (0-based) starts its first request and after which it starts no new one. The number
 * of VUs running rises linearly over the ramp-up and falls linearly over the ramp-down. */
uint64_t hf_phase_vu_start_us(const struct hf_phase_plan *plan, unsigned i);
uint64_t hf_phase_vu_stop_us(const struct hf_phase_plan *plan, unsigned i);
const char *hf_phase_name(enum hf_phase phase);
/* The slice (0 .. ninterval_ends) holding time t_us of the level. */
size_t hf_interval_of(const struct hf_phase_plan *plan, uint64_t t_us);

/* ---- Results of one VU level ------------------------------------------------------------- */
enum hf_terr {
    HF_TERR_CONNECT,   /* refused, unreachable, reset before a response */
    HF_TERR_TLS,       /* handshake or certificate failure, TLS alert */
    HF_TERR_TIMEOUT,   /* no complete response within --timeout */
    HF_TERR_CLOSED,    /* the server closed the connection mid-response */
    HF_TERR_PROTOCOL,  /* the response was not HTTP/1.x we understand */
    HF_TERR_BAD_BODY,  /* a 2xx whose body the API's check refused */
    HF_TERR_ABANDONED, /* still in flight when the run's grace period ended */
    HF_TERR_COUNT
};
const char *hf_terr_name(enum hf_terr kind);

#define HF_STATUS_SLOTS 600

struct hf_level_stats {
    uint64_t ops[HF_PHASE_COUNT];     /* successful operations by the phase they completed in */
    uint64_t setup_ops;               /* unmeasured preparation requests (e.g. decrypt's encrypt) */
    uint64_t reconnects;              /* connections opened after a VU's first one */
    uint64_t retries;                 /* requests sent again (--retries), not errors */
    uint64_t status[HF_STATUS_SLOTS]; /* non-2xx replies by HTTP status */
    uint64_t terr[HF_TERR_COUNT];
    struct hf_hist steady; /* latency of the successful operations completed in steady */
    struct hf_hist all;    /* latency of every successful operation */
    /* By --intervals slice, when the plan has any: successes with their latency, and failures
     * of every kind, by the time each completed. */
    uint64_t interval_ops[HF_INTERVALS_MAX];
    uint64_t interval_errors[HF_INTERVALS_MAX];
    struct hf_hist interval_hist[HF_INTERVALS_MAX];
};

void hf_level_stats_reset(struct hf_level_stats *s);
void hf_level_stats_merge(struct hf_level_stats *dst, const struct hf_level_stats *src);
/* Accounts one successful operation completed at t_us that took latency_us. */
void hf_level_stats_add_op(struct hf_level_stats *s, const struct hf_phase_plan *plan,
                           uint64_t t_us, uint64_t latency_us);
/* One failed request (any kind) completed at t_us: counted in its slice only; the caller
 * counts its kind. */
void hf_level_stats_add_error(struct hf_level_stats *s, const struct hf_phase_plan *plan,
                              uint64_t t_us);
uint64_t hf_level_stats_errors(const struct hf_level_stats *s);
uint64_t hf_level_stats_total_ops(const struct hf_level_stats *s);

/* One row of the report, derived from a level's stats and plan. */
struct hf_level_result {
    unsigned vus;
    uint64_t total_ops;   /* every successful operation of the run (all phases), as the seeds */
    uint64_t steady_ops;  /* completed in the steady phase */
    double ops_per_s;     /* steady_ops / steady seconds: the table's ops/s */
    double run_ops_per_s; /* total_ops / (ramp-up + steady + ramp-down): the seeds' way */
    double p50_ms, p90_ms, p99_ms, max_ms, mean_ms; /* steady phase */
    uint64_t errors;
    bool over_limit; /* p90 > limit, no steady operation, or over 1% errors */
};

void hf_level_result_compute(const struct hf_level_stats *s, const struct hf_phase_plan *plan,
                             unsigned limit_ms, struct hf_level_result *out);

/* ---- Growable byte buffer ---------------------------------------------------------------- */
struct hf_buf {
    char *data;
    size_t len;
    size_t cap;
};
int hf_buf_reserve(struct hf_buf *b, size_t extra); /* 0, or -1 on overflow / out of memory */
int hf_buf_append(struct hf_buf *b, const void *data, size_t len);
int hf_buf_printf(struct hf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hf_buf_free(struct hf_buf *b);

/* ---- Target URL ---------------------------------------------------------------------------- */
struct hf_url {
    bool tls;
    char host[256]; /* without brackets for IPv6 */
    char port[8];
    char authority[272]; /* the Host header: host[:port] as given in the URL */
    char path[1024];     /* "" or starting with '/' */
};
/* 0, or -1 with a message in err. */
int hf_url_parse(const char *url, struct hf_url *out, char *err, size_t errlen);

/* ---- Configuration (hf-load's arguments) ------------------------------------------------- */
#define HF_LOAD_MAX_LEVELS 64
#define HF_LOAD_MAX_VUS 20000

struct hf_load_api;

struct hf_load_config {
    const char *url;
    struct hf_url target;
    const struct hf_load_api *api;
    unsigned vus[HF_LOAD_MAX_LEVELS]; /* the levels to run, in order */
    size_t nlevels;
    bool stop_at_limit; /* --sweep: stop after the first level whose p90 passes the limit */
    uint64_t ramp_up_us, steady_us, ramp_down_us;
    uint64_t think_min_us, think_max_us; /* pause after each operation, uniform in [min, max] */
    uint64_t interval_ends_us[HF_INTERVALS_MAX - 1]; /* --intervals: as hf_phase_plan's */
    size_t ninterval_ends;
    uint64_t timeout_us;                 /* per request; also the grace after the ramp-down */
    unsigned retries; /* resends of a request whose connection ended before its reply began */
    uint64_t pause_us;                   /* between levels */
    unsigned threads;                    /* 0: one per online CPU */
    unsigned limit_ms;                   /* the latency limit; the API's own unless --limit */
    /* Outputs. */
    const char *csv_path;      /* "-" for stdout */
    const char *ids_path;      /* XKS: each accepted reply's kmsRequestId, one a line */
    const char *markdown_path; /* table + per-core comparison, for reports */
    const char *plot_prefix;   /* PREFIX.svg, PREFIX.png (and PREFIX.gp, PREFIX.dat) */
    const char *seeds_dir;     /* shared/seeds, for the comparison series */
    const char *label;         /* names this deployment in CSV and plots */
    unsigned server_cores;     /* for the per-core figures; 0: this machine's if the target is
                                  loopback, else unknown */
    unsigned server_nodes;
    int progress; /* -1 auto (a terminal), 0 off, 1 on */
    bool quiet;
    /* TLS. */
    const char *cacert;
    bool insecure;
    const char *client_cert; /* --cert: the client certificate (PEM) for mutual TLS (SAP) */
    const char *client_key;  /* --key: its private key (PEM); default the --cert file */
    /* API parameters. */
    const char *prefix;
    const char *key_id;
    const char *credentials; /* "AKID:SECRET"; from HF_LOAD_CREDENTIALS if not given */
    const char *region;
    /* EKM and CSE: the bearer token hf-load mints (RS256) for its whole run; CSE's is the
     * authentication token (the customer IdP's). */
    const char *token_key; /* PEM file */
    const char *token_kid;
    const char *audience;
    const char *email;
    /* CSE: the authn token's issuer, the KACLS URL the authz token names (default: --url and
     * --prefix), and the key that signs the authz token as Google would (default --token-key
     * and --token-kid). */
    const char *issuer;
    const char *kacls_url;
    const char *authz_key;
    const char *authz_kid;
    /* OCI: the vault (vaultId) and SAP: the keystore (keystore_id) the key is linked in; SAP:
     * request_metadata.sap_tenant_id. */
    const char *vault_id;
    const char *keystore_id;
    const char *tenant;
};

/* HF_ARGS_JWKS: --print-jwks, the key set of the token keys is wanted, no run. */
enum hf_args_result { HF_ARGS_OK = 0, HF_ARGS_HELP = 1, HF_ARGS_JWKS = 2, HF_ARGS_ERROR = -1 };

/* Parses argv into cfg (pointers point into argv or the environment). On HF_ARGS_ERROR err holds
 * one line saying what is wrong and how to fix it. */
enum hf_args_result hf_load_args_parse(int argc, char **argv, struct hf_load_config *cfg, char *err,
                                       size_t errlen);
/* "5s", "500ms", "2m", "1.5s", or plain seconds; 0 or -1 on a malformed value. */
int hf_duration_parse(const char *text, uint64_t *out_us);
void hf_load_usage(FILE *out);

/* ---- Request builders, one per cloud API ------------------------------------------------- */
struct hf_load_api {
    const char *name;     /* --api value */
    const char *seed_api; /* the seeds' file stem for comparison plots, or NULL */
    const char *title;    /* for tables and plots */
    unsigned limit_ms;    /* the API's own latency limit */
    /* Checks the API options in cfg and prepares what every request shares (owned; freed with
     * free_state). -1 with a message in err on a bad option. */
    int (*init)(const struct hf_load_config *cfg, void **state, char *err, size_t errlen);
    void (*free_state)(void *state);
    /* Appends the VU's next whole request (request line, headers, body) to out. *vu_state starts
     * NULL and belongs to the API (freed with free_vu). *setup: the request prepares the VU and
     * is not measured. 0, or -1 on failure (out of memory). */
    int (*build)(void *state, void **vu_state, struct hf_buf *out, bool *setup);
    /* Judges a 2xx reply: 0 good, -1 bad (counted as HF_TERR_BAD_BODY). NULL: any 2xx is good. */
    int (*check)(void *state, void **vu_state, bool setup, const char *body, size_t len);
    void (*free_vu)(void *vu_state);
};

extern const struct hf_load_api *const hf_load_apis[]; /* NULL-terminated */
/* load-ekm.c: Cloud EKM wrap with a minted bearer token. */
extern const struct hf_load_api hf_load_api_ekm_wrap;
/* load-cse.c: Workspace CSE wrap, and unwrap of a VU's own wrapped key, with minted authn and
 * authz tokens. */
extern const struct hf_load_api hf_load_api_cse_wrap;
extern const struct hf_load_api hf_load_api_cse_unwrap;
/* load-oci.c: OCI EKMS encrypt with a minted IDCS client-credentials token. */
extern const struct hf_load_api hf_load_api_oci_encrypt;
/* load-sap.c: SAP HYOK decrypt over mutual TLS: AES-256-GCM (symmetric-decrypt of the VU's own
 * symmetric-encrypt) and RSA-3072 OAEP SHA-256 (asymmetric-decrypt of a ciphertext made with
 * OpenSSL on the key's published public key). */
extern const struct hf_load_api hf_load_api_sap_decrypt;
extern const struct hf_load_api hf_load_api_sap_rsa_decrypt;
/* load-dke.c: Microsoft DKE decrypt with a minted Entra ID token, of a ciphertext made with
 * OpenSSL on the key's published public key. */
extern const struct hf_load_api hf_load_api_dke_decrypt;
/* load-rsa.c, for the SAP and DKE builders: RSA-OAEP (SHA-256, MGF1-SHA-256, empty label) of
 * pt under pub into a new buffer of the modulus' size (*ct, free()), 0 or -1. */
struct evp_pkey_st;
int hf_load_rsa_oaep256_encrypt(struct evp_pkey_st *pub, const unsigned char *pt, size_t ptlen,
                                unsigned char **ct, size_t *ctlen);
/* base64 (standard, padded) of data into a new string (free()), NULL on failure; and its
 * inverse into a new buffer (free()), NULL on bad input. */
char *hf_load_b64(const unsigned char *data, size_t len);
unsigned char *hf_load_unb64(const char *text, size_t *len);

struct json_object;
/* For the builders' checks: a reply's JSON object (json_object_put() it), NULL if it is none;
 * and a member of it that is a string, NULL otherwise. */
struct json_object *hf_load_reply_parse(const char *body, size_t len);
const char *hf_load_json_str(struct json_object *o, const char *name);

/* load-jwt.c: a compact JWS over claims (json-c, not taken), signed by the private key in the
 * PEM file key_path (RS256 for RSA, ES256 for P-256), kid in its header. A new string (free()),
 * or NULL with a message naming the file in err. */
char *hf_load_jwt_mint(const char *key_path, const char *kid, struct json_object *claims, char *err,
                       size_t errlen);
/* Writes {"keys":[...]} with the public JWKs of --token-key (as --token-kid) and --authz-key (as
 * --authz-kid), the key set a gateway verifies hf-load's tokens with. 0, or -1 with a message. */
int hf_load_jwks_print(FILE *out, const struct hf_load_config *cfg, char *err, size_t errlen);
const struct hf_load_api *hf_load_api_find(const char *name);

/* ---- The client: closed-loop VUs on epoll, one keep-alive connection each -------------------
 * Threads = cores by default, each with its own epoll instance and its share of the VUs (VU i on
 * thread i % threads); nothing is shared between threads during a level but read-only state and
 * the live counters of the progress line. */
struct hf_target {
    struct sockaddr_storage addr;
    unsigned addrlen;
    char addr_text[300];        /* "host:port (address)" for messages */
    struct ssl_ctx_st *ssl_ctx; /* NULL for http:// */
    const struct hf_url *url;
    bool host_is_ip;
};

/* Resolves the host and sets up TLS. 0, or -1 with a message in err. */
int hf_target_open(const struct hf_load_config *cfg, struct hf_target *t, char *err, size_t errlen);
void hf_target_close(struct hf_target *t);

struct hf_run {
    const struct hf_load_config *cfg;
    const struct hf_target *target;
    const struct hf_load_api *api;
    void *api_state;
    struct hf_phase_plan plan;
    unsigned threads;
    uint64_t max_requests_per_vu; /* 0: no limit; the preflight sends one */
    bool stop_on_error;           /* the preflight: a VU stops at its first failure */
    bool progress;
};

/* Runs one level to its end (bounded: the plan plus one --timeout of grace). stats gets the
 * merged figures; first_error (may be NULL) a sentence about the first failure seen. 0, or -1
 * when the client itself could not run (threads, epoll, memory). */
int hf_run_level(const struct hf_run *run, struct hf_level_stats *stats, char *first_error,
                 size_t errlen);
/* Set from a signal handler: every running level ends at once, counting what it has. */
void hf_run_interrupt(void);
bool hf_run_interrupted(void);

/* ---- Reports -----------------------------------------------------------------------------------
 */
/* One reading of a seeds CSV (shared/seeds/README.md has the columns). */
struct hf_seed_row {
    char deployment[256];
    char variant[64];
    char key_source[64];
    unsigned nodes, cpus; /* cpus 0: not published */
    unsigned vus;         /* 0: not published */
    double ops_per_s;
    double latency_ms; /* < 0: not published (XKS gives only "max under the limit") */
    char latency_stat[24];
    double threshold_ms; /* < 0: none stated */
};

/* Reads DIR/STEM.csv; *rows is a new array (free()). 0, or -1 with a message in err. */
int hf_seeds_load(const char *dir, const char *stem, struct hf_seed_row **rows, size_t *nrows,
                  char *err, size_t errlen);

/* What every report writer needs to know about the run. */
struct hf_report {
    const struct hf_load_config *cfg;
    const struct hf_level_result *levels;
    size_t nlevels;
    unsigned total_cores; /* server_nodes * server_cores; 0 unknown */
    const char *label;
    bool loopback; /* the client shared the server's cores */
    const struct hf_seed_row *seeds;
    size_t nseeds;
};

/* The index of the level with the highest steady ops/s whose p90 is within the limit, or -1. */
int hf_report_best(const struct hf_report *r);
void hf_report_table_header(FILE *out, const struct hf_report *r);
void hf_report_table_row(FILE *out, const struct hf_report *r, const struct hf_level_result *l);
int hf_report_csv(FILE *out, const struct hf_report *r);
int hf_report_markdown(FILE *out, const struct hf_report *r);
/* Writes PREFIX.dat, PREFIX-seeds.dat and PREFIX.gp, then runs gnuplot for PREFIX.svg and
 * PREFIX.png. 0, or -1 with a message in err. */
int hf_report_plot(const char *prefix, const struct hf_report *r, char *err, size_t errlen);

#endif /* HF_LOAD_H */
