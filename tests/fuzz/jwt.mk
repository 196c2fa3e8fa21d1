# Bearer tokens: the compact-JWS and claims parser (gateway/jwt.c) and the JWKS parser
# (gateway/jwks.c), on arbitrary bytes.
FUZZ_TARGETS += tests/fuzz/fuzz-jwt tests/fuzz/fuzz-jwks
if FUZZING
tests_fuzz_fuzz_jwt_SOURCES = tests/fuzz/fuzz-jwt.c tests/unit/jwt-mint.c tests/unit/jwt-mint.h
tests_fuzz_fuzz_jwt_CPPFLAGS = $(GATEWAY_CPPFLAGS)
tests_fuzz_fuzz_jwt_LDADD = gateway/libhfgateway.la
tests_fuzz_fuzz_jwt_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_jwks_SOURCES = tests/fuzz/fuzz-jwks.c
tests_fuzz_fuzz_jwks_CPPFLAGS = $(GATEWAY_CPPFLAGS)
tests_fuzz_fuzz_jwks_LDADD = gateway/libhfgateway.la
tests_fuzz_fuzz_jwks_LDFLAGS = $(FUZZ_LDFLAGS)
endif
EXTRA_DIST += tests/fuzz/fuzz-jwt.c tests/fuzz/fuzz-jwks.c tests/fuzz/corpus/jwt \
	tests/fuzz/corpus/jwks
