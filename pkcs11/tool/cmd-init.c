#include "hf-build.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "pkcs11/core/file.h"
#include "pkcs11/tool/cli.h"

#define PIN_MIN 4 /* the core's limits (core.h) */
#define PIN_MAX 255
#define PIN_GENERATED_BYTES 12 /* 96 bits, written as 24 hex digits */

enum pin_outcome { PIN_KEPT, PIN_SET, PIN_GENERATED };
#define N_PINS 3

/* One token PIN: where it comes from and what init did with it. */
struct pin_plan {
    enum hf_user user;
    const char *role;     /* "user", "SO", "gateway" */
    const char *env;      /* environment variable that may hold it */
    const char *key;      /* its name in --json output and options: "so", "user", "gateway" */
    const char *arg_file; /* --user-pin-file / --so-pin-file */
    bool ask;             /* --ask-pins: typed on the terminal */
    char path[PATH_MAX];  /* STATE_DIR/token-<role>.pin, for a generated PIN */
    char *pin;            /* what init sets; NULL keeps the current PIN. Cleansed on free. */
    bool was_set;         /* the store already had this PIN */
    enum pin_outcome outcome;
};

static void pin_free(struct pin_plan *p)
{
    if (p->pin) OPENSSL_clear_free(p->pin, strlen(p->pin));
    p->pin = NULL;
}

/* The first line of path: the PIN, without its newline. */
static int pin_file_read(const char *path, char **pin)
{
    char buf[PIN_MAX + 3] = "";
    FILE *f = fopen(path, "re");
    int rc = HF_CLI_CONTINUE;

    if (!f) {
        hf_cli_error("cannot read PIN file %s: %s", path, strerror(errno));
        return errno == ENOENT ? HF_EXIT_NOT_FOUND : HF_EXIT_FAILED;
    }
    if (!fgets(buf, sizeof(buf), f)) buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    if (strlen(buf) < PIN_MIN || strlen(buf) > PIN_MAX) {
        hf_cli_error("PIN file %s must hold a PIN of %d-%d characters on its first line", path,
                     PIN_MIN, PIN_MAX);
        rc = HF_EXIT_USAGE;
    } else if (!(*pin = strdup(buf))) {
        rc = HF_EXIT_FAILED;
    }
    OPENSSL_cleanse(buf, sizeof(buf));
    return rc;
}

/* One line typed on tty with echo off, without its newline; false on end of input. */
static bool tty_line_read(FILE *tty, const char *prompt, char *buf, size_t len)
{
    struct termios old, quiet;
    bool restore = tcgetattr(fileno(tty), &old) == 0, ok;

    if (restore) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        quiet.c_lflag |= ECHONL;
        restore = tcsetattr(fileno(tty), TCSAFLUSH, &quiet) == 0;
    }
    fputs(prompt, tty);
    fflush(tty);
    ok = fgets(buf, (int)len, tty) != NULL;
    if (restore) tcsetattr(fileno(tty), TCSAFLUSH, &old);
    buf[strcspn(buf, "\r\n")] = '\0';
    return ok;
}

/* --ask-pins: the PIN typed twice on the controlling terminal; an empty one means "none given". */
static int pin_ask(struct pin_plan *p)
{
    char a[PIN_MAX + 3] = "", b[PIN_MAX + 3] = "", prompt[64];
    FILE *tty = fopen("/dev/tty", "r+e");
    int rc = HF_CLI_CONTINUE;

    if (!tty) {
        hf_cli_error("init: --ask-pins needs a terminal (or use --%s-pin-file or $%s)", p->key,
                     p->env);
        return HF_EXIT_USAGE;
    }
    snprintf(prompt, sizeof(prompt), "%s PIN (empty: keep or generate): ", p->role);
    if (!tty_line_read(tty, prompt, a, sizeof(a))) a[0] = '\0';
    if (a[0]) {
        snprintf(prompt, sizeof(prompt), "%s PIN again: ", p->role);
        if (!tty_line_read(tty, prompt, b, sizeof(b)) || strcmp(a, b) != 0) {
            hf_cli_error("init: the two %s PINs differ", p->role);
            rc = HF_EXIT_USAGE;
        } else if (strlen(a) < PIN_MIN || strlen(a) > PIN_MAX) {
            hf_cli_error("init: the %s PIN must be %d-%d characters", p->role, PIN_MIN, PIN_MAX);
            rc = HF_EXIT_USAGE;
        } else if (!(p->pin = strdup(a))) {
            rc = HF_EXIT_FAILED;
        }
    }
    OPENSSL_cleanse(a, sizeof(a));
    OPENSSL_cleanse(b, sizeof(b));
    fclose(tty);
    return rc;
}

