# The aws-xks plugin's pure parts: request parsing (JSON, base64, sizes), configuration and
# authorization rules, and the AES-GCM construction (its known answers, and through the built
# module with a known key). What holdfastd provides them through plugin.h (base64, the JSON
# reader, config value parsers, secret files, public randomness) comes from libhfgateway.la.
if HAVE_CUNIT
UNIT_TESTS += tests/unit/test-xks-request tests/unit/test-xks-config tests/unit/test-xks-crypto
XKS_UNIT_CPPFLAGS = $(AM_CPPFLAGS) $(CUNIT_CFLAGS) $(JSONC_CFLAGS)
XKS_UNIT_LDADD = libhftest.la gateway/plugins/aws-xks/libhf-xks.la \
	gateway/plugins/aws-xks/libhf-sigv4.la gateway/libhfgateway.la $(CUNIT_LIBS) \
	$(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
tests_unit_test_xks_request_SOURCES = tests/unit/test-xks-request.c
tests_unit_test_xks_request_CPPFLAGS = $(XKS_UNIT_CPPFLAGS)
tests_unit_test_xks_request_LDADD = $(XKS_UNIT_LDADD)
tests_unit_test_xks_config_SOURCES = tests/unit/test-xks-config.c
tests_unit_test_xks_config_CPPFLAGS = $(XKS_UNIT_CPPFLAGS)
tests_unit_test_xks_config_LDADD = $(XKS_UNIT_LDADD)
tests_unit_test_xks_crypto_SOURCES = tests/unit/test-xks-crypto.c tests/unit/module-loader.h
tests_unit_test_xks_crypto_CPPFLAGS = $(XKS_UNIT_CPPFLAGS)
tests_unit_test_xks_crypto_LDADD = $(XKS_UNIT_LDADD)
endif
