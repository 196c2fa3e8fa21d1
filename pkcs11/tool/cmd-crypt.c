#include "hf-build.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <uuid/uuid.h>

#include "pkcs11/tool/cli.h"

/* The envelope: base64 of
 *   "HF1" | key UUID (16 raw bytes) | version (uint32 BE) | IV (12) | ciphertext | tag (16)
 * AAD is everything before the ciphertext, so a blob cannot be moved to another key or version.
 * It names the key by UUID, never by name: a rename breaks nothing. */
#define ENV_MAGIC "HF1"
#define ENV_MAGIC_LEN 3
#define ENV_UUID_OFF ENV_MAGIC_LEN
#define ENV_VERSION_OFF (ENV_UUID_OFF + 16)
#define ENV_IV_OFF (ENV_VERSION_OFF + 4)
#define ENV_IV_LEN 12 /* GCM's native IV size (SP 800-38D 8.2) */
#define ENV_HEADER_LEN (ENV_IV_OFF + ENV_IV_LEN)
#define ENV_TAG_LEN 16
/* Whole-buffer processing: keeps the envelope one GCM message and the base64 within int range. */
#define CRYPT_INPUT_MAX (64UL << 20)

struct crypt_args {
    const char *key_ref; /* encrypt only */
    const char *in;      /* NULL or "-": stdin */
    const char *out;     /* NULL or "-": stdout */
};

/* What one encrypt/decrypt did, for its audit record and its error message. */
struct crypt_op {
    const char *name; /* "encrypt", "decrypt" */
    const char *ref;  /* the key as the caller named it, for the record of a failed lookup */
    struct hf_key key;
    unsigned version;
    uint64_t t0;
    CK_RV rv;
    int exit_code; /* set with why: a specific failure */
    char why[256];
};

static int crypt_parse(struct hf_cli *cli, int argc, char **argv, bool with_key,
                       struct crypt_args *a)
{
    static const struct option opts[] = {
        {"key", required_argument, NULL, 'k'},
        {"in", required_argument, NULL, 'i'},
        {"out", required_argument, NULL, 'o'},
        HF_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int c, rc;

    while ((c = hf_cli_getopt(argc, argv, opts)) != -1) {
        if (c == 'k' && with_key)
            a->key_ref = optarg;
        else if (c == 'i')
            a->in = optarg;
        else if (c == 'o')
            a->out = optarg;
        else if ((rc = hf_cli_opt_other(cli, c == 'k' ? '?' : c, argv)) != HF_CLI_CONTINUE)
            return rc;
    }
    if ((rc = hf_cli_args(cli, argc, argv, 0, 0)) != HF_CLI_CONTINUE) return rc;
    if (with_key && !a->key_ref) return hf_cli_usage_error(cli, "--key REF is required");
    return HF_CLI_CONTINUE;
}

static bool is_stdio(const char *path)
{
    return !path || strcmp(path, "-") == 0;
}

/* Reads all of path (or stdin) into memory that is cleansed on every reallocation, since it may
 * be plaintext. Free with OPENSSL_clear_free(*buf, *cap). */
static int input_read(const char *path, unsigned char **buf, size_t *len, size_t *cap)
{
    const char *name = is_stdio(path) ? "standard input" : path;
    int fd = is_stdio(path) ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    int rc = HF_CLI_CONTINUE;
    ssize_t got = 1;

    *buf = NULL;
    *len = *cap = 0;
    if (fd < 0) {
        rc = errno == ENOENT ? HF_EXIT_NOT_FOUND : HF_EXIT_FAILED;
        hf_cli_error("cannot read %s: %s", name, strerror(errno));
        return rc;
    }
    while (got != 0 && rc == HF_CLI_CONTINUE) {
        if (*len == *cap) {
            size_t ncap = *cap ? *cap * 2 : 4096;
            unsigned char *grown = NULL;

            if (*cap >= CRYPT_INPUT_MAX)
                hf_cli_error("%s is larger than %lu MiB", name, CRYPT_INPUT_MAX >> 20);
            else if (!(grown = OPENSSL_clear_realloc(*buf, *cap, ncap)))
                hf_cli_error("out of memory");
            if (!grown) {
                rc = HF_EXIT_FAILED;
                break;
            }
            *buf = grown;
            *cap = ncap;
        }
        got = read(fd, *buf + *len, *cap - *len);
        if (got > 0)
            *len += (size_t)got;
        else if (got < 0 && errno != EINTR) {
            hf_cli_error("cannot read %s: %s", name, strerror(errno));
            rc = HF_EXIT_FAILED;
        }
    }
    if (fd != STDIN_FILENO) close(fd);
    return rc;
}

/* A plaintext output file is created 0600: it holds what the key protected. */
static int output_write(const char *path, const void *buf, size_t len, bool newline)
{
    int fd =
        is_stdio(path) ? STDOUT_FILENO : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const unsigned char *p = buf;
    int rc = HF_EXIT_OK;

    if (fd < 0) goto fail;
    while (len > 0) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR) continue;
        if (n < 0) goto fail;
        p += n;
        len -= (size_t)n;
    }
    if (newline && write(fd, "\n", 1) != 1) goto fail;
    goto done;
