# The gcp-ekm plugin's pure parts: request and path parsing, the Key Access Justification
# policy, configuration (its blob's known answers are the gateway's: test-gateway-blob.c). plugin.h's hf_* (JSON reader, base64,
# config values) come from libhfgateway.la, as holdfastd provides them.
if HAVE_CUNIT
EKM_UNIT_TESTS = tests/unit/test-ekm-request tests/unit/test-ekm-kaj tests/unit/test-ekm-config
UNIT_TESTS += $(EKM_UNIT_TESTS)
EKM_UNIT_CPPFLAGS = $(AM_CPPFLAGS) $(CUNIT_CFLAGS) $(JSONC_CFLAGS)
EKM_UNIT_LDADD = libhftest.la gateway/plugins/gcp-ekm/libhf-ekm.la gateway/libhfgateway.la \
	$(CUNIT_LIBS) $(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
tests_unit_test_ekm_request_SOURCES = tests/unit/test-ekm-request.c
tests_unit_test_ekm_request_CPPFLAGS = $(EKM_UNIT_CPPFLAGS)
tests_unit_test_ekm_request_LDADD = $(EKM_UNIT_LDADD)
tests_unit_test_ekm_kaj_SOURCES = tests/unit/test-ekm-kaj.c
tests_unit_test_ekm_kaj_CPPFLAGS = $(EKM_UNIT_CPPFLAGS)
tests_unit_test_ekm_kaj_LDADD = $(EKM_UNIT_LDADD)
tests_unit_test_ekm_config_SOURCES = tests/unit/test-ekm-config.c
tests_unit_test_ekm_config_CPPFLAGS = $(EKM_UNIT_CPPFLAGS)
tests_unit_test_ekm_config_LDADD = $(EKM_UNIT_LDADD)
endif