/* A PIN the caller gave: its file, the terminal, then the environment; never the command line,
 * which every user sees in ps and the shell keeps in its history. NULL pin: none given. */
static int pin_given(struct pin_plan *p)
{
    const char *env = getenv(p->env);

    if (p->arg_file) return pin_file_read(p->arg_file, &p->pin);
    if (p->ask) return pin_ask(p);
    if (!env || !*env) return HF_CLI_CONTINUE;
    if (strlen(env) < PIN_MIN || strlen(env) > PIN_MAX) {
        hf_cli_error("init: the %s PIN ($%s) must be %d-%d characters", p->role, p->env, PIN_MIN,
                     PIN_MAX);
        return HF_EXIT_USAGE;
    }
    return (p->pin = strdup(env)) ? HF_CLI_CONTINUE : HF_EXIT_FAILED;
}

static bool hex_pin(char **pin)
{
    static const char digits[] = "0123456789abcdef";
    unsigned char raw[PIN_GENERATED_BYTES];
    char *s = malloc(2 * sizeof(raw) + 1);

    if (!s || hf_random(raw, sizeof(raw)) != CKR_OK) {
        free(s);
        return false;
    }
    for (size_t i = 0; i < sizeof(raw); i++) {
        s[2 * i] = digits[raw[i] >> 4];
        s[2 * i + 1] = digits[raw[i] & 0xf];
    }
    s[2 * sizeof(raw)] = '\0';
    OPENSSL_cleanse(raw, sizeof(raw));
    *pin = s;
    return true;
}

/* Writes pin to path, mode 0600, replacing it whole (a crash leaves the old or the new file). */
static int pin_file_write(const char *path, const char *pin)
{
    char *text = NULL;
    int rc = HF_EXIT_FAILED;

    if (asprintf(&text, "%s\n", pin) < 0) text = NULL;
    if (text != NULL && hf_file_replace(path, text, strlen(text)) == CKR_OK)
        rc = HF_CLI_CONTINUE;
    else
        hf_cli_error("cannot write PIN file %s", path);
    if (text != NULL) OPENSSL_clear_free(text, strlen(text));
    return rc;
}

/* No PIN given: keep one that is set; else reuse the PIN file a crashed init left, or make one. */
static int pin_default(struct pin_plan *p, bool reset)
{
    int rc;

    if (p->was_set && !reset) {
        p->outcome = PIN_KEPT;
        return HF_CLI_CONTINUE;
    }
    p->outcome = PIN_GENERATED;
    if (!reset && access(p->path, F_OK) == 0) return pin_file_read(p->path, &p->pin);
    if (!hex_pin(&p->pin)) {
        hf_cli_error("cannot generate the %s PIN", p->role);
        return HF_EXIT_FAILED;
    }
    if ((rc = pin_file_write(p->path, p->pin)) != HF_CLI_CONTINUE) pin_free(p);
    return rc;
}

/* A PIN given (file, terminal, environment) makes an earlier generated PIN file wrong: remove
 * it, unless it is the very file the PIN was read from. */
static void pin_file_drop_stale(const struct pin_plan *p)
{
    char a[PATH_MAX], b[PATH_MAX];

    if (p->arg_file && realpath(p->arg_file, a) && realpath(p->path, b) && strcmp(a, b) == 0)
        return;
    unlink(p->path);
}

static int mkdir_private(const char *dir)
{
    if (hf_dir_make(dir, 0700) == CKR_OK) return HF_CLI_CONTINUE;
    hf_cli_error("cannot create %s", dir);
    return HF_EXIT_FAILED;
}

/* Whether the store exists and which PINs it has. Any failure to open reads as "nothing set":
 * init repairs a half-made store, and init_verify catches a PIN we could not see. */
