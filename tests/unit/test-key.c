#include "hf-build.h"

#include "harness.h"
#include "pkcs11/core/key.h"

#include <stdlib.h>
#include <string.h>

static const unsigned long all_states[] = {HF_STATE_PRE_ACTIVE, HF_STATE_ACTIVE,
                                           HF_STATE_DEACTIVATED, HF_STATE_COMPROMISED,
                                           HF_STATE_DESTROYED};
static const unsigned long all_usages[] = {HF_USAGE_SIGN,    HF_USAGE_VERIFY, HF_USAGE_ENCRYPT,
                                           HF_USAGE_DECRYPT, HF_USAGE_WRAP,   HF_USAGE_UNWRAP};
#define N_STATES (sizeof(all_states) / sizeof(all_states[0]))
#define N_USAGES (sizeof(all_usages) / sizeof(all_usages[0]))

/* ---- state rules ---- */

static void test_state_rules_table_matches_kmip(void)
{
    /* Row per state, column per usage in all_usages order: sign verify encrypt decrypt wrap
     * unwrap. */
    static const bool expect[N_STATES][N_USAGES] = {
        {0, 0, 0, 0, 0, 0}, /* pre-active: nothing */
        {1, 1, 1, 1, 1, 1}, /* active: everything */
        {0, 1, 0, 1, 0, 1}, /* deactivated: verify, decrypt, unwrap */
        {0, 1, 0, 1, 0, 1}, /* compromised: same */
        {0, 0, 0, 0, 0, 0}, /* destroyed: nothing */
    };
    for (size_t s = 0; s < N_STATES; s++)
        for (size_t u = 0; u < N_USAGES; u++)
            CU_ASSERT_EQUAL(hf_key_state_allows(all_states[s], all_usages[u]), expect[s][u]);
}

static void test_state_rules_reject_unknown_state_and_empty_usage(void)
{
    CU_ASSERT_FALSE(hf_key_state_allows(0, HF_USAGE_DECRYPT));
    CU_ASSERT_FALSE(hf_key_state_allows(6, HF_USAGE_DECRYPT));
    CU_ASSERT_FALSE(hf_key_state_allows(HF_STATE_ACTIVE, 0));
    CU_ASSERT_FALSE(hf_key_state_allows(HF_STATE_ACTIVE, 0x40));
    /* A combined mask is allowed only when every bit is. */
    CU_ASSERT_TRUE(hf_key_state_allows(HF_STATE_DEACTIVATED, HF_USAGE_DECRYPT | HF_USAGE_VERIFY));
    CU_ASSERT_FALSE(hf_key_state_allows(HF_STATE_DEACTIVATED, HF_USAGE_DECRYPT | HF_USAGE_ENCRYPT));
}

static void test_key_usable_needs_both_mask_and_state(void)
{
    struct hf_key key = {.usage = HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT, .state = HF_STATE_ACTIVE};

    CU_ASSERT_TRUE(hf_key_is_usable_for(&key, HF_USAGE_ENCRYPT));
    CU_ASSERT_FALSE(hf_key_is_usable_for(&key, HF_USAGE_SIGN)); /* not in the mask */
    key.state = HF_STATE_DEACTIVATED;
    CU_ASSERT_FALSE(hf_key_is_usable_for(&key, HF_USAGE_ENCRYPT)); /* state forbids */
    CU_ASSERT_TRUE(hf_key_is_usable_for(&key, HF_USAGE_DECRYPT));
    key.state = HF_STATE_DESTROYED;
    CU_ASSERT_FALSE(hf_key_is_usable_for(&key, HF_USAGE_DECRYPT));
    CU_ASSERT_FALSE(hf_key_is_usable_for(NULL, HF_USAGE_DECRYPT));
}

static void test_state_transitions_only_move_forward(void)
{
    /* expect[from][to], states in all_states order. */
    static const bool expect[N_STATES][N_STATES] = {
        {0, 1, 1, 1, 1}, /* pre-active -> active|deactivated|compromised|destroyed */
        {0, 0, 1, 1, 1}, /* active -> deactivated|compromised|destroyed */
        {0, 0, 0, 1, 1}, /* deactivated -> compromised|destroyed */
        {0, 0, 0, 0, 1}, /* compromised -> destroyed */
        {0, 0, 0, 0, 0}, /* destroyed is final */
    };
    for (size_t f = 0; f < N_STATES; f++)
        for (size_t t = 0; t < N_STATES; t++)
            CU_ASSERT_EQUAL(hf_key_state_can_move(all_states[f], all_states[t]), expect[f][t]);
    CU_ASSERT_FALSE(hf_key_state_can_move(0, HF_STATE_ACTIVE));
    CU_ASSERT_FALSE(hf_key_state_can_move(HF_STATE_ACTIVE, 6));
}

