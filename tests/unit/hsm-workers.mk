# The HSM pools' worker sets in the gateway (issue 14: a slow HSM never blocks gateway threads):
# the bounded job queue and its /metrics series.
if HAVE_CUNIT
UNIT_TESTS += tests/unit/test-gateway-hsm-workers
tests_unit_test_gateway_hsm_workers_SOURCES = tests/unit/test-gateway-hsm-workers.c
tests_unit_test_gateway_hsm_workers_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_hsm_workers_LDADD = $(GATEWAY_UNIT_LDADD)
endif
