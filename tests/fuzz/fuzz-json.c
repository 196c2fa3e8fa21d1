/* libFuzzer target for gateway/json.c: the strict JSON reader every plugin's bodies go through,
 * on arbitrary bytes.
 *
 * Input: the first byte picks the depth limit (1..20: its value modulo 20, plus one); the rest
 * is the text. Besides "no crash, no leak, no UB", it checks what plugins rely on for every
 * accepted text: the tree, written out again by json-c, is accepted again (so it held no
 * duplicate key, no invalid UTF-8 and nothing over the depth), wiping it leaves every string
 * zero, and a refusal always says why in printable ASCII. */
#include "hf-build.h"

#include "gateway/json.h"

#include <json-c/json_visit.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check_wiped(struct json_object *o, int flags, struct json_object *parent,
                       const char *key, size_t *index, void *arg)
{
    (void)flags, (void)parent, (void)key, (void)index, (void)arg;
    if (json_object_is_type(o, json_type_string)) {
        const char *s = json_object_get_string(o);
        for (int i = 0; i < json_object_get_string_len(o); i++)
            if (s[i] != 0) abort();
    }
    return JSON_C_VISIT_RETURN_CONTINUE;
}

static void check_refusal(enum hf_status st, const char *why, const struct json_object *out)
{
    if (out != NULL || why[0] == '\0') abort();
    if (st != HF_STATUS_BAD_REQUEST && st != HF_STATUS_UNSUPPORTED && st != HF_STATUS_INTERNAL)
        abort();
    for (const char *p = why; *p; p++)
        if (*p < 0x20 || *p > 0x7e) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct json_object *root = NULL, *again = NULL;
    char why[256];
    const char *text;
    size_t len;
    int depth;
    enum hf_status st;

    if (size < 1) return 0;
    depth = data[0] % 20 + 1;
    st = hf_json_parse(data + 1, size - 1, 0, depth, &root, why, sizeof(why));
    if (st != HF_STATUS_OK) {
        check_refusal(st, why, root);
        return 0;
    }
    if (root == NULL) abort();
    text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
    if (text == NULL) abort();
    len = strlen(text);
    /* A json-c double may print as "1e+300"-style or with a trailing ".0": still JSON. */
    if (hf_json_parse(text, len, 0, depth, &again, why, sizeof(why)) != HF_STATUS_OK) abort();
    json_object_put(again);
    hf_json_wipe(root);
    json_c_visit(root, 0, check_wiped, NULL);
    json_object_put(root);
    return 0;
}
