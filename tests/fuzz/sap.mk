# SAP HYOK: the request body parser (request_metadata, paging, integers) and the enums, on
# arbitrary bytes.
FUZZ_TARGETS += tests/fuzz/fuzz-sap-request
if FUZZING
tests_fuzz_fuzz_sap_request_SOURCES = tests/fuzz/fuzz-sap-request.c
tests_fuzz_fuzz_sap_request_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
tests_fuzz_fuzz_sap_request_LDADD = gateway/plugins/sap-hyok/libhf-sap.la gateway/libhfgateway.la \
	$(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
tests_fuzz_fuzz_sap_request_LDFLAGS = $(FUZZ_LDFLAGS)
endif
EXTRA_DIST += tests/fuzz/corpus/sap-request