static void test_version_state_moves_are_kmips_without_destroying_an_active_one(void)
{
    static const bool expect[N_STATES][N_STATES] = {
        {0, 0, 0, 0, 0}, /* a version is never pre-active */
        {0, 0, 1, 1, 0}, /* active -> deactivated|compromised (revoked before destroyed) */
        {0, 0, 0, 1, 1}, /* deactivated -> compromised|destroyed */
        {0, 0, 0, 0, 1}, /* compromised -> destroyed */
        {0, 0, 0, 0, 0}, /* destroyed is final */
    };
    for (size_t f = 0; f < N_STATES; f++)
        for (size_t t = 0; t < N_STATES; t++)
            CU_ASSERT_EQUAL(hf_version_state_can_move(all_states[f], all_states[t]), expect[f][t]);
}

static void test_a_version_state_narrows_its_keys_never_widens(void)
{
    struct hf_key key = {.usage = HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT, .state = HF_STATE_ACTIVE};
    struct hf_key_version v = {.state = HF_STATE_DEACTIVATED};

    /* A deactivated version of an active key: decrypts old data, protects nothing new. */
    CU_ASSERT_EQUAL(hf_key_version_state(&key, &v), HF_STATE_DEACTIVATED);
    CU_ASSERT_FALSE(hf_key_version_is_usable_for(&key, &v, HF_USAGE_ENCRYPT));
    CU_ASSERT(hf_key_version_is_usable_for(&key, &v, HF_USAGE_DECRYPT));
    /* Compromised: the key's own compromised rule, per version (decrypt still allowed). */
    v.state = HF_STATE_COMPROMISED;
    CU_ASSERT_FALSE(hf_key_version_is_usable_for(&key, &v, HF_USAGE_ENCRYPT));
    CU_ASSERT(hf_key_version_is_usable_for(&key, &v, HF_USAGE_DECRYPT));
    CU_ASSERT_EQUAL(hf_key_version_is_usable_for(&key, &v, HF_USAGE_DECRYPT),
                    hf_key_state_allows(HF_STATE_COMPROMISED, HF_USAGE_DECRYPT));
    v.state = HF_STATE_DESTROYED;
    CU_ASSERT_FALSE(hf_key_version_is_usable_for(&key, &v, HF_USAGE_DECRYPT));
    /* An active version follows its key: the key's state when that is further along. */
    v.state = HF_STATE_ACTIVE;
    CU_ASSERT(hf_key_version_is_usable_for(&key, &v, HF_USAGE_ENCRYPT));
    key.state = HF_STATE_COMPROMISED;
    CU_ASSERT_EQUAL(hf_key_version_state(&key, &v), HF_STATE_COMPROMISED);
    CU_ASSERT_FALSE(hf_key_version_is_usable_for(&key, &v, HF_USAGE_ENCRYPT));
    /* A pre-active key does nothing, whatever its versions say. */
    key.state = HF_STATE_PRE_ACTIVE;
    v.state = HF_STATE_DEACTIVATED;
    CU_ASSERT_EQUAL(hf_key_version_state(&key, &v), HF_STATE_PRE_ACTIVE);
    CU_ASSERT_FALSE(hf_key_version_is_usable_for(&key, &v, HF_USAGE_DECRYPT));
    /* No version state (a session object): the key's; the mask still applies. */
    key.state = HF_STATE_ACTIVE;
    v.state = 0;
    CU_ASSERT_EQUAL(hf_key_version_state(&key, &v), HF_STATE_ACTIVE);
    CU_ASSERT_FALSE(hf_key_version_is_usable_for(&key, &v, HF_USAGE_SIGN));
}

