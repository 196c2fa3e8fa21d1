# The holdfast OpenSSL provider's own behaviour before any token is involved: URI parsing (through
# OSSL_STORE_open, as applications reach it) and lazy loading of the PKCS#11 module.
if HAVE_CUNIT
check_PROGRAMS += tests/unit/test-provider-uri
UNIT_TESTS += tests/unit/test-provider-uri
tests_unit_test_provider_uri_SOURCES = tests/unit/test-provider-uri.c
tests_unit_test_provider_uri_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_provider_uri_LDADD = $(UNIT_LDADD) $(CRYPTO_LIBS)
endif
