# CUnit suites of the gateway's pure parts: the router, the config file, public randomness, the
# log, the strict JSON reader, the request's header helpers, the latency metrics, plugin.h's
# shared helpers (the token bucket and clock, config values and secret files, base64, body members),
# JWT and JWKS verification, RS256 minting through the built module, the SSRF guard's classifier
# and outbound HTTPS (against an `openssl s_server` the test starts on loopback).
if HAVE_CUNIT
GATEWAY_UNIT_TESTS = \
	tests/unit/test-gateway-router \
	tests/unit/test-gateway-config \
	tests/unit/test-gateway-random \
	tests/unit/test-gateway-log \
	tests/unit/test-gateway-preauth \
	tests/unit/test-gateway-json \
	tests/unit/test-gateway-request \
	tests/unit/test-gateway-key-check \
	tests/unit/test-gateway-blob \
	tests/unit/test-gateway-rate \
	tests/unit/test-gateway-conf \
	tests/unit/test-gateway-base64 \
	tests/unit/test-gateway-json-member \
	tests/unit/test-gateway-metrics \
	tests/unit/test-gateway-jwt \
	tests/unit/test-gateway-jwt-sign \
	tests/unit/test-gateway-p11-crypt \
	tests/unit/test-gateway-ssrf \
	tests/unit/test-gateway-outbound
check_PROGRAMS += $(GATEWAY_UNIT_TESTS)
# TESTS takes UNIT_TESTS (tests/unit/local.mk), which memcheck also runs.
UNIT_TESTS += $(GATEWAY_UNIT_TESTS)
GATEWAY_UNIT_CPPFLAGS = $(GATEWAY_CPPFLAGS) $(CUNIT_CFLAGS)
GATEWAY_UNIT_LDADD = libhftest.la gateway/libhfgateway.la $(CUNIT_LIBS)

tests_unit_test_gateway_router_SOURCES = tests/unit/test-gateway-router.c
tests_unit_test_gateway_router_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_router_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_metrics_SOURCES = tests/unit/test-gateway-metrics.c
tests_unit_test_gateway_metrics_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_metrics_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_config_SOURCES = tests/unit/test-gateway-config.c
tests_unit_test_gateway_config_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_config_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_random_SOURCES = tests/unit/test-gateway-random.c
tests_unit_test_gateway_random_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_random_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_log_SOURCES = tests/unit/test-gateway-log.c
tests_unit_test_gateway_log_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_log_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_preauth_SOURCES = tests/unit/test-gateway-preauth.c \
	tests/unit/gw-log.c tests/unit/gw-log.h
tests_unit_test_gateway_preauth_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_preauth_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_json_SOURCES = tests/unit/test-gateway-json.c
tests_unit_test_gateway_json_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_json_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_request_SOURCES = tests/unit/test-gateway-request.c \
	tests/unit/gw-log.c tests/unit/gw-log.h
tests_unit_test_gateway_request_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_request_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_jwt_SOURCES = tests/unit/test-gateway-jwt.c \
	tests/unit/jwt-mint.c tests/unit/jwt-mint.h
tests_unit_test_gateway_jwt_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_jwt_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_jwt_sign_SOURCES = tests/unit/test-gateway-jwt-sign.c tests/unit/gw-module.h
tests_unit_test_gateway_jwt_sign_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_jwt_sign_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_p11_crypt_SOURCES = tests/unit/test-gateway-p11-crypt.c tests/unit/gw-module.h
tests_unit_test_gateway_p11_crypt_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_p11_crypt_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_ssrf_SOURCES = tests/unit/test-gateway-ssrf.c
tests_unit_test_gateway_ssrf_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_ssrf_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_outbound_SOURCES = tests/unit/test-gateway-outbound.c \
	tests/unit/jwt-mint.c tests/unit/jwt-mint.h
tests_unit_test_gateway_outbound_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_outbound_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_key_check_SOURCES = tests/unit/test-gateway-key-check.c
tests_unit_test_gateway_key_check_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_key_check_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_blob_SOURCES = tests/unit/test-gateway-blob.c
tests_unit_test_gateway_blob_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_blob_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_rate_SOURCES = tests/unit/test-gateway-rate.c
tests_unit_test_gateway_rate_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_rate_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_conf_SOURCES = tests/unit/test-gateway-conf.c
tests_unit_test_gateway_conf_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_conf_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_base64_SOURCES = tests/unit/test-gateway-base64.c
tests_unit_test_gateway_base64_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_base64_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_gateway_json_member_SOURCES = tests/unit/test-gateway-json-member.c
tests_unit_test_gateway_json_member_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_json_member_LDADD = $(GATEWAY_UNIT_LDADD)
endif
