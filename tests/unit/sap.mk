# The sap-hyok plugin's pure parts: configuration (keystores, pins, prefix) and request parsing
# (request_metadata, integers, paging, RFC 3339, the enums); its AES-GCM against the spec's known
# answer, on the built module opened as holdfastd opens it. plugin.h's hf_* (JSON reader, base64,
# config values, hf_gcm_*) come from libhfgateway.la, as holdfastd provides them.
if HAVE_CUNIT
SAP_UNIT_TESTS = tests/unit/test-sap-config tests/unit/test-sap-request tests/unit/test-sap-gcm
UNIT_TESTS += $(SAP_UNIT_TESTS)
SAP_UNIT_CPPFLAGS = $(AM_CPPFLAGS) $(CUNIT_CFLAGS) $(JSONC_CFLAGS)
SAP_UNIT_LDADD = libhftest.la gateway/plugins/sap-hyok/libhf-sap.la gateway/libhfgateway.la \
	$(CUNIT_LIBS) $(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
tests_unit_test_sap_config_SOURCES = tests/unit/test-sap-config.c
tests_unit_test_sap_config_CPPFLAGS = $(SAP_UNIT_CPPFLAGS)
tests_unit_test_sap_config_LDADD = $(SAP_UNIT_LDADD)
tests_unit_test_sap_request_SOURCES = tests/unit/test-sap-request.c
tests_unit_test_sap_request_CPPFLAGS = $(SAP_UNIT_CPPFLAGS)
tests_unit_test_sap_request_LDADD = $(SAP_UNIT_LDADD)
tests_unit_test_sap_gcm_SOURCES = tests/unit/test-sap-gcm.c tests/unit/gw-module.h
tests_unit_test_sap_gcm_CPPFLAGS = $(GATEWAY_CPPFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_sap_gcm_LDADD = $(SAP_UNIT_LDADD)
endif
