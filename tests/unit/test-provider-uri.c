/* The holdfast provider before any token: which pkcs11: and holdfast: URIs OSSL_STORE_open takes
 * and which it refuses (and that a refusal never echoes a PIN), and that the PKCS#11 module is
 * loaded on first use only: the provider loads, and URIs open, with a module path that does not
 * exist; the first load reports the module, once, and ends the listing.
 *
 * The provider is found in $top_builddir/provider/.libs (set by `make check`), else next to this
 * program in the build tree. */
#include "hf-build.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/provider.h>
#include <openssl/store.h>

#include "harness.h"

#define MISSING_MODULE "/nonexistent/holdfast-test/no-such-module.so"

static OSSL_LIB_CTX *libctx;
static OSSL_PROVIDER *prov_default, *prov_holdfast;
static char pin_file[PATH_MAX];

static int provider_dir(char *out, size_t cap)
{
    const char *top = getenv("top_builddir");
    char exe[PATH_MAX];
    ssize_t n;
    char *slash;

    if (top != NULL && top[0] != '\0') return snprintf(out, cap, "%s/provider/.libs", top) > 0;
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) return 0;
    exe[n] = '\0';
    if ((slash = strrchr(exe, '/')) == NULL) return 0;
    *slash = '\0';
    return snprintf(out, cap, "%s/../../provider/.libs", exe) > 0;
}

static int suite_init(void)
{
    char dir[PATH_MAX];
    FILE *f;

    /* The provider reads this when (and only when) it first needs the module. */
    setenv("HOLDFAST_PKCS11_MODULE", MISSING_MODULE, 1);
    snprintf(pin_file, sizeof(pin_file), "/tmp/hf-test-provider-pin.%ld", (long)getpid());
    if ((f = fopen(pin_file, "w")) == NULL) return -1;
    fputs("1234\n", f);
    fclose(f);
    if (!provider_dir(dir, sizeof(dir)) || (libctx = OSSL_LIB_CTX_new()) == NULL ||
        !OSSL_PROVIDER_set_default_search_path(libctx, dir) ||
        (prov_default = OSSL_PROVIDER_load(libctx, "default")) == NULL ||
        (prov_holdfast = OSSL_PROVIDER_load(libctx, "holdfast")) == NULL) {
        ERR_print_errors_fp(stderr);
        fprintf(stderr, "cannot load the holdfast provider from %s\n", dir);
        return -1;
    }
    return 0;
}

static int suite_clean(void)
{
    OSSL_PROVIDER_unload(prov_holdfast);
    OSSL_PROVIDER_unload(prov_default);
    OSSL_LIB_CTX_free(libctx);
    unlink(pin_file);
    return 0;
}

/* Whether the queued errors mention text (in a reason or its data); empties the queue. */
static bool errors_say(const char *text)
{
    const char *data;
    unsigned long e;
    bool found = false;
    int flags;

    while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
        const char *reason = ERR_reason_error_string(e);
        if ((reason != NULL && strstr(reason, text) != NULL) ||
            ((flags & ERR_TXT_STRING) && data != NULL && strstr(data, text) != NULL))
            found = true;
    }
    return found;
}

static bool opens(const char *uri)
{
    OSSL_STORE_CTX *st = OSSL_STORE_open_ex(uri, libctx, NULL, NULL, NULL, NULL, NULL, NULL);

    if (st == NULL) return false;
    OSSL_STORE_close(st);
    return true;
}

static void test_the_provider_loads_without_its_module(void)
{
    const char *name = NULL, *version = NULL;
    int status = 0;
    OSSL_PARAM params[] = {
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_NAME, &name, 0),
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_VERSION, &version, 0),
        OSSL_PARAM_int(OSSL_PROV_PARAM_STATUS, &status),
        OSSL_PARAM_END,
    };

    CU_ASSERT_FATAL(OSSL_PROVIDER_get_params(prov_holdfast, params) == 1);
    CU_ASSERT_STRING_EQUAL(name, "Holdfast PKCS#11 provider");
    CU_ASSERT_STRING_EQUAL(version, PACKAGE_VERSION);
    CU_ASSERT_EQUAL(status, 1);
    CU_ASSERT(OSSL_PROVIDER_available(libctx, "holdfast"));
}

static void test_good_uris_open_without_the_module(void)
{
    static const char *const good[] = {
        "pkcs11:",
        "pkcs11:token=prod%20keys;object=web-tls;type=private",
        "pkcs11:manufacturer=Holdfast;model=x;serial=0001;token=t",
        "pkcs11:id=%01%02%ff;type=public",
        "pkcs11:slot-id=3;slot-description=s;slot-manufacturer=m",
        "pkcs11:library-manufacturer=Holdfast;library-description=d;library-version=1.0",
        "pkcs11:object=a;type=cert",
        "pkcs11:object=a?pin-value=1234",
        "pkcs11:object=a?module-name=holdfast&x-vendor-thing=1",
        "pkcs11:object=a?module-path=" MISSING_MODULE,
        "pkcs11:object=a;;",
        "PKCS11:object=upper-case-scheme",
        "holdfast:payroll",
        "holdfast:pay%20roll;version=12",
        "holdfast:payroll;type=public;version=1",
    };

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        if (!opens(good[i])) {
            fprintf(stderr, "refused: %s\n", good[i]);
            ERR_print_errors_fp(stderr);
            CU_FAIL("a good URI was refused");
        }
    }
}