static void test_state_names_round_trip(void)
{
    unsigned long st = 0;

    for (size_t i = 0; i < N_STATES; i++) {
        CU_ASSERT_TRUE(hf_state_parse(hf_state_name(all_states[i]), &st));
        CU_ASSERT_EQUAL(st, all_states[i]);
    }
    CU_ASSERT_STRING_EQUAL(hf_state_name(HF_STATE_PRE_ACTIVE), "pre-active");
    CU_ASSERT_STRING_EQUAL(hf_state_name(99), "unknown");
    CU_ASSERT_TRUE(hf_state_parse("Deactivated", &st));
    CU_ASSERT_EQUAL(st, HF_STATE_DEACTIVATED);
    CU_ASSERT_FALSE(hf_state_parse("unknown", &st));
    CU_ASSERT_FALSE(hf_state_parse("", &st));
    CU_ASSERT_FALSE(hf_state_parse(NULL, &st));
}

/* ---- names ---- */

static void test_key_name_validation_edges(void)
{
    char name[HF_NAME_MAX + 2];

    memset(name, 'a', sizeof(name));
    name[HF_NAME_MAX] = '\0';
    CU_ASSERT_TRUE(hf_key_name_is_valid(name)); /* 255 chars */
    name[HF_NAME_MAX] = 'a';
    name[HF_NAME_MAX + 1] = '\0';
    CU_ASSERT_FALSE(hf_key_name_is_valid(name)); /* 256 chars */

    CU_ASSERT_TRUE(hf_key_name_is_valid("a"));
    CU_ASSERT_TRUE(hf_key_name_is_valid("prod/payments:db-key_1.v2+x@eu"));
    CU_ASSERT_FALSE(hf_key_name_is_valid(""));
    CU_ASSERT_FALSE(hf_key_name_is_valid(NULL));
    CU_ASSERT_FALSE(hf_key_name_is_valid("has space"));
    CU_ASSERT_FALSE(hf_key_name_is_valid("new\nline"));
    CU_ASSERT_FALSE(hf_key_name_is_valid("quote\"d"));
    CU_ASSERT_FALSE(hf_key_name_is_valid("semi;colon"));
    CU_ASSERT_FALSE(hf_key_name_is_valid("equals=sign"));
    CU_ASSERT_FALSE(hf_key_name_is_valid("caf\xc3\xa9")); /* non-ASCII */
}

static void test_key_name_may_not_look_like_a_uuid(void)
{
    /* Lookups take "a UUID or a name"; a UUID-shaped name would be ambiguous. */
    CU_ASSERT_FALSE(hf_key_name_is_valid("0f8fad5b-d9cb-469f-a165-70867728950e"));
    CU_ASSERT_FALSE(hf_key_name_is_valid("0F8FAD5B-D9CB-469F-A165-70867728950E"));
    CU_ASSERT_TRUE(hf_key_name_is_valid("0f8fad5b-d9cb-469f-a165-70867728950e-2"));
}

static void test_label_name_validation(void)
{
    CU_ASSERT_TRUE(hf_label_name_is_valid("env"));
    CU_ASSERT_TRUE(hf_label_name_is_valid("team.owner/x"));
    CU_ASSERT_FALSE(hf_label_name_is_valid(""));
    CU_ASSERT_FALSE(hf_label_name_is_valid(NULL));
    CU_ASSERT_FALSE(hf_label_name_is_valid("a=b")); /* would break "k=v" serialisation */
    CU_ASSERT_FALSE(hf_label_name_is_valid("a\nb"));
}

/* ---- UUIDs ---- */

static void test_uuid_generate_is_lowercase_v4_and_unique(void)
{
    char a[HF_UUID_LEN + 1], b[HF_UUID_LEN + 1];

    hf_uuid_generate(a);
    hf_uuid_generate(b);
    CU_ASSERT_EQUAL(strlen(a), HF_UUID_LEN);
    CU_ASSERT_TRUE(hf_uuid_is_valid(a));
    CU_ASSERT_STRING_NOT_EQUAL(a, b);
    CU_ASSERT_EQUAL(a[14], '4');                   /* version 4 */
    CU_ASSERT_PTR_NOT_NULL(strchr("89ab", a[19])); /* RFC 4122 variant */
    for (size_t i = 0; i < HF_UUID_LEN; i++)
        CU_ASSERT_FALSE(a[i] >= 'A' && a[i] <= 'Z');
}

