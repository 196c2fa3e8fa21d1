# XKS: the request body parser of every operation, on arbitrary bytes. What plugin.h provides it
# (base64, the JSON reader and its member helpers) comes from libhfgateway.la, as for the others.
FUZZ_TARGETS += tests/fuzz/fuzz-xks-request
if FUZZING
tests_fuzz_fuzz_xks_request_SOURCES = tests/fuzz/fuzz-xks-request.c
tests_fuzz_fuzz_xks_request_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
tests_fuzz_fuzz_xks_request_LDADD = gateway/plugins/aws-xks/libhf-xks.la \
	gateway/plugins/aws-xks/libhf-sigv4.la gateway/libhfgateway.la $(JSONC_LIBS) \
	$(CRYPTO_LIBS) $(PTHREAD_LIBS)
tests_fuzz_fuzz_xks_request_LDFLAGS = $(FUZZ_LDFLAGS)
endif
EXTRA_DIST += tests/fuzz/corpus/xks-request
