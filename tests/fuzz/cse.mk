# Workspace CSE: the request body parser of every op, on arbitrary bytes. Included from
# gateway/plugins/gws-cse/local.mk.
FUZZ_TARGETS += tests/fuzz/fuzz-cse-request
if FUZZING
tests_fuzz_fuzz_cse_request_SOURCES = tests/fuzz/fuzz-cse-request.c
tests_fuzz_fuzz_cse_request_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
tests_fuzz_fuzz_cse_request_LDADD = gateway/plugins/gws-cse/libhf-cse.la gateway/libhfgateway.la \
	$(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
tests_fuzz_fuzz_cse_request_LDFLAGS = $(FUZZ_LDFLAGS)
endif
EXTRA_DIST += tests/fuzz/corpus/cse-request
