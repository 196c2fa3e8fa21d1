# The holdfast OpenSSL provider end to end: the openssl CLI (provider-cli.sh), OSSL_STORE and
# EVP signing from C with threads and fork (provider-store.sh), the provider loaded globally in a
# process that also uses the module directly (provider-global.sh), and the provider over another
# vendor's module, SoftHSMv2 (provider-softhsm.sh); the audit of an openssl process that unloads
# its providers before exit (provider-exit-audit.sh); an RSA key kept in an HSM pool, used as a
# local one (provider-pool.sh).
check_PROGRAMS += tests/integration/provider-store tests/integration/provider-global
tests_integration_provider_store_SOURCES = tests/integration/provider-store.c
tests_integration_provider_store_LDADD = $(CRYPTO_LIBS) $(PTHREAD_LIBS) $(LIBS)
tests_integration_provider_global_SOURCES = tests/integration/provider-global.c tests/p11-client.h
tests_integration_provider_global_LDADD = $(CRYPTO_LIBS) $(PTHREAD_LIBS) $(LIBS)

PROVIDER_TESTS = \
	tests/integration/provider-cli.sh \
	tests/integration/provider-store.sh \
	tests/integration/provider-global.sh \
	tests/integration/provider-softhsm.sh \
	tests/integration/provider-curves.sh \
	tests/integration/provider-exit-audit.sh \
	tests/integration/provider-pool.sh
TESTS += $(PROVIDER_TESTS)
EXTRA_DIST += $(PROVIDER_TESTS) tests/integration/provider-lib.sh