static bool store_probe(struct hf_cli *cli, struct pin_plan *pins)
{
    struct hf_core *core = NULL;

    if (hf_cli_store_is_missing(&cli->cfg) || hf_core_open(&cli->cfg, &core) != CKR_OK)
        return false;
    for (int i = 0; i < N_PINS; i++)
        pins[i].was_set = hf_core_pin_is_set(core, pins[i].user);
    hf_core_close(core);
    return true;
}

/* A generated PIN that does not open the token means one was set that the probe missed: the
 * file we wrote would mislead, so it goes. */
static void init_verify(struct hf_cli *cli, struct pin_plan *pins)
{
    struct hf_core *core = NULL;

    if (hf_core_open(&cli->cfg, &core) != CKR_OK) return;
    for (int i = 0; i < N_PINS; i++) {
        struct pin_plan *p = &pins[i];

        if (p->outcome != PIN_GENERATED ||
            hf_core_pin_check(core, p->user, p->pin, strlen(p->pin)) == CKR_OK)
            continue;
        unlink(p->path);
        p->outcome = PIN_KEPT;
    }
    hf_core_close(core);
}

static void init_report(struct hf_cli *cli, bool existed, const struct pin_plan *pins,
                        const struct hf_core_root_member *root, size_t n_root)
{
    static const char *const said[] = {"kept", "set", "generated"};
    json_object *o;

    if (cli->json) {
        if ((o = json_object_new_object())) {
            if (n_root > 0)
                json_object_object_add(o, "root_members", hf_cli_root_json(root, n_root));
            json_object_object_add(o, "state_dir", json_object_new_string(cli->cfg.state_dir));
            json_object_object_add(o, "already_initialised", json_object_new_boolean(existed));
            for (int i = 0; i < N_PINS; i++) {
                bool file = pins[i].outcome == PIN_GENERATED;
                char key[32];

                snprintf(key, sizeof(key), "%s_pin", pins[i].key);
                json_object_object_add(o, key, json_object_new_string(said[pins[i].outcome]));
                strcat(key, "_file");
                json_object_object_add(o, key, file ? json_object_new_string(pins[i].path) : NULL);
            }
        }
        hf_cli_json_print(o);
        return;
    }
    if (existed && pins[0].outcome == PIN_KEPT && pins[1].outcome == PIN_KEPT &&
        pins[2].outcome == PIN_KEPT)
        printf("key store in %s is already initialised; PINs unchanged\n", cli->cfg.state_dir);
    else
        printf("key store in %s initialised\n", cli->cfg.state_dir);
    for (int i = 0; i < N_PINS; i++) {
        if (pins[i].outcome == PIN_GENERATED)
            printf("  %s PIN: generated, in %s (mode 0600)\n", pins[i].role, pins[i].path);
        else
            printf("  %s PIN: %s\n", pins[i].role, said[pins[i].outcome]);
    }
    if (n_root > 0) hf_cli_root_print(cli, root, n_root);
}

