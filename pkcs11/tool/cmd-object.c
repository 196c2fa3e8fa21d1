/* `holdfast object list` and `holdfast object delete NUMBER --yes`: the certificate and data
 * objects that PKCS#11 software keeps on the token beside its keys (store.h's objects). They
 * are made through PKCS#11 (pkcs11-tool --write-object, C_CreateObject); the operator sees and
 * removes them here. NUMBER is the store's row id, shown by `list`. */
#include "hf-build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/x509.h>

#include "pkcs11/tool/cli.h"

/* CKO_DATA and CKO_CERTIFICATE (PKCS#11 2.40): the CLI does not include pkcs11.h's names. */
#define CLASS_DATA 0UL
#define CLASS_CERTIFICATE 1UL

static const char *class_name(unsigned long cls)
{
    return cls == CLASS_CERTIFICATE ? "certificate" : cls == CLASS_DATA ? "data" : "other";
}

static bool is_printable(const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] < 0x20 || p[i] == 0x7f) return false;
    return true;
}

/* A label as text when it is, else its hex (labels are any bytes in PKCS#11). malloc'd. */
static char *label_text(const struct hf_store_object *o)
{
    static const char digits[] = "0123456789abcdef";
    bool text = is_printable(o->label, o->label_len);
    char *out = malloc(text ? o->label_len + 1 : 2 * o->label_len + 3);

    if (!out) return NULL;
    if (text) {
        if (o->label_len) memcpy(out, o->label, o->label_len);
        out[o->label_len] = '\0';
        return out;
    }
    strcpy(out, "0x");
    for (size_t i = 0; i < o->label_len; i++) {
        out[2 + 2 * i] = digits[o->label[i] >> 4];
        out[3 + 2 * i] = digits[o->label[i] & 15];
    }
    out[2 + 2 * o->label_len] = '\0';
    return out;
}

static char *hex_text(const unsigned char *p, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    char *out = malloc(2 * len + 1);

    if (!out) return NULL;
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * len] = '\0';
    return out;
}

/* The certificate's subject, RFC 2253 ("CN=x,O=y"); NULL when not a certificate. malloc'd. */
static char *subject_text(const struct hf_store_object *o)
{
    const unsigned char *p = o->value;
    X509 *x = o->cls == CLASS_CERTIFICATE ? d2i_X509(NULL, &p, (long)o->value_len) : NULL;
    BIO *bio = x ? BIO_new(BIO_s_mem()) : NULL;
    char *out = NULL, *data;
    long len;

    if (bio && X509_NAME_print_ex(bio, X509_get_subject_name(x), 0, XN_FLAG_RFC2253) >= 0 &&
        (len = BIO_get_mem_data(bio, &data)) >= 0 && (out = malloc((size_t)len + 1))) {
        memcpy(out, data, (size_t)len);
        out[len] = '\0';
    }
    BIO_free(bio);
    X509_free(x);
    return out;
}

struct object_view {
    char number[24], size[24];
    char *label, *id, *subject;
};

static bool view_make(const struct hf_store_object *o, struct object_view *v)
{
    snprintf(v->number, sizeof(v->number), "%lld", (long long)o->id);
    snprintf(v->size, sizeof(v->size), "%zu", o->value_len);
    v->label = label_text(o);
    v->id = hex_text(o->ckaid, o->ckaid_len);
    v->subject = subject_text(o);
    return v->label && v->id;
}

static void view_clear(struct object_view *v)
{
    free(v->label);
    free(v->id);
    free(v->subject);
}

static json_object *object_json(const struct hf_store_object *o, const struct object_view *v)
{
    json_object *j = json_object_new_object();

    if (!j) return NULL;
    json_object_object_add(j, "object", json_object_new_int64(o->id));
    json_object_object_add(j, "class", json_object_new_string(class_name(o->cls)));
    json_object_object_add(j, "label", json_object_new_string(v->label));
    json_object_object_add(j, "id", json_object_new_string(v->id));
    json_object_object_add(j, "private", json_object_new_boolean(o->is_private));
    json_object_object_add(j, "size", json_object_new_int64((int64_t)o->value_len));
    if (v->subject) json_object_object_add(j, "subject", json_object_new_string(v->subject));
    return j;
}