static void test_uuid_validation(void)
{
    CU_ASSERT_TRUE(hf_uuid_is_valid("0f8fad5b-d9cb-469f-a165-70867728950e"));
    CU_ASSERT_TRUE(hf_uuid_is_valid("0F8FAD5B-D9CB-469F-A165-70867728950E"));
    CU_ASSERT_FALSE(hf_uuid_is_valid(NULL));
    CU_ASSERT_FALSE(hf_uuid_is_valid(""));
    CU_ASSERT_FALSE(hf_uuid_is_valid("0f8fad5b-d9cb-469f-a165-70867728950"));   /* short */
    CU_ASSERT_FALSE(hf_uuid_is_valid("0f8fad5b-d9cb-469f-a165-70867728950e0")); /* long */
    CU_ASSERT_FALSE(hf_uuid_is_valid("0f8fad5bd-9cb-469f-a165-70867728950e"));  /* dash moved */
    CU_ASSERT_FALSE(hf_uuid_is_valid("0f8fad5b-d9cb-469f-a165-70867728950g"));  /* not hex */
}

/* ---- algorithms and usage ---- */

static void test_alg_spec_parse_accepts_spellings(void)
{
    static const struct {
        const char *s;
        enum hf_alg alg;
        unsigned bits;
    } ok[] = {
        {"AES-256", HF_ALG_AES, 256},     {"aes128", HF_ALG_AES, 128},
        {"AES_192", HF_ALG_AES, 192},     {"RSA-3072", HF_ALG_RSA, 3072},
        {"rsa2048", HF_ALG_RSA, 2048},    {"RSA-4096", HF_ALG_RSA, 4096},
        {"EC-P256", HF_ALG_EC, 256},      {"ec-p384", HF_ALG_EC, 384},
        {"P-256", HF_ALG_EC, 256},        {"p384", HF_ALG_EC, 384},
        {"EC-256", HF_ALG_EC, 256},       {"HMAC-256", HF_ALG_GENERIC, 256},
        {"hmac512", HF_ALG_GENERIC, 512}, {"HMAC-112", HF_ALG_GENERIC, 112},
        {"EC-P521", HF_ALG_EC, 521},      {"p-521", HF_ALG_EC, 521},
        {"Ed25519", HF_ALG_ED25519, 256}, {"ed25519", HF_ALG_ED25519, 256},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        enum hf_alg alg = 0;
        unsigned bits = 0;
        CU_ASSERT_TRUE(hf_alg_spec_parse(ok[i].s, &alg, &bits));
        CU_ASSERT_EQUAL(alg, ok[i].alg);
        CU_ASSERT_EQUAL(bits, ok[i].bits);
    }
}

static void test_alg_spec_parse_rejects_bad_specs(void)
{
    static const char *const bad[] = {
        "",         "AES",       "AES-",      "AES-512",  "AES-256x",
        "RSA-1024", "RSA-P2048", "EC-P512",   "DES-56",   "256",
        "AES--256", "-256",      "AES-+256",  "P-",       "RSA-99999999999",
        "HMAC-104", "HMAC-257",  "HMAC-4104", "HMAC-P256"};
    enum hf_alg alg = HF_ALG_AES;
    unsigned bits = 7;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CU_ASSERT_FALSE(hf_alg_spec_parse(bad[i], &alg, &bits));
    CU_ASSERT_EQUAL(bits, 7); /* untouched on failure */
    CU_ASSERT_FALSE(hf_alg_spec_parse(NULL, &alg, &bits));
    CU_ASSERT_FALSE(hf_alg_spec_parse("AES-256", NULL, &bits));
}

static void test_alg_bits_and_names(void)
{
    CU_ASSERT_TRUE(hf_alg_bits_is_valid(HF_ALG_AES, 256));
    CU_ASSERT_FALSE(hf_alg_bits_is_valid(HF_ALG_AES, 512));
    CU_ASSERT_TRUE(hf_alg_bits_is_valid(HF_ALG_RSA, 3072));
    CU_ASSERT_FALSE(hf_alg_bits_is_valid(HF_ALG_RSA, 1024));
    CU_ASSERT_TRUE(hf_alg_bits_is_valid(HF_ALG_EC, 384));
    CU_ASSERT_TRUE(hf_alg_bits_is_valid(HF_ALG_EC, 521));
    CU_ASSERT_FALSE(hf_alg_bits_is_valid(HF_ALG_EC, 512));
    CU_ASSERT_FALSE(hf_alg_bits_is_valid(0, 256));
    CU_ASSERT_STRING_EQUAL(hf_alg_name(HF_ALG_AES), "AES");
    CU_ASSERT_STRING_EQUAL(hf_alg_name(HF_ALG_RSA), "RSA");
    CU_ASSERT_STRING_EQUAL(hf_alg_name(HF_ALG_EC), "EC");
    CU_ASSERT_STRING_EQUAL(hf_alg_name(HF_ALG_ED25519), "Ed25519");
    CU_ASSERT_TRUE(hf_alg_bits_is_valid(HF_ALG_ED25519, 256));
    CU_ASSERT_FALSE(hf_alg_bits_is_valid(HF_ALG_ED25519, 255));
}

