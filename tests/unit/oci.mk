# The oci-ekms plugin's pure parts: configuration, paths, bodies and scopes; and the spec's
# known-answer ciphertext over the gateway's blob with api "oci-ekms". plugin.h's hf_* (JSON
# reader, base64, config values, the blob's AAD) come from libhfgateway.la, as holdfastd
# provides them.
if HAVE_CUNIT
OCI_UNIT_TESTS = tests/unit/test-oci-config tests/unit/test-oci-request tests/unit/test-oci-blob
UNIT_TESTS += $(OCI_UNIT_TESTS)
OCI_UNIT_CPPFLAGS = $(AM_CPPFLAGS) $(CUNIT_CFLAGS) $(JSONC_CFLAGS)
OCI_UNIT_LDADD = libhftest.la gateway/plugins/oci-ekms/libhf-oci.la gateway/libhfgateway.la \
	$(CUNIT_LIBS) $(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
tests_unit_test_oci_config_SOURCES = tests/unit/test-oci-config.c
tests_unit_test_oci_config_CPPFLAGS = $(OCI_UNIT_CPPFLAGS)
tests_unit_test_oci_config_LDADD = $(OCI_UNIT_LDADD)
tests_unit_test_oci_request_SOURCES = tests/unit/test-oci-request.c
tests_unit_test_oci_request_CPPFLAGS = $(OCI_UNIT_CPPFLAGS)
tests_unit_test_oci_request_LDADD = $(OCI_UNIT_LDADD)
tests_unit_test_oci_blob_SOURCES = tests/unit/test-oci-blob.c
tests_unit_test_oci_blob_CPPFLAGS = $(OCI_UNIT_CPPFLAGS)
tests_unit_test_oci_blob_LDADD = $(OCI_UNIT_LDADD)
endif
