# Cloud EKM: the request body parser (wrap, unwrap) and the path rules, on arbitrary bytes.
FUZZ_TARGETS += tests/fuzz/fuzz-ekm-request
if FUZZING
tests_fuzz_fuzz_ekm_request_SOURCES = tests/fuzz/fuzz-ekm-request.c
tests_fuzz_fuzz_ekm_request_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
tests_fuzz_fuzz_ekm_request_LDADD = gateway/plugins/gcp-ekm/libhf-ekm.la gateway/libhfgateway.la \
	$(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
tests_fuzz_fuzz_ekm_request_LDFLAGS = $(FUZZ_LDFLAGS)
endif
EXTRA_DIST += tests/fuzz/corpus/ekm-request