static void test_usage_round_trips_every_mask(void)
{
    char buf[128];
    unsigned long back;

    for (unsigned long mask = 1; mask < 0x40; mask++) {
        size_t n = hf_usage_format(mask, buf, sizeof(buf));
        CU_ASSERT_EQUAL(n, strlen(buf));
        CU_ASSERT_TRUE(hf_usage_parse(buf, &back));
        CU_ASSERT_EQUAL(back, mask);
    }
}

static void test_usage_format_uses_snprintf_convention(void)
{
    char buf[8];
    unsigned long all = 0x3f;
    size_t need = hf_usage_format(all, NULL, 0);

    CU_ASSERT_EQUAL(need, strlen("sign,verify,encrypt,decrypt,wrap,unwrap"));
    memset(buf, 'x', sizeof(buf));
    CU_ASSERT_EQUAL(hf_usage_format(all, buf, sizeof(buf)), need);
    CU_ASSERT_PTR_NOT_NULL(memchr(buf, '\0', sizeof(buf))); /* terminated even when short */
    CU_ASSERT_EQUAL(hf_usage_format(0, buf, sizeof(buf)), 0);
    CU_ASSERT_STRING_EQUAL(buf, "");
}

/* Derivation makes a new key: like encrypt, only an active key may. */
static void test_derive_usage_active_only_and_named(void)
{
    char buf[64];
    unsigned long mask = 0;

    CU_ASSERT_TRUE(hf_key_state_allows(HF_STATE_ACTIVE, HF_USAGE_DERIVE));
    for (size_t s = 0; s < N_STATES; s++)
        if (all_states[s] != HF_STATE_ACTIVE)
            CU_ASSERT_FALSE(hf_key_state_allows(all_states[s], HF_USAGE_DERIVE));
    CU_ASSERT_TRUE(hf_usage_parse("sign,derive", &mask));
    CU_ASSERT_EQUAL(mask, HF_USAGE_SIGN | HF_USAGE_DERIVE);
    hf_usage_format(mask, buf, sizeof(buf));
    CU_ASSERT_STRING_EQUAL(buf, "sign,derive");
}

static void test_usage_parse_accepts_spaces_and_rejects_unknown(void)
{
    unsigned long m = 0;

    CU_ASSERT_TRUE(hf_usage_parse(" Encrypt , decrypt", &m));
    CU_ASSERT_EQUAL(m, HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT);
    m = 0x99;
    CU_ASSERT_FALSE(hf_usage_parse("encrypt,frobnicate", &m));
    CU_ASSERT_FALSE(hf_usage_parse("encrypt,,decrypt", &m));
    CU_ASSERT_FALSE(hf_usage_parse("encrypt,", &m));
    CU_ASSERT_FALSE(hf_usage_parse(",encrypt", &m));
    CU_ASSERT_FALSE(hf_usage_parse("", &m));
    CU_ASSERT_FALSE(hf_usage_parse("encryptdecrypt", &m));
    CU_ASSERT_FALSE(hf_usage_parse(NULL, &m));
    CU_ASSERT_EQUAL(m, 0x99); /* untouched on failure */
}

static void test_usage_defaults_per_algorithm(void)
{
    CU_ASSERT_EQUAL(hf_usage_default(HF_ALG_AES),
                    HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT | HF_USAGE_WRAP | HF_USAGE_UNWRAP);
    CU_ASSERT_EQUAL(hf_usage_default(HF_ALG_RSA), HF_USAGE_ENCRYPT | HF_USAGE_DECRYPT |
                                                      HF_USAGE_UNWRAP | HF_USAGE_SIGN |
                                                      HF_USAGE_VERIFY);
    CU_ASSERT_EQUAL(hf_usage_default(HF_ALG_EC), HF_USAGE_SIGN | HF_USAGE_VERIFY);
}

