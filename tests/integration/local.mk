# Integration tests: one script per feature, driving the real programs.
INTEGRATION_TESTS =
TESTS += $(INTEGRATION_TESTS)
EXTRA_DIST += $(INTEGRATION_TESTS) tests/integration/lib.sh