static void test_pin_source_reads_a_file(void)
{
    char uri[PATH_MAX + 64];

    snprintf(uri, sizeof(uri), "pkcs11:object=a?pin-source=%s", pin_file);
    CU_ASSERT(opens(uri));
    snprintf(uri, sizeof(uri), "pkcs11:object=a?pin-source=file:%s", pin_file);
    CU_ASSERT(opens(uri));
    CU_ASSERT_FALSE(opens("pkcs11:object=a?pin-source=/nonexistent/pin"));
    CU_ASSERT(errors_say("pin-source"));
}

static void test_bad_uris_are_refused_with_a_reason(void)
{
    static const struct {
        const char *uri, *why;
    } bad[] = {
        {"pkcs11:colour=blue", "unknown path attribute"},
        {"pkcs11:object=a;object=b", "twice"},
        {"pkcs11:type=private;type=public", "twice"},
        {"pkcs11:id=%zz", "percent"},
        {"pkcs11:id=%0", "percent"},
        {"pkcs11:object=a%00b", "percent"},
        {"pkcs11:type=banana", "unknown type"},
        {"pkcs11:slot-id=three", "slot-id"},
        {"pkcs11:object", "without '='"},
        {"pkcs11:object=a?module-path=/usr/lib/other.so", "module-path"},
        {"holdfast:", "no key name"},
        {"holdfast:payroll;version=0", "bad version"},
        {"holdfast:payroll;version=1x", "bad version"},
        {"holdfast:payroll;type=cert", "bad version or type"},
        {"holdfast:payroll;colour=blue", "unknown"},
        {"holdfast:payroll;version=1;version=2", "repeated"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ERR_clear_error();
        if (opens(bad[i].uri)) {
            fprintf(stderr, "accepted: %s\n", bad[i].uri);
            CU_FAIL("a bad URI was accepted");
            continue;
        }
        if (!errors_say(bad[i].why)) {
            fprintf(stderr, "%s: no error saying '%s'\n", bad[i].uri, bad[i].why);
            CU_FAIL("a refusal without its reason");
        }
    }
}

/* Only our own errors are ours to keep clean: OpenSSL tries the URI as a file name first, and its
 * file loader quotes what it could not stat. */
static void test_a_refused_uri_never_echoes_its_pin(void)
{
    const char *data, *lib;
    unsigned long e;
    int flags, ours = 0;

    ERR_clear_error();
    CU_ASSERT_FALSE(opens("pkcs11:colour=blue?pin-value=secret-pin-9876"));
    while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
        lib = ERR_lib_error_string(e);
        if (lib == NULL || strcmp(lib, "holdfast") != 0) continue;
        ours++;
        CU_ASSERT(!(flags & ERR_TXT_STRING) || data == NULL || !strstr(data, "secret-pin-9876"));
    }
    CU_ASSERT(ours > 0);
}

static void test_the_first_load_reports_the_missing_module_and_ends(void)
{
    OSSL_STORE_CTX *st = OSSL_STORE_open_ex("pkcs11:", libctx, NULL, NULL, NULL, NULL, NULL, NULL);
    int loads = 0;

    CU_ASSERT_FATAL(st != NULL);
    ERR_clear_error();
    /* An application loops until eof: a failed load must end the listing. */
    while (!OSSL_STORE_eof(st) && loads < 5) {
        CU_ASSERT(OSSL_STORE_load(st) == NULL);
        loads++;
    }
    CU_ASSERT_EQUAL(loads, 1);
    CU_ASSERT(errors_say(MISSING_MODULE));
    OSSL_STORE_close(st);
}

static CU_TestInfo tests[] = {
    {"the provider loads without its module", test_the_provider_loads_without_its_module},
    {"good URIs open without the module", test_good_uris_open_without_the_module},
    {"pin-source reads a file", test_pin_source_reads_a_file},
    {"bad URIs are refused with a reason", test_bad_uris_are_refused_with_a_reason},
    {"a refused URI never echoes its PIN", test_a_refused_uri_never_echoes_its_pin},
    {"the first load reports the missing module and ends",
     test_the_first_load_reports_the_missing_module_and_ends},
    CU_TEST_INFO_NULL,
};

int main(void)
{
    static CU_SuiteInfo suites[] = {
        {"provider URIs and lazy loading", suite_init, suite_clean, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