/* ---- labels ---- */

static void test_labels_stay_sorted_on_set_and_remove(void)
{
    struct hf_key key = {0};

    CU_ASSERT_EQUAL(hf_key_label_set(&key, "m", "2"), CKR_OK);
    CU_ASSERT_EQUAL(hf_key_label_set(&key, "z", "3"), CKR_OK);
    CU_ASSERT_EQUAL(hf_key_label_set(&key, "a", "1"), CKR_OK);
    CU_ASSERT_EQUAL(hf_key_label_set(&key, "b", ""), CKR_OK); /* empty value is a value */
    CU_ASSERT_EQUAL_FATAL(key.n_labels, 4);
    CU_ASSERT_STRING_EQUAL(key.labels[0].name, "a");
    CU_ASSERT_STRING_EQUAL(key.labels[1].name, "b");
    CU_ASSERT_STRING_EQUAL(key.labels[2].name, "m");
    CU_ASSERT_STRING_EQUAL(key.labels[3].name, "z");

    CU_ASSERT_EQUAL(hf_key_label_set(&key, "m", "replaced"), CKR_OK);
    CU_ASSERT_EQUAL(key.n_labels, 4);
    CU_ASSERT_STRING_EQUAL(hf_key_label_get(&key, "m"), "replaced");

    CU_ASSERT_EQUAL(hf_key_label_set(&key, "b", NULL), CKR_OK);
    CU_ASSERT_EQUAL(hf_key_label_set(&key, "absent", NULL), CKR_OK); /* removing nothing is fine */
    CU_ASSERT_EQUAL_FATAL(key.n_labels, 3);
    CU_ASSERT_STRING_EQUAL(key.labels[0].name, "a");
    CU_ASSERT_STRING_EQUAL(key.labels[1].name, "m");
    CU_ASSERT_STRING_EQUAL(key.labels[2].name, "z");
    CU_ASSERT_PTR_NULL(hf_key_label_get(&key, "b"));
    CU_ASSERT_STRING_EQUAL(hf_key_label_get(&key, "z"), "3");
    hf_key_clear(&key);
    CU_ASSERT_EQUAL(key.n_labels, 0);
    CU_ASSERT_PTR_NULL(key.labels);
}

