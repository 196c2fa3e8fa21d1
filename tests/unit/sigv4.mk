# SigV4 for the XKS plugin: AWS's test vectors, the XKS scope and skew rules, and a request signed
# by the real curl --aws-sigv4. Needs no key store; harness.h's runner only.
if HAVE_CUNIT
UNIT_TESTS += tests/unit/test-sigv4
tests_unit_test_sigv4_SOURCES = tests/unit/test-sigv4.c
tests_unit_test_sigv4_CPPFLAGS = $(AM_CPPFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_sigv4_LDADD = libhftest.la gateway/plugins/aws-xks/libhf-sigv4.la \
	$(CUNIT_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
endif
