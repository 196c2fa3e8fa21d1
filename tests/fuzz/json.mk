# The gateway's strict JSON reader (gateway/json.c), on arbitrary bytes.
FUZZ_TARGETS += tests/fuzz/fuzz-json
if FUZZING
tests_fuzz_fuzz_json_SOURCES = tests/fuzz/fuzz-json.c
tests_fuzz_fuzz_json_CPPFLAGS = $(GATEWAY_CPPFLAGS)
tests_fuzz_fuzz_json_LDADD = gateway/libhfgateway.la
tests_fuzz_fuzz_json_LDFLAGS = $(FUZZ_LDFLAGS)
endif
EXTRA_DIST += tests/fuzz/fuzz-json.c tests/fuzz/corpus/json
