# SigV4: the Authorization parser and the verifier, on arbitrary headers, dates and bodies.
FUZZ_TARGETS += tests/fuzz/fuzz-sigv4
if FUZZING
tests_fuzz_fuzz_sigv4_SOURCES = tests/fuzz/fuzz-sigv4.c
tests_fuzz_fuzz_sigv4_LDADD = gateway/plugins/aws-xks/libhf-sigv4.la $(CRYPTO_LIBS)
tests_fuzz_fuzz_sigv4_LDFLAGS = $(FUZZ_LDFLAGS)
endif
EXTRA_DIST += tests/fuzz/fuzz-sigv4.c tests/fuzz/corpus/sigv4
