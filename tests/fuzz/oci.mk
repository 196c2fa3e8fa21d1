# OCI EKMS: the path rules, the request body parser (every operation) and the scope rule, on
# arbitrary bytes.
FUZZ_TARGETS += tests/fuzz/fuzz-oci-request
if FUZZING
tests_fuzz_fuzz_oci_request_SOURCES = tests/fuzz/fuzz-oci-request.c
tests_fuzz_fuzz_oci_request_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
tests_fuzz_fuzz_oci_request_LDADD = gateway/plugins/oci-ekms/libhf-oci.la gateway/libhfgateway.la \
	$(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
tests_fuzz_fuzz_oci_request_LDFLAGS = $(FUZZ_LDFLAGS)
endif
EXTRA_DIST += tests/fuzz/corpus/oci-request