static int list_print(struct hf_cli *cli, const struct hf_store_object *objs, size_t n)
{
    static const char *const headers[] = {"OBJECT", "CLASS", "LABEL", "ID", "SIZE", "SUBJECT"};
    struct hf_table *t = cli->json ? NULL : hf_table_new(6, headers);
    json_object *arr = cli->json ? json_object_new_array() : NULL;
    int rc = HF_EXIT_OK;

    if (!t && !arr) return hf_cli_json_print(NULL);
    for (size_t i = 0; i < n && rc == HF_EXIT_OK; i++) {
        struct object_view v = {0};
        if (!view_make(&objs[i], &v)) {
            rc = HF_EXIT_FAILED;
        } else if (arr) {
            json_object_array_add(arr, object_json(&objs[i], &v));
        } else {
            const char *row[6] = {v.number, class_name(objs[i].cls), v.label, v.id, v.size,
                                  v.subject};
            hf_table_add(t, row);
        }
        view_clear(&v);
    }
    if (rc != HF_EXIT_OK) {
        hf_cli_error("out of memory");
        json_object_put(arr);
    } else if (arr) {
        rc = hf_cli_json_print(arr);
    } else {
        hf_table_print(t, stdout, "");
    }
    hf_table_free(t);
    return rc;
}

static int cmd_list(struct hf_cli *cli, int argc, char **argv)
{
    struct hf_store_object *objs = NULL;
    size_t n = 0;
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_plain(cli, argc, argv, 0, 0)) != HF_CLI_CONTINUE) return rc;
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    rv = hf_store_object_list(hf_core_store(cli->core), &objs, &n);
    if (rv != CKR_OK) return hf_cli_fail(cli, rv, "listing objects");
    rc = list_print(cli, objs, n);
    for (size_t i = 0; i < n; i++)
        hf_store_object_clear(&objs[i]);
    free(objs);
    return rc;
}

static int cmd_delete(struct hf_cli *cli, int argc, char **argv)
{
    char *end, what[48];
    long long id;
    bool yes;
    CK_RV rv;
    int rc;

    if ((rc = hf_cli_args_yes(cli, argc, argv, 1, 1, &yes)) != HF_CLI_CONTINUE) return rc;
    errno = 0;
    id = strtoll(argv[optind], &end, 10);
    if (errno || *end || end == argv[optind] || id <= 0)
        return hf_cli_usage_error(cli, "NUMBER is an object's number from `holdfast object list`");
    if (!yes)
        return hf_cli_usage_error(cli,
                                  "refusing to delete object %lld without --yes: PKCS#11 "
                                  "software that uses it will no longer find it",
                                  id);
    if ((rc = hf_cli_core(cli)) != HF_CLI_CONTINUE) return rc;
    snprintf(what, sizeof(what), "object %lld", id);
    rv = hf_core_object_delete(cli->core, (int64_t)id, &cli->who);
    if (rv != CKR_OK) return hf_cli_fail(cli, rv, what);
    if (cli->json) {
        json_object *o = json_object_new_object();
        if (o) {
            json_object_object_add(o, "object", json_object_new_int64(id));
            json_object_object_add(o, "deleted", json_object_new_boolean(true));
        }
        return hf_cli_json_print(o);
    }
    printf("%s deleted\n", what);
    return HF_EXIT_OK;
}

static const struct hf_cli_command object_commands[] = {
    {"list", cmd_list, "", "list certificate and data objects (made through PKCS#11)", NULL},
    {"delete", cmd_delete, "NUMBER --yes", "delete one, by its number from `object list`", NULL},
};

int hf_cmd_object(struct hf_cli *cli, int argc, char **argv)
{
    return hf_cli_dispatch(cli, object_commands,
                           sizeof(object_commands) / sizeof(object_commands[0]), argc - 1,
                           argv + 1);
}
