/* SAP HYOK request bodies (request.h): the gateway's strict JSON reader and member rules, then
 * the spec's metadata, paging and enums. */
#include "hf-build.h"

#include "gateway/plugins/sap-hyok/request.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const metadata_names[] = {"sap_tenant_id", "sap_group_id", "sap_user_type",
                                             "sap_request_id"};

static enum hf_status metadata_parse(const struct json_object *root, struct hf_sap_metadata *meta,
                                     char *why, size_t whylen)
{
    struct json_object *md = NULL;
    const char **slots[] = {&meta->tenant, &meta->group, &meta->user_type, &meta->request_id};
    enum hf_status st;

    if (!json_object_object_get_ex(root, "request_metadata", &md) || md == NULL) {
        snprintf(why, whylen, "request_metadata is required");
        return HF_STATUS_BAD_REQUEST;
    }
    if (!json_object_is_type(md, json_type_object)) {
        snprintf(why, whylen, "request_metadata: want an object");
        return HF_STATUS_BAD_REQUEST;
    }
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
        st = hf_json_member_string(md, "request_metadata.", metadata_names[i], i == 0,
                                   HF_SAP_STRING_MAX, HF_STATUS_BAD_REQUEST, slots[i], NULL, why,
                                   whylen);
        if (st != HF_STATUS_OK) return st;
    }
    if (meta->tenant[0] == '\0') {
        snprintf(why, whylen, "request_metadata.sap_tenant_id: empty");
        return HF_STATUS_BAD_REQUEST;
    }
    return HF_STATUS_OK;
}

enum hf_status hf_sap_body_parse(const unsigned char *body, size_t len, struct json_object **root,
                                 struct hf_sap_metadata *meta, char *why, size_t whylen)
{
    enum hf_status st;

    *root = NULL;
    memset(meta, 0, sizeof(*meta));
    st = hf_json_parse(body, len, HF_SAP_BODY_MAX, 0, root, why, whylen);
    if (st == HF_STATUS_UNSUPPORTED) st = HF_STATUS_BAD_REQUEST; /* over the spec's own cap */
    if (st != HF_STATUS_OK) return st;
    if (!json_object_is_type(*root, json_type_object)) {
        snprintf(why, whylen, "the body is not a JSON object");
        st = HF_STATUS_BAD_REQUEST;
    } else {
        st = metadata_parse(*root, meta, why, whylen);
    }
    if (st != HF_STATUS_OK) {
        hf_json_put_wiped(*root);
        *root = NULL;
        memset(meta, 0, sizeof(*meta));
    }
    return st;
}

enum hf_status hf_sap_member_int(const struct json_object *obj, const char *name, bool required,
                                 int64_t min, int64_t max, int64_t dflt, int64_t *out, char *why,
                                 size_t whylen)
{
    struct json_object *v = NULL;
    int64_t n;

    if (!json_object_object_get_ex(obj, name, &v) || v == NULL) {
        if (!required) {
            *out = dflt;
            return HF_STATUS_OK;
        }
        snprintf(why, whylen, "%s is required", name);
        return HF_STATUS_BAD_REQUEST;
    }
    if (!json_object_is_type(v, json_type_int)) {
        snprintf(why, whylen, "%s: want an integer", name);
        return HF_STATUS_BAD_REQUEST;
    }
    /* json-c saturates out-of-range integers at INT64_MIN/MAX, which no range here admits. */
    n = json_object_get_int64(v);
    if (n < min || n > max) {
        snprintf(why, whylen, "%s: want %lld..%lld", name, (long long)min, (long long)max);
        return HF_STATUS_BAD_REQUEST;
    }
    *out = n;
    return HF_STATUS_OK;
}

enum hf_status hf_sap_paging_parse(const struct json_object *root, struct hf_sap_paging *out,
                                   char *why, size_t whylen)
{
    const char *after = NULL;
    enum hf_status st;

    memset(out, 0, sizeof(*out));
    if ((st = hf_sap_member_int(root, "skip", false, 0, INT32_MAX, 0, &out->skip, why, whylen)) ||
        (st = hf_sap_member_int(root, "limit", false, 1, HF_SAP_LIMIT_MAX, HF_SAP_LIMIT_DEFAULT,
                                &out->limit, why, whylen)) ||
        (st = hf_json_member_string(root, "", "key_version_id", false, HF_SAP_STRING_MAX,
                                    HF_STATUS_BAD_REQUEST, &out->key_version_id, NULL, why,
                                    whylen)) ||
        (st = hf_json_member_string(root, "", "created_after", false, 64, HF_STATUS_BAD_REQUEST,
                                    &after, NULL, why, whylen)))
        return st;
    if (after != NULL) {
        if (!hf_sap_rfc3339_parse(after, &out->created_after)) {
            snprintf(why, whylen, "created_after: want an RFC 3339 date-time");
            return HF_STATUS_BAD_REQUEST;
        }
        out->has_created_after = true;
    }
    return HF_STATUS_OK;
}

