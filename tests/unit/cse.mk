# The gws-cse plugin's pure parts and its GCM payload over the built module: request bodies,
# configuration, the token checks over claims, the blob payload's known answer and the resource
# key hash vectors. plugin.h's hf_* come from libhfgateway.la, as holdfastd provides them.
# Included from gateway/plugins/gws-cse/local.mk.
if HAVE_CUNIT
CSE_UNIT_TESTS = tests/unit/test-cse-config
UNIT_TESTS += $(CSE_UNIT_TESTS)
CSE_UNIT_CPPFLAGS = $(AM_CPPFLAGS) $(CUNIT_CFLAGS) $(JSONC_CFLAGS)
CSE_UNIT_LDADD = libhftest.la gateway/plugins/gws-cse/libhf-cse.la gateway/libhfgateway.la \
	$(CUNIT_LIBS) $(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
tests_unit_test_cse_config_SOURCES = tests/unit/test-cse-config.c
tests_unit_test_cse_config_CPPFLAGS = $(CSE_UNIT_CPPFLAGS)
tests_unit_test_cse_config_LDADD = $(CSE_UNIT_LDADD)
endif
