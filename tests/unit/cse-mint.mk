# The gws-cse plugin's own tokens: the claims of the delegated and migration tokens it mints.
# Included from gateway/plugins/gws-cse/local.mk.
if HAVE_CUNIT
UNIT_TESTS += tests/unit/test-cse-minted
tests_unit_test_cse_minted_SOURCES = tests/unit/test-cse-minted.c
tests_unit_test_cse_minted_CPPFLAGS = $(CSE_UNIT_CPPFLAGS)
tests_unit_test_cse_minted_LDADD = $(CSE_UNIT_LDADD)
endif