void hf_sap_paging_select(const struct hf_sap_paging *p, const struct hf_key_version *versions,
                          size_t n, size_t *sel, size_t *total, size_t *first, size_t *count)
{
    size_t m = 0;

    for (size_t i = 0; i < n; i++) {
        if (p->key_version_id != NULL && strcmp(versions[i].uuid, p->key_version_id) != 0) continue;
        if (p->has_created_after && versions[i].created <= p->created_after) continue;
        sel[m++] = i;
    }
    *total = m;
    *first = (uint64_t)p->skip < m ? (size_t)p->skip : m;
    *count = m - *first < (size_t)p->limit ? m - *first : (size_t)p->limit;
}

/* ---- RFC 3339 -------------------------------------------------------------------------------- */

static bool digits(const char *s, size_t n, int *out)
{
    int v = 0;

    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era;
    unsigned yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static bool is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static bool date_parse(const char *s, int *y, int *mo, int *d)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    if (!digits(s, 4, y) || s[4] != '-' || !digits(s + 5, 2, mo) || s[7] != '-' ||
        !digits(s + 8, 2, d))
        return false;
    if (*mo < 1 || *mo > 12 || *d < 1) return false;
    return *d <= mdays[*mo - 1] + (*mo == 2 && is_leap(*y));
}

/* "Z", "z" or "+hh:mm"/"-hh:mm": the offset east of UTC in seconds. */
static bool offset_parse(const char *s, int64_t *off)
{
    int hh, mm;

    if ((s[0] == 'Z' || s[0] == 'z') && s[1] == '\0') {
        *off = 0;
        return true;
    }
    if ((s[0] != '+' && s[0] != '-') || !digits(s + 1, 2, &hh) || s[3] != ':' ||
        !digits(s + 4, 2, &mm) || s[6] != '\0' || hh > 23 || mm > 59)
        return false;
    *off = (int64_t)(hh * 3600 + mm * 60) * (s[0] == '-' ? -1 : 1);
    return true;
}

bool hf_sap_rfc3339_parse(const char *s, int64_t *out)
{
    int y, mo, d, h, mi, sec;
    int64_t off;
    const char *p;

    if (s == NULL || strlen(s) < 20 || !date_parse(s, &y, &mo, &d)) return false;
    if ((s[10] != 'T' && s[10] != 't') || !digits(s + 11, 2, &h) || s[13] != ':' ||
        !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &sec))
        return false;
    /* 60: a leap second, read as the next second's start. */
    if (h > 23 || mi > 59 || sec > 60) return false;
    p = s + 19;
    if (*p == '.') {
        if (!isdigit((unsigned char)p[1])) return false;
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    }
    if (!offset_parse(p, &off)) return false;
    *out = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + sec - off;
    return true;
}

void hf_sap_rfc3339_format(int64_t t, char *out, size_t outlen)
{
    time_t tt = (time_t)t;
    struct tm tm;

    if (gmtime_r(&tt, &tm) == NULL || strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(out, outlen, "1970-01-01T00:00:00Z");
}

/* ---- enums ----------------------------------------------------------------------------------- */

static const struct hf_sap_hash hashes[] = {
    {CKM_SHA_1, CKG_MGF1_SHA1, 20, "SHA1"},
    {CKM_SHA256, CKG_MGF1_SHA256, 32, "SHA256"},
    {CKM_SHA384, CKG_MGF1_SHA384, 48, "SHA384"},
    {CKM_SHA512, CKG_MGF1_SHA512, 64, "SHA512"},
};

/* name is prefix followed by "1", "256", "384" or "512" (first: the first hash allowed). */
static bool alg_parse(const char *name, const char *prefix, size_t first, struct hf_sap_hash *out)
{
    static const char *const suffixes[] = {"1", "256", "384", "512"};
    size_t n = strlen(prefix);

    if (name == NULL || strncmp(name, prefix, n) != 0) return false;
    for (size_t i = first; i < sizeof(hashes) / sizeof(hashes[0]); i++)
        if (strcmp(name + n, suffixes[i]) == 0) {
            *out = hashes[i];
            return true;
        }
    return false;
}

bool hf_sap_oaep_alg_parse(const char *name, struct hf_sap_hash *out)
{
    return alg_parse(name, "RSAES_OAEP_SHA_", 0, out);
}

bool hf_sap_pss_alg_parse(const char *name, struct hf_sap_hash *out)
{
    return alg_parse(name, "RSASSA_PSS_SHA_", 1, out);
}

bool hf_sap_message_type_parse(const char *name, enum hf_sap_message_type *out)
{
    if (name == NULL) return false;
    if (strcmp(name, "RAW") == 0)
        *out = HF_SAP_MESSAGE_RAW;
    else if (strcmp(name, "DIGEST") == 0)
        *out = HF_SAP_MESSAGE_DIGEST;
    else
        return false;
    return true;
}
