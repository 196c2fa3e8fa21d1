# sap-hyok's asymmetric enums and size rules (gateway/plugins/sap-hyok/asym.h over request.h's
# enums). Included from gateway/plugins/sap-hyok/asym.mk.
if HAVE_CUNIT
UNIT_TESTS += tests/unit/test-sap-asym
tests_unit_test_sap_asym_SOURCES = tests/unit/test-sap-asym.c
tests_unit_test_sap_asym_CPPFLAGS = $(AM_CPPFLAGS) $(CUNIT_CFLAGS) $(JSONC_CFLAGS)
tests_unit_test_sap_asym_LDADD = libhftest.la gateway/plugins/sap-hyok/libhf-sap.la \
	gateway/libhfgateway.la $(CUNIT_LIBS) $(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
endif