static int init_parse(struct hf_cli *cli, int argc, char **argv, struct pin_plan *pins, bool *reset)
{
    enum { O_SO = 1, O_SO_FILE, O_USER, O_USER_FILE, O_GW, O_GW_FILE, O_ASK, O_RESET };
    /* --so-pin, --user-pin and --gateway-pin stay known so that they are refused by name
     * (getopt_long would otherwise take them for abbreviations of the -file options). */
    static const struct option opts[] = {
        {"so-pin", required_argument, NULL, O_SO},
        {"so-pin-file", required_argument, NULL, O_SO_FILE},
        {"user-pin", required_argument, NULL, O_USER},
        {"user-pin-file", required_argument, NULL, O_USER_FILE},
        {"gateway-pin", required_argument, NULL, O_GW},
        {"gateway-pin-file", required_argument, NULL, O_GW_FILE},
        {"ask-pins", no_argument, NULL, O_ASK},
        {"reset-pins", no_argument, NULL, O_RESET},
        HF_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int c, rc;

    while ((c = hf_cli_getopt(argc, argv, opts)) != -1) {
        switch (c) {
        case O_SO:
        case O_USER:
        case O_GW: {
            const struct pin_plan *p = &pins[c == O_SO ? 0 : c == O_USER ? 1 : 2];
            OPENSSL_cleanse(optarg, strlen(optarg)); /* out of /proc/PID/cmdline at least */
            return hf_cli_usage_error(cli,
                                      "a PIN on the command line is seen by every user (ps) and "
                                      "kept in shell history: use --%s-pin-file FILE, $%s or "
                                      "--ask-pins",
                                      p->key, p->env);
        }
        case O_SO_FILE:
            pins[0].arg_file = optarg;
            break;
        case O_USER_FILE:
            pins[1].arg_file = optarg;
            break;
        case O_GW_FILE:
            pins[2].arg_file = optarg;
            break;
        case O_ASK:
            /* People type the SO and user PINs; the gateway's is holdfastd's to read from a
             * file, so it is generated there unless a file or $HOLDFAST_GATEWAY_PIN gives it. */
            pins[0].ask = pins[1].ask = true;
            break;
        case O_RESET:
            *reset = true;
            break;
        default:
            if ((rc = hf_cli_opt_other(cli, c, argv)) != HF_CLI_CONTINUE) return rc;
        }
    }
    for (int i = 0; i < N_PINS; i++)
        if (pins[i].ask && pins[i].arg_file) pins[i].ask = false; /* the file says it already */
    return hf_cli_args(cli, argc, argv, 0, 0);
}

int hf_cmd_init(struct hf_cli *cli, int argc, char **argv)
{
    /* The gateway's PIN: a second user identity, the only one whose login may attach request
     * contexts (records in another API's name). */
    struct pin_plan pins[N_PINS] = {
        {.user = HF_USER_SO, .role = "SO", .key = "so", .env = "HOLDFAST_SO_PIN"},
        {.user = HF_USER_NORMAL, .role = "user", .key = "user", .env = "HOLDFAST_USER_PIN"},
        {.user = HF_USER_GATEWAY,
         .role = "gateway",
         .key = "gateway",
         .env = "HOLDFAST_GATEWAY_PIN"},
    };
    struct hf_core_root_member *root = NULL;
    size_t n_root = 0;
    bool reset = false, existed, gw_changed = false;
    CK_RV rv;
    int rc;

    if ((rc = init_parse(cli, argc, argv, pins, &reset)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_config(cli)) != HF_CLI_CONTINUE) return rc;
    if ((rc = mkdir_private(cli->cfg.state_dir)) != HF_CLI_CONTINUE) return rc;
    snprintf(pins[0].path, sizeof(pins[0].path), "%s/token-so.pin", cli->cfg.state_dir);
    snprintf(pins[1].path, sizeof(pins[1].path), "%s/token-user.pin", cli->cfg.state_dir);
    snprintf(pins[2].path, sizeof(pins[2].path), "%s/token-gateway.pin", cli->cfg.state_dir);
    existed = store_probe(cli, pins);
    for (int i = 0; i < N_PINS && rc == HF_CLI_CONTINUE; i++) {
        rc = pin_given(&pins[i]);
        if (rc == HF_CLI_CONTINUE && pins[i].pin)
            pins[i].outcome = PIN_SET;
        else if (rc == HF_CLI_CONTINUE)
            rc = pin_default(&pins[i], reset);
    }
    if (rc != HF_CLI_CONTINUE) goto done;
    rv = hf_core_init(&cli->cfg, pins[0].pin, pins[1].pin, reset);
    if (rv == CKR_OK) rv = hf_core_init_gateway_pin(&cli->cfg, pins[2].pin, reset, &gw_changed);
    if (rv != CKR_OK) {
        rc = hf_cli_fail(cli, rv, cli->cfg.state_dir);
        goto done;
    }
    for (int i = 0; i < N_PINS; i++) {
        if (pins[i].outcome != PIN_SET) continue;
        if (pins[i].was_set && !reset) {
            hf_cli_error("note: the %s PIN is already set and was kept (--reset-pins replaces it)",
                         pins[i].role);
            pins[i].outcome = PIN_KEPT;
        } else {
            pin_file_drop_stale(&pins[i]);
        }
    }
    init_verify(cli, pins);
    /* The members' keys against [hsm]'s: which ones are yet to be cloned. */
    if ((rv = hf_core_root_check(&cli->cfg, &root, &n_root)) != CKR_OK)
        hf_cli_error("note: the root's members could not be checked (%s)", hf_cli_strerror(rv));
    init_report(cli, existed, pins, root, n_root);
    free(root);
    rc = HF_EXIT_OK;
done:
    for (int i = 0; i < N_PINS; i++)
        pin_free(&pins[i]);
    return rc;
}