static void test_label_set_rejects_bad_input(void)
{
    struct hf_key key = {0};

    CU_ASSERT_EQUAL(hf_key_label_set(NULL, "a", "b"), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_key_label_set(&key, NULL, "b"), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_key_label_set(&key, "a=b", "c"), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(hf_key_label_set(&key, "", "c"), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(hf_key_label_set(&key, "a", "line\nforged=1"), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(key.n_labels, 0);
    CU_ASSERT_PTR_NULL(hf_key_label_get(NULL, "a"));
    CU_ASSERT_PTR_NULL(hf_key_label_get(&key, NULL));
}

/* ---- copy and clear ---- */

static void test_key_copy_is_deep(void)
{
    struct hf_key src = {.alg = HF_ALG_AES, .bits = 256, .state = HF_STATE_ACTIVE};
    struct hf_key dst;

    strcpy(src.uuid, "0f8fad5b-d9cb-469f-a165-70867728950e");
    src.name = strdup("k1");
    src.owner = strdup("alice");
    src.source = NULL;
    hf_key_label_set(&src, "env", "prod");
    CU_ASSERT_EQUAL_FATAL(hf_key_copy(&dst, &src), CKR_OK);
    CU_ASSERT_STRING_EQUAL(dst.uuid, src.uuid);
    CU_ASSERT_STRING_EQUAL(dst.name, "k1");
    CU_ASSERT_PTR_NOT_EQUAL(dst.name, src.name);
    CU_ASSERT_PTR_NULL(dst.source);
    CU_ASSERT_EQUAL(dst.bits, 256);
    CU_ASSERT_EQUAL_FATAL(dst.n_labels, 1);
    CU_ASSERT_PTR_NOT_EQUAL(dst.labels, src.labels);
    hf_key_clear(&src); /* dst must not depend on src */
    CU_ASSERT_STRING_EQUAL(hf_key_label_get(&dst, "env"), "prod");
    CU_ASSERT_STRING_EQUAL(dst.owner, "alice");
    hf_key_clear(&dst);
    CU_ASSERT_PTR_NULL(dst.name);
    hf_key_clear(NULL);
    CU_ASSERT_EQUAL(hf_key_copy(NULL, &dst), CKR_ARGUMENTS_BAD);
}

static void test_version_copy_is_deep(void)
{
    static const unsigned char wrapped[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    struct hf_key_version src = {.id = 42, .version = 3, .state = HF_STATE_ACTIVE};
    struct hf_key_version dst;

    src.kek_label = strdup("root-kek");
    src.wrapped = malloc(sizeof(wrapped));
    memcpy(src.wrapped, wrapped, sizeof(wrapped));
    src.wrapped_len = sizeof(wrapped);
    CU_ASSERT_EQUAL_FATAL(hf_key_version_copy(&dst, &src), CKR_OK);
    hf_key_version_clear(&src);
    CU_ASSERT_EQUAL(src.wrapped_len, 0);
    CU_ASSERT_EQUAL(dst.id, 42);
    CU_ASSERT_EQUAL(dst.version, 3);
    CU_ASSERT_STRING_EQUAL(dst.kek_label, "root-kek");
    CU_ASSERT_EQUAL_FATAL(dst.wrapped_len, sizeof(wrapped));
    CU_ASSERT_EQUAL(memcmp(dst.wrapped, wrapped, sizeof(wrapped)), 0);
    CU_ASSERT_PTR_NULL(dst.public_der);
    hf_key_version_clear(&dst);
    hf_key_version_clear(NULL);
}

static void test_link_clear_frees_and_zeroes(void)
{
    struct hf_link link = {.id = 7, .blocked = true};

    link.type = strdup("aws-xks");
    link.ext_id = strdup("key-1");
    hf_link_clear(&link);
    CU_ASSERT_PTR_NULL(link.type);
    CU_ASSERT_PTR_NULL(link.ext_id);
    CU_ASSERT_EQUAL(link.id, 0);
    CU_ASSERT_FALSE(link.blocked);
    hf_link_clear(NULL);
}

static CU_TestInfo state_tests[] = {
    {"state rules table matches KMIP", test_state_rules_table_matches_kmip},
    {"state rules reject unknown state and empty usage",
     test_state_rules_reject_unknown_state_and_empty_usage},
    {"key usable needs both mask and state", test_key_usable_needs_both_mask_and_state},
    {"state transitions only move forward", test_state_transitions_only_move_forward},
    {"state names round trip", test_state_names_round_trip},
    {"version state moves are KMIP's, without destroying an active one",
     test_version_state_moves_are_kmips_without_destroying_an_active_one},
    {"a version state narrows its key's, never widens it",
     test_a_version_state_narrows_its_keys_never_widens},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo name_tests[] = {
    {"key name validation edges", test_key_name_validation_edges},
    {"key name may not look like a UUID", test_key_name_may_not_look_like_a_uuid},
    {"label name validation", test_label_name_validation},
    {"uuid generate is lower-case v4 and unique", test_uuid_generate_is_lowercase_v4_and_unique},
    {"uuid validation", test_uuid_validation},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo spec_tests[] = {
    {"alg spec parse accepts spellings", test_alg_spec_parse_accepts_spellings},
    {"alg spec parse rejects bad specs", test_alg_spec_parse_rejects_bad_specs},
    {"alg bits and names", test_alg_bits_and_names},
    {"usage round trips every mask", test_usage_round_trips_every_mask},
    {"usage format uses snprintf convention", test_usage_format_uses_snprintf_convention},
    {"usage parse accepts spaces, rejects unknown",
     test_usage_parse_accepts_spaces_and_rejects_unknown},
    {"derive usage: active only, named derive", test_derive_usage_active_only_and_named},
    {"usage defaults per algorithm", test_usage_defaults_per_algorithm},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo data_tests[] = {
    {"labels stay sorted on set and remove", test_labels_stay_sorted_on_set_and_remove},
    {"label set rejects bad input", test_label_set_rejects_bad_input},
    {"key copy is deep", test_key_copy_is_deep},
    {"version copy is deep", test_version_copy_is_deep},
    {"link clear frees and zeroes", test_link_clear_frees_and_zeroes},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"key state", NULL, NULL, NULL, NULL, state_tests},
        {"key names and uuids", NULL, NULL, NULL, NULL, name_tests},
        {"key specs and usage", NULL, NULL, NULL, NULL, spec_tests},
        {"key labels, copy, clear", NULL, NULL, NULL, NULL, data_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
