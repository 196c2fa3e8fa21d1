# HSM pools seen from outside (issue 14, visibility and throttling): the core's status helpers,
# the gateway's error mapping and /metrics series, and aws-xks's ekmFleetDetails entries.
if HAVE_CUNIT
POOL_STATUS_UNIT_TESTS = \
	tests/unit/test-core-pool-status \
	tests/unit/test-gateway-pool-status \
	tests/unit/test-xks-fleet
UNIT_TESTS += $(POOL_STATUS_UNIT_TESTS)
tests_unit_test_core_pool_status_SOURCES = tests/unit/test-core-pool-status.c
tests_unit_test_core_pool_status_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_core_pool_status_LDADD = $(UNIT_LDADD)
tests_unit_test_gateway_pool_status_SOURCES = tests/unit/test-gateway-pool-status.c
tests_unit_test_gateway_pool_status_CPPFLAGS = $(GATEWAY_UNIT_CPPFLAGS)
tests_unit_test_gateway_pool_status_LDADD = $(GATEWAY_UNIT_LDADD)
tests_unit_test_xks_fleet_SOURCES = tests/unit/test-xks-fleet.c
tests_unit_test_xks_fleet_CPPFLAGS = $(XKS_UNIT_CPPFLAGS)
tests_unit_test_xks_fleet_LDADD = $(XKS_UNIT_LDADD)
endif