fail:
    hf_cli_error("cannot write %s: %s", is_stdio(path) ? "standard output" : path, strerror(errno));
    rc = HF_EXIT_FAILED;
done:
    if (fd >= 0 && fd != STDOUT_FILENO && close(fd) != 0 && rc == HF_EXIT_OK) {
        hf_cli_error("cannot write %s: %s", path, strerror(errno));
        rc = HF_EXIT_FAILED;
    }
    return rc;
}

static char *base64_encode(const unsigned char *in, size_t len)
{
    size_t outlen = 4 * ((len + 2) / 3) + 1;
    unsigned char *out;

    if (len > CRYPT_INPUT_MAX * 2 || !(out = malloc(outlen))) return NULL;
    EVP_EncodeBlock(out, in, (int)len);
    return (char *)out;
}

/* Whitespace anywhere is ignored, so wrapped base64 decodes too. */
static bool base64_decode(unsigned char *text, size_t len, unsigned char **out, size_t *outlen)
{
    size_t n = 0, pad = 0;
    int got;

    for (size_t i = 0; i < len; i++)
        if (text[i] != ' ' && text[i] != '\n' && text[i] != '\r' && text[i] != '\t')
            text[n++] = text[i];
    if (n == 0 || n % 4 != 0 || n > CRYPT_INPUT_MAX * 2) return false;
    /* EVP_DecodeBlock counts the bytes that '=' padding stands for; drop them. */
    while (pad < 2 && text[n - 1 - pad] == '=')
        pad++;
    if (!(*out = malloc(n / 4 * 3))) return false;
    got = EVP_DecodeBlock(*out, text, (int)n);
    if (got < 0 || (size_t)got < pad) {
        free(*out);
        *out = NULL;
        return false;
    }
    *outlen = (size_t)got - pad;
    return true;
}

/* ---- the audit record and the final report ---- */

static CK_RV op_audit(struct hf_cli *cli, struct crypt_op *op)
{
    struct hf_audit *audit = hf_core_audit(cli->core);
    struct hf_audit_record rec = {
        .api = "cli",
        .operation = op->name,
        .key_uuid = op->key.uuid[0] ? op->key.uuid : NULL,
        .key_name = op->key.name ? op->key.name : op->ref,
        .version = op->version,
        .caller = cli->caller,
        .detail = "AES-GCM envelope HF1",
        .result = op->rv,
        .latency_us = hf_monotonic_us() - op->t0,
        .authenticated = true, /* the caller opened the store's files */
    };
    uint64_t seq = 0;
    CK_RV rv = hf_audit_append(audit, &rec, &seq);

    /* Nothing is printed before its record is durable: output then always has a record. */
    if (rv == CKR_OK) rv = hf_audit_wait_durable(audit, seq);
    return rv;
}

