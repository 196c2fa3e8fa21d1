# gws-cse's Gmail parts that need no module: the wrapped private key's payload, the PKCS#8
# rules, the SPKI hash, the algorithm table and the DigestInfo against OpenSSL's RSA_sign.
# Included from gateway/plugins/gws-cse/gmail.mk.
if HAVE_CUNIT
UNIT_TESTS += tests/unit/test-cse-pk
tests_unit_test_cse_pk_SOURCES = tests/unit/test-cse-pk.c
tests_unit_test_cse_pk_CPPFLAGS = $(AM_CPPFLAGS) $(CUNIT_CFLAGS) $(JSONC_CFLAGS)
tests_unit_test_cse_pk_LDADD = libhftest.la gateway/plugins/gws-cse/libhf-cse.la \
	gateway/libhfgateway.la $(CUNIT_LIBS) $(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
endif
