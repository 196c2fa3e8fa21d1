# The gateway's router and config parser (gateway/router.c, gateway/config.c).
FUZZ_TARGETS += tests/fuzz/fuzz-router
if FUZZING
tests_fuzz_fuzz_router_SOURCES = tests/fuzz/fuzz-router.c
tests_fuzz_fuzz_router_CPPFLAGS = $(GATEWAY_CPPFLAGS)
tests_fuzz_fuzz_router_LDADD = gateway/libhfgateway.la
tests_fuzz_fuzz_router_LDFLAGS = $(FUZZ_LDFLAGS)
endif
EXTRA_DIST += tests/fuzz/fuzz-router.c tests/fuzz/corpus/router