static int op_fail(struct crypt_op *op, int code, CK_RV rv, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int op_fail(struct crypt_op *op, int code, CK_RV rv, const char *fmt, ...)
{
    va_list ap;

    op->rv = rv;
    op->exit_code = code;
    va_start(ap, fmt);
    vsnprintf(op->why, sizeof(op->why), fmt, ap);
    va_end(ap);
    return code;
}

/* Audits the operation, then reports any failure. HF_CLI_CONTINUE when output may be written. */
static int op_finish(struct hf_cli *cli, struct crypt_op *op)
{
    char what[HF_NAME_MAX + 48];
    CK_RV arv = op_audit(cli, op);

    if (arv != CKR_OK) {
        hf_cli_error("%s: the audit log cannot be written, so no output is given: %s", op->name,
                     hf_cli_strerror(arv));
        return HF_EXIT_AUDIT;
    }
    if (op->rv == CKR_OK) return HF_CLI_CONTINUE;
    if (op->why[0]) {
        hf_cli_error("%s", op->why);
        return op->exit_code;
    }
    if (op->version)
        snprintf(what, sizeof(what), "key '%s' version %u", op->key.name, op->version);
    else
        snprintf(what, sizeof(what), "key '%s'", op->key.name ? op->key.name : "?");
    return hf_cli_fail(cli, op->rv, what);
}

/* The checks both directions share: an AES key whose state and usage allow usage_bit. */
static int op_check_key(struct crypt_op *op, unsigned long usage_bit)
{
    char alg[32], usage[128];

    hf_alg_format(op->key.alg, op->key.bits, alg, sizeof(alg));
    if (op->key.alg != HF_ALG_AES)
        return op_fail(op, HF_EXIT_FAILED, CKR_KEY_TYPE_INCONSISTENT,
                       "%s: key '%s' is %s: the envelope needs an AES key", op->name, op->key.name,
                       alg);
    if (op->key.state == HF_STATE_DESTROYED)
        return op_fail(op, HF_EXIT_FAILED, CKR_KEY_FUNCTION_NOT_PERMITTED,
                       "%s: key '%s' is destroyed: its material is gone", op->name, op->key.name);
    if (!hf_key_is_usable_for(&op->key, usage_bit)) {
        hf_usage_format(op->key.usage, usage, sizeof(usage));
        return op_fail(op, HF_EXIT_FAILED, CKR_KEY_FUNCTION_NOT_PERMITTED,
                       "%s: key '%s' (state %s, usage %s) does not permit %s", op->name,
                       op->key.name, hf_state_name(op->key.state), usage, op->name);
    }
    return HF_CLI_CONTINUE;
}

/* ---- encrypt ---- */

static void header_write(unsigned char *h, const uuid_t key_uuid, unsigned version,
                         const unsigned char *iv)
{
    memcpy(h, ENV_MAGIC, ENV_MAGIC_LEN);
    memcpy(h + ENV_UUID_OFF, key_uuid, 16);
    h[ENV_VERSION_OFF] = (unsigned char)(version >> 24);
    h[ENV_VERSION_OFF + 1] = (unsigned char)(version >> 16);
    h[ENV_VERSION_OFF + 2] = (unsigned char)(version >> 8);
    h[ENV_VERSION_OFF + 3] = (unsigned char)version;
    memcpy(h + ENV_IV_OFF, iv, ENV_IV_LEN);
}

/* Seals in (plaintext) under the key's current version into *blob (header | ct | tag). */
static int seal(struct hf_cli *cli, struct crypt_op *op, const unsigned char *in, size_t inlen,
                unsigned char **blob, size_t *bloblen)
{
    struct hf_key_version v = {0};
    unsigned char iv[ENV_IV_LEN];
    size_t ctlen = inlen + ENV_TAG_LEN;
    uuid_t raw;
    int rc;

    if ((rc = op_check_key(op, HF_USAGE_ENCRYPT)) != HF_CLI_CONTINUE) return rc;
    op->rv = hf_store_version_find(hf_core_store(cli->core), op->key.uuid, 0, &v);
    if (op->rv == CKR_OK) op->version = v.version;
    /* A current version marked compromised on its own (holdfast key version compromise). */
    if (op->rv == CKR_OK && !hf_key_version_is_usable_for(&op->key, &v, HF_USAGE_ENCRYPT)) {
        rc = op_fail(op, HF_EXIT_FAILED, CKR_KEY_FUNCTION_NOT_PERMITTED,
                     "%s: key '%s' version %u is %s: rotate the key to encrypt again", op->name,
                     op->key.name, v.version, hf_state_name(v.state));
        hf_key_version_clear(&v);
        return rc;
    }
    if (op->rv == CKR_OK) op->rv = hf_random(iv, sizeof(iv));
    if (op->rv == CKR_OK && uuid_parse(op->key.uuid, raw) != 0) op->rv = CKR_GENERAL_ERROR;
    if (op->rv == CKR_OK && !(*blob = malloc(ENV_HEADER_LEN + ctlen))) op->rv = CKR_HOST_MEMORY;
    if (op->rv == CKR_OK) {
        header_write(*blob, raw, v.version, iv);
        /* Local or pool key alike: the core sends a pool key's work to its member. */
        op->rv =
            hf_core_key_gcm(cli->core, &op->key, &v, true, iv, sizeof(iv), *blob, ENV_HEADER_LEN,
                            ENV_TAG_LEN, in, inlen, *blob + ENV_HEADER_LEN, &ctlen);
        *bloblen = ENV_HEADER_LEN + ctlen;
    }
    hf_key_version_clear(&v);
    return op->rv == CKR_OK ? HF_CLI_CONTINUE : HF_EXIT_FAILED;
}

int hf_cmd_encrypt(struct hf_cli *cli, int argc, char **argv)
{
    struct crypt_args a = {0};
    struct crypt_op op = {.name = "encrypt"};
    unsigned char *plain = NULL, *blob = NULL;
    size_t plainlen = 0, plaincap = 0, bloblen = 0;
    char *text = NULL;
    int rc;

    if ((rc = crypt_parse(cli, argc, argv, true, &a)) != HF_CLI_CONTINUE) goto done;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) goto done;
    /* The key first: a wrong name should not wait for all of stdin. */
    op.ref = a.key_ref;
    op.rv = hf_store_key_get(hf_core_store(cli->core), a.key_ref, &op.key);
    if (op.rv == CKR_OK && (rc = input_read(a.in, &plain, &plainlen, &plaincap)) != HF_CLI_CONTINUE)
        goto done;
    op.t0 = hf_monotonic_us();
    if (op.rv == CKR_KEY_HANDLE_INVALID)
        op_fail(&op, HF_EXIT_NOT_FOUND, op.rv, "key '%s' not found", a.key_ref);
    else if (op.rv == CKR_OK)
        seal(cli, &op, plain, plainlen, &blob, &bloblen);
    if (op.rv == CKR_OK && !(text = base64_encode(blob, bloblen))) op.rv = CKR_HOST_MEMORY;
    if ((rc = op_finish(cli, &op)) != HF_CLI_CONTINUE) goto done;
    rc = output_write(a.out, text, strlen(text), true);
done:
    OPENSSL_clear_free(plain, plaincap);
    free(blob);
    free(text);
    hf_key_clear(&op.key);
    return rc;
}

