# holdfastd end to end: a test-only plugin (never installed) and the script that drives the
# daemon with curl and openssl.
check_LTLIBRARIES += tests/integration/plugin-test.la
tests_integration_plugin_test_la_SOURCES = tests/integration/plugin-test.c
tests_integration_plugin_test_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
# -rpath: libtool builds a shared module only for an installable path; this one never is.
tests_integration_plugin_test_la_LDFLAGS = -module -rpath /nowhere -avoid-version -shared
tests_integration_plugin_test_la_LIBADD = $(JSONC_LIBS) $(CRYPTO_LIBS)

TESTS += tests/integration/gateway.sh
EXTRA_DIST += tests/integration/gateway.sh
# Listeners with their own TLS policy and plugins (aws-xks with client certificates required,
# the test plugin without, one optional) and the within-limit latency metrics per API.
TESTS += tests/integration/listeners.sh
EXTRA_DIST += tests/integration/listeners.sh
# Issue 11's must-show 2: aws-xks with client certificates required on one TLS port, gcp-ekm
# and gws-cse (two catch-all plugins) without them on another, in one holdfastd.
TESTS += tests/integration/listeners-mixed.sh
EXTRA_DIST += tests/integration/listeners-mixed.sh
