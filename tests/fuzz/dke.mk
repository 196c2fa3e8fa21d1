# Microsoft DKE: the path's target and the decrypt body parser, on arbitrary bytes.
FUZZ_TARGETS += tests/fuzz/fuzz-dke-request
if FUZZING
tests_fuzz_fuzz_dke_request_SOURCES = tests/fuzz/fuzz-dke-request.c
tests_fuzz_fuzz_dke_request_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
tests_fuzz_fuzz_dke_request_LDADD = gateway/plugins/ms-dke/libhf-dke.la gateway/libhfgateway.la \
	$(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
tests_fuzz_fuzz_dke_request_LDFLAGS = $(FUZZ_LDFLAGS)
endif
EXTRA_DIST += tests/fuzz/corpus/dke-request