/* ---- decrypt ---- */

/* Finds the key and version the envelope names and checks they may decrypt. */
static int envelope_key(struct hf_cli *cli, struct crypt_op *op, const unsigned char *env,
                        struct hf_key_version *v)
{
    const unsigned char *p = env + ENV_VERSION_OFF;
    unsigned version = (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
    char uuid[HF_UUID_LEN + 1];
    int rc;

    uuid_unparse_lower(env + ENV_UUID_OFF, uuid);
    op->rv = hf_store_key_get(hf_core_store(cli->core), uuid, &op->key);
    if (op->rv != CKR_OK) memcpy(op->key.uuid, uuid, sizeof(uuid)); /* for the audit record */
    if (op->rv == CKR_KEY_HANDLE_INVALID)
        return op_fail(op, HF_EXIT_NOT_FOUND, op->rv, "key %s (named by the envelope) not found",
                       uuid);
    if (op->rv != CKR_OK) return HF_EXIT_FAILED;
    /* version 0 would mean "current" to the store: never valid in an envelope. */
    op->rv = version == 0 ? CKR_KEY_HANDLE_INVALID
                          : hf_store_version_find(hf_core_store(cli->core), uuid, version, v);
    if (op->rv == CKR_KEY_HANDLE_INVALID)
        return op_fail(op, HF_EXIT_NOT_FOUND, op->rv,
                       "key '%s' version %u (named by the envelope) not found", op->key.name,
                       version);
    if (op->rv != CKR_OK) return HF_EXIT_FAILED;
    op->version = version;
    if ((rc = op_check_key(op, HF_USAGE_DECRYPT)) != HF_CLI_CONTINUE) return rc;
    if (!hf_key_version_has_material(v))
        return op_fail(op, HF_EXIT_FAILED, CKR_KEY_FUNCTION_NOT_PERMITTED,
                       "%s: key '%s' version %u is destroyed: its material is gone", op->name,
                       op->key.name, version);
    return HF_CLI_CONTINUE;
}

/* Opens env into *plain, an allocation of *plaincap bytes (OPENSSL_clear_free it). */
static int unseal(struct hf_cli *cli, struct crypt_op *op, const unsigned char *env, size_t len,
                  unsigned char **plain, size_t *plainlen, size_t *plaincap)
{
    struct hf_key_version v = {0};
    int rc;

    if (len < ENV_HEADER_LEN + ENV_TAG_LEN || memcmp(env, ENV_MAGIC, ENV_MAGIC_LEN) != 0)
        return op_fail(op, HF_EXIT_FAILED, CKR_ENCRYPTED_DATA_INVALID,
                       "%s: the input is not a Holdfast envelope (HF1)", op->name);
    if ((rc = envelope_key(cli, op, env, &v)) != HF_CLI_CONTINUE) goto done;
    *plainlen = len - ENV_HEADER_LEN;
    op->rv = (*plain = OPENSSL_zalloc(*plainlen)) != NULL ? CKR_OK : CKR_HOST_MEMORY;
    if (op->rv == CKR_OK) *plaincap = *plainlen;
    if (op->rv == CKR_OK)
        op->rv = hf_core_key_gcm(cli->core, &op->key, &v, false, env + ENV_IV_OFF, ENV_IV_LEN, env,
                                 ENV_HEADER_LEN, ENV_TAG_LEN, env + ENV_HEADER_LEN,
                                 len - ENV_HEADER_LEN, *plain, plainlen);
    rc = op->rv == CKR_OK ? HF_CLI_CONTINUE : HF_EXIT_FAILED;
done:
    hf_key_version_clear(&v);
    return rc;
}

int hf_cmd_decrypt(struct hf_cli *cli, int argc, char **argv)
{
    struct crypt_args a = {0};
    struct crypt_op op = {.name = "decrypt"};
    unsigned char *text = NULL, *env = NULL, *plain = NULL;
    size_t textlen = 0, textcap = 0, envlen = 0, plainlen = 0, plaincap = 0;
    int rc;

    if ((rc = crypt_parse(cli, argc, argv, false, &a)) != HF_CLI_CONTINUE) goto done;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) goto done;
    if ((rc = input_read(a.in, &text, &textlen, &textcap)) != HF_CLI_CONTINUE) goto done;
    op.t0 = hf_monotonic_us();
    if (!base64_decode(text, textlen, &env, &envlen))
        op_fail(&op, HF_EXIT_FAILED, CKR_ENCRYPTED_DATA_INVALID,
                "%s: the input is not a Holdfast envelope (bad base64)", op.name);
    else
        unseal(cli, &op, env, envlen, &plain, &plainlen, &plaincap);
    if ((rc = op_finish(cli, &op)) != HF_CLI_CONTINUE) goto done;
    rc = output_write(a.out, plain, plainlen, false);
done:
    OPENSSL_clear_free(plain, plaincap);
    OPENSSL_free(text);
    free(env);
    hf_key_clear(&op.key);
    return rc;
}
