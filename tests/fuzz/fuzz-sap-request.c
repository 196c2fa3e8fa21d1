/* libFuzzer target for gateway/plugins/sap-hyok/request.c: the SAP HYOK body parser
 * (request_metadata), get-versions-metadata's paging and its selection, RFC 3339 and the
 * enums, on arbitrary bytes.
 *
 * Input: the first byte picks what the rest is: a body (0), an RFC 3339 string (1) or an enum
 * name (2). Besides "no crash, no leak, no UB", it checks what the handlers rely on: an accepted
 * body has a non-empty sap_tenant_id within the cap, accepted paging is within the spec's
 * ranges and selects a slice inside the list, a parsed date formats back to a date that parses
 * to the same second, and a refusal says why in printable ASCII. */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/request.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_why(const char *why)
{
    if (why[0] == '\0') abort();
    for (const char *p = why; *p; p++)
        if (*p < 0x20 || *p > 0x7e) abort();
}

static void check_string_cap(const char *s)
{
    if (s != NULL && strlen(s) > HF_SAP_STRING_MAX) abort();
}

/* Three versions, created at 100, 200, 300, so every filter and page is exercised. */
static void check_paging(const struct json_object *root)
{
    struct hf_key_version v[3] = {
        {1, "00000000-0000-4000-8000-000000000001", HF_STATE_ACTIVE, 100, 0, 0},
        {2, "00000000-0000-4000-8000-000000000002", HF_STATE_ACTIVE, 200, 0, 0},
        {3, "00000000-0000-4000-8000-000000000003", HF_STATE_ACTIVE, 300, 0, 0},
    };
    struct hf_sap_paging p;
    size_t sel[3], total, first, count;
    char why[256] = "";

    if (hf_sap_paging_parse(root, &p, why, sizeof(why)) != HF_STATUS_OK) {
        check_why(why);
        return;
    }
    if (p.skip < 0 || p.limit < 1 || p.limit > (int64_t)HF_SAP_LIMIT_MAX) abort();
    hf_sap_paging_select(&p, v, 3, sel, &total, &first, &count);
    if (total > 3 || first > total || first + count > total || count > (size_t)p.limit) abort();
    for (size_t i = 0; i < total; i++)
        if (sel[i] >= 3 || (i > 0 && sel[i] <= sel[i - 1])) abort();
}

static void check_body(const uint8_t *data, size_t size)
{
    struct json_object *root = NULL;
    struct hf_sap_metadata meta;
    char why[256] = "";

    if (hf_sap_body_parse(data, size, &root, &meta, why, sizeof(why)) != HF_STATUS_OK) {
        if (root != NULL) abort();
        check_why(why);
        return;
    }
    if (meta.tenant == NULL || meta.tenant[0] == '\0') abort();
    check_string_cap(meta.tenant);
    check_string_cap(meta.group);
    check_string_cap(meta.user_type);
    check_string_cap(meta.request_id);
    check_paging(root);
    hf_json_put_wiped(root);
}

static void check_date(const char *s)
{
    int64_t t, again;
    char out[64];

    if (!hf_sap_rfc3339_parse(s, &t)) return;
    /* Years 0000..9999 and offsets of a day at most: within time_t's range either way. */
    if (t < -62167219200LL - 86400 || t > 253402300799LL + 86400) abort();
    hf_sap_rfc3339_format(t, out, sizeof(out));
    if (t >= 0 && t < 253402300800LL && (!hf_sap_rfc3339_parse(out, &again) || again != t)) abort();
}

static void check_enum(const char *s)
{
    struct hf_sap_hash h;
    enum hf_sap_message_type mt;

    if (hf_sap_oaep_alg_parse(s, &h) && (h.len < 20 || h.len > 64)) abort();
    if (hf_sap_pss_alg_parse(s, &h) && (h.len < 32 || h.len > 64)) abort();
    if (hf_sap_message_type_parse(s, &mt) && strcmp(s, "RAW") != 0 && strcmp(s, "DIGEST") != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s;

    if (size < 1) return 0;
    if (data[0] % 3 == 0) {
        check_body(data + 1, size - 1);
        return 0;
    }
    if ((s = malloc(size)) == NULL) return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    if (data[0] % 3 == 1)
        check_date(s);
    else
        check_enum(s);
    free(s);
    return 0;
}
