# The ms-dke plugin's pure parts: path and decrypt-body parsing, cache.exp, the caller's identity
# and the key's allowlist, configuration. plugin.h's hf_* (JSON reader, base64, config values)
# come from libhfgateway.la, as holdfastd provides them.
if HAVE_CUNIT
DKE_UNIT_TESTS = tests/unit/test-dke-request tests/unit/test-dke-authz tests/unit/test-dke-config
UNIT_TESTS += $(DKE_UNIT_TESTS)
DKE_UNIT_CPPFLAGS = $(AM_CPPFLAGS) $(CUNIT_CFLAGS) $(JSONC_CFLAGS)
DKE_UNIT_LDADD = libhftest.la gateway/plugins/ms-dke/libhf-dke.la gateway/libhfgateway.la \
	$(CUNIT_LIBS) $(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
tests_unit_test_dke_request_SOURCES = tests/unit/test-dke-request.c
tests_unit_test_dke_request_CPPFLAGS = $(DKE_UNIT_CPPFLAGS)
tests_unit_test_dke_request_LDADD = $(DKE_UNIT_LDADD)
tests_unit_test_dke_authz_SOURCES = tests/unit/test-dke-authz.c
tests_unit_test_dke_authz_CPPFLAGS = $(DKE_UNIT_CPPFLAGS)
tests_unit_test_dke_authz_LDADD = $(DKE_UNIT_LDADD)
tests_unit_test_dke_config_SOURCES = tests/unit/test-dke-config.c
tests_unit_test_dke_config_CPPFLAGS = $(DKE_UNIT_CPPFLAGS)
tests_unit_test_dke_config_LDADD = $(DKE_UNIT_LDADD)
endif
