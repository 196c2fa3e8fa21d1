/* The wrapped_key (specs/gws-cse.md, "Crypto"): a DEK with the resource_name and perimeter_id
 * it is bound to, as payload.h's three fields sealed under the prefix's KEK. */
#include "hf-build.h"

#include "gateway/plugins/gws-cse/internal.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

enum hf_status hf_cse_key_seal(struct hf_cse_call *call, struct hf_request *req,
                               const unsigned char *dek, size_t dek_len, const char *resource_name,
                               const char *perimeter_id, struct json_object **wrapped)
{
    const struct hf_cse_field f[3] = {
        {dek, dek_len},
        {(const unsigned char *)resource_name, strlen(resource_name)},
        {(const unsigned char *)perimeter_id, strlen(perimeter_id)},
    };
    unsigned char *pt = NULL, *blob = NULL;
    size_t pt_len = 0, blob_len = 0;
    enum hf_status st = HF_STATUS_INTERNAL;

    *wrapped = NULL;
    if (!hf_cse_fields_encode(f, 3, NULL, &pt_len) || (pt = malloc(pt_len ? pt_len : 1)) == NULL ||
        !hf_cse_fields_encode(f, 3, pt, &pt_len)) {
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "the payload does not encode");
        goto done;
    }
    st = hf_cse_kek_seal(call, req, HF_CSE_API, pt, pt_len, &blob, &blob_len);
    if (st != HF_STATUS_OK) goto done;
    if ((*wrapped = hf_json_base64(blob, blob_len)) == NULL)
        st = hf_request_fail(req, HF_STATUS_INTERNAL, "out of memory");
done:
    if (pt != NULL) OPENSSL_clear_free(pt, pt_len ? pt_len : 1);
    free(blob);
    return st;
}

enum hf_status hf_cse_key_open(struct hf_cse_call *call, struct hf_request *req,
                               const unsigned char *blob, size_t blob_len,
                               struct hf_cse_opened *out)
{
    struct hf_cse_field f[3];
    enum hf_status st;

    memset(out, 0, sizeof(*out));
    st = hf_cse_kek_open(call, req, HF_CSE_API, blob, blob_len, &out->pt, &out->pt_len);
    if (st != HF_STATUS_OK) return st;
    /* It authenticated under our KEK, so only a bug of ours writes a payload that does not
     * parse: still, fail closed. */
    if (!hf_cse_fields_decode(out->pt, out->pt_len, f, 3) || f[0].len > HF_CSE_SMALL_MAX) {
        hf_cse_opened_clear(out);
        return hf_request_fail(req, HF_STATUS_BAD_CIPHERTEXT,
                               "the wrapped key's payload is not "
                               "this KACLS's");
    }
    out->dek = f[0].p;
    out->dek_len = f[0].len;
    out->resource_name = (const char *)f[1].p;
    out->resource_name_len = f[1].len;
    out->perimeter_id = (const char *)f[2].p;
    out->perimeter_id_len = f[2].len;
    return HF_STATUS_OK;
}

void hf_cse_opened_clear(struct hf_cse_opened *o)
{
    if (o == NULL) return;
    if (o->pt != NULL) OPENSSL_clear_free(o->pt, o->pt_len);
    memset(o, 0, sizeof(*o));
}

bool hf_cse_opened_is_for(const struct hf_cse_opened *o, const char *resource_name)
{
    return resource_name != NULL && strlen(resource_name) == o->resource_name_len &&
           memcmp(resource_name, o->resource_name, o->resource_name_len) == 0;
}

char *hf_cse_opened_perimeter(const struct hf_cse_opened *o)
{
    char *s = malloc(o->perimeter_id_len + 1);

    if (s == NULL) return NULL;
    memcpy(s, o->perimeter_id, o->perimeter_id_len);
    s[o->perimeter_id_len] = '\0';
    return s;
}
